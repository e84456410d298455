/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cgtest.c - temporary cgroups for the integration tests. See cgtest.h for the contract.
 */
#include "cgtest.h"

#include <criterion/criterion.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- registry for cleanup ------------------------------------------------------------------ */

static struct cgt *registry[CGT_MAX];
static bool atexit_done;
static bool handlers_done;
static struct sigaction old_actions[NSIG];
static const int fatal_signals[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGABRT, SIGSEGV,
				     SIGBUS, SIGFPE, SIGILL };

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Async-signal-safe: the readers die with us (PDEATHSIG), so an rmdir is all we can try. */
static void on_fatal_signal(int sig)
{
	int saved = errno;
	pid_t self = getpid();

	for (int i = 0; i < CGT_MAX; i++)
		if (registry[i] && registry[i]->owner == self && registry[i]->dir[0])
			rmdir(registry[i]->dir);
	sigaction(sig, &old_actions[sig], NULL);
	errno = saved;
	raise(sig);
}

static void on_exit_cleanup(void)
{
	cgt_destroy_all();
}

static int register_cg(struct cgt *cg)
{
	int slot = -1;

	if (!atexit_done) {
		atexit(on_exit_cleanup);
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
	for (int i = 0; i < CGT_MAX; i++) {
		if (registry[i] == cg)
			return 0;
		if (!registry[i] && slot < 0)
			slot = i;
	}
	if (slot < 0)
		return -ENOSPC;
	registry[slot] = cg;
	return 0;
}

static void unregister_cg(struct cgt *cg)
{
	for (int i = 0; i < CGT_MAX; i++)
		if (registry[i] == cg)
			registry[i] = NULL;
}

/* ---- small file helpers ------------------------------------------------------------------- */

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	size_t len = strlen(s);
	int ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, s, len) != (ssize_t)len)
		ret = -errno;
	close(fd);
	return ret;
}

/* Reads a small file into buf (NUL-terminated). Returns bytes read or -errno. */
static ssize_t read_small(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, cap - 1);
	if (n < 0)
		n = -errno;
	else
		buf[n] = '\0';
	close(fd);
	return n;
}

bool cgt_exists(const char *dir)
{
	struct stat st;

	return stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

/* ---- finding the hierarchy ---------------------------------------------------------------- */

/* Decodes mountinfo's octal escapes in place. */
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

/* Does the comma-separated list `opts` contain `word`? */
static bool has_word(const char *opts, const char *word)
{
	size_t wl = strlen(word);

	for (const char *p = opts; p && *p;) {
		const char *end = strchr(p, ',');
		size_t l = end ? (size_t)(end - p) : strlen(p);

		if (l == wl && strncmp(p, word, wl) == 0)
			return true;
		p = end ? end + 1 : NULL;
	}
	return false;
}

/* Does the space-separated `list` contain `word`? */
static bool has_token(const char *list, const char *word)
{
	size_t wl = strlen(word);

	for (const char *p = list; *p;) {
		while (*p == ' ' || *p == '\n')
			p++;
		size_t l = strcspn(p, " \n");

		if (l == wl && strncmp(p, word, wl) == 0)
			return true;
		p += l;
	}
	return false;
}

int cgt_find(struct cgt_hier *h)
{
	char v2[PATH_MAX] = "", blkio[PATH_MAX] = "";
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;

	memset(h, 0, sizeof(*h));
	if (!f) {
		snprintf(h->why, sizeof(h->why), "cannot read /proc/self/mountinfo: %s",
			 strerror(errno));
		return -ENOENT;
	}
	while (getline(&line, &cap, f) > 0) {
		/* id parent maj:min root mountpoint opts [optional...] - type source superopts */
		char *save = NULL, *field[64], *mp, *type, *super = NULL;
		int n = 0, sep = -1;

		for (char *tok = strtok_r(line, " \n", &save); tok && n < 64;
		     tok = strtok_r(NULL, " \n", &save)) {
			if (sep < 0 && n >= 6 && strcmp(tok, "-") == 0)
				sep = n;
			field[n++] = tok;
		}
		if (sep < 0 || sep + 1 >= n)
			continue;
		mp = field[4];
		type = field[sep + 1];
		if (sep + 3 < n)
			super = field[sep + 3];
		unescape(mp);
		if (strcmp(type, "cgroup2") == 0 && !v2[0])
			snprintf(v2, sizeof(v2), "%s", mp);
		else if (strcmp(type, "cgroup") == 0 && super && has_word(super, "blkio") &&
			 !blkio[0])
			snprintf(blkio, sizeof(blkio), "%s", mp);
	}
	free(line);
	fclose(f);

	if (v2[0]) {
		char path[PATH_MAX + 32], ctl[512];

		snprintf(path, sizeof(path), "%s/cgroup.controllers", v2);
		h->v2_has_io = read_small(path, ctl, sizeof(ctl)) >= 0 && has_token(ctl, "io");
	}
	if (v2[0] && h->v2_has_io) {
		h->kind = CGT_V2;
		h->line = "v2";
		snprintf(h->root, sizeof(h->root), "%s", v2);
	} else if (blkio[0]) {
		h->kind = CGT_V1_BLKIO;
		h->line = "blkio";
		snprintf(h->root, sizeof(h->root), "%s", blkio);
	} else if (v2[0]) {
		h->kind = CGT_V2;
		h->line = "v2";
		snprintf(h->root, sizeof(h->root), "%s", v2);
	} else {
		snprintf(h->why, sizeof(h->why),
			 "no cgroup2 mount and no v1 blkio hierarchy in /proc/self/mountinfo");
		return -ENOENT;
	}
	return 0;
}

void cgt_cr_require(struct cgt_hier *h)
{
	char probe[PATH_MAX + 64];

	if (geteuid() != 0)
		cr_skip("cgroup tests need root (to create cgroups and move processes)");
	if (cgt_find(h) != 0)
		cr_skip("no usable cgroup hierarchy: %s", h->why);
	snprintf(probe, sizeof(probe), "%s/" CGT_PREFIX "%d-probe", h->root, (int)getpid());
	if (mkdir(probe, 0755) != 0) {
		int e = errno;

		cr_skip("cannot create a cgroup under %s: %s", h->root, strerror(e));
	}
	rmdir(probe);
}

/* ---- create / weight / move / destroy ------------------------------------------------------ */

int cgt_create(const struct cgt_hier *h, const char *suffix, struct cgt *cg)
{
	int ret;

	memset(cg, 0, sizeof(*cg));
	if (h->kind == CGT_NONE || !suffix || !*suffix || strchr(suffix, '/'))
		return -EINVAL;
	cgt_sweep_stale(h);
	snprintf(cg->name, sizeof(cg->name), "/" CGT_PREFIX "%d-%s", (int)getpid(), suffix);
	if (snprintf(cg->dir, sizeof(cg->dir), "%s%s", h->root, cg->name) >= (int)sizeof(cg->dir))
		goto out_inval;
	snprintf(cg->parent, sizeof(cg->parent), "%s", h->root);
	if (mkdir(cg->dir, 0755) != 0) {
		ret = -errno;
		goto out_zero;
	}
	cg->owner = getpid();
	ret = register_cg(cg);
	if (ret != 0) {
		rmdir(cg->dir);
		goto out_zero;
	}
	return 0;
out_inval:
	ret = -EINVAL;
out_zero:
	memset(cg, 0, sizeof(*cg));
	return ret;
}

int cgt_set_weight(const struct cgt_hier *h, struct cgt *cg, unsigned weight)
{
	/* the files in the classifier's order of preference for this hierarchy */
	static const char *const v1_files[] = { "blkio.bfq.weight", "blkio.weight" };
	static const char *const v2_files[] = { "io.bfq.weight", "io.weight" };
	const char *const *files = h->kind == CGT_V2 ? v2_files : v1_files;
	char path[PATH_MAX + 64], val[64];
	int ret = -ENOENT;

	if (weight < 10 || weight > 1000)
		return -EINVAL;
	cg->weight = weight;
	cg->weight_in_file = false;
	cg->weight_file[0] = '\0';
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s", cg->dir, files[i]);
		if (access(path, F_OK) != 0)
			continue;
		if (h->kind == CGT_V2 && i == 1) {
			/* cfqfs maps io.weight w to 10 * sqrt(w): invert that */
			unsigned w = (weight * weight + 50) / 100;

			snprintf(val, sizeof(val), "default %u\n", w ? w : 1);
		} else if (h->kind == CGT_V2) {
			snprintf(val, sizeof(val), "default %u\n", weight);
		} else {
			snprintf(val, sizeof(val), "%u\n", weight);
		}
		ret = write_str(path, val);
		if (ret == 0) {
			cg->weight_in_file = true;
			snprintf(cg->weight_file, sizeof(cg->weight_file), "%s", files[i]);
		}
		/* a file that exists but refuses the value: report it, do not try a lesser one
		 * (cfqfs would read the first file anyway) */
		return ret;
	}
	return ret;
}

void cgt_cr_make(const struct cgt_hier *h, struct cgt *cg, const char *suffix,
		 unsigned weight)
{
	int r = cgt_create(h, suffix, cg);

	cr_assert_eq(r, 0, "cgroup %s under %s: %s", suffix, h->root, strerror(-r));
	r = cgt_set_weight(h, cg, weight);
	cr_assert(r == 0 || r == -ENOENT, "weight of %s: %s", cg->dir, strerror(-r));
}

void cgt_weight_by_rule(struct cgt *cg, unsigned weight)
{
	cg->weight = weight;
	cg->weight_in_file = false;
	cg->weight_file[0] = '\0';
}

int cgt_move(const struct cgt *cg, pid_t pid)
{
	char path[PATH_MAX + 16], num[24];
	int fd, ret = 0, len = 0;
	long v = pid ? (long)pid : (long)getpid();

	/* by hand: snprintf is not async-signal-safe */
	if (strlen(cg->dir) + 14 >= sizeof(path))
		return -ENAMETOOLONG;
	memcpy(path, cg->dir, strlen(cg->dir));
	memcpy(path + strlen(cg->dir), "/cgroup.procs", 14);
	do {
		num[len++] = (char)('0' + v % 10);
		v /= 10;
	} while (v > 0);
	for (int i = 0; i < len / 2; i++) {
		char t = num[i];

		num[i] = num[len - 1 - i];
		num[len - 1 - i] = t;
	}
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, num, (size_t)len) != len)
		ret = -errno;
	close(fd);
	return ret;
}

/* Moves every pid listed in dir/cgroup.procs to parent. Returns how many were listed. */
static int evacuate(const char *dir, const char *parent)
{
	char path[PATH_MAX + 32], to[PATH_MAX + 32], buf[8192];
	ssize_t n;
	int count = 0;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	snprintf(to, sizeof(to), "%s/cgroup.procs", parent);
	n = read_small(path, buf, sizeof(buf));
	if (n <= 0)
		return 0;
	for (char *save = NULL, *tok = strtok_r(buf, "\n", &save); tok;
	     tok = strtok_r(NULL, "\n", &save)) {
		int r = write_str(to, tok);

		count++;
		if (r != 0 && r != -ESRCH)
			fprintf(stderr, "cgtest: cannot move pid %s out of %s: %s\n", tok, dir,
				strerror(-r));
	}
	return count;
}

static int remove_dir(const char *dir, const char *parent)
{
	int ret = 0;

	for (int tries = 0; tries < 200; tries++) {
		if (rmdir(dir) == 0 || errno == ENOENT)
			return 0;
		ret = -errno;
		if (ret != -EBUSY)
			break;
		evacuate(dir, parent);
		sleep_ms(10);
	}
	return ret;
}

int cgt_destroy(struct cgt *cg)
{
	int ret;

	if (!cg->dir[0])
		return 0;
	if (cg->owner != getpid())
		return 0; /* a forked child never removes its parent's cgroups */
	evacuate(cg->dir, cg->parent);
	ret = remove_dir(cg->dir, cg->parent);
	if (ret != 0) {
		fprintf(stderr, "cgtest: cannot remove cgroup %s: %s\n", cg->dir, strerror(-ret));
		return ret;
	}
	unregister_cg(cg);
	memset(cg, 0, sizeof(*cg));
	return 0;
}

void cgt_destroy_all(void)
{
	pid_t self = getpid();

	for (int i = 0; i < CGT_MAX; i++)
		if (registry[i] && registry[i]->owner == self)
			cgt_destroy(registry[i]);
}

void cgt_sweep_stale(const struct cgt_hier *h)
{
	DIR *d = opendir(h->root);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		char dir[PATH_MAX + 256];
		char *end;
		long owner;

		if (strncmp(de->d_name, CGT_PREFIX, strlen(CGT_PREFIX)) != 0)
			continue;
		errno = 0;
		owner = strtol(de->d_name + strlen(CGT_PREFIX), &end, 10);
		if (errno || owner <= 0 || *end != '-')
			continue;
		if (kill((pid_t)owner, 0) == 0 || errno != ESRCH)
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", h->root, de->d_name);
		evacuate(dir, h->root);
		if (remove_dir(dir, h->root) == 0)
			fprintf(stderr, "cgtest: removed stale cgroup %s (owner %ld gone)\n", dir,
				owner);
	}
	closedir(d);
}

int cgt_rules(char *buf, size_t len, struct cgt *const *cgs, size_t n, bool force)
{
	size_t used = strlen(buf);
	int count = 0;

	for (size_t i = 0; i < n; i++) {
		const struct cgt *cg = cgs[i];
		int w;

		if (!cg || !cg->weight || (cg->weight_in_file && !force))
			continue;
		w = snprintf(buf + used, len - used, "\t{ cgroup = \"%s\"; weight = %u; },\n",
			     cg->name, cg->weight);
		if (w < 0 || (size_t)w >= len - used)
			return -ENOSPC;
		used += (size_t)w;
		count++;
	}
	return count;
}
