/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sched_deadline.c - the deadline policy (Linux deadline-iosched): per direction a FIFO of
 * arrival order with an expiry stamp and a tree sorted by (file, offset). Requests go out in
 * batches of fifo_batch in offset order; a new batch starts from the oldest request if it has
 * expired (or the sort order ran out), and reads are preferred over writes until writes have
 * been passed over writes_starved times. Work-conserving: it never holds a request back, so it
 * has no timer. Merges (back always, front if front_merges) stay within one queue (io context).
 */
#include <errno.h>
#include <stdio.h>

#include "sched_i.h"

#define TUN(sd, i) ((sd)->tun[SCHED_POLICY_DEADLINE][(i)])

static void dl_init(struct sched *sd, sched_ns now)
{
	struct dl_data *dl = &sd->dl;

	(void)now;
	for (int d = 0; d < 2; d++) {
		sched_tree_init(&dl->sort[d]);
		list_init(&dl->fifo[d]);
		dl->next_rq[d] = NULL;
	}
	dl->batching = 0;
	dl->starved = 0;
}

static void dl_enqueue(struct sched *sd, struct sched_queue *q, struct sched_rq *rq, sched_ns now)
{
	struct dl_data *dl = &sd->dl;
	int dir = rq_dir(rq);
	struct sched_rq *old;

	(void)q;
	(void)now;
	rq->fifo_deadline = rq->enqueue_time + (sched_ns)(dir == SCHED_DIR_READ
								  ? TUN(sd, DL_T_READ_EXPIRE)
								  : TUN(sd, DL_T_WRITE_EXPIRE));
	if (sched__merge(sd, &dl->sort[dir], rq, TUN(sd, DL_T_FRONT_MERGES) != 0,
			 TUN(sd, DL_T_NO_MERGE_BEHIND) != 0, (uint64_t)TUN(sd, DL_T_MAX_MERGE), &old)) {
		if (old && dl->next_rq[dir] == old)
			dl->next_rq[dir] = rq;
		return;
	}
	sched_tree_insert(&dl->sort[dir], &rq->sort_node, sched__rq_cmp);
	list_add_tail(&dl->fifo[dir], &rq->fifo_node);
}

static struct sched_rq *successor(struct sched_rq *rq)
{
	struct sched_rb_node *n = sched_tree_next(&rq->sort_node);

	return n ? rq_of_sort(n) : NULL;
}

static void dl_remove(struct sched *sd, struct sched_rq *rq, sched_ns now)
{
	struct dl_data *dl = &sd->dl;
	int dir = rq_dir(rq);

	(void)now;
	if (dl->next_rq[dir] == rq)
		dl->next_rq[dir] = successor(rq);
	sched_tree_erase(&dl->sort[dir], &rq->sort_node);
	list_del(&rq->fifo_node);
}

static void dl_replace(struct sched *sd, struct sched_rq *old, struct sched_rq *new_head)
{
	struct dl_data *dl = &sd->dl;
	int dir = rq_dir(old);

	sched__rq_replace(&dl->sort[dir], old, new_head);
	if (dl->next_rq[dir] == old)
		dl->next_rq[dir] = new_head;
}

static bool fifo_expired(const struct dl_data *dl, int dir, sched_ns now)
{
	if (list_empty(&dl->fifo[dir]))
		return false;
	return !sched_time_before(now, rq_of_fifo(dl->fifo[dir].next)->fifo_deadline);
}

static struct sched_rq *dl_dispatch(struct sched *sd, sched_ns now)
{
	struct dl_data *dl = &sd->dl;
	bool reads = !list_empty(&dl->fifo[SCHED_DIR_READ]);
	bool writes = !list_empty(&dl->fifo[SCHED_DIR_WRITE]);
	struct sched_rq *rq;
	int dir;

	rq = dl->next_rq[SCHED_DIR_WRITE] ? dl->next_rq[SCHED_DIR_WRITE]
					  : dl->next_rq[SCHED_DIR_READ];
	if (rq && dl->batching < (uint32_t)TUN(sd, DL_T_FIFO_BATCH)) {
		dir = rq_dir(rq);
		goto dispatch;
	}
	if (reads) {
		if (writes && dl->starved++ >= (uint32_t)TUN(sd, DL_T_WRITES_STARVED))
			goto dispatch_writes;
		dir = SCHED_DIR_READ;
		goto find;
	}
	if (writes) {
dispatch_writes:
		dl->starved = 0;
		dir = SCHED_DIR_WRITE;
		goto find;
	}
	return NULL;
find:
	/* an expired deadline or the end of the sort order restarts from the oldest */
	if (fifo_expired(dl, dir, now) || !dl->next_rq[dir])
		rq = rq_of_fifo(dl->fifo[dir].next);
	else
		rq = dl->next_rq[dir];
	dl->batching = 0;
dispatch:
	dl->batching++;
	dl->next_rq[SCHED_DIR_READ] = dl->next_rq[SCHED_DIR_WRITE] = NULL;
	dl->next_rq[dir] = successor(rq);
	sched_tree_erase(&dl->sort[dir], &rq->sort_node);
	list_del(&rq->fifo_node);
	return rq;
}

static sched_ns dl_next_event(const struct sched *sd)
{
	(void)sd;
	return SCHED_NS_NEVER;
}

static void dl_complete(struct sched *sd, struct sched_rq *rq, sched_ns now)
{
	(void)sd;
	(void)rq;
	(void)now;
}

static struct sched_rq *dl_drain(struct sched *sd)
{
	struct dl_data *dl = &sd->dl;
	struct sched_rq *first = NULL, *last = NULL;

	for (int d = 0; d < 2; d++) {
		while (!list_empty(&dl->fifo[d])) {
			struct sched_rq *rq = rq_of_fifo(dl->fifo[d].next);

			list_del(&rq->fifo_node);
			sched_tree_erase(&dl->sort[d], &rq->sort_node);
			drain_append(&first, &last, rq);
		}
		dl->next_rq[d] = NULL;
	}
	return first;
}

static int dl_check(const struct sched *sd, char *buf, size_t buflen)
{
	const struct dl_data *dl = &sd->dl;
	size_t nreq = 0;
	int ret;

	if (dl->next_rq[0] && dl->next_rq[1])
		FAIL("deadline: both directions have a batch continuation");
	for (int d = 0; d < 2; d++) {
		const struct sched_list *l;
		size_t n = 0;

		ret = sched_tree_check(&dl->sort[d], sched__rq_cmp, buf, buflen);
		if (ret)
			return ret;
		for (l = dl->fifo[d].next; l != &dl->fifo[d]; l = l->next) {
			const struct sched_rq *rq = rq_of_fifo(l);

			ret = sched__check_chain(rq, rq->owner, &nreq, buf, buflen);
			if (ret)
				return ret;
			if (rq_dir(rq) != d || !sched_tree_node_linked(&rq->sort_node))
				FAIL("deadline: rq seq %llu in the wrong direction",
				     (unsigned long long)rq->seq);
			n++;
		}
		if (n != dl->sort[d].count)
			FAIL("deadline: dir %d fifo %zu, tree %zu", d, n, dl->sort[d].count);
		if (dl->next_rq[d] &&
		    (RQ_STATE(dl->next_rq[d]) != RQ_ST_QUEUED || rq_dir(dl->next_rq[d]) != d))
			FAIL("deadline: stale next_rq in dir %d", d);
	}
	if (nreq != sd->nr_queued)
		FAIL("deadline: %zu requests in its lists, %zu queued", nreq, sd->nr_queued);
	return 0;
}

const struct sched_policy_ops sched__deadline_ops = {
	.init = dl_init,
	.enqueue = dl_enqueue,
	.dispatch = dl_dispatch,
	.next_event = dl_next_event,
	.complete = dl_complete,
	.remove = dl_remove,
	.replace = dl_replace,
	.drain = dl_drain,
	.check = dl_check,
};
