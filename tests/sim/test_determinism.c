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
	same_and_different(SCHED_POLICY_CFQ, "ssd", 0x2fb95a7c2b12da13ull);
}

Test(determinism, deadline_raid)
{
	same_and_different(SCHED_POLICY_DEADLINE, "raid:4", 0x901436423bfc1105ull);
}

Test(determinism, noop_hdd)
{
	same_and_different(SCHED_POLICY_NOOP, "hdd", 0xae36765e64146645ull);
}
