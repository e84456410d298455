/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli: the daemon's command line - --help, --version, the one-line errors for unusable SOURCE
 * or MOUNTPOINT, and options that change the mount (-o ro, fsname=, -s, -d, scheduler=).
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mount.h"

#ifndef CFQFS_VERSION
#define CFQFS_VERSION ""
#endif

static struct mnt M;

/* Only the temp dirs here; each test mounts (or fails to) itself. */
static void setup(void)
{
	mnt_cr_prepare(&M);
}

static void teardown(void)
{
	mnt_cr_teardown(&M);
}

TestSuite(cli, .init = setup, .fini = teardown, .timeout = 60);

static char out[65536], err[65536];

/* Runs cfqfs with args; returns the wait status. Never leaves a mount behind. */
static int run_cfqfs(const char *const *args)
{
	const char *argv[32];
	size_t n = 0;
	int status = 0, ret;

	argv[n++] = CFQFS_BIN;
	for (size_t i = 0; args[i] && n < 31; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	ret = mnt_run(argv, 10000, &status, out, sizeof(out), err, sizeof(err));
	if (mnt_is_fuse_mounted(M.mnt)) {
		const char *um[] = { "fusermount3", "-u", M.mnt, NULL };
		int st;

		mnt_run(um, 10000, &st, NULL, 0, NULL, 0);
		cr_log_error("cfqfs mounted although it was expected to fail; unmounted");
	}
	cr_assert_eq(ret, 0, "running %s: %s (stderr: %s)", CFQFS_BIN, strerror(-ret), err);
	return status;
}

static int count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		if (*s == '\n')
			n++;
	return n;
}

/* The failure contract: non-zero exit, exactly one non-empty line on stderr, nothing mounted. */
static void expect_one_line_failure(int status, const char *what)
{
	cr_assert(WIFEXITED(status), "%s: killed (status 0x%x)", what, status);
	cr_assert_neq(WEXITSTATUS(status), 0, "%s: exit 0", what);
	cr_assert_eq(count_lines(err), 1, "%s: stderr must be one line, got:\n%s", what, err);
	cr_assert_gt(strlen(err), 1, "%s: empty message", what);
	cr_assert_not(mnt_is_fuse_mounted(M.mnt), "%s: mounted anyway", what);
}

Test(cli, help_exits_0_and_names_source_and_mountpoint)
{
	static const char *const args[] = { "--help", NULL };
	int st = run_cfqfs(args);
	char all[sizeof(out) + sizeof(err)];

	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "--help: status 0x%x", st);
	snprintf(all, sizeof(all), "%s%s", out, err);
	cr_assert_not_null(strstr(all, "SOURCE"), "usage lacks SOURCE:\n%s", all);
	cr_assert_not_null(strstr(all, "MOUNTPOINT"), "usage lacks MOUNTPOINT:\n%s", all);
	cr_assert_not_null(strstr(all, "sage"), "no usage line:\n%s", all);
}

Test(cli, version_exits_0_and_prints_version)
{
	static const char *const args[] = { "--version", NULL };
	int st = run_cfqfs(args);
	char all[sizeof(out) + sizeof(err)];

	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "--version: status 0x%x", st);
	snprintf(all, sizeof(all), "%s%s", out, err);
	cr_assert_gt(strlen(all), 0, "--version printed nothing");
	cr_assert_not_null(strstr(all, CFQFS_VERSION), "version %s not in:\n%s", CFQFS_VERSION,
			   all);
}

Test(cli, missing_source_fails_with_one_line)
{
	const char *args[] = { "-f", base_path(&M, "does-not-exist"), M.mnt, NULL };

	expect_one_line_failure(run_cfqfs(args), "missing SOURCE");
}

Test(cli, source_that_is_a_file_fails_with_one_line)
{
	const char *args[] = { "-f", base_path(&M, "plain-file"), M.mnt, NULL };

	cr_assert_eq(mnt_put(base_path(&M, "plain-file"), "x", 1, 0644), 0);
	expect_one_line_failure(run_cfqfs(args), "SOURCE is a regular file");
}

Test(cli, mountpoint_inside_source_fails_with_one_line)
{
	const char *args[] = { "-f", M.src, src_path(&M, "inner"), NULL };

	cr_assert_eq(mkdir(src_path(&M, "inner"), 0755), 0);
	expect_one_line_failure(run_cfqfs(args), "MOUNTPOINT inside SOURCE");
	cr_assert_not(mnt_is_fuse_mounted(src_path(&M, "inner")));
}

Test(cli, mountpoint_equal_to_source_fails_with_one_line)
{
	const char *args[] = { "-f", M.src, M.src, NULL };

	expect_one_line_failure(run_cfqfs(args), "MOUNTPOINT == SOURCE");
	cr_assert_not(mnt_is_fuse_mounted(M.src));
}

Test(cli, missing_arguments_fail)
{
	static const char *const none[] = { NULL };
	const char *one[] = { M.src, NULL };
	int st;

	st = run_cfqfs(none);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) != 0, "no arguments: status 0x%x", st);
	st = run_cfqfs(one);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) != 0, "no MOUNTPOINT: status 0x%x", st);
	cr_assert_not(mnt_is_fuse_mounted(M.mnt));
}

Test(cli, unknown_option_fails)
{
	const char *args[] = { "-f", "--no-such-option", M.src, M.mnt, NULL };

	expect_one_line_failure(run_cfqfs(args), "unknown option");
}

Test(cli, unknown_scheduler_fails)
{
	const char *args[] = { "-f", "-o", "scheduler=bogus", M.src, M.mnt, NULL };

	expect_one_line_failure(run_cfqfs(args), "scheduler=bogus");
}

Test(cli, bad_fuse_thread_counts_fail_naming_the_option)
{
	static const char *const bad[] = { "max_threads=0", "max_threads=10001", "max_threads=4x",
					   "max_idle_threads=-1", "max_idle_threads=" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *args[] = { "-f", "-o", bad[i], M.src, M.mnt, NULL };

		expect_one_line_failure(run_cfqfs(args), bad[i]);
		cr_assert_not_null(strstr(err, bad[i]), "%s not named in: %s", bad[i], err);
	}
}

Test(cli, missing_config_file_fails)
{
	const char *args[] = { "-f", "-c", base_path(&M, "no-such.conf"), M.src, M.mnt, NULL };

	expect_one_line_failure(run_cfqfs(args), "-c missing file");
}

/* Mounts with args over the prepared dirs (mnt_start keeps M.base). */
static void mount_with(const char *const *args)
{
	mnt_cr_start(&M, args);
}

Test(cli, ro_option_makes_writes_fail_with_erofs)
{
	static const char *const args[] = { "-o", "ro", NULL };
	struct statvfs sv;
	char buf[16];

	cr_assert_eq(mnt_put(src_path(&M, "f"), "readable", 8, 0644), 0);
	cr_assert_eq(mkdir(src_path(&M, "d"), 0755), 0);
	mount_with(args);
	cr_assert_eq(mnt_get(mnt_path(&M, "f"), buf, sizeof(buf)), 8);
	cr_assert_arr_eq(buf, "readable", 8);
	MNT_EXPECT_ERRNO(open(mnt_path(&M, "f"), O_WRONLY), EROFS);
	MNT_EXPECT_ERRNO(open(mnt_path(&M, "new"), O_WRONLY | O_CREAT, 0644), EROFS);
	MNT_EXPECT_ERRNO(mkdir(mnt_path(&M, "nd"), 0755), EROFS);
	MNT_EXPECT_ERRNO(unlink(mnt_path(&M, "f")), EROFS);
	MNT_EXPECT_ERRNO(rmdir(mnt_path(&M, "d")), EROFS);
	MNT_EXPECT_ERRNO(chmod(mnt_path(&M, "f"), 0600), EROFS);
	MNT_EXPECT_ERRNO(truncate(mnt_path(&M, "f"), 0), EROFS);
	cr_assert_eq(statvfs(mnt_path(&M, ""), &sv), 0);
	cr_assert(sv.f_flag & ST_RDONLY, "statvfs does not report ST_RDONLY");
	cr_assert_eq(mnt_get(src_path(&M, "f"), buf, sizeof(buf)), 8);
	mnt_cr_finish(&M);
}

static bool source_is(const char *mp, const char *want)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[8192];
	bool hit = false;

	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - ");
		char mpf[4096], type[256], src[4096];

		if (!sep || sscanf(line, "%*s %*s %*s %*s %4095s", mpf) != 1 ||
		    sscanf(sep + 3, "%255s %4095s", type, src) != 2)
			continue;
		if (!strcmp(mpf, mp) && !strcmp(src, want))
			hit = true;
	}
	fclose(f);
	return hit;
}

Test(cli, fsname_option_names_the_mount)
{
	static const char *const args[] = { "-o", "fsname=cfqfs-it-name", NULL };

	mount_with(args);
	cr_assert(source_is(M.mnt, "cfqfs-it-name"), "mountinfo source is not fsname=");
	mnt_cr_finish(&M);
}

/* A write-then-read through the mount, checked in SOURCE. */
static void smoke_io(const char *tag)
{
	char buf[64];
	size_t len = strlen(tag);

	cr_assert_eq(mnt_put(mnt_path(&M, tag), tag, len, 0644), 0, "%s: write", tag);
	cr_assert_eq(mnt_get(src_path(&M, tag), buf, sizeof(buf)), (ssize_t)len, "%s", tag);
	cr_assert_arr_eq(buf, tag, len);
	cr_assert_eq(mnt_put(src_path(&M, "back"), "back", 4, 0644), 0);
	cr_assert_eq(mnt_get(mnt_path(&M, "back"), buf, sizeof(buf)), 4, "%s: read", tag);
	cr_assert_arr_eq(buf, "back", 4);
}

Test(cli, single_threaded_mount_serves_io)
{
	static const char *const args[] = { "-s", NULL };

	mount_with(args);
	smoke_io("single-threaded");
	mnt_cr_finish(&M);
}

Test(cli, one_fuse_thread_mount_serves_io_without_libfuse_warnings)
{
	static const char *const args[] = { "-o", "max_threads=1,max_idle_threads=0", NULL };
	char log[8192];
	ssize_t n;

	mount_with(args);
	smoke_io("one-thread");
	n = mnt_get(M.log, log, sizeof(log) - 1);
	cr_assert_geq(n, 0, "reading %s", M.log);
	log[n] = '\0';
	/* libfuse 3.14 prints this for the pre-3.12 loop configuration */
	cr_assert_null(strstr(log, "Ignoring invalid"), "libfuse warned at mount:\n%s", log);
	mnt_cr_finish(&M);
}

Test(cli, debug_mount_serves_io_and_logs)
{
	static const char *const args[] = { "-d", NULL };
	struct stat st;
	char log[PATH_MAX];

	mount_with(args);
	smoke_io("debug");
	snprintf(log, sizeof(log), "%s", M.log);
	cr_assert_eq(stat(log, &st), 0);
	/* more than the fixture's own command line: the daemon traced something */
	cr_assert_gt(st.st_size, 200, "-d logged only %lld bytes", (long long)st.st_size);
	mnt_cr_finish(&M);
}

Test(cli, every_scheduler_mounts_and_serves_io)
{
	static const char *const names[] = { "noop", "deadline", "cfq" };

	for (size_t i = 0; i < 3; i++) {
		char opt[64];
		const char *args[] = { "-o", opt, NULL };

		snprintf(opt, sizeof(opt), "scheduler=%s,depth=2", names[i]);
		if (i > 0)
			cr_assert_eq(mnt_prepare(&M), 0);
		mount_with(args);
		smoke_io(names[i]);
		mnt_cr_finish(&M);
	}
}
