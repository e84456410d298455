/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rqmap.h - what the kernel's elevator would see for a FUSE data request.
 *
 * CFQ's rules were written for block-layer request streams: REQ_SYNC says a process waits
 * for the request, REQ_IDLE (its absence on a sync write) says whether the process may be
 * about to issue more I/O worth waiting for. cfqfs receives file-level requests instead, so
 * each one is given the flags the kernel would have put on the requests that the same
 * system call makes on a local filesystem (ext4, Linux 4.19):
 *
 *   READ                          sync; idling follows the queue's think time and seeks
 *                                 (reads never carry a no-idle hint in the kernel)
 *   FSYNC, FDATASYNC              sync, no-idle: fsync's forced writeback is WB_SYNC_ALL, so
 *                                 REQ_SYNC without REQ_IDLE (req_noidle() is true)
 *   WRITE on O_DIRECT             sync, may idle: dio_bio_write_op() sets REQ_SYNC | REQ_IDLE
 *                                 (O_DIRECT wins over O_SYNC/O_DSYNC, as in the kernel, where
 *                                 the data goes direct and only the flush after it is extra)
 *   WRITE on O_SYNC / O_DSYNC     sync, no-idle: a buffered write followed by
 *                                 generic_write_sync(), i.e. the writeback fsync makes
 *   WRITE on a "journal" handle   sync, no-idle (cfqfs): a handle that has been fsynced
 *                                 (PostgreSQL's WAL, a log); on a local filesystem its data
 *                                 would be written by the next fsync, as REQ_SYNC without
 *                                 REQ_IDLE; through a write-through FUSE mount it arrives
 *                                 with the WRITE instead, so the WRITE gets those flags
 *   WRITE, other                  async (background writeback issues buffered data), with
 *                                 SCHED_RQ_CALLER: through FUSE without writeback caching the
 *                                 caller waits for it, which the kernel's async rules assume
 *                                 nobody does (sched_cfq.c: no cross-group preemption by
 *                                 sync, charged by time used, group idle after it)
 *   WRITE from writeback cache    async: the kernel's own writeback of cached pages
 *
 * `file_flags` are the file's status flags at the request (FUSE's WRITE carries them, with
 * O_DSYNC/O_SYNC added for pwritev2(RWF_DSYNC/RWF_SYNC)), so fcntl(F_SETFL, O_DIRECT) and
 * per-call sync flags are honoured.
 */
#ifndef CFQFS_RQMAP_H
#define CFQFS_RQMAP_H

#include <stdbool.h>
#include <stdint.h>

#include "sched.h"

/* The SCHED_RQ_* flags for a request `op` on a file in status `file_flags` (O_* bits);
 * `writepage`: a write of the kernel's writeback cache; `journal`: the handle has been
 * fsynced before. Pure; cannot fail. */
uint8_t pt_rq_flags(enum sched_op op, int file_flags, bool writepage, bool journal);

#endif
