/*
 * decode-internal.h - private types shared by the decode module's files.
 *
 * wire.c:   a streaming protobuf wire walker (struct dec_cur) over a
 *           struct xprofs_reader, with a bounded read-ahead window or the
 *           reader's zero-copy mapping.
 * xspace.c: the structural index built by xprofs_xspace_open().
 * render.c: the per-render context (cursors + bounded metadata cache) and
 *           the JSON views.
 *
 * The index is O(planes + lines + metadata entries + plane stats): it keeps
 * only where things are (file offsets), never event bodies.
 */
#ifndef XPROFS_DECODE_INTERNAL_H
#define XPROFS_DECODE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xprofs/decode.h"
#include "xprofs/util.h"

/* Read-ahead window of a cursor over a pread()-only reader. */
#define DEC_WIN_SIZE ((size_t)1 << 20)
/* Largest single item (a string) a cursor materialises in its window. */
#define DEC_WIN_MAX ((size_t)32 << 20)
/* Strings longer than this are truncated in the views (marked "..."). */
#define DEC_STR_MAX ((size_t)16 << 20)
/* Plane and line names kept in the index are capped at this many bytes. */
#define DEC_NAME_MAX ((size_t)64 << 10)
/* Most index entries (lines + metadata entries + plane stats + strings). */
#define DEC_INDEX_MAX ((size_t)8 << 20)

enum dec_wire { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

/*
 * A cursor reads the message bytes [pos, end) of the file. Nested messages
 * are walked by narrowing @end and restoring it afterwards (no recursion,
 * no stack: the XSpace schema is at most 5 levels deep and each level has
 * its own loop).
 */
struct dec_cur {
	const struct xprofs_reader *r; /* borrowed */
	const uint8_t *base;           /* r->data when zero-copy, else NULL */
	uint64_t size;
	uint8_t *win; /* owned window buffer (pread mode) */
	size_t win_cap;
	uint64_t win_off;
	size_t win_len;
	uint64_t pos, end;
	struct xprofs_buf *err; /* borrowed, may be NULL */
};

/* dec_cur_init() - a cursor over all of @r (borrowed); @err borrowed. */
void dec_cur_init(struct dec_cur *c, const struct xprofs_reader *r, struct xprofs_buf *err);
void dec_cur_deinit(struct dec_cur *c);
/* dec_fail() - record a "malformed" reason (first one wins); returns -EINVAL. */
int dec_fail(struct dec_cur *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* dec_fill() - slow path of dec_need(). */
int dec_fill(struct dec_cur *c, uint64_t off, size_t n, const uint8_t **p);

/*
 * dec_at() - pointer to the @n bytes at file offset @off, valid until the
 * next call on this cursor (borrowed from the window or the mapping).
 */
static inline int dec_at(struct dec_cur *c, uint64_t off, size_t n, const uint8_t **p)
{
	if (c->base) {
		if (off > c->size || n > c->size - off)
			return dec_fail(c, "read of %zu bytes at offset %llu past end of data",
					n, (unsigned long long)off);
		*p = c->base + off;
		return 0;
	}
	if (off >= c->win_off && off - c->win_off <= c->win_len &&
	    n <= c->win_len - (off - c->win_off)) {
		*p = c->win + (off - c->win_off);
		return 0;
	}
	return dec_fill(c, off, n, p);
}

/* dec_varint() - one varint at pos (within end); rejects overlong ones. */
static inline int dec_varint(struct dec_cur *c, uint64_t *v)
{
	const uint8_t *p;
	uint64_t avail = c->end - c->pos, x = 0;
	size_t n = avail < 10 ? (size_t)avail : 10;
	int r;

	if (n == 0)
		return dec_fail(c, "truncated varint at offset %llu", (unsigned long long)c->pos);
	if ((r = dec_at(c, c->pos, n, &p)) < 0)
		return r;
	if (p[0] < 0x80) {
		c->pos++;
		*v = p[0];
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		x |= (uint64_t)(p[i] & 0x7f) << (7 * i);
		if (p[i] < 0x80) {
			if (i == 9 && p[i] > 1)
				break;
			c->pos += i + 1;
			*v = x;
			return 0;
		}
	}
	return dec_fail(c, "%s varint at offset %llu", n < 10 ? "truncated" : "overlong",
			(unsigned long long)c->pos);
}

/* dec_tag() - field number and wire type of the next field. */
static inline int dec_tag(struct dec_cur *c, uint32_t *field, int *wt)
{
	uint64_t t = 0;
	int r = dec_varint(c, &t);

	if (r < 0)
		return r;
	*field = (uint32_t)(t >> 3);
	*wt = (int)(t & 7);
	if (t >> 3 == 0 || t >> 3 > 536870911u)
		return dec_fail(c, "invalid field number at offset %llu", (unsigned long long)c->pos);
	return 0;
}

/* dec_len() - a length prefix, checked against the enclosing message. */
static inline int dec_len(struct dec_cur *c, uint64_t *len)
{
	int r = dec_varint(c, len);

	if (r < 0)
		return r;
	if (*len > c->end - c->pos)
		return dec_fail(c, "length %llu at offset %llu exceeds its enclosing message (%llu bytes left)",
				(unsigned long long)*len, (unsigned long long)c->pos,
				(unsigned long long)(c->end - c->pos));
	return 0;
}

/* dec_skip() - skip the value of a field of wire type @wt. */
int dec_skip(struct dec_cur *c, int wt);
/* dec_fixed64() - 8 little-endian bytes. */
int dec_fixed64(struct dec_cur *c, uint64_t *v);
/* dec_expect() - fail unless @wt is @want (field @field of message @msg). */
int dec_expect(struct dec_cur *c, int wt, int want, const char *msg, uint32_t field);

/* ---- the index ------------------------------------------------------ */

struct dec_span {
	uint64_t off, len;
};

struct dec_md { /* one map entry: its key and where its value lies */
	int64_t key;
	uint64_t off, len;
};

struct dec_plane {
	int64_t id;
	char *name; /* owned, NUL-terminated, capped at DEC_NAME_MAX */
	size_t name_len;
	char *file; /* owned; unique plane directory name */
	struct dec_span msg;
	struct dec_md *ev_md; /* owned; sorted by key, unique keys (last wins) */
	size_t n_ev_md;
	struct dec_md *st_md;
	size_t n_st_md;
	struct dec_span *stats; /* owned; plane-level XStat messages */
	size_t n_stats;
	size_t first_line, n_lines; /* into xprofs_xspace.lines */
	uint64_t events;
	int64_t first_ps, last_ps;
	bool has_events;
};

struct dec_line {
	size_t plane;
	int64_t id, display_id, timestamp_ns, duration_ps;
	char *name, *display_name; /* owned, capped */
	size_t name_len, display_name_len;
	char *file; /* owned; unique within the plane, ends in ".json" */
	struct dec_span msg;
	uint64_t events;
	int64_t first_ps, last_ps;
	bool has_events;
};

struct dec_strs {
	char **s; /* owned */
	size_t *len;
	size_t n;
};

struct xprofs_xspace {
	const struct xprofs_reader *r; /* borrowed */
	struct dec_plane *planes;
	size_t n_planes;
	struct dec_line *lines;
	size_t n_lines;
	struct dec_strs hostnames, errors, warnings;
	struct xprofs_xspace_totals totals;
};

/* ---- helpers shared by the files ---------------------------------- */

static inline int64_t dec_sat_add(int64_t a, int64_t b)
{
	int64_t s;

	if (__builtin_add_overflow(a, b, &s))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return s;
}

static inline int64_t dec_line_base_ps(int64_t ts_ns)
{
	int64_t s;

	if (__builtin_mul_overflow(ts_ns, (int64_t)1000, &s))
		return ts_ns > 0 ? INT64_MAX : INT64_MIN;
	return s;
}

/* dec_plane_is_device() - "/device:..." planes hold accelerator ops. */
bool dec_plane_is_device(const struct dec_plane *p);
/* dec_md_find() - index of @key in the sorted @md, or -1. */
ssize_t dec_md_find(const struct dec_md *md, size_t n, int64_t key);

#endif
