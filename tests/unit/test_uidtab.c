/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uidtab: per-user counters. Bounds refuse exactly past max (a user holding nothing may take
 * one charge of any size), entries vanish when they hold nothing, and a long random run of
 * charges and uncharges (colliding uids, growth and shrinking) agrees with a plain array at
 * every step, with uidtab_check() after each.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>

#include "uidtab.h"

static void check(const struct uidtab *t, uint64_t *n, uint64_t *b)
{
	char why[200] = "";

	cr_assert_eq(uidtab_check(t, n, b, why, sizeof(why)), 0, "%s", why);
}

Test(uidtab, bounds_refuse_past_max_and_nothing_changes)
{
	struct uidtab *t = uidtab_new();
	uint32_t n;
	uint64_t b;

	cr_assert_not_null(t);
	cr_assert_eq(uidtab_charge(t, 1000, 3, 100, 4, 1000), 0);
	cr_assert_eq(uidtab_charge(t, 1000, 1, 900, 4, 1000), 0, "exactly at both bounds");
	cr_assert_eq(uidtab_charge(t, 1000, 1, 0, 4, 1000), -EAGAIN, "one item too many");
	uidtab_uncharge(t, 1000, 1, 0);
	cr_assert_eq(uidtab_charge(t, 1000, 1, 1, 4, 1000), -EAGAIN, "one byte too many");
	uidtab_get(t, 1000, &n, &b);
	cr_assert_eq(n, 3);
	cr_assert_eq(b, 1000);
	cr_assert_eq(uidtab_charge(t, 1001, 1, 5000, 4, 1000), 0,
		     "a user holding nothing takes one charge of any size");
	cr_assert_eq(uidtab_charge(t, 1001, 1, 0, 4, 1000), -EAGAIN);
	cr_assert_eq(uidtab_charge(t, 1002, 0, 0, 0, 0), 0, "an empty charge is a no-op");
	cr_assert_eq(uidtab_users(t), 2);
	uidtab_uncharge(t, 1001, 1, 5000);
	uidtab_uncharge(t, 1000, 3, 1000);
	cr_assert_eq(uidtab_users(t), 0, "entries go when they hold nothing");
	uidtab_get(t, 1000, &n, &b);
	cr_assert_eq(n + b, 0);
	check(t, NULL, NULL);
	uidtab_free(t);
}

Test(uidtab, big_values_do_not_wrap_past_the_bound)
{
	struct uidtab *t = uidtab_new();

	cr_assert_eq(uidtab_charge(t, 7, 1, UINT64_MAX - 10, UINT32_MAX, UINT64_MAX), 0);
	cr_assert_eq(uidtab_charge(t, 7, 1, 20, UINT32_MAX, UINT64_MAX), -EAGAIN);
	cr_assert_eq(uidtab_charge(t, 8, UINT32_MAX, 0, UINT32_MAX, 0), 0);
	cr_assert_eq(uidtab_charge(t, 8, 1, 0, UINT32_MAX, 0), -EAGAIN);
	uidtab_free(t);
}

/* splitmix64: a fixed-seed generator, so the run is the same every time */
static uint64_t next_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

#define USERS 300

Test(uidtab, random_run_matches_a_plain_array)
{
	struct uidtab *t = uidtab_new();
	uint32_t want_n[USERS] = { 0 };
	uint64_t want_b[USERS] = { 0 }, seed = 42;
	size_t peak = 0;

	for (int step = 0; step < 40000; step++) {
		uint64_t r = next_rand(&seed);
		/* uids spread over the whole range, with many sharing home slots */
		size_t u = r % USERS;
		uid_t uid = (uid_t)(u * 2654435761u);
		/* a phase of mostly charges, then mostly uncharges: the table grows and shrinks */
		bool filling = (step / 5000) % 2 == 0;
		uint32_t n = 1 + (uint32_t)((r >> 16) % 3);
		uint64_t b = (r >> 24) % 4096;

		if ((r >> 40) % 10 < (filling ? 7u : 2u)) {
			int rc = uidtab_charge(t, uid, n, b, 40, 64 * 1024);
			bool fits = (want_n[u] == 0 && want_b[u] == 0) ||
				    (want_n[u] + n <= 40 && want_b[u] + b <= 64 * 1024);
			cr_assert_eq(rc, fits ? 0 : -EAGAIN, "step %d uid %u", step, uid);
			if (rc == 0) {
				want_n[u] += n;
				want_b[u] += b;
			}
		} else if (want_n[u]) {
			uint32_t dn = want_n[u] < n ? want_n[u] : n;
			uint64_t db = want_n[u] == dn ? want_b[u] : want_b[u] / 2;
			uidtab_uncharge(t, uid, dn, db);
			want_n[u] -= dn;
			want_b[u] -= db;
		}
		uint64_t sn = 0, sb = 0, wn = 0, wb = 0;
		size_t users = 0;
		check(t, &sn, &sb);
		for (size_t i = 0; i < USERS; i++) {
			wn += want_n[i];
			wb += want_b[i];
			users += want_n[i] || want_b[i];
		}
		cr_assert_eq(sn, wn, "step %d", step);
		cr_assert_eq(sb, wb, "step %d", step);
		cr_assert_eq(uidtab_users(t), users, "step %d", step);
		if (users > peak)
			peak = users;
		uint32_t gn;
		uint64_t gb;
		uidtab_get(t, uid, &gn, &gb);
		cr_assert_eq(gn, want_n[u]);
		cr_assert_eq(gb, want_b[u]);
	}
	cr_assert_gt(peak, 200, "the run must reach many users at once (peak %zu)", peak);
	for (size_t u = 0; u < USERS; u++)
		uidtab_uncharge(t, (uid_t)(u * 2654435761u), want_n[u], want_b[u]);
	cr_assert_eq(uidtab_users(t), 0);
	check(t, NULL, NULL);
	uidtab_free(t);
}
