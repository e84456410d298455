/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sim_helpers.h - small helpers shared by the simulation suites (header-only: each suite is its
 * own binary). Every simulator they create runs sched_check() after every step.
 */
#ifndef CFQFS_TESTS_SIM_HELPERS_H
#define CFQFS_TESTS_SIM_HELPERS_H

#include <criterion/criterion.h>
#include <stdio.h>

#include "device.h"
#include "sched.h"
#include "sim.h"

#define MS SCHED_NS_PER_MS
#define KIB 1024ull

/* A simulator from a prepared configuration (sim_config_default() plus changes), with
 * sched_check() after every step. */
static inline struct sim *mk_sim_cfg(struct sim_config *cfg)
{
	struct sim *s;

	cfg->check = true;
	s = sim_create(cfg);
	cr_assert_not_null(s, "sim_create(%s, depth %u)", sched_policy_name(cfg->policy),
			   cfg->queue_depth);
	return s;
}

static inline struct sim *mk_sim(enum sched_policy policy, const char *dev, uint64_t seed)
{
	struct sim_config cfg;

	sim_config_default(&cfg, policy, dev, seed);
	return mk_sim_cfg(&cfg);
}

static inline void set_tunable(struct sim *s, const char *name, int64_t v)
{
	int ret = sim_set_tunable(s, name, v);

	cr_assert_eq(ret, 0, "tunable %s=%lld: %d", name, (long long)v, ret);
}

static inline int64_t get_tunable(struct sim *s, const char *name)
{
	int64_t v = 0;
	int ret = sched_tunable_get(sim_sched(s), name, &v);

	cr_assert_eq(ret, 0, "tunable %s: %d", name, ret);
	return v;
}

static inline void run_ok(struct sim *s, sched_ns until)
{
	int ret = sim_run(s, until);

	cr_assert_eq(ret, 0, "sim_run to %llu ms: %d (%s)", (unsigned long long)(until / MS), ret,
		     sim_error(s));
}

static inline uint32_t add_group(struct sim *s, uint32_t parent, uint32_t weight)
{
	uint32_t id = 0;
	int ret = sim_add_group(s, parent, weight, weight, &id);

	cr_assert_eq(ret, 0, "group weight %u: %d", weight, ret);
	return id;
}

static inline unsigned add_proc(struct sim *s, const struct sim_proc_spec *ps)
{
	unsigned idx = 0;
	int ret = sim_add_proc(s, ps, &idx);

	cr_assert_eq(ret, 0, "sim_add_proc: %d", ret);
	return idx;
}

/* A greedy sequential reader (one read of `size` bytes in flight, no think time). */
static inline unsigned add_seq_reader_sz(struct sim *s, uint32_t group, uint8_t ioclass,
					 uint8_t level, uint64_t size)
{
	struct sim_proc_spec ps;

	sim_proc_default(SIM_SEQ_READER, &ps);
	ps.req_size = size;
	ps.group = group;
	ps.ioclass = ioclass;
	ps.level = level;
	return add_proc(s, &ps);
}

/* A greedy sequential reader with 128 KiB reads. */
static inline unsigned add_seq_reader(struct sim *s, uint32_t group, uint8_t ioclass,
				      uint8_t level)
{
	return add_seq_reader_sz(s, group, ioclass, level, 128 * KIB);
}

static inline double ms_of(sched_ns t)
{
	return (double)t / 1e6;
}

/* Worst-case service of one I/O of `len` bytes on the default hdd: full-stroke seek, a whole
 * rotation, transfer [ns]. */
static inline sched_ns hdd_worst_io(uint64_t len)
{
	struct dev_params p;

	dev_params_default(DEV_HDD, &p);
	return p.full_stroke + 60ull * 1000000000ull / p.rpm + len * 1000000000ull / p.bandwidth;
}

#endif /* CFQFS_TESTS_SIM_HELPERS_H */
