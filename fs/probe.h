/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * probe.h - facts about SOURCE's backing device: the rotational flag its block device reports,
 * and a short measurement at mount time of what a seek really costs there (in the spirit of
 * BFQ's peak-rate estimation), since the flag is not the disk: a virtio disk backed by the
 * host's page cache says rotational=1 while its seeks cost nothing, and CFQ would then idle
 * for nothing.
 *
 * Three layers, each usable alone: probe_rotational() reads /sys; probe_measure() times direct
 * reads of one file of SOURCE (I/O and the clock); probe_decide() turns measured costs into a
 * verdict (pure: no I/O, no clock). probe_device() runs them in order and keeps the outcome in
 * a struct probe_report, which probe_format() renders for .cfqfs/device.
 *
 * No state, no lock: every function may be called from any thread.
 */
#ifndef CFQFS_PROBE_H
#define CFQFS_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sched.h"

/*
 * Whether the block device under `path` spins: reads /sys/dev/block/MAJ:MIN/queue/rotational,
 * walking from a partition to its disk and from a device-mapper or md device to the devices
 * under it (rotational if any of them is). Returns 1, 0, or -ENODEV when `path` is not on a
 * block device (tmpfs, overlay, network filesystems), -errno if `path` cannot be stat'ed.
 * `what` (optional) receives the device that decided, e.g. "vda" or "dm-0 -> sda".
 */
int probe_rotational(const char *path, char *what, size_t whatlen);

/* The fewest timed reads of each kind that probe_decide() accepts [reads]. */
#define PROBE_SAMPLES_MIN 8u

/* What probe_measure() found. */
struct probe_costs {
	int reported;	     /* the flag of SOURCE's block device: 1, 0, or -1 if it has none */
	uint64_t file_size;  /* [bytes] of the file that was read */
	sched_ns seq_cost;   /* [ns] median time of one sequential 4 KiB read */
	sched_ns rand_cost;  /* [ns] median time of one random 4 KiB read */
	unsigned seq_reads;  /* [reads] timed sequential reads behind seq_cost */
	unsigned rand_reads; /* [reads] timed random reads behind rand_cost */
	sched_ns elapsed;    /* [ns] the whole measurement, the search for a file included */
};

/* Room for one reason of probe_measure() or probe_decide() [bytes]. */
#define PROBE_REASON_MAX 192
/* Room for a report's final reason, which quotes one of those [bytes]. */
#define PROBE_WHY_MAX 320

/* What probe_decide() concluded. */
struct probe_verdict {
	bool rotational;	     /* seeks cost time: treat SOURCE as rotational (CFQ idles) */
	char why[PROBE_REASON_MAX]; /* one line for people, no newline */
};

/*
 * Times direct (O_DIRECT: the page cache bypassed) 4 KiB reads of the largest regular file
 * (2 MiB or more, without holes) found in a bounded breadth-first walk of `src` (1000
 * entries at most, no symlink followed, no other filesystem entered): random reads spread over
 * the file, then sequential ones from its start, each kind stopped by a count (64) and by a
 * time budget (250 ms). Fills every field of *c but `reported`, which it leaves as it was.
 * Returns 0, or the reason it could not measure, with a line for people in `why` (whylen
 * may be 0; left alone on success): -ENOENT (no such file: "SOURCE empty"), -EINVAL (the
 * cache cannot be bypassed: O_DIRECT refused, or SOURCE on tmpfs, whose cache is its
 * storage), -EIO (a short read) or the -errno of a read that failed, -EAGAIN (the file
 * changed between the walk and the open), the -errno of opening SOURCE,
 * -ENOMEM. *c is unspecified on failure. Reads the clock (clk_now) and SOURCE (with O_NOATIME
 * when allowed); writes nothing.
 */
int probe_measure(const char *src, struct probe_costs *c, char *why, size_t whylen);

/*
 * Decides from measured costs whether seeks cost anything, hence whether the device is to be
 * treated as rotational, and writes the reason into v->why. Pure. Returns 0; -EAGAIN when
 * either kind has fewer than PROBE_SAMPLES_MIN reads (v->why says so; v->rotational is then
 * false and meaningless: the caller falls back to what it knew before).
 */
int probe_decide(const struct probe_costs *c, struct probe_verdict *v);

/* How the measurement went. */
enum probe_state {
	PROBE_SKIPPED, /* not run, or could not measure: the reported flag decides */
	PROBE_REFUSED, /* measured, too few reads to decide: the reported flag decides */
	PROBE_DONE,    /* measured and decided */
};

/* Everything .cfqfs/device shows. Invariant: `costs` is meaningful iff state != SKIPPED. */
struct probe_report {
	int reported;		     /* probe_rotational(): 1, 0 or -errno (-ENODEV: none) */
	char device[64];	     /* the block device behind `reported`, "" if none */
	enum probe_state state;
	char skipped[PROBE_REASON_MAX]; /* why the probe was skipped or refused, "" when done */
	struct probe_costs costs;    /* the measurement */
	bool rotational;	     /* the verdict in effect for the mount */
	char why[PROBE_WHY_MAX];     /* how that verdict was reached, one line */
};

/* A verdict the caller already has (rotational= forced, an emulated device). */
struct probe_override {
	bool rotational; /* the value to use */
	const char *skip; /* why no measurement, e.g. "rotational forced by option" */
	const char *why;  /* the verdict's reason */
};

/*
 * Fills *r for SOURCE `src`: always the reported flag; then, with `ov` NULL, the measurement
 * and its verdict, falling back to the reported flag (or, without a block device, to
 * "rotational", CFQ's classic behaviour) when the probe is skipped or refused; with `ov`, its
 * verdict and no measurement (borrowed strings, copied). Cannot fail: every failure is a
 * reason in *r. Takes well under a second; instant when SOURCE is empty.
 */
void probe_device(const char *src, const struct probe_override *ov, struct probe_report *r);

/*
 * Renders *r as the text of .cfqfs/device (key=value lines, each ending in a newline) into
 * buf. Returns the length it needs (without the NUL), as snprintf does; buf holds a
 * NUL-terminated, possibly truncated text when that is >= len. Cannot fail.
 */
int probe_format(const struct probe_report *r, char *buf, size_t len);

#endif
