/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * device.h - a pure, deterministic model of a storage device: it turns one I/O (file, offset,
 * length, direction) issued at `now` into an absolute completion time, from the I/O's size and
 * its distance from where the serving head stopped last.
 *
 * Users: the discrete-event simulator (scheduler/sim.c) with simulated time, and the executor in
 * fs/ that emulates a device on top of the page cache with the real monotonic clock (it sleeps
 * until the returned completion time before replying). The model reads no clock and draws no
 * random numbers: the same sequence of calls gives the same answers.
 *
 * Locking: none inside. Callers serialise every call on one struct dev_model (the executor holds
 * its own lock around dev_issue()).
 *
 * Address space. Each file gets its own region of a virtual disk so that sequential access
 * within a file is contiguous on the "platter":
 *     position(file, offset) = region_start(file) + offset
 *     region_start(file)     = slot(file) * region_bytes,  slot in [0, capacity / region_bytes)
 * and `placement` says where a file's slot is:
 *   DEV_PLACE_SPREAD (default): slot(file) = Fibonacci hashing of the file id (multiply by
 *     2^64/phi, keep the high bits scaled to the slot count). With the defaults (capacity 4 TiB,
 *     region 1 GiB: 4096 slots) consecutive file ids land about 0.62 x capacity apart, so
 *     switching files costs a long seek, and up to ~1000 distinct small ids never share a slot
 *     (three-gap theorem). This suits ids that carry no locality (the dev/ino mix of real
 *     mounts) and files that live in unrelated parts of a filesystem.
 *   DEV_PLACE_DIR: slot(file) = file mod slot count: consecutive ids in adjacent regions, as the
 *     files of one directory created one after the other (a benchmark's job files) sit on
 *     ext4/xfs: the allocator keeps a directory's inodes in one block/allocation group and takes
 *     their data from there on, so such files follow each other on the platter. Switching
 *     between file i and i+1 is then a seek over one region (~1 ms with the defaults: little
 *     more than track-to-track) plus rotation, not a long seek. Ids are taken modulo the slot
 *     count, so ids that differ by a multiple of it share a slot.
 * A file larger than region_bytes simply runs into the next slot's addresses; nothing breaks,
 * the positions just stop being exclusive.
 *
 * HDD (kind DEV_HDD). Service time of one I/O on a head:
 *     distance d = position - head position (the end of the previous I/O on that head)
 *     d == 0                      : transfer only (perfectly sequential: no seek, no rotation)
 *     0 < d < track_bytes forward : d / bandwidth + transfer (the platter turns past the gap)
 *     otherwise                   : seek(|d|) + rotation + transfer
 *     seek(x)   = settle + (full_stroke - settle) * sqrt(min(x, capacity) / capacity)
 *                 (settle = track-to-track; uniform random pairs average settle + 8/15 of the
 *                 span: 0.8 + 14.2 * 0.533 = 8.4 ms with the defaults)
 *     rotation  = time for the platter to bring the target angle under the head after the seek:
 *                 target angle = (position mod track_bytes) / track_bytes of a turn, platter
 *                 angle = (time mod period) / period; a deterministic function of position and
 *                 time that averages half a rotation (4.17 ms at 7200 rpm) over random access
 *     transfer  = len / bandwidth
 * track_bytes defaults to what passes under the head in one rotation (bandwidth * period).
 *
 * Heads (raid:N). N independent heads that can each serve any I/O, like read balancing over an
 * N-way mirror: the I/O goes to the head that can start it earliest (max(now, free_at)); among
 * heads that can start equally early, the one with the shortest seek, then the lowest index.
 * A lone sequential stream therefore stays on one head, while N streams spread over N heads.
 * An I/O issued while every head is busy waits for the first one to free.
 *
 * SSD (kind DEV_SSD). `heads` internal units (channels/dies: the device depth), each serving one
 * I/O at a time: service = read_latency or write_latency + len / bandwidth, independent of the
 * position. The unit that frees first takes the I/O (ties: lowest index). Defaults: 100 us read,
 * 30 us write (the write lands in the device cache), 250 MB/s per unit, 16 units.
 *
 * Flush (len == 0: fsync/fdatasync). Costs flush_ns on the head that serves it and leaves the
 * head position unchanged (the journal/cache flush is modelled as a fixed cost).
 */
#ifndef CFQFS_DEVICE_H
#define CFQFS_DEVICE_H

#include <stdbool.h>
#include <stdint.h>

#include "sched.h" /* sched_ns */

enum dev_kind {
	DEV_HDD = 0,
	DEV_SSD = 1,
};

/* Where files sit on the virtual disk (see "Address space" above). */
enum dev_placement {
	DEV_PLACE_SPREAD = 0, /* hashed: unrelated files, far apart */
	DEV_PLACE_DIR = 1,    /* by id: consecutive ids adjacent (one directory) */
};

#define DEV_MAX_HEADS 256u

/*
 * Parameters of a model. Fill with dev_params_default() or dev_params_parse(), then override.
 * Invariants checked by dev_params_validate(): heads in [1, DEV_MAX_HEADS]; bandwidth > 0;
 * capacity >= region_bytes > 0; placement a dev_placement; hdd: rpm > 0, settle <= full_stroke.
 */
struct dev_params {
	enum dev_kind kind;
	unsigned heads;		  /* [count] hdd: independent heads (raid:N); ssd: internal units */
	uint64_t bandwidth;	  /* [bytes/s] media transfer rate of one head / unit */
	uint64_t capacity;	  /* [bytes] virtual disk size: seek span, region placement modulus */
	uint64_t region_bytes;	  /* [bytes] spacing of file regions (one slot per file) */
	sched_ns settle;	  /* [ns] hdd: shortest (track-to-track) seek */
	sched_ns full_stroke;	  /* [ns] hdd: seek across the whole capacity */
	uint32_t rpm;		  /* [1/min] hdd: spindle speed */
	uint64_t track_bytes;	  /* [bytes] hdd: bytes per rotation; 0 = bandwidth * period */
	sched_ns read_latency;	  /* [ns] ssd: fixed cost of a read */
	sched_ns write_latency;	  /* [ns] ssd: fixed cost of a write */
	sched_ns flush;		  /* [ns] cost of a flush (len 0) */
	enum dev_placement placement; /* file slots: hashed (default) or by id */
};

/* Fills *p with the defaults of `kind` (hdd: 1 head, 120 MB/s, 0.8..15 ms seek, 7200 rpm,
 * 4 ms flush; ssd: 16 units, 250 MB/s each, 100/30 us, 1 ms flush). Cannot fail. */
void dev_params_default(enum dev_kind kind, struct dev_params *p);

/*
 * Parses a model name: "hdd", "ssd", "raid:N" (N hdd heads), "ssd:N" (N units). Returns 0 and
 * fills *p with that kind's defaults, or -EINVAL (p unchanged).
 */
int dev_params_parse(const char *name, struct dev_params *p);

/* Returns 0 if *p satisfies the invariants above, else -EINVAL. Cannot fail otherwise. */
int dev_params_validate(const struct dev_params *p);

/* A short name for logs: "hdd", "ssd". Cannot fail. */
const char *dev_kind_name(enum dev_kind kind);

struct dev_model;

/* Creates a model with every head idle at position 0 and free at time 0. Copies *p. Returns NULL
 * on invalid parameters or allocation failure. The caller owns the result (dev_destroy()). */
struct dev_model *dev_create(const struct dev_params *p);
/* Frees dm (NULL is fine). */
void dev_destroy(struct dev_model *dm);

/* Forgets all head state (positions 0, free at 0, counters cleared). Cannot fail. */
void dev_reset(struct dev_model *dm);

/* How many I/Os the device serves at once: heads for hdd, units for ssd. Cannot fail. */
unsigned dev_depth(const struct dev_model *dm);
/* True for DEV_HDD (what /sys/block/X/queue/rotational would say). Cannot fail. */
bool dev_rotational(const struct dev_model *dm);
/* The parameters the model was created with. Cannot fail. */
const struct dev_params *dev_params_get(const struct dev_model *dm);

/* Where file/offset lives on the virtual disk [bytes]. Cannot fail. */
uint64_t dev_position(const struct dev_model *dm, uint64_t file, uint64_t offset);

/*
 * Issues one I/O at `now` [ns] and returns its absolute completion time [ns]. len == 0 is a flush.
 * The chosen head is busy until that time and ends at position(file, offset + len). An I/O
 * issued while its head is busy starts when the head frees (callers that keep at most
 * dev_depth() I/Os in flight never wait). Cannot fail.
 */
sched_ns dev_issue(struct dev_model *dm, uint64_t file, uint64_t offset, uint64_t len,
		   int is_write, sched_ns now);

/* Breakdown of the last dev_issue() [ns]: start + seek + rotation + transfer (+ flush) ==
 * complete. */
struct dev_cost {
	unsigned head;	    /* head / unit that served it */
	sched_ns start;	    /* when the head started on it (>= the `now` passed) */
	sched_ns seek;	    /* hdd arm movement (or the forward skip of a short gap) */
	sched_ns rotation;  /* hdd rotational latency; ssd: the fixed latency */
	sched_ns transfer;  /* len / bandwidth */
	sched_ns flush;	    /* flush cost (len == 0) */
	sched_ns complete;  /* absolute completion time */
};
/* The breakdown of the last dev_issue() (all zero before the first). Cannot fail. */
const struct dev_cost *dev_last_cost(const struct dev_model *dm);

/* Cumulative counters since create/reset. */
struct dev_stats {
	uint64_t ios;	    /* I/Os issued (flushes included) */
	uint64_t bytes;	    /* [bytes] */
	uint64_t seeks;	    /* I/Os that paid a seek (non-zero, non-short-forward distance) */
	sched_ns busy;	    /* [ns] sum over heads of service time */
	sched_ns seek_time; /* [ns] sum of seek + rotation */
};
/* Copies the counters. Cannot fail. */
void dev_get_stats(const struct dev_model *dm, struct dev_stats *out);

/* The earliest time at which some head is free [ns]. Cannot fail. */
sched_ns dev_next_free(const struct dev_model *dm);

#endif /* CFQFS_DEVICE_H */
