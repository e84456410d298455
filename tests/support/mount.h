/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mount.h - integration-test fixture: a cfqfs daemon mounted over a private temp dir.
 *
 * Layout made by mnt_prepare():  /tmp/cfqfs-it.<owner pid>.XXXXXX/   (mode 0755)
 *                                   src/        SOURCE (mode 0755)
 *                                   mnt/        MOUNTPOINT
 *                                   daemon.log  the daemon's stdout and stderr
 * The owner pid in the name lets a later run recognise leftovers of a test process that died
 * (mnt_sweep_stale()).
 *
 * Lifetime: mnt_setup() = mnt_prepare() + mnt_start(); mnt_teardown() undoes both and is
 * idempotent. Between mnt_prepare() and mnt_start() a caller may populate src/, or point
 * m->src / m->mnt at other directories as long as they stay inside m->base (teardown removes
 * m->base only).
 *
 * Safety net: every started mount is registered. If the test process exits without tearing it
 * down (cr_skip, exit()), an atexit handler tears it down; on a fatal signal (SIGSEGV, SIGABRT,
 * SIGTERM, ...) a handler lazily detaches it and signals the daemon before the signal proceeds.
 * The daemon runs in its own process group with PR_SET_PDEATHSIG=SIGTERM, so if the test
 * process is SIGKILLed (Criterion timeout) the daemon still unmounts itself. Handlers act only
 * in the process that started the mount, so forked helper children (which must leave with
 * _exit()) never unmount their parent's mount.
 *
 * Not thread-safe: one test thread drives a fixture.
 */
#ifndef CFQFS_TEST_MOUNT_H
#define CFQFS_TEST_MOUNT_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#ifndef CFQFS_BIN_BUILT
#define CFQFS_BIN_BUILT "cfqfs"
#endif
/*
 * The daemon under test: $CFQFS_TEST_BIN when set (make tsan runs these suites against a
 * ThreadSanitizer build of the daemon, since Criterion itself cannot start under TSan), else
 * the one built with the tests.
 */
const char *mnt_bin(void);
#define CFQFS_BIN mnt_bin()

/* Bounded waits [ms]. */
#define MNT_MOUNT_TIMEOUT_MS 10000
#define MNT_EXIT_TIMEOUT_MS 10000

#define MNT_PATH_RING 16

/*
 * One fixture. Invariants: `mounted` implies `pid > 0`; `reaped` implies `status` is valid;
 * base[0] == '\0' means nothing was prepared (or it was removed).
 */
struct mnt {
	char base[256];		/* temp dir (realpath), removed by teardown */
	char src[PATH_MAX];	/* SOURCE given to the daemon */
	char mnt[PATH_MAX];	/* MOUNTPOINT given to the daemon */
	char log[PATH_MAX];	/* daemon stdout+stderr */
	pid_t pid;		/* daemon pid, 0 if never started */
	pid_t owner;		/* process that started the daemon */
	bool mounted;		/* seen in mountinfo and not yet unmounted */
	bool reaped;		/* daemon waited for */
	bool killed;		/* teardown had to SIGKILL the daemon */
	bool unmount_failed;	/* teardown could not remove the mount */
	int status;		/* raw wait status of the daemon, valid once reaped */
	dev_t dev;		/* st_dev of the mounted root: names /sys/fs/fuse/connections/N */
	unsigned ring_next;	/* next slot of ring[] */
	char ring[MNT_PATH_RING][PATH_MAX]; /* storage for mnt_path()/src_path() results */
};

/* Does open("/dev/fuse", O_RDWR) work? On false, mnt_fuse_unavailable_reason() says why. */
bool mnt_fuse_available(void);
const char *mnt_fuse_unavailable_reason(void);

/*
 * Creates the temp dir with src/ and mnt/ and zeroes *m first. Returns 0 or -errno; on failure
 * nothing is left on disk.
 */
int mnt_prepare(struct mnt *m);

/*
 * Spawns CFQFS_BIN -f [extra_args...] m->src m->mnt (extra_args NULL-terminated, may be NULL)
 * and waits up to MNT_MOUNT_TIMEOUT_MS until m->mnt is a fuse mount in /proc/self/mountinfo
 * and answers stat(). Returns 0, -ECHILD if the daemon exited first (m->status holds its wait
 * status, m->log its messages), -ETIMEDOUT, or another -errno. On failure the daemon is gone
 * and nothing is mounted, but m->base is kept so the log can be read: call mnt_teardown().
 */
int mnt_start(struct mnt *m, const char *const *extra_args);

/* mnt_prepare() + mnt_start(); on failure the temp dir is kept for mnt_dump_log(). */
int mnt_setup(struct mnt *m, const char *const *extra_args);

/*
 * Unmounts (fusermount3 -u; if busy, e.g. a failed test left a descriptor open: umount -l and
 * abort the FUSE connection), waits up to MNT_EXIT_TIMEOUT_MS for the daemon (then SIGKILL),
 * records its status and removes m->base. Idempotent; cannot fail, but sets
 * m->unmount_failed (and keeps m->base) if the mount would not go away.
 */
void mnt_teardown(struct mnt *m);

/* After teardown: did the daemon exit normally with status 0? */
bool mnt_exited_ok(const struct mnt *m);
/* Human-readable daemon status ("exited 0", "killed by signal 9", "still running"). */
const char *mnt_status_str(const struct mnt *m, char *buf, size_t len);

/*
 * m->mnt + "/" + rel, or m->src + "/" + rel. The result lives in a ring of MNT_PATH_RING
 * buffers inside *m: valid until MNT_PATH_RING further calls. rel "" gives the directory.
 */
const char *mnt_path(struct mnt *m, const char *rel);
const char *src_path(struct mnt *m, const char *rel);
/* m->base + "/" + rel (for objects outside SOURCE). */
const char *base_path(struct mnt *m, const char *rel);

/* Prints the daemon log to stderr, framed, so a failing test shows why. */
void mnt_dump_log(const struct mnt *m);

/* Is `path` (absolute, no trailing slash) a mount point of a fuse filesystem right now? */
bool mnt_is_fuse_mounted(const char *path);

/*
 * Lazily detaches fuse mounts and removes temp dirs left by dead test processes (owner pid in
 * the dir name no longer exists). Never touches a live process's mount. Cannot fail.
 */
void mnt_sweep_stale(void);

/* --- small file helpers, usable on either side of the mount ---------------------------- */

/* Creates/truncates `path` (mode if created) and writes len bytes. Returns 0 or -errno. */
int mnt_put(const char *path, const void *buf, size_t len, mode_t mode);
/* Reads up to cap bytes of `path`. Returns the byte count or -errno. */
ssize_t mnt_get(const char *path, void *buf, size_t cap);

/*
 * Runs argv (argv[0] is a path) with stdin from /dev/null, capturing stdout and stderr into
 * NUL-terminated buffers (truncated to size-1; either may be NULL). Waits up to timeout_ms, then
 * SIGKILLs. Returns 0 with *status = raw wait status, or -errno (-ETIMEDOUT after the kill).
 */
int mnt_run(const char *const *argv, int timeout_ms, int *status, char *out, size_t outsz,
	    char *err, size_t errsz);

/*
 * Runs fn(arg) in a forked child that leaves with _exit(fn(arg)) (never running atexit or
 * Criterion code), waiting up to timeout_ms (then SIGKILL). Returns the child's exit code,
 * 128 + signal if it died of a signal, or -errno. Child code must report through its exit code
 * and stderr, not through cr_assert.
 */
int mnt_fork_run(int (*fn)(void *), void *arg, int timeout_ms);

/* Waits for child pid up to timeout_ms. Returns true with *status if it exited. */
bool mnt_wait_bounded(pid_t pid, int timeout_ms, int *status);

/* --- the daemon's log and SIGHUP reloads ------------------------------------------------ */

/* How many times `text` occurs in the daemon's log so far (0 if it cannot be read). */
unsigned mnt_log_count(const struct mnt *m, const char *text);
/*
 * The daemon's answers to SIGHUP in its log so far: *reloaded ("configuration reloaded") and
 * *kept ("keeping the running configuration"), with the last refusal's line in err (left as
 * it was if there is none). Zeros if the log cannot be read.
 */
void mnt_log_reloads(const struct mnt *m, unsigned *reloaded, unsigned *kept, char *err,
		     size_t errcap);

/* --- Criterion glue ---------------------------------------------------------------------- */

/*
 * For a suite's .init: sets umask 022, cr_skip()s loudly when /dev/fuse is unavailable, else
 * mounts (failing the test, with the daemon log, if that does not work).
 */
void mnt_cr_setup(struct mnt *m, const char *const *extra_args);
/*
 * For a suite's .init that prepares SOURCE itself (mnt_prepare() and files, or other paths):
 * cr_skip()s loudly when /dev/fuse is unavailable, else starts the daemon on m as it stands,
 * failing the test with the daemon log (and removing m's directories) if that does not work.
 */
void mnt_cr_start(struct mnt *m, const char *const *extra_args);
/*
 * For a suite's .init whose tests start their own daemon: sets umask 022, cr_skip()s loudly
 * when /dev/fuse is unavailable, removes stale leftovers (mnt_sweep_stale), then
 * mnt_prepare()s (failing the test if that does not work).
 */
void mnt_cr_prepare(struct mnt *m);
/* For a suite's .fini: mnt_teardown(), dumping the log if the daemon did not exit 0. */
void mnt_cr_teardown(struct mnt *m);
/*
 * Last statement of a test body: tears down now and asserts that the daemon exited 0 and the
 * mount is gone (a .fini cannot fail a test in Criterion 2.4).
 */
void mnt_cr_finish(struct mnt *m);
/*
 * In a test body: the sum of queued= over the groups of m's .cfqfs/io.stat, and their number
 * in *groups (if not NULL). Fails the test when the file cannot be read or parsed.
 */
uint64_t mnt_cr_queued(struct mnt *m, unsigned *groups);
/*
 * In a test body: puts conf_text into base_path(m, "cfqfs.conf"), the file wl_cr_mount()
 * writes, through a temp file renamed over it, so the daemon never reads half of it.
 */
void mnt_cr_put_conf(struct mnt *m, const char *conf_text);
/*
 * In a test body: mnt_cr_put_conf(), then sends the daemon SIGHUP and waits up to
 * MNT_RELOAD_TIMEOUT_S for its answer in the log, failing the test without one. Returns true
 * if the configuration was reloaded, false if the daemon kept the running one (the refusal's
 * log line in err, if err is not NULL).
 */
#define MNT_RELOAD_TIMEOUT_S 15
bool mnt_cr_reload(struct mnt *m, const char *conf_text, char *err, size_t errcap);

/*
 * In a test body: `expr` must yield -1 with errno == err (use with calls returning -1 on error).
 * Needs <criterion/criterion.h>, <errno.h> and <string.h> in the including file.
 */
#define MNT_EXPECT_ERRNO(expr, err)                                                         \
	do {                                                                                \
		errno = 0;                                                                  \
		long mnt_r_ = (long)(expr);                                                 \
		int mnt_e_ = errno;                                                         \
		cr_assert(mnt_r_ == -1 && mnt_e_ == (err),                                  \
			  "%s: expected -1 with %s, got %ld with errno %s", #expr,           \
			  strerrorname_np(err), mnt_r_,                                     \
			  mnt_e_ ? strerrorname_np(mnt_e_) : "0");                          \
	} while (0)

/* In a test body: `expr` must yield 0 (or >= 0 if nonneg); shows errno otherwise. */
#define MNT_EXPECT_OK(expr)                                                                 \
	do {                                                                                \
		errno = 0;                                                                  \
		long mnt_r_ = (long)(expr);                                                 \
		int mnt_e_ = errno;                                                         \
		cr_assert(mnt_r_ == 0, "%s: expected 0, got %ld (errno %s)", #expr, mnt_r_, \
			  mnt_e_ ? strerrorname_np(mnt_e_) : "0");                          \
	} while (0)

#endif /* CFQFS_TEST_MOUNT_H */
