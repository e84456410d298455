/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * executor.h - the only threaded scheduling code: a pool of workers around the pure core.
 *
 * FUSE session threads call exec_read/exec_write/exec_fsync/exec_copy/exec_fallocate: they
 * build a request and enqueue it under the executor lock. Whoever issues a chain that sched_dispatch() chooses (a worker,
 * or with exec_options.inline_io the submitting session thread itself) performs the I/O on the
 * backing fd outside the lock, completes it in the core and sends the one FUSE reply to each
 * of its requests (libfuse allows replying from any thread). So exec_* may return before or
 * after the request is answered, and the caller must not touch `req` afterwards.
 *
 * Lock order: ex->lock is a leaf (nothing else is taken while holding it).
 */
#ifndef CFQFS_EXECUTOR_H
#define CFQFS_EXECUTOR_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "sched.h"

struct executor;
struct dev_params;

/* Who a request is charged to (filled by classify.c). */
struct exec_tag {
	uint64_t file;	    /* file identity (st_dev, st_ino mix) */
	uint64_t queue_key; /* io context: tgid, or tid with queue_by = thread */
	uint32_t group;	    /* scheduler group id */
	uint8_t ioclass;    /* enum sched_class */
	uint8_t level;	    /* 0..7 */
	uint8_t rq_flags;   /* SCHED_RQ_* of the request (pt_rq_flags); unused in an opener */
	bool no_caller;	    /* sent by the kernel on nobody's behalf (writeback: pid 0) */
	uid_t uid;	    /* the caller's uid (the opener's when no_caller): per-user bounds */
	char *path;	    /* opener only: path inside the mount for path rules, or NULL;
			       owned by the handle (pt_classify_release) */
};

/*
 * Per-group bounds on what the daemon holds for requests not yet answered (queued or in
 * flight), so that one group flooding the mount cannot exhaust the daemon's memory. A request
 * past either bound is answered EAGAIN at once: the submitting FUSE thread must never wait
 * (FUSE has one request channel, so a thread parked for one group would stall every group).
 * Exempt: requests with no caller (exec_tag.no_caller, the kernel's writeback). Nobody would
 * get their EAGAIN, so refusing one would lose data an application was told was written,
 * and the kernel bounds them itself (max_background requests of max_write bytes at most).
 * Also exempt: fsync and fdatasync (no data; EAGAIN is not an fsync() error, and an fsync
 * error makes careful applications stop). Both still count towards the group's load.
 */
struct exec_limits {
	unsigned queue_limit;  /* [requests] per group, queued + in flight; >= 1 */
	uint64_t queue_bytes;  /* [bytes] per group of write data held; >= 1 MiB */
	/* The same per user, summed over all the groups of the caller's uid, so that a user
	 * who makes many cgroups does not multiply the bound. uid 0 is not bounded per user
	 * (its groups still are): root is the administrator, and the kernel's own writeback
	 * runs as root. 0: the per-group value. */
	unsigned uid_queue_limit; /* [requests] per uid */
	uint64_t uid_queue_bytes; /* [bytes] per uid */
};
#define EXEC_QUEUE_LIMIT_DEFAULT 4096u
#define EXEC_QUEUE_BYTES_DEFAULT (256ull << 20)

struct exec_options {
	unsigned depth;		 /* worker threads = device queue depth; 1..256 */
	struct exec_limits limits;
	enum sched_policy policy;
	bool rotational;
	/* Emulated device, or NULL: each I/O is held until the model's completion time (the
	 * real I/O runs first; the hold covers what remains of the modelled service time). */
	const struct dev_params *device;
	/*
	 * The FUSE session threads may issue what the scheduler dispatches to them, saving the
	 * hand-off to a worker. A thread that issues a request SOURCE never answers is stuck
	 * with it, and at most `depth` are; so set this only when the FUSE loop may run more
	 * threads than `depth`, leaving one for everything else (never in single-threaded
	 * mode). Ignored with an emulated device, whose hold would block the thread.
	 */
	bool inline_io;
};

/*
 * Creates an executor over a new scheduler; no thread runs until exec_start(). Returns NULL on
 * failure with *err set to a negative errno. The executor owns the scheduler.
 */
struct executor *exec_create(const struct exec_options *opts, int *err);

/* Starts the workers (after fuse_daemonize(), whose fork would lose them). Returns 0 or
 * -errno with no thread left running. */
int exec_start(struct executor *ex);

/*
 * Stops accepting (later submissions are answered EIO), lets the workers finish every queued
 * and in-flight request and reply to it, joins them and frees everything. Call once, after the
 * FUSE session loop has returned.
 */
void exec_destroy(struct executor *ex);

/*
 * Checks the executor's invariants (every record in exactly one place, the free pool's and
 * the groups' byte and request counts, the ready list, pinned writes; executor.c). Returns 0,
 * or -EINVAL with the first violation described in buf. Takes the lock. Debug builds also
 * check after every enqueue and completion and abort at the first violation.
 */
int exec_check(struct executor *ex, char *buf, size_t len);

/*
 * The data operations (these three, and exec_copy and exec_fallocate below). Each replies to
 * `req` exactly once, from a worker or, on an immediate failure, from the caller's thread
 * before returning. `fd` must stay open until the reply (the kernel holds the file while the
 * request is outstanding). Cannot fail.
 */
void exec_read(struct executor *ex, fuse_req_t req, int fd, size_t size, off_t off,
	       const struct exec_tag *tag);
void exec_write(struct executor *ex, fuse_req_t req, int fd, struct fuse_bufvec *in_buf,
		off_t off, const struct exec_tag *tag);
void exec_fsync(struct executor *ex, fuse_req_t req, int fd, bool datasync,
		const struct exec_tag *tag);

/*
 * copy_file_range of `len` bytes from `fd_in` at `off_in` to `fd_out` at `off_out`, served in
 * pieces of at most the policy's max_copy_kb (sched_max_copy): each piece is a read of the
 * source range charged to `tag_in`, then a write of what it read charged to `tag_out`, each
 * queued, dispatched (merged, timed by an emulated device) and counted as the read or write
 * it is. The data passes through the daemon: SOURCE is never asked to clone or copy on its
 * own, since the scheduler could neither see nor pace that. Answers the bytes copied (short
 * at the source's end of file, or at an error once some were copied) or the error of the
 * first piece. The copy counts as one request of its group's queue_limit, holding its first
 * piece's size of queue_limit_mb, from submission to the answer. Both fds must stay open
 * until the reply. Cannot fail.
 */
void exec_copy(struct executor *ex, fuse_req_t req, int fd_in, off_t off_in,
	       const struct exec_tag *tag_in, int fd_out, off_t off_out,
	       const struct exec_tag *tag_out, size_t len);
/*
 * fallocate(fd, mode, off, len), charged to `tag`. The modes that allocate or write data
 * (0, KEEP_SIZE, ZERO_RANGE, UNSHARE_RANGE) are cut like a copy into pieces of at most
 * max_copy_kb, each issued as its own fallocate and charged, timed and counted as a write of
 * its length; PUNCH_HOLE, COLLAPSE_RANGE, INSERT_RANGE and other modes are one request of
 * length 0 (timed like an fsync on an emulated device, no bytes counted). Answers 0 or the
 * first error (pieces before it stay done, as a native fallocate that fails part-way keeps
 * what it allocated). Holds no data against queue_limit_mb. Cannot fail.
 */
void exec_fallocate(struct executor *ex, fuse_req_t req, int fd, int mode, off_t off,
		    off_t len, const struct exec_tag *tag);

/* Replaces the per-group limits; requests already held are kept even if now over. Cannot
 * fail. */
void exec_set_limits(struct executor *ex, const struct exec_limits *lim);

/* Runs fn(arg, sd) under the executor lock (control files, stats, tunables). Returns fn's
 * value. fn must not block. */
int exec_with_sched(struct executor *ex, int (*fn)(void *arg, struct sched *sd), void *arg);
/* Whether FUSE session threads issue data I/O themselves (exec_options.inline_io, and no
 * emulated device). Cannot fail. */
bool exec_issues_inline(const struct executor *ex);

#endif /* CFQFS_EXECUTOR_H */
