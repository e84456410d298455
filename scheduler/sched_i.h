/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sched_i.h - internals shared by the scheduler core files (BFQ's bfq-iosched.h role). Never
 * included from outside scheduler/.
 *
 * Split:
 *   sched.c          public entry points, queue hash and recycling, groups, stats, tunables,
 *                    merging helpers, sched_switch, sched_check front end
 *   sched_fq.c       group fair-queueing math: vdisktime, vfraction, charge, group tree
 *   sched_cfq.c      the CFQ policy: queues, service trees, slices, idling, dispatch limits
 *   sched_deadline.c read/write FIFOs with expiry and offset-sorted batches
 *   sched_noop.c     FIFO with back merging
 *   sched_tree.c     the ordered trees
 *
 * Locking: none inside. Every field below is protected by the caller's lock around the whole
 * struct sched (the executor mutex); the core calls out to no one.
 */
#ifndef CFQFS_SCHED_I_H
#define CFQFS_SCHED_I_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sched.h"
#include "sched_tree.h"

/* ---------------------------------------------------------------------------------------- */
/* Request state (rq->state): low byte is the state, the upper 24 bits the policy generation
 * (sd->gen) at enqueue/dispatch, so a completion of a request dispatched by a previous policy
 * (before sched_switch) is not fed to the current one. */
enum {
	RQ_ST_NONE = 0,		   /* the caller's */
	RQ_ST_QUEUED = 1,	   /* chain head, in the policy's structures */
	RQ_ST_MERGED = 2,	   /* member of a queued chain (reachable only from its head) */
	RQ_ST_DISPATCHED = 3,	   /* chain head returned by sched_dispatch() */
	RQ_ST_DISPATCHED_MEMBER = 4, /* member of a dispatched chain */
	RQ_ST_DONE = 5,		   /* completed; the caller's again */
};
#define RQ_STATE(rq) ((rq)->state & 0xffu)
#define RQ_GEN(rq) ((rq)->state >> 8)
#define RQ_GEN_MASK 0xffffffu

static inline void rq_set_state(struct sched_rq *rq, uint32_t st, uint32_t gen)
{
	rq->state = st | ((gen & RQ_GEN_MASK) << 8);
}

static inline bool rq_is_fsync(const struct sched_rq *rq)
{
	return rq->op == SCHED_OP_FSYNC || rq->op == SCHED_OP_FDATASYNC;
}

/* Reads, fsyncs and writes flagged SYNC are sync (kernel: read || REQ_SYNC). */
static inline bool rq_is_sync(const struct sched_rq *rq)
{
	return rq->op == SCHED_OP_READ || rq_is_fsync(rq) || (rq->flags & SCHED_RQ_SYNC);
}

static inline int rq_dir(const struct sched_rq *rq)
{
	return rq->op == SCHED_OP_READ ? SCHED_DIR_READ : SCHED_DIR_WRITE;
}

/* Wrap-safe "a is earlier than b". */
static inline bool sched_time_before(sched_ns a, sched_ns b)
{
	return sched_time_after(b, a);
}

static inline sched_ns sched_time_min(sched_ns a, sched_ns b)
{
	return sched_time_before(a, b) ? a : b;
}

/* ---------------------------------------------------------------------------------------- */
/* Doubly linked circular lists (struct sched_list from sched.h). */

static inline void list_init(struct sched_list *l)
{
	l->next = l->prev = l;
}

static inline bool list_empty(const struct sched_list *l)
{
	return l->next == l;
}

static inline void list_add_between(struct sched_list *n, struct sched_list *prev,
				    struct sched_list *next)
{
	n->prev = prev;
	n->next = next;
	prev->next = n;
	next->prev = n;
}

static inline void list_add_tail(struct sched_list *head, struct sched_list *n)
{
	list_add_between(n, head->prev, head);
}

static inline void list_del(struct sched_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	list_init(n);
}

/* Puts n where old was; old is left self-linked. */
static inline void list_replace(struct sched_list *old, struct sched_list *n)
{
	n->next = old->next;
	n->prev = old->prev;
	n->next->prev = n;
	n->prev->next = n;
	list_init(old);
}

/*
 * For the *_check() functions, which take (char *buf, size_t buflen): describe the broken
 * invariant into buf (if given) and return -EFAULT.
 */
#define FAIL(...)                                          \
	do {                                               \
		if (buf)                                   \
			snprintf(buf, buflen, __VA_ARGS__); \
		return -EFAULT;                            \
	} while (0)

/*
 * Tree order for keys that are times or virtual times: wrap-safe comparison of `ka` and `kb`
 * (valid while they are less than 2^63 apart), ties broken by sequence number so the order is
 * deterministic. Returns <0, 0, >0.
 */
static inline int sched__cmp_key_seq(uint64_t ka, uint64_t sa, uint64_t kb, uint64_t sb)
{
	int64_t d = (int64_t)(ka - kb);

	if (d != 0)
		return d < 0 ? -1 : 1;
	if (sa != sb)
		return sa < sb ? -1 : 1;
	return 0;
}

#define rq_of_fifo(l) sched_container_of(l, struct sched_rq, fifo_node)
#define rq_of_sort(n) sched_container_of(n, struct sched_rq, sort_node)

/* Appends rq to a drain list (linked through fifo_node.next, NULL-terminated). */
static inline void drain_append(struct sched_rq **first, struct sched_rq **last,
				struct sched_rq *rq)
{
	rq->fifo_node.next = NULL;
	rq->fifo_node.prev = NULL;
	if (*last)
		(*last)->fifo_node.next = &rq->fifo_node;
	else
		*first = rq;
	*last = rq;
}

/* ---------------------------------------------------------------------------------------- */
/* Tunables: one index space per policy; values stored in internal units (ns, bytes). */

enum {
	CFQ_T_QUANTUM,
	CFQ_T_FIFO_EXPIRE_SYNC,
	CFQ_T_FIFO_EXPIRE_ASYNC,
	CFQ_T_BACK_SEEK_MAX,
	CFQ_T_BACK_SEEK_PENALTY,
	CFQ_T_SLICE_SYNC,
	CFQ_T_SLICE_ASYNC,
	CFQ_T_SLICE_ASYNC_RQ,
	CFQ_T_SLICE_IDLE,
	CFQ_T_GROUP_IDLE,
	CFQ_T_LOW_LATENCY,
	CFQ_T_TARGET_LATENCY,
	CFQ_T_GROUP_MODE,
	CFQ_T_MAX_MERGE,
	CFQ_T_NO_MERGE_BEHIND,
	CFQ_T_MAX_COPY,
	CFQ_T_COUNT
};
enum {
	DL_T_READ_EXPIRE,
	DL_T_WRITE_EXPIRE,
	DL_T_WRITES_STARVED,
	DL_T_FRONT_MERGES,
	DL_T_FIFO_BATCH,
	DL_T_MAX_MERGE,
	DL_T_NO_MERGE_BEHIND,
	DL_T_MAX_COPY,
	DL_T_COUNT
};
enum { NOOP_T_MAX_MERGE, NOOP_T_MAX_COPY, NOOP_T_COUNT };
#define SCHED_TUN_MAX 16
_Static_assert(CFQ_T_COUNT <= SCHED_TUN_MAX && DL_T_COUNT <= SCHED_TUN_MAX,
	       "tunable array too small");

/* ---------------------------------------------------------------------------------------- */
/* CFQ per-queue, per-group and per-device state (sched_cfq.c, sched_fq.c). */

enum cfq_wl_class { WL_BE = 0, WL_RT = 1, WL_IDLE = 2, WL_CLASSES = 3 };
enum cfq_wl_type { WL_ASYNC = 0, WL_SYNC_NOIDLE = 1, WL_SYNC = 2, WL_TYPES = 3 };

/* Decaying think-time average (7/8 old, fixed point x256). Valid when samples > 80. */
struct cfq_ttime {
	sched_ns last_end;	/* [ns] last completion */
	uint64_t samples;	/* [x256] decayed sample count */
	uint64_t total;		/* [ns x256] decayed sum */
	sched_ns mean;		/* [ns] */
};

/*
 * One of a group's 7 service trees: busy queues ordered by (rb_key, rb_seq), a sched_seq
 * because keys are mostly now + a fixed offset (filing is appending, serving takes the
 * first). Two lines: the order, which choosing a queue reads, then the think time, which
 * a completion writes.
 */
struct cfq_st {
	struct sched_seq seq;			 /* struct cfq_queue.st_node */
	_Alignas(64) struct cfq_ttime ttime; /* tree think time, for service-tree idling */
};

/* struct cfq_queue.flags (CFQ's cfqq flags; helpers generated in sched_cfq.c) */
enum {
	CFQQ_F_IDLE_WINDOW = 1u << 0,  /* idles when it empties; sits on the SYNC tree */
	CFQQ_F_WAIT_REQUEST = 1u << 1, /* the idle timer is armed for it */
	CFQQ_F_MUST_DISPATCH = 1u << 2, /* dispatch even if the slice is used */
	CFQQ_F_FIFO_EXPIRE = 1u << 3,  /* FIFO already checked in this slice */
	CFQQ_F_DEEP = 1u << 4,	       /* has had >= 4 requests queued */
	CFQQ_F_WAIT_BUSY = 1u << 5,    /* slice extended waiting for the group's next request */
	CFQQ_F_SLICE_NEW = 1u << 6,    /* active, no completion yet: slice not started */
	CFQQ_F_CALLER = 1u << 7,       /* async, active: a request with SCHED_RQ_CALLER was
					  dispatched in this slice (someone waits on it) */
};

/* More than 4 of the last 32 requests were seeks. */
static inline bool cfq_seeky(uint32_t seek_history)
{
	return __builtin_popcount(seek_history) > 32 / 8;
}

/*
 * Field order is for the cache (sched_micro at 16384 queues switches queues every 2 requests,
 * and each switch meets this struct cold): line 0 holds what a walk of a service tree reads in
 * every node it passes (st_node, rb_key, rb_seq); the four lines are what serving the queue
 * touches. struct sched_queue aligns it on a cache line.
 */
struct cfq_queue {
	struct sched_rb_node st_node; /* in *st */
	sched_ns rb_key;	     /* [ns] service tree key */
	uint64_t rb_seq;	     /* tie-breaker of rb_key */
	struct cfq_st *st;	     /* service tree it is on; NULL <=> not busy ("on_rr") */
	uint32_t flags;		     /* CFQQ_F_* */
	uint8_t st_class, st_type;   /* (class, type) *st was chosen for */
	struct sched_tree sort;	     /* queued chain heads by (file, offset, seq) */
	struct sched_list fifo;	     /* queued chain heads in arrival order */
	struct sched_rq *next_rq;    /* best head from the last position; NULL iff empty */
	uint32_t queued;	     /* [heads] == sort.count */
	uint32_t dispatched;	     /* [I/Os] in flight, dispatched by this policy generation */
	uint32_t meta_pending;	     /* [heads] queued with SCHED_RQ_META */
	uint32_t slice_dispatch;     /* [I/Os] dispatched in this slice */
	uint32_t seek_history;	     /* 1 bit per request, 1 = seek */
	uint32_t gap;		     /* [bytes] skipped forward before its last request, in the
					same file; UINT32_MAX: unknown (another file, backwards,
					4 GiB or more). Where its next request is due */
	sched_ns dispatch_start;     /* [ns] when it became active */
	sched_ns slice_start;	     /* [ns] first completion of the slice (valid if !SLICE_NEW) */
	sched_ns slice_end;	     /* [ns] */
	sched_ns allocated_slice;    /* [ns] */
	int64_t slice_resid;	     /* [ns] slice left (>0) or overrun (<0) at preemption */
	uint64_t last_file;	     /* position after its last request: file ... */
	uint64_t last_end;	     /* ... and end offset [bytes] */
	struct cfq_ttime ttime;	     /* io context think-time stats, sync queues only */
	/* cooperator index (cfq_data.coop): linked iff coop_eligible() on a rotational device,
	 * in the bucket of coop_file, the file of next_rq; self-linked otherwise */
	struct sched_list coop_node;
	uint64_t coop_file;
};

/*
 * Cache lines (struct sched_group aligns it): line 0 is what the group tree's walks and picks
 * read (node, seq, vdisktime) with vfraction and nr_cfqq; line 1 the rest of the per-switch
 * state, with per-class busy counts so that choosing a class reads no service tree; line 2
 * the think time and the rarely set pending weights; then two lines per service tree (its
 * order, its think time).
 * Invariant: nr_busy[c] == sum of the queue counts of class c's trees; nr_busy_async == the
 * counts of the RT and BE ASYNC trees.
 */
struct cfq_group {
	struct sched_rb_node node;     /* in cfq_data.grp_tree iff nr_cfqq > 0 */
	uint64_t seq;		       /* tie-breaker of vdisktime */
	uint64_t vdisktime;	       /* [ns << 24 / vfraction] virtual service received */
	uint32_t vfraction;	       /* [1/4096] share of the device, valid while on tree */
	uint32_t nr_cfqq;	       /* busy queues (on a service tree) */
	uint32_t dispatched;	       /* [I/Os] in flight */
	uint8_t saved_wl_type, saved_wl_class;
	uint32_t nr_busy[WL_CLASSES];  /* busy queues per class (enum cfq_wl_class) */
	uint32_t nr_busy_async;	       /* busy queues on the RT and BE ASYNC trees */
	uint32_t busy_queues_avg[WL_CLASSES]; /* decayed average of busy queues per class */
	uint32_t nr_active;	       /* self on tree + active children */
	sched_ns saved_wl_slice;       /* [ns] workload slice left when last expired */
	uint64_t children_weight;      /* [weight units] sum of active entities below */
	uint32_t weight;	       /* [weight units] effective, vs. siblings */
	uint32_t leaf_weight;	       /* [weight units] own queues vs. children */
	struct cfq_ttime ttime;	       /* group think-time stats, for group_idle */
	uint32_t new_weight;	       /* pending weight, applied on activation (0 = none) */
	uint32_t new_leaf_weight;      /* pending leaf weight, applied on (re)insertion */
	_Alignas(64) struct cfq_st st[2][WL_TYPES]; /* [WL_BE/WL_RT][type] */
	struct cfq_st st_idle;	       /* IDLE class */
};

#define CFQ_COOP_BUCKETS 256u /* power of two */

struct cfq_data {
	struct sched_tree grp_tree;   /* busy groups by (vdisktime, seq) */
	uint64_t min_vdisktime;	      /* monotonic, <= every vdisktime on grp_tree */
	uint64_t grp_seq, q_seq;      /* tie-breaker sources */
	struct sched_queue *active;   /* the served queue, or NULL */
	struct sched_group *serving_group;
	uint8_t wl_class, wl_type;    /* serving workload */
	sched_ns workload_expires;    /* [ns] */
	uint32_t busy_queues;	      /* queues on a service tree */
	uint32_t busy_sync_queues;
	uint32_t rq_queued;	      /* [heads] queued */
	uint32_t rq_in_driver;	      /* [I/Os] in flight (this generation) */
	uint32_t rq_in_flight[2];     /* [I/Os] by queue kind (0 async, 1 sync) */
	int hw_tag;		      /* -1 unknown, 0 shallow, 1 deep (NCQ) */
	uint32_t hw_tag_samples;
	uint32_t hw_tag_est_depth;    /* [I/Os] peak in flight */
	sched_ns last_delayed_sync;   /* [ns] last sync completion later than fifo_expire_sync */
	sched_ns idle_timer;	      /* [ns] idle timer expiry, SCHED_NS_NEVER if not armed */
	sched_ns idle_start;	      /* [ns] when the timer was armed (idle_time stat) */
	uint32_t busy_idle_queues;    /* busy queues on IDLE-class service trees */
	sched_ns nonidle_last;	      /* [ns] last dispatch or completion of RT/BE I/O */
	sched_ns idle_class_wait;     /* [ns] when only IDLE work waits out the grace, the time
					 it may start; SCHED_NS_NEVER otherwise */
	sched_ns active_progress;     /* [ns] last activation, dispatch or completion of the
					 active queue (bounds waits on its in-flight I/O) */
	sched_ns inflight_wait;	      /* [ns] set by the last dispatch when it held the device
					 for the active queue's in-flight I/O: when that wait
					 ends; SCHED_NS_NEVER otherwise */
	bool have_last_pos;
	uint64_t last_file;	      /* end of the last dispatched request: file ... */
	uint64_t last_pos;	      /* ... and offset [bytes] */
	uint64_t last_start;	      /* [bytes] and its start offset */
	uint64_t coop_switches;	      /* activations of a close cooperator (sched_info) */
	/* Busy sync queues whose next request could follow the last dispatch, by that request's
	 * file (the kernel's per-priority "prio trees" by next_rq sector): struct
	 * cfq_queue.coop_node, hashed with coop_bucket(). Rotational devices only. */
	struct sched_list coop[CFQ_COOP_BUCKETS];
};

/* ---------------------------------------------------------------------------------------- */
/* Deadline and noop state. */

struct dl_data {
	struct sched_tree sort[2];     /* heads by (file, offset, seq), per direction */
	struct sched_list fifo[2];     /* heads by arrival, per direction */
	struct sched_rq *next_rq[2];   /* batch continuation (at most one non-NULL) */
	uint32_t batching;	       /* [I/Os] dispatched in the current batch */
	uint32_t starved;	       /* read batches while writes waited */
};

struct noop_data {
	struct sched_list fifo;	       /* heads by arrival */
	struct sched_tree sort;	       /* same heads by (file, offset, seq), for back merges */
};

/* ---------------------------------------------------------------------------------------- */
/* Queues and groups (shared by every policy). */

/*
 * One io context's sync queue, or a group's async queue for one (class, level). Invariants:
 * live <=> in use (requests queued or in flight, or held by the policy); !live <=> on
 * sd->free_queues (still hashed so a returning key finds its history, until recycled).
 */
struct sched_queue {
	uint64_t key;		       /* queue_key (sync) or class << 3 | level (async) */
	struct sched_group *g;	       /* owning group */
	struct sched_queue *hash_next; /* bucket chain */
	bool sync;
	bool live;
	uint8_t ioclass;	       /* enum sched_class, from its latest request */
	uint8_t level;		       /* 0..7 (7 for IDLE) */
	uint32_t nr_queued;	       /* [requests] queued, merged members included */
	uint32_t nr_in_flight;	       /* [I/Os] dispatched chain heads not completed */
	/* the identity above (what a hash chain walk reads) fills line 0; the policy's hot state
	 * starts on its own line; then the cold links; then the stats, line-aligned (see there) */
	_Alignas(64) struct cfq_queue cfq;
	struct sched_list lru_node;    /* in sd->free_queues while !live */
	struct sched_list group_node;  /* in g->queues */
	struct sched_list all_node;    /* in sd->all_queues */
	struct sched_queue *scratch;   /* sched_foreach_queue() sort link */
	_Alignas(64) struct sched_stats stats;
};

/* Allocated 64-byte aligned (sched.c), so the line plan of the members holds. */
struct sched_group {
	uint32_t id;
	struct sched_group *parent;    /* NULL for the root */
	uint32_t nr_children;
	uint32_t cfg_weight;	       /* [weight units] as configured */
	uint32_t cfg_leaf_weight;
	struct sched_list queues;      /* struct sched_queue.group_node, live or cached */
	uint64_t scratch_cw;	       /* sched_check() accumulators */
	uint32_t scratch_na;
	_Alignas(64) struct cfq_group cfq;
	_Alignas(64) struct sched_stats stats;
};

_Static_assert(sizeof(struct cfq_st) == 128 && offsetof(struct cfq_st, ttime) == 64,
	       "a service tree's order in one cache line, its think time in the next");
_Static_assert(offsetof(struct cfq_queue, rb_seq) + 8 <= 64, "tree walk reads line 0 only");
_Static_assert(offsetof(struct cfq_group, nr_cfqq) + 4 <= 64 &&
		       offsetof(struct cfq_group, saved_wl_class) < 128 &&
		       offsetof(struct cfq_group, ttime) == 128,
	       "cfq_group line plan");
_Static_assert(offsetof(struct sched_queue, cfq) == 64 && offsetof(struct sched_group, cfq) == 64,
	       "identity in line 0, policy state from line 1");

/* ---------------------------------------------------------------------------------------- */
/* Policy operations. Every op runs with the caller's lock held and cannot fail. */

struct sched_policy_ops {
	/* Resets the policy's state; every queue and group already exists, none has requests
	 * in the policy (sched_create and sched_switch). */
	void (*init)(struct sched *sd, sched_ns now);
	/* Initialises the policy's per-queue state of a new (or recycled) queue. May be NULL. */
	void (*queue_init)(struct sched *sd, struct sched_queue *q, sched_ns now);
	/* Takes a new head rq of queue q (common fields already set). May merge it. */
	void (*enqueue)(struct sched *sd, struct sched_queue *q, struct sched_rq *rq,
			sched_ns now);
	struct sched_rq *(*dispatch)(struct sched *sd, sched_ns now);
	sched_ns (*next_event)(const struct sched *sd);
	/* Completion of a head dispatched by this generation. */
	void (*complete)(struct sched *sd, struct sched_rq *rq, sched_ns now);
	/* Withdraws a queued lone head. */
	void (*remove)(struct sched *sd, struct sched_rq *rq, sched_ns now);
	/* Swaps queued head old for new_head everywhere (front merge, cancel of a head). */
	void (*replace)(struct sched *sd, struct sched_rq *old, struct sched_rq *new_head);
	/* Removes every queued head from the policy; returns them as a NULL-terminated list
	 * linked through fifo_node.next (chains intact). */
	struct sched_rq *(*drain)(struct sched *sd);
	/* true if the policy still holds q (active, on a service tree). May be NULL. */
	bool (*queue_held)(const struct sched *sd, const struct sched_queue *q);
	/* Lets go of anything of g before it is freed (it has no requests). May be NULL. */
	void (*group_remove)(struct sched *sd, struct sched_group *g, sched_ns now);
	void (*group_init)(struct sched *sd, struct sched_group *g);
	int (*check)(const struct sched *sd, char *buf, size_t buflen);
	void (*info)(const struct sched *sd, struct sched_info *out);
};

extern const struct sched_policy_ops sched__cfq_ops;
extern const struct sched_policy_ops sched__deadline_ops;
extern const struct sched_policy_ops sched__noop_ops;

struct sched {
	enum sched_policy policy;
	const struct sched_policy_ops *ops;
	uint32_t gen;		       /* policy generation, bumped by sched_switch */
	bool rotational;
	int64_t tun[SCHED_POLICY_COUNT][SCHED_TUN_MAX]; /* internal units (ns, bytes, counts) */
	uint64_t seq;		       /* arrival sequence source */
	sched_ns now_hint;	       /* [ns] latest `now` seen (for calls that take none) */
	size_t nr_queued;	       /* [requests] queued, members included */
	size_t nr_in_flight;	       /* [I/Os] dispatched heads not completed */
	/* groups: groups[id], NULL for removed ids; ids are never reused */
	struct sched_group **groups;
	uint32_t nr_group_slots;       /* next id */
	uint32_t group_cap;	       /* allocated slots */
	uint32_t nr_groups;	       /* existing groups */
	/* queues */
	struct sched_queue **hash;     /* buckets, chained through hash_next */
	size_t hash_mask;	       /* buckets - 1 (power of two) */
	size_t nr_queue_objs;	       /* allocated (live + cached) */
	size_t nr_live_queues;
	struct sched_list free_queues; /* LRU of !live queues (oldest first) */
	/* The queue of the latest completion, or NULL: a process's next request usually follows
	 * its last completion, so queue_lookup() tries it before the hash (the kernel's io
	 * context keeps such a hint for the same reason). Any queue object; cleared when freed. */
	struct sched_queue *lookup_hint;
	struct sched_list all_queues;  /* every allocated queue */
	/* decision trace: ring of trace_mask + 1 records, NULL when off; trace_seq records
	 * written since it was (re)started */
	struct sched_trace_rec *trace;
	uint64_t trace_mask;
	uint64_t trace_seq;
	struct cfq_data cfq;
	struct dl_data dl;
	struct noop_data noop;
};

/* ---------------------------------------------------------------------------------------- */
/* Cross-file helpers (sched.c). */

/* Releases q to the free list if nothing holds it any more. Cannot fail. */
void sched__queue_maybe_release(struct sched *sd, struct sched_queue *q);
/* Comparators of the request sort trees: (file, offset, seq). */
int sched__rq_cmp(const struct sched_rb_node *a, const struct sched_rb_node *b);
/*
 * Tries to merge new request rq of queue q into a head of `tree` (which holds q's heads of the
 * same kind, sorted by sched__rq_cmp). rq->fifo_deadline must be set. On a back merge returns
 * the head that absorbed rq; on a front merge rq becomes the head in place of the old one
 * (tree and FIFO position swapped; the old head is returned in *replaced) and rq is returned.
 * Returns NULL (nothing changed) if no merge applies. With no_behind, a back-merge candidate
 * that has another head sorted after it in `tree` ("requests queued behind" it: the kernel's
 * elv_latter_request) refuses the merge and no front merge is tried either (Axboe's 2009
 * elevator patch: streaming I/O must not keep growing a request that others wait behind).
 * Cannot fail.
 */
struct sched_rq *sched__merge(struct sched *sd, struct sched_tree *tree, struct sched_rq *rq,
			      bool front_ok, bool no_behind, uint64_t max_bytes,
			      struct sched_rq **replaced);
/* Swaps head old for new_head in tree and in old's FIFO position; new_head inherits the
 * earlier FIFO deadline. */
void sched__rq_replace(struct sched_tree *tree, struct sched_rq *old, struct sched_rq *new_head);
/* Checks a chain head and its members; adds the number of requests to *nreq. */
int sched__check_chain(const struct sched_rq *h, const struct sched_queue *q, size_t *nreq,
		       char *buf, size_t buflen);

/* Appends a record (sd->trace != NULL); q may be NULL. Use sched__trace(). */
void sched__trace_add(struct sched *sd, sched_ns now, enum sched_trace_event ev,
		      const struct sched_queue *q, int64_t a, int64_t b, uint8_t flag)
	__attribute__((cold));
static inline void sched__trace(struct sched *sd, sched_ns now, enum sched_trace_event ev,
				const struct sched_queue *q, int64_t a, int64_t b, uint8_t flag)
{
	if (__builtin_expect(sd->trace != NULL, 0))
		sched__trace_add(sd, now, ev, q, a, b, flag);
}

/* sched_fq.c: group fair queueing. */
#define SCHED_FQ_SHIFT 12 /* 1.0 in vfraction == 1 << 12 */
uint64_t sched__fq_scale_charge(uint64_t charge, uint32_t vfraction);
void sched__fq_group_add(struct sched *sd, struct sched_group *g);
void sched__fq_group_del(struct sched *sd, struct sched_group *g);
void sched__fq_charge(struct sched *sd, struct sched_group *g, uint64_t charge);
struct sched_group *sched__fq_pick(struct sched *sd);
sched_ns sched__fq_group_slice(const struct sched *sd, const struct sched_group *g);
void sched__fq_set_weight(struct sched_group *g, uint32_t weight, uint32_t leaf_weight);
void sched__fq_group_init(struct sched_group *g);
int sched__fq_check(const struct sched *sd, char *buf, size_t buflen);
bool sched__fq_is_descendant(const struct sched_group *g, const struct sched_group *ancestor);

#endif /* CFQFS_SCHED_I_H */
