/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt.h - the passthrough filesystem: the low-level FUSE operations over SOURCE.
 *
 * Metadata operations run inline on the FUSE session thread on O_PATH fds with *at() calls;
 * read/write/fsync/fdatasync are handed to the executor (executor.h), which replies.
 */
#ifndef CFQFS_PT_H
#define CFQFS_PT_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <stdbool.h>

struct classifier;
struct executor;
struct grp_registry;
struct pt_fs;

struct pt_options {
	const char *source;	   /* SOURCE directory (absolute path) */
	double attr_timeout;	   /* [s] kernel attribute cache */
	double entry_timeout;	   /* [s] kernel dentry cache */
	double negative_timeout;   /* [s] kernel cache of a failed lookup; 0 = not cached */
	bool kernel_cache;	   /* keep page cache across opens (hides reads from the scheduler) */
	bool writeback_cache;	   /* kernel write-back cache (writes arrive late, pid 0) */
	bool direct_io;		   /* FOPEN_DIRECT_IO on every open: all I/O reaches the scheduler */
	bool xattr;		   /* pass extended attributes through */
	bool acl;		   /* ask for FUSE_POSIX_ACL (only with xattr): the kernel
				      enforces SOURCE's ACLs */
	bool flock;		   /* BSD locks by the kernel (flock) */
	bool posix_lock;	   /* POSIX locks through to SOURCE (OFD locks) */
	const char *ctl_dir;	   /* control directory name at the root, "" = none */
	bool ctl_private;	   /* only root and the mounting user may read it */
	const char *device_info;   /* text of the control directory's `device` file (NULL:
				      none); read by pt_create only (the ctl keeps a copy) */
	bool splice;		   /* let libfuse move request data through pipes (splice) */
	unsigned open_limit;	   /* [handles] open files per scheduler group; 0 = a quarter of
				      the daemon's descriptor limit */
	unsigned uid_open_limit;   /* [handles] open files per opener's uid over all its groups
				      (root: not bounded per user); 0 = open_limit */
	unsigned max_background;   /* [requests] FUSE background requests let in at once,
				      1..65535; 0 = the kernel's default (12) */
	struct classifier *cls;	   /* borrowed: who pays for each data request */
	struct grp_registry *groups; /* borrowed, may be NULL: group names for the control dir */
};

/*
 * Opens SOURCE and builds the mount state. Returns NULL with *err = -errno (ENOENT: SOURCE
 * missing, ENOTDIR: not a directory, ...). `ex` is borrowed and must outlive the pt_fs.
 */
struct pt_fs *pt_create(const struct pt_options *opts, struct executor *ex, int *err);
void pt_destroy(struct pt_fs *fs);

/*
 * Answers what the mount still holds unanswered (blocked lock requests: ENOLCK) while the
 * session can still send: call when the session loop has ended, before unmounting. The
 * session's destroy callback does it too (for an unmount by the kernel). Cannot fail.
 */
void pt_quiesce(struct pt_fs *fs);

/*
 * Sets the per-group and per-user open-file limits (0 = automatic, as in pt_options). Files
 * already open stay open. Cannot fail. Thread-safe.
 */
void pt_set_open_limit(struct pt_fs *fs, unsigned limit, unsigned uid_limit);

/* The operations table; userdata for fuse_session_new() is the struct pt_fs. */
const struct fuse_lowlevel_ops *pt_ops(void);

#endif /* CFQFS_PT_H */
