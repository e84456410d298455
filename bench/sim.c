/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sim.c - bench/sim: the classic CFQ experiments of the kernel mailing lists (2009-2014),
 * replayed on the deterministic simulator (scheduler/sim.h) so that anyone can ask "what would
 * slice_idle=0 or target_latency=600 do to this workload" in seconds, with no disk and no root.
 *
 * Each experiment runs one simulation per column (a policy plus tunables), collects figures
 * into a table printed in the mmtests compare style (first column the baseline, every cell the
 * absolute figure and its % difference against the baseline) and then checks the direction the
 * kernel developers reported. Hard checks are the directions the issue names as kernel results;
 * a contradiction makes the program exit 1. Soft checks (directions the posts suggest but the
 * model only approximates, or results that are ours, not the kernel's) are printed only.
 *
 * Workload parameters come from the posts (thread counts, request and file sizes); where a
 * post does not say, the choice is written next to the code and in `--help`.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "device.h"
#include "sched.h"
#include "sim.h"

#define KIB 1024ull
#define MIB (1024ull * KIB)
#define MS SCHED_NS_PER_MS

#define MAX_COLS 8
#define MAX_ROWS 40
#define LABEL_LEN 64
#define COL_LEN 24
#define CELL_W 21 /* "%10.2f (%7.2f%%)" */

/* ---------------------------------------------------------------------------------------- */
/* Options and run-wide state */

struct opts {
	uint64_t seed;		/* workload PRNG seed */
	const char *dev;	/* --device, NULL = each experiment's default */
	double duration;	/* [s] simulated per run; 0 = each experiment's default */
	bool quick;		/* short runs (the ctest entry) */
	const char *csv_dir;	/* write <dir>/<experiment>.csv when set */
	bool check;		/* sched_check() after every simulation step (slow) */
	const char *trace_dir;	/* --trace: write each run's decision trace there */
	const char *exp_name;	/* the experiment running (for trace file names) */
};

/* Verdicts collected over the whole invocation. */
struct verdicts {
	unsigned hard_ok;	/* hard checks that matched the kernel direction */
	unsigned hard_bad;	/* hard checks that contradicted it */
	unsigned soft_ok;	/* informational checks that matched */
	unsigned soft_bad;	/* informational checks that did not */
	char bad[16][160];	/* the first hard contradictions, for the summary */
};

static struct verdicts V;

__attribute__((noreturn, format(printf, 1, 2))) static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("sim: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

/* Prints one direction check. hard: a contradiction of a kernel-reported direction. */
__attribute__((format(printf, 3, 4))) static void verdict(bool hard, bool ok, const char *fmt,
							   ...)
{
	char msg[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	printf("  %-10s %s\n", ok ? "[match]" : hard ? "[MISMATCH]" : "[differs]", msg);
	if (hard && ok) {
		V.hard_ok++;
	} else if (hard) {
		if (V.hard_bad < sizeof(V.bad) / sizeof(V.bad[0]))
			snprintf(V.bad[V.hard_bad], sizeof(V.bad[0]), "%s", msg);
		V.hard_bad++;
	} else if (ok) {
		V.soft_ok++;
	} else {
		V.soft_bad++;
	}
}

static double pct(double v, double base)
{
	return base != 0.0 ? (v - base) / fabs(base) * 100.0 : 0.0;
}

/* ---------------------------------------------------------------------------------------- */
/* Tables (mmtests compare style) */

struct row {
	char label[LABEL_LEN];
	int prec;		 /* decimals; < 0: a category (0 decimals, no % difference) */
	double v[MAX_COLS];	 /* value per column */
	bool have[MAX_COLS];	 /* column filled */
};

/* Invariants: ncols <= MAX_COLS, nrows <= MAX_ROWS; column 0 is the baseline. */
struct table {
	const char *name;	 /* experiment name: CSV file name */
	char title[128];	 /* printed above the label column */
	unsigned ncols;
	char col[MAX_COLS][COL_LEN];
	unsigned nrows;
	struct row rows[MAX_ROWS];
};

static void tab_init(struct table *t, const char *name, const char *dev, double secs,
		     uint64_t seed)
{
	memset(t, 0, sizeof(*t));
	t->name = name;
	snprintf(t->title, sizeof(t->title), "%s (%s, %g s simulated, seed %llu)", name, dev, secs,
		 (unsigned long long)seed);
}

__attribute__((format(printf, 2, 3))) static unsigned tab_col(struct table *t, const char *fmt,
							      ...)
{
	va_list ap;

	if (t->ncols == MAX_COLS)
		die("table %s: too many columns", t->name);
	va_start(ap, fmt);
	vsnprintf(t->col[t->ncols], COL_LEN, fmt, ap);
	va_end(ap);
	return t->ncols++;
}

/* Sets row `label` (created on first use, in order of first use) at column c. */
static void tab_put(struct table *t, unsigned c, const char *label, int prec, double v)
{
	struct row *r = NULL;

	for (unsigned i = 0; i < t->nrows; i++)
		if (strcmp(t->rows[i].label, label) == 0)
			r = &t->rows[i];
	if (r == NULL) {
		if (t->nrows == MAX_ROWS)
			die("table %s: too many rows", t->name);
		r = &t->rows[t->nrows++];
		snprintf(r->label, sizeof(r->label), "%s", label);
		r->prec = prec;
	}
	r->v[c] = v;
	r->have[c] = true;
}

/* The value of row `label` at column c; NAN if missing. */
static double tab_get(const struct table *t, unsigned c, const char *label)
{
	for (unsigned i = 0; i < t->nrows; i++)
		if (strcmp(t->rows[i].label, label) == 0)
			return t->rows[i].have[c] ? t->rows[i].v[c] : NAN;
	return NAN;
}

static void tab_print(const struct table *t)
{
	size_t w = strlen(t->title);

	for (unsigned i = 0; i < t->nrows; i++)
		if (strlen(t->rows[i].label) > w)
			w = strlen(t->rows[i].label);
	printf("\n%-*s", (int)w, t->title);
	for (unsigned c = 0; c < t->ncols; c++)
		printf(" %*s", CELL_W, t->col[c]);
	putchar('\n');
	for (unsigned i = 0; i < t->nrows; i++) {
		const struct row *r = &t->rows[i];

		printf("%-*s", (int)w, r->label);
		for (unsigned c = 0; c < t->ncols; c++) {
			if (!r->have[c]) {
				printf(" %*s", CELL_W, "-");
			} else if (r->prec < 0 || !r->have[0] || r->v[0] == 0.0) {
				printf(" %10.*f (%7s )", r->prec < 0 ? 0 : r->prec, r->v[c], "-");
			} else {
				printf(" %10.*f (%7.2f%%)", r->prec, r->v[c], pct(r->v[c], r->v[0]));
			}
		}
		putchar('\n');
	}
}

/* <dir>/<name>.csv: "metric,<col>,..." then one line per row; empty cell = not measured. */
static void tab_csv(const struct table *t, const char *dir)
{
	char path[4096];
	FILE *f;

	if (dir == NULL)
		return;
	snprintf(path, sizeof(path), "%s/%s.csv", dir, t->name);
	f = fopen(path, "w");
	if (f == NULL)
		die("cannot write %s: %s", path, strerror(errno));
	fputs("metric", f);
	for (unsigned c = 0; c < t->ncols; c++)
		fprintf(f, ",\"%s\"", t->col[c]);
	fputc('\n', f);
	for (unsigned i = 0; i < t->nrows; i++) {
		fprintf(f, "\"%s\"", t->rows[i].label);
		for (unsigned c = 0; c < t->ncols; c++) {
			if (t->rows[i].have[c])
				fprintf(f, ",%.6g", t->rows[i].v[c]);
			else
				fputc(',', f);
		}
		fputc('\n', f);
	}
	if (fclose(f) != 0)
		die("cannot write %s", path);
}

/* ---------------------------------------------------------------------------------------- */
/* Simulation helpers: every failure is fatal for a benchmark (exit 2). */

/* [count] command slots of a SATA NCQ disk (31 tags): I/Os the host may keep on the disk */
#define NCQ_DEPTH 31

/* A simulator on device `dev` with files placed as `place` says (device.h, "Address space")
 * and `qd` I/Os kept on the device (sim_config.queue_depth; 0 = one per head). */
static struct sim *mk_sim_full(const struct opts *o, enum sched_policy pol, const char *dev,
			       enum dev_placement place, unsigned qd)
{
	struct sim_config cfg;
	struct sim *s;

	sim_config_default(&cfg, pol, dev, o->seed);
	cfg.check = o->check;
	cfg.dev.placement = place;
	cfg.queue_depth = qd;
	s = sim_create(&cfg);
	if (s == NULL)
		die("sim_create(%s, %s) failed", sched_policy_name(pol), dev);
	if (o->trace_dir && sched_trace_resize(sim_sched(s), SCHED_TRACE_MAX) != 0)
		die("--trace: out of memory");
	return s;
}

/*
 * Ends a run: with --trace, first writes its decision trace (the newest SCHED_TRACE_MAX
 * records) to DIR/EXPERIMENT-N.trace, N counting the runs of the invocation, with a header
 * naming the policy and every tunable, so each file says which column it was.
 */
static void sim_done(const struct opts *o, struct sim *s, const char *dev)
{
	static unsigned runs;
	struct sched *sd = sim_sched(s);
	enum sched_policy pol = sched_policy(sd);
	struct sched_trace_rec *r;
	char path[4096], detail[128];
	uint64_t pos = 0;
	size_t n;
	FILE *f;

	if (!o->trace_dir) {
		sim_destroy(s);
		return;
	}
	snprintf(path, sizeof(path), "%s/%s-%u.trace", o->trace_dir, o->exp_name, ++runs);
	r = malloc(SCHED_TRACE_MAX * sizeof(*r));
	f = fopen(path, "w");
	if (!r || !f)
		die("--trace: %s: %s", path, strerror(errno));
	n = sched_trace_read(sd, &pos, r, SCHED_TRACE_MAX);
	fprintf(f, "# bench/sim %s run %u: %s on %s, seed %llu;", o->exp_name, runs,
		sched_policy_name(pol), dev, (unsigned long long)o->seed);
	for (const struct sched_tunable_desc *d = sched_tunables(pol); d->name; d++) {
		int64_t v;

		if (sched_tunable_get(sd, d->name, &v) == 0)
			fprintf(f, " %s=%lld", d->name, (long long)v);
	}
	fprintf(f, "\n# %zu records kept, %llu written, %llu overwritten\n", n,
		(unsigned long long)sched_trace_total(sd),
		(unsigned long long)(sched_trace_total(sd) - n));
	fputs("# time_s event queue kind group detail\n", f);
	for (size_t i = 0; i < n; i++) {
		sched_trace_detail(&r[i], detail, sizeof(detail));
		fprintf(f, "%llu.%09llu %s %llu %s %u%s\n",
			(unsigned long long)(r[i].time / 1000000000u),
			(unsigned long long)(r[i].time % 1000000000u),
			sched_trace_event_name(r[i].event), (unsigned long long)r[i].queue_key,
			r[i].sync ? "sync" : "async", r[i].group, detail);
	}
	if (ferror(f) | fclose(f)) /* both, always: fclose() also frees f */
		die("--trace: writing %s failed", path);
	free(r);
	sim_destroy(s);
}

static struct sim *mk_sim_place(const struct opts *o, enum sched_policy pol, const char *dev,
				enum dev_placement place)
{
	return mk_sim_full(o, pol, dev, place, 0);
}

static struct sim *mk_sim_qd(const struct opts *o, enum sched_policy pol, const char *dev,
			     unsigned qd)
{
	return mk_sim_full(o, pol, dev, DEV_PLACE_SPREAD, qd);
}

/* The device model's default placement: unrelated files, far apart. */
static struct sim *mk_sim(const struct opts *o, enum sched_policy pol, const char *dev)
{
	return mk_sim_place(o, pol, dev, DEV_PLACE_SPREAD);
}

static void tun(struct sim *s, const char *name, int64_t v)
{
	int ret = sim_set_tunable(s, name, v);

	if (ret != 0)
		die("tunable %s=%lld: %s", name, (long long)v, strerror(-ret));
}

static uint32_t add_group(struct sim *s, uint32_t weight)
{
	uint32_t id = 0;
	int ret = sim_add_group(s, SCHED_ROOT_GROUP, weight, weight, &id);

	if (ret != 0)
		die("group weight %u: %s", weight, strerror(-ret));
	return id;
}

static unsigned add_proc(struct sim *s, const struct sim_proc_spec *ps)
{
	unsigned idx = 0;
	int ret = sim_add_proc(s, ps, &idx);

	if (ret != 0)
		die("sim_add_proc(kind %d): %s", (int)ps->kind, strerror(-ret));
	return idx;
}

static void run_to(struct sim *s, sched_ns t)
{
	int ret = sim_run(s, t);

	if (ret != 0)
		die("sim_run: %s (%s)", strerror(-ret), sim_error(s));
}

static sched_ns ns_of(double secs)
{
	return (sched_ns)(secs * 1e9);
}

static double ms_of(sched_ns t)
{
	return (double)t / 1e6;
}

/* A process spec: kind defaults, then request size, depth and group. */
static void spec(struct sim_proc_spec *ps, enum sim_kind kind, uint64_t req, unsigned depth,
		 uint32_t group)
{
	sim_proc_default(kind, ps);
	ps->req_size = req;
	ps->depth = depth;
	ps->group = group;
}

/* Bytes completed by processes [first, first + n) [bytes]. */
static uint64_t procs_bytes(const struct sim *s, unsigned first, unsigned n)
{
	uint64_t b = 0;

	for (unsigned i = first; i < first + n; i++)
		b += sim_proc_stats(s, i)->bytes;
	return b;
}

/* Max request latency over processes [first, first + n) [ns]. */
static sched_ns procs_max_lat(const struct sim *s, unsigned first, unsigned n)
{
	sched_ns m = 0;

	for (unsigned i = first; i < first + n; i++)
		if (sim_proc_stats(s, i)->lat.max > m)
			m = sim_proc_stats(s, i)->lat.max;
	return m;
}

/* Mean request latency over processes [first, first + n) [ns]. */
static double procs_mean_lat(const struct sim *s, unsigned first, unsigned n)
{
	double sum = 0;
	uint64_t cnt = 0;

	for (unsigned i = first; i < first + n; i++) {
		sum += (double)sim_proc_stats(s, i)->lat.sum;
		cnt += sim_proc_stats(s, i)->lat.total;
	}
	return cnt ? sum / (double)cnt : 0.0;
}

/* I/Os the device serves at once (hdd heads / ssd units). */
static unsigned dev_depth_of(const char *dev)
{
	struct dev_params p;

	if (dev_params_parse(dev, &p) != 0)
		die("bad device %s", dev);
	return p.heads;
}

static bool dev_rotational_name(const char *dev)
{
	struct dev_params p;

	return dev_params_parse(dev, &p) == 0 && p.kind == DEV_HDD;
}

/* Which device an experiment runs on: --device, else its own default. */
static const char *dev_for(const struct opts *o, const char *def)
{
	return o->dev != NULL ? o->dev : def;
}

/* Simulated seconds per run: --duration, else the experiment's default (or quick) length. */
static double secs_for(const struct opts *o, double def, double quick)
{
	if (o->duration > 0)
		return o->duration;
	return o->quick ? quick : def;
}

/* ---------------------------------------------------------------------------------------- */
/* 1. seqread-threads: tiobench SeqRead, target_latency 300 vs 600, deadline, noop
 *    (Gorman 2014, seed 000). tiobench threads read their own file sequentially in 4 KiB
 *    read() calls; readahead turns that into 128 KiB requests with the next window in flight
 *    while the current one is consumed: modelled as 128 KiB reads, 2 in flight, no think time.
 *    tiobench creates its threads' files one after the other in one directory: DEV_PLACE_DIR. */

#define SEQ_THREADS_N 5
static const unsigned seq_threads[SEQ_THREADS_N] = {1, 2, 4, 8, 16};

struct cfgcol {
	const char *name;	  /* column header */
	enum sched_policy pol;
	const char *tun[4];	  /* tunable names, NULL-terminated */
	int64_t val[4];
};

static void apply(struct sim *s, const struct cfgcol *cc)
{
	for (unsigned i = 0; i < 4 && cc->tun[i] != NULL; i++)
		tun(s, cc->tun[i], cc->val[i]);
}

static int exp_seqread_threads(const struct opts *o)
{
	static const struct cfgcol cols[] = {
		{"cfq-300", SCHED_POLICY_CFQ, {"target_latency", NULL}, {300}},
		{"cfq-600", SCHED_POLICY_CFQ, {"target_latency", NULL}, {600}},
		{"deadline", SCHED_POLICY_DEADLINE, {NULL}, {0}},
		{"noop", SCHED_POLICY_NOOP, {NULL}, {0}},
	};
	const char *dev = dev_for(o, "hdd");
	double secs = secs_for(o, 20, 3);
	struct table t;

	tab_init(&t, "seqread-threads", dev, secs, o->seed);
	for (unsigned c = 0; c < sizeof(cols) / sizeof(cols[0]); c++) {
		double qsum = 0, qmax = 0, await_sum = 0;
		sched_ns lmax = 0;

		tab_col(&t, "%s", cols[c].name);
		for (unsigned k = 0; k < SEQ_THREADS_N; k++) {
			struct sim *s = mk_sim_place(o, cols[c].pol, dev, DEV_PLACE_DIR);
			unsigned n = seq_threads[k];
			struct sim_totals tot;
			char label[LABEL_LEN];

			apply(s, &cols[c]);
			for (unsigned i = 0; i < n; i++) {
				struct sim_proc_spec ps;

				spec(&ps, SIM_SEQ_READER, 128 * KIB, 2, SCHED_ROOT_GROUP);
				add_proc(s, &ps);
			}
			run_to(s, ns_of(secs));
			sim_get_totals(s, &tot);
			snprintf(label, sizeof(label), "SeqRead MB/s %2u thread%s", n,
				 n == 1 ? "" : "s");
			tab_put(&t, c, label, 2, (double)procs_bytes(s, 0, n) / secs / 1e6);
			qsum += tot.avgqu_sz;
			if (tot.avgqu_sz > qmax)
				qmax = tot.avgqu_sz;
			await_sum += tot.await_ms;
			if (procs_max_lat(s, 0, n) > lmax)
				lmax = procs_max_lat(s, 0, n);
			sim_done(o, s, dev);
		}
		tab_put(&t, c, "Mean avgqz", 2, qsum / SEQ_THREADS_N);
		tab_put(&t, c, "Mean await ms (= r_await)", 2, await_sum / SEQ_THREADS_N);
		tab_put(&t, c, "Max avgqz", 2, qmax);
		tab_put(&t, c, "Max r_await ms", 2, ms_of(lmax));
	}
	tab_print(&t);
	tab_csv(&t, o->csv_dir);
	printf("  notes: read-only phase of tiobench, so w_await has no figure; iostat means are\n"
	       "         the mean over the five thread counts, maxima the max over them.\n");
	{
		double a8 = tab_get(&t, 0, "SeqRead MB/s  8 threads");
		double b8 = tab_get(&t, 1, "SeqRead MB/s  8 threads");
		double a16 = tab_get(&t, 0, "SeqRead MB/s 16 threads");
		double b16 = tab_get(&t, 1, "SeqRead MB/s 16 threads");
		double a2 = tab_get(&t, 0, "SeqRead MB/s  2 threads");
		double b2 = tab_get(&t, 1, "SeqRead MB/s  2 threads");

		verdict(true, b16 > a16,
			"target_latency 600 raises 16-thread SeqRead: %+.1f%% (kernel +12.2%%)",
			pct(b16, a16));
		verdict(true, b8 >= a8,
			"target_latency 600 does not lower 8-thread SeqRead: %+.1f%% (kernel +8.4%%)",
			pct(b8, a8));
		verdict(false, fabs(pct(b2, a2)) < 3.0,
			"2 threads nearly unchanged: %+.1f%% (kernel +0.4%%)", pct(b2, a2));
		verdict(false, pct(b16, a16) > pct(b8, a8),
			"the gain grows with the thread count: 8 -> %+.1f%%, 16 -> %+.1f%%",
			pct(b8, a8), pct(b16, a16));
	}
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* 2. low-latency: 32 random readers and 32 sequential readers, low_latency 0 vs 1
 *    (Zoccolo 2009, seed 002; the adaptive slice became low_latency). The fio job file is not
 *    in the post: random readers read 4 KiB at random offsets of their own 1 GiB file, one in
 *    flight; sequential readers read their own file in 128 KiB readahead-sized requests, one in
 *    flight. The kernel's "before" is low_latency 0, so it is the baseline column. */

#define LL_READERS 32

static int exp_low_latency(const struct opts *o)
{
	const char *dev = dev_for(o, "hdd");
	double secs = secs_for(o, 20, 4);
	unsigned ncols = dev_rotational_name(dev) ? 4 : 2;
	struct table t;

	tab_init(&t, "low-latency", dev, secs, o->seed);
	/*
	 * Columns 0 and 1: fio lays out its 32 job files one after the other in one directory,
	 * so they sit next to each other on the platter (DEV_PLACE_DIR: 1 GiB apart, a queue
	 * switch costs a ~1 ms seek plus rotation). Columns 2 and 3 (rotational devices only):
	 * the same runs with the files scattered over the disk (the model's default placement,
	 * ~0.6 of the stroke apart): what the figures were before the placement was modelled,
	 * kept as the diagnosis of how much of the cost is the switch seek.
	 */
	for (unsigned c = 0; c < ncols; c++) {
		int ll = (int)(c % 2);
		enum dev_placement place = c >= 2 ? DEV_PLACE_SPREAD : DEV_PLACE_DIR;

		tab_col(&t, "low_latency=%d%s", ll, c >= 2 ? " spread" : "");
		for (int seq = 0; seq <= 1; seq++) {
			struct sim *s = mk_sim_place(o, SCHED_POLICY_CFQ, dev, place);
			const char *kind = seq ? "seq" : "rand";
			char label[LABEL_LEN];

			tun(s, "low_latency", ll);
			for (unsigned i = 0; i < LL_READERS; i++) {
				struct sim_proc_spec ps;

				spec(&ps, seq ? SIM_SEQ_READER : SIM_RAND_READER,
				     seq ? 128 * KIB : 4 * KIB, 1, SCHED_ROOT_GROUP);
				add_proc(s, &ps);
			}
			run_to(s, ns_of(secs));
			snprintf(label, sizeof(label), "32 %s readers KB/s", kind);
			tab_put(&t, c, label, 1,
				(double)procs_bytes(s, 0, LL_READERS) / secs / 1e3);
			snprintf(label, sizeof(label), "32 %s readers max latency ms", kind);
			tab_put(&t, c, label, 1, ms_of(procs_max_lat(s, 0, LL_READERS)));
			snprintf(label, sizeof(label), "32 %s readers mean latency ms", kind);
			tab_put(&t, c, label, 1, procs_mean_lat(s, 0, LL_READERS) / 1e6);
			{
				struct sim_totals tot;

				sim_get_totals(s, &tot);
				snprintf(label, sizeof(label), "32 %s readers queue switches/s", kind);
				tab_put(&t, c, label, 1, (double)tot.switches / secs);
			}
			sim_done(o, s, dev);
		}
	}
	tab_print(&t);
	tab_csv(&t, o->csv_dir);
	printf("  notes: files adjacent (one directory): a queue switch is a ~1 ms seek plus\n"
	       "         rotation (~5 ms); the low_latency slice is max(300/32, 2 x slice_idle)\n"
	       "         = 16 ms (~1.9 MB at 120 MB/s). \"spread\" columns: the files scattered\n"
	       "         over the disk (~15 ms per switch); a diagnosis, not a hard check.\n");
	{
		double sb0 = tab_get(&t, 0, "32 seq readers KB/s");
		double sb1 = tab_get(&t, 1, "32 seq readers KB/s");
		double sl0 = tab_get(&t, 0, "32 seq readers max latency ms");
		double sl1 = tab_get(&t, 1, "32 seq readers max latency ms");
		double rb0 = tab_get(&t, 0, "32 rand readers KB/s");
		double rb1 = tab_get(&t, 1, "32 rand readers KB/s");
		double rl0 = tab_get(&t, 0, "32 rand readers max latency ms");
		double rl1 = tab_get(&t, 1, "32 rand readers max latency ms");

		verdict(true, sl1 * 2.0 <= sl0,
			"32 seq readers: low_latency cuts max latency %.1fx (kernel 3.78 s -> 1.12 s: "
			"3.4x)", sl1 > 0 ? sl0 / sl1 : 0.0);
		verdict(true, sb1 < sb0, "32 seq readers: low_latency costs bandwidth: %+.1f%% "
			"(kernel -13%%)", pct(sb1, sb0));
		verdict(true, sb1 >= 0.75 * sb0,
			"32 seq readers: the bandwidth loss is modest (<= 25%%): %+.1f%% (kernel 28.1 "
			"-> 24.4 MB/s: -13%%)", pct(sb1, sb0));
		if (ncols == 4) {
			double pb0 = tab_get(&t, 2, "32 seq readers KB/s");
			double pb1 = tab_get(&t, 3, "32 seq readers KB/s");

			verdict(false, pb1 < 0.75 * pb0,
				"  files scattered over the disk cost far more: %+.1f%%", pct(pb1, pb0));
		}
		verdict(false, rl1 < 0.8 * rl0,
			"32 rand readers: low_latency cuts max latency %.1fx (kernel 7.67 s -> 1.73 s)",
			rl1 > 0 ? rl0 / rl1 : 0.0);
		verdict(false, fabs(pct(rb1, rb0)) < 10.0,
			"32 rand readers: bandwidth about equal: %+.1f%% (kernel 466 -> 477 KB/s)",
			pct(rb1, rb0));
	}
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* 3. fsync-small-files: fs_mark -s 65536 -w 4096 -S 1 (Diehl 2010, seed 003). Each file: 16
 *    buffered 4 KiB writes, then fsync, which writes the dirty pages back as sync requests from
 *    the caller's context (WB_SYNC_ALL) and then flushes. Four threads in two groups of equal
 *    weight (the "several threads in two groups"). fs_mark's own CPU time (its "App
 *    Overhead") is not modelled: think time 0. Default device: raid:3 (the post's 3 disks). */

#define FS_THREADS 4

static int exp_fsync_small_files(const struct opts *o)
{
	static const struct cfgcol cols[] = {
		{"default(8/8/q8)", SCHED_POLICY_CFQ, {NULL}, {0}},
		{"slice_idle=0", SCHED_POLICY_CFQ, {"slice_idle", NULL}, {0}},
		{"group_idle=0", SCHED_POLICY_CFQ, {"group_idle", NULL}, {0}},
		{"slice+group_idle=0", SCHED_POLICY_CFQ, {"slice_idle", "group_idle", NULL}, {0, 0}},
		{"quantum=32", SCHED_POLICY_CFQ, {"quantum", NULL}, {32}},
		{"si=4,q=32,ll=0", SCHED_POLICY_CFQ,
		 {"slice_idle", "quantum", "low_latency", NULL}, {4, 32, 0}},
	};
	const char *dev = dev_for(o, "raid:3");
	double secs = secs_for(o, 20, 4);
	struct table t;

	tab_init(&t, "fsync-small-files", dev, secs, o->seed);
	for (unsigned c = 0; c < sizeof(cols) / sizeof(cols[0]); c++) {
		struct sim *s = mk_sim(o, cols[c].pol, dev);
		uint32_t g[2];
		uint64_t files[2] = {0, 0};
		double tsum = 0;
		uint64_t tn = 0;
		sched_ns p99 = 0;
		struct sched_info info;

		tab_col(&t, "%s", cols[c].name);
		apply(s, &cols[c]);
		g[0] = add_group(s, 500);
		g[1] = add_group(s, 500);
		for (unsigned i = 0; i < FS_THREADS; i++) {
			struct sim_proc_spec ps;

			spec(&ps, SIM_FSYNC_WRITER, 4 * KIB, 16, g[i % 2]);
			ps.burst = 16; /* 64 KiB per file */
			ps.sync_writes = true;
			ps.think = 0;
			add_proc(s, &ps);
		}
		run_to(s, ns_of(secs));
		for (unsigned i = 0; i < FS_THREADS; i++) {
			const struct sim_proc_stats *st = sim_proc_stats(s, i);
			sched_ns p = sim_hist_percentile(&st->unit, 990);

			files[i % 2] += st->units;
			tsum += (double)st->unit.sum;
			tn += st->unit.total;
			if (p > p99)
				p99 = p;
		}
		sched_get_info(sim_sched(s), &info);
		tab_put(&t, c, "Files/s total", 1, (double)(files[0] + files[1]) / secs);
		tab_put(&t, c, "Files/s group A (2 threads)", 1, (double)files[0] / secs);
		tab_put(&t, c, "Files/s group B (2 threads)", 1, (double)files[1] / secs);
		tab_put(&t, c, "Mean file time ms (write..fsync)", 2, tn ? tsum / (double)tn / 1e6 : 0);
		tab_put(&t, c, "Worst thread p99 file time ms", 2, ms_of(p99));
		tab_put(&t, c, "IOPS group mode (1 = yes)", -1, info.iops_mode ? 1 : 0);
		sim_done(o, s, dev);
	}
	tab_print(&t);
	tab_csv(&t, o->csv_dir);
	printf("  notes: fs_mark's App Overhead (its own CPU time) is not modelled; the mean file\n"
	       "         time is the per-file cost the scheduler and device add.\n");
	{
		double base = tab_get(&t, 0, "Files/s total");
		double si0 = tab_get(&t, 1, "Files/s total");
		double both = tab_get(&t, 3, "Files/s total");
		double heinz = tab_get(&t, 5, "Files/s total");

		verdict(true, si0 > base,
			"slice_idle=0 raises files/s on %s: %+.1f%% (kernel ~400 -> 500-600 files/s)",
			dev, pct(si0, base));
		verdict(false, both >= si0,
			"group_idle=0 on top of slice_idle=0 does not lower it: %+.1f%%",
			pct(both, si0));
		verdict(false, si0 > heinz,
			"slice_idle=0 beats Diehl's best 2.6.35 setting (si=4, q=32, ll=0): %+.1f%%",
			pct(si0, heinz));
	}
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* 4. depth: 8 tiobench threads on a deep device (Szeredi 2010, seed 004): cfq vs noop, with
 *    the mean dispatch depth. Readahead of 512 KiB per thread is modelled as 4 x 128 KiB reads
 *    in flight per reader. Default device: raid:8 (8 heads that each serve any I/O). */

#define DEPTH_READERS 8

static int exp_depth(const struct opts *o)
{
	static const struct cfgcol cols[] = {
		{"cfq", SCHED_POLICY_CFQ, {NULL}, {0}},
		{"noop", SCHED_POLICY_NOOP, {NULL}, {0}},
		{"deadline", SCHED_POLICY_DEADLINE, {NULL}, {0}},
		{"cfq slice_idle=0", SCHED_POLICY_CFQ, {"slice_idle", NULL}, {0}},
		{"cfq quantum=32", SCHED_POLICY_CFQ, {"quantum", NULL}, {32}},
	};
	const char *dev = dev_for(o, "raid:8");
	double secs = secs_for(o, 10, 3);
	struct table t;

	tab_init(&t, "depth", dev, secs, o->seed);
	for (unsigned c = 0; c < sizeof(cols) / sizeof(cols[0]); c++) {
		struct sim *s = mk_sim(o, cols[c].pol, dev);
		struct sim_totals tot;
		struct sched_info info;
		double depth, io_kib;

		tab_col(&t, "%s", cols[c].name);
		apply(s, &cols[c]);
		for (unsigned i = 0; i < DEPTH_READERS; i++) {
			struct sim_proc_spec ps;

			spec(&ps, SIM_SEQ_READER, 128 * KIB, 4, SCHED_ROOT_GROUP);
			add_proc(s, &ps);
		}
		run_to(s, ns_of(secs));
		sim_get_totals(s, &tot);
		sched_get_info(sim_sched(s), &info);
		/* each head serves one I/O at a time and the harness never over-issues, so busy
		 * head-time / elapsed time is the mean number of I/Os on the device */
		depth = tot.util * (double)dev_depth_of(dev);
		io_kib = tot.dispatches ? (double)tot.bytes / (double)tot.dispatches / KIB : 0;
		tab_put(&t, c, "Aggregate MB/s", 2, tot.throughput / 1e6);
		tab_put(&t, c, "Mean I/Os in flight (dispatch depth)", 2, depth);
		tab_put(&t, c, "Mean KiB in flight", 1, depth * io_kib);
		tab_put(&t, c, "Mean I/O size KiB", 1, io_kib);
		tab_put(&t, c, "avgqz (queued + in flight)", 2, tot.avgqu_sz);
		tab_put(&t, c, "await ms", 2, tot.await_ms);
		if (cols[c].pol == SCHED_POLICY_CFQ)
			tab_put(&t, c, "CFQ hw_tag (-1 unknown, 1 deep)", -1, info.hw_tag);
		sim_done(o, s, dev);
	}
	tab_print(&t);
	tab_csv(&t, o->csv_dir);
	{
		double cfq = tab_get(&t, 0, "Aggregate MB/s");
		double noop = tab_get(&t, 1, "Aggregate MB/s");
		double dc = tab_get(&t, 0, "Mean I/Os in flight (dispatch depth)");
		double dn = tab_get(&t, 1, "Mean I/Os in flight (dispatch depth)");

		verdict(true, noop > cfq,
			"noop beats cfq for 8 sequential readers on %s: %+.1f%% (kernel 145 -> 260 "
			"MB/s: +79%%)", dev, pct(noop, cfq));
		verdict(false, dn > 2.0 * dc,
			"cfq keeps the dispatch depth shallow: %.1f vs noop %.1f (kernel ~4 vs ~22)",
			dc, dn);
	}
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* 5. interactive: completion time of an interactive reader's bursts (8 x 64 KiB sequential
 *    reads at a random place of its own file, then 100 ms of think time: a program starting
 *    up) alone, next to a streaming buffered writer (dd: 128 KiB async writes, 64 in flight as
 *    writeback keeps them) and next to 10 sequential readers (128 KiB, 1 in flight). The
 *    posts (Galbraith/Goyal 2009, seed 001) measured konsole start-up under dd. */

enum { BG_NONE = 0, BG_WRITER = 1, BG_READERS = 2, BG_WRITEBACK2 = 3 };

/* [bytes] a writeback pass over one inode in 2.6.31 (MAX_WRITEBACK_PAGES: 1024 pages) */
#define WB_CHUNK (4 * MIB)
/* [count] the block layer's request pool of a queue (nr_requests default); counted here in
 * pre-merge 128 KiB requests, fewer bytes than the kernel's pool of merged requests holds */
#define WB_REQUESTS 128

/* Runs one interactive reader plus the background; fills burst mean/max and bg MB/s.
 * no_behind >= 0 sets the no_merge_behind tunable. */
static void interactive_run(const struct opts *o, enum sched_policy pol, const char *dev,
			    int bg, double secs, int64_t no_behind, double *mean_ms,
			    double *max_ms, double *bg_mbps, double *wr_kib)
{
	struct sim *s = mk_sim_qd(o, pol, dev, bg == BG_WRITEBACK2 ? NCQ_DEPTH : 0);
	struct sim_proc_spec ps;
	const struct sim_proc_stats *st;
	unsigned nbg = 0, ia;

	if (no_behind >= 0)
		tun(s, "no_merge_behind", no_behind);
	if (bg == BG_WRITER) {
		spec(&ps, SIM_BUF_WRITER, 128 * KIB, 64, SCHED_ROOT_GROUP);
		add_proc(s, &ps);
		nbg = 1;
	} else if (bg == BG_WRITEBACK2) {
		/* one dd, its dirty pages written back from two contexts at once (2.6.31: the
		 * flusher, and dd itself throttled in balance_dirty_pages); each walks the file
		 * from the writeback index and skips pages already under writeback, so they take
		 * alternate 4 MiB passes. They share the queue's request pool (nr_requests = 128)
		 * and wait for a free request in turn, so they submit alternately: one process
		 * with two cursors and 128 requests outstanding. Both land in the one async queue
		 * (shared per class and level), where the second pass sorts behind the first. */
		spec(&ps, SIM_BUF_WRITER, 128 * KIB, WB_REQUESTS, SCHED_ROOT_GROUP);
		ps.streams = 2;
		ps.chunk = WB_CHUNK;
		add_proc(s, &ps);
		nbg = 1;
	} else if (bg == BG_READERS) {
		for (nbg = 0; nbg < 10; nbg++) {
			spec(&ps, SIM_SEQ_READER, 128 * KIB, 1, SCHED_ROOT_GROUP);
			add_proc(s, &ps);
		}
	}
	spec(&ps, SIM_INTERACTIVE, 64 * KIB, 1, SCHED_ROOT_GROUP);
	ps.burst = 8;
	ps.think = 100 * MS;
	ps.start = 500 * MS; /* let the background reach its steady state first */
	ia = add_proc(s, &ps);
	run_to(s, ns_of(secs));
	st = sim_proc_stats(s, ia);
	*mean_ms = ms_of(sim_hist_mean(&st->unit));
	*max_ms = ms_of(st->unit.max);
	*bg_mbps = nbg ? (double)procs_bytes(s, 0, nbg) / secs / 1e6 : 0.0;
	if (wr_kib != NULL) {
		struct sim_totals tot;
		uint64_t rd_ios = st->ios;

		sim_get_totals(s, &tot);
		/* dispatches of the writer = all dispatches - the reader's (reads never merge:
		 * one in flight) */
		*wr_kib = tot.dispatches > rd_ios
				  ? (double)procs_bytes(s, 0, nbg) / (double)(tot.dispatches - rd_ios) /
					    KIB
				  : 0.0;
	}
	sim_done(o, s, dev);
}

static int exp_interactive(const struct opts *o)
{
	static const enum sched_policy pols[] = {SCHED_POLICY_CFQ, SCHED_POLICY_DEADLINE,
						 SCHED_POLICY_NOOP};
	const char *dev = dev_for(o, "hdd");
	double secs = secs_for(o, 30, 5);
	struct table t;

	tab_init(&t, "interactive", dev, secs, o->seed);
	for (unsigned c = 0; c < 3; c++) {
		double mean, max, bg;

		tab_col(&t, "%s", sched_policy_name(pols[c]));
		interactive_run(o, pols[c], dev, BG_NONE, secs, -1, &mean, &max, &bg, NULL);
		tab_put(&t, c, "Burst ms, idle disk (mean)", 1, mean);
		interactive_run(o, pols[c], dev, BG_WRITER, secs, -1, &mean, &max, &bg, NULL);
		tab_put(&t, c, "Burst ms, + streaming writer (mean)", 1, mean);
		tab_put(&t, c, "Burst ms, + streaming writer (max)", 1, max);
		tab_put(&t, c, "Writer MB/s", 2, bg);
		interactive_run(o, pols[c], dev, BG_READERS, secs, -1, &mean, &max, &bg, NULL);
		tab_put(&t, c, "Burst ms, + 10 seq readers (mean)", 1, mean);
		tab_put(&t, c, "Burst ms, + 10 seq readers (max)", 1, max);
		tab_put(&t, c, "Readers MB/s", 2, bg);
	}
	tab_print(&t);
	tab_csv(&t, o->csv_dir);
	{
		double cw = tab_get(&t, 0, "Burst ms, + streaming writer (mean)");
		double nw = tab_get(&t, 2, "Burst ms, + streaming writer (mean)");
		double cr = tab_get(&t, 0, "Burst ms, + 10 seq readers (mean)");
		double nr = tab_get(&t, 2, "Burst ms, + 10 seq readers (mean)");
		double idle = tab_get(&t, 0, "Burst ms, idle disk (mean)");

		verdict(false, cw < nw, "cfq serves the interactive reader faster than noop under "
			"a writer: %.1f vs %.1f ms", cw, nw);
		verdict(false, cr < nr, "cfq serves it faster than noop under 10 readers: %.1f vs "
			"%.1f ms", cr, nr);
		verdict(false, cr > idle, "competing sequential readers still cost it time (Goyal: "
			"CFQ wait + seeks): %.1f vs %.1f ms idle", cr, idle);
	}
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* 6. weights: groups of weight 100:200:400:800, one greedy sequential reader each (64 KiB
 *    requests: the first request of a slice is not charged, 64 KiB keeps that error small),
 *    time mode (group_mode=1) vs IOPS mode (group_mode=2), on the rotational device and on ssd.
 *    The share is each group's bytes over [warm-up, end]; the first second is warm-up. */

#define W_GROUPS 4
static const uint32_t w_weights[W_GROUPS] = {100, 200, 400, 800};

static int exp_weights(const struct opts *o)
{
	const char *devs[2] = {dev_for(o, "hdd"), "ssd"};
	double secs = secs_for(o, 20, 4);
	double warm = secs / 5 < 1.0 ? secs / 5 : 1.0;
	double worst[4] = {0, 0, 0, 0};
	struct table t;
	char title[64];

	snprintf(title, sizeof(title), "%s+ssd", devs[0]);
	tab_init(&t, "weights", title, secs, o->seed);
	for (unsigned d = 0; d < 2; d++) {
		for (int mode = 1; mode <= 2; mode++) {
			unsigned c = tab_col(&t, "%s %s", devs[d], mode == 1 ? "time" : "iops");
			struct sim *s = mk_sim(o, SCHED_POLICY_CFQ, devs[d]);
			uint64_t before[W_GROUPS], got[W_GROUPS], sum = 0;
			uint32_t wsum = 0;

			tun(s, "group_mode", mode);
			for (unsigned i = 0; i < W_GROUPS; i++) {
				struct sim_proc_spec ps;

				spec(&ps, SIM_SEQ_READER, 64 * KIB, 1, add_group(s, w_weights[i]));
				add_proc(s, &ps);
				wsum += w_weights[i];
			}
			run_to(s, ns_of(warm));
			for (unsigned i = 0; i < W_GROUPS; i++)
				before[i] = sim_proc_stats(s, i)->bytes;
			run_to(s, ns_of(secs));
			for (unsigned i = 0; i < W_GROUPS; i++) {
				got[i] = sim_proc_stats(s, i)->bytes - before[i];
				sum += got[i];
			}
			for (unsigned i = 0; i < W_GROUPS; i++) {
				double share = sum ? 100.0 * (double)got[i] / (double)sum : 0;
				double want = 100.0 * w_weights[i] / wsum;
				char label[LABEL_LEN];

				snprintf(label, sizeof(label), "Share %% weight %3u (ideal %5.2f)",
					 w_weights[i], want);
				tab_put(&t, c, label, 2, share);
				if (fabs(share - want) / want * 100.0 > worst[c])
					worst[c] = fabs(share - want) / want * 100.0;
			}
			tab_put(&t, c, "Max error vs weight, % of ideal", 2, worst[c]);
			tab_put(&t, c, "Aggregate MB/s", 2,
				(double)sum / (secs - warm) / 1e6);
			sim_done(o, s, devs[d]);
		}
	}
	tab_print(&t);
	tab_csv(&t, o->csv_dir);
	printf("  notes: share = bytes; in time mode on a rotational device bytes track disk time.\n");
	verdict(false, worst[0] <= 10.0, "%s time mode: every share within 10%% of its weight "
		"(max error %.1f%%)", devs[0], worst[0]);
	verdict(false, worst[3] <= 10.0, "ssd iops mode: every share within 10%% of its weight "
		"(max error %.1f%%)", worst[3]);
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* 7. back-merge: a streaming writer plus an interactive reader, with and without the rule of
 *    Axboe's 2009 elevator patch (seed 001, tested by Galbraith: konsole start-up under dd,
 *    -25% time, dd -3..-4%): refuse a back-merge when requests are queued behind the
 *    candidate (no_merge_behind=1). "Behind" is the next request in the candidate's sort
 *    list, i.e. of the same queue (cfq) or direction (deadline): the reader's reads never
 *    count. A single ascending write stream never has anything behind its tail, so the
 *    writer is dd as writeback issues it: two contexts taking alternate 4 MiB passes of the
 *    file (BG_WRITEBACK2), which puts the second pass behind the first one's tail. */

static int exp_back_merge(const struct opts *o)
{
	static const struct {
		const char *name;
		enum sched_policy pol;
		int64_t no_behind;
	} cols[] = {
		{"cfq rule off", SCHED_POLICY_CFQ, 0},
		{"cfq rule on", SCHED_POLICY_CFQ, 1},
		{"deadline rule off", SCHED_POLICY_DEADLINE, 0},
		{"deadline rule on", SCHED_POLICY_DEADLINE, 1},
	};
	const char *dev = dev_for(o, "hdd");
	double secs = secs_for(o, 30, 5);
	struct table t;

	tab_init(&t, "back-merge", dev, secs, o->seed);
	for (unsigned c = 0; c < sizeof(cols) / sizeof(cols[0]); c++) {
		double mean, max, bg, wr;

		tab_col(&t, "%s", cols[c].name);
		interactive_run(o, cols[c].pol, dev, BG_WRITEBACK2, secs, cols[c].no_behind, &mean,
				&max, &bg, &wr);
		tab_put(&t, c, "Reader burst ms (mean)", 1, mean);
		tab_put(&t, c, "Reader burst ms (max)", 1, max);
		tab_put(&t, c, "Writer MB/s", 2, bg);
		tab_put(&t, c, "Writer mean I/O KiB", 1, wr);
	}
	tab_print(&t);
	tab_csv(&t, o->csv_dir);
	printf("  notes: writer = dd written back by two contexts in alternate 4 MiB passes, 128\n"
	       "         requests in the pool, NCQ disk (31 I/Os on it). The core has no last_merge\n"
	       "         one-hit cache, so the rule applies to every back-merge lookup (the kernel\n"
	       "         patch left that cache's merges alone). The device charges no per-command\n"
	       "         overhead: more, smaller writes cost the writer nothing by themselves.\n");
	{
		double r0 = tab_get(&t, 0, "Reader burst ms (mean)");
		double r1 = tab_get(&t, 1, "Reader burst ms (mean)");
		double w0 = tab_get(&t, 0, "Writer MB/s");
		double w1 = tab_get(&t, 1, "Writer MB/s");
		double d0 = tab_get(&t, 2, "Reader burst ms (mean)");
		double d1 = tab_get(&t, 3, "Reader burst ms (mean)");
		double k0 = tab_get(&t, 0, "Writer mean I/O KiB");
		double k1 = tab_get(&t, 1, "Writer mean I/O KiB");

		verdict(false, k1 < k0, "the rule shrinks the writer's requests under cfq: %.0f -> "
			"%.0f KiB", k0, k1);
		verdict(true, r1 < r0, "the rule shortens the reader's bursts under cfq: %+.1f%% "
			"(kernel konsole -25%%)", pct(r1, r0));
		verdict(true, w1 >= 0.9 * w0, "the rule costs the writer at most 10%% under cfq: "
			"%+.1f%% (kernel dd -3%% .. -4%%)", pct(w1, w0));
		verdict(false, w1 < w0, "the writer loses a little under cfq: %+.1f%% (kernel dd "
			"-3%% .. -4%%; the model has no per-command cost)", pct(w1, w0));
		verdict(false, d1 < d0, "the rule shortens the reader's bursts under deadline: "
			"%+.1f%%", pct(d1, d0));
	}
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Driver */

struct experiment {
	const char *name;
	int (*run)(const struct opts *o);
	const char *what;
};

/* ---------------------------------------------------------------------------------------- */
/* 8. cooperating-readers: processes reading one file in interleaved chunks, one 64 KiB read at
 *    a time each (read-test2, a dump(8)-like pattern: reader i reads chunks i, i + N, ...),
 *    against one plain sequential reader. The cooperating-queue patches (JM-COOP) measured
 *    read-test2 at 12 MB/s before and 90 MB/s after on a SATA disk. */

#define COOP_CHUNK (64 * KIB)

static double coop_run(const struct opts *o, const struct cfgcol *cc, const char *dev,
		       double secs, unsigned n)
{
	struct sim *s = mk_sim(o, cc->pol, dev);
	struct sim_totals tot;
	double mbs;

	apply(s, cc);
	for (unsigned i = 0; i < n; i++) {
		struct sim_proc_spec ps;

		spec(&ps, SIM_SEQ_READER, COOP_CHUNK, 1, SCHED_ROOT_GROUP);
		ps.file = 1;
		if (n > 1) {
			ps.chunk = COOP_CHUNK;
			ps.offset = i * COOP_CHUNK;
			ps.skip = (n - 1) * COOP_CHUNK;
		}
		add_proc(s, &ps);
	}
	run_to(s, ns_of(secs));
	sim_get_totals(s, &tot);
	mbs = tot.throughput / 1e6;
	sim_done(o, s, dev);
	return mbs;
}

static int exp_cooperating_readers(const struct opts *o)
{
	static const struct cfgcol cols[] = {
		{"cfq", SCHED_POLICY_CFQ, {NULL}, {0}},
		{"deadline", SCHED_POLICY_DEADLINE, {NULL}, {0}},
		{"noop", SCHED_POLICY_NOOP, {NULL}, {0}},
	};
	static const unsigned counts[] = { 1, 2, 4, 6 };
	const char *dev = dev_for(o, "hdd");
	/* under 1 GiB read at 120 MB/s: a wrap would put the readers out of step */
	double secs = secs_for(o, 5, 2);
	struct table t;

	tab_init(&t, "cooperating-readers", dev, secs, o->seed);
	for (unsigned c = 0; c < sizeof(cols) / sizeof(cols[0]); c++) {
		tab_col(&t, "%s", cols[c].name);
		for (unsigned k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
			char label[64];

			snprintf(label, sizeof(label), counts[k] == 1 ? "MB/s %u sequential reader"
								      : "MB/s %u interleaved readers",
				 counts[k]);
			tab_put(&t, c, label, 2, coop_run(o, &cols[c], dev, secs, counts[k]));
		}
	}
	tab_print(&t);
	tab_csv(&t, o->csv_dir);
	{
		double one = tab_get(&t, 0, "MB/s 1 sequential reader");
		double four = tab_get(&t, 0, "MB/s 4 interleaved readers");
		double dl = tab_get(&t, 1, "MB/s 4 interleaved readers");

		verdict(true, four >= 0.9 * one,
			"cfq reads 4 interleaved readers at one stream's speed: %.1f vs %.1f MB/s "
			"(kernel read-test2: 12 -> 90 MB/s)", four, one);
		verdict(false, four >= dl,
			"cfq is not behind deadline for them: %.1f vs %.1f MB/s", four, dl);
	}
	return 0;
}

static const struct experiment experiments[] = {
	{"seqread-threads", exp_seqread_threads,
	 "tiobench SeqRead 1-16 threads: cfq target_latency 300/600, deadline, noop"},
	{"low-latency", exp_low_latency, "32 random / 32 sequential readers, low_latency 0/1"},
	{"fsync-small-files", exp_fsync_small_files,
	 "fs_mark 64 KiB files + fsync: slice_idle, group_idle, quantum"},
	{"depth", exp_depth, "8 sequential readers on a deep device: cfq vs noop dispatch depth"},
	{"interactive", exp_interactive,
	 "interactive bursts under a writer / 10 readers: cfq, deadline, noop"},
	{"weights", exp_weights, "groups 100:200:400:800, time vs IOPS mode, hdd and ssd"},
	{"back-merge", exp_back_merge,
	 "streaming writer + reader, no_merge_behind 0/1 (the 2009 back-merge rule)"},
	{"cooperating-readers", exp_cooperating_readers,
	 "readers of one file in interleaved chunks (read-test2): close cooperators"},
};
#define NR_EXPERIMENTS (sizeof(experiments) / sizeof(experiments[0]))

static void usage(FILE *f)
{
	fputs(
"NAME\n"
"    sim - replay the classic CFQ experiments on the cfqfs scheduler simulator\n"
"\n"
"SYNOPSIS\n"
"    sim [OPTIONS] EXPERIMENT...\n"
"    sim [OPTIONS] --all\n"
"\n"
"DESCRIPTION\n"
"    Runs the scheduler core (the same code cfqfs dispatches with) against the deterministic\n"
"    device model and synthetic workloads of scheduler/sim.h, one simulation per table\n"
"    column. Every table is in the mmtests compare style: the first column is the baseline\n"
"    configuration, every cell holds the absolute figure and its difference in % against the\n"
"    baseline. After each table the program checks the direction the kernel developers\n"
"    reported on the mailing lists:\n"
"      [match]     the simulation goes the way the kernel did;\n"
"      [MISMATCH]  it contradicts a direction the kernel reports establish (exit status 1);\n"
"      [differs]   an informational check (a trend the posts suggest, or a figure the model\n"
"                  only approximates) did not hold; it does not change the exit status.\n"
"    The same seed, device and duration always print the same figures.\n"
"\n"
"EXPERIMENTS\n"
"    seqread-threads    tiobench-style SeqRead MB/s with 1, 2, 4, 8, 16 threads (128 KiB\n"
"                       readahead requests, 2 in flight per thread) for cfq target_latency\n"
"                       300 and 600, deadline and noop; iostat avgqz, await, max r_await.\n"
"                       Default device hdd, 20 s per run.\n"
"    low-latency        32 random readers (4 KiB, 1 in flight) and 32 sequential readers\n"
"                       (128 KiB, 1 in flight), each on its own 1 GiB file, the files next\n"
"                       to each other as in one directory: bandwidth and mean/max latency\n"
"                       with low_latency 0 (baseline) and 1; on a rotational device also\n"
"                       with the files scattered over the disk. hdd, 20 s.\n"
"    fsync-small-files  fs_mark-shaped: 4 threads in two equal-weight groups, each file 16\n"
"                       x 4 KiB writes written back as sync requests by fsync, then the\n"
"                       flush; files/s, per-file time. Columns: defaults (slice_idle 8,\n"
"                       group_idle 8, quantum 8), slice_idle=0, group_idle=0, both 0,\n"
"                       quantum=32, and the best 2.6.35 setting of the post (slice_idle 4,\n"
"                       quantum 32, low_latency 0). Default device raid:3, 20 s.\n"
"    depth              8 sequential readers (4 x 128 KiB in flight each) on a deep device:\n"
"                       aggregate MB/s and mean dispatch depth for cfq, noop, deadline, cfq\n"
"                       slice_idle=0, cfq quantum=32. Default device raid:8, 10 s.\n"
"    interactive        an interactive reader (bursts of 8 x 64 KiB, 100 ms think) alone,\n"
"                       beside a streaming writer (128 KiB buffered writes, 64 in flight)\n"
"                       and beside 10 sequential readers: burst completion time for cfq,\n"
"                       deadline, noop. hdd, 30 s.\n"
"    weights            4 groups of weight 100, 200, 400, 800 with one greedy 64 KiB reader\n"
"                       each; byte share and error against the weight in time mode\n"
"                       (group_mode=1) and IOPS mode (group_mode=2), on --device (default\n"
"                       hdd) and on ssd. 20 s, the first 1 s excluded.\n"
"    back-merge         the interactive reader beside a streaming writer (dd written back by\n"
"                       two contexts in alternate 4 MiB passes, 128 requests, NCQ depth 31)\n"
"                       with no_merge_behind 0 (baseline) and 1 (the 2009 rule: no\n"
"                       back-merge when requests are queued behind), cfq and deadline:\n"
"                       reader burst time, writer MB/s and I/O size. hdd, 30 s.\n"
"    cooperating-readers\n"
"                       read-test2: one sequential reader, then 2, 4 and 6 readers of one\n"
"                       file in interleaved 64 KiB chunks (reader i reads chunks i, i + N,\n"
"                       ...), one read in flight each: cfq (close cooperators), deadline,\n"
"                       noop. hdd, 5 s.\n"
"\n"
"OPTIONS\n"
"    --all              run every experiment, in the order above\n"
"    --seed N           workload seed (default 1)\n"
"    --device DEV       hdd (1 head, ~8.4 ms mean seek, 7200 rpm, 120 MB/s), ssd (16 units),\n"
"                       ssd:N, or raid:N (N hdd heads, mirror-like read balancing). Replaces\n"
"                       every experiment's default device (weights: the first device).\n"
"    --duration SECS    simulated seconds per run (default: per experiment, above)\n"
"    --quick            short runs (3-5 s simulated); what the ctest entry uses\n"
"    --csv DIR          also write DIR/EXPERIMENT.csv: a header \"metric,<columns>\" and one\n"
"                       line per table row (empty cell: not measured); DIR must exist\n"
"    --check            run sched_check() after every simulation step (slow; for debugging)\n"
"    --trace DIR        write each run's scheduler decisions (the newest 65536: queue,\n"
"                       dispatch, complete, activate, slice, expire, idle, preempt, ...;\n"
"                       README, .cfqfs/trace) to DIR/EXPERIMENT-N.trace; DIR must exist\n"
"    --list             list the experiments and exit\n"
"    -h, --help         this text\n"
"\n"
"EXIT STATUS\n"
"    0  every hard check matched the kernel direction\n"
"    1  at least one [MISMATCH] (listed in the summary at the end)\n"
"    2  usage error or a failed simulation\n"
"\n"
"EXAMPLES\n"
"    sim --all                              the default run (bench/RESULTS.md)\n"
"    sim --all --quick                      the ctest entry bench_sim_quick\n"
"    sim low-latency --device ssd --seed 7\n"
"    sim depth --device raid:16 --csv /tmp/plots\n"
"\n"
"SEE ALSO\n"
"    bench/README.md (section bench/sim), bench/RESULTS.md, scheduler/sim.h,\n"
"    scheduler/device.h\n",
	      f);
}

static const struct experiment *find_experiment(const char *name)
{
	for (size_t i = 0; i < NR_EXPERIMENTS; i++)
		if (strcmp(experiments[i].name, name) == 0)
			return &experiments[i];
	return NULL;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"all", no_argument, NULL, 'a'},	{"seed", required_argument, NULL, 's'},
		{"device", required_argument, NULL, 'd'}, {"duration", required_argument, NULL, 't'},
		{"quick", no_argument, NULL, 'q'},	{"csv", required_argument, NULL, 'c'},
		{"check", no_argument, NULL, 'k'},	{"list", no_argument, NULL, 'l'},
		{"trace", required_argument, NULL, 'T'},
		{"help", no_argument, NULL, 'h'},	{NULL, 0, NULL, 0},
	};
	struct opts o = {.seed = 1};
	bool run[NR_EXPERIMENTS] = {false};
	bool all = false, any = false;
	struct dev_params dp;
	struct stat sb;
	char *end;
	int opt;

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'a':
			all = true;
			break;
		case 's':
			errno = 0;
			o.seed = strtoull(optarg, &end, 0);
			if (errno != 0 || *end != '\0' || *optarg == '\0')
				die("--seed: not a number: %s", optarg);
			break;
		case 'd':
			if (dev_params_parse(optarg, &dp) != 0)
				die("--device: expected hdd, ssd, ssd:N or raid:N, got %s", optarg);
			o.dev = optarg;
			break;
		case 't':
			o.duration = strtod(optarg, &end);
			if (*end != '\0' || !(o.duration >= 0.5 && o.duration <= 3600))
				die("--duration: expected 0.5 .. 3600 seconds, got %s", optarg);
			break;
		case 'q':
			o.quick = true;
			break;
		case 'c':
			if (stat(optarg, &sb) != 0 || !S_ISDIR(sb.st_mode))
				die("--csv: %s is not a directory", optarg);
			o.csv_dir = optarg;
			break;
		case 'k':
			o.check = true;
			break;
		case 'T':
			if (stat(optarg, &sb) != 0 || !S_ISDIR(sb.st_mode))
				die("--trace: %s is not a directory", optarg);
			o.trace_dir = optarg;
			break;
		case 'l':
			for (size_t i = 0; i < NR_EXPERIMENTS; i++)
				printf("%-18s %s\n", experiments[i].name, experiments[i].what);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	for (int i = optind; i < argc; i++) {
		const struct experiment *e = find_experiment(argv[i]);

		if (e == NULL)
			die("unknown experiment %s (sim --list)", argv[i]);
		run[e - experiments] = true;
	}
	for (size_t i = 0; i < NR_EXPERIMENTS; i++) {
		if (all)
			run[i] = true;
		any |= run[i];
	}
	if (!any) {
		usage(stderr);
		return 2;
	}
	for (size_t i = 0; i < NR_EXPERIMENTS; i++) {
		if (!run[i])
			continue;
		o.exp_name = experiments[i].name;
		experiments[i].run(&o);
		fflush(stdout);
	}
	printf("\nsummary: %u/%u kernel-reported directions match; %u/%u informational checks "
	       "match\n",
	       V.hard_ok, V.hard_ok + V.hard_bad, V.soft_ok, V.soft_ok + V.soft_bad);
	for (unsigned i = 0; i < V.hard_bad && i < sizeof(V.bad) / sizeof(V.bad[0]); i++)
		printf("  MISMATCH: %s\n", V.bad[i]);
	return V.hard_bad ? 1 : 0;
}
