/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sim.c - deterministic discrete-event simulation of the scheduler core over the device model
 * (see sim.h). Pure: simulated time only.
 */
#include "sim.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KIB 1024ull
#define GIB (1024ull * 1024ull * KIB)

/* consecutive "dispatch NULL but next event <= now" steps before we call it a livelock */
#define SIM_MAX_STALLS 100000u

#define SIM_REQ_MAGIC 0x51a4e0c5u

enum ev_type {
	EV_WAKE = 0,  /* a process may issue (start, after think time) */
	EV_DONE = 1,  /* the device completed an I/O (req = chain head) */
	EV_TIMER = 2, /* sched_next_event() reached */
};

/* Heap entries ordered by (t, seq): seq makes ties deterministic (libuv start_id). */
struct sim_event {
	sched_ns t;		/* [ns] when */
	uint64_t seq;		/* push order */
	uint32_t type;		/* enum ev_type */
	uint32_t proc;		/* EV_WAKE: process index */
	struct sim_req *req;	/* EV_DONE: chain head */
};

enum req_state { RQ_FREE = 0, RQ_QUEUED = 1, RQ_DISPATCHED = 2 };

/* Where a committer (SIM_COMMITTER) is in its transaction. */
enum commit_phase {
	CM_READS = 0,	/* reading heap pages (or between transactions) */
	CM_WAITING = 1, /* on the commit lock's FIFO */
	CM_HANDED = 2,	/* owns the lock, runs after the hand-off delay */
	CM_WAL = 3,	/* owns the lock, its WAL write is outstanding */
	CM_SYNC = 4,	/* owns the lock, its WAL fdatasync is outstanding */
};

/* One simulated request. Invariant: state == RQ_FREE <=> not known to the scheduler. */
struct sim_req {
	struct sched_rq rq;	/* handed to the scheduler; container_of back */
	struct sim_proc *p;	/* owner */
	sched_ns dev_start;	/* [ns] head started serving it (chain head only) */
	uint32_t magic;		/* SIM_REQ_MAGIC: catches foreign pointers from dispatch */
	uint8_t state;		/* enum req_state */
};

/*
 * A workload generator. Invariants: outstanding == number of reqs not RQ_FREE; at most one
 * EV_WAKE pending (wake_pending).
 */
struct sim_proc {
	struct sim_proc_spec spec;  /* validated copy */
	unsigned idx;		    /* index in sim->procs */
	struct sim_req *reqs;	    /* pool of nreqs */
	unsigned nreqs;		    /* [count] == spec.depth */
	unsigned outstanding;	    /* [count] enqueued, not completed */
	uint64_t rng;		    /* splitmix64 state */
	uint64_t next_off;	    /* [bytes] next sequential offset */
	uint64_t cur_off[SIM_MAX_STREAMS]; /* [bytes] streams > 1: next offset per cursor */
	uint64_t chunk_done[SIM_MAX_STREAMS]; /* [bytes] of the cursor's chunk (streams > 1),
						 of the current run ([0], with skip) */
	unsigned cursor;	    /* streams > 1: the cursor that issues next */
	uint64_t cur_file;	    /* file of the current unit (fsync writer) */
	bool wal_synced;	    /* committer: has fdatasynced its WAL handle once */
	unsigned unit_left;	    /* [count] requests of the current burst/file not yet issued */
	bool in_unit;		    /* interactive/fsync: a burst/file is in progress */
	bool fsync_sent;	    /* fsync writer: the file's fsync is outstanding */
	bool wake_pending;	    /* an EV_WAKE is in the heap */
	uint8_t commit;		    /* committer: enum commit_phase */
	struct sim_proc *lock_next; /* committer: next waiter on the commit lock's FIFO */
	sched_ns unit_start;	    /* [ns] when the current burst/file began */
	uint64_t files;		    /* [count] files started (fsync writer) */
	struct sim_proc_stats st;   /* results */
};

struct sim_group_slot {
	bool used;		    /* some process belongs to the group */
	struct sim_group_stats st;  /* results */
};

/*
 * Invariants: dev_inflight <= issue_depth; every EV_DONE in the heap holds a chain head in state
 * RQ_DISPATCHED; now never decreases. Commit lock: lock_first == NULL <=> lock_last == NULL;
 * the waiters (lock_first .. lock_last through lock_next) are in CM_WAITING, lock_owner (if
 * any) in CM_HANDED, CM_WAL or CM_SYNC; a waiter implies an owner.
 */
struct sim {
	struct sim_config cfg;	    /* copy */
	struct sched *sd;	    /* owned */
	struct dev_model *dm;	    /* owned */
	unsigned depth;		    /* [count] dev_depth(dm): heads, for utilisation */
	unsigned issue_depth;	    /* [count] I/Os kept on the device (cfg.queue_depth or depth) */
	unsigned dev_inflight;	    /* [count] I/Os on the device */
	sched_ns now;		    /* [ns] simulated time */
	struct sim_event *heap;	    /* min-heap by (t, seq) */
	size_t nheap, heap_cap;	    /* [count] */
	uint64_t ev_seq;	    /* next sequence number */
	sched_ns timer_pending;	    /* [ns] earliest EV_TIMER in the heap, NEVER if none known */
	unsigned stalls;	    /* [count] consecutive timer stalls */
	struct sim_proc **procs;    /* nprocs */
	unsigned nprocs;	    /* [count] */
	struct sim_group_slot *groups; /* indexed by group id, ngroups slots */
	uint32_t ngroups;	    /* [count] */
	uint64_t outstanding;	    /* [count] requests enqueued, not completed (all procs) */
	double q_area;		    /* [request*ns] integral of outstanding over time */
	uint64_t last_key;	    /* queue_key of the previous dispatch */
	struct sim_proc *lock_owner; /* committer holding the commit lock, or NULL */
	struct sim_proc *lock_first; /* oldest waiter for it, or NULL */
	struct sim_proc *lock_last;  /* newest waiter, or NULL */
	uint64_t wal_off;	    /* [bytes] end of the WAL: the next commit's write offset */
	bool have_last_key;	    /* a dispatch happened */
	struct sim_totals tot;	    /* running totals (derived fields filled on read) */
	sched_ns busy;		    /* [ns] device busy time, summed over heads */
	int err;		    /* sticky error of a run */
	char errbuf[256];	    /* message for err */
};

/* ---------------------------------------------------------------------------------------- */
/* PRNG and hashing */

static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [0, n) (n > 0); the modulo bias is < n / 2^64, irrelevant here. */
static uint64_t rng_below(uint64_t *state, uint64_t n)
{
	return splitmix64(state) % n;
}

#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

static uint64_t fnv_u64(uint64_t h, uint64_t v)
{
	for (int i = 0; i < 8; i++) {
		h ^= (v >> (8 * i)) & 0xff;
		h *= FNV_PRIME;
	}
	return h;
}

/* ---------------------------------------------------------------------------------------- */
/* Histogram */

static unsigned hist_index(sched_ns v)
{
	unsigned msb;

	if (v < SIM_HIST_SUB)
		return (unsigned)v;
	msb = 63u - (unsigned)__builtin_clzll(v);
	/* msb >= 3: 8 sub-buckets from the 3 bits below the top one */
	return (msb - 2u) * SIM_HIST_SUB + (unsigned)((v >> (msb - 3u)) & (SIM_HIST_SUB - 1u));
}

/* Upper bound (exclusive) of bucket i [ns]. */
static sched_ns hist_upper(unsigned i)
{
	unsigned msb, sub;

	if (i < SIM_HIST_SUB)
		return (sched_ns)i + 1;
	msb = i / SIM_HIST_SUB + 2u;
	sub = i % SIM_HIST_SUB;
	if (msb >= 63u && sub == SIM_HIST_SUB - 1u)
		return SCHED_NS_NEVER;
	return ((sched_ns)(SIM_HIST_SUB + sub + 1u)) << (msb - 3u);
}

_Static_assert(SIM_HIST_BUCKETS >= (63u - 2u) * 8u + 8u, "histogram covers 64-bit values");

void sim_hist_add(struct sim_hist *h, sched_ns v)
{
	h->count[hist_index(v)]++;
	h->total++;
	h->sum += v;
	if (v > h->max)
		h->max = v;
}

sched_ns sim_hist_percentile(const struct sim_hist *h, unsigned permille)
{
	uint64_t want, seen = 0;

	if (h->total == 0)
		return 0;
	if (permille > 1000)
		permille = 1000;
	/* smallest bucket holding the ceil(total * permille / 1000)-th sample */
	want = (h->total * permille + 999) / 1000;
	if (want == 0)
		want = 1;
	for (unsigned i = 0; i < SIM_HIST_BUCKETS; i++) {
		seen += h->count[i];
		if (seen >= want) {
			sched_ns up = hist_upper(i);
			return up > h->max ? h->max : up;
		}
	}
	return h->max;
}

sched_ns sim_hist_mean(const struct sim_hist *h)
{
	return h->total ? h->sum / h->total : 0;
}

double sim_jain(const double *x, size_t n)
{
	double sum = 0, sq = 0;

	for (size_t i = 0; i < n; i++) {
		sum += x[i];
		sq += x[i] * x[i];
	}
	if (n == 0 || sq == 0)
		return 1.0;
	return sum * sum / ((double)n * sq);
}

/* ---------------------------------------------------------------------------------------- */
/* Event heap */

static bool ev_before(const struct sim_event *a, const struct sim_event *b)
{
	if (a->t != b->t)
		return sched_time_after(b->t, a->t);
	return a->seq < b->seq;
}

static int heap_push(struct sim *s, sched_ns t, uint32_t type, uint32_t proc, struct sim_req *req)
{
	struct sim_event ev = {.t = t, .seq = s->ev_seq++, .type = type, .proc = proc, .req = req};
	size_t i;

	if (s->nheap == s->heap_cap) {
		size_t cap = s->heap_cap ? 2 * s->heap_cap : 64;
		struct sim_event *nh = realloc(s->heap, cap * sizeof(*nh));

		if (nh == NULL)
			return -ENOMEM;
		s->heap = nh;
		s->heap_cap = cap;
	}
	i = s->nheap++;
	while (i > 0) {
		size_t parent = (i - 1) / 2;

		if (!ev_before(&ev, &s->heap[parent]))
			break;
		s->heap[i] = s->heap[parent];
		i = parent;
	}
	s->heap[i] = ev;
	return 0;
}

static struct sim_event heap_pop(struct sim *s)
{
	struct sim_event top = s->heap[0];
	struct sim_event last = s->heap[--s->nheap];
	size_t i = 0;

	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m;

		if (l >= s->nheap)
			break;
		m = (r < s->nheap && ev_before(&s->heap[r], &s->heap[l])) ? r : l;
		if (!ev_before(&s->heap[m], &last))
			break;
		s->heap[i] = s->heap[m];
		i = m;
	}
	if (s->nheap > 0)
		s->heap[i] = last;
	return top;
}

/* ---------------------------------------------------------------------------------------- */
/* Errors */

__attribute__((format(printf, 3, 4))) static int fail(struct sim *s, int err, const char *fmt,
						      ...)
{
	va_list ap;

	if (s->err == 0) {
		s->err = err;
		va_start(ap, fmt);
		vsnprintf(s->errbuf, sizeof(s->errbuf), fmt, ap);
		va_end(ap);
	}
	return s->err;
}

const char *sim_error(const struct sim *s)
{
	return s->errbuf;
}

/* ---------------------------------------------------------------------------------------- */
/* Configuration */

void sim_config_default(struct sim_config *cfg, enum sched_policy policy, const char *dev_name,
			uint64_t seed)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->policy = policy;
	if (dev_name == NULL || dev_params_parse(dev_name, &cfg->dev) != 0)
		dev_params_default(DEV_HDD, &cfg->dev);
	cfg->seed = seed;
	cfg->check = true;
	cfg->max_events = 0;
	cfg->queue_depth = 0;
}

void sim_proc_default(enum sim_kind kind, struct sim_proc_spec *spec)
{
	memset(spec, 0, sizeof(*spec));
	spec->kind = kind;
	spec->group = SCHED_ROOT_GROUP;
	spec->ioclass = SCHED_CLASS_BE;
	spec->level = SCHED_LEVEL_NORM;
	spec->file_size = 1 * GIB;
	spec->depth = 1;
	switch (kind) {
	case SIM_SEQ_READER:
		spec->req_size = 128 * KIB;
		break;
	case SIM_RAND_READER:
		spec->req_size = 4 * KIB;
		break;
	case SIM_BUF_WRITER:
		spec->req_size = 128 * KIB;
		spec->depth = 64;
		break;
	case SIM_FSYNC_WRITER:
		spec->req_size = 4 * KIB;
		spec->burst = 16;
		spec->depth = 16;
		break;
	case SIM_INTERACTIVE:
		spec->req_size = 64 * KIB;
		spec->burst = 8;
		spec->think = 100 * SCHED_NS_PER_MS;
		break;
	case SIM_COMMITTER:
		spec->req_size = 8 * KIB;
		spec->burst = 4;
		spec->handoff = 300 * SCHED_NS_PER_US;
		break;
	}
}

/* ---------------------------------------------------------------------------------------- */
/* Life cycle */

struct sim *sim_create(const struct sim_config *cfg)
{
	struct sim *s;

	if (cfg == NULL || cfg->policy >= SCHED_POLICY_COUNT || cfg->queue_depth > 4096)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return NULL;
	s->cfg = *cfg;
	s->dm = dev_create(&cfg->dev);
	if (s->dm == NULL)
		goto out_free;
	s->sd = sched_create(cfg->policy, dev_rotational(s->dm));
	if (s->sd == NULL)
		goto out_dev;
	s->depth = dev_depth(s->dm);
	s->issue_depth = cfg->queue_depth ? cfg->queue_depth : s->depth;
	s->timer_pending = SCHED_NS_NEVER;
	s->tot.hash = FNV_OFFSET;
	return s;

out_dev:
	dev_destroy(s->dm);
out_free:
	free(s);
	return NULL;
}

struct sched *sim_sched(struct sim *s)
{
	return s->sd;
}

int sim_set_tunable(struct sim *s, const char *name, int64_t value)
{
	return sched_tunable_set(s->sd, name, value);
}

static int ensure_group_slot(struct sim *s, uint32_t id)
{
	struct sim_group_slot *ng;
	uint32_t n;

	if (id < s->ngroups)
		return 0;
	n = id + 1 > 2 * s->ngroups ? id + 1 : 2 * s->ngroups;
	ng = realloc(s->groups, n * sizeof(*ng));
	if (ng == NULL)
		return -ENOMEM;
	memset(ng + s->ngroups, 0, (n - s->ngroups) * sizeof(*ng));
	s->groups = ng;
	s->ngroups = n;
	return 0;
}

int sim_add_group(struct sim *s, uint32_t parent, uint32_t weight, uint32_t leaf_weight,
		  uint32_t *id)
{
	return sched_group_create(s->sd, parent, weight, leaf_weight, id);
}

static int spec_validate(const struct sim_proc_spec *sp)
{
	if ((unsigned)sp->kind > SIM_COMMITTER)
		return -EINVAL;
	if (sp->ioclass < SCHED_CLASS_RT || sp->ioclass > SCHED_CLASS_IDLE ||
	    sp->level >= SCHED_LEVELS)
		return -EINVAL;
	if (sp->depth < 1 || sp->depth > 4096 || sp->req_size == 0 ||
	    sp->file_size < sp->req_size)
		return -EINVAL;
	if ((sp->kind == SIM_INTERACTIVE || sp->kind == SIM_FSYNC_WRITER) && sp->burst == 0)
		return -EINVAL;
	if (sp->kind == SIM_INTERACTIVE &&
	    (uint64_t)sp->burst * sp->req_size > sp->file_size)
		return -EINVAL;
	if (sp->offset > sp->file_size - sp->req_size || sp->streams > SIM_MAX_STREAMS)
		return -EINVAL;
	if (sp->streams > 1 && (sp->chunk == 0 || sp->chunk % sp->req_size != 0 ||
				sp->offset + (uint64_t)sp->streams * sp->chunk > sp->file_size))
		return -EINVAL;
	if (sp->skip && (sp->streams > 1 || sp->chunk == 0 || sp->chunk % sp->req_size != 0 ||
			 sp->skip > sp->file_size))
		return -EINVAL;
	return 0;
}

int sim_add_proc(struct sim *s, const struct sim_proc_spec *spec, unsigned *idx)
{
	struct sim_proc *p, **np;
	int ret;

	ret = spec_validate(spec);
	if (ret != 0)
		return ret;
	ret = ensure_group_slot(s, spec->group);
	if (ret != 0)
		return ret;
	np = realloc(s->procs, (s->nprocs + 1) * sizeof(*np));
	if (np == NULL)
		return -ENOMEM;
	s->procs = np;
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return -ENOMEM;
	p->spec = *spec;
	p->idx = s->nprocs;
	if (p->spec.queue_key == 0)
		p->spec.queue_key = 1000 + p->idx;
	if (p->spec.file == 0)
		p->spec.file = 1 + p->idx;
	if (p->spec.ioclass == SCHED_CLASS_IDLE)
		p->spec.level = SCHED_LEVELS - 1;
	p->nreqs = p->spec.depth;
	p->reqs = calloc(p->nreqs, sizeof(*p->reqs));
	if (p->reqs == NULL)
		goto out_free;
	for (unsigned i = 0; i < p->nreqs; i++) {
		p->reqs[i].p = p;
		p->reqs[i].magic = SIM_REQ_MAGIC;
	}
	/* independent per-process stream: seed mixed with the index */
	p->rng = s->cfg.seed ^ (0xd1b54a32d192ed03ull * (p->idx + 1));
	splitmix64(&p->rng);
	p->cur_file = p->spec.file;
	p->next_off = p->spec.offset;
	for (unsigned i = 0; i < p->spec.streams && i < SIM_MAX_STREAMS; i++)
		p->cur_off[i] = p->spec.offset + i * p->spec.chunk;
	ret = heap_push(s, sched_time_after(p->spec.start, s->now) ? p->spec.start : s->now,
			EV_WAKE, p->idx, NULL);
	if (ret != 0)
		goto out_reqs;
	p->wake_pending = true;
	s->groups[spec->group].used = true;
	s->procs[s->nprocs++] = p;
	if (idx != NULL)
		*idx = p->idx;
	return 0;

out_reqs:
	free(p->reqs);
out_free:
	free(p);
	return -ENOMEM;
}

int sim_proc_stop(struct sim *s, unsigned idx, sched_ns when)
{
	if (idx >= s->nprocs)
		return -EINVAL;
	if (sched_time_after(s->now, when))
		when = s->now;
	s->procs[idx]->spec.stop = when ? when : 1;
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Processes */

static bool proc_stopped(const struct sim_proc *p, sched_ns now)
{
	return p->spec.stop != 0 && !sched_time_after(p->spec.stop, now);
}

static struct sim_req *proc_get_req(struct sim_proc *p)
{
	for (unsigned i = 0; i < p->nreqs; i++)
		if (p->reqs[i].state == RQ_FREE)
			return &p->reqs[i];
	return NULL;
}

/* A writer's writes: sync with sync_writes (O_SYNC/O_DIRECT-like), else async writeback with
 * nobody waiting for each request (the writers keep many in flight). */
static uint8_t writer_flags(const struct sim_proc_spec *sp)
{
	return sp->sync_writes ? SCHED_RQ_SYNC : 0;
}

static int proc_issue(struct sim *s, struct sim_proc *p, uint8_t op, uint8_t flags,
		      uint64_t file, uint64_t offset, uint64_t len)
{
	struct sim_req *r = proc_get_req(p);
	struct sched_rq *rq;
	int ret;

	if (r == NULL)
		return fail(s, -EFAULT, "proc %u: request pool exhausted", p->idx);
	rq = &r->rq;
	memset(rq, 0, sizeof(*rq));
	rq->queue_key = p->spec.queue_key;
	rq->group = p->spec.group;
	rq->ioclass = p->spec.ioclass;
	rq->level = p->spec.level;
	rq->op = op;
	rq->flags = flags;
	/* as the daemon sends them (fs/rqmap.h): an fsync is the kernel's REQ_SYNC writeback
	 * without REQ_IDLE */
	if (op == SCHED_OP_FSYNC || op == SCHED_OP_FDATASYNC)
		rq->flags |= SCHED_RQ_NOIDLE;
	rq->file = file;
	rq->offset = offset;
	rq->len = len;
	ret = sched_enqueue(s->sd, rq, s->now);
	if (ret != 0)
		return fail(s, ret, "proc %u: sched_enqueue failed: %d", p->idx, ret);
	r->state = RQ_QUEUED;
	p->outstanding++;
	p->st.issued++;
	s->outstanding++;
	return 0;
}

/* Next offset of a multi-cursor stream (spec.streams > 1): cursors take turns. */
static uint64_t multi_next(struct sim_proc *p)
{
	const struct sim_proc_spec *sp = &p->spec;
	unsigned c = p->cursor;
	uint64_t off = p->cur_off[c];

	p->cursor = (c + 1) % sp->streams;
	if (p->chunk_done[c] == sp->chunk) {
		off += (uint64_t)(sp->streams - 1) * sp->chunk;
		p->chunk_done[c] = 0;
	}
	if (off + sp->req_size > sp->file_size) {
		off = sp->offset + c * sp->chunk;
		p->chunk_done[c] = 0;
	}
	p->cur_off[c] = off + sp->req_size;
	p->chunk_done[c] += sp->req_size;
	return off;
}

/* Next offset of a sequential stream, wrapping at file_size (back to spec.offset). */
static uint64_t seq_next(struct sim_proc *p)
{
	uint64_t off = p->next_off;

	if (p->spec.streams > 1)
		return multi_next(p);
	if (p->spec.skip && p->chunk_done[0] == p->spec.chunk) {
		off += p->spec.skip;
		p->chunk_done[0] = 0;
	}
	if (off + p->spec.req_size > p->spec.file_size) {
		off = p->spec.offset;
		p->chunk_done[0] = 0;
	}
	p->next_off = off + p->spec.req_size;
	p->chunk_done[0] += p->spec.req_size;
	return off;
}

static uint64_t rand_offset(struct sim_proc *p, uint64_t span)
{
	uint64_t slots = (p->spec.file_size - span) / p->spec.req_size + 1;

	return rng_below(&p->rng, slots) * p->spec.req_size;
}

static int schedule_wake(struct sim *s, struct sim_proc *p, sched_ns t)
{
	int ret;

	if (p->wake_pending)
		return 0;
	ret = heap_push(s, t, EV_WAKE, p->idx, NULL);
	if (ret != 0)
		return fail(s, ret, "out of memory");
	p->wake_pending = true;
	return 0;
}

/* Starts a burst (interactive), a file (fsync writer) or a transaction (committer). */
static void unit_begin(struct sim_proc *p, sched_ns now)
{
	p->in_unit = true;
	p->fsync_sent = false;
	p->unit_left = p->spec.burst;
	p->unit_start = now;
	if (p->spec.kind == SIM_INTERACTIVE) {
		p->next_off = rand_offset(p, (uint64_t)p->spec.burst * p->spec.req_size);
	} else if (p->spec.kind == SIM_COMMITTER) {
		p->commit = CM_READS;
	} else {
		/* a new file per unit; the high half keeps ids distinct from other procs' files */
		p->cur_file = p->spec.file + (p->files << 32);
		p->files++;
		p->next_off = 0;
	}
}

/* ---------------------------------------------------------------------------------------- */
/* The commit lock (SIM_COMMITTER) */

/* p owns the lock: it appends its commit record to the WAL. */
static int commit_write(struct sim *s, struct sim_proc *p)
{
	uint64_t off = s->wal_off;

	s->wal_off += p->spec.req_size;
	p->commit = CM_WAL;
	/* as the daemon flags a write-through write (fs/rqmap.h): its caller waits for it, and
	 * once the handle has been fsynced it is a journal's write, sync no-idle */
	return proc_issue(s, p, SCHED_OP_WRITE,
			  p->wal_synced ? SCHED_RQ_SYNC | SCHED_RQ_NOIDLE : SCHED_RQ_CALLER,
			  SIM_WAL_FILE, off, p->spec.req_size);
}

/* p has read its pages: it takes the lock and writes, or waits at the end of the FIFO. */
static int lock_acquire(struct sim *s, struct sim_proc *p)
{
	if (s->lock_owner == NULL) {
		s->lock_owner = p;
		return commit_write(s, p);
	}
	p->commit = CM_WAITING;
	p->lock_next = NULL;
	if (s->lock_last != NULL)
		s->lock_last->lock_next = p;
	else
		s->lock_first = p;
	s->lock_last = p;
	return 0;
}

/* The owner p lets go: the oldest waiter owns the lock from now on and runs its own handoff
 * later (as a woken process is scheduled), so nobody takes the lock in between. */
static int lock_release(struct sim *s, struct sim_proc *p)
{
	struct sim_proc *w = s->lock_first;

	if (s->lock_owner != p)
		return fail(s, -EFAULT, "proc %u releases a commit lock it does not hold", p->idx);
	p->commit = CM_READS;
	s->lock_owner = w;
	if (w == NULL)
		return 0;
	s->lock_first = w->lock_next;
	if (s->lock_first == NULL)
		s->lock_last = NULL;
	w->lock_next = NULL;
	w->commit = CM_HANDED;
	if (w->wake_pending) /* a waiter issues nothing and waits for nothing else */
		return fail(s, -EFAULT, "proc %u: waiting for the commit lock with a wake-up set",
			    w->idx);
	return schedule_wake(s, w, s->now + w->spec.handoff);
}

/* ---------------------------------------------------------------------------------------- */

/* Issues whatever the process may issue now. */
static int proc_fill(struct sim *s, struct sim_proc *p)
{
	const struct sim_proc_spec *sp = &p->spec;
	int ret = 0;

	if (proc_stopped(p, s->now)) {
		/* a stopped committer passes on the lock handed to it, or the others would wait
		 * for ever */
		if (sp->kind == SIM_COMMITTER && p->commit == CM_HANDED)
			return lock_release(s, p);
		return 0;
	}
	switch (sp->kind) {
	case SIM_SEQ_READER:
		while (ret == 0 && p->outstanding < sp->depth)
			ret = proc_issue(s, p, SCHED_OP_READ, SCHED_RQ_SYNC, sp->file, seq_next(p),
					 sp->req_size);
		break;
	case SIM_RAND_READER:
		while (ret == 0 && p->outstanding < sp->depth)
			ret = proc_issue(s, p, SCHED_OP_READ, SCHED_RQ_SYNC, sp->file,
					 rand_offset(p, sp->req_size), sp->req_size);
		break;
	case SIM_BUF_WRITER:
		while (ret == 0 && p->outstanding < sp->depth)
			ret = proc_issue(s, p, SCHED_OP_WRITE, writer_flags(sp), sp->file,
					 seq_next(p), sp->req_size);
		break;
	case SIM_INTERACTIVE:
		if (!p->in_unit)
			unit_begin(p, s->now);
		while (ret == 0 && p->unit_left > 0 && p->outstanding < sp->depth) {
			p->unit_left--;
			ret = proc_issue(s, p, SCHED_OP_READ, SCHED_RQ_SYNC, sp->file, p->next_off,
					 sp->req_size);
			p->next_off += sp->req_size;
		}
		break;
	case SIM_FSYNC_WRITER:
		if (!p->in_unit)
			unit_begin(p, s->now);
		while (ret == 0 && p->unit_left > 0 && p->outstanding < sp->depth) {
			p->unit_left--;
			ret = proc_issue(s, p, SCHED_OP_WRITE, writer_flags(sp), p->cur_file,
					 p->next_off, sp->req_size);
			p->next_off += sp->req_size;
		}
		if (ret == 0 && p->unit_left == 0 && p->outstanding == 0 && !p->fsync_sent) {
			p->fsync_sent = true;
			ret = proc_issue(s, p, SCHED_OP_FSYNC, SCHED_RQ_SYNC, p->cur_file, 0, 0);
		}
		break;
	case SIM_COMMITTER:
		if (p->commit == CM_HANDED)
			return commit_write(s, p);
		if (p->commit != CM_READS)
			break; /* waiting for the lock or for its WAL I/O */
		if (!p->in_unit)
			unit_begin(p, s->now);
		while (ret == 0 && p->unit_left > 0 && p->outstanding < sp->depth) {
			p->unit_left--;
			ret = proc_issue(s, p, SCHED_OP_READ, SCHED_RQ_SYNC, sp->file,
					 rand_offset(p, sp->req_size), sp->req_size);
		}
		if (ret == 0 && p->unit_left == 0 && p->outstanding == 0)
			ret = lock_acquire(s, p);
		break;
	}
	return ret;
}

/* p issues again after its think pause, or at once without one. */
static int think_then_fill(struct sim *s, struct sim_proc *p)
{
	if (p->spec.think != 0)
		return schedule_wake(s, p, s->now + p->spec.think);
	return proc_fill(s, p);
}

static void group_account(struct sim *s, const struct sim_proc *p, uint64_t bytes, sched_ns lat,
			  sched_ns dev_time)
{
	struct sim_group_stats *g = &s->groups[p->spec.group].st;

	g->bytes += bytes;
	g->ios++;
	g->dev_time += dev_time;
	sim_hist_add(&g->lat, lat);
}

/* One request of p finished (head or chain member); the process reacts. */
static int proc_complete(struct sim *s, struct sim_req *r, sched_ns dev_time)
{
	struct sim_proc *p = r->p;
	const struct sim_proc_spec *sp = &p->spec;
	sched_ns lat = s->now - r->rq.enqueue_time;
	uint64_t bytes = r->rq.len;
	int ret;

	r->state = RQ_FREE;
	p->outstanding--;
	s->outstanding--;
	p->st.bytes += bytes;
	p->st.ios++;
	p->st.dev_time += dev_time;
	sim_hist_add(&p->st.lat, lat);
	sim_hist_add(&p->st.wait, r->rq.dispatch_time - r->rq.enqueue_time);
	group_account(s, p, bytes, lat, dev_time);
	s->tot.bytes += bytes;
	s->tot.ios++;

	switch (sp->kind) {
	case SIM_SEQ_READER:
	case SIM_RAND_READER:
	case SIM_BUF_WRITER:
		return think_then_fill(s, p);
	case SIM_INTERACTIVE:
		if (p->unit_left > 0)
			return proc_fill(s, p);
		if (p->outstanding > 0)
			return 0;
		break;
	case SIM_FSYNC_WRITER:
		if (!p->fsync_sent)
			return proc_fill(s, p);
		break;
	case SIM_COMMITTER:
		if (p->commit == CM_READS)
			return proc_fill(s, p); /* the next read, or the lock */
		if (p->commit == CM_WAL) {
			/* stopped: the transaction is abandoned and the lock passed on */
			if (proc_stopped(p, s->now))
				return lock_release(s, p);
			p->commit = CM_SYNC;
			return proc_issue(s, p, SCHED_OP_FDATASYNC, SCHED_RQ_SYNC, SIM_WAL_FILE, 0, 0);
		}
		p->wal_synced = true;
		ret = lock_release(s, p); /* the WAL is durable: committed */
		if (ret != 0)
			return ret;
		break;
	}
	/* the burst / file / transaction is complete */
	sim_hist_add(&p->st.unit, s->now - p->unit_start);
	p->st.units++;
	p->in_unit = false;
	return think_then_fill(s, p);
}

/* ---------------------------------------------------------------------------------------- */
/* The loop */

static void advance(struct sim *s, sched_ns t)
{
	if (sched_time_after(t, s->now)) {
		s->q_area += (double)(t - s->now) * (double)s->outstanding;
		s->now = t;
	}
}

static struct sim_req *to_req(struct sched_rq *rq)
{
	return (struct sim_req *)((char *)rq - offsetof(struct sim_req, rq));
}

static int issue_to_device(struct sim *s, struct sched_rq *rq)
{
	struct sim_req *head = to_req(rq);
	uint64_t off = rq->offset, len = rq->len;
	unsigned n = 0;
	sched_ns done;
	int ret;

	for (struct sched_rq *m = rq; m != NULL; m = m->merge_next, n++) {
		struct sim_req *r = to_req(m);

		if (r->magic != SIM_REQ_MAGIC || r->state != RQ_QUEUED)
			return fail(s, -EFAULT, "dispatch returned a request that is not queued "
						"(key %llu off %llu)",
				    (unsigned long long)m->queue_key, (unsigned long long)m->offset);
		r->state = RQ_DISPATCHED;
		if (m->offset < off)
			off = m->offset;
		if (m != rq)
			len += m->len;
	}
	if (n != rq->nr_merged + 1u)
		return fail(s, -EFAULT, "merge chain has %u members, nr_merged says %u", n - 1,
			    rq->nr_merged);
	done = dev_issue(s->dm, rq->file, off, len, rq->op != SCHED_OP_READ, s->now);
	head->dev_start = dev_last_cost(s->dm)->start;
	s->busy += done - head->dev_start;
	s->dev_inflight++;
	s->tot.dispatches++;
	if (s->have_last_key && s->last_key != rq->queue_key)
		s->tot.switches++;
	s->last_key = rq->queue_key;
	s->have_last_key = true;
	s->tot.hash = fnv_u64(s->tot.hash, rq->queue_key);
	s->tot.hash = fnv_u64(s->tot.hash, rq->file);
	s->tot.hash = fnv_u64(s->tot.hash, off);
	s->tot.hash = fnv_u64(s->tot.hash, len);
	s->tot.hash = fnv_u64(s->tot.hash, s->now);
	ret = heap_push(s, done, EV_DONE, 0, head);
	if (ret != 0)
		return fail(s, ret, "out of memory");
	return 0;
}

/* Dispatches while the device has room. */
static int dispatch_fill(struct sim *s)
{
	while (s->dev_inflight < s->issue_depth) {
		struct sched_rq *rq = sched_dispatch(s->sd, s->now);
		int ret;

		if (rq == NULL)
			break;
		s->stalls = 0;
		ret = issue_to_device(s, rq);
		if (ret != 0)
			return ret;
	}
	return 0;
}

static int handle_done(struct sim *s, struct sim_req *head)
{
	struct sched_rq *m, *next;
	sched_ns dev_time = s->now - head->dev_start;
	int ret = 0;

	s->dev_inflight--;
	sched_complete(s->sd, &head->rq, 0, s->now);
	/* The freed slot is refilled before the process hears of its completion, as the
	 * daemon's worker (complete, dispatch, then reply) and the kernel (completion, queue
	 * run, then wake-up) do: a process that issues at once must not find the slot free. */
	ret = dispatch_fill(s);
	/* device time is attributed to the chain head's process (all members share one) */
	for (m = &head->rq; m != NULL && ret == 0; m = next) {
		next = m->merge_next;
		ret = proc_complete(s, to_req(m), m == &head->rq ? dev_time : 0);
	}
	return ret;
}

/* Dispatches while the device has room; then arms the scheduler's timer. */
static int dispatch_step(struct sim *s)
{
	sched_ns t;
	int ret;

	ret = dispatch_fill(s);
	if (ret != 0)
		return ret;
	if (s->dev_inflight >= s->issue_depth)
		return 0; /* the next completion dispatches */
	t = sched_next_event(s->sd);
	if (t == SCHED_NS_NEVER) {
		/* queued work, an idle device and no timer: nothing would ever dispatch it */
		if (s->dev_inflight == 0 && sched_nr_queued(s->sd) > 0)
			return fail(s, -EFAULT,
				    "scheduler hang at %llu ns: %zu queued, none in flight, "
				    "dispatch NULL and no next event",
				    (unsigned long long)s->now, sched_nr_queued(s->sd));
		return 0;
	}
	/* like the daemon's executor, wait for no future timer while nothing is queued: the
	 * core catches up at the next call (sched_next_event() in sched.h) */
	if (s->cfg.lazy_timers && sched_nr_queued(s->sd) == 0 && sched_time_after(t, s->now)) {
		s->tot.timers_withheld++;
		return 0;
	}
	if (!sched_time_after(t, s->now)) {
		/* it wants to be called now, but just said NULL: step 1 us to avoid spinning */
		s->tot.timer_stalls++;
		if (++s->stalls > SIM_MAX_STALLS)
			return fail(s, -ELOOP,
				    "scheduler livelock at %llu ns: dispatch NULL, next_event %llu",
				    (unsigned long long)s->now, (unsigned long long)t);
		t = s->now + SCHED_NS_PER_US;
	}
	if (s->timer_pending == SCHED_NS_NEVER || sched_time_after(s->timer_pending, t) ||
	    !sched_time_after(s->timer_pending, s->now)) {
		ret = heap_push(s, t, EV_TIMER, 0, NULL);
		if (ret != 0)
			return fail(s, ret, "out of memory");
		s->timer_pending = t;
	}
	return 0;
}

static int check_step(struct sim *s)
{
	char buf[200];

	if (!s->cfg.check)
		return 0;
	if (sched_check(s->sd, buf, sizeof(buf)) != 0)
		return fail(s, -EFAULT, "sched_check at %llu ns: %s", (unsigned long long)s->now,
			    buf);
	return 0;
}

int sim_run(struct sim *s, sched_ns until)
{
	int ret;

	if (s->err != 0)
		return s->err;
	/* a step at the start: tunables/groups may have changed since the last run */
	ret = dispatch_step(s);
	while (ret == 0 && s->nheap > 0 && !sched_time_after(s->heap[0].t, until)) {
		struct sim_event ev = heap_pop(s);

		advance(s, ev.t);
		s->tot.events++;
		if (s->cfg.max_events && s->tot.events > s->cfg.max_events) {
			ret = fail(s, -ELOOP, "more than %zu events", s->cfg.max_events);
			break;
		}
		switch (ev.type) {
		case EV_WAKE:
			s->procs[ev.proc]->wake_pending = false;
			ret = proc_fill(s, s->procs[ev.proc]);
			break;
		case EV_DONE:
			ret = handle_done(s, ev.req);
			break;
		case EV_TIMER:
			if (ev.t == s->timer_pending)
				s->timer_pending = SCHED_NS_NEVER;
			break;
		}
		if (ret == 0)
			ret = dispatch_step(s);
		if (ret == 0)
			ret = check_step(s);
	}
	if (ret == 0)
		advance(s, until);
	return ret;
}

/* ---------------------------------------------------------------------------------------- */
/* Results */

sched_ns sim_now(const struct sim *s)
{
	return s->now;
}

unsigned sim_nr_procs(const struct sim *s)
{
	return s->nprocs;
}

const struct sim_proc_stats *sim_proc_stats(const struct sim *s, unsigned idx)
{
	return idx < s->nprocs ? &s->procs[idx]->st : NULL;
}

int sim_group_stats(const struct sim *s, uint32_t group, struct sim_group_stats *out)
{
	if (group >= s->ngroups || !s->groups[group].used)
		return -EINVAL;
	*out = s->groups[group].st;
	return 0;
}

void sim_get_totals(const struct sim *s, struct sim_totals *out)
{
	sched_ns lat_sum = 0;
	uint64_t lat_n = 0;

	*out = s->tot;
	out->now = s->now;
	for (unsigned i = 0; i < s->nprocs; i++) {
		lat_sum += s->procs[i]->st.lat.sum;
		lat_n += s->procs[i]->st.lat.total;
	}
	if (s->now > 0) {
		out->throughput = (double)s->tot.bytes * 1e9 / (double)s->now;
		out->avgqu_sz = s->q_area / (double)s->now;
		out->util = (double)s->busy / ((double)s->now * (double)s->depth);
	}
	out->await_ms = lat_n ? (double)lat_sum / (double)lat_n / 1e6 : 0.0;
}

/* ---------------------------------------------------------------------------------------- */
/* Teardown */

void sim_destroy(struct sim *s)
{
	if (s == NULL)
		return;
	/* withdraw everything still queued; requests on the device complete below */
	for (unsigned i = 0; i < s->nprocs; i++) {
		struct sim_proc *p = s->procs[i];

		for (unsigned j = 0; j < p->nreqs; j++) {
			struct sim_req *r = &p->reqs[j];

			if (r->state == RQ_QUEUED && sched_cancel(s->sd, &r->rq, s->now) == 0)
				r->state = RQ_FREE;
		}
	}
	while (s->nheap > 0) {
		struct sim_event ev = heap_pop(s);

		if (ev.type != EV_DONE)
			continue;
		advance(s, ev.t);
		sched_complete(s->sd, &ev.req->rq, 0, s->now);
	}
	sched_destroy(s->sd);
	dev_destroy(s->dm);
	for (unsigned i = 0; i < s->nprocs; i++) {
		free(s->procs[i]->reqs);
		free(s->procs[i]);
	}
	free(s->procs);
	free(s->groups);
	free(s->heap);
	free(s);
}
