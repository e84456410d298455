/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * limits_uid: the per-user bounds (uid_queue_limit, uid_open_limit, the lock-wait slots per
 * user) hold for a tenant who spreads its load over many cgroups, each of which stays under
 * its own group's bound.
 *
 * The tenant is uid 65534 in NGROUPS real cgroups of their own (group_by=cgroup), one
 * process per cgroup; the mount is root's, with allow_other. Each case first shows that every
 * group alone is under its per-group bound (so the old per-group rules alone refuse nothing),
 * then that the tenant as a whole is held to its per-user bound, exactly, while another user
 * (uid 65533) and root still get their work done.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgtest.h"
#include "mount.h"
#include "workload.h"

#define TENANT 65534
#define OTHER 65533
#define NGROUPS 20
#define THREADS 8 /* readers per group: under the per-group queue_limit of 16 */
#define FILE_SIZE (4u << 20)

static struct mnt M;
static struct cgt_hier H;
static struct cgt CG[NGROUPS];

/* Counters shared with the forked tenant processes (MAP_SHARED). */
struct shared {
	atomic_int stop;
	atomic_int ready;     /* reader threads started */
	atomic_long ok;	      /* reads that succeeded */
	atomic_long eagain;   /* reads refused with EAGAIN */
	atomic_long other;    /* reads failing otherwise */
	atomic_int other_errno;
	atomic_int opened[NGROUPS]; /* open-files case: files each process holds */
	atomic_int open_errno[NGROUPS]; /* the error that stopped it, 0 if none */
	atomic_int done;      /* processes that finished opening */
};
static struct shared *SH;
static pid_t PIDS[NGROUPS];

static void kill_tenant(void)
{
	if (SH)
		atomic_store(&SH->stop, 1);
	for (int i = 0; i < NGROUPS; i++)
		if (PIDS[i] > 0) {
			kill(PIDS[i], SIGKILL);
			waitpid(PIDS[i], NULL, 0);
			PIDS[i] = 0;
		}
}

static void setup(void)
{
	wl_cr_fair_setup(&M, &H);
	SH = mmap(NULL, sizeof(*SH), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(SH, MAP_FAILED);
	memset(SH, 0, sizeof(*SH));
	for (unsigned g = 0; g < NGROUPS; g++) {
		char suffix[16];

		snprintf(suffix, sizeof(suffix), "u%02u", g);
		cr_assert_eq(cgt_create(&H, suffix, &CG[g]), 0, "cannot create cgroup %u", g);
	}
}

static void teardown(void)
{
	kill_tenant();
	mnt_cr_teardown(&M);
	cgt_destroy_all();
	if (SH && SH != MAP_FAILED)
		munmap(SH, sizeof(*SH));
	SH = NULL;
}

TestSuite(limits_uid, .init = setup, .fini = teardown, .timeout = 180);

static void mount_with(const char *extra)
{
	char opts[512];

	snprintf(opts, sizeof(opts), "allow_other,cgroup_line=%s,%s", H.line, extra);
	wl_cr_mount(&M, NULL, opts);
}

/* In a forked child: joins cgroup g (if g >= 0) and becomes `uid`. 0 or errno. */
static int become(int g, uid_t uid)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (g >= 0 && cgt_move(&CG[g], 0) != 0)
		return errno ? errno : EIO;
	if (setgroups(0, NULL) || setgid(uid) || setuid(uid))
		return errno;
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Queued requests                                                                           */

/* copies: mnt_path() returns a buffer its next call reuses */
static char READ_PATH[PATH_MAX];

static void *reader(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg * 7919u + 1;
	char *buf = malloc(4096);
	int fd = open(READ_PATH, O_RDONLY);

	atomic_fetch_add(&SH->ready, 1);
	if (fd < 0 || !buf) {
		atomic_fetch_add(&SH->other, 1);
		atomic_store(&SH->other_errno, fd < 0 ? errno : ENOMEM);
		goto out;
	}
	while (!atomic_load(&SH->stop)) {
		off_t off = (off_t)(rand_r(&seed) % (FILE_SIZE / 4096)) * 4096;
		ssize_t r = pread(fd, buf, 4096, off);
		int e = errno;

		if (r >= 0) {
			atomic_fetch_add(&SH->ok, 1);
		} else if (e == EAGAIN) {
			atomic_fetch_add(&SH->eagain, 1);
			usleep(1000); /* back off as a polite client would */
		} else {
			atomic_fetch_add(&SH->other, 1);
			atomic_store(&SH->other_errno, e);
			usleep(1000);
		}
	}
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return NULL;
}

/* One tenant process: THREADS readers in cgroup g until stop. */
static void start_readers(int g)
{
	/* no cr_ call in the child: Criterion's reporting socket is shared */
	pid_t pid = fork();

	if (pid == 0) {
		pthread_t t[THREADS];

		if (become(g, TENANT) != 0)
			_exit(1);
		for (uintptr_t i = 0; i < THREADS; i++)
			pthread_create(&t[i], NULL, reader, (void *)(g * THREADS + i));
		for (int i = 0; i < THREADS; i++)
			pthread_join(t[i], NULL);
		_exit(0);
	}
	cr_assert_neq(pid, -1);
	PIDS[g] = pid;
}

static int other_user_reads(void *arg)
{
	char buf[4096];
	int fd, rc = become(-1, OTHER);

	(void)arg;
	if (rc)
		return rc;
	fd = open(READ_PATH, O_RDONLY);
	if (fd < 0)
		return errno;
	for (int i = 0; i < 20 && rc == 0; i++) {
		ssize_t r = pread(fd, buf, sizeof(buf), (off_t)i * 4096);

		if (r != (ssize_t)sizeof(buf)) {
			rc = r < 0 ? errno : EIO;
			fprintf(stderr, "other user: read %d: %zd (%s)\n", i, r,
				r < 0 ? strerror(errno) : "short");
		}
	}
	close(fd);
	return rc;
}

/*
 * The tenant's 20 groups of 8 readers each keep 160 reads outstanding on an emulated disk
 * of depth 1: under queue_limit=16 each, so the per-group bound refuses nothing; with
 * uid_queue_limit=32 the tenant as a whole never has more than 32 queued or in flight, gets
 * EAGAIN for the rest, and a second user reads without a single error meanwhile. Sampled
 * through .cfqfs/io.stat (queued= sums requests waiting in the scheduler, not the one in
 * flight).
 */
Test(limits_uid, a_tenant_in_many_cgroups_is_held_to_its_uid_queue_limit)
{
	uint64_t peak = 0;
	unsigned groups = 0, peak_groups = 0;

	cr_assert_eq(wl_make_file(src_path(&M, "data"), FILE_SIZE), 0);
	mount_with("direct_io,device=hdd,depth=1,queue_limit=16,uid_queue_limit=32");
	snprintf(READ_PATH, sizeof(READ_PATH), "%s", mnt_path(&M, "data"));
	for (int g = 0; g < NGROUPS; g++)
		start_readers(g);
	for (int i = 0; i < 1000 && atomic_load(&SH->ready) < NGROUPS * THREADS; i++)
		usleep(10000);
	cr_assert_eq(atomic_load(&SH->ready), NGROUPS * THREADS, "tenant readers did not start");
	for (int i = 0; i < 40; i++) {
		uint64_t q = mnt_cr_queued(&M, &groups);

		if (q > peak)
			peak = q;
		if (groups > peak_groups)
			peak_groups = groups;
		usleep(50000);
	}
	int orc = mnt_fork_run(other_user_reads, NULL, 60000);
	long eagain = atomic_load(&SH->eagain);
	kill_tenant();
	cr_log_info("tenant: ok=%ld eagain=%ld other=%ld; peak queued %" PRIu64 " over %u groups; "
		    "other user: %s", atomic_load(&SH->ok), eagain, atomic_load(&SH->other), peak,
		    peak_groups, orc == 0 ? "ok" : strerror(orc));
	cr_expect_gt(peak_groups, 10, "the tenant's load was not spread over its cgroups (%u "
		     "groups seen)", peak_groups);
	cr_expect_gt(eagain, 0, "the tenant was never refused: the per-user bound did not act");
	cr_expect_leq(peak, 32, "the tenant held %" PRIu64 " queued requests, its uid bound is 32",
		      peak);
	cr_expect_gt(atomic_load(&SH->ok), 0, "the tenant got nothing: bounded, not blocked");
	cr_expect_eq(atomic_load(&SH->other), 0, "tenant reads failed with %s, not EAGAIN",
		     strerror(atomic_load(&SH->other_errno)));
	cr_expect_eq(orc, 0, "the other user failed: %s (exit %d)",
		     orc > 0 && orc < 128 ? strerror(orc) : "killed or timed out", orc);
	cr_expect_gt(mnt_log_count(&M, "uid 65534 reached its queue limit"), 0,
		     "no per-user limit warning in the daemon log");
	mnt_cr_finish(&M);
}

/* ---------------------------------------------------------------------------------------- */
/* Open files                                                                                */

#define PER_PROC 10 /* files each tenant process tries to open: under open_limit=32 */
#define UID_OPEN 50

static char open_dir[PATH_MAX];

/* Tenant process g: opens up to PER_PROC files, reports, holds them until stop. */
static void start_opener(int g)
{
	pid_t pid = fork();

	if (pid == 0) {
		char p[PATH_MAX + 32];
		int n = 0, e = become(g, TENANT);

		for (int i = 0; e == 0 && i < PER_PROC; i++) {
			snprintf(p, sizeof(p), "%s/f%d", open_dir, i);
			if (open(p, O_RDONLY) < 0)
				e = errno;
			else
				n++;
		}
		atomic_store(&SH->opened[g], n);
		atomic_store(&SH->open_errno[g], e);
		atomic_fetch_add(&SH->done, 1);
		while (!atomic_load(&SH->stop))
			usleep(10000);
		_exit(0);
	}
	cr_assert_neq(pid, -1);
	PIDS[g] = pid;
}

static int open_ten(void *arg)
{
	char p[PATH_MAX + 32];
	uid_t uid = (uid_t)(uintptr_t)arg;
	int rc = uid ? become(-1, uid) : 0;

	for (int i = 0; rc == 0 && i < PER_PROC; i++) {
		snprintf(p, sizeof(p), "%s/f%d", open_dir, i);
		if (open(p, O_RDONLY) < 0)
			rc = errno;
	}
	return rc;
}

/*
 * 20 tenant processes in 20 cgroups each open 10 files, one process after the other, and
 * hold them: every group stays under open_limit=32, and the tenant as a whole gets exactly
 * uid_open_limit=50 (the rest: EMFILE), while root and uid 65533 open theirs. Once the
 * tenant's processes are gone, the tenant opens again (the count is given back).
 */
Test(limits_uid, a_tenant_in_many_cgroups_gets_exactly_its_uid_open_limit)
{
	char opts[128];
	int total = 0, emfile = 0, other_err = 0;

	cr_assert_eq(mkdir(src_path(&M, "files"), 0755), 0);
	for (int i = 0; i < PER_PROC; i++) {
		char rel[32];

		snprintf(rel, sizeof(rel), "files/f%d", i);
		cr_assert_eq(wl_make_file(src_path(&M, rel), 4096), 0);
	}
	snprintf(opts, sizeof(opts), "open_limit=32,uid_open_limit=%d", UID_OPEN);
	mount_with(opts);
	snprintf(open_dir, sizeof(open_dir), "%s", mnt_path(&M, "files"));
	for (int g = 0; g < NGROUPS; g++) {
		start_opener(g);
		for (int i = 0; i < 3000 && atomic_load(&SH->done) <= g; i++)
			usleep(10000);
		cr_assert_eq(atomic_load(&SH->done), g + 1, "tenant process %d hung opening", g);
	}
	for (int g = 0; g < NGROUPS; g++) {
		int e = atomic_load(&SH->open_errno[g]);

		total += atomic_load(&SH->opened[g]);
		emfile += e == EMFILE;
		if (e && e != EMFILE)
			other_err = e;
	}
	int rrc = mnt_fork_run(open_ten, (void *)(uintptr_t)0, 30000);
	int orc = mnt_fork_run(open_ten, (void *)(uintptr_t)OTHER, 30000);
	cr_log_info("tenant holds %d files over %d cgroups (%d stopped by EMFILE)", total,
		    NGROUPS, emfile);
	cr_expect_eq(other_err, 0, "a tenant open failed with %s, not EMFILE", strerror(other_err));
	cr_expect_eq(total, UID_OPEN, "the tenant holds %d files; its uid bound is %d (%d without "
		     "it)", total, UID_OPEN, NGROUPS * PER_PROC);
	cr_expect_eq(emfile, NGROUPS - UID_OPEN / PER_PROC);
	cr_expect_eq(rrc, 0, "root could not open: %s", strerror(rrc));
	cr_expect_eq(orc, 0, "uid %d could not open: %s", OTHER, strerror(orc));
	kill_tenant();
	/* the count comes back once the kernel has sent RELEASE for the dead processes' files */
	int again = -1;
	for (int i = 0; i < 100 && again != 0; i++) {
		again = mnt_fork_run(open_ten, (void *)(uintptr_t)TENANT, 30000);
		if (again)
			usleep(50000);
	}
	cr_expect_eq(again, 0, "after its processes left, the tenant could not open: %s",
		     strerror(again));
	mnt_cr_finish(&M);
}

/* ---------------------------------------------------------------------------------------- */
/* Blocked lock requests                                                                     */

#define UID_WAITERS 1024 /* PT_LOCK_WAITERS_UID_MAX: a quarter of the daemon's 4096 */
#define TENANT_WAITERS (UID_WAITERS + 6)

static char LOCK_PATH[PATH_MAX];

/* One tenant thread: a blocking flock on its own open file description. */
static void *flocker(void *arg)
{
	int fd = open(LOCK_PATH, O_RDONLY);

	(void)arg;
	atomic_fetch_add(&SH->ready, 1);
	if (fd < 0) {
		atomic_fetch_add(&SH->other, 1);
		atomic_store(&SH->other_errno, errno);
		return NULL;
	}
	if (flock(fd, LOCK_EX) == 0) {
		atomic_fetch_add(&SH->ok, 1);
		flock(fd, LOCK_UN);
	} else if (errno == ENOLCK) {
		atomic_fetch_add(&SH->eagain, 1); /* (counts ENOLCK in this case) */
	} else {
		atomic_fetch_add(&SH->other, 1);
		atomic_store(&SH->other_errno, errno);
	}
	close(fd);
	return NULL;
}

static int other_user_waits(void *arg)
{
	int fd, rc = become(-1, OTHER);

	(void)arg;
	if (rc)
		return rc;
	fd = open(LOCK_PATH, O_RDONLY);
	if (fd < 0)
		return errno;
	rc = flock(fd, LOCK_EX) == 0 ? 0 : errno;
	close(fd);
	return rc;
}

/*
 * Root holds a flock; the tenant's 1030 threads (each its own open file description) block
 * on it: exactly 6 get ENOLCK, the first 1024 wait. Another user can still wait meanwhile
 * (the slots are not all the tenant's), and when root lets go every waiter gets the lock in
 * turn.
 */
Test(limits_uid, a_tenant_takes_at_most_its_share_of_the_lock_wait_slots)
{
	int hold_fd, st = 0; /* the other user's wait status */
	pid_t tenant, other;

	cr_assert_eq(wl_make_file(src_path(&M, "lk"), 4096), 0);
	mount_with("max_threads=4");
	snprintf(LOCK_PATH, sizeof(LOCK_PATH), "%s", mnt_path(&M, "lk"));
	hold_fd = open(LOCK_PATH, O_RDONLY);
	cr_assert_geq(hold_fd, 0);
	cr_assert_eq(flock(hold_fd, LOCK_EX | LOCK_NB), 0, "root cannot take the lock: %s",
		     strerror(errno));
	tenant = fork();
	if (tenant == 0) {
		static pthread_t t[TENANT_WAITERS];
		pthread_attr_t a;

		if (become(-1, TENANT) != 0)
			_exit(1);
		pthread_attr_init(&a);
		pthread_attr_setstacksize(&a, 64 << 10);
		for (int i = 0; i < TENANT_WAITERS; i++)
			if (pthread_create(&t[i], &a, flocker, NULL) != 0)
				_exit(2);
		for (int i = 0; i < TENANT_WAITERS; i++)
			pthread_join(t[i], NULL);
		_exit(0);
	}
	cr_assert_neq(tenant, -1);
	PIDS[0] = tenant;
	for (int i = 0; i < 3000 && (atomic_load(&SH->ready) < TENANT_WAITERS ||
				     atomic_load(&SH->eagain) + atomic_load(&SH->other) <
					     TENANT_WAITERS - UID_WAITERS); i++)
		usleep(10000);
	long refused = atomic_load(&SH->eagain);
	/* another user's blocking request still finds a slot: it waits, it is not refused */
	other = fork();
	if (other == 0)
		_exit(other_user_waits(NULL));
	cr_assert_neq(other, -1);
	usleep(500000);
	pid_t early = waitpid(other, &st, WNOHANG);
	cr_assert_eq(flock(hold_fd, LOCK_UN), 0);
	close(hold_fd);
	int tenant_st = 0;
	bool tenant_done = mnt_wait_bounded(tenant, 120000, &tenant_st);
	if (tenant_done)
		PIDS[0] = 0;
	bool other_done = early == other || mnt_wait_bounded(other, 60000, &st);
	if (!other_done)
		kill(other, SIGKILL), waitpid(other, NULL, 0);
	cr_log_info("tenant: %ld threads refused ENOLCK, %ld got the lock, %ld other errors; "
		    "other user %s", refused, atomic_load(&SH->ok), atomic_load(&SH->other),
		    early == other ? "answered before the release" : "waited");
	cr_expect_eq(atomic_load(&SH->other), 0, "a tenant thread failed with %s",
		     strerror(atomic_load(&SH->other_errno)));
	cr_expect_eq(refused, TENANT_WAITERS - UID_WAITERS,
		     "%ld of the tenant's %d blocking requests were refused; its bound is %d",
		     refused, TENANT_WAITERS, UID_WAITERS);
	cr_expect_neq(early, other, "the other user's request was answered while the lock was "
		      "held (exit %d: %s)", WEXITSTATUS(st), strerror(WEXITSTATUS(st)));
	cr_expect(other_done && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "the other user did not get the lock after the release (status %#x)", st);
	cr_expect(tenant_done && WIFEXITED(tenant_st) && WEXITSTATUS(tenant_st) == 0,
		  "the tenant's waiters did not all finish (status %#x)", tenant_st);
	cr_expect_eq(atomic_load(&SH->ok), UID_WAITERS, "waiters that got the lock in turn");
	mnt_cr_finish(&M);
}
