/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * errors: errors from SOURCE reach the caller unchanged, and the mount keeps working after
 * each. SOURCE is a 1 MiB tmpfs mounted over the fixture's src/ (root only; the suite's .fini
 * unmounts it even when a test fails). Each errno is compared with what the same operation
 * gives on SOURCE directly.
 *   - ENOSPC: writing past the tmpfs size;
 *   - EACCES: a 0000 file opened by a uid-65534 child (through -o allow_other);
 *   - a file removed from SOURCE behind the mount: an open handle keeps reading and writing,
 *     new lookups fail with ENOENT (entry/attr timeouts 0, so no cached entry hides it).
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chaos.h"
#include "mount.h"

static struct mnt M;
static char tmpfs_dir[PATH_MAX]; /* where our tmpfs is mounted, "" when not */
static char base_copy[256];	 /* M.base, to remove what teardown could not while mounted */

static void setup(void)
{
	static const char *const args[] = {
		"-o", "direct_io,allow_other,entry_timeout=0,attr_timeout=0", NULL
	};

	umask(022);
	if (geteuid() != 0)
		cr_skip("needs root (mounts a tmpfs, switches uid)");
	if (!mnt_fuse_available())
		cr_skip("/dev/fuse unavailable: %s", mnt_fuse_unavailable_reason());
	cr_assert_eq(mnt_prepare(&M), 0, "mnt_prepare");
	snprintf(base_copy, sizeof(base_copy), "%s", M.base);
	if (mount("tmpfs", M.src, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755") != 0)
		cr_assert_fail("mount tmpfs on %s: %s", M.src, strerror(errno));
	snprintf(tmpfs_dir, sizeof(tmpfs_dir), "%s", M.src);
	mnt_cr_start(&M, args);
}

static void teardown(void)
{
	mnt_cr_teardown(&M);
	if (tmpfs_dir[0]) {
		/* teardown's removal does not cross into our tmpfs: finish it here */
		if (umount2(tmpfs_dir, MNT_DETACH) != 0)
			fprintf(stderr, "errors: umount %s: %s\n", tmpfs_dir, strerror(errno));
		tmpfs_dir[0] = '\0';
		char cmd[PATH_MAX + 16];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base_copy);
		if (base_copy[0] && system(cmd) != 0)
			fprintf(stderr, "errors: could not remove %s\n", base_copy);
	}
}

TestSuite(errors, .init = setup, .fini = teardown, .timeout = 60);

/* The mount still creates, writes, reads back and removes a small file. */
static void expect_mount_works(const char *when)
{
	static const char msg[] = "still here\n";
	char buf[64] = "";
	const char *p = mnt_path(&M, "probe");

	cr_assert_eq(mnt_put(p, msg, sizeof(msg) - 1, 0644), 0, "%s: write probe: %s", when,
		     strerror(errno));
	ssize_t n = mnt_get(p, buf, sizeof(buf));
	cr_assert(n == (ssize_t)sizeof(msg) - 1 && memcmp(buf, msg, (size_t)n) == 0,
		  "%s: probe read back %zd bytes", when, n);
	MNT_EXPECT_OK(unlink(p));
}

/* Writes 64 KiB chunks to `path` until an error; returns that errno (0 if 4 MiB went in). */
static int fill_until_error(const char *path)
{
	static char chunk[65536];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644), e = 0;

	memset(chunk, 'x', sizeof(chunk));
	if (fd < 0)
		return errno;
	for (int i = 0; i < 64 && !e; i++) {
		ssize_t w = write(fd, chunk, sizeof(chunk));
		if (w < 0)
			e = errno;
	}
	if (!e && fsync(fd) != 0)
		e = errno;
	if (close(fd) != 0 && !e)
		e = errno;
	return e;
}

Test(errors, enospc_reaches_caller)
{
	/* natively first: the errno the mount must pass on unchanged */
	int native = fill_until_error(src_path(&M, "native"));
	cr_assert_eq(native, ENOSPC, "native fill of a 1 MiB tmpfs: %s", strerrorname_np(native));
	MNT_EXPECT_OK(unlink(src_path(&M, "native")));

	int via = fill_until_error(mnt_path(&M, "fill"));
	cr_assert_eq(via, ENOSPC, "fill through the mount: got %s, expected ENOSPC",
		     via ? strerrorname_np(via) : "no error");
	/* what was accepted is there, the file is usable and removable */
	struct stat st;
	MNT_EXPECT_OK(stat(mnt_path(&M, "fill"), &st));
	cr_assert_gt(st.st_size, 0);
	MNT_EXPECT_OK(unlink(mnt_path(&M, "fill")));
	expect_mount_works("after ENOSPC");
	mnt_cr_finish(&M);
}

/* Child: become uid/gid 65534 and open `arg` read-only; exit 0 or the errno. */
static int open_as_nobody(void *arg)
{
	if (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0)
		return 200;
	int fd = open((const char *)arg, O_RDONLY);
	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

Test(errors, eacces_reaches_caller)
{
	cr_assert_eq(mnt_put(src_path(&M, "locked"), "secret", 6, 0000), 0);
	MNT_EXPECT_OK(chmod(src_path(&M, "locked"), 0000));
	cr_assert_eq(mnt_put(src_path(&M, "open"), "public", 6, 0644), 0);

	char src_locked[PATH_MAX], mnt_locked[PATH_MAX], mnt_open[PATH_MAX];
	snprintf(src_locked, sizeof(src_locked), "%s", src_path(&M, "locked"));
	snprintf(mnt_locked, sizeof(mnt_locked), "%s", mnt_path(&M, "locked"));
	snprintf(mnt_open, sizeof(mnt_open), "%s", mnt_path(&M, "open"));

	int native = mnt_fork_run(open_as_nobody, src_locked, 5000);
	cr_assert_eq(native, EACCES, "native open of a 0000 file as nobody: %d", native);
	int via = mnt_fork_run(open_as_nobody, mnt_locked, 5000);
	cr_assert_eq(via, EACCES, "open through the mount as nobody: got %d (%s), expected EACCES",
		     via, via > 0 && via < 200 ? strerrorname_np(via) : "-");
	/* the same child can open a readable file: the EACCES above is about the mode */
	int ok = mnt_fork_run(open_as_nobody, mnt_open, 5000);
	cr_assert_eq(ok, 0, "open of a 0644 file through the mount as nobody: %d", ok);
	expect_mount_works("after EACCES");
	mnt_cr_finish(&M);
}

Test(errors, removed_behind_the_mount)
{
	static const char data[] = "0123456789abcdef";
	char buf[64] = "";

	cr_assert_eq(mnt_put(mnt_path(&M, "gone"), data, 16, 0644), 0);
	int fd = open(mnt_path(&M, "gone"), O_RDWR);
	cr_assert_geq(fd, 0, "open: %s", strerror(errno));
	MNT_EXPECT_OK(unlink(src_path(&M, "gone")));

	/* the open handle keeps working: read, write, read back, fstat */
	ssize_t n = pread(fd, buf, sizeof(buf), 0);
	cr_assert(n == 16 && memcmp(buf, data, 16) == 0, "pread on the open handle: %zd (%s)", n,
		  n < 0 ? strerror(errno) : "short or wrong");
	cr_assert_eq(pwrite(fd, "XY", 2, 4), 2, "pwrite on the open handle: %s", strerror(errno));
	cr_assert_eq(pread(fd, buf, 16, 0), 16);
	cr_assert(memcmp(buf, "0123XY6789abcdef", 16) == 0, "read back %.16s", buf);
	struct stat st;
	MNT_EXPECT_OK(fstat(fd, &st));
	cr_assert_eq(st.st_size, 16);

	/* new lookups: ENOENT, as on SOURCE */
	MNT_EXPECT_ERRNO(stat(src_path(&M, "gone"), &st), ENOENT);
	MNT_EXPECT_ERRNO(stat(mnt_path(&M, "gone"), &st), ENOENT);
	MNT_EXPECT_ERRNO(open(mnt_path(&M, "gone"), O_RDONLY), ENOENT);
	MNT_EXPECT_OK(close(fd));

	/* the name is free again, through the mount */
	cr_assert_eq(mnt_put(mnt_path(&M, "gone"), "new", 3, 0644), 0);
	cr_assert_eq(mnt_get(src_path(&M, "gone"), buf, sizeof(buf)), 3);
	expect_mount_works("after a file was removed behind the mount");
	mnt_cr_finish(&M);
}
