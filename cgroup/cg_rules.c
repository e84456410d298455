/* SPDX-License-Identifier: GPL-2.0-or-later */
/* cg_rules.c - first-match rule matcher (contract: cg_rules.h). Pure. */
#include "cg_rules.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

#include "sched.h"

bool cg_path_has_prefix(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	while (n > 0 && prefix[n - 1] == '/')
		n--;
	if (n == 0)
		return path[0] == '/'; /* "/" (or "//"): everything inside the mount */
	return strncmp(path, prefix, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static bool glob_match(const char *pattern, const char *s)
{
	return fnmatch(pattern, s, 0) == 0;
}

static bool rule_matches(const struct cg_rule *rl, const struct cg_caller *who, const char *path)
{
	if (rl->has_uid && rl->uid != who->uid)
		return false;
	if (rl->has_gid && rl->gid != who->gid)
		return false;
	if (rl->comm && !glob_match(rl->comm, who->comm))
		return false;
	if (rl->cgroup && !glob_match(rl->cgroup, who->cgroup))
		return false;
	if (rl->path && (!path || !cg_path_has_prefix(path, rl->path)))
		return false;
	return true;
}

void cg_rules_default_group(enum cg_group_by by, const struct cg_caller *who, char *out,
			    size_t outsz)
{
	char buf[32];

	switch (by) {
	case CG_GROUP_BY_UID:
		snprintf(buf, sizeof(buf), "uid:%u", (unsigned)who->uid);
		cg_name_fit(buf, out, outsz);
		break;
	case CG_GROUP_BY_GID:
		snprintf(buf, sizeof(buf), "gid:%u", (unsigned)who->gid);
		cg_name_fit(buf, out, outsz);
		break;
	case CG_GROUP_BY_NONE:
		cg_name_fit("/", out, outsz);
		break;
	case CG_GROUP_BY_CGROUP:
	default:
		cg_name_fit(who->cgroup, out, outsz);
		break;
	}
}

int cg_rules_check(const struct cg_rules *r, size_t *bad)
{
	if (!r || (r->nr && !r->v) || (unsigned)r->group_by > CG_GROUP_BY_NONE) {
		if (bad)
			*bad = r ? r->nr : 0;
		return -EINVAL;
	}
	for (size_t i = 0; i < r->nr; i++) {
		const struct cg_rule *rl = &r->v[i];
		bool ok = true;

		if (rl->path && rl->path[0] != '/')
			ok = false;
		if (rl->group && (rl->group[0] == '\0' || strlen(rl->group) >= CG_NAME_MAX))
			ok = false;
		if (rl->weight != CG_WEIGHT_UNSET && rl->weight != CG_WEIGHT_FROM_CGROUP &&
		    (rl->weight < SCHED_WEIGHT_MIN || rl->weight > SCHED_WEIGHT_MAX))
			ok = false;
		if (rl->ioclass != CG_CLASS_KEEP && rl->ioclass != SCHED_CLASS_RT &&
		    rl->ioclass != SCHED_CLASS_BE && rl->ioclass != SCHED_CLASS_IDLE)
			ok = false;
		if (rl->has_level && rl->level >= SCHED_LEVELS)
			ok = false;
		if (!ok) {
			if (bad)
				*bad = i;
			return -EINVAL;
		}
	}
	return 0;
}

int cg_rules_match(const struct cg_rules *r, const struct cg_caller *who, const char *path_or_null,
		   struct cg_verdict *out)
{
	const struct cg_rule *rl = NULL;
	int idx = -1;

	if (!r || !who || !out || !who->comm || !who->cgroup || (r->nr && !r->v))
		return -EINVAL;
	for (size_t i = 0; i < r->nr; i++) {
		if (rule_matches(&r->v[i], who, path_or_null)) {
			rl = &r->v[i];
			idx = (int)i;
			break;
		}
	}

	out->rule = idx;
	out->ioclass = who->ioclass;
	out->level = who->level;
	out->weight = CG_WEIGHT_UNSET;
	if (rl && rl->group) {
		cg_name_fit(rl->group, out->group, sizeof(out->group));
		out->group_is_cgroup = false;
	} else {
		cg_rules_default_group(r->group_by, who, out->group, sizeof(out->group));
		out->group_is_cgroup = r->group_by == CG_GROUP_BY_CGROUP;
	}
	if (rl) {
		out->weight = rl->weight;
		if (rl->ioclass != CG_CLASS_KEEP) {
			out->ioclass = rl->ioclass;
			/* like ionice -c without -n: the class's normal level */
			out->level = SCHED_LEVEL_NORM;
		}
		if (rl->has_level)
			out->level = rl->level;
	}
	if (out->ioclass == SCHED_CLASS_IDLE)
		out->level = SCHED_LEVELS - 1;
	return 0;
}
