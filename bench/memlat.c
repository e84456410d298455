/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * memlat - latency of one dependent load [ns] against the size of the memory walked, the
 * figure behind sched_micro's growth from 64 to 16384 queues (bench/RESULTS.md, sched_micro):
 * at 16384 busy queues every queue switch reads lines last touched a whole round of switches
 * earlier, one after the other, so what one such load costs on this machine decides the row.
 *
 *     memlat                     sizes 16 KiB .. 128 MiB, 4 KiB pages
 *     memlat --huge              the same buffers with madvise(MADV_HUGEPAGE) (THP in
 *                                "madvise" mode): the difference is the TLB's share
 *     memlat --sizes 1024,16384  sizes in KiB
 *
 * Each size: one 64-byte line per node, the nodes linked in a random cyclic order (every
 * load depends on the previous one, no stride for a prefetcher to follow), walked once to
 * warm, then 2e7 hops timed. Output: "size_kib=S huge=H ns_per_load=X".
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define LINE 64u
#define HOPS 20000000u
#define HUGE_ALIGN (2u << 20) /* [bytes] one transparent huge page */

static const size_t default_sizes[] = { 16, 256, 1024, 2048, 4096, 8192, 16384, 32768, 131072 };

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* xorshift64*: a fixed sequence, so every run walks the same order */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

/* Returns the time of one dependent load [ns] over `kib` KiB, or a negative errno. */
static double measure(size_t kib, int huge)
{
	size_t n = kib * 1024 / LINE, bytes = (kib * 1024 + HUGE_ALIGN - 1) / HUGE_ALIGN * HUGE_ALIGN;
	uint64_t seed = 0x9e3779b97f4a7c15ull, t0, t1;
	size_t *order = malloc(n * sizeof(*order));
	char *buf = aligned_alloc(HUGE_ALIGN, bytes);
	void *volatile sink;
	void **p;
	double ret = -ENOMEM;

	if (!order || !buf || n < 2)
		goto out_free;
	if (huge && madvise(buf, bytes, MADV_HUGEPAGE) != 0) {
		ret = -errno;
		goto out_free;
	}
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	for (size_t i = n - 1; i > 0; i--) {
		size_t j = (size_t)(rnd(&seed) % (i + 1)), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	for (size_t i = 0; i < n; i++)
		*(void **)(buf + order[i] * LINE) = buf + order[(i + 1) % n] * LINE;
	p = (void **)(buf + order[0] * LINE);
	for (size_t i = 0; i < n; i++)
		p = *p;
	t0 = now_ns();
	for (unsigned i = 0; i < HOPS; i++)
		p = *p;
	t1 = now_ns();
	sink = p;
	(void)sink;
	ret = (double)(t1 - t0) / HOPS;
out_free:
	free(buf);
	free(order);
	return ret;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "huge", no_argument, NULL, 'H' },
		{ "sizes", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	size_t sizes[32], nsizes = 0;
	int huge = 0, opt;

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'H':
			huge = 1;
			break;
		case 's':
			for (char *tok = strtok(optarg, ","); tok; tok = strtok(NULL, ",")) {
				char *end;
				unsigned long long v = strtoull(tok, &end, 10);

				if (*end || v < 1 || v > (1ull << 22) || nsizes == 32) {
					fprintf(stderr, "memlat: --sizes: expected up to 32 sizes in "
							"KiB, 1..4194304, got %s\n", tok);
					return 2;
				}
				sizes[nsizes++] = (size_t)v;
			}
			break;
		case 'h':
			printf("usage: memlat [--huge] [--sizes KIB,KIB,...]\n"
			       "Latency of one dependent load [ns] against the memory walked\n"
			       "(bench/memlat.c explains the method).\n");
			return 0;
		default:
			return 2;
		}
	}
	if (!nsizes) {
		nsizes = sizeof(default_sizes) / sizeof(default_sizes[0]);
		memcpy(sizes, default_sizes, sizeof(default_sizes));
	}
	for (size_t i = 0; i < nsizes; i++) {
		double ns = measure(sizes[i], huge);

		if (ns < 0) {
			fprintf(stderr, "memlat: %zu KiB: %s\n", sizes[i], strerror((int)-ns));
			return 1;
		}
		printf("size_kib=%zu huge=%d ns_per_load=%.1f\n", sizes[i], huge, ns);
		fflush(stdout);
	}
	return 0;
}
