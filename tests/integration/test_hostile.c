/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hostile: paths that try to leave SOURCE or break the name limits.
 *   - names of NAME_MAX (255) bytes work end to end; NAME_MAX + 1 gives ENAMETOOLONG and
 *     leaves nothing in SOURCE;
 *   - `..` at the mount root is the mountpoint's parent (the kernel's walk), never SOURCE's;
 *   - a symlink in SOURCE pointing outside (/etc/passwd) is shown as a link: lstat says link,
 *     readlink gives the target text, O_NOFOLLOW opens fail with ELOOP;
 *   - a create through a dangling symlink planted in SOURCE behind the mount (the kernel holds
 *     a cached negative entry, so the CREATE reaches the daemon) creates nothing outside;
 *   - a create over a FIFO or a device node planted the same way fails with EEXIST: it
 *     neither holds a daemon thread in open() nor hands out a "file" that is /dev/null.
 * Layout: SOURCE and MOUNTPOINT sit at different depths under the fixture's base
 * (base/s/src and base/m1/m2/mnt) so a relative link target resolves to different places
 * when the daemon follows it on SOURCE (base/outside/...) and when a client follows it
 * through the mount (base/m1/outside/..., which does not exist).
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "mount.h"

static struct mnt M;

static void setup(void)
{
	/* a long entry timeout keeps the negative entry the symlink test relies on */
	static const char *const args[] = { "-o", "entry_timeout=30,negative_timeout=30", NULL };

	umask(022);
	if (!mnt_fuse_available())
		cr_skip("/dev/fuse unavailable: %s", mnt_fuse_unavailable_reason());
	cr_assert_eq(mnt_prepare(&M), 0, "mnt_prepare");
	const char *dirs[] = { "s", "s/src", "m1", "m1/m2", "m1/m2/mnt", "outside" };
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		cr_assert_eq(mkdir(base_path(&M, dirs[i]), 0755), 0, "mkdir %s: %s", dirs[i],
			     strerror(errno));
	snprintf(M.src, sizeof(M.src), "%s", base_path(&M, "s/src"));
	snprintf(M.mnt, sizeof(M.mnt), "%s", base_path(&M, "m1/m2/mnt"));
	mnt_cr_start(&M, args);
}

static void teardown(void)
{
	mnt_cr_teardown(&M);
}

TestSuite(hostile, .init = setup, .fini = teardown, .timeout = 60);

static bool dir_lists(const char *dir, const char *name)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	bool found = false;

	cr_assert_not_null(d, "opendir %s: %s", dir, strerror(errno));
	while ((de = readdir(d)))
		found |= strcmp(de->d_name, name) == 0;
	closedir(d);
	return found;
}

Test(hostile, name_max)
{
	char name[NAME_MAX + 2];
	struct stat st;

	memset(name, 'n', NAME_MAX);
	name[NAME_MAX] = '\0';
	cr_assert_eq(mnt_put(mnt_path(&M, name), "x", 1, 0644), 0, "create a %d-byte name: %s",
		     NAME_MAX, strerror(errno));
	MNT_EXPECT_OK(stat(src_path(&M, name), &st));
	MNT_EXPECT_OK(stat(mnt_path(&M, name), &st));
	cr_assert(dir_lists(mnt_path(&M, ""), name), "readdir lacks the %d-byte name", NAME_MAX);
	MNT_EXPECT_OK(mkdir(mnt_path(&M, "d"), 0755));
	char to[NAME_MAX + 3];
	snprintf(to, sizeof(to), "d/%s", name);
	MNT_EXPECT_OK(rename(mnt_path(&M, name), mnt_path(&M, to)));
	MNT_EXPECT_OK(stat(src_path(&M, to), &st));
	MNT_EXPECT_OK(unlink(mnt_path(&M, to)));

	/* one byte more: refused, on every call that takes a name, and nothing reaches SOURCE */
	name[NAME_MAX] = 'n';
	name[NAME_MAX + 1] = '\0';
	MNT_EXPECT_ERRNO(open(mnt_path(&M, name), O_WRONLY | O_CREAT, 0644), ENAMETOOLONG);
	MNT_EXPECT_ERRNO(mkdir(mnt_path(&M, name), 0755), ENAMETOOLONG);
	MNT_EXPECT_ERRNO(stat(mnt_path(&M, name), &st), ENAMETOOLONG);
	MNT_EXPECT_ERRNO(symlink("x", mnt_path(&M, name)), ENAMETOOLONG);
	MNT_EXPECT_ERRNO(rename(mnt_path(&M, "d"), mnt_path(&M, name)), ENAMETOOLONG);
	DIR *d = opendir(M.src);
	struct dirent *de;
	cr_assert_not_null(d);
	while ((de = readdir(d)))
		cr_assert(strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
				  strcmp(de->d_name, "d") == 0,
			  "unexpected entry in SOURCE: %s", de->d_name);
	closedir(d);
	mnt_cr_finish(&M);
}

Test(hostile, dotdot_at_root)
{
	struct stat up, parent, src_parent;

	MNT_EXPECT_OK(stat(mnt_path(&M, ".."), &up));
	MNT_EXPECT_OK(stat(base_path(&M, "m1/m2"), &parent));
	MNT_EXPECT_OK(stat(base_path(&M, "s"), &src_parent));
	cr_assert(up.st_dev == parent.st_dev && up.st_ino == parent.st_ino,
		  "mnt/.. is not the mountpoint's parent");
	cr_assert(up.st_ino != src_parent.st_ino || up.st_dev != src_parent.st_dev,
		  "mnt/.. is SOURCE's parent");

	/* from a descriptor of the root, and from a subdirectory, the same */
	int root = open(M.mnt, O_RDONLY | O_DIRECTORY);
	cr_assert_geq(root, 0);
	MNT_EXPECT_OK(fstatat(root, "..", &up, 0));
	cr_assert(up.st_ino == parent.st_ino, "openat(root, \"..\") escaped elsewhere");
	MNT_EXPECT_OK(mkdirat(root, "sub", 0755));
	MNT_EXPECT_OK(fstatat(root, "sub/../..", &up, 0));
	cr_assert(up.st_ino == parent.st_ino, "sub/../.. is not the mountpoint's parent");
	/* a name with ".." inside is only a name */
	MNT_EXPECT_ERRNO(fstatat(root, "..x", &up, 0), ENOENT);
	close(root);
	cr_assert(!dir_lists(mnt_path(&M, ""), "s"), "SOURCE's siblings visible in the mount");
	mnt_cr_finish(&M);
}

Test(hostile, symlink_outside_not_followed)
{
	char buf[PATH_MAX];
	struct stat st, target;

	MNT_EXPECT_OK(symlink("/etc/passwd", src_path(&M, "pw")));
	MNT_EXPECT_OK(lstat(mnt_path(&M, "pw"), &st));
	cr_assert(S_ISLNK(st.st_mode), "lstat through the mount: mode %o, not a link", st.st_mode);
	cr_assert_eq(st.st_size, (off_t)strlen("/etc/passwd"), "link size %lld is not the target "
		     "text's", (long long)st.st_size);
	MNT_EXPECT_OK(stat("/etc/passwd", &target));
	cr_assert(st.st_ino != target.st_ino || st.st_dev != target.st_dev);
	ssize_t n = readlink(mnt_path(&M, "pw"), buf, sizeof(buf) - 1);
	cr_assert_eq(n, (ssize_t)strlen("/etc/passwd"), "readlink: %zd", n);
	buf[n] = '\0';
	cr_assert_str_eq(buf, "/etc/passwd");
	MNT_EXPECT_ERRNO(open(mnt_path(&M, "pw"), O_RDONLY | O_NOFOLLOW), ELOOP);
	/* directory listing reports a link too */
	DIR *d = opendir(M.mnt);
	struct dirent *de;
	bool seen = false;
	cr_assert_not_null(d);
	while ((de = readdir(d)))
		if (!strcmp(de->d_name, "pw")) {
			seen = true;
			cr_assert(de->d_type == DT_LNK || de->d_type == DT_UNKNOWN, "d_type %d",
				  de->d_type);
		}
	closedir(d);
	cr_assert(seen);
	mnt_cr_finish(&M);
}

Test(hostile, create_through_planted_dangling_symlink)
{
	struct stat st;
	const char *outside = base_path(&M, "outside/created");

	/* the kernel caches "dl does not exist" (negative_timeout=30)... */
	MNT_EXPECT_ERRNO(stat(mnt_path(&M, "dl"), &st), ENOENT);
	/* ...then a link appears on SOURCE behind the mount; followed from SOURCE it leads to
	 * base/outside/created, from the mount to base/m1/outside/created (no such dir) */
	MNT_EXPECT_OK(symlink("../../outside/created", src_path(&M, "dl")));

	errno = 0;
	int fd = open(mnt_path(&M, "dl"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int e = errno;
	if (fd >= 0)
		close(fd);
	cr_assert_eq(access(outside, F_OK), -1, "%s was created outside SOURCE", outside);
	cr_assert_eq(errno, ENOENT);
	cr_assert_eq(fd, -1, "create through the planted link succeeded");
	cr_log_info("create through a planted dangling link: %s", strerrorname_np(e));
	cr_assert(e == ELOOP || e == EEXIST || e == ENOENT, "unexpected errno %s",
		  strerrorname_np(e));
	/* SOURCE still holds the link, unchanged */
	MNT_EXPECT_OK(lstat(src_path(&M, "dl"), &st));
	cr_assert(S_ISLNK(st.st_mode));

	/* an absolute dangling target, created through the mount by name: nothing outside */
	MNT_EXPECT_ERRNO(stat(mnt_path(&M, "dl2"), &st), ENOENT);
	MNT_EXPECT_OK(symlink(outside, src_path(&M, "dl2")));
	fd = open(mnt_path(&M, "dl2"), O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd >= 0)
		close(fd);
	cr_assert_eq(access(outside, F_OK), -1, "%s was created outside SOURCE", outside);
	cr_assert_eq(fd, -1, "O_EXCL create over a planted link succeeded");
	mnt_cr_finish(&M);
}

/* In a child: a create of `arg` for writing; exit code 0 on success, else its errno. */
static int create_wronly(void *arg)
{
	int fd = open(arg, O_WRONLY | O_CREAT, 0644);

	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

Test(hostile, create_over_planted_fifo_or_device)
{
	struct stat st;

	/* negative entries cached (negative_timeout=30), then the nodes appear on SOURCE */
	MNT_EXPECT_ERRNO(stat(mnt_path(&M, "ff"), &st), ENOENT);
	MNT_EXPECT_ERRNO(stat(mnt_path(&M, "nul"), &st), ENOENT);
	MNT_EXPECT_OK(mkfifo(src_path(&M, "ff"), 0666));
	MNT_EXPECT_OK(mknod(src_path(&M, "nul"), S_IFCHR | 0666, makedev(1, 3)));

	int rc = mnt_fork_run(create_wronly, (void *)mnt_path(&M, "ff"), 5000);
	if (rc != EEXIST) {
		/* a daemon thread may sit in open() on the FIFO: a reader lets it go */
		int rfd = open(src_path(&M, "ff"), O_RDONLY | O_NONBLOCK);
		usleep(200000);
		if (rfd >= 0)
			close(rfd);
	}
	cr_assert_eq(rc, EEXIST, "create over a planted FIFO: %s (exit %d; 137: it hung)",
		     rc > 0 && rc < 128 ? strerrorname_np(rc) : "-", rc);
	rc = mnt_fork_run(create_wronly, (void *)mnt_path(&M, "nul"), 5000);
	cr_assert_eq(rc, EEXIST, "create over a planted device node: %s (exit %d)",
		     rc > 0 && rc < 128 ? strerrorname_np(rc) : "-", rc);
	MNT_EXPECT_OK(lstat(src_path(&M, "ff"), &st));
	cr_assert(S_ISFIFO(st.st_mode), "the FIFO was replaced");
	MNT_EXPECT_OK(lstat(src_path(&M, "nul"), &st));
	cr_assert(S_ISCHR(st.st_mode), "the device node was replaced");
	/* a plain create still works, and so does one over a planted regular file */
	MNT_EXPECT_ERRNO(stat(mnt_path(&M, "reg"), &st), ENOENT);
	cr_assert_eq(mnt_put(src_path(&M, "reg"), "old", 3, 0644), 0);
	cr_assert_eq(mnt_fork_run(create_wronly, (void *)mnt_path(&M, "reg"), 5000), 0);
	cr_assert_eq(mnt_fork_run(create_wronly, (void *)mnt_path(&M, "new"), 5000), 0);
	MNT_EXPECT_OK(lstat(src_path(&M, "new"), &st));
	cr_assert(S_ISREG(st.st_mode));
	mnt_cr_finish(&M);
}
