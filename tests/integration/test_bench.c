/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench: `bench/all --quick` against the daemon under test, so the experiment scripts of issue 7
 * cannot rot. The run must exit 0; each of the six experiments must print one compare table per
 * device with at least its rows and exactly its columns, a finite figure in every cell (a cell
 * may be "-" only where the script says the metric does not apply), and a PNG plot per table
 * into the scratch --out directory (none into the tree's bench/out). Afterwards nothing may be
 * mounted under the scratch directory, no process of the run may be left, and no temp dir or
 * cgroup of the scripts may remain. A second test interrupts a run (SIGINT to its process
 * group, as Ctrl-C does) while its background load runs and asserts the same cleanup.
 *
 * The bench tools (fio, fs_mark, gnuplot, jq, perl, libfuse3-dev's passthrough_ll.c) are
 * installed by `make test` (scripts/install-deps.sh test), so a missing one fails the test;
 * only a missing /dev/fuse skips. No duration is asserted: the machine may be shared and
 * noisy; the run's duration is printed. Each run is bounded (then interrupted, then killed) so
 * a hung script fails the test instead of outliving it.
 */
#include <criterion/criterion.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mount.h"

#ifndef CFQFS_SOURCE_DIR
#define CFQFS_SOURCE_DIR "."
#endif

#define POLL_MS 100
#define RUN_BOUND_MS (540 * 1000)	/* bench/all --quick: 3 min expected, 197 s measured quiet */
#define INT_BOUND_MS (240 * 1000)	/* interrupted run: the burst in flight may finish first */
#define GRACE_MS (120 * 1000)		/* after the bound: SIGINT, then this long, then SIGKILL */
#define PLL_SRC "/usr/share/doc/libfuse3-dev/examples/passthrough_ll.c"

/* One experiment script: what its quick tables must hold. */
struct exp {
	const char *name;
	int rows;	/* at least this many metric rows per table */
	int cols_hdd;	/* configurations (columns) on device=hdd */
	int cols_none;	/* ... on device=none (the real disk, with native references) */
};

static const struct exp EXPS[] = {
	{ "low-latency", 10, 2, 2 },
	{ "interactive", 5, 3, 3 },
	{ "weights", 13, 2, 2 },
	{ "depth", 5, 4, 4 },
	{ "seqread-threads", 6, 4, 5 },
	{ "fsmark", 2, 4, 6 },
};
#define N_EXPS (sizeof(EXPS) / sizeof(EXPS[0]))
static const char *const DEVS[] = { "hdd", "none" };

static struct mnt M;		/* only its temp dir: the scripts mount themselves */
static char work[PATH_MAX];	/* --dir: the scripts' temp SOURCE dirs go here */
static char outdir[PATH_MAX];	/* --out: the PNG plots */
static char out_path[PATH_MAX], err_path[PATH_MAX];
static pid_t run_pgid;		/* process group of a bench/all still to be reaped, or 0 */
static char out[1 << 18], err[1 << 16];

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Calls fn(mount point) for every mount under dir (any filesystem type). Returns the count. */
static int mounts_under(const char *dir, void (*fn)(const char *mp))
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096], mp[4096];
	size_t len = strlen(dir);
	int n = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		/* field 5 is the mount point; octal escapes only for characters we never use */
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) != 1)
			continue;
		if (strncmp(mp, dir, len) == 0 && mp[len] == '/') {
			n++;
			if (fn)
				fn(mp);
		}
	}
	fclose(f);
	return n;
}

static void log_mount(const char *mp)
{
	cr_log_error("left mounted: %s", mp);
}

static void detach(const char *mp)
{
	const char *fu[] = { "fusermount3", "-uz", mp, NULL };
	const char *um[] = { "umount", "-l", mp, NULL };
	int st = 0;

	if (mnt_run(fu, 10000, &st, NULL, 0, NULL, 0) != 0 || !WIFEXITED(st) || WEXITSTATUS(st))
		mnt_run(um, 10000, &st, NULL, 0, NULL, 0);
}

/* The command line of process `pid` (a /proc entry name) with NULs as spaces, into cmd
 * (cap bytes). False if it is not a process or has no command line (a kernel thread). */
static bool cmdline_of(const char *pid, char *cmd, size_t cap)
{
	char path[64];
	ssize_t len;
	int fd;

	if (!isdigit((unsigned char)pid[0]))
		return false;
	snprintf(path, sizeof(path), "/proc/%s/cmdline", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	len = read(fd, cmd, cap - 1);
	close(fd);
	if (len <= 0)
		return false;
	for (ssize_t i = 0; i < len; i++)
		if (cmd[i] == '\0')
			cmd[i] = ' ';
	cmd[len] = '\0';
	return true;
}

/*
 * Pids of processes other than this one whose command line mentions dir (the scripts pass it
 * in --dir, fio --directory=, the daemons' SOURCE and MOUNTPOINT). Logs each; returns the count.
 */
static int procs_mentioning(const char *dir, bool log)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char cmd[8192];

		if (atoi(de->d_name) == getpid() || !cmdline_of(de->d_name, cmd, sizeof(cmd)))
			continue;
		if (strstr(cmd, dir)) {
			n++;
			if (log)
				cr_log_error("left running: pid %s: %.300s", de->d_name, cmd);
		}
	}
	closedir(d);
	return n;
}

/* Entries of dir (other than . and ..); logs each. */
static int entries_in(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			cr_log_error("left in %s: %s", dir, de->d_name);
			n++;
		}
	closedir(d);
	return n;
}

static void setup(void)
{
	mnt_cr_prepare(&M);
	snprintf(work, sizeof(work), "%s/work", M.base);
	snprintf(outdir, sizeof(outdir), "%s/out", M.base);
	snprintf(out_path, sizeof(out_path), "%s/stdout", M.base);
	snprintf(err_path, sizeof(err_path), "%s/stderr", M.base);
	cr_assert_eq(mkdir(work, 0755), 0, "mkdir %s: %s", work, strerror(errno));
	cr_assert_eq(mkdir(outdir, 0755), 0, "mkdir %s: %s", outdir, strerror(errno));
}

/* Whatever a failed test left: the run's processes, then its mounts, then the temp dir. */
static void teardown(void)
{
	if (run_pgid > 0) {
		kill(-run_pgid, SIGKILL);
		while (waitpid(run_pgid, NULL, 0) < 0 && errno == EINTR)
			;
		run_pgid = 0;
	}
	if (M.base[0]) {
		mounts_under(M.base, detach);
		mnt_teardown(&M);
	}
}

TestSuite(bench, .init = setup, .fini = teardown);

/* Fails the test unless `sh -c "command -v NAME"` finds each tool. */
static void require_tools(void)
{
	static const char *const tools[] = { "fio", "fs_mark", "gnuplot", "jq", "perl", "gcc",
					     "pkg-config", "fusermount3", "ionice" };

	for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++) {
		char cmd[64];
		const char *argv[] = { "sh", "-c", cmd, NULL };
		int st = 0;

		snprintf(cmd, sizeof(cmd), "command -v %s", tools[i]);
		cr_assert(mnt_run(argv, 10000, &st, NULL, 0, NULL, 0) == 0 && WIFEXITED(st) &&
				  WEXITSTATUS(st) == 0,
			  "%s not installed; `make test` installs it (sh scripts/install-deps.sh test)",
			  tools[i]);
	}
	cr_assert(access(PLL_SRC, R_OK) == 0, "%s missing (libfuse3-dev, installed by make test)",
		  PLL_SRC);
}

/*
 * Starts bench/all with args (NULL-terminated) in a process group of its own, stdout and
 * stderr to out_path and err_path. Returns its pid (= run_pgid).
 */
static pid_t start_bench(const char *const *args)
{
	const char *argv[32];
	char all[PATH_MAX];
	size_t n = 0;
	pid_t pid;

	snprintf(all, sizeof(all), "%s/bench/all", CFQFS_SOURCE_DIR);
	argv[n++] = all;
	for (size_t i = 0; args[i] && n < 31; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	cr_assert(access(all, X_OK) == 0, "%s: %s", all, strerror(errno));
	fflush(NULL);
	pid = fork();
	if (pid == 0) { /* no Criterion call here: --full-stats reports every passing assert too */
		int in = open("/dev/null", O_RDONLY);
		int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		setpgid(0, 0);
		if (in < 0 || o < 0 || e < 0)
			_exit(126);
		dup2(in, STDIN_FILENO);
		dup2(o, STDOUT_FILENO);
		dup2(e, STDERR_FILENO);
		execv(argv[0], (char *const *)argv);
		dprintf(STDERR_FILENO, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	cr_assert(pid > 0, "fork: %s", strerror(errno));
	setpgid(pid, pid); /* also here, so the group exists before we might signal it */
	run_pgid = pid;
	return pid;
}

/* Waits up to ms for pid; true with *status once it exited. */
static bool wait_for(pid_t pid, long ms, int *status)
{
	long deadline = now_ms() + ms;

	for (;;) {
		pid_t r = waitpid(pid, status, WNOHANG);

		if (r == pid) {
			if (run_pgid == pid)
				run_pgid = 0;
			return true;
		}
		if ((r < 0 && errno != EINTR) || now_ms() >= deadline)
			return false;
		sleep_ms(POLL_MS);
	}
}

/*
 * Waits up to bound_ms for the run; past it, interrupts the group (the scripts' traps clean
 * up), then kills it. Returns true if it ended within bound_ms.
 */
static bool finish_bench(pid_t pid, long bound_ms, int *status)
{
	if (wait_for(pid, bound_ms, status))
		return true;
	cr_log_error("bench/all still running after %ld s: interrupting it", bound_ms / 1000);
	kill(-pid, SIGINT);
	if (!wait_for(pid, GRACE_MS, status)) {
		kill(-pid, SIGKILL);
		wait_for(pid, 10000, status);
	}
	return false;
}

static void slurp(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t used = 0;

	buf[0] = '\0';
	if (fd < 0)
		return;
	while (used + 1 < cap) {
		ssize_t r = read(fd, buf + used, cap - 1 - used);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		used += (size_t)r;
	}
	buf[used] = '\0';
	close(fd);
}

/* Loads out/err from the files and shows them in the test's log (ctest shows it on failure). */
static void load_and_show(void)
{
	slurp(out_path, out, sizeof(out));
	slurp(err_path, err, sizeof(err));
	fprintf(stderr, "---- bench/all stdout ----\n%s---- bench/all stderr ----\n%s----\n", out,
		err);
}

/* The run ended with exit status `want`; says how it ended otherwise. */
static void expect_exit(int status, int want, const char *what)
{
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == want,
		  "%s: %s %d, expected exit status %d", what,
		  WIFEXITED(status) ? "exit status" : "killed by signal",
		  WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), want);
}

/* After a run: nothing mounted, running or left in --dir; the cgroups of weights gone. */
static void expect_nothing_left(void)
{
	int m = mounts_under(M.base, log_mount);
	int p = procs_mentioning(M.base, true);
	int e = entries_in(work);
	const char *cg = strstr(out, "(cgroups ");

	cr_expect_eq(m, 0, "%d mount(s) left under %s", m, M.base);
	cr_expect_eq(p, 0, "%d process(es) of the run left", p);
	cr_expect_eq(e, 0, "%d temp dir(s) left in --dir %s", e, work);
	if (cg) { /* "# 4 groups (cgroups /sys/fs/cgroup/.../cfqfs-weights-PID-wN, ..." */
		char prefix[PATH_MAX];
		const char *s = cg + strlen("(cgroups "), *w = strstr(s, "-wN");

		if (w && (size_t)(w - s) < sizeof(prefix) - 16) {
			static const int ws[] = { 100, 200, 400, 800 };

			for (size_t i = 0; i < 4; i++) {
				struct stat st;

				snprintf(prefix, sizeof(prefix), "%.*s-w%d", (int)(w - s), s, ws[i]);
				cr_expect(stat(prefix, &st) != 0, "cgroup %s left", prefix);
			}
		}
	}
}

/* The line after the one holding `at` (NULL at the end). */
static const char *next_line(const char *at)
{
	const char *nl = strchr(at, '\n');

	return nl ? nl + 1 : NULL;
}

/*
 * Checks one table row "Median  METRIC  CELL CELL ..." where CELL is "-" (does not apply),
 * "n/a" (a missing figure: fails) or "FIGURE (PCT)" with PCT "N.NN%" or "n/a" (baseline 0).
 * Returns the number of cells, or -1 after logging why the row is bad.
 */
static int row_cells(const char *title, const char *row, size_t len)
{
	char buf[1024];
	char *p;
	int cells = 0;

	if (len >= sizeof(buf))
		len = sizeof(buf) - 1;
	memcpy(buf, row, len);
	buf[len] = '\0';
	p = buf + strlen("Median");
	while (*p == ' ')
		p++;
	while (*p && *p != ' ')
		p++; /* the metric name */
	for (;;) {
		char *end;
		double v;

		while (*p == ' ')
			p++;
		if (!*p)
			return cells;
		if (p[0] == '-' && (p[1] == ' ' || p[1] == '\0')) {
			cells++;
			p++;
			continue;
		}
		if (strncmp(p, "n/a", 3) == 0) {
			cr_log_error("%s: missing figure (n/a) in cell %d of: %s", title, cells + 1,
				     buf);
			return -1;
		}
		errno = 0;
		v = strtod(p, &end);
		if (end == p || errno || !isfinite(v)) {
			cr_log_error("%s: no finite figure in cell %d of: %s", title, cells + 1, buf);
			return -1;
		}
		p = end;
		while (*p == ' ')
			p++;
		if (*p != '(') {
			cr_log_error("%s: cell %d has no (%% difference): %s", title, cells + 1, buf);
			return -1;
		}
		p++;
		while (*p == ' ')
			p++;
		if (strncmp(p, "n/a", 3) == 0) {
			p += 3;
		} else {
			v = strtod(p, &end);
			if (end == p || !isfinite(v) || *end != '%') {
				cr_log_error("%s: bad %% difference in cell %d of: %s", title,
					     cells + 1, buf);
				return -1;
			}
			p = end + 1;
		}
		if (*p != ')') {
			cr_log_error("%s: unterminated cell %d of: %s", title, cells + 1, buf);
			return -1;
		}
		p++;
		cells++;
	}
}

/* One experiment's table for one device: present, enough rows, every cell a figure. */
static void expect_table(const struct exp *x, const char *dev, int cols)
{
	char title[128];
	const char *t, *l;
	int rows = 0;

	snprintf(title, sizeof(title), "\n## %s, device=%s", x->name, dev);
	t = strstr(out, title);
	cr_assert(t, "bench/%s printed no table for device=%s", x->name, dev);
	l = next_line(t + 1);
	cr_assert(l && strncmp(l, "median of 1", 11) == 0, "%s: no column header", title + 1);
	for (l = next_line(l); l && strncmp(l, "Median  ", 8) == 0; l = next_line(l)) {
		const char *nl = strchr(l, '\n');
		int c = row_cells(title + 1, l, nl ? (size_t)(nl - l) : strlen(l));

		cr_assert(c >= 0, "%s: bad row (see the log)", title + 1);
		cr_assert_eq(c, cols, "%s: %d cells in a row, %d configurations expected: %.*s",
			     title + 1, c, cols, nl ? (int)(nl - l) : (int)strlen(l), l);
		rows++;
	}
	cr_assert_geq(rows, x->rows, "%s: %d rows, at least %d expected", title + 1, rows,
		      x->rows);
}

/* At least one PNG named EXP-DEV-*.png in outdir, a real one; "# plot:" lines point there. */
static void expect_plot(const struct exp *x, const char *dev)
{
	char prefix[128];
	DIR *d = opendir(outdir);
	struct dirent *de;
	int good = 0;

	cr_assert(d, "opendir %s: %s", outdir, strerror(errno));
	snprintf(prefix, sizeof(prefix), "%s-%s-", x->name, dev);
	while ((de = readdir(d))) {
		char path[PATH_MAX];
		unsigned char sig[8] = { 0 };
		struct stat st;
		int fd;

		if (strncmp(de->d_name, prefix, strlen(prefix)) != 0 ||
		    !strstr(de->d_name, ".png"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", outdir, de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) == 0 && st.st_size > 1000 && read(fd, sig, 8) == 8 &&
		    memcmp(sig, "\x89PNG\r\n\x1a\n", 8) == 0)
			good++;
		else
			cr_log_error("%s is not a PNG of a plot (%lld bytes)", path,
				     (long long)st.st_size);
		close(fd);
	}
	closedir(d);
	cr_expect_geq(good, 1, "no PNG plot %s*.png in %s", prefix, outdir);
}

/* No plot written into the source tree's bench/out during the run (started at t0). */
static void expect_tree_untouched(time_t t0)
{
	char tree[PATH_MAX];
	DIR *d;
	struct dirent *de;

	snprintf(tree, sizeof(tree), "%s/bench/out", CFQFS_SOURCE_DIR);
	d = opendir(tree);
	if (!d)
		return;
	while ((de = readdir(d))) {
		char path[PATH_MAX];
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", tree, de->d_name);
		if (de->d_name[0] != '.' && stat(path, &st) == 0)
			cr_expect(st.st_mtime < t0, "%s written although --out was given", path);
	}
	closedir(d);
}

Test(bench, all_quick, .timeout = 720)
{
	const char *args[] = { "--quick", "--cfqfs", CFQFS_BIN, "--dir", work, "--out", outdir,
			       NULL };
	int status = 0;
	time_t t0;
	long ms0;
	bool ended;
	pid_t pid;

	require_tools();
	t0 = time(NULL);
	ms0 = now_ms();
	pid = start_bench(args);
	ended = finish_bench(pid, RUN_BOUND_MS, &status);
	fprintf(stderr, "bench/all --quick took %.1f s (not asserted: shared machine)\n",
		(now_ms() - ms0) / 1000.0);
	load_and_show();
	expect_nothing_left();
	cr_assert(ended, "bench/all --quick did not finish within %d s", RUN_BOUND_MS / 1000);
	expect_exit(status, 0, "bench/all --quick (stderr above)");
	cr_assert(strstr(out, "### bench/all done in"), "bench/all did not finish its loop");
	for (size_t i = 0; i < N_EXPS; i++) {
		char done[96];

		snprintf(done, sizeof(done), "### bench/%s done in", EXPS[i].name);
		cr_assert(strstr(out, done), "bench/%s did not run to its end", EXPS[i].name);
		for (size_t d = 0; d < 2; d++) {
			expect_table(&EXPS[i], DEVS[d], d ? EXPS[i].cols_none : EXPS[i].cols_hdd);
			expect_plot(&EXPS[i], DEVS[d]);
		}
	}
	for (const char *p = strstr(out, "# plot: "); p; p = strstr(p + 1, "# plot: "))
		cr_expect(strncmp(p + 8, outdir, strlen(outdir)) == 0, "a plot outside --out: %.120s",
			  p);
	cr_expect(!strstr(err, "WARNING"), "a script warned (stderr above)");
	cr_expect(!strstr(err, " failed"), "a measurement failed (stderr above)");
	expect_tree_untouched(t0);
}

/* True once a process of the run's background load (the writer of bench/interactive) runs. */
static bool load_running(void)
{
	char needle[PATH_MAX + 16];
	DIR *d = opendir("/proc");
	struct dirent *de;
	bool hit = false;

	if (!d)
		return false;
	snprintf(needle, sizeof(needle), "--filename=%s/", work);
	while (!hit && (de = readdir(d))) {
		char cmd[8192];

		if (cmdline_of(de->d_name, cmd, sizeof(cmd)))
			hit = strstr(cmd, "--name=writer") && strstr(cmd, needle);
	}
	closedir(d);
	return hit;
}

Test(bench, interrupted_cleans_up, .timeout = 420)
{
	const char *args[] = { "--quick", "--only", "interactive", "--device", "hdd", "--cfqfs",
			       CFQFS_BIN, "--dir", work, "--out", outdir, NULL };
	long deadline = now_ms() + 120000;
	int status = 0;
	bool seen = false, ended;
	pid_t pid;

	require_tools();
	pid = start_bench(args);
	while (!seen && now_ms() < deadline && !wait_for(pid, 0, &status)) {
		seen = load_running() && mounts_under(work, NULL) > 0;
		if (!seen)
			sleep_ms(POLL_MS);
	}
	if (seen)
		kill(-pid, SIGINT); /* what Ctrl-C does: the whole foreground group */
	ended = seen && finish_bench(pid, INT_BOUND_MS, &status);
	if (!seen && run_pgid) {
		kill(-pid, SIGKILL);
		wait_for(pid, 10000, &status);
	}
	load_and_show();
	cr_assert(seen, "the background load of bench/interactive never ran with the mount up");
	expect_nothing_left();
	cr_assert(ended, "bench/all did not stop within %d s of SIGINT", INT_BOUND_MS / 1000);
	expect_exit(status, 130, "bench/all after SIGINT");
	cr_expect(strstr(err, "### bench/all: interrupted"), "bench/all did not report the interrupt");
	/* bench/all passes it on as SIGTERM (its scripts run in the background, ignoring SIGINT) */
	cr_expect(strstr(err, "interactive: terminated"), "the script's trap did not run");
}
