/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * shutdown: `fusermount3 -u` while clients are reading and writing (with fsync) through
 * `-o device=hdd,direct_io,depth=2`, so requests are queued when the unmount comes.
 *
 * With clients holding open files, the kernel refuses a plain (non-lazy) unmount with EBUSY:
 * fusermount3 -u fails ("Device or resource busy") and the mount keeps serving, undisturbed.
 * The test checks exactly that, then lets the clients finish on their own (bounded), unmounts
 * again and expects the daemon to exit 0 with every fsync()ed write in SOURCE. Lazy unmount
 * (fusermount3 -uz) is not covered.
 *
 * SIGTERM to the daemon under the same load: every client must end within a bound (completed,
 * or failed with an errno as the mount goes away), the daemon must exit 0 and unmount, and
 * every write a client saw fsync()ed before the signal must be intact in SOURCE.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "chaos.h"
#include "mount.h"

#define BIG_LEN (2u << 20)
#define BIG_SEED 0x5eedu
#define WLEN (1u << 20)
#define CHUNK (64u << 10)
#define NR_READERS 2
#define NR_WRITERS 2
#define NR (NR_READERS + NR_WRITERS)

static struct mnt M;

static void setup(void)
{
	static const char *const args[] = { "-o", "device=hdd,direct_io,depth=2", NULL };

	cr_assert_eq(mnt_prepare(&M), 0, "mnt_prepare");
	cr_assert_eq(ch_make_file(src_path(&M, "big"), BIG_SEED, BIG_LEN), 0, "make SOURCE/big");
	umask(022);
	mnt_cr_start(&M, args);
}

static void teardown(void)
{
	mnt_cr_teardown(&M);
}

TestSuite(shutdown, .init = setup, .fini = teardown, .timeout = 60);

static void spawn_all(struct ch_client *cl, double run_s)
{
	for (unsigned i = 0; i < NR; i++) {
		char rel[32];
		int r;

		if (i < NR_READERS) {
			r = ch_spawn(&cl[i], CH_READER, mnt_path(&M, "big"), BIG_SEED, BIG_LEN, CHUNK,
				     run_s);
		} else {
			snprintf(rel, sizeof(rel), "w%u", i);
			r = ch_spawn(&cl[i], CH_WRITER, mnt_path(&M, rel), 0x77u + i, WLEN, CHUNK,
				     run_s);
		}
		cr_assert_eq(r, 0, "spawn: %s", strerror(-r));
	}
}

Test(shutdown, fusermount_under_load_is_ebusy_then_clean)
{
	struct ch_client cl[NR];
	char out[512] = "", err[512] = "";
	int st = 0;

	spawn_all(cl, 4.0); /* each client stops by itself 4 s from now */
	usleep(700000);

	const char *fu[] = { "fusermount3", "-u", M.mnt, NULL };
	int r = mnt_run(fu, 10000, &st, out, sizeof(out), err, sizeof(err));
	cr_assert_eq(r, 0, "fusermount3 did not finish in 10 s: %s", strerror(-r));
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		/* the kernel let it go: then every client must have ended, none may hang */
		/* Not cr_log_warn: Criterion 2.4 makes any warning a non-zero exit. */
		fprintf(stderr, "warning: fusermount3 -u succeeded with open files (kernel "
			"without EBUSY?)\n");
	} else {
		cr_assert(strstr(err, "busy") != NULL,
			  "fusermount3 -u under load failed other than busy: %s", err);
		cr_assert(mnt_is_fuse_mounted(M.mnt), "mount gone after a failed unmount");
	}

	/* every client finishes (deadline) or fails, within a bound; none returns bad data */
	for (unsigned i = 0; i < NR; i++) {
		int rr = ch_reap(&cl[i], 15000);
		if (rr != 0) {
			for (unsigned j = 0; j < NR; j++)
				ch_kill(&cl[j]);
			cr_assert_fail("client %u still running 15 s after the unmount", i);
		}
		int code = ch_exit_code(&cl[i]);
		cr_assert(code != CH_EXIT_CORRUPT && code != CH_EXIT_SHORT && code != CH_EXIT_SETUP,
			  "client %u ended with code %d", i, code);
		if (mnt_is_fuse_mounted(M.mnt))
			cr_assert_eq(code, CH_EXIT_DONE, "client %u failed (code %d, errno %d) "
				     "though the mount stayed", i, code, code - CH_EXIT_ERRNO);
	}

	/* with the files closed the unmount goes through and the daemon exits 0 */
	if (mnt_is_fuse_mounted(M.mnt)) {
		r = mnt_run(fu, 10000, &st, out, sizeof(out), err, sizeof(err));
		cr_assert(r == 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
			  "fusermount3 -u with the clients gone: %s", err);
	}
	cr_assert(!mnt_is_fuse_mounted(M.mnt), "still mounted after fusermount3 -u succeeded");

	/* every fsync()ed write is in SOURCE (read directly; the mount is gone) */
	for (unsigned i = NR_READERS; i < NR; i++) {
		char rel[32];
		uint64_t bad = 0;

		cr_assert_gt(cl[i].nr_acks, 0, "writer %u had no fsync acknowledged in 4 s", i);
		snprintf(rel, sizeof(rel), "w%u", i);
		r = ch_verify_file(src_path(&M, rel), 0x77u + i, cl[i].acked, &bad);
		cr_assert_eq(r, 0, "SOURCE/%s: %s at %llu of %llu acknowledged bytes", rel,
			     r < 0 ? strerror(-r) : "lost or wrong data", (unsigned long long)bad,
			     (unsigned long long)cl[i].acked);
	}
	mnt_cr_finish(&M); /* reaps the daemon: it must have exited 0 */
}

/* waits up to ms for the daemon to exit WITHOUT reaping it (the fixture reaps) */
static bool daemon_gone(pid_t pid, int ms)
{
	for (int t = 0; t < ms; t += 10) {
		siginfo_t si = { 0 };
		if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid)
			return true;
		usleep(10000);
	}
	return false;
}

Test(shutdown, sigterm_under_load_finishes_and_exits_0)
{
	struct ch_client cl[NR];

	spawn_all(cl, 15.0);
	/* SIGTERM once every writer has written past its first fsync (its SOURCE file holds two
	 * chunks), so that acknowledged data exists; bounded, as a slow (TSan) daemon needs more
	 * than the usual second. */
	for (int waited = 0; waited < 10000; waited += 50) {
		unsigned ready = 0;
		for (unsigned i = NR_READERS; i < NR; i++) {
			char rel[32];
			struct stat wst;
			snprintf(rel, sizeof(rel), "w%u", i);
			ready += stat(src_path(&M, rel), &wst) == 0 && wst.st_size >= 2 * (off_t)CHUNK;
		}
		if (ready == NR_WRITERS)
			break;
		usleep(50000);
	}
	usleep(200000);
	cr_assert_eq(kill(M.pid, SIGTERM), 0);
	for (unsigned i = 0; i < NR; i++) {
		int rr = ch_reap(&cl[i], 10000);
		if (rr != 0) {
			for (unsigned j = 0; j < NR; j++)
				ch_kill(&cl[j]);
			cr_assert_fail("client %u still running 10 s after SIGTERM", i);
		}
		int code = ch_exit_code(&cl[i]);
		cr_assert(code >= CH_EXIT_ERRNO, "client %u ended with code %d", i, code);
	}
	cr_assert(daemon_gone(M.pid, 10000), "daemon still running 10 s after SIGTERM");
	cr_assert(!mnt_is_fuse_mounted(M.mnt), "still mounted after SIGTERM");
	for (unsigned i = NR_READERS; i < NR; i++) {
		char rel[32];
		uint64_t bad = 0;
		cr_assert_gt(cl[i].nr_acks, 0);
		snprintf(rel, sizeof(rel), "w%u", i);
		int r = ch_verify_file(src_path(&M, rel), 0x77u + i, cl[i].acked, &bad);
		cr_assert_eq(r, 0, "SOURCE/%s bad at %llu", rel, (unsigned long long)bad);
		cr_log_info("writer %u: %llu acknowledged bytes intact", i,
			    (unsigned long long)cl[i].acked);
	}
	mnt_cr_finish(&M);
}
