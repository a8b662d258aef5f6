/*
 * xprofs/decode.h - the views of a profile: names, and rendering one to a
 * sink, streaming and in bounded memory. No FUSE here: tools/xprofs-decode
 * and fs/ share it. A profile is opened with xprofs/xspace.h (included);
 * the views are made by the analyses in trace/ and stats/ behind
 * decode/render.c. Schemas and rules of the views: docs/decode.md,
 * docs/trace.md, docs/stats.md.
 */
#ifndef XPROFS_DECODE_H
#define XPROFS_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xprofs/util.h"
#include "xprofs/xspace.h"

enum xprofs_view {
	XPROFS_VIEW_SUMMARY = 0,    /* summary.json */
	XPROFS_VIEW_TRACE,          /* trace.json (Chrome trace-event JSON) */
	XPROFS_VIEW_OPS,            /* ops.json */
	XPROFS_VIEW_STEPS,          /* steps.json */
	XPROFS_VIEW_TRACE_GZ,       /* trace.json.gz: trace.json, gzip-compressed */
	XPROFS_VIEW_PFTRACE,        /* trace.pftrace: Perfetto's protobuf trace */
	XPROFS_VIEW_OVERVIEW,       /* overview.json: XProf's overview page (docs/stats.md) */
	XPROFS_VIEW_KERNELS,        /* kernels.json: GPU kernel stats; -ENOENT without GPU planes */
	XPROFS_VIEW_SVG,            /* overview.svg: step-time bars and top ops (view-svg.c) */
	XPROFS_VIEW_MEMORY_PROFILE, /* memory_profile.json: XProf's memory profile (docs/memory.md) */
	XPROFS_VIEW_HLO_STATS,      /* hlo_stats.json: XProf's HLO stats (docs/stats.md) */
	XPROFS_VIEW_ROOFLINE,       /* roofline.json: XProf's roofline model (docs/stats.md) */
	XPROFS_VIEW_OP_PROFILE,     /* op_profile.json: XProf's op profile (docs/stats.md) */
	XPROFS_VIEW_TF_STATS,       /* framework_op_stats.json: XProf's framework op stats */
	XPROFS_VIEW_MEMORY_VIEWER, /* memory_viewer.json: XProf's memory viewer (docs/memory.md) */
	XPROFS_VIEW_MEMORY_SVG, /* memory.svg: memory timeline per allocator, peak, live allocs */
	XPROFS_VIEW_COUNT
};

/** xprofs_decode_view_name() - "summary.json", ...; NULL for an out-of-range @v. */
const char *xprofs_decode_view_name(enum xprofs_view v);
/**
 * xprofs_decode_view_parse() - accepts "summary"/"summary.json" etc. (a ".json" name
 * also without it); -EINVAL otherwise.
 */
int xprofs_decode_view_parse(const char *name);

/**
 * xprofs_decode_render() - write view @v as JSON to @out.
 * @err: optional; receives the reason on failure, and is left as it was on
 * success (whatever the thread count). Output already written to @out
 * before a failure is not retracted: callers that cache must discard it.
 */
int xprofs_decode_render(struct xprofs_xspace *x, enum xprofs_view v, const struct xprofs_sink *out,
			 struct xprofs_buf *err) XPROFS_WUR;

/* Options of xprofs_decode_render_opts(); zero-initialise, then set. */
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
	 * A level-of-detail trace (lod/, docs/trace.md): trace.json, .gz and
	 * trace.pftrace keep only the events XProf's trace viewer shows of the
	 * profile's span (or the window's) drawn 10,000 pixels wide.
	 */
	bool lod;
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
 * xprofs_decode_steps() - the windows of the steps of steps.json, in its
 * order (steps[i] is window i), without rendering JSON; at most 1 Mi.
 * @out: caller frees with free() (NULL when *@n is 0).
 */
int xprofs_decode_steps(struct xprofs_xspace *x, struct xprofs_step_window **out, size_t *n,
			struct xprofs_buf *err) XPROFS_WUR;

/* Longest window name "<from>-<to>" accepted by xprofs_decode_window_parse(). */
#define XPROFS_WINDOW_NAME_MAX 64
/**
 * xprofs_decode_window_parse() - "<from>-<to>" (@len bytes, not NUL-terminated):
 * two non-negative decimal microsecond numbers in trace.json's ts base,
 * each with at most 20 integer digits and 6 decimals (1 ps), from < to,
 * into picoseconds. -ENOENT for anything else (empty parts, signs,
 * exponents, from >= to, more than XPROFS_WINDOW_NAME_MAX bytes).
 */
int xprofs_decode_window_parse(const char *s, size_t len, xprofs_ps128 *from_ps,
			       xprofs_ps128 *to_ps);
/**
 * xprofs_decode_step_parse() - a step index: decimal, no sign, no leading zero,
 * below 2^20 (steps.json's limit). -ENOENT otherwise.
 */
int xprofs_decode_step_parse(const char *s, size_t len, uint32_t *out);

/** xprofs_decode_render_opts() - xprofs_decode_render() with @opts (may be NULL). */
int xprofs_decode_render_opts(struct xprofs_xspace *x, enum xprofs_view v,
			      const struct xprofs_render_opts *opts, const struct xprofs_sink *out,
			      struct xprofs_buf *err) XPROFS_WUR;

/** xprofs_decode_render_track() - planes/<plane>/<line>.json of track @i. */
int xprofs_decode_render_track(struct xprofs_xspace *x, size_t i, const struct xprofs_sink *out,
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
 * xprofs_decode_session_view() - a session view combined across its hosts
 * as XProf's CombineAllOpStats() (docs/stats.md): hlo_stats.json and
 * roofline.json (@v XPROFS_VIEW_HLO_STATS, XPROFS_VIEW_ROOFLINE: the hosts'
 * device op tables), op_profile.json and framework_op_stats.json
 * (XPROFS_VIEW_OP_PROFILE, XPROFS_VIEW_TF_STATS: the hosts' op stats).
 * -EINVAL for another view. Memory: O(distinct ops).
 */
int xprofs_decode_session_view(enum xprofs_view v, const struct xprofs_session_in *s,
			       const struct xprofs_sink *out) XPROFS_WUR;
/**
 * xprofs_decode_compare() - compare/<base>/ops.json (@v XPROFS_VIEW_OPS),
 * steps.json (XPROFS_VIEW_STEPS), op_profile.json (XPROFS_VIEW_OP_PROFILE)
 * or summary.json (XPROFS_VIEW_SUMMARY: the memory peaks, docs/memory.md)
 * of session @cur: the change from @base to @cur (docs/stats.md "Compare").
 * -EINVAL for another view.
 */
int xprofs_decode_compare(enum xprofs_view v, const struct xprofs_session_in *base,
			  const struct xprofs_session_in *cur,
			  const struct xprofs_sink *out) XPROFS_WUR;

#endif
