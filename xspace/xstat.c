/*
 * stats.c - XStat decoding: parsing (one field switch, over a cursor or over
 * bytes in memory), values as JSON (refs resolved through the stat
 * metadata, compressed strings inflated), and walking the stats of a message
 * with a callback: rendering "name":value pairs, or collecting the few stats
 * ops.json and steps.json need.
 *
 * Design: a stat is parsed into a struct xs_statv that locates its value
 * (file offset and length) instead of copying it; stats up to 4 KiB are
 * parsed from memory in one go, larger ones (long strings) through the
 * cursor. Limits: strings longer than XS_STR_MAX and compressed strings
 * inflating past ZSTR_MAX are cut; stats with a missing metadata entry get
 * the empty name; duplicate stat names are all written (JSON parsers keep
 * the last one).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "xprofs/xspace.h"

#define ZSTR_MAX ((size_t)1 << 20)

/* xstat_field_wire() - the wire type XStat field @f must have; -1: unknown field. */
static int xstat_field_wire(uint32_t f)
{
	switch (f) {
	case XSTAT_F_METADATA_ID:
	case XSTAT_F_UINT64:
	case XSTAT_F_INT64:
	case XSTAT_F_REF:
		return WT_VARINT;
	case XSTAT_F_DOUBLE:
		return WT_I64;
	case XSTAT_F_STR:
	case XSTAT_F_BYTES:
	case XSTAT_F_COMPRESSED:
		return WT_LEN;
	default:
		return -1;
	}
}

/*
 * stat_field() - the one XStat field switch: apply known field @f (of the
 * right wire type) to @s. @v: the varint, the double's bits, or a length
 * whose bytes start at file offset @at. The value is a oneof: last one wins.
 */
static inline void stat_field(struct xs_statv *s, uint32_t f, uint64_t v, uint64_t at)
{
	switch (f) {
	case XSTAT_F_METADATA_ID:
		s->md = (int64_t)v;
		break;
	case XSTAT_F_DOUBLE:
		s->kind = SV_DOUBLE;
		memcpy(&s->d, &v, sizeof(v));
		break;
	case XSTAT_F_UINT64:
	case XSTAT_F_INT64:
	case XSTAT_F_REF:
		s->kind = (int)f; /* SV_U64, SV_I64, SV_REF */
		s->u = v;
		break;
	default:                  /* XSTAT_F_STR, XSTAT_F_BYTES, XSTAT_F_COMPRESSED */
		s->kind = (int)f; /* SV_STR, SV_BYTES, SV_ZSTR */
		s->off = at;
		s->len = v;
		break;
	}
}

/* The general path: an XStat body [c->pos, c->end) of any size, read through the cursor. */
int xs_stat_parse(struct wire_cur *c, struct xs_statv *s)
{
	uint64_t v, at;
	uint32_t f;
	int wt, want, r;

	memset(s, 0, sizeof(*s));
	while (c->pos < c->end) {
		if ((r = wire_tag(c, &f, &wt)) < 0)
			return r;
		if ((want = xstat_field_wire(f)) < 0) {
			if ((r = wire_skip(c, wt)) < 0)
				return r;
			continue;
		}
		if ((r = wire_expect(c, wt, want, "XStat", f)) < 0)
			return r;
		at = 0;
		if (want == WT_VARINT)
			r = wire_varint(c, &v);
		else if (want == WT_I64)
			r = wire_fixed64(c, &v);
		else if ((r = wire_len(c, &v)) == 0)
			at = c->pos, c->pos += v;
		if (r < 0)
			return r;
		stat_field(s, f, v, at);
	}
	return 0;
}

/*
 * rd_stat_canonical() - the form every serializer writes: metadata_id, then one
 * value field, nothing else. 1 and @s filled (as the general loop would), or 0:
 * anything else, for the general loop.
 */
static inline __attribute__((always_inline)) int
rd_stat_canonical(const uint8_t *p, const uint8_t *e, uint64_t off, struct xs_statv *s)
{
	const uint8_t *b = p, *q = p + 1;
	uint64_t md, v = 0;
	unsigned t;

	if (e - p < 3 || p[0] != WIRE_TAG(XSTAT_F_METADATA_ID, WT_VARINT) ||
	    wire_rd_varint(&q, e, &md) < 0 || q >= e)
		return 0;
	t = *q++;
	switch (t) {
	case WIRE_TAG(XSTAT_F_UINT64, WT_VARINT):
	case WIRE_TAG(XSTAT_F_INT64, WT_VARINT):
	case WIRE_TAG(XSTAT_F_REF, WT_VARINT):
		if (wire_rd_varint(&q, e, &v) < 0 || q != e)
			return 0;
		*s = (struct xs_statv){.md = (int64_t)md, .kind = (int)(t >> 3), .u = v};
		return 1;
	case WIRE_TAG(XSTAT_F_DOUBLE, WT_I64):
		if (e - q != 8)
			return 0;
		for (int i = 7; i >= 0; i--)
			v = (v << 8) | q[i];
		*s = (struct xs_statv){.md = (int64_t)md, .kind = SV_DOUBLE};
		memcpy(&s->d, &v, sizeof(v));
		return 1;
	case WIRE_TAG(XSTAT_F_STR, WT_LEN):
	case WIRE_TAG(XSTAT_F_BYTES, WT_LEN):
	case WIRE_TAG(XSTAT_F_COMPRESSED, WT_LEN):
		if (wire_rd_varint(&q, e, &v) < 0 || v != (uint64_t)(e - q))
			return 0;
		*s = (struct xs_statv){.md = (int64_t)md,
				       .kind = (int)(t >> 3),
				       .off = off + (uint64_t)(q - b),
				       .len = v};
		return 1;
	default:
		return 0;
	}
}

/* The fast path: an XStat body [p, e) in memory that starts at file offset @off; -1: malformed. */
static int rd_stat(const uint8_t *p, const uint8_t *e, uint64_t off, struct xs_statv *s)
{
	const uint8_t *b = p, *data = p;
	uint64_t v;
	uint32_t f;
	int known;

	if (rd_stat_canonical(p, e, off, s))
		return 0;
	memset(s, 0, sizeof(*s));
	while (p < e) {
		if ((known = wire_rd_known_field(&p, e, xstat_field_wire, &f, &v, &data)) < 0)
			return -1;
		if (known)
			stat_field(s, f, v, off + (uint64_t)(data - b));
	}
	return 0;
}

/* xs_zlib_errno() - the module's one mapping of zlib results to -errno. */
int xs_zlib_errno(int zr)
{
	switch (zr) {
	case Z_OK:
	case Z_STREAM_END:
		return 0;
	case Z_MEM_ERROR:
		return -ENOMEM;
	case Z_VERSION_ERROR:
		return -ENOTSUP;
	default: /* Z_DATA_ERROR, Z_BUF_ERROR (truncated), Z_NEED_DICT, Z_STREAM_ERROR */
		return -EINVAL;
	}
}

/* Inflate a gzip (or zlib) compressed string into @b, at most ZSTR_MAX bytes. */
static int inflate_str(const uint8_t *p, size_t n, struct xprofs_buf *b, bool *cut)
{
	unsigned char chunk[16384];
	z_stream z;
	int zr, r = 0;

	memset(&z, 0, sizeof(z));
	if ((r = xs_zlib_errno(inflateInit2(&z, 15 + 32))) < 0) /* auto-detect gzip / zlib */
		return r;
	z.next_in = (unsigned char *)(uintptr_t)p;
	z.avail_in = n > UINT32_MAX ? UINT32_MAX : (unsigned)n;
	*cut = false;
	do {
		z.next_out = chunk;
		z.avail_out = sizeof(chunk);
		zr = inflate(&z, Z_NO_FLUSH);
		if ((r = xs_zlib_errno(zr)) < 0)
			break;
		size_t got = sizeof(chunk) - z.avail_out;

		if (b->len + got > ZSTR_MAX) {
			got = ZSTR_MAX - b->len;
			*cut = true;
		}
		if ((r = xprofs_buf_add(b, chunk, got)) < 0 || *cut)
			break;
		if (zr == Z_OK && z.avail_in == 0 && z.avail_out != 0) {
			r = xs_zlib_errno(Z_BUF_ERROR); /* input ended before the stream */
			break;
		}
	} while (zr != Z_STREAM_END);
	inflateEnd(&z);
	return r;
}

/* Write the JSON value of @s. @c is the cursor @s was parsed from. */
static int stat_value(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s,
		      struct xs_out *o)
{
	const struct xs_stmd *ref;
	const uint8_t *p;
	size_t n;
	bool cut;
	int r;

	switch (s->kind) {
	case SV_DOUBLE:
		xs_out_double(o, s->d);
		return 0;
	case SV_U64:
		xs_out_u64(o, s->u);
		return 0;
	case SV_I64:
		xs_out_i64(o, (int64_t)s->u);
		return 0;
	case SV_REF:
		if ((r = xs_md_stat(rc, (int64_t)s->u, &ref)) < 0)
			return r;
		xs_out_add(o, ref->json, ref->json_len);
		return 0;
	case SV_BYTES:
		OUT_LIT(o, "\"<");
		xs_out_u64(o, s->len);
		OUT_LIT(o, " bytes>\"");
		return 0;
	case SV_STR:
		n = s->len > XS_STR_MAX ? XS_STR_MAX : (size_t)s->len;
		if ((r = wire_at(c, s->off, n, &p)) < 0)
			return r;
		xs_out_str(o, (const char *)p, n);
		return 0;
	case SV_ZSTR:
		n = s->len > XS_STR_MAX ? XS_STR_MAX : (size_t)s->len;
		if ((r = wire_at(c, s->off, n, &p)) < 0)
			return r;
		xprofs_buf_reset(&rc->tmp);
		r = inflate_str(p, n, &rc->tmp, &cut);
		if (r == -ENOMEM || r == -ENOTSUP)
			return r;
		if (r < 0) {
			OUT_LIT(o, "\"<invalid compressed string of ");
			xs_out_u64(o, s->len);
			OUT_LIT(o, " bytes>\"");
			return 0;
		}
		if (cut && xprofs_buf_adds(&rc->tmp, "...") < 0)
			return -ENOMEM;
		xs_out_str(o, rc->tmp.data ? rc->tmp.data : "", rc->tmp.len);
		return 0;
	default:
		OUT_LIT(o, "null");
		return 0;
	}
}

bool xs_stat_number(const struct xs_statv *s, double *d)
{
	switch (s->kind) {
	case SV_DOUBLE:
		*d = s->d;
		return isfinite(s->d);
	case SV_U64:
		*d = (double)s->u;
		return true;
	case SV_I64:
		*d = (double)(int64_t)s->u;
		return true;
	default:
		return false;
	}
}

int xs_stat_str_at(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s, size_t cap,
		   const char **p, size_t *n)
{
	const struct xs_stmd *ref;
	const uint8_t *q;
	int r;

	if (s->kind == SV_REF) {
		if ((r = xs_md_stat(rc, (int64_t)s->u, &ref)) < 0)
			return r;
		*p = ref->name;
		*n = ref->name_len;
		return 1;
	}
	if (s->kind != SV_STR)
		return 0;
	*n = s->len > cap ? cap : (size_t)s->len;
	if ((r = wire_at(c, s->off, *n, &q)) < 0)
		return r;
	*p = (const char *)q;
	return 1;
}

int xs_stat_string(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s, char **out)
{
	const char *p;
	size_t n;
	int r;

	if ((r = xs_stat_str_at(rc, c, s, XS_NAME_MAX, &p, &n)) < 0)
		return r;
	if (r == 0) {
		struct xs_out o;

		xs_out_init(&o, NULL);
		if ((r = stat_value(rc, c, s, &o)) < 0 || (r = o.r) < 0) {
			xs_out_deinit(&o);
			return r;
		}
		*out = xs_out_steal(&o, NULL);
		xs_out_deinit(&o);
		return *out ? 0 : -ENOMEM;
	}
	*out = strndup(p, n);
	return *out ? 0 : -ENOMEM;
}

/*
 * walk_fast() - xs_walk_stats()'s common case, field by field from memory:
 * while the next field lies wholly in @c's window and is plain (a stats field
 * of at most 4 KiB, or another field of a well-formed wire type), it is taken
 * here without the cursor's per-field calls. Anything else (a window edge, a
 * big stat, a malformed tag) stops it with c->pos at that field's start, where
 * the general loop takes over, so errors and their messages are the general
 * loop's. Returns 0 to go on there, or <0 (a callback's error, a malformed
 * XStat); *done is true when the message was walked to its end.
 */
static inline __attribute__((always_inline)) int walk_fast(struct xs_rctx *rc, struct wire_cur *c,
							   uint64_t mend, uint32_t field,
							   xs_stat_fn fn, void *arg, bool *done)
{
	struct xs_statv s;
	int r;

	*done = false;
	while (c->pos < mend) {
		const uint8_t *p, *q, *e;
		size_t n = wire_avail(c, &p);
		uint64_t t, v, at;

		if (n == 0)
			return 0;
		q = p;
		e = p + n;
		if (wire_rd_varint(&q, e, &t) < 0 || (t >> 3) == 0 || (t >> 3) > 536870911u)
			return 0;
		if ((t >> 3) == field) {
			if ((t & 7) != WT_LEN || wire_rd_varint(&q, e, &v) < 0 || v > 4096 ||
			    v > (uint64_t)(e - q))
				return 0;
			at = c->pos + (uint64_t)(q - p);
			if (rd_stat(q, q + v, at, &s) < 0)
				return wire_fail(c, "malformed XStat at offset %" PRIu64, at);
			c->pos = at + v;
			if ((r = fn(rc, c, &s, arg)) < 0)
				return r;
			c->pos = at + v; /* as the general loop leaves it */
			c->end = mend;
			continue;
		}
		switch (t & 7) {
		case WT_VARINT:
			if (wire_rd_varint(&q, e, &v) < 0)
				return 0;
			break;
		case WT_I64:
			if (e - q < 8)
				return 0;
			q += 8;
			break;
		case WT_I32:
			if (e - q < 4)
				return 0;
			q += 4;
			break;
		case WT_LEN:
			if (wire_rd_varint(&q, e, &v) < 0 || v > (uint64_t)(e - q))
				return 0;
			q += v;
			break;
		default:
			return 0;
		}
		c->pos += (uint64_t)(q - p);
	}
	*done = true;
	return 0;
}

/*
 * walk_from() - xs_walk_stats() from c->pos (a field start) to @mend: the fast
 * path, then the general loop. c->pos and c->end are the caller's to restore.
 */
static inline __attribute__((always_inline)) int walk_from(struct xs_rctx *rc, struct wire_cur *c,
							   uint64_t mend, uint32_t field,
							   xs_stat_fn fn, void *arg)
{
	uint64_t slen, send;
	struct xs_statv s;
	bool done;
	int r;

	c->end = mend;
	if ((r = walk_fast(rc, c, mend, field, fn, arg, &done)) < 0 || done)
		return r;
	while ((r = wire_next_len_field(c, mend, "stats", field, &slen)) > 0) {
		send = c->pos + slen;
		if (slen <= 4096) {
			const uint8_t *p;

			if ((r = wire_at(c, c->pos, (size_t)slen, &p)) < 0)
				return r;
			if (rd_stat(p, p + slen, c->pos, &s) < 0)
				return wire_fail(c, "malformed XStat at offset %" PRIu64, c->pos);
		} else {
			c->end = send;
			r = xs_stat_parse(c, &s);
			c->end = mend;
			if (r < 0)
				return r;
		}
		c->pos = send;
		if ((r = fn(rc, c, &s, arg)) < 0)
			return r;
		c->pos = send;
		c->end = mend;
	}
	return r;
}

int xs_walk_stats(struct xs_rctx *rc, struct wire_cur *c, uint64_t off, uint64_t len,
		  uint32_t field, xs_stat_fn fn, void *arg)
{
	uint64_t pos = c->pos, end = c->end;
	int r;

	c->pos = off;
	r = walk_from(rc, c, off + len, field, fn, arg);
	c->pos = pos;
	c->end = end;
	return r;
}

/* What the general path of xs_walk_stats_keys() passes on (keys_stat()). */
struct keys_arg {
	const struct xs_stat_keys *k;
	xs_stat_fn fn;
	void *arg;
};

void xs_stat_keys_add(struct xs_stat_keys *k, int64_t key)
{
	if (k->n >= XS_STAT_KEYS_MAX)
		return;
	k->key[k->n++] = key;
	if (key >= 0 && key < 64)
		k->lo |= (uint64_t)1 << key;
}

static inline bool keys_has(const struct xs_stat_keys *k, int64_t md)
{
	if (md >= 0 && md < 64) /* xs_stat_keys_add() keeps these in the mask */
		return (k->lo >> md) & 1;
	for (size_t i = 0; i < k->n; i++)
		if (k->key[i] == md)
			return true;
	return false;
}

/*
 * canon_md() - the metadata id of XStat body [b, e) when it is a canonical
 * stat with a one-byte id and a varint, double or short string value (the
 * stats of an event, nearly always): exactly what rd_stat_canonical() accepts
 * of that form, checked without decoding the value. -1: another form (then
 * rd_stat_canonical() decides). [b, lim) is readable: a short varint is
 * checked as one eight-byte word when the word fits.
 */
static inline int64_t canon_md(const uint8_t *b, const uint8_t *e, const uint8_t *lim)
{
	const uint8_t *q = b + 3;
	size_t n = (size_t)(e - q);
	unsigned t;

	if (e - b < 4 || b[0] != WIRE_TAG(XSTAT_F_METADATA_ID, WT_VARINT) || b[1] > 0x7f)
		return -1;
	t = b[2]; /* the value's tag, the varints first: most stats are numbers or refs */
	if (t == WIRE_TAG(XSTAT_F_UINT64, WT_VARINT) || t == WIRE_TAG(XSTAT_F_INT64, WT_VARINT) ||
	    t == WIRE_TAG(XSTAT_F_REF, WT_VARINT)) {
		if (n <= 8 && lim - q >= 8) { /* the first stop byte is the last: one word's test */
			uint64_t stop = ~wire_le64(q) & 0x8080808080808080ull;

			return stop && (size_t)__builtin_ctzll(stop) / 8 == n - 1 ? b[1] : -1;
		}
		if (n > 10 || q[n - 1] > 0x7f || (n == 10 && q[9] > 1))
			return -1;
		for (const uint8_t *z = q + n - 1; q < z; q++)
			if (*q < 0x80)
				return -1;
		return b[1];
	}
	if (t == WIRE_TAG(XSTAT_F_DOUBLE, WT_I64))
		return n == 8 ? b[1] : -1;
	if (t == WIRE_TAG(XSTAT_F_STR, WT_LEN) || t == WIRE_TAG(XSTAT_F_BYTES, WT_LEN) ||
	    t == WIRE_TAG(XSTAT_F_COMPRESSED, WT_LEN))
		return q[0] == n - 1 ? b[1] : -1; /* a one-byte length: n <= 124 */
	return -1;
}

/*
 * canon_value() - @s from body [b, e) that canon_md() accepted: what
 * rd_stat_canonical() makes of it, from bytes already checked.
 */
static inline void canon_value(const uint8_t *b, const uint8_t *e, uint64_t off, struct xs_statv *s)
{
	const uint8_t *q = b + 3;
	unsigned t = b[2];
	uint64_t v = 0;

	if (t == WIRE_TAG(XSTAT_F_DOUBLE, WT_I64)) {
		for (int i = 7; i >= 0; i--)
			v = (v << 8) | q[i];
		*s = (struct xs_statv){.md = b[1], .kind = SV_DOUBLE};
		memcpy(&s->d, &v, sizeof(v));
	} else if ((t & 7) == WT_LEN) {
		*s = (struct xs_statv){
			.md = b[1], .kind = (int)(t >> 3), .off = off + 4, .len = q[0]};
	} else {
		for (int i = 0; q < e; q++, i += 7)
			v |= (uint64_t)(*q & 0x7f) << i;
		*s = (struct xs_statv){.md = b[1], .kind = (int)(t >> 3), .u = v};
	}
}

/* A xs_stat_fn: the stats of the keys on to the caller's function (arg: struct keys_arg). */
static int keys_stat(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s, void *arg)
{
	const struct keys_arg *a = arg;

	return keys_has(a->k, s->md) ? a->fn(rc, c, s, a->arg) : 0;
}

/*
 * xs_walk_stats_keys() - the common case (the whole message in @c's window, a
 * run of short stats fields each in the canonical form, which cannot fail to
 * parse) is scanned here, each stat's metadata id read and compared with the
 * keys; at the first anything else the general walk takes over from that
 * field, so errors and their messages are xs_walk_stats()'s.
 */
int xs_walk_stats_keys(struct xs_rctx *rc, struct wire_cur *c, uint64_t off, uint64_t len,
		       uint32_t field, const struct xs_stat_keys *k, xs_stat_fn fn, void *arg)
{
	uint64_t pos = c->pos, end = c->end, mend = off + len, at = off;
	const unsigned tag = WIRE_TAG(field, WT_LEN);
	struct keys_arg ka = {k, fn, arg};
	const uint8_t *p = NULL, *q, *e;
	struct xs_statv s;
	int64_t md;
	int r = 0;

	c->pos = off;
	c->end = mend;
	if (tag > 0x7f || wire_avail(c, &p) < len)
		goto general;
	for (q = p, e = p + len; q < e;) {
		const uint8_t *b = q + 2, *be;

		if (e - q < 2 || q[0] != tag || q[1] > 0x7f || q[1] > e - b)
			break;
		be = b + q[1];
		if ((md = canon_md(b, be, e)) >= 0 && !keys_has(k, md)) {
			at += (uint64_t)(be - q); /* checked, not wanted */
			q = be;
			continue;
		}
		if (md >= 0)
			canon_value(b, be, at + 2, &s);
		else if (!rd_stat_canonical(b, be, at + 2, &s))
			break;
		at += (uint64_t)(be - q);
		q = be;
		if (!keys_has(k, s.md))
			continue;
		c->pos = at; /* as the general loop leaves it */
		c->end = mend;
		if ((r = fn(rc, c, &s, arg)) < 0)
			goto out;
		r = 0;
		c->pos = at; /* @fn may have moved the window */
		c->end = mend;
		if (wire_avail(c, &q) < mend - at)
			goto general;
		e = q + (mend - at);
	}
	if (at >= mend)
		goto out;
	c->pos = at;
	c->end = mend;
general:
	r = walk_from(rc, c, mend, field, keys_stat, &ka);
out:
	c->pos = pos;
	c->end = end;
	return r;
}

int xs_render_stat(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s, void *arg)
{
	struct xs_render_arg *a = arg;
	const struct xs_stmd *m;
	int r;

	if ((r = xs_md_stat(rc, s->md, &m)) < 0)
		return r;
	if (!a->first)
		OUT_LIT(a->o, ",");
	a->first = false;
	xs_out_add(a->o, m->json, m->json_len + 1);
	return stat_value(rc, c, s, a->o);
}

/* The string field of @os for bit @i (XS_OS_*). */
static char **opstats_str(struct xs_opstats *os, int i)
{
	static const uint16_t off[XS_OS_NSTR] = {
		[XS_OS_CATEGORY] = offsetof(struct xs_opstats, category),
		[XS_OS_HLO_OP] = offsetof(struct xs_opstats, hlo_op),
		[XS_OS_STEP_NAME] = offsetof(struct xs_opstats, step_name),
		[XS_OS_HLO_MODULE] = offsetof(struct xs_opstats, hlo_module),
		[XS_OS_KERNEL_DETAILS] = offsetof(struct xs_opstats, kernel_details),
		[XS_OS_TF_OP] = offsetof(struct xs_opstats, tf_op),
	};

	return (char **)(void *)((char *)os + off[i]);
}

void xs_opstats_clear(struct xs_opstats *s)
{
	/* borrow mode: only the copies are ours */
	unsigned mine = s->borrow ? s->owned : (1u << XS_OS_NSTR) - 1;

	for (int i = 0; mine && i < XS_OS_NSTR; i++)
		if (mine & (1u << i))
			free(*opstats_str(s, i));
	if (s->borrow)
		s->owned = 0; /* a per-event struct is dropped next: the rest is left */
	else
		memset(s, 0, sizeof(*s));
}

/*
 * opstats_set() - string @i of @os from stat @s: a copy, or in borrow mode the
 * ref'd stat metadata's name itself (the same characters a copy would have:
 * xs_stat_string() copies that NUL-terminated name).
 */
static int opstats_set(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s,
		       struct xs_opstats *os, int i)
{
	char **dst = opstats_str(os, i);
	const struct xs_stmd *ref;
	uint8_t bit = (uint8_t)(1u << i);
	int r;

	if (!os->borrow) {
		free(*dst);
		*dst = NULL;
		return xs_stat_string(rc, c, s, dst);
	}
	if (os->owned & bit)
		free(*dst);
	*dst = NULL;
	os->owned &= (uint8_t)~bit;
	os->plain &= (uint8_t)~bit;
	if (s->kind == SV_REF) {
		if ((r = xs_md_stat(rc, (int64_t)s->u, &ref)) < 0)
			return r;
		*dst = ref->name;
		os->ref[i] = (int64_t)s->u;
		return 0;
	}
	os->plain |= bit;
	if ((r = xs_stat_string(rc, c, s, dst)) < 0)
		return r;
	os->owned |= bit;
	return 0;
}

/*
 * The stats xs_collect_stat() looks at: a string (XS_OS_*; @strings: only when
 * the caller asks for the analyses' strings, docs/stats.md), a number
 * (xs_stat_number()) into a double, or an integer (u64 or i64, its bits)
 * into an int64_t or uint64_t; @has: the field's bool saying it is set.
 */
enum { C_STR, C_NUM, C_INT };
#define OS_FIELD(f)                                                                                \
	.off = offsetof(struct xs_opstats, f), .has = offsetof(struct xs_opstats, has_##f)
#define OS_AMOUNT(f)                                                                               \
	.off = offsetof(struct xs_opstats, amt.f), .has = offsetof(struct xs_opstats, amt.has_##f)
static const struct collect_def {
	const char *name;
	uint8_t how;
	int8_t si;
	bool strings;
	uint16_t off, has;
} collect_defs[] = {
	{"hlo_category", C_STR, .si = XS_OS_CATEGORY},
	{"hlo_op", C_STR, .si = XS_OS_HLO_OP},
	{"step_name", C_STR, .si = XS_OS_STEP_NAME},
	{"flops", C_NUM, OS_AMOUNT(flops)},
	{"bytes_accessed", C_NUM, OS_AMOUNT(bytes)},
	{"step_num", C_INT, OS_FIELD(step_num)},
	{"hlo_module", C_STR, .si = XS_OS_HLO_MODULE, .strings = true},
	{"kernel_details", C_STR, .si = XS_OS_KERNEL_DETAILS, .strings = true},
	{"tf_op", C_STR, .si = XS_OS_TF_OP, .strings = true},
	{"model_flops", C_NUM, OS_AMOUNT(model_flops)},
	{"program_id", C_INT, OS_FIELD(program_id)},
	{"device_offset_ps", C_INT, OS_FIELD(dev_off)},
	{"device_duration_ps", C_INT, OS_FIELD(dev_dur)},
	{"group_id", C_INT, OS_FIELD(group_id)},
	{"correlation_id", C_INT, OS_FIELD(corr)},
};
#undef OS_FIELD
/* The class of a name that is none of them (xs_stmd.ckind: 0 not yet known, else index + 1). */
#define CK_OTHER ((int8_t)(sizeof(collect_defs) / sizeof(collect_defs[0]) + 1))

static int8_t collect_kind(const char *name, size_t len)
{
	for (int8_t k = 1; k < CK_OTHER; k++)
		if (xs_str_eq(name, len, collect_defs[k - 1].name))
			return k;
	return CK_OTHER;
}

int xs_collect_stat(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s, void *arg)
{
	struct xs_opstats *os = arg;
	const struct collect_def *d;
	const struct xs_stmd *m;
	int8_t kind;
	double v;
	int r;

	if ((r = xs_md_stat(rc, s->md, &m)) < 0)
		return r;
	/* a named entry is this render's own cache entry: note its class once (the shared
	 * empty entry of a missing key has no name and is never written) */
	if (!m->name_len)
		kind = CK_OTHER;
	else if (!(kind = m->ckind))
		kind = ((struct xs_stmd *)m)->ckind = collect_kind(m->name, m->name_len);
	if (kind == CK_OTHER)
		return 0;
	d = &collect_defs[kind - 1];
	switch (d->how) {
	case C_STR:
		/* tf_op is also wanted alone, by the GPU op tables */
		return !d->strings || os->strings || (d->si == XS_OS_TF_OP && os->want_tf_op)
			       ? opstats_set(rc, c, s, os, d->si)
			       : 0;
	case C_NUM:
		if (!xs_stat_number(s, &v))
			return 0;
		memcpy((char *)os + d->off, &v, sizeof(v));
		break;
	default:
		if (s->kind != SV_U64 && s->kind != SV_I64)
			return 0;
		memcpy((char *)os + d->off, &s->u, sizeof(s->u));
		break;
	}
	*(bool *)((char *)os + d->has) = true;
	return 0;
}

int xs_event_stats(struct xs_rctx *rc, const struct xs_evmd *m, const struct xs_event *e,
		   struct xs_out *o, bool *first)
{
	struct xs_render_arg ra = {o, *first};
	int r;

	if (m->stats_json_len) {
		if (!ra.first)
			OUT_LIT(o, ",");
		xs_out_add(o, m->stats_json, m->stats_json_len);
		ra.first = false;
	}
	if (e->has_stats &&
	    (r = xs_walk_stats(rc, &rc->ev, e->stats_off, e->off + e->len - e->stats_off,
			       XEVENT_F_STATS, xs_render_stat, &ra)) < 0)
		return r;
	*first = ra.first;
	return 0;
}

int64_t xs_plane_stat_int(const struct xs_plane *p, struct wire_cur *c, const char *want)
{
	for (size_t i = 0; i < p->n_stats; i++) {
		struct xs_statv s;
		const uint8_t *name;
		uint64_t len;
		uint32_t f;
		ssize_t k;
		int wt;

		c->pos = p->stats[i].off;
		c->end = p->stats[i].off + p->stats[i].len;
		if (xs_stat_parse(c, &s) < 0)
			return 0;
		k = xs_md_find(&p->st, s.md);
		if ((s.kind != SV_U64 && s.kind != SV_I64) || k < 0)
			continue;
		/* the stat metadata's name */
		c->pos = p->st.md[k].off;
		c->end = p->st.md[k].off + p->st.md[k].len;
		while (c->pos < c->end) {
			if (wire_tag(c, &f, &wt) < 0)
				return 0;
			if (f == XSTMD_F_NAME && wt == WT_LEN) {
				if (wire_len(c, &len) < 0 ||
				    wire_at(c, c->pos, (size_t)len, &name) < 0)
					return 0;
				if (xs_str_eq((const char *)name, (size_t)len, want))
					return (int64_t)s.u;
				c->pos += len;
			} else if (wire_skip(c, wt) < 0) {
				return 0;
			}
		}
	}
	return 0;
}
