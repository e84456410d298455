/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sched_fq.c - group fair queueing for CFQ (the bfq-wf2q.c role): virtual disk time, weights,
 * hierarchical vfraction, charging and the device-wide group service tree. Knows nothing about
 * files, requests or slices beyond the charge it is handed.
 *
 * Fixed point. vfraction is a group's share of the device in units of 1 / 2^SCHED_FQ_SHIFT
 * (4096 == the whole device); it is >= 1 while the group is on the tree. A charge (ns in time
 * mode, dispatches in IOPS mode) advances vdisktime by (charge << 12 << 12) / vfraction, i.e.
 * charge x 4096 / (vfraction / 4096): a group with half the device advances twice as fast.
 *
 * Range. Charges are clamped to FQ_CHARGE_MAX = 2^38 (275 s in ns) so charge << 24 < 2^62 never
 * overflows. vdisktime itself may wrap: it is only ever compared wrap-safe (signed difference),
 * which is exact while the groups on the tree are within 2^63 of each other. One maximal slice
 * (1.8 s, tunables are capped at 1 s base) at the smallest vfraction (1) is 1.8e9 << 24 ~ 2^55,
 * far inside that window.
 */
#include <errno.h>
#include <stdio.h>

#include "sched_i.h"

#define FQ_CHARGE_MAX (1ull << 38)

_Static_assert(SCHED_FQ_SHIFT == 12, "comments and ranges assume a 12-bit shift");
_Static_assert((FQ_CHARGE_MAX << (2 * SCHED_FQ_SHIFT)) >> (2 * SCHED_FQ_SHIFT) == FQ_CHARGE_MAX,
	       "a clamped charge must survive the fixed-point shift");
_Static_assert(sizeof(uint64_t) == 8 && sizeof(sched_ns) == 8, "64-bit virtual time");
/* vfr * weight stays < 2^32: 4096 * 1000 */
_Static_assert((1ull << SCHED_FQ_SHIFT) * SCHED_WEIGHT_MAX < (1ull << 32), "vfraction product");

#define grp_of(n) sched_container_of(n, struct sched_group, cfq.node)

static int grp_cmp(const struct sched_rb_node *a, const struct sched_rb_node *b)
{
	const struct cfq_group *x = &grp_of(a)->cfq, *y = &grp_of(b)->cfq;

	return sched__cmp_key_seq(x->vdisktime, x->seq, y->vdisktime, y->seq);
}

uint64_t sched__fq_scale_charge(uint64_t charge, uint32_t vfraction)
{
	if (charge > FQ_CHARGE_MAX)
		charge = FQ_CHARGE_MAX;
	if (vfraction == 0)
		vfraction = 1;
	return (charge << (2 * SCHED_FQ_SHIFT)) / vfraction;
}

void sched__fq_group_init(struct sched_group *g)
{
	struct cfq_group *c = &g->cfq;

	for (int cls = 0; cls < 2; cls++) {
		for (int t = 0; t < WL_TYPES; t++) {
			sched_seq_init(&c->st[cls][t].seq);
			c->st[cls][t].ttime = (struct cfq_ttime){ 0 };
		}
	}
	sched_seq_init(&c->st_idle.seq);
	c->st_idle.ttime = (struct cfq_ttime){ 0 };
	sched_tree_node_clear(&c->node);
	c->seq = 0;
	c->vdisktime = 0;
	c->weight = g->cfg_weight;
	c->leaf_weight = g->cfg_leaf_weight;
	c->new_weight = 0;
	c->new_leaf_weight = 0;
	c->nr_active = 0;
	c->children_weight = 0;
	c->vfraction = 0;
	c->nr_cfqq = 0;
	for (int i = 0; i < WL_CLASSES; i++) {
		c->busy_queues_avg[i] = 0;
		c->nr_busy[i] = 0;
	}
	c->nr_busy_async = 0;
	c->saved_wl_slice = 0;
	c->saved_wl_type = 0;
	c->saved_wl_class = 0;
	c->dispatched = 0;
	c->ttime = (struct cfq_ttime){ 0 };
}

void sched__fq_set_weight(struct sched_group *g, uint32_t weight, uint32_t leaf_weight)
{
	struct cfq_group *c = &g->cfq;

	/* an active weight is part of its parent's children_weight: change it on activation */
	if (c->nr_active == 0) {
		c->weight = weight;
		c->new_weight = 0;
	} else {
		c->new_weight = weight != c->weight ? weight : 0;
	}
	if (!sched_tree_node_linked(&c->node)) {
		c->leaf_weight = leaf_weight;
		c->new_leaf_weight = 0;
	} else {
		c->new_leaf_weight = leaf_weight != c->leaf_weight ? leaf_weight : 0;
	}
}

/*
 * Puts g on the group tree at its current vdisktime, activates it and its inactive ancestors
 * (nr_active, children_weight), applies pending weights and computes its vfraction by walking
 * to the root: leaf_weight / children_weight at its own level, then weight / parent's
 * children_weight at each level above.
 */
void sched__fq_group_add(struct sched *sd, struct sched_group *g)
{
	struct cfq_data *cd = &sd->cfq;
	struct sched_group *pos = g, *parent;
	uint64_t vfr = 1ull << SCHED_FQ_SHIFT;
	bool propagate;

	assert(!sched_tree_node_linked(&g->cfq.node));
	if (g->cfq.new_leaf_weight) {
		g->cfq.leaf_weight = g->cfq.new_leaf_weight;
		g->cfq.new_leaf_weight = 0;
	}
	g->cfq.seq = ++cd->grp_seq;
	sched_tree_insert(&cd->grp_tree, &g->cfq.node, grp_cmp);

	propagate = pos->cfq.nr_active++ == 0;
	pos->cfq.children_weight += pos->cfq.leaf_weight;
	vfr = vfr * pos->cfq.leaf_weight / pos->cfq.children_weight;
	while ((parent = pos->parent) != NULL) {
		if (propagate) {
			if (pos->cfq.new_weight) {
				pos->cfq.weight = pos->cfq.new_weight;
				pos->cfq.new_weight = 0;
			}
			propagate = parent->cfq.nr_active++ == 0;
			parent->cfq.children_weight += pos->cfq.weight;
		}
		vfr = vfr * pos->cfq.weight / parent->cfq.children_weight;
		pos = parent;
	}
	g->cfq.vfraction = vfr > 0 ? (uint32_t)vfr : 1;
}

/* Undoes sched__fq_group_add(): deactivation propagates up while levels become idle. */
void sched__fq_group_del(struct sched *sd, struct sched_group *g)
{
	struct sched_group *pos = g, *parent;
	bool propagate;

	propagate = --pos->cfq.nr_active == 0;
	pos->cfq.children_weight -= pos->cfq.leaf_weight;
	while (propagate) {
		parent = pos->parent;
		pos->cfq.vfraction = 0;
		if (!parent)
			break;
		propagate = --parent->cfq.nr_active == 0;
		parent->cfq.children_weight -= pos->cfq.weight;
		pos = parent;
	}
	if (sched_tree_node_linked(&g->cfq.node))
		sched_tree_erase(&sd->cfq.grp_tree, &g->cfq.node);
}

/* vfraction is valid only on the tree: remember it, leave, advance, come back (which also
 * applies pending weight changes). */
void sched__fq_charge(struct sched *sd, struct sched_group *g, uint64_t charge)
{
	uint32_t vfr = g->cfq.vfraction;

	sched__fq_group_del(sd, g);
	g->cfq.vdisktime += sched__fq_scale_charge(charge, vfr);
	sched__fq_group_add(sd, g);
}

struct sched_group *sched__fq_pick(struct sched *sd)
{
	struct sched_rb_node *n = sched_tree_first(&sd->cfq.grp_tree);
	struct sched_group *g;

	if (!n)
		return NULL;
	g = grp_of(n);
	if (sched_time_after(g->cfq.vdisktime, sd->cfq.min_vdisktime))
		sd->cfq.min_vdisktime = g->cfq.vdisktime;
	return g;
}

sched_ns sched__fq_group_slice(const struct sched *sd, const struct sched_group *g)
{
	return (sched_ns)sd->tun[SCHED_POLICY_CFQ][CFQ_T_TARGET_LATENCY] * g->cfq.vfraction >>
	       SCHED_FQ_SHIFT;
}

bool sched__fq_is_descendant(const struct sched_group *g, const struct sched_group *ancestor)
{
	for (; g; g = g->parent)
		if (g == ancestor)
			return true;
	return false;
}

int sched__fq_check(const struct sched *sd, char *buf, size_t buflen)
{
	const struct cfq_data *cd = &sd->cfq;
	uint32_t i;
	int ret;

	ret = sched_tree_check(&cd->grp_tree, grp_cmp, buf, buflen);
	if (ret)
		return ret;
	for (i = 0; i < sd->nr_group_slots; i++) {
		struct sched_group *g = sd->groups[i];

		if (!g)
			continue;
		g->scratch_cw = sched_tree_node_linked(&g->cfq.node) ? g->cfq.leaf_weight : 0;
		g->scratch_na = sched_tree_node_linked(&g->cfq.node) ? 1 : 0;
	}
	for (i = 0; i < sd->nr_group_slots; i++) {
		struct sched_group *g = sd->groups[i];

		if (!g || !g->parent || g->cfq.nr_active == 0)
			continue;
		g->parent->scratch_cw += g->cfq.weight;
		g->parent->scratch_na++;
	}
	for (i = 0; i < sd->nr_group_slots; i++) {
		const struct sched_group *g = sd->groups[i];

		if (!g)
			continue;
		if (g->scratch_cw != g->cfq.children_weight || g->scratch_na != g->cfq.nr_active)
			FAIL("group %u: nr_active %u children_weight %llu, expected %u %llu", i,
			     g->cfq.nr_active, (unsigned long long)g->cfq.children_weight,
			     g->scratch_na, (unsigned long long)g->scratch_cw);
		if (!sched_tree_node_linked(&g->cfq.node))
			continue;
		if (g->cfq.vfraction == 0 || g->cfq.vfraction > (1u << SCHED_FQ_SHIFT))
			FAIL("group %u: vfraction %u out of range", i, g->cfq.vfraction);
		if (sched_time_before(g->cfq.vdisktime, cd->min_vdisktime))
			FAIL("group %u: vdisktime %llu below min_vdisktime %llu", i,
			     (unsigned long long)g->cfq.vdisktime,
			     (unsigned long long)cd->min_vdisktime);
	}
	return 0;
}
