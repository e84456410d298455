/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl.c - the control directory: node ids, attributes, the FUSE handlers, and the generators
 * of every file's content. The contract (formats, errnos, permissions) is in ctl.h.
 *
 * Every read is served from a buffer generated at open: a snapshot (struct snap) is copied
 * under the registry lock (group names) and then under the executor lock (scheduler state),
 * never holding both, and formatted with neither held.
 *
 * Memory: what an open handle holds (its text, and while it is generated the copy of the
 * trace) lies in mappings of its own (mmap), charged to the opener's uid as each one grows
 * (struct ctl_acct, bounds CTL_MEM_* in ctl.h) and unmapped at release, so that it goes back
 * to the system at once. From the heap it would not: a freed multi-megabyte block raises
 * glibc's mmap threshold, the next ones come from the heap and stay resident after free
 * (200 opens of a 65536-record trace by one user took 690 MB, 314 MB of it kept after close).
 */
#include "ctl.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "executor.h"
#include "groups.h"
#include "log.h"
#include "sched.h"

/* ---------------------------------------------------------------------------------------- */
/* Node ids: CTL_INO_FLAG | kind << KIND_SHIFT | arg (a group id or a tunable index).        */

enum kind {
	K_ROOT = 1,
	K_SCHEDULER,
	K_IOSCHED_DIR,
	K_TUNABLE,	/* arg: index into c->tun_names */
	K_IOSTAT,
	K_QUEUES,
	K_METRICS,
	K_JSON,
	K_GROUPS_DIR,
	K_GROUP_DIR,	/* arg: scheduler group id */
	K_GROUP_WEIGHT, /* arg: scheduler group id */
	K_GROUP_IOSTAT, /* arg: scheduler group id */
	K_GROUP_PROCS,	/* arg: scheduler group id */
	K_TRACE,
	K_DEVICE,
	K_MAX
};

#define KIND_SHIFT 40
#define ARG_MASK 0xffffffffull
_Static_assert(sizeof(fuse_ino_t) == 8, "control node ids need 64-bit fuse_ino_t");

static fuse_ino_t mkino(enum kind k, uint32_t arg)
{
	return CTL_INO_FLAG | ((uint64_t)k << KIND_SHIFT) | arg;
}

/* Splits an id; false for ids that no control node can have. */
static bool split_ino(fuse_ino_t ino, enum kind *k, uint32_t *arg)
{
	uint64_t kind = (ino & ~CTL_INO_FLAG) >> KIND_SHIFT;

	if (!(ino & CTL_INO_FLAG) || kind == 0 || kind >= K_MAX ||
	    ((ino & ~CTL_INO_FLAG) & ((1ull << KIND_SHIFT) - 1) & ~ARG_MASK))
		return false;
	*k = (enum kind)kind;
	*arg = (uint32_t)(ino & ARG_MASK);
	return true;
}

static bool kind_is_dir(enum kind k)
{
	return k == K_ROOT || k == K_IOSCHED_DIR || k == K_GROUPS_DIR || k == K_GROUP_DIR;
}

static bool kind_is_writable(enum kind k)
{
	return k == K_SCHEDULER || k == K_TUNABLE || k == K_GROUP_WEIGHT || k == K_TRACE;
}

/* Fixed children of the control root and of each group directory. */
struct child {
	const char *name;
	enum kind kind;
};
static const struct child root_children[] = {
	{ "scheduler", K_SCHEDULER }, { "iosched", K_IOSCHED_DIR }, { "io.stat", K_IOSTAT },
	{ "queues", K_QUEUES },	      { "metrics", K_METRICS },	    { "stat.json", K_JSON },
	{ "groups", K_GROUPS_DIR },   { "trace", K_TRACE },	    { "device", K_DEVICE },
};
static const struct child group_children[] = {
	{ "weight", K_GROUP_WEIGHT },
	{ "io.stat", K_GROUP_IOSTAT },
	{ "procs", K_GROUP_PROCS },
};
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* Tunable names of every policy, each once (an id names the same file whatever the policy). */
#define MAX_TUN_NAMES 64

/* An unprivileged uid that holds memory of open control handles. */
struct ctl_mem_user {
	uid_t uid;
	size_t bytes; /* [bytes] > 0 */
};

/* Immutable after ctl_create(), except the mem_* fields. */
struct ctl {
	char *name;		     /* directory name at the root */
	struct executor *ex;	     /* borrowed */
	struct grp_registry *groups; /* borrowed, may be NULL */
	uid_t owner;		     /* may write besides root */
	gid_t owner_gid;	     /* st_gid of control inodes */
	bool private_read;	     /* only the owner (and root) may read */
	char *device_info;	     /* content of `device`, newline-terminated */
	struct timespec mtime;	     /* st_mtime/ctime/atime of every control inode [wall clock] */
	const char *tun_names[MAX_TUN_NAMES]; /* point into the scheduler's static tables */
	unsigned nr_tun_names;		      /* [count] */
	/*
	 * The memory open handles hold (struct ctl_acct). mem_lock protects the fields below;
	 * it is a leaf (taken under the executor lock, never held while taking another).
	 * Invariants: mem_unpriv <= CTL_MEM_UNPRIV, mem_total <= CTL_MEM_TOTAL, mem_unpriv <=
	 * mem_total, mem_unpriv is the sum of mem_users[].bytes, each <= CTL_MEM_PER_USER and
	 * > 0 (a uid that holds nothing has no entry).
	 */
	pthread_mutex_t mem_lock;
	size_t mem_total;		 /* [bytes] held by all handles */
	size_t mem_unpriv;		 /* [bytes] held by handles of unprivileged users */
	struct ctl_mem_user *mem_users;	 /* unordered */
	size_t mem_nusers, mem_capusers; /* [count] */
	_Atomic long long mem_warned;	 /* [s] time() of the last refusal logged */
};

struct ctl *ctl_create(const struct ctl_options *opts)
{
	struct ctl *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->name = strdup(opts->name);
	c->device_info = strdup(opts->device_info ? opts->device_info : "unknown\n");
	if (!c->name || !c->device_info) {
		ctl_destroy(c);
		return NULL;
	}
	pthread_mutex_init(&c->mem_lock, NULL);
	c->ex = opts->ex;
	c->groups = opts->groups;
	c->owner = opts->owner;
	c->owner_gid = opts->owner_gid;
	c->private_read = opts->private_read;
	/* Wall-clock time for display only (ls -l); the scheduler never sees it. */
	c->mtime.tv_sec = time(NULL);
	for (int p = 0; p < SCHED_POLICY_COUNT; p++) {
		for (const struct sched_tunable_desc *d = sched_tunables((enum sched_policy)p);
		     d->name; d++) {
			unsigned i;

			for (i = 0; i < c->nr_tun_names; i++)
				if (!strcmp(c->tun_names[i], d->name))
					break;
			if (i == c->nr_tun_names && c->nr_tun_names < MAX_TUN_NAMES)
				c->tun_names[c->nr_tun_names++] = d->name;
		}
	}
	return c;
}

void ctl_destroy(struct ctl *c)
{
	if (!c)
		return;
	free(c->name);
	free(c->device_info);
	free(c->mem_users);
	pthread_mutex_destroy(&c->mem_lock);
	free(c);
}

/* ---------------------------------------------------------------------------------------- */
/* Memory of open handles                                                                    */

/* What one open (file or directory) holds of the control directory's memory: charged as it
 * grows, returned at release. Owned by one thread at a time (the handle's). */
struct ctl_acct {
	struct ctl *c;
	uid_t uid;	 /* the opener's */
	bool privileged; /* root or the owner: bound by CTL_MEM_TOTAL only */
	size_t bytes;	 /* [bytes] charged now */
	int err;	 /* -EMFILE or -ENFILE once a charge was refused, else 0 */
};

static struct ctl_acct acct_for(struct ctl *c, fuse_req_t req)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	uid_t uid = ctx ? ctx->uid : (uid_t)-1;

	return (struct ctl_acct){ .c = c, .uid = uid, .privileged = uid == 0 || uid == c->owner };
}

/* Under mem_lock: the entry of uid, or NULL. */
static struct ctl_mem_user *mem_user(struct ctl *c, uid_t uid)
{
	for (size_t i = 0; i < c->mem_nusers; i++)
		if (c->mem_users[i].uid == uid)
			return &c->mem_users[i];
	return NULL;
}

/* Under mem_lock: 0, or -EFAULT with what is broken in buf. */
static int mem_check_locked(const struct ctl *c, char *buf, size_t len)
{
	size_t sum = 0;

	for (size_t i = 0; i < c->mem_nusers; i++) {
		const struct ctl_mem_user *u = &c->mem_users[i];

		if (!u->bytes || u->bytes > CTL_MEM_PER_USER) {
			snprintf(buf, len, "uid %u holds %zu bytes", (unsigned)u->uid, u->bytes);
			return -EFAULT;
		}
		for (size_t j = 0; j < i; j++) {
			if (c->mem_users[j].uid == u->uid) {
				snprintf(buf, len, "uid %u listed twice", (unsigned)u->uid);
				return -EFAULT;
			}
		}
		sum += u->bytes;
	}
	if (sum != c->mem_unpriv || c->mem_unpriv > CTL_MEM_UNPRIV ||
	    c->mem_total > CTL_MEM_TOTAL || c->mem_unpriv > c->mem_total ||
	    c->mem_nusers > c->mem_capusers) {
		snprintf(buf, len, "users hold %zu bytes in all, unprivileged %zu (their entries "
			 "%zu), %zu of %zu entries", c->mem_total, c->mem_unpriv, sum,
			 c->mem_nusers, c->mem_capusers);
		return -EFAULT;
	}
	return 0;
}

int ctl_check(struct ctl *c, char *buf, size_t len)
{
	int rc;

	pthread_mutex_lock(&c->mem_lock);
	rc = mem_check_locked(c, buf, len);
	pthread_mutex_unlock(&c->mem_lock);
	return rc;
}

/* Debug builds stop at the first broken invariant. Called with mem_lock held. */
static void mem_paranoid_check(const struct ctl *c)
{
#ifndef NDEBUG
	char why[160];

	if (mem_check_locked(c, why, sizeof(why)) != 0) {
		LOG_ERR("control memory invariant broken: %s", why);
		assert(!"control memory invariant broken");
	}
#else
	(void)c;
#endif
}

/* Logs a refusal (at most once a minute); held and total were read under mem_lock. */
static void acct_refused(const struct ctl_acct *a, size_t held, size_t total)
{
	long long now = (long long)time(NULL), prev = atomic_load(&a->c->mem_warned);

	if (now - prev < 60 || !atomic_compare_exchange_strong(&a->c->mem_warned, &prev, now))
		return;
	LOG_WARN("control directory: an open by uid %u refused (%s): its handles hold %zu KiB, "
		 "all handles %zu KiB; the bounds are %u MiB per user, %u MiB for all users but "
		 "root and the owner, %u MiB in all (logged at most once a minute)",
		 (unsigned)a->uid, a->err == -EMFILE ? "EMFILE" : "ENFILE", held >> 10,
		 total >> 10, CTL_MEM_PER_USER >> 20, CTL_MEM_UNPRIV >> 20,
		 CTL_MEM_TOTAL >> 20);
}

/* Charges n bytes to a. Returns 0, or -EMFILE (a's user holds its bound), -ENFILE (all
 * users do), -ENOMEM; then nothing is charged and a->err keeps the first refusal. */
static int acct_charge(struct ctl_acct *a, size_t n)
{
	struct ctl *c = a->c;
	struct ctl_mem_user *u = NULL;
	size_t held = 0, total;
	int rc = 0;

	pthread_mutex_lock(&c->mem_lock);
	if (n > CTL_MEM_TOTAL - c->mem_total) {
		rc = -ENFILE;
		goto out_unlock;
	}
	if (!a->privileged) {
		u = mem_user(c, a->uid);
		held = u ? u->bytes : 0;
		if (n > CTL_MEM_PER_USER - held) {
			rc = -EMFILE;
			goto out_unlock;
		}
		if (n > CTL_MEM_UNPRIV - c->mem_unpriv) {
			rc = -ENFILE;
			goto out_unlock;
		}
		if (!u) {
			if (c->mem_nusers == c->mem_capusers) {
				size_t cap = c->mem_capusers ? 2 * c->mem_capusers : 8;
				struct ctl_mem_user *arr =
					realloc(c->mem_users, cap * sizeof(*arr));

				if (!arr) {
					rc = -ENOMEM;
					goto out_unlock;
				}
				c->mem_users = arr;
				c->mem_capusers = cap;
			}
			u = &c->mem_users[c->mem_nusers++];
			*u = (struct ctl_mem_user){ .uid = a->uid };
		}
		u->bytes += n;
		c->mem_unpriv += n;
	}
	c->mem_total += n;
	a->bytes += n;
	mem_paranoid_check(c);
out_unlock:
	total = c->mem_total;
	pthread_mutex_unlock(&c->mem_lock);
	if ((rc == -EMFILE || rc == -ENFILE) && !a->err) {
		a->err = rc;
		acct_refused(a, a->privileged ? a->bytes : held, total);
	}
	return rc;
}

/* Returns n bytes of what a holds (n <= a->bytes). Cannot fail. */
static void acct_uncharge(struct ctl_acct *a, size_t n)
{
	struct ctl *c = a->c;

	if (!n)
		return;
	pthread_mutex_lock(&c->mem_lock);
	if (!a->privileged) {
		struct ctl_mem_user *u = mem_user(c, a->uid);

		u->bytes -= n;
		c->mem_unpriv -= n;
		if (!u->bytes) {
			*u = c->mem_users[--c->mem_nusers];
			/* Give the table back as users leave: it never stays at its peak. */
			if (c->mem_capusers > 8 && c->mem_nusers < c->mem_capusers / 4) {
				struct ctl_mem_user *arr = realloc(
					c->mem_users, c->mem_capusers / 2 * sizeof(*arr));

				if (arr) {
					c->mem_users = arr;
					c->mem_capusers /= 2;
				}
			}
		}
	}
	c->mem_total -= n;
	a->bytes -= n;
	mem_paranoid_check(c);
	pthread_mutex_unlock(&c->mem_lock);
}

static size_t page_round(size_t n)
{
	long pg = sysconf(_SC_PAGESIZE);
	size_t p = pg > 0 ? (size_t)pg : 4096;

	return (n + p - 1) / p * p;
}

/* A charged anonymous mapping of n bytes (page-rounded), or NULL (see acct_charge). */
static void *map_alloc(struct ctl_acct *a, size_t n)
{
	size_t len = page_round(n);
	void *p;

	if (acct_charge(a, len))
		return NULL;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		acct_uncharge(a, len);
		return NULL;
	}
	return p;
}

static void map_free(struct ctl_acct *a, void *p, size_t n)
{
	if (!p)
		return;
	munmap(p, page_round(n));
	acct_uncharge(a, page_round(n));
}

bool ctl_is_root_dotdot(fuse_ino_t parent, const char *name)
{
	return parent == mkino(K_ROOT, 0) && !strcmp(name, "..");
}

/* ---------------------------------------------------------------------------------------- */
/* Text helpers                                                                              */

/* A growing string in a mapping of its own, charged to acct as it grows (see the top of this
 * file); `oom` sticks once a mapping or a charge failed. cap is page-rounded. */
struct sbuf {
	char *p;
	size_t len, cap; /* [bytes] */
	bool oom;
	struct ctl_acct *acct;
};

static void sb_reserve(struct sbuf *b, size_t extra)
{
	size_t cap;
	void *p;

	if (b->oom || b->len + extra + 1 <= b->cap)
		return;
	if (extra > SIZE_MAX / 4 - b->len) {
		b->oom = true;
		return;
	}
	/* Doubling up to 1 MiB, then steps of an eighth: every byte mapped is charged, and a
	 * mremap that grows moves page tables, not the text. */
	cap = b->cap ? b->cap : page_round(1);
	while (cap < b->len + extra + 1)
		cap = page_round(cap < (1u << 20) ? 2 * cap : cap + cap / 8);
	if (!b->p) {
		b->p = map_alloc(b->acct, cap);
		b->oom = !b->p;
		b->cap = b->p ? cap : 0;
		return;
	}
	if (acct_charge(b->acct, cap - b->cap)) {
		b->oom = true;
		return;
	}
	p = mremap(b->p, b->cap, cap, MREMAP_MAYMOVE);
	if (p == MAP_FAILED) {
		acct_uncharge(b->acct, cap - b->cap);
		b->oom = true;
		return;
	}
	b->p = p;
	b->cap = cap;
}

/* Gives back the pages past the text (the doubling leaves up to half the mapping unused). */
static void sb_fit(struct sbuf *b)
{
	size_t cap = page_round(b->len + 1);

	if (b->p && cap < b->cap && mremap(b->p, b->cap, cap, 0) != MAP_FAILED) {
		acct_uncharge(b->acct, b->cap - cap);
		b->cap = cap;
	}
}

static void sb_release(struct sbuf *b)
{
	map_free(b->acct, b->p, b->cap);
	b->p = NULL;
	b->len = b->cap = 0;
}

static void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->oom = true;
		return;
	}
	sb_reserve(b, (size_t)n);
	if (b->oom)
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

static void sb_putc(struct sbuf *b, char ch)
{
	sb_reserve(b, 1);
	if (b->oom)
		return;
	b->p[b->len++] = ch;
	b->p[b->len] = '\0';
}

static void sb_puts(struct sbuf *b, const char *s)
{
	sb_printf(b, "%s", s);
}

/* Space-separated files: octal escapes as in /proc/self/mountinfo. */
static bool field_needs_escape(unsigned char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\\';
}

static void sb_field(struct sbuf *b, const char *s)
{
	for (; *s; s++) {
		if (field_needs_escape((unsigned char)*s))
			sb_printf(b, "\\%03o", (unsigned char)*s);
		else
			sb_putc(b, *s);
	}
}

int ctl_escape_field(const char *s, char *buf, size_t size)
{
	size_t n = 0;

	for (; *s; s++) {
		size_t need = field_needs_escape((unsigned char)*s) ? 4 : 1;

		if (n + need >= size) {
			if (size)
				buf[n] = '\0';
			return -ENAMETOOLONG;
		}
		if (need == 4)
			snprintf(buf + n, 5, "\\%03o", (unsigned char)*s);
		else
			buf[n] = *s;
		n += need;
	}
	if (size)
		buf[n] = '\0';
	return (int)n;
}

void ctl_unescape_field(char *s)
{
	char *w = s;

	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

int ctl_group_dirname(const char *group, char *buf, size_t size)
{
	const char *s = group;
	size_t n = 0;

	if (s[0] == '/' && s[1] != '\0')
		s++; /* cgroup path: drop the leading '/'; the root "/" keeps it (-> "%2F") */
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		bool esc = ch == '%' || ch == '/' || ch < 0x20 || ch == 0x7f;
		size_t need = esc ? 3 : 1;

		if (n + need >= size) {
			if (size)
				buf[n] = '\0';
			return -ENAMETOOLONG;
		}
		if (esc)
			snprintf(buf + n, 4, "%%%02X", ch);
		else
			buf[n] = (char)ch;
		n += need;
	}
	if (size)
		buf[n] = '\0';
	/* "." and ".." cannot be directory entries; a flat group of that name gets '.' escaped */
	if (!strcmp(buf, ".") || !strcmp(buf, "..")) {
		if (size < 3 * n + 1)
			return -ENAMETOOLONG;
		strcpy(buf, n == 1 ? "%2E" : "%2E%2E");
		n *= 3;
	}
	return (int)n;
}

/* Prometheus label values: backslash, double quote and newline escaped. */
static void sb_label(struct sbuf *b, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			sb_puts(b, "\\\\");
		else if (*s == '"')
			sb_puts(b, "\\\"");
		else if (*s == '\n')
			sb_puts(b, "\\n");
		else
			sb_putc(b, *s);
	}
}

/* Length of the valid UTF-8 sequence at s, or 0 if there is none. */
static size_t utf8_len(const unsigned char *s)
{
	size_t n;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0;
	for (size_t i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

/* A JSON string: quotes, backslash and control characters escaped; a byte that is not part
 * of valid UTF-8 is shown as the Latin-1 character of that value (\u00XX). */
static void sb_json_str(struct sbuf *b, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	sb_putc(b, '"');
	while (*s) {
		size_t n = utf8_len(s);

		if (*s == '"' || *s == '\\') {
			sb_putc(b, '\\');
			sb_putc(b, (char)*s);
		} else if (*s < 0x20 || *s == 0x7f || n == 0) {
			sb_printf(b, "\\u%04x", *s);
			n = 1;
		} else {
			for (size_t i = 0; i < n; i++)
				sb_putc(b, (char)s[i]);
		}
		s += n ? n : 1;
	}
	sb_putc(b, '"');
}

/* ns -> seconds with 9 decimals (exact). */
static void sb_seconds(struct sbuf *b, sched_ns ns)
{
	sb_printf(b, "%" PRIu64 ".%09" PRIu64, (uint64_t)(ns / 1000000000u), (uint64_t)(ns % 1000000000u));
}

/* ---------------------------------------------------------------------------------------- */
/* Snapshots                                                                                 */

struct snap_group {
	char *name;	      /* owned */
	char dir[NAME_MAX + 1]; /* ctl_group_dirname(name) */
	bool dup_dir;	      /* an earlier group has the same dir name: not listed */
	uint32_t id, parent;  /* scheduler group ids */
	uint32_t weight;      /* [weight units] registry's */
	bool pinned;	      /* set by an administrator */
	bool valid;	      /* stats filled */
	struct sched_stats st; /* cumulative counters and gauges */
};

struct snap_queue {
	uint64_t key;	/* tgid (or tid) */
	uint32_t group; /* scheduler group id */
	uint8_t ioclass, level;
	bool sync, idle_window, seeky, active;
	struct sched_stats st;
};

#define SNAP_QUEUES 1u /* also copy every live queue */
#define SNAP_TRACE 2u  /* also copy the decision trace */

struct snap {
	unsigned flags;		 /* SNAP_* */
	sched_ns now;		 /* [ns] when the scheduler state was copied */
	struct sched_info info;	 /* device-wide state */
	struct {
		const char *name, *unit; /* static strings of the scheduler */
		int64_t value;		 /* sysfs units */
	} tun[MAX_TUN_NAMES];	 /* tunables of the active policy */
	unsigned nr_tun;	 /* [count] */
	struct snap_group *g;	 /* creation order, root first */
	size_t ng;		 /* [count] */
	struct snap_queue *q;	 /* deterministic order (sched_foreach_queue) */
	size_t nq, capq;	 /* [count] */
	struct sched_trace_rec *tr; /* oldest first; a mapping charged to acct */
	size_t ntr;		 /* [records] */
	struct ctl_acct *acct;	 /* the opener's, for tr; NULL when no trace is copied */
	uint32_t tr_cap;	 /* [records] ring size, 0 = off */
	uint64_t tr_total;	 /* [records] written since the trace was (re)started */
	bool oom;		 /* an allocation under the lock failed */
};

static void snap_free(struct snap *s)
{
	for (size_t i = 0; i < s->ng; i++)
		free(s->g[i].name);
	free(s->g);
	free(s->q);
	if (s->tr)
		map_free(s->acct, s->tr, (size_t)s->tr_cap * sizeof(*s->tr));
	memset(s, 0, sizeof(*s));
}

struct grp_copy {
	struct snap *s;
	bool oom;
};

/* Under the registry lock: copy names and weights only. */
static void copy_group(void *arg, const struct grp_info *gi)
{
	struct grp_copy *gc = arg;
	struct snap *s = gc->s;
	struct snap_group *g, *arr;

	if (gc->oom)
		return;
	arr = realloc(s->g, (s->ng + 1) * sizeof(*s->g));
	if (!arr) {
		gc->oom = true;
		return;
	}
	s->g = arr;
	g = &s->g[s->ng];
	memset(g, 0, sizeof(*g));
	g->name = strdup(gi->name);
	if (!g->name) {
		gc->oom = true;
		return;
	}
	g->id = gi->id;
	g->parent = gi->parent;
	g->weight = gi->weight;
	g->pinned = gi->pinned;
	s->ng++;
}

static void copy_queue(void *arg, const struct sched_queue_info *qi)
{
	struct snap *s = arg;
	struct snap_queue *q;

	if (s->oom)
		return;
	if (s->nq == s->capq) {
		size_t cap = s->capq ? 2 * s->capq : 16;
		/* Allocating under the executor lock: bounded by the number of live queues, and
		 * only when someone opens queues/metrics/stat.json. */
		q = realloc(s->q, cap * sizeof(*q));
		if (!q) {
			s->oom = true;
			return;
		}
		s->q = q;
		s->capq = cap;
	}
	q = &s->q[s->nq++];
	q->key = qi->queue_key;
	q->group = qi->group;
	q->ioclass = qi->ioclass;
	q->level = qi->level;
	q->sync = qi->sync;
	q->idle_window = qi->idle_window;
	q->seeky = qi->seeky;
	q->active = qi->active;
	q->st = *qi->stats;
}

/* Under the executor lock: copy, never format. */
static int copy_sched(void *arg, struct sched *sd)
{
	struct snap *s = arg;
	const struct sched_tunable_desc *d;

	s->now = clk_now();
	sched_get_info(sd, &s->info);
	s->nr_tun = 0;
	for (d = sched_tunables(sched_policy(sd)); d->name && s->nr_tun < MAX_TUN_NAMES; d++) {
		int64_t v;

		if (sched_tunable_get(sd, d->name, &v) == 0) {
			s->tun[s->nr_tun].name = d->name;
			s->tun[s->nr_tun].unit = d->unit;
			s->tun[s->nr_tun].value = v;
			s->nr_tun++;
		}
	}
	for (size_t i = 0; i < s->ng; i++)
		s->g[i].valid = sched_group_stats(sd, s->g[i].id, &s->g[i].st) == 0;
	if (s->flags & SNAP_QUEUES)
		sched_foreach_queue(sd, copy_queue, s);
	if (s->flags & SNAP_TRACE) {
		uint64_t pos = 0;

		s->tr_cap = sched_trace_capacity(sd);
		s->tr_total = sched_trace_total(sd);
		s->tr = s->tr_cap ? map_alloc(s->acct, (size_t)s->tr_cap * sizeof(*s->tr)) : NULL;
		if (s->tr_cap && !s->tr)
			s->oom = true;
		else
			s->ntr = sched_trace_read(sd, &pos, s->tr, s->tr_cap);
	}
	return s->oom ? -ENOMEM : 0;
}

static const struct snap_group *snap_group_by_id(const struct snap *s, uint32_t id)
{
	for (size_t i = 0; i < s->ng; i++)
		if (s->g[i].id == id)
			return &s->g[i];
	return NULL;
}

/* Group directory `dir`, or NULL; the first group with that dir name owns it. */
static const struct snap_group *snap_group_by_dir(const struct snap *s, const char *dir)
{
	for (size_t i = 0; i < s->ng; i++)
		if (!s->g[i].dup_dir && !strcmp(s->g[i].dir, dir))
			return &s->g[i];
	return NULL;
}

/* Groups only (no scheduler state): for lookups and directory listings. */
static int groups_only(struct ctl *c, struct snap *s)
{
	struct grp_copy gc = { s, false };

	memset(s, 0, sizeof(*s));
	if (c->groups) {
		grp_expire(c->groups, clk_now()); /* listings show expired groups gone */
		grp_foreach(c->groups, copy_group, &gc);
	} else {
		struct grp_info root = { .name = "/", .id = SCHED_ROOT_GROUP,
					 .parent = SCHED_ROOT_GROUP, .weight = SCHED_WEIGHT_MAX };
		copy_group(&gc, &root);
	}
	if (gc.oom) {
		snap_free(s);
		return -ENOMEM;
	}
	for (size_t i = 0; i < s->ng; i++) {
		ctl_group_dirname(s->g[i].name, s->g[i].dir, sizeof(s->g[i].dir));
		for (size_t j = 0; j < i && !s->g[i].dup_dir; j++)
			s->g[i].dup_dir = !strcmp(s->g[i].dir, s->g[j].dir);
	}
	return 0;
}

/* Takes a snapshot: group names, then the scheduler state; a trace copy is charged to acct.
 * Returns 0 or -ENOMEM (then *s is empty). */
static int snap_take(struct ctl *c, struct snap *s, unsigned flags, struct ctl_acct *acct)
{
	int rc = groups_only(c, s);

	if (rc)
		return rc;
	s->flags = flags;
	s->acct = acct;
	rc = exec_with_sched(c->ex, copy_sched, s);
	if (rc)
		snap_free(s);
	return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* Content generators                                                                        */

static uint64_t us(sched_ns ns)
{
	return ns / SCHED_NS_PER_US;
}

static uint64_t sum2(const uint64_t a[2])
{
	return a[0] + a[1];
}

static void gen_iostat_line(struct sbuf *b, const struct snap_group *g)
{
	const struct sched_stats *st = &g->st;

	sb_field(b, g->name);
	sb_printf(b,
		  " rbytes=%" PRIu64 " wbytes=%" PRIu64 " rios=%" PRIu64 " wios=%" PRIu64
		  " dbytes=0 dios=0 wait_usec=%" PRIu64 " service_usec=%" PRIu64
		  " slices=%" PRIu64 " idle_usec=%" PRIu64 " merged=%" PRIu64 " queued=%" PRIu64
		  " p99_usec=%" PRIu64 " disk_usec=%" PRIu64 "\n",
		  sum2(st->bytes[SCHED_DIR_READ]), sum2(st->bytes[SCHED_DIR_WRITE]),
		  sum2(st->ios[SCHED_DIR_READ]), sum2(st->ios[SCHED_DIR_WRITE]), us(st->wait_time),
		  us(st->service_time), st->slices, us(st->idle_time), st->merged, st->queued,
		  us(sched_hist_percentile(&st->latency, 990)), us(st->disk_time));
}

static void gen_scheduler(struct sbuf *b, const struct snap *s)
{
	for (int p = 0; p < SCHED_POLICY_COUNT; p++) {
		const char *n = sched_policy_name((enum sched_policy)p);

		sb_printf(b, p == (int)s->info.policy ? "%s[%s]" : "%s%s", p ? " " : "", n);
	}
	sb_putc(b, '\n');
}

static const char *class_name(uint8_t ioclass)
{
	switch (ioclass) {
	case SCHED_CLASS_RT:
		return "rt";
	case SCHED_CLASS_IDLE:
		return "idle";
	default:
		return "be";
	}
}

/* /proc/PID/comm without its newline, or "-" if the process is gone. */
static void read_comm(uint64_t pid, char *buf, size_t size)
{
	char path[64];
	FILE *f;

	snprintf(buf, size, "-");
	snprintf(path, sizeof(path), "/proc/%" PRIu64 "/comm", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(buf, (int)size, f)) {
		buf[strcspn(buf, "\n")] = '\0';
		if (!buf[0])
			snprintf(buf, size, "-");
	} else {
		snprintf(buf, size, "-");
	}
	fclose(f);
}

static void group_label(const struct snap *s, uint32_t id, char *buf, size_t size)
{
	const struct snap_group *g = snap_group_by_id(s, id);

	if (g)
		snprintf(buf, size, "%s", g->name);
	else
		snprintf(buf, size, "#%" PRIu32, id); /* created after the name snapshot */
}

static uint64_t wait_avg_us(const struct sched_stats *st)
{
	uint64_t n = sum2(st->ios[0]) + sum2(st->ios[1]);

	return n ? us(st->wait_time) / n : 0;
}

static void gen_queues(struct sbuf *b, const struct snap *s)
{
	sb_puts(b, "pid comm group class sync active queued in_flight dispatched bytes "
		   "wait_avg_usec p50_usec p99_usec idle_window seeky\n");
	for (size_t i = 0; i < s->nq; i++) {
		const struct snap_queue *q = &s->q[i];
		char comm[64], grp[PATH_MAX];

		/* async queues are shared per (group, class, level) as in CFQ: their key is
		 * class << 3 | level, not a process */
		if (q->sync) {
			read_comm(q->key, comm, sizeof(comm));
			sb_printf(b, "%" PRIu64 " ", q->key);
		} else {
			snprintf(comm, sizeof(comm), "-");
			sb_puts(b, "- ");
		}
		group_label(s, q->group, grp, sizeof(grp));
		sb_field(b, comm);
		sb_putc(b, ' ');
		sb_field(b, grp);
		if (q->ioclass == SCHED_CLASS_IDLE)
			sb_puts(b, " idle");
		else
			sb_printf(b, " %s/%u", class_name(q->ioclass), q->level);
		sb_printf(b,
			  " %s %s %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
			  " %" PRIu64 " %" PRIu64 " %s %s\n",
			  q->sync ? "sync" : "async", q->active ? "yes" : "no", q->st.queued,
			  q->st.in_flight, q->st.dispatched,
			  sum2(q->st.bytes[0]) + sum2(q->st.bytes[1]), wait_avg_us(&q->st),
			  us(sched_hist_percentile(&q->st.latency, 500)),
			  us(sched_hist_percentile(&q->st.latency, 990)),
			  q->idle_window ? "on" : "off", q->seeky ? "yes" : "no");
	}
}

static void gen_trace(struct sbuf *b, const struct snap *s)
{
	if (!s->tr_cap) {
		sb_printf(b, "# trace off: write a record count (1..%u) to this file to start it\n",
			  SCHED_TRACE_MAX);
		return;
	}
	sb_printf(b, "# %" PRIu32 " records kept, %" PRIu64 " written since started, %" PRIu64
		     " overwritten\n",
		  s->tr_cap, s->tr_total, s->tr_total - s->ntr);
	sb_puts(b, "# time_s event queue kind group detail\n");
	for (size_t i = 0; i < s->ntr; i++) {
		const struct sched_trace_rec *r = &s->tr[i];
		char grp[PATH_MAX], detail[128];

		sb_printf(b, "%" PRIu64 ".%09" PRIu64 " %s ", r->time / 1000000000u,
			  r->time % 1000000000u, sched_trace_event_name(r->event));
		if (r->event == SCHED_TR_SWITCH) {
			sb_puts(b, "- - -");
		} else {
			group_label(s, r->group, grp, sizeof(grp));
			sb_printf(b, "%" PRIu64 " %s ", r->queue_key, r->sync ? "sync" : "async");
			sb_field(b, grp);
		}
		sched_trace_detail(r, detail, sizeof(detail));
		sb_puts(b, detail);
		sb_putc(b, '\n');
	}
}

/* Histogram buckets exported to Prometheus: le = 2^k us for k in [HIST_K_MIN, HIST_K_MAX].
 * 2^k us is the lower bound of the core's bucket 1 + 4k, so "<= 2^k us" is the sum of buckets
 * 0..4k: exact up to samples of exactly 2^k us, which count in the next bucket. */
#define HIST_K_MIN 2  /* 4 us */
#define HIST_K_MAX 23 /* 8.388608 s; 4 * 23 + 1 < SCHED_HIST_BUCKETS */
_Static_assert(4 * HIST_K_MAX + 1 < SCHED_HIST_BUCKETS, "le buckets must be core buckets");

static void sb_le(struct sbuf *b, unsigned k)
{
	uint64_t v = (uint64_t)1 << k; /* [us] */
	char frac[8];
	int n;

	n = snprintf(frac, sizeof(frac), "%06" PRIu64, v % 1000000u);
	while (n > 0 && frac[n - 1] == '0')
		frac[--n] = '\0';
	sb_printf(b, "%" PRIu64 "%s%s", v / 1000000u, n ? "." : "", frac);
}

static void family(struct sbuf *b, const char *name, const char *type, const char *help)
{
	sb_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One sample line per group: name{group="..."<extra>} value. */
#define FOR_GROUPS(s, g)                                                                 \
	for (const struct snap_group *g = (s)->g; g < (s)->g + (s)->ng; g++)             \
		if (g->valid)

static void sample_group(struct sbuf *b, const char *name, const struct snap_group *g,
			 const char *extra)
{
	sb_printf(b, "%s{group=\"", name);
	sb_label(b, g->name);
	sb_printf(b, "\"%s} ", extra ? extra : "");
}

static void gen_metrics(struct sbuf *b, const struct snap *s)
{
	family(b, "cfqfs_scheduler_info", "gauge",
	       "The active I/O scheduler policy (always 1, the policy is a label).");
	sb_printf(b, "cfqfs_scheduler_info{scheduler=\"%s\"} 1\n",
		  sched_policy_name(s->info.policy));
	family(b, "cfqfs_iops_mode", "gauge",
	       "1 when CFQ charges groups by requests (IOPS mode), 0 when by time.");
	sb_printf(b, "cfqfs_iops_mode %d\n", s->info.iops_mode ? 1 : 0);
	family(b, "cfqfs_cooperator_switches_total", "counter",
	       "CFQ: close cooperators served instead of idling (a process whose next request "
	       "continues another's), since the policy was last selected.");
	sb_printf(b, "cfqfs_cooperator_switches_total %" PRIu64 "\n", s->info.coop_switches);
	family(b, "cfqfs_queued_requests", "gauge", "Requests waiting in the scheduler.");
	sb_printf(b, "cfqfs_queued_requests %" PRIu64 "\n", s->info.queued);
	family(b, "cfqfs_in_flight_requests", "gauge",
	       "Requests dispatched to SOURCE and not yet completed.");
	sb_printf(b, "cfqfs_in_flight_requests %" PRIu64 "\n", s->info.in_flight);
	family(b, "cfqfs_groups", "gauge", "Scheduler groups.");
	sb_printf(b, "cfqfs_groups %" PRIu64 "\n", s->info.nr_groups);
	family(b, "cfqfs_queues", "gauge", "Live scheduler queues (io contexts).");
	sb_printf(b, "cfqfs_queues %" PRIu64 "\n", s->info.nr_queues);
	family(b, "cfqfs_tunable", "gauge",
	       "Tunables of the active policy, in their sysfs units (the unit label).");
	for (unsigned i = 0; i < s->nr_tun; i++)
		sb_printf(b, "cfqfs_tunable{name=\"%s\",unit=\"%s\"} %" PRId64 "\n", s->tun[i].name,
			  s->tun[i].unit, s->tun[i].value);

	family(b, "cfqfs_group_weight", "gauge", "Group weight (10..1000).");
	FOR_GROUPS(s, g)
	{
		sample_group(b, "cfqfs_group_weight", g, NULL);
		sb_printf(b, "%" PRIu32 "\n", g->weight);
	}
	family(b, "cfqfs_group_bytes_total", "counter",
	       "Bytes requested by reads and writes, counted at dispatch.");
	FOR_GROUPS(s, g)
	{
		sample_group(b, "cfqfs_group_bytes_total", g, ",op=\"read\"");
		sb_printf(b, "%" PRIu64 "\n", sum2(g->st.bytes[SCHED_DIR_READ]));
		sample_group(b, "cfqfs_group_bytes_total", g, ",op=\"write\"");
		sb_printf(b, "%" PRIu64 "\n", sum2(g->st.bytes[SCHED_DIR_WRITE]));
	}
	family(b, "cfqfs_group_ios_total", "counter",
	       "Requests before merging, counted at dispatch; fsyncs count as writes.");
	FOR_GROUPS(s, g)
	{
		sample_group(b, "cfqfs_group_ios_total", g, ",op=\"read\"");
		sb_printf(b, "%" PRIu64 "\n", sum2(g->st.ios[SCHED_DIR_READ]));
		sample_group(b, "cfqfs_group_ios_total", g, ",op=\"write\"");
		sb_printf(b, "%" PRIu64 "\n", sum2(g->st.ios[SCHED_DIR_WRITE]));
	}
	struct {
		const char *name, *help;
		size_t off;
	} counters[] = {
		{ "cfqfs_group_fsyncs_total", "fsync and fdatasync requests.",
		  offsetof(struct sched_stats, fsyncs) },
		{ "cfqfs_group_merged_total", "Requests absorbed by merging.",
		  offsetof(struct sched_stats, merged) },
		{ "cfqfs_group_dispatched_total", "I/Os issued to SOURCE (after merging).",
		  offsetof(struct sched_stats, dispatched) },
		{ "cfqfs_group_errors_total", "Completions with an error.",
		  offsetof(struct sched_stats, errors) },
		{ "cfqfs_group_slices_total", "Times a queue of the group became active (CFQ).",
		  offsetof(struct sched_stats, slices) },
	};
	for (size_t i = 0; i < NELEM(counters); i++) {
		family(b, counters[i].name, "counter", counters[i].help);
		FOR_GROUPS(s, g)
		{
			sample_group(b, counters[i].name, g, NULL);
			sb_printf(b, "%" PRIu64 "\n",
				  *(const uint64_t *)((const char *)&g->st + counters[i].off));
		}
	}
	struct {
		const char *name, *help;
		size_t off;
	} seconds[] = {
		{ "cfqfs_group_wait_seconds_total", "Time requests waited in the scheduler.",
		  offsetof(struct sched_stats, wait_time) },
		{ "cfqfs_group_service_seconds_total", "Time from dispatch to completion.",
		  offsetof(struct sched_stats, service_time) },
		{ "cfqfs_group_disk_time_seconds_total", "Device time charged (CFQ slices).",
		  offsetof(struct sched_stats, disk_time) },
		{ "cfqfs_group_idle_seconds_total",
		  "Time the scheduler idled waiting for the group.",
		  offsetof(struct sched_stats, idle_time) },
	};
	for (size_t i = 0; i < NELEM(seconds); i++) {
		family(b, seconds[i].name, "counter", seconds[i].help);
		FOR_GROUPS(s, g)
		{
			sample_group(b, seconds[i].name, g, NULL);
			sb_seconds(b, *(const sched_ns *)((const char *)&g->st + seconds[i].off));
			sb_putc(b, '\n');
		}
	}
	family(b, "cfqfs_group_queued_requests", "gauge", "Requests of the group waiting.");
	FOR_GROUPS(s, g)
	{
		sample_group(b, "cfqfs_group_queued_requests", g, NULL);
		sb_printf(b, "%" PRIu64 "\n", g->st.queued);
	}
	family(b, "cfqfs_group_in_flight_requests", "gauge",
	       "Requests of the group dispatched, not completed.");
	FOR_GROUPS(s, g)
	{
		sample_group(b, "cfqfs_group_in_flight_requests", g, NULL);
		sb_printf(b, "%" PRIu64 "\n", g->st.in_flight);
	}
	family(b, "cfqfs_group_latency_seconds", "histogram",
	       "Request latency from arrival to completion.");
	FOR_GROUPS(s, g)
	{
		uint64_t cum = 0;
		unsigned i = 0;

		for (unsigned k = HIST_K_MIN; k <= HIST_K_MAX; k++) {
			for (; i <= 4 * k; i++)
				cum += g->st.latency.count[i];
			sb_puts(b, "cfqfs_group_latency_seconds_bucket{group=\"");
			sb_label(b, g->name);
			sb_puts(b, "\",le=\"");
			sb_le(b, k);
			sb_printf(b, "\"} %" PRIu64 "\n", cum);
		}
		sb_puts(b, "cfqfs_group_latency_seconds_bucket{group=\"");
		sb_label(b, g->name);
		sb_printf(b, "\",le=\"+Inf\"} %" PRIu64 "\n", g->st.latency.total);
		sample_group(b, "cfqfs_group_latency_seconds_sum", g, NULL);
		sb_seconds(b, g->st.latency.sum);
		sb_putc(b, '\n');
		sample_group(b, "cfqfs_group_latency_seconds_count", g, NULL);
		sb_printf(b, "%" PRIu64 "\n", g->st.latency.total);
	}
}

static void json_group(struct sbuf *b, struct ctl *c, const struct snap *s,
		       const struct snap_group *g)
{
	const struct sched_stats *st = &g->st;
	pid_t procs[64];
	int np = c->groups ? grp_procs(c->groups, g->id,
				       s->now > CTL_PROCS_WINDOW ? s->now - CTL_PROCS_WINDOW : 0,
				       procs, NELEM(procs))
			   : 0;

	sb_puts(b, "{\"name\":");
	sb_json_str(b, g->name);
	sb_puts(b, ",\"dir\":");
	sb_json_str(b, g->dup_dir ? "" : g->dir);
	sb_printf(b,
		  ",\"id\":%" PRIu32 ",\"parent\":%" PRIu32 ",\"weight\":%" PRIu32
		  ",\"pinned\":%s,\"rbytes\":%" PRIu64 ",\"wbytes\":%" PRIu64 ",\"rios\":%" PRIu64
		  ",\"wios\":%" PRIu64 ",\"dbytes\":0,\"dios\":0,\"fsyncs\":%" PRIu64
		  ",\"merged\":%" PRIu64 ",\"dispatched\":%" PRIu64 ",\"errors\":%" PRIu64
		  ",\"wait_usec\":%" PRIu64 ",\"service_usec\":%" PRIu64
		  ",\"disk_time_usec\":%" PRIu64 ",\"slices\":%" PRIu64 ",\"idle_usec\":%" PRIu64
		  ",\"queued\":%" PRIu64 ",\"in_flight\":%" PRIu64 ",\"latency_count\":%" PRIu64
		  ",\"latency_sum_usec\":%" PRIu64 ",\"p50_usec\":%" PRIu64 ",\"p99_usec\":%" PRIu64
		  ",\"max_usec\":%" PRIu64 ",\"procs\":[",
		  g->id, g->parent, g->weight, g->pinned ? "true" : "false",
		  sum2(st->bytes[SCHED_DIR_READ]), sum2(st->bytes[SCHED_DIR_WRITE]),
		  sum2(st->ios[SCHED_DIR_READ]), sum2(st->ios[SCHED_DIR_WRITE]), st->fsyncs,
		  st->merged, st->dispatched, st->errors, us(st->wait_time), us(st->service_time),
		  us(st->disk_time), st->slices, us(st->idle_time), st->queued, st->in_flight,
		  st->latency.total, us(st->latency.sum),
		  us(sched_hist_percentile(&st->latency, 500)),
		  us(sched_hist_percentile(&st->latency, 990)), us(st->latency.max));
	for (int i = 0; i < np; i++)
		sb_printf(b, "%s%d", i ? "," : "", (int)procs[i]);
	sb_puts(b, "]}");
}

static void gen_json(struct sbuf *b, struct ctl *c, const struct snap *s)
{
	sb_puts(b, "{\"scheduler\":");
	sb_json_str(b, sched_policy_name(s->info.policy));
	sb_puts(b, ",\"schedulers\":[");
	for (int p = 0; p < SCHED_POLICY_COUNT; p++) {
		if (p)
			sb_putc(b, ',');
		sb_json_str(b, sched_policy_name((enum sched_policy)p));
	}
	sb_printf(b,
		  "],\"now_ns\":%" PRIu64 ",\"iops_mode\":%s,\"hw_tag\":%d,\"coop_switches\":%" PRIu64
		  ",\"nr_groups\":%" PRIu64 ",\"nr_queues\":%" PRIu64 ",\"queued\":%" PRIu64
		  ",\"in_flight\":%" PRIu64 ",\n\"tunables\":{",
		  s->now, s->info.iops_mode ? "true" : "false", s->info.hw_tag,
		  s->info.coop_switches, s->info.nr_groups, s->info.nr_queues, s->info.queued,
		  s->info.in_flight);
	for (unsigned i = 0; i < s->nr_tun; i++) {
		if (i)
			sb_putc(b, ',');
		sb_json_str(b, s->tun[i].name);
		sb_printf(b, ":%" PRId64, s->tun[i].value);
	}
	sb_puts(b, "},\n\"groups\":[");
	bool first = true;
	FOR_GROUPS(s, g)
	{
		sb_puts(b, first ? "\n" : ",\n");
		first = false;
		json_group(b, c, s, g);
	}
	sb_puts(b, "],\n\"queues\":[");
	for (size_t i = 0; i < s->nq; i++) {
		const struct snap_queue *q = &s->q[i];
		char comm[64], grp[PATH_MAX];

		group_label(s, q->group, grp, sizeof(grp));
		sb_puts(b, i ? ",\n" : "\n");
		if (q->sync) {
			read_comm(q->key, comm, sizeof(comm));
			sb_printf(b, "{\"pid\":%" PRIu64 ",\"comm\":", q->key);
			sb_json_str(b, comm);
		} else {
			sb_puts(b, "{\"pid\":null,\"comm\":null"); /* shared async queue */
		}
		sb_puts(b, ",\"group\":");
		sb_json_str(b, grp);
		sb_printf(b,
			  ",\"class\":\"%s\",\"level\":%u,\"sync\":%s,\"active\":%s,"
			  "\"queued\":%" PRIu64 ",\"in_flight\":%" PRIu64 ",\"dispatched\":%" PRIu64
			  ",\"bytes\":%" PRIu64 ",\"wait_avg_usec\":%" PRIu64 ",\"p50_usec\":%" PRIu64
			  ",\"p99_usec\":%" PRIu64 ",\"idle_window\":%s,\"seeky\":%s}",
			  class_name(q->ioclass), q->level, q->sync ? "true" : "false",
			  q->active ? "true" : "false", q->st.queued, q->st.in_flight,
			  q->st.dispatched, sum2(q->st.bytes[0]) + sum2(q->st.bytes[1]),
			  wait_avg_us(&q->st), us(sched_hist_percentile(&q->st.latency, 500)),
			  us(sched_hist_percentile(&q->st.latency, 990)),
			  q->idle_window ? "true" : "false", q->seeky ? "true" : "false");
	}
	sb_puts(b, "]}\n");
}

/* Generates the content of file node (k, arg). Returns 0 (b filled) or -errno. */
/* What a file's snapshot must hold beyond the groups and the device-wide state. */
static unsigned snap_flags(enum kind k)
{
	if (k == K_QUEUES || k == K_METRICS || k == K_JSON)
		return SNAP_QUEUES;
	return k == K_TRACE ? SNAP_TRACE : 0;
}

/* Generates the content of a file into b (b->acct set). Returns 0, -ENOENT, -EISDIR,
 * -ENOMEM, or the refusal of b->acct (-EMFILE, -ENFILE). */
static int generate(struct ctl *c, enum kind k, uint32_t arg, struct sbuf *b)
{
	struct snap s;
	int rc;

	if (k == K_DEVICE) { /* fixed at mount: no scheduler state to copy */
		sb_puts(b, c->device_info);
		rc = b->oom ? -ENOMEM : 0;
		goto out;
	}
	rc = snap_take(c, &s, snap_flags(k), b->acct);
	if (rc)
		goto out;
	switch (k) {
	case K_SCHEDULER:
		gen_scheduler(b, &s);
		break;
	case K_TUNABLE:
		rc = -ENOENT;
		for (unsigned i = 0; i < s.nr_tun; i++) {
			if (arg < c->nr_tun_names && !strcmp(s.tun[i].name, c->tun_names[arg])) {
				sb_printf(b, "%" PRId64 "\n", s.tun[i].value);
				rc = 0;
			}
		}
		break;
	case K_IOSTAT:
		FOR_GROUPS(&s, g)
			gen_iostat_line(b, g);
		break;
	case K_QUEUES:
		gen_queues(b, &s);
		break;
	case K_METRICS:
		gen_metrics(b, &s);
		break;
	case K_JSON:
		gen_json(b, c, &s);
		break;
	case K_TRACE:
		gen_trace(b, &s);
		break;
	case K_GROUP_WEIGHT:
	case K_GROUP_IOSTAT:
	case K_GROUP_PROCS: {
		const struct snap_group *g = snap_group_by_id(&s, arg);

		if (!g || !g->valid) {
			rc = -ENOENT;
			break;
		}
		if (k == K_GROUP_WEIGHT) {
			sb_printf(b, "%" PRIu32 "\n", g->weight);
		} else if (k == K_GROUP_IOSTAT) {
			gen_iostat_line(b, g);
		} else {
			pid_t procs[64];
			int n = c->groups ? grp_procs(c->groups, arg,
						      s.now > CTL_PROCS_WINDOW
							      ? s.now - CTL_PROCS_WINDOW
							      : 0,
						      procs, NELEM(procs))
					  : 0;
			for (int i = 0; i < n; i++)
				sb_printf(b, "%d\n", (int)procs[i]);
		}
		break;
	}
	default:
		rc = -EISDIR;
		break;
	}
	snap_free(&s);
	if (rc == 0 && b->oom)
		rc = -ENOMEM;
out:
	if (rc == -ENOMEM && b->acct->err)
		rc = b->acct->err;
	return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* Writes                                                                                    */

int ctl_parse_value(const char *buf, size_t size, int64_t *out)
{
	char tmp[32], *end;
	long long v;

	if (size && buf[size - 1] == '\n')
		size--;
	/* strtoll would stop at a NUL and take "5\0junk" for 5 */
	if (size == 0 || size >= sizeof(tmp) || memchr(buf, '\0', size))
		return -EINVAL;
	memcpy(tmp, buf, size);
	tmp[size] = '\0';
	if (!(tmp[0] == '-' || tmp[0] == '+' || (tmp[0] >= '0' && tmp[0] <= '9')))
		return -EINVAL;
	errno = 0;
	v = strtoll(tmp, &end, 10);
	if (errno || *end != '\0' || end == tmp)
		return -EINVAL;
	*out = v;
	return 0;
}

int ctl_parse_policy(const char *buf, size_t size, enum sched_policy *out)
{
	char name[32];

	if (size && buf[size - 1] == '\n')
		size--;
	if (size == 0 || size >= sizeof(name) || memchr(buf, '\0', size))
		return -EINVAL;
	memcpy(name, buf, size);
	name[size] = '\0';
	return sched_policy_parse(name, out) < 0 ? -EINVAL : 0;
}

int ctl_parse_weight(const char *buf, size_t size, uint32_t *out)
{
	int64_t v;

	if (ctl_parse_value(buf, size, &v) != 0 || v < SCHED_WEIGHT_MIN || v > SCHED_WEIGHT_MAX)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

static bool is_tunable_name(const char *s, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	return true;
}

/* a + b + c into buf; false (buf unspecified) if it does not fit. */
static bool join3(char *buf, size_t size, const char *a, const char *b, size_t lb, const char *c)
{
	size_t la = strlen(a), lc = strlen(c);

	if (la + lb + lc >= size)
		return false;
	memcpy(buf, a, la);
	memcpy(buf + la, b, lb);
	memcpy(buf + la + lb, c, lc);
	buf[la + lb + lc] = '\0';
	return true;
}

int ctl_parse_set_arg(const char *arg, char *file, size_t size, const char **value)
{
	const char *eq;
	size_t kl;

	if (!strncmp(arg, "weight:", 7)) {
		char group[PATH_MAX], dir[NAME_MAX + 1];
		size_t gl;
		int n;

		eq = strrchr(arg, '=');
		gl = eq ? (size_t)(eq - arg - 7) : 0;
		if (!eq || gl == 0 || gl >= sizeof(group))
			return -EINVAL;
		memcpy(group, arg + 7, gl);
		group[gl] = '\0';
		n = ctl_group_dirname(group, dir, sizeof(dir));
		if (n < 0 || !join3(file, size, "groups/", dir, (size_t)n, "/weight"))
			return -ENAMETOOLONG;
		*value = eq + 1;
		return CTL_SET_WEIGHT;
	}
	eq = strchr(arg, '=');
	kl = eq ? (size_t)(eq - arg) : 0;
	if (!eq || !is_tunable_name(arg, kl) || kl > NAME_MAX)
		return -EINVAL;
	*value = eq + 1;
	if (kl == 9 && !memcmp(arg, "scheduler", 9))
		return join3(file, size, "", arg, kl, "") ? CTL_SET_SCHEDULER : -ENAMETOOLONG;
	if (kl == 5 && !memcmp(arg, "trace", 5))
		return join3(file, size, "", arg, kl, "") ? CTL_SET_TRACE : -ENAMETOOLONG;
	return join3(file, size, "iosched/", arg, kl, "") ? CTL_SET_TUNABLE : -ENAMETOOLONG;
}

struct switch_args {
	enum sched_policy policy;
};

static int do_switch(void *arg, struct sched *sd)
{
	struct switch_args *a = arg;

	return sched_switch(sd, a->policy, clk_now());
}

struct tunable_args {
	const char *name;
	int64_t value;
	int64_t old;
	enum sched_policy policy;
};

static int do_tunable(void *arg, struct sched *sd)
{
	struct tunable_args *a = arg;
	int rc;

	a->policy = sched_policy(sd);
	rc = sched_tunable_get(sd, a->name, &a->old);
	if (rc)
		return rc; /* not a tunable of the active policy (switched since open) */
	return sched_tunable_set(sd, a->name, a->value);
}

static int do_trace(void *arg, struct sched *sd)
{
	return sched_trace_resize(sd, *(const int64_t *)arg);
}

static int apply_write(struct ctl *c, enum kind k, uint32_t arg, const char *buf, size_t size)
{
	int64_t v;
	uint32_t w;
	int rc;

	switch (k) {
	case K_SCHEDULER: {
		struct switch_args a;

		if (ctl_parse_policy(buf, size, &a.policy) < 0)
			return -EINVAL;
		rc = exec_with_sched(c->ex, do_switch, &a);
		if (rc == 0)
			LOG_INFO("control: scheduler switched to %s", sched_policy_name(a.policy));
		return rc;
	}
	case K_TUNABLE: {
		struct tunable_args a;

		if (arg >= c->nr_tun_names)
			return -ENOENT;
		rc = ctl_parse_value(buf, size, &v);
		if (rc)
			return rc;
		a.name = c->tun_names[arg];
		a.value = v;
		rc = exec_with_sched(c->ex, do_tunable, &a);
		if (rc == 0)
			LOG_INFO("control: %s %s = %" PRId64 " (was %" PRId64 ")",
				 sched_policy_name(a.policy), a.name, v, a.old);
		return rc;
	}
	case K_GROUP_WEIGHT: {
		struct snap s;
		const struct snap_group *g;

		rc = ctl_parse_weight(buf, size, &w);
		if (rc)
			return rc;
		if (!c->groups)
			return -EINVAL; /* no registry: the root weight is fixed */
		rc = groups_only(c, &s);
		if (rc)
			return rc;
		g = snap_group_by_id(&s, arg);
		rc = g ? grp_set_weight(c->groups, g->name, w) : -ENOENT;
		if (rc == 0)
			LOG_INFO("control: group %s weight = %" PRIu32, g->name, w);
		snap_free(&s);
		return rc;
	}
	case K_TRACE:
		rc = ctl_parse_value(buf, size, &v);
		if (rc)
			return rc;
		rc = exec_with_sched(c->ex, do_trace, &v);
		if (rc == 0)
			LOG_INFO("control: trace %s (%" PRId64 " records)", v ? "started" : "off", v);
		return rc;
	default:
		return -EACCES;
	}
}

/* ---------------------------------------------------------------------------------------- */
/* Nodes: existence, attributes, lookup                                                      */

/* Is tunable `idx` one of the active policy's? */
struct active_args {
	const char *name;
	bool found;
};

static int check_active(void *arg, struct sched *sd)
{
	struct active_args *a = arg;
	int64_t v;

	a->found = sched_tunable_get(sd, a->name, &v) == 0;
	return 0;
}

static bool tunable_active(struct ctl *c, uint32_t idx)
{
	struct active_args a = { NULL, false };

	if (idx >= c->nr_tun_names)
		return false;
	a.name = c->tun_names[idx];
	exec_with_sched(c->ex, check_active, &a);
	return a.found;
}

static bool group_exists(struct ctl *c, uint32_t id)
{
	struct snap s;
	bool ok;

	if (groups_only(c, &s))
		return false;
	ok = snap_group_by_id(&s, id) != NULL;
	snap_free(&s);
	return ok;
}

/* Does node (k, arg) exist now? */
static bool node_exists(struct ctl *c, enum kind k, uint32_t arg)
{
	switch (k) {
	case K_TUNABLE:
		return tunable_active(c, arg);
	case K_GROUP_DIR:
	case K_GROUP_WEIGHT:
	case K_GROUP_IOSTAT:
	case K_GROUP_PROCS:
		return group_exists(c, arg);
	default:
		return arg == 0;
	}
}

static void fill_attr(const struct ctl *c, fuse_ino_t ino, enum kind k, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	/* The kernel enforces these (default_permissions): with ctl_access = "owner", other
	 * users cannot read group names, pids or commands. */
	mode_t others = c->private_read ? 0 : 055;
	if (kind_is_dir(k)) {
		st->st_mode = S_IFDIR | 0700 | others;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | (kind_is_writable(k) ? 0600 : 0400) | (others & 044);
		st->st_nlink = 1;
	}
	st->st_uid = c->owner;
	st->st_gid = c->owner_gid;
	st->st_size = 0; /* content is generated at open; reads are direct_io */
	st->st_blksize = 4096;
	st->st_atim = st->st_mtim = st->st_ctim = c->mtime;
}

static void fill_entry(const struct ctl *c, fuse_ino_t ino, enum kind k,
		       struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = ino;
	e->generation = 0;
	fill_attr(c, ino, k, &e->attr);
	/* Zero timeouts: the listing follows the active policy and the group set. */
	e->attr_timeout = 0;
	e->entry_timeout = 0;
}

void ctl_root_entry(const struct ctl *c, struct fuse_entry_param *e)
{
	fill_entry(c, mkino(K_ROOT, 0), K_ROOT, e);
}

/* Finds `name` in directory (k, arg). Returns 0 with *ck and *carg set, or -ENOENT/-ENOTDIR. */
static int find_child(struct ctl *c, enum kind k, uint32_t arg, const char *name,
		      enum kind *ck, uint32_t *carg)
{
	*carg = 0;
	if (!strcmp(name, ".")) {
		*ck = k;
		*carg = arg;
		return 0;
	}
	switch (k) {
	case K_ROOT:
		for (size_t i = 0; i < NELEM(root_children); i++) {
			if (!strcmp(name, root_children[i].name)) {
				*ck = root_children[i].kind;
				return 0;
			}
		}
		return -ENOENT;
	case K_IOSCHED_DIR:
		if (!strcmp(name, "..")) {
			*ck = K_ROOT;
			return 0;
		}
		for (uint32_t i = 0; i < c->nr_tun_names; i++) {
			if (!strcmp(name, c->tun_names[i])) {
				if (!tunable_active(c, i))
					return -ENOENT;
				*ck = K_TUNABLE;
				*carg = i;
				return 0;
			}
		}
		return -ENOENT;
	case K_GROUPS_DIR: {
		struct snap s;
		const struct snap_group *g;

		if (!strcmp(name, "..")) {
			*ck = K_ROOT;
			return 0;
		}
		if (groups_only(c, &s))
			return -ENOMEM;
		g = snap_group_by_dir(&s, name);
		if (g) {
			*ck = K_GROUP_DIR;
			*carg = g->id;
		}
		snap_free(&s);
		return g ? 0 : -ENOENT;
	}
	case K_GROUP_DIR:
		if (!strcmp(name, "..")) {
			*ck = K_GROUPS_DIR;
			return 0;
		}
		for (size_t i = 0; i < NELEM(group_children); i++) {
			if (!strcmp(name, group_children[i].name)) {
				*ck = group_children[i].kind;
				*carg = arg;
				return 0;
			}
		}
		return -ENOENT;
	default:
		return -ENOTDIR;
	}
}

/* Decodes `ino` into an existing node. Returns 0 or -ESTALE/-ENOENT. */
static int get_node(struct ctl *c, fuse_ino_t ino, enum kind *k, uint32_t *arg)
{
	if (!c || !split_ino(ino, k, arg))
		return -ESTALE;
	return node_exists(c, *k, *arg) ? 0 : -ENOENT;
}

static bool caller_may_write(const struct ctl *c, fuse_req_t req)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	return ctx && (ctx->uid == 0 || ctx->uid == c->owner);
}

/* ---------------------------------------------------------------------------------------- */
/* Handlers                                                                                  */

void ctl_lookup(struct ctl *c, fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	enum kind k, ck;
	uint32_t arg, carg;
	int rc;

	rc = get_node(c, parent, &k, &arg);
	if (rc == 0 && !kind_is_dir(k))
		rc = -ENOTDIR;
	if (rc == 0)
		rc = find_child(c, k, arg, name, &ck, &carg);
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	fill_entry(c, mkino(ck, carg), ck, &e);
	fuse_reply_entry(req, &e);
}

void ctl_getattr(struct ctl *c, fuse_req_t req, fuse_ino_t ino)
{
	struct stat st;
	enum kind k;
	uint32_t arg;
	int rc = get_node(c, ino, &k, &arg);

	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	fill_attr(c, ino, k, &st);
	fuse_reply_attr(req, &st, 0);
}

void ctl_setattr(struct ctl *c, fuse_req_t req, fuse_ino_t ino, struct stat *attr, int valid)
{
	struct stat st;
	enum kind k;
	uint32_t arg;
	int rc = get_node(c, ino, &k, &arg);

	(void)attr;
	if (rc == 0 && (valid & (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)))
		rc = -EPERM;
	/* Truncation (shell '>' without atomic O_TRUNC) and times: accepted, nothing to do;
	 * still only for those who may write. */
	if (rc == 0 && (valid & FUSE_SET_ATTR_SIZE) && kind_is_dir(k))
		rc = -EISDIR;
	if (rc == 0 && (valid & FUSE_SET_ATTR_SIZE) && !kind_is_writable(k))
		rc = -EACCES;
	if (rc == 0 && !caller_may_write(c, req))
		rc = -EACCES;
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	fill_attr(c, ino, k, &st);
	fuse_reply_attr(req, &st, 0);
}

void ctl_access(struct ctl *c, fuse_req_t req, fuse_ino_t ino, int mask)
{
	enum kind k;
	uint32_t arg;
	int rc = get_node(c, ino, &k, &arg);

	if (rc == 0 && (mask & W_OK) &&
	    (kind_is_dir(k) || !kind_is_writable(k) || !caller_may_write(c, req)))
		rc = -EACCES;
	if (rc == 0 && (mask & X_OK) && !kind_is_dir(k))
		rc = -EACCES;
	fuse_reply_err(req, -rc);
}

/* An open control file (fi->fh). Immutable after open. */
struct ctl_handle {
	enum kind kind;	      /* what the file is */
	uint32_t arg;	      /* group id or tunable index */
	bool writer;	      /* opened for writing (by someone allowed to) */
	struct sbuf content;  /* generated at open (p NULL for write-only handles); charged */
	struct ctl_acct acct; /* what this handle holds: content and the handle itself */
};

/* Frees h and gives back what it held. */
static void handle_free(struct ctl_handle *h)
{
	struct ctl_acct acct;

	sb_release(&h->content); /* uncharges h->acct */
	acct = h->acct;
	free(h);
	acct_uncharge(&acct, acct.bytes); /* the handle itself */
}

void ctl_open(struct ctl *c, fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct ctl_handle *h = NULL;
	struct ctl_acct acct;
	int acc = fi->flags & O_ACCMODE;
	enum kind k;
	uint32_t arg;
	int rc = get_node(c, ino, &k, &arg);

	if (rc)
		goto out;
	if (kind_is_dir(k)) {
		rc = -EISDIR;
		goto out;
	}
	if (acc != O_RDONLY && (!kind_is_writable(k) || !caller_may_write(c, req))) {
		rc = -EACCES;
		goto out;
	}
	acct = acct_for(c, req);
	rc = acct_charge(&acct, sizeof(*h));
	if (rc)
		goto out;
	h = calloc(1, sizeof(*h));
	if (!h) {
		rc = -ENOMEM;
		goto out_uncharge;
	}
	h->kind = k;
	h->arg = arg;
	h->writer = acc != O_RDONLY;
	h->acct = acct;
	h->content.acct = &h->acct;
	if (acc != O_WRONLY) {
		rc = generate(c, k, arg, &h->content);
		if (rc)
			goto out_free;
		sb_fit(&h->content);
	}
	fi->fh = (uint64_t)(uintptr_t)h;
	fi->direct_io = 1;
	fi->keep_cache = 0;
	if (fuse_reply_open(req, fi) == -ENOENT)
		handle_free(h); /* interrupted: no release will come */
	return;

out_free:
	handle_free(h);
	goto out;
out_uncharge:
	acct_uncharge(&acct, sizeof(*h));
out:
	fuse_reply_err(req, -rc);
}

void ctl_read(struct ctl *c, fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct ctl_handle *h = (struct ctl_handle *)(uintptr_t)fi->fh;

	(void)c;
	if (!h->content.p || off < 0 || (size_t)off >= h->content.len) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	if (size > h->content.len - (size_t)off)
		size = h->content.len - (size_t)off;
	/*
	 * Reply from a copy: once the kernel has the data the reader may close the file, and the
	 * RELEASE (another thread) unmaps the content while this thread may still be inside the reply's
	 * writev (sanitizers read the iovec after the syscall returns).
	 */
	char *copy = malloc(size);
	if (!copy) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	memcpy(copy, h->content.p + off, size);
	fuse_reply_buf(req, copy, size);
	free(copy);
}

void ctl_write(struct ctl *c, fuse_req_t req, const char *buf, size_t size,
	       struct fuse_file_info *fi)
{
	struct ctl_handle *h = (struct ctl_handle *)(uintptr_t)fi->fh;
	int rc;

	if (!c) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	if (!h->writer || !caller_may_write(c, req)) {
		fuse_reply_err(req, EACCES);
		return;
	}
	rc = apply_write(c, h->kind, h->arg, buf, size);
	if (rc) {
		LOG_DEBUG("control: write of %zu bytes refused: %s", size, strerror(-rc));
		fuse_reply_err(req, -rc);
	} else {
		fuse_reply_write(req, size);
	}
}

void ctl_release(struct ctl *c, fuse_req_t req, struct fuse_file_info *fi)
{
	struct ctl_handle *h = (struct ctl_handle *)(uintptr_t)fi->fh;

	(void)c;
	if (h)
		handle_free(h);
	fuse_reply_err(req, 0);
}

/* A directory listing taken at opendir, so offsets (index + 1) stay valid. */
struct ctl_dirent {
	char *name;
	fuse_ino_t ino;
	enum kind kind;
};

struct ctl_dirhandle {
	struct ctl_dirent *ent; /* ".", "..", then the children */
	size_t n;		/* [count] */
	struct ctl_acct acct;	/* the handle, its entries and their names */
};

static int dir_add(struct ctl_dirhandle *d, const char *name, fuse_ino_t ino, enum kind k)
{
	struct ctl_dirent *e;
	int rc = acct_charge(&d->acct, sizeof(*e) + strlen(name) + 1);

	if (rc)
		return rc;
	e = realloc(d->ent, (d->n + 1) * sizeof(*e));
	if (!e)
		return -ENOMEM;
	d->ent = e;
	e[d->n].name = strdup(name);
	if (!e[d->n].name)
		return -ENOMEM;
	e[d->n].ino = ino;
	e[d->n].kind = k;
	d->n++;
	return 0;
}

/* Frees d and gives back all it held (also what a failed dir_add charged). */
static void dir_free(struct ctl_dirhandle *d)
{
	struct ctl_acct acct = d->acct;

	for (size_t i = 0; i < d->n; i++)
		free(d->ent[i].name);
	free(d->ent);
	free(d);
	acct_uncharge(&acct, acct.bytes);
}

static int list_dir(struct ctl *c, enum kind k, uint32_t arg, struct ctl_dirhandle *d)
{
	int rc = dir_add(d, ".", mkino(k, arg), k);

	if (rc)
		return rc;
	switch (k) {
	case K_ROOT:
		rc = dir_add(d, "..", FUSE_ROOT_ID, K_ROOT);
		for (size_t i = 0; rc == 0 && i < NELEM(root_children); i++)
			rc = dir_add(d, root_children[i].name, mkino(root_children[i].kind, 0),
				     root_children[i].kind);
		return rc;
	case K_IOSCHED_DIR: {
		rc = dir_add(d, "..", mkino(K_ROOT, 0), K_ROOT);
		for (uint32_t i = 0; rc == 0 && i < c->nr_tun_names; i++)
			if (tunable_active(c, i))
				rc = dir_add(d, c->tun_names[i], mkino(K_TUNABLE, i), K_TUNABLE);
		return rc;
	}
	case K_GROUPS_DIR: {
		struct snap s;

		rc = dir_add(d, "..", mkino(K_ROOT, 0), K_ROOT);
		if (rc == 0)
			rc = groups_only(c, &s);
		if (rc)
			return rc;
		for (size_t i = 0; rc == 0 && i < s.ng; i++)
			if (!s.g[i].dup_dir)
				rc = dir_add(d, s.g[i].dir, mkino(K_GROUP_DIR, s.g[i].id),
					     K_GROUP_DIR);
		snap_free(&s);
		return rc;
	}
	case K_GROUP_DIR:
		rc = dir_add(d, "..", mkino(K_GROUPS_DIR, 0), K_GROUPS_DIR);
		for (size_t i = 0; rc == 0 && i < NELEM(group_children); i++)
			rc = dir_add(d, group_children[i].name, mkino(group_children[i].kind, arg),
				     group_children[i].kind);
		return rc;
	default:
		return -ENOTDIR;
	}
}

void ctl_opendir(struct ctl *c, fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct ctl_acct acct;
	struct ctl_dirhandle *d;
	enum kind k;
	uint32_t arg;
	int rc = get_node(c, ino, &k, &arg);

	if (rc == 0 && !kind_is_dir(k))
		rc = -ENOTDIR;
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	acct = acct_for(c, req);
	rc = acct_charge(&acct, sizeof(*d));
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		acct_uncharge(&acct, sizeof(*d));
		fuse_reply_err(req, ENOMEM);
		return;
	}
	d->acct = acct;
	rc = list_dir(c, k, arg, d);
	if (rc) {
		dir_free(d);
		fuse_reply_err(req, -rc);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)d;
	fi->cache_readdir = 0;
	if (fuse_reply_open(req, fi) == -ENOENT)
		dir_free(d);
}

void ctl_readdir(struct ctl *c, fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi,
		 bool plus)
{
	struct ctl_dirhandle *d = (struct ctl_dirhandle *)(uintptr_t)fi->fh;
	size_t used = 0;
	char *buf;

	if (!c) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	buf = malloc(size ? size : 1);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (size_t i = off < 0 ? 0 : (size_t)off; i < d->n; i++) {
		const struct ctl_dirent *de = &d->ent[i];
		struct fuse_entry_param e;
		size_t n;

		fill_entry(c, de->ino, de->kind, &e);
		if (plus) {
			/* "." and "..": listed, not instantiated (ino 0), as the passthrough does */
			if (!strcmp(de->name, ".") || !strcmp(de->name, ".."))
				e.ino = 0;
			n = fuse_add_direntry_plus(req, buf + used, size - used, de->name, &e,
						   (off_t)(i + 1));
		} else {
			n = fuse_add_direntry(req, buf + used, size - used, de->name, &e.attr,
					      (off_t)(i + 1));
		}
		if (n > size - used)
			break;
		used += n;
	}
	fuse_reply_buf(req, buf, used);
	free(buf);
}

void ctl_releasedir(struct ctl *c, fuse_req_t req, struct fuse_file_info *fi)
{
	(void)c;
	if (fi->fh)
		dir_free((struct ctl_dirhandle *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}
