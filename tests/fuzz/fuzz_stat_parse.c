/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_stat_parse.c - libFuzzer target for the /proc/PID/stat and /proc/PID/status parsers.
 * On success the outputs must honour the header: comm NUL-terminated inside CG_COMM_MAX and
 * present in the text, nice within -20..19.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cg_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct cg_stat st;
	struct cg_status ss;

	if (cg_parse_stat(text, size, &st) == 0) {
		size_t n = strnlen(st.comm, sizeof(st.comm));
		if (n == sizeof(st.comm))
			abort();
		if (n && memmem(text, size, st.comm, n) == NULL)
			abort();
		if (st.nice < -20 || st.nice > 19)
			abort();
	}
	(void)cg_parse_status(text, size, &ss);
	return 0;
}
