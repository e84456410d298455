/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rqmap: FUSE data requests get the block-layer flags the kernel's CFQ would have seen for the
 * same system call on a local filesystem, and the core then idles (or not) as the kernel does:
 * fsync/fdatasync and O_SYNC/O_DSYNC writes are sync no-idle (no idle timer with another
 * queue of the group waiting, the queue re-enters on the SYNC_NOIDLE tree); reads and
 * O_DIRECT writes keep their idle window. The scheduler is driven through sched.h with a
 * manual `now`; sched_check() runs after every step.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <string.h>

#include "rqmap.h"
#include "sched.h"

#define MS SCHED_NS_PER_MS
#define KIB 1024ull

Test(rqmap, flags_follow_the_kernels_elevator_view)
{
	cr_assert_eq(pt_rq_flags(SCHED_OP_READ, O_RDONLY, false, false), SCHED_RQ_SYNC);
	cr_assert_eq(pt_rq_flags(SCHED_OP_READ, O_RDONLY | O_DIRECT, false, false), SCHED_RQ_SYNC);
	cr_assert_eq(pt_rq_flags(SCHED_OP_FSYNC, 0, false, false), SCHED_RQ_SYNC | SCHED_RQ_NOIDLE);
	cr_assert_eq(pt_rq_flags(SCHED_OP_FDATASYNC, O_RDWR, false, false),
		     SCHED_RQ_SYNC | SCHED_RQ_NOIDLE);
	cr_assert_eq(pt_rq_flags(SCHED_OP_WRITE, O_WRONLY, false, false), SCHED_RQ_CALLER,
		     "buffered: async, its caller waits");
	cr_assert_eq(pt_rq_flags(SCHED_OP_WRITE, O_WRONLY, false, true),
		     SCHED_RQ_SYNC | SCHED_RQ_NOIDLE, "a journal's write: what fsync writes back");
	cr_assert_eq(pt_rq_flags(SCHED_OP_WRITE, O_WRONLY | O_DIRECT, false, true), SCHED_RQ_SYNC,
		     "O_DIRECT wins over the journal rule too");
	cr_assert_eq(pt_rq_flags(SCHED_OP_WRITE, O_WRONLY | O_DSYNC, false, false),
		     SCHED_RQ_SYNC | SCHED_RQ_NOIDLE);
	cr_assert_eq(pt_rq_flags(SCHED_OP_WRITE, O_WRONLY | O_SYNC, false, false),
		     SCHED_RQ_SYNC | SCHED_RQ_NOIDLE);
	cr_assert_eq(pt_rq_flags(SCHED_OP_WRITE, O_WRONLY | O_DIRECT, false, false), SCHED_RQ_SYNC,
		     "O_DIRECT carries REQ_IDLE");
	cr_assert_eq(pt_rq_flags(SCHED_OP_WRITE, O_WRONLY | O_DIRECT | O_DSYNC, false, false),
		     SCHED_RQ_SYNC, "O_DIRECT wins over O_DSYNC, as dio_bio_write_op does");
	cr_assert_eq(pt_rq_flags(SCHED_OP_WRITE, O_WRONLY | O_SYNC, true, true), 0,
		     "the kernel's writeback of cached pages is async, and nobody waits on it");
}

static void check(const struct sched *sd)
{
	char buf[256] = "";

	cr_assert_eq(sched_check(sd, buf, sizeof(buf)), 0, "sched_check: %s", buf);
}

static void mk(struct sched_rq *rq, uint64_t key, uint8_t op, int file_flags, uint64_t file,
	       uint64_t off, uint64_t len)
{
	memset(rq, 0, sizeof(*rq));
	rq->queue_key = key;
	rq->group = SCHED_ROOT_GROUP;
	rq->ioclass = SCHED_CLASS_BE;
	rq->level = SCHED_LEVEL_NORM;
	rq->op = op;
	rq->flags = pt_rq_flags(op, file_flags, false, false);
	rq->file = file;
	rq->offset = off;
	rq->len = len;
}

struct qlook {
	uint64_t key;
	bool found, idle_window;
};

static void look(void *arg, const struct sched_queue_info *qi)
{
	struct qlook *l = arg;

	if (qi->queue_key == l->key && qi->sync) {
		l->found = true;
		l->idle_window = qi->idle_window;
	}
}

static bool idle_window_of(const struct sched *sd, uint64_t key)
{
	struct qlook l = { .key = key };

	sched_foreach_queue(sd, look, &l);
	cr_assert(l.found, "no sync queue %llu", (unsigned long long)key);
	return l.idle_window;
}

/* The workload type (0 async, 1 sync-noidle, 2 sync) of `key`'s newest activation. */
static int64_t last_activation_type(const struct sched *sd, uint64_t key)
{
	static struct sched_trace_rec r[256];
	uint64_t pos = 0;
	size_t n = sched_trace_read(sd, &pos, r, 256);
	int64_t type = -1;

	for (size_t i = 0; i < n; i++)
		if (r[i].event == SCHED_TR_ACTIVATE && r[i].queue_key == key)
			type = r[i].b;
	return type;
}

/*
 * Process 1 reads once (its queue becomes active with a fresh idle window), then issues
 * `op` on a file in status `flags` while process 2's read waits. Returns what the scheduler
 * dispatches right after the request of process 1 completes: process 2's read when it does
 * not idle for process 1, NULL when it idles. *timer: sched_next_event() at that moment.
 */
static struct sched_rq *after_second(struct sched *sd, uint8_t op, int flags, sched_ns *timer,
				     struct sched_rq rq[3])
{
	sched_ns now = 1000 * MS;
	struct sched_rq *d;

	cr_assert_eq(sched_trace_resize(sd, 256), 0);
	mk(&rq[0], 1, SCHED_OP_READ, O_RDONLY, 7, 0, 4 * KIB);
	cr_assert_eq(sched_enqueue(sd, &rq[0], now), 0);
	check(sd);
	d = sched_dispatch(sd, now);
	cr_assert_eq(d, &rq[0]);
	now += MS / 10;
	sched_complete(sd, d, 0, now);
	check(sd);
	/* the read keeps its idle window: the scheduler waits for process 1 */
	cr_assert(idle_window_of(sd, 1));
	cr_assert_null(sched_dispatch(sd, now));
	cr_assert_eq(sched_next_event(sd), now + 8 * MS, "a read arms slice_idle");

	now += MS / 10;
	mk(&rq[1], 2, SCHED_OP_READ, O_RDONLY, 9, 0, 4 * KIB);
	cr_assert_eq(sched_enqueue(sd, &rq[1], now), 0);
	check(sd);
	cr_assert_null(sched_dispatch(sd, now), "another group-mate's read waits while idling");
	now += MS / 10;
	bool data = op == SCHED_OP_READ || op == SCHED_OP_WRITE;
	mk(&rq[2], 1, op, flags, 7, data ? 4 * KIB : 0, data ? 4 * KIB : 0);
	cr_assert_eq(sched_enqueue(sd, &rq[2], now), 0);
	check(sd);
	d = sched_dispatch(sd, now);
	cr_assert_eq(d, &rq[2], "process 1's own request ends its idle window");
	now += MS / 10;
	sched_complete(sd, d, 0, now);
	check(sd);
	d = sched_dispatch(sd, now);
	check(sd);
	*timer = sched_next_event(sd);
	return d;
}

static void finish(struct sched *sd, struct sched_rq *d)
{
	sched_ns now = 2000 * MS;

	while (sched_nr_queued(sd) || sched_nr_in_flight(sd) || d) {
		if (!d) {
			now = sched_next_event(sd) == SCHED_NS_NEVER ? now + MS : sched_next_event(sd);
			d = sched_dispatch(sd, now);
			continue;
		}
		sched_complete(sd, d, 0, now);
		check(sd);
		d = sched_dispatch(sd, now);
	}
	sched_destroy(sd);
}

/*
 * After process 1's `op` (on a file in status `flags`) completes with process 2's read
 * waiting: `idles` says whether the scheduler keeps an idle window for process 1. When it
 * does not, process 1's queue comes back on the SYNC_NOIDLE tree at its next read.
 */
static void after(uint8_t op, int flags, bool idles)
{
	struct sched *sd = sched_create(SCHED_POLICY_CFQ, true);
	struct sched_rq rq[3], *d;
	sched_ns timer, now = 1001 * MS;

	cr_assert_not_null(sd);
	d = after_second(sd, op, flags, &timer, rq);
	if (idles) {
		cr_assert_null(d, "the scheduler idles for process 1");
		cr_assert_neq(timer, SCHED_NS_NEVER);
		cr_assert(idle_window_of(sd, 1));
		finish(sd, d);
		return;
	}
	cr_assert_eq(d, &rq[1], "no idling for process 1: process 2's read goes at once");
	sched_complete(sd, d, 0, now);
	check(sd);
	mk(&rq[0], 1, SCHED_OP_READ, O_RDONLY, 7, 8 * KIB, 4 * KIB);
	cr_assert_eq(sched_enqueue(sd, &rq[0], now), 0);
	check(sd);
	while (!(d = sched_dispatch(sd, now))) {
		cr_assert_neq(sched_next_event(sd), SCHED_NS_NEVER, "stalled");
		now = sched_next_event(sd);
	}
	cr_assert_eq(d, &rq[0]);
	cr_assert_eq(last_activation_type(sd, 1), 1, "activated as sync-noidle");
	finish(sd, d);
}

Test(rqmap, fsync_arms_no_idle_timer_and_goes_to_the_noidle_tree)
{
	after(SCHED_OP_FSYNC, O_RDWR, false);
}

Test(rqmap, fdatasync_arms_no_idle_timer_and_goes_to_the_noidle_tree)
{
	after(SCHED_OP_FDATASYNC, O_RDWR, false);
}

Test(rqmap, o_dsync_write_arms_no_idle_timer_and_goes_to_the_noidle_tree)
{
	after(SCHED_OP_WRITE, O_WRONLY | O_DSYNC, false);
}

Test(rqmap, read_still_idles)
{
	after(SCHED_OP_READ, O_RDONLY, true);
}

Test(rqmap, o_direct_write_still_idles)
{
	after(SCHED_OP_WRITE, O_WRONLY | O_DIRECT, true);
}
