/* SPDX-License-Identifier: GPL-2.0-or-later */
/* probe.h - facts about SOURCE's backing device. */
#ifndef CFQFS_PROBE_H
#define CFQFS_PROBE_H

#include <stddef.h>

/*
 * Whether the block device under `path` spins: reads /sys/dev/block/MAJ:MIN/queue/rotational,
 * walking from a partition to its disk and from a device-mapper or md device to the devices
 * under it (rotational if any of them is). Returns 1, 0, or -ENODEV when `path` is not on a
 * block device (tmpfs, overlay, network filesystems), -errno if `path` cannot be stat'ed.
 * `what` (optional) receives the device that decided, e.g. "vda" or "dm-0 -> sda".
 */
int probe_rotational(const char *path, char *what, size_t whatlen);

#endif
