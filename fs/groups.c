/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "groups.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup.h"
#include "executor.h"
#include "log.h"
#include "sched.h"

#define GRP_NAME_MAX CG_NAME_MAX

/* Recent processes remembered per group [count]: enough for a readable procs file; when full,
 * the least recently seen one is replaced, so a busy group shows its most active processes. */
#define GRP_PROCS_MAX 32

struct grp_proc {
	pid_t tgid;	 /* process id; 0 = free slot */
	uint64_t seen;	 /* [ns, clk_now] last classification into the group */
};

struct grp_entry {
	char *name;	  /* owned; "/" for the root */
	uint64_t hash;	  /* cg_name_hash(name) */
	uint32_t id;	  /* scheduler group id */
	uint32_t parent;  /* scheduler group id of the parent */
	uint32_t weight;  /* [weight units] current */
	bool pinned;	  /* weight set by an administrator */
	uint64_t wgen;	  /* configuration generation whose classification set the weight;
			     0: none yet (any source applies) */
	uint32_t wrank;	  /* GRP_RANK_* of the source that set it under wgen */
	uint64_t wconflict; /* generation a conflict of two rules' weights was logged in */
	uint64_t pw_read; /* [ns, clk_now] grp_refresh_parents last read its weight; 0: never */
	bool dead;	  /* removed from the scheduler; dropped at the next compaction */
	uint32_t children; /* live entries whose parent this is */
	uint32_t refs;	  /* open files charged to it (grp_ref) */
	uint64_t last_used; /* [ns, clk_now] last grp_resolve or grp_note_pid of it */
	struct grp_proc procs[GRP_PROCS_MAX]; /* recently classified processes, unordered */
};

/*
 * Invariants (under lock): entries[0] is the root "/"; every entry's parent is an earlier
 * entry; `slots` is an open-addressing table (linear probing, power-of-two size, at most half
 * full) of indexes into entries, -1 for empty.
 */
struct grp_registry {
	pthread_mutex_t lock;
	struct executor *ex;	  /* borrowed */
	struct grp_entry *entries; /* protected by lock */
	size_t nr, cap;		  /* protected by lock */
	int32_t *slots;		  /* protected by lock */
	size_t nr_slots;	  /* protected by lock; power of two */
	int32_t *by_id;		  /* scheduler group id -> entry index, -1: none; by lock */
	size_t nr_by_id;	  /* entries in by_id; protected by lock */
	uint64_t expire;	  /* [ns] idle time after which a group goes; 0 never; by lock */
	uint64_t last_sweep;	  /* [ns] last expiry pass; protected by lock */
};

static int32_t find(const struct grp_registry *r, const char *name, uint64_t h)
{
	size_t mask = r->nr_slots - 1;

	for (size_t i = h & mask;; i = (i + 1) & mask) {
		int32_t e = r->slots[i];
		if (e < 0)
			return -1;
		if (r->entries[e].hash == h && !r->entries[e].dead &&
		    !strcmp(r->entries[e].name, name))
			return e;
	}
}

static int rehash(struct grp_registry *r, size_t nr_slots)
{
	int32_t *slots = malloc(nr_slots * sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < nr_slots; i++)
		slots[i] = -1;
	for (size_t e = 0; e < r->nr; e++) {
		if (r->entries[e].dead)
			continue;
		size_t i = r->entries[e].hash & (nr_slots - 1);
		while (slots[i] >= 0)
			i = (i + 1) & (nr_slots - 1);
		slots[i] = (int32_t)e;
	}
	free(r->slots);
	r->slots = slots;
	r->nr_slots = nr_slots;
	return 0;
}

/* Appends an entry (the scheduler group already exists). Called with r->lock held. */
static int add_entry(struct grp_registry *r, const char *name, uint32_t id, uint32_t parent,
		     uint32_t weight, uint64_t now)
{
	struct grp_entry *e;

	if (r->nr == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 16;
		e = realloc(r->entries, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		r->entries = e;
		r->cap = cap;
	}
	if (2 * (r->nr + 1) > r->nr_slots && rehash(r, r->nr_slots ? 2 * r->nr_slots : 32) < 0)
		return -ENOMEM;
	if (id >= r->nr_by_id) {
		size_t n = r->nr_by_id ? r->nr_by_id : 16;
		int32_t *m;

		while (n <= id)
			n *= 2;
		m = realloc(r->by_id, n * sizeof(*m));
		if (!m)
			return -ENOMEM;
		for (size_t i = r->nr_by_id; i < n; i++)
			m[i] = -1;
		r->by_id = m;
		r->nr_by_id = n;
	}
	e = &r->entries[r->nr];
	/* compact() leaves copies of moved entries past the end: nothing of one may survive
	 * (a copied wgen/wrank would make a new group refuse weights as the old one's) */
	memset(e, 0, sizeof(*e));
	e->name = strdup(name);
	if (!e->name)
		return -ENOMEM;
	e->hash = cg_name_hash(name);
	e->id = id;
	e->parent = parent;
	e->weight = weight;
	e->wrank = GRP_RANK_DEFAULT;
	e->last_used = now;
	if (parent != id && parent < r->nr_by_id && r->by_id[parent] >= 0)
		r->entries[r->by_id[parent]].children++;
	r->by_id[id] = (int32_t)r->nr;
	r->nr++;
	size_t i = e->hash & (r->nr_slots - 1);
	while (r->slots[i] >= 0)
		i = (i + 1) & (r->nr_slots - 1);
	r->slots[i] = (int32_t)(r->nr - 1);
	return 0;
}

struct create_args {
	uint32_t parent, weight, id;
};

static int do_create(void *arg, struct sched *sd)
{
	struct create_args *a = arg;

	return sched_group_create(sd, a->parent, a->weight, a->weight, &a->id);
}

struct weight_args {
	uint32_t id, weight;
};

static int do_set_weight(void *arg, struct sched *sd)
{
	struct weight_args *a = arg;

	return sched_group_set_weight(sd, a->id, a->weight, a->weight);
}

static int do_remove(void *arg, struct sched *sd)
{
	return sched_group_remove(sd, *(const uint32_t *)arg);
}

/* Drops dead entries from the array and rebuilds the id map and the hash. Called with r->lock
 * held. Cannot fail: the arrays only shrink in use. */
static void compact(struct grp_registry *r)
{
	size_t n = 0;

	for (size_t i = 0; i < r->nr_by_id; i++)
		r->by_id[i] = -1;
	for (size_t i = 0; i < r->nr; i++) {
		if (r->entries[i].dead) {
			free(r->entries[i].name);
			continue;
		}
		if (n != i)
			r->entries[n] = r->entries[i];
		r->by_id[r->entries[n].id] = (int32_t)n;
		n++;
	}
	r->nr = n;
	/* Same size: rehash only fails allocating, and then the old table (which still finds
	 * every live entry, dead ones being skipped by find) stays. */
	if (rehash(r, r->nr_slots) < 0) {
		int32_t *slots = r->slots;
		for (size_t i = 0; i < r->nr_slots; i++)
			slots[i] = -1;
		for (size_t e = 0; e < r->nr; e++) {
			size_t i = r->entries[e].hash & (r->nr_slots - 1);
			while (slots[i] >= 0)
				i = (i + 1) & (r->nr_slots - 1);
			slots[i] = (int32_t)e;
		}
	}
}

/*
 * Removes the groups unused for r->expire at `now`, leaves first (children are created after
 * their parents, so a backwards pass meets them first). Runs at most every expire/4 unless
 * `force`. The scheduler refuses (-EBUSY) a group with requests queued or in flight; such a
 * group stays. Called with r->lock held. Returns the number removed.
 */
static int sweep(struct grp_registry *r, uint64_t now, bool force)
{
	int removed = 0;

	if (!r->expire || (!force && now - r->last_sweep < r->expire / 4))
		return 0;
	r->last_sweep = now;
	for (size_t i = r->nr; i-- > 1;) {
		struct grp_entry *g = &r->entries[i];
		uint32_t id = g->id;

		if (g->dead || g->pinned || g->refs || g->children ||
		    now - g->last_used < r->expire || (int64_t)(now - g->last_used) < 0)
			continue;
		if (exec_with_sched(r->ex, do_remove, &id) != 0)
			continue;
		g->dead = true;
		if (g->parent < r->nr_by_id && r->by_id[g->parent] >= 0)
			r->entries[r->by_id[g->parent]].children--;
		removed++;
	}
	if (removed)
		compact(r);
	return removed;
}

void grp_set_expiry(struct grp_registry *r, uint64_t idle)
{
	pthread_mutex_lock(&r->lock);
	r->expire = idle;
	pthread_mutex_unlock(&r->lock);
}

int grp_expire(struct grp_registry *r, uint64_t now)
{
	int n;

	pthread_mutex_lock(&r->lock);
	n = sweep(r, now, true);
	pthread_mutex_unlock(&r->lock);
	return n;
}

static void adjust_refs(struct grp_registry *r, uint32_t id, int delta)
{
	pthread_mutex_lock(&r->lock);
	if (id < r->nr_by_id && r->by_id[id] >= 0) {
		struct grp_entry *g = &r->entries[r->by_id[id]];
		if (delta > 0 || g->refs > 0)
			g->refs += (uint32_t)delta;
	}
	pthread_mutex_unlock(&r->lock);
}

void grp_ref(struct grp_registry *r, uint32_t id)
{
	adjust_refs(r, id, 1);
}

void grp_unref(struct grp_registry *r, uint32_t id)
{
	adjust_refs(r, id, -1);
}

struct grp_registry *grp_create(struct executor *ex)
{
	struct grp_registry *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->ex = ex;
	pthread_mutex_init(&r->lock, NULL);
	if (add_entry(r, "/", SCHED_ROOT_GROUP, SCHED_ROOT_GROUP, SCHED_WEIGHT_MAX, 0) < 0) {
		grp_destroy(r);
		return NULL;
	}
	return r;
}

void grp_destroy(struct grp_registry *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nr; i++)
		free(r->entries[i].name);
	free(r->entries);
	free(r->slots);
	free(r->by_id);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

/*
 * Finds or creates `name` (length len, not NUL-terminated in the caller's buffer) whose
 * parent entry is `parent_idx`. Called with r->lock held. Returns the entry index or -errno.
 */
static int32_t get_or_create(struct grp_registry *r, const char *name, int32_t parent_idx,
			     uint32_t weight, uint64_t now)
{
	int32_t e = find(r, name, cg_name_hash(name));
	struct create_args a;
	int err;

	if (e >= 0) {
		r->entries[e].last_used = now;
		return e;
	}
	a.parent = r->entries[parent_idx].id;
	a.weight = weight;
	err = exec_with_sched(r->ex, do_create, &a);
	if (err < 0)
		return err;
	err = add_entry(r, name, a.id, a.parent, weight, now);
	if (err < 0)
		return err; /* the scheduler group stays, unnamed: harmless, retried by name */
	return (int32_t)(r->nr - 1);
}

/*
 * Gives entry g `weight` from a source of rank `rank` under generation `gen`, unless pinned or
 * a stronger source gave it one under `gen` (groups.h); logs a conflict of two rules' weights
 * once per generation. Called with r->lock held.
 */
static void apply_weight(struct grp_registry *r, struct grp_entry *g, uint32_t weight,
			 uint32_t rank, uint64_t gen)
{
	/* a weaker source does not undo what a stronger one gave under the same configuration;
	 * after a reload it does */
	bool keep = g->wgen == gen && rank > g->wrank;

	if (gen < g->wgen)
		return; /* classified under the configuration before the one that set it */
	if (keep && rank < GRP_RANK_CGROUP && weight != g->weight && g->wconflict != gen &&
	    !g->pinned) {
		g->wconflict = gen;
		LOG_WARN("group %s: rule %u gives weight %u, rule %u (listed earlier) gives %u; "
			 "keeping %u", g->name, rank, weight, g->wrank, g->weight, g->weight);
	}
	if (keep)
		return;
	g->wgen = gen;
	g->wrank = rank;
	if (!g->pinned && g->weight != weight && g->id != SCHED_ROOT_GROUP) {
		struct weight_args w = { g->id, weight };

		if (exec_with_sched(r->ex, do_set_weight, &w) == 0)
			g->weight = weight;
	}
}

int grp_resolve(struct grp_registry *r, const char *name, uint32_t weight, uint32_t rank,
		uint64_t gen, uint64_t now, uint32_t *id)
{
	char path[GRP_NAME_MAX];
	size_t len = strlen(name);
	int32_t e, parent = 0;
	int err = 0;

	*id = SCHED_ROOT_GROUP;
	if (len == 0 || len >= sizeof(path) || weight < SCHED_WEIGHT_MIN ||
	    weight > SCHED_WEIGHT_MAX)
		return -EINVAL;
	pthread_mutex_lock(&r->lock);
	sweep(r, now, false);
	e = find(r, name, cg_name_hash(name));
	if (e < 0 && name[0] == '/') {
		/* Create the missing ancestors "/a", "/a/b", ... with the default weight. */
		memcpy(path, name, len + 1);
		for (char *p = strchr(path + 1, '/'); p && err == 0; p = strchr(p + 1, '/')) {
			*p = '\0';
			if (p > path + 1) {
				int32_t a = get_or_create(r, path, parent, SCHED_WEIGHT_DEFAULT,
							  now);
				if (a < 0)
					err = a;
				else
					parent = a;
			}
			*p = '/';
		}
	}
	if (e < 0 && err == 0) {
		e = get_or_create(r, name, parent, weight, now);
		if (e < 0)
			err = e;
	}
	if (err == 0) {
		struct grp_entry *g = &r->entries[e];

		apply_weight(r, g, weight, rank, gen);
		g->last_used = now;
		*id = g->id;
	}
	pthread_mutex_unlock(&r->lock);
	return err;
}

void grp_refresh_parents(struct grp_registry *r, const char *name, grp_weight_fn fn, void *arg,
			 uint64_t gen, uint64_t now, uint64_t ttl)
{
	char path[GRP_NAME_MAX];
	size_t due[GRP_PARENTS_MAX], nr_due = 0, len = strlen(name);

	if (name[0] != '/' || len >= sizeof(path))
		return;
	memcpy(path, name, len + 1);
	/* 1. under the lock: which ancestors are due (marked read now, so that concurrent
	 * callers do not read the same files again) */
	pthread_mutex_lock(&r->lock);
	for (char *p = strchr(path + 1, '/'); p && nr_due < GRP_PARENTS_MAX;
	     p = strchr(p + 1, '/')) {
		int32_t e;

		*p = '\0';
		e = find(r, path, cg_name_hash(path));
		*p = '/';
		if (e < 0 || r->entries[e].pinned)
			continue;
		/* (a caller whose `now` predates the last read counts it as fresh) */
		if (r->entries[e].pw_read != 0 &&
		    (int64_t)(now - r->entries[e].pw_read) < (int64_t)ttl)
			continue;
		r->entries[e].pw_read = now ? now : 1;
		due[nr_due++] = (size_t)(p - path);
	}
	pthread_mutex_unlock(&r->lock);
	/* 2. the files, without the lock; 3. each weight found, under it again (the group may
	 * have gone meanwhile: then it is skipped) */
	for (size_t i = 0; i < nr_due; i++) {
		uint32_t w, rank = GRP_RANK_CGROUP;
		int32_t e;

		path[due[i]] = '\0';
		if (!fn || fn(arg, path, &w) != 0 || w < SCHED_WEIGHT_MIN || w > SCHED_WEIGHT_MAX) {
			w = SCHED_WEIGHT_DEFAULT;
			rank = GRP_RANK_DEFAULT;
		}
		pthread_mutex_lock(&r->lock);
		e = find(r, path, cg_name_hash(path));
		if (e >= 0)
			apply_weight(r, &r->entries[e], w, rank, gen);
		pthread_mutex_unlock(&r->lock);
		path[due[i]] = '/';
	}
}

int grp_set_weight(struct grp_registry *r, const char *name, uint32_t weight)
{
	int err = -ENOENT;
	int32_t e;

	if (weight < SCHED_WEIGHT_MIN || weight > SCHED_WEIGHT_MAX)
		return -EINVAL;
	pthread_mutex_lock(&r->lock);
	e = find(r, name, cg_name_hash(name));
	if (e >= 0) {
		struct grp_entry *g = &r->entries[e];
		struct weight_args w = { g->id, weight };
		err = exec_with_sched(r->ex, do_set_weight, &w);
		if (err == 0) {
			g->weight = weight;
			g->pinned = true;
		}
	}
	pthread_mutex_unlock(&r->lock);
	return err;
}

void grp_foreach(struct grp_registry *r, void (*fn)(void *arg, const struct grp_info *gi),
		 void *arg)
{
	pthread_mutex_lock(&r->lock);
	for (size_t i = 0; i < r->nr; i++) {
		const struct grp_entry *g = &r->entries[i];
		if (g->dead)
			continue;
		struct grp_info gi = {
			.name = g->name,
			.id = g->id,
			.parent = g->parent,
			.weight = g->weight,
			.pinned = g->pinned,
		};
		fn(arg, &gi);
	}
	pthread_mutex_unlock(&r->lock);
}

/* The entry of scheduler group `id`, or NULL. Called with r->lock held. */
static struct grp_entry *by_id(struct grp_registry *r, uint32_t id)
{
	if (id >= r->nr_by_id || r->by_id[id] < 0)
		return NULL;
	return &r->entries[r->by_id[id]];
}

void grp_note_pid(struct grp_registry *r, uint32_t id, pid_t tgid, uint64_t now)
{
	struct grp_entry *g;

	if (tgid <= 0)
		return;
	pthread_mutex_lock(&r->lock);
	g = by_id(r, id);
	if (g) {
		struct grp_proc *slot = NULL, *oldest = &g->procs[0], *free_slot = NULL;

		for (size_t i = 0; i < GRP_PROCS_MAX && !slot; i++) {
			struct grp_proc *p = &g->procs[i];

			if (p->tgid == tgid)
				slot = p;
			else if (p->tgid == 0 && !free_slot)
				free_slot = p;
			else if (p->tgid != 0 && p->seen < oldest->seen)
				oldest = p;
		}
		if (!slot)
			slot = free_slot ? free_slot : oldest;
		slot->tgid = tgid;
		slot->seen = now;
		g->last_used = now;
	}
	pthread_mutex_unlock(&r->lock);
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

int grp_procs(struct grp_registry *r, uint32_t id, uint64_t since, pid_t *out, size_t cap)
{
	struct grp_entry *g;
	size_t n = 0;

	pthread_mutex_lock(&r->lock);
	g = by_id(r, id);
	if (g) {
		for (size_t i = 0; i < GRP_PROCS_MAX && n < cap; i++)
			if (g->procs[i].tgid > 0 && g->procs[i].seen >= since)
				out[n++] = g->procs[i].tgid;
	}
	pthread_mutex_unlock(&r->lock);
	if (!g)
		return -ENOENT;
	qsort(out, n, sizeof(*out), cmp_pid);
	return (int)n;
}
