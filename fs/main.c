/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * main.c - command line, configuration, wiring and the FUSE session loop.
 *
 * Order matters: everything that can fail with a message for the user (arguments, config,
 * SOURCE, mount) happens before fuse_daemonize() so the message reaches the terminal; worker
 * threads start after it, because the daemonizing fork would lose them. On exit the executor
 * drains (every queued request is served and answered) before the unmount.
 */
/* 3.12 (every fs/ header says the same) for the fuse_loop_cfg_* API: the older struct
 * fuse_loop_config makes libfuse 3.14 print "Ignoring invalid max threads value" at every mount. */
#define FUSE_USE_VERSION 312
#include <dlfcn.h>
#include <errno.h>
#include <fuse_lowlevel.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "classify.h"
#include "cli.h"
#include "clock.h"
#include "config.h"
#include "executor.h"
#include "fusectl.h"
#include "groups.h"
#include "log.h"
#include "probe.h"
#include "pt.h"

#define MAX_FUSE_OPTS 64

static const char usage_text[] =
	"Usage: cfqfs [OPTIONS] SOURCE MOUNTPOINT\n"
	"Fair-share I/O scheduling FUSE filesystem: shows SOURCE at MOUNTPOINT and passes every\n"
	"read, write and fsync through a CFQ I/O scheduler keyed by process, cgroup and ionice.\n"
	"\n"
	"General options:\n"
	"  -h, --help            print this help and exit\n"
	"  -V, --version         print the version and exit\n"
	"  -f                    stay in the foreground (log to stderr instead of syslog)\n"
	"  -d                    debug: foreground, FUSE request trace, debug log\n"
	"  -s                    single-threaded FUSE loop (data I/O still uses the workers)\n"
	"  -c FILE               read the configuration FILE (same as -o config=FILE)\n"
	"  -o OPT[,OPT...]       mount options, below; may be repeated\n"
	"\n"
	"cfqfs options (-o KEY=VALUE; any key of the configuration file, see cfqfs(8)):\n"
	"  config=FILE           libconfig file, see /etc/cfqfs/cfqfs.conf.example\n"
	"  scheduler=NAME        cfq (default), deadline or noop\n"
	"  depth=N               worker threads = requests in flight on SOURCE (default 8)\n"
	"  rotational=auto|true|false\n"
	"                        do seeks on SOURCE cost time (default auto: timed at mount,\n"
	"                        random against sequential direct reads of SOURCE's largest file,\n"
	"                        well under a second; the block device's flag when that cannot\n"
	"                        be done, see .cfqfs/device); on non-rotational SOURCE cfq\n"
	"                        defaults to slice_idle=0 (IOPS mode)\n"
	"  TUNABLE=VALUE         any scheduler tunable, in sysfs units: slice_idle=0,\n"
	"                        group_idle=8, quantum=8, target_latency=300, low_latency=1, ...;\n"
	"                        max_copy_kb=1024 cuts copy_file_range and fallocate into\n"
	"                        pieces of that size, each scheduled on its own; a value is\n"
	"                        set in every scheduler that has the tunable, active or not\n"
	"  queue_limit=N         requests one group may have waiting or in flight (default\n"
	"                        4096); past it, or past queue_limit_mb MiB of its write data\n"
	"                        (default 256; a copy holds one piece), its reads, writes,\n"
	"                        copies and fallocates fail with EAGAIN\n"
	"  group_expire_ms=MS    remove a group unused this long (default 60000; 0: never)\n"
	"  open_limit=N          files one group may hold open (default 0: a quarter of the\n"
	"                        daemon's descriptor limit); past it, open fails with EMFILE\n"
	"  uid_queue_limit=N, uid_queue_limit_mb=MIB, uid_open_limit=N\n"
	"                        the same bounds per user over all of its groups, so that\n"
	"                        making cgroups does not multiply them (default 0: the\n"
	"                        per-group value; root is bounded per group only); blocked\n"
	"                        lock requests: 1024 per user of 4096\n"
	"  max_background=N      readahead, writeback and async direct I/O requests the kernel\n"
	"                        lets in at once (default 128; the kernel's own default is 12)\n"
	"  ctl_dir=NAME          control directory at the mount root (default .cfqfs; empty: none)\n"
	"  ctl_access=all|owner  who may read it (default all; writing: root and the mounter)\n"
	"  direct_io             bypass the page cache: every read and write is scheduled\n"
	"  kernel_cache          keep cached file data across opens; cached reads are NOT\n"
	"                        seen by the scheduler\n"
	"  writeback_cache       let the kernel buffer writes; they reach the scheduler late,\n"
	"                        in large batches, charged to the file's opener\n"
	"  attr_timeout=SECS     attribute cache lifetime (default 1)\n"
	"  entry_timeout=SECS    name lookup cache lifetime (default 1)\n"
	"  negative_timeout=SECS how long a failed lookup is cached (default 0: a file made\n"
	"                        on SOURCE directly is seen at once, as with passthrough_ll)\n"
	"  xattr=false           do not pass extended attributes through (ACLs too)\n"
	"  acl=false             do not enforce SOURCE's POSIX ACLs: the kernel then checks the\n"
	"                        mode bits only, so an ACL that denies a user denies nothing\n"
	"  clone_fd              one /dev/fuse descriptor per FUSE thread\n"
	"  max_idle_threads=N    idle FUSE threads kept (0-10000, default 10)\n"
	"  max_threads=N         most FUSE threads at once (1-10000, default 10)\n"
	"\n"
	"FUSE options (passed to the kernel and libfuse):\n"
	"  allow_other           let every user use the mount (as root, or user_allow_other in\n"
	"                        /etc/fuse.conf); the kernel checks permissions\n"
	"  default_permissions   always on; no_default_permissions is refused\n"
	"  ro, rw, nosuid, nodev, noexec, noatime, fsname=NAME, subtype=NAME, max_read=N, ...\n"
	"\n"
	"Examples:\n"
	"  cfqfs /srv/data /mnt/fair\n"
	"  cfqfs -o allow_other,config=/etc/cfqfs/cfqfs.conf /srv/data /mnt/fair\n"
	"  mount -t fuse.cfqfs /srv/data /mnt/fair -o allow_other,slice_idle=0,group_idle=8\n"
	"  fstab:  /srv/data  /mnt/fair  fuse.cfqfs  allow_other,config=/etc/cfqfs/cfqfs.conf  0 0\n"
	"  unmount: fusermount3 -u /mnt/fair\n"
	"\n"
	"Signals: SIGHUP reloads the configuration file: rules, scheduler, tunables, group\n"
	"bounds and max_background change live; depth, device, rotational, ctl_dir, ctl_access,\n"
	"the cache options, xattr, acl, splice and the timeouts wait for the next mount (a warning\n"
	"names them). SIGTERM and SIGINT unmount after answering every queued request.\n"
	"\n"
	"Exit status: 0 after a clean unmount, 1 on bad usage or configuration, 2 if SOURCE or\n"
	"MOUNTPOINT is unusable, 3 if mounting failed.\n";

struct cmdline {
	const char *source;
	const char *mountpoint;
	const char *config_file;
	char *config_owned; /* what config_file points into: the -o config= string, or the
			       absolute path made by absolute_config() */
	bool foreground;
	bool debug;
	bool single_thread;
	bool clone_fd;
	unsigned max_idle_threads;
	unsigned max_threads;
	/* -o KEY=VALUE for the configuration, applied after the file whatever the order. */
	unsigned nr_overrides;
	char *overrides[MAX_FUSE_OPTS];
	/* Options passed through to libfuse, comma-joined later. */
	unsigned nr_fuse_opts;
	char *fuse_opts[MAX_FUSE_OPTS];
};

/* One line on stderr: "cfqfs: WHAT ARG (see cfqfs --help)"; returns status 1. */
static int die_usage(const char *what, const char *arg)
{
	fprintf(stderr, "cfqfs: %s%s%s (see cfqfs --help)\n", what, arg ? " " : "", arg ? arg : "");
	return 1;
}

/* [threads] bound of max_threads= and max_idle_threads= (libfuse's own limit is 100000);
 * opts_error() spells it out */
#define FUSE_THREADS_MAX 10000u

/* A thread count of the FUSE loop, min..FUSE_THREADS_MAX. Returns 0 or -ERANGE. */
static int parse_threads(const char *s, unsigned min, unsigned *out)
{
	char *end;
	unsigned long v;

	if (*s < '0' || *s > '9')
		return -ERANGE;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < min || v > FUSE_THREADS_MAX)
		return -ERANGE;
	*out = (unsigned)v;
	return 0;
}

/* Splits one -o argument on commas (a backslash escapes a comma) and sorts each option. */
static int add_opts(struct cmdline *cl, const char *arg)
{
	char *copy = strdup(arg), *p = copy, *start = copy, *w = copy;

	if (!copy)
		return -ENOMEM;
	for (;; p++) {
		if (*p == '\\' && p[1]) {
			*w++ = *++p;
			continue;
		}
		if (*p != ',' && *p != '\0') {
			*w++ = *p;
			continue;
		}
		bool last = *p == '\0';
		*w = '\0';
		if (*start) {
			char *opt = strdup(start);
			if (!opt)
				goto out_nomem;
			if (!strncmp(opt, "config=", 7)) {
				free(cl->config_owned);
				cl->config_owned = opt;
				cl->config_file = opt + 7;
			} else if (!strcmp(opt, "clone_fd")) {
				cl->clone_fd = true;
				free(opt);
			} else if (!strncmp(opt, "max_idle_threads=", 17)) {
				int bad = parse_threads(opt + 17, 0, &cl->max_idle_threads);

				free(opt);
				if (bad)
					goto out_badnum;
			} else if (!strncmp(opt, "max_threads=", 12)) {
				int bad = parse_threads(opt + 12, 1, &cl->max_threads);

				free(opt);
				if (bad)
					goto out_badnum;
			} else if (!strcmp(opt, "debug")) {
				cl->debug = cl->foreground = true;
				free(opt);
			} else if (cl->nr_overrides + cl->nr_fuse_opts >= MAX_FUSE_OPTS - 1) {
				free(opt);
				goto out_toomany;
			} else {
				/* Decided after the config is known: cfg_set says whether it is ours. */
				cl->overrides[cl->nr_overrides++] = opt;
			}
		}
		if (last)
			break;
		start = w = p + 1;
	}
	free(copy);
	return 0;
out_toomany:
	free(copy);
	return -E2BIG;
out_badnum:
	free(copy);
	return -ERANGE;
out_nomem:
	free(copy);
	return -ENOMEM;
}

static const char *opts_error(int err)
{
	if (err == -ERANGE)
		return "max_threads= must be 1..10000 and max_idle_threads= 0..10000 in -o";
	if (err == -E2BIG)
		return "too many options in -o";
	return "out of memory reading -o";
}

static int parse_cmdline(struct cmdline *cl, int argc, char **argv)
{
	int i, npos = 0, err;
	bool no_more_opts = false;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!no_more_opts && a[0] == '-' && a[1]) {
			if (!strcmp(a, "--")) {
				no_more_opts = true;
			} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
				fputs(usage_text, stdout);
				fputs("\n", stdout);
				fputs(cli_usage_text, stdout);
				exit(0);
			} else if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
				printf("cfqfs %s (libfuse %s)\n", CFQFS_VERSION, fuse_pkgversion());
				exit(0);
			} else if (!strcmp(a, "-f")) {
				cl->foreground = true;
			} else if (!strcmp(a, "-d")) {
				cl->debug = cl->foreground = true;
			} else if (!strcmp(a, "-s")) {
				cl->single_thread = true;
			} else if (!strcmp(a, "-c") || !strcmp(a, "-o")) {
				if (i + 1 >= argc)
					return die_usage("missing argument to option", a);
				if (a[1] == 'c')
					cl->config_file = argv[++i];
				else if ((err = add_opts(cl, argv[++i])) < 0)
					return die_usage(opts_error(err), argv[i]);
			} else if (!strncmp(a, "-o", 2)) {
				if ((err = add_opts(cl, a + 2)) < 0)
					return die_usage(opts_error(err), a + 2);
			} else {
				return die_usage("unknown option", a);
			}
			continue;
		}
		if (npos == 0)
			cl->source = a;
		else if (npos == 1)
			cl->mountpoint = a;
		else
			return die_usage("unexpected argument", a);
		npos++;
	}
	if (npos < 2)
		return die_usage(npos == 0 ? "missing SOURCE and MOUNTPOINT" : "missing MOUNTPOINT",
				 NULL);
	return 0;
}

/*
 * Makes a relative config path absolute (the working directory joined in front): every
 * SIGHUP reads the file again, and by then the daemon runs in / (fuse_daemonize() moves it
 * there, with -f too). Not
 * realpath(): a symbolic link in the path is followed at each reload, as with an absolute
 * path, so re-pointing it and sending SIGHUP works. Returns 0 or -errno (getcwd's, or
 * -ENAMETOOLONG, -ENOMEM); cl is unchanged on failure.
 */
static int absolute_config(struct cmdline *cl)
{
	char cwd[PATH_MAX], *abs;
	int r;

	if (!cl->config_file || cl->config_file[0] == '/')
		return 0;
	if (!getcwd(cwd, sizeof(cwd)))
		return -errno;
	r = asprintf(&abs, "%s/%s", cwd, cl->config_file);
	if (r < 0)
		return -ENOMEM;
	if (r >= PATH_MAX) {
		free(abs);
		return -ENAMETOOLONG;
	}
	free(cl->config_owned);
	cl->config_owned = abs;
	cl->config_file = abs;
	return 0;
}

/*
 * Loads the config file, then the -o overrides. With `collect`, options unknown to cfqfs are
 * appended to cl->fuse_opts for libfuse (start-up); without it they are skipped (reload).
 * Returns 0, or -1 with a one-line message in err.
 */
static int build_config(struct cmdline *cl, struct cfqfs_config *cfg, bool collect, char *err,
			size_t errlen)
{
	char why[CFG_ERR_MAX];
	unsigned i;

	cfg_defaults(cfg);
	if (cl->config_file && cfg_load_file(cfg, cl->config_file, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "%s", why);
		return -1;
	}
	for (i = 0; i < cl->nr_overrides; i++) {
		char *opt = cl->overrides[i], *eq = strchr(opt, '=');
		int r;

		why[0] = '\0';
		if (!strcmp(opt, "no_default_permissions")) {
			snprintf(err, errlen, "no_default_permissions is not supported: cfqfs relies "
					      "on the kernel's permission checks");
			return -1;
		}
		if (eq) {
			*eq = '\0';
			r = cfg_set(cfg, opt, eq + 1, why, sizeof(why));
			*eq = '=';
		} else {
			r = cfg_set(cfg, opt, "true", why, sizeof(why));
		}
		if (r == -ENOENT && !why[0]) {
			if (collect)
				cl->fuse_opts[cl->nr_fuse_opts++] = opt;
			continue;
		}
		if (r < 0) {
			snprintf(err, errlen, "-o %s", why);
			return -1;
		}
	}
	return 0;
}

/* SOURCE must be a directory and MOUNTPOINT must not be inside it (the mount would contain
 * itself). Writes absolute paths into src/mnt. Returns 0 or an exit status. */
static int check_paths(const struct cmdline *cl, char *src, char *mnt)
{
	struct stat st;
	size_t n;

	if (!realpath(cl->source, src) || stat(src, &st) < 0) {
		fprintf(stderr, "cfqfs: SOURCE %s: %s\n", cl->source, strerror(errno));
		return 2;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "cfqfs: SOURCE %s: %s\n", cl->source, strerror(ENOTDIR));
		return 2;
	}
	if (!realpath(cl->mountpoint, mnt) || stat(mnt, &st) < 0) {
		fprintf(stderr, "cfqfs: MOUNTPOINT %s: %s\n", cl->mountpoint, strerror(errno));
		return 2;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "cfqfs: MOUNTPOINT %s: %s\n", cl->mountpoint, strerror(ENOTDIR));
		return 2;
	}
	n = strlen(src);
	if (!strcmp(src, "/") || (!strncmp(mnt, src, n) && (mnt[n] == '\0' || mnt[n] == '/'))) {
		fprintf(stderr, "cfqfs: MOUNTPOINT %s is inside SOURCE %s\n", mnt, src);
		return 2;
	}
	return 0;
}

/*
 * Whether SOURCE is taken as rotational, and why, into *r: rotational= forces it, an emulated
 * device's model decides, else the device probe measures SOURCE (probe.h). Cannot fail.
 */
static void decide_rotational(const struct cfqfs_config *cfg, const char *src,
			      struct probe_report *r)
{
	struct probe_override ov, *given = NULL;
	char emulated[64];

	if (cfg->rotational >= 0) {
		ov = (struct probe_override){
			.rotational = cfg->rotational,
			.skip = "rotational forced by option or configuration",
			.why = "set by rotational= (option or configuration file)",
		};
		given = &ov;
	} else if (cfg->device_enabled) {
		snprintf(emulated, sizeof(emulated), "emulated %s", dev_kind_name(cfg->device.kind));
		ov = (struct probe_override){
			.rotational = cfg->device.kind == DEV_HDD,
			.skip = "emulated device on: its model decides",
			.why = emulated,
		};
		given = &ov;
	}
	probe_device(src, given, r);
}

/*
 * Puts every tunable back to its default on this device, then applies each configured one to
 * every policy that knows it and takes the value, active or not: a cfq tunable given beside
 * scheduler=deadline is in force once .cfqfs/scheduler switches to cfq. The file decides, so
 * a reload leaves no trace of a tunable the file no longer names, nor of one written at run
 * time (.cfqfs/iosched, cfqfs set). Returns 0, or -EINVAL with nothing changed when the
 * active policy refuses a value (cfg_set() made sure some policy takes each).
 */
static int apply_tunables(void *arg, struct sched *sd)
{
	const struct cfqfs_config *cfg = arg;
	enum sched_policy p = sched_policy(sd);

	for (unsigned i = 0; i < cfg->nr_tunables; i++) {
		int r = sched_tunable_validate(p, cfg->tunables[i].name, cfg->tunables[i].value);
		if (r < 0 && r != -ENOENT)
			return r;
	}
	sched_tunables_reset(sd);
	for (unsigned i = 0; i < cfg->nr_tunables; i++)
		for (int q = 0; q < SCHED_POLICY_COUNT; q++)
			(void)sched_tunable_set_in(sd, (enum sched_policy)q, cfg->tunables[i].name,
						   cfg->tunables[i].value);
	return 0;
}

/* SIGHUP: re-read the configuration file and -o options, apply what can change live. */
struct reloader {
	pthread_t thread;
	struct cmdline *cl;	     /* immutable after start */
	struct cfqfs_config *cfg;    /* the running configuration; written by this thread only */
	struct executor *ex;	     /* borrowed */
	struct classifier *cls;	     /* borrowed */
	struct pt_fs *fs;	     /* borrowed */
	struct grp_registry *groups; /* borrowed */
	const char *mnt;	     /* the mount point, absolute (main's buffer) */
	unsigned conn;		     /* our FUSE connection number, valid if conn_err == 0 */
	int conn_err;		     /* -errno from finding it right after mounting */
	atomic_bool stop;
};

static struct exec_limits exec_limits_of(const struct cfqfs_config *cfg)
{
	return (struct exec_limits){
		.queue_limit = cfg->queue_limit,
		.queue_bytes = (uint64_t)cfg->queue_limit_mb << 20,
		.uid_queue_limit = cfg->uid_queue_limit,
		.uid_queue_bytes = (uint64_t)cfg->uid_queue_limit_mb << 20,
	};
}

static int switch_policy(void *arg, struct sched *sd)
{
	const struct cfqfs_config *cfg = arg;

	return sched_switch(sd, cfg->policy, clk_now());
}

/*
 * Sets the live connection's max_background (and its congestion threshold) to `bg` through
 * fusectl. Returns 0 or -errno, logged with the reason; the caller keeps the old value then.
 */
static int reload_background(const struct reloader *rl, unsigned bg)
{
	unsigned conn = rl->conn;
	int r = rl->conn_err;

	if (r < 0) {
		LOG_WARN("reload: max_background stays %u: the FUSE mount on %s was not found in "
			 "/proc/self/mountinfo when mounting (%s)", rl->cfg->max_background,
			 rl->mnt, strerror(-r));
		return r;
	}
	r = fusectl_set_background(FUSECTL_DIR, conn, bg);
	if (r < 0) {
		LOG_WARN("reload: max_background stays %u: cannot write %s/%u/max_background "
			 "(%s%s); it takes effect at the next mount", rl->cfg->max_background,
			 FUSECTL_DIR, conn, strerror(-r),
			 r == -ENOENT ? ": is fusectl mounted there?" : "");
		return r;
	}
	LOG_INFO("reload: max_background %u, congestion_threshold %u on FUSE connection %u", bg,
		 fusectl_congestion_for(bg), conn);
	return 0;
}

/*
 * The keys that only a mount sets up (the executor, the emulated device, the kernel's cache
 * mode, the control directory), in the order a reload names them. Each is compared and put
 * back whole, except ctl_dir, a string (bytes after its NUL may differ), and the device,
 * compared on what its model is built from. A new mount-time key needs one line here.
 */
enum mount_key_kind { MOUNT_KEY_PLAIN, MOUNT_KEY_STRING, MOUNT_KEY_DEVICE };

struct mount_key {
	const char *name;
	size_t off, size; /* of the member of struct cfqfs_config */
	enum mount_key_kind kind;
};

#define MOUNT_KEY(key, member, kind)                                                      \
	{ key, offsetof(struct cfqfs_config, member),                                      \
	  sizeof(((struct cfqfs_config *)0)->member), kind }

static const struct mount_key mount_keys[] = {
	MOUNT_KEY("depth", depth, MOUNT_KEY_PLAIN),
	MOUNT_KEY("device", device, MOUNT_KEY_DEVICE),
	MOUNT_KEY("rotational", rotational, MOUNT_KEY_PLAIN),
	MOUNT_KEY("ctl_dir", ctl_dir, MOUNT_KEY_STRING),
	MOUNT_KEY("ctl_access", ctl_private, MOUNT_KEY_PLAIN),
	MOUNT_KEY("direct_io", direct_io, MOUNT_KEY_PLAIN),
	MOUNT_KEY("kernel_cache", kernel_cache, MOUNT_KEY_PLAIN),
	MOUNT_KEY("writeback_cache", writeback_cache, MOUNT_KEY_PLAIN),
	MOUNT_KEY("xattr", xattr, MOUNT_KEY_PLAIN),
	MOUNT_KEY("acl", acl, MOUNT_KEY_PLAIN),
	MOUNT_KEY("splice", splice, MOUNT_KEY_PLAIN),
	MOUNT_KEY("attr_timeout", attr_timeout, MOUNT_KEY_PLAIN),
	MOUNT_KEY("entry_timeout", entry_timeout, MOUNT_KEY_PLAIN),
	MOUNT_KEY("negative_timeout", negative_timeout, MOUNT_KEY_PLAIN),
};

static bool device_changed(const struct cfqfs_config *cur, const struct cfqfs_config *next)
{
	const struct dev_params *a = &cur->device, *b = &next->device;

	return cur->device_enabled != next->device_enabled ||
	       (cur->device_enabled && (a->kind != b->kind || a->heads != b->heads ||
					a->placement != b->placement || a->bandwidth != b->bandwidth));
}

/*
 * Where `next` differs from the running `cur` in a mount-time key, names the key in buf
 * (comma-separated, "" if none); then puts every running value back into next, so that the
 * configuration kept after the reload is what is in effect.
 */
static void keep_mount_time_keys(const struct cfqfs_config *cur, struct cfqfs_config *next,
				 char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(mount_keys) / sizeof(mount_keys[0]); i++) {
		const struct mount_key *k = &mount_keys[i];
		const char *run = (const char *)cur + k->off;
		char *kept = (char *)next + k->off;
		bool changed;

		switch (k->kind) {
		case MOUNT_KEY_STRING:
			changed = strcmp(run, kept) != 0;
			break;
		case MOUNT_KEY_DEVICE:
			changed = device_changed(cur, next);
			next->device_enabled = cur->device_enabled;
			break;
		default:
			changed = memcmp(run, kept, k->size) != 0;
			break;
		}
		if (changed && n < len)
			n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "", k->name);
		memcpy(kept, run, k->size);
	}
}

static void reload(struct reloader *rl)
{
	static struct cfqfs_config next; /* large; used by the reload thread only */
	char err[CFG_ERR_MAX + 64], desc[1024];
	int r;

	if (build_config(rl->cl, &next, false, err, sizeof(err))) {
		LOG_ERR("reload: %s; keeping the running configuration", err);
		return;
	}
	r = cls_reload(rl->cls, &next);
	if (r < 0) {
		LOG_ERR("reload: classification rules rejected (%s); keeping the running "
			"configuration", strerror(-r));
		return;
	}
	/* Always, not only when the file's policy differs from the last file's: a write to
	 * .cfqfs/scheduler may have switched since, and the file's tunables below belong to the
	 * file's policy. Switching to the active policy is a no-op. */
	r = exec_with_sched(rl->ex, switch_policy, &next);
	if (r < 0) {
		LOG_ERR("reload: cannot switch to %s: %s", sched_policy_name(next.policy),
			strerror(-r));
		next.policy = rl->cfg->policy;
	}
	r = exec_with_sched(rl->ex, apply_tunables, &next);
	if (r < 0)
		LOG_ERR("reload: a tunable was refused: %s", strerror(-r));
	struct exec_limits lim = exec_limits_of(&next);
	exec_set_limits(rl->ex, &lim);
	pt_set_open_limit(rl->fs, next.open_limit, next.uid_open_limit);
	grp_set_expiry(rl->groups, (uint64_t)next.group_expire_ms * 1000000u);
	keep_mount_time_keys(rl->cfg, &next, desc, sizeof(desc));
	if (desc[0])
		LOG_WARN("reload: %s: set when mounting; the running values stay until the next "
			 "mount", desc);
	if (next.max_background != rl->cfg->max_background &&
	    reload_background(rl, next.max_background) < 0)
		next.max_background = rl->cfg->max_background; /* what is in effect; retried */
	*rl->cfg = next;
	cfg_describe(rl->cfg, desc, sizeof(desc));
	LOG_INFO("configuration reloaded: %s", desc);
}

static void *reload_main(void *arg)
{
	struct reloader *rl = arg;
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGHUP);
	while (sigwait(&set, &sig) == 0 && !atomic_load(&rl->stop))
		reload(rl);
	return NULL;
}

static int copy_info(void *arg, struct sched *sd)
{
	sched_get_info(sd, arg);
	return 0;
}

/*
 * libfuse ends its loop threads with pthread_cancel(), and glibc loads libgcc_s (to unwind
 * them) at the first cancel. A daemon out of descriptors by then (one per inode the kernel
 * caches: a big tree walk is enough) cannot open it and aborts at unmount ("libgcc_s.so.1
 * must be installed for pthread_cancel to work"). Load it now, while descriptors are free:
 * glibc's own dlopen then finds it loaded and opens nothing. Best effort.
 */
static void preload_unwinder(void)
{
	if (!dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_NODELETE))
		LOG_WARN("cannot load libgcc_s.so.1 (%s): out of descriptors at unmount, the "
			 "daemon would abort", dlerror());
}

/* Start-up line: what the scheduler decided (cfq: IOPS or time mode, hw_tag) and the control
 * directory. */
static void log_sched_info(struct executor *ex, unsigned depth, const char *ctl_dir)
{
	struct sched_info si;
	char mode[48] = "";

	exec_with_sched(ex, copy_info, &si);
	if (si.policy == SCHED_POLICY_CFQ)
		snprintf(mode, sizeof(mode), "%s mode, hw_tag %d, ", si.iops_mode ? "IOPS" : "time",
			 si.hw_tag);
	LOG_INFO("scheduler %s: %sdepth %u (issued by %s); control directory %s%s",
		 sched_policy_name(si.policy), mode, depth,
		 exec_issues_inline(ex) ? "FUSE threads and workers" : "workers only",
		 ctl_dir[0] ? ctl_dir : "(disabled)", ctl_dir[0] ? "/" : "");
}

static int build_fuse_args(struct fuse_args *args, const struct cmdline *cl, const char *src)
{
	char *fsname;
	int r = 0;

	if (fuse_opt_add_arg(args, "cfqfs") < 0)
		return -ENOMEM;
	if (cl->debug && fuse_opt_add_arg(args, "-d") < 0)
		return -ENOMEM;
	if (fuse_opt_add_arg(args, "-o") < 0 ||
	    fuse_opt_add_arg(args, "default_permissions,subtype=cfqfs") < 0)
		return -ENOMEM;
	/* fsname is the first column of /proc/mounts; commas in SOURCE must be escaped. */
	fsname = malloc(2 * strlen(src) + 8);
	if (!fsname)
		return -ENOMEM;
	char *w = fsname + sprintf(fsname, "fsname=");
	for (const char *p = src; *p; p++) {
		if (*p == ',' || *p == '\\')
			*w++ = '\\';
		*w++ = *p;
	}
	*w = '\0';
	if (fuse_opt_add_arg(args, "-o") < 0 || fuse_opt_add_arg(args, fsname) < 0)
		r = -ENOMEM;
	free(fsname);
	for (unsigned i = 0; r == 0 && i < cl->nr_fuse_opts; i++)
		if (fuse_opt_add_arg(args, "-o") < 0 || fuse_opt_add_arg(args, cl->fuse_opts[i]) < 0)
			r = -ENOMEM;
	return r;
}

int main(int argc, char **argv)
{
	struct cmdline cl = { .max_idle_threads = 10, .max_threads = 10 };
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct cfqfs_config cfg;
	struct pt_options popts;
	struct executor *ex = NULL;
	struct grp_registry *groups = NULL;
	struct classifier *cls = NULL;
	struct pt_fs *fs = NULL;
	struct fuse_session *se = NULL;
	char src[PATH_MAX], mnt[PATH_MAX], desc[1024], device_info[1024];
	int status = 1, err;

	if (cli_is_command(argc, argv)) /* cfqfs stat|set MOUNTPOINT ... (cli.h) */
		return cli_main(argc, argv);
	/*
	 * A signal waits until the daemon can act on it: SIGHUP (reload) until the reloader's
	 * sigwait takes it, SIGTERM and SIGINT (a clean unmount) until the session loop runs,
	 * where libfuse's handlers end it. Blocked here, before any thread exists, so every
	 * thread inherits the mask (only the loop's own threads get TERM and INT back).
	 * Unblocked, a SIGHUP 5 ms into the start-up killed the daemon (exit 129, no mount).
	 * (fuse_daemonize()'s fork drops what is pending in the parent: there, a signal sent
	 * before it is lost rather than acted on.)
	 */
	sigset_t early;
	sigemptyset(&early);
	sigaddset(&early, SIGHUP);
	sigaddset(&early, SIGTERM);
	sigaddset(&early, SIGINT);
	pthread_sigmask(SIG_BLOCK, &early, NULL);
	if (parse_cmdline(&cl, argc, argv))
		goto out;
	err = absolute_config(&cl);
	if (err) {
		fprintf(stderr, "cfqfs: configuration file %s: %s\n", cl.config_file,
			strerror(-err));
		goto out;
	}
	if (build_config(&cl, &cfg, true, desc, sizeof(desc))) {
		fprintf(stderr, "cfqfs: %s\n", desc);
		goto out;
	}
	status = check_paths(&cl, src, mnt);
	if (status)
		goto out;
	status = 1;
	log_setup(cl.debug ? LOG_LVL_DEBUG : LOG_LVL_INFO, false);

	struct probe_report probe;
	decide_rotational(&cfg, src, &probe);
	probe_format(&probe, device_info, sizeof(device_info));
	struct exec_options eopts = {
		.depth = cfg.depth,
		.limits = exec_limits_of(&cfg),
		.policy = cfg.policy,
		.rotational = probe.rotational,
		.device = cfg.device_enabled ? &cfg.device : NULL,
		/* with a thread to spare when `depth` requests hang on SOURCE (executor.h) */
		.inline_io = !cl.single_thread && cl.max_threads > cfg.depth,
	};
	ex = exec_create(&eopts, &err);
	if (!ex) {
		fprintf(stderr, "cfqfs: cannot create the I/O executor: %s\n", strerror(-err));
		goto out;
	}
	err = exec_with_sched(ex, apply_tunables, &cfg);
	if (err) {
		fprintf(stderr, "cfqfs: cannot apply the scheduler tunables: %s\n", strerror(-err));
		goto out_exec;
	}

	groups = grp_create(ex);
	if (!groups) {
		fprintf(stderr, "cfqfs: out of memory\n");
		goto out_exec;
	}
	grp_set_expiry(groups, (uint64_t)cfg.group_expire_ms * 1000000u);
	cls = cls_create(&cfg, src, groups, &err);
	if (!cls) {
		fprintf(stderr, "cfqfs: cannot set up classification: %s\n", strerror(-err));
		goto out_groups;
	}

	popts = (struct pt_options){
		.source = src,
		.attr_timeout = cfg.attr_timeout,
		.entry_timeout = cfg.entry_timeout,
		.negative_timeout = cfg.negative_timeout,
		.kernel_cache = cfg.kernel_cache,
		.writeback_cache = cfg.writeback_cache,
		.direct_io = cfg.direct_io,
		.xattr = cfg.xattr,
		.acl = cfg.acl,
		.flock = true,
		.posix_lock = true,
		.ctl_dir = cfg.ctl_dir,
		.ctl_private = cfg.ctl_private,
		.device_info = device_info,
		.splice = cfg.splice,
		.open_limit = cfg.open_limit,
		.uid_open_limit = cfg.uid_open_limit,
		.max_background = cfg.max_background,
		.cls = cls,
		.groups = groups,
	};
	preload_unwinder();
	fs = pt_create(&popts, ex, &err);
	if (!fs) {
		fprintf(stderr, "cfqfs: SOURCE %s: %s\n", src, strerror(-err));
		status = 2;
		goto out_cls;
	}
	if (build_fuse_args(&args, &cl, src) < 0) {
		fprintf(stderr, "cfqfs: out of memory\n");
		goto out_pt;
	}
	se = fuse_session_new(&args, pt_ops(), sizeof(*pt_ops()), fs);
	if (!se) {
		/* libfuse has printed which option it rejected. */
		goto out_pt;
	}
	if (fuse_set_signal_handlers(se) != 0)
		goto out_session;
	if (fuse_session_mount(se, mnt) != 0) {
		status = 3;
		goto out_signals;
	}
	/* Our connection is the topmost FUSE mount on mnt now; a later mount over it (or a
	 * stale one under it) must not be the one a reload retunes. */
	unsigned conn = 0;
	int conn_err = fusectl_find("/proc/self/mountinfo", mnt, &conn);
	if (fuse_daemonize(cl.foreground) != 0) {
		status = 3;
		goto out_unmount;
	}
	log_setup(cl.debug ? LOG_LVL_DEBUG : LOG_LVL_INFO, !cl.foreground);
	/* (SIGHUP, SIGTERM and SIGINT are still blocked: see main's start. SIGHUP stays so in
	 * every thread, for the reloader's sigwait, instead of unmounting by libfuse's
	 * handler.) */
	err = exec_start(ex);
	if (err) {
		LOG_ERR("cannot start I/O workers: %s", strerror(-err));
		goto out_unmount;
	}
	struct reloader rl = { .cl = &cl, .cfg = &cfg, .ex = ex, .cls = cls, .fs = fs,
				.groups = groups, .mnt = mnt, .conn_err = conn_err, .conn = conn };
	atomic_init(&rl.stop, false);
	bool reloader_started = pthread_create(&rl.thread, NULL, reload_main, &rl) == 0;
	if (!reloader_started)
		LOG_WARN("cannot start the SIGHUP reload thread: reload disabled");
	cfg_describe(&cfg, desc, sizeof(desc));
	LOG_INFO("mounted %s on %s: %s; rotational=%s (%s)", src, mnt, desc,
		 probe.rotational ? "yes" : "no", probe.why);
	log_sched_info(ex, cfg.depth, cfg.ctl_dir);

	/* From here a SIGTERM or SIGINT, also one sent during the start-up, ends the loop. */
	sigdelset(&early, SIGHUP);
	pthread_sigmask(SIG_UNBLOCK, &early, NULL);
	if (cl.single_thread) {
		err = fuse_session_loop(se);
	} else {
		struct fuse_loop_config *lcfg = fuse_loop_cfg_create();

		if (!lcfg) {
			LOG_ERR("cannot allocate the FUSE loop configuration");
			err = -ENOMEM;
		} else {
			fuse_loop_cfg_set_clone_fd(lcfg, cl.clone_fd);
			fuse_loop_cfg_set_idle_threads(lcfg, cl.max_idle_threads);
			fuse_loop_cfg_set_max_threads(lcfg, cl.max_threads);
			err = fuse_session_loop_mt(se, lcfg);
			fuse_loop_cfg_destroy(lcfg);
		}
	}
	if (reloader_started) {
		atomic_store(&rl.stop, true);
		pthread_kill(rl.thread, SIGHUP);
		pthread_join(rl.thread, NULL);
	}
	/* Serve and answer every queued request before the mount goes away, and every blocked
	 * lock request. */
	exec_destroy(ex);
	ex = NULL;
	pt_quiesce(fs);
	/* libfuse's handlers end the loop with the signal's number as its "error": SIGTERM and
	 * SIGINT are how a daemon is asked to stop, not failures. */
	if (err == SIGTERM || err == SIGINT || err == -SIGTERM || err == -SIGINT)
		err = 0;
	/*
	 * The kernel ends a connection with ENODEV on /dev/fuse, which libfuse takes as a normal
	 * end. A read that the end (an unmount, or an abort in /sys/fs/fuse/connections) meets
	 * while requests are still arriving can fail with ECONNABORTED instead, which libfuse
	 * 3.14 reports as a device error: seen on kernel 6.18 at an unmount right after a process
	 * closed 32 files (their releases still in flight). The connection is gone either way
	 * and every queued request was answered above, so it is the same clean end.
	 */
	if (err == -ECONNABORTED || err == ECONNABORTED) {
		LOG_INFO("connection closed by the kernel while a request was being read "
			 "(unmount or abort)");
		err = 0;
	}
	status = err ? 1 : 0;
	if (err)
		LOG_ERR("session ended with error: %s", strerror(err < 0 ? -err : err));

out_unmount:
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out_session:
	fuse_session_destroy(se);
out_pt:
	pt_destroy(fs);
out_cls:
	cls_destroy(cls);
out_groups:
	grp_destroy(groups);
out_exec:
	exec_destroy(ex);
out:
	fuse_opt_free_args(&args);
	free(cl.config_owned);
	for (unsigned i = 0; i < cl.nr_overrides; i++)
		free(cl.overrides[i]);
	return status;
}
