/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tests of cgroup/cg_proc.c, the I/O layer: the real /proc of this test process, vanished
 * tasks, and a recorded cgroupfs tree in a temporary directory for the weight files.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cg_proc.h"
#include "cgroup.h"
#include "sched.h"

static char tmp[64]; /* short: keeps every derived path far below PATH_MAX */

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static void mk_tmp(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/cg_proc_test.XXXXXX");
	cr_assert_not_null(mkdtemp(tmp));
}

static void rm_tmp(void)
{
	if (tmp[0])
		nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* mkdir -p for tmp-relative directories, then writes `text` to tmp/rel */
static void put(const char *rel, const char *text)
{
	char p[PATH_MAX];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", tmp, rel);
	for (char *s = p + strlen(tmp) + 1; *s; s++) {
		if (*s == '/') {
			*s = '\0';
			mkdir(p, 0755);
			*s = '/';
		}
	}
	f = fopen(p, "w");
	cr_assert_not_null(f, "%s", p);
	fputs(text, f);
	fclose(f);
}

Test(cg_proc, stat_and_status_of_self)
{
	struct cg_stat st;
	struct cg_status s;

	cr_assert_eq(cg_proc_stat("/proc", getpid(), &st), 0);
	cr_assert_eq(st.pid, getpid());
	cr_assert_eq(st.ppid, getppid());
	cr_assert_gt(st.start_time, 0);
	cr_assert(st.nice >= -20 && st.nice <= 19);
	cr_assert_gt(strlen(st.comm), 0);
	cr_assert_eq(cg_proc_status("/proc", getpid(), &s), 0);
	cr_assert_eq(s.tgid, getpid());
	cr_assert_eq(s.uid[0], getuid());
	cr_assert_eq(s.gid[1], getegid());
}

static pid_t thread_tid;
static pthread_barrier_t barrier;

static void *thread_main(void *arg)
{
	(void)arg;
	thread_tid = gettid();
	pthread_barrier_wait(&barrier); /* tid published */
	pthread_barrier_wait(&barrier); /* parent done reading */
	return NULL;
}

Test(cg_proc, a_thread_maps_to_its_process)
{
	pthread_t th;
	struct cg_status s;
	struct cg_stat st, pst;

	pthread_barrier_init(&barrier, NULL, 2);
	cr_assert_eq(pthread_create(&th, NULL, thread_main, NULL), 0);
	pthread_barrier_wait(&barrier);
	cr_assert_neq(thread_tid, getpid());
	cr_assert_eq(cg_proc_status("/proc", thread_tid, &s), 0);
	cr_assert_eq(s.tgid, getpid(), "the tid's Tgid is the process");
	cr_assert_eq(cg_proc_stat("/proc", thread_tid, &st), 0);
	cr_assert_eq(st.pid, thread_tid, "/proc/TID/stat describes the thread itself");
	cr_assert_eq(cg_proc_stat("/proc", getpid(), &pst), 0);
	cr_assert_geq(st.start_time, pst.start_time);
	cr_assert_geq(cg_proc_ioprio(thread_tid), 0);
	pthread_barrier_wait(&barrier);
	pthread_join(th, NULL);
	pthread_barrier_destroy(&barrier);
}

Test(cg_proc, cgroup_of_self_parses)
{
	char *buf = malloc(CG_PROC_CGROUP_MAX);
	struct cg_proc_cgroup pc;
	size_t len;

	cr_assert_not_null(buf);
	cr_assert_eq(cg_proc_cgroup("/proc", getpid(), buf, CG_PROC_CGROUP_MAX, &len, &pc), 0);
	cr_assert(pc.v2.present || pc.blkio.present || pc.systemd.present || pc.nr_v1 > 0);
	if (pc.v2.present)
		cr_assert_eq(buf[pc.v2.off], '/');
	free(buf);
}

Test(cg_proc, vanished_task_is_esrch_everywhere)
{
	pid_t child = fork();
	struct cg_stat st;
	struct cg_status s;
	struct cg_proc_cgroup pc;
	char buf[4096];
	size_t len;

	/* the child must not assert: with --full-stats every assert talks to the runner */
	if (child == 0)
		_exit(0);
	cr_assert_geq(child, 0);
	cr_assert_eq(waitpid(child, NULL, 0), child);
	/* reaped: the id is free (and not reused this fast on a 2^22 pid space) */
	cr_assert_eq(cg_proc_stat("/proc", child, &st), -ESRCH);
	cr_assert_eq(cg_proc_status("/proc", child, &s), -ESRCH);
	cr_assert_eq(cg_proc_cgroup("/proc", child, buf, sizeof(buf), &len, &pc), -ESRCH);
	cr_assert_eq(cg_proc_ioprio(child), -ESRCH);
	cr_assert_eq(cg_proc_stat("/proc", 0, &st), -ESRCH);
	cr_assert_eq(cg_proc_stat("/proc", -5, &st), -ESRCH);
}

Test(cg_proc, read_file_bounds)
{
	char small[4];
	size_t len = 0;

	mk_tmp();
	put("four", "abcd");
	put("five", "abcde");
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/four", tmp);
	cr_assert_eq(cg_proc_read_file(p, small, sizeof(small), &len), 0, "exactly full fits");
	cr_assert_eq(len, 4);
	snprintf(p, sizeof(p), "%s/five", tmp);
	cr_assert_eq(cg_proc_read_file(p, small, sizeof(small), &len), -EFBIG);
	snprintf(p, sizeof(p), "%s/none", tmp);
	cr_assert_eq(cg_proc_read_file(p, small, sizeof(small), &len), -ENOENT);
	/* symlinks are not followed */
	char l[PATH_MAX];
	snprintf(l, sizeof(l), "%s/link", tmp);
	snprintf(p, sizeof(p), "%s/four", tmp);
	cr_assert_eq(symlink(p, l), 0);
	cr_assert_eq(cg_proc_read_file(l, small, sizeof(small), &len), -ELOOP);
	rm_tmp();
}

Test(cg_proc, mounts_of_this_host)
{
	struct cg_mounts m;
	bool has_io = true;

	cr_assert_eq(cg_proc_mounts("/proc/self/mountinfo", &m, &has_io), 0);
	/* whatever the host, a found mount is an absolute directory */
	if (m.v2.dir[0])
		cr_assert_eq(m.v2.dir[0], '/');
	if (m.blkio.dir[0])
		cr_assert_eq(m.blkio.dir[0], '/');
	if (!m.v2.dir[0])
		cr_assert(!has_io);
	cr_assert_eq(cg_proc_mounts("/nonexistent/mountinfo", &m, &has_io), -ENOENT);
}

Test(cg_proc, group_weight_prefers_io_bfq_then_io_then_blkio_bfq_then_blkio)
{
	struct cg_mounts ms;
	char v2dir[128], blkdir[128];
	enum cg_weight_file which;
	uint32_t w = 0;

	mk_tmp();
	snprintf(v2dir, sizeof(v2dir), "%s/unified", tmp);
	snprintf(blkdir, sizeof(blkdir), "%s/blkio", tmp);
	memset(&ms, 0, sizeof(ms));
	snprintf(ms.v2.dir, sizeof(ms.v2.dir), "%s", v2dir);
	snprintf(ms.v2.root, sizeof(ms.v2.root), "/");
	snprintf(ms.blkio.dir, sizeof(ms.blkio.dir), "%s", blkdir);
	snprintf(ms.blkio.root, sizeof(ms.blkio.root), "/");

	put("unified/t/a/io.bfq.weight", "default 300\n");
	put("unified/t/a/io.weight", "default 400\n");
	put("blkio/t/a/blkio.bfq.weight", "200\n");
	put("blkio/t/a/blkio.weight", "700\n");

	cr_assert_eq(cg_proc_group_weight(&ms, "/t/a", "/t/a", 0, &w, &which), 0);
	cr_assert_eq(which, CG_WFILE_IO_BFQ);
	cr_assert_eq(w, 300);

	put("unified/t/a/io.bfq.weight", "garbage\n"); /* malformed: skipped */
	cr_assert_eq(cg_proc_group_weight(&ms, "/t/a", "/t/a", 0, &w, &which), 0);
	cr_assert_eq(which, CG_WFILE_IO);
	cr_assert_eq(w, 200, "io.weight 400 -> 10*sqrt(400)");

	cr_assert_eq(cg_proc_group_weight(&ms, NULL, "/t/a", 0, &w, &which), 0);
	cr_assert_eq(which, CG_WFILE_BLKIO_BFQ);
	cr_assert_eq(w, 200);

	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/blkio/t/a/blkio.bfq.weight", tmp);
	unlink(p);
	cr_assert_eq(cg_proc_group_weight(&ms, NULL, "/t/a", 0, &w, &which), 0);
	cr_assert_eq(which, CG_WFILE_BLKIO);
	cr_assert_eq(w, 700);

	cr_assert_eq(cg_proc_group_weight(&ms, NULL, "/t/missing", 0, &w, &which), -ENOENT);
	cr_assert_eq(cg_proc_group_weight(&ms, NULL, NULL, 0, &w, &which), -ENOENT);

	/* a namespaced path is never resolved, even when the file it would reach exists */
	put("container/io.weight", "default 10000\n");
	cr_assert_eq(cg_proc_weight_file(&ms.v2, "/../container", CG_WFILE_IO, 0, &w), -EINVAL);
	cr_assert_eq(cg_proc_group_weight(&ms, "/../container", NULL, 0, &w, &which), -ENOENT);
	rm_tmp();
}

Test(cg_proc, ioprio_set_and_get_on_self)
{
	/* Criterion runs each test in its own process: changing our ioprio is contained */
	int before = cg_proc_ioprio(0);

	cr_assert_geq(before, 0);
	cr_assert_eq(cg_proc_set_ioprio(0, (2 << 13) | 6), 0);
	cr_assert_eq(cg_proc_ioprio(0), (2 << 13) | 6);
	cr_assert_eq(cg_proc_ioprio(getpid()), (2 << 13) | 6);
	cr_assert_eq(cg_proc_set_ioprio(0, (3 << 13)), 0);
	cr_assert_eq((cg_proc_ioprio(0) >> 13) & 7, SCHED_CLASS_IDLE);
}

/* A caller is "dying" only with SIGKILL pending (or gone): what the executor cancels on. */
Test(cg_proc, task_dying)
{
	sigset_t usr1, old;
	pid_t child;
	int rc;

	/* a live task with a handled signal pending is not dying */
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	cr_assert_eq(sigprocmask(SIG_BLOCK, &usr1, &old), 0);
	cr_assert_eq(kill(getpid(), SIGUSR1), 0);
	struct cg_status s;
	cr_assert_eq(cg_proc_status("/proc", getpid(), &s), 0);
	cr_assert_neq(s.sig_pending & (1u << (SIGUSR1 - 1)), 0, "SIGUSR1 shows as pending");
	rc = cg_task_dying(NULL, getpid());
	cr_assert_eq(sigtimedwait(&usr1, NULL, &(struct timespec){ 0 }), SIGUSR1);
	cr_assert_eq(sigprocmask(SIG_SETMASK, &old, NULL), 0);
	cr_assert_eq(rc, 0, "SIGUSR1 pending is not a fatal signal");
	cr_assert_eq(cg_task_dying("/proc", 0), 0, "tid 0 (the kernel) is never dying");

	/* a reaped task is gone */
	child = fork();
	if (child == 0)
		_exit(0);
	cr_assert_geq(child, 0);
	cr_assert_eq(waitpid(child, NULL, 0), child);
	cr_assert_eq(cg_task_dying(NULL, child), 1, "a task that is gone counts as dying");

	/* SIGKILL pending cannot be held on a live task, so a fake procfs shows it */
	mk_tmp();
	put("42/status", "Name:\tx\nTgid:\t42\nSigPnd:\t0000000000000100\n"
			 "ShdPnd:\t0000000000000000\n");
	put("43/status", "Name:\tx\nTgid:\t43\nSigPnd:\t0000000000000000\n"
			 "ShdPnd:\t0000000000000100\n");
	put("44/status", "Name:\tx\nTgid:\t44\nSigPnd:\t00000000000000ff\n"
			 "ShdPnd:\t0000000000000200\n");
	put("45/status", "Name:\tx\nTgid:\t45\nSigPnd:\tzz\n");
	cr_assert_eq(cg_task_dying(tmp, 42), 1, "SIGKILL on the thread");
	cr_assert_eq(cg_task_dying(tmp, 43), 1, "SIGKILL on the process");
	cr_assert_eq(cg_task_dying(tmp, 44), 0, "other signals only");
	cr_assert_eq(cg_task_dying(tmp, 45), -EINVAL, "unparsable status");
	cr_assert_eq(cg_task_dying(tmp, 46), 1, "no such task");
	rm_tmp();
}
