/*
 * trace-internal.h - what the trace side shares: XProf's trace model
 * (trace-model.c: which events, stats, flows, pids and tids both trace
 * views show), used by trace.json (view-trace.c), trace.pftrace
 * (view-pftrace.c, pftrace-*.c) and the derived lines (derived.h).
 * Profiles are read through xprofs/xspace.h.
 */
#ifndef XPROFS_TRACE_INTERNAL_H
#define XPROFS_TRACE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xprofs/trace.h"
#include "xprofs/xspace.h"

/* ---- trace.json's model (trace-model.c) ------------------------------- */

/* The trace facts of one event metadata: its filtered stats and the special ones. */
struct trace_md {
	char *args;                /* owned: "long_name":..., then the shown stats, "k":v,... */
	size_t args_len;           /* 0: none */
	size_t step_off, step_len; /* the step_name value (JSON) inside @args; len 0: none */
	uint64_t flow;             /* the flow stat's value (an XFlow) */
	int64_t group;
	bool has_flow, has_group, is_async;
	bool internal; /* IsInternalEvent(): never shown */
};

/*
 * trace_md_fill() - the trace_md of event metadata @e (message [off,
 * off+len) at the metadata cursor, full name @full, display name length
 * @disp_len). e->trace: caller owns, freed by trace_md_free().
 */
int trace_md_fill(struct xs_rctx *rc, struct xs_evmd *e, const char *full, size_t full_len,
		  size_t disp_len, uint64_t off, uint64_t len);
void trace_md_free(struct trace_md *t);

/* What a stat means to the trace (by its name: StatType). */
enum trace_tstat {
	TS_SHOW = 0,
	TS_INTERNAL,
	TS_FLOW,
	TS_GROUP,
	TS_ASYNC,
	TS_STEP,
	/* what AddFlowsToXplane() makes flows of: correlation_id is shown too, the rest hidden */
	TS_CORR,
	TS_PTYPE,
	TS_PID,
	TS_CTYPE,
	TS_CID,
};
#define TRACE_XF_N (TS_CID - TS_CORR + 1)
enum trace_tstat trace_stat_kind(const char *name, size_t len);
/* trace_event_internal() - IsInternalEvent() of an event metadata's (full) name. */
bool trace_event_internal(const char *name, size_t len);

/* XFlow: bits 0-1 direction, 2-57 id, 58-63 category (a ContextType). */
enum { XFLOW_NONE = 0, XFLOW_IN = 1, XFLOW_OUT = 2, XFLOW_INOUT = 3 };
struct trace_xflow {
	uint64_t id;
	int dir;
	unsigned cat;
};
struct trace_xflow trace_xflow_decode(uint64_t v);
/* trace_category() - GetContextTypeString(GetSafeContextType(@cat)); "" if generic. */
const char *trace_category(unsigned cat);

/* A plane shown as a process. */
struct trace_plane {
	size_t plane; /* index into xprofs_xspace.planes */
	uint32_t pid;
};
/* trace_planes() - the shown planes in XProf's order. *out: caller frees (free()). */
int trace_planes(const struct xprofs_xspace *x, struct trace_plane **out, size_t *n);

enum trace_tline { TL_THREAD = 0, TL_COUNTERS, TL_SKIP };
/* trace_line_kind() - a thread, the counters line, or a line XProf skips. */
enum trace_tline trace_line_kind(const struct xs_line *l);
/* trace_tid() - (uint32) DisplayId(): display_id, or id when it is 0. */
uint32_t trace_tid(const struct xs_line *l);

/* What a walk over stats with trace_stat() collects. */
struct trace_acc {
	struct xs_out *o; /* borrowed: the shown stats go here, "k":v,... */
	bool first;
	uint64_t flow;
	int64_t group;
	bool has_flow, has_group, is_async, has_step;
	size_t step_off, step_len; /* the step_name value inside o's buffer */
	/* the values of the TS_CORR..TS_CID stats seen, bit k of xf_has for xf[k] */
	uint64_t xf[TRACE_XF_N];
	unsigned xf_has;
};
/* trace_stat() - a xs_stat_fn: shown stats to a->o, special ones into @arg (trace_acc). */
int trace_stat(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s, void *arg);
/* trace_stat_note() - record @s into @a when its kind @k is one of TS_CORR..TS_CID. */
void trace_stat_note(struct trace_acc *a, enum trace_tstat k, const struct xs_statv *s);
/*
 * xs_trace_xflows() - XProf's preprocessing flows (AddFlowsToXplane()) of an
 * event of plane @p whose own stats went into @a: after those stats, as if
 * appended to them, so the last one made is the event's flow. Nothing on a
 * grouped space.
 */
void xs_trace_xflows(const struct xprofs_xspace *x, const struct xs_plane *p, struct trace_acc *a);
/* ---- threadpool regions (regions.c) ---- */

#define TRACE_CONTEXT_THREADPOOL 15u /* ContextType::kThreadpoolEvent */
/* One region: absolute ps [b, e) (e - b may be 0 or less, as XProf's), its consumer id. */
struct trace_region {
	int64_t b, e;
	uint64_t id;
};
/* The regions of one line, sorted as the line (start, longer first); next: the first not taken. */
struct trace_regions {
	struct trace_region *r; /* owned */
	size_t n, cap, next;
	bool win; /* the render's slice, kept by trace_regions_collect() */
	xs_ps128 from, to;
};
/* trace_regions_plane() - *on: plane @pi gets regions (ungrouped space, both marker names). */
int trace_regions_plane(struct xs_rctx *rc, size_t pi, bool *on);
/* trace_regions_collect() - the regions of line @li into @g (reset first; whole line, even in a slice). */
int trace_regions_collect(struct xs_rctx *rc, size_t li, struct trace_regions *g);
/*
 * trace_regions_next() - the next region to write before an event at @ts of
 * duration @dur (@all: the line has ended, every one left), NULL: none.
 * In a slice only those overlapping its window come out.
 */
const struct trace_region *trace_regions_next(struct trace_regions *g, bool all, xs_ps128 ts,
					      int64_t dur);
/* trace_region_acc() - @a (zeroed by the caller) as the region's own stats: its flow in. */
void trace_region_acc(const struct xprofs_xspace *x, const struct xs_plane *p,
		      const struct trace_region *r, struct trace_acc *a);
void trace_regions_free(struct trace_regions *g);
#define TRACE_REGION_NAME "ThreadpoolListener::Region" /* kThreadpoolListenerRegion */

/* The ends seen of a plane's single-ended async events (trace-model.c explains). */
struct trace_async_set {
	uint64_t *keys; /* owned; 0 = empty slot */
	uint8_t *ends;  /* owned; XFLOW_IN | XFLOW_OUT bits per key */
	size_t cap, n;
	bool full; /* past TRACE_ASYNC_MAX keys: unknown ids count as paired */
};
/* trace_async_note() - record the end @f (direction in or out). */
int trace_async_note(struct trace_async_set *s, const struct trace_xflow *f);
/* trace_async_paired() - @f's flow id has a begin and an end (in-out events always do). */
bool trace_async_paired(const struct trace_async_set *s, const struct trace_xflow *f);
void trace_async_reset(struct trace_async_set *s);
void trace_async_deinit(struct trace_async_set *s);

/* trace_out_ps_wide() - @ps as exact decimal microseconds, for any 128-bit time. */
void trace_out_ps_wide(struct xs_out *o, xs_ps128 ps);
/* trace_out_ps() - the same, inline for times that fit 64 bits (the usual case). */
static inline void trace_out_ps(struct xs_out *o, xs_ps128 ps)
{
	if (ps == (int64_t)ps)
		xs_out_us(o, (int64_t)ps);
	else
		trace_out_ps_wide(o, ps);
}

/* ---- the level-of-detail trace (lod.c) ---------------------------------- */

/* The width in pixels a level-of-detail trace is filtered for. */
#define TRACE_LOD_PX 10000
/* Its budget: the width shrinks until sum over rows of min(events, width) fits (lod.c). */
#define TRACE_LOD_EVENTS 400000
/* Nesting levels a row keeps (RowVisibility's stack); deeper events are visible. */
#define TRACE_LOD_DEPTH 64

/* One row's state (XProf's RowVisibility): the ends of its last visible events, its last arrow. */
struct trace_lod_row {
	xs_ps128 end[TRACE_LOD_DEPTH];
	size_t n;
	bool has_flow;
	xs_ps128 last_flow;
};
/* One derived line level's state (trace_lod_level()). */
struct trace_lod_lv {
	xs_ps128 end;
	bool has;
};
/* A plane's state: its flows and counter series (XProf's flows_, last_counter_timestamp_ps_). */
struct trace_lod {
	bool on;
	uint64_t res;    /* ps; 0: nothing is thinned */
	uint64_t *fkeys; /* owned; flow id + 1, 0: empty */
	uint8_t *fvals;  /* owned; the flow's visibility */
	size_t fcap, fn;
	uint64_t *ckeys; /* owned; hash of a counter name + 1 */
	xs_ps128 *cts;   /* owned; its last kept sample */
	size_t ccap, cn;
};
/*
 * trace_lod_setup() - when rc->lod, the span and resolution into
 * rc->lod_from/_to/_res (the shown lines' events, clipped to the window):
 * once per render, before its parts.
 */
int trace_lod_setup(struct xs_rctx *rc);
/* trace_lod_init() - the state of a render on @rc (off unless rc->lod). Free: trace_lod_deinit(). */
void trace_lod_init(struct trace_lod *L, const struct xs_rctx *rc);
/* trace_lod_plane() - forget the flows and counter series: a new plane. */
void trace_lod_plane(struct trace_lod *L);
void trace_lod_deinit(struct trace_lod *L);
/*
 * trace_lod_event() - whether an event of @row at @ts lasting @dur ps (with
 * flow @f, NULL: none) is shown (VisibleAtResolution()); updates the state.
 * Events of a row must come in start order.
 */
bool trace_lod_event(struct trace_lod *L, struct trace_lod_row *row, xs_ps128 ts, int64_t dur,
		     const struct trace_xflow *f);
/* trace_lod_counter() - whether a sample of counter @name at @ts is shown. */
bool trace_lod_counter(struct trace_lod *L, const char *name, size_t len, xs_ps128 ts);
/*
 * trace_lod_level() - whether a derived event [@begin, @end) at a level whose
 * state is @lv is shown at @res ps: it lasts @res, or is the level's first
 * shown, or starts @res after the last shown one ends.
 */
bool trace_lod_level(uint64_t res, struct trace_lod_lv *lv, xs_ps128 begin, xs_ps128 end);
/*
 * trace_event_flow() - the flow of event @e (metadata facts @t, may be NULL)
 * of plane @p, as trace.json shows it, without rendering its stats: 0 and
 * *@f (f->dir XFLOW_NONE: no flow), or -errno.
 */
int trace_event_flow(struct xs_rctx *rc, const struct xs_event *e, const struct trace_md *t,
		     const struct xs_plane *p, struct trace_xflow *f);

/*
 * trace_md_ext - the trace's own facts of each event metadata entry
 * (struct trace_md, made by trace_md_fill()): a render that shows
 * trace args sets rc->md_ext to it before its first look-up.
 */
extern const struct xs_md_ext trace_md_ext;
/* trace_md() - the trace_md of @m (NULL: none; a render without trace_md_ext). */
static inline const struct trace_md *trace_md(const struct xs_evmd *m)
{
	return (const struct trace_md *)m->view_md;
}

#endif
