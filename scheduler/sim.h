/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sim.h - a deterministic discrete-event simulator driving one struct sched (sched.h) with the
 * device model (device.h) and synthetic per-process workloads. Pure: simulated time only, no
 * threads, no clock; every random choice comes from a splitmix64 stream seeded from sim.seed.
 *
 * Loop. Events (process wake-up, device completion, scheduler timer) sit in a min-heap ordered
 * by (time, sequence number). Each step pops one event, handles it (a completion calls
 * sched_complete(), refills the freed slot, and only then lets the owning process react, as
 * the daemon answers a request after asking the scheduler again), then dispatches while the
 * device has a free slot (fewer than queue_depth, by default dev_depth(), I/Os in flight):
 * sched_dispatch(now) -> dev_issue().
 * When dispatch returns NULL the next wake-up is sched_next_event(). With `check` set,
 * sched_check() runs after every step and a failure stops the run.
 *
 * A test reads like:
 *     struct sim_config cfg; sim_config_default(&cfg, SCHED_POLICY_CFQ, "hdd", seed);
 *     struct sim *s = sim_create(&cfg);
 *     sim_set_tunable(s, "slice_idle", 8);
 *     sim_add_group(s, SCHED_ROOT_GROUP, 200, 200, &g);
 *     struct sim_proc_spec ps; sim_proc_default(SIM_SEQ_READER, &ps); ps.group = g; ...
 *     sim_add_proc(s, &ps, &idx);
 *     sim_run(s, 10 * SIM_S);          (may be called again to continue; stats are cumulative)
 *     sim_proc_stats(s, idx)->bytes ...
 *     sim_destroy(s);
 *
 * Locking: none; one struct sim belongs to one thread.
 */
#ifndef CFQFS_SIM_H
#define CFQFS_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "device.h"
#include "sched.h"

#define SIM_S (1000ull * SCHED_NS_PER_MS)

/* ---------------------------------------------------------------------------------------- */
/* Latency histogram: log-linear, 8 sub-buckets per power of two (<= 12.5% relative error);
 * mean and max are exact. */
#define SIM_HIST_SUB 8u
#define SIM_HIST_BUCKETS (64u * SIM_HIST_SUB)
struct sim_hist {
	uint64_t count[SIM_HIST_BUCKETS]; /* samples per bucket */
	uint64_t total;			  /* samples */
	sched_ns sum;			  /* [ns] */
	sched_ns max;			  /* [ns] */
};
void sim_hist_add(struct sim_hist *h, sched_ns v);
/* The permille-th percentile [ns] (990 = p99): upper bound of its bucket, clamped to max;
 * 0 when empty. Cannot fail. */
sched_ns sim_hist_percentile(const struct sim_hist *h, unsigned permille);
/* Mean [ns], 0 when empty. */
sched_ns sim_hist_mean(const struct sim_hist *h);

/* ---------------------------------------------------------------------------------------- */
/* Configuration */

struct sim_config {
	enum sched_policy policy;
	struct dev_params dev;	/* device model */
	uint64_t seed;		/* workload PRNG seed */
	bool check;		/* sched_check() after every step (tests: on) */
	size_t max_events;	/* [count] safety stop for a run (0 = unlimited) */
	/* [count] I/Os the harness keeps on the device, like a driver's tag depth (a SATA NCQ
	 * disk takes 31): those beyond the heads wait inside the device, served in issue order.
	 * 0 (default) = dev_depth(): one I/O per head, nothing waits in the device. */
	unsigned queue_depth;
	/* Deliver no future timer while nothing is queued, as the daemon's executor does
	 * (sched_next_event() in sched.h allows it): the dispatch sequence must not change. */
	bool lazy_timers;
};

/* Defaults: `dev_name` as for dev_params_parse() ("hdd" if NULL or invalid), check on.
 * Cannot fail. */
void sim_config_default(struct sim_config *cfg, enum sched_policy policy, const char *dev_name,
			uint64_t seed);

/* ---------------------------------------------------------------------------------------- */
/* Workloads: one generator per simulated process (one io context). */

enum sim_kind {
	/* Reads req_size sequentially through `file` (wrapping at file_size), keeping `depth`
	 * requests in flight; after each completion waits `think` before the next issue. */
	SIM_SEQ_READER = 0,
	/* Reads req_size at uniformly random req_size-aligned offsets of `file` (file_size), with
	 * `depth` in flight (default 1) and `think` between a completion and the next issue. */
	SIM_RAND_READER = 1,
	/* Buffered (async) streaming writer: sequential writes of req_size to `file`, keeping up to
	 * `depth` (default 64) in flight, as writeback would. */
	SIM_BUF_WRITER = 2,
	/* fs_mark-shaped: per file, `burst` async writes of req_size (all in flight at once), then
	 * when they are done an fsync (sync, len 0); then `think` and a new file id. Counts files. */
	SIM_FSYNC_WRITER = 3,
	/* Interactive: a burst of `burst` sequential reads of req_size at a random offset of `file`
	 * (depth in flight), then `think`, repeat. Records each burst's completion time. */
	SIM_INTERACTIVE = 4,
	/* pgbench-shaped database backend: per transaction, `burst` sync reads of req_size at
	 * uniformly random req_size-aligned offsets of `file` (its heap pages; up to `depth`
	 * in flight, default 1, back to back); then it takes the commit lock (PostgreSQL's
	 * WALWriteLock: one per struct sim, shared by every committer of the sim whatever its
	 * group; waiters queue FIFO), appends req_size bytes to the WAL (one file, SIM_WAL_FILE,
	 * shared by every committer; flagged as the daemon flags a write-through write: async
	 * with SCHED_RQ_CALLER at the committer's first commit, then a journal's write, sync
	 * no-idle, fs/rqmap.h) and, when that completes, fdatasyncs the WAL. When the fdatasync completes the lock
	 * goes to the first waiter, which issues its WAL write `handoff` later (lock release ->
	 * the woken waiter runs; nobody can take the lock in between), and the transaction is
	 * counted (units; unit: first read -> fdatasync done); the next one starts `think`
	 * later (0: at once; the client's round trip). A waiter is not thinking: it queues
	 * nothing while it waits. A stopped committer issues nothing more: the lock handed to
	 * it, or held by it when its WAL write completes, is passed on at once. */
	SIM_COMMITTER = 5,
};

/* The WAL file id of the committers (SIM_COMMITTER): the top bytes spell "WAL", away from the
 * ids sim_add_proc() assigns (1 + index) and the fsync writer's (file + n << 32). */
#define SIM_WAL_FILE 0x57414c0000000000ull

struct sim_proc_spec {
	enum sim_kind kind;
	uint64_t queue_key;	/* io context (tgid); 0 = assigned 1000 + index */
	uint32_t group;		/* group id from sim_add_group() or SCHED_ROOT_GROUP */
	uint8_t ioclass;	/* enum sched_class */
	uint8_t level;		/* 0..7 */
	uint64_t file;		/* file id (fsync writer: first file id); 0 = assigned 1 + index */
	uint64_t file_size;	/* [bytes] offsets wrap / are drawn within it */
	uint64_t req_size;	/* [bytes] per request */
	unsigned depth;		/* [count] requests in flight, >= 1 */
	unsigned burst;		/* [count] interactive: reads per burst; fsync: writes per file;
				   committer: reads per transaction (0 = commits only) */
	sched_ns think;		/* [ns] pause after a completion (burst/file/transaction for
				   those kinds) */
	sched_ns handoff;	/* [ns] committer: commit lock released -> the next waiter runs */
	sched_ns start;		/* [ns] first issue */
	sched_ns stop;		/* [ns] no new issue from this time on; 0 = never */
	bool sync_writes;	/* writers: flag writes SYNC (O_SYNC/O_DIRECT) */
	/* sequential kinds (reader, buffered writer): the stream starts at `offset`. With
	 * `streams` > 1 the process issues from that many cursors in turn, one request each:
	 * cursor i starts at offset + i * chunk and, after every `chunk` bytes, jumps over the
	 * other cursors' chunks, so together they cover the file in alternate chunks (writeback
	 * contexts sharing one file and one request pool). Wraps restart a cursor at its start. */
	uint64_t offset;	/* [bytes] first offset, offset + req_size <= file_size */
	unsigned streams;	/* [count] cursors, 0 or 1 = one plain stream, at most SIM_MAX_STREAMS */
	uint64_t chunk;		/* [bytes] run of one cursor (streams > 1), a multiple of req_size */
	/* one plain stream (streams <= 1) in runs of `chunk` bytes with `skip` bytes left out
	 * after each run: N processes at offsets i * chunk with skip (N - 1) * chunk read one file
	 * together, interleaved, as dump(8)'s readers do. 0 = contiguous. */
	uint64_t skip;		/* [bytes] */
};
#define SIM_MAX_STREAMS 8u

/* Defaults for a kind: BE level 4 in the root group, 128 KiB sequential / 8 KiB committer /
 * 4 KiB otherwise, depth 1 (buffered writer: 64), burst 8 (interactive) / 16 (fsync) / 4
 * (committer), think 0 (interactive: 100 ms), handoff 300 us (committer), file 1 GiB. Cannot
 * fail. */
void sim_proc_default(enum sim_kind kind, struct sim_proc_spec *spec);

/* ---------------------------------------------------------------------------------------- */
/* Results: cumulative since sim_create(). Copy a struct to measure a window. */

struct sim_proc_stats {
	uint64_t bytes;		 /* [bytes] completed */
	uint64_t ios;		 /* completed requests (pre-merge; fsyncs included) */
	uint64_t issued;	 /* requests enqueued */
	struct sim_hist lat;	 /* [ns] enqueue -> complete, per request */
	struct sim_hist wait;	 /* [ns] enqueue -> dispatch, per request */
	struct sim_hist unit;	 /* [ns] interactive: burst start -> last completion;
				    fsync writer: first write -> fsync done; committer:
				    transaction start (first read) -> WAL fdatasync done */
	uint64_t units;		 /* interactive bursts / fsync-writer files / committer
				    transactions completed */
	sched_ns dev_time;	 /* [ns] device busy time of its I/Os (start -> complete) */
};

struct sim_group_stats {
	uint64_t bytes;		 /* [bytes] completed by its processes */
	uint64_t ios;		 /* completed requests */
	sched_ns dev_time;	 /* [ns] device busy time of its I/Os */
	struct sim_hist lat;	 /* [ns] request latency */
};

struct sim_totals {
	sched_ns now;		 /* [ns] simulated time reached */
	uint64_t bytes;		 /* [bytes] completed */
	uint64_t ios;		 /* requests completed */
	uint64_t dispatches;	 /* I/Os issued to the device (post-merge) */
	uint64_t switches;	 /* dispatches whose queue_key differs from the previous one */
	uint64_t events;	 /* events processed */
	uint64_t timer_stalls;	 /* dispatch NULL while sched_next_event() <= now */
	uint64_t timers_withheld; /* future timers not waited for (lazy_timers, nothing queued) */
	double throughput;	 /* [bytes/s] bytes / now */
	double avgqu_sz;	 /* [requests] time-average of enqueued-not-completed (iostat) */
	double await_ms;	 /* [ms] mean enqueue -> complete (iostat await) */
	double util;		 /* [0..1] device busy time / (now * depth) */
	uint64_t hash;		 /* FNV-1a 64 of the dispatch sequence */
};

/* ---------------------------------------------------------------------------------------- */

struct sim;

/* Creates a simulator at time 0 with the root group only. Returns NULL on invalid config or
 * allocation failure. The caller owns it (sim_destroy()). */
struct sim *sim_create(const struct sim_config *cfg);
/* Stops every process, withdraws queued requests, completes those in flight, and frees it. */
void sim_destroy(struct sim *s);

/* The scheduler being driven (for tunables/info/stats). Do not enqueue into it directly. */
struct sched *sim_sched(struct sim *s);
/* sched_tunable_set() on the simulated scheduler: 0, -ENOENT, -EINVAL. */
int sim_set_tunable(struct sim *s, const char *name, int64_t value);
/* sched_group_create(): 0 and *id, or its error. */
int sim_add_group(struct sim *s, uint32_t parent, uint32_t weight, uint32_t leaf_weight,
		  uint32_t *id);
/* Adds a process; *idx (may be NULL) is its index for sim_proc_stats(). Returns 0, -EINVAL
 * (bad spec), -ENOMEM. State unchanged on failure. */
int sim_add_proc(struct sim *s, const struct sim_proc_spec *spec, unsigned *idx);
/* Stops issuing from process idx at `when` (>= now); its outstanding requests complete. */
int sim_proc_stop(struct sim *s, unsigned idx, sched_ns when);

/*
 * Runs until simulated time `until` [ns] (events at exactly `until` are processed). May be called
 * again with a later time. Returns 0; -EFAULT if sched_check() failed or the scheduler broke a
 * contract (message in sim_error()); -ELOOP if the run exceeded max_events or the scheduler
 * kept asking for a wake-up in the past; the scheduler's error if an enqueue failed.
 */
int sim_run(struct sim *s, sched_ns until);
/* Why the last run failed ("" if it did not). Cannot fail. */
const char *sim_error(const struct sim *s);

sched_ns sim_now(const struct sim *s);
unsigned sim_nr_procs(const struct sim *s);
/* NULL for a bad index. */
const struct sim_proc_stats *sim_proc_stats(const struct sim *s, unsigned idx);
/* 0 and *out, or -EINVAL if no process of the sim belongs to `group`. */
int sim_group_stats(const struct sim *s, uint32_t group, struct sim_group_stats *out);
void sim_get_totals(const struct sim *s, struct sim_totals *out);

/* Jain's fairness index of n values: (sum x)^2 / (n * sum x^2), 1.0 = perfectly fair. */
double sim_jain(const double *x, size_t n);

#endif /* CFQFS_SIM_H */
