/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * probe.c - SOURCE's device: its reported rotational flag (/sys), the mount-time measurement
 * of random against sequential direct reads, the decision, and the report of .cfqfs/device.
 * The contract is in probe.h.
 */
#include "probe.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "clock.h"

#define PROBE_DEPTH_MAX 8 /* stacked dm/md levels we follow */

/*
 * The measurement's bounds. A 7200 rpm disk pays about 4 ms of rotational latency per random
 * read (half a turn of 8.3 ms) plus the seek, so its random reads take 5-15 ms and the budget
 * below still leaves it 16 or more of them; an SSD or a host-cached virtual disk answers in
 * tens of microseconds and stops at the count. A device too slow for PROBE_SAMPLES_MIN reads
 * in the budget is not measured well enough to overrule its flag (probe_decide refuses).
 */
static const unsigned probe_entries_max = 1000; /* [directory entries] looked at in SOURCE
						   (the walk's cost at mount time) */
static const unsigned probe_reads_max = 64;	/* [reads] of each kind: a median of 64 is
						   steady; more only costs mount time */
static const sched_ns probe_budget = 250 * SCHED_NS_PER_MS; /* [ns] per kind: the mount waits
							       at most about twice this */
/* [bytes] read each time, and the alignment of buffer and offsets that O_DIRECT asks for: a
 * multiple of every common logical block size (512, 4096). */
#define PROBE_BLOCK 4096u
/*
 * [bytes] the least distance between random reads. After a read a disk's own cache usually
 * holds what follows it on the track (read-ahead of some 100 KiB); a random read landing there
 * costs no seek and would make a disk look like an SSD. The random reads are also issued from
 * the end of the file towards its start, so none lands in what an earlier one read ahead.
 */
#define PROBE_STRIDE_MIN (256u << 10)
/*
 * [bytes] the smallest file worth reading: one that gives PROBE_SAMPLES_MIN random reads that
 * far apart (2 MiB). A smaller file would fit in the disk's cache after a few reads, and too
 * few reads could be taken from it for probe_decide to accept.
 */
#define PROBE_FILE_MIN ((uint64_t)PROBE_SAMPLES_MIN * PROBE_STRIDE_MIN)
_Static_assert(PROBE_STRIDE_MIN % PROBE_BLOCK == 0, "random offsets must stay block-aligned");
/* The random reads' fixed seed: a mount measures the same offsets of the same file every time. */
#define PROBE_SEED 0x63667166735f7072ull

/* Reads a small sysfs file into buf (NUL-terminated, newline stripped). 0 or -errno. */
static int read_small(int dirfd, const char *rel, char *buf, size_t len)
{
	int fd = openat(dirfd, rel, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	int e = errno;
	close(fd);
	if (n < 0)
		return -e;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* `dirfd` is a /sys/block-style device directory; `what` (optional) holds its name on entry
 * and receives "NAME -> SLAVE" when a device under it decides. 1, 0 or -errno. */
static int rotational_of(int dirfd, int depth, char *what, size_t whatlen)
{
	char buf[64], self[64] = "";
	int r;

	if (depth > PROBE_DEPTH_MAX)
		return -ELOOP;
	if (what)
		snprintf(self, sizeof(self), "%s", what);
	/* Stacked devices (dm, md) report the worst of what lies under them. */
	int sfd = openat(dirfd, "slaves", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (sfd >= 0) {
		DIR *d = fdopendir(sfd);
		struct dirent *de;
		int best = -ENODEV;

		if (!d) {
			close(sfd);
			goto own;
		}
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			int cfd = openat(sfd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (cfd < 0)
				continue;
			r = rotational_of(cfd, depth + 1, NULL, 0);
			close(cfd);
			if (r == 1 || (r == 0 && best < 0)) {
				best = r;
				if (what)
					snprintf(what, whatlen, "%s -> %s", self, de->d_name);
			}
		}
		closedir(d);
		if (best >= 0)
			return best;
	}
own:
	if (read_small(dirfd, "queue/rotational", buf, sizeof(buf)) == 0)
		return buf[0] == '1';
	/* A partition: the disk is the parent directory. */
	if (read_small(dirfd, "partition", buf, sizeof(buf)) == 0 &&
	    read_small(dirfd, "../queue/rotational", buf, sizeof(buf)) == 0)
		return buf[0] == '1';
	return -ENODEV;
}

/* The kernel's name of block device `dev` ("vda"): the last component of the /sys/dev/block
 * link `sys`; "MAJ:MIN" if it cannot be read. */
static void device_name(const char *sys, dev_t dev, char *what, size_t whatlen)
{
	char link[PATH_MAX];
	ssize_t n = readlink(sys, link, sizeof(link) - 1);
	const char *name;

	if (n <= 0) {
		snprintf(what, whatlen, "%u:%u", major(dev), minor(dev));
		return;
	}
	link[n] = '\0';
	name = strrchr(link, '/');
	snprintf(what, whatlen, "%s", name ? name + 1 : link);
}

int probe_rotational(const char *path, char *what, size_t whatlen)
{
	struct stat st;
	char sys[64];
	int fd, r;

	if (stat(path, &st) < 0)
		return -errno;
	if (major(st.st_dev) == 0)
		return -ENODEV; /* anonymous device: tmpfs, overlay, fuse, nfs... */
	snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u", major(st.st_dev), minor(st.st_dev));
	fd = open(sys, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ENODEV : -errno;
	if (what)
		device_name(sys, st.st_dev, what, whatlen);
	r = rotational_of(fd, 0, what, whatlen);
	close(fd);
	return r;
}

/* ---------------------------------------------------------------------------------------- */
/* Measurement                                                                               */

/*
 * Opens `rel` below `rootfd` without following any symlink or crossing a mount point
 * (openat2, Linux 5.6). Older kernels only refuse a symlink as the last component
 * (O_NOFOLLOW); the callers' st_dev checks keep other filesystems out there. Returns the
 * descriptor or -errno.
 */
static int open_below(int rootfd, const char *rel, int flags)
{
	struct open_how how = {
		.flags = (uint64_t)(unsigned)flags,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV,
	};
	int fd = (int)syscall(SYS_openat2, rootfd, rel, &how, sizeof(how));

	if (fd < 0 && errno == ENOSYS)
		fd = openat(rootfd, rel, flags | O_NOFOLLOW);
	return fd < 0 ? -errno : fd;
}

/*
 * A regular file big enough, and dense: a read of a hole (or of a sparse file's unallocated
 * part) is answered without the device, which would hide its seeks. Preallocated but unwritten
 * extents (fallocate) cannot be told apart from st_blocks; they would read as cheap.
 */
static bool worth_reading(const struct stat *st)
{
	uint64_t size = (uint64_t)st->st_size, allocated = (uint64_t)st->st_blocks * 512;

	return S_ISREG(st->st_mode) && size >= PROBE_FILE_MIN && allocated >= size - size / 8;
}

/*
 * Breadth-first walk of SOURCE (`rootfd`, on device `dev`) for its largest file worth reading,
 * looking at no more than probe_entries_max entries. Writes its
 * path relative to SOURCE into best (left alone if none) and its size into *best_size (left
 * alone if none), the entries looked at into *seen. Directories it cannot open are passed
 * over. Returns 0 or -ENOMEM.
 * The queue holds paths, not descriptors, so a wide tree cannot run the daemon out of them
 * before it has even mounted; open_below() keeps a path from leaving SOURCE.
 */
static int find_file(int rootfd, dev_t dev, char *best, size_t bestlen, uint64_t *best_size,
		     unsigned *seen)
{
	/* at most one directory queued per entry looked at, plus SOURCE itself */
	char **queue = calloc(probe_entries_max + 1, sizeof(*queue));
	size_t head = 0, tail = 0;
	int rc = 0;

	*seen = 0;
	if (!queue)
		return -ENOMEM;
	queue[tail] = strdup(".");
	if (!queue[tail++]) {
		rc = -ENOMEM;
		goto out_free;
	}
	while (rc == 0 && head < tail && *seen < probe_entries_max) {
		const char *dir = queue[head++];
		int dfd = open_below(rootfd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		struct dirent *de;
		DIR *d;

		if (dfd < 0)
			continue;
		d = fdopendir(dfd);
		if (!d) {
			close(dfd);
			continue;
		}
		while (rc == 0 && *seen < probe_entries_max && (de = readdir(d))) {
			char path[PATH_MAX];
			struct stat st;

			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			(*seen)++;
			if (de->d_type != DT_UNKNOWN && de->d_type != DT_DIR && de->d_type != DT_REG)
				continue;
			if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_dev != dev)
				continue;
			if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= (int)sizeof(path))
				continue;
			if (S_ISDIR(st.st_mode)) {
				queue[tail] = strdup(path);
				if (!queue[tail++])
					rc = -ENOMEM;
			} else if (worth_reading(&st) && (uint64_t)st.st_size > *best_size) {
				snprintf(best, bestlen, "%s", path);
				*best_size = (uint64_t)st.st_size;
			}
		}
		closedir(d);
	}
out_free:
	for (size_t i = 0; i < tail; i++)
		free(queue[i]);
	free(queue);
	return rc;
}

/* A 64-bit linear congruential generator (Knuth's MMIX constants); its high bits are used. */
static uint32_t next_random(uint64_t *state)
{
	*state = *state * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(*state >> 32);
}

/*
 * Offsets of the random reads into offs[] (room for probe_reads_max): the file is cut into
 * `n` equal strata of at least PROBE_STRIDE_MIN bytes, visited from the last to the first, one
 * block drawn from the first half of each, so consecutive reads are at least half a stratum
 * apart and each lands before the one it follows. Returns n.
 */
static unsigned random_offsets(uint64_t size, off_t *offs, uint64_t *rng)
{
	uint64_t n = size / PROBE_STRIDE_MIN;

	if (n > probe_reads_max)
		n = probe_reads_max;
	uint64_t stride = size / n / PROBE_BLOCK * PROBE_BLOCK;
	uint64_t choices = stride / PROBE_BLOCK / 2;

	for (uint64_t i = 0; i < n; i++) {
		uint64_t s = n - 1 - i;

		offs[i] = (off_t)(s * stride + next_random(rng) % choices * PROBE_BLOCK);
	}
	return (unsigned)n;
}

static int cmp_ns(const void *a, const void *b)
{
	sched_ns x = *(const sched_ns *)a, y = *(const sched_ns *)b;

	return (x > y) - (x < y);
}

/* Median of t[0..n) (sorts t). n > 0. */
static sched_ns median(sched_ns *t, unsigned n)
{
	qsort(t, n, sizeof(*t), cmp_ns);
	return n % 2 ? t[n / 2] : t[n / 2 - 1] + (t[n / 2] - t[n / 2 - 1]) / 2;
}

/*
 * Times one PROBE_BLOCK read at each of offs[0..n) until probe_budget is spent, each into
 * t[]. Returns 0 with *done set (at least one read), or -errno of the read that failed
 * (-EIO for a short one: the file shrank).
 */
static int time_reads(int fd, void *buf, const off_t *offs, unsigned n, sched_ns *t,
		      unsigned *done)
{
	sched_ns start = clk_now(), t0 = start;
	unsigned i;

	for (i = 0; i < n && t0 - start < probe_budget; i++) {
		ssize_t got = pread(fd, buf, PROBE_BLOCK, offs[i]);
		int e = errno;
		sched_ns t1 = clk_now();

		if (got != (ssize_t)PROBE_BLOCK)
			return got < 0 ? -e : -EIO;
		t[i] = t1 - t0;
		t0 = t1;
	}
	*done = i;
	return 0;
}

/*
 * The timed part of probe_measure() on the file open in `fd` (O_DIRECT) of `size` bytes.
 * Random reads come first: sequential ones first would leave the file's start in the disk's
 * cache, where some random reads would find it.
 */
static int time_file(int fd, uint64_t size, struct probe_costs *c, char *why, size_t whylen)
{
	off_t *offs = calloc(probe_reads_max, sizeof(*offs));
	sched_ns *t = calloc(probe_reads_max, sizeof(*t));
	void *buf = aligned_alloc(PROBE_BLOCK, PROBE_BLOCK);
	uint64_t rng = PROBE_SEED;
	unsigned n;
	int rc = -ENOMEM;

	if (!offs || !t || !buf) {
		snprintf(why, whylen, "out of memory");
		goto out_free;
	}
	n = random_offsets(size, offs, &rng);
	rc = time_reads(fd, buf, offs, n, t, &c->rand_reads);
	if (rc)
		goto out_read;
	c->rand_cost = median(t, c->rand_reads);
	for (unsigned i = 0; i < probe_reads_max; i++)
		offs[i] = (off_t)i * PROBE_BLOCK;
	rc = time_reads(fd, buf, offs, probe_reads_max, t, &c->seq_reads);
	if (rc)
		goto out_read;
	c->seq_cost = median(t, c->seq_reads);
	goto out_free;

out_read:
	snprintf(why, whylen, "a read failed: %s", rc == -EIO ? "short read" : strerror(-rc));
out_free:
	free(buf);
	free(t);
	free(offs);
	return rc;
}

int probe_measure(const char *src, struct probe_costs *c, char *why, size_t whylen)
{
	sched_ns start = clk_now();
	char rel[PATH_MAX] = "";
	uint64_t size = 0;
	struct statfs sfs;
	unsigned seen;
	struct stat st;
	int rootfd, fd, rc;

	rootfd = open(src, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0) {
		rc = -errno;
		snprintf(why, whylen, "cannot open SOURCE: %s", strerror(-rc));
		goto out;
	}
	if (fstat(rootfd, &st) < 0) {
		rc = -errno;
		snprintf(why, whylen, "cannot stat SOURCE: %s", strerror(-rc));
		goto out_root;
	}
	rc = find_file(rootfd, st.st_dev, rel, sizeof(rel), &size, &seen);
	if (rc) {
		snprintf(why, whylen, "out of memory");
		goto out_root;
	}
	if (!size) {
		rc = -ENOENT;
		snprintf(why, whylen,
			 "SOURCE empty: no dense regular file of %u MiB or more among the %s%u "
			 "entries looked at", (unsigned)(PROBE_FILE_MIN >> 20),
			 seen == probe_entries_max ? "first " : "", seen);
		goto out_root;
	}
	/* O_NOATIME when we may (we own the file, or are root): a probe changes nothing. */
	fd = open_below(rootfd, rel, O_RDONLY | O_DIRECT | O_NOATIME | O_CLOEXEC);
	if (fd == -EPERM)
		fd = open_below(rootfd, rel, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (fd < 0) {
		rc = fd;
		if (rc == -EINVAL)
			snprintf(why, whylen, "cache cannot be bypassed (O_DIRECT refused: %s)",
				 strerror(-rc));
		else
			snprintf(why, whylen, "cannot open a file to read: %s", strerror(-rc));
		goto out_root;
	}
	/* tmpfs takes O_DIRECT since Linux 6.6, but its page cache is its storage: nothing is
	 * bypassed and its "seeks" are memory's. Refused as older kernels refuse the open. */
	if (fstatfs(fd, &sfs) == 0 && (sfs.f_type == TMPFS_MAGIC || sfs.f_type == RAMFS_MAGIC)) {
		rc = -EINVAL;
		snprintf(why, whylen, "cache cannot be bypassed (SOURCE is in memory: tmpfs)");
		goto out_file;
	}
	/* It may have changed since the walk saw it. */
	if (fstat(fd, &st) < 0 || !worth_reading(&st)) {
		rc = -EAGAIN;
		snprintf(why, whylen, "the file to read changed during the probe");
		goto out_file;
	}
	c->file_size = (uint64_t)st.st_size;
	rc = time_file(fd, c->file_size, c, why, whylen);
	c->elapsed = clk_now() - start;
out_file:
	close(fd);
out_root:
	close(rootfd);
out:
	return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* Decision                                                                                  */

/*
 * Seeks cost something iff a random read costs both PROBE_SEEK_RATIO times a sequential one
 * and PROBE_SEEK_EXTRA more.
 * - The absolute part: the least a spinning disk can charge for a random read over a
 *   sequential one is its rotational latency, half a turn: 2 ms at 15000 rpm, 4.2 ms at 7200,
 *   5.6 ms at 5400, before any seek. An SSD's random 4 KiB reads cost at most some tens of
 *   microseconds more than its sequential ones, a virtual disk in the host's page cache
 *   nothing. 1 ms sits twice below the fastest disk and ten times above flash.
 * - The ratio guards the absolute part on slow but position-blind storage (a network block
 *   device at 2-3 ms per read whatever the offset): a gap of a millisecond there is noise,
 *   and idling would not buy back what it costs. A disk's sequential reads come from its
 *   read-ahead cache (0.1-0.5 ms), so its ratio is 10 or more; 3 leaves a loaded disk room.
 * This is what CFQ's idling needs: it waits up to slice_idle (8 ms) for a process's next
 * nearby request because serving another process's request instead would cost a seek.
 */
#define PROBE_SEEK_RATIO 3u
#define PROBE_SEEK_EXTRA (1 * SCHED_NS_PER_MS) /* [ns] */

static double us_of(sched_ns t)
{
	return (double)t / (double)SCHED_NS_PER_US;
}

int probe_decide(const struct probe_costs *c, struct probe_verdict *v)
{
	sched_ns r = c->rand_cost, s = c->seq_cost;
	char ratio[32] = "";
	size_t n;

	v->rotational = false;
	if (c->seq_reads < PROBE_SAMPLES_MIN || c->rand_reads < PROBE_SAMPLES_MIN) {
		snprintf(v->why, sizeof(v->why),
			 "too few reads within the time budget (%u sequential, %u random; %u of each "
			 "needed)", c->seq_reads, c->rand_reads, PROBE_SAMPLES_MIN);
		return -EAGAIN;
	}
	/* r / RATIO >= s is r >= RATIO * s in integers, without the overflow */
	v->rotational = r / PROBE_SEEK_RATIO >= s && r - s >= PROBE_SEEK_EXTRA;
	if (s)
		snprintf(ratio, sizeof(ratio), "%.1fx sequential ones, ", (double)r / (double)s);
	n = (size_t)snprintf(v->why, sizeof(v->why),
			     "measured: random reads cost %s%.1f us against %.1f us (%+.1f us): "
			     "seeks cost %s", ratio, us_of(r), us_of(s),
			     r >= s ? us_of(r - s) : -us_of(s - r),
			     v->rotational ? "time" : "nothing");
	if (n < sizeof(v->why) && c->reported >= 0 && c->reported != v->rotational)
		snprintf(v->why + n, sizeof(v->why) - n, " (the device says rotational=%d)",
			 c->reported);
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* The whole probe and its report                                                            */

static const char *state_name(enum probe_state s)
{
	switch (s) {
	case PROBE_DONE:
		return "done";
	case PROBE_REFUSED:
		return "refused";
	default:
		return "skipped";
	}
}

/* The verdict without a measurement: today's rule (the flag, or an assumption). */
static void fall_back(struct probe_report *r)
{
	if (r->reported >= 0) {
		r->rotational = r->reported;
		snprintf(r->why, sizeof(r->why), "detected from block device %s (probe %s: %s)",
			 r->device, state_name(r->state), r->skipped);
		return;
	}
	/* No block device (tmpfs, overlay, network): its "disk" is memory or a server; CFQ's
	 * classic behaviour (idling) is what users of a scheduler expect to see, so assume
	 * rotational and say so. */
	r->rotational = true;
	snprintf(r->why, sizeof(r->why), "no block device under SOURCE (%s), assumed (probe %s: %s)",
		 strerror(-r->reported), state_name(r->state), r->skipped);
}

void probe_device(const char *src, const struct probe_override *ov, struct probe_report *r)
{
	struct probe_verdict v;
	int rc;

	memset(r, 0, sizeof(*r));
	r->reported = probe_rotational(src, r->device, sizeof(r->device));
	r->costs.reported = r->reported < 0 ? -1 : r->reported;
	r->state = PROBE_SKIPPED;
	if (ov) {
		snprintf(r->skipped, sizeof(r->skipped), "%s", ov->skip);
		snprintf(r->why, sizeof(r->why), "%s", ov->why);
		r->rotational = ov->rotational;
		return;
	}
	rc = probe_measure(src, &r->costs, r->skipped, sizeof(r->skipped));
	r->costs.reported = r->reported < 0 ? -1 : r->reported; /* unspecified on failure */
	if (rc == 0) {
		rc = probe_decide(&r->costs, &v);
		r->state = rc == 0 ? PROBE_DONE : PROBE_REFUSED;
		if (rc == 0) {
			r->rotational = v.rotational;
			snprintf(r->why, sizeof(r->why), "%s", v.why);
			return;
		}
		snprintf(r->skipped, sizeof(r->skipped), "%s", v.why);
	}
	fall_back(r);
}

int probe_format(const struct probe_report *r, char *buf, size_t len)
{
	const struct probe_costs *c = &r->costs;
	size_t n = 0;
	int w;

#define PUT(...)                                                                      \
	do {                                                                          \
		w = snprintf(buf + (n < len ? n : len), n < len ? len - n : 0, __VA_ARGS__); \
		n += (size_t)(w > 0 ? w : 0);                                         \
	} while (0)
	if (r->reported >= 0)
		PUT("reported_rotational=%d (block device %s)\n", r->reported, r->device);
	else if (r->reported == -ENODEV)
		PUT("reported_rotational=none (no block device under SOURCE)\n");
	else
		PUT("reported_rotational=none (%s)\n", strerror(-r->reported));
	if (r->state == PROBE_SKIPPED)
		PUT("probe=skipped: %s\n", r->skipped);
	else
		PUT("probe=%s file_size=%" PRIu64 " sequential_us=%.1f random_us=%.1f reads=%u+%u "
		    "time_ms=%" PRIu64 "\n", state_name(r->state), c->file_size,
		    us_of(c->seq_cost), us_of(c->rand_cost), c->seq_reads, c->rand_reads,
		    (uint64_t)((c->elapsed + SCHED_NS_PER_MS / 2) / SCHED_NS_PER_MS));
	PUT("rotational=%d\n", r->rotational);
	PUT("why=%s\n", r->why);
#undef PUT
	return (int)n;
}
