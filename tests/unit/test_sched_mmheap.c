/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of sched_mmheap: first/last/contains against a brute-force reference over random
 * inserts and erases (keys with ties and across the 64-bit wrap), the invariant checker after
 * every step, and the checker catching a broken heap.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "sched_mmheap.h"

static uint64_t rng(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Assertions only on failure: the random tests make ~10^5 checks, and Criterion's full stats
 * (ctest runs with them) make every passing assertion a message to the runner. */
static void check(const struct sched_mmheap *h)
{
	char buf[200] = "";

	if (sched_mmheap_check(h, buf, sizeof(buf)) != 0)
		cr_assert_fail("%s", buf);
}

/* The reference order: wrap-safe key, then seq. */
static bool ref_less(uint64_t ka, uint64_t sa, uint64_t kb, uint64_t sb)
{
	int64_t d = (int64_t)(ka - kb);

	return d != 0 ? d < 0 : sa < sb;
}

enum { N = 300 };

struct ref {
	bool in[N];
	uint64_t key[N], seq[N];
};

static void expect_ends(const struct sched_mmheap *h, const struct ref *r)
{
	uint32_t lo = SCHED_MMHEAP_NONE, hi = SCHED_MMHEAP_NONE, n = 0;

	for (uint32_t id = 0; id < N; id++) {
		if (sched_mmheap_contains(h, id) != r->in[id])
			cr_assert_fail("id %u: contains %d, expected %d", id,
				       sched_mmheap_contains(h, id), r->in[id]);
		if (!r->in[id])
			continue;
		n++;
		if (lo == SCHED_MMHEAP_NONE || ref_less(r->key[id], r->seq[id], r->key[lo], r->seq[lo]))
			lo = id;
		if (hi == SCHED_MMHEAP_NONE || ref_less(r->key[hi], r->seq[hi], r->key[id], r->seq[id]))
			hi = id;
	}
	if (h->n != n || sched_mmheap_first(h) != lo || sched_mmheap_last(h) != hi)
		cr_assert_fail("n %u first %u last %u, expected %u %u %u", h->n,
			       sched_mmheap_first(h), sched_mmheap_last(h), n, lo, hi);
}

static void run_random(uint64_t seed, uint64_t base, uint64_t spread)
{
	static struct ref r;
	struct sched_mmheap h;
	uint64_t s = seed, seq = 0;

	memset(&r, 0, sizeof(r));
	sched_mmheap_init(&h);
	cr_assert_eq(sched_mmheap_reserve(&h, N), 0);
	check(&h);
	expect_ends(&h, &r);
	for (int round = 0; round < 20 * N; round++) {
		uint32_t id = (uint32_t)(rng(&s) % N);

		if (r.in[id]) {
			/* erase the ends often: CFQ erases the first (charge) and the last */
			uint64_t k = rng(&s) % 4;

			if (k == 0 && h.n)
				id = sched_mmheap_first(&h);
			else if (k == 1 && h.n)
				id = sched_mmheap_last(&h);
			sched_mmheap_erase(&h, id);
			r.in[id] = false;
		} else {
			r.key[id] = base + rng(&s) % spread; /* small spreads: many equal keys */
			r.seq[id] = ++seq;
			sched_mmheap_insert(&h, id, r.key[id], r.seq[id]);
			r.in[id] = true;
			if (sched_mmheap_get(&h, id)->key != r.key[id])
				cr_assert_fail("id %u: entry has another key", id);
		}
		check(&h);
		expect_ends(&h, &r);
	}
	sched_mmheap_clear(&h);
	memset(r.in, 0, sizeof(r.in));
	check(&h);
	expect_ends(&h, &r);
	sched_mmheap_free(&h);
}

Test(sched_mmheap, random_against_reference)
{
	run_random(1, 0, 1000000);
}

Test(sched_mmheap, random_with_many_ties)
{
	run_random(2, 1000, 5);
}

/* vdisktime wraps: keys around 2^64 still order by signed difference */
Test(sched_mmheap, random_across_the_wrap)
{
	run_random(3, UINT64_MAX - 500, 1000);
}

/* Growing keeps the entries and indexes the new ids as absent. */
Test(sched_mmheap, reserve_grows_and_keeps_entries)
{
	struct sched_mmheap h;

	sched_mmheap_init(&h);
	cr_assert_eq(sched_mmheap_first(&h), SCHED_MMHEAP_NONE);
	cr_assert_eq(sched_mmheap_last(&h), SCHED_MMHEAP_NONE);
	cr_assert_not(sched_mmheap_contains(&h, 0));
	cr_assert_eq(sched_mmheap_reserve(&h, 2), 0);
	sched_mmheap_insert(&h, 1, 50, 1);
	sched_mmheap_insert(&h, 0, 40, 2);
	cr_assert_eq(sched_mmheap_reserve(&h, 1), 0); /* never shrinks */
	cr_assert_eq(sched_mmheap_reserve(&h, 64), 0);
	check(&h);
	cr_assert_eq(sched_mmheap_first(&h), 0);
	cr_assert_eq(sched_mmheap_last(&h), 1);
	cr_assert_not(sched_mmheap_contains(&h, 63));
	sched_mmheap_insert(&h, 63, 45, 3);
	check(&h);
	cr_assert_eq(sched_mmheap_last(&h), 1);
	sched_mmheap_free(&h);
}

Test(sched_mmheap, check_detects_broken_order_and_index)
{
	struct sched_mmheap h;
	char buf[200];

	sched_mmheap_init(&h);
	cr_assert_eq(sched_mmheap_reserve(&h, 8), 0);
	for (uint32_t id = 0; id < 7; id++)
		sched_mmheap_insert(&h, id, 10 * (uint64_t)id, id);
	check(&h);
	h.a[0].key = 1000; /* the root is no longer the least */
	cr_assert_eq(sched_mmheap_check(&h, buf, sizeof(buf)), -EFAULT);
	cr_assert(strstr(buf, "order") != NULL, "%s", buf);
	h.a[0].key = 0;
	check(&h);
	h.pos[h.a[3].id] = 5; /* an index that points elsewhere */
	cr_assert_eq(sched_mmheap_check(&h, buf, sizeof(buf)), -EFAULT);
	cr_assert(strstr(buf, "indexed") != NULL, "%s", buf);
	sched_mmheap_free(&h);
}
