/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Latency behaviour of CFQ (cfq-bfq.md §2.4, §2.8, §2.9, §2.11): low_latency slice scaling,
 * sync reads next to a backlogged async writer, idling keeping a sequential reader's slice,
 * and preemptions among random readers leaving a sequential reader its turns.
 */
#include "sim_helpers.h"

#define NREADERS 32

/* Max request latency over NREADERS greedy sequential readers in the root group. */
static sched_ns max_latency_32(int low_latency, uint64_t *bytes)
{
	struct sim *s = mk_sim(SCHED_POLICY_CFQ, "hdd", 1);
	unsigned idx[NREADERS];
	sched_ns max = 0;

	set_tunable(s, "low_latency", low_latency);
	for (int i = 0; i < NREADERS; i++)
		idx[i] = add_seq_reader(s, SCHED_ROOT_GROUP, SCHED_CLASS_BE, SCHED_LEVEL_NORM);
	run_ok(s, 12 * SIM_S);
	*bytes = 0;
	for (int i = 0; i < NREADERS; i++) {
		const struct sim_proc_stats *st = sim_proc_stats(s, idx[i]);

		cr_expect(st->ios > 0, "reader %d starved", i);
		if (st->lat.max > max)
			max = st->lat.max;
		*bytes += st->bytes;
	}
	sim_destroy(s);
	return max;
}

/*
 * With low_latency, each of N busy sync queues gets max(slice_sync * target_latency /
 * (N * slice_sync), 2 * slice_idle) = max(9.4, 16) = 16 ms, so a round of N queues is bounded by
 * target_latency (300 ms) where the 16 ms floor does not bind, plus the floor's excess
 * N * (16 - 300/N), plus N queue switches (each at most one worst-case I/O: the new queue's
 * first request pays a seek before its slice starts), plus one unscaled slice (the busy-queue
 * average ramps up during the first round). Without low_latency every queue keeps 100 ms:
 * a round is > 3.2 s (Zoccolo's measurements: max latency 3.8 s -> 1.1 s).
 */
Test(latency, low_latency_bounds_max_wait)
{
	int64_t target = 300, slice_sync = 100, floor_ms = 2 * 8;
	uint64_t bytes_on, bytes_off;
	sched_ns on = max_latency_32(1, &bytes_on);
	sched_ns off = max_latency_32(0, &bytes_off);
	sched_ns per_q = (sched_ns)(target * MS / NREADERS);
	sched_ns slice = per_q > (sched_ns)floor_ms * MS ? per_q : (sched_ns)floor_ms * MS;
	sched_ns bound = NREADERS * (slice + hdd_worst_io(128 * KIB)) + (sched_ns)slice_sync * MS;

	cr_log_info("32 readers: max latency %.1f ms (low_latency=1, %.1f MB/s), %.1f ms "
		    "(low_latency=0, %.1f MB/s); bound %.1f ms",
		    ms_of(on), bytes_on / 12e6, ms_of(off), bytes_off / 12e6, ms_of(bound));
	cr_expect(on <= bound, "low_latency=1: max latency %.1f ms > bound %.1f ms", ms_of(on),
		  ms_of(bound));
	cr_expect(off > 2 * on, "low_latency=0 max latency %.1f ms should be well above %.1f ms",
		  ms_of(off), ms_of(on));
	cr_expect(off >= (sched_ns)NREADERS * 100 * MS * 9 / 10,
		  "low_latency=0: a round of 32 full 100 ms slices, got max %.1f ms", ms_of(off));
}

/* Interactive reader (bursts of 4 x 64 KiB, 50 ms think) next to a buffered writer with 64
 * writes in flight. Fills the reader's latency histogram. */
static void reader_vs_writer(enum sched_policy policy, struct sim_hist *lat, uint64_t *wbytes)
{
	struct sim *s = mk_sim(policy, "hdd", 7);
	struct sim_proc_spec ps;
	unsigned r, w;

	sim_proc_default(SIM_BUF_WRITER, &ps);
	w = add_proc(s, &ps);
	sim_proc_default(SIM_INTERACTIVE, &ps);
	ps.burst = 4;
	ps.think = 50 * MS;
	ps.start = 300 * MS;
	r = add_proc(s, &ps);
	run_ok(s, 8 * SIM_S);
	*lat = sim_proc_stats(s, r)->lat;
	*wbytes = sim_proc_stats(s, w)->bytes;
	cr_log_info("%s: reader %llu reads mean %.2f p99 %.2f max %.2f ms; writer %.1f MB/s",
		    sched_policy_name(policy), (unsigned long long)lat->total,
		    ms_of(sim_hist_mean(lat)), ms_of(sim_hist_percentile(lat, 990)),
		    ms_of(lat->max), *wbytes / 8e6);
	sim_destroy(s);
}

/*
 * A sync read preempts the async queue (§2.11) and async dispatch is held while sync I/O is in
 * flight (§2.9): a read waits for at most the write on the disk plus its own seek, so p99 stays
 * within two worst-case I/Os and no read approaches fifo_expire_sync (125 ms). Under noop the
 * reads queue behind the writer's 64 requests.
 */
Test(latency, sync_reads_beat_async_writer)
{
	struct sim_hist cfq, noop;
	uint64_t wcfq, wnoop;
	sched_ns bound = 2 * hdd_worst_io(128 * KIB);

	reader_vs_writer(SCHED_POLICY_CFQ, &cfq, &wcfq);
	reader_vs_writer(SCHED_POLICY_NOOP, &noop, &wnoop);
	cr_expect(cfq.total >= 200, "reader made %llu reads", (unsigned long long)cfq.total);
	cr_expect(sim_hist_percentile(&cfq, 990) <= bound, "cfq: reader p99 %.2f ms > %.2f ms",
		  ms_of(sim_hist_percentile(&cfq, 990)), ms_of(bound));
	cr_expect(cfq.max <= 125 * MS, "cfq: reader max %.2f ms > fifo_expire_sync",
		  ms_of(cfq.max));
	cr_expect(wcfq >= 8 * 20000000ull, "cfq: writer starved (%.1f MB/s)", wcfq / 8e6);
	cr_expect(sim_hist_mean(&cfq) < sim_hist_mean(&noop),
		  "cfq reader mean %.2f ms should beat noop's %.2f ms", ms_of(sim_hist_mean(&cfq)),
		  ms_of(sim_hist_mean(&noop)));
}

/* Two sequential readers that think 2 ms between reads (less than slice_idle). */
static void two_thinking_readers(int slice_idle, uint64_t *switches, uint64_t *dispatches,
				 uint64_t *bytes)
{
	struct sim *s = mk_sim(SCHED_POLICY_CFQ, "hdd", 1);
	struct sim_proc_spec ps;
	struct sim_totals t;

	set_tunable(s, "slice_idle", slice_idle);
	for (int i = 0; i < 2; i++) {
		sim_proc_default(SIM_SEQ_READER, &ps);
		ps.think = 2 * MS;
		add_proc(s, &ps);
	}
	run_ok(s, 5 * SIM_S);
	sim_get_totals(s, &t);
	*switches = t.switches;
	*dispatches = t.dispatches;
	*bytes = t.bytes;
	cr_log_info("slice_idle=%d: %llu dispatches, %llu queue switches, %.1f MB/s", slice_idle,
		    (unsigned long long)t.dispatches, (unsigned long long)t.switches,
		    t.throughput / 1e6);
	sim_destroy(s);
}

/*
 * With idling the active reader keeps the disk across its 2 ms think time for its whole slice:
 * about one switch per slice (5 s / 100 ms = 50, a few more at low_latency), i.e. a switch on a
 * small fraction of dispatches. With slice_idle=0 the queue expires whenever it empties: a switch
 * (and a long seek) on nearly every dispatch.
 */
Test(latency, idling_keeps_sequential_slice)
{
	uint64_t sw_idle, sw_none, d_idle, d_none, b_idle, b_none;

	two_thinking_readers(8, &sw_idle, &d_idle, &b_idle);
	two_thinking_readers(0, &sw_none, &d_none, &b_none);
	cr_expect(sw_idle <= 2 * 5 * 1000 / 100, "with idling: %llu switches in 5 s",
		  (unsigned long long)sw_idle);
	cr_expect(sw_idle * 10 <= d_idle, "with idling: %llu switches in %llu dispatches",
		  (unsigned long long)sw_idle, (unsigned long long)d_idle);
	cr_expect(sw_none * 10 >= d_none * 9, "slice_idle=0: only %llu switches in %llu dispatches",
		  (unsigned long long)sw_none, (unsigned long long)d_none);
	cr_expect(b_idle >= 2 * b_none, "idling should pay off: %llu vs %llu bytes",
		  (unsigned long long)b_idle, (unsigned long long)b_none);
}

struct disk_time_of {
	uint64_t key;
	sched_ns disk_time;
};

static void find_disk_time(void *arg, const struct sched_queue_info *qi)
{
	struct disk_time_of *d = arg;

	if (qi->sync && qi->queue_key == d->key)
		d->disk_time = qi->stats->disk_time;
}

/*
 * Three random readers (SYNC_NOIDLE tree) and one sequential reader (SYNC tree, idle window).
 * Each random reader's arrival finds the active random reader empty and preempts it (§2.11:
 * the new queue goes to the front of its tree). The kernel keys such a queue 1 s before its
 * tree's leftmost, which also beat the SYNC tree's key when the workload slice ended, so the
 * random readers kept the disk for ~1 s at a time: the sequential reader waited 1.07 s, over
 * low_latency's target_latency plus one slice, and was charged 7% of the disk time. Within
 * its own workload type a preempting queue now only goes before its tree's leftmost: the
 * workload slices split the group's time (3/4 and 1/4 for 3 and 1 busy queues).
 */
Test(latency, noidle_preemptions_leave_the_sync_tree_its_turns)
{
	struct sim_config cfg;
	struct sim *s;
	struct sim_proc_spec ps;
	struct disk_time_of seq = { 0, 0 };
	unsigned r[3], q;
	sched_ns bound = (300 + 100) * MS, total = 0;
	double share;

	/* 8 I/Os on the device, as the daemon's default depth: a random reader's arrival then
	 * finds the active one empty with its read in flight */
	sim_config_default(&cfg, SCHED_POLICY_CFQ, "hdd", 3);
	cfg.queue_depth = 8;
	s = mk_sim_cfg(&cfg);
	for (int i = 0; i < 3; i++) {
		sim_proc_default(SIM_RAND_READER, &ps);
		r[i] = add_proc(s, &ps);
	}
	q = add_seq_reader(s, SCHED_ROOT_GROUP, SCHED_CLASS_BE, SCHED_LEVEL_NORM);
	run_ok(s, 10 * SIM_S);
	for (int i = 0; i < 3; i++) {
		struct disk_time_of d = { 1000 + r[i], 0 };

		sched_foreach_queue(sim_sched(s), find_disk_time, &d);
		cr_expect(sim_proc_stats(s, r[i])->ios > 0, "random reader %d starved", i);
		total += d.disk_time;
	}
	seq.key = 1000 + q;
	sched_foreach_queue(sim_sched(s), find_disk_time, &seq);
	total += seq.disk_time;
	share = (double)seq.disk_time / (double)(total ? total : 1);
	cr_log_info("sequential reader: max wait %.1f ms (bound %.1f), %.1f%% of the disk time, "
		    "%.1f MB/s", ms_of(sim_proc_stats(s, q)->wait.max), ms_of(bound), 100 * share,
		    sim_proc_stats(s, q)->bytes / 10e6);
	cr_expect(sim_proc_stats(s, q)->wait.max <= bound,
		  "sequential reader waited %.1f ms > target_latency + one slice (%.1f ms)",
		  ms_of(sim_proc_stats(s, q)->wait.max), ms_of(bound));
	cr_expect(share >= 0.20 && share <= 0.40,
		  "sequential reader charged %.1f%% of the disk time, its workload's share is 25%%",
		  100 * share);
	sim_destroy(s);
}
