/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stress: 200 client processes in 20 real cgroups (weights 50..943) hammer one mount for
 * STRESS_LOAD_S seconds with a mix of appends, verified reads, fsync/fdatasync, reopen,
 * create+rename+unlink, mkdir/rmdir, stat and readdir, each inside its own directory, so every
 * outcome is known in advance: an errno that native SOURCE would not give is a failure.
 *
 * Records. Each append is one record: a header (magic, client, file, generation, sequence,
 * length, checksum) and a payload derived from those fields. After every successful write the
 * client logs (in shared memory) its files' names, lengths and record counts; after every
 * fsync the synced length. The parent then checks each file in SOURCE against that log:
 * exactly the logged records, in order, each with a good header, checksum and payload, and
 * nothing after them. Files are truncated (a new generation) when they reach STRESS_FILE_CAP,
 * which bounds the disk space the run uses.
 *
 * Device. `device=none`: every request still goes through the CFQ scheduler (and its idling:
 * SOURCE's disk here is rotational), but is not held for a modelled service time. The emulated
 * hdd serves about 100 requests/s, so 200 clients would each get a handful of requests in a
 * minute and the run would measure the model, not contention in the daemon (FUSE threads,
 * inode table, 200 queues in 20 groups). With direct_io every read and write is a request.
 *
 * Liveness: a client still running STRESS_HANG_S after the load ended is hung (a request left
 * unanswered) and fails the test. The daemon's memory (VmRSS / VmHWM) is printed before and
 * after and bounded, and io.stat must show queued=0 for every group afterwards.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cgtest.h"
#include "chaos.h"
#include "mount.h"
#include "workload.h"

#define NCLIENTS 200
#define NGROUPS 20
#define NFILES 3			/* data files per client */
#define STRESS_LOAD_S 25.0		/* [s] clients start no operation later */
#define STRESS_HANG_S 60.0		/* [s] after the load: a client still running is hung */
#define STRESS_FILE_CAP (256u * 1024u)	/* [bytes] a data file is truncated beyond this */
#define PAYLOAD_MAX 6000u		/* [bytes] per record */
#define MAX_RECS (STRESS_FILE_CAP / sizeof(struct rec_hdr) + 1)
#define RSS_BOUND_KB (512L * 1024L)	/* [KiB] */
#define REC_MAGIC 0x53545231u		/* "STR1" */

/* One record's header, followed by `len` payload bytes. */
struct rec_hdr {
	uint32_t magic;
	uint16_t client;
	uint8_t file;
	uint8_t gen;		/* file generation: +1 at each truncation */
	uint32_t seq;		/* record index in this generation */
	uint32_t len;		/* [bytes] payload */
	uint64_t sum;		/* FNV-1a over the fields above and the payload */
	uint64_t pad;
};
_Static_assert(sizeof(struct rec_hdr) == 32, "record header layout");

enum op { OP_APPEND, OP_READ, OP_FSYNC, OP_REOPEN, OP_TMPFILE, OP_RENAME, OP_MKDIR, OP_STAT,
	  OP_READDIR, NOPS };
static const char *const op_name[NOPS] = { "append", "read", "fsync", "reopen", "tmpfile",
					   "rename", "mkdir", "stat", "readdir" };
/* relative frequency of each op */
static const unsigned op_weight[NOPS] = { 30, 25, 8, 4, 8, 6, 6, 7, 6 };

/* What a client acknowledged about one data file (written by the client only). */
struct file_log {
	char name[32];		/* current name inside the client's directory */
	uint64_t len;		/* [bytes] every write acknowledged so far */
	uint64_t synced;	/* [bytes] prefix acknowledged by fsync/fdatasync */
	uint32_t nrec;		/* records in the current generation */
	uint8_t gen;
};

/* One client's shared slot. Written by that client; the parent reads it after it exited. */
struct slot {
	volatile int ready;	/* set up and waiting for the start */
	int err;		/* errno of the first unexpected result, 0 if none */
	char msg[200];		/* what failed */
	uint64_t ops[NOPS];	/* completed operations by kind */
	uint64_t bytes_w, bytes_r;	/* [bytes] */
	struct file_log f[NFILES];
};

struct shared {
	volatile uint64_t t0_ns;	/* [ns, CLOCK_MONOTONIC] start; 0 until set */
	struct slot s[NCLIENTS];
};

static struct mnt M;
static struct cgt_hier H;
static struct cgt CG[NGROUPS];
static struct shared *SH;
static pid_t PIDS[NCLIENTS];
static char conf[16384];
static char opts[256];

static void kill_clients(void)
{
	for (int i = 0; i < NCLIENTS; i++)
		if (PIDS[i] > 0)
			kill(PIDS[i], SIGKILL);
	for (int i = 0; i < NCLIENTS; i++)
		if (PIDS[i] > 0) {
			waitpid(PIDS[i], NULL, 0);
			PIDS[i] = 0;
		}
}

static void setup(void)
{
	wl_cr_fair_setup(&M, &H);
}

static void teardown(void)
{
	kill_clients();
	mnt_cr_teardown(&M);
	cgt_destroy_all();
	if (SH)
		munmap(SH, sizeof(*SH));
	SH = NULL;
}

TestSuite(stress, .init = setup, .fini = teardown, .timeout = 240);

/* ---- records ------------------------------------------------------------------------------ */

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static unsigned char payload_byte(const struct rec_hdr *h, uint32_t i)
{
	uint32_t x = (uint32_t)h->client * 2654435761u ^ (uint32_t)h->file << 24 ^
		     (uint32_t)h->gen << 16 ^ h->seq * 40503u ^ i * 2246822519u;

	return (unsigned char)(x ^ x >> 13 ^ x >> 23);
}

static uint64_t rec_sum(const struct rec_hdr *h, const unsigned char *payload)
{
	struct rec_hdr c = *h;

	c.sum = 0;
	c.pad = 0;
	return fnv(fnv(0xcbf29ce484222325ull, &c, sizeof(c)), payload, h->len);
}

/* Checks one record (header + payload in buf). 0, or a short reason. */
static const char *rec_check(const unsigned char *buf, unsigned client, unsigned file,
			     unsigned gen, uint32_t seq)
{
	const struct rec_hdr *h = (const struct rec_hdr *)buf;

	if (h->magic != REC_MAGIC)
		return "bad magic";
	if (h->client != client || h->file != file || h->gen != gen || h->seq != seq)
		return "header of another record";
	if (h->len == 0 || h->len > PAYLOAD_MAX)
		return "bad length";
	if (rec_sum(h, buf + sizeof(*h)) != h->sum)
		return "checksum mismatch";
	for (uint32_t i = 0; i < h->len; i++)
		if (buf[sizeof(*h) + i] != payload_byte(h, i))
			return "payload differs";
	return NULL;
}

/* ---- the client ----------------------------------------------------------------------------- */

struct client {
	unsigned id;
	struct slot *s;
	char dir[PATH_MAX];	/* its directory on the mount */
	int fd[NFILES];
	uint64_t *off[NFILES];	/* record start offsets of the current generation */
	uint64_t rng;
	unsigned tmp_seq, ren_seq;
	unsigned char buf[sizeof(struct rec_hdr) + PAYLOAD_MAX];
};

static uint64_t rnd(struct client *c)
{
	c->rng ^= c->rng << 13;
	c->rng ^= c->rng >> 7;
	c->rng ^= c->rng << 17;
	return c->rng;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Records the first failure and returns its exit code. */
static int fail(struct client *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(struct client *c, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->s->msg, sizeof(c->s->msg), fmt, ap);
	va_end(ap);
	c->s->err = err ? err : EIO;
	fprintf(stderr, "stress client %u: %s: %s\n", c->id, c->s->msg, strerror(c->s->err));
	return 1;
}

static const char *cpath(struct client *c, const char *name, char *out)
{
	snprintf(out, PATH_MAX, "%s/%s", c->dir, name);
	return out;
}

static int op_append(struct client *c, unsigned k)
{
	struct file_log *f = &c->s->f[k];
	struct rec_hdr *h = (struct rec_hdr *)c->buf;
	uint32_t len = 1 + (uint32_t)(rnd(c) % PAYLOAD_MAX);
	size_t total = sizeof(*h) + len;
	ssize_t n;

	if (f->len + total > STRESS_FILE_CAP) {
		if (ftruncate(c->fd[k], 0) != 0)
			return fail(c, errno, "ftruncate %s", f->name);
		f->gen++;
		f->len = f->synced = 0;
		f->nrec = 0;
	}
	*h = (struct rec_hdr){ .magic = REC_MAGIC, .client = (uint16_t)c->id, .file = (uint8_t)k,
			       .gen = f->gen, .seq = f->nrec, .len = len };
	for (uint32_t i = 0; i < len; i++)
		c->buf[sizeof(*h) + i] = payload_byte(h, i);
	h->sum = rec_sum(h, c->buf + sizeof(*h));
	n = pwrite(c->fd[k], c->buf, total, (off_t)f->len);
	if (n != (ssize_t)total)
		return fail(c, n < 0 ? errno : EIO, "pwrite %zu at %" PRIu64 " of %s gave %zd",
			    total, f->len, f->name, n);
	c->off[k][f->nrec] = f->len;
	f->len += total;
	f->nrec++;
	c->s->bytes_w += total;
	return 0;
}

static int op_read(struct client *c, unsigned k)
{
	struct file_log *f = &c->s->f[k];
	uint32_t r;
	uint64_t off, end;
	ssize_t n;
	const char *why;

	if (f->nrec == 0)
		return 0;
	r = (uint32_t)(rnd(c) % f->nrec);
	off = c->off[k][r];
	end = r + 1 < f->nrec ? c->off[k][r + 1] : f->len;
	n = pread(c->fd[k], c->buf, end - off, (off_t)off);
	if (n != (ssize_t)(end - off))
		return fail(c, n < 0 ? errno : EIO, "pread %" PRIu64 " at %" PRIu64 " of %s gave %zd",
			    end - off, off, f->name, n);
	why = rec_check(c->buf, c->id, k, f->gen, r);
	if (why)
		return fail(c, EBADMSG, "record %u of %s (gen %u): %s", r, f->name, f->gen, why);
	c->s->bytes_r += (uint64_t)n;
	return 0;
}

static int op_fsync(struct client *c, unsigned k)
{
	bool data = rnd(c) & 1;

	if ((data ? fdatasync(c->fd[k]) : fsync(c->fd[k])) != 0)
		return fail(c, errno, "%s %s", data ? "fdatasync" : "fsync", c->s->f[k].name);
	c->s->f[k].synced = c->s->f[k].len;
	return 0;
}

static int op_reopen(struct client *c, unsigned k)
{
	char p[PATH_MAX];

	if (close(c->fd[k]) != 0)
		return fail(c, errno, "close %s", c->s->f[k].name);
	c->fd[k] = open(cpath(c, c->s->f[k].name, p), O_RDWR);
	if (c->fd[k] < 0)
		return fail(c, errno, "reopen %s", c->s->f[k].name);
	return 0;
}

/* create + write + fsync a temp file, rename it, read it back by its new name, unlink it */
static int op_tmpfile(struct client *c)
{
	char t[40], r[40], p[PATH_MAX], q[PATH_MAX], back[64], want[64];
	int fd, len;
	ssize_t n;

	snprintf(t, sizeof(t), "tmp.%u", c->tmp_seq);
	snprintf(r, sizeof(r), "done.%u", c->tmp_seq);
	len = snprintf(want, sizeof(want), "client %u tmp %u\n", c->id, c->tmp_seq);
	c->tmp_seq++;
	fd = open(cpath(c, t, p), O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0)
		return fail(c, errno, "create %s", t);
	if (write(fd, want, (size_t)len) != len) {
		close(fd);
		return fail(c, errno, "write %s", t);
	}
	if (fsync(fd) != 0 || close(fd) != 0)
		return fail(c, errno, "fsync/close %s", t);
	if (rename(p, cpath(c, r, q)) != 0)
		return fail(c, errno, "rename %s -> %s", t, r);
	if (access(p, F_OK) == 0 || errno != ENOENT)
		return fail(c, errno ? errno : EEXIST, "%s still there after rename", t);
	fd = open(q, O_RDONLY);
	if (fd < 0)
		return fail(c, errno, "open %s", r);
	n = read(fd, back, sizeof(back));
	close(fd);
	if (n != len || memcmp(back, want, (size_t)len) != 0)
		return fail(c, n < 0 ? errno : EBADMSG, "%s read back %zd bytes, wrong", r, n);
	if (unlink(q) != 0)
		return fail(c, errno, "unlink %s", r);
	return 0;
}

static int op_rename(struct client *c, unsigned k)
{
	struct file_log *f = &c->s->f[k];
	char name[32], p[PATH_MAX], q[PATH_MAX];

	snprintf(name, sizeof(name), "f%u.%u", k, ++c->ren_seq);
	if (rename(cpath(c, f->name, p), cpath(c, name, q)) != 0)
		return fail(c, errno, "rename %s -> %s", f->name, name);
	snprintf(f->name, sizeof(f->name), "%s", name);
	return 0;
}

/* mkdir, a file inside, rmdir refused (ENOTEMPTY, as natively), then both removed */
static int op_mkdir(struct client *c)
{
	char p[PATH_MAX], q[PATH_MAX + 8];
	int fd;

	cpath(c, "sub", p);
	if (mkdir(p, 0755) != 0)
		return fail(c, errno, "mkdir sub");
	snprintf(q, sizeof(q), "%s/x", p);
	fd = open(q, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd < 0)
		return fail(c, errno, "create sub/x");
	close(fd);
	if (rmdir(p) == 0 || errno != ENOTEMPTY)
		return fail(c, errno ? errno : EEXIST, "rmdir of a non-empty dir did not give "
			    "ENOTEMPTY");
	if (mkdir(p, 0755) == 0 || errno != EEXIST)
		return fail(c, errno ? errno : EEXIST, "mkdir over a dir did not give EEXIST");
	if (unlink(q) != 0 || rmdir(p) != 0)
		return fail(c, errno, "removing sub");
	return 0;
}

static int op_stat(struct client *c, unsigned k)
{
	struct stat st, fst;
	char p[PATH_MAX];

	if (stat(cpath(c, c->s->f[k].name, p), &st) != 0)
		return fail(c, errno, "stat %s", c->s->f[k].name);
	if (fstat(c->fd[k], &fst) != 0)
		return fail(c, errno, "fstat %s", c->s->f[k].name);
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != c->s->f[k].len ||
	    st.st_ino != fst.st_ino)
		return fail(c, EBADMSG, "stat %s: mode %o size %lld ino %llu, expected a file of "
			    "%" PRIu64 " bytes, ino %llu", c->s->f[k].name, st.st_mode,
			    (long long)st.st_size, (unsigned long long)st.st_ino, c->s->f[k].len,
			    (unsigned long long)fst.st_ino);
	return 0;
}

/* The directory lists exactly the data files (nothing else exists between operations). */
static int op_readdir(struct client *c)
{
	DIR *d = opendir(c->dir);
	struct dirent *de;
	unsigned seen = 0, others = 0;
	char other[64] = "";

	if (!d)
		return fail(c, errno, "opendir");
	errno = 0;
	while ((de = readdir(d))) {
		bool known = !strcmp(de->d_name, ".") || !strcmp(de->d_name, "..");

		for (unsigned k = 0; k < NFILES; k++)
			if (!strcmp(de->d_name, c->s->f[k].name)) {
				seen |= 1u << k;
				known = true;
			}
		if (!known && others++ == 0)
			snprintf(other, sizeof(other), "%s", de->d_name);
		errno = 0;
	}
	int e = errno;
	closedir(d);
	if (e)
		return fail(c, e, "readdir");
	if (seen != (1u << NFILES) - 1 || others)
		return fail(c, EBADMSG, "readdir: data files seen 0x%x, %u unexpected entries (%s)",
			    seen, others, other);
	return 0;
}

static int client_main(unsigned id, const struct cgt *cg, double stop_at_rel)
{
	static struct client cl; /* per process after fork */
	struct client *c = &cl;
	unsigned wsum = 0;
	char p[PATH_MAX];
	int rc = 0;

	c->id = id;
	c->s = &SH->s[id];
	c->rng = 0x9e3779b97f4a7c15ull * (id + 1);
	snprintf(c->dir, sizeof(c->dir), "%s/c%03u", M.mnt, id);
	if (cgt_move(cg, 0) != 0)
		return fail(c, errno, "joining cgroup %s", cg->dir);
	if (mkdir(c->dir, 0755) != 0)
		return fail(c, errno, "mkdir %s", c->dir);
	for (unsigned k = 0; k < NFILES; k++) {
		snprintf(c->s->f[k].name, sizeof(c->s->f[k].name), "f%u", k);
		c->fd[k] = open(cpath(c, c->s->f[k].name, p), O_RDWR | O_CREAT | O_EXCL, 0644);
		if (c->fd[k] < 0)
			return fail(c, errno, "create %s", c->s->f[k].name);
		c->off[k] = calloc(MAX_RECS, sizeof(uint64_t));
		if (!c->off[k])
			return fail(c, ENOMEM, "calloc");
	}
	for (unsigned i = 0; i < NOPS; i++)
		wsum += op_weight[i];
	c->s->ready = 1;
	while (SH->t0_ns == 0)
		usleep(2000);
	double t0 = (double)SH->t0_ns / 1e9, stop = t0 + stop_at_rel;
	while (rc == 0 && now_s() < stop) {
		unsigned pick = (unsigned)(rnd(c) % wsum), k = (unsigned)(rnd(c) % NFILES);
		enum op op = 0;

		while (pick >= op_weight[op]) {
			pick -= op_weight[op];
			op++;
		}
		switch (op) {
		case OP_APPEND: rc = op_append(c, k); break;
		case OP_READ: rc = op_read(c, k); break;
		case OP_FSYNC: rc = op_fsync(c, k); break;
		case OP_REOPEN: rc = op_reopen(c, k); break;
		case OP_TMPFILE: rc = op_tmpfile(c); break;
		case OP_RENAME: rc = op_rename(c, k); break;
		case OP_MKDIR: rc = op_mkdir(c); break;
		case OP_STAT: rc = op_stat(c, k); break;
		case OP_READDIR: rc = op_readdir(c); break;
		case NOPS: break;
		}
		if (rc == 0)
			c->s->ops[op]++;
	}
	for (unsigned k = 0; rc == 0 && k < NFILES; k++)
		if (fsync(c->fd[k]) != 0 || close(c->fd[k]) != 0)
			rc = fail(c, errno, "final fsync/close of %s", c->s->f[k].name);
		else
			c->s->f[k].synced = c->s->f[k].len;
	return rc;
}

/* ---- parent-side checks --------------------------------------------------------------------- */

/* Checks client i's files in SOURCE against its log. Returns records verified; fails the test
 * on a mismatch. */
static uint64_t verify_client(unsigned i, unsigned char *buf, size_t cap)
{
	const struct slot *s = &SH->s[i];
	uint64_t recs = 0;
	char dir[PATH_MAX], path[PATH_MAX + 40];

	snprintf(dir, sizeof(dir), "%s/c%03u", M.src, i);
	for (unsigned k = 0; k < NFILES; k++) {
		const struct file_log *f = &s->f[k];
		uint64_t off = 0;
		struct stat st;
		ssize_t n;
		int fd;

		snprintf(path, sizeof(path), "%s/%s", dir, f->name);
		fd = open(path, O_RDONLY);
		cr_assert_geq(fd, 0, "client %u: %s: %s", i, path, strerror(errno));
		cr_assert_eq(fstat(fd, &st), 0);
		cr_assert_eq((uint64_t)st.st_size, f->len, "client %u %s: %lld bytes in SOURCE, %"
			     PRIu64 " acknowledged (%" PRIu64 " fsync-acknowledged)", i, f->name,
			     (long long)st.st_size, f->len, f->synced);
		cr_assert(f->synced == f->len, "client %u %s: last fsync not recorded", i, f->name);
		cr_assert(f->len <= cap);
		n = pread(fd, buf, f->len, 0);
		close(fd);
		cr_assert_eq(n, (ssize_t)f->len, "client %u: reading %s", i, path);
		for (uint32_t r = 0; r < f->nrec; r++) {
			const struct rec_hdr *h = (const struct rec_hdr *)(buf + off);
			const char *why;

			cr_assert(off + sizeof(*h) <= f->len, "client %u %s: record %u past the end",
				  i, f->name, r);
			cr_assert(h->len <= PAYLOAD_MAX && off + sizeof(*h) + h->len <= f->len,
				  "client %u %s: record %u at %" PRIu64 " claims %u bytes, overruns",
				  i, f->name, r, off, h->len);
			why = rec_check(buf + off, i, k, f->gen, r);
			cr_assert_null(why, "client %u %s gen %u record %u at %" PRIu64 ": %s", i,
				       f->name, f->gen, r, off, why);
			off += sizeof(*h) + h->len;
			recs++;
		}
		cr_assert_eq(off, f->len, "client %u %s: %" PRIu64 " bytes after the last record",
			     i, f->name, f->len - off);
	}
	/* nothing but the data files is left in its directory */
	DIR *d = opendir(dir);
	struct dirent *de;
	unsigned entries = 0;

	cr_assert_not_null(d, "%s: %s", dir, strerror(errno));
	while ((de = readdir(d))) {
		bool known = false;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		for (unsigned k = 0; k < NFILES; k++)
			known |= !strcmp(de->d_name, s->f[k].name);
		cr_assert(known, "client %u: unexpected %s in SOURCE", i, de->d_name);
		entries++;
	}
	closedir(d);
	cr_assert_eq(entries, NFILES, "client %u: %u entries in its directory", i, entries);
	return recs;
}

static char *read_ctl(const char *rel)
{
	static char text[1 << 16];
	ssize_t n = mnt_get(mnt_path(&M, rel), text, sizeof(text) - 1);

	cr_assert_geq(n, 0, "reading %s: %s", rel, strerror((int)-n));
	text[n] = '\0';
	return text;
}

Test(stress, many_clients_in_many_cgroups_lose_nothing, .timeout = 240)
{
	struct cgt *cgs[NGROUPS];
	long rss0, hwm0, rss1, hwm1;
	uint64_t totals[NOPS] = { 0 }, bytes_w = 0, bytes_r = 0, recs = 0;
	double t_fork, t_start, t_end, t_verified;
	unsigned char *vbuf;

	for (unsigned g = 0; g < NGROUPS; g++) {
		char suffix[16];

		snprintf(suffix, sizeof(suffix), "s%02u", g);
		cgt_cr_make(&H, &CG[g], suffix, 50 + 47 * g);
		cgs[g] = &CG[g];
	}
	cr_assert_not_null(wl_conf(conf, sizeof(conf), NULL, cgs, NGROUPS, false, NULL),
			   "config too long");
	snprintf(opts, sizeof(opts), "device=none,direct_io,cgroup_line=%s", H.line);
	wl_cr_mount(&M, conf, opts);
	rss0 = ch_status_kb(M.pid, "VmRSS");
	hwm0 = ch_status_kb(M.pid, "VmHWM");

	SH = mmap(NULL, sizeof(*SH), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert(SH != MAP_FAILED, "mmap: %s", strerror(errno));
	fflush(NULL);
	t_fork = ch_now();
	for (unsigned i = 0; i < NCLIENTS; i++) {
		pid_t p = fork();

		if (p == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			_exit(client_main(i, &CG[i % NGROUPS], STRESS_LOAD_S));
		}
		cr_assert_gt(p, 0, "fork %u: %s", i, strerror(errno));
		PIDS[i] = p;
	}
	/* every client set up (or failed) within 60 s */
	for (double until = ch_now() + 60;;) {
		unsigned ready = 0;

		for (unsigned i = 0; i < NCLIENTS; i++) {
			cr_assert_eq(SH->s[i].err, 0, "client %u failed in setup: %s: %s", i,
				     SH->s[i].msg, strerror(SH->s[i].err));
			ready += SH->s[i].ready;
		}
		if (ready == NCLIENTS)
			break;
		cr_assert(ch_now() < until, "only %u of %d clients ready after 60 s", ready,
			  NCLIENTS);
		usleep(20000);
	}
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	SH->t0_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + 50000000ull;
	t_start = ch_now();

	/* reap; a client running STRESS_HANG_S after the load is stuck in a request */
	unsigned left = NCLIENTS, hung = 0;
	while (left > 0) {
		/* by pid: waitpid(-1) could reap the daemon, which the fixture waits for */
		for (unsigned i = 0; i < NCLIENTS; i++) {
			int st;

			if (PIDS[i] <= 0 || waitpid(PIDS[i], &st, WNOHANG) != PIDS[i])
				continue;
			PIDS[i] = 0;
			left--;
			cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0,
				  "client %u ended with status 0x%x: %s: %s", i, st, SH->s[i].msg,
				  SH->s[i].err ? strerror(SH->s[i].err) : "-");
		}
		if (left == 0)
			break;
		if (ch_now() > t_start + STRESS_LOAD_S + STRESS_HANG_S) {
			for (unsigned i = 0; i < NCLIENTS; i++)
				if (PIDS[i] > 0) {
					if (hung++ < 5)
						fprintf(stderr, "client %u (pid %d) hung: see "
							"/proc/%d/stack\n", i, (int)PIDS[i],
							(int)PIDS[i]);
				}
			break;
		}
		usleep(50000);
	}
	t_end = ch_now();
	cr_assert_eq(hung, 0, "%u clients still running %.0f s after the load ended (a request "
		     "left unanswered)", hung, STRESS_HANG_S);

	for (unsigned i = 0; i < NCLIENTS; i++) {
		for (unsigned o = 0; o < NOPS; o++)
			totals[o] += SH->s[i].ops[o];
		bytes_w += SH->s[i].bytes_w;
		bytes_r += SH->s[i].bytes_r;
	}

	/* the scheduler holds nothing, and saw every cgroup */
	const char *iostat = read_ctl(".cfqfs/io.stat");
	unsigned groups = 0;
	uint64_t queued = 0;
	cr_assert_eq(ch_iostat_queued(iostat, &groups, &queued), 0, "io.stat:\n%s", iostat);
	cr_assert_eq(queued, 0, "requests still queued after every client exited:\n%s", iostat);
	for (unsigned g = 0; g < NGROUPS; g++) {
		uint64_t wios = 0;
		int r = wl_iostat(&M, CG[g].name, "wios", &wios);

		cr_assert_eq(r, 0, "group %s missing from io.stat: %s\n%s", CG[g].name,
			     strerror(-r), iostat);
		cr_assert_gt(wios, 0, "group %s did no write", CG[g].name);
	}

	rss1 = ch_status_kb(M.pid, "VmRSS");
	hwm1 = ch_status_kb(M.pid, "VmHWM");
	cr_log_info("stress: %d clients, %d cgroups, %.1f s: %" PRIu64 " appends, %" PRIu64
		    " reads, %" PRIu64 " fsyncs, %" PRIu64 " reopens, %" PRIu64 " tmpfiles, %"
		    PRIu64 " renames, %" PRIu64 " mkdirs, %" PRIu64 " stats, %" PRIu64
		    " readdirs; %.1f MiB written, %.1f MiB read back", NCLIENTS, NGROUPS,
		    t_end - t_start, totals[OP_APPEND], totals[OP_READ], totals[OP_FSYNC],
		    totals[OP_REOPEN], totals[OP_TMPFILE], totals[OP_RENAME], totals[OP_MKDIR],
		    totals[OP_STAT], totals[OP_READDIR], (double)bytes_w / 1048576.0,
		    (double)bytes_r / 1048576.0);
	cr_log_info("stress: daemon VmRSS %ld -> %ld KiB, VmHWM %ld -> %ld KiB (bound %ld KiB)",
		    rss0, rss1, hwm0, hwm1, RSS_BOUND_KB);
	cr_assert_gt(rss1, 0, "VmRSS of the daemon: %s", strerror((int)-rss1));
	cr_assert_gt(hwm1, 0, "VmHWM of the daemon: %s", strerror((int)-hwm1));
	cr_assert_lt(hwm1, RSS_BOUND_KB, "daemon peak RSS %ld KiB", hwm1);
	for (unsigned o = 0; o < NOPS; o++)
		cr_assert_gt(totals[o], 0, "no %s completed at all", op_name[o]);

	/* every acknowledged write is in SOURCE, in order, intact */
	vbuf = malloc(STRESS_FILE_CAP);
	cr_assert_not_null(vbuf);
	for (unsigned i = 0; i < NCLIENTS; i++)
		recs += verify_client(i, vbuf, STRESS_FILE_CAP);
	free(vbuf);
	t_verified = ch_now();
	cr_log_info("stress: %" PRIu64 " records verified in SOURCE; phases: setup of the clients "
		    "%.1f s, load and reaping %.1f s, checks %.1f s", recs, t_start - t_fork,
		    t_end - t_start, t_verified - t_end);
	mnt_cr_finish(&M);
}
