/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * copy: copy_file_range and fallocate go through the scheduler (README "What the scheduler
 * sees"). A copy is cut into max_copy_kb pieces, each a read of the source and a write of the
 * destination charged to the caller's group; fallocate's data modes are writes of their
 * length. Asserted on real mounts:
 *   - `cp` (coreutils copies with copy_file_range) of 64 MiB is counted in the copier's
 *     group as >= 64 MiB read and written, and the copy is exact;
 *   - on the emulated hdd a copier (weight 100) and a reader (weight 400) share the device's
 *     time 1:4 within 20% (the copier would take what it liked if copies were not queued);
 *   - a 1 GiB copy is cut into pieces of at most max_copy_kb that interleave with another
 *     group's reads in the trace;
 *   - fallocate(ZERO_RANGE) of 256 MiB is counted as 256 MiB written, and reads back zero;
 *   - a seeded sequence of copies across two files and within one (overlapping ranges
 *     included, which Linux refuses) gives the same results and bytes as on SOURCE itself.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgtest.h"
#include "mount.h"
#include "workload.h"

#define MIB (1024u * 1024u)

static struct mnt M;
static struct cgt_hier H;
static struct cgt CA, CB;
static struct wl_run R;
static char conf[16384];
static char opts[512];

static void setup(void)
{
	wl_cr_fair_setup(&M, &H);
}

static void teardown(void)
{
	wl_cr_fair_teardown(&M, &R);
}

TestSuite(copy, .init = setup, .fini = teardown, .timeout = 180);

/* Mounts with the weight rules of cgs[] and "cgroup_line=X,direct_io[,extra]". */
static void mount_cgs(struct cgt *const *cgs, size_t n, const char *extra)
{
	cr_assert_not_null(wl_conf(conf, sizeof(conf), NULL, cgs, n, false, NULL));
	snprintf(opts, sizeof(opts), "direct_io,cgroup_line=%s%s%s", H.line, extra ? "," : "",
		 extra ? extra : "");
	wl_cr_mount(&M, conf, opts);
}

/* The group name io.stat shows for cgroup cg. */
static const char *group_of(const struct cgt *cg)
{
	return cg->name;
}

/* FNV-1a of a whole file; 0 and a failed test if it cannot be read. */
static uint64_t file_hash(const char *path, off_t *size)
{
	static char buf[1 << 16];
	uint64_t h = 1469598103934665603ull;
	int fd = open(path, O_RDONLY);
	ssize_t n;

	cr_assert_geq(fd, 0, "open %s: %s", path, strerror(errno));
	*size = 0;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n; i++)
			h = (h ^ (unsigned char)buf[i]) * 1099511628211ull;
		*size += n;
	}
	cr_assert_eq(n, 0, "read %s: %s", path, strerror(errno));
	close(fd);
	return h;
}

/* ---- cp is counted --------------------------------------------------------------------- */

/* In a child: joins the copier's cgroup and runs cp. */
static int run_cp(void *arg)
{
	const char *const *argv = arg;

	if (cgt_move(&CA, 0) != 0)
		return 126;
	execv(argv[0], (char *const *)argv);
	return 127;
}

Test(copy, cp_is_read_and_written_by_the_copiers_group)
{
	struct cgt *cgs[] = { &CA };
	off_t sa, sb;

	cgt_cr_make(&H, &CA, "cp", 100);
	cr_assert_eq(wl_make_file(src_path(&M, "big"), 64 * MIB), 0);
	mount_cgs(cgs, 1, NULL);

	char from[4200], to[4200];
	snprintf(from, sizeof(from), "%s", mnt_path(&M, "big"));
	snprintf(to, sizeof(to), "%s", mnt_path(&M, "big2"));
	const char *argv[] = { "/bin/cp", from, to, NULL };
	int rc = mnt_fork_run(run_cp, (void *)argv, 60000);
	cr_assert_eq(rc, 0, "cp failed: exit %d", rc);

	uint64_t rb = wl_iostat_or_0(&M, group_of(&CA), "rbytes");
	uint64_t wb = wl_iostat_or_0(&M, group_of(&CA), "wbytes");
	cr_log_info("cp 64 MiB: group %s rbytes=%llu wbytes=%llu", group_of(&CA),
		    (unsigned long long)rb, (unsigned long long)wb);
	cr_expect_geq(rb, 64ull * MIB, "the copy's reads were not counted (%llu bytes)",
		      (unsigned long long)rb);
	cr_expect_geq(wb, 64ull * MIB, "the copy's writes were not counted (%llu bytes)",
		      (unsigned long long)wb);
	cr_expect_eq(file_hash(src_path(&M, "big"), &sa), file_hash(src_path(&M, "big2"), &sb),
		     "the copy differs from its source");
	cr_expect_eq(sa, sb);
	mnt_cr_finish(&M);
}

/* ---- a copier and a reader share the emulated hdd by weight ----------------------------- */

/* [us] The device time a group has had: its requests' service and the idling CFQ did for
 * it, which is what CFQ charges a group (its slices' length). */
static uint64_t group_time(const char *group)
{
	return wl_iostat_or_0(&M, group, "service_usec") + wl_iostat_or_0(&M, group, "idle_usec");
}

Test(copy, copier_and_reader_share_the_disk_by_weight)
{
	struct cgt *cgs[] = { &CA, &CB };
	const double dur = 6.0, warm = 1.0;

	cgt_cr_make(&H, &CA, "copier", 100);
	cgt_cr_make(&H, &CB, "reader", 400);
	cr_assert_eq(wl_make_file(src_path(&M, "src.dat"), 64 * MIB), 0);
	cr_assert_eq(wl_make_file(src_path(&M, "rd.dat"), 64 * MIB), 0);
	mount_cgs(cgs, 2, "device=hdd,depth=1");
	struct wl_spec s[2] = {
		/* 16 MiB per call, as cp's calls come (cfqfs copies at most that per request) */
		{ .label = "copier", .path = mnt_path(&M, "src.dat"), .kind = WL_COPY,
		  .bs = 16 * MIB, .cg = &CA },
		/* 256 KiB reads: a slice overruns its end by at most one of them */
		{ .label = "reader", .path = mnt_path(&M, "rd.dat"), .kind = WL_SEQ_READ,
		  .bs = 256 * 1024, .cg = &CB },
	};
	cr_assert_eq(wl_start(&R, s, 2, dur), 0);
	wl_sleep_until(&R, warm);
	/* Device time is what CFQ divides (groups charged by slice time on a rotational
	 * device), and what a copy costs in it is a read and a write plus the seeks between
	 * the two files: so the share is the groups' service time, from io.stat. */
	uint64_t c0 = group_time(group_of(&CA)), r0 = group_time(group_of(&CB));
	wl_sleep_until(&R, dur - 0.2);
	uint64_t c1 = group_time(group_of(&CA)), r1 = group_time(group_of(&CB));
	cr_log_info("idle: copier %llu ms, reader %llu ms",
		    (unsigned long long)wl_iostat_or_0(&M, group_of(&CA), "idle_usec") / 1000,
		    (unsigned long long)wl_iostat_or_0(&M, group_of(&CB), "idle_usec") / 1000);
	cr_assert_eq(wl_finish(&R), 0, "a client failed (its message is above)");

	double copier = (double)(c1 - c0), reader = (double)(r1 - r0);
	uint64_t copied = wl_bytes(&R, 0, warm, dur - 0.2), read = wl_bytes(&R, 1, warm, dur - 0.2);
	cr_log_info("copier (w100) %.0f ms of service, %llu bytes copied; reader (w400) %.0f ms, "
		    "%llu bytes read; reader:copier time %.2f (want 4)",
		    copier / 1000, (unsigned long long)copied, reader / 1000,
		    (unsigned long long)read, copier > 0 ? reader / copier : 0.0);
	cr_assert_gt(copied, 0, "the copier copied nothing");
	cr_assert_gt(copier, 0, "the copier's pieces were never served by the scheduler");
	double ratio = reader / copier;
	cr_expect(ratio > 4.0 * 0.8 && ratio < 4.0 * 1.2,
		  "reader:copier service time %.2f, want 4 within 20%%", ratio);
	mnt_cr_finish(&M);
}

/* ---- a 1 GiB copy is cut into pieces that interleave with another group's reads --------- */

/* Counts, in the trace text, the copier's dispatches and the switches between the copier's
 * group and the reader's in the dispatch sequence; fails on a copier dispatch longer than
 * `max_len`. */
static void count_dispatches(const char *text, const char *copier, const char *reader,
			     uint64_t max_len, unsigned *pieces, unsigned *switches)
{
	int last = -1;

	*pieces = *switches = 0;
	for (const char *line = text; *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		char ev[32], group[256];
		unsigned long long q, off = 0, rlen = 0;
		char kind[32];

		if (sscanf(line, "%*f %31s %llu %31s %255s off=%llu len=%llu", ev, &q, kind, group,
			   &off, &rlen) == 6 && strcmp(ev, "dispatch") == 0) {
			int who = strcmp(group, copier) == 0 ? 0 : strcmp(group, reader) == 0 ? 1 : -1;

			if (who == 0) {
				(*pieces)++;
				cr_expect_leq(rlen, max_len, "a copy dispatch of %llu bytes", rlen);
			}
			if (who >= 0 && last >= 0 && who != last)
				(*switches)++;
			if (who >= 0)
				last = who;
		}
		line += len + (nl != NULL);
	}
}

Test(copy, a_large_copy_interleaves_with_other_groups)
{
	struct cgt *cgs[] = { &CA, &CB };
	const double dur = 5.0;
	static char text[8 << 20];

	cgt_cr_make(&H, &CA, "copier", 500);
	cgt_cr_make(&H, &CB, "reader", 500);
	/* 1 GiB of source, on the emulated ssd (the hdd would take half a minute for the
	 * copy alone): the copier runs one 1 GiB copy_file_range loop for the run */
	cr_assert_eq(wl_make_file(src_path(&M, "huge"), 1024 * MIB), 0);
	cr_assert_eq(wl_make_file(src_path(&M, "rd.dat"), 64 * MIB), 0);
	mount_cgs(cgs, 2, "device=ssd,max_copy_kb=1024");
	cr_assert_eq(mnt_put(mnt_path(&M, ".cfqfs/trace"), "65536\n", 6, 0), 0);
	struct wl_spec s[2] = {
		{ .label = "copier", .path = mnt_path(&M, "huge"), .kind = WL_COPY,
		  .bs = 1024 * MIB, .cg = &CA },
		{ .label = "reader", .path = mnt_path(&M, "rd.dat"), .kind = WL_SEQ_READ,
		  .bs = 128 * 1024, .cg = &CB },
	};
	cr_assert_eq(wl_start(&R, s, 2, dur), 0);
	cr_assert_eq(wl_finish(&R), 0, "a client failed (its message is above)");
	ssize_t n = mnt_get(mnt_path(&M, ".cfqfs/trace"), text, sizeof(text) - 1);
	cr_assert_gt(n, 0, "no trace");
	text[n] = '\0';

	unsigned pieces, switches;
	count_dispatches(text, group_of(&CA), group_of(&CB), 1024 * 1024, &pieces, &switches);
	cr_log_info("1 GiB copy beside a reader: %u copy dispatches (<= 1 MiB each), %u switches "
		    "between the two groups; reader %llu bytes", pieces, switches,
		    (unsigned long long)wl_bytes(&R, 1, 0, dur));
	cr_expect_gt(pieces, 20, "the copy was not cut into pieces (%u dispatches)", pieces);
	cr_expect_gt(switches, 10, "the copy held the device: %u switches between the groups",
		     switches);
	cr_expect_gt(wl_bytes(&R, 1, 0, dur), 0, "the reader got nothing during the copy");
	mnt_cr_finish(&M);
}

/* ---- fallocate(ZERO_RANGE) is counted ---------------------------------------------------- */

static int zero_range(void *arg)
{
	const char *path = arg;
	int fd, rc = 0;

	if (cgt_move(&CA, 0) != 0)
		return EPERM;
	fd = open(path, O_RDWR);
	if (fd < 0)
		return errno;
	if (fallocate(fd, FALLOC_FL_ZERO_RANGE, 0, 256ll * MIB) != 0)
		rc = errno;
	close(fd);
	return rc;
}

Test(copy, zero_range_is_counted_as_written)
{
	struct cgt *cgs[] = { &CA };
	static char buf[1 << 16];

	cgt_cr_make(&H, &CA, "zero", 100);
	cr_assert_eq(wl_make_file(src_path(&M, "z"), 8 * MIB), 0);
	mount_cgs(cgs, 1, NULL);
	int rc = mnt_fork_run(zero_range, (void *)mnt_path(&M, "z"), 60000);
	if (rc == EOPNOTSUPP)
		cr_skip("SOURCE's filesystem has no FALLOC_FL_ZERO_RANGE");
	cr_assert_eq(rc, 0, "fallocate(ZERO_RANGE): %s", strerror(rc));
	uint64_t wb = wl_iostat_or_0(&M, group_of(&CA), "wbytes");
	cr_log_info("ZERO_RANGE 256 MiB: group wbytes=%llu", (unsigned long long)wb);
	cr_expect_geq(wb, 256ull * MIB, "ZERO_RANGE was not counted: wbytes=%llu",
		      (unsigned long long)wb);
	struct stat st;
	cr_assert_eq(stat(src_path(&M, "z"), &st), 0);
	cr_expect_eq(st.st_size, 256ll * MIB, "size after ZERO_RANGE without KEEP_SIZE");
	int fd = open(mnt_path(&M, "z"), O_RDONLY);
	cr_assert_geq(fd, 0);
	for (off_t off = 0; off < 256ll * MIB; off += 64 * MIB) {
		cr_assert_eq(pread(fd, buf, sizeof(buf), off), (ssize_t)sizeof(buf));
		for (size_t i = 0; i < sizeof(buf); i++)
			cr_assert_eq(buf[i], 0, "byte %lld not zero", (long long)(off + (off_t)i));
	}
	close(fd);
	mnt_cr_finish(&M);
}

/* ---- copies give what they give on SOURCE ------------------------------------------------ */

static uint64_t rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Runs the seeded copy sequence on files a and b in `dir`; writes one line per call into
 * log (return value or errno). */
static void copy_sequence(const char *dir, char *log, size_t cap)
{
	char pa[4200], pb[4200];
	uint64_t seed = 42;
	size_t used = 0;

	snprintf(pa, sizeof(pa), "%s/a", dir);
	snprintf(pb, sizeof(pb), "%s/b", dir);
	int fa = open(pa, O_RDWR), fb = open(pb, O_RDWR);
	cr_assert(fa >= 0 && fb >= 0, "open in %s: %s", dir, strerror(errno));
	for (int i = 0; i < 200; i++) {
		int in = rng(&seed) % 2 ? fa : fb, out = rng(&seed) % 3 ? (in == fa ? fb : fa) : in;
		loff_t oi = (loff_t)(rng(&seed) % (6 * MIB)), oo = (loff_t)(rng(&seed) % (7 * MIB));
		size_t len = (size_t)(rng(&seed) % (3 * MIB)) + 1;
		ssize_t n = copy_file_range(in, &oi, out, &oo, len, 0);

		used += (size_t)snprintf(log + used, cap - used, "%d %s %zd %d\n", i,
					 in == out ? "same" : "cross", n, n < 0 ? errno : 0);
		cr_assert_lt(used, cap);
	}
	close(fa);
	close(fb);
}

Test(copy, copies_match_native)
{
	static char native[1 << 16], mounted[1 << 16];
	char ndir[4200];
	off_t s1, s2;

	/* the native run on a sibling directory of SOURCE (same filesystem), the other through
	 * the mount, from the same starting files */
	snprintf(ndir, sizeof(ndir), "%s", base_path(&M, "native"));
	cr_assert_eq(mkdir(ndir, 0755), 0);
	char p[4300];
	snprintf(p, sizeof(p), "%s/a", ndir);
	cr_assert_eq(wl_make_file(p, 5 * MIB), 0);
	snprintf(p, sizeof(p), "%s/b", ndir);
	cr_assert_eq(wl_make_file(p, 3 * MIB + 12345), 0);
	cr_assert_eq(wl_make_file(src_path(&M, "a"), 5 * MIB), 0);
	cr_assert_eq(wl_make_file(src_path(&M, "b"), 3 * MIB + 12345), 0);
	off_t x, y;
	snprintf(p, sizeof(p), "%s/a", ndir);
	cr_assert_eq(file_hash(p, &x), file_hash(src_path(&M, "a"), &y),
		     "wl_make_file is not deterministic: the comparison would mean nothing");
	wl_cr_mount(&M, NULL, "direct_io,max_copy_kb=64");

	copy_sequence(ndir, native, sizeof(native));
	copy_sequence(mnt_path(&M, ""), mounted, sizeof(mounted));
	cr_expect_str_eq(mounted, native, "copy_file_range results differ from native");
	unsigned einval = 0;
	for (const char *q = native; (q = strstr(q, " -1 22\n")) != NULL; q++)
		einval++;
	cr_log_info("copies_match_native: 200 copies, %u refused with EINVAL (overlap)", einval);
	cr_expect_gt(einval, 0, "no overlapping copy in the sequence: change the seed");
	snprintf(p, sizeof(p), "%s/a", ndir);
	cr_expect_eq(file_hash(p, &s1), file_hash(src_path(&M, "a"), &s2), "file a differs");
	cr_expect_eq(s1, s2);
	snprintf(p, sizeof(p), "%s/b", ndir);
	cr_expect_eq(file_hash(p, &s1), file_hash(src_path(&M, "b"), &s2), "file b differs");
	cr_expect_eq(s1, s2);
	mnt_cr_finish(&M);
}
