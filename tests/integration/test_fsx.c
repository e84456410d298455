/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fsx: the fsx-style random I/O checker (tests/fsx, cfqfs_fsx) on native SOURCE and on the
 * mount, with the same seed, in two cache modes:
 *   - default (page cache dropped at open): FSX_OPS operations including mmap reads and
 *     writes. SOURCE is a tmpfs (as root): on this machine's ext4 every truncate and hole
 *     punch waits for the disk, and 2 x 100 000 operations took 90 s there against 35 s on
 *     tmpfs. tmpfs has no FALLOC_FL_ZERO_RANGE, so this leg also checks that the EOPNOTSUPP
 *     reaches the caller through the mount exactly as natively (zero ops switched off on both
 *     sides). The tmpfs lives in a private mount namespace of the test process, so it cannot
 *     outlive it whatever happens.
 *   - direct_io: FSX_DIRECT_OPS operations on the fixture's SOURCE (ext4 here, so ZERO_RANGE
 *     goes through the mount too). MAP_SHARED is refused there with ENODEV by the kernel
 *     unless the daemon negotiates FUSE_DIRECT_IO_ALLOW_MMAP (libfuse >= 3.16; Debian 12 has
 *     3.14), so the leg probes it first and runs without mmap ops (-R -W) when it is refused,
 *     saying so.
 * Each leg must exit 0 with mismatches=0 errors=0 (every read and the periodic whole-file
 * checks matched the model), the mount and native summaries must be equal counter for counter
 * (same operation sequence, same final size and content hash), and the file the mount left in
 * SOURCE must be byte-identical to the native one. Both summaries are printed side by side.
 *
 * CFQFS_FSX_SEED and CFQFS_FSX_OPS override the seed and the operations per leg for runs by
 * hand (e.g. with another seed after a change).
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mount.h"

#ifndef CFQFS_FSX_BIN
#define CFQFS_FSX_BIN CFQFS_BUILD_DIR "/tests/fsx/cfqfs_fsx"
#endif

#define FSX_SEED 1
#define FSX_OPS 100000	      /* default cache mode, each side */
#define FSX_DIRECT_OPS 30000  /* direct_io, each side */
#define FSX_RUN_TIMEOUT_MS 240000
#define FSX_MAX_FIELDS 32
#define FSX_FILE_MAX (256 * 1024) /* cfqfs_fsx's default -l */

#define FSX_TMPFS_OPTS "size=16m,mode=0755"

static struct mnt M;
static char tmpfs_src[PATH_MAX]; /* our tmpfs over M.src, "" when none */
static char tmpfs_base[256];	 /* M.base, removed once the tmpfs is gone */

/* Unmounts our tmpfs (after the fixture's teardown) and removes what teardown had to leave. */
static void tmpfs_cleanup(void)
{
	if (!tmpfs_src[0])
		return;
	if (umount2(tmpfs_src, MNT_DETACH) != 0)
		fprintf(stderr, "fsx: umount %s: %s\n", tmpfs_src, strerror(errno));
	else if (rmdir(tmpfs_src) != 0 || rmdir(tmpfs_base) != 0)
		fprintf(stderr, "fsx: could not remove %s: %s\n", tmpfs_base, strerror(errno));
	tmpfs_src[0] = '\0';
}

static void teardown(void)
{
	mnt_cr_teardown(&M);
	tmpfs_cleanup();
}

TestSuite(fsx, .fini = teardown, .timeout = 560);

/* A parsed summary line: `fsx: key=value key=value ...`, values kept as text. */
struct fsx_sum {
	char line[1024];
	unsigned n;
	char key[FSX_MAX_FIELDS][24];
	char val[FSX_MAX_FIELDS][40];
};

static const char *sum_get(const struct fsx_sum *s, const char *key)
{
	for (unsigned i = 0; i < s->n; i++)
		if (strcmp(s->key[i], key) == 0)
			return s->val[i];
	return NULL;
}

/* Finds the last "fsx: ops=" line of out and splits it. Returns false if there is none. */
static bool sum_parse(const char *out, struct fsx_sum *s)
{
	const char *p = NULL, *q;
	char *save, *tok;
	char copy[1024];

	for (q = strstr(out, "fsx: ops="); q; q = strstr(q + 1, "fsx: ops="))
		p = q;
	if (!p)
		return false;
	q = strchr(p, '\n');
	snprintf(s->line, sizeof(s->line), "%.*s", q ? (int)(q - p) : (int)strlen(p), p);
	snprintf(copy, sizeof(copy), "%s", s->line + strlen("fsx: "));
	s->n = 0;
	for (tok = strtok_r(copy, " ", &save); tok && s->n < FSX_MAX_FIELDS;
	     tok = strtok_r(NULL, " ", &save)) {
		char *eq = strchr(tok, '=');

		if (!eq)
			continue;
		*eq = '\0';
		snprintf(s->key[s->n], sizeof(s->key[0]), "%s", tok);
		snprintf(s->val[s->n], sizeof(s->val[0]), "%s", eq + 1);
		s->n++;
	}
	return s->n > 0;
}

static unsigned long env_or(const char *name, unsigned long dflt)
{
	const char *v = getenv(name);

	return v && *v ? strtoul(v, NULL, 0) : dflt;
}

/*
 * Runs cfqfs_fsx on `file` with `nops` operations and the extra flags, and asserts that it
 * exited 0 with mismatches=0 errors=0 (showing its report otherwise).
 */
static void run_fsx(const char *label, const char *file, unsigned long nops, bool no_mmap,
		    struct fsx_sum *s)
{
	static char out[8192], err[32768];
	char n_arg[32], seed_arg[32];
	const char *argv[12];
	unsigned argc = 0;
	int status = 0, r;

	snprintf(n_arg, sizeof(n_arg), "%lu", nops);
	snprintf(seed_arg, sizeof(seed_arg), "%lu", env_or("CFQFS_FSX_SEED", FSX_SEED));
	argv[argc++] = CFQFS_FSX_BIN;
	argv[argc++] = "-q";
	argv[argc++] = "-N";
	argv[argc++] = n_arg;
	argv[argc++] = "-S";
	argv[argc++] = seed_arg;
	if (no_mmap) {
		argv[argc++] = "-R";
		argv[argc++] = "-W";
	}
	argv[argc++] = file;
	argv[argc] = NULL;

	r = mnt_run(argv, FSX_RUN_TIMEOUT_MS, &status, out, sizeof(out), err, sizeof(err));
	cr_assert_eq(r, 0, "%s: running %s: %s (stderr: %s)", label, CFQFS_FSX_BIN,
		     strerror(-r), err);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || err[0])
		fprintf(stderr, "---- %s: cfqfs_fsx stderr ----\n%s---- end ----\n", label, err);
	cr_assert(sum_parse(out, s), "%s: no summary line in cfqfs_fsx output: %s", label, out);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "%s: cfqfs_fsx failed (wait status 0x%x; 1 = mismatch, 2 = error): %s", label,
		  (unsigned)status, s->line);
	cr_assert_str_eq(sum_get(s, "mismatches"), "0", "%s: %s", label, s->line);
	cr_assert_str_eq(sum_get(s, "errors"), "0", "%s: %s", label, s->line);
	cr_assert_eq(strtoul(sum_get(s, "ops"), NULL, 10), nops, "%s: %s", label, s->line);
}

/* Prints the two summaries as a table and asserts they agree on every counter. */
static void compare(const char *mode, const struct fsx_sum *nat, const struct fsx_sum *mnt)
{
	fprintf(stderr, "fsx %s, seed %s: %-12s %20s %20s\n", mode, sum_get(nat, "seed"),
		"counter", "native SOURCE", "cfqfs mount");
	for (unsigned i = 0; i < nat->n; i++) {
		const char *mv = sum_get(mnt, nat->key[i]);

		fprintf(stderr, "fsx %s: %-12s %20s %20s%s\n", mode, nat->key[i], nat->val[i],
			mv ? mv : "-", mv && strcmp(mv, nat->val[i]) == 0 ? "" : "   <-- differs");
	}
	cr_assert_eq(nat->n, mnt->n, "%s: summaries have different fields:\n native %s\n mount  %s",
		     mode, nat->line, mnt->line);
	for (unsigned i = 0; i < nat->n; i++) {
		const char *mv = sum_get(mnt, nat->key[i]);

		cr_assert(mv && strcmp(mv, nat->val[i]) == 0,
			  "%s: %s differs (native %s, mount %s):\n native %s\n mount  %s", mode,
			  nat->key[i], nat->val[i], mv ? mv : "missing", nat->line, mnt->line);
	}
}

/* The file the mount left in SOURCE must be byte-identical to the one fsx left natively. */
static void compare_files(const char *mode, const char *nat_path, const char *mnt_src_path)
{
	unsigned char *a = malloc(FSX_FILE_MAX + 1), *b = malloc(FSX_FILE_MAX + 1);
	ssize_t na, nb;

	cr_assert(a && b);
	na = mnt_get(nat_path, a, FSX_FILE_MAX + 1);
	nb = mnt_get(mnt_src_path, b, FSX_FILE_MAX + 1);
	cr_assert(na >= 0 && nb >= 0, "%s: reading the result files: %zd %zd", mode, na, nb);
	cr_assert_eq(na, nb, "%s: native file has %zd bytes, the mount's in SOURCE %zd", mode,
		     na, nb);
	cr_assert(memcmp(a, b, (size_t)na) == 0,
		  "%s: the mount's file in SOURCE differs from the native one", mode);
	free(a);
	free(b);
}

/*
 * Does MAP_SHARED work on a file of the mount? Returns 0 if it does, else the errno of the
 * refused mmap (the probe file is removed either way).
 */
static int probe_shared_mmap(const char *path)
{
	long pg = sysconf(_SC_PAGESIZE);
	int fd, err = 0;
	void *p;

	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	cr_assert(fd >= 0, "open %s: %s", path, strerror(errno));
	cr_assert_eq(ftruncate(fd, pg), 0, "ftruncate %s: %s", path, strerror(errno));
	p = mmap(NULL, (size_t)pg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		err = errno;
	else
		munmap(p, (size_t)pg);
	close(fd);
	cr_assert_eq(unlink(path), 0, "unlink %s: %s", path, strerror(errno));
	return err;
}

static void leg(const char *mode, unsigned long nops, bool no_mmap)
{
	struct fsx_sum nat, mnt;

	run_fsx("native SOURCE", src_path(&M, "native.fsx"), nops, no_mmap, &nat);
	run_fsx("mount", mnt_path(&M, "mount.fsx"), nops, no_mmap, &mnt);
	compare(mode, &nat, &mnt);
	compare_files(mode, src_path(&M, "native.fsx"), src_path(&M, "mount.fsx"));
}

/*
 * mnt_cr_setup() with a tmpfs as SOURCE when root can make one in a private mount namespace;
 * otherwise (not root) the fixture's SOURCE, said loudly (the leg is then only slower).
 */
static void setup_on_tmpfs(void)
{
	umask(022);
	if (!mnt_fuse_available())
		cr_skip("/dev/fuse unavailable: %s", mnt_fuse_unavailable_reason());
	if (geteuid() != 0) {
		fprintf(stderr, "fsx: not root: no tmpfs SOURCE, the default leg runs on the "
				"fixture's SOURCE (slower)\n");
		mnt_cr_setup(&M, NULL);
		return;
	}
	/* Our mounts (the tmpfs and the FUSE mount) stay in this process's namespace. */
	cr_assert_eq(unshare(CLONE_NEWNS), 0, "unshare(CLONE_NEWNS): %s", strerror(errno));
	cr_assert_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0,
		     "making / private: %s", strerror(errno));
	cr_assert_eq(mnt_prepare(&M), 0, "mnt_prepare");
	snprintf(tmpfs_base, sizeof(tmpfs_base), "%s", M.base);
	cr_assert_eq(mount("tmpfs", M.src, "tmpfs", MS_NOSUID | MS_NODEV, FSX_TMPFS_OPTS), 0,
		     "mount tmpfs on %s: %s", M.src, strerror(errno));
	snprintf(tmpfs_src, sizeof(tmpfs_src), "%s", M.src);
	mnt_cr_start(&M, NULL);
}

Test(fsx, default_cache)
{
	setup_on_tmpfs();
	leg(tmpfs_src[0] ? "default (tmpfs)" : "default", env_or("CFQFS_FSX_OPS", FSX_OPS),
	    false);
	mnt_cr_finish(&M);
	tmpfs_cleanup();
}

Test(fsx, direct_io)
{
	static const char *const args[] = { "-o", "direct_io", NULL };
	bool no_mmap;
	int err;

	mnt_cr_setup(&M, args);
	err = probe_shared_mmap(mnt_path(&M, "mmap-probe"));
	cr_assert(err == 0 || err == ENODEV, "MAP_SHARED on a direct_io file: unexpected %s",
		  strerrorname_np(err));
	no_mmap = err == ENODEV;
	if (no_mmap)
		fprintf(stderr, "fsx: direct_io: mmap(MAP_SHARED) fails with ENODEV on this "
				"kernel/libfuse (FUSE_DIRECT_IO_ALLOW_MMAP not negotiated): the leg "
				"runs without mmap ops (-R -W)\n");
	leg(no_mmap ? "direct_io (no mmap)" : "direct_io", env_or("CFQFS_FSX_OPS",
								    FSX_DIRECT_OPS),
	    no_mmap);
	mnt_cr_finish(&M);
}
