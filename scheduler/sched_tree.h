/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sched_tree.h - intrusive red-black tree with cached leftmost and rightmost nodes, used by every ordered
 * structure of the scheduler core (request sort trees, the group tree, and inside sched_seq
 * below, the CFQ service trees).
 *
 * Nodes are struct sched_rb_node (sched.h), embedded in the owner. The order is given by a
 * comparison callback; callers make it total by breaking key ties with a sequence number, so
 * the shape of a tree (and every decision read from it) is deterministic.
 *
 * Every node also links its in-order neighbours (next/prev), so stepping through a tree reads
 * only the nodes it visits: at thousands of queues the nodes a parent walk would pass are cold
 * cache lines, and the scheduler steps to the next queue or request on every switch.
 *
 * Invariants (checked by sched_tree_check()): red-black properties; in-order traversal strictly
 * increasing under cmp; the next/prev links are that traversal, forwards and backwards;
 * leftmost == first and rightmost == last in-order node; count == number of nodes; every
 * child's parent pointer names its parent. A node not in any tree has parent == itself.
 * The node's colour lives in bit 0 of its parent pointer, so that a node is 40 bytes: a
 * queue's node, key and tie-breaker fit one cache line, and so do a group's with its
 * vdisktime.
 *
 * Locking: none; the tree belongs to its owner, which the caller serialises.
 */
#ifndef CFQFS_SCHED_TREE_H
#define CFQFS_SCHED_TREE_H

#include <stdbool.h>
#include <stddef.h>

#include "sched.h"

struct sched_tree {
	struct sched_rb_node *root;	/* NULL when empty */
	struct sched_rb_node *leftmost; /* cached minimum, NULL when empty */
	struct sched_rb_node *rightmost; /* cached maximum, NULL when empty */
	size_t count;			/* [nodes] */
};

/* < 0, 0, > 0 as a sorts before, equal to, after b. Must be a total order over the tree. */
typedef int (*sched_tree_cmp_fn)(const struct sched_rb_node *a, const struct sched_rb_node *b);
/* < 0, 0, > 0 as `key` sorts before, equal to, after node n. */
typedef int (*sched_tree_key_fn)(const void *key, const struct sched_rb_node *n);

#define sched_container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

static inline void sched_tree_init(struct sched_tree *t)
{
	t->root = NULL;
	t->leftmost = NULL;
	t->rightmost = NULL;
	t->count = 0;
}

/* Marks a node as "in no tree": its own parent, black. */
static inline void sched_tree_node_clear(struct sched_rb_node *n)
{
	n->parent_red = (uintptr_t)n;
	n->left = n->right = NULL;
	n->next = n->prev = NULL;
}

static inline bool sched_tree_node_linked(const struct sched_rb_node *n)
{
	return (n->parent_red & ~(uintptr_t)1) != (uintptr_t)n;
}

static inline bool sched_tree_empty(const struct sched_tree *t)
{
	return t->root == NULL;
}

static inline struct sched_rb_node *sched_tree_first(const struct sched_tree *t)
{
	return t->leftmost;
}

/*
 * Inserts n after every node that compares equal (ties go right). O(log n); O(1) amortised when
 * n sorts at or after the last node (appending, the common case of time-keyed trees): the
 * search is skipped, the node lands where the search would have put it. Cannot fail.
 */
void sched_tree_insert(struct sched_tree *t, struct sched_rb_node *n, sched_tree_cmp_fn cmp);
/* Removes n (which must be in t) and clears it. O(log n). Cannot fail. */
void sched_tree_erase(struct sched_tree *t, struct sched_rb_node *n);

static inline struct sched_rb_node *sched_tree_last(const struct sched_tree *t)
{
	return t->rightmost;
}

/* The in-order successor / predecessor of n (in a tree), or NULL. O(1). */
static inline struct sched_rb_node *sched_tree_next(const struct sched_rb_node *n)
{
	return n->next;
}

static inline struct sched_rb_node *sched_tree_prev(const struct sched_rb_node *n)
{
	return n->prev;
}
/* The last node <= key, or NULL. */
struct sched_rb_node *sched_tree_floor(const struct sched_tree *t, const void *key,
				       sched_tree_key_fn kcmp);
/* The first node >= key, or NULL. */
struct sched_rb_node *sched_tree_ceil(const struct sched_tree *t, const void *key,
				      sched_tree_key_fn kcmp);

/* Checks every invariant listed above. Returns 0, or -EFAULT with a message in buf. O(n). */
int sched_tree_check(const struct sched_tree *t, sched_tree_cmp_fn cmp, char *buf, size_t buflen);

/*
 * sched_seq: an ordered set of the same nodes for keys that mostly arrive in order and leave
 * from the front, as on a CFQ service tree (a queue filed again at expiry goes behind all the
 * others; the first is served next). Its nodes are a tree followed by a run: a sorted list
 * whose every node sorts after every tree node. A node sorting at or after the last one is
 * appended to the run, and a run node leaves by unlinking, so the common case reads nothing
 * but the node's neighbours. A tree would rebalance there, through nodes that, with
 * thousands of queues, the cache last saw a whole pass over the queues ago (sched_micro,
 * 16384 queues in 10 groups: 223 -> 122 ns per request with this and the cache warming
 * together, bench/RESULTS.md). A node that sorts inside the run's span first moves the run's
 * nodes before it into the tree (each at the tree's end, O(1) amortised, and at most once
 * per insertion of it), so every operation stays O(log n) amortised.
 *
 * Invariants (checked by sched_seq_check()): the tree's own; the run strictly increasing
 * under cmp, its next/prev links consistent with NULL at both ends; the tree's last node
 * sorts before the run's first; every run node is marked (its parent field holds the
 * seq's address, no children); run_count == the run's length. The tree's links and the
 * run's stay separate: sched_seq_next() crosses from the tree's last node to the run.
 */
struct sched_seq {
	struct sched_tree tree;		/* the nodes before the run */
	struct sched_rb_node *run_head; /* first node of the run, NULL iff the run is empty */
	struct sched_rb_node *run_tail; /* last node of the run, NULL iff the run is empty */
	size_t run_count;		/* [nodes] in the run */
};

static inline void sched_seq_init(struct sched_seq *s)
{
	sched_tree_init(&s->tree);
	s->run_head = s->run_tail = NULL;
	s->run_count = 0;
}

static inline size_t sched_seq_count(const struct sched_seq *s)
{
	return s->tree.count + s->run_count;
}

static inline struct sched_rb_node *sched_seq_first(const struct sched_seq *s)
{
	return s->tree.leftmost ? s->tree.leftmost : s->run_head;
}

static inline struct sched_rb_node *sched_seq_last(const struct sched_seq *s)
{
	return s->run_tail ? s->run_tail : s->tree.rightmost;
}

/* The successor of n (in s), or NULL. O(1). */
static inline struct sched_rb_node *sched_seq_next(const struct sched_seq *s,
						   const struct sched_rb_node *n)
{
	if (n->next)
		return n->next;
	return n == s->tree.rightmost ? s->run_head : NULL;
}

/* Inserts n after every node that compares equal. O(1) when n sorts at or after the last
 * node; O(log n) amortised otherwise. Cannot fail. */
void sched_seq_insert(struct sched_seq *s, struct sched_rb_node *n, sched_tree_cmp_fn cmp);
/* Removes n (which must be in s) and clears it. O(1) in the run, O(log n) in the tree. */
void sched_seq_erase(struct sched_seq *s, struct sched_rb_node *n);
/* Checks every invariant listed above. Returns 0, or -EFAULT with a message in buf. O(n). */
int sched_seq_check(const struct sched_seq *s, sched_tree_cmp_fn cmp, char *buf, size_t buflen);

#endif /* CFQFS_SCHED_TREE_H */
