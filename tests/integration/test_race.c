/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * race: a directory of SOURCE swapped for a symlink pointing outside SOURCE while clients work
 * inside it through the mount. The daemon must never follow the link: nothing outside SOURCE
 * is read, written, created or listed.
 *
 * A swapper process behind the mount (directly in SOURCE) exchanges SOURCE/d, a real
 * directory, with SOURCE/lnk, a symlink "../../canary", as fast as it can: alternately with
 * one renameat2(RENAME_EXCHANGE) and with three plain renames (d -> d.tmp, lnk -> d,
 * d.tmp -> lnk), so clients also meet moments where d does not exist. Clients (through the
 * mount, entry and attribute timeouts 0 so every path walk asks the daemon) open, create,
 * read, rewrite, rename, unlink, mkdir/rmdir and list inside d, by path and through a held
 * directory descriptor.
 *
 * Layout (as in it_hostile): SOURCE = base/s/src, MOUNTPOINT = base/m1/m2/mnt, canary =
 * base/canary. Followed from SOURCE, the link leads to the canary; followed by a client through
 * the mount it leads to base/m1/canary, which does not exist, so a client never reaches the
 * canary by itself and anything that touches it was the daemon.
 *
 * The canary directory holds "secret" (CANARY text) and "canary-only". Its atimes are set an
 * hour before the mtimes first, so under relatime any read or listing of them updates atime.
 * Afterwards: listing, content, size, mtime, atime and ctime of both are unchanged, and no
 * client read or listing through the mount ever returned the canary text or "canary-only".
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "chaos.h"
#include "mount.h"

#define RACE_S 10.0	/* [s] of swapping */
#define NCLIENTS 4
#define CANARY "CANARY-3f9c2 outside SOURCE, never to be read through the mount\n"
#define INSIDE "inside SOURCE\n"

static struct mnt M;

/* Shared with the children; each writes its own entry only. */
struct race_slot {
	char msg[200];		/* first unexpected result */
	unsigned long ok;	/* operations that succeeded */
	unsigned long raced;	/* failed with an errno the swap explains */
	unsigned long swaps;	/* swapper: exchanges done */
};
static struct race_slot *SL;
static pid_t PIDS[NCLIENTS + 1];

static void setup(void)
{
	static const char *const args[] = { "-o", "entry_timeout=0,attr_timeout=0", NULL };

	umask(022);
	if (!mnt_fuse_available())
		cr_skip("/dev/fuse unavailable: %s", mnt_fuse_unavailable_reason());
	cr_assert_eq(mnt_prepare(&M), 0, "mnt_prepare");
	const char *dirs[] = { "s", "s/src", "m1", "m1/m2", "m1/m2/mnt", "canary", "s/src/d" };
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		cr_assert_eq(mkdir(base_path(&M, dirs[i]), 0755), 0, "mkdir %s: %s", dirs[i],
			     strerror(errno));
	cr_assert_eq(mnt_put(base_path(&M, "canary/secret"), CANARY, strlen(CANARY), 0666), 0);
	cr_assert_eq(mnt_put(base_path(&M, "canary/canary-only"), CANARY, strlen(CANARY), 0666),
		     0);
	cr_assert_eq(mnt_put(base_path(&M, "s/src/d/secret"), INSIDE, strlen(INSIDE), 0666), 0);
	cr_assert_eq(symlink("../../canary", base_path(&M, "s/src/lnk")), 0);
	snprintf(M.src, sizeof(M.src), "%s", base_path(&M, "s/src"));
	snprintf(M.mnt, sizeof(M.mnt), "%s", base_path(&M, "m1/m2/mnt"));
	mnt_cr_start(&M, args);
}

static void teardown(void)
{
	for (int i = 0; i <= NCLIENTS; i++)
		if (PIDS[i] > 0) {
			kill(PIDS[i], SIGKILL);
			waitpid(PIDS[i], NULL, 0);
			PIDS[i] = 0;
		}
	mnt_cr_teardown(&M);
	if (SL)
		munmap(SL, sizeof(*SL) * (NCLIENTS + 1));
	SL = NULL;
}

TestSuite(race, .init = setup, .fini = teardown, .timeout = 90);

/* ---- children (report through their slot and exit code, never Criterion) ------------------ */

static int swapper(const char *src, struct race_slot *s, double until)
{
	int dfd = open(src, O_RDONLY | O_DIRECTORY);

	if (dfd < 0) {
		snprintf(s->msg, sizeof(s->msg), "open SOURCE: %s", strerror(errno));
		return 1;
	}
	while (ch_now() < until) {
		if (s->swaps % 2 == 0) {
			if (renameat2(dfd, "lnk", dfd, "d", RENAME_EXCHANGE) != 0)
				goto fail;
		} else {
			/* d is the link now: link -> d.tmp (d missing), dir -> d, link -> lnk */
			if (renameat(dfd, "d", dfd, "d.tmp") || renameat(dfd, "lnk", dfd, "d") ||
			    renameat(dfd, "d.tmp", dfd, "lnk"))
				goto fail;
		}
		s->swaps++;
	}
	/* leave d a directory */
	if (s->swaps % 2 && renameat2(dfd, "lnk", dfd, "d", RENAME_EXCHANGE) != 0)
		goto fail;
	close(dfd);
	return 0;
fail:
	snprintf(s->msg, sizeof(s->msg), "swap %lu: %s", s->swaps, strerror(errno));
	close(dfd);
	return 1;
}

/* An errno the swap explains: d missing, d a link (the client follows it to base/m1/canary,
 * which does not exist, or refuses it), an inode gone or an entry made by the other state. */
static bool raced(int e)
{
	return e == ENOENT || e == ENOTDIR || e == ELOOP || e == ESTALE || e == EEXIST ||
	       e == ENOTEMPTY;
}

struct cl {
	struct race_slot *s;
	const char *what;
};

/* Counts the outcome of one call; false (and the message set) for an unexpected errno. */
static bool outcome(struct cl *c, long r, const char *what)
{
	int e = errno;

	if (r >= 0) {
		c->s->ok++;
		return true;
	}
	if (raced(e)) {
		c->s->raced++;
		return true;
	}
	snprintf(c->s->msg, sizeof(c->s->msg), "%s: unexpected %s", what, strerrorname_np(e));
	return false;
}

static bool is_canary(const char *buf, ssize_t n)
{
	return n > 0 && memmem(buf, (size_t)n, "CANARY", 6) != NULL;
}

/* Reads all of fd from 0; false if it returned canary text. */
static bool read_clean(struct cl *c, int fd, const char *what)
{
	char buf[256];
	ssize_t n = pread(fd, buf, sizeof(buf), 0);

	if (is_canary(buf, n)) {
		snprintf(c->s->msg, sizeof(c->s->msg), "%s returned the canary", what);
		return false;
	}
	return outcome(c, n, what);
}

static bool list_clean(struct cl *c, DIR *d, const char *what)
{
	struct dirent *de;

	while ((de = readdir(d)))
		if (!strcmp(de->d_name, "canary-only")) {
			snprintf(c->s->msg, sizeof(c->s->msg), "%s listed the canary dir", what);
			return false;
		}
	return true;
}

static int client(const char *mnt, unsigned id, struct race_slot *s, double until)
{
	struct cl c = { .s = s };
	char d[PATH_MAX], secret[PATH_MAX], mine[PATH_MAX], moved[PATH_MAX], sub[PATH_MAX];
	char name[32], data[64];
	int len = snprintf(data, sizeof(data), "client %u data\n", id);

	snprintf(d, sizeof(d), "%s/d", mnt);
	snprintf(secret, sizeof(secret), "%s/secret", d);
	snprintf(mine, sizeof(mine), "%s/c%u", d, id);
	snprintf(moved, sizeof(moved), "%s/c%u.r", d, id);
	snprintf(sub, sizeof(sub), "%s/sub%u", d, id);
	snprintf(name, sizeof(name), "h%u", id);
	while (ch_now() < until) {
		int fd;
		DIR *dir;

		/* by path */
		fd = open(secret, O_RDONLY);
		if (!outcome(&c, fd, "open d/secret"))
			return 1;
		if (fd >= 0) {
			bool clean = read_clean(&c, fd, "read d/secret");
			close(fd);
			if (!clean)
				return 1;
		}
		/* rewriting the inside file's own bytes: harmless there, visible on the canary */
		fd = open(secret, O_WRONLY);
		if (!outcome(&c, fd, "open d/secret for writing"))
			return 1;
		if (fd >= 0) {
			bool good = outcome(&c, pwrite(fd, INSIDE, strlen(INSIDE), 0), "write "
					    "d/secret");
			close(fd);
			if (!good)
				return 1;
		}
		fd = open(mine, O_RDWR | O_CREAT, 0644);
		if (!outcome(&c, fd, "create d/cN"))
			return 1;
		if (fd >= 0) {
			bool good = outcome(&c, pwrite(fd, data, (size_t)len, 0), "write d/cN") &&
				    read_clean(&c, fd, "read d/cN");
			close(fd);
			if (!good)
				return 1;
		}
		if (!outcome(&c, rename(mine, moved), "rename d/cN") ||
		    !outcome(&c, unlink(moved), "unlink d/cN.r") ||
		    !outcome(&c, unlink(mine), "unlink d/cN") ||
		    !outcome(&c, mkdir(sub, 0755), "mkdir d/subN") ||
		    !outcome(&c, rmdir(sub), "rmdir d/subN"))
			return 1;
		dir = opendir(d);
		if (!outcome(&c, dir ? 0 : -1, "opendir d"))
			return 1;
		if (dir) {
			bool clean = list_clean(&c, dir, "readdir d");
			int dfd = dirfd(dir);

			/* through the held descriptor, whatever d has become since */
			if (clean) {
				fd = openat(dfd, "secret", O_RDONLY);
				clean = outcome(&c, fd, "openat secret");
				if (clean && fd >= 0) {
					clean = read_clean(&c, fd, "read secret via dirfd");
					close(fd);
				}
			}
			if (clean) {
				fd = openat(dfd, name, O_RDWR | O_CREAT, 0644);
				clean = outcome(&c, fd, "create via dirfd");
				if (fd >= 0)
					close(fd);
			}
			clean = clean && outcome(&c, unlinkat(dfd, name, 0), "unlink via dirfd") &&
				outcome(&c, mkdirat(dfd, name, 0755), "mkdir via dirfd") &&
				outcome(&c, unlinkat(dfd, name, AT_REMOVEDIR), "rmdir via dirfd");
			closedir(dir);
			if (!clean)
				return 1;
		}
	}
	return 0;
}

/* ---- the test -------------------------------------------------------------------------- */

struct snap {
	struct stat dir, secret, only;
	char listing[256];
	char content[256];
};

static void stat_all(struct snap *s)
{
	cr_assert_eq(stat(base_path(&M, "canary"), &s->dir), 0);
	cr_assert_eq(stat(base_path(&M, "canary/secret"), &s->secret), 0);
	cr_assert_eq(stat(base_path(&M, "canary/canary-only"), &s->only), 0);
}

/* Listing (in readdir order, stable for an unchanged directory) and content. */
static void snapshot(struct snap *s)
{
	DIR *d;
	struct dirent *de;
	ssize_t n;

	s->listing[0] = '\0';
	d = opendir(base_path(&M, "canary"));
	cr_assert_not_null(d);
	while ((de = readdir(d))) {
		size_t l = strlen(s->listing);
		snprintf(s->listing + l, sizeof(s->listing) - l, "%s%s", l ? "," : "", de->d_name);
	}
	closedir(d);
	n = mnt_get(base_path(&M, "canary/secret"), s->content, sizeof(s->content) - 1);
	cr_assert_geq(n, 0);
	s->content[n] = '\0';
}

static bool ts_eq(struct timespec a, struct timespec b)
{
	return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

static void expect_same_stat(const char *what, const struct stat *a, const struct stat *b)
{
	cr_assert(ts_eq(a->st_mtim, b->st_mtim), "%s: mtime changed", what);
	cr_assert(ts_eq(a->st_ctim, b->st_ctim), "%s: ctime changed (metadata written)", what);
	cr_assert(ts_eq(a->st_atim, b->st_atim), "%s: atime changed (it was read)", what);
	cr_assert_eq(a->st_size, b->st_size, "%s: size changed", what);
	cr_assert_eq(a->st_nlink, b->st_nlink, "%s: link count changed", what);
}

/* atime an hour before mtime: relatime then updates it on the next read */
static void age_atime(const char *path)
{
	struct stat st;
	struct timespec t[2];

	cr_assert_eq(stat(path, &st), 0);
	t[0] = st.st_mtim;
	t[0].tv_sec -= 3600;
	t[1] = st.st_mtim;
	cr_assert_eq(utimensat(AT_FDCWD, path, t, 0), 0, "utimensat %s: %s", path,
		     strerror(errno));
}

Test(race, dir_swapped_for_outside_symlink_never_escapes, .timeout = 90)
{
	struct snap before, after;
	double until;
	unsigned long ok = 0, racedn = 0;

	/* listing and content first (reading them moves the atimes), then the aged times */
	snapshot(&before);
	cr_assert_str_eq(before.content, CANARY);
	age_atime(base_path(&M, "canary/secret"));
	age_atime(base_path(&M, "canary/canary-only"));
	age_atime(base_path(&M, "canary"));
	stat_all(&before);

	SL = mmap(NULL, sizeof(*SL) * (NCLIENTS + 1), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert(SL != MAP_FAILED);
	until = ch_now() + RACE_S;
	fflush(NULL);
	for (unsigned i = 0; i <= NCLIENTS; i++) {
		pid_t p = fork();

		if (p == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			_exit(i == NCLIENTS ? swapper(M.src, &SL[i], until)
					    : client(M.mnt, i, &SL[i], until));
		}
		cr_assert_gt(p, 0, "fork: %s", strerror(errno));
		PIDS[i] = p;
	}
	for (unsigned i = 0; i <= NCLIENTS; i++) {
		int st = 0;
		pid_t r = 0;

		/* bounded: a child stuck in a request past the race + 30 s is a hang */
		while ((r = waitpid(PIDS[i], &st, WNOHANG)) == 0 && ch_now() < until + 30)
			usleep(20000);
		cr_assert_eq(r, PIDS[i], "%s %u hung in a request", i == NCLIENTS ? "swapper" :
			     "client", i);
		PIDS[i] = 0;
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s %u failed (status 0x%x): %s",
			  i == NCLIENTS ? "swapper" : "client", i, st, SL[i].msg);
		if (i < NCLIENTS) {
			ok += SL[i].ok;
			racedn += SL[i].raced;
		}
	}
	cr_log_info("race: %lu swaps, client calls: %lu succeeded, %lu failed as the swap "
		    "explains", SL[NCLIENTS].swaps, ok, racedn);
	cr_assert_gt(SL[NCLIENTS].swaps, 100, "too few swaps (%lu) to mean anything",
		     SL[NCLIENTS].swaps);
	cr_assert(ok > 0 && racedn > 0, "the clients never met both states of d (ok %lu, "
		  "failed %lu)", ok, racedn);

	/* stat first: the snapshot's own reads would move the atimes */
	stat_all(&after);
	expect_same_stat("canary dir", &before.dir, &after.dir);
	expect_same_stat("canary/secret", &before.secret, &after.secret);
	expect_same_stat("canary/canary-only", &before.only, &after.only);
	struct snap again;
	snapshot(&again);
	cr_assert_str_eq(again.listing, before.listing, "canary dir listing changed");
	cr_assert_str_eq(again.content, CANARY, "canary content changed");
	/* and SOURCE's own file was only rewritten with its own bytes */
	char in[64];
	ssize_t n = mnt_get(src_path(&M, "d/secret"), in, sizeof(in) - 1);
	cr_assert_geq(n, 0);
	in[n] = '\0';
	cr_assert_str_eq(in, INSIDE);
	mnt_cr_finish(&M);
}
