/*
 * xprofs/stats.h - the analyses behind the stats views, for the decode
 * front (decode/render.c): summary.json, ops.json, steps.json,
 * overview.json, overview.svg and kernels.json (docs/stats.md), and
 * memory_profile.json (docs/memory.md). Each
 * renders on a render context of xprofs/xspace.h into its writer.
 */
#ifndef XPROFS_STATS_H
#define XPROFS_STATS_H

#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>

#include "xprofs/decode.h"
#include "xprofs/xspace.h"

/*
 * Distinct ops an op table keeps per plane (and a session table, a HLO op
 * database), the rest folded into one "(other)" row: OPS_MAX, 2^20 (tests
 * lower it).
 */
extern size_t stats_ops_max;
/*
 * Events from which a host plane's op table is made as two tasks, half its
 * lines each (stats/ops.c stats_ops_cut()): 2^20 (tests lower it).
 */
extern uint64_t stats_ops_cut_min;
/*
 * Runs of step hints (stats/hints.c) an overview keeps for all lines
 * together: 2^18 (tests lower it; 0: none, pass 2 decodes every event's stats).
 */
extern size_t stats_hint_runs;
/* Lines whose step hints pass 2 has read, since the start (for tests). */
extern atomic_size_t stats_hint_lines;

int stats_view_summary(struct xs_rctx *rc, struct xs_out *o);
int stats_view_ops(struct xs_rctx *rc, struct xs_out *o);
int stats_view_steps(struct xs_rctx *rc, struct xs_out *o);
int stats_view_overview(struct xs_rctx *rc, struct xs_out *o);
int stats_view_svg(struct xs_rctx *rc, struct xs_out *o);
/* stats_view_kernels() - kernels.json; -ENOENT (nothing written) without GPU planes. */
int stats_view_kernels(struct xs_rctx *rc, struct xs_out *o);
/* stats_view_memory_profile() - memory_profile.json of the host plane (memory-profile.c). */
int stats_view_memory_profile(struct xs_rctx *rc, struct xs_out *o);
/* stats_view_memory_svg() - memory.svg: memory_profile.json's allocators as a picture. */
int stats_view_memory_svg(struct xs_rctx *rc, struct xs_out *o);
/* stats_view_hlo_stats() - hlo_stats.json (view-hlo-stats.c). */
int stats_view_hlo_stats(struct xs_rctx *rc, struct xs_out *o);
/* stats_view_roofline() - roofline.json (view-roofline.c). */
int stats_view_roofline(struct xs_rctx *rc, struct xs_out *o);
/* stats_view_op_profile() - op_profile.json (view-op-profile.c). */
int stats_view_op_profile(struct xs_rctx *rc, struct xs_out *o);
/* stats_view_tf_stats() - framework_op_stats.json (view-tf-stats.c). */
int stats_view_tf_stats(struct xs_rctx *rc, struct xs_out *o);
/* stats_view_memory_viewer() - memory_viewer.json of the profile's programs (view-memory-viewer.c). */
int stats_view_memory_viewer(struct xs_rctx *rc, struct xs_out *o);
/* stats_steps_windows() - xprofs_decode_steps() on render context @rc. */
int stats_steps_windows(struct xs_rctx *rc, struct xprofs_step_window **out, size_t *n);

#endif
