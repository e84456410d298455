/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * workload.c - timed reader/writer children with shared-memory records. See workload.h.
 */
#include "workload.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/aio_abi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NS_PER_S 1000000000ull
#define READY_TIMEOUT_MS 15000
#define START_DELAY_NS (100ull * 1000000ull)

enum slot_state { SLOT_FORKED = 0, SLOT_READY = 1, SLOT_DONE = 2, SLOT_FAILED = 3 };

/* One child's shared record area. Written by the child only; read by the parent after the
 * child reports ready (state) or exits. */
struct wl_slot {
	volatile int state;	/* enum slot_state */
	char msg[200];		/* why the child failed */
	uint64_t ops;		/* [requests] completed */
	uint64_t bytes;		/* [bytes] completed */
	uint32_t nrec;		/* records in rec[] */
	uint32_t dropped;	/* completions not recorded (rec[] full) */
	struct wl_rec rec[WL_MAX_REC];
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

static void sleep_until_ns(uint64_t t)
{
	struct timespec ts = { (time_t)(t / NS_PER_S), (long)(t % NS_PER_S) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void sleep_us(unsigned us)
{
	struct timespec ts = { us / 1000000u, (long)(us % 1000000u) * 1000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* xorshift64*: the children's only randomness, seeded per child. */
static uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* ---- the child ----------------------------------------------------------------------------- */

#define CHILD_FAIL(sl, ...)                                                                 \
	do {                                                                                \
		int e_ = errno;                                                             \
		snprintf((sl)->msg, sizeof((sl)->msg), __VA_ARGS__);                          \
		if (e_)                                                                     \
			snprintf((sl)->msg + strlen((sl)->msg),                               \
				 sizeof((sl)->msg) - strlen((sl)->msg), ": %s", strerror(e_));  \
		(sl)->state = SLOT_FAILED;                                                  \
		return 1;                                                                   \
	} while (0)

static void record(struct wl_slot *sl, uint64_t t0, uint64_t start, uint64_t end, size_t bytes)
{
	sl->ops++;
	sl->bytes += bytes;
	if (sl->nrec >= WL_MAX_REC) {
		sl->dropped++;
		return;
	}
	sl->rec[sl->nrec].end_ns = end - t0;
	sl->rec[sl->nrec].lat_us = (uint32_t)((end - start) / 1000u);
	sl->rec[sl->nrec].bytes = (uint32_t)bytes;
	sl->nrec++;
}

#define WL_AIO_MAX 16u

/* (Re)submits read p at *off (wrapping to 0 where a whole read no longer fits before EOF,
 * `size`), advances *off and stamps *issued. Returns io_submit's result (1 = submitted). */
static long aio_submit_next(aio_context_t ctx, struct iocb *p, uint64_t *off, size_t bs,
			    uint64_t size, uint64_t *issued)
{
	if (*off + bs > size)
		*off = 0;
	p->aio_offset = (int64_t)*off;
	*off += bs;
	*issued = now_ns();
	return syscall(SYS_io_submit, ctx, 1L, &p);
}

/*
 * WL_AIO_READ's loop: keeps `depth` reads of bs bytes in flight (each at the next offset,
 * wrapping before EOF) until `stop`, then waits for the last ones; one record per completion,
 * latency from its io_submit. `buf` holds depth slots of `slot` bytes, 4096-aligned.
 */
static int aio_loop(const struct wl_spec *sp, struct wl_slot *sl, int fd, uint64_t size,
		    size_t bs, char *buf, size_t slot, uint64_t t0, uint64_t stop)
{
	unsigned depth = sp->depth ? sp->depth : 4, inflight = 0;
	struct iocb cb[WL_AIO_MAX];
	struct io_event ev[WL_AIO_MAX];
	uint64_t issued[WL_AIO_MAX], off = 0;
	aio_context_t ctx = 0;

	if (depth > WL_AIO_MAX)
		depth = WL_AIO_MAX;
	if (syscall(SYS_io_setup, depth, &ctx) != 0)
		CHILD_FAIL(sl, "io_setup(%u)", depth);
	for (unsigned k = 0; k < depth; k++, inflight++) {
		memset(&cb[k], 0, sizeof(cb[k]));
		cb[k].aio_data = k;
		cb[k].aio_fildes = (uint32_t)fd;
		cb[k].aio_lio_opcode = IOCB_CMD_PREAD;
		cb[k].aio_buf = (uint64_t)(uintptr_t)(buf + k * slot);
		cb[k].aio_nbytes = bs;
		if (aio_submit_next(ctx, &cb[k], &off, bs, size, &issued[k]) != 1)
			CHILD_FAIL(sl, "io_submit %.120s", sp->path);
	}
	while (inflight > 0) {
		long n = syscall(SYS_io_getevents, ctx, 1L, (long)depth, ev, NULL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			CHILD_FAIL(sl, "io_getevents %.120s", sp->path);
		for (long e = 0; e < n; e++) {
			unsigned k = (unsigned)ev[e].data;
			uint64_t end = now_ns();

			if (ev[e].res <= 0) {
				errno = ev[e].res < 0 ? (int)-ev[e].res : 0;
				CHILD_FAIL(sl, "aio read %.120s at %llu returned %lld", sp->path,
					   (unsigned long long)cb[k].aio_offset, (long long)ev[e].res);
			}
			record(sl, t0, issued[k], end, (size_t)ev[e].res);
			inflight--;
			if (end >= stop)
				continue;
			if (aio_submit_next(ctx, &cb[k], &off, bs, size, &issued[k]) != 1)
				CHILD_FAIL(sl, "io_submit %.120s", sp->path);
			inflight++;
		}
	}
	syscall(SYS_io_destroy, ctx);
	return 0;
}

static int child_main(const struct wl_run *r, size_t i, pid_t parent)
{
	const struct wl_spec *sp = &r->spec[i];
	struct wl_slot *sl = &r->slot[i];
	size_t bs = sp->bs ? sp->bs : 128 * 1024;
	size_t chunk = sp->write_chunk ? sp->write_chunk : 1024 * 1024;
	size_t wrap = sp->wrap ? sp->wrap : 16 * 1024 * 1024;
	uint64_t seed = sp->seed ? sp->seed : 0x9e3779b97f4a7c15ull * (i + 1);
	uint64_t t0, stop, off = sp->kind == WL_SEQ_READ || sp->kind == WL_COPY ? sp->offset : 0;
	struct stat st;
	char *buf;
	int fd, dfd = -1;

	errno = 0;
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
		CHILD_FAIL(sl, "parent gone");
	if (sp->cg) {
		int e = cgt_move(sp->cg, 0);

		if (e) {
			errno = -e;
			CHILD_FAIL(sl, "join cgroup %.120s", sp->cg->dir);
		}
	}
	if (sp->ioclass != WL_CLASS_KEEP) {
		int prio = (sp->ioclass << 13) | (sp->ioclass == WL_CLASS_IDLE ? 0 : sp->level);

		/* IOPRIO_WHO_PROCESS = 1; who 0 = this (single-threaded) process */
		if (syscall(SYS_ioprio_set, 1, 0, prio) != 0)
			CHILD_FAIL(sl, "ioprio_set class %d", sp->ioclass);
	}
	if (sp->comm && prctl(PR_SET_NAME, sp->comm) != 0)
		CHILD_FAIL(sl, "PR_SET_NAME %s", sp->comm);
	if (sp->set_ids && (setgroups(0, NULL) != 0 || setgid(sp->gid) != 0 ||
			    setuid(sp->uid) != 0))
		CHILD_FAIL(sl, "become %d:%d", (int)sp->uid, (int)sp->gid);
	if (sp->kind == WL_WRITE_FSYNC)
		fd = open(sp->path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	else if (sp->kind == WL_AIO_READ)
		fd = open(sp->path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	else
		fd = open(sp->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		CHILD_FAIL(sl, "open %.120s", sp->path);
	if (sp->kind == WL_COPY) {
		char dst[4200];

		snprintf(dst, sizeof(dst), "%s.copy", sp->path);
		dfd = open(dst, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (dfd < 0)
			CHILD_FAIL(sl, "open %.120s", dst);
	}
	if (fstat(fd, &st) != 0)
		CHILD_FAIL(sl, "fstat %.120s", sp->path);
	if (sp->kind != WL_WRITE_FSYNC && (size_t)st.st_size < bs)
		CHILD_FAIL(sl, "%.120s is smaller than one request (%zu bytes)", sp->path, bs);
	size_t slot = (bs + 4095) / 4096 * 4096;
	buf = aligned_alloc(4096, slot * (sp->kind == WL_AIO_READ ? WL_AIO_MAX : 1));
	if (!buf)
		CHILD_FAIL(sl, "out of memory");
	memset(buf, 'w', bs);
	sl->state = SLOT_READY;

	for (uint64_t give_up = now_ns() + 30 * NS_PER_S; !*(volatile uint64_t *)r->t0;) {
		if (now_ns() > give_up || getppid() != parent) {
			errno = 0;
			CHILD_FAIL(sl, "no start signal");
		}
		sleep_us(500);
	}
	t0 = *(volatile uint64_t *)r->t0;
	stop = t0 + (uint64_t)((sp->stop_s > 0 ? sp->stop_s : r->dur_s) * (double)NS_PER_S);
	sleep_until_ns(t0 + (uint64_t)(sp->start_s * (double)NS_PER_S));
	if (sp->kind == WL_AIO_READ) {
		int ret = aio_loop(sp, sl, fd, (uint64_t)st.st_size, bs, buf, slot, t0, stop);

		close(fd);
		free(buf);
		if (ret == 0)
			sl->state = SLOT_DONE;
		return ret;
	}

	for (uint64_t start = now_ns(); start < stop; start = now_ns()) {
		ssize_t n = 0;

		switch (sp->kind) {
		case WL_SEQ_READ:
			n = pread(fd, buf, bs, (off_t)off);
			if (n == 0 && off > sp->offset) {
				off = sp->offset;
				continue;
			}
			off += n > 0 ? (uint64_t)n + sp->skip : 0;
			break;
		case WL_RAND_READ:
			off = rng_next(&seed) % ((uint64_t)st.st_size / bs) * bs;
			n = pread(fd, buf, bs, (off_t)off);
			break;
		case WL_WRITE_FSYNC:
			for (size_t done = 0; done < chunk; done += bs, n += (ssize_t)bs) {
				if (off + bs > wrap)
					off = 0;
				if (pwrite(fd, buf, bs, (off_t)off) != (ssize_t)bs)
					CHILD_FAIL(sl, "pwrite %.120s at %llu", sp->path,
						   (unsigned long long)off);
				off += bs;
			}
			if ((sp->datasync ? fdatasync(fd) : fsync(fd)) != 0)
				CHILD_FAIL(sl, "%s %.120s", sp->datasync ? "fdatasync" : "fsync",
					   sp->path);
			break;
		case WL_COPY: {
			loff_t in = (loff_t)off, out = (loff_t)off;

			n = copy_file_range(fd, &in, dfd, &out, bs, 0);
			if (n == 0 && off > sp->offset) {
				off = sp->offset;
				continue;
			}
			off += n > 0 ? (uint64_t)n : 0;
			break;
		}
		case WL_AIO_READ: /* aio_loop() above */
			break;
		}
		if (n <= 0)
			CHILD_FAIL(sl, "%s %.120s at %llu returned %zd",
				   sp->kind == WL_COPY ? "copy_file_range" : "read", sp->path,
				   (unsigned long long)off, n);
		record(sl, t0, start, now_ns(), (size_t)n);
		if (sp->think_us)
			sleep_us(sp->think_us);
	}
	if (dfd >= 0)
		close(dfd);
	close(fd);
	free(buf);
	sl->state = SLOT_DONE;
	return 0;
}

/* ---- the parent ---------------------------------------------------------------------------- */

static void kill_all(struct wl_run *r)
{
	for (size_t i = 0; i < r->n; i++) {
		if (r->pid[i] > 0) {
			kill(r->pid[i], SIGKILL);
			waitpid(r->pid[i], &r->status[i], 0);
			r->pid[i] = 0;
		}
	}
}

int wl_start(struct wl_run *r, const struct wl_spec *specs, size_t n, double dur_s)
{
	pid_t parent = getpid();
	uint64_t deadline;
	void *map;

	if (n == 0 || n > WL_MAX || dur_s <= 0)
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	r->n = n;
	r->dur_s = dur_s;
	memcpy(r->spec, specs, n * sizeof(*specs));
	for (size_t i = 0; i < n; i++) {
		if (!specs[i].path || strlen(specs[i].path) >= sizeof(r->path[i]))
			return -EINVAL;
		memcpy(r->path[i], specs[i].path, strlen(specs[i].path) + 1);
		r->spec[i].path = r->path[i];
	}
	r->map_len = 4096 + n * sizeof(struct wl_slot);
	map = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED) {
		int e = errno;

		r->map_len = 0;
		return -e;
	}
	r->t0 = map;
	r->slot = (struct wl_slot *)((char *)map + 4096);

	fflush(NULL);
	for (size_t i = 0; i < n; i++) {
		pid_t p = fork();

		if (p < 0) {
			int e = errno;

			kill_all(r);
			return -e;
		}
		if (p == 0)
			_exit(child_main(r, i, parent));
		r->pid[i] = p;
	}

	deadline = now_ns() + (uint64_t)READY_TIMEOUT_MS * 1000000ull;
	for (size_t i = 0; i < n; i++) {
		while (r->slot[i].state == SLOT_FORKED && now_ns() < deadline)
			sleep_us(1000);
		if (r->slot[i].state != SLOT_READY) {
			fprintf(stderr, "workload: child %zu (%s) not ready: %s\n", i,
				r->spec[i].label ? r->spec[i].label : "?",
				r->slot[i].msg[0] ? r->slot[i].msg : "timeout");
			kill_all(r);
			return -EIO;
		}
	}
	*(volatile uint64_t *)r->t0 = now_ns() + START_DELAY_NS;
	return 0;
}

pid_t wl_pid(const struct wl_run *r, size_t i)
{
	return i < r->n ? r->pid[i] : 0;
}

void wl_sleep_until(const struct wl_run *r, double t_s)
{
	sleep_until_ns(*r->t0 + (uint64_t)(t_s * (double)NS_PER_S));
}

int wl_finish(struct wl_run *r)
{
	double last = r->dur_s;
	uint64_t deadline;
	int ret = 0;

	if (!r->t0)
		return -EINVAL;
	for (size_t i = 0; i < r->n; i++)
		if (r->spec[i].stop_s > last)
			last = r->spec[i].stop_s;
	deadline = *r->t0 + (uint64_t)((last + 20.0) * (double)NS_PER_S);
	for (size_t i = 0; i < r->n; i++) {
		while (r->pid[i] > 0) {
			pid_t w = waitpid(r->pid[i], &r->status[i], WNOHANG);

			if (w == r->pid[i]) {
				r->pid[i] = 0;
				break;
			}
			if (now_ns() > deadline) {
				fprintf(stderr, "workload: child %zu (%s) still running, SIGKILL\n",
					i, r->spec[i].label ? r->spec[i].label : "?");
				kill(r->pid[i], SIGKILL);
				waitpid(r->pid[i], &r->status[i], 0);
				r->pid[i] = 0;
				r->status[i] = -1;
				break;
			}
			sleep_us(5000);
		}
		if (r->status[i] != 0 || r->slot[i].state != SLOT_DONE) {
			fprintf(stderr, "workload: child %zu (%s) failed (status 0x%x): %s\n", i,
				r->spec[i].label ? r->spec[i].label : "?", (unsigned)r->status[i],
				r->slot[i].msg[0] ? r->slot[i].msg : "no message");
			ret = -EIO;
		} else if (r->slot[i].dropped) {
			fprintf(stderr, "workload: child %zu (%s) lost %u records (WL_MAX_REC)\n",
				i, r->spec[i].label ? r->spec[i].label : "?", r->slot[i].dropped);
			ret = -EIO;
		}
	}
	return ret;
}

void wl_free(struct wl_run *r)
{
	kill_all(r);
	if (r->map_len)
		munmap(r->t0, r->map_len);
	memset(r, 0, sizeof(*r));
}

/* ---- results ------------------------------------------------------------------------------ */

static bool in_window(const struct wl_rec *rec, double from_s, double to_s)
{
	double t = (double)rec->end_ns / (double)NS_PER_S;

	return t >= from_s && t < to_s;
}

uint64_t wl_bytes(const struct wl_run *r, size_t i, double from_s, double to_s)
{
	uint64_t sum = 0;

	for (uint32_t k = 0; k < r->slot[i].nrec; k++)
		if (in_window(&r->slot[i].rec[k], from_s, to_s))
			sum += r->slot[i].rec[k].bytes;
	return sum;
}

uint64_t wl_ops(const struct wl_run *r, size_t i, double from_s, double to_s)
{
	uint64_t n = 0;

	for (uint32_t k = 0; k < r->slot[i].nrec; k++)
		n += in_window(&r->slot[i].rec[k], from_s, to_s);
	return n;
}

uint32_t wl_nrec(const struct wl_run *r, size_t i)
{
	return r->slot[i].nrec;
}

double wl_lat_mean_ms(const struct wl_run *r, size_t i, double from_s, double to_s)
{
	double sum = 0;
	uint64_t n = 0;

	for (uint32_t k = 0; k < r->slot[i].nrec; k++) {
		if (in_window(&r->slot[i].rec[k], from_s, to_s)) {
			sum += r->slot[i].rec[k].lat_us;
			n++;
		}
	}
	return n ? sum / (double)n / 1000.0 : 0;
}

double wl_lat_max_ms(const struct wl_run *r, size_t i, double from_s, double to_s)
{
	uint32_t mx = 0;

	for (uint32_t k = 0; k < r->slot[i].nrec; k++)
		if (in_window(&r->slot[i].rec[k], from_s, to_s) && r->slot[i].rec[k].lat_us > mx)
			mx = r->slot[i].rec[k].lat_us;
	return mx / 1000.0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

double wl_lat_pct_ms(const struct wl_run *r, size_t i, double p, double from_s, double to_s)
{
	uint32_t *v = malloc(sizeof(*v) * (r->slot[i].nrec + 1));
	size_t n = 0, rank;
	double out;

	if (!v)
		return 0;
	for (uint32_t k = 0; k < r->slot[i].nrec; k++)
		if (in_window(&r->slot[i].rec[k], from_s, to_s))
			v[n++] = r->slot[i].rec[k].lat_us;
	if (n == 0) {
		free(v);
		return 0;
	}
	qsort(v, n, sizeof(*v), cmp_u32);
	rank = (size_t)(p * (double)n + 0.999999);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	out = v[rank - 1] / 1000.0;
	free(v);
	return out;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

double wl_max_gap_s(const struct wl_run *r, const size_t *idx, size_t nidx, double from_s,
		    double to_s)
{
	size_t total = 0, n = 0;
	uint64_t *t;
	double prev = from_s, gap = 0;

	for (size_t j = 0; j < nidx; j++)
		total += r->slot[idx[j]].nrec;
	t = malloc(sizeof(*t) * (total + 1));
	if (!t)
		return to_s - from_s;
	for (size_t j = 0; j < nidx; j++)
		for (uint32_t k = 0; k < r->slot[idx[j]].nrec; k++)
			if (in_window(&r->slot[idx[j]].rec[k], from_s, to_s))
				t[n++] = r->slot[idx[j]].rec[k].end_ns;
	qsort(t, n, sizeof(*t), cmp_u64);
	for (size_t k = 0; k < n; k++) {
		double s = (double)t[k] / (double)NS_PER_S;

		if (s - prev > gap)
			gap = s - prev;
		prev = s;
	}
	if (to_s - prev > gap)
		gap = to_s - prev;
	free(t);
	return gap;
}

double wl_jain(const double *x, size_t n)
{
	double s = 0, s2 = 0;

	for (size_t i = 0; i < n; i++) {
		s += x[i];
		s2 += x[i] * x[i];
	}
	return s2 > 0 ? s * s / ((double)n * s2) : 0;
}

/* ---- setup helpers ------------------------------------------------------------------------ */

int wl_make_file(const char *path, size_t size)
{
	size_t blk = 1024 * 1024;
	uint64_t seed = 0x243f6a8885a308d3ull ^ size;
	uint64_t *buf = malloc(blk);
	int fd, ret = 0;

	if (!buf)
		return -ENOMEM;
	for (size_t k = 0; k < blk / 8; k++)
		buf[k] = rng_next(&seed);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		ret = -errno;
		goto out_free;
	}
	for (size_t done = 0; done < size;) {
		size_t len = size - done < blk ? size - done : blk;
		ssize_t w;

		buf[0] = done; /* no two MiB alike */
		w = write(fd, buf, len);
		if (w <= 0) {
			ret = w < 0 ? -errno : -EIO;
			goto out_close;
		}
		done += (size_t)w;
	}
	if (fchmod(fd, 0644) != 0)
		ret = -errno;
out_close:
	if (close(fd) != 0 && ret == 0)
		ret = -errno;
out_free:
	free(buf);
	return ret;
}

char *wl_conf(char *buf, size_t len, const char *extra, struct cgt *const *cgs, size_t n,
	      bool force, const char *tail)
{
	char rules[8192] = "";
	size_t l;
	int w;

	if (extra && *extra)
		snprintf(rules, sizeof(rules), "\t%s,\n", extra);
	if (cgt_rules(rules, sizeof(rules), cgs, n, force) < 0)
		return NULL;
	l = strlen(rules);
	if (l >= 2)
		rules[l - 2] = '\0'; /* the last ",\n" */
	if (l >= 2)
		w = snprintf(buf, len, "rules = (\n%s\n);\n%s", rules, tail ? tail : "");
	else
		w = snprintf(buf, len, "%s", tail ? tail : "");
	return w >= 0 && (size_t)w < len ? buf : NULL;
}

void wl_cr_mount(struct mnt *m, const char *conf_text, const char *opts)
{
	const char *args[6];
	const char *conf = base_path(m, "cfqfs.conf");
	size_t n = 0;
	char st[64];
	int ret;

	if (conf_text) {
		ret = mnt_put(conf, conf_text, strlen(conf_text), 0644);
		cr_assert_eq(ret, 0, "writing %s: %s", conf, strerror(-ret));
		args[n++] = "-c";
		args[n++] = conf;
	}
	if (opts) {
		args[n++] = "-o";
		args[n++] = opts;
	}
	args[n] = NULL;
	ret = mnt_start(m, args);
	if (ret != 0) {
		mnt_dump_log(m);
		if (conf_text)
			fprintf(stderr, "---- config ----\n%s---- end of config ----\n", conf_text);
		cr_assert_fail("mounting %s with %s failed: %s (daemon %s)", CFQFS_BIN,
			       opts ? opts : "no options", strerror(-ret),
			       mnt_status_str(m, st, sizeof(st)));
	}
}

int wl_iostat(struct mnt *m, const char *group, const char *key, uint64_t *val)
{
	static char text[65536];
	size_t klen = strlen(key);
	ssize_t n = mnt_get(mnt_path(m, ".cfqfs/io.stat"), text, sizeof(text) - 1);

	if (n < 0)
		return (int)n;
	text[n] = '\0';
	for (char *save = NULL, *line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		size_t glen = strcspn(line, " ");

		if (glen != strlen(group) || strncmp(line, group, glen) != 0)
			continue;
		for (char *p = line + glen; (p = strstr(p, key)) != NULL; p += klen) {
			if (p[-1] == ' ' && p[klen] == '=') {
				*val = strtoull(p + klen + 1, NULL, 10);
				return 0;
			}
		}
	}
	return -ENOENT;
}

void wl_cr_fair_setup(struct mnt *m, struct cgt_hier *h)
{
	umask(022);
	if (!mnt_fuse_available())
		cr_skip("integration test needs FUSE; /dev/fuse unavailable: %s",
			mnt_fuse_unavailable_reason());
	cgt_cr_require(h);
	cr_assert_eq(mnt_prepare(m), 0, "cannot make the temp dirs");
}

void wl_cr_fair_teardown(struct mnt *m, struct wl_run *r)
{
	wl_free(r);
	mnt_cr_teardown(m);
	cgt_destroy_all();
}

uint64_t wl_iostat_or_0(struct mnt *m, const char *group, const char *key)
{
	uint64_t v = 0;

	return wl_iostat(m, group, key, &v) == 0 ? v : 0;
}
