/*
 * derive-builder.c - the merging every derived line shares (XProf's
 * DerivedXLineBuilder) and a derivation's life: the line ids its events go
 * out with, its window, its end, its memory; and the strings of stats that
 * derived events are named from.
 *
 * Sources (openxla/xprof xprof/utils/derived_timeline.cc):
 * DerivedXLineBuilder::ExpandOrAddLevelEvent() / ExpandOrAddEvents() /
 * ResetLastEvents() / AdjustDurationForTraceViewer(); the derived line ids
 * from TSL trace_utils.h and xplane_schema.cc.
 *
 * Design: each derived line keeps one open event per nesting level (at most
 * DER_LEVELS); an event goes out through the caller's emit function when
 * XProf's builder would stop changing it. The builders are fed by a GPU
 * stream's derivation (derive-gpu.c), a plane's Steps (derive-steps.c), a
 * TensorCore plane's lines (derive-tpu.c) and the framework ops of both
 * (tfop.c); a derivation owns its host-offload rows (offload.c) and frees
 * them with itself.
 *
 * Limits: names (and the stat strings they come from) are cut at
 * DER_NAME_MAX bytes; levels deeper than DER_LEVELS are dropped.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "derived.h"

/* ---- line ids ------------------------------------------------------------- */

/*
 * The derived lines' display ids follow the stream's, in id order: Framework
 * Name Scope +1, Framework Ops +2, XLA Modules +3, XLA Ops +4, Source code +5.
 */
static const uint32_t tid_offset[DL_COUNT + 1] = {
	[DL_NAME_SCOPE] = 1, [DL_TF_OP] = 2, [DL_MODULE] = 3, [DL_HLO_OP] = 4, [DL_SOURCE] = 5};
/*
 * A TensorCore plane's derived lines keep their line ids (no display id):
 * kThreadIdTfNameScope, kThreadIdTfOp and kThreadIdSource, from kThreadIdDerivedMin.
 */
const uint32_t trace_der_tpu_tid_offset[DL_COUNT + 1] = {
	[DL_NAME_SCOPE] = 2, [DL_TF_OP] = 3, [DL_SOURCE] = 7};

/* ---- merging (DerivedXLineBuilder) ----------------------------------------- */

void trace_der_lv_close(struct trace_derive *d, struct der_line *dl, int level)
{
	struct der_ev *v = &dl->lv[level];

	if (!v->open)
		return;
	v->open = false;
	if (d->r < 0)
		return;
	if (d->win && !(v->begin < d->to && (v->end > v->begin ? v->end : v->begin + 1) > d->from))
		return; /* a slice keeps what overlaps its window */
	if (d->dry) {
		if (v->unsure)
			d->inexact = true;
		return;
	}
	if (!trace_derive_lod_keep(d, dl->kind, level, v->begin, v->end))
		return; /* a level-of-detail trace keeps what its resolution tells apart */
	{
		struct trace_derived_ev e = {
			.kind = dl->kind,
			.tid = d->tid0 + (d->tpu ? trace_der_tpu_tid_offset : tid_offset)[dl->kind],
			.line_name = dl->title.data,
			.line_name_len = dl->title.len,
			.name = v->name.data ? v->name.data : "",
			.name_len = v->name.len,
			.disp = v->disp.data ? v->disp.data : "",
			.disp_len = v->disp.len,
			.has_group = v->has_group,
			.group = v->group,
			.begin = v->begin,
			.end = v->end,
		};
		int r = d->emit(d->arg, &e);

		if (r < 0)
			d->r = r;
	}
}

/* AdjustDurationForTraceViewer(): equal spans of a stack shrink by 1 ns per level. */
static void adjust(struct der_line *dl, int level)
{
	int top = level;
	int64_t max_shrink, shrink = 0;
	xs_ps128 lb = 0, le = 0;
	bool have = false;

	bool unsure = false;

	if (level >= DER_LEVELS || !dl->lv[level].open)
		return;
	while (top < DER_LEVELS && dl->lv[top].open)
		unsure |= dl->lv[top++].unsure;
	top--;
	if (top <= level)
		return;
	if (unsure) /* equal spans decide the shrink: one unsure span makes the stack unsure */
		for (int i = level; i <= top; i++)
			dl->lv[i].unsure = true;
	max_shrink = (int64_t)((dl->lv[top].end - dl->lv[top].begin) / 1000) - 1;
	for (int i = level; i <= top; i++) {
		struct der_ev *v = &dl->lv[i];

		if (shrink < max_shrink && have && lb == v->begin && le == v->end)
			shrink++;
		lb = v->begin, le = v->end, have = true;
		if (shrink) {
			v->end -= (xs_ps128)shrink * 1000;
			if (v->end < v->begin)
				v->end = v->begin;
		}
	}
}

/*
 * ResetLastEvents(): close @level and deeper; level 0 also resets the
 * dependent lines. In a lookback walk (see trace_derive_tpu()) a @sure reset
 * is one the whole walk makes too, so those levels are empty in both after
 * it; an unsure one (the whole walk may have expanded instead) leaves the
 * whole walk's state there unknown.
 */
static void reset_as(struct trace_derive *d, struct der_line *dl, int level, bool sure)
{
	adjust(dl, level);
	for (int i = level; i < DER_LEVELS; i++) {
		trace_der_lv_close(d, dl, i);
		dl->fresh[i] = d->lookback && !sure;
	}
	if (level == 0)
		for (int k = 0; k < DL_COUNT; k++)
			if (dl->deps & (1u << k))
				reset_as(d, &d->lines[k], 0, sure);
}

void trace_der_reset(struct trace_derive *d, struct der_line *dl, int level)
{
	reset_as(d, dl, level, true);
}

int trace_der_set_str(struct xprofs_buf *b, const char *s, size_t n)
{
	xprofs_buf_reset(b);
	if (n > DER_NAME_MAX)
		n = DER_NAME_MAX;
	return n ? xprofs_buf_add(b, s, n) : 0;
}

/*
 * ExpandOrAddLevelEvent(): an equal name and group_id expand the open event;
 * on other than GPU planes (d->tpu) an event without a group_id expands it
 * only when it starts within twice the open event's duration after its end.
 */
int trace_der_expand_or_add(struct trace_derive *d, struct der_line *dl, int level,
			    const struct xprofs_buf *name, const char *disp, size_t disp_len,
			    const struct trace_derived_in *in)
{
	struct der_ev *v;
	int r;

	if (level >= DER_LEVELS)
		return 0;
	v = &dl->lv[level];
	bool same = v->open && v->has_group == in->has_group &&
		    (!in->has_group || v->group == in->group) && v->name.len == name->len &&
		    !memcmp(v->name.data, name->data, name->len);
	if (same && (!d->tpu || in->has_group || v->end + 2 * (v->end - v->begin) >= in->begin)) {
		if (in->begin < v->begin)
			v->begin = in->begin;
		if (in->end > v->end)
			v->end = in->end;
		return 0;
	}
	/*
	 * A lookback walk: a new event where the whole walk's state is unknown,
	 * or one that the gap test made from an unsure event (the whole walk's
	 * copy started earlier, so is longer and may have been expanded), is
	 * unsure, and so is what the whole walk may still hold below it.
	 */
	bool unsure = d->lookback && (dl->fresh[level] || (same && v->unsure));
	reset_as(d, dl, level, !unsure);
	v->unsure = unsure;
	dl->fresh[level] = false; /* both walks now hold an event of this name here */
	if ((r = trace_der_set_str(&v->name, name->data, name->len)) < 0 ||
	    (r = trace_der_set_str(&v->disp, disp, disp_len)) < 0)
		return r;
	v->open = true;
	v->has_group = in->has_group;
	v->group = in->group;
	v->begin = in->begin;
	v->end = in->end;
	return 0;
}

/* ---- a derivation's window, end and memory ---------------------------------- */

void trace_derive_window(struct trace_derive *d, xs_ps128 from, xs_ps128 to)
{
	d->win = true;
	d->from = from;
	d->to = to;
}

int trace_derive_lod(struct trace_derive *d, const struct xs_rctx *rc)
{
	if (!rc->lod || !rc->lod_res)
		return 0;
	d->lod_res = rc->lod_res;
	if (!(d->lod_lv = calloc((size_t)DL_KINDS * DER_LEVELS, sizeof(*d->lod_lv))))
		return -ENOMEM;
	return 0;
}

struct trace_derive *trace_derive_alloc(trace_derived_emit_fn emit, void *arg, uint32_t tid0,
					size_t op_max, size_t title_max)
{
	struct trace_derive *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->emit = emit;
	d->arg = arg;
	d->tid0 = tid0;
	xprofs_buf_init(&d->tmp, 2 * DER_NAME_MAX + 64);
	xprofs_buf_init(&d->s_op, op_max);
	xprofs_buf_init(&d->s_mod, DER_NAME_MAX + 1);
	xprofs_buf_init(&d->s_tf, DER_NAME_MAX + 1);
	xprofs_buf_init(&d->disp, DER_NAME_MAX + 1);
	for (int k = 0; k < DL_COUNT; k++) {
		struct der_line *dl = &d->lines[k];

		dl->kind = k;
		xprofs_buf_init(&dl->title, title_max);
		for (int i = 0; i < DER_LEVELS; i++) {
			xprofs_buf_init(&dl->lv[i].name, DER_NAME_MAX + 1);
			xprofs_buf_init(&dl->lv[i].disp, DER_NAME_MAX + 1);
		}
	}
	return d;
}

int trace_derive_finish(struct trace_derive *d)
{
	/* XProf does not reset the builders at the end: no duration adjustment here */
	for (int k = 0; k < DL_COUNT; k++)
		for (int i = 0; i < DER_LEVELS; i++)
			trace_der_lv_close(d, &d->lines[k], i);
	return d->r;
}

void trace_derive_free(struct trace_derive *d)
{
	if (!d)
		return;
	xprofs_buf_deinit(&d->tmp);
	xprofs_buf_deinit(&d->s_op);
	xprofs_buf_deinit(&d->s_mod);
	xprofs_buf_deinit(&d->s_tf);
	xprofs_buf_deinit(&d->disp);
	trace_offload_free(d->off);
	free(d->lod_lv);
	for (int k = 0; k < DL_COUNT; k++) {
		xprofs_buf_deinit(&d->lines[k].title);
		for (int i = 0; i < DER_LEVELS; i++) {
			xprofs_buf_deinit(&d->lines[k].lv[i].name);
			xprofs_buf_deinit(&d->lines[k].lv[i].disp);
		}
	}
	free(d);
}

/* ---- stat strings (GpuEventStats, DeriveLinesFromStats) ------------------- */

/* The string of stat @s (str or ref; compressed or other kinds: none) into @b. */
int trace_der_stat_str(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s,
		       struct xprofs_buf *b, bool *has)
{
	const char *p;
	size_t n;
	int r;

	if ((r = xs_stat_str_at(rc, c, s, DER_NAME_MAX, &p, &n)) <= 0)
		return r;
	*has = true;
	return trace_der_set_str(b, p, n);
}
