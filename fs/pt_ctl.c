/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt_ctl.c - the control directory hook (opts->ctl_dir at the root).
 *
 * The passthrough reserves the name: lookups at the root answer from here, and creating,
 * removing or renaming onto it is refused (EPERM) by pt_ops.c, so a SOURCE entry of that name
 * can neither shadow nor be confused with the control files. pt_create() refuses to mount a
 * SOURCE that already has an entry of that name (it would be unreachable). Everything below
 * the control directory is served by ctl.c; pt_ops.c and pt_dir.c forward every request on a
 * control node id (ctl_owns()) there.
 */
#include <errno.h>

#include "pt_i.h"

int pt_ctl_lookup(struct pt_fs *fs, fuse_req_t req, struct fuse_entry_param *e)
{
	(void)req;
	if (!fs->ctl)
		return -ENOENT;
	ctl_root_entry(fs->ctl, e);
	return 0;
}
