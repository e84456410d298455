/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the scheduler core through sched.h only: tunables, groups, the request path,
 * merging, cancel, FIFO expiry, back seeks, classes, preemption, deadline and noop ordering,
 * sched_switch and the histogram. Time is a manual `now`; sched_check() runs after every step.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "sched.h"

#define MS SCHED_NS_PER_MS
#define KIB 1024ull
#define MIB (1024ull * 1024)

static void check(const struct sched *sd)
{
	char buf[256] = "";

	cr_assert_eq(sched_check(sd, buf, sizeof(buf)), 0, "sched_check: %s", buf);
}

static void mk(struct sched_rq *rq, uint64_t key, uint32_t group, uint8_t cls, uint8_t op,
	       uint8_t flags, uint64_t file, uint64_t off, uint64_t len)
{
	memset(rq, 0, sizeof(*rq));
	rq->queue_key = key;
	rq->group = group;
	rq->ioclass = cls;
	rq->level = cls == SCHED_CLASS_IDLE ? 7 : SCHED_LEVEL_NORM;
	rq->op = op;
	rq->flags = flags;
	rq->file = file;
	rq->offset = off;
	rq->len = len;
}

static void enq(struct sched *sd, struct sched_rq *rq, sched_ns now)
{
	cr_assert_eq(sched_enqueue(sd, rq, now), 0);
	check(sd);
}

static struct sched_rq *disp(struct sched *sd, sched_ns now)
{
	struct sched_rq *rq = sched_dispatch(sd, now);

	check(sd);
	return rq;
}

static void done(struct sched *sd, struct sched_rq *rq, sched_ns now)
{
	sched_complete(sd, rq, 0, now);
	check(sd);
}

/* Dispatches and completes everything left, then frees sd. */
static void drain_and_destroy(struct sched *sd, sched_ns now)
{
	while (sched_nr_queued(sd) || sched_nr_in_flight(sd)) {
		struct sched_rq *rq = disp(sd, now);

		if (!rq) {
			now = sched_next_event(sd) == SCHED_NS_NEVER ? now + MS : sched_next_event(sd);
			continue;
		}
		done(sd, rq, now);
	}
	sched_destroy(sd);
}

/* ---------------------------------------------------------------------------------------- */

Test(sched_core, tunables_names_units_and_ranges)
{
	static const char *cfq_names[] = { "quantum", "fifo_expire_sync", "fifo_expire_async",
					   "back_seek_max", "back_seek_penalty", "slice_sync",
					   "slice_async", "slice_async_rq", "slice_idle",
					   "group_idle", "low_latency", "target_latency",
					   "group_mode", "max_merge_kb", "no_merge_behind",
					   "max_copy_kb" };
	const struct sched_tunable_desc *d = sched_tunables(SCHED_POLICY_CFQ);
	struct sched *sd = sched_create(SCHED_POLICY_CFQ, true);
	int64_t v;
	size_t n = 0;

	for (; d[n].name; n++)
		cr_assert_str_eq(d[n].name, cfq_names[n]);
	cr_assert_eq(n, sizeof(cfq_names) / sizeof(cfq_names[0]));
	cr_assert_eq(sched_tunable_get(sd, "slice_idle", &v), 0);
	cr_assert_eq(v, 8);
	cr_assert_eq(sched_tunable_get(sd, "fifo_expire_sync", &v), 0);
	cr_assert_eq(v, 125);
	cr_assert_eq(sched_tunable_set(sd, "fifo_expire_sync", 200), 0);
	cr_assert_eq(sched_tunable_get(sd, "fifo_expire_sync", &v), 0);
	cr_assert_eq(v, 200);
	/* out of range: -EINVAL and nothing changed */
	cr_assert_eq(sched_tunable_set(sd, "fifo_expire_sync", 0), -EINVAL);
	cr_assert_eq(sched_tunable_set(sd, "low_latency", 2), -EINVAL);
	cr_assert_eq(sched_tunable_get(sd, "fifo_expire_sync", &v), 0);
	cr_assert_eq(v, 200);
	cr_assert_eq(sched_tunable_set(sd, "no_such_knob", 1), -ENOENT);
	cr_assert_eq(sched_tunable_get(sd, "read_expire", &v), -ENOENT);
	cr_assert_eq(sched_tunable_validate(SCHED_POLICY_DEADLINE, "read_expire", 500), 0);
	cr_assert_eq(sched_tunable_validate(SCHED_POLICY_DEADLINE, "read_expire", -1), -EINVAL);
	cr_assert_eq(sched_tunable_validate(SCHED_POLICY_NOOP, "quantum", 1), -ENOENT);
	check(sd);
	sched_destroy(sd);

	/* non-rotational: no idling by default (IOPS mode for groups) */
	sd = sched_create(SCHED_POLICY_CFQ, false);
	cr_assert_eq(sched_tunable_get(sd, "slice_idle", &v), 0);
	cr_assert_eq(v, 0);
	cr_assert_eq(sched_tunable_get(sd, "group_idle", &v), 0);
	cr_assert_eq(v, 8);
	sched_destroy(sd);
}

/* A tunable of an inactive policy is kept and in force after the switch (`-o
 * scheduler=deadline,slice_idle=0` used to lose the slice_idle); the active one is untouched. */
Test(sched_core, a_tunable_set_in_an_inactive_policy_holds_after_the_switch)
{
	struct sched *sd = sched_create(SCHED_POLICY_DEADLINE, true);
	int64_t v;

	cr_assert_eq(sched_tunable_set_in(sd, SCHED_POLICY_CFQ, "slice_idle", 0), 0);
	cr_assert_eq(sched_tunable_set_in(sd, SCHED_POLICY_CFQ, "slice_idle", 9999), -EINVAL);
	cr_assert_eq(sched_tunable_set_in(sd, SCHED_POLICY_NOOP, "slice_idle", 0), -ENOENT);
	cr_assert_eq(sched_tunable_get(sd, "slice_idle", &v), -ENOENT, "deadline has none");
	cr_assert_eq(sched_switch(sd, SCHED_POLICY_CFQ, 0), 0);
	cr_assert_eq(sched_tunable_get(sd, "slice_idle", &v), 0);
	cr_assert_eq(v, 0, "slice_idle %lld after the switch to cfq, want 0", (long long)v);
	check(sd);
	sched_destroy(sd);
}

Test(sched_core, policy_names)
{
	enum sched_policy p;

	cr_assert_str_eq(sched_policy_name(SCHED_POLICY_CFQ), "cfq");
	cr_assert_eq(sched_policy_parse("deadline", &p), 0);
	cr_assert_eq(p, SCHED_POLICY_DEADLINE);
	cr_assert_eq(sched_policy_parse("bfq", &p), -EINVAL);
	cr_assert_null(sched_create((enum sched_policy)7, true));
}

Test(sched_core, groups_create_remove_and_weights)
{
	struct sched *sd = sched_create(SCHED_POLICY_CFQ, true);
	uint32_t a, b, parent, w, lw;
	struct sched_rq rq;
	struct sched_stats st;

	cr_assert_eq(sched_group_get(sd, SCHED_ROOT_GROUP, &parent, &w, &lw), 0);
	cr_assert_eq(w, 1000);
	cr_assert_eq(sched_group_create(sd, SCHED_ROOT_GROUP, 200, 300, &a), 0);
	cr_assert_eq(sched_group_create(sd, a, 100, 100, &b), 0);
	cr_assert_neq(a, b);
	cr_assert_eq(sched_group_create(sd, 99, 100, 100, &b), -EINVAL);
	cr_assert_eq(sched_group_create(sd, a, 5, 100, &b), -EINVAL);
	cr_assert_eq(sched_group_create(sd, a, 100, 1001, &b), -EINVAL);
	cr_assert_eq(sched_group_get(sd, a, &parent, &w, &lw), 0);
	cr_assert_eq(parent, SCHED_ROOT_GROUP);
	cr_assert_eq(w, 200);
	cr_assert_eq(lw, 300);
	cr_assert_eq(sched_group_set_weight(sd, a, 400, 400), 0);
	cr_assert_eq(sched_group_set_weight(sd, a, 4000, 400), -EINVAL);
	cr_assert_eq(sched_group_get(sd, a, NULL, &w, NULL), 0);
	cr_assert_eq(w, 400);
	check(sd);
	/* busy group: -EBUSY; parent with children: -EBUSY; root: -EINVAL */
	mk(&rq, 1, b, SCHED_CLASS_BE, SCHED_OP_READ, 0, 1, 0, 4 * KIB);
	enq(sd, &rq, 0);
	cr_assert_eq(sched_group_stats(sd, b, &st), 0);
	cr_assert_eq(st.queued, 1);
	cr_assert_eq(sched_group_remove(sd, b), -EBUSY);
	cr_assert_eq(sched_group_remove(sd, a), -EBUSY);
	cr_assert_eq(sched_group_remove(sd, SCHED_ROOT_GROUP), -EINVAL);
	cr_assert_eq(disp(sd, 0), &rq);
	cr_assert_eq(sched_group_remove(sd, b), -EBUSY);
	done(sd, &rq, 1 * MS);
	/* the queue may still be active (idling); removal lets go of it */
	cr_assert_eq(sched_group_remove(sd, b), 0);
	check(sd);
	cr_assert_eq(sched_group_remove(sd, a), 0);
	cr_assert_eq(sched_group_get(sd, a, NULL, NULL, NULL), -EINVAL);
	/* a removed group refuses requests */
	mk(&rq, 1, b, SCHED_CLASS_BE, SCHED_OP_READ, 0, 1, 0, 4 * KIB);
	cr_assert_eq(sched_enqueue(sd, &rq, 2 * MS), -EINVAL);
	check(sd);
	sched_destroy(sd);
}

Test(sched_core, enqueue_rejects_bad_fields)
{
	struct sched *sd = sched_create(SCHED_POLICY_CFQ, true);
	struct sched_rq rq;

	mk(&rq, 1, 0, 0, SCHED_OP_READ, 0, 1, 0, 4 * KIB);
	cr_assert_eq(sched_enqueue(sd, &rq, 0), -EINVAL);
	mk(&rq, 1, 0, SCHED_CLASS_BE, 9, 0, 1, 0, 4 * KIB);
	cr_assert_eq(sched_enqueue(sd, &rq, 0), -EINVAL);
	mk(&rq, 1, 0, SCHED_CLASS_BE, SCHED_OP_FSYNC, 0, 1, 0, 4 * KIB);
	cr_assert_eq(sched_enqueue(sd, &rq, 0), -EINVAL);
	mk(&rq, 1, 0, SCHED_CLASS_BE, SCHED_OP_READ, 0, 1, 0, 4 * KIB);
	rq.level = 8;
	cr_assert_eq(sched_enqueue(sd, &rq, 0), -EINVAL);
	cr_assert_eq(sched_nr_queued(sd), 0);
	check(sd);
	sched_destroy(sd);
}

Test(sched_core, enqueue_dispatch_complete_basics)
{
	struct sched *sd = sched_create(SCHED_POLICY_CFQ, true);
	struct sched_rq rq;
	struct sched_stats st;
	struct sched_info info;

	mk(&rq, 42, 0, SCHED_CLASS_BE, SCHED_OP_READ, 0, 1, 0, 64 * KIB);
	enq(sd, &rq, 1 * MS);
	cr_assert_eq(sched_nr_queued(sd), 1);
	cr_assert_eq(disp(sd, 2 * MS), &rq);
	cr_assert_eq(rq.enqueue_time, 1 * MS);
	cr_assert_eq(rq.dispatch_time, 2 * MS);
	cr_assert_eq(sched_nr_queued(sd), 0);
	cr_assert_eq(sched_nr_in_flight(sd), 1);
	cr_assert_eq(sched_cancel(sd, &rq, 2 * MS), -EBUSY);
	cr_assert_null(disp(sd, 2 * MS));
	done(sd, &rq, 5 * MS);
	cr_assert_eq(sched_nr_in_flight(sd), 0);
	/* the sequential-looking queue idles: a timer is pending */
	cr_assert_eq(sched_next_event(sd), 5 * MS + 8 * MS);
	cr_assert_null(disp(sd, 13 * MS));
	cr_assert_eq(sched_next_event(sd), SCHED_NS_NEVER);
	cr_assert_eq(sched_group_stats(sd, 0, &st), 0);
	cr_assert_eq(st.bytes[SCHED_DIR_READ][SCHED_KIND_SYNC], 64 * KIB);
	cr_assert_eq(st.ios[SCHED_DIR_READ][SCHED_KIND_SYNC], 1);
	cr_assert_eq(st.dispatched, 1);
	cr_assert_eq(st.wait_time, 1 * MS);
	cr_assert_eq(st.service_time, 3 * MS);
	cr_assert_eq(st.latency.total, 1);
	cr_assert_eq(st.slices, 1);
	cr_assert(st.idle_time > 0);
	sched_get_info(sd, &info);
	cr_assert_eq(info.policy, SCHED_POLICY_CFQ);
	cr_assert_eq(info.nr_groups, 1);
	sched_destroy(sd);
}

Test(sched_core, merge_back_and_front)
{
	struct sched *sd = sched_create(SCHED_POLICY_CFQ, true);
	struct sched_rq r[4], *h;
	struct sched_stats st;

	/* async writes of one writer: 8K..12K, then 12K..16K (back), then 4K..8K (front) */
	mk(&r[0], 7, 0, SCHED_CLASS_BE, SCHED_OP_WRITE, 0, 3, 8 * KIB, 4 * KIB);
	mk(&r[1], 7, 0, SCHED_CLASS_BE, SCHED_OP_WRITE, 0, 3, 12 * KIB, 4 * KIB);
	mk(&r[2], 7, 0, SCHED_CLASS_BE, SCHED_OP_WRITE, 0, 3, 4 * KIB, 4 * KIB);
	mk(&r[3], 7, 0, SCHED_CLASS_BE, SCHED_OP_READ, 0, 3, 16 * KIB, 4 * KIB);
	enq(sd, &r[0], 0);
	enq(sd, &r[1], 0);
	cr_assert_eq(r[0].nr_merged, 1);
	cr_assert_eq(r[0].merged_len, 8 * KIB);
	cr_assert_eq(r[0].merge_next, &r[1]);
	enq(sd, &r[2], 0);
	cr_assert_eq(r[2].nr_merged, 2);
	cr_assert_eq(r[2].merged_len, 12 * KIB);
	cr_assert_eq(r[2].merge_next, &r[0]);
	/* a read never merges into writes */
	enq(sd, &r[3], 0);
	cr_assert_eq(r[3].nr_merged, 0);
	cr_assert_eq(sched_nr_queued(sd), 4);
	cr_assert_eq(sched_group_stats(sd, 0, &st), 0);
	cr_assert_eq(st.merged, 2);
	/* two I/Os come out: the read alone and the write chain headed by r[2] */
	for (sched_ns now = 0; sched_nr_queued(sd) > 0; now += 10 * MS) {
		h = disp(sd, now);
		if (!h)
			continue;
		cr_assert(h == &r[3] || h == &r[2]);
		if (h == &r[2]) {
			cr_assert_eq(h->merged_len, 12 * KIB);
			cr_assert_eq(h->merge_next, &r[0]);
			cr_assert_eq(r[0].merge_next, &r[1]);
		}
		done(sd, h, now + 1 * MS);
	}
	cr_assert_eq(sched_group_stats(sd, 0, &st), 0);
	cr_assert_eq(st.ios[SCHED_DIR_WRITE][SCHED_KIND_ASYNC], 3);
	cr_assert_eq(st.bytes[SCHED_DIR_WRITE][SCHED_KIND_ASYNC], 12 * KIB);
	cr_assert_eq(st.latency.total, 4);
	sched_destroy(sd);
}

Test(sched_core, merge_respects_max_merge_kb)
{
	struct sched *sd = sched_create(SCHED_POLICY_NOOP, true);
	struct sched_rq r[3];

	cr_assert_eq(sched_tunable_set(sd, "max_merge_kb", 8), 0);
	for (int i = 0; i < 3; i++) {
		mk(&r[i], 1, 0, SCHED_CLASS_BE, SCHED_OP_READ, 0, 1, (uint64_t)i * 4 * KIB, 4 * KIB);
		enq(sd, &r[i], 0);
	}
	cr_assert_eq(r[0].nr_merged, 1);
	cr_assert_eq(r[0].merged_len, 8 * KIB);
	cr_assert_eq(r[2].nr_merged, 0);
	cr_assert_eq(disp(sd, 0), &r[0]);
	cr_assert_eq(disp(sd, 0), &r[2]);
	done(sd, &r[0], 1);
	done(sd, &r[2], 1);
	/* 0 disables merging */
	cr_assert_eq(sched_tunable_set(sd, "max_merge_kb", 0), 0);
	mk(&r[0], 1, 0, SCHED_CLASS_BE, SCHED_OP_READ, 0, 1, 0, 4 * KIB);
	mk(&r[1], 1, 0, SCHED_CLASS_BE, SCHED_OP_READ, 0, 1, 4 * KIB, 4 * KIB);
	enq(sd, &r[0], 2);
	enq(sd, &r[1], 2);
	cr_assert_eq(r[0].nr_merged, 0);
	done(sd, disp(sd, 3), 4);
	done(sd, disp(sd, 3), 4);
	sched_destroy(sd);
}

/* SCHED_RQ_NOMERGE (an fallocate piece): never merged into another request, nor another into
 * it, under every policy, though it sorts and is charged as the write it is declared. */
Test(sched_core, nomerge_requests_stay_alone)
{
	for (int p = 0; p < SCHED_POLICY_COUNT; p++) {
		struct sched *sd = sched_create((enum sched_policy)p, true);
		struct sched_rq r[3];
		struct sched_stats st;

		for (int i = 0; i < 3; i++) {
			mk(&r[i], 1, 0, SCHED_CLASS_BE, SCHED_OP_WRITE, 0, 1, (uint64_t)i * 4 * KIB,
			   4 * KIB);
			if (i == 1)
				r[i].flags |= SCHED_RQ_NOMERGE;
			enq(sd, &r[i], 0);
		}
		for (int i = 0; i < 3; i++)
			cr_assert_eq(r[i].nr_merged, 0, "policy %d: request %d merged", p, i);
		for (int i = 0; i < 3; i++)
			done(sd, disp(sd, 1), 2);
		cr_assert_eq(sched_group_stats(sd, 0, &st), 0);
		cr_assert_eq(st.bytes[SCHED_DIR_WRITE][SCHED_KIND_ASYNC], 12 * KIB);
		/* and without the flag the same three merge into one */
		for (int i = 0; i < 3; i++) {
			mk(&r[i], 1, 0, SCHED_CLASS_BE, SCHED_OP_WRITE, 0, 1, (uint64_t)i * 4 * KIB,
			   4 * KIB);
			enq(sd, &r[i], 3);
		}
		cr_assert_eq(r[0].nr_merged, 2, "policy %d", p);
		done(sd, disp(sd, 4), 5);
		sched_destroy(sd);
	}
}

/* max_copy_kb: every policy has it (1024 KiB by default, 4..65536), and sched_max_copy()
 * gives the active policy's value in bytes. */
Test(sched_core, max_copy_follows_the_active_policy)
{
	struct sched *sd = sched_create(SCHED_POLICY_CFQ, true);
	int64_t v;

	cr_assert_eq(sched_max_copy(sd), 1024 * KIB);
	cr_assert_eq(sched_tunable_set(sd, "max_copy_kb", 3), -EINVAL);
	cr_assert_eq(sched_tunable_set(sd, "max_copy_kb", 65537), -EINVAL);
	cr_assert_eq(sched_tunable_set(sd, "max_copy_kb", 64), 0);
	cr_assert_eq(sched_max_copy(sd), 64 * KIB);
	cr_assert_eq(sched_switch(sd, SCHED_POLICY_DEADLINE, 0), 0);
	cr_assert_eq(sched_max_copy(sd), 1024 * KIB, "deadline keeps its own value");
	cr_assert_eq(sched_tunable_set(sd, "max_copy_kb", 4), 0);
	cr_assert_eq(sched_tunable_get(sd, "max_copy_kb", &v), 0);
	cr_assert_eq(v, 4);
	cr_assert_eq(sched_max_copy(sd), 4 * KIB);
	cr_assert_eq(sched_switch(sd, SCHED_POLICY_NOOP, 0), 0);
	cr_assert_eq(sched_max_copy(sd), 1024 * KIB);
	sched_destroy(sd);
}

/*
 * no_merge_behind (Axboe's 2009 elevator patch): a back merge is refused when the candidate
 * has another request sorted after it in the same sort tree; default off (kernel behaviour).
 * Two writeback streams of one async queue: file 3 at 0.. and file 3 at 1 MiB.. .
 */
static void merge_behind_case(enum sched_policy pol, bool on)
{
	struct sched *sd = sched_create(pol, true);
	struct sched_rq a0, a1, b0, b1, lone0, lone1, *h;
	int64_t v;
	unsigned n = 0;

	cr_assert_eq(sched_tunable_get(sd, "no_merge_behind", &v), 0);
	cr_assert_eq(v, 0, "off by default");
	cr_assert_eq(sched_tunable_set(sd, "no_merge_behind", 2), -EINVAL);
	if (on)
		cr_assert_eq(sched_tunable_set(sd, "no_merge_behind", 1), 0);
	mk(&a0, 7, 0, SCHED_CLASS_BE, SCHED_OP_WRITE, 0, 3, 0, 4 * KIB);
	mk(&b0, 8, 0, SCHED_CLASS_BE, SCHED_OP_WRITE, 0, 3, 1 * MIB, 4 * KIB);
	mk(&a1, 7, 0, SCHED_CLASS_BE, SCHED_OP_WRITE, 0, 3, 4 * KIB, 4 * KIB);
	mk(&b1, 8, 0, SCHED_CLASS_BE, SCHED_OP_WRITE, 0, 3, 1 * MIB + 4 * KIB, 4 * KIB);
	enq(sd, &a0, 0);
	enq(sd, &b0, 0);
	enq(sd, &a1, 0); /* b0 sorts after a0: queued behind it */
	enq(sd, &b1, 0); /* nothing sorts after b0 */
	cr_assert_eq(a0.nr_merged, on ? 0u : 1u);
	cr_assert_eq(b0.nr_merged, 1);
	cr_assert_eq(b0.merge_next, &b1);
	cr_assert_eq(sched_nr_queued(sd), 4);
	/* a lone stream (another file, after everything): still merges */
	mk(&lone0, 9, 0, SCHED_CLASS_BE, SCHED_OP_WRITE, 0, 4, 0, 4 * KIB);
	mk(&lone1, 9, 0, SCHED_CLASS_BE, SCHED_OP_WRITE, 0, 4, 4 * KIB, 4 * KIB);
	enq(sd, &lone0, 0);
	enq(sd, &lone1, 0);
	cr_assert_eq(lone0.nr_merged, 1);
	/* b0's tail now has file 4's request behind it: b0 stops growing when the rule is on */
	{
		struct sched_rq b2;

		mk(&b2, 8, 0, SCHED_CLASS_BE, SCHED_OP_WRITE, 0, 3, 1 * MIB + 8 * KIB, 4 * KIB);
		enq(sd, &b2, 0);
		cr_assert_eq(b0.nr_merged, on ? 1u : 2u);
		for (sched_ns now = 0; sched_nr_queued(sd) > 0 && now < 10000 * MS; now += MS) {
			h = disp(sd, now);
			if (h) {
				n++;
				done(sd, h, now);
			}
		}
	}
	cr_assert_eq(sched_nr_queued(sd), 0);
	cr_assert_eq(n, on ? 5u : 3u, "%u I/Os", n); /* on: a0, a1, b0+b1, b2, lone */
	sched_destroy(sd);
}

Test(sched_core, no_merge_behind_refuses_back_merge_with_requests_behind)
{
	merge_behind_case(SCHED_POLICY_CFQ, false);
	merge_behind_case(SCHED_POLICY_CFQ, true);
	merge_behind_case(SCHED_POLICY_DEADLINE, false);
	merge_behind_case(SCHED_POLICY_DEADLINE, true);
}

Test(sched_core, sync_never_merges_into_async)
{
	struct sched *sd = sched_create(SCHED_POLICY_CFQ, true);
	struct sched_rq a, s, f;

	mk(&a, 5, 0, SCHED_CLASS_BE, SCHED_OP_WRITE, 0, 2, 0, 4 * KIB);
	mk(&s, 5, 0, SCHED_CLASS_BE, SCHED_OP_WRITE, SCHED_RQ_SYNC, 2, 4 * KIB, 4 * KIB);
	mk(&f, 5, 0, SCHED_CLASS_BE, SCHED_OP_FSYNC, 0, 2, 0, 0);
	enq(sd, &a, 0);
	enq(sd, &s, 0);
	enq(sd, &f, 0);
	cr_assert_eq(a.nr_merged, 0);
	cr_assert_eq(s.nr_merged, 0);
	cr_assert_eq(sched_nr_queued(sd), 3);
	/* sync first (sync queue preempts/precedes the async one), fsync never merged */
	for (int i = 0; i < 3; i++) {
		struct sched_rq *rq = disp(sd, (sched_ns)i * 300 * MS);

		cr_assert_not_null(rq);
		cr_assert_eq(rq->nr_merged, 0);
		done(sd, rq, (sched_ns)i * 300 * MS + 1);
	}
	sched_destroy(sd);
}

Test(sched_core, cancel_member_and_head)
{
	struct sched *sd = sched_create(SCHED_POLICY_DEADLINE, true);
	struct sched_rq r[4], lone;

	for (int i = 0; i < 4; i++) {
		mk(&r[i], 1, 0, SCHED_CLASS_BE, SCHED_OP_READ, 0, 1, (uint64_t)i * 4 * KIB, 4 * KIB);
		enq(sd, &r[i], 0);
	}
	cr_assert_eq(r[0].nr_merged, 3);
	/* a member: cut out (the chain now has a hole) */
	cr_assert_eq(sched_cancel(sd, &r[2], 1), 0);
	check(sd);
	cr_assert_eq(r[0].nr_merged, 2);
	cr_assert_eq(r[0].merged_len, 12 * KIB);
	cr_assert_eq(r[1].merge_next, &r[3]);
	/* the head: its next member takes over */
	cr_assert_eq(sched_cancel(sd, &r[0], 1), 0);
	check(sd);
	cr_assert_eq(r[1].nr_merged, 1);
	cr_assert_eq(r[1].merged_len, 8 * KIB);
	cr_assert_eq(sched_nr_queued(sd), 2);
	cr_assert_eq(sched_cancel(sd, &r[0], 1), -EINVAL);
	mk(&lone, 2, 0, SCHED_CLASS_BE, SCHED_OP_READ, 0, 9, 0, 4 * KIB);
	enq(sd, &lone, 1);
	cr_assert_eq(sched_cancel(sd, &lone, 2), 0);
	check(sd);
	cr_assert_eq(disp(sd, 2), &r[1]);
	cr_assert_eq(r[1].merge_next, &r[3]);
	cr_assert_null(disp(sd, 2));
	done(sd, &r[1], 3);
	cr_assert_eq(sched_cancel(sd, &r[1], 3), -EBUSY);
	sched_destroy(sd);
}

Test(sched_core, cfq_cancel_keeps_queue_consistent)
{
	struct sched *sd = sched_create(SCHED_POLICY_CFQ, true);
	struct sched_rq a, b, c;

	mk(&a, 1, 0, SCHED_CLASS_BE, SCHED_OP_READ, 0, 1, 0, 4 * KIB);
	mk(&b, 1, 0, SCHED_CLASS_BE, SCHED_OP_READ, 0, 1, 1 * MIB, 4 * KIB);
	mk(&c, 2, 0, SCHED_CLASS_BE, SCHED_OP_READ, 0, 1, 2 * MIB, 4 * KIB);
	enq(sd, &a, 0);
	enq(sd, &b, 0);
	enq(sd, &c, 0);
	cr_assert_eq(sched_cancel(sd, &c, 0), 0); /* the other queue empties: leaves the tree */
	check(sd);
	cr_assert_eq(sched_cancel(sd, &a, 0), 0);
	check(sd);
	cr_assert_eq(disp(sd, 0), &b);
	done(sd, &b, 1 * MS);
	sched_destroy(sd);
}

Test(sched_core, fifo_expiry_serves_the_oldest_first)
{
	struct sched_rq far, near;
	struct sched *sd = sched_create(SCHED_POLICY_CFQ, true);

	/* no expiry: the nearest request (offset 0) goes first */
	mk(&far, 1, 0, SCHED_CLASS_BE, SCHED_OP_READ, 0, 0, 10 * MIB, 4 * KIB);
	mk(&near, 1, 0, SCHED_CLASS_BE, SCHED_OP_READ, 0, 0, 0, 4 * KIB);
	enq(sd, &far, 0);
	enq(sd, &near, 1 * MS);
	cr_assert_eq(disp(sd, 1 * MS), &near);
	done(sd, &near, 2 * MS);
	cr_assert_eq(disp(sd, 2 * MS), &far);
	done(sd, &far, 3 * MS);
	sched_destroy(sd);

	/* the far one is past fifo_expire_sync (125 ms) when the slice starts: it goes first */
	sd = sched_create(SCHED_POLICY_CFQ, true);
	mk(&far, 1, 0, SCHED_CLASS_BE, SCHED_OP_READ, 0, 0, 10 * MIB, 4 * KIB);
	mk(&near, 1, 0, SCHED_CLASS_BE, SCHED_OP_READ, 0, 0, 0, 4 * KIB);
	enq(sd, &far, 0);
	enq(sd, &near, 130 * MS);
	cr_assert_eq(disp(sd, 130 * MS), &far);
	cr_assert_eq(disp(sd, 130 * MS), &near);
	done(sd, &far, 140 * MS);
	done(sd, &near, 141 * MS);
	sched_destroy(sd);
}

Test(sched_core, back_seek_within_max_beats_longer_forward_seek)
{
	struct sched *sd = sched_create(SCHED_POLICY_CFQ, true);
	struct sched_rq x, behind, ahead, far_behind, far_ahead;

	mk(&x, 1, 0, SCHED_CLASS_BE, SCHED_OP_READ, 0, 0, 100 * MIB, 4 * KIB);
	enq(sd, &x, 0);
	cr_assert_eq(disp(sd, 0), &x); /* head now at 100 MiB + 4 KiB */
	/* 1 MiB behind (cost 2 x 1 MiB) vs 3 MiB ahead: back seek wins */
	mk(&behind, 1, 0, SCHED_CLASS_BE, SCHED_OP_READ, 0, 0, 99 * MIB, 4 * KIB);
	mk(&ahead, 1, 0, SCHED_CLASS_BE, SCHED_OP_READ, 0, 0, 103 * MIB, 4 * KIB);
	enq(sd, &ahead, 0);
	enq(sd, &behind, 0);
	cr_assert_eq(disp(sd, 0), &behind);
	done(sd, &x, 1 * MS);
	done(sd, &behind, 2 * MS);
	cr_assert_eq(disp(sd, 2 * MS), &ahead);
	done(sd, &ahead, 3 * MS); /* head at 103 MiB + 4 KiB */
	/* 20 MiB behind is beyond back_seek_max (16 MiB): wrapped, the far forward one wins */
	mk(&far_behind, 1, 0, SCHED_CLASS_BE, SCHED_OP_READ, 0, 0, 83 * MIB, 4 * KIB);
	mk(&far_ahead, 1, 0, SCHED_CLASS_BE, SCHED_OP_READ, 0, 0, 200 * MIB, 4 * KIB);
	enq(sd, &far_behind, 3 * MS);
	enq(sd, &far_ahead, 3 * MS);
	cr_assert_eq(disp(sd, 3 * MS), &far_ahead);
	cr_assert_eq(disp(sd, 3 * MS), &far_behind);
	done(sd, &far_ahead, 4 * MS);
	done(sd, &far_behind, 5 * MS);
	sched_destroy(sd);
}

Test(sched_core, idle_class_gets_nothing_while_be_backlogged)
{
	struct sched *sd = sched_create(SCHED_POLICY_CFQ, true);
	static struct sched_rq be[40], idle[4];
	sched_ns now = 0;
	int n_be = 0;

	for (int i = 0; i < 4; i++) {
		mk(&idle[i], 9, 0, SCHED_CLASS_IDLE, SCHED_OP_READ, 0, 9, (uint64_t)i * MIB,
		   4 * KIB);
		enq(sd, &idle[i], 0);
	}
	for (int i = 0; i < 40; i++) {
		mk(&be[i], 1, 0, SCHED_CLASS_BE, SCHED_OP_READ, 0, 1, (uint64_t)i * MIB, 4 * KIB);
		enq(sd, &be[i], 0);
	}
	/* dispatch one at a time until BE is drained: never an IDLE request meanwhile */
	while (n_be < 40) {
		struct sched_rq *rq = disp(sd, now);

		cr_assert_not_null(rq, "stalled with BE backlog");
		cr_assert_eq(rq->ioclass, SCHED_CLASS_BE, "IDLE dispatched with BE backlogged");
		now += 1 * MS;
		done(sd, rq, now);
		n_be++;
	}
	/* BE empty: once its idle window and the IDLE-class grace (100 ms after the last BE
	 * completion) have passed, IDLE runs, woken by sched_next_event alone */
	sched_ns be_end = now;
	for (int i = 0; i < 4; i++) {
		struct sched_rq *rq = disp(sd, now);

		for (int waits = 0; !rq && waits < 4; waits++) {
			now = sched_next_event(sd);
			cr_assert_neq(now, SCHED_NS_NEVER, "IDLE work left without a timer");
			rq = disp(sd, now);
		}
		cr_assert_not_null(rq);
		cr_assert_eq(rq->ioclass, SCHED_CLASS_IDLE);
		cr_assert_geq(rq->dispatch_time, be_end + 100 * MS, "IDLE started within the grace");
		now += 1 * MS;
		done(sd, rq, now);
	}
	sched_destroy(sd);
}

Test(sched_core, rt_request_preempts_be_queue)
{
	struct sched *sd = sched_create(SCHED_POLICY_CFQ, true);
	struct sched_rq be[3], rt;
	struct sched_rq *rq;

	for (int i = 0; i < 3; i++) {
		mk(&be[i], 1, 0, SCHED_CLASS_BE, SCHED_OP_READ, 0, 1, (uint64_t)i * MIB, 4 * KIB);
		enq(sd, &be[i], 0);
	}
	rq = disp(sd, 0);
	cr_assert_eq(rq, &be[0]);
	done(sd, rq, 1 * MS); /* BE slice started, two requests still queued */
	mk(&rt, 2, 0, SCHED_CLASS_RT, SCHED_OP_READ, 0, 2, 0, 4 * KIB);
	rt.level = 0;
	enq(sd, &rt, 2 * MS);
	cr_assert_eq(disp(sd, 2 * MS), &rt);
	done(sd, &rt, 3 * MS);
	/* back to BE after the RT queue has nothing more */
	for (int i = 1; i < 3; i++) {
		sched_ns now = 20 * MS * (sched_ns)i;

		rq = disp(sd, now);
		cr_assert_not_null(rq);
		cr_assert_eq(rq->ioclass, SCHED_CLASS_BE);
		done(sd, rq, now + 1);
	}
	sched_destroy(sd);
}

Test(sched_core, weights_shape_group_service)
{
	struct sched *sd = sched_create(SCHED_POLICY_CFQ, true);
	static struct sched_rq r[2][16];
	uint32_t g[2];
	uint64_t served[2] = { 0, 0 };
	sched_ns now = 0;
	unsigned next[2] = { 0, 0 };

	cr_assert_eq(sched_tunable_set(sd, "group_mode", 2), 0); /* IOPS: exact counts */
	cr_assert_eq(sched_tunable_set(sd, "slice_idle", 0), 0);
	cr_assert_eq(sched_tunable_set(sd, "slice_sync", 10), 0);
	cr_assert_eq(sched_group_create(sd, 0, 100, 100, &g[0]), 0);
	cr_assert_eq(sched_group_create(sd, 0, 300, 300, &g[1]), 0);
	/* both groups keep 8 requests outstanding; one I/O at a time, 1 ms each */
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < 8; i++, next[k]++) {
			mk(&r[k][next[k] % 16], 10 + (uint64_t)k, g[k], SCHED_CLASS_BE,
			   SCHED_OP_READ, 0, (uint64_t)k, (uint64_t)next[k] * MIB, 4 * KIB);
			enq(sd, &r[k][next[k] % 16], now);
		}
	for (int step = 0; step < 4000; step++) {
		struct sched_rq *rq = disp(sd, now);
		int k;

		if (!rq) {
			now = sched_next_event(sd);
			cr_assert_neq(now, SCHED_NS_NEVER, "stall");
			continue;
		}
		k = rq->group == g[0] ? 0 : 1;
		served[k]++;
		now += 1 * MS;
		done(sd, rq, now);
		mk(&r[k][next[k] % 16], 10 + (uint64_t)k, g[k], SCHED_CLASS_BE, SCHED_OP_READ, 0,
		   (uint64_t)k, (uint64_t)next[k] * MIB, 4 * KIB);
		enq(sd, &r[k][next[k] % 16], now);
		next[k]++;
	}
	cr_log_info("served %llu vs %llu", (unsigned long long)served[0],
		    (unsigned long long)served[1]);
	cr_assert(served[1] * 10 > 27 * served[0] && served[1] * 10 < 33 * served[0],
		  "weights 100:300 gave %llu:%llu", (unsigned long long)served[0],
		  (unsigned long long)served[1]);
	drain_and_destroy(sd, now);
}

/*
 * Hundreds of busy groups: more than the core's "few groups" bound for its cache warming,
 * which then follows the group tree several turns ahead, through groups' and queues' lines.
 * A group drains, leaves the tree and comes back, and another is removed, while the rest
 * run: a stale pointer kept by the warming would be read after free (the ASan stage runs
 * this suite). Asserted: in IOPS mode weight 200 gets twice weight 100's dispatches, every
 * group is served, and the removal succeeds once its group has drained.
 */
#define MG_GROUPS 300
#define MG_QUEUES 2 /* per group */
#define MG_DEPTH 2  /* requests per queue, queued or in flight */
#define MG_SLOTS (MG_QUEUES * MG_DEPTH)

/* (Re)queues request slot k of group i: its queue's next offset, never contiguous. */
static void mg_enqueue(struct sched *sd, struct sched_rq *rq, uint32_t gid, int i, int k,
		       uint64_t *off, sched_ns now)
{
	uint64_t key = 1000 + (uint64_t)(i * MG_QUEUES + k / MG_DEPTH);

	mk(rq, key, gid, SCHED_CLASS_BE, SCHED_OP_READ, SCHED_RQ_SYNC, key, *off, 4 * KIB);
	*off += MIB;
	cr_assert_eq(sched_enqueue(sd, rq, now), 0);
}

Test(sched_core, many_groups_share_by_weight_while_groups_come_and_go)
{
	struct sched *sd = sched_create(SCHED_POLICY_CFQ, false);
	static struct sched_rq r[MG_GROUPS][MG_SLOTS];
	static bool idle[MG_GROUPS][MG_SLOTS]; /* slot not in the scheduler */
	static uint64_t off[MG_GROUPS][MG_QUEUES], served[MG_GROUPS];
	static uint32_t g[MG_GROUPS];
	uint64_t by_weight[2] = { 0, 0 };
	bool removed = false;
	sched_ns now = 0;
	int step;

	cr_assert_eq(sched_tunable_set(sd, "group_mode", 2), 0); /* IOPS: exact counts */
	for (int i = 0; i < MG_GROUPS; i++) {
		uint32_t w = i % 2 ? 200 : 100;

		cr_assert_eq(sched_group_create(sd, 0, w, w, &g[i]), 0);
		for (int k = 0; k < MG_SLOTS; k++)
			mg_enqueue(sd, &r[i][k], g[i], i, k, &off[i][k / MG_DEPTH], now);
	}
	/* group 7 sits out steps 2000..5999 (it drains and leaves the group tree); shares are
	 * counted over 6000..95999 with every group busy; group 8 stops at 96000 and is removed
	 * once drained, while the others go on. sched_check() (O(groups + queues)) runs every
	 * 64 steps and at each of those events. */
	for (step = 0; step < 100000; step++) {
		struct sched_rq *rq = sched_dispatch(sd, now);
		int i, k;
		bool paused;

		if (step % 64 == 0 || step == 2000 || step == 6000 || step == 96000)
			check(sd);
		if (!rq) {
			now = sched_next_event(sd);
			cr_assert_neq(now, SCHED_NS_NEVER, "stall at step %d", step);
			continue;
		}
		i = (int)((rq - &r[0][0]) / MG_SLOTS);
		k = (int)((rq - &r[0][0]) % MG_SLOTS);
		cr_assert(i != 8 || !removed);
		if (step >= 6000 && step < 96000) {
			served[i]++;
			by_weight[i % 2]++;
		}
		now += 100 * SCHED_NS_PER_US;
		sched_complete(sd, rq, 0, now);
		idle[i][k] = true;
		if (step == 6000)
			for (int kk = 0; kk < MG_SLOTS; kk++)
				if (idle[7][kk]) {
					mg_enqueue(sd, &r[7][kk], g[7], 7, kk, &off[7][kk / MG_DEPTH],
						   now);
					idle[7][kk] = false;
				}
		paused = (i == 7 && step >= 2000 && step < 6000) || (i == 8 && step >= 96000);
		if (!paused) {
			mg_enqueue(sd, rq, g[i], i, k, &off[i][k / MG_DEPTH], now);
			idle[i][k] = false;
		} else if (i == 8) {
			bool drained = true;

			for (int kk = 0; kk < MG_SLOTS; kk++)
				drained = drained && idle[8][kk];
			if (drained) {
				cr_assert_eq(sched_group_remove(sd, g[8]), 0);
				check(sd);
				removed = true;
			}
		}
	}
	cr_assert(removed, "group 8 never drained");
	for (int i = 0; i < MG_GROUPS; i++)
		cr_assert_gt(served[i], 0, "group %d never served", i);
	cr_log_info("weight 100: %llu, weight 200: %llu dispatches",
		    (unsigned long long)by_weight[0], (unsigned long long)by_weight[1]);
	cr_assert(by_weight[1] * 100 >= 195 * by_weight[0] &&
			  by_weight[1] * 100 <= 205 * by_weight[0],
		  "weights 100:200 gave %llu:%llu", (unsigned long long)by_weight[0],
		  (unsigned long long)by_weight[1]);
	drain_and_destroy(sd, now);
}

Test(sched_core, deadline_prefers_reads_and_sorts_batches)
{
	struct sched *sd = sched_create(SCHED_POLICY_DEADLINE, true);
	struct sched_rq w[3], rd[3];
	uint64_t offs[3] = { 30 * MIB, 10 * MIB, 20 * MIB };
	struct sched_rq *rq;

	for (int i = 0; i < 3; i++) {
		mk(&w[i], 100 + (uint64_t)i, 0, SCHED_CLASS_BE, SCHED_OP_WRITE, 0, 1, offs[i],
		   4 * KIB);
		enq(sd, &w[i], 0);
	}
	for (int i = 0; i < 3; i++) {
		mk(&rd[i], (uint64_t)i, 0, SCHED_CLASS_BE, SCHED_OP_READ, 0, 1, offs[i], 4 * KIB);
		enq(sd, &rd[i], 0);
	}
	/* a read batch starts at the oldest read, then goes up in offset order */
	cr_assert_eq(disp(sd, 1), &rd[0]); /* 30 MiB: nothing after it -> back to the FIFO */
	cr_assert_eq(disp(sd, 1), &rd[1]);
	cr_assert_eq(disp(sd, 1), &rd[2]);
	/* reads done: writes, from the oldest, then sorted */
	cr_assert_eq(disp(sd, 1), &w[0]);
	cr_assert_eq(disp(sd, 1), &w[1]);
	cr_assert_eq(disp(sd, 1), &w[2]);
	cr_assert_null(disp(sd, 1));
	cr_assert_eq(sched_next_event(sd), SCHED_NS_NEVER);
	for (int i = 0; i < 3; i++) {
		done(sd, &w[i], 2);
		done(sd, &rd[i], 2);
	}
	/* writes_starved: after 2 read batches with writes waiting, a write batch */
	cr_assert_eq(sched_tunable_set(sd, "fifo_batch", 1), 0);
	mk(&w[0], 100, 0, SCHED_CLASS_BE, SCHED_OP_WRITE, 0, 1, 0, 4 * KIB);
	enq(sd, &w[0], 3);
	for (int i = 0; i < 3; i++) {
		mk(&rd[i], (uint64_t)i, 0, SCHED_CLASS_BE, SCHED_OP_READ, 0, 1 + (uint64_t)i, 0,
		   4 * KIB);
		enq(sd, &rd[i], 3);
	}
	cr_assert_eq(disp(sd, 4)->op, SCHED_OP_READ);
	cr_assert_eq(disp(sd, 4)->op, SCHED_OP_READ);
	rq = disp(sd, 4);
	cr_assert_eq(rq, &w[0], "the write was starved twice");
	cr_assert_eq(disp(sd, 4)->op, SCHED_OP_READ);
	for (int i = 0; i < 3; i++)
		done(sd, &rd[i], 5);
	done(sd, &w[0], 5);
	sched_destroy(sd);
}

Test(sched_core, deadline_expired_read_restarts_batch_from_fifo)
{
	struct sched *sd = sched_create(SCHED_POLICY_DEADLINE, true);
	struct sched_rq old, r[20];

	mk(&old, 1, 0, SCHED_CLASS_BE, SCHED_OP_READ, 0, 1, 0, 4 * KIB);
	enq(sd, &old, 0);
	for (int i = 0; i < 20; i++) {
		mk(&r[i], 2 + (uint64_t)i, 0, SCHED_CLASS_BE, SCHED_OP_READ, 0, 1,
		   (uint64_t)(i + 1) * MIB, 4 * KIB);
		enq(sd, &r[i], 1 * MS);
	}
	cr_assert_eq(disp(sd, 1 * MS), &old);
	done(sd, &old, 2 * MS);
	for (int i = 0; i < 20; i++) {
		struct sched_rq *rq = disp(sd, 2 * MS);

		cr_assert_eq(rq, &r[i], "offset order");
		done(sd, rq, 3 * MS);
	}
	sched_destroy(sd);
}

Test(sched_core, noop_is_fifo_with_back_merge_only)
{
	struct sched *sd = sched_create(SCHED_POLICY_NOOP, true);
	struct sched_rq r[4];

	mk(&r[0], 1, 0, SCHED_CLASS_BE, SCHED_OP_READ, 0, 1, 8 * KIB, 4 * KIB);
	mk(&r[1], 2, 0, SCHED_CLASS_BE, SCHED_OP_READ, 0, 1, 0, 4 * KIB);
	mk(&r[2], 1, 0, SCHED_CLASS_BE, SCHED_OP_READ, 0, 1, 12 * KIB, 4 * KIB); /* back */
	mk(&r[3], 1, 0, SCHED_CLASS_BE, SCHED_OP_READ, 0, 1, 4 * KIB, 4 * KIB);	 /* front: no */
	for (int i = 0; i < 4; i++)
		enq(sd, &r[i], (sched_ns)i);
	cr_assert_eq(r[0].nr_merged, 1);
	cr_assert_eq(r[3].nr_merged, 0);
	cr_assert_eq(disp(sd, 5), &r[0]);
	cr_assert_eq(disp(sd, 5), &r[1]);
	cr_assert_eq(disp(sd, 5), &r[3]);
	cr_assert_null(disp(sd, 5));
	done(sd, &r[0], 6);
	done(sd, &r[1], 6);
	done(sd, &r[3], 6);
	sched_destroy(sd);
}

Test(sched_core, switch_keeps_queued_requests_in_arrival_order)
{
	struct sched *sd = sched_create(SCHED_POLICY_CFQ, true);
	struct sched_rq r[6], *inflight;
	uint64_t offs[6] = { 5, 1, 4, 2, 3, 0 };

	for (int i = 0; i < 6; i++) {
		mk(&r[i], 1 + (uint64_t)(i % 2), 0, SCHED_CLASS_BE, SCHED_OP_READ, 0, 1,
		   offs[i] * MIB, 4 * KIB);
		enq(sd, &r[i], (sched_ns)i);
	}
	inflight = disp(sd, 10);
	cr_assert_not_null(inflight);
	cr_assert_eq(sched_switch(sd, SCHED_POLICY_NOOP, 11), 0);
	check(sd);
	cr_assert_eq(sched_policy(sd), SCHED_POLICY_NOOP);
	cr_assert_eq(sched_nr_queued(sd), 5);
	for (int i = 0; i < 6; i++) {
		struct sched_rq *rq;

		if (&r[i] == inflight)
			continue;
		rq = disp(sd, 12);
		cr_assert_eq(rq, &r[i], "arrival order after the switch");
		done(sd, rq, 13);
	}
	done(sd, inflight, 14); /* dispatched by CFQ, completed under noop */
	cr_assert_eq(sched_switch(sd, SCHED_POLICY_DEADLINE, 15), 0);
	cr_assert_eq(sched_switch(sd, SCHED_POLICY_CFQ, 16), 0);
	check(sd);
	cr_assert_eq(sched_switch(sd, (enum sched_policy)9, 17), -EINVAL);
	sched_destroy(sd);
}

static void count_queue(void *arg, const struct sched_queue_info *qi)
{
	uint64_t *last = arg;

	cr_assert(qi->queue_key >= last[0], "foreach order");
	last[0] = qi->queue_key;
	last[1]++;
}

Test(sched_core, foreach_queue_in_key_order)
{
	struct sched *sd = sched_create(SCHED_POLICY_CFQ, true);
	struct sched_rq r[5];
	uint64_t keys[5] = { 50, 10, 40, 20, 30 }, acc[2] = { 0, 0 };
	struct sched_info info;

	for (int i = 0; i < 5; i++) {
		mk(&r[i], keys[i], 0, SCHED_CLASS_BE, SCHED_OP_READ, 0, 1, (uint64_t)i * MIB,
		   4 * KIB);
		enq(sd, &r[i], 0);
	}
	sched_foreach_queue(sd, count_queue, acc);
	cr_assert_eq(acc[1], 5);
	sched_get_info(sd, &info);
	cr_assert_eq(info.nr_queues, 5);
	cr_assert_eq(info.queued, 5);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(sched_cancel(sd, &r[i], 1), 0);
	check(sd);
	sched_destroy(sd);
}

/*
 * With no idling (slice_idle = group_idle = 0), the active queue whose last request completes
 * while nothing else is queued or in flight lingers: a request of its own that comes before
 * the end of its slice continues the slice (one activation, as in the kernel), and the end of
 * the slice is an event that releases the queue, so that the queue of a process that exited
 * does not stay live (listed in .cfqfs/queues) until the next I/O on the mount.
 */
Test(sched_core, cfq_lone_queue_keeps_its_slice_across_a_gap_and_is_released_at_its_end)
{
	struct sched *sd = sched_create(SCHED_POLICY_CFQ, true);
	struct sched_rq r[3], *rq;
	struct sched_info info;
	struct sched_stats st;
	sched_ns end;

	cr_assert_eq(sched_tunable_set(sd, "slice_idle", 0), 0);
	cr_assert_eq(sched_tunable_set(sd, "group_idle", 0), 0);
	for (int i = 0; i < 3; i++)
		mk(&r[i], 7, 0, SCHED_CLASS_BE, SCHED_OP_READ, SCHED_RQ_SYNC, 1, (uint64_t)i * MIB,
		   4 * KIB);
	enq(sd, &r[0], 1 * MS);
	enq(sd, &r[1], 1 * MS);
	rq = disp(sd, 2 * MS);
	cr_assert_eq(rq, &r[0]);
	done(sd, rq, 3 * MS);
	rq = disp(sd, 4 * MS);
	cr_assert_eq(rq, &r[1]);
	done(sd, rq, 5 * MS);
	/* the slice began at the first completion: it ends 100 ms (slice_sync) later */
	end = sched_next_event(sd);
	cr_assert_eq(end, 103 * MS, "next event %lld, want the slice end",
		     (long long)end);
	sched_get_info(sd, &info);
	cr_assert_eq(info.nr_queues, 1, "the lingering queue stays live within its slice");

	/* its next request within the slice: served at once, in the same slice */
	enq(sd, &r[2], 50 * MS);
	rq = disp(sd, 50 * MS);
	cr_assert_eq(rq, &r[2]);
	done(sd, rq, 51 * MS);
	cr_assert_eq(sched_group_stats(sd, 0, &st), 0);
	cr_assert_eq(st.slices, 1, "one activation for the three requests, got %llu",
		     (unsigned long long)st.slices);
	cr_assert_eq(sched_next_event(sd), 103 * MS);

	/* before the slice end nothing changes; at it, the queue goes */
	cr_assert_null(disp(sd, 103 * MS - 1));
	sched_get_info(sd, &info);
	cr_assert_eq(info.nr_queues, 1);
	cr_assert_null(disp(sd, 103 * MS));
	cr_assert_eq(sched_next_event(sd), SCHED_NS_NEVER);
	sched_get_info(sd, &info);
	cr_assert_eq(info.nr_queues, 0, "the queue is still live after its slice (%llu live)",
		     (unsigned long long)info.nr_queues);
	/* the same process coming back gets a queue and a slice again */
	enq(sd, &r[0], 200 * MS);
	rq = disp(sd, 200 * MS);
	cr_assert_eq(rq, &r[0]);
	done(sd, rq, 201 * MS);
	cr_assert_eq(sched_group_stats(sd, 0, &st), 0);
	cr_assert_eq(st.slices, 2);
	check(sd);
	sched_destroy(sd);
}

/* A lingering queue yields at once to another process's arrival (nothing to idle for). */
Test(sched_core, cfq_lingering_queue_yields_to_another_queue_at_once)
{
	struct sched *sd = sched_create(SCHED_POLICY_CFQ, true);
	struct sched_rq a, b, *rq;

	cr_assert_eq(sched_tunable_set(sd, "slice_idle", 0), 0);
	cr_assert_eq(sched_tunable_set(sd, "group_idle", 0), 0);
	mk(&a, 7, 0, SCHED_CLASS_BE, SCHED_OP_READ, SCHED_RQ_SYNC, 1, 0, 4 * KIB);
	mk(&b, 8, 0, SCHED_CLASS_BE, SCHED_OP_READ, SCHED_RQ_SYNC, 2, 0, 4 * KIB);
	enq(sd, &a, 1 * MS);
	rq = disp(sd, 1 * MS);
	cr_assert_eq(rq, &a);
	done(sd, rq, 2 * MS);
	cr_assert_neq(sched_next_event(sd), SCHED_NS_NEVER);
	enq(sd, &b, 10 * MS);
	rq = disp(sd, 10 * MS);
	cr_assert_eq(rq, &b, "the other queue waits behind a lingering one");
	done(sd, rq, 11 * MS);
	check(sd);
	sched_destroy(sd);
}

Test(sched_core, hist_buckets_and_percentiles)
{
	struct sched_hist h;

	memset(&h, 0, sizeof(h));
	cr_assert_eq(sched_hist_bucket_lo(0), 0);
	cr_assert_eq(sched_hist_bucket_lo(1), 1000);
	cr_assert_eq(sched_hist_bucket_lo(2), 1250);
	cr_assert_eq(sched_hist_bucket_lo(5), 2000);
	for (unsigned i = 1; i < SCHED_HIST_BUCKETS; i++)
		cr_assert(sched_hist_bucket_lo(i) > sched_hist_bucket_lo(i - 1));
	cr_assert_eq(sched_hist_percentile(&h, 500), 0);
	/* 90 samples in [1 ms, 1.25 ms), 10 at 8 ms */
	h.count[1 + 10 * 4 - 1] = 0;
	for (unsigned i = 0; i < SCHED_HIST_BUCKETS; i++)
		if (sched_hist_bucket_lo(i) <= 1000000 && sched_hist_bucket_lo(i + 1) > 1000000)
			h.count[i] = 90;
	for (unsigned i = 0; i < SCHED_HIST_BUCKETS; i++)
		if (sched_hist_bucket_lo(i) <= 8000000 && sched_hist_bucket_lo(i + 1) > 8000000)
			h.count[i] = 10;
	h.total = 100;
	h.max = 8000000;
	h.sum = 90 * 1000000ull + 10 * 8000000ull;
	cr_assert(sched_hist_percentile(&h, 500) > 1000000);
	cr_assert(sched_hist_percentile(&h, 500) <= 1250000);
	cr_assert_eq(sched_hist_percentile(&h, 990), 8000000); /* clamped to max */
	cr_assert_eq(sched_hist_percentile(&h, 900), sched_hist_percentile(&h, 500));
}

Test(sched_core, latency_histogram_fills_from_completions)
{
	struct sched *sd = sched_create(SCHED_POLICY_NOOP, true);
	struct sched_rq r;
	struct sched_stats st;

	mk(&r, 1, 0, SCHED_CLASS_BE, SCHED_OP_READ, 0, 1, 0, 4 * KIB);
	enq(sd, &r, 0);
	done(sd, disp(sd, 0), 3 * MS);
	cr_assert_eq(sched_group_stats(sd, 0, &st), 0);
	cr_assert_eq(st.latency.total, 1);
	cr_assert_eq(st.latency.max, 3 * MS);
	cr_assert(sched_hist_percentile(&st.latency, 500) >= 3 * MS);
	cr_assert(sched_hist_percentile(&st.latency, 500) <= 3 * MS);
	sched_destroy(sd);
}

/*
 * The core remembers the queue of the latest completion to skip the hash on the next
 * enqueue. The same key in another group must still get its own queue, and the hint must
 * not outlive a queue freed with its group (ASan builds catch a use after free).
 */
Test(sched_core, queue_hint_respects_groups_and_group_removal)
{
	struct sched *sd = sched_create(SCHED_POLICY_CFQ, false);
	struct sched_rq a, b, c;
	struct sched_stats st;
	uint32_t ga, gb;

	cr_assert_eq(sched_group_create(sd, SCHED_ROOT_GROUP, 500, 500, &ga), 0);
	cr_assert_eq(sched_group_create(sd, SCHED_ROOT_GROUP, 500, 500, &gb), 0);
	mk(&a, 7, ga, SCHED_CLASS_BE, SCHED_OP_READ, SCHED_RQ_SYNC, 1, 0, 4 * KIB);
	enq(sd, &a, 1 * MS);
	cr_assert_eq(disp(sd, 1 * MS), &a);
	done(sd, &a, 2 * MS); /* the hint is now ga's queue of key 7 */
	mk(&b, 7, gb, SCHED_CLASS_BE, SCHED_OP_READ, SCHED_RQ_SYNC, 1, 0, 4 * KIB);
	enq(sd, &b, 2 * MS);
	cr_assert_eq(sched_group_stats(sd, gb, &st), 0);
	cr_assert_eq(st.queued, 1, "key 7 of group b went to group a's queue");
	cr_assert_eq(sched_group_stats(sd, ga, &st), 0);
	cr_assert_eq(st.queued, 0);
	cr_assert_eq(disp(sd, 30 * MS), &b);
	done(sd, &b, 31 * MS); /* the hint is now gb's queue */
	cr_assert_eq(sched_group_remove(sd, gb), 0);
	check(sd);
	cr_assert_eq(sched_group_create(sd, SCHED_ROOT_GROUP, 500, 500, &gb), 0);
	mk(&c, 7, gb, SCHED_CLASS_BE, SCHED_OP_READ, SCHED_RQ_SYNC, 1, 8 * KIB, 4 * KIB);
	enq(sd, &c, 40 * MS);
	cr_assert_eq(sched_group_stats(sd, gb, &st), 0);
	cr_assert_eq(st.queued, 1);
	cr_assert_eq(disp(sd, 60 * MS), &c);
	done(sd, &c, 61 * MS);
	sched_destroy(sd);
}

/*
 * Group A's async queue serves a write its caller waits for (SCHED_RQ_CALLER) when a read of
 * group B arrives. When the write completes, A's group idles for its caller's next request
 * (group_idle) and B's read waits; after plain async writeback (no caller) B's read goes at
 * once. And B's read never preempts the waited-for write's queue (trace: no preempt record).
 */
static bool preempted(const struct sched *sd)
{
	struct sched_trace_rec rec[64];
	uint64_t pos = 0;
	size_t n = sched_trace_read(sd, &pos, rec, 64);

	for (size_t i = 0; i < n; i++)
		if (rec[i].event == SCHED_TR_PREEMPT)
			return true;
	return false;
}

static void caller_write_then_other_groups_read(uint8_t wflags, bool caller)
{
	struct sched *sd = sched_create(SCHED_POLICY_CFQ, true);
	struct sched_rq w, r, *d;
	uint32_t ga, gb;
	sched_ns now = 1000 * MS;

	cr_assert_not_null(sd);
	cr_assert_eq(sched_trace_resize(sd, 64), 0);
	cr_assert_eq(sched_group_create(sd, SCHED_ROOT_GROUP, 800, 800, &ga), 0);
	cr_assert_eq(sched_group_create(sd, SCHED_ROOT_GROUP, 100, 100, &gb), 0);
	mk(&w, 1, ga, SCHED_CLASS_BE, SCHED_OP_WRITE, wflags, 7, 0, 8 * KIB);
	enq(sd, &w, now);
	cr_assert_eq(disp(sd, now), &w);
	now += MS / 10;
	mk(&r, 2, gb, SCHED_CLASS_BE, SCHED_OP_READ, SCHED_RQ_SYNC, 9, 0, 1024 * KIB);
	enq(sd, &r, now);
	cr_assert_eq(preempted(sd), !caller, "a sync read preempts async writeback only");
	cr_assert_null(disp(sd, now), "the read waits for the write in flight either way");
	now += 3 * MS;
	done(sd, &w, now);
	d = disp(sd, now);
	if (caller) {
		cr_assert_null(d, "group idle for the writer's next request");
		cr_assert_eq(sched_next_event(sd), now + 8 * MS, "group_idle armed");
	} else {
		cr_assert_eq(d, &r, "no idling after writeback: the read goes at once");
		done(sd, d, now + MS);
	}
	drain_and_destroy(sd, now + MS);
}

Test(sched_core, caller_write_keeps_its_group_turn_against_another_groups_read)
{
	caller_write_then_other_groups_read(SCHED_RQ_CALLER, true);
}

Test(sched_core, writeback_without_a_caller_yields_to_another_groups_read)
{
	caller_write_then_other_groups_read(0, false);
}
