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
	c->attr_timeout = 1.0;
	c->entry_timeout = 1.0;
}

/* --- value parsers: 0 or -EINVAL with the reason in err --- */

static int parse_int(const char *v, int64_t min, int64_t max, int64_t *out, char *err,
		     size_t errlen)
{
	char *end;
	long long x;

	errno = 0;
	x = strtoll(v, &end, 0);
	if (errno || end == v || *end != '\0') {
		seterr(err, errlen, "expected an integer, got \"%s\"", v);
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

static int set_attr_timeout(struct cfqfs_config *c, const char *v, char *err, size_t errlen)
{
	return parse_seconds(v, &c->attr_timeout, err, errlen);
}

static int set_entry_timeout(struct cfqfs_config *c, const char *v, char *err, size_t errlen)
{
	return parse_seconds(v, &c->entry_timeout, err, errlen);
}

static const struct {
	const char *name;
	key_setter set;
} keys[] = {
	{ "scheduler", set_scheduler },
	{ "depth", set_depth },
	{ "rotational", set_rotational },
	{ "ctl_dir", set_ctl_dir },
	{ "kernel_cache", set_kernel_cache },
	{ "writeback_cache", set_writeback_cache },
	{ "direct_io", set_direct_io },
	{ "xattr", set_xattr },
	{ "attr_timeout", set_attr_timeout },
	{ "entry_timeout", set_entry_timeout },
};

/* A tunable is valid if some policy knows the name and accepts the value; it is applied to
 * whichever policy is active (and again after a switch). */
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

/* A tunable is valid if some policy knows the name and accepts the value; it is applied to
 * whichever policy is active (and again after a switch). -ENOENT if no policy knows it. */
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
		if (r == -ENOENT)
			snprintf(why, sizeof(why), "unknown scheduler tunable");
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

void cfg_describe(const struct cfqfs_config *c, char *buf, size_t buflen)
{
	size_t n;

	n = (size_t)snprintf(buf, buflen, "scheduler=%s depth=%u rotational=%s ctl_dir=%s%s%s%s",
			     sched_policy_name(c->policy), c->depth,
			     c->rotational < 0 ? "auto" : c->rotational ? "yes" : "no",
			     c->ctl_dir[0] ? c->ctl_dir : "(none)",
			     c->kernel_cache ? " kernel_cache" : "",
			     c->writeback_cache ? " writeback_cache" : "",
			     c->direct_io ? " direct_io" : "");
	for (unsigned i = 0; i < c->nr_tunables && n < buflen; i++)
		n += (size_t)snprintf(buf + n, buflen - n, " %s=%lld", c->tunables[i].name,
				      (long long)c->tunables[i].value);
}
