/*
 * render.c - the decode front: the views' names, and the one entry point
 * that renders a view of a profile by dispatching to the analysis that
 * makes it (trace/ for the traces and tracks, stats/ for the rest).
 *
 * Design: a render owns a render context (xprofs/xspace.h) and a JSON
 * writer over the caller's sink; trace.json.gz is trace.json written
 * through a deflating sink. Output already written before a failure is not
 * retracted; the reason goes to @err once, and a success leaves @err as it
 * found it. The views never call back up here. A render hands its contexts
 * the profile's HLO source (rc->hlo, xprofs_hlo_lazy_new()): the facts
 * of the programs of its metadata plane and attached sidecars, made when a
 * view first asks, once per render.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xprofs/decode.h"
#include "xprofs/hlo.h"
#include "xprofs/stats.h"
#include "xprofs/trace.h"

/* clang-format off */
static const char *const view_names[XPROFS_VIEW_COUNT] = {
	"summary.json", "trace.json", "ops.json", "steps.json", "trace.json.gz", "trace.pftrace",
	"overview.json", "kernels.json", "overview.svg", "memory_profile.json",
	"hlo_stats.json", "roofline.json", "op_profile.json", "framework_op_stats.json",
	"memory_viewer.json", "memory.svg"};
/* clang-format on */

const char *xprofs_decode_view_name(enum xprofs_view v)
{
	if ((unsigned)v >= XPROFS_VIEW_COUNT)
		return NULL;
	return view_names[v];
}

/* One number of a window name: [s, e) = digits[.digits] in µs -> *ps. */
static int us_parse(const char *s, const char *e, xprofs_ps128 *ps)
{
	xprofs_ps128 v = 0;
	size_t ints = 0, decs = 0;
	bool dot = false;

	for (; s < e; s++) {
		if (*s == '.' && !dot) {
			dot = true;
			continue;
		}
		if (*s < '0' || *s > '9')
			return -ENOENT;
		if (dot ? ++decs > 6 : ++ints > 20) /* 10^20 µs = 10^26 ps: no overflow */
			return -ENOENT;
		v = v * 10 + (*s - '0');
	}
	if (!ints || (dot && !decs))
		return -ENOENT;
	for (; decs < 6; decs++)
		v *= 10;
	*ps = v;
	return 0;
}

int xprofs_decode_window_parse(const char *s, size_t len, xprofs_ps128 *from_ps,
			       xprofs_ps128 *to_ps)
{
	const char *dash;

	if (!s || !len || len > XPROFS_WINDOW_NAME_MAX)
		return -ENOENT;
	dash = memchr(s, '-', len);
	if (!dash || us_parse(s, dash, from_ps) < 0 || us_parse(dash + 1, s + len, to_ps) < 0)
		return -ENOENT;
	return *from_ps < *to_ps ? 0 : -ENOENT;
}

int xprofs_decode_step_parse(const char *s, size_t len, uint32_t *out)
{
	uint32_t v = 0;

	if (!s || !len || len > 7 || (s[0] == '0' && len > 1))
		return -ENOENT;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -ENOENT;
		v = v * 10 + (uint32_t)(s[i] - '0');
	}
	if (v >= (1u << 20))
		return -ENOENT;
	*out = v;
	return 0;
}

int xprofs_decode_view_parse(const char *name)
{
	if (!name)
		return -EINVAL;
	for (int i = 0; i < XPROFS_VIEW_COUNT; i++) {
		size_t n = strlen(view_names[i]);
		size_t l = n > 5 && !strcmp(view_names[i] + n - 5, ".json") ? n - 5 : n;

		if (!strcmp(name, view_names[i]) ||
		    (strlen(name) == l && !strncmp(name, view_names[i], l)))
			return i;
	}
	return -EINVAL;
}

/* Record @r as the reason in @err unless one is already there. */
static int render_fail(struct xprofs_buf *err, int r, const char *what)
{
	if (err && err->len == 0)
		(void)!xprofs_buf_printf(err, "%s: %s", what, strerror(-r));
	return r;
}

/* The renderer of each view, by enum xprofs_view; any other @view is a track.
 * trace.json.gz is trace.json written through a deflating sink. */
/* clang-format off */
static int (*const view_fns[XPROFS_VIEW_COUNT])(struct xs_rctx *rc, struct xs_out *o) = {
	[XPROFS_VIEW_SUMMARY] = stats_view_summary, [XPROFS_VIEW_TRACE] = trace_view_trace,
	[XPROFS_VIEW_OPS] = stats_view_ops,         [XPROFS_VIEW_STEPS] = stats_view_steps,
	[XPROFS_VIEW_TRACE_GZ] = trace_view_trace,  [XPROFS_VIEW_PFTRACE] = trace_view_pftrace,
	[XPROFS_VIEW_OVERVIEW] = stats_view_overview,
	[XPROFS_VIEW_KERNELS] = stats_view_kernels,
	[XPROFS_VIEW_SVG] = stats_view_svg,
	[XPROFS_VIEW_MEMORY_PROFILE] = stats_view_memory_profile,
	[XPROFS_VIEW_HLO_STATS] = stats_view_hlo_stats,
	[XPROFS_VIEW_ROOFLINE] = stats_view_roofline,
	[XPROFS_VIEW_OP_PROFILE] = stats_view_op_profile,
	[XPROFS_VIEW_TF_STATS] = stats_view_tf_stats,
	[XPROFS_VIEW_MEMORY_VIEWER] = stats_view_memory_viewer,
	[XPROFS_VIEW_MEMORY_SVG] = stats_view_memory_svg,
};
/* clang-format on */

static int render(struct xprofs_xspace *x, int view, size_t track,
		  const struct xprofs_render_opts *opts, const struct xprofs_sink *sink,
		  struct xprofs_buf *err)
{
	struct trace_gzip *gz = NULL;
	struct xprofs_sink gzs;
	struct xprofs_hlo_lazy *hlo = NULL;
	struct xs_rctx rc;
	struct xs_out o;
	size_t err_len = err ? err->len : 0;
	int r;

	if (!x || !sink || !sink->write)
		return -EINVAL;
	if (view == XPROFS_VIEW_SUMMARY && x->tracks_only) {
		if (err && err->len == 0)
			(void)!xprofs_buf_adds(err, "summary.json needs event statistics: "
						    "the profile was opened for tracks only");
		return -EOPNOTSUPP;
	}
	if (view == XPROFS_VIEW_TRACE_GZ) {
		/* the same bytes as trace.json, deflated on their way to @sink */
		if ((r = trace_gzip_new(sink, x->threads, &gz)) < 0)
			return render_fail(err, r, xprofs_decode_view_name(view));
		gzs = trace_gzip_sink(gz);
		sink = &gzs;
	}
	if ((r = xprofs_hlo_lazy_new(x, NULL, &hlo)) < 0) {
		trace_gzip_free(gz);
		return render_fail(err, r, xprofs_decode_view_name(view));
	}
	xs_rctx_init(&rc, x, err);
	rc.hlo = xprofs_hlo_lazy_src(hlo);
	if (opts) {
		rc.host = opts->host;
		rc.win = opts->window;
		rc.win_from = opts->from_ps;
		rc.win_to = opts->to_ps;
		rc.lod = opts->lod;
		rc.spill_dir = opts->spill_dir;
	}
	xs_out_init(&o, sink);
	if (view >= 0 && view < XPROFS_VIEW_COUNT)
		r = view_fns[view](&rc, &o);
	else
		r = trace_view_track(&rc, track, &o);
	if (r == 0)
		r = o.r;
	if (r == 0)
		r = xs_out_flush(&o, true);
	if (r == 0 && gz)
		r = trace_gzip_finish(gz);
	if (r < 0)
		render_fail(err, r,
			    view < XPROFS_VIEW_COUNT ? xprofs_decode_view_name(view) : "track");
	else if (err)
		/*
		 * A success leaves @err as it was: a part a render could do without
		 * (an unused metadata entry that does not parse) may have noted why,
		 * and whether it did depends on the thread that made the part.
		 */
		xprofs_buf_truncate(err, err_len);
	xs_out_deinit(&o);
	xs_rctx_deinit(&rc);
	xprofs_hlo_lazy_free(hlo);
	trace_gzip_free(gz);
	return r;
}

int xprofs_decode_render_opts(struct xprofs_xspace *x, enum xprofs_view v,
			      const struct xprofs_render_opts *opts, const struct xprofs_sink *out,
			      struct xprofs_buf *err)
{
	if ((unsigned)v >= XPROFS_VIEW_COUNT)
		return -EINVAL;
	return render(x, (int)v, 0, opts, out, err);
}

int xprofs_decode_render(struct xprofs_xspace *x, enum xprofs_view v, const struct xprofs_sink *out,
			 struct xprofs_buf *err)
{
	return xprofs_decode_render_opts(x, v, NULL, out, err);
}

int xprofs_decode_steps(struct xprofs_xspace *x, struct xprofs_step_window **out, size_t *n,
			struct xprofs_buf *err)
{
	struct xs_rctx rc;
	int r;

	*out = NULL;
	*n = 0;
	if (!x)
		return -EINVAL;
	xs_rctx_init(&rc, x, err);
	r = stats_steps_windows(&rc, out, n);
	if (r < 0)
		render_fail(err, r, "steps");
	xs_rctx_deinit(&rc);
	return r;
}

int xprofs_decode_render_track(struct xprofs_xspace *x, size_t i, const struct xprofs_sink *out,
			       struct xprofs_buf *err)
{
	if (!x || i >= x->n_lines)
		return -ERANGE;
	return render(x, XPROFS_VIEW_COUNT, i, NULL, out, err);
}
