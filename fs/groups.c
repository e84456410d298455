/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "groups.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup.h"
#include "executor.h"
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
};

static int32_t find(const struct grp_registry *r, const char *name, uint64_t h)
{
	size_t mask = r->nr_slots - 1;

	for (size_t i = h & mask;; i = (i + 1) & mask) {
		int32_t e = r->slots[i];
		if (e < 0)
			return -1;
		if (r->entries[e].hash == h && !strcmp(r->entries[e].name, name))
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
		     uint32_t weight)
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
	e->name = strdup(name);
	if (!e->name)
		return -ENOMEM;
	e->hash = cg_name_hash(name);
	e->id = id;
	e->parent = parent;
	e->weight = weight;
	e->pinned = false;
	memset(e->procs, 0, sizeof(e->procs));
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

struct grp_registry *grp_create(struct executor *ex)
{
	struct grp_registry *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->ex = ex;
	pthread_mutex_init(&r->lock, NULL);
	if (add_entry(r, "/", SCHED_ROOT_GROUP, SCHED_ROOT_GROUP, SCHED_WEIGHT_MAX) < 0) {
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
			     uint32_t weight)
{
	int32_t e = find(r, name, cg_name_hash(name));
	struct create_args a;
	int err;

	if (e >= 0)
		return e;
	a.parent = r->entries[parent_idx].id;
	a.weight = weight;
	err = exec_with_sched(r->ex, do_create, &a);
	if (err < 0)
		return err;
	err = add_entry(r, name, a.id, a.parent, weight);
	if (err < 0)
		return err; /* the scheduler group stays, unnamed: harmless, retried by name */
	return (int32_t)(r->nr - 1);
}

int grp_resolve(struct grp_registry *r, const char *name, uint32_t weight, uint32_t *id)
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
	e = find(r, name, cg_name_hash(name));
	if (e < 0 && name[0] == '/') {
		/* Create the missing ancestors "/a", "/a/b", ... with the default weight. */
		memcpy(path, name, len + 1);
		for (char *p = strchr(path + 1, '/'); p && err == 0; p = strchr(p + 1, '/')) {
			*p = '\0';
			if (p > path + 1) {
				int32_t a = get_or_create(r, path, parent, SCHED_WEIGHT_DEFAULT);
				if (a < 0)
					err = a;
				else
					parent = a;
			}
			*p = '/';
		}
	}
	if (e < 0 && err == 0) {
		e = get_or_create(r, name, parent, weight);
		if (e < 0)
			err = e;
	}
	if (err == 0) {
		struct grp_entry *g = &r->entries[e];
		if (!g->pinned && g->weight != weight && g->id != SCHED_ROOT_GROUP) {
			struct weight_args w = { g->id, weight };
			if (exec_with_sched(r->ex, do_set_weight, &w) == 0)
				g->weight = weight;
		}
		*id = g->id;
	}
	pthread_mutex_unlock(&r->lock);
	return err;
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
