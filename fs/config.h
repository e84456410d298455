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

#include "sched.h"

#define CFG_MAX_TUNABLES 48
#define CFG_NAME_MAX 32
#define CFG_ERR_MAX 512

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
	bool kernel_cache;		/* keep page cache across opens */
	bool writeback_cache;		/* kernel write-back caching */
	bool direct_io;			/* bypass the page cache: every read/write is scheduled */
	bool xattr;			/* pass extended attributes through */
	double attr_timeout;		/* [s] */
	double entry_timeout;		/* [s] */
	unsigned nr_tunables;
	struct cfg_tunable tunables[CFG_MAX_TUNABLES]; /* in order of appearance; last wins */
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

/* Writes a one-line human summary of the effective configuration. */
void cfg_describe(const struct cfqfs_config *c, char *buf, size_t buflen);

#endif
