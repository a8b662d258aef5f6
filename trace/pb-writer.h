/*
 * pb-writer.h - a tiny protobuf wire-format writer into a growing buffer,
 * for trace.pftrace (view-pftrace.c, pftrace-*.c). No generated code:
 * varints, tags, fixed64 and length-delimited fields written by hand.
 *
 * Limits: one buffer holds one message of at most PBW_MAX bytes; past that
 * (or when memory runs out) the writer sets @overflow and drops further
 * bytes; the caller turns that into an error.
 */
#ifndef XPROFS_PB_WRITER_H
#define XPROFS_PB_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xprofs/util.h"

#define PBW_MAX ((size_t)64 << 20)

struct pbw {
	uint8_t *buf; /* owned; free with pbw_free() */
	size_t len, cap;
	bool overflow;
};

static inline void pbw_free(struct pbw *w)
{
	free(w->buf);
	memset(w, 0, sizeof(*w));
}

static inline void pbw_reset(struct pbw *w)
{
	w->len = 0;
	w->overflow = false;
}

/* Room for @n more bytes: false (and @overflow set) when it cannot be had. */
static inline bool pbw_room(struct pbw *w, size_t n)
{
	size_t cap;
	uint8_t *p;

	if (w->len + n <= w->cap)
		return true;
	if (w->overflow || n > PBW_MAX - w->len) {
		w->overflow = true;
		return false;
	}
	for (cap = w->cap ? w->cap : 4096; cap < w->len + n; cap *= 2)
		;
	if (cap > PBW_MAX)
		cap = PBW_MAX;
	if (!(p = realloc(w->buf, cap))) {
		w->overflow = true;
		return false;
	}
	w->buf = p;
	w->cap = cap;
	return true;
}

static inline void pbw_bytes(struct pbw *w, const void *p, size_t n)
{
	if (!n || !pbw_room(w, n))
		return;
	memcpy(w->buf + w->len, p, n);
	w->len += n;
}

/* @v as a varint at @p (10 bytes room); the bytes written (util's encoder). */
static inline size_t pbw_put_varint(uint8_t *p, uint64_t v)
{
	return xprofs_put_varint(p, v);
}

static inline void pbw_varint(struct pbw *w, uint64_t v)
{
	if (!pbw_room(w, 10))
		return;
	w->len += pbw_put_varint(w->buf + w->len, v);
}

static inline void pbw_tag(struct pbw *w, uint32_t field, unsigned wt)
{
	pbw_varint(w, ((uint64_t)field << 3) | wt);
}

static inline void pbw_u64(struct pbw *w, uint32_t field, uint64_t v)
{
	if (!pbw_room(w, 20))
		return;
	w->len += pbw_put_varint(w->buf + w->len, ((uint64_t)field << 3) | 0);
	w->len += pbw_put_varint(w->buf + w->len, v);
}

static inline void pbw_fixed64(struct pbw *w, uint32_t field, uint64_t v)
{
	uint8_t b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	pbw_tag(w, field, 1);
	pbw_bytes(w, b, 8);
}

static inline void pbw_str(struct pbw *w, uint32_t field, const void *p, size_t n)
{
	pbw_tag(w, field, 2);
	pbw_varint(w, n);
	pbw_bytes(w, p, n);
}

/* String field @field of @a (@an bytes) followed by @b (@bn bytes): no copy joins them first. */
static inline void pbw_str2(struct pbw *w, uint32_t field, const void *a, size_t an, const void *b,
			    size_t bn)
{
	pbw_tag(w, field, 2);
	pbw_varint(w, an + bn);
	pbw_bytes(w, a, an);
	pbw_bytes(w, b, bn);
}

/* Append @inner as length-delimited field @field of @w. */
static inline void pbw_msg(struct pbw *w, uint32_t field, const struct pbw *inner)
{
	if (inner->overflow)
		w->overflow = true;
	pbw_str(w, field, inner->buf, inner->len);
}

#endif
