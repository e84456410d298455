/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cg_parse.c - pure parsers over the text of /proc and cgroupfs files (contract: cg_parse.h).
 * No I/O, no allocation. Every loop is bounded by the caller's length; no function reads past
 * text + len or relies on a terminating NUL.
 */
#include "cg_parse.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "sched.h"

_Static_assert(SCHED_WEIGHT_MIN == 10 && SCHED_WEIGHT_MAX == 1000,
	       "the weight mapping in cg_parse.h assumes the scheduler's 10..1000 scale");
_Static_assert(SCHED_CLASS_RT == 1 && SCHED_CLASS_BE == 2 && SCHED_CLASS_IDLE == 3,
	       "sched_class must number as the kernel's IOPRIO_CLASS_*");

#define IOPRIO_CLASS_SHIFT 13
#define IOPRIO_CLASS_NONE 0

/* ---------------------------------------------------------------------------------------- */
/* Small helpers over (pointer, length) */

static bool has_nul(const char *s, size_t n)
{
	return memchr(s, '\0', n) != NULL;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/*
 * Parses an unsigned decimal at s[0..n) covering the whole range. Rejects empty, signs,
 * leading '+', and values above `max`. Returns 0, -EINVAL (not a number), -ERANGE (> max).
 */
static int parse_u64(const char *s, size_t n, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	bool big = false;

	if (n == 0)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (!is_digit(s[i]))
			return -EINVAL;
		if (v > (UINT64_MAX - 9) / 10)
			big = true;
		else
			v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (big || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

/* Signed variant: an optional leading '-', magnitude bounded by `maxabs`. */
static int parse_i64(const char *s, size_t n, uint64_t maxabs, int64_t *out)
{
	bool neg = n > 0 && s[0] == '-';
	uint64_t v;
	int rc = parse_u64(s + neg, n - neg, maxabs, &v);

	if (rc)
		return rc;
	*out = neg ? -(int64_t)v : (int64_t)v;
	return 0;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t';
}

/* Next whitespace-separated token of s[*pos..n), skipping ' ' and '\t' (not '\n'). */
static bool next_token(const char *s, size_t n, size_t *pos, const char **tok, size_t *tlen)
{
	size_t i = *pos;

	while (i < n && is_space(s[i]))
		i++;
	if (i >= n || s[i] == '\n')
		return false;
	size_t b = i;
	while (i < n && !is_space(s[i]) && s[i] != '\n')
		i++;
	*tok = s + b;
	*tlen = i - b;
	*pos = i;
	return true;
}

static bool tok_eq(const char *tok, size_t tlen, const char *lit)
{
	size_t l = strlen(lit);

	return tlen == l && memcmp(tok, lit, l) == 0;
}

/* true when the comma-separated list s[0..n) has an item equal to `name`. */
static bool list_has(const char *s, size_t n, const char *name)
{
	size_t i = 0;

	while (i <= n) {
		size_t b = i;
		while (i < n && s[i] != ',')
			i++;
		if (tok_eq(s + b, i - b, name))
			return true;
		i++;
	}
	return false;
}

/* ---------------------------------------------------------------------------------------- */
/* /proc/PID/cgroup */

static int set_span(struct cg_span *sp, size_t off, size_t len)
{
	if (sp->present)
		return -EINVAL; /* the same hierarchy listed twice: not a kernel-written file */
	sp->off = off;
	sp->len = len;
	sp->present = true;
	return 0;
}

int cg_parse_proc_cgroup(const char *text, size_t len, struct cg_proc_cgroup *out)
{
	struct cg_proc_cgroup pc = { 0 };
	size_t pos = 0;

	if (!text || len == 0 || text[len - 1] != '\n' || has_nul(text, len))
		return -EINVAL;

	while (pos < len) {
		const char *line = text + pos;
		const char *nl = memchr(line, '\n', len - pos);
		size_t llen = (size_t)(nl - line); /* nl exists: the text ends with '\n' */
		const char *c1, *c2;
		uint64_t id;
		int rc;

		if (llen == 0 || llen > CG_LINE_MAX)
			return -EINVAL;
		c1 = memchr(line, ':', llen);
		if (!c1)
			return -EINVAL;
		c2 = memchr(c1 + 1, ':', llen - (size_t)(c1 + 1 - line));
		if (!c2)
			return -EINVAL;
		rc = parse_u64(line, (size_t)(c1 - line), INT_MAX, &id);
		if (rc)
			return -EINVAL;

		const char *ctl = c1 + 1;
		size_t ctl_len = (size_t)(c2 - ctl);
		const char *path = c2 + 1;
		size_t path_len = llen - (size_t)(path - line);
		size_t path_off = (size_t)(path - text);

		if (path_len == 0 || path[0] != '/')
			return -EINVAL;
		for (size_t i = 0; i < path_len; i++) {
			unsigned char ch = (unsigned char)path[i];
			if (ch < 0x20 || ch == 0x7f)
				return -EINVAL;
		}
		if (id == 0) {
			if (ctl_len != 0)
				return -EINVAL;
			rc = set_span(&pc.v2, path_off, path_len);
		} else {
			pc.nr_v1++;
			rc = 0;
			if (list_has(ctl, ctl_len, "blkio") || list_has(ctl, ctl_len, "io"))
				rc = set_span(&pc.blkio, path_off, path_len);
			else if (list_has(ctl, ctl_len, "name=systemd"))
				rc = set_span(&pc.systemd, path_off, path_len);
		}
		if (rc)
			return rc;
		pos += llen + 1;
	}
	*out = pc;
	return 0;
}

int cg_select_path(const struct cg_proc_cgroup *pc, enum cg_select sel, bool unified_has_io,
		   struct cg_span *span, enum cg_hier *hier)
{
	const struct cg_span *pick = NULL;
	enum cg_hier h = CG_HIER_V2;

	switch (sel) {
	case CG_SELECT_V2:
		pick = &pc->v2;
		break;
	case CG_SELECT_BLKIO:
		pick = &pc->blkio;
		h = CG_HIER_BLKIO;
		break;
	case CG_SELECT_AUTO:
	default:
		if (pc->v2.present && (unified_has_io || pc->nr_v1 == 0)) {
			pick = &pc->v2;
		} else if (pc->blkio.present) {
			pick = &pc->blkio;
			h = CG_HIER_BLKIO;
		} else if (pc->systemd.present) {
			pick = &pc->systemd;
			h = CG_HIER_SYSTEMD;
		} else {
			pick = &pc->v2;
		}
		break;
	}
	if (!pick->present)
		return -ENOENT;
	*span = *pick;
	*hier = h;
	return 0;
}

int cg_parse_cgroup_path(const char *text, size_t len, enum cg_select sel, bool unified_has_io,
			 char *out, size_t outsz, enum cg_hier *hier)
{
	struct cg_proc_cgroup pc;
	struct cg_span sp;
	enum cg_hier h;
	int rc;

	rc = cg_parse_proc_cgroup(text, len, &pc);
	if (rc)
		return rc;
	rc = cg_select_path(&pc, sel, unified_has_io, &sp, &h);
	if (rc)
		return rc;
	if (sp.len >= outsz)
		return -ENAMETOOLONG;
	memcpy(out, text + sp.off, sp.len);
	out[sp.len] = '\0';
	if (hier)
		*hier = h;
	return 0;
}

bool cg_path_is_namespaced(const char *path)
{
	return path[0] == '/' && path[1] == '.' && path[2] == '.' &&
	       (path[3] == '\0' || path[3] == '/');
}

/* ---------------------------------------------------------------------------------------- */
/* /proc/PID/stat */

int cg_parse_stat(const char *text, size_t len, struct cg_stat *out)
{
	const char *open, *close = NULL;
	size_t pos;
	int64_t v;
	uint64_t u;
	int rc;

	if (!text || len == 0 || has_nul(text, len))
		return -EINVAL;
	open = memchr(text, '(', len);
	if (!open)
		return -EINVAL;
	for (size_t i = len; i > (size_t)(open - text); i--) {
		if (text[i - 1] == ')') {
			close = text + i - 1;
			break;
		}
	}
	if (!close || open == text || open[-1] != ' ')
		return -EINVAL;

	/* field 1: pid */
	rc = parse_u64(text, (size_t)(open - 1 - text), INT_MAX, &u);
	if (rc)
		return -EINVAL;
	out->pid = (pid_t)u;

	/* field 2: comm */
	size_t clen = (size_t)(close - open - 1);
	if (clen >= sizeof(out->comm))
		return -ENAMETOOLONG;
	memcpy(out->comm, open + 1, clen);
	out->comm[clen] = '\0';

	/* fields 3..22 follow, space-separated; field k is token k - 3 */
	pos = (size_t)(close + 1 - text);
	for (int field = 3; field <= 22; field++) {
		const char *tok;
		size_t tlen;

		if (!next_token(text, len, &pos, &tok, &tlen))
			return -EINVAL;
		switch (field) {
		case 3:
			if (tlen != 1)
				return -EINVAL;
			out->state = tok[0];
			break;
		case 4:
			if (parse_u64(tok, tlen, INT_MAX, &u))
				return -EINVAL;
			out->ppid = (pid_t)u;
			break;
		case 19:
			if (parse_i64(tok, tlen, 20, &v) || v < -20 || v > 19)
				return -EINVAL;
			out->nice = (int)v;
			break;
		case 22:
			if (parse_u64(tok, tlen, UINT64_MAX, &u))
				return -EINVAL;
			out->start_time = u;
			break;
		default:
			break;
		}
	}
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* /proc/PID/status */

/* A signal mask as /proc/PID/status prints it: 1..16 hex digits, alone on the line. */
static int parse_sigmask(const char *s, size_t n, uint64_t *out)
{
	const char *tok, *extra;
	size_t tlen, elen, pos = 0;
	uint64_t v = 0;

	if (!next_token(s, n, &pos, &tok, &tlen) || tlen > 16 ||
	    next_token(s, n, &pos, &extra, &elen))
		return -EINVAL;
	for (size_t i = 0; i < tlen; i++) {
		char c = tok[i];
		unsigned d;

		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else
			return -EINVAL;
		v = v << 4 | d;
	}
	*out = v;
	return 0;
}

/* Parses up to 4 decimal ids after "Key:" into ids[]; at least one required. */
static int parse_ids(const char *s, size_t n, uint32_t ids[4])
{
	size_t pos = 0;
	int k = 0;
	const char *tok;
	size_t tlen;

	while (k < 4 && next_token(s, n, &pos, &tok, &tlen)) {
		uint64_t u;
		if (parse_u64(tok, tlen, UINT32_MAX, &u))
			return -EINVAL;
		ids[k++] = (uint32_t)u;
	}
	if (k == 0)
		return -EINVAL;
	for (; k < 4; k++)
		ids[k] = ids[0];
	return 0;
}

int cg_parse_status(const char *text, size_t len, struct cg_status *out)
{
	struct cg_status st;
	bool have_tgid = false;
	size_t pos = 0;

	if (!text || len == 0 || has_nul(text, len))
		return -EINVAL;
	memset(&st, 0xff, sizeof(st));
	st.sig_pending = 0;
	while (pos < len) {
		const char *line = text + pos;
		const char *nl = memchr(line, '\n', len - pos);
		size_t llen = nl ? (size_t)(nl - line) : len - pos;
		const char *colon = memchr(line, ':', llen);

		pos += llen + 1;
		if (!colon)
			continue;
		size_t klen = (size_t)(colon - line);
		const char *val = colon + 1;
		size_t vlen = llen - klen - 1;
		uint32_t ids[4];

		if (tok_eq(line, klen, "Tgid")) {
			const char *tok;
			size_t tlen, p = 0;
			uint64_t u;
			if (!next_token(val, vlen, &p, &tok, &tlen) ||
			    parse_u64(tok, tlen, INT_MAX, &u))
				return -EINVAL;
			st.tgid = (pid_t)u;
			have_tgid = true;
		} else if (tok_eq(line, klen, "Uid")) {
			if (parse_ids(val, vlen, ids))
				return -EINVAL;
			for (int i = 0; i < 4; i++)
				st.uid[i] = (uid_t)ids[i];
		} else if (tok_eq(line, klen, "Gid")) {
			if (parse_ids(val, vlen, ids))
				return -EINVAL;
			for (int i = 0; i < 4; i++)
				st.gid[i] = (gid_t)ids[i];
		} else if (tok_eq(line, klen, "SigPnd") || tok_eq(line, klen, "ShdPnd")) {
			uint64_t mask;
			if (parse_sigmask(val, vlen, &mask))
				return -EINVAL;
			st.sig_pending |= mask;
		}
	}
	if (!have_tgid)
		return -EINVAL;
	*out = st;
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Weights */

static const char *const wfile_names[CG_WFILE_COUNT] = {
	[CG_WFILE_IO_BFQ] = "io.bfq.weight",
	[CG_WFILE_IO] = "io.weight",
	[CG_WFILE_BLKIO_BFQ] = "blkio.bfq.weight",
	[CG_WFILE_BLKIO] = "blkio.weight",
};

const char *cg_weight_file_name(enum cg_weight_file f)
{
	if ((unsigned)f >= CG_WFILE_COUNT)
		return NULL;
	return wfile_names[f];
}

uint32_t cg_weight_from_io(uint32_t w)
{
	uint32_t x, r;

	if (w < 1 || w > 10000)
		return 0;
	/* round(sqrt(100 w)): r = floor(sqrt(x)); round up when x - r^2 > r, i.e. x > (r+1/2)^2
	 * (x and r are integers, so x - r^2 > r + 1/4 <=> x - r^2 > r). x <= 10^6: no overflow. */
	x = 100 * w;
	r = 0;
	for (uint32_t bit = 1u << 10; bit; bit >>= 1) {
		if ((r | bit) * (r | bit) <= x)
			r |= bit;
	}
	if (x - r * r > r)
		r++;
	if (r < SCHED_WEIGHT_MIN)
		r = SCHED_WEIGHT_MIN;
	if (r > SCHED_WEIGHT_MAX)
		r = SCHED_WEIGHT_MAX;
	return r;
}

uint32_t cg_weight_from_bfq(uint32_t w)
{
	if (w < 1 || w > 10000)
		return 0;
	if (w < SCHED_WEIGHT_MIN)
		return SCHED_WEIGHT_MIN;
	if (w > SCHED_WEIGHT_MAX)
		return SCHED_WEIGHT_MAX;
	return w;
}

/* Raw value -> scheduler weight for file f; -ERANGE outside the file's range. */
static int map_weight(enum cg_weight_file f, uint64_t raw, uint32_t *weight)
{
	uint32_t w = 0;

	switch (f) {
	case CG_WFILE_IO:
		w = raw <= 10000 ? cg_weight_from_io((uint32_t)raw) : 0;
		break;
	case CG_WFILE_IO_BFQ:
	case CG_WFILE_BLKIO_BFQ:
		w = raw <= 10000 ? cg_weight_from_bfq((uint32_t)raw) : 0;
		break;
	case CG_WFILE_BLKIO:
		w = (raw >= SCHED_WEIGHT_MIN && raw <= SCHED_WEIGHT_MAX) ? (uint32_t)raw : 0;
		break;
	default:
		return -EINVAL;
	}
	if (!w)
		return -ERANGE;
	*weight = w;
	return 0;
}

/* Parses "MAJ:MIN" into major/minor. */
static int parse_devno(const char *s, size_t n, unsigned *maj, unsigned *min)
{
	const char *c = memchr(s, ':', n);
	uint64_t a, b;

	if (!c || parse_u64(s, (size_t)(c - s), UINT32_MAX, &a) ||
	    parse_u64(c + 1, n - (size_t)(c + 1 - s), UINT32_MAX, &b))
		return -EINVAL;
	*maj = (unsigned)a;
	*min = (unsigned)b;
	return 0;
}

int cg_parse_weight(enum cg_weight_file f, const char *text, size_t len, dev_t dev,
		    uint32_t *weight)
{
	bool keyed = f == CG_WFILE_IO || f == CG_WFILE_IO_BFQ;
	bool have_default = false, have_dev = false;
	uint64_t def = 0, devw = 0, u;
	size_t pos = 0;
	int rc;

	if ((unsigned)f >= CG_WFILE_COUNT || !text || len == 0 || has_nul(text, len))
		return -EINVAL;

	while (pos < len) {
		const char *line = text + pos;
		const char *nl = memchr(line, '\n', len - pos);
		size_t llen = nl ? (size_t)(nl - line) : len - pos;
		const char *t1, *t2, *t3;
		size_t l1, l2, l3, p = 0;

		pos += llen + 1;
		if (!next_token(line, llen, &p, &t1, &l1))
			return -EINVAL; /* blank line */
		bool two = next_token(line, llen, &p, &t2, &l2);
		if (two && next_token(line, llen, &p, &t3, &l3))
			return -EINVAL;
		(void)t3;
		(void)l3;

		if (!two) {
			/* a bare number: the only line of a v1 file or an old io.bfq.weight */
			if (have_default || pos < len)
				return -EINVAL;
			rc = parse_u64(t1, l1, UINT64_MAX, &u);
			if (rc)
				return rc;
			def = u;
			have_default = true;
			continue;
		}
		if (!keyed)
			return -EINVAL;
		rc = parse_u64(t2, l2, UINT64_MAX, &u);
		if (rc)
			return rc;
		if (tok_eq(t1, l1, "default")) {
			if (have_default)
				return -EINVAL;
			def = u;
			have_default = true;
		} else {
			unsigned maj, min;
			if (parse_devno(t1, l1, &maj, &min))
				return -EINVAL;
			/* every per-device value must be in range, used or not */
			uint32_t tmp;
			rc = map_weight(f, u, &tmp);
			if (rc)
				return rc;
			if (dev != 0 && major(dev) == maj && minor(dev) == min) {
				devw = u;
				have_dev = true;
			}
		}
	}
	if (!have_default)
		return -EINVAL;
	return map_weight(f, have_dev ? devw : def, weight);
}

/* ---------------------------------------------------------------------------------------- */
/* ioprio */

int cg_ioprio_decode(int ioprio, int nice, uint8_t *ioclass, uint8_t *level)
{
	int cls = ioprio >= 0 ? (ioprio >> IOPRIO_CLASS_SHIFT) & 7 : -1;
	int data = ioprio >= 0 ? ioprio & 0x1fff : 0;

	switch (cls) {
	case IOPRIO_CLASS_NONE:
		if (nice < -20)
			nice = -20;
		if (nice > 19)
			nice = 19;
		*ioclass = SCHED_CLASS_BE;
		*level = (uint8_t)((nice + 20) / 5);
		return 0;
	case SCHED_CLASS_RT:
	case SCHED_CLASS_BE:
		*ioclass = (uint8_t)cls;
		*level = (uint8_t)(data & 7);
		return 0;
	case SCHED_CLASS_IDLE:
		*ioclass = SCHED_CLASS_IDLE;
		*level = SCHED_LEVELS - 1;
		return 0;
	default:
		*ioclass = SCHED_CLASS_BE;
		*level = SCHED_LEVEL_NORM;
		return -EINVAL;
	}
}

/* ---------------------------------------------------------------------------------------- */
/* /proc/self/mountinfo */

/* Copies a mountinfo field, undoing the kernel's octal escapes (\ooo). */
static int unescape(const char *s, size_t n, char *out, size_t outsz)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '\\' && i + 3 < n && s[i + 1] >= '0' && s[i + 1] <= '3' &&
		    s[i + 2] >= '0' && s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
			c = (char)(((s[i + 1] - '0') << 6) | ((s[i + 2] - '0') << 3) | (s[i + 3] - '0'));
			i += 3;
		}
		if (c == '\0')
			return -EINVAL;
		if (o + 1 >= outsz)
			return -ENAMETOOLONG;
		out[o++] = c;
	}
	out[o] = '\0';
	return 0;
}

static int take_mount(struct cg_mount *m, bool *rooted, const char *root, size_t rlen,
		      const char *dir, size_t dlen)
{
	struct cg_mount tmp;
	int rc;

	if (*rooted)
		return 0; /* already have a mount of the whole hierarchy */
	rc = unescape(root, rlen, tmp.root, sizeof(tmp.root));
	if (rc)
		return rc;
	rc = unescape(dir, dlen, tmp.dir, sizeof(tmp.dir));
	if (rc)
		return rc;
	if (tmp.root[0] != '/' || tmp.dir[0] != '/')
		return -EINVAL;
	bool is_root = strcmp(tmp.root, "/") == 0;
	if (m->dir[0] == '\0' || is_root) {
		*m = tmp;
		*rooted = is_root;
	}
	return 0;
}

int cg_parse_mountinfo(const char *text, size_t len, struct cg_mounts *out)
{
	struct cg_mounts ms;
	bool v2_rooted = false, blkio_rooted = false;
	size_t pos = 0;
	int rc;

	if (!text || has_nul(text, len))
		return -EINVAL;
	ms.v2.dir[0] = ms.v2.root[0] = '\0';
	ms.blkio.dir[0] = ms.blkio.root[0] = '\0';

	while (pos < len) {
		const char *line = text + pos;
		const char *nl = memchr(line, '\n', len - pos);
		size_t llen = nl ? (size_t)(nl - line) : len - pos;
		const char *tok[6] = { 0 }, *t, *fstype = NULL, *super = NULL;
		size_t tl[6] = { 0 }, l, fl = 0, sl = 0, p = 0;
		int k = 0;

		pos += llen + 1;
		/* fields 1..6, then optional fields up to "-", then fstype, source, super options */
		while (k < 6 && next_token(line, llen, &p, &tok[k], &tl[k]))
			k++;
		if (k < 6)
			continue; /* not a mount line we understand; other fs are not our business */
		while (next_token(line, llen, &p, &t, &l) && !tok_eq(t, l, "-"))
			;
		if (next_token(line, llen, &p, &fstype, &fl) && next_token(line, llen, &p, &t, &l))
			next_token(line, llen, &p, &super, &sl); /* after the source field */
		if (!fstype)
			continue;
		bool v2 = tok_eq(fstype, fl, "cgroup2");
		bool v1 = tok_eq(fstype, fl, "cgroup");
		if (!v2 && !v1)
			continue;
		if (v1 && (!super || !list_has(super, sl, "blkio")))
			continue;
		rc = take_mount(v2 ? &ms.v2 : &ms.blkio, v2 ? &v2_rooted : &blkio_rooted, tok[3],
				tl[3], tok[4], tl[4]);
		if (rc)
			return rc;
	}
	*out = ms;
	return 0;
}

int cg_resolve_dir(const struct cg_mount *m, const char *path, char *out, size_t outsz)
{
	size_t rlen, plen = strlen(path);
	const char *rest;
	int n;

	if (m->dir[0] == '\0')
		return -ENOENT;
	if (path[0] != '/' || cg_path_is_namespaced(path))
		return -EINVAL;
	/* every component must be a plain name: no "", ".", ".." (a trailing '/' is allowed) */
	for (const char *c = path + 1; *c;) {
		const char *e = strchr(c, '/');
		size_t cl = e ? (size_t)(e - c) : strlen(c);
		if ((cl == 0 && e) || (cl == 1 && c[0] == '.') ||
		    (cl == 2 && c[0] == '.' && c[1] == '.'))
			return -EINVAL;
		c += cl + (e ? 1 : 0);
	}
	rlen = strlen(m->root);
	while (rlen > 1 && m->root[rlen - 1] == '/')
		rlen--;
	if (rlen == 1) {
		rest = path;
	} else {
		if (plen < rlen || memcmp(path, m->root, rlen) != 0 ||
		    (path[rlen] != '\0' && path[rlen] != '/'))
			return -ENOENT;
		rest = path + rlen;
	}
	n = snprintf(out, outsz, "%s%s", m->dir, strcmp(rest, "/") == 0 ? "" : rest);
	if (n < 0 || (size_t)n >= outsz)
		return -ENAMETOOLONG;
	return 0;
}

bool cg_controllers_has(const char *text, size_t len, const char *name)
{
	size_t pos = 0;
	const char *tok;
	size_t tlen;

	while (pos < len) {
		if (text[pos] == '\n') {
			pos++;
			continue;
		}
		if (!next_token(text, len, &pos, &tok, &tlen))
			continue;
		if (tok_eq(tok, tlen, name))
			return true;
	}
	return false;
}

/* ---------------------------------------------------------------------------------------- */
/* Names */

uint64_t cg_name_hash(const char *name)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a 64 offset basis */

	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		h ^= *p;
		h *= 0x100000001b3ull; /* FNV-1a 64 prime */
	}
	return h;
}

void cg_name_fit(const char *name, char *out, size_t outsz)
{
	size_t n = strlen(name);

	if (n < outsz) {
		memcpy(out, name, n + 1);
		return;
	}
	/* prefix of outsz - 18 bytes, '~', 16 hex digits, NUL: exactly outsz bytes */
	size_t keep = outsz - 18;
	memcpy(out, name, keep);
	snprintf(out + keep, 18, "~%016" PRIx64, cg_name_hash(name));
}
