/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * posix_rename: rename(2) and renameat2(2) through the mount - replace, RENAME_NOREPLACE,
 * RENAME_EXCHANGE, directories, the error cases, and open handles that follow the file.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
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

TestSuite(posix_rename, .init = setup, .fini = teardown, .timeout = 60);

static void expect_content(const char *path, const char *want)
{
	char buf[256];
	ssize_t n = mnt_get(path, buf, sizeof(buf));

	cr_assert_eq(n, (ssize_t)strlen(want), "%s: read %zd (%s), expected \"%s\"", path, n,
		     n < 0 ? strerror((int)-n) : "-", want);
	cr_assert_arr_eq(buf, want, strlen(want));
}

static void expect_absent(const char *path)
{
	struct stat st;

	MNT_EXPECT_ERRNO(lstat(path, &st), ENOENT);
}

static int rn2(const char *from, const char *to, unsigned flags)
{
	return renameat2(AT_FDCWD, from, AT_FDCWD, to, flags);
}

Test(posix_rename, rename_moves_file_in_source)
{
	cr_assert_eq(mnt_put(src_path(&M, "a"), "AAA", 3, 0644), 0);
	MNT_EXPECT_OK(rename(mnt_path(&M, "a"), mnt_path(&M, "b")));
	expect_absent(src_path(&M, "a"));
	expect_content(src_path(&M, "b"), "AAA");
	expect_absent(mnt_path(&M, "a"));
	expect_content(mnt_path(&M, "b"), "AAA");
	mnt_cr_finish(&M);
}

Test(posix_rename, rename_replaces_existing_target)
{
	struct stat a_before, b_after;

	cr_assert_eq(mnt_put(src_path(&M, "a"), "new", 3, 0644), 0);
	cr_assert_eq(mnt_put(src_path(&M, "b"), "old-content", 11, 0644), 0);
	cr_assert_eq(lstat(src_path(&M, "a"), &a_before), 0);
	MNT_EXPECT_OK(rename(mnt_path(&M, "a"), mnt_path(&M, "b")));
	expect_absent(src_path(&M, "a"));
	expect_content(src_path(&M, "b"), "new");
	cr_assert_eq(lstat(src_path(&M, "b"), &b_after), 0);
	cr_assert_eq(b_after.st_ino, a_before.st_ino, "target is not the renamed inode");
	expect_content(mnt_path(&M, "b"), "new");
	mnt_cr_finish(&M);
}

Test(posix_rename, noreplace_onto_existing_gives_eexist)
{
	cr_assert_eq(mnt_put(src_path(&M, "a"), "AAA", 3, 0644), 0);
	cr_assert_eq(mnt_put(src_path(&M, "b"), "BBB", 3, 0644), 0);
	MNT_EXPECT_ERRNO(rn2(mnt_path(&M, "a"), mnt_path(&M, "b"), RENAME_NOREPLACE), EEXIST);
	expect_content(src_path(&M, "a"), "AAA");
	expect_content(src_path(&M, "b"), "BBB");
	expect_content(mnt_path(&M, "a"), "AAA");
	expect_content(mnt_path(&M, "b"), "BBB");
	mnt_cr_finish(&M);
}

/*
 * The VFS itself refuses NOREPLACE onto a target it knows; here the target appears in SOURCE
 * after the kernel saw (and may have cached) it as missing, so only the daemon can refuse.
 */
Test(posix_rename, noreplace_onto_target_created_behind_the_kernels_back_gives_eexist)
{
	struct stat st;

	cr_assert_eq(mnt_put(src_path(&M, "a"), "AAA", 3, 0644), 0);
	MNT_EXPECT_ERRNO(lstat(mnt_path(&M, "late"), &st), ENOENT);
	cr_assert_eq(mnt_put(src_path(&M, "late"), "LATE", 4, 0644), 0);
	MNT_EXPECT_ERRNO(rn2(mnt_path(&M, "a"), mnt_path(&M, "late"), RENAME_NOREPLACE), EEXIST);
	expect_content(src_path(&M, "late"), "LATE");
	expect_content(src_path(&M, "a"), "AAA");
	mnt_cr_finish(&M);
}

Test(posix_rename, noreplace_onto_free_name_moves)
{
	cr_assert_eq(mnt_put(src_path(&M, "a"), "AAA", 3, 0644), 0);
	MNT_EXPECT_OK(rn2(mnt_path(&M, "a"), mnt_path(&M, "c"), RENAME_NOREPLACE));
	expect_absent(src_path(&M, "a"));
	expect_content(src_path(&M, "c"), "AAA");
	mnt_cr_finish(&M);
}

Test(posix_rename, exchange_swaps_two_files)
{
	struct stat a0, b0, a1, b1;

	cr_assert_eq(mnt_put(src_path(&M, "a"), "content-of-a", 12, 0644), 0);
	cr_assert_eq(mnt_put(src_path(&M, "b"), "B", 1, 0600), 0);
	cr_assert_eq(lstat(src_path(&M, "a"), &a0), 0);
	cr_assert_eq(lstat(src_path(&M, "b"), &b0), 0);
	/* let the kernel cache both first, so stale caching would show */
	expect_content(mnt_path(&M, "a"), "content-of-a");
	expect_content(mnt_path(&M, "b"), "B");
	MNT_EXPECT_OK(rn2(mnt_path(&M, "a"), mnt_path(&M, "b"), RENAME_EXCHANGE));
	cr_assert_eq(lstat(src_path(&M, "a"), &a1), 0);
	cr_assert_eq(lstat(src_path(&M, "b"), &b1), 0);
	cr_assert_eq(a1.st_ino, b0.st_ino, "SOURCE a is not the old b");
	cr_assert_eq(b1.st_ino, a0.st_ino, "SOURCE b is not the old a");
	expect_content(src_path(&M, "a"), "B");
	expect_content(src_path(&M, "b"), "content-of-a");
	expect_content(mnt_path(&M, "a"), "B");
	expect_content(mnt_path(&M, "b"), "content-of-a");
	cr_assert_eq(lstat(mnt_path(&M, "a"), &a1), 0);
	cr_assert_eq(a1.st_mode & 0777, 0600);
	mnt_cr_finish(&M);
}

Test(posix_rename, exchange_swaps_file_and_directory)
{
	struct stat st;

	cr_assert_eq(mnt_put(src_path(&M, "f"), "file", 4, 0644), 0);
	cr_assert_eq(mkdir(src_path(&M, "d"), 0755), 0);
	cr_assert_eq(mnt_put(src_path(&M, "d/child"), "kid", 3, 0644), 0);
	MNT_EXPECT_OK(rn2(mnt_path(&M, "f"), mnt_path(&M, "d"), RENAME_EXCHANGE));
	cr_assert_eq(lstat(src_path(&M, "f"), &st), 0);
	cr_assert(S_ISDIR(st.st_mode), "SOURCE f is not the directory now");
	expect_content(src_path(&M, "f/child"), "kid");
	expect_content(src_path(&M, "d"), "file");
	expect_content(mnt_path(&M, "f/child"), "kid");
	expect_content(mnt_path(&M, "d"), "file");
	mnt_cr_finish(&M);
}

Test(posix_rename, exchange_with_missing_target_gives_enoent)
{
	cr_assert_eq(mnt_put(src_path(&M, "a"), "AAA", 3, 0644), 0);
	MNT_EXPECT_ERRNO(rn2(mnt_path(&M, "a"), mnt_path(&M, "nope"), RENAME_EXCHANGE), ENOENT);
	expect_content(src_path(&M, "a"), "AAA");
	expect_absent(src_path(&M, "nope"));
	MNT_EXPECT_ERRNO(rn2(mnt_path(&M, "a"), mnt_path(&M, "x"),
			     RENAME_EXCHANGE | RENAME_NOREPLACE), EINVAL);
	mnt_cr_finish(&M);
}

Test(posix_rename, directory_moves_with_its_children)
{
	cr_assert_eq(mkdir(mnt_path(&M, "from"), 0755), 0);
	cr_assert_eq(mkdir(mnt_path(&M, "to"), 0755), 0);
	cr_assert_eq(mkdir(mnt_path(&M, "from/sub"), 0755), 0);
	cr_assert_eq(mnt_put(mnt_path(&M, "from/sub/leaf"), "leaf", 4, 0644), 0);
	MNT_EXPECT_OK(rename(mnt_path(&M, "from/sub"), mnt_path(&M, "to/moved")));
	expect_absent(src_path(&M, "from/sub"));
	expect_content(src_path(&M, "to/moved/leaf"), "leaf");
	expect_content(mnt_path(&M, "to/moved/leaf"), "leaf");
	/* the moved directory's `..` is its new parent */
	{
		struct stat up, to;

		cr_assert_eq(stat(mnt_path(&M, "to/moved/.."), &up), 0);
		cr_assert_eq(stat(mnt_path(&M, "to"), &to), 0);
		cr_assert_eq(up.st_ino, to.st_ino);
	}
	mnt_cr_finish(&M);
}

Test(posix_rename, error_cases_match_posix)
{
	cr_assert_eq(mkdir(src_path(&M, "dir"), 0755), 0);
	cr_assert_eq(mkdir(src_path(&M, "full"), 0755), 0);
	cr_assert_eq(mnt_put(src_path(&M, "full/x"), "x", 1, 0644), 0);
	cr_assert_eq(mkdir(src_path(&M, "empty"), 0755), 0);
	cr_assert_eq(mnt_put(src_path(&M, "file"), "f", 1, 0644), 0);
	MNT_EXPECT_ERRNO(rename(mnt_path(&M, "dir"), mnt_path(&M, "full")), ENOTEMPTY);
	MNT_EXPECT_ERRNO(rename(mnt_path(&M, "file"), mnt_path(&M, "dir")), EISDIR);
	MNT_EXPECT_ERRNO(rename(mnt_path(&M, "dir"), mnt_path(&M, "file")), ENOTDIR);
	MNT_EXPECT_ERRNO(rename(mnt_path(&M, "missing"), mnt_path(&M, "y")), ENOENT);
	MNT_EXPECT_ERRNO(rename(mnt_path(&M, "dir"), mnt_path(&M, "dir/inside")), EINVAL);
	/* a directory may replace an empty one */
	MNT_EXPECT_OK(rename(mnt_path(&M, "dir"), mnt_path(&M, "empty")));
	expect_absent(src_path(&M, "dir"));
	expect_content(src_path(&M, "full/x"), "x");
	expect_content(src_path(&M, "file"), "f");
	mnt_cr_finish(&M);
}

Test(posix_rename, open_handle_follows_renamed_file)
{
	char buf[32];
	int fd;

	cr_assert_eq(mkdir(mnt_path(&M, "dst"), 0755), 0);
	fd = open(mnt_path(&M, "moving"), O_RDWR | O_CREAT, 0644);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "one,", 4), 4);
	MNT_EXPECT_OK(rename(mnt_path(&M, "moving"), mnt_path(&M, "dst/moved")));
	cr_assert_eq(write(fd, "two", 3), 3, "write after rename: %s", strerror(errno));
	cr_assert_eq(pread(fd, buf, sizeof(buf), 0), 7);
	cr_assert_arr_eq(buf, "one,two", 7);
	MNT_EXPECT_OK(fsync(fd));
	expect_content(src_path(&M, "dst/moved"), "one,two");
	expect_absent(src_path(&M, "moving"));
	/* renamed again, over an existing file, while still open */
	cr_assert_eq(mnt_put(mnt_path(&M, "victim"), "victim", 6, 0644), 0);
	MNT_EXPECT_OK(rename(mnt_path(&M, "dst/moved"), mnt_path(&M, "victim")));
	cr_assert_eq(pwrite(fd, "!", 1, 7), 1);
	cr_assert_eq(close(fd), 0);
	expect_content(src_path(&M, "victim"), "one,two!");
	mnt_cr_finish(&M);
}

Test(posix_rename, rename_in_source_is_seen_via_mount)
{
	cr_assert_eq(mnt_put(mnt_path(&M, "x"), "xx", 2, 0644), 0);
	cr_assert_eq(rename(src_path(&M, "x"), src_path(&M, "y")), 0);
	expect_content(mnt_path(&M, "y"), "xx");
	mnt_cr_finish(&M);
}
