/*
 * wire.c - the protobuf wire walker's slow paths: window refills, skipping,
 * error reporting.
 *
 * Design: a cursor either points into the reader's zero-copy mapping, or
 * keeps one read-ahead window (WIRE_WIN_SIZE, grown up to WIRE_WIN_MAX only
 * when a single item needs it) filled with xprofs_reader_pread(). Skipping a
 * length-delimited field only moves the position, so bytes that no view
 * needs are never read. Limits: an item larger than WIRE_WIN_MAX cannot be
 * materialised (-E2BIG); groups (wire types 3/4) are rejected as malformed,
 * XSpace never uses them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xprofs/wire.h"

void wire_cur_init(struct wire_cur *c, const struct xprofs_reader *r, struct xprofs_buf *err)
{
	memset(c, 0, sizeof(*c));
	c->r = r;
	c->base = r->data;
	c->size = r->size;
	c->end = r->size;
	c->err = err;
	c->win_pref = WIRE_WIN_SIZE;
}

void wire_cur_deinit(struct wire_cur *c)
{
	free(c->win);
	c->win = NULL;
	c->win_cap = 0;
	c->win_len = 0;
}

int wire_fail(struct wire_cur *c, const char *fmt, ...)
{
	va_list ap;

	if (c->err && c->err->len == 0) {
		va_start(ap, fmt);
		(void)!xprofs_buf_vprintf(c->err, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

int wire_fill(struct wire_cur *c, uint64_t off, size_t n, const uint8_t **p)
{
	size_t want;
	ssize_t got;

	if (off > c->size || n > c->size - off)
		return wire_fail(c, "read of %zu bytes at offset %" PRIu64 " past end of data", n,
				 off);
	if (n > WIRE_WIN_MAX) {
		if (c->err && c->err->len == 0)
			(void)!xprofs_buf_printf(c->err,
						 "item of %zu bytes at offset %" PRIu64
						 " is larger than the %zu-byte limit",
						 n, off, WIRE_WIN_MAX);
		return -E2BIG;
	}
	want = n > c->win_pref ? n : c->win_pref;
	if (want > c->size - off)
		want = (size_t)(c->size - off);
	if (want > c->win_cap || !c->win) {
		size_t cap = want > c->win_pref ? want : c->win_pref;
		uint8_t *w;

		/* never keep more than the file needs: small files, small windows */
		if (cap > c->size && c->size >= want)
			cap = c->size ? (size_t)c->size : 1;
		w = realloc(c->win, cap);
		if (!w)
			return -ENOMEM;
		c->win = w;
		c->win_cap = cap;
	}
	got = xprofs_reader_pread(c->r, c->win, want, off);
	if (got < 0) {
		if (c->err && c->err->len == 0)
			(void)!xprofs_buf_printf(c->err, "read at offset %" PRIu64 ": %s", off,
						 strerror((int)-got));
		c->win_len = 0;
		return (int)got == -EINVAL ? -EIO : (int)got;
	}
	c->win_off = off;
	c->win_len = (size_t)got;
	if ((size_t)got < n)
		return wire_fail(c, "short read at offset %" PRIu64 " (data shorter than its size)",
				 off);
	*p = c->win;
	return 0;
}

int wire_varint_slow(struct wire_cur *c, uint64_t *v)
{
	const uint8_t *p, *q;
	uint64_t avail = c->end - c->pos;
	size_t n = avail < 10 ? (size_t)avail : 10;
	int r;

	if (n == 0)
		return wire_fail(c, "truncated varint at offset %" PRIu64, c->pos);
	if ((r = wire_at(c, c->pos, n, &p)) < 0)
		return r;
	q = p;
	if (wire_rd_varint(&q, p + n, v) < 0)
		return wire_fail(c, "%s varint at offset %" PRIu64,
				 n < 10 ? "truncated" : "overlong", c->pos);
	c->pos += (uint64_t)(q - p);
	return 0;
}

int wire_fixed64(struct wire_cur *c, uint64_t *v)
{
	const uint8_t *p;
	uint64_t x = 0;
	int r;

	if (c->end - c->pos < 8)
		return wire_fail(c, "truncated fixed64 at offset %" PRIu64, c->pos);
	if ((r = wire_at(c, c->pos, 8, &p)) < 0)
		return r;
	for (int i = 7; i >= 0; i--)
		x = (x << 8) | p[i];
	c->pos += 8;
	*v = x;
	return 0;
}

int wire_skip(struct wire_cur *c, int wt)
{
	uint64_t v;
	int r;

	switch (wt) {
	case WT_VARINT:
		return wire_varint(c, &v);
	case WT_I64:
		if (c->end - c->pos < 8)
			return wire_fail(c, "truncated fixed64 at offset %" PRIu64, c->pos);
		c->pos += 8;
		return 0;
	case WT_I32:
		if (c->end - c->pos < 4)
			return wire_fail(c, "truncated fixed32 at offset %" PRIu64, c->pos);
		c->pos += 4;
		return 0;
	case WT_LEN:
		if ((r = wire_len(c, &v)) < 0)
			return r;
		c->pos += v;
		return 0;
	default:
		return wire_fail(c, "unsupported wire type %d at offset %" PRIu64, wt, c->pos);
	}
}

int wire_expect(struct wire_cur *c, int wt, int want, const char *msg, uint32_t field)
{
	if (wt == want)
		return 0;
	return wire_fail(c,
			 "%s field %" PRIu32 " has wire type %d, expected %d (offset %" PRIu64 ")",
			 msg, field, wt, want, c->pos);
}

int wire_string(struct wire_cur *c, size_t cap, char **out, size_t *out_len)
{
	uint64_t len;
	const uint8_t *p;
	size_t keep;
	char *str;
	int r;

	if ((r = wire_len(c, &len)) < 0)
		return r;
	keep = len > cap ? cap : (size_t)len;
	if ((r = wire_at(c, c->pos, keep, &p)) < 0)
		return r;
	if (!(str = malloc(keep + 1)))
		return -ENOMEM;
	memcpy(str, p, keep);
	str[keep] = '\0';
	c->pos += len;
	free(*out);
	*out = str;
	*out_len = keep;
	return 0;
}
