/*
 * render-internal.h - what the render side of the decode module shares: the
 * per-render context with its metadata cache (metadata.c), stat decoding
 * (stats.c), the walk over a line's events (render.c) and the views'
 * entry points (view-*.c). The index it reads is in decode-internal.h, the
 * JSON writer in json.h.
 *
 * A render owns one struct dec_rctx: two cursors (one streams the events of
 * the current line, one serves metadata look-ups) and the current plane's
 * decoded metadata. Everything borrowed from the cache stays valid until the
 * next dec_md_gc() or plane change.
 */
#ifndef XPROFS_DECODE_RENDER_INTERNAL_H
#define XPROFS_DECODE_RENDER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decode-internal.h"
#include "json.h"

/* Decoded metadata is dropped between events once it passes this many bytes. */
#define DEC_MD_BUDGET ((size_t)64 << 20)

/* ---- the metadata cache (metadata.c) ---------------------------------- */

struct dec_stmd { /* one XStatMetadata */
	bool loaded;
	char *name; /* raw, NUL-terminated */
	size_t name_len;
	char *json; /* the name as a JSON string, followed by ':' (a stat's key) */
	size_t json_len;
	int8_t tkind; /* trace.json's class of the name + 1 (0: not yet known; trace-model.c) */
	int8_t ckind; /* dec_collect_stat()'s class of the name (0: not yet known; stats.c) */
};

struct dec_trace_md;

struct dec_evmd { /* one XEventMetadata */
	bool loaded;
	char *name; /* raw display name, else name */
	size_t name_len;
	char *name_json, *full_json, *stats_json; /* stats_json: "k":v,... */
	size_t name_json_len, full_json_len, stats_json_len;
	bool has_display; /* display name set and differing from name */
	/* from the metadata's stats, for ops */
	char *category, *hlo_op;
	double flops, bytes;
	bool has_flops, has_bytes;
	int64_t step_num;
	bool has_step_num;
	char *hlo_module; /* owned, NULL when absent */
	double model_flops;
	bool has_model_flops;
	uint64_t program_id;
	bool has_program_id;
	int64_t group;              /* ops group in the current aggregation, -1 unknown */
	struct dec_trace_md *trace; /* owned; trace renders only (trace-model.c) */
};

struct dec_rctx {
	struct xprofs_xspace *x; /* borrowed */
	struct dec_cur ev, md;
	struct xprofs_buf *err; /* borrowed, may be NULL */
	size_t plane;
	struct dec_evmd *evmd; /* owned, parallel to plane->ev.md */
	struct dec_stmd *stmd; /* owned, parallel to plane->st.md */
	size_t md_bytes;
	struct xprofs_buf tmp;
	bool trace;       /* a trace render: event metadata also gets its dec_trace_md */
	const char *host; /* borrowed, may be NULL: the host name of trace.json's processes */
	bool win;         /* a slice: line walks keep events overlapping [win_from, win_to) */
	xprofs_ps128 win_from, win_to;
	struct dec_hlo_syms
		*hlo_syms; /* owned; loaded by the first derived GPU stream (derived.c) */
	bool hlo_syms_loaded;
	bool in_task; /* a dec_tasks_run() thread's: its tasks run their own tasks in a loop */
	const char *spill_dir; /* borrowed, may be NULL: dec_parts_run()'s temporary files */
};

/*
 * dec_rctx_child() - a fresh render context over @parent's profile with its
 * settings (host, window, spill_dir), for another thread; messages go to
 * @err (borrowed). Free with dec_rctx_deinit().
 */
void dec_rctx_child(struct dec_rctx *rc, const struct dec_rctx *parent, struct xprofs_buf *err);
void dec_rctx_deinit(struct dec_rctx *rc);

/* What a missing event metadata entry reads as (the empty name, no stats). */
extern struct dec_evmd dec_empty_evmd;

/* dec_plane_enter() - make plane @pi the current one (drops the cache on a change). */
int dec_plane_enter(struct dec_rctx *rc, size_t pi);
/* dec_md_drop() - free all decoded metadata of the current plane. */
void dec_md_drop(struct dec_rctx *rc);
/* The two metadata maps of a plane. */
enum dec_md_kind { DEC_MD_STAT, DEC_MD_EVENT };
/*
 * dec_md_load() - the one metadata loader, the slow path of dec_md_stat() and
 * dec_md_event(): decode entry @key of the current plane's map @kind into
 * the cache, or give the empty entry when the map has no @key. *out: a
 * struct dec_stmd or struct dec_evmd, borrowed until dec_md_gc().
 */
int dec_md_load(struct dec_rctx *rc, enum dec_md_kind kind, int64_t key, void **out);

/*
 * dec_md_stat() / dec_md_event() - the current plane's stat / event metadata
 * @key (borrowed, valid until dec_md_gc()). Inline: a cache hit (the common
 * case, several per event) costs one index look-up, no call.
 */
static inline int dec_md_stat(struct dec_rctx *rc, int64_t key, const struct dec_stmd **out)
{
	ssize_t k = dec_md_find(&rc->x->planes[rc->plane].st, key);

	if (k >= 0 && rc->stmd[k].loaded) {
		*out = &rc->stmd[k];
		return 0;
	}
	return dec_md_load(rc, DEC_MD_STAT, key, (void **)out);
}

static inline int dec_md_event(struct dec_rctx *rc, int64_t key, struct dec_evmd **out)
{
	ssize_t k = dec_md_find(&rc->x->planes[rc->plane].ev, key);

	if (k >= 0 && rc->evmd[k].loaded) {
		*out = &rc->evmd[k];
		return 0;
	}
	return dec_md_load(rc, DEC_MD_EVENT, key, (void **)out);
}

/* dec_md_gc() - between events: keep the decoded metadata under its budget. */
static inline void dec_md_gc(struct dec_rctx *rc)
{
	if (rc->md_bytes > DEC_MD_BUDGET)
		dec_md_drop(rc);
}

/* ---- stats (stats.c) ------------------------------------------------- */

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

struct dec_statv { /* one XStat, its value located, not copied */
	int64_t md;
	int kind;
	uint64_t u; /* u64, i64 (as bits), ref */
	double d;
	uint64_t off, len; /* str, bytes, compressed: where the bytes lie */
};

/* dec_zlib_errno() - the module's one mapping of zlib results to -errno (stats.c). */
int dec_zlib_errno(int zr);

/* dec_stat_parse() - parse the XStat body [c->pos, c->end). */
int dec_stat_parse(struct dec_cur *c, struct dec_statv *s);

typedef int (*dec_stat_fn)(struct dec_rctx *rc, struct dec_cur *c, const struct dec_statv *s,
			   void *arg);
/* dec_walk_stats() - call @fn for each XStat in field @field of the message [off, off+len) on @c.
 */
int dec_walk_stats(struct dec_rctx *rc, struct dec_cur *c, uint64_t off, uint64_t len,
		   uint32_t field, dec_stat_fn fn, void *arg);

/* dec_walk_plane_stats() - call @fn for each stat of plane @pi (enters the plane). */
int dec_walk_plane_stats(struct dec_rctx *rc, size_t pi, dec_stat_fn fn, void *arg);

struct dec_render_arg {
	struct dec_out *o;
	bool first;
};
/* dec_render_stat() - a dec_stat_fn writing "name":value pairs (arg: struct dec_render_arg). */
int dec_render_stat(struct dec_rctx *rc, struct dec_cur *c, const struct dec_statv *s, void *arg);

/* The strings of a struct dec_opstats, as bits of its owned / plain masks. */
enum {
	DEC_OS_CATEGORY,
	DEC_OS_HLO_OP,
	DEC_OS_STEP_NAME,
	DEC_OS_HLO_MODULE,
	DEC_OS_KERNEL_DETAILS,
	DEC_OS_TF_OP,
	DEC_OS_NSTR
};

/* Interesting stats for ops/steps, from metadata or event stats. */
struct dec_opstats {
	char *category, *hlo_op, *step_name; /* owned */
	double flops, bytes;
	bool has_flops, has_bytes;
	int64_t step_num;
	bool has_step_num;
	/* for ops.json / overview.json / kernels.json (docs/stats.md) */
	bool strings;                              /* set by the caller: also collect these */
	char *hlo_module, *kernel_details, *tf_op; /* owned */
	double model_flops;
	bool has_model_flops;
	uint64_t program_id;
	bool has_program_id;
	int64_t dev_off, dev_dur; /* device_offset_ps / device_duration_ps */
	bool has_dev_off, has_dev_dur;
	/*
	 * Per-event walks: with @borrow (set by the caller) a string whose stat is a
	 * ref points at the stat metadata's name (borrowed until the next
	 * dec_md_gc(), so for the event being handled) instead of a copy, and
	 * ref[i] is that ref: the string's identity within the plane, for caches
	 * keyed by it. Bit i of @owned: string i is a copy (dec_opstats_clear()
	 * frees it); of @plain: it came from a value, not a ref (no identity).
	 */
	bool borrow;
	uint8_t owned, plain;
	int64_t ref[DEC_OS_NSTR];
};
/* dec_opstats_clear() - free what @s owns; zeroes it, except in borrow mode (per-event
 * structs, dropped right after: only the copies are freed, the rest is left). */
void dec_opstats_clear(struct dec_opstats *s);
/* dec_collect_stat() - a dec_stat_fn filling a struct dec_opstats. */
int dec_collect_stat(struct dec_rctx *rc, struct dec_cur *c, const struct dec_statv *s, void *arg);

/*
 * What the analyses read from a plane's own stats (TSL StatType names, see
 * docs/stats.md): peak rates (TPU: peak_teraflops_per_second,
 * peak_hbm_bw_gigabytes_per_second; GPU: memory_bandwidth in bytes/s) and
 * the device description. peak_flops / peak_bw: per second, 0 = unknown.
 */
struct dec_plane_facts {
	char *device_type, *vendor; /* owned, NULL when absent */
	char *gpu_device_name;      /* owned, NULL when absent (AMD: "gfx942:...") */
	double peak_tflops, peak_hbm_gbps, mem_bw, clock_khz, core_count, cc_major, cc_minor;
	bool has_peak_tflops, has_peak_hbm_gbps, has_mem_bw, has_clock, has_core_count, has_cc;
	double peak_flops, peak_bw;
};
/* dec_plane_facts_get() - the facts of plane @pi (enters it); clear with dec_plane_facts_clear(). */
int dec_plane_facts_get(struct dec_rctx *rc, size_t pi, struct dec_plane_facts *f);
void dec_plane_facts_clear(struct dec_plane_facts *f);
/*
 * dec_gpu_peak_flops() - XProf's GPU peak FLOP/s from @f's device
 * capabilities (gpu-peak.c, hardware_type_utils.cc); 0 when unknown.
 */
double dec_gpu_peak_flops(const struct dec_plane_facts *f);

/* ---- the events of a line (render.c) ------------------------------------ */

struct dec_event {
	int64_t md, offset_ps, duration_ps, num;
	bool has_num, has_stats;
	int64_t start_ps, end_ps;
	uint64_t off, len;  /* the XEvent message */
	uint64_t stats_off; /* its first stats field */
};

struct dec_line_it {
	struct dec_rctx *rc;
	const struct dec_line *l;
	uint64_t end;
	int64_t base_ps;
};

/* dec_line_begin() - start walking line @li (enters its plane). */
int dec_line_begin(struct dec_rctx *rc, size_t li, struct dec_line_it *it);
/* dec_line_next_slow() - the general path of dec_line_next(). */
int dec_line_next_slow(struct dec_line_it *it, struct dec_evhdr *h, uint64_t *off, uint64_t *len);

/* dec_line_next() - next event of the line: 1 and *e filled, 0 at the end, or -errno. */
static inline int dec_line_next(struct dec_line_it *it, struct dec_event *e)
{
	struct dec_cur *c = &it->rc->ev;
	struct dec_evhdr h;
	int r;

	r = dec_event_fast(c, &h, &e->off, &e->len);
	if (r < 0)
		return dec_fail(c, "malformed XEvent at offset %llu", (unsigned long long)c->pos);
	if (r == 0 && (r = dec_line_next_slow(it, &h, &e->off, &e->len)) <= 0)
		return r;
	e->md = h.md;
	e->offset_ps = h.offset_ps;
	e->duration_ps = h.duration_ps;
	e->num = h.num;
	e->has_num = h.has_num;
	e->has_stats = h.has_stats;
	e->stats_off = e->off + h.stats_at;
	e->start_ps = dec_sat_add(it->base_ps, e->offset_ps);
	e->end_ps = dec_sat_add(e->start_ps, e->duration_ps);
	return 1;
}

/* A per-event callback: @m is @e's metadata (borrowed until the next event); <0 stops. */
typedef int (*dec_event_fn)(struct dec_rctx *rc, const struct dec_event *e, struct dec_evmd *m,
			    void *arg);
/* A stop test, asked before each event's metadata is looked up: true ends the walk with 0. */
typedef bool (*dec_stop_fn)(void *arg);
/*
 * dec_line_each() - call @fn for each event of line @li in file order, until
 * @stop (NULL: never) says enough; 0, or the first error. In a slice
 * (rc->win) only the events overlapping the window, found through the
 * line's checkpoints.
 */
int dec_line_each(struct dec_rctx *rc, size_t li, dec_stop_fn stop, dec_event_fn fn, void *arg);

/* dec_event_stats() - "k":v pairs of @m's then @e's stats; *first tracks commas. */
int dec_event_stats(struct dec_rctx *rc, const struct dec_evmd *m, const struct dec_event *e,
		    struct dec_out *o, bool *first);

/* ---- the views (view-*.c) ----------------------------------------------- */

/* dec_out_line_name() - a line's display name (its name when none is set) as a JSON string. */
static inline void dec_out_line_name(struct dec_out *o, const struct dec_line *l)
{
	if (l->display_name_len)
		dec_out_str(o, l->display_name, l->display_name_len);
	else
		dec_out_str(o, l->name, l->name_len);
}

int dec_view_summary(struct dec_rctx *rc, struct dec_out *o);
int dec_view_trace(struct dec_rctx *rc, struct dec_out *o);
int dec_view_pftrace(struct dec_rctx *rc, struct dec_out *o);
int dec_view_ops(struct dec_rctx *rc, struct dec_out *o);
int dec_view_steps(struct dec_rctx *rc, struct dec_out *o);
int dec_view_overview(struct dec_rctx *rc, struct dec_out *o);
int dec_view_svg(struct dec_rctx *rc, struct dec_out *o);
/* dec_view_kernels() - kernels.json; -ENOENT (nothing written) without GPU planes. */
int dec_view_kernels(struct dec_rctx *rc, struct dec_out *o);
/* dec_steps_windows() - xprofs_xspace_steps() on render context @rc. */
int dec_steps_windows(struct dec_rctx *rc, struct xprofs_step_window **out, size_t *n);
/* dec_view_track() - planes/<plane>/<line>.json of line @li. */
int dec_view_track(struct dec_rctx *rc, size_t li, struct dec_out *o);
/*
 * dec_render() - render @view (or track @track when @view is XPROFS_VIEW_COUNT) to @sink.
 * @opts: borrowed, may be NULL.
 */
int dec_render(struct xprofs_xspace *x, int view, size_t track,
	       const struct xprofs_render_opts *opts, const struct xprofs_sink *sink,
	       struct xprofs_buf *err);

/* dec_with_rctx() - @fn(rc, @arg) with a fresh render context over @x (render.c). */
int dec_with_rctx(struct xprofs_xspace *x, struct xprofs_buf *err,
		  int (*fn)(struct dec_rctx *rc, void *arg), void *arg);

/* A task of dec_tasks_run(): task @i on render context @rc (its own when on another thread). */
typedef int (*dec_task_fn)(struct dec_rctx *rc, size_t i, void *arg);
/* What task @i costs, roughly (events it reads): the costliest are started first. */
typedef uint64_t (*dec_task_cost_fn)(const struct xprofs_xspace *x, size_t i, void *arg);
/*
 * dec_tasks_run() - @fn(rc, i, @arg) for i in [0, @n): on the calling thread with @rc when
 * the profile allows one thread (x->threads), else on up to x->threads threads, each
 * with a render context of its own, taking the tasks costliest first (@cost, may be
 * NULL: in order), so that a big plane does not run alone at the end. The tasks must
 * be independent (each writes only its own result). Returns 0, or the error of the
 * lowest failing task (its message in rc->err), as a loop that stops there would.
 */
int dec_tasks_run(struct dec_rctx *rc, size_t n, dec_task_fn fn, dec_task_cost_fn cost, void *arg);

/* Part @i of an ordered render, written to @o, on render context @rc (its own off the caller's thread). */
typedef int (*dec_part_fn)(struct dec_rctx *rc, size_t i, struct dec_out *o, void *arg);
/*
 * dec_parts_run() - @fn(rc, i, o, @arg) for i in [0, @n), their bytes in @o
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
int dec_parts_run(struct dec_rctx *rc, size_t n, dec_part_fn fn, void *arg, struct dec_out *o);

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

/* ---- trace.json's model (trace-model.c) ------------------------------- */

/* Picoseconds since any epoch: line timestamp_ns * 1000 + offset_ps never overflows. */
__extension__ typedef __int128 dec_ps128;
__extension__ typedef unsigned __int128 dec_ups128;

/* The trace facts of one event metadata: its filtered stats and the special ones. */
struct dec_trace_md {
	char *args;                /* owned: "long_name":..., then the shown stats, "k":v,... */
	size_t args_len;           /* 0: none */
	size_t step_off, step_len; /* the step_name value (JSON) inside @args; len 0: none */
	uint64_t flow;             /* the flow stat's value (an XFlow) */
	int64_t group;
	bool has_flow, has_group, is_async;
	bool internal; /* IsInternalEvent(): never shown */
};

/*
 * dec_trace_md_fill() - the dec_trace_md of event metadata @e (message [off,
 * off+len) at the metadata cursor, full name @full, display name length
 * @disp_len). e->trace: caller owns, freed by dec_trace_md_free().
 */
int dec_trace_md_fill(struct dec_rctx *rc, struct dec_evmd *e, const char *full, size_t full_len,
		      size_t disp_len, uint64_t off, uint64_t len);
void dec_trace_md_free(struct dec_trace_md *t);

/* What a stat means to the trace (by its name: StatType). */
enum dec_tstat {
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
#define DEC_XF_N (TS_CID - TS_CORR + 1)
enum dec_tstat dec_trace_stat_kind(const char *name, size_t len);
/* dec_trace_event_internal() - IsInternalEvent() of an event metadata's (full) name. */
bool dec_trace_event_internal(const char *name, size_t len);

/* XFlow: bits 0-1 direction, 2-57 id, 58-63 category (a ContextType). */
enum { XFLOW_NONE = 0, XFLOW_IN = 1, XFLOW_OUT = 2, XFLOW_INOUT = 3 };
struct dec_xflow {
	uint64_t id;
	int dir;
	unsigned cat;
};
struct dec_xflow dec_xflow_decode(uint64_t v);
/* dec_trace_category() - GetContextTypeString(GetSafeContextType(@cat)); "" if generic. */
const char *dec_trace_category(unsigned cat);

/* A plane shown as a process. */
struct dec_trace_plane {
	size_t plane; /* index into xprofs_xspace.planes */
	uint32_t pid;
};
/* dec_trace_planes() - the shown planes in XProf's order. *out: caller frees (free()). */
int dec_trace_planes(const struct xprofs_xspace *x, struct dec_trace_plane **out, size_t *n);

enum dec_tline { TL_THREAD = 0, TL_COUNTERS, TL_SKIP };
/* dec_trace_line_kind() - a thread, the counters line, or a line XProf skips. */
enum dec_tline dec_trace_line_kind(const struct dec_line *l);
/* dec_trace_tid() - (uint32) DisplayId(): display_id, or id when it is 0. */
uint32_t dec_trace_tid(const struct dec_line *l);

/* What a walk over stats with dec_trace_stat() collects. */
struct dec_trace_acc {
	struct dec_out *o; /* borrowed: the shown stats go here, "k":v,... */
	bool first;
	uint64_t flow;
	int64_t group;
	bool has_flow, has_group, is_async, has_step;
	size_t step_off, step_len; /* the step_name value inside o's buffer */
	/* the values of the TS_CORR..TS_CID stats seen, bit k of xf_has for xf[k] */
	uint64_t xf[DEC_XF_N];
	unsigned xf_has;
};
/* dec_trace_stat() - a dec_stat_fn: shown stats to a->o, special ones into @arg (dec_trace_acc). */
int dec_trace_stat(struct dec_rctx *rc, struct dec_cur *c, const struct dec_statv *s, void *arg);
/* dec_trace_stat_note() - record @s into @a when its kind @k is one of TS_CORR..TS_CID. */
void dec_trace_stat_note(struct dec_trace_acc *a, enum dec_tstat k, const struct dec_statv *s);
/*
 * dec_trace_xflows() - XProf's preprocessing flows (AddFlowsToXplane()) of an
 * event of plane @p whose own stats went into @a: after those stats, as if
 * appended to them, so the last one made is the event's flow. Nothing on a
 * grouped space.
 */
void dec_trace_xflows(const struct xprofs_xspace *x, const struct dec_plane *p,
		      struct dec_trace_acc *a);
/* The ends seen of a plane's single-ended async events (trace-model.c explains). */
struct dec_async_set {
	uint64_t *keys; /* owned; 0 = empty slot */
	uint8_t *ends;  /* owned; XFLOW_IN | XFLOW_OUT bits per key */
	size_t cap, n;
	bool full; /* past DEC_ASYNC_MAX keys: unknown ids count as paired */
};
/* dec_async_note() - record the end @f (direction in or out). */
int dec_async_note(struct dec_async_set *s, const struct dec_xflow *f);
/* dec_async_paired() - @f's flow id has a begin and an end (in-out events always do). */
bool dec_async_paired(const struct dec_async_set *s, const struct dec_xflow *f);
void dec_async_reset(struct dec_async_set *s);
void dec_async_deinit(struct dec_async_set *s);

/* dec_trace_out_ps_wide() - @ps as exact decimal microseconds, for any 128-bit time. */
void dec_trace_out_ps_wide(struct dec_out *o, dec_ps128 ps);
/* dec_trace_out_ps() - the same, inline for times that fit 64 bits (the usual case). */
static inline void dec_trace_out_ps(struct dec_out *o, dec_ps128 ps)
{
	if (ps == (int64_t)ps)
		dec_out_us(o, (int64_t)ps);
	else
		dec_trace_out_ps_wide(o, ps);
}

/* Which lines feed ops.json (and the device time of steps.json). */
enum dec_line_kind { LK_NONE = 0, LK_XLA_OPS, LK_STREAM, LK_HOST };
/* dec_op_line_kind() - the kind of line @l of plane @p (rule: docs/decode.md). */
enum dec_line_kind dec_op_line_kind(const struct xprofs_xspace *x, const struct dec_plane *p,
				    const struct dec_line *l, bool host_has_fw);
/* dec_host_has_fw() - @p has "Framework Ops" / "TensorFlow Ops" lines (then only they hold ops). */
bool dec_host_has_fw(const struct xprofs_xspace *x, const struct dec_plane *p);

#endif
