/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The decision trace (sched_trace_*): recording changes no decision, the records agree with
 * what the simulator saw dispatched, CFQ dispatches only from the queue it last activated, and
 * the ring keeps the newest records.
 */
#include <errno.h>
#include <stdlib.h>

#include "sim_helpers.h"

/* Sequential readers (idle windows), random readers, a writer and an RT interactive reader
 * (preemptions) in two groups. `trace` records 0 = trace off. */
static struct sim *mk_mix(enum sched_policy policy, const char *dev, uint32_t trace)
{
	struct sim *s = mk_sim(policy, dev, 42);
	struct sim_proc_spec ps;
	uint32_t g1 = add_group(s, SCHED_ROOT_GROUP, 300);
	uint32_t g2 = add_group(s, SCHED_ROOT_GROUP, 700);

	cr_assert_eq(sched_trace_resize(sim_sched(s), trace), 0);
	for (int i = 0; i < 2; i++) {
		sim_proc_default(SIM_RAND_READER, &ps);
		ps.group = i ? g1 : g2;
		add_proc(s, &ps);
	}
	add_seq_reader(s, g1, SCHED_CLASS_BE, SCHED_LEVEL_NORM);
	add_seq_reader(s, g2, SCHED_CLASS_BE, SCHED_LEVEL_NORM);
	sim_proc_default(SIM_BUF_WRITER, &ps);
	ps.group = g2;
	add_proc(s, &ps);
	sim_proc_default(SIM_INTERACTIVE, &ps);
	ps.ioclass = SCHED_CLASS_RT;
	add_proc(s, &ps);
	return s;
}

static void same_decisions(enum sched_policy policy, const char *dev)
{
	struct sim_totals off, on;
	struct sim *s;

	s = mk_mix(policy, dev, 0);
	run_ok(s, 2 * SIM_S);
	sim_get_totals(s, &off);
	sim_destroy(s);
	s = mk_mix(policy, dev, 1024);
	run_ok(s, 2 * SIM_S);
	sim_get_totals(s, &on);
	cr_expect_gt(sched_trace_total(sim_sched(s)), on.dispatches,
		     "%s/%s: %llu records for %llu dispatches", sched_policy_name(policy), dev,
		     (unsigned long long)sched_trace_total(sim_sched(s)),
		     (unsigned long long)on.dispatches);
	sim_destroy(s);
	cr_expect_eq(on.hash, off.hash, "%s/%s: the trace changed the dispatch sequence",
		     sched_policy_name(policy), dev);
	cr_expect_eq(on.dispatches, off.dispatches);
}

Test(trace, recording_changes_no_decision)
{
	same_decisions(SCHED_POLICY_CFQ, "hdd");
	same_decisions(SCHED_POLICY_CFQ, "ssd");
	same_decisions(SCHED_POLICY_DEADLINE, "hdd");
	same_decisions(SCHED_POLICY_NOOP, "ssd");
}

Test(trace, records_match_the_dispatches_and_the_active_queue)
{
	struct sim *s = mk_mix(SCHED_POLICY_CFQ, "hdd", SCHED_TRACE_MAX);
	struct sched_trace_rec *r = calloc(SCHED_TRACE_MAX, sizeof(*r));
	uint64_t count[SCHED_TR_COUNT] = { 0 }, pos = 0, active = 0;
	struct sim_totals tot;
	bool have_active = false;
	size_t n;

	cr_assert_not_null(r);
	run_ok(s, SIM_S);
	sim_get_totals(s, &tot);
	cr_assert_leq(sched_trace_total(sim_sched(s)), SCHED_TRACE_MAX, "ring wrapped: shorten");
	n = sched_trace_read(sim_sched(s), &pos, r, SCHED_TRACE_MAX);
	cr_assert_eq(n, sched_trace_total(sim_sched(s)));
	cr_assert_eq(pos, n);
	for (size_t i = 0; i < n; i++) {
		cr_assert_lt(r[i].event, SCHED_TR_COUNT);
		count[r[i].event]++;
		if (i)
			cr_assert_geq(r[i].time, r[i - 1].time, "record %zu goes back in time", i);
		switch (r[i].event) {
		case SCHED_TR_ACTIVATE:
			cr_assert_leq(r[i].a, 2);
			cr_assert_leq(r[i].b, 2);
			active = r[i].queue_key;
			have_active = true;
			break;
		case SCHED_TR_EXPIRE:
			cr_assert(have_active && r[i].queue_key == active,
				  "record %zu: expire of queue %llu, active %llu", i,
				  (unsigned long long)r[i].queue_key, (unsigned long long)active);
			have_active = false;
			break;
		case SCHED_TR_DISPATCH:
			/* CFQ serves the active queue only */
			cr_assert(have_active && r[i].queue_key == active,
				  "record %zu: dispatch from queue %llu, active %s%llu", i,
				  (unsigned long long)r[i].queue_key, have_active ? "" : "none, last ",
				  (unsigned long long)active);
			cr_assert_gt(r[i].b, 0);
			break;
		case SCHED_TR_IDLE:
			cr_assert_gt(r[i].a, 0);
			break;
		default:
			break;
		}
	}
	cr_expect_eq(count[SCHED_TR_DISPATCH], tot.dispatches);
	/* at most the device's depth (32 here) still in flight at the end */
	cr_expect_leq(count[SCHED_TR_COMPLETE], count[SCHED_TR_DISPATCH]);
	cr_expect_geq(count[SCHED_TR_COMPLETE] + 32, count[SCHED_TR_DISPATCH]);
	cr_expect_geq(count[SCHED_TR_QUEUE], tot.ios);
	cr_expect_gt(count[SCHED_TR_ACTIVATE], 10);
	cr_expect_gt(count[SCHED_TR_SLICE], 10);
	cr_expect_gt(count[SCHED_TR_IDLE], 0, "sequential readers on an hdd: no idle window");
	cr_expect_gt(count[SCHED_TR_PREEMPT], 0, "an RT reader among BE: no preemption");
	cr_expect_eq(count[SCHED_TR_SWITCH], 0);
	free(r);
	sim_destroy(s);
}

Test(trace, ring_keeps_the_newest_and_sizes_are_checked)
{
	struct sim *s = mk_mix(SCHED_POLICY_CFQ, "ssd", 10);
	struct sched *sd = sim_sched(s);
	struct sched_trace_rec r[64];
	uint64_t pos = 0, total;
	size_t n;

	cr_assert_eq(sched_trace_capacity(sd), 16, "10 records round up to 16");
	run_ok(s, SIM_S / 10);
	total = sched_trace_total(sd);
	cr_assert_gt(total, 64);
	/* from 0: what was overwritten is skipped, the 16 newest come back, oldest first */
	n = sched_trace_read(sd, &pos, r, 64);
	cr_assert_eq(n, 16);
	cr_assert_eq(pos, total);
	for (size_t i = 1; i < n; i++)
		cr_assert_geq(r[i].time, r[i - 1].time);
	/* a reader that is up to date gets nothing new; one a few behind gets those few */
	cr_assert_eq(sched_trace_read(sd, &pos, r, 64), 0);
	pos = total - 3;
	cr_assert_eq(sched_trace_read(sd, &pos, r, 2), 2);
	cr_assert_eq(pos, total - 1);
	/* too big: refused, nothing changed */
	cr_assert_eq(sched_trace_resize(sd, SCHED_TRACE_MAX + 1), -EINVAL);
	cr_assert_eq(sched_trace_capacity(sd), 16);
	cr_assert_eq(sched_trace_total(sd), total);
	/* resizing restarts it empty; 0 turns it off */
	cr_assert_eq(sched_trace_resize(sd, 100), 0);
	cr_assert_eq(sched_trace_capacity(sd), 128);
	cr_assert_eq(sched_trace_total(sd), 0);
	cr_assert_eq(sched_trace_resize(sd, 0), 0);
	cr_assert_eq(sched_trace_capacity(sd), 0);
	run_ok(s, SIM_S / 5);
	cr_assert_eq(sched_trace_total(sd), 0);
	pos = 0;
	cr_assert_eq(sched_trace_read(sd, &pos, r, 64), 0);
	sim_destroy(s);
}

Test(trace, switch_is_recorded_and_events_are_named)
{
	struct sim *s = mk_mix(SCHED_POLICY_CFQ, "ssd", 256);
	struct sched *sd = sim_sched(s);
	struct sched_trace_rec r[256];
	uint64_t pos;
	size_t n;
	bool seen = false;

	run_ok(s, SIM_S / 10);
	pos = sched_trace_total(sd);
	cr_assert_eq(sched_switch(sd, SCHED_POLICY_DEADLINE, SIM_S / 10), 0);
	n = sched_trace_read(sd, &pos, r, 256);
	for (size_t i = 0; i < n; i++)
		if (r[i].event == SCHED_TR_SWITCH) {
			cr_expect_eq(r[i].a, SCHED_POLICY_DEADLINE);
			cr_expect_eq(r[i].queue_key, 0);
			seen = true;
		}
	cr_expect(seen, "no switch record");
	run_ok(s, SIM_S / 5);
	for (unsigned e = 0; e < SCHED_TR_COUNT; e++) {
		cr_expect_str_neq(sched_trace_event_name(e), "?", "event %u has no name", e);
		for (unsigned f = 0; f < e; f++)
			cr_expect_str_neq(sched_trace_event_name(e), sched_trace_event_name(f));
	}
	cr_expect_str_eq(sched_trace_event_name(SCHED_TR_COUNT), "?");
	sim_destroy(s);
}

/* Four readers of one file in interleaved 64 KiB chunks (tests/sim/test_coop.c): each "coop"
 * record names the queue that takes over, and the next activation is that queue's. */
Test(trace, coop_records_name_the_queue_that_takes_over)
{
	struct sim *s = mk_sim(SCHED_POLICY_CFQ, "hdd", 1);
	struct sched_trace_rec *r = calloc(SCHED_TRACE_MAX, sizeof(*r));
	uint64_t pos = 0, coops = 0;
	size_t n;

	cr_assert_not_null(r);
	cr_assert_eq(sched_trace_resize(sim_sched(s), SCHED_TRACE_MAX), 0);
	for (unsigned i = 0; i < 4; i++) {
		struct sim_proc_spec ps;

		sim_proc_default(SIM_SEQ_READER, &ps);
		ps.queue_key = 100 + i;
		ps.file = 1;
		ps.req_size = 64 * KIB;
		ps.chunk = 64 * KIB;
		ps.offset = i * 64 * KIB;
		ps.skip = 3 * 64 * KIB;
		add_proc(s, &ps);
	}
	run_ok(s, SIM_S / 2);
	cr_assert_leq(sched_trace_total(sim_sched(s)), SCHED_TRACE_MAX, "ring wrapped: shorten");
	n = sched_trace_read(sim_sched(s), &pos, r, SCHED_TRACE_MAX);
	for (size_t i = 0; i < n; i++) {
		if (r[i].event != SCHED_TR_COOP)
			continue;
		coops++;
		cr_assert_neq((uint64_t)r[i].a, r[i].queue_key);
		size_t j = i + 1;
		while (j < n && r[j].event != SCHED_TR_ACTIVATE)
			j++;
		cr_assert_lt(j, n, "coop record %zu: no activation after it", i);
		cr_assert_eq(r[j].queue_key, (uint64_t)r[i].a,
			     "coop record %zu hands over to %lld, %llu is activated", i,
			     (long long)r[i].a, (unsigned long long)r[j].queue_key);
	}
	cr_expect_gt(coops, 10, "interleaved readers: %llu coop records",
		     (unsigned long long)coops);
	free(r);
	sim_destroy(s);
}
