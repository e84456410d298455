/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * writes: concurrent writers through one mount, every byte checked in SOURCE afterwards.
 *
 * What it guards: a session thread that may issue requests itself writes straight from
 * libfuse's buffer, and copies the data only when the write stays queued or lands in another
 * thread's chain (executor.c, "Zero-copy writes"). A copy made too late, or a chain issued
 * before its members' copies are done, writes whatever libfuse put in that buffer next.
 *
 * Set-up: `-o direct_io` (every write(2) is one request), depth 1 and max_threads 3, so that
 * with six writers most writes wait in the scheduler while one is in flight, and the session
 * thread that queued one is soon reading the next request into the same buffer. Each writer
 * is a process of its own with a file of its own (the kernel serializes direct writes to one
 * file) and writes blocks filled from a generator seeded by (writer, block), so a stale or
 * misplaced byte shows. Without the copy, or with an issuer that does not wait for it, these
 * tests fail (checked by breaking each on purpose). The last test SIGKILLs writers while
 * their writes are queued (interrupts may arrive while a write is still being copied).
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "chaos.h"
#include "mount.h"

#define WRITERS 6
#define ROUNDS 64

static struct mnt m;

static void init(void)
{
	mnt_cr_prepare(&m);
}

static void fini(void)
{
	mnt_cr_teardown(&m);
}

TestSuite(writes, .init = init, .fini = fini, .timeout = 120);

/* Mounts with -o opts, after `flag` (e.g. "-s") unless NULL. */
static void start(const char *flag, const char *opts)
{
	const char *with_flag[] = { flag, "-o", opts, NULL }, *plain[] = { "-o", opts, NULL };
	int r = mnt_start(&m, flag ? with_flag : plain);

	if (r != 0)
		mnt_dump_log(&m);
	cr_assert_eq(r, 0, "mount: %s", strerror(-r));
}

/* Block `blk` of writer `w`: a xorshift stream seeded by both, so blocks differ everywhere. */
static void fill(unsigned char *p, size_t len, unsigned w, unsigned blk)
{
	uint64_t x = ((uint64_t)(w + 1) << 32) ^ (blk * 0x9e3779b97f4a7c15ull) ^ 0x5bd1e995u;

	for (size_t i = 0; i < len; i++) {
		if (i % 8 == 0) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
		}
		p[i] = (unsigned char)(x >> (8 * (i % 8)));
	}
}

/*
 * Child: writes `rounds` blocks of `bs` bytes to its own file, O_DSYNC if `dsync`, in an order
 * that jumps around (the kernel serializes direct writes to one file, so the concurrency is
 * between the files). Exit status 0, or the step that failed. No Criterion calls here (forked
 * child).
 */
static int writer(const char *path, unsigned w, size_t bs, int rounds, bool dsync)
{
	unsigned char *buf = malloc(bs);
	int fd = open(path, O_WRONLY | (dsync ? O_DSYNC : 0));

	if (!buf || fd < 0)
		return 2;
	for (int r = 0; r < rounds; r++) {
		unsigned blk = (unsigned)(r * 7 + (int)w) % (unsigned)rounds; /* rounds: not 7k */

		fill(buf, bs, w, blk);
		if (pwrite(fd, buf, bs, (off_t)blk * (off_t)bs) != (ssize_t)bs)
			return 3;
	}
	if (close(fd) != 0)
		return 4;
	free(buf);
	return 0;
}

/* Runs WRITERS writers at once, each on a file of its own, then checks every block in
 * SOURCE. Bit w of dsync_mask makes writer w open with O_DSYNC. */
static void concurrent(const char *name, size_t bs, int rounds, unsigned dsync_mask)
{
	pid_t pids[WRITERS];
	unsigned char *want = malloc(bs), *got = malloc(bs);
	char file[64];

	cr_assert(want && got);
	for (unsigned w = 0; w < WRITERS; w++) {
		snprintf(file, sizeof(file), "%s.%u", name, w);
		cr_assert_eq(mnt_put(mnt_path(&m, file), "", 0, 0644), 0);
	}
	for (unsigned w = 0; w < WRITERS; w++) {
		pids[w] = fork();
		if (pids[w] == 0) { /* no Criterion call in the child, not even a passing assert */
			snprintf(file, sizeof(file), "%s.%u", name, w);
			_exit(writer(mnt_path(&m, file), w, bs, rounds, (dsync_mask >> w) & 1));
		}
		cr_assert_geq(pids[w], 0, "fork: %s", strerror(errno));
	}
	for (unsigned w = 0; w < WRITERS; w++) {
		int st;

		cr_assert_eq(waitpid(pids[w], &st, 0), pids[w]);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "writer %u failed (status 0x%x)", w,
			  st);
	}
	for (unsigned w = 0; w < WRITERS; w++) {
		snprintf(file, sizeof(file), "%s.%u", name, w);
		int fd = open(src_path(&m, file), O_RDONLY);

		cr_assert_geq(fd, 0);
		for (unsigned blk = 0; blk < (unsigned)rounds; blk++) {
			ssize_t n = pread(fd, got, bs, (off_t)blk * (off_t)bs);

			cr_assert_eq(n, (ssize_t)bs, "%s block %u: short read %zd", file, blk, n);
			fill(want, bs, w, blk);
			if (memcmp(want, got, bs) != 0) {
				size_t i = 0;

				while (want[i] == got[i])
					i++;
				cr_assert_fail("%s: block %u (%zu bytes) differs from byte %zu on", file,
					       blk, bs, i);
			}
		}
		close(fd);
	}
	free(want);
	free(got);
}

Test(writes, small_writes_of_six_processes_all_land)
{
	start(NULL, "direct_io,depth=1,max_threads=3");
	/* 4 KiB: the size of most small-file writes; three writers sync, three buffered */
	concurrent("small", 4096, ROUNDS, 0x15);
	/* odd size: writes at offsets and of lengths that are not page multiples */
	concurrent("odd", 4096 + 512 + 3, ROUNDS, 0x0);
	mnt_cr_finish(&m);
}

Test(writes, large_writes_of_six_processes_all_land)
{
	start(NULL, "direct_io,depth=1,max_threads=3");
	/* a large copy is a wide window for an issuer that would not wait for it */
	for (int i = 0; i < 4; i++) {
		concurrent("large", 1u << 20, 8, 0x0);
		concurrent("large-sync", 256u << 10, 16, 0x3f);
	}
	mnt_cr_finish(&m);
}

/* The same writes with the workers issuing everything (-s: no inline issue, data copied at
 * once): the reference behaviour the zero-copy path must match. */
Test(writes, writes_land_with_workers_only)
{
	start("-s", "direct_io,depth=2");
	concurrent("workers", 4096, ROUNDS, 0x15);
	mnt_cr_finish(&m);
}

/*
 * Rounds of WRITERS writers (1 MiB writes, each followed by an fsync that the writer reports)
 * SIGKILLed together after 20-80 ms, while most of their writes wait in the scheduler. Every
 * write a writer saw fsync()ed is intact in SOURCE, every client goes, nothing stays queued,
 * the mount still reads back what it writes, and the daemon exits 0 at unmount.
 */
Test(writes, writers_killed_with_queued_writes_keep_what_they_synced, .timeout = 180)
{
	struct ch_client cl[WRITERS];
	uint64_t acks = 0;

	start(NULL, "direct_io,depth=1,max_threads=3");
	for (unsigned round = 0; round < 12; round++) {
		char rel[64];

		for (unsigned i = 0; i < WRITERS; i++) {
			snprintf(rel, sizeof(rel), "k%u.%u", round, i);
			int r = ch_spawn(&cl[i], CH_WRITER, mnt_path(&m, rel), 0x200u * round + i,
					 8u << 20, 1u << 20, 20.0);
			cr_assert_eq(r, 0, "spawn: %s", strerror(-r));
		}
		usleep((useconds_t)(20 + 5 * round) * 1000);
		int stuck = ch_kill_all(cl, WRITERS, 10000);
		cr_assert_lt(stuck, 0, "round %u: writer %d not gone 10 s after SIGKILL: a request "
			     "the daemon never answered?", round, stuck);
		for (unsigned i = 0; i < WRITERS; i++) {
			cr_assert_eq(ch_exit_code(&cl[i]), 128 + SIGKILL,
				     "round %u: writer %u ended by itself with code %d", round, i,
				     ch_exit_code(&cl[i]));
			acks += cl[i].nr_acks;
			if (cl[i].acked == 0)
				continue;
			uint64_t bad = 0;
			snprintf(rel, sizeof(rel), "k%u.%u", round, i);
			int r = ch_verify_file(src_path(&m, rel), 0x200u * round + i, cl[i].acked,
					       &bad);
			cr_assert_eq(r, 0, "round %u: %s: synced data wrong at byte %llu of %llu", round,
				     rel, (unsigned long long)bad, (unsigned long long)cl[i].acked);
		}
	}
	cr_assert_gt(acks, 0, "no writer ever got an fsync through: nothing was checked");
	uint64_t q = 0;
	for (int i = 0; i < 60 && (q = mnt_cr_queued(&m, NULL)) != 0; i++)
		usleep(50000);
	cr_assert_eq(q, 0, "%llu request(s) still queued 3 s after the last kill",
		     (unsigned long long)q);
	concurrent("after", 4096, 16, 0x0);
	fprintf(stderr, "writes: 12 rounds of %u killed writers, %llu fsyncs acknowledged\n",
		WRITERS, (unsigned long long)acks);
	mnt_cr_finish(&m);
}
