/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cg_cache.c - fixed-capacity (tid, start time) -> facts cache with TTL and LRU eviction
 * (contract: cg_cache.h).
 *
 * Layout: an entry array, a power-of-two bucket array of chain heads (indices), a doubly
 * linked LRU list through the used entries (head = most recent), and a free list through the
 * unused ones. Indices instead of pointers keep entries relocatable-free and the checker
 * simple. NIL marks the end of every list.
 */
#include "cg_cache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched.h"

#define NIL UINT32_MAX
#define CG_CACHE_MAX_CAPACITY (1u << 24)

/*
 * One slot. Used: on exactly one hash chain and on the LRU list. Unused: on the free list
 * (via hnext), lru links NIL.
 */
struct entry {
	pid_t tid;		/* key part 1 */
	bool used;
	uint64_t start;		/* key part 2 [clock ticks] */
	uint64_t stored;	/* [ns] `now` of the put */
	uint64_t checked;	/* [ns] last time a stat read confirmed `start` */
	uint32_t hnext;		/* next on the hash chain, or on the free list */
	uint32_t lprev;		/* LRU neighbour towards the head (more recent) */
	uint32_t lnext;		/* LRU neighbour towards the tail (less recent) */
	struct cg_facts facts;
};

/* Invariant: count == entries on the LRU list == used entries; every used tid on the chain of
 * bucket hash(tid), once. Protected by the caller's lock (see header). */
struct cg_cache {
	uint32_t capacity;	/* [entries] 0: caching disabled */
	uint64_t ttl;		/* [ns] 0: caching disabled */
	uint32_t nbuckets;	/* power of two >= capacity */
	uint32_t *buckets;	/* chain heads */
	struct entry *e;	/* capacity entries */
	uint32_t free_head;	/* first unused entry */
	uint32_t lru_head;	/* most recently used */
	uint32_t lru_tail;	/* least recently used: next victim */
	uint32_t count;		/* [entries] used */
	struct cg_cache_stats st;
};

static uint32_t hash_tid(const struct cg_cache *cc, pid_t tid)
{
	/* Fibonacci hashing: spreads sequential tids over the buckets */
	uint32_t h = (uint32_t)tid * 2654435769u;

	return h & (cc->nbuckets - 1);
}

struct cg_cache *cg_cache_create(uint32_t capacity, uint64_t ttl)
{
	struct cg_cache *cc;

	if (capacity > CG_CACHE_MAX_CAPACITY)
		return NULL;
	cc = calloc(1, sizeof(*cc));
	if (!cc)
		goto out;
	if (ttl == 0)
		capacity = 0;
	cc->capacity = capacity;
	cc->ttl = ttl;
	cc->nbuckets = 1;
	while (cc->nbuckets < capacity)
		cc->nbuckets <<= 1;
	cc->buckets = malloc(sizeof(*cc->buckets) * cc->nbuckets);
	if (!cc->buckets)
		goto out_free_cc;
	if (capacity) {
		cc->e = calloc(capacity, sizeof(*cc->e));
		if (!cc->e)
			goto out_free_buckets;
	}
	cg_cache_clear(cc);
	return cc;

out_free_buckets:
	free(cc->buckets);
out_free_cc:
	free(cc);
	cc = NULL;
out:
	return cc;
}

void cg_cache_destroy(struct cg_cache *cc)
{
	if (!cc)
		return;
	free(cc->e);
	free(cc->buckets);
	free(cc);
}

void cg_cache_clear(struct cg_cache *cc)
{
	for (uint32_t b = 0; b < cc->nbuckets; b++)
		cc->buckets[b] = NIL;
	cc->free_head = cc->capacity ? 0 : NIL;
	for (uint32_t i = 0; i < cc->capacity; i++) {
		cc->e[i].used = false;
		cc->e[i].hnext = i + 1 < cc->capacity ? i + 1 : NIL;
		cc->e[i].lprev = cc->e[i].lnext = NIL;
	}
	cc->lru_head = cc->lru_tail = NIL;
	cc->count = 0;
}

static void lru_unlink(struct cg_cache *cc, uint32_t i)
{
	struct entry *x = &cc->e[i];

	if (x->lprev != NIL)
		cc->e[x->lprev].lnext = x->lnext;
	else
		cc->lru_head = x->lnext;
	if (x->lnext != NIL)
		cc->e[x->lnext].lprev = x->lprev;
	else
		cc->lru_tail = x->lprev;
	x->lprev = x->lnext = NIL;
}

static void lru_push_head(struct cg_cache *cc, uint32_t i)
{
	struct entry *x = &cc->e[i];

	x->lprev = NIL;
	x->lnext = cc->lru_head;
	if (cc->lru_head != NIL)
		cc->e[cc->lru_head].lprev = i;
	cc->lru_head = i;
	if (cc->lru_tail == NIL)
		cc->lru_tail = i;
}

/* Finds tid's entry; *prevp gets its chain predecessor (NIL when first). */
static uint32_t find(const struct cg_cache *cc, pid_t tid, uint32_t *prevp)
{
	uint32_t prev = NIL;

	for (uint32_t i = cc->buckets[hash_tid(cc, tid)]; i != NIL; i = cc->e[i].hnext) {
		if (cc->e[i].tid == tid) {
			*prevp = prev;
			return i;
		}
		prev = i;
	}
	return NIL;
}

/* Unlinks used entry i (chain predecessor prev) and returns it to the free list. */
static void drop(struct cg_cache *cc, uint32_t i, uint32_t prev)
{
	struct entry *x = &cc->e[i];

	if (prev != NIL)
		cc->e[prev].hnext = x->hnext;
	else
		cc->buckets[hash_tid(cc, x->tid)] = x->hnext;
	lru_unlink(cc, i);
	x->used = false;
	x->hnext = cc->free_head;
	cc->free_head = i;
	cc->count--;
}

static bool expired(const struct cg_cache *cc, const struct entry *x, uint64_t now)
{
	/* fresh while now < stored + ttl (wrap-safe compare) */
	return !sched_time_after(x->stored + cc->ttl, now);
}

int cg_cache_get(struct cg_cache *cc, pid_t tid, uint64_t start, uint64_t now,
		 struct cg_facts *out)
{
	uint32_t prev, i;

	if (cc->capacity == 0) {
		cc->st.misses++;
		return -ENOENT;
	}
	i = find(cc, tid, &prev);
	if (i == NIL) {
		cc->st.misses++;
		return -ENOENT;
	}
	if (cc->e[i].start != start || expired(cc, &cc->e[i], now)) {
		if (cc->e[i].start != start)
			cc->st.stale++;
		else
			cc->st.expired++;
		drop(cc, i, prev);
		cc->st.misses++;
		return -ENOENT;
	}
	lru_unlink(cc, i);
	lru_push_head(cc, i);
	*out = cc->e[i].facts;
	cc->st.hits++;
	return 0;
}

int cg_cache_peek(struct cg_cache *cc, pid_t tid, uint64_t now, uint64_t max_age,
		  struct cg_facts *out)
{
	uint32_t prev, i;

	if (cc->capacity == 0)
		return -ENOENT;
	i = find(cc, tid, &prev);
	if (i == NIL || expired(cc, &cc->e[i], now) || now - cc->e[i].checked > max_age)
		return -ENOENT;
	lru_unlink(cc, i);
	lru_push_head(cc, i);
	*out = cc->e[i].facts;
	cc->st.hits++;
	return 0;
}

void cg_cache_confirm(struct cg_cache *cc, pid_t tid, uint64_t start, uint64_t now,
		      const char *comm, int nice)
{
	uint32_t prev, i;

	if (cc->capacity == 0)
		return;
	i = find(cc, tid, &prev);
	if (i == NIL || cc->e[i].start != start)
		return;
	cc->e[i].checked = now;
	snprintf(cc->e[i].facts.comm, sizeof(cc->e[i].facts.comm), "%s", comm);
	cc->e[i].facts.nice = nice;
}

void cg_cache_put(struct cg_cache *cc, pid_t tid, uint64_t start, uint64_t now,
		  const struct cg_facts *f)
{
	uint32_t prev, i, b;

	if (cc->capacity == 0)
		return;
	i = find(cc, tid, &prev);
	if (i != NIL) {
		lru_unlink(cc, i);
	} else {
		if (cc->free_head == NIL) {
			uint32_t victim = cc->lru_tail, vprev = NIL;
			uint32_t found = find(cc, cc->e[victim].tid, &vprev);
			(void)found; /* == victim: every used entry is on its chain */
			drop(cc, victim, vprev);
			cc->st.evictions++;
		}
		i = cc->free_head;
		cc->free_head = cc->e[i].hnext;
		b = hash_tid(cc, tid);
		cc->e[i].hnext = cc->buckets[b];
		cc->buckets[b] = i;
		cc->e[i].used = true;
		cc->e[i].tid = tid;
		cc->count++;
	}
	cc->e[i].start = start;
	cc->e[i].stored = now;
	cc->e[i].checked = now; /* a put follows a stat read */
	cc->e[i].facts = *f;
	lru_push_head(cc, i);
}

void cg_cache_forget(struct cg_cache *cc, pid_t tid)
{
	uint32_t prev, i;

	if (cc->capacity == 0)
		return;
	i = find(cc, tid, &prev);
	if (i != NIL)
		drop(cc, i, prev);
}

uint32_t cg_cache_count(const struct cg_cache *cc)
{
	return cc->count;
}

void cg_cache_get_stats(const struct cg_cache *cc, struct cg_cache_stats *out)
{
	*out = cc->st;
}

bool cg_cache_check(const struct cg_cache *cc)
{
	uint32_t n = 0, nfree = 0;

	/* LRU list: only used entries, consistent back links, length == count */
	for (uint32_t i = cc->lru_head, prev = NIL; i != NIL; prev = i, i = cc->e[i].lnext) {
		if (i >= cc->capacity || !cc->e[i].used || cc->e[i].lprev != prev)
			return false;
		if (++n > cc->capacity)
			return false;
		if (cc->e[i].lnext == NIL && cc->lru_tail != i)
			return false;
	}
	if (n != cc->count)
		return false;
	/* chains: each used entry in its own bucket, tids unique */
	n = 0;
	for (uint32_t b = 0; b < cc->nbuckets; b++) {
		for (uint32_t i = cc->buckets[b]; i != NIL; i = cc->e[i].hnext) {
			if (i >= cc->capacity || !cc->e[i].used || hash_tid(cc, cc->e[i].tid) != b)
				return false;
			if (++n > cc->capacity)
				return false;
			for (uint32_t j = cc->e[i].hnext; j != NIL; j = cc->e[j].hnext) {
				if (j >= cc->capacity || cc->e[j].tid == cc->e[i].tid)
					return false;
			}
		}
	}
	if (n != cc->count)
		return false;
	/* free list: the rest */
	for (uint32_t i = cc->free_head; i != NIL; i = cc->e[i].hnext) {
		if (i >= cc->capacity || cc->e[i].used || ++nfree > cc->capacity)
			return false;
	}
	return nfree + cc->count == cc->capacity;
}
