/*
 * pftrace.h - what the two files of trace.pftrace share: view-pftrace.c
 * (packet sequences, tracks, slices, flows, async tracks) and
 * pftrace-args.c (trace.json's args as DebugAnnotations, and the interning
 * tables).
 *
 * Interning ids are unique per trace and per InternedData field, as
 * Perfetto's interned_data.proto asks ("It is illegal to override entries
 * in an index ... within the same tracing session"); each sequence defines
 * an entry in the packet of its first use there (a table entry remembers
 * the last sequence that defined it).
 */
#ifndef XPROFS_DECODE_PFTRACE_H
#define XPROFS_DECODE_PFTRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pb-writer.h"
#include "trace-internal.h"

/* Perfetto field numbers (decode/proto/perfetto_trace.proto) */
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

#endif
