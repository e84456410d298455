/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sched_cfq.c - the CFQ policy (Linux 4.x cfq-iosched, group-aware), over the queues and
 * groups of sched.c and the group fair queueing of sched_fq.c.
 *
 * Selection is group -> class -> workload -> queue: the group with the smallest vdisktime;
 * inside it RT > BE > IDLE strictly; then the workload type (ASYNC, SYNC_NOIDLE, SYNC) whose
 * first queue has the smallest rb_key, kept for a workload slice; then the first queue of that
 * service tree. The active queue keeps the device for its slice (priority-scaled, shrunk under
 * low_latency so all busy queues of the group fit its share of target_latency), idling after
 * it empties when its history says another request is coming.
 *
 * Differences from the kernel, on purpose:
 *  - no plugging: a request arriving while its queue idles cancels the idle timer at once
 *    (the caller dispatches right after sched_enqueue), instead of waiting for unplug;
 *  - a queue's "sector" is (file, offset): different files are a far seek;
 *  - "leftover slice" (slice_resid > 0, set at preemption) moves a queue *earlier* on its
 *    service tree, as the reference describes;
 *  - jiffy-sized constants are in ns: CFQ_MIN_TT = 2 ms, the one-jiffy slack and the IDLE
 *    workload window = 1 ms;
 *  - close cooperators (another process's queue whose next request follows the last dispatch,
 *    as interleaved readers of one file make) are served instead of idling, as in the kernel,
 *    but the queues are not merged: the cooperator takes over the rest of the expiring
 *    queue's slice instead, so a chain of cooperators shares one slice as the kernel's merged
 *    queue does, and others in the group are not starved by it. Which cooperator, and which
 *    member of a chain takes a new turn, follow the position instead of the kernel's
 *    "nearest" (close_cooperator(), chain_first()). Only on rotational devices (the index's
 *    upkeep is per request; without seeks to save it buys nothing);
 *  - an empty active queue with a request in flight is not preempted for being empty: the
 *    next dispatch expires it, and the queues waiting keep their service-tree order
 *    (should_preempt() says why: the executor's depth, not the device, gates dispatch).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sched_i.h"

#define CFQ_SLICE_SCALE 5
#define CFQ_IDLE_DELAY (200 * SCHED_NS_PER_MS)	    /* [ns] IDLE-class key offset, new groups */
#define CFQ_IOPS_GROUP_DELAY 50ull		    /* [dispatches] new-group offset, IOPS mode */
#define CFQ_MIN_TT (2 * SCHED_NS_PER_MS)	    /* [ns] minimum workload slice */
#define CFQ_JIFFY SCHED_NS_PER_MS		    /* [ns] the kernel's one-tick slack */
/*
 * [ns] IDLE-class queues start only this long after the last RT/BE dispatch or completion
 * (2.6.2x CFQ's idle-class grace, HZ/10). Without it an IDLE reader slips into every gap a
 * one-request-at-a-time BE reader leaves while its next request crosses FUSE, and with
 * slice_idle = 0 (no idling to cover those gaps) `ionice -c3` would mean nothing.
 */
#define CFQ_IDLE_GRACE (100 * SCHED_NS_PER_MS)
#define CFQ_HW_QUEUE_MIN 5			    /* [I/Os] NCQ detection threshold */
#define CFQ_HW_TAG_SAMPLES 50
#define CFQ_HIST_DIVISOR 4			    /* busy_queues_avg decay */
#define CFQQ_SEEK_THR (400 * 1024ull)		    /* [bytes] rotational seek distance */
#define CFQQ_SECT_THR_NONROT (32 * 1024ull)	    /* [bytes] small request on SSD */
#define CFQQ_CLOSE_THR (4 * 1024 * 1024ull)	    /* [bytes] "close" for preemption */
#define CFQ_PAGE_SIZE 4096ull			    /* [bytes] "tiny request" bound */
#define CFQ_TTIME_VALID 80			    /* samples (x256 decayed) */

#define TUN(sd, i) ((sd)->tun[SCHED_POLICY_CFQ][(i)])

/* mark/clear/test helpers for cfqq flags (kernel CFQ_CFQQ_FNS style) */
#define CFQQ_FNS(name, bit)                                                        \
	static inline void cfqq_mark_##name(struct sched_queue *q)                 \
	{                                                                          \
		q->cfq.flags |= (bit);                                             \
	}                                                                          \
	static inline void cfqq_clear_##name(struct sched_queue *q)                \
	{                                                                          \
		q->cfq.flags &= ~(uint32_t)(bit);                                  \
	}                                                                          \
	static inline bool cfqq_##name(const struct sched_queue *q)                \
	{                                                                          \
		return (q->cfq.flags & (bit)) != 0;                                \
	}
CFQQ_FNS(idle_window, CFQQ_F_IDLE_WINDOW)
CFQQ_FNS(wait_request, CFQQ_F_WAIT_REQUEST)
CFQQ_FNS(must_dispatch, CFQQ_F_MUST_DISPATCH)
CFQQ_FNS(fifo_expire, CFQQ_F_FIFO_EXPIRE)
CFQQ_FNS(deep, CFQQ_F_DEEP)
CFQQ_FNS(wait_busy, CFQQ_F_WAIT_BUSY)
CFQQ_FNS(slice_new, CFQQ_F_SLICE_NEW)
CFQQ_FNS(caller, CFQQ_F_CALLER)

#define q_of_st(n) sched_container_of(n, struct sched_queue, cfq.st_node)

/* ---------------------------------------------------------------------------------------- */
/* Small helpers */

static int q_class(const struct sched_queue *q)
{
	switch (q->ioclass) {
	case SCHED_CLASS_RT:
		return WL_RT;
	case SCHED_CLASS_IDLE:
		return WL_IDLE;
	default:
		return WL_BE;
	}
}

static int q_type(const struct sched_queue *q)
{
	if (!q->sync)
		return WL_ASYNC;
	return cfqq_idle_window(q) ? WL_SYNC : WL_SYNC_NOIDLE;
}

static struct cfq_st *st_for(struct sched_group *g, int cls, int type)
{
	if (cls == WL_IDLE)
		return &g->cfq.st_idle;
	return &g->cfq.st[cls][type];
}

/*
 * The workload type of the tree q is on: the one it is served from. It may differ from
 * q_type(q), which follows the newest idle-window verdict (a queue is placed on a tree when
 * it becomes busy, by the verdict of its previous request, as in the kernel).
 */
static int st_type(const struct sched_queue *q)
{
	if (q_class(q) == WL_IDLE) /* one tree for every type */
		return q_type(q);
	for (int t = 0; t < WL_TYPES; t++)
		if (q->cfq.st == st_for(q->g, q_class(q), t))
			return t;
	return q_type(q);
}

/* Busy queues of class cls in g (the sum of its trees' counts, kept in g's first lines). */
static uint32_t grp_busy_wl(const struct sched_group *g, int cls)
{
	return g->cfq.nr_busy[cls];
}

/* The class g serves first: RT before BE before IDLE (classes are strict priorities). */
static int busiest_class(const struct sched_group *g)
{
	return grp_busy_wl(g, WL_RT) ? WL_RT : grp_busy_wl(g, WL_BE) ? WL_BE : WL_IDLE;
}

static uint32_t grp_busy_async(const struct sched_group *g)
{
	return g->cfq.nr_busy_async;
}

/* Keeps nr_busy / nr_busy_async in step with a queue joining (+1) or leaving (-1) the tree of
 * (cls, type) of g. */
static void grp_busy_count(struct sched_group *g, int cls, int type, int delta)
{
	g->cfq.nr_busy[cls] += (uint32_t)delta;
	if (cls != WL_IDLE && type == WL_ASYNC)
		g->cfq.nr_busy_async += (uint32_t)delta;
}

static bool iops_mode(const struct sched *sd)
{
	switch (TUN(sd, CFQ_T_GROUP_MODE)) {
	case 1:
		return false;
	case 2:
		return true;
	default:
		return TUN(sd, CFQ_T_SLICE_IDLE) == 0 && sd->cfq.hw_tag != 0;
	}
}

/* slice(sync, prio) = base + base/5 * (4 - prio) */
static sched_ns prio_slice(const struct sched *sd, bool sync, unsigned level)
{
	int64_t base = sync ? TUN(sd, CFQ_T_SLICE_SYNC) : TUN(sd, CFQ_T_SLICE_ASYNC);

	return (sched_ns)(base + base / CFQ_SLICE_SCALE * (SCHED_LEVEL_NORM - (int64_t)level));
}

static bool ttime_valid(const struct cfq_ttime *t)
{
	return t->samples > CFQ_TTIME_VALID;
}

static void ttime_update(struct cfq_ttime *t, sched_ns cap, sched_ns now)
{
	sched_ns elapsed = sched_time_after(now, t->last_end) ? now - t->last_end : 0;

	if (elapsed > cap)
		elapsed = cap;
	t->samples = (7 * t->samples + 256) / 8;
	t->total = (7 * t->total + 256 * elapsed) / 8;
	t->mean = (t->total + 128) / t->samples;
}

static bool thinktime_big(const struct sched *sd, const struct cfq_ttime *t, bool group_idle)
{
	if (!ttime_valid(t))
		return false;
	return t->mean > (sched_ns)(group_idle ? TUN(sd, CFQ_T_GROUP_IDLE)
					       : TUN(sd, CFQ_T_SLICE_IDLE));
}

static bool slice_used(const struct sched_queue *q, sched_ns now)
{
	if (cfqq_slice_new(q))
		return false;
	return !sched_time_before(now, q->cfq.slice_end);
}

/*
 * The active queue lingers: nothing of it or of anyone else is queued or in flight, and no
 * idle timer runs. Its slice goes on (the kernel's lone queue keeps its slice across a gap, so
 * a process that thinks between requests is not re-activated and re-charged for each one),
 * and only its next request, another queue's arrival or the end of the slice ends it. The
 * end of the slice is an event (cfq_next_event): the kernel would end the slice when the
 * process exits, which the daemon cannot see, and without the event the queue of a killed
 * client would stay live until the next I/O on the mount.
 */
static bool lingering(const struct cfq_data *cd)
{
	return cd->active && !cd->rq_queued && !cd->rq_in_driver &&
	       cd->idle_timer == SCHED_NS_NEVER;
}

/* [ns] when a lingering active queue's slice is over: at once if it never got one */
static sched_ns linger_end(const struct cfq_data *cd)
{
	const struct sched_queue *q = cd->active;

	return cfqq_slice_new(q) ? 0 : q->cfq.slice_end;
}

/* ---------------------------------------------------------------------------------------- */
/* Request choice within a queue (cfq_choose_req) */

/* Distance from (file, pos) to rq: *wrap set if rq is behind beyond back_seek_max or in
 * another file ("infinitely" far); fsyncs sit at the head (distance 0). */
static uint64_t rq_dist(const struct sched *sd, const struct sched_rq *rq, uint64_t file,
			uint64_t pos, bool *wrap)
{
	uint64_t back_max = (uint64_t)TUN(sd, CFQ_T_BACK_SEEK_MAX);

	*wrap = false;
	if (rq_is_fsync(rq))
		return 0;
	if (rq->file != file) {
		*wrap = true;
		return 0;
	}
	if (rq->offset >= pos)
		return rq->offset - pos;
	if (pos - rq->offset <= back_max)
		return (pos - rq->offset) * (uint64_t)TUN(sd, CFQ_T_BACK_SEEK_PENALTY);
	*wrap = true;
	return 0;
}

/* true if a sorts before b in (file, offset) */
static bool rq_pos_le(const struct sched_rq *a, const struct sched_rq *b)
{
	if (a->file != b->file)
		return a->file < b->file;
	return a->offset <= b->offset;
}

static struct sched_rq *choose_req(const struct sched *sd, struct sched_rq *r1,
				   struct sched_rq *r2, uint64_t file, uint64_t pos)
{
	uint64_t d1, d2;
	bool w1, w2;

	if (!r1 || r1 == r2)
		return r2;
	if (!r2)
		return r1;
	if (rq_is_sync(r1) != rq_is_sync(r2))
		return rq_is_sync(r1) ? r1 : r2;
	if ((r1->flags ^ r2->flags) & SCHED_RQ_META)
		return (r1->flags & SCHED_RQ_META) ? r1 : r2;
	d1 = rq_dist(sd, r1, file, pos, &w1);
	d2 = rq_dist(sd, r2, file, pos, &w2);
	if (!w1 && !w2) {
		if (d1 != d2)
			return d1 < d2 ? r1 : r2;
		return rq_pos_le(r2, r1) ? r1 : r2; /* tie: the higher position */
	}
	if (!w1)
		return r1;
	if (!w2)
		return r2;
	/* both wrapped: the one furthest behind, only one back seek needed */
	return rq_pos_le(r1, r2) ? r1 : r2;
}

static struct sched_rq *find_next_rq(const struct sched *sd, struct sched_queue *q,
				     struct sched_rq *last)
{
	struct sched_rb_node *next = sched_tree_next(&last->sort_node);
	struct sched_rb_node *prev = sched_tree_prev(&last->sort_node);
	struct sched_rq *rn = NULL, *rp = prev ? rq_of_sort(prev) : NULL;

	if (next) {
		rn = rq_of_sort(next);
	} else {
		next = sched_tree_first(&q->cfq.sort);
		if (next && next != &last->sort_node)
			rn = rq_of_sort(next);
	}
	return choose_req(sd, rn, rp, last->file, last->offset);
}

/* ---------------------------------------------------------------------------------------- */
/* Close cooperators (cfq_close_cooperator) */

static unsigned coop_bucket(uint64_t file)
{
	return (unsigned)((file * 0x9e3779b97f4a7c15ull) >> 56) & (CFQ_COOP_BUCKETS - 1);
}

/* May q be handed the device after another queue's request? Sync, not IDLE, not seeky, with
 * a data request queued (the kernel indexes queues by next_rq; the filters are its). */
static bool coop_eligible(const struct sched *sd, const struct sched_queue *q)
{
	const struct sched_rq *rq = q->cfq.next_rq;

	return sd->rotational && rq && q->cfq.st && q->sync && q_class(q) != WL_IDLE &&
	       !rq_is_fsync(rq) && !cfq_seeky(q->cfq.seek_history); /* popcount last */
}

static void coop_refile(struct sched *sd, struct sched_queue *q)
{
	struct cfq_queue *cq = &q->cfq;
	bool linked = !list_empty(&cq->coop_node);

	if (!coop_eligible(sd, q)) {
		if (linked)
			list_del(&cq->coop_node);
		return;
	}
	if (linked) {
		if (cq->coop_file == cq->next_rq->file)
			return;
		list_del(&cq->coop_node);
	}
	cq->coop_file = cq->next_rq->file;
	list_add_tail(&sd->cfq.coop[coop_bucket(cq->coop_file)], &cq->coop_node);
}

/* Re-files q in the cooperator index after a change of next_rq, st, class or seek history.
 * O(1); touches nothing when the file of next_rq did not change, and nothing at all on a
 * non-rotational device (where no queue is ever filed). */
static inline void coop_update(struct sched *sd, struct sched_queue *q)
{
	if (sd->rotational)
		coop_refile(sd, q);
}

/* The same after a change of next_rq alone (a dispatch): a filed queue whose next request is
 * still a data request in the same file stays as it is, without re-checking the rest. */
static inline void coop_next_changed(struct sched *sd, struct sched_queue *q)
{
	const struct sched_rq *rq = q->cfq.next_rq;

	if (!sd->rotational)
		return;
	if (rq && !list_empty(&q->cfq.coop_node) && rq->file == q->cfq.coop_file &&
	    !rq_is_fsync(rq))
		return;
	coop_refile(sd, q);
}

static bool rq_close(const struct sched *sd, const struct sched_rq *rq);

#define CFQ_COOP_SCAN_MAX 64 /* [queues] looked at per search: bounds the cost per dispatch */

/* Is q, filed in file's bucket, a possible cooperator of cur: another queue of cur's group and
 * RT-ness whose next request is in `file`? (A bucket mixes files.) */
static bool coop_peer(const struct sched_queue *q, const struct sched_queue *cur, uint64_t file)
{
	return q != cur && q->cfq.coop_file == file && q->g == cur->g &&
	       (q_class(q) == WL_RT) == (q_class(cur) == WL_RT);
}

/*
 * The busy queue of cur's group and RT-ness to serve after cur's last dispatch, or NULL. cur
 * itself must be sync and not seeky, and not alone in its group. Candidates' next requests
 * lie in the file of the last dispatch within CFQQ_CLOSE_THR of its end. The kernel takes the
 * nearest in either direction; through FUSE that let interleaved readers drift apart and
 * stay apart (bench/RESULTS.md, "close cooperators"), so, in order:
 *  - one starting exactly where the last dispatch ended wins at once;
 *  - while requests are in flight, nothing else: the device (the model, and SOURCE under the
 *    executor's depth) serves in dispatch order, so a request dispatched now is served after
 *    those, from where they end, and only an exact continuation costs no seek there (taking
 *    the nearest behind locked readers into dispatching each round backwards);
 *  - with nothing in flight, the one furthest behind within one period of cur's stride (gap
 *    plus request), not re-reading the last dispatch: a reader that fell back (its request
 *    arrived after the others had moved on) is served with one back seek, and the others
 *    follow on from there, in step again (C-LOOK, as choose_req() does past back_seek_max);
 *    readers of one stream in step, or a stream further back, are not taken;
 *  - else the nearest ahead, but only before where cur's own next request is due (its last
 *    end plus its last gap): a cooperator beyond that would leave cur behind.
 * At most CFQ_COOP_SCAN_MAX queues of the file's bucket are looked at.
 */
static struct sched_queue *close_cooperator(const struct sched *sd,
					    const struct sched_queue *cur, bool exact_only)
{
	const struct cfq_data *cd = &sd->cfq;
	const struct sched_list *head, *l;
	struct sched_queue *ahead = NULL, *behind = NULL;
	uint64_t ahead_d = CFQQ_CLOSE_THR + 1, behind_d = 0;
	bool busy = exact_only || cd->rq_in_driver > 0;
	/* cur's stride: its gap, if known and in this file; else anything within reach */
	bool known = cur->cfq.last_file == cd->last_file && cur->cfq.gap != UINT32_MAX;
	uint64_t gap = known ? cur->cfq.gap : CFQQ_CLOSE_THR;
	uint64_t due = cur->cfq.last_end + gap; /* where cur's own next request is due */
	/* how far behind a reader left out of this round can be: one period of the stride */
	uint64_t back = known ? gap + (cd->last_pos - cd->last_start) : CFQQ_CLOSE_THR;
	unsigned n = 0;

	if (!cd->have_last_pos || !cur->sync || q_class(cur) == WL_IDLE ||
	    cfq_seeky(cur->cfq.seek_history) || cur->g->cfq.nr_cfqq == 1)
		return NULL;
	head = &cd->coop[coop_bucket(cd->last_file)];
	for (l = head->next; l != head && n < CFQ_COOP_SCAN_MAX; l = l->next, n++) {
		struct sched_queue *q = sched_container_of(l, struct sched_queue, cfq.coop_node);
		uint64_t off;

		if (!coop_peer(q, cur, cd->last_file))
			continue;
		off = q->cfq.next_rq->offset;
		if (off == cd->last_pos)
			return q;
		if (busy)
			continue;
		if (off > cd->last_pos && off < due && off - cd->last_pos < ahead_d) {
			ahead = q;
			ahead_d = off - cd->last_pos;
		} else if (off < cd->last_start && cd->last_pos - off <= back &&
			   cd->last_pos - off > behind_d) {
			behind = q;
			behind_d = cd->last_pos - off;
		}
	}
	return behind ? behind : ahead;
}

/*
 * nq's turn has come (first on its service tree). If nq reads interleaved with cooperators
 * (queues of its group and RT-ness filed under its file, next requests within CFQQ_CLOSE_THR
 * of nq's), the one the head should serve first takes the turn, as the kernel's merged queue
 * would dispatch by position:
 *  - the one whose request continues the last dispatch exactly (a chain whose slice ended);
 *  - else the lowest one behind nq: laggards, which then read on up to nq's position at the
 *    platter's speed (while nq waits) and join it. Given turns of their own instead, laggards
 *    and leader would move the head equally fast in alternate slices and never meet.
 * Returns nq otherwise.
 */
static struct sched_queue *chain_first(const struct sched *sd, struct sched_queue *nq)
{
	const struct cfq_data *cd = &sd->cfq;
	const struct sched_rq *rq = nq->cfq.next_rq;
	const struct sched_list *head, *l;
	struct sched_queue *lowest = nq;
	uint64_t low, gap;
	unsigned n = 0;

	if (list_empty(&nq->cfq.coop_node) || nq->g->cfq.nr_cfqq == 1)
		return nq; /* filed => rq != NULL */
	low = rq->offset;
	/* laggards are behind by at most one period of nq's stride, and not on nq's request
	 * (readers in step): a sequential reader's only laggards would re-read it */
	gap = nq->cfq.last_file == rq->file && nq->cfq.gap != UINT32_MAX ? nq->cfq.gap + rq->len
									  : CFQQ_CLOSE_THR;
	head = &cd->coop[coop_bucket(rq->file)];
	for (l = head->next; l != head && n < CFQ_COOP_SCAN_MAX; l = l->next, n++) {
		struct sched_queue *q = sched_container_of(l, struct sched_queue, cfq.coop_node);
		uint64_t off;

		if (!coop_peer(q, nq, rq->file))
			continue;
		off = q->cfq.next_rq->offset;
		if ((off > rq->offset ? off - rq->offset : rq->offset - off) > CFQQ_CLOSE_THR)
			continue;
		if (cd->have_last_pos && cd->last_file == rq->file && off == cd->last_pos &&
		    rq->offset != cd->last_pos)
			return q;
		if (off < low && off + q->cfq.next_rq->len <= rq->offset &&
		    rq->offset - off <= gap) {
			lowest = q;
			low = off;
		}
	}
	return lowest;
}

/* ---------------------------------------------------------------------------------------- */
/* Service trees */

static int st_cmp(const struct sched_rb_node *a, const struct sched_rb_node *b)
{
	const struct cfq_queue *x = &q_of_st(a)->cfq, *y = &q_of_st(b)->cfq;

	return sched__cmp_key_seq(x->rb_key, x->rb_seq, y->rb_key, y->rb_seq);
}

static void group_notify_queue_add(struct sched *sd, struct sched_group *g)
{
	struct cfq_data *cd = &sd->cfq;
	struct sched_rb_node *last;

	g->cfq.nr_cfqq++;
	if (sched_tree_node_linked(&g->cfq.node))
		return;
	/* a returning group goes to the back: it keeps no credit (kernel behaviour) */
	last = sched_tree_last(&cd->grp_tree);
	if (last) {
		const struct sched_group *lg =
			sched_container_of(last, struct sched_group, cfq.node);

		g->cfq.vdisktime = lg->cfq.vdisktime +
				   (iops_mode(sd) ? CFQ_IOPS_GROUP_DELAY : CFQ_IDLE_DELAY);
	} else {
		g->cfq.vdisktime = cd->min_vdisktime;
	}
	sched__fq_group_add(sd, g);
}

static void group_notify_queue_del(struct sched *sd, struct sched_group *g)
{
	g->cfq.nr_cfqq--;
	if (g->cfq.nr_cfqq)
		return;
	sched__fq_group_del(sd, g);
	g->cfq.saved_wl_slice = 0;
}

static sched_ns slice_offset(const struct sched *sd, const struct sched_queue *q)
{
	uint32_t n = q->g->cfq.nr_cfqq;

	return (sched_ns)(n ? n - 1 : 0) *
	       (prio_slice(sd, true, 0) - prio_slice(sd, q->sync, q->level));
}

/*
 * (Re)files q on the service tree of its class and type. front == 0 keys it by its arrival
 * (now + the slice offset, less any residual slice); front > 0 puts it `front` [ns] before
 * the tree's leftmost key, which a preemption needs (see preempt_queue()).
 */
static void service_tree_add(struct sched *sd, struct sched_queue *q, sched_ns front,
			     sched_ns now)
{
	struct cfq_queue *cq = &q->cfq;
	int cls = q_class(q), type = q_type(q);
	struct cfq_st *st = st_for(q->g, cls, type);
	bool is_new = cq->st == NULL;
	struct sched_rb_node *n;
	sched_ns key;

	if (cls == WL_IDLE) {
		n = sched_seq_last(&st->seq);
		if (n && n != &cq->st_node)
			key = q_of_st(n)->cfq.rb_key + CFQ_IDLE_DELAY;
		else
			key = now + CFQ_IDLE_DELAY;
	} else if (!front) {
		key = now + slice_offset(sd, q) - (sched_ns)cq->slice_resid;
		cq->slice_resid = 0;
	} else {
		n = sched_seq_first(&st->seq);
		key = (n ? q_of_st(n)->cfq.rb_key : now) - front;
	}
	if (!is_new) {
		if (key == cq->rb_key && cq->st == st)
			return;
		sched_seq_erase(&cq->st->seq, &cq->st_node);
		grp_busy_count(q->g, cq->st_class, cq->st_type, -1);
		sd->cfq.busy_idle_queues -= cq->st_class == WL_IDLE;
	}
	sd->cfq.busy_idle_queues += cls == WL_IDLE;
	cq->rb_key = key;
	cq->rb_seq = ++sd->cfq.q_seq;
	cq->st = st;
	cq->st_class = (uint8_t)cls;
	cq->st_type = (uint8_t)(cls == WL_IDLE ? 0 : type);
	sched_seq_insert(&st->seq, &cq->st_node, st_cmp);
	grp_busy_count(q->g, cls, cq->st_type, 1);
	if (front || !is_new)
		return;
	group_notify_queue_add(sd, q->g);
}

static void add_rr(struct sched *sd, struct sched_queue *q, sched_ns now)
{
	sd->cfq.busy_queues++;
	if (q->sync)
		sd->cfq.busy_sync_queues++;
	service_tree_add(sd, q, 0, now);
}

static void del_rr(struct sched *sd, struct sched_queue *q)
{
	sd->cfq.busy_idle_queues -= q->cfq.st_class == WL_IDLE;
	sd->cfq.busy_queues--;
	if (q->sync)
		sd->cfq.busy_sync_queues--;
	sched_seq_erase(&q->cfq.st->seq, &q->cfq.st_node);
	grp_busy_count(q->g, q->cfq.st_class, q->cfq.st_type, -1);
	q->cfq.st = NULL;
	coop_update(sd, q);
	group_notify_queue_del(sd, q->g);
}

/* ---------------------------------------------------------------------------------------- */
/* Slices */

static uint32_t group_avg_queues(struct sched_group *g, bool rt)
{
	uint32_t *avg = &g->cfq.busy_queues_avg[rt ? WL_RT : WL_BE];
	uint32_t busy = grp_busy_wl(g, rt ? WL_RT : WL_BE);
	uint32_t lo = *avg < busy ? *avg : busy, hi = *avg < busy ? busy : *avg;

	*avg = ((CFQ_HIST_DIVISOR - 1) * hi + lo + CFQ_HIST_DIVISOR / 2) / CFQ_HIST_DIVISOR;
	return *avg;
}

static sched_ns scaled_slice(const struct sched *sd, struct sched_queue *q)
{
	sched_ns slice = prio_slice(sd, q->sync, q->level);

	if (TUN(sd, CFQ_T_LOW_LATENCY)) {
		uint32_t iq = group_avg_queues(q->g, q->ioclass == SCHED_CLASS_RT);
		sched_ns sync_slice = (sched_ns)TUN(sd, CFQ_T_SLICE_SYNC);
		sched_ns expect = sync_slice * iq;
		sched_ns group_slice = sched__fq_group_slice(sd, q->g);

		if (expect > group_slice) {
			sched_ns base_low = 2 * (sched_ns)TUN(sd, CFQ_T_SLICE_IDLE);
			sched_ns low = base_low * slice / sync_slice;

			if (low > slice)
				low = slice;
			slice = slice * group_slice / expect;
			if (slice < low)
				slice = low;
		}
	}
	return slice;
}

static void set_prio_slice(struct sched *sd, struct sched_queue *q, sched_ns now)
{
	sched_ns slice = scaled_slice(sd, q);

	q->cfq.slice_start = now;
	q->cfq.slice_end = now + slice;
	q->cfq.allocated_slice = slice;
	sched__trace(sd, now, SCHED_TR_SLICE, q, (int64_t)slice, 0, 0);
}

/*
 * Time to charge a queue's group for its slice; *unaccounted gets the overrun (reported).
 * Two cfqfs departures from the kernel, both measured with bench/fairness on the emulated
 * disk, where a weight-100 group among 100/200/400/800 random readers got +33% over its share:
 *  - the overrun past the allocated slice (the request in flight when the slice ended) is
 *    charged, not dropped: with seeky 12 ms requests and 20 ms slices it was worth up to half
 *    a slice for free;
 *  - for a seeky queue, the time from the slice's first dispatch to its first completion
 *    (when the slice formally starts) is charged too: that first request costs what every
 *    other one does. For a sequential queue it stays free, as in the kernel: there it is mostly
 *    the seek of switching queues, and charging it would take bytes from low-weight groups.
 */
static sched_ns slice_usage(const struct sched_queue *q, sched_ns now, sched_ns *unaccounted)
{
	const struct cfq_queue *cq = &q->cfq;
	sched_ns used;

	*unaccounted = 0;
	if (cfqq_slice_new(q) || cq->slice_start == now) {
		/* no completion yet: charge the seek/queueing time anyway */
		used = now - cq->dispatch_start;
		return used ? used : 1;
	}
	used = now - cq->slice_start;
	if (used > cq->allocated_slice)
		*unaccounted = used - cq->allocated_slice;
	if (cfq_seeky(cq->seek_history) && sched_time_after(cq->slice_start, cq->dispatch_start))
		used += cq->slice_start - cq->dispatch_start;
	return used;
}

static void group_served(struct sched *sd, struct sched_group *g, struct sched_queue *q,
			 sched_ns now)
{
	struct cfq_data *cd = &sd->cfq;
	uint32_t nr_sync = g->cfq.nr_cfqq - grp_busy_async(g) - grp_busy_wl(g, WL_IDLE);
	sched_ns unaccounted, used = slice_usage(q, now, &unaccounted);
	uint64_t charge = used;

	if (iops_mode(sd))
		charge = q->cfq.slice_dispatch;
	/* The kernel charges an async queue of a group with no sync queue its whole slice
	 * (writeback would otherwise stream cheaply). cfqfs, not the kernel: a write whose
	 * caller waits is one request per caller at a time, so it pays the time it used. */
	else if (!q->sync && !nr_sync && !cfqq_caller(q))
		charge = q->cfq.allocated_slice;
	sched__fq_charge(sd, g, charge);
	if (sched_time_before(now, cd->workload_expires)) {
		g->cfq.saved_wl_slice = cd->workload_expires - now;
		g->cfq.saved_wl_type = cd->wl_type;
		g->cfq.saved_wl_class = cd->wl_class;
	} else {
		g->cfq.saved_wl_slice = 0;
	}
	q->stats.disk_time += used;
	g->stats.disk_time += used;
}

static void del_timer(struct sched *sd, sched_ns now)
{
	struct cfq_data *cd = &sd->cfq;

	if (cd->idle_timer == SCHED_NS_NEVER)
		return;
	if (cd->active) {
		sched_ns idled = sched_time_after(now, cd->idle_start) ? now - cd->idle_start : 0;

		cd->active->stats.idle_time += idled;
		cd->active->g->stats.idle_time += idled;
	}
	cd->idle_timer = SCHED_NS_NEVER;
}

/*
 * Cache warming: hints only, no decision reads what they touch. With thousands of busy queues
 * each is served once per pass over all of them, so by its turn its lines and its requests'
 * have left every cache and an activation stalls on miss after miss: without this,
 * bench/sched_micro's 16384 queues in 10 groups cost about 4x its 64 queues, against 1.7x in
 * one group, where queues are served in allocation order and the hardware prefetcher follows.
 * A "turn" below is one queue's slice, from activation to expiry.
 *
 * Which turn to warm depends on the number of busy groups. Each group stays on the group tree
 * while it is served and is re-keyed at expiry, so the groups take their turns in tree order
 * (a group re-keyed ahead of others breaks it: a wrong guess costs prefetches, not decisions).
 * - Few groups: the queue a group serves next is the successor of its active queue on the
 *   service tree, and that turn comes after one turn of each other group. It is warmed at
 *   this activation, its requests at this expiry.
 * - Many groups (more than WARM_FEW_GROUPS): that turn is too far off, the lines would leave
 *   the cache first. The pipeline follows the group tree instead, with leads short enough to
 *   keep the lines and long enough to cover a miss: at each activation the group
 *   WARM_GROUP_AHEAD turns ahead is warmed, and the queue that the group WARM_QUEUE_AHEAD
 *   turns ahead will serve is found through that group's lines (warmed two turns ago, so the
 *   reads do not stall) and warmed; at expiry, the requests of the next turn's queue.
 * Lines are prefetched only through pointers in lines warmed earlier: a read of a line still
 * on its way would stall as the access itself would. Writes follow, hence rw = 1.
 * bench/RESULTS.md has the figures, including the crossover that sets WARM_FEW_GROUPS.
 */
#define WARM_FEW_GROUPS 64
#define WARM_GROUP_AHEAD 4
#define WARM_QUEUE_AHEAD 2
_Static_assert(WARM_GROUP_AHEAD > WARM_QUEUE_AHEAD && WARM_QUEUE_AHEAD > 1,
	       "each stage reads only lines warmed by an earlier one");

static void prefetch_lines(const void *p, size_t len)
{
	const char *c = p;

	/* An empty asm taking the address is a side effect the compiler must keep: otherwise
	 * GCC 12's mod/ref analysis finds that the warming functions store nothing and deletes
	 * their calls, prefetches and all (it did, silently, once the service trees changed). */
	__asm__ volatile("" : : "r"(c));
	for (size_t i = 0; i < len; i += 64)
		__builtin_prefetch(c + i, 1, 3);
	__builtin_prefetch(c + len - 1, 1, 3);
}

/* The group k turns after g's (g's k-th successor on the group tree), or NULL. O(k). */
static const struct sched_group *group_ahead(const struct sched_group *g, int k)
{
	const struct sched_rb_node *n = &g->cfq.node;

	for (int i = 0; n && i < k; i++)
		n = sched_tree_next(n);
	return n ? sched_container_of(n, struct sched_group, cfq.node) : NULL;
}

static bool warm_by_groups(const struct sched *sd, const struct sched_queue *q)
{
	return sd->cfq.grp_tree.count > WARM_FEW_GROUPS &&
	       sched_tree_node_linked(&q->g->cfq.node);
}

/* Lines a group's turn touches: identity and tree lines, its BE service trees (RT and IDLE
 * work is rare, and choosing the class would read a line still on its way), its stats.
 * Reads nothing of g. */
static void warm_group(const struct sched_group *g)
{
	prefetch_lines(g, offsetof(struct sched_group, cfq.st));
	prefetch_lines(g->cfq.st[WL_BE], sizeof(g->cfq.st[WL_BE]));
	prefetch_lines(&g->stats, offsetof(struct sched_stats, latency.count));
}

/* The queue g serves first on its next turn, as far as can be told without choosing its
 * workload: the first queue of its first busy service tree, by class then type. */
static const struct sched_queue *first_queue_of(const struct sched_group *g)
{
	const struct sched_rb_node *n = NULL;
	int cls = busiest_class(g);

	if (cls == WL_IDLE)
		n = sched_seq_first(&g->cfq.st_idle.seq);
	for (int t = WL_TYPES - 1; !n && cls != WL_IDLE && t >= 0; t--)
		n = sched_seq_first(&g->cfq.st[cls][t].seq);
	return n ? q_of_st(n) : NULL;
}

/* The queue of the turn `ahead` turns after q's (see above), or NULL. With few groups
 * (!by_groups), the one q's group serves next, whatever `ahead`. */
static const struct sched_queue *next_turn_queue(const struct sched_queue *q, bool by_groups,
						 int ahead)
{
	const struct sched_rb_node *n;
	const struct sched_group *g;

	if (by_groups)
		return (g = group_ahead(q->g, ahead)) ? first_queue_of(g) : NULL;
	if (!q->cfq.st || !(n = sched_seq_next(&q->cfq.st->seq, &q->cfq.st_node)))
		return NULL;
	return q_of_st(n);
}

/* At q's activation (see above). A queue is warmed whole, its histogram's buckets with it:
 * which one its next completion counts in is not known. */
static void warm_next_turns(const struct sched *sd, const struct sched_queue *q)
{
	bool by_groups = warm_by_groups(sd, q);
	const struct sched_queue *s = next_turn_queue(q, by_groups, WARM_QUEUE_AHEAD);
	const struct sched_group *g;

	if (s)
		prefetch_lines(s, sizeof(*s));
	if (by_groups && (g = group_ahead(q->g, WARM_GROUP_AHEAD)))
		warm_group(g);
}

/* At q's expiry, for the queue of the next turn: the head it will dispatch, the two ends of
 * its FIFO (the oldest, checked for expiry; the newest), and its successor's node, which its
 * own expiry writes when it leaves the front of its service tree. */
static void warm_next_requests(const struct sched *sd, const struct sched_queue *q)
{
	const struct sched_queue *s = next_turn_queue(q, warm_by_groups(sd, q), 1);
	const struct sched_rb_node *n;
	const struct sched_rq *rq;

	if (!s)
		return;
	if (s->cfq.st && (n = sched_seq_next(&s->cfq.st->seq, &s->cfq.st_node)))
		prefetch_lines(n, sizeof(*n));
	rq = s->cfq.next_rq;
	if (!rq)
		return;
	prefetch_lines(rq, sizeof(*rq));
	if (s->cfq.fifo.next != &rq->fifo_node)
		prefetch_lines(rq_of_fifo(s->cfq.fifo.next), sizeof(*rq));
	if (s->cfq.fifo.prev != &rq->fifo_node && s->cfq.fifo.prev != s->cfq.fifo.next)
		prefetch_lines(rq_of_fifo(s->cfq.fifo.prev), sizeof(*rq));
}

static void slice_expired(struct sched *sd, bool timed_out, sched_ns now)
{
	struct cfq_data *cd = &sd->cfq;
	struct sched_queue *q = cd->active;
	struct cfq_queue *cq;

	if (!q)
		return;
	cq = &q->cfq;
	if (cfqq_wait_request(q))
		del_timer(sd, now);
	cfqq_clear_wait_request(q);
	cfqq_clear_wait_busy(q);
	if (timed_out) {
		if (cfqq_slice_new(q))
			cq->slice_resid = (int64_t)scaled_slice(sd, q);
		else
			cq->slice_resid = (int64_t)(cq->slice_end - now);
	}
	sched__trace(sd, now, SCHED_TR_EXPIRE, q, cq->slice_dispatch, (int64_t)cq->allocated_slice,
		     timed_out);
	warm_next_requests(sd, q);
	group_served(sd, q->g, q, now);
	if (cq->st && cq->queued == 0)
		del_rr(sd, q);
	if (cq->st)
		service_tree_add(sd, q, 0, now);
	cd->active = NULL;
	sched__queue_maybe_release(sd, q);
}

/* ---------------------------------------------------------------------------------------- */
/* Choosing group, workload and queue */

static int choose_wl_type(struct sched_group *g, int cls)
{
	int best = WL_SYNC_NOIDLE;
	bool valid = false;
	sched_ns lowest = 0;

	for (int t = 0; t < WL_TYPES; t++) {
		struct sched_rb_node *n = sched_seq_first(&st_for(g, cls, t)->seq);

		if (n && (!valid || sched_time_before(q_of_st(n)->cfq.rb_key, lowest))) {
			lowest = q_of_st(n)->cfq.rb_key;
			best = t;
			valid = true;
		}
	}
	return best;
}

static void choose_wl_class_and_type(struct sched *sd, struct sched_group *g, sched_ns now)
{
	struct cfq_data *cd = &sd->cfq;
	int original = cd->wl_class;
	sched_ns slice, group_slice;
	uint32_t count, busy;

	cd->wl_class = (uint8_t)busiest_class(g);
	if (cd->wl_class == WL_IDLE) {
		cd->wl_type = WL_ASYNC;
		cd->workload_expires = now + CFQ_JIFFY;
		return;
	}
	if (original == cd->wl_class) {
		count = (uint32_t)sched_seq_count(&st_for(g, cd->wl_class, cd->wl_type)->seq);
		if (count && !sched_time_after(now, cd->workload_expires))
			return;
	}
	cd->wl_type = (uint8_t)choose_wl_type(g, cd->wl_class);
	count = (uint32_t)sched_seq_count(&st_for(g, cd->wl_class, cd->wl_type)->seq);
	group_slice = sched__fq_group_slice(sd, g);
	busy = grp_busy_wl(g, cd->wl_class);
	if (g->cfq.busy_queues_avg[cd->wl_class] > busy)
		busy = g->cfq.busy_queues_avg[cd->wl_class];
	slice = group_slice * count / (busy ? busy : 1);
	if (cd->wl_type == WL_ASYNC) {
		sched_ns tmp = (sched_ns)TUN(sd, CFQ_T_TARGET_LATENCY) * grp_busy_async(g) /
			       (cd->busy_queues ? cd->busy_queues : 1);

		if (tmp < slice)
			slice = tmp;
		slice = slice * (sched_ns)TUN(sd, CFQ_T_SLICE_ASYNC) /
			(sched_ns)TUN(sd, CFQ_T_SLICE_SYNC);
	} else if (slice < 2 * (sched_ns)TUN(sd, CFQ_T_SLICE_IDLE)) {
		slice = 2 * (sched_ns)TUN(sd, CFQ_T_SLICE_IDLE);
	}
	if (slice < CFQ_MIN_TT)
		slice = CFQ_MIN_TT;
	cd->workload_expires = now + slice;
}

static void choose_group(struct sched *sd, sched_ns now)
{
	struct cfq_data *cd = &sd->cfq;
	struct sched_group *g = sched__fq_pick(sd);

	cd->serving_group = g;
	if (!g)
		return;
	if (g->cfq.saved_wl_slice) {
		cd->workload_expires = now + g->cfq.saved_wl_slice;
		cd->wl_type = g->cfq.saved_wl_type;
		cd->wl_class = g->cfq.saved_wl_class;
	} else {
		cd->workload_expires = now - 1;
	}
	choose_wl_class_and_type(sd, g, now);
}

static void set_active_queue(struct sched *sd, struct sched_queue *q, sched_ns now)
{
	struct cfq_data *cd = &sd->cfq;
	struct cfq_queue *cq;

	cd->active = q;
	if (!q)
		return;
	cq = &q->cfq;
	cq->slice_start = 0;
	cq->dispatch_start = now;
	cq->allocated_slice = 0;
	cq->slice_end = 0;
	cq->slice_dispatch = 0;
	cd->active_progress = now;
	cfqq_clear_wait_request(q);
	cfqq_clear_must_dispatch(q);
	cfqq_clear_fifo_expire(q);
	cfqq_clear_caller(q);
	cfqq_mark_slice_new(q);
	del_timer(sd, now);
	q->stats.slices++;
	q->g->stats.slices++;
	warm_next_turns(sd, q);
	sched__trace(sd, now, SCHED_TR_ACTIVATE, q, q_class(q), st_type(q), 0);
}

static bool should_idle(const struct sched *sd, const struct sched_queue *q)
{
	const struct cfq_st *st = q->cfq.st;

	if (!TUN(sd, CFQ_T_SLICE_IDLE) || q_class(q) == WL_IDLE || !st)
		return false;
	if (cfqq_idle_window(q) && !(!sd->rotational && sd->cfq.hw_tag))
		return true;
	/* service-tree idling: the last queue of its tree */
	return sched_seq_count(&st->seq) == 1 && q->sync && !thinktime_big(sd, &st->ttime, false);
}

/*
 * May the active queue keep the device idle for its in-flight requests? CFQ waits for them
 * (to keep a sequential reader's or a group's share), trusting them to complete within a few
 * service times. A request stalled on SOURCE (a hung NFS server, a dying disk) would then
 * stop every other queue for as long as it hangs. So the wait lasts at most fifo_expire_sync
 * after the queue's last progress (activation, dispatch or completion): that long, a sync
 * request waiting in another queue would be past its own FIFO deadline. While waiting, the
 * end of the wait is recorded for cfq_next_event() so a worker comes back to expire the queue.
 */
static bool wait_for_inflight(struct sched *sd, sched_ns now)
{
	struct cfq_data *cd = &sd->cfq;
	sched_ns until = cd->active_progress + (sched_ns)TUN(sd, CFQ_T_FIFO_EXPIRE_SYNC);

	if (!sched_time_before(now, until)) {
		sched__trace(sd, now, SCHED_TR_WAIT_OVER, cd->active, 0, 0, 0);
		return false;
	}
	cd->inflight_wait = until;
	return true;
}

/*
 * Expires the active queue q (empty, slice not used up) and makes its close cooperator nq
 * (same group) active with what is left of q's slice, or a fresh slice started now when q's
 * had not started. The kernel merges the two queues instead, so that they share one slice;
 * handing the remainder on shares it too: a chain of cooperators ends when the slice does,
 * and each queue is charged for its own part (slice_start = its activation).
 */
static void hand_over_slice(struct sched *sd, struct sched_queue *q, struct sched_queue *nq,
			    sched_ns now)
{
	bool started = !cfqq_slice_new(q);
	sched_ns end = q->cfq.slice_end;

	sched__trace(sd, now, SCHED_TR_COOP, q, (int64_t)nq->key, 0, 0);
	slice_expired(sd, false, now);
	set_active_queue(sd, nq, now);
	cfqq_clear_slice_new(nq);
	if (started && sched_time_before(now, end)) {
		nq->cfq.slice_start = now;
		nq->cfq.slice_end = end;
		nq->cfq.allocated_slice = end - now;
		sched__trace(sd, now, SCHED_TR_SLICE, nq, (int64_t)(end - now), 0, 0);
	} else {
		set_prio_slice(sd, nq, now);
	}
	sd->cfq.coop_switches++;
}

static struct sched_queue *select_queue(struct sched *sd, sched_ns now)
{
	struct cfq_data *cd = &sd->cfq;
	struct sched_queue *q = cd->active, *nq;
	struct sched_rb_node *n;

	if (!q)
		goto new_queue;
	if (!cd->rq_queued) {
		if (lingering(cd) && !sched_time_before(now, linger_end(cd)))
			slice_expired(sd, false, now);
		return NULL;
	}
	/* we were waiting for the group to get backlogged: hand over now */
	if (cfqq_wait_busy(q) && q->cfq.queued)
		goto expire;
	if (slice_used(q, now) && !cfqq_must_dispatch(q)) {
		/* idled all along: let the in-flight request finish so the group stays busy */
		if (q->g->cfq.nr_cfqq == 1 && !q->cfq.queued && q->cfq.dispatched &&
		    should_idle(sd, q) && wait_for_inflight(sd, now))
			return NULL;
		goto check_group_idle;
	}
	if (q->cfq.queued)
		return q;
	/* another process's request follows on from ours: serve it rather than idle */
	nq = sd->rotational ? close_cooperator(sd, q, false) : NULL;
	if (nq) {
		hand_over_slice(sd, q, nq, now);
		return nq;
	}
	if (cd->idle_timer != SCHED_NS_NEVER)
		return NULL;
	/* a deep seeky queue on a device faster than the process: stop idling on it */
	if (cfq_seeky(q->cfq.seek_history) && cfqq_idle_window(q) &&
	    (cfqq_slice_new(q) ||
	     (int64_t)(q->cfq.slice_end - now) > (int64_t)(now - q->cfq.slice_start))) {
		cfqq_clear_deep(q);
		cfqq_clear_idle_window(q);
	}
	if (q->cfq.dispatched && should_idle(sd, q) && wait_for_inflight(sd, now))
		return NULL;
check_group_idle:
	if (TUN(sd, CFQ_T_GROUP_IDLE) && q->g->cfq.nr_cfqq == 1 && q->g->cfq.dispatched &&
	    !thinktime_big(sd, &q->g->cfq.ttime, true) && wait_for_inflight(sd, now))
		return NULL;
expire:
	slice_expired(sd, false, now);
new_queue:
	choose_group(sd, now);
	if (!cd->serving_group || !cd->rq_queued)
		return NULL;
	/* Only IDLE-class work is left: it waits until RT/BE I/O has been quiet for a grace. */
	cd->idle_class_wait = SCHED_NS_NEVER;
	if (cd->wl_class == WL_IDLE && cd->busy_idle_queues == cd->busy_queues &&
	    sched_time_after(cd->nonidle_last + CFQ_IDLE_GRACE, now)) {
		cd->idle_class_wait = cd->nonidle_last + CFQ_IDLE_GRACE;
		return NULL;
	}
	n = sched_seq_first(&st_for(cd->serving_group, cd->wl_class, cd->wl_type)->seq);
	if (!n)
		return NULL;
	nq = q_of_st(n);
	if (sd->rotational)
		nq = chain_first(sd, nq);
	set_active_queue(sd, nq, now);
	return cd->active;
}

/* ---------------------------------------------------------------------------------------- */
/* Dispatch */

static bool slice_used_soon(const struct sched *sd, const struct sched_queue *q, sched_ns now)
{
	if (cfqq_slice_new(q))
		return true;
	return sched_time_after(now + (sched_ns)TUN(sd, CFQ_T_SLICE_IDLE) * q->cfq.dispatched,
				q->cfq.slice_end);
}

static bool may_dispatch(const struct sched *sd, const struct sched_queue *q, sched_ns now)
{
	const struct cfq_data *cd = &sd->cfq;
	uint32_t max;

	if (cfqq_must_dispatch(q))
		return true;
	/* drain async requests before starting idling-protected sync I/O */
	if (should_idle(sd, q) && cd->rq_in_flight[0])
		return false;
	/* an async queue waits while sync I/O is in flight */
	if (cd->rq_in_flight[1] && !q->sync)
		return false;
	max = TUN(sd, CFQ_T_QUANTUM) / 2 > 1 ? (uint32_t)TUN(sd, CFQ_T_QUANTUM) / 2 : 1;
	if (q_class(q) == WL_IDLE)
		max = 1;
	if (q->cfq.dispatched >= max) {
		bool promote_sync = q->sync && cd->busy_sync_queues == 1;

		if (q_class(q) == WL_IDLE)
			return false;
		if (cd->busy_queues > 1 && slice_used_soon(sd, q, now) && !promote_sync)
			return false;
		if (cd->busy_queues == 1 || promote_sync)
			max = UINT32_MAX;
		else
			max = (uint32_t)TUN(sd, CFQ_T_QUANTUM);
	}
	/* async depth ramps up by one per slice_sync since the last delayed sync request */
	if (!q->sync && TUN(sd, CFQ_T_LOW_LATENCY)) {
		sched_ns since = sched_time_after(now, cd->last_delayed_sync)
					 ? now - cd->last_delayed_sync
					 : 0;
		uint64_t depth = since / (sched_ns)TUN(sd, CFQ_T_SLICE_SYNC);

		if (!depth && !q->cfq.dispatched)
			depth = 1;
		if (depth < max)
			max = (uint32_t)depth;
	}
	return q->cfq.dispatched < max;
}

static struct sched_rq *check_fifo(struct sched_queue *q, sched_ns now)
{
	struct sched_rq *rq;

	if (cfqq_fifo_expire(q))
		return NULL;
	cfqq_mark_fifo_expire(q);
	if (list_empty(&q->cfq.fifo))
		return NULL;
	rq = rq_of_fifo(q->cfq.fifo.next);
	if (sched_time_before(now, rq->fifo_deadline))
		return NULL;
	return rq;
}

/* Takes head rq out of q's structures (not the service tree). */
static void remove_head(struct sched *sd, struct sched_queue *q, struct sched_rq *rq)
{
	struct cfq_queue *cq = &q->cfq;

	if (cq->next_rq == rq)
		cq->next_rq = find_next_rq(sd, q, rq);
	list_del(&rq->fifo_node);
	sched_tree_erase(&cq->sort, &rq->sort_node);
	cq->queued--;
	sd->cfq.rq_queued--;
	if (rq->flags & SCHED_RQ_META)
		cq->meta_pending--;
	coop_next_changed(sd, q);
}

static void dispatch_insert(struct sched *sd, struct sched_queue *q, struct sched_rq *rq,
			    sched_ns now)
{
	struct cfq_data *cd = &sd->cfq;

	q->cfq.next_rq = find_next_rq(sd, q, rq);
	remove_head(sd, q, rq);
	q->cfq.dispatched++;
	q->g->cfq.dispatched++;
	if (!q->sync && (rq->flags & SCHED_RQ_CALLER))
		cfqq_mark_caller(q);
	cd->rq_in_flight[q->sync]++;
	cd->rq_in_driver++;
	if (q_class(q) != WL_IDLE)
		cd->nonidle_last = now;
	if (!rq_is_fsync(rq)) {
		cd->have_last_pos = true;
		cd->last_file = rq->file;
		cd->last_start = rq->offset;
		cd->last_pos = rq->offset + rq->merged_len;
	}
}

/* Out of line: inlined into catch_up(), which every entry point runs, it cost 12 instructions
 * per request for a branch seldom taken (sched_micro, bench/RESULTS.md). */
static __attribute__((noinline)) void idle_timer_fire(struct sched *sd, sched_ns now)
{
	struct cfq_data *cd = &sd->cfq;
	struct sched_queue *q = cd->active;

	sched__trace(sd, now, SCHED_TR_IDLE_END, q, 0, 0, 0);
	del_timer(sd, now);
	if (q) {
		cfqq_clear_wait_request(q);
		if (cfqq_must_dispatch(q))
			return;
		if (!slice_used(q, now)) {
			if (!cd->busy_queues)
				return;
			if (q->cfq.queued)
				return;
			cfqq_clear_deep(q);
		}
	}
	slice_expired(sd, false, now);
}

/*
 * Timers that came due before this call fire first, at the time they were due. The caller
 * need not deliver a timer on time while nothing is queued (sched_next_event() in sched.h):
 * then the idle timer or a lingering queue's slice end only ends the active queue's slice and
 * charges its group, and doing that here with the due time gives the state an on-time delivery
 * would have. So an arrival after the idle window is never taken for one inside it, and a
 * late wake-up never charges a group for time it did not use. Called at every entry point
 * that acts on the active queue (enqueue, dispatch, complete).
 */
static void catch_up(struct sched *sd, sched_ns now)
{
	struct cfq_data *cd = &sd->cfq;
	sched_ns due = cd->idle_timer;

	if (due != SCHED_NS_NEVER && !sched_time_before(now, due))
		idle_timer_fire(sd, due);
	/* (a lingering queue that never got a slice ends at the next dispatch, as before) */
	if (lingering(cd) && !cfqq_slice_new(cd->active)) {
		due = linger_end(cd);
		if (!sched_time_before(now, due))
			slice_expired(sd, false, due);
	}
}

static struct sched_rq *cfq_dispatch(struct sched *sd, sched_ns now)
{
	struct cfq_data *cd = &sd->cfq;
	struct sched_queue *q;
	struct sched_rq *rq;

	cd->inflight_wait = SCHED_NS_NEVER;
	catch_up(sd, now);
	if (!cd->busy_queues)
		return NULL;
	q = select_queue(sd, now);
	if (!q)
		return NULL;
	rq = check_fifo(q, now);
	if (rq)
		cfqq_mark_must_dispatch(q);
	if (!may_dispatch(sd, q, now))
		return NULL;
	if (!rq)
		rq = q->cfq.next_rq;
	dispatch_insert(sd, q, rq, now);
	cd->active_progress = now;
	q->cfq.slice_dispatch++;
	cfqq_clear_must_dispatch(q);
	/* an async queue that used its request quota, or an IDLE one, yields at once */
	if (cd->busy_queues > 1 &&
	    ((!q->sync && q->cfq.slice_dispatch >= 2 * (uint32_t)TUN(sd, CFQ_T_SLICE_ASYNC_RQ) *
							    (SCHED_LEVELS - q->level)) ||
	     q_class(q) == WL_IDLE)) {
		q->cfq.slice_end = now + 1;
		slice_expired(sd, false, now);
	}
	return rq;
}

static sched_ns cfq_next_event(const struct sched *sd)
{
	const struct cfq_data *cd = &sd->cfq;

	/* The grace wait matters only while IDLE-class work is all that is queued. */
	if (cd->idle_class_wait != SCHED_NS_NEVER && cd->busy_queues &&
	    cd->busy_idle_queues == cd->busy_queues &&
	    (cd->idle_timer == SCHED_NS_NEVER || sched_time_after(cd->idle_timer,
								  cd->idle_class_wait)))
		return cd->idle_class_wait;
	if (cd->inflight_wait != SCHED_NS_NEVER &&
	    (cd->idle_timer == SCHED_NS_NEVER || sched_time_after(cd->idle_timer, cd->inflight_wait)))
		return cd->inflight_wait;
	if (lingering(cd))
		return linger_end(cd);
	return cd->idle_timer;
}

/* ---------------------------------------------------------------------------------------- */
/* Arrival */

static void update_seek(const struct sched *sd, struct sched_queue *q, const struct sched_rq *rq)
{
	struct cfq_queue *cq = &q->cfq;
	bool seek;

	if (rq_is_fsync(rq))
		seek = false; /* at the queue's last position */
	else if (!sd->rotational)
		seek = rq->len < CFQQ_SECT_THR_NONROT;
	else if (rq->file != cq->last_file)
		seek = true;
	else
		seek = (rq->offset > cq->last_end ? rq->offset - cq->last_end
						  : cq->last_end - rq->offset) > CFQQ_SEEK_THR;
	cq->seek_history = (cq->seek_history << 1) | seek;
}

static void update_idle_window(const struct sched *sd, struct sched_queue *q,
			       const struct sched_rq *rq)
{
	bool enable;

	if (!q->sync || q_class(q) == WL_IDLE)
		return;
	enable = cfqq_idle_window(q);
	if (q->cfq.queued >= 4)
		cfqq_mark_deep(q);
	if (rq->flags & SCHED_RQ_NOIDLE)
		enable = false;
	else if (!TUN(sd, CFQ_T_SLICE_IDLE) || (!cfqq_deep(q) && cfq_seeky(q->cfq.seek_history)))
		enable = false;
	else if (ttime_valid(&q->cfq.ttime))
		enable = q->cfq.ttime.mean <= (sched_ns)TUN(sd, CFQ_T_SLICE_IDLE);
	if (enable)
		cfqq_mark_idle_window(q);
	else
		cfqq_clear_idle_window(q);
}

static bool rq_close(const struct sched *sd, const struct sched_rq *rq)
{
	const struct cfq_data *cd = &sd->cfq;
	uint64_t d;

	if (!cd->have_last_pos || rq->file != cd->last_file)
		return false;
	d = rq->offset > cd->last_pos ? rq->offset - cd->last_pos : cd->last_pos - rq->offset;
	return d <= CFQQ_CLOSE_THR;
}

static bool should_preempt(const struct sched *sd, const struct sched_queue *nq,
			   const struct sched_rq *rq, sched_ns now)
{
	const struct cfq_data *cd = &sd->cfq;
	const struct sched_queue *q = cd->active;

	if (!q)
		return false;
	if (q_class(nq) == WL_IDLE)
		return false;
	if (q_class(q) == WL_IDLE)
		return true;
	if (q->ioclass == SCHED_CLASS_RT && nq->ioclass != SCHED_CLASS_RT)
		return false;
	/*
	 * cfqfs, not the kernel: a sync request of another group does not preempt an async queue
	 * serving a write its caller waits for (SCHED_RQ_CALLER: FUSE without writeback caching
	 * answers a write only when SOURCE has it). The kernel's rule lets any sync request
	 * overtake async writeback, which nobody waits on; here it made a database backend's
	 * buffer writes wait behind a bulk reader group of weight 100 (bench/pgbench).
	 */
	if (rq_is_sync(rq) && !q->sync && !cfqq_must_dispatch(q) &&
	    (!cfqq_caller(q) || sched__fq_is_descendant(q->g, nq->g)))
		return true;
	/*
	 * cfqfs, not the kernel: we are idling for the next request of process P, and P has just
	 * sent an async write instead. Through FUSE a write blocks its caller until answered, so
	 * P is not "thinking": it waits on us, and idling would only stall it for slice_idle
	 * (an fs_mark-style write+fsync loop would pay 8 ms per file). Serve the write.
	 */
	if (!rq_is_sync(rq) && q->sync && !q->cfq.queued && cfqq_wait_request(q) &&
	    rq->queue_key == q->key && q->g == nq->g)
		return true;
	/* other groups never preempt, except as above: fairness between groups */
	if (!sched__fq_is_descendant(q->g, nq->g))
		return false;
	if (slice_used(q, now))
		return true;
	if (nq->ioclass == SCHED_CLASS_RT && q->ioclass != SCHED_CLASS_RT)
		return true;
	/* idling on the SYNC_NOIDLE tree: the active queue is its last, nq is the second */
	if (cd->wl_type == WL_SYNC_NOIDLE && q_type(nq) == WL_SYNC_NOIDLE && !q->cfq.queued &&
	    sched_seq_count(&nq->cfq.st->seq) == 2)
		return true;
	if ((rq->flags & SCHED_RQ_META) && !q->cfq.meta_pending)
		return true;
	/*
	 * cfqfs, not the kernel: an empty active queue that will not idle preempts only when
	 * nothing of it is in flight. With a request in flight it is done: the next dispatch
	 * expires it and takes the next queue in service-tree order. The kernel's dispatch loop
	 * asks again at once, so its window is short; cfqfs asks when an executor slot frees,
	 * a whole service time later, and by then the process whose request just completed has
	 * sent the next one. Preempting for it put it ahead of every waiting queue: with 32
	 * random readers on 8 slots, the 9 in flight cycled and 23 starved (bench/RESULTS.md).
	 */
	if (!q->cfq.queued && !q->cfq.dispatched && !should_idle(sd, q))
		return true;
	if (!cfqq_wait_request(q))
		return false;
	return rq_close(sd, rq);
}

static void preempt_queue(struct sched *sd, struct sched_queue *q, sched_ns now)
{
	int old_type = q_type(sd->cfq.active), old_class = q_class(sd->cfq.active);

	sched__trace(sd, now, SCHED_TR_PREEMPT, q, (int64_t)sd->cfq.active->key, 0, 0);
	slice_expired(sd, true, now);
	/*
	 * A preemption across workload types must not resume the saved workload slice, or no
	 * preemption happens, and q's key must beat the other trees' leftmost keys in
	 * choose_wl_type(): the kernel puts it 1 s before its own tree's leftmost. Within the
	 * serving class and type the saved workload slice goes on, and q only needs to be
	 * leftmost on its own tree. cfqfs, not the kernel: the kernel takes the 1 s there too.
	 * Random readers that preempt one another (each arrival finds the active queue empty)
	 * then carried keys that beat the SYNC tree's whenever the workload slice ended, so a
	 * sequential reader waited ~1 s at a time, beyond target_latency, and got ~7% of the
	 * disk time instead of its workload's 25%
	 * (tests/sim: latency/noidle_preemptions_leave_the_sync_tree_its_turns).
	 */
	if (old_type != q_type(q))
		q->g->cfq.saved_wl_slice = 0;
	if (old_type != q_type(q) || old_class != q_class(q))
		service_tree_add(sd, q, 1000 * SCHED_NS_PER_MS, now);
	else
		service_tree_add(sd, q, 1, now);
	q->cfq.slice_end = 0;
	cfqq_mark_slice_new(q);
}

/*
 * Is q, which has just queued rq, a close cooperator of the empty active queue (same group
 * and RT-ness, rq near the last dispatch)? Then it takes over the rest of the slice instead of
 * preempting: a preemption starts a fresh slice, and a chain of cooperators preempting each
 * other would keep the device past its slice. With the slice used up it waits its turn.
 */
static bool coop_of_active(const struct sched *sd, const struct sched_queue *q,
			   const struct sched_rq *rq)
{
	const struct sched_queue *a = sd->cfq.active;

	return sd->rotational && a && !a->cfq.queued && a->g == q->g && a->sync &&
	       q_class(a) != WL_IDLE && (q_class(a) == WL_RT) == (q_class(q) == WL_RT) &&
	       !cfq_seeky(a->cfq.seek_history) && !list_empty(&q->cfq.coop_node) &&
	       rq_close(sd, rq);
}

static void cfq_enqueue(struct sched *sd, struct sched_queue *q, struct sched_rq *rq,
			sched_ns now)
{
	struct cfq_data *cd = &sd->cfq;
	struct cfq_queue *cq = &q->cfq;
	struct sched_rq *old;
	bool sync = rq_is_sync(rq);

	catch_up(sd, now);
	rq->fifo_deadline = rq->enqueue_time + (sched_ns)(sync ? TUN(sd, CFQ_T_FIFO_EXPIRE_SYNC)
							       : TUN(sd, CFQ_T_FIFO_EXPIRE_ASYNC));
	if (sched__merge(sd, &cq->sort, rq, true, TUN(sd, CFQ_T_NO_MERGE_BEHIND) != 0,
			 (uint64_t)TUN(sd, CFQ_T_MAX_MERGE), &old)) {
		if (old) {
			if (cq->next_rq == old)
				cq->next_rq = rq;
			if (old->flags & SCHED_RQ_META)
				cq->meta_pending--;
			if (rq->flags & SCHED_RQ_META)
				cq->meta_pending++;
		}
		coop_update(sd, q); /* the class may have changed with rq */
		return;
	}
	list_add_tail(&cq->fifo, &rq->fifo_node);
	sched_tree_insert(&cq->sort, &rq->sort_node, sched__rq_cmp);
	cq->queued++;
	cd->rq_queued++;
	if (!cq->st)
		add_rr(sd, q, now);
	cq->next_rq = choose_req(sd, cq->next_rq, rq, cd->last_file, cd->last_pos);

	if (rq->flags & SCHED_RQ_META)
		cq->meta_pending++;
	if (q->sync) {
		ttime_update(&cq->ttime, 2 * (sched_ns)TUN(sd, CFQ_T_SLICE_IDLE), now);
		ttime_update(&cq->st->ttime, 2 * (sched_ns)TUN(sd, CFQ_T_SLICE_IDLE), now);
	}
	ttime_update(&q->g->cfq.ttime, 2 * (sched_ns)TUN(sd, CFQ_T_GROUP_IDLE), now);
	update_seek(sd, q, rq);
	update_idle_window(sd, q, rq);
	if (!rq_is_fsync(rq)) {
		if (sd->rotational) { /* for the cooperators only */
			uint64_t gap = rq->file == cq->last_file && rq->offset >= cq->last_end
					       ? rq->offset - cq->last_end
					       : UINT32_MAX;

			cq->gap = gap > UINT32_MAX ? UINT32_MAX : (uint32_t)gap;
		}
		cq->last_file = rq->file;
		cq->last_end = rq->offset + rq->len;
	}
	coop_update(sd, q);

	if (q == cd->active) {
		if (cfqq_wait_request(q)) {
			/* no plugging here: stop idling now; a tiny request on an otherwise idle
			 * device is still dispatched even if the slice ran out meanwhile */
			if (rq->len <= CFQ_PAGE_SIZE && cd->busy_queues <= 1)
				cfqq_mark_must_dispatch(q);
			del_timer(sd, now);
			cfqq_clear_wait_request(q);
		}
	} else if (should_preempt(sd, q, rq, now)) {
		if (!coop_of_active(sd, q, rq))
			preempt_queue(sd, q, now);
		else if (!slice_used(cd->active, now))
			hand_over_slice(sd, cd->active, q, now);
	}
}

/* ---------------------------------------------------------------------------------------- */
/* Completion */

static void update_hw_tag(struct sched *sd)
{
	struct cfq_data *cd = &sd->cfq;
	const struct sched_queue *q = cd->active;

	if (cd->rq_in_driver > cd->hw_tag_est_depth)
		cd->hw_tag_est_depth = cd->rq_in_driver;
	if (cd->hw_tag == 1)
		return;
	if (cd->rq_queued <= CFQ_HW_QUEUE_MIN && cd->rq_in_driver <= CFQ_HW_QUEUE_MIN)
		return;
	/* an idling queue too shallow to fill the device says nothing about the device */
	if (q && cfqq_idle_window(q) && q->cfq.dispatched + q->cfq.queued < CFQ_HW_QUEUE_MIN &&
	    cd->rq_in_driver < CFQ_HW_QUEUE_MIN)
		return;
	if (cd->hw_tag_samples++ < CFQ_HW_TAG_SAMPLES)
		return;
	cd->hw_tag = cd->hw_tag_est_depth >= CFQ_HW_QUEUE_MIN ? 1 : 0;
}

static bool should_wait_busy(const struct sched *sd, const struct sched_queue *q, sched_ns now)
{
	if (q->cfq.queued)
		return false;
	if (q->g->cfq.nr_cfqq > 1)
		return false;
	if (thinktime_big(sd, &q->g->cfq.ttime, true))
		return false;
	if (slice_used(q, now))
		return true;
	if (ttime_valid(&q->cfq.ttime) &&
	    (int64_t)(q->cfq.slice_end - now) < (int64_t)q->cfq.ttime.mean)
		return true;
	return (int64_t)(q->cfq.slice_end - now) <= (int64_t)CFQ_JIFFY;
}

static void arm_slice_timer(struct sched *sd, sched_ns now)
{
	struct cfq_data *cd = &sd->cfq;
	struct sched_queue *q = cd->active;
	sched_ns group_idle = 0, sl;

	if (!sd->rotational && cd->hw_tag && !TUN(sd, CFQ_T_GROUP_IDLE))
		return;
	if (!should_idle(sd, q)) {
		if (!TUN(sd, CFQ_T_GROUP_IDLE))
			return;
		group_idle = (sched_ns)TUN(sd, CFQ_T_GROUP_IDLE);
	}
	if (q->cfq.dispatched)
		return;
	/* think time longer than what is left of the slice: idling would overrun it */
	if (ttime_valid(&q->cfq.ttime) &&
	    (int64_t)(q->cfq.slice_end - now) < (int64_t)q->cfq.ttime.mean)
		return;
	/*
	 * cfqfs, not the kernel: whether the group comes back soon is judged by the group's think
	 * time, not by that of q's service tree (the kernel's st->ttime). A database's backends
	 * alternate reads, WAL writes and fdatasyncs over three trees, and each tree's think time
	 * spans the backend's waits on locks and clients (mean > group_idle), while the group as
	 * a whole comes back at once: in a 26 s trace of pgbench next to bulk readers (emulated
	 * hdd) the group went empty 262 times, 82% of them for less than 2 ms, and the kernel's
	 * rule armed group idling none of those times, so the group went to the back of the
	 * group tree each time.
	 */
	if (group_idle &&
	    (q->g->cfq.nr_cfqq > 1 || thinktime_big(sd, &q->g->cfq.ttime, true)))
		return;
	cfqq_mark_wait_request(q);
	sl = group_idle ? group_idle : (sched_ns)TUN(sd, CFQ_T_SLICE_IDLE);
	sched__trace(sd, now, SCHED_TR_IDLE, q, (int64_t)sl, 0, group_idle != 0);
	cd->idle_timer = now + sl;
	cd->idle_start = now;
}

static void cfq_complete(struct sched *sd, struct sched_rq *rq, sched_ns now)
{
	struct cfq_data *cd = &sd->cfq;
	struct sched_queue *q = rq->owner;
	bool sync = rq_is_sync(rq);

	catch_up(sd, now);
	update_hw_tag(sd);
	if (q_class(q) != WL_IDLE)
		cd->nonidle_last = now;
	cd->rq_in_driver--;
	q->cfq.dispatched--;
	q->g->cfq.dispatched--;
	cd->rq_in_flight[q->sync]--;
	if (sync) {
		struct cfq_st *st = q->cfq.st ? q->cfq.st : st_for(q->g, q_class(q), q_type(q));

		q->cfq.ttime.last_end = now;
		st->ttime.last_end = now;
		if (!sched_time_after(rq->enqueue_time + (sched_ns)TUN(sd, CFQ_T_FIFO_EXPIRE_SYNC),
				      now))
			cd->last_delayed_sync = now;
	}
	q->g->cfq.ttime.last_end = now;

	if (cd->active == q) {
		bool empty = q->cfq.queued == 0;

		cd->active_progress = now;

		if (cfqq_slice_new(q)) {
			set_prio_slice(sd, q, now);
			cfqq_clear_slice_new(q);
		}
		if (should_wait_busy(sd, q, now)) {
			sched_ns ext = (sched_ns)TUN(sd, CFQ_T_SLICE_IDLE);

			if (!ext)
				ext = (sched_ns)TUN(sd, CFQ_T_GROUP_IDLE);
			q->cfq.slice_end = now + ext;
			cfqq_mark_wait_busy(q);
		}
		if (slice_used(q, now) || q_class(q) == WL_IDLE)
			slice_expired(sd, true, now);
		/*
		 * cfqfs, not the kernel: after a write its caller waited for, the caller is about
		 * to issue its next request (an fdatasync, a read), so the group may idle as after
		 * a sync request (arm_slice_timer: group_idle only, an async queue never idles
		 * itself). Without it the group left the group tree between a backend's write and
		 * its fsync, 0.1 ms apart, and waited a bulk reader's whole slice.
		 */
		else if ((sync || (rq->flags & SCHED_RQ_CALLER)) && empty)
			arm_slice_timer(sd, now);
		/* else, if nothing is left anywhere, the queue lingers until its slice ends */
	}
}

/* ---------------------------------------------------------------------------------------- */
/* Cancel, replace, drain, groups */

static void cfq_remove(struct sched *sd, struct sched_rq *rq, sched_ns now)
{
	struct sched_queue *q = rq->owner;

	(void)now;
	remove_head(sd, q, rq);
	if (q->cfq.st && !q->cfq.queued && sd->cfq.active != q)
		del_rr(sd, q);
}

static void cfq_replace(struct sched *sd, struct sched_rq *old, struct sched_rq *new_head)
{
	struct sched_queue *q = old->owner;

	sched__rq_replace(&q->cfq.sort, old, new_head);
	if (q->cfq.next_rq == old)
		q->cfq.next_rq = new_head;
	if (old->flags & SCHED_RQ_META)
		q->cfq.meta_pending--;
	if (new_head->flags & SCHED_RQ_META)
		q->cfq.meta_pending++;
	coop_update(sd, q);
}

static void queue_state_init(struct sched_queue *q, sched_ns now)
{
	struct cfq_queue *cq = &q->cfq;

	memset(cq, 0, sizeof(*cq));
	sched_tree_init(&cq->sort);
	list_init(&cq->fifo);
	sched_tree_node_clear(&cq->st_node);
	list_init(&cq->coop_node);
	cq->gap = UINT32_MAX;
	cq->ttime.last_end = now;
	/* a new sync queue is given the benefit of the doubt (kernel) */
	if (q->sync && q->ioclass != SCHED_CLASS_IDLE)
		cq->flags = CFQQ_F_IDLE_WINDOW;
}

static void cfq_queue_init(struct sched *sd, struct sched_queue *q, sched_ns now)
{
	(void)sd;
	queue_state_init(q, now);
}

static void cfq_group_init(struct sched *sd, struct sched_group *g)
{
	(void)sd;
	sched__fq_group_init(g);
}

static void cfq_init(struct sched *sd, sched_ns now)
{
	struct cfq_data *cd = &sd->cfq;
	struct sched_list *l;

	memset(cd, 0, sizeof(*cd));
	sched_tree_init(&cd->grp_tree);
	cd->hw_tag = -1;
	cd->idle_timer = SCHED_NS_NEVER;
	cd->idle_class_wait = SCHED_NS_NEVER;
	cd->inflight_wait = SCHED_NS_NEVER;
	cd->active_progress = now;
	cd->nonidle_last = now - CFQ_IDLE_GRACE;
	cd->last_delayed_sync = now - 1000 * SCHED_NS_PER_MS;
	cd->workload_expires = now;
	for (unsigned b = 0; b < CFQ_COOP_BUCKETS; b++)
		list_init(&cd->coop[b]);
	for (uint32_t i = 0; i < sd->nr_group_slots; i++)
		if (sd->groups[i])
			sched__fq_group_init(sd->groups[i]);
	for (l = sd->all_queues.next; l != &sd->all_queues; l = l->next) {
		struct sched_queue *q = sched_container_of(l, struct sched_queue, all_node);
		struct cfq_ttime tt = q->cfq.ttime;
		uint32_t hist = q->cfq.seek_history;

		queue_state_init(q, now);
		if (sd->gen != 0) { /* keep history across switches when it exists */
			q->cfq.ttime = tt;
			q->cfq.seek_history = hist;
		}
	}
}

static struct sched_rq *cfq_drain(struct sched *sd)
{
	struct sched_rq *first = NULL, *last = NULL;
	struct sched_list *l;

	for (l = sd->all_queues.next; l != &sd->all_queues; l = l->next) {
		struct sched_queue *q = sched_container_of(l, struct sched_queue, all_node);

		while (!list_empty(&q->cfq.fifo)) {
			struct sched_rq *rq = rq_of_fifo(q->cfq.fifo.next);

			list_del(&rq->fifo_node);
			sched_tree_erase(&q->cfq.sort, &rq->sort_node);
			drain_append(&first, &last, rq);
		}
	}
	return first;
}

static bool cfq_queue_held(const struct sched *sd, const struct sched_queue *q)
{
	return sd->cfq.active == q || q->cfq.st != NULL;
}

static void cfq_group_remove(struct sched *sd, struct sched_group *g, sched_ns now)
{
	if (sd->cfq.active && sd->cfq.active->g == g)
		slice_expired(sd, false, now);
	if (sd->cfq.serving_group == g)
		sd->cfq.serving_group = NULL;
}

static void cfq_info(const struct sched *sd, struct sched_info *out)
{
	out->iops_mode = iops_mode(sd);
	out->hw_tag = sd->cfq.hw_tag;
	out->coop_switches = sd->cfq.coop_switches;
}

/* ---------------------------------------------------------------------------------------- */
/* Invariants */

static int check_queue(const struct sched *sd, const struct sched_queue *q, uint32_t *busy,
		       uint32_t *busy_sync, char *buf, size_t buflen)
{
	const struct cfq_queue *cq = &q->cfq;
	const struct sched_list *l;
	size_t nfifo = 0, nreq = 0;
	uint32_t meta = 0;
	int ret;

	ret = sched_tree_check(&cq->sort, sched__rq_cmp, buf, buflen);
	if (ret)
		return ret;
	for (l = cq->fifo.next; l != &cq->fifo; l = l->next) {
		const struct sched_rq *rq = rq_of_fifo(l);

		ret = sched__check_chain(rq, q, &nreq, buf, buflen);
		if (ret)
			return ret;
		if (!sched_tree_node_linked(&rq->sort_node))
			FAIL("queue %llu: FIFO head not in its sort tree",
			     (unsigned long long)q->key);
		if (rq->flags & SCHED_RQ_META)
			meta++;
		nfifo++;
	}
	if (nfifo != cq->sort.count || nfifo != cq->queued || nreq != q->nr_queued)
		FAIL("queue %llu: fifo %zu, tree %zu, queued %u, requests %zu/%u",
		     (unsigned long long)q->key, nfifo, cq->sort.count, cq->queued, nreq,
		     q->nr_queued);
	if (meta != cq->meta_pending)
		FAIL("queue %llu: meta_pending %u, found %u", (unsigned long long)q->key,
		     cq->meta_pending, meta);
	if ((cq->next_rq == NULL) != (cq->queued == 0))
		FAIL("queue %llu: next_rq %p with %u queued", (unsigned long long)q->key,
		     (void *)cq->next_rq, cq->queued);
	if (cq->next_rq && (cq->next_rq->owner != q || RQ_STATE(cq->next_rq) != RQ_ST_QUEUED))
		FAIL("queue %llu: next_rq not one of its heads", (unsigned long long)q->key);
	if (coop_eligible(sd, q) == list_empty(&cq->coop_node))
		FAIL("queue %llu: %s the cooperator index", (unsigned long long)q->key,
		     list_empty(&cq->coop_node) ? "missing from" : "wrongly in");
	if (!list_empty(&cq->coop_node) && cq->coop_file != cq->next_rq->file)
		FAIL("queue %llu: filed under file %llu, next request in %llu",
		     (unsigned long long)q->key, (unsigned long long)cq->coop_file,
		     (unsigned long long)cq->next_rq->file);
	if (cq->dispatched > q->nr_in_flight)
		FAIL("queue %llu: %u dispatched but %u in flight", (unsigned long long)q->key,
		     cq->dispatched, q->nr_in_flight);
	if (cq->st) {
		(*busy)++;
		if (q->sync)
			(*busy_sync)++;
		if (!q->live)
			FAIL("queue %llu: busy but released", (unsigned long long)q->key);
		if (cq->st != st_for(q->g, cq->st_class, cq->st_type))
			FAIL("queue %llu: on a tree of another group or class",
			     (unsigned long long)q->key);
		if (!sched_tree_node_linked(&cq->st_node))
			FAIL("queue %llu: st set but not linked", (unsigned long long)q->key);
		if (!cq->queued && sd->cfq.active != q)
			FAIL("queue %llu: empty, inactive and still busy",
			     (unsigned long long)q->key);
	} else {
		if (sched_tree_node_linked(&cq->st_node))
			FAIL("queue %llu: linked in a service tree without st",
			     (unsigned long long)q->key);
		if (cq->queued)
			FAIL("queue %llu: has requests but is not busy",
			     (unsigned long long)q->key);
	}
	return 0;
}

static int cfq_check(const struct sched *sd, char *buf, size_t buflen)
{
	const struct cfq_data *cd = &sd->cfq;
	const struct sched_list *l;
	uint32_t busy = 0, busy_sync = 0, rq_queued = 0, in_driver = 0, in_flight[2] = { 0, 0 };
	int ret;

	for (l = sd->all_queues.next; l != &sd->all_queues; l = l->next) {
		const struct sched_queue *q = sched_container_of(l, struct sched_queue, all_node);

		ret = check_queue(sd, q, &busy, &busy_sync, buf, buflen);
		if (ret)
			return ret;
		rq_queued += q->cfq.queued;
		in_driver += q->cfq.dispatched;
		in_flight[q->sync] += q->cfq.dispatched;
	}
	uint32_t busy_idle = 0;
	for (l = sd->all_queues.next; l != &sd->all_queues; l = l->next) {
		const struct sched_queue *q = sched_container_of(l, struct sched_queue, all_node);

		busy_idle += q->cfq.st && q->cfq.st_class == WL_IDLE;
	}
	for (unsigned b = 0; b < CFQ_COOP_BUCKETS; b++) {
		for (l = cd->coop[b].next; l != &cd->coop[b]; l = l->next) {
			const struct sched_queue *q =
				sched_container_of(l, struct sched_queue, cfq.coop_node);

			if (coop_bucket(q->cfq.coop_file) != b)
				FAIL("queue %llu: in cooperator bucket %u, hashes to %u",
				     (unsigned long long)q->key, b, coop_bucket(q->cfq.coop_file));
		}
	}
	if (busy_idle != cd->busy_idle_queues)
		FAIL("busy IDLE-class queues %u/%u", busy_idle, cd->busy_idle_queues);
	if (busy != cd->busy_queues || busy_sync != cd->busy_sync_queues)
		FAIL("busy queues %u/%u, sync %u/%u", busy, cd->busy_queues, busy_sync,
		     cd->busy_sync_queues);
	if (rq_queued != cd->rq_queued || in_driver != cd->rq_in_driver ||
	    in_flight[0] != cd->rq_in_flight[0] || in_flight[1] != cd->rq_in_flight[1])
		FAIL("rq_queued %u/%u, in driver %u/%u, in flight %u+%u/%u+%u", rq_queued,
		     cd->rq_queued, in_driver, cd->rq_in_driver, in_flight[0], in_flight[1],
		     cd->rq_in_flight[0], cd->rq_in_flight[1]);
	for (uint32_t i = 0; i < sd->nr_group_slots; i++) {
		struct sched_group *g = sd->groups[i];
		size_t nq = 0;
		uint32_t disp = 0;

		if (!g)
			continue;
		for (int c = 0; c < WL_CLASSES; c++) {
			for (int t = 0; t < (c == WL_IDLE ? 1 : WL_TYPES); t++) {
				struct cfq_st *st = st_for(g, c, t);
				const struct sched_rb_node *n;

				ret = sched_seq_check(&st->seq, st_cmp, buf, buflen);
				if (ret)
					return ret;
				for (n = sched_seq_first(&st->seq); n; n = sched_seq_next(&st->seq, n))
					if (q_of_st(n)->cfq.st != st || q_of_st(n)->g != g)
						FAIL("group %u: foreign queue on a service tree",
						     i);
				nq += sched_seq_count(&st->seq);
			}
		}
		if (nq != g->cfq.nr_cfqq)
			FAIL("group %u: nr_cfqq %u, trees hold %zu", i, g->cfq.nr_cfqq, nq);
		for (int c = 0; c < WL_CLASSES; c++) {
			size_t nc = 0;

			for (int t = 0; t < (c == WL_IDLE ? 1 : WL_TYPES); t++)
				nc += sched_seq_count(&st_for(g, c, t)->seq);
			if (nc != g->cfq.nr_busy[c])
				FAIL("group %u: nr_busy[%d] %u, trees hold %zu", i, c,
				     g->cfq.nr_busy[c], nc);
		}
		if (g->cfq.nr_busy_async != sched_seq_count(&g->cfq.st[WL_RT][WL_ASYNC].seq) +
						   sched_seq_count(&g->cfq.st[WL_BE][WL_ASYNC].seq))
			FAIL("group %u: nr_busy_async %u", i, g->cfq.nr_busy_async);
		if ((g->cfq.nr_cfqq > 0) != sched_tree_node_linked(&g->cfq.node))
			FAIL("group %u: %u busy queues but on tree = %d", i, g->cfq.nr_cfqq,
			     sched_tree_node_linked(&g->cfq.node));
		for (l = g->queues.next; l != &g->queues; l = l->next)
			disp += sched_container_of(l, struct sched_queue, group_node)->cfq.dispatched;
		if (disp != g->cfq.dispatched)
			FAIL("group %u: dispatched %u, queues %u", i, g->cfq.dispatched, disp);
	}
	if (cd->active) {
		if (!cd->active->live || !cd->active->cfq.st)
			FAIL("active queue %llu not live/busy", (unsigned long long)cd->active->key);
	}
	if (cd->idle_timer != SCHED_NS_NEVER) {
		if (!cd->active || !cfqq_wait_request(cd->active) || cd->active->cfq.queued)
			FAIL("idle timer armed without an empty waiting active queue");
	}
	return sched__fq_check(sd, buf, buflen);
}

const struct sched_policy_ops sched__cfq_ops = {
	.init = cfq_init,
	.queue_init = cfq_queue_init,
	.enqueue = cfq_enqueue,
	.dispatch = cfq_dispatch,
	.next_event = cfq_next_event,
	.complete = cfq_complete,
	.remove = cfq_remove,
	.replace = cfq_replace,
	.drain = cfq_drain,
	.queue_held = cfq_queue_held,
	.group_remove = cfq_group_remove,
	.group_init = cfq_group_init,
	.check = cfq_check,
	.info = cfq_info,
};
