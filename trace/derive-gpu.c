/*
 * derive-gpu.c - the lines XProf derives on GPU planes from the annotations
 * of kernels ("XLA Modules", "XLA Ops", "Framework Name Scope", "Framework
 * Ops", "Source code"), one stream line at a time, for trace.json and any
 * view sharing the trace model.
 *
 * Sources (openxla/xprof xprof/utils/derived_timeline.cc):
 * DeriveEventsFromAnnotations() (per GPU plane: the non-derived lines sorted
 * compute streams first, then by event count; each stream k gets its own
 * derived lines with ids kThreadIdDeviceDerivedMin + 6k + offset and names
 * "<line> - from #<stream id>"; display ids renumbered 1, 2, ... in that
 * order: xs_derived_assign() at index time, the offsets in
 * derive-builder.c), DeriveEventsFromAnnotationsForLines() (per kernel:
 * hlo_module, hlo_op and, through the symbol resolver of
 * GenerateDerivedTimeLines() (xla_symbol() over hlo/facts.c), the XLA instruction's framework
 * op and source line), HloModuleEventName() / HloOpEventPrefix();
 * GpuEventStats (IsKernel: kernel_details set; IsXlaOp: hlo_op set, split at
 * "::"; IsTfOp: tf_op non-empty). Framework ops go through tfop.c.
 *
 * Design: derivation streams with the render of the stream line: each event
 * of the line is read (trace_derive_read()) and fed in file order
 * (trace_derive_event()) to the line builders (derive-builder.c).
 * Memory: five derived lines of DER_LEVELS events, names (and the tf_op
 * string parsed) capped at DER_NAME_MAX bytes; nothing grows with the
 * profile (the render's symbol table is bounded in hlo/facts.c).
 *
 * Limits (docs/trace.md lists them): name scopes deeper than DER_LEVELS are
 * dropped; scope_range_id and CUDA-graph stats are not used; a line the
 * plane already holds by name is not derived again.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "derived.h"

/* ---- a kernel's annotations (DeriveEventsFromAnnotationsForLines) ------------- */

/* The "XLA Ops" levels of hlo_op "a::b::c", each named "<prefix>/<op>", shown as "<op>". */
static int hlo_ops(struct trace_derive *d, const struct trace_derived_in *in)
{
	struct der_line *dl = &d->lines[DL_HLO_OP];
	const char *s = in->hlo_op, *end = in->hlo_op + in->hlo_op_len;
	int level = 0, r;

	for (;;) {
		const char *sep = memmem(s, (size_t)(end - s), "::", 2);
		const char *e = sep ? sep : end;

		xprofs_buf_reset(&d->tmp);
		if (in->has_program_id)
			r = xprofs_buf_printf(&d->tmp, "%" PRIu64 "/", in->program_id);
		else if ((r = trace_der_set_str(&d->tmp, in->module, in->module_len)) == 0)
			r = xprofs_buf_adds(&d->tmp, "/");
		if (r == 0 && (size_t)(e - s) + d->tmp.len <= DER_NAME_MAX)
			r = xprofs_buf_add(&d->tmp, s, (size_t)(e - s));
		if (r < 0)
			return r;
		if ((r = trace_der_expand_or_add(d, dl, level++, &d->tmp, s, (size_t)(e - s), in)) <
		    0)
			return r;
		if (!sep)
			break;
		s = sep + 2;
	}
	trace_der_reset(d, dl, level);
	return 0;
}

/*
 * An XLA kernel's symbol (the instruction named by the last "::" part of its
 * hlo_op in program program_id): its framework op (op_full_name()) through
 * ProcessTfOpEvent(), its source line (source_info()) on Source code.
 * XProf's resolver reads the HloModuleMap of the XSpace's own metadata
 * plane (GenerateDerivedTimeLines()), so a program only a sidecar carries
 * resolves nothing here.
 */
static int xla_symbol(struct trace_derive *d, const struct trace_derived_in *in)
{
	const char *last = in->hlo_op, *end = in->hlo_op + in->hlo_op_len, *hit;
	struct xprofs_hlo_fact f;
	int r;

	if (!d->hlo || !in->has_program_id)
		return 0;
	while ((hit = memmem(last, (size_t)(end - last), "::", 2)) != NULL)
		last = hit + 2;
	if (!xprofs_hlo_facts_find(d->hlo, in->program_id, last, (size_t)(end - last), &f) ||
	    f.from != XPROFS_HLO_METADATA)
		return 0;
	if (f.op_full_name_len &&
	    (r = trace_der_tf_op_event(d, f.op_full_name, f.op_full_name_len, in)) < 0)
		return r;
	if (f.source_len && !(d->have & (1u << DL_SOURCE))) {
		if ((r = trace_der_set_str(&d->tmp, f.source, f.source_len)) < 0)
			return r;
		return trace_der_expand_or_add(d, &d->lines[DL_SOURCE], 0, &d->tmp, NULL, 0, in);
	}
	return 0;
}

int trace_derive_event(struct trace_derive *d, const struct trace_derived_in *in)
{
	int r;

	if (!in->is_kernel) /* memcpy and other stream events derive nothing */
		return d->r;
	if (in->module_len && !(d->have & (1u << DL_MODULE))) {
		/* HloModuleEventName(): "<module>(<program_id>)" */
		if ((r = trace_der_set_str(&d->tmp, in->module, in->module_len)) < 0 ||
		    (in->has_program_id &&
		     (r = xprofs_buf_printf(&d->tmp, "(%" PRIu64 ")", in->program_id)) < 0) ||
		    (r = trace_der_expand_or_add(d, &d->lines[DL_MODULE], 0, &d->tmp, NULL, 0,
						 in)) < 0)
			return r;
	}
	if (in->has_hlo_op) {
		if (!(d->have & (1u << DL_HLO_OP)) && (r = hlo_ops(d, in)) < 0)
			return r;
		if ((r = xla_symbol(d, in)) < 0)
			return r;
	} else if (in->tf_op_len &&
		   (r = trace_der_tf_op_event(d, in->tf_op, in->tf_op_len, in)) < 0) {
		return r; /* IsTfOp(): a framework kernel */
	}
	return d->r;
}

/* ---- a stream's derivation ------------------------------------------------- */

int trace_derive_new(struct xs_rctx *rc, const struct xs_plane *p, const struct xs_line *l,
		     trace_derived_emit_fn emit, void *arg, struct trace_derive **out)
{
	const struct xprofs_hlo_facts *hlo;
	struct trace_derive *d;
	int r = 0;

	*out = NULL;
	if (l->derive_slot < 0 || (p->derived_have & DL_ALL) == DL_ALL)
		return 0;
	if ((r = xs_hlo_facts(rc, &hlo)) < 0)
		return r;
	if (!(d = trace_derive_alloc(emit, arg, l->trace_tid, DER_NAME_MAX + 1, XS_NAME_MAX + 64)))
		return -ENOMEM;
	d->have = p->derived_have;
	d->hlo = hlo;
	if ((r = trace_derive_lod(d, rc)) < 0) {
		trace_derive_free(d);
		return r;
	}
	/* GetDerivedLineName(): "<name> - from #<stream line id>" */
	for (int k = 0; k < DL_COUNT && r == 0; k++)
		if (xs_derived_names[k])
			r = xprofs_buf_printf(&d->lines[k].title, "%s - from #%" PRId64,
					      xs_derived_names[k], l->id);
	/* dependents: a new module closes the open name scopes and XLA ops, a new scope the op */
	d->lines[DL_MODULE].deps = 1u << DL_NAME_SCOPE | 1u << DL_HLO_OP;
	d->lines[DL_NAME_SCOPE].deps = 1u << DL_TF_OP;
	if (r < 0) {
		trace_derive_free(d);
		return r;
	}
	*out = d;
	return 0;
}

/* ---- the annotations of an event (GpuEventStats) ------------------------- */

/* A xs_stat_fn filling struct trace_derived_in (arg) from one event stat. */
static int read_stat(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s, void *arg)
{
	struct trace_derived_in *in = arg;
	struct trace_derive *d = in->d;
	const struct xs_stmd *m;
	bool is_int = s->kind == SV_U64 || s->kind == SV_I64, has = false;
	int r;

	if ((r = xs_md_stat(rc, s->md, &m)) < 0)
		return r;
	if (xs_str_eq(m->name, m->name_len, "kernel_details")) {
		/* IsKernel(): a non-empty kernel_details string */
		if (s->kind == SV_REF) {
			const struct xs_stmd *ref;

			if ((r = xs_md_stat(rc, (int64_t)s->u, &ref)) < 0)
				return r;
			in->is_kernel = ref->name_len > 0;
		} else {
			in->is_kernel = s->kind == SV_STR && s->len > 0;
		}
	} else if (xs_str_eq(m->name, m->name_len, "hlo_op")) {
		if ((r = trace_der_stat_str(rc, c, s, &d->s_op, &in->has_hlo_op)) < 0)
			return r;
	} else if (xs_str_eq(m->name, m->name_len, "tf_op")) {
		if ((r = trace_der_stat_str(rc, c, s, &d->s_tf, &has)) < 0)
			return r;
	} else if (xs_str_eq(m->name, m->name_len, "hlo_module")) {
		if ((r = trace_der_stat_str(rc, c, s, &d->s_mod, &has)) < 0)
			return r;
	} else if (is_int && xs_str_eq(m->name, m->name_len, "program_id")) {
		in->program_id = s->u;
		in->has_program_id = true;
	} else if (is_int && xs_str_eq(m->name, m->name_len, "group_id")) {
		in->group = (int64_t)s->u;
		in->has_group = true;
	}
	return 0;
}

int trace_derive_read(struct trace_derive *d, struct xs_rctx *rc, const struct xs_event *e,
		      xs_ps128 begin, struct trace_derived_in *in)
{
	int r;

	memset(in, 0, sizeof(*in));
	in->d = d;
	xprofs_buf_reset(&d->s_op);
	xprofs_buf_reset(&d->s_mod);
	xprofs_buf_reset(&d->s_tf);
	if (e->has_stats &&
	    (r = xs_walk_stats(rc, &rc->ev, e->stats_off, e->off + e->len - e->stats_off,
			       XEVENT_F_STATS, read_stat, in)) < 0)
		return r;
	in->hlo_op = d->s_op.data ? d->s_op.data : "";
	in->hlo_op_len = d->s_op.len;
	in->module = d->s_mod.data ? d->s_mod.data : "";
	in->module_len = d->s_mod.len;
	in->tf_op = d->s_tf.data ? d->s_tf.data : "";
	in->tf_op_len = d->s_tf.len;
	in->begin = begin;
	in->end = begin + (e->duration_ps > 0 ? e->duration_ps : 0);
	return 0;
}
