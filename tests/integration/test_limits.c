/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * limits: the per-group bounds (queue_limit, queue_limit_mb, open_limit) stop one group that
 * floods the mount without touching the others.
 *
 * Two groups by comm rule: "hog" (a process named cfqfs-hog) and "victim" (cfqfs-vic). The
 * mount runs on the emulated hdd with depth 1 and direct_io, so every read or write is one
 * request and a backlog builds up at once. Each test asserts both sides: the hog is refused
 * (EAGAIN or EMFILE, exactly as documented) and the victim sees no error at all and completes
 * its work while the hog is still at it.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "chaos.h"
#include "mount.h"
#include "workload.h"

#define HOG_THREADS 48
#define FILE_SIZE (4u << 20)

static struct mnt m;

static const char conf_text[] =
	"rules = (\n"
	"  { comm = \"cfqfs-hog\"; group = \"hog\"; },\n"
	"  { comm = \"cfqfs-vic\"; group = \"victim\"; }\n"
	");\n";

/* Counters shared with the forked clients (MAP_SHARED). */
struct shared {
	atomic_int stop;	    /* set by the test: hog threads leave */
	atomic_long hog_ok;	    /* hog requests that succeeded */
	atomic_long hog_eagain;	    /* hog requests refused with EAGAIN */
	atomic_long hog_other;	    /* hog requests failing otherwise */
	atomic_int hog_other_errno; /* the last such errno */
	atomic_int hog_ready;	    /* hog threads started */
};
static struct shared *sh;

static void init(void)
{
	mnt_cr_prepare(&m);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(sh, MAP_FAILED);
	memset(sh, 0, sizeof(*sh));
}

static void fini(void)
{
	if (sh && sh != MAP_FAILED)
		atomic_store(&sh->stop, 1);
	mnt_cr_teardown(&m);
	if (sh && sh != MAP_FAILED)
		munmap(sh, sizeof(*sh));
	sh = NULL;
}

TestSuite(limits, .init = init, .fini = fini, .timeout = 120);

/* What a hog thread does: */
enum hog_op { HOG_READ, HOG_WRITE, HOG_COPY /* copy_file_range from `path` to its own file */ };

struct hog_arg {
	const char *path;
	enum hog_op op;
	size_t len;
	unsigned idx;
};

static void count(ssize_t r)
{
	int e = errno;

	if (r >= 0) {
		atomic_fetch_add(&sh->hog_ok, 1);
	} else if (e == EAGAIN) {
		atomic_fetch_add(&sh->hog_eagain, 1);
	} else {
		atomic_fetch_add(&sh->hog_other, 1);
		atomic_store(&sh->hog_other_errno, e);
	}
}

static void *hog_thread(void *arg)
{
	const struct hog_arg *a = arg;
	char *buf = malloc(a->len);
	char own[PATH_MAX + 16];
	unsigned seed = a->idx * 7919u + 1;
	/* Writers use a file each: the kernel serialises direct writes to one file (the inode
	 * lock), which would leave a single write outstanding. */
	snprintf(own, sizeof(own), "%s.%u", a->path, a->idx);
	int fd = a->op == HOG_WRITE ? open(own, O_WRONLY | O_CREAT, 0644) : open(a->path, O_RDONLY);
	int dfd = a->op == HOG_COPY ? open(own, O_WRONLY | O_CREAT, 0644) : -2;

	atomic_fetch_add(&sh->hog_ready, 1);
	if (fd < 0 || dfd == -1 || !buf) {
		count(-1);
		goto out;
	}
	memset(buf, 'h', a->len);
	while (!atomic_load(&sh->stop)) {
		off_t off = (off_t)(rand_r(&seed) % (FILE_SIZE / a->len)) * (off_t)a->len;
		loff_t in = off, out = off;
		ssize_t r = a->op == HOG_WRITE  ? pwrite(fd, buf, a->len, off)
			    : a->op == HOG_COPY ? copy_file_range(fd, &in, dfd, &out, a->len, 0)
						: pread(fd, buf, a->len, off);
		count(r);
		if (r < 0) /* back off as a polite client would; spinning only burns the CPU */
			usleep(1000);
	}
out:
	if (fd >= 0)
		close(fd);
	if (dfd >= 0)
		close(dfd);
	free(buf);
	return NULL;
}

/* The hog: a process named cfqfs-hog whose HOG_THREADS threads hammer `path` until stop. */
static pid_t start_hog(const char *path, enum hog_op op, size_t len)
{
	/* No cr_ call between fork and the child test: Criterion's reporting socket is shared,
	 * and a child sending on it deadlocks both. */
	pid_t pid = fork();

	if (pid == 0) {
		static pthread_t t[HOG_THREADS];
		static struct hog_arg a[HOG_THREADS];

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		prctl(PR_SET_NAME, "cfqfs-hog");
		for (unsigned i = 0; i < HOG_THREADS; i++) {
			a[i] = (struct hog_arg){ .path = path, .op = op, .len = len, .idx = i };
			pthread_create(&t[i], NULL, hog_thread, &a[i]);
		}
		for (unsigned i = 0; i < HOG_THREADS; i++)
			pthread_join(t[i], NULL);
		_exit(0);
	}
	cr_assert_neq(pid, -1);
	return pid;
}

/* The victim's work, run in a child named cfqfs-vic: `n` sequential requests of `len` bytes;
 * the exit code is 0, or the errno of the first failure. */
struct vic_arg {
	const char *path;
	bool write;
	size_t len;
	unsigned n;
};

static int victim(void *arg)
{
	const struct vic_arg *a = arg;
	static char buf[256 << 10];
	int fd, rc = 0;

	prctl(PR_SET_NAME, "cfqfs-vic");
	fd = open(a->path, a->write ? O_WRONLY : O_RDONLY);
	if (fd < 0)
		return errno;
	memset(buf, 'v', sizeof(buf));
	for (unsigned i = 0; i < a->n && rc == 0; i++) {
		ssize_t r = a->write ? pwrite(fd, buf, a->len, (off_t)(i * a->len))
				     : pread(fd, buf, a->len, (off_t)(i * a->len));
		if (r != (ssize_t)a->len)
			rc = r < 0 ? errno : EIO;
	}
	close(fd);
	return rc;
}

static void wait_hog_started(void)
{
	for (int i = 0; i < 1000 && atomic_load(&sh->hog_ready) < HOG_THREADS; i++)
		usleep(10000);
	cr_assert_eq(atomic_load(&sh->hog_ready), HOG_THREADS, "hog threads did not start");
	usleep(300000); /* let the backlog build up */
}

static void stop_hog(pid_t hog)
{
	int st;

	atomic_store(&sh->stop, 1);
	cr_assert_eq(waitpid(hog, &st, 0), hog);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "hog died: status %#x", st);
}

static bool log_mentions(const char *what)
{
	static char text[1 << 20];
	ssize_t n = mnt_get(m.log, text, sizeof(text) - 1);

	if (n < 0)
		return false;
	text[n] = '\0';
	return strstr(text, what) != NULL;
}

static void run_queue_case(const char *opts, enum hog_op op, size_t hog_len, size_t vic_len,
			   unsigned vic_n)
{
	cr_assert_eq(wl_make_file(src_path(&m, "hog"), FILE_SIZE), 0);
	cr_assert_eq(wl_make_file(src_path(&m, "vic"), FILE_SIZE), 0);
	wl_cr_mount(&m, conf_text, opts);

	pid_t hog = start_hog(mnt_path(&m, "hog"), op, hog_len);
	wait_hog_started();
	struct vic_arg va = { .path = mnt_path(&m, "vic"), .write = op != HOG_READ, .len = vic_len,
			      .n = vic_n };
	int vrc = mnt_fork_run(victim, &va, 90000);
	long eagain_during = atomic_load(&sh->hog_eagain);
	stop_hog(hog);

	long ok = atomic_load(&sh->hog_ok), other = atomic_load(&sh->hog_other);
	cr_log_info("%s: hog ok=%ld eagain=%ld other=%ld; victim %u x %zu bytes: %s", opts, ok,
		    atomic_load(&sh->hog_eagain), other, vic_n, vic_len,
		    vrc == 0 ? "ok" : strerror(vrc));
	cr_expect_eq(vrc, 0, "the victim group failed: %s (exit %d)",
		     vrc > 0 && vrc < 128 ? strerror(vrc) : "killed or timed out", vrc);
	cr_expect_gt(eagain_during, 0, "the hog was never refused while the victim ran");
	cr_expect_gt(ok, 0, "the hog got nothing at all: the limit must bound it, not block it");
	cr_expect_eq(other, 0, "hog requests failed with %s, not EAGAIN",
		     strerror(atomic_load(&sh->hog_other_errno)));
	cr_expect(log_mentions("reached its queue limit"), "no limit warning in the daemon log");
	mnt_cr_finish(&m);
}

Test(limits, queue_limit_refuses_the_flooding_group_only)
{
	run_queue_case("direct_io,device=hdd,depth=1,queue_limit=16", HOG_READ, 4096, 4096, 40);
}

/* A copy holds one max_copy_kb piece (here 256 KiB) of queue_limit_mb from submission to its
 * answer, so 48 copying threads pass 1 MiB at the fifth: the copying group is refused with
 * EAGAIN (nothing else), the writing victim is not. */
Test(limits, queue_limit_mb_bounds_copies)
{
	run_queue_case("direct_io,device=hdd,depth=1,queue_limit_mb=1,max_copy_kb=256", HOG_COPY,
		       256 << 10, 64 << 10, 16);
}

Test(limits, queue_limit_mb_bounds_buffered_write_data)
{
	run_queue_case("direct_io,device=hdd,depth=1,queue_limit_mb=1", HOG_WRITE, 128 << 10,
		       64 << 10, 16);
}

/* In a child named cfqfs-hog, so in the flooding group: `n` fsyncs of `path` (opened for
 * writing, nothing written: a write would be refused). Exit code: 0, or the first errno. */
static int hog_fsyncs(void *arg)
{
	const char *path = arg;
	int fd, rc = 0;

	prctl(PR_SET_NAME, "cfqfs-hog");
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return errno;
	for (int i = 0; i < 20 && rc == 0; i++)
		if ((i % 2 ? fdatasync(fd) : fsync(fd)) != 0)
			rc = errno;
	close(fd);
	return rc;
}

Test(limits, fsync_is_never_refused)
{
	cr_assert_eq(wl_make_file(src_path(&m, "hog"), FILE_SIZE), 0);
	wl_cr_mount(&m, conf_text, "direct_io,device=hdd,depth=1,queue_limit=16");

	pid_t hog = start_hog(mnt_path(&m, "hog"), HOG_READ, 4096);
	wait_hog_started();
	long eagain0 = atomic_load(&sh->hog_eagain);
	int rc = mnt_fork_run(hog_fsyncs, (void *)mnt_path(&m, "hog"), 90000);
	long eagain_during = atomic_load(&sh->hog_eagain) - eagain0;
	stop_hog(hog);
	cr_log_info("fsync_is_never_refused: hog refused %ld times during 20 fsyncs", eagain_during);
	/* else the group was not over its limit and the test shows nothing */
	cr_expect_gt(eagain_during, 0, "the hog group was never refused while the fsyncs ran");
	cr_expect_eq(rc, 0, "an fsync or fdatasync of the over-limit group failed: %s (exit %d)",
		     rc > 0 && rc < 128 ? strerror(rc) : "killed or timed out", rc);
	mnt_cr_finish(&m);
}

/* Byte i of the writeback test's file. */
static unsigned char wb_byte(size_t i)
{
	return (unsigned char)((i * 2654435761u) >> 13);
}

/*
 * Writeback is never refused by the bounds. With writeback_cache the kernel sends buffered
 * data later, on nobody's behalf (pid 0): an EAGAIN would reach no one, and the data the
 * application was told was written would be lost (fsync fails, SOURCE misses it). The kernel
 * bounds these requests itself (max_background of them at once). queue_limit_mb=1 on the
 * emulated hdd, so that writeback requests of one group pile up behind the disk: every byte
 * must reach SOURCE and fsync must succeed. (Before the exemption, fsync failed here.)
 */
Test(limits, writeback_is_never_refused_by_the_bounds)
{
	const size_t total = 32u << 20, chunk = 1u << 20;
	unsigned char *buf = malloc(chunk), *back = malloc(chunk);
	int fd;

	cr_assert(buf && back);
	wl_cr_mount(&m, NULL, "writeback_cache,device=hdd,queue_limit_mb=1");
	fd = open(mnt_path(&m, "wb"), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
	cr_assert_geq(fd, 0, "create: %s", strerror(errno));
	for (size_t off = 0; off < total; off += chunk) {
		for (size_t i = 0; i < chunk; i++)
			buf[i] = wb_byte(off + i);
		cr_assert_eq(write(fd, buf, chunk), (ssize_t)chunk, "write at %zu: %s", off,
			     strerror(errno));
	}
	cr_assert_eq(fsync(fd), 0, "fsync after buffered writes: %s (writeback refused?)",
		     strerror(errno));
	cr_assert_eq(close(fd), 0);
	fd = open(src_path(&m, "wb"), O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0, "SOURCE file: %s", strerror(errno));
	for (size_t off = 0; off < total; off += chunk) {
		cr_assert_eq(pread(fd, back, chunk, (off_t)off), (ssize_t)chunk,
			     "SOURCE is short at %zu", off);
		for (size_t i = 0; i < chunk; i++)
			if (back[i] != wb_byte(off + i))
				cr_assert_fail("SOURCE byte %zu is %u, want %u", off + i, back[i],
					       wb_byte(off + i));
	}
	close(fd);
	cr_expect_not(log_mentions("reached its queue limit"),
		      "writeback was counted against the limits");
	free(buf);
	free(back);
	mnt_cr_finish(&m);
}

/* SOURCE/files/f0..f(n-1), one byte each. */
static void make_files(int n)
{
	char p[PATH_MAX + 32];

	cr_assert_eq(mkdir(src_path(&m, "files"), 0755), 0);
	for (int i = 0; i < n; i++) {
		snprintf(p, sizeof(p), "files/f%d", i);
		cr_assert_eq(mnt_put(src_path(&m, p), "x", 1, 0644), 0);
	}
}

/* Opens files/f0.. through the mount as cfqfs-hog and keeps them; exits with the number that
 * opened, and 200 + 1 if the first failure was not EMFILE. Also checks that an O_EXCL create
 * over the limit leaves no file (exit 250 if it does). */
#define OPEN_LIMIT 32
#define OPEN_FILES 48

static char open_dir[PATH_MAX];

static int open_hog(void *arg)
{
	(void)arg;
	char p[PATH_MAX + 32];
	int n = 0;

	prctl(PR_SET_NAME, "cfqfs-hog");
	for (int i = 0; i < OPEN_FILES; i++) {
		snprintf(p, sizeof(p), "%s/f%d", open_dir, i);
		if (open(p, O_RDONLY) < 0) {
			if (errno != EMFILE)
				return 201;
			break;
		}
		n++;
	}
	snprintf(p, sizeof(p), "%s/new", open_dir);
	if (open(p, O_CREAT | O_EXCL | O_WRONLY, 0644) >= 0 || errno != EMFILE)
		return 202;
	if (access(p, F_OK) == 0)
		return 250;
	return n; /* descriptors close at exit */
}

static int open_victim(void *arg)
{
	(void)arg;
	char p[PATH_MAX + 32];

	prctl(PR_SET_NAME, "cfqfs-vic");
	for (int i = 0; i < 10; i++) {
		snprintf(p, sizeof(p), "%s/f%d", open_dir, i);
		if (open(p, O_RDONLY) < 0)
			return errno;
	}
	return 0;
}

Test(limits, open_limit_gives_emfile_to_the_hoarding_group_only)
{
	make_files(OPEN_FILES);
	char opts[64];
	snprintf(opts, sizeof(opts), "open_limit=%d", OPEN_LIMIT);
	wl_cr_mount(&m, conf_text, opts);
	snprintf(open_dir, sizeof(open_dir), "%s", mnt_path(&m, "files"));

	int vrc, hrc = mnt_fork_run(open_hog, NULL, 30000);
	cr_expect_eq(hrc, OPEN_LIMIT, "hog opened %d files (201: not EMFILE, 202: create was "
		     "not refused, 250: refused create left a file); want exactly %d",
		     hrc, OPEN_LIMIT);
	/* The hog's files closed at its exit; the victim counts in its own group anyway. */
	vrc = mnt_fork_run(open_victim, NULL, 30000);
	cr_expect_eq(vrc, 0, "victim could not open: %s", strerror(vrc));
	/* The hog's slots come back once the kernel has sent RELEASE for its files. */
	for (int i = 0; i < 100; i++) {
		hrc = mnt_fork_run(open_hog, NULL, 30000);
		if (hrc == OPEN_LIMIT)
			break;
		usleep(50000);
	}
	cr_expect_eq(hrc, OPEN_LIMIT, "after closing, the hog could not open %d again (%d)",
		     OPEN_LIMIT, hrc);
	mnt_cr_finish(&m);
}

/*
 * A handle whose O_APPEND the caller cleared (fcntl F_SETFL) writes through a second
 * descriptor in the daemon, which counts as an open file of its group like any other. With
 * open_limit=4: three handles, then one such write (4 in use) succeeds and lands at its
 * offset; a second one is refused with EMFILE (it would be a fifth descriptor), as is a
 * fourth open; closing the first handle gives back both of its descriptors. Exit 0, or the
 * step that went wrong.
 */
static int append_cleared(void *arg)
{
	(void)arg;
	char p[PATH_MAX + 32];
	int fd[4];

	prctl(PR_SET_NAME, "cfqfs-hog");
	for (int i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "%s/f%d", open_dir, i);
		fd[i] = open(p, O_WRONLY | O_APPEND);
		if (fd[i] < 0)
			return 10 + i;
	}
	if (fcntl(fd[0], F_SETFL, 0) != 0 || pwrite(fd[0], "y", 1, 0) != 1)
		return 20;
	if (fcntl(fd[1], F_SETFL, 0) != 0)
		return 30;
	if (pwrite(fd[1], "y", 1, 0) != -1 || errno != EMFILE)
		return 31;
	snprintf(p, sizeof(p), "%s/f3", open_dir);
	if (open(p, O_RDONLY) != -1 || errno != EMFILE)
		return 40;
	close(fd[0]);
	/* RELEASE is asynchronous: the two descriptors come back shortly */
	for (int i = 0; i < 200; i++) {
		fd[3] = open(p, O_RDONLY);
		if (fd[3] >= 0)
			break;
		if (errno != EMFILE)
			return 50;
		usleep(10000);
	}
	if (fd[3] < 0)
		return 51;
	if (pwrite(fd[1], "z", 1, 0) != 1) /* now f1's second descriptor fits: 4 in use */
		return 60;
	return 0;
}

Test(limits, a_second_descriptor_after_clearing_o_append_counts_against_open_limit)
{
	char got[2] = "";

	make_files(4);
	wl_cr_mount(&m, conf_text, "open_limit=4");
	snprintf(open_dir, sizeof(open_dir), "%s", mnt_path(&m, "files"));
	int rc = mnt_fork_run(append_cleared, NULL, 30000);
	cr_expect_eq(rc, 0, "step %d failed (31: the fifth descriptor was not refused with "
		     "EMFILE; 40: nor a fourth open)", rc);
	cr_assert_eq(mnt_get(src_path(&m, "files/f0"), got, 1), 1);
	cr_expect_eq(got[0], 'y', "the write after clearing O_APPEND did not land at offset 0");
	cr_assert_eq(mnt_get(src_path(&m, "files/f1"), got, 1), 1);
	cr_expect_eq(got[0], 'z');
	mnt_cr_finish(&m);
}

/* Victim opens while the hog holds the maximum: a victim that is refused here means the limit
 * is not per group. */
static int hold_and_signal(int *pipefd)
{
	char p[PATH_MAX + 32];
	int n = 0;

	prctl(PR_SET_NAME, "cfqfs-hog");
	for (int i = 0; i < OPEN_FILES; i++) {
		snprintf(p, sizeof(p), "%s/f%d", open_dir, i);
		if (open(p, O_RDONLY) < 0)
			break;
		n++;
	}
	if (write(pipefd[1], &n, sizeof(n)) != sizeof(n))
		return 1;
	char c;
	if (read(pipefd[2], &c, 1) != 1) /* wait for the test */
		return 2;
	return 0;
}

/*
 * A hog process that opens files and holds them until told to go: fn(pipefd) runs in the
 * child with pipefd[1] its report end and pipefd[2] its "go" end; the test reads `len` bytes
 * of report with holder_report() and lets it leave with holder_finish().
 */
struct holder {
	pid_t pid;
	int fds[4]; /* [0..1]: hog -> test (report); [2..3]: test -> hog (go) */
};

static void holder_start(struct holder *h, int (*fn)(int *pipefd))
{
	cr_assert_eq(pipe(h->fds), 0);
	cr_assert_eq(pipe(h->fds + 2), 0);
	int args[3] = { h->fds[0], h->fds[1], h->fds[2] };
	h->pid = fork(); /* no cr_ call before the child leaves: see start_hog */
	if (h->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		_exit(fn(args));
	}
	cr_assert_neq(h->pid, -1);
	close(h->fds[1]); /* so a hog that dies unreported gives end of file, not a hang */
	h->fds[1] = -1;
}

static void holder_report(struct holder *h, void *buf, size_t len)
{
	cr_assert_eq(read(h->fds[0], buf, len), (ssize_t)len, "the hog died before reporting");
}

/* Lets the hog leave; returns its wait status. */
static int holder_finish(struct holder *h)
{
	int st = 0;

	cr_assert_eq(write(h->fds[3], "g", 1), 1);
	cr_assert_eq(waitpid(h->pid, &st, 0), h->pid);
	for (int i = 0; i < 4; i++)
		if (h->fds[i] >= 0)
			close(h->fds[i]);
	return st;
}

Test(limits, open_limit_leaves_other_groups_alone_while_held)
{
	struct holder h;
	int n = -1;

	make_files(OPEN_FILES);
	wl_cr_mount(&m, conf_text, "open_limit=32");
	snprintf(open_dir, sizeof(open_dir), "%s", mnt_path(&m, "files"));
	holder_start(&h, hold_and_signal);
	holder_report(&h, &n, sizeof(n));
	cr_expect_eq(n, 32, "hog held %d files, want 32", n);
	int vrc = mnt_fork_run(open_victim, NULL, 30000);
	cr_expect_eq(vrc, 0, "victim refused while the hog holds its limit: %s", strerror(vrc));
	holder_finish(&h);
	mnt_cr_finish(&m);
}

/*
 * One caller opening 100 000 files (the same file, 100 000 times: each open is one FUSE open
 * and one descriptor in the daemon). The daemon raises its descriptor limit at start; the hog
 * either gets all of them or is stopped by EMFILE at its group's open_limit, and meanwhile
 * another group still opens and reads. Exit: the hog's count, or 255 for another error.
 */
#define MANY_OPENS 100000

static int many_hog(int *pipefd)
{
	struct rlimit rl = { .rlim_cur = MANY_OPENS + 64, .rlim_max = MANY_OPENS + 64 };
	int n = 0, e = 0;
	char c;

	prctl(PR_SET_NAME, "cfqfs-hog");
	/* Raising the hard limit needs CAP_SYS_RESOURCE, which a container may lack: then the
	 * hog goes as far as its hard limit allows (and EMFILE stops it either way). */
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0 && (getrlimit(RLIMIT_NOFILE, &rl) != 0 ||
						   (rl.rlim_cur = rl.rlim_max,
						    setrlimit(RLIMIT_NOFILE, &rl) != 0)))
		return 254;
	for (; n < MANY_OPENS; n++) {
		if (open(mnt_path(&m, "files/f0"), O_RDONLY) < 0) {
			e = errno;
			break;
		}
	}
	int report[2] = { n, e };
	if (write(pipefd[1], report, sizeof(report)) != sizeof(report))
		return 1;
	if (read(pipefd[2], &c, 1) != 1)
		return 2;
	return 0;
}

/* Descriptors the daemon holds, or -1. */
static int daemon_fds(void)
{
	char p[64];
	int n = 0;
	DIR *d;

	snprintf(p, sizeof(p), "/proc/%d/fd", (int)m.pid);
	d = opendir(p);
	if (!d)
		return -1;
	for (struct dirent *de = readdir(d); de; de = readdir(d))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

Test(limits, a_hundred_thousand_opens_do_not_starve_others, .timeout = 240)
{
	struct holder h;
	int report[2] = { -1, 0 };

	make_files(10);
	wl_cr_mount(&m, conf_text, NULL);
	snprintf(open_dir, sizeof(open_dir), "%s", mnt_path(&m, "files"));
	int fds0 = daemon_fds();
	holder_start(&h, many_hog);
	holder_report(&h, report, sizeof(report));
	long hwm = ch_status_kb(m.pid, "VmHWM");
	int vrc = mnt_fork_run(open_victim, NULL, 60000);
	cr_log_info("hog opened %d files (%s); daemon VmHWM %ld KiB; victim: %s", report[0],
		    report[1] ? strerror(report[1]) : "no error", hwm, vrc ? strerror(vrc) : "ok");
	cr_expect(report[0] == MANY_OPENS || report[1] == EMFILE,
		  "the hog stopped at %d opens with %s, want %d opens or EMFILE", report[0],
		  strerror(report[1]), MANY_OPENS);
	cr_expect_eq(vrc, 0, "the victim group could not open while the hog held %d files: %s",
		     report[0], strerror(vrc));
	int st = holder_finish(&h);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "hog status %#x", st);
	/*
	 * The kernel sends the hog's RELEASEs after its exit, in the background: the daemon
	 * must close every one of its descriptors (and unmounting before it has would abort
	 * those requests, which a slow, e.g. TSan, daemon sees as a failed session).
	 */
	int fds = daemon_fds();
	for (int i = 0; i < 600 && fds > fds0 + 16; i++) {
		usleep(100000);
		fds = daemon_fds();
	}
	cr_expect_leq(fds, fds0 + 16, "the daemon still holds %d descriptors (%d before the "
		      "hog) 60 s after the hog closed its %d files", fds, fds0, report[0]);
	mnt_cr_finish(&m);
}

/* --- groups that are no longer used go (group_expire_ms) ------------------------------- */

static bool group_listed(const char *name)
{
	char p[PATH_MAX + 64];

	snprintf(p, sizeof(p), "%s/%s", mnt_path(&m, ".cfqfs/groups"), name);
	return access(p, F_OK) == 0;
}

/* One read of files/f0 as a process named `arg` (cfqfs-hog or cfqfs-vic). */
static int read_once_as(void *arg)
{
	char b[4];
	int fd, rc = 0;

	prctl(PR_SET_NAME, (const char *)arg);
	fd = open(mnt_path(&m, "files/f0"), O_RDONLY);
	if (fd < 0)
		return errno;
	if (pread(fd, b, sizeof(b), 0) < 0)
		rc = errno;
	close(fd);
	return rc;
}

/* cfqfs-vic keeps files/f0 open (charged to its group) until told to go. */
static int hold_open_as_victim(int *pipefd)
{
	char b[4], c;
	int one = 1;

	prctl(PR_SET_NAME, "cfqfs-vic");
	int fd = open(mnt_path(&m, "files/f0"), O_RDONLY);
	if (fd < 0 || pread(fd, b, sizeof(b), 0) < 0)
		return 1;
	if (write(pipefd[1], &one, sizeof(one)) != sizeof(one))
		return 2;
	if (read(pipefd[2], &c, 1) != 1)
		return 3;
	close(fd);
	return 0;
}

Test(limits, unused_groups_expire_and_come_back)
{
	struct holder h;
	int ready = 0;

	make_files(1);
	wl_cr_mount(&m, conf_text, "group_expire_ms=300");
	cr_assert_eq(mnt_fork_run(read_once_as, "cfqfs-hog", 30000), 0);
	holder_start(&h, hold_open_as_victim);
	holder_report(&h, &ready, sizeof(ready));
	cr_assert(group_listed("hog") && group_listed("victim"),
		  "both groups should be listed after their I/O");
	usleep(800000); /* both unused for longer than group_expire_ms */
	cr_expect_not(group_listed("hog"), "the unused group is still listed");
	uint64_t v;
	cr_expect_eq(wl_iostat(&m, "hog", "rios", &v), -ENOENT, "io.stat still has the group");
	cr_expect(group_listed("victim"), "a group with an open file was removed");
	holder_finish(&h);
	/* The open file's RELEASE comes asynchronously after close; then it may go too. */
	bool gone = false;
	for (int i = 0; i < 100 && !gone; i++) {
		usleep(100000);
		gone = !group_listed("victim");
	}
	cr_expect(gone, "the group was kept after its last file closed");
	/* Used again: it comes back, and its I/O works. */
	cr_expect_eq(mnt_fork_run(read_once_as, "cfqfs-hog", 30000), 0);
	cr_expect(group_listed("hog"), "the group did not come back with new I/O");
	cr_expect_eq(wl_iostat(&m, "hog", "rios", &v), 0);
	cr_expect_geq(v, 1, "the new group's read was not counted");
	mnt_cr_finish(&m);
}

/* A group whose processes are all SIGKILLed with requests queued and in flight is freed
 * (queues, statistics, .cfqfs/groups entry) once its requests are answered and it expires. */
Test(limits, killed_groups_are_freed)
{
	cr_assert_eq(wl_make_file(src_path(&m, "hog"), FILE_SIZE), 0);
	wl_cr_mount(&m, conf_text, "direct_io,device=hdd,depth=1,group_expire_ms=300");
	pid_t hog = start_hog(mnt_path(&m, "hog"), HOG_READ, 4096);
	wait_hog_started();
	cr_assert(group_listed("hog"), "the hog's group is not listed while it reads");
	cr_assert_eq(kill(hog, SIGKILL), 0);
	int st;
	cr_assert_eq(waitpid(hog, &st, 0), hog);
	bool gone = false;
	for (int i = 0; i < 100 && !gone; i++) {
		usleep(100000);
		gone = !group_listed("hog");
	}
	uint64_t v;
	cr_expect(gone, "the killed group is still listed 10 s after its processes died");
	cr_expect_eq(wl_iostat(&m, "hog", "rios", &v), -ENOENT, "io.stat still has the group");
	cr_expect_eq(wl_iostat(&m, "/", "queued", &v), 0);
	cr_expect_eq(v, 0, "requests still queued in the root group");
	mnt_cr_finish(&m);
}

/*
 * Out of descriptors (the daemon holds one per inode the kernel caches): mkdir, mknod and
 * symlink fail with EMFILE and leave nothing in SOURCE (a failed mkdir creates nothing), the
 * mount keeps answering, and the log says what to raise. Mostly the kernel's lookup of the
 * new name already fails, before any MKNOD/MKDIR/SYMLINK is sent; the daemon's own undo
 * (create_node's undo_node) runs when the limit is reached between that lookup and the one
 * after the creation, which concurrent callers make likely (stress-ng --chdir did) and this
 * sequential loop does not force.
 */
/* A root daemon would raise its descriptor limit to fs.nr_open (CAP_SYS_RESOURCE), leaving the
 * out_of_descriptors tests nothing to hit. Dropping the capability from this test process's
 * bounding set keeps the daemon it executes from having it; the test process itself (a
 * Criterion child of its own) keeps its capabilities. Not root: nothing to drop, the hard
 * limit already binds. */
static void drop_sys_resource(void)
{
	if (prctl(PR_CAPBSET_DROP, CAP_SYS_RESOURCE, 0, 0, 0) != 0 && errno != EPERM)
		cr_assert_fail("PR_CAPBSET_DROP CAP_SYS_RESOURCE: %s", strerror(errno));
}

Test(limits, out_of_descriptors_creation_fails_cleanly_and_the_log_says_why)
{
	/* the daemon inherits it and cannot raise it (soft = hard, no CAP_SYS_RESOURCE) */
	struct rlimit low = { .rlim_cur = 64, .rlim_max = 64 };
	int failed = 0, made = 0, first_err = 0;
	char rel[64];
	struct stat st;

	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &low), 0, "setrlimit: %s", strerror(errno));
	drop_sys_resource();
	cr_assert_eq(mnt_start(&m, NULL), 0, "mount with 64 descriptors failed");
	for (int i = 0; i < 200; i++) {
		const char *kind = i % 3 == 0 ? "d" : i % 3 == 1 ? "p" : "l";
		int rc;

		snprintf(rel, sizeof(rel), "%s%03d", kind, i);
		errno = 0;
		rc = i % 3 == 0 ? mkdir(mnt_path(&m, rel), 0755)
		     : i % 3 == 1 ? mknod(mnt_path(&m, rel), S_IFIFO | 0644, 0)
				  : symlink("target", mnt_path(&m, rel));
		if (rc == 0) {
			made++;
			continue;
		}
		cr_assert(errno == EMFILE || errno == ENFILE, "%s: unexpected %s", rel,
			  strerror(errno));
		first_err = first_err ? first_err : errno;
		failed++;
		cr_assert_neq(lstat(src_path(&m, rel), &st), 0,
			      "%s failed with %s but was left in SOURCE", rel, strerror(errno));
	}
	if (failed == 0) {
		mnt_cr_finish(&m);
		cr_skip("the daemon raised its descriptor limit past 64 although "
			"CAP_SYS_RESOURCE was dropped from the bounding set: nothing to test");
	}
	cr_log_info("%d nodes made, %d refused with %s", made, failed, strerror(first_err));
	cr_assert_gt(made, 0, "not even one node could be made with 64 descriptors");
	cr_assert(log_mentions("lookups fail"), "the daemon did not log why lookups fail");
	/* what exists is still served */
	cr_assert_eq(stat(mnt_path(&m, "d000"), &st), 0, "stat of an existing dir: %s",
		     strerror(errno));
	mnt_cr_finish(&m);
}

/*
 * Out of descriptors, files: a create the daemon cannot hold a descriptor for fails with
 * EMFILE and leaves nothing in SOURCE, and what already exists keeps working. The daemon keeps
 * a reserve below the limit for short-lived descriptors (fs/fdcap.h): without it, the create
 * that took the last descriptor succeeded and then its close(2) failed with EMFILE (FLUSH
 * duplicates the file's descriptor), and a file open since before could not be locked.
 */
Test(limits, out_of_descriptors_files_fail_to_open_but_close_and_lock_as_before)
{
	struct rlimit low = { .rlim_cur = 64, .rlim_max = 64 };
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1 };
	int failed = 0, made = 0, held;
	char rel[64];
	struct stat st;

	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &low), 0, "setrlimit: %s", strerror(errno));
	drop_sys_resource();
	cr_assert_eq(mnt_start(&m, NULL), 0, "mount with 64 descriptors failed");
	held = open(mnt_path(&m, "held"), O_CREAT | O_RDWR, 0644);
	cr_assert_geq(held, 0, "open of the first file: %s", strerror(errno));
	cr_assert_eq(mnt_put(mnt_path(&m, "kept"), "12345", 5, 0644), 0);
	/* each file made stays in the kernel's inode cache, so the daemon keeps its descriptor */
	for (int i = 0; i < 200; i++) {
		int fd;

		snprintf(rel, sizeof(rel), "f%03d", i);
		fd = open(mnt_path(&m, rel), O_CREAT | O_EXCL | O_RDWR, 0644);
		if (fd >= 0) {
			made++;
			cr_assert_eq(close(fd), 0, "close of %s, just made: %s", rel,
				     strerror(errno));
			continue;
		}
		cr_assert(errno == EMFILE || errno == ENFILE, "%s: unexpected %s", rel,
			  strerror(errno));
		failed++;
		cr_assert_neq(lstat(src_path(&m, rel), &st), 0,
			      "%s failed with %s but was left in SOURCE", rel, strerror(errno));
	}
	if (failed == 0) {
		close(held);
		mnt_cr_finish(&m);
		cr_skip("the daemon raised its descriptor limit past 64 although "
			"CAP_SYS_RESOURCE was dropped from the bounding set: nothing to test");
	}
	cr_log_info("%d files made, %d refused", made, failed);
	cr_assert_gt(made, 0, "not even one file could be made with 64 descriptors");
	cr_assert(log_mentions("opens and lookups fail"), "the daemon did not log why");
	/* Take what the daemon has left below its reserve (each refused create gave one
	 * descriptor back) with opens of a file that exists; then an open(O_TRUNC) refused for
	 * want of a descriptor must truncate nothing. */
	int extra[16], nextra = 0, fd;

	while (nextra < 16 && (extra[nextra] = open(mnt_path(&m, "f000"), O_RDONLY)) >= 0)
		nextra++;
	cr_assert_lt(nextra, 16, "16 more opens succeeded: the limit was not reached");
	errno = 0;
	fd = open(mnt_path(&m, "kept"), O_WRONLY | O_TRUNC);
	cr_assert_lt(fd, 0, "open(O_TRUNC) at the limit succeeded");
	cr_assert(errno == EMFILE || errno == ENFILE, "open(O_TRUNC): %s", strerror(errno));
	cr_assert_eq(stat(src_path(&m, "kept"), &st), 0);
	cr_assert_eq(st.st_size, 5, "a refused open(O_TRUNC) left %lld bytes of 5",
		     (long long)st.st_size);
	while (nextra > 0)
		cr_assert_eq(close(extra[--nextra]), 0, "close: %s", strerror(errno));
	/* the handle opened before the limit was reached works as before */
	cr_assert_eq(pwrite(held, "x", 1, 0), 1, "write: %s", strerror(errno));
	cr_assert_eq(fsync(held), 0, "fsync: %s", strerror(errno));
	cr_assert_eq(fcntl(held, F_SETLK, &fl), 0, "F_SETLK: %s", strerror(errno));
	fl.l_type = F_UNLCK;
	cr_assert_eq(fcntl(held, F_SETLK, &fl), 0, "F_UNLCK: %s", strerror(errno));
	cr_assert_eq(close(held), 0, "close: %s", strerror(errno));
	cr_assert_eq(stat(mnt_path(&m, "f000"), &st), 0, "stat of a file made: %s",
		     strerror(errno));
	mnt_cr_finish(&m);
}
