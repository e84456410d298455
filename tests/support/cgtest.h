/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cgtest.h - integration-test fixture: temporary cgroups on the machine's real cgroup mounts.
 *
 * Which hierarchy. cfqfs names a caller's group after one line of /proc/TID/cgroup; with
 * `cgroup_line = "auto"` that is the unified "0::" line when the unified hierarchy holds the
 * io controller, else the v1 blkio line. The tests do not rely on "auto": cgt_find() picks the
 * hierarchy the same way and reports, in cgt_hier.line, the value to pass as
 * `-o cgroup_line=...` ("v2" or "blkio") so the daemon reads exactly the line whose cgroup the
 * test moved its readers into:
 *   1. cgroup2 mounted and its root cgroup.controllers lists "io"  -> v2, cgroup_line=v2;
 *   2. else a v1 hierarchy with the blkio controller               -> v1, cgroup_line=blkio;
 *   3. else cgroup2 without io (cgroups still group processes)     -> v2, cgroup_line=v2.
 * On a hybrid host without io in the unified tree (this project's CI machine) that is case 2.
 *
 * Cgroups are made directly under the hierarchy's root as "cfqfs-it-<owner pid>-<suffix>"; the
 * classifier then sees the group name "/cfqfs-it-<owner pid>-<suffix>" (cgt.name), a child of
 * the root group.
 *
 * Weights. cgt_set_weight() writes the weight file cfqfs reads for that hierarchy when the
 * kernel has one (v1: blkio.bfq.weight, else blkio.weight; v2: io.bfq.weight, else io.weight
 * with the value mapped back through cfqfs's 10*sqrt(w) scale). Without such a file (no
 * CFQ/BFQ in the host kernel, or io not enabled in the parent's subtree_control) the weight is
 * only recorded, and cgt_rules() turns it into a config rule `{ cgroup = "NAME"; weight = W; }`
 * so the share tests still run; the test that checks weights read from cgroup files skips.
 *
 * Cleanup. Every created cgroup is registered. cgt_destroy() (and an atexit handler in the
 * creating process) moves any process left inside back to the parent cgroup and removes the
 * directory, retrying while exiting tasks leave. On a fatal signal a handler tries rmdir (only
 * async-signal-safe calls); readers started by workload.h die with their parent
 * (PR_SET_PDEATHSIG), and cgt_sweep_stale(), called by every cgt_create(), removes what a
 * SIGKILLed test process left: cgroups named after a pid that no longer exists.
 *
 * Needs root. Not thread-safe: one test thread drives the fixture.
 */
#ifndef CFQFS_TEST_CGTEST_H
#define CFQFS_TEST_CGTEST_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define CGT_PREFIX "cfqfs-it-"
#define CGT_MAX 32 /* live cgroups per test process (it_stress uses 20) */

enum cgt_kind {
	CGT_NONE = 0,
	CGT_V1_BLKIO = 1, /* a v1 hierarchy holding blkio (maybe co-mounted with others) */
	CGT_V2 = 2,	  /* the unified hierarchy */
};

/* The hierarchy the tests use. Invariant: kind != CGT_NONE implies root is a mount point. */
struct cgt_hier {
	enum cgt_kind kind;
	char root[PATH_MAX]; /* mount point, e.g. /sys/fs/cgroup/blkio */
	const char *line;    /* value for -o cgroup_line=: "blkio" or "v2" (static string) */
	bool v2_has_io;	     /* the unified root's cgroup.controllers lists io */
	char why[256];	     /* with CGT_NONE: why nothing usable was found */
};

/* One temporary cgroup. `dir[0] == '\0'`: not created (or removed). */
struct cgt {
	char dir[PATH_MAX];	  /* absolute directory in cgroupfs */
	char parent[PATH_MAX];	  /* the directory processes go back to at removal */
	char name[256];		  /* the group name cfqfs sees: "/cfqfs-it-<pid>-<suffix>" */
	unsigned weight;	  /* [weight units, 10..1000] last requested; 0 none */
	bool weight_in_file;	  /* `weight` was written to a file cfqfs reads */
	char weight_file[64];	  /* that file's name, "" if none */
	pid_t owner;		  /* process that created it */
};

/*
 * Finds the hierarchy (see top of file) from /proc/self/mountinfo. Returns 0, or -ENOENT with
 * h->kind == CGT_NONE and h->why filled. Cannot fail otherwise.
 */
int cgt_find(struct cgt_hier *h);

/*
 * For a test's .init: cr_skip()s loudly unless running as root with a usable, writable
 * hierarchy (cgt_find() + a probe mkdir/rmdir). Fills *h.
 */
void cgt_cr_require(struct cgt_hier *h);

/*
 * Creates <root>/cfqfs-it-<getpid()>-<suffix> (after sweeping stale ones) and registers it for
 * cleanup. Returns 0 or -errno (-EEXIST if the suffix is in use, -ENOSPC past CGT_MAX); on
 * failure nothing is created and *cg is zeroed.
 */
int cgt_create(const struct cgt_hier *h, const char *suffix, struct cgt *cg);

/*
 * Sets the cgroup's weight [10..1000] as cfqfs will read it. Returns 0 when written to a file
 * (cg->weight_in_file), -ENOENT when the kernel has no weight file here (the weight is kept in
 * cg->weight for cgt_rules()), -EINVAL for an out-of-range weight, or another -errno from the
 * write (then cg->weight_in_file is false but cg->weight is still recorded).
 */
int cgt_set_weight(const struct cgt_hier *h, struct cgt *cg, unsigned weight);

/*
 * Records `weight` [10..1000] for cgt_rules() only, leaving the cgroup's weight files alone:
 * the configuration rule then sets it (rules take precedence over files). Cannot fail.
 */
/*
 * Test helper: cgt_create() then cgt_set_weight(), failing the test on an error other than a
 * missing weight file (then the caller sets the weight by a rule, see cgt_weight_by_rule).
 */
void cgt_cr_make(const struct cgt_hier *h, struct cgt *cg, const char *suffix,
		 unsigned weight);

void cgt_weight_by_rule(struct cgt *cg, unsigned weight);

/* Moves process `pid` (all its threads; 0 = the caller) into the cgroup. Returns 0 or -errno.
 * Async-signal-safe and usable in a forked child. */
int cgt_move(const struct cgt *cg, pid_t pid);

/*
 * Appends to buf (NUL-terminated, len bytes in all) one libconfig rule
 * `{ cgroup = "NAME"; weight = W; }` per cgroup whose weight is recorded but not in a file,
 * each followed by ",\n". `force`: also for cgroups whose weight is in a file. Returns the
 * number of rules appended, or -ENOSPC (buf then holds a truncated text: do not use it).
 */
int cgt_rules(char *buf, size_t len, struct cgt *const *cgs, size_t n, bool force);

/*
 * Moves every process still inside back to the parent and removes the directory (retrying for
 * up to ~2 s while exiting tasks leave). Idempotent. Returns 0, or -errno if the directory is
 * still there (it stays registered: the atexit handler and the next sweep try again).
 */
int cgt_destroy(struct cgt *cg);

/* Destroys every cgroup this process registered. Cannot fail (reports on stderr). */
void cgt_destroy_all(void);

/* Removes cfqfs-it-<pid>-* cgroups of processes that no longer exist. Cannot fail. */
void cgt_sweep_stale(const struct cgt_hier *h);

/* Does the directory `dir` exist? (for the tests' final "nothing left behind" checks) */
bool cgt_exists(const char *dir);

#endif /* CFQFS_TEST_CGTEST_H */
