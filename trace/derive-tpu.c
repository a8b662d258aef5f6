/*
 * derive-tpu.c - the lines XProf derives on TensorCore planes
 * ("/device:TPU:<n>") from their events' stats: Framework Name Scope and
 * Framework Ops from tf_op (tfop.c), Source code from source, and the
 * host-offload rows (offload.c), over every event of the plane in time
 * order.
 *
 * Sources (openxla/xprof xprof/utils/derived_timeline.cc):
 * DeriveLinesFromStats(), FindTensorCorePlanes(), GetSortedEvents(plane,
 * true); kThreadIdTfNameScope, kThreadIdTfOp, kThreadIdSource from TSL
 * xplane_schema.
 *
 * Design: one walk of a merge over the plane's lines (derive-merge.c),
 * feeding the line builders (derive-builder.c); an event metadata's stats
 * are read once (a cache whose strings take at most TPU_ARENA_MAX bytes),
 * then each event's own. A slice walks from a lookback before its window
 * when a dry walk shows that to be exact (trace_derive_tpu()), else from the
 * plane's start.
 *
 * Limits: planes of at most DER_TPU_LINES lines with events (one cursor
 * each); a derived line id the plane already holds is not derived again;
 * asynchronous events (_a) are left out.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "derived.h"

/* What DeriveLinesFromStats() reads of one event: its metadata's stats, then its own. */
struct tpu_in {
	struct trace_derive *d; /* its s_tf and s_mod hold tf_op and source ("" when absent) */
	bool has_group;
	int64_t group;
	uint64_t is_async;
};

/* A stat's IntOrUintValue(): the integer, 0 for other kinds (as a protobuf oneof reads). */
static uint64_t int_or_uint(const struct xs_statv *s)
{
	return s->kind == SV_U64 || s->kind == SV_I64 ? s->u : 0;
}

/* A xs_stat_fn: tf_op, source, group_id and _a of one stat (arg: struct tpu_in); last wins. */
static int tpu_stat(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s, void *arg)
{
	struct tpu_in *t = arg;
	const struct xs_stmd *m;
	bool has;
	int r;

	if ((r = xs_md_stat(rc, s->md, &m)) < 0)
		return r;
	/*
	 * kTfOp, kSourceInfo: StrOrRefValue(), "" for another kind; an empty
	 * string derives nothing, so only the strings (s_tf, s_mod) are kept.
	 */
	if (xs_str_eq(m->name, m->name_len, "tf_op")) {
		xprofs_buf_reset(&t->d->s_tf);
		return trace_der_stat_str(rc, c, s, &t->d->s_tf, &has);
	}
	if (xs_str_eq(m->name, m->name_len, "source")) {
		xprofs_buf_reset(&t->d->s_mod);
		return trace_der_stat_str(rc, c, s, &t->d->s_mod, &has);
	}
	if (xs_str_eq(m->name, m->name_len, "group_id")) { /* kGroupId */
		t->group = (int64_t)int_or_uint(s);
		t->has_group = true;
	} else if (xs_str_eq(m->name, m->name_len, "_a")) { /* kIsAsync */
		t->is_async = int_or_uint(s);
	}
	return 0;
}

/*
 * What an event metadata's stats give (struct tpu_in without the strings,
 * which sit in the derivation's arena): read once per metadata, since every
 * event of an op repeats them.
 */
struct tpu_md {
	bool done, has_group;
	int64_t group;
	uint64_t is_async;
	size_t tf_off, tf_len, src_off, src_len;
};
#define TPU_ARENA_MAX ((size_t)32 << 20) /* past this, metadata are read for every event */

struct tpu_cache {
	struct tpu_md *md; /* parallel to the plane's event metadata index */
	size_t n;
	struct xprofs_buf arena;
};

/*
 * The stats of event metadata @key of the current plane into @t (none when
 * the plane has no such entry), from @tc when read before.
 */
static int tpu_md_stats(struct xs_rctx *rc, struct tpu_cache *tc, int64_t key, struct tpu_in *t)
{
	const struct xs_mdix *ix = &rc->x->planes[rc->plane].ev;
	ssize_t k = xs_md_find(ix, key);
	struct tpu_md *m;
	int r;

	if (k < 0)
		return 0;
	m = (size_t)k < tc->n ? &tc->md[k] : NULL;
	if (m && m->done) {
		t->has_group = m->has_group;
		t->group = m->group;
		t->is_async = m->is_async;
		if ((r = trace_der_set_str(&t->d->s_tf, tc->arena.data + m->tf_off, m->tf_len)) < 0)
			return r;
		return trace_der_set_str(&t->d->s_mod, tc->arena.data + m->src_off, m->src_len);
	}
	r = trace_md_entry_stats(rc, (size_t)k, tpu_stat, t);
	if (r < 0 || !m || tc->arena.len + t->d->s_tf.len + t->d->s_mod.len + 2 > TPU_ARENA_MAX)
		return r;
	*m = (struct tpu_md){.done = true,
			     .has_group = t->has_group,
			     .group = t->group,
			     .is_async = t->is_async,
			     .tf_off = tc->arena.len,
			     .tf_len = t->d->s_tf.len};
	if (xprofs_buf_add(&tc->arena, t->d->s_tf.data ? t->d->s_tf.data : "", m->tf_len) < 0 ||
	    xprofs_buf_add(&tc->arena, "", 0) < 0) {
		m->done = false;
		return 0; /* no room: read again next time */
	}
	m->src_off = tc->arena.len;
	m->src_len = t->d->s_mod.len;
	if (xprofs_buf_add(&tc->arena, t->d->s_mod.data ? t->d->s_mod.data : "", m->src_len) < 0)
		m->done = false;
	return 0;
}

/* Whether an open derived event of @d began before @t (it may still grow into a slice). */
static bool open_before(const struct trace_derive *d, xs_ps128 t)
{
	for (int k = 0; k < DL_COUNT; k++)
		for (int i = 0; i < DER_LEVELS; i++)
			if (d->lines[k].lv[i].open && d->lines[k].lv[i].begin < t)
				return true;
	return false;
}

/* Whether @l has the id of derived line @k on a TensorCore plane. */
static bool tpu_tid_is(const struct xs_line *l, int k)
{
	return trace_der_tpu_tid_offset[k] &&
	       (int32_t)l->id == TID_DERIVED_MIN + (int32_t)trace_der_tpu_tid_offset[k];
}

/* The derived line ids a TensorCore plane already holds (bit per DL_*): not derived again. */
static uint8_t tpu_have(const struct xprofs_xspace *x, const struct xs_plane *p)
{
	/* only these three are derived here */
	return xs_plane_derived_have(x, p, tpu_tid_is) |
	       (uint8_t)(1u << DL_MODULE | 1u << DL_HLO_OP);
}

/* One event of the merge: ProcessTfOpEvent() of its tf_op, its source on Source code. */
static int tpu_event(struct xs_rctx *rc, struct tpu_cache *tc, struct der_src *src, xs_ps128 begin,
		     struct trace_derive *d)
{
	struct tpu_in t = {.d = d};
	struct trace_derived_in in;
	int r;

	xprofs_buf_reset(&d->s_tf);
	xprofs_buf_reset(&d->s_mod);
	if ((r = tpu_md_stats(rc, tc, src->ev.md, &t)) < 0)
		return r;
	if (src->ev.has_stats && (r = xs_walk_stats(rc, &src->c, src->ev.stats_off,
						    src->ev.off + src->ev.len - src->ev.stats_off,
						    XEVENT_F_STATS, tpu_stat, &t)) < 0)
		return r;
	if (t.is_async) /* asynchronous events are left out */
		return 0;
	memset(&in, 0, sizeof(in));
	in.d = d;
	in.has_group = t.has_group;
	in.group = t.group;
	in.begin = begin;
	in.end = begin + (src->ev.duration_ps > 0 ? src->ev.duration_ps : 0);
	if (d->s_tf.len) {
		/* trace_der_tf_op_event() overwrites d->tmp only: the source string is in s_mod */
		if ((r = trace_der_tf_op_event(d, d->s_tf.data, d->s_tf.len, &in)) < 0)
			return r;
	}
	if (d->s_mod.len && !(d->have & (1u << DL_SOURCE))) {
		if ((r = trace_der_set_str(&d->tmp, d->s_mod.data, d->s_mod.len)) < 0 ||
		    (r = trace_der_expand_or_add(d, &d->lines[DL_SOURCE], 0, &d->tmp, NULL, 0,
						 &in)) < 0)
			return r;
	}
	if (d->off && (r = trace_offload_event(rc, d, src, in.begin, in.end)) < 0)
		return r;
	return d->r;
}

/*
 * One walk of trace_derive_tpu(): from the plane's start, or (@from_ps > the
 * minimum) from each line's checkpoint before @from_ps (a lookback walk);
 * @dry: emit nothing, set *@inexact when an unsure event would overlap the
 * slice's window.
 */
static int tpu_walk(struct xs_rctx *rc, const struct xs_plane *p, size_t n, uint8_t have,
		    bool offload, trace_derived_emit_fn emit,
		    int (*after)(void *arg, const struct trace_derive *d), void *arg, bool lookback,
		    xs_ps128 from_ps, bool dry, bool *inexact)
{
	struct der_src *src = NULL;
	struct trace_derive *d = NULL;
	struct tpu_cache tc = {0};
	size_t k = 0;
	int r = 0;

	xprofs_buf_init(&tc.arena, TPU_ARENA_MAX);
	tc.n = p->ev.n;
	if (!(d = trace_derive_alloc(emit, arg, (uint32_t)TID_DERIVED_MIN, 1, 64)) ||
	    !(src = calloc(n, sizeof(*src))) ||
	    !(tc.md = calloc(tc.n ? tc.n : 1, sizeof(*tc.md)))) {
		r = -ENOMEM;
		goto out;
	}
	d->tpu = true;
	d->have = have;
	d->lookback = lookback;
	d->dry = dry;
	if (rc->win)
		trace_derive_window(d, rc->win_from, rc->win_to);
	if ((r = trace_derive_lod(d, rc)) < 0)
		goto out;
	for (int kk = 0; kk < DL_COUNT; kk++) {
		struct der_line *dl = &d->lines[kk];

		for (int i = 0; i < DER_LEVELS; i++)
			dl->fresh[i] = lookback; /* what came before is unknown */
		/* the plain line names: first_derived_line_id is kThreadIdTfNameScope */
		if (r == 0 && xs_derived_names[kk])
			r = xprofs_buf_adds(&dl->title, xs_derived_names[kk]);
	}
	d->lines[DL_NAME_SCOPE].deps = 1u << DL_TF_OP;
	if (r == 0 && offload && !(d->off = trace_offload_new()))
		r = -ENOMEM;
	if (r < 0 || (r = trace_merge_open(rc, p, src, &k, lookback, from_ps)) < 0)
		goto out;
	for (;;) { /* GetSortedEvents(plane, true) */
		xs_ps128 bs = 0;
		struct der_src *best = trace_merge_next(src, k, &bs);

		if (!best || (d->win && bs >= d->to && !open_before(d, d->to) &&
			      !trace_offload_pending_before_to(d)))
			break; /* a slice: later events change nothing it shows */
		if ((r = tpu_event(rc, &tc, best, bs, d)) < 0 || (r = trace_merge_step(best)) < 0 ||
		    (!dry && after && (r = after(arg, d)) < 0))
			goto out;
		xs_md_gc(rc);
	}
	/* xprof resets the name scopes (and so Framework Ops) at the end, not Source code */
	trace_der_reset(d, &d->lines[DL_NAME_SCOPE], 0);
	r = trace_derive_finish(d);
	if (inexact)
		*inexact = d->inexact;
out:
	trace_merge_close(src, k);
	free(src);
	free(tc.md);
	xprofs_buf_deinit(&tc.arena);
	trace_derive_free(d);
	return r;
}

/* A slice looks this far before its window (at least), as a multiple of its length. */
#define TPU_LOOKBACK_WINDOWS 2
#define TPU_LOOKBACK_MIN_PS ((xs_ps128)1000000000) /* 1 ms */

/*
 * A slice does not walk the plane from its start. It walks from each line's
 * checkpoint before (window start - lookback), where nothing earlier ends
 * later, marking the derived events that the whole walk might have made
 * differently (an event that may continue one begun before the lookback,
 * and what follows from it: struct der_ev's unsure, struct der_line's
 * fresh). A dry run says whether any such event overlaps the window; if
 * none does, the lookback walk's output is the whole walk's, and it is
 * written; otherwise the plane is walked from its start.
 */
int trace_derive_tpu(struct xs_rctx *rc, size_t pi, trace_derived_emit_fn emit,
		     int (*after)(void *arg, const struct trace_derive *d), void *arg)
{
	const struct xs_plane *p = &rc->x->planes[pi];
	size_t n = 0;
	uint8_t have;
	bool inexact = true, offload = false;
	int r;

	if (rc->x->grouped) /* IsXSpaceGrouped(): XProf derives nothing */
		return 0;
	if ((r = xs_plane_enter(rc, pi)) < 0 || !xs_plane_is_tensor_core(p))
		return r;
	if ((r = trace_offload_wanted(rc, p, &offload)) < 0)
		return r;
	if ((have = tpu_have(rc->x, p)) == DL_ALL && !offload)
		return 0;
	for (size_t j = 0; j < p->n_lines; j++)
		if (rc->x->lines[p->first_line + j].msg.len)
			n++;
	if (n == 0 || n > DER_TPU_LINES) /* one cursor per line */
		return 0;
	/* a start's pairing needs every start before it: host-offload rows take the whole walk */
	if (rc->win && !rc->x->tracks_only && !offload) {
		xs_ps128 len = rc->win_to - rc->win_from, back = len * TPU_LOOKBACK_WINDOWS;
		xs_ps128 from =
			rc->win_from - (back > TPU_LOOKBACK_MIN_PS ? back : TPU_LOOKBACK_MIN_PS);

		if ((r = tpu_walk(rc, p, n, have, false, emit, after, arg, true, from, true,
				  &inexact)) < 0)
			return r;
		if (!inexact)
			return tpu_walk(rc, p, n, have, false, emit, after, arg, true, from, false,
					NULL);
	}
	return tpu_walk(rc, p, n, have, offload, emit, after, arg, false, 0, false, NULL);
}
