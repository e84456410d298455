/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "fusectl.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"

#define FUSECTL_BG_MAX 65535u /* the kernel's bound on both knobs (fs/fuse/control.c) */

unsigned fusectl_congestion_for(unsigned bg)
{
	return bg > 1 ? bg * 3 / 4 : 1;
}

/*
 * One mountinfo line: "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - TYPE SOURCE
 * SUPEROPTS". True with *conn when it is a fuse mount on `mnt`. Modifies `line`.
 */
static bool line_matches(char *line, const char *mnt, unsigned *conn)
{
	char *save = NULL, *f[5], *tok;
	unsigned maj, min;

	line[strcspn(line, "\n")] = '\0';
	for (int i = 0; i < 5; i++) {
		f[i] = strtok_r(i ? NULL : line, " ", &save);
		if (!f[i])
			return false;
	}
	/* the optional fields end at the lone "-"; the type follows it */
	while ((tok = strtok_r(NULL, " ", &save)) && strcmp(tok, "-"))
		;
	tok = tok ? strtok_r(NULL, " ", &save) : NULL;
	if (!tok || (strcmp(tok, "fuse") && strncmp(tok, "fuse.", 5)))
		return false;
	if (sscanf(f[2], "%u:%u", &maj, &min) != 2 || maj >= 4096 || min >= (1u << 20))
		return false;
	ctl_unescape_field(f[4]); /* the kernel's octal escapes, as io.stat's */
	if (strcmp(f[4], mnt))
		return false;
	*conn = maj << 20 | min;
	return true;
}

int fusectl_find(const char *mountinfo, const char *mnt, unsigned *conn)
{
	FILE *f = fopen(mountinfo, "re");
	char *line = NULL;
	size_t cap = 0;
	bool found = false;
	unsigned c;
	int r = 0;

	if (!f)
		return -errno;
	errno = 0;
	while (getline(&line, &cap, f) >= 0) {
		/* later lines are mounted later: the last match is the one on top */
		if (line_matches(line, mnt, &c)) {
			*conn = c;
			found = true;
		}
	}
	if (ferror(f))
		r = errno ? -errno : -EIO;
	else if (!found)
		r = -ENOENT;
	free(line);
	fclose(f);
	return r;
}

/* Writes the decimal `v` to DIR/CONN/KNOB. 0 or -errno. */
static int put_knob(const char *dir, unsigned conn, const char *knob, unsigned v)
{
	char path[256], text[16];
	int fd, n, r = 0;

	snprintf(path, sizeof(path), "%s/%u/%s", dir, conn, knob);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = snprintf(text, sizeof(text), "%u\n", v);
	if (write(fd, text, (size_t)n) != n)
		r = errno ? -errno : -EIO;
	if (close(fd) < 0 && !r)
		r = -errno;
	return r;
}

/* Reads the decimal value of DIR/CONN/KNOB. 0 or -errno (-EINVAL if it is not a number). */
static int get_knob(const char *dir, unsigned conn, const char *knob, unsigned *v)
{
	char path[256], text[16];
	ssize_t n;
	int fd, r = 0;

	snprintf(path, sizeof(path), "%s/%u/%s", dir, conn, knob);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, text, sizeof(text) - 1);
	if (n < 0) {
		r = -errno;
	} else {
		char *end;
		unsigned long x;

		text[n] = '\0';
		errno = 0;
		x = strtoul(text, &end, 10);
		if (end == text || errno || x > UINT_MAX || (*end && *end != '\n'))
			r = -EINVAL;
		else
			*v = (unsigned)x;
	}
	close(fd);
	return r;
}

int fusectl_set_background(const char *dir, unsigned conn, unsigned bg)
{
	unsigned cong = fusectl_congestion_for(bg);
	char path[256];
	int r;

	if (bg < 1 || bg > FUSECTL_BG_MAX)
		return -EINVAL;
	snprintf(path, sizeof(path), "%s/%u/max_background", dir, conn);
	if (access(path, W_OK) < 0)
		return -errno;
	/* Each is accepted on its own; a threshold briefly off its ratio only changes when
	 * the kernel starts cutting readahead. If the threshold cannot be written, the old
	 * max_background goes back, so the caller, which then keeps its old value, stays in
	 * step with the kernel. */
	unsigned old = 0;
	bool known = get_knob(dir, conn, "max_background", &old) == 0;
	r = put_knob(dir, conn, "max_background", bg);
	if (r == 0) {
		r = put_knob(dir, conn, "congestion_threshold", cong);
		if (r < 0 && known)
			(void)put_knob(dir, conn, "max_background", old);
	}
	return r;
}
