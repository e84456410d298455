/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uidtab.h - what each user holds in the daemon, for bounds per user.
 *
 * The daemon's bounds (queued requests and held write data in the executor, open files in
 * the passthrough, blocked lock requests) are kept per scheduler group; but a user who may
 * create cgroups makes as many groups as they like, and each would get the whole bound. So
 * each of those places also counts what every user holds, in a table of its own, and refuses
 * past a bound per user. This is that table: a counter of items and one of bytes per uid.
 *
 * An open-addressing hash table (linear probing, deletion by backward shift, so no
 * tombstones pile up): a uid's entry exists exactly while it holds something, so the table
 * stays as small as the set of users holding something at the moment, and shrinks again
 * when they let go. Lookups never depend on the order of iteration (house rule 9).
 *
 * Not thread-safe: each owner keeps its table under its own lock (the lock that protects
 * the counts it mirrors). No allocation except when the table grows or shrinks.
 */
#ifndef CFQFS_UIDTAB_H
#define CFQFS_UIDTAB_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct uidtab;

/* An empty table, or NULL when out of memory. Freed with uidtab_free() (NULL is fine). */
struct uidtab *uidtab_new(void);
void uidtab_free(struct uidtab *t);

/*
 * Adds `n` items and `bytes` to what `uid` holds, unless that would pass `max_n` items or
 * `max_bytes` bytes. A user who holds nothing may always take one charge, whatever its size
 * (as a group may always hold one request: a bound smaller than one request must not lock
 * out a user for good). Returns 0; -EAGAIN past a bound; -ENOMEM if the table could not
 * grow. Nothing changes on failure.
 */
int uidtab_charge(struct uidtab *t, uid_t uid, uint32_t n, uint64_t bytes, uint32_t max_n,
		  uint64_t max_bytes);

/* Gives back what uidtab_charge() added (the caller's record of it: never more than `uid`
 * holds). The entry goes when it holds nothing. Cannot fail. */
void uidtab_uncharge(struct uidtab *t, uid_t uid, uint32_t n, uint64_t bytes);

/* What `uid` holds now (0, 0 if nothing); either pointer may be NULL. Cannot fail. */
void uidtab_get(const struct uidtab *t, uid_t uid, uint32_t *n, uint64_t *bytes);

/* Users holding something [count]. Cannot fail. */
size_t uidtab_users(const struct uidtab *t);

/*
 * The invariants: every entry holds something, sits where its probe sequence finds it (no
 * empty slot between its home and its slot), no uid twice, the count of users matches and
 * the load stays under the growth bound. The sums of all items and bytes go to *n_sum and
 * *bytes_sum (either may be NULL), so an owner can compare them with its own counts.
 * Returns 0, or -EFAULT with a message in buf.
 */
int uidtab_check(const struct uidtab *t, uint64_t *n_sum, uint64_t *bytes_sum, char *buf,
		 size_t len);

#endif
