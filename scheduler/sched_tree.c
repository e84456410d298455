/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sched_tree.c - red-black tree (CLRS formulation with NULL leaves and parent pointers) plus
 * cached leftmost and rightmost nodes, so "first" is O(1) on the dispatch path and appending
 * (a service-tree key of now + offset, a request at a growing offset) needs no search; and
 * in-order next/prev links, kept by insert and erase at the cost of the neighbours' lines,
 * which the search path (insert) or the erase itself has read already in the common cases.
 * Then sched_seq: such a tree followed by a sorted run, for sets filled at the back and
 * emptied from the front (sched_tree.h says why).
 */
#include <errno.h>
#include <stdio.h>

#include "sched_tree.h"

static struct sched_rb_node *parent_of(const struct sched_rb_node *n)
{
	return (struct sched_rb_node *)(n->parent_red & ~(uintptr_t)1);
}

/* Keeps n's colour. */
static void set_parent(struct sched_rb_node *n, struct sched_rb_node *p)
{
	n->parent_red = (uintptr_t)p | (n->parent_red & 1);
}

static bool is_red(const struct sched_rb_node *n)
{
	return n && (n->parent_red & 1);
}

static void set_red(struct sched_rb_node *n, bool red)
{
	n->parent_red = (n->parent_red & ~(uintptr_t)1) | (uintptr_t)red;
}

/* Points p's child link that held old (or the root, if p is NULL) at new. */
static void replace_child(struct sched_tree *t, struct sched_rb_node *p,
			  const struct sched_rb_node *old, struct sched_rb_node *new)
{
	if (!p)
		t->root = new;
	else if (old == p->left)
		p->left = new;
	else
		p->right = new;
}

static void rotate_left(struct sched_tree *t, struct sched_rb_node *x)
{
	struct sched_rb_node *y = x->right, *xp = parent_of(x);

	x->right = y->left;
	if (y->left)
		set_parent(y->left, x);
	set_parent(y, xp);
	replace_child(t, xp, x, y);
	y->left = x;
	set_parent(x, y);
}

static void rotate_right(struct sched_tree *t, struct sched_rb_node *x)
{
	struct sched_rb_node *y = x->left, *xp = parent_of(x);

	x->left = y->right;
	if (y->right)
		set_parent(y->right, x);
	set_parent(y, xp);
	replace_child(t, xp, x, y);
	y->right = x;
	set_parent(x, y);
}

static void insert_fixup(struct sched_tree *t, struct sched_rb_node *n)
{
	struct sched_rb_node *p, *g, *u;

	while ((p = parent_of(n)) != NULL && is_red(p)) {
		g = parent_of(p); /* p is red, so it is not the root */
		if (p == g->left) {
			u = g->right;
			if (is_red(u)) {
				set_red(p, false);
				set_red(u, false);
				set_red(g, true);
				n = g;
				continue;
			}
			if (n == p->right) {
				rotate_left(t, p);
				n = p;
				p = parent_of(n);
			}
			set_red(p, false);
			set_red(g, true);
			rotate_right(t, g);
		} else {
			u = g->left;
			if (is_red(u)) {
				set_red(p, false);
				set_red(u, false);
				set_red(g, true);
				n = g;
				continue;
			}
			if (n == p->left) {
				rotate_right(t, p);
				n = p;
				p = parent_of(n);
			}
			set_red(p, false);
			set_red(g, true);
			rotate_left(t, g);
		}
	}
	set_red(t->root, false);
}

void sched_tree_insert(struct sched_tree *t, struct sched_rb_node *n, sched_tree_cmp_fn cmp)
{
	struct sched_rb_node *parent = NULL, **link = &t->root;

	/* n >= every node: the search below would go right all the way down to rightmost */
	if (t->rightmost && cmp(n, t->rightmost) >= 0) {
		parent = t->rightmost;
		link = &parent->right;
	}
	while (*link) {
		parent = *link;
		link = cmp(n, parent) < 0 ? &parent->left : &parent->right;
	}
	n->parent_red = (uintptr_t)parent | 1;
	n->left = n->right = NULL;
	/*
	 * A new left child sits just before its parent, a right child just after. The other
	 * neighbour is the ancestor where the search last turned the other way: already read.
	 */
	if (!parent) {
		n->prev = n->next = NULL;
	} else if (link == &parent->left) {
		n->next = parent;
		n->prev = parent->prev;
	} else {
		n->prev = parent;
		n->next = parent->next;
	}
	if (n->prev)
		n->prev->next = n;
	else
		t->leftmost = n;
	if (n->next)
		n->next->prev = n;
	else
		t->rightmost = n;
	*link = n;
	t->count++;
	insert_fixup(t, n);
}

static struct sched_rb_node *subtree_min(struct sched_rb_node *n)
{
	while (n->left)
		n = n->left;
	return n;
}

static struct sched_rb_node *subtree_max(struct sched_rb_node *n)
{
	while (n->right)
		n = n->right;
	return n;
}

/* The in-order successor by the tree's shape (for sched_tree_check: the links must agree). */
static const struct sched_rb_node *walk_next(const struct sched_rb_node *n)
{
	const struct sched_rb_node *p;

	if (n->right)
		return subtree_min(n->right);
	while ((p = parent_of(n)) != NULL && n == p->right)
		n = p;
	return p;
}

/* Puts v (possibly NULL) where u was under u's parent. */
static void transplant(struct sched_tree *t, struct sched_rb_node *u, struct sched_rb_node *v)
{
	struct sched_rb_node *up = parent_of(u);

	replace_child(t, up, u, v);
	if (v)
		set_parent(v, up);
}

/* x (possibly NULL) carries an extra black; p is its parent. */
static void erase_fixup(struct sched_tree *t, struct sched_rb_node *x, struct sched_rb_node *p)
{
	struct sched_rb_node *w;

	while (x != t->root && !is_red(x)) {
		if (x == p->left) {
			w = p->right;
			if (is_red(w)) {
				set_red(w, false);
				set_red(p, true);
				rotate_left(t, p);
				w = p->right;
			}
			if (!is_red(w->left) && !is_red(w->right)) {
				set_red(w, true);
				x = p;
				p = parent_of(x);
			} else {
				if (!is_red(w->right)) {
					set_red(w->left, false);
					set_red(w, true);
					rotate_right(t, w);
					w = p->right;
				}
				set_red(w, is_red(p));
				set_red(p, false);
				if (w->right)
					set_red(w->right, false);
				rotate_left(t, p);
				x = t->root;
				p = NULL;
			}
		} else {
			w = p->left;
			if (is_red(w)) {
				set_red(w, false);
				set_red(p, true);
				rotate_right(t, p);
				w = p->left;
			}
			if (!is_red(w->left) && !is_red(w->right)) {
				set_red(w, true);
				x = p;
				p = parent_of(x);
			} else {
				if (!is_red(w->left)) {
					set_red(w->right, false);
					set_red(w, true);
					rotate_left(t, w);
					w = p->left;
				}
				set_red(w, is_red(p));
				set_red(p, false);
				if (w->left)
					set_red(w->left, false);
				rotate_right(t, p);
				x = t->root;
				p = NULL;
			}
		}
	}
	if (x)
		set_red(x, false);
}

/* Takes n out of a doubly linked in-order chain whose ends are *first and *last. */
static void links_remove(struct sched_rb_node *n, struct sched_rb_node **first,
			 struct sched_rb_node **last)
{
	if (n->prev)
		n->prev->next = n->next;
	else
		*first = n->next;
	if (n->next)
		n->next->prev = n->prev;
	else
		*last = n->prev;
}

void sched_tree_erase(struct sched_tree *t, struct sched_rb_node *z)
{
	struct sched_rb_node *y = z, *x, *xp;
	bool y_red = is_red(y);

	links_remove(z, &t->leftmost, &t->rightmost);
	if (!z->left) {
		x = z->right;
		xp = parent_of(z);
		transplant(t, z, z->right);
	} else if (!z->right) {
		x = z->left;
		xp = parent_of(z);
		transplant(t, z, z->left);
	} else {
		y = z->next; /* the minimum of z's right subtree */
		y_red = is_red(y);
		x = y->right;
		if (parent_of(y) == z) {
			xp = y;
		} else {
			xp = parent_of(y);
			transplant(t, y, y->right);
			y->right = z->right;
			set_parent(y->right, y);
		}
		transplant(t, z, y);
		y->left = z->left;
		set_parent(y->left, y);
		set_red(y, is_red(z));
	}
	if (!y_red)
		erase_fixup(t, x, xp);
	t->count--;
	sched_tree_node_clear(z);
}

struct sched_rb_node *sched_tree_floor(const struct sched_tree *t, const void *key,
				       sched_tree_key_fn kcmp)
{
	struct sched_rb_node *n = t->root, *best = NULL;

	while (n) {
		if (kcmp(key, n) < 0) {
			n = n->left;
		} else {
			best = n;
			n = n->right;
		}
	}
	return best;
}

struct sched_rb_node *sched_tree_ceil(const struct sched_tree *t, const void *key,
				      sched_tree_key_fn kcmp)
{
	struct sched_rb_node *n = t->root, *best = NULL;

	while (n) {
		if (kcmp(key, n) > 0) {
			n = n->right;
		} else {
			best = n;
			n = n->left;
		}
	}
	return best;
}

/* Returns the black height of the subtree, or -1 after writing a message. */
static int check_node(const struct sched_rb_node *n, const struct sched_rb_node *parent,
		      size_t *count, char *buf, size_t buflen)
{
	int lh, rh;

	if (!n)
		return 1;
	if (parent_of(n) != parent) {
		snprintf(buf, buflen, "tree: node %p has parent %p, expected %p", (const void *)n,
			 (const void *)parent_of(n), (const void *)parent);
		return -1;
	}
	if (is_red(n) && (is_red(n->left) || is_red(n->right))) {
		snprintf(buf, buflen, "tree: red node %p has a red child", (const void *)n);
		return -1;
	}
	(*count)++;
	lh = check_node(n->left, n, count, buf, buflen);
	if (lh < 0)
		return -1;
	rh = check_node(n->right, n, count, buf, buflen);
	if (rh < 0)
		return -1;
	if (lh != rh) {
		snprintf(buf, buflen, "tree: black heights %d != %d under %p", lh, rh,
			 (const void *)n);
		return -1;
	}
	return lh + (is_red(n) ? 0 : 1);
}

int sched_tree_check(const struct sched_tree *t, sched_tree_cmp_fn cmp, char *buf, size_t buflen)
{
	char dummy[8];
	size_t count = 0;
	const struct sched_rb_node *n, *prev = NULL;

	if (!buf) {
		buf = dummy;
		buflen = sizeof(dummy);
	}
	if (is_red(t->root)) {
		snprintf(buf, buflen, "tree: red root");
		return -EFAULT;
	}
	if (check_node(t->root, NULL, &count, buf, buflen) < 0)
		return -EFAULT;
	if (count != t->count) {
		snprintf(buf, buflen, "tree: count %zu, found %zu nodes", t->count, count);
		return -EFAULT;
	}
	if (t->leftmost != (t->root ? subtree_min(t->root) : NULL)) {
		snprintf(buf, buflen, "tree: stale leftmost cache");
		return -EFAULT;
	}
	if (t->rightmost != (t->root ? subtree_max(t->root) : NULL)) {
		snprintf(buf, buflen, "tree: stale rightmost cache");
		return -EFAULT;
	}
	for (n = t->leftmost; n; n = walk_next(n)) {
		if (prev && cmp(prev, n) >= 0) {
			snprintf(buf, buflen, "tree: order broken at %p", (const void *)n);
			return -EFAULT;
		}
		if (n->prev != prev || (prev && prev->next != n)) {
			snprintf(buf, buflen, "tree: in-order links broken at %p", (const void *)n);
			return -EFAULT;
		}
		prev = n;
	}
	if (prev && prev->next) {
		snprintf(buf, buflen, "tree: last node %p has a next link", (const void *)prev);
		return -EFAULT;
	}
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* sched_seq */

static bool in_run(const struct sched_seq *s, const struct sched_rb_node *n)
{
	return n->parent_red == (uintptr_t)s;
}

/* Unlinks the run's first node and files it at the tree's end (it sorts after every tree
 * node, so sched_tree_insert() takes its O(1) append path). */
static void run_head_to_tree(struct sched_seq *s, sched_tree_cmp_fn cmp)
{
	struct sched_rb_node *h = s->run_head;

	links_remove(h, &s->run_head, &s->run_tail);
	s->run_count--;
	sched_tree_insert(&s->tree, h, cmp);
}

void sched_seq_insert(struct sched_seq *s, struct sched_rb_node *n, sched_tree_cmp_fn cmp)
{
	const struct sched_rb_node *last = sched_seq_last(s);

	if (last && cmp(n, last) < 0) {
		while (s->run_head && cmp(n, s->run_head) >= 0)
			run_head_to_tree(s, cmp);
		sched_tree_insert(&s->tree, n, cmp);
		return;
	}
	n->parent_red = (uintptr_t)s;
	n->left = n->right = NULL;
	n->next = NULL;
	n->prev = s->run_tail;
	if (s->run_tail)
		s->run_tail->next = n;
	else
		s->run_head = n;
	s->run_tail = n;
	s->run_count++;
}

void sched_seq_erase(struct sched_seq *s, struct sched_rb_node *n)
{
	if (!in_run(s, n)) {
		sched_tree_erase(&s->tree, n);
		return;
	}
	links_remove(n, &s->run_head, &s->run_tail);
	s->run_count--;
	sched_tree_node_clear(n);
}

int sched_seq_check(const struct sched_seq *s, sched_tree_cmp_fn cmp, char *buf, size_t buflen)
{
	char dummy[8];
	const struct sched_rb_node *n, *prev = NULL;
	size_t count = 0;
	int ret;

	if (!buf) {
		buf = dummy;
		buflen = sizeof(dummy);
	}
	ret = sched_tree_check(&s->tree, cmp, buf, buflen);
	if (ret)
		return ret;
	if (!s->run_head != !s->run_tail) {
		snprintf(buf, buflen, "seq: run head %p but tail %p", (const void *)s->run_head,
			 (const void *)s->run_tail);
		return -EFAULT;
	}
	if (s->run_head && s->tree.rightmost && cmp(s->tree.rightmost, s->run_head) >= 0) {
		snprintf(buf, buflen, "seq: tree's last %p does not sort before run's first %p",
			 (const void *)s->tree.rightmost, (const void *)s->run_head);
		return -EFAULT;
	}
	for (n = s->run_head; n; n = n->next) {
		if (!in_run(s, n) || n->left || n->right) {
			snprintf(buf, buflen, "seq: run node %p not marked as one", (const void *)n);
			return -EFAULT;
		}
		if (prev && cmp(prev, n) >= 0) {
			snprintf(buf, buflen, "seq: run order broken at %p", (const void *)n);
			return -EFAULT;
		}
		if (n->prev != prev) {
			snprintf(buf, buflen, "seq: run links broken at %p", (const void *)n);
			return -EFAULT;
		}
		prev = n;
		if (++count > s->run_count)
			break;
	}
	if (count != s->run_count || prev != s->run_tail) {
		snprintf(buf, buflen, "seq: run_count %zu, run of %zu%s", s->run_count, count,
			 prev != s->run_tail ? " not ending at run_tail" : "");
		return -EFAULT;
	}
	return 0;
}
