/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_cgroup_parse.c - libFuzzer target for the /proc/PID/cgroup parser (cgroup/cg_parse.h).
 *
 * Checks the header's promises on every input, not only "no crash": a present span lies inside
 * the text and holds no '\n' or NUL and starts with '/'; a copied path is NUL-terminated, fits
 * and equals the span it came from. A broken promise aborts, which libFuzzer reports.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cg_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_span(const struct cg_span *s, const char *text, size_t len)
{
	if (!s->present)
		return;
	if (s->off > len || s->len > len - s->off || s->len == 0)
		abort();
	if (text[s->off] != '/')
		abort();
	if (memchr(text + s->off, '\n', s->len) || memchr(text + s->off, '\0', s->len))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct cg_proc_cgroup pc;
	char out[CG_NAME_MAX];

	if (cg_parse_proc_cgroup(text, size, &pc) == 0) {
		check_span(&pc.v2, text, size);
		check_span(&pc.blkio, text, size);
		check_span(&pc.systemd, text, size);
		for (int sel = CG_SELECT_AUTO; sel <= CG_SELECT_BLKIO; sel++) {
			for (int io = 0; io <= 1; io++) {
				struct cg_span span;
				enum cg_hier hier;

				if (cg_select_path(&pc, (enum cg_select)sel, io, &span, &hier) != 0)
					continue;
				check_span(&span, text, size);
				if (!span.present)
					abort();
			}
		}
	}
	/* The one-call form, with a buffer small enough that -ENAMETOOLONG is reachable. */
	size_t outsz = size ? (size_t)data[0] % sizeof(out) + 1 : sizeof(out);
	memset(out, 'x', sizeof(out));
	enum cg_hier hier;
	if (cg_parse_cgroup_path(text, size, CG_SELECT_AUTO, size & 1, out, outsz, &hier) == 0) {
		size_t n = strnlen(out, outsz);
		if (n == outsz || out[0] != '/' || memmem(text, size, out, n) == NULL)
			abort();
		(void)cg_path_is_namespaced(out);
	}
	return 0;
}
