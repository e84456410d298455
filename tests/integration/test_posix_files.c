/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * posix_files: file data through the mount - read/write both ways, open flags, truncate,
 * unlink of open files, sparse files and SEEK_DATA/SEEK_HOLE, offsets past 4 GiB, fallocate,
 * copy_file_range, fsync/fdatasync, statfs and access. Every effect is checked in SOURCE.
 */
#include <criterion/criterion.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
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

TestSuite(posix_files, .init = setup, .fini = teardown, .timeout = 60);

/* Deterministic, position-dependent bytes so a misplaced block shows up. */
static void pattern(unsigned char *buf, size_t len, uint64_t seed)
{
	uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;

	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = (unsigned char)x;
	}
}

static off_t file_size(const char *path)
{
	struct stat st;

	cr_assert_eq(stat(path, &st), 0, "stat %s: %s", path, strerror(errno));
	return st.st_size;
}

static void expect_content(const char *path, const void *want, size_t len)
{
	unsigned char *buf = malloc(len + 16);
	ssize_t n;

	cr_assert_not_null(buf);
	n = mnt_get(path, buf, len + 16);
	cr_assert_eq(n, (ssize_t)len, "%s: read %zd bytes, expected %zu", path, n, len);
	cr_assert(memcmp(buf, want, len) == 0, "%s: content differs", path);
	free(buf);
}

static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	cr_assert_not_null(d, "opendir %s: %s", dir, strerror(errno));
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

Test(posix_files, write_via_mount_is_visible_in_source)
{
	const char data[] = "written through the mount\n";

	cr_assert_eq(mnt_put(mnt_path(&M, "a.txt"), data, strlen(data), 0644), 0);
	expect_content(src_path(&M, "a.txt"), data, strlen(data));
	mnt_cr_finish(&M);
}

Test(posix_files, write_in_source_is_visible_via_mount)
{
	const char data[] = "written in SOURCE directly\n";

	cr_assert_eq(mnt_put(src_path(&M, "b.txt"), data, strlen(data), 0644), 0);
	expect_content(mnt_path(&M, "b.txt"), data, strlen(data));
	mnt_cr_finish(&M);
}

Test(posix_files, large_write_roundtrips_byte_exact)
{
	size_t len = 3 * 1024 * 1024 + 123;
	unsigned char *data = malloc(len);

	cr_assert_not_null(data);
	pattern(data, len, 7);
	cr_assert_eq(mnt_put(mnt_path(&M, "big"), data, len, 0644), 0);
	expect_content(src_path(&M, "big"), data, len);
	expect_content(mnt_path(&M, "big"), data, len);
	free(data);
	mnt_cr_finish(&M);
}

Test(posix_files, pread_pwrite_at_offsets_hit_the_right_bytes)
{
	unsigned char data[65536], back[100];
	int fd;

	pattern(data, sizeof(data), 3);
	cr_assert_eq(mnt_put(src_path(&M, "p"), data, sizeof(data), 0644), 0);
	fd = open(mnt_path(&M, "p"), O_RDWR);
	cr_assert_geq(fd, 0, "open: %s", strerror(errno));
	cr_assert_eq(pread(fd, back, 100, 40000), 100);
	cr_assert_arr_eq(back, data + 40000, 100);
	cr_assert_eq(pwrite(fd, "XYZ", 3, 12345), 3);
	/* past EOF: nothing, not an error */
	cr_assert_eq(pread(fd, back, 100, 65536), 0);
	cr_assert_eq(pread(fd, back, 100, 65500), 36);
	close(fd);
	memcpy(data + 12345, "XYZ", 3);
	expect_content(src_path(&M, "p"), data, sizeof(data));
	mnt_cr_finish(&M);
}

Test(posix_files, getattr_matches_source)
{
	struct stat s, m;
	struct timespec ts[2] = { { 1111111111, 222222222 }, { 1333333333, 444444444 } };

	cr_assert_eq(mnt_put(src_path(&M, "g"), "0123456789", 10, 0640), 0);
	cr_assert_eq(chown(src_path(&M, "g"), 1234, 5678), 0);
	cr_assert_eq(chmod(src_path(&M, "g"), 0640), 0);
	cr_assert_eq(utimensat(AT_FDCWD, src_path(&M, "g"), ts, 0), 0);
	cr_assert_eq(stat(src_path(&M, "g"), &s), 0);
	cr_assert_eq(stat(mnt_path(&M, "g"), &m), 0, "stat via mount: %s", strerror(errno));
	cr_assert_eq(m.st_mode, s.st_mode, "mode %o vs %o", m.st_mode, s.st_mode);
	cr_assert_eq(m.st_uid, 1234);
	cr_assert_eq(m.st_gid, 5678);
	cr_assert_eq(m.st_size, 10);
	cr_assert_eq(m.st_nlink, 1);
	cr_assert_eq(m.st_blocks, s.st_blocks);
	cr_assert_eq(m.st_mtim.tv_sec, 1333333333);
	cr_assert_eq(m.st_mtim.tv_nsec, 444444444);
	cr_assert_eq(m.st_atim.tv_sec, 1111111111);
	cr_assert_eq(m.st_atim.tv_nsec, 222222222);
	mnt_cr_finish(&M);
}

Test(posix_files, create_excl_on_existing_gives_eexist)
{
	cr_assert_eq(mnt_put(src_path(&M, "e"), "keep", 4, 0644), 0);
	MNT_EXPECT_ERRNO(open(mnt_path(&M, "e"), O_WRONLY | O_CREAT | O_EXCL, 0644), EEXIST);
	expect_content(src_path(&M, "e"), "keep", 4);
	mnt_cr_finish(&M);
}

Test(posix_files, create_excl_new_file_applies_mode_and_umask)
{
	struct stat st;
	int fd;

	umask(077);
	fd = open(mnt_path(&M, "new"), O_WRONLY | O_CREAT | O_EXCL, 0666);
	umask(022);
	cr_assert_geq(fd, 0, "open O_EXCL: %s", strerror(errno));
	cr_assert_eq(write(fd, "n", 1), 1);
	close(fd);
	cr_assert_eq(lstat(src_path(&M, "new"), &st), 0);
	cr_assert(S_ISREG(st.st_mode));
	cr_assert_eq(st.st_mode & 07777, 0600, "mode %o, expected 0600", st.st_mode & 07777);
	cr_assert_eq(st.st_uid, 0);
	cr_assert_eq(st.st_gid, 0);
	expect_content(src_path(&M, "new"), "n", 1);
	mnt_cr_finish(&M);
}

Test(posix_files, open_trunc_empties_file)
{
	int fd;

	cr_assert_eq(mnt_put(src_path(&M, "t"), "some old content", 16, 0644), 0);
	fd = open(mnt_path(&M, "t"), O_WRONLY | O_TRUNC);
	cr_assert_geq(fd, 0, "open O_TRUNC: %s", strerror(errno));
	cr_assert_eq(file_size(src_path(&M, "t")), 0);
	cr_assert_eq(write(fd, "new", 3), 3);
	close(fd);
	expect_content(src_path(&M, "t"), "new", 3);
	mnt_cr_finish(&M);
}

Test(posix_files, append_writes_land_at_end)
{
	int plain, app;
	char buf[64];

	cr_assert_eq(mnt_put(src_path(&M, "log"), "AAAA", 4, 0644), 0);
	plain = open(mnt_path(&M, "log"), O_WRONLY);
	app = open(mnt_path(&M, "log"), O_WRONLY | O_APPEND);
	cr_assert(plain >= 0 && app >= 0, "open: %s", strerror(errno));
	cr_assert_eq(lseek(app, 0, SEEK_SET), 0);
	cr_assert_eq(write(app, "BBBB", 4), 4);  /* offset 0 ignored: lands at 4 */
	cr_assert_eq(pwrite(plain, "CCCC", 4, 8), 4);
	cr_assert_eq(write(app, "DD", 2), 2);	/* lands at 12 */
	close(plain);
	close(app);
	cr_assert_eq(mnt_get(src_path(&M, "log"), buf, sizeof(buf)), 14);
	cr_assert_arr_eq(buf, "AAAABBBBCCCCDD", 14);
	mnt_cr_finish(&M);
}

/*
 * fcntl(F_SETFL) that clears O_APPEND, then writes at chosen offsets and a copy_file_range
 * into the file: the same as on SOURCE directly. The backing fd keeps the O_APPEND it was
 * opened with (the kernel does not pass F_SETFL on), so through the mount every write went to
 * the end ("AAAABC" for "BCAA") and copy_file_range failed with EBADF.
 */
static void cleared_append(const char *path, const char *from, char *out, size_t outlen)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644), src;
	loff_t in_off = 0, out_off = 2;

	cr_assert_geq(fd, 0, "open %s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, "AAAA", 4), 4);
	cr_assert_eq(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_APPEND), 0);
	cr_assert_eq(pwrite(fd, "B", 1, 0), 1);
	cr_assert_eq(lseek(fd, 1, SEEK_SET), 1);
	cr_assert_eq(write(fd, "C", 1), 1);
	src = open(from, O_RDONLY);
	cr_assert_geq(src, 0, "open %s: %s", from, strerror(errno));
	cr_assert_eq(copy_file_range(src, &in_off, fd, &out_off, 1, 0), 1,
		     "copy_file_range into %s: %s", path, strerror(errno));
	/* and setting it again appends again */
	cr_assert_eq(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_APPEND), 0);
	cr_assert_eq(pwrite(fd, "E", 1, 0), 1);
	close(src);
	close(fd);
	memset(out, 0, outlen);
	cr_assert_eq(mnt_get(path, out, outlen - 1), 5, "%s: size", path);
}

Test(posix_files, clearing_o_append_with_fcntl_writes_at_the_offset_as_on_source)
{
	char native[16], mounted[16];

	cr_assert_eq(mnt_put(src_path(&M, "x"), "X", 1, 0644), 0);
	cleared_append(src_path(&M, "n"), src_path(&M, "x"), native, sizeof(native));
	cleared_append(mnt_path(&M, "m"), mnt_path(&M, "x"), mounted, sizeof(mounted));
	cr_assert_str_eq(native, "BCXAE", "SOURCE itself gave \"%s\"", native);
	cr_assert_str_eq(mounted, native, "through the mount \"%s\", natively \"%s\"",
			 mounted, native);
	mnt_cr_finish(&M);
}

Test(posix_files, truncate_down_then_up_zero_fills)
{
	unsigned char data[10000], back[6000], zeros[4900] = { 0 };

	pattern(data, sizeof(data), 11);
	cr_assert_eq(mnt_put(mnt_path(&M, "tr"), data, sizeof(data), 0644), 0);
	MNT_EXPECT_OK(truncate(mnt_path(&M, "tr"), 100));
	cr_assert_eq(file_size(src_path(&M, "tr")), 100);
	expect_content(src_path(&M, "tr"), data, 100);
	MNT_EXPECT_OK(truncate(mnt_path(&M, "tr"), 5000));
	cr_assert_eq(file_size(src_path(&M, "tr")), 5000);
	cr_assert_eq(mnt_get(src_path(&M, "tr"), back, sizeof(back)), 5000);
	cr_assert_arr_eq(back, data, 100);
	cr_assert_arr_eq(back + 100, zeros, 4900);
	cr_assert_eq(mnt_get(mnt_path(&M, "tr"), back, sizeof(back)), 5000);
	cr_assert_arr_eq(back + 100, zeros, 4900);
	mnt_cr_finish(&M);
}

Test(posix_files, ftruncate_on_open_handle)
{
	int fd;

	cr_assert_eq(mnt_put(src_path(&M, "ft"), "0123456789", 10, 0644), 0);
	fd = open(mnt_path(&M, "ft"), O_RDWR);
	cr_assert_geq(fd, 0);
	MNT_EXPECT_OK(ftruncate(fd, 4));
	cr_assert_eq(file_size(src_path(&M, "ft")), 4);
	MNT_EXPECT_OK(ftruncate(fd, 0));
	cr_assert_eq(file_size(src_path(&M, "ft")), 0);
	close(fd);
	mnt_cr_finish(&M);
}

Test(posix_files, unlinked_open_file_stays_readable_and_writable)
{
	struct stat st;
	char buf[32];
	int fd;

	cr_assert_eq(mkdir(mnt_path(&M, "d"), 0755), 0);
	fd = open(mnt_path(&M, "d/u"), O_RDWR | O_CREAT, 0644);
	cr_assert_geq(fd, 0, "create: %s", strerror(errno));
	cr_assert_eq(write(fd, "before", 6), 6);
	MNT_EXPECT_OK(unlink(mnt_path(&M, "d/u")));
	MNT_EXPECT_ERRNO(lstat(src_path(&M, "d/u"), &st), ENOENT);
	MNT_EXPECT_ERRNO(lstat(mnt_path(&M, "d/u"), &st), ENOENT);
	/* no hidden stand-in (".fuse_hidden...") may appear in SOURCE */
	cr_assert_eq(count_entries(src_path(&M, "d")), 0, "SOURCE dir not empty after unlink");
	cr_assert_eq(pwrite(fd, "after", 5, 6), 5, "pwrite after unlink: %s", strerror(errno));
	memset(buf, 0, sizeof(buf));
	cr_assert_eq(pread(fd, buf, sizeof(buf), 0), 11, "pread after unlink: %s",
		     strerror(errno));
	cr_assert_str_eq(buf, "beforeafter");
	cr_assert_eq(fstat(fd, &st), 0);
	cr_assert_eq(st.st_nlink, 0);
	cr_assert_eq(st.st_size, 11);
	MNT_EXPECT_OK(ftruncate(fd, 3));
	cr_assert_eq(close(fd), 0);
	cr_assert_eq(count_entries(src_path(&M, "d")), 0);
	mnt_cr_finish(&M);
}

Test(posix_files, unlink_removes_file_in_source)
{
	struct stat st;

	cr_assert_eq(mnt_put(src_path(&M, "gone"), "x", 1, 0644), 0);
	cr_assert_eq(stat(mnt_path(&M, "gone"), &st), 0);
	MNT_EXPECT_OK(unlink(mnt_path(&M, "gone")));
	MNT_EXPECT_ERRNO(lstat(src_path(&M, "gone"), &st), ENOENT);
	MNT_EXPECT_ERRNO(unlink(mnt_path(&M, "gone")), ENOENT);
	mnt_cr_finish(&M);
}

Test(posix_files, sparse_file_seek_data_and_hole_match_source)
{
	const off_t mib = 1024 * 1024;
	static const off_t probes[] = { 0, 100, 4096, 5000, 1024 * 1024, 1024 * 1024 + 4095,
					1024 * 1024 + 4096, 2 * 1024 * 1024 + 4096 };
	unsigned char blk[4096];
	int fm, fs;

	memset(blk, 'a', sizeof(blk));
	fm = open(mnt_path(&M, "sparse"), O_RDWR | O_CREAT, 0644);
	cr_assert_geq(fm, 0);
	cr_assert_eq(pwrite(fm, blk, sizeof(blk), 0), (ssize_t)sizeof(blk));
	cr_assert_eq(pwrite(fm, blk, sizeof(blk), mib), (ssize_t)sizeof(blk));
	cr_assert_eq(fsync(fm), 0);
	fs = open(src_path(&M, "sparse"), O_RDONLY);
	cr_assert_geq(fs, 0);
	cr_assert_eq(lseek(fs, 0, SEEK_END), mib + 4096);
	/* the backing file really is sparse (else this test proves nothing) */
	cr_assert_eq(lseek(fs, 0, SEEK_HOLE), 4096, "SOURCE fs does not report holes");
	cr_assert_eq(lseek(fs, 4096, SEEK_DATA), mib);
	for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		for (int w = 0; w < 2; w++) {
			int whence = w ? SEEK_HOLE : SEEK_DATA;
			off_t want, got;
			int we, ge;

			errno = 0;
			want = lseek(fs, probes[i], whence);
			we = errno;
			errno = 0;
			got = lseek(fm, probes[i], whence);
			ge = errno;
			cr_assert(got == want && (want >= 0 || ge == we),
				  "lseek(%lld, %s): mount %lld (%s), SOURCE %lld (%s)",
				  (long long)probes[i], w ? "SEEK_HOLE" : "SEEK_DATA",
				  (long long)got, ge ? strerrorname_np(ge) : "-", (long long)want,
				  we ? strerrorname_np(we) : "-");
		}
	}
	close(fs);
	close(fm);
	mnt_cr_finish(&M);
}

Test(posix_files, offsets_beyond_4gib_roundtrip)
{
	const off_t off = 5LL * 1024 * 1024 * 1024 + 12345;
	const off_t off2 = 6LL * 1024 * 1024 * 1024 + 7;
	char buf[32];
	int fm, fs;

	fm = open(mnt_path(&M, "huge"), O_RDWR | O_CREAT, 0644);
	cr_assert_geq(fm, 0);
	cr_assert_eq(pwrite(fm, "beyond-4GiB", 11, off), 11, "pwrite at 5 GiB: %s",
		     strerror(errno));
	cr_assert_eq(fsync(fm), 0);
	cr_assert_eq(file_size(src_path(&M, "huge")), off + 11);
	fs = open(src_path(&M, "huge"), O_RDWR);
	cr_assert_geq(fs, 0);
	memset(buf, 0, sizeof(buf));
	cr_assert_eq(pread(fs, buf, 11, off), 11);
	cr_assert_str_eq(buf, "beyond-4GiB");
	/* the low 32 bits of the offset must not have been used alone */
	memset(buf, 1, sizeof(buf));
	cr_assert_eq(pread(fs, buf, 11, off & 0xffffffffLL), 11);
	cr_assert_eq(memcmp(buf, "\0\0\0\0\0\0\0\0\0\0\0", 11), 0);
	/* and the other way round, further out */
	cr_assert_eq(pwrite(fs, "from-source", 11, off2), 11);
	close(fs);
	memset(buf, 0, sizeof(buf));
	cr_assert_eq(pread(fm, buf, 11, off2), 11, "pread at 6 GiB: %s", strerror(errno));
	cr_assert_str_eq(buf, "from-source");
	close(fm);
	mnt_cr_finish(&M);
}

Test(posix_files, fallocate_mode0_extends_and_allocates)
{
	struct stat st;
	int fd;

	fd = open(mnt_path(&M, "fa"), O_RDWR | O_CREAT, 0644);
	cr_assert_geq(fd, 0);
	MNT_EXPECT_OK(fallocate(fd, 0, 0, 1024 * 1024));
	cr_assert_eq(stat(src_path(&M, "fa"), &st), 0);
	cr_assert_eq(st.st_size, 1024 * 1024);
	cr_assert_geq(st.st_blocks * 512, 1024 * 1024, "only %lld bytes allocated",
		      (long long)st.st_blocks * 512);
	/* KEEP_SIZE allocates past EOF without changing the size */
	MNT_EXPECT_OK(fallocate(fd, FALLOC_FL_KEEP_SIZE, 1024 * 1024, 1024 * 1024));
	cr_assert_eq(stat(src_path(&M, "fa"), &st), 0);
	cr_assert_eq(st.st_size, 1024 * 1024);
	cr_assert_geq(st.st_blocks * 512, 2 * 1024 * 1024);
	close(fd);
	mnt_cr_finish(&M);
}

Test(posix_files, fallocate_punch_hole_keeps_size_and_zeroes)
{
	unsigned char data[65536], back[65536];
	int fd, fs;

	memset(data, 'x', sizeof(data));
	cr_assert_eq(mnt_put(mnt_path(&M, "ph"), data, sizeof(data), 0644), 0);
	fd = open(mnt_path(&M, "ph"), O_RDWR);
	cr_assert_geq(fd, 0);
	cr_assert_eq(fsync(fd), 0);
	MNT_EXPECT_OK(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 16384, 16384));
	memset(data + 16384, 0, 16384);
	cr_assert_eq(file_size(src_path(&M, "ph")), 65536);
	cr_assert_eq(mnt_get(src_path(&M, "ph"), back, sizeof(back)), 65536);
	cr_assert(memcmp(back, data, sizeof(data)) == 0, "SOURCE content wrong after punch");
	cr_assert_eq(pread(fd, back, sizeof(back), 0), 65536);
	cr_assert(memcmp(back, data, sizeof(data)) == 0, "mount content wrong after punch");
	/* a real hole, not written zeros */
	fs = open(src_path(&M, "ph"), O_RDONLY);
	cr_assert_geq(fs, 0);
	cr_assert_eq(lseek(fs, 0, SEEK_HOLE), 16384);
	cr_assert_eq(lseek(fs, 16384, SEEK_DATA), 32768);
	close(fs);
	close(fd);
	mnt_cr_finish(&M);
}

Test(posix_files, copy_file_range_copies_the_range)
{
	size_t len = 256 * 1024;
	unsigned char *data = malloc(len), *want = calloc(1, 5000 + 100000), *back = malloc(len);
	loff_t in = 1000, out = 5000;
	size_t left = 100000;
	int fa, fb;

	cr_assert(data && want && back);
	pattern(data, len, 21);
	cr_assert_eq(mnt_put(mnt_path(&M, "cfa"), data, len, 0644), 0);
	fa = open(mnt_path(&M, "cfa"), O_RDONLY);
	fb = open(mnt_path(&M, "cfb"), O_WRONLY | O_CREAT, 0644);
	cr_assert(fa >= 0 && fb >= 0);
	while (left > 0) {
		ssize_t n = copy_file_range(fa, &in, fb, &out, left, 0);

		cr_assert_gt(n, 0, "copy_file_range: %zd (%s)", n, strerror(errno));
		left -= (size_t)n;
	}
	cr_assert_eq(in, 101000);
	cr_assert_eq(out, 105000);
	close(fa);
	close(fb);
	memcpy(want + 5000, data + 1000, 100000);
	expect_content(src_path(&M, "cfb"), want, 105000);
	expect_content(mnt_path(&M, "cfb"), want, 105000);
	free(data);
	free(want);
	free(back);
	mnt_cr_finish(&M);
}

Test(posix_files, fsync_and_fdatasync_succeed)
{
	int fd, ro;

	fd = open(mnt_path(&M, "sync"), O_RDWR | O_CREAT, 0644);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "durable", 7), 7);
	MNT_EXPECT_OK(fsync(fd));
	cr_assert_eq(pwrite(fd, "D", 1, 0), 1);
	MNT_EXPECT_OK(fdatasync(fd));
	ro = open(mnt_path(&M, "sync"), O_RDONLY);
	cr_assert_geq(ro, 0);
	MNT_EXPECT_OK(fsync(ro));
	close(ro);
	close(fd);
	expect_content(src_path(&M, "sync"), "Durable", 7);
	mnt_cr_finish(&M);
}

Test(posix_files, statfs_matches_source)
{
	struct statvfs vm, vs;

	MNT_EXPECT_OK(statvfs(mnt_path(&M, ""), &vm));
	MNT_EXPECT_OK(statvfs(src_path(&M, ""), &vs));
	cr_assert_eq(vm.f_blocks, vs.f_blocks, "f_blocks %llu vs SOURCE %llu",
		     (unsigned long long)vm.f_blocks, (unsigned long long)vs.f_blocks);
	cr_assert_eq(vm.f_frsize, vs.f_frsize);
	cr_assert_eq(vm.f_bsize, vs.f_bsize);
	cr_assert_eq(vm.f_files, vs.f_files);
	cr_assert_eq(vm.f_namemax, vs.f_namemax);
	mnt_cr_finish(&M);
}

Test(posix_files, access_follows_mode_bits)
{
	cr_assert_eq(mnt_put(src_path(&M, "acc"), "x", 1, 0644), 0);
	cr_assert_eq(chmod(src_path(&M, "acc"), 0644), 0);
	MNT_EXPECT_OK(access(mnt_path(&M, "acc"), F_OK));
	MNT_EXPECT_OK(access(mnt_path(&M, "acc"), R_OK | W_OK));
	/* root gets X_OK only if some execute bit is set */
	MNT_EXPECT_ERRNO(access(mnt_path(&M, "acc"), X_OK), EACCES);
	cr_assert_eq(chmod(mnt_path(&M, "acc"), 0744), 0);
	MNT_EXPECT_OK(access(mnt_path(&M, "acc"), X_OK));
	MNT_EXPECT_ERRNO(access(mnt_path(&M, "missing"), F_OK), ENOENT);
	mnt_cr_finish(&M);
}

/* A second mount, with the kernel's writeback cache, for what only it changes. */
static struct mnt W;

static void setup_wb(void)
{
	static const char *const args[] = { "-o", "writeback_cache", NULL };

	mnt_cr_setup(&W, args);
}

static void teardown_wb(void)
{
	mnt_cr_teardown(&W);
}

TestSuite(posix_files_wb, .init = setup_wb, .fini = teardown_wb, .timeout = 60);

/* Data still in the kernel's cache (not yet written to SOURCE) is data for SEEK_DATA: the
 * daemon asked SOURCE, where the file was still empty, and answered ENXIO. */
Test(posix_files_wb, seek_data_sees_data_the_kernel_has_not_written_back)
{
	char buf[8192];
	int fd = open(mnt_path(&W, "wb"), O_CREAT | O_RDWR | O_TRUNC, 0644);

	cr_assert_geq(fd, 0, "open: %s", strerror(errno));
	memset(buf, 'w', sizeof(buf));
	cr_assert_eq(pwrite(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	/* no fsync, no close: with the writeback cache the data may not have left the kernel */
	cr_assert_eq(lseek(fd, 0, SEEK_DATA), 0, "SEEK_DATA at 0: %s", strerror(errno));
	cr_assert_eq(lseek(fd, 4096, SEEK_DATA), 4096, "SEEK_DATA at 4096: %s", strerror(errno));
	cr_assert_eq(lseek(fd, 0, SEEK_HOLE), (off_t)sizeof(buf), "SEEK_HOLE: %s",
		     strerror(errno));
	MNT_EXPECT_ERRNO(lseek(fd, (off_t)sizeof(buf), SEEK_DATA), ENXIO);
	cr_assert_eq(fsync(fd), 0);
	close(fd);
	mnt_cr_finish(&W);
}
