/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of fs/probe.c: the decision from given costs (disk-like, SSD-like, host-cache-like,
 * too few reads, the rule's boundaries), the report's text, and the measurement on real
 * directories: an empty SOURCE, one holding only files not worth reading, one behind a
 * symlink, a walk cut short, a SOURCE on tmpfs (O_DIRECT refused) and one on the real disk
 * under /var/tmp (measured; which way it decides is the host's business, not asserted).
 * The mounted side (.cfqfs/device) is in it_ctl.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <linux/magic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "clock.h"
#include "probe.h"

#define US 1000ull
#define MS 1000000ull
#define MIB (1u << 20)

static char dir[64];

static void make_dir(const char *parent)
{
	snprintf(dir, sizeof(dir), "%s/cfqfs-test-probe.XXXXXX", parent);
	cr_assert(mkdtemp(dir), "mkdtemp under %s: %s", parent, strerror(errno));
}

static void cleanup(void)
{
	char cmd[128];

	if (dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		cr_assert_eq(system(cmd), 0);
	}
}

static void on_var_tmp(void)
{
	make_dir("/var/tmp");
}

/* `size` bytes of data (no holes) at dir/rel, flushed so that direct reads find them. */
static void put_file(const char *rel, size_t size)
{
	char path[256], block[65536];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	for (size_t i = 0; i < sizeof(block); i++)
		block[i] = (char)(i * 31 + 7);
	for (size_t done = 0; done < size; done += sizeof(block)) {
		size_t n = size - done < sizeof(block) ? size - done : sizeof(block);
		cr_assert_eq(write(fd, block, n), (ssize_t)n);
	}
	cr_assert_eq(fsync(fd), 0);
	cr_assert_eq(close(fd), 0);
}

static void put_dir(const char *rel)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	cr_assert_eq(mkdir(path, 0755), 0, "%s: %s", path, strerror(errno));
}

static struct probe_costs costs(int reported, sched_ns seq, sched_ns rnd, unsigned n)
{
	return (struct probe_costs){ .reported = reported, .seq_cost = seq, .rand_cost = rnd,
				     .seq_reads = n, .rand_reads = n };
}

/*
 * probe_decide(c) must return rc and, when it decides (rc 0), say `rotational`; its one-line
 * reason must contain `says` (NULL: anything). Returns the reason (static).
 */
static const char *expect(struct probe_costs c, int rc, bool rotational, const char *says)
{
	static struct probe_verdict v;

	cr_assert_eq(probe_decide(&c, &v), rc, "%s", v.why);
	if (rc == 0)
		cr_assert_eq(v.rotational, rotational, "expected %s: %s",
			     rotational ? "rotational" : "not rotational", v.why);
	if (says)
		cr_assert(strstr(v.why, says), "\"%s\" not in: %s", says, v.why);
	cr_assert(v.why[0] && !strchr(v.why, '\n'), "%s", v.why);
	return v.why;
}

/* ---------------------------------------------------------------------------------------- */
/* The decision                                                                              */

TestSuite(probe_decide);

Test(probe_decide, disk_like_costs_are_rotational)
{
	/* 7200 rpm: sequential reads from the disk's read-ahead, random ones pay seek + half
	 * a turn; 22 random reads is what the time budget leaves such a disk */
	struct probe_costs c = costs(1, 150 * US, 9 * MS, 64);

	c.rand_reads = 22;
	cr_assert_null(strstr(expect(c, 0, true, "seeks cost time"), "the device says"),
		       "agrees with the flag, so does not mention it");
	/* a disk behind a controller that says it does not spin */
	expect(costs(0, 200 * US, 6 * MS, 16), 0, true, "the device says rotational=0");
}

Test(probe_decide, ssd_like_costs_are_not_rotational)
{
	expect(costs(0, 60 * US, 95 * US, 64), 0, false, "seeks cost nothing");
	expect(costs(-1, 15 * US, 80 * US, 64), 0, false, "5.3x"); /* NVMe: a big ratio, tiny gap */
}

Test(probe_decide, host_cache_like_costs_are_not_rotational_though_reported_rotational)
{
	/* this VM's virtio disk: rotational=1, both kinds of read from the host's page cache */
	expect(costs(1, 40 * US, 41 * US, 64), 0, false, "the device says rotational=1");
	/* a random read that happens to be the cheaper one */
	expect(costs(1, 41 * US, 40 * US, 64), 0, false, "-1.0 us");
}

Test(probe_decide, slow_storage_blind_to_position_is_not_rotational)
{
	/* a network block device: 2 ms a read wherever it is; 1.5 ms more but only 1.75x */
	expect(costs(-1, 2 * MS, 3500 * US, 64), 0, false, "1.8x");
}

Test(probe_decide, too_few_reads_of_either_kind_are_refused)
{
	struct probe_costs c = costs(1, 150 * US, 9 * MS, 64);

	c.rand_reads = PROBE_SAMPLES_MIN - 1;
	expect(c, -EAGAIN, false, "too few reads");
	c.rand_reads = 64;
	c.seq_reads = PROBE_SAMPLES_MIN - 1;
	expect(c, -EAGAIN, false, "too few reads");
	expect(costs(1, 0, 0, 0), -EAGAIN, false, "0 sequential, 0 random");
	expect(costs(1, 150 * US, 9 * MS, PROBE_SAMPLES_MIN), 0, true, NULL); /* enough */
}

Test(probe_decide, ratio_boundary_is_three_times)
{
	expect(costs(1, 500 * US, 1500 * US, 32), 0, true, "3.0x"); /* 3x, +1 ms exactly */
	expect(costs(1, 500 * US, 1500 * US - 1, 32), 0, false, NULL); /* 1 ns short of both */
	expect(costs(1, 2 * MS, 6 * MS - 1, 32), 0, false, NULL); /* +4 ms, a hair under 3x */
	expect(costs(1, 2 * MS, 6 * MS, 32), 0, true, NULL);
}

Test(probe_decide, extra_cost_boundary_is_one_millisecond)
{
	expect(costs(1, 400 * US, 1400 * US, 32), 0, true, "+1000.0 us"); /* 3.5x, +1 ms */
	expect(costs(1, 400 * US, 1400 * US - 1, 32), 0, false, NULL);
	expect(costs(1, 10 * US, 999 * US, 32), 0, false, NULL); /* 99.9x, under a millisecond */
}

Test(probe_decide, extreme_costs_neither_divide_by_zero_nor_overflow)
{
	expect(costs(-1, 0, 2 * MS, 32), 0, true, NULL);
	expect(costs(-1, UINT64_MAX / 2, UINT64_MAX, 32), 0, false, NULL); /* 3 * seq wraps */
}

/* ---------------------------------------------------------------------------------------- */
/* The report                                                                                */

TestSuite(probe_format);

Test(probe_format, a_measured_report_names_every_figure)
{
	struct probe_report r = {
		.reported = 1,
		.device = "vda",
		.state = PROBE_DONE,
		.costs = { .reported = 1, .file_size = 64 * MIB, .seq_cost = 12345, .rand_cost = 14150,
			   .seq_reads = 64, .rand_reads = 64, .elapsed = 8600 * US },
		.rotational = false,
		.why = "measured: because",
	};
	char buf[1024];
	int n = probe_format(&r, buf, sizeof(buf));

	cr_assert_eq((size_t)n, strlen(buf));
	cr_assert_str_eq(buf, "reported_rotational=1 (block device vda)\n"
			      "probe=done file_size=67108864 sequential_us=12.3 random_us=14.2 "
			      "reads=64+64 time_ms=9\n"
			      "rotational=0\n"
			      "why=measured: because\n");
}

Test(probe_format, a_skipped_probe_says_why_and_truncation_is_reported)
{
	struct probe_report r = {
		.reported = -ENODEV,
		.state = PROBE_SKIPPED,
		.skipped = "SOURCE empty",
		.rotational = true,
		.why = "assumed",
	};
	char buf[1024], small[16];
	int n = probe_format(&r, buf, sizeof(buf));

	cr_assert_str_eq(buf, "reported_rotational=none (no block device under SOURCE)\n"
			      "probe=skipped: SOURCE empty\n"
			      "rotational=1\n"
			      "why=assumed\n");
	cr_assert_eq(probe_format(&r, small, sizeof(small)), n);
	cr_assert_eq(strlen(small), sizeof(small) - 1);
	cr_assert_eq(strncmp(small, buf, sizeof(small) - 1), 0);
}

/* ---------------------------------------------------------------------------------------- */
/* The measurement on real directories                                                       */

TestSuite(probe_measure, .init = on_var_tmp, .fini = cleanup);

Test(probe_measure, empty_source_is_skipped_at_once)
{
	struct probe_costs c;
	struct probe_report r;
	char why[PROBE_REASON_MAX];

	cr_assert_eq(probe_measure(dir, &c, why, sizeof(why)), -ENOENT);
	cr_assert(strstr(why, "SOURCE empty"), "%s", why);
	sched_ns t0 = clk_now();
	probe_device(dir, NULL, &r);
	sched_ns took = clk_now() - t0;
	/* a mount with an empty SOURCE pays a stat and a readdir, nothing a user would notice
	 * (the bound is loose for a loaded 2-core machine; it takes microseconds) */
	cr_assert_lt(took, 100 * MS, "%llu ns", (unsigned long long)took);
	cr_log_info("probe of an empty SOURCE: %llu us", (unsigned long long)(took / US));
	cr_assert_eq(r.state, PROBE_SKIPPED);
	cr_assert(strstr(r.skipped, "SOURCE empty"), "%s", r.skipped);
	cr_assert(strstr(r.why, "probe skipped: SOURCE empty"), "%s", r.why);
	/* today's rule decides: the flag, or the assumption without a block device */
	cr_assert_eq(r.rotational, r.reported >= 0 ? r.reported == 1 : true, "%s", r.why);
}

Test(probe_measure, small_sparse_and_linked_files_do_not_count)
{
	char target[256], link[256], why[PROBE_REASON_MAX];
	struct probe_costs c;
	int fd;

	put_file("small", MIB); /* under the minimum */
	snprintf(target, sizeof(target), "%s/sparse", dir);
	fd = open(target, O_WRONLY | O_CREAT, 0644);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, 64 * MIB), 0); /* one big hole */
	close(fd);
	/* a big file outside SOURCE, reachable only through a symlink */
	put_dir("src");
	put_file("big", 4 * MIB);
	snprintf(target, sizeof(target), "%s/big", dir);
	snprintf(link, sizeof(link), "%s/src/link", dir);
	cr_assert_eq(symlink(target, link), 0);
	snprintf(link, sizeof(link), "%s/src/dirlink", dir);
	cr_assert_eq(symlink(dir, link), 0);
	snprintf(link, sizeof(link), "%s/src", dir);
	cr_assert_eq(probe_measure(link, &c, why, sizeof(why)), -ENOENT, "%s", why);
	/* the whole directory: only "big" counts */
	cr_assert_eq(probe_measure(dir, &c, why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(c.file_size, 4 * MIB);
}

Test(probe_measure, the_largest_file_is_found_below_subdirectories)
{
	char why[PROBE_REASON_MAX];
	struct probe_costs c;

	put_file("two", 2 * MIB);
	put_dir("a");
	put_dir("a/b");
	put_file("a/b/three", 3 * MIB);
	cr_assert_eq(probe_measure(dir, &c, why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(c.file_size, 3 * MIB);
}

Test(probe_measure, the_walk_is_bounded)
{
	char path[256], why[PROBE_REASON_MAX];
	struct probe_costs c;

	put_dir("d");
	for (int i = 0; i < 1010; i++) {
		snprintf(path, sizeof(path), "%s/d/f%04d", dir, i);
		int fd = open(path, O_WRONLY | O_CREAT, 0644);
		cr_assert_geq(fd, 0);
		close(fd);
	}
	/* d's entries use up the bound before its subdirectory is opened, wherever readdir
	 * puts it */
	put_dir("d/e");
	put_file("d/e/big", 4 * MIB);
	cr_assert_eq(probe_measure(dir, &c, why, sizeof(why)), -ENOENT);
	cr_assert(strstr(why, "the first 1000 entries"), "%s", why);
}

Test(probe_measure, a_file_on_the_real_disk_is_measured_and_decided)
{
	char why[PROBE_REASON_MAX];
	struct probe_costs c;
	struct probe_report r;
	struct statfs fs;

	cr_assert_eq(statfs(dir, &fs), 0);
	if (fs.f_type == TMPFS_MAGIC)
		cr_skip("/var/tmp is tmpfs here: no disk to measure");
	put_file("data", 4 * MIB);
	cr_assert_eq(probe_measure(dir, &c, why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(c.file_size, 4 * MIB);
	cr_assert_gt(c.seq_cost, 0);
	cr_assert_gt(c.rand_cost, 0);
	cr_assert(c.seq_reads >= 1 && c.seq_reads <= 64, "%u", c.seq_reads);
	cr_assert(c.rand_reads >= 1 && c.rand_reads <= 16, "4 MiB: 16 strata, %u", c.rand_reads);
	cr_assert_geq(c.elapsed, c.seq_cost + c.rand_cost);
	cr_assert_lt(c.elapsed, 2000 * MS, "the budget is 250 ms a kind");
	probe_device(dir, NULL, &r);
	cr_assert_neq(r.state, PROBE_SKIPPED, "%s", r.skipped);
	cr_assert(r.why[0]);
	if (r.state == PROBE_DONE)
		cr_assert(strncmp(r.why, "measured: ", 10) == 0, "%s", r.why);
	cr_log_info("measured here: %s", r.why);
}

Test(probe_measure, an_override_measures_nothing)
{
	struct probe_override ov = { .rotational = true, .skip = "forced", .why = "set" };
	struct probe_report r;

	put_file("data", 4 * MIB);
	probe_device(dir, &ov, &r);
	cr_assert_eq(r.state, PROBE_SKIPPED);
	cr_assert_str_eq(r.skipped, "forced");
	cr_assert_str_eq(r.why, "set");
	cr_assert(r.rotational);
	cr_assert_eq(r.costs.seq_reads + r.costs.rand_reads, 0);
}

TestSuite(probe_tmpfs, .fini = cleanup);

Test(probe_tmpfs, a_source_whose_cache_cannot_be_bypassed_is_skipped)
{
	char why[PROBE_REASON_MAX];
	struct probe_costs c;
	struct probe_report r;
	struct statfs fs;

	if (statfs("/dev/shm", &fs) != 0 || fs.f_type != TMPFS_MAGIC)
		cr_skip("no tmpfs at /dev/shm");
	make_dir("/dev/shm");
	put_file("big", 4 * MIB);
	cr_assert_eq(probe_measure(dir, &c, why, sizeof(why)), -EINVAL, "%s", why);
	cr_assert(strstr(why, "cache cannot be bypassed"), "%s", why);
	probe_device(dir, NULL, &r);
	cr_assert_eq(r.state, PROBE_SKIPPED);
	cr_assert_eq(r.reported, -ENODEV);
	cr_assert(r.rotational, "no block device: assumed rotational, as before");
	cr_assert(strstr(r.why, "assumed (probe skipped: cache cannot be bypassed"), "%s", r.why);
}
