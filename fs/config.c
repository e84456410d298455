/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * config.c - libconfig file and -o overrides -> struct cfqfs_config.
 *
 * The one place that knows libconfig. Both sources go through the same per-key setters, which
 * take the value as text: a file value is first rendered to text (so `depth = "4"` and
 * `-o depth=4` are judged alike, and a wrong type in the file is reported by the setter).
 */
#include "config.h"

#include <errno.h>
#include <libconfig.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DEPTH_MAX 256
#define TIMEOUT_MAX 86400.0

static void seterr(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

void cfg_defaults(struct cfqfs_config *c)
{
	memset(c, 0, sizeof(*c));
	c->policy = SCHED_POLICY_CFQ;
	c->depth = 8;
	c->rotational = -1;
	snprintf(c->ctl_dir, sizeof(c->ctl_dir), ".cfqfs");
	c->xattr = true;
	c->acl = true;
	c->attr_timeout = 1.0;
	c->entry_timeout = 1.0;
	c->queue_limit = 4096;
	c->queue_limit_mb = 256;
	c->open_limit = 0;
	c->group_expire_ms = 60000;
	c->max_background = 128;
	c->queue_by = CG_QUEUE_BY_PROCESS;
	c->group_by = CG_GROUP_BY_CGROUP;
	c->cgroup_line = CG_SELECT_AUTO;
	c->weight_from_cgroup = true;
	c->cache_ttl_ms = (uint32_t)(CG_DEFAULT_CACHE_TTL / 1000000u);
	c->device_enabled = false;
	dev_params_default(DEV_HDD, &c->device);
}

/* --- value parsers: 0 or -EINVAL with the reason in err --- */

static int parse_int(const char *v, int64_t min, int64_t max, int64_t *out, char *err,
		     size_t errlen)
{
	char *end;
	long long x;

	/* Decimal, as libconfig reads the file's numbers: "010" is 10 in -o options and on
	 * reload alike, never C's octal 8; "0x10" is refused. */
	errno = 0;
	x = strtoll(v, &end, 10);
	if (errno || end == v || *end != '\0') {
		seterr(err, errlen, "expected a decimal integer, got \"%s\"", v);
		return -EINVAL;
	}
	if (x < min || x > max) {
		seterr(err, errlen, "%lld is out of range [%lld, %lld]", x, (long long)min,
		       (long long)max);
		return -EINVAL;
	}
	*out = x;
	return 0;
}

static int parse_bool(const char *v, bool *out, char *err, size_t errlen)
{
	if (!strcasecmp(v, "true") || !strcmp(v, "1") || !strcasecmp(v, "yes") ||
	    !strcasecmp(v, "on")) {
		*out = true;
		return 0;
	}
	if (!strcasecmp(v, "false") || !strcmp(v, "0") || !strcasecmp(v, "no") ||
	    !strcasecmp(v, "off")) {
		*out = false;
		return 0;
	}
	seterr(err, errlen, "expected true or false, got \"%s\"", v);
	return -EINVAL;
}

static int parse_seconds(const char *v, double *out, char *err, size_t errlen)
{
	char *end;
	double x;

	errno = 0;
	x = strtod(v, &end);
	if (errno || end == v || *end != '\0' || !(x >= 0.0 && x <= TIMEOUT_MAX)) {
		seterr(err, errlen, "expected seconds in [0, %g], got \"%s\"", TIMEOUT_MAX, v);
		return -EINVAL;
	}
	*out = x;
	return 0;
}

/* --- per-key setters --- */

typedef int (*key_setter)(struct cfqfs_config *c, const char *v, char *err, size_t errlen);

static int set_scheduler(struct cfqfs_config *c, const char *v, char *err, size_t errlen)
{
	if (sched_policy_parse(v, &c->policy) < 0) {
		seterr(err, errlen, "unknown scheduler \"%s\" (noop, deadline, cfq)", v);
		return -EINVAL;
	}
	return 0;
}

static int set_depth(struct cfqfs_config *c, const char *v, char *err, size_t errlen)
{
	int64_t x;
	int r = parse_int(v, 1, DEPTH_MAX, &x, err, errlen);

	if (r == 0)
		c->depth = (unsigned)x;
	return r;
}

static int set_rotational(struct cfqfs_config *c, const char *v, char *err, size_t errlen)
{
	bool b;

	if (!strcasecmp(v, "auto")) {
		c->rotational = -1;
		return 0;
	}
	if (parse_bool(v, &b, NULL, 0) == 0) {
		c->rotational = b;
		return 0;
	}
	seterr(err, errlen, "expected auto, true or false, got \"%s\"", v);
	return -EINVAL;
}

static int parse_enum(const char *v, const char *const *names, int *out, char *err,
		      size_t errlen);

static int set_ctl_access(struct cfqfs_config *c, const char *v, char *err, size_t errlen)
{
	static const char *const names[] = { "all", "owner", NULL };
	int i, r = parse_enum(v, names, &i, err, errlen);

	if (r == 0)
		c->ctl_private = i == 1;
	return r;
}

static int set_ctl_dir(struct cfqfs_config *c, const char *v, char *err, size_t errlen)
{
	if (strlen(v) > NAME_MAX || strchr(v, '/') || !strcmp(v, ".") || !strcmp(v, "..")) {
		seterr(err, errlen, "\"%s\" is not a valid file name (empty disables it)", v);
		return -EINVAL;
	}
	snprintf(c->ctl_dir, sizeof(c->ctl_dir), "%s", v);
	return 0;
}

#define BOOL_SETTER(field)                                                                         \
	static int set_##field(struct cfqfs_config *c, const char *v, char *err, size_t errlen)    \
	{                                                                                          \
		return parse_bool(v, &c->field, err, errlen);                                      \
	}
BOOL_SETTER(kernel_cache)
BOOL_SETTER(writeback_cache)
BOOL_SETTER(direct_io)
BOOL_SETTER(xattr)
BOOL_SETTER(acl)
BOOL_SETTER(splice)

static int set_attr_timeout(struct cfqfs_config *c, const char *v, char *err, size_t errlen)
{
	return parse_seconds(v, &c->attr_timeout, err, errlen);
}

static int set_entry_timeout(struct cfqfs_config *c, const char *v, char *err, size_t errlen)
{
	return parse_seconds(v, &c->entry_timeout, err, errlen);
}

static int set_negative_timeout(struct cfqfs_config *c, const char *v, char *err,
				size_t errlen)
{
	return parse_seconds(v, &c->negative_timeout, err, errlen);
}

/* Picks `v` among `names` (NULL-terminated); *out = its index. */
static int parse_enum(const char *v, const char *const *names, int *out, char *err,
		      size_t errlen)
{
	char list[256] = "";

	for (int i = 0; names[i]; i++) {
		if (!strcmp(v, names[i])) {
			*out = i;
			return 0;
		}
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "",
			 names[i]);
	}
	seterr(err, errlen, "unknown value \"%s\" (%s)", v, list);
	return -EINVAL;
}

static int set_queue_by(struct cfqfs_config *c, const char *v, char *err, size_t errlen)
{
	static const char *const names[] = { "process", "thread", NULL };
	int i, r = parse_enum(v, names, &i, err, errlen);

	if (r == 0)
		c->queue_by = (enum cg_queue_by)i;
	return r;
}

static int set_group_by(struct cfqfs_config *c, const char *v, char *err, size_t errlen)
{
	static const char *const names[] = { "cgroup", "uid", "gid", "none", NULL };
	int i, r = parse_enum(v, names, &i, err, errlen);

	if (r == 0)
		c->group_by = (enum cg_group_by)i;
	return r;
}

static int set_cgroup_line(struct cfqfs_config *c, const char *v, char *err, size_t errlen)
{
	static const char *const names[] = { "auto", "v2", "blkio", NULL };
	int i, r = parse_enum(v, names, &i, err, errlen);

	if (r == 0)
		c->cgroup_line = (enum cg_select)i;
	return r;
}

BOOL_SETTER(weight_from_cgroup)

static int set_cache_ttl_ms(struct cfqfs_config *c, const char *v, char *err, size_t errlen)
{
	int64_t x;
	int r = parse_int(v, 0, 60000, &x, err, errlen);

	if (r == 0)
		c->cache_ttl_ms = (uint32_t)x;
	return r;
}

static int set_u32(uint32_t *out, int64_t min, int64_t max, const char *v, char *err,
		   size_t errlen)
{
	int64_t x;
	int r = parse_int(v, min, max, &x, err, errlen);

	if (r == 0)
		*out = (uint32_t)x;
	return r;
}

/* Below 16 requests a group could not keep even a small device busy. */
static int set_queue_limit(struct cfqfs_config *c, const char *v, char *err, size_t errlen)
{
	return set_u32(&c->queue_limit, 16, 1 << 20, v, err, errlen);
}

/* At least one maximal (1 MiB) write must fit. */
static int set_queue_limit_mb(struct cfqfs_config *c, const char *v, char *err, size_t errlen)
{
	return set_u32(&c->queue_limit_mb, 1, 1 << 20, v, err, errlen);
}

static int set_open_limit(struct cfqfs_config *c, const char *v, char *err, size_t errlen)
{
	return set_u32(&c->open_limit, 0, 1 << 30, v, err, errlen);
}

/* The per-user bounds: 0 takes the per-group value; otherwise the per-group range. */
static int set_uid_queue_limit(struct cfqfs_config *c, const char *v, char *err, size_t errlen)
{
	int64_t x;
	int r = parse_int(v, 0, 1 << 20, &x, err, errlen);

	if (r == 0 && x > 0 && x < 16) {
		seterr(err, errlen, "%lld is out of range: 0 (the per-group queue_limit) or "
		       "[16, 1048576]", (long long)x);
		r = -EINVAL;
	}
	if (r == 0)
		c->uid_queue_limit = (uint32_t)x;
	return r;
}

static int set_uid_queue_limit_mb(struct cfqfs_config *c, const char *v, char *err,
				  size_t errlen)
{
	return set_u32(&c->uid_queue_limit_mb, 0, 1 << 20, v, err, errlen);
}

static int set_uid_open_limit(struct cfqfs_config *c, const char *v, char *err, size_t errlen)
{
	return set_u32(&c->uid_open_limit, 0, 1 << 30, v, err, errlen);
}

/*
 * The kernel keeps FUSE requests nobody waits for synchronously (readahead, writeback,
 * asynchronous direct I/O) in its own FIFO beyond this many, where the scheduler cannot see
 * them (see pt.c, pt__init). 65535: the field of the FUSE protocol is 16 bits wide.
 */
static int set_max_background(struct cfqfs_config *c, const char *v, char *err, size_t errlen)
{
	return set_u32(&c->max_background, 1, 65535, v, err, errlen);
}

static int set_group_expire_ms(struct cfqfs_config *c, const char *v, char *err, size_t errlen)
{
	return set_u32(&c->group_expire_ms, 0, 86400000, v, err, errlen);
}

/* "device": none, hdd, ssd, raid:N, ssd:N. Selecting a model resets its parameters. */
static int set_device(struct cfqfs_config *c, const char *v, char *err, size_t errlen)
{
	if (!strcmp(v, "none")) {
		c->device_enabled = false;
		return 0;
	}
	if (dev_params_parse(v, &c->device) < 0) {
		seterr(err, errlen, "unknown device model \"%s\" (none, hdd, ssd, raid:N, ssd:N)", v);
		return -EINVAL;
	}
	c->device_enabled = true;
	return 0;
}

/* device.<param>: integer parameters in friendly units, applied to the selected model. */
static int set_device_param(struct cfqfs_config *c, const char *name, const char *v, char *err,
			    size_t errlen)
{
	static const struct {
		const char *name;
		int64_t min, max, scale; /* value * scale = field units */
	} params[] = {
		{ "heads", 1, DEV_MAX_HEADS, 1 },
		{ "bandwidth_mb", 1, 100000, 1000000 },	 /* [MB/s] -> [bytes/s] */
		{ "settle_us", 0, 1000000, 1000 },	 /* [us] -> [ns] */
		{ "full_stroke_ms", 0, 1000, 1000000 },	 /* [ms] -> [ns] */
		{ "rpm", 1, 100000, 1 },
		{ "read_latency_us", 0, 1000000, 1000 },
		{ "write_latency_us", 0, 1000000, 1000 },
		{ "flush_ms", 0, 1000, 1000000 },
	};
	struct dev_params d = c->device;
	int64_t x;
	size_t i;

	/* Where files sit: "spread" (hashed, unrelated files far apart) or "dir" (by inode
	 * number, adjacent, as the files of one directory on ext4/xfs). */
	if (!strcmp(name, "placement")) {
		if (!strcmp(v, "spread")) {
			c->device.placement = DEV_PLACE_SPREAD;
		} else if (!strcmp(v, "dir")) {
			c->device.placement = DEV_PLACE_DIR;
		} else {
			seterr(err, errlen, "unknown placement \"%s\" (spread, dir)", v);
			return -EINVAL;
		}
		return 0;
	}
	for (i = 0; i < sizeof(params) / sizeof(params[0]); i++)
		if (!strcmp(params[i].name, name))
			break;
	if (i == sizeof(params) / sizeof(params[0]))
		return -ENOENT;
	if (parse_int(v, params[i].min, params[i].max, &x, err, errlen) < 0)
		return -EINVAL;
	uint64_t u = (uint64_t)x * (uint64_t)params[i].scale;
	switch (i) {
	case 0: d.heads = (unsigned)u; break;
	case 1: d.bandwidth = u; break;
	case 2: d.settle = u; break;
	case 3: d.full_stroke = u; break;
	case 4: d.rpm = (uint32_t)u; break;
	case 5: d.read_latency = u; break;
	case 6: d.write_latency = u; break;
	default: d.flush = u; break;
	}
	if (dev_params_validate(&d) < 0) {
		seterr(err, errlen, "%lld makes an impossible device (e.g. settle > full stroke)",
		       (long long)x);
		return -EINVAL;
	}
	c->device = d;
	return 0;
}

static const struct {
	const char *name;
	key_setter set;
} keys[] = {
	{ "queue_by", set_queue_by },
	{ "group_by", set_group_by },
	{ "cgroup_line", set_cgroup_line },
	{ "weight_from_cgroup", set_weight_from_cgroup },
	{ "cache_ttl_ms", set_cache_ttl_ms },
	{ "device", set_device },
	{ "scheduler", set_scheduler },
	{ "depth", set_depth },
	{ "queue_limit", set_queue_limit },
	{ "queue_limit_mb", set_queue_limit_mb },
	{ "open_limit", set_open_limit },
	{ "uid_queue_limit", set_uid_queue_limit },
	{ "uid_queue_limit_mb", set_uid_queue_limit_mb },
	{ "uid_open_limit", set_uid_open_limit },
	{ "group_expire_ms", set_group_expire_ms },
	{ "max_background", set_max_background },
	{ "rotational", set_rotational },
	{ "ctl_dir", set_ctl_dir },
	{ "ctl_access", set_ctl_access },
	{ "kernel_cache", set_kernel_cache },
	{ "writeback_cache", set_writeback_cache },
	{ "direct_io", set_direct_io },
	{ "xattr", set_xattr },
	{ "acl", set_acl },
	{ "splice", set_splice },
	{ "attr_timeout", set_attr_timeout },
	{ "entry_timeout", set_entry_timeout },
	{ "negative_timeout", set_negative_timeout },
};

/* The tunable named `name` in any policy (first match), or NULL. */
static const struct sched_tunable_desc *find_tunable(const char *name)
{
	for (int p = 0; p < SCHED_POLICY_COUNT; p++)
		for (const struct sched_tunable_desc *d = sched_tunables((enum sched_policy)p);
		     d->name; d++)
			if (!strcmp(d->name, name))
				return d;
	return NULL;
}

/* A tunable is valid if some policy knows the name and accepts the value; main.c applies it
 * to every policy that does, so it is in force whenever one of them is active.
 * -ENOENT if no policy knows it. */
static int set_tunable(struct cfqfs_config *c, const char *name, const char *v, char *err,
		       size_t errlen)
{
	const struct sched_tunable_desc *d = find_tunable(name);
	bool b;
	int64_t x;
	int p;

	if (!d)
		return -ENOENT;
	if (parse_bool(v, &b, NULL, 0) == 0 && strcmp(v, "0") && strcmp(v, "1"))
		x = b; /* low_latency = true */
	else if (parse_int(v, INT64_MIN, INT64_MAX, &x, err, errlen) < 0)
		return -EINVAL;
	for (p = 0; p < SCHED_POLICY_COUNT; p++)
		if (sched_tunable_validate((enum sched_policy)p, name, x) == 0)
			break;
	if (p == SCHED_POLICY_COUNT) {
		seterr(err, errlen, "%lld is out of range [%lld, %lld] %s", (long long)x,
		       (long long)d->min, (long long)d->max, d->unit);
		return -EINVAL;
	}
	for (unsigned i = 0; i < c->nr_tunables; i++)
		if (!strcmp(c->tunables[i].name, name)) {
			c->tunables[i].value = x;
			return 0;
		}
	if (c->nr_tunables == CFG_MAX_TUNABLES) {
		seterr(err, errlen, "too many tunables");
		return -EINVAL;
	}
	snprintf(c->tunables[c->nr_tunables].name, CFG_NAME_MAX, "%s", name);
	c->tunables[c->nr_tunables++].value = x;
	return 0;
}

int cfg_set(struct cfqfs_config *c, const char *key, const char *value, char *err,
	    size_t errlen)
{
	struct cfqfs_config tmp = *c;
	char why[CFG_ERR_MAX] = "";
	int r = -ENOENT;

	if (!strncmp(key, "iosched.", 8)) {
		r = set_tunable(&tmp, key + 8, value, why, sizeof(why));
		if (r == -ENOENT) {
			snprintf(why, sizeof(why), "unknown scheduler tunable");
			r = -EINVAL; /* our namespace: an error, not an option for libfuse */
		}
	} else if (!strncmp(key, "device.", 7)) {
		r = set_device_param(&tmp, key + 7, value, why, sizeof(why));
		if (r == -ENOENT) {
			snprintf(why, sizeof(why), "unknown device parameter (heads, bandwidth_mb, "
				 "settle_us, full_stroke_ms, rpm, read_latency_us, write_latency_us, "
				 "flush_ms)");
			r = -EINVAL;
		}
	} else {
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			if (!strcmp(keys[i].name, key)) {
				r = keys[i].set(&tmp, value, why, sizeof(why));
				goto done;
			}
		r = set_tunable(&tmp, key, value, why, sizeof(why));
	}
done:
	if (r == 0)
		*c = tmp;
	else if (r != -ENOENT || why[0])
		seterr(err, errlen, "%s: %s", key, why);
	return r;
}

/* Renders a scalar setting as text for the setters. Returns 0 or -EINVAL (not a scalar). */
static int setting_text(const config_setting_t *s, char *buf, size_t len)
{
	switch (config_setting_type(s)) {
	case CONFIG_TYPE_INT:
		snprintf(buf, len, "%d", config_setting_get_int(s));
		return 0;
	case CONFIG_TYPE_INT64:
		snprintf(buf, len, "%lld", config_setting_get_int64(s));
		return 0;
	case CONFIG_TYPE_FLOAT:
		snprintf(buf, len, "%.17g", config_setting_get_float(s));
		return 0;
	case CONFIG_TYPE_BOOL:
		snprintf(buf, len, "%s", config_setting_get_bool(s) ? "true" : "false");
		return 0;
	case CONFIG_TYPE_STRING:
		snprintf(buf, len, "%s", config_setting_get_string(s));
		return 0;
	default:
		return -EINVAL;
	}
}

/* The ']' that closes the bracket expression opened at g[0] == '[', or NULL if none (then
 * fnmatch takes the '[' as a plain character). Steps over [:class:], [=e=] and [.s.] and
 * over escapes, whose ']' does not close it. */
static const char *glob_class_end(const char *g)
{
	const char *p = g + 1;

	if (*p == '!' || *p == '^')
		p++;
	if (*p == ']')
		p++; /* first in the list: a member */
	while (*p && *p != ']') {
		if (*p == '[' && (p[1] == ':' || p[1] == '=' || p[1] == '.')) {
			char close[3] = { p[1], ']', '\0' };
			const char *c = strstr(p + 2, close);

			p = c ? c + 2 : p + 1;
		} else if (*p == '\\' && p[1]) {
			p += 2;
		} else {
			p++;
		}
	}
	return *p ? p : NULL;
}

/* Fewest characters a string matched by fnmatch(glob, s, 0) can have: '*' matches none,
 * everything else ('?', a bracket expression, an escaped or a plain character) one. */
static size_t glob_min_len(const char *g)
{
	size_t n = 0;

	for (; *g; g++) {
		if (*g == '*')
			continue;
		n++;
		if (*g == '\\' && g[1]) {
			g++;
		} else if (*g == '[') {
			const char *e = glob_class_end(g);

			if (e)
				g = e;
		}
	}
	return n;
}

/* Can glob match a string that starts with '/'? Decided by its first character. */
static bool glob_may_start_with_slash(const char *g)
{
	if (g[0] == '\\')
		return g[1] == '/';
	return g[0] == '/' || g[0] == '*' || g[0] == '?' || g[0] == '[';
}

/* Command names are cut to 15 bytes by the kernel (TASK_COMM_LEN 16 with its NUL). */
#define COMM_MAX 15

/*
 * rules.KEY as a string into out. An empty one is refused: "" would be stored as "not set",
 * a rule that silently matches everyone (or keeps group_by's group) instead of what was
 * written. Returns 0 (also when the key is absent) or -EINVAL with "FILE:LINE: ..." in err.
 */
static int rule_string(const config_setting_t *r, const char *key, char *out, size_t outlen,
		       const char *file, char *err, size_t errlen)
{
	const config_setting_t *m = config_setting_get_member(r, key);
	const char *v;
	int line;

	if (!m)
		return 0;
	line = config_setting_source_line(m);
	if (config_setting_type(m) != CONFIG_TYPE_STRING ||
	    strlen(config_setting_get_string(m)) >= outlen) {
		seterr(err, errlen, "%s:%d: rules.%s: expected a string of at most %zu bytes", file,
		       line, key, outlen - 1);
		return -EINVAL;
	}
	v = config_setting_get_string(m);
	if (!v[0]) {
		seterr(err, errlen, "%s:%d: rules.%s: empty %s; leave the key out %s", file, line,
		       key, strcmp(key, "group") ? "value" : "group name",
		       strcmp(key, "group") ? "to match any" : "for group_by's group");
		return -EINVAL;
	}
	if (!strcmp(key, "cgroup") && !glob_may_start_with_slash(v)) {
		seterr(err, errlen, "%s:%d: rules.cgroup: \"%s\" can never match: cgroup paths "
		       "start with /", file, line, v);
		return -EINVAL;
	}
	if (!strcmp(key, "comm") && glob_min_len(v) > COMM_MAX) {
		seterr(err, errlen, "%s:%d: rules.comm: \"%s\" can never match: the kernel cuts "
		       "command names to %d characters", file, line, v, COMM_MAX);
		return -EINVAL;
	}
	snprintf(out, outlen, "%s", v);
	return 0;
}

static int rule_int(const config_setting_t *r, const char *key, int64_t min, int64_t max,
		    bool *has, int64_t *out, const char *file, char *err, size_t errlen)
{
	const config_setting_t *m = config_setting_get_member(r, key);
	char text[64], why[CFG_ERR_MAX];

	*has = false;
	*out = 0;
	if (!m)
		return 0;
	if (setting_text(m, text, sizeof(text)) < 0 ||
	    parse_int(text, min, max, out, why, sizeof(why)) < 0) {
		seterr(err, errlen, "%s:%d: rules.%s: %s", file, config_setting_source_line(m), key,
		       setting_text(m, text, sizeof(text)) < 0 ? "expected an integer" : why);
		return -EINVAL;
	}
	*has = true;
	return 0;
}

/* rules = ( { cgroup = "/tenants/a*"; weight = 100; }, { uid = 1000; class = "idle"; }, ... ) */
static int load_rules(struct cfqfs_config *c, const char *file, const config_setting_t *list,
		      char *err, size_t errlen)
{
	static const char *const keys_ok[] = { "cgroup", "comm", "path", "uid", "gid", "group",
					       "weight", "class", "level", NULL };
	static const char *const classes[] = { "keep", "rt", "be", "idle", NULL };
	int line = config_setting_source_line(list);

	if (!config_setting_is_list(list) && !config_setting_is_array(list)) {
		seterr(err, errlen, "%s:%d: rules: expected a list ( { ... }, { ... } )", file, line);
		return -EINVAL;
	}
	c->nr_rules = 0;
	for (int i = 0; i < config_setting_length(list); i++) {
		const config_setting_t *r = config_setting_get_elem(list, (unsigned)i);
		struct cfg_rule *cr;
		bool has;
		int64_t x;

		line = config_setting_source_line(r);
		if (!config_setting_is_group(r)) {
			seterr(err, errlen, "%s:%d: rules[%d]: expected a group { key = value; }", file,
			       line, i);
			return -EINVAL;
		}
		if (c->nr_rules == CFG_MAX_RULES) {
			seterr(err, errlen, "%s:%d: rules: more than %d rules", file, line,
			       CFG_MAX_RULES);
			return -EINVAL;
		}
		for (int k = 0; k < config_setting_length(r); k++) {
			const config_setting_t *m = config_setting_get_elem(r, (unsigned)k);
			const char *mn = config_setting_name(m);
			int j;
			for (j = 0; keys_ok[j] && strcmp(keys_ok[j], mn); j++)
				;
			if (!keys_ok[j]) {
				seterr(err, errlen, "%s:%d: rules.%s: unknown key (cgroup, comm, path, "
					"uid, gid, group, weight, class, level)", file,
				       config_setting_source_line(m), mn);
				return -EINVAL;
			}
		}
		cr = &c->rules[c->nr_rules];
		memset(cr, 0, sizeof(*cr));
		cr->line = line;
		if (rule_string(r, "cgroup", cr->cgroup, sizeof(cr->cgroup), file, err, errlen) ||
		    rule_string(r, "comm", cr->comm, sizeof(cr->comm), file, err, errlen) ||
		    rule_string(r, "path", cr->path, sizeof(cr->path), file, err, errlen) ||
		    rule_string(r, "group", cr->group, sizeof(cr->group), file, err, errlen))
			return -EINVAL;
		if (cr->path[0] && cr->path[0] != '/') {
			seterr(err, errlen, "%s:%d: rules.path: \"%s\" must start with / (a path "
			       "inside the mount)", file, line, cr->path);
			return -EINVAL;
		}
		if (rule_int(r, "uid", 0, UINT32_MAX - 1, &has, &x, file, err, errlen))
			return -EINVAL;
		cr->has_uid = has;
		cr->uid = (uid_t)x;
		if (rule_int(r, "gid", 0, UINT32_MAX - 1, &has, &x, file, err, errlen))
			return -EINVAL;
		cr->has_gid = has;
		cr->gid = (gid_t)x;
		const config_setting_t *w = config_setting_get_member(r, "weight");
		if (w && config_setting_type(w) == CONFIG_TYPE_STRING) {
			if (strcmp(config_setting_get_string(w), "cgroup")) {
				seterr(err, errlen, "%s:%d: rules.weight: expected 10..1000 or "
					"\"cgroup\"", file, config_setting_source_line(w));
				return -EINVAL;
			}
			cr->weight = CG_WEIGHT_FROM_CGROUP;
		} else {
			if (rule_int(r, "weight", SCHED_WEIGHT_MIN, SCHED_WEIGHT_MAX, &has, &x, file,
				     err, errlen))
				return -EINVAL;
			cr->weight = has ? (uint32_t)x : CG_WEIGHT_UNSET;
		}
		const config_setting_t *cl = config_setting_get_member(r, "class");
		if (cl) {
			int ci;
			char why[CFG_ERR_MAX];
			if (config_setting_type(cl) != CONFIG_TYPE_STRING ||
			    parse_enum(config_setting_get_string(cl), classes, &ci, why,
				       sizeof(why)) < 0) {
				seterr(err, errlen, "%s:%d: rules.class: expected \"rt\", \"be\", "
					"\"idle\" or \"keep\"", file, config_setting_source_line(cl));
				return -EINVAL;
			}
			cr->ioclass = (uint8_t)ci; /* keep=0, rt=1, be=2, idle=3 */
		}
		if (rule_int(r, "level", 0, SCHED_LEVELS - 1, &has, &x, file, err, errlen))
			return -EINVAL;
		cr->has_level = has;
		cr->level = (uint8_t)x;
		c->nr_rules++;
	}
	return 0;
}

static int load_setting(struct cfqfs_config *c, const char *file, const config_setting_t *s,
			const char *prefix, char *err, size_t errlen)
{
	const char *name = config_setting_name(s);
	int line = config_setting_source_line(s);
	char key[CFG_NAME_MAX * 2], text[PATH_MAX], why[CFG_ERR_MAX] = "";
	int r;

	snprintf(key, sizeof(key), "%s%s", prefix, name ? name : "?");
	if (!prefix[0] && !strcmp(name, "iosched")) {
		if (!config_setting_is_group(s)) {
			seterr(err, errlen, "%s:%d: iosched: expected a group { name = value; ... }",
			       file, line);
			return -EINVAL;
		}
		for (int i = 0; i < config_setting_length(s); i++) {
			r = load_setting(c, file, config_setting_get_elem(s, (unsigned)i),
					 "iosched.", err, errlen);
			if (r)
				return r;
		}
		return 0;
	}
	if (!prefix[0] && !strcmp(name, "rules"))
		return load_rules(c, file, s, err, errlen);
	if (!prefix[0] && !strcmp(name, "device") && config_setting_is_group(s)) {
		/* device = { model = "hdd"; bandwidth_mb = 60; ... }: the model first. */
		const config_setting_t *m = config_setting_get_member(s, "model");
		if (!m || config_setting_type(m) != CONFIG_TYPE_STRING) {
			seterr(err, errlen, "%s:%d: device: a device group needs model = \"...\"",
			       file, line);
			return -EINVAL;
		}
		r = cfg_set(c, "device", config_setting_get_string(m), why, sizeof(why));
		if (r) {
			seterr(err, errlen, "%s:%d: %s", file, config_setting_source_line(m), why);
			return -EINVAL;
		}
		for (int i = 0; r == 0 && i < config_setting_length(s); i++) {
			const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
			if (e != m)
				r = load_setting(c, file, e, "device.", err, errlen);
		}
		return r;
	}
	if (setting_text(s, text, sizeof(text)) < 0) {
		seterr(err, errlen, "%s:%d: %s: expected a single value", file, line, key);
		return -EINVAL;
	}
	r = cfg_set(c, key, text, why, sizeof(why));
	if (r == -ENOENT && !why[0])
		seterr(err, errlen, "%s:%d: %s: unknown key", file, line, key);
	else if (r)
		seterr(err, errlen, "%s:%d: %s", file, line, why);
	return r ? -EINVAL : 0;
}

int cfg_load_file(struct cfqfs_config *c, const char *path, char *err, size_t errlen)
{
	struct cfqfs_config tmp = *c;
	config_t lc;
	FILE *f;
	int r = 0;

	f = fopen(path, "re");
	if (!f) {
		r = -errno;
		seterr(err, errlen, "%s: %s", path, strerror(-r));
		return r;
	}
	config_init(&lc);
	if (!config_read(&lc, f)) {
		seterr(err, errlen, "%s:%d: %s", path, config_error_line(&lc),
		       config_error_text(&lc));
		r = -EINVAL;
		goto out_destroy;
	}
	const config_setting_t *root = config_root_setting(&lc);
	for (int i = 0; i < config_setting_length(root); i++) {
		r = load_setting(&tmp, path, config_setting_get_elem(root, (unsigned)i), "", err,
				 errlen);
		if (r)
			goto out_destroy;
	}
	*c = tmp;
out_destroy:
	config_destroy(&lc);
	fclose(f);
	return r;
}

size_t cfg_cg_rules(const struct cfqfs_config *c, struct cg_rule *out)
{
	for (unsigned i = 0; i < c->nr_rules; i++) {
		const struct cfg_rule *r = &c->rules[i];
		out[i] = (struct cg_rule){
			.cgroup = r->cgroup[0] ? r->cgroup : NULL,
			.comm = r->comm[0] ? r->comm : NULL,
			.path = r->path[0] ? r->path : NULL,
			.has_uid = r->has_uid,
			.uid = r->uid,
			.has_gid = r->has_gid,
			.gid = r->gid,
			.group = r->group[0] ? r->group : NULL,
			.weight = r->weight,
			.ioclass = r->ioclass,
			.has_level = r->has_level,
			.level = r->level,
		};
	}
	return c->nr_rules;
}

void cfg_describe(const struct cfqfs_config *c, char *buf, size_t buflen)
{
	size_t n;

	n = (size_t)snprintf(buf, buflen,
			     "scheduler=%s depth=%u device=%s rules=%u rotational=%s ctl_dir=%s%s%s%s",
			     sched_policy_name(c->policy), c->depth,
			     c->device_enabled ? dev_kind_name(c->device.kind) : "none", c->nr_rules,
			     c->rotational < 0 ? "auto" : c->rotational ? "yes" : "no",
			     c->ctl_dir[0] ? c->ctl_dir : "(none)",
			     c->kernel_cache ? " kernel_cache" : "",
			     c->writeback_cache ? " writeback_cache" : "",
			     c->direct_io ? " direct_io" : "");
	for (unsigned i = 0; i < c->nr_tunables && n < buflen; i++)
		n += (size_t)snprintf(buf + n, buflen - n, " %s=%lld", c->tunables[i].name,
				      (long long)c->tunables[i].value);
}
