/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cg_proc.h - the thin I/O layer of cgroup/: the only file of the folder that reads files or
 * makes syscalls. It reads with bounded buffers (O_RDONLY | O_CLOEXEC | O_NOFOLLOW, retrying
 * on EINTR) and hands the text to the pure parsers of cg_parse.h.
 *
 * Errors: a task that has gone (or never existed) gives -ESRCH from every per-task function,
 * whatever the kernel's way of saying it (ENOENT on open, ESRCH on read or ioprio_get). Other
 * failures pass through as -errno; a file larger than the caller's buffer is -EFBIG.
 * Every function is thread-safe (no shared state) and leaves no fd open on any path.
 *
 * `proc` below is the procfs root, normally "/proc"; tests point it at a recorded tree.
 */
#ifndef CFQFS_CG_PROC_H
#define CFQFS_CG_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cg_parse.h"

/* Largest /proc/TID/cgroup read [bytes] (v1 hosts list ~15 lines; paths can be long). */
#define CG_PROC_CGROUP_MAX 65536
/* Largest stat/status/weight/controllers file read [bytes]. */
#define CG_PROC_SMALL_MAX 4096
/* Largest mountinfo read [bytes]. */
#define CG_PROC_MOUNTINFO_MAX (1u << 20)

/*
 * Reads the whole file `path` into buf[bufsz] (not NUL-terminated) and sets *len.
 * Returns 0, -EFBIG (does not fit in bufsz), or -errno of open/read.
 */
int cg_proc_read_file(const char *path, char *buf, size_t bufsz, size_t *len);

/* Reads and parses <proc>/<tid>/stat. Returns 0, -ESRCH, or a cg_parse_stat() error. */
int cg_proc_stat(const char *proc, pid_t tid, struct cg_stat *out);

/* Reads and parses <proc>/<tid>/status. Returns 0, -ESRCH, or a cg_parse_status() error. */
int cg_proc_status(const char *proc, pid_t tid, struct cg_status *out);

/*
 * Reads <proc>/<tid>/cgroup into buf[bufsz] (use CG_PROC_CGROUP_MAX) and parses it; spans in
 * *out point into buf. Returns 0, -ESRCH, -EFBIG, or a cg_parse_proc_cgroup() error.
 */
int cg_proc_cgroup(const char *proc, pid_t tid, char *buf, size_t bufsz, size_t *len,
		   struct cg_proc_cgroup *out);

/* ioprio_get(IOPRIO_WHO_PROCESS, tid) -- tid 0 means the calling thread. Returns the raw value
 * (>= 0) or -ESRCH / -errno. */
int cg_proc_ioprio(pid_t tid);

/* ioprio_set(IOPRIO_WHO_PROCESS, tid, ioprio) for tests and tools. Returns 0 or -errno. */
int cg_proc_set_ioprio(pid_t tid, int ioprio);

/*
 * Finds the cgroup mounts from a mountinfo file (normally <proc>/self/mountinfo) and whether
 * the unified hierarchy has the io controller (its root cgroup.controllers lists "io"; false
 * when unreadable). Returns 0, -errno of the read, or a cg_parse_mountinfo() error.
 */
int cg_proc_mounts(const char *mountinfo_path, struct cg_mounts *out, bool *unified_has_io);

/*
 * Reads one weight file `f` of the cgroup `path` under mount `m` and maps it to 10..1000
 * (cg_parse_weight; `dev` as there). Namespaced and odd paths are refused (cg_resolve_dir).
 * Returns 0 and sets *weight, -ENOENT (no such file or cgroup, or not mounted), -EINVAL,
 * -ERANGE, -ENAMETOOLONG, or -errno.
 */
int cg_proc_weight_file(const struct cg_mount *m, const char *path, enum cg_weight_file f,
			dev_t dev, uint32_t *weight);

/*
 * A cgroup's weight from its own files, in the order of preference: io.bfq.weight and
 * io.weight in the unified hierarchy (cgroup `v2_path`), then blkio.bfq.weight and blkio.weight
 * in the v1 blkio hierarchy (`blkio_path`). Either path may be NULL (no such line). A file that
 * is absent, unreadable or malformed is skipped. Returns 0 and sets *weight and *which, or
 * -ENOENT when no file gave a weight.
 */
int cg_proc_group_weight(const struct cg_mounts *ms, const char *v2_path, const char *blkio_path,
			 dev_t dev, uint32_t *weight, enum cg_weight_file *which);

#endif
