/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt_inode.c - the inode table: O_PATH fds keyed by (st_dev, st_ino), node ids by counter.
 * See pt_inode.h for the counting rules and the lock.
 */
#include "pt_inode.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fdcap.h"
#include "log.h"

_Static_assert(sizeof(off_t) == 8, "cfqfs needs a 64-bit off_t (offsets past 4 GiB)");
_Static_assert(sizeof(fuse_ino_t) == 8, "node ids are 64-bit counters");

/* Initial bucket count of each hash; a power of two. Grows x2 when entries exceed buckets, so
 * chains stay short; the table never shrinks (a burst of lookups is likely to repeat). */
#define PT_HASH_INIT 1024u

/*
 * Invariants (checked by pt_itable_check):
 *  - an inode is in the key hash iff it is in the id hash iff in->hashed;
 *  - every hashed inode other than the root has nlookup > 0;
 *  - an unhashed inode has refs > 0 (otherwise it would have been freed);
 *  - no two hashed inodes share (dev, ino) or nodeid; count == number of hashed inodes.
 */
struct pt_itable {
	pthread_mutex_t lock;	      /* the table lock (leaf) */
	struct pt_inode **by_key;     /* (dev, ino) hash buckets; protected by lock */
	struct pt_inode **by_id;      /* node id hash buckets; protected by lock */
	size_t nbuckets;	      /* bucket count of both hashes, power of two; protected by lock */
	size_t count;		      /* hashed inodes [count]; protected by lock */
	fuse_ino_t next_id;	      /* next node id to hand out; protected by lock */
	struct pt_inode root;	      /* SOURCE, node id FUSE_ROOT_ID, never freed */
	/* Devices met under SOURCE other than its own, for pt_inode_shown_ino(): devs[i] gets
	 * index i + 1. Appended only; protected by lock. */
	dev_t devs[PT_DEV_MAX - 1];
	unsigned nr_devs;
	bool devs_full_warned;	      /* protected by lock */
};

/* splitmix64 finaliser: cheap and spreads every input bit over the word. */
static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

uint64_t pt_inode_file_id(dev_t dev, ino_t ino)
{
	/* Keep ino in the clear so ids of one device stay distinct; only the device is mixed. */
	return (uint64_t)ino ^ mix64((uint64_t)dev);
}

ino_t pt_inode_shown_ino(struct pt_itable *t, dev_t dev, ino_t ino)
{
	unsigned idx = 0;
	bool warn = false;

	if (dev == t->root.dev) /* immutable: no lock */
		return ino;
	pthread_mutex_lock(&t->lock);
	for (unsigned i = 0; i < t->nr_devs && idx == 0; i++)
		if (t->devs[i] == dev)
			idx = i + 1;
	if (idx == 0 && t->nr_devs < PT_DEV_MAX - 1) {
		t->devs[t->nr_devs++] = dev;
		idx = t->nr_devs;
	} else if (idx == 0 && !t->devs_full_warned) {
		t->devs_full_warned = true;
		warn = true;
	}
	pthread_mutex_unlock(&t->lock);
	if (warn)
		LOG_WARN("SOURCE spans more than %d file systems: inode numbers of the others are "
			 "shown unchanged and may repeat", PT_DEV_MAX);
	if (idx == 0)
		return ino;
	return (ino_t)(((uint64_t)ino & PT_DEV_INO_MASK) | (uint64_t)idx << PT_DEV_SHIFT);
}

static size_t key_bucket(const struct pt_itable *t, dev_t dev, ino_t ino)
{
	return (size_t)(mix64((uint64_t)ino ^ mix64((uint64_t)dev)) & (t->nbuckets - 1));
}

static size_t id_bucket(const struct pt_itable *t, fuse_ino_t id)
{
	return (size_t)(mix64(id) & (t->nbuckets - 1));
}

static void hash_insert(struct pt_itable *t, struct pt_inode *in)
{
	size_t kb = key_bucket(t, in->dev, in->ino);
	size_t ib = id_bucket(t, in->nodeid);

	in->key_next = t->by_key[kb];
	t->by_key[kb] = in;
	in->id_next = t->by_id[ib];
	t->by_id[ib] = in;
	in->hashed = true;
	t->count++;
}

static void hash_remove(struct pt_itable *t, struct pt_inode *in)
{
	struct pt_inode **pp;

	for (pp = &t->by_key[key_bucket(t, in->dev, in->ino)]; *pp; pp = &(*pp)->key_next) {
		if (*pp == in) {
			*pp = in->key_next;
			break;
		}
	}
	for (pp = &t->by_id[id_bucket(t, in->nodeid)]; *pp; pp = &(*pp)->id_next) {
		if (*pp == in) {
			*pp = in->id_next;
			break;
		}
	}
	in->key_next = NULL;
	in->id_next = NULL;
	in->hashed = false;
	t->count--;
}

static struct pt_inode *find_key(const struct pt_itable *t, dev_t dev, ino_t ino)
{
	struct pt_inode *in;

	for (in = t->by_key[key_bucket(t, dev, ino)]; in; in = in->key_next)
		if (in->dev == dev && in->ino == ino)
			return in;
	return NULL;
}

static struct pt_inode *find_id(const struct pt_itable *t, fuse_ino_t id)
{
	struct pt_inode *in;

	for (in = t->by_id[id_bucket(t, id)]; in; in = in->id_next)
		if (in->nodeid == id)
			return in;
	return NULL;
}

/* Doubles both hashes. Failure to grow is harmless (longer chains), so it is ignored.
 * Called with t->lock held; allocates under the lock, which is rare (log2 of the table). */
static void maybe_grow(struct pt_itable *t)
{
	struct pt_inode **nk, **ni, *in, *next;
	size_t old = t->nbuckets, i;

	if (t->count < old || old > SIZE_MAX / 2 / sizeof(*nk))
		return;
	nk = calloc(old * 2, sizeof(*nk));
	ni = calloc(old * 2, sizeof(*ni));
	if (!nk || !ni) {
		free(nk);
		free(ni);
		return;
	}
	t->nbuckets = old * 2;
	for (i = 0; i < old; i++) {
		for (in = t->by_key[i]; in; in = next) {
			size_t b = key_bucket(t, in->dev, in->ino);

			next = in->key_next;
			in->key_next = nk[b];
			nk[b] = in;
		}
		for (in = t->by_id[i]; in; in = next) {
			size_t b = id_bucket(t, in->nodeid);

			next = in->id_next;
			in->id_next = ni[b];
			ni[b] = in;
		}
	}
	free(t->by_key);
	free(t->by_id);
	t->by_key = nk;
	t->by_id = ni;
}

struct pt_itable *pt_itable_create(int root_fd, int *err)
{
	struct pt_itable *t;
	struct stat st;
	int rc;

	if (fstat(root_fd, &st) == -1) {
		rc = -errno;
		goto out_close;
	}
	if (!S_ISDIR(st.st_mode)) {
		rc = -ENOTDIR;
		goto out_close;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		rc = -ENOMEM;
		goto out_close;
	}
	t->nbuckets = PT_HASH_INIT;
	t->by_key = calloc(t->nbuckets, sizeof(*t->by_key));
	t->by_id = calloc(t->nbuckets, sizeof(*t->by_id));
	if (!t->by_key || !t->by_id) {
		rc = -ENOMEM;
		goto out_free;
	}
	rc = pthread_mutex_init(&t->lock, NULL);
	if (rc) {
		rc = -rc;
		goto out_free;
	}
	t->next_id = FUSE_ROOT_ID + 1;
	t->root.fd = root_fd;
	t->root.dev = st.st_dev;
	t->root.ino = st.st_ino;
	t->root.type = st.st_mode & S_IFMT;
	t->root.nodeid = FUSE_ROOT_ID;
	t->root.file_id = pt_inode_file_id(st.st_dev, st.st_ino);
	t->root.nlookup = 1; /* the kernel's implicit reference from mount */
	hash_insert(t, &t->root);
	return t;

out_free:
	free(t->by_key);
	free(t->by_id);
	free(t);
out_close:
	close(root_fd);
	*err = rc;
	return NULL;
}

void pt_itable_destroy(struct pt_itable *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->nbuckets; i++) {
		struct pt_inode *in = t->by_key[i], *next;

		for (; in; in = next) {
			next = in->key_next;
			if (in == &t->root)
				continue;
			close(in->fd);
			free(in);
		}
	}
	/* Unhashed inodes still referenced would be a handler running during teardown: a bug in
	 * the caller, and they are not reachable from here. */
	close(t->root.fd);
	pthread_mutex_destroy(&t->lock);
	free(t->by_key);
	free(t->by_id);
	free(t);
}

struct pt_inode *pt_itable_root(struct pt_itable *t)
{
	return &t->root;
}

struct pt_inode *pt_inode_get(struct pt_itable *t, fuse_ino_t nodeid)
{
	struct pt_inode *in;

	if (nodeid == FUSE_ROOT_ID)
		return &t->root; /* pinned: no count needed, and the hot path stays lock-free */
	pthread_mutex_lock(&t->lock);
	in = find_id(t, nodeid);
	if (in)
		in->refs++;
	pthread_mutex_unlock(&t->lock);
	return in;
}

/* Called with t->lock held. Returns true when the caller must free `in` after unlocking. */
static bool unused(const struct pt_itable *t, const struct pt_inode *in)
{
	return in != &t->root && !in->hashed && in->refs == 0;
}

static void free_inode(struct pt_inode *in)
{
	close(in->fd);
	free(in);
}

void pt_inode_put(struct pt_itable *t, struct pt_inode *in)
{
	bool dead;

	if (!in || in == &t->root)
		return;
	pthread_mutex_lock(&t->lock);
	assert(in->refs > 0);
	in->refs--;
	dead = unused(t, in);
	pthread_mutex_unlock(&t->lock);
	if (dead)
		free_inode(in);
}

/* With t->lock held: if the table holds the inode of `st`, adds a kernel reference to it, sets
 * *nodeid and returns true. */
static bool ref_known(struct pt_itable *t, const struct stat *st, fuse_ino_t *nodeid)
{
	struct pt_inode *in = find_key(t, st->st_dev, st->st_ino);

	if (!in)
		return false;
	in->nlookup++;
	*nodeid = in->nodeid;
	return true;
}

/* Adds a kernel reference to the inode for `fd`/`st`, inserting a new inode if needed. Takes
 * ownership of fd (closed if an inode for the same backing file already exists). */
static int ref_fd(struct pt_itable *t, int fd, const struct stat *st, fuse_ino_t *nodeid)
{
	struct pt_inode *fresh;

	/* Allocate before locking so the lock stays a leaf without allocation in the common
	 * case; wasted when the inode is already known. */
	fresh = calloc(1, sizeof(*fresh));
	if (!fresh) {
		close(fd);
		return -ENOMEM;
	}
	pthread_mutex_lock(&t->lock);
	if (ref_known(t, st, nodeid)) {
		pthread_mutex_unlock(&t->lock);
		free(fresh);
		close(fd);
		return 0;
	}
	fresh->fd = fd;
	fresh->dev = st->st_dev;
	fresh->ino = st->st_ino;
	fresh->type = st->st_mode & S_IFMT;
	fresh->file_id = pt_inode_file_id(st->st_dev, st->st_ino);
	fresh->nodeid = t->next_id++;
	fresh->nlookup = 1;
	hash_insert(t, fresh);
	maybe_grow(t);
	*nodeid = fresh->nodeid;
	pthread_mutex_unlock(&t->lock);
	return 0;
}

int pt_inode_ref(struct pt_itable *t, struct pt_inode *in, struct stat *st, fuse_ino_t *nodeid)
{
	bool dead = false;
	int rc = 0;

	if (fstatat(in->fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) == -1)
		return -errno;
	pthread_mutex_lock(&t->lock);
	if (in->hashed) {
		in->nlookup++;
		*nodeid = in->nodeid;
	} else {
		/* Forgotten while the caller held it: the kernel may no longer use this node id,
		 * so hand out a fresh inode for the same file instead. */
		dead = true;
	}
	pthread_mutex_unlock(&t->lock);
	if (dead) {
		int fd = fdcap_keep(fcntl(in->fd, F_DUPFD_CLOEXEC, 0));

		if (fd == -1)
			return -errno;
		rc = ref_fd(t, fd, st, nodeid);
	}
	return rc;
}

/* pt_inode_lookup(), with the probe for a known inode when `probe` (see there). */
static int lookup(struct pt_itable *t, struct pt_inode *dir, const char *name, struct stat *st,
		  fuse_ino_t *nodeid, bool probe)
{
	struct pt_inode *self = NULL;
	bool known;
	int fd, rc;

	if (name[0] == '\0' || strchr(name, '/'))
		return -EINVAL;
	if (strcmp(name, ".") == 0)
		self = dir;
	else if (strcmp(name, "..") == 0 && dir == &t->root)
		self = dir; /* never climb above SOURCE, whatever the kernel sends */
	if (self)
		return pt_inode_ref(t, self, st, nodeid);
	if (!S_ISDIR(dir->type))
		return -ENOTDIR;

	/* An inode the table holds (the kernel revalidates its cached entries by lookups) needs
	 * no new descriptor: one fstatat instead of open, fstat and close, and it still works
	 * when the descriptors run out. The answer is the inode the name had at the fstatat,
	 * as it would be the one it had at the openat. */
	if (probe) {
		if (fstatat(dir->fd, name, st, AT_SYMLINK_NOFOLLOW) == -1)
			return -errno;
		pthread_mutex_lock(&t->lock);
		known = ref_known(t, st, nodeid);
		pthread_mutex_unlock(&t->lock);
		if (known)
			return 0;
	}

	fd = fdcap_keep(openat(dir->fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC));
	if (fd == -1)
		return -errno;
	if (fstatat(fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) == -1) {
		rc = -errno;
		close(fd);
		return rc;
	}
	/* ref_fd maps SOURCE's own (dev, ino) to the root, so ".." from a first-level
	 * directory correctly names node 1. */
	return ref_fd(t, fd, st, nodeid);
}

int pt_inode_lookup(struct pt_itable *t, struct pt_inode *dir, const char *name,
		    struct stat *st, fuse_ino_t *nodeid)
{
	return lookup(t, dir, name, st, nodeid, true);
}

int pt_inode_lookup_made(struct pt_itable *t, struct pt_inode *dir, const char *name,
			 struct stat *st, fuse_ino_t *nodeid)
{
	return lookup(t, dir, name, st, nodeid, false);
}

void pt_inode_forget(struct pt_itable *t, fuse_ino_t nodeid, uint64_t n)
{
	struct pt_inode *in;
	bool dead = false;

	if (nodeid == FUSE_ROOT_ID)
		return; /* pinned */
	pthread_mutex_lock(&t->lock);
	in = find_id(t, nodeid);
	if (in) {
		if (n > in->nlookup) {
			LOG_WARN("forget of %llu: %llu > nlookup %llu", (unsigned long long)nodeid,
				 (unsigned long long)n, (unsigned long long)in->nlookup);
			n = in->nlookup;
		}
		in->nlookup -= n;
		if (in->nlookup == 0) {
			hash_remove(t, in);
			dead = unused(t, in);
		}
	}
	pthread_mutex_unlock(&t->lock);
	if (dead)
		free_inode(in);
}

size_t pt_itable_count(struct pt_itable *t)
{
	size_t n;

	pthread_mutex_lock(&t->lock);
	n = t->count;
	pthread_mutex_unlock(&t->lock);
	return n;
}

bool pt_itable_check(struct pt_itable *t)
{
	size_t i, nkey = 0, nid = 0;
	bool ok = true;

	pthread_mutex_lock(&t->lock);
	ok = ok && (t->root.hashed);
	for (i = 0; i < t->nbuckets; i++) {
		struct pt_inode *in;

		for (in = t->by_key[i]; in; in = in->key_next) {
			ok = ok && (in->hashed);
			ok = ok && (key_bucket(t, in->dev, in->ino) == i);
			ok = ok && (in == &t->root || in->nlookup > 0);
			ok = ok && (find_id(t, in->nodeid) == in);
			ok = ok && (in->nodeid < t->next_id);
			nkey++;
		}
		for (in = t->by_id[i]; in; in = in->id_next) {
			ok = ok && (id_bucket(t, in->nodeid) == i);
			ok = ok && (find_key(t, in->dev, in->ino) == in);
			nid++;
		}
	}
	ok = ok && (nkey == t->count && nid == t->count);
	/* the shown-number devices: SOURCE's is not among them, none twice */
	ok = ok && (t->nr_devs <= PT_DEV_MAX - 1);
	for (i = 0; ok && i < t->nr_devs; i++) {
		ok = ok && (t->devs[i] != t->root.dev);
		for (size_t j = i + 1; ok && j < t->nr_devs; j++)
			ok = ok && (t->devs[i] != t->devs[j]);
	}
	pthread_mutex_unlock(&t->lock);
	return ok;
}
