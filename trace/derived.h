/*
 * derived.h - the lines XProf derives from events' annotations and stats,
 * shared by their files: the line builders and a derivation's life
 * (derive-builder.c), a GPU stream's lines with their order
 * (derive-gpu.c), framework ops, TSL's tf_op parsing (tfop.c), a plane's
 * Steps (derive-steps.c), a TensorCore plane's lines (derive-tpu.c) and its
 * host-offload rows (offload.c), a plane's lines merged by time
 * (derive-merge.c); the XLA kernels' symbols come from hlo/facts.c (the profile's
 * HLO protos). The views that write derived events
 * (view-trace.c, pftrace-*.c) use the part above "shared by the
 * derivation files".
 */
#ifndef XPROFS_TRACE_DERIVED_H
#define XPROFS_TRACE_DERIVED_H

#include <stdbool.h>
#include <stdint.h>

#include "xprofs/hlo.h"
#include "trace-internal.h"

/*
 * The derived lines of a stream. DL_STEPS is the slot of the Steps line
 * XProf derives on a GPU plane of a space it groups itself; xprofs does not
 * group (docs/stats.md), so none is made, and the slot keeps the kinds
 * after it (the offload rows' track ids) where they were. The values index
 * arrays only; the line order is tid_offset[].
 */
enum { DL_STEPS = DL_COUNT }; /* DL_MODULE ... DL_COUNT: xprofs/xspace.h */
#define DL_ALL ((1u << DL_COUNT) - 1)
/*
 * The host-offload rows of a TensorCore plane (HostOffloadEventProcessor):
 * kinds DL_OFFLOAD + row, row < DER_OFFLOAD_ROWS (kThreadIdHostOffloadOpEnd -
 * kThreadIdHostOffloadOpStart + 1); DL_KINDS kinds in all.
 */
#define DER_OFFLOAD_ROWS 41
enum { DL_OFFLOAD = DL_STEPS + 1, DL_KINDS = DL_OFFLOAD + DER_OFFLOAD_ROWS };
/*
 * Deepest hlo_op nesting ("a::b::...") and name-scope nesting ("a/b/.../op")
 * followed; deeper levels are not derived.
 */
#define DER_LEVELS 16
/* A TensorCore plane's lines are derived when it has at most this many (one 1 MiB cursor each). */
#define DER_TPU_LINES 32
/* Derived event names are cut at this many bytes (XProf's cap for long names, kMaxLongName). */
#define DER_NAME_MAX 10000

/* One finished derived event, borrowed by the emit function for the call. */
struct trace_derived_ev {
	int kind;     /* DL_* */
	uint32_t tid; /* its line's display id */
	const char *line_name, *name, *disp;
	size_t line_name_len, name_len, disp_len; /* disp_len 0: no display name */
	bool has_group;
	int64_t group;
	xs_ps128 begin, end; /* absolute ps */
	const char *args;    /* more args, after long_name, as trace.json writes them ("k":v,...) */
	size_t args_len;     /* 0: none */
};
typedef int (*trace_derived_emit_fn)(void *arg, const struct trace_derived_ev *e);

struct der_offload; /* host-offload pairing (offload.c) */

struct der_ev { /* one open derived event */
	bool open, has_group;
	bool unsure; /* a lookback walk: may differ from the whole walk's (derive-tpu.c) */
	int64_t group;
	xs_ps128 begin, end;
	struct xprofs_buf name, disp;
};
struct der_line { /* DerivedXLineBuilder */
	int kind;
	unsigned deps; /* DL_* bits reset with this line's level 0 */
	struct xprofs_buf title;
	struct der_ev lv[DER_LEVELS];
	bool fresh[DER_LEVELS]; /* a lookback walk: the whole walk's state here is unknown */
};
struct trace_derive {
	trace_derived_emit_fn emit;
	void *arg;
	int r; /* first emit error */
	uint32_t tid0;
	uint8_t have; /* lines the plane already holds: not derived */
	bool tpu; /* a TensorCore plane's lines (DeriveLinesFromStats): their ids, the gap test */
	bool lookback; /* a slice's walk from before its window, not from the plane's start */
	bool dry;      /* emit nothing: only find out whether the lookback walk is exact */
	bool inexact;  /* the dry walk met an unsure event overlapping the window */
	const struct xprofs_hlo_facts *hlo; /* borrowed, may be NULL: XLA kernels' symbols */
	bool win;
	xs_ps128 from, to;
	uint64_t lod_res;            /* a level-of-detail trace's resolution (trace_derive_lod()) */
	struct trace_lod_lv *lod_lv; /* owned, [DL_KINDS][DER_LEVELS]; NULL: every event shown */
	struct der_line lines[DL_COUNT];
	struct xprofs_buf tmp, s_op, s_mod, s_tf, disp;
	struct der_offload *off; /* owned; a TensorCore plane's host-offload rows, NULL: none */
};

/* The annotations of one stream event (GpuEventStats), strings borrowed from the derivation. */
struct trace_derived_in {
	struct trace_derive *d;
	bool is_kernel, has_hlo_op, has_program_id, has_group;
	const char *hlo_op, *module, *tf_op; /* tf_op: the tf_op stat ("" when absent) */
	size_t hlo_op_len, module_len, tf_op_len;
	uint64_t program_id;
	int64_t group;
	xs_ps128 begin, end;
};

/*
 * trace_derive_new() - the derivation of stream line @l of plane @p, handing
 * events to @emit(@arg); the render's HLO facts (xs_hlo_facts()) are made on
 * the first call, once per render. *out stays NULL when the
 * line derives nothing. Caller frees *out with trace_derive_free().
 */
int trace_derive_new(struct xs_rctx *rc, const struct xs_plane *p, const struct xs_line *l,
		     trace_derived_emit_fn emit, void *arg, struct trace_derive **out);
/* trace_derive_window() - emit only derived events overlapping [from, to) (a slice). */
void trace_derive_window(struct trace_derive *d, xs_ps128 from, xs_ps128 to);
/*
 * trace_derive_lod() - in a level-of-detail render (rc->lod), emit only the
 * derived events trace_lod_level() shows, per line and level.
 */
int trace_derive_lod(struct trace_derive *d, const struct xs_rctx *rc);
/*
 * trace_derive_lod_keep() - whether the lod shows an event of line @kind,
 * @level; see above. Inline: the derived lines and the host-offload rows
 * (offload.c) both ask, and neither calls the other.
 */
static inline bool trace_derive_lod_keep(struct trace_derive *d, int kind, int level,
					 xs_ps128 begin, xs_ps128 end)
{
	if (!d->lod_lv || kind < 0 || kind >= DL_KINDS || level < 0 || level >= DER_LEVELS)
		return true;
	return trace_lod_level(d->lod_res, &d->lod_lv[(size_t)kind * DER_LEVELS + level], begin,
			       end > begin ? end : begin + 1);
}
/* trace_derive_read() - the annotations of event @e (starting at @begin) into @in. */
int trace_derive_read(struct trace_derive *d, struct xs_rctx *rc, const struct xs_event *e,
		      xs_ps128 begin, struct trace_derived_in *in);
/*
 * trace_tfop_event_name() - TfOpEventName() of @op into @b (reset first);
 * 0 or -errno from the buffer.
 */
int trace_tfop_event_name(const struct xs_tfop *op, struct xprofs_buf *b);
/* trace_derive_event() - feed one event of the stream (file order). */
int trace_derive_event(struct trace_derive *d, const struct trace_derived_in *in);
/*
 * trace_derive_tpu() - the lines XProf derives on TensorCore plane @pi
 * ("/device:TPU:<n>") from its events' stats (DeriveLinesFromStats()):
 * Framework Name Scope and Framework Ops from tf_op, Source code from
 * source, over every event of the plane in time order (a merge over its
 * lines, derive-merge.c). Events go to @emit(@arg); @after (may be
 * NULL) is called with the derivation after each source event, so a writer
 * that must order events can see what is still open.
 */
int trace_derive_tpu(struct xs_rctx *rc, size_t pi, trace_derived_emit_fn emit,
		     int (*after)(void *arg, const struct trace_derive *d), void *arg);
/*
 * trace_derive_alloc() - a derivation of the DL_* lines handing events to
 * @emit(@arg) with thread ids from @tid0, its name buffers set up (XLA op
 * names up to @op_max bytes, line titles up to @title_max); NULL when out of
 * memory. Caller frees with trace_derive_free().
 */
struct trace_derive *trace_derive_alloc(trace_derived_emit_fn emit, void *arg, uint32_t tid0,
					size_t op_max, size_t title_max);
/* trace_derive_finish() - emit what is still open. */
int trace_derive_finish(struct trace_derive *d);
void trace_derive_free(struct trace_derive *d);

/* ---- shared by the derivation files ------------------------------------------ */

/*
 * The line builders (derive-builder.c), each described where it is defined;
 * a TensorCore plane's line ids (kThreadIdTfNameScope, kThreadIdTfOp,
 * kThreadIdSource) - kThreadIdDerivedMin, by DL_*.
 */
extern const uint32_t trace_der_tpu_tid_offset[DL_COUNT + 1];
void trace_der_lv_close(struct trace_derive *d, struct der_line *dl, int level);
void trace_der_reset(struct trace_derive *d, struct der_line *dl, int level);
int trace_der_set_str(struct xprofs_buf *b, const char *s, size_t n);
int trace_der_expand_or_add(struct trace_derive *d, struct der_line *dl, int level,
			    const struct xprofs_buf *name, const char *disp, size_t disp_len,
			    const struct trace_derived_in *in);
int trace_der_stat_str(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s,
		       struct xprofs_buf *b, bool *has);
/* ProcessTfOpEvent() (tfop.c) */
int trace_der_tf_op_event(struct trace_derive *d, const char *s, size_t n,
			  const struct trace_derived_in *in);

/* One line of a plane in a time-ordered merge (derive-merge.c): its own cursor and next event. */
struct der_src {
	struct wire_cur c;
	uint64_t end;
	xs_ps128 base_ps; /* 128 bits: epoch line timestamps (1.7e18 ns) overflow int64 ps */
	bool has;         /* ev holds the line's next event */
	struct xs_event ev;
};
int trace_merge_open(struct xs_rctx *rc, const struct xs_plane *p, struct der_src *src, size_t *k,
		     bool seek, xs_ps128 from);
struct der_src *trace_merge_next(struct der_src *src, size_t n, xs_ps128 *start);
int trace_merge_step(struct der_src *s);
void trace_merge_close(struct der_src *src, size_t k);
int trace_md_entry_stats(struct xs_rctx *rc, size_t k, xs_stat_fn fn, void *arg);

/* Host-offload rows (offload.c): a TensorCore plane's walk drives them. */
/* trace_offload_new() - no start waiting; NULL: out of memory. Caller frees with trace_offload_free(). */
struct der_offload *trace_offload_new(void);
void trace_offload_free(struct der_offload *o);
int trace_offload_wanted(struct xs_rctx *rc, const struct xs_plane *p, bool *out);
int trace_offload_event(struct xs_rctx *rc, struct trace_derive *d, const struct der_src *src,
			xs_ps128 begin, xs_ps128 end);
bool trace_offload_pending_before_to(const struct trace_derive *d);

#endif
