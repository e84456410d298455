/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * posix_dirs: directories through the mount - mkdir/rmdir and their errors, readdir of a
 * 10 000-entry directory, d_type, fsyncdir, and containment: `..` at the mount root leads to
 * the mount's parent (never SOURCE's), and symlinks that point outside SOURCE are shown as
 * links, never followed by the daemon.
 */
#include <criterion/criterion.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
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

TestSuite(posix_dirs, .init = setup, .fini = teardown, .timeout = 120);

static struct stat lstat_ok(const char *path)
{
	struct stat st;

	cr_assert_eq(lstat(path, &st), 0, "lstat %s: %s", path, strerror(errno));
	return st;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* Does directory `dir` list `name`? */
static bool lists(const char *dir, const char *name)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	bool hit = false;

	cr_assert_not_null(d, "opendir %s: %s", dir, strerror(errno));
	while ((de = readdir(d)))
		if (strcmp(de->d_name, name) == 0)
			hit = true;
	closedir(d);
	return hit;
}

Test(posix_dirs, mkdir_creates_directory_in_source_with_umask)
{
	struct stat st;

	umask(022);
	MNT_EXPECT_OK(mkdir(mnt_path(&M, "d"), 0777));
	st = lstat_ok(src_path(&M, "d"));
	cr_assert(S_ISDIR(st.st_mode));
	cr_assert_eq(st.st_mode & 07777, 0755, "mode %o", st.st_mode & 07777);
	cr_assert_eq(st.st_uid, 0);
	MNT_EXPECT_OK(mkdir(mnt_path(&M, "d/sub"), 0700));
	cr_assert_eq(lstat_ok(src_path(&M, "d/sub")).st_mode & 07777, 0700);
	cr_assert_eq(lstat_ok(mnt_path(&M, "d")).st_nlink, 3);
	MNT_EXPECT_ERRNO(mkdir(mnt_path(&M, "d"), 0755), EEXIST);
	MNT_EXPECT_ERRNO(mkdir(mnt_path(&M, "nodir/x"), 0755), ENOENT);
	mnt_cr_finish(&M);
}

Test(posix_dirs, rmdir_removes_and_reports_errors)
{
	struct stat st;

	cr_assert_eq(mkdir(src_path(&M, "empty"), 0755), 0);
	cr_assert_eq(mkdir(src_path(&M, "full"), 0755), 0);
	cr_assert_eq(mnt_put(src_path(&M, "full/f"), "x", 1, 0644), 0);
	cr_assert_eq(mnt_put(src_path(&M, "file"), "x", 1, 0644), 0);
	MNT_EXPECT_OK(rmdir(mnt_path(&M, "empty")));
	MNT_EXPECT_ERRNO(lstat(src_path(&M, "empty"), &st), ENOENT);
	MNT_EXPECT_ERRNO(rmdir(mnt_path(&M, "full")), ENOTEMPTY);
	cr_assert(S_ISDIR(lstat_ok(src_path(&M, "full")).st_mode));
	MNT_EXPECT_ERRNO(rmdir(mnt_path(&M, "file")), ENOTDIR);
	MNT_EXPECT_ERRNO(unlink(mnt_path(&M, "full")), EISDIR);
	MNT_EXPECT_ERRNO(rmdir(mnt_path(&M, "missing")), ENOENT);
	mnt_cr_finish(&M);
}

Test(posix_dirs, readdir_lists_10000_entries_completely)
{
	enum { N = 10000 };
	static unsigned char seen[N];
	char name[64];
	DIR *d;
	struct dirent *de;
	int files = 0, dots = 0;

	memset(seen, 0, sizeof(seen));
	cr_assert_eq(mkdir(src_path(&M, "big"), 0755), 0);
	for (int i = 0; i < N; i++) {
		int fd;

		/* long-ish names so the listing spans many READDIR(PLUS) replies */
		snprintf(name, sizeof(name), "big/entry-with-a-longer-name-%05d", i);
		fd = open(src_path(&M, name), O_WRONLY | O_CREAT | O_EXCL, 0644);
		cr_assert_geq(fd, 0, "create %s: %s", name, strerror(errno));
		close(fd);
	}
	d = opendir(mnt_path(&M, "big"));
	cr_assert_not_null(d, "opendir: %s", strerror(errno));
	errno = 0;
	while ((de = readdir(d))) {
		int idx;
		char tail;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) {
			dots++;
			continue;
		}
		cr_assert_eq(sscanf(de->d_name, "entry-with-a-longer-name-%5d%c", &idx, &tail), 1,
			     "unexpected name '%s'", de->d_name);
		cr_assert(idx >= 0 && idx < N, "name out of range '%s'", de->d_name);
		cr_assert_eq(seen[idx], 0, "'%s' listed twice", de->d_name);
		seen[idx] = 1;
		files++;
		errno = 0;
	}
	cr_assert_eq(errno, 0, "readdir ended with %s", strerror(errno));
	closedir(d);
	cr_assert_eq(dots, 2, "'.' and '..' listed %d times in total", dots);
	cr_assert_eq(files, N, "listed %d of %d entries", files, N);
	for (int i = 0; i < N; i++)
		cr_assert(seen[i], "entry %05d missing", i);
	mnt_cr_finish(&M);
}

Test(posix_dirs, readdir_reports_entry_types)
{
	DIR *d;
	struct dirent *de;
	int hits = 0;

	cr_assert_eq(mkdir(src_path(&M, "t"), 0755), 0);
	cr_assert_eq(mkdir(src_path(&M, "t/dir"), 0755), 0);
	cr_assert_eq(mnt_put(src_path(&M, "t/reg"), "x", 1, 0644), 0);
	cr_assert_eq(symlink("reg", src_path(&M, "t/lnk")), 0);
	cr_assert_eq(mkfifo(src_path(&M, "t/fifo"), 0644), 0);
	d = opendir(mnt_path(&M, "t"));
	cr_assert_not_null(d);
	while ((de = readdir(d))) {
		unsigned char want = DT_UNKNOWN;

		if (!strcmp(de->d_name, "dir"))
			want = DT_DIR;
		else if (!strcmp(de->d_name, "reg"))
			want = DT_REG;
		else if (!strcmp(de->d_name, "lnk"))
			want = DT_LNK;
		else if (!strcmp(de->d_name, "fifo"))
			want = DT_FIFO;
		else
			continue;
		cr_assert_eq(de->d_type, want, "%s: d_type %d, expected %d", de->d_name,
			     de->d_type, want);
		hits++;
	}
	closedir(d);
	cr_assert_eq(hits, 4);
	mnt_cr_finish(&M);
}

Test(posix_dirs, readdir_sees_entries_added_in_source)
{
	cr_assert_eq(mkdir(src_path(&M, "live"), 0755), 0);
	cr_assert_not(lists(mnt_path(&M, "live"), "late"));
	cr_assert_eq(mnt_put(src_path(&M, "live/late"), "x", 1, 0644), 0);
	cr_assert(lists(mnt_path(&M, "live"), "late"), "new SOURCE entry not listed");
	cr_assert_eq(unlink(src_path(&M, "live/late")), 0);
	cr_assert_not(lists(mnt_path(&M, "live"), "late"), "removed SOURCE entry still listed");
	mnt_cr_finish(&M);
}

Test(posix_dirs, rewinddir_lists_again)
{
	DIR *d;
	int first = 0, second = 0;

	cr_assert_eq(mkdir(src_path(&M, "r"), 0755), 0);
	for (int i = 0; i < 50; i++) {
		char name[32];

		snprintf(name, sizeof(name), "r/%d", i);
		cr_assert_eq(mnt_put(src_path(&M, name), "", 0, 0644), 0);
	}
	d = opendir(mnt_path(&M, "r"));
	cr_assert_not_null(d);
	while (readdir(d))
		first++;
	rewinddir(d);
	while (readdir(d))
		second++;
	closedir(d);
	cr_assert_eq(first, 52);
	cr_assert_eq(second, 52);
	mnt_cr_finish(&M);
}

/*
 * Reads `path` with readdir(), taking telldir() after every entry, then seekdir()s to each
 * position in turn: the next entry must be the one that followed it in the first pass (and
 * none after the last). Returns how many entries were listed.
 */
static int check_every_telldir(const char *path)
{
	enum { MAX = 200 };
	static char names[MAX][256];
	static long pos[MAX];
	DIR *d = opendir(path);
	struct dirent *ent;
	int n = 0;

	cr_assert_not_null(d, "opendir %s: %s", path, strerror(errno));
	while ((ent = readdir(d)) != NULL) {
		cr_assert_lt(n, MAX, "%s: more than %d entries", path, MAX);
		snprintf(names[n], sizeof(names[n]), "%s", ent->d_name);
		pos[n++] = telldir(d);
	}
	for (int i = 0; i < n; i++) {
		seekdir(d, pos[i]);
		errno = 0;
		ent = readdir(d);
		if (i + 1 < n) {
			cr_assert_not_null(ent, "%s: seekdir to after \"%s\" (%ld): no entry (%s)",
					   path, names[i], pos[i], strerror(errno));
			cr_assert_str_eq(ent->d_name, names[i + 1],
					 "%s: seekdir to after \"%s\" (%ld) gave \"%s\", want \"%s\"",
					 path, names[i], pos[i], ent->d_name, names[i + 1]);
		} else {
			cr_assert_null(ent, "%s: seekdir to the end (%ld) gave \"%s\"", path, pos[i],
				       ent ? ent->d_name : "");
		}
	}
	closedir(d);
	return n;
}

/* The root lists the control directory before SOURCE's entries: the position right after it
 * must be one seekdir() can go back to, like every other. */
Test(posix_dirs, seekdir_to_every_telldir_position_including_after_the_control_dir)
{
	int n;

	cr_assert_eq(mkdir(src_path(&M, "s"), 0755), 0);
	for (int i = 0; i < 40; i++) {
		char name[32];

		snprintf(name, sizeof(name), "f%d", i);
		cr_assert_eq(mnt_put(src_path(&M, name), "", 0, 0644), 0);
		snprintf(name, sizeof(name), "s/g%d", i);
		cr_assert_eq(mnt_put(src_path(&M, name), "", 0, 0644), 0);
	}
	n = check_every_telldir(mnt_path(&M, ""));
	cr_assert_eq(n, 2 + 1 + 1 + 40, "root: %d entries, want . .. .cfqfs s f0..f39", n);
	n = check_every_telldir(mnt_path(&M, "s"));
	cr_assert_eq(n, 2 + 40, "s: %d entries", n);
	mnt_cr_finish(&M);
}

Test(posix_dirs, fsyncdir_succeeds)
{
	int fd;

	cr_assert_eq(mkdir(mnt_path(&M, "s"), 0755), 0);
	cr_assert_eq(mnt_put(mnt_path(&M, "s/f"), "x", 1, 0644), 0);
	fd = open(mnt_path(&M, "s"), O_RDONLY | O_DIRECTORY);
	cr_assert_geq(fd, 0);
	MNT_EXPECT_OK(fsync(fd));
	MNT_EXPECT_OK(fdatasync(fd));
	close(fd);
	mnt_cr_finish(&M);
}

Test(posix_dirs, dotdot_inside_mount_goes_up_one_level)
{
	struct stat root, up;
	int fd, up_fd;

	cr_assert_eq(mkdir(mnt_path(&M, "a"), 0755), 0);
	cr_assert_eq(mkdir(mnt_path(&M, "a/b"), 0755), 0);
	fd = open(mnt_path(&M, "a/b"), O_RDONLY | O_DIRECTORY);
	cr_assert_geq(fd, 0);
	up_fd = openat(fd, "../..", O_RDONLY | O_DIRECTORY);
	cr_assert_geq(up_fd, 0, "openat ../..: %s", strerror(errno));
	cr_assert_eq(fstat(up_fd, &up), 0);
	cr_assert_eq(stat(mnt_path(&M, ""), &root), 0);
	cr_assert(same_file(&up, &root), "a/b/../.. is not the mount root");
	close(up_fd);
	close(fd);
	mnt_cr_finish(&M);
}

/*
 * Remounts with SOURCE one level deeper (base/outer/src, mount at base/mnt) so SOURCE's parent
 * (base/outer, holding a marker) differs from the mount's parent (base).
 */
static void remount_deep(void)
{
	mnt_cr_finish(&M);
	cr_assert_eq(mnt_prepare(&M), 0);
	snprintf(M.src, sizeof(M.src), "%s/outer/src", M.base);
	cr_assert_eq(mkdir(base_path(&M, "outer"), 0755), 0);
	cr_assert_eq(mkdir(M.src, 0755), 0);
	cr_assert_eq(mnt_put(base_path(&M, "outer/SOURCE_SIBLING_SECRET"), "s", 1, 0600), 0);
	cr_assert_eq(mnt_put(src_path(&M, "inside"), "i", 1, 0644), 0);
	int ret = mnt_start(&M, NULL);

	if (ret != 0)
		mnt_dump_log(&M);
	cr_assert_eq(ret, 0, "remount: %s", strerror(-ret));
}

Test(posix_dirs, dotdot_at_mount_root_is_mount_parent_not_source_parent)
{
	struct stat up, base, outer;
	int rootfd, fd;

	remount_deep();
	cr_assert_eq(stat(mnt_path(&M, ".."), &up), 0);
	cr_assert_eq(stat(base_path(&M, ""), &base), 0);
	cr_assert_eq(stat(base_path(&M, "outer"), &outer), 0);
	cr_assert(same_file(&up, &base), "mnt/.. is not the mount's parent");
	cr_assert_not(same_file(&up, &outer), "mnt/.. is SOURCE's parent");

	rootfd = open(mnt_path(&M, ""), O_RDONLY | O_DIRECTORY);
	cr_assert_geq(rootfd, 0);
	fd = openat(rootfd, "..", O_RDONLY | O_DIRECTORY);
	cr_assert_geq(fd, 0, "openat(root, ..): %s", strerror(errno));
	cr_assert_eq(fstat(fd, &up), 0);
	cr_assert(same_file(&up, &base), "openat(root, \"..\") left the mount's parent");
	cr_assert_not(same_file(&up, &outer), "openat(root, \"..\") reached SOURCE's parent");
	close(fd);
	/* ../../.. style climbing from inside the mount never touches SOURCE's parent either */
	MNT_EXPECT_ERRNO(faccessat(rootfd, "../SOURCE_SIBLING_SECRET", F_OK, 0), ENOENT);
	MNT_EXPECT_ERRNO(faccessat(rootfd, "SOURCE_SIBLING_SECRET", F_OK, 0), ENOENT);
	MNT_EXPECT_OK(faccessat(rootfd, "inside", F_OK, 0));
	close(rootfd);

	/* listings: the mount root shows SOURCE's children, its parent shows the mount's siblings */
	cr_assert(lists(mnt_path(&M, ""), "inside"));
	cr_assert_not(lists(mnt_path(&M, ""), "SOURCE_SIBLING_SECRET"));
	cr_assert_not(lists(mnt_path(&M, ""), "src"));
	cr_assert(lists(mnt_path(&M, ".."), "outer"));
	cr_assert(lists(mnt_path(&M, ".."), "mnt"));
	cr_assert_not(lists(mnt_path(&M, ".."), "SOURCE_SIBLING_SECRET"));
	mnt_cr_finish(&M);
}

Test(posix_dirs, symlink_pointing_outside_source_is_shown_not_followed)
{
	char target[PATH_MAX], buf[PATH_MAX];
	struct stat st;
	ssize_t n;

	cr_assert_eq(mnt_put(base_path(&M, "outside.txt"), "OUTSIDE", 7, 0644), 0);
	snprintf(target, sizeof(target), "%s", base_path(&M, "outside.txt"));
	/* an absolute escape made through the mount, a relative one made in SOURCE */
	MNT_EXPECT_OK(symlink(target, mnt_path(&M, "abs")));
	cr_assert_eq(symlink("../outside.txt", src_path(&M, "rel")), 0);

	st = lstat_ok(mnt_path(&M, "abs"));
	cr_assert(S_ISLNK(st.st_mode), "lstat via mount: not a link (mode %o)", st.st_mode);
	cr_assert_eq(st.st_size, (off_t)strlen(target));
	st = lstat_ok(mnt_path(&M, "rel"));
	cr_assert(S_ISLNK(st.st_mode), "lstat via mount: not a link (mode %o)", st.st_mode);
	cr_assert_eq(st.st_size, 14);
	n = readlink(mnt_path(&M, "abs"), buf, sizeof(buf));
	cr_assert_eq(n, (ssize_t)strlen(target));
	cr_assert_arr_eq(buf, target, strlen(target));
	n = readlink(mnt_path(&M, "rel"), buf, sizeof(buf));
	cr_assert_eq(n, 14);
	cr_assert_arr_eq(buf, "../outside.txt", 14);
	cr_assert(S_ISLNK(lstat_ok(src_path(&M, "abs")).st_mode));
	mnt_cr_finish(&M);
}

Test(posix_dirs, nofollow_ops_on_escaping_symlink_touch_the_link_only)
{
	struct timespec ts[2] = { { 1200000000, 0 }, { 1200000000, 0 } };
	struct stat before, after, link;

	cr_assert_eq(mnt_put(base_path(&M, "outside.txt"), "OUTSIDE", 7, 0644), 0);
	cr_assert_eq(symlink("../outside.txt", src_path(&M, "esc")), 0);
	cr_assert_eq(stat(base_path(&M, "outside.txt"), &before), 0);

	MNT_EXPECT_OK(lchown(mnt_path(&M, "esc"), 1234, 4321));
	link = lstat_ok(src_path(&M, "esc"));
	cr_assert_eq(link.st_uid, 1234, "lchown did not reach the link in SOURCE");
	cr_assert_eq(link.st_gid, 4321);
	MNT_EXPECT_OK(utimensat(AT_FDCWD, mnt_path(&M, "esc"), ts, AT_SYMLINK_NOFOLLOW));
	link = lstat_ok(src_path(&M, "esc"));
	cr_assert_eq(link.st_mtim.tv_sec, 1200000000);

	cr_assert_eq(stat(base_path(&M, "outside.txt"), &after), 0);
	cr_assert_eq(after.st_uid, before.st_uid, "daemon followed the link: target chowned");
	cr_assert_eq(after.st_gid, before.st_gid);
	cr_assert_eq(after.st_mtim.tv_sec, before.st_mtim.tv_sec,
		     "daemon followed the link: target's times changed");
	cr_assert_eq(after.st_mode, before.st_mode);
	mnt_cr_finish(&M);
}
