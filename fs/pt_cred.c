/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt_cred.c - acting as the caller while creating objects on SOURCE.
 *
 * Run as root with allow_other, a passthrough must create files owned by the caller, with the
 * caller's umask, and let the backing filesystem apply setgid-directory inheritance and default
 * ACLs. Creating as the caller does all of that at once, so the creating syscall runs with the
 * thread's fsuid/fsgid switched to the caller's:
 *   - setfsuid/setfsgid act on the calling thread only (raw syscalls; glibc's wrappers are the
 *     same syscalls, unlike setuid/setgroups which glibc broadcasts to every thread);
 *   - setgroups is issued as a raw syscall for the same reason, and only on the EACCES retry
 *     path, because reading the caller's groups costs a /proc read;
 *   - the umask lives in the fs_struct, which each session thread unshares once
 *     (unshare(CLONE_FS)), after which umask() is per-thread.
 * Permission checks proper are the kernel's (default_permissions), done with the caller's full
 * credentials before the request reaches us.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "pt_i.h"

/* Whether this thread has its own fs_struct: 0 not tried yet, 1 yes, -1 unshare failed. Each
 * thread unshares before its first umask(); a thread spawned by one that already unshared
 * shares that copy only until it unshares in turn, and it never calls umask() before. */
static _Thread_local int own_fs_struct;
/* This thread's umask once it has set one, (mode_t)-1 before (no umask has bits above 0777).
 * Its own fs_struct: nobody else changes it, so a run of creates by one caller costs one
 * umask() call, not one each. */
static _Thread_local mode_t umask_now = (mode_t)-1;

static bool thread_umask_ok(void)
{
	if (own_fs_struct == 0) {
		if (unshare(CLONE_FS) == 0) {
			own_fs_struct = 1;
		} else {
			int e = errno;

			own_fs_struct = -1;
			LOG_WARN("unshare(CLONE_FS): %s; applying umask by hand (default ACLs "
				 "then lose their say over the mode)", strerror(e));
		}
	}
	return own_fs_struct > 0;
}

/* The raw syscalls return the previous id and never fail visibly: read back to verify. */
static int set_fsuid(uid_t uid)
{
	syscall(SYS_setfsuid, uid);
	return (uid_t)syscall(SYS_setfsuid, (uid_t)-1) == uid ? 0 : -EPERM;
}

static int set_fsgid(gid_t gid)
{
	syscall(SYS_setfsgid, gid);
	return (gid_t)syscall(SYS_setfsgid, (gid_t)-1) == gid ? 0 : -EPERM;
}

int pt__cred_enter(struct pt_fs *fs, fuse_req_t req, mode_t *mode, struct pt_cred *c)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	int rc;

	c->switched = false;
	c->groups_set = false;
	c->uid = ctx->uid;
	c->gid = ctx->gid;
	if (thread_umask_ok()) {
		if (umask_now != ctx->umask) {
			umask(ctx->umask);
			umask_now = ctx->umask;
		}
	} else if (mode) {
		*mode &= ~ctx->umask;
	}

	if (!fs->as_caller || (ctx->uid == fs->euid && ctx->gid == fs->egid))
		return 0;
	/* Group first: it needs no privilege that dropping the fsuid would take away. */
	rc = set_fsgid(ctx->gid);
	if (rc)
		goto out_gid;
	rc = set_fsuid(ctx->uid);
	if (rc)
		goto out_gid;
	c->switched = true;
	return 0;

out_gid:
	set_fsgid(fs->egid);
	return rc;
}

int pt__cred_add_groups(struct pt_fs *fs, fuse_req_t req, struct pt_cred *c)
{
	gid_t small[32], *list = small;
	int n, rc;

	(void)fs;
	if (!c->switched)
		return -EACCES;
	n = fuse_req_getgroups(req, (int)(sizeof(small) / sizeof(small[0])), small);
	if (n < 0)
		return n; /* pid 0 or /proc unreadable: nothing better to try */
	if ((size_t)n > sizeof(small) / sizeof(small[0])) {
		int want = n;

		list = calloc((size_t)want, sizeof(*list));
		if (!list)
			return -ENOMEM;
		n = fuse_req_getgroups(req, want, list);
		if (n < 0 || n > want) {
			rc = n < 0 ? n : -EAGAIN;
			goto out_free;
		}
	}
	if (syscall(SYS_setgroups, (size_t)n, list) == -1) {
		rc = -errno;
		goto out_free;
	}
	c->groups_set = true;
	rc = 0;
out_free:
	if (list != small)
		free(list);
	return rc;
}

void pt__cred_leave(struct pt_fs *fs, struct pt_cred *c)
{
	/* User first: regaining fsuid 0 restores the capabilities the groups call needs. */
	if (c->switched && set_fsuid(fs->euid) != 0)
		abort();
	if (c->groups_set && syscall(SYS_setgroups, (size_t)fs->ngroups, fs->groups) == -1)
		abort();
	if (c->switched && set_fsgid(fs->egid) != 0)
		abort();
	c->switched = false;
	c->groups_set = false;
}
