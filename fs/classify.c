/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * classify.c - foundation version: one queue per calling thread id, everything in the root
 * group at BE level 4. The cgroup-aware classifier (cgroup/) replaces the body of
 * classify_caller() without changing this file's contract.
 */
#include "classify.h"

#include <fcntl.h>

#include "sched.h"

static void classify_caller(fuse_req_t req, struct exec_tag *t)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	t->queue_key = ctx ? (uint64_t)ctx->pid : 0;
	t->group = SCHED_ROOT_GROUP;
	t->ioclass = SCHED_CLASS_BE;
	t->level = SCHED_LEVEL_NORM;
}

void pt_classify_open(fuse_req_t req, uint64_t file, int open_flags, struct exec_tag *opener)
{
	classify_caller(req, opener);
	opener->file = file;
	opener->sync = (open_flags & (O_SYNC | O_DSYNC | O_DIRECT)) != 0;
}

void pt_classify(fuse_req_t req, const struct exec_tag *opener, bool is_read_or_fsync,
		 struct exec_tag *out)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	if (!ctx || ctx->pid == 0)
		*out = *opener; /* kernel-initiated (writeback): charge the opener */
	else
		classify_caller(req, out);
	out->file = opener->file;
	out->sync = is_read_or_fsync || opener->sync;
}
