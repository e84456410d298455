/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt_lock.c - POSIX record locks (fcntl F_GETLK/F_SETLK/F_SETLKW) passed through to SOURCE.
 *
 * The daemon is one process, so classic POSIX locks taken on the callers' behalf would all
 * belong to it. Open-file-description (OFD) locks belong to an open file description instead,
 * so each lock owner the kernel names (fi->lock_owner: one per calling process, i.e. per
 * files_struct) gets its own open file description of the backing file, and its locks are OFD
 * locks on that. This reproduces POSIX semantics exactly:
 *   - different processes conflict, threads of one process do not, whatever handles they use;
 *   - a process's locks go away when it closes ANY descriptor of the file: the kernel sends
 *     FLUSH with that owner on every close(2), and flush closes the owner's description;
 *   - F_GETLK reports the owner's pid: the conflicting OFD lock is matched to the record
 *     holding it (probing each other owner's description), whose pid came with its F_SETLK.
 * Locks taken on SOURCE by processes outside the mount are seen and honoured (the backing
 * kernel arbitrates); their pid is reported as the backing kernel gives it.
 *
 * Blocking requests (F_SETLKW) wait on the FUSE session thread, so the multi-threaded loop is
 * required, and more blocked waiters than loop threads could stall the mount. An interrupted
 * waiter is not woken early (no FUSE interrupt handling here).
 *
 * Lock: tab->lock protects the buckets, each record's refs/dead and the list links. It is held
 * across non-blocking F_OFD_GETLK probes (which never sleep) and never across F_OFD_SETLKW.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "pt_i.h"

/* Buckets of the owner table, keyed by backing inode so that every owner of one file sits in
 * one chain (F_GETLK walks them). Lock owners are few at any time: a fixed size suffices. */
#define PT_LOCK_BUCKETS 256u

/* One lock owner on one backing file. Invariant: in a chain iff !dead; freed (fd closed) when
 * dead and refs == 0. */
struct lock_owner {
	dev_t dev;		   /* backing file; immutable */
	ino_t ino;		   /* backing file; immutable */
	uint64_t owner;		   /* fi->lock_owner; immutable */
	int fd;			   /* the owner's own open file description; immutable */
	pid_t pid;		   /* last pid that locked as this owner; protected by tab->lock */
	unsigned refs;		   /* requests using fd [count]; protected by tab->lock */
	bool dead;		   /* flushed: unlinked, closes at refs == 0; protected by tab->lock */
	struct lock_owner *next;   /* chain; protected by tab->lock */
};

struct pt_locks {
	pthread_mutex_t lock;			  /* the table lock (leaf) */
	struct lock_owner *bucket[PT_LOCK_BUCKETS]; /* protected by lock */
};

struct pt_locks *pt__locks_create(void)
{
	struct pt_locks *tab = calloc(1, sizeof(*tab));

	if (!tab)
		return NULL;
	if (pthread_mutex_init(&tab->lock, NULL) != 0) {
		free(tab);
		return NULL;
	}
	return tab;
}

void pt__locks_destroy(struct pt_locks *tab)
{
	size_t i;

	if (!tab)
		return;
	for (i = 0; i < PT_LOCK_BUCKETS; i++) {
		struct lock_owner *lo, *next;

		for (lo = tab->bucket[i]; lo; lo = next) {
			next = lo->next;
			close(lo->fd);
			free(lo);
		}
	}
	pthread_mutex_destroy(&tab->lock);
	free(tab);
}

static struct lock_owner **chain(struct pt_locks *tab, dev_t dev, ino_t ino)
{
	return &tab->bucket[pt_inode_file_id(dev, ino) % PT_LOCK_BUCKETS];
}

/* Called with tab->lock held. */
static struct lock_owner *find(struct pt_locks *tab, const struct pt_file *pf, uint64_t owner)
{
	struct lock_owner *lo;

	for (lo = *chain(tab, pf->dev, pf->ino); lo; lo = lo->next)
		if (lo->dev == pf->dev && lo->ino == pf->ino && lo->owner == owner)
			return lo;
	return NULL;
}

/* Drops a request's reference. Called with tab->lock held; returns true if the caller must
 * free `lo` after unlocking. */
static bool unref(struct lock_owner *lo)
{
	lo->refs--;
	return lo->dead && lo->refs == 0;
}

static void free_owner(struct lock_owner *lo)
{
	close(lo->fd);
	free(lo);
}

/* A new open file description of the handle's file: read-write so that both lock types work
 * (the kernel already checked the caller's descriptor mode), else whatever SOURCE allows. */
static int open_description(const struct pt_file *pf)
{
	static const int modes[] = { O_RDWR, O_RDONLY, O_WRONLY };
	char proc[32];
	size_t i;
	int fd = -1;

	pt__proc_path(proc, sizeof(proc), pf->fd);
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]) && fd == -1; i++)
		fd = open(proc, modes[i] | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	return fd == -1 ? -errno : fd;
}

/* Finds or creates the owner record and takes a reference. Returns 0 or -errno. */
static int get_owner(struct pt_locks *tab, const struct pt_file *pf, uint64_t owner, pid_t pid,
		     struct lock_owner **out)
{
	struct lock_owner *lo, *fresh;
	int fd;

	pthread_mutex_lock(&tab->lock);
	lo = find(tab, pf, owner);
	if (lo) {
		lo->refs++;
		lo->pid = pid;
		pthread_mutex_unlock(&tab->lock);
		*out = lo;
		return 0;
	}
	pthread_mutex_unlock(&tab->lock);

	/* Open outside the lock, then insert unless another request of the owner won. */
	fd = open_description(pf);
	if (fd < 0)
		return fd;
	fresh = calloc(1, sizeof(*fresh));
	if (!fresh) {
		close(fd);
		return -ENOMEM;
	}
	pthread_mutex_lock(&tab->lock);
	lo = find(tab, pf, owner);
	if (!lo) {
		struct lock_owner **head = chain(tab, pf->dev, pf->ino);

		fresh->dev = pf->dev;
		fresh->ino = pf->ino;
		fresh->owner = owner;
		fresh->fd = fd;
		fresh->next = *head;
		*head = fresh;
		lo = fresh;
		fresh = NULL;
	}
	lo->refs++;
	lo->pid = pid;
	pthread_mutex_unlock(&tab->lock);
	if (fresh)
		free_owner(fresh);
	*out = lo;
	return 0;
}

static void put_owner(struct pt_locks *tab, struct lock_owner *lo)
{
	bool dead;

	pthread_mutex_lock(&tab->lock);
	dead = unref(lo);
	pthread_mutex_unlock(&tab->lock);
	if (dead)
		free_owner(lo);
}

/*
 * Which owner holds `found`, the conflicting lock F_OFD_GETLK reported for a request of type
 * `type`? A lock is invisible from its own description, so probing from each other owner's
 * description over found's range makes it vanish (or change) exactly for its holder.
 * Called with tab->lock held; the probes do not block. Returns the pid or 0 if unknown.
 */
static pid_t holder_pid(struct pt_locks *tab, const struct pt_file *pf, uint64_t requester,
			short type, const struct flock *found)
{
	struct lock_owner *lo;

	for (lo = *chain(tab, pf->dev, pf->ino); lo; lo = lo->next) {
		struct flock probe = {
			.l_type = type,
			.l_whence = SEEK_SET,
			.l_start = found->l_start,
			.l_len = found->l_len,
		};

		if (lo->dev != pf->dev || lo->ino != pf->ino || lo->owner == requester)
			continue;
		if (fcntl(lo->fd, F_OFD_GETLK, &probe) == -1)
			continue;
		if (probe.l_type == F_UNLCK || probe.l_type != found->l_type ||
		    probe.l_start != found->l_start || probe.l_len != found->l_len)
			return lo->pid;
	}
	return 0;
}

static int do_getlk(struct pt_fs *fs, const struct pt_file *pf, uint64_t owner,
		    struct flock *lock)
{
	struct pt_locks *tab = fs->locks;
	struct lock_owner *lo;
	short type = lock->l_type;
	int rc = 0;

	lock->l_pid = 0; /* required by the OFD commands */
	pthread_mutex_lock(&tab->lock);
	/* From the requester's own description its own locks are ignored, as F_GETLK wants; an
	 * owner without a record holds no lock, and the handle's fd carries none. */
	lo = find(tab, pf, owner);
	if (fcntl(lo ? lo->fd : pf->fd, F_OFD_GETLK, lock) == -1)
		rc = -errno;
	else if (lock->l_type != F_UNLCK && lock->l_pid == -1)
		lock->l_pid = holder_pid(tab, pf, owner, type, lock);
	pthread_mutex_unlock(&tab->lock);
	return rc;
}

static int do_setlk(struct pt_fs *fs, const struct pt_file *pf, uint64_t owner,
		    struct flock *lock, bool sleep)
{
	struct lock_owner *lo;
	pid_t pid = lock->l_pid;
	int rc;

	if (lock->l_type == F_UNLCK) {
		/* No record: the owner holds nothing here. Do not create one to unlock. */
		pthread_mutex_lock(&fs->locks->lock);
		lo = find(fs->locks, pf, owner);
		if (lo)
			lo->refs++;
		pthread_mutex_unlock(&fs->locks->lock);
		if (!lo)
			return 0;
	} else {
		rc = get_owner(fs->locks, pf, owner, pid, &lo);
		if (rc)
			return rc;
	}
	lock->l_pid = 0;
	rc = fcntl(lo->fd, sleep ? F_OFD_SETLKW : F_OFD_SETLK, lock) == -1 ? -errno : 0;
	put_owner(fs->locks, lo);
	return rc;
}

void pt__locks_flush(struct pt_fs *fs, const struct pt_file *pf, uint64_t owner)
{
	struct pt_locks *tab = fs->locks;
	struct lock_owner **pp, *lo = NULL;
	bool dead = false;

	pthread_mutex_lock(&tab->lock);
	for (pp = chain(tab, pf->dev, pf->ino); *pp; pp = &(*pp)->next) {
		if ((*pp)->dev == pf->dev && (*pp)->ino == pf->ino && (*pp)->owner == owner) {
			lo = *pp;
			*pp = lo->next;
			lo->next = NULL;
			lo->dead = true;
			dead = lo->refs == 0;
			break;
		}
	}
	pthread_mutex_unlock(&tab->lock);
	/* Closing the owner's description drops all its locks on the file, as POSIX close()
	 * does. A request still using it closes it when done (its lock then goes too). */
	if (dead)
		free_owner(lo);
}

void pt__getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *lock)
{
	int rc;

	(void)ino;
	rc = do_getlk(pt__fs(req), pt__file(fi), fi->lock_owner, lock);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_lock(req, lock);
}

void pt__setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *lock,
	       int sleep)
{
	int rc;

	(void)ino;
	rc = do_setlk(pt__fs(req), pt__file(fi), fi->lock_owner, lock, sleep != 0);
	fuse_reply_err(req, -rc);
}
