/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of sched_tree (order by (key, seq), cached leftmost, floor/ceil, invariants) and
 * of sched_seq (a tree followed by a sorted run). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sched_tree.h"

struct item {
	struct sched_rb_node node;
	uint64_t key;
	uint64_t seq;
	bool in;
};

static int item_cmp(const struct sched_rb_node *a, const struct sched_rb_node *b)
{
	const struct item *x = sched_container_of(a, struct item, node);
	const struct item *y = sched_container_of(b, struct item, node);

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return 0;
}

static int key_cmp(const void *k, const struct sched_rb_node *n)
{
	uint64_t key = *(const uint64_t *)k;
	const struct item *y = sched_container_of(n, struct item, node);

	return key < y->key ? -1 : key > y->key ? 1 : 0;
}

static uint64_t rng(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void check(const struct sched_tree *t)
{
	char buf[200];

	cr_assert_eq(sched_tree_check(t, item_cmp, buf, sizeof(buf)), 0, "%s", buf);
}

Test(sched_tree, empty_tree)
{
	struct sched_tree t;

	sched_tree_init(&t);
	check(&t);
	cr_assert(sched_tree_empty(&t));
	cr_assert_null(sched_tree_first(&t));
	cr_assert_null(sched_tree_last(&t));
}

Test(sched_tree, ties_break_by_seq_in_insertion_order)
{
	struct sched_tree t;
	struct item it[10];
	struct sched_rb_node *n;
	uint64_t expect = 0;

	sched_tree_init(&t);
	for (int i = 9; i >= 0; i--) {
		it[i] = (struct item){ .key = 7, .seq = (uint64_t)i };
		sched_tree_insert(&t, &it[i].node, item_cmp);
		check(&t);
	}
	for (n = sched_tree_first(&t); n; n = sched_tree_next(n))
		cr_assert_eq(sched_container_of(n, struct item, node)->seq, expect++);
	cr_assert_eq(expect, 10);
}

Test(sched_tree, random_insert_erase_keeps_order_and_leftmost)
{
	enum { N = 2000 };
	static struct item it[N];
	struct sched_tree t;
	uint64_t s = 42;
	size_t count = 0;

	sched_tree_init(&t);
	for (int round = 0; round < 6 * N; round++) {
		struct item *x = &it[rng(&s) % N];

		if (x->in) {
			sched_tree_erase(&t, &x->node);
			cr_assert_not(sched_tree_node_linked(&x->node));
			x->in = false;
			count--;
		} else {
			x->key = rng(&s) % 500;
			x->seq = (uint64_t)round;
			sched_tree_insert(&t, &x->node, item_cmp);
			x->in = true;
			count++;
		}
		cr_assert_eq(t.count, count);
		if (round % 97 == 0)
			check(&t);
	}
	check(&t);
	/* leftmost is the minimum; prev/next walk agrees both ways */
	if (count) {
		struct sched_rb_node *n = sched_tree_last(&t);
		size_t back = 0;

		for (; n; n = sched_tree_prev(n))
			back++;
		cr_assert_eq(back, count);
	}
}

/* Time-keyed trees mostly append (the insert fast path) and lose their first or last node. */
Test(sched_tree, mostly_appending_keeps_order_leftmost_and_rightmost)
{
	enum { N = 1000 };
	static struct item it[N];
	struct sched_tree t;
	uint64_t s = 7, now = 0;

	sched_tree_init(&t);
	for (int round = 0; round < 8 * N; round++) {
		struct item *x = &it[rng(&s) % N];
		uint64_t r = rng(&s) % 8;

		if (x->in) {
			if (r == 0 && sched_tree_last(&t))
				x = sched_container_of(sched_tree_last(&t), struct item, node);
			else if (r == 1)
				x = sched_container_of(sched_tree_first(&t), struct item, node);
			sched_tree_erase(&t, &x->node);
			x->in = false;
		} else {
			now += rng(&s) % 3; /* ties with the last node too */
			x->key = r == 0 ? now - rng(&s) % 50 : now;
			x->seq = (uint64_t)round;
			sched_tree_insert(&t, &x->node, item_cmp);
			x->in = true;
		}
		check(&t);
	}
}

Test(sched_tree, floor_and_ceil)
{
	struct sched_tree t;
	struct item it[5];
	uint64_t keys[5] = { 10, 20, 30, 40, 50 }, k;
	struct sched_rb_node *n;

	sched_tree_init(&t);
	for (int i = 0; i < 5; i++) {
		it[i] = (struct item){ .key = keys[i], .seq = (uint64_t)i };
		sched_tree_insert(&t, &it[i].node, item_cmp);
	}
	k = 25;
	n = sched_tree_floor(&t, &k, key_cmp);
	cr_assert_eq(sched_container_of(n, struct item, node)->key, 20);
	n = sched_tree_ceil(&t, &k, key_cmp);
	cr_assert_eq(sched_container_of(n, struct item, node)->key, 30);
	k = 30;
	cr_assert_eq(sched_container_of(sched_tree_floor(&t, &k, key_cmp), struct item, node)->key,
		     30);
	cr_assert_eq(sched_container_of(sched_tree_ceil(&t, &k, key_cmp), struct item, node)->key,
		     30);
	k = 5;
	cr_assert_null(sched_tree_floor(&t, &k, key_cmp));
	k = 55;
	cr_assert_null(sched_tree_ceil(&t, &k, key_cmp));
	sched_tree_erase(&t, &it[0].node);
	check(&t);
	cr_assert_eq(sched_container_of(sched_tree_first(&t), struct item, node)->key, 20);
}

Test(sched_tree, check_detects_broken_order)
{
	struct sched_tree t;
	struct item it[3];
	char buf[200];

	sched_tree_init(&t);
	for (int i = 0; i < 3; i++) {
		it[i] = (struct item){ .key = (uint64_t)i * 10, .seq = (uint64_t)i };
		sched_tree_insert(&t, &it[i].node, item_cmp);
	}
	it[0].key = 100; /* corrupt the order behind the tree's back */
	cr_assert_neq(sched_tree_check(&t, item_cmp, buf, sizeof(buf)), 0);
}

/* The in-order links are checked against the tree's shape, in both directions. */
Test(sched_tree, check_detects_broken_links)
{
	struct sched_tree t;
	struct item it[4];
	char buf[200];

	sched_tree_init(&t);
	for (int i = 0; i < 4; i++) {
		it[i] = (struct item){ .key = (uint64_t)i * 10, .seq = (uint64_t)i };
		sched_tree_insert(&t, &it[i].node, item_cmp);
	}
	check(&t);
	it[1].node.next = &it[3].node; /* skips it[2] going forwards only */
	cr_assert_neq(sched_tree_check(&t, item_cmp, buf, sizeof(buf)), 0);
	cr_assert(strstr(buf, "links") != NULL, "%s", buf);
	it[1].node.next = &it[2].node;
	check(&t);
	it[3].node.next = &it[0].node; /* a cycle off the end */
	cr_assert_neq(sched_tree_check(&t, item_cmp, buf, sizeof(buf)), 0);
}

/* ---- sched_seq ------------------------------------------------------------------------- */

static void seq_check(const struct sched_seq *q)
{
	char buf[200];

	cr_assert_eq(sched_seq_check(q, item_cmp, buf, sizeof(buf)), 0, "%s", buf);
}

static int item_sort(const void *a, const void *b)
{
	return item_cmp(&(*(struct item *const *)a)->node, &(*(struct item *const *)b)->node);
}

/* Walks q forwards (first/next) against the sorted items in it; checks count and last. */
static void seq_matches(const struct sched_seq *q, struct item *all, size_t n)
{
	static struct item *want[4096];
	const struct sched_rb_node *x;
	size_t k = 0, i;

	for (i = 0; i < n; i++)
		if (all[i].in)
			want[k++] = &all[i];
	qsort(want, k, sizeof(want[0]), item_sort);
	cr_assert_eq(sched_seq_count(q), k);
	for (i = 0, x = sched_seq_first(q); x; x = sched_seq_next(q, x), i++)
		cr_assert(i < k && x == &want[i]->node, "node %zu out of order", i);
	cr_assert_eq(i, k);
	cr_assert(k == 0 ? sched_seq_last(q) == NULL : sched_seq_last(q) == &want[k - 1]->node);
}

Test(sched_seq, appends_stay_in_the_run_and_leave_from_the_front)
{
	struct item it[8];
	struct sched_seq q;

	sched_seq_init(&q);
	cr_assert_null(sched_seq_first(&q));
	cr_assert_null(sched_seq_last(&q));
	for (int i = 0; i < 8; i++) {
		it[i] = (struct item){ .key = (uint64_t)i * 10, .seq = (uint64_t)i, .in = true };
		sched_seq_insert(&q, &it[i].node, item_cmp);
		seq_check(&q);
	}
	cr_assert_eq(q.tree.count, 0, "in-order arrivals go to the run, not the tree");
	cr_assert_eq(q.run_count, 8);
	seq_matches(&q, it, 8);
	/* serve the first, file it again behind the others: still all in the run */
	sched_seq_erase(&q, &it[0].node);
	cr_assert_not(sched_tree_node_linked(&it[0].node));
	it[0].key = 100;
	sched_seq_insert(&q, &it[0].node, item_cmp);
	seq_check(&q);
	cr_assert_eq(q.tree.count, 0);
	seq_matches(&q, it, 8);
}

Test(sched_seq, a_node_inside_the_runs_span_moves_the_nodes_before_it_to_the_tree)
{
	struct item it[6];
	struct item mid = { .key = 35, .seq = 100, .in = true };
	struct item front = { .key = 1, .seq = 101, .in = true };
	struct sched_seq q;

	sched_seq_init(&q);
	for (int i = 0; i < 6; i++) {
		it[i] = (struct item){ .key = (uint64_t)(i + 1) * 10, .seq = (uint64_t)i, .in = true };
		sched_seq_insert(&q, &it[i].node, item_cmp);
	}
	sched_seq_insert(&q, &mid.node, item_cmp); /* between 30 and 40 */
	seq_check(&q);
	cr_assert_eq(q.tree.count, 4, "10, 20, 30 and 35 in the tree");
	cr_assert_eq(q.run_count, 3, "40, 50, 60 still in the run");
	cr_assert_eq(q.run_head, &it[3].node);
	/* before every node: straight into the tree, the run untouched */
	sched_seq_insert(&q, &front.node, item_cmp);
	seq_check(&q);
	cr_assert_eq(q.tree.count, 5);
	cr_assert_eq(q.run_count, 3);
	cr_assert_eq(sched_seq_first(&q), &front.node);
	/* next() crosses from the tree's last node (35) to the run's first (40) */
	cr_assert_eq(sched_seq_next(&q, &mid.node), &it[3].node);
	/* erasing from both parts */
	sched_seq_erase(&q, &mid.node);
	sched_seq_erase(&q, &it[4].node);
	mid.in = it[4].in = false;
	seq_check(&q);
	cr_assert_eq(sched_seq_next(&q, &it[2].node), &it[3].node);
	cr_assert_eq(sched_seq_next(&q, &it[3].node), &it[5].node);
}

/* Whatever the mix of in-order and out-of-order keys, first, last, next and count always
 * agree with a sorted array of the same items. */
Test(sched_seq, random_operations_keep_the_order_of_a_sorted_array)
{
	enum { N = 1500 };
	static struct item it[N];
	struct sched_seq q;
	uint64_t s = 1234, now = 1000;

	sched_seq_init(&q);
	for (int round = 0; round < 10 * N; round++) {
		struct item *x = &it[rng(&s) % N];
		uint64_t r = rng(&s) % 10;

		if (x->in) {
			/* mostly the first (served), sometimes any, sometimes the last */
			if (r < 5 && sched_seq_first(&q))
				x = sched_container_of(sched_seq_first(&q), struct item, node);
			else if (r == 5 && sched_seq_last(&q))
				x = sched_container_of(sched_seq_last(&q), struct item, node);
			sched_seq_erase(&q, &x->node);
			cr_assert_not(sched_tree_node_linked(&x->node));
			x->in = false;
		} else {
			now += rng(&s) % 3;
			/* mostly now (appends, ties included); some earlier, inside the span or
			 * before everything */
			x->key = r < 7 ? now : r < 9 ? now - rng(&s) % 200 : rng(&s) % 100;
			x->seq = (uint64_t)round;
			sched_seq_insert(&q, &x->node, item_cmp);
			cr_assert(sched_tree_node_linked(&x->node));
			x->in = true;
		}
		if (round % 37 == 0) {
			seq_check(&q);
			seq_matches(&q, it, N);
		}
	}
	seq_check(&q);
	seq_matches(&q, it, N);
	cr_assert_gt(q.tree.count, 0, "the test exercised the tree part too");
}

Test(sched_seq, check_detects_a_broken_run)
{
	struct item it[4];
	struct sched_seq q;
	char buf[200];

	sched_seq_init(&q);
	for (int i = 0; i < 4; i++) {
		it[i] = (struct item){ .key = (uint64_t)i * 10, .seq = (uint64_t)i };
		sched_seq_insert(&q, &it[i].node, item_cmp);
	}
	seq_check(&q);
	it[2].key = 5; /* run order broken behind its back */
	cr_assert_neq(sched_seq_check(&q, item_cmp, buf, sizeof(buf)), 0);
	cr_assert(strstr(buf, "order") != NULL, "%s", buf);
	it[2].key = 20;
	q.run_count = 3;
	cr_assert_neq(sched_seq_check(&q, item_cmp, buf, sizeof(buf)), 0);
	cr_assert(strstr(buf, "run_count") != NULL, "%s", buf);
	q.run_count = 4;
	it[3].node.prev = &it[1].node;
	cr_assert_neq(sched_seq_check(&q, item_cmp, buf, sizeof(buf)), 0);
	cr_assert(strstr(buf, "links") != NULL, "%s", buf);
	it[3].node.prev = &it[2].node;
	seq_check(&q);
	/* a tree node that sorts after the run's first */
	{
		struct item late = { .key = 1, .seq = 9 };

		sched_seq_insert(&q, &late.node, item_cmp); /* into the tree, before 0 */
		seq_check(&q);
		late.key = 15;
		cr_assert_neq(sched_seq_check(&q, item_cmp, buf, sizeof(buf)), 0);
		cr_assert(strstr(buf, "before") != NULL, "%s", buf);
	}
}
