/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * classify.h - who a data request is charged to.
 *
 * pt_ops calls pt_classify_open() at open/create to record the opener, and pt_classify() for
 * each read/write/fsync. The caller (the FUSE request's thread id, fsuid, fsgid) is classified
 * by cgroup/ (queue key, group name and weight, class and level); the group name is mapped to
 * a scheduler group by groups.c. Requests that carry pid 0 (writeback cache, kernel-initiated)
 * or whose caller is already gone are charged to the recorded opener, as ARCHITECTURE.md's
 * attribution rules require.
 *
 * Threads: every function may be called from any thread. cls_reload() swaps the rules under a
 * write lock; classifications in progress finish with the old ones.
 */
#ifndef CFQFS_CLASSIFY_H
#define CFQFS_CLASSIFY_H

#include <stdbool.h>
#include <stdint.h>

#include "executor.h"

struct classifier;
struct cfqfs_config;
struct grp_registry;

/*
 * Builds the classifier from the configuration (queue_by, group_by, cgroup_line, rules, cache).
 * `source` is SOURCE's absolute path (path rules match paths inside it). `groups` is borrowed.
 * Returns NULL with *err = -EINVAL (rules rejected by cgroup/) or -ENOMEM.
 */
struct classifier *cls_create(const struct cfqfs_config *cfg, const char *source,
			      struct grp_registry *groups, int *err);
void cls_destroy(struct classifier *c);

/* Replaces the classification settings (SIGHUP). 0, or -errno with the old ones kept. */
int cls_reload(struct classifier *c, const struct cfqfs_config *cfg);

/*
 * Records the opener of a new handle on backing fd `fd`. When rules match on paths, the file's
 * path inside the mount is looked up once here and kept in opener->path (freed by
 * pt_classify_release). Cannot fail: falls back to the caller's thread in the root group at BE
 * level 4.
 */
void pt_classify_open(struct classifier *c, fuse_req_t req, uint64_t file, int fd,
		      struct exec_tag *opener);

/* Frees what pt_classify_open() kept. Cannot fail. */
void pt_classify_release(struct exec_tag *opener);

/* Classifies one data request on the handle whose backing fd is `fd` (for its path, when path
 * rules came with a reload after it was opened). `rq_flags`: the request's SCHED_RQ_* flags
 * (pt_rq_flags), copied into out, less SCHED_RQ_CALLER for a request without a caller (pid
 * 0). Cannot fail. */
void pt_classify(struct classifier *c, fuse_req_t req, const struct exec_tag *opener, int fd,
		 uint8_t rq_flags, struct exec_tag *out);

#endif
