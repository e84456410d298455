/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * faults: cfqfs over a faulty SOURCE. SOURCE is a cfqfs_faultfs mount (tests/support/faultfs)
 * of a plain directory: reads, writes and fsyncs of eio* files fail with EIO, reads of stall*
 * files block until a release file exists. Layout under the fixture's base:
 *   back/   the real files        fault/  faultfs mount of back/ (= cfqfs's SOURCE)
 *   mnt/    cfqfs mount           release the file that ends every stall
 *
 *   - EIO: read, write, fsync and fdatasync through cfqfs fail with EIO, as on faultfs itself;
 *     the mount keeps working, nothing stays queued or in flight, and the `errors` counter
 *     (stat.json, metrics) counts every failed request;
 *   - one stalled read (group A, depth=4, idling on as on a disk) holds one worker: readers in
 *     groups B and C keep being served while it is blocked;
 *   - depth (4) stalled reads hold every worker: other requests queue (nothing is served)
 *     until the release, after which every client finishes and the daemon exits 0;
 *   - with a single-threaded FUSE loop (-s), or fewer FUSE threads than depth, hung reads
 *     never hold the FUSE threads: metadata and the control files keep working.
 *     The same for copy_file_range calls whose source reads hang (copies are scheduled).
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "chaos.h"
#include "mount.h"
#include "workload.h"

#ifndef CFQFS_FAULTFS_BIN
#define CFQFS_FAULTFS_BIN "cfqfs_faultfs"
#endif

#define DEPTH 4
#define PLAIN_SEED 0x1234u
#define PLAIN_LEN (4u << 20)
#define STALL_SEED 0x5a11u
#define STALL_LEN 65536u

static struct mnt M;
static struct wl_run R;
static pid_t ff_pid;		    /* faultfs daemon, 0 when not running */
static char ff_back[PATH_MAX];	    /* faultfs's backing directory */
static char ff_mnt[PATH_MAX];	    /* faultfs mount point = cfqfs SOURCE */
static char ff_release[PATH_MAX];   /* exists: stalls end */
static char ff_log[PATH_MAX];	    /* faultfs stderr */
static char base_copy[256];	    /* M.base, removed here: teardown does not cross mounts */
static pid_t kids[8];		    /* stall readers / probes this test forked, 0 when reaped */
static char conf[2048];

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void release_stalls(void)
{
	int fd = open(ff_release, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

	if (fd >= 0)
		close(fd);
}

/* Starts faultfs over back/ at fault/ and waits (bounded) for the mount. */
static void faultfs_start(void)
{
	char o[PATH_MAX + 64];

	snprintf(ff_back, sizeof(ff_back), "%s", base_path(&M, "back"));
	snprintf(ff_mnt, sizeof(ff_mnt), "%s", base_path(&M, "fault"));
	snprintf(ff_release, sizeof(ff_release), "%s", base_path(&M, "release"));
	snprintf(ff_log, sizeof(ff_log), "%s", base_path(&M, "faultfs.log"));
	cr_assert_eq(mkdir(ff_back, 0755), 0);
	cr_assert_eq(mkdir(ff_mnt, 0755), 0);
	/* stall_max is a safety net only: every test releases its stalls well before */
	snprintf(o, sizeof(o), "allow_other,release=%s,stall_max=60", ff_release);
	ff_pid = fork(); /* no cr_ call before the child leaves: it would deadlock */
	if (ff_pid == 0) {
		int fd = open(ff_log, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		execl(CFQFS_FAULTFS_BIN, CFQFS_FAULTFS_BIN, "-f", "-o", o, ff_back, ff_mnt,
		      (char *)NULL);
		_exit(127);
	}
	cr_assert_geq(ff_pid, 0, "fork: %s", strerror(errno));
	for (int i = 0; i < 200 && !mnt_is_fuse_mounted(ff_mnt); i++) {
		int st;

		cr_assert_eq(waitpid(ff_pid, &st, WNOHANG), 0, "faultfs exited (status 0x%x); see %s",
			     (unsigned)st, ff_log);
		usleep(50000);
	}
	cr_assert(mnt_is_fuse_mounted(ff_mnt), "faultfs did not mount %s in 10 s", ff_mnt);
}

/* Unmounts faultfs and reaps it (bounded; then SIGKILL and a lazy unmount). */
static void faultfs_stop(void)
{
	const char *fu[] = { "fusermount3", "-u", ff_mnt, NULL };
	int st = 0;

	if (ff_pid <= 0)
		return;
	release_stalls();
	if (mnt_is_fuse_mounted(ff_mnt))
		mnt_run(fu, 10000, &st, NULL, 0, NULL, 0);
	for (int i = 0; i < 100; i++) {
		if (waitpid(ff_pid, &st, WNOHANG) == ff_pid) {
			ff_pid = 0;
			break;
		}
		usleep(50000);
	}
	if (ff_pid > 0) {
		fprintf(stderr, "faults: faultfs %d still running, SIGKILL\n", (int)ff_pid);
		kill(ff_pid, SIGKILL);
		waitpid(ff_pid, &st, 0);
		ff_pid = 0;
	}
	if (mnt_is_fuse_mounted(ff_mnt))
		umount2(ff_mnt, MNT_DETACH);
}

static void setup(void)
{
	umask(022);
	if (geteuid() != 0)
		cr_skip("needs root (faultfs is mounted with allow_other for cfqfs)");
	if (!mnt_fuse_available())
		cr_skip("/dev/fuse unavailable: %s", mnt_fuse_unavailable_reason());
	cr_assert_eq(mnt_prepare(&M), 0, "mnt_prepare");
	snprintf(base_copy, sizeof(base_copy), "%s", M.base);
	faultfs_start();
	snprintf(M.src, sizeof(M.src), "%s", ff_mnt);
}

static void teardown(void)
{
	release_stalls();
	for (size_t i = 0; i < sizeof(kids) / sizeof(kids[0]); i++)
		if (kids[i] > 0) {
			kill(kids[i], SIGKILL);
			waitpid(kids[i], NULL, 0);
			kids[i] = 0;
		}
	wl_free(&R);
	mnt_cr_teardown(&M);
	faultfs_stop();
	if (base_copy[0]) {
		const char *rm[] = { "/bin/rm", "-rf", base_copy, NULL };
		int st;

		mnt_run(rm, 30000, &st, NULL, 0, NULL, 0);
		base_copy[0] = '\0';
	}
}

TestSuite(faults, .init = setup, .fini = teardown, .timeout = 90);

/* Mounts cfqfs over faultfs with `-o opts` and, when conf_text is set, a config file. */
static void cfqfs_mount(const char *conf_text, const char *opts)
{
	wl_cr_mount(&M, conf_text, opts);
}

/* Reads a whole file into buf (NUL-terminated); fails the test on error. */
static void slurp(const char *rel, char *buf, size_t cap)
{
	ssize_t n = mnt_get(mnt_path(&M, rel), buf, cap - 1);

	cr_assert_geq(n, 0, "read %s: %s", rel, strerror((int)-n));
	buf[n] = '\0';
}

/*
 * Sum over all groups of stat.json's numeric `key` ("errors", "in_flight", "queued"), or,
 * with group != NULL, that group's value (0 when the group is not listed).
 */
static uint64_t json_sum(const char *group, const char *key)
{
	static char js[1 << 16];
	char pat[64], name[300];
	uint64_t sum = 0;
	const char *p;

	slurp(".cfqfs/stat.json", js, sizeof(js));
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	snprintf(name, sizeof(name), "{\"name\":\"%s\"", group ? group : "");
	for (p = strstr(js, "{\"name\":"); p; p = strstr(p + 1, "{\"name\":")) {
		const char *end = strstr(p + 1, "{\"name\":"), *k = strstr(p, pat);

		if (group && strncmp(p, name, strlen(name)) != 0)
			continue;
		if (k && (!end || k < end))
			sum += strtoull(k + strlen(pat), NULL, 10);
	}
	return sum;
}

/* Polls (up to 10 s) until json_sum(group, key) >= want; returns the last value. */
static uint64_t wait_json(const char *group, const char *key, uint64_t want)
{
	uint64_t v = 0;

	for (int i = 0; i < 200; i++) {
		v = json_sum(group, key);
		if (v >= want)
			break;
		usleep(50000);
	}
	return v;
}

static void expect_idle_scheduler(const char *when)
{
	char text[8192];
	unsigned groups = 0;
	uint64_t q = 1;

	for (int i = 0; i < 60 && q; i++) {
		slurp(".cfqfs/io.stat", text, sizeof(text));
		cr_assert_eq(ch_iostat_queued(text, &groups, &q), 0, "io.stat:\n%s", text);
		if (q)
			usleep(50000);
	}
	cr_assert_eq(q, 0, "%s: %llu requests still queued:\n%s", when, (unsigned long long)q,
		     text);
	cr_assert_eq(json_sum(NULL, "in_flight"), 0, "%s: requests left in flight", when);
}

/* The mount still writes, reads back and removes a small file. */
static void expect_mount_works(const char *when)
{
	static const char msg[] = "still working\n";
	char buf[64];
	ssize_t n;

	cr_assert_eq(mnt_put(mnt_path(&M, "probe"), msg, sizeof(msg) - 1, 0644), 0,
		     "%s: write probe", when);
	n = mnt_get(mnt_path(&M, "probe"), buf, sizeof(buf));
	cr_assert(n == (ssize_t)sizeof(msg) - 1 && memcmp(buf, msg, (size_t)n) == 0,
		  "%s: probe read back %zd bytes", when, n);
	MNT_EXPECT_OK(unlink(mnt_path(&M, "probe")));
}

/*
 * Runs the four failing operations on `dir`/eio_*; returns how many failed with EIO (the
 * test expects all 4) and logs any other outcome.
 */
static int eio_ops(const char *dir, const char *tag)
{
	char path[PATH_MAX], buf[4096];
	int n = 0, fd;

	snprintf(path, sizeof(path), "%s/eio_data", dir);
	fd = open(path, O_RDONLY);
	cr_assert_geq(fd, 0, "%s: open %s: %s", tag, path, strerror(errno));
	errno = 0;
	n += pread(fd, buf, sizeof(buf), 0) == -1 && errno == EIO;
	close(fd);
	snprintf(path, sizeof(path), "%s/eio_new", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	cr_assert_geq(fd, 0, "%s: create %s: %s", tag, path, strerror(errno));
	memset(buf, 'w', sizeof(buf));
	errno = 0;
	n += pwrite(fd, buf, sizeof(buf), 0) == -1 && errno == EIO;
	errno = 0;
	n += fsync(fd) == -1 && errno == EIO;
	errno = 0;
	n += fdatasync(fd) == -1 && errno == EIO;
	close(fd);
	return n;
}

static void eio_case(const char *opts)
{
	const int rounds = 10;
	uint64_t errors;
	int n;

	cr_assert_eq(ch_make_file(base_path(&M, "back/eio_data"), PLAIN_SEED, 65536), 0);
	cr_assert_eq(ch_make_file(base_path(&M, "back/plain"), PLAIN_SEED, PLAIN_LEN), 0);
	cfqfs_mount(NULL, opts);
	/* natively first: faultfs itself fails all four */
	cr_assert_eq(eio_ops(ff_mnt, "faultfs"), 4, "faultfs did not fail all four ops");
	for (int r = 0; r < rounds; r++) {
		n = eio_ops(M.mnt, "cfqfs");
		cr_assert_eq(n, 4, "round %d: %d of read/write/fsync/fdatasync failed with EIO", r,
			     n);
	}
	expect_idle_scheduler("after the EIOs");
	errors = json_sum(NULL, "errors");
	fprintf(stderr, "faults eio (%s): %d failed ops, errors counter %llu\n", opts,
		4 * rounds, (unsigned long long)errors);
	/* page-cache reads may be retried by the kernel: at least one error per failed op */
	cr_assert_geq(errors, (uint64_t)(4 * rounds), "errors counter %llu < %d failed ops",
		      (unsigned long long)errors, 4 * rounds);
	expect_mount_works("after the EIOs");
	{
		uint64_t bad = 0;
		int v = ch_verify_file(mnt_path(&M, "plain"), PLAIN_SEED, PLAIN_LEN, &bad);

		cr_assert_eq(v, 0, "plain file through the mount: %d (bad offset %llu)", v,
			     (unsigned long long)bad);
	}
	expect_idle_scheduler("after the good I/O");
	cr_assert_eq(json_sum(NULL, "errors"), errors, "good I/O counted as errors");
}

Test(faults, eio_reaches_caller_and_mount_keeps_working)
{
	eio_case("entry_timeout=0,attr_timeout=0");
	mnt_cr_finish(&M);
}

Test(faults, eio_with_direct_io_counts_one_error_per_request)
{
	eio_case("direct_io,entry_timeout=0,attr_timeout=0");
	/* without the page cache every failed call is exactly one request */
	cr_assert_eq(json_sum(NULL, "errors"), 40, "errors %llu, expected 40",
		     (unsigned long long)json_sum(NULL, "errors"));
	mnt_cr_finish(&M);
}

/* --- stalls --------------------------------------------------------------------------- */

/* A child's exit code for `len` bytes read back: 0 if they are ch_pat(seed), else
 * CH_EXIT_CORRUPT. */
static int pattern_exit(const char *buf, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++)
		if ((uint8_t)buf[i] != ch_pat(seed, i))
			return CH_EXIT_CORRUPT;
	return 0;
}

/* Child: named `comm`, reads STALL_LEN bytes of `path` and checks them (exit 0 = correct). */
static pid_t spawn_reader(size_t slot, const char *comm, const char *path, uint32_t seed,
			  size_t len)
{
	pid_t pid = fork(); /* no cr_ call before the child leaves: it would deadlock */

	if (pid == 0) {
		static char buf[STALL_LEN];
		int fd;
		ssize_t n;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		prctl(PR_SET_NAME, comm);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			_exit(CH_EXIT_SETUP);
		n = pread(fd, buf, len, 0);
		if (n < 0)
			_exit(CH_EXIT_ERRNO + (errno > 150 ? 150 : errno));
		if ((size_t)n != len)
			_exit(CH_EXIT_SHORT);
		_exit(pattern_exit(buf, len, seed));
	}
	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	kids[slot] = pid;
	return pid;
}

/* Child: named `comm`, copies STALL_LEN bytes of `path` to `to` with copy_file_range (looping
 * on short counts, as cp does), then reads the copy back and checks it (exit codes as
 * spawn_reader's). */
static pid_t spawn_copier(size_t slot, const char *comm, const char *path, const char *to,
			  uint32_t seed)
{
	pid_t pid = fork(); /* no cr_ call before the child leaves: it would deadlock */

	if (pid == 0) {
		static char buf[STALL_LEN];
		loff_t in = 0, out = 0;
		int fd, dfd;
		ssize_t n = 0;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		prctl(PR_SET_NAME, comm);
		fd = open(path, O_RDONLY);
		dfd = open(to, O_RDWR | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || dfd < 0)
			_exit(CH_EXIT_SETUP);
		while (in < (loff_t)STALL_LEN &&
		       (n = copy_file_range(fd, &in, dfd, &out, STALL_LEN - (size_t)in, 0)) > 0)
			;
		if (n < 0)
			_exit(CH_EXIT_ERRNO + (errno > 150 ? 150 : errno));
		if (in != (loff_t)STALL_LEN || pread(dfd, buf, STALL_LEN, 0) != (ssize_t)STALL_LEN)
			_exit(CH_EXIT_SHORT);
		_exit(pattern_exit(buf, STALL_LEN, seed));
	}
	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	kids[slot] = pid;
	return pid;
}

static bool still_running(size_t slot)
{
	int st;

	return kids[slot] > 0 && waitpid(kids[slot], &st, WNOHANG) == 0;
}

/* Waits (bounded) for child `slot`; returns its exit code, 128+sig, or -1 on timeout. */
static int reap(size_t slot, double timeout_s)
{
	double end = now_s() + timeout_s;
	int st;

	while (now_s() < end) {
		pid_t r = waitpid(kids[slot], &st, WNOHANG);

		if (r == kids[slot]) {
			kids[slot] = 0;
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		}
		usleep(20000);
	}
	return -1;
}

/* back/plain and back/stall0 .. stall<DEPTH-1> */
static void stall_files(void)
{
	cr_assert_eq(ch_make_file(base_path(&M, "back/plain"), PLAIN_SEED, PLAIN_LEN), 0);
	for (int i = 0; i < DEPTH; i++) {
		char name[32];

		snprintf(name, sizeof(name), "back/stall%d", i);
		cr_assert_eq(ch_make_file(base_path(&M, name), STALL_SEED, STALL_LEN), 0);
	}
}

/* Rules: comm ff-stall* -> group A, ff-b* -> B, ff-c* -> C. Idling on, as on a disk. */
static void stall_mount(void)
{
	snprintf(conf, sizeof(conf),
		 "rules = ( { comm = \"ff-stall*\"; group = \"A\"; },\n"
		 "          { comm = \"ff-b*\"; group = \"B\"; },\n"
		 "          { comm = \"ff-c*\"; group = \"C\"; } );\n");
	stall_files();
	cfqfs_mount(conf, "direct_io,depth=4,slice_idle=8,group_idle=8");
}

Test(faults, one_stalled_read_does_not_stop_other_groups)
{
	const double dur = 3.0;
	struct wl_spec s[2] = {
		{ .label = "B", .kind = WL_RAND_READ, .bs = 65536, .comm = "ff-b" },
		{ .label = "C", .kind = WL_RAND_READ, .bs = 65536, .comm = "ff-c" },
	};
	uint64_t in_flight, ops[2];
	double t0;
	int rc;

	stall_mount();
	spawn_reader(0, "ff-stall", mnt_path(&M, "stall0"), STALL_SEED, STALL_LEN);
	in_flight = wait_json("A", "in_flight", 1);
	cr_assert_eq(in_flight, 1, "the stalled read never reached a worker");
	s[0].path = s[1].path = mnt_path(&M, "plain");
	cr_assert_eq(wl_start(&R, s, 2, dur), 0);
	cr_assert_eq(wl_finish(&R), 0, "a reader in B or C failed (message above)");
	for (size_t i = 0; i < 2; i++)
		ops[i] = wl_ops(&R, i, 0, dur);
	fprintf(stderr, "faults one stall: in %.1f s with a read of A stalled, B did %llu and C "
		"%llu reads of 64 KiB (max gap %.2f s)\n", dur, (unsigned long long)ops[0],
		(unsigned long long)ops[1], wl_max_gap_s(&R, (size_t[]){ 0, 1 }, 2, 0, dur));
	cr_assert(still_running(0), "the stalled reader finished before the release");
	/* generous: an unloaded run does thousands; a scheduler stuck on A does none */
	cr_assert_geq(ops[0], 20, "B was not served while A's read stalled");
	cr_assert_geq(ops[1], 20, "C was not served while A's read stalled");
	t0 = now_s();
	release_stalls();
	rc = reap(0, 20);
	cr_assert_eq(rc, 0, "stalled reader after the release: exit %d", rc);
	fprintf(stderr, "faults one stall: released read done %.3f s after the release\n",
		now_s() - t0);
	expect_idle_scheduler("after the release");
	mnt_cr_finish(&M);
}

Test(faults, depth_stalled_reads_hold_every_worker_until_released)
{
	char name[32];
	double t0;
	int rc;

	stall_mount();
	for (size_t i = 0; i < DEPTH; i++) {
		snprintf(name, sizeof(name), "stall%zu", i);
		spawn_reader(i, "ff-stall", mnt_path(&M, name), STALL_SEED, STALL_LEN);
	}
	cr_assert_eq(wait_json("A", "in_flight", DEPTH), DEPTH,
		     "the %d stalled reads did not all reach a worker", DEPTH);
	/* every worker is blocked now: a read of group B queues and is not served */
	spawn_reader(DEPTH, "ff-b", mnt_path(&M, "plain"), PLAIN_SEED, 65536);
	cr_assert_geq(wait_json("B", "queued", 1), 1, "B's read never reached the scheduler");
	usleep(1000000);
	cr_assert(still_running(DEPTH), "B's read was served with every worker stalled");
	cr_assert_eq(json_sum("B", "queued"), 1, "B's read is no longer queued");
	cr_assert_eq(json_sum(NULL, "in_flight"), DEPTH, "in flight != depth while stalled");
	t0 = now_s();
	release_stalls();
	for (size_t i = 0; i <= DEPTH; i++) {
		rc = reap(i, 20);
		cr_assert_eq(rc, 0, "client %zu after the release: exit %d", i, rc);
	}
	fprintf(stderr, "faults depth stalls: all %d stalled reads and B's done %.3f s after the "
		"release\n", DEPTH, now_s() - t0);
	expect_idle_scheduler("after the release");
	expect_mount_works("after the release");
	mnt_cr_finish(&M);
}

/*
 * Child: through the mount, polls .cfqfs/stat.json (up to 5 s) until the requests in flight
 * over all groups reach `want`, then stats back/plain's view. Exit 0 when both happened, 3 if
 * the count never got there, 4 if the stat failed. A FUSE loop whose threads are all stuck
 * in hung reads never answers, and the parent's reap() times out.
 */
static pid_t spawn_probe(size_t slot, unsigned want)
{
	char js_path[PATH_MAX], plain[PATH_MAX];
	pid_t pid;

	snprintf(js_path, sizeof(js_path), "%s", mnt_path(&M, ".cfqfs/stat.json"));
	snprintf(plain, sizeof(plain), "%s", mnt_path(&M, "plain"));
	pid = fork(); /* no cr_ call before the child leaves: it would deadlock */
	if (pid == 0) {
		static char js[1 << 16];
		static const char key[] = "\"in_flight\":";
		struct stat st;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (int i = 0; i < 100; i++) {
			int fd = open(js_path, O_RDONLY | O_CLOEXEC);
			ssize_t n = fd >= 0 ? read(fd, js, sizeof(js) - 1) : -1;
			unsigned long long sum = 0;

			if (fd >= 0)
				close(fd);
			js[n > 0 ? n : 0] = '\0';
			for (const char *p = strstr(js, key); p; p = strstr(p + 1, key))
				sum += strtoull(p + strlen(key), NULL, 10);
			if (sum >= want)
				_exit(stat(plain, &st) == 0 ? 0 : 4);
			usleep(50000);
		}
		_exit(3);
	}
	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	kids[slot] = pid;
	return pid;
}

/* Mounts with `args` (no config), hangs `nstall` reads (`copies`: copy_file_range calls,
 * whose source reads hang) on SOURCE and checks that the mount still answers metadata and
 * control-file requests; then releases them. */
static void hung_reads_leave_fuse_threads_free(const char *const *args, size_t nstall,
					       bool copies, const char *what)
{
	char name[32];
	int rc, ret;

	stall_files();
	ret = mnt_start(&M, args);
	if (ret != 0) {
		mnt_dump_log(&M);
		cr_assert_fail("%s: mounting failed: %s", what, strerror(-ret));
	}
	for (size_t i = 0; i < nstall; i++) {
		snprintf(name, sizeof(name), "stall%zu", i);
		if (copies) {
			char to[PATH_MAX];

			snprintf(to, sizeof(to), "%s", mnt_path(&M, "copy-of-"));
			strncat(to, name, sizeof(to) - strlen(to) - 1);
			spawn_copier(i, "ff-stall", mnt_path(&M, name), to, STALL_SEED);
		} else {
			spawn_reader(i, "ff-stall", mnt_path(&M, name), STALL_SEED, STALL_LEN);
		}
	}
	spawn_probe(nstall, (unsigned)nstall);
	rc = reap(nstall, 15);
	cr_assert_eq(rc, 0, "%s: with %zu reads hung on SOURCE the mount %s", what, nstall,
		     rc == -1   ? "stopped answering (stat.json and stat blocked for 15 s)"
		     : rc == 3 ? "never showed them all in flight"
			       : "failed the stat");
	for (size_t i = 0; i < nstall; i++)
		cr_assert(still_running(i), "%s: hung reader %zu finished before the release", what,
			  i);
	release_stalls();
	for (size_t i = 0; i < nstall; i++) {
		rc = reap(i, 20);
		cr_assert_eq(rc, 0, "%s: reader %zu after the release: exit %d", what, i, rc);
	}
	expect_idle_scheduler("after the release");
	expect_mount_works("after the release");
	mnt_cr_finish(&M);
}

Test(faults, single_threaded_loop_answers_metadata_while_a_read_hangs)
{
	static const char *const args[] = { "-s", "-o", "direct_io,depth=4", NULL };

	hung_reads_leave_fuse_threads_free(args, 1, false, "-s");
}

/* noop dispatches every queued read at once: a FUSE thread that issued what it was given
 * would take one hung read each, and both would be stuck */
Test(faults, fewer_fuse_threads_than_depth_answer_while_depth_reads_hang)
{
	static const char *const args[] = { "-o", "direct_io,depth=4,max_threads=2,scheduler=noop",
					     NULL };

	hung_reads_leave_fuse_threads_free(args, DEPTH, false, "max_threads=2, depth=4");
}

/* Copies are scheduled like reads (their source pieces are reads issued by the workers): two
 * copies stuck on SOURCE hold two workers, never a FUSE thread, so stat and stat.json answer;
 * after the release both copies complete, exact. Before copies were scheduled, they ran on
 * the FUSE threads and two of them stopped the mount answering. */
Test(faults, two_stalled_copies_leave_metadata_and_control_files_answering)
{
	static const char *const args[] = { "-o", "direct_io,depth=4,max_threads=2", NULL };

	hung_reads_leave_fuse_threads_free(args, 2, true, "two copies, max_threads=2");
}

Test(faults, single_threaded_loop_answers_while_a_copy_hangs)
{
	static const char *const args[] = { "-s", "-o", "direct_io,depth=4", NULL };

	hung_reads_leave_fuse_threads_free(args, 1, true, "a copy, -s");
}
