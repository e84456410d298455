/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sched.h - the public contract of the cfqfs I/O scheduler core.
 *
 * The core is a pure state machine (libuv-loop style): it owns no threads, reads no clock and
 * allocates nothing per request. Time comes in as `now` [ns, monotonic, caller's clock].
 * Requests are caller-owned and carry an intrusive node (struct sched_rq), so enqueue and
 * dispatch never allocate. Queues (one per io context) and groups are allocated when they
 * first appear and are recycled, not freed, on the request path.
 *
 * Locking: none inside. The caller serialises every call on one `struct sched` (the executor
 * holds one mutex around the core). Lock order, written once for the whole daemon:
 *     executor lock  ->  (nothing: the core calls out to no one)
 *
 * Policies behind one interface: SCHED_POLICY_CFQ (group-aware CFQ as in Linux 4.x),
 * SCHED_POLICY_DEADLINE (read/write FIFOs with expiry and sorted batches), SCHED_POLICY_NOOP
 * (FIFO with back merging).
 *
 * Request life cycle:
 *     caller fills the "caller" fields -> sched_enqueue() -> [queued; may absorb or be absorbed
 *     by a merge] -> sched_dispatch() returns it (with its merge chain) -> caller performs the
 *     I/O -> sched_complete() -> caller owns it again.
 * A queued request may be withdrawn with sched_cancel() (interrupted FUSE request).
 */
#ifndef CFQFS_SCHED_H
#define CFQFS_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Monotonic time [ns]. Compare with sched_time_after(), never with a bare '<'. */
typedef uint64_t sched_ns;
#define SCHED_NS_NEVER UINT64_MAX
#define SCHED_NS_PER_MS 1000000ull
#define SCHED_NS_PER_US 1000ull

/* Wrap-safe "a is later than b" (BFQ's bfq_gt): correct while |a - b| < 2^63 ns (292 years). */
static inline bool sched_time_after(sched_ns a, sched_ns b)
{
	return (int64_t)(a - b) > 0;
}

enum sched_policy {
	SCHED_POLICY_NOOP = 0,
	SCHED_POLICY_DEADLINE = 1,
	SCHED_POLICY_CFQ = 2,
	SCHED_POLICY_COUNT
};

/* I/O priority classes, numbered as the kernel's IOPRIO_CLASS_* so ioprio_get() maps 1:1. */
enum sched_class {
	SCHED_CLASS_RT = 1,
	SCHED_CLASS_BE = 2,
	SCHED_CLASS_IDLE = 3,
};
#define SCHED_LEVELS 8 /* levels 0 (highest) .. 7 within RT and BE */
#define SCHED_LEVEL_NORM 4

enum sched_op {
	SCHED_OP_READ = 0,
	SCHED_OP_WRITE = 1,
	SCHED_OP_FSYNC = 2,	/* whole file; length 0 */
	SCHED_OP_FDATASYNC = 3, /* whole file; length 0 */
};

/* rq->flags */
enum {
	SCHED_RQ_SYNC = 1u << 0, /* sync I/O (reads, fsync, O_SYNC/O_DSYNC/O_DIRECT writes) */
	SCHED_RQ_META = 1u << 1, /* CFQ's "prio/metadata" hint: preferred within a queue */
	SCHED_RQ_NOIDLE = 1u << 2, /* no-idle hint: do not idle on the queue after this one */
	/* an async request that its caller waits for (a write through FUSE without writeback
	 * caching), not background writeback: see CFQ's departures in the README */
	SCHED_RQ_CALLER = 1u << 3,
	/* never merged with another request: its issue is not a read or write of its range
	 * (a piece of an fallocate, which is charged and timed as a write of its length) */
	SCHED_RQ_NOMERGE = 1u << 4,
};

/* The root group always exists; its weight is 1000 as in CFQ ("prefer root"). */
#define SCHED_ROOT_GROUP 0u
#define SCHED_WEIGHT_MIN 10u
#define SCHED_WEIGHT_DEFAULT 500u
#define SCHED_WEIGHT_MAX 1000u

/* Intrusive nodes. Layout is public only so callers can embed struct sched_rq. */
struct sched_rb_node {
	uintptr_t parent_red;	    /* parent pointer | 1 if red (nodes are 8-byte aligned) */
	struct sched_rb_node *left;
	struct sched_rb_node *right;
	/* in-order neighbours (NULL at the ends): next/prev without a walk through cold nodes */
	struct sched_rb_node *next;
	struct sched_rb_node *prev;
};

struct sched_list {
	struct sched_list *next;
	struct sched_list *prev;
};

/*
 * A request. Embedded by the caller in its own per-request struct (container_of to get back).
 * Invariants: between enqueue and complete the scheduler owns the "scheduler" and "private"
 * fields; the caller must not touch the request except through sched_cancel().
 */
struct sched_rq {
	/* --- caller, set before sched_enqueue(), read-only afterwards --- */
	uint64_t queue_key;  /* io context: tgid (or tid with per-thread queues) */
	uint32_t group;	     /* group id from sched_group_create(), or SCHED_ROOT_GROUP */
	uint8_t ioclass;     /* enum sched_class */
	uint8_t level;	     /* 0..7; forced to 7 for IDLE */
	uint8_t op;	     /* enum sched_op */
	uint8_t flags;	     /* SCHED_RQ_* */
	uint64_t file;	     /* file identity (e.g. st_dev/st_ino mix); same file <=> same value */
	uint64_t offset;     /* [bytes] position in the file: the request's "sector" */
	uint64_t len;	     /* [bytes]; 0 for fsync/fdatasync */

	/* --- scheduler, valid after the event named --- */
	sched_ns enqueue_time;	/* [ns] set by sched_enqueue */
	sched_ns dispatch_time; /* [ns] set by sched_dispatch */
	/*
	 * Requests merged into this one, in offset order, NULL-terminated. sched_dispatch()
	 * returns only chain heads; the caller issues one I/O per contiguous run of head +
	 * chain (preadv/pwritev) and completes the head only. Every member is then the caller's.
	 */
	struct sched_rq *merge_next;
	uint32_t nr_merged;	/* members in merge_next chain (0 = none) */
	uint64_t merged_len;	/* [bytes] len of head + chain; == len when nr_merged == 0 */

	/* --- private to the scheduler --- */
	struct sched_rb_node sort_node; /* in its queue's offset-ordered tree */
	struct sched_list fifo_node;	/* in its queue's (or policy's) arrival FIFO */
	sched_ns fifo_deadline;		/* [ns] enqueue_time + fifo_expire_{sync,async} */
	void *owner;			/* the policy's queue holding it */
	uint64_t seq;			/* arrival sequence number: deterministic tie-breaker */
	uint32_t state;			/* debug: queued / dispatched / done (for checks) */
	struct sched_rq *merge_prev;	/* previous member of its chain; NULL for a head */
	struct sched_rq *merge_tail;	/* head only: last member of its chain, NULL if none */
};

/* ---------------------------------------------------------------------------------------- */
/* Life cycle */

struct sched;

/*
 * Creates a scheduler with the policy's default tunables. `rotational`: the backing device
 * spins; when false, CFQ's slice_idle defaults to 0 (IOPS mode for groups), as in Linux 4.2+.
 * Returns NULL on allocation failure or an invalid policy.
 */
struct sched *sched_create(enum sched_policy policy, bool rotational);

/* Frees everything. Requires no request queued or in flight (asserted in debug builds). */
void sched_destroy(struct sched *sd);

enum sched_policy sched_policy(const struct sched *sd);
const char *sched_policy_name(enum sched_policy policy);
/* Returns 0 and sets *out, or -EINVAL for an unknown name. */
int sched_policy_parse(const char *name, enum sched_policy *out);

/*
 * Switches policy live, keeping every queued request (re-enqueued into the new policy in
 * arrival order) and the group set. In-flight requests complete normally under the new
 * policy. Tunables of the new policy start at their defaults unless set before.
 * Returns 0, or -ENOMEM with nothing changed.
 */
int sched_switch(struct sched *sd, enum sched_policy policy, sched_ns now);

/* ---------------------------------------------------------------------------------------- */
/* The request path (no allocation except a new queue's first request) */

/*
 * Queues rq. May merge it into an already queued request of the same queue and file that it
 * extends contiguously (back or front), up to max_merge_kb; a sync request never merges into
 * an async one. Returns 0; -EINVAL if a caller field is out of range or the group does not
 * exist (state unchanged); -ENOMEM if a new queue could not be allocated (state unchanged).
 */
int sched_enqueue(struct sched *sd, struct sched_rq *rq, sched_ns now);

/*
 * Returns the next request to issue, already removed from the scheduler's queues and counted
 * in flight, or NULL: then nothing may be issued before sched_next_event(sd) or before the
 * next enqueue/complete, whichever comes first. Cannot fail.
 */
struct sched_rq *sched_dispatch(struct sched *sd, sched_ns now);

/*
 * When the caller must call sched_dispatch() again even if nothing is enqueued or completed:
 * idle-window expiry, slice end, FIFO deadline. SCHED_NS_NEVER if no timer is pending.
 * While nothing is queued (sched_nr_queued() == 0) the caller may call later than that, or
 * not at all until its next enqueue or complete: a timer that came due before a call fires
 * first, at its own time, so the state is the same as if it had been delivered on time.
 * (Only the end of a killed client's queue waits for that next call.)
 */
sched_ns sched_next_event(const struct sched *sd);

/*
 * Completes a request returned by sched_dispatch() (pass the chain head). `error` is 0 or a
 * negative errno from the backing I/O; it is counted in the stats. Cannot fail.
 */
void sched_complete(struct sched *sd, struct sched_rq *rq, int error, sched_ns now);

/*
 * Withdraws a queued request (its caller was interrupted). If it was merged, it is cut out of
 * its chain (a chain head is replaced by its next member). A chain may therefore cover
 * non-contiguous ranges: callers issue one I/O per contiguous run of a chain.
 * Returns 0, or -EBUSY if rq has already been dispatched (then complete it normally).
 */
int sched_cancel(struct sched *sd, struct sched_rq *rq, sched_ns now);

size_t sched_nr_queued(const struct sched *sd);
size_t sched_nr_in_flight(const struct sched *sd);

/* ---------------------------------------------------------------------------------------- */
/* Groups (hierarchical; weights per level as in CFQ's hierarchical mode) */

/*
 * Creates a group under `parent` with weight and leaf_weight in [10, 1000]. Ids are small
 * integers, never reused while the group exists. Returns 0 and sets *id, -EINVAL for a bad
 * parent or weight, -ENOMEM. State unchanged on failure.
 */
int sched_group_create(struct sched *sd, uint32_t parent, uint32_t weight, uint32_t leaf_weight,
		       uint32_t *id);
/* Returns 0, or -EINVAL (bad id or weight). Takes effect when the group is next activated. */
int sched_group_set_weight(struct sched *sd, uint32_t id, uint32_t weight, uint32_t leaf_weight);
/* Returns 0, -EINVAL (root/unknown), or -EBUSY (children, queued or in-flight requests). */
int sched_group_remove(struct sched *sd, uint32_t id);
/* Returns 0 and fills the out-params, or -EINVAL for an unknown id. */
int sched_group_get(const struct sched *sd, uint32_t id, uint32_t *parent, uint32_t *weight,
		    uint32_t *leaf_weight);

/* ---------------------------------------------------------------------------------------- */
/* Tunables: CFQ's (and deadline's) sysfs names and units. Values in sysfs units (ms, KiB,
 * counts); stored internally in ns/bytes. */

struct sched_tunable_desc {
	const char *name;    /* sysfs name, e.g. "slice_idle" */
	const char *unit;    /* "ms", "KiB", "count", "bool", "mode" */
	int64_t min;	     /* inclusive */
	int64_t max;	     /* inclusive */
	int64_t def;	     /* default on a rotational device */
	const char *help;    /* one sentence: what it does */
};

/*
 * The tunables of a policy, terminated by an entry with name == NULL. Cannot fail.
 * CFQ: quantum, fifo_expire_sync, fifo_expire_async, back_seek_max, back_seek_penalty,
 * slice_sync, slice_async, slice_async_rq, slice_idle, group_idle, low_latency, target_latency,
 * group_mode (0 = auto, 1 = time, 2 = iops), max_merge_kb, no_merge_behind, max_copy_kb.
 * deadline: read_expire, write_expire, writes_starved, front_merges, fifo_batch, max_merge_kb,
 * no_merge_behind, max_copy_kb.
 * noop: max_merge_kb, max_copy_kb.
 */
const struct sched_tunable_desc *sched_tunables(enum sched_policy policy);

/* Returns 0 if `value` is valid for `name` under `policy`; -ENOENT unknown name; -EINVAL range. */
int sched_tunable_validate(enum sched_policy policy, const char *name, int64_t value);
/* Sets a tunable of the active policy. 0, -ENOENT or -EINVAL (state unchanged). */
int sched_tunable_set(struct sched *sd, const char *name, int64_t value);
/* Sets a tunable of `policy`, active or not: an inactive policy's value takes effect when
 * sched_switch() makes it active. 0, -ENOENT or -EINVAL (state unchanged). */
int sched_tunable_set_in(struct sched *sd, enum sched_policy policy, const char *name,
			 int64_t value);
/* 0 and *value, or -ENOENT. */
int sched_tunable_get(const struct sched *sd, const char *name, int64_t *value);
/*
 * Puts every tunable of every policy back to the value sched_create() gave it on this device
 * (the tables' defaults; CFQ's slice_idle 0 when not rotational), undoing each
 * sched_tunable_set(). Cannot fail.
 */
void sched_tunables_reset(struct sched *sd);
/*
 * [bytes] The active policy's max_copy_kb: the largest piece the caller may cut a
 * copy_file_range or fallocate request into, each piece one request (the core never sees the
 * whole). Cannot fail.
 */
uint64_t sched_max_copy(const struct sched *sd);

/* ---------------------------------------------------------------------------------------- */
/* Statistics */

/* Latency histogram: bucket i holds latencies in [lo(i), lo(i+1)) with log2 steps split into 4
 * sub-buckets, from 1 us up; the last bucket is open-ended. */
#define SCHED_HIST_BUCKETS 96
struct sched_hist {
	uint64_t total;	 /* samples */
	sched_ns sum;	 /* [ns] */
	sched_ns max;	 /* [ns] */
	uint64_t count[SCHED_HIST_BUCKETS];
};
/* Lower bound of bucket i [ns]. Cannot fail. */
sched_ns sched_hist_bucket_lo(unsigned i);
/* The `permille`-th percentile [ns] (500 = p50, 990 = p99), 0 if empty. Upper-bucket-bound
 * estimate, clamped to max. */
sched_ns sched_hist_percentile(const struct sched_hist *h, unsigned permille);

enum { SCHED_DIR_READ = 0, SCHED_DIR_WRITE = 1 };	   /* index 1 of the arrays below */
enum { SCHED_KIND_ASYNC = 0, SCHED_KIND_SYNC = 1 };	   /* index 2 */

/*
 * Cumulative counters of a group or queue. Ordered by when the core writes them, so that one
 * request touches few cache lines of a cold queue or group (with the struct 64-byte aligned):
 * bytes and ios (line 0); the per-request and per-slice scalars with the histogram's totals
 * (line 1); one line of histogram buckets; then the gauges and the rare counters.
 * A queue's gauges (queued, in_flight) are not kept up per request: the queue's own counts
 * are, and sched_foreach_queue() copies them in before showing the stats.
 */
struct sched_stats {
	uint64_t bytes[2][2];	 /* [bytes] by dir, kind; counted at dispatch */
	uint64_t ios[2][2];	 /* requests (pre-merge) by dir, kind; fsyncs count as writes */
	uint64_t dispatched;	 /* dispatches (post-merge I/Os) */
	sched_ns wait_time;	 /* [ns] sum of enqueue -> dispatch */
	sched_ns service_time;	 /* [ns] sum of dispatch -> complete */
	sched_ns disk_time;	 /* [ns] time charged (CFQ slices used) */
	uint64_t slices;	 /* times a queue of it was made active (CFQ) */
	struct sched_hist latency; /* enqueue -> complete; its totals end line 1 */
	uint64_t queued;	 /* gauge: requests queued now */
	uint64_t in_flight;	 /* gauge: dispatched, not completed */
	uint64_t errors;	 /* completions with error != 0 */
	uint64_t fsyncs;	 /* fsync + fdatasync requests */
	uint64_t merged;	 /* requests absorbed by merging */
	sched_ns idle_time;	 /* [ns] time the scheduler idled waiting for it */
};
_Static_assert(offsetof(struct sched_stats, latency.count) == 128,
	       "sched_stats line plan: the histogram's totals end line 1");

/* Returns 0 and a snapshot, or -EINVAL for an unknown group. Includes the group's own queues
 * only (not its children). */
int sched_group_stats(const struct sched *sd, uint32_t id, struct sched_stats *out);

/* One live queue, as shown by .cfqfs/queues. */
struct sched_queue_info {
	uint64_t queue_key;
	uint32_t group;
	uint8_t ioclass;
	uint8_t level;
	bool sync;
	bool idle_window; /* CFQ: idles after it empties */
	bool seeky;	  /* CFQ: seek history says random */
	bool active;	  /* currently the served queue */
	const struct sched_stats *stats;
};
typedef void (*sched_queue_fn)(void *arg, const struct sched_queue_info *qi);
/* Calls fn for each live queue in a deterministic order (group, key, sync). Cannot fail. */
void sched_foreach_queue(const struct sched *sd, sched_queue_fn fn, void *arg);

/* Device-wide state worth showing. */
struct sched_info {
	enum sched_policy policy;
	bool iops_mode;	   /* CFQ groups charged by requests instead of time */
	int hw_tag;	   /* CFQ deep-device detection: -1 unknown, 0 shallow, 1 deep */
	uint64_t nr_groups;
	uint64_t nr_queues;
	uint64_t queued;
	uint64_t in_flight;
	uint64_t coop_switches; /* CFQ: close cooperators served instead of idling, since the
				   policy was last selected */
};
void sched_get_info(const struct sched *sd, struct sched_info *out);

/* ---------------------------------------------------------------------------------------- */
/* Decision trace */

/*
 * A ring of the core's recent decisions, for seeing why a request waited (what blktrace's
 * "cfq" messages show for the kernel). Off until sched_trace_resize() gives it a size; while
 * off each trace point costs one predictable branch. Recording never allocates and never
 * changes a decision. Records are in decision order; a record's time is the `now` of the call
 * that made it, except that a timer found overdue fires at the moment it was due, as
 * sched_next_event() says, and is recorded then: earlier than the record before it, perhaps.
 * Fields per event:
 */
enum sched_trace_event {
	SCHED_TR_QUEUE,	    /* request queued: a = offset [bytes], b = len [bytes]; flag 1 if it
			       was merged into (or absorbed) a queued request */
	SCHED_TR_DISPATCH,  /* chain head dispatched: a = offset, b = merged_len [bytes] */
	SCHED_TR_COMPLETE,  /* a = service time [ns], b = error (0 or -errno) */
	SCHED_TR_CANCEL,    /* queued request withdrawn: a = offset, b = len */
	SCHED_TR_ACTIVATE,  /* CFQ: queue made active: a = workload class (0 BE, 1 RT, 2 IDLE),
			       b = workload type of the tree it is served from (0 async,
			       1 sync-noidle, 2 sync) */
	SCHED_TR_SLICE,	    /* CFQ: the active queue's slice starts: a = length [ns] */
	SCHED_TR_EXPIRE,    /* CFQ: slice over: a = I/Os dispatched in it, b = slice [ns];
			       flag 1 ("timed_out", the kernel's word) if it ran out or a
			       preemption cut it: the rest, or the overrun, then moves the
			       queue's next service-tree key */
	SCHED_TR_IDLE,	    /* CFQ: idling for the active queue: a = window [ns]; flag 1 for
			       group_idle (waiting for the group, not the queue) */
	SCHED_TR_IDLE_END,  /* CFQ: the idle window ended with no request */
	SCHED_TR_PREEMPT,   /* CFQ: this queue preempts the active one: a = its key */
	SCHED_TR_COOP,	    /* CFQ: the active queue hands its slice to a close cooperator:
			       a = the cooperator's key */
	SCHED_TR_WAIT_OVER, /* CFQ: waiting for the queue's in-flight I/O gave up after
			       fifo_expire_sync without progress */
	SCHED_TR_SWITCH,    /* policy switched: a = enum sched_policy (no queue) */
	SCHED_TR_COUNT
};

struct sched_trace_rec {
	sched_ns time;	    /* [ns] when it happened (see above) */
	uint64_t queue_key; /* the queue it is about; 0 for none */
	int64_t a, b;	    /* see enum sched_trace_event */
	uint32_t group;	    /* the queue's group */
	uint8_t event;	    /* enum sched_trace_event */
	uint8_t sync;	    /* 1 if the queue is a sync queue */
	uint8_t flag;	    /* see enum sched_trace_event */
};

#define SCHED_TRACE_MAX (1u << 16) /* [records] largest ring */

/*
 * Turns the trace on with room for `records` (rounded up to a power of two, at most
 * SCHED_TRACE_MAX) or, with 0, off. Either way the ring starts empty. Returns 0, -EINVAL
 * for a negative size or one over the maximum, or -ENOMEM (nothing changed either way).
 */
int sched_trace_resize(struct sched *sd, int64_t records);
/* The ring's size [records], 0 when off. */
uint32_t sched_trace_capacity(const struct sched *sd);
/* Records written since the trace was (re)started; the newest has sequence total - 1. */
uint64_t sched_trace_total(const struct sched *sd);
/*
 * Copies up to `max` records, oldest first, starting with sequence number *pos (or the
 * oldest still kept, if *pos was overwritten). Sets *pos past the last copied and returns
 * how many were copied. Cannot fail.
 */
size_t sched_trace_read(const struct sched *sd, uint64_t *pos, struct sched_trace_rec *out,
			size_t max);
/* "queue", "dispatch", ...; "?" for an unknown event. */
const char *sched_trace_event_name(unsigned event);
/*
 * The record's event-specific fields as text, each with a leading space (" off=0 len=4096",
 * " service=0.172ms", " class=be type=sync", ...; "" when it has none), into buf, always
 * NUL-terminated when size > 0. Returns what snprintf() would: the length it needed.
 */
int sched_trace_detail(const struct sched_trace_rec *r, char *buf, size_t size);

/*
 * Invariant checker: walks every structure and returns 0, or -EFAULT after describing the
 * first broken invariant into buf (if non-NULL). O(n). The simulation tests call it after
 * every step; debug builds assert it at the end of each public call when SCHED_PARANOID=1.
 */
int sched_check(const struct sched *sd, char *buf, size_t buflen);

#endif /* CFQFS_SCHED_H */
