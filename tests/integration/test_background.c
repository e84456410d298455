/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * background: FUSE background requests reach the scheduler.
 *
 * The kernel sends readahead, writeback and asynchronous direct I/O as "background" requests
 * and keeps those beyond the connection's max_background in a FIFO of its own, where the
 * scheduler cannot see them. With the kernel's default of 12, eight processes keeping four
 * O_DIRECT reads each in flight (fio's libaio pattern) put about 1.5 reads per process in
 * front of CFQ: the active queue empties after one or two, CFQ idles (slice_idle) for that
 * process's next read, and that read waits in the kernel's FIFO behind the other processes'
 * (bench/depth on the real disk: 70 MB/s under cfq against 1 GB/s under noop). cfqfs asks
 * for max_background=128 (fs/pt.c, pt__init).
 *
 * - The connection's limit, read back from /sys/fs/fuse/connections/N: the default and -o,
 *   and a SIGHUP reload of the file that changes it on the live connection (through fusectl).
 * - Eight such readers on cfq with `-o rotational=true` (so that CFQ idles) over the real
 *   SOURCE (its page cache: the stall is the idling, which a slow emulated disk would hide),
 *   once with the default and once with -o max_background=12 as the control, for the same
 *   time: the default must complete at least 3 times the reads of the control (measured here:
 *   about 15 times). A ratio of two runs in one test, no absolute time; without the raised
 *   limit both runs are the control and the test fails.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "mount.h"
#include "workload.h"

#define MIB (1024u * 1024u)
#define READERS 8
#define FILE_MB 16u

static struct mnt M;
static struct wl_run R;

static void setup(void)
{
	mnt_cr_prepare(&M);
}

static void teardown(void)
{
	wl_free(&R);
	mnt_cr_teardown(&M);
}

TestSuite(background, .init = setup, .fini = teardown, .timeout = 120);

/* The mounted connection's value of `knob` (fusectl), or -errno. */
static long conn_knob(const struct mnt *m, const char *knob)
{
	char path[128], text[32];
	FILE *f;
	long v;

	snprintf(path, sizeof(path), "/sys/fs/fuse/connections/%u/%s", minor(m->dev), knob);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	v = fgets(text, sizeof(text), f) ? strtol(text, NULL, 10) : -EIO;
	fclose(f);
	return v;
}

/* Mounts fusectl if it is not (as systemd does at boot); skips loudly if that fails. */
static void need_fusectl(const struct mnt *m)
{
	if (conn_knob(m, "max_background") >= 0)
		return;
	if (mount("fusectl", "/sys/fs/fuse/connections", "fusectl", 0, NULL) != 0 ||
	    conn_knob(m, "max_background") < 0)
		cr_skip("fusectl is not mounted on /sys/fs/fuse/connections and mounting it "
			"failed (%s): cannot read max_background back", strerror(errno));
}

Test(background, max_background_reaches_the_kernel)
{
	long bg, cong;

	wl_cr_mount(&M, NULL, NULL);
	need_fusectl(&M);
	bg = conn_knob(&M, "max_background");
	cong = conn_knob(&M, "congestion_threshold");
	cr_assert_eq(bg, 128, "default max_background: the kernel has %ld", bg);
	cr_assert_eq(cong, 96, "congestion_threshold: the kernel has %ld, want 3/4 of 128", cong);
	mnt_cr_finish(&M);

	cr_assert_eq(mnt_prepare(&M), 0);
	wl_cr_mount(&M, NULL, "max_background=300");
	bg = conn_knob(&M, "max_background");
	cr_assert_eq(bg, 300, "-o max_background=300: the kernel has %ld", bg);
	cr_assert_eq(conn_knob(&M, "congestion_threshold"), 225);
	mnt_cr_finish(&M);
}

Test(background, a_reload_changes_max_background_on_the_live_connection)
{
	char err[1024] = "";

	wl_cr_mount(&M, "max_background = 20;\n", NULL);
	need_fusectl(&M);
	cr_assert_eq(conn_knob(&M, "max_background"), 20, "from the file at mount time");
	cr_assert_eq(conn_knob(&M, "congestion_threshold"), 15);

	cr_assert(mnt_cr_reload(&M, "max_background = 64;\n", err, sizeof(err)),
		  "reload refused: %s", err);
	if (mnt_log_count(&M, "max_background 64, congestion_threshold 48") != 1) {
		mnt_dump_log(&M);
		cr_assert_fail("the reload did not report setting max_background 64");
	}
	cr_assert_eq(conn_knob(&M, "max_background"), 64, "after the reload");
	cr_assert_eq(conn_knob(&M, "congestion_threshold"), 48);

	/* A value out of range is refused with the file's line; the live value stays. */
	cr_assert_not(mnt_cr_reload(&M, "scheduler = \"cfq\";\nmax_background = 70000;\n", err,
				    sizeof(err)),
		      "the invalid file was accepted");
	cr_assert_eq(conn_knob(&M, "max_background"), 64, "after a refused reload");
	cr_assert(strstr(err, "cfqfs.conf:2"), "the error names the file and line: %s", err);

	/* The mount still serves: a file written through it reads back. */
	cr_assert_eq(mnt_put(mnt_path(&M, "f"), "data", 4, 0644), 0);
	char got[8] = "";
	cr_assert_eq(mnt_get(src_path(&M, "f"), got, sizeof(got)), 4);
	cr_assert_str_eq(got, "data");
	mnt_cr_finish(&M);
}

/* Eight AIO readers for `dur` seconds on a fresh mount with opts; returns the reads done. */
static unsigned long aio_run(const char *opts, double dur)
{
	static const char *const files[READERS] = { "a0", "a1", "a2", "a3",
						    "a4", "a5", "a6", "a7" };
	struct wl_spec s[READERS];
	unsigned long reads = 0;

	cr_assert_eq(mnt_prepare(&M), 0);
	for (size_t i = 0; i < READERS; i++) {
		int r = wl_make_file(src_path(&M, files[i]), (size_t)FILE_MB * MIB);

		cr_assert_eq(r, 0, "making %s: %s", files[i], strerror(-r));
	}
	wl_cr_mount(&M, NULL, opts);
	for (size_t i = 0; i < READERS; i++)
		s[i] = (struct wl_spec){ .label = files[i], .path = mnt_path(&M, files[i]),
					 .kind = WL_AIO_READ, .bs = 128 * 1024, .depth = 4 };
	cr_assert_eq(wl_start(&R, s, READERS, dur), 0);
	cr_assert_eq(wl_finish(&R), 0, "a reader failed (its message is above)");
	for (size_t i = 0; i < READERS; i++)
		reads += wl_ops(&R, i, 0.5, dur);
	wl_free(&R);
	mnt_cr_finish(&M);
	return reads;
}

Test(background, async_direct_readers_are_not_starved_by_the_kernel_fifo)
{
	const char *base = "direct_io,depth=32,scheduler=cfq,rotational=true";
	char control_opts[160];
	const double dur = 2.5;
	unsigned long def, control;

	/* the fixture prepared by .init is not used: each run prepares its own */
	mnt_teardown(&M);
	snprintf(control_opts, sizeof(control_opts), "%s,max_background=12", base);
	control = aio_run(control_opts, dur);
	def = aio_run(base, dur);
	fprintf(stderr, "background: %lu reads of 128 KiB with the default max_background, %lu "
		"with max_background=12 (%.1fx)\n", def, control,
		control ? (double)def / (double)control : 0.0);
	cr_assert(def > 0 && control > 0, "a run completed nothing");
	cr_assert(def >= 3 * control, "the default gave %lu reads, under 3x the %lu of "
		  "max_background=12: background requests still wait outside the scheduler", def,
		  control);
}
