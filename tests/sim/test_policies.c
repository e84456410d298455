/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * noop and deadline run the same workloads as CFQ (every process kind, groups, classes) with the
 * invariant checker on. No fairness is asserted for them; deadline must bound read waits.
 */
#include <errno.h>

#include "sim_helpers.h"

struct mix {
	unsigned idx[8];
	unsigned n;
};

static void add_mix(struct sim *s, struct mix *m)
{
	struct sim_proc_spec ps;
	uint32_t g = add_group(s, SCHED_ROOT_GROUP, 200);

	m->n = 0;
	m->idx[m->n++] = add_seq_reader(s, SCHED_ROOT_GROUP, SCHED_CLASS_BE, SCHED_LEVEL_NORM);
	m->idx[m->n++] = add_seq_reader(s, g, SCHED_CLASS_BE, 1);
	sim_proc_default(SIM_RAND_READER, &ps);
	ps.group = g;
	m->idx[m->n++] = add_proc(s, &ps);
	sim_proc_default(SIM_RAND_READER, &ps);
	ps.depth = 4;
	m->idx[m->n++] = add_proc(s, &ps);
	sim_proc_default(SIM_BUF_WRITER, &ps);
	m->idx[m->n++] = add_proc(s, &ps);
	sim_proc_default(SIM_FSYNC_WRITER, &ps);
	ps.group = g;
	m->idx[m->n++] = add_proc(s, &ps);
	sim_proc_default(SIM_INTERACTIVE, &ps);
	m->idx[m->n++] = add_proc(s, &ps);
	/* bursty RT: a greedy RT reader would (correctly) starve the root group's BE queues */
	sim_proc_default(SIM_INTERACTIVE, &ps);
	ps.ioclass = SCHED_CLASS_RT;
	ps.level = 2;
	ps.burst = 4;
	ps.think = 200 * MS;
	m->idx[m->n++] = add_proc(s, &ps);
}

static void report(struct sim *s, const struct mix *m, const char *what)
{
	struct sim_totals t;

	sim_get_totals(s, &t);
	cr_log_info("%s: %.1f MB/s, %llu ios, avgqu-sz %.1f, await %.1f ms, util %.2f", what,
		    t.throughput / 1e6, (unsigned long long)t.ios, t.avgqu_sz, t.await_ms, t.util);
	for (unsigned i = 0; i < m->n; i++) {
		const struct sim_proc_stats *st = sim_proc_stats(s, m->idx[i]);

		cr_log_info("  proc %u: %llu ios, wait max %.1f ms, lat p99 %.1f ms, units %llu", i,
			    (unsigned long long)st->ios, ms_of(st->wait.max),
			    ms_of(sim_hist_percentile(&st->lat, 990)), (unsigned long long)st->units);
	}
}

static void run_policy(enum sched_policy policy, const char *dev)
{
	struct sim *s = mk_sim(policy, dev, 5);
	struct mix m;

	add_mix(s, &m);
	run_ok(s, 4 * SIM_S);
	report(s, &m, sched_policy_name(policy));
	/* work-conserving FIFO-ish policies: nobody is starved over 4 s */
	for (unsigned i = 0; i < m.n; i++)
		cr_expect(sim_proc_stats(s, m.idx[i])->ios > 0, "%s/%s: proc %u starved",
			  sched_policy_name(policy), dev, i);
	sim_destroy(s);
}

Test(policies, noop_hdd)
{
	run_policy(SCHED_POLICY_NOOP, "hdd");
}

Test(policies, noop_ssd)
{
	run_policy(SCHED_POLICY_NOOP, "ssd");
}

Test(policies, deadline_hdd)
{
	run_policy(SCHED_POLICY_DEADLINE, "hdd");
}

Test(policies, deadline_raid)
{
	run_policy(SCHED_POLICY_DEADLINE, "raid:2");
}

Test(policies, cfq_mix_hdd)
{
	run_policy(SCHED_POLICY_CFQ, "hdd");
}

/*
 * Deadline checks the read FIFO when a batch ends: an expired read waits at most for the batch
 * in progress and, if writes were starved, one write batch: 2 * fifo_batch requests of at most
 * one worst-case I/O each (128 KiB here) past read_expire.
 */
Test(policies, deadline_bounds_read_wait)
{
	struct sim *s = mk_sim(SCHED_POLICY_DEADLINE, "hdd", 5);
	struct mix m;
	sched_ns expire = (sched_ns)get_tunable(s, "read_expire") * MS;
	sched_ns batch = (sched_ns)get_tunable(s, "fifo_batch");
	sched_ns bound = expire + 2 * batch * hdd_worst_io(128 * KIB);
	sched_ns worst = 0;

	add_mix(s, &m);
	/* more pressure: four more random readers and a second writer */
	for (int i = 0; i < 4; i++) {
		struct sim_proc_spec ps;

		sim_proc_default(i == 3 ? SIM_BUF_WRITER : SIM_RAND_READER, &ps);
		add_proc(s, &ps);
	}
	run_ok(s, 6 * SIM_S);
	report(s, &m, "deadline under pressure");
	for (unsigned i = 0; i < sim_nr_procs(s); i++) {
		const struct sim_proc_stats *st = sim_proc_stats(s, i);

		/* readers and the fsync writer's fsync are sync; writers' waits are not bounded */
		if (i == m.idx[4] || i == m.idx[5] || i == sim_nr_procs(s) - 1)
			continue;
		if (st->wait.max > worst)
			worst = st->wait.max;
	}
	cr_log_info("deadline: worst read wait %.1f ms, bound %.1f ms", ms_of(worst), ms_of(bound));
	cr_expect(worst <= bound, "deadline: a read waited %.1f ms > read_expire + slack %.1f ms",
		  ms_of(worst), ms_of(bound));
	sim_destroy(s);
}

/* Mean post-merge I/O size [bytes] of a 2-cursor writeback stream on an NCQ hdd. */
static double writeback_io_size(enum sched_policy pol, int no_behind)
{
	struct sim_config cfg;
	struct sim_proc_spec ps;
	struct sim_totals tot;
	struct sim *s;

	sim_config_default(&cfg, pol, "hdd", 1);
	cfg.queue_depth = 31;
	s = mk_sim_cfg(&cfg);
	set_tunable(s, "no_merge_behind", no_behind);
	sim_proc_default(SIM_BUF_WRITER, &ps);
	ps.req_size = 128 * KIB;
	ps.depth = 128;
	ps.streams = 2;
	ps.chunk = 4 * 1024 * KIB;
	cr_assert_eq(sim_add_proc(s, &ps, NULL), 0);
	cr_assert_eq(sim_run(s, 2000 * MS), 0, "%s", sim_error(s));
	sim_get_totals(s, &tot);
	cr_assert(tot.dispatches > 0);
	sim_destroy(s);
	return (double)tot.bytes / (double)tot.dispatches;
}

/* no_merge_behind: two writeback passes of one file interleave in the async queue (deadline:
 * the write sort list), so the lower pass's tail has requests behind it and stops growing. */
Test(policies, no_merge_behind_shrinks_interleaved_writeback)
{
	enum sched_policy pols[] = { SCHED_POLICY_CFQ, SCHED_POLICY_DEADLINE };

	for (unsigned i = 0; i < 2; i++) {
		double off = writeback_io_size(pols[i], 0), on = writeback_io_size(pols[i], 1);

		cr_assert(off > 400.0 * KIB, "%s off: %.0f", sched_policy_name(pols[i]), off);
		cr_assert(on < 0.6 * off, "%s: on %.0f vs off %.0f bytes",
			  sched_policy_name(pols[i]), on, off);
	}
}

/* A multi-cursor stream needs a chunk that is a multiple of the request size. */
Test(policies, multi_cursor_spec_is_validated)
{
	struct sim *s = mk_sim(SCHED_POLICY_CFQ, "hdd", 1);
	struct sim_proc_spec ps;

	sim_proc_default(SIM_BUF_WRITER, &ps);
	ps.streams = 2;
	cr_assert_eq(sim_add_proc(s, &ps, NULL), -EINVAL, "chunk 0");
	ps.chunk = ps.req_size * 3 / 2;
	cr_assert_eq(sim_add_proc(s, &ps, NULL), -EINVAL, "chunk not a multiple");
	ps.streams = SIM_MAX_STREAMS + 1;
	ps.chunk = ps.req_size;
	cr_assert_eq(sim_add_proc(s, &ps, NULL), -EINVAL, "too many cursors");
	sim_destroy(s);
}
