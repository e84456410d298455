/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "clock.h"

#include <errno.h>

sched_ns clk_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (sched_ns)ts.tv_sec * 1000000000ull + (sched_ns)ts.tv_nsec;
}

struct timespec clk_to_timespec(sched_ns t)
{
	struct timespec ts = {
		.tv_sec = (time_t)(t / 1000000000ull),
		.tv_nsec = (long)(t % 1000000000ull),
	};
	return ts;
}

void clk_sleep_until(sched_ns t)
{
	struct timespec ts = clk_to_timespec(t);

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}
