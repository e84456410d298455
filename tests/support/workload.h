/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * workload.h - timed reader/writer processes for the fairness integration tests.
 *
 * A run forks one child per wl_spec. Each child puts itself where the spec says (cgroup, I/O
 * priority, comm, uid/gid), opens its file and reports ready; the parent then fixes a common
 * start time T0 (a little in the future) in shared memory, so every child issues its first
 * request at T0 + spec.start_s and its last one before T0 + spec.stop_s. Every completed request
 * is recorded in shared memory (completion time relative to T0, latency, bytes), so the parent
 * can compute bytes, IOPS, latency percentiles and service gaps over any time window, e.g. only
 * the span where all readers overlapped, or before and after moving a reader to another cgroup.
 *
 * Children never call Criterion: they report through their slot (err + msg) and exit code.
 * They die with the parent (PR_SET_PDEATHSIG = SIGKILL), so a test process killed by a timeout
 * leaves no reader holding the mount or a cgroup busy.
 *
 * Not thread-safe: one test thread drives a run.
 */
#ifndef CFQFS_TEST_WORKLOAD_H
#define CFQFS_TEST_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgtest.h"
#include "mount.h"

#define WL_MAX 8	   /* children per run */
#define WL_MAX_REC 65536   /* recorded completions per child (more: the run fails) */

/* ioprio classes as ionice(1) numbers them */
#define WL_CLASS_KEEP 0
#define WL_CLASS_RT 1
#define WL_CLASS_BE 2
#define WL_CLASS_IDLE 3

enum wl_kind {
	WL_SEQ_READ = 0,    /* pread(bs) from `offset` on (leaving `skip` bytes out after each
			       read), wrapping at EOF back to `offset` */
	WL_RAND_READ = 1,   /* pread(bs) at uniformly random bs-aligned offsets (seeded) */
	WL_WRITE_FSYNC = 2, /* pwrite(bs) until write_chunk bytes, then fsync (fdatasync with
			       `datasync`); one record per cycle */
	WL_AIO_READ = 3,    /* O_DIRECT sequential reads, `depth` in flight through the kernel's
			       native AIO (io_submit), as fio's libaio engine; FUSE sends them as
			       background requests */
	WL_COPY = 4,	    /* copy_file_range(bs) of `path` from `offset` on, to the same
			       offsets of "<path>.copy" (created), wrapping at EOF, as cp does;
			       a record's bytes are those copied */
};

struct wl_spec {
	const char *label;	/* for messages */
	const char *path;	/* the file (on the mount); created by WL_WRITE_FSYNC if missing */
	enum wl_kind kind;
	size_t bs;		/* [bytes] per read or write; 0: 128 KiB */
	size_t write_chunk;	/* [bytes] WL_WRITE_FSYNC: written per fsync; 0: 1 MiB */
	size_t wrap;		/* [bytes] WL_WRITE_FSYNC: offset wraps here; 0: 16 MiB */
	bool datasync;		/* WL_WRITE_FSYNC: fdatasync() instead of fsync() */
	const struct cgt *cg;	/* cgroup to join before opening; NULL: the parent's */
	int ioclass;		/* WL_CLASS_*; KEEP: inherit */
	int level;		/* 0..7 for RT and BE */
	bool set_ids;		/* become uid/gid (setgroups(0)) after joining the cgroup */
	uid_t uid;
	gid_t gid;
	const char *comm;	/* prctl(PR_SET_NAME) before opening; NULL: keep */
	unsigned think_us;	/* [us] pause after each request */
	double start_s;		/* [s] after T0: first request */
	double stop_s;		/* [s] after T0: no request starts later; 0: the run's duration */
	uint64_t seed;		/* WL_RAND_READ; 0: derived from the child's index */
	unsigned depth;		/* WL_AIO_READ: reads in flight, 1..16; 0: 4 */
	uint64_t offset;	/* [bytes] WL_SEQ_READ: first offset */
	uint64_t skip;		/* [bytes] WL_SEQ_READ: left out after each read; N readers at
				   offsets i * bs with skip (N - 1) * bs read one file together,
				   interleaved (dump(8)'s readers) */
};

/* One completed request. */
struct wl_rec {
	uint64_t end_ns;  /* [ns] completion, relative to T0 */
	uint32_t lat_us;  /* [us] issue to completion (a whole write+fsync cycle for writers) */
	uint32_t bytes;   /* [bytes] */
};

struct wl_slot;

/* A run. Zero-initialise before wl_start(); wl_free() makes it reusable. */
struct wl_run {
	size_t n;
	struct wl_spec spec[WL_MAX];	/* copies; spec[i].path points into path[i] */
	char path[WL_MAX][4096];	/* the specs' paths, copied (callers' may be transient) */
	pid_t pid[WL_MAX];	/* 0 once reaped */
	int status[WL_MAX];	/* raw wait status once reaped */
	struct wl_slot *slot;	/* shared memory, n slots */
	size_t map_len;		/* [bytes] */
	uint64_t *t0;		/* shared: T0 [ns, CLOCK_MONOTONIC], 0 until fixed */
	double dur_s;		/* [s] default stop time */
};

/*
 * Forks the children, waits (up to 15 s) until each is ready, then sets T0 = now + 100 ms.
 * Returns 0, or -errno / -EIO (a child failed to set up: its message is on stderr; every child
 * is then killed and reaped).
 */
int wl_start(struct wl_run *r, const struct wl_spec *specs, size_t n, double dur_s);

/* Child i's pid (for cgt_move from the parent during a run). */
pid_t wl_pid(const struct wl_run *r, size_t i);

/* Sleeps until T0 + t_s. */
void wl_sleep_until(const struct wl_run *r, double t_s);

/*
 * Waits for every child (until T0 + the latest stop + 20 s, then SIGKILL). Returns 0 if all
 * exited 0, else -EIO with the children's messages on stderr. Records stay readable.
 */
int wl_finish(struct wl_run *r);

/* Kills and reaps any child left, unmaps the records. Idempotent; cannot fail. */
void wl_free(struct wl_run *r);

/* --- results over a window [from_s, to_s) of completion times relative to T0 --------------- */

uint64_t wl_bytes(const struct wl_run *r, size_t i, double from_s, double to_s);
uint64_t wl_ops(const struct wl_run *r, size_t i, double from_s, double to_s);
/* Latencies [ms] of child i's requests completed in the window; 0 when there are none. */
double wl_lat_mean_ms(const struct wl_run *r, size_t i, double from_s, double to_s);
double wl_lat_max_ms(const struct wl_run *r, size_t i, double from_s, double to_s);
/* p in (0, 1]: nearest-rank percentile */
double wl_lat_pct_ms(const struct wl_run *r, size_t i, double p, double from_s, double to_s);
/*
 * Longest time [s] in [from_s, to_s) during which none of the children idx[0..nidx) completed a
 * request (counting from from_s to the first completion and from the last to to_s).
 */
double wl_max_gap_s(const struct wl_run *r, const size_t *idx, size_t nidx, double from_s,
		    double to_s);
/* Total records and whether a child lost records (WL_MAX_REC). */
uint32_t wl_nrec(const struct wl_run *r, size_t i);

/* Jain's fairness index of x[0..n): (sum x)^2 / (n * sum x^2); 1 = equal. 0 for all-zero. */
double wl_jain(const double *x, size_t n);

/* --- setup helpers ---------------------------------------------------------------------- */

/* Creates `path` with `size` bytes of pseudo-random data (mode 0644). Returns 0 or -errno. */
int wl_make_file(const char *path, size_t size);

/*
 * Builds a configuration text into buf: `rules = ( extra, <cgt_rules(cgs)> );` followed by
 * `tail` (may be NULL). `extra` holds complete rule entries separated by commas, without a
 * trailing comma (may be NULL). Without any rule the rules list is left out. Returns buf, or
 * NULL when it does not fit.
 */
char *wl_conf(char *buf, size_t len, const char *extra, struct cgt *const *cgs, size_t n,
	      bool force, const char *tail);

/*
 * Writes conf_text (may be NULL: no file) to <m->base>/cfqfs.conf and starts the daemon with
 * `-c that-file -o opts` (opts may be NULL) on a prepared fixture. Fails the test (with the
 * daemon log) when the mount does not come up. m must come from mnt_prepare().
 */
void wl_cr_mount(struct mnt *m, const char *conf_text, const char *opts);

/*
 * Reads `key` (e.g. "rbytes", "wbytes") of group `group` from <mount>/.cfqfs/io.stat (one line
 * per group: "NAME key=value ..."). Returns 0 and *val, -ENOENT when the mount has no io.stat
 * (no control directory in this build) or no such group/key, or another -errno.
 */
int wl_iostat(struct mnt *m, const char *group, const char *key, uint64_t *val);

/* wl_iostat()'s value, or 0 when the group (or io.stat) is not there: a group appears in
 * io.stat with its first request. Cannot fail. */
uint64_t wl_iostat_or_0(struct mnt *m, const char *group, const char *key);

/*
 * The fairness suites' fixture: .init skips loudly without /dev/fuse or a usable cgroup
 * hierarchy (filling *h) and prepares the temp dirs of *m; .fini frees the workload run,
 * unmounts and removes every cgroup the test made, even after a failure.
 */
void wl_cr_fair_setup(struct mnt *m, struct cgt_hier *h);
void wl_cr_fair_teardown(struct mnt *m, struct wl_run *r);

#endif /* CFQFS_TEST_WORKLOAD_H */
