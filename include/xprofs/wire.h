/*
 * xprofs/wire.h - the protobuf wire walker: bounded cursors over a reader.
 *
 * A struct wire_cur reads a struct xprofs_reader through a bounded read-ahead
 * window, or its zero-copy mapping (slow paths in wire/wire.c). The hot
 * paths are inline here: pointer-level varints (wire_rd_varint), one field of a
 * message in memory (wire_rd_field). It knows no schema: xspace/ walks XSpace
 * with it, trace/ the HLO protos a profile carries. Limits: an item a cursor
 * materialises is at most WIRE_WIN_MAX bytes; groups are malformed.
 */
#ifndef XPROFS_WIRE_H
#define XPROFS_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "xprofs/util.h"

/* Wire types (protobuf encoding); groups (3, 4) never occur in XSpace. */
enum wire_wire { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

/* The one-byte tag of field @f (1..15) with wire type @wt. */
#define WIRE_TAG(f, wt) ((unsigned)(((f) << 3) | (wt)))

/* Read-ahead window of a cursor over a pread()-only reader. */
#define WIRE_WIN_SIZE ((size_t)1 << 20)
/* Largest single item (a string) a cursor materialises in its window. */
#define WIRE_WIN_MAX ((size_t)32 << 20)
/*
 * A cursor reads the message bytes [pos, end) of the file. Nested messages
 * are walked by narrowing @end and restoring it afterwards (no recursion,
 * no stack: the XSpace schema is at most 5 levels deep and each level has
 * its own loop).
 */
struct wire_cur {
	const struct xprofs_reader *r; /* borrowed */
	const uint8_t *base;           /* r->data when zero-copy, else NULL */
	uint64_t size;
	uint8_t *win; /* owned window buffer (pread mode) */
	size_t win_cap;
	size_t win_pref; /* read-ahead per refill: WIRE_WIN_SIZE, less for random access */
	uint64_t win_off;
	size_t win_len;
	uint64_t pos, end;
	struct xprofs_buf *err; /* borrowed, may be NULL */
};

/* wire_cur_init() - a cursor over all of @r (borrowed); @err borrowed. */
void wire_cur_init(struct wire_cur *c, const struct xprofs_reader *r, struct xprofs_buf *err);
void wire_cur_deinit(struct wire_cur *c);
/* wire_fail() - record a "malformed" reason (first one wins); returns -EINVAL. */
int wire_fail(struct wire_cur *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* wire_fill() - slow path of wire_need(). */
int wire_fill(struct wire_cur *c, uint64_t off, size_t n, const uint8_t **p);

/*
 * wire_at() - pointer to the @n bytes at file offset @off, valid until the
 * next call on this cursor (borrowed from the window or the mapping).
 */
static inline int wire_at(struct wire_cur *c, uint64_t off, size_t n, const uint8_t **p)
{
	if (c->base) {
		if (off > c->size || n > c->size - off)
			return wire_fail(c, "read of %zu bytes at offset %llu past end of data", n,
					 (unsigned long long)off);
		*p = c->base + off;
		return 0;
	}
	if (off >= c->win_off && off - c->win_off <= c->win_len &&
	    n <= c->win_len - (off - c->win_off)) {
		*p = c->win + (off - c->win_off);
		return 0;
	}
	return wire_fill(c, off, n, p);
}

/* wire_le64() - the eight bytes at @p as a little-endian number. */
static inline uint64_t wire_le64(const uint8_t *p)
{
	uint64_t w;

	memcpy(&w, p, sizeof(w));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	w = __builtin_bswap64(w);
#endif
	return w;
}

/*
 * wire_rd_varint() - pointer-level varint decode of [*p, e): the hot path of
 * every parser here. Returns 0 and advances *p, or -1 (truncated/overlong).
 */
static inline __attribute__((always_inline)) int wire_rd_varint(const uint8_t **pp,
								const uint8_t *e, uint64_t *v)
{
	const uint8_t *p = *pp;
	uint64_t x;

	if (p < e && p[0] < 0x80) {
		*v = p[0];
		*pp = p + 1;
		return 0;
	}
	if (e - p >= 10) {
		uint64_t w, stop;
		unsigned n;

		/*
		 * Eight bytes at once: the first byte without its high bit ends
		 * the varint; up to eight bytes (56 bits) are gathered without a
		 * loop or a branch per byte, which is where the time of the
		 * multi-byte offsets and durations of every event went.
		 */
		w = wire_le64(p);
		if ((stop = ~w & 0x8080808080808080ull) != 0) {
			/* the bits up to the stop byte's last */
			n = (unsigned)__builtin_ctzll(stop) + 1;
			x = n == 64 ? w : w & ((1ull << n) - 1);
			x = ((x & 0x7f007f007f007f00ull) >> 1) | (x & 0x007f007f007f007full);
			x = ((x & 0x3fff00003fff0000ull) >> 2) | (x & 0x00003fff00003fffull);
			x = ((x & 0x0fffffff00000000ull) >> 4) | (x & 0x000000000fffffffull);
			*v = x;
			*pp = p + n / 8;
			return 0;
		}
		x = p[0] & 0x7f;
		for (int i = 1; i < 10; i++) {
			x |= (uint64_t)(p[i] & 0x7f) << (7 * i);
			if (p[i] < 0x80) {
				if (i == 9 && p[i] > 1)
					return -1;
				*v = x;
				*pp = p + i + 1;
				return 0;
			}
		}
		return -1;
	}
	x = 0;
	for (int i = 0; p + i < e; i++) {
		x |= (uint64_t)(p[i] & 0x7f) << (7 * i);
		if (p[i] < 0x80) {
			*v = x;
			*pp = p + i + 1;
			return 0;
		}
	}
	return -1;
}

/*
 * wire_rd_field() - one field of a message body [*pp, e) held in memory: its
 * number, wire type and value (a varint, the little-endian fixed64, 0 for a
 * fixed32, or a LEN field's length with its bytes at *data). Advances *pp
 * past the field. Returns 0, or -1 when malformed (bad varint, field 0, a
 * length past @e, a group).
 */
static inline __attribute__((always_inline)) int wire_rd_field(const uint8_t **pp, const uint8_t *e,
							       uint32_t *f, int *wt, uint64_t *v,
							       const uint8_t **data)
{
	const uint8_t *p = *pp;
	uint64_t t;

	if (wire_rd_varint(&p, e, &t) < 0 || (t >> 3) == 0)
		return -1;
	*f = (uint32_t)(t >> 3);
	*wt = (int)(t & 7);
	switch (*wt) {
	case WT_VARINT:
		if (wire_rd_varint(&p, e, v) < 0)
			return -1;
		break;
	case WT_I64:
		if (e - p < 8)
			return -1;
		*v = 0;
		for (int i = 7; i >= 0; i--)
			*v = (*v << 8) | p[i];
		p += 8;
		break;
	case WT_LEN:
		if (wire_rd_varint(&p, e, v) < 0 || *v > (uint64_t)(e - p))
			return -1;
		*data = p;
		p += *v;
		break;
	case WT_I32:
		if (e - p < 4)
			return -1;
		*v = 0;
		p += 4;
		break;
	default:
		return -1;
	}
	*pp = p;
	return 0;
}

/*
 * wire_rd_known_field() - wire_rd_field() checked against a message's schema: 1 for a
 * field @wire_of knows, with the wire type it must have; 0 for an unknown
 * field (skipped); -1 when malformed or of the wrong wire type.
 */
static inline __attribute__((always_inline)) int
wire_rd_known_field(const uint8_t **pp, const uint8_t *e, int (*wire_of)(uint32_t f), uint32_t *f,
		    uint64_t *v, const uint8_t **data)
{
	int wt, want;

	if (wire_rd_field(pp, e, f, &wt, v, data) < 0)
		return -1;
	if ((want = wire_of(*f)) < 0)
		return 0;
	return wt == want ? 1 : -1;
}

/* wire_avail() - pointer at c->pos and how many bytes lie there without a refill. */
static inline size_t wire_avail(const struct wire_cur *c, const uint8_t **p)
{
	uint64_t lim;

	if (c->base) {
		*p = c->base + c->pos;
		return (size_t)(c->end - c->pos);
	}
	if (c->pos >= c->win_off && c->pos - c->win_off < c->win_len) {
		lim = c->win_off + c->win_len;
		if (lim > c->end)
			lim = c->end;
		*p = c->win + (c->pos - c->win_off);
		return (size_t)(lim - c->pos);
	}
	return 0;
}

/* wire_varint_slow() - the out-of-window path of wire_varint(). */
int wire_varint_slow(struct wire_cur *c, uint64_t *v);

/* wire_varint() - one varint at pos (within end); rejects overlong ones. */
static inline int wire_varint(struct wire_cur *c, uint64_t *v)
{
	const uint8_t *p, *e;
	uint64_t lim;

	if (c->base) {
		p = c->base + c->pos;
		e = c->base + c->end;
	} else if (c->pos >= c->win_off && c->pos - c->win_off < c->win_len) {
		p = c->win + (c->pos - c->win_off);
		lim = c->win_off + c->win_len;
		e = c->win + ((lim < c->end ? lim : c->end) - c->win_off);
		/* a varint cut by the window edge (not by the message) goes slow */
		if (e - p < 10 && lim < c->end)
			return wire_varint_slow(c, v);
	} else {
		return wire_varint_slow(c, v);
	}
	const uint8_t *q = p;

	if (wire_rd_varint(&q, e, v) < 0)
		return wire_varint_slow(c, v);
	c->pos += (uint64_t)(q - p);
	return 0;
}

/* wire_tag() - field number and wire type of the next field. */
static inline int wire_tag(struct wire_cur *c, uint32_t *field, int *wt)
{
	uint64_t t = 0;
	int r = wire_varint(c, &t);

	if (r < 0)
		return r;
	*field = (uint32_t)(t >> 3);
	*wt = (int)(t & 7);
	if (t >> 3 == 0 || t >> 3 > 536870911u)
		return wire_fail(c, "invalid field number at offset %llu",
				 (unsigned long long)c->pos);
	return 0;
}

/* wire_len() - a length prefix, checked against the enclosing message. */
static inline int wire_len(struct wire_cur *c, uint64_t *len)
{
	int r = wire_varint(c, len);

	if (r < 0)
		return r;
	if (*len > c->end - c->pos)
		return wire_fail(c,
				 "length %llu at offset %llu exceeds its enclosing message (%llu "
				 "bytes left)",
				 (unsigned long long)*len, (unsigned long long)c->pos,
				 (unsigned long long)(c->end - c->pos));
	return 0;
}

/*
 * wire_string() - copy the length-delimited string at c->pos, cut to @cap
 * bytes, NUL-terminated; the cursor moves past the whole field. Replaces
 * *@out (freed); caller owns the result (free()).
 */
int wire_string(struct wire_cur *c, size_t cap, char **out, size_t *out_len);
/* wire_skip() - skip the value of a field of wire type @wt. */
int wire_skip(struct wire_cur *c, int wt);
/* wire_fixed64() - 8 little-endian bytes. */
int wire_fixed64(struct wire_cur *c, uint64_t *v);
/* wire_expect() - fail unless @wt is @want (field @field of message @msg). */
int wire_expect(struct wire_cur *c, int wt, int want, const char *msg, uint32_t field);

/* wire_varint_field() - the value of varint field @field of @msg, its wire type @wt checked. */
static inline int wire_varint_field(struct wire_cur *c, int wt, const char *msg, uint32_t field,
				    uint64_t *v)
{
	int r = wire_expect(c, wt, WT_VARINT, msg, field);

	return r < 0 ? r : wire_varint(c, v);
}

/* wire_i64_field() - an int64 field (a varint, two's complement) into *@out. */
static inline int wire_i64_field(struct wire_cur *c, int wt, const char *msg, uint32_t field,
				 int64_t *out)
{
	uint64_t v;
	int r = wire_varint_field(c, wt, msg, field, &v);

	if (r == 0)
		*out = (int64_t)v;
	return r;
}

/* wire_len_field() - the length of LEN field @field of @msg, its wire type @wt checked. */
static inline int wire_len_field(struct wire_cur *c, int wt, const char *msg, uint32_t field,
				 uint64_t *len)
{
	int r = wire_expect(c, wt, WT_LEN, msg, field);

	return r < 0 ? r : wire_len(c, len);
}

/*
 * wire_next_len_field() - skip the other fields up to the next LEN field @field
 * of @msg before @end: 1 with *@len its length and the cursor at its value,
 * 0 when @end is reached, or -errno.
 */
static inline int wire_next_len_field(struct wire_cur *c, uint64_t end, const char *msg,
				      uint32_t field, uint64_t *len)
{
	uint32_t f;
	int wt, r;

	while (c->pos < end) {
		if ((r = wire_tag(c, &f, &wt)) < 0)
			return r;
		if (f == field)
			return (r = wire_len_field(c, wt, msg, f, len)) < 0 ? r : 1;
		if ((r = wire_skip(c, wt)) < 0)
			return r;
	}
	return 0;
}

#endif
