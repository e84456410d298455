/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of cgroup/cg_rules.c: first match wins, globs, ids, comm, path prefixes. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "cg_rules.h"
#include "sched.h"

#define NR(a) (sizeof(a) / sizeof((a)[0]))

static struct cg_caller caller(const char *cgroup, uid_t uid, gid_t gid, const char *comm)
{
	struct cg_caller w = {
		.tid = 101, .tgid = 100, .uid = uid, .gid = gid, .comm = comm, .cgroup = cgroup,
		.ioclass = SCHED_CLASS_BE, .level = 4,
	};
	return w;
}

static struct cg_verdict match(const struct cg_rule *v, size_t nr, enum cg_group_by by,
			       const struct cg_caller *who, const char *path)
{
	struct cg_rules r = { .v = v, .nr = nr, .group_by = by };
	struct cg_verdict out;

	cr_assert_eq(cg_rules_check(&r, NULL), 0);
	cr_assert_eq(cg_rules_match(&r, who, path, &out), 0);
	return out;
}

static const char *const k8s_pod =
	"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1f2e.slice/"
	"cri-containerd-9a8b.scope";

Test(cg_rules, no_rules_gives_group_by_default_and_caller_priority)
{
	struct cg_caller w = caller("/system.slice/nginx.service", 33, 33, "nginx");
	struct cg_verdict v;

	v = match(NULL, 0, CG_GROUP_BY_CGROUP, &w, NULL);
	cr_assert_str_eq(v.group, "/system.slice/nginx.service");
	cr_assert(v.group_is_cgroup);
	cr_assert_eq(v.rule, -1);
	cr_assert_eq(v.weight, CG_WEIGHT_UNSET);
	cr_assert_eq(v.ioclass, SCHED_CLASS_BE);
	cr_assert_eq(v.level, 4);

	v = match(NULL, 0, CG_GROUP_BY_UID, &w, NULL);
	cr_assert_str_eq(v.group, "uid:33");
	cr_assert(!v.group_is_cgroup);
	v = match(NULL, 0, CG_GROUP_BY_GID, &w, NULL);
	cr_assert_str_eq(v.group, "gid:33");
	v = match(NULL, 0, CG_GROUP_BY_NONE, &w, NULL);
	cr_assert_str_eq(v.group, "/");
	cr_assert(!v.group_is_cgroup);
}

Test(cg_rules, first_match_wins_in_order)
{
	const struct cg_rule rules[] = {
		{ .has_uid = true, .uid = 1001, .weight = 100, .group = "batch" },
		{ .cgroup = "/kubepods.slice/*", .weight = 800 },
		{ .weight = 300, .group = "everyone-else" }, /* catch-all */
	};
	struct cg_caller a = caller(k8s_pod, 1001, 1001, "java");
	struct cg_caller b = caller(k8s_pod, 0, 0, "java");
	struct cg_caller c = caller("/user.slice", 1000, 1000, "bash");
	struct cg_verdict v;

	v = match(rules, NR(rules), CG_GROUP_BY_CGROUP, &a, NULL);
	cr_assert_eq(v.rule, 0, "uid rule listed first beats the cgroup rule");
	cr_assert_str_eq(v.group, "batch");
	cr_assert(!v.group_is_cgroup);
	cr_assert_eq(v.weight, 100);

	v = match(rules, NR(rules), CG_GROUP_BY_CGROUP, &b, NULL);
	cr_assert_eq(v.rule, 1);
	cr_assert_str_eq(v.group, k8s_pod, "no group action: the cgroup path stays the group");
	cr_assert(v.group_is_cgroup);
	cr_assert_eq(v.weight, 800);

	v = match(rules, NR(rules), CG_GROUP_BY_CGROUP, &c, NULL);
	cr_assert_eq(v.rule, 2);
	cr_assert_str_eq(v.group, "everyone-else");
	cr_assert_eq(v.weight, 300);

	/* reversed order: the catch-all swallows everyone */
	const struct cg_rule rev[] = { rules[2], rules[1], rules[0] };
	v = match(rev, NR(rev), CG_GROUP_BY_CGROUP, &a, NULL);
	cr_assert_eq(v.rule, 0);
	cr_assert_str_eq(v.group, "everyone-else");
}

Test(cg_rules, cgroup_glob_star_crosses_slashes)
{
	const struct cg_rule rules[] = { { .cgroup = "/kubepods.slice/*", .weight = 800 } };
	struct cg_caller pod = caller(k8s_pod, 0, 0, "x");
	struct cg_caller top = caller("/kubepods.slice", 0, 0, "x");
	struct cg_caller other = caller("/system.slice/kubepods.slice/x", 0, 0, "x");
	struct cg_caller ns = caller("/../kubepods.slice/x", 0, 0, "x");

	cr_assert_eq(match(rules, 1, CG_GROUP_BY_CGROUP, &pod, NULL).rule, 0);
	cr_assert_eq(match(rules, 1, CG_GROUP_BY_CGROUP, &top, NULL).rule, -1,
		     "the slice itself is not below itself");
	cr_assert_eq(match(rules, 1, CG_GROUP_BY_CGROUP, &other, NULL).rule, -1);
	cr_assert_eq(match(rules, 1, CG_GROUP_BY_CGROUP, &ns, NULL).rule, -1,
		     "a namespaced path is an opaque key");

	const struct cg_rule exact[] = { { .cgroup = "/docker/[0-9a-f]*", .weight = 200 },
					 { .cgroup = "/system.slice/backup.service" } };
	struct cg_caller d = caller("/docker/8c1f0a3e", 0, 0, "x");
	struct cg_caller e = caller("/docker/zz", 0, 0, "x");
	struct cg_caller f = caller("/system.slice/backup.service", 0, 0, "x");
	struct cg_caller g = caller("/system.slice/backup.service/sub", 0, 0, "x");
	cr_assert_eq(match(exact, 2, CG_GROUP_BY_CGROUP, &d, NULL).rule, 0);
	cr_assert_eq(match(exact, 2, CG_GROUP_BY_CGROUP, &e, NULL).rule, -1);
	cr_assert_eq(match(exact, 2, CG_GROUP_BY_CGROUP, &f, NULL).rule, 1);
	cr_assert_eq(match(exact, 2, CG_GROUP_BY_CGROUP, &g, NULL).rule, -1,
		     "no metacharacters: exact");
}

Test(cg_rules, uid_gid_and_comm_matchers_combine_with_and)
{
	const struct cg_rule rules[] = {
		{ .has_uid = true, .uid = 1000, .comm = "rsync", .weight = 50 },
		{ .has_gid = true, .gid = 27, .weight = 60 },
		{ .comm = "backup-*", .ioclass = SCHED_CLASS_IDLE },
	};
	struct cg_caller a = caller("/", 1000, 1000, "rsync");
	struct cg_caller b = caller("/", 1000, 1000, "rsyncd");
	struct cg_caller c = caller("/", 1001, 27, "rsync");
	struct cg_caller d = caller("/", 0, 0, "backup-db");
	struct cg_caller e = caller("/", 0, 0, "backup");

	cr_assert_eq(match(rules, NR(rules), CG_GROUP_BY_CGROUP, &a, NULL).rule, 0);
	cr_assert_eq(match(rules, NR(rules), CG_GROUP_BY_CGROUP, &b, NULL).rule, -1,
		     "comm is exact without metacharacters");
	cr_assert_eq(match(rules, NR(rules), CG_GROUP_BY_CGROUP, &c, NULL).rule, 1,
		     "uid differs: rule 0 fails as a whole");
	struct cg_verdict v = match(rules, NR(rules), CG_GROUP_BY_CGROUP, &d, NULL);
	cr_assert_eq(v.rule, 2);
	cr_assert_eq(v.ioclass, SCHED_CLASS_IDLE);
	cr_assert_eq(v.level, 7);
	cr_assert_eq(match(rules, NR(rules), CG_GROUP_BY_CGROUP, &e, NULL).rule, -1);
}

Test(cg_rules, path_prefix_matches_on_slash_boundary)
{
	const struct cg_rule rules[] = { { .path = "/data", .weight = 700 } };
	const struct cg_rule slash[] = { { .path = "/data/", .weight = 700 } };
	const struct cg_rule root[] = { { .path = "/", .weight = 700 } };
	struct cg_caller w = caller("/", 0, 0, "x");

	cr_assert_eq(match(rules, 1, CG_GROUP_BY_CGROUP, &w, "/data").rule, 0);
	cr_assert_eq(match(rules, 1, CG_GROUP_BY_CGROUP, &w, "/data/x/y").rule, 0);
	cr_assert_eq(match(rules, 1, CG_GROUP_BY_CGROUP, &w, "/database").rule, -1);
	cr_assert_eq(match(rules, 1, CG_GROUP_BY_CGROUP, &w, "/dat").rule, -1);
	cr_assert_eq(match(rules, 1, CG_GROUP_BY_CGROUP, &w, "/other/data").rule, -1);
	cr_assert_eq(match(rules, 1, CG_GROUP_BY_CGROUP, &w, NULL).rule, -1,
		     "no path known: a path rule cannot match");
	cr_assert_eq(match(slash, 1, CG_GROUP_BY_CGROUP, &w, "/data").rule, 0);
	cr_assert_eq(match(slash, 1, CG_GROUP_BY_CGROUP, &w, "/database").rule, -1);
	cr_assert_eq(match(root, 1, CG_GROUP_BY_CGROUP, &w, "/anything").rule, 0);
	cr_assert_eq(match(root, 1, CG_GROUP_BY_CGROUP, &w, "/").rule, 0);

	cr_assert(cg_path_has_prefix("/a/b", "/a"));
	cr_assert(!cg_path_has_prefix("/ab", "/a"));
	cr_assert(cg_path_has_prefix("/a", "/a//"));
}

Test(cg_rules, forced_class_and_level)
{
	const struct cg_rule be[] = { { .ioclass = SCHED_CLASS_BE } };
	const struct cg_rule rt0[] = { { .ioclass = SCHED_CLASS_RT, .has_level = true, .level = 0 } };
	const struct cg_rule lvl2[] = { { .has_level = true, .level = 2 } };
	const struct cg_rule weight_only[] = { { .weight = 100 } };
	struct cg_caller w = caller("/", 0, 0, "x");
	struct cg_verdict v;

	w.ioclass = SCHED_CLASS_IDLE;
	w.level = 7;
	v = match(be, 1, CG_GROUP_BY_CGROUP, &w, NULL);
	cr_assert_eq(v.ioclass, SCHED_CLASS_BE);
	cr_assert_eq(v.level, SCHED_LEVEL_NORM, "a forced class without level: level 4");

	v = match(rt0, 1, CG_GROUP_BY_CGROUP, &w, NULL);
	cr_assert_eq(v.ioclass, SCHED_CLASS_RT);
	cr_assert_eq(v.level, 0);

	w.ioclass = SCHED_CLASS_BE;
	w.level = 6;
	v = match(lvl2, 1, CG_GROUP_BY_CGROUP, &w, NULL);
	cr_assert_eq(v.ioclass, SCHED_CLASS_BE, "a forced level keeps the class");
	cr_assert_eq(v.level, 2);

	w.ioclass = SCHED_CLASS_IDLE;
	w.level = 7;
	v = match(lvl2, 1, CG_GROUP_BY_CGROUP, &w, NULL);
	cr_assert_eq(v.ioclass, SCHED_CLASS_IDLE);
	cr_assert_eq(v.level, 7, "IDLE has one level");

	/* a zero-initialised action part changes nothing */
	w.ioclass = SCHED_CLASS_RT;
	w.level = 3;
	v = match(weight_only, 1, CG_GROUP_BY_CGROUP, &w, NULL);
	cr_assert_eq(v.ioclass, SCHED_CLASS_RT);
	cr_assert_eq(v.level, 3);
	cr_assert_eq(v.weight, 100);
}

Test(cg_rules, weight_actions)
{
	const struct cg_rule rules[] = {
		{ .comm = "a", .weight = CG_WEIGHT_FROM_CGROUP, .group = "g" },
		{ .comm = "b" },
	};
	struct cg_caller a = caller("/x", 0, 0, "a");
	struct cg_caller b = caller("/x", 0, 0, "b");
	struct cg_verdict v;

	v = match(rules, 2, CG_GROUP_BY_CGROUP, &a, NULL);
	cr_assert_eq(v.weight, CG_WEIGHT_FROM_CGROUP);
	cr_assert(!v.group_is_cgroup);
	v = match(rules, 2, CG_GROUP_BY_CGROUP, &b, NULL);
	cr_assert_eq(v.weight, CG_WEIGHT_UNSET);
	cr_assert(v.group_is_cgroup);
	cr_assert_eq(v.level, 4);
}

Test(cg_rules, check_rejects_invalid_rules_and_names_the_index)
{
	const struct cg_rule ok = { .weight = 10 };
	const struct cg_rule bad[] = {
		{ .weight = 9 },
		{ .weight = 1001 },
		{ .path = "data" },
		{ .group = "" },
		{ .ioclass = 4 },
		{ .has_level = true, .level = 8 },
	};
	size_t idx = 99;

	for (size_t i = 0; i < NR(bad); i++) {
		struct cg_rule two[2] = { ok, bad[i] };
		struct cg_rules r = { .v = two, .nr = 2, .group_by = CG_GROUP_BY_CGROUP };
		cr_assert_eq(cg_rules_check(&r, &idx), -EINVAL, "case %zu", i);
		cr_assert_eq(idx, 1);
	}
	struct cg_rules r = { .v = &ok, .nr = 1, .group_by = (enum cg_group_by)9 };
	cr_assert_eq(cg_rules_check(&r, &idx), -EINVAL);
	cr_assert_eq(idx, 1);
	r.group_by = CG_GROUP_BY_NONE;
	cr_assert_eq(cg_rules_check(&r, &idx), 0);

	struct cg_verdict v;
	struct cg_caller w = caller("/", 0, 0, "x");
	w.comm = NULL;
	cr_assert_eq(cg_rules_match(&r, &w, NULL, &v), -EINVAL);
}

Test(cg_rules, long_group_names_are_shortened_stably)
{
	char path[3000];
	struct cg_caller w;
	struct cg_verdict v1, v2;

	memset(path, 'p', sizeof(path) - 1);
	path[0] = '/';
	path[sizeof(path) - 1] = '\0';
	w = caller(path, 0, 0, "x");
	v1 = match(NULL, 0, CG_GROUP_BY_CGROUP, &w, NULL);
	v2 = match(NULL, 0, CG_GROUP_BY_CGROUP, &w, NULL);
	cr_assert_eq(strlen(v1.group), CG_NAME_MAX - 1);
	cr_assert_str_eq(v1.group, v2.group);
}
