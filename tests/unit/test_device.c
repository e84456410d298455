/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the device model (scheduler/device.c). */
#include <criterion/criterion.h>
#include <errno.h>

#include "device.h"

#define MS SCHED_NS_PER_MS
#define US SCHED_NS_PER_US
#define KIB 1024ull
#define MIB (1024ull * KIB)

static struct dev_model *make(const char *name)
{
	struct dev_params p;
	struct dev_model *dm;

	cr_assert_eq(dev_params_parse(name, &p), 0, "parse %s", name);
	dm = dev_create(&p);
	cr_assert_not_null(dm);
	return dm;
}

Test(device, parse_names_and_defaults)
{
	struct dev_params p;

	cr_assert_eq(dev_params_parse("hdd", &p), 0);
	cr_assert_eq(p.kind, DEV_HDD);
	cr_assert_eq(p.heads, 1);
	cr_assert_eq(p.rpm, 7200);
	cr_assert_eq(dev_params_parse("ssd", &p), 0);
	cr_assert_eq(p.kind, DEV_SSD);
	cr_assert_eq(p.heads, 16);
	cr_assert_eq(dev_params_parse("raid:4", &p), 0);
	cr_assert_eq(p.kind, DEV_HDD);
	cr_assert_eq(p.heads, 4);
	cr_assert_eq(dev_params_parse("ssd:2", &p), 0);
	cr_assert_eq(p.heads, 2);
	cr_assert_eq(dev_params_parse("raid:0", &p), -EINVAL);
	cr_assert_eq(dev_params_parse("raid:x", &p), -EINVAL);
	cr_assert_eq(dev_params_parse("raid:", &p), -EINVAL);
	cr_assert_eq(dev_params_parse("floppy", &p), -EINVAL);
	cr_assert_eq(dev_params_parse(NULL, &p), -EINVAL);
	p.bandwidth = 0;
	cr_assert_eq(dev_params_validate(&p), -EINVAL);
	cr_assert_null(dev_create(&p));
}

Test(device, depth_and_rotational)
{
	struct dev_model *hdd = make("hdd"), *raid = make("raid:3"), *ssd = make("ssd");

	cr_assert_eq(dev_depth(hdd), 1);
	cr_assert_eq(dev_depth(raid), 3);
	cr_assert_eq(dev_depth(ssd), 16);
	cr_assert(dev_rotational(hdd));
	cr_assert(dev_rotational(raid));
	cr_assert_not(dev_rotational(ssd));
	dev_destroy(hdd);
	dev_destroy(raid);
	dev_destroy(ssd);
}

/* Sequential: after the first I/O, each next one costs exactly its transfer time. */
Test(device, sequential_costs_transfer_only)
{
	struct dev_model *dm = make("hdd");
	sched_ns t = dev_issue(dm, 7, 0, 128 * KIB, 0, 0);
	/* 128 KiB at 120 MB/s = 1.092 ms */
	sched_ns xfer = 128 * KIB * 1000000000ull / 120000000ull;

	for (int i = 1; i < 100; i++) {
		sched_ns done = dev_issue(dm, 7, (uint64_t)i * 128 * KIB, 128 * KIB, 0, t);
		cr_assert_eq(done - t, xfer, "i=%d cost %llu", i, (unsigned long long)(done - t));
		cr_assert_eq(dev_last_cost(dm)->seek, 0);
		cr_assert_eq(dev_last_cost(dm)->rotation, 0);
		t = done;
	}
	dev_destroy(dm);
}

/* 1 MiB sequential transfer time matches the bandwidth (120 MB/s and 250 MB/s). */
Test(device, bandwidth_transfer_time)
{
	struct dev_model *hdd = make("hdd"), *ssd = make("ssd");
	sched_ns t0 = dev_issue(hdd, 1, 0, 4 * KIB, 0, 0);
	sched_ns t1 = dev_issue(hdd, 1, 4 * KIB, 120000000ull, 0, t0);

	cr_assert_eq(t1 - t0, 1000000000ull, "120 MB at 120 MB/s takes 1 s");
	t1 = dev_issue(ssd, 1, 0, 250000, 0, 0);
	cr_assert_eq(t1, 100 * US + 1 * MS, "100 us latency + 250 kB at 250 MB/s");
	dev_destroy(hdd);
	dev_destroy(ssd);
}

/* Random 4 KiB reads across files: ~8 ms average seek + ~4.2 ms rotation, and far costlier than
 * sequential 4 KiB reads. */
Test(device, random_costs_seek_and_rotation)
{
	struct dev_model *dm = make("hdd");
	uint64_t x = 12345;
	sched_ns t = 0, seek = 0, rot = 0;
	const int n = 4000;

	for (int i = 0; i < n; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		sched_ns done = dev_issue(dm, (x >> 33) % 4096, 0, 4 * KIB, 0, t);
		seek += dev_last_cost(dm)->seek;
		rot += dev_last_cost(dm)->rotation;
		t = done;
	}
	seek /= n;
	rot /= n;
	cr_assert(seek > 7 * MS && seek < 10 * MS, "avg seek %llu ns", (unsigned long long)seek);
	cr_assert(rot > 3500 * US && rot < 4800 * US, "avg rotation %llu ns",
		  (unsigned long long)rot);
	dev_destroy(dm);
}

Test(device, seek_grows_with_distance)
{
	struct dev_model *dm = make("hdd");
	sched_ns prev = 0;

	/* backward jumps from a far position, growing distance: seek part must not decrease */
	for (uint64_t d = 2 * MIB; d < (1ull << 42); d *= 4) {
		dev_reset(dm);
		dev_issue(dm, 0, (1ull << 42), 4 * KIB, 0, 0);
		dev_issue(dm, 0, (1ull << 42) - d, 4 * KIB, 0, 1000 * MS);
		sched_ns s = dev_last_cost(dm)->seek;
		cr_assert(s >= prev, "d=%llu seek %llu < %llu", (unsigned long long)d,
			  (unsigned long long)s, (unsigned long long)prev);
		cr_assert(s >= dev_params_get(dm)->settle);
		cr_assert(s <= dev_params_get(dm)->full_stroke);
		prev = s;
	}
	/* a short forward gap only costs the time the platter takes to pass it */
	dev_reset(dm);
	dev_issue(dm, 3, 0, 4 * KIB, 0, 0);
	dev_issue(dm, 3, 8 * KIB, 4 * KIB, 0, 1000 * MS);
	cr_assert_eq(dev_last_cost(dm)->rotation, 0);
	cr_assert(dev_last_cost(dm)->seek < 100 * US);
	dev_destroy(dm);
}

/* Distinct small file ids get distinct, far-apart regions; offsets are contiguous within one. */
Test(device, file_regions)
{
	struct dev_model *dm = make("hdd");
	uint64_t region = dev_params_get(dm)->region_bytes;

	for (uint64_t a = 0; a < 200; a++) {
		cr_assert_eq(dev_position(dm, a, 12345) - dev_position(dm, a, 0), 12345);
		for (uint64_t b = a + 1; b < 200; b++) {
			uint64_t pa = dev_position(dm, a, 0), pb = dev_position(dm, b, 0);
			uint64_t d = pa > pb ? pa - pb : pb - pa;
			cr_assert(d >= region, "files %llu and %llu share a region",
				  (unsigned long long)a, (unsigned long long)b);
		}
	}
	dev_destroy(dm);
}

/* DEV_PLACE_DIR: consecutive ids in adjacent regions (one directory), so switching between
 * neighbouring files is a short seek, far shorter than between hashed (spread) files. */
Test(device, dir_placement_is_adjacent)
{
	struct dev_params p;
	struct dev_model *dir, *spread;
	sched_ns s_dir, s_spread;

	cr_assert_eq(dev_params_parse("hdd", &p), 0);
	cr_assert_eq(p.placement, DEV_PLACE_SPREAD, "the default keeps hashed placement");
	spread = dev_create(&p);
	p.placement = DEV_PLACE_DIR;
	dir = dev_create(&p);
	cr_assert(dir != NULL && spread != NULL);
	for (uint64_t f = 1; f < 64; f++)
		cr_assert_eq(dev_position(dir, f + 1, 0) - dev_position(dir, f, 0), p.region_bytes);
	cr_assert_eq(dev_position(dir, 5, 777) - dev_position(dir, 5, 0), 777);
	dev_issue(dir, 1, 0, 128 * KIB, 0, 0);
	dev_issue(dir, 2, 128 * KIB, 128 * KIB, 0, 100 * MS);
	s_dir = dev_last_cost(dir)->seek;
	dev_issue(spread, 1, 0, 128 * KIB, 0, 0);
	dev_issue(spread, 2, 128 * KIB, 128 * KIB, 0, 100 * MS);
	s_spread = dev_last_cost(spread)->seek;
	cr_assert(s_dir < 2 * MS, "neighbour seek %llu ns", (unsigned long long)s_dir);
	cr_assert(s_spread > 3 * s_dir, "spread %llu vs dir %llu", (unsigned long long)s_spread,
		  (unsigned long long)s_dir);
	p.placement = (enum dev_placement)7;
	cr_assert_eq(dev_params_validate(&p), -EINVAL);
	dev_destroy(dir);
	dev_destroy(spread);
}

/* A busy head delays the next I/O; N heads serve N I/Os in parallel. */
Test(device, multi_head_parallelism)
{
	struct dev_model *one = make("hdd"), *four = make("raid:4");
	sched_ns end1 = 0, end4 = 0;

	for (uint64_t f = 0; f < 4; f++) {
		sched_ns d1 = dev_issue(one, 10 + f, 0, 1 * MIB, 0, 0);
		sched_ns d4 = dev_issue(four, 10 + f, 0, 1 * MIB, 0, 0);
		cr_assert_eq(dev_last_cost(four)->head, f, "free heads are taken in order");
		end1 = d1 > end1 ? d1 : end1;
		end4 = d4 > end4 ? d4 : end4;
	}
	cr_assert(end4 * 3 < end1, "4 heads: %llu vs 1 head: %llu", (unsigned long long)end4,
		  (unsigned long long)end1);
	/* an I/O issued while every head is busy starts when the first frees */
	sched_ns first_free = dev_next_free(four);
	dev_issue(four, 99, 0, 4 * KIB, 0, 0);
	cr_assert_eq(dev_last_cost(four)->start, first_free);
	/* a sequential stream stays on its head when several are free */
	dev_issue(four, 12, 1 * MIB, 4 * KIB, 0, 10000 * MS);
	cr_assert_eq(dev_last_cost(four)->head, 2);
	cr_assert_eq(dev_last_cost(four)->seek, 0);
	dev_destroy(one);
	dev_destroy(four);
}

/* SSD: the same cost wherever the I/O lands; writes cheaper than reads; depth units. */
Test(device, ssd_flat_latency)
{
	struct dev_model *dm = make("ssd");
	sched_ns t = 0;
	sched_ns first = dev_issue(dm, 1, 0, 4 * KIB, 0, t) - t;

	for (uint64_t i = 0; i < 64; i++) {
		t += 10 * MS;
		sched_ns c = dev_issue(dm, i * 7919, (i * 104729) % (1ull << 30), 4 * KIB, 0, t) - t;
		cr_assert_eq(c, first);
	}
	t += 10 * MS;
	cr_assert_eq(dev_issue(dm, 5, 0, 4 * KIB, 1, t) - t, 30 * US + 4 * KIB * 4);
	/* 16 units: 16 I/Os at once finish together, the 17th waits */
	t += 10 * MS;
	for (int i = 0; i < 16; i++)
		cr_assert_eq(dev_issue(dm, 1, 0, 4 * KIB, 0, t), t + first);
	cr_assert_eq(dev_issue(dm, 1, 0, 4 * KIB, 0, t), t + 2 * first);
	dev_destroy(dm);
}

Test(device, flush_cost)
{
	struct dev_model *dm = make("hdd");
	sched_ns t = dev_issue(dm, 1, 0, 4 * KIB, 1, 0);
	sched_ns f = dev_issue(dm, 1, 0, 0, 1, t);

	cr_assert_eq(f - t, dev_params_get(dm)->flush);
	/* the flush does not move the head */
	dev_issue(dm, 1, 4 * KIB, 4 * KIB, 1, f);
	cr_assert_eq(dev_last_cost(dm)->seek, 0);
	dev_destroy(dm);
}

static uint64_t run_trace(const char *name)
{
	struct dev_model *dm = make(name);
	uint64_t x = 99, h = 1469598103934665603ull;
	sched_ns t = 0;

	for (int i = 0; i < 1000; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		sched_ns done = dev_issue(dm, (x >> 40) % 8, (x >> 20) % (1ull << 30), 4096 << (i % 5),
					  i & 1, t);
		h = (h ^ done) * 1099511628211ull;
		t += (x >> 50) % (3 * MS);
	}
	dev_destroy(dm);
	return h;
}

Test(device, deterministic)
{
	cr_assert_eq(run_trace("hdd"), run_trace("hdd"));
	cr_assert_eq(run_trace("raid:3"), run_trace("raid:3"));
	cr_assert_eq(run_trace("ssd"), run_trace("ssd"));
	cr_assert_neq(run_trace("hdd"), run_trace("ssd"));
}
