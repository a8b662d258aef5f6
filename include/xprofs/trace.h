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

/* dec_view_trace() - trace.json (Chrome trace-event JSON). */
int dec_view_trace(struct dec_rctx *rc, struct dec_out *o);
/* dec_view_pftrace() - trace.pftrace (Perfetto's protobuf trace). */
int dec_view_pftrace(struct dec_rctx *rc, struct dec_out *o);
/* dec_view_track() - planes/<plane>/<line>.json of line @li. */
int dec_view_track(struct dec_rctx *rc, size_t li, struct dec_out *o);

/* ---- gzip on the way to a sink (gzip.c) -------------------------------- */

struct dec_gzip;
/*
 * dec_gzip_new() - a gzip stream into @to (borrowed; must outlive it),
 * deflated on up to @threads worker threads (the bytes do not depend on it).
 * Caller frees *out with dec_gzip_free().
 */
int dec_gzip_new(const struct xprofs_sink *to, unsigned threads, struct dec_gzip **out);
/* dec_gzip_sink() - the sink that compresses into the stream (borrows @gz). */
struct xprofs_sink dec_gzip_sink(struct dec_gzip *gz);
/* dec_gzip_finish() - end the stream: the gzip trailer and what is buffered go out. */
int dec_gzip_finish(struct dec_gzip *gz);
/* dec_gzip_free() - accepts NULL. */
void dec_gzip_free(struct dec_gzip *gz);

#endif
