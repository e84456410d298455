/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * reload: configuration reloads (SIGHUP) and live scheduler / tunable switches in a loop
 * while readers and writers run, with every request accounted for exactly once.
 *
 * The test rewrites the configuration file (atomically: a temp file renamed over it) between
 * valid variants with different schedulers, rules (comm globs into named groups, weights) and
 * tunables, and every fifth time an invalid one (a value out of range, a syntax error). After
 * each SIGHUP it waits for the daemon's answer in its log ("configuration reloaded" or
 * "... keeping the running configuration", naming the file for an invalid one) and checks
 * .cfqfs/scheduler and the variant's tunables: a valid file is in force, an invalid one left
 * the running configuration as it was. Between reloads it switches .cfqfs/scheduler through
 * cfq/deadline/noop and writes tunables of whichever policy is active.
 *
 * Accounting. The mount uses direct_io, so each client pread/pwrite of at most 64 KiB is one
 * FUSE request, and each fsync one more (io.stat counts fsyncs as writes). Clients never read
 * past EOF (a read there would be charged for bytes it does not return). Each client counts
 * its requests and bytes; after the run the change of the io.stat sums over all groups
 * (rios, wios, rbytes, wbytes) must equal the clients' totals exactly: a request lost,
 * duplicated or charged twice across a switch shows up as a difference. Every byte read is
 * checked against the pattern (chaos.h ch_pat), and the writers' files are verified in SOURCE.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "chaos.h"
#include "mount.h"
#include "sched.h"
#include "workload.h"

#define LOAD_S 20.0		  /* [s] */
#define NREADERS 3
#define NWRITERS 3
#define NCL (NREADERS + NWRITERS)
#define RFILE_SIZE (4u << 20)	  /* [bytes] each reader's file */
#define WWRAP (2u << 20)	  /* [bytes] writers wrap here */
#define MAXIO (64u * 1024u)	  /* [bytes] largest single read/write: one FUSE request */
#define REPLY_TIMEOUT_S ((double)MNT_RELOAD_TIMEOUT_S) /* [s] for a SIGHUP's answer */

static struct mnt M;

struct counts {
	uint64_t rios, wios, rbytes, wbytes;
	char msg[200];
};
static struct counts *CT;
static pid_t PIDS[NCL];

static void setup(void)
{
	umask(022);
	if (!mnt_fuse_available())
		cr_skip("/dev/fuse unavailable: %s", mnt_fuse_unavailable_reason());
	cr_assert_eq(mnt_prepare(&M), 0, "mnt_prepare");
}

static void teardown(void)
{
	for (int i = 0; i < NCL; i++)
		if (PIDS[i] > 0) {
			kill(PIDS[i], SIGKILL);
			waitpid(PIDS[i], NULL, 0);
			PIDS[i] = 0;
		}
	mnt_cr_teardown(&M);
	if (CT)
		munmap(CT, sizeof(*CT) * NCL);
	CT = NULL;
}

TestSuite(reload, .init = setup, .fini = teardown, .timeout = 150);

/* ---- configuration variants ------------------------------------------------------------ */

struct variant {
	const char *text;
	const char *sched;		/* NULL: invalid file */
	const char *tun[3][2];		/* tunables the file sets (name, value as read back) */
};

static const struct variant variants[] = {
	{ "scheduler = \"cfq\";\n"
	  "rules = (\n"
	  "\t{ comm = \"rlr*\"; group = \"readers\"; weight = 200; },\n"
	  "\t{ comm = \"rlw*\"; group = \"writers\"; weight = 800; }\n"
	  ");\n"
	  "iosched = { slice_idle = 8; quantum = 8; group_idle = 4; };\n",
	  "cfq", { { "slice_idle", "8" }, { "quantum", "8" }, { "group_idle", "4" } } },
	{ "scheduler = \"deadline\";\n"
	  "rules = ( { comm = \"rlw*\"; group = \"writers\"; weight = 100; } );\n"
	  "iosched = { fifo_batch = 4; read_expire = 250; };\n",
	  "deadline", { { "fifo_batch", "4" }, { "read_expire", "250" } } },
	{ "scheduler = \"cfq\";\n"
	  "rules = ( { comm = \"rl*\"; group = \"all\"; weight = 300; } );\n"
	  "iosched = { slice_idle = 0; quantum = 4; max_merge_kb = 64; };\n",
	  "cfq", { { "slice_idle", "0" }, { "quantum", "4" }, { "max_merge_kb", "64" } } },
	{ "scheduler = \"noop\";\n"
	  "rules = ( { uid = 0; group = \"root-users\"; weight = 700; } );\n"
	  "iosched = { max_merge_kb = 128; };\n",
	  "noop", { { "max_merge_kb", "128" } } },
	/* invalid: a value out of range */
	{ "scheduler = \"deadline\";\niosched = { fifo_batch = 0; };\n", NULL, { { NULL } } },
	{ "scheduler = \"cfq\";\n"
	  "rules = ( { comm = \"rlr*\"; group = \"readers\"; weight = 900; } );\n"
	  "iosched = { slice_idle = 2; quantum = 16; };\n",
	  "cfq", { { "slice_idle", "2" }, { "quantum", "16" } } },
	{ "scheduler = \"deadline\";\n"
	  "iosched = { fifo_batch = 32; writes_starved = 1; };\n",
	  "deadline", { { "fifo_batch", "32" }, { "writes_starved", "1" } } },
	{ "scheduler = \"noop\";\nrules = ( { comm = \"rlr*\"; group = \"r\"; weight = 50; } );\n",
	  "noop", { { NULL } } },
	{ "scheduler = \"cfq\";\niosched = { slice_idle = 8; quantum = 8; };\n",
	  "cfq", { { "slice_idle", "8" }, { "quantum", "8" } } },
	/* invalid: a syntax error */
	{ "scheduler = \"noop\";\nrules = ( { comm = ; } );\n", NULL, { { NULL } } },
};
#define NVARIANTS (sizeof(variants) / sizeof(variants[0]))

/* ---- clients (report through CT[i] and the exit code, never Criterion) ------------------ */

static int cfail(struct counts *c, const char *what, int e)
{
	snprintf(c->msg, sizeof(c->msg), "%s: %s", what, e ? strerror(e) : "short or wrong");
	return 1;
}

static uint64_t xs(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static bool check(const unsigned char *buf, uint32_t seed, uint64_t off, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (buf[i] != ch_pat(seed, off + i))
			return false;
	return true;
}

static int reader(unsigned i, const char *path, struct counts *c, double until)
{
	static unsigned char buf[MAXIO];
	uint64_t s = 0x1234567ull + i;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return cfail(c, "open", errno);
	while (ch_now() < until) {
		size_t n = 1 + xs(&s) % MAXIO;
		uint64_t off = xs(&s) % (RFILE_SIZE - n + 1);
		ssize_t r = pread(fd, buf, n, (off_t)off);

		if (r < 0)
			return cfail(c, "pread", errno);
		c->rios++;
		c->rbytes += n;
		if ((size_t)r != n || !check(buf, 100 + i, off, n))
			return cfail(c, "pread data", 0);
	}
	close(fd);
	return 0;
}

static int writer(unsigned i, const char *path, struct counts *c, double until)
{
	static unsigned char buf[MAXIO], back[MAXIO];
	uint64_t s = 0xabcdefull + i, off = 0;
	uint32_t seed = 200 + i;
	unsigned n_w = 0;
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);

	if (fd < 0)
		return cfail(c, "create", errno);
	while (ch_now() < until) {
		size_t n = 1 + xs(&s) % MAXIO;
		ssize_t r;

		if (off + n > WWRAP)
			off = 0;
		for (size_t k = 0; k < n; k++)
			buf[k] = ch_pat(seed, off + k);
		r = pwrite(fd, buf, n, (off_t)off);
		if (r < 0)
			return cfail(c, "pwrite", errno);
		c->wios++;
		c->wbytes += n;
		if ((size_t)r != n)
			return cfail(c, "short pwrite", 0);
		/* read back what was just written (never past EOF: it is inside the file) */
		r = pread(fd, back, n, (off_t)off);
		if (r < 0)
			return cfail(c, "pread", errno);
		c->rios++;
		c->rbytes += n;
		if ((size_t)r != n || memcmp(back, buf, n) != 0)
			return cfail(c, "read back", 0);
		off += n;
		if (++n_w % 8 == 0) {
			if (fsync(fd) != 0)
				return cfail(c, "fsync", errno);
			c->wios++;
		}
	}
	if (fsync(fd) != 0)
		return cfail(c, "final fsync", errno);
	c->wios++;
	close(fd);
	return 0;
}

/* ---- parent helpers ---------------------------------------------------------------------- */

static char *ctl_read(const char *rel, char *buf, size_t cap)
{
	char path[PATH_MAX];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/.cfqfs/%s", M.mnt, rel);
	n = mnt_get(path, buf, cap - 1);
	cr_assert_geq(n, 0, "reading .cfqfs/%s: %s", rel, strerror((int)-n));
	buf[n] = '\0';
	if (n > 0 && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
	return buf;
}

/* One write(2) to a control file. 0 or -errno. */
static int ctl_write(const char *rel, const char *val)
{
	char path[PATH_MAX];
	int fd, r = 0;

	snprintf(path, sizeof(path), "%s/.cfqfs/%s", M.mnt, rel);
	fd = open(path, O_WRONLY | O_TRUNC);
	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) != (ssize_t)strlen(val))
		r = -errno;
	close(fd);
	return r;
}

/* The bracketed name in .cfqfs/scheduler ("noop deadline [cfq]"). */
static const char *active_sched(char *buf, size_t cap)
{
	char t[128], *a, *b;

	ctl_read("scheduler", t, sizeof(t));
	a = strchr(t, '[');
	b = a ? strchr(a, ']') : NULL;
	cr_assert(a && b, "scheduler file: %s", t);
	*b = '\0';
	snprintf(buf, cap, "%s", a + 1);
	return buf;
}

/* "name=value\n" for every file of .cfqfs/iosched, in readdir order (stable for one policy). */
static void iosched_snapshot(char *out, size_t cap)
{
	char dir[PATH_MAX], val[64];
	struct dirent *de;
	size_t len = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/.cfqfs/iosched", M.mnt);
	d = opendir(dir);
	cr_assert_not_null(d, "%s: %s", dir, strerror(errno));
	out[0] = '\0';
	while ((de = readdir(d))) {
		char rel[300];

		if (de->d_name[0] == '.')
			continue;
		snprintf(rel, sizeof(rel), "iosched/%s", de->d_name);
		ctl_read(rel, val, sizeof(val));
		len += (size_t)snprintf(out + len, cap - len, "%s=%s\n", de->d_name, val);
		cr_assert(len < cap);
	}
	closedir(d);
}

static uint64_t iostat_total(const char *key)
{
	char text[1 << 16];
	unsigned groups;
	uint64_t sum;
	ssize_t n = mnt_get(mnt_path(&M, ".cfqfs/io.stat"), text, sizeof(text) - 1);

	cr_assert_geq(n, 0, "io.stat: %s", strerror((int)-n));
	text[n] = '\0';
	cr_assert_eq(ch_iostat_sum(text, key, &groups, &sum), 0, "io.stat lacks %s:\n%s", key,
		     text);
	return sum;
}

Test(reload, sighup_and_switches_under_load_lose_no_request, .timeout = 150)
{
	static const char *const keys[4] = { "rios", "wios", "rbytes", "wbytes" };
	static const char *const scheds[3] = { "cfq", "deadline", "noop" };
	uint64_t before[4], after[4], want[4] = { 0 };
	unsigned ok0, kept0, reloads = 0, refused = 0, switches = 0;
	char err[1024] = "", cur[32], val[64];
	double until;

	for (unsigned i = 0; i < NREADERS; i++) {
		char name[16];
		snprintf(name, sizeof(name), "r%u", i);
		cr_assert_eq(ch_make_file(src_path(&M, name), 100 + i, RFILE_SIZE), 0);
	}
	wl_cr_mount(&M, variants[0].text, "direct_io");
	for (int k = 0; k < 4; k++)
		before[k] = iostat_total(keys[k]);

	CT = mmap(NULL, sizeof(*CT) * NCL, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		  -1, 0);
	cr_assert(CT != MAP_FAILED);
	until = ch_now() + LOAD_S;
	fflush(NULL);
	for (unsigned i = 0; i < NCL; i++) {
		char path[PATH_MAX], comm[16];
		bool w = i >= NREADERS;
		unsigned j = w ? i - NREADERS : i;

		snprintf(path, sizeof(path), "%s/%s%u", M.mnt, w ? "w" : "r", j);
		snprintf(comm, sizeof(comm), "%s%u", w ? "rlw" : "rlr", j);
		pid_t p = fork();
		if (p == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			prctl(PR_SET_NAME, comm);
			_exit(w ? writer(j, path, &CT[i], until) : reader(j, path, &CT[i], until));
		}
		cr_assert_gt(p, 0, "fork: %s", strerror(errno));
		PIDS[i] = p;
	}

	mnt_log_reloads(&M, &ok0, &kept0, err, sizeof(err));
	for (unsigned it = 1; ch_now() < until - 1.0; it++) {
		const struct variant *v = &variants[it % NVARIANTS];
		char sched_before[32], tun_before[4096];
		unsigned ok, kept;

		/* the state an invalid file must leave alone */
		active_sched(sched_before, sizeof(sched_before));
		iosched_snapshot(tun_before, sizeof(tun_before));

		mnt_cr_put_conf(&M, v->text);
		cr_assert_eq(kill(M.pid, SIGHUP), 0);
		for (double t0 = ch_now();; usleep(5000)) {
			mnt_log_reloads(&M, &ok, &kept, err, sizeof(err));
			if (ok + kept > ok0 + kept0)
				break;
			cr_assert(ch_now() < t0 + REPLY_TIMEOUT_S, "no answer to SIGHUP %u in "
				  "the log after %.0f s", it, REPLY_TIMEOUT_S);
		}
		cr_assert_eq(ok + kept, ok0 + kept0 + 1, "one SIGHUP, %u answers",
			     ok + kept - ok0 - kept0);
		if (v->sched) {
			cr_assert_eq(ok, ok0 + 1, "valid variant %zu refused: %s",
				     (size_t)(it % NVARIANTS), err);
			cr_assert_str_eq(active_sched(cur, sizeof(cur)), v->sched,
					 "after reloading variant %zu (scheduler %s) the scheduler is "
					 "%s", (size_t)(it % NVARIANTS), v->sched, cur);
			for (int t = 0; t < 3 && v->tun[t][0]; t++) {
				char rel[64];
				snprintf(rel, sizeof(rel), "iosched/%s", v->tun[t][0]);
				cr_assert_str_eq(ctl_read(rel, val, sizeof(val)), v->tun[t][1],
						 "variant %zu: %s is %s, the file says %s",
						 (size_t)(it % NVARIANTS), v->tun[t][0], val,
						 v->tun[t][1]);
			}
			reloads++;
		} else {
			cr_assert_eq(kept, kept0 + 1, "invalid variant %zu accepted",
				     (size_t)(it % NVARIANTS));
			cr_assert(strstr(err, "cfqfs.conf"), "the error does not name the file: %s",
				  err);
			cr_assert_str_eq(active_sched(cur, sizeof(cur)), sched_before,
					 "an invalid file changed the scheduler");
			char tun_after[4096];
			iosched_snapshot(tun_after, sizeof(tun_after));
			cr_assert_str_eq(tun_after, tun_before, "an invalid file changed tunables");
			refused++;
		}
		ok0 = ok;
		kept0 = kept;

		/* live switches and tunables between reloads */
		cr_assert_eq(ctl_write("scheduler", scheds[it % 3]), 0);
		switches++;
		cr_assert_str_eq(active_sched(cur, sizeof(cur)), scheds[it % 3]);
		cr_assert_eq(ctl_write("iosched/max_merge_kb", it % 2 ? "0" : "256"), 0);
		if (it % 3 == 0) {
			cr_assert_eq(ctl_write("iosched/slice_idle", it % 2 ? "0" : "8"), 0);
			cr_assert_eq(ctl_write("iosched/quantum", it % 2 ? "2" : "8"), 0);
		} else if (it % 3 == 1) {
			cr_assert_eq(ctl_write("iosched/fifo_batch", it % 2 ? "1" : "16"), 0);
		}
		usleep(20000);
	}

	for (unsigned i = 0; i < NCL; i++) {
		int st = 0;
		pid_t r;

		while ((r = waitpid(PIDS[i], &st, WNOHANG)) == 0 && ch_now() < until + 30)
			usleep(20000);
		cr_assert_eq(r, PIDS[i], "client %u hung in a request", i);
		PIDS[i] = 0;
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "client %u failed (0x%x): %s", i,
			  st, CT[i].msg);
		want[0] += CT[i].rios;
		want[1] += CT[i].wios;
		want[2] += CT[i].rbytes;
		want[3] += CT[i].wbytes;
	}
	for (int k = 0; k < 4; k++)
		after[k] = iostat_total(keys[k]);
	cr_log_info("reload: %u valid reloads, %u invalid refused, %u scheduler switches; "
		    "clients: %" PRIu64 " reads (%" PRIu64 " B), %" PRIu64 " writes+fsyncs (%"
		    PRIu64 " B)", reloads, refused, switches, want[0], want[2], want[1], want[3]);
	cr_assert_geq(reloads, 10, "too few reloads (%u) to mean anything", reloads);
	cr_assert_geq(refused, 2, "too few invalid files (%u)", refused);
	for (int k = 0; k < 4; k++)
		cr_assert_eq(after[k] - before[k], want[k],
			     "io.stat %s grew by %" PRIu64 ", the clients did %" PRIu64, keys[k],
			     after[k] - before[k], want[k]);
	cr_assert_eq(iostat_total("queued"), 0, "requests still queued");

	/* the writers' data in SOURCE: every byte up to the wrap point they reached */
	for (unsigned j = 0; j < NWRITERS; j++) {
		char name[16];
		uint64_t bad = 0;
		struct stat st;
		int r;

		snprintf(name, sizeof(name), "w%u", j);
		cr_assert_eq(stat(src_path(&M, name), &st), 0);
		r = ch_verify_file(src_path(&M, name), 200 + j, (uint64_t)st.st_size, &bad);
		cr_assert_eq(r, 0, "%s differs at %" PRIu64 " (rc %d)", name, bad, r);
	}
	mnt_cr_finish(&M);
}

/*
 * New rules reach a running process's very next request. cfqfs keeps a caller's verdict for a
 * few milliseconds between full classifications (fs/classify.c); a reload must drop those.
 * The test thread reads without pause while each SIGHUP is answered, so its verdict is always
 * fresh when the answer appears, and the first read after the answer must be charged to the
 * group the new rules name. Ten reloads alternate between two rule sets.
 */
Test(reload, new_rules_apply_to_the_next_request_of_a_running_process)
{
	static const char *const conf[2] = {
		"scheduler = \"noop\";\nrules = ( { uid = 0; group = \"rl-before\"; } );\n",
		"scheduler = \"noop\";\nrules = ( { uid = 0; group = \"rl-after\"; } );\n",
	};
	static const char *const group[2] = { "rl-before", "rl-after" };
	char buf[4096], err[1024] = "";
	unsigned ok0, kept0;
	int fd;

	if (geteuid() != 0)
		cr_skip("the rules match uid 0");
	cr_assert_eq(ch_make_file(src_path(&M, "f"), 7, 1u << 20), 0);
	wl_cr_mount(&M, conf[0], "direct_io"); /* the file mnt_cr_put_conf() rewrites */
	fd = open(mnt_path(&M, "f"), O_RDONLY);
	cr_assert_geq(fd, 0, "open: %s", strerror(errno));
	for (unsigned round = 0; round < 10; round++) {
		unsigned next = (round + 1) % 2, ok, kept, reads = 0;
		uint64_t b0, b1;

		cr_assert_eq(pread(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
		cr_assert_gt(wl_iostat_or_0(&M, group[round % 2], "rbytes"), 0,
			     "round %u: not charged to %s", round, group[round % 2]);
		mnt_log_reloads(&M, &ok0, &kept0, err, sizeof(err));
		mnt_cr_put_conf(&M, conf[next]);
		cr_assert_eq(kill(M.pid, SIGHUP), 0);
		for (double t0 = ch_now();; reads++) {
			cr_assert_eq(pread(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
			mnt_log_reloads(&M, &ok, &kept, err, sizeof(err));
			if (ok + kept > ok0 + kept0)
				break;
			cr_assert(ch_now() < t0 + REPLY_TIMEOUT_S, "no answer to SIGHUP");
		}
		cr_assert_eq(ok, ok0 + 1, "reload refused: %s", err);
		b0 = wl_iostat_or_0(&M, group[next], "rbytes");
		cr_assert_eq(pread(fd, buf, sizeof(buf), 4096), (ssize_t)sizeof(buf));
		b1 = wl_iostat_or_0(&M, group[next], "rbytes");
		cr_assert_eq(b1 - b0, sizeof(buf),
			     "round %u (%u reads while the reload was answered): the first read "
			     "after it was not charged to %s (+%" PRIu64 " B)", round, reads,
			     group[next], b1 - b0);
	}
	close(fd);
	mnt_cr_finish(&M);
}

/* Sends SIGHUP after a new configuration and waits for the daemon's answer; fails on a
 * refusal. */
static void reload_and_wait(const char *text)
{
	char err[1024] = "";

	cr_assert(mnt_cr_reload(&M, text, err, sizeof(err)), "reload refused: %s", err);
}

/*
 * Keys that only a mount sets up: a reload that changes them is applied for everything else,
 * names exactly the ones that changed, and keeps (and reports) the running values, so the
 * same file again is not a change.
 */
Test(reload, mount_time_keys_are_named_and_keep_their_running_values)
{
	char cur[32];

	wl_cr_mount(&M, "depth = 4;\nattr_timeout = 1.0;\n", NULL);

	reload_and_wait("depth = 16;\nattr_timeout = 5.0;\nscheduler = \"noop\";\n");
	cr_assert_eq(mnt_log_count(&M, "reload: depth, attr_timeout: set when mounting"), 1,
		     "the warning names the two keys that changed");
	cr_assert_str_eq(active_sched(cur, sizeof(cur)), "noop", "the live key was applied");
	cr_assert_eq(mnt_log_count(&M, "configuration reloaded: scheduler=noop depth=4 "), 1,
		     "the kept configuration shows the running depth");

	/* Back to the running values: nothing to warn about. */
	reload_and_wait("depth = 4;\nattr_timeout = 1.0;\nscheduler = \"noop\";\n");
	cr_assert_eq(mnt_log_count(&M, "set when mounting"), 1, "a second warning for no change");

	/* The same changed file twice: it still differs from what runs, so both times. */
	reload_and_wait("depth = 16;\nattr_timeout = 1.0;\n");
	reload_and_wait("depth = 16;\nattr_timeout = 1.0;\n");
	cr_assert_eq(mnt_log_count(&M, "reload: depth: set when mounting"), 2);
	mnt_cr_finish(&M);
}

/*
 * A relative -c path: the daemon leaves its working directory when it mounts, so a reload must
 * find the file by the path made absolute at start-up.
 */
Test(reload, a_relative_config_path_is_found_again_by_a_reload)
{
	const char *const args[] = { "-c", "cfqfs.conf", NULL };
	char cwd[PATH_MAX], cur[32], st[64];
	int r;

	mnt_cr_put_conf(&M, "scheduler = \"noop\";\n");
	cr_assert_not_null(getcwd(cwd, sizeof(cwd)), "getcwd: %s", strerror(errno));
	cr_assert_eq(chdir(M.base), 0, "chdir %s: %s", M.base, strerror(errno));
	r = mnt_start(&M, args);
	cr_assert_eq(chdir(cwd), 0, "chdir %s: %s", cwd, strerror(errno));
	if (r != 0) {
		mnt_dump_log(&M);
		cr_assert_fail("mounting with -c cfqfs.conf in %s failed: %s (daemon %s)", M.base,
			       strerror(-r), mnt_status_str(&M, st, sizeof(st)));
	}
	cr_assert_str_eq(active_sched(cur, sizeof(cur)), "noop");

	reload_and_wait("scheduler = \"deadline\";\n");
	cr_assert_str_eq(active_sched(cur, sizeof(cur)), "deadline", "the reload was not applied");
	mnt_cr_finish(&M);
}

/* The default of a CFQ tunable on a rotational device, from the scheduler's table. */
static const char *cfq_default(const char *name, char *buf, size_t cap)
{
	for (const struct sched_tunable_desc *d = sched_tunables(SCHED_POLICY_CFQ); d->name; d++)
		if (!strcmp(d->name, name)) {
			snprintf(buf, cap, "%lld", (long long)d->def);
			return buf;
		}
	cr_assert_fail("cfq has no tunable %s", name);
	return NULL;
}

/*
 * A reload reads the file as at start-up: a tunable the file no longer names goes back to its
 * default, and so does one written through the control directory since; one the file names
 * gets the file's value.
 */
Test(reload, tunables_the_file_no_longer_names_go_back_to_their_defaults)
{
	static const char *const names[] = { "slice_idle", "quantum", "group_idle", "slice_sync" };
	char val[64], def[32];

	wl_cr_mount(&M, "scheduler = \"cfq\";\niosched = { slice_idle = 0; quantum = 2; };\n",
		    "rotational=true");
	cr_assert_str_eq(ctl_read("iosched/slice_idle", val, sizeof(val)), "0");
	cr_assert_str_eq(ctl_read("iosched/quantum", val, sizeof(val)), "2");
	cr_assert_eq(ctl_write("iosched/group_idle", "3"), 0);

	reload_and_wait("# no tunables any more\niosched = { slice_sync = 50; };\n");
	for (int i = 0; i < 3; i++) {
		char rel[64];

		snprintf(rel, sizeof(rel), "iosched/%s", names[i]);
		cr_assert_str_eq(ctl_read(rel, val, sizeof(val)),
				 cfq_default(names[i], def, sizeof(def)),
				 "after a reload with a file that does not name it, %s is %s, its "
				 "default is %s", names[i], val, def);
	}
	cr_assert_str_eq(ctl_read("iosched/slice_sync", val, sizeof(val)), "50");
	mnt_cr_finish(&M);
}

/* The default a reload restores is the one of this device: no idling when it does not spin. */
Test(reload, a_removed_tunable_gets_the_default_of_this_device)
{
	char val[64];

	wl_cr_mount(&M, "iosched = { slice_idle = 8; };\n", "rotational=false");
	cr_assert_str_eq(ctl_read("iosched/slice_idle", val, sizeof(val)), "8");
	reload_and_wait("scheduler = \"cfq\";\n");
	cr_assert_str_eq(ctl_read("iosched/slice_idle", val, sizeof(val)), "0",
			 "slice_idle after the reload on a non-rotational device");
	mnt_cr_finish(&M);
}

/*
 * A path rule that a reload brings applies to files that were open before it, from their next
 * request, as the configuration promises for every new rule. A handle opened while no rule
 * matched on paths had no path and kept being charged by the old rules for its lifetime; a
 * handle opened after the reload was charged to the new group.
 */
Test(reload, a_path_rule_added_by_a_reload_applies_to_files_already_open)
{
	static const char *const before = "scheduler = \"noop\";\n"
					  "rules = ( { uid = 0; group = \"pr-uid\"; } );\n";
	static const char *const after = "scheduler = \"noop\";\n"
					 "rules = ( { path = \"/pr\"; group = \"pr-path\"; },\n"
					 "\t{ uid = 0; group = \"pr-uid\"; } );\n";
	char buf[4096];
	uint64_t b0, b1;
	int fd;

	if (geteuid() != 0)
		cr_skip("the rules match uid 0");
	cr_assert_eq(ch_make_file(src_path(&M, "pr"), 9, 1u << 20), 0);
	wl_cr_mount(&M, before, "direct_io");
	fd = open(mnt_path(&M, "pr"), O_RDONLY);
	cr_assert_geq(fd, 0, "open: %s", strerror(errno));
	cr_assert_eq(pread(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	cr_assert_gt(wl_iostat_or_0(&M, "pr-uid", "rbytes"), 0, "not charged to pr-uid first");
	reload_and_wait(after);
	b0 = wl_iostat_or_0(&M, "pr-path", "rbytes");
	cr_assert_eq(pread(fd, buf, sizeof(buf), 4096), (ssize_t)sizeof(buf));
	b1 = wl_iostat_or_0(&M, "pr-path", "rbytes");
	cr_assert_eq(b1 - b0, sizeof(buf),
		     "the read on the handle opened before the reload was not charged to the path "
		     "rule's group (+%" PRIu64 " B)", b1 - b0);
	close(fd);
	mnt_cr_finish(&M);
}
