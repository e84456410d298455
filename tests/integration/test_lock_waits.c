/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * lock_waits: blocking lock requests (F_SETLKW, flock without LOCK_NB) through the mount.
 * They must behave as the kernel's own lock waits do: a signal interrupts them (EINTR), a
 * killed waiter goes at once, a deadlock between two processes gets EDEADLK, and however many
 * wait, the mount keeps serving everyone else (the mount here has only 2 FUSE threads). A
 * lock held on SOURCE by a process outside the mount is waited for too.
 *
 * Children are plain forks that report through their exit status: no cr_* call in a child
 * (even a passing assert talks to the runner and hangs it).
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mount.h"

static struct mnt M;

static void setup(void)
{
	/* Two FUSE threads: the old daemon slept in the kernel on one per blocked request. */
	static const char *const args[] = { "-o", "max_threads=2,max_idle_threads=2", NULL };

	mnt_cr_setup(&M, args);
}

static void teardown(void)
{
	mnt_cr_teardown(&M);
}

TestSuite(lock_waits, .init = setup, .fini = teardown, .timeout = 120);

/* Exit codes of the children */
enum {
	GOT_LOCK = 0,
	GOT_EINTR = 3,
	GOT_EDEADLK = 4,
	GOT_OTHER = 5,
	CHILD_SETUP = 6,
	GOT_ENOLCK = 7,
	GOT_GONE = 8, /* ENOTCONN or ECONNABORTED: the mount went first */
};

static int code_of(int rc)
{
	if (rc == 0)
		return GOT_LOCK;
	switch (errno) {
	case EINTR:
		return GOT_EINTR;
	case EDEADLK:
		return GOT_EDEADLK;
	case ENOLCK:
		return GOT_ENOLCK;
	case ENOTCONN:
	case ECONNABORTED:
		return GOT_GONE;
	default:
		fprintf(stderr, "child: unexpected errno %d\n", errno);
		return GOT_OTHER;
	}
}

/* fcntl record lock on [start, start + len), cmd F_SETLK or F_SETLKW: 0 or -1 with errno. */
static int range_lock(int fd, int cmd, short type, off_t start, off_t len)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len };

	return fcntl(fd, cmd, &fl);
}

static void on_alarm(int sig)
{
	(void)sig;
}

/* SIGALRM in `secs` interrupts the call in progress (no SA_RESTART). */
static void interrupt_in(unsigned secs)
{
	struct sigaction sa = { .sa_handler = on_alarm };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	alarm(secs);
}

/* Waits up to timeout_ms for pid; returns its exit code, 128 + signal, or -1 on timeout
 * (after which the child is killed and reaped). */
static int wait_child(pid_t pid, int timeout_ms)
{
	int status;

	if (mnt_wait_bounded(pid, timeout_ms, &status))
		return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

static bool still_running(pid_t pid)
{
	int status;

	return waitpid(pid, &status, WNOHANG) == 0;
}

static pid_t fork_or_fail(void)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0) /* not cr_assert: the child would run it too (a passing one talks as well) */
		cr_assert_fail("fork: %s", strerror(errno));
	return pid;
}

static int open_rw(const char *rel)
{
	int fd = open(mnt_path(&M, rel), O_RDWR);

	cr_assert_geq(fd, 0, "open %s: %s", rel, strerror(errno));
	return fd;
}

/* A child that blocks for a write lock on [0, 100) of `rel` (F_SETLKW) or an exclusive flock,
 * with a 20 s safety alarm; exits with the code of the outcome. */
static pid_t spawn_waiter(const char *rel, bool use_flock)
{
	pid_t pid = fork_or_fail();

	if (pid == 0) {
		int fd = open(mnt_path(&M, rel), O_RDWR);

		if (fd < 0)
			_exit(CHILD_SETUP);
		alarm(20); /* default action: the child dies, the test sees 128 + SIGALRM */
		_exit(code_of(use_flock ? flock(fd, LOCK_EX)
					: range_lock(fd, F_SETLKW, F_WRLCK, 0, 100)));
	}
	return pid;
}

/* Creates `rel` in SOURCE, opens it through the mount and takes both a write record lock on
 * [0, 100) and an exclusive flock: what spawn_waiter's children wait for. Returns the fd. */
static int hold_both(const char *rel)
{
	int fd;

	cr_assert_eq(mnt_put(src_path(&M, rel), "x", 1, 0644), 0);
	fd = open_rw(rel);
	MNT_EXPECT_OK(range_lock(fd, F_SETLK, F_WRLCK, 0, 100));
	MNT_EXPECT_OK(flock(fd, LOCK_EX));
	return fd;
}

/* Starts n waiters on `rel` (record lock and flock in turn) and checks that all block. */
static void spawn_blocked(const char *rel, pid_t *pids, int n)
{
	for (int i = 0; i < n; i++)
		pids[i] = spawn_waiter(rel, i % 2);
	usleep(300 * 1000);
	for (int i = 0; i < n; i++)
		cr_assert(still_running(pids[i]), "waiter %d (%s) did not block", i,
			  i % 2 ? "flock" : "F_SETLKW");
}

Test(lock_waits, a_signal_interrupts_a_blocked_lock_request_with_eintr)
{
	int fd = hold_both("sig");
	pid_t pid;

	for (int use_flock = 0; use_flock < 2; use_flock++) {
		pid = fork_or_fail();
		if (pid == 0) {
			int cfd = open(mnt_path(&M, "sig"), O_RDWR);

			if (cfd < 0)
				_exit(CHILD_SETUP);
			interrupt_in(1);
			_exit(code_of(use_flock ? flock(cfd, LOCK_EX)
						: range_lock(cfd, F_SETLKW, F_WRLCK, 0, 100)));
		}
		/* The old daemon never answered: the child hung in the kernel until killed. */
		cr_assert_eq(wait_child(pid, 10000), GOT_EINTR,
			     "%s: a blocked request was not interrupted by SIGALRM with EINTR",
			     use_flock ? "flock" : "F_SETLKW");
	}
	close(fd);
	mnt_cr_finish(&M);
}

Test(lock_waits, killed_waiters_go_at_once_and_the_lock_stays_usable)
{
	pid_t pids[6];
	int fd = hold_both("kill");

	spawn_blocked("kill", pids, 6);
	for (int i = 0; i < 6; i++)
		kill(pids[i], SIGKILL);
	for (int i = 0; i < 6; i++)
		cr_assert_eq(wait_child(pids[i], 5000), 128 + SIGKILL,
			     "SIGKILLed waiter %d did not go within 5 s (stuck in the kernel)", i);
	/* the holder still holds; once it lets go, a newcomer gets both locks at once */
	MNT_EXPECT_OK(range_lock(fd, F_SETLK, F_UNLCK, 0, 100));
	MNT_EXPECT_OK(flock(fd, LOCK_UN));
	for (int use_flock = 0; use_flock < 2; use_flock++) {
		pid_t pid = spawn_waiter("kill", use_flock);

		cr_assert_eq(wait_child(pid, 10000), GOT_LOCK,
			     "%s after the killed waiters: no lock", use_flock ? "flock" : "F_SETLKW");
	}
	close(fd);
	mnt_cr_finish(&M);
}

Test(lock_waits, a_deadlock_between_two_processes_gets_edeadlk)
{
	int fd, ready[2], parent_code;
	char c;
	pid_t pid;

	cr_assert_eq(mnt_put(src_path(&M, "dl"), "0123456789abcdefghij", 20, 0644), 0);
	fd = open_rw("dl");
	MNT_EXPECT_OK(range_lock(fd, F_SETLK, F_WRLCK, 0, 10));
	cr_assert_eq(pipe(ready), 0);
	pid = fork_or_fail();
	if (pid == 0) {
		int cfd = open(mnt_path(&M, "dl"), O_RDWR), code;

		if (cfd < 0 || range_lock(cfd, F_SETLK, F_WRLCK, 10, 10) != 0)
			_exit(CHILD_SETUP);
		if (write(ready[1], "r", 1) != 1)
			_exit(CHILD_SETUP);
		alarm(20);
		/* waits for the parent's [0, 10) */
		code = code_of(range_lock(cfd, F_SETLKW, F_WRLCK, 0, 10));
		_exit(code);
	}
	close(ready[1]);
	cr_assert_eq(read(ready[0], &c, 1), 1, "child could not lock [10, 20)");
	close(ready[0]);
	usleep(300 * 1000); /* let the child's F_SETLKW reach the daemon */
	cr_assert(still_running(pid), "the child's F_SETLKW did not block");
	/*
	 * The parent now asks for the child's [10, 20): each would wait for the other. The
	 * kernel refuses the request that closes the cycle. Normally that is this one; if the
	 * child's request was slow to arrive, the child gets EDEADLK instead (and, exiting,
	 * frees [10, 20) for the parent).
	 */
	alarm(20);
	parent_code = code_of(range_lock(fd, F_SETLKW, F_WRLCK, 10, 10));
	alarm(0);
	MNT_EXPECT_OK(range_lock(fd, F_SETLK, F_UNLCK, 0, 20)); /* the child may go on */
	int child_code = wait_child(pid, 10000);
	cr_assert((parent_code == GOT_EDEADLK && child_code == GOT_LOCK) ||
			  (parent_code == GOT_LOCK && child_code == GOT_EDEADLK),
		  "deadlock not refused: parent got code %d, child %d (%d = EDEADLK, %d = lock)",
		  parent_code, child_code, GOT_EDEADLK, GOT_LOCK);
	close(fd);
	mnt_cr_finish(&M);
}

/* Child B's second thread: when told (a byte on fds[0]), takes a read lock on [0, 1) for
 * B's process with F_SETLK while B's main thread waits, and says so (a byte on fds[1]). */
struct late_reader {
	int fd;
	int fds[2];
};

static void *late_read_lock(void *arg)
{
	struct late_reader *r = arg;
	char c = 'n';

	if (read(r->fds[0], &c, 1) == 1 && range_lock(r->fd, F_SETLK, F_RDLCK, 0, 1) == 0)
		c = 'y';
	if (write(r->fds[1], &c, 1) != 1)
		_exit(CHILD_SETUP);
	return NULL;
}

/*
 * A cycle that forms while both already wait, when a third process lets go. X reads [0, 2);
 * A writes [5, 6). A asks for a write lock on [0, 1) and waits for X (who waits for nobody);
 * B asks for A's [5, 6) and waits for A (who waits for X, not for B). Then a second thread of
 * B takes a read lock on [0, 1) (no wait: X's lock is shared and A's is only asked for), and
 * X unlocks: now A waits for B and B for A. The kernel finds that when A tries again and
 * refuses A with EDEADLK (SOURCE's own locks do, natively); A, exiting, frees [5, 6) for B.
 * The daemon checked for a cycle only when a request began to wait, so A waited until its
 * alarm. (B takes its read lock only once it waits: held before, it would close the cycle
 * at B's own request, A waiting for both X and B, and B would be refused at once.)
 */
Test(lock_waits, a_deadlock_that_forms_while_waiting_gets_edeadlk)
{
	int to_x[2], to_a[2], to_b[2], to_b2[2], from_b2[2], ready[2], code_a, code_b;
	pid_t x, a, b;
	char c;

	cr_assert_eq(mnt_put(src_path(&M, "late"), "0123456789", 10, 0644), 0);
	cr_assert(pipe(to_x) == 0 && pipe(to_a) == 0 && pipe(to_b) == 0 && pipe(to_b2) == 0 &&
		  pipe(from_b2) == 0 && pipe(ready) == 0);
	/* each child: take its first lock (B: start its thread), say so, wait for the word */
	x = fork_or_fail();
	if (x == 0) {
		int fd = open(mnt_path(&M, "late"), O_RDWR);

		if (fd < 0 || range_lock(fd, F_SETLK, F_RDLCK, 0, 2) != 0 ||
		    write(ready[1], "x", 1) != 1 || read(to_x[0], &c, 1) != 1)
			_exit(CHILD_SETUP);
		_exit(range_lock(fd, F_SETLK, F_UNLCK, 0, 2) == 0 ? GOT_LOCK : GOT_OTHER);
	}
	a = fork_or_fail();
	if (a == 0) {
		int fd = open(mnt_path(&M, "late"), O_RDWR);

		if (fd < 0 || range_lock(fd, F_SETLK, F_WRLCK, 5, 1) != 0 ||
		    write(ready[1], "a", 1) != 1 || read(to_a[0], &c, 1) != 1)
			_exit(CHILD_SETUP);
		alarm(15);
		_exit(code_of(range_lock(fd, F_SETLKW, F_WRLCK, 0, 1)));
	}
	b = fork_or_fail();
	if (b == 0) {
		struct late_reader r = { .fd = open(mnt_path(&M, "late"), O_RDWR),
					 .fds = { to_b2[0], from_b2[1] } };
		pthread_t t;

		if (r.fd < 0 || pthread_create(&t, NULL, late_read_lock, &r) != 0 ||
		    write(ready[1], "b", 1) != 1 || read(to_b[0], &c, 1) != 1)
			_exit(CHILD_SETUP);
		alarm(15);
		_exit(code_of(range_lock(r.fd, F_SETLKW, F_WRLCK, 5, 1)));
	}
	for (int i = 0; i < 3; i++)
		cr_assert_eq(read(ready[0], &c, 1), 1, "a child could not take its first lock");
	cr_assert_eq(write(to_a[1], "g", 1), 1);
	usleep(300 * 1000);
	cr_assert(still_running(a), "A's F_SETLKW did not wait for X's read lock");
	cr_assert_eq(write(to_b[1], "g", 1), 1);
	usleep(300 * 1000);
	cr_assert(still_running(b), "B's F_SETLKW did not wait for A's write lock");
	cr_assert_eq(write(to_b2[1], "g", 1), 1);
	cr_assert(read(from_b2[0], &c, 1) == 1 && c == 'y',
		  "B's second thread could not take a read lock on [0, 1)");
	cr_assert(still_running(a) && still_running(b), "A or B stopped waiting before X let go");
	cr_assert_eq(write(to_x[1], "g", 1), 1); /* X lets go: the cycle closes */
	code_a = wait_child(a, 20000);
	code_b = wait_child(b, 20000);
	cr_assert_eq(wait_child(x, 5000), GOT_LOCK, "X could not unlock");
	cr_assert_eq(code_a, GOT_EDEADLK,
		     "A, whose wait became a cycle, got code %d (%d = EDEADLK, %d = killed by "
		     "its 15 s alarm)", code_a, GOT_EDEADLK, 128 + SIGALRM);
	cr_assert_eq(code_b, GOT_LOCK, "B got code %d once A had gone (%d = lock)", code_b,
		     GOT_LOCK);
	mnt_cr_finish(&M);
}

/*
 * Two processes share a read lock on one range and both ask to upgrade it to a write lock:
 * each waits for the other's read lock, a cycle the kernel refuses with EDEADLK. The holder
 * of an identical shared lock must be found although the other owner's lock looks the same
 * from every side (it was not: both waited forever).
 */
Test(lock_waits, upgrading_a_shared_lock_on_both_sides_gets_edeadlk)
{
	int fd, ready[2], parent_code, child_code;
	char c;
	pid_t pid;

	cr_assert_eq(mnt_put(src_path(&M, "up"), "0123456789", 10, 0644), 0);
	fd = open_rw("up");
	MNT_EXPECT_OK(range_lock(fd, F_SETLK, F_RDLCK, 0, 10));
	cr_assert_eq(pipe(ready), 0);
	pid = fork_or_fail();
	if (pid == 0) {
		int cfd = open(mnt_path(&M, "up"), O_RDWR);

		if (cfd < 0 || range_lock(cfd, F_SETLK, F_RDLCK, 0, 10) != 0)
			_exit(CHILD_SETUP);
		if (write(ready[1], "r", 1) != 1)
			_exit(CHILD_SETUP);
		alarm(20);
		/* waits for the parent's read lock */
		_exit(code_of(range_lock(cfd, F_SETLKW, F_WRLCK, 0, 10)));
	}
	close(ready[1]);
	cr_assert_eq(read(ready[0], &c, 1), 1, "child could not share the read lock");
	close(ready[0]);
	usleep(300 * 1000); /* let the child's F_SETLKW reach the daemon */
	cr_assert(still_running(pid), "the child's upgrade did not wait for the parent's lock");
	interrupt_in(10); /* a missed deadlock shows as EINTR here, not as a hung test */
	parent_code = code_of(range_lock(fd, F_SETLKW, F_WRLCK, 0, 10));
	alarm(0);
	MNT_EXPECT_OK(range_lock(fd, F_SETLK, F_UNLCK, 0, 10)); /* the child may go on */
	child_code = wait_child(pid, 10000);
	cr_assert((parent_code == GOT_EDEADLK && child_code == GOT_LOCK) ||
			  (parent_code == GOT_LOCK && child_code == GOT_EDEADLK),
		  "deadlock not refused: parent got code %d, child %d (%d = EDEADLK, %d = EINTR, "
		  "%d = lock)",
		  parent_code, child_code, GOT_EDEADLK, GOT_EINTR, GOT_LOCK);
	close(fd);
	mnt_cr_finish(&M);
}

/* In a child: metadata and data on another file, with the lock waiters blocked. */
static int child_uses_the_mount(void *arg)
{
	const char *dir = arg;
	char path[4096], buf[8] = { 0 };
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "%s/other", dir);
	fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
	if (fd < 0 || pwrite(fd, "hello", 5, 0) != 5 || pread(fd, buf, 5, 0) != 5 ||
	    memcmp(buf, "hello", 5) != 0 || fstat(fd, &st) != 0 || st.st_size != 5)
		return 1;
	close(fd);
	return unlink(path) == 0 && stat(dir, &st) == 0 ? 0 : 2;
}

Test(lock_waits, more_waiters_than_fuse_threads_leave_the_mount_usable)
{
	pid_t pids[8];
	int fd = hold_both("many"), rc;

	spawn_blocked("many", pids, 8);
	/* 8 waiters, 2 FUSE threads: everything else must still be served */
	rc = mnt_fork_run(child_uses_the_mount, (void *)mnt_path(&M, ""), 10000);
	cr_assert_eq(rc, 0, "the mount did not serve other requests while 8 lock requests "
			    "waited (rc %d; 137: hung and killed)", rc);
	/* Letting go: every waiter gets its lock in turn (each exits, releasing it). */
	MNT_EXPECT_OK(range_lock(fd, F_SETLK, F_UNLCK, 0, 100));
	MNT_EXPECT_OK(flock(fd, LOCK_UN));
	for (int i = 0; i < 8; i++)
		cr_assert_eq(wait_child(pids[i], 20000), GOT_LOCK,
			     "waiter %d (%s) did not get the lock after the release", i,
			     i % 2 ? "flock" : "F_SETLKW");
	close(fd);
	mnt_cr_finish(&M);
}

Test(lock_waits, a_flock_conversion_waits_for_the_other_shared_holder)
{
	int a, b, ready[2];
	char c;
	pid_t pid;

	cr_assert_eq(mnt_put(src_path(&M, "conv"), "x", 1, 0644), 0);
	a = open_rw("conv");
	MNT_EXPECT_OK(flock(a, LOCK_SH));
	cr_assert_eq(pipe(ready), 0);
	pid = fork_or_fail();
	if (pid == 0) {
		b = open(mnt_path(&M, "conv"), O_RDWR);
		if (b < 0 || flock(b, LOCK_SH | LOCK_NB) != 0 || write(ready[1], "r", 1) != 1)
			_exit(CHILD_SETUP);
		alarm(20);
		_exit(code_of(flock(b, LOCK_EX))); /* shared -> exclusive: waits for a */
	}
	close(ready[1]);
	cr_assert_eq(read(ready[0], &c, 1), 1, "child could not take a shared lock");
	close(ready[0]);
	usleep(300 * 1000);
	cr_assert(still_running(pid), "the conversion did not wait for the other shared lock");
	MNT_EXPECT_OK(flock(a, LOCK_UN));
	cr_assert_eq(wait_child(pid, 10000), GOT_LOCK, "the conversion never got its lock");
	close(a);
	mnt_cr_finish(&M);
}

Test(lock_waits, a_lock_held_on_source_outside_the_mount_is_waited_for)
{
	int sfd, go[2];
	pid_t pid;
	struct timespec t0, t1;

	cr_assert_eq(mnt_put(src_path(&M, "outside"), "x", 1, 0644), 0);
	/* The waiter is forked first: a child forked later would share the description of sfd,
	 * and with it the lock, until it exits. */
	cr_assert_eq(pipe(go), 0);
	pid = fork_or_fail();
	if (pid == 0) {
		int fd = open(mnt_path(&M, "outside"), O_RDWR);
		char c;

		close(go[1]);
		if (fd < 0 || read(go[0], &c, 1) != 1)
			_exit(CHILD_SETUP);
		alarm(20);
		_exit(code_of(range_lock(fd, F_SETLKW, F_WRLCK, 0, 100)));
	}
	close(go[0]);
	/* An OFD lock on SOURCE's file, by this process, not through the mount: the daemon
	 * gets no event when it goes, only its periodic retry sees it. */
	sfd = open(src_path(&M, "outside"), O_RDWR);
	cr_assert_geq(sfd, 0);
	{
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0,
				    .l_len = 100 };

		MNT_EXPECT_OK(fcntl(sfd, F_OFD_SETLK, &fl));
	}
	cr_assert_eq(write(go[1], "g", 1), 1);
	close(go[1]);
	usleep(300 * 1000);
	cr_assert(still_running(pid), "F_SETLKW through the mount ignored the lock on SOURCE");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	close(sfd);
	cr_assert_eq(wait_child(pid, 10000), GOT_LOCK, "the waiter never got the lock");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* Not a timing assertion of the daemon's period: only "it was not forgotten". */
	cr_log_info("granted %.0f ms after the release on SOURCE",
		    (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
	mnt_cr_finish(&M);
}

Test(lock_waits, waiters_get_enolck_when_the_daemon_stops)
{
	pid_t pids[2];
	int fd = hold_both("stop");

	spawn_blocked("stop", pids, 2);
	cr_assert_eq(kill(M.pid, SIGTERM), 0);
	/* Answered before the unmount, with an errno of the lock calls: EINTR here, with no
	 * signal pending, reached the caller as errno 512 (the kernel's ERESTARTSYS). */
	for (int i = 0; i < 2; i++) {
		int code = wait_child(pids[i], 10000);

		cr_assert(code == GOT_ENOLCK || code == GOT_GONE,
			  "waiter %d (%s) after SIGTERM: code %d (%d: ENOLCK, %d: mount gone)", i,
			  i % 2 ? "flock" : "F_SETLKW", code, GOT_ENOLCK, GOT_GONE);
	}
	close(fd);
	mnt_cr_finish(&M);
}
