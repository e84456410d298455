/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * faultfs.c - a faulty backing store for the fault tests: a small passthrough FUSE server
 * (libfuse3 high-level API) over a directory, with two kinds of files decided by name:
 *   - eio*:   read, write and fsync fail with EIO (open, stat, truncate, unlink work);
 *   - stall*: a read blocks until the release file exists (-o release=PATH), the daemon is
 *             asked to exit (unmount, SIGTERM), or stall_max seconds pass (a safety net so a
 *             broken test cannot hang forever); then it proceeds normally.
 * Everything else passes through. Every open is direct_io, so each read and write reaches
 * this daemon (no page cache hides a fault). Counters of the faults served are printed on
 * stderr at exit.
 *
 *   cfqfs_faultfs [-f] [-o allow_other,release=PATH,stall_max=S] BACKING MOUNTPOINT
 *
 * Test tool only: operations run with the daemon's credentials (new files belong to whoever
 * runs it), names are resolved relative to one directory fd, symlinks are not followed.
 */
#define FUSE_USE_VERSION 31

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

/* Parsed options; fixed after main() starts the loop. */
struct ff_opts {
	char *backing;	  /* BACKING (first non-option argument), owned */
	char *release;	  /* release file path, may be NULL (then only exit/stall_max end a stall) */
	unsigned stall_max; /* [s] longest stall; 0 means the default */
};

static struct ff_opts opts;
static int backing_fd = -1;		/* O_PATH|O_DIRECTORY fd of BACKING */
static atomic_uint nr_eio, nr_stalled;	/* faults served, reported at exit */

#define FF_STALL_MAX_DEFAULT 120 /* [s] */
#define FF_POLL_NS 5000000L	  /* [ns] release-file poll period */

/* "/" -> ".", "/a/b" -> "a/b": paths relative to backing_fd */
static const char *rel(const char *path)
{
	return path[1] ? path + 1 : ".";
}

static bool name_starts(const char *path, const char *prefix)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return strncmp(base, prefix, strlen(prefix)) == 0;
}

static int neg_errno(int r)
{
	return r < 0 ? -errno : r;
}

static int ff_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	if (fi)
		return neg_errno(fstat((int)fi->fh, st));
	return neg_errno(fstatat(backing_fd, rel(path), st, AT_SYMLINK_NOFOLLOW));
}

static int ff_readlink(const char *path, char *buf, size_t size)
{
	ssize_t n = readlinkat(backing_fd, rel(path), buf, size - 1);

	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

static int ff_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
		      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	int fd = openat(backing_fd, rel(path), O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
	struct dirent *de;
	DIR *d;

	(void)off;
	(void)fi;
	(void)flags;
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		int e = errno;

		close(fd);
		return -e;
	}
	while ((de = readdir(d)))
		if (fill(buf, de->d_name, NULL, 0, 0))
			break;
	closedir(d);
	return 0;
}

static int ff_mknod(const char *path, mode_t mode, dev_t rdev)
{
	return neg_errno(mknodat(backing_fd, rel(path), mode, rdev));
}

static int ff_mkdir(const char *path, mode_t mode)
{
	return neg_errno(mkdirat(backing_fd, rel(path), mode));
}

static int ff_unlink(const char *path)
{
	return neg_errno(unlinkat(backing_fd, rel(path), 0));
}

static int ff_rmdir(const char *path)
{
	return neg_errno(unlinkat(backing_fd, rel(path), AT_REMOVEDIR));
}

static int ff_symlink(const char *target, const char *path)
{
	return neg_errno(symlinkat(target, backing_fd, rel(path)));
}

static int ff_rename(const char *from, const char *to, unsigned int flags)
{
	return neg_errno(renameat2(backing_fd, rel(from), backing_fd, rel(to), flags));
}

static int ff_link(const char *from, const char *to)
{
	return neg_errno(linkat(backing_fd, rel(from), backing_fd, rel(to), 0));
}

static int ff_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	if (fi)
		return neg_errno(fchmod((int)fi->fh, mode));
	return neg_errno(fchmodat(backing_fd, rel(path), mode, 0));
}

static int ff_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
	if (fi)
		return neg_errno(fchown((int)fi->fh, uid, gid));
	return neg_errno(fchownat(backing_fd, rel(path), uid, gid, AT_SYMLINK_NOFOLLOW));
}

static int ff_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	int fd, r, e;

	if (fi)
		return neg_errno(ftruncate((int)fi->fh, size));
	fd = openat(backing_fd, rel(path), O_WRONLY | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	r = ftruncate(fd, size);
	e = errno;
	close(fd);
	return r < 0 ? -e : 0;
}

static int ff_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
	if (fi)
		return neg_errno(futimens((int)fi->fh, tv));
	return neg_errno(utimensat(backing_fd, rel(path), tv, AT_SYMLINK_NOFOLLOW));
}

static int ff_open(const char *path, struct fuse_file_info *fi)
{
	int fd = openat(backing_fd, rel(path), (fi->flags & ~O_CREAT) | O_NOFOLLOW);

	if (fd < 0)
		return -errno;
	fi->fh = (uint64_t)fd;
	fi->direct_io = 1;
	return 0;
}

static int ff_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	int fd = openat(backing_fd, rel(path), fi->flags | O_CREAT | O_NOFOLLOW, mode);

	if (fd < 0)
		return -errno;
	fi->fh = (uint64_t)fd;
	fi->direct_io = 1;
	return 0;
}

/* Blocks a stall* read until the release file appears, the session ends or stall_max. */
static void stall(void)
{
	struct fuse_session *se = fuse_get_session(fuse_get_context()->fuse);
	struct timespec poll = { 0, FF_POLL_NS };
	unsigned max = opts.stall_max ? opts.stall_max : FF_STALL_MAX_DEFAULT;
	long polls = (long)max * (1000000000L / FF_POLL_NS);

	atomic_fetch_add(&nr_stalled, 1);
	for (long i = 0; i < polls; i++) {
		if (opts.release && access(opts.release, F_OK) == 0)
			return;
		if (fuse_session_exited(se))
			return;
		nanosleep(&poll, NULL);
	}
	fprintf(stderr, "faultfs: stall_max (%u s) reached, releasing a read\n", max);
}

static int ff_read(const char *path, char *buf, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	ssize_t n;

	if (name_starts(path, "eio")) {
		atomic_fetch_add(&nr_eio, 1);
		return -EIO;
	}
	if (name_starts(path, "stall"))
		stall();
	n = pread((int)fi->fh, buf, size, off);
	return n < 0 ? -errno : (int)n;
}

static int ff_write(const char *path, const char *buf, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	ssize_t n;

	if (name_starts(path, "eio")) {
		atomic_fetch_add(&nr_eio, 1);
		return -EIO;
	}
	n = pwrite((int)fi->fh, buf, size, off);
	return n < 0 ? -errno : (int)n;
}

static int ff_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	if (name_starts(path, "eio")) {
		atomic_fetch_add(&nr_eio, 1);
		return -EIO;
	}
	return neg_errno(datasync ? fdatasync((int)fi->fh) : fsync((int)fi->fh));
}

static int ff_release(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	close((int)fi->fh);
	return 0;
}

static int ff_statfs(const char *path, struct statvfs *st)
{
	int fd = openat(backing_fd, rel(path), O_RDONLY | O_NOFOLLOW), r, e;

	if (fd < 0)
		return -errno;
	r = fstatvfs(fd, st);
	e = errno;
	close(fd);
	return r < 0 ? -e : 0;
}

static void *ff_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	(void)conn;
	cfg->use_ino = 1;	/* cfqfs keys its inodes by (dev, ino): show the real ones */
	cfg->entry_timeout = 0; /* names change behind the tests' back (they write BACKING) */
	cfg->attr_timeout = 0;
	cfg->negative_timeout = 0;
	return NULL;
}

static const struct fuse_operations ff_ops = {
	.init = ff_init,
	.getattr = ff_getattr,
	.readlink = ff_readlink,
	.readdir = ff_readdir,
	.mknod = ff_mknod,
	.mkdir = ff_mkdir,
	.unlink = ff_unlink,
	.rmdir = ff_rmdir,
	.symlink = ff_symlink,
	.rename = ff_rename,
	.link = ff_link,
	.chmod = ff_chmod,
	.chown = ff_chown,
	.truncate = ff_truncate,
	.utimens = ff_utimens,
	.open = ff_open,
	.create = ff_create,
	.read = ff_read,
	.write = ff_write,
	.fsync = ff_fsync,
	.release = ff_release,
	.statfs = ff_statfs,
};

static const struct fuse_opt ff_optspec[] = {
	{ "release=%s", offsetof(struct ff_opts, release), 0 },
	{ "stall_max=%u", offsetof(struct ff_opts, stall_max), 0 },
	FUSE_OPT_END
};

/* Takes the first non-option argument as BACKING; the second goes on to libfuse. */
static int ff_optproc(void *data, const char *arg, int key, struct fuse_args *out)
{
	struct ff_opts *o = data;

	(void)out;
	if (key == FUSE_OPT_KEY_NONOPT && !o->backing) {
		o->backing = strdup(arg);
		return o->backing ? 0 : -1;
	}
	return 1;
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	int ret = 1;

	if (fuse_opt_parse(&args, &opts, ff_optspec, ff_optproc) != 0)
		goto out_args;
	if (!opts.backing) {
		fprintf(stderr, "usage: %s [FUSE options] [-o release=PATH,stall_max=S] "
				"BACKING MOUNTPOINT\n", argv[0]);
		goto out_args;
	}
	backing_fd = open(opts.backing, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (backing_fd < 0) {
		fprintf(stderr, "faultfs: %s: %s\n", opts.backing, strerror(errno));
		goto out_args;
	}
	umask(0); /* modes come from the callers, already masked */
	ret = fuse_main(args.argc, args.argv, &ff_ops, NULL);
	fprintf(stderr, "faultfs: exit %d, served %u EIO, stalled %u reads\n", ret,
		atomic_load(&nr_eio), atomic_load(&nr_stalled));
	close(backing_fd);
out_args:
	fuse_opt_free_args(&args);
	free(opts.backing);
	free(opts.release);
	return ret;
}
