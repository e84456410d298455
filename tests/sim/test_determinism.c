/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Same seed => the same dispatch sequence (FNV-1a hash of queue_key, file, offset, len, time),
 * for every policy; another seed => (in practice) another sequence. The seed-42 hashes are
 * also pinned (golden): a change that alters any scheduling decision changes them, and must
 * then update them in the same commit, saying why (STYLE.md, "Determinism").
 */
#include "sim_helpers.h"

/* A mixed workload whose random readers draw from the seed. */
static uint64_t run_mix(enum sched_policy policy, const char *dev, uint64_t seed,
			struct sim_totals *out)
{
	struct sim *s = mk_sim(policy, dev, seed);
	struct sim_proc_spec ps;
	uint32_t g1 = add_group(s, SCHED_ROOT_GROUP, 300);
	uint32_t g2 = add_group(s, SCHED_ROOT_GROUP, 700);

	for (int i = 0; i < 3; i++) {
		sim_proc_default(SIM_RAND_READER, &ps);
		ps.group = i % 2 ? g1 : g2;
		add_proc(s, &ps);
	}
	add_seq_reader(s, g1, SCHED_CLASS_BE, 2);
	add_seq_reader(s, g2, SCHED_CLASS_BE, SCHED_LEVEL_NORM);
	sim_proc_default(SIM_BUF_WRITER, &ps);
	ps.group = g2;
	ps.depth = 16;
	add_proc(s, &ps);
	sim_proc_default(SIM_FSYNC_WRITER, &ps);
	ps.group = g1;
	add_proc(s, &ps);
	sim_proc_default(SIM_INTERACTIVE, &ps);
	ps.ioclass = SCHED_CLASS_RT;
	ps.level = 3;
	add_proc(s, &ps);
	run_ok(s, 3 * SIM_S);
	sim_get_totals(s, out);
	sim_destroy(s);
	return out->hash;
}

static void same_and_different(enum sched_policy policy, const char *dev, uint64_t golden)
{
	struct sim_totals a, b, c;
	uint64_t ha = run_mix(policy, dev, 42, &a);
	uint64_t hb = run_mix(policy, dev, 42, &b);
	uint64_t hc = run_mix(policy, dev, 43, &c);

	cr_log_info("%s/%s: hash %016llx (%llu dispatches), seed 43: %016llx",
		    sched_policy_name(policy), dev, (unsigned long long)ha,
		    (unsigned long long)a.dispatches, (unsigned long long)hc);
	cr_expect(a.dispatches > 100, "%s: only %llu dispatches", sched_policy_name(policy),
		  (unsigned long long)a.dispatches);
	cr_expect_eq(ha, hb, "%s/%s: same seed, different dispatch hash", sched_policy_name(policy),
		     dev);
	cr_expect_eq(a.bytes, b.bytes);
	cr_expect_eq(a.events, b.events);
	cr_expect_eq(ha, golden, "%s/%s: dispatch hash %016llx, golden %016llx: scheduling "
		     "decisions changed (update the golden value if on purpose)",
		     sched_policy_name(policy), dev, (unsigned long long)ha,
		     (unsigned long long)golden);
	cr_expect_neq(ha, hc, "%s/%s: seeds 42 and 43 gave the same dispatch sequence",
		      sched_policy_name(policy), dev);
}

Test(determinism, cfq_hdd)
{
	same_and_different(SCHED_POLICY_CFQ, "hdd", 0xd0147d8ccd1dc544ull);
}

Test(determinism, cfq_ssd)
{
	same_and_different(SCHED_POLICY_CFQ, "ssd", 0x09684bfe89b4b277ull);
}

Test(determinism, deadline_raid)
{
	same_and_different(SCHED_POLICY_DEADLINE, "raid:4", 0x901436423bfc1105ull);
}

Test(determinism, noop_hdd)
{
	same_and_different(SCHED_POLICY_NOOP, "hdd", 0xae36765e64146645ull);
}

/*
 * Timers delivered late: while nothing is queued the daemon's executor waits for no future
 * timer (it would only wake a worker to find nothing to do), which sched.h allows because the
 * core fires an overdue timer at its own time on the next call. The same workload with every
 * timer delivered on time and with those timers withheld must give the same dispatch
 * sequence. The workload makes such moments common: processes that think between requests
 * (CFQ idles for them, or lingers on a lone queue), in two groups (group idling).
 */
struct thinkers_out {
	struct sim_totals tot;
	struct sched_stats g[3]; /* root, g1, g2 */
};

enum thinkers { MIX, LONE_INTERACTIVE, LONE_RANDOM };

static uint64_t run_thinkers(const char *dev, bool lazy, enum thinkers w, struct thinkers_out *out)
{
	struct sim_config cfg;
	struct sim_proc_spec ps;
	struct sim *s;
	uint32_t g[3] = { SCHED_ROOT_GROUP };
	unsigned idx[4], n = 0;

	sim_config_default(&cfg, SCHED_POLICY_CFQ, dev, 7);
	cfg.lazy_timers = lazy;
	s = mk_sim_cfg(&cfg);
	g[1] = add_group(s, SCHED_ROOT_GROUP, 200);
	g[2] = add_group(s, SCHED_ROOT_GROUP, 800);
	/* LONE_INTERACTIVE: every idle window after a burst runs out with nothing queued and
	 * the next burst arrives after it (catch-up on enqueue). LONE_RANDOM: a seeky reader gets
	 * no idle window; its queue lingers and its slice ends while it thinks (catch-up of a
	 * lingering slice). */
	sim_proc_default(w == LONE_RANDOM ? SIM_RAND_READER : SIM_INTERACTIVE, &ps);
	ps.group = w == MIX ? g[2] : SCHED_ROOT_GROUP;
	ps.think = 150 * MS;
	idx[n++] = add_proc(s, &ps);
	if (w == MIX) {
		sim_proc_default(SIM_SEQ_READER, &ps);
		ps.group = g[1];
		ps.think = 4 * MS;
		idx[n++] = add_proc(s, &ps);
		sim_proc_default(SIM_RAND_READER, &ps);
		ps.group = g[2];
		ps.think = 60 * MS;
		idx[n++] = add_proc(s, &ps);
		sim_proc_default(SIM_FSYNC_WRITER, &ps);
		ps.group = g[1];
		ps.think = 400 * MS;
		idx[n++] = add_proc(s, &ps);
	}
	run_ok(s, 5 * SIM_S);
	/* everyone stops; a second later one call lets a withheld timer catch up, so both runs
	 * end in the same state if the catch-up is exact */
	for (unsigned i = 0; i < n; i++)
		cr_assert_eq(sim_proc_stop(s, idx[i], 5 * SIM_S), 0);
	run_ok(s, 6 * SIM_S);
	cr_assert_null(sched_dispatch(sim_sched(s), 6 * SIM_S), "dispatch with nothing queued");
	sim_get_totals(s, &out->tot);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(sched_group_stats(sim_sched(s), g[i], &out->g[i]), 0);
	sim_destroy(s);
	return out->tot.hash;
}

static void lazy_same(const char *dev, enum thinkers w)
{
	static const uint64_t min_dispatches[] = { 500, 200, 25 }, min_withheld[] = { 50, 20, 25 };
	struct thinkers_out on_time, lazy;
	uint64_t h0 = run_thinkers(dev, false, w, &on_time);
	uint64_t h1 = run_thinkers(dev, true, w, &lazy);

	cr_log_info("%s: %llu dispatches, %llu timers withheld, hash %016llx / %016llx", dev,
		    (unsigned long long)lazy.tot.dispatches,
		    (unsigned long long)lazy.tot.timers_withheld, (unsigned long long)h0,
		    (unsigned long long)h1);
	cr_expect(on_time.tot.dispatches > min_dispatches[w], "%s: only %llu dispatches", dev,
		  (unsigned long long)on_time.tot.dispatches);
	cr_expect(lazy.tot.timers_withheld > min_withheld[w], "%s: only %llu timers withheld: the test does "
		  "not exercise late delivery", dev, (unsigned long long)lazy.tot.timers_withheld);
	cr_expect_eq(h0, h1, "%s: withholding timers while nothing is queued changed the dispatch "
		     "sequence (%016llx on time, %016llx withheld)", dev, (unsigned long long)h0,
		     (unsigned long long)h1);
	for (int i = 0; i < 3; i++) {
		const struct sched_stats *a = &on_time.g[i], *b = &lazy.g[i];

		cr_expect(a->disk_time == b->disk_time && a->idle_time == b->idle_time &&
				  a->slices == b->slices,
			  "%s: group %d: disk time %llu / %llu ns, idle time %llu / %llu ns, slices "
			  "%llu / %llu (on time / withheld)", dev, i,
			  (unsigned long long)a->disk_time, (unsigned long long)b->disk_time,
			  (unsigned long long)a->idle_time, (unsigned long long)b->idle_time,
			  (unsigned long long)a->slices, (unsigned long long)b->slices);
	}
}

Test(determinism, lazy_timers_same_dispatches_hdd)
{
	lazy_same("hdd", MIX);
	lazy_same("hdd", LONE_INTERACTIVE);
	lazy_same("hdd", LONE_RANDOM);
}

Test(determinism, lazy_timers_same_dispatches_ssd)
{
	lazy_same("ssd", MIX);
	lazy_same("ssd", LONE_INTERACTIVE);
	lazy_same("ssd", LONE_RANDOM);
}
