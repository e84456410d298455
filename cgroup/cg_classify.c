/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cg_classify.c - the classifier (contract: cgroup.h): /proc facts (cached) + rules -> result.
 */
#include "cgroup.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cg_proc.h"
#include "sched.h"

/*
 * Invariants: rules.v points into `rule_copy` (deep copy, strings in `strings`), validated at
 * creation; `ms` and `unified_has_io` are fixed after creation. Only `cache` and `st` change,
 * both under `lock`.
 */
struct cg_classifier {
	bool enabled;
	enum cg_queue_by queue_by;
	enum cg_select cgroup_line;
	bool need_cg_weight;	   /* some verdict can use the cgroup's weight */
	bool weight_from_cgroup;   /* a verdict without a rule weight takes the cgroup's */
	dev_t source_dev;
	struct cg_rules rules;	   /* view over rule_copy */
	struct cg_rule *rule_copy; /* owned */
	char *strings;		   /* owned: every rule string, back to back */
	char proc[PATH_MAX];	   /* procfs root */
	struct cg_mounts ms;	   /* cgroup mounts ("" dirs when absent) */
	bool unified_has_io;
	pthread_mutex_t lock;	   /* protects cache and st; a leaf lock */
	struct cg_cache *cache;	   /* protected by lock */
	struct cg_classifier_stats st; /* protected by lock (st.cache is filled on demand) */
};

void cg_config_init(struct cg_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->enabled = true;
	cfg->queue_by = CG_QUEUE_BY_PROCESS;
	cfg->group_by = CG_GROUP_BY_CGROUP;
	cfg->cgroup_line = CG_SELECT_AUTO;
	cfg->weight_from_cgroup = true;
	cfg->cache_ttl = CG_DEFAULT_CACHE_TTL;
	cfg->cache_capacity = CG_DEFAULT_CACHE_CAPACITY;
	cfg->unified_has_io = -1;
}

int cg_config_check(const struct cg_config *cfg, size_t *bad_rule)
{
	struct cg_rules r;
	size_t bad;

	if (!cfg)
		return -EINVAL;
	r.v = cfg->rules;
	r.nr = cfg->nr_rules;
	r.group_by = cfg->group_by;
	if ((unsigned)cfg->queue_by > CG_QUEUE_BY_THREAD ||
	    (unsigned)cfg->cgroup_line > CG_SELECT_BLKIO || cfg->cache_capacity > (1u << 24) ||
	    cfg->unified_has_io < -1 || cfg->unified_has_io > 1 ||
	    (cfg->proc_root && strlen(cfg->proc_root) >= PATH_MAX)) {
		if (bad_rule)
			*bad_rule = cfg->nr_rules;
		return -EINVAL;
	}
	if (cg_rules_check(&r, &bad)) {
		if (bad_rule)
			*bad_rule = bad;
		return -EINVAL;
	}
	return 0;
}

/* Copies s into the string pool at *pos; returns the copy (NULL for NULL). */
static const char *pool_add(char *pool, size_t *pos, const char *s)
{
	char *d;

	if (!s)
		return NULL;
	d = pool + *pos;
	memcpy(d, s, strlen(s) + 1);
	*pos += strlen(s) + 1;
	return d;
}

static int copy_rules(struct cg_classifier *c, const struct cg_config *cfg)
{
	size_t total = 1, pos = 0;

	for (size_t i = 0; i < cfg->nr_rules; i++) {
		const struct cg_rule *rl = &cfg->rules[i];
		const char *s[] = { rl->cgroup, rl->comm, rl->path, rl->group };
		for (size_t k = 0; k < sizeof(s) / sizeof(s[0]); k++)
			total += s[k] ? strlen(s[k]) + 1 : 0;
	}
	c->strings = malloc(total);
	if (!c->strings)
		return -ENOMEM;
	if (cfg->nr_rules) {
		c->rule_copy = calloc(cfg->nr_rules, sizeof(*c->rule_copy));
		if (!c->rule_copy)
			return -ENOMEM;
	}
	for (size_t i = 0; i < cfg->nr_rules; i++) {
		struct cg_rule *d = &c->rule_copy[i];
		*d = cfg->rules[i];
		d->cgroup = pool_add(c->strings, &pos, cfg->rules[i].cgroup);
		d->comm = pool_add(c->strings, &pos, cfg->rules[i].comm);
		d->path = pool_add(c->strings, &pos, cfg->rules[i].path);
		d->group = pool_add(c->strings, &pos, cfg->rules[i].group);
		if (d->weight == CG_WEIGHT_FROM_CGROUP)
			c->need_cg_weight = true;
	}
	c->rules.v = c->rule_copy;
	c->rules.nr = cfg->nr_rules;
	c->rules.group_by = cfg->group_by;
	return 0;
}

struct cg_classifier *cg_classifier_create(const struct cg_config *cfg)
{
	struct cg_classifier *c;
	char mi[PATH_MAX + 32];
	bool has_io = false;

	if (cg_config_check(cfg, NULL))
		goto out_null;
	c = calloc(1, sizeof(*c));
	if (!c)
		goto out_null;
	c->enabled = cfg->enabled;
	c->queue_by = cfg->queue_by;
	c->cgroup_line = cfg->cgroup_line;
	c->source_dev = cfg->source_dev;
	snprintf(c->proc, sizeof(c->proc), "%s", cfg->proc_root ? cfg->proc_root
							       : CG_DEFAULT_PROC_ROOT);
	if (copy_rules(c, cfg))
		goto out_free_rules;
	/* weight_from_cgroup is the default for callers no rule gives a weight; a rule's
	 * weight = "cgroup" asks for the files itself, so it is honoured either way. */
	c->weight_from_cgroup = cfg->weight_from_cgroup;
	c->need_cg_weight = c->need_cg_weight ||
			    (cfg->weight_from_cgroup && cfg->group_by == CG_GROUP_BY_CGROUP);

	if (cfg->mounts) {
		c->ms = *cfg->mounts;
	} else if (c->enabled) {
		if (cfg->mountinfo)
			snprintf(mi, sizeof(mi), "%s", cfg->mountinfo);
		else
			snprintf(mi, sizeof(mi), "%s/self/mountinfo", c->proc);
		/* no cgroup mounts (or no procfs) leaves the dirs empty: no file weights */
		if (cg_proc_mounts(mi, &c->ms, &has_io))
			memset(&c->ms, 0, sizeof(c->ms));
	}
	c->unified_has_io = cfg->unified_has_io >= 0 ? cfg->unified_has_io == 1 : has_io;

	c->cache = cg_cache_create(cfg->cache_capacity, cfg->cache_ttl);
	if (!c->cache)
		goto out_free_rules;
	if (pthread_mutex_init(&c->lock, NULL))
		goto out_free_cache;
	return c;

out_free_cache:
	cg_cache_destroy(c->cache);
out_free_rules:
	free(c->rule_copy);
	free(c->strings);
	free(c);
out_null:
	return NULL;
}

void cg_classifier_destroy(struct cg_classifier *c)
{
	if (!c)
		return;
	pthread_mutex_destroy(&c->lock);
	cg_cache_destroy(c->cache);
	free(c->rule_copy);
	free(c->strings);
	free(c);
}

/* Copies span sp of text into out[outsz]; false when absent or too long. */
static bool span_str(const char *text, const struct cg_span *sp, char *out, size_t outsz)
{
	if (!sp->present || sp->len >= outsz)
		return false;
	memcpy(out, text + sp->off, sp->len);
	out[sp->len] = '\0';
	return true;
}

/*
 * Reads what the cache holds for one task. Returns 0 (possibly with *degraded set) or -ESRCH.
 * Only "task gone" is an error: every other failure has a fallback.
 */
static int gather(struct cg_classifier *c, pid_t tid, struct cg_facts *f, bool *degraded)
{
	struct cg_status status;
	struct cg_proc_cgroup pc;
	struct cg_span sp;
	enum cg_hier hier;
	char *buf, v2p[CG_NAME_MAX], blkp[CG_NAME_MAX];
	size_t len;
	int rc;

	memset(f, 0, sizeof(*f));
	buf = malloc(CG_PROC_CGROUP_MAX);
	if (!buf) {
		rc = -ENOMEM;
		goto out;
	}

	rc = cg_proc_status(c->proc, tid, &status);
	if (rc == -ESRCH)
		goto out_free;
	if (rc) {
		status.tgid = tid;
		*degraded = true;
	}
	f->tgid = status.tgid;

	rc = cg_proc_ioprio(tid);
	if (rc == -ESRCH)
		goto out_free;
	if (rc < 0) {
		rc = 0; /* class NONE: derived from nice */
		*degraded = true;
	}
	f->ioprio = rc;

	rc = cg_proc_cgroup(c->proc, tid, buf, CG_PROC_CGROUP_MAX, &len, &pc);
	if (rc == -ESRCH)
		goto out_free;
	snprintf(f->cgroup, sizeof(f->cgroup), "/");
	if (rc) {
		*degraded = true;
	} else if (cg_select_path(&pc, c->cgroup_line, c->unified_has_io, &sp, &hier) == 0) {
		char full[CG_NAME_MAX * 4];
		f->hier = (uint8_t)hier;
		if (span_str(buf, &sp, full, sizeof(full)))
			cg_name_fit(full, f->cgroup, sizeof(f->cgroup));
		else
			*degraded = true; /* a path over 4 KiB: not a real cgroup */
	}
	/* else: no line fits the selection, e.g. a v1 host without blkio: the root group */

	if (rc == 0 && c->need_cg_weight) {
		bool have_v2 = span_str(buf, &pc.v2, v2p, sizeof(v2p));
		bool have_blk = span_str(buf, &pc.blkio, blkp, sizeof(blkp));
		enum cg_weight_file which;
		uint32_t w;

		if (cg_proc_group_weight(&c->ms, have_v2 ? v2p : NULL, have_blk ? blkp : NULL,
					 c->source_dev, &w, &which) == 0)
			f->cg_weight = w;
	}
	rc = 0;
out_free:
	free(buf);
out:
	return rc;
}

static void stub_result(pid_t tid, struct cg_result *out)
{
	out->queue_key = (uint64_t)tid;
	out->tid = tid;
	out->tgid = tid;
	snprintf(out->group, sizeof(out->group), "/");
	out->group_key = cg_name_hash(out->group);
	out->weight = SCHED_WEIGHT_DEFAULT;
	out->ioclass = SCHED_CLASS_BE;
	out->level = SCHED_LEVEL_NORM;
	out->weight_src = CG_WSRC_DEFAULT;
	out->rule = -1;
	out->group_is_cgroup = false;
	out->hier = CG_HIER_V2;
	out->flags = CG_RES_STUB;
}

static void count(struct cg_classifier *c, int rc, uint32_t flags)
{
	pthread_mutex_lock(&c->lock);
	if (rc == 0)
		c->st.classified++;
	else if (rc == -ESRCH)
		c->st.gone++;
	if (rc == 0 && (flags & CG_RES_DEGRADED))
		c->st.degraded++;
	pthread_mutex_unlock(&c->lock);
}

int cg_classify(struct cg_classifier *c, pid_t tid, uid_t uid, gid_t gid, const char *path_or_null,
		uint64_t now, struct cg_result *out)
{
	struct cg_stat st, st2;
	struct cg_facts f;
	struct cg_caller who;
	struct cg_verdict v;
	bool degraded = false, hit;
	uint32_t flags = 0;
	int rc;

	if (!c || !out)
		return -EINVAL;
	if (tid <= 0) {
		rc = -ESRCH;
		goto out;
	}
	if (!c->enabled) {
		stub_result(tid, out);
		rc = 0;
		goto out_count;
	}

	/* Fast path: the tid was confirmed by a stat read moments ago (see cg_cache_peek). */
	pthread_mutex_lock(&c->lock);
	hit = cg_cache_peek(c->cache, tid, now, CG_REVALIDATE_NS, &f) == 0;
	pthread_mutex_unlock(&c->lock);
	if (hit) {
		flags |= CG_RES_CACHED;
		snprintf(st.comm, sizeof(st.comm), "%s", f.comm);
		st.nice = f.nice;
		goto classify;
	}

	rc = cg_proc_stat(c->proc, tid, &st);
	if (rc)
		goto out;

	pthread_mutex_lock(&c->lock);
	hit = cg_cache_get(c->cache, tid, st.start_time, now, &f) == 0;
	if (hit)
		cg_cache_confirm(c->cache, tid, st.start_time, now, st.comm, st.nice);
	pthread_mutex_unlock(&c->lock);

	if (hit) {
		flags |= CG_RES_CACHED;
	} else {
		rc = gather(c, tid, &f, &degraded);
		if (rc)
			goto out;
		/* the tid may have died and been reused while we read: the facts must be about
		 * the task whose start time we key them by */
		rc = cg_proc_stat(c->proc, tid, &st2);
		if (rc)
			goto out;
		if (st2.start_time != st.start_time) {
			rc = -ESRCH;
			goto out;
		}
		if (!degraded) {
			snprintf(f.comm, sizeof(f.comm), "%s", st.comm);
			f.nice = st.nice;
			pthread_mutex_lock(&c->lock);
			cg_cache_put(c->cache, tid, st.start_time, now, &f);
			pthread_mutex_unlock(&c->lock);
		}
	}
	if (degraded)
		flags |= CG_RES_DEGRADED;

classify:
	who.tid = tid;
	who.tgid = f.tgid;
	who.uid = uid;
	who.gid = gid;
	who.comm = st.comm;
	who.cgroup = f.cgroup;
	/* nice comes from this call's stat read: a renice shows at once for class NONE */
	cg_ioprio_decode(f.ioprio, st.nice, &who.ioclass, &who.level);

	rc = cg_rules_match(&c->rules, &who, path_or_null, &v);
	if (rc)
		goto out;

	out->tid = tid;
	out->tgid = f.tgid;
	out->queue_key = (uint64_t)(c->queue_by == CG_QUEUE_BY_THREAD ? tid : f.tgid);
	memcpy(out->group, v.group, sizeof(out->group));
	out->group_key = cg_name_hash(out->group);
	out->ioclass = v.ioclass;
	out->level = v.level;
	out->rule = v.rule;
	out->group_is_cgroup = v.group_is_cgroup;
	out->hier = f.hier;
	if (v.weight >= SCHED_WEIGHT_MIN && v.weight <= SCHED_WEIGHT_MAX) {
		out->weight = v.weight;
		out->weight_src = CG_WSRC_RULE;
	} else if ((v.weight == CG_WEIGHT_FROM_CGROUP ||
		    (v.group_is_cgroup && c->weight_from_cgroup)) && f.cg_weight) {
		out->weight = f.cg_weight;
		out->weight_src = v.weight == CG_WEIGHT_FROM_CGROUP ? CG_WSRC_RULE_CGROUP
								    : CG_WSRC_CGROUP;
	} else {
		out->weight = SCHED_WEIGHT_DEFAULT;
		out->weight_src = CG_WSRC_DEFAULT;
	}
	out->flags = flags;
	rc = 0;
out_count:
	count(c, rc, flags | out->flags);
	return rc;
out:
	count(c, rc, 0);
	return rc;
}

void cg_classifier_flush(struct cg_classifier *c)
{
	pthread_mutex_lock(&c->lock);
	cg_cache_clear(c->cache);
	pthread_mutex_unlock(&c->lock);
}

void cg_classifier_get_stats(struct cg_classifier *c, struct cg_classifier_stats *out)
{
	pthread_mutex_lock(&c->lock);
	*out = c->st;
	cg_cache_get_stats(c->cache, &out->cache);
	pthread_mutex_unlock(&c->lock);
}

int cg_classifier_cgroup_weight(const struct cg_classifier *c, enum cg_hier hier,
				const char *path, uint32_t *weight)
{
	enum cg_weight_file which;

	if (!c || !path || !weight)
		return -EINVAL;
	switch (hier) {
	case CG_HIER_V2:
		return cg_proc_group_weight(&c->ms, path, NULL, c->source_dev, weight, &which);
	case CG_HIER_BLKIO:
		return cg_proc_group_weight(&c->ms, NULL, path, c->source_dev, weight, &which);
	case CG_HIER_SYSTEMD:
		return -ENOENT;
	default:
		return -EINVAL;
	}
}

void cg_classifier_mounts(const struct cg_classifier *c, struct cg_mounts *out,
			  bool *unified_has_io)
{
	*out = c->ms;
	*unified_has_io = c->unified_has_io;
}

int cg_task_dying(const char *proc_root, pid_t tid)
{
	struct cg_status st;
	int rc;

	if (tid <= 0)
		return 0;
	rc = cg_proc_status(proc_root ? proc_root : "/proc", tid, &st);
	if (rc == -ESRCH)
		return 1;
	if (rc < 0)
		return rc;
	return (st.sig_pending & (UINT64_C(1) << (SIGKILL - 1))) != 0;
}
