/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_rules.c - libFuzzer target for the rule matcher (cgroup/cg_rules.h).
 *
 * Input layout (so that a seed is readable): a header byte, then NUL-separated strings.
 *   header: bits 0-1 group_by, bits 2-3 number of rules - 1.
 *   strings: the caller's cgroup, comm and request path ("" = no path), then per rule one
 *   "flags" string (its first byte: bit0 cgroup glob, bit1 comm glob, bit2 path prefix, bit3
 *   uid, bit4 gid, bit5 group, bit6 weight, bit7 class/level) followed by the strings the flags
 *   ask for, in that order. Missing strings read as "".
 * Rules that cg_rules_check() rejects are not matched (the matcher assumes valid rules); a
 * verdict must be in range: rule index < nr, group NUL-terminated and non-empty, level 0..7,
 * weight unset, from-cgroup or 10..1000, and the matching itself deterministic.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cg_rules.h"
#include "sched.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_RULES 4
#define STR_MAX 512

struct reader {
	const uint8_t *p;
	size_t left;
	char pool[3 + MAX_RULES * 9][STR_MAX]; /* 3 caller strings, per rule flags + 8 */
	unsigned used;
};

/* The next NUL-separated string (truncated to STR_MAX - 1), "" once the input is used up. */
static const char *next_str(struct reader *rd)
{
	char *s = rd->pool[rd->used++];
	size_t n = 0;

	while (rd->left && *rd->p) {
		if (n < STR_MAX - 1)
			s[n++] = (char)*rd->p;
		rd->p++;
		rd->left--;
	}
	if (rd->left) { /* skip the NUL */
		rd->p++;
		rd->left--;
	}
	s[n] = '\0';
	return s;
}

static uint32_t num(const char *s)
{
	uint32_t v = 0;

	for (; *s; s++)
		v = v * 31u + (uint8_t)*s;
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct reader rd;
	struct cg_rule rules[MAX_RULES];
	struct cg_rules set;
	struct cg_caller who;
	struct cg_verdict v1, v2;
	size_t bad;

	if (size < 1)
		return 0;
	memset(&rd, 0, sizeof(rd));
	memset(rules, 0, sizeof(rules));
	rd.p = data + 1;
	rd.left = size - 1;
	set.group_by = (enum cg_group_by)(data[0] & 3);
	set.nr = (size_t)((data[0] >> 2) & 3) + 1;
	set.v = rules;

	who = (struct cg_caller){ .tid = 1234, .tgid = 1200, .uid = 1000, .gid = 100 };
	who.cgroup = next_str(&rd);
	if (who.cgroup[0] != '/')
		who.cgroup = "/"; /* the parser only yields paths starting with '/' (cg_parse.h) */
	who.comm = next_str(&rd);
	const char *path = next_str(&rd);
	if (path[0] == '\0')
		path = NULL;
	who.ioclass = (uint8_t)(data[0] >> 4 & 1 ? SCHED_CLASS_RT : SCHED_CLASS_BE);
	who.level = (uint8_t)(data[0] >> 5);

	for (size_t i = 0; i < set.nr; i++) {
		struct cg_rule *r = &rules[i];
		uint8_t fl = (uint8_t)next_str(&rd)[0];

		if (fl & 1)
			r->cgroup = next_str(&rd);
		if (fl & 2)
			r->comm = next_str(&rd);
		if (fl & 4)
			r->path = next_str(&rd);
		if (fl & 8) {
			r->has_uid = true;
			r->uid = num(next_str(&rd)) % 2 ? 1000 : 0;
		}
		if (fl & 16) {
			r->has_gid = true;
			r->gid = num(next_str(&rd)) % 2 ? 100 : 0;
		}
		if (fl & 32)
			r->group = next_str(&rd);
		if (fl & 64) {
			uint32_t w = num(next_str(&rd)) % 1100;
			r->weight = w == 1099 ? CG_WEIGHT_FROM_CGROUP : w;
		}
		if (fl & 128) {
			uint32_t k = num(next_str(&rd));
			r->ioclass = (uint8_t)(k % 5); /* 4 is invalid on purpose */
			r->has_level = k & 8;
			r->level = (uint8_t)((k >> 4) % 9); /* 8 is invalid on purpose */
		}
	}

	if (cg_rules_check(&set, &bad) != 0) {
		if (bad > set.nr)
			abort();
		return 0;
	}
	if (cg_rules_match(&set, &who, path, &v1) != 0)
		abort(); /* valid rules and a complete caller: the matcher cannot fail */
	if (v1.rule < -1 || v1.rule >= (int)set.nr)
		abort();
	size_t n = strnlen(v1.group, sizeof(v1.group));
	if (n == 0 || n == sizeof(v1.group))
		abort();
	if (v1.level > 7 || (v1.ioclass == SCHED_CLASS_IDLE && v1.level != 7))
		abort();
	if (v1.weight != CG_WEIGHT_UNSET && v1.weight != CG_WEIGHT_FROM_CGROUP &&
	    (v1.weight < 10 || v1.weight > 1000))
		abort();
	/* field by field: bytes after the group's NUL are not part of the verdict */
	if (cg_rules_match(&set, &who, path, &v2) != 0 || strcmp(v1.group, v2.group) != 0 ||
	    v1.group_is_cgroup != v2.group_is_cgroup || v1.weight != v2.weight ||
	    v1.ioclass != v2.ioclass || v1.level != v2.level || v1.rule != v2.rule)
		abort();
	if (path && v1.rule >= 0 && rules[v1.rule].path &&
	    !cg_path_has_prefix(path, rules[v1.rule].path))
		abort();
	return 0;
}
