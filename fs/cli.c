/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli.c - `cfqfs stat` and `cfqfs set`: readers and writers of a mount's control directory.
 *
 * stat: two snapshots of io.stat (plus each group's weight) an interval apart give the rates;
 * without -w the interval is one second and one table is printed, with -w it repeats like top
 * (clearing the screen when stdout is a terminal) until interrupted or -n tables are shown.
 * set: each KEY=VALUE becomes one write(2) of "VALUE\n" to the matching file, in order; the
 * first refusal stops with a one-line message (earlier keys stay applied).
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "ctl.h"

#define DEFAULT_CTL_DIR ".cfqfs"
#define MAX_FILE (4u << 20) /* largest control file read [bytes] */

const char cli_usage_text[] =
	"Sub-commands (talk to a running mount through its control directory):\n"
	"  cfqfs stat MOUNTPOINT [-w SECONDS] [-n COUNT] [--json] [--ctl-dir NAME]\n"
	"                        table of groups: weight, share of bytes, read and write MB/s,\n"
	"                        IOPS (over 1 s, or every SECONDS with -w, like top), p99\n"
	"                        latency (since mount) and idle time; -n stops after COUNT\n"
	"                        tables; --json prints .cfqfs/stat.json instead\n"
	"  cfqfs set MOUNTPOINT [--ctl-dir NAME] KEY=VALUE...\n"
	"                        scheduler=noop|deadline|cfq   switch the scheduler live\n"
	"                        TUNABLE=N                     e.g. slice_idle=0, quantum=4\n"
	"                        trace=N                       keep the last N scheduler decisions\n"
	"                                                      in .cfqfs/trace (0 stops)\n"
	"                        weight:GROUP=N                group weight 10..1000, GROUP as\n"
	"                                                      in io.stat (\"/tenants/a\", \"uid:1000\")\n"
	"                        keys apply in order; the first refused one stops (exit 1)\n"
	"  --ctl-dir NAME        the mount's ctl_dir (default .cfqfs)\n";

bool cli_is_command(int argc, char **argv)
{
	return argc > 1 && (!strcmp(argv[1], "stat") || !strcmp(argv[1], "set"));
}

/* ---------------------------------------------------------------------------------------- */

/* a + b + c into buf (no format: gcc cannot prove snprintf fits). false if too long. */
static bool mkpath(char *buf, size_t size, const char *a, const char *b, const char *c)
{
	size_t la = strlen(a), lb = strlen(b), lc = c ? strlen(c) : 0;

	if (la + lb + lc >= size) {
		if (size)
			buf[0] = '\0';
		return false;
	}
	memmove(buf, a, la); /* a may be buf itself */
	memcpy(buf + la, b, lb);
	memcpy(buf + la + lb, c ? c : "", lc);
	buf[la + lb + lc] = '\0';
	return true;
}

/* Reads a whole file into a NUL-terminated malloc'd buffer. Returns 0 or -errno. */
static int read_file(const char *path, char **out, size_t *len)
{
	size_t cap = 8192, n = 0;
	char *buf = malloc(cap);
	int fd, rc = 0;

	if (!buf)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		goto out_free;
	}
	for (;;) {
		ssize_t r;

		if (cap - n < 4096) {
			char *nb = cap >= MAX_FILE ? NULL : realloc(buf, cap * 2);
			if (!nb) {
				rc = -EFBIG;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (rc)
		goto out_free;
	buf[n] = '\0';
	*out = buf;
	if (len)
		*len = n;
	return 0;

out_free:
	free(buf);
	return rc;
}

/* Writes "value\n" in one write(2). Returns 0 or -errno. */
static int write_value(const char *path, const char *value)
{
	size_t n = strlen(value);
	char *buf = malloc(n + 2);
	int fd, rc = 0;

	if (!buf)
		return -ENOMEM;
	memcpy(buf, value, n);
	buf[n] = '\n';
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
	} else {
		ssize_t w = write(fd, buf, n + 1);

		if (w < 0)
			rc = -errno;
		else if ((size_t)w != n + 1)
			rc = -EIO;
		if (close(fd) < 0 && rc == 0)
			rc = -errno;
	}
	free(buf);
	return rc;
}

/* MOUNTPOINT/CTL into buf; checks that it is a control directory (has a scheduler file). */
static int find_ctl(const char *cmd, const char *mnt, const char *ctl, char *buf, size_t size)
{
	char probe[PATH_MAX];
	struct stat st;

	/* Room for the longest path below it: "/groups/" + a NAME_MAX dir + "/weight". */
	if (size < NAME_MAX + 32 || !mkpath(buf, size - NAME_MAX - 32, mnt, "/", ctl) ||
	    !mkpath(probe, sizeof(probe), buf, "/scheduler", NULL)) {
		fprintf(stderr, "cfqfs %s: %s: path too long\n", cmd, mnt);
		return 2;
	}
	if (stat(probe, &st) < 0 || !S_ISREG(st.st_mode)) {
		fprintf(stderr,
			"cfqfs %s: %s: no control directory %s (not a cfqfs mount, or another "
			"ctl_dir: use --ctl-dir NAME)\n",
			cmd, mnt, ctl);
		return 2;
	}
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* stat                                                                                      */

struct grow {
	char *name;	/* as in io.stat, unescaped */
	uint64_t weight; /* 0 if unreadable */
	uint64_t rbytes, wbytes, rios, wios, wait_usec, idle_usec, p99_usec, queued;
};

struct table {
	struct grow *g;
	size_t n;
	char scheduler[32];
	sched_ns when; /* [ns] clk_now() after reading io.stat */
};

static void table_free(struct table *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->g[i].name);
	free(t->g);
	memset(t, 0, sizeof(*t));
}

static void parse_kv(struct grow *g, const char *key, uint64_t v)
{
	static const struct {
		const char *key;
		size_t off;
	} keys[] = {
		{ "rbytes", offsetof(struct grow, rbytes) },
		{ "wbytes", offsetof(struct grow, wbytes) },
		{ "rios", offsetof(struct grow, rios) },
		{ "wios", offsetof(struct grow, wios) },
		{ "wait_usec", offsetof(struct grow, wait_usec) },
		{ "idle_usec", offsetof(struct grow, idle_usec) },
		{ "p99_usec", offsetof(struct grow, p99_usec) },
		{ "queued", offsetof(struct grow, queued) },
	};

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strcmp(key, keys[i].key))
			*(uint64_t *)((char *)g + keys[i].off) = v;
}

/* Reads io.stat, the weights and the scheduler. Returns 0, or 1 after a message. */
static int table_read(const char *ctl, struct table *t)
{
	char path[PATH_MAX], *text = NULL, *line, *save = NULL;
	int rc;

	memset(t, 0, sizeof(*t));
	mkpath(path, sizeof(path), ctl, "/scheduler", NULL);
	if (read_file(path, &text, NULL) == 0) {
		char *a = strchr(text, '['), *b = a ? strchr(a, ']') : NULL;

		if (a && b && (size_t)(b - a - 1) < sizeof(t->scheduler))
			memcpy(t->scheduler, a + 1, (size_t)(b - a - 1));
		free(text);
	}
	mkpath(path, sizeof(path), ctl, "/io.stat", NULL);
	rc = read_file(path, &text, NULL);
	t->when = clk_now();
	if (rc) {
		fprintf(stderr, "cfqfs stat: %s: %s\n", path, strerror(-rc));
		return 1;
	}
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *tsave = NULL, *tok = strtok_r(line, " ", &tsave);
		struct grow *g, *arr;

		if (!tok)
			continue;
		arr = realloc(t->g, (t->n + 1) * sizeof(*arr));
		if (!arr)
			break;
		t->g = arr;
		g = &t->g[t->n];
		memset(g, 0, sizeof(*g));
		g->name = strdup(tok);
		if (!g->name)
			break;
		ctl_unescape_field(g->name);
		t->n++;
		while ((tok = strtok_r(NULL, " ", &tsave))) {
			char *eq = strchr(tok, '=');

			if (!eq)
				continue;
			*eq = '\0';
			parse_kv(g, tok, strtoull(eq + 1, NULL, 10));
		}
	}
	free(text);
	for (size_t i = 0; i < t->n; i++) {
		char dir[NAME_MAX + 1], *w = NULL;

		if (ctl_group_dirname(t->g[i].name, dir, sizeof(dir)) < 0)
			continue;
		if (mkpath(path, sizeof(path), ctl, "/groups/", dir) &&
		    mkpath(path, sizeof(path), path, "/weight", NULL) && read_file(path, &w, NULL) == 0) {
			t->g[i].weight = strtoull(w, NULL, 10);
			free(w);
		}
	}
	return 0;
}

static const struct grow *find_row(const struct table *t, const char *name)
{
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->g[i].name, name))
			return &t->g[i];
	return NULL;
}

static uint64_t delta(uint64_t now, uint64_t before)
{
	return now >= before ? now - before : 0; /* counters only grow; a remount resets them */
}

static void table_print(const char *mnt, const struct table *old, const struct table *cur)
{
	double dt = (double)(cur->when - old->when) / 1e9;
	uint64_t total = 0;

	if (dt <= 0)
		dt = 1e-9;
	for (size_t i = 0; i < cur->n; i++) {
		const struct grow *g = &cur->g[i], *o = find_row(old, g->name);

		total += o ? delta(g->rbytes + g->wbytes, o->rbytes + o->wbytes)
			   : g->rbytes + g->wbytes;
	}
	printf("cfqfs %s: scheduler %s, %zu group%s, interval %.2f s\n", mnt,
	       cur->scheduler[0] ? cur->scheduler : "?", cur->n, cur->n == 1 ? "" : "s", dt);
	printf("%-24s %6s %6s %10s %10s %8s %9s %9s %7s\n", "GROUP", "WEIGHT", "SHARE%",
	       "READ_MB/s", "WRITE_MB/s", "IOPS", "P99_ms", "IDLE_ms", "QUEUED");
	for (size_t i = 0; i < cur->n; i++) {
		const struct grow *g = &cur->g[i], *o = find_row(old, g->name);
		struct grow z = { 0 };
		uint64_t rb, wb, ios, idle;
		char share[16];

		if (!o)
			o = &z;
		rb = delta(g->rbytes, o->rbytes);
		wb = delta(g->wbytes, o->wbytes);
		ios = delta(g->rios + g->wios, o->rios + o->wios);
		idle = delta(g->idle_usec, o->idle_usec);
		if (total)
			snprintf(share, sizeof(share), "%.1f", 100.0 * (double)(rb + wb) / (double)total);
		else
			snprintf(share, sizeof(share), "-");
		printf("%-24s %6" PRIu64 " %6s %10.2f %10.2f %8.0f %9.2f %9.1f %7" PRIu64 "\n",
		       g->name, g->weight, share, (double)rb / 1e6 / dt, (double)wb / 1e6 / dt,
		       (double)ios / dt, (double)g->p99_usec / 1000.0, (double)idle / 1000.0, g->queued);
	}
	fflush(stdout);
}

static int parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= 0.1 && v <= 86400))
		return -EINVAL;
	*out = v;
	return 0;
}

static int cmd_stat(int argc, char **argv)
{
	const char *mnt = NULL, *ctl_name = DEFAULT_CTL_DIR;
	char ctl[PATH_MAX];
	bool json = false, watch = false;
	double interval = 1.0;
	long count = -1;
	int rc;

	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--json")) {
			json = true;
		} else if (!strcmp(a, "-w") || !strcmp(a, "-n") || !strcmp(a, "--ctl-dir")) {
			if (i + 1 >= argc) {
				fprintf(stderr, "cfqfs stat: missing argument to %s (see cfqfs --help)\n",
					a);
				return 2;
			}
			const char *v = argv[++i];
			char *end;

			if (a[1] == 'w') {
				if (parse_seconds(v, &interval) < 0) {
					fprintf(stderr,
						"cfqfs stat: -w %s: seconds between 0.1 and 86400\n", v);
					return 2;
				}
				watch = true;
			} else if (a[1] == 'n') {
				count = strtol(v, &end, 10);
				if (*end || count < 1) {
					fprintf(stderr, "cfqfs stat: -n %s: a positive count\n", v);
					return 2;
				}
			} else {
				ctl_name = v;
			}
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "cfqfs stat: unknown option %s (see cfqfs --help)\n", a);
			return 2;
		} else if (!mnt) {
			mnt = a;
		} else {
			fprintf(stderr, "cfqfs stat: unexpected argument %s (see cfqfs --help)\n", a);
			return 2;
		}
	}
	if (!mnt) {
		fprintf(stderr, "cfqfs stat: missing MOUNTPOINT (see cfqfs --help)\n");
		return 2;
	}
	rc = find_ctl("stat", mnt, ctl_name, ctl, sizeof(ctl));
	if (rc)
		return rc;
	if (!watch && count < 0)
		count = 1;

	if (json) {
		char path[PATH_MAX], *text;
		sched_ns next = clk_now();

		mkpath(path, sizeof(path), ctl, "/stat.json", NULL);
		for (long n = 0; count < 0 || n < count; n++) {
			if (n) {
				next += (sched_ns)(interval * 1e9);
				clk_sleep_until(next);
			}
			rc = read_file(path, &text, NULL);
			if (rc) {
				fprintf(stderr, "cfqfs stat: %s: %s\n", path, strerror(-rc));
				return 1;
			}
			fputs(text, stdout);
			fflush(stdout);
			free(text);
		}
		return 0;
	}

	struct table old, cur;
	bool tty = isatty(STDOUT_FILENO);

	if (table_read(ctl, &old))
		return 1;
	for (long n = 0; count < 0 || n < count; n++) {
		clk_sleep_until(old.when + (sched_ns)(interval * 1e9));
		if (table_read(ctl, &cur)) {
			table_free(&old);
			return 1;
		}
		if (watch && tty)
			fputs("\033[H\033[2J", stdout);
		else if (n)
			putchar('\n');
		table_print(mnt, &old, &cur);
		table_free(&old);
		old = cur;
	}
	table_free(&old);
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* set                                                                                       */

static int set_one(const char *ctl, const char *arg)
{
	char path[PATH_MAX], file[CTL_SET_FILE_MAX];
	const char *value = NULL;
	int kind, rc;

	kind = ctl_parse_set_arg(arg, file, sizeof(file), &value);
	if (kind == -EINVAL && !strncmp(arg, "weight:", 7)) {
		fprintf(stderr, "cfqfs set: %s: expected weight:GROUP=N\n", arg);
		return 2;
	}
	if (kind == -EINVAL) {
		fprintf(stderr, "cfqfs set: %s: expected scheduler=NAME, TUNABLE=N or weight:GROUP=N\n",
			arg);
		return 2;
	}
	if (kind < 0) {
		fprintf(stderr, "cfqfs set: %s: group name too long\n", arg);
		return 2;
	}
	/* find_ctl() left room for every file ctl_parse_set_arg() names */
	if (!mkpath(path, sizeof(path), ctl, "/", file)) {
		fprintf(stderr, "cfqfs set: %s: path too long\n", arg);
		return 2;
	}
	rc = write_value(path, value);
	if (rc == 0)
		return 0;
	switch (rc) {
	case -EINVAL:
		fprintf(stderr, "cfqfs set: %s: invalid value (out of range or not a %s)\n", arg,
			kind == CTL_SET_SCHEDULER ? "scheduler name" : "number");
		break;
	case -ENOENT:
		if (kind == CTL_SET_WEIGHT)
			fprintf(stderr, "cfqfs set: %s: no such group (names as in io.stat)\n", arg);
		else
			fprintf(stderr, "cfqfs set: %s: not a tunable of the active scheduler\n",
				arg);
		break;
	case -EACCES:
	case -EPERM:
		fprintf(stderr,
			"cfqfs set: %s: permission denied (only root and the mounting user may "
			"write)\n",
			arg);
		break;
	default:
		fprintf(stderr, "cfqfs set: %s: %s\n", arg, strerror(-rc));
		break;
	}
	return 1;
}

static int cmd_set(int argc, char **argv)
{
	const char *mnt = NULL, *ctl_name = DEFAULT_CTL_DIR;
	char ctl[PATH_MAX];
	int first = 0, rc;

	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--ctl-dir")) {
			if (i + 1 >= argc) {
				fprintf(stderr, "cfqfs set: missing argument to --ctl-dir\n");
				return 2;
			}
			ctl_name = argv[++i];
		} else if (!mnt) {
			mnt = argv[i];
		} else {
			first = i;
			break;
		}
	}
	if (!mnt || !first) {
		fprintf(stderr, "cfqfs set: usage: cfqfs set MOUNTPOINT KEY=VALUE... (see cfqfs "
				"--help)\n");
		return 2;
	}
	rc = find_ctl("set", mnt, ctl_name, ctl, sizeof(ctl));
	if (rc)
		return rc;
	for (int i = first; i < argc; i++) {
		rc = set_one(ctl, argv[i]);
		if (rc)
			return rc;
	}
	return 0;
}

int cli_main(int argc, char **argv)
{
	if (argc > 2 && (!strcmp(argv[2], "-h") || !strcmp(argv[2], "--help"))) {
		fputs(cli_usage_text, stdout);
		return 0;
	}
	if (!strcmp(argv[1], "stat"))
		return cmd_stat(argc, argv);
	return cmd_set(argc, argv);
}
