/*
 * xprofs/decode.h - XSpace (*.xplane.pb) decoding into JSON views, streaming
 * and in bounded memory. No FUSE here: tools/xprofs-decode and fs/ share it.
 *
 * Model: xprofs_xspace_open() makes one structural pass over the file through
 * a struct xprofs_reader (skipping event bodies) and keeps a small index:
 * planes, lines, event counts, first/last times, and where each plane's
 * metadata maps lie. Views are then rendered from the index plus one more
 * streaming pass over just the bytes they need: summary.json needs no event
 * bodies; a track reads one line; ops/steps/trace read every event once,
 * holding one line's events at a time, never the whole profile.
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
 * ~64 MiB of decoded metadata, whatever the profile size. Schemas and rules
 * of the views: docs/decode.md.
 *
 * Thread safety: an xprofs_xspace may be rendered from several threads at
 * once provided the reader's pread() is thread-safe.
 */
#ifndef XPROFS_DECODE_H
#define XPROFS_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xprofs/util.h"

enum xprofs_view {
	XPROFS_VIEW_SUMMARY = 0, /* summary.json */
	XPROFS_VIEW_TRACE,       /* trace.json (Chrome trace-event JSON) */
	XPROFS_VIEW_OPS,         /* ops.json */
	XPROFS_VIEW_STEPS,       /* steps.json */
	XPROFS_VIEW_TRACE_GZ,    /* trace.json.gz: trace.json, gzip-compressed */
	XPROFS_VIEW_PFTRACE,     /* trace.pftrace: Perfetto's protobuf trace */
	XPROFS_VIEW_OVERVIEW,    /* overview.json: XProf's overview page (docs/stats.md) */
	XPROFS_VIEW_KERNELS,     /* kernels.json: GPU kernel stats; -ENOENT without GPU planes */
	XPROFS_VIEW_SVG,         /* overview.svg: step-time bars and top ops (view-svg.c) */
	XPROFS_VIEW_COUNT
};

/** xprofs_view_name() - "summary.json", ...; NULL for an out-of-range @v. */
const char *xprofs_view_name(enum xprofs_view v);
/**
 * xprofs_view_parse() - accepts "summary"/"summary.json" etc. (a ".json" name
 * also without it); -EINVAL otherwise.
 */
int xprofs_view_parse(const char *name);

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

int xprofs_xspace_get_totals(const struct xprofs_xspace *x, struct xprofs_xspace_totals *t);

/**
 * xprofs_xspace_render() - write view @v as JSON to @out.
 * @err: optional; receives the reason on failure, and is left as it was on
 * success (whatever the thread count). Output already written to @out
 * before a failure is not retracted: callers that cache must discard it.
 */
int xprofs_xspace_render(struct xprofs_xspace *x, enum xprofs_view v, const struct xprofs_sink *out,
			 struct xprofs_buf *err) XPROFS_WUR;

/*
 * Picoseconds in trace.json's base: line timestamp_ns * 1000 + offset_ps,
 * exact (epoch-based profiles pass 2^63 ps).
 */
__extension__ typedef __int128 xprofs_ps128;

/* Options of xprofs_xspace_render_opts(); zero-initialise, then set. */
struct xprofs_render_opts {
	/*
	 * The profile's host name (the <host> of <host>.xplane.pb): trace.json
	 * names its processes "<host> <plane name>", as XProf does. NULL or
	 * "": the plane name alone. Borrowed for the call.
	 */
	const char *host;
	/*
	 * A slice: when @window is set, every line walk (the events of
	 * trace.json, trace.json.gz, ops.json and the steps of steps.json)
	 * keeps only the events overlapping [from_ps, to_ps), each whole
	 * (never clipped): start < to_ps and max(end, start + 1 ps) > from_ps.
	 * Seeks through the index's checkpoints, so a narrow window of a big
	 * profile reads little of it. from_ps >= to_ps: no events.
	 */
	bool window;
	xprofs_ps128 from_ps, to_ps;
	/*
	 * Where a render on several threads (x->threads) keeps the parts made
	 * ahead of their turn (unlinked temporary files, at most the render's
	 * size). NULL: $TMPDIR, else /tmp. Borrowed for the call.
	 */
	const char *spill_dir;
};

/* The window of one step, as steps.json lists it (same order). */
struct xprofs_step_window {
	size_t plane;                  /* index of its plane in the file */
	xprofs_ps128 begin_ps, end_ps; /* [start, start + max(duration, 1 ps)) */
};

/**
 * xprofs_xspace_steps() - the windows of the steps of steps.json, in its
 * order (steps[i] is window i), without rendering JSON; at most 1 Mi.
 * @out: caller frees with free() (NULL when *@n is 0).
 */
int xprofs_xspace_steps(struct xprofs_xspace *x, struct xprofs_step_window **out, size_t *n,
			struct xprofs_buf *err) XPROFS_WUR;

/* Longest window name "<from>-<to>" accepted by xprofs_window_parse(). */
#define XPROFS_WINDOW_NAME_MAX 64
/**
 * xprofs_window_parse() - "<from>-<to>" (@len bytes, not NUL-terminated):
 * two non-negative decimal microsecond numbers in trace.json's ts base,
 * each with at most 20 integer digits and 6 decimals (1 ps), from < to,
 * into picoseconds. -ENOENT for anything else (empty parts, signs,
 * exponents, from >= to, more than XPROFS_WINDOW_NAME_MAX bytes).
 */
int xprofs_window_parse(const char *s, size_t len, xprofs_ps128 *from_ps, xprofs_ps128 *to_ps);
/**
 * xprofs_step_parse() - a step index: decimal, no sign, no leading zero,
 * below 2^20 (steps.json's limit). -ENOENT otherwise.
 */
int xprofs_step_parse(const char *s, size_t len, uint32_t *out);

/** xprofs_xspace_render_opts() - xprofs_xspace_render() with @opts (may be NULL). */
int xprofs_xspace_render_opts(struct xprofs_xspace *x, enum xprofs_view v,
			      const struct xprofs_render_opts *opts, const struct xprofs_sink *out,
			      struct xprofs_buf *err) XPROFS_WUR;

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
/** xprofs_xspace_render_track() - planes/<plane>/<line>.json of track @i. */
int xprofs_xspace_render_track(struct xprofs_xspace *x, size_t i, const struct xprofs_sink *out,
			       struct xprofs_buf *err) XPROFS_WUR;

/**
 * xprofs_decode_session_summary() - the session-level summary.json: @n hosts
 * with their totals. @hosts and @xs are borrowed parallel arrays; an entry of
 * @xs may be NULL for a host that failed to open, with its reason in
 * @host_errors[i] (may itself be NULL).
 */
int xprofs_decode_session_summary(const char *session, const char *const *hosts,
				  struct xprofs_xspace *const *xs, const char *const *host_errors,
				  size_t n, const struct xprofs_sink *out) XPROFS_WUR;

/*
 * A session for the session-wide views: @n hosts, as for
 * xprofs_decode_session_summary() (parallel arrays, all borrowed; an entry
 * of @xs may be NULL for a host that failed to open, its reason in
 * @host_errors[i]; @host_errors may be NULL).
 */
struct xprofs_session_in {
	const char *name; /* the session's name */
	const char *const *hosts;
	struct xprofs_xspace *const *xs;
	const char *const *host_errors;
	size_t n;
};

/**
 * xprofs_decode_session_ops() - the session's ops.json: the hosts' op
 * tables combined as XProf's OpMetricsDbCombiner (docs/stats.md "Session
 * ops"). Memory: O(distinct ops); one host analysed at a time.
 */
int xprofs_decode_session_ops(const struct xprofs_session_in *s,
			      const struct xprofs_sink *out) XPROFS_WUR;
/**
 * xprofs_decode_compare() - compare/<base>/ops.json (@v XPROFS_VIEW_OPS)
 * or steps.json (XPROFS_VIEW_STEPS) of session @cur: the change from
 * @base to @cur (docs/stats.md "Compare"). -EINVAL for another view.
 */
int xprofs_decode_compare(enum xprofs_view v, const struct xprofs_session_in *base,
			  const struct xprofs_session_in *cur,
			  const struct xprofs_sink *out) XPROFS_WUR;

/**
 * xprofs_decode_name_encode() / _decode() - the reversible, safe mapping of a
 * plane or line name to a file name component. Caller owns the result (free()).
 */
char *xprofs_decode_name_encode(const char *name, size_t len);
char *xprofs_decode_name_decode(const char *file, size_t *len);

#endif
