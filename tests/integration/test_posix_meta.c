/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * posix_meta: metadata through the mount - chmod, chown, utimensat (ns, UTIME_OMIT,
 * UTIME_NOW), mknod (fifo, socket, char device), symlink/readlink, hard links and lookups that
 * survive the kernel forgetting inodes. Every effect is checked in SOURCE. And inode numbers
 * when SOURCE spans file systems: two fresh tmpfs mounted under SOURCE number their inodes
 * alike, and the mount (one st_dev) must still show distinct numbers, while locks still
 * key on the backing file.
 */
#include <criterion/criterion.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "mount.h"

static struct mnt M;

static void setup(void)
{
	mnt_cr_setup(&M, NULL);
}

/* tmpfs mounted under SOURCE by a test, unmounted here even when the test failed */
static char nested[2][PATH_MAX];

static void teardown(void)
{
	for (int i = 0; i < 2; i++)
		if (nested[i][0])
			umount2(nested[i], MNT_DETACH);
	mnt_cr_teardown(&M);
}

TestSuite(posix_meta, .init = setup, .fini = teardown, .timeout = 60);

static struct stat lstat_ok(const char *path)
{
	struct stat st;

	cr_assert_eq(lstat(path, &st), 0, "lstat %s: %s", path, strerror(errno));
	return st;
}

static long long ts_ns(struct timespec t)
{
	return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

Test(posix_meta, chmod_is_applied_in_source)
{
	cr_assert_eq(mnt_put(src_path(&M, "f"), "x", 1, 0644), 0);
	MNT_EXPECT_OK(chmod(mnt_path(&M, "f"), 0751));
	cr_assert_eq(lstat_ok(src_path(&M, "f")).st_mode & 07777, 0751);
	MNT_EXPECT_OK(chmod(mnt_path(&M, "f"), 04600));
	cr_assert_eq(lstat_ok(src_path(&M, "f")).st_mode & 07777, 04600);
	cr_assert_eq(lstat_ok(mnt_path(&M, "f")).st_mode & 07777, 04600);
	cr_assert_eq(mkdir(mnt_path(&M, "d"), 0755), 0);
	MNT_EXPECT_OK(chmod(mnt_path(&M, "d"), 01777));
	cr_assert_eq(lstat_ok(src_path(&M, "d")).st_mode & 07777, 01777);
	mnt_cr_finish(&M);
}

Test(posix_meta, chown_is_applied_in_source)
{
	struct stat st;

	cr_assert_eq(mnt_put(src_path(&M, "o"), "x", 1, 0644), 0);
	MNT_EXPECT_OK(chown(mnt_path(&M, "o"), 1234, 5678));
	st = lstat_ok(src_path(&M, "o"));
	cr_assert_eq(st.st_uid, 1234);
	cr_assert_eq(st.st_gid, 5678);
	/* -1 leaves a field alone */
	MNT_EXPECT_OK(chown(mnt_path(&M, "o"), (uid_t)-1, 42));
	st = lstat_ok(src_path(&M, "o"));
	cr_assert_eq(st.st_uid, 1234);
	cr_assert_eq(st.st_gid, 42);
	st = lstat_ok(mnt_path(&M, "o"));
	cr_assert_eq(st.st_uid, 1234);
	cr_assert_eq(st.st_gid, 42);
	mnt_cr_finish(&M);
}

Test(posix_meta, utimensat_sets_nanoseconds)
{
	struct timespec ts[2] = { { 1000000000, 123456789 }, { 1500000000, 987654321 } };
	struct stat st;

	cr_assert_eq(mnt_put(src_path(&M, "t"), "x", 1, 0644), 0);
	MNT_EXPECT_OK(utimensat(AT_FDCWD, mnt_path(&M, "t"), ts, 0));
	st = lstat_ok(src_path(&M, "t"));
	cr_assert_eq(st.st_atim.tv_sec, 1000000000);
	cr_assert_eq(st.st_atim.tv_nsec, 123456789);
	cr_assert_eq(st.st_mtim.tv_sec, 1500000000);
	cr_assert_eq(st.st_mtim.tv_nsec, 987654321);
	st = lstat_ok(mnt_path(&M, "t"));
	cr_assert_eq(st.st_mtim.tv_nsec, 987654321);
	mnt_cr_finish(&M);
}

Test(posix_meta, utimensat_omit_keeps_and_now_sets_current_time)
{
	struct timespec set[2] = { { 1000000000, 111 }, { 1200000000, 222 } };
	struct timespec omit_a[2] = { { 0, UTIME_OMIT }, { 1300000000, 333 } };
	struct timespec now_m[2] = { { 0, UTIME_OMIT }, { 0, UTIME_NOW } };
	struct timespec before, after;
	struct stat st;

	cr_assert_eq(mnt_put(src_path(&M, "u"), "x", 1, 0644), 0);
	MNT_EXPECT_OK(utimensat(AT_FDCWD, mnt_path(&M, "u"), set, 0));
	MNT_EXPECT_OK(utimensat(AT_FDCWD, mnt_path(&M, "u"), omit_a, 0));
	st = lstat_ok(src_path(&M, "u"));
	cr_assert_eq(st.st_atim.tv_sec, 1000000000, "UTIME_OMIT changed atime");
	cr_assert_eq(st.st_atim.tv_nsec, 111);
	cr_assert_eq(st.st_mtim.tv_sec, 1300000000);
	cr_assert_eq(st.st_mtim.tv_nsec, 333);

	clock_gettime(CLOCK_REALTIME, &before);
	MNT_EXPECT_OK(utimensat(AT_FDCWD, mnt_path(&M, "u"), now_m, 0));
	clock_gettime(CLOCK_REALTIME, &after);
	st = lstat_ok(src_path(&M, "u"));
	cr_assert_eq(st.st_atim.tv_sec, 1000000000, "UTIME_OMIT changed atime");
	cr_assert_eq(st.st_atim.tv_nsec, 111);
	/* coarse kernel clock: allow 20 ms of granularity below `before` */
	cr_assert(ts_ns(st.st_mtim) >= ts_ns(before) - 20000000LL &&
		  ts_ns(st.st_mtim) <= ts_ns(after) + 20000000LL,
		  "UTIME_NOW gave mtime %lld, call ran in [%lld, %lld]", ts_ns(st.st_mtim),
		  ts_ns(before), ts_ns(after));
	/* NULL times = both now */
	MNT_EXPECT_OK(utimensat(AT_FDCWD, mnt_path(&M, "u"), NULL, 0));
	st = lstat_ok(src_path(&M, "u"));
	cr_assert_geq(st.st_atim.tv_sec, before.tv_sec);
	mnt_cr_finish(&M);
}

Test(posix_meta, futimens_on_open_handle)
{
	struct timespec ts[2] = { { 1400000000, 5 }, { 1400000001, 6 } };
	struct stat st;
	int fd;

	fd = open(mnt_path(&M, "fu"), O_RDWR | O_CREAT, 0644);
	cr_assert_geq(fd, 0);
	MNT_EXPECT_OK(futimens(fd, ts));
	close(fd);
	st = lstat_ok(src_path(&M, "fu"));
	cr_assert_eq(st.st_mtim.tv_sec, 1400000001);
	cr_assert_eq(st.st_mtim.tv_nsec, 6);
	mnt_cr_finish(&M);
}

Test(posix_meta, mknod_fifo_appears_in_source)
{
	struct stat st;

	MNT_EXPECT_OK(mkfifo(mnt_path(&M, "fifo"), 0640));
	st = lstat_ok(src_path(&M, "fifo"));
	cr_assert(S_ISFIFO(st.st_mode), "SOURCE object is not a fifo (mode %o)", st.st_mode);
	cr_assert_eq(st.st_mode & 07777, 0640);
	st = lstat_ok(mnt_path(&M, "fifo"));
	cr_assert(S_ISFIFO(st.st_mode));
	MNT_EXPECT_ERRNO(mkfifo(mnt_path(&M, "fifo"), 0640), EEXIST);
	mnt_cr_finish(&M);
}

Test(posix_meta, mknod_socket_appears_in_source)
{
	struct stat st;

	MNT_EXPECT_OK(mknod(mnt_path(&M, "sock"), S_IFSOCK | 0600, 0));
	st = lstat_ok(src_path(&M, "sock"));
	cr_assert(S_ISSOCK(st.st_mode), "SOURCE object is not a socket (mode %o)", st.st_mode);
	cr_assert_eq(st.st_mode & 07777, 0600);
	cr_assert(S_ISSOCK(lstat_ok(mnt_path(&M, "sock")).st_mode));
	mnt_cr_finish(&M);
}

Test(posix_meta, mknod_char_device_as_root)
{
	struct stat st;

	/* can this machine make device nodes at all? */
	if (mknod(base_path(&M, "probe-null"), S_IFCHR | 0600, makedev(1, 3)) != 0) {
		int e = errno;

		mnt_cr_finish(&M);
		cr_skip("mknod of a char device is not permitted here even outside FUSE: %s",
			strerror(e));
	}
	MNT_EXPECT_OK(mknod(mnt_path(&M, "null"), S_IFCHR | 0666, makedev(1, 3)));
	st = lstat_ok(src_path(&M, "null"));
	cr_assert(S_ISCHR(st.st_mode), "SOURCE object is not a char device (mode %o)",
		  st.st_mode);
	cr_assert_eq(major(st.st_rdev), 1);
	cr_assert_eq(minor(st.st_rdev), 3);
	st = lstat_ok(mnt_path(&M, "null"));
	cr_assert(S_ISCHR(st.st_mode));
	cr_assert_eq(st.st_rdev, makedev(1, 3));
	mnt_cr_finish(&M);
}

Test(posix_meta, symlink_and_readlink_roundtrip)
{
	char buf[256];
	ssize_t n;
	struct stat st;

	MNT_EXPECT_OK(symlink("some/relative/target", mnt_path(&M, "ln")));
	n = readlink(src_path(&M, "ln"), buf, sizeof(buf));
	cr_assert_eq(n, 20, "readlink in SOURCE: %zd", n);
	cr_assert_arr_eq(buf, "some/relative/target", 20);
	cr_assert_eq(symlink("/abs/target/from/source", src_path(&M, "ln2")), 0);
	n = readlink(mnt_path(&M, "ln2"), buf, sizeof(buf));
	cr_assert_eq(n, 23, "readlink via mount: %zd (%s)", n, strerror(errno));
	cr_assert_arr_eq(buf, "/abs/target/from/source", 23);
	st = lstat_ok(mnt_path(&M, "ln"));
	cr_assert(S_ISLNK(st.st_mode));
	cr_assert_eq(st.st_size, 20);
	/* a link is resolved by the caller: through it we reach the target in the mount */
	cr_assert_eq(mnt_put(src_path(&M, "target"), "T", 1, 0644), 0);
	MNT_EXPECT_OK(symlink("target", mnt_path(&M, "ln3")));
	cr_assert_eq(mnt_get(mnt_path(&M, "ln3"), buf, sizeof(buf)), 1);
	cr_assert_eq(buf[0], 'T');
	MNT_EXPECT_ERRNO(readlink(mnt_path(&M, "target"), buf, sizeof(buf)), EINVAL);
	mnt_cr_finish(&M);
}

Test(posix_meta, hard_link_shares_inode_and_counts)
{
	struct stat a, b, s1, s2;

	cr_assert_eq(mnt_put(mnt_path(&M, "h1"), "shared", 6, 0644), 0);
	MNT_EXPECT_OK(link(mnt_path(&M, "h1"), mnt_path(&M, "h2")));
	s1 = lstat_ok(src_path(&M, "h1"));
	s2 = lstat_ok(src_path(&M, "h2"));
	cr_assert_eq(s1.st_ino, s2.st_ino, "SOURCE names are not the same inode");
	cr_assert_eq(s1.st_nlink, 2);
	a = lstat_ok(mnt_path(&M, "h1"));
	b = lstat_ok(mnt_path(&M, "h2"));
	cr_assert_eq(a.st_ino, b.st_ino, "mount shows two inodes for one file");
	cr_assert_eq(a.st_nlink, 2);
	cr_assert_eq(b.st_nlink, 2);
	cr_assert_eq(mnt_put(mnt_path(&M, "h2"), "SHARED", 6, 0644), 0);
	{
		char buf[8];

		cr_assert_eq(mnt_get(mnt_path(&M, "h1"), buf, sizeof(buf)), 6);
		cr_assert_arr_eq(buf, "SHARED", 6);
	}
	MNT_EXPECT_OK(unlink(mnt_path(&M, "h1")));
	cr_assert_eq(lstat_ok(src_path(&M, "h2")).st_nlink, 1);
	cr_assert_eq(lstat_ok(mnt_path(&M, "h2")).st_nlink, 1);
	MNT_EXPECT_ERRNO(link(mnt_path(&M, "h2"), mnt_path(&M, "h2")), EEXIST);
	mnt_cr_finish(&M);
}

/* The kernel forgets inodes under memory pressure; lookups must work again afterwards. */
Test(posix_meta, lookups_survive_forget)
{
	char name[32];
	int fd;
	FILE *dc;

	cr_assert_eq(mkdir(src_path(&M, "many"), 0755), 0);
	for (int i = 0; i < 500; i++) {
		snprintf(name, sizeof(name), "many/f%03d", i);
		cr_assert_eq(mnt_put(src_path(&M, name), name, strlen(name), 0644), 0);
	}
	for (int i = 0; i < 500; i++) {
		struct stat st;

		snprintf(name, sizeof(name), "many/f%03d", i);
		cr_assert_eq(stat(mnt_path(&M, name), &st), 0, "stat %s: %s", name,
			     strerror(errno));
		cr_assert_eq(st.st_size, (off_t)strlen(name));
	}
	/* hold one open across the forget storm */
	fd = open(mnt_path(&M, "many/f007"), O_RDONLY);
	cr_assert_geq(fd, 0);
	sync();
	dc = fopen("/proc/sys/vm/drop_caches", "w");
	if (dc) {
		fputs("2\n", dc); /* dentries and inodes: sends FORGETs */
		fclose(dc);
	} else {
		/* Not cr_log_warn: Criterion 2.4 makes any warning a non-zero exit. */
		fprintf(stderr, "warning: cannot write drop_caches (%s): FORGET not forced\n",
			strerror(errno));
	}
	for (int i = 0; i < 500; i++) {
		char buf[32];

		snprintf(name, sizeof(name), "many/f%03d", i);
		cr_assert_eq(mnt_get(mnt_path(&M, name), buf, sizeof(buf)), (ssize_t)strlen(name),
			     "%s after forget", name);
		cr_assert_arr_eq(buf, name, strlen(name));
	}
	{
		char buf[32];

		cr_assert_eq(pread(fd, buf, sizeof(buf), 0), 9);
		cr_assert_arr_eq(buf, "many/f007", 9);
	}
	close(fd);
	mnt_cr_finish(&M);
}

/* In a child: F_SETLK of byte 0 of `arg` (opened without O_CREAT); exit 0 or the errno. */
static int try_lock(void *arg)
{
	struct flock wl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1 };
	int fd = open(arg, O_RDWR);

	if (fd < 0)
		return errno;
	int rc = fcntl(fd, F_SETLK, &wl) == 0 ? 0 : errno;
	close(fd);
	return rc;
}

/* d_ino of `name` as readdir() on the mount shows it, 0 if not listed */
static ino_t listed_ino(const char *dir, const char *name)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	ino_t ino = 0;

	cr_assert_not_null(d, "opendir %s: %s", dir, strerror(errno));
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, name) == 0)
			ino = e->d_ino;
	closedir(d);
	return ino;
}

Test(posix_meta, inode_numbers_stay_distinct_across_file_systems)
{
	static const char *const rel[2] = { "t1", "t2" };
	struct stat src_root[2], src_f[2], root, top[2], f[2], g;

	for (int i = 0; i < 2; i++) {
		MNT_EXPECT_OK(mkdir(src_path(&M, rel[i]), 0755));
		snprintf(nested[i], sizeof(nested[i]), "%s", src_path(&M, rel[i]));
		if (mount("cfqfs-test", nested[i], "tmpfs", 0, "size=1m") != 0) {
			nested[i][0] = '\0';
			cr_skip_test("cannot mount a tmpfs under SOURCE: %s", strerror(errno));
		}
		cr_assert_eq(mnt_put(src_path(&M, i ? "t2/f" : "t1/f"), "x", 1, 0644), 0);
		src_root[i] = lstat_ok(nested[i]);
		src_f[i] = lstat_ok(src_path(&M, i ? "t2/f" : "t1/f"));
	}
	/* the case to handle: equal numbers on different devices */
	cr_assert_neq(src_root[0].st_dev, src_root[1].st_dev);
	cr_assert_eq(src_root[0].st_ino, src_root[1].st_ino,
		     "two fresh tmpfs roots differ in number (%ju, %ju): nothing to test",
		     (uintmax_t)src_root[0].st_ino, (uintmax_t)src_root[1].st_ino);
	cr_assert_eq(src_f[0].st_ino, src_f[1].st_ino, "first files of two fresh tmpfs differ");

	MNT_EXPECT_OK(link(mnt_path(&M, "t1/f"), mnt_path(&M, "t1/g")));
	root = lstat_ok(mnt_path(&M, ""));
	for (int i = 0; i < 2; i++) {
		top[i] = lstat_ok(mnt_path(&M, rel[i]));
		f[i] = lstat_ok(mnt_path(&M, i ? "t2/f" : "t1/f"));
	}
	g = lstat_ok(mnt_path(&M, "t1/g"));
	const struct stat *all[] = { &root, &top[0], &top[1], &f[0], &f[1] };
	for (size_t i = 0; i < 5; i++)
		for (size_t j = i + 1; j < 5; j++)
			cr_assert_neq(all[i]->st_ino, all[j]->st_ino,
				      "objects %zu and %zu show inode %ju through the mount "
				      "(root, t1, t2, t1/f, t2/f)", i, j, (uintmax_t)all[i]->st_ino);
	cr_assert_eq(g.st_ino, f[0].st_ino, "a hard link shows another inode number");
	cr_assert_eq(listed_ino(mnt_path(&M, "t1"), "f"), f[0].st_ino, "d_ino != st_ino in t1");
	cr_assert_eq(listed_ino(mnt_path(&M, "t2"), "f"), f[1].st_ino, "d_ino != st_ino in t2");
	/* A record lock taken through the handle create returned conflicts with one asked
	 * through a plain open by another process: both handles name the same backing file. */
	int cfd = open(mnt_path(&M, "t2/lk"), O_RDWR | O_CREAT | O_EXCL, 0644);
	cr_assert_geq(cfd, 0, "create t2/lk: %s", strerror(errno));
	struct flock wl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1 };
	cr_assert_eq(fcntl(cfd, F_SETLK, &wl), 0, "lock t2/lk: %s", strerror(errno));
	int rc = mnt_fork_run(try_lock, (void *)mnt_path(&M, "t2/lk"), 10000);
	close(cfd);
	cr_assert(rc == EAGAIN || rc == EACCES, "a second process locked t2/lk beside the "
		  "creator's lock: %s (exit %d)", rc > 0 && rc < 128 ? strerror(rc) : "-", rc);
	/* after the kernel forgets them, the same numbers come back */
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
	if (fd >= 0) {
		cr_assert_eq(write(fd, "2", 1), 1);
		close(fd);
	}
	cr_assert_eq(lstat_ok(mnt_path(&M, "t2/f")).st_ino, f[1].st_ino);
	cr_assert_eq(lstat_ok(mnt_path(&M, "t1")).st_ino, top[0].st_ino);
	mnt_cr_finish(&M);
}

/* A lookup that found nothing is not cached by default (negative_timeout=0, passthrough_ll's
 * choice): a file created in SOURCE directly is seen through the mount at once. */
Test(posix_meta, a_missed_lookup_is_not_cached_by_default)
{
	struct stat st;

	cr_assert_eq(lstat(mnt_path(&M, "late"), &st), -1);
	cr_assert_eq(errno, ENOENT);
	cr_assert_eq(mnt_put(src_path(&M, "late"), "x", 1, 0644), 0);
	cr_assert_eq(lstat(mnt_path(&M, "late"), &st), 0,
		     "a file made in SOURCE after a missed lookup is not seen: %s",
		     strerror(errno));
	mnt_cr_finish(&M);
}

static void setup_negative(void)
{
	const char *args[] = { "-o", "negative_timeout=60", NULL };

	mnt_cr_setup(&M, args);
}

TestSuite(posix_meta_negative, .init = setup_negative, .fini = teardown, .timeout = 60);

/* negative_timeout=SECS lets the kernel cache the miss: the same file stays unseen (well
 * within the 60 s asked), while one created through the mount is seen at once. */
Test(posix_meta_negative, a_missed_lookup_is_cached_for_negative_timeout)
{
	struct stat st;

	cr_assert_eq(lstat(mnt_path(&M, "late"), &st), -1);
	cr_assert_eq(mnt_put(src_path(&M, "late"), "x", 1, 0644), 0);
	cr_expect_eq(lstat(mnt_path(&M, "late"), &st), -1,
		     "negative_timeout=60: the miss was not cached");
	cr_assert_eq(lstat(mnt_path(&M, "via"), &st), -1);
	cr_assert_eq(mnt_put(mnt_path(&M, "via"), "x", 1, 0644), 0);
	cr_expect_eq(lstat(mnt_path(&M, "via"), &st), 0, "a create through the mount: %s",
		     strerror(errno));
	mnt_cr_finish(&M);
}
