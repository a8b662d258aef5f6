/*
 * pb-writer.h - a tiny protobuf wire-format writer into a bounded buffer,
 * for trace.pftrace (view-pftrace.c). No generated code: varints, tags,
 * fixed64 and length-delimited fields written by hand.
 *
 * Limits: one buffer holds one message of at most PBW_MAX bytes; past that
 * the writer sets @overflow and drops further bytes (callers cap strings).
 */
#ifndef XPROFS_PB_WRITER_H
#define XPROFS_PB_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define PBW_MAX 8192

struct pbw {
	uint8_t buf[PBW_MAX];
	size_t len;
	bool overflow;
};

static inline void pbw_bytes(struct pbw *w, const void *p, size_t n)
{
	if (w->len + n > PBW_MAX) {
		w->overflow = true;
		return;
	}
	memcpy(w->buf + w->len, p, n);
	w->len += n;
}

static inline void pbw_varint(struct pbw *w, uint64_t v)
{
	uint8_t b[10];
	size_t n = 0;

	while (v >= 0x80) {
		b[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	b[n++] = (uint8_t)v;
	pbw_bytes(w, b, n);
}

static inline void pbw_tag(struct pbw *w, uint32_t field, unsigned wt)
{
	pbw_varint(w, ((uint64_t)field << 3) | wt);
}

static inline void pbw_u64(struct pbw *w, uint32_t field, uint64_t v)
{
	pbw_tag(w, field, 0);
	pbw_varint(w, v);
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

/* Append @inner as length-delimited field @field of @w. */
static inline void pbw_msg(struct pbw *w, uint32_t field, const struct pbw *inner)
{
	if (inner->overflow)
		w->overflow = true;
	pbw_str(w, field, inner->buf, inner->len);
}

#endif
