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
 *     trace                     the scheduler's decision trace (sched_trace_*), one record per
 *                               line; write a ring size (0 = off, the default) to start it (rw)
 *     device                    SOURCE's device: reported rotational flag, the mount-time
 *                               probe's measurement, and the rotational verdict with its reason
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
 * copy_file_range -> EOPNOTSUPP; bad value -> EINVAL; a tunable of an inactive policy -> ENOENT;
 * an open past the memory bounds -> EMFILE or ENFILE (see "Memory").
 *
 * Group directory names: the group name with its leading '/' dropped (cgroup paths) and '%',
 * '/', control characters and DEL percent-encoded ("/tenants/a" -> "tenants%2Fa"); the root
 * group "/" is "%2F". If a flat name (rule, "uid:N") encodes like a cgroup path, the group
 * created first owns the directory.
 * Names inside io.stat and queues (which are space-separated) escape space, tab, newline and
 * backslash as octal "\040" "\011" "\012" "\134", as /proc/self/mountinfo does.
 *
 * Memory: what an open handle holds (its content, its directory listing, and while it is
 * generated the copy of the trace) is charged to the opener's uid. An unprivileged user's
 * handles hold at most CTL_MEM_PER_USER, those of all unprivileged users CTL_MEM_UNPRIV, and
 * all handles CTL_MEM_TOTAL, so root and the owner always have CTL_MEM_TOTAL - CTL_MEM_UNPRIV
 * for themselves. An open or opendir past a bound fails: EMFILE past the user's own, ENFILE
 * past a shared one (logged at most once a minute). The memory goes back to the system at
 * release (content lies in mappings of its own). The transient copies of group names made
 * while generating are not charged: they are bounded by the groups and the FUSE threads.
 *
 * Locking: ctl takes the groups registry lock (grp_*) and then, separately, the executor lock;
 * its own mem_lock is a leaf, held only to count memory. Every function may be called from
 * any thread.
 */
#ifndef CFQFS_CTL_H
#define CFQFS_CTL_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <stddef.h>
#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "sched.h"

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
	const char *device_info;     /* content of `device`, fixed for the mount (copied);
					NULL: the file says "unknown" */
};

/* Bounds of the memory open control handles hold (see "Memory" above) [bytes]. One trace
 * of SCHED_TRACE_MAX records takes about 3.5 MiB, and 2.5 MiB more while it is generated. */
#define CTL_MEM_PER_USER (16u << 20)
#define CTL_MEM_UNPRIV (48u << 20)
#define CTL_MEM_TOTAL (64u << 20)

/* Returns NULL on allocation failure. */
struct ctl *ctl_create(const struct ctl_options *opts);
/* Checks the memory accounting's invariants: 0, or -EFAULT with what is broken in buf. */
int ctl_check(struct ctl *c, char *buf, size_t len);
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

/*
 * Parsers of the text written to the control files (and of `cfqfs set` arguments). Pure: no
 * state, no lock, any thread. `buf` holds one write(2)'s bytes, not NUL-terminated; at most
 * one trailing newline is trimmed. On failure the out-parameter is unchanged.
 */
/* scheduler: a policy name, exactly. Returns 0 and sets *out, or -EINVAL. */
int ctl_parse_policy(const char *buf, size_t size, enum sched_policy *out);
/*
 * iosched/TUNABLE: a strict decimal (optional sign, then digits; at most 31 bytes; no
 * blank, NUL or other byte). Returns 0 and sets *out, or -EINVAL (also on overflow). The range
 * is the scheduler's to check (sched_tunable_set).
 */
int ctl_parse_value(const char *buf, size_t size, int64_t *out);
/* groups/DIR/weight: a strict decimal in [SCHED_WEIGHT_MIN, SCHED_WEIGHT_MAX]. Returns 0 and
 * sets *out, or -EINVAL. */
int ctl_parse_weight(const char *buf, size_t size, uint32_t *out);

/* What a `cfqfs set` argument writes to (the return value of ctl_parse_set_arg). */
enum ctl_set_kind {
	CTL_SET_SCHEDULER, /* "scheduler=NAME" -> "scheduler" */
	CTL_SET_TUNABLE,   /* "TUNABLE=N" (TUNABLE of [a-z0-9_]) -> "iosched/TUNABLE" */
	CTL_SET_WEIGHT,	   /* "weight:GROUP=N" (GROUP up to the last '=') -> "groups/DIR/weight" */
	CTL_SET_TRACE,	   /* "trace=N" -> "trace" */
};
/* Room for the longest file ctl_parse_set_arg names: "groups/" + NAME_MAX + "/weight". */
#define CTL_SET_FILE_MAX (NAME_MAX + 16)
/*
 * Parses one `cfqfs set` argument (NUL-terminated). Writes the control file it names, relative
 * to the control directory, into file (size >= CTL_SET_FILE_MAX always fits) and points *value
 * into arg at the value to write (borrowed from arg; the value itself is not checked here: the
 * control file's parser does that). Returns the enum ctl_set_kind, -EINVAL for a malformed
 * argument, or -ENAMETOOLONG when GROUP's directory name exceeds NAME_MAX or the result does
 * not fit in size. file and *value are unspecified on failure.
 */
int ctl_parse_set_arg(const char *arg, char *file, size_t size, const char **value);

#endif /* CFQFS_CTL_H */
