/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stressng: Debian's stress-ng runs its filesystem stressors on a mount, once as root and once
 * as an unprivileged user (uid 65534) in a sticky, world-writable directory, with --verify
 * where a stressor has it. A broad, concurrent mix of renames, links, symlinks, record and
 * flock locks, fallocate, seeks, mixed I/O, chmod, utimes, copy_file_range, sync_file_range
 * and fsyncs from many processes and uids at once.
 *
 * What fails it: a stressor that reports a failure (stress-ng exits non-zero), a daemon that
 * dies (every later call fails with ENOTCONN), a hang (the run is killed after its time plus
 * 90 s), entries left in SOURCE after stress-ng cleaned up, requests left queued, and, in the
 * sanitizer stages, any ASan, UBSan or TSan report. What does not: stress-ng tolerates many
 * errors and, with these stressors, checks no data read back through the mount (a daemon
 * that flipped a byte of every read of 8 KiB or more passed), so wrong results are the other
 * suites' job (fsx, posix_*, writes, stress).
 *
 * Sizes: every stressor is held to 32 MiB of data (copy-file to its minimum, 128 MiB) so the
 * run stays short on a 2-core machine. Stressors that exist to exhaust resources (open,
 * dentry, dirmany) are left out: the limits suite covers running out of descriptors.
 */
#include <criterion/criterion.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mount.h"

#define STRESSORS                                                                          \
	"--dir 1 --rename 1 --link 1 --symlink 1 --lockf 1 --flock 1 --fcntl 1 "             \
	"--fallocate 1 --fallocate-bytes 32M --seek 1 --seek-size 32M --iomix 1 "            \
	"--iomix-bytes 32M --chmod 1 --utime 1 --copy-file 1 --copy-file-bytes 128M "         \
	"--sync-file 1 --sync-file-bytes 32M --hdd 1 --hdd-bytes 32M --verify"

static struct mnt m;
static char out[65536];

static void setup(void)
{
	/* allow_other: the second run is another user's */
	static const char *const args[] = { "-o", "allow_other", NULL };

	if (geteuid() != 0)
		cr_skip("stressng needs root (to mount with allow_other and run as uid 65534)");
	mnt_cr_setup(&m, args);
}

static void teardown(void)
{
	mnt_cr_teardown(&m);
}

TestSuite(stressng, .init = setup, .fini = teardown, .timeout = 180);

/* Runs stress-ng for `secs` seconds in `dir` (relative to the mount) as `who` ("" for root,
 * else a setpriv prefix); fails the test, with stress-ng's output, unless it exits 0. */
static void run_stressng(const char *dir, const char *who, unsigned secs)
{
	char cmd[1024];
	const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	int st = 0, rc;

	snprintf(cmd, sizeof(cmd),
		 "command -v stress-ng >/dev/null || { echo 'stress-ng not installed; make test "
		 "installs it (sh scripts/install-deps.sh test)'; exit 127; }; "
		 "cd '%s' && exec %s stress-ng --temp-path '%s' " STRESSORS " --timeout %us "
		 "--metrics-brief 2>&1",
		 mnt_path(&m, dir), who, mnt_path(&m, dir), secs);
	rc = mnt_run(argv, (int)(secs + 90) * 1000, &st, out, sizeof(out), NULL, 0);
	cr_assert_eq(rc, 0, "running stress-ng: %s", strerror(-rc));
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "stress-ng as %s exited with status %d (2: a stressor failed, 3: not enough "
		  "resources, 127: missing); its output:\n%s",
		  who[0] ? who : "root", WIFEXITED(st) ? WEXITSTATUS(st) : -1, out);
	cr_assert(mnt_is_fuse_mounted(m.mnt), "the mount is gone after stress-ng");
}

/* Entries of SOURCE's directory `rel` other than . and .. (stress-ng removes what it made). */
static int leftovers(const char *rel)
{
	DIR *d = opendir(src_path(&m, rel));
	struct dirent *de;
	int n = 0;

	cr_assert_not_null(d, "opendir %s: %s", rel, strerror(errno));
	while ((de = readdir(d)) != NULL)
		n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
	closedir(d);
	return n;
}

Test(stressng, filesystem_stressors_pass_as_root_and_as_an_unprivileged_user)
{
	cr_assert_eq(mkdir(mnt_path(&m, "root"), 0755), 0, "mkdir: %s", strerror(errno));
	run_stressng("root", "", 12);
	cr_assert_eq(leftovers("root"), 0, "stress-ng (root) left entries in SOURCE");

	cr_assert_eq(mkdir(mnt_path(&m, "pub"), 0777), 0, "mkdir: %s", strerror(errno));
	cr_assert_eq(chmod(mnt_path(&m, "pub"), 01777), 0, "chmod: %s", strerror(errno));
	run_stressng("pub", "setpriv --reuid=65534 --regid=65534 --clear-groups", 8);
	cr_assert_eq(leftovers("pub"), 0, "stress-ng (uid 65534) left entries in SOURCE");
	cr_assert_eq(mnt_cr_queued(&m, NULL), 0, "requests still queued after stress-ng");
	mnt_cr_finish(&m);
}
