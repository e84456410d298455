/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of fs/fusectl.c: finding a FUSE connection in a mountinfo file, and writing
 * the two background knobs into a fusectl-shaped directory. The live kernel side (a reload
 * that changes /sys/fs/fuse/connections/N) is tested on a real mount in it_background.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fusectl.h"

static char dir[64];
static char info[96];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/cfqfs-test-fusectl.XXXXXX");
	cr_assert(mkdtemp(dir));
	snprintf(info, sizeof(info), "%s/mountinfo", dir);
}

static void cleanup(void)
{
	char cmd[128];

	if (dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		cr_assert_eq(system(cmd), 0);
	}
}

TestSuite(fusectl, .init = setup, .fini = cleanup);

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert(f, "%s: %s", path, strerror(errno));
	cr_assert_geq(fputs(text, f), 0);
	cr_assert_eq(fclose(f), 0);
}

static long get(const char *path)
{
	char text[32] = "";
	FILE *f = fopen(path, "r");

	cr_assert(f, "%s: %s", path, strerror(errno));
	cr_assert(fgets(text, sizeof(text), f));
	fclose(f);
	return strtol(text, NULL, 10);
}

Test(fusectl, congestion_is_three_quarters_at_least_one)
{
	cr_assert_eq(fusectl_congestion_for(12), 9); /* the kernel's own defaults */
	cr_assert_eq(fusectl_congestion_for(128), 96);
	cr_assert_eq(fusectl_congestion_for(300), 225);
	cr_assert_eq(fusectl_congestion_for(2), 1);
	cr_assert_eq(fusectl_congestion_for(1), 1);
	cr_assert_eq(fusectl_congestion_for(65535), 49151);
}

Test(fusectl, finds_the_topmost_fuse_mount_on_the_path)
{
	unsigned conn = 7;

	put(info, "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
		  /* same path, not FUSE */
		  "30 22 0:40 / /mnt/a\\040b rw shared:5 - tmpfs tmpfs rw\n"
		  /* a FUSE mount on a longer path with the same prefix */
		  "31 22 0:41 / /mnt/a\\040b/c rw - fuse.cfqfs /src rw,user_id=0\n"
		  /* ours, with optional fields; then one mounted on top of it */
		  "32 30 0:42 / /mnt/a\\040b rw,nosuid shared:7 master:2 - fuse.cfqfs /s\\134x rw\n"
		  "33 32 0:57 / /mnt/a\\040b rw - fuse /other rw,user_id=0\n"
		  "34 22 0:58 / /mnt/other rw - fuse.cfqfs /src rw\n");
	cr_assert_eq(fusectl_find(info, "/mnt/a b", &conn), 0);
	cr_assert_eq(conn, 57, "the last (topmost) fuse mount on the path, got %u", conn);
	cr_assert_eq(fusectl_find(info, "/mnt/a b/c", &conn), 0);
	cr_assert_eq(conn, 41);
	cr_assert_eq(fusectl_find(info, "/mnt/a", &conn), -ENOENT, "a prefix is not the path");
	cr_assert_eq(fusectl_find(info, "/", &conn), -ENOENT, "ext4 is not FUSE");
	cr_assert_eq(conn, 41, "unchanged when nothing matches");
}

Test(fusectl, major_numbers_use_the_kernel_encoding)
{
	unsigned conn = 0;

	put(info, "40 22 3:5 / /m rw - fuse.x s rw\n");
	cr_assert_eq(fusectl_find(info, "/m", &conn), 0);
	cr_assert_eq(conn, (3u << 20) | 5u);
}

Test(fusectl, malformed_lines_are_skipped)
{
	unsigned conn = 0;

	put(info, "garbage\n"
		  "41 22 0:60 / /m\n"			 /* cut short: no separator, no type */
		  "42 22 x:y / /m rw - fuse s rw\n"	 /* no device number */
		  "43 22 0:61 / /m rw shared:1 -\n"	 /* no type after the separator */
		  "44 22 0:62 / /m rw - fuseblk /dev/sdb1 rw\n" /* a block-device FUSE: no fusectl */
		  "45 22 0:63 / /m rw - fuse.cfqfs s rw\n"
		  "46 22 0:64 / /m rw\n");
	cr_assert_eq(fusectl_find(info, "/m", &conn), 0);
	cr_assert_eq(conn, 63);
	cr_assert_eq(fusectl_find("/nonexistent/mountinfo", "/m", &conn), -ENOENT);
}

static void make_conn(unsigned conn, const char *bg, const char *cong)
{
	char p[160];

	snprintf(p, sizeof(p), "%s/%u", dir, conn);
	cr_assert_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/%u/max_background", dir, conn);
	put(p, bg);
	snprintf(p, sizeof(p), "%s/%u/congestion_threshold", dir, conn);
	put(p, cong);
}

Test(fusectl, sets_both_knobs)
{
	char p[160];

	make_conn(42, "128\n", "96\n");
	cr_assert_eq(fusectl_set_background(dir, 42, 300), 0);
	snprintf(p, sizeof(p), "%s/42/max_background", dir);
	cr_assert_eq(get(p), 300);
	snprintf(p, sizeof(p), "%s/42/congestion_threshold", dir);
	cr_assert_eq(get(p), 225);
}

/* A threshold that cannot be written (here a directory: root may write any file) leaves
 * max_background as it was, so the daemon, which keeps its old value, stays in step. */
Test(fusectl, a_failed_threshold_write_puts_max_background_back)
{
	char p[160];

	make_conn(42, "128\n", "96\n");
	snprintf(p, sizeof(p), "%s/42/congestion_threshold", dir);
	cr_assert_eq(unlink(p), 0);
	cr_assert_eq(mkdir(p, 0755), 0);
	cr_assert_eq(fusectl_set_background(dir, 42, 300), -EISDIR);
	snprintf(p, sizeof(p), "%s/42/max_background", dir);
	cr_assert_eq(get(p), 128, "max_background left at the new value");
}

Test(fusectl, refuses_out_of_range_and_missing_connections)
{
	char p[160];

	make_conn(42, "128\n", "96\n");
	cr_assert_eq(fusectl_set_background(dir, 42, 0), -EINVAL);
	cr_assert_eq(fusectl_set_background(dir, 42, 65536), -EINVAL);
	snprintf(p, sizeof(p), "%s/42/max_background", dir);
	cr_assert_eq(get(p), 128, "nothing written on a refused value");
	cr_assert_eq(fusectl_set_background(dir, 43, 64), -ENOENT);
	cr_assert_eq(fusectl_set_background("/nonexistent", 42, 64), -ENOENT);
}
