/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cg_cache.h - classification cache: what /proc and cgroupfs said about one task.
 *
 * Keyed by (tid, start time): the start time (field 22 of /proc/TID/stat) changes when a tid is
 * reused, so a reused tid never sees the previous owner's facts. One entry per tid at most.
 * Entries expire `ttl` [ns] after they were stored, so a task moved to another cgroup or
 * re-ioniced is reclassified within ttl. Time is passed in (`now` [ns], monotonic, caller's
 * clock); nothing here reads a clock.
 *
 * Capacity is fixed at creation; storing into a full cache evicts the least recently used
 * entry (LRU by get/put order). Eviction depends only on the sequence of calls, never on hash
 * order, so it is deterministic and testable.
 *
 * Locking: NONE inside. The caller serialises every call on one cache (cg_classify() holds the
 * classifier's mutex around each call and does its I/O outside it).
 */
#ifndef CFQFS_CG_CACHE_H
#define CFQFS_CG_CACHE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cg_parse.h"

/* What classification learnt about a task with file and syscall reads. */
struct cg_facts {
	char comm[CG_COMM_MAX];		/* from /proc/TID/stat at the last check */
	int nice;			/* from /proc/TID/stat at the last check */
	pid_t tgid;			/* from /proc/TID/status */
	int ioprio;			/* raw ioprio_get() value; decoded with the current nice */
	uint32_t cg_weight;		/* [weight units] 10..1000 from the cgroup files, 0: none */
	uint8_t hier;			/* enum cg_hier the cgroup path came from */
	char cgroup[CG_NAME_MAX];	/* selected cgroup path ("/" when none), cg_name_fit'ed */
};

struct cg_cache_stats {
	uint64_t hits;		/* [lookups] fresh entry with the same start time */
	uint64_t misses;	/* [lookups] no entry, expired, or stale (all count here too) */
	uint64_t expired;	/* [lookups] entry older than ttl, dropped */
	uint64_t stale;		/* [lookups] same tid, other start time (tid reused), dropped */
	uint64_t evictions;	/* [entries] dropped to make room */
};

struct cg_cache;

/*
 * Creates a cache of `capacity` entries whose entries live `ttl` [ns]. capacity 0 or ttl 0
 * gives a cache that stores nothing (every get misses). Returns NULL on allocation failure or
 * capacity above 1 << 24.
 */
struct cg_cache *cg_cache_create(uint32_t capacity, uint64_t ttl);

/* Frees the cache. NULL is a no-op. */
void cg_cache_destroy(struct cg_cache *cc);

/*
 * Looks up (tid, start). On a fresh hit copies the facts to *out, marks the entry most
 * recently used and returns 0. Returns -ENOENT on a miss; an expired entry or one with another
 * start time is dropped on the way. *out unchanged on a miss.
 */
int cg_cache_get(struct cg_cache *cc, pid_t tid, uint64_t start, uint64_t now,
		 struct cg_facts *out);

/*
 * Stores facts for (tid, start) as of `now`, replacing any entry of the same tid, evicting the
 * least recently used entry when full. Copies *f. Cannot fail.
 */
void cg_cache_put(struct cg_cache *cc, pid_t tid, uint64_t start, uint64_t now,
		  const struct cg_facts *f);

/*
 * The fast path: if `tid` has a fresh entry whose start time was confirmed by a stat read at
 * most `max_age` [ns] before `now`, copies its facts (comm and nice as of that read) to *out,
 * marks it most recently used and returns 0; else -ENOENT and nothing changes.
 * Why skipping the stat read is safe for a short max_age: a tid can only be reused after its
 * task exited and the kernel's cyclic pid allocator went round pid_max (32768 at least,
 * 4194304 by default on 64-bit), which takes far longer than milliseconds.
 */
int cg_cache_peek(struct cg_cache *cc, pid_t tid, uint64_t now, uint64_t max_age,
		  struct cg_facts *out);

/*
 * Records that a stat read at `now` confirmed the entry of (tid, start) and refreshes its comm
 * and nice. No-op if there is no such entry. Cannot fail.
 */
void cg_cache_confirm(struct cg_cache *cc, pid_t tid, uint64_t start, uint64_t now,
		      const char *comm, int nice);

/* Drops the entry of `tid`, if any. Cannot fail. */
void cg_cache_forget(struct cg_cache *cc, pid_t tid);

/* Drops every entry (configuration reload). Cannot fail. */
void cg_cache_clear(struct cg_cache *cc);

/* Entries held now. */
uint32_t cg_cache_count(const struct cg_cache *cc);

/* Copies the counters. */
void cg_cache_get_stats(const struct cg_cache *cc, struct cg_cache_stats *out);

/*
 * Invariant checker (STYLE rule 7): hash chains and the LRU list hold exactly the used
 * entries, each tid at most once, count consistent. Returns true when consistent. Use inside
 * assert(); cost O(capacity).
 */
bool cg_cache_check(const struct cg_cache *cc);

#endif
