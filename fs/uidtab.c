/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uidtab.c - counters per user (uidtab.h).
 *
 * Invariants: a slot is empty iff n == 0 && bytes == 0; `users` counts the other slots;
 * 2 * users <= cap (so probes stay short and an empty slot always ends one); every entry is
 * reachable from its home slot through used slots only (linear probing, kept by the
 * backward-shift deletion); cap is a power of two >= UIDTAB_MIN_CAP.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "uidtab.h"

/* [slots] the smallest table: one cache line's worth of users costs nothing to keep. */
#define UIDTAB_MIN_CAP 16u

struct uid_slot {
	uint32_t uid;
	uint32_t n;	/* [items] */
	uint64_t bytes; /* [bytes] */
};

struct uidtab {
	struct uid_slot *slot; /* [cap] */
	size_t cap;	       /* [slots] power of two */
	size_t users;	       /* [count] slots in use */
};

static bool slot_empty(const struct uid_slot *s)
{
	return s->n == 0 && s->bytes == 0;
}

/* Fibonacci hashing: uids are dense at the bottom (1000, 1001, ...) and spread well. */
static size_t home(const struct uidtab *t, uint32_t uid)
{
	return (size_t)(((uint64_t)uid * 0x9E3779B97F4A7C15ull) >> 32) & (t->cap - 1);
}

/* The slot of `uid`, or the empty slot where it would go. */
static size_t find(const struct uidtab *t, uint32_t uid)
{
	size_t i = home(t, uid);

	while (!slot_empty(&t->slot[i]) && t->slot[i].uid != uid)
		i = (i + 1) & (t->cap - 1);
	return i;
}

struct uidtab *uidtab_new(void)
{
	struct uidtab *t = calloc(1, sizeof(*t));

	if (!t)
		goto out;
	t->slot = calloc(UIDTAB_MIN_CAP, sizeof(*t->slot));
	if (!t->slot)
		goto out_free;
	t->cap = UIDTAB_MIN_CAP;
	return t;

out_free:
	free(t);
out:
	return NULL;
}

void uidtab_free(struct uidtab *t)
{
	if (t) {
		free(t->slot);
		free(t);
	}
}

/* Moves every entry into a table of `cap` slots. -ENOMEM leaves the table as it was. */
static int resize(struct uidtab *t, size_t cap)
{
	struct uid_slot *old = t->slot, *s = calloc(cap, sizeof(*s));
	size_t old_cap = t->cap;

	if (!s)
		return -ENOMEM;
	t->slot = s;
	t->cap = cap;
	for (size_t i = 0; i < old_cap; i++)
		if (!slot_empty(&old[i]))
			t->slot[find(t, old[i].uid)] = old[i];
	free(old);
	return 0;
}

int uidtab_charge(struct uidtab *t, uid_t uid, uint32_t n, uint64_t bytes, uint32_t max_n,
		  uint64_t max_bytes)
{
	size_t i = find(t, (uint32_t)uid);
	struct uid_slot *s = &t->slot[i];

	if (n == 0 && bytes == 0)
		return 0;
	if (!slot_empty(s)) {
		if ((uint64_t)s->n + n > max_n || bytes > max_bytes ||
		    s->bytes > max_bytes - bytes)
			return -EAGAIN;
		s->n += n;
		s->bytes += bytes;
		return 0;
	}
	if (2 * (t->users + 1) > t->cap) {
		int rc = resize(t, 2 * t->cap);

		if (rc < 0)
			return rc;
		i = find(t, (uint32_t)uid);
		s = &t->slot[i];
	}
	*s = (struct uid_slot){ .uid = (uint32_t)uid, .n = n, .bytes = bytes };
	t->users++;
	return 0;
}

/* Empties slot i and shifts back the entries after it that its emptying would cut off from
 * their home. */
static void remove_at(struct uidtab *t, size_t i)
{
	size_t mask = t->cap - 1, j = i;

	t->slot[i] = (struct uid_slot){ 0 };
	for (;;) {
		j = (j + 1) & mask;
		if (slot_empty(&t->slot[j]))
			break;
		size_t k = home(t, t->slot[j].uid);
		/* j may move back to i iff its home is not cyclically in (i, j] */
		bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
		if (!stays) {
			t->slot[i] = t->slot[j];
			t->slot[j] = (struct uid_slot){ 0 };
			i = j;
		}
	}
	t->users--;
}

void uidtab_uncharge(struct uidtab *t, uid_t uid, uint32_t n, uint64_t bytes)
{
	size_t i = find(t, (uint32_t)uid);
	struct uid_slot *s = &t->slot[i];

	if (slot_empty(s))
		return;
	s->n -= n < s->n ? n : s->n;
	s->bytes -= bytes < s->bytes ? bytes : s->bytes;
	if (!slot_empty(s))
		return;
	remove_at(t, i);
	/* give back the memory of a burst of users; failure keeps the larger table */
	if (t->cap > UIDTAB_MIN_CAP && 8 * t->users < t->cap)
		(void)resize(t, t->cap / 2);
}

void uidtab_get(const struct uidtab *t, uid_t uid, uint32_t *n, uint64_t *bytes)
{
	const struct uid_slot *s = &t->slot[find(t, (uint32_t)uid)];

	if (n)
		*n = s->n;
	if (bytes)
		*bytes = s->bytes;
}

size_t uidtab_users(const struct uidtab *t)
{
	return t->users;
}

int uidtab_check(const struct uidtab *t, uint64_t *n_sum, uint64_t *bytes_sum, char *buf,
		 size_t len)
{
	uint64_t ns = 0, bs = 0;
	size_t used = 0;

	if (t->cap < UIDTAB_MIN_CAP || (t->cap & (t->cap - 1)) || 2 * t->users > t->cap) {
		snprintf(buf, len, "uidtab: %zu users in %zu slots", t->users, t->cap);
		return -EFAULT;
	}
	for (size_t i = 0; i < t->cap; i++) {
		const struct uid_slot *s = &t->slot[i];

		if (slot_empty(s))
			continue;
		used++;
		ns += s->n;
		bs += s->bytes;
		/* reachable: every slot from its home up to i is in use, and holds another uid */
		for (size_t j = home(t, s->uid); j != i; j = (j + 1) & (t->cap - 1)) {
			if (slot_empty(&t->slot[j]) || t->slot[j].uid == s->uid) {
				snprintf(buf, len, "uidtab: uid %" PRIu32 " at slot %zu cut off "
					 "from its home, or twice (slot %zu)", s->uid, i, j);
				return -EFAULT;
			}
		}
	}
	if (used != t->users) {
		snprintf(buf, len, "uidtab: %zu slots in use, users %zu", used, t->users);
		return -EFAULT;
	}
	if (n_sum)
		*n_sum = ns;
	if (bytes_sum)
		*bytes_sum = bs;
	return 0;
}
