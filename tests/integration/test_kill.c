/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * kill: clients SIGKILLed mid-read and mid-write, with their requests in flight (one client
 * on an idle mount) and queued (several greedy clients behind `-o device=hdd,direct_io,
 * depth=1`, so each request waits for the emulated disk). Afterwards:
 *   - the mount still serves a fresh reader, byte for byte;
 *   - .cfqfs/io.stat shows queued=0 in every group after a short settle (the killed clients'
 *     requests were answered or dropped, not left in a queue);
 *   - every write a writer had fsync()ed and reported through its pipe is intact in SOURCE;
 *   - the killed clients' (sync) queues leave .cfqfs/queues (released once their requests are
 *     answered and CFQ stops idling on them; async queues are shared per group, class and
 *     level, and groups are never removed, so neither is checked);
 *   - the daemon exits 0 at unmount (mnt_cr_finish).
 * The daemon's VmRSS is logged before and after the rounds (cr_log_info).
 * And the reverse: a client that only handles a signal (a 1 ms interval timer) while its
 * reads, writes and fsyncs wait behind greedy readers gets every one of them done, never
 * EINTR (the kernel sends FUSE_INTERRUPT for handled signals too, and passes EINTR on).
 * And both: an IDLE-class reader starved by greedy readers gets a handled signal (its one
 * interrupt, so the daemon keeps its request), then SIGKILL: it must go while the greedy
 * readers still run, not when the scheduler would have served it.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "chaos.h"
#include "mount.h"

#define BIG_LEN (4u << 20)	/* the shared file readers hammer [bytes] */
#define BIG_SEED 0xb16u
#define WLEN (2u << 20)		/* a writer wraps after this [bytes] */
#define CHUNK (64u << 10)	/* [bytes] per read/write */
#define MAX_CLIENTS 8

static struct mnt M;

static void setup(void)
{
	static const char *const args[] = { "-o", "device=hdd,direct_io,depth=1", NULL };

	cr_assert_eq(mnt_prepare(&M), 0, "mnt_prepare");
	cr_assert_eq(ch_make_file(src_path(&M, "big"), BIG_SEED, BIG_LEN), 0, "make SOURCE/big");
	umask(022);
	mnt_cr_start(&M, args);
}

static void teardown(void)
{
	mnt_cr_teardown(&M);
}

TestSuite(kill, .init = setup, .fini = teardown, .timeout = 60);

/* Polls io.stat up to 3 s for queued=0 in every group; fails with the last text otherwise. */
static void expect_queues_drained(const char *when)
{
	unsigned groups = 0;
	uint64_t q = 0;

	for (int i = 0; i < 60; i++) {
		q = mnt_cr_queued(&M, &groups);
		if (q == 0)
			break;
		usleep(50000);
	}
	cr_assert_eq(q, 0, "%s: %llu request(s) still queued across %u group(s) after 3 s", when,
		     (unsigned long long)q, groups);
}

/*
 * Polls .cfqfs/queues up to 5 s (a sanitizer daemon on a loaded host is slow) until no row
 * belongs to a killed client; fails with the last text otherwise.
 */
static void expect_queues_gone(const struct ch_client *cl, unsigned n, unsigned round)
{
	static char text[1 << 16];
	pid_t pids[MAX_CLIENTS], first = 0;
	unsigned rows = 0;
	int left = 0;
	double t0 = ch_now();

	for (unsigned i = 0; i < n; i++)
		pids[i] = cl[i].pid;
	for (int i = 0; i < 100; i++) {
		ssize_t len = mnt_get(mnt_path(&M, ".cfqfs/queues"), text, sizeof(text) - 1);

		cr_assert_geq(len, 0, "read queues: %s", strerror((int)-len));
		text[len] = '\0';
		left = ch_queues_count(text, pids, n, &rows, &first);
		cr_assert_geq(left, 0, "queues unparsable:\n%s", text);
		if (left == 0)
			break;
		usleep(50000);
	}
	cr_assert_eq(left, 0, "round %u: %d queue(s) of killed clients (pid %d first) still in "
		     "queues 5 s after they were reaped:\n%s", round, left, (int)first, text);
	fprintf(stderr, "kill: round %u: killed clients' queues gone after %.2f s (%u row(s) "
		"left)\n", round, ch_now() - t0, rows);
}

/* A fresh reader through the mount sees all of big, correctly. */
static void expect_fresh_reader_ok(const char *when)
{
	uint64_t bad = 0;
	int r = ch_verify_file(mnt_path(&M, "big"), BIG_SEED, BIG_LEN, &bad);

	cr_assert_eq(r, 0, "%s: fresh reader of big: %s at %llu", when,
		     r < 0 ? strerror(-r) : "wrong data", (unsigned long long)bad);
}

/* Every acknowledged byte of each killed writer is in SOURCE. */
static void expect_acked_in_source(struct ch_client *cl, unsigned n, unsigned round)
{
	for (unsigned i = 0; i < n; i++) {
		char rel[64];
		uint64_t bad = 0;

		if (cl[i].kind != CH_WRITER || cl[i].acked == 0)
			continue;
		snprintf(rel, sizeof(rel), "w%u.%u", round, i);
		int r = ch_verify_file(src_path(&M, rel), 0x100u * round + i, cl[i].acked, &bad);
		cr_assert_eq(r, 0, "round %u: SOURCE/%s: %s at %llu of %llu acknowledged bytes",
			     round, rel, r < 0 ? strerror(-r) : "lost or wrong data",
			     (unsigned long long)bad, (unsigned long long)cl[i].acked);
	}
}

/*
 * One round: nr_writers writers start, after lead_ms nr_readers readers join; all run for
 * run_ms more, then all are SIGKILLed at once.
 * Returns the largest queued= total seen while they ran (0 when not sampled); adds the
 * writers' acknowledged fsyncs to *acks.
 */
static uint64_t round_kill(unsigned round, unsigned nr_readers, unsigned nr_writers, int lead_ms,
			   int run_ms, uint64_t *acks)
{
	struct ch_client cl[MAX_CLIENTS];
	unsigned n = nr_readers + nr_writers;
	uint64_t max_q = 0;

	cr_assert_leq(n, MAX_CLIENTS);
	/* writers first: with a lead they get fsyncs acknowledged before the readers arrive */
	for (unsigned k = 0; k < n; k++) {
		unsigned i = (k + nr_readers) % n;
		char rel[64];
		int r;

		if (k == nr_writers && lead_ms > 0)
			usleep((useconds_t)lead_ms * 1000);
		if (i < nr_readers) {
			r = ch_spawn(&cl[i], CH_READER, mnt_path(&M, "big"), BIG_SEED, BIG_LEN, CHUNK,
				     20.0);
		} else {
			snprintf(rel, sizeof(rel), "w%u.%u", round, i);
			r = ch_spawn(&cl[i], CH_WRITER, mnt_path(&M, rel), 0x100u * round + i, WLEN,
				     CHUNK, 20.0);
		}
		cr_assert_eq(r, 0, "spawn: %s", strerror(-r));
	}
	for (int t = 0; t < run_ms; t += 20) {
		unsigned groups;
		if (n > 1 && t >= run_ms / 2) {
			uint64_t q = mnt_cr_queued(&M, &groups);
			if (q > max_q)
				max_q = q;
		}
		usleep(20000);
	}
	int stuck = ch_kill_all(cl, n, 10000);
	cr_assert_lt(stuck, 0, "round %u: client %d not gone 10 s after SIGKILL: a request the "
		     "daemon never answered?", round, stuck);
	for (unsigned i = 0; i < n; i++) {
		/* a client that ended before the kill hit an error or bad data */
		cr_assert_eq(ch_exit_code(&cl[i]), 128 + SIGKILL,
			     "round %u: %s %u ended by itself with code %d before the kill", round,
			     cl[i].kind == CH_READER ? "reader" : "writer", i, ch_exit_code(&cl[i]));
		if (cl[i].kind == CH_WRITER)
			*acks += cl[i].nr_acks;
	}
	expect_acked_in_source(cl, n, round);
	expect_queues_gone(cl, n, round);
	return max_q;
}

Test(kill, in_flight_single_reader_and_writer)
{
	/* alone on the mount, a client's request is dispatched at once: the kill lands while
	 * it is in flight (held by the emulated disk) or between two requests */
	uint64_t acks = 0;

	for (unsigned r = 0; r < 3; r++) {
		round_kill(r * 2, 1, 0, 0, 60 + 70 * (int)r, &acks);
		round_kill(r * 2 + 1, 0, 1, 0, 60 + 70 * (int)r, &acks);
		expect_queues_drained("after a lone client was killed");
	}
	/* else the SOURCE check had nothing to check */
	cr_assert_gt(acks, 0, "no writer got an fsync acknowledged");
	expect_fresh_reader_ok("after lone clients were killed");
	mnt_cr_finish(&M);
}

Test(kill, queued_greedy_clients)
{
	long rss0 = ch_vmrss_kb(M.pid);
	uint64_t max_q = 0, acks = 0;

	/*
	 * Rounds without a writers' lead kill writers whose first write is still queued; with a
	 * lead, writers get fsyncs acknowledged before the readers come (beside seeky sync
	 * readers the emulated disk serves the writers' async queue only after seconds:
	 * measured 2.9 s for a first 64 KiB write).
	 */
	static const int lead_ms[] = { 0, 0, 300, 300 };
	static const int run_ms[] = { 400, 700, 800, 1200 };

	for (unsigned r = 0; r < 4; r++) {
		uint64_t q = round_kill(10 + r, 3, 3, lead_ms[r], run_ms[r], &acks);
		if (q > max_q)
			max_q = q;
		expect_queues_drained("after greedy clients were killed");
		expect_fresh_reader_ok("after greedy clients were killed");
	}
	/* the rounds must really have killed clients whose requests were waiting */
	cr_assert_gt(max_q, 0, "io.stat never showed a queued request with 6 clients on depth=1");
	cr_assert_gt(acks, 0, "no writer got an fsync acknowledged beside 3 greedy readers");
	long rss1 = ch_vmrss_kb(M.pid);
	cr_log_info("kill: daemon VmRSS %ld KiB before, %ld KiB after 4 rounds of 6 killed "
		    "clients; max queued seen %llu", rss0, rss1, (unsigned long long)max_q);
	fprintf(stderr, "kill: daemon VmRSS %ld KiB before, %ld KiB after; max queued %llu; "
		"acked fsyncs %llu\n", rss0, rss1, (unsigned long long)max_q,
		(unsigned long long)acks);
	mnt_cr_finish(&M);
}

static volatile sig_atomic_t nr_alarms;

static void on_alarm(int sig)
{
	(void)sig;
	nr_alarms++;
}

/* What the timed child reports through its pipe. */
struct sig_report {
	long ops;	/* reads, writes and fsyncs done */
	long eintr;	/* of them failed EINTR */
	long other;	/* failed otherwise, short, or wrong data */
	long alarms;	/* SIGALRMs handled while they ran */
	double secs;	/* [s] how long they took */
};

/* In a forked child (no Criterion here): n rounds of a pread of big, checked against the
 * pattern, and a pwrite + fsync of `wpath`, under a 1 ms SIGALRM timer (SA_RESTART). */
static void timed_child(int out, const char *wpath, int n)
{
	static unsigned char buf[CHUNK];
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
	struct itimerval it = { { 0, 1000 }, { 0, 1000 } };
	struct sig_report rep = { 0 };
	int rfd = open(mnt_path(&M, "big"), O_RDONLY);
	/* O_DSYNC: a sync queue of its own beside the readers (an async write can wait seconds
	 * behind seeky sync readers on the emulated disk, see above) */
	int wfd = open(wpath, O_WRONLY | O_CREAT | O_TRUNC | O_DSYNC, 0644);
	double t0 = ch_now();

	sigemptyset(&sa.sa_mask);
	if (rfd < 0 || wfd < 0 || sigaction(SIGALRM, &sa, NULL) != 0 ||
	    setitimer(ITIMER_REAL, &it, NULL) != 0)
		_exit(2);
	for (int i = 0; i < n; i++) {
		uint64_t off = (uint64_t)((i * 7919u) % (BIG_LEN / CHUNK)) * CHUNK;
		ssize_t r = pread(rfd, buf, CHUNK, (off_t)off);

		rep.ops++;
		if (r < 0 && errno == EINTR) {
			rep.eintr++;
		} else if (r != (ssize_t)CHUNK) {
			rep.other++;
		} else {
			for (size_t k = 0; k < CHUNK; k++)
				if (buf[k] != ch_pat(BIG_SEED, off + k)) {
					rep.other++;
					break;
				}
		}
		rep.ops++;
		r = pwrite(wfd, buf, CHUNK, (off_t)i * CHUNK);
		if (r < 0 && errno == EINTR)
			rep.eintr++;
		else if (r != (ssize_t)CHUNK)
			rep.other++;
		rep.ops++;
		if (fsync(wfd) != 0)
			errno == EINTR ? rep.eintr++ : rep.other++;
	}
	rep.secs = ch_now() - t0;
	setitimer(ITIMER_REAL, &(struct itimerval){ 0 }, NULL);
	rep.alarms = nr_alarms;
	_exit(write(out, &rep, sizeof(rep)) == (ssize_t)sizeof(rep) ? 0 : 3);
}

Test(kill, handled_signals_do_not_fail_io)
{
	struct ch_client cl[3];
	struct sig_report rep = { 0 };
	int pfd[2], st = 0;
	pid_t pid;

	/* greedy readers keep the depth=1 emulated disk busy, so the child's requests queue */
	for (unsigned i = 0; i < 3; i++)
		cr_assert_eq(ch_spawn(&cl[i], CH_READER, mnt_path(&M, "big"), BIG_SEED, BIG_LEN,
				      CHUNK, 60.0), 0, "spawn reader %u", i);
	cr_assert_eq(pipe(pfd), 0);
	pid = fork();
	if (pid == 0) { /* no cr_ call in the child, not even a passing one (--full-stats) */
		close(pfd[0]);
		timed_child(pfd[1], mnt_path(&M, "timed"), 12);
	}
	cr_assert_geq(pid, 0, "fork");
	close(pfd[1]);
	/* bounded: a request never answered must fail the test, not hang it (and ctest) */
	struct pollfd pl = { .fd = pfd[0], .events = POLLIN };
	int ready = poll(&pl, 1, 40000);
	ssize_t got = ready == 1 ? read(pfd[0], &rep, sizeof(rep)) : -1;
	close(pfd[0]);
	if (ready != 1)
		kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	int stuck = ch_kill_all(cl, 3, 10000);
	cr_assert_eq(ready, 1, "the timed child was not done after 40 s: a request never "
		     "answered?");
	cr_assert_lt(stuck, 0, "reader %d not gone 10 s after SIGKILL", stuck);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0 && got == (ssize_t)sizeof(rep),
		  "timed child failed (status %#x, report %zd bytes)", st, got);
	fprintf(stderr, "kill: timed child: %ld ops in %.2f s, %ld SIGALRMs handled, %ld EINTR, "
		"%ld other failures\n", rep.ops, rep.secs, rep.alarms, rep.eintr, rep.other);
	/* The requests must really have waited while signals came. A pending SIGALRM is not
	 * queued twice, and the kernel interrupts a request once, so a waiting request sees
	 * about one (measured: 36 to 39 for 36 requests); the old code failed all 36 with EINTR. */
	cr_assert_geq(rep.alarms * 2, rep.ops, "only %ld SIGALRMs for %ld requests in %.2f s: the "
		      "requests did not wait, the test tests nothing", rep.alarms, rep.ops,
		      rep.secs);
	cr_assert_eq(rep.eintr, 0, "%ld of %ld reads/writes/fsyncs failed EINTR under a handled "
		     "SIGALRM", rep.eintr, rep.ops);
	cr_assert_eq(rep.other, 0, "%ld of %ld requests failed, came short or read wrong data",
		     rep.other, rep.ops);
	expect_queues_drained("after the timed child");
	mnt_cr_finish(&M);
}

/* In a forked child: IDLE class, a handled SIGALRM 200 ms in, then reads of big until killed,
 * counting the ones that complete in *done. */
static void idle_reader(volatile long *done)
{
	static unsigned char buf[CHUNK];
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
	struct itimerval it = { { 0, 0 }, { 0, 200000 } };
	int fd;

	sigemptyset(&sa.sa_mask);
	/* IOPRIO_WHO_PROCESS, this process, class 3 (IDLE) << 13; before the open, which
	 * classifies the caller (and the classification is cached for a while) */
	if (syscall(SYS_ioprio_set, 1, 0, 3 << 13) != 0)
		_exit(2);
	fd = open(mnt_path(&M, "big"), O_RDONLY);
	if (fd < 0 || sigaction(SIGALRM, &sa, NULL) != 0 || setitimer(ITIMER_REAL, &it, NULL) != 0)
		_exit(2);
	for (unsigned i = 0;; i++) {
		if (pread(fd, buf, CHUNK, (off_t)((i * 13u) % (BIG_LEN / CHUNK)) * CHUNK) < 0 &&
		    errno != EINTR)
			_exit(3);
		(*done)++;
	}
}

Test(kill, killed_after_a_handled_signal_goes_at_once)
{
	struct ch_client cl[3];
	volatile long *done = mmap(NULL, sizeof(long), PROT_READ | PROT_WRITE,
				   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int st = 0;

	cr_assert_neq((void *)done, MAP_FAILED);
	*done = 0;
	for (unsigned i = 0; i < 3; i++)
		cr_assert_eq(ch_spawn(&cl[i], CH_READER, mnt_path(&M, "big"), BIG_SEED, BIG_LEN,
				      CHUNK, 20.0), 0, "spawn reader %u", i);
	usleep(300000); /* the readers' queues are busy before the IDLE reader comes */
	pid_t pid = fork();
	if (pid == 0) /* no cr_ call in the child */
		idle_reader(done);
	cr_assert_geq(pid, 0, "fork");
	usleep(1000000); /* its SIGALRM came at 200 ms; its read still waits */
	long before = *done;
	bool alive_then = waitpid(pid, &st, WNOHANG) == 0;
	kill(pid, SIGKILL);
	double t0 = ch_now();
	pid_t r = 0;
	while ((r = waitpid(pid, &st, WNOHANG)) == 0 && ch_now() - t0 < 10.0)
		usleep(20000);
	double gone = ch_now() - t0;
	if (r == 0) { /* still there: let the readers go, then it is served and dies */
		ch_kill_all(cl, 3, 10000);
		waitpid(pid, &st, 0);
	}
	/* were the readers still running when it went? */
	unsigned running = 0;
	for (unsigned i = 0; i < 3; i++)
		running += kill(cl[i].pid, 0) == 0 && waitpid(cl[i].pid, NULL, WNOHANG) == 0;
	int stuck = r == 0 ? -1 : ch_kill_all(cl, 3, 10000);
	fprintf(stderr, "kill: IDLE reader: %ld reads done in 1 s beside greedy readers; gone "
		"%.2f s after SIGKILL with %u readers still running\n", before, gone, running);
	cr_assert(alive_then, "the IDLE reader ended by itself (status %#x)", st);
	cr_assert_lt(stuck, 0, "reader %d not gone 10 s after SIGKILL", stuck);
	cr_assert_neq(r, 0, "the killed IDLE reader was still there 10 s after SIGKILL: its "
		      "request waited for its turn");
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "status %#x", st);
	cr_assert_eq(running, 3, "the greedy readers had stopped: the kill proves nothing");
	munmap((void *)done, sizeof(long));
	expect_queues_drained("after the killed IDLE reader");
	mnt_cr_finish(&M);
}
