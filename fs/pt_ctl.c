/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt_ctl.c - the control directory hook (opts->ctl_dir at the root).
 *
 * The passthrough reserves the name: lookups at the root answer from here, and creating,
 * removing or renaming onto it is refused (EPERM) by pt_ops.c, so a SOURCE entry of that name
 * can neither shadow nor be confused with the control files.
 */
#include <errno.h>

#include "pt_i.h"

int pt_ctl_lookup(struct pt_fs *fs, fuse_req_t req, struct fuse_entry_param *e)
{
	/* TODO(lead): build the .cfqfs/ tree (scheduler, iosched/, io.stat, metrics). */
	(void)fs;
	(void)req;
	(void)e;
	return -ENOENT;
}
