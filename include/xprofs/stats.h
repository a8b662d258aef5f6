/*
 * xprofs/stats.h - the analyses behind the stats views, for the decode
 * front (decode/render.c): summary.json, ops.json, steps.json,
 * overview.json, overview.svg and kernels.json (docs/stats.md). Each
 * renders on a render context of xprofs/xspace.h into its writer.
 */
#ifndef XPROFS_STATS_H
#define XPROFS_STATS_H

#include <stddef.h>

#include "xprofs/decode.h"
#include "xprofs/xspace.h"

int dec_view_summary(struct dec_rctx *rc, struct dec_out *o);
int dec_view_ops(struct dec_rctx *rc, struct dec_out *o);
int dec_view_steps(struct dec_rctx *rc, struct dec_out *o);
int dec_view_overview(struct dec_rctx *rc, struct dec_out *o);
int dec_view_svg(struct dec_rctx *rc, struct dec_out *o);
/* dec_view_kernels() - kernels.json; -ENOENT (nothing written) without GPU planes. */
int dec_view_kernels(struct dec_rctx *rc, struct dec_out *o);
/* dec_steps_windows() - xprofs_xspace_steps() on render context @rc. */
int dec_steps_windows(struct dec_rctx *rc, struct xprofs_step_window **out, size_t *n);

#endif
