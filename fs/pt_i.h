/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt_i.h - internals shared by the pt_*.c files (passthrough filesystem). Never include this
 * from outside fs/pt_*.c; the contract for the rest of the daemon is pt.h.
 *
 * Files: pt.c (create/destroy, init), pt_ops.c (entries, attributes, files, the ops
 * table), pt_lock.c (POSIX record locks), pt_dir.c (directory handles), pt_xattr.c (extended attributes), pt_cred.c (acting
 * as the caller when creating), pt_ctl.c (control directory hook), pt_inode.c (inode table).
 *
 * Locks, in order (each is a leaf with respect to the ones below it):
 *     struct pt_dir.lock  ->  pt_itable lock (pt_inode.h)
 *     pt_locks lock (pt_lock.c), fs->handles_lock: leaves, never held with the others
 * The executor lock (executor.h) is never taken while holding either.
 */
#ifndef CFQFS_PT_I_H
#define CFQFS_PT_I_H

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "ctl.h"
#include "executor.h"
#include "pt.h"
#include "pt_inode.h"
#include "uidtab.h"

/* Largest copy_file_range done in one request [bytes]: the executor cuts it into pieces
 * (max_copy_kb), and this bound makes the caller come back between requests, where a signal
 * or a stuck SOURCE is seen; callers (cp, the kernel) loop on short copies as the API
 * allows. */
#define PT_COPY_CHUNK (16u << 20)

/* Largest write the kernel may send [bytes] (conn->max_write; libfuse's buffer holds 1 MiB). */
#define PT_MAX_WRITE (1u << 20)

/*
 * The mount state. Immutable after pt_create() except the negotiated flags, which init() writes
 * before the kernel sends any other request (so every later reader sees them).
 */
struct pt_fs {
	struct pt_options opts;	 /* copy of the caller's options; strings owned */
	struct executor *ex;	 /* borrowed, outlives the pt_fs */
	struct pt_itable *it;	 /* inodes; own lock */
	bool as_caller;		 /* daemon is root: create objects with the caller's fsuid/fsgid */
	uid_t euid;		 /* the daemon's effective ids, which never change; immutable */
	gid_t egid;
	gid_t *groups;		 /* the daemon's supplementary groups, restored after a switch */
	int ngroups;		 /* entries in groups [count] */
	bool writeback;		 /* FUSE_CAP_WRITEBACK_CACHE negotiated; written by init only */
	bool posix_locks;	 /* FUSE_CAP_POSIX_LOCKS negotiated; written by init only */
	bool flock_locks;	 /* FUSE_CAP_FLOCK_LOCKS negotiated; written by init only */
	struct pt_locks *locks;	 /* POSIX lock owners (pt_lock.c); own lock */
	struct ctl *ctl;	 /* the control directory (ctl.h), NULL if ctl_dir is ""; own
				    locking */
	/* Open handles, so that pt_destroy() can free those whose RELEASE never came (unmount
	 * may win the race against the kernel's asynchronous release). */
	pthread_mutex_t handles_lock;	/* protects the two lists and the handles' links */
	struct pt_file *files;		/* open files; protected by handles_lock */
	struct pt_dir *dirs;		/* open directories; protected by handles_lock */
	/* Open files per scheduler group, so that one group cannot take every descriptor the
	 * daemon has (then nobody could open anything). */
	uint32_t *open_count;		/* [nr_open_count] by group id; by handles_lock */
	size_t nr_open_count;		/* protected by handles_lock */
	unsigned open_limit;		/* [handles] per group, >= 1; by handles_lock */
	/* The same per opener's uid but 0, over all its groups: a user who makes many cgroups
	 * does not multiply open_limit. Sums the linked files of each uid. */
	struct uidtab *open_uid;	/* protected by handles_lock */
	unsigned uid_open_limit;	/* [handles] per uid, >= 1; by handles_lock */
};

/*
 * An open regular file (fi->fh). Immutable from open/create to release; the kernel does not send
 * release while a request on the handle is outstanding, so the executor may use fd until its
 * reply without further protection.
 */
struct pt_file {
	int fd;			  /* backing fd, opened with the (adjusted) open flags */
	/* The same file without O_APPEND, for writes after the caller cleared O_APPEND with
	 * fcntl(F_SETFL): -1 until first needed (write_fd in pt_ops.c), closed with the handle;
	 * counted as an open file of the opener (pt__file_count_fd) */
	atomic_int plain_fd;
	int flags;		  /* flags as the kernel sent them (before our adjustments) */
	dev_t dev;		  /* backing st_dev (POSIX lock owners are per backing file) */
	ino_t ino;		  /* backing st_ino */
	uint64_t file_id;	  /* scheduler file identity */
	struct exec_tag opener;	  /* classification of the opener, for pid-0 requests */
	/* an fsync or fdatasync came through this handle: its later writes are the kind whose
	 * data a local filesystem writes at the next fsync (rqmap.h, "journal") */
	atomic_bool fsynced;
	struct pt_file *prev, *next; /* fs->files list; protected by fs->handles_lock */
};

/* An open directory (fi->fh). */
struct pt_dir {
	pthread_mutex_t lock;	  /* serialises readdir on this handle (seekdir/readdir state) */
	DIR *dp;		  /* protected by lock */
	struct dirent *pending;	  /* entry read but not yet returned (buffer full); by lock */
	off_t offset;		  /* offset the next returned entry follows; protected by lock */
	bool is_root;		  /* directory is SOURCE (ctl_dir hiding); immutable */
	off_t ctl_cookie;	  /* root: the control entry's offset (pt_dir.c); by lock */
	dev_t dev;		  /* backing st_dev of the directory (its entries' d_ino); immutable */
	struct pt_dir *prev, *next; /* fs->dirs list; protected by fs->handles_lock */
};

/* Saved credentials of one switch to the caller (pt_cred.c). */
struct pt_cred {
	bool switched;	    /* fsuid/fsgid changed */
	bool groups_set;    /* supplementary groups changed */
	uid_t uid;	    /* caller's uid */
	gid_t gid;	    /* caller's gid */
};

static inline struct pt_fs *pt__fs(fuse_req_t req)
{
	return (struct pt_fs *)fuse_req_userdata(req);
}

static inline struct pt_file *pt__file(const struct fuse_file_info *fi)
{
	return (struct pt_file *)(uintptr_t)fi->fh;
}

static inline struct pt_dir *pt__dir(const struct fuse_file_info *fi)
{
	return (struct pt_dir *)(uintptr_t)fi->fh;
}

/*
 * Handle registry: link on open (before replying), unlink on release. pt__file_link counts
 * the file against its opener's group and uid: -EMFILE when that group already holds
 * open_limit files or that uid (not root) uid_open_limit, -ENOMEM if a count table cannot
 * grow; then nothing is linked. Unlink cannot fail.
 */
int pt__file_link(struct pt_fs *fs, struct pt_file *pf);
void pt__file_unlink(struct pt_fs *fs, struct pt_file *pf);
/* A linked file's second descriptor (plain_fd) counts as one more open file of its group and
 * uid: pt__file_count_fd() before opening it (-EMFILE, -ENOMEM as pt__file_link, nothing
 * counted then), pt__file_uncount_fd() if it is not kept; unlink gives back a kept one. */
int pt__file_count_fd(struct pt_fs *fs, struct pt_file *pf);
void pt__file_uncount_fd(struct pt_fs *fs, struct pt_file *pf);
void pt__dir_link(struct pt_fs *fs, struct pt_dir *d);
void pt__dir_unlink(struct pt_fs *fs, struct pt_dir *d);

/* Formats "/proc/self/fd/N" into buf (at least 32 bytes). Cannot fail. */
void pt__proc_path(char *buf, size_t size, int fd);

/* true if `name` may be created/removed in a directory: non-empty, no '/', not "." or "..". */
bool pt__name_ok(const char *name);

/* true if (parent, name) is the reserved control directory name at the root. */
bool pt__is_ctl(const struct pt_fs *fs, const struct pt_inode *parent, const char *name);

/*
 * Switches the calling thread's fsuid/fsgid to the caller of `req` and makes the caller's umask
 * the thread's umask (per-thread after unshare(CLONE_FS)), so the backing filesystem applies it
 * together with any default ACL. No-op (but still sets the umask) when the daemon is not root
 * or the caller is root. Returns 0 or -errno; on failure nothing is switched.
 * `*mode` is masked by hand when a per-thread umask is impossible.
 */
int pt__cred_enter(struct pt_fs *fs, fuse_req_t req, mode_t *mode, struct pt_cred *c);

/*
 * Adds the caller's supplementary groups to the switched thread (retry after EACCES: the
 * kernel's permission check passed with them, the backing filesystem's needs them too).
 * Returns 0 or -errno (-EACCES if not switched, so the caller keeps its original error).
 */
int pt__cred_add_groups(struct pt_fs *fs, fuse_req_t req, struct pt_cred *c);

/* Restores the daemon's credentials. Cannot fail (a failure to restore aborts: continuing as
 * another user would be a security hole). */
void pt__cred_leave(struct pt_fs *fs, struct pt_cred *c);

/*
 * Control directory hook: looks up the control directory at the root. Returns 0 with *e filled
 * (control node ids carry no reference count), or -ENOENT when the control directory is off.
 */
int pt_ctl_lookup(struct pt_fs *fs, fuse_req_t req, struct fuse_entry_param *e);

/* POSIX lock owners and blocked lock requests (pt_lock.c). create returns NULL on allocation
 * failure; destroy closes every owner's description (after pt__locks_stop if not yet done). */
struct pt_locks;
struct pt_locks *pt__locks_create(void);
void pt__locks_destroy(struct pt_locks *tab);
/* Answers every blocked lock request ENOLCK, stops the waiter thread, and makes later
 * blocking requests fail with ENOLCK. Call while the session can still reply (its destroy
 * callback). Idempotent; cannot fail. */
void pt__locks_stop(struct pt_locks *tab);
/* A lock of the mount may have gone (a handle closed): blocked requests are tried again.
 * Cannot fail. Takes the table lock. */
void pt__locks_changed(struct pt_locks *tab);
/* Checks the waiter invariants (every record on exactly the list its state names). 0, or
 * -EFAULT with a message in buf. Takes the table lock; debug builds also run it after every
 * change and abort on failure. */
int pt__locks_check(struct pt_locks *tab, char *buf, size_t len);
/* Drops every lock `owner` holds on the handle's file (POSIX: any close() by the owner). Cannot
 * fail. Takes the owner table lock. */
void pt__locks_flush(struct pt_fs *fs, const struct pt_file *pf, uint64_t owner);
void pt__getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *lock);
void pt__setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *lock,
	       int sleep);
/* flock(2) on the handle (op as libfuse passes it: LOCK_SH/LOCK_EX/LOCK_UN, LOCK_NB). */
void pt__flock(fuse_req_t req, struct fuse_file_info *fi, int op);

/* Session callbacks in pt.c. */
void pt__init(void *userdata, struct fuse_conn_info *conn);
void pt__destroy(void *userdata);

/* Handlers living in pt_dir.c and pt_xattr.c, collected into the table in pt_ops.c. */
void pt__opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void pt__readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		 struct fuse_file_info *fi);
void pt__readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		     struct fuse_file_info *fi);
void pt__releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void pt__fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);

void pt__setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
		  size_t size, int flags);
void pt__getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size);
void pt__listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void pt__removexattr(fuse_req_t req, fuse_ino_t ino, const char *name);

/* Lookup helper shared with readdirplus: fills *e (timeouts included) and takes a kernel
 * reference. Returns 0 or -errno. */
int pt__lookup_entry(struct pt_fs *fs, fuse_req_t req, struct pt_inode *dir, const char *name,
		     struct fuse_entry_param *e);

/* After a descriptor could not be had (rc -EMFILE or -ENFILE, else nothing): logs why and what
 * to raise, at most once a minute. */
void pt__warn_fd_limit(struct pt_fs *fs, int rc);

#endif /* CFQFS_PT_I_H */
