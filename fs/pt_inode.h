/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt_inode.h - the inode table of the passthrough filesystem.
 *
 * Every inode the kernel knows about is held as an O_PATH|O_NOFOLLOW fd on SOURCE, keyed by the
 * backing (st_dev, st_ino). Holding the fd pins the backing inode, so its number cannot be
 * reused by the backing filesystem while the kernel may still name it.
 *
 * Node ids handed to the kernel are NOT pointers: they come from a 64-bit counter and are
 * looked up in a second hash, so a stale or forged node id yields ESTALE instead of a
 * use-after-free. Node ids are never reused (the generation is therefore always 0).
 *
 * Two counts per inode:
 *   nlookup - the kernel's references (entries replied, minus forgets). At 0 the inode leaves
 *             both hashes at once, so later lookups build a fresh inode with a fresh node id.
 *   refs    - in-daemon users (a handler between pt_inode_get() and pt_inode_put()). The fd is
 *             closed and the memory freed when both are 0, so a forget that races with a handler
 *             still running on the same inode cannot pull the fd from under it.
 * The root (FUSE_ROOT_ID = SOURCE) is pinned: forgets never free it.
 *
 * Locking: one mutex per table, t->lock, protects both hashes, nlookup, refs and the node id
 * counter. It is a leaf lock: no syscall and no other lock is taken while holding it (fds are
 * opened before and closed after). Fields of struct pt_inode that are not listed as protected
 * are immutable after insertion and may be read without the lock by any holder of a reference.
 */
#ifndef CFQFS_PT_INODE_H
#define CFQFS_PT_INODE_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

struct pt_itable;

struct pt_inode {
	int fd;			    /* O_PATH|O_NOFOLLOW on the backing inode; immutable */
	dev_t dev;		    /* backing st_dev; immutable (hash key) */
	ino_t ino;		    /* backing st_ino; immutable (hash key) */
	mode_t type;		    /* S_IFMT bits: the type of an inode never changes; immutable */
	fuse_ino_t nodeid;	    /* id given to the kernel; immutable */
	uint64_t file_id;	    /* scheduler file identity, pt_inode_file_id(); immutable */
	uint64_t nlookup;	    /* kernel references [count]; protected by t->lock */
	uint32_t refs;		    /* daemon references [count]; protected by t->lock */
	bool hashed;		    /* in both hashes (nlookup > 0 or root); protected by t->lock */
	struct pt_inode *key_next;  /* (dev, ino) hash chain; protected by t->lock */
	struct pt_inode *id_next;   /* node id hash chain; protected by t->lock */
};

/* Scheduler file identity of a backing inode: stable for the inode, distinct across devices
 * with high probability. Cannot fail. */
uint64_t pt_inode_file_id(dev_t dev, ino_t ino);

/*
 * Builds a table whose root is `root_fd` (an O_PATH directory fd; ownership passes to the table,
 * also on failure). Returns NULL with *err = -errno (fstat failure, -ENOTDIR, -ENOMEM).
 */
struct pt_itable *pt_itable_create(int root_fd, int *err);

/* Closes every fd and frees every inode, whatever the counts. No handler may be running. */
void pt_itable_destroy(struct pt_itable *t);

/* The root inode, always valid while the table lives (no reference needed). Cannot fail. */
struct pt_inode *pt_itable_root(struct pt_itable *t);

/*
 * Takes a daemon reference on the inode named `nodeid`. Returns NULL when the id is unknown or
 * already forgotten (reply ESTALE). Release with pt_inode_put(). Takes t->lock.
 */
struct pt_inode *pt_inode_get(struct pt_itable *t, fuse_ino_t nodeid);

/* Drops a daemon reference; may close and free the inode. NULL is a no-op. Takes t->lock. */
void pt_inode_put(struct pt_itable *t, struct pt_inode *in);

/*
 * Resolves `name` in the directory `dir` without following a symlink and adds one kernel
 * reference to the resulting inode (creating it if new). "." is `dir` itself; ".." at the root
 * is the root (never SOURCE's parent). `name` must not contain '/' (-EINVAL).
 * On success fills *st (backing attributes, st_ino left as the backing number) and *nodeid and
 * returns 0; on failure returns -errno and the table is unchanged. An inode the table holds
 * costs no descriptor; a new one takes one (-EMFILE at the reserve of fdcap.h).
 * The caller must reply with the entry (or call pt_inode_forget(nodeid, 1) if it cannot).
 */
int pt_inode_lookup(struct pt_itable *t, struct pt_inode *dir, const char *name,
		    struct stat *st, fuse_ino_t *nodeid);

/* pt_inode_lookup() of a name the caller has just made (create, mkdir, mknod, symlink): the
 * inode is new, so the probe for a known inode is skipped (one fstatat less). Same result and
 * contract, also if the name was replaced meanwhile. */
int pt_inode_lookup_made(struct pt_itable *t, struct pt_inode *dir, const char *name,
			 struct stat *st, fuse_ino_t *nodeid);

/*
 * Adds one kernel reference to an inode the caller holds (link(2) replies the same inode).
 * Fills *st from the inode and *nodeid with the id to reply: normally in->nodeid, but a fresh
 * id if `in` was forgotten meanwhile. Returns 0 or -errno (then no reference is added).
 */
int pt_inode_ref(struct pt_itable *t, struct pt_inode *in, struct stat *st, fuse_ino_t *nodeid);

/*
 * Drops `n` kernel references of `nodeid`. Unknown ids are ignored (the kernel may forget an id
 * we already dropped after an error). More forgets than lookups clamp at 0. Cannot fail.
 * Takes t->lock.
 */
void pt_inode_forget(struct pt_itable *t, fuse_ino_t nodeid, uint64_t n);

/*
 * The inode number to show for backing inode (dev, ino) in st_ino and d_ino. Everything on
 * the mount has one st_dev, so inodes of different backing devices (a bind mount under SOURCE,
 * btrfs subvolumes, which all number their root 256) must not show the same number: tar,
 * rsync -H and cp -a would take them for hard links, find and du for a directory loop.
 * SOURCE's own device keeps its numbers; the others, in order of appearance, get an index
 * 1..PT_DEV_MAX-1 in bits 56..62 over the low 56 bits of theirs (bit 63 marks the control
 * directory, ctl.h). Past PT_DEV_MAX - 1 other devices, numbers are shown unchanged (logged
 * once). May take t->lock (not for SOURCE's device). Cannot fail.
 */
#define PT_DEV_SHIFT 56
#define PT_DEV_MAX 128
#define PT_DEV_INO_MASK ((UINT64_C(1) << PT_DEV_SHIFT) - 1)
ino_t pt_inode_shown_ino(struct pt_itable *t, dev_t dev, ino_t ino);

/* Number of inodes in the table, root included (tests, stats). Takes t->lock. */
size_t pt_itable_count(struct pt_itable *t);

/* Checks the table's invariants (SQLite PageSanity style), in every build type. Takes
 * t->lock. Returns true when they hold. */
bool pt_itable_check(struct pt_itable *t);

#endif /* CFQFS_PT_INODE_H */
