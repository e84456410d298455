/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fair_mixed: a sequential reader next to three random readers on a real mount (emulated
 * hdd, -o device=hdd,direct_io, one request at a time each). The random readers sit on
 * CFQ's SYNC_NOIDLE tree and preempt one another, since each one's arrival finds the served
 * random reader empty; the sequential reader idles, on the SYNC tree. The workload slices
 * split the time 3/4 and 1/4, so the sequential reader should get about a quarter of what it
 * reads alone. When a preempting queue took the kernel's key of 1 s before its tree's
 * leftmost, that key also won the workload choice, and the sequential reader got a turn
 * about once a second (scheduler/sched_cfq.c, preempt_queue()).
 *
 * Asserted as ratios within one test, no absolute time: the sequential reader's bandwidth
 * among the random readers against its bandwidth alone must be at least 0.15, and each
 * random reader must make progress. Measured here: 0.26x-0.31x in five runs (max latency
 * 0.28-0.29 s); 0.08x-0.09x (max latency 1.1 s) with the daemon of 9eadbbb, which keyed every
 * preemption 1 s ahead.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "mount.h"
#include "workload.h"

#define KIB 1024ull
#define GIB (1024ull * 1024 * KIB)
#define RANDOM 3
#define LONE_S 3.0
#define MIXED_S 8.0
#define WARM_S 1.0

static struct mnt M;
static struct wl_run R;

static void setup(void)
{
	mnt_cr_prepare(&M);
}

static void teardown(void)
{
	wl_free(&R);
	mnt_cr_teardown(&M);
}

TestSuite(fair_mixed, .init = setup, .fini = teardown, .timeout = 120);

static void sparse_file(const char *name, uint64_t bytes)
{
	int fd = open(src_path(&M, name), O_CREAT | O_WRONLY, 0644);

	cr_assert_geq(fd, 0, "create %s: %s", name, strerror(errno));
	cr_assert_eq(ftruncate(fd, (off_t)bytes), 0, "truncate %s: %s", name, strerror(errno));
	close(fd);
}

Test(fair_mixed, a_sequential_reader_keeps_its_turns_among_random_readers)
{
	static const char *const files[RANDOM] = { "r0", "r1", "r2" };
	struct wl_spec s[RANDOM + 1];
	double lone, mixed, ratio;
	uint64_t rand_ops[RANDOM];

	for (unsigned i = 0; i < RANDOM; i++)
		sparse_file(files[i], GIB);
	sparse_file("s", 4 * GIB);
	wl_cr_mount(&M, NULL, "device=hdd,direct_io");

	s[RANDOM] = (struct wl_spec){ .label = "sequential", .path = mnt_path(&M, "s"),
				      .kind = WL_SEQ_READ, .bs = 128 * KIB };
	cr_assert_eq(wl_start(&R, &s[RANDOM], 1, LONE_S), 0);
	cr_assert_eq(wl_finish(&R), 0, "the lone reader failed (its message is above)");
	lone = (double)wl_bytes(&R, 0, WARM_S, LONE_S) / (LONE_S - WARM_S);
	wl_free(&R);

	for (unsigned i = 0; i < RANDOM; i++)
		s[i] = (struct wl_spec){ .label = "random", .path = mnt_path(&M, files[i]),
					 .kind = WL_RAND_READ, .bs = 4 * KIB, .seed = 1 + i };
	cr_assert_eq(wl_start(&R, s, RANDOM + 1, MIXED_S), 0);
	cr_assert_eq(wl_finish(&R), 0, "a reader failed (its message is above)");
	mixed = (double)wl_bytes(&R, RANDOM, WARM_S, MIXED_S) / (MIXED_S - WARM_S);
	for (unsigned i = 0; i < RANDOM; i++)
		rand_ops[i] = wl_ops(&R, i, WARM_S, MIXED_S);
	cr_assert_gt(lone, 0, "the lone sequential reader read nothing");
	ratio = mixed / lone;
	cr_log_info("sequential reader alone %.1f MB/s, among %u random readers %.1f MB/s "
		    "(%.2fx, max latency %.0f ms); random reads %llu / %llu / %llu",
		    lone / 1e6, RANDOM, mixed / 1e6, ratio,
		    wl_lat_max_ms(&R, RANDOM, WARM_S, MIXED_S), (unsigned long long)rand_ops[0],
		    (unsigned long long)rand_ops[1], (unsigned long long)rand_ops[2]);
	cr_expect_geq(ratio, 0.15,
		      "the sequential reader got %.2fx of its lone bandwidth among %u random "
		      "readers (its workload's share is about 0.25)", ratio, RANDOM);
	for (unsigned i = 0; i < RANDOM; i++)
		cr_expect_gt(rand_ops[i], 0, "random reader %u made no progress", i);
	mnt_cr_finish(&M);
}
