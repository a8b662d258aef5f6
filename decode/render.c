/*
 * render.c - the JSON views of an indexed XSpace: summary.json, one track
 * (planes/<plane>/<line>.json), trace.json, ops.json, steps.json, and the
 * session-level summary.
 *
 * Design: every render call owns a struct rctx: two cursors (one streams the
 * events of the current line, one serves metadata look-ups) and a cache of
 * the current plane's decoded metadata (names pre-escaped as JSON, metadata
 * stats pre-rendered). The cache is an array parallel to the plane's key
 * index, filled on demand and dropped entirely when it passes MD_BUDGET
 * bytes (checked between events) or when the render moves to another plane,
 * so memory is O(metadata entries) + MD_BUDGET whatever the profile size.
 * The plane's metadata region is read into the metadata window in one go
 * when it is at most dec_md_region_max (16 MiB); larger regions are read
 * entry by entry with 16 KiB refills (look-ups come in no particular order).
 * Output is appended to one buffer that is flushed to the sink every
 * OUT_CHUNK bytes. Numbers are formatted by hand (no printf per event), and
 * ps -> us conversions are exact decimals, so nested events keep nesting.
 *
 * Limits: strings longer than DEC_STR_MAX and compressed strings inflating
 * past ZSTR_MAX are cut; ops keeps at most OPS_MAX distinct ops per plane
 * (the rest go to "(other)") and nests at most OPS_DEPTH_MAX deep; steps
 * keeps at most STEPS_MAX steps. Stats with a missing metadata entry get
 * the empty name; duplicate stat names are all written (JSON parsers keep
 * the last one).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "decode-internal.h"

#define OUT_CHUNK ((size_t)64 << 10)
#define OUT_MAX ((size_t)256 << 20)
#define MD_BUDGET ((size_t)64 << 20)
#define ZSTR_MAX ((size_t)1 << 20)
#define OPS_MAX ((size_t)1 << 20)
#define OPS_DEPTH_MAX 1024
#define STEPS_MAX ((size_t)1 << 20)

size_t dec_md_region_max = (size_t)16 << 20;

/* ---- output ---------------------------------------------------------- */

/*
 * The output buffer: with a sink it holds at most OUT_CHUNK bytes and is
 * written out whenever the next piece does not fit (a single piece larger
 * than that is passed through whole); without a sink it grows up to
 * OUT_MAX. Errors are sticky: after the first one every append is a no-op
 * and the error comes back from out_flush().
 */
struct out {
	char *buf; /* owned */
	size_t len, cap;
	const struct xprofs_sink *sink; /* borrowed, may be NULL */
	struct xprofs_buf esc;          /* scratch for JSON escaping */
	int r;
};

static void out_init(struct out *o, const struct xprofs_sink *sink)
{
	memset(o, 0, sizeof(*o));
	o->sink = sink;
	xprofs_buf_init(&o->esc, DEC_STR_MAX * 6 + 64);
}

static void out_deinit(struct out *o)
{
	free(o->buf);
	o->buf = NULL;
	o->len = o->cap = 0;
	xprofs_buf_deinit(&o->esc);
}

/* out_steal() - the bytes written (caller owns; free with free()), or NULL. */
static char *out_steal(struct out *o, size_t *len)
{
	char *p = o->buf;

	if (o->r || !p) {
		if (len)
			*len = 0;
		return NULL;
	}
	if (len)
		*len = o->len;
	p[o->len] = '\0';
	o->buf = NULL;
	o->len = o->cap = 0;
	return p;
}

static int out_write(struct out *o)
{
	int r;

	if (o->len && (r = o->sink->write(o->sink->arg, o->buf, o->len)) < 0)
		o->r = r;
	o->len = 0;
	return o->r;
}

/* Make room for @n more bytes (plus a NUL for out_steal()). */
static int out_room(struct out *o, size_t n)
{
	size_t cap;
	char *p;

	if (o->sink && o->len && out_write(o) < 0)
		return o->r;
	if (n < o->cap - o->len)
		return 0;
	if (n > OUT_MAX - o->len - 1) {
		o->r = -E2BIG;
		return o->r;
	}
	cap = o->cap ? o->cap : (o->sink ? OUT_CHUNK : 256);
	while (cap < o->len + n + 1)
		cap *= 2;
	p = realloc(o->buf, cap);
	if (!p) {
		o->r = -ENOMEM;
		return o->r;
	}
	o->buf = p;
	o->cap = cap;
	return 0;
}

static inline void out_add(struct out *o, const void *p, size_t n)
{
	if (o->r)
		return;
	if (n >= o->cap - o->len && out_room(o, n) < 0)
		return;
	memcpy(o->buf + o->len, p, n);
	o->len += n;
}

/* string literals only ("" s rejects anything else at compile time) */
#define OUT_LIT(o, s) out_add((o), "" s, sizeof("" s) - 1)
#define OUT_RAW(o, s) out_add((o), (s), strlen(s))

static void out_str(struct out *o, const char *s, size_t n)
{
	int r;

	if (o->r)
		return;
	xprofs_buf_reset(&o->esc);
	if ((r = xprofs_buf_add_json_str(&o->esc, s, n)) < 0) {
		o->r = r;
		return;
	}
	out_add(o, o->esc.data, o->esc.len);
}

static void out_cstr(struct out *o, const char *s)
{
	out_str(o, s, strlen(s));
}

static const char digits2[] = "00010203040506070809101112131415161718192021222324"
			      "25262728293031323334353637383940414243444546474849"
			      "50515253545556575859606162636465666768697071727374"
			      "75767778798081828384858687888990919293949596979899";

/* Decimal digits of @v into @buf (at least 20 bytes); returns the length. */
static inline size_t fmt_u64(char *buf, uint64_t v)
{
	char t[24], *p = t + sizeof(t);
	size_t n;

	while (v >= 100) {
		p -= 2;
		memcpy(p, digits2 + (v % 100) * 2, 2);
		v /= 100;
	}
	if (v >= 10) {
		p -= 2;
		memcpy(p, digits2 + v * 2, 2);
	} else {
		*--p = (char)('0' + v);
	}
	n = (size_t)(t + sizeof(t) - p);
	memcpy(buf, p, n);
	return n;
}

/* Reserve @n bytes at the end of the output; NULL after an error. */
static inline char *out_reserve(struct out *o, size_t n)
{
	if (o->r)
		return NULL;
	if (n >= o->cap - o->len && out_room(o, n) < 0)
		return NULL;
	return o->buf + o->len;
}

static inline void out_u64(struct out *o, uint64_t v)
{
	char *p = out_reserve(o, 24);

	if (p)
		o->len += fmt_u64(p, v);
}

static inline void out_i64(struct out *o, int64_t v)
{
	char *p = out_reserve(o, 24);

	if (!p)
		return;
	if (v < 0) {
		*p = '-';
		o->len += 1 + fmt_u64(p + 1, (uint64_t)0 - (uint64_t)v);
	} else {
		o->len += fmt_u64(p, (uint64_t)v);
	}
}

/* @ps picoseconds as an exact decimal number of microseconds. */
static inline void out_us(struct out *o, int64_t ps)
{
	char *p = out_reserve(o, 40);
	uint64_t u = ps < 0 ? (uint64_t)0 - (uint64_t)ps : (uint64_t)ps;
	uint32_t frac = (uint32_t)(u % 1000000);
	size_t n = 0;

	if (!p)
		return;
	if (ps < 0)
		p[n++] = '-';
	n += fmt_u64(p + n, u / 1000000);
	if (frac) {
		char f[6];
		size_t k = 6;

		memcpy(f, digits2 + (frac / 10000) * 2, 2);
		memcpy(f + 2, digits2 + (frac / 100 % 100) * 2, 2);
		memcpy(f + 4, digits2 + (frac % 100) * 2, 2);
		while (f[k - 1] == '0')
			k--;
		p[n++] = '.';
		memcpy(p + n, f, k);
		n += k;
	}
	o->len += n;
}

static void out_double(struct out *o, double d)
{
	char buf[40];
	int n;

	if (!isfinite(d)) {
		OUT_LIT(o, "null");
		return;
	}
	/* integral values (counters mostly) need no printf */
	if (d > -9007199254740992.0 && d < 9007199254740992.0 && d == (double)(int64_t)d) {
		out_i64(o, (int64_t)d);
		return;
	}
	n = snprintf(buf, sizeof(buf), "%.15g", d);
	if (strtod(buf, NULL) != d)
		n = snprintf(buf, sizeof(buf), "%.17g", d);
	out_add(o, buf, (size_t)n);
}

/* out_flush() - the sticky error; with @force, also write what is buffered. */
static int out_flush(struct out *o, bool force)
{
	if (o->r || !o->sink || !force)
		return o->r;
	return out_write(o);
}

/* ---- render context and metadata cache ------------------------------- */

struct stmd {
	bool loaded;
	char *name; /* raw, NUL-terminated */
	size_t name_len;
	char *json; /* the name as a JSON string */
	size_t json_len;
};

struct evmd {
	bool loaded;
	char *name; /* raw display name, else name */
	size_t name_len;
	char *name_json, *full_json, *stats_json; /* stats_json: "k":v,... */
	size_t name_json_len, full_json_len, stats_json_len;
	bool has_display; /* display name set and differing from name */
	/* from the metadata's stats, for ops */
	char *category, *hlo_op;
	double flops, bytes;
	bool has_flops, has_bytes;
	int64_t step_num;
	bool has_step_num;
	int64_t group; /* ops group in the current aggregation, -1 unknown */
};

struct rctx {
	struct xprofs_xspace *x; /* borrowed */
	struct dec_cur ev, md;
	struct xprofs_buf *err; /* borrowed, may be NULL */
	size_t plane;
	struct evmd *evmd; /* owned, parallel to plane->ev.md */
	struct stmd *stmd;
	size_t md_bytes;
	struct xprofs_buf tmp;
};

static struct stmd empty_stmd = {true, (char *)"", 0, (char *)"\"\":", 2};
static struct evmd empty_evmd = {.loaded = true, .name = (char *)"", .name_json = (char *)"\"\"",
				 .name_json_len = 2, .full_json = (char *)"\"\"", .full_json_len = 2,
				 .stats_json = (char *)"", .group = -1};

static void stmd_clear(struct stmd *s)
{
	free(s->name);
	free(s->json);
	memset(s, 0, sizeof(*s));
}

static void evmd_clear(struct evmd *e)
{
	free(e->name);
	free(e->name_json);
	free(e->full_json);
	free(e->stats_json);
	free(e->category);
	free(e->hlo_op);
	memset(e, 0, sizeof(*e));
}

static void md_drop(struct rctx *rc)
{
	const struct dec_plane *p;

	if (rc->plane >= rc->x->n_planes)
		return;
	p = &rc->x->planes[rc->plane];
	for (size_t i = 0; rc->evmd && i < p->ev.n; i++)
		if (rc->evmd[i].loaded)
			evmd_clear(&rc->evmd[i]);
	for (size_t i = 0; rc->stmd && i < p->st.n; i++)
		if (rc->stmd[i].loaded)
			stmd_clear(&rc->stmd[i]);
	rc->md_bytes = 0;
}

static void rctx_init(struct rctx *rc, struct xprofs_xspace *x, struct xprofs_buf *err)
{
	memset(rc, 0, sizeof(*rc));
	rc->x = x;
	rc->err = err;
	rc->plane = SIZE_MAX;
	dec_cur_init(&rc->ev, x->r, err);
	dec_cur_init(&rc->md, x->r, err);
	xprofs_buf_init(&rc->tmp, DEC_STR_MAX + 64);
}

static void rctx_deinit(struct rctx *rc)
{
	md_drop(rc);
	free(rc->evmd);
	free(rc->stmd);
	dec_cur_deinit(&rc->ev);
	dec_cur_deinit(&rc->md);
	xprofs_buf_deinit(&rc->tmp);
}

static int plane_enter(struct rctx *rc, size_t pi)
{
	const struct dec_plane *p = &rc->x->planes[pi];

	if (rc->plane == pi)
		return 0;
	md_drop(rc);
	free(rc->evmd);
	free(rc->stmd);
	rc->evmd = calloc(p->ev.n + 1, sizeof(*rc->evmd));
	rc->stmd = calloc(p->st.n + 1, sizeof(*rc->stmd));
	rc->plane = pi;
	if (!rc->evmd || !rc->stmd) {
		free(rc->evmd);
		free(rc->stmd);
		rc->evmd = NULL;
		rc->stmd = NULL;
		rc->plane = SIZE_MAX;
		return -ENOMEM;
	}
	/*
	 * Metadata is looked up in no particular order: read the plane's whole
	 * metadata region into the metadata window at once when it is small
	 * enough, so that look-ups never refill.
	 */
	if (!rc->md.base && p->md_hi > p->md_lo && p->md_hi - p->md_lo <= dec_md_region_max) {
		const uint8_t *q;

		rc->md.win_pref = DEC_WIN_SIZE;
		return dec_at(&rc->md, p->md_lo, (size_t)(p->md_hi - p->md_lo), &q);
	}
	/* a huge region is read entry by entry: small refills, no 1 MiB per miss */
	rc->md.win_pref = (size_t)16 << 10;
	return 0;
}

/* Between events: keep the decoded metadata under its budget. */
static void md_gc(struct rctx *rc)
{
	if (rc->md_bytes > MD_BUDGET)
		md_drop(rc);
}

/* JSON-quote @s into a new string. Caller owns *out. */
static int json_dup(const char *s, size_t n, char **out, size_t *out_len)
{
	struct xprofs_buf b;
	int r;

	xprofs_buf_init(&b, SIZE_MAX / 2);
	if ((r = xprofs_buf_add_json_str(&b, s, n)) < 0) {
		xprofs_buf_deinit(&b);
		return r;
	}
	*out = xprofs_buf_steal(&b, out_len);
	return 0;
}

/* get_stmd() - the current plane's stat metadata @key (borrowed, valid until md_gc()). */
static int get_stmd(struct rctx *rc, int64_t key, const struct stmd **out)
{
	const struct dec_plane *p = &rc->x->planes[rc->plane];
	ssize_t k = dec_md_find(&p->st, key);
	struct dec_cur *c = &rc->md;
	uint64_t pos = c->pos, end = c->end;
	struct stmd *s;
	uint32_t f;
	int wt, r = 0;

	if (k < 0) {
		*out = &empty_stmd;
		return 0;
	}
	s = &rc->stmd[k];
	if (s->loaded) {
		*out = s;
		return 0;
	}
	c->pos = p->st.md[k].off;
	c->end = p->st.md[k].off + p->st.md[k].len;
	while (c->pos < c->end) {
		if ((r = dec_tag(c, &f, &wt)) < 0)
			goto out;
		if (f == 2) {
			if ((r = dec_expect(c, wt, WT_LEN, "XStatMetadata", f)) < 0 ||
			    (r = dec_string(c, DEC_STR_MAX, &s->name, &s->name_len)) < 0)
				goto out;
		} else if ((r = dec_skip(c, wt)) < 0) {
			goto out;
		}
	}
	if (!s->name && !(s->name = strdup(""))) {
		r = -ENOMEM;
		goto out;
	}
	if ((r = json_dup(s->name, s->name_len, &s->json, &s->json_len)) < 0)
		goto out;
	{
		/* keep a ':' after the name: stats write (json, json_len + 1) as their key */
		char *kj = realloc(s->json, s->json_len + 2);

		if (!kj) {
			r = -ENOMEM;
			goto out;
		}
		kj[s->json_len] = ':';
		kj[s->json_len + 1] = '\0';
		s->json = kj;
	}
	s->loaded = true;
	rc->md_bytes += sizeof(*s) + s->name_len + s->json_len;
	*out = s;
out:
	if (r < 0)
		stmd_clear(s);
	c->pos = pos;
	c->end = end;
	return r;
}

/* ---- stats ------------------------------------------------------------ */

enum { SV_NONE = 0, SV_DOUBLE = 2, SV_U64, SV_I64, SV_STR, SV_BYTES, SV_REF, SV_ZSTR };

struct statv {
	int64_t md;
	int kind;
	uint64_t u; /* u64, i64 (as bits), ref */
	double d;
	uint64_t off, len; /* str, bytes, compressed */
};

/* Parse the XStat body [c->pos, c->end). */
static int stat_parse(struct dec_cur *c, struct statv *s)
{
	uint64_t v;
	uint32_t f;
	int wt, r;

	memset(s, 0, sizeof(*s));
	while (c->pos < c->end) {
		if ((r = dec_tag(c, &f, &wt)) < 0)
			return r;
		switch (f) {
		case 1: case 3: case 4: case 7:
			if ((r = dec_expect(c, wt, WT_VARINT, "XStat", f)) < 0 ||
			    (r = dec_varint(c, &v)) < 0)
				return r;
			if (f == 1) {
				s->md = (int64_t)v;
			} else {
				s->kind = f == 3 ? SV_U64 : f == 4 ? SV_I64 : SV_REF;
				s->u = v;
			}
			break;
		case 2:
			if ((r = dec_expect(c, wt, WT_I64, "XStat", f)) < 0 ||
			    (r = dec_fixed64(c, &v)) < 0)
				return r;
			s->kind = SV_DOUBLE;
			memcpy(&s->d, &v, sizeof(v));
			break;
		case 5: case 6: case 8:
			if ((r = dec_expect(c, wt, WT_LEN, "XStat", f)) < 0 ||
			    (r = dec_len(c, &v)) < 0)
				return r;
			s->kind = f == 5 ? SV_STR : f == 6 ? SV_BYTES : SV_ZSTR;
			s->off = c->pos;
			s->len = v;
			c->pos += v;
			break;
		default:
			if ((r = dec_skip(c, wt)) < 0)
				return r;
		}
	}
	return 0;
}

/* stat_parse() for an XStat body [p, e) in memory that starts at file offset @off. */
static int rd_stat(const uint8_t *p, const uint8_t *e, uint64_t off, struct statv *s)
{
	const uint8_t *b = p;
	uint64_t t, v;

	memset(s, 0, sizeof(*s));
	while (p < e) {
		uint32_t f;

		if (rd_varint(&p, e, &t) < 0 || (t >> 3) == 0)
			return -1;
		f = (uint32_t)(t >> 3);
		switch (t & 7) {
		case 0:
			if (rd_varint(&p, e, &v) < 0)
				return -1;
			if (f == 1)
				s->md = (int64_t)v;
			else if (f == 3 || f == 4 || f == 7)
				s->kind = f == 3 ? SV_U64 : f == 4 ? SV_I64 : SV_REF, s->u = v;
			else if (f == 2 || f == 5 || f == 6 || f == 8)
				return -1;
			break;
		case 1:
			if (e - p < 8)
				return -1;
			if (f == 2) {
				v = 0;
				for (int i = 7; i >= 0; i--)
					v = (v << 8) | p[i];
				memcpy(&s->d, &v, 8);
				s->kind = SV_DOUBLE;
			} else if (f >= 1 && f <= 8) {
				return -1;
			}
			p += 8;
			break;
		case 2:
			if (rd_varint(&p, e, &v) < 0 || v > (uint64_t)(e - p))
				return -1;
			if (f == 5 || f == 6 || f == 8) {
				s->kind = f == 5 ? SV_STR : f == 6 ? SV_BYTES : SV_ZSTR;
				s->off = off + (uint64_t)(p - b);
				s->len = v;
			} else if (f >= 1 && f <= 8) {
				return -1;
			}
			p += v;
			break;
		case 5:
			if (e - p < 4 || (f >= 1 && f <= 8))
				return -1;
			p += 4;
			break;
		default:
			return -1;
		}
	}
	return 0;
}

/* zlib_errno() - the module's one mapping of zlib results to -errno. */
static int zlib_errno(int zr)
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
	if ((r = zlib_errno(inflateInit2(&z, 15 + 32))) < 0) /* auto-detect gzip / zlib */
		return r;
	z.next_in = (unsigned char *)(uintptr_t)p;
	z.avail_in = n > UINT32_MAX ? UINT32_MAX : (unsigned)n;
	*cut = false;
	do {
		z.next_out = chunk;
		z.avail_out = sizeof(chunk);
		zr = inflate(&z, Z_NO_FLUSH);
		if ((r = zlib_errno(zr)) < 0)
			break;
		size_t got = sizeof(chunk) - z.avail_out;

		if (b->len + got > ZSTR_MAX) {
			got = ZSTR_MAX - b->len;
			*cut = true;
		}
		if ((r = xprofs_buf_add(b, chunk, got)) < 0 || *cut)
			break;
		if (zr == Z_OK && z.avail_in == 0 && z.avail_out != 0) {
			r = zlib_errno(Z_BUF_ERROR); /* input ended before the stream */
			break;
		}
	} while (zr != Z_STREAM_END);
	inflateEnd(&z);
	return r;
}

/* Write the JSON value of @s. @c is the cursor @s was parsed from. */
static int stat_value(struct rctx *rc, struct dec_cur *c, const struct statv *s, struct out *o)
{
	const struct stmd *ref;
	const uint8_t *p;
	size_t n;
	bool cut;
	int r;

	switch (s->kind) {
	case SV_DOUBLE:
		out_double(o, s->d);
		return 0;
	case SV_U64:
		out_u64(o, s->u);
		return 0;
	case SV_I64:
		out_i64(o, (int64_t)s->u);
		return 0;
	case SV_REF:
		if ((r = get_stmd(rc, (int64_t)s->u, &ref)) < 0)
			return r;
		out_add(o, ref->json, ref->json_len);
		return 0;
	case SV_BYTES:
		OUT_LIT(o, "\"<");
		out_u64(o, s->len);
		OUT_LIT(o, " bytes>\"");
		return 0;
	case SV_STR:
		n = s->len > DEC_STR_MAX ? DEC_STR_MAX : (size_t)s->len;
		if ((r = dec_at(c, s->off, n, &p)) < 0)
			return r;
		out_str(o, (const char *)p, n);
		return 0;
	case SV_ZSTR:
		n = s->len > DEC_STR_MAX ? DEC_STR_MAX : (size_t)s->len;
		if ((r = dec_at(c, s->off, n, &p)) < 0)
			return r;
		xprofs_buf_reset(&rc->tmp);
		r = inflate_str(p, n, &rc->tmp, &cut);
		if (r == -ENOMEM || r == -ENOTSUP)
			return r;
		if (r < 0) {
			OUT_LIT(o, "\"<invalid compressed string of ");
			out_u64(o, s->len);
			OUT_LIT(o, " bytes>\"");
			return 0;
		}
		if (cut && xprofs_buf_adds(&rc->tmp, "...") < 0)
			return -ENOMEM;
		out_str(o, rc->tmp.data ? rc->tmp.data : "", rc->tmp.len);
		return 0;
	default:
		OUT_LIT(o, "null");
		return 0;
	}
}

/* A stat's value as a number (for flops etc.); false when not numeric. */
static bool stat_number(const struct statv *s, double *d)
{
	switch (s->kind) {
	case SV_DOUBLE: *d = s->d; return isfinite(s->d);
	case SV_U64: *d = (double)s->u; return true;
	case SV_I64: *d = (double)(int64_t)s->u; return true;
	default: return false;
	}
}

/* A stat's value as a string (str or ref), copied into a new string. */
static int stat_string(struct rctx *rc, struct dec_cur *c, const struct statv *s, char **out)
{
	const struct stmd *ref;
	const uint8_t *p;
	size_t n;
	int r;

	if (s->kind == SV_REF) {
		if ((r = get_stmd(rc, (int64_t)s->u, &ref)) < 0)
			return r;
		*out = strndup(ref->name, ref->name_len);
		return *out ? 0 : -ENOMEM;
	}
	if (s->kind != SV_STR) {
		struct out o;

		out_init(&o, NULL);
		if ((r = stat_value(rc, c, s, &o)) < 0 || (r = o.r) < 0) {
			out_deinit(&o);
			return r;
		}
		*out = out_steal(&o, NULL);
		out_deinit(&o);
		return *out ? 0 : -ENOMEM;
	}
	n = s->len > DEC_NAME_MAX ? DEC_NAME_MAX : (size_t)s->len;
	if ((r = dec_at(c, s->off, n, &p)) < 0)
		return r;
	*out = strndup((const char *)p, n);
	return *out ? 0 : -ENOMEM;
}

typedef int (*stat_fn)(struct rctx *rc, struct dec_cur *c, const struct statv *s, void *arg);

/* Call @fn for each XStat in field @field of the message [off, off+len) on @c. */
static int walk_stats(struct rctx *rc, struct dec_cur *c, uint64_t off, uint64_t len,
		      uint32_t field, stat_fn fn, void *arg)
{
	uint64_t pos = c->pos, end = c->end, mend = off + len, slen, send;
	struct statv s;
	uint32_t f;
	int wt, r = 0;

	c->pos = off;
	c->end = mend;
	while (c->pos < mend) {
		if ((r = dec_tag(c, &f, &wt)) < 0)
			goto out;
		if (f != field) {
			if ((r = dec_skip(c, wt)) < 0)
				goto out;
			continue;
		}
		if ((r = dec_expect(c, wt, WT_LEN, "stats", f)) < 0 || (r = dec_len(c, &slen)) < 0)
			goto out;
		send = c->pos + slen;
		if (slen <= 4096) {
			const uint8_t *p;

			if ((r = dec_at(c, c->pos, (size_t)slen, &p)) < 0)
				goto out;
			if (rd_stat(p, p + slen, c->pos, &s) < 0) {
				r = dec_fail(c, "malformed XStat at offset %" PRIu64, c->pos);
				goto out;
			}
		} else {
			c->end = send;
			r = stat_parse(c, &s);
			c->end = mend;
			if (r < 0)
				goto out;
		}
		c->pos = send;
		if ((r = fn(rc, c, &s, arg)) < 0)
			goto out;
		c->pos = send;
		c->end = mend;
	}
out:
	c->pos = pos;
	c->end = end;
	return r;
}

struct render_arg {
	struct out *o;
	bool first;
};

/* stat_fn writing "name":value pairs. */
static int render_stat(struct rctx *rc, struct dec_cur *c, const struct statv *s, void *arg)
{
	struct render_arg *a = arg;
	const struct stmd *m;
	int r;

	if ((r = get_stmd(rc, s->md, &m)) < 0)
		return r;
	if (!a->first)
		OUT_LIT(a->o, ",");
	a->first = false;
	out_add(a->o, m->json, m->json_len + 1);
	return stat_value(rc, c, s, a->o);
}

static bool name_is(const struct stmd *m, const char *want)
{
	size_t n = strlen(want);

	return m->name_len == n && !memcmp(m->name, want, n);
}

/* Interesting stats for ops/steps, from metadata or event stats. */
struct opstats {
	char *category, *hlo_op, *step_name; /* owned */
	double flops, bytes;
	bool has_flops, has_bytes;
	int64_t step_num;
	bool has_step_num;
};

static void opstats_clear(struct opstats *s)
{
	free(s->category);
	free(s->hlo_op);
	free(s->step_name);
	memset(s, 0, sizeof(*s));
}

static int collect_stat(struct rctx *rc, struct dec_cur *c, const struct statv *s, void *arg)
{
	struct opstats *os = arg;
	const struct stmd *m;
	char **dst = NULL;
	double d;
	int r;

	if ((r = get_stmd(rc, s->md, &m)) < 0)
		return r;
	if (name_is(m, "hlo_category"))
		dst = &os->category;
	else if (name_is(m, "hlo_op"))
		dst = &os->hlo_op;
	else if (name_is(m, "step_name"))
		dst = &os->step_name;
	else if (name_is(m, "flops") && stat_number(s, &d))
		os->flops = d, os->has_flops = true;
	else if (name_is(m, "bytes_accessed") && stat_number(s, &d))
		os->bytes = d, os->has_bytes = true;
	else if (name_is(m, "step_num") && (s->kind == SV_U64 || s->kind == SV_I64))
		os->step_num = (int64_t)s->u, os->has_step_num = true;
	if (dst) {
		free(*dst);
		*dst = NULL;
		return stat_string(rc, c, s, dst);
	}
	return 0;
}

/* get_evmd() - the current plane's event metadata @key (borrowed, valid until md_gc()). */
static int get_evmd(struct rctx *rc, int64_t key, struct evmd **out)
{
	const struct dec_plane *p = &rc->x->planes[rc->plane];
	ssize_t k = dec_md_find(&p->ev, key);
	struct dec_cur *c = &rc->md;
	uint64_t pos = c->pos, end = c->end, off, len;
	char *full = NULL, *disp = NULL;
	size_t full_len = 0, disp_len = 0;
	struct opstats os = {0};
	struct render_arg ra;
	struct out so;
	struct evmd *e;
	uint32_t f;
	int wt, r = 0;

	if (k < 0) {
		*out = &empty_evmd;
		return 0;
	}
	e = &rc->evmd[k];
	if (e->loaded) {
		*out = e;
		return 0;
	}
	out_init(&so, NULL);
	off = p->ev.md[k].off;
	len = p->ev.md[k].len;
	c->pos = off;
	c->end = off + len;
	while (c->pos < c->end) {
		if ((r = dec_tag(c, &f, &wt)) < 0)
			goto out;
		if (f == 2 || f == 4) {
			if ((r = dec_expect(c, wt, WT_LEN, "XEventMetadata", f)) < 0)
				goto out;
			r = f == 2 ? dec_string(c, DEC_STR_MAX, &full, &full_len)
				   : dec_string(c, DEC_STR_MAX, &disp, &disp_len);
			if (r < 0)
				goto out;
		} else if ((r = dec_skip(c, wt)) < 0) {
			goto out;
		}
	}
	ra.o = &so;
	ra.first = true;
	if ((r = walk_stats(rc, c, off, len, 5, render_stat, &ra)) < 0 ||
	    (r = walk_stats(rc, c, off, len, 5, collect_stat, &os)) < 0)
		goto out;
	if ((r = so.r) < 0)
		goto out;
	if (!full && !(full = strdup(""))) {
		r = -ENOMEM;
		goto out;
	}
	e->has_display = disp_len > 0 && (disp_len != full_len || memcmp(disp, full, disp_len));
	if (disp_len > 0) {
		e->name = disp;
		e->name_len = disp_len;
		disp = NULL;
	} else if (!(e->name = malloc(full_len + 1))) { /* names may hold NUL bytes */
		r = -ENOMEM;
		goto out;
	} else {
		memcpy(e->name, full, full_len + 1);
		e->name_len = full_len;
	}
	if ((r = json_dup(e->name, e->name_len, &e->name_json, &e->name_json_len)) < 0 ||
	    (r = json_dup(full, full_len, &e->full_json, &e->full_json_len)) < 0)
		goto out;
	e->stats_json = out_steal(&so, &e->stats_json_len);
	if (!e->stats_json && !(e->stats_json = strdup(""))) {
		r = -ENOMEM;
		goto out;
	}
	e->category = os.category;
	e->hlo_op = os.hlo_op;
	os.category = os.hlo_op = NULL;
	e->flops = os.flops;
	e->has_flops = os.has_flops;
	e->bytes = os.bytes;
	e->has_bytes = os.has_bytes;
	e->step_num = os.step_num;
	e->has_step_num = os.has_step_num;
	e->group = -1;
	e->loaded = true;
	rc->md_bytes += sizeof(*e) + len + e->name_len + e->name_json_len + e->full_json_len +
			e->stats_json_len;
	*out = e;
out:
	if (r < 0)
		evmd_clear(e);
	opstats_clear(&os);
	out_deinit(&so);
	free(full);
	free(disp);
	c->pos = pos;
	c->end = end;
	return r;
}

/* ---- events of a line ------------------------------------------------ */

struct event {
	int64_t md, offset_ps, duration_ps, num;
	bool has_num, has_stats;
	int64_t start_ps, end_ps;
	uint64_t off, len; /* the XEvent message */
	uint64_t stats_off; /* its first stats field */
};

struct line_it {
	struct rctx *rc;
	const struct dec_line *l;
	uint64_t end;
	int64_t base_ps;
};

static int line_begin(struct rctx *rc, size_t li, struct line_it *it)
{
	const struct dec_line *l = &rc->x->lines[li];
	int r;

	if ((r = plane_enter(rc, l->plane)) < 0)
		return r;
	it->rc = rc;
	it->l = l;
	it->end = l->msg.off + l->msg.len;
	it->base_ps = dec_line_base_ps(l->timestamp_ns);
	rc->ev.pos = l->msg.off;
	rc->ev.end = it->end;
	return 0;
}

/* The general path of line_next(): any field order, events of any size. */
static int line_next_slow(struct line_it *it, struct dec_evhdr *h, uint64_t *off, uint64_t *len)
{
	struct dec_cur *c = &it->rc->ev;
	const uint8_t *p;
	uint32_t f;
	int wt, r;

	while (c->pos < it->end) {
		if ((r = dec_tag(c, &f, &wt)) < 0)
			return r;
		if (f != 4) {
			if ((r = dec_skip(c, wt)) < 0)
				return r;
			continue;
		}
		if ((r = dec_expect(c, wt, WT_LEN, "XLine", f)) < 0 || (r = dec_len(c, len)) < 0 ||
		    (r = dec_at(c, c->pos, (size_t)*len, &p)) < 0)
			return r;
		if (dec_parse_event(p, p + *len, h) < 0)
			return dec_fail(c, "malformed XEvent at offset %" PRIu64, c->pos);
		*off = c->pos;
		c->pos += *len;
		return 1;
	}
	return 0;
}

/* Next event of the line: 1 and *e filled, 0 at the end, or -errno. */
static int line_next(struct line_it *it, struct event *e)
{
	struct dec_cur *c = &it->rc->ev;
	struct dec_evhdr h;
	int r;

	r = dec_event_fast(c, &h, &e->off, &e->len);
	if (r < 0)
		return dec_fail(c, "malformed XEvent at offset %" PRIu64, c->pos);
	if (r == 0 && (r = line_next_slow(it, &h, &e->off, &e->len)) <= 0)
		return r;
	e->md = h.md;
	e->offset_ps = h.offset_ps;
	e->duration_ps = h.duration_ps;
	e->num = h.num;
	e->has_num = h.has_num;
	e->has_stats = h.has_stats;
	e->stats_off = e->off + h.stats_at;
	e->start_ps = dec_sat_add(it->base_ps, e->offset_ps);
	e->end_ps = dec_sat_add(e->start_ps, e->duration_ps);
	return 1;
}

/* Write "k":v pairs of the metadata's then the event's stats; *first tracks commas. */
static int event_stats(struct rctx *rc, const struct evmd *m, const struct event *e,
		       struct out *o, bool *first)
{
	struct render_arg ra = {o, *first};
	int r;

	if (m->stats_json_len) {
		if (!ra.first)
			OUT_LIT(o, ",");
		out_add(o, m->stats_json, m->stats_json_len);
		ra.first = false;
	}
	if (e->has_stats && (r = walk_stats(rc, &rc->ev, e->stats_off,
					    e->off + e->len - e->stats_off, 4, render_stat, &ra)) < 0)
		return r;
	*first = ra.first;
	return 0;
}

/* ---- summary.json ---------------------------------------------------- */

static void out_strs(struct out *o, const char *key, const struct dec_strs *s)
{
	out_str(o, key, strlen(key));
	OUT_LIT(o, ":[");
	for (size_t i = 0; i < s->n; i++) {
		if (i)
			OUT_LIT(o, ",");
		out_str(o, s->s[i], s->len[i]);
	}
	OUT_LIT(o, "]");
}

static int plane_stats(struct rctx *rc, size_t pi, struct out *o)
{
	const struct dec_plane *p = &rc->x->planes[pi];
	struct render_arg ra = {o, true};
	int r;

	if ((r = plane_enter(rc, pi)) < 0)
		return r;
	OUT_LIT(o, "{");
	for (size_t i = 0; i < p->n_stats; i++) {
		/* each plane stat is its own XStat message: walk it as field 1 of nothing */
		struct dec_cur *c = &rc->md;
		uint64_t pos = c->pos, end = c->end;
		struct statv s;

		c->pos = p->stats[i].off;
		c->end = p->stats[i].off + p->stats[i].len;
		r = stat_parse(c, &s);
		c->pos = pos;
		c->end = end;
		if (r < 0 || (r = render_stat(rc, c, &s, &ra)) < 0)
			return r;
	}
	OUT_LIT(o, "}");
	md_gc(rc);
	return 0;
}

static void out_key_i64(struct out *o, const char *lit, int64_t v)
{
	out_add(o, lit, strlen(lit));
	out_i64(o, v);
}

static int render_summary(struct rctx *rc, struct out *o)
{
	struct xprofs_xspace *x = rc->x;
	const struct xprofs_xspace_totals *t = &x->totals;
	int r;

	OUT_LIT(o, "{");
	out_strs(o, "hostnames", &x->hostnames);
	OUT_LIT(o, ",");
	out_strs(o, "errors", &x->errors);
	OUT_LIT(o, ",");
	out_strs(o, "warnings", &x->warnings);
	OUT_LIT(o, ",\"profile_start_walltime_ns\":");
	if (t->start_walltime_ns)
		out_i64(o, t->start_walltime_ns);
	else
		OUT_LIT(o, "null");
	OUT_LIT(o, ",\"profile_stop_walltime_ns\":");
	if (t->stop_walltime_ns)
		out_i64(o, t->stop_walltime_ns);
	else
		OUT_LIT(o, "null");
	out_key_i64(o, ",\"first_ps\":", t->first_ps);
	out_key_i64(o, ",\"last_ps\":", t->last_ps);
	out_key_i64(o, ",\"span_ps\":", dec_sat_add(t->last_ps, -t->first_ps));
	OUT_LIT(o, ",\"events\":");
	out_u64(o, t->events);
	OUT_LIT(o, ",\"planes\":[");
	for (size_t pi = 0; pi < x->n_planes; pi++) {
		const struct dec_plane *p = &x->planes[pi];

		if (pi)
			OUT_LIT(o, ",");
		out_key_i64(o, "{\"id\":", p->id);
		OUT_LIT(o, ",\"name\":");
		out_str(o, p->name, p->name_len);
		OUT_LIT(o, ",\"file\":");
		out_cstr(o, p->file);
		OUT_LIT(o, ",\"events\":");
		out_u64(o, p->events);
		out_key_i64(o, ",\"first_ps\":", p->first_ps);
		out_key_i64(o, ",\"last_ps\":", p->last_ps);
		OUT_LIT(o, ",\"event_metadata\":");
		out_u64(o, p->ev.n);
		OUT_LIT(o, ",\"stat_metadata\":");
		out_u64(o, p->st.n);
		OUT_LIT(o, ",\"stats\":");
		if ((r = plane_stats(rc, pi, o)) < 0)
			return r;
		OUT_LIT(o, ",\"lines\":[");
		for (size_t j = 0; j < p->n_lines; j++) {
			const struct dec_line *l = &x->lines[p->first_line + j];

			if (j)
				OUT_LIT(o, ",");
			out_key_i64(o, "{\"id\":", l->id);
			out_key_i64(o, ",\"display_id\":", l->display_id ? l->display_id : l->id);
			OUT_LIT(o, ",\"name\":");
			out_str(o, l->name, l->name_len);
			OUT_LIT(o, ",\"display_name\":");
			if (l->display_name_len)
				out_str(o, l->display_name, l->display_name_len);
			else
				out_str(o, l->name, l->name_len);
			OUT_LIT(o, ",\"file\":");
			out_cstr(o, l->file);
			out_key_i64(o, ",\"timestamp_ns\":", l->timestamp_ns);
			out_key_i64(o, ",\"duration_ps\":", l->duration_ps);
			OUT_LIT(o, ",\"events\":");
			out_u64(o, l->events);
			out_key_i64(o, ",\"first_ps\":", l->first_ps);
			out_key_i64(o, ",\"last_ps\":", l->last_ps);
			OUT_LIT(o, "}");
		}
		OUT_LIT(o, "]}");
		if ((r = out_flush(o, false)) < 0)
			return r;
	}
	OUT_LIT(o, "]}\n");
	return 0;
}

/* ---- one track ----------------------------------------------------- */

static int render_track(struct rctx *rc, size_t li, struct out *o)
{
	const struct dec_line *l = &rc->x->lines[li];
	const struct dec_plane *p = &rc->x->planes[l->plane];
	struct line_it it;
	struct event e;
	struct evmd *m;
	bool first_ev = true;
	int r;

	OUT_LIT(o, "{\"plane\":");
	out_str(o, p->name, p->name_len);
	OUT_LIT(o, ",\"line\":");
	out_str(o, l->name, l->name_len);
	out_key_i64(o, ",\"id\":", l->id);
	out_key_i64(o, ",\"display_id\":", l->display_id ? l->display_id : l->id);
	OUT_LIT(o, ",\"display_name\":");
	if (l->display_name_len)
		out_str(o, l->display_name, l->display_name_len);
	else
		out_str(o, l->name, l->name_len);
	out_key_i64(o, ",\"timestamp_ns\":", l->timestamp_ns);
	out_key_i64(o, ",\"duration_ps\":", l->duration_ps);
	OUT_LIT(o, ",\"events\":[");
	if ((r = line_begin(rc, li, &it)) < 0)
		return r;
	while ((r = line_next(&it, &e)) > 0) {
		bool first = true;

		md_gc(rc);
		if ((r = get_evmd(rc, e.md, &m)) < 0)
			return r;
		OUT_RAW(o, first_ev ? "\n{\"name\":" : ",\n{\"name\":");
		first_ev = false;
		out_add(o, m->name_json, m->name_json_len);
		OUT_LIT(o, ",\"full_name\":");
		out_add(o, m->full_json, m->full_json_len);
		out_key_i64(o, ",\"metadata_id\":", e.md);
		if (e.has_num) {
			out_key_i64(o, ",\"num_occurrences\":", e.num);
		} else {
			out_key_i64(o, ",\"start_ps\":", e.start_ps);
		}
		out_key_i64(o, ",\"duration_ps\":", e.duration_ps);
		OUT_LIT(o, ",\"stats\":{");
		if ((r = event_stats(rc, m, &e, o, &first)) < 0)
			return r;
		OUT_LIT(o, "}}");
		if ((r = out_flush(o, false)) < 0)
			return r;
	}
	if (r < 0)
		return r;
	OUT_LIT(o, "]}\n");
	return 0;
}

/* ---- trace.json -------------------------------------------------------- */

static void trace_meta(struct out *o, const char *what, uint64_t pid, uint64_t tid, bool thread)
{
	OUT_LIT(o, ",\n{\"ph\":\"M\",\"pid\":");
	out_u64(o, pid);
	if (thread) {
		OUT_LIT(o, ",\"tid\":");
		out_u64(o, tid);
	}
	OUT_LIT(o, ",\"name\":\"");
	out_add(o, what, strlen(what));
	OUT_LIT(o, "\",\"args\":{");
}

static int render_trace(struct rctx *rc, struct out *o)
{
	struct xprofs_xspace *x = rc->x;
	int r;

	/* displayTimeUnit first: Perfetto only looks for it near the start */
	OUT_LIT(o, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"xprofs\"},"
		   "\"traceEvents\":[\n{\"ph\":\"M\",\"pid\":0,\"name\":\"process_name\","
		   "\"args\":{\"name\":\"xprofs\"}}");
	for (size_t pi = 0; pi < x->n_planes; pi++) {
		const struct dec_plane *p = &x->planes[pi];
		uint64_t pid = pi + 1;

		trace_meta(o, "process_name", pid, 0, false);
		OUT_LIT(o, "\"name\":");
		out_str(o, p->name, p->name_len);
		OUT_LIT(o, "}}");
		trace_meta(o, "process_sort_index", pid, 0, false);
		OUT_LIT(o, "\"sort_index\":");
		out_u64(o, pid);
		OUT_LIT(o, "}}");
		for (size_t j = 0; j < p->n_lines; j++) {
			size_t li = p->first_line + j;
			const struct dec_line *l = &x->lines[li];
			bool counters = l->name_len == 10 && !memcmp(l->name, "_counters_", 10);
			uint64_t tid = j + 1;
			char pre[3][96]; /* per-event prefixes of this track: X, i, C */
			int prelen[3];
			struct line_it it;
			struct event e;
			struct evmd *m;

			trace_meta(o, "thread_name", pid, tid, true);
			OUT_LIT(o, "\"name\":");
			if (l->display_name_len)
				out_str(o, l->display_name, l->display_name_len);
			else
				out_str(o, l->name, l->name_len);
			OUT_LIT(o, "}}");
			trace_meta(o, "thread_sort_index", pid, tid, true);
			OUT_LIT(o, "\"sort_index\":");
			out_u64(o, tid);
			OUT_LIT(o, "}}");
			prelen[0] = snprintf(pre[0], sizeof(pre[0]),
					     ",\n{\"ph\":\"X\",\"pid\":%zu,\"tid\":%zu,\"ts\":", (size_t)pid, (size_t)tid);
			prelen[1] = snprintf(pre[1], sizeof(pre[1]),
					     ",\n{\"ph\":\"i\",\"s\":\"t\",\"pid\":%zu,\"tid\":%zu,\"ts\":",
					     (size_t)pid, (size_t)tid);
			prelen[2] = snprintf(pre[2], sizeof(pre[2]),
					     ",\n{\"ph\":\"C\",\"pid\":%zu,\"tid\":%zu,\"ts\":", (size_t)pid, (size_t)tid);
			if ((r = line_begin(rc, li, &it)) < 0)
				return r;
			while ((r = line_next(&it, &e)) > 0) {
				bool first = true;

				md_gc(rc);
				if ((r = get_evmd(rc, e.md, &m)) < 0)
					return r;
				int k = counters ? 2 : (e.duration_ps == 0 || e.has_num) ? 1 : 0;

				out_add(o, pre[k], (size_t)prelen[k]);
				out_us(o, e.start_ps);
				if (!counters && e.duration_ps != 0 && !e.has_num) {
					OUT_LIT(o, ",\"dur\":");
					out_us(o, e.duration_ps);
				}
				OUT_LIT(o, ",\"name\":");
				out_add(o, m->name_json, m->name_json_len);
				OUT_LIT(o, ",\"args\":{");
				if ((r = event_stats(rc, m, &e, o, &first)) < 0)
					return r;
				if (!counters && m->has_display) {
					OUT_RAW(o, first ? "\"long_name\":" : ",\"long_name\":");
					out_add(o, m->full_json, m->full_json_len);
					first = false;
				}
				if (e.has_num) {
					OUT_RAW(o, first ? "\"num_occurrences\":" : ",\"num_occurrences\":");
					out_i64(o, e.num);
					if (e.duration_ps) {
						OUT_LIT(o, ",\"duration_ps\":");
						out_i64(o, e.duration_ps);
					}
				}
				OUT_LIT(o, "}}");
				if ((r = out_flush(o, false)) < 0)
					return r;
			}
			if (r < 0)
				return r;
		}
	}
	OUT_LIT(o, "\n]}\n");
	return 0;
}

/* ---- ops.json ---------------------------------------------------------- */

struct op {
	char *name, *category; /* owned */
	uint64_t count;
	int64_t total, self, min, max;
	double flops, bytes;
	bool has_flops, has_bytes;
};

struct opmap {
	struct op *ops; /* owned */
	size_t n, cap;
	uint32_t *slot; /* 1 + op index, 0 empty */
	size_t nslot;
	int64_t other; /* index of "(other)" or -1 */
};

static void opmap_free(struct opmap *m)
{
	for (size_t i = 0; i < m->n; i++) {
		free(m->ops[i].name);
		free(m->ops[i].category);
	}
	free(m->ops);
	free(m->slot);
	memset(m, 0, sizeof(*m));
	m->other = -1;
}

static int opmap_rehash(struct opmap *m, size_t nslot)
{
	uint32_t *s = calloc(nslot, sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < m->n; i++) {
		size_t h = (size_t)xprofs_hash64(m->ops[i].name, strlen(m->ops[i].name)) & (nslot - 1);

		while (s[h])
			h = (h + 1) & (nslot - 1);
		s[h] = (uint32_t)(i + 1);
	}
	free(m->slot);
	m->slot = s;
	m->nslot = nslot;
	return 0;
}

/* Index of the op named @name (borrowed; duplicated on insert). */
static int64_t opmap_get(struct opmap *m, const char *name, const char *category)
{
	size_t h;
	struct op *op;

	if (!m->slot && opmap_rehash(m, 1024) < 0)
		return -ENOMEM;
	h = (size_t)xprofs_hash64(name, strlen(name)) & (m->nslot - 1);
	while (m->slot[h]) {
		if (!strcmp(m->ops[m->slot[h] - 1].name, name))
			return m->slot[h] - 1;
		h = (h + 1) & (m->nslot - 1);
	}
	if (m->n >= OPS_MAX) {
		if (m->other >= 0)
			return m->other;
		name = "(other)";
		category = "";
	}
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 256;
		struct op *o = realloc(m->ops, cap * sizeof(*o));

		if (!o)
			return -ENOMEM;
		m->ops = o;
		m->cap = cap;
	}
	op = &m->ops[m->n];
	memset(op, 0, sizeof(*op));
	op->name = strdup(name);
	op->category = strdup(category ? category : "");
	if (!op->name || !op->category) {
		free(op->name);
		free(op->category);
		return -ENOMEM;
	}
	op->min = INT64_MAX;
	m->n++;
	if (m->n >= OPS_MAX)
		m->other = (int64_t)m->n - 1;
	if (m->n * 2 > m->nslot) {
		if (opmap_rehash(m, m->nslot * 2) < 0)
			return -ENOMEM;
	} else {
		m->slot[h] = (uint32_t)m->n;
	}
	return (int64_t)m->n - 1;
}

enum line_kind { LK_NONE = 0, LK_XLA_OPS, LK_STREAM, LK_HOST };

static bool str_eq(const char *s, size_t n, const char *lit)
{
	return n == strlen(lit) && !memcmp(s, lit, n);
}

static bool is_host_plane(const struct dec_plane *p)
{
	return !strcmp(p->name, "/host:CPU");
}

/* Which lines of @p feed ops.json (see docs/decode.md for the rule). */
static enum line_kind op_line_kind(const struct xprofs_xspace *x, const struct dec_plane *p,
				   const struct dec_line *l, bool host_has_fw)
{
	if (dec_plane_is_device(p)) {
		if (str_eq(l->name, l->name_len, "XLA Ops"))
			return LK_XLA_OPS;
		if (!strncmp(l->name, "Stream #", 8))
			return LK_STREAM;
		return LK_NONE;
	}
	if (!is_host_plane(p))
		return LK_NONE;
	if (host_has_fw)
		return str_eq(l->name, l->name_len, "Framework Ops") ||
			       str_eq(l->name, l->name_len, "TensorFlow Ops")
			       ? LK_HOST : LK_NONE;
	static const char *const derived[] = {"Steps", "_counters_", "Framework Name Scope",
					      "XLA Modules", "Launch Stats", "Source code"};
	for (size_t i = 0; i < sizeof(derived) / sizeof(derived[0]); i++)
		if (str_eq(l->name, l->name_len, derived[i]))
			return LK_NONE;
	return LK_HOST;
}

static bool host_has_framework_lines(const struct xprofs_xspace *x, const struct dec_plane *p)
{
	for (size_t j = p->first_line; j < p->first_line + p->n_lines; j++)
		if (str_eq(x->lines[j].name, x->lines[j].name_len, "Framework Ops") ||
		    str_eq(x->lines[j].name, x->lines[j].name_len, "TensorFlow Ops"))
			return true;
	return false;
}

struct frame {
	int64_t end, dur, child;
	int64_t op;
};

static void op_finish(struct opmap *m, const struct frame *f)
{
	int64_t self = f->dur - f->child;

	m->ops[f->op].self += self > 0 ? self : 0;
}

/* Aggregate one line's events into @m; adds to *events and *total. */
static int ops_line(struct rctx *rc, size_t li, enum line_kind kind, struct opmap *m,
		    uint64_t *events, int64_t *total)
{
	struct frame stack[OPS_DEPTH_MAX];
	size_t depth = 0;
	struct line_it it;
	struct event e;
	struct evmd *md;
	int r;

	if ((r = line_begin(rc, li, &it)) < 0)
		return r;
	while ((r = line_next(&it, &e)) > 0) {
		struct opstats os = {0};
		int64_t gi;
		struct op *op;
		double flops, bytes;
		bool has_flops, has_bytes;

		md_gc(rc);
		if ((r = get_evmd(rc, e.md, &md)) < 0)
			return r;
		flops = md->flops, has_flops = md->has_flops;
		bytes = md->bytes, has_bytes = md->has_bytes;
		if (e.has_stats && (kind == LK_STREAM || kind == LK_XLA_OPS)) {
			if ((r = walk_stats(rc, &rc->ev, e.stats_off, e.off + e.len - e.stats_off, 4,
					      collect_stat, &os)) < 0) {
				opstats_clear(&os);
				return r;
			}
			if (os.has_flops)
				flops = os.flops, has_flops = true;
			if (os.has_bytes)
				bytes = os.bytes, has_bytes = true;
		}
		if (kind == LK_STREAM && (os.hlo_op || md->hlo_op)) {
			gi = opmap_get(m, os.hlo_op ? os.hlo_op : md->hlo_op,
				       os.category ? os.category : md->category);
		} else if (md->group >= 0 && md != &empty_evmd) {
			gi = md->group;
		} else {
			gi = opmap_get(m, md->name, os.category ? os.category : md->category);
			if (gi >= 0 && md != &empty_evmd && !os.category)
				md->group = gi;
		}
		opstats_clear(&os);
		if (gi < 0)
			return (int)gi;
		op = &m->ops[gi];
		op->count++;
		op->total = dec_sat_add(op->total, e.duration_ps);
		if (e.duration_ps < op->min)
			op->min = e.duration_ps;
		if (e.duration_ps > op->max)
			op->max = e.duration_ps;
		if (has_flops)
			op->flops += flops, op->has_flops = true;
		if (has_bytes)
			op->bytes += bytes, op->has_bytes = true;
		(*events)++;
		*total = dec_sat_add(*total, e.duration_ps);
		if (e.has_num) { /* aggregated: no position on the timeline */
			struct frame f = {0, e.duration_ps, 0, gi};

			op_finish(m, &f);
			continue;
		}
		while (depth > 0 && stack[depth - 1].end <= e.start_ps)
			op_finish(m, &stack[--depth]);
		if (depth > 0) {
			int64_t end = e.end_ps < stack[depth - 1].end ? e.end_ps : stack[depth - 1].end;
			int64_t ov = end - e.start_ps;

			if (ov > 0)
				stack[depth - 1].child = dec_sat_add(stack[depth - 1].child, ov);
		}
		if (depth < OPS_DEPTH_MAX) {
			stack[depth++] = (struct frame){e.end_ps, e.duration_ps, 0, gi};
		} else {
			struct frame f = {e.end_ps, e.duration_ps, 0, gi};

			op_finish(m, &f);
		}
	}
	while (depth > 0)
		op_finish(m, &stack[--depth]);
	return r;
}


static int op_cmp(const void *a, const void *b, void *arg)
{
	const struct opmap *m = arg;
	const struct op *x = &m->ops[*(const size_t *)a];
	const struct op *y = &m->ops[*(const size_t *)b];

	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int ops_write(struct opmap *m, struct out *o)
{
	size_t *idx = malloc((m->n + 1) * sizeof(*idx));

	if (!idx)
		return -ENOMEM;
	for (size_t i = 0; i < m->n; i++)
		idx[i] = i;
	qsort_r(idx, m->n, sizeof(*idx), op_cmp, m);
	for (size_t i = 0; i < m->n; i++) {
		const struct op *op = &m->ops[idx[i]];

		OUT_RAW(o, i ? ",\n{\"name\":" : "\n{\"name\":");
		out_cstr(o, op->name);
		OUT_LIT(o, ",\"category\":");
		out_cstr(o, op->category);
		OUT_LIT(o, ",\"count\":");
		out_u64(o, op->count);
		out_key_i64(o, ",\"total_ps\":", op->total);
		out_key_i64(o, ",\"self_ps\":", op->self);
		out_key_i64(o, ",\"min_ps\":", op->count ? op->min : 0);
		out_key_i64(o, ",\"mean_ps\":", op->count ? op->total / (int64_t)op->count : 0);
		out_key_i64(o, ",\"max_ps\":", op->max);
		OUT_LIT(o, ",\"flops\":");
		if (op->has_flops)
			out_double(o, op->flops);
		else
			OUT_LIT(o, "null");
		OUT_LIT(o, ",\"bytes_accessed\":");
		if (op->has_bytes)
			out_double(o, op->bytes);
		else
			OUT_LIT(o, "null");
		OUT_LIT(o, "}");
		if (out_flush(o, false) < 0)
			break;
	}
	free(idx);
	return o->r;
}

static int render_ops(struct rctx *rc, struct out *o)
{
	struct xprofs_xspace *x = rc->x;
	struct opmap m;
	bool first_plane = true;
	int r = 0;

	memset(&m, 0, sizeof(m));
	m.other = -1;
	OUT_LIT(o, "{\"planes\":[");
	for (size_t pi = 0; pi < x->n_planes; pi++) {
		const struct dec_plane *p = &x->planes[pi];
		bool fw = is_host_plane(p) && host_has_framework_lines(x, p);
		uint64_t events = 0;
		int64_t total = 0;

		for (size_t j = p->first_line; j < p->first_line + p->n_lines; j++) {
			enum line_kind k = op_line_kind(x, p, &x->lines[j], fw);

			if (k == LK_NONE)
				continue;
			if ((r = ops_line(rc, j, k, &m, &events, &total)) < 0)
				goto out;
		}
		if (events == 0) /* not an op plane, or no op events */
			continue;
		OUT_RAW(o, first_plane ? "\n{\"name\":" : ",\n{\"name\":");
		first_plane = false;
		out_str(o, p->name, p->name_len);
		OUT_LIT(o, ",\"file\":");
		out_cstr(o, p->file);
		OUT_RAW(o, dec_plane_is_device(p) ? ",\"kind\":\"device\"" : ",\"kind\":\"host\"");
		OUT_LIT(o, ",\"events\":");
		out_u64(o, events);
		out_key_i64(o, ",\"total_ps\":", total);
		OUT_LIT(o, ",\"ops\":[");
		if ((r = ops_write(&m, o)) < 0)
			goto out;
		OUT_LIT(o, "]}");
		opmap_free(&m);
		if ((r = out_flush(o, false)) < 0)
			goto out;
	}
	OUT_LIT(o, "\n]}\n");
out:
	opmap_free(&m);
	return r;
}

/* ---- steps.json -------------------------------------------------------- */

struct step {
	size_t plane;
	int64_t start, dur, device;
	char *label; /* owned; a JSON value (number or string) */
};

struct steps {
	struct step *s;
	size_t n, cap;
	bool cut;
};

static int step_cmp(const void *a, const void *b)
{
	const struct step *x = a, *y = b;

	if (x->plane != y->plane)
		return x->plane < y->plane ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return 0;
}

static int grow_steps(struct steps *st)
{
	size_t cap = st->cap ? st->cap * 2 : 64;
	struct step *s = realloc(st->s, cap * sizeof(*s));

	if (!s)
		return -ENOMEM;
	st->s = s;
	st->cap = cap;
	return 0;
}

static int steps_collect(struct rctx *rc, size_t li, struct steps *st)
{
	struct line_it it;
	struct event e;
	struct evmd *m;
	int r;

	if ((r = line_begin(rc, li, &it)) < 0)
		return r;
	while ((r = line_next(&it, &e)) > 0) {
		struct opstats os = {0};
		struct step *s;
		struct out lo;

		if (st->n >= STEPS_MAX) {
			st->cut = true;
			return 0;
		}
		md_gc(rc);
		if ((r = get_evmd(rc, e.md, &m)) < 0)
			return r;
		if (e.has_stats && (r = walk_stats(rc, &rc->ev, e.stats_off, e.off + e.len - e.stats_off,
						   4, collect_stat, &os)) < 0) {
			opstats_clear(&os);
			return r;
		}
		out_init(&lo, NULL);
		if (os.has_step_num)
			out_i64(&lo, os.step_num);
		else if (m->has_step_num)
			out_i64(&lo, m->step_num);
		else if (os.step_name)
			out_cstr(&lo, os.step_name);
		else
			out_add(&lo, m->name_json, m->name_json_len);
		opstats_clear(&os);
		if (lo.r < 0 || (st->n == st->cap && grow_steps(st) < 0)) {
			out_deinit(&lo);
			return -ENOMEM;
		}
		s = &st->s[st->n++];
		s->plane = rc->x->lines[li].plane;
		s->start = e.start_ps;
		s->dur = e.duration_ps;
		s->device = 0;
		s->label = out_steal(&lo, NULL);
		out_deinit(&lo);
		if (!s->label) {
			st->n--;
			return -ENOMEM;
		}
	}
	return r;
}

/* Add the overlap of [start, end) to the steps of plane range [a, b). */
static void steps_add(struct steps *st, size_t a, size_t b, int64_t start, int64_t end)
{
	size_t lo = a, hi = b;

	while (lo < hi) { /* first step starting at or after @end */
		size_t mid = lo + (hi - lo) / 2;

		if (st->s[mid].start < end)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t k = lo; k > a; k--) {
		struct step *s = &st->s[k - 1];
		int64_t s_end = dec_sat_add(s->start, s->dur);
		int64_t from = start > s->start ? start : s->start;
		int64_t to = end < s_end ? end : s_end;

		if (s_end <= start)
			break;
		if (to > from)
			s->device = dec_sat_add(s->device, to - from);
	}
}

static int render_steps(struct rctx *rc, struct out *o)
{
	struct xprofs_xspace *x = rc->x;
	struct steps st = {0};
	size_t *ra = NULL, *rb = NULL; /* per plane: range of its steps */
	int r = 0;

	for (size_t li = 0; li < x->n_lines; li++) {
		const struct dec_line *l = &x->lines[li];

		if (str_eq(l->name, l->name_len, "Steps") &&
		    (r = steps_collect(rc, li, &st)) < 0)
			goto out;
	}
	if (st.n)
		qsort(st.s, st.n, sizeof(*st.s), step_cmp);
	ra = calloc(x->n_planes + 1, sizeof(*ra));
	rb = calloc(x->n_planes + 1, sizeof(*rb));
	if (!ra || !rb) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < st.n; i++) {
		if (ra[st.s[i].plane] == rb[st.s[i].plane])
			ra[st.s[i].plane] = i;
		rb[st.s[i].plane] = i + 1;
	}
	/* device time: top-level events of the device op lines */
	for (size_t li = 0; st.n && li < x->n_lines; li++) {
		const struct dec_line *l = &x->lines[li];
		const struct dec_plane *p = &x->planes[l->plane];
		enum line_kind k = op_line_kind(x, p, l, false);
		int64_t top_end = INT64_MIN;
		struct line_it it;
		struct event e;

		if (k != LK_XLA_OPS && k != LK_STREAM)
			continue;
		if ((r = line_begin(rc, li, &it)) < 0)
			goto out;
		while ((r = line_next(&it, &e)) > 0) {
			if (e.has_num || e.start_ps < top_end)
				continue;
			top_end = e.end_ps;
			steps_add(&st, ra[l->plane], rb[l->plane], e.start_ps, e.end_ps);
			for (size_t q = 0; q < x->n_planes; q++)
				if (q != l->plane && rb[q] > ra[q] && !dec_plane_is_device(&x->planes[q]))
					steps_add(&st, ra[q], rb[q], e.start_ps, e.end_ps);
		}
		if (r < 0)
			goto out;
	}
	OUT_LIT(o, "{\"steps\":[");
	for (size_t i = 0; i < st.n; i++) {
		const struct step *s = &st.s[i];

		OUT_RAW(o, i ? ",\n{\"plane\":" : "\n{\"plane\":");
		out_str(o, x->planes[s->plane].name, x->planes[s->plane].name_len);
		OUT_LIT(o, ",\"step\":");
		OUT_RAW(o, s->label);
		out_key_i64(o, ",\"start_ps\":", s->start);
		out_key_i64(o, ",\"duration_ps\":", s->dur);
		out_key_i64(o, ",\"device_ps\":", s->device);
		OUT_LIT(o, "}");
		if ((r = out_flush(o, false)) < 0)
			goto out;
	}
	OUT_RAW(o, st.cut ? "\n],\"truncated\":true}\n" : "\n],\"truncated\":false}\n");
	r = 0;
out:
	for (size_t i = 0; i < st.n; i++)
		free(st.s[i].label);
	free(st.s);
	free(ra);
	free(rb);
	return r;
}

/* ---- entry points ------------------------------------------------------ */

/* Record @r as the reason in @err unless one is already there. */
static int render_fail(struct xprofs_buf *err, int r, const char *what)
{
	if (err && err->len == 0)
		(void)!xprofs_buf_printf(err, "%s: %s", what, strerror(-r));
	return r;
}

static int render_common(struct xprofs_xspace *x, int view, size_t track,
			 const struct xprofs_sink *sink, struct xprofs_buf *err)
{
	struct rctx rc;
	struct out o;
	int r;

	if (!x || !sink || !sink->write)
		return -EINVAL;
	if (view == XPROFS_VIEW_SUMMARY && x->tracks_only) {
		if (err && err->len == 0)
			(void)!xprofs_buf_adds(err, "summary.json needs event statistics: "
						    "the profile was opened for tracks only");
		return -EOPNOTSUPP;
	}
	rctx_init(&rc, x, err);
	out_init(&o, sink);
	switch (view) {
	case XPROFS_VIEW_SUMMARY: r = render_summary(&rc, &o); break;
	case XPROFS_VIEW_TRACE: r = render_trace(&rc, &o); break;
	case XPROFS_VIEW_OPS: r = render_ops(&rc, &o); break;
	case XPROFS_VIEW_STEPS: r = render_steps(&rc, &o); break;
	default: r = render_track(&rc, track, &o); break;
	}
	if (r == 0)
		r = o.r;
	if (r == 0)
		r = out_flush(&o, true);
	if (r < 0)
		render_fail(err, r, view < XPROFS_VIEW_COUNT ? xprofs_view_name(view) : "track");
	out_deinit(&o);
	rctx_deinit(&rc);
	return r;
}

int xprofs_xspace_render(struct xprofs_xspace *x, enum xprofs_view v,
			 const struct xprofs_sink *out, struct xprofs_buf *err)
{
	if ((unsigned)v >= XPROFS_VIEW_COUNT)
		return -EINVAL;
	return render_common(x, (int)v, 0, out, err);
}

int xprofs_xspace_render_track(struct xprofs_xspace *x, size_t i,
			       const struct xprofs_sink *out, struct xprofs_buf *err)
{
	if (!x || i >= x->n_lines)
		return -ERANGE;
	return render_common(x, XPROFS_VIEW_COUNT, i, out, err);
}

int xprofs_decode_session_summary(const char *session, const char *const *hosts,
				  struct xprofs_xspace *const *xs,
				  const char *const *host_errors, size_t n,
				  const struct xprofs_sink *sink)
{
	struct xprofs_xspace_totals sum = {0};
	bool any = false;
	struct out o;
	int r;

	if (!sink || !sink->write || (n && (!hosts || !xs)))
		return -EINVAL;
	out_init(&o, sink);
	OUT_LIT(&o, "{\"session\":");
	out_cstr(&o, session ? session : "");
	OUT_LIT(&o, ",\"hosts\":[");
	for (size_t i = 0; i < n; i++) {
		struct xprofs_xspace_totals t;

		OUT_RAW(&o, i ? ",\n{\"host\":" : "\n{\"host\":");
		out_cstr(&o, hosts[i] ? hosts[i] : "");
		if (!xs[i] || xprofs_xspace_get_totals(xs[i], &t) < 0) {
			OUT_LIT(&o, ",\"planes\":0,\"lines\":0,\"events\":0,\"first_ps\":0,\"last_ps\":0,\"error\":");
			out_cstr(&o, host_errors && host_errors[i] ? host_errors[i] : "cannot open");
			OUT_LIT(&o, "}");
			continue;
		}
		OUT_LIT(&o, ",\"planes\":");
		out_u64(&o, t.planes);
		OUT_LIT(&o, ",\"lines\":");
		out_u64(&o, t.lines);
		OUT_LIT(&o, ",\"events\":");
		out_u64(&o, t.events);
		out_key_i64(&o, ",\"first_ps\":", t.first_ps);
		out_key_i64(&o, ",\"last_ps\":", t.last_ps);
		OUT_LIT(&o, ",\"error\":null}");
		sum.planes += t.planes;
		sum.lines += t.lines;
		sum.events += t.events;
		if (t.events) {
			if (!any || t.first_ps < sum.first_ps)
				sum.first_ps = t.first_ps;
			if (!any || t.last_ps > sum.last_ps)
				sum.last_ps = t.last_ps;
			any = true;
		}
	}
	OUT_LIT(&o, "\n],\"planes\":");
	out_u64(&o, sum.planes);
	OUT_LIT(&o, ",\"lines\":");
	out_u64(&o, sum.lines);
	OUT_LIT(&o, ",\"events\":");
	out_u64(&o, sum.events);
	out_key_i64(&o, ",\"first_ps\":", sum.first_ps);
	out_key_i64(&o, ",\"last_ps\":", sum.last_ps);
	OUT_LIT(&o, "}\n");
	r = o.r ? o.r : out_flush(&o, true);
	out_deinit(&o);
	return r;
}
