/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "clock.h"

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
