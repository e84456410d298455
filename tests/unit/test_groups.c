/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * groups: the daemon's group registry over a real executor and scheduler (no FUSE session
 * needed): which source's weight a group keeps (groups.h), and the weights of parent cgroups
 * read through grp_refresh_parents. The weight function is the test's own table, standing in
 * for the cgroup files (integration tests read real ones where the host kernel has them).
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <string.h>

#include "executor.h"
#include "groups.h"
#include "sched.h"

#define MS 1000000ull /* [ns] */

static struct executor *ex;
static struct grp_registry *reg;

static void setup(void)
{
	struct exec_options o = {
		.depth = 1,
		.limits = { .queue_limit = EXEC_QUEUE_LIMIT_DEFAULT,
			    .queue_bytes = EXEC_QUEUE_BYTES_DEFAULT },
		.policy = SCHED_POLICY_CFQ,
		.rotational = true,
		.inline_io = true,
	};
	int err = 0;

	ex = exec_create(&o, &err);
	cr_assert_not_null(ex, "exec_create: %s", strerror(-err));
	reg = grp_create(ex);
	cr_assert_not_null(reg);
}

static void teardown(void)
{
	grp_destroy(reg);
	exec_destroy(ex);
}

TestSuite(groups, .init = setup, .fini = teardown);

struct find_arg {
	const char *name;
	uint32_t weight; /* 0: not found */
};

static void find_cb(void *arg, const struct grp_info *gi)
{
	struct find_arg *a = arg;

	if (strcmp(gi->name, a->name) == 0)
		a->weight = gi->weight;
}

/* The registry's weight of `name`, 0 if it has no such group. */
static uint32_t weight_of(const char *name)
{
	struct find_arg a = { name, 0 };

	grp_foreach(reg, find_cb, &a);
	return a.weight;
}

/* Stand-in cgroup files: path -> weight (0: no weight file), and how often each was read. */
struct files {
	const char *path[4];
	uint32_t weight[4];
	unsigned reads[4];
};

static int files_weight(void *arg, const char *path, uint32_t *weight)
{
	struct files *f = arg;

	for (int i = 0; i < 4 && f->path[i]; i++) {
		if (strcmp(f->path[i], path) == 0) {
			f->reads[i]++;
			if (!f->weight[i])
				return -ENOENT;
			*weight = f->weight[i];
			return 0;
		}
	}
	return -ENOENT;
}

static uint32_t resolve(const char *name, uint32_t weight, uint32_t rank, uint64_t gen,
			uint64_t now)
{
	uint32_t id;
	int r = grp_resolve(reg, name, weight, rank, gen, now, &id);

	cr_assert_eq(r, 0, "grp_resolve %s: %s", name, strerror(-r));
	return id;
}

Test(groups, parent_cgroups_get_the_weights_of_their_own_files)
{
	struct files f = { { "/slice", "/slice/a" }, { 100, 0 }, { 0 } };

	resolve("/slice/a/leaf", 300, GRP_RANK_CGROUP, 1, 10 * MS);
	cr_assert_eq(weight_of("/slice"), SCHED_WEIGHT_DEFAULT, "created with the default");
	cr_assert_eq(weight_of("/slice/a"), SCHED_WEIGHT_DEFAULT);
	grp_refresh_parents(reg, "/slice/a/leaf", files_weight, &f, 1, 10 * MS, 1000 * MS);
	cr_assert_eq(weight_of("/slice"), 100, "the parent's file says 100");
	cr_assert_eq(weight_of("/slice/a"), SCHED_WEIGHT_DEFAULT, "no weight file: unchanged");
	cr_assert_eq(weight_of("/slice/a/leaf"), 300, "the leaf is not a parent: its own weight");
	cr_assert_eq(f.reads[0], 1);
	cr_assert_eq(f.reads[1], 1);
}

Test(groups, parent_weights_are_read_at_most_once_per_ttl_and_follow_the_file)
{
	struct files f = { { "/p" }, { 200 }, { 0 } };

	resolve("/p/c", 500, GRP_RANK_DEFAULT, 1, 10 * MS);
	grp_refresh_parents(reg, "/p/c", files_weight, &f, 1, 10 * MS, 1000 * MS);
	grp_refresh_parents(reg, "/p/c", files_weight, &f, 1, 500 * MS, 1000 * MS);
	cr_assert_eq(f.reads[0], 1, "read again within the ttl");
	cr_assert_eq(weight_of("/p"), 200);
	f.weight[0] = 700; /* the administrator changes the slice's weight */
	grp_refresh_parents(reg, "/p/c", files_weight, &f, 1, 1010 * MS, 1000 * MS);
	cr_assert_eq(f.reads[0], 2, "not read again after the ttl");
	cr_assert_eq(weight_of("/p"), 700, "the changed file did not apply");
	/* ttl 0: every call reads */
	grp_refresh_parents(reg, "/p/c", files_weight, &f, 1, 1011 * MS, 0);
	cr_assert_eq(f.reads[0], 3);
}

Test(groups, a_rule_weight_or_a_pin_on_a_parent_beats_its_file)
{
	struct files f = { { "/p", "/q" }, { 200, 300 }, { 0 } };

	resolve("/p/c", 500, GRP_RANK_DEFAULT, 1, 10 * MS);
	resolve("/q/c", 500, GRP_RANK_DEFAULT, 1, 10 * MS);
	resolve("/p", 800, GRP_RANK_RULE(0), 1, 10 * MS); /* a caller of /p itself, by a rule */
	cr_assert_eq(grp_set_weight(reg, "/q", 50), 0);
	grp_refresh_parents(reg, "/p/c", files_weight, &f, 1, 20 * MS, 0);
	grp_refresh_parents(reg, "/q/c", files_weight, &f, 1, 20 * MS, 0);
	cr_assert_eq(weight_of("/p"), 800, "the file undid a rule's weight");
	cr_assert_eq(weight_of("/q"), 50, "the file undid a pinned weight");
	/* after a reload (generation 2) the rule has not spoken yet: the file applies */
	grp_refresh_parents(reg, "/p/c", files_weight, &f, 2, 30 * MS, 0);
	cr_assert_eq(weight_of("/p"), 200);
}

Test(groups, of_two_sources_the_stronger_holds_until_a_reload)
{
	resolve("g", 900, GRP_RANK_RULE(1), 1, 10 * MS);
	cr_assert_eq(weight_of("g"), 900);
	resolve("g", 100, GRP_RANK_RULE(0), 1, 20 * MS);
	cr_assert_eq(weight_of("g"), 100, "the earlier rule did not win");
	resolve("g", 900, GRP_RANK_RULE(1), 1, 30 * MS);
	resolve("g", 300, GRP_RANK_CGROUP, 1, 40 * MS);
	resolve("g", 500, GRP_RANK_DEFAULT, 1, 50 * MS);
	cr_assert_eq(weight_of("g"), 100, "a weaker source swung the weight");
	resolve("g", 250, GRP_RANK_CGROUP, 2, 60 * MS);
	cr_assert_eq(weight_of("g"), 250, "after a reload the first classification applies");
	resolve("g", 260, GRP_RANK_CGROUP, 2, 70 * MS);
	cr_assert_eq(weight_of("g"), 260, "the same source with a new value did not apply");
}

/* A group made where compaction left a copy of an expired group's entry starts afresh: it
 * took over the old group's weight source and refused the weights of later rules. */
Test(groups, a_new_group_inherits_nothing_from_an_expired_one)
{
	grp_set_expiry(reg, 100 * MS);
	resolve("a", 500, GRP_RANK_DEFAULT, 1, 10 * MS);
	resolve("b", 800, GRP_RANK_RULE(0), 1, 100 * MS);
	cr_assert_eq(grp_expire(reg, 150 * MS), 1, "a should have expired");
	resolve("c", 500, GRP_RANK_DEFAULT, 1, 160 * MS);
	resolve("c", 900, GRP_RANK_RULE(3), 1, 170 * MS);
	cr_assert_eq(weight_of("c"), 900, "the new group kept the expired one's rule rank");
}

Test(groups, a_reload_that_stops_reading_files_puts_parents_back_to_the_default)
{
	struct files f = { { "/p" }, { 200 }, { 0 } };

	resolve("/p/c", 500, GRP_RANK_DEFAULT, 1, 10 * MS);
	grp_refresh_parents(reg, "/p/c", files_weight, &f, 1, 10 * MS, 0);
	cr_assert_eq(weight_of("/p"), 200);
	/* same configuration, no files (fn NULL): the default does not undo the file */
	grp_refresh_parents(reg, "/p/c", NULL, NULL, 1, 20 * MS, 0);
	cr_assert_eq(weight_of("/p"), 200);
	/* after a reload to weight_from_cgroup = false */
	grp_refresh_parents(reg, "/p/c", NULL, NULL, 2, 30 * MS, 0);
	cr_assert_eq(weight_of("/p"), SCHED_WEIGHT_DEFAULT, "the old file's weight stayed");
}

Test(groups, a_classification_under_an_older_configuration_changes_nothing)
{
	resolve("g", 300, GRP_RANK_CGROUP, 2, 10 * MS);
	/* a caller classified before the reload, resolved after it */
	resolve("g", 700, GRP_RANK_RULE(0), 1, 20 * MS);
	cr_assert_eq(weight_of("g"), 300, "a stale rule weight replaced the current one");
}
