/* SPDX-License-Identifier: GPL-2.0-or-later */
/* chaos.c - see chaos.h. */
#include "chaos.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

double ch_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

uint8_t ch_pat(uint32_t seed, uint64_t off)
{
	uint64_t x = (off >> 3) * 0x9E3779B97F4A7C15ull + seed;

	x ^= x >> 29;
	return (uint8_t)(x >> (8 * (off & 7)));
}

static void fill(uint32_t seed, uint64_t off, uint8_t *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = ch_pat(seed, off + i);
}

int ch_make_file(const char *path, uint32_t seed, uint64_t len)
{
	uint8_t buf[65536];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	int r = 0;

	if (fd < 0)
		return -errno;
	for (uint64_t off = 0; off < len;) {
		size_t n = len - off < sizeof(buf) ? (size_t)(len - off) : sizeof(buf);
		fill(seed, off, buf, n);
		ssize_t w = pwrite(fd, buf, n, (off_t)off);
		if (w < 0) {
			r = -errno;
			break;
		}
		off += (uint64_t)w;
	}
	if (close(fd) != 0 && r == 0)
		r = -errno;
	return r;
}

int ch_verify_file(const char *path, uint32_t seed, uint64_t len, uint64_t *bad)
{
	uint8_t buf[65536];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int r = 0;
	uint64_t off = 0;

	if (fd < 0)
		return -errno;
	while (off < len) {
		size_t n = len - off < sizeof(buf) ? (size_t)(len - off) : sizeof(buf);
		ssize_t got = pread(fd, buf, n, (off_t)off);
		if (got < 0) {
			r = -errno;
			goto out_close;
		}
		if (got == 0) {
			*bad = off;
			r = 1;
			goto out_close;
		}
		for (ssize_t i = 0; i < got; i++) {
			if (buf[i] != ch_pat(seed, off + (uint64_t)i)) {
				*bad = off + (uint64_t)i;
				r = 1;
				goto out_close;
			}
		}
		off += (uint64_t)got;
	}
out_close:
	close(fd);
	return r;
}

static int errno_exit(int e)
{
	return CH_EXIT_ERRNO + e > 254 ? 254 : CH_EXIT_ERRNO + e;
}

static int run_reader(const char *path, uint32_t seed, uint64_t len, size_t chunk, double end)
{
	uint8_t *buf = malloc(chunk);
	uint64_t nchunks = len / chunk, x = (uint64_t)getpid() * 2654435761u + 1;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || !buf || nchunks == 0)
		return CH_EXIT_SETUP;
	while (ch_now() < end) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		uint64_t off = (x % nchunks) * chunk;
		ssize_t got = pread(fd, buf, chunk, (off_t)off);
		if (got < 0)
			return errno_exit(errno);
		if ((size_t)got != chunk)
			return CH_EXIT_SHORT;
		for (size_t i = 0; i < chunk; i++)
			if (buf[i] != ch_pat(seed, off + i))
				return CH_EXIT_CORRUPT;
	}
	return CH_EXIT_DONE;
}

static int run_writer(const char *path, uint32_t seed, uint64_t len, size_t chunk, double end,
		      int ack)
{
	uint8_t *buf = malloc(chunk);
	uint64_t off = 0, top = 0;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0 || !buf)
		return CH_EXIT_SETUP;
	while (ch_now() < end) {
		fill(seed, off, buf, chunk);
		ssize_t w = pwrite(fd, buf, chunk, (off_t)off);
		if (w < 0)
			return errno_exit(errno);
		if ((size_t)w != chunk)
			return CH_EXIT_SHORT;
		if (fsync(fd) != 0)
			return errno_exit(errno);
		off += chunk;
		if (off > top) {
			top = off;
			if (write(ack, &top, sizeof(top)) != (ssize_t)sizeof(top))
				return CH_EXIT_SETUP;
		}
		if (off + chunk > len)
			off = 0;
	}
	return CH_EXIT_DONE;
}

int ch_spawn(struct ch_client *c, enum ch_kind kind, const char *path, uint32_t seed,
	     uint64_t len, size_t chunk, double max_s)
{
	int p[2] = { -1, -1 };
	pid_t parent = getpid();

	memset(c, 0, sizeof(*c));
	c->kind = kind;
	c->ack_fd = -1;
	if (kind == CH_WRITER && pipe2(p, O_CLOEXEC) != 0)
		return -errno;
	double end = ch_now() + max_s;
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		if (p[0] >= 0) {
			close(p[0]);
			close(p[1]);
		}
		return -e;
	}
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(CH_EXIT_SETUP);
		if (p[0] >= 0)
			close(p[0]);
		_exit(kind == CH_READER ? run_reader(path, seed, len, chunk, end)
					: run_writer(path, seed, len, chunk, end, p[1]));
	}
	if (p[1] >= 0)
		close(p[1]);
	c->pid = pid;
	c->ack_fd = p[0];
	return 0;
}

static void drain(struct ch_client *c)
{
	uint64_t v;

	if (c->ack_fd < 0)
		return;
	/* the child is gone, so the pipe ends at EOF; 8-byte records are atomic (< PIPE_BUF) */
	while (read(c->ack_fd, &v, sizeof(v)) == (ssize_t)sizeof(v)) {
		if (v > c->acked)
			c->acked = v;
		c->nr_acks++;
	}
	close(c->ack_fd);
	c->ack_fd = -1;
}

int ch_reap(struct ch_client *c, int timeout_ms)
{
	double end = ch_now() + timeout_ms / 1000.0;

	if (c->pid <= 0)
		return -ECHILD;
	while (!c->reaped) {
		pid_t r = waitpid(c->pid, &c->status, WNOHANG);
		if (r == c->pid) {
			c->reaped = true;
			break;
		}
		if (r < 0)
			return -errno;
		if (ch_now() > end)
			return -ETIMEDOUT;
		usleep(5000);
	}
	drain(c);
	return 0;
}

void ch_kill(struct ch_client *c)
{
	if (c->pid <= 0 || c->reaped)
		return;
	kill(c->pid, SIGKILL);
	ch_reap(c, 5000);
}

int ch_kill_all(struct ch_client *cl, unsigned n, int timeout_ms)
{
	for (unsigned i = 0; i < n; i++)
		kill(cl[i].pid, SIGKILL);
	for (unsigned i = 0; i < n; i++) {
		if (ch_reap(&cl[i], timeout_ms) != 0) {
			for (unsigned j = 0; j < n; j++)
				ch_kill(&cl[j]);
			return (int)i;
		}
	}
	return -1;
}

int ch_exit_code(const struct ch_client *c)
{
	if (!c->reaped)
		return -1;
	if (WIFEXITED(c->status))
		return WEXITSTATUS(c->status);
	if (WIFSIGNALED(c->status))
		return 128 + WTERMSIG(c->status);
	return -1;
}

int ch_iostat_sum(const char *text, const char *key, unsigned *groups, uint64_t *sum)
{
	char pat[64];
	size_t plen;
	unsigned n = 0;
	uint64_t total = 0;

	if (snprintf(pat, sizeof(pat), " %s=", key) >= (int)sizeof(pat))
		return -EINVAL;
	plen = strlen(pat);
	for (const char *l = text; *l;) {
		const char *eol = strchr(l, '\n');
		size_t len = eol ? (size_t)(eol - l) : strlen(l);
		const char *q = memmem(l, len, pat, plen);

		if (len) {
			if (!q)
				return -EINVAL;
			total += strtoull(q + plen, NULL, 10);
			n++;
		}
		l += len + (eol ? 1 : 0);
	}
	*groups = n;
	*sum = total;
	return 0;
}

int ch_iostat_queued(const char *text, unsigned *groups, uint64_t *queued)
{
	return ch_iostat_sum(text, "queued", groups, queued);
}

int ch_queues_count(const char *text, const pid_t *pids, unsigned n, unsigned *rows,
		    pid_t *first)
{
	const char *l = strchr(text, '\n');
	unsigned nr = 0;
	int hits = 0;

	if (strncmp(text, "pid ", 4) != 0 || !l)
		return -EINVAL;
	*first = 0;
	for (l++; *l;) {
		const char *eol = strchr(l, '\n');
		size_t len = eol ? (size_t)(eol - l) : strlen(l);
		char *end;
		long pid = strtol(l, &end, 10);

		if (len && l[0] == '-' && l[1] == ' ') {
			nr++; /* a shared async queue: no process of its own */
		} else if (len) {
			if (end == l || *end != ' ' || pid < 0)
				return -EINVAL;
			nr++;
			for (unsigned i = 0; i < n; i++) {
				if (pids[i] == (pid_t)pid) {
					if (hits++ == 0)
						*first = (pid_t)pid;
					break;
				}
			}
		}
		l += len + (eol ? 1 : 0);
	}
	*rows = nr;
	return hits;
}

long ch_status_kb(pid_t pid, const char *name)
{
	char path[64], line[256];
	size_t nlen = strlen(name);
	long kb = -ENOENT;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, name, nlen) && line[nlen] == ':' &&
		    sscanf(line + nlen + 1, "%ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

long ch_vmrss_kb(pid_t pid)
{
	return ch_status_kb(pid, "VmRSS");
}
