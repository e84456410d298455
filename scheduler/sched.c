/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sched.c - public entry points of the scheduler core: policy dispatch, the queue hash and its
 * recycling, groups, tunables, statistics and the latency histogram, request merging helpers,
 * live policy switching and the invariant checker's front end.
 *
 * Queues are found by (group, key, sync) in a chained hash with a fixed, seeded-free mixing
 * function; the hash is only ever used for lookups, never iterated to make a decision. A queue
 * that nothing holds any more is "released": it goes to the tail of an LRU free list but stays
 * hashed, so an io context that comes back soon finds its think-time and seek history (CFQ
 * keeps those in the io context, which outlives its requests). A new key recycles the oldest
 * released queue; memory is allocated only when no released queue exists.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_i.h"

#ifndef SCHED_PARANOID
#define SCHED_PARANOID 0 /* 1: assert sched_check() after every public call (debug builds) */
#endif

#if !defined(NDEBUG) && SCHED_PARANOID
static void paranoid_check(const struct sched *sd)
{
	char buf[256];
	int ret = sched_check(sd, buf, sizeof(buf));

	if (ret != 0)
		fprintf(stderr, "sched_check: %s\n", buf);
	assert(ret == 0);
}
#else
static void paranoid_check(const struct sched *sd)
{
	(void)sd;
}
#endif

#define MS ((int64_t)SCHED_NS_PER_MS)
#define KIB ((int64_t)1024)

/* ---------------------------------------------------------------------------------------- */
/* Tunables: defaults tables (sysfs names and units), each with a scale to internal units. */

static const struct sched_tunable_desc cfq_tunables[] = {
	[CFQ_T_QUANTUM] = { "quantum", "count", 1, 64, 8,
			    "per-queue cap on requests in flight (soft cap is half of it)" },
	[CFQ_T_FIFO_EXPIRE_SYNC] = { "fifo_expire_sync", "ms", 1, 60000, 125,
				     "deadline of a sync request, checked once per slice" },
	[CFQ_T_FIFO_EXPIRE_ASYNC] = { "fifo_expire_async", "ms", 1, 60000, 250,
				      "deadline of an async request, checked once per slice" },
	[CFQ_T_BACK_SEEK_MAX] = { "back_seek_max", "KiB", 0, 1048576, 16384,
				  "how far behind the head a request is still reachable" },
	[CFQ_T_BACK_SEEK_PENALTY] = { "back_seek_penalty", "count", 1, 1000, 2,
				      "cost multiplier of a backward seek" },
	/* slices and latencies are capped at 1 s so that products of two of them stay in u64 */
	[CFQ_T_SLICE_SYNC] = { "slice_sync", "ms", 1, 1000, 100,
			       "base slice of a sync queue, scaled by priority" },
	[CFQ_T_SLICE_ASYNC] = { "slice_async", "ms", 1, 1000, 40,
				"base slice of an async queue, scaled by priority" },
	[CFQ_T_SLICE_ASYNC_RQ] = { "slice_async_rq", "count", 1, 64, 2,
				   "async requests per slice: 2 * this * (8 - level)" },
	[CFQ_T_SLICE_IDLE] = { "slice_idle", "ms", 0, 1000, 8,
			       "idle wait for the next request of a sync queue; 0 = no idling" },
	[CFQ_T_GROUP_IDLE] = { "group_idle", "ms", 0, 1000, 8,
			       "idle wait on a group whose last queue emptied" },
	[CFQ_T_LOW_LATENCY] = { "low_latency", "bool", 0, 1, 1,
				"scale slices to target_latency and ramp async depth up" },
	[CFQ_T_TARGET_LATENCY] = { "target_latency", "ms", 1, 1000, 300,
				   "soft bound of one round over all busy queues" },
	[CFQ_T_GROUP_MODE] = { "group_mode", "mode", 0, 2, 0,
			       "group charging: 0 auto (iops if slice_idle=0 on deep device), "
			       "1 time, 2 iops" },
	[CFQ_T_MAX_MERGE] = { "max_merge_kb", "KiB", 0, 1048576, 512,
			      "largest merged request; 0 disables merging" },
	/* Axboe's 2009 elevator patchlet (seed 001); tested on LKML, never merged: off */
	[CFQ_T_NO_MERGE_BEHIND] = { "no_merge_behind", "bool", 0, 1, 0,
				    "refuse a back merge into a request with another queued "
				    "behind it in sort order" },
	[CFQ_T_MAX_COPY] = { "max_copy_kb", "KiB", 4, 65536, 1024,
			     "largest piece of a copy_file_range or fallocate request" },
	[CFQ_T_COUNT] = { NULL, NULL, 0, 0, 0, NULL },
};
static const int64_t cfq_scale[CFQ_T_COUNT] = {
	[CFQ_T_QUANTUM] = 1,	       [CFQ_T_FIFO_EXPIRE_SYNC] = MS, [CFQ_T_FIFO_EXPIRE_ASYNC] = MS,
	[CFQ_T_BACK_SEEK_MAX] = KIB,   [CFQ_T_BACK_SEEK_PENALTY] = 1, [CFQ_T_SLICE_SYNC] = MS,
	[CFQ_T_SLICE_ASYNC] = MS,      [CFQ_T_SLICE_ASYNC_RQ] = 1,    [CFQ_T_SLICE_IDLE] = MS,
	[CFQ_T_GROUP_IDLE] = MS,       [CFQ_T_LOW_LATENCY] = 1,	      [CFQ_T_TARGET_LATENCY] = MS,
	[CFQ_T_GROUP_MODE] = 1,	       [CFQ_T_MAX_MERGE] = KIB,
	[CFQ_T_NO_MERGE_BEHIND] = 1,    [CFQ_T_MAX_COPY] = KIB,
};

static const struct sched_tunable_desc dl_tunables[] = {
	[DL_T_READ_EXPIRE] = { "read_expire", "ms", 1, 60000, 500, "deadline of a read" },
	[DL_T_WRITE_EXPIRE] = { "write_expire", "ms", 1, 600000, 5000, "deadline of a write" },
	[DL_T_WRITES_STARVED] = { "writes_starved", "count", 0, 1000, 2,
				  "read batches allowed before a waiting write batch" },
	[DL_T_FRONT_MERGES] = { "front_merges", "bool", 0, 1, 1, "allow front merges" },
	[DL_T_FIFO_BATCH] = { "fifo_batch", "count", 1, 4096, 16,
			      "requests per offset-sorted batch" },
	[DL_T_MAX_MERGE] = { "max_merge_kb", "KiB", 0, 1048576, 512,
			     "largest merged request; 0 disables merging" },
	[DL_T_NO_MERGE_BEHIND] = { "no_merge_behind", "bool", 0, 1, 0,
				   "refuse a back merge into a request with another queued "
				   "behind it in sort order" },
	[DL_T_MAX_COPY] = { "max_copy_kb", "KiB", 4, 65536, 1024,
			     "largest piece of a copy_file_range or fallocate request" },
	[DL_T_COUNT] = { NULL, NULL, 0, 0, 0, NULL },
};
static const int64_t dl_scale[DL_T_COUNT] = {
	[DL_T_READ_EXPIRE] = MS,   [DL_T_WRITE_EXPIRE] = MS, [DL_T_WRITES_STARVED] = 1,
	[DL_T_FRONT_MERGES] = 1,   [DL_T_FIFO_BATCH] = 1,    [DL_T_MAX_MERGE] = KIB,
	[DL_T_NO_MERGE_BEHIND] = 1, [DL_T_MAX_COPY] = KIB,
};

static const struct sched_tunable_desc noop_tunables[] = {
	[NOOP_T_MAX_MERGE] = { "max_merge_kb", "KiB", 0, 1048576, 512,
			       "largest merged request; 0 disables merging" },
	[NOOP_T_MAX_COPY] = { "max_copy_kb", "KiB", 4, 65536, 1024,
			     "largest piece of a copy_file_range or fallocate request" },
	[NOOP_T_COUNT] = { NULL, NULL, 0, 0, 0, NULL },
};
static const int64_t noop_scale[NOOP_T_COUNT] = { [NOOP_T_MAX_MERGE] = KIB,
						     [NOOP_T_MAX_COPY] = KIB };

static const struct sched_tunable_desc *const tunable_tables[SCHED_POLICY_COUNT] = {
	[SCHED_POLICY_NOOP] = noop_tunables,
	[SCHED_POLICY_DEADLINE] = dl_tunables,
	[SCHED_POLICY_CFQ] = cfq_tunables,
};
static const int64_t *const scale_tables[SCHED_POLICY_COUNT] = {
	[SCHED_POLICY_NOOP] = noop_scale,
	[SCHED_POLICY_DEADLINE] = dl_scale,
	[SCHED_POLICY_CFQ] = cfq_scale,
};
static const struct sched_policy_ops *const ops_table[SCHED_POLICY_COUNT] = {
	[SCHED_POLICY_NOOP] = &sched__noop_ops,
	[SCHED_POLICY_DEADLINE] = &sched__deadline_ops,
	[SCHED_POLICY_CFQ] = &sched__cfq_ops,
};
static const char *const policy_names[SCHED_POLICY_COUNT] = {
	[SCHED_POLICY_NOOP] = "noop",
	[SCHED_POLICY_DEADLINE] = "deadline",
	[SCHED_POLICY_CFQ] = "cfq",
};

static bool policy_valid(enum sched_policy p)
{
	return (unsigned)p < SCHED_POLICY_COUNT;
}

const struct sched_tunable_desc *sched_tunables(enum sched_policy policy)
{
	if (!policy_valid(policy))
		return &noop_tunables[NOOP_T_COUNT];
	return tunable_tables[policy];
}

static int tunable_index(enum sched_policy policy, const char *name)
{
	const struct sched_tunable_desc *d;

	if (!policy_valid(policy) || !name)
		return -ENOENT;
	d = tunable_tables[policy];
	for (int i = 0; d[i].name; i++)
		if (strcmp(d[i].name, name) == 0)
			return i;
	return -ENOENT;
}

int sched_tunable_validate(enum sched_policy policy, const char *name, int64_t value)
{
	int i = tunable_index(policy, name);
	const struct sched_tunable_desc *d;

	if (i < 0)
		return i;
	d = &tunable_tables[policy][i];
	if (value < d->min || value > d->max)
		return -EINVAL;
	return 0;
}

int sched_tunable_set_in(struct sched *sd, enum sched_policy policy, const char *name,
			 int64_t value)
{
	int ret, i;

	if (!policy_valid(policy))
		return -EINVAL;
	ret = sched_tunable_validate(policy, name, value);
	if (ret != 0)
		return ret;
	i = tunable_index(policy, name);
	sd->tun[policy][i] = value * scale_tables[policy][i];
	paranoid_check(sd);
	return 0;
}

int sched_tunable_set(struct sched *sd, const char *name, int64_t value)
{
	return sched_tunable_set_in(sd, sd->policy, name, value);
}

int sched_tunable_get(const struct sched *sd, const char *name, int64_t *value)
{
	int i = tunable_index(sd->policy, name);

	if (i < 0)
		return i;
	*value = sd->tun[sd->policy][i] / scale_tables[sd->policy][i];
	return 0;
}

uint64_t sched_max_copy(const struct sched *sd)
{
	static const int idx[SCHED_POLICY_COUNT] = {
		[SCHED_POLICY_NOOP] = NOOP_T_MAX_COPY,
		[SCHED_POLICY_DEADLINE] = DL_T_MAX_COPY,
		[SCHED_POLICY_CFQ] = CFQ_T_MAX_COPY,
	};

	return (uint64_t)sd->tun[sd->policy][idx[sd->policy]];
}

static void tunables_defaults(struct sched *sd)
{
	for (int p = 0; p < SCHED_POLICY_COUNT; p++) {
		const struct sched_tunable_desc *d = tunable_tables[p];

		for (int i = 0; d[i].name; i++)
			sd->tun[p][i] = d[i].def * scale_tables[p][i];
	}
	/* Linux 4.2+: no idling (hence IOPS mode for groups) on non-rotational devices */
	if (!sd->rotational)
		sd->tun[SCHED_POLICY_CFQ][CFQ_T_SLICE_IDLE] = 0;
}

void sched_tunables_reset(struct sched *sd)
{
	tunables_defaults(sd);
	paranoid_check(sd);
}

/* ---------------------------------------------------------------------------------------- */
/* Policy names */

enum sched_policy sched_policy(const struct sched *sd)
{
	return sd->policy;
}

const char *sched_policy_name(enum sched_policy policy)
{
	return policy_valid(policy) ? policy_names[policy] : "unknown";
}

int sched_policy_parse(const char *name, enum sched_policy *out)
{
	if (!name)
		return -EINVAL;
	for (int p = 0; p < SCHED_POLICY_COUNT; p++) {
		if (strcmp(name, policy_names[p]) == 0) {
			*out = (enum sched_policy)p;
			return 0;
		}
	}
	return -EINVAL;
}

/* ---------------------------------------------------------------------------------------- */
/* Histogram: bucket 0 is [0, 1 us); then 4 sub-buckets per power of two from 1 us; the last
 * bucket (95, from 12.58 s) is open-ended. */

#define HIST_BASE ((sched_ns)SCHED_NS_PER_US)
_Static_assert(HIST_BASE % 4 == 0, "sub-bucket bounds must be exact");

sched_ns sched_hist_bucket_lo(unsigned i)
{
	unsigned j, oct, sub;

	if (i == 0)
		return 0;
	if (i >= SCHED_HIST_BUCKETS)
		i = SCHED_HIST_BUCKETS - 1;
	j = i - 1;
	oct = j / 4;
	sub = j % 4;
	return (HIST_BASE << oct) / 4 * (4 + sub);
}

static unsigned hist_index(sched_ns v)
{
	unsigned oct, idx;
	sched_ns base;

	if (v < HIST_BASE)
		return 0;
	oct = 63u - (unsigned)__builtin_clzll(v / HIST_BASE);
	if (oct >= (SCHED_HIST_BUCKETS - 1) / 4)
		return SCHED_HIST_BUCKETS - 1;
	base = HIST_BASE << oct;
	idx = 1 + oct * 4 + (unsigned)((v - base) / (base / 4));
	return idx < SCHED_HIST_BUCKETS ? idx : SCHED_HIST_BUCKETS - 1;
}

static void hist_add(struct sched_hist *h, sched_ns v)
{
	h->count[hist_index(v)]++;
	h->total++;
	h->sum += v;
	if (v > h->max)
		h->max = v;
}

sched_ns sched_hist_percentile(const struct sched_hist *h, unsigned permille)
{
	uint64_t rank, cum = 0;

	if (!h || h->total == 0)
		return 0;
	if (permille > 1000)
		permille = 1000;
	rank = (h->total * permille + 999) / 1000;
	if (rank == 0)
		rank = 1;
	for (unsigned i = 0; i < SCHED_HIST_BUCKETS; i++) {
		cum += h->count[i];
		if (cum >= rank) {
			sched_ns up = i + 1 < SCHED_HIST_BUCKETS ? sched_hist_bucket_lo(i + 1) : h->max;

			return up < h->max ? up : h->max;
		}
	}
	return h->max;
}

/* ---------------------------------------------------------------------------------------- */
/* Groups */

/*
 * Zeroed memory aligned on a cache line, for queues and groups (their members are laid out by
 * cache line, see sched_i.h). Returns NULL on allocation failure; free() releases it.
 */
static void *zalloc_lines(size_t size)
{
	size_t n = (size + 63) & ~(size_t)63;
	void *p = aligned_alloc(64, n);

	if (p)
		memset(p, 0, n);
	return p;
}

static struct sched_group *group_get(const struct sched *sd, uint32_t id)
{
	return id < sd->nr_group_slots ? sd->groups[id] : NULL;
}

static bool weight_valid(uint32_t w)
{
	return w >= SCHED_WEIGHT_MIN && w <= SCHED_WEIGHT_MAX;
}

static int group_alloc(struct sched *sd, struct sched_group *parent, uint32_t weight,
		       uint32_t leaf_weight, uint32_t *id)
{
	struct sched_group *g;

	if (sd->nr_group_slots == UINT32_MAX)
		return -ENOMEM;
	if (sd->nr_group_slots == sd->group_cap) {
		uint32_t cap = sd->group_cap ? sd->group_cap * 2 : 8;
		struct sched_group **n = realloc(sd->groups, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		sd->groups = n;
		sd->group_cap = cap;
	}
	g = zalloc_lines(sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->id = sd->nr_group_slots;
	g->parent = parent;
	g->cfg_weight = weight;
	g->cfg_leaf_weight = leaf_weight;
	list_init(&g->queues);
	if (parent)
		parent->nr_children++;
	sd->groups[sd->nr_group_slots++] = g;
	sd->nr_groups++;
	if (sd->ops && sd->ops->group_init)
		sd->ops->group_init(sd, g);
	*id = g->id;
	return 0;
}

int sched_group_create(struct sched *sd, uint32_t parent, uint32_t weight, uint32_t leaf_weight,
		       uint32_t *id)
{
	struct sched_group *p = group_get(sd, parent);
	int ret;

	if (!p || !weight_valid(weight) || !weight_valid(leaf_weight) || !id)
		return -EINVAL;
	ret = group_alloc(sd, p, weight, leaf_weight, id);
	paranoid_check(sd);
	return ret;
}

int sched_group_set_weight(struct sched *sd, uint32_t id, uint32_t weight, uint32_t leaf_weight)
{
	struct sched_group *g = group_get(sd, id);

	if (!g || !weight_valid(weight) || !weight_valid(leaf_weight))
		return -EINVAL;
	g->cfg_weight = weight;
	g->cfg_leaf_weight = leaf_weight;
	sched__fq_set_weight(g, weight, leaf_weight);
	paranoid_check(sd);
	return 0;
}

int sched_group_get(const struct sched *sd, uint32_t id, uint32_t *parent, uint32_t *weight,
		    uint32_t *leaf_weight)
{
	const struct sched_group *g = group_get(sd, id);

	if (!g)
		return -EINVAL;
	if (parent)
		*parent = g->parent ? g->parent->id : SCHED_ROOT_GROUP;
	if (weight)
		*weight = g->cfg_weight;
	if (leaf_weight)
		*leaf_weight = g->cfg_leaf_weight;
	return 0;
}

int sched_group_stats(const struct sched *sd, uint32_t id, struct sched_stats *out)
{
	const struct sched_group *g = group_get(sd, id);

	if (!g || !out)
		return -EINVAL;
	*out = g->stats;
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Queue hash */

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

static size_t queue_bucket(const struct sched *sd, uint32_t gid, uint64_t key, bool sync)
{
	return (size_t)mix64(key ^ mix64(((uint64_t)gid << 1) | sync)) & sd->hash_mask;
}

static struct sched_queue *hash_lookup(const struct sched *sd, const struct sched_group *g,
				       uint64_t key, bool sync)
{
	struct sched_queue *q = sd->hash[queue_bucket(sd, g->id, key, sync)];

	while (q && !(q->g == g && q->key == key && q->sync == sync))
		q = q->hash_next;
	return q;
}

static struct sched_queue *queue_lookup(const struct sched *sd, const struct sched_group *g,
					uint64_t key, bool sync)
{
	struct sched_queue *q = sd->lookup_hint;

	/* the hint (see struct sched) skips the bucket array, cold when queues are many */
	if (q && q->g == g && q->key == key && q->sync == sync)
		return q;
	return hash_lookup(sd, g, key, sync);
}

static void queue_hash_add(struct sched *sd, struct sched_queue *q)
{
	size_t b = queue_bucket(sd, q->g->id, q->key, q->sync);

	q->hash_next = sd->hash[b];
	sd->hash[b] = q;
}

static void queue_hash_del(struct sched *sd, struct sched_queue *q)
{
	struct sched_queue **pp = &sd->hash[queue_bucket(sd, q->g->id, q->key, q->sync)];

	while (*pp != q)
		pp = &(*pp)->hash_next;
	*pp = q->hash_next;
	q->hash_next = NULL;
}

/* Doubles the bucket array; on allocation failure keeps the old one (longer chains). */
static void queue_hash_grow(struct sched *sd)
{
	size_t n = (sd->hash_mask + 1) * 2;
	struct sched_queue **h = calloc(n, sizeof(*h));
	struct sched_list *l;

	if (!h)
		return;
	free(sd->hash);
	sd->hash = h;
	sd->hash_mask = n - 1;
	for (l = sd->all_queues.next; l != &sd->all_queues; l = l->next)
		queue_hash_add(sd, sched_container_of(l, struct sched_queue, all_node));
}

static void queue_reset(struct sched *sd, struct sched_queue *q, struct sched_group *g,
			uint64_t key, bool sync, uint8_t ioclass, uint8_t level, sched_ns now)
{
	q->key = key;
	q->g = g;
	q->sync = sync;
	q->ioclass = ioclass;
	q->level = level;
	q->live = false;
	q->nr_queued = 0;
	q->nr_in_flight = 0;
	memset(&q->stats, 0, sizeof(q->stats));
	list_add_tail(&g->queues, &q->group_node);
	queue_hash_add(sd, q);
	if (sd->ops->queue_init)
		sd->ops->queue_init(sd, q, now);
}

/* Finds or makes the queue; returns NULL only on allocation failure (nothing changed). */
static struct sched_queue *queue_get(struct sched *sd, struct sched_group *g, uint64_t key,
				     bool sync, uint8_t ioclass, uint8_t level, sched_ns now)
{
	struct sched_queue *q = queue_lookup(sd, g, key, sync);

	if (!q) {
		if (!list_empty(&sd->free_queues)) {
			q = sched_container_of(sd->free_queues.next, struct sched_queue, lru_node);
			queue_hash_del(sd, q);
			list_del(&q->group_node);
		} else {
			q = zalloc_lines(sizeof(*q));
			if (!q)
				return NULL;
			list_init(&q->lru_node);
			list_add_tail(&sd->all_queues, &q->all_node);
			sd->nr_queue_objs++;
		}
		queue_reset(sd, q, g, key, sync, ioclass, level, now);
		if (sd->nr_queue_objs > sd->hash_mask + 1)
			queue_hash_grow(sd);
	}
	if (!q->live) {
		list_del(&q->lru_node);
		q->live = true;
		sd->nr_live_queues++;
	}
	return q;
}

void sched__queue_maybe_release(struct sched *sd, struct sched_queue *q)
{
	if (!q->live || q->nr_queued || q->nr_in_flight)
		return;
	if (sd->ops->queue_held && sd->ops->queue_held(sd, q))
		return;
	q->live = false;
	sd->nr_live_queues--;
	list_add_tail(&sd->free_queues, &q->lru_node);
}

static void queue_free(struct sched *sd, struct sched_queue *q)
{
	if (sd->lookup_hint == q)
		sd->lookup_hint = NULL;
	queue_hash_del(sd, q);
	list_del(&q->lru_node);
	list_del(&q->group_node);
	list_del(&q->all_node);
	sd->nr_queue_objs--;
	free(q);
}

/* ---------------------------------------------------------------------------------------- */
/* Life cycle */

struct sched *sched_create(enum sched_policy policy, bool rotational)
{
	struct sched *sd;
	uint32_t id;

	if (!policy_valid(policy))
		return NULL;
	sd = calloc(1, sizeof(*sd));
	if (!sd)
		return NULL;
	sd->policy = policy;
	sd->ops = ops_table[policy];
	sd->rotational = rotational;
	tunables_defaults(sd);
	list_init(&sd->free_queues);
	list_init(&sd->all_queues);
	sd->hash_mask = 63;
	sd->hash = calloc(sd->hash_mask + 1, sizeof(*sd->hash));
	if (!sd->hash)
		goto out_free;
	sd->ops->init(sd, 0);
	/* root: weight 2 x default, "prefer root" (CFQ) */
	if (group_alloc(sd, NULL, 2 * SCHED_WEIGHT_DEFAULT, 2 * SCHED_WEIGHT_DEFAULT, &id) != 0)
		goto out_hash;
	return sd;

out_hash:
	free(sd->hash);
out_free:
	free(sd->groups);
	free(sd);
	return NULL;
}

void sched_destroy(struct sched *sd)
{
	if (!sd)
		return;
	assert(sd->nr_queued == 0 && sd->nr_in_flight == 0);
	while (!list_empty(&sd->all_queues)) {
		struct sched_queue *q =
			sched_container_of(sd->all_queues.next, struct sched_queue, all_node);

		queue_free(sd, q);
	}
	for (uint32_t i = 0; i < sd->nr_group_slots; i++)
		free(sd->groups[i]);
	free(sd->groups);
	free(sd->hash);
	free(sd->trace);
	free(sd);
}

int sched_group_remove(struct sched *sd, uint32_t id)
{
	struct sched_group *g = group_get(sd, id);
	struct sched_list *l, *next;

	if (!g || id == SCHED_ROOT_GROUP)
		return -EINVAL;
	if (g->nr_children || g->stats.queued || g->stats.in_flight)
		return -EBUSY;
	if (sd->ops->group_remove)
		sd->ops->group_remove(sd, g, sd->now_hint);
	for (l = g->queues.next; l != &g->queues; l = next) {
		struct sched_queue *q = sched_container_of(l, struct sched_queue, group_node);

		next = l->next;
		sched__queue_maybe_release(sd, q);
		assert(!q->live);
		queue_free(sd, q);
	}
	if (g->parent)
		g->parent->nr_children--;
	sd->groups[id] = NULL;
	sd->nr_groups--;
	free(g);
	paranoid_check(sd);
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Merging */

int sched__rq_cmp(const struct sched_rb_node *a, const struct sched_rb_node *b)
{
	const struct sched_rq *x = rq_of_sort(a), *y = rq_of_sort(b);

	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return 0;
}

struct rq_key {
	uint64_t file, offset, seq;
};

static int rq_key_cmp(const void *key, const struct sched_rb_node *n)
{
	const struct rq_key *k = key;
	const struct sched_rq *y = rq_of_sort(n);

	if (k->file != y->file)
		return k->file < y->file ? -1 : 1;
	if (k->offset != y->offset)
		return k->offset < y->offset ? -1 : 1;
	if (k->seq != y->seq)
		return k->seq < y->seq ? -1 : 1;
	return 0;
}

static uint64_t chain_end(const struct sched_rq *h)
{
	const struct sched_rq *t = h->merge_tail ? h->merge_tail : h;

	return t->offset + t->len;
}

static bool can_merge(const struct sched_rq *h, const struct sched_rq *rq)
{
	if (h->owner != rq->owner || h->file != rq->file || h->op != rq->op)
		return false;
	if (h->op != SCHED_OP_READ && h->op != SCHED_OP_WRITE)
		return false;
	if ((h->flags | rq->flags) & SCHED_RQ_NOMERGE)
		return false;
	/* never a sync request into an async one */
	return !(rq_is_sync(rq) && !rq_is_sync(h));
}

static void account_merge(struct sched_rq *rq)
{
	struct sched_queue *q = rq->owner;

	q->stats.merged++;
	q->g->stats.merged++;
}

void sched__rq_replace(struct sched_tree *tree, struct sched_rq *old, struct sched_rq *new_head)
{
	new_head->fifo_deadline = sched_time_min(old->fifo_deadline, new_head->fifo_deadline);
	sched_tree_erase(tree, &old->sort_node);
	sched_tree_insert(tree, &new_head->sort_node, sched__rq_cmp);
	list_replace(&old->fifo_node, &new_head->fifo_node);
}

struct sched_rq *sched__merge(struct sched *sd, struct sched_tree *tree, struct sched_rq *rq,
			      bool front_ok, bool no_behind, uint64_t max_bytes,
			      struct sched_rq **replaced)
{
	struct rq_key k = { rq->file, rq->offset, UINT64_MAX };
	struct sched_rb_node *n;
	struct sched_rq *h;

	*replaced = NULL;
	if (max_bytes == 0 || rq->len == 0 || rq->len > max_bytes)
		return NULL;
	if (rq->op != SCHED_OP_READ && rq->op != SCHED_OP_WRITE)
		return NULL;
	if (rq->flags & SCHED_RQ_NOMERGE)
		return NULL;
	/* back merge: the head sorting last at or before rq->offset ends where rq starts */
	n = sched_tree_floor(tree, &k, rq_key_cmp);
	if (n) {
		h = rq_of_sort(n);
		/* the 2009 rule looks at the candidate only (the kernel's hash hit on the bio's
		 * start), whether or not it could merge, and then refuses every merge */
		if (no_behind && chain_end(h) == rq->offset && h->file == rq->file &&
		    sched_tree_next(n) != NULL)
			return NULL;
		if (can_merge(h, rq) && chain_end(h) == rq->offset &&
		    h->merged_len <= max_bytes - rq->len) {
			struct sched_rq *t = h->merge_tail ? h->merge_tail : h;

			t->merge_next = rq;
			rq->merge_prev = t;
			rq->merge_next = NULL;
			h->merge_tail = rq;
			h->nr_merged++;
			h->merged_len += rq->len;
			h->fifo_deadline = sched_time_min(h->fifo_deadline, rq->fifo_deadline);
			rq_set_state(rq, RQ_ST_MERGED, sd->gen);
			account_merge(rq);
			return h;
		}
	}
	if (!front_ok || rq->offset + rq->len < rq->offset)
		return NULL;
	/* front merge: a head starts exactly where rq ends */
	k.offset = rq->offset + rq->len;
	k.seq = 0;
	n = sched_tree_ceil(tree, &k, rq_key_cmp);
	if (!n)
		return NULL;
	h = rq_of_sort(n);
	if (h->file != rq->file || h->offset != k.offset || !can_merge(h, rq) ||
	    h->merged_len > max_bytes - rq->len)
		return NULL;
	rq->merge_next = h;
	rq->merge_prev = NULL;
	rq->merge_tail = h->merge_tail ? h->merge_tail : h;
	rq->nr_merged = h->nr_merged + 1;
	rq->merged_len = h->merged_len + rq->len;
	h->merge_prev = rq;
	h->merge_tail = NULL;
	h->nr_merged = 0;
	h->merged_len = h->len;
	sched__rq_replace(tree, h, rq);
	rq_set_state(h, RQ_ST_MERGED, sd->gen);
	account_merge(rq);
	*replaced = h;
	return rq;
}

/* ---------------------------------------------------------------------------------------- */
/* The request path */

static bool enqueue_args_valid(const struct sched_rq *rq)
{
	if (rq->ioclass < SCHED_CLASS_RT || rq->ioclass > SCHED_CLASS_IDLE)
		return false;
	if (rq->level >= SCHED_LEVELS || rq->op > SCHED_OP_FDATASYNC)
		return false;
	if (rq_is_fsync(rq) && rq->len != 0)
		return false;
	if (rq->offset + rq->len < rq->offset)
		return false;
	switch (RQ_STATE(rq)) {
	case RQ_ST_QUEUED:
	case RQ_ST_MERGED:
	case RQ_ST_DISPATCHED:
	case RQ_ST_DISPATCHED_MEMBER:
		return false; /* already the scheduler's */
	default:
		return true;
	}
}

int sched_enqueue(struct sched *sd, struct sched_rq *rq, sched_ns now)
{
	struct sched_group *g;
	struct sched_queue *q;
	uint64_t trace_seq;
	uint8_t level;
	bool sync;

	if (!sd || !rq || !enqueue_args_valid(rq))
		return -EINVAL;
	sd->now_hint = now;
	g = group_get(sd, rq->group);
	if (!g)
		return -EINVAL;
	sync = rq_is_sync(rq);
	level = rq->ioclass == SCHED_CLASS_IDLE ? SCHED_LEVELS - 1 : rq->level;
	q = queue_get(sd, g, sync ? rq->queue_key : ((uint64_t)rq->ioclass << 3 | level), sync,
		      rq->ioclass, level, now);
	if (!q)
		return -ENOMEM;
	q->ioclass = rq->ioclass;
	q->level = level;

	rq->enqueue_time = now;
	rq->dispatch_time = 0;
	rq->merge_next = rq->merge_prev = rq->merge_tail = NULL;
	rq->nr_merged = 0;
	rq->merged_len = rq->len;
	rq->owner = q;
	rq->seq = ++sd->seq;
	rq->fifo_deadline = now;
	sched_tree_node_clear(&rq->sort_node);
	list_init(&rq->fifo_node);
	rq_set_state(rq, RQ_ST_QUEUED, sd->gen);

	sd->nr_queued++;
	q->nr_queued++;
	g->stats.queued++;
	/* recorded before the policy acts (a preemption follows its cause); merged set after */
	trace_seq = sd->trace_seq;
	sched__trace(sd, now, SCHED_TR_QUEUE, q, (int64_t)rq->offset, (int64_t)rq->len, 0);
	sd->ops->enqueue(sd, q, rq, now);
	if (sd->trace && sd->trace_seq - trace_seq <= sd->trace_mask)
		sd->trace[trace_seq & sd->trace_mask].flag = rq->merge_prev || rq->nr_merged;
	paranoid_check(sd);
	return 0;
}

static void account_dispatch(struct sched *sd, struct sched_rq *rq, sched_ns now)
{
	struct sched_queue *q = rq->owner;
	struct sched_group *g = q->g;

	for (struct sched_rq *m = rq; m; m = m->merge_next) {
		int dir = rq_dir(m), kind = rq_is_sync(m) ? SCHED_KIND_SYNC : SCHED_KIND_ASYNC;

		m->dispatch_time = now;
		rq_set_state(m, m == rq ? RQ_ST_DISPATCHED : RQ_ST_DISPATCHED_MEMBER, sd->gen);
		q->stats.bytes[dir][kind] += m->len;
		g->stats.bytes[dir][kind] += m->len;
		q->stats.ios[dir][kind]++;
		g->stats.ios[dir][kind]++;
		if (rq_is_fsync(m)) {
			q->stats.fsyncs++;
			g->stats.fsyncs++;
		}
		q->stats.wait_time += now - m->enqueue_time;
		g->stats.wait_time += now - m->enqueue_time;
		g->stats.queued--;
		q->nr_queued--;
		sd->nr_queued--;
	}
	q->stats.dispatched++;
	g->stats.dispatched++;
	g->stats.in_flight++;
	q->nr_in_flight++;
	sd->nr_in_flight++;
}

struct sched_rq *sched_dispatch(struct sched *sd, sched_ns now)
{
	struct sched_rq *rq;

	sd->now_hint = now;
	rq = sd->ops->dispatch(sd, now);

	if (rq) {
		assert(RQ_STATE(rq) == RQ_ST_QUEUED);
		account_dispatch(sd, rq, now);
		sched__trace(sd, now, SCHED_TR_DISPATCH, rq->owner, (int64_t)rq->offset,
			     (int64_t)rq->merged_len, 0);
	}
	paranoid_check(sd);
	return rq;
}

sched_ns sched_next_event(const struct sched *sd)
{
	return sd->ops->next_event(sd);
}

void sched_complete(struct sched *sd, struct sched_rq *rq, int error, sched_ns now)
{
	struct sched_queue *q = rq->owner;
	struct sched_group *g = q->g;
	sched_ns svc = now - rq->dispatch_time;

	assert(RQ_STATE(rq) == RQ_ST_DISPATCHED);
	sd->now_hint = now;
	sched__trace(sd, now, SCHED_TR_COMPLETE, q, (int64_t)svc, error, 0);
	if (RQ_GEN(rq) == (sd->gen & RQ_GEN_MASK))
		sd->ops->complete(sd, rq, now);
	q->stats.service_time += svc;
	g->stats.service_time += svc;
	if (error) {
		q->stats.errors++;
		g->stats.errors++;
	}
	for (struct sched_rq *m = rq; m; m = m->merge_next) {
		hist_add(&q->stats.latency, now - m->enqueue_time);
		hist_add(&g->stats.latency, now - m->enqueue_time);
		rq_set_state(m, RQ_ST_DONE, sd->gen);
	}
	g->stats.in_flight--;
	q->nr_in_flight--;
	sd->nr_in_flight--;
	sd->lookup_hint = q;
	sched__queue_maybe_release(sd, q);
	paranoid_check(sd);
}

int sched_cancel(struct sched *sd, struct sched_rq *rq, sched_ns now)
{
	struct sched_queue *q;

	switch (RQ_STATE(rq)) {
	case RQ_ST_DISPATCHED:
	case RQ_ST_DISPATCHED_MEMBER:
	case RQ_ST_DONE:
		return -EBUSY;
	case RQ_ST_QUEUED:
	case RQ_ST_MERGED:
		break;
	default:
		return -EINVAL;
	}
	q = rq->owner;
	sd->now_hint = now;
	sched__trace(sd, now, SCHED_TR_CANCEL, q, (int64_t)rq->offset, (int64_t)rq->len, 0);
	if (RQ_STATE(rq) == RQ_ST_MERGED) {
		struct sched_rq *h = rq->merge_prev, *prev = rq->merge_prev, *next = rq->merge_next;

		while (RQ_STATE(h) != RQ_ST_QUEUED)
			h = h->merge_prev;
		prev->merge_next = next;
		if (next)
			next->merge_prev = prev;
		if (h->merge_tail == rq)
			h->merge_tail = prev == h ? NULL : prev;
		h->nr_merged--;
		h->merged_len -= rq->len;
	} else if (rq->merge_next) {
		struct sched_rq *n = rq->merge_next;

		n->merge_prev = NULL;
		n->nr_merged = rq->nr_merged - 1;
		n->merged_len = rq->merged_len - rq->len;
		n->merge_tail = rq->merge_tail == n ? NULL : rq->merge_tail;
		rq_set_state(n, RQ_ST_QUEUED, sd->gen);
		sd->ops->replace(sd, rq, n);
	} else {
		sd->ops->remove(sd, rq, now);
	}
	rq->merge_next = rq->merge_prev = rq->merge_tail = NULL;
	rq->nr_merged = 0;
	rq->merged_len = rq->len;
	rq_set_state(rq, RQ_ST_NONE, 0);
	sd->nr_queued--;
	q->nr_queued--;
	q->g->stats.queued--;
	sched__queue_maybe_release(sd, q);
	paranoid_check(sd);
	return 0;
}

size_t sched_nr_queued(const struct sched *sd)
{
	return sd->nr_queued;
}

size_t sched_nr_in_flight(const struct sched *sd)
{
	return sd->nr_in_flight;
}

/* ---------------------------------------------------------------------------------------- */
/* Policy switch */

/* Merge sort of a list linked through merge_next, by seq (arrival order). */
static struct sched_rq *sort_by_seq(struct sched_rq *head)
{
	struct sched_rq *a = NULL, *b = NULL, *out = NULL, **tail = &out;
	bool to_a = true;

	if (!head || !head->merge_next)
		return head;
	while (head) {
		struct sched_rq *next = head->merge_next;

		if (to_a) {
			head->merge_next = a;
			a = head;
		} else {
			head->merge_next = b;
			b = head;
		}
		to_a = !to_a;
		head = next;
	}
	a = sort_by_seq(a);
	b = sort_by_seq(b);
	while (a && b) {
		if (a->seq < b->seq) {
			*tail = a;
			a = a->merge_next;
		} else {
			*tail = b;
			b = b->merge_next;
		}
		tail = &(*tail)->merge_next;
	}
	*tail = a ? a : b;
	return out;
}

int sched_switch(struct sched *sd, enum sched_policy policy, sched_ns now)
{
	struct sched_rq *heads, *all = NULL, *rq, *next;
	struct sched_list *l;

	if (!policy_valid(policy))
		return -EINVAL;
	if (policy == sd->policy)
		return 0;
	sd->now_hint = now;
	heads = sd->ops->drain(sd);
	/* break every chain: the requests go back one by one, in arrival order */
	while (heads) {
		struct sched_rq *h = heads;

		heads = h->fifo_node.next ? rq_of_fifo(h->fifo_node.next) : NULL;
		for (rq = h; rq; rq = next) {
			next = rq->merge_next;
			rq->merge_next = all;
			all = rq;
		}
	}
	all = sort_by_seq(all);
	sched__trace(sd, now, SCHED_TR_SWITCH, NULL, (int64_t)policy, 0, 0);
	sd->policy = policy;
	sd->ops = ops_table[policy];
	sd->gen = (sd->gen + 1) & RQ_GEN_MASK;
	sd->ops->init(sd, now);
	for (rq = all; rq; rq = next) {
		next = rq->merge_next;
		rq->merge_next = rq->merge_prev = rq->merge_tail = NULL;
		rq->nr_merged = 0;
		rq->merged_len = rq->len;
		rq->fifo_deadline = rq->enqueue_time;
		sched_tree_node_clear(&rq->sort_node);
		list_init(&rq->fifo_node);
		rq_set_state(rq, RQ_ST_QUEUED, sd->gen);
		sd->ops->enqueue(sd, rq->owner, rq, now);
	}
	for (l = sd->all_queues.next; l != &sd->all_queues; l = l->next)
		sched__queue_maybe_release(sd, sched_container_of(l, struct sched_queue, all_node));
	paranoid_check(sd);
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Introspection */

static int queue_order(const struct sched_queue *a, const struct sched_queue *b)
{
	if (a->g->id != b->g->id)
		return a->g->id < b->g->id ? -1 : 1;
	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	return (int)a->sync - (int)b->sync;
}

static struct sched_queue *sort_queues(struct sched_queue *head)
{
	struct sched_queue *a = NULL, *b = NULL, *out = NULL, **tail = &out;
	bool to_a = true;

	if (!head || !head->scratch)
		return head;
	while (head) {
		struct sched_queue *next = head->scratch;

		if (to_a) {
			head->scratch = a;
			a = head;
		} else {
			head->scratch = b;
			b = head;
		}
		to_a = !to_a;
		head = next;
	}
	a = sort_queues(a);
	b = sort_queues(b);
	while (a && b) {
		if (queue_order(a, b) <= 0) {
			*tail = a;
			a = a->scratch;
		} else {
			*tail = b;
			b = b->scratch;
		}
		tail = &(*tail)->scratch;
	}
	*tail = a ? a : b;
	return out;
}

void sched_foreach_queue(const struct sched *sd, sched_queue_fn fn, void *arg)
{
	/* the scratch links are scheduler-private bookkeeping; sd itself is never const */
	struct sched *w = (struct sched *)sd;
	struct sched_queue *list = NULL, *q;
	struct sched_list *l;

	for (l = w->all_queues.next; l != &w->all_queues; l = l->next) {
		q = sched_container_of(l, struct sched_queue, all_node);
		if (q->live) {
			q->scratch = list;
			list = q;
		}
	}
	for (q = sort_queues(list); q; q = q->scratch) {
		/* the gauges are the queue's own counts (see struct sched_stats) */
		q->stats.queued = q->nr_queued;
		q->stats.in_flight = q->nr_in_flight;
		struct sched_queue_info qi = {
			.queue_key = q->key,
			.group = q->g->id,
			.ioclass = q->ioclass,
			.level = q->level,
			.sync = q->sync,
			.idle_window = sd->policy == SCHED_POLICY_CFQ &&
				       (q->cfq.flags & CFQQ_F_IDLE_WINDOW),
			.seeky = sd->policy == SCHED_POLICY_CFQ && cfq_seeky(q->cfq.seek_history),
			.active = sd->policy == SCHED_POLICY_CFQ && sd->cfq.active == q,
			.stats = &q->stats,
		};
		fn(arg, &qi);
	}
}

void sched_get_info(const struct sched *sd, struct sched_info *out)
{
	memset(out, 0, sizeof(*out));
	out->policy = sd->policy;
	out->hw_tag = -1;
	if (sd->ops->info)
		sd->ops->info(sd, out);
	out->nr_groups = sd->nr_groups;
	out->nr_queues = sd->nr_live_queues;
	out->queued = sd->nr_queued;
	out->in_flight = sd->nr_in_flight;
}

/* ---------------------------------------------------------------------------------------- */
/* Invariants */

int sched__check_chain(const struct sched_rq *h, const struct sched_queue *q, size_t *nreq,
		       char *buf, size_t buflen)
{
	const struct sched_rq *m, *prev = h;
	uint32_t n = 0;
	uint64_t len = h->len;

	if (RQ_STATE(h) != RQ_ST_QUEUED || h->owner != q || h->merge_prev)
		FAIL("rq seq %llu: bad head state %u", (unsigned long long)h->seq, h->state);
	for (m = h->merge_next; m; prev = m, m = m->merge_next) {
		if (RQ_STATE(m) != RQ_ST_MERGED || m->owner != q || m->merge_prev != prev)
			FAIL("rq seq %llu: bad chain member", (unsigned long long)m->seq);
		if (sched_time_before(m->fifo_deadline, h->fifo_deadline))
			FAIL("rq seq %llu: head deadline later than a member's",
			     (unsigned long long)h->seq);
		n++;
		len += m->len;
		if (n > h->nr_merged)
			break;
	}
	if (n != h->nr_merged || len != h->merged_len)
		FAIL("rq seq %llu: chain of %u/%llu bytes, head says %u/%llu",
		     (unsigned long long)h->seq, n, (unsigned long long)len, h->nr_merged,
		     (unsigned long long)h->merged_len);
	if ((n ? prev : NULL) != h->merge_tail)
		FAIL("rq seq %llu: stale merge_tail", (unsigned long long)h->seq);
	*nreq += 1 + n;
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Decision trace */

static const char *const trace_names[SCHED_TR_COUNT] = {
	[SCHED_TR_QUEUE] = "queue",	  [SCHED_TR_DISPATCH] = "dispatch",
	[SCHED_TR_COMPLETE] = "complete", [SCHED_TR_CANCEL] = "cancel",
	[SCHED_TR_ACTIVATE] = "activate", [SCHED_TR_SLICE] = "slice",
	[SCHED_TR_EXPIRE] = "expire",	  [SCHED_TR_IDLE] = "idle",
	[SCHED_TR_IDLE_END] = "idle_end", [SCHED_TR_PREEMPT] = "preempt",
	[SCHED_TR_COOP] = "coop",	  [SCHED_TR_WAIT_OVER] = "wait_over",
	[SCHED_TR_SWITCH] = "switch",
};

const char *sched_trace_event_name(unsigned event)
{
	return event < SCHED_TR_COUNT ? trace_names[event] : "?";
}

int sched_trace_resize(struct sched *sd, int64_t records)
{
	struct sched_trace_rec *ring = NULL;
	uint64_t size = 1;

	if (records < 0 || records > SCHED_TRACE_MAX)
		return -EINVAL;
	if (records) {
		while (size < (uint64_t)records)
			size <<= 1;
		ring = calloc(size, sizeof(*ring));
		if (!ring)
			return -ENOMEM;
	}
	free(sd->trace);
	sd->trace = ring;
	sd->trace_mask = ring ? size - 1 : 0;
	sd->trace_seq = 0;
	return 0;
}

uint32_t sched_trace_capacity(const struct sched *sd)
{
	return sd->trace ? (uint32_t)(sd->trace_mask + 1) : 0;
}

uint64_t sched_trace_total(const struct sched *sd)
{
	return sd->trace_seq;
}

void sched__trace_add(struct sched *sd, sched_ns now, enum sched_trace_event ev,
		      const struct sched_queue *q, int64_t a, int64_t b, uint8_t flag)
{
	struct sched_trace_rec *r = &sd->trace[sd->trace_seq++ & sd->trace_mask];

	r->time = now;
	r->queue_key = q ? q->key : 0;
	r->group = q ? q->g->id : 0;
	r->sync = q ? q->sync : 0;
	r->event = (uint8_t)ev;
	r->flag = flag;
	r->a = a;
	r->b = b;
}

/* "N.NNNms" for a time [ns] (records carry no negative times) into t; returns t. */
static const char *ms_str(char t[32], int64_t ns)
{
	snprintf(t, 32, "%lld.%03lldms", (long long)(ns / 1000000), (long long)((ns / 1000) % 1000));
	return t;
}

int sched_trace_detail(const struct sched_trace_rec *r, char *buf, size_t size)
{
	static const char *const wl_class[] = { "be", "rt", "idle" };
	static const char *const wl_type[] = { "async", "sync-noidle", "sync" };
	long long a = (long long)r->a, b = (long long)r->b;
	char t[32];

	switch (r->event) {
	case SCHED_TR_QUEUE:
	case SCHED_TR_CANCEL:
		return snprintf(buf, size, " off=%lld len=%lld%s", a, b, r->flag ? " merged" : "");
	case SCHED_TR_DISPATCH:
		return snprintf(buf, size, " off=%lld len=%lld", a, b);
	case SCHED_TR_COMPLETE:
		if (b)
			return snprintf(buf, size, " service=%s error=%lld", ms_str(t, r->a), b);
		return snprintf(buf, size, " service=%s", ms_str(t, r->a));
	case SCHED_TR_ACTIVATE:
		return snprintf(buf, size, " class=%s type=%s", a >= 0 && a < 3 ? wl_class[a] : "?",
				b >= 0 && b < 3 ? wl_type[b] : "?");
	case SCHED_TR_SLICE:
		return snprintf(buf, size, " slice=%s", ms_str(t, r->a));
	case SCHED_TR_EXPIRE:
		return snprintf(buf, size, " dispatched=%lld slice=%s%s", a, ms_str(t, r->b),
				r->flag ? " timed_out" : "");
	case SCHED_TR_IDLE:
		return snprintf(buf, size, " window=%s%s", ms_str(t, r->a),
				r->flag ? " group_idle" : "");
	case SCHED_TR_PREEMPT:
		return snprintf(buf, size, " preempted=%lld", a);
	case SCHED_TR_COOP:
		return snprintf(buf, size, " to=%lld", a);
	case SCHED_TR_SWITCH:
		return snprintf(buf, size, " policy=%s",
				policy_valid((enum sched_policy)a) ? sched_policy_name((enum sched_policy)a)
								   : "?");
	default:
		return snprintf(buf, size, "%s", "");
	}
}

size_t sched_trace_read(const struct sched *sd, uint64_t *pos, struct sched_trace_rec *out,
			size_t max)
{
	uint64_t oldest, p = *pos;
	size_t n = 0;

	if (!sd->trace)
		return 0;
	oldest = sd->trace_seq > sd->trace_mask + 1 ? sd->trace_seq - (sd->trace_mask + 1) : 0;
	if (p < oldest)
		p = oldest;
	for (; p < sd->trace_seq && n < max; p++)
		out[n++] = sd->trace[p & sd->trace_mask];
	*pos = p;
	return n;
}

int sched_check(const struct sched *sd, char *buf, size_t buflen)
{
	const struct sched_list *l;
	size_t queued = 0, in_flight = 0, live = 0, objs = 0, freeq = 0;
	uint32_t ngroups = 0;
	bool hint_found = false;

	if (!sd)
		FAIL("no scheduler");
	/* the trace ring: a power of two up to the maximum, or off with nothing counted */
	if (sd->trace ? (sd->trace_mask & (sd->trace_mask + 1)) || sd->trace_mask >= SCHED_TRACE_MAX
		      : sd->trace_mask || sd->trace_seq)
		FAIL("trace ring: mask %llu, %llu written, %s", (unsigned long long)sd->trace_mask,
		     (unsigned long long)sd->trace_seq, sd->trace ? "on" : "off");
	for (l = sd->all_queues.next; l != &sd->all_queues; l = l->next) {
		const struct sched_queue *q = sched_container_of(l, struct sched_queue, all_node);

		objs++;
		hint_found |= q == sd->lookup_hint;
		if (hash_lookup(sd, q->g, q->key, q->sync) != q)
			FAIL("queue %llu/%u not found in the hash", (unsigned long long)q->key,
			     q->g->id);
		if (group_get(sd, q->g->id) != q->g)
			FAIL("queue %llu of a removed group", (unsigned long long)q->key);
		if (q->live) {
			live++;
			if (!list_empty(&q->lru_node))
				FAIL("live queue %llu on the free list", (unsigned long long)q->key);
		} else if (q->nr_queued || q->nr_in_flight) {
			FAIL("released queue %llu has requests", (unsigned long long)q->key);
		} else if (list_empty(&q->lru_node)) {
			FAIL("released queue %llu not on the free list", (unsigned long long)q->key);
		}
		queued += q->nr_queued;
		in_flight += q->nr_in_flight;
	}
	if (sd->lookup_hint && !hint_found)
		FAIL("lookup hint names no queue object");
	for (l = sd->free_queues.next; l != &sd->free_queues; l = l->next)
		freeq++;
	if (objs != sd->nr_queue_objs || live != sd->nr_live_queues || freeq != objs - live)
		FAIL("queue counts: %zu objects (%zu), %zu live (%zu), %zu free", objs,
		     sd->nr_queue_objs, live, sd->nr_live_queues, freeq);
	if (queued != sd->nr_queued || in_flight != sd->nr_in_flight)
		FAIL("queued %zu/%zu, in flight %zu/%zu", queued, sd->nr_queued, in_flight,
		     sd->nr_in_flight);
	for (uint32_t i = 0; i < sd->nr_group_slots; i++) {
		const struct sched_group *g = sd->groups[i];
		uint64_t gq = 0, gf = 0;
		uint32_t children = 0;

		if (!g)
			continue;
		ngroups++;
		if (g->id != i || (i == SCHED_ROOT_GROUP) != (g->parent == NULL))
			FAIL("group %u: bad id or parent", i);
		if (g->parent && group_get(sd, g->parent->id) != g->parent)
			FAIL("group %u: parent removed", i);
		for (uint32_t j = 0; j < sd->nr_group_slots; j++)
			if (sd->groups[j] && sd->groups[j]->parent == g)
				children++;
		if (children != g->nr_children)
			FAIL("group %u: %u children, says %u", i, children, g->nr_children);
		for (l = g->queues.next; l != &g->queues; l = l->next) {
			const struct sched_queue *q =
				sched_container_of(l, struct sched_queue, group_node);

			if (q->g != g)
				FAIL("group %u lists a queue of group %u", i, q->g->id);
			gq += q->nr_queued;
			gf += q->nr_in_flight;
		}
		if (gq != g->stats.queued || gf != g->stats.in_flight)
			FAIL("group %u: gauges %llu/%llu, queues %llu/%llu", i,
			     (unsigned long long)g->stats.queued,
			     (unsigned long long)g->stats.in_flight, (unsigned long long)gq,
			     (unsigned long long)gf);
	}
	if (ngroups != sd->nr_groups)
		FAIL("%u groups, counted %u", sd->nr_groups, ngroups);
	return sd->ops->check(sd, buf, buflen);
}
