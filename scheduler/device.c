/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * device.c - the deterministic device model (see device.h for the model itself).
 * Pure: no clock, no threads, no floating point (integer sqrt), so results are bit-identical
 * across compilers and machines.
 */
#include "device.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define NS_PER_S 1000000000ull
#define KIB 1024ull
#define MIB (1024ull * KIB)
#define GIB (1024ull * MIB)
#define TIB (1024ull * GIB)

/* 2^64 / golden ratio, odd: Fibonacci hashing spreads consecutive file ids evenly. */
#define FIB_MULT 0x9e3779b97f4a7c15ull

/*
 * Defaults. hdd: a 7200 rpm desktop disk of the CFQ era (the seeds' tiobench disk reads ~120 MB/s
 * sequentially); settle 0.8 ms track-to-track and 15 ms full stroke give the ~8.4 ms average
 * seek of such disks. ssd: a SATA-class flash device; 16 units x 250 MB/s = 4 GB/s aggregate is
 * more than SATA, but only deep workloads reach it and the depth is what CFQ's hw_tag sees.
 */
static const struct dev_params hdd_defaults = {
	.kind = DEV_HDD,
	.heads = 1,
	.bandwidth = 120000000ull,	/* 120 MB/s */
	.capacity = 4 * TIB,
	.region_bytes = 1 * GIB,
	.settle = 800000ull,		/* 0.8 ms */
	.full_stroke = 15000000ull,	/* 15 ms */
	.rpm = 7200,
	.track_bytes = 0,		/* bandwidth * period = 1 MB */
	.read_latency = 0,
	.write_latency = 0,
	.flush = 4000000ull,		/* 4 ms: cache flush + journal commit */
	.placement = DEV_PLACE_SPREAD,	/* ids of real mounts carry no locality */
};

static const struct dev_params ssd_defaults = {
	.kind = DEV_SSD,
	.heads = 16,
	.bandwidth = 250000000ull,	/* 250 MB/s per unit */
	.capacity = 4 * TIB,
	.region_bytes = 1 * GIB,
	.settle = 0,
	.full_stroke = 0,
	.rpm = 0,
	.track_bytes = 0,
	.read_latency = 100000ull,	/* 100 us */
	.write_latency = 30000ull,	/* 30 us: absorbed by the device's write cache */
	.flush = 1000000ull,		/* 1 ms */
	.placement = DEV_PLACE_SPREAD,	/* irrelevant: ssd cost ignores position */
};

struct dev_head {
	uint64_t pos;	   /* [bytes] where the last I/O on this head ended */
	sched_ns free_at;  /* [ns] when the head finishes its current I/O */
};

/*
 * Invariants: nr_heads == params.heads; period > 0 and track > 0 for hdd; every head's free_at
 * is the completion time of the last I/O it was given (or 0).
 */
struct dev_model {
	struct dev_params params;  /* validated copy */
	sched_ns period;	   /* [ns] hdd: one rotation */
	uint64_t track;		   /* [bytes] hdd: bytes per rotation (resolved track_bytes) */
	uint64_t nr_slots;	   /* [count] capacity / region_bytes */
	struct dev_cost last;	   /* breakdown of the last issue */
	struct dev_stats stats;	   /* cumulative counters */
	unsigned nr_heads;	   /* [count] */
	struct dev_head heads[];   /* nr_heads entries */
};

_Static_assert(sizeof(sched_ns) == 8, "sched_ns is 64-bit nanoseconds");

/* a * b / c without intermediate overflow (c > 0). */
static uint64_t mul_div(uint64_t a, uint64_t b, uint64_t c)
{
	return (uint64_t)((unsigned __int128)a * b / c);
}

/* floor(sqrt(x)) for 64-bit x, bit by bit: exact and deterministic. */
static uint64_t isqrt64(uint64_t x)
{
	uint64_t res = 0;
	uint64_t bit = 1ull << 62;

	while (bit > x)
		bit >>= 2;
	while (bit != 0) {
		if (x >= res + bit) {
			x -= res + bit;
			res = (res >> 1) + bit;
		} else {
			res >>= 1;
		}
		bit >>= 2;
	}
	return res;
}

void dev_params_default(enum dev_kind kind, struct dev_params *p)
{
	*p = kind == DEV_SSD ? ssd_defaults : hdd_defaults;
}

const char *dev_kind_name(enum dev_kind kind)
{
	return kind == DEV_SSD ? "ssd" : "hdd";
}

static int parse_count(const char *s, unsigned *out)
{
	char *end;
	unsigned long v;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	v = strtoul(s, &end, 10);
	if (*end != '\0' || v < 1 || v > DEV_MAX_HEADS)
		return -EINVAL;
	*out = (unsigned)v;
	return 0;
}

int dev_params_parse(const char *name, struct dev_params *p)
{
	struct dev_params tmp;
	unsigned n;

	if (name == NULL)
		return -EINVAL;
	if (strcmp(name, "hdd") == 0) {
		dev_params_default(DEV_HDD, &tmp);
	} else if (strcmp(name, "ssd") == 0) {
		dev_params_default(DEV_SSD, &tmp);
	} else if (strncmp(name, "raid:", 5) == 0) {
		if (parse_count(name + 5, &n) != 0)
			return -EINVAL;
		dev_params_default(DEV_HDD, &tmp);
		tmp.heads = n;
	} else if (strncmp(name, "ssd:", 4) == 0) {
		if (parse_count(name + 4, &n) != 0)
			return -EINVAL;
		dev_params_default(DEV_SSD, &tmp);
		tmp.heads = n;
	} else {
		return -EINVAL;
	}
	*p = tmp;
	return 0;
}

int dev_params_validate(const struct dev_params *p)
{
	if (p == NULL || (p->kind != DEV_HDD && p->kind != DEV_SSD))
		return -EINVAL;
	if (p->heads < 1 || p->heads > DEV_MAX_HEADS || p->bandwidth == 0)
		return -EINVAL;
	if (p->region_bytes == 0 || p->capacity < p->region_bytes)
		return -EINVAL;
	if (p->placement != DEV_PLACE_SPREAD && p->placement != DEV_PLACE_DIR)
		return -EINVAL;
	/* slot() scales a 32-bit hash by the slot count */
	if (p->capacity / p->region_bytes > UINT32_MAX)
		return -EINVAL;
	if (p->kind == DEV_HDD) {
		if (p->rpm == 0 || p->settle > p->full_stroke)
			return -EINVAL;
	}
	return 0;
}

static void resolve(struct dev_model *dm)
{
	const struct dev_params *p = &dm->params;

	dm->nr_slots = p->capacity / p->region_bytes;
	if (p->kind == DEV_HDD) {
		dm->period = 60ull * NS_PER_S / p->rpm;
		dm->track = p->track_bytes ? p->track_bytes
					   : mul_div(p->bandwidth, dm->period, NS_PER_S);
		if (dm->track == 0)
			dm->track = 1;
	} else {
		dm->period = 0;
		dm->track = 0;
	}
}

struct dev_model *dev_create(const struct dev_params *p)
{
	struct dev_model *dm;

	if (dev_params_validate(p) != 0)
		return NULL;
	dm = calloc(1, sizeof(*dm) + p->heads * sizeof(dm->heads[0]));
	if (dm == NULL)
		return NULL;
	dm->params = *p;
	dm->nr_heads = p->heads;
	resolve(dm);
	return dm;
}

void dev_destroy(struct dev_model *dm)
{
	free(dm);
}

void dev_reset(struct dev_model *dm)
{
	memset(dm->heads, 0, dm->nr_heads * sizeof(dm->heads[0]));
	memset(&dm->last, 0, sizeof(dm->last));
	memset(&dm->stats, 0, sizeof(dm->stats));
}

unsigned dev_depth(const struct dev_model *dm)
{
	return dm->nr_heads;
}

bool dev_rotational(const struct dev_model *dm)
{
	return dm->params.kind == DEV_HDD;
}

const struct dev_params *dev_params_get(const struct dev_model *dm)
{
	return &dm->params;
}

uint64_t dev_position(const struct dev_model *dm, uint64_t file, uint64_t offset)
{
	uint64_t h = (file * FIB_MULT) >> 32; /* top 32 bits of the Fibonacci hash */
	uint64_t slot = (h * dm->nr_slots) >> 32;

	if (dm->params.placement == DEV_PLACE_DIR)
		slot = file % dm->nr_slots;
	return slot * dm->params.region_bytes + offset;
}

static sched_ns transfer_ns(const struct dev_model *dm, uint64_t len)
{
	return mul_div(len, NS_PER_S, dm->params.bandwidth);
}

/* Seek time for a distance [bytes]: settle + span * sqrt(d / capacity), capped at full stroke. */
static sched_ns seek_ns(const struct dev_model *dm, uint64_t dist)
{
	const struct dev_params *p = &dm->params;
	uint64_t cap = p->capacity;
	uint64_t ratio; /* dist / capacity in 32.32 fixed point, <= 2^32 */

	if (dist >= cap)
		return p->full_stroke;
	ratio = mul_div(dist, 1ull << 32, cap);
	/* isqrt(ratio) = sqrt(dist / cap) * 2^16 */
	return p->settle + (((p->full_stroke - p->settle) * isqrt64(ratio)) >> 16);
}

/* Time from `t` until the sector at `pos` passes under the head [ns], in [0, period). */
static sched_ns rotation_ns(const struct dev_model *dm, uint64_t pos, sched_ns t)
{
	sched_ns target = mul_div(pos % dm->track, dm->period, dm->track);
	sched_ns angle = t % dm->period;

	return (target + dm->period - angle) % dm->period;
}

/* Cost of moving head h to pos before transferring: seek part and rotation part. */
/* Returns true if the arm had to move (a real seek). */
static bool hdd_position_cost(const struct dev_model *dm, const struct dev_head *h, uint64_t pos,
			      sched_ns start, sched_ns *seek, sched_ns *rot)
{
	uint64_t dist;

	*seek = 0;
	*rot = 0;
	if (pos == h->pos)
		return false;
	if (pos > h->pos && pos - h->pos < dm->track) {
		/* short forward gap: the platter turns past it, as if read and dropped */
		*seek = transfer_ns(dm, pos - h->pos);
		return false;
	}
	dist = pos > h->pos ? pos - h->pos : h->pos - pos;
	*seek = seek_ns(dm, dist);
	*rot = rotation_ns(dm, pos, start + *seek);
	return true;
}

static unsigned pick_head(const struct dev_model *dm, uint64_t pos, sched_ns now, bool by_dist)
{
	unsigned best = 0;
	sched_ns best_start = SCHED_NS_NEVER;
	uint64_t best_dist = UINT64_MAX;

	for (unsigned i = 0; i < dm->nr_heads; i++) {
		const struct dev_head *h = &dm->heads[i];
		sched_ns start = sched_time_after(h->free_at, now) ? h->free_at : now;
		uint64_t dist = 0;

		if (by_dist)
			dist = pos > h->pos ? pos - h->pos : h->pos - pos;
		if (best_start == SCHED_NS_NEVER || sched_time_after(best_start, start) ||
		    (start == best_start && dist < best_dist)) {
			best = i;
			best_start = start;
			best_dist = dist;
		}
	}
	return best;
}

sched_ns dev_issue(struct dev_model *dm, uint64_t file, uint64_t offset, uint64_t len,
		   int is_write, sched_ns now)
{
	const struct dev_params *p = &dm->params;
	bool hdd = p->kind == DEV_HDD;
	uint64_t pos = dev_position(dm, file, offset);
	struct dev_cost c = {0};
	struct dev_head *h;
	bool seeked = false;

	c.head = pick_head(dm, pos, now, hdd && len != 0);
	h = &dm->heads[c.head];
	c.start = sched_time_after(h->free_at, now) ? h->free_at : now;

	if (len == 0) {
		c.flush = p->flush;
	} else if (hdd) {
		seeked = hdd_position_cost(dm, h, pos, c.start, &c.seek, &c.rotation);
		c.transfer = transfer_ns(dm, len);
		h->pos = pos + len;
	} else {
		c.rotation = is_write ? p->write_latency : p->read_latency;
		c.transfer = transfer_ns(dm, len);
		h->pos = pos + len;
	}
	c.complete = c.start + c.seek + c.rotation + c.transfer + c.flush;
	h->free_at = c.complete;

	dm->stats.ios++;
	dm->stats.bytes += len;
	if (seeked)
		dm->stats.seeks++;
	dm->stats.busy += c.complete - c.start;
	dm->stats.seek_time += c.seek + (hdd ? c.rotation : 0);
	dm->last = c;
	return c.complete;
}

const struct dev_cost *dev_last_cost(const struct dev_model *dm)
{
	return &dm->last;
}

void dev_get_stats(const struct dev_model *dm, struct dev_stats *out)
{
	*out = dm->stats;
}

sched_ns dev_next_free(const struct dev_model *dm)
{
	sched_ns best = dm->heads[0].free_at;

	for (unsigned i = 1; i < dm->nr_heads; i++)
		if (sched_time_after(best, dm->heads[i].free_at))
			best = dm->heads[i].free_at;
	return best;
}
