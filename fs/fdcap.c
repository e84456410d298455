/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fdcap.c - the descriptor reserve (see fdcap.h). */
#include "fdcap.h"

#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <unistd.h>

/* [descriptor number] the first one refused; INT_MAX: none (no limit known) */
static _Atomic int cap = INT_MAX;

unsigned fdcap_init(void)
{
	struct rlimit rl;
	rlim_t reserve;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
	    rl.rlim_cur > INT_MAX) {
		atomic_store(&cap, INT_MAX);
		return 0;
	}
	reserve = rl.rlim_cur / FDCAP_RESERVE_DIV;
	if (reserve < FDCAP_RESERVE_MIN)
		reserve = FDCAP_RESERVE_MIN;
	if (reserve > FDCAP_RESERVE_MAX)
		reserve = FDCAP_RESERVE_MAX;
	/* a limit below the reserve still lets the first few through: the daemon's own
	 * descriptors (/dev/fuse, SOURCE) take the lowest numbers anyway */
	if (reserve >= rl.rlim_cur)
		reserve = rl.rlim_cur / 2;
	atomic_store(&cap, (int)(rl.rlim_cur - reserve));
	return (unsigned)reserve;
}

int fdcap_keep(int fd)
{
	if (fd < 0 || fd < atomic_load_explicit(&cap, memory_order_relaxed))
		return fd;
	close(fd);
	errno = EMFILE;
	return -1;
}
