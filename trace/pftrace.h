/*
 * pftrace.h - what the files of trace.pftrace share: view-pftrace.c (the
 * render: processes, plane parts), pftrace-tracks.c (packets, sequences,
 * tracks), pftrace-events.c (a line's events), pftrace-derived.c (derived
 * lines), pftrace-async.c (async tracks) and pftrace-args.c (trace.json's
 * args as DebugAnnotations, and the interning tables).
 *
 * Interning ids are unique per trace and per InternedData field, as
 * Perfetto's interned_data.proto asks ("It is illegal to override entries
 * in an index ... within the same tracing session"); each sequence defines
 * an entry in the packet of its first use there (a table entry remembers
 * the last sequence that defined it).
 */
#ifndef XPROFS_TRACE_PFTRACE_H
#define XPROFS_TRACE_PFTRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pb-writer.h"
#include "trace-internal.h"

/* Perfetto field numbers (trace/proto/perfetto_trace.proto) */
enum {
	F_TE_ANNOTATION = 4,   /* TrackEvent.debug_annotations */
	F_ID_EVENT_NAMES = 2,  /* InternedData.event_names */
	F_ID_ANN_NAMES = 3,    /* InternedData.debug_annotation_names */
	F_ID_ANN_STRINGS = 29, /* InternedData.debug_annotation_string_values */
	F_EN_IID = 1,          /* EventName / DebugAnnotationName / InternedString .iid */
	F_EN_NAME = 2,         /* .name / .str */
	F_DA_NAME_IID = 1,
	F_DA_BOOL = 2,
	F_DA_UINT = 3,
	F_DA_INT = 4,
	F_DA_DOUBLE = 5,
	F_DA_STRING = 6,
	F_DA_NAME = 10,
	F_DA_STRING_IID = 17,
};

/* The render's interning tables and argument scratch (pftrace-args.c). */
struct trace_pf_args;

/* One event metadata (of one plane) as the trace uses it. */
struct trace_pf_md {
	size_t plane;
	int64_t md;
	uint64_t name_iid;
	uint64_t str_iid;          /* the first of its args' interned string values */
	uint32_t seq;              /* the last sequence that defined its interned entries */
	bool inline_args;          /* past the blob budget: args encoded per event (PF_EVENT) */
	size_t blob_off, blob_len; /* its args as encoded DebugAnnotations */
};

/* How trace_pf_args_encode() writes names and string values. */
enum trace_pf_mode {
	PF_MD,     /* names interned, strings interned from the md's str_iid (no definitions) */
	PF_EVENT,  /* names interned (defined on @seq as needed), strings inline */
	PF_INLINE, /* names and strings inline (a sequence without interning state) */
};

/*
 * trace_pf_args_new() - empty tables whose interning ids go @first, @first + @step,
 * ... (0: 1): a trace made in parts gives each part its own residue, so ids
 * stay unique in the trace whichever thread makes which part. Caller frees
 * with trace_pf_args_free().
 */
int trace_pf_args_new(uint64_t first, uint64_t step, struct trace_pf_args **out);
void trace_pf_args_free(struct trace_pf_args *A);

/*
 * trace_pf_md_get() - the entry of metadata @m (key @md of rc's current plane), made on
 * first sight: its name iid and its args (m->trace) encoded. Borrowed until
 * the next trace_pf_md_get(). -ENOMEM or -E2BIG on failure.
 */
int trace_pf_md_get(struct trace_pf_args *A, const struct xs_rctx *rc, int64_t md,
		    const struct xs_evmd *m, struct trace_pf_md **out);
/* trace_pf_md_blob() - the encoded DebugAnnotations of @e (borrowed until the next trace_pf_md_get());
 * none when e->inline_args: the caller encodes m->trace->args per event. */
const uint8_t *trace_pf_md_blob(const struct trace_pf_args *A, const struct trace_pf_md *e);
/*
 * trace_pf_md_define() - when @e is not yet defined on sequence @seq: its event
 * name (@name, @len), its args' annotation names and string values go to
 * InternedData @id.
 */
void trace_pf_md_define(struct trace_pf_args *A, struct trace_pf_md *e, const struct xs_evmd *m,
			const char *name, size_t len, uint32_t seq, struct pbw *id);
/*
 * trace_pf_args_encode() - the "k":v,... JSON fragment @j (@n bytes, as trace.json
 * writes args) as DebugAnnotations appended to TrackEvent @te, in order and
 * with the same value types; new names go to @id (PF_EVENT).
 */
void trace_pf_args_encode(struct trace_pf_args *A, const char *j, size_t n, enum trace_pf_mode mode,
			  uint32_t seq, uint64_t str_iid, struct pbw *te, struct pbw *id);
/*
 * trace_pf_event_name() - the InternedData.event_names iid of name @s (@n bytes,
 * borrowed), defined into @id when not yet defined on sequence @seq; 0 when
 * the table is full (PF_ENAMES_MAX names or PF_ENAMES_BYTES of them): the
 * caller writes the name inline.
 */
uint64_t trace_pf_event_name(struct trace_pf_args *A, const char *s, size_t n, uint32_t seq,
			     struct pbw *id);
/* trace_pf_arg_int() - one integer annotation @name (@len bytes) = @v (interned per @mode as above). */
void trace_pf_arg_int(struct trace_pf_args *A, const char *name, size_t len, int64_t v,
		      enum trace_pf_mode mode, uint32_t seq, struct pbw *te, struct pbw *id);

/*
 * trace_pf_arg_str() - one string annotation @name (@len bytes) = @v (@n bytes,
 * borrowed): the name interned as PF_EVENT, the value interned by string
 * (InternedData.debug_annotation_string_values, defined into @id when not yet
 * on @seq), inline when short or the table is full.
 */
void trace_pf_arg_str(struct trace_pf_args *A, const char *name, size_t len, const char *v,
		      size_t n, uint32_t seq, struct pbw *te, struct pbw *id);

/* What trace_pf_event_stat() collects over an event's stats. */
struct trace_pf_evstats {
	struct trace_acc a; /* trace.json's special stats; a.o: JSON scratch (borrowed) */
	struct trace_pf_args *A;
	enum trace_pf_mode mode; /* PF_EVENT or PF_INLINE */
	uint32_t seq;
	struct pbw *ann, *id; /* out: the annotations; InternedData for new names */
};

/*
 * trace_pf_event_stat() - a xs_stat_fn (arg: struct trace_pf_evstats): trace.json's
 * trace_stat() for what it treats specially, plain numbers encoded
 * directly, and the rest converted from its JSON, so the annotations follow
 * the stats' order.
 */
int trace_pf_event_stat(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s,
			void *arg);

/* trace_pf_json_unescape() - JSON string @j (with its quotes) into @out (reset first); its length. */
size_t trace_pf_json_unescape(const char *j, size_t n, struct pbw *out);

/* ---- the writer: the render and its lines ---------------------------------- */

#define STACK_MAX 256 /* open slices per track */
#define LEVELS_MAX 8  /* tracks per line: its own and overflow tracks */
#define ASYNC_TRACKS_MAX 1024

struct trace_derive;
struct trace_derived_ev;

/* Perfetto field numbers of the packets, sequences, tracks and track events */
enum {
	F_TRACE_PACKET = 1,
	F_PK_CLOCKS = 6,
	F_PK_TS = 8,
	F_PK_SEQ = 10,
	F_PK_EVENT = 11,
	F_PK_INTERNED = 12,
	F_PK_FLAGS = 13,
	F_PK_CLOCK_ID = 58,
	F_PK_DEFAULTS = 59,
	F_PK_TRACK = 60,
	F_DEF_CLOCK = 58,
	F_DEF_EVENT = 11,
	F_TED_TRACK = 11,
	F_CS_CLOCK = 1,
	F_CL_ID = 1,
	F_CL_TS = 2,
	F_CL_INCR = 3,
	F_TD_UUID = 1,
	F_TD_NAME = 2,
	F_TD_PROCESS = 3,
	F_TD_THREAD = 4,
	F_TD_PARENT = 5,
	F_TD_COUNTER = 8,
	F_PD_PID = 1,
	F_PD_NAME = 6,
	F_THD_PID = 1,
	F_THD_TID = 2,
	F_THD_NAME = 5,
	F_TE_TYPE = 9,
	F_TE_NAME_IID = 10,
	F_TE_TRACK = 11,
	F_TE_NAME = 23,
	F_TE_DCOUNTER = 44,
	F_TE_FLOW = 47,
	F_TE_TFLOW = 48,
};
enum { SEQ_CLEARED = 1, SEQ_NEEDS = 2 };
enum { TYPE_BEGIN = 1, TYPE_END = 2, TYPE_INSTANT = 3, TYPE_COUNTER = 4 };

/* A packet sequence being written: its id and its clock's last value. */
struct trace_pf_seq {
	uint32_t id;
	uint64_t last;
};

/* A held-back async event of the current plane (a span once paired). */
struct trace_pf_async {
	uint64_t key;            /* (flow id, category); 0: in-out */
	uint64_t ts, x_end, end; /* ns: start, end as a complete event, span end */
	size_t off, len;         /* its TrackEvent fields (name, args) in trace_pf_ctx.ablob */
	size_t args_at;          /* where its args start (after the name) */
	size_t end_off, end_len; /* the paired end's args (len 0: none) */
	uint32_t order, track;   /* arrival, assigned track */
	int dir;
	bool dead; /* consumed as the end of a span */
};

/* The render. */
struct trace_pf_ctx {
	struct xs_rctx *rc;
	struct xs_out *o;
	struct trace_pf_args *A;
	uint32_t next_seq, seq_step; /* the next sequence id; ids go next_seq, + seq_step, ... */
	uint64_t next_async;
	struct trace_pf_line *pl; /* the line being written */
	struct trace_lod lod;     /* the plane's level of detail (off: every event shown) */
	uint64_t proc_uuid;
	struct pbw pk, te, id, td, sub, name, evann; /* scratch */
	struct xs_out ev;                            /* scratch: one event's shown stats (JSON) */
	struct trace_pf_dline
		*dl;      /* [DL_KINDS]: a stream's derived lines, Steps, host-offload rows */
	struct pbw dte;   /* scratch: a derived event's long_name */
	struct xs_out dj; /* scratch: a derived event's long_name as JSON */
	struct trace_pf_async *as; /* the plane's held-back async events */
	size_t n_as, cap_as;
	struct pbw ablob;
	uint64_t dropped, drop_ns;    /* events that fit no track; the first one's start */
	bool regions_on;              /* the plane's lines get threadpool regions (regions.c) */
	struct trace_regions regions; /* the current line's */
};

/* One track of a line: its open slices' end times (innermost last). */
struct trace_pf_track {
	uint64_t end[STACK_MAX];
	size_t n;
	bool described;
};

/* One line being written. */
struct trace_pf_line {
	struct trace_pf_ctx *c;
	const struct xs_line *l;
	const char *title; /* a derived line: its name (else l's) */
	size_t title_len;
	struct trace_derive *derive; /* owned; the lines derived from this one, NULL: none */
	bool win;                    /* a slice walked whole for its derivation: filter here */
	struct trace_pf_seq s;
	uint32_t pid, tid;
	uint64_t uuid; /* of level 0; level k is uuid + k */
	uint64_t last_ns;
	bool counters;
	struct trace_pf_track lv[LEVELS_MAX];
	size_t nlv; /* levels ever placed on (trace_pf_place()): only those hold open slices */
	struct trace_regions *regions; /* borrowed (c->regions); NULL: none */
	double cval;
	bool has_cval;
	struct trace_lod_row lod; /* the line's level-of-detail state (trace_lod_event()) */
};

/* A finished derived event waiting for its turn: its times, args and strings in trace_pf_dline.blob. */
struct trace_pf_dev {
	uint64_t b, en;
	int64_t group;
	size_t off; /* in trace_pf_dline.blob: its name (name_len bytes), long_name, more args */
	size_t name_len, ln_len, args_len;
	uint32_t order;
	bool has_group, has_ln;
};

/*
 * A derived line (derived.h; pftrace-derived.c): a sequence of its own. Its
 * events come out as they close, a parent after its children, so they wait
 * here and are written in start order once no event still open on the line
 * can start before them.
 */
struct trace_pf_dline {
	struct trace_pf_line pl;
	char title[256];
	struct trace_pf_dev *ev;
	size_t n, cap;
	uint32_t order;
	bool sorted;     /* ev[] is in start order (new events arrive unsorted) */
	struct pbw blob; /* the waiting events' names and long_names */
};

/* What the walk over an event's stats found, with its metadata's (as trace.json). */
struct trace_pf_evinfo {
	struct trace_acc a;
	struct trace_xflow f;
	const char *step; /* JSON string of a step_name rename, or NULL */
	size_t step_len;
};

/* Packets, sequences and tracks (pftrace-tracks.c); each is described where it is defined. */
int trace_pf_err(const struct trace_pf_ctx *c);
void trace_pf_emit(struct xs_out *o, const struct pbw *pk);
void trace_pf_emit_event(struct trace_pf_ctx *c, struct trace_pf_seq *s, uint64_t ns,
			 const struct pbw *te, const struct pbw *id);
void trace_pf_emit_msg(struct trace_pf_ctx *c, const struct trace_pf_seq *s, uint32_t field,
		       const struct pbw *m);
void trace_pf_seq_open(struct trace_pf_ctx *c, struct trace_pf_seq *s, uint64_t track,
		       const struct pbw *td);
uint64_t trace_pf_ns(xs_ps128 ps);
void trace_pf_need_track(struct trace_pf_line *pl, size_t k);
void trace_pf_close_until(struct trace_pf_line *pl, uint64_t ns);
size_t trace_pf_place(struct trace_pf_line *pl, uint64_t *b, uint64_t *en);
void trace_pf_dropped(struct trace_pf_ctx *c, uint64_t ns);

/* A line's events (pftrace-events.c). */
int trace_pf_line(struct trace_pf_ctx *c, struct trace_pf_line *pl, uint32_t pid, size_t li);

/* Derived lines (pftrace-derived.c). */
void trace_pf_dline_start(struct trace_pf_dline *d, struct trace_pf_ctx *c, const struct xs_line *l,
			  uint32_t pid, uint64_t uuid);
int trace_pf_dline_end(struct trace_pf_dline *d);
int trace_pf_derived_flush(struct trace_pf_ctx *c, const struct trace_derive *dv);
int trace_pf_tpu_flush(void *arg, const struct trace_derive *dv);
int trace_pf_derived_emit(void *arg, const struct trace_derived_ev *e);

/* Async events (pftrace-async.c). */
int trace_pf_async_hold(struct trace_pf_ctx *c, const struct xs_evmd *m,
			const struct trace_pf_evinfo *v, xs_ps128 ts, int64_t dur, int64_t raw_dur);
int trace_pf_async_flush(struct trace_pf_ctx *c);

#endif
