/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "classify.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"
#include "clock.h"
#include "config.h"
#include "groups.h"
#include "log.h"
#include "sched.h"

/*
 * Verdict cache: the tag a caller got, reused for its next data requests for a short while.
 * A full classification (cgroup/ facts with their /proc revalidation, the rules, the group's
 * name lookup and its process list) costs a few microseconds of the daemon's CPU, which on
 * small requests is much of what cfqfs adds to a FUSE round trip; a streaming process asks
 * thousands of times per second with the same answer. So a verdict is kept per (tid, fsuid,
 * fsgid) for VERDICT_NS, cgroup/'s own revalidation period (CG_REVALIDATE_NS), or for
 * cache_ttl_ms if that is shorter (0: none kept): a renice, ionice or cgroup move reaches the
 * caller's requests within ~2 x that instead of ~1 x (well inside cache_ttl_ms). Only
 * path-less verdicts are kept (with path rules, the opener's path is part of the answer). A
 * reload bumps `gen`, which voids every kept verdict at once. A kept verdict's group may
 * expire meanwhile (groups.h): the executor charges the root then, as for an opener's tag.
 */
#define VERDICT_SLOTS 256u	     /* direct-mapped by tid; power of two */
#define VERDICT_NS CG_REVALIDATE_NS /* [ns] lifetime of a kept verdict */

struct verdict {
	pid_t tid;	/* 0: empty */
	uid_t uid;
	gid_t gid;
	uint8_t ioclass, level;
	uint32_t group;
	uint64_t queue_key;
	uint64_t gen;	/* classifier generation it was computed under */
	sched_ns until; /* [ns] usable before this */
};

/* Invariant: cg is never NULL after cls_create() succeeded. */
struct classifier {
	pthread_rwlock_t lock;	    /* write: reload swaps cg; read: classify */
	struct cg_classifier *cg;   /* protected by lock */
	/* some rule of cg matches on paths: stored under the write lock with cg, read without
	 * a lock (every request of a path-less handle asks; a request racing a reload may see
	 * the old value, as it may classify under the old rules) */
	atomic_bool need_path;
	_Atomic uint64_t gen;	    /* bumped under the write lock by every reload */
	_Atomic uint64_t keep_ns;   /* [ns] verdict lifetime (verdict_ns()), 0: none kept */
	/* weight_from_cgroup: parent cgroups' weights are read too (grp_refresh_parents), at
	 * most once per parent_ttl [ns] (cache_ttl_ms); both set at create and reload */
	atomic_bool parent_weights;
	_Atomic uint64_t parent_ttl;
	struct grp_registry *groups; /* borrowed; own lock */
	char source[PATH_MAX];	    /* immutable */
	size_t source_len;	    /* immutable */
	pthread_mutex_t vlock;	    /* protects vcache */
	struct verdict vcache[VERDICT_SLOTS];
};

static struct verdict *verdict_slot(struct classifier *c, pid_t tid)
{
	return &c->vcache[((uint32_t)tid * 2654435761u >> 24) & (VERDICT_SLOTS - 1)];
}

/* A kept verdict for this caller, into t; false if none is usable. */
static bool verdict_get(struct classifier *c, const struct fuse_ctx *ctx, sched_ns now,
			struct exec_tag *t)
{
	struct verdict *v = verdict_slot(c, ctx->pid);
	bool hit;

	pthread_mutex_lock(&c->vlock);
	hit = v->tid == ctx->pid && v->uid == ctx->uid && v->gid == ctx->gid &&
	      v->gen == atomic_load(&c->gen) && sched_time_after(v->until, now);
	if (hit) {
		t->queue_key = v->queue_key;
		t->group = v->group;
		t->ioclass = v->ioclass;
		t->level = v->level;
	}
	pthread_mutex_unlock(&c->vlock);
	return hit;
}

static void verdict_put(struct classifier *c, const struct fuse_ctx *ctx, uint64_t gen,
			sched_ns now, const struct exec_tag *t)
{
	struct verdict *v = verdict_slot(c, ctx->pid);
	uint64_t keep = atomic_load(&c->keep_ns);

	if (keep == 0)
		return;
	pthread_mutex_lock(&c->vlock);
	*v = (struct verdict){ .tid = ctx->pid, .uid = ctx->uid, .gid = ctx->gid,
			       .ioclass = t->ioclass, .level = t->level, .group = t->group,
			       .queue_key = t->queue_key, .gen = gen, .until = now + keep };
	pthread_mutex_unlock(&c->vlock);
}

/* [ns] how long a verdict is kept under this configuration: never longer than the
 * classification cache itself, so cache_ttl_ms = 0 still means "classify every request". */
static uint64_t verdict_ns(const struct cfqfs_config *cfg)
{
	uint64_t ttl = (uint64_t)cfg->cache_ttl_ms * SCHED_NS_PER_MS;

	return ttl < VERDICT_NS ? ttl : VERDICT_NS;
}

static struct cg_classifier *build(const struct cfqfs_config *cfg, bool *need_path, int *err)
{
	struct cg_rule rules[CFG_MAX_RULES];
	struct cg_config cc;
	size_t bad;

	cg_config_init(&cc);
	cc.queue_by = cfg->queue_by;
	cc.group_by = cfg->group_by;
	cc.cgroup_line = cfg->cgroup_line;
	cc.weight_from_cgroup = cfg->weight_from_cgroup;
	cc.cache_ttl = (uint64_t)cfg->cache_ttl_ms * SCHED_NS_PER_MS;
	cc.nr_rules = cfg_cg_rules(cfg, rules);
	cc.rules = rules;
	*need_path = false;
	for (size_t i = 0; i < cc.nr_rules; i++)
		*need_path |= rules[i].path != NULL;
	if (cg_config_check(&cc, &bad) < 0) {
		if (bad < cc.nr_rules)
			LOG_ERR("rule %zu (line %d) is invalid", bad + 1, cfg->rules[bad].line);
		*err = -EINVAL;
		return NULL;
	}
	struct cg_classifier *cg = cg_classifier_create(&cc);
	if (!cg)
		*err = -ENOMEM;
	return cg;
}

struct classifier *cls_create(const struct cfqfs_config *cfg, const char *source,
			      struct grp_registry *groups, int *err)
{
	struct classifier *c = calloc(1, sizeof(*c));
	bool need_path;

	if (!c) {
		*err = -ENOMEM;
		return NULL;
	}
	c->cg = build(cfg, &need_path, err);
	if (!c->cg) {
		free(c);
		return NULL;
	}
	atomic_init(&c->need_path, need_path);
	c->groups = groups;
	snprintf(c->source, sizeof(c->source), "%s", source);
	c->source_len = strlen(c->source);
	pthread_rwlock_init(&c->lock, NULL);
	pthread_mutex_init(&c->vlock, NULL);
	atomic_init(&c->gen, 1);
	atomic_init(&c->keep_ns, verdict_ns(cfg));
	atomic_init(&c->parent_weights, cfg->weight_from_cgroup);
	atomic_init(&c->parent_ttl, (uint64_t)cfg->cache_ttl_ms * SCHED_NS_PER_MS);
	*err = 0;
	return c;
}

void cls_destroy(struct classifier *c)
{
	if (!c)
		return;
	cg_classifier_destroy(c->cg);
	pthread_rwlock_destroy(&c->lock);
	pthread_mutex_destroy(&c->vlock);
	free(c);
}

int cls_reload(struct classifier *c, const struct cfqfs_config *cfg)
{
	bool need_path;
	int err;
	struct cg_classifier *cg = build(cfg, &need_path, &err), *old;

	if (!cg)
		return err;
	pthread_rwlock_wrlock(&c->lock);
	old = c->cg;
	c->cg = cg;
	atomic_store(&c->need_path, need_path);
	atomic_store(&c->keep_ns, verdict_ns(cfg));
	atomic_store(&c->parent_weights, cfg->weight_from_cgroup);
	atomic_store(&c->parent_ttl, (uint64_t)cfg->cache_ttl_ms * SCHED_NS_PER_MS);
	atomic_fetch_add(&c->gen, 1); /* every kept verdict came from the old rules */
	pthread_rwlock_unlock(&c->lock);
	cg_classifier_destroy(old); /* no reader holds it: they hold the read lock while using it */
	return 0;
}

/* The file's path inside the mount ("/dir/file"), or NULL (deleted, or outside SOURCE). */
static char *mount_path(const struct classifier *c, int fd)
{
	char proc[64], target[PATH_MAX];
	ssize_t n;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, target, sizeof(target) - 1);
	if (n < 0)
		return NULL;
	target[n] = '\0';
	if (strncmp(target, c->source, c->source_len) != 0)
		return NULL;
	const char *rel = target + c->source_len;
	if (c->source_len == 1) /* SOURCE is "/" */
		rel = target;
	if (*rel != '/' && *rel != '\0')
		return NULL;
	return strdup(*rel ? rel : "/");
}

struct parent_arg {
	const struct cg_classifier *cg;
	enum cg_hier hier;
};

/* grp_weight_fn over the classifier's view of the cgroup mounts. */
static int parent_weight(void *arg, const char *path, uint32_t *weight)
{
	const struct parent_arg *a = arg;

	return cg_classifier_cgroup_weight(a->cg, a->hier, path, weight);
}

/* Classifies the caller of req; false if it cannot be (pid 0, task gone). */
static bool classify_caller(struct classifier *c, fuse_req_t req, const char *path,
			    struct exec_tag *t)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct cg_result res;
	sched_ns now = clk_now();
	uint64_t gen;
	uint32_t id, rank;
	int r;

	if (!ctx || ctx->pid <= 0)
		return false;
	if (!path && verdict_get(c, ctx, now, t))
		return true;
	pthread_rwlock_rdlock(&c->lock);
	gen = atomic_load(&c->gen);
	r = cg_classify(c->cg, ctx->pid, ctx->uid, ctx->gid, path, now, &res);
	pthread_rwlock_unlock(&c->lock);
	if (r < 0)
		return false;
	/* a rule's weight, or the files a rule asked for, rank as that rule (groups.h) */
	if (res.weight_src == CG_WSRC_RULE || res.weight_src == CG_WSRC_RULE_CGROUP)
		rank = GRP_RANK_RULE(res.rule);
	else if (res.weight_src == CG_WSRC_CGROUP)
		rank = GRP_RANK_CGROUP;
	else
		rank = GRP_RANK_DEFAULT;
	r = grp_resolve(c->groups, res.group, res.weight, rank, gen, now, &id);
	if (r < 0)
		LOG_WARN("group %s: %s; charging the root group", res.group, strerror(-r));
	if (r == 0 && res.group_is_cgroup) {
		/* parents read their files when the caller's own were (weight_from_cgroup, or
		 * its rule asked); else they get the default, which undoes files read under a
		 * configuration before a reload */
		bool files = atomic_load(&c->parent_weights) ||
			     res.weight_src == CG_WSRC_RULE_CGROUP;
		struct parent_arg pa;

		/* the read lock keeps c->cg (whose mounts parent_weight reads) alive */
		pthread_rwlock_rdlock(&c->lock);
		pa = (struct parent_arg){ c->cg, (enum cg_hier)res.hier };
		grp_refresh_parents(c->groups, res.group, files ? parent_weight : NULL, &pa, gen,
				    now, atomic_load(&c->parent_ttl));
		pthread_rwlock_unlock(&c->lock);
	}
	grp_note_pid(c->groups, id, res.tgid, now);
	t->queue_key = res.queue_key;
	t->group = id;
	t->ioclass = res.ioclass;
	t->level = res.level;
	if (!path && r == 0)
		verdict_put(c, ctx, gen, now, t);
	LOG_DEBUG("pid %d -> queue %llu group %s (id %u, weight %u) class %u/%u", ctx->pid,
		  (unsigned long long)res.queue_key, res.group, id, res.weight, res.ioclass,
		  res.level);
	return true;
}

void pt_classify_open(struct classifier *c, fuse_req_t req, uint64_t file, int fd,
		      struct exec_tag *opener)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	opener->path = atomic_load(&c->need_path) ? mount_path(c, fd) : NULL;
	if (!classify_caller(c, req, opener->path, opener)) {
		opener->queue_key = ctx ? (uint64_t)ctx->pid : 0;
		opener->group = SCHED_ROOT_GROUP;
		opener->ioclass = SCHED_CLASS_BE;
		opener->level = SCHED_LEVEL_NORM;
	}
	opener->file = file;
	opener->rq_flags = 0;
	opener->no_caller = false;
	opener->uid = ctx ? ctx->uid : 0;
}

void pt_classify_release(struct exec_tag *opener)
{
	free(opener->path);
	opener->path = NULL;
}

void pt_classify(struct classifier *c, fuse_req_t req, const struct exec_tag *opener, int fd,
		 uint8_t rq_flags, struct exec_tag *out)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	char *late_path = NULL;

	*out = *opener;
	/* A handle opened while no rule matched on paths has none: if a reload has brought
	 * such rules since, its path is looked up per request (the config promises new rules
	 * for the very next request); handles opened after the reload keep theirs. */
	if (!opener->path && atomic_load(&c->need_path))
		late_path = mount_path(c, fd);
	/* pid 0 (writeback, kernel-initiated) or a caller already gone: the opener pays. */
	classify_caller(c, req, opener->path ? opener->path : late_path, out);
	free(late_path);
	out->no_caller = !ctx || ctx->pid <= 0;
	out->uid = out->no_caller ? opener->uid : ctx->uid;
	out->path = NULL; /* the opener keeps ownership */
	out->file = opener->file;
	/* nobody waits for a request sent on nobody's behalf */
	out->rq_flags = out->no_caller ? (uint8_t)(rq_flags & ~SCHED_RQ_CALLER) : rq_flags;
}
