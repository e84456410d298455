/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * executor.c - worker threads around the pure scheduler core.
 *
 * The whole concurrency story of the data path:
 *   - submit (FUSE session thread): lock, sched_enqueue, then ask the scheduler at once: with
 *     inline issue on (exec_options.inline_io, never with an emulated device) the thread
 *     issues the first chain it is given itself, saving a hand-off; every other chain goes on
 *     the ready list and wakes one idle worker; unlock; the request is answered by whoever
 *     issues it; a write whose chain is not this thread's is copied out of libfuse's buffer
 *     after the unlock, pinned meanwhile (see "Zero-copy writes" below);
 *   - issuing a chain: wait for its pinned members' copies if any (lock, condition); do the
 *     I/O (unlocked), lock, sched_complete, ask the scheduler again (the first chain it
 *     gives is this thread's to issue next: a worker's always, a session thread's a few
 *     times before it hands over; the rest go on the ready list as above),
 *     unlock, reply to every request of the chain; its records go back to the pool the next
 *     time this thread holds the lock, or one stays as the thread's spare for its next
 *     request, so a session thread that issues its own request locks twice per request;
 *   - worker: lock, take a ready chain or ask the scheduler; if nothing, wait on the condition
 *     until a signal or, if no other worker already waits for it, sched_next_event() (only
 *     one that matters now: none while nothing is queued, see timer_needed());
 *   - interrupt (FUSE session thread), only when the caller is being killed (on_interrupt()):
 *     lock, sched_cancel; if the request was still queued,
 *     reply EINTR and recycle it (a pinned one: its submitter does that after the copy); if
 *     it is in flight, let its issuer finish it.
 * So a worker is woken only for a chain that is ready to issue or for a timer nobody waits
 * for: never to find that the scheduler wants to wait (CFQ idling, or serving one queue while
 * another's requests queue), which is what a wake-up on every enqueue used to cost.
 *
 * Request records (struct exec_req) come from a per-executor pool and return to it, never to
 * malloc, while the executor lives: libfuse may call the interrupt callback with a pointer to
 * a record whose request a worker has just answered, so the memory must stay valid; the
 * callback recognises that case because the record no longer holds that fuse_req_t in the
 * QUEUED state (libfuse keeps the fuse_req_t itself alive during the callback).
 */
#include "executor.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/falloc.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "cgroup.h"
#include "clock.h"
#include "device.h"
#include "log.h"
#include "uidtab.h"

#define EXEC_DEPTH_MAX 256u
#define EXEC_IOV_MAX 256 /* members of one merged run issued by one preadv/pwritev */
/* [bytes] buffer memory the free pool may keep for reuse; past it, buffers of returning
 * records are freed, so a burst does not pin its peak memory for the daemon's lifetime. */
#define EXEC_POOL_KEEP_BYTES (64ull << 20)
/* [ns] longest a worker sleeps without looking: a safety net against a lost condition-variable
 * wake-up (glibc before 2.38 can lose one, BZ 25847: a shutdown hung in stop_workers with
 * every worker asleep), which would otherwise leave a request or the stop unnoticed. */
#define EXEC_MAX_SLEEP_NS (1000ull * 1000000ull)
/* [ns] how often queued requests whose caller got a handled signal are looked at again, in
 * case it has been killed since (recheck_interrupted()). */
#define EXEC_IRQ_RECHECK_NS (200ull * 1000000ull)
/* records looked at per recheck (the others: at the next one) */
#define EXEC_IRQ_BATCH 32u
/* [ns] at most one "limit reached" warning per this interval. */
#define EXEC_LIMIT_WARN_NS (10ull * 1000000000ull)
/* Which bound refused a request (charge()), for the warning. */
#define WARN_GROUP 1
#define WARN_UID 2

/* What a record serves. A copy or an fallocate is served in pieces of at most the policy's
 * max_copy_kb, each one scheduler request of the same record: when a piece completes, its
 * issuer cuts the next and queues it again under ex->lock (job_continue()), and the FUSE
 * request is answered after the last. */
enum er_kind {
	EK_IO = 0, /* read, write, fsync or fdatasync: one request */
	EK_COPY,   /* copy_file_range: a read of the source piece, then a write of what it read */
	EK_FALLOC, /* fallocate: pieces charged and timed as writes, or one request (falloc_split) */
};

enum er_state {
	ER_FREE = 0,	/* in the pool */
	ER_NEW,		/* being built by the submitting thread (a record from the pool; one
			   from the thread's spare stays ER_RUNNING while built) */
	ER_QUEUED,	/* in the scheduler, may be cancelled */
	ER_RUNNING,	/* dispatched (or merged into a dispatched chain) */
};

/* One FUSE data request. Fields are written by the thread that holds the record (the
 * submitting thread before enqueue, the issuer after dispatch), except those said to be
 * protected by ex->lock. */
struct exec_req {
	struct sched_rq rq;	 /* embedded scheduler node; container_of recovers the record */
	fuse_req_t req;		 /* the request to answer; NULL when free */
	fuse_req_t irq_req;	 /* `req` from enqueue on: what the interrupt callback compares
				    (a stale callback may run while a thread reuses the record);
				    protected by ex->lock */
	struct executor *ex;	 /* owner, for the interrupt callback */
	int fd;			 /* backing fd, borrowed from the file handle */
	char *buf;		 /* read destination or write data */
	size_t buf_cap;		 /* [bytes] allocated size of buf, kept across reuse */
	char *wsrc;		 /* write data as issued: buf, or the session thread's own buffer
				    while `pinned` or while that thread issues the record itself */
	bool pinned;		 /* write data still borrowed from the submitting session thread,
				    which is copying it to buf: no other thread may issue the
				    record's chain yet; protected by ex->lock */
	bool irq_pending;	 /* interrupted while pinned: the submitter cancels it when it
				    unpins; protected by ex->lock */
	pid_t irq_tid;		 /* caller whose interrupt was for a handled signal, watched
				    while the record is queued (recheck_interrupted()), 0 if
				    none; only while ER_QUEUED (cleared at dispatch and cancel);
				    counted in ex->nr_irq_watch; protected by ex->lock */
	struct exec_req *pin_head; /* if pinned when dispatched: its chain's head; protected
				      by ex->lock */
	atomic_uint pins;	 /* chain head: members still pinned (set at dispatch, dropped by
				    their submitters under ex->lock); the issuer waits for 0 */
	ssize_t result;		 /* [bytes] transferred, or -errno */
	sched_ns hold_until;	 /* [ns] chain head: the emulated device's completion time, given
				    at dispatch; 0 without a device */
	uint32_t charged_group;	 /* group whose load counts this record, if `charged` */
	bool charged;		 /* counted in ex->load[charged_group]; protected by ex->lock */
	bool unbounded;		 /* no caller waits for it (writeback): charged, never refused
				    by the limits (exec_limits) */
	uint64_t charged_bytes;	 /* [bytes] of write data counted there */
	uid_t uid;		 /* the tag's uid (fill_rq), for the per-user bounds */
	uid_t charged_uid;	 /* whose entry of ex->uid_load counts this record, if `charged`
				    and not 0 (root is not counted per user) */
	enum er_state state;	 /* protected by ex->lock */
	struct exec_req *next_free; /* pool link, ready-list link of a dispatched chain head
				       (both protected by ex->lock), or link of a thread's
				       answered records waiting to go back (that thread's) */
	struct exec_req *all_next; /* every record of the executor, for exec_destroy;
				      protected by ex->lock */
	struct exec_req *reply_next; /* the issuer's list of a completed chain's records to
					answer (run_chain) */
	/* --- jobs (kind != EK_IO); written by whoever holds the record, like the above --- */
	uint8_t kind;		 /* enum er_kind */
	bool copy_writing;	 /* EK_COPY: the piece queued or in flight is the write half */
	bool job_live;		 /* a job from its enqueue to its answer: only then do
				    interrupts touch the job fields below (a stale interrupt
				    callback may run while the record is reused); protected by
				    ex->lock */
	bool job_stop;		 /* the caller is being killed: answer after the piece in
				    flight; protected by ex->lock */
	pid_t job_irq_tid;	 /* a caller that got a handled signal while a piece was in
				    flight: watched again when the next piece is queued;
				    protected by ex->lock */
	int falloc_mode;	 /* EK_FALLOC: fallocate(2) mode */
	int job_fd[2];		 /* backing fds: [0] copy source, [1] destination (both kinds) */
	uint64_t job_off[2];	 /* [bytes] where the next piece starts, on each */
	uint64_t job_left;	 /* [bytes] of the request not yet done */
	uint64_t job_done;	 /* [bytes] copied, or allocated, so far */
	uint64_t falloc_len;	 /* [bytes] EK_FALLOC: length the piece in flight passes to
				    fallocate (its request's len is 0 when not split) */
	struct exec_tag job_tag[2]; /* who each half is charged to ([0] copy source reads, [1]
				       destination writes and allocations); path unused */
};

/* What one group holds in the daemon: records charged to it (queued or in flight). */
struct grp_load {
	uint32_t reqs;	 /* [requests] */
	uint64_t bytes;	 /* [bytes] of write data */
};

/*
 * Invariants (under lock): every record is on the free list (ER_FREE) or held by exactly one
 * of: the scheduler (ER_QUEUED); one dispatched chain (ER_RUNNING: on the ready list or being
 * issued by one thread); one thread, answered and uncharged on its way back to the pool or
 * kept as its spare (ER_RUNNING, see spare_key), or taken from the spare to build a request
 * (still ER_RUNNING until enqueued: an interrupt callback ignores it). `all` links every
 * record and nr_records counts them. in_flight counts the chains, ready or being issued, and
 * never exceeds depth.
 * load[g] sums the charged records of group g, uid_load[u] those of uid u != 0; pool_bytes
 * sums buf_cap over the free list.
 * A pinned record is queued or in a dispatched chain, and a ready chain's head counts its
 * pinned members in `pins`. check_locked() verifies these (debug builds: after every enqueue
 * and completion, and at exec_destroy).
 */
struct executor {
	pthread_mutex_t lock;
	pthread_cond_t work;	   /* signalled on enqueue, completion and stop */
	pthread_cond_t unpinned;   /* broadcast when a chain's last pinned member is unpinned */
	unsigned pin_waiters;	   /* issuers waiting on `unpinned`; protected by lock */
	struct sched *sd;	   /* protected by lock */
	struct exec_req *free_list; /* protected by lock */
	struct exec_req *all;	   /* every record, linked by all_next; protected by lock */
	size_t nr_records;	   /* protected by lock */
	/* Each thread's spare record: the last one it answered, kept for its next request so
	 * that a FUSE thread that issues its own requests (inline) takes the lock twice per
	 * request (enqueue and completion), not four times. Returned to the pool at thread
	 * exit by the key's destructor. */
	pthread_key_t spare_key;
	bool stopping;		   /* protected by lock */
	struct exec_limits limits; /* protected by lock */
	struct grp_load *load;	   /* [nr_load], indexed by group id; protected by lock */
	struct uidtab *uid_load;   /* the same per uid but 0 (uidtab.h); protected by lock */
	size_t nr_load;		   /* protected by lock */
	sched_ns limit_warned;	   /* [ns] last group limit warning; protected by lock */
	sched_ns uid_limit_warned; /* [ns] last per-user limit warning; protected by lock */
	unsigned nr_irq_watch;	   /* records with irq_tid set; protected by lock */
	struct exec_req *irq_cursor; /* where recheck_interrupted() goes on, or NULL; by lock */
	sched_ns irq_check_at;	   /* [ns] next recheck_interrupted(); protected by lock */
	size_t pool_bytes;	   /* [bytes] buffers kept by the free list; protected by lock */
	struct dev_model *dev;	   /* emulated device or NULL; protected by lock */
	unsigned in_flight;	   /* chains dispatched and not completed (ready, or being issued
				      by a worker or inline); protected by lock */
	unsigned idle_workers;	   /* workers waiting on `work`; protected by lock */
	struct exec_req *ready;	   /* dispatched chains no thread has taken yet, oldest first,
				      linked by next_free; protected by lock */
	struct exec_req *ready_tail; /* protected by lock */
	/* [ns] the scheduler event (sched_next_event) a sleeping worker waits for, and that
	 * worker (1..depth), or SCHED_NS_NEVER / 0 if none does; protected by lock */
	sched_ns timer_at;
	unsigned timer_owner;
	unsigned nr_worker_ids;	   /* ids handed out; protected by lock */
	bool inline_io;		   /* submitters may issue what they dispatch (exec_options.inline_io
				      and no emulated device); immutable */
	unsigned depth;		   /* worker count; immutable */
	pthread_t *workers;	   /* [depth]; written by exec_start only */
	bool started;		   /* workers running; written by exec_start only */
};

static struct exec_req *er_of(struct sched_rq *rq)
{
	return (struct exec_req *)((char *)rq - offsetof(struct exec_req, rq));
}

#define CHECK(cond, ...)                                  \
	do {                                              \
		if (!(cond)) {                            \
			snprintf(buf, len, __VA_ARGS__); \
			return -EINVAL;                   \
		}                                         \
	} while (0)

/*
 * The invariants of struct executor, record by record. Returns 0, or -EINVAL with the first
 * violation described in buf. Called with ex->lock held; reads only fields it protects.
 */
static int check_locked(struct executor *ex, char *buf, size_t len)
{
	size_t n = 0, nfree = 0, pool = 0;
	uint64_t creqs = 0, cbytes = 0, lreqs = 0, lbytes = 0, ureqs = 0, ubytes = 0;
	uint64_t tab_reqs, tab_bytes;
	unsigned ready = 0, watched = 0;
	struct exec_req *er;

	for (er = ex->all; er; er = er->all_next) {
		CHECK(++n <= ex->nr_records, "more than nr_records (%zu) records on `all`",
		      ex->nr_records);
		CHECK(er->state <= ER_RUNNING, "record %zu: state %d", n, (int)er->state);
		CHECK(er->state != ER_FREE || (!er->charged && !er->pinned),
		      "record %zu: free but charged or pinned", n);
		CHECK(!er->pinned || er->state == ER_QUEUED || er->state == ER_RUNNING,
		      "record %zu: pinned in state %d", n, (int)er->state);
		CHECK(er->irq_tid == 0 || er->state == ER_QUEUED, "record %zu: watched in state %d",
		      n, (int)er->state);
		watched += er->irq_tid != 0;
		/* (a record's kind and job fields are stable only while queued) */
		CHECK(er->state != ER_QUEUED || er->kind <= EK_FALLOC, "record %zu: kind %d", n,
		      (int)er->kind);
		CHECK(er->state != ER_QUEUED || er->kind == EK_IO || er->job_left > 0,
		      "record %zu: a job queued with nothing left to do", n);
		CHECK(!er->job_live || er->state == ER_QUEUED || er->state == ER_RUNNING,
		      "record %zu: a live job in state %d", n, (int)er->state);
		if (er->charged) {
			CHECK(er->charged_group < ex->nr_load, "record %zu: charged to group %" PRIu32
			      " of %zu", n, er->charged_group, ex->nr_load);
			creqs++;
			cbytes += er->charged_bytes;
			ureqs += er->charged_uid != 0;
			ubytes += er->charged_uid != 0 ? er->charged_bytes : 0;
		}
	}
	CHECK(n == ex->nr_records, "%zu records on `all`, nr_records %zu", n, ex->nr_records);
	CHECK(watched == ex->nr_irq_watch, "%u records watched, nr_irq_watch %u", watched,
	      ex->nr_irq_watch);
	for (er = ex->free_list; er; er = er->next_free) {
		CHECK(++nfree <= n, "free list longer than `all` (a cycle?)");
		CHECK(er->state == ER_FREE, "free-list record in state %d", (int)er->state);
		pool += er->buf_cap;
	}
	CHECK(pool == ex->pool_bytes, "pool_bytes %zu, free list holds %zu", ex->pool_bytes, pool);
	for (er = ex->ready; er; er = er->next_free) {
		unsigned pins = 0;

		CHECK(++ready <= ex->in_flight, "more ready chains than in_flight (%u)",
		      ex->in_flight);
		CHECK(er->state == ER_RUNNING, "ready chain head in state %d", (int)er->state);
		CHECK(er->next_free || er == ex->ready_tail, "ready list ends before ready_tail");
		for (struct sched_rq *m = &er->rq; m; m = m->merge_next)
			pins += er_of(m)->pinned;
		CHECK(pins == atomic_load_explicit(&er->pins, memory_order_relaxed),
		      "ready chain: %u pinned members, head counts %u", pins,
		      atomic_load_explicit(&er->pins, memory_order_relaxed));
	}
	CHECK(ex->in_flight <= ex->depth, "in_flight %u > depth %u", ex->in_flight, ex->depth);
	for (size_t g = 0; g < ex->nr_load; g++) {
		lreqs += ex->load[g].reqs;
		lbytes += ex->load[g].bytes;
	}
	CHECK(lreqs == creqs && lbytes == cbytes,
	      "load sums %" PRIu64 " requests / %" PRIu64 " bytes, charged records %" PRIu64
	      " / %" PRIu64, lreqs, lbytes, creqs, cbytes);
	if (uidtab_check(ex->uid_load, &tab_reqs, &tab_bytes, buf, len) < 0)
		return -EFAULT;
	CHECK(tab_reqs == ureqs && tab_bytes == ubytes,
	      "per-user load sums %" PRIu64 " requests / %" PRIu64 " bytes, records charged to a "
	      "uid %" PRIu64 " / %" PRIu64, tab_reqs, tab_bytes, ureqs, ubytes);
	return 0;
}
#undef CHECK

int exec_check(struct executor *ex, char *buf, size_t len)
{
	pthread_mutex_lock(&ex->lock);
	int r = check_locked(ex, buf, len);
	pthread_mutex_unlock(&ex->lock);
	return r;
}

/* Debug builds stop at the first broken invariant, where it broke. Called with ex->lock held. */
static void paranoid_check(struct executor *ex)
{
#ifndef NDEBUG
	char why[200];

	if (check_locked(ex, why, sizeof(why)) != 0) {
		LOG_ERR("executor invariant broken: %s", why);
		assert(!"executor invariant broken");
	}
#else
	(void)ex;
#endif
}

/* Takes a record from the pool or allocates one. Called with ex->lock held. */
static struct exec_req *er_get(struct executor *ex)
{
	struct exec_req *er = ex->free_list;

	if (er) {
		ex->free_list = er->next_free;
		er->next_free = NULL;
		ex->pool_bytes -= er->buf_cap;
		return er;
	}
	er = calloc(1, sizeof(*er));
	if (er) {
		er->ex = ex;
		er->all_next = ex->all;
		ex->all = er;
		ex->nr_records++;
	}
	return er;
}

/* Drops a record's charge on its group's and its user's load. Called with ex->lock held. */
static void er_uncharge(struct executor *ex, struct exec_req *er)
{
	if (er->charged) {
		struct grp_load *l = &ex->load[er->charged_group];
		l->reqs--;
		l->bytes -= er->charged_bytes;
		if (er->charged_uid != 0)
			uidtab_uncharge(ex->uid_load, er->charged_uid, 1, er->charged_bytes);
		er->charged = false;
		er->charged_bytes = 0;
	}
}

/* Stops watching a record's caller (see recheck_interrupted()). Called with ex->lock held. */
static void irq_unwatch(struct executor *ex, struct exec_req *er)
{
	if (er->irq_tid) {
		er->irq_tid = 0;
		ex->nr_irq_watch--;
	}
}

/* Returns a record to the pool, dropping its charge. Called with ex->lock held. */
static void er_put(struct executor *ex, struct exec_req *er)
{
	er_uncharge(ex, er);
	if (ex->pool_bytes + er->buf_cap > EXEC_POOL_KEEP_BYTES) {
		free(er->buf);
		er->buf = NULL;
		er->buf_cap = 0;
	}
	ex->pool_bytes += er->buf_cap;
	er->req = NULL;
	er->irq_req = NULL;
	er->state = ER_FREE;
	er->next_free = ex->free_list;
	ex->free_list = er;
}

static int er_reserve(struct exec_req *er, size_t size)
{
	char *p;

	if (er->buf_cap >= size)
		return 0;
	p = realloc(er->buf, size ? size : 1);
	if (!p)
		return -ENOMEM;
	er->buf = p;
	er->buf_cap = size;
	return 0;
}

static void reply_one(struct exec_req *er)
{
	fuse_req_t req = er->req;

	if (er->result < 0) {
		fuse_reply_err(req, (int)-er->result);
		return;
	}
	if (er->kind == EK_COPY) {
		fuse_reply_write(req, (size_t)er->result);
		return;
	}
	if (er->kind == EK_FALLOC) {
		fuse_reply_err(req, 0);
		return;
	}
	switch (er->rq.op) {
	case SCHED_OP_READ:
		fuse_reply_buf(req, er->buf, (size_t)er->result);
		break;
	case SCHED_OP_WRITE:
		fuse_reply_write(req, (size_t)er->result);
		break;
	default:
		fuse_reply_err(req, 0);
		break;
	}
}

/*
 * Issues one contiguous run of a merged chain, `n` members starting at `first`, all of one fd,
 * as one preadv/pwritev, retrying short transfers. Each member's result is set: bytes, or -errno
 * for the member where the error struck (and those after it). Reads stop at end of file.
 */
static void io_run(struct exec_req **members, int n)
{
	struct iovec iov[EXEC_IOV_MAX];
	bool is_read = members[0]->rq.op == SCHED_OP_READ;
	off_t off = (off_t)members[0]->rq.offset;
	int fd = members[0]->fd;
	size_t done_total = 0, want_total = 0;
	int i;

	for (i = 0; i < n; i++) {
		iov[i].iov_base = is_read ? members[i]->buf : members[i]->wsrc;
		iov[i].iov_len = members[i]->rq.len;
		want_total += members[i]->rq.len;
	}
	int err = 0;
	while (done_total < want_total) {
		/* Skip the iovecs already filled. */
		size_t skip = done_total;
		int k = 0;
		while (k < n && skip >= members[k]->rq.len) {
			skip -= members[k]->rq.len;
			k++;
		}
		struct iovec tmp = iov[k];
		iov[k].iov_base = (char *)iov[k].iov_base + skip;
		iov[k].iov_len -= skip;
		ssize_t r = is_read ? preadv(fd, iov + k, n - k, off + (off_t)done_total)
				    : pwritev(fd, iov + k, n - k, off + (off_t)done_total);
		int e = errno;
		iov[k] = tmp;
		if (r < 0) {
			if (e == EINTR)
				continue;
			err = -e;
			break;
		}
		if (r == 0) /* end of file (reads); a zero write is treated as done */
			break;
		done_total += (size_t)r;
	}
	/* Hand out what was transferred in member order. */
	size_t left = done_total;
	for (i = 0; i < n; i++) {
		size_t len = members[i]->rq.len;
		size_t got = left < len ? left : len;
		left -= got;
		if (got < len && err && got == 0)
			members[i]->result = err;
		else
			members[i]->result = (ssize_t)got;
	}
}

/* Performs the I/O of a dispatched chain (head first, members in offset order). */
static void do_io(struct exec_req *head)
{
	struct exec_req *run[EXEC_IOV_MAX];
	struct sched_rq *rq;
	int n = 0;

	if (head->kind == EK_FALLOC) { /* never merged (SCHED_RQ_NOMERGE) */
		int r = fallocate(head->fd, head->falloc_mode, (off_t)head->job_off[1],
				  (off_t)head->falloc_len);
		head->result = r < 0 ? -errno : 0;
		return;
	}
	switch (head->rq.op) {
	case SCHED_OP_FSYNC:
	case SCHED_OP_FDATASYNC: {
		int r = head->rq.op == SCHED_OP_FSYNC ? fsync(head->fd) : fdatasync(head->fd);
		head->result = r < 0 ? -errno : 0;
		return;
	}
	default:
		break;
	}
	for (rq = &head->rq; rq; rq = rq->merge_next) {
		struct exec_req *er = er_of(rq);
		/* Read buffers are taken only now, so a queued read holds no data memory. */
		if (rq->op == SCHED_OP_READ && er_reserve(er, rq->len) < 0) {
			er->result = -ENOMEM;
			if (n > 0)
				io_run(run, n);
			n = 0;
			continue;
		}
		/* One syscall per run on one fd: the scheduler merges by file, not by handle, and
		 * the handles may differ in O_SYNC/O_DSYNC/O_APPEND (a member from an O_SYNC handle
		 * issued on another's fd would be answered without being durable). */
		bool contiguous = n > 0 && n < EXEC_IOV_MAX && run[n - 1]->fd == er->fd &&
				  run[n - 1]->rq.offset + run[n - 1]->rq.len == rq->offset;
		if (n > 0 && !contiguous) {
			io_run(run, n);
			n = 0;
		}
		run[n++] = er;
	}
	if (n > 0)
		io_run(run, n);
}

/* How many chains in a row a FUSE session thread issues (its own, then what completions free)
 * before it hands the next one to a worker and goes back to reading requests. */
#define EXEC_INLINE_CHAINS 4u

/* Next chain to issue, or NULL when the depth is used up or the scheduler says wait. Called
 * with ex->lock held; counts the chain in flight, makes its records the issuer's and asks the
 * emulated device (if any) when it completes: the model serialises on its heads like a real
 * device, so it is asked at dispatch. */
static struct sched_rq *next_chain(struct executor *ex, sched_ns now)
{
	struct sched_rq *rq, *m;

	if (ex->in_flight >= ex->depth)
		return NULL;
	/* With nothing queued the scheduler can only act on a timer (idling, a slice's end):
	 * before it is due it would give nothing. Saves the call after most completions. */
	if (!sched_nr_queued(ex->sd)) {
		sched_ns when = sched_next_event(ex->sd);

		if (when == SCHED_NS_NEVER || sched_time_after(when, now))
			return NULL;
	}
	rq = sched_dispatch(ex->sd, now);
	if (!rq)
		return NULL;
	ex->in_flight++;
	unsigned pins = 0;
	for (m = rq; m; m = m->merge_next) {
		struct exec_req *er = er_of(m);

		er->state = ER_RUNNING;
		if (er->job_live && er->irq_tid)
			er->job_irq_tid = er->irq_tid; /* watched again with its next piece */
		irq_unwatch(ex, er);
		if (er->pinned) {
			er->pin_head = er_of(rq);
			pins++;
		}
	}
	atomic_store_explicit(&er_of(rq)->pins, pins, memory_order_relaxed);
	er_of(rq)->hold_until = ex->dev ? dev_issue(ex->dev, rq->file, rq->offset, rq->merged_len,
						    rq->op == SCHED_OP_WRITE, now)
					: 0;
	LOG_DEBUG("dispatch: queue %llu group %u %s %s off %llu len %llu (+%u merged)",
		  (unsigned long long)rq->queue_key, rq->group,
		  rq->flags & SCHED_RQ_SYNC ? "sync" : "async",
		  rq->op == SCHED_OP_READ ? "read" : rq->op == SCHED_OP_WRITE ? "write" : "fsync",
		  (unsigned long long)rq->offset, (unsigned long long)rq->merged_len, rq->nr_merged);
	return rq;
}

/* Puts a thread's answered records (linked by next_free) back in the pool. Called with
 * ex->lock held. */
static void put_answered(struct executor *ex, struct exec_req **answered)
{
	while (*answered) {
		struct exec_req *er = *answered;
		*answered = er->next_free;
		er_put(ex, er);
	}
}

/* Puts a dispatched chain on the ready list for a worker and wakes one if any sleeps (if none
 * does, every worker is between chains and looks at the list before it sleeps: in_flight
 * counts this chain, so fewer than `depth` chains are being issued). Called with ex->lock
 * held. */
static void ready_push(struct executor *ex, struct sched_rq *rq)
{
	struct exec_req *er = er_of(rq);

	er->next_free = NULL;
	if (ex->ready_tail)
		ex->ready_tail->next_free = er;
	else
		ex->ready = er;
	ex->ready_tail = er;
	if (ex->idle_workers > 0)
		pthread_cond_signal(&ex->work);
}

/* The oldest ready chain, taken off the list, or NULL. Called with ex->lock held. */
static struct sched_rq *ready_pop(struct executor *ex)
{
	struct exec_req *er = ex->ready;

	if (!er)
		return NULL;
	ex->ready = er->next_free;
	if (!ex->ready)
		ex->ready_tail = NULL;
	er->next_free = NULL;
	return &er->rq;
}

/*
 * Must a worker wake at `when` (sched_next_event()) for the scheduler? Not while nothing is
 * queued and it is still ahead: then the timer can only end the active queue's slice (CFQ's
 * idle window after a sync read, a lone queue's slice), and the core does that at the time it
 * was due on its next call (sched.h), which the next request makes. Waking a worker for it
 * cost fs_mark four futex calls and two context switches per file: CFQ idles after every
 * fsync and the next file's first write cancels the idle. A killed client's queue then goes
 * with the next request or a worker's periodic look (EXEC_MAX_SLEEP_NS). Called with ex->lock
 * held.
 */
static bool timer_needed(struct executor *ex, sched_ns when, sched_ns now)
{
	if (when == SCHED_NS_NEVER)
		return false;
	return sched_nr_queued(ex->sd) > 0 || !sched_time_after(when, now);
}

/* Makes sure a worker waits for the scheduler's next timer event if it needs one and none
 * does yet (a sleeping worker that owns an earlier or equal one is enough). Called with
 * ex->lock held. */
static void arm_timer(struct executor *ex, sched_ns now)
{
	sched_ns when = sched_next_event(ex->sd);

	if (timer_needed(ex, when, now) && ex->idle_workers > 0 &&
	    (ex->timer_at == SCHED_NS_NEVER || sched_time_after(ex->timer_at, when)))
		pthread_cond_signal(&ex->work);
}

/*
 * After the scheduler's state changed (enqueue, completion, cancel): hands every chain it
 * will dispatch now to the workers, then arm_timer(). Called with ex->lock held.
 */
static void dispatch_rest(struct executor *ex, sched_ns now)
{
	struct sched_rq *rq;

	while ((rq = next_chain(ex, now)) != NULL)
		ready_push(ex, rq);
	arm_timer(ex, now);
}

/* This thread's next chain and the rest to the workers, as dispatch_rest(); when the
 * scheduler gives nothing, it is not asked a second time at the same instant. Called with
 * ex->lock held. */
static struct sched_rq *take_and_dispatch_rest(struct executor *ex, sched_ns now)
{
	struct sched_rq *rq = next_chain(ex, now);

	if (rq)
		dispatch_rest(ex, now);
	else
		arm_timer(ex, now);
	return rq;
}

/*
 * Zero-copy writes. A session thread that may issue requests itself (inline_io) enqueues a
 * write with its data still in libfuse's buffer, which stays valid until the thread returns
 * from the request. If the chain it is given to issue holds the write, the data goes from
 * that buffer to SOURCE. Otherwise (the scheduler keeps the write queued, or another thread
 * got it), the record stays `pinned` while the thread copies the data into the record's own
 * buffer, outside the lock; an issuer given a chain with pinned members waits for them
 * (for a memcpy, never for I/O: a submitter copies before it issues anything itself).
 */

/* A submitter's record is no longer pinned: it is in this thread's own chain, or its data
 * is now in er->buf. Called with ex->lock held. */
static void unpin(struct executor *ex, struct exec_req *er)
{
	er->pinned = false;
	if (er->state == ER_RUNNING && /* dispatched while pinned: its head counts it */
	    atomic_fetch_sub_explicit(&er->pin_head->pins, 1, memory_order_release) == 1 &&
	    ex->pin_waiters)
		pthread_cond_broadcast(&ex->unpinned);
}

/* Waits until no member of the chain is pinned. Called without ex->lock. */
static void wait_unpinned(struct executor *ex, struct exec_req *head)
{
	pthread_mutex_lock(&ex->lock);
	ex->pin_waiters++;
	while (atomic_load_explicit(&head->pins, memory_order_acquire))
		pthread_cond_wait(&ex->unpinned, &ex->lock);
	ex->pin_waiters--;
	pthread_mutex_unlock(&ex->lock);
}

/* ---------------------------------------------------------------------------------------- */
/* Jobs: copy_file_range and fallocate, in pieces                                             */

static void fill_rq(struct exec_req *er, const struct exec_tag *tag, enum sched_op op,
		    uint64_t off, uint64_t len);

/* Whether an fallocate mode is cut into pieces charged as writes of their length: the modes
 * that allocate or write data (plain allocation, with or without KEEP_SIZE, ZERO_RANGE,
 * UNSHARE_RANGE), for which any sub-range is the same operation. The others (PUNCH_HOLE,
 * COLLAPSE_RANGE, INSERT_RANGE, and modes unknown here, which SOURCE answers) go as one
 * request of length 0: they free or move extents and write no data on the filesystems that
 * have them, and COLLAPSE/INSERT shift the rest of the file, so cannot be split. */
static bool falloc_split(int mode)
{
	return (mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_ZERO_RANGE | FALLOC_FL_UNSHARE_RANGE)) == 0;
}

/*
 * Makes a job record's request its next piece: a copy's read of min(left, max_copy_kb)
 * source bytes, or the write of the `got` bytes that read returned; an fallocate's next
 * piece. Called with ex->lock held (for the tunable); the record is the caller's.
 */
static void job_cut(struct executor *ex, struct exec_req *er, uint64_t got)
{
	uint64_t piece = sched_max_copy(ex->sd);

	if (piece > er->job_left)
		piece = er->job_left;
	if (er->kind == EK_COPY) {
		er->copy_writing = got > 0;
		if (er->copy_writing) {
			fill_rq(er, &er->job_tag[1], SCHED_OP_WRITE, er->job_off[1], got);
			er->fd = er->job_fd[1];
			er->wsrc = er->buf; /* where the read half left the data */
		} else {
			fill_rq(er, &er->job_tag[0], SCHED_OP_READ, er->job_off[0], piece);
			er->fd = er->job_fd[0];
		}
		return;
	}
	if (!falloc_split(er->falloc_mode))
		piece = er->job_left; /* one request: timed, but no data bytes */
	er->falloc_len = piece;
	fill_rq(er, &er->job_tag[1], SCHED_OP_WRITE, er->job_off[1],
		falloc_split(er->falloc_mode) ? piece : 0);
	er->rq.flags |= SCHED_RQ_NOMERGE;
	er->fd = er->job_fd[1];
}

/*
 * After one piece of a job completed (er->result set by do_io): cuts and queues the next
 * piece, returning true (the record is the scheduler's again, its charge kept); or, when the
 * job is over, sets er->result to the reply (a copy: the bytes copied, short at the source's
 * end of file or at an error after some were copied, else the error; an fallocate: 0 or the
 * first error) and returns false. A plain record returns false at once. Called with ex->lock
 * held by the piece's issuer, after sched_complete.
 */
static bool job_continue(struct executor *ex, struct exec_req *er, sched_ns now)
{
	ssize_t r = er->result;
	uint64_t got = 0;

	if (er->kind == EK_IO)
		return false;
	if (er->kind == EK_COPY && !er->copy_writing) {
		if (r <= 0 || er->job_stop) /* end of file, error, or the caller is killed */
			goto finish;
		got = (uint64_t)r; /* now write what was read */
	} else {
		uint64_t want = er->kind == EK_COPY ? er->rq.len : er->falloc_len;

		if (r < 0)
			goto finish;
		if (er->kind == EK_FALLOC)
			r = (ssize_t)want; /* fallocate does all or fails */
		er->job_done += (uint64_t)r;
		er->job_left -= (uint64_t)r;
		er->job_off[0] += (uint64_t)r;
		er->job_off[1] += (uint64_t)r;
		if ((uint64_t)r < want || er->job_left == 0 || er->job_stop)
			goto finish;
	}
	job_cut(ex, er, got);
	/* as in submit(): a group that expired meanwhile is served as the root */
	if (sched_group_get(ex->sd, er->rq.group, NULL, NULL, NULL) < 0)
		er->rq.group = SCHED_ROOT_GROUP;
	if (sched_enqueue(ex->sd, &er->rq, now) != 0) {
		r = -EIO;
		goto finish;
	}
	er->state = ER_QUEUED;
	if (er->job_irq_tid) {
		er->irq_tid = er->job_irq_tid;
		er->job_irq_tid = 0;
		if (ex->nr_irq_watch++ == 0)
			ex->irq_check_at = now + EXEC_IRQ_RECHECK_NS;
	}
	return true;

finish:
	er->job_live = false;
	if (er->job_stop && r >= 0 && er->job_done == 0)
		r = -EINTR;
	if (er->kind == EK_FALLOC)
		er->result = r < 0 ? r : 0;
	else
		er->result = er->job_done > 0 ? (ssize_t)er->job_done : r < 0 ? r : 0;
	return false;
}

/*
 * Issues a dispatched chain (counted in ex->in_flight by next_chain) and answers it: I/O and
 * device hold (outside the lock), completion and the scheduler's next choice (under it),
 * replies (outside). Called and returns without ex->lock. The chain's records go on
 * *answered, which the caller puts back the next time it holds the lock (this call does so
 * first thing under it). Returns the chain the caller should issue next (counted), or NULL;
 * the scheduler's other chains went to the ready list.
 */
static void recheck_interrupted(struct executor *ex, sched_ns now);

/* Runs recheck_interrupted() if some records are watched and it is due; *now is refreshed
 * if it ran (it drops the lock). Called with ex->lock held. */
static void recheck_if_due(struct executor *ex, sched_ns *now)
{
	if (ex->nr_irq_watch > 0 && !sched_time_after(ex->irq_check_at, *now)) {
		recheck_interrupted(ex, *now);
		*now = clk_now();
	}
}

static struct sched_rq *run_chain(struct executor *ex, struct sched_rq *rq,
				  struct exec_req **answered)
{
	struct exec_req *head = er_of(rq);
	struct sched_rq *m, *next;
	sched_ns now;

	/* (acquire: pairs with unpin()'s release, so the members' copied data is visible) */
	if (atomic_load_explicit(&head->pins, memory_order_acquire))
		wait_unpinned(ex, head);
	do_io(head);
	if (head->hold_until)
		clk_sleep_until(head->hold_until);

	/* A chain is one completion; it failed if any member did (a later contiguous run of
	 * the chain may fail while the head's succeeded), so the group's errors count it. */
	int err = 0;
	for (m = rq; m && !err; m = m->merge_next)
		if (er_of(m)->result < 0)
			err = (int)er_of(m)->result;
	pthread_mutex_lock(&ex->lock);
	put_answered(ex, answered);
	now = clk_now();
	sched_complete(ex->sd, rq, err, now);
	ex->in_flight--;
	/* What to answer (the members are ours again, and a job's member may be queued for
	 * its next piece here, after which another thread may take it: its links are read
	 * first, and it is not ours to answer). */
	struct exec_req *replies = NULL, **tail = &replies;
	struct sched_rq *after;
	for (m = rq; m; m = after) {
		struct exec_req *er = er_of(m);

		after = m->merge_next;
		if (job_continue(ex, er, now))
			continue;
		er_uncharge(ex, er);
		er->reply_next = NULL;
		*tail = er;
		tail = &er->reply_next;
	}
	/* Under steady load an issuer goes from chain to chain without passing the worker
	 * loop's top, so the watched callers are looked at here too. */
	recheck_if_due(ex, &now);
	/* The completion may let requests go (quantum, idling, depth): take the first, hand
	 * the rest to the workers, before replying. */
	next = take_and_dispatch_rest(ex, now);
	paranoid_check(ex);
	pthread_mutex_unlock(&ex->lock);

	/* Reply outside the lock; the records are ours until they go back to the pool. */
	while (replies) {
		struct exec_req *er = replies;

		replies = er->reply_next;
		reply_one(er);
		er->next_free = *answered;
		*answered = er;
	}
	return next;
}

static void *worker_main(void *arg)
{
	struct executor *ex = arg;
	struct exec_req *answered = NULL;
	unsigned self;

	/* top -H and /proc/PID/task/TID/comm tell the I/O workers from libfuse's threads */
	(void)pthread_setname_np(pthread_self(), "cfqfs-io");
	pthread_mutex_lock(&ex->lock);
	self = ++ex->nr_worker_ids; /* 1..depth, for ex->timer_owner (0 = none) */
	for (;;) {
		sched_ns now = clk_now();
		struct sched_rq *rq;

		recheck_if_due(ex, &now);
		put_answered(ex, &answered);
		rq = ready_pop(ex);
		if (!rq)
			rq = next_chain(ex, now);
		if (!rq) {
			/* (the ready list is empty: ready_pop found nothing) */
			if (ex->stopping && sched_nr_queued(ex->sd) == 0)
				break;
			sched_ns when = sched_next_event(ex->sd);
			sched_ns cap = now + EXEC_MAX_SLEEP_NS;
			if (!timer_needed(ex, when, now) || ex->in_flight >= ex->depth ||
			    sched_time_after(when, cap))
				when = cap;
			else if (ex->timer_at == SCHED_NS_NEVER ||
				 sched_time_after(ex->timer_at, when)) {
				/* this worker comes back for the event; others need not */
				ex->timer_at = when;
				ex->timer_owner = self;
			}
			if (ex->nr_irq_watch > 0 && sched_time_after(when, ex->irq_check_at))
				when = ex->irq_check_at;
			if (sched_time_after(when, now)) {
				struct timespec ts = clk_to_timespec(when);
				ex->idle_workers++;
				pthread_cond_timedwait(&ex->work, &ex->lock, &ts);
				ex->idle_workers--;
			}
			if (ex->timer_owner == self) {
				ex->timer_owner = 0;
				ex->timer_at = SCHED_NS_NEVER;
			}
			continue;
		}
		/* More may be dispatchable right now: hand it to the others before our I/O. */
		dispatch_rest(ex, now);
		pthread_mutex_unlock(&ex->lock);
		while (rq)
			rq = run_chain(ex, rq, &answered);
		pthread_mutex_lock(&ex->lock);
	}
	/* Wake the others: one may sleep for a second since it found nothing to dispatch. */
	pthread_cond_broadcast(&ex->work);
	pthread_mutex_unlock(&ex->lock);
	return NULL;
}

/* Withdraws a queued record (its caller was interrupted); true if it was still queued, and
 * then the caller holds it and answers EINTR. Called with ex->lock held. */
static bool cancel_queued(struct executor *ex, struct exec_req *er)
{
	sched_ns now = clk_now();

	if (er->state != ER_QUEUED || sched_cancel(ex->sd, &er->rq, now) != 0)
		return false;
	er->state = ER_RUNNING; /* ours now; nobody else will touch it */
	er->job_live = false;
	irq_unwatch(ex, er);
	/* Its queue may have been what the scheduler waited on. */
	dispatch_rest(ex, now);
	return true;
}

/* Answers a cancelled record EINTR and recycles it. Called without ex->lock. */
static void answer_cancelled(struct executor *ex, struct exec_req *er)
{
	fuse_reply_err(er->req, EINTR);
	pthread_mutex_lock(&ex->lock);
	er_put(ex, er);
	pthread_mutex_unlock(&ex->lock);
}

/*
 * Looks again at up to EXEC_IRQ_BATCH queued records whose caller got a handled signal
 * (irq_tid, set by on_interrupt()) and withdraws those whose caller is now being killed; the
 * kernel sends no second interrupt. Called with ex->lock held by an idle worker or by an
 * issuer after a completion, at most every EXEC_IRQ_RECHECK_NS while some are watched;
 * drops the lock to read /proc and to answer, and holds it again on return.
 */
static void recheck_interrupted(struct executor *ex, sched_ns now)
{
	struct watched {
		struct exec_req *er;
		fuse_req_t req; /* the record's request when looked at: it may be reused */
		pid_t tid;
	} w[EXEC_IRQ_BATCH];
	unsigned n = 0;

	ex->irq_check_at = now + EXEC_IRQ_RECHECK_NS;
	/* from where the last look stopped (records are never freed while the executor
	 * lives), so that more than a batch of watched records all get their turn */
	struct exec_req *er = ex->irq_cursor ? ex->irq_cursor : ex->all;
	for (size_t k = 0; k < ex->nr_records && n < EXEC_IRQ_BATCH; k++) {
		if (er->irq_tid) /* then queued (see exec_req) */
			w[n++] = (struct watched){ er, er->irq_req, er->irq_tid };
		er = er->all_next ? er->all_next : ex->all;
	}
	ex->irq_cursor = er;
	if (n == 0)
		return;
	pthread_mutex_unlock(&ex->lock);
	for (unsigned i = 0; i < n; i++)
		if (cg_task_dying(NULL, w[i].tid) != 1)
			w[i].er = NULL;
	pthread_mutex_lock(&ex->lock);
	unsigned nc = 0;
	for (unsigned i = 0; i < n; i++) {
		er = w[i].er;
		/* cancel_queued() also stops the watch */
		if (er && er->irq_req == w[i].req && er->irq_tid == w[i].tid && !er->pinned &&
		    cancel_queued(ex, er))
			w[nc++].er = er;
	}
	if (nc == 0)
		return;
	pthread_mutex_unlock(&ex->lock);
	for (unsigned i = 0; i < nc; i++)
		answer_cancelled(ex, w[i].er);
	pthread_mutex_lock(&ex->lock);
}

/*
 * libfuse calls this when the caller of a pending request got a signal. The kernel sends
 * FUSE_INTERRUPT for any signal, handled ones included, and passes an EINTR answer to read(),
 * write() and fsync() as it is (it restarts only lock requests). So a queued request is
 * withdrawn only when its caller is being killed (cg_task_dying()): a caller that merely
 * handles a signal (a timer, a profiler, Go's preemption) goes on waiting for its I/O, as it
 * would on a local disk. When the caller's state cannot be read, the request is served too:
 * late beats a spurious EINTR. The kernel interrupts a request once, so the caller of such a
 * request is watched while it stays queued: recheck_interrupted() withdraws it if the caller
 * is killed later, as a process being killed must not wait for its turn in the scheduler.
 */
static void on_interrupt(fuse_req_t req, void *data)
{
	struct exec_req *er = data;
	struct executor *ex = er->ex;
	bool cancelled = false;

	pid_t tid = fuse_req_ctx(req)->pid;

	if (cg_task_dying(NULL, tid) != 1) {
		/* a handled signal: served as usual, but the caller is watched while it waits */
		pthread_mutex_lock(&ex->lock);
		if (er->irq_req == req && er->state == ER_QUEUED && !er->irq_tid && tid > 0) {
			er->irq_tid = tid;
			if (ex->nr_irq_watch++ == 0)
				ex->irq_check_at = clk_now() + EXEC_IRQ_RECHECK_NS;
		} else if (er->irq_req == req && er->state == ER_RUNNING && er->job_live &&
			   tid > 0) {
			er->job_irq_tid = tid; /* a job's piece in flight: watch its next one */
		}
		pthread_mutex_unlock(&ex->lock);
		return;
	}
	pthread_mutex_lock(&ex->lock);
	if (er->irq_req == req && er->state == ER_RUNNING && er->job_live)
		er->job_stop = true; /* a job's piece in flight: it ends after that piece */
	if (er->irq_req == req && er->state == ER_QUEUED) {
		if (er->pinned)
			er->irq_pending = true; /* its submitter still copies into it */
		else
			cancelled = cancel_queued(ex, er);
	}
	pthread_mutex_unlock(&ex->lock);
	if (cancelled) /* else dispatched: its issuer answers it */
		answer_cancelled(ex, er);
}

static void er_fail(struct executor *ex, struct exec_req *er, int err);

/* This thread's spare record, taken (the thread now holds it), or NULL. No lock: only this
 * thread touches its spare. */
static struct exec_req *spare_take(struct executor *ex)
{
	struct exec_req *er = pthread_getspecific(ex->spare_key);

	if (er)
		(void)pthread_setspecific(ex->spare_key, NULL);
	return er;
}

/* Keeps the first of this thread's answered records as its spare if it has none. */
static void spare_keep(struct executor *ex, struct exec_req **answered)
{
	struct exec_req *er = *answered;

	if (er && pthread_getspecific(ex->spare_key) == NULL &&
	    pthread_setspecific(ex->spare_key, er) == 0)
		*answered = er->next_free;
}

/* The key's destructor: a thread that exits gives its spare back to the pool. */
static void spare_release(void *p)
{
	struct exec_req *er = p;
	struct executor *ex = er->ex;

	pthread_mutex_lock(&ex->lock);
	er_put(ex, er);
	pthread_mutex_unlock(&ex->lock);
}

/*
 * Charges a filled record to its group's load and its uid's unless that would pass a limit (a
 * group or user holding nothing may always hold one request, whatever its size; a record
 * nobody waits for, the kernel's writeback, is never refused: see exec_limits). Called with
 * ex->lock held. Returns 0; -EAGAIN over a limit (*warn set to WARN_GROUP or WARN_UID when a
 * warning is due); -ENOMEM if a load table could not grow. Nothing is charged on failure.
 */
static int charge(struct executor *ex, struct exec_req *er, sched_ns now, int *warn)
{
	uint32_t g = er->rq.group;
	/* data held: a write's; a copy's piece buffer (its first piece's size, kept for the
	 * whole copy); none for an fallocate */
	uint64_t bytes = er->kind == EK_COPY ? er->rq.len
			 : er->kind == EK_IO && er->rq.op == SCHED_OP_WRITE ? er->rq.len : 0;
	struct grp_load *l;

	if (g >= ex->nr_load) {
		size_t n = ex->nr_load ? ex->nr_load : 16;
		while (n <= g)
			n *= 2;
		l = realloc(ex->load, n * sizeof(*l));
		if (!l)
			return -ENOMEM;
		memset(l + ex->nr_load, 0, (n - ex->nr_load) * sizeof(*l));
		ex->load = l;
		ex->nr_load = n;
	}
	l = &ex->load[g];
	/* fsync and fdatasync carry no data and are never refused: an fsync error tells an
	 * application its writes may be lost (PostgreSQL stops on one), and EAGAIN is not an
	 * error fsync() has. Each comes from a caller blocked in it, so they stay few. */
	bool exempt = er->unbounded || er->rq.op == SCHED_OP_FSYNC ||
		      er->rq.op == SCHED_OP_FDATASYNC;
	int over = 0;
	if (!exempt && l->reqs > 0 &&
	    (l->reqs >= ex->limits.queue_limit || l->bytes + bytes > ex->limits.queue_bytes))
		over = WARN_GROUP;
	if (!over && er->uid != 0) {
		/* exempt requests count, like a group's, but are never refused */
		int rc = uidtab_charge(ex->uid_load, er->uid, 1, bytes,
				       exempt ? UINT32_MAX : ex->limits.uid_queue_limit,
				       exempt ? UINT64_MAX : ex->limits.uid_queue_bytes);
		if (rc == -ENOMEM)
			return rc;
		if (rc < 0)
			over = WARN_UID;
	}
	if (over) {
		/* one warning per interval of each kind: a tenant at its user bound must not
		 * hide that a group reached its own */
		sched_ns *last = over == WARN_UID ? &ex->uid_limit_warned : &ex->limit_warned;
		if (*last == 0 || now - *last >= EXEC_LIMIT_WARN_NS) {
			*last = now ? now : 1;
			*warn = over;
		}
		return -EAGAIN;
	}
	l->reqs++;
	l->bytes += bytes;
	er->charged = true;
	er->charged_group = g;
	er->charged_bytes = bytes;
	er->charged_uid = er->uid;
	return 0;
}

static void fill_rq(struct exec_req *er, const struct exec_tag *tag, enum sched_op op,
		    uint64_t off, uint64_t len)
{
	memset(&er->rq, 0, sizeof(er->rq));
	er->rq.queue_key = tag->queue_key;
	er->rq.group = tag->group;
	er->rq.ioclass = tag->ioclass;
	er->rq.level = tag->level;
	er->rq.op = (uint8_t)op;
	er->rq.flags = tag->rq_flags;
	er->rq.file = tag->file;
	er->rq.offset = off;
	er->rq.len = len;
	er->unbounded = tag->no_caller;
	er->uid = tag->uid;
}

/*
 * Enqueues a filled record. The interrupt callback is registered first: once the request is
 * queued another thread may answer it at any moment, after which `er->req` must not be
 * touched. An interrupt that arrives before the enqueue finds the record not ER_QUEUED, or
 * irq_req not yet set to this request, and is ignored (the request is then served normally).
 * On failure the request is answered here and the record recycled. `borrowed` [bytes]: a
 * write whose data is still at er->wsrc in the session thread's buffer (see unpin()), 0 if
 * none is.
 */
static void submit(struct executor *ex, struct exec_req *er, size_t borrowed)
{
	bool copy = false;
	int warn = 0;
	uint32_t group;
	uid_t uid = er->uid; /* for the warning, as `group` */
	int err;

	fuse_req_interrupt_func(er->req, on_interrupt, er);
	pthread_mutex_lock(&ex->lock);
	sched_ns now = clk_now();
	if (er->kind != EK_IO)
		job_cut(ex, er, 0); /* the first piece (the tunable is read under the lock) */
	/* The group may have expired between classification and now (groups.h,
	 * grp_set_expiry; an open file's opener tag keeps its id): charge the root instead of
	 * failing the request. */
	if (sched_group_get(ex->sd, er->rq.group, NULL, NULL, NULL) < 0)
		er->rq.group = SCHED_ROOT_GROUP;
	group = er->rq.group; /* for the warning: er is not ours once queued and unlocked */
	err = ex->stopping ? -ESHUTDOWN : charge(ex, er, now, &warn);
	if (err == 0)
		err = sched_enqueue(ex->sd, &er->rq, now);
	struct sched_rq *rq = NULL;
	if (err == 0) {
		er->irq_req = er->req;
		er->state = ER_QUEUED;
		er->job_live = er->kind != EK_IO;
		er->job_stop = false;
		er->job_irq_tid = 0;
		er->pinned = borrowed > 0; /* until we know who issues it */
		/*
		 * Inline issue (see exec_options.inline_io for when it is on): this thread takes
		 * the first chain the scheduler gives (not necessarily our request) and issues it,
		 * and then what its completions let go, up to EXEC_INLINE_CHAINS; the scheduler
		 * still decides. Anything else goes to the workers, which also cover timers.
		 */
		if (ex->inline_io)
			rq = take_and_dispatch_rest(ex, now);
		else
			dispatch_rest(ex, now);
		if (er->pinned) {
			if (rq && er->state == ER_RUNNING && er->pin_head == er_of(rq))
				unpin(ex, er); /* we issue it, from libfuse's buffer */
			else
				copy = true;
		}
	}
	paranoid_check(ex);
	pthread_mutex_unlock(&ex->lock);
	if (copy) {
		/* Queued, or in another thread's chain (which waits for this): the data must
		 * outlive our return. er stays ours while pinned: no one can answer it. */
		bool cancelled = false;

		memcpy(er->buf, er->wsrc, borrowed);
		pthread_mutex_lock(&ex->lock);
		er->wsrc = er->buf;
		unpin(ex, er);
		if (er->irq_pending) {
			er->irq_pending = false;
			cancelled = cancel_queued(ex, er);
		}
		paranoid_check(ex);
		pthread_mutex_unlock(&ex->lock);
		if (cancelled)
			answer_cancelled(ex, er);
	}
	if (rq) {
		struct exec_req *answered = NULL;

		for (unsigned n = 0; rq; n++) {
			if (n == EXEC_INLINE_CHAINS) {
				pthread_mutex_lock(&ex->lock);
				ready_push(ex, rq);
				pthread_mutex_unlock(&ex->lock);
				break;
			}
			rq = run_chain(ex, rq, &answered);
		}
		spare_keep(ex, &answered);
		if (answered) {
			pthread_mutex_lock(&ex->lock);
			put_answered(ex, &answered);
			pthread_mutex_unlock(&ex->lock);
		}
	}
	if (warn == WARN_GROUP)
		LOG_WARN("group %u reached its queue limit (queue_limit, queue_limit_mb): further "
			 "requests of it get EAGAIN until it drains (warned once per %llu s)",
			 group, (unsigned long long)(EXEC_LIMIT_WARN_NS / 1000000000ull));
	else if (warn == WARN_UID)
		LOG_WARN("uid %u reached its queue limit over all its groups (uid_queue_limit, "
			 "uid_queue_limit_mb): further requests of it get EAGAIN until it drains "
			 "(warned once per %llu s)", (unsigned)uid,
			 (unsigned long long)(EXEC_LIMIT_WARN_NS / 1000000000ull));
	if (err) {
		if (err != -EAGAIN)
			LOG_WARN("cannot queue a request: %s", strerror(-err));
		er_fail(ex, er, err == -ESHUTDOWN ? EIO : -err);
	}
}

static struct exec_req *er_new(struct executor *ex, fuse_req_t req, int fd)
{
	struct exec_req *er = spare_take(ex);

	if (!er) {
		pthread_mutex_lock(&ex->lock);
		er = er_get(ex);
		if (er)
			er->state = ER_NEW; /* under the lock: an interrupt callback reads it */
		pthread_mutex_unlock(&ex->lock);
	}
	if (!er) {
		fuse_reply_err(req, ENOMEM);
		return NULL;
	}
	er->req = req;
	er->fd = fd;
	er->result = 0;
	er->kind = EK_IO;
	return er;
}

static void er_fail(struct executor *ex, struct exec_req *er, int err)
{
	fuse_reply_err(er->req, err);
	pthread_mutex_lock(&ex->lock);
	er_put(ex, er);
	pthread_mutex_unlock(&ex->lock);
}

/* A record for a data request at `off` with a buffer of `size` bytes, or NULL after
 * answering the request with the error (negative offset, no memory). */
static struct exec_req *er_new_data(struct executor *ex, fuse_req_t req, int fd, off_t off,
				    size_t size)
{
	struct exec_req *er = er_new(ex, req, fd);

	if (!er)
		return NULL;
	if (off < 0 || er_reserve(er, size) < 0) {
		er_fail(ex, er, off < 0 ? EINVAL : ENOMEM);
		return NULL;
	}
	return er;
}

void exec_read(struct executor *ex, fuse_req_t req, int fd, size_t size, off_t off,
	       const struct exec_tag *tag)
{
	struct exec_req *er = er_new(ex, req, fd);

	if (!er)
		return;
	if (off < 0) {
		er_fail(ex, er, EINVAL);
		return;
	}
	fill_rq(er, tag, SCHED_OP_READ, (uint64_t)off, size);
	submit(ex, er, 0);
}

void exec_write(struct executor *ex, fuse_req_t req, int fd, struct fuse_bufvec *in_buf,
		off_t off, const struct exec_tag *tag)
{
	size_t size = fuse_buf_size(in_buf);
	struct exec_req *er = er_new_data(ex, req, fd, off, size);

	if (!er)
		return;
	/*
	 * The incoming buffer belongs to the session thread and is reused once we return. If
	 * this thread may issue the write itself and the data is in memory, submit() decides
	 * whether a copy is needed; otherwise copy now (from memory or, with splice, the pipe).
	 */
	const struct fuse_buf *in = &in_buf->buf[0];
	if (ex->inline_io && in_buf->count == 1 && in_buf->idx == 0 && in_buf->off == 0 &&
	    !(in->flags & FUSE_BUF_IS_FD) && size > 0 && in->size == size) {
		er->wsrc = in->mem;
		fill_rq(er, tag, SCHED_OP_WRITE, (uint64_t)off, (uint64_t)size);
		submit(ex, er, size);
		return;
	}
	struct fuse_bufvec dst = FUSE_BUFVEC_INIT(size);
	dst.buf[0].mem = er->buf;
	ssize_t got = fuse_buf_copy(&dst, in_buf, 0);
	if (got < 0) {
		er_fail(ex, er, (int)-got);
		return;
	}
	er->wsrc = er->buf;
	fill_rq(er, tag, SCHED_OP_WRITE, (uint64_t)off, (uint64_t)got);
	submit(ex, er, 0);
}

void exec_fsync(struct executor *ex, fuse_req_t req, int fd, bool datasync,
		const struct exec_tag *tag)
{
	struct exec_req *er = er_new(ex, req, fd);

	if (!er)
		return;
	fill_rq(er, tag, datasync ? SCHED_OP_FDATASYNC : SCHED_OP_FSYNC, 0, 0);
	submit(ex, er, 0);
}

/* A job record for `req`, its first piece cut by submit(); NULL after answering the request
 * (no memory). */
static struct exec_req *job_new(struct executor *ex, fuse_req_t req, enum er_kind kind,
				uint64_t len)
{
	struct exec_req *er = er_new(ex, req, -1);

	if (!er)
		return NULL;
	er->kind = (uint8_t)kind;
	er->copy_writing = false;
	er->job_left = len;
	er->job_done = 0;
	return er;
}

void exec_copy(struct executor *ex, fuse_req_t req, int fd_in, off_t off_in,
	       const struct exec_tag *tag_in, int fd_out, off_t off_out,
	       const struct exec_tag *tag_out, size_t len)
{
	struct exec_req *er;

	if (len == 0) { /* (the kernel answers these itself) */
		fuse_reply_write(req, 0);
		return;
	}
	if (off_in < 0 || off_out < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	er = job_new(ex, req, EK_COPY, len);
	if (!er)
		return;
	er->job_fd[0] = fd_in;
	er->job_fd[1] = fd_out;
	er->job_off[0] = (uint64_t)off_in;
	er->job_off[1] = (uint64_t)off_out;
	er->job_tag[0] = *tag_in;
	er->job_tag[1] = *tag_out;
	er->job_tag[0].path = er->job_tag[1].path = NULL;
	submit(ex, er, 0);
}

void exec_fallocate(struct executor *ex, fuse_req_t req, int fd, int mode, off_t off,
		    off_t len, const struct exec_tag *tag)
{
	struct exec_req *er;

	if (off < 0 || len <= 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	er = job_new(ex, req, EK_FALLOC, (uint64_t)len);
	if (!er)
		return;
	er->falloc_mode = mode;
	er->job_fd[0] = er->job_fd[1] = fd;
	er->job_off[0] = er->job_off[1] = (uint64_t)off;
	er->job_tag[1] = *tag;
	er->job_tag[1].path = NULL;
	submit(ex, er, 0);
}

/* The limits with every 0 replaced by its default (exec_limits). */
static struct exec_limits limits_resolved(const struct exec_limits *lim)
{
	struct exec_limits l = *lim;

	if (l.queue_limit == 0)
		l.queue_limit = EXEC_QUEUE_LIMIT_DEFAULT;
	if (l.queue_bytes == 0)
		l.queue_bytes = EXEC_QUEUE_BYTES_DEFAULT;
	if (l.uid_queue_limit == 0)
		l.uid_queue_limit = l.queue_limit;
	if (l.uid_queue_bytes == 0)
		l.uid_queue_bytes = l.queue_bytes;
	return l;
}

void exec_set_limits(struct executor *ex, const struct exec_limits *lim)
{
	pthread_mutex_lock(&ex->lock);
	ex->limits = limits_resolved(lim);
	pthread_mutex_unlock(&ex->lock);
}

bool exec_issues_inline(const struct executor *ex)
{
	return ex->inline_io;
}

int exec_with_sched(struct executor *ex, int (*fn)(void *arg, struct sched *sd), void *arg)
{
	int r;

	pthread_mutex_lock(&ex->lock);
	r = fn(arg, ex->sd);
	/* A tunable or policy change may allow dispatch now. */
	pthread_cond_broadcast(&ex->work);
	pthread_mutex_unlock(&ex->lock);
	return r;
}

struct executor *exec_create(const struct exec_options *opts, int *err)
{
	struct executor *ex;
	pthread_condattr_t ca;
	int e = 0;

	if (opts->depth < 1 || opts->depth > EXEC_DEPTH_MAX) {
		*err = -EINVAL;
		return NULL;
	}
	ex = calloc(1, sizeof(*ex));
	if (!ex) {
		e = -ENOMEM;
		goto out;
	}
	ex->depth = opts->depth;
	ex->timer_at = SCHED_NS_NEVER;
	ex->limits = limits_resolved(&opts->limits);
	ex->uid_load = uidtab_new();
	if (!ex->uid_load) {
		e = -ENOMEM;
		goto out_free;
	}
	ex->workers = calloc(opts->depth, sizeof(*ex->workers));
	if (!ex->workers) {
		e = -ENOMEM;
		goto out_free;
	}
	/* An emulated device sleeps per I/O: keep that off the FUSE session threads. */
	ex->inline_io = opts->inline_io && opts->device == NULL;
	if (opts->device) {
		ex->dev = dev_create(opts->device);
		if (!ex->dev) {
			e = -EINVAL;
			goto out_free_workers;
		}
	}
	ex->sd = sched_create(opts->policy, opts->rotational);
	if (!ex->sd) {
		e = -ENOMEM;
		goto out_free_dev;
	}
	e = -pthread_key_create(&ex->spare_key, spare_release);
	if (e)
		goto out_free_sched;
	pthread_mutexattr_t ma;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ADAPTIVE_NP);
	pthread_mutex_init(&ex->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&ex->work, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&ex->unpinned, NULL);
	*err = 0;
	return ex;

out_free_sched:
	sched_destroy(ex->sd);
out_free_dev:
	dev_destroy(ex->dev);
out_free_workers:
	free(ex->workers);
out_free:
	uidtab_free(ex->uid_load);
	free(ex);
out:
	*err = e;
	return NULL;
}

static void stop_workers(struct executor *ex, unsigned n)
{
	pthread_mutex_lock(&ex->lock);
	ex->stopping = true;
	pthread_cond_broadcast(&ex->work);
	pthread_mutex_unlock(&ex->lock);
	while (n-- > 0)
		pthread_join(ex->workers[n], NULL);
}

int exec_start(struct executor *ex)
{
	unsigned i;
	int e;

	for (i = 0; i < ex->depth; i++) {
		e = pthread_create(&ex->workers[i], NULL, worker_main, ex);
		if (e) {
			stop_workers(ex, i);
			return -e;
		}
	}
	ex->started = true;
	return 0;
}

void exec_destroy(struct executor *ex)
{
	if (!ex)
		return;
	stop_workers(ex, ex->started ? ex->depth : 0);
	/* The session threads and the workers are gone, and gave their spares back on exit;
	 * the calling thread's spare (single-threaded mode) is freed with the rest. Deleting
	 * the key runs no destructor. */
	(void)pthread_key_delete(ex->spare_key);
	pthread_mutex_lock(&ex->lock);
	paranoid_check(ex);
	pthread_mutex_unlock(&ex->lock);
	while (ex->all) {
		struct exec_req *er = ex->all;
		ex->all = er->all_next;
		free(er->buf);
		free(er);
	}
	sched_destroy(ex->sd);
	dev_destroy(ex->dev);
	free(ex->load);
	uidtab_free(ex->uid_load);
	pthread_cond_destroy(&ex->work);
	pthread_cond_destroy(&ex->unpinned);
	pthread_mutex_destroy(&ex->lock);
	free(ex->workers);
	free(ex);
}
