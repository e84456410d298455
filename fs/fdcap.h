/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fdcap.h - a reserve of file descriptors for the daemon's short-lived uses.
 *
 * The daemon holds a descriptor per inode the kernel caches and per open file or directory.
 * If those took every descriptor up to RLIMIT_NOFILE, operations on handles that already exist
 * would fail as well, because some need a descriptor for a moment: close(2)'s FLUSH duplicates
 * the file's descriptor (and would fail the caller's close() with EMFILE, losing a backing
 * filesystem's write-back error), the classifier reads /proc, a truncation may reopen the
 * file. So the long-lived descriptors stop a reserve short of the limit: each is passed
 * through fdcap_keep() when opened, which refuses it, as EMFILE, from the cap (limit -
 * reserve) up. Record locks are served from the reserve on purpose: a lock owner's own open
 * file description (pt_lock.c) lives while it holds locks on the file, and a lock on a file
 * already open should not fail because other callers opened too much.
 *
 * Invariant: every descriptor kept through fdcap_keep() is below the cap. Descriptors are
 * allocated lowest first, so a new one at or above the cap means at most reserve - 1 were
 * free; and as only short-lived descriptors and lock owners' ever sit at or above the cap,
 * the reserve is free again as soon as they are closed. A process-wide property, like the
 * descriptor table it describes: the cap is one atomic, read without a lock.
 */
#ifndef CFQFS_FDCAP_H
#define CFQFS_FDCAP_H

/* Reserve [descriptors]: limit / FDCAP_RESERVE_DIV, within [FDCAP_RESERVE_MIN, _MAX]. It covers
 * one short-lived descriptor per thread (FUSE threads and workers) with room to spare. */
#define FDCAP_RESERVE_DIV 32
#define FDCAP_RESERVE_MIN 16
#define FDCAP_RESERVE_MAX 256

/*
 * Sets the cap from the current RLIMIT_NOFILE (call again after changing the limit). Without
 * a call, or with no limit, nothing is refused. Returns the reserve [descriptors].
 * Cannot fail.
 */
unsigned fdcap_init(void);

/*
 * For a long-lived descriptor just opened: returns `fd` when it is below the cap; otherwise
 * closes it and returns -1 with errno = EMFILE. A failed open (-1, errno set) passes through
 * unchanged, so it wraps the call: fd = fdcap_keep(openat(...)).
 */
int fdcap_keep(int fd);

#endif
