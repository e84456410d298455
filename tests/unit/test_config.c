/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of fs/config.c: the libconfig file, -o overrides, file:line errors. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

static char path[64];

static const char *write_conf(const char *text)
{
	snprintf(path, sizeof(path), "/tmp/cfqfs-test-conf.XXXXXX");
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

static void cleanup(void)
{
	if (path[0])
		unlink(path);
}

static int64_t tunable(const struct cfqfs_config *c, const char *name)
{
	for (unsigned i = 0; i < c->nr_tunables; i++)
		if (!strcmp(c->tunables[i].name, name))
			return c->tunables[i].value;
	return -1;
}

TestSuite(config, .fini = cleanup);

Test(config, defaults_are_cfq_depth8_auto_rotational)
{
	struct cfqfs_config c;

	cfg_defaults(&c);
	cr_assert_eq(c.policy, SCHED_POLICY_CFQ);
	cr_assert_eq(c.depth, 8);
	cr_assert_eq(c.rotational, -1);
	cr_assert_str_eq(c.ctl_dir, ".cfqfs");
	cr_assert_eq(c.nr_tunables, 0);
}

Test(config, file_sets_keys_and_tunables)
{
	struct cfqfs_config c;
	char err[CFG_ERR_MAX] = "";

	cfg_defaults(&c);
	write_conf("scheduler = \"deadline\";\ndepth = 4;\nrotational = false;\n"
		   "ctl_dir = \"\";\ndirect_io = true;\nattr_timeout = 0.5;\n"
		   "iosched = { slice_idle = 0; quantum = 16; read_expire = 250; };\n");
	cr_assert_eq(cfg_load_file(&c, path, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(c.policy, SCHED_POLICY_DEADLINE);
	cr_assert_eq(c.depth, 4);
	cr_assert_eq(c.rotational, 0);
	cr_assert_str_eq(c.ctl_dir, "");
	cr_assert(c.direct_io);
	cr_assert_float_eq(c.attr_timeout, 0.5, 1e-9);
	cr_assert_eq(tunable(&c, "slice_idle"), 0);
	cr_assert_eq(tunable(&c, "quantum"), 16);
	cr_assert_eq(tunable(&c, "read_expire"), 250);
}

Test(config, shipped_example_loads)
{
	struct cfqfs_config c;
	char err[CFG_ERR_MAX] = "";

	cfg_defaults(&c);
	cr_assert_eq(cfg_load_file(&c, CFQFS_SOURCE_DIR "/etc/cfqfs.conf", err, sizeof(err)), 0,
		     "%s", err);
	cr_assert_eq(c.policy, SCHED_POLICY_CFQ);
	cr_assert_eq(tunable(&c, "slice_idle"), 8);
}

Test(config, example_configurations_load)
{
	static const char *const files[] = { "fair-share.conf", "containers.conf", "bench.conf" };
	char p[512], err[CFG_ERR_MAX];

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		struct cfqfs_config c;

		cfg_defaults(&c);
		snprintf(p, sizeof(p), "%s/etc/examples/%s", CFQFS_SOURCE_DIR, files[i]);
		err[0] = '\0';
		cr_assert_eq(cfg_load_file(&c, p, err, sizeof(err)), 0, "%s: %s", files[i], err);
		cr_assert_gt(c.nr_rules + (unsigned)c.device_enabled, 0, "%s set nothing", files[i]);
	}
}

Test(config, bench_example_sets_the_emulated_disk)
{
	struct cfqfs_config c;
	char err[CFG_ERR_MAX] = "";

	cfg_defaults(&c);
	cr_assert_eq(cfg_load_file(&c, CFQFS_SOURCE_DIR "/etc/examples/bench.conf", err,
				   sizeof(err)), 0, "%s", err);
	cr_assert(c.device_enabled);
	cr_assert_eq(c.device.kind, DEV_HDD);
	cr_assert_eq(c.device.bandwidth, 120000000u);
	cr_assert_eq(c.device.settle, 800000u);
	cr_assert(c.direct_io);
}

Test(config, rules_are_parsed_with_their_line)
{
	struct cfqfs_config c;
	char err[CFG_ERR_MAX] = "";

	cfg_defaults(&c);
	write_conf("rules = (\n"
		   "  { uid = 34; group = \"backup\"; class = \"idle\"; },\n"
		   "  { cgroup = \"/docker-*\"; weight = \"cgroup\"; },\n"
		   "  { comm = \"vim\"; level = 0; weight = 200; }\n"
		   ");\n");
	cr_assert_eq(cfg_load_file(&c, path, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(c.nr_rules, 3);
	cr_assert(c.rules[0].has_uid && c.rules[0].uid == 34);
	cr_assert_str_eq(c.rules[0].group, "backup");
	cr_assert_eq(c.rules[0].ioclass, SCHED_CLASS_IDLE);
	cr_assert_eq(c.rules[1].weight, CG_WEIGHT_FROM_CGROUP);
	cr_assert_eq(c.rules[2].weight, 200);
	cr_assert(c.rules[2].has_level && c.rules[2].level == 0);
	cr_assert_eq(c.rules[2].line, 4);

	write_conf("rules = (\n  { uid = 1; },\n  { colour = \"red\"; }\n);\n");
	cr_assert_eq(cfg_load_file(&c, path, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, ":3: rules.colour: unknown key"), "%s", err);
	write_conf("rules = ( { weight = 5000; } );\n");
	cr_assert_eq(cfg_load_file(&c, path, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, ":1: rules.weight:") && strstr(err, "out of range"), "%s", err);
	write_conf("rules = (\n { path = \"data\"; weight = 200; } );\n");
	cr_assert_eq(cfg_load_file(&c, path, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, ":2: rules.path:") && strstr(err, "must start with /"), "%s", err);
	write_conf("rules = ( { class = \"realtime\"; } );\n");
	cr_assert_eq(cfg_load_file(&c, path, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "rules.class"), "%s", err);
}

Test(config, device_key_and_parameters)
{
	struct cfqfs_config c;
	char err[CFG_ERR_MAX] = "";

	cfg_defaults(&c);
	cr_assert_not(c.device_enabled);
	cr_assert_eq(cfg_set(&c, "device", "raid:4", err, sizeof(err)), 0, "%s", err);
	cr_assert(c.device_enabled);
	cr_assert_eq(c.device.heads, 4);
	cr_assert_eq(cfg_set(&c, "device.bandwidth_mb", "60", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(c.device.bandwidth, 60000000u);
	cr_assert_eq(cfg_set(&c, "device.settle_us", "99999999", err, sizeof(err)), -EINVAL);
	cr_assert_eq(cfg_set(&c, "device.warp", "9", err, sizeof(err)), -EINVAL);
	cr_assert_eq(c.device.placement, DEV_PLACE_SPREAD);
	cr_assert_eq(cfg_set(&c, "device.placement", "dir", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(c.device.placement, DEV_PLACE_DIR);
	cr_assert_eq(cfg_set(&c, "device.placement", "nearby", err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "spread, dir"), "%s", err);
	cr_assert_eq(c.device.placement, DEV_PLACE_DIR);
	cr_assert_eq(cfg_set(&c, "device.warp", "9", err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "unknown device parameter"), "%s", err);
	cr_assert_eq(cfg_set(&c, "device", "floppy", err, sizeof(err)), -EINVAL);
	cr_assert_eq(cfg_set(&c, "device", "none", err, sizeof(err)), 0);
	cr_assert_not(c.device_enabled);
	cr_assert_eq(cfg_set(&c, "group_by", "uid", err, sizeof(err)), 0);
	cr_assert_eq(c.group_by, CG_GROUP_BY_UID);
	cr_assert_eq(cfg_set(&c, "group_by", "planet", err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "cgroup, uid, gid, none"), "%s", err);
}

Test(config, unknown_key_names_file_line_and_key)
{
	struct cfqfs_config c, before;
	char err[CFG_ERR_MAX] = "";

	cfg_defaults(&c);
	before = c;
	write_conf("depth = 4;\n\nbogus_key = 3;\n");
	cr_assert_eq(cfg_load_file(&c, path, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, ":3: bogus_key: unknown key"), "message was: %s", err);
	cr_assert(strstr(err, path), "message lacks the file: %s", err);
	cr_assert_eq(memcmp(&c, &before, sizeof(c)), 0, "config changed on failure");
}

Test(config, out_of_range_and_wrong_type_are_errors_with_line)
{
	struct cfqfs_config c;
	char err[CFG_ERR_MAX] = "";

	cfg_defaults(&c);
	write_conf("depth = 0;\n");
	cr_assert_eq(cfg_load_file(&c, path, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, ":1: depth:") && strstr(err, "out of range"), "%s", err);

	write_conf("scheduler = \"bfq\";\n");
	cr_assert_eq(cfg_load_file(&c, path, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, ":1: scheduler:") && strstr(err, "bfq"), "%s", err);

	write_conf("\ndirect_io = 7;\n");
	cr_assert_eq(cfg_load_file(&c, path, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, ":2: direct_io:"), "%s", err);

	write_conf("iosched = { slice_idle = -1; };\n");
	cr_assert_eq(cfg_load_file(&c, path, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, ":1: iosched.slice_idle:") && strstr(err, "out of range"), "%s",
		  err);

	write_conf("iosched = { no_such_tunable = 1; };\n");
	cr_assert_eq(cfg_load_file(&c, path, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "iosched.no_such_tunable"), "%s", err);
}

/* The kernel's default of 12 hid most of eight aio readers' requests from CFQ (pt.c). */
Test(config, max_background_default_file_and_range)
{
	struct cfqfs_config c;
	char err[CFG_ERR_MAX] = "";

	cfg_defaults(&c);
	cr_assert_eq(c.max_background, 128);
	write_conf("max_background = 512;\n");
	cr_assert_eq(cfg_load_file(&c, path, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(c.max_background, 512);
	write_conf("\nmax_background = 0;\n");
	cr_assert_eq(cfg_load_file(&c, path, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, ":2: max_background:") && strstr(err, "out of range"), "%s", err);
	cr_assert_eq(cfg_set(&c, "max_background", "65536", err, sizeof(err)), -EINVAL,
		     "the FUSE protocol field is 16 bits");
	cr_assert(strstr(err, "max_background"), "%s", err);
	cr_assert_eq(c.max_background, 512, "a refused value changed the config");
	cr_assert_eq(cfg_set(&c, "max_background", "65535", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(c.max_background, 65535);
}

Test(config, per_user_bounds_default_to_the_group_values_and_are_range_checked)
{
	struct cfqfs_config c;
	char err[CFG_ERR_MAX] = "";

	cfg_defaults(&c);
	cr_assert_eq(c.uid_queue_limit + c.uid_queue_limit_mb + c.uid_open_limit, 0,
		     "0: the per-group value");
	write_conf("uid_queue_limit = 64;\nuid_queue_limit_mb = 8;\nuid_open_limit = 100;\n");
	cr_assert_eq(cfg_load_file(&c, path, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(c.uid_queue_limit, 64);
	cr_assert_eq(c.uid_queue_limit_mb, 8);
	cr_assert_eq(c.uid_open_limit, 100);
	write_conf("\n\nuid_queue_limit = 8;\n");
	cr_assert_eq(cfg_load_file(&c, path, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, ":3: uid_queue_limit:") && strstr(err, "8 is out of range"), "%s",
		  err);
	cr_assert_eq(cfg_set(&c, "uid_queue_limit", "15", err, sizeof(err)), -EINVAL);
	cr_assert_eq(c.uid_queue_limit, 64, "a refused value changed the config");
	cr_assert_eq(cfg_set(&c, "uid_queue_limit", "0", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(c.uid_queue_limit, 0);
	cr_assert_eq(cfg_set(&c, "uid_queue_limit_mb", "1048577", err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "uid_queue_limit_mb"), "%s", err);
	cr_assert_eq(cfg_set(&c, "uid_open_limit", "-1", err, sizeof(err)), -EINVAL);
}

Test(config, syntax_error_reports_line)
{
	struct cfqfs_config c;
	char err[CFG_ERR_MAX] = "";

	cfg_defaults(&c);
	write_conf("depth = 4;\nscheduler = ;\n");
	cr_assert_eq(cfg_load_file(&c, path, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, ":2:"), "%s", err);
}

Test(config, missing_file_is_enoent)
{
	struct cfqfs_config c;
	char err[CFG_ERR_MAX] = "";

	cfg_defaults(&c);
	cr_assert_eq(cfg_load_file(&c, "/nonexistent/cfqfs.conf", err, sizeof(err)), -ENOENT);
	cr_assert(strstr(err, "/nonexistent/cfqfs.conf"), "%s", err);
}

Test(config, override_keys_tunables_and_unknown)
{
	struct cfqfs_config c;
	char err[CFG_ERR_MAX] = "";

	cfg_defaults(&c);
	cr_assert_eq(cfg_set(&c, "depth", "16", err, sizeof(err)), 0);
	cr_assert_eq(c.depth, 16);
	cr_assert_eq(cfg_set(&c, "slice_idle", "0", err, sizeof(err)), 0);
	cr_assert_eq(tunable(&c, "slice_idle"), 0);
	cr_assert_eq(cfg_set(&c, "slice_idle", "4", err, sizeof(err)), 0);
	cr_assert_eq(tunable(&c, "slice_idle"), 4, "a later override must win");
	cr_assert_eq(cfg_set(&c, "low_latency", "false", err, sizeof(err)), 0);
	cr_assert_eq(tunable(&c, "low_latency"), 0);
	/* Not ours: libfuse gets it, and no message is produced. */
	err[0] = '\0';
	cr_assert_eq(cfg_set(&c, "allow_other", "true", err, sizeof(err)), -ENOENT);
	cr_assert_str_eq(err, "");
	/* Ours but bad: a message naming the key. */
	cr_assert_eq(cfg_set(&c, "depth", "many", err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "depth") && strstr(err, "many"), "%s", err);
	cr_assert_eq(c.depth, 16, "a failed override changed the config");
	cr_assert_eq(cfg_set(&c, "quantum", "0", err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "quantum"), "%s", err);
	cr_assert_eq(cfg_set(&c, "ctl_dir", "a/b", err, sizeof(err)), -EINVAL);
	cr_assert_eq(cfg_set(&c, "rotational", "maybe", err, sizeof(err)), -EINVAL);
}

/*
 * Loads `rule` as the only rule, on line 3 of a file, and returns cfg_load_file()'s result
 * with its message in err (the file is removed again).
 */
static int load_rule(struct cfqfs_config *c, const char *rule, char *err, size_t errlen)
{
	char text[512];
	int r;

	snprintf(text, sizeof(text), "depth = 4;\nrules = (\n  %s\n);\n", rule);
	write_conf(text);
	err[0] = '\0';
	r = cfg_load_file(c, path, err, errlen);
	cleanup();
	return r;
}

/* A refused rule: -EINVAL, the message names the file, line 3 and `key`, and has `why`. */
static void expect_rule_refused(const char *rule, const char *key, const char *why)
{
	struct cfqfs_config c, before;
	char err[CFG_ERR_MAX], where[64];

	cfg_defaults(&c);
	before = c;
	cr_assert_eq(load_rule(&c, rule, err, sizeof(err)), -EINVAL, "%s was accepted", rule);
	snprintf(where, sizeof(where), ":3: rules.%s: ", key);
	cr_assert(strstr(err, path) && strstr(err, where), "%s: no file:line: key in \"%s\"", rule,
		  err);
	cr_assert(strstr(err, why), "%s: \"%s\" does not say \"%s\"", rule, err, why);
	cr_assert_eq(memcmp(&c, &before, sizeof(c)), 0, "config changed on failure");
}

static void expect_rule_loads(const char *rule)
{
	struct cfqfs_config c;
	char err[CFG_ERR_MAX];

	cfg_defaults(&c);
	cr_assert_eq(load_rule(&c, rule, err, sizeof(err)), 0, "%s: %s", rule, err);
	cr_assert_eq(c.nr_rules, 1);
}

/* "" would be stored as "not set": the rule would put everyone in group_by's group. */
Test(config, an_empty_rule_group_is_an_error_with_line)
{
	expect_rule_refused("{ comm = \"rsync\"; group = \"\"; }", "group", "empty group name");
	expect_rule_refused("{ comm = \"\"; weight = 100; }", "comm", "empty");
	expect_rule_refused("{ cgroup = \"\"; weight = 100; }", "cgroup", "empty");
}

/* The caller's cgroup path always starts with '/'; a glob whose first character is another
 * literal can never match it. */
Test(config, a_rule_cgroup_not_starting_with_slash_is_an_error_with_line)
{
	expect_rule_refused("{ cgroup = \"docker/*\"; weight = 100; }", "cgroup",
			    "cgroup paths start with /");
	expect_rule_refused("{ cgroup = \"system.slice\"; }", "cgroup",
			    "cgroup paths start with /");
	expect_rule_loads("{ cgroup = \"/docker/*\"; weight = 100; }");
	expect_rule_loads("{ cgroup = \"*docker*\"; weight = 100; }"); /* '*' matches the '/' */
	expect_rule_loads("{ cgroup = \"?docker*\"; weight = 100; }");
}

/* The kernel keeps 15 characters of a command name; a glob needing more never matches. */
Test(config, a_rule_comm_longer_than_15_characters_is_an_error_with_line)
{
	expect_rule_refused("{ comm = \"0123456789abcdef\"; weight = 100; }", "comm",
			    "15 characters");
	/* a prefix written for the full name: 16 characters before the '*' */
	expect_rule_refused("{ comm = \"postgres-backup-*\"; class = \"idle\"; }", "comm",
			    "15 characters");
	expect_rule_refused("{ comm = \"[a-z]123456789abcdef*\"; }", "comm", "15 characters");
	expect_rule_loads("{ comm = \"0123456789abcde\"; weight = 100; }");
	expect_rule_loads("{ comm = \"0123456789abcde*\"; weight = 100; }");
	expect_rule_loads("{ comm = \"postgres-backu*\"; weight = 100; }");
	/* a bracket expression is one character, however long it is written */
	expect_rule_loads("{ comm = \"[[:alpha:]][[:digit:]]*worker\"; weight = 100; }");
	expect_rule_loads("{ comm = \"[]abcdefghijklmnop]x\"; weight = 100; }");
}

/* Numbers are decimal everywhere: libconfig reads "depth = 010;" as 10, and so must -o and
 * tunables (strtoll's base 0 read it as octal 8); hex is refused with a message. */
Test(config, numbers_with_a_leading_zero_are_decimal_and_hex_is_refused)
{
	struct cfqfs_config c;
	char err[CFG_ERR_MAX] = "";

	cfg_defaults(&c);
	cr_assert_eq(cfg_set(&c, "depth", "010", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(c.depth, 10, "-o depth=010 gave depth %u", c.depth);
	cr_assert_eq(cfg_set(&c, "quantum", "010", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(tunable(&c, "quantum"), 10);
	write_conf("depth = 012;\n");
	cr_assert_eq(cfg_load_file(&c, path, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(c.depth, 12, "the file's depth = 012 gave %u", c.depth);
	cr_assert_eq(cfg_set(&c, "depth", "0x10", err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "decimal") && strstr(err, "0x10"), "%s", err);
	cr_assert_eq(c.depth, 12);
}
