/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * groups.h - the daemon's map from group names (what cgroup/ classifies into: a cgroup path
 * such as "/tenants/a", or a rule's name such as "uid:1000") to scheduler group ids.
 *
 * Names that start with '/' are cgroup paths and form the scheduler's hierarchy: "/a/b" is
 * created under "/a", which is created (with the default weight) under the root; other names
 * are flat children of the root. "/" is the root group.
 *
 * Weights: a classification carries the weight it found (rule, cgroup files or default) and
 * its rank (GRP_RANK_*). grp_resolve() applies it when it differs from the group's current one,
 * unless the weight was pinned by an administrator (grp_set_weight, e.g. a write to
 * .cfqfs/groups/NAME/weight), or a stronger source gave the group its weight under the
 * configuration in force. Callers classified into one group by different rules must not swing
 * its weight with whichever came last: a rule's weight beats a cgroup file's, which beats the
 * default, and of two rules the one listed first wins (as "first match wins" among rules);
 * the same source again (a cgroup file that changed, say) applies. A reload starts over.
 *
 * Locking: one mutex inside, taken before the executor lock (grp_* may call exec_with_sched);
 * never call grp_* from inside exec_with_sched.
 */
#ifndef CFQFS_GROUPS_H
#define CFQFS_GROUPS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct executor;
struct grp_registry;

/* Returns NULL on allocation failure. `ex` is borrowed and must outlive the registry. */
struct grp_registry *grp_create(struct executor *ex);
void grp_destroy(struct grp_registry *r);

/*
 * The scheduler group id of `name`, created (with its missing ancestors) on first use with
 * `weight` [10..1000], and marked used at `now` [ns, clk_now()]. `rank` says where `weight`
 * came from (GRP_RANK_*; lower is stronger), under configuration generation `gen` (> 0, bumped
 * by every reload; see the header comment). Also removes expired groups (grp_set_expiry).
 * Returns 0 and *id; -EINVAL (empty or overlong name, bad weight), -ENOMEM or another error of
 * sched_group_create; then *id is the root group. Thread-safe.
 */
int grp_resolve(struct grp_registry *r, const char *name, uint32_t weight, uint32_t rank,
		uint64_t gen, uint64_t now, uint32_t *id);

/* Reads the weight of cgroup `path`: 0 and *weight [10..1000], or -errno (-ENOENT: it has no
 * weight file). */
typedef int (*grp_weight_fn)(void *arg, const char *path, uint32_t *weight);

#define GRP_PARENTS_MAX 16 /* ancestors grp_refresh_parents looks at, from the top */

/*
 * Refreshes the weights of the groups above cgroup group `name` ("/a/b/c": "/a" and "/a/b";
 * not the root) from their cgroups' files through fn, each at most once per `ttl` [ns] (0:
 * every call), as GRP_RANK_CGROUP under generation `gen`. A parent cgroup that only holds
 * other cgroups (a systemd slice with IOWeight=, a v2 parent's io.weight) never has a caller
 * classified into it, so without this it would keep the default weight. Where fn finds no
 * weight, or fn is NULL (the configuration reads no cgroup files), the parent gets the
 * default as GRP_RANK_DEFAULT (so that a reload that turns the files off puts it back). fn
 * runs without the registry lock. Groups not registered yet are skipped (grp_resolve creates
 * them). Cannot fail. Thread-safe.
 */
void grp_refresh_parents(struct grp_registry *r, const char *name, grp_weight_fn fn, void *arg,
			 uint64_t gen, uint64_t now, uint64_t ttl);

/* Ranks of a weight's source for grp_resolve (lower is stronger). */
#define GRP_RANK_RULE(i) ((uint32_t)(i) + 1u) /* rule i (0-based) of the configuration */
#define GRP_RANK_CGROUP (UINT32_MAX - 1u)     /* the caller's cgroup weight files */
#define GRP_RANK_DEFAULT UINT32_MAX	      /* nothing gave one */

/*
 * Groups unused for `idle` [ns] are removed from the registry and the scheduler (their queues,
 * statistics and .cfqfs/groups entry go), so that a host whose containers come and go does
 * not accumulate them. A group is kept while it has requests queued or in flight, child
 * groups, open files (grp_ref) or an administrator's pinned weight. 0 = never remove.
 * Cannot fail. Thread-safe.
 */
void grp_set_expiry(struct grp_registry *r, uint64_t idle);

/* Removes the groups expired at `now` [ns] (as grp_resolve does in passing; .cfqfs reads call
 * it so that listings are current). Returns how many were removed. Thread-safe. */
int grp_expire(struct grp_registry *r, uint64_t now);

/* An open file charged to group `id` holds it (no expiry) until grp_unref. Unknown ids are
 * ignored. Cannot fail. Thread-safe. */
void grp_ref(struct grp_registry *r, uint32_t id);
void grp_unref(struct grp_registry *r, uint32_t id);

/* Pins a group's weight (the classification no longer changes it). 0, -ENOENT, -EINVAL. */
int grp_set_weight(struct grp_registry *r, const char *name, uint32_t weight);

struct grp_info {
	const char *name;  /* valid during the callback only */
	uint32_t id;	   /* scheduler group id */
	uint32_t parent;   /* scheduler group id of the parent (root: itself) */
	uint32_t weight;   /* [weight units] */
	bool pinned;	   /* set by grp_set_weight */
};

/* Calls fn for each group in creation order (the root first) under the registry lock; fn must
 * not call grp_* or block. Cannot fail. */
void grp_foreach(struct grp_registry *r, void (*fn)(void *arg, const struct grp_info *gi),
		 void *arg);

/*
 * Records that process `tgid` was just classified into scheduler group `id` (for
 * .cfqfs/groups/NAME/procs). Each group keeps the GRP_PROCS_MAX most recently seen processes.
 * `now` [ns] is clk_now(). Unknown ids and tgid <= 0 are ignored. Cannot fail. Thread-safe.
 */
void grp_note_pid(struct grp_registry *r, uint32_t id, pid_t tgid, uint64_t now);

/*
 * Copies into out[0..cap) the processes of group `id` seen at or after `since` [ns], in
 * ascending order. Returns their number, or -ENOENT for an unknown id. Thread-safe.
 */
int grp_procs(struct grp_registry *r, uint32_t id, uint64_t since, pid_t *out, size_t cap);

#endif
