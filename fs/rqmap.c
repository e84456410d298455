/* SPDX-License-Identifier: GPL-2.0-or-later */
/* rqmap.c - FUSE data requests mapped to block-layer request flags (rqmap.h). */
#include "rqmap.h"

#include <fcntl.h>

uint8_t pt_rq_flags(enum sched_op op, int file_flags, bool writepage, bool journal)
{
	switch (op) {
	case SCHED_OP_READ:
		return SCHED_RQ_SYNC;
	case SCHED_OP_FSYNC:
	case SCHED_OP_FDATASYNC:
		return SCHED_RQ_SYNC | SCHED_RQ_NOIDLE;
	case SCHED_OP_WRITE:
		if (writepage)
			return 0; /* background writeback: nobody waits */
		if (file_flags & O_DIRECT)
			return SCHED_RQ_SYNC;
		/* O_SYNC includes O_DSYNC's bit on Linux; test both for other layouts */
		if ((file_flags & (O_SYNC | O_DSYNC)) || journal)
			return SCHED_RQ_SYNC | SCHED_RQ_NOIDLE;
		return SCHED_RQ_CALLER;
	}
	return SCHED_RQ_SYNC; /* unknown op: treated as the caller waiting on it */
}
