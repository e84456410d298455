/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_config.c - libFuzzer target for the configuration loader (fs/config.c).
 *
 * Input: a config file, then optionally a NUL byte and "key=value" overrides separated by
 * '\n' (as -o would pass them). The file goes through cfg_load_file() via a memfd (no disk),
 * the overrides through cfg_set(). Checks the header's promises: a failure leaves the config
 * unchanged and writes a message; a success keeps every value in range, so cfg_cg_rules()'s
 * rule set passes cg_rules_check().
 * Inputs holding "@include" are skipped: libconfig would open whatever path they name
 * (the daemon reads only its administrator's file, so that is not an attack surface).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cg_rules.h"
#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_config(const struct cfqfs_config *c)
{
	struct cg_rule rules[CFG_MAX_RULES];
	char desc[1024];

	if (c->depth < 1 || c->depth > 256 || c->nr_rules > CFG_MAX_RULES ||
	    c->nr_tunables > CFG_MAX_TUNABLES)
		abort();
	struct cg_rules set = { .v = rules, .nr = cfg_cg_rules(c, rules), .group_by = c->group_by };
	if (set.nr != c->nr_rules)
		abort();
	/* every rule the loader accepts must pass the classifier's check (a rule path without a
	 * leading '/' once did not: crashes/config-rule-path-without-slash) */
	if (cg_rules_check(&set, NULL) != 0)
		abort();
	cfg_describe(c, desc, sizeof(desc));
	if (strnlen(desc, sizeof(desc)) == sizeof(desc))
		abort();
}

/* Runs f and checks the "unchanged on failure, message on failure" contract. */
static int checked(int rc, const struct cfqfs_config *before, const struct cfqfs_config *after,
		   const char *err)
{
	if (rc != 0 && rc != -ENOENT && memcmp(before, after, sizeof(*before)) != 0)
		abort();
	if (rc == -EINVAL && err[0] == '\0')
		abort();
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	static char path[64];
	static struct cfqfs_config c, before;
	char err[CFG_ERR_MAX];

	if (memmem(data, size, "@include", 8))
		return 0;
	if (fd < 0) {
		fd = memfd_create("fuzz_config", MFD_CLOEXEC);
		if (fd < 0)
			abort();
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	const uint8_t *nul = memchr(data, '\0', size);
	size_t flen = nul ? (size_t)(nul - data) : size;
	if (ftruncate(fd, 0) != 0 || pwrite(fd, data, flen, 0) != (ssize_t)flen)
		abort();

	cfg_defaults(&c);
	check_config(&c);
	before = c;
	err[0] = '\0';
	int rc = cfg_load_file(&c, path, err, sizeof(err));
	checked(rc, &before, &c, err);
	check_config(&c);
	if (!nul)
		return 0;

	/* Overrides: "key=value" lines after the NUL (a line without '=' has an empty value). */
	char line[512];
	const uint8_t *p = nul + 1, *end = data + size;
	while (p < end) {
		const uint8_t *eol = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((eol ? eol : end) - p);
		if (n >= sizeof(line))
			n = sizeof(line) - 1;
		memcpy(line, p, n);
		line[n] = '\0'; /* an embedded NUL just ends the key or value early */
		char *eq = strchr(line, '=');
		const char *val = "";
		if (eq) {
			*eq = '\0';
			val = eq + 1;
		}
		before = c;
		err[0] = '\0';
		checked(cfg_set(&c, line, val, err, sizeof(err)), &before, &c, err);
		check_config(&c);
		p = eol ? eol + 1 : end;
	}
	return 0;
}
