/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sched_noop.c - the noop policy: one FIFO in arrival order, with back merging into a queued
 * request of the same queue (io context) and file. A sort tree over the same heads finds the
 * merge candidate in O(log n); it never influences dispatch order.
 */
#include <errno.h>
#include <stdio.h>

#include "sched_i.h"

static void noop_init(struct sched *sd, sched_ns now)
{
	(void)now;
	list_init(&sd->noop.fifo);
	sched_tree_init(&sd->noop.sort);
}

static void noop_enqueue(struct sched *sd, struct sched_queue *q, struct sched_rq *rq,
			 sched_ns now)
{
	struct sched_rq *old;

	(void)q;
	(void)now;
	rq->fifo_deadline = rq->enqueue_time;
	if (sched__merge(sd, &sd->noop.sort, rq, false, false,
			 (uint64_t)sd->tun[SCHED_POLICY_NOOP][NOOP_T_MAX_MERGE], &old))
		return;
	sched_tree_insert(&sd->noop.sort, &rq->sort_node, sched__rq_cmp);
	list_add_tail(&sd->noop.fifo, &rq->fifo_node);
}

static void noop_remove(struct sched *sd, struct sched_rq *rq, sched_ns now)
{
	(void)now;
	sched_tree_erase(&sd->noop.sort, &rq->sort_node);
	list_del(&rq->fifo_node);
}

static void noop_replace(struct sched *sd, struct sched_rq *old, struct sched_rq *new_head)
{
	sched__rq_replace(&sd->noop.sort, old, new_head);
}

static struct sched_rq *noop_dispatch(struct sched *sd, sched_ns now)
{
	struct sched_rq *rq;

	if (list_empty(&sd->noop.fifo))
		return NULL;
	rq = rq_of_fifo(sd->noop.fifo.next);
	noop_remove(sd, rq, now);
	return rq;
}

static sched_ns noop_next_event(const struct sched *sd)
{
	(void)sd;
	return SCHED_NS_NEVER;
}

static void noop_complete(struct sched *sd, struct sched_rq *rq, sched_ns now)
{
	(void)sd;
	(void)rq;
	(void)now;
}

static struct sched_rq *noop_drain(struct sched *sd)
{
	struct sched_rq *first = NULL, *last = NULL;

	while (!list_empty(&sd->noop.fifo)) {
		struct sched_rq *rq = rq_of_fifo(sd->noop.fifo.next);

		noop_remove(sd, rq, 0);
		drain_append(&first, &last, rq);
	}
	return first;
}

static int noop_check(const struct sched *sd, char *buf, size_t buflen)
{
	const struct sched_list *l;
	size_t n = 0, nreq = 0;
	int ret;

	ret = sched_tree_check(&sd->noop.sort, sched__rq_cmp, buf, buflen);
	if (ret)
		return ret;
	for (l = sd->noop.fifo.next; l != &sd->noop.fifo; l = l->next) {
		const struct sched_rq *rq = rq_of_fifo(l);

		ret = sched__check_chain(rq, rq->owner, &nreq, buf, buflen);
		if (ret)
			return ret;
		if (!sched_tree_node_linked(&rq->sort_node)) {
			if (buf)
				snprintf(buf, buflen, "noop: FIFO head not in the sort tree");
			return -EFAULT;
		}
		n++;
	}
	if (n != sd->noop.sort.count || nreq != sd->nr_queued) {
		if (buf)
			snprintf(buf, buflen, "noop: fifo %zu, tree %zu, requests %zu/%zu", n,
				 sd->noop.sort.count, nreq, sd->nr_queued);
		return -EFAULT;
	}
	return 0;
}

const struct sched_policy_ops sched__noop_ops = {
	.init = noop_init,
	.enqueue = noop_enqueue,
	.dispatch = noop_dispatch,
	.next_event = noop_next_event,
	.complete = noop_complete,
	.remove = noop_remove,
	.replace = noop_replace,
	.drain = noop_drain,
	.check = noop_check,
};
