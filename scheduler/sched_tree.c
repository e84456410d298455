/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sched_tree.c - red-black tree (CLRS formulation with NULL leaves and parent pointers) plus
 * cached leftmost and rightmost nodes, so "first" is O(1) on the dispatch path and appending
 * (a service-tree key of now + offset, a request at a growing offset) needs no search.
 */
#include <errno.h>
#include <stdio.h>

#include "sched_tree.h"

static void rotate_left(struct sched_tree *t, struct sched_rb_node *x)
{
	struct sched_rb_node *y = x->right;

	x->right = y->left;
	if (y->left)
		y->left->parent = x;
	y->parent = x->parent;
	if (!x->parent)
		t->root = y;
	else if (x == x->parent->left)
		x->parent->left = y;
	else
		x->parent->right = y;
	y->left = x;
	x->parent = y;
}

static void rotate_right(struct sched_tree *t, struct sched_rb_node *x)
{
	struct sched_rb_node *y = x->left;

	x->left = y->right;
	if (y->right)
		y->right->parent = x;
	y->parent = x->parent;
	if (!x->parent)
		t->root = y;
	else if (x == x->parent->right)
		x->parent->right = y;
	else
		x->parent->left = y;
	y->right = x;
	x->parent = y;
}

static void insert_fixup(struct sched_tree *t, struct sched_rb_node *n)
{
	struct sched_rb_node *p, *g, *u;

	while ((p = n->parent) != NULL && p->red) {
		g = p->parent; /* p is red, so it is not the root */
		if (p == g->left) {
			u = g->right;
			if (u && u->red) {
				p->red = 0;
				u->red = 0;
				g->red = 1;
				n = g;
				continue;
			}
			if (n == p->right) {
				rotate_left(t, p);
				n = p;
				p = n->parent;
			}
			p->red = 0;
			g->red = 1;
			rotate_right(t, g);
		} else {
			u = g->left;
			if (u && u->red) {
				p->red = 0;
				u->red = 0;
				g->red = 1;
				n = g;
				continue;
			}
			if (n == p->left) {
				rotate_right(t, p);
				n = p;
				p = n->parent;
			}
			p->red = 0;
			g->red = 1;
			rotate_left(t, g);
		}
	}
	t->root->red = 0;
}

void sched_tree_insert(struct sched_tree *t, struct sched_rb_node *n, sched_tree_cmp_fn cmp)
{
	struct sched_rb_node *parent = NULL, **link = &t->root;
	bool leftmost = true, rightmost = true;

	/* n >= every node: the search below would go right all the way down to rightmost */
	if (t->rightmost && cmp(n, t->rightmost) >= 0) {
		parent = t->rightmost;
		link = &parent->right;
		leftmost = false;
	}
	while (*link) {
		parent = *link;
		if (cmp(n, parent) < 0) {
			link = &parent->left;
			rightmost = false;
		} else {
			link = &parent->right;
			leftmost = false;
		}
	}
	n->parent = parent;
	n->left = n->right = NULL;
	n->red = 1;
	*link = n;
	if (leftmost)
		t->leftmost = n;
	if (rightmost)
		t->rightmost = n;
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

struct sched_rb_node *sched_tree_next(const struct sched_rb_node *n)
{
	const struct sched_rb_node *p;

	if (n->right)
		return subtree_min(n->right);
	while ((p = n->parent) != NULL && n == p->right)
		n = p;
	return (struct sched_rb_node *)p;
}

struct sched_rb_node *sched_tree_prev(const struct sched_rb_node *n)
{
	const struct sched_rb_node *p;

	if (n->left)
		return subtree_max(n->left);
	while ((p = n->parent) != NULL && n == p->left)
		n = p;
	return (struct sched_rb_node *)p;
}

static void transplant(struct sched_tree *t, struct sched_rb_node *u, struct sched_rb_node *v)
{
	if (!u->parent)
		t->root = v;
	else if (u == u->parent->left)
		u->parent->left = v;
	else
		u->parent->right = v;
	if (v)
		v->parent = u->parent;
}

static bool is_red(const struct sched_rb_node *n)
{
	return n && n->red;
}

/* x (possibly NULL) carries an extra black; p is its parent. */
static void erase_fixup(struct sched_tree *t, struct sched_rb_node *x, struct sched_rb_node *p)
{
	struct sched_rb_node *w;

	while (x != t->root && !is_red(x)) {
		if (x == p->left) {
			w = p->right;
			if (w->red) {
				w->red = 0;
				p->red = 1;
				rotate_left(t, p);
				w = p->right;
			}
			if (!is_red(w->left) && !is_red(w->right)) {
				w->red = 1;
				x = p;
				p = x->parent;
			} else {
				if (!is_red(w->right)) {
					w->left->red = 0;
					w->red = 1;
					rotate_right(t, w);
					w = p->right;
				}
				w->red = p->red;
				p->red = 0;
				if (w->right)
					w->right->red = 0;
				rotate_left(t, p);
				x = t->root;
				p = NULL;
			}
		} else {
			w = p->left;
			if (w->red) {
				w->red = 0;
				p->red = 1;
				rotate_right(t, p);
				w = p->left;
			}
			if (!is_red(w->left) && !is_red(w->right)) {
				w->red = 1;
				x = p;
				p = x->parent;
			} else {
				if (!is_red(w->left)) {
					w->right->red = 0;
					w->red = 1;
					rotate_left(t, w);
					w = p->left;
				}
				w->red = p->red;
				p->red = 0;
				if (w->left)
					w->left->red = 0;
				rotate_right(t, p);
				x = t->root;
				p = NULL;
			}
		}
	}
	if (x)
		x->red = 0;
}

void sched_tree_erase(struct sched_tree *t, struct sched_rb_node *z)
{
	struct sched_rb_node *y = z, *x, *xp;
	int y_red = y->red;

	if (t->leftmost == z)
		t->leftmost = sched_tree_next(z);
	if (t->rightmost == z)
		t->rightmost = sched_tree_prev(z);
	if (!z->left) {
		x = z->right;
		xp = z->parent;
		transplant(t, z, z->right);
	} else if (!z->right) {
		x = z->left;
		xp = z->parent;
		transplant(t, z, z->left);
	} else {
		y = subtree_min(z->right);
		y_red = y->red;
		x = y->right;
		if (y->parent == z) {
			xp = y;
		} else {
			xp = y->parent;
			transplant(t, y, y->right);
			y->right = z->right;
			y->right->parent = y;
		}
		transplant(t, z, y);
		y->left = z->left;
		y->left->parent = y;
		y->red = z->red;
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
	if (n->parent != parent) {
		snprintf(buf, buflen, "tree: node %p has parent %p, expected %p", (const void *)n,
			 (const void *)n->parent, (const void *)parent);
		return -1;
	}
	if (n->red && (is_red(n->left) || is_red(n->right))) {
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
	return lh + (n->red ? 0 : 1);
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
	if (t->root && t->root->red) {
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
	for (n = t->leftmost; n; n = sched_tree_next(n)) {
		if (prev && cmp(prev, n) >= 0) {
			snprintf(buf, buflen, "tree: order broken at %p", (const void *)n);
			return -EFAULT;
		}
		prev = n;
	}
	return 0;
}
