/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * posix_xattr_locks: extended attributes (user.*) through the mount, checked in SOURCE, and
 * locking: flock between two open file descriptions, POSIX record locks seen from a forked
 * child.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "mount.h"

static struct mnt M;

static void setup(void)
{
	mnt_cr_setup(&M, NULL);
}

static void teardown(void)
{
	mnt_cr_teardown(&M);
}

TestSuite(posix_xattr_locks, .init = setup, .fini = teardown, .timeout = 60);

/* Skips when SOURCE's filesystem has no user xattrs (then nothing can pass them through). */
static void need_user_xattrs(const char *src_file)
{
	if (setxattr(src_file, "user.probe", "1", 1, 0) != 0) {
		int e = errno;

		mnt_cr_finish(&M);
		cr_skip("SOURCE filesystem does not support user xattrs: %s", strerror(e));
	}
	cr_assert_eq(removexattr(src_file, "user.probe"), 0);
}

static void make_file(const char *rel)
{
	cr_assert_eq(mnt_put(src_path(&M, rel), "data", 4, 0644), 0);
	need_user_xattrs(src_path(&M, rel));
}

Test(posix_xattr_locks, xattr_set_via_mount_is_stored_in_source)
{
	char buf[64];
	ssize_t n;

	make_file("x");
	MNT_EXPECT_OK(setxattr(mnt_path(&M, "x"), "user.color", "blue-ish", 8, 0));
	n = getxattr(src_path(&M, "x"), "user.color", buf, sizeof(buf));
	cr_assert_eq(n, 8, "getxattr in SOURCE: %zd (%s)", n, strerror(errno));
	cr_assert_arr_eq(buf, "blue-ish", 8);
	n = getxattr(mnt_path(&M, "x"), "user.color", buf, sizeof(buf));
	cr_assert_eq(n, 8);
	cr_assert_arr_eq(buf, "blue-ish", 8);
	/* binary values with NULs survive */
	MNT_EXPECT_OK(setxattr(mnt_path(&M, "x"), "user.bin", "a\0b\0", 4, 0));
	cr_assert_eq(getxattr(src_path(&M, "x"), "user.bin", buf, sizeof(buf)), 4);
	cr_assert_arr_eq(buf, "a\0b\0", 4);
	mnt_cr_finish(&M);
}

Test(posix_xattr_locks, xattr_set_in_source_is_seen_via_mount)
{
	char buf[64];

	make_file("y");
	cr_assert_eq(setxattr(src_path(&M, "y"), "user.origin", "src", 3, 0), 0);
	cr_assert_eq(getxattr(mnt_path(&M, "y"), "user.origin", buf, sizeof(buf)), 3,
		     "getxattr via mount: %s", strerror(errno));
	cr_assert_arr_eq(buf, "src", 3);
	mnt_cr_finish(&M);
}

Test(posix_xattr_locks, xattr_missing_gives_enodata)
{
	char buf[16];

	make_file("z");
	MNT_EXPECT_ERRNO(getxattr(mnt_path(&M, "z"), "user.absent", buf, sizeof(buf)), ENODATA);
	MNT_EXPECT_ERRNO(removexattr(mnt_path(&M, "z"), "user.absent"), ENODATA);
	mnt_cr_finish(&M);
}

Test(posix_xattr_locks, xattr_list_names_every_attribute)
{
	char list[1024];
	ssize_t n, need;
	int found = 0;

	make_file("l");
	MNT_EXPECT_OK(setxattr(mnt_path(&M, "l"), "user.one", "1", 1, 0));
	MNT_EXPECT_OK(setxattr(mnt_path(&M, "l"), "user.two", "22", 2, 0));
	cr_assert_eq(setxattr(src_path(&M, "l"), "user.three", "333", 3, 0), 0);
	need = listxattr(mnt_path(&M, "l"), NULL, 0);
	n = listxattr(mnt_path(&M, "l"), list, sizeof(list));
	cr_assert_gt(n, 0, "listxattr: %s", strerror(errno));
	cr_assert_eq(need, n, "size query %zd, list %zd", need, n);
	cr_assert_eq(listxattr(src_path(&M, "l"), NULL, 0), n, "list differs from SOURCE's");
	for (char *p = list; p < list + n; p += strlen(p) + 1) {
		if (!strcmp(p, "user.one") || !strcmp(p, "user.two") || !strcmp(p, "user.three"))
			found++;
	}
	cr_assert_eq(found, 3);
	MNT_EXPECT_ERRNO(listxattr(mnt_path(&M, "l"), list, 3), ERANGE);
	mnt_cr_finish(&M);
}

Test(posix_xattr_locks, xattr_remove_then_enodata_in_source)
{
	char buf[16];

	make_file("r");
	cr_assert_eq(setxattr(src_path(&M, "r"), "user.gone", "g", 1, 0), 0);
	MNT_EXPECT_OK(removexattr(mnt_path(&M, "r"), "user.gone"));
	MNT_EXPECT_ERRNO(getxattr(src_path(&M, "r"), "user.gone", buf, sizeof(buf)), ENODATA);
	MNT_EXPECT_ERRNO(getxattr(mnt_path(&M, "r"), "user.gone", buf, sizeof(buf)), ENODATA);
	mnt_cr_finish(&M);
}

Test(posix_xattr_locks, xattr_create_and_replace_flags)
{
	char buf[16];

	make_file("f");
	MNT_EXPECT_OK(setxattr(mnt_path(&M, "f"), "user.k", "v1", 2, XATTR_CREATE));
	MNT_EXPECT_ERRNO(setxattr(mnt_path(&M, "f"), "user.k", "v2", 2, XATTR_CREATE), EEXIST);
	MNT_EXPECT_ERRNO(setxattr(mnt_path(&M, "f"), "user.nokey", "v", 1, XATTR_REPLACE),
			 ENODATA);
	MNT_EXPECT_OK(setxattr(mnt_path(&M, "f"), "user.k", "v3", 2, XATTR_REPLACE));
	cr_assert_eq(getxattr(src_path(&M, "f"), "user.k", buf, sizeof(buf)), 2);
	cr_assert_arr_eq(buf, "v3", 2);
	MNT_EXPECT_ERRNO(getxattr(src_path(&M, "f"), "user.nokey", buf, sizeof(buf)), ENODATA);
	mnt_cr_finish(&M);
}

Test(posix_xattr_locks, xattr_size_query_and_erange)
{
	char buf[64];

	make_file("s");
	MNT_EXPECT_OK(setxattr(mnt_path(&M, "s"), "user.long", "0123456789abcdef", 16, 0));
	cr_assert_eq(getxattr(mnt_path(&M, "s"), "user.long", NULL, 0), 16);
	MNT_EXPECT_ERRNO(getxattr(mnt_path(&M, "s"), "user.long", buf, 4), ERANGE);
	cr_assert_eq(getxattr(mnt_path(&M, "s"), "user.long", buf, 16), 16);
	mnt_cr_finish(&M);
}

Test(posix_xattr_locks, xattr_on_directory)
{
	char buf[16];

	cr_assert_eq(mkdir(src_path(&M, "dir"), 0755), 0);
	need_user_xattrs(src_path(&M, "dir"));
	MNT_EXPECT_OK(setxattr(mnt_path(&M, "dir"), "user.d", "dv", 2, 0));
	cr_assert_eq(getxattr(src_path(&M, "dir"), "user.d", buf, sizeof(buf)), 2);
	cr_assert_arr_eq(buf, "dv", 2);
	mnt_cr_finish(&M);
}

Test(posix_xattr_locks, flock_conflicts_between_open_file_descriptions)
{
	int a, b;

	cr_assert_eq(mnt_put(src_path(&M, "lk"), "x", 1, 0644), 0);
	a = open(mnt_path(&M, "lk"), O_RDWR);
	b = open(mnt_path(&M, "lk"), O_RDWR);
	cr_assert(a >= 0 && b >= 0);
	MNT_EXPECT_OK(flock(a, LOCK_EX | LOCK_NB));
	MNT_EXPECT_ERRNO(flock(b, LOCK_EX | LOCK_NB), EWOULDBLOCK);
	MNT_EXPECT_ERRNO(flock(b, LOCK_SH | LOCK_NB), EWOULDBLOCK);
	MNT_EXPECT_OK(flock(a, LOCK_UN));
	MNT_EXPECT_OK(flock(b, LOCK_SH | LOCK_NB));
	MNT_EXPECT_OK(flock(a, LOCK_SH | LOCK_NB)); /* shared locks coexist */
	MNT_EXPECT_ERRNO(flock(a, LOCK_EX | LOCK_NB), EWOULDBLOCK);
	close(b); /* closing the last fd of a description releases its lock */
	/*
	 * ... once the daemon has the RELEASE: the kernel sends it asynchronously after close()
	 * returns (FUSE semantics, documented in the README), so allow it up to 2 s to arrive;
	 * the TSan build of the daemon is slow enough to lose a race with the next line.
	 */
	int r = -1;
	for (int tries = 0; tries < 200 && r != 0; tries++) {
		r = flock(a, LOCK_EX | LOCK_NB);
		if (r != 0) {
			cr_assert_eq(errno, EWOULDBLOCK, "flock: %s", strerror(errno));
			usleep(10000);
		}
	}
	cr_assert_eq(r, 0, "the lock of the closed description was never released");
	close(a);
	mnt_cr_finish(&M);
}

struct lock_probe {
	const char *path;
	pid_t owner;
};

#define CHILD_CHECK(cond)                                                                   \
	do {                                                                                \
		if (!(cond)) {                                                              \
			fprintf(stderr, "child: line %d: %s failed (errno %s)\n", __LINE__,  \
				#cond, errno ? strerrorname_np(errno) : "0");               \
			return 1;                                                           \
		}                                                                           \
	} while (0)

/* In a forked child: the parent holds a write lock on bytes [0, 100). */
static int child_sees_conflict(void *arg)
{
	const struct lock_probe *p = arg;
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 100 };
	int fd = open(p->path, O_RDWR);

	CHILD_CHECK(fd >= 0);
	errno = 0;
	CHILD_CHECK(fcntl(fd, F_SETLK, &fl) == -1 && (errno == EAGAIN || errno == EACCES));
	fl = (struct flock){ .l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = 50, .l_len = 1 };
	errno = 0;
	CHILD_CHECK(fcntl(fd, F_SETLK, &fl) == -1 && (errno == EAGAIN || errno == EACCES));
	/* outside the locked range all is free */
	fl = (struct flock){ .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 200, .l_len = 100 };
	CHILD_CHECK(fcntl(fd, F_SETLK, &fl) == 0);
	fl = (struct flock){ .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 100 };
	CHILD_CHECK(fcntl(fd, F_GETLK, &fl) == 0);
	CHILD_CHECK(fl.l_type == F_WRLCK);
	CHILD_CHECK(fl.l_start == 0 && fl.l_len == 100);
	close(fd);
	return 0;
}

static int child_reads_owner_pid(void *arg)
{
	const struct lock_probe *p = arg;
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 100 };
	int fd = open(p->path, O_RDWR);

	CHILD_CHECK(fd >= 0);
	CHILD_CHECK(fcntl(fd, F_GETLK, &fl) == 0);
	CHILD_CHECK(fl.l_type == F_WRLCK);
	if (fl.l_pid != p->owner) {
		fprintf(stderr, "child: F_GETLK l_pid %d, lock owner is %d\n", (int)fl.l_pid,
			(int)p->owner);
		return 2;
	}
	close(fd);
	return 0;
}

static int child_gets_lock(void *arg)
{
	const struct lock_probe *p = arg;
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 100 };
	int fd = open(p->path, O_RDWR);

	CHILD_CHECK(fd >= 0);
	CHILD_CHECK(fcntl(fd, F_SETLK, &fl) == 0);
	close(fd);
	return 0;
}

static int parent_lock(const char *path)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 100 };
	int fd = open(path, O_RDWR);

	cr_assert_geq(fd, 0);
	MNT_EXPECT_OK(fcntl(fd, F_SETLK, &fl));
	return fd;
}

Test(posix_xattr_locks, posix_lock_conflict_seen_from_forked_child)
{
	struct lock_probe p = { .path = NULL, .owner = getpid() };
	int fd, rc;

	cr_assert_eq(mnt_put(src_path(&M, "plk"), "0123456789", 10, 0644), 0);
	p.path = mnt_path(&M, "plk");
	fd = parent_lock(p.path);
	rc = mnt_fork_run(child_sees_conflict, &p, 10000);
	cr_assert_eq(rc, 0, "child did not see the parent's lock as expected (rc %d, see stderr)",
		     rc);
	/* unlocking makes the range free for the child */
	{
		struct flock un = { .l_type = F_UNLCK, .l_whence = SEEK_SET, .l_start = 0,
				    .l_len = 100 };

		MNT_EXPECT_OK(fcntl(fd, F_SETLK, &un));
	}
	rc = mnt_fork_run(child_gets_lock, &p, 10000);
	cr_assert_eq(rc, 0, "child could not lock after unlock (rc %d)", rc);
	close(fd);
	mnt_cr_finish(&M);
}

Test(posix_xattr_locks, posix_lock_released_when_owner_closes)
{
	struct lock_probe p = { .path = NULL, .owner = getpid() };
	int fd, other, rc;

	cr_assert_eq(mnt_put(src_path(&M, "plc"), "x", 1, 0644), 0);
	p.path = mnt_path(&M, "plc");
	fd = parent_lock(p.path);
	/* POSIX: closing ANY fd of the file drops the process's locks on it */
	other = open(p.path, O_RDONLY);
	cr_assert_geq(other, 0);
	close(other);
	rc = mnt_fork_run(child_gets_lock, &p, 10000);
	cr_assert_eq(rc, 0, "lock survived close() of another fd of the owner (rc %d)", rc);
	close(fd);
	mnt_cr_finish(&M);
}

Test(posix_xattr_locks, posix_getlk_reports_owner_pid)
{
	struct lock_probe p = { .path = NULL, .owner = getpid() };
	int fd, rc;

	cr_assert_eq(mnt_put(src_path(&M, "pid"), "x", 1, 0644), 0);
	p.path = mnt_path(&M, "pid");
	fd = parent_lock(p.path);
	rc = mnt_fork_run(child_reads_owner_pid, &p, 10000);
	cr_assert_eq(rc, 0, "F_GETLK from a child: rc %d (2: wrong l_pid, see stderr)", rc);
	close(fd);
	mnt_cr_finish(&M);
}

/*
 * A child that takes record lock `type` on [start, start + len) of `path` through the mount
 * and holds it until killed. Returns its pid once it holds the lock, or -1 if it could not
 * (it is reaped then).
 */
static pid_t spawn_holder(const char *path, short type, off_t start, off_t len)
{
	int ready[2];
	char c;
	ssize_t n;
	pid_t pid;

	if (pipe(ready) != 0)
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = start,
				    .l_len = len };
		int fd = open(path, O_RDWR);

		close(ready[0]);
		if (fd < 0 || fcntl(fd, F_SETLK, &fl) != 0 || write(ready[1], "r", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(ready[1]);
	n = pid > 0 ? read(ready[0], &c, 1) : -1;
	close(ready[0]);
	if (pid > 0 && n != 1) {
		waitpid(pid, NULL, 0);
		pid = -1;
	}
	return pid;
}

static void kill_holders(const pid_t *pids, int n)
{
	for (int i = 0; i < n; i++) {
		if (pids[i] > 0) {
			kill(pids[i], SIGKILL);
			waitpid(pids[i], NULL, 0);
		}
	}
}

/* F_GETLK write [0, 100) from this process: the l_pid reported (-1 if the call failed or no
 * lock conflicts). */
static pid_t getlk_pid(const char *path)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 100 };
	int fd = open(path, O_RDWR), rc;

	if (fd < 0)
		return -1;
	rc = fcntl(fd, F_GETLK, &fl);
	close(fd);
	return rc == 0 && fl.l_type != F_UNLCK ? fl.l_pid : -1;
}

/*
 * F_GETLK names a holder of the conflicting lock when several processes hold shared locks:
 * two identical read locks (each owner's looks like the other's from every side), and a
 * requester that itself holds a read lock over a third owner's (whose own view shows the
 * requester's lock, not the holder's). It gave 0, then the wrong process's pid.
 */
Test(posix_xattr_locks, posix_getlk_names_the_holder_among_shared_locks)
{
	const char *path;
	pid_t h[3], got_same, got_under;
	int fd;

	cr_assert_eq(mnt_put(src_path(&M, "shl"), "x", 1, 0644), 0);
	path = mnt_path(&M, "shl");
	h[0] = spawn_holder(path, F_RDLCK, 0, 0); /* to the end of the file */
	h[1] = spawn_holder(path, F_RDLCK, 0, 0);
	got_same = getlk_pid(path);
	kill_holders(h, 2);
	cr_assert(h[0] > 0 && h[1] > 0, "a child could not take its read lock");
	cr_assert(got_same == h[0] || got_same == h[1],
		  "two identical read locks of %d and %d: F_GETLK gave l_pid %d", (int)h[0],
		  (int)h[1], (int)got_same);

	/* this process reads [0, 100), h[0] reads [0, 50), h[1] writes [200, 300) */
	fd = open(path, O_RDWR);
	cr_assert_geq(fd, 0);
	{
		struct flock fl = { .l_type = F_RDLCK, .l_whence = SEEK_SET, .l_len = 100 };

		MNT_EXPECT_OK(fcntl(fd, F_SETLK, &fl));
	}
	h[0] = spawn_holder(path, F_RDLCK, 0, 50);
	h[1] = spawn_holder(path, F_WRLCK, 200, 100);
	{
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_len = 100 };

		got_under = fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type == F_RDLCK ? fl.l_pid : -1;
	}
	kill_holders(h, 2);
	close(fd);
	cr_assert(h[0] > 0 && h[1] > 0, "a child could not take its lock");
	cr_assert_eq(got_under, h[0], "the holder of [0, 50) is %d (%d holds [200, 300)): "
		     "F_GETLK gave l_pid %d", (int)h[0], (int)h[1], (int)got_under);
	mnt_cr_finish(&M);
}

static long ms_between(const struct timespec *a, const struct timespec *b)
{
	return (long)(b->tv_sec - a->tv_sec) * 1000 + (b->tv_nsec - a->tv_nsec) / 1000000;
}

/*
 * F_GETLK never names a process that holds no lock over the range asked, while the lock that
 * is there comes and goes. A process outside the mount takes and drops an OFD write lock on
 * [0, 1) of SOURCE's file in a loop; two children hold locks through the mount on other
 * ranges only. The answer is "unlocked" or the outsider's lock (pid 0, as the backing kernel
 * reports OFD locks), never a child: when the lock went between the daemon's look and its
 * search for the holder, the first description that then saw nothing was taken for the
 * holder without asking its own lock list, and a child was named in about half the calls.
 */
Test(posix_xattr_locks, posix_getlk_names_no_bystander_while_the_lock_comes_and_goes)
{
	const char *path;
	pid_t by[2], flipper;
	long calls = 0, named = 0, unlocked = 0, outside = 0;
	pid_t bad = 0;
	struct timespec t0, t;
	int fd;

	cr_assert_eq(mnt_put(src_path(&M, "flip"), "0123456789", 10, 0644), 0);
	path = mnt_path(&M, "flip");
	by[0] = spawn_holder(path, F_WRLCK, 1000, 1);
	by[1] = spawn_holder(path, F_RDLCK, 2000, 1);
	fflush(NULL);
	flipper = fork();
	if (flipper == 0) {
		int sfd = open(src_path(&M, "flip"), O_RDWR);
		struct flock on = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_len = 1 };
		struct flock off = { .l_type = F_UNLCK, .l_whence = SEEK_SET, .l_len = 1 };

		if (sfd < 0)
			_exit(1);
		for (;;) {
			(void)fcntl(sfd, F_OFD_SETLK, &on);
			(void)fcntl(sfd, F_OFD_SETLK, &off);
		}
	}
	fd = open(path, O_RDWR);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* for 1 s and at least 2000 calls, at most 3 s */
	for (t = t0; fd >= 0 && (calls < 2000 || ms_between(&t0, &t) < 1000) &&
		     ms_between(&t0, &t) < 3000;
	     clock_gettime(CLOCK_MONOTONIC, &t)) {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_len = 1 };

		if (fcntl(fd, F_GETLK, &fl) != 0)
			break;
		calls++;
		if (fl.l_type == F_UNLCK)
			unlocked++;
		else if (fl.l_pid == 0)
			outside++;
		else if (!bad)
			bad = fl.l_pid, named++;
		else
			named++;
	}
	if (flipper > 0) {
		kill(flipper, SIGKILL);
		waitpid(flipper, NULL, 0);
	}
	kill_holders(by, 2);
	if (fd >= 0)
		close(fd);
	cr_assert(by[0] > 0 && by[1] > 0 && flipper > 0, "a child could not start");
	cr_assert_geq(calls, 1000, "F_GETLK failed after %ld calls: %s", calls, strerror(errno));
	cr_log_info("%ld F_GETLK: %ld unlocked, %ld the outsider's lock, %ld named a process",
		    calls, unlocked, outside, named);
	cr_assert_eq(named, 0, "%ld of %ld F_GETLK named a process (first: %d; the children "
		     "holding other ranges are %d and %d)", named, calls, (int)bad, (int)by[0],
		     (int)by[1]);
	/* the loop did see the lock both ways, or it tested nothing */
	cr_assert(unlocked > 0 && outside > 0, "the outsider's lock was seen %ld times and "
		  "missed %ld times", outside, unlocked);
	mnt_cr_finish(&M);
}

Test(posix_xattr_locks, posix_lock_blocking_wait_is_woken_by_unlock)
{
	struct lock_probe p = { .path = NULL, .owner = getpid() };
	int fd, status;
	pid_t pid;

	cr_assert_eq(mnt_put(src_path(&M, "wait"), "x", 1, 0644), 0);
	p.path = mnt_path(&M, "wait");
	fd = parent_lock(p.path);
	fflush(NULL);
	pid = fork();
	/* no cr_* call in the child: even a passing assert talks to the runner and hangs */
	if (pid == 0) {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0,
				    .l_len = 100 };
		int cfd = open(p.path, O_RDWR);

		alarm(10);
		_exit(cfd >= 0 && fcntl(cfd, F_SETLKW, &fl) == 0 ? 0 : 1);
	}
	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	usleep(300 * 1000);
	cr_assert_eq(waitpid(pid, &status, WNOHANG), 0, "F_SETLKW did not block");
	{
		struct flock un = { .l_type = F_UNLCK, .l_whence = SEEK_SET, .l_start = 0,
				    .l_len = 100 };

		MNT_EXPECT_OK(fcntl(fd, F_SETLK, &un));
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "blocked F_SETLKW did not get the lock after unlock (status 0x%x)", status);
	close(fd);
	mnt_cr_finish(&M);
}
