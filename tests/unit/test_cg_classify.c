/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tests of the classifier (cgroup/cgroup.h) end to end: on the real /proc of this process and
 * of a forked child made IDLE with ioprio_set, and on a recorded /proc + cgroupfs tree in a
 * temporary directory (the task id is ours, so ioprio_get works, but its files are recorded).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cg_proc.h"
#include "cgroup.h"
#include "sched.h"

#define MS 1000000ull
#define SEC 1000000000ull

static char tmp[64]; /* short: keeps every derived path far below PATH_MAX */
static char proc_root[128];
static struct cg_mounts fake_mounts;

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static void put(const char *rel, const char *text)
{
	char p[PATH_MAX];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", tmp, rel);
	for (char *s = p + strlen(tmp) + 1; *s; s++) {
		if (*s == '/') {
			*s = '\0';
			mkdir(p, 0755);
			*s = '/';
		}
	}
	f = fopen(p, "w");
	cr_assert_not_null(f, "%s", p);
	fputs(text, f);
	fclose(f);
}

/* Writes the recorded /proc/<our pid>/{stat,status,cgroup}. */
static void put_task(unsigned long long start, int nice, const char *comm, const char *cgroup)
{
	char rel[64], text[512];

	snprintf(rel, sizeof(rel), "proc/%d/stat", (int)getpid());
	snprintf(text, sizeof(text),
		 "%d (%s) S 1 %d %d 0 -1 4194304 10 0 0 0 1 2 0 0 %d %d 1 0 %llu 1000 50\n",
		 (int)getpid(), comm, (int)getpid(), (int)getpid(), 20 + nice, nice, start);
	put(rel, text);
	snprintf(rel, sizeof(rel), "proc/%d/status", (int)getpid());
	snprintf(text, sizeof(text), "Name:\t%s\nTgid:\t%d\nPid:\t%d\nUid:\t0\t0\t0\t0\n", comm,
		 (int)getpid(), (int)getpid());
	put(rel, text);
	snprintf(rel, sizeof(rel), "proc/%d/cgroup", (int)getpid());
	put(rel, cgroup);
}

static void setup_fake(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/cg_classify_test.XXXXXX");
	cr_assert_not_null(mkdtemp(tmp));
	snprintf(proc_root, sizeof(proc_root), "%s/proc", tmp);
	memset(&fake_mounts, 0, sizeof(fake_mounts));
	snprintf(fake_mounts.v2.dir, sizeof(fake_mounts.v2.dir), "%s/unified", tmp);
	snprintf(fake_mounts.v2.root, sizeof(fake_mounts.v2.root), "/");
	snprintf(fake_mounts.blkio.dir, sizeof(fake_mounts.blkio.dir), "%s/blkio", tmp);
	snprintf(fake_mounts.blkio.root, sizeof(fake_mounts.blkio.root), "/");
	/* the test runs as whatever ioprio Criterion's child inherited: make it "none" */
	cg_proc_set_ioprio(0, 0);
}

static void teardown_fake(void)
{
	nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void fake_config(struct cg_config *cfg)
{
	cg_config_init(cfg);
	cfg->proc_root = proc_root;
	cfg->mounts = &fake_mounts;
	cfg->unified_has_io = 0;
}

/* the recorded hybrid host: docker container in blkio, a systemd scope in the unified tree */
static const char hybrid_docker[] = "8:blkio:/docker/abc\n"
				    "4:memory:/docker/abc\n"
				    "1:name=systemd:/docker/abc\n"
				    "0::/system.slice/docker-abc.scope\n";

/* ---------------------------------------------------------------------------------------- */
/* Recorded tree */

TestSuite(cg_classify_fake, .init = setup_fake, .fini = teardown_fake);

Test(cg_classify_fake, cgroup_group_and_weight_from_the_callers_files)
{
	struct cg_config cfg;
	struct cg_classifier *c;
	struct cg_result r;

	put_task(5000, 0, "postgres", hybrid_docker);
	put("blkio/docker/abc/blkio.bfq.weight", "300\n"); /* docker run --blkio-weight 300 */
	fake_config(&cfg);
	c = cg_classifier_create(&cfg);
	cr_assert_not_null(c);

	cr_assert_eq(cg_classify(c, getpid(), 999, 999, "/db/file", 1 * SEC, &r), 0);
	cr_assert_str_eq(r.group, "/docker/abc", "hybrid without io in v2: the blkio line");
	cr_assert_eq(r.group_key, cg_name_hash("/docker/abc"));
	cr_assert_eq(r.weight, 300);
	cr_assert_eq(r.weight_src, CG_WSRC_CGROUP);
	cr_assert_eq(r.queue_key, (uint64_t)getpid());
	cr_assert_eq(r.tgid, getpid());
	cr_assert_eq(r.ioclass, SCHED_CLASS_BE);
	cr_assert_eq(r.level, 4, "class NONE, nice 0");
	cr_assert_eq(r.rule, -1);
	cr_assert_eq(r.flags, 0);
	cr_assert(r.group_is_cgroup);
	cr_assert_eq(r.hier, CG_HIER_BLKIO);

	/* the parent level of the group tree: an ancestor's own weight */
	uint32_t pw = 0;
	cr_assert_eq(cg_classifier_cgroup_weight(c, CG_HIER_BLKIO, "/docker", &pw), -ENOENT);
	put("blkio/docker/blkio.weight", "800\n");
	cr_assert_eq(cg_classifier_cgroup_weight(c, CG_HIER_BLKIO, "/docker", &pw), 0);
	cr_assert_eq(pw, 800);
	cr_assert_eq(cg_classifier_cgroup_weight(c, CG_HIER_SYSTEMD, "/docker", &pw), -ENOENT);
	cr_assert_eq(cg_classifier_cgroup_weight(c, CG_HIER_BLKIO, "/../x", &pw), -ENOENT);

	/* second call within the TTL: from the cache */
	cr_assert_eq(cg_classify(c, getpid(), 999, 999, NULL, 1 * SEC + 10 * MS, &r), 0);
	cr_assert_eq(r.flags, CG_RES_CACHED);
	cr_assert_str_eq(r.group, "/docker/abc");
	cg_classifier_destroy(c);

	/* io in the unified hierarchy: the 0:: line, and its io.weight */
	put("unified/system.slice/docker-abc.scope/io.weight", "default 400\n");
	cfg.unified_has_io = 1;
	c = cg_classifier_create(&cfg);
	cr_assert_eq(cg_classify(c, getpid(), 0, 0, NULL, 0, &r), 0);
	cr_assert_str_eq(r.group, "/system.slice/docker-abc.scope");
	cr_assert_eq(r.weight, 200, "io.weight 400 -> 200");
	cr_assert_eq(r.hier, CG_HIER_V2);
	cg_classifier_destroy(c);
}

Test(cg_classify_fake, moved_task_is_reclassified_after_the_ttl)
{
	struct cg_config cfg;
	struct cg_classifier *c;
	struct cg_result r;
	uint64_t t0 = 50 * SEC;

	put_task(5000, 0, "app", "0::/tenant-a\n");
	fake_config(&cfg);
	c = cg_classifier_create(&cfg);
	cr_assert_eq(cg_classify(c, getpid(), 0, 0, NULL, t0, &r), 0);
	cr_assert_str_eq(r.group, "/tenant-a");

	put_task(5000, 0, "app", "0::/tenant-b\n"); /* echo $pid > tenant-b/cgroup.procs */
	cr_assert_eq(cg_classify(c, getpid(), 0, 0, NULL, t0 + 999 * MS, &r), 0);
	cr_assert_str_eq(r.group, "/tenant-a", "within the TTL the cached answer stands");
	cr_assert_eq(cg_classify(c, getpid(), 0, 0, NULL, t0 + SEC, &r), 0);
	cr_assert_str_eq(r.group, "/tenant-b", "after the TTL the move is seen");
	cr_assert_eq(r.flags & CG_RES_CACHED, 0);

	/* flush: immediate */
	put_task(5000, 0, "app", "0::/tenant-c\n");
	cg_classifier_flush(c);
	cr_assert_eq(cg_classify(c, getpid(), 0, 0, NULL, t0 + SEC + 1, &r), 0);
	cr_assert_str_eq(r.group, "/tenant-c");
	cg_classifier_destroy(c);
}

/* A time just past the window in which a stat read vouches for a tid [ns]. */
#define REVAL (CG_REVALIDATE_NS + 1)

Test(cg_classify_fake, new_start_time_is_a_new_task_at_once)
{
	struct cg_config cfg;
	struct cg_classifier *c;
	struct cg_result r;

	put_task(5000, 0, "old", "0::/tenant-a\n");
	fake_config(&cfg);
	c = cg_classifier_create(&cfg);
	cr_assert_eq(cg_classify(c, getpid(), 0, 0, NULL, 0, &r), 0);
	cr_assert_str_eq(r.group, "/tenant-a");
	/* the tid was reused by another task: other start time, other cgroup */
	put_task(5001, 0, "new", "0::/tenant-b\n");
	/* past the revalidation window: the stat read sees the new start time */
	cr_assert_eq(cg_classify(c, getpid(), 0, 0, NULL, REVAL, &r), 0);
	cr_assert_str_eq(r.group, "/tenant-b", "never the previous owner's group");
	cr_assert_eq(r.flags & CG_RES_CACHED, 0);

	struct cg_classifier_stats st;
	cg_classifier_get_stats(c, &st);
	cr_assert_eq(st.cache.stale, 1);
	cr_assert_eq(st.classified, 2);
	cg_classifier_destroy(c);
}

Test(cg_classify_fake, renice_changes_level_without_waiting_for_the_ttl)
{
	struct cg_config cfg;
	struct cg_classifier *c;
	struct cg_result r;

	put_task(5000, 0, "app", "0::/a\n");
	fake_config(&cfg);
	c = cg_classifier_create(&cfg);
	cr_assert_eq(cg_classify(c, getpid(), 0, 0, NULL, 0, &r), 0);
	cr_assert_eq(r.level, 4);
	put_task(5000, 19, "app", "0::/a\n");
	cr_assert_eq(cg_classify(c, getpid(), 0, 0, NULL, REVAL, &r), 0);
	cr_assert_eq(r.flags & CG_RES_CACHED, CG_RES_CACHED);
	cr_assert_eq(r.level, 7, "nice 19 -> BE 7");
	put_task(5000, -20, "app", "0::/a\n");
	cr_assert_eq(cg_classify(c, getpid(), 0, 0, NULL, 2 * REVAL, &r), 0);
	cr_assert_eq(r.level, 0);
	cg_classifier_destroy(c);
}

Test(cg_classify_fake, stat_read_at_most_once_per_revalidation_window)
{
	struct cg_config cfg;
	struct cg_classifier *c;
	struct cg_result r;

	put_task(5000, 0, "app", "0::/a\n");
	fake_config(&cfg);
	c = cg_classifier_create(&cfg);
	cr_assert_eq(cg_classify(c, getpid(), 0, 0, NULL, 0, &r), 0);
	cr_assert_eq(r.level, 4);
	/* within the window the stat file is not read again: the old nice is used */
	put_task(5000, 19, "app", "0::/a\n");
	cr_assert_eq(cg_classify(c, getpid(), 0, 0, NULL, CG_REVALIDATE_NS, &r), 0);
	cr_assert_eq(r.flags & CG_RES_CACHED, CG_RES_CACHED);
	cr_assert_eq(r.level, 4, "a stat read happened inside the revalidation window");
	/* one nanosecond past it, it is */
	cr_assert_eq(cg_classify(c, getpid(), 0, 0, NULL, REVAL, &r), 0);
	cr_assert_eq(r.level, 7);
	/* and the confirmation restarts the window with the fresh nice */
	put_task(5000, -20, "app", "0::/a\n");
	cr_assert_eq(cg_classify(c, getpid(), 0, 0, NULL, REVAL + 5, &r), 0);
	cr_assert_eq(r.level, 7);
	cg_classifier_destroy(c);
}

Test(cg_classify_fake, rules_override_weight_group_and_class)
{
	const struct cg_rule rules[] = {
		{ .has_uid = true, .uid = 1001, .weight = 100, .group = "batch" },
		{ .comm = "backup-*", .ioclass = SCHED_CLASS_IDLE },
		{ .path = "/hot", .weight = 900 },
		{ .cgroup = "/docker/*", .group = "containers", .weight = CG_WEIGHT_FROM_CGROUP },
	};
	struct cg_config cfg;
	struct cg_classifier *c;
	struct cg_result r;

	put_task(5000, 0, "backup-db", hybrid_docker);
	put("blkio/docker/abc/blkio.bfq.weight", "300\n");
	fake_config(&cfg);
	cfg.rules = rules;
	cfg.nr_rules = 4;
	c = cg_classifier_create(&cfg);
	cr_assert_not_null(c);

	cr_assert_eq(cg_classify(c, getpid(), 1001, 1001, "/hot/x", 0, &r), 0);
	cr_assert_eq(r.rule, 0);
	cr_assert_str_eq(r.group, "batch");
	cr_assert(!r.group_is_cgroup);
	cr_assert_eq(r.weight, 100);
	cr_assert_eq(r.weight_src, CG_WSRC_RULE);
	cr_assert_eq(r.ioclass, SCHED_CLASS_BE);

	cr_assert_eq(cg_classify(c, getpid(), 0, 0, "/hot/x", 0, &r), 0);
	cr_assert_eq(r.rule, 1);
	cr_assert_eq(r.ioclass, SCHED_CLASS_IDLE);
	cr_assert_eq(r.level, 7);
	cr_assert_str_eq(r.group, "/docker/abc");
	cr_assert_eq(r.weight, 300, "no rule weight, group is the cgroup: its file weight");

	put_task(5000, 0, "postgres", hybrid_docker);
	cr_assert_eq(cg_classify(c, getpid(), 0, 0, "/hot/x", REVAL, &r), 0);
	cr_assert_eq(r.rule, 2);
	cr_assert_eq(r.weight, 900);
	cr_assert_eq(cg_classify(c, getpid(), 0, 0, "/hotter", REVAL, &r), 0);
	cr_assert_eq(r.rule, 3, "/hot is not a prefix of /hotter");
	cr_assert_str_eq(r.group, "containers");
	cr_assert_eq(r.weight, 300, "weight = from cgroup, even though the group was renamed");
	cr_assert_eq(r.weight_src, CG_WSRC_RULE_CGROUP);
	cg_classifier_destroy(c);
}

/*
 * weight_from_cgroup = false only drops the implicit cgroup weight of callers no rule gives a
 * weight; a rule that says weight = "cgroup" still gets the caller's file weight.
 */
Test(cg_classify_fake, a_rule_asking_for_the_cgroup_weight_gets_it_without_weight_from_cgroup)
{
	const struct cg_rule rules[] = {
		{ .comm = "postgres", .group = "db", .weight = CG_WEIGHT_FROM_CGROUP },
	};
	struct cg_config cfg;
	struct cg_classifier *c;
	struct cg_result r;

	put_task(5000, 0, "postgres", hybrid_docker);
	put("blkio/docker/abc/blkio.bfq.weight", "300\n");
	fake_config(&cfg);
	cfg.weight_from_cgroup = false;
	cfg.rules = rules;
	cfg.nr_rules = 1;
	c = cg_classifier_create(&cfg);
	cr_assert_not_null(c);

	cr_assert_eq(cg_classify(c, getpid(), 0, 0, NULL, 0, &r), 0);
	cr_assert_eq(r.rule, 0);
	cr_assert_str_eq(r.group, "db");
	cr_assert_eq(r.weight, 300, "the rule asks for the cgroup's weight, got %u", r.weight);
	cr_assert_eq(r.weight_src, CG_WSRC_RULE_CGROUP);

	/* no rule: the cgroup is the group, but its files are not read for the weight */
	put_task(5000, 0, "psql", hybrid_docker);
	cr_assert_eq(cg_classify(c, getpid(), 0, 0, NULL, REVAL, &r), 0);
	cr_assert_eq(r.rule, -1);
	cr_assert_str_eq(r.group, "/docker/abc");
	cr_assert(r.group_is_cgroup);
	cr_assert_eq(r.weight, SCHED_WEIGHT_DEFAULT, "weight_from_cgroup = false, got %u",
		     r.weight);
	cr_assert_eq(r.weight_src, CG_WSRC_DEFAULT);
	cg_classifier_destroy(c);
}

Test(cg_classify_fake, group_by_uid_gid_none_and_queue_by_thread)
{
	struct cg_config cfg;
	struct cg_classifier *c;
	struct cg_result r;

	put_task(5000, 0, "app", hybrid_docker);
	put("blkio/docker/abc/blkio.bfq.weight", "300\n");
	fake_config(&cfg);
	cfg.group_by = CG_GROUP_BY_UID;
	c = cg_classifier_create(&cfg);
	cr_assert_eq(cg_classify(c, getpid(), 1000, 100, NULL, 0, &r), 0);
	cr_assert_str_eq(r.group, "uid:1000");
	cr_assert_eq(r.weight, SCHED_WEIGHT_DEFAULT, "a uid group has no cgroup weight");
	cr_assert_eq(r.weight_src, CG_WSRC_DEFAULT);
	cg_classifier_destroy(c);

	cfg.group_by = CG_GROUP_BY_GID;
	c = cg_classifier_create(&cfg);
	cr_assert_eq(cg_classify(c, getpid(), 1000, 100, NULL, 0, &r), 0);
	cr_assert_str_eq(r.group, "gid:100");
	cg_classifier_destroy(c);

	cfg.group_by = CG_GROUP_BY_NONE;
	cfg.queue_by = CG_QUEUE_BY_THREAD;
	c = cg_classifier_create(&cfg);
	cr_assert_eq(cg_classify(c, getpid(), 1000, 100, NULL, 0, &r), 0);
	cr_assert_str_eq(r.group, "/");
	cr_assert_eq(r.queue_key, (uint64_t)getpid());
	cg_classifier_destroy(c);
}

Test(cg_classify_fake, namespaced_cgroup_is_an_opaque_key_and_never_resolved)
{
	struct cg_config cfg;
	struct cg_classifier *c;
	struct cg_result r;

	put_task(5000, 0, "app", "0::/../container_id2\n");
	/* unified/../container_id2 exists and would say 10000 if it were (wrongly) resolved */
	put("container_id2/io.weight", "default 10000\n");
	fake_config(&cfg);
	c = cg_classifier_create(&cfg);
	cr_assert_eq(cg_classify(c, getpid(), 0, 0, NULL, 0, &r), 0);
	cr_assert_str_eq(r.group, "/../container_id2");
	cr_assert_eq(r.weight, SCHED_WEIGHT_DEFAULT);
	cr_assert_eq(r.weight_src, CG_WSRC_DEFAULT);
	cg_classifier_destroy(c);
}

Test(cg_classify_fake, malformed_cgroup_file_degrades_to_root_and_is_not_cached)
{
	struct cg_config cfg;
	struct cg_classifier *c;
	struct cg_result r;
	struct cg_classifier_stats st;

	put_task(5000, 0, "app", "0::/a\r\n");
	fake_config(&cfg);
	c = cg_classifier_create(&cfg);
	cr_assert_eq(cg_classify(c, getpid(), 0, 0, NULL, 0, &r), 0);
	cr_assert_str_eq(r.group, "/");
	cr_assert_eq(r.flags, CG_RES_DEGRADED);
	put_task(5000, 0, "app", "0::/a\n");
	cr_assert_eq(cg_classify(c, getpid(), 0, 0, NULL, 1, &r), 0);
	cr_assert_str_eq(r.group, "/a", "a degraded answer is retried, not cached");
	cg_classifier_get_stats(c, &st);
	cr_assert_eq(st.degraded, 1);
	cg_classifier_destroy(c);
}

Test(cg_classify_fake, v1_host_without_blkio_or_systemd_is_root)
{
	struct cg_config cfg;
	struct cg_classifier *c;
	struct cg_result r;

	put_task(5000, 0, "app", "3:memory:/m\n");
	fake_config(&cfg);
	c = cg_classifier_create(&cfg);
	cr_assert_eq(cg_classify(c, getpid(), 0, 0, NULL, 0, &r), 0);
	cr_assert_str_eq(r.group, "/");
	cr_assert_eq(r.flags, 0, "not an error: the caller is in no I/O hierarchy");
	cg_classifier_destroy(c);
}

Test(cg_classify_fake, config_check_and_stub)
{
	const struct cg_rule bad[] = { { .weight = 10 }, { .weight = 5 } };
	struct cg_config cfg;
	struct cg_classifier *c;
	struct cg_result r;
	size_t idx = 99;

	fake_config(&cfg);
	cfg.rules = bad;
	cfg.nr_rules = 2;
	cr_assert_eq(cg_config_check(&cfg, &idx), -EINVAL);
	cr_assert_eq(idx, 1);
	cr_assert_null(cg_classifier_create(&cfg));
	cfg.nr_rules = 1;
	cfg.queue_by = (enum cg_queue_by)7;
	cr_assert_eq(cg_config_check(&cfg, &idx), -EINVAL);
	cr_assert_eq(idx, 1);

	/* the stub: no I/O at all, even for a tid with no /proc entry */
	cg_config_init(&cfg);
	cfg.enabled = false;
	cfg.proc_root = "/nonexistent";
	c = cg_classifier_create(&cfg);
	cr_assert_not_null(c);
	cr_assert_eq(cg_classify(c, 123456789, 0, 0, "/x", 0, &r), 0);
	cr_assert_eq(r.flags, CG_RES_STUB);
	cr_assert_str_eq(r.group, "/");
	cr_assert_eq(r.queue_key, 123456789);
	cr_assert_eq(r.weight, SCHED_WEIGHT_DEFAULT);
	cr_assert_eq(r.ioclass, SCHED_CLASS_BE);
	cr_assert_eq(r.level, SCHED_LEVEL_NORM);
	cr_assert_eq(cg_classify(c, 0, 0, 0, NULL, 0, &r), -ESRCH, "tid 0 even in the stub");
	cg_classifier_destroy(c);
	cg_classifier_destroy(NULL);
}

/* ---------------------------------------------------------------------------------------- */
/* The real /proc */

static struct cg_classifier *real_classifier(enum cg_queue_by qb)
{
	struct cg_config cfg;

	cg_config_init(&cfg);
	cfg.queue_by = qb;
	return cg_classifier_create(&cfg);
}

Test(cg_classify_real, self_matches_what_proc_says)
{
	struct cg_classifier *c = real_classifier(CG_QUEUE_BY_PROCESS);
	struct cg_result r;
	struct cg_mounts ms;
	struct cg_stat st;
	bool has_io;
	char text[65536], expect[CG_NAME_MAX];
	size_t len;
	uint8_t cls, lvl;

	cr_assert_not_null(c);
	cg_proc_set_ioprio(0, 0); /* class NONE: level from nice */
	cr_assert_eq(cg_classify(c, getpid(), getuid(), getgid(), NULL, 0, &r), 0);
	cr_assert_eq(r.tgid, getpid());
	cr_assert_eq(r.queue_key, (uint64_t)getpid());

	/* the group is the line the policy picks from the real file */
	cg_classifier_mounts(c, &ms, &has_io);
	cr_assert_eq(cg_proc_read_file("/proc/self/cgroup", text, sizeof(text), &len), 0);
	int rc = cg_parse_cgroup_path(text, len, CG_SELECT_AUTO, has_io, expect, sizeof(expect),
				      NULL);
	if (rc == -ENOENT)
		snprintf(expect, sizeof(expect), "/");
	else
		cr_assert_eq(rc, 0);
	cr_assert_str_eq(r.group, expect);
	cr_assert_eq(r.flags & CG_RES_DEGRADED, 0);

	cr_assert_eq(cg_proc_stat("/proc", getpid(), &st), 0);
	cg_ioprio_decode(0, st.nice, &cls, &lvl);
	cr_assert_eq(r.ioclass, cls);
	cr_assert_eq(r.level, lvl);
	cr_assert(r.weight >= SCHED_WEIGHT_MIN && r.weight <= SCHED_WEIGHT_MAX);

	cr_assert_eq(cg_classify(c, 0, 0, 0, NULL, 0, &r), -ESRCH, "pid 0 is the caller's job");
	cg_classifier_destroy(c);
}

static pid_t worker_tid;
static pthread_barrier_t barrier;

static void *worker(void *arg)
{
	(void)arg;
	worker_tid = gettid();
	pthread_barrier_wait(&barrier);
	pthread_barrier_wait(&barrier);
	return NULL;
}

Test(cg_classify_real, a_thread_queues_with_its_process_unless_queue_by_thread)
{
	struct cg_classifier *p = real_classifier(CG_QUEUE_BY_PROCESS);
	struct cg_classifier *t = real_classifier(CG_QUEUE_BY_THREAD);
	struct cg_result r;
	pthread_t th;

	pthread_barrier_init(&barrier, NULL, 2);
	cr_assert_eq(pthread_create(&th, NULL, worker, NULL), 0);
	pthread_barrier_wait(&barrier);
	cr_assert_eq(cg_classify(p, worker_tid, 0, 0, NULL, 0, &r), 0);
	cr_assert_eq(r.queue_key, (uint64_t)getpid());
	cr_assert_eq(r.tid, worker_tid);
	cr_assert_eq(cg_classify(t, worker_tid, 0, 0, NULL, 0, &r), 0);
	cr_assert_eq(r.queue_key, (uint64_t)worker_tid);
	cr_assert_eq(r.tgid, getpid());
	pthread_barrier_wait(&barrier);
	pthread_join(th, NULL);
	pthread_barrier_destroy(&barrier);
	cg_classifier_destroy(p);
	cg_classifier_destroy(t);
}

/* Forks a child that sets its own ioprio to `ioprio`, then waits; returns its pid. */
static pid_t child_with_ioprio(int ioprio, int *release_fd)
{
	int ready[2], release[2];
	pid_t pid;
	char b = 0;

	cr_assert_eq(pipe(ready), 0);
	cr_assert_eq(pipe(release), 0);
	pid = fork();
	/* the child must not assert: with --full-stats every assert talks to the runner */
	if (pid == 0) {
		close(ready[0]);
		close(release[1]);
		char ok = cg_proc_set_ioprio(0, ioprio) == 0 ? 1 : 0;
		if (write(ready[1], &ok, 1) != 1)
			_exit(2);
		if (read(release[0], &b, 1) < 0)
			_exit(3);
		_exit(0);
	}
	cr_assert_geq(pid, 0);
	close(ready[1]);
	close(release[0]);
	cr_assert_eq(read(ready[0], &b, 1), 1);
	cr_assert_eq(b, 1, "child could not set its ioprio");
	close(ready[0]);
	*release_fd = release[1];
	return pid;
}

static void reap(pid_t pid, int release_fd)
{
	int status;

	close(release_fd);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

Test(cg_classify_real, ionice_idle_child_classifies_idle)
{
	struct cg_classifier *c = real_classifier(CG_QUEUE_BY_PROCESS);
	struct cg_result r;
	int rel;
	pid_t kid = child_with_ioprio(3 << 13, &rel); /* ionice -c3 */

	cr_assert_eq(cg_classify(c, kid, 0, 0, NULL, 0, &r), 0);
	cr_assert_eq(r.ioclass, SCHED_CLASS_IDLE);
	cr_assert_eq(r.level, 7);
	cr_assert_eq(r.tgid, kid);
	cr_assert_eq(r.queue_key, (uint64_t)kid);
	reap(kid, rel);

	/* gone now: -ESRCH once the revalidation window has passed, even though its
	 * classification is still cached */
	cr_assert_eq(cg_classify(c, kid, 0, 0, NULL, REVAL, &r), -ESRCH);
	cg_classifier_destroy(c);
}

Test(cg_classify_real, ionice_best_effort_level_child)
{
	struct cg_classifier *c = real_classifier(CG_QUEUE_BY_PROCESS);
	struct cg_result r;
	int rel;
	pid_t kid = child_with_ioprio((2 << 13) | 1, &rel); /* ionice -c2 -n1 */

	cr_assert_eq(cg_classify(c, kid, 0, 0, NULL, 0, &r), 0);
	cr_assert_eq(r.ioclass, SCHED_CLASS_BE);
	cr_assert_eq(r.level, 1);
	reap(kid, rel);
	cg_classifier_destroy(c);
}

struct hammer_arg {
	struct cg_classifier *c;
	int fails;
};

static void *hammer(void *p)
{
	struct hammer_arg *a = p;
	struct cg_result r;

	for (int i = 0; i < 2000; i++) {
		if (cg_classify(a->c, gettid(), 0, 0, NULL, (uint64_t)i * MS, &r) != 0 ||
		    r.tgid != getpid())
			a->fails++;
	}
	return NULL;
}

Test(cg_classify_real, concurrent_callers_share_one_classifier)
{
	struct cg_config cfg;
	struct cg_classifier *c;
	pthread_t th[4];
	struct hammer_arg a[4];
	struct cg_classifier_stats st;

	cg_config_init(&cfg);
	cfg.cache_capacity = 2; /* force evictions between the four threads */
	cfg.cache_ttl = 5 * MS;
	c = cg_classifier_create(&cfg);
	for (int i = 0; i < 4; i++) {
		a[i].c = c;
		a[i].fails = 0;
		cr_assert_eq(pthread_create(&th[i], NULL, hammer, &a[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		cr_assert_eq(a[i].fails, 0);
	}
	cg_classifier_get_stats(c, &st);
	cr_assert_eq(st.classified, 8000);
	cr_assert_eq(st.cache.hits + st.cache.misses, 8000);
	cg_classifier_destroy(c);
}
