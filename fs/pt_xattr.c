/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt_xattr.c - extended attributes, when opts->xattr.
 *
 * O_PATH fds refuse f*xattr(), so the calls go through "/proc/self/fd/N" with the
 * path-based, following variants: following the magic link reaches the inode itself, and for a
 * symlink inode it stops at the symlink (it does not continue to the target). Without
 * opts->xattr every call answers ENOSYS, which the kernel remembers and stops asking.
 * Permission rules (trusted.* needs CAP_SYS_ADMIN, user.* only on files and directories,
 * security.capability needs CAP_SETFCAP) are applied by the kernel to the caller before the
 * request reaches us.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/xattr.h>

#include "pt_i.h"

/* Runs one xattr call against `ino`. Returns its result (>= 0) or -errno. */
enum xop { XOP_SET, XOP_GET, XOP_LIST, XOP_REMOVE };

static ssize_t xattr_call(fuse_req_t req, fuse_ino_t ino, enum xop op, const char *name,
			  void *value, size_t size, int flags)
{
	struct pt_fs *fs = pt__fs(req);
	struct pt_inode *in;
	char proc[32];
	ssize_t n = 0;

	if (!fs->opts.xattr)
		return -ENOSYS;
	in = pt_inode_get(fs->it, ino);
	if (!in)
		return -ESTALE;
	pt__proc_path(proc, sizeof(proc), in->fd);
	switch (op) {
	case XOP_SET:
		n = setxattr(proc, name, value, size, flags);
		break;
	case XOP_GET:
		n = getxattr(proc, name, value, size);
		break;
	case XOP_LIST:
		n = listxattr(proc, value, size);
		break;
	case XOP_REMOVE:
		n = removexattr(proc, name);
		break;
	}
	if (n == -1)
		n = -errno;
	pt_inode_put(fs->it, in);
	return n;
}

void pt__setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
		  size_t size, int flags)
{
	ssize_t n = xattr_call(req, ino, XOP_SET, name, (void *)value, size, flags);

	fuse_reply_err(req, n < 0 ? (int)-n : 0);
}

void pt__removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	ssize_t n = xattr_call(req, ino, XOP_REMOVE, name, NULL, 0, 0);

	fuse_reply_err(req, n < 0 ? (int)-n : 0);
}

/* get and list share the protocol: size 0 asks for the needed size, otherwise the data. */
static void get_or_list(fuse_req_t req, fuse_ino_t ino, enum xop op, const char *name,
			size_t size)
{
	char *buf = NULL;
	ssize_t n;

	if (size) {
		buf = malloc(size);
		if (!buf) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
	}
	n = xattr_call(req, ino, op, name, buf, size, 0);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

void pt__getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	get_or_list(req, ino, XOP_GET, name, size);
}

void pt__listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	get_or_list(req, ino, XOP_LIST, NULL, size);
}
