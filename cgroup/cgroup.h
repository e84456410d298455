/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cgroup.h - the public contract of cgroup/: who is calling, and how much they weigh.
 *
 *     cg_classify(c, tid, uid, gid, path, now) -> { queue key, group name + key, weight,
 *                                                   class, level }
 *
 * The classifier reads /proc/TID/stat (start time, nice, comm: the only way to tell a reused
 * tid from its previous owner) at most once per CG_REVALIDATE_NS per tid. Everything else -- tgid
 * (/proc/TID/status), cgroup (/proc/TID/cgroup), ioprio_get(), the cgroup's weight files --
 * comes from a cache keyed by (tid, start time) that expires after `cache_ttl`, so a task moved
 * to another cgroup or re-ioniced is reclassified within that time. Rules are matched on every
 * call (they may depend on the request's path) and are pure and cheap.
 *
 * What this folder does NOT do: map group names to scheduler group ids (the daemon, fs/, does:
 * group "/" is the root cgroup), read the configuration file (fs/config.c fills
 * struct cg_config), or handle pid 0 (kernel-initiated requests: the daemon charges them to
 * the file handle's opener, whose classification it recorded at open/create).
 *
 * Threads: a classifier may be used from any number of threads at once; it holds an internal
 * mutex only around cache accesses, never during I/O. Lock order: the classifier's mutex is a
 * leaf (nothing is called while it is held), so it nests under any daemon lock.
 */
#ifndef CFQFS_CGROUP_H
#define CFQFS_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cg_cache.h"
#include "cg_parse.h"
#include "cg_rules.h"

/* Config key `queue_by`: what one CFQ queue (io context) stands for. */
enum cg_queue_by {
	CG_QUEUE_BY_PROCESS = 0, /* tgid (default), as CFQ shares an io context per process */
	CG_QUEUE_BY_THREAD = 1,	 /* tid: per-thread queues */
};

/* Defaults table (STYLE rule 10). */
#define CG_DEFAULT_CACHE_TTL 1000000000ull /* [ns] 1 s: a cgroup move or ionice shows within 1 s */
#define CG_DEFAULT_CACHE_CAPACITY 1024u	   /* [entries] ~1.1 MiB; tasks doing I/O at once */
#define CG_DEFAULT_PROC_ROOT "/proc"
/* [ns] how long a stat read vouches for a tid (start time, comm, nice): within it, requests of
 * that tid skip /proc/TID/stat (three syscalls). See cg_cache_peek() for why reuse cannot slip
 * in; a renice shows within this time. */
#define CG_REVALIDATE_NS 20000000ull

/*
 * The classifier's configuration: a plain struct, range-checked by fs/config.c (and again by
 * cg_config_check()). Start from cg_config_init(). Pointers are borrowed only during
 * cg_classifier_create(), which deep-copies what it keeps.
 */
struct cg_config {
	bool enabled;			/* false: the stub (see cg_classify); default true */
	enum cg_queue_by queue_by;	/* default CG_QUEUE_BY_PROCESS */
	enum cg_group_by group_by;	/* default CG_GROUP_BY_CGROUP */
	enum cg_select cgroup_line;	/* which /proc/TID/cgroup line; default CG_SELECT_AUTO */
	const struct cg_rule *rules;	/* nr_rules rules, first match wins; may be NULL if 0 */
	size_t nr_rules;
	bool weight_from_cgroup;	/* callers without a rule weight get their cgroup files'
					   weight; default true. A rule's CG_WEIGHT_FROM_CGROUP
					   reads the files whatever this says */
	dev_t source_dev;		/* SOURCE's block device, for "MAJ:MIN W" lines; 0: none */
	uint64_t cache_ttl;		/* [ns] default CG_DEFAULT_CACHE_TTL; 0: no caching */
	uint32_t cache_capacity;	/* [entries] default CG_DEFAULT_CACHE_CAPACITY; 0: none */
	/* --- test and container hooks; leave at the cg_config_init() values in the daemon --- */
	const char *proc_root;		/* procfs root; NULL: "/proc" */
	const char *mountinfo;		/* NULL: "<proc_root>/self/mountinfo" */
	const struct cg_mounts *mounts; /* NULL: found from `mountinfo`; else used as given */
	int unified_has_io;		/* -1: read the v2 root's cgroup.controllers; 0/1: forced */
};

/* Where cg_result.weight came from. */
enum cg_weight_src {
	CG_WSRC_DEFAULT = 0, /* SCHED_WEIGHT_DEFAULT (500): nothing else applied */
	CG_WSRC_RULE = 1,    /* the matching rule's weight */
	CG_WSRC_CGROUP = 2,  /* the caller's cgroup weight files (weight_from_cgroup) */
	CG_WSRC_RULE_CGROUP = 3, /* the same files, because the matching rule says
				    weight = "cgroup" */
};

/* cg_result.flags */
enum {
	CG_RES_CACHED = 1u << 0,   /* facts came from the cache */
	CG_RES_DEGRADED = 1u << 1, /* a lookup failed (not "task gone") and a fallback was used:
				      tgid = tid, cgroup "/", or ioprio NONE; see the log */
	CG_RES_STUB = 1u << 2,	   /* classified by the stub (cg_config.enabled == false) */
};

struct cg_result {
	uint64_t queue_key;	 /* io context: tgid, or tid with CG_QUEUE_BY_THREAD */
	pid_t tid;		 /* the task classified */
	pid_t tgid;		 /* its process (== tid in the stub) */
	char group[CG_NAME_MAX]; /* group identity, NUL-terminated, stable for the same group */
	uint64_t group_key;	 /* cg_name_hash(group): a stable numeric key for the daemon */
	uint32_t weight;	 /* [weight units] 10..1000 */
	uint8_t ioclass;	 /* enum sched_class */
	uint8_t level;		 /* 0..7 (7 for IDLE) */
	uint8_t weight_src;	 /* enum cg_weight_src */
	bool group_is_cgroup;	 /* `group` is the caller's cgroup path (group_by cgroup, no rule
				    renamed it): its ancestors are the group's parents, as in CFQ's
				    hierarchical mode; their weights: cg_classifier_cgroup_weight() */
	uint8_t hier;		 /* enum cg_hier of that path (valid when group_is_cgroup) */
	int rule;		 /* index of the matching rule, -1: none */
	uint32_t flags;		 /* CG_RES_* */
};

/* Counters since creation. */
struct cg_classifier_stats {
	struct cg_cache_stats cache;
	uint64_t classified;	/* [calls] returned 0 */
	uint64_t gone;		/* [calls] returned -ESRCH */
	uint64_t degraded;	/* [calls] with CG_RES_DEGRADED */
};

struct cg_classifier;

/* Fills *cfg with the defaults above. Cannot fail. */
void cg_config_init(struct cg_config *cfg);

/*
 * Checks a configuration. Returns 0, or -EINVAL with *bad_rule (if not NULL) set to the index
 * of the first invalid rule, or to cfg->nr_rules when the error is elsewhere (an enum out of
 * range, a cache capacity above 1 << 24). Cannot fail otherwise.
 */
int cg_config_check(const struct cg_config *cfg, size_t *bad_rule);

/*
 * Creates a classifier: deep-copies the rules, finds the cgroup mounts (unless given) and
 * whether the unified hierarchy holds io (unless forced). A host without cgroup mounts is not
 * an error: weights then never come from files. Returns NULL on an invalid configuration
 * (cg_config_check) or allocation failure. The caller owns the result.
 */
struct cg_classifier *cg_classifier_create(const struct cg_config *cfg);

/* Frees the classifier. No cg_classify() may be running. NULL is a no-op. */
void cg_classifier_destroy(struct cg_classifier *c);

/*
 * Classifies one request of task `tid` with the request's fsuid/fsgid and its path inside the
 * mount (NULL when unknown: path rules then do not match), at time `now` [ns, monotonic,
 * the daemon's clock].
 * Returns 0 and fills *out, or:
 *   -ESRCH  tid <= 0 (tid 0 = kernel-initiated: the caller uses the opener's classification),
 *           or the task is gone;
 *   -EINVAL NULL c/out, or /proc/TID/stat unparsable (cannot happen with a real procfs).
 * Failures other than "task gone" after the stat read are absorbed into fallbacks
 * (CG_RES_DEGRADED). *out unspecified on failure. Thread-safe (see top of file).
 * Stub (cfg.enabled == false): no I/O at all; queue key = tid, group "/", weight 500, BE 4,
 * CG_RES_STUB.
 */
int cg_classify(struct cg_classifier *c, pid_t tid, uid_t uid, gid_t gid, const char *path_or_null,
		uint64_t now, struct cg_result *out);

/* Drops every cached classification (e.g. after a cgroup reorganisation). Thread-safe. */
void cg_classifier_flush(struct cg_classifier *c);

/* Copies the counters. Thread-safe. */
void cg_classifier_get_stats(struct cg_classifier *c, struct cg_classifier_stats *out);

/*
 * The weight of any cgroup `path` of hierarchy `hier` (e.g. an ancestor of a result's group,
 * to weigh the levels of the group tree), from its own files as cg_classify() reads them:
 * io.bfq.weight then io.weight for CG_HIER_V2, blkio.bfq.weight then blkio.weight for
 * CG_HIER_BLKIO. Does I/O; no lock taken. Returns 0 and sets *weight (10..1000), -ENOENT (no
 * weight file: the root, a hierarchy without weights such as name=systemd, no mount, or a
 * namespaced path), -EINVAL (bad arguments).
 */
int cg_classifier_cgroup_weight(const struct cg_classifier *c, enum cg_hier hier,
				const char *path, uint32_t *weight);

/*
 * Is task `tid` being killed? The kernel marks a process that a fatal signal ends (SIGKILL,
 * or any signal whose default action terminates it and which has no handler) by queueing
 * SIGKILL on each of its threads, so the test is SIGKILL in /proc/TID/status's SigPnd or
 * ShdPnd. A handled signal (SIGALRM with a handler, Go's SIGURG, a profiler's SIGPROF) does
 * not count. `proc_root`: the procfs root, NULL for "/proc".
 * Returns 1 (being killed, or already gone), 0 (no fatal signal pending; tid <= 0, a
 * kernel-initiated request, also gives 0), or -errno when status cannot be read or parsed.
 * Does I/O; no lock. Thread-safe.
 */
int cg_task_dying(const char *proc_root, pid_t tid);

/* The mounts and io flag the classifier uses (for logs and `cfqfs stat`). Cannot fail. */
void cg_classifier_mounts(const struct cg_classifier *c, struct cg_mounts *out,
			  bool *unified_has_io);

#endif
