/*
 * xprofs/trace.h - the trace side of the views, for the decode front
 * (decode/render.c): trace.json, trace.json.gz and trace.pftrace follow
 * XProf's trace viewer rules event for event (docs/trace.md,
 * docs/pftrace.md); planes/<plane>/<line>.json is one line's events.
 * Each renders on a render context of xprofs/xspace.h into its writer.
 */
#ifndef XPROFS_TRACE_H
#define XPROFS_TRACE_H

#include <stddef.h>

#include "xprofs/util.h"
#include "xprofs/xspace.h"

/* trace_view_trace() - trace.json (Chrome trace-event JSON). */
int trace_view_trace(struct xs_rctx *rc, struct xs_out *o);
/* trace_view_pftrace() - trace.pftrace (Perfetto's protobuf trace). */
int trace_view_pftrace(struct xs_rctx *rc, struct xs_out *o);
/* trace_view_track() - planes/<plane>/<line>.json of line @li. */
int trace_view_track(struct xs_rctx *rc, size_t li, struct xs_out *o);

/* ---- gzip on the way to a sink (gzip.c) -------------------------------- */

struct trace_gzip;
/*
 * trace_gzip_new() - a gzip stream into @to (borrowed; must outlive it),
 * deflated on up to @threads worker threads (the bytes do not depend on it).
 * Caller frees *out with trace_gzip_free().
 */
int trace_gzip_new(const struct xprofs_sink *to, unsigned threads, struct trace_gzip **out);
/* trace_gzip_sink() - the sink that compresses into the stream (borrows @gz). */
struct xprofs_sink trace_gzip_sink(struct trace_gzip *gz);
/* trace_gzip_finish() - end the stream: the gzip trailer and what is buffered go out. */
int trace_gzip_finish(struct trace_gzip *gz);
/* trace_gzip_free() - accepts NULL. */
void trace_gzip_free(struct trace_gzip *gz);

#endif
