/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mount.c - integration-test fixture: spawn cfqfs over a temp dir, wait for the mount, tear it
 * down on every exit path. See mount.h for the contract.
 */
#include "mount.h"

#include "chaos.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TMP_PREFIX "cfqfs-it."
#define POLL_MS 10

/* ---- registry for the safety net ---------------------------------------------------------- */

#define MAX_ACTIVE 8
static struct mnt *active[MAX_ACTIVE];
static bool atexit_done;
static bool handlers_done;
static struct sigaction old_actions[NSIG];
static const int fatal_signals[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGABRT, SIGSEGV,
				     SIGBUS, SIGFPE, SIGILL };

static char fuse_reason[256] = "not checked";

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Async-signal-safe: detach the mount and tell the daemon to go. */
static void emergency_unmount(struct mnt *m)
{
	if (m->mounted && umount2(m->mnt, MNT_DETACH) != 0) {
		pid_t p = fork();

		if (p == 0) {
			execlp("fusermount3", "fusermount3", "-u", "-z", m->mnt, (char *)NULL);
			_exit(127);
		}
	}
	if (m->pid > 0 && !m->reaped)
		kill(m->pid, SIGTERM);
}

static void on_fatal_signal(int sig)
{
	int saved = errno;
	pid_t self = getpid();

	for (int i = 0; i < MAX_ACTIVE; i++)
		if (active[i] && active[i]->owner == self)
			emergency_unmount(active[i]);
	sigaction(sig, &old_actions[sig], NULL);
	errno = saved;
	raise(sig);
}

static void on_exit_teardown(void)
{
	pid_t self = getpid();

	for (int i = 0; i < MAX_ACTIVE; i++)
		if (active[i] && active[i]->owner == self)
			mnt_teardown(active[i]); /* unregisters itself */
}

static void register_mount(struct mnt *m)
{
	if (!atexit_done) {
		atexit(on_exit_teardown);
		atexit_done = true;
	}
	if (!handlers_done) {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_fatal_signal;
		sigemptyset(&sa.sa_mask);
		for (size_t i = 0; i < sizeof(fatal_signals) / sizeof(fatal_signals[0]); i++)
			sigaction(fatal_signals[i], &sa, &old_actions[fatal_signals[i]]);
		handlers_done = true;
	}
	for (int i = 0; i < MAX_ACTIVE; i++) {
		if (active[i] == m)
			return;
	}
	for (int i = 0; i < MAX_ACTIVE; i++) {
		if (!active[i]) {
			active[i] = m;
			return;
		}
	}
	fprintf(stderr, "mount fixture: more than %d live mounts; safety net incomplete\n",
		MAX_ACTIVE);
}

static void unregister_mount(struct mnt *m)
{
	for (int i = 0; i < MAX_ACTIVE; i++)
		if (active[i] == m)
			active[i] = NULL;
}

/* ---- /dev/fuse ------------------------------------------------------------------------------ */

bool mnt_fuse_available(void)
{
	int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);

	if (fd < 0) {
		int e = errno;

		snprintf(fuse_reason, sizeof(fuse_reason), "open(/dev/fuse, O_RDWR): %s",
			 strerror(e));
		return false;
	}
	close(fd);
	snprintf(fuse_reason, sizeof(fuse_reason), "available");
	return true;
}

const char *mnt_fuse_unavailable_reason(void)
{
	return fuse_reason;
}

/* ---- mountinfo ------------------------------------------------------------------------------ */

/* Decodes the octal escapes (\040 etc.) of a mountinfo field in place. */
static void unescape(char *s)
{
	char *w = s;

	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '7' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

/*
 * Calls fn(mountpoint, fstype, source, arg) for each line of /proc/self/mountinfo until fn
 * returns true. Returns whether some call returned true.
 */
static bool each_mount(bool (*fn)(const char *mp, const char *type, const char *source, void *arg),
		       void *arg)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;
	bool hit = false;

	if (!f)
		return false;
	while (!hit && getline(&line, &cap, f) > 0) {
		char *save = NULL;
		char *fields[5] = { 0 };
		char *tok = strtok_r(line, " \n", &save);
		int n = 0;

		while (tok && n < 5) {
			fields[n++] = tok;
			if (n < 5)
				tok = strtok_r(NULL, " \n", &save);
		}
		if (n < 5)
			continue;
		/* skip optional fields up to the "-" separator */
		while ((tok = strtok_r(NULL, " \n", &save)) && strcmp(tok, "-") != 0)
			;
		if (!tok)
			continue;
		char *type = strtok_r(NULL, " \n", &save);
		char *source = strtok_r(NULL, " \n", &save);

		if (!type)
			continue;
		unescape(fields[4]);
		if (source)
			unescape(source);
		hit = fn(fields[4], type, source ? source : "", arg);
	}
	free(line);
	fclose(f);
	return hit;
}

static bool is_fuse_type(const char *type)
{
	return strcmp(type, "fuse") == 0 || strncmp(type, "fuse.", 5) == 0 ||
	       strcmp(type, "fuseblk") == 0;
}

static bool match_fuse_mp(const char *mp, const char *type, const char *source, void *arg)
{
	(void)source;
	return is_fuse_type(type) && strcmp(mp, (const char *)arg) == 0;
}

bool mnt_is_fuse_mounted(const char *path)
{
	return each_mount(match_fuse_mp, (void *)path);
}

/* ---- process helpers ---------------------------------------------------------------------- */

bool mnt_wait_bounded(pid_t pid, int timeout_ms, int *status)
{
	long deadline = now_ms() + timeout_ms;

	for (;;) {
		pid_t r = waitpid(pid, status, WNOHANG);

		if (r == pid)
			return true;
		if (r < 0 && errno != EINTR)
			return false;
		if (now_ms() >= deadline)
			return false;
		sleep_ms(POLL_MS);
	}
}

/* Runs a helper program quietly; returns true if it exited 0 within timeout_ms. */
static bool run_quiet(const char *const *argv, int timeout_ms)
{
	int status;

	if (mnt_run(argv, timeout_ms, &status, NULL, 0, NULL, 0) != 0)
		return false;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static int read_fd_into(int fd, char *buf, size_t size)
{
	size_t used = 0;

	if (!buf || size == 0)
		return 0;
	if (lseek(fd, 0, SEEK_SET) < 0)
		return -errno;
	while (used + 1 < size) {
		ssize_t n = read(fd, buf + used, size - 1 - used);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		used += (size_t)n;
	}
	buf[used] = '\0';
	return 0;
}

int mnt_run(const char *const *argv, int timeout_ms, int *status, char *out, size_t outsz,
	    char *err, size_t errsz)
{
	char tmpl_out[] = "/tmp/cfqfs-run-out.XXXXXX";
	char tmpl_err[] = "/tmp/cfqfs-run-err.XXXXXX";
	int fo = mkostemp(tmpl_out, O_CLOEXEC);
	int fe = fo >= 0 ? mkostemp(tmpl_err, O_CLOEXEC) : -1;
	int ret = 0;
	pid_t pid;

	if (fo < 0 || fe < 0) {
		ret = -errno;
		goto out_close;
	}
	unlink(tmpl_out);
	unlink(tmpl_err);
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		ret = -errno;
		goto out_close;
	}
	if (pid == 0) {
		int nul = open("/dev/null", O_RDONLY);

		if (nul >= 0)
			dup2(nul, STDIN_FILENO);
		dup2(fo, STDOUT_FILENO);
		dup2(fe, STDERR_FILENO);
		execvp(argv[0], (char *const *)argv);
		dprintf(STDERR_FILENO, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (!mnt_wait_bounded(pid, timeout_ms, status)) {
		kill(pid, SIGKILL);
		waitpid(pid, status, 0);
		ret = -ETIMEDOUT;
	}
	read_fd_into(fo, out, outsz);
	read_fd_into(fe, err, errsz);
out_close:
	if (fe >= 0)
		close(fe);
	if (fo >= 0)
		close(fo);
	return ret;
}

/* ---- tree removal ------------------------------------------------------------------------- */

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

/* Removes a tree without crossing into other filesystems (a live mount is never emptied). */
static void rm_tree(const char *path)
{
	nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

/* ---- stale sweep ---------------------------------------------------------------------------- */

/* Parses the owner pid out of ".../cfqfs-it.<pid>.XXXXXX[/...]"; 0 if not ours. */
static pid_t owner_of(const char *path)
{
	const char *p = strstr(path, "/" TMP_PREFIX);
	long v;
	char *end;

	if (!p || strncmp(path, "/tmp/", 5) != 0)
		return 0;
	p += 1 + strlen(TMP_PREFIX);
	errno = 0;
	v = strtol(p, &end, 10);
	if (errno || end == p || *end != '.' || v <= 0)
		return 0;
	return (pid_t)v;
}

static bool owner_dead(pid_t pid)
{
	return kill(pid, 0) != 0 && errno == ESRCH;
}

static bool detach_if_stale(const char *mp, const char *type, const char *source, void *arg)
{
	pid_t owner = owner_of(mp);

	(void)source;
	(void)arg;
	if (is_fuse_type(type) && owner > 0 && owner_dead(owner)) {
		if (umount2(mp, MNT_DETACH) != 0) {
			const char *argv[] = { "fusermount3", "-u", "-z", mp, NULL };

			run_quiet(argv, 5000);
		}
		fprintf(stderr, "mount fixture: detached stale mount %s (owner %d gone)\n", mp,
			(int)owner);
	}
	return false;
}

void mnt_sweep_stale(void)
{
	DIR *d;
	struct dirent *de;

	each_mount(detach_if_stale, NULL);
	d = opendir("/tmp");
	if (!d)
		return;
	while ((de = readdir(d))) {
		char path[PATH_MAX];
		char mp[PATH_MAX + 8];
		pid_t owner;

		if (strncmp(de->d_name, TMP_PREFIX, strlen(TMP_PREFIX)) != 0)
			continue;
		snprintf(path, sizeof(path), "/tmp/%s", de->d_name);
		owner = owner_of(path);
		if (owner <= 0 || !owner_dead(owner))
			continue;
		snprintf(mp, sizeof(mp), "%s/mnt", path);
		if (mnt_is_fuse_mounted(mp))
			continue;
		rm_tree(path);
	}
	closedir(d);
}

/* ---- setup / teardown ------------------------------------------------------------------- */

int mnt_prepare(struct mnt *m)
{
	char tmpl[64];
	char real[PATH_MAX];
	int ret = 0;

	memset(m, 0, sizeof(*m));
	mnt_sweep_stale();
	snprintf(tmpl, sizeof(tmpl), "/tmp/" TMP_PREFIX "%d.XXXXXX", (int)getpid());
	if (!mkdtemp(tmpl))
		return -errno;
	errno = 0;
	if (!realpath(tmpl, real) || strlen(real) >= sizeof(m->base)) {
		ret = errno ? -errno : -ENAMETOOLONG;
		rmdir(tmpl);
		return ret;
	}
	memcpy(m->base, real, strlen(real) + 1);
	snprintf(m->src, sizeof(m->src), "%s/src", m->base);
	snprintf(m->mnt, sizeof(m->mnt), "%s/mnt", m->base);
	snprintf(m->log, sizeof(m->log), "%s/daemon.log", m->base);
	/* Other uids (multi-user tests) must be able to walk to the mount. */
	if (chmod(m->base, 0755) != 0 || mkdir(m->src, 0755) != 0 || mkdir(m->mnt, 0755) != 0 ||
	    chmod(m->src, 0755) != 0) {
		ret = -errno;
		rm_tree(m->base);
		m->base[0] = '\0';
	}
	return ret;
}

static bool mounted_and_answering(struct mnt *m)
{
	struct stat st;

	if (!mnt_is_fuse_mounted(m->mnt))
		return false;
	/* blocks until the daemon has answered INIT and GETATTR of the root */
	if (stat(m->mnt, &st) != 0)
		return false;
	m->dev = st.st_dev;
	return true;
}

int mnt_start(struct mnt *m, const char *const *extra_args)
{
	const char *argv[64];
	size_t n = 0;
	long deadline;
	int logfd;
	pid_t parent = getpid();
	int ret;

	argv[n++] = CFQFS_BIN;
	argv[n++] = "-f";
	for (size_t i = 0; extra_args && extra_args[i]; i++) {
		if (n + 3 >= sizeof(argv) / sizeof(argv[0]))
			return -E2BIG;
		argv[n++] = extra_args[i];
	}
	argv[n++] = m->src;
	argv[n++] = m->mnt;
	argv[n] = NULL;

	logfd = open(m->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (logfd < 0)
		return -errno;
	dprintf(logfd, "== cfqfs");
	for (size_t i = 1; i < n; i++)
		dprintf(logfd, " %s", argv[i]);
	dprintf(logfd, "\n");

	fflush(NULL);
	m->owner = parent;
	m->reaped = false;
	m->killed = false;
	m->pid = fork();
	if (m->pid < 0) {
		ret = -errno;
		m->pid = 0;
		close(logfd);
		return ret;
	}
	if (m->pid == 0) {
		int nul = open("/dev/null", O_RDONLY);

		/* own group: a group kill of the test leaves the daemon to PDEATHSIG's SIGTERM */
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(126);
		if (nul >= 0)
			dup2(nul, STDIN_FILENO);
		dup2(logfd, STDOUT_FILENO);
		dup2(logfd, STDERR_FILENO);
		for (size_t i = 0; i < sizeof(fatal_signals) / sizeof(fatal_signals[0]); i++)
			signal(fatal_signals[i], SIG_DFL);
		execv(argv[0], (char *const *)argv);
		dprintf(STDERR_FILENO, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(logfd);
	register_mount(m);

	deadline = now_ms() + MNT_MOUNT_TIMEOUT_MS;
	for (;;) {
		pid_t r = waitpid(m->pid, &m->status, WNOHANG);

		if (r == m->pid) {
			m->reaped = true;
			ret = -ECHILD;
			goto out_fail;
		}
		if (mounted_and_answering(m)) {
			m->mounted = true;
			return 0;
		}
		if (now_ms() >= deadline)
			break;
		sleep_ms(POLL_MS);
	}
	kill(m->pid, SIGKILL);
	waitpid(m->pid, &m->status, 0);
	m->reaped = true;
	m->killed = true;
	ret = -ETIMEDOUT;
out_fail:
	/* it may have mounted before dying: do not leave that behind; keep the log */
	if (mnt_is_fuse_mounted(m->mnt))
		umount2(m->mnt, MNT_DETACH);
	m->mounted = false;
	unregister_mount(m);
	return ret;
}

int mnt_setup(struct mnt *m, const char *const *extra_args)
{
	int ret = mnt_prepare(m);

	if (ret != 0)
		return ret;
	return mnt_start(m, extra_args);
}

static void abort_connection(struct mnt *m)
{
	char path[96];
	int fd;

	if (m->dev == 0)
		return;
	snprintf(path, sizeof(path), "/sys/fs/fuse/connections/%u/abort", minor(m->dev));
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (write(fd, "1", 1) != 1)
		fprintf(stderr, "mount fixture: %s: %s\n", path, strerror(errno));
	close(fd);
}

/*
 * Closes this process's descriptors that point into the mount: a test that failed half-way
 * leaves them open, and they would keep the mount busy. Returns how many were closed.
 */
static int close_fds_under(const char *mp)
{
	DIR *d = opendir("/proc/self/fd");
	size_t len = strlen(mp);
	struct dirent *de;
	int closed = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char link[64], target[PATH_MAX];
		ssize_t n;
		int fd = atoi(de->d_name);

		if (de->d_name[0] == '.' || fd == dirfd(d))
			continue;
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		n = readlink(link, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		if (strncmp(target, mp, len) == 0 && (target[len] == '/' || target[len] == '\0')) {
			close(fd);
			closed++;
		}
	}
	closedir(d);
	return closed;
}

/* Unmounts and reaps the daemon; keeps m->base. Idempotent. */
static void stop_daemon(struct mnt *m)
{
	if (m->owner != 0 && m->owner != getpid())
		return;
	if (m->pid > 0 && !m->reaped) {
		if (mnt_is_fuse_mounted(m->mnt)) {
			const char *fu[] = { "fusermount3", "-u", m->mnt, NULL };
			const char *ul[] = { "umount", "-l", m->mnt, NULL };

			if (!run_quiet(fu, 10000) || mnt_is_fuse_mounted(m->mnt)) {
				int n = close_fds_under(m->mnt);

				if (n > 0)
					fprintf(stderr, "mount fixture: closed %d descriptor(s) left "
							"open in %s\n", n, m->mnt);
			}
			if (mnt_is_fuse_mounted(m->mnt) &&
			    (!run_quiet(fu, 10000) || mnt_is_fuse_mounted(m->mnt))) {
				fprintf(stderr, "mount fixture: fusermount3 -u %s failed (busy?), "
						"umount -l and abort the connection\n", m->mnt);
				if (!run_quiet(ul, 10000))
					umount2(m->mnt, MNT_DETACH);
				/* open descriptors keep a lazily detached fuse sb (and the daemon)
				 * alive; aborting the connection ends both */
				if (!mnt_wait_bounded(m->pid, 500, &m->status))
					abort_connection(m);
				else
					m->reaped = true;
			}
		}
		if (!m->reaped && !mnt_wait_bounded(m->pid, MNT_EXIT_TIMEOUT_MS, &m->status)) {
			fprintf(stderr, "mount fixture: daemon %d still running after unmount, "
					"SIGKILL\n", (int)m->pid);
			kill(m->pid, SIGKILL);
			waitpid(m->pid, &m->status, 0);
			m->killed = true;
		}
		m->reaped = true;
	}
	if (m->base[0] && mnt_is_fuse_mounted(m->mnt))
		umount2(m->mnt, MNT_DETACH);
	m->mounted = m->base[0] && mnt_is_fuse_mounted(m->mnt);
	m->unmount_failed = m->mounted;
	unregister_mount(m);
}

void mnt_teardown(struct mnt *m)
{
	if (m->owner != 0 && m->owner != getpid())
		return; /* a forked child must never tear down its parent's mount */
	stop_daemon(m);
	if (m->base[0] && !m->mounted) {
		rm_tree(m->base);
		m->base[0] = '\0';
	}
}

bool mnt_exited_ok(const struct mnt *m)
{
	return m->reaped && !m->killed && WIFEXITED(m->status) && WEXITSTATUS(m->status) == 0;
}

const char *mnt_status_str(const struct mnt *m, char *buf, size_t len)
{
	if (m->pid <= 0)
		snprintf(buf, len, "never started");
	else if (!m->reaped)
		snprintf(buf, len, "still running (pid %d)", (int)m->pid);
	else if (WIFEXITED(m->status))
		snprintf(buf, len, "exited %d%s", WEXITSTATUS(m->status),
			 m->killed ? " (after SIGKILL)" : "");
	else if (WIFSIGNALED(m->status))
		snprintf(buf, len, "killed by signal %d%s", WTERMSIG(m->status),
			 m->killed ? " (fixture's SIGKILL after timeout)" : "");
	else
		snprintf(buf, len, "wait status 0x%x", (unsigned)m->status);
	return buf;
}

const char *mnt_bin(void)
{
	const char *env = getenv("CFQFS_TEST_BIN");

	return env && *env ? env : CFQFS_BIN_BUILT;
}

/* ---- paths and files ------------------------------------------------------------------------ */

/* Joins into the next ring slot. Built with memcpy: `dir` lives in *m too, which snprintf's
 * restrict rules (and gcc -O2's truncation checks) cannot prove apart from the slot. Paths
 * longer than PATH_MAX - 1 are cut, which a test would then see as ENOENT. */
static const char *join(struct mnt *m, const char *dir, const char *rel)
{
	char *slot = m->ring[m->ring_next++ % MNT_PATH_RING];
	size_t n = strnlen(dir, PATH_MAX - 1), r = rel ? strlen(rel) : 0;

	memmove(slot, dir, n);
	if (r && n < PATH_MAX - 1) {
		slot[n++] = '/';
		if (r > PATH_MAX - 1 - n)
			r = PATH_MAX - 1 - n;
		memcpy(slot + n, rel, r);
		n += r;
	}
	slot[n] = '\0';
	return slot;
}

const char *mnt_path(struct mnt *m, const char *rel)
{
	return join(m, m->mnt, rel);
}

const char *src_path(struct mnt *m, const char *rel)
{
	return join(m, m->src, rel);
}

const char *base_path(struct mnt *m, const char *rel)
{
	return join(m, m->base, rel);
}

void mnt_dump_log(const struct mnt *m)
{
	char buf[16384];
	ssize_t n;
	int fd;

	if (!m->base[0]) {
		fprintf(stderr, "---- daemon log: (temp dir already removed)\n");
		return;
	}
	fd = open(m->log, O_RDONLY | O_CLOEXEC);
	fprintf(stderr, "---- daemon log %s ----\n", m->log);
	if (fd < 0) {
		fprintf(stderr, "(cannot open: %s)\n", strerror(errno));
	} else {
		off_t size = lseek(fd, 0, SEEK_END);

		/* the tail is what explains a failure */
		if (size > (off_t)sizeof(buf))
			lseek(fd, size - (off_t)sizeof(buf), SEEK_SET);
		else
			lseek(fd, 0, SEEK_SET);
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			fwrite(buf, 1, (size_t)n, stderr);
		close(fd);
	}
	fprintf(stderr, "---- end of daemon log ----\n");
}

int mnt_put(const char *path, const void *buf, size_t len, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	size_t done = 0;
	int ret = 0;

	if (fd < 0)
		return -errno;
	while (done < len) {
		ssize_t n = write(fd, (const char *)buf + done, len - done);

		if (n < 0) {
			ret = -errno;
			goto out_close;
		}
		done += (size_t)n;
	}
out_close:
	if (close(fd) != 0 && ret == 0)
		ret = -errno;
	return ret;
}

ssize_t mnt_get(const char *path, void *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t done = 0;
	ssize_t ret;

	if (fd < 0)
		return -errno;
	while (done < cap) {
		ssize_t n = read(fd, (char *)buf + done, cap - done);

		if (n < 0) {
			ret = -errno;
			goto out_close;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	ret = (ssize_t)done;
out_close:
	close(fd);
	return ret;
}

int mnt_fork_run(int (*fn)(void *), void *arg, int timeout_ms)
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int code = fn(arg);

		fflush(NULL);
		_exit(code);
	}
	if (!mnt_wait_bounded(pid, timeout_ms, &status)) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		return -ETIMEDOUT;
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}

/* ---- Criterion glue ------------------------------------------------------------------------ */

void mnt_cr_prepare(struct mnt *m)
{
	int ret;

	umask(022);
	if (!mnt_fuse_available())
		cr_skip("integration test needs FUSE; /dev/fuse unavailable: %s",
			mnt_fuse_unavailable_reason());
	mnt_sweep_stale();
	ret = mnt_prepare(m);
	cr_assert_eq(ret, 0, "cannot make the temp dirs: %s", strerror(-ret));
}

void mnt_cr_setup(struct mnt *m, const char *const *extra_args)
{
	int ret;

	umask(022);
	if (!mnt_fuse_available())
		cr_skip("integration test needs FUSE; /dev/fuse unavailable: %s",
			mnt_fuse_unavailable_reason());
	ret = mnt_prepare(m);
	cr_assert_eq(ret, 0, "cannot make the temp dirs: %s", strerror(-ret));
	mnt_cr_start(m, extra_args);
}

void mnt_cr_start(struct mnt *m, const char *const *extra_args)
{
	char st[64];
	int ret;

	if (!mnt_fuse_available())
		cr_skip("integration test needs FUSE; /dev/fuse unavailable: %s",
			mnt_fuse_unavailable_reason());
	ret = mnt_start(m, extra_args);
	if (ret != 0) {
		mnt_dump_log(m);
		mnt_status_str(m, st, sizeof(st));
		mnt_teardown(m); /* a failed .init gets no .fini */
		cr_assert_fail("starting %s failed: %s (daemon %s)", CFQFS_BIN, strerror(-ret), st);
	}
}

void mnt_cr_teardown(struct mnt *m)
{
	char st[64];
	bool started = m->pid > 0 && !m->reaped;

	if (m->owner != 0 && m->owner != getpid())
		return;
	stop_daemon(m);
	if (started && !mnt_exited_ok(m)) {
		mnt_dump_log(m);
		fprintf(stderr, "mount fixture: daemon %s\n", mnt_status_str(m, st, sizeof(st)));
	}
	mnt_teardown(m);
}

void mnt_cr_finish(struct mnt *m)
{
	char st[64];
	char mp[PATH_MAX];
	bool ok;

	snprintf(mp, sizeof(mp), "%s", m->mnt);
	stop_daemon(m);
	ok = mnt_exited_ok(m);
	if (!ok)
		mnt_dump_log(m);
	mnt_status_str(m, st, sizeof(st));
	mnt_teardown(m);
	cr_assert(!mnt_is_fuse_mounted(mp), "%s is still mounted after teardown", mp);
	cr_assert(ok, "daemon did not exit cleanly after unmount: %s", st);
}

/* The whole daemon log, NUL-terminated, in a buffer the caller frees; NULL if unreadable. */
static char *log_text(const struct mnt *m)
{
	FILE *f = fopen(m->log, "re");
	size_t len = 0, cap = 1 << 16;
	char *buf = malloc(cap);

	if (!f || !buf)
		goto fail;
	for (size_t n; (n = fread(buf + len, 1, cap - len - 1, f)) > 0;) {
		len += n;
		if (cap - len - 1 == 0) {
			char *bigger = realloc(buf, cap * 2);

			if (!bigger)
				goto fail;
			buf = bigger;
			cap *= 2;
		}
	}
	fclose(f);
	buf[len] = '\0';
	return buf;
fail:
	if (f)
		fclose(f);
	free(buf);
	return NULL;
}

unsigned mnt_log_count(const struct mnt *m, const char *text)
{
	char *buf = log_text(m);
	unsigned c = 0;

	for (char *p = buf; p && (p = strstr(p, text)); p += strlen(text))
		c++;
	free(buf);
	return c;
}

void mnt_log_reloads(const struct mnt *m, unsigned *reloaded, unsigned *kept, char *err,
		     size_t errcap)
{
	char *buf = log_text(m), *save = NULL;

	*reloaded = *kept = 0;
	for (char *l = buf ? strtok_r(buf, "\n", &save) : NULL; l; l = strtok_r(NULL, "\n", &save)) {
		if (strstr(l, "configuration reloaded")) {
			(*reloaded)++;
		} else if (strstr(l, "keeping the running configuration")) {
			(*kept)++;
			if (err)
				snprintf(err, errcap, "%s", l);
		}
	}
	free(buf);
}

uint64_t mnt_cr_queued(struct mnt *m, unsigned *groups)
{
	static char text[1 << 16];
	unsigned n_groups = 0;
	uint64_t q = 0;
	ssize_t n = mnt_get(mnt_path(m, ".cfqfs/io.stat"), text, sizeof(text) - 1);

	cr_assert_geq(n, 0, "read io.stat: %s", strerror((int)-n));
	text[n] = '\0';
	cr_assert_eq(ch_iostat_queued(text, &n_groups, &q), 0, "io.stat unparsable:\n%s", text);
	if (groups)
		*groups = n_groups;
	return q;
}

void mnt_cr_put_conf(struct mnt *m, const char *conf_text)
{
	char tmp[PATH_MAX], conf[PATH_MAX];
	int r;

	snprintf(tmp, sizeof(tmp), "%s", base_path(m, "cfqfs.conf.tmp"));
	snprintf(conf, sizeof(conf), "%s", base_path(m, "cfqfs.conf"));
	r = mnt_put(tmp, conf_text, strlen(conf_text), 0644);
	cr_assert_eq(r, 0, "writing %s: %s", tmp, strerror(-r));
	cr_assert_eq(rename(tmp, conf), 0, "rename to %s: %s", conf, strerror(errno));
}

bool mnt_cr_reload(struct mnt *m, const char *conf_text, char *err, size_t errcap)
{
	unsigned ok0, kept0, ok, kept;
	struct timespec t0, t;

	mnt_log_reloads(m, &ok0, &kept0, NULL, 0);
	mnt_cr_put_conf(m, conf_text);
	cr_assert_eq(kill(m->pid, SIGHUP), 0, "SIGHUP: %s", strerror(errno));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		mnt_log_reloads(m, &ok, &kept, err, errcap);
		if (ok + kept > ok0 + kept0)
			return ok > ok0;
		clock_gettime(CLOCK_MONOTONIC, &t);
		cr_assert_lt(t.tv_sec - t0.tv_sec, MNT_RELOAD_TIMEOUT_S,
			     "no answer to SIGHUP in the daemon log after %d s", MNT_RELOAD_TIMEOUT_S);
		usleep(5000);
	}
}
