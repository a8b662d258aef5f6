/*
 * pb.h - xprofs-gen's own protobuf wire encoder (varint, fixed64,
 * length-delimited) and XStat writer. It deliberately shares no code with
 * decode/, so a bug in one cannot hide the same bug in the other (its varint
 * encoder is util's, which the reader does not use).
 *
 * Header-only (static inline) on purpose: these are called per field of
 * every event, and inlining them across the generator's files keeps it as
 * fast as when it was one file.
 */
#ifndef XPROFS_GEN_PB_H
#define XPROFS_GEN_PB_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xprofs/util.h"

/* ---- protobuf wire encoder -------------------------------------------- */

/*
 * An append-only encoder that grows up to @max; the first overflow sets @err
 * to -E2BIG (sticky) so callers check once at the end of a message.
 */
struct pb {
	uint8_t *p;
	size_t len, cap, max;
	int err;
};

static inline void pb_init(struct pb *b, size_t max)
{
	memset(b, 0, sizeof(*b));
	b->max = max;
}

static inline void pb_deinit(struct pb *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

static inline void pb_put(struct pb *b, const void *src, size_t n)
{
	if (b->err)
		return;
	if (n > b->max - b->len) {
		b->err = -E2BIG;
		return;
	}
	if (b->len + n > b->cap) {
		size_t c = b->cap ? b->cap : 4096;
		uint8_t *np;

		while (c < b->len + n)
			c *= 2;
		if (c > b->max)
			c = b->max;
		np = realloc(b->p, c);
		if (!np) {
			b->err = -ENOMEM;
			return;
		}
		b->p = np;
		b->cap = c;
	}
	if (n) /* src may be NULL for an empty field (memcpy's arguments must not be) */
		memcpy(b->p + b->len, src, n);
	b->len += n;
}

static inline size_t varint_size(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static inline void pb_varint(struct pb *b, uint64_t v)
{
	uint8_t tmp[10];

	pb_put(b, tmp, xprofs_put_varint(tmp, v));
}

enum { WT_VARINT = 0, WT_FIXED64 = 1, WT_LEN = 2 };

static inline void pb_tag(struct pb *b, unsigned field, unsigned wt)
{
	pb_varint(b, (uint64_t)field << 3 | wt);
}

/* int64 fields are plain varints: negatives take ten bytes (two's complement). */
static inline void pb_int(struct pb *b, unsigned field, uint64_t v)
{
	pb_tag(b, field, WT_VARINT);
	pb_varint(b, v);
}

static inline void pb_double(struct pb *b, unsigned field, double d)
{
	uint8_t tmp[8];
	uint64_t u;

	memcpy(&u, &d, sizeof(u));
	for (int i = 0; i < 8; i++)
		tmp[i] = (uint8_t)(u >> (8 * i));
	pb_tag(b, field, WT_FIXED64);
	pb_put(b, tmp, sizeof(tmp));
}

static inline void pb_bytes(struct pb *b, unsigned field, const void *p, size_t n)
{
	pb_tag(b, field, WT_LEN);
	pb_varint(b, n);
	pb_put(b, p, n);
}

static inline void pb_str(struct pb *b, unsigned field, const char *s)
{
	pb_bytes(b, field, s, strlen(s));
}

/* Size on the wire of a length-delimited field with a @n byte body. */
static inline uint64_t ld_size(unsigned field, uint64_t n)
{
	return varint_size((uint64_t)field << 3) + varint_size(n) + n;
}

/* ---- XStat ------------------------------------------------------------- */

enum stat_kind { ST_DOUBLE = 2, ST_U64 = 3, ST_I64 = 4, ST_STR = 5, ST_BYTES = 6, ST_REF = 7 };

/* Appends one XStat as field @field of the enclosing message (borrows @s). */
static inline void pb_stat(struct pb *b, unsigned field, int64_t mdid, enum stat_kind k, uint64_t u,
			   double d, const void *s, size_t slen)
{
	uint64_t body = 1 + varint_size((uint64_t)mdid);

	switch (k) {
	case ST_DOUBLE:
		body += 1 + 8;
		break;
	case ST_STR:
	case ST_BYTES:
		body += ld_size(k, slen);
		break;
	default:
		body += 1 + varint_size(u);
		break;
	}
	pb_tag(b, field, WT_LEN);
	pb_varint(b, body);
	pb_int(b, 1, (uint64_t)mdid);
	switch (k) {
	case ST_DOUBLE:
		pb_double(b, 2, d);
		break;
	case ST_STR:
	case ST_BYTES:
		pb_bytes(b, k, s, slen);
		break;
	default:
		pb_int(b, k, u);
		break;
	}
}

static inline void stat_u(struct pb *b, unsigned field, int64_t mdid, enum stat_kind k, uint64_t v)
{
	pb_stat(b, field, mdid, k, v, 0, NULL, 0);
}

static inline void stat_s(struct pb *b, unsigned field, int64_t mdid, const char *s)
{
	pb_stat(b, field, mdid, ST_STR, 0, 0, s, strlen(s));
}

#endif
