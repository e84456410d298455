/* SPDX-License-Identifier: GPL-2.0-or-later */
/* cg_proc.c - /proc, cgroupfs and ioprio reads (contract: cg_proc.h). */
#include "cg_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define IOPRIO_WHO_PROCESS 1

int cg_proc_read_file(const char *path, char *buf, size_t bufsz, size_t *len)
{
	size_t n = 0;
	int fd, rc = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	/* read until EOF; one byte of spare room tells "exactly full" from "too big" */
	for (;;) {
		ssize_t r;

		if (n == bufsz) {
			char extra;
			do
				r = read(fd, &extra, 1);
			while (r < 0 && errno == EINTR);
			rc = r == 0 ? 0 : (r > 0 ? -EFBIG : -errno);
			break;
		}
		r = read(fd, buf + n, bufsz - n);
		if (r < 0) {
			int e = errno;
			if (e == EINTR)
				continue;
			rc = -e;
			break;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (rc == 0)
		*len = n;
out:
	return rc;
}

/* -ENOENT / -ESRCH on a per-task file both mean "the task is gone". */
static int task_err(int rc)
{
	return (rc == -ENOENT || rc == -ESRCH) ? -ESRCH : rc;
}

static int read_task_file(const char *proc, pid_t tid, const char *name, char *buf, size_t bufsz,
			  size_t *len)
{
	char path[PATH_MAX];
	int n;

	if (tid <= 0)
		return -ESRCH;
	n = snprintf(path, sizeof(path), "%s/%d/%s", proc, (int)tid, name);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	return task_err(cg_proc_read_file(path, buf, bufsz, len));
}

int cg_proc_stat(const char *proc, pid_t tid, struct cg_stat *out)
{
	char buf[CG_PROC_SMALL_MAX];
	size_t len;
	int rc;

	rc = read_task_file(proc, tid, "stat", buf, sizeof(buf), &len);
	if (rc)
		return rc;
	/* a task reaped between open and read shows as an empty file */
	if (len == 0)
		return -ESRCH;
	return cg_parse_stat(buf, len, out);
}

int cg_proc_status(const char *proc, pid_t tid, struct cg_status *out)
{
	char buf[CG_PROC_SMALL_MAX];
	size_t len;
	int rc;

	rc = read_task_file(proc, tid, "status", buf, sizeof(buf), &len);
	if (rc)
		return rc;
	if (len == 0)
		return -ESRCH;
	return cg_parse_status(buf, len, out);
}

int cg_proc_cgroup(const char *proc, pid_t tid, char *buf, size_t bufsz, size_t *len,
		   struct cg_proc_cgroup *out)
{
	int rc;

	rc = read_task_file(proc, tid, "cgroup", buf, bufsz, len);
	if (rc)
		return rc;
	if (*len == 0)
		return -ESRCH;
	return cg_parse_proc_cgroup(buf, *len, out);
}

int cg_proc_ioprio(pid_t tid)
{
	long r = syscall(SYS_ioprio_get, IOPRIO_WHO_PROCESS, (int)tid);

	if (r < 0) {
		int e = errno;
		return -e;
	}
	return (int)r;
}

int cg_proc_set_ioprio(pid_t tid, int ioprio)
{
	long r = syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, (int)tid, ioprio);

	if (r < 0) {
		int e = errno;
		return -e;
	}
	return 0;
}

int cg_proc_mounts(const char *mountinfo_path, struct cg_mounts *out, bool *unified_has_io)
{
	char *buf;
	char ctl[CG_PROC_SMALL_MAX], path[PATH_MAX + 32];
	size_t len;
	int rc;

	*unified_has_io = false;
	buf = malloc(CG_PROC_MOUNTINFO_MAX);
	if (!buf) {
		rc = -ENOMEM;
		goto out;
	}
	rc = cg_proc_read_file(mountinfo_path, buf, CG_PROC_MOUNTINFO_MAX, &len);
	if (rc)
		goto out_free;
	rc = cg_parse_mountinfo(buf, len, out);
	if (rc)
		goto out_free;
	if (out->v2.dir[0]) {
		int n = snprintf(path, sizeof(path), "%s/cgroup.controllers", out->v2.dir);
		if (n > 0 && (size_t)n < sizeof(path) &&
		    cg_proc_read_file(path, ctl, sizeof(ctl), &len) == 0)
			*unified_has_io = cg_controllers_has(ctl, len, "io");
	}
out_free:
	free(buf);
out:
	return rc;
}

int cg_proc_weight_file(const struct cg_mount *m, const char *path, enum cg_weight_file f,
			dev_t dev, uint32_t *weight)
{
	char dir[PATH_MAX], file[PATH_MAX + 32], buf[CG_PROC_SMALL_MAX];
	const char *name = cg_weight_file_name(f);
	size_t len;
	int rc, n;

	if (!name)
		return -EINVAL;
	rc = cg_resolve_dir(m, path, dir, sizeof(dir));
	if (rc)
		return rc;
	n = snprintf(file, sizeof(file), "%s/%s", dir, name);
	if (n < 0 || (size_t)n >= sizeof(file))
		return -ENAMETOOLONG;
	rc = cg_proc_read_file(file, buf, sizeof(buf), &len);
	if (rc)
		return rc;
	return cg_parse_weight(f, buf, len, dev, weight);
}

int cg_proc_group_weight(const struct cg_mounts *ms, const char *v2_path, const char *blkio_path,
			 dev_t dev, uint32_t *weight, enum cg_weight_file *which)
{
	static const enum cg_weight_file order[CG_WFILE_COUNT] = {
		CG_WFILE_IO_BFQ, CG_WFILE_IO, CG_WFILE_BLKIO_BFQ, CG_WFILE_BLKIO,
	};

	for (int i = 0; i < CG_WFILE_COUNT; i++) {
		bool v2 = order[i] == CG_WFILE_IO_BFQ || order[i] == CG_WFILE_IO;
		const char *p = v2 ? v2_path : blkio_path;
		uint32_t w;

		if (!p)
			continue;
		if (cg_proc_weight_file(v2 ? &ms->v2 : &ms->blkio, p, order[i], dev, &w) == 0) {
			*weight = w;
			*which = order[i];
			return 0;
		}
	}
	return -ENOENT;
}
