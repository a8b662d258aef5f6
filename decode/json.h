/*
 * json.h - the streaming JSON writer every view writes through.
 *
 * Design: one output buffer (struct dec_out) that is flushed to a sink every
 * DEC_OUT_CHUNK bytes, or, without a sink, grows up to DEC_OUT_MAX to give a
 * string back (dec_out_steal()). Errors are sticky: after the first one
 * every append is a no-op and the error comes back from dec_out_flush(), so
 * the views check once per event, not per append. The per-event appends
 * (bytes, integers, ps as exact microseconds) are inline here: numbers are
 * formatted by hand, never with printf.
 */
#ifndef XPROFS_DECODE_JSON_H
#define XPROFS_DECODE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "xprofs/util.h"

/* A sink is written to every this many bytes. */
#define DEC_OUT_CHUNK ((size_t)64 << 10)
/* Most bytes held without a sink (a pre-rendered string). */
#define DEC_OUT_MAX ((size_t)256 << 20)

/*
 * With a sink the buffer holds at most DEC_OUT_CHUNK bytes and is written out
 * whenever the next piece does not fit (a single piece larger than that is
 * passed through whole); without a sink it grows up to DEC_OUT_MAX.
 */
struct dec_out {
	char *buf; /* owned */
	size_t len, cap;
	const struct xprofs_sink *sink; /* borrowed, may be NULL */
	struct xprofs_buf esc;          /* scratch for JSON escaping */
	int r;                          /* the sticky error */
};

/* dec_out_init() - @sink borrowed (NULL: collect into a string). */
void dec_out_init(struct dec_out *o, const struct xprofs_sink *sink);
void dec_out_deinit(struct dec_out *o);
/* dec_out_steal() - the bytes written, NUL-terminated (caller owns; free()), or NULL. */
char *dec_out_steal(struct dec_out *o, size_t *len);
/* dec_out_room() - make room for @n more bytes (and a NUL); the slow path of the appends. */
int dec_out_room(struct dec_out *o, size_t n);
/* dec_out_str() - @s (@n bytes, borrowed) as a JSON string. */
void dec_out_str(struct dec_out *o, const char *s, size_t n);
void dec_out_cstr(struct dec_out *o, const char *s);
/* dec_out_double() - shortest round-tripping form; null for NaN and infinities. */
void dec_out_double(struct dec_out *o, double d);
/* dec_out_opt_double() - @lit (a key and colon, borrowed), then @d, or null without @has. */
void dec_out_opt_double(struct dec_out *o, const char *lit, bool has, double d);
/* dec_out_flush() - the sticky error; with @force, also write what is buffered. */
int dec_out_flush(struct dec_out *o, bool force);
/* dec_json_dup() - JSON-quote @s (@n bytes) into a new string. Caller owns *out (free()). */
int dec_json_dup(const char *s, size_t n, char **out, size_t *out_len);

static inline void dec_out_add(struct dec_out *o, const void *p, size_t n)
{
	if (o->r)
		return;
	if (n >= o->cap - o->len && dec_out_room(o, n) < 0)
		return;
	memcpy(o->buf + o->len, p, n);
	o->len += n;
}

/* string literals only ("" s rejects anything else at compile time) */
#define OUT_LIT(o, s) dec_out_add((o), "" s, sizeof("" s) - 1)
#define OUT_RAW(o, s) dec_out_add((o), (s), strlen(s))

/* "00" "01" ... "99": two digits per table look-up. */
extern const char dec_digits2[201];

/* Decimal digits of @v into @buf (at least 20 bytes); returns the length. */
static inline size_t dec_fmt_u64(char *buf, uint64_t v)
{
	char t[24], *p = t + sizeof(t);
	size_t n;

	while (v >= 100) {
		p -= 2;
		memcpy(p, dec_digits2 + (v % 100) * 2, 2);
		v /= 100;
	}
	if (v >= 10) {
		p -= 2;
		memcpy(p, dec_digits2 + v * 2, 2);
	} else {
		*--p = (char)('0' + v);
	}
	n = (size_t)(t + sizeof(t) - p);
	memcpy(buf, p, n);
	return n;
}

/* Reserve @n bytes at the end of the output; NULL after an error. */
static inline char *dec_out_reserve(struct dec_out *o, size_t n)
{
	if (o->r)
		return NULL;
	if (n >= o->cap - o->len && dec_out_room(o, n) < 0)
		return NULL;
	return o->buf + o->len;
}

static inline void dec_out_u64(struct dec_out *o, uint64_t v)
{
	char *p = dec_out_reserve(o, 24);

	if (p)
		o->len += dec_fmt_u64(p, v);
}

static inline void dec_out_i64(struct dec_out *o, int64_t v)
{
	char *p = dec_out_reserve(o, 24);

	if (!p)
		return;
	if (v < 0) {
		*p = '-';
		o->len += 1 + dec_fmt_u64(p + 1, (uint64_t)0 - (uint64_t)v);
	} else {
		o->len += dec_fmt_u64(p, (uint64_t)v);
	}
}

/* dec_out_key_i64() - the literal @lit (a key with its punctuation), then @v. */
static inline void dec_out_key_i64(struct dec_out *o, const char *lit, int64_t v)
{
	dec_out_add(o, lit, strlen(lit));
	dec_out_i64(o, v);
}

/* @ps picoseconds as an exact decimal number of microseconds. */
static inline void dec_out_us(struct dec_out *o, int64_t ps)
{
	char *p = dec_out_reserve(o, 40);
	uint64_t u = ps < 0 ? (uint64_t)0 - (uint64_t)ps : (uint64_t)ps;
	uint32_t frac = (uint32_t)(u % 1000000);
	size_t n = 0;

	if (!p)
		return;
	if (ps < 0)
		p[n++] = '-';
	n += dec_fmt_u64(p + n, u / 1000000);
	if (frac) {
		char f[6];
		size_t k = 6;

		memcpy(f, dec_digits2 + (frac / 10000) * 2, 2);
		memcpy(f + 2, dec_digits2 + (frac / 100 % 100) * 2, 2);
		memcpy(f + 4, dec_digits2 + (frac % 100) * 2, 2);
		while (f[k - 1] == '0')
			k--;
		p[n++] = '.';
		memcpy(p + n, f, k);
		n += k;
	}
	o->len += n;
}

#endif
