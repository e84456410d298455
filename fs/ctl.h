/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl.h - the control directory (.cfqfs/ by default): virtual files served by the daemon, in
 * the habits of /sys/block/DEV/queue/ and cgroupfs.
 *
 *     scheduler                 "noop deadline [cfq]"; write a name to switch live
 *     iosched/<tunable>         one decimal value per tunable of the ACTIVE policy (rw)
 *     io.stat                   one line per group, cgroup v2 keys + scheduler keys
 *     queues                    one row per live queue (header line first)
 *     metrics                   Prometheus text exposition format 0.0.4
 *     stat.json                 everything above as one JSON document
 *     groups/<dir>/weight       the group's weight, 10..1000 (rw)
 *     groups/<dir>/io.stat      the group's io.stat line
 *     groups/<dir>/procs        processes classified into the group in the last CTL_PROCS_WINDOW
 *
 * Node ids: every control inode has the top bit set (CTL_INO_FLAG); the passthrough's ids come
 * from a counter starting at 1 and never reach it. An id encodes the object (kind, group id or
 * tunable index), so ids are stable, the kernel's lookup counts need no bookkeeping here and
 * FORGET of a control id is a no-op. Entries and attributes are replied with zero timeouts:
 * the tree changes with the policy and the group set.
 *
 * Reads: the whole content is generated at open() - a snapshot taken under the executor lock
 * (exec_with_sched), formatted outside it - and read() serves slices of that buffer, so a
 * reader sees one consistent snapshot whatever its read size. Handles are direct_io, and files
 * report st_size 0 (like procfs).
 * Writes: each write() call is applied at once with its text (one trailing newline trimmed),
 * as sysfs does; bad input fails that write with EINVAL and changes nothing.
 * Who may write: root and the daemon's own uid (the mounting user); anyone may read. Files are
 * owned by the daemon's uid, 0644 (writable) or 0444; directories 0755.
 *
 * Errnos inside the control directory: creating, removing, renaming or linking anything ->
 * EPERM; chmod/chown -> EPERM (truncation and time changes are accepted and ignored, so shell
 * redirections work); write by another user -> EACCES; opening a read-only file for writing ->
 * EACCES; setxattr/removexattr -> EPERM, getxattr -> ENODATA; locks -> ENOLCK; fallocate,
 * copy_file_range -> EOPNOTSUPP; bad value -> EINVAL; a tunable of an inactive policy -> ENOENT.
 *
 * Group directory names: the group name with its leading '/' dropped (cgroup paths) and '%',
 * '/', control characters and DEL percent-encoded ("/tenants/a" -> "tenants%2Fa"); the root
 * group "/" is "%2F". If a flat name (rule, "uid:N") encodes like a cgroup path, the group
 * created first owns the directory.
 * Names inside io.stat and queues (which are space-separated) escape space, tab, newline and
 * backslash as octal "\040" "\011" "\012" "\134", as /proc/self/mountinfo does.
 *
 * Locking: ctl takes the groups registry lock (grp_*) and then, separately, the executor lock;
 * it holds no lock of its own across calls. Every function may be called from any thread.
 */
#ifndef CFQFS_CTL_H
#define CFQFS_CTL_H

#define FUSE_USE_VERSION 34
#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct executor;
struct grp_registry;
struct ctl;

#define CTL_INO_FLAG (1ull << 63)
/* A process is listed in groups/NAME/procs this long after its last classified request [ns]. */
#define CTL_PROCS_WINDOW (5ull * 1000000000ull)

struct ctl_options {
	const char *name;	     /* directory name at the mount root (copied) */
	struct executor *ex;	     /* borrowed, outlives the ctl */
	struct grp_registry *groups; /* borrowed, may be NULL: then only the root group shows */
	uid_t owner;		     /* may write besides root: the daemon's uid */
	gid_t owner_gid;	     /* st_gid of every control inode */
	bool private_read;	     /* only root and the owner may read (modes 0600/0700) */
};

/* Returns NULL on allocation failure. */
struct ctl *ctl_create(const struct ctl_options *opts);
/* Frees the ctl; open control handles must be gone (the session has ended). NULL is a no-op. */
void ctl_destroy(struct ctl *c);

/* Is `ino` a control node id? Cannot fail. */
static inline bool ctl_owns(fuse_ino_t ino)
{
	return (ino & CTL_INO_FLAG) != 0;
}

/* The entry of the control directory itself (for a lookup of its name at the root). No
 * reference is counted. Cannot fail. */
void ctl_root_entry(const struct ctl *c, struct fuse_entry_param *e);

/*
 * Request handlers for control inodes (ctl_owns(ino) is true). Each replies exactly once.
 * `c` may be NULL (control directory disabled): they reply ESTALE. A lookup of ".." in the
 * control directory itself is the caller's to answer (ctl_is_root_dotdot).
 */
void ctl_lookup(struct ctl *c, fuse_req_t req, fuse_ino_t parent, const char *name);
void ctl_getattr(struct ctl *c, fuse_req_t req, fuse_ino_t ino);
void ctl_setattr(struct ctl *c, fuse_req_t req, fuse_ino_t ino, struct stat *attr, int valid);
void ctl_access(struct ctl *c, fuse_req_t req, fuse_ino_t ino, int mask);
void ctl_open(struct ctl *c, fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void ctl_read(struct ctl *c, fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi);
void ctl_write(struct ctl *c, fuse_req_t req, const char *buf, size_t size,
	       struct fuse_file_info *fi);
void ctl_release(struct ctl *c, fuse_req_t req, struct fuse_file_info *fi);
void ctl_opendir(struct ctl *c, fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void ctl_readdir(struct ctl *c, fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi,
		 bool plus);
void ctl_releasedir(struct ctl *c, fuse_req_t req, struct fuse_file_info *fi);

/* Whether `name` (a control directory lookup) is ".." of the control root: the passthrough
 * answers it with the mount root. Cannot fail. */
bool ctl_is_root_dotdot(fuse_ino_t parent, const char *name);

/*
 * Directory name of a group (see above) into buf. Returns the length, or -ENAMETOOLONG if it
 * does not fit (buf then holds a truncated, NUL-terminated name). Cannot fail otherwise.
 */
int ctl_group_dirname(const char *group, char *buf, size_t size);

/* Appends `s` escaped for io.stat/queues (octal escapes of space, tab, newline, backslash) to
 * buf. Returns the length written (without the NUL), or -ENAMETOOLONG. */
int ctl_escape_field(const char *s, char *buf, size_t size);
/* Reverses ctl_escape_field in place. Cannot fail. */
void ctl_unescape_field(char *s);

#endif /* CFQFS_CTL_H */
