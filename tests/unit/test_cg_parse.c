/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of cgroup/cg_parse.c over recorded file contents (well-formed and malformed). */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "cg_parse.h"
#include "sched.h"

#define S(lit) (lit), (sizeof(lit) - 1) /* text and length of a literal, NULs included */
/* In hot loops: report failures only (with --full-stats every passing cr_assert is a message) */
#define CHECK(cond, ...)                                                                          \
	do {                                                                                      \
		if (!(cond))                                                                      \
			cr_assert_fail(__VA_ARGS__);                                              \
	} while (0)

/* ---------------------------------------------------------------------------------------- */
/* Recorded /proc/PID/cgroup samples */

/* Fedora / Debian 12 with systemd, unified only */
static const char v2_systemd[] =
	"0::/user.slice/user-1000.slice/user@1000.service/app.slice/"
	"app-org.gnome.Terminal.slice/vte-spawn-2b1c.scope\n";

/* Docker on a cgroup-v1 host (Ubuntu 18.04), container with --blkio-weight */
static const char v1_docker[] =
	"12:pids:/docker/8c1f0a3e6b2d\n"
	"11:hugetlb:/docker/8c1f0a3e6b2d\n"
	"10:net_cls,net_prio:/docker/8c1f0a3e6b2d\n"
	"9:perf_event:/docker/8c1f0a3e6b2d\n"
	"8:blkio:/docker/8c1f0a3e6b2d\n"
	"7:freezer:/docker/8c1f0a3e6b2d\n"
	"6:devices:/docker/8c1f0a3e6b2d\n"
	"5:memory:/docker/8c1f0a3e6b2d\n"
	"4:cpu,cpuacct:/docker/8c1f0a3e6b2d\n"
	"3:cpuset:/docker/8c1f0a3e6b2d\n"
	"2:rdma:/\n"
	"1:name=systemd:/docker/8c1f0a3e6b2d\n";

/* systemd "hybrid": v1 controllers, name=systemd, and the unified 0:: line (this CI host's shape) */
static const char hybrid[] =
	"9:name=systemd:/user.slice/user-1000.slice/session-3.scope\n"
	"8:pids:/user.slice/user-1000.slice/session-3.scope\n"
	"7:blkio:/user.slice\n"
	"6:freezer:/\n"
	"5:devices:/user.slice\n"
	"4:memory:/user.slice/user-1000.slice/session-3.scope\n"
	"3:cpuset:/\n"
	"2:cpu,cpuacct:/user.slice\n"
	"0::/user.slice/user-1000.slice/session-3.scope\n";

/* v1 host without blkio mounted: only name=systemd names the caller */
static const char v1_no_blkio[] =
	"3:memory:/a\n"
	"2:cpu,cpuacct:/b\n"
	"1:name=systemd:/system.slice/cron.service\n";

/* read from inside a cgroup namespace: the reader's root is below the caller's cgroup */
static const char v2_namespaced[] = "0::/../container_id2/sub\n";

static int path_of(const char *text, size_t len, enum cg_select sel, bool has_io, char *out,
		   size_t outsz, enum cg_hier *h)
{
	return cg_parse_cgroup_path(text, len, sel, has_io, out, outsz, h);
}

Test(cg_parse, cgroup_v2_only_host_picks_unified_line)
{
	char p[CG_NAME_MAX];
	enum cg_hier h;

	cr_assert_eq(path_of(S(v2_systemd), CG_SELECT_AUTO, false, p, sizeof(p), &h), 0);
	cr_assert_str_eq(p, "/user.slice/user-1000.slice/user@1000.service/app.slice/"
			    "app-org.gnome.Terminal.slice/vte-spawn-2b1c.scope");
	cr_assert_eq(h, CG_HIER_V2);
	cr_assert_eq(path_of(S(v2_systemd), CG_SELECT_V2, false, p, sizeof(p), &h), 0);
	cr_assert_eq(path_of(S(v2_systemd), CG_SELECT_BLKIO, false, p, sizeof(p), &h), -ENOENT);
}

Test(cg_parse, cgroup_v1_docker_picks_blkio_line)
{
	char p[CG_NAME_MAX];
	enum cg_hier h;
	struct cg_proc_cgroup pc;

	cr_assert_eq(cg_parse_proc_cgroup(S(v1_docker), &pc), 0);
	cr_assert_eq(pc.nr_v1, 12);
	cr_assert(!pc.v2.present);
	cr_assert(pc.blkio.present && pc.systemd.present);

	cr_assert_eq(path_of(S(v1_docker), CG_SELECT_AUTO, false, p, sizeof(p), &h), 0);
	cr_assert_str_eq(p, "/docker/8c1f0a3e6b2d");
	cr_assert_eq(h, CG_HIER_BLKIO);
	/* the unified flag is irrelevant without a 0:: line */
	cr_assert_eq(path_of(S(v1_docker), CG_SELECT_AUTO, true, p, sizeof(p), &h), 0);
	cr_assert_eq(h, CG_HIER_BLKIO);
	cr_assert_eq(path_of(S(v1_docker), CG_SELECT_V2, false, p, sizeof(p), &h), -ENOENT);
}

Test(cg_parse, cgroup_hybrid_follows_where_io_lives)
{
	char p[CG_NAME_MAX];
	enum cg_hier h;

	/* unified hierarchy without io: the blkio line names the I/O cgroup */
	cr_assert_eq(path_of(S(hybrid), CG_SELECT_AUTO, false, p, sizeof(p), &h), 0);
	cr_assert_str_eq(p, "/user.slice");
	cr_assert_eq(h, CG_HIER_BLKIO);
	/* io on the unified hierarchy: the 0:: line */
	cr_assert_eq(path_of(S(hybrid), CG_SELECT_AUTO, true, p, sizeof(p), &h), 0);
	cr_assert_str_eq(p, "/user.slice/user-1000.slice/session-3.scope");
	cr_assert_eq(h, CG_HIER_V2);
	/* forced choices ignore the flag */
	cr_assert_eq(path_of(S(hybrid), CG_SELECT_V2, false, p, sizeof(p), &h), 0);
	cr_assert_eq(h, CG_HIER_V2);
	cr_assert_eq(path_of(S(hybrid), CG_SELECT_BLKIO, true, p, sizeof(p), &h), 0);
	cr_assert_str_eq(p, "/user.slice");
}

Test(cg_parse, cgroup_v1_without_blkio_falls_back_to_name_systemd)
{
	char p[CG_NAME_MAX];
	enum cg_hier h;

	cr_assert_eq(path_of(S(v1_no_blkio), CG_SELECT_AUTO, false, p, sizeof(p), &h), 0);
	cr_assert_str_eq(p, "/system.slice/cron.service");
	cr_assert_eq(h, CG_HIER_SYSTEMD);
	cr_assert_eq(path_of(S(v1_no_blkio), CG_SELECT_BLKIO, false, p, sizeof(p), &h), -ENOENT);
	/* nothing usable at all */
	cr_assert_eq(path_of(S("3:memory:/a\n"), CG_SELECT_AUTO, false, p, sizeof(p), &h),
		     -ENOENT);
}

Test(cg_parse, cgroup_hybrid_without_blkio_or_systemd_uses_unified)
{
	char p[CG_NAME_MAX];
	enum cg_hier h;

	cr_assert_eq(path_of(S("2:memory:/m\n0::/u\n"), CG_SELECT_AUTO, false, p, sizeof(p), &h),
		     0);
	cr_assert_str_eq(p, "/u");
	cr_assert_eq(h, CG_HIER_V2);
}

Test(cg_parse, cgroup_io_controller_name_in_v1_list_counts_as_blkio)
{
	char p[CG_NAME_MAX];
	enum cg_hier h;

	cr_assert_eq(path_of(S("5:cpu,io:/x\n0::/y\n"), CG_SELECT_AUTO, false, p, sizeof(p), &h),
		     0);
	cr_assert_str_eq(p, "/x");
	/* a name that merely contains "io" does not */
	cr_assert_eq(path_of(S("5:iocost,bio:/x\n1:name=systemd:/s\n"), CG_SELECT_AUTO, false, p,
			     sizeof(p), &h),
		     0);
	cr_assert_str_eq(p, "/s");
}

Test(cg_parse, cgroup_namespaced_path_is_kept_verbatim)
{
	char p[CG_NAME_MAX];

	cr_assert_eq(path_of(S(v2_namespaced), CG_SELECT_AUTO, false, p, sizeof(p), NULL), 0);
	cr_assert_str_eq(p, "/../container_id2/sub");
	cr_assert(cg_path_is_namespaced(p));
	cr_assert(cg_path_is_namespaced("/.."));
	cr_assert(!cg_path_is_namespaced("/..x"));
	cr_assert(!cg_path_is_namespaced("/a/.."));
	cr_assert(!cg_path_is_namespaced("/"));
}

Test(cg_parse, cgroup_path_may_contain_colons_and_spaces)
{
	char p[CG_NAME_MAX];

	cr_assert_eq(path_of(S("0::/a:b/c d\n"), CG_SELECT_AUTO, false, p, sizeof(p), NULL), 0);
	cr_assert_str_eq(p, "/a:b/c d");
}

Test(cg_parse, cgroup_output_buffer_is_bounded)
{
	char p[8];

	memset(p, 'x', sizeof(p));
	cr_assert_eq(path_of(S("0::/1234567\n"), CG_SELECT_AUTO, false, p, sizeof(p), NULL),
		     -ENAMETOOLONG);
	cr_assert_eq(p[0], 'x', "output untouched on failure");
	cr_assert_eq(path_of(S("0::/123456\n"), CG_SELECT_AUTO, false, p, sizeof(p), NULL), 0);
	cr_assert_str_eq(p, "/123456");
}

Test(cg_parse, cgroup_malformed_inputs_are_einval)
{
	struct cg_proc_cgroup pc;
	static const struct {
		const char *text;
		size_t len;
		const char *why;
	} bad[] = {
		{ S(""), "empty" },
		{ S("\n"), "blank line" },
		{ S("garbage\n"), "no colon" },
		{ S("0:/only-one-colon\n"), "one colon" },
		{ S("0::/a"), "no final newline (truncated read)" },
		{ S("0::/a\r\n"), "CRLF" },
		{ S("9:blkio:/a\r\n0::/b\r\n"), "CRLF, several lines" },
		{ S("0::/a\0b\n"), "embedded NUL" },
		{ S("0::/a\n\0"), "NUL after the last line" },
		{ S("x::/a\n"), "non-decimal id" },
		{ S("-1::/a\n"), "negative id" },
		{ S(":blkio:/a\n"), "empty id" },
		{ S("0:cpu:/a\n"), "unified line with controllers" },
		{ S("0::relative\n"), "path without leading slash" },
		{ S("0::\n"), "empty path" },
		{ S("0::/a\n0::/b\n"), "two unified lines" },
		{ S("3:blkio:/a\n4:blkio:/b\n"), "two blkio lines" },
		{ S("0::/a\n\n1:name=systemd:/\n"), "blank line inside" },
		{ S("0::/a\tb\n"), "control character in path" },
		{ S("99999999999999999999::/a\n"), "id overflow" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(cg_parse_proc_cgroup(bad[i].text, bad[i].len, &pc), -EINVAL, "%s",
			     bad[i].why);
	cr_assert_eq(cg_parse_proc_cgroup(NULL, 4, &pc), -EINVAL);
}

Test(cg_parse, cgroup_overlong_line_is_einval_not_a_crash)
{
	size_t n = 10 * 1024;
	char *t = malloc(n + 8);
	struct cg_proc_cgroup pc;

	cr_assert_not_null(t);
	memcpy(t, "0::/", 4);
	memset(t + 4, 'a', n - 4);
	t[n] = '\n';
	cr_assert_eq(cg_parse_proc_cgroup(t, n + 1, &pc), -EINVAL);
	/* just under the limit is fine */
	t[CG_LINE_MAX] = '\n';
	cr_assert_eq(cg_parse_proc_cgroup(t, CG_LINE_MAX + 1, &pc), 0);
	cr_assert_eq(pc.v2.len, CG_LINE_MAX - 3);
	free(t);
}

Test(cg_parse, cgroup_random_bytes_never_crash)
{
	/* cheap fuzz: random short texts over a hostile alphabet, with and without '\n' at the
	 * end; every result is 0 or -EINVAL and spans stay inside the text */
	static const char alphabet[] = "0123:/\n,.=ab\r\0 -";
	unsigned seed = 12345;
	char t[64];

	for (int iter = 0; iter < 200000; iter++) {
		size_t n = (size_t)(iter % 63) + 1;
		struct cg_proc_cgroup pc;
		for (size_t i = 0; i < n; i++) {
			seed = seed * 1103515245u + 12345u;
			t[i] = alphabet[(seed >> 16) % (sizeof(alphabet) - 1)];
		}
		int rc = cg_parse_proc_cgroup(t, n, &pc);
		CHECK(rc == 0 || rc == -EINVAL, "iter %d rc %d", iter, rc);
		if (rc == 0) {
			const struct cg_span *sp[] = { &pc.v2, &pc.blkio, &pc.systemd };
			for (int k = 0; k < 3; k++)
				if (sp[k]->present)
					CHECK(sp[k]->off + sp[k]->len <= n && sp[k]->len > 0 &&
						      t[sp[k]->off] == '/',
					      "iter %d span %d", iter, k);
		}
	}
}

/* ---------------------------------------------------------------------------------------- */
/* /proc/PID/stat and status */

Test(cg_parse, stat_recorded_from_this_host)
{
	struct cg_stat st;

	cr_assert_eq(cg_parse_stat(S("6172 (cat) R 6140 6140 3772 0 -1 4194304 102 0 0 0 0 0 0 0 "
				     "20 0 1 0 54179 3133440 408 18446744073709551615 "
				     "93832642412544 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"),
				   &st),
		     0);
	cr_assert_eq(st.pid, 6172);
	cr_assert_str_eq(st.comm, "cat");
	cr_assert_eq(st.state, 'R');
	cr_assert_eq(st.ppid, 6140);
	cr_assert_eq(st.nice, 0);
	cr_assert_eq(st.start_time, 54179);
}

Test(cg_parse, stat_comm_with_spaces_and_parens_parses_from_last_paren)
{
	struct cg_stat st;

	cr_assert_eq(cg_parse_stat(S("4242 (a) (b c)) S 1 4242 4242 0 -1 4194304 10 0 0 0 1 2 0 0 "
				     "39 19 1 0 123456 1000 50\n"),
				   &st),
		     0);
	cr_assert_eq(st.pid, 4242);
	cr_assert_str_eq(st.comm, "a) (b c)");
	cr_assert_eq(st.state, 'S');
	cr_assert_eq(st.ppid, 1);
	cr_assert_eq(st.nice, 19);
	cr_assert_eq(st.start_time, 123456);

	/* a comm that looks like the following fields */
	cr_assert_eq(cg_parse_stat(S("7 () R 1 2 3) S 2 7 7 0 -1 0 0 0 0 0 0 0 0 0 0 -20 1 0 99 "
				     "0 0\n"),
				   &st),
		     0);
	cr_assert_str_eq(st.comm, ") R 1 2 3");
	cr_assert_eq(st.nice, -20);
	cr_assert_eq(st.start_time, 99);

	/* empty comm, no trailing newline (fields up to 22 suffice) */
	cr_assert_eq(cg_parse_stat(S("8 () Z 1 0 0 0 0 0 0 0 0 0 0 0 0 0 25 5 1 0 7"), &st), 0);
	cr_assert_str_eq(st.comm, "");
	cr_assert_eq(st.nice, 5);
	cr_assert_eq(st.start_time, 7);
}

Test(cg_parse, stat_malformed_is_rejected)
{
	struct cg_stat st;
	char longcomm[200];

	cr_assert_eq(cg_parse_stat(S(""), &st), -EINVAL);
	cr_assert_eq(cg_parse_stat(S("12 cat R 1\n"), &st), -EINVAL, "no parens");
	cr_assert_eq(cg_parse_stat(S("12 (cat R 1\n"), &st), -EINVAL, "no closing paren");
	cr_assert_eq(cg_parse_stat(S("(cat) R 1 0 0 0 0 0 0 0 0 0 0 0 0 0 20 0 1 0 5\n"), &st),
		     -EINVAL, "no pid");
	cr_assert_eq(cg_parse_stat(S("12 (cat) R 1 0 0 0 0 0 0 0 0 0 0 0 0 0 20 0 1 0\n"), &st),
		     -EINVAL, "field 22 missing");
	cr_assert_eq(cg_parse_stat(S("12 (cat) R 1 0 0 0 0 0 0 0 0 0 0 0 0 0 20 25 1 0 5\n"), &st),
		     -EINVAL, "nice out of range");
	cr_assert_eq(cg_parse_stat(S("12 (cat) R 1 0 0 0 0 0 0 0 0 0 0 0 0 0 20 x 1 0 5\n"), &st),
		     -EINVAL, "nice not a number");
	cr_assert_eq(cg_parse_stat(S("12 (c\0t) R 1 0 0 0 0 0 0 0 0 0 0 0 0 0 20 0 1 0 5\n"), &st),
		     -EINVAL, "NUL");
	cr_assert_eq(cg_parse_stat(S("12 (cat) R 1 0 0 0 0 0 0 0 0 0 0 0 0 0 20 0 1 0 -5\n"), &st),
		     -EINVAL, "negative start time");

	int n = snprintf(longcomm, sizeof(longcomm), "12 (%070d) R 1 0 0 0 0 0 0 0 0 0 0 0 0 0 20 0 "
				     "1 0 5\n", 0);
	cr_assert_eq(cg_parse_stat(longcomm, (size_t)n, &st), -ENAMETOOLONG);
}

Test(cg_parse, status_tgid_uid_gid)
{
	struct cg_status s;
	/* a thread of process 4321; its Name line holds an escaped newline that must not fool
	 * the parser into taking a forged Tgid */
	static const char status[] = "Name:\tevil\\nTgid:\t1\n"
				     "Umask:\t0022\n"
				     "State:\tS (sleeping)\n"
				     "Tgid:\t4321\n"
				     "Ngid:\t0\n"
				     "Pid:\t4325\n"
				     "PPid:\t1\n"
				     "Uid:\t1000\t1001\t1002\t1003\n"
				     "Gid:\t100\t100\t100\t100\n"
				     "Groups:\t4 24 27\n";

	cr_assert_eq(cg_parse_status(S(status), &s), 0);
	cr_assert_eq(s.tgid, 4321);
	cr_assert_eq(s.uid[0], 1000);
	cr_assert_eq(s.uid[3], 1003);
	cr_assert_eq(s.gid[1], 100);

	cr_assert_eq(cg_parse_status(S("Name:\tx\nPid:\t3\n"), &s), -EINVAL, "no Tgid");
	cr_assert_eq(cg_parse_status(S("Tgid:\tabc\n"), &s), -EINVAL);
	cr_assert_eq(cg_parse_status(S("Tgid:\t5\nUid:\n"), &s), -EINVAL, "empty Uid");
	cr_assert_eq(cg_parse_status(S("Tg\0id:\t5\n"), &s), -EINVAL);
	cr_assert_eq(cg_parse_status(S("Tgid:\t5"), &s), 0, "last line without newline");
	cr_assert_eq(s.tgid, 5);
	cr_assert_eq(s.uid[0], (uid_t)-1, "absent Uid left at -1");
	cr_assert_eq(s.sig_pending, 0, "absent SigPnd/ShdPnd: nothing pending");
}

Test(cg_parse, status_pending_signals)
{
	struct cg_status s;

	/* SIGKILL (bit 8) queued on the thread, SIGUSR1 (bit 9) on the process */
	cr_assert_eq(cg_parse_status(S("Tgid:\t7\nSigQ:\t1/9\nSigPnd:\t0000000000000100\n"
				       "ShdPnd:\t0000000000000200\nSigBlk:\tffffffffffffffff\n"),
				     &s), 0);
	cr_assert_eq(s.sig_pending, 0x300, "SigPnd | ShdPnd, SigBlk ignored");
	cr_assert_eq(cg_parse_status(S("Tgid:\t7\nShdPnd:\tffffffffffffffff\n"), &s), 0);
	cr_assert_eq(s.sig_pending, UINT64_MAX);
	cr_assert_eq(cg_parse_status(S("Tgid:\t7\nSigPnd:\t1\n"), &s), 0, "short mask");
	cr_assert_eq(s.sig_pending, 1);
	cr_assert_eq(cg_parse_status(S("Tgid:\t7\nSigPnd:\t10000000000000000\n"), &s), -EINVAL,
		     "17 digits");
	cr_assert_eq(cg_parse_status(S("Tgid:\t7\nSigPnd:\t00g0\n"), &s), -EINVAL);
	cr_assert_eq(cg_parse_status(S("Tgid:\t7\nSigPnd:\t0100 2\n"), &s), -EINVAL, "two");
	cr_assert_eq(cg_parse_status(S("Tgid:\t7\nShdPnd:\n"), &s), -EINVAL, "empty");
}

/* ---------------------------------------------------------------------------------------- */
/* Weights */

Test(cg_parse, weight_mapping_anchor_points)
{
	cr_assert_eq(cg_weight_from_io(1), 10);
	cr_assert_eq(cg_weight_from_io(100), 100, "v2 default -> BFQ/v2 default on our scale");
	cr_assert_eq(cg_weight_from_io(400), 200);
	cr_assert_eq(cg_weight_from_io(25), 50);
	cr_assert_eq(cg_weight_from_io(2), 14);
	cr_assert_eq(cg_weight_from_io(10000), 1000);
	cr_assert_eq(cg_weight_from_io(0), 0);
	cr_assert_eq(cg_weight_from_io(10001), 0);

	cr_assert_eq(cg_weight_from_bfq(1), 10);
	cr_assert_eq(cg_weight_from_bfq(9), 10);
	cr_assert_eq(cg_weight_from_bfq(10), 10);
	cr_assert_eq(cg_weight_from_bfq(100), 100);
	cr_assert_eq(cg_weight_from_bfq(1000), 1000);
	cr_assert_eq(cg_weight_from_bfq(5000), 1000);
	cr_assert_eq(cg_weight_from_bfq(0), 0);
	cr_assert_eq(cg_weight_from_bfq(10001), 0);
}

Test(cg_parse, weight_mapping_is_monotone_in_range_and_keeps_ratios_as_square_roots)
{
	uint32_t prev_io = 0, prev_bfq = 0;

	for (uint32_t w = 1; w <= 10000; w++) {
		uint32_t a = cg_weight_from_io(w), b = cg_weight_from_bfq(w);
		CHECK(a >= SCHED_WEIGHT_MIN && a <= SCHED_WEIGHT_MAX, "io %u -> %u", w, a);
		CHECK(b >= SCHED_WEIGHT_MIN && b <= SCHED_WEIGHT_MAX, "bfq %u -> %u", w, b);
		CHECK(a >= prev_io, "io map not monotone at %u", w);
		CHECK(b >= prev_bfq, "bfq map not monotone at %u", w);
		prev_io = a;
		prev_bfq = b;
	}
	/* ratio r between io weights becomes sqrt(r), within rounding */
	for (uint32_t w = 25; w <= 2500; w += 25) {
		double r = (double)cg_weight_from_io(4 * w) / cg_weight_from_io(w);
		cr_assert(r > 1.95 && r < 2.05, "w=%u ratio %f", w, r);
	}
}

Test(cg_parse, weight_files_recorded)
{
	uint32_t w = 0;

	/* systemd v2 default, no overrides */
	cr_assert_eq(cg_parse_weight(CG_WFILE_IO, S("default 100\n"), 0, &w), 0);
	cr_assert_eq(w, 100);
	/* IOWeight=400 with a per-device override for 8:16 */
	cr_assert_eq(cg_parse_weight(CG_WFILE_IO, S("default 400\n8:16 2500\n259:0 50\n"), 0, &w),
		     0);
	cr_assert_eq(w, 200);
	cr_assert_eq(cg_parse_weight(CG_WFILE_IO, S("default 400\n8:16 2500\n259:0 50\n"),
				     makedev(8, 16), &w),
		     0);
	cr_assert_eq(w, 500);
	cr_assert_eq(cg_parse_weight(CG_WFILE_IO, S("default 400\n8:16 2500\n"), makedev(8, 17),
				     &w),
		     0);
	cr_assert_eq(w, 200, "other device: default line");
	/* runc --blkio-weight 300 on a BFQ host writes io.bfq.weight as is */
	cr_assert_eq(cg_parse_weight(CG_WFILE_IO_BFQ, S("default 300\n"), 0, &w), 0);
	cr_assert_eq(w, 300);
	/* older kernels: a bare number in io.bfq.weight */
	cr_assert_eq(cg_parse_weight(CG_WFILE_IO_BFQ, S("250\n"), 0, &w), 0);
	cr_assert_eq(w, 250);
	/* v1 BFQ and CFQ files */
	cr_assert_eq(cg_parse_weight(CG_WFILE_BLKIO_BFQ, S("100\n"), 0, &w), 0);
	cr_assert_eq(w, 100);
	cr_assert_eq(cg_parse_weight(CG_WFILE_BLKIO_BFQ, S("5\n"), 0, &w), 0);
	cr_assert_eq(w, 10, "BFQ 1..9 raised to our minimum");
	cr_assert_eq(cg_parse_weight(CG_WFILE_BLKIO, S("500\n"), 0, &w), 0);
	cr_assert_eq(w, 500);
	cr_assert_eq(cg_parse_weight(CG_WFILE_BLKIO, S("1000"), 0, &w), 0, "no newline is fine");
	cr_assert_eq(w, 1000);
	cr_assert_eq(cg_parse_weight(CG_WFILE_IO, S("default 100\n"), 0, &w), 0);
}

Test(cg_parse, weight_files_out_of_range_and_malformed)
{
	uint32_t w = 77;

	cr_assert_eq(cg_parse_weight(CG_WFILE_BLKIO, S("5\n"), 0, &w), -ERANGE);
	cr_assert_eq(cg_parse_weight(CG_WFILE_BLKIO, S("1001\n"), 0, &w), -ERANGE);
	cr_assert_eq(cg_parse_weight(CG_WFILE_IO, S("default 0\n"), 0, &w), -ERANGE);
	cr_assert_eq(cg_parse_weight(CG_WFILE_IO, S("default 10001\n"), 0, &w), -ERANGE);
	cr_assert_eq(cg_parse_weight(CG_WFILE_IO, S("default 100\n8:0 0\n"), 0, &w), -ERANGE,
		     "a bad override line is an error even when not used");
	cr_assert_eq(cg_parse_weight(CG_WFILE_IO_BFQ, S("default 99999999999999999999999\n"), 0,
				     &w),
		     -ERANGE);
	cr_assert_eq(w, 77, "unchanged on failure");

	cr_assert_eq(cg_parse_weight(CG_WFILE_IO, S(""), 0, &w), -EINVAL);
	cr_assert_eq(cg_parse_weight(CG_WFILE_IO, S("default\n"), 0, &w), -EINVAL);
	cr_assert_eq(cg_parse_weight(CG_WFILE_IO, S("default 1 2\n"), 0, &w), -EINVAL);
	cr_assert_eq(cg_parse_weight(CG_WFILE_IO, S("abc\n"), 0, &w), -EINVAL);
	cr_assert_eq(cg_parse_weight(CG_WFILE_IO, S("default -5\n"), 0, &w), -EINVAL);
	cr_assert_eq(cg_parse_weight(CG_WFILE_IO, S("8:16 100\n"), 0, &w), -EINVAL, "no default");
	cr_assert_eq(cg_parse_weight(CG_WFILE_IO, S("default 100\ndefault 200\n"), 0, &w),
		     -EINVAL);
	cr_assert_eq(cg_parse_weight(CG_WFILE_IO, S("default 100\n8-16 100\n"), 0, &w), -EINVAL);
	cr_assert_eq(cg_parse_weight(CG_WFILE_IO, S("default 1\0\n"), 0, &w), -EINVAL);
	cr_assert_eq(cg_parse_weight(CG_WFILE_BLKIO, S("default 500\n"), 0, &w), -EINVAL,
		     "v1 files hold a bare number");
	cr_assert_eq(cg_parse_weight(CG_WFILE_BLKIO, S("500\n600\n"), 0, &w), -EINVAL);
	cr_assert_eq(cg_parse_weight(CG_WFILE_BLKIO, S("500\r\n"), 0, &w), -EINVAL);
	cr_assert_eq(cg_parse_weight(CG_WFILE_COUNT, S("500\n"), 0, &w), -EINVAL);
	cr_assert_eq(w, 77);
	cr_assert_str_eq(cg_weight_file_name(CG_WFILE_IO_BFQ), "io.bfq.weight");
	cr_assert_null(cg_weight_file_name(CG_WFILE_COUNT));
}

/* ---------------------------------------------------------------------------------------- */
/* ioprio */

static void decode(int ioprio, int nice, int want_class, int want_level, int want_rc)
{
	uint8_t c = 0xee, l = 0xee;
	int rc = cg_ioprio_decode(ioprio, nice, &c, &l);

	cr_assert_eq(rc, want_rc, "ioprio %d nice %d: rc %d", ioprio, nice, rc);
	cr_assert_eq(c, want_class, "ioprio %d nice %d: class %d", ioprio, nice, c);
	cr_assert_eq(l, want_level, "ioprio %d nice %d: level %d", ioprio, nice, l);
}

#define PRIO(cls, data) (((cls) << 13) | (data))

Test(cg_parse, ioprio_class_none_follows_nice_like_the_kernel)
{
	decode(0, -20, SCHED_CLASS_BE, 0, 0);
	decode(0, -16, SCHED_CLASS_BE, 0, 0);
	decode(0, -15, SCHED_CLASS_BE, 1, 0);
	decode(0, -1, SCHED_CLASS_BE, 3, 0);
	decode(0, 0, SCHED_CLASS_BE, 4, 0);
	decode(0, 4, SCHED_CLASS_BE, 4, 0);
	decode(0, 5, SCHED_CLASS_BE, 5, 0);
	decode(0, 19, SCHED_CLASS_BE, 7, 0);
	decode(0, 40, SCHED_CLASS_BE, 7, 0);	/* clamped */
	decode(0, -99, SCHED_CLASS_BE, 0, 0);	/* clamped */
	decode(PRIO(0, 3), 0, SCHED_CLASS_BE, 4, 0); /* NONE ignores data */
}

Test(cg_parse, ioprio_rt_be_idle_and_invalid)
{
	decode(PRIO(1, 0), 0, SCHED_CLASS_RT, 0, 0);
	decode(PRIO(1, 7), 10, SCHED_CLASS_RT, 7, 0);
	decode(PRIO(2, 1), 0, SCHED_CLASS_BE, 1, 0);  /* ionice -c2 -n1: recorded 16385 */
	cr_assert_eq(PRIO(2, 1), 16385);
	decode(PRIO(2, 7), -20, SCHED_CLASS_BE, 7, 0); /* nice ignored for an explicit class */
	decode(PRIO(2, (5 << 3) | 3), 0, SCHED_CLASS_BE, 3, 0); /* 6.5+ hint bits ignored */
	decode(PRIO(3, 7), 0, SCHED_CLASS_IDLE, 7, 0); /* ionice -c3: recorded 24583 */
	cr_assert_eq(PRIO(3, 7), 24583);
	decode(PRIO(3, 0), 0, SCHED_CLASS_IDLE, 7, 0);
	decode(PRIO(4, 0), 0, SCHED_CLASS_BE, 4, -EINVAL);
	decode(PRIO(7, 2), 0, SCHED_CLASS_BE, 4, -EINVAL);
	decode(-1, 0, SCHED_CLASS_BE, 4, -EINVAL);
}

/* ---------------------------------------------------------------------------------------- */
/* mountinfo */

/* recorded on this CI host (hybrid: v1 controllers under /sys/fs/cgroup, cgroup2 at unified) */
static const char mi_hybrid[] =
	"23 1 0:21 / / rw,relatime - overlay overlay rw,lowerdir=/l,upperdir=/u,workdir=/w\n"
	"31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
	"32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
	"35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
	"38 31 0:35 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio\n"
	"40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
	"41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

/* systemd v2 host; optional fields (shared:N) before the separator */
static const char mi_v2[] =
	"22 1 8:2 / / rw,relatime shared:1 - ext4 /dev/sda2 rw\n"
	"30 22 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
	"rw,nsdelegate,memory_recursiveprot\n";

/* inside a v1 container: the blkio hierarchy is mounted from /docker/abc; a bind of the whole
 * hierarchy comes later and wins */
static const char mi_container[] =
	"600 590 0:35 /docker/abc /sys/fs/cgroup/blkio ro,nosuid - cgroup cgroup rw,blkio\n"
	"601 590 0:35 / /mnt/all\\040blk rw master:3 master:4 - cgroup cgroup rw,blkio,cpu\n";

Test(cg_parse, mountinfo_hybrid_host)
{
	struct cg_mounts m;

	cr_assert_eq(cg_parse_mountinfo(S(mi_hybrid), &m), 0);
	cr_assert_str_eq(m.v2.dir, "/sys/fs/cgroup/unified");
	cr_assert_str_eq(m.v2.root, "/");
	cr_assert_str_eq(m.blkio.dir, "/sys/fs/cgroup/blkio");
}

Test(cg_parse, mountinfo_v2_host_and_escapes)
{
	struct cg_mounts m;

	cr_assert_eq(cg_parse_mountinfo(S(mi_v2), &m), 0);
	cr_assert_str_eq(m.v2.dir, "/sys/fs/cgroup");
	cr_assert_str_eq(m.blkio.dir, "");

	cr_assert_eq(cg_parse_mountinfo(S(mi_container), &m), 0);
	cr_assert_str_eq(m.blkio.dir, "/mnt/all blk");
	cr_assert_str_eq(m.blkio.root, "/");
	/* only the rooted-elsewhere mount */
	cr_assert_eq(cg_parse_mountinfo(mi_container, strchr(mi_container, '\n') + 1 - mi_container,
					&m),
		     0);
	cr_assert_str_eq(m.blkio.dir, "/sys/fs/cgroup/blkio");
	cr_assert_str_eq(m.blkio.root, "/docker/abc");
	cr_assert_eq(cg_parse_mountinfo(S(""), &m), 0);
	cr_assert_str_eq(m.v2.dir, "");
	cr_assert_eq(cg_parse_mountinfo(S("1 2 0:3 / /x rw - cgroup2 c rw\0\n"), &m), -EINVAL);
	cr_assert_eq(cg_parse_mountinfo(S("1 2 0:3 rel /x rw - cgroup2 c rw\n"), &m), -EINVAL);
}

Test(cg_parse, resolve_dir_stays_inside_the_mount)
{
	struct cg_mount m = { .dir = "/sys/fs/cgroup/blkio", .root = "/" };
	struct cg_mount sub = { .dir = "/sys/fs/cgroup/blkio", .root = "/docker/abc" };
	struct cg_mount none = { .dir = "", .root = "" };
	char out[CG_NAME_MAX];

	cr_assert_eq(cg_resolve_dir(&m, "/docker/abc", out, sizeof(out)), 0);
	cr_assert_str_eq(out, "/sys/fs/cgroup/blkio/docker/abc");
	cr_assert_eq(cg_resolve_dir(&m, "/", out, sizeof(out)), 0);
	cr_assert_str_eq(out, "/sys/fs/cgroup/blkio");
	cr_assert_eq(cg_resolve_dir(&sub, "/docker/abc/x", out, sizeof(out)), 0);
	cr_assert_str_eq(out, "/sys/fs/cgroup/blkio/x");
	cr_assert_eq(cg_resolve_dir(&sub, "/docker/abc", out, sizeof(out)), 0);
	cr_assert_str_eq(out, "/sys/fs/cgroup/blkio");
	cr_assert_eq(cg_resolve_dir(&sub, "/docker/abcd", out, sizeof(out)), -ENOENT);
	cr_assert_eq(cg_resolve_dir(&sub, "/other", out, sizeof(out)), -ENOENT);
	cr_assert_eq(cg_resolve_dir(&none, "/a", out, sizeof(out)), -ENOENT);

	cr_assert_eq(cg_resolve_dir(&m, "/../container", out, sizeof(out)), -EINVAL);
	cr_assert_eq(cg_resolve_dir(&m, "/a/../../etc", out, sizeof(out)), -EINVAL);
	cr_assert_eq(cg_resolve_dir(&m, "/a/./b", out, sizeof(out)), -EINVAL);
	cr_assert_eq(cg_resolve_dir(&m, "/a//b", out, sizeof(out)), -EINVAL);
	cr_assert_eq(cg_resolve_dir(&m, "a", out, sizeof(out)), -EINVAL);
	cr_assert_eq(cg_resolve_dir(&m, "/a", out, 10), -ENAMETOOLONG);
}

Test(cg_parse, controllers_list)
{
	cr_assert(cg_controllers_has(S("cpuset cpu io memory hugetlb pids rdma misc\n"), "io"));
	cr_assert(!cg_controllers_has(S("hugetlb\n"), "io"));
	cr_assert(!cg_controllers_has(S("iocost bio\n"), "io"));
	cr_assert(!cg_controllers_has(S(""), "io"));
	cr_assert(cg_controllers_has(S("io"), "io"));
}

/* ---------------------------------------------------------------------------------------- */
/* Names */

Test(cg_parse, name_fit_shortens_deterministically)
{
	char a[2000], b[2000], out1[64], out2[64], out3[64];

	memset(a, 'a', sizeof(a) - 1);
	a[sizeof(a) - 1] = '\0';
	memcpy(b, a, sizeof(a));
	b[1500] = 'b';

	cg_name_fit("/short", out1, sizeof(out1));
	cr_assert_str_eq(out1, "/short");
	cg_name_fit(a, out1, sizeof(out1));
	cg_name_fit(a, out2, sizeof(out2));
	cg_name_fit(b, out3, sizeof(out3));
	cr_assert_eq(strlen(out1), sizeof(out1) - 1);
	cr_assert_str_eq(out1, out2);
	cr_assert_str_neq(out1, out3, "same prefix, different names: different keys");
	cr_assert_eq(out1[sizeof(out1) - 18], '~');
	cr_assert_eq(strncmp(out1, a, sizeof(out1) - 18), 0);
	cr_assert_neq(cg_name_hash("/a"), cg_name_hash("/b"));
	cr_assert_eq(cg_name_hash(""), 0xcbf29ce484222325ull);
}
