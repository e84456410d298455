/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Proportional share between groups (cfq-bfq.md §3): weights in time mode and IOPS mode,
 * hierarchical vfraction, and equal-weight fairness (Jain's index).
 *
 * Method: greedy sequential readers (one 64 KiB read in flight, no think time), one per group.
 * Every reader moves the same bytes per unit of device time once it holds the disk, so the
 * byte share over a window is the service share. A warm-up is excluded from the window so the
 * initial placement of groups on the service tree does not count.
 *
 * Why 64 KiB: CFQ charges a queue from the first completion of its slice and clamps the charge
 * to the allocated slice (§2.4, §3.4), so about one request per slice (the first, which carries
 * the switch seek, and the overrun of the last) is served uncharged. With low_latency the
 * weight-100 group gets 20 ms slices; one uncharged 128 KiB read (1.1 ms) plus half an overrun
 * would lift its byte share ~5% above its time share; with 64 KiB reads it is ~3%.
 */
#define RSZ (64 * KIB)
#include "sim_helpers.h"

#define WARMUP (2 * SIM_S)

/* Byte share of each process over [warmup, end]. */
static void shares(struct sim *s, const unsigned *idx, size_t n, sched_ns end, double *out)
{
	uint64_t base[16], total = 0;

	cr_assert(n <= 16);
	run_ok(s, WARMUP);
	for (size_t i = 0; i < n; i++)
		base[i] = sim_proc_stats(s, idx[i])->bytes;
	run_ok(s, end);
	for (size_t i = 0; i < n; i++) {
		out[i] = (double)(sim_proc_stats(s, idx[i])->bytes - base[i]);
		total += (uint64_t)out[i];
	}
	cr_assert(total > 0, "nothing was served");
	for (size_t i = 0; i < n; i++)
		out[i] /= (double)total;
}

static void assert_weighted(struct sim *s, sched_ns end, const char *mode)
{
	static const uint32_t w[4] = {100, 200, 400, 800};
	unsigned idx[4];
	double got[4];

	for (int i = 0; i < 4; i++)
		idx[i] = add_seq_reader_sz(s, add_group(s, SCHED_ROOT_GROUP, w[i]), SCHED_CLASS_BE,
					   SCHED_LEVEL_NORM, RSZ);
	shares(s, idx, 4, end, got);
	for (int i = 0; i < 4; i++) {
		double want = w[i] / 1500.0;

		cr_log_info("%s: weight %u share %.4f want %.4f (ratio %.3f)", mode, w[i], got[i],
			    want, got[i] / want);
		/* the target: within +-5% of the weight ratio */
		cr_expect(got[i] >= 0.95 * want && got[i] <= 1.05 * want,
			  "%s: weight %u got share %.4f, want %.4f +-5%%", mode, w[i], got[i], want);
	}
}

Test(fairness, weights_time_mode_hdd)
{
	struct sim *s = mk_sim(SCHED_POLICY_CFQ, "hdd", 1);
	struct sched_info info;

	set_tunable(s, "slice_idle", 8);
	assert_weighted(s, 30 * SIM_S, "time");
	sched_get_info(sim_sched(s), &info);
	cr_expect_not(info.iops_mode, "hdd with slice_idle=8 must charge time");
	sim_destroy(s);
}

Test(fairness, weights_iops_mode_ssd)
{
	struct sim *s = mk_sim(SCHED_POLICY_CFQ, "ssd", 1);
	struct sched_info info;

	/* non-rotational: slice_idle defaults to 0 (Linux 4.2+); force the mode anyway */
	cr_expect_eq(get_tunable(s, "slice_idle"), 0, "ssd must default to slice_idle=0");
	set_tunable(s, "slice_idle", 0);
	set_tunable(s, "group_mode", 2);
	assert_weighted(s, 6 * SIM_S, "iops");
	sched_get_info(sim_sched(s), &info);
	cr_expect(info.iops_mode, "slice_idle=0 + group_mode=iops must charge requests");
	sim_destroy(s);
}

/*
 * A(500){A1(100), A2(300)}, B(500): A and B split the root 50:50; A's half splits 1:3 between
 * its children, A has no tasks of its own so its leaf weight plays no part.
 * vfraction: A1 = 500/1000 * 100/400 = 12.5 %, A2 = 500/1000 * 300/400 = 37.5 %, B = 50 %.
 */
Test(fairness, hierarchical_vfraction)
{
	struct sim *s = mk_sim(SCHED_POLICY_CFQ, "hdd", 1);
	uint32_t a = add_group(s, SCHED_ROOT_GROUP, 500);
	uint32_t a1 = add_group(s, a, 100), a2 = add_group(s, a, 300);
	uint32_t b = add_group(s, SCHED_ROOT_GROUP, 500);
	unsigned idx[3];
	double got[3];
	static const double want[3] = {0.125, 0.375, 0.5};

	idx[0] = add_seq_reader_sz(s, a1, SCHED_CLASS_BE, SCHED_LEVEL_NORM, RSZ);
	idx[1] = add_seq_reader_sz(s, a2, SCHED_CLASS_BE, SCHED_LEVEL_NORM, RSZ);
	idx[2] = add_seq_reader_sz(s, b, SCHED_CLASS_BE, SCHED_LEVEL_NORM, RSZ);
	shares(s, idx, 3, 30 * SIM_S, got);
	for (int i = 0; i < 3; i++) {
		cr_log_info("hier: group %d share %.4f want %.4f", i, got[i], want[i]);
		cr_expect(got[i] >= want[i] - 0.05 && got[i] <= want[i] + 0.05,
			  "A1:A2:B share %d = %.4f, want %.3f +-5 points", i, got[i], want[i]);
	}
	sim_destroy(s);
}

static void assert_jain(struct sim *s, const unsigned *idx, const char *what)
{
	double got[4];
	double j;

	shares(s, idx, 4, 12 * SIM_S, got);
	j = sim_jain(got, 4);
	cr_log_info("%s: shares %.4f %.4f %.4f %.4f jain %.5f", what, got[0], got[1], got[2],
		    got[3], j);
	cr_expect(j >= 0.99, "%s: Jain index %.5f < 0.99 (%.4f %.4f %.4f %.4f)", what, j, got[0],
		  got[1], got[2], got[3]);
}

Test(fairness, equal_weight_groups_jain)
{
	struct sim *s = mk_sim(SCHED_POLICY_CFQ, "hdd", 1);
	unsigned idx[4];

	for (int i = 0; i < 4; i++)
		idx[i] = add_seq_reader(s, add_group(s, SCHED_ROOT_GROUP, 500), SCHED_CLASS_BE,
					SCHED_LEVEL_NORM);
	assert_jain(s, idx, "4 groups");
	sim_destroy(s);
}

Test(fairness, equal_processes_jain)
{
	struct sim *s = mk_sim(SCHED_POLICY_CFQ, "hdd", 1);
	unsigned idx[4];

	for (int i = 0; i < 4; i++)
		idx[i] = add_seq_reader(s, SCHED_ROOT_GROUP, SCHED_CLASS_BE, SCHED_LEVEL_NORM);
	assert_jain(s, idx, "4 processes");
	sim_destroy(s);
}

Test(fairness, equal_processes_jain_ssd)
{
	struct sim *s = mk_sim(SCHED_POLICY_CFQ, "ssd", 1);
	unsigned idx[4];

	for (int i = 0; i < 4; i++)
		idx[i] = add_seq_reader(s, SCHED_ROOT_GROUP, SCHED_CLASS_BE, SCHED_LEVEL_NORM);
	assert_jain(s, idx, "4 processes on ssd");
	sim_destroy(s);
}

/*
 * More seeky readers than device slots (the daemon's executor depth): each reader has one
 * 4 KiB read in flight, so a queue empties at its only dispatch and waits for the slot to
 * come back. Service goes round the SYNC_NOIDLE tree, one read per queue per turn. The bug
 * this guards: the reader whose read had just completed sent the next one while the
 * previous queue, empty, waited to be expired, preempted it and jumped every waiting queue,
 * so the readers in flight cycled and the rest starved (32 readers, 8 slots: 23 of them got
 * 4-8 reads in 8 s on a real mount, the others ~127). With the device's one slot (depth 1)
 * the same happened through the completing queue itself.
 */
static void seeky_beyond_depth(unsigned depth, int low_latency)
{
	enum { N = 32 };
	struct sim_config cfg;
	struct sim *s;
	unsigned idx[N];
	double got[N], mean = 0, lo = 1e300;
	uint64_t base[N];

	sim_config_default(&cfg, SCHED_POLICY_CFQ, "hdd", 1);
	cfg.queue_depth = depth;
	s = mk_sim_cfg(&cfg);
	set_tunable(s, "low_latency", low_latency);
	for (int i = 0; i < N; i++) {
		struct sim_proc_spec ps;

		sim_proc_default(SIM_RAND_READER, &ps);
		ps.file_size = 24ull << 20;
		idx[i] = add_proc(s, &ps);
	}
	run_ok(s, WARMUP);
	for (int i = 0; i < N; i++)
		base[i] = sim_proc_stats(s, idx[i])->ios;
	run_ok(s, 12 * SIM_S);
	for (int i = 0; i < N; i++) {
		got[i] = (double)(sim_proc_stats(s, idx[i])->ios - base[i]);
		mean += got[i] / N;
		if (got[i] < lo)
			lo = got[i];
	}
	cr_log_info("depth %u low_latency %d: reads per reader in 10 s: mean %.1f min %.0f "
		    "jain %.4f", depth, low_latency, mean, lo, sim_jain(got, N));
	cr_expect(mean >= 10, "depth %u: only %.1f reads per reader", depth, mean);
	cr_expect(lo >= 0.75 * mean, "depth %u low_latency %d: a reader got %.0f reads, the mean "
		  "is %.1f", depth, low_latency, lo, mean);
	cr_expect(sim_jain(got, N) >= 0.98, "depth %u low_latency %d: Jain index %.4f", depth,
		  low_latency, sim_jain(got, N));
	sim_destroy(s);
}

Test(fairness, seeky_readers_beyond_depth_8)
{
	seeky_beyond_depth(8, 1);
	seeky_beyond_depth(8, 0);
}

Test(fairness, seeky_readers_beyond_depth_1)
{
	seeky_beyond_depth(1, 1);
	seeky_beyond_depth(1, 0);
}
