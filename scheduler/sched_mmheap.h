/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sched_mmheap.h - min-max heap of (key, seq, id) entries with a position index by id: the
 * CFQ group service tree.
 *
 * CFQ keeps its busy groups ordered by vdisktime and reads the first (the group to serve) and
 * the last (where a returning group starts). An intrusive red-black tree does that with a node
 * in each group object; with hundreds of groups those nodes are scattered lines that the
 * queues' and requests' own lines evict between two visits, so every charge (an erase and an
 * insert, on most queue switches) walks cold lines. The heap keeps what the order needs in
 * two compact arrays (24 bytes per busy group, 4 bytes per id), which stay in cache, and
 * never touches the groups. first and last are O(1), insert and erase O(log n).
 *
 * Order: key compared wrap-safe (signed difference, as vdisktime is), then seq; callers keep
 * (key, seq) unique, so the order is total and first/last are the same entries a sorted tree
 * would give.
 *
 * Invariants (sched_mmheap_check()): n <= cap; pos[a[i].id] == i for every entry and
 * pos[id] == NONE for every other id < cap; on even levels (0 = the root) an entry is <=
 * every entry below it, on odd levels >= every entry below it (checked parent and grandparent
 * wise, which implies it).
 *
 * Locking: none; the owner serialises.
 */
#ifndef CFQFS_SCHED_MMHEAP_H
#define CFQFS_SCHED_MMHEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SCHED_MMHEAP_NONE UINT32_MAX

struct sched_mmheap_ent {
	uint64_t key; /* e.g. vdisktime, compared wrap-safe */
	uint64_t seq; /* tie-breaker */
	uint32_t id;  /* < cap */
};

struct sched_mmheap {
	struct sched_mmheap_ent *a; /* [cap], a[0..n) in heap order */
	uint32_t *pos;		    /* [cap]: index in a, or SCHED_MMHEAP_NONE */
	uint32_t n;		    /* entries */
	uint32_t cap;		    /* ids and entries < cap */
};

/* Empty, no storage. Cannot fail. */
void sched_mmheap_init(struct sched_mmheap *h);
/* Makes room for ids < cap (never shrinks). Returns 0 or -ENOMEM (nothing changed). */
int sched_mmheap_reserve(struct sched_mmheap *h, uint32_t cap);
/* Removes every entry, keeps the storage. Cannot fail. */
void sched_mmheap_clear(struct sched_mmheap *h);
void sched_mmheap_free(struct sched_mmheap *h);

static inline bool sched_mmheap_contains(const struct sched_mmheap *h, uint32_t id)
{
	return id < h->cap && h->pos[id] != SCHED_MMHEAP_NONE;
}

/* Adds id (< cap, not contained) with (key, seq). O(log n). Cannot fail. */
void sched_mmheap_insert(struct sched_mmheap *h, uint32_t id, uint64_t key, uint64_t seq);
/* Removes id (contained). O(log n). Cannot fail. */
void sched_mmheap_erase(struct sched_mmheap *h, uint32_t id);
/* The id of the least / greatest entry, or SCHED_MMHEAP_NONE when empty. O(1). */
uint32_t sched_mmheap_first(const struct sched_mmheap *h);
uint32_t sched_mmheap_last(const struct sched_mmheap *h);
/* The entry of a contained id. */
static inline const struct sched_mmheap_ent *sched_mmheap_get(const struct sched_mmheap *h,
							       uint32_t id)
{
	return &h->a[h->pos[id]];
}

/* Checks every invariant above. Returns 0, or -EFAULT with a message in buf. O(cap). */
int sched_mmheap_check(const struct sched_mmheap *h, char *buf, size_t buflen);

#endif /* CFQFS_SCHED_MMHEAP_H */
