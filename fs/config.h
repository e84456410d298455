/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * config.h - the daemon's configuration as plain structs.
 *
 * Only config.c knows libconfig. Every value is range-checked on load; errors name the file,
 * line and key ("cfqfs.conf:12: depth: must be between 1 and 256"). `-o key=value` mount
 * options override any scalar key with the same validation (cfg_set).
 */
#ifndef CFQFS_CONFIG_H
#define CFQFS_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cgroup.h"
#include "device.h"
#include "sched.h"

#define CFG_MAX_TUNABLES 48
#define CFG_NAME_MAX 32
#define CFG_ERR_MAX 512
#define CFG_MAX_RULES 64
#define CFG_PATTERN_MAX 256

/* One classification rule (see cgroup/cg_rules.h); strings owned here, "" = unset. */
struct cfg_rule {
	char cgroup[CFG_PATTERN_MAX]; /* glob on the caller's cgroup path */
	char comm[CFG_PATTERN_MAX];   /* glob on the caller's command name */
	char path[4 * CFG_PATTERN_MAX]; /* prefix inside the mount */
	char group[CFG_PATTERN_MAX];  /* group name; "" = group_by's default */
	bool has_uid, has_gid;
	uid_t uid;
	gid_t gid;
	uint32_t weight;	      /* 10..1000, CG_WEIGHT_UNSET or CG_WEIGHT_FROM_CGROUP */
	uint8_t ioclass;	      /* CG_CLASS_KEEP or enum sched_class */
	bool has_level;
	uint8_t level;		      /* 0..7 */
	int line;		      /* [line] in the file, for messages; 0 = not from a file */
};

/* One scheduler tunable set by the user, in sysfs units (ms, KiB, counts). */
struct cfg_tunable {
	char name[CFG_NAME_MAX];
	int64_t value;
};

struct cfqfs_config {
	enum sched_policy policy;	/* "scheduler": noop | deadline | cfq */
	unsigned depth;			/* executor workers (device queue depth), 1..256 */
	int rotational;			/* -1 auto (from SOURCE's block device), 0, 1 */
	char ctl_dir[NAME_MAX + 1];	/* control directory at the mount root; "" = none */
	bool ctl_private;		/* "ctl_access": "all" (false) or "owner" (true) */
	bool kernel_cache;		/* keep page cache across opens */
	bool writeback_cache;		/* kernel write-back caching */
	bool direct_io;			/* bypass the page cache: every read/write is scheduled */
	bool xattr;			/* pass extended attributes through */
	bool acl;			/* the kernel enforces SOURCE's POSIX ACLs (needs xattr) */
	bool splice;			/* FUSE data through pipes (splice) instead of copies */
	double attr_timeout;		/* [s] */
	double entry_timeout;		/* [s] */
	double negative_timeout;	/* [s] a failed lookup is cached this long; 0 never */
	/* Per-group bounds (resource exhaustion). Over them a request gets EAGAIN, an open
	 * EMFILE; see executor.h and pt.h. */
	uint32_t queue_limit;		/* [requests] queued + in flight per group */
	uint32_t queue_limit_mb;	/* [MiB] write data held per group */
	uint32_t open_limit;		/* [files] open per group; 0 = a quarter of the fd limit */
	/* The same per uid over all its groups (uid 0 is not bounded per user); 0 = the
	 * per-group value. */
	uint32_t uid_queue_limit;	/* [requests] */
	uint32_t uid_queue_limit_mb;	/* [MiB] */
	uint32_t uid_open_limit;	/* [files] */
	uint32_t group_expire_ms;	/* [ms] an unused group is removed after this; 0 never */
	/* FUSE background requests (readahead, writeback, asynchronous direct I/O) the kernel
	 * lets into the daemon at once, 1..65535; the kernel's own default is 12. */
	uint32_t max_background;
	unsigned nr_tunables;
	struct cfg_tunable tunables[CFG_MAX_TUNABLES]; /* in order of appearance; last wins */

	/* Classification (cgroup/). */
	enum cg_queue_by queue_by;	/* "queue_by": process | thread */
	enum cg_group_by group_by;	/* "group_by": cgroup | uid | gid | none */
	enum cg_select cgroup_line;	/* "cgroup_line": auto | v2 | blkio */
	bool weight_from_cgroup;	/* read io.weight & co. of the caller's cgroup */
	uint32_t cache_ttl_ms;		/* [ms] classification cache lifetime */
	unsigned nr_rules;
	struct cfg_rule rules[CFG_MAX_RULES]; /* first match wins */

	/* Emulated device ("device"): none, or a model the executor holds each I/O for. */
	bool device_enabled;
	struct dev_params device;
};

/* Fills the built-in defaults. Cannot fail. */
void cfg_defaults(struct cfqfs_config *c);

/*
 * Loads a libconfig file over *c. Returns 0, or -errno with a one-line message in err
 * ("FILE:LINE: KEY: problem"): -ENOENT/-EACCES (cannot open), -EINVAL (syntax, unknown key,
 * wrong type, out of range). On failure *c is unchanged.
 */
int cfg_load_file(struct cfqfs_config *c, const char *path, char *err, size_t errlen);

/*
 * Applies one override "key=value" (as given with -o). Returns 0; -ENOENT if `key` is not a
 * configuration key (the caller passes it on to FUSE); -EINVAL with a message in err for a bad
 * value. On failure *c is unchanged.
 */
int cfg_set(struct cfqfs_config *c, const char *key, const char *value, char *err,
	    size_t errlen);

/*
 * Fills `out` (capacity CFG_MAX_RULES) with cgroup/ rules pointing into c's strings; valid
 * while *c lives unchanged. Returns the count. Cannot fail.
 */
size_t cfg_cg_rules(const struct cfqfs_config *c, struct cg_rule *out);

/* Writes a one-line human summary of the effective configuration. */
void cfg_describe(const struct cfqfs_config *c, char *buf, size_t buflen);

#endif
