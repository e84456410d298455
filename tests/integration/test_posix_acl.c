/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * posix_acl: POSIX ACLs on a root mount with -o allow_other are enforced as on SOURCE itself.
 *
 * The daemon acts as root on SOURCE, so only the kernel's check (FUSE_POSIX_ACL with
 * default_permissions) can honour an ACL. Every case is done twice, on the mount and on a twin
 * directly in SOURCE, and the outcomes (errno of an open by uid 65534 or 65533, getfacl's text)
 * must be the same. ACLs are set and read with the real setfacl and getfacl (package acl),
 * through the mount, as root and as an unprivileged owner.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mount.h"

#define NOBODY 65534
#define OTHER 65533 /* a second unprivileged user, no entry in /etc/passwd needed */

static struct mnt M;

static const char *const SETFACL = "/usr/bin/setfacl";
static const char *const GETFACL = "/usr/bin/getfacl";

static void need_tools(void)
{
	if (geteuid() != 0)
		cr_skip("ACL tests need root (to mount with allow_other and act as %d)", NOBODY);
	if (access(SETFACL, X_OK) || access(GETFACL, X_OK))
		cr_skip("ACL tests need setfacl and getfacl (Debian package acl; make test "
			"installs it)");
}

static void setup_with(const char *opts)
{
	const char *args[] = { "-o", opts, NULL };

	need_tools();
	mnt_cr_setup(&M, args);
}

static void setup(void)
{
	setup_with("allow_other");
}

static void teardown(void)
{
	mnt_cr_teardown(&M);
}

TestSuite(posix_acl, .init = setup, .fini = teardown, .timeout = 60);

/* ---- helpers ------------------------------------------------------------------------------ */

/* Runs setfacl with the arguments given (NULL-terminated, the path last); fails the test if
 * it does not exit 0. */
static void setfacl(const char *arg, ...)
{
	const char *argv[8] = { SETFACL };
	char err[1024] = "";
	int st = 0, n = 1, r;
	va_list ap;

	va_start(ap, arg);
	for (const char *a = arg; a && n < 7; a = va_arg(ap, const char *))
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;
	r = mnt_run(argv, 10000, &st, NULL, 0, err, sizeof(err));
	cr_assert(r == 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "setfacl %s ... %s: %s",
		  argv[1], argv[n - 1], err);
}

/* getfacl's entries for path, without its header (the name differs between the twins). */
static char *getfacl(const char *path)
{
	const char *argv[] = { GETFACL, "--omit-header", "--numeric", path, NULL };
	char *out = calloc(1, 4096);
	char err[1024] = "";
	int st = 0;
	int r;

	cr_assert_not_null(out);
	r = mnt_run(argv, 10000, &st, out, 4096, err, sizeof(err));
	cr_assert(r == 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "getfacl %s: %s", path, err);
	return out;
}

static void expect_same_acl(const char *rel_mnt, const char *rel_src)
{
	char *a = getfacl(mnt_path(&M, rel_mnt)), *b = getfacl(src_path(&M, rel_src));

	cr_expect_str_eq(a, b, "ACL of %s through the mount:\n%s\nnative twin %s:\n%s", rel_mnt,
			 a, rel_src, b);
	free(a);
	free(b);
}

/* What an unprivileged child does: open `path` with `flags` as `uid`, or create it. */
struct try {
	const char *path;
	int flags;
	uid_t uid;
	mode_t mode; /* for O_CREAT */
};

static int c_open(void *arg)
{
	const struct try *t = arg;
	int fd;

	if (setgroups(0, NULL) || setgid(t->uid) || setuid(t->uid))
		return 99;
	umask(022);
	fd = open(t->path, t->flags, t->mode);
	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

/* 0 if `uid` may open path with flags, else the errno (EACCES, ...). */
static int open_as(uid_t uid, const char *path, int flags)
{
	struct try t = { .path = path, .flags = flags, .uid = uid, .mode = 0644 };
	int r = mnt_fork_run(c_open, &t, 10000);

	cr_assert(r >= 0 && r != 99, "child for %s as %u failed (%d)", path, (unsigned)uid, r);
	return r;
}

/* Asserts that uid's open of rel with flags ends the same on the mount and on SOURCE, and
 * that this is `want` (0 or an errno). */
static void expect_open(uid_t uid, const char *rel, int flags, int want, const char *what)
{
	int on_mnt = open_as(uid, mnt_path(&M, rel), flags);
	int on_src = open_as(uid, src_path(&M, rel), flags);

	cr_expect_eq(on_src, want, "%s: native open of %s as %u gave %s (test premise)", what, rel,
		     (unsigned)uid, on_src ? strerror(on_src) : "success");
	cr_expect_eq(on_mnt, on_src, "%s: open of %s as %u through the mount: %s, natively: %s",
		     what, rel, (unsigned)uid, on_mnt ? strerror(on_mnt) : "success",
		     on_src ? strerror(on_src) : "success");
}

static void make_file(const char *rel, mode_t mode)
{
	cr_assert_eq(mnt_put(mnt_path(&M, rel), "secret\n", 7, mode), 0, "creating %s", rel);
	cr_assert_eq(chmod(mnt_path(&M, rel), mode), 0);
}

/* ---- tests -------------------------------------------------------------------------------- */

/* The case: root:root 0644 with u:nobody:--- is unreadable by nobody, natively and
 * through the mount (cfqfs used to print it and let nobody append). Others still read. */
Test(posix_acl, a_deny_entry_is_enforced_for_reads_and_writes)
{
	make_file("f", 0644);
	setfacl("-m", "u:65534:---", mnt_path(&M, "f"), NULL);
	expect_same_acl("f", "f");
	expect_open(NOBODY, "f", O_RDONLY, EACCES, "deny entry, read");
	expect_open(NOBODY, "f", O_WRONLY | O_APPEND, EACCES, "deny entry, append");
	expect_open(OTHER, "f", O_RDONLY, 0, "no entry, other::r--");
	cr_assert_eq(open_as(0, mnt_path(&M, "f"), O_RDWR), 0, "root is not bound by the ACL");
	mnt_cr_finish(&M);
}

/* An entry can also grant what the mode bits alone would not, and removing the ACL (setfacl
 * -b) through the mount takes the grant back at once: the kernel's cached ACL is dropped. */
Test(posix_acl, a_grant_entry_opens_and_removing_it_closes_again)
{
	make_file("g", 0600);
	expect_open(NOBODY, "g", O_RDONLY, EACCES, "mode 0600, no ACL");
	setfacl("-m", "u:65534:rw", mnt_path(&M, "g"), NULL);
	expect_same_acl("g", "g");
	expect_open(NOBODY, "g", O_RDWR, 0, "grant entry rw");
	expect_open(OTHER, "g", O_RDONLY, EACCES, "no entry, other::---");
	setfacl("-b", mnt_path(&M, "g"), NULL);
	expect_open(NOBODY, "g", O_RDONLY, EACCES, "ACL removed");
	mnt_cr_finish(&M);
}

/* chmod through the mount rewrites the mask (group bits of the mode), which then limits the
 * named entries as natively. */
Test(posix_acl, chmod_updates_the_mask_as_natively)
{
	make_file("m", 0664);
	setfacl("-m", "u:65534:rw", mnt_path(&M, "m"), NULL);
	cr_assert_eq(chmod(mnt_path(&M, "m"), 0640), 0);
	cr_assert_eq(chmod(src_path(&M, "m"), 0640), 0);
	expect_same_acl("m", "m");
	{
		char *a = getfacl(mnt_path(&M, "m"));

		cr_expect(strstr(a, "mask::r--") != NULL, "chmod 0640 left the mask: %s", a);
		free(a);
	}
	expect_open(NOBODY, "m", O_RDONLY, 0, "mask r--, read");
	expect_open(NOBODY, "m", O_WRONLY, EACCES, "mask r--, write");
	mnt_cr_finish(&M);
}

/* A default ACL on a directory is inherited by what is created in it through the mount, as
 * by a native create with the same mode and umask: files get it as their access ACL,
 * directories as both. The named user may then create there although the mode says 0755. */
Test(posix_acl, default_acls_are_inherited_by_new_files_and_directories)
{
	struct try t = { .flags = O_WRONLY | O_CREAT | O_EXCL, .uid = NOBODY, .mode = 0640 };

	/* The twins: "d" made through the mount, "n" natively in SOURCE, the same ACLs on both. */
	cr_assert_eq(mkdir(mnt_path(&M, "d"), 0755), 0);
	cr_assert_eq(mkdir(src_path(&M, "n"), 0755), 0);
	cr_assert_eq(chmod(src_path(&M, "n"), 0755), 0);
	cr_assert_eq(chmod(mnt_path(&M, "d"), 0755), 0);
	setfacl("-m", "u:65534:rwx", "-d", "-m", "u:65534:rwx,g::r-x,o::---", mnt_path(&M, "d"),
		NULL);
	setfacl("-m", "u:65534:rwx", "-d", "-m", "u:65534:rwx,g::r-x,o::---", src_path(&M, "n"),
		NULL);
	expect_same_acl("d", "n");

	/* Root creates a file and a directory in each. */
	cr_assert_eq(mnt_put(mnt_path(&M, "d/f"), "x", 1, 0644), 0);
	cr_assert_eq(mnt_put(src_path(&M, "n/f"), "x", 1, 0644), 0);
	cr_assert_eq(mkdir(mnt_path(&M, "d/sub"), 0777), 0);
	cr_assert_eq(mkdir(src_path(&M, "n/sub"), 0777), 0);
	expect_same_acl("d/f", "n/f");
	expect_same_acl("d/sub", "n/sub");
	{
		char *a = getfacl(mnt_path(&M, "d/sub"));

		cr_expect(strstr(a, "default:user:65534:rwx") != NULL,
			  "a new directory did not inherit the default ACL: %s", a);
		free(a);
	}

	/* The named user may create in d (mode 0755 alone would refuse it), and what it creates
	 * carries the inherited ACL too. OTHER may not: the default says o::---, and d's own
	 * other::r-x gives no write. */
	t.path = mnt_path(&M, "d/by_nobody");
	cr_expect_eq(mnt_fork_run(c_open, &t, 10000), 0, "nobody creating in d through the mount");
	t.path = src_path(&M, "n/by_nobody");
	cr_expect_eq(mnt_fork_run(c_open, &t, 10000), 0, "nobody creating in n natively");
	expect_same_acl("d/by_nobody", "n/by_nobody");
	expect_open(OTHER, "d/f", O_RDONLY, EACCES, "inherited o::---");
	t.uid = OTHER;
	t.path = mnt_path(&M, "d/by_other");
	cr_expect_eq(mnt_fork_run(c_open, &t, 10000), EACCES, "other creating in d");
	mnt_cr_finish(&M);
}

/* An unprivileged owner sets an ACL on its own file through the mount (setfacl run as that
 * user), and it binds others as natively. */
static int c_setfacl_as_nobody(void *arg)
{
	const char *path = arg;

	if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY))
		return 99;
	execl(SETFACL, SETFACL, "-m", "u:65533:---,o::r--", path, (char *)NULL);
	return 98;
}

Test(posix_acl, an_unprivileged_owner_sets_an_acl_on_its_own_file)
{
	struct try t = { .flags = O_WRONLY | O_CREAT | O_EXCL, .uid = NOBODY, .mode = 0644 };

	cr_assert_eq(mkdir(mnt_path(&M, "pub"), 0777), 0);
	cr_assert_eq(chmod(mnt_path(&M, "pub"), 01777), 0);
	t.path = mnt_path(&M, "pub/mine");
	cr_assert_eq(mnt_fork_run(c_open, &t, 10000), 0, "nobody creating pub/mine");
	cr_assert_eq(mnt_fork_run(c_setfacl_as_nobody, (void *)mnt_path(&M, "pub/mine"), 10000), 0,
		     "setfacl by the owner through the mount");
	{
		char *a = getfacl(mnt_path(&M, "pub/mine"));

		cr_expect(strstr(a, "user:65533:---") != NULL, "the owner's ACL is not there: %s",
			  a);
		free(a);
	}
	expect_open(OTHER, "pub/mine", O_RDONLY, EACCES, "owner's deny entry");
	expect_open(OTHER - 1, "pub/mine", O_RDONLY, 0, "other::r--");
	/* A user who is not the owner may not change an ACL, through the mount as natively. */
	make_file("pub/roots", 0644);
	cr_assert_eq(mnt_put(src_path(&M, "pub/roots_n"), "x", 1, 0644), 0);
	cr_expect_neq(mnt_fork_run(c_setfacl_as_nobody, (void *)mnt_path(&M, "pub/roots"), 10000),
		      0, "nobody changed the ACL of root's file through the mount");
	cr_expect_neq(mnt_fork_run(c_setfacl_as_nobody, (void *)src_path(&M, "pub/roots_n"),
				   10000),
		      0, "natively nobody may not change root's ACL (test premise)");
	expect_same_acl("pub/roots", "pub/roots_n");
	mnt_cr_finish(&M);
}

/* ---- acl=false ---------------------------------------------------------------------------- */

static void setup_noacl(void)
{
	setup_with("allow_other,acl=false");
}

TestSuite(posix_acl_off, .init = setup_noacl, .fini = teardown, .timeout = 60);

/* As documented: with acl=false only the mode bits are checked, so a deny entry denies
 * nothing through the mount (it still does natively), and the ACL itself is still stored and
 * shown, since xattrs pass through. This pins that the option does what it says. */
Test(posix_acl_off, only_the_mode_bits_are_checked_and_the_acl_is_still_shown)
{
	char *a;

	make_file("f", 0644);
	setfacl("-m", "u:65534:---", mnt_path(&M, "f"), NULL);
	a = getfacl(mnt_path(&M, "f"));
	cr_expect(strstr(a, "user:65534:---") != NULL, "getfacl through the mount: %s", a);
	free(a);
	cr_expect_eq(open_as(NOBODY, src_path(&M, "f"), O_RDONLY), EACCES,
		     "natively the entry denies (test premise)");
	cr_expect_eq(open_as(NOBODY, mnt_path(&M, "f"), O_RDONLY), 0,
		     "acl=false: the mode bits 0644 allow nobody to read");
	cr_expect(mnt_log_count(&M, "POSIX ACLs are not enforced (acl=false)") >= 1,
		  "the daemon did not say that ACLs are off");
	mnt_cr_finish(&M);
}
