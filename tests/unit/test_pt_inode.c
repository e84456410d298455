/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt_inode: the passthrough inode table over a real temporary directory - node ids, lookup
 * counts, forget, stale ids, "." and ".." (never above SOURCE), names with '/', symlinks never
 * followed, daemon references outliving a forget, growth.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdcap.h"
#include "pt_inode.h"

static char base[] = "/tmp/cfqfs-ut-inode.XXXXXX";
static struct pt_itable *t;

static void setup(void)
{
	int fd, err = 0;
	char p[512];

	cr_assert_not_null(mkdtemp(base));
	snprintf(p, sizeof(p), "%s/dir", base);
	cr_assert_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/dir/file", base);
	fd = open(p, O_CREAT | O_WRONLY, 0644);
	cr_assert_geq(fd, 0);
	close(fd);
	snprintf(p, sizeof(p), "%s/link", base);
	cr_assert_eq(symlink("/etc/passwd", p), 0);
	fd = open(base, O_PATH | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	t = pt_itable_create(fd, &err);
	cr_assert_not_null(t, "create: %d", err);
}

static void teardown(void)
{
	char cmd[600];

	pt_itable_destroy(t);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(pt_inode, .init = setup, .fini = teardown);

static fuse_ino_t lookup_ok(struct pt_inode *dir, const char *name, struct stat *st)
{
	fuse_ino_t id = 0;
	int rc = pt_inode_lookup(t, dir, name, st, &id);

	cr_assert_eq(rc, 0, "lookup %s: %d", name, rc);
	cr_assert(pt_itable_check(t));
	return id;
}

Test(pt_inode, root_is_node_one_and_dotdot_at_root_stays_root)
{
	struct pt_inode *root = pt_itable_root(t);
	struct stat st, rst;

	cr_assert_eq(root->nodeid, FUSE_ROOT_ID);
	cr_assert_eq(stat(base, &rst), 0);
	cr_assert_eq(lookup_ok(root, "..", &st), FUSE_ROOT_ID);
	cr_assert_eq(st.st_ino, rst.st_ino);
	cr_assert_eq(lookup_ok(root, ".", &st), FUSE_ROOT_ID);
	cr_assert_eq(pt_inode_get(t, FUSE_ROOT_ID), root);
}

Test(pt_inode, dotdot_from_a_subdirectory_names_the_root)
{
	struct pt_inode *dir;
	struct stat st;
	fuse_ino_t id = lookup_ok(pt_itable_root(t), "dir", &st);

	dir = pt_inode_get(t, id);
	cr_assert_not_null(dir);
	cr_assert_eq(lookup_ok(dir, "..", &st), FUSE_ROOT_ID);
	cr_assert_eq(lookup_ok(dir, ".", &st), id);
	pt_inode_put(t, dir);
}

Test(pt_inode, names_with_a_slash_or_empty_are_rejected)
{
	struct stat st;
	fuse_ino_t id;

	cr_assert_eq(pt_inode_lookup(t, pt_itable_root(t), "dir/file", &st, &id), -EINVAL);
	cr_assert_eq(pt_inode_lookup(t, pt_itable_root(t), "/etc", &st, &id), -EINVAL);
	cr_assert_eq(pt_inode_lookup(t, pt_itable_root(t), "", &st, &id), -EINVAL);
	cr_assert_eq(pt_inode_lookup(t, pt_itable_root(t), "missing", &st, &id), -ENOENT);
	cr_assert_eq(pt_itable_count(t), 1);
}

Test(pt_inode, symlinks_are_not_followed)
{
	struct stat st;

	lookup_ok(pt_itable_root(t), "link", &st);
	cr_assert(S_ISLNK(st.st_mode));
}

Test(pt_inode, same_file_same_id_and_forget_to_zero_makes_it_stale)
{
	struct stat st;
	fuse_ino_t a = lookup_ok(pt_itable_root(t), "dir", &st);
	fuse_ino_t b = lookup_ok(pt_itable_root(t), "dir", &st);

	cr_assert_eq(a, b);
	cr_assert_neq(a, FUSE_ROOT_ID);
	cr_assert_eq(pt_itable_count(t), 2);
	pt_inode_forget(t, a, 1);
	{
		struct pt_inode *in = pt_inode_get(t, a); /* one kernel reference left */

		cr_assert_not_null(in);
		pt_inode_put(t, in);
	}
	pt_inode_forget(t, a, 1);
	cr_assert_null(pt_inode_get(t, a));
	cr_assert_eq(pt_itable_count(t), 1);
	/* a new lookup makes a new id: ids are never reused */
	cr_assert_neq(lookup_ok(pt_itable_root(t), "dir", &st), a);
	/* unknown ids and over-forgets are harmless */
	pt_inode_forget(t, 987654, 3);
	pt_inode_forget(t, FUSE_ROOT_ID, 100);
	cr_assert(pt_itable_check(t));
}

Test(pt_inode, a_daemon_reference_outlives_the_last_forget)
{
	struct pt_inode *in;
	struct stat st;
	fuse_ino_t id = lookup_ok(pt_itable_root(t), "dir", &st), id2;

	in = pt_inode_get(t, id);
	cr_assert_not_null(in);
	pt_inode_forget(t, id, 1);
	cr_assert_null(pt_inode_get(t, id));
	/* still usable by its holder */
	cr_assert_eq(fstatat(in->fd, "", &st, AT_EMPTY_PATH), 0);
	/* a reference taken through a forgotten inode gets a fresh id */
	cr_assert_eq(pt_inode_ref(t, in, &st, &id2), 0);
	cr_assert_neq(id2, id);
	pt_inode_put(t, in);
	cr_assert_not_null(pt_inode_get(t, id2));
	cr_assert(pt_itable_check(t));
}

Test(pt_inode, the_table_grows_and_keeps_its_invariants)
{
	char p[512];
	struct stat st;
	int i;

	for (i = 0; i < 3000; i++) {
		int fd;

		snprintf(p, sizeof(p), "%s/dir/f%d", base, i);
		fd = open(p, O_CREAT | O_WRONLY, 0644);
		cr_assert_geq(fd, 0);
		close(fd);
	}
	{
		fuse_ino_t did = lookup_ok(pt_itable_root(t), "dir", &st);
		struct pt_inode *dir = pt_inode_get(t, did);

		for (i = 0; i < 3000; i++) {
			fuse_ino_t id = 0;

			snprintf(p, sizeof(p), "f%d", i);
			cr_assert_eq(pt_inode_lookup(t, dir, p, &st, &id), 0);
		}
		pt_inode_put(t, dir);
	}
	cr_assert_eq(pt_itable_count(t), 3002);
	cr_assert(pt_itable_check(t));
}

/* Lookups stop fdcap's reserve short of the descriptor limit: when they fail with EMFILE, the
 * reserve is free for short-lived descriptors and known inodes still resolve; forgetting
 * inodes makes room again. */
Test(pt_inode, lookups_leave_the_descriptor_reserve_free)
{
	struct rlimit low = { .rlim_cur = 64, .rlim_max = 64 };
	struct pt_inode *root = pt_itable_root(t);
	fuse_ino_t ids[80], id;
	unsigned reserve;
	struct stat st;
	int n = 0, rc = 0, spare[64], nspare = 0;
	char p[600];

	for (int i = 0; i < 80; i++) {
		snprintf(p, sizeof(p), "%s/f%02d", base, i);
		int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);

		cr_assert_geq(fd, 0, "making %s: %s", p, strerror(errno));
		close(fd);
	}
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &low), 0, "setrlimit: %s", strerror(errno));
	reserve = fdcap_init();
	cr_assert_eq(reserve, FDCAP_RESERVE_MIN, "reserve %u for a limit of 64", reserve);
	for (n = 0; n < 80; n++) {
		snprintf(p, sizeof(p), "f%02d", n);
		rc = pt_inode_lookup(t, root, p, &st, &ids[n]);
		if (rc)
			break;
	}
	cr_assert_eq(rc, -EMFILE, "lookup %d ended with %d, want -EMFILE", n, rc);
	cr_assert_gt(n, 0);
	/* exactly the reserve is left for everything else */
	while (nspare < 64 && (spare[nspare] = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
		nspare++;
	cr_assert_eq(errno, EMFILE);
	cr_assert_eq((unsigned)nspare, reserve, "%d descriptors free after the lookups, want %u",
		     nspare, reserve);
	while (nspare > 0)
		close(spare[--nspare]);
	/* a name the table already holds still resolves: no descriptor needed */
	rc = pt_inode_lookup(t, root, "f00", &st, &id);
	cr_assert_eq(rc, 0, "lookup of a known inode at the cap: %d", rc);
	cr_assert_eq(id, ids[0]);
	pt_inode_forget(t, ids[0], 2); /* both lookups: its descriptor is closed */
	rc = pt_inode_lookup(t, root, "f79", &st, &id);
	cr_assert_eq(rc, 0, "lookup after a forget: %d", rc);
	cr_assert(pt_itable_check(t));
}

/* pt_inode_lookup_made skips the probe for a known inode, not the table: a name it is given
 * that the table already holds (the name was replaced by a known file meanwhile) still maps
 * to the known id and takes a reference on it, and a new one gets a fresh id. */
Test(pt_inode, lookup_made_finds_a_known_inode_and_adds_a_new_one)
{
	struct pt_inode *root = pt_itable_root(t);
	struct stat st, made_st;
	struct pt_inode *in;
	fuse_ino_t known = lookup_ok(root, "dir", &st), id = 0;
	char p[512];
	int fd;

	cr_assert_eq(pt_inode_lookup_made(t, root, "dir", &made_st, &id), 0);
	cr_assert_eq(id, known);
	cr_assert_eq(made_st.st_ino, st.st_ino);
	cr_assert_eq(pt_itable_count(t), 2);
	pt_inode_forget(t, known, 1);
	in = pt_inode_get(t, known);
	cr_assert_not_null(in, "lookup_made took no reference on the known inode");
	pt_inode_put(t, in);

	snprintf(p, sizeof(p), "%s/new", base);
	fd = open(p, O_CREAT | O_EXCL | O_WRONLY, 0600);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(pt_inode_lookup_made(t, root, "new", &made_st, &id), 0);
	cr_assert_neq(id, known);
	cr_assert(S_ISREG(made_st.st_mode));
	cr_assert_eq(pt_itable_count(t), 3);
	cr_assert_eq(pt_inode_lookup_made(t, root, "missing", &made_st, &id), -ENOENT);
	cr_assert_eq(pt_itable_count(t), 3);
	cr_assert(pt_itable_check(t));
}
