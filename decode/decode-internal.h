/*
 * decode-internal.h - the decode module's private limits and its index:
 * the structures xprofs_xspace_open() builds (index.c, xspace.c) and every
 * render reads. The wire walker is in wire.h, the render side in
 * render-internal.h.
 *
 * The index is O(planes + lines + metadata entries + plane stats): it keeps
 * only where things are (file offsets), never event bodies.
 */
#ifndef XPROFS_DECODE_INTERNAL_H
#define XPROFS_DECODE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "wire.h"
#include "xprofs/decode.h"
#include "xprofs/util.h"

/* Strings longer than this are truncated in the views (marked "..."). */
#define DEC_STR_MAX ((size_t)16 << 20)
/* Plane and line names kept in the index are capped at this many bytes. */
#define DEC_NAME_MAX ((size_t)64 << 10)
/* Most threads one open() indexes planes with. */
#define DEC_THREADS_MAX 8
/* Files smaller than this are indexed on the calling thread only (tests lower it). */
extern size_t dec_parallel_min_bytes;
/* A plane's metadata region up to this size is read in one go (tests lower it). */
extern size_t dec_md_region_max;
/* Most index entries (lines + metadata entries + plane stats + strings). */
#define DEC_INDEX_MAX ((size_t)8 << 20)
/* Most planes and lines (their index records are ~200 bytes each). */
#define DEC_PLANES_MAX ((size_t)1 << 16)
#define DEC_LINES_MAX ((size_t)1 << 20)

/* ---- the index ------------------------------------------------------ */

struct dec_span {
	uint64_t off, len;
};

struct dec_md { /* one map entry: its key and where its value lies */
	int64_t key;
	uint64_t off, len;
};

/*
 * Key -> entry index of one metadata map: a dense table when the keys are
 * compact (the usual case: ids count up from 0 or 1), else binary search
 * over the sorted entries.
 */
struct dec_mdix {
	struct dec_md *md; /* owned; sorted by key, unique keys (last wins) */
	size_t n;
	int32_t *dense; /* owned; dense[key - base] = index or -1; NULL if sparse */
	int64_t base;
	uint64_t span;
};

struct dec_plane {
	int64_t id;
	char *name; /* owned, NUL-terminated, capped at DEC_NAME_MAX */
	size_t name_len;
	char *file; /* owned; unique plane directory name */
	struct dec_span msg;
	struct dec_mdix ev, st; /* event_metadata, stat_metadata */
	uint64_t md_lo, md_hi;  /* file range holding all their values */
	struct dec_span *stats; /* owned; plane-level XStat messages */
	size_t n_stats;
	size_t first_line, n_lines; /* into xprofs_xspace.lines */
	uint64_t events;
	int64_t first_ps, last_ps;
	bool has_events;
	uint8_t derived_have; /* derived line names the plane holds (derived.c) */
	bool group_ids;       /* a stat metadata is named "group_id" (XProf: already grouped) */
};

/*
 * One checkpoint of a line's time -> file offset map (slices): every
 * DEC_CKPT_EVERY-th event of the line, recorded by the structural pass from
 * the event headers it parses anyway. A windowed walk seeks to the last
 * checkpoint whose earlier events all end at or before the window start, so
 * a long event that began before the checkpoint is never skipped.
 */
#define DEC_CKPT_EVERY 4096
struct dec_ckpt {
	uint64_t off;    /* file offset of the event's field in the XLine (its tag) */
	int64_t max_end; /* the latest line-relative end (at least start + 1 ps) of the events
			      before it; INT64_MAX: saturated, unknown */
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
	bool unsorted;         /* an event starts before the one before it (no early stop) */
	struct dec_ckpt *ckpt; /* owned; events / DEC_CKPT_EVERY entries (none if tracks_only) */
	size_t n_ckpt;
	uint32_t trace_tid;  /* trace.json's tid: the display id, renumbered on GPU (derived.c) */
	int32_t derive_slot; /* its derived lines' group on a GPU plane, -1: none */
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
	bool tracks_only; /* opened without event statistics */
	/*
	 * XProf's trace preprocessing (PreprocessSingleHostXSpace) runs only on a
	 * space no plane of which has a "group_id" stat metadata
	 * (IsXSpaceGrouped()); host_id stands for its hostname in the flow ids
	 * that preprocessing makes (trace-model.c, dec_trace_xflows()).
	 */
	bool grouped;
	uint64_t host_id;
	unsigned threads; /* the caller's thread allowance (opts->threads, at least 1): the reader's
			   * pread is thread-safe when > 1, so renders may use that many too */
};

/* ---- helpers shared by the files ---------------------------------- */

/* dec_event_end_rel() - an event's line-relative end as slices see it: never before start + 1 ps. */
static inline int64_t dec_event_end_rel(int64_t offset_ps, int64_t duration_ps)
{
	int64_t e;

	if (__builtin_add_overflow(offset_ps, duration_ps > 0 ? duration_ps : 1, &e))
		return INT64_MAX;
	return e;
}

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

/* dec_index_build() - the structural pass (index.c): fill @x from x->r on up to @threads threads.
 */
int dec_index_build(struct xprofs_xspace *x, unsigned threads, struct xprofs_buf *err);
/* dec_derived_assign() - the lines' trace tids and derived groups (derived.c), after the index. */
int dec_derived_assign(struct xprofs_xspace *x);
/* dec_plane_deinit() / dec_line_deinit() - free what an index record owns. */
void dec_plane_deinit(struct dec_plane *p);
void dec_line_deinit(struct dec_line *l);
/*
 * dec_plane_stat_int() - the integer value of @p's plane stat named @want
 * (stats.c; for the Task Environment times), 0 when absent or malformed.
 * Moves @c (whose err should be NULL).
 */
int64_t dec_plane_stat_int(const struct dec_plane *p, struct dec_cur *c, const char *want);

/* dec_str_eq() - @s (@n bytes) equals the C string @lit. */
static inline bool dec_str_eq(const char *s, size_t n, const char *lit)
{
	return n == strlen(lit) && !memcmp(s, lit, n);
}

/* dec_plane_is_device() - "/device:..." planes hold accelerator ops. */
bool dec_plane_is_device(const struct dec_plane *p);
/* dec_md_find() - index of @key in @ix, or -1. */
static inline ssize_t dec_md_find(const struct dec_mdix *ix, int64_t key)
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

#endif
