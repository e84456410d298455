/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fusectl.h - the kernel's per-connection FUSE knobs under /sys/fs/fuse/connections/N
 * (the "fusectl" filesystem), for settings that must change while the mount is live.
 *
 * N is the connection's device number, the st_dev of the mount's root in the kernel's own
 * encoding (major << 20 | minor; FUSE superblocks are anonymous, major 0). The daemon cannot
 * stat its own mount from just anywhere (a session thread would wait for itself, and before
 * INIT is answered anyone would), so the number is read from /proc/self/mountinfo instead,
 * right after mounting, while the new mount is the topmost one on its path.
 */
#ifndef CFQFS_FUSECTL_H
#define CFQFS_FUSECTL_H

#include <stddef.h>

/* Where systemd (and the tests, when it is not there) mount fusectl. */
#define FUSECTL_DIR "/sys/fs/fuse/connections"

/*
 * The kernel's congestion_threshold for a max_background of `bg`: 3/4 of it, the kernel's own
 * default ratio (12 -> 9), at least 1. At the threshold the kernel marks the connection
 * congested and stops starting asynchronous readahead. Cannot fail.
 */
unsigned fusectl_congestion_for(unsigned bg);

/*
 * Finds the FUSE connection mounted on `mnt` (an absolute path without symlinks, as
 * realpath() gives) in `mountinfo` (normally "/proc/self/mountinfo"): the last line whose
 * mount point is `mnt` and whose type is "fuse" or "fuse.*", i.e. the topmost such mount.
 * Returns 0 and sets *conn, -ENOENT if there is none, -errno if the file cannot be read.
 */
int fusectl_find(const char *mountinfo, const char *mnt, unsigned *conn);

/*
 * Sets connection `conn`'s max_background to `bg` and its congestion_threshold to
 * fusectl_congestion_for(bg), under the fusectl directory `dir` (normally FUSECTL_DIR).
 * Requires bg in [1, 65535] (the kernel's limit) else -EINVAL, nothing written. Writes
 * max_background first, then the threshold. Returns 0, or -ENOENT (fusectl not mounted or
 * no such connection), -EACCES without the right to write, or the -errno of the write that
 * failed; when the threshold's fails, max_background is put back to the value it had (if it
 * could be read), so nothing has changed then either.
 */
int fusectl_set_background(const char *dir, unsigned conn, unsigned bg);

#endif
