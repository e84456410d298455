/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt_dir.c - directory handles: opendir, readdir, readdirplus, releasedir, fsyncdir.
 *
 * Offsets given to the kernel are the backing filesystem's d_off cookies, so seekdir() to an
 * offset the kernel hands back resumes exactly there. An entry read but not fitting in the
 * reply buffer is kept (pending) for the next call, as the DIR stream cannot un-read it.
 *
 * The root lists the control directory first, before SOURCE's entries; its offset (the
 * handle's ctl_cookie) stands for "SOURCE's stream from its beginning". It must be a position
 * seekdir() can go back to, so non-negative (lseek refuses negative directory offsets), and
 * one SOURCE's stream does not use. No value is promised unused, so PT_CTL_COOKIE is one that
 * the usual layouts do not hand out: small indexes (tmpfs, btrfs, xfs), 31- or 63-bit name
 * hashes (ext4, whose end-of-directory mark is INT64_MAX and whose hashes avoid it). One
 * SOURCE does: the root of another cfqfs mount, which lists its own control entry there.
 * When SOURCE's stream hands the value out, the handle switches to PT_CTL_COOKIE_SPARE, which
 * no stream can use (negative), from the moment it reads that entry: a listing read straight
 * through stays right; but a telldir() taken after the control entry before the switch then
 * resumes after SOURCE's entry (skipping what lies between), and one after it cannot be
 * sought (lseek refuses negative directory offsets).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fdcap.h"
#include "log.h"
#include "pt_i.h"

#define PT_CTL_COOKIE (INT64_MAX - 1)
#define PT_CTL_COOKIE_SPARE INT64_MIN

void pt__opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct pt_fs *fs = pt__fs(req);
	struct pt_dir *d = NULL;
	struct pt_inode *in;
	int fd = -1, rc;

	in = pt_inode_get(fs->it, ino);
	if (!in) {
		rc = -ESTALE;
		goto out;
	}
	if (!S_ISDIR(in->type)) {
		rc = -ENOTDIR;
		goto out_put;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		rc = -ENOMEM;
		goto out_put;
	}
	rc = -pthread_mutex_init(&d->lock, NULL);
	if (rc)
		goto out_free;
	fd = fdcap_keep(openat(in->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	if (fd == -1) {
		rc = -errno;
		pt__warn_fd_limit(fs, rc);
		goto out_mutex;
	}
	d->dp = fdopendir(fd);
	if (!d->dp) {
		rc = -errno;
		goto out_close;
	}
	d->is_root = in->nodeid == FUSE_ROOT_ID;
	d->ctl_cookie = PT_CTL_COOKIE;
	d->dev = in->dev;
	fi->fh = (uint64_t)(uintptr_t)d;
	fi->cache_readdir = fs->opts.kernel_cache;
	pt__dir_link(fs, d);
	pt_inode_put(fs->it, in);
	if (fuse_reply_open(req, fi) == -ENOENT) {
		/* Interrupted: the kernel will not send releasedir for it. */
		pt__dir_unlink(fs, d);
		closedir(d->dp);
		pthread_mutex_destroy(&d->lock);
		free(d);
	}
	return;

out_close:
	close(fd);
out_mutex:
	pthread_mutex_destroy(&d->lock);
out_free:
	free(d);
out_put:
	pt_inode_put(fs->it, in);
out:
	fuse_reply_err(req, -rc);
}

static bool is_dot_or_dotdot(const char *name)
{
	return name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

/*
 * Fills buf with entries from the handle's position `off`. Returns the bytes filled (>= 0), or
 * -errno if an error happened before any entry was filled (after that the error is dropped:
 * readdirplus entries already carry kernel references and must reach the kernel).
 * Called with d->lock held.
 */
static ssize_t fill_dir(struct pt_fs *fs, fuse_req_t req, struct pt_dir *d, struct pt_inode *dir,
			char *buf, size_t size, off_t off, bool plus)
{
	size_t used = 0;
	int rc = 0;

	if (d->is_root && fs->ctl) {
		if (off == 0) {
			struct fuse_entry_param e;
			size_t n;

			ctl_root_entry(fs->ctl, &e);
			if (plus)
				n = fuse_add_direntry_plus(req, buf, size, fs->opts.ctl_dir, &e,
							   d->ctl_cookie);
			else
				n = fuse_add_direntry(req, buf, size, fs->opts.ctl_dir, &e.attr,
						      d->ctl_cookie);
			if (n > size)
				return 0;
			used = n;
		} else if (off == d->ctl_cookie) {
			off = 0;
		}
	}
	if (off != d->offset) {
		seekdir(d->dp, off);
		d->pending = NULL;
		d->offset = off;
	}
	for (;;) {
		struct fuse_entry_param e;
		struct dirent *ent = d->pending;
		bool looked_up;
		size_t n;

		if (!ent) {
			errno = 0;
			ent = readdir(d->dp);
			if (!ent) {
				rc = -errno; /* 0 at the end of the stream */
				break;
			}
			d->pending = ent;
		}
		if (d->is_root && (off_t)ent->d_off == d->ctl_cookie) {
			/* SOURCE uses the value (see the top): from now on it is SOURCE's */
			LOG_DEBUG("readdir: SOURCE's root hands out position %lld, the control "
				  "entry's; it moves to %lld", (long long)ent->d_off,
				  (long long)PT_CTL_COOKIE_SPARE);
			d->ctl_cookie = PT_CTL_COOKIE_SPARE;
		}
		if (d->is_root && fs->opts.ctl_dir[0] && strcmp(ent->d_name, fs->opts.ctl_dir) == 0)
			goto next; /* reserved: the control directory, listed first */

		memset(&e, 0, sizeof(e));
		looked_up = false;
		if (plus && !is_dot_or_dotdot(ent->d_name)) {
			rc = pt__lookup_entry(fs, req, dir, ent->d_name, &e);
			if (rc == -ENOENT) {
				rc = 0;
				goto next; /* removed since readdir saw it */
			}
			/* Out of descriptors for a new inode: list the name without attributes
			 * (below) rather than fail the listing; a lookup of it reports EMFILE. */
			if (rc && rc != -EMFILE && rc != -ENFILE)
				break;
			looked_up = rc == 0;
		}
		if (looked_up) {
			e.attr.st_ino = pt_inode_shown_ino(fs->it, e.attr.st_dev, e.attr.st_ino);
		} else {
			/* "." and "..", or no descriptor: no reference taken; entries with node
			 * id 0 are listed but not instantiated by the kernel. */
			memset(&e, 0, sizeof(e));
			e.attr.st_ino = pt_inode_shown_ino(fs->it, d->dev, ent->d_ino);
			e.attr.st_mode = (mode_t)ent->d_type << 12;
			rc = 0;
		}
		if (plus)
			n = fuse_add_direntry_plus(req, buf + used, size - used, ent->d_name, &e,
						   ent->d_off);
		else
			n = fuse_add_direntry(req, buf + used, size - used, ent->d_name, &e.attr,
					      ent->d_off);
		if (n > size - used) {
			/* Does not fit: keep it pending and give back its reference. */
			if (e.ino)
				pt_inode_forget(fs->it, e.ino, 1);
			break;
		}
		used += n;
next:
		d->pending = NULL;
		d->offset = ent->d_off;
	}
	if (rc && used == 0)
		return rc;
	if (rc)
		LOG_DEBUG("readdir: dropping error %d after %zu bytes", rc, used);
	return (ssize_t)used;
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi, bool plus)
{
	struct pt_fs *fs = pt__fs(req);
	struct pt_dir *d = pt__dir(fi);
	struct pt_inode *dir = NULL;
	char *buf;
	ssize_t n;

	if (plus) {
		dir = pt_inode_get(fs->it, ino);
		if (!dir) {
			fuse_reply_err(req, ESTALE);
			return;
		}
	}
	buf = malloc(size ? size : 1);
	if (!buf) {
		n = -ENOMEM;
		goto out_put;
	}
	pthread_mutex_lock(&d->lock);
	n = fill_dir(fs, req, d, dir, buf, size, off, plus);
	pthread_mutex_unlock(&d->lock);
out_put:
	pt_inode_put(fs->it, dir);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

void pt__readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		 struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, fi, false);
}

void pt__readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, fi, true);
}

void pt__releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct pt_dir *d = pt__dir(fi);

	(void)ino;
	pt__dir_unlink(pt__fs(req), d);
	closedir(d->dp);
	pthread_mutex_destroy(&d->lock);
	free(d);
	fuse_reply_err(req, 0);
}

void pt__fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	int fd = dirfd(pt__dir(fi)->dp);
	int rc;

	(void)ino;
	/* Inline: directory syncs are metadata, not scheduled data. */
	rc = datasync ? fdatasync(fd) : fsync(fd);
	fuse_reply_err(req, rc == -1 ? errno : 0);
}
