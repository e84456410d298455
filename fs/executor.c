/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * executor.c - worker threads around the pure scheduler core.
 *
 * The whole concurrency story of the data path:
 *   - submit (FUSE session thread): lock, sched_enqueue, signal one worker, unlock, return
 *     without replying;
 *   - worker: lock, now = clk_now(), sched_dispatch; if nothing, wait on the condition until
 *     sched_next_event() or a signal; else unlock, do the I/O, lock, sched_complete, unlock,
 *     reply to every request of the dispatched chain;
 *   - interrupt (FUSE session thread): lock, sched_cancel; if the request was still queued,
 *     reply EINTR and recycle it; if it is in flight, let the worker finish it.
 *
 * Request records (struct exec_req) come from a per-executor pool and return to it, never to
 * malloc, while the executor lives: libfuse may call the interrupt callback with a pointer to
 * a record whose request a worker has just answered, so the memory must stay valid; the
 * callback recognises that case because the record no longer holds that fuse_req_t in the
 * QUEUED state (libfuse keeps the fuse_req_t itself alive during the callback).
 */
#include "executor.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "clock.h"
#include "device.h"
#include "log.h"

#define EXEC_DEPTH_MAX 256u
#define EXEC_IOV_MAX 256 /* members of one merged run issued by one preadv/pwritev */
/* [bytes] buffer memory the free pool may keep for reuse; past it, buffers of returning
 * records are freed, so a burst does not pin its peak memory for the daemon's lifetime. */
#define EXEC_POOL_KEEP_BYTES (64ull << 20)
/* [ns] longest a worker sleeps without looking: a safety net against a lost condition-variable
 * wake-up (glibc before 2.38 can lose one, BZ 25847: a shutdown hung in stop_workers with
 * every worker asleep), which would otherwise leave a request or the stop unnoticed. */
#define EXEC_MAX_SLEEP_NS (1000ull * 1000000ull)
/* [ns] at most one "limit reached" warning per this interval. */
#define EXEC_LIMIT_WARN_NS (10ull * 1000000000ull)

enum er_state {
	ER_FREE = 0,	/* in the pool */
	ER_NEW,		/* being built by the submitting thread */
	ER_QUEUED,	/* in the scheduler, may be cancelled */
	ER_RUNNING,	/* dispatched (or merged into a dispatched chain) */
};

/* One FUSE data request. Fields are written by the submitting thread before enqueue and by
 * the worker that owns it after dispatch; `state` and `next_free` are protected by ex->lock. */
struct exec_req {
	struct sched_rq rq;	 /* embedded scheduler node; container_of recovers the record */
	fuse_req_t req;		 /* NULL when free */
	struct executor *ex;	 /* owner, for the interrupt callback */
	int fd;			 /* backing fd, borrowed from the file handle */
	char *buf;		 /* read destination or write data */
	size_t buf_cap;		 /* [bytes] allocated size of buf, kept across reuse */
	ssize_t result;		 /* [bytes] transferred, or -errno */
	uint32_t charged_group;	 /* group whose load counts this record, if `charged` */
	bool charged;		 /* counted in ex->load[charged_group]; protected by ex->lock */
	uint64_t charged_bytes;	 /* [bytes] of write data counted there */
	enum er_state state;	 /* protected by ex->lock */
	struct exec_req *next_free; /* pool link, protected by ex->lock */
};

/* What one group holds in the daemon: records charged to it (queued or in flight). */
struct grp_load {
	uint32_t reqs;	 /* [requests] */
	uint64_t bytes;	 /* [bytes] of write data */
};

/*
 * Invariants (under lock): every record is either on the free list (ER_FREE) or owned by
 * exactly one of the scheduler (ER_QUEUED) or a worker (ER_RUNNING); nr_records counts all.
 * load[g] sums the charged records of group g; pool_bytes sums buf_cap over the free list.
 */
struct executor {
	pthread_mutex_t lock;
	pthread_cond_t work;	   /* signalled on enqueue, completion and stop */
	struct sched *sd;	   /* protected by lock */
	struct exec_req *free_list; /* protected by lock */
	size_t nr_records;	   /* protected by lock */
	bool stopping;		   /* protected by lock */
	struct exec_limits limits; /* protected by lock */
	struct grp_load *load;	   /* [nr_load], indexed by group id; protected by lock */
	size_t nr_load;		   /* protected by lock */
	sched_ns limit_warned;	   /* [ns] last limit warning; protected by lock */
	size_t pool_bytes;	   /* [bytes] buffers kept by the free list; protected by lock */
	struct dev_model *dev;	   /* emulated device or NULL; protected by lock */
	unsigned in_flight;	   /* chains being issued, by workers or inline; protected by lock */
	unsigned idle_workers;	   /* workers waiting on `work`; protected by lock */
	bool inline_io;		   /* submitters may issue what they dispatch; immutable */
	unsigned depth;		   /* worker count; immutable */
	pthread_t *workers;	   /* [depth]; written by exec_start only */
	bool started;		   /* workers running; written by exec_start only */
};

static struct exec_req *er_of(struct sched_rq *rq)
{
	return (struct exec_req *)((char *)rq - offsetof(struct exec_req, rq));
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
		ex->nr_records++;
	}
	return er;
}

/* Returns a record to the pool, dropping its charge. Called with ex->lock held. */
static void er_put(struct executor *ex, struct exec_req *er)
{
	if (er->charged) {
		struct grp_load *l = &ex->load[er->charged_group];
		l->reqs--;
		l->bytes -= er->charged_bytes;
		er->charged = false;
		er->charged_bytes = 0;
	}
	if (ex->pool_bytes + er->buf_cap > EXEC_POOL_KEEP_BYTES) {
		free(er->buf);
		er->buf = NULL;
		er->buf_cap = 0;
	}
	ex->pool_bytes += er->buf_cap;
	er->req = NULL;
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
 * Issues one contiguous run of a merged chain, `n` members starting at `first`, as one
 * preadv/pwritev, retrying short transfers. Each member's result is set: bytes, or -errno
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
		iov[i].iov_base = members[i]->buf;
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
		bool contiguous = n > 0 && n < EXEC_IOV_MAX &&
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

/* Wakes one idle worker if requests are waiting and the depth allows another. Called with
 * ex->lock held. The chain of wake-ups replaces a broadcast: each worker that dispatches wakes
 * the next one while work remains, so idle workers sleep through light load. */
static void wake_one_if_work(struct executor *ex)
{
	if (ex->idle_workers > 0 && ex->in_flight < ex->depth && sched_nr_queued(ex->sd) > 0)
		pthread_cond_signal(&ex->work);
}

/*
 * Issues a dispatched chain and answers it: device model (under the lock), I/O (outside),
 * completion (under), replies (outside). Called and returns with ex->lock held; the caller
 * has counted the chain in ex->in_flight.
 */
static void run_chain(struct executor *ex, struct sched_rq *rq, sched_ns now)
{
	struct exec_req *head = er_of(rq);
	struct sched_rq *m;

	for (m = rq; m; m = m->merge_next)
		er_of(m)->state = ER_RUNNING;
	/* The model serialises on its heads like a real device: ask it at dispatch. */
	sched_ns done = ex->dev ? dev_issue(ex->dev, rq->file, rq->offset, rq->merged_len,
					    rq->op == SCHED_OP_WRITE, now)
				: 0;
	LOG_DEBUG("dispatch: queue %llu group %u %s %s off %llu len %llu (+%u merged)",
		  (unsigned long long)rq->queue_key, rq->group,
		  rq->flags & SCHED_RQ_SYNC ? "sync" : "async",
		  rq->op == SCHED_OP_READ ? "read" : rq->op == SCHED_OP_WRITE ? "write" : "fsync",
		  (unsigned long long)rq->offset, (unsigned long long)rq->merged_len, rq->nr_merged);
	pthread_mutex_unlock(&ex->lock);

	do_io(head);
	if (done)
		clk_sleep_until(done);

	/* A chain is one completion; it failed if any member did (a later contiguous run of
	 * the chain may fail while the head's succeeded), so the group's errors count it. */
	int err = 0;
	for (m = rq; m && !err; m = m->merge_next)
		if (er_of(m)->result < 0)
			err = (int)er_of(m)->result;
	pthread_mutex_lock(&ex->lock);
	sched_complete(ex->sd, rq, err, clk_now());
	ex->in_flight--;
	/* The completion may let a waiting request go (quantum, idling, depth). */
	wake_one_if_work(ex);
	pthread_mutex_unlock(&ex->lock);

	/* Reply outside the lock; the chain is ours until the records go back. */
	for (m = rq; m;) {
		struct sched_rq *next = m->merge_next;
		reply_one(er_of(m));
		m = next;
	}
	pthread_mutex_lock(&ex->lock);
	for (m = rq; m;) {
		struct sched_rq *next = m->merge_next;
		er_put(ex, er_of(m));
		m = next;
	}
}

/* Next chain to issue, or NULL when the depth is used up or the scheduler says wait. Called
 * with ex->lock held; counts the chain in flight. */
static struct sched_rq *next_chain(struct executor *ex, sched_ns now)
{
	struct sched_rq *rq;

	if (ex->in_flight >= ex->depth)
		return NULL;
	rq = sched_dispatch(ex->sd, now);
	if (rq)
		ex->in_flight++; /* run_chain() logs it */
	return rq;
}

static void *worker_main(void *arg)
{
	struct executor *ex = arg;

	pthread_mutex_lock(&ex->lock);
	for (;;) {
		sched_ns now = clk_now();
		struct sched_rq *rq = next_chain(ex, now);

		if (!rq) {
			if (ex->stopping && sched_nr_queued(ex->sd) == 0)
				break;
			sched_ns when = sched_next_event(ex->sd);
			sched_ns cap = now + EXEC_MAX_SLEEP_NS;
			ex->idle_workers++;
			if (when == SCHED_NS_NEVER || ex->in_flight >= ex->depth ||
			    sched_time_after(when, cap))
				when = cap;
			if (sched_time_after(when, now)) {
				struct timespec ts = clk_to_timespec(when);
				pthread_cond_timedwait(&ex->work, &ex->lock, &ts);
			}
			ex->idle_workers--;
			continue;
		}
		/* More may be dispatchable right now: pass the baton before our I/O. */
		wake_one_if_work(ex);
		run_chain(ex, rq, now);
	}
	pthread_mutex_unlock(&ex->lock);
	return NULL;
}

/* libfuse calls this when the caller of a pending request was interrupted (usually killed). */
static void on_interrupt(fuse_req_t req, void *data)
{
	struct exec_req *er = data;
	struct executor *ex = er->ex;
	bool cancelled = false;

	pthread_mutex_lock(&ex->lock);
	if (er->req == req && er->state == ER_QUEUED &&
	    sched_cancel(ex->sd, &er->rq, clk_now()) == 0) {
		er->state = ER_RUNNING; /* ours now; nobody else will touch it */
		cancelled = true;
	}
	pthread_mutex_unlock(&ex->lock);
	if (!cancelled)
		return; /* in flight: the worker answers it */
	fuse_reply_err(req, EINTR);
	pthread_mutex_lock(&ex->lock);
	er_put(ex, er);
	pthread_mutex_unlock(&ex->lock);
}

static void er_fail(struct executor *ex, struct exec_req *er, int err);

/*
 * Charges a filled record to its group's load unless that would pass a limit (a group holding
 * nothing may always hold one request, whatever its size). Called with ex->lock held.
 * Returns 0; -EAGAIN over a limit (*warn set when a warning is due); -ENOMEM if the load table
 * could not grow. Nothing is charged on failure.
 */
static int charge(struct executor *ex, struct exec_req *er, sched_ns now, bool *warn)
{
	uint32_t g = er->rq.group;
	uint64_t bytes = er->rq.op == SCHED_OP_WRITE ? er->rq.len : 0;
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
	if (l->reqs > 0 && (l->reqs >= ex->limits.queue_limit ||
			    l->bytes + bytes > ex->limits.queue_bytes)) {
		if (ex->limit_warned == 0 || now - ex->limit_warned >= EXEC_LIMIT_WARN_NS) {
			ex->limit_warned = now ? now : 1;
			*warn = true;
		}
		return -EAGAIN;
	}
	l->reqs++;
	l->bytes += bytes;
	er->charged = true;
	er->charged_group = g;
	er->charged_bytes = bytes;
	return 0;
}

static void fill_rq(struct exec_req *er, const struct exec_tag *tag, enum sched_op op, bool sync,
		    uint64_t off, uint64_t len)
{
	memset(&er->rq, 0, sizeof(er->rq));
	er->rq.queue_key = tag->queue_key;
	er->rq.group = tag->group;
	er->rq.ioclass = tag->ioclass;
	er->rq.level = tag->level;
	er->rq.op = (uint8_t)op;
	er->rq.flags = sync ? SCHED_RQ_SYNC : 0;
	er->rq.file = tag->file;
	er->rq.offset = off;
	er->rq.len = len;
}

/*
 * Enqueues a filled record. The interrupt callback is registered first: once the request is
 * queued a worker may answer it at any moment, after which `er->req` must not be touched. An
 * interrupt that arrives before the enqueue finds the record ER_NEW and is ignored (the request
 * is then served normally). On failure the request is answered here and the record recycled.
 */
static void submit(struct executor *ex, struct exec_req *er)
{
	bool warn = false;
	uint32_t group;
	int err;

	fuse_req_interrupt_func(er->req, on_interrupt, er);
	pthread_mutex_lock(&ex->lock);
	sched_ns now = clk_now();
	/* The group may have expired between classification and now (groups.h,
	 * grp_set_expiry; an open file's opener tag keeps its id): charge the root instead of
	 * failing the request. */
	if (sched_group_get(ex->sd, er->rq.group, NULL, NULL, NULL) < 0)
		er->rq.group = SCHED_ROOT_GROUP;
	group = er->rq.group; /* for the warning: er is not ours once queued and unlocked */
	err = ex->stopping ? -ESHUTDOWN : charge(ex, er, now, &warn);
	if (err == 0)
		err = sched_enqueue(ex->sd, &er->rq, now);
	if (err == 0) {
		er->state = ER_QUEUED;
		/*
		 * Inline issue: when the depth has room, this thread asks the scheduler at once
		 * and issues whatever it chooses (not necessarily our request), saving a hand-off
		 * to a worker. The scheduler still decides; workers cover timers and backlog.
		 */
		struct sched_rq *rq = ex->inline_io ? next_chain(ex, now) : NULL;
		if (rq) {
			wake_one_if_work(ex);
			run_chain(ex, rq, now);
		} else {
			wake_one_if_work(ex);
		}
	}
	pthread_mutex_unlock(&ex->lock);
	if (warn)
		LOG_WARN("group %u reached its queue limit (queue_limit, queue_limit_mb): further "
			 "requests of it get EAGAIN until it drains (warned once per %llu s)",
			 group, (unsigned long long)(EXEC_LIMIT_WARN_NS / 1000000000ull));
	if (err) {
		if (err != -EAGAIN)
			LOG_WARN("cannot queue a request: %s", strerror(-err));
		er_fail(ex, er, err == -ESHUTDOWN ? EIO : -err);
	}
}

static struct exec_req *er_new(struct executor *ex, fuse_req_t req, int fd)
{
	struct exec_req *er;

	pthread_mutex_lock(&ex->lock);
	er = er_get(ex);
	if (er) {
		/* Under the lock: a stale interrupt callback may compare these. */
		er->req = req;
		er->state = ER_NEW;
	}
	pthread_mutex_unlock(&ex->lock);
	if (!er) {
		fuse_reply_err(req, ENOMEM);
		return NULL;
	}
	er->fd = fd;
	er->result = 0;
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
	fill_rq(er, tag, SCHED_OP_READ, true, (uint64_t)off, size);
	submit(ex, er);
}

void exec_write(struct executor *ex, fuse_req_t req, int fd, struct fuse_bufvec *in_buf,
		off_t off, const struct exec_tag *tag)
{
	size_t size = fuse_buf_size(in_buf);
	struct exec_req *er = er_new_data(ex, req, fd, off, size);

	if (!er)
		return;
	/* The incoming buffer belongs to the session thread and is reused once we return:
	 * copy the data now (from memory or, with splice, from the pipe). */
	struct fuse_bufvec dst = FUSE_BUFVEC_INIT(size);
	dst.buf[0].mem = er->buf;
	ssize_t got = fuse_buf_copy(&dst, in_buf, 0);
	if (got < 0) {
		er_fail(ex, er, (int)-got);
		return;
	}
	fill_rq(er, tag, SCHED_OP_WRITE, tag->sync, (uint64_t)off, (uint64_t)got);
	submit(ex, er);
}

void exec_fsync(struct executor *ex, fuse_req_t req, int fd, bool datasync,
		const struct exec_tag *tag)
{
	struct exec_req *er = er_new(ex, req, fd);

	if (!er)
		return;
	fill_rq(er, tag, datasync ? SCHED_OP_FDATASYNC : SCHED_OP_FSYNC, true, 0, 0);
	submit(ex, er);
}

void exec_set_limits(struct executor *ex, const struct exec_limits *lim)
{
	pthread_mutex_lock(&ex->lock);
	ex->limits = *lim;
	pthread_mutex_unlock(&ex->lock);
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
	ex->limits = opts->limits;
	if (ex->limits.queue_limit == 0)
		ex->limits.queue_limit = EXEC_QUEUE_LIMIT_DEFAULT;
	if (ex->limits.queue_bytes == 0)
		ex->limits.queue_bytes = EXEC_QUEUE_BYTES_DEFAULT;
	ex->workers = calloc(opts->depth, sizeof(*ex->workers));
	if (!ex->workers) {
		e = -ENOMEM;
		goto out_free;
	}
	/* An emulated device sleeps per I/O: keep that off the FUSE session threads. */
	ex->inline_io = opts->device == NULL;
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
	pthread_mutex_init(&ex->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&ex->work, &ca);
	pthread_condattr_destroy(&ca);
	*err = 0;
	return ex;

out_free_dev:
	dev_destroy(ex->dev);
out_free_workers:
	free(ex->workers);
out_free:
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
	while (ex->free_list) {
		struct exec_req *er = ex->free_list;
		ex->free_list = er->next_free;
		free(er->buf);
		free(er);
	}
	sched_destroy(ex->sd);
	dev_destroy(ex->dev);
	free(ex->load);
	pthread_cond_destroy(&ex->work);
	pthread_mutex_destroy(&ex->lock);
	free(ex->workers);
	free(ex);
}
