/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * executor: what can be exercised without a FUSE session. Requests need a live fuse_req_t,
 * so the data path itself is covered by the integration suites (it_writes, it_kill, ...),
 * where a debug build of the daemon runs exec_check's invariants after every enqueue and
 * completion. Here: the executor's life cycle in each policy, with and without an emulated
 * device, keeps those invariants, and the bounds of its options are enforced.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <string.h>

#include "device.h"
#include "executor.h"

static struct exec_options opts(enum sched_policy policy, unsigned depth)
{
	return (struct exec_options){
		.depth = depth,
		.limits = { .queue_limit = EXEC_QUEUE_LIMIT_DEFAULT,
			    .queue_bytes = EXEC_QUEUE_BYTES_DEFAULT },
		.policy = policy,
		.rotational = true,
		.inline_io = true,
	};
}

static void expect_check_ok(struct executor *ex, const char *when)
{
	char why[256] = "";

	cr_assert_eq(exec_check(ex, why, sizeof(why)), 0, "%s: %s", when, why);
}

Test(executor, life_cycle_keeps_the_invariants_in_every_policy)
{
	const enum sched_policy policies[] = { SCHED_POLICY_CFQ, SCHED_POLICY_DEADLINE,
					       SCHED_POLICY_NOOP };

	for (size_t i = 0; i < sizeof(policies) / sizeof(policies[0]); i++) {
		struct exec_options o = opts(policies[i], 4);
		int err = -1;
		struct executor *ex = exec_create(&o, &err);

		cr_assert_not_null(ex, "exec_create: %s", strerror(-err));
		expect_check_ok(ex, "created");
		cr_assert_eq(exec_start(ex), 0);
		expect_check_ok(ex, "started");
		exec_destroy(ex);
	}
}

Test(executor, with_an_emulated_device)
{
	struct dev_params dp;
	struct exec_options o = opts(SCHED_POLICY_CFQ, 1);
	int err = -1;

	cr_assert_eq(dev_params_parse("hdd", &dp), 0);
	o.device = &dp;
	struct executor *ex = exec_create(&o, &err);
	cr_assert_not_null(ex, "exec_create: %s", strerror(-err));
	cr_assert(!exec_issues_inline(ex), "inline issue is never on with an emulated device");
	cr_assert_eq(exec_start(ex), 0);
	expect_check_ok(ex, "started");
	exec_destroy(ex);
}

Test(executor, depth_out_of_range_is_refused)
{
	const unsigned bad[] = { 0, 257 };

	for (size_t i = 0; i < 2; i++) {
		struct exec_options o = opts(SCHED_POLICY_NOOP, bad[i]);
		int err = 0;

		cr_assert_null(exec_create(&o, &err), "depth %u accepted", bad[i]);
		cr_assert_eq(err, -EINVAL, "depth %u: err %d", bad[i], err);
	}
}
