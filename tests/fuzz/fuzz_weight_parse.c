/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_weight_parse.c - libFuzzer target for the cgroup weight-file parser. The first input
 * byte picks the file kind and the device (so "MAJ:MIN W" override lines are reachable); the
 * rest is the file text. A success must land on the scheduler's scale, 10..1000; a failure
 * must leave *weight unchanged.
 */
#include <stdint.h>
#include <stdlib.h>
#include <sys/sysmacros.h>

#include "cg_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	enum cg_weight_file f = (enum cg_weight_file)(data[0] % CG_WFILE_COUNT);
	/* 0 = default line only; else 8:0 or 259:(bits), devices a test host really has. */
	unsigned pick = data[0] / CG_WFILE_COUNT;
	dev_t dev = pick == 0 ? 0 : (pick & 1) ? makedev(8, pick >> 1) : makedev(259, pick >> 1);
	uint32_t w = 0xdeadbeef;
	int rc = cg_parse_weight(f, (const char *)data + 1, size - 1, dev, &w);

	if (rc == 0 && (w < 10 || w > 1000))
		abort();
	if (rc != 0 && w != 0xdeadbeef)
		abort();
	if (cg_weight_file_name(f) == NULL)
		abort();
	return 0;
}
