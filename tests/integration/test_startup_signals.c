/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * startup_signals: a signal at any moment of the daemon's start-up is acted on as documented,
 * never its default action. A SIGHUP sent 0-50 ms after main() started (before, during or
 * after the mount) leaves a running, mounted daemon (it is a reload, or dropped when it came before
 * the daemon could read its configuration again); a SIGTERM or SIGINT sent then ends the
 * daemon with status 0 and no mount left. Before the fix, a SIGHUP 5 ms after the start killed
 * the daemon (exit 129, no mount). The daemon runs in the foreground (-f): a daemonizing
 * start forks, and a signal to the parent then dies with it (the man page says so).
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mount.h"

static struct mnt M;
static pid_t daemon_pid;

static void setup(void)
{
	if (!mnt_fuse_available())
		cr_skip("integration test needs FUSE; /dev/fuse unavailable: %s",
			mnt_fuse_unavailable_reason());
	cr_assert_eq(mnt_prepare(&M), 0, "cannot make the temp dirs");
}

static void teardown(void)
{
	if (daemon_pid > 0) {
		kill(daemon_pid, SIGKILL);
		waitpid(daemon_pid, NULL, 0);
		daemon_pid = 0;
	}
	if (mnt_is_fuse_mounted(M.mnt)) {
		const char *fu[] = { "fusermount3", "-u", "-z", M.mnt, NULL };
		int st;

		(void)mnt_run(fu, 10000, &st, NULL, 0, NULL, 0);
	}
	mnt_cr_teardown(&M);
}

TestSuite(startup_signals, .init = setup, .fini = teardown, .timeout = 120);

/* Starts `cfqfs -f SRC MNT` with its output in the fixture's log. */
static pid_t start_daemon(void)
{
	pid_t pid = fork(); /* no cr_ call in the child */

	if (pid == 0) {
		FILE *log = freopen(M.log, "a", stdout);

		if (!log || dup2(STDOUT_FILENO, STDERR_FILENO) < 0)
			_exit(126);
		execl(mnt_bin(), mnt_bin(), "-f", M.src, M.mnt, (char *)NULL);
		_exit(127);
	}
	cr_assert_gt(pid, 0, "fork: %s", strerror(errno));
	daemon_pid = pid;
	return pid;
}

static void sleep_ms(unsigned ms);

/*
 * Waits until the daemon's main() has started: the process runs the daemon's binary
 * (/proc/PID/exe, up to 2 s) and then its blocked-signal mask (/proc/PID/status SigBlk) holds
 * SIGHUP, the first thing main does (up to 5 ms more). Before that the process is in exec or
 * the dynamic loader, where no program can act on a signal. A daemon that blocks nothing
 * early gets the signal 5 ms after its exec, in the middle of its start-up.
 */
static void wait_main_started(pid_t pid)
{
	char path[64], line[256], exe[PATH_MAX], want[PATH_MAX];

	cr_assert_not_null(realpath(mnt_bin(), want), "realpath %s", mnt_bin());
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	for (int t = 0; t < 2000; t++) {
		ssize_t n = readlink(path, exe, sizeof(exe) - 1);

		if (n > 0 && (exe[n] = '\0', strcmp(exe, want) == 0))
			break;
		usleep(1000);
	}
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	for (int t = 0; t < 50; t++) {
		FILE *f = fopen(path, "r");
		unsigned long long blk = 0;

		while (f && fgets(line, sizeof(line), f))
			if (sscanf(line, "SigBlk: %llx", &blk) == 1)
				break;
		if (f)
			fclose(f);
		if (blk & (1ull << (SIGHUP - 1)))
			return;
		usleep(100);
	}
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Waits up to `ms` for the daemon to have mounted; false if it exited or timed out. */
static bool wait_mounted(pid_t pid, unsigned ms)
{
	for (unsigned t = 0; t < ms; t += 10) {
		if (mnt_is_fuse_mounted(M.mnt))
			return true;
		if (waitpid(pid, NULL, WNOHANG) == pid) {
			daemon_pid = 0;
			return false;
		}
		sleep_ms(10);
	}
	return false;
}

/* Sends `stop` and waits for the exit; returns the raw wait status (fails on a timeout). */
static int stop_daemon(pid_t pid, int stop)
{
	int st = 0;

	cr_assert_eq(kill(pid, stop), 0);
	cr_assert(mnt_wait_bounded(pid, 15000, &st), "the daemon did not exit after signal %d",
		  stop);
	daemon_pid = 0;
	return st;
}

/* [ms] after main() started: during argument and config parsing, the device probe, the
 * mount, and after it */
static const unsigned delays_ms[] = { 0, 1, 2, 5, 10, 20, 50 };

Test(startup_signals, sighup_during_startup_leaves_a_running_mount)
{
	for (size_t i = 0; i < sizeof(delays_ms) / sizeof(delays_ms[0]); i++) {
		pid_t pid = start_daemon();

		wait_main_started(pid);
		sleep_ms(delays_ms[i]);
		cr_assert_eq(kill(pid, SIGHUP), 0);
		if (!wait_mounted(pid, 10000)) {
			mnt_dump_log(&M);
			cr_assert_fail("SIGHUP %u ms into the start-up: no mount (daemon %s)",
				       delays_ms[i], daemon_pid ? "still running" : "exited");
		}
		sleep_ms(100); /* a reload in progress finishes; the daemon must still be there */
		cr_assert_eq(waitpid(pid, NULL, WNOHANG), 0,
			     "SIGHUP %u ms into the start-up: the daemon died after mounting",
			     delays_ms[i]);
		int st = stop_daemon(pid, SIGTERM);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit status %#x after SIGTERM",
			  st);
		cr_assert(!mnt_is_fuse_mounted(M.mnt), "mount left after SIGTERM");
	}
}

Test(startup_signals, sigterm_or_sigint_during_startup_is_a_clean_exit)
{
	static const int sigs[] = { SIGTERM, SIGINT };

	for (size_t s = 0; s < 2; s++)
		for (size_t i = 0; i < sizeof(delays_ms) / sizeof(delays_ms[0]); i++) {
			pid_t pid = start_daemon();

			wait_main_started(pid);
			sleep_ms(delays_ms[i]);
			int st = stop_daemon(pid, sigs[s]);
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
				mnt_dump_log(&M);
			cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0,
				  "signal %d %u ms into the start-up: wait status %#x, not exit 0",
				  sigs[s], delays_ms[i], st);
			cr_assert(!mnt_is_fuse_mounted(M.mnt), "signal %d %u ms in: mount left",
				  sigs[s], delays_ms[i]);
		}
}
