/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of cgroup/cg_cache.c: hits, TTL, start-time keys, deterministic LRU eviction. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cg_cache.h"

#define MS 1000000ull
#define SEC 1000000000ull
/* In hot loops: report failures only (with --full-stats every passing cr_assert is a message) */
#define CHECK(cond, ...)                                                                          \
	do {                                                                                      \
		if (!(cond))                                                                      \
			cr_assert_fail(__VA_ARGS__);                                              \
	} while (0)

static struct cg_facts facts(pid_t tgid, const char *cgroup)
{
	struct cg_facts f;

	memset(&f, 0, sizeof(f));
	f.tgid = tgid;
	snprintf(f.cgroup, sizeof(f.cgroup), "%s", cgroup);
	return f;
}

Test(cg_cache, miss_then_hit)
{
	struct cg_cache *cc = cg_cache_create(8, SEC);
	struct cg_facts f = facts(100, "/a"), out;
	struct cg_cache_stats st;

	cr_assert_not_null(cc);
	cr_assert_eq(cg_cache_get(cc, 101, 5000, 0, &out), -ENOENT);
	cg_cache_put(cc, 101, 5000, 0, &f);
	cr_assert(cg_cache_check(cc));
	memset(&out, 0, sizeof(out));
	cr_assert_eq(cg_cache_get(cc, 101, 5000, 10 * MS, &out), 0);
	cr_assert_eq(out.tgid, 100);
	cr_assert_str_eq(out.cgroup, "/a");
	cr_assert_eq(cg_cache_count(cc), 1);
	cg_cache_get_stats(cc, &st);
	cr_assert_eq(st.hits, 1);
	cr_assert_eq(st.misses, 1);
	cg_cache_destroy(cc);
}

Test(cg_cache, ttl_expiry_forces_reclassification)
{
	struct cg_cache *cc = cg_cache_create(8, SEC);
	struct cg_facts f = facts(100, "/a"), out;
	struct cg_cache_stats st;
	uint64_t t0 = 123 * SEC;

	cg_cache_put(cc, 101, 5000, t0, &f);
	cr_assert_eq(cg_cache_get(cc, 101, 5000, t0 + SEC - 1, &out), 0, "fresh just before ttl");
	cr_assert_eq(cg_cache_get(cc, 101, 5000, t0 + SEC, &out), -ENOENT, "expired at ttl");
	cr_assert_eq(cg_cache_count(cc), 0, "an expired entry is dropped");
	cg_cache_get_stats(cc, &st);
	cr_assert_eq(st.expired, 1);
	/* a re-put restarts the clock */
	f = facts(100, "/b");
	cg_cache_put(cc, 101, 5000, t0 + SEC, &f);
	cr_assert_eq(cg_cache_get(cc, 101, 5000, t0 + SEC + 500 * MS, &out), 0);
	cr_assert_str_eq(out.cgroup, "/b");
	cr_assert(cg_cache_check(cc));
	cg_cache_destroy(cc);
}

Test(cg_cache, ttl_compare_is_wrap_safe)
{
	struct cg_cache *cc = cg_cache_create(4, SEC);
	struct cg_facts f = facts(1, "/"), out;
	uint64_t t0 = UINT64_MAX - 100 * MS;

	cg_cache_put(cc, 7, 1, t0, &f);
	cr_assert_eq(cg_cache_get(cc, 7, 1, t0 + 500 * MS, &out), 0, "clock wrapped, still fresh");
	cr_assert_eq(cg_cache_get(cc, 7, 1, t0 + 2 * SEC, &out), -ENOENT);
	cg_cache_destroy(cc);
}

Test(cg_cache, reused_tid_with_other_start_time_misses)
{
	struct cg_cache *cc = cg_cache_create(8, SEC);
	struct cg_facts old = facts(100, "/tenant-a"), out;
	struct cg_cache_stats st;

	cg_cache_put(cc, 4242, 1000, 0, &old);
	/* the tid exited and a new task got the same id: different start time */
	cr_assert_eq(cg_cache_get(cc, 4242, 1001, 1 * MS, &out), -ENOENT);
	cr_assert_eq(cg_cache_count(cc), 0);
	cg_cache_get_stats(cc, &st);
	cr_assert_eq(st.stale, 1);
	/* and the old key no longer hits either: the entry is gone, not shadowed */
	cr_assert_eq(cg_cache_get(cc, 4242, 1000, 2 * MS, &out), -ENOENT);
	cr_assert(cg_cache_check(cc));
	cg_cache_destroy(cc);
}

Test(cg_cache, put_replaces_the_entry_of_the_same_tid)
{
	struct cg_cache *cc = cg_cache_create(8, SEC);
	struct cg_facts a = facts(1, "/a"), b = facts(1, "/b"), out;

	cg_cache_put(cc, 5, 10, 0, &a);
	cg_cache_put(cc, 5, 11, 0, &b);
	cr_assert_eq(cg_cache_count(cc), 1);
	cr_assert_eq(cg_cache_get(cc, 5, 10, 0, &out), -ENOENT);
	cg_cache_put(cc, 5, 11, 0, &b);
	cr_assert_eq(cg_cache_get(cc, 5, 11, 0, &out), 0);
	cr_assert_str_eq(out.cgroup, "/b");
	cr_assert(cg_cache_check(cc));
	cg_cache_destroy(cc);
}

Test(cg_cache, eviction_is_lru_and_deterministic)
{
	struct cg_cache *cc = cg_cache_create(3, SEC);
	struct cg_facts f = facts(1, "/"), out;
	struct cg_cache_stats st;

	cg_cache_put(cc, 1, 1, 0, &f);
	cg_cache_put(cc, 2, 1, 0, &f);
	cg_cache_put(cc, 3, 1, 0, &f);
	cr_assert_eq(cg_cache_get(cc, 1, 1, 0, &out), 0); /* 1 is now most recent */
	cg_cache_put(cc, 4, 1, 0, &f);			   /* evicts 2, the least recent */
	cr_assert(cg_cache_check(cc));
	cr_assert_eq(cg_cache_count(cc), 3);
	cr_assert_eq(cg_cache_get(cc, 2, 1, 0, &out), -ENOENT);
	cr_assert_eq(cg_cache_get(cc, 1, 1, 0, &out), 0);
	cr_assert_eq(cg_cache_get(cc, 3, 1, 0, &out), 0);
	cr_assert_eq(cg_cache_get(cc, 4, 1, 0, &out), 0);
	cg_cache_get_stats(cc, &st);
	cr_assert_eq(st.evictions, 1);
	cg_cache_destroy(cc);
}

/* Reference model: an array kept in recency order (index 0 = most recent). */
struct model {
	pid_t tid[16];
	uint64_t start[16];
	uint64_t stored[16];
	int n;
};

static int model_find(const struct model *m, pid_t tid)
{
	for (int i = 0; i < m->n; i++)
		if (m->tid[i] == tid)
			return i;
	return -1;
}

static void model_remove(struct model *m, int i)
{
	memmove(&m->tid[i], &m->tid[i + 1], sizeof(m->tid[0]) * (size_t)(m->n - i - 1));
	memmove(&m->start[i], &m->start[i + 1], sizeof(m->start[0]) * (size_t)(m->n - i - 1));
	memmove(&m->stored[i], &m->stored[i + 1], sizeof(m->stored[0]) * (size_t)(m->n - i - 1));
	m->n--;
}

static void model_front(struct model *m, pid_t tid, uint64_t start, uint64_t stored)
{
	memmove(&m->tid[1], &m->tid[0], sizeof(m->tid[0]) * (size_t)m->n);
	memmove(&m->start[1], &m->start[0], sizeof(m->start[0]) * (size_t)m->n);
	memmove(&m->stored[1], &m->stored[0], sizeof(m->stored[0]) * (size_t)m->n);
	m->tid[0] = tid;
	m->start[0] = start;
	m->stored[0] = stored;
	m->n++;
}

/* Random get/put/forget sequence against the model; returns a hash of the hit/miss trace. */
static uint64_t run_random(unsigned seed, int cap)
{
	struct cg_cache *cc = cg_cache_create((uint32_t)cap, 50 * MS);
	struct model m = { .n = 0 };
	uint64_t now = 0, trace = 1469598103934665603ull;

	cr_assert_not_null(cc);
	for (int step = 0; step < 20000; step++) {
		seed = seed * 1103515245u + 12345u;
		unsigned r = seed >> 8;
		pid_t tid = (pid_t)(r % 40) + 1;
		uint64_t start = (r >> 6) % 2; /* two possible owners per tid */
		int op = (int)((r >> 8) % 10);
		struct cg_facts f = facts(tid, "/x"), out;
		int i = model_find(&m, tid);

		now += (r >> 12) % (3 * MS);
		if (op < 6) {
			int rc = cg_cache_get(cc, tid, start, now, &out);
			bool want = i >= 0 && m.start[i] == start && now - m.stored[i] < 50 * MS;
			CHECK((rc == 0) == want, "step %d tid %d", step, tid);
			if (i >= 0) {
				uint64_t st = m.start[i], sd = m.stored[i];
				model_remove(&m, i);
				if (want)
					model_front(&m, tid, st, sd);
			}
			if (rc == 0)
				CHECK(out.tgid == tid, "step %d", step);
			trace = (trace ^ (uint64_t)(rc == 0)) * 1099511628211ull;
		} else if (op < 9) {
			cg_cache_put(cc, tid, start, now, &f);
			if (i >= 0)
				model_remove(&m, i);
			else if (m.n == cap)
				model_remove(&m, m.n - 1);
			model_front(&m, tid, start, now);
		} else {
			cg_cache_forget(cc, tid);
			if (i >= 0)
				model_remove(&m, i);
		}
		CHECK(cg_cache_check(cc), "step %d", step);
		CHECK(cg_cache_count(cc) == (uint32_t)m.n, "step %d", step);
	}
	cg_cache_destroy(cc);
	return trace;
}

Test(cg_cache, random_sequences_match_an_lru_model_and_repeat_exactly)
{
	uint64_t a = run_random(42, 16);
	uint64_t b = run_random(42, 16);
	uint64_t c = run_random(7, 5);

	cr_assert_eq(a, b, "same sequence, same outcome");
	(void)c;
}

Test(cg_cache, forget_clear_and_disabled_caches)
{
	struct cg_cache *cc = cg_cache_create(4, SEC);
	struct cg_facts f = facts(1, "/"), out;

	cg_cache_put(cc, 1, 1, 0, &f);
	cg_cache_put(cc, 2, 1, 0, &f);
	cg_cache_forget(cc, 1);
	cg_cache_forget(cc, 99);
	cr_assert_eq(cg_cache_count(cc), 1);
	cg_cache_clear(cc);
	cr_assert_eq(cg_cache_count(cc), 0);
	cr_assert(cg_cache_check(cc));
	cg_cache_put(cc, 3, 1, 0, &f);
	cr_assert_eq(cg_cache_get(cc, 3, 1, 0, &out), 0, "usable after clear");
	cg_cache_destroy(cc);

	cc = cg_cache_create(0, SEC);
	cr_assert_not_null(cc);
	cg_cache_put(cc, 3, 1, 0, &f);
	cr_assert_eq(cg_cache_get(cc, 3, 1, 0, &out), -ENOENT, "capacity 0 stores nothing");
	cr_assert(cg_cache_check(cc));
	cg_cache_destroy(cc);

	cc = cg_cache_create(4, 0);
	cg_cache_put(cc, 3, 1, 0, &f);
	cr_assert_eq(cg_cache_get(cc, 3, 1, 0, &out), -ENOENT, "ttl 0 stores nothing");
	cg_cache_destroy(cc);

	cr_assert_null(cg_cache_create((1u << 24) + 1, SEC));
	cg_cache_destroy(NULL);
}

Test(cg_cache, many_tids_collide_in_buckets_without_losing_entries)
{
	struct cg_cache *cc = cg_cache_create(1024, SEC);
	struct cg_facts out;

	for (pid_t t = 1; t <= 1024; t++) {
		struct cg_facts f = facts(t, "/");
		cg_cache_put(cc, t * 4096, (uint64_t)t, 0, &f); /* ids sharing low bits */
	}
	cr_assert(cg_cache_check(cc));
	for (pid_t t = 1; t <= 1024; t++) {
		CHECK(cg_cache_get(cc, t * 4096, (uint64_t)t, 1, &out) == 0, "tid %d", t);
		CHECK(out.tgid == t, "tid %d", t);
	}
	cg_cache_destroy(cc);
}

Test(cg_cache, peek_needs_a_recent_confirmation)
{
	struct cg_cache *cc = cg_cache_create(8, SEC);
	struct cg_facts f = facts(100, "/a"), out;

	f.nice = 0;
	snprintf(f.comm, sizeof(f.comm), "old");
	cg_cache_put(cc, 7, 1000, 0, &f);
	/* the put counts as a confirmation: peek works within max_age, not after */
	cr_assert_eq(cg_cache_peek(cc, 7, 10 * MS, 10 * MS, &out), 0);
	cr_assert_str_eq(out.comm, "old");
	cr_assert_eq(cg_cache_peek(cc, 7, 10 * MS + 1, 10 * MS, &out), -ENOENT);
	/* a confirmation with another start time is ignored; with the right one it refreshes */
	cg_cache_confirm(cc, 7, 999, 20 * MS, "wrong", 5);
	cr_assert_eq(cg_cache_peek(cc, 7, 20 * MS, 10 * MS, &out), -ENOENT);
	cg_cache_confirm(cc, 7, 1000, 20 * MS, "new", 19);
	cr_assert_eq(cg_cache_peek(cc, 7, 25 * MS, 10 * MS, &out), 0);
	cr_assert_str_eq(out.comm, "new");
	cr_assert_eq(out.nice, 19);
	cr_assert_eq(out.tgid, 100);
	/* never past the ttl, however recent the confirmation */
	cg_cache_confirm(cc, 7, 1000, SEC, "new", 19);
	cr_assert_eq(cg_cache_peek(cc, 7, SEC + 1, 10 * MS, &out), -ENOENT);
	cr_assert_eq(cg_cache_peek(cc, 8, 0, 10 * MS, &out), -ENOENT);
	cg_cache_destroy(cc);
}
