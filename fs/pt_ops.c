/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt_ops.c - the low-level FUSE operations on entries, attributes and regular files, and the
 * operations table.
 *
 * Every handler decodes its request, calls a helper returning 0 or -errno and replies exactly
 * once. Metadata runs inline on the session thread, always through *at() calls on held O_PATH
 * fds and never by building paths (the one exception is "/proc/self/fd/N", which turns an
 * O_PATH fd back into something chmod/truncate/open accept). Nothing in the daemon follows a
 * symlink on SOURCE: lookups use O_PATH|O_NOFOLLOW, creation O_NOFOLLOW, stat
 * AT_SYMLINK_NOFOLLOW, and /proc re-opens are done only on non-symlink inodes.
 *
 * Control directory: node ids with the top bit set (ctl_owns()) belong to ctl.c. Handlers on
 * inodes forward them there first; operations that would create, remove, rename or link
 * anything inside it answer EPERM (CTL_GUARD_EPERM), as documented in ctl.h.
 *
 * Data requests (read, write_buf, fsync/fdatasync, copy_file_range, fallocate) are classified
 * and handed to the executor, which replies. What else runs inline touches no file data, or
 * only metadata (README "What the scheduler sees"): lseek (SEEK_DATA/SEEK_HOLE read the
 * extent map), flush (close-time errors), setattr's size changes (sparse on the filesystems
 * cfqfs supports), directories and xattrs.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "classify.h"
#include "fdcap.h"
#include "log.h"
#include "pt_i.h"
#include "rqmap.h"

/* ---------------------------------------------------------------------------------------- */
/* Small shared helpers                                                                      */

void pt__proc_path(char *buf, size_t size, int fd)
{
	snprintf(buf, size, "/proc/self/fd/%d", fd);
}

bool pt__name_ok(const char *name)
{
	return name[0] != '\0' && !strchr(name, '/') && strcmp(name, ".") != 0 &&
	       strcmp(name, "..") != 0;
}

bool pt__is_ctl(const struct pt_fs *fs, const struct pt_inode *parent, const char *name)
{
	return parent->nodeid == FUSE_ROOT_ID && fs->opts.ctl_dir[0] != '\0' &&
	       strcmp(name, fs->opts.ctl_dir) == 0;
}

static void fill_entry_timeouts(const struct pt_fs *fs, struct fuse_entry_param *e)
{
	e->attr_timeout = fs->opts.attr_timeout;
	e->entry_timeout = fs->opts.entry_timeout;
	e->generation = 0; /* node ids are never reused */
}

/* [s] between two warnings that the descriptor limit stops lookups */
#define FD_LIMIT_WARN_SECS 60

/* Out of descriptors, every open and every lookup of a new inode by every caller fails
 * (EMFILE) until the kernel forgets inodes: say why, at most once a minute. */
void pt__warn_fd_limit(struct pt_fs *fs, int rc)
{
	static _Atomic long long last;
	long long now, prev;
	struct rlimit rl = { 0 };

	/* every failed lookup comes here (misses are common): nothing else to do for them */
	if (rc != -EMFILE && rc != -ENFILE)
		return;
	now = (long long)time(NULL);
	prev = atomic_load(&last);
	if (now - prev < FD_LIMIT_WARN_SECS || !atomic_compare_exchange_strong(&last, &prev, now))
		return;
	(void)getrlimit(RLIMIT_NOFILE, &rl);
	LOG_WARN("opens and lookups fail: %s. The daemon holds one descriptor per inode the "
		 "kernel caches (%zu now) and per open file, within RLIMIT_NOFILE %llu less a "
		 "reserve: raise it (LimitNOFILE= of the unit, ulimit -Hn) or run with "
		 "CAP_SYS_RESOURCE (then up to fs.nr_open)",
		 strerror(-rc), pt_itable_count(fs->it), (unsigned long long)rl.rlim_cur);
}

/* pt__lookup_entry(); `made`: the caller has just made the name (pt_inode_lookup_made). */
static int lookup_entry(struct pt_fs *fs, struct pt_inode *dir, const char *name, bool made,
			struct fuse_entry_param *e)
{
	int rc;

	memset(e, 0, sizeof(*e));
	rc = made ? pt_inode_lookup_made(fs->it, dir, name, &e->attr, &e->ino)
		  : pt_inode_lookup(fs->it, dir, name, &e->attr, &e->ino);
	if (rc == 0)
		fill_entry_timeouts(fs, e);
	else
		pt__warn_fd_limit(fs, rc);
	return rc;
}

int pt__lookup_entry(struct pt_fs *fs, fuse_req_t req, struct pt_inode *dir, const char *name,
		     struct fuse_entry_param *e)
{
	(void)req;
	return lookup_entry(fs, dir, name, false, e);
}

/* Replies attributes, with the inode number shown through the mount. */
static void reply_attr(struct pt_fs *fs, fuse_req_t req, struct stat *st)
{
	st->st_ino = pt_inode_shown_ino(fs->it, st->st_dev, st->st_ino);
	fuse_reply_attr(req, st, fs->opts.attr_timeout);
}

/* Replies an entry (with the inode number shown through the mount; e keeps the backing one);
 * if the kernel has gone away (interrupted request), the reference the entry carried is
 * dropped again so the inode does not leak. */
static void reply_entry(struct pt_fs *fs, fuse_req_t req, const struct fuse_entry_param *e)
{
	struct fuse_entry_param shown = *e;

	shown.attr.st_ino = pt_inode_shown_ino(fs->it, e->attr.st_dev, e->attr.st_ino);
	if (fuse_reply_entry(req, &shown) == -ENOENT && e->ino)
		pt_inode_forget(fs->it, e->ino, 1);
}

static void reply_err(fuse_req_t req, int rc)
{
	assert(rc <= 0);
	fuse_reply_err(req, -rc);
}

/* Flags for the backing open of a regular file, from the kernel's flags. */
static int backing_open_flags(const struct pt_fs *fs, int flags)
{
	/* The kernel already resolved the path and created the file: these have no meaning for
	 * the backing open. O_DIRECT is dropped because the executor does I/O with ordinary
	 * buffers; the caller's direct-I/O request is honoured by the kernel (no FUSE page
	 * cache) and still makes the handle's writes sync for the scheduler. */
	flags &= ~(O_CREAT | O_EXCL | O_NOCTTY | O_DIRECT | O_NOFOLLOW | O_PATH);
	if (fs->writeback) {
		/* The page cache may need to read to fill partial pages of a write-only handle,
		 * and it computes append offsets itself (O_APPEND on the backing fd would make
		 * every pwrite land at the end, whatever offset the kernel chose). */
		if ((flags & O_ACCMODE) == O_WRONLY)
			flags = (flags & ~O_ACCMODE) | O_RDWR;
		flags &= ~O_APPEND;
	}
	return flags | O_CLOEXEC;
}

/* Fills the open reply's cache flags and never FOPEN_PASSTHROUGH: a kernel passthrough would
 * let I/O bypass the scheduler. */
static void set_open_flags(const struct pt_fs *fs, struct fuse_file_info *fi)
{
	fi->direct_io = fs->opts.direct_io;
	fi->keep_cache = fs->opts.kernel_cache && !fs->opts.direct_io;
}

static struct pt_file *file_new(fuse_req_t req, int fd, int kernel_flags, dev_t dev, ino_t ino)
{
	struct pt_file *pf = calloc(1, sizeof(*pf));

	if (!pf)
		return NULL;
	pf->fd = fd;
	atomic_init(&pf->plain_fd, -1);
	atomic_init(&pf->fsynced, false);
	pf->flags = kernel_flags;
	pf->dev = dev;
	pf->ino = ino;
	pf->file_id = pt_inode_file_id(dev, ino);
	pt_classify_open(pt__fs(req)->opts.cls, req, pf->file_id, fd, &pf->opener);
	return pf;
}

static void file_free(struct pt_file *pf)
{
	int plain = atomic_load(&pf->plain_fd);

	if (plain >= 0)
		close(plain);
	close(pf->fd);
	pt_classify_release(&pf->opener);
	free(pf);
}

/* Requests on control nodes that change the tree: refused, whatever the node. */
#define CTL_GUARD_EPERM(ino)                                                                 \
	do {                                                                                 \
		if (ctl_owns(ino)) {                                                         \
			fuse_reply_err(req, EPERM);                                          \
			return;                                                              \
		}                                                                            \
	} while (0)

/* Requests on control nodes that have no meaning there: answered with `err`. */
#define CTL_GUARD_ERR(ino, err)                                                              \
	do {                                                                                 \
		if (ctl_owns(ino)) {                                                         \
			fuse_reply_err(req, (err));                                          \
			return;                                                              \
		}                                                                            \
	} while (0)

/* ---------------------------------------------------------------------------------------- */
/* Entries                                                                                   */

/* ".." of the control directory: the mount root. */
static void ctl_parent_lookup(struct pt_fs *fs, fuse_req_t req)
{
	struct fuse_entry_param e;
	int rc = pt__lookup_entry(fs, req, pt_itable_root(fs->it), ".", &e);

	if (rc)
		reply_err(req, rc);
	else
		reply_entry(fs, req, &e);
}

static void ll_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct pt_fs *fs = pt__fs(req);
	struct fuse_entry_param e;
	struct pt_inode *dir;
	int rc;

	if (ctl_owns(parent)) {
		if (fs->ctl && ctl_is_root_dotdot(parent, name))
			ctl_parent_lookup(fs, req);
		else
			ctl_lookup(fs->ctl, req, parent, name);
		return;
	}
	dir = pt_inode_get(fs->it, parent);
	if (!dir) {
		reply_err(req, -ESTALE);
		return;
	}
	if (pt__is_ctl(fs, dir, name)) {
		memset(&e, 0, sizeof(e));
		rc = pt_ctl_lookup(fs, req, &e);
	} else {
		rc = pt__lookup_entry(fs, req, dir, name, &e);
	}
	pt_inode_put(fs->it, dir);

	if (rc == 0) {
		reply_entry(fs, req, &e);
	} else if (rc == -ENOENT && fs->opts.negative_timeout > 0) {
		/* A negative entry (ino 0) lets the kernel cache the miss; by default it is not
		 * (a file made on SOURCE directly would stay invisible that long). */
		memset(&e, 0, sizeof(e));
		e.entry_timeout = fs->opts.negative_timeout;
		fuse_reply_entry(req, &e);
	} else {
		reply_err(req, rc);
	}
}

static void ll_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	pt_inode_forget(pt__fs(req)->it, ino, nlookup);
	fuse_reply_none(req);
}

static void ll_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct pt_fs *fs = pt__fs(req);
	size_t i;

	for (i = 0; i < count; i++)
		pt_inode_forget(fs->it, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

/* Checks the common preconditions of an operation creating or removing `name` in `dir`. */
static int check_dir_name(const struct pt_fs *fs, const struct pt_inode *dir, const char *name)
{
	if (!pt__name_ok(name))
		return -EINVAL;
	if (!S_ISDIR(dir->type))
		return -ENOTDIR;
	if (pt__is_ctl(fs, dir, name))
		return -EPERM; /* reserved for the control directory */
	return 0;
}

/* Creates a non-regular object (or a regular one via mknod) as the caller. */
static int make_node(int dirfd, const char *name, mode_t mode, dev_t rdev, const char *link)
{
	int rc;

	if (link)
		rc = symlinkat(link, dirfd, name);
	else if (S_ISDIR(mode))
		rc = mkdirat(dirfd, name, mode & ~S_IFMT);
	else
		rc = mknodat(dirfd, name, mode, rdev);
	return rc == -1 ? -errno : 0;
}

/*
 * The new node could not be looked up (out of descriptors: EMFILE): the caller gets an error,
 * so the node should not stay, as a failed mkdir(2) creates nothing. It is ours (creation
 * fails on an existing name), unless renamed over in between: a directory goes only while
 * empty, anything else only if it still has the type we made.
 */
static void undo_node(int dirfd, const char *name, mode_t mode)
{
	struct stat st;

	if (S_ISDIR(mode)) {
		(void)unlinkat(dirfd, name, AT_REMOVEDIR);
		return;
	}
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    (st.st_mode & S_IFMT) == (mode & S_IFMT))
		(void)unlinkat(dirfd, name, 0);
}

/*
 * A non-directory asked for with S_ISGID: the kernel kept the bit, having checked the caller's
 * groups (it strips it from a caller outside the new file's group). The backing filesystem
 * checks again, as the caller the credentials say, so it must see all of the caller's groups,
 * not only the fsgid: otherwise a member through a supplementary group loses the bit in a
 * setgid directory. Loading the groups costs a /proc read, so only here (and on EACCES).
 */
static void sgid_groups(struct pt_fs *fs, fuse_req_t req, mode_t mode, struct pt_cred *c)
{
	if ((mode & S_ISGID) && !S_ISDIR(mode))
		(void)pt__cred_add_groups(fs, req, c);
}

/* mknod, mkdir and symlink: create as the caller, then look the new entry up. */
static void create_node(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
			dev_t rdev, const char *link)
{
	struct pt_fs *fs = pt__fs(req);
	struct fuse_entry_param e;
	struct pt_inode *dir;
	struct pt_cred c;
	int rc;

	CTL_GUARD_EPERM(parent);
	dir = pt_inode_get(fs->it, parent);
	if (!dir) {
		reply_err(req, -ESTALE);
		return;
	}
	rc = check_dir_name(fs, dir, name);
	if (rc)
		goto out_put;
	rc = pt__cred_enter(fs, req, link ? NULL : &mode, &c);
	if (rc)
		goto out_put;
	sgid_groups(fs, req, mode, &c);
	rc = make_node(dir->fd, name, mode, rdev, link);
	if (rc == -EACCES && pt__cred_add_groups(fs, req, &c) == 0)
		rc = make_node(dir->fd, name, mode, rdev, link);
	pt__cred_leave(fs, &c);
	if (rc)
		goto out_put;
	rc = lookup_entry(fs, dir, name, true, &e);
	if (rc)
		undo_node(dir->fd, name, mode);

out_put:
	pt_inode_put(fs->it, dir);
	if (rc)
		reply_err(req, rc);
	else
		reply_entry(fs, req, &e);
}

static void ll_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		     dev_t rdev)
{
	create_node(req, parent, name, mode, rdev, NULL);
}

static void ll_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	create_node(req, parent, name, S_IFDIR | (mode & 07777), 0, NULL);
}

static void ll_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	create_node(req, parent, name, S_IFLNK | 0777, 0, link);
}

static void remove_entry(fuse_req_t req, fuse_ino_t parent, const char *name, int flags)
{
	struct pt_fs *fs = pt__fs(req);
	struct pt_inode *dir;
	int rc;

	CTL_GUARD_EPERM(parent);
	dir = pt_inode_get(fs->it, parent);
	if (!dir) {
		reply_err(req, -ESTALE);
		return;
	}
	rc = check_dir_name(fs, dir, name);
	if (rc == 0 && unlinkat(dir->fd, name, flags) == -1)
		rc = -errno;
	pt_inode_put(fs->it, dir);
	reply_err(req, rc);
}

static void ll_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_entry(req, parent, name, 0);
}

static void ll_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_entry(req, parent, name, AT_REMOVEDIR);
}

static void ll_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	struct pt_fs *fs = pt__fs(req);
	struct pt_inode *odir, *ndir = NULL;
	int rc;

	CTL_GUARD_EPERM(parent);
	CTL_GUARD_EPERM(newparent);
	odir = pt_inode_get(fs->it, parent);
	if (!odir) {
		rc = -ESTALE;
		goto out;
	}
	ndir = pt_inode_get(fs->it, newparent);
	if (!ndir) {
		rc = -ESTALE;
		goto out_put;
	}
	rc = check_dir_name(fs, odir, name);
	if (rc == 0)
		rc = check_dir_name(fs, ndir, newname);
	/* RENAME_NOREPLACE, RENAME_EXCHANGE (and WHITEOUT) go to the backing filesystem, which
	 * rejects what it does not support. */
	if (rc == 0 && renameat2(odir->fd, name, ndir->fd, newname, flags) == -1)
		rc = -errno;
out_put:
	pt_inode_put(fs->it, ndir);
	pt_inode_put(fs->it, odir);
out:
	reply_err(req, rc);
}

static int do_link(struct pt_inode *in, struct pt_inode *dir, const char *name)
{
	char proc[32];

	/* AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH; without it go through the /proc link, which
	 * linkat follows only with AT_SYMLINK_FOLLOW (reaching the inode, not a symlink target). */
	if (linkat(in->fd, "", dir->fd, name, AT_EMPTY_PATH) == 0)
		return 0;
	if (errno != ENOENT && errno != EPERM)
		return -errno;
	pt__proc_path(proc, sizeof(proc), in->fd);
	return linkat(AT_FDCWD, proc, dir->fd, name, AT_SYMLINK_FOLLOW) == -1 ? -errno : 0;
}

static void ll_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct pt_fs *fs = pt__fs(req);
	struct pt_inode *in, *dir = NULL;
	struct fuse_entry_param e;
	int rc;

	CTL_GUARD_EPERM(ino);
	CTL_GUARD_EPERM(newparent);
	memset(&e, 0, sizeof(e));
	in = pt_inode_get(fs->it, ino);
	if (!in) {
		rc = -ESTALE;
		goto out;
	}
	dir = pt_inode_get(fs->it, newparent);
	if (!dir) {
		rc = -ESTALE;
		goto out_put;
	}
	rc = check_dir_name(fs, dir, newname);
	if (rc)
		goto out_put;
	if (S_ISDIR(in->type)) {
		rc = -EPERM;
		goto out_put;
	}
	rc = do_link(in, dir, newname);
	if (rc)
		goto out_put;
	rc = pt_inode_ref(fs->it, in, &e.attr, &e.ino);
	if (rc == 0)
		fill_entry_timeouts(fs, &e);
	else
		(void)unlinkat(dir->fd, newname, 0); /* a failed link leaves no name behind */
out_put:
	pt_inode_put(fs->it, dir);
	pt_inode_put(fs->it, in);
out:
	if (rc)
		reply_err(req, rc);
	else
		reply_entry(fs, req, &e);
}

/* ---------------------------------------------------------------------------------------- */
/* Attributes                                                                                */

static void ll_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct pt_fs *fs = pt__fs(req);
	struct pt_inode *in;
	struct stat st;
	int rc = 0;

	(void)fi;
	if (ctl_owns(ino)) {
		ctl_getattr(fs->ctl, req, ino);
		return;
	}
	in = pt_inode_get(fs->it, ino);
	if (!in) {
		reply_err(req, -ESTALE);
		return;
	}
	if (fstatat(in->fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) == -1)
		rc = -errno;
	pt_inode_put(fs->it, in);
	if (rc)
		reply_err(req, rc);
	else
		reply_attr(fs, req, &st);
}

static int set_size(const struct pt_inode *in, int hfd, off_t size)
{
	char proc[32];
	int fd, rc = 0;

	if (hfd >= 0) {
		if (ftruncate(hfd, size) == 0)
			return 0;
		/* A handle opened read-only (possible for the kernel's own truncations) cannot
		 * truncate: fall back to a fresh write open below. */
		if (errno != EBADF && errno != EINVAL)
			return -errno;
	}
	if (!S_ISREG(in->type))
		return S_ISDIR(in->type) ? -EISDIR : -EINVAL;
	pt__proc_path(proc, sizeof(proc), in->fd);
	/* O_NONBLOCK: never hang on a FIFO, should one ever get here. */
	fd = open(proc, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd == -1)
		return -errno;
	if (ftruncate(fd, size) == -1)
		rc = -errno;
	close(fd);
	return rc;
}

static int set_times(const struct pt_inode *in, int hfd, const struct stat *attr, int valid)
{
	struct timespec tv[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_nsec = UTIME_OMIT}};

	if (valid & FUSE_SET_ATTR_ATIME_NOW)
		tv[0].tv_nsec = UTIME_NOW;
	else if (valid & FUSE_SET_ATTR_ATIME)
		tv[0] = attr->st_atim;
	if (valid & FUSE_SET_ATTR_MTIME_NOW)
		tv[1].tv_nsec = UTIME_NOW;
	else if (valid & FUSE_SET_ATTR_MTIME)
		tv[1] = attr->st_mtim;

	if (hfd >= 0)
		return futimens(hfd, tv) == -1 ? -errno : 0;
	/* Works on O_PATH fds, symlinks included (AT_EMPTY_PATH, Linux >= 5.8). */
	if (utimensat(in->fd, "", tv, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) == 0)
		return 0;
	if (errno != EINVAL || S_ISLNK(in->type))
		return -errno;
	{
		char proc[32];

		pt__proc_path(proc, sizeof(proc), in->fd);
		return utimensat(AT_FDCWD, proc, tv, 0) == -1 ? -errno : 0;
	}
}

static int do_setattr(struct pt_inode *in, const struct stat *attr, int valid,
		      const struct fuse_file_info *fi)
{
	/* fi is a pt_file only on regular files (the kernel sends it for ftruncate/O_TRUNC). */
	int hfd = (fi && S_ISREG(in->type)) ? pt__file(fi)->fd : -1;
	int rc;

	/* Ownership before mode: chown clears set-id bits, and a request setting both wants
	 * the mode it names. */
	if (valid & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) {
		uid_t uid = (valid & FUSE_SET_ATTR_UID) ? attr->st_uid : (uid_t)-1;
		gid_t gid = (valid & FUSE_SET_ATTR_GID) ? attr->st_gid : (gid_t)-1;

		if (fchownat(in->fd, "", uid, gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) == -1)
			return -errno;
	}
	if (valid & FUSE_SET_ATTR_MODE) {
		char proc[32];

		if (S_ISLNK(in->type))
			return -EOPNOTSUPP; /* chmod through /proc would reach the target */
		pt__proc_path(proc, sizeof(proc), in->fd);
		rc = hfd >= 0 ? fchmod(hfd, attr->st_mode & 07777)
			      : chmod(proc, attr->st_mode & 07777);
		if (rc == -1)
			return -errno;
	}
	if (valid & FUSE_SET_ATTR_SIZE) {
		rc = set_size(in, hfd, attr->st_size);
		if (rc)
			return rc;
	}
	if (valid & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_ATIME_NOW |
		     FUSE_SET_ATTR_MTIME_NOW)) {
		rc = set_times(in, hfd, attr, valid);
		if (rc)
			return rc;
	}
	return 0;
}

static void ll_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int valid,
		       struct fuse_file_info *fi)
{
	struct pt_fs *fs = pt__fs(req);
	struct pt_inode *in;
	struct stat st;
	int rc;

	if (ctl_owns(ino)) {
		ctl_setattr(fs->ctl, req, ino, attr, valid);
		return;
	}
	in = pt_inode_get(fs->it, ino);
	if (!in) {
		reply_err(req, -ESTALE);
		return;
	}
	rc = do_setattr(in, attr, valid, fi);
	if (rc == 0 && fstatat(in->fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) == -1)
		rc = -errno;
	pt_inode_put(fs->it, in);
	if (rc)
		reply_err(req, rc);
	else
		reply_attr(fs, req, &st);
}

static void ll_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct pt_fs *fs = pt__fs(req);
	char buf[PATH_MAX + 1];
	struct pt_inode *in;
	ssize_t n;
	int rc = 0;

	CTL_GUARD_ERR(ino, EINVAL); /* no symlinks there */
	in = pt_inode_get(fs->it, ino);
	if (!in) {
		reply_err(req, -ESTALE);
		return;
	}
	n = readlinkat(in->fd, "", buf, sizeof(buf));
	if (n == -1)
		rc = -errno;
	else if ((size_t)n >= sizeof(buf))
		rc = -ENAMETOOLONG;
	else
		buf[n] = '\0';
	pt_inode_put(fs->it, in);
	if (rc)
		reply_err(req, rc);
	else
		fuse_reply_readlink(req, buf);
}

static void ll_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct pt_fs *fs = pt__fs(req);
	struct pt_inode *in;
	struct statvfs sv;
	int rc = 0;

	/* An unknown id still has an answer: the filesystem of SOURCE. */
	in = pt_inode_get(fs->it, ino);
	if (fstatvfs(in ? in->fd : pt_itable_root(fs->it)->fd, &sv) == -1)
		rc = -errno;
	pt_inode_put(fs->it, in);
	if (rc)
		reply_err(req, rc);
	else
		fuse_reply_statfs(req, &sv);
}

static int do_access(struct pt_fs *fs, fuse_req_t req, struct pt_inode *in, int mask)
{
	struct pt_cred c;
	int rc;

	/* default_permissions makes the kernel answer access(2) itself; this serves mounts
	 * without it, checking as the caller would on SOURCE (AT_EACCESS: use the fsuid). */
	rc = pt__cred_enter(fs, req, NULL, &c);
	if (rc)
		return rc;
	rc = faccessat(in->fd, "", mask, AT_EMPTY_PATH | AT_EACCESS) == -1 ? -errno : 0;
	if (rc == -EACCES && pt__cred_add_groups(fs, req, &c) == 0)
		rc = faccessat(in->fd, "", mask, AT_EMPTY_PATH | AT_EACCESS) == -1 ? -errno : 0;
	pt__cred_leave(fs, &c);
	return rc;
}

static void ll_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	struct pt_fs *fs = pt__fs(req);
	struct pt_inode *in;
	int rc;

	if (ctl_owns(ino)) {
		ctl_access(fs->ctl, req, ino, mask);
		return;
	}
	in = pt_inode_get(fs->it, ino);
	if (!in) {
		reply_err(req, -ESTALE);
		return;
	}
	rc = do_access(fs, req, in, mask);
	pt_inode_put(fs->it, in);
	reply_err(req, rc);
}

/* ---------------------------------------------------------------------------------------- */
/* Regular files                                                                             */

/*
 * open(O_TRUNC) by a caller without CAP_FSETID clears set-user-ID, and set-group-ID where group
 * execute is set, as every truncation does (the kernel's should_remove_suid rule). With atomic
 * O_TRUNC the kernel sends no SETATTR and leaves that to the server, and the truncating open
 * here runs as root, which keeps both bits: so they are cleared here. The request does not
 * carry the caller's capabilities; uid 0 stands for CAP_FSETID.
 */
static void trunc_kill_suid(fuse_req_t req, int fd)
{
	struct stat st;
	mode_t kill;

	if (fuse_req_ctx(req)->uid == 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		return;
	kill = st.st_mode & S_ISUID;
	if ((st.st_mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP))
		kill |= S_ISGID;
	if (kill && fchmod(fd, st.st_mode & 07777 & ~kill) != 0)
		LOG_WARN("open(O_TRUNC): could not clear set-id bits of inode %llu: %s",
			 (unsigned long long)st.st_ino, strerror(errno));
}

/*
 * For a descriptor just kept (fdcap_keep) whose opener asked for O_TRUNC: truncates only now,
 * by reopening the same inode through /proc with the caller's flags and putting that
 * description in fd's slot. Opening with O_TRUNC at once would truncate the file even when
 * fdcap then refuses the descriptor, where a native EMFILE truncates nothing. The kernel's
 * checks for O_TRUNC apply to the reopen as they would have to the open. Returns fd, or -1
 * with errno set and fd closed; a failed open (-1) passes through.
 */
static int trunc_kept(int fd, int flags)
{
	char proc[32];
	int tfd, e;

	if (fd < 0 || !(flags & O_TRUNC))
		return fd;
	pt__proc_path(proc, sizeof(proc), fd);
	tfd = open(proc, (flags & ~(O_CREAT | O_EXCL | O_NOFOLLOW)) | O_CLOEXEC);
	if (tfd >= 0 && dup3(tfd, fd, O_CLOEXEC) >= 0) {
		close(tfd);
		return fd;
	}
	e = errno;
	if (tfd >= 0)
		close(tfd);
	close(fd);
	errno = e;
	return -1;
}

static void ll_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct pt_fs *fs = pt__fs(req);
	struct pt_file *pf = NULL;
	struct pt_inode *in;
	char proc[32];
	int fd, flags, rc = 0;

	if (ctl_owns(ino)) {
		ctl_open(fs->ctl, req, ino, fi);
		return;
	}
	in = pt_inode_get(fs->it, ino);
	if (!in) {
		reply_err(req, -ESTALE);
		return;
	}
	/* Special files are served by the kernel; a symlink here would be a protocol error and
	 * re-opening it through /proc would follow it. */
	if (S_ISLNK(in->type)) {
		rc = -ELOOP;
		goto out_put;
	}
	if (S_ISDIR(in->type)) {
		rc = -EISDIR;
		goto out_put;
	}
	flags = backing_open_flags(fs, fi->flags);
	pt__proc_path(proc, sizeof(proc), in->fd);
	fd = trunc_kept(fdcap_keep(open(proc, flags & ~O_TRUNC)), flags);
	if (fd == -1 && errno == EACCES && fs->writeback && (fi->flags & O_ACCMODE) == O_WRONLY) {
		/* Writeback upgraded O_WRONLY to O_RDWR and SOURCE refused reading: keep the
		 * caller's mode; the kernel then cannot fill partial pages from us, as with any
		 * write-only file under writeback caching. */
		int wflags = (flags & ~O_ACCMODE) | O_WRONLY;

		fd = trunc_kept(fdcap_keep(open(proc, wflags & ~O_TRUNC)), wflags);
	}
	if (fd == -1) {
		rc = -errno;
		pt__warn_fd_limit(fs, rc);
		goto out_put;
	}
	if (flags & O_TRUNC)
		trunc_kill_suid(req, fd);
	pf = file_new(req, fd, fi->flags, in->dev, in->ino);
	if (!pf) {
		close(fd);
		rc = -ENOMEM;
		goto out_put;
	}
	rc = pt__file_link(fs, pf);
	if (rc) {
		file_free(pf); /* closes fd */
		goto out_put;
	}
	fi->fh = (uint64_t)(uintptr_t)pf;
	set_open_flags(fs, fi);
out_put:
	pt_inode_put(fs->it, in);
	if (rc) {
		reply_err(req, rc);
		return;
	}
	/* The kernel no longer waits (interrupted open): it will never release this handle. */
	if (fuse_reply_open(req, fi) == -ENOENT) {
		pt__file_unlink(fs, pf);
		file_free(pf);
	}
}

/*
 * One create attempt (as the caller: credentials entered). Returns an fd or -errno.
 * O_NOFOLLOW: a symlink planted on SOURCE under this name must not redirect the creation (and
 * an O_TRUNC) elsewhere. The kernel sends CREATE only for a name its lookup found missing, so
 * O_EXCL is tried first and costs nothing in the common case; if the name has appeared on
 * SOURCE since (and the caller did not ask for O_EXCL), what is there is opened as an open()
 * would, but only if it is a regular file: O_NONBLOCK keeps a FIFO planted there from holding
 * the thread in open() until a reader comes, and a FIFO, device or socket gives EEXIST.
 * *created tells whether this call made the file.
 */
static int create_at(int dirfd, const char *name, int flags, mode_t mode, bool *created)
{
	struct stat st;
	int fd, rc = 0;

	fd = openat(dirfd, name, flags | O_CREAT | O_EXCL | O_NOFOLLOW, mode & 07777);
	*created = false;
	if (fd >= 0 && fdcap_keep(fd) == -1) {
		unlinkat(dirfd, name, 0); /* ours: a native EMFILE creates nothing */
		return -EMFILE;
	}
	*created = fd >= 0;
	if (fd >= 0 || errno != EEXIST || (flags & O_EXCL))
		return fd >= 0 ? fd : -errno;
	/* O_TRUNC only once the file is known to be a regular one and its descriptor kept */
	fd = fdcap_keep(openat(dirfd, name,
			       (flags & ~(O_CREAT | O_TRUNC)) | O_NOFOLLOW | O_NONBLOCK));
	if (fd < 0)
		return errno == ENXIO ? -EEXIST : -errno; /* ENXIO: a FIFO without readers */
	if (fstat(fd, &st) != 0)
		rc = -errno;
	else if (!S_ISREG(st.st_mode))
		rc = -EEXIST; /* not what the kernel asked to create, nor a file it knows */
	else if (!(flags & O_NONBLOCK) && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0)
		rc = -errno;
	if (rc) {
		close(fd);
		return rc;
	}
	fd = trunc_kept(fd, flags);
	return fd >= 0 ? fd : -errno;
}

static int do_create(struct pt_fs *fs, fuse_req_t req, struct pt_inode *dir, const char *name,
		     mode_t mode, int flags, int *fdp, bool *created)
{
	struct pt_cred c;
	int rc, fd;

	rc = pt__cred_enter(fs, req, &mode, &c);
	if (rc)
		return rc;
	sgid_groups(fs, req, mode, &c);
	fd = create_at(dir->fd, name, flags, mode, created);
	if (fd == -EACCES && pt__cred_add_groups(fs, req, &c) == 0)
		fd = create_at(dir->fd, name, flags, mode, created);
	pt__cred_leave(fs, &c);
	*fdp = fd >= 0 ? fd : -1;
	return fd >= 0 ? 0 : fd;
}

static void ll_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	struct pt_fs *fs = pt__fs(req);
	struct fuse_entry_param e;
	struct pt_file *pf = NULL;
	struct pt_inode *dir;
	bool created = false;
	int fd = -1, rc;

	CTL_GUARD_EPERM(parent);
	dir = pt_inode_get(fs->it, parent);
	if (!dir) {
		reply_err(req, -ESTALE);
		return;
	}
	rc = check_dir_name(fs, dir, name);
	if (rc)
		goto out_put;
	/* O_EXCL is kept for create (the kernel passes it when the caller asked). */
	rc = do_create(fs, req, dir, name, mode,
		       backing_open_flags(fs, fi->flags) | (fi->flags & O_EXCL), &fd, &created);
	if (rc) {
		pt__warn_fd_limit(fs, rc);
		goto out_put;
	}
	rc = lookup_entry(fs, dir, name, created, &e);
	if (rc)
		goto out_close;
	pf = file_new(req, fd, fi->flags, e.attr.st_dev, e.attr.st_ino);
	if (!pf) {
		rc = -ENOMEM;
		pt_inode_forget(fs->it, e.ino, 1);
		goto out_close;
	}
	/* Over the group's open limit. The group is known only once the file exists (path
	 * rules classify by the opened file), so the create has happened: undo it if it was
	 * ours, as a native EMFILE creates nothing. */
	rc = pt__file_link(fs, pf);
	if (rc) {
		if (created)
			unlinkat(dir->fd, name, 0);
		pt_inode_forget(fs->it, e.ino, 1);
		file_free(pf); /* closes fd */
		goto out_put;
	}
	fi->fh = (uint64_t)(uintptr_t)pf;
	set_open_flags(fs, fi);
	/* the handle keeps the backing number (lock owners); the kernel gets the shown one */
	e.attr.st_ino = pt_inode_shown_ino(fs->it, e.attr.st_dev, e.attr.st_ino);
	goto out_put;

out_close:
	close(fd);
	/* Failed after the file was made: a failed create leaves nothing of its own behind. */
	if (created)
		unlinkat(dir->fd, name, 0);
out_put:
	pt_inode_put(fs->it, dir);
	if (rc) {
		reply_err(req, rc);
		return;
	}
	if (fuse_reply_create(req, &e, fi) == -ENOENT) {
		pt_inode_forget(fs->it, e.ino, 1);
		pt__file_unlink(fs, pf);
		file_free(pf);
	}
}

static void ll_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct pt_file *pf = pt__file(fi);
	struct exec_tag tag;

	if (ctl_owns(ino)) {
		ctl_read(pt__fs(req)->ctl, req, size, off, fi);
		return;
	}
	pt_classify(pt__fs(req)->opts.cls, req, &pf->opener, pf->fd,
		    pt_rq_flags(SCHED_OP_READ, fi->flags, false, false), &tag);
	exec_read(pt__fs(req)->ex, req, pf->fd, size, off, &tag);
}

/* Largest write accepted by a control file [bytes]: one value, as sysfs takes one page. */
#define CTL_MAX_WRITE 4096

/* A write to a control file: the data may sit in a pipe (splice), so copy it out first. */
static void ctl_write_buf(fuse_req_t req, struct fuse_bufvec *in_buf, struct fuse_file_info *fi)
{
	size_t size = fuse_buf_size(in_buf);
	char buf[CTL_MAX_WRITE];
	struct fuse_bufvec dst = FUSE_BUFVEC_INIT(size);
	ssize_t n;

	if (size > sizeof(buf)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	dst.buf[0].mem = buf;
	n = fuse_buf_copy(&dst, in_buf, 0);
	if (n < 0) {
		fuse_reply_err(req, (int)-n);
		return;
	}
	ctl_write(pt__fs(req)->ctl, req, buf, (size_t)n, fi);
}

/*
 * The backing fd for a write whose file is now in status `flags` (the WRITE request carries the
 * file's f_flags as they are at the write). O_APPEND of the backing fd was fixed at open, and
 * the kernel does not tell us about fcntl(F_SETFL): a caller that cleared O_APPEND writes at
 * the offsets it chose, natively, where the backing fd would still put every write at the end
 * (and copy_file_range into it fails with EBADF). Such writes go to a second description of
 * the same file opened without O_APPEND, on first need, kept until release. Returns an fd, or
 * -errno if that open fails (EMFILE past the opener's open_limit or uid_open_limit, or at the
 * descriptor reserve: fdcap.h).
 */
static int write_fd(struct pt_fs *fs, struct pt_file *pf, int flags)
{
	char proc[32];
	int fd, fl, rc, expected = -1;

	/* as opened; or the kernel chose the offset (it does for O_APPEND set later, and under
	 * writeback caching, whose backing fds never have O_APPEND) */
	if ((flags & O_APPEND) || !(pf->flags & O_APPEND) || fs->writeback)
		return pf->fd;
	fd = atomic_load(&pf->plain_fd);
	if (fd >= 0)
		return fd;
	fl = fcntl(pf->fd, F_GETFL);
	if (fl == -1)
		return -errno;
	/* a descriptor like any other open file's: within open_limit and below the reserve */
	rc = pt__file_count_fd(fs, pf);
	if (rc < 0)
		return rc;
	pt__proc_path(proc, sizeof(proc), pf->fd);
	fd = fdcap_keep(open(proc, (fl & (O_ACCMODE | O_SYNC | O_DSYNC | O_NOATIME)) | O_CLOEXEC));
	if (fd == -1) {
		rc = -errno;
		pt__file_uncount_fd(fs, pf);
		return rc;
	}
	/* another thread may have opened one meanwhile: keep the first */
	if (!atomic_compare_exchange_strong(&pf->plain_fd, &expected, fd)) {
		close(fd);
		pt__file_uncount_fd(fs, pf);
		fd = expected;
	}
	return fd;
}

/* The tag of a write-like request on handle `pf` whose file is in status `flags`;
 * `writepage`: the kernel's writeback of its cache. */
static void classify_write(fuse_req_t req, struct pt_file *pf, int flags, bool writepage,
			   struct exec_tag *tag)
{
	pt_classify(pt__fs(req)->opts.cls, req, &pf->opener, pf->fd,
		    pt_rq_flags(SCHED_OP_WRITE, flags, writepage,
				atomic_load_explicit(&pf->fsynced, memory_order_relaxed)),
		    tag);
}

static void ll_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *in_buf, off_t off,
			 struct fuse_file_info *fi)
{
	struct pt_file *pf = pt__file(fi);
	struct exec_tag tag;
	int fd;

	if (ctl_owns(ino)) {
		ctl_write_buf(req, in_buf, fi);
		return;
	}
	fd = write_fd(pt__fs(req), pf, fi->flags);
	if (fd < 0) {
		reply_err(req, fd);
		return;
	}
	classify_write(req, pf, fi->flags, fi->writepage, &tag);
	exec_write(pt__fs(req)->ex, req, fd, in_buf, off, &tag);
}

static void ll_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct pt_file *pf = pt__file(fi);
	struct exec_tag tag;

	CTL_GUARD_ERR(ino, 0); /* nothing to make durable */
	atomic_store_explicit(&pf->fsynced, true, memory_order_relaxed);
	pt_classify(pt__fs(req)->opts.cls, req, &pf->opener, pf->fd,
		    pt_rq_flags(datasync ? SCHED_OP_FDATASYNC : SCHED_OP_FSYNC, 0, false, false),
		    &tag);
	exec_fsync(pt__fs(req)->ex, req, pf->fd, datasync != 0, &tag);
}

static void ll_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct pt_fs *fs = pt__fs(req);
	int fd, rc = 0;

	CTL_GUARD_ERR(ino, 0); /* writes were applied at write() */
	/* Every close(2) sends FLUSH with the closing process as lock owner: POSIX drops that
	 * process's record locks on the file, whichever descriptor it closes. */
	if (fs->posix_locks)
		pt__locks_flush(fs, pt__file(fi), fi->lock_owner);
	/* close(2) of a duplicate reports the backing filesystem's close-time errors (NFS
	 * write-back) at the caller's close, as a local file would. */
	fd = dup(pt__file(fi)->fd);
	if (fd == -1 || close(fd) == -1)
		rc = -errno;
	reply_err(req, rc);
}

static void ll_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ctl_owns(ino)) {
		ctl_release(pt__fs(req)->ctl, req, fi);
		return;
	}
	pt__file_unlink(pt__fs(req), pt__file(fi));
	/* Closing the fd also drops the handle's flock locks: blocked requests may go. */
	file_free(pt__file(fi));
	pt__locks_changed(pt__fs(req)->locks);
	fuse_reply_err(req, 0);
}

static void ll_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
			 struct fuse_file_info *fi)
{
	struct pt_file *pf = pt__file(fi);
	struct exec_tag tag;

	CTL_GUARD_ERR(ino, EOPNOTSUPP);
	/* Scheduled in the caller's queue as writes (exec_fallocate says how each mode is cut
	 * and charged), with the flags of the open: FALLOCATE carries none. The backing fd has
	 * the handle's O_APPEND, which fallocate ignores. */
	classify_write(req, pf, pf->flags, false, &tag);
	exec_fallocate(pt__fs(req)->ex, req, pf->fd, mode, offset, length, &tag);
}

static void ll_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		     struct fuse_file_info *fi)
{
	off_t res;

	CTL_GUARD_ERR(ino, EINVAL); /* no holes in generated text */
	/* With the writeback cache the kernel holds written data SOURCE has not seen yet, so
	 * SOURCE would answer ENXIO for data being written. ENOSYS makes the kernel answer from
	 * its own size for the rest of the mount (all data, one hole at the end: what
	 * SEEK_DATA/SEEK_HOLE may always report). */
	if (pt__fs(req)->writeback) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	/* The kernel only forwards SEEK_DATA/SEEK_HOLE. The shared fd offset this moves is never
	 * used: all data I/O is positional. */
	res = lseek(pt__file(fi)->fd, off, whence);
	if (res == -1)
		fuse_reply_err(req, errno);
	else
		fuse_reply_lseek(req, res);
}

static void ll_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			       struct fuse_file_info *fi_in, fuse_ino_t ino_out, off_t off_out,
			       struct fuse_file_info *fi_out, size_t len, int flags)
{
	struct pt_file *pin = pt__file(fi_in), *pout = pt__file(fi_out);
	struct exec_tag tag_in, tag_out;
	int out_fd;

	CTL_GUARD_ERR(ino_in, EOPNOTSUPP); /* the kernel falls back to read + write */
	CTL_GUARD_ERR(ino_out, EOPNOTSUPP);
	/* copy_file_range(2) defines no flags; SOURCE would refuse them too */
	if (flags != 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	/* Scheduled as reads of the source and writes of the destination, in pieces
	 * (exec_copy), each charged to the caller as the file's rules say. One request copies
	 * at most PT_COPY_CHUNK, so that a signal or a slow SOURCE is noticed between requests
	 * (the caller loops on the short count, as on any filesystem). */
	if (len > PT_COPY_CHUNK)
		len = PT_COPY_CHUNK;
	/* the kernel refuses a destination open with O_APPEND before it asks (EBADF): this one
	 * is not, whatever its backing fd was opened with */
	out_fd = write_fd(pt__fs(req), pt__file(fi_out), fi_out->flags & ~O_APPEND);
	if (out_fd < 0) {
		reply_err(req, out_fd);
		return;
	}
	pt_classify(pt__fs(req)->opts.cls, req, &pin->opener, pin->fd,
		    pt_rq_flags(SCHED_OP_READ, pin->flags, false, false), &tag_in);
	/* (COPY_FILE_RANGE carries no file flags: those of the opens count) */
	classify_write(req, pout, pout->flags, false, &tag_out);
	exec_copy(pt__fs(req)->ex, req, pin->fd, off_in, &tag_in, out_fd, off_out, &tag_out, len);
}

/* ---------------------------------------------------------------------------------------- */
/* Locks                                                                                     */

static void ll_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, int op)
{
	CTL_GUARD_ERR(ino, ENOLCK);
	pt__flock(req, fi, op);
}

/* ---------------------------------------------------------------------------------------- */
/* Handlers living elsewhere, behind the control-directory dispatch                          */

static void ll_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ctl_owns(ino))
		ctl_opendir(pt__fs(req)->ctl, req, ino, fi);
	else
		pt__opendir(req, ino, fi);
}

static void ll_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	if (ctl_owns(ino))
		ctl_readdir(pt__fs(req)->ctl, req, size, off, fi, false);
	else
		pt__readdir(req, ino, size, off, fi);
}

static void ll_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	if (ctl_owns(ino))
		ctl_readdir(pt__fs(req)->ctl, req, size, off, fi, true);
	else
		pt__readdirplus(req, ino, size, off, fi);
}

static void ll_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ctl_owns(ino))
		ctl_releasedir(pt__fs(req)->ctl, req, fi);
	else
		pt__releasedir(req, ino, fi);
}

static void ll_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	CTL_GUARD_ERR(ino, 0);
	pt__fsyncdir(req, ino, datasync, fi);
}

static void ll_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			size_t size, int flags)
{
	CTL_GUARD_EPERM(ino);
	pt__setxattr(req, ino, name, value, size, flags);
}

static void ll_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	CTL_GUARD_ERR(ino, ENODATA);
	pt__getxattr(req, ino, name, size);
}

static void ll_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	if (ctl_owns(ino)) {
		if (size == 0)
			fuse_reply_xattr(req, 0);
		else
			fuse_reply_buf(req, NULL, 0);
		return;
	}
	pt__listxattr(req, ino, size);
}

static void ll_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	CTL_GUARD_EPERM(ino);
	pt__removexattr(req, ino, name);
}

static void ll_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		     struct flock *lock)
{
	CTL_GUARD_ERR(ino, ENOLCK);
	pt__getlk(req, ino, fi, lock);
}

static void ll_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		     struct flock *lock, int sleep)
{
	CTL_GUARD_ERR(ino, ENOLCK);
	pt__setlk(req, ino, fi, lock, sleep);
}

/* ---------------------------------------------------------------------------------------- */
/* The table                                                                                 */

static const struct fuse_lowlevel_ops pt_ops_table = {
	.init = pt__init,
	.destroy = pt__destroy,
	.lookup = ll_lookup,
	.forget = ll_forget,
	.forget_multi = ll_forget_multi,
	.getattr = ll_getattr,
	.setattr = ll_setattr,
	.readlink = ll_readlink,
	.mknod = ll_mknod,
	.mkdir = ll_mkdir,
	.unlink = ll_unlink,
	.rmdir = ll_rmdir,
	.symlink = ll_symlink,
	.rename = ll_rename,
	.link = ll_link,
	.open = ll_open,
	.create = ll_create,
	.read = ll_read,
	.write_buf = ll_write_buf,
	.flush = ll_flush,
	.release = ll_release,
	.fsync = ll_fsync,
	.opendir = ll_opendir,
	.readdir = ll_readdir,
	.readdirplus = ll_readdirplus,
	.releasedir = ll_releasedir,
	.fsyncdir = ll_fsyncdir,
	.statfs = ll_statfs,
	.access = ll_access,
	.setxattr = ll_setxattr,
	.getxattr = ll_getxattr,
	.listxattr = ll_listxattr,
	.removexattr = ll_removexattr,
	.fallocate = ll_fallocate,
	.lseek = ll_lseek,
	.copy_file_range = ll_copy_file_range,
	.getlk = ll_getlk,
	.setlk = ll_setlk,
	.flock = ll_flock,
};

const struct fuse_lowlevel_ops *pt_ops(void)
{
	return &pt_ops_table;
}
