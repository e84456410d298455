/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sched_micro - cost of one request through the scheduler core (enqueue + dispatch + complete)
 * with N busy queues spread over G groups.
 *
 * Every queue keeps two requests queued at all times: each dispatched request is completed at
 * once (simulated time advances by --step-us per request) and re-enqueued on its queue at a
 * non-contiguous offset (so it never merges). The request pool is allocated up front; the
 * measured loop does not allocate (new queues and groups are created during the warm-up pass).
 *
 *     sched_micro                      the matrix: queues 1, 64, 1024, 16384 x groups 1, 10, 1000
 *                                      (combinations with fewer queues than groups are skipped)
 *     sched_micro --queues 1024 --groups 10 [--reqs R] [--runs K] [--policy cfq|deadline|noop]
 *     sched_micro --rotational 1       the matrix on a rotational device (slice_idle 8: the
 *                                      16 ms slice floor keeps queue switches rare); default 0
 *                                      (slice_idle 0, IOPS mode: with many queues low_latency
 *                                      scales slices below one request, so the core switches
 *                                      queues every request or two; switches/1k shows it)
 *
 * Output, one line per combination: queues=N groups=G ns_per_req=X cpu_ns_per_req=C
 * switches_per_1k=S group_switches_per_1k=GS [dispatch_hash=H] (medians of --runs runs; X is
 * wall-clock time, C the thread's CPU time, which leaves out the time a loaded machine keeps
 * the benchmark off the CPU; S and GS = queue and group changes between consecutive
 * dispatches per 1000 requests). With --hash 1,
 * H = FNV-1a hash (over words) of the measured loop's (queue, offset, time) dispatch
 * sequence: identical across runs, and across builds that do not change the scheduler's
 * behaviour, for a cheap check that a layout change changed no decision at 16384 queues.
 * --trace N turns the decision trace on (a ring of N records) to measure what recording
 * costs; off by default, as in the daemon.
 * bench/sched_micro_callgrind.sh runs one combination under callgrind, counting only
 * measure_loop(), and prints instructions per request.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sched.h"

#define PER_QUEUE 2u	     /* requests kept queued per queue */
#define REQ_LEN (64u * 1024u) /* [bytes] */

static bool opt_hash;	   /* --hash 1: hash the dispatch sequence */
static int64_t opt_trace; /* --trace N: the decision trace on, N records (0: off) */

struct bench {
	struct sched *sd;
	struct sched_rq *pool;	/* nqueues * PER_QUEUE requests */
	uint32_t *group_of;	/* group id per queue */
	unsigned nqueues;
	sched_ns now;		/* [ns] simulated clock */
	sched_ns step;		/* [ns] per request */
	uint64_t switches;	/* dispatches from another queue than the previous one */
	uint64_t last_key;	/* queue of the previous dispatch */
	uint64_t group_switches; /* dispatches from another group than the previous one */
	uint32_t last_group;	/* group of the previous dispatch */
	bool hash_on;		/* --hash 1 */
	uint64_t hash;		/* FNV-1a of the dispatch sequence */
	uint64_t *next_off;	/* per queue [bytes] */
};

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* FNV-1a over 64-bit words (not bytes: cheap enough to leave the figures alone). */
static uint64_t fnv_add(uint64_t h, uint64_t v)
{
	return (h ^ v) * 0x100000001b3ull;
}

/* (Re)initialises rq for queue `key` of `group` at offset `off` and enqueues it. */
static int enqueue_at(struct bench *b, struct sched_rq *rq, uint64_t key, uint32_t group,
		      uint64_t off)
{
	memset(rq, 0, sizeof(*rq));
	rq->queue_key = key;
	rq->group = group;
	rq->ioclass = SCHED_CLASS_BE;
	rq->level = SCHED_LEVEL_NORM;
	rq->op = SCHED_OP_READ;
	rq->flags = SCHED_RQ_SYNC;
	rq->file = key;
	rq->offset = off;
	rq->len = REQ_LEN;
	return sched_enqueue(b->sd, rq, b->now);
}

/* Queue q's next request (setup). */
static int fill(struct bench *b, struct sched_rq *rq, unsigned q)
{
	uint64_t off = b->next_off[q];

	/* leave a gap: never contiguous with the previous request, so never merged */
	b->next_off[q] += 2 * REQ_LEN;
	return enqueue_at(b, rq, q + 1, b->group_of[q], off);
}

/*
 * Re-enqueues a completed request on its own queue, at the offset fill() would give next: a
 * queue's requests complete in offset order, so its PER_QUEUE - 1 others sit between. All of
 * it comes from the request, which is in cache: reading fill()'s per-queue arrays instead
 * cost the measured loop up to two misses of the harness's own per request at 16384 queues.
 */
static int refill(struct bench *b, struct sched_rq *rq)
{
	return enqueue_at(b, rq, rq->queue_key, rq->group,
			  rq->offset + PER_QUEUE * 2 * REQ_LEN);
}

static int bench_setup(struct bench *b, enum sched_policy policy, bool rotational,
		       unsigned nqueues, unsigned ngroups, sched_ns step)
{
	uint32_t *gids = NULL;
	int ret = -ENOMEM;

	memset(b, 0, sizeof(*b));
	b->nqueues = nqueues;
	b->step = step;
	b->sd = sched_create(policy, rotational);
	if (b->sd && opt_trace && sched_trace_resize(b->sd, opt_trace) != 0)
		goto out;
	b->pool = calloc((size_t)nqueues * PER_QUEUE, sizeof(*b->pool));
	b->group_of = calloc(nqueues, sizeof(*b->group_of));
	b->next_off = calloc(nqueues, sizeof(*b->next_off));
	gids = calloc(ngroups, sizeof(*gids));
	if (b->sd == NULL || b->pool == NULL || b->group_of == NULL || b->next_off == NULL ||
	    gids == NULL)
		goto out;
	gids[0] = SCHED_ROOT_GROUP;
	for (unsigned g = 1; g < ngroups; g++) {
		/* weights 100..1000, deterministic spread */
		uint32_t w = 100 + (uint32_t)((g * 37u) % 10u) * 100u;

		ret = sched_group_create(b->sd, SCHED_ROOT_GROUP, w, w, &gids[g]);
		if (ret != 0)
			goto out;
	}
	for (unsigned q = 0; q < nqueues; q++)
		b->group_of[q] = gids[q % ngroups];
	for (unsigned i = 0; i < PER_QUEUE; i++)
		for (unsigned q = 0; q < nqueues; q++) {
			ret = fill(b, &b->pool[(size_t)q * PER_QUEUE + i], q);
			if (ret != 0)
				goto out;
		}
	ret = 0;
out:
	free(gids);
	return ret;
}

static void bench_teardown(struct bench *b)
{
	if (b->sd != NULL && b->pool != NULL) {
		for (size_t i = 0; i < (size_t)b->nqueues * PER_QUEUE; i++)
			(void)sched_cancel(b->sd, &b->pool[i], b->now);
	}
	if (b->sd != NULL)
		sched_destroy(b->sd);
	free(b->pool);
	free(b->group_of);
	free(b->next_off);
}

/* Runs n requests through the core. Returns how many completed (n unless the core stalls). */
static uint64_t step_loop(struct bench *b, uint64_t n)
{
	uint64_t done = 0;
	unsigned stalls = 0;

	while (done < n) {
		struct sched_rq *rq = sched_dispatch(b->sd, b->now);

		if (rq == NULL) {
			sched_ns t = sched_next_event(b->sd);

			if (t == SCHED_NS_NEVER || ++stalls > 1000000u)
				break;
			b->now = sched_time_after(t, b->now) ? t : b->now + 1000;
			continue;
		}
		b->switches += rq->queue_key != b->last_key;
		b->last_key = rq->queue_key;
		b->group_switches += rq->group != b->last_group;
		b->last_group = rq->group;
		if (b->hash_on)
			b->hash = fnv_add(fnv_add(fnv_add(b->hash, rq->queue_key), rq->offset),
					  b->now);
		b->now += b->step;
		sched_complete(b->sd, rq, 0, b->now);
		if (refill(b, rq) != 0)
			break;
		done++;
	}
	return done;
}

/* The measured part; a separate symbol so callgrind can count only it. */
__attribute__((noinline)) static uint64_t measure_loop(struct bench *b, uint64_t n)
{
	return step_loop(b, n);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int run_combo(enum sched_policy policy, bool rotational, unsigned nq, unsigned ng,
		     uint64_t reqs, unsigned runs, sched_ns step)
{
	double res[16], cpu[16], sw[16], gsw[16];
	uint64_t hash = 0;

	if (runs > 16)
		runs = 16;
	for (unsigned r = 0; r < runs; r++) {
		struct bench b;
		uint64_t t0, t1, c0, c1, done;
		int ret = bench_setup(&b, policy, rotational, nq, ng, step);

		if (ret != 0) {
			fprintf(stderr, "sched_micro: setup queues=%u groups=%u: %s\n", nq, ng,
				strerror(-ret));
			bench_teardown(&b);
			return 1;
		}
		/* warm-up: every queue dispatched at least once, structures at steady size */
		step_loop(&b, (uint64_t)nq * PER_QUEUE + 1000);
		b.switches = 0;
		b.group_switches = 0;
		b.hash_on = opt_hash;
		b.hash = 0xcbf29ce484222325ull;
		c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		t0 = clock_ns(CLOCK_MONOTONIC);
		done = measure_loop(&b, reqs);
		t1 = clock_ns(CLOCK_MONOTONIC);
		c1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		bench_teardown(&b);
		if (done != reqs) {
			fprintf(stderr, "sched_micro: core stalled after %llu of %llu requests\n",
				(unsigned long long)done, (unsigned long long)reqs);
			return 1;
		}
		res[r] = (double)(t1 - t0) / (double)reqs;
		cpu[r] = (double)(c1 - c0) / (double)reqs;
		sw[r] = 1000.0 * (double)b.switches / (double)reqs;
		gsw[r] = 1000.0 * (double)b.group_switches / (double)reqs;
		if (r > 0 && b.hash != hash) {
			fprintf(stderr, "sched_micro: queues=%u groups=%u: runs differ\n", nq, ng);
			return 1;
		}
		hash = b.hash;
	}
	qsort(res, runs, sizeof(res[0]), cmp_double);
	qsort(cpu, runs, sizeof(cpu[0]), cmp_double);
	qsort(sw, runs, sizeof(sw[0]), cmp_double);
	qsort(gsw, runs, sizeof(gsw[0]), cmp_double);
	printf("queues=%u groups=%u ns_per_req=%.1f cpu_ns_per_req=%.1f switches_per_1k=%.1f "
	       "group_switches_per_1k=%.1f",
	       nq, ng, res[runs / 2], cpu[runs / 2], sw[runs / 2], gsw[runs / 2]);
	if (opt_hash)
		printf(" dispatch_hash=%016llx", (unsigned long long)hash);
	printf("\n");
	fflush(stdout);
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: sched_micro [--queues N --groups G] [--reqs R] [--runs K]\n"
			"                   [--policy cfq|deadline|noop] [--step-us U] [--rotational 0|1]\n"
			"                   [--hash 0|1] [--trace RECORDS]\n");
}

int main(int argc, char **argv)
{
	static const unsigned queues[] = {1, 64, 1024, 16384};
	static const unsigned groups[] = {1, 10, 1000};
	enum sched_policy policy = SCHED_POLICY_CFQ;
	unsigned nq = 0, ng = 0, runs = 5;
	uint64_t reqs = 200000;
	sched_ns step = 20 * SCHED_NS_PER_US;
	bool rotational = false;
	int ret = 0;

	/* every option takes a value: step over both */
	for (int i = 1; i < argc; i += 2) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (v == NULL) {
			usage();
			return 2;
		}
		if (strcmp(a, "--queues") == 0)
			nq = (unsigned)strtoul(v, NULL, 10);
		else if (strcmp(a, "--groups") == 0)
			ng = (unsigned)strtoul(v, NULL, 10);
		else if (strcmp(a, "--reqs") == 0)
			reqs = strtoull(v, NULL, 10);
		else if (strcmp(a, "--runs") == 0)
			runs = (unsigned)strtoul(v, NULL, 10);
		else if (strcmp(a, "--rotational") == 0)
			rotational = strtoul(v, NULL, 10) != 0;
		else if (strcmp(a, "--hash") == 0)
			opt_hash = strtoul(v, NULL, 10) != 0;
		else if (strcmp(a, "--trace") == 0)
			opt_trace = strtoll(v, NULL, 10);
		else if (strcmp(a, "--step-us") == 0)
			step = strtoull(v, NULL, 10) * SCHED_NS_PER_US;
		else if (strcmp(a, "--policy") == 0) {
			if (sched_policy_parse(v, &policy) != 0) {
				usage();
				return 2;
			}
		} else {
			usage();
			return 2;
		}
	}
	if (runs == 0 || reqs == 0 || (nq == 0) != (ng == 0)) {
		usage();
		return 2;
	}
	if (nq != 0)
		return run_combo(policy, rotational, nq, ng, reqs, runs, step);
	for (size_t i = 0; i < sizeof(queues) / sizeof(queues[0]); i++)
		for (size_t j = 0; j < sizeof(groups) / sizeof(groups[0]); j++)
			if (queues[i] >= groups[j])
				ret |= run_combo(policy, rotational, queues[i], groups[j], reqs,
						 runs, step);
	return ret;
}
