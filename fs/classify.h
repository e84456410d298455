/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * classify.h - who a data request is charged to.
 *
 * pt_ops calls pt_classify_open() at open/create to record the opener, and pt_classify() for
 * each read/write/fsync. Requests that carry pid 0 (writeback cache, kernel-initiated) are
 * charged to the recorded opener, as ARCHITECTURE.md's attribution rules require.
 */
#ifndef CFQFS_CLASSIFY_H
#define CFQFS_CLASSIFY_H

#include <stdbool.h>
#include <stdint.h>

#include "executor.h"

/* Records the opener's classification. `open_flags`: O_SYNC/O_DSYNC/O_DIRECT make the
 * handle's writes sync. Cannot fail (falls back to the root group, BE level 4). */
void pt_classify_open(fuse_req_t req, uint64_t file, int open_flags, struct exec_tag *opener);

/* Classifies one data request. `is_read_or_fsync`: reads and fsyncs are always sync; writes
 * take the handle's sync flag. Cannot fail. */
void pt_classify(fuse_req_t req, const struct exec_tag *opener, bool is_read_or_fsync,
		 struct exec_tag *out);

#endif
