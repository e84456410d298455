/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cg_rules.h - the rule matcher: caller facts -> group name, weight, class/level.
 *
 * Pure: no I/O, no allocation, no clock. The rule list is the caller's memory (fs/config.c
 * builds it from libconfig; cg_classifier_create() keeps a private deep copy).
 *
 * Semantics (config keys `group_by` and `rules`):
 *   - Rules are tried in order; the FIRST rule whose every present matcher matches wins. A rule
 *     with no matcher matches every caller (a catch-all, usually last).
 *   - Matchers: `cgroup` glob on the caller's cgroup path, `uid`, `gid`, `comm` glob, `path`
 *     prefix. Globs are fnmatch(3) with flags 0: '*' and '?' match '/' too, so the pattern
 *     "/kubepods.slice/" + "*" covers every descendant (but not "/kubepods.slice" itself), and
 *     a leading '.' is not special. "[...]" classes work; '\\' escapes. A glob without
 *     metacharacters is an exact match.
 *   - `path` is a prefix inside the mount ("/data"), matched on a '/' boundary: "/data" matches
 *     "/data" and "/data/x", never "/database". Trailing '/' in the rule is ignored; "/" matches
 *     every path. A rule with a path matcher never matches a request that has no path.
 *   - Actions: `group` (the group's identity; default per group_by: the cgroup path, "uid:N",
 *     "gid:N", or "/" for none), `weight` (10..1000; unset: see cg_verdict.weight), forced
 *     `class` and/or `level`.
 *   - No rule matches: the group_by default group, weight unset, the caller's class/level.
 */
#ifndef CFQFS_CG_RULES_H
#define CFQFS_CG_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cg_parse.h"

enum cg_group_by {
	CG_GROUP_BY_CGROUP = 0, /* default */
	CG_GROUP_BY_UID = 1,
	CG_GROUP_BY_GID = 2,
	CG_GROUP_BY_NONE = 3,	/* everyone in "/" */
};

/* cg_rule.weight / cg_verdict.weight special values (real weights are 10..1000) */
#define CG_WEIGHT_UNSET 0u		    /* no weight given: group_by's default applies */
#define CG_WEIGHT_FROM_CGROUP UINT32_MAX    /* take it from the caller's cgroup weight files */
#define CG_CLASS_KEEP 0u		    /* cg_rule.ioclass: keep the caller's class */

/*
 * One rule. Every pointer may be NULL (matcher absent / action not set); strings are
 * NUL-terminated and owned by whoever owns the rule list.
 * Valid (cg_rules_check): path NULL or starting with '/'; group NULL or non-empty, shorter
 * than CG_NAME_MAX; weight CG_WEIGHT_UNSET, CG_WEIGHT_FROM_CGROUP or 10..1000; ioclass
 * CG_CLASS_KEEP or enum sched_class; level 0..7 when has_level.
 * A zero-initialised rule matches everyone and changes nothing (all "unset").
 */
struct cg_rule {
	/* matchers */
	const char *cgroup;	/* glob on the caller's cgroup path */
	const char *comm;	/* glob on the caller's comm */
	const char *path;	/* prefix inside the mount, on a '/' boundary */
	bool has_uid;		/* match uid */
	uid_t uid;		/* fsuid from the FUSE request */
	bool has_gid;		/* match gid */
	gid_t gid;		/* fsgid from the FUSE request */
	/* actions */
	const char *group;	/* group identity; NULL: group_by's default */
	uint32_t weight;	/* [weight units] 10..1000, CG_WEIGHT_UNSET or CG_WEIGHT_FROM_CGROUP */
	uint8_t ioclass;	/* enum sched_class, or CG_CLASS_KEEP; a forced class without a
				   level gets level 4, like ionice -c without -n */
	bool has_level;		/* force `level` */
	uint8_t level;		/* 0..7 when has_level; IDLE always ends at 7 */
};

/* The rule set: a view over the caller's array, not a copy. */
struct cg_rules {
	const struct cg_rule *v; /* nr rules, in priority order */
	size_t nr;
	enum cg_group_by group_by;
};

/* Who is asking. All pointers are the caller's and must stay valid during the call. */
struct cg_caller {
	pid_t tid;		/* the FUSE request's pid (a thread id) */
	pid_t tgid;		/* its process */
	uid_t uid;		/* fsuid from the FUSE request */
	gid_t gid;		/* fsgid from the FUSE request */
	const char *comm;	/* from /proc/TID/stat; never NULL ("" when unknown) */
	const char *cgroup;	/* selected cgroup path; never NULL ("/" when unknown) */
	uint8_t ioclass;	/* decoded ioprio class (enum sched_class) */
	uint8_t level;		/* decoded level 0..7 */
};

struct cg_verdict {
	char group[CG_NAME_MAX]; /* NUL-terminated; shortened by cg_name_fit() when too long */
	bool group_is_cgroup;	 /* the group is the caller's own cgroup (group_by cgroup, no
				    rule renamed it): its cgroup weight files describe it */
	/*
	 * [weight units] the rule's weight (10..1000), CG_WEIGHT_FROM_CGROUP when the rule asked
	 * for it, or CG_WEIGHT_UNSET when neither rule nor default gave one. The classifier turns
	 * UNSET into the cgroup's weight when group_is_cgroup, else SCHED_WEIGHT_DEFAULT.
	 */
	uint32_t weight;
	uint8_t ioclass;	/* enum sched_class, after any forced class */
	uint8_t level;		/* 0..7, after any forced level; 7 for IDLE */
	int rule;		/* index of the matching rule, or -1 */
};

/*
 * Validates a rule set. Returns 0, or -EINVAL and sets *bad (if not NULL) to the index of the
 * first invalid rule (group_by out of range: *bad = nr). Cannot fail otherwise.
 */
int cg_rules_check(const struct cg_rules *r, size_t *bad);

/*
 * Matches `who` (and the request's path inside the mount, or NULL) against the rules and fills
 * *out. Returns 0 (the matched rule's index in out->rule, -1 for none), or -EINVAL for a NULL
 * argument or a caller with NULL comm/cgroup (out unchanged). Rules are assumed valid
 * (cg_rules_check). No lock: pure over its arguments.
 */
int cg_rules_match(const struct cg_rules *r, const struct cg_caller *who, const char *path_or_null,
		   struct cg_verdict *out);

/* The default group name for `who` under group_by into out[outsz] (cg_name_fit rules).
 * Cannot fail. */
void cg_rules_default_group(enum cg_group_by by, const struct cg_caller *who, char *out,
			    size_t outsz);

/* true when `path` equals `prefix` or lies below it ('/' boundary). Exposed for tests. */
bool cg_path_has_prefix(const char *path, const char *prefix);

#endif
