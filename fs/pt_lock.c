/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt_lock.c - POSIX record locks (fcntl F_GETLK/F_SETLK/F_SETLKW) passed through to SOURCE, and
 * the waits of blocking lock requests (record locks and flock).
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
 *     holding it (the lock list of each other owner's description, /proc/self/fdinfo),
 *     whose pid came with its F_SETLK.
 * Locks taken on SOURCE by processes outside the mount are seen and honoured (the backing
 * kernel arbitrates); their pid is reported as the backing kernel gives it.
 *
 * Blocking requests (F_SETLKW, and flock without LOCK_NB) never sleep in the kernel on a FUSE
 * session thread: a session thread that did would be lost to the mount until the lock came
 * (a handful of waiters would stall every caller, metadata included), and could not be told
 * to stop when its caller is killed. Instead each is tried without blocking; if it conflicts it
 * becomes a waiter (struct lock_waiter) that one thread, "cfqfs-locks", tries again whenever a
 * lock of the mount may have gone (an unlock, a close, a grant: `events`), and every
 * PT_LOCK_POLL_MS for holders outside the mount, which send no event. So:
 *   - an interrupt (the caller got a signal, or was killed) answers the waiter EINTR at once,
 *     as the kernel's own lock wait does (the kernel restarts it after a handler that asks
 *     for SA_RESTART);
 *   - POSIX deadlocks between the mount's callers get EDEADLK, found as the kernel finds them
 *     (follow "the holder of what I need waits for the holder of ...", at most
 *     PT_DEADLOCK_STEPS hops), when a request would wait and again when another lock comes
 *     to block a waiter; OFD locks on SOURCE would otherwise wait forever;
 *   - flock has no deadlock detection (nor has the kernel's).
 * When the daemon stops, waiters get ENOLCK: not EINTR, which the kernel turns into a
 * restart that, with no signal pending, reaches the caller as errno 512 (ERESTARTSYS).
 * Waiter records are never freed while the table lives (libfuse may call the interrupt
 * callback with one that was just answered: it recognises that by req and state).
 *
 * Lock: tab->lock protects the buckets, each record's refs/dead and the list links, and the
 * waiters. It is held across non-blocking fcntl/flock calls (which never sleep) and across no
 * blocking call.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "pt_i.h"

/* Buckets of the owner table, keyed by backing inode so that every owner of one file sits in
 * one chain (F_GETLK walks them). Lock owners are few at any time: a fixed size suffices. */
#define PT_LOCK_BUCKETS 256u
/* Blocked requests at once; past it a blocking request fails with ENOLCK ("no locks
 * available"), so a caller cannot make the daemon allocate without bound. */
#define PT_LOCK_WAITERS_MAX 4096u
/* Of those, one uid may hold at most this many (root: all), so that one user, however many
 * processes or cgroups it runs, cannot take every slot and leave the others ENOLCK. */
#define PT_LOCK_WAITERS_UID_MAX (PT_LOCK_WAITERS_MAX / 4)
/* [ms] how often waiters are tried again without an event: the longest a waiter can stay
 * blocked after a process outside the mount releases the lock on SOURCE. */
#define PT_LOCK_POLL_MS 20
/* hops of the deadlock search (the kernel's MAX_DEADLK_ITERATIONS) */
#define PT_DEADLOCK_STEPS 10

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

enum waiter_state {
	W_FREE,	     /* on the free list */
	W_NEW,	     /* being set up by its session thread: not on the waiting list */
	W_WAITING,   /* on the waiting list */
	W_ANSWERING, /* taken off it; whoever did answers it with rc */
};

/* A blocking request that conflicted. Fields other than the links are the request's, set
 * while W_NEW by its session thread. */
struct lock_waiter {
	fuse_req_t req;		   /* protected by tab->lock */
	enum waiter_state state;   /* protected by tab->lock */
	bool irq;		   /* interrupted while W_NEW; protected by tab->lock */
	int rc;			   /* the answer (0 or -errno) once W_ANSWERING */
	struct pt_locks *tab;	   /* immutable */
	/* POSIX: the owner, a reference held; NULL: flock. If the owner is flushed meanwhile (a
	 * sibling thread closed the file), a grant lands on its closing description and goes
	 * with it, where the kernel would keep it: a rare race left as is. */
	struct lock_owner *lo;
	struct flock fl;	   /* POSIX: what it asks for */
	/* POSIX: the conflicting lock its description saw last (F_OFD_GETLK); when another one
	 * blocks it, the deadlock check runs again (waiter_main). Protected by tab->lock. */
	struct flock blocking;
	int fd;			   /* flock: the handle's descriptor (held open by the caller) */
	int op;			   /* flock: LOCK_SH or LOCK_EX */
	uid_t uid;		   /* the caller, counted in tab->wait_uid unless 0; by tab->lock */
	struct lock_waiter *next;  /* waiting list (FIFO) or free list; by tab->lock */
	struct lock_waiter *all;   /* every record, for destroy; by tab->lock */
};

struct pt_locks {
	pthread_mutex_t lock;			  /* the table lock (leaf) */
	struct lock_owner *bucket[PT_LOCK_BUCKETS]; /* protected by lock */
	/* Waiters. Invariant: a record is W_WAITING iff on `waiting`, W_FREE iff on `free`. */
	struct lock_waiter *waiting;		  /* oldest first; protected by lock */
	struct lock_waiter *free;		  /* protected by lock */
	struct lock_waiter *all;		  /* protected by lock */
	unsigned nr_records;			  /* allocated waiters; protected by lock */
	/* Records not W_FREE per caller's uid but 0 (PT_LOCK_WAITERS_UID_MAX). */
	struct uidtab *wait_uid;		  /* protected by lock */
	uint64_t events;	 /* bumped when a lock may have gone; protected by lock */
	pthread_cond_t wake;	 /* events or stop, for the thread */
	pthread_t thread;	 /* "cfqfs-locks", started with the first waiter */
	bool thread_started;	 /* protected by lock */
	bool stop;		 /* no more waiting: pt__locks_stop; protected by lock */
};

struct pt_locks *pt__locks_create(void)
{
	struct pt_locks *tab = calloc(1, sizeof(*tab));
	pthread_condattr_t ca;

	if (!tab)
		goto out;
	if (pthread_mutex_init(&tab->lock, NULL) != 0)
		goto out_free;
	if (pthread_condattr_init(&ca) != 0)
		goto out_mutex;
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (pthread_cond_init(&tab->wake, &ca) != 0) {
		pthread_condattr_destroy(&ca);
		goto out_mutex;
	}
	pthread_condattr_destroy(&ca);
	tab->wait_uid = uidtab_new();
	if (!tab->wait_uid)
		goto out_cond;
	return tab;

out_cond:
	pthread_cond_destroy(&tab->wake);
out_mutex:
	pthread_mutex_destroy(&tab->lock);
out_free:
	free(tab);
out:
	return NULL;
}

void pt__locks_destroy(struct pt_locks *tab)
{
	size_t i;

	if (!tab)
		return;
	pt__locks_stop(tab); /* normally done already, by the session's destroy */
	while (tab->all) {
		struct lock_waiter *w = tab->all;

		tab->all = w->all;
		free(w);
	}
	for (i = 0; i < PT_LOCK_BUCKETS; i++) {
		struct lock_owner *lo, *next;

		for (lo = tab->bucket[i]; lo; lo = next) {
			next = lo->next;
			close(lo->fd);
			free(lo);
		}
	}
	uidtab_free(tab->wait_uid);
	pthread_cond_destroy(&tab->wake);
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
 * Does one line of /proc/self/fdinfo/FD show an OFD lock of found's type (F_RDLCK or F_WRLCK)
 * over exactly found's range (SEEK_SET; l_len 0: to the end of the file)? false for any other
 * line or a malformed one. The kernel prints a description's locks as
 *   "lock:\t1: OFDLCK ADVISORY  READ -1 fe:00:10952859 0 9"   (end "EOF" for l_len 0).
 */
static bool fdinfo_line_matches(const char *line, const struct flock *found)
{
	char kind[16], rw[16], end[24], *stop;
	long long start, last;

	if ((found->l_type != F_RDLCK && found->l_type != F_WRLCK) || found->l_start < 0 ||
	    found->l_len < 0 ||
	    sscanf(line, "lock: %*d: %15s %*s %15s %*d %*s %lld %23s", kind, rw, &start, end) != 4)
		return false;
	if (strcmp(kind, "OFDLCK") != 0 ||
	    strcmp(rw, found->l_type == F_WRLCK ? "WRITE" : "READ") != 0 ||
	    start != (long long)found->l_start)
		return false;
	if (found->l_len == 0)
		return strcmp(end, "EOF") == 0;
	errno = 0;
	last = strtoll(end, &stop, 10);
	return errno == 0 && *stop == '\0' && stop != end &&
	       last == (long long)found->l_start + (long long)found->l_len - 1;
}

/* Does the description `fd` itself hold the OFD lock `found`? /proc/self/fdinfo lists exactly
 * a description's own locks; nothing else tells two owners' identical shared locks apart (each
 * looks the same from the other's side). false if the list cannot be read. */
static bool holds(int fd, const struct flock *found)
{
	char path[48], line[256];
	bool hit = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	if (!f)
		return false;
	/* a line longer than the buffer comes in pieces, and no piece but the first starts
	 * with "lock:" (lock lines are far shorter) */
	while (!hit && fgets(line, sizeof(line), f))
		hit = fdinfo_line_matches(line, found);
	fclose(f);
	return hit;
}

/* Is lo another owner of file (dev, ino) than `requester`? */
static bool other_owner(const struct lock_owner *lo, dev_t dev, ino_t ino, uint64_t requester)
{
	return lo->dev == dev && lo->ino == ino && lo->owner != requester;
}

/*
 * Which owner holds `found`, the conflicting lock F_OFD_GETLK reported for a request by owner
 * `requester` on file (dev, ino)? An owner whose own description holds exactly that lock (its
 * lock list, fdinfo, says so); with identical shared locks of several owners any of them is an
 * answer (as the kernel's F_GETLK names whichever it meets first).
 *   1. A description that sees no lock at all over found's range (a write probe conflicts
 *      with every lock) is the one candidate: found would be visible from any other. Its
 *      lock list confirms it, or found has gone since it was reported (tab->lock does not
 *      stop locks from changing: unlocks of the mount run outside it, and processes outside
 *      the mount take and drop locks on SOURCE at any time), and then nobody holds it.
 *      Taking the candidate unconfirmed named, after such a release, an owner that never
 *      locked the range: a wrong F_GETLK pid, and a false EDEADLK through deadlock().
 *   2. If every description sees a lock there, each other owner's lock list decides. The
 *      probe cannot: an identical lock of a third owner hides the holder's, and a
 *      description holding nothing may see the requester's own lock and look changed.
 * So the usual case (one holder) costs one fcntl per owner up to the holder and one lock list.
 * Called with tab->lock held; nothing here blocks. Returns NULL if no owner of the mount holds
 * found (a process outside the mount does, or it is gone).
 */
static struct lock_owner *holder(struct pt_locks *tab, dev_t dev, ino_t ino, uint64_t requester,
				 const struct flock *found)
{
	struct lock_owner *lo;

	for (lo = *chain(tab, dev, ino); lo; lo = lo->next) {
		struct flock probe = {
			.l_type = F_WRLCK,
			.l_whence = SEEK_SET,
			.l_start = found->l_start,
			.l_len = found->l_len,
		};

		if (other_owner(lo, dev, ino, requester) &&
		    fcntl(lo->fd, F_OFD_GETLK, &probe) == 0 && probe.l_type == F_UNLCK)
			return holds(lo->fd, found) ? lo : NULL;
	}
	for (lo = *chain(tab, dev, ino); lo; lo = lo->next) {
		if (other_owner(lo, dev, ino, requester) && holds(lo->fd, found))
			return lo;
	}
	return NULL;
}

static pid_t pid_of(const struct lock_owner *lo)
{
	return lo ? lo->pid : 0;
}

/* Times F_GETLK asks again when the OFD lock it found went before its holder was named. */
#define PT_GETLK_TRIES 3

static int do_getlk(struct pt_fs *fs, const struct pt_file *pf, uint64_t owner,
		    struct flock *lock)
{
	struct pt_locks *tab = fs->locks;
	const struct flock asked = *lock;
	struct lock_owner *lo, *h;
	int rc = 0;

	pthread_mutex_lock(&tab->lock);
	/* From the requester's own description its own locks are ignored, as F_GETLK wants; an
	 * owner without a record holds no lock, and the handle's fd carries none. */
	lo = find(tab, pf, owner);
	for (int tries = 1;; tries++) {
		*lock = asked;
		lock->l_pid = 0; /* required by the OFD commands */
		if (fcntl(lo ? lo->fd : pf->fd, F_OFD_GETLK, lock) == -1) {
			rc = -errno;
			break;
		}
		if (lock->l_type == F_UNLCK || lock->l_pid != -1)
			break; /* free, or a classic POSIX lock outside the mount: its pid */
		h = holder(tab, pf->dev, pf->ino, owner, lock);
		/* No holder: an OFD lock outside the mount (pid 0, as the backing kernel gives
		 * it), or the lock went meanwhile; then what is there now is the answer. */
		if (h || tries == PT_GETLK_TRIES) {
			lock->l_pid = pid_of(h);
			break;
		}
	}
	pthread_mutex_unlock(&tab->lock);
	return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* Waiting                                                                                   */

/* The waiter invariants (struct pt_locks). Called with tab->lock held. 0 or -EFAULT with a
 * message in buf. */
static int check_waiters(const struct pt_locks *tab, char *buf, size_t len)
{
	const struct lock_waiter *w;
	unsigned n = 0, waiting = 0, free_n = 0;
	uint64_t uid_held = 0, uid_sum = 0;

	for (w = tab->waiting; w; w = w->next, waiting++) {
		if (w->state != W_WAITING || !w->req || waiting > tab->nr_records)
			goto bad_waiting;
		if (w->lo && (w->lo->refs == 0 || w->fl.l_type == F_UNLCK))
			goto bad_waiting;
	}
	for (w = tab->free; w; w = w->next, free_n++)
		if (w->state != W_FREE || w->req || w->lo || free_n > tab->nr_records)
			goto bad_free;
	for (w = tab->all; w; w = w->all) {
		if (w->tab != tab || ++n > PT_LOCK_WAITERS_MAX)
			goto bad_all;
		waiting -= w->state == W_WAITING;
		free_n -= w->state == W_FREE;
		uid_held += w->state != W_FREE && w->uid != 0;
	}
	if (n != tab->nr_records || waiting || free_n)
		goto bad_all;
	if (uidtab_check(tab->wait_uid, &uid_sum, NULL, buf, len) < 0)
		return -EFAULT;
	if (uid_sum != uid_held) {
		snprintf(buf, len, "waiters per uid sum to %llu, %llu records are held by a uid",
			 (unsigned long long)uid_sum, (unsigned long long)uid_held);
		return -EFAULT;
	}
	return 0;

bad_waiting:
	snprintf(buf, len, "waiting list: record %u is not a live W_WAITING request", waiting);
	return -EFAULT;
bad_free:
	snprintf(buf, len, "free list: record %u is in use", free_n);
	return -EFAULT;
bad_all:
	snprintf(buf, len, "%u records for nr_records %u, or a list holds a record of another "
		 "state", n, tab->nr_records);
	return -EFAULT;
}

int pt__locks_check(struct pt_locks *tab, char *buf, size_t len)
{
	int rc;

	pthread_mutex_lock(&tab->lock);
	rc = check_waiters(tab, buf, len);
	pthread_mutex_unlock(&tab->lock);
	return rc;
}

/* Debug builds: abort at the first broken invariant. Called with tab->lock held. */
static void paranoid_check(const struct pt_locks *tab)
{
#ifndef NDEBUG
	char why[160];

	if (check_waiters(tab, why, sizeof(why)) != 0) {
		LOG_ERR("lock waiter invariant broken: %s", why);
		assert(!"lock waiter invariant broken");
	}
#else
	(void)tab;
#endif
}

void pt__locks_changed(struct pt_locks *tab)
{
	pthread_mutex_lock(&tab->lock);
	tab->events++;
	if (tab->waiting)
		pthread_cond_signal(&tab->wake);
	pthread_mutex_unlock(&tab->lock);
}

/* Tries w's request without blocking: 0 granted, -EAGAIN still in conflict, else -errno.
 * Called with tab->lock held. */
static int try_waiter(const struct lock_waiter *w)
{
	if (w->lo) {
		struct flock fl = w->fl;

		if (fcntl(w->lo->fd, F_OFD_SETLK, &fl) == 0)
			return 0;
		return errno == EACCES || errno == EAGAIN ? -EAGAIN : -errno;
	}
	if (flock(w->fd, w->op | LOCK_NB) == 0)
		return 0;
	return errno == EWOULDBLOCK ? -EAGAIN : -errno;
}

/* The owner of the mount whose lock blocks `fl` as asked from `from`'s description, or NULL
 * (no conflict any more, or a holder outside the mount). Called with tab->lock held. */
static struct lock_owner *blocker_of(struct pt_locks *tab, const struct lock_owner *from,
				     const struct flock *fl)
{
	struct flock probe = *fl;

	probe.l_pid = 0;
	if (fcntl(from->fd, F_OFD_GETLK, &probe) == -1 || probe.l_type == F_UNLCK)
		return NULL;
	return holder(tab, from->dev, from->ino, from->owner, &probe);
}

/*
 * Would POSIX waiter w (new, or already on the list) wait for itself? Follows the chain of
 * holders: the blocker's owner, if it waits (on any file of the mount), is blocked by another,
 * and so on, as the kernel's posix_locks_deadlock does. Lock owners are processes
 * (fi->lock_owner is the same for every file a process has open here). Called with tab->lock
 * held, right after blocker_changed(w) has recorded what blocks w now.
 */
static bool deadlock(struct pt_locks *tab, const struct lock_waiter *w)
{
	/* the first hop is the lock blocker_changed() has just found (no second F_OFD_GETLK) */
	const struct lock_owner *b =
		w->blocking.l_type == F_UNLCK
			? NULL
			: holder(tab, w->lo->dev, w->lo->ino, w->lo->owner, &w->blocking);

	for (int step = 0; b && step < PT_DEADLOCK_STEPS; step++) {
		const struct lock_waiter *x;

		if (b->owner == w->lo->owner)
			return true;
		for (x = tab->waiting; x && !(x->lo && x->lo->owner == b->owner); x = x->next)
			;
		if (!x)
			return false;
		b = blocker_of(tab, x->lo, &x->fl);
	}
	return false;
}

/*
 * Has a lock other than the one seen last come to block POSIX waiter w (which still
 * conflicts)? Records it if so. A deadlock can form after w began to wait: when the lock w
 * waits for goes and one of a process that waits for w's owner is in the way instead. The
 * kernel finds that when the woken waiter tries again; so does the waiter thread, with this.
 * (A lock passing to another owner with the same range and type looks the same from here:
 * the pid is -1 for every OFD lock. So a change of holder between them goes unseen, and a
 * deadlock formed that way waits until a signal. Telling them apart would need holder()'s
 * fdinfo reads on every pass of the waiter thread.) Called with tab->lock held.
 */
static bool blocker_changed(struct lock_waiter *w)
{
	struct flock now = w->fl;

	now.l_pid = 0;
	if (fcntl(w->lo->fd, F_OFD_GETLK, &now) == -1 || now.l_type == F_UNLCK)
		return false;
	if (now.l_type == w->blocking.l_type && now.l_start == w->blocking.l_start &&
	    now.l_len == w->blocking.l_len && now.l_pid == w->blocking.l_pid)
		return false;
	w->blocking = now;
	return true;
}

/* Answers a waiter taken off the list (W_ANSWERING, or W_NEW that never went on it) and
 * recycles it. Called without tab->lock. */
static void waiter_finish(struct lock_waiter *w)
{
	struct pt_locks *tab = w->tab;
	struct lock_owner *lo = w->lo;
	bool dead = false;

	fuse_reply_err(w->req, -w->rc);
	pthread_mutex_lock(&tab->lock);
	if (lo)
		dead = unref(lo);
	w->req = NULL;
	w->lo = NULL;
	if (w->uid != 0)
		uidtab_uncharge(tab->wait_uid, w->uid, 1, 0);
	w->state = W_FREE;
	w->next = tab->free;
	tab->free = w;
	if (w->rc == 0) {
		/* a flock conversion gave up its old lock: others may go now */
		tab->events++;
		if (tab->waiting)
			pthread_cond_signal(&tab->wake);
	}
	paranoid_check(tab);
	pthread_mutex_unlock(&tab->lock);
	if (dead)
		free_owner(lo);
}

/* Unlinks w from the waiting list and marks it W_ANSWERING with rc. Called with tab->lock
 * held. */
static void waiter_take(struct pt_locks *tab, struct lock_waiter *w, int rc)
{
	struct lock_waiter **pp;

	for (pp = &tab->waiting; *pp != w; pp = &(*pp)->next)
		;
	*pp = w->next;
	w->next = NULL;
	w->state = W_ANSWERING;
	w->rc = rc;
	paranoid_check(tab);
}

static void on_interrupt(fuse_req_t req, void *data)
{
	struct lock_waiter *w = data;
	struct pt_locks *tab = w->tab;
	bool answer = false;

	pthread_mutex_lock(&tab->lock);
	if (w->req == req) {
		if (w->state == W_NEW) {
			w->irq = true;
		} else if (w->state == W_WAITING) {
			waiter_take(tab, w, -EINTR);
			answer = true;
		}
	}
	pthread_mutex_unlock(&tab->lock);
	if (answer)
		waiter_finish(w);
}

/*
 * The waiter thread: each pass tries every waiter, oldest first, and answers those that got
 * their lock (or an error). A pass runs after every event, and every PT_LOCK_POLL_MS while
 * anyone waits.
 */
static void *waiter_main(void *arg)
{
	struct pt_locks *tab = arg;
	uint64_t seen = 0;

	(void)pthread_setname_np(pthread_self(), "cfqfs-locks");
	pthread_mutex_lock(&tab->lock);
	while (!tab->stop) {
		struct lock_waiter *w, *next, *done = NULL;
		struct timespec until;

		if (tab->events == seen) {
			/* bounded even with no waiter: a lost wake-up costs one period */
			clock_gettime(CLOCK_MONOTONIC, &until);
			until.tv_nsec += (tab->waiting ? PT_LOCK_POLL_MS : 1000) * 1000000L;
			until.tv_sec += until.tv_nsec / 1000000000L;
			until.tv_nsec %= 1000000000L;
			pthread_cond_timedwait(&tab->wake, &tab->lock, &until);
			if (tab->stop)
				break;
		}
		seen = tab->events;
		for (w = tab->waiting; w; w = next) {
			int rc = try_waiter(w);

			next = w->next;
			if (rc == -EAGAIN && w->lo && blocker_changed(w) && deadlock(tab, w))
				rc = -EDEADLK;
			if (rc == -EAGAIN)
				continue;
			waiter_take(tab, w, rc);
			w->next = done;
			done = w;
		}
		if (!done)
			continue;
		pthread_mutex_unlock(&tab->lock);
		for (w = done; w; w = next) {
			next = w->next;
			waiter_finish(w);
		}
		pthread_mutex_lock(&tab->lock);
	}
	pthread_mutex_unlock(&tab->lock);
	return NULL;
}

/* A free waiter record for a caller of `uid`, or NULL at PT_LOCK_WAITERS_MAX, at
 * PT_LOCK_WAITERS_UID_MAX of that uid, or out of memory. Called with tab->lock held. */
static struct lock_waiter *waiter_get(struct pt_locks *tab, uid_t uid)
{
	struct lock_waiter *w = tab->free;

	if (uid != 0 && uidtab_charge(tab->wait_uid, uid, 1, 0, PT_LOCK_WAITERS_UID_MAX, 0) < 0)
		return NULL;
	if (w) {
		tab->free = w->next;
	} else {
		if (tab->nr_records >= PT_LOCK_WAITERS_MAX || !(w = calloc(1, sizeof(*w)))) {
			if (uid != 0)
				uidtab_uncharge(tab->wait_uid, uid, 1, 0);
			return NULL;
		}
		w->tab = tab;
		w->all = tab->all;
		tab->all = w;
		tab->nr_records++;
	}
	w->next = NULL;
	w->irq = false;
	w->uid = uid;
	w->state = W_NEW;
	return w;
}

/*
 * Serves a blocking request: granted at once, refused (deadlock, error), or queued for the
 * waiter thread. Exactly one answer to req, by whoever takes the record off W_NEW/W_WAITING.
 * `lo` (POSIX; a reference the waiter takes over) or fd/op (flock).
 */
static void wait_for(struct pt_locks *tab, fuse_req_t req, struct lock_owner *lo,
		     const struct flock *fl, int fd, int op)
{
	struct lock_waiter *w;
	int rc;

	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	pthread_mutex_lock(&tab->lock);
	w = waiter_get(tab, ctx ? ctx->uid : 0);
	if (!w) {
		bool dead = lo && unref(lo);

		pthread_mutex_unlock(&tab->lock);
		if (dead)
			free_owner(lo);
		fuse_reply_err(req, ENOLCK);
		return;
	}
	w->req = req;
	w->lo = lo;
	if (fl) {
		w->fl = *fl;
		w->fl.l_pid = 0;
	}
	w->fd = fd;
	w->op = op;
	pthread_mutex_unlock(&tab->lock);
	/* Before anyone else can see w: if the request is already interrupted, this calls
	 * on_interrupt at once, which only marks it. */
	fuse_req_interrupt_func(req, on_interrupt, w);
	pthread_mutex_lock(&tab->lock);
	if (w->irq) {
		rc = -EINTR;
	} else if (tab->stop) {
		rc = -ENOLCK; /* see pt__locks_stop */
	} else {
		rc = try_waiter(w);
		if (rc == -EAGAIN && !w->lo)
			tab->events++; /* a flock conversion gave up its old lock trying */
		if (rc == -EAGAIN) {
			if (w->lo) {
				w->blocking = (struct flock){ .l_type = F_UNLCK };
				(void)blocker_changed(w);
			}
			if (w->lo && deadlock(tab, w)) {
				rc = -EDEADLK;
			} else if (!tab->thread_started &&
				   pthread_create(&tab->thread, NULL, waiter_main, tab) != 0) {
				LOG_WARN("cannot start the lock waiter thread: blocking locks fail "
					 "with ENOLCK");
				rc = -ENOLCK;
			} else {
				struct lock_waiter **pp;

				tab->thread_started = true;
				for (pp = &tab->waiting; *pp; pp = &(*pp)->next)
					;
				*pp = w;
				w->state = W_WAITING;
				paranoid_check(tab);
				pthread_cond_signal(&tab->wake); /* poll while it waits */
				pthread_mutex_unlock(&tab->lock);
				return;
			}
		}
	}
	w->state = W_ANSWERING;
	w->rc = rc;
	pthread_mutex_unlock(&tab->lock);
	waiter_finish(w);
}

void pt__locks_stop(struct pt_locks *tab)
{
	struct lock_waiter *w;
	bool join;

	pthread_mutex_lock(&tab->lock);
	tab->stop = true; /* from now on nobody starts the thread or joins the list */
	join = tab->thread_started;
	tab->thread_started = false;
	pthread_cond_signal(&tab->wake);
	pthread_mutex_unlock(&tab->lock);
	if (join)
		pthread_join(tab->thread, NULL);
	for (;;) {
		pthread_mutex_lock(&tab->lock);
		w = tab->waiting;
		if (w)
			waiter_take(tab, w, -ENOLCK);
		pthread_mutex_unlock(&tab->lock);
		if (!w)
			break;
		waiter_finish(w);
	}
}

/* ---------------------------------------------------------------------------------------- */
/* Requests                                                                                  */

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
	if (lo)
		pt__locks_changed(tab);
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
	struct pt_fs *fs = pt__fs(req);
	const struct pt_file *pf = pt__file(fi);
	struct lock_owner *lo;
	int rc;

	(void)ino;
	if (lock->l_type == F_UNLCK) {
		/* No record: the owner holds nothing here. Do not create one to unlock. */
		pthread_mutex_lock(&fs->locks->lock);
		lo = find(fs->locks, pf, fi->lock_owner);
		if (lo)
			lo->refs++;
		pthread_mutex_unlock(&fs->locks->lock);
		if (!lo) {
			fuse_reply_err(req, 0);
			return;
		}
	} else {
		rc = get_owner(fs->locks, pf, fi->lock_owner, lock->l_pid, &lo);
		if (rc) {
			fuse_reply_err(req, -rc);
			return;
		}
	}
	lock->l_pid = 0; /* required by the OFD commands */
	if (sleep && lock->l_type != F_UNLCK) {
		wait_for(fs->locks, req, lo, lock, -1, 0);
		return;
	}
	rc = fcntl(lo->fd, F_OFD_SETLK, lock) == -1 ? -errno : 0;
	put_owner(fs->locks, lo);
	if (rc == 0)
		pt__locks_changed(fs->locks); /* an unlock, or a lock changed type or range */
	fuse_reply_err(req, -rc);
}

void pt__flock(fuse_req_t req, struct fuse_file_info *fi, int op)
{
	struct pt_locks *tab = pt__fs(req)->locks;
	int fd = pt__file(fi)->fd, rc;

	/* flock locks belong to the open file description, which is exactly one FUSE handle
	 * here, so semantics match. */
	if (!(op & (LOCK_NB | LOCK_UN))) {
		wait_for(tab, req, NULL, NULL, fd, op);
		return;
	}
	rc = flock(fd, op) == -1 ? -errno : 0;
	/* even a refused conversion gives up the old lock (flock(2) on Linux) */
	pt__locks_changed(tab);
	fuse_reply_err(req, -rc);
}
