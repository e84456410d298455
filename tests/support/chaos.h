/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * chaos.h - client processes for the fault tests (test_kill, test_shutdown, test_errors):
 * greedy readers that verify every byte, writers that fsync and report each acknowledged end
 * offset to the parent through a pipe, and helpers to check the results afterwards.
 *
 * File contents follow a pattern keyed by a seed (ch_pat), so any reader can check any byte
 * without a reference copy. Children leave with _exit() (never Criterion code), die with the
 * parent (PR_SET_PDEATHSIG SIGKILL) and stop by themselves after `max_s`, so a failed test
 * cannot leave them running. Their exit code says how they ended (CH_EXIT_*).
 */
#ifndef CFQFS_TEST_CHAOS_H
#define CFQFS_TEST_CHAOS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Child exit codes. An I/O error ends a child with CH_EXIT_ERRNO + errno (capped at 254). */
#define CH_EXIT_DONE 0	    /* ran until its deadline */
#define CH_EXIT_SETUP 2	    /* could not start (open failed before any I/O) */
#define CH_EXIT_CORRUPT 3   /* read data did not match the pattern */
#define CH_EXIT_SHORT 4	    /* a short read or write */
#define CH_EXIT_ERRNO 100

enum ch_kind { CH_READER, CH_WRITER };

struct ch_client {
	enum ch_kind kind;
	pid_t pid;		/* 0: not started */
	int ack_fd;		/* writers: read end of the ack pipe, -1 once drained */
	uint64_t acked;		/* writers: highest end offset reported after fsync [bytes] */
	uint64_t nr_acks;	/* writers: fsyncs reported */
	bool reaped;
	int status;		/* raw wait status once reaped */
};

/* Pattern byte at `off` of a file made with `seed`. */
uint8_t ch_pat(uint32_t seed, uint64_t off);
/* Writes `len` pattern bytes to a new/truncated `path` (mode 0644). Returns 0 or -errno. */
int ch_make_file(const char *path, uint32_t seed, uint64_t len);
/*
 * Checks that `path` holds at least `len` bytes matching the pattern. Returns 0, -errno,
 * or 1 with *bad set to the first wrong offset (or the file size when shorter).
 */
int ch_verify_file(const char *path, uint32_t seed, uint64_t len, uint64_t *bad);

/*
 * Starts a child. Reader: opens `path` read-only and preads `chunk` bytes at pseudo-random
 * chunk-aligned offsets below `len`, checking each against the pattern. Writer: creates
 * `path` and writes the pattern in `chunk` pieces from offset 0, fsync()ing after each and
 * then reporting the end offset; past `len` it starts again at 0 (same bytes). Either stops at
 * its first error (exit CH_EXIT_ERRNO + errno) or after max_s seconds. Returns 0 or -errno.
 */
int ch_spawn(struct ch_client *c, enum ch_kind kind, const char *path, uint32_t seed,
	     uint64_t len, size_t chunk, double max_s);

/*
 * Waits up to timeout_ms for the child (then leaves it running and returns -ETIMEDOUT), then
 * drains the writer's ack pipe into c->acked / c->nr_acks. Returns 0 or -errno.
 */
int ch_reap(struct ch_client *c, int timeout_ms);

/* SIGKILLs a started, unreaped child and reaps it (bounded, 5 s). Cannot fail. */
void ch_kill(struct ch_client *c);

/*
 * SIGKILLs all n clients at once, then reaps each, waiting up to timeout_ms for each one.
 * Returns -1 when every client is gone, else the index of the first that is not (its
 * request never answered?); all the others are then killed and reaped with ch_kill(), so
 * the caller may fail at once.
 */
int ch_kill_all(struct ch_client *cl, unsigned n, int timeout_ms);

/* Exit code of a reaped child, 128 + signal if it was killed, -1 if not reaped. */
int ch_exit_code(const struct ch_client *c);

/*
 * Parses an io.stat text (one "NAME key=value ..." line per group). Sets *groups to the number
 * of lines and *sum to the sum of their `key`= values (key without '=', e.g. "rios"). Returns
 * 0, or -EINVAL when a line lacks the key (then *groups and *sum are unchanged).
 */
int ch_iostat_sum(const char *text, const char *key, unsigned *groups, uint64_t *sum);
/* ch_iostat_sum(text, "queued", groups, queued). */
int ch_iostat_queued(const char *text, unsigned *groups, uint64_t *queued);

/* Field `name` ("VmRSS", "VmHWM", ...) of /proc/PID/status [KiB], or -errno (-ENOENT: no such
 * field). */
long ch_status_kb(pid_t pid, const char *name);
/*
 * Parses a .cfqfs/queues text (a header line, then one row per live queue, pid first: the
 * queue key, 0 for requests without a caller, "-" for an async queue, which CFQ shares per
 * group, class and level). Sets *rows to the number of rows and returns how many of them
 * belong to one of pids[0..n); *first is set to the first such pid (0 if none). Returns
 * -EINVAL if the header is missing or a row starts with neither a pid nor "-".
 */
int ch_queues_count(const char *text, const pid_t *pids, unsigned n, unsigned *rows,
		    pid_t *first);

/* VmRSS of `pid` from /proc/PID/status [KiB], or -errno. */
long ch_vmrss_kb(pid_t pid);

/* Monotonic time [s]. */
double ch_now(void);

#endif
