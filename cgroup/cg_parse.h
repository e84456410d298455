/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cg_parse.h - pure parsers for the text of /proc and cgroupfs files.
 *
 * Every function here is a pure function over a (pointer, length) buffer: no I/O, no clock, no
 * allocation, no global state, so each can be unit- and fuzz-tested with recorded file contents.
 * Inputs are NOT required to be NUL-terminated; an embedded NUL inside `len` is malformed input.
 * Outputs are written only on success unless a function says otherwise.
 *
 * Errors: -EINVAL malformed input, -ERANGE a number outside its documented range,
 * -ENAMETOOLONG a string that does not fit the caller's buffer, -ENOENT well-formed input that
 * lacks what was asked for. Nothing here can crash on any byte sequence.
 */
#ifndef CFQFS_CG_PARSE_H
#define CFQFS_CG_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Longest line accepted in /proc/PID/cgroup [bytes, without '\n']; longer lines are -EINVAL. */
#define CG_LINE_MAX 8192
/* Longest comm accepted from /proc/PID/stat [bytes incl. NUL]. TASK_COMM_LEN is 16; kernel
 * worker names shown in stat can be longer (up to 64 with the workqueue suffix). */
#define CG_COMM_MAX 64
/* Group names and cached cgroup paths are kept in buffers of this size [bytes incl. NUL]. */
#define CG_NAME_MAX 1024

/* ---------------------------------------------------------------------------------------- */
/* /proc/PID/cgroup */

/* A byte range inside the caller's text. len == 0 with present == false: absent. */
struct cg_span {
	size_t off;   /* [bytes] from the start of the parsed text */
	size_t len;   /* [bytes] */
	bool present; /* the line was found */
};

/*
 * The lines of one /proc/PID/cgroup file that classification cares about, as spans into the
 * parsed text (zero-copy: valid as long as the text is). Each path starts with '/'.
 * Invariant: a present span lies inside the text and contains no '\n' and no NUL.
 */
struct cg_proc_cgroup {
	struct cg_span v2;	/* path of the "0::" line (unified hierarchy) */
	struct cg_span blkio;	/* path of the v1 line whose controllers include "blkio" or "io" */
	struct cg_span systemd; /* path of the v1 "name=systemd" line */
	unsigned nr_v1;		/* [lines] v1 hierarchies listed (ID != 0) */
};

/* Which line names the caller's cgroup (config key `cgroup_line`). */
enum cg_select {
	/*
	 * The unified "0::" line when the unified hierarchy holds the io controller or is the only
	 * hierarchy listed; else the blkio (or io) line; else name=systemd; else "0::".
	 */
	CG_SELECT_AUTO = 0,
	CG_SELECT_V2 = 1,    /* always the "0::" line (-ENOENT without one) */
	CG_SELECT_BLKIO = 2, /* always the blkio/io line (-ENOENT without one) */
};

/* Which hierarchy a selected path came from. */
enum cg_hier {
	CG_HIER_V2 = 0,
	CG_HIER_BLKIO = 1,
	CG_HIER_SYSTEMD = 2,
};

/*
 * Parses the text of /proc/PID/cgroup: one "hierarchy-ID:controller-list:path\n" per line.
 * The path is everything after the second ':' (cgroup names may contain ':'), taken verbatim:
 * namespaced paths ("/../x") are kept as opaque keys, never normalised.
 * Malformed (-EINVAL): empty text, a missing final '\n' (a truncated read), an embedded NUL, a
 * line without two ':', a non-decimal ID, an ID 0 line with controllers, a path not starting
 * with '/', a control character in a path (so CRLF text is rejected: cgroup names never hold
 * '\r' in practice and a key with control bytes would corrupt io.stat and metrics output), a
 * line over CG_LINE_MAX, a duplicate "0::" / blkio / name=systemd line.
 * Returns 0 and fills *out; on failure *out is unspecified.
 */
int cg_parse_proc_cgroup(const char *text, size_t len, struct cg_proc_cgroup *out);

/*
 * Chooses one path per `sel` (see enum cg_select). `unified_has_io`: the unified hierarchy's
 * root cgroup.controllers lists "io" (the I/O layer reads it; passing it in keeps this pure).
 * Returns 0 and sets *span and *hier, or -ENOENT when no line fits. Cannot fail otherwise.
 */
int cg_select_path(const struct cg_proc_cgroup *pc, enum cg_select sel, bool unified_has_io,
		   struct cg_span *span, enum cg_hier *hier);

/*
 * One call for the common case: parse + select + copy the path into out[outsz] (NUL-terminated).
 * Returns 0, any error of the two functions above, or -ENAMETOOLONG when the path does not fit
 * (out is then unchanged). `hier` may be NULL.
 */
int cg_parse_cgroup_path(const char *text, size_t len, enum cg_select sel, bool unified_has_io,
			 char *out, size_t outsz, enum cg_hier *hier);

/* true when a cgroup path is relative to another cgroup namespace ("/.." or "/../..."): such a
 * path is an opaque key and must never be resolved against a cgroupfs mount. */
bool cg_path_is_namespaced(const char *path);

/* ---------------------------------------------------------------------------------------- */
/* /proc/PID/stat and /proc/PID/status */

struct cg_stat {
	pid_t pid;		/* field 1: the task id the file belongs to */
	char comm[CG_COMM_MAX]; /* field 2 without the parentheses, NUL-terminated */
	char state;		/* field 3 */
	pid_t ppid;		/* field 4 */
	int nice;		/* field 19: -20..19 */
	uint64_t start_time;	/* field 22 [clock ticks since boot]: with pid, a unique task key */
};

/*
 * Parses /proc/PID/stat. comm may hold spaces and parentheses, so it runs from the first '('
 * to the LAST ')' of the text. Needs at least fields 1..22 (later fields are ignored).
 * Returns 0, -EINVAL (malformed, NUL inside, fewer fields, nice outside -20..19), or
 * -ENAMETOOLONG (comm longer than CG_COMM_MAX - 1). *out unspecified on failure.
 */
int cg_parse_stat(const char *text, size_t len, struct cg_stat *out);

struct cg_status {
	pid_t tgid;	/* "Tgid:" */
	uid_t uid[4];	/* "Uid:" real, effective, saved, filesystem */
	gid_t gid[4];	/* "Gid:" real, effective, saved, filesystem */
	uint64_t sig_pending; /* "SigPnd:" | "ShdPnd:" (bit N-1: signal N pending); 0 if absent */
};

/*
 * Parses /proc/PID/status (one "Key:\tvalue" per line; the Name line is escaped by the kernel,
 * so no line can be forged through a comm). Tgid is required, Uid/Gid optional (left at
 * (uid_t)-1 when absent), SigPnd/ShdPnd optional (one hex mask each, up to 16 digits).
 * Returns 0, -EINVAL (malformed, NUL inside, no Tgid line).
 */
int cg_parse_status(const char *text, size_t len, struct cg_status *out);

/* ---------------------------------------------------------------------------------------- */
/* Weights: everything lands on the scheduler's scale, SCHED_WEIGHT_MIN..MAX (10..1000). */

/*
 * Weight mapping (the decision, and why). Three kernel scales exist:
 *   - CFQ   blkio.weight             10..1000, default 500  -> used as is;
 *   - BFQ   blkio.bfq.weight (v1) and io.bfq.weight (v2): the same per-group BFQ value,
 *           1..1000 (BFQ_MIN/MAX_WEIGHT), default 100       -> used as is, 1..9 raised to 10
 *           (values up to 10000, from kernels patched to a wider BFQ range, clamp to 1000);
 *   - v2    io.weight                1..10000, default 100  -> 10 * sqrt(w), rounded.
 * io.weight spans a 10^4 ratio and the scheduler 10^2, so some compression is unavoidable. A
 * power law is the only monotone map under which a ratio between two weights maps to one
 * ratio whatever their absolute values (here r -> sqrt(r)), and exponent 1/2 fixes both ends
 * (1 -> 10, 10000 -> 1000) and the default (100 -> 100). A default of 100 then means the
 * same on every host: io.bfq.weight's default 100 (used as is) and io.weight's default 100
 * land on the same weight, so a systemd unit's IOWeight= and a container's blkio weight give
 * one cfqfs weight whether or not the host runs BFQ. Rejected alternatives: a piecewise map
 * 1..100 -> 10..500, 100..10000 -> 500..1000 squeezes IOWeight 100:400 to 500:515 (fairness
 * between tenants vanishes); the linear 1..10000 -> 10..1000 map sends 1..100 to 10..20.
 * Consequence: a cgroup left at the kernel default weighs 100 against 500 for groups whose
 * weight comes from cfqfs's own default; set rule weights where the two kinds meet.
 */

/* The weight files, in the order cg_classify() tries them. */
enum cg_weight_file {
	CG_WFILE_IO_BFQ = 0,	/* io.bfq.weight */
	CG_WFILE_IO = 1,	/* io.weight */
	CG_WFILE_BLKIO_BFQ = 2, /* blkio.bfq.weight */
	CG_WFILE_BLKIO = 3,	/* blkio.weight */
	CG_WFILE_COUNT
};

/* File name of a weight file ("io.bfq.weight", ...); NULL for an invalid value. */
const char *cg_weight_file_name(enum cg_weight_file f);

/* io.weight value (1..10000) -> 10..1000: round(10 * sqrt(w)). Monotone non-decreasing.
 * Returns the weight, or 0 when w is outside 1..10000. */
uint32_t cg_weight_from_io(uint32_t w);
/* BFQ value (1..10000 accepted) -> clamp(w, 10, 1000). Returns 0 when w is outside 1..10000. */
uint32_t cg_weight_from_bfq(uint32_t w);

/*
 * Parses a weight file's text and maps it to 10..1000 as above.
 * Formats: io.weight and io.bfq.weight: "default W\n" then optional "MAJ:MIN W\n" lines (older
 * kernels show a bare "W\n" for io.bfq.weight, also accepted); blkio.weight and blkio.bfq.weight:
 * a bare "W\n". `dev`: the backing device of the mount; a "MAJ:MIN W" line for it overrides the
 * default (0: use the default line only). A trailing '\n' is optional here (a single value).
 * Returns 0 and sets *weight, -EINVAL (malformed, NUL inside), -ERANGE (outside the file's
 * range: io 1..10000, BFQ 1..10000, blkio 10..1000). *weight unchanged on failure.
 */
int cg_parse_weight(enum cg_weight_file f, const char *text, size_t len, dev_t dev,
		    uint32_t *weight);

/* ---------------------------------------------------------------------------------------- */
/* ioprio */

/*
 * Decodes an ioprio_get() value ((class << 13) | data) with the task's nice:
 *   class NONE -> BE, level (nice + 20) / 5 (nice clamped to -20..19), as the kernel does;
 *   RT, BE     -> that class, level = data & 7 (bits 3..12 are the 6.5+ "hint", ignored);
 *   IDLE       -> IDLE, level 7;
 *   any other  -> BE, level 4.
 * Always fills *ioclass (enum sched_class) and *level. Returns 0, or -EINVAL when the class was
 * invalid (negative ioprio, class 4..7) and BE/4 was substituted.
 */
int cg_ioprio_decode(int ioprio, int nice, uint8_t *ioclass, uint8_t *level);

/* ---------------------------------------------------------------------------------------- */
/* /proc/self/mountinfo */

/* One cgroup hierarchy's mount: paths in /proc/PID/cgroup under `root` resolve under `dir`. */
struct cg_mount {
	char dir[CG_NAME_MAX];	/* mount point, unescaped; "" when not mounted */
	char root[CG_NAME_MAX]; /* the hierarchy path mounted there (field 4), usually "/" */
};

struct cg_mounts {
	struct cg_mount v2;	/* fstype cgroup2 */
	struct cg_mount blkio;	/* fstype cgroup with the blkio controller */
};

/*
 * Parses /proc/PID/mountinfo ("ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPT...] - FSTYPE SRC
 * SUPER"; octal escapes \040 \011 \012 \134 in ROOT and MOUNTPOINT). Per hierarchy the first
 * mount whose ROOT is "/" wins, else the first mount. Lines of other filesystems are skipped;
 * a malformed cgroup line is -EINVAL. Returns 0 (hierarchies not found are left with dir ""),
 * -EINVAL, or -ENAMETOOLONG.
 */
int cg_parse_mountinfo(const char *text, size_t len, struct cg_mounts *out);

/*
 * Resolves cgroup `path` (from /proc/PID/cgroup) to a directory under mount `m` into out[outsz]:
 * strips m->root on a '/' boundary and appends the rest to m->dir. Refuses namespaced paths,
 * any "." or ".." component, and empty components other than a trailing '/'.
 * Returns 0, -ENOENT (not mounted, or the path lies outside m->root), -EINVAL (refused path),
 * -ENAMETOOLONG.
 */
int cg_resolve_dir(const struct cg_mount *m, const char *path, char *out, size_t outsz);

/* true when a cgroup.controllers text (space-separated names) lists `name`. */
bool cg_controllers_has(const char *text, size_t len, const char *name);

/* ---------------------------------------------------------------------------------------- */
/* Names */

/*
 * Copies `name` into out[outsz] (outsz >= 32). A name that does not fit is shortened,
 * deterministically and without collisions in practice: its first outsz - 18 bytes, '~', and
 * the 16 hex digits of cg_name_hash(name). Cannot fail.
 */
void cg_name_fit(const char *name, char *out, size_t outsz);

/* FNV-1a 64-bit hash of a NUL-terminated string: the stable numeric key of a group name. */
uint64_t cg_name_hash(const char *name);

#endif
