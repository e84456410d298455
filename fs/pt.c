/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt.c - mount state of the passthrough filesystem: pt_create/pt_destroy and capability
 * negotiation (init).
 */
#include "pt.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "classify.h"
#include "fdcap.h"
#include "fusectl.h"
#include "groups.h"
#include "log.h"
#include "pt_i.h"

static int save_groups(struct pt_fs *fs)
{
	int n = getgroups(0, NULL);

	if (n < 0)
		return -errno;
	fs->groups = calloc((size_t)n + 1, sizeof(*fs->groups));
	if (!fs->groups)
		return -ENOMEM;
	n = getgroups(n, fs->groups);
	if (n < 0)
		return -errno;
	fs->ngroups = n;
	return 0;
}

/*
 * The inode table holds one O_PATH fd per inode the kernel caches and every open file holds
 * one more, so a big tree walk, or one tenant opening 100 000 files, would exhaust the usual
 * limits (1024 soft, often 20 000 hard) and then every lookup of every tenant would fail with
 * EMFILE. Raise the limit to the hard limit and, as root, to the kernel's maximum
 * (/proc/sys/fs/nr_open). Best effort.
 */
static void raise_fd_limit(void)
{
	struct rlimit rl;
	unsigned reserve;
	unsigned long long nr_open = 0;
	FILE *f = fopen("/proc/sys/fs/nr_open", "re");

	if (f) {
		if (fscanf(f, "%llu", &nr_open) != 1)
			nr_open = 0;
		fclose(f);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return;
	if (nr_open > rl.rlim_max) {
		struct rlimit up = { .rlim_cur = nr_open, .rlim_max = nr_open };
		if (setrlimit(RLIMIT_NOFILE, &up) == 0) /* needs CAP_SYS_RESOURCE */
			rl = up;
	}
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
			(void)getrlimit(RLIMIT_NOFILE, &rl);
	}
	reserve = fdcap_init();
	LOG_DEBUG("RLIMIT_NOFILE is %llu, of which %u are kept for short-lived uses (fdcap.h)",
		  (unsigned long long)rl.rlim_cur, reserve);
}

/* open_limit = 0: a quarter of the (raised) descriptor limit, so that up to three groups
 * hoarding files still leave room for the others and for the inode table. */
static unsigned auto_open_limit(unsigned limit)
{
	struct rlimit rl;

	if (limit)
		return limit;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
		return 65536;
	rl.rlim_cur /= 4;
	return rl.rlim_cur < 16 ? 16 : rl.rlim_cur > UINT_MAX ? UINT_MAX : (unsigned)rl.rlim_cur;
}

void pt_set_open_limit(struct pt_fs *fs, unsigned limit, unsigned uid_limit)
{
	unsigned n = auto_open_limit(limit);

	pthread_mutex_lock(&fs->handles_lock);
	fs->open_limit = n;
	fs->uid_open_limit = uid_limit ? uid_limit : n;
	pthread_mutex_unlock(&fs->handles_lock);
}

struct pt_fs *pt_create(const struct pt_options *opts, struct executor *ex, int *err)
{
	struct pt_fs *fs;
	int fd, rc;

	if (!opts->source || opts->source[0] == '\0') {
		rc = -EINVAL;
		goto out;
	}
	fs = calloc(1, sizeof(*fs));
	if (!fs) {
		rc = -ENOMEM;
		goto out;
	}
	rc = -pthread_mutex_init(&fs->handles_lock, NULL);
	if (rc) {
		free(fs);
		goto out;
	}
	fs->opts = *opts;
	fs->opts.device_info = NULL; /* the caller's; only the ctl's copy outlives pt_create */
	fs->opts.source = strdup(opts->source);
	fs->opts.ctl_dir = strdup(opts->ctl_dir ? opts->ctl_dir : "");
	if (!fs->opts.source || !fs->opts.ctl_dir) {
		rc = -ENOMEM;
		goto out_free;
	}
	if (strchr(fs->opts.ctl_dir, '/') || strcmp(fs->opts.ctl_dir, ".") == 0 ||
	    strcmp(fs->opts.ctl_dir, "..") == 0) {
		rc = -EINVAL;
		goto out_free;
	}
	fs->ex = ex;
	fs->locks = pt__locks_create();
	if (!fs->locks) {
		rc = -ENOMEM;
		goto out_free;
	}
	rc = save_groups(fs);
	if (rc)
		goto out_free;
	/* SOURCE itself may be a symlink the administrator chose; below it nothing is followed. */
	fd = open(opts->source, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd == -1) {
		rc = -errno;
		goto out_free;
	}
	fs->it = pt_itable_create(fd, &rc); /* owns fd from here, also on failure */
	if (!fs->it)
		goto out_free;
	/* Only root can act as another user; otherwise everything is created as ourselves. */
	fs->euid = geteuid();
	fs->egid = getegid();
	fs->as_caller = fs->euid == 0;
	if (fs->opts.ctl_dir[0]) {
		struct ctl_options co = {
			.name = fs->opts.ctl_dir,
			.ex = ex,
			.groups = opts->groups,
			.owner = getuid(),
			.owner_gid = getgid(),
			.private_read = opts->ctl_private,
			.device_info = opts->device_info,
		};
		struct stat st;

		/* A SOURCE entry of that name would be hidden by the control directory: refuse
		 * rather than make it silently unreachable. */
		if (fstatat(pt_itable_root(fs->it)->fd, fs->opts.ctl_dir, &st,
			    AT_SYMLINK_NOFOLLOW) == 0) {
			LOG_ERR("SOURCE %s has an entry named %s, the control directory's name: "
				"rename it, or mount with -o ctl_dir=OTHER (ctl_dir= disables it)",
				opts->source, fs->opts.ctl_dir);
			rc = -EEXIST;
			goto out_itable;
		}
		fs->ctl = ctl_create(&co);
		if (!fs->ctl) {
			rc = -ENOMEM;
			goto out_itable;
		}
	}
	fs->open_uid = uidtab_new();
	if (!fs->open_uid) {
		rc = -ENOMEM;
		goto out_ctl;
	}
	raise_fd_limit();
	fs->open_limit = auto_open_limit(opts->open_limit);
	fs->uid_open_limit = opts->uid_open_limit ? opts->uid_open_limit : fs->open_limit;
	return fs;

out_ctl:
	ctl_destroy(fs->ctl);

out_itable:
	pt_itable_destroy(fs->it);
out_free:
	pt__locks_destroy(fs->locks);
	free(fs->groups);
	free((char *)fs->opts.source);
	free((char *)fs->opts.ctl_dir);
	pthread_mutex_destroy(&fs->handles_lock);
	free(fs);
out:
	*err = rc;
	return NULL;
}

/* Counts one more descriptor of `pf` against its opener's group and uid, or -EMFILE past
 * open_limit or uid_open_limit, -ENOMEM if the group table cannot grow (nothing counted
 * then). Called with handles_lock held. */
static int count_open(struct pt_fs *fs, const struct pt_file *pf)
{
	uint32_t g = pf->opener.group;
	int rc;

	if (g >= fs->nr_open_count) {
		size_t n = fs->nr_open_count ? fs->nr_open_count : 16;
		while (n <= g)
			n *= 2;
		uint32_t *c = realloc(fs->open_count, n * sizeof(*c));
		if (!c)
			return -ENOMEM;
		memset(c + fs->nr_open_count, 0, (n - fs->nr_open_count) * sizeof(*c));
		fs->open_count = c;
		fs->nr_open_count = n;
	}
	if (fs->open_count[g] >= fs->open_limit)
		return -EMFILE;
	/* root is not bounded per user (pt_options.uid_open_limit) */
	if (pf->opener.uid != 0) {
		rc = uidtab_charge(fs->open_uid, pf->opener.uid, 1, 0, fs->uid_open_limit, 0);
		if (rc < 0)
			return rc == -EAGAIN ? -EMFILE : rc;
	}
	fs->open_count[g]++;
	return 0;
}

/* Undoes one count_open(). Called with handles_lock held. */
static void uncount_open(struct pt_fs *fs, const struct pt_file *pf)
{
	fs->open_count[pf->opener.group]--;
	if (pf->opener.uid != 0)
		uidtab_uncharge(fs->open_uid, pf->opener.uid, 1, 0);
}

int pt__file_link(struct pt_fs *fs, struct pt_file *pf)
{
	int rc;

	pthread_mutex_lock(&fs->handles_lock);
	rc = count_open(fs, pf);
	if (rc < 0)
		goto out_unlock;
	/* Lock order: handles_lock before the registry's lock (grp_* never calls back here). */
	if (fs->opts.groups)
		grp_ref(fs->opts.groups, pf->opener.group);
	pf->prev = NULL;
	pf->next = fs->files;
	if (fs->files)
		fs->files->prev = pf;
	fs->files = pf;
out_unlock:
	pthread_mutex_unlock(&fs->handles_lock);
	return rc;
}

int pt__file_count_fd(struct pt_fs *fs, struct pt_file *pf)
{
	pthread_mutex_lock(&fs->handles_lock);
	int rc = count_open(fs, pf);
	pthread_mutex_unlock(&fs->handles_lock);
	return rc;
}

void pt__file_uncount_fd(struct pt_fs *fs, struct pt_file *pf)
{
	pthread_mutex_lock(&fs->handles_lock);
	uncount_open(fs, pf);
	pthread_mutex_unlock(&fs->handles_lock);
}

void pt__file_unlink(struct pt_fs *fs, struct pt_file *pf)
{
	pthread_mutex_lock(&fs->handles_lock);
	uncount_open(fs, pf);
	/* its second descriptor (write_fd in pt_ops.c), final here: no request is outstanding */
	if (atomic_load(&pf->plain_fd) >= 0)
		uncount_open(fs, pf);
	if (fs->opts.groups)
		grp_unref(fs->opts.groups, pf->opener.group);
	if (pf->prev)
		pf->prev->next = pf->next;
	else
		fs->files = pf->next;
	if (pf->next)
		pf->next->prev = pf->prev;
	pthread_mutex_unlock(&fs->handles_lock);
}

void pt__dir_link(struct pt_fs *fs, struct pt_dir *d)
{
	pthread_mutex_lock(&fs->handles_lock);
	d->prev = NULL;
	d->next = fs->dirs;
	if (fs->dirs)
		fs->dirs->prev = d;
	fs->dirs = d;
	pthread_mutex_unlock(&fs->handles_lock);
}

void pt__dir_unlink(struct pt_fs *fs, struct pt_dir *d)
{
	pthread_mutex_lock(&fs->handles_lock);
	if (d->prev)
		d->prev->next = d->next;
	else
		fs->dirs = d->next;
	if (d->next)
		d->next->prev = d->prev;
	pthread_mutex_unlock(&fs->handles_lock);
}

/* Frees handles the kernel never released. No request may be running. */
static void free_handles(struct pt_fs *fs)
{
	size_t nf = 0, nd = 0;

	while (fs->files) {
		struct pt_file *pf = fs->files;

		fs->files = pf->next;
		close(pf->fd);
		pt_classify_release(&pf->opener);
		free(pf);
		nf++;
	}
	while (fs->dirs) {
		struct pt_dir *d = fs->dirs;

		fs->dirs = d->next;
		closedir(d->dp);
		pthread_mutex_destroy(&d->lock);
		free(d);
		nd++;
	}
	if (nf || nd)
		LOG_DEBUG("freed %zu file and %zu directory handles never released", nf, nd);
}

void pt_quiesce(struct pt_fs *fs)
{
	pt__locks_stop(fs->locks);
}

void pt_destroy(struct pt_fs *fs)
{
	if (!fs)
		return;
	free_handles(fs);
	pthread_mutex_destroy(&fs->handles_lock);
	pt__locks_destroy(fs->locks);
	pt_itable_destroy(fs->it);
	ctl_destroy(fs->ctl);
	free(fs->open_count);
	uidtab_free(fs->open_uid);
	free(fs->groups);
	free((char *)fs->opts.source);
	free((char *)fs->opts.ctl_dir);
	free(fs);
}

static void want(struct fuse_conn_info *conn, unsigned cap, bool on)
{
	if (on && (conn->capable & cap))
		conn->want |= cap;
	else
		conn->want &= ~cap;
}

void pt__init(void *userdata, struct fuse_conn_info *conn)
{
	struct pt_fs *fs = userdata;

	/* lookup handles "." and ".." (never above SOURCE), so NFS export can work. */
	want(conn, FUSE_CAP_EXPORT_SUPPORT, true);
	/*
	 * Splice (config key `splice`): libfuse then reads WRITE data into a pipe, which the
	 * executor must still copy out before the request is queued (the pipe belongs to the
	 * session thread), and replies come from memory anyway; bench/overhead measures both.
	 */
	want(conn, FUSE_CAP_SPLICE_READ, fs->opts.splice);
	want(conn, FUSE_CAP_SPLICE_WRITE, fs->opts.splice);
	want(conn, FUSE_CAP_SPLICE_MOVE, fs->opts.splice);
	/* The kernel leaves the umask to us (pt_cred.c) so default ACLs on SOURCE apply. */
	want(conn, FUSE_CAP_DONT_MASK, true);
	want(conn, FUSE_CAP_ATOMIC_O_TRUNC, true);
	want(conn, FUSE_CAP_WRITEBACK_CACHE, fs->opts.writeback_cache);
	want(conn, FUSE_CAP_FLOCK_LOCKS, fs->opts.flock);
	want(conn, FUSE_CAP_POSIX_LOCKS, fs->opts.posix_lock);
	/* Our writes run as root, which never drops set-id bits: the kernel must do it. */
	want(conn, FUSE_CAP_HANDLE_KILLPRIV, false);
	want(conn, FUSE_CAP_CACHE_SYMLINKS, fs->opts.kernel_cache);
	/*
	 * POSIX ACLs. The daemon acts as root on SOURCE, so an ACL there is enforced only if
	 * the kernel checks it: with FUSE_POSIX_ACL it reads system.posix_acl_access through
	 * getxattr, caches it, and applies it in default_permissions' check, as a local
	 * filesystem does. Default ACLs and the mask's update on chmod are SOURCE's own work:
	 * creates run as the caller with its umask (FUSE_DONT_MASK, pt_cred.c) and chmod is a
	 * chmod on SOURCE. Without xattr there is no way to read an ACL, so none is asked for.
	 */
	want(conn, FUSE_CAP_POSIX_ACL, fs->opts.acl && fs->opts.xattr);
	/* No kernel passthrough is ever requested: it would bypass the scheduler. */
	if (conn->max_write > PT_MAX_WRITE)
		conn->max_write = PT_MAX_WRITE;
	/*
	 * Background requests (readahead, writeback, asynchronous direct I/O) beyond
	 * max_background wait in the kernel's FIFO, unseen by the scheduler. With the kernel's
	 * default of 12, eight processes with four reads each in flight left CFQ idling for a
	 * process whose next read sat in that FIFO behind the others' (bench/depth: 70 MB/s
	 * against noop's 1 GB/s). Like the block layer's nr_requests (128), the limit must
	 * exceed what the scheduler needs to see. The kernel marks the connection congested
	 * (and cuts async readahead) at congestion_threshold, kept at its default ratio 3/4.
	 * Without CAP_SYS_ADMIN the kernel caps the two at max_user_bgreq and
	 * max_user_congthresh (fuse module parameters). A reload changes both through
	 * fusectl (main.c).
	 */
	if (fs->opts.max_background) {
		unsigned bg = fs->opts.max_background;

		conn->max_background = bg;
		conn->congestion_threshold = fusectl_congestion_for(bg);
	}

	fs->writeback = (conn->want & FUSE_CAP_WRITEBACK_CACHE) != 0;
	fs->posix_locks = (conn->want & FUSE_CAP_POSIX_LOCKS) != 0;
	fs->flock_locks = (conn->want & FUSE_CAP_FLOCK_LOCKS) != 0;
	if (fs->opts.writeback_cache && !fs->writeback)
		LOG_WARN("kernel refused the writeback cache; continuing without it");
	if (fs->opts.acl && fs->opts.xattr && !(conn->want & FUSE_CAP_POSIX_ACL))
		LOG_WARN("the kernel cannot enforce POSIX ACLs through FUSE: only the mode bits "
			 "are checked, an ACL that denies a user denies nothing here");
	else if (!(conn->want & FUSE_CAP_POSIX_ACL))
		LOG_INFO("POSIX ACLs are not enforced (%s): only the mode bits are checked",
			 fs->opts.xattr ? "acl=false" : "xattr=false");
	LOG_INFO("fuse: proto %u.%u, max_write %u, max_background %u, capable 0x%x, want 0x%x",
		 conn->proto_major, conn->proto_minor, conn->max_write, conn->max_background,
		 conn->capable, conn->want);
}

void pt__destroy(void *userdata)
{
	struct pt_fs *fs = userdata;
	size_t held;

	/* Inodes stay until pt_destroy(): the session may still hand out requests' replies.
	 * Blocked lock requests are answered now, while the session can still send. */
	pt__locks_stop(fs->locks);
	held = pt_itable_count(fs->it);
	LOG_INFO("fuse: destroy, %zu inode%s held", held, held == 1 ? "" : "s");
}
