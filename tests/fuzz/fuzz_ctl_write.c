/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_ctl_write.c - libFuzzer target for the control-file writers (fs/ctl.c): the parsers of
 * what a write(2) to .cfqfs/scheduler, .cfqfs/iosched/TUNABLE and .cfqfs/groups/DIR/weight
 * holds (ctl_parse_policy, ctl_parse_value, ctl_parse_weight) and of a `cfqfs set` argument
 * (ctl_parse_set_arg). Parsed values go on into a real struct sched with requests queued and
 * in flight, as the daemon's writers do (sched_switch, sched_tunable_set,
 * sched_group_set_weight), and sched_check() must hold after every step.
 *
 * Input: byte 0 = initial policy (low 2 bits, modulo the policy count) and rotational (bit 2);
 * then records of [op byte][length byte][length bytes] (a short last record takes what is left):
 *     op % 4 == 0  the bytes are a write to "scheduler"
 *     op % 4 == 1  a write to iosched/T, T = (op / 4)-th tunable name of all policies
 *     op % 4 == 2  a write to groups/G/weight, G = (op / 4)-th group (root included)
 *     op % 4 == 3  a `cfqfs set` argument (cut at a NUL, as argv would be); its value plus
 *                  "\n" (as cfqfs set writes it) goes to the file it names
 * Between records one request arrives and one completes, time moving on [ns].
 *
 * Checks, beyond the sanitizers: a parser's success means the text was canonical enough (a
 * policy name exactly; sign and digits only), the value is in range, and a failure leaves the
 * out-parameter unchanged; ctl_parse_set_arg names only files the control directory has; a
 * tunable set succeeds exactly when sched_tunable_validate() says the value is valid for the
 * active policy, and reads back (or stays unchanged on failure); a weight set reads back; a
 * "trace=N" argument sizes the decision trace exactly when N is in 0..SCHED_TRACE_MAX, and
 * once on, the trace records every later step (which sched_check() then runs alongside).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "sched.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NR_RQ 24
#define NR_GROUPS 4 /* root + 3 */
#define MAX_NAMES 64
#define STEP_NS (3 * SCHED_NS_PER_MS)

struct state {
	struct sched *sd;
	sched_ns now;
	uint32_t groups[NR_GROUPS];
	struct sched_rq rq[NR_RQ];
	bool busy[NR_RQ];	/* enqueued, not yet completed (chain members included) */
	struct sched_rq *inflight[NR_RQ];
	unsigned nr_inflight;
	unsigned next_rq;	/* rotates through rq[] for arrivals */
};

static const char *names[MAX_NAMES];
static unsigned nr_names;

static void collect_names(void)
{
	for (int p = 0; p < SCHED_POLICY_COUNT; p++) {
		for (const struct sched_tunable_desc *d = sched_tunables((enum sched_policy)p);
		     d->name; d++) {
			unsigned i;

			for (i = 0; i < nr_names; i++)
				if (!strcmp(names[i], d->name))
					break;
			if (i == nr_names && nr_names < MAX_NAMES)
				names[nr_names++] = d->name;
		}
	}
	if (nr_names == 0)
		abort();
}

static void check(const struct state *st, const char *when)
{
	char buf[256];

	if (sched_check(st->sd, buf, sizeof(buf)) != 0) {
		fprintf(stderr, "sched_check after %s: %s\n", when, buf);
		abort();
	}
}

/* Frees the chain headed by rq (the caller's again after sched_complete). */
static void release_chain(struct state *st, struct sched_rq *rq)
{
	for (struct sched_rq *m = rq; m; m = m->merge_next)
		st->busy[m - st->rq] = false;
}

static void complete_one(struct state *st)
{
	if (st->nr_inflight == 0)
		return;
	struct sched_rq *rq = st->inflight[0];
	struct sched_rq *chain = rq->merge_next;

	memmove(st->inflight, st->inflight + 1, (st->nr_inflight - 1) * sizeof(st->inflight[0]));
	st->nr_inflight--;
	sched_complete(st->sd, rq, 0, st->now);
	st->busy[rq - st->rq] = false;
	release_chain(st, chain);
}

static void dispatch_one(struct state *st)
{
	struct sched_rq *rq = sched_dispatch(st->sd, st->now);

	if (rq) {
		if (st->nr_inflight >= NR_RQ)
			abort();
		st->inflight[st->nr_inflight++] = rq;
	}
}

/* One arrival shaped by `seed`: a few processes, groups and files, reads and writes. */
static void arrive(struct state *st, unsigned seed)
{
	unsigned i = st->next_rq++ % NR_RQ;
	struct sched_rq *rq = &st->rq[i];

	if (st->busy[i])
		return;
	memset(rq, 0, sizeof(*rq));
	rq->queue_key = 100 + seed % 5;
	rq->group = st->groups[(seed / 5) % NR_GROUPS];
	rq->ioclass = (uint8_t)(seed % 7 == 0 ? SCHED_CLASS_IDLE
			       : seed % 11 == 0 ? SCHED_CLASS_RT : SCHED_CLASS_BE);
	rq->level = (uint8_t)(seed % SCHED_LEVELS);
	rq->op = (uint8_t)((seed / 3) % 4);
	rq->flags = rq->op == SCHED_OP_WRITE && seed % 2 ? 0 : SCHED_RQ_SYNC;
	rq->file = seed % 3;
	rq->offset = rq->op >= SCHED_OP_FSYNC ? 0 : (uint64_t)(seed % 16) * 65536;
	rq->len = rq->op >= SCHED_OP_FSYNC ? 0 : 65536;
	if (sched_enqueue(st->sd, rq, st->now) == 0)
		st->busy[i] = true;
}

static void step(struct state *st, unsigned seed)
{
	st->now += STEP_NS;
	arrive(st, seed);
	dispatch_one(st);
	complete_one(st);
	check(st, "a step");
}

static void write_scheduler(struct state *st, const char *buf, size_t len)
{
	enum sched_policy p = SCHED_POLICY_COUNT;
	size_t n = len && buf[len - 1] == '\n' ? len - 1 : len;

	if (ctl_parse_policy(buf, len, &p) != 0) {
		if (p != SCHED_POLICY_COUNT)
			abort(); /* changed on failure */
		return;
	}
	if ((unsigned)p >= SCHED_POLICY_COUNT || strlen(sched_policy_name(p)) != n ||
	    memcmp(sched_policy_name(p), buf, n) != 0)
		abort(); /* accepted something that is not exactly a policy name */
	if (sched_switch(st->sd, p, st->now) == 0 && sched_policy(st->sd) != p)
		abort();
	check(st, "sched_switch");
}

/* Is the text (one trailing newline trimmed) a sign and digits only? */
static bool strict_decimal(const char *buf, size_t len)
{
	size_t i = 0;

	if (len && buf[len - 1] == '\n')
		len--;
	if (len && (buf[0] == '+' || buf[0] == '-'))
		i = 1;
	if (i == len)
		return false;
	for (; i < len; i++)
		if (buf[i] < '0' || buf[i] > '9')
			return false;
	return true;
}

static void write_tunable(struct state *st, const char *name, const char *buf, size_t len)
{
	int64_t v = INT64_MIN + 7, before, after;

	if (ctl_parse_value(buf, len, &v) != 0) {
		if (v != INT64_MIN + 7)
			abort();
		return;
	}
	if (!strict_decimal(buf, len)) {
		fprintf(stderr, "ctl_parse_value accepted a non-decimal (%zu bytes)\n", len);
		abort();
	}
	/* the value reads back through the same parser when formatted canonically */
	char canon[32];
	int64_t v2 = 0;
	int n = snprintf(canon, sizeof(canon), "%" PRId64, v);
	if (ctl_parse_value(canon, (size_t)n, &v2) != 0 || v2 != v)
		abort();

	bool known = sched_tunable_get(st->sd, name, &before) == 0;
	int valid = sched_tunable_validate(sched_policy(st->sd), name, v);
	int rc = sched_tunable_set(st->sd, name, v);
	if (rc != valid || (rc == -ENOENT) == known)
		abort(); /* set and validate disagree, or ENOENT for an active tunable */
	if (known) {
		if (sched_tunable_get(st->sd, name, &after) != 0)
			abort();
		if ((rc == 0 && after != v) || (rc != 0 && after != before))
			abort();
	}
	check(st, "sched_tunable_set");
}

static void write_weight(struct state *st, uint32_t g, const char *buf, size_t len)
{
	uint32_t w = 0xdeadbeef, weight, leaf, parent;

	if (ctl_parse_weight(buf, len, &w) != 0) {
		if (w != 0xdeadbeef)
			abort();
		return;
	}
	if (w < SCHED_WEIGHT_MIN || w > SCHED_WEIGHT_MAX || !strict_decimal(buf, len))
		abort();
	/* as fs/groups.c does: the written weight is the group's weight and leaf weight */
	if (sched_group_set_weight(st->sd, g, w, w) != 0)
		abort();
	if (sched_group_get(st->sd, g, &parent, &weight, &leaf) != 0 || weight != w || leaf != w)
		abort();
	check(st, "sched_group_set_weight");
}

/* .cfqfs/trace: a record count; the ring is then that size rounded up, empty, or off. */
static void write_trace(struct state *st, const char *buf, size_t len)
{
	int64_t v = 0;
	uint32_t before = sched_trace_capacity(st->sd), want = 0;
	int rc;

	if (ctl_parse_value(buf, len, &v) != 0)
		return;
	rc = sched_trace_resize(st->sd, v);
	if (v < 0 || v > SCHED_TRACE_MAX) {
		if (rc != -EINVAL || sched_trace_capacity(st->sd) != before)
			abort(); /* a bad size accepted, or something changed */
		return;
	}
	if (rc == -ENOMEM)
		return;
	while (v && want < v)
		want = want ? want << 1 : 1;
	if (rc != 0 || sched_trace_capacity(st->sd) != want || sched_trace_total(st->sd) != 0)
		abort();
	check(st, "sched_trace_resize");
}

/* A `cfqfs set` argument: parse, check the file it names, write its value there. */
static void set_arg(struct state *st, const char *arg)
{
	char file[CTL_SET_FILE_MAX], val[300];
	const char *value = NULL;
	int kind = ctl_parse_set_arg(arg, file, sizeof(file), &value);

	if (kind < 0) {
		if (kind != -EINVAL && kind != -ENAMETOOLONG)
			abort();
		return;
	}
	size_t fl = strnlen(file, sizeof(file));
	if (fl == sizeof(file) || !value || value < arg || value > arg + strlen(arg))
		abort();
	size_t vl = strlen(value);
	if (vl + 1 >= sizeof(val))
		return; /* beyond what any control file accepts; the parsers bound it anyway */
	memcpy(val, value, vl);
	val[vl] = '\n';

	switch (kind) {
	case CTL_SET_SCHEDULER:
		if (strcmp(file, "scheduler") != 0)
			abort();
		write_scheduler(st, val, vl + 1);
		break;
	case CTL_SET_TUNABLE: {
		const char *t = file + 8;

		if (strncmp(file, "iosched/", 8) != 0 || !*t || strchr(t, '/') ||
		    !strcmp(t, "scheduler"))
			abort();
		write_tunable(st, t, val, vl + 1);
		break;
	}
	case CTL_SET_WEIGHT: {
		/* groups/DIR/weight with DIR one path component: ctl_group_dirname() encodes '/' */
		const char *dir = file + 7;
		size_t dl = fl - 7 - 7;

		if (fl < 7 + 1 + 7 || strncmp(file, "groups/", 7) != 0 ||
		    strcmp(file + fl - 7, "/weight") != 0 || memchr(dir, '/', dl) ||
		    (dl == 1 && dir[0] == '.') || (dl == 2 && !memcmp(dir, "..", 2)))
			abort();
		write_weight(st, st->groups[(unsigned char)dir[0] % NR_GROUPS], val, vl + 1);
		break;
	}
	case CTL_SET_TRACE:
		if (strcmp(file, "trace") != 0)
			abort();
		write_trace(st, val, vl + 1);
		break;
	default:
		abort();
	}
}

/* Completes everything: dispatch until empty, jumping to the scheduler's next event. */
static void drain(struct state *st)
{
	for (int i = 0; i < 100000; i++) {
		if (sched_nr_queued(st->sd) == 0 && st->nr_inflight == 0)
			return;
		struct sched_rq *rq = sched_dispatch(st->sd, st->now);
		if (rq) {
			st->inflight[st->nr_inflight++] = rq;
			continue;
		}
		if (st->nr_inflight) {
			st->now += STEP_NS;
			complete_one(st);
			continue;
		}
		sched_ns next = sched_next_event(st->sd);
		if (next == SCHED_NS_NEVER) {
			fprintf(stderr, "%zu queued, none in flight, no timer: stuck\n",
				sched_nr_queued(st->sd));
			abort();
		}
		st->now = sched_time_after(next, st->now) ? next : st->now + 1;
	}
	fprintf(stderr, "drain did not finish: %zu queued\n", sched_nr_queued(st->sd));
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct state st;
	char arg[256 + 1];

	if (nr_names == 0)
		collect_names();
	if (size < 1)
		return 0;
	memset(&st, 0, sizeof(st));
	st.now = 1000 * SCHED_NS_PER_MS;
	st.sd = sched_create((enum sched_policy)((data[0] & 3) % SCHED_POLICY_COUNT),
			     (data[0] & 4) != 0);
	if (!st.sd)
		abort();
	st.groups[0] = SCHED_ROOT_GROUP;
	for (unsigned i = 1; i < NR_GROUPS; i++) {
		uint32_t parent = i == 3 ? st.groups[1] : SCHED_ROOT_GROUP;
		if (sched_group_create(st.sd, parent, 100 * i, 100 * i, &st.groups[i]) != 0)
			abort();
	}
	for (unsigned i = 0; i < 8; i++)
		step(&st, i * 7 + data[0]);

	for (size_t p = 1; p + 1 < size;) {
		unsigned op = data[p];
		size_t len = data[p + 1];
		const char *buf = (const char *)data + p + 2;

		if (len > size - p - 2)
			len = size - p - 2;
		p += 2 + len;
		switch (op % 4) {
		case 0:
			write_scheduler(&st, buf, len);
			break;
		case 1:
			write_tunable(&st, names[(op / 4) % nr_names], buf, len);
			break;
		case 2:
			write_weight(&st, st.groups[(op / 4) % NR_GROUPS], buf, len);
			break;
		default: {
			size_t n = strnlen(buf, len);
			memcpy(arg, buf, n);
			arg[n] = '\0';
			set_arg(&st, arg);
			break;
		}
		}
		step(&st, op + (unsigned)len);
	}
	drain(&st);
	check(&st, "the drain");
	sched_destroy(st.sd);
	return 0;
}
