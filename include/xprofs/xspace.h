/*
 * xprofs/xspace.h - reading a profile: an XSpace (*.xplane.pb) indexed once,
 * then walked event by event, in bounded memory. The rest of the project
 * opens profiles with the first part; the analyses built on it (trace/,
 * stats/, behind the views of decode.h) use the second.
 *
 * Model: xprofs_xspace_open() makes one structural pass over the file
 * through a struct xprofs_reader (skipping event bodies) and keeps a small
 * index: planes, lines, event counts, first/last times, each line's
 * checkpoints and where each plane's metadata maps lie. An analysis then
 * reads the index plus one streaming pass over just the bytes it needs,
 * through a render context (struct xs_rctx): xspace_line_each() walks one
 * line's events with their metadata decoded and cached (xspace/metadata.c),
 * xs_walk_stats() their XStats (xspace/xstat.c), xs_tasks_run() and
 * xs_parts_run() spread independent parts over threads, and every view
 * writes JSON through struct xs_out (xspace/json.c).
 *
 * Every length, offset and id from the file is bounds-checked; a truncated,
 * corrupt or hostile file makes the call fail with -EINVAL (malformed) or
 * -EIO (read error) and a human-readable reason in @err, never a crash, a
 * hang or an allocation sized by the file's claims alone. -E2BIG: a single
 * item (event, string) larger than 32 MiB read through pread. Files with
 * more than 65,536 planes, 1 Mi lines or 8 Mi index entries are refused
 * (-EINVAL).
 *
 * Memory: the index is O(planes + lines + metadata entries); a render holds
 * a 1 MiB event window, its plane's metadata region (<= 16 MiB) and at most
 * ~64 MiB of decoded metadata, whatever the profile size.
 *
 * Thread safety: an xprofs_xspace may be rendered from several threads at
 * once provided the reader's pread() is thread-safe.
 */
#ifndef XPROFS_XSPACE_H
#define XPROFS_XSPACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "xprofs/util.h"
#include "xprofs/wire.h"

/* ==== for everyone: open a profile, its totals and tracks ============== */

struct xprofs_xspace;

/* Whole-profile totals, cheap (from the index). Times in ps, profile-relative. */
struct xprofs_xspace_totals {
	uint64_t planes, lines, events;
	int64_t first_ps, last_ps;                   /* 0/0 when there are no events */
	int64_t start_walltime_ns, stop_walltime_ns; /* Task Environment stats, 0 if absent */
	uint64_t errors, warnings;
};

/**
 * xprofs_xspace_open() - index the profile behind @r.
 * @r:   borrowed; must stay valid (and its pread usable) until xprofs_xspace_free().
 * @err: optional; receives the reason on failure.
 * @out: written on success; caller owns, free with xprofs_xspace_free().
 */
int xprofs_xspace_open(const struct xprofs_reader *r, struct xprofs_buf *err,
		       struct xprofs_xspace **out) XPROFS_WUR;
/* Options of xprofs_xspace_open_opts(); zero-initialise, then set. */
struct xprofs_xspace_opts {
	/*
	 * Index the planes on up to this many threads (the caller's included,
	 * at most 8; 0 or 1 = the calling thread). Requires a thread-safe
	 * reader pread (pread(2) on a file is). Files under 64 MiB are indexed
	 * on the calling thread alone.
	 */
	unsigned threads;
	/*
	 * Tracks only: skip the per-event work of the index (event counts and
	 * first/last times stay 0). Tracks, trace, ops and steps render as
	 * usual; the summary view fails with -EOPNOTSUPP. For one-shot callers
	 * that render a single track (xprofs-decode --track).
	 */
	bool tracks_only;
};

/**
 * xprofs_xspace_open_opts() - xprofs_xspace_open() with @opts (may be NULL).
 * Same result and same first error, whatever the thread count.
 */
int xprofs_xspace_open_opts(const struct xprofs_reader *r, const struct xprofs_xspace_opts *opts,
			    struct xprofs_buf *err, struct xprofs_xspace **out) XPROFS_WUR;
/** xprofs_xspace_free() - accepts NULL; returns NULL. */
struct xprofs_xspace *xprofs_xspace_free(struct xprofs_xspace *x);

/*
 * A file beside the profile in its session directory that the views may
 * read: today an XLA program, "<module>(<program id>).hlo_proto.pb" (the
 * HLO views' second source, hlo.h). Both members borrowed.
 */
struct xprofs_xspace_sidecar {
	const char *name; /* the file's base name */
	const struct xprofs_reader *r;
};
/**
 * xprofs_xspace_set_sidecars() - attach @n sidecars @s of the profile's
 * session (the array and what it points to borrowed: they must outlive @x,
 * or the next call), replacing those attached before. Not while a render
 * of @x runs. xspace/ only carries them: the decode front (decode/render.c)
 * hands them to hlo/.
 */
void xprofs_xspace_set_sidecars(struct xprofs_xspace *x, const struct xprofs_xspace_sidecar *s,
				size_t n);

int xprofs_xspace_get_totals(const struct xprofs_xspace *x, struct xprofs_xspace_totals *t);
/**
 * xprofs_xspace_has_gpu() - whether the profile has a "/device:GPU:" plane
 * (with or without lines): GPU-only views (kernels.json) exist exactly then.
 */
bool xprofs_xspace_has_gpu(const struct xprofs_xspace *x);

/*
 * Picoseconds in trace.json's base: line timestamp_ns * 1000 + offset_ps,
 * exact (epoch-based profiles pass 2^63 ps).
 */
__extension__ typedef __int128 xprofs_ps128;

/*
 * Tracks: one per (plane, line). Their file names are the plane/line names
 * mapped reversibly to safe file names (no '/', no NUL, never "." or "..",
 * at most 255 bytes, unique within their directory; the line file name ends
 * in ".json"). planes/<plane_file>/<line_file> is the track's path.
 */
size_t xprofs_xspace_track_count(const struct xprofs_xspace *x);
/**
 * xprofs_xspace_track_names() - borrowed names of track @i (valid until the
 * xspace is freed); -ERANGE for a bad @i.
 */
int xprofs_xspace_track_names(const struct xprofs_xspace *x, size_t i, const char **plane_file,
			      const char **line_file);
/** xprofs_xspace_track_find() - index of the track with these file names, or -ENOENT. */
int xprofs_xspace_track_find(const struct xprofs_xspace *x, const char *plane_file,
			     const char *line_file);

/**
 * xprofs_xspace_name_encode() / _decode() - the reversible, safe mapping of a
 * plane or line name to a file name component. Caller owns the result (free()).
 */
char *xprofs_xspace_name_encode(const char *name, size_t len);
char *xprofs_xspace_name_decode(const char *file, size_t *len);

/* ==== for the analyses (trace/, stats/): the index and the walk ========= */

/*
 * Picoseconds since any epoch: line timestamp_ns * 1000 + offset_ps never
 * overflows (the same type as xprofs_ps128).
 */
__extension__ typedef __int128 xs_ps128;
__extension__ typedef unsigned __int128 xs_ups128;

/* ---- XSpace field numbers (xspace/proto/xplane.proto) ---------------- */

/* XSpace */
#define XSPACE_F_PLANES 1    /* repeated XPlane */
#define XSPACE_F_ERRORS 2    /* repeated string */
#define XSPACE_F_WARNINGS 3  /* repeated string */
#define XSPACE_F_HOSTNAMES 4 /* repeated string */

/* XPlane */
#define XPLANE_F_ID 1             /* int64 */
#define XPLANE_F_NAME 2           /* string */
#define XPLANE_F_LINES 3          /* repeated XLine */
#define XPLANE_F_EVENT_METADATA 4 /* map<int64, XEventMetadata> */
#define XPLANE_F_STAT_METADATA 5  /* map<int64, XStatMetadata> */
#define XPLANE_F_STATS 6          /* repeated XStat */

/* A map entry (maps are repeated entry messages). */
#define MAPENTRY_F_KEY 1   /* int64 */
#define MAPENTRY_F_VALUE 2 /* the value message */

/* XLine (5-8 reserved) */
#define XLINE_F_ID 1            /* int64 */
#define XLINE_F_NAME 2          /* string */
#define XLINE_F_TIMESTAMP_NS 3  /* int64 */
#define XLINE_F_EVENTS 4        /* repeated XEvent */
#define XLINE_F_DURATION_PS 9   /* int64 */
#define XLINE_F_DISPLAY_ID 10   /* int64 */
#define XLINE_F_DISPLAY_NAME 11 /* string */

/* XEvent: offset_ps and num_occurrences are one oneof. */
#define XEVENT_F_METADATA_ID 1     /* int64 */
#define XEVENT_F_OFFSET_PS 2       /* int64 */
#define XEVENT_F_DURATION_PS 3     /* int64 */
#define XEVENT_F_STATS 4           /* repeated XStat */
#define XEVENT_F_NUM_OCCURRENCES 5 /* int64 */
#define XEVENT_F_LAST 5            /* highest field number the schema knows */

/* XStat: fields 2..8 are the oneof value. */
#define XSTAT_F_METADATA_ID 1
#define XSTAT_F_DOUBLE 2     /* double */
#define XSTAT_F_UINT64 3     /* uint64 */
#define XSTAT_F_INT64 4      /* int64 */
#define XSTAT_F_STR 5        /* string */
#define XSTAT_F_BYTES 6      /* bytes */
#define XSTAT_F_REF 7        /* uint64: a key into the plane's stat_metadata */
#define XSTAT_F_COMPRESSED 8 /* bytes: a gzip-compressed string (newest schema) */
#define XSTAT_F_LAST 8

/* XEventMetadata */
#define XEVMD_F_ID 1
#define XEVMD_F_NAME 2
#define XEVMD_F_METADATA 3
#define XEVMD_F_DISPLAY_NAME 4
#define XEVMD_F_STATS 5 /* repeated XStat, before an event's own */
#define XEVMD_F_CHILD_ID 6

/* XStatMetadata */
#define XSTMD_F_ID 1
#define XSTMD_F_NAME 2
#define XSTMD_F_DESCRIPTION 3

/* The tags the hot paths test for byte-wise. */
#define TAG_XLINE_EVENT WIRE_TAG(XLINE_F_EVENTS, WT_LEN)                 /* 0x22 */
#define TAG_XEVENT_METADATA_ID WIRE_TAG(XEVENT_F_METADATA_ID, WT_VARINT) /* 0x08 */
#define TAG_XEVENT_OFFSET_PS WIRE_TAG(XEVENT_F_OFFSET_PS, WT_VARINT)     /* 0x10 */
#define TAG_XEVENT_DURATION_PS WIRE_TAG(XEVENT_F_DURATION_PS, WT_VARINT) /* 0x18 */
#define TAG_XEVENT_STAT WIRE_TAG(XEVENT_F_STATS, WT_LEN)                 /* 0x22 */

/* ---- XEvent headers, parsed inline (the hot path of every walk) -------- */

/* The header fields of one XEvent (its stats are only noted, not read). */
struct xs_evhdr {
	int64_t md, offset_ps, duration_ps, num;
	bool has_num, has_stats;
	bool odd;          /* a field other than stats after fields 1-3 (xs_parse_event_plain()) */
	uint64_t stats_at; /* offset in the body of the first stats field */
};

/* xevent_field_wire() - the wire type XEvent field @f must have; -1: unknown field. */
static inline int xevent_field_wire(uint32_t f)
{
	if (f == XEVENT_F_STATS)
		return WT_LEN;
	return f >= 1 && f <= XEVENT_F_LAST ? WT_VARINT : -1;
}

/*
 * xevent_head() - the start of both parses below: @h reset, then fields 1, 2
 * and 3 taken in that order where they come first, as canonical serializers
 * write them; *pp advanced past them. -1: a bad varint.
 */
static inline __attribute__((always_inline)) int xevent_head(const uint8_t **pp, const uint8_t *e,
							     struct xs_evhdr *h)
{
	const uint8_t *p = *pp;
	uint64_t v;

	h->md = h->offset_ps = h->duration_ps = h->num = 0;
	h->has_num = h->has_stats = h->odd = false;
	h->stats_at = 0;
	if (p < e && p[0] == TAG_XEVENT_METADATA_ID) {
		p++;
		if (wire_rd_varint(&p, e, &v) < 0)
			return -1;
		h->md = (int64_t)v;
	}
	if (p < e && p[0] == TAG_XEVENT_OFFSET_PS) {
		p++;
		if (wire_rd_varint(&p, e, &v) < 0)
			return -1;
		h->offset_ps = (int64_t)v;
	}
	if (p < e && p[0] == TAG_XEVENT_DURATION_PS) {
		p++;
		if (wire_rd_varint(&p, e, &v) < 0)
			return -1;
		h->duration_ps = (int64_t)v;
	}
	*pp = p;
	return 0;
}

/*
 * xs_parse_event() - parse the XEvent body [p, e) held in memory.
 * Returns 0, or -1 when malformed (bad varint, length past the end, a known
 * field with the wrong wire type, a group).
 */
static inline int xs_parse_event(const uint8_t *p, const uint8_t *e, struct xs_evhdr *h)
{
	const uint8_t *b = p, *data;
	uint64_t v;

	if (xevent_head(&p, e, h) < 0)
		return -1;
	while (p < e) {
		const uint8_t *fs;
		uint32_t f;
		int known;

		/* a run of stats (short length): the common case, skipped tightly */
		if (p[0] == TAG_XEVENT_STAT && e - p >= 2 && p[1] < 0x80) {
			if (!h->has_stats) {
				h->has_stats = true;
				h->stats_at = (uint64_t)(p - b);
			}
			do {
				if (p[1] > (uint64_t)(e - p - 2))
					return -1;
				p += 2 + p[1];
			} while (p < e && p[0] == TAG_XEVENT_STAT && e - p >= 2 && p[1] < 0x80);
			continue;
		}
		fs = p;
		if ((known = wire_rd_known_field(&p, e, xevent_field_wire, &f, &v, &data)) < 0)
			return -1;
		if (!known || f != XEVENT_F_STATS)
			h->odd = true;
		if (!known)
			continue;
		switch (f) {
		case XEVENT_F_METADATA_ID:
			h->md = (int64_t)v;
			break;
		case XEVENT_F_OFFSET_PS:
			h->offset_ps = (int64_t)v, h->has_num = false;
			break;
		case XEVENT_F_DURATION_PS:
			h->duration_ps = (int64_t)v;
			break;
		case XEVENT_F_NUM_OCCURRENCES:
			h->num = (int64_t)v, h->has_num = true, h->offset_ps = 0;
			break;
		case XEVENT_F_STATS:
			if (!h->has_stats) {
				h->has_stats = true;
				h->stats_at = (uint64_t)(fs - b);
			}
			break;
		}
	}
	return 0;
}

/*
 * xs_parse_event_plain() - xs_parse_event() of an event of a plain line
 * (struct xs_line): the index saw every one of its events end with stats
 * alone after fields 1-3, so the stats are not stepped over one by one to
 * look for more fields. An event that does not start its stats where they
 * should be (the file changed) takes the full parse.
 */
static inline int xs_parse_event_plain(const uint8_t *p, const uint8_t *e, struct xs_evhdr *h)
{
	const uint8_t *b = p;

	if (xevent_head(&p, e, h) < 0)
		return -1;
	if (p < e && p[0] != TAG_XEVENT_STAT)
		return xs_parse_event(b, e, h);
	h->has_stats = p < e;
	h->stats_at = h->has_stats ? (uint64_t)(p - b) : 0;
	return 0;
}

/*
 * xs_event_fast() - the hot path over a line's events: when the next field
 * at c->pos is an event (TAG_XLINE_EVENT) lying wholly in the window, parse its
 * header (@plain: of a plain line) and step over it. 1: done (*off, *len = the event body); 0: not
 * applicable, take the general path; -1: the event is malformed.
 */
static inline int xs_event_fast(struct wire_cur *c, struct xs_evhdr *h, uint64_t *off,
				uint64_t *len, bool plain)
{
	const uint8_t *p, *q;
	size_t n = wire_avail(c, &p);
	uint64_t l;

	if (n < 2 || p[0] != TAG_XLINE_EVENT)
		return 0;
	q = p + 1;
	if (wire_rd_varint(&q, p + n, &l) < 0 || l > (uint64_t)(p + n - q))
		return 0;
	if ((plain ? xs_parse_event_plain(q, q + l, h) : xs_parse_event(q, q + l, h)) < 0)
		return -1;
	*off = c->pos + (uint64_t)(q - p);
	*len = l;
	c->pos = *off + l;
	return 1;
}

/* ---- the JSON writer every view writes through (xspace/json.c) --------- */

/* A sink is written to every this many bytes. */
#define XS_OUT_CHUNK ((size_t)64 << 10)
/* Most bytes held without a sink (a pre-rendered string). */
#define XS_OUT_MAX ((size_t)256 << 20)

/*
 * With a sink the buffer holds at most XS_OUT_CHUNK bytes and is written out
 * whenever the next piece does not fit (a single piece larger than that is
 * passed through whole); without a sink it grows up to XS_OUT_MAX. A sink
 * that lends memory (xprofs_sink.room) is written in place: the buffer is
 * its room, committed instead of written.
 */
struct xs_out {
	char *buf; /* owned, or lent by the sink (@lent) */
	size_t len, cap;
	bool lent;
	const struct xprofs_sink *sink; /* borrowed, may be NULL */
	struct xprofs_buf esc;          /* scratch for JSON escaping */
	int r;                          /* the sticky error */
};

/* xs_out_init() - @sink borrowed (NULL: collect into a string). */
void xs_out_init(struct xs_out *o, const struct xprofs_sink *sink);
void xs_out_deinit(struct xs_out *o);
/* xs_out_steal() - the bytes written, NUL-terminated (caller owns; free()), or NULL. */
char *xs_out_steal(struct xs_out *o, size_t *len);
/* xs_out_room() - make room for @n more bytes (and a NUL); the slow path of the appends. */
int xs_out_room(struct xs_out *o, size_t n);
/* xs_out_str() - @s (@n bytes, borrowed) as a JSON string. */
void xs_out_str(struct xs_out *o, const char *s, size_t n);
void xs_out_cstr(struct xs_out *o, const char *s);
/* xs_out_key_cstr() - the literal @lit (a key with its punctuation), then @s as xs_out_cstr(). */
void xs_out_key_cstr(struct xs_out *o, const char *lit, const char *s);
/* xs_out_double() - shortest round-tripping form; null for NaN and infinities. */
void xs_out_double(struct xs_out *o, double d);
/* xs_out_opt_double() - @lit (a key and colon, borrowed), then @d, or null without @has. */
void xs_out_opt_double(struct xs_out *o, const char *lit, bool has, double d);
/* xs_out_flush() - the sticky error; with @force, also write what is buffered. */
int xs_out_flush(struct xs_out *o, bool force);
/* xs_json_dup() - JSON-quote @s (@n bytes) into a new string. Caller owns *out (free()). */
int xs_json_dup(const char *s, size_t n, char **out, size_t *out_len);

static inline void xs_out_add(struct xs_out *o, const void *p, size_t n)
{
	if (o->r)
		return;
	if (n >= o->cap - o->len && xs_out_room(o, n) < 0)
		return;
	memcpy(o->buf + o->len, p, n);
	o->len += n;
}

/* string literals only ("" s rejects anything else at compile time) */
#define OUT_LIT(o, s) xs_out_add((o), "" s, sizeof("" s) - 1)
#define OUT_RAW(o, s) xs_out_add((o), (s), strlen(s))

/* "00" "01" ... "99": two digits per table look-up. */
extern const char xs_digits2[201];

/* Decimal digits of @v into @buf (at least 20 bytes); returns the length. */
static inline size_t xs_fmt_u64(char *buf, uint64_t v)
{
	uint64_t t = v;
	size_t n = 1;
	char *p;

	/* count first, then write in place: no variable-length copy per number */
	while (t >= 100) {
		t /= 100;
		n += 2;
	}
	n += t >= 10;
	p = buf + n;
	while (v >= 100) {
		p -= 2;
		memcpy(p, xs_digits2 + (v % 100) * 2, 2);
		v /= 100;
	}
	if (v >= 10)
		memcpy(p - 2, xs_digits2 + v * 2, 2);
	else
		p[-1] = (char)('0' + v);
	return n;
}

/* Reserve @n bytes at the end of the output; NULL after an error. */
static inline char *xs_out_reserve(struct xs_out *o, size_t n)
{
	if (o->r)
		return NULL;
	if (n >= o->cap - o->len && xs_out_room(o, n) < 0)
		return NULL;
	return o->buf + o->len;
}

static inline void xs_out_u64(struct xs_out *o, uint64_t v)
{
	char *p = xs_out_reserve(o, 24);

	if (p)
		o->len += xs_fmt_u64(p, v);
}

static inline void xs_out_i64(struct xs_out *o, int64_t v)
{
	char *p = xs_out_reserve(o, 24);

	if (!p)
		return;
	if (v < 0) {
		*p = '-';
		o->len += 1 + xs_fmt_u64(p + 1, (uint64_t)0 - (uint64_t)v);
	} else {
		o->len += xs_fmt_u64(p, (uint64_t)v);
	}
}

/* xs_out_key_i64() - the literal @lit (a key with its punctuation), then @v. */
static inline void xs_out_key_i64(struct xs_out *o, const char *lit, int64_t v)
{
	xs_out_add(o, lit, strlen(lit));
	xs_out_i64(o, v);
}

/* xs_out_key_u64() - the literal @lit (a key with its punctuation), then @v. */
static inline void xs_out_key_u64(struct xs_out *o, const char *lit, uint64_t v)
{
	xs_out_add(o, lit, strlen(lit));
	xs_out_u64(o, v);
}

/* @ps picoseconds as an exact decimal number of microseconds. */
static inline void xs_out_us(struct xs_out *o, int64_t ps)
{
	char *p = xs_out_reserve(o, 40);
	uint64_t u = ps < 0 ? (uint64_t)0 - (uint64_t)ps : (uint64_t)ps;
	uint32_t frac = (uint32_t)(u % 1000000);
	size_t n = 0;

	if (!p)
		return;
	if (ps < 0)
		p[n++] = '-';
	n += xs_fmt_u64(p + n, u / 1000000);
	if (frac) {
		char f[6];
		size_t k = 6;

		memcpy(f, xs_digits2 + (frac / 10000) * 2, 2);
		memcpy(f + 2, xs_digits2 + (frac / 100 % 100) * 2, 2);
		memcpy(f + 4, xs_digits2 + (frac % 100) * 2, 2);
		while (f[k - 1] == '0')
			k--;
		p[n++] = '.';
		memcpy(p + n, f, sizeof(f)); /* fixed size (inside the 40 reserved): no call */
		n += k;
	}
	o->len += n;
}

/* ---- limits and the index (xspace/index.c, xspace/open.c) ----------- */

/* Strings longer than this are truncated in the views (marked "..."). */
#define XS_STR_MAX ((size_t)16 << 20)
/* Plane and line names kept in the index are capped at this many bytes. */
#define XS_NAME_MAX ((size_t)64 << 10)
/* Most threads one open() indexes planes with. */
#define XS_THREADS_MAX 8
/* Files smaller than this are indexed on the calling thread only (tests lower it). */
extern size_t xs_parallel_min_bytes;
/* A plane's metadata region up to this size is read in one go (tests lower it). */
extern size_t xs_md_region_max;
/* Most index entries (lines + metadata entries + plane stats + strings). */
#define XS_INDEX_MAX ((size_t)8 << 20)
/* Most planes and lines (their index records are ~200 bytes each). */
#define XS_PLANES_MAX ((size_t)1 << 16)
#define XS_LINES_MAX ((size_t)1 << 20)

/* ---- the index ------------------------------------------------------ */

struct xs_span {
	uint64_t off, len;
};

struct xs_md { /* one map entry: its key and where its value lies */
	int64_t key;
	uint64_t off, len;
};

/*
 * Key -> entry index of one metadata map: a dense table when the keys are
 * compact (the usual case: ids count up from 0 or 1), else binary search
 * over the sorted entries.
 */
struct xs_mdix {
	struct xs_md *md; /* owned; sorted by key, unique keys (last wins) */
	size_t n;
	int32_t *dense; /* owned; dense[key - base] = index or -1; NULL if sparse */
	int64_t base;
	uint64_t span;
};

struct xs_plane {
	int64_t id;
	char *name; /* owned, NUL-terminated, capped at XS_NAME_MAX */
	size_t name_len;
	char *file; /* owned; unique plane directory name */
	struct xs_span msg;
	struct xs_mdix ev, st; /* event_metadata, stat_metadata */
	uint64_t md_lo, md_hi; /* file range holding all their values */
	struct xs_span *stats; /* owned; plane-level XStat messages */
	size_t n_stats;
	size_t first_line, n_lines; /* into xprofs_xspace.lines */
	uint64_t events;
	int64_t first_ps, last_ps;
	bool has_events;
	uint8_t derived_have; /* derived line names the plane holds (order.c) */
	bool group_ids;       /* a stat metadata is named "group_id" (XProf: already grouped) */
};

/*
 * One checkpoint of a line's time -> file offset map (slices): every
 * XS_CKPT_EVERY-th event of the line, recorded by the structural pass from
 * the event headers it parses anyway. A windowed walk seeks to the last
 * checkpoint whose earlier events all end at or before the window start, so
 * a long event that began before the checkpoint is never skipped.
 */
#define XS_CKPT_EVERY 4096
struct xs_ckpt {
	uint64_t off;    /* file offset of the event's field in the XLine (its tag) */
	int64_t max_end; /* the latest line-relative end (at least start + 1 ps) of the events
			      before it; INT64_MAX: saturated, unknown */
};

struct xs_line {
	size_t plane;
	int64_t id, display_id, timestamp_ns, duration_ps;
	char *name, *display_name; /* owned, capped */
	size_t name_len, display_name_len;
	char *file; /* owned; unique within the plane, ends in ".json" */
	struct xs_span msg;
	uint64_t events;
	int64_t first_ps, last_ps;
	bool has_events;
	bool unsorted; /* an event starts before the one before it (no early stop) */
	bool plain;    /* every event: fields 1-3, then stats alone (xs_parse_event_plain()) */
	struct xs_ckpt *ckpt; /* owned; events / XS_CKPT_EVERY entries (none if tracks_only) */
	size_t n_ckpt;
	uint32_t trace_tid;  /* trace.json's tid: the display id, renumbered on GPU (order.c) */
	int32_t derive_slot; /* its derived lines' group on a GPU plane, -1: none */
};

struct xs_strs {
	char **s; /* owned */
	size_t *len;
	size_t n;
};

struct xprofs_xspace {
	const struct xprofs_reader *r; /* borrowed */
	struct xs_plane *planes;
	size_t n_planes;
	struct xs_line *lines;
	size_t n_lines;
	struct xs_strs hostnames, errors, warnings;
	struct xprofs_xspace_totals totals;
	bool tracks_only; /* opened without event statistics */
	/*
	 * XProf's trace preprocessing (PreprocessSingleHostXSpace) runs only on a
	 * space no plane of which has a "group_id" stat metadata
	 * (IsXSpaceGrouped()); host_id stands for its hostname in the flow ids
	 * that preprocessing makes (trace-model.c, xs_trace_xflows()).
	 */
	bool grouped;
	uint64_t host_id;
	unsigned threads; /* the caller's thread allowance (opts->threads, at least 1): the reader's
			   * pread is thread-safe when > 1, so renders may use that many too */
	const struct xprofs_xspace_sidecar *sidecars; /* borrowed: xprofs_xspace_set_sidecars() */
	size_t n_sidecars;
};

/* ---- helpers shared by the files ---------------------------------- */

/* xs_event_end_rel() - an event's line-relative end as slices see it: never before start + 1 ps. */
static inline int64_t xs_event_end_rel(int64_t offset_ps, int64_t duration_ps)
{
	int64_t e;

	if (__builtin_add_overflow(offset_ps, duration_ps > 0 ? duration_ps : 1, &e))
		return INT64_MAX;
	return e;
}

static inline int64_t xs_sat_add(int64_t a, int64_t b)
{
	int64_t s;

	if (__builtin_add_overflow(a, b, &s))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return s;
}

static inline int64_t xs_line_base_ps(int64_t ts_ns)
{
	int64_t s;

	if (__builtin_mul_overflow(ts_ns, (int64_t)1000, &s))
		return ts_ns > 0 ? INT64_MAX : INT64_MIN;
	return s;
}

/* xs_index_build() - the structural pass (index.c): fill @x from x->r on up to @threads threads.
 */
int xs_index_build(struct xprofs_xspace *x, unsigned threads, struct xprofs_buf *err);
/*
 * XProf's derived lines (openxla/xprof xprof/utils/derived_timeline.cc):
 * trace/ derives them; the index notes which a plane already holds by name
 * (xs_plane.derived_have, bit per DL_*), since those are not derived again.
 * The values index arrays only.
 */
enum { DL_MODULE = 0, DL_HLO_OP, DL_NAME_SCOPE, DL_TF_OP, DL_SOURCE, DL_COUNT };
/* The name of each derived line (kXlaModuleLineName, ...). */
extern const char *const xs_derived_names[DL_COUNT];
/* TSL trace_utils.h: derived thread ids (int, so 0xdeadbeef wraps negative as in XProf) */
#define TID_DERIVED_MIN ((int32_t)0xdeadbeefu)
#define TID_DEVICE_DERIVED_MIN (TID_DERIVED_MIN + 290) /* kThreadIdHostXlaRegionEnd + 1 */
#define TID_DEVICE_DERIVED_MAX (TID_DEVICE_DERIVED_MIN + 99)
#define TID_DERIVED_MAX TID_DEVICE_DERIVED_MAX
/* xs_derived_tid() - IsDerivedThreadId() of a line id. */
bool xs_derived_tid(int64_t id);
/* Whether line @l is derived line @k (DL_*). */
typedef bool (*xs_derived_is_fn)(const struct xs_line *l, int k);
/*
 * xs_plane_derived_have() - the derived lines plane @p already holds (bit per
 * DL_*): those of its lines @is says are one (order.c; the index asks by name).
 */
uint8_t xs_plane_derived_have(const struct xprofs_xspace *x, const struct xs_plane *p,
			      xs_derived_is_fn is);
/*
 * xs_derived_assign() - every line's trace_tid (its display id, renumbered
 * on GPU planes as XProf's DeriveEventsFromAnnotations() orders streams) and
 * derive_slot, and each plane's derived_have (xspace/order.c), after the index.
 */
int xs_derived_assign(struct xprofs_xspace *x);
/* xs_plane_deinit() / xs_line_deinit() - free what an index record owns. */
void xs_plane_deinit(struct xs_plane *p);
void xs_line_deinit(struct xs_line *l);
/*
 * xs_plane_stat_int() - the integer value of @p's plane stat named @want
 * (stats.c; for the Task Environment times), 0 when absent or malformed.
 * Moves @c (whose err should be NULL).
 */
int64_t xs_plane_stat_int(const struct xs_plane *p, struct wire_cur *c, const char *want);

/* xs_str_eq() - @s (@n bytes) equals the C string @lit. */
static inline bool xs_str_eq(const char *s, size_t n, const char *lit)
{
	return n == strlen(lit) && !memcmp(s, lit, n);
}

/* xs_plane_is_device() - "/device:..." planes hold accelerator ops. */
static inline bool xs_plane_is_device(const struct xs_plane *p)
{
	return !strncmp(p->name, "/device:", 8);
}

/*
 * xs_plane_is_tensor_core() - "/device:TPU:<digits>" and nothing more: a
 * TensorCore (TSL FindTensorCorePlanes(); SparseCores and others are not).
 */
static inline bool xs_plane_is_tensor_core(const struct xs_plane *p)
{
	if (p->name_len < 13 || memcmp(p->name, "/device:TPU:", 12) != 0)
		return false;
	for (size_t i = 12; i < p->name_len; i++)
		if (p->name[i] < '0' || p->name[i] > '9')
			return false;
	return true;
}

/* xs_plane_is_gpu() - "/device:GPU:..." planes (XProf's GPU rules apply). */
static inline bool xs_plane_is_gpu(const struct xs_plane *p)
{
	return !strncmp(p->name, "/device:GPU:", 12);
}
/* xs_md_find() - index of @key in @ix, or -1. */
static inline ssize_t xs_md_find(const struct xs_mdix *ix, int64_t key)
{
	size_t lo = 0, hi = ix->n;

	if (ix->dense) {
		uint64_t k = (uint64_t)key - (uint64_t)ix->base;

		return k < ix->span ? ix->dense[k] : -1;
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ix->md[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < ix->n && ix->md[lo].key == key ? (ssize_t)lo : -1;
}

/* Decoded metadata is dropped between events once it passes this many bytes. */
#define XS_MD_BUDGET ((size_t)64 << 20)

/* ---- the metadata cache (xspace/metadata.c) --------------------------- */

struct xs_stmd { /* one XStatMetadata */
	bool loaded;
	char *name; /* raw, NUL-terminated */
	size_t name_len;
	char *json; /* the name as a JSON string, followed by ':' (a stat's key) */
	size_t json_len;
	int8_t tkind; /* trace.json's class of the name + 1 (0: not yet known; trace-model.c) */
	int8_t ckind; /* xs_collect_stat()'s class of the name (0: not yet known; stats.c) */
};

/* The amounts of an op: XStats flops, bytes_accessed, model_flops, each with whether it is set. */
struct xs_amounts {
	double flops, bytes, model_flops;
	bool has_flops, has_bytes, has_model_flops;
};

struct xs_evmd { /* one XEventMetadata */
	bool loaded;
	char *name; /* raw display name, else name */
	size_t name_len;
	char *name_json, *full_json, *stats_json; /* stats_json: "k":v,... */
	size_t name_json_len, full_json_len, stats_json_len;
	bool has_display; /* display name set and differing from name */
	/* from the metadata's stats, for ops */
	char *category, *hlo_op;
	struct xs_amounts amt;
	char *hlo_module; /* owned, NULL when absent */
	char *tf_op;      /* owned, NULL when absent */
	uint64_t program_id;
	bool has_program_id;
	int64_t group;   /* ops group in the current aggregation, -1 unknown */
	int8_t off_duty; /* the TPU duty cycle's memo of its category: 0 unknown, 1 no, 2 yes */
	void *view_md;   /* owned through rc->md_ext: an analysis's own facts (trace/) */
	size_t view_md_bytes;
};

struct xs_rctx;
/*
 * What an analysis keeps of each event metadata entry besides what
 * struct xs_evmd holds (trace/: the trace args and special stats): @fill
 * is called when the entry is loaded (message [off, off+len) at rc->md;
 * full name @full, display name length @disp_len) and sets e->view_md and
 * e->view_md_bytes; @free frees a view_md. Set rc->md_ext before the first
 * metadata look-up of the render.
 */
struct xs_md_ext {
	int (*fill)(struct xs_rctx *rc, struct xs_evmd *e, const char *full, size_t full_len,
		    size_t disp_len, uint64_t off, uint64_t len);
	void (*free)(void *view_md);
};

struct xprofs_hlo_facts; /* xprofs/hlo.h */
/*
 * The HLO facts of a render (xprofs/hlo.h: per (program id, instruction
 * name) its framework op, source line, category, ...), made from the
 * profile's metadata plane and its sidecars on first use by the render's
 * owner (decode/render.c), once, and shared by the render's contexts: @get
 * gives them (NULL: the profile carries no HLO), thread-safe. Through
 * xs_hlo_facts().
 */
struct xs_hlo_src {
	int (*get)(struct xs_hlo_src *s, const struct xprofs_hlo_facts **out);
};

struct xs_rctx {
	struct xprofs_xspace *x; /* borrowed */
	struct wire_cur ev, md;
	struct xprofs_buf *err; /* borrowed, may be NULL */
	size_t plane;
	struct xs_evmd *evmd; /* owned, parallel to plane->ev.md */
	struct xs_stmd *stmd; /* owned, parallel to plane->st.md */
	size_t md_bytes;
	struct xprofs_buf tmp;
	const struct xs_md_ext *md_ext; /* borrowed, may be NULL: makes each entry's view_md */
	const char *host; /* borrowed, may be NULL: the host name of trace.json's processes */
	bool win;         /* a slice: line walks keep events overlapping [win_from, win_to) */
	xprofs_ps128 win_from, win_to;
	/*
	 * A level-of-detail trace: the trace views keep the events XProf's
	 * viewer shows of [lod_from, lod_to] at lod_res ps per pixel (trace/lod.c
	 * sets these from @lod and the window).
	 */
	bool lod;
	xprofs_ps128 lod_from, lod_to;
	uint64_t lod_res, lod_px;
	struct xs_hlo_src *hlo; /* borrowed, may be NULL: the render's HLO facts (xs_hlo_facts()) */
	bool in_task; /* a xs_tasks_run() thread's: its tasks run their own tasks in a loop */
	const char *spill_dir; /* borrowed, may be NULL: xs_parts_run()'s temporary files */
};

/*
 * xs_rctx_init() - a fresh render context over @x (borrowed), messages to
 * @err (borrowed, may be NULL). Free with xs_rctx_deinit().
 */
void xs_rctx_init(struct xs_rctx *rc, struct xprofs_xspace *x, struct xprofs_buf *err);
/*
 * xs_rctx_child() - a fresh render context over @parent's profile with its
 * settings (host, window, spill_dir), for another thread; messages go to
 * @err (borrowed). Nothing may change @parent meanwhile: a part run on it
 * may (trace.pftrace turns the window off for a while), so xs_parts_run()
 * makes its helpers' before any part. Free with xs_rctx_deinit().
 */
void xs_rctx_child(struct xs_rctx *rc, const struct xs_rctx *parent, struct xprofs_buf *err);
void xs_rctx_deinit(struct xs_rctx *rc);

/*
 * xs_hlo_facts() - the render's HLO facts into *@out (borrowed for the
 * render; NULL when it has none), made on the first call. 0 or -errno.
 */
static inline int xs_hlo_facts(struct xs_rctx *rc, const struct xprofs_hlo_facts **out)
{
	*out = NULL;
	return rc->hlo ? rc->hlo->get(rc->hlo, out) : 0;
}

/* What a missing event metadata entry reads as (the empty name, no stats). */
extern struct xs_evmd xs_empty_evmd;

/* xs_plane_enter() - make plane @pi the current one (drops the cache on a change). */
int xs_plane_enter(struct xs_rctx *rc, size_t pi);
/*
 * xs_md_groups_forget() - set the ops group (xs_evmd.group) of every event
 * metadata of plane @pi held in the cache back to unknown: an aggregation
 * that starts on a plane the context already holds must not meet another
 * aggregation's groups.
 */
void xs_md_groups_forget(struct xs_rctx *rc, size_t pi);
/* xs_md_drop() - free all decoded metadata of the current plane. */
void xs_md_drop(struct xs_rctx *rc);
/*
 * xs_md_load_stat() / xs_md_load_event() - the slow paths of xs_md_stat()
 * and xs_md_event(): decode entry @key of the current plane's stat map
 * (stmd.c) / event map (metadata.c) into the cache, or give the empty entry
 * when the map has no @key. *out: borrowed until xs_md_gc().
 */
int xs_md_load_stat(struct xs_rctx *rc, int64_t key, const struct xs_stmd **out);
int xs_md_load_event(struct xs_rctx *rc, int64_t key, struct xs_evmd **out);
/* Decodes the metadata entry @m, at the narrowed metadata cursor, into @entry. */
typedef int (*xs_md_decode_fn)(struct xs_rctx *rc, void *entry, const struct xs_md *m);
/*
 * xs_md_decode() - @fn(rc, @entry, @m) with rc->md narrowed to entry @m's
 * bytes, restored afterwards (stmd.c); @entry borrowed.
 */
int xs_md_decode(struct xs_rctx *rc, const struct xs_md *m, xs_md_decode_fn fn, void *entry);
/*
 * xs_stmd_key() - the key of plane @p's stat metadata named @name (XProf's
 * GetStatMetadataByType()), or -1; read straight from the file with @c,
 * whose pos and end it moves (stmd.c). For one-off look-ups outside a render.
 */
int64_t xs_stmd_key(struct wire_cur *c, const struct xs_plane *p, const char *name);
/* xs_stmd_clear() - free what a stat metadata entry owns (stmd.c). */
void xs_stmd_clear(struct xs_stmd *s);
/*
 * xs_md_names() - the name (field XSTMD_F_NAME = XEVMD_F_NAME = 2) and, when
 * @disp is not NULL, the display name (XEVMD_F_DISPLAY_NAME) of the metadata
 * message at cursor @c (stmd.c). *name and *disp: caller frees (free()),
 * NULL if absent.
 */
int xs_md_names(struct wire_cur *c, const char *msg, char **name, size_t *name_len, char **disp,
		size_t *disp_len);

/*
 * xs_md_stat() / xs_md_event() - the current plane's stat / event metadata
 * @key (borrowed, valid until xs_md_gc()). Inline: a cache hit (the common
 * case, several per event) costs one index look-up, no call.
 */
static inline int xs_md_stat(struct xs_rctx *rc, int64_t key, const struct xs_stmd **out)
{
	ssize_t k = xs_md_find(&rc->x->planes[rc->plane].st, key);

	if (k >= 0 && rc->stmd[k].loaded) {
		*out = &rc->stmd[k];
		return 0;
	}
	return xs_md_load_stat(rc, key, out);
}

static inline int xs_md_event(struct xs_rctx *rc, int64_t key, struct xs_evmd **out)
{
	ssize_t k = xs_md_find(&rc->x->planes[rc->plane].ev, key);

	if (k >= 0 && rc->evmd[k].loaded) {
		*out = &rc->evmd[k];
		return 0;
	}
	return xs_md_load_event(rc, key, out);
}

/* xs_md_gc() - between events: keep the decoded metadata under its budget. */
static inline void xs_md_gc(struct xs_rctx *rc)
{
	if (rc->md_bytes > XS_MD_BUDGET)
		xs_md_drop(rc);
}

/* ---- XStats (xspace/xstat.c) ------------------------------------------ */

/* A stat's kind is the field number of its value (0: none). */
enum {
	SV_NONE = 0,
	SV_DOUBLE = XSTAT_F_DOUBLE,
	SV_U64 = XSTAT_F_UINT64,
	SV_I64 = XSTAT_F_INT64,
	SV_STR = XSTAT_F_STR,
	SV_BYTES = XSTAT_F_BYTES,
	SV_REF = XSTAT_F_REF,
	SV_ZSTR = XSTAT_F_COMPRESSED,
};

struct xs_statv { /* one XStat, its value located, not copied */
	int64_t md;
	int kind;
	uint64_t u; /* u64, i64 (as bits), ref */
	double d;
	uint64_t off, len; /* str, bytes, compressed: where the bytes lie */
};

/* xs_zlib_errno() - the module's one mapping of zlib results to -errno (xstat.c). */
int xs_zlib_errno(int zr);

/* xs_stat_number() - @s's value as a number (flops etc.); false when not numeric. */
bool xs_stat_number(const struct xs_statv *s, double *d);
/*
 * xs_stat_str_at() - where @s's string lies: a ref's name, or a str's bytes
 * (at most @cap) in @c's window; *@p borrowed until the cursor moves or
 * xs_md_gc(). 1 when @s is a str or ref, 0 for another kind, or -errno.
 */
int xs_stat_str_at(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s, size_t cap,
		   const char **p, size_t *n);
/* xs_stat_string() - @s's value (str or ref) as a new string; caller frees *out with free(). */
int xs_stat_string(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s, char **out);
/* xs_stat_parse() - parse the XStat body [c->pos, c->end). */
int xs_stat_parse(struct wire_cur *c, struct xs_statv *s);

typedef int (*xs_stat_fn)(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s,
			  void *arg);
/* xs_walk_stats() - call @fn for each XStat in field @field of the message [off, off+len) on @c.
 */
int xs_walk_stats(struct xs_rctx *rc, struct wire_cur *c, uint64_t off, uint64_t len,
		  uint32_t field, xs_stat_fn fn, void *arg);

/*
 * A few stat metadata ids (xs_walk_stats_keys()), zeroed and then filled by
 * xs_stat_keys_add() (which drops keys past XS_STAT_KEYS_MAX).
 */
#define XS_STAT_KEYS_MAX 16
struct xs_stat_keys {
	int64_t key[XS_STAT_KEYS_MAX];
	size_t n;
	uint64_t lo; /* the keys 0..63 as bits */
};
void xs_stat_keys_add(struct xs_stat_keys *k, int64_t key);
/*
 * xs_walk_stats_keys() - xs_walk_stats() with @fn called only for the stats
 * whose metadata id is one of @k's: the same calls, results and errors, but
 * the other stats are only checked, not decoded (the cheap way to read two
 * stats of events that carry ten).
 */
int xs_walk_stats_keys(struct xs_rctx *rc, struct wire_cur *c, uint64_t off, uint64_t len,
		       uint32_t field, const struct xs_stat_keys *k, xs_stat_fn fn, void *arg);

/* xs_walk_plane_stats() - call @fn for each stat of plane @pi (enters the plane). */
int xs_walk_plane_stats(struct xs_rctx *rc, size_t pi, xs_stat_fn fn, void *arg);

struct xs_render_arg {
	struct xs_out *o;
	bool first;
};
/* xs_render_stat() - a xs_stat_fn writing "name":value pairs (arg: struct xs_render_arg). */
int xs_render_stat(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s, void *arg);

/* The strings of a struct xs_opstats, as bits of its owned / plain masks. */
enum {
	XS_OS_CATEGORY,
	XS_OS_HLO_OP,
	XS_OS_STEP_NAME,
	XS_OS_HLO_MODULE,
	XS_OS_KERNEL_DETAILS,
	XS_OS_TF_OP,
	XS_OS_NSTR
};

/* Interesting stats for ops/steps, from metadata or event stats. */
struct xs_opstats {
	char *category, *hlo_op, *step_name; /* owned */
	struct xs_amounts amt;
	int64_t step_num;
	bool has_step_num;
	/* for ops.json / overview.json / kernels.json (docs/stats.md) */
	bool strings;    /* set by the caller: also collect these */
	bool want_tf_op; /* set by the caller: also collect tf_op (GPU op tables) */
	char *hlo_module, *kernel_details, *tf_op; /* owned */
	uint64_t program_id;
	bool has_program_id;
	int64_t dev_off, dev_dur; /* device_offset_ps / device_duration_ps */
	bool has_dev_off, has_dev_dur;
	int64_t group_id; /* XProf's step grouping (GPU ops merge contiguous runs by it) */
	bool has_group_id;
	int64_t corr; /* correlation_id (the steps admit GPU events by it) */
	bool has_corr;
	/*
	 * Per-event walks: with @borrow (set by the caller) a string whose stat is a
	 * ref points at the stat metadata's name (borrowed until the next
	 * xs_md_gc(), so for the event being handled) instead of a copy, and
	 * ref[i] is that ref: the string's identity within the plane, for caches
	 * keyed by it. Bit i of @owned: string i is a copy (xs_opstats_clear()
	 * frees it); of @plain: it came from a value, not a ref (no identity).
	 */
	bool borrow;
	uint8_t owned, plain;
	int64_t ref[XS_OS_NSTR];
};
/* xs_opstats_clear() - free what @s owns; zeroes it, except in borrow mode (per-event
 * structs, dropped right after: only the copies are freed, the rest is left). */
void xs_opstats_clear(struct xs_opstats *s);
/* xs_collect_stat() - a xs_stat_fn filling a struct xs_opstats. */
int xs_collect_stat(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s, void *arg);

/* ---- a framework op's full name (xspace/tfop.c) ------------------------ */

/* TSL's tf_op_utils.h Category, the subset ParseTfOpFullname() gives. */
enum xs_tfop_cat {
	XS_TFOP_UNKNOWN,
	XS_TFOP_TENSORFLOW,
	XS_TFOP_JAX,
	XS_TFOP_TF_DATA,
	XS_TFOP_MEMCPY_HTOD,
	XS_TFOP_MEMCPY_DTOH,
	XS_TFOP_MEMCPY_DTOD,
	XS_TFOP_MEMCPY_HTOH,
};
/* TfOp: pieces of the parsed string (borrowed), or constants. */
struct xs_tfop {
	enum xs_tfop_cat cat;
	const char *name, *type;
	size_t name_len, type_len;
};
/* xs_tfop_parse() - TSL's ParseTfOpFullname() of @s (@n bytes, borrowed by *op). */
void xs_tfop_parse(const char *s, size_t n, struct xs_tfop *op);

/* ---- the events of a line (xspace/walk.c) ------------------------------ */

struct xs_event {
	/*
	 * The header as parsed (xs_event_fast() fills @hdr in place), its
	 * fields also by name: the anonymous struct is xs_evhdr's first
	 * members, a common initial sequence (checked below).
	 */
	union {
		struct xs_evhdr hdr;
		struct {
			int64_t md, offset_ps, duration_ps, num;
			bool has_num, has_stats;
		};
	};
	int64_t start_ps, end_ps;
	uint64_t off, len;  /* the XEvent message */
	uint64_t stats_off; /* its first stats field */
};
_Static_assert(offsetof(struct xs_event, num) == offsetof(struct xs_evhdr, num) &&
		       offsetof(struct xs_event, has_stats) == offsetof(struct xs_evhdr, has_stats),
	       "struct xs_event's named header fields are struct xs_evhdr's");

struct xs_line_it {
	struct xs_rctx *rc;
	const struct xs_line *l;
	uint64_t end;
	int64_t base_ps;
};

/* xs_line_begin() - start walking line @li (enters its plane). */
int xs_line_begin(struct xs_rctx *rc, size_t li, struct xs_line_it *it);
/* xs_line_next_slow() - the general path of xs_line_next(). */
int xs_line_next_slow(struct xs_line_it *it, struct xs_evhdr *h, uint64_t *off, uint64_t *len);

/* xs_line_next() - next event of the line: 1 and *e filled, 0 at the end, or -errno. */
static inline int xs_line_next(struct xs_line_it *it, struct xs_event *e)
{
	struct wire_cur *c = &it->rc->ev;
	int r;

	r = xs_event_fast(c, &e->hdr, &e->off, &e->len, it->l->plain);
	if (r < 0)
		return wire_fail(c, "malformed XEvent at offset %llu", (unsigned long long)c->pos);
	if (r == 0 && (r = xs_line_next_slow(it, &e->hdr, &e->off, &e->len)) <= 0)
		return r;
	e->stats_off = e->off + e->hdr.stats_at;
	e->start_ps = xs_sat_add(it->base_ps, e->offset_ps);
	e->end_ps = xs_sat_add(e->start_ps, e->duration_ps);
	return 1;
}

/*
 * xs_line_seek() - where a walk of line @l that wants the events ending after
 * @from (profile time, ps) may start: the last checkpoint before which every
 * event ends at or before @from (walk.c), else the line's start. The events
 * from there on include every one that ends after @from.
 */
uint64_t xs_line_seek(const struct xs_line *l, xprofs_ps128 from);
/* xs_line_seek_nth() - xs_line_seek(), and *nth the number in the line of the event there. */
uint64_t xs_line_seek_nth(const struct xs_line *l, xprofs_ps128 from, uint64_t *nth);

/* A per-event callback: @m is @e's metadata (borrowed until the next event); <0 stops. */
typedef int (*xs_event_fn)(struct xs_rctx *rc, const struct xs_event *e, struct xs_evmd *m,
			   void *arg);
/* A stop test, asked before each event's metadata is looked up: true ends the walk with 0. */
typedef bool (*xs_stop_fn)(void *arg);
/*
 * xs_line_each() - call @fn for each event of line @li in file order, until
 * @stop (NULL: never) says enough; 0, or the first error. In a slice
 * (rc->win) only the events overlapping the window, found through the
 * line's checkpoints.
 */
int xs_line_each(struct xs_rctx *rc, size_t li, xs_stop_fn stop, xs_event_fn fn, void *arg);

/* xs_event_stats() - "k":v pairs of @m's then @e's stats; *first tracks commas. */
int xs_event_stats(struct xs_rctx *rc, const struct xs_evmd *m, const struct xs_event *e,
		   struct xs_out *o, bool *first);

/* ---- render contexts, tasks and parts (xspace/walk.c, xspace/parts.c) --- */

/* xs_out_line_name() - a line's display name (its name when none is set) as a JSON string. */
static inline void xs_out_line_name(struct xs_out *o, const struct xs_line *l)
{
	if (l->display_name_len)
		xs_out_str(o, l->display_name, l->display_name_len);
	else
		xs_out_str(o, l->name, l->name_len);
}

/* xs_with_rctx() - @fn(rc, @arg) with a fresh render context over @x. */
int xs_with_rctx(struct xprofs_xspace *x, struct xprofs_buf *err,
		 int (*fn)(struct xs_rctx *rc, void *arg), void *arg);

/* A task of xs_tasks_run(): task @i on render context @rc (its own when on another thread). */
typedef int (*xs_task_fn)(struct xs_rctx *rc, size_t i, void *arg);
/* What task @i costs, roughly (events it reads): the costliest are started first. */
typedef uint64_t (*xs_task_cost_fn)(const struct xprofs_xspace *x, size_t i, void *arg);
/*
 * xs_tasks_run() - @fn(rc, i, @arg) for i in [0, @n): on the calling thread with @rc when
 * the profile allows one thread (x->threads), else on up to x->threads threads, each
 * with a render context of its own, taking the tasks costliest first (@cost, may be
 * NULL: in order), so that a big plane does not run alone at the end. The tasks must
 * be independent (each writes only its own result). Returns 0, or the error of the
 * lowest failing task (its message in rc->err), as a loop that stops there would.
 */
int xs_tasks_run(struct xs_rctx *rc, size_t n, xs_task_fn fn, xs_task_cost_fn cost, void *arg);

/* Part @i of an ordered render, written to @o, on render context @rc (its own off the caller's thread). */
typedef int (*xs_part_fn)(struct xs_rctx *rc, size_t i, struct xs_out *o, void *arg);
/*
 * xs_parts_run() - @fn(rc, i, o, @arg) for i in [0, @n), their bytes in @o
 * in order (parts.c). The caller's thread writes the parts it takes straight
 * into @o, so the first bytes come as soon as they would in a loop; up to
 * x->threads - 1 more threads each take the next part not yet taken and
 * write it to an unlinked temporary file (in rc->spill_dir, else $TMPDIR or
 * /tmp), copied into @o at its turn. A part that failed on another thread
 * is made again on the caller's, so only the caller's errors count (a full
 * disk costs time, not the render). The parts must be independent and
 * their bytes must not depend on the thread that makes them. Returns 0, or
 * the first failing part's error (the loop stops there).
 */
int xs_parts_run(struct xs_rctx *rc, size_t n, xs_part_fn fn, void *arg, struct xs_out *o);

#endif
