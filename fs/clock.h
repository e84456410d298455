/* SPDX-License-Identifier: GPL-2.0-or-later */
/* clock.h - the daemon's one clock. clock.c is the only file that reads a clock. */
#ifndef CFQFS_CLOCK_H
#define CFQFS_CLOCK_H

#include <time.h>

#include "sched.h"

/* CLOCK_MONOTONIC now [ns]. Cannot fail. */
sched_ns clk_now(void);

/* The absolute CLOCK_MONOTONIC timespec for `t` [ns] (for pthread_cond_timedwait with a
 * monotonic condattr). Cannot fail. */
struct timespec clk_to_timespec(sched_ns t);

/* Sleeps until CLOCK_MONOTONIC reaches `t` [ns] (restarts after signals). Cannot fail. */
void clk_sleep_until(sched_ns t);

#endif
