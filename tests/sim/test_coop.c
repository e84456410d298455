/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * coop: CFQ's close cooperators (reference 2.12). Processes that read one file in interleaved
 * chunks (dump(8), a parallel cp, nfsd threads) each issue one request at a time, and each
 * one's next request lies a few chunks ahead: alone, every one of them reads at 1/N of the
 * disk, and CFQ idling on each in turn keeps the head skipping over the others' chunks. When
 * the active queue empties and another queue's next request starts where the last dispatch
 * ended, CFQ serves that queue instead of idling, and the head moves sequentially.
 *
 * Asserted exactly on the model hdd (deterministic): the interleaved readers' aggregate
 * against one sequential reader of the same disk, also with requests queued in the device;
 * their equal shares; that the cooperators share one slice, so a reader of another file in
 * their group is not starved by the chain; that the rule stays out of the way where it does
 * not apply (sequential readers of one file, other groups, seeky readers, non-rotational
 * devices); and the index's invariants under a mixed load with policy switches.
 */
#include <criterion/criterion.h>
#include <errno.h>

#include "sim_helpers.h"

#define CHUNK (64 * KIB)
#define RUN_S 5 /* [s] under 1 GiB at the model's 120 MB/s: no reader wraps (a wrap puts interleaved
		 * readers out of phase, one chunk apart, as no real reader would be) */

/* N processes reading file 1 together: process i reads chunks i, i + N, i + 2N, ... */
static void add_interleaved(struct sim *s, unsigned n, uint32_t group, uint64_t key0,
			    unsigned *idx)
{
	for (unsigned i = 0; i < n; i++) {
		struct sim_proc_spec ps;

		sim_proc_default(SIM_SEQ_READER, &ps);
		ps.queue_key = key0 + i;
		ps.group = group;
		ps.file = 1;
		ps.req_size = CHUNK;
		ps.chunk = CHUNK;
		ps.offset = i * CHUNK;
		ps.skip = (n - 1) * CHUNK;
		idx[i] = add_proc(s, &ps);
	}
}

/* [bytes/s] of one plain sequential reader of 64 KiB requests on the same device, pausing
 * `think` after each completion. */
static double lone_reader_bw(enum sched_policy pol, const char *dev, sched_ns think)
{
	struct sim *s = mk_sim(pol, dev, 1);
	struct sim_proc_spec ps;
	struct sim_totals t;

	sim_proc_default(SIM_SEQ_READER, &ps);
	ps.file = 1;
	ps.req_size = CHUNK;
	ps.think = think;
	add_proc(s, &ps);
	run_ok(s, RUN_S * SIM_S);
	sim_get_totals(s, &t);
	sim_destroy(s);
	return t.throughput;
}

static double jain(const double *x, unsigned n)
{
	double sum = 0, sq = 0;

	for (unsigned i = 0; i < n; i++) {
		sum += x[i];
		sq += x[i] * x[i];
	}
	return sq > 0 ? sum * sum / (n * sq) : 0;
}

Test(coop, interleaved_readers_read_at_the_speed_of_one_stream)
{
	double lone = lone_reader_bw(SCHED_POLICY_CFQ, "hdd", 0);

	/* up to 6: with 7 others' chunks to skip (448 KiB > CFQ's 400 KiB) each reader is seeky,
	 * and neither the kernel nor cfqfs takes seeky queues as cooperators */
	static const unsigned counts[] = { 2, 3, 4, 6 };

	for (unsigned k = 0; k < 4; k++) {
		unsigned n = counts[k];
		struct sim *s = mk_sim(SCHED_POLICY_CFQ, "hdd", 1);
		struct sched_info si;
		struct sim_totals t;
		unsigned idx[8];
		double share[8];

		add_interleaved(s, n, SCHED_ROOT_GROUP, 100, idx);
		run_ok(s, RUN_S * SIM_S);
		sim_get_totals(s, &t);
		sched_get_info(sim_sched(s), &si);
		for (unsigned i = 0; i < n; i++)
			share[i] = (double)sim_proc_stats(s, idx[i])->bytes;
		cr_log_info("%u interleaved readers: %.1f MB/s against %.1f MB/s for one stream, "
			    "%llu cooperator switches, Jain %.4f", n, t.throughput / 1e6,
			    lone / 1e6, (unsigned long long)si.coop_switches, jain(share, n));
		/* without the rule: about 1/n of one stream (the head skips the others' chunks) */
		cr_expect_geq(t.throughput, 0.95 * lone,
			      "%u interleaved readers got %.1f MB/s, one stream %.1f MB/s", n,
			      t.throughput / 1e6, lone / 1e6);
		cr_expect_gt(si.coop_switches, 0);
		cr_expect_geq(jain(share, n), 0.99, "%u readers: shares not equal", n);
		sim_destroy(s);
	}
}

/*
 * The daemon's executor keeps up to `depth` requests on the device, which serves them in
 * dispatch order (the model with queue_depth > heads, as the emulated disk on a mount), and
 * each process sends its next request a FUSE round trip after its last completed. With two
 * readers started last-first and the other two 1 ms late, the readers must still end up
 * reading at one stream's speed. (The drift between readers that the mount showed, and that
 * close_cooperator()'s order corrects, comes from scheduling noise this model does not have:
 * it_fair_coop measures that on a real mount.)
 */
Test(coop, interleaved_readers_on_a_fifo_device_queue)
{
	struct sim_config cfg;
	double lone = lone_reader_bw(SCHED_POLICY_CFQ, "hdd", 0);

	for (unsigned depth = 4; depth <= 16; depth *= 2) {
		struct sim *s;
		struct sim_totals t;

		sim_config_default(&cfg, SCHED_POLICY_CFQ, "hdd", 1);
		cfg.queue_depth = depth;
		s = mk_sim_cfg(&cfg);
		for (unsigned i = 0; i < 4; i++) {
			struct sim_proc_spec ps;

			sim_proc_default(SIM_SEQ_READER, &ps);
			ps.file = 1;
			ps.req_size = CHUNK;
			ps.chunk = CHUNK;
			ps.offset = i * CHUNK;
			ps.skip = 3 * CHUNK;
			/* the second pair starts 1 ms late: by then the first pair has read on */
			ps.start = i < 2 ? 1000 * SCHED_NS_PER_US : (3 - i) * 10 * SCHED_NS_PER_US;
			ps.think = 100 * SCHED_NS_PER_US; /* the FUSE round trip */
			add_proc(s, &ps);
		}
		run_ok(s, RUN_S * SIM_S);
		sim_get_totals(s, &t);
		cr_log_info("device queue %u: 4 interleaved readers %.1f MB/s, one stream %.1f MB/s",
			    depth, t.throughput / 1e6, lone / 1e6);
		cr_expect_geq(t.throughput, 0.95 * lone, "device queue %u: %.1f MB/s", depth,
			      t.throughput / 1e6);
		sim_destroy(s);
	}
}

/*
 * Two cooperating readers and one reader of another file in the same group: the chain of
 * cooperators shares one slice, so the third reader gets its turns (as beside the kernel's
 * merged queue: two entities, about half each). Handing out a fresh slice at each switch
 * would let the pair keep the disk for as long as they read.
 */
Test(coop, cooperators_share_a_slice_and_do_not_starve_the_group)
{
	struct sim *s = mk_sim(SCHED_POLICY_CFQ, "hdd", 1);
	struct sim_proc_spec ps;
	unsigned pair[2], other;
	double a, b, c;

	add_interleaved(s, 2, SCHED_ROOT_GROUP, 100, pair);
	sim_proc_default(SIM_SEQ_READER, &ps);
	ps.queue_key = 200;
	ps.file = 2;
	ps.req_size = CHUNK;
	other = add_proc(s, &ps);
	run_ok(s, RUN_S * SIM_S);
	a = (double)sim_proc_stats(s, pair[0])->bytes;
	b = (double)sim_proc_stats(s, pair[1])->bytes;
	c = (double)sim_proc_stats(s, other)->bytes;
	cr_log_info("pair %.1f + %.1f MB, other file %.1f MB", a / 1e6, b / 1e6, c / 1e6);
	cr_expect_geq(c / (a + b + c), 0.35, "the third reader got %.1f%% of the bytes",
		      100 * c / (a + b + c));
	cr_expect_leq(c / (a + b + c), 0.65, "the pair got %.1f%% of the bytes",
		      100 * (a + b) / (a + b + c));
	sim_destroy(s);
}

/*
 * Readers that are not interleaved are left to their slices: two sequential readers of one
 * file 2 MiB apart (within reach of each other, CFQQ_CLOSE_THR), and four readers in step on
 * the same offsets (fio's numjobs on one file), against one such reader. Taking the other
 * reader behind as a cooperator would seek between them at every request (about 0.15 and
 * 0.3 of one reader); the core before close cooperators gave 0.92 and 0.94.
 */
Test(coop, sequential_readers_of_one_file_keep_their_slices)
{
	const sched_ns think = 100 * SCHED_NS_PER_US;
	double lone = lone_reader_bw(SCHED_POLICY_CFQ, "hdd", think);
	static const struct {
		unsigned n;
		uint64_t apart;
	} cases[] = { { 2, 2048 * KIB }, { 4, 0 } };

	for (unsigned k = 0; k < 2; k++) {
		struct sim *s = mk_sim(SCHED_POLICY_CFQ, "hdd", 1);
		struct sim_totals t;

		for (unsigned i = 0; i < cases[k].n; i++) {
			struct sim_proc_spec ps;

			sim_proc_default(SIM_SEQ_READER, &ps);
			ps.file = 1;
			ps.req_size = CHUNK;
			ps.offset = i * cases[k].apart;
			ps.think = think;
			add_proc(s, &ps);
		}
		run_ok(s, RUN_S * SIM_S);
		sim_get_totals(s, &t);
		cr_log_info("%u sequential readers %llu KiB apart: %.1f MB/s, one stream %.1f MB/s",
			    cases[k].n, (unsigned long long)(cases[k].apart / KIB),
			    t.throughput / 1e6, lone / 1e6);
		cr_expect_geq(t.throughput, 0.9 * lone, "%u readers %llu KiB apart: %.1f MB/s",
			      cases[k].n, (unsigned long long)(cases[k].apart / KIB),
			      t.throughput / 1e6);
		sim_destroy(s);
	}
}

/* The rule looks only inside the active queue's group: other groups keep their weights. */
Test(coop, cooperators_in_other_groups_are_not_taken)
{
	struct sim *s = mk_sim(SCHED_POLICY_CFQ, "hdd", 1);
	uint32_t g[2] = { add_group(s, SCHED_ROOT_GROUP, 500), add_group(s, SCHED_ROOT_GROUP, 500) };
	struct sched_info si;

	for (unsigned i = 0; i < 2; i++) {
		struct sim_proc_spec ps;

		sim_proc_default(SIM_SEQ_READER, &ps);
		ps.queue_key = 100 + i;
		ps.group = g[i];
		ps.file = 1;
		ps.req_size = CHUNK;
		ps.chunk = CHUNK;
		ps.offset = i * CHUNK;
		ps.skip = CHUNK;
		add_proc(s, &ps);
	}
	run_ok(s, 5 * SIM_S);
	sched_get_info(sim_sched(s), &si);
	cr_expect_eq(si.coop_switches, 0, "a queue of another group was taken as cooperator");
	sim_destroy(s);
}

/* Seeky readers, and any reader of a non-rotational device, are left to the normal rules. */
Test(coop, not_for_seeky_readers_or_non_rotational_devices)
{
	struct sched_info si;
	struct sim *s = mk_sim(SCHED_POLICY_CFQ, "ssd", 1);
	unsigned idx[4];

	add_interleaved(s, 4, SCHED_ROOT_GROUP, 100, idx);
	run_ok(s, 2 * SIM_S);
	sched_get_info(sim_sched(s), &si);
	cr_expect_eq(si.coop_switches, 0, "ssd: %llu switches", (unsigned long long)si.coop_switches);
	sim_destroy(s);

	s = mk_sim(SCHED_POLICY_CFQ, "hdd", 1);
	for (unsigned i = 0; i < 4; i++) {
		struct sim_proc_spec ps;

		sim_proc_default(SIM_RAND_READER, &ps);
		ps.file = 1; /* one file, random offsets: never within reach for long */
		add_proc(s, &ps);
	}
	run_ok(s, 5 * SIM_S);
	sched_get_info(sim_sched(s), &si);
	/* a random offset may land close to the last dispatch by chance, but readers are
	 * seeky after their first few requests and are then never taken */
	cr_expect_leq(si.coop_switches, 8, "seeky readers: %llu switches",
		      (unsigned long long)si.coop_switches);
	sim_destroy(s);
}

/*
 * The cooperator index under everything at once, with sched_check() after every step
 * (mk_sim): interleaved readers of one file in two groups and in the BE and IDLE classes, a
 * buffered writer, an fsync writer, a random reader and an RT interactive reader on that
 * file, and a switch to deadline and back in the middle (the index is rebuilt from nothing).
 */
Test(coop, the_index_keeps_its_invariants_under_a_mixed_load)
{
	struct sim *s = mk_sim(SCHED_POLICY_CFQ, "hdd", 3);
	uint32_t g = add_group(s, SCHED_ROOT_GROUP, 300);
	static const uint8_t classes[] = { SCHED_CLASS_BE, SCHED_CLASS_IDLE, SCHED_CLASS_BE };
	struct sched_info si;
	unsigned idx[4];

	add_interleaved(s, 4, SCHED_ROOT_GROUP, 100, idx);
	for (unsigned i = 0; i < 6; i++) {
		struct sim_proc_spec ps;

		sim_proc_default(SIM_SEQ_READER, &ps);
		ps.queue_key = 200 + i;
		ps.group = i % 2 ? g : SCHED_ROOT_GROUP;
		ps.ioclass = classes[i % 3];
		ps.file = 1;
		ps.req_size = CHUNK;
		ps.chunk = CHUNK;
		ps.offset = (64 + i) * CHUNK;
		ps.skip = 5 * CHUNK;
		ps.depth = 1 + i % 3;
		add_proc(s, &ps);
	}
	for (unsigned k = 0; k < 4; k++) {
		struct sim_proc_spec ps;
		static const enum sim_kind kinds[] = { SIM_BUF_WRITER, SIM_FSYNC_WRITER,
						       SIM_RAND_READER, SIM_INTERACTIVE };

		sim_proc_default(kinds[k], &ps);
		ps.file = 1;
		ps.group = k == 1 ? g : SCHED_ROOT_GROUP;
		if (kinds[k] == SIM_INTERACTIVE) /* an RT reader that thinks between bursts */
			ps.ioclass = SCHED_CLASS_RT;
		add_proc(s, &ps);
	}
	run_ok(s, 1 * SIM_S);
	cr_assert_eq(sched_switch(sim_sched(s), SCHED_POLICY_DEADLINE, sim_now(s)), 0);
	run_ok(s, 1200 * MS);
	cr_assert_eq(sched_switch(sim_sched(s), SCHED_POLICY_CFQ, sim_now(s)), 0);
	run_ok(s, 2 * SIM_S);
	sched_get_info(sim_sched(s), &si);
	cr_expect_gt(si.coop_switches, 0, "no cooperator was served after the switch back");
	sim_destroy(s);
}

Test(coop, skip_spec_is_validated)
{
	struct sim *s = mk_sim(SCHED_POLICY_CFQ, "hdd", 1);
	struct sim_proc_spec ps;

	sim_proc_default(SIM_SEQ_READER, &ps);
	ps.skip = CHUNK;
	cr_assert_eq(sim_add_proc(s, &ps, NULL), -EINVAL, "chunk 0");
	ps.chunk = ps.req_size * 3 / 2;
	cr_assert_eq(sim_add_proc(s, &ps, NULL), -EINVAL, "chunk not a multiple");
	ps.chunk = ps.req_size;
	ps.streams = 2;
	cr_assert_eq(sim_add_proc(s, &ps, NULL), -EINVAL, "skip with cursors");
	ps.streams = 1;
	cr_assert_eq(sim_add_proc(s, &ps, NULL), 0);
	sim_destroy(s);
}
