/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sched_mmheap.c - min-max heap (Atkinson, Sack, Santoro, Strothotte 1986): a binary heap
 * whose even levels are min levels and odd levels max levels, so the least entry is the root
 * and the greatest one of its children.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "sched_mmheap.h"

static bool less(const struct sched_mmheap *h, uint32_t i, uint32_t j)
{
	const struct sched_mmheap_ent *x = &h->a[i], *y = &h->a[j];
	int64_t d = (int64_t)(x->key - y->key); /* wrap-safe */

	return d != 0 ? d < 0 : x->seq < y->seq;
}

/* Level 0 (the root) is a min level, level 1 a max level, and so on. */
static bool min_level(uint32_t i)
{
	return ((63 - __builtin_clzll((unsigned long long)i + 1)) & 1) == 0;
}

static void swap(struct sched_mmheap *h, uint32_t i, uint32_t j)
{
	struct sched_mmheap_ent t = h->a[i];

	h->a[i] = h->a[j];
	h->a[j] = t;
	h->pos[h->a[i].id] = i;
	h->pos[h->a[j].id] = j;
}

/* `better` in the direction of the level: smaller on min levels, greater on max levels. */
static bool better(const struct sched_mmheap *h, bool min, uint32_t i, uint32_t j)
{
	return min ? less(h, i, j) : less(h, j, i);
}

/* Moves the entry at i up through its grandparents (same kind of level) while better. */
static void push_up_grand(struct sched_mmheap *h, uint32_t i, bool min)
{
	while (i >= 3) {
		uint32_t gp = ((i - 1) / 2 - 1) / 2;

		if (!better(h, min, i, gp))
			break;
		swap(h, i, gp);
		i = gp;
	}
}

/* Restores the order above i, given the subtree below i is consistent with a[i]. */
static void push_up(struct sched_mmheap *h, uint32_t i)
{
	bool min = min_level(i);
	uint32_t p;

	if (i == 0)
		return;
	p = (i - 1) / 2;
	/* the parent is on the other kind of level */
	if (better(h, !min, i, p)) {
		swap(h, i, p);
		push_up_grand(h, p, !min);
	} else {
		push_up_grand(h, i, min);
	}
}

/* Restores the order below i, given the order above i holds. */
static void trickle_down(struct sched_mmheap *h, uint32_t i)
{
	bool min = min_level(i);

	for (;;) {
		uint32_t c = 2 * i + 1, m = c, gc = 4 * i + 3;

		if (c >= h->n)
			return;
		/* the best of the (up to) 2 children and 4 grandchildren */
		if (c + 1 < h->n && better(h, min, c + 1, m))
			m = c + 1;
		for (uint32_t k = gc; k < gc + 4 && k < h->n; k++)
			if (better(h, min, k, m))
				m = k;
		if (!better(h, min, m, i))
			return;
		swap(h, m, i);
		if (m < gc)
			return; /* a child: it has no descendants of i's kind to violate */
		/* a grandchild: the entry now at m may be out of order with its parent */
		if (better(h, !min, m, (m - 1) / 2))
			swap(h, m, (m - 1) / 2);
		i = m;
	}
}

void sched_mmheap_init(struct sched_mmheap *h)
{
	h->a = NULL;
	h->pos = NULL;
	h->n = 0;
	h->cap = 0;
}

int sched_mmheap_reserve(struct sched_mmheap *h, uint32_t cap)
{
	struct sched_mmheap_ent *a;
	uint32_t *pos;

	if (cap <= h->cap)
		return 0;
	a = realloc(h->a, (size_t)cap * sizeof(*a));
	if (!a)
		return -ENOMEM;
	h->a = a;
	pos = realloc(h->pos, (size_t)cap * sizeof(*pos));
	if (!pos)
		return -ENOMEM; /* a grew, which changes nothing visible */
	for (uint32_t id = h->cap; id < cap; id++)
		pos[id] = SCHED_MMHEAP_NONE;
	h->pos = pos;
	h->cap = cap;
	return 0;
}

void sched_mmheap_clear(struct sched_mmheap *h)
{
	for (uint32_t i = 0; i < h->n; i++)
		h->pos[h->a[i].id] = SCHED_MMHEAP_NONE;
	h->n = 0;
}

void sched_mmheap_free(struct sched_mmheap *h)
{
	free(h->a);
	free(h->pos);
	sched_mmheap_init(h);
}

void sched_mmheap_insert(struct sched_mmheap *h, uint32_t id, uint64_t key, uint64_t seq)
{
	uint32_t i = h->n++;

	h->a[i] = (struct sched_mmheap_ent){ .key = key, .seq = seq, .id = id };
	h->pos[id] = i;
	push_up(h, i);
}

void sched_mmheap_erase(struct sched_mmheap *h, uint32_t id)
{
	uint32_t i = h->pos[id], last = --h->n, moved;

	h->pos[id] = SCHED_MMHEAP_NONE;
	if (i == last)
		return;
	/*
	 * The last leaf fills the hole. It may belong lower (trickle_down) or, as it came from
	 * another branch, higher than the hole's ancestors allow; trickle_down leaves it where
	 * the order below holds, and push_up from there fixes the order above.
	 */
	h->a[i] = h->a[last];
	moved = h->a[i].id;
	h->pos[moved] = i;
	trickle_down(h, i);
	push_up(h, h->pos[moved]);
}

uint32_t sched_mmheap_first(const struct sched_mmheap *h)
{
	return h->n ? h->a[0].id : SCHED_MMHEAP_NONE;
}

uint32_t sched_mmheap_last(const struct sched_mmheap *h)
{
	if (h->n <= 2)
		return h->n ? h->a[h->n - 1].id : SCHED_MMHEAP_NONE;
	return less(h, 1, 2) ? h->a[2].id : h->a[1].id;
}

int sched_mmheap_check(const struct sched_mmheap *h, char *buf, size_t buflen)
{
	char dummy[8];
	uint32_t listed = 0;

	if (!buf) {
		buf = dummy;
		buflen = sizeof(dummy);
	}
	if (h->n > h->cap) {
		snprintf(buf, buflen, "mmheap: %u entries, capacity %u", h->n, h->cap);
		return -EFAULT;
	}
	for (uint32_t i = 0; i < h->n; i++) {
		uint32_t id = h->a[i].id;
		bool min = min_level(i);

		if (id >= h->cap || h->pos[id] != i) {
			snprintf(buf, buflen, "mmheap: entry %u (id %u) not indexed", i, id);
			return -EFAULT;
		}
		/* parent: the other kind of level; grandparent: the same kind */
		if (i > 0 && better(h, !min, i, (i - 1) / 2)) {
			snprintf(buf, buflen, "mmheap: entry %u out of order with its parent", i);
			return -EFAULT;
		}
		if (i >= 3 && better(h, min, i, ((i - 1) / 2 - 1) / 2)) {
			snprintf(buf, buflen, "mmheap: entry %u out of order with its grandparent",
				 i);
			return -EFAULT;
		}
	}
	for (uint32_t id = 0; id < h->cap; id++)
		listed += h->pos[id] != SCHED_MMHEAP_NONE;
	if (listed != h->n) {
		snprintf(buf, buflen, "mmheap: %u ids indexed, %u entries", listed, h->n);
		return -EFAULT;
	}
	return 0;
}
