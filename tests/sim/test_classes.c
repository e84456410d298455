/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * I/O priority classes and levels inside one group (cfq-bfq.md §2.2, §2.3, §2.11): strict
 * RT > BE > IDLE, RT preemption, and slice length by level.
 */
#include "sim_helpers.h"

/* An IDLE-class reader gets (almost) nothing while a BE reader in its group is backlogged, and
 * the disk once the BE reader stops. */
Test(classes, idle_class_waits_for_be)
{
	struct sim *s = mk_sim(SCHED_POLICY_CFQ, "hdd", 1);
	unsigned be = add_seq_reader(s, SCHED_ROOT_GROUP, SCHED_CLASS_BE, SCHED_LEVEL_NORM);
	unsigned idle = add_seq_reader(s, SCHED_ROOT_GROUP, SCHED_CLASS_IDLE, 7);
	uint64_t be1, idle1, be2, idle2;

	cr_assert_eq(sim_proc_stop(s, be, 4 * SIM_S), 0);
	run_ok(s, 4 * SIM_S);
	be1 = sim_proc_stats(s, be)->bytes;
	idle1 = sim_proc_stats(s, idle)->bytes;
	/* the BE reader's last request completes, then IDLE may go (after CFQ's idle delay) */
	run_ok(s, 5 * SIM_S);
	be2 = sim_proc_stats(s, be)->bytes;
	idle2 = sim_proc_stats(s, idle)->bytes;
	run_ok(s, 8 * SIM_S);
	cr_log_info("idle class: phase 1 BE %llu IDLE %llu bytes; phase 3 IDLE %llu bytes",
		    (unsigned long long)be1, (unsigned long long)idle1,
		    (unsigned long long)(sim_proc_stats(s, idle)->bytes - idle2));
	cr_expect(be1 > 0);
	cr_expect(idle1 * 100 <= be1, "IDLE got %llu bytes vs BE %llu while BE was backlogged",
		  (unsigned long long)idle1, (unsigned long long)be1);
	cr_expect_eq(sim_proc_stats(s, be)->bytes, be2, "BE stopped");
	/* phase 3 (3 s alone): the IDLE reader streams; at least half of what BE did in 4 s */
	cr_expect((sim_proc_stats(s, idle)->bytes - idle2) * 2 >= be1 * 3 / 4,
		  "IDLE reader must run once BE stops: %llu bytes in 3 s",
		  (unsigned long long)(sim_proc_stats(s, idle)->bytes - idle2));
	sim_destroy(s);
}

/* Probe: one 64 KiB read every 100 ms, next to 4 greedy BE sequential readers. Returns its max
 * read latency. */
static sched_ns probe_latency(uint8_t ioclass, uint8_t level)
{
	struct sim *s = mk_sim(SCHED_POLICY_CFQ, "hdd", 1);
	struct sim_proc_spec ps;
	unsigned probe;
	sched_ns max;

	for (int i = 0; i < 4; i++)
		add_seq_reader(s, SCHED_ROOT_GROUP, SCHED_CLASS_BE, SCHED_LEVEL_NORM);
	sim_proc_default(SIM_INTERACTIVE, &ps);
	ps.ioclass = ioclass;
	ps.level = level;
	ps.burst = 1;
	ps.req_size = 64 * KIB;
	ps.think = 100 * MS;
	ps.start = 500 * MS;
	probe = add_proc(s, &ps);
	run_ok(s, 8 * SIM_S);
	max = sim_proc_stats(s, probe)->lat.max;
	cr_log_info("probe class %u: %llu reads, mean %.2f ms, p99 %.2f ms, max %.2f ms", ioclass,
		    (unsigned long long)sim_proc_stats(s, probe)->ios,
		    ms_of(sim_hist_mean(&sim_proc_stats(s, probe)->lat)),
		    ms_of(sim_hist_percentile(&sim_proc_stats(s, probe)->lat, 990)), ms_of(max));
	/* RT: served every time (75 wake-ups in 7.5 s); BE: one turn per CFQ round, not asserted */
	if (ioclass == SCHED_CLASS_RT)
		cr_expect(sim_proc_stats(s, probe)->ios >= 60, "RT probe starved: %llu reads",
			  (unsigned long long)sim_proc_stats(s, probe)->ios);
	sim_destroy(s);
	return max;
}

/*
 * An RT read preempts the active BE queue at once (§2.11), so it waits at most for the BE read
 * already on the disk and then its own seek: two worst-case I/Os. The same probe in BE waits
 * for its turn among the BE queues.
 */
Test(classes, rt_preempts_be)
{
	sched_ns bound = 2 * hdd_worst_io(128 * KIB);
	sched_ns rt = probe_latency(SCHED_CLASS_RT, 0);
	sched_ns be = probe_latency(SCHED_CLASS_BE, SCHED_LEVEL_NORM);

	cr_expect(rt <= bound, "RT max latency %.2f ms > %.2f ms (two worst-case I/Os)", ms_of(rt),
		  ms_of(bound));
	cr_expect(be > rt, "BE probe max latency %.2f ms should exceed RT's %.2f ms", ms_of(be),
		  ms_of(rt));
}

/*
 * BE level 0 vs level 4 greedy readers, one group: slices 180 ms vs 100 ms (slice_sync +
 * slice_sync/5 * (4 - level)); two queues do not trigger low_latency scaling (2 x 100 ms <
 * 300 ms), so the service ratio is 180/100 (+-10%).
 */
Test(classes, prio0_vs_prio4_slice_ratio)
{
	struct sim *s = mk_sim(SCHED_POLICY_CFQ, "hdd", 1);
	unsigned p0 = add_seq_reader(s, SCHED_ROOT_GROUP, SCHED_CLASS_BE, 0);
	unsigned p4 = add_seq_reader(s, SCHED_ROOT_GROUP, SCHED_CLASS_BE, 4);
	uint64_t b0, b4;
	double ratio;

	run_ok(s, 1 * SIM_S);
	b0 = sim_proc_stats(s, p0)->bytes;
	b4 = sim_proc_stats(s, p4)->bytes;
	run_ok(s, 15 * SIM_S);
	b0 = sim_proc_stats(s, p0)->bytes - b0;
	b4 = sim_proc_stats(s, p4)->bytes - b4;
	cr_assert(b4 > 0);
	ratio = (double)b0 / (double)b4;
	cr_log_info("prio0/prio4 = %.3f (want 1.8 +-10%%)", ratio);
	cr_expect(ratio >= 1.8 * 0.9 && ratio <= 1.8 * 1.1, "prio0/prio4 service ratio %.3f", ratio);
	sim_destroy(s);
}
