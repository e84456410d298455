/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * posix_multiuser: a root mount with -o allow_other used by an unprivileged caller (a forked
 * child that drops to uid/gid 65534). Permissions are enforced, new objects belong to the
 * caller with the caller's umask, setgid directories pass on their group, and the caller cannot
 * give files away.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mount.h"

#define NOBODY 65534
#define SHARED_GID 4242

static struct mnt M;

static void setup(void)
{
	static const char *const args[] = { "-o", "allow_other", NULL };

	if (geteuid() != 0)
		cr_skip("multi-user tests need root (to mount with allow_other and drop to %d)",
			NOBODY);
	mnt_cr_setup(&M, args);
}

static void teardown(void)
{
	mnt_cr_teardown(&M);
}

TestSuite(posix_multiuser, .init = setup, .fini = teardown, .timeout = 60);

#define CHILD_CHECK(cond)                                                                   \
	do {                                                                                \
		if (!(cond)) {                                                              \
			fprintf(stderr, "child (uid %d): line %d: %s failed (errno %s)\n",    \
				(int)getuid(), __LINE__, #cond,                             \
				errno ? strerrorname_np(errno) : "0");                      \
			return 1;                                                           \
		}                                                                           \
	} while (0)

/* Child side: become NOBODY:NOBODY with the given supplementary groups, umask 027. */
static int drop_privileges(const gid_t *groups, size_t n)
{
	if (setgroups(n, groups) != 0 || setgid(NOBODY) != 0 || setuid(NOBODY) != 0) {
		fprintf(stderr, "child: cannot drop privileges: %s\n", strerror(errno));
		return -1;
	}
	if (getuid() != NOBODY || geteuid() != NOBODY || getegid() != NOBODY)
		return -1;
	umask(027);
	return 0;
}

static int expect_errno(long r, int err, const char *what)
{
	int e = errno;

	if (r == -1 && e == err)
		return 0;
	fprintf(stderr, "child: %s: expected -1/%s, got %ld/%s\n", what, strerrorname_np(err), r,
		e ? strerrorname_np(e) : "0");
	return 1;
}

static void run_child(int (*fn)(void *))
{
	int rc = mnt_fork_run(fn, &M, 10000);

	cr_assert_eq(rc, 0, "unprivileged child failed (rc %d); its stderr says why", rc);
}

static struct stat lstat_ok(const char *path)
{
	struct stat st;

	cr_assert_eq(lstat(path, &st), 0, "lstat %s: %s", path, strerror(errno));
	return st;
}

/* Root-owned fixtures made directly in SOURCE. */
static void make_tree(void)
{
	cr_assert_eq(mnt_put(src_path(&M, "secret"), "root only", 9, 0600), 0);
	cr_assert_eq(chmod(src_path(&M, "secret"), 0600), 0);
	cr_assert_eq(mnt_put(src_path(&M, "public"), "everyone", 8, 0644), 0);
	cr_assert_eq(chmod(src_path(&M, "public"), 0644), 0);
	cr_assert_eq(mkdir(src_path(&M, "pub"), 0777), 0);
	cr_assert_eq(chmod(src_path(&M, "pub"), 0777), 0);
	cr_assert_eq(mkdir(src_path(&M, "sg"), 0777), 0);
	cr_assert_eq(chown(src_path(&M, "sg"), 0, SHARED_GID), 0);
	cr_assert_eq(chmod(src_path(&M, "sg"), 02777), 0);
	cr_assert_eq(mkdir(src_path(&M, "rootdir"), 0755), 0);
	cr_assert_eq(mnt_put(src_path(&M, "rootdir/f"), "f", 1, 0644), 0);
	cr_assert_eq(mnt_put(src_path(&M, "groupfile"), "g", 1, 0660), 0);
	cr_assert_eq(chown(src_path(&M, "groupfile"), 0, SHARED_GID), 0);
	cr_assert_eq(chmod(src_path(&M, "groupfile"), 0660), 0);
}

static int c_read_denied(void *arg)
{
	struct mnt *m = arg;
	char buf[16];
	int fd;

	if (drop_privileges(NULL, 0))
		return 1;
	errno = 0;
	if (expect_errno(open(mnt_path(m, "secret"), O_RDONLY), EACCES, "open 0600 root file"))
		return 1;
	errno = 0;
	if (expect_errno(open(mnt_path(m, "public"), O_WRONLY), EACCES, "open 0644 for write"))
		return 1;
	errno = 0;
	if (expect_errno(access(mnt_path(m, "secret"), R_OK), EACCES, "access R_OK"))
		return 1;
	errno = 0;
	if (expect_errno(access(mnt_path(m, "public"), W_OK), EACCES, "access W_OK"))
		return 1;
	CHILD_CHECK(access(mnt_path(m, "public"), R_OK) == 0);
	fd = open(mnt_path(m, "public"), O_RDONLY);
	CHILD_CHECK(fd >= 0);
	CHILD_CHECK(read(fd, buf, sizeof(buf)) == 8);
	close(fd);
	errno = 0;
	if (expect_errno(truncate(mnt_path(m, "public"), 0), EACCES, "truncate 0644 root file"))
		return 1;
	return 0;
}

Test(posix_multiuser, unprivileged_caller_is_denied_by_mode_bits)
{
	make_tree();
	run_child(c_read_denied);
	cr_assert_eq(lstat_ok(src_path(&M, "public")).st_size, 8);
	mnt_cr_finish(&M);
}

static int c_create(void *arg)
{
	struct mnt *m = arg;
	int fd;

	if (drop_privileges(NULL, 0))
		return 1;
	fd = open(mnt_path(m, "pub/mine"), O_WRONLY | O_CREAT | O_EXCL, 0666);
	CHILD_CHECK(fd >= 0);
	CHILD_CHECK(write(fd, "mine", 4) == 4);
	CHILD_CHECK(close(fd) == 0);
	CHILD_CHECK(mkdir(mnt_path(m, "pub/mydir"), 0777) == 0);
	CHILD_CHECK(symlink("mine", mnt_path(m, "pub/mylink")) == 0);
	CHILD_CHECK(mkfifo(mnt_path(m, "pub/myfifo"), 0666) == 0);
	errno = 0;
	if (expect_errno(open(mnt_path(m, "rootdir/new"), O_WRONLY | O_CREAT, 0666), EACCES,
			 "create in a root 0755 dir"))
		return 1;
	errno = 0;
	if (expect_errno(unlink(mnt_path(m, "rootdir/f")), EACCES, "unlink in a root 0755 dir"))
		return 1;
	return 0;
}

Test(posix_multiuser, created_objects_belong_to_caller_with_its_umask)
{
	struct stat st;

	make_tree();
	run_child(c_create);
	st = lstat_ok(src_path(&M, "pub/mine"));
	cr_assert_eq(st.st_uid, NOBODY, "file uid %d", (int)st.st_uid);
	cr_assert_eq(st.st_gid, NOBODY, "file gid %d", (int)st.st_gid);
	cr_assert_eq(st.st_mode & 07777, 0640, "file mode %o, expected 0640 (umask 027)",
		     st.st_mode & 07777);
	st = lstat_ok(src_path(&M, "pub/mydir"));
	cr_assert_eq(st.st_uid, NOBODY);
	cr_assert_eq(st.st_gid, NOBODY);
	cr_assert_eq(st.st_mode & 07777, 0750, "dir mode %o", st.st_mode & 07777);
	st = lstat_ok(src_path(&M, "pub/mylink"));
	cr_assert(S_ISLNK(st.st_mode));
	cr_assert_eq(st.st_uid, NOBODY, "symlink uid %d", (int)st.st_uid);
	st = lstat_ok(src_path(&M, "pub/myfifo"));
	cr_assert_eq(st.st_uid, NOBODY, "fifo uid %d", (int)st.st_uid);
	cr_assert_eq(st.st_mode & 07777, 0640);
	st = lstat_ok(mnt_path(&M, "pub/mine"));
	cr_assert_eq(st.st_uid, NOBODY);
	cr_assert_eq(st.st_size, 4);
	cr_assert_eq(lstat_ok(src_path(&M, "rootdir/f")).st_size, 1);
	mnt_cr_finish(&M);
}

static int c_setgid_dir(void *arg)
{
	struct mnt *m = arg;
	int fd;

	if (drop_privileges(NULL, 0))
		return 1;
	CHILD_CHECK(mkdir(mnt_path(m, "sg/sub"), 0777) == 0);
	fd = open(mnt_path(m, "sg/file"), O_WRONLY | O_CREAT, 0666);
	CHILD_CHECK(fd >= 0);
	close(fd);
	return 0;
}

Test(posix_multiuser, setgid_directory_passes_group_to_new_entries)
{
	struct stat st;

	make_tree();
	run_child(c_setgid_dir);
	st = lstat_ok(src_path(&M, "sg/sub"));
	cr_assert_eq(st.st_uid, NOBODY);
	cr_assert_eq(st.st_gid, SHARED_GID, "subdir gid %d, expected the setgid dir's %d",
		     (int)st.st_gid, SHARED_GID);
	cr_assert_eq(st.st_mode & 07777, 02750, "subdir mode %o, expected 02750",
		     st.st_mode & 07777);
	st = lstat_ok(src_path(&M, "sg/file"));
	cr_assert_eq(st.st_uid, NOBODY);
	cr_assert_eq(st.st_gid, SHARED_GID, "file gid %d", (int)st.st_gid);
	cr_assert_eq(st.st_mode & 07777, 0640);
	mnt_cr_finish(&M);
}

static int c_chown(void *arg)
{
	struct mnt *m = arg;
	int fd;

	if (drop_privileges(NULL, 0))
		return 1;
	fd = open(mnt_path(m, "pub/own"), O_WRONLY | O_CREAT, 0644);
	CHILD_CHECK(fd >= 0);
	close(fd);
	errno = 0;
	if (expect_errno(chown(mnt_path(m, "pub/own"), 0, (gid_t)-1), EPERM, "chown to root"))
		return 1;
	errno = 0;
	if (expect_errno(chown(mnt_path(m, "pub/own"), (uid_t)-1, SHARED_GID), EPERM,
			 "chgrp to a group the caller is not in"))
		return 1;
	errno = 0;
	if (expect_errno(chown(mnt_path(m, "public"), NOBODY, NOBODY), EPERM,
			 "take over root's file"))
		return 1;
	errno = 0;
	if (expect_errno(chmod(mnt_path(m, "public"), 0666), EPERM, "chmod root's file"))
		return 1;
	/* setting explicit times needs ownership */
	{
		struct timespec ts[2] = { { 1, 0 }, { 1, 0 } };

		errno = 0;
		if (expect_errno(utimensat(AT_FDCWD, mnt_path(m, "public"), ts, 0), EPERM,
				 "utimensat on root's file"))
			return 1;
	}
	CHILD_CHECK(chmod(mnt_path(m, "pub/own"), 0600) == 0);
	return 0;
}

Test(posix_multiuser, caller_cannot_give_away_or_take_files)
{
	struct stat st;

	make_tree();
	run_child(c_chown);
	st = lstat_ok(src_path(&M, "pub/own"));
	cr_assert_eq(st.st_uid, NOBODY);
	cr_assert_eq(st.st_gid, NOBODY);
	cr_assert_eq(st.st_mode & 07777, 0600);
	st = lstat_ok(src_path(&M, "public"));
	cr_assert_eq(st.st_uid, 0);
	cr_assert_eq(st.st_mode & 07777, 0644);
	mnt_cr_finish(&M);
}

static int c_group_write(void *arg)
{
	struct mnt *m = arg;
	gid_t groups[] = { SHARED_GID };
	int fd;

	if (drop_privileges(groups, 1))
		return 1;
	fd = open(mnt_path(m, "groupfile"), O_WRONLY | O_TRUNC);
	CHILD_CHECK(fd >= 0);
	CHILD_CHECK(write(fd, "by-group", 8) == 8);
	CHILD_CHECK(close(fd) == 0);
	/* and a supplementary group may be chosen as a new file's group */
	fd = open(mnt_path(m, "pub/grp"), O_WRONLY | O_CREAT, 0660);
	CHILD_CHECK(fd >= 0);
	close(fd);
	CHILD_CHECK(chown(mnt_path(m, "pub/grp"), (uid_t)-1, SHARED_GID) == 0);
	return 0;
}

Test(posix_multiuser, supplementary_group_grants_access)
{
	char buf[16];

	make_tree();
	run_child(c_group_write);
	cr_assert_eq(mnt_get(src_path(&M, "groupfile"), buf, sizeof(buf)), 8);
	cr_assert_arr_eq(buf, "by-group", 8);
	cr_assert_eq(lstat_ok(src_path(&M, "pub/grp")).st_gid, SHARED_GID);
	mnt_cr_finish(&M);
}

Test(posix_multiuser, root_caller_creates_root_owned_files)
{
	struct stat st;

	umask(022);
	cr_assert_eq(mnt_put(mnt_path(&M, "rootmade"), "r", 1, 0666), 0);
	st = lstat_ok(src_path(&M, "rootmade"));
	cr_assert_eq(st.st_uid, 0);
	cr_assert_eq(st.st_gid, 0);
	cr_assert_eq(st.st_mode & 07777, 0644);
	mnt_cr_finish(&M);
}

/* --- set-id bits: every case compared with the same operation on SOURCE directly ---------- */

/*
 * Twin files: "pub/n_NAME" is operated on natively (in SOURCE), "pub/m_NAME" through the mount,
 * by the same uid-65534 child and then by root; the resulting modes must be equal.
 *   rootsuid  root:SHARED 06777, written by the child (not the owner)
 *   ownsuid   nobody:nobody 06755, written by the child (its owner, without CAP_FSETID)
 *   trunc     root:SHARED 06777, truncated by the child
 *   chownme   nobody:nobody 06755, chowned to root by root
 *   created   created by the child with mode 06755 (umask 0) in root's 0777 pub/
 *   otrunc    root:SHARED 06777, opened with O_TRUNC by the child (through the mount it kept
 *             both bits: the truncating open ran as root, and atomic O_TRUNC sends no SETATTR)
 *   rtrunc    root:SHARED 06777, opened with O_TRUNC by root (CAP_FSETID: both bits stay)
 *   sg/..._c  created by the child with mode 02755 in the setgid dir of a group it is not in
 *   sg/..._s, sg/..._k  created (open, mknod) with mode 02755 in that dir by a child that is in
 *             its group through a supplementary group only (through the mount the bit went:
 *             SOURCE checked the group against the daemon's own supplementary groups)
 */
static const char *const setid_names[] = { "rootsuid", "ownsuid", "trunc",  "chownme",
					   "created",  "otrunc",  "rtrunc" };

static void setid_make(const char *pfx)
{
	char p[64];

	snprintf(p, sizeof(p), "pub/%s_rootsuid", pfx);
	cr_assert_eq(mnt_put(src_path(&M, p), "0123", 4, 0600), 0);
	cr_assert_eq(chown(src_path(&M, p), 0, SHARED_GID), 0);
	cr_assert_eq(chmod(src_path(&M, p), 06777), 0);
	snprintf(p, sizeof(p), "pub/%s_trunc", pfx);
	cr_assert_eq(mnt_put(src_path(&M, p), "0123", 4, 0600), 0);
	cr_assert_eq(chown(src_path(&M, p), 0, SHARED_GID), 0);
	cr_assert_eq(chmod(src_path(&M, p), 06777), 0);
	snprintf(p, sizeof(p), "pub/%s_ownsuid", pfx);
	cr_assert_eq(mnt_put(src_path(&M, p), "0123", 4, 0600), 0);
	cr_assert_eq(chown(src_path(&M, p), NOBODY, NOBODY), 0);
	cr_assert_eq(chmod(src_path(&M, p), 06755), 0);
	snprintf(p, sizeof(p), "pub/%s_chownme", pfx);
	cr_assert_eq(mnt_put(src_path(&M, p), "0123", 4, 0600), 0);
	cr_assert_eq(chown(src_path(&M, p), NOBODY, NOBODY), 0);
	cr_assert_eq(chmod(src_path(&M, p), 06755), 0);
	for (int i = 0; i < 2; i++) {
		snprintf(p, sizeof(p), "pub/%s_%s", pfx, i ? "rtrunc" : "otrunc");
		cr_assert_eq(mnt_put(src_path(&M, p), "0123", 4, 0600), 0);
		cr_assert_eq(chown(src_path(&M, p), 0, SHARED_GID), 0);
		cr_assert_eq(chmod(src_path(&M, p), 06777), 0);
	}
}

static int c_setid_one(const char *dir, const char *pfx)
{
	char p[PATH_MAX];
	int fd;

	snprintf(p, sizeof(p), "%s/pub/%s_rootsuid", dir, pfx);
	fd = open(p, O_WRONLY);
	CHILD_CHECK(fd >= 0);
	CHILD_CHECK(write(fd, "x", 1) == 1);
	CHILD_CHECK(close(fd) == 0);
	snprintf(p, sizeof(p), "%s/pub/%s_ownsuid", dir, pfx);
	fd = open(p, O_WRONLY);
	CHILD_CHECK(fd >= 0);
	CHILD_CHECK(write(fd, "x", 1) == 1);
	CHILD_CHECK(close(fd) == 0);
	snprintf(p, sizeof(p), "%s/pub/%s_trunc", dir, pfx);
	CHILD_CHECK(truncate(p, 1) == 0);
	snprintf(p, sizeof(p), "%s/pub/%s_created", dir, pfx);
	fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 06755);
	CHILD_CHECK(fd >= 0);
	CHILD_CHECK(close(fd) == 0);
	snprintf(p, sizeof(p), "%s/pub/%s_otrunc", dir, pfx);
	fd = open(p, O_WRONLY | O_TRUNC);
	CHILD_CHECK(fd >= 0);
	CHILD_CHECK(close(fd) == 0);
	snprintf(p, sizeof(p), "%s/sg/%s_c", dir, pfx);
	fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 02755);
	CHILD_CHECK(fd >= 0);
	CHILD_CHECK(close(fd) == 0);
	return 0;
}

/* As a member of the setgid dir's group through a supplementary group only. */
static int c_setid_member_one(const char *dir, const char *pfx)
{
	char p[PATH_MAX];
	int fd;

	snprintf(p, sizeof(p), "%s/sg/%s_s", dir, pfx);
	fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 02755);
	CHILD_CHECK(fd >= 0);
	CHILD_CHECK(close(fd) == 0);
	snprintf(p, sizeof(p), "%s/sg/%s_k", dir, pfx);
	CHILD_CHECK(mknod(p, S_IFREG | 02755, 0) == 0);
	return 0;
}

static int c_setid_member(void *arg)
{
	static const gid_t shared[] = { SHARED_GID };
	struct mnt *m = arg;
	char src[PATH_MAX];

	if (drop_privileges(shared, 1))
		return 1;
	umask(0);
	snprintf(src, sizeof(src), "%s", m->src);
	if (c_setid_member_one(src, "n"))
		return 1;
	return c_setid_member_one(m->mnt, "m");
}

static int c_setid(void *arg)
{
	struct mnt *m = arg;
	char src[PATH_MAX];

	if (drop_privileges(NULL, 0))
		return 1;
	umask(0);
	snprintf(src, sizeof(src), "%s", m->src);
	if (c_setid_one(src, "n"))
		return 1;
	return c_setid_one(m->mnt, "m");
}

Test(posix_multiuser, setid_bits_are_cleared_and_kept_as_on_source)
{
	static const char *const sg_names[] = { "c", "s", "k" };
	const size_t npub = sizeof(setid_names) / sizeof(setid_names[0]);
	char n[64], m[64];
	int diffs = 0, fd;

	make_tree();
	setid_make("n");
	setid_make("m");
	run_child(c_setid);
	run_child(c_setid_member);
	cr_assert_eq(chown(src_path(&M, "pub/n_chownme"), 0, 0), 0);
	cr_assert_eq(chown(mnt_path(&M, "pub/m_chownme"), 0, 0), 0);
	fd = open(src_path(&M, "pub/n_rtrunc"), O_WRONLY | O_TRUNC);
	cr_assert(fd >= 0 && close(fd) == 0);
	fd = open(mnt_path(&M, "pub/m_rtrunc"), O_WRONLY | O_TRUNC);
	cr_assert(fd >= 0 && close(fd) == 0);
	for (size_t i = 0; i < npub + sizeof(sg_names) / sizeof(sg_names[0]); i++) {
		struct stat sn, sm;

		if (i >= npub) {
			snprintf(n, sizeof(n), "sg/n_%s", sg_names[i - npub]);
			snprintf(m, sizeof(m), "sg/m_%s", sg_names[i - npub]);
		} else {
			snprintf(n, sizeof(n), "pub/n_%s", setid_names[i]);
			snprintf(m, sizeof(m), "pub/m_%s", setid_names[i]);
		}
		sn = lstat_ok(src_path(&M, n));
		sm = lstat_ok(src_path(&M, m));
		cr_log_info("%-12s native %05o %d:%d, through the mount %05o %d:%d", n,
			    sn.st_mode & 07777, (int)sn.st_uid, (int)sn.st_gid, sm.st_mode & 07777,
			    (int)sm.st_uid, (int)sm.st_gid);
		if ((sn.st_mode & 07777) != (sm.st_mode & 07777) || sn.st_uid != sm.st_uid ||
		    sn.st_gid != sm.st_gid) {
			fprintf(stderr, "posix_multiuser: %s differs: native %05o %d:%d, mount %05o "
				"%d:%d\n", m, sn.st_mode & 07777, (int)sn.st_uid, (int)sn.st_gid,
				sm.st_mode & 07777, (int)sm.st_uid, (int)sm.st_gid);
			diffs++;
		}
	}
	cr_assert_eq(diffs, 0, "%d set-id cases differ from SOURCE's own behaviour (above)",
		     diffs);
	/* and the native rules did act (else equality would prove little) */
	cr_assert_eq(lstat_ok(src_path(&M, "pub/n_rootsuid")).st_mode & 06000, 0);
	cr_assert_eq(lstat_ok(src_path(&M, "pub/n_chownme")).st_mode & 06000, 0);
	cr_assert_eq(lstat_ok(src_path(&M, "pub/n_otrunc")).st_mode & 06000, 0);
	cr_assert_eq(lstat_ok(src_path(&M, "pub/n_rtrunc")).st_mode & 06000, 06000);
	cr_assert_eq(lstat_ok(src_path(&M, "sg/n_s")).st_mode & 02000, 02000);
	cr_assert_eq(lstat_ok(src_path(&M, "sg/n_k")).st_mode & 02000, 02000);
	mnt_cr_finish(&M);
}

/* --- ctl_access=owner: tenants do not see each other in the control directory ------------ */

#define TENANT_COMM "tenant-secret"

struct ctl_paths {
	char dir[PATH_MAX];
	char file[5][PATH_MAX]; /* queues, stat.json, groups/%2F/procs, metrics, trace */
};

static int c_ctl_hidden(void *arg)
{
	const struct ctl_paths *p = arg;

	if (drop_privileges(NULL, 0))
		return 1;
	for (size_t i = 0; i < 5; i++) {
		errno = 0;
		if (expect_errno(open(p->file[i], O_RDONLY), EACCES, p->file[i]))
			return 1;
	}
	errno = 0;
	if (expect_errno((long)(opendir(p->dir) ? 0 : -1), EACCES, "opendir .cfqfs"))
		return 1;
	return 0;
}

Test(posix_multiuser, ctl_access_owner_hides_other_tenants_process_names)
{
	static struct mnt m2;
	static const char *const args[] = { "-o", "allow_other,ctl_access=owner,direct_io", NULL };
	static struct ctl_paths p;
	static const char *const rel[] = { "queues", "stat.json", "groups/%2F/procs", "metrics",
					   "trace" };
	char buf[16384];
	ssize_t n = -1;
	pid_t tenant;

	/* the suite's own mount is not needed here */
	mnt_teardown(&M);
	cr_assert_eq(mnt_setup(&m2, args), 0, "mount with ctl_access=owner");
	cr_assert_eq(mnt_put(src_path(&m2, "data"), "tenant data", 11, 0644), 0);
	tenant = fork(); /* no cr_ call before the child leaves: it would deadlock */
	if (tenant == 0) {
		char b[16];

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		prctl(PR_SET_NAME, TENANT_COMM);
		for (int i = 0; i < 2000; i++) { /* at most ~10 s, killed long before */
			int fd = open(mnt_path(&m2, "data"), O_RDONLY);

			if (fd >= 0) {
				if (pread(fd, b, sizeof(b), 0) < 0)
					_exit(2);
				close(fd);
			}
			usleep(5000);
		}
		_exit(0);
	}
	cr_assert_geq(tenant, 0);
	/* root (the owner) sees the tenant's queue by name: there is something to hide */
	for (int i = 0; i < 100; i++) {
		n = mnt_get(mnt_path(&m2, ".cfqfs/queues"), buf, sizeof(buf) - 1);
		if (n > 0) {
			buf[n] = '\0';
			if (strstr(buf, TENANT_COMM))
				break;
		}
		usleep(50000);
	}
	cr_assert(n > 0 && strstr(buf, TENANT_COMM), "root does not see %s in queues:\n%s",
		  TENANT_COMM, n > 0 ? buf : "(unreadable)");
	snprintf(p.dir, sizeof(p.dir), "%s", mnt_path(&m2, ".cfqfs"));
	for (size_t i = 0; i < 5; i++) {
		char r[64];

		snprintf(r, sizeof(r), ".cfqfs/%s", rel[i]);
		snprintf(p.file[i], sizeof(p.file[i]), "%s", mnt_path(&m2, r));
	}
	int rc = mnt_fork_run(c_ctl_hidden, &p, 10000);

	kill(tenant, SIGKILL);
	waitpid(tenant, NULL, 0);
	cr_assert_eq(rc, 0, "uid %d could read the control directory (see its stderr)", NOBODY);
	mnt_cr_finish(&m2);
}
