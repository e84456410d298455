/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "probe.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define PROBE_DEPTH_MAX 8 /* stacked dm/md levels we follow */

/* Reads a small sysfs file into buf (NUL-terminated, newline stripped). 0 or -errno. */
static int read_small(int dirfd, const char *rel, char *buf, size_t len)
{
	int fd = openat(dirfd, rel, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	int e = errno;
	close(fd);
	if (n < 0)
		return -e;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* `dirfd` is a /sys/block-style device directory. 1, 0 or -errno. */
static int rotational_of(int dirfd, int depth, char *what, size_t whatlen)
{
	char buf[64];
	int r;

	if (depth > PROBE_DEPTH_MAX)
		return -ELOOP;
	/* Stacked devices (dm, md) report the worst of what lies under them. */
	int sfd = openat(dirfd, "slaves", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (sfd >= 0) {
		DIR *d = fdopendir(sfd);
		struct dirent *de;
		int best = -ENODEV;

		if (!d) {
			close(sfd);
			goto own;
		}
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			int cfd = openat(sfd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (cfd < 0)
				continue;
			r = rotational_of(cfd, depth + 1, NULL, 0);
			close(cfd);
			if (r == 1 || (r == 0 && best < 0)) {
				best = r;
				if (what)
					snprintf(what, whatlen, "%s", de->d_name);
			}
		}
		closedir(d);
		if (best >= 0)
			return best;
	}
own:
	if (read_small(dirfd, "queue/rotational", buf, sizeof(buf)) == 0)
		return buf[0] == '1';
	/* A partition: the disk is the parent directory. */
	if (read_small(dirfd, "partition", buf, sizeof(buf)) == 0 &&
	    read_small(dirfd, "../queue/rotational", buf, sizeof(buf)) == 0)
		return buf[0] == '1';
	return -ENODEV;
}

int probe_rotational(const char *path, char *what, size_t whatlen)
{
	struct stat st;
	char sys[64];
	int fd, r;

	if (stat(path, &st) < 0)
		return -errno;
	if (major(st.st_dev) == 0)
		return -ENODEV; /* anonymous device: tmpfs, overlay, fuse, nfs... */
	snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u", major(st.st_dev), minor(st.st_dev));
	fd = open(sys, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ENODEV : -errno;
	if (what)
		snprintf(what, whatlen, "%u:%u", major(st.st_dev), minor(st.st_dev));
	r = rotational_of(fd, 0, what, whatlen);
	close(fd);
	return r;
}
