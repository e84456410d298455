/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cfqfs_fsx - an fsx-style random I/O checker for one file.
 *
 * It keeps an in-memory model of the file (its size and every byte) and applies N seeded-random
 * operations both to the model and to the real file: pread checked against the model, pwrite of
 * random data (also past EOF, leaving holes), ftruncate up and down, reads and writes through a
 * MAP_SHARED mapping (msync'ed), fallocate (plain, KEEP_SIZE, PUNCH_HOLE|KEEP_SIZE, ZERO_RANGE
 * with and without KEEP_SIZE), fsync, fdatasync and close+reopen. Every `-c` operations and at
 * the end, the whole file is checked (fstat size, then all bytes and EOF).
 *
 * Determinism: every random draw comes from one xorshift generator seeded by -S, and the draws
 * of an operation do not depend on what the file system answered, so one seed gives the same
 * operation sequence on every file system (an operation the file system refuses with
 * EOPNOTSUPP is switched off and later draws of it are counted as skipped).
 *
 * Exit status: 0 all checks passed, 1 data or size mismatch, 2 an operation failed, 64 usage.
 * The last line on stdout is always the summary, `fsx: ops=N reads=... mismatches=M errors=E`.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/falloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define FSX_LOG 32	  /* operations remembered for a failure report */
#define FSX_LOG_SHOW 20	  /* of which printed */
#define FSX_SHOW_BYTES 16 /* bytes printed around a mismatch */

enum fsx_op {
	OP_READ,
	OP_WRITE,
	OP_MAPREAD,
	OP_MAPWRITE,
	OP_TRUNCATE,
	OP_FALLOC,	/* mode 0 or KEEP_SIZE */
	OP_PUNCH,	/* PUNCH_HOLE | KEEP_SIZE */
	OP_ZERO,	/* ZERO_RANGE, with or without KEEP_SIZE */
	OP_FSYNC,
	OP_FDATASYNC,
	OP_REOPEN,
	OP_COPY,	/* copy_file_range within the file (overlapping ranges: EINVAL) */
	OP_VERIFY,	/* periodic whole-file check; never drawn */
	OP_COUNT
};

static const char *const op_name[OP_COUNT] = {
	"read", "write", "mapread", "mapwrite", "truncate", "falloc", "punch", "zero",
	"fsync", "fdatasync", "reopen", "copy", "verify",
};

/* Plural names for the summary line. */
static const char *const op_stat[OP_COUNT] = {
	"reads", "writes", "mapreads", "mapwrites", "truncates", "fallocs", "punches", "zeroes",
	"fsyncs", "fdatasyncs", "reopens", "copies", "verifies",
};

/*
 * Relative frequency of each drawn operation [per mille]; sums to 1000. Syncs, truncates and
 * fallocates are the rarer ones because on ext4 each of them waits for the disk (ordered-mode
 * truncate and hole punching write back the range first): ~2 ms each here, against ~0.1 ms for
 * a write.
 */
static const unsigned op_weight[OP_COUNT] = {
	[OP_READ] = 270,  [OP_WRITE] = 300,  [OP_MAPREAD] = 120, [OP_MAPWRITE] = 120,
	[OP_TRUNCATE] = 20, [OP_FALLOC] = 20, [OP_PUNCH] = 30,  [OP_ZERO] = 30,
	[OP_FSYNC] = 2,   [OP_FDATASYNC] = 2, [OP_REOPEN] = 56, [OP_COPY] = 30,
};

/* One mapped write in MAPWRITE_SYNC_EVERY ends with msync(MS_SYNC), the others MS_ASYNC. */
#define MAPWRITE_SYNC_EVERY 16

/* Command line. */
struct fsx_opts {
	uint64_t nops;		/* [ops] operations to draw */
	uint64_t seed;		/* -S */
	size_t maxlen;		/* [bytes] the file never grows beyond this */
	size_t maxop;		/* [bytes] longest read/write/fallocate range */
	uint64_t check_every;	/* [ops] whole-file check interval; 0: only at the end */
	bool off[OP_COUNT];	/* operations disabled on the command line */
	bool quiet;		/* only the summary (and failures) */
	const char *path;
};

/* One remembered operation. */
struct fsx_rec {
	uint64_t seq;		/* operation number, from 1 */
	enum fsx_op op;
	int mode;		/* fallocate mode, or 0 */
	uint64_t off;		/* [bytes] */
	uint64_t len;		/* [bytes] */
	uint64_t size_before;	/* [bytes] model size before the operation */
	uint64_t size_after;	/* [bytes] model size after */
	bool skipped;		/* nothing done (switched off, empty file) */
};

/*
 * The whole state. Invariants: size <= o.maxlen; model[size..maxlen) is all zero (so growing
 * the file needs no work on the model); owner[i] is the seq of the last operation that set
 * model[i] (0: never written).
 */
struct fsx {
	struct fsx_opts o;
	int fd;			/* open O_RDWR on o.path */
	uint64_t state;		/* xorshift64 state, never 0 */
	unsigned char *model;	/* [maxlen bytes] expected content */
	uint32_t *owner;	/* [maxlen entries] */
	unsigned char *buf;	/* [max(maxlen, maxop) bytes] scratch for I/O */
	uint64_t size;		/* [bytes] expected file size */
	size_t page;		/* [bytes] page size, for mmap offsets */
	uint64_t seq;		/* current operation number */
	uint64_t count[OP_COUNT]; /* operations done, by kind */
	uint64_t skipped;	/* operations drawn but not done */
	bool unsupported[OP_COUNT]; /* switched off after EOPNOTSUPP */
	uint64_t mismatches;
	uint64_t errors;
	uint64_t nlog;		/* records ever appended to log[] */
	struct fsx_rec log[FSX_LOG]; /* ring: record k (from 0) in log[k % FSX_LOG] */
};

static uint64_t rnd(struct fsx *f)
{
	uint64_t x = f->state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	f->state = x;
	return x * 0x2545F4914F6CDD1DULL;
}

/* Uniform in [0, n); n > 0. The tiny modulo bias does not matter here. */
static uint64_t rnd_below(struct fsx *f, uint64_t n)
{
	return rnd(f) % n;
}

/* Byte i of the data an operation with data seed `ds` writes: cheap, position-dependent. */
static unsigned char data_byte(uint64_t ds, uint64_t i)
{
	uint64_t x = (ds ^ (i * 0x9E3779B97F4A7C15ULL)) + i;

	x ^= x >> 29;
	x *= 0xBF58476D1CE4E5B9ULL;
	x ^= x >> 32;
	return (unsigned char)x;
}

/* Appends a fresh record for operation f->seq of kind op and returns it. */
static struct fsx_rec *rec_new(struct fsx *f, enum fsx_op op)
{
	struct fsx_rec *r = &f->log[f->nlog++ % FSX_LOG];

	*r = (struct fsx_rec){ .seq = f->seq, .op = op, .size_before = f->size,
			       .size_after = f->size };
	return r;
}

/* The record of the operation running now; rec_new() was called before. */
static struct fsx_rec *rec_cur(struct fsx *f)
{
	return &f->log[(f->nlog - 1) % FSX_LOG];
}

static void print_rec(const struct fsx_rec *r)
{
	fprintf(stderr, "  %6" PRIu64 " %-9s", r->seq, op_name[r->op]);
	if (r->op == OP_TRUNCATE)
		fprintf(stderr, " to 0x%" PRIx64, r->size_after);
	else if (r->op != OP_FSYNC && r->op != OP_FDATASYNC && r->op != OP_REOPEN &&
		 r->op != OP_VERIFY)
		fprintf(stderr, " 0x%" PRIx64 "..0x%" PRIx64 " (0x%" PRIx64 " bytes)", r->off,
			r->off + r->len, r->len);
	if (r->op == OP_MAPWRITE)
		fprintf(stderr, " %s", r->mode == MS_SYNC ? "MS_SYNC" : "MS_ASYNC");
	else if (r->mode)
		fprintf(stderr, " mode=0x%x", (unsigned)r->mode);
	fprintf(stderr, " size 0x%" PRIx64 "->0x%" PRIx64 "%s\n", r->size_before, r->size_after,
		r->skipped ? " (skipped)" : "");
}

static void print_log(struct fsx *f)
{
	if (f->nlog)
		rec_cur(f)->size_after = f->size;
	uint64_t first = f->nlog >= FSX_LOG_SHOW ? f->nlog - FSX_LOG_SHOW : 0;

	fprintf(stderr, "fsx: last operations (seq op range size):\n");
	for (uint64_t k = first; k < f->nlog; k++)
		print_rec(&f->log[k % FSX_LOG]);
}

/* Reports an operation that failed: counts it and prints errno and the recent history. */
static int fail_op(struct fsx *f, const char *what, int err)
{
	f->errors++;
	fprintf(stderr, "fsx: op %" PRIu64 " (%s): %s failed: %s\n", f->seq,
		op_name[rec_cur(f)->op], what, strerror(err));
	print_log(f);
	return -err;
}

/*
 * Compares `got` (n bytes read at file offset off) with the model. On a difference prints the
 * first differing offset, the expected and actual bytes there, the operation that last wrote
 * it, and the recent history; returns -EILSEQ.
 */
static int check_bytes(struct fsx *f, const char *how, uint64_t off, const unsigned char *got,
		       size_t n)
{
	const unsigned char *want = f->model + off;
	size_t i, bad = 0, first;

	if (memcmp(want, got, n) == 0)
		return 0;
	for (i = 0; i < n && want[i] == got[i]; i++)
		;
	first = i;
	for (; i < n; i++)
		bad += want[i] != got[i];
	f->mismatches++;
	fprintf(stderr,
		"fsx: op %" PRIu64 " (%s): data mismatch at offset 0x%" PRIx64
		" (%zu of 0x%zx bytes differ), file size 0x%" PRIx64 "\n",
		f->seq, how, off + first, bad, n, f->size);
	fprintf(stderr, "fsx:   offset   expected got   (last written by op)\n");
	for (i = first; i < n && i < first + FSX_SHOW_BYTES; i++)
		fprintf(stderr, "fsx:   0x%06" PRIx64 " 0x%02x     0x%02x%s (%" PRIu32 ")\n",
			off + i, want[i], got[i], want[i] != got[i] ? " *" : "  ",
			f->owner[off + i]);
	print_log(f);
	return -EILSEQ;
}

static int size_mismatch(struct fsx *f, const char *how, uint64_t got)
{
	f->mismatches++;
	fprintf(stderr, "fsx: op %" PRIu64 " (%s): size is 0x%" PRIx64 ", expected 0x%" PRIx64 "\n",
		f->seq, how, got, f->size);
	print_log(f);
	return -EILSEQ;
}

/* Sets model[off, off+len) from data seed ds (or to zero if zero) and records the owner. */
static void model_set(struct fsx *f, uint64_t off, uint64_t len, uint64_t ds, bool zero)
{
	for (uint64_t i = 0; i < len; i++) {
		f->model[off + i] = zero ? 0 : data_byte(ds, i);
		f->owner[off + i] = (uint32_t)f->seq;
	}
}

/* Resizes the model, keeping the zero tail invariant. */
static void model_resize(struct fsx *f, uint64_t size)
{
	if (size < f->size) {
		memset(f->model + size, 0, f->size - size);
		for (uint64_t i = size; i < f->size; i++)
			f->owner[i] = (uint32_t)f->seq;
	}
	f->size = size;
}

/* Full pread of n bytes at off; retries short transfers. Returns bytes read or -errno. */
static ssize_t pread_full(int fd, unsigned char *buf, size_t n, uint64_t off)
{
	size_t done = 0;

	while (done < n) {
		ssize_t r = pread(fd, buf + done, n - done, (off_t)(off + done));

		if (r < 0) {
			int err = errno;

			if (err == EINTR)
				continue;
			return -err;
		}
		if (r == 0)
			break;
		done += (size_t)r;
	}
	return (ssize_t)done;
}

static int pwrite_full(int fd, const unsigned char *buf, size_t n, uint64_t off)
{
	size_t done = 0;

	while (done < n) {
		ssize_t r = pwrite(fd, buf + done, n - done, (off_t)(off + done));

		if (r < 0) {
			int err = errno;

			if (err == EINTR)
				continue;
			return -err;
		}
		if (r == 0)
			return -EIO;
		done += (size_t)r;
	}
	return 0;
}

static int do_read(struct fsx *f, uint64_t off, uint64_t len)
{
	uint64_t want = off < f->size ? (len < f->size - off ? len : f->size - off) : 0;
	ssize_t n = pread_full(f->fd, f->buf, len, off);

	if (n < 0)
		return fail_op(f, "pread", (int)-n);
	if ((uint64_t)n != want) {
		f->mismatches++;
		fprintf(stderr,
			"fsx: op %" PRIu64 " (read): pread of 0x%" PRIx64 " bytes at 0x%" PRIx64
			" returned 0x%zx, expected 0x%" PRIx64 " (file size 0x%" PRIx64 ")\n",
			f->seq, len, off, (size_t)n, want, f->size);
		print_log(f);
		return -EILSEQ;
	}
	return check_bytes(f, "read", off, f->buf, (size_t)n);
}

static int do_write(struct fsx *f, uint64_t off, uint64_t len, uint64_t ds)
{
	int ret;

	for (uint64_t i = 0; i < len; i++)
		f->buf[i] = data_byte(ds, i);
	ret = pwrite_full(f->fd, f->buf, len, off);
	if (ret < 0)
		return fail_op(f, "pwrite", -ret);
	model_set(f, off, len, ds, false);
	if (off + len > f->size)
		f->size = off + len;
	return 0;
}

/* Maps [off, off+len) of the file (page-aligned around it). *base gets the mapping. */
static int map_range(struct fsx *f, uint64_t off, uint64_t len, int prot, void **base,
		     size_t *maplen, size_t *delta)
{
	uint64_t pgoff = off - off % f->page;
	void *p;

	*delta = (size_t)(off - pgoff);
	*maplen = (size_t)(len + *delta);
	p = mmap(NULL, *maplen, prot, MAP_SHARED, f->fd, (off_t)pgoff);
	if (p == MAP_FAILED)
		return -errno;
	*base = p;
	return 0;
}

static int do_mapread(struct fsx *f, uint64_t off, uint64_t len)
{
	size_t maplen = 0, delta = 0;
	void *p = NULL;
	int ret;

	ret = map_range(f, off, len, PROT_READ, &p, &maplen, &delta);
	if (ret < 0)
		return fail_op(f, "mmap(PROT_READ, MAP_SHARED)", -ret);
	ret = check_bytes(f, "mapread", off, (unsigned char *)p + delta, (size_t)len);
	if (munmap(p, maplen) == -1 && ret == 0)
		ret = fail_op(f, "munmap", errno);
	return ret;
}

/*
 * Writes through a shared mapping. Most writes end with msync(MS_ASYNC), which leaves the pages
 * dirty in the page cache for the following reads, writes, truncates and reopens to meet (where
 * FUSE page-cache bugs would show); every MAPWRITE_SYNC_EVERY-th (by the data seed) with
 * msync(MS_SYNC).
 */
static int do_mapwrite(struct fsx *f, uint64_t off, uint64_t len, uint64_t ds)
{
	int how = (ds >> 32) % MAPWRITE_SYNC_EVERY == 0 ? MS_SYNC : MS_ASYNC;
	size_t maplen = 0, delta = 0;
	unsigned char *dst;
	void *p = NULL;
	int ret;

	/* A mapping cannot extend the file: grow it first, as fsx does. */
	if (off + len > f->size) {
		if (ftruncate(f->fd, (off_t)(off + len)) == -1)
			return fail_op(f, "ftruncate (extend for mapwrite)", errno);
		model_resize(f, off + len);
	}
	ret = map_range(f, off, len, PROT_READ | PROT_WRITE, &p, &maplen, &delta);
	if (ret < 0)
		return fail_op(f, "mmap(PROT_READ|PROT_WRITE, MAP_SHARED)", -ret);
	dst = (unsigned char *)p + delta;
	for (uint64_t i = 0; i < len; i++)
		dst[i] = data_byte(ds, i);
	model_set(f, off, len, ds, false);
	rec_cur(f)->mode = how;
	if (msync(p, maplen, how) == -1)
		ret = fail_op(f, how == MS_SYNC ? "msync(MS_SYNC)" : "msync(MS_ASYNC)", errno);
	if (munmap(p, maplen) == -1 && ret == 0)
		ret = fail_op(f, "munmap", errno);
	return ret;
}

static int do_truncate(struct fsx *f, uint64_t size)
{
	if (ftruncate(f->fd, (off_t)size) == -1)
		return fail_op(f, "ftruncate", errno);
	model_resize(f, size);
	return 0;
}

/*
 * fallocate with `mode` on [off, off+len). EOPNOTSUPP switches the operation kind off
 * (reported in the summary; this one counts as skipped) and is not an error. Returns 0 or
 * -errno.
 */
static int do_fallocate(struct fsx *f, enum fsx_op op, int mode, uint64_t off, uint64_t len)
{
	bool keep = mode & FALLOC_FL_KEEP_SIZE;
	uint64_t end = off + len;

	if (fallocate(f->fd, mode, (off_t)off, (off_t)len) == -1) {
		int err = errno;

		if (err == EOPNOTSUPP) {
			f->unsupported[op] = true;
			rec_cur(f)->skipped = true;
			if (!f->o.quiet)
				printf("fsx: op %" PRIu64 ": fallocate mode 0x%x: EOPNOTSUPP, %s"
				       " switched off\n", f->seq, (unsigned)mode, op_name[op]);
			return 0;
		}
		return fail_op(f, "fallocate", err);
	}
	if (mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE)) {
		uint64_t zend = keep && end > f->size ? f->size : end;

		if (zend > off)
			model_set(f, off, zend - off, 0, true);
	}
	if (!keep && end > f->size)
		f->size = end;
	return 0;
}

/*
 * copy_file_range of up to `len` bytes from `src` to `dst` within the file, looping on short
 * counts as callers do. Linux first shortens the copy to the source's end of file, then
 * refuses it with EINVAL if the two ranges overlap (generic_copy_file_checks); a copy that
 * starts at or past EOF copies nothing. The model does the same; the file must agree.
 */
static int do_copy(struct fsx *f, uint64_t src, uint64_t dst, uint64_t len)
{
	uint64_t count = src < f->size ? (len < f->size - src ? len : f->size - src) : 0;
	bool overlap = count > 0 && dst + count > src && dst < src + count;
	uint64_t done = 0;

	rec_cur(f)->mode = (int)(src & 0x7fffffff); /* shown as mode= in the log: the source */
	while (done < count || (count == 0 && done == 0)) {
		loff_t in = (loff_t)(src + done), out = (loff_t)(dst + done);
		ssize_t n = copy_file_range(f->fd, &in, f->fd, &out, (size_t)(len - done), 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EINVAL && overlap && done == 0)
			return 0; /* refused, as the model says: nothing changed */
		if (n < 0)
			return fail_op(f, overlap ? "copy_file_range (overlap, EINVAL expected)"
						  : "copy_file_range", errno);
		if (overlap) {
			f->mismatches++;
			fprintf(stderr, "fsx: op %" PRIu64 " (copy): overlapping copy 0x%" PRIx64
				" -> 0x%" PRIx64 " of 0x%" PRIx64 " bytes returned %zd, not EINVAL\n",
				f->seq, src, dst, count, n);
			print_log(f);
			return -EILSEQ;
		}
		if (n == 0)
			break;
		done += (uint64_t)n;
	}
	if (done != count) {
		f->mismatches++;
		fprintf(stderr, "fsx: op %" PRIu64 " (copy): copied 0x%" PRIx64 " of 0x%" PRIx64
			" bytes from 0x%" PRIx64 " (file size 0x%" PRIx64 ")\n", f->seq, done, count,
			src, f->size);
		print_log(f);
		return -EILSEQ;
	}
	if (count > 0) {
		memmove(f->model + dst, f->model + src, count);
		for (uint64_t i = 0; i < count; i++)
			f->owner[dst + i] = (uint32_t)f->seq;
		if (dst + count > f->size)
			f->size = dst + count;
	}
	return 0;
}

static int do_sync(struct fsx *f, bool data_only)
{
	if ((data_only ? fdatasync(f->fd) : fsync(f->fd)) == -1)
		return fail_op(f, data_only ? "fdatasync" : "fsync", errno);
	return 0;
}

static int do_reopen(struct fsx *f)
{
	int fd;

	if (close(f->fd) == -1) {
		f->fd = -1;
		return fail_op(f, "close", errno);
	}
	fd = open(f->o.path, O_RDWR);
	f->fd = fd;
	if (fd == -1)
		return fail_op(f, "open", errno);
	return 0;
}

/* fstat size, every byte, and EOF right after the last byte. */
static int do_verify(struct fsx *f)
{
	struct stat st;
	ssize_t n;

	if (fstat(f->fd, &st) == -1)
		return fail_op(f, "fstat", errno);
	if ((uint64_t)st.st_size != f->size)
		return size_mismatch(f, "verify: fstat", (uint64_t)st.st_size);
	n = pread_full(f->fd, f->buf, f->o.maxlen, 0);
	if (n < 0)
		return fail_op(f, "pread (verify)", (int)-n);
	if ((uint64_t)n != f->size)
		return size_mismatch(f, "verify: bytes read to EOF", (uint64_t)n);
	return check_bytes(f, "verify", 0, f->buf, (size_t)n);
}

static enum fsx_op draw_op(struct fsx *f)
{
	uint64_t r = rnd_below(f, 1000);
	int op;

	for (op = 0; op < OP_VERIFY; op++) {
		if (r < op_weight[op])
			break;
		r -= op_weight[op];
	}
	return (enum fsx_op)op;
}

/*
 * Draws and performs one operation. Every draw happens before the operation runs, and the
 * number of draws depends only on the model, so the sequence is the same on any file system
 * that behaves correctly. Returns 0 (also when skipped) or -errno / -EILSEQ.
 */
static int step(struct fsx *f)
{
	enum fsx_op op = draw_op(f);
	uint64_t maxlen = f->o.maxlen;
	uint64_t off = rnd_below(f, maxlen);
	uint64_t len = 1 + rnd_below(f, f->o.maxop);
	uint64_t aux = rnd(f); /* data seed, truncate size, fallocate variant */
	struct fsx_rec *r = rec_new(f, op);
	int ret = 0;

	if (off + len > maxlen)
		len = maxlen - off;
	/* Reads and mapped accesses mostly land inside the file, where the data is. */
	if ((op == OP_READ && (aux & 7) != 0) || op == OP_MAPREAD || op == OP_PUNCH) {
		if (f->size > 0) {
			off = off % f->size;
			if (off + len > f->size)
				len = f->size - off;
		}
	}
	r->off = off;
	r->len = len;
	if (f->o.off[op] || f->unsupported[op] ||
	    ((op == OP_MAPREAD || op == OP_PUNCH) && f->size == 0)) {
		r->skipped = true;
		goto out;
	}
	switch (op) {
	case OP_READ:
		ret = do_read(f, off, len);
		break;
	case OP_WRITE:
		ret = do_write(f, off, len, aux);
		break;
	case OP_MAPREAD:
		ret = do_mapread(f, off, len);
		break;
	case OP_MAPWRITE:
		ret = do_mapwrite(f, off, len, aux);
		break;
	case OP_TRUNCATE:
		ret = do_truncate(f, aux % (maxlen + 1));
		break;
	case OP_FALLOC:
		r->mode = (aux & 1) ? FALLOC_FL_KEEP_SIZE : 0;
		ret = do_fallocate(f, op, r->mode, off, len);
		break;
	case OP_PUNCH:
		r->mode = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;
		ret = do_fallocate(f, op, r->mode, off, len);
		break;
	case OP_ZERO:
		r->mode = FALLOC_FL_ZERO_RANGE | ((aux & 1) ? FALLOC_FL_KEEP_SIZE : 0);
		ret = do_fallocate(f, op, r->mode, off, len);
		break;
	case OP_FSYNC:
	case OP_FDATASYNC:
		ret = do_sync(f, op == OP_FDATASYNC);
		break;
	case OP_REOPEN:
		ret = do_reopen(f);
		break;
	case OP_COPY: /* the source mostly inside the file, sometimes past its end */
		ret = do_copy(f, f->size > 0 && (aux & 7) != 0 ? aux % f->size : aux % maxlen, off,
			      len);
		break;
	case OP_VERIFY:
	case OP_COUNT:
		break;
	}
out:
	r->size_after = f->size;
	if (r->skipped)
		f->skipped++;
	else if (ret == 0)
		f->count[op]++;
	return ret;
}

static int run_verify(struct fsx *f)
{
	struct fsx_rec *r = rec_new(f, OP_VERIFY);
	int ret;

	r->len = f->size;
	ret = do_verify(f);
	if (ret == 0)
		f->count[OP_VERIFY]++;
	return ret;
}

/* FNV-1a of the model: equal hashes on two file systems mean equal final files. */
static uint64_t model_hash(const struct fsx *f)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (uint64_t i = 0; i < f->size; i++) {
		h ^= f->model[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static void print_summary(const struct fsx *f)
{
	char off[128] = "";
	size_t used = 0;

	for (int op = 0; op < OP_VERIFY; op++)
		if (f->unsupported[op])
			used += (size_t)snprintf(off + used, sizeof(off) - used, "%s%s",
						 used ? "," : "", op_name[op]);
	printf("fsx: ops=%" PRIu64, f->seq);
	for (int op = 0; op < OP_COUNT; op++)
		printf(" %s=%" PRIu64, op_stat[op], f->count[op]);
	printf(" skipped=%" PRIu64 " unsupported=%s size=%" PRIu64 " hash=%016" PRIx64
	       " seed=%" PRIu64 " mismatches=%" PRIu64 " errors=%" PRIu64 "\n",
	       f->skipped, used ? off : "none", f->size, model_hash(f), f->o.seed, f->mismatches,
	       f->errors);
	fflush(stdout);
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: cfqfs_fsx [-N ops] [-S seed] [-l maxlen] [-o maxop] [-c every]\n"
		"                 [-R] [-W] [-F] [-H] [-Z] [-T] [-y] [-q] FILE\n"
		"  -N ops     operations to run (default 10000)\n"
		"  -S seed    random seed (default 1)\n"
		"  -l bytes   maximum file length (default 262144)\n"
		"  -o bytes   maximum read/write/fallocate size (default 65536)\n"
		"  -c ops     check the whole file every `ops` operations (default 1000, 0: at end)\n"
		"  -R / -W    no mmap reads / no mmap writes\n"
		"  -F         no fallocate (plain and KEEP_SIZE)\n"
		"  -H / -Z    no PUNCH_HOLE / no ZERO_RANGE\n"
		"  -T         no truncate\n"
		"  -C         no copy_file_range\n"
		"  -y         no fsync/fdatasync\n"
		"  -q         quiet: only the summary line and failures\n"
		"FILE is created or truncated. Exit: 0 ok, 1 mismatch, 2 error, 64 usage.\n");
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;
	unsigned long long x;

	errno = 0;
	x = strtoull(s, &end, 0);
	if (errno || end == s || *end || s[0] == '-')
		return -EINVAL;
	*v = x;
	return 0;
}

/* Fills *o. Returns 0, 1 after printing the help (-h), or -EINVAL (message printed). */
static int parse_args(int argc, char **argv, struct fsx_opts *o)
{
	uint64_t v;
	int c;

	*o = (struct fsx_opts){ .nops = 10000, .seed = 1, .maxlen = 256 * 1024,
				.maxop = 64 * 1024, .check_every = 1000 };
	while ((c = getopt(argc, argv, "N:S:l:o:c:RWFHZTCyqh")) != -1) {
		switch (c) {
		case 'N':
		case 'S':
		case 'l':
		case 'o':
		case 'c':
			if (parse_u64(optarg, &v) < 0) {
				fprintf(stderr, "cfqfs_fsx: -%c: not a number: %s\n", c, optarg);
				return -EINVAL;
			}
			if (c == 'N')
				o->nops = v;
			else if (c == 'S')
				o->seed = v;
			else if (c == 'l')
				o->maxlen = (size_t)v;
			else if (c == 'o')
				o->maxop = (size_t)v;
			else
				o->check_every = v;
			break;
		case 'R':
			o->off[OP_MAPREAD] = true;
			break;
		case 'W':
			o->off[OP_MAPWRITE] = true;
			break;
		case 'F':
			o->off[OP_FALLOC] = true;
			break;
		case 'H':
			o->off[OP_PUNCH] = true;
			break;
		case 'Z':
			o->off[OP_ZERO] = true;
			break;
		case 'T':
			o->off[OP_TRUNCATE] = true;
			break;
		case 'C':
			o->off[OP_COPY] = true;
			break;
		case 'y':
			o->off[OP_FSYNC] = o->off[OP_FDATASYNC] = true;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'h':
			usage(stdout);
			return 1;
		default:
			return -EINVAL;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "cfqfs_fsx: exactly one FILE expected\n");
		return -EINVAL;
	}
	if (o->maxlen == 0 || o->maxop == 0 || o->maxlen > (1u << 30) || o->maxop > (1u << 30)) {
		fprintf(stderr, "cfqfs_fsx: -l and -o must be in 1..1 GiB\n");
		return -EINVAL;
	}
	o->path = argv[optind];
	return 0;
}

/*
 * Allocates the model and opens (creates, truncates) the file. Returns 0 or -errno; on
 * failure everything allocated is freed by fsx_free().
 */
static int fsx_init(struct fsx *f)
{
	size_t bufsz = f->o.maxlen > f->o.maxop ? f->o.maxlen : f->o.maxop;
	long pg = sysconf(_SC_PAGESIZE);

	f->fd = -1;
	f->page = pg > 0 ? (size_t)pg : 4096;
	f->state = f->o.seed * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL;
	if (f->state == 0)
		f->state = 1;
	f->model = calloc(f->o.maxlen, 1);
	f->owner = calloc(f->o.maxlen, sizeof(*f->owner));
	f->buf = malloc(bufsz);
	if (!f->model || !f->owner || !f->buf)
		return -ENOMEM;
	f->fd = open(f->o.path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (f->fd == -1) {
		int err = errno;

		fprintf(stderr, "cfqfs_fsx: open %s: %s\n", f->o.path, strerror(err));
		return -err;
	}
	return 0;
}

static void fsx_free(struct fsx *f)
{
	if (f->fd >= 0)
		close(f->fd);
	free(f->buf);
	free(f->owner);
	free(f->model);
}

int main(int argc, char **argv)
{
	struct fsx *f = calloc(1, sizeof(*f));
	int ret, status;

	if (!f) {
		fprintf(stderr, "cfqfs_fsx: out of memory\n");
		return 2;
	}
	ret = parse_args(argc, argv, &f->o);
	if (ret != 0) {
		if (ret < 0)
			usage(stderr);
		free(f);
		return ret < 0 ? 64 : 0;
	}
	ret = fsx_init(f);
	if (ret < 0) {
		f->errors++;
		goto out_free;
	}
	while (f->seq < f->o.nops) {
		f->seq++;
		ret = step(f);
		if (ret < 0)
			goto out_free;
		if (f->o.check_every && f->seq % f->o.check_every == 0) {
			ret = run_verify(f);
			if (ret < 0)
				goto out_free;
		}
	}
	ret = run_verify(f);
	if (ret == 0 && close(f->fd) == -1)
		ret = fail_op(f, "close", errno);
	f->fd = -1;
out_free:
	print_summary(f);
	status = f->mismatches ? 1 : (ret < 0 || f->errors) ? 2 : 0;
	fsx_free(f);
	free(f);
	return status;
}
