/*
 * pftrace-events.c - trace.pftrace's lines: each shown line a packet
 * sequence of its own, an XSpace complete event a SLICE_BEGIN at its start
 * and a SLICE_END at its end (ns), with trace.json's name, args and flows on
 * the BEGIN; a counter line's events TYPE_COUNTER values. A line XProf
 * derives GPU lines from feeds its derivation as its events pass
 * (pftrace-derived.c writes what comes out); async events are held back
 * (pftrace-async.c).
 *
 * Design: the trace model (trace-model.c) decides, as for trace.json, which
 * events and stats are shown and how they are named. An event's metadata is
 * named and its args encoded once (pftrace-args.c), then copied into each
 * of its events; the event's own stats are walked once into annotations,
 * their names interned on the line's sequence. Slices are placed on the
 * line's tracks by pftrace-tracks.c. A level-of-detail render (rc->lod)
 * asks lod.c about each event first, its flow read without interning.
 *
 * Limits: an event that fits no track of its line is dropped and counted
 * (the names its stats defined still go out); a slice walks a deriving line whole (its
 * derived events are the whole trace's) and keeps what overlaps its window.
 */
#include <string.h>

#include "derived.h"
#include "pftrace.h"

/* A xs_stat_fn keeping the first numeric stat (counter value). */
static int counter_stat(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s, void *arg)
{
	struct trace_pf_line *pl = arg;

	(void)rc, (void)c;
	if (pl->has_cval)
		return 0;
	switch (s->kind) {
	case SV_DOUBLE:
		pl->cval = s->d;
		break;
	case SV_I64:
		pl->cval = (double)(int64_t)s->u;
		break;
	case SV_U64:
		pl->cval = (double)s->u;
		break;
	default:
		return 0;
	}
	pl->has_cval = true;
	return 0;
}

/* A counter line's event: TYPE_COUNTER with the first numeric stat. */
static int counter_event(struct xs_rctx *rc, struct trace_pf_line *pl, const struct xs_event *e,
			 uint64_t ns)
{
	struct pbw *te = &pl->c->te;
	uint64_t bits;
	int r;

	pl->has_cval = false;
	pl->cval = 0;
	if (e->has_stats &&
	    (r = xs_walk_stats(rc, &rc->ev, e->stats_off, e->off + e->len - e->stats_off,
			       XEVENT_F_STATS, counter_stat, pl)) < 0)
		return r;
	trace_pf_need_track(pl, 0);
	pbw_reset(te);
	pbw_u64(te, F_TE_TYPE, TYPE_COUNTER);
	memcpy(&bits, &pl->cval, sizeof(bits));
	pbw_fixed64(te, F_TE_DCOUNTER, bits);
	trace_pf_emit_event(pl->c, &pl->s, ns, te, NULL);
	return 0;
}

/*
 * Walk @e's stats: its annotations to c->evann (names interned on sequence
 * @seq, new ones defined in c->id, for PF_EVENT; all inline for PF_INLINE).
 */
static int event_info(struct trace_pf_ctx *c, const struct xs_event *e, const struct trace_md *t,
		      struct trace_pf_evinfo *v, enum trace_pf_mode mode, uint32_t seq)
{
	struct xs_rctx *rc = c->rc;
	struct trace_pf_evstats es = {
		.A = c->A, .mode = mode, .seq = seq, .ann = &c->evann, .id = &c->id};
	int r;

	memset(v, 0, sizeof(*v));
	c->ev.len = 0;
	pbw_reset(&c->evann);
	es.a.o = &c->ev;
	es.a.first = true;
	if (t) {
		es.a.flow = t->flow, es.a.has_flow = t->has_flow;
		es.a.group = t->group, es.a.has_group = t->has_group;
		es.a.is_async = t->is_async;
	}
	if (e->has_stats &&
	    (r = xs_walk_stats(rc, &rc->ev, e->stats_off, e->off + e->len - e->stats_off,
			       XEVENT_F_STATS, trace_pf_event_stat, &es)) < 0)
		return r;
	xs_trace_xflows(rc->x, &rc->x->planes[c->pl->l->plane], &es.a);
	v->a = es.a;
	if ((r = c->ev.r) < 0)
		return r;
	if (v->a.has_step) {
		v->step = c->ev.buf + v->a.step_off;
		v->step_len = v->a.step_len;
	} else if (t && t->step_len) {
		v->step = t->args + t->step_off;
		v->step_len = t->step_len;
	}
	v->f = trace_xflow_decode(v->a.flow);
	return 0;
}

/* The name (@v's rename or @m's) and args of an event into c->te, all inline (async). */

/*
 * The threadpool regions (regions.c) that come before an event at @ts of
 * duration @dur (@all: every one left): slices "ThreadpoolListener::Region"
 * on the line's tracks, each ending its flow, no args (trace.json's).
 */
static int regions_before(struct trace_pf_line *pl, bool all, xs_ps128 ts, int64_t dur)
{
	static const char name[] = TRACE_REGION_NAME;
	struct trace_pf_ctx *c = pl->c;
	const struct trace_region *g;
	struct pbw *te = &c->te;
	int r;

	while ((g = trace_regions_next(pl->regions, all, ts, dur))) {
		struct trace_acc a = {0};
		int64_t d = g->e - g->b;
		uint64_t b = trace_pf_ns(g->b), en = trace_pf_ns((xs_ps128)g->b + (d > 0 ? d : 1));
		struct trace_xflow f;
		uint64_t iid;
		size_t k;

		trace_region_acc(c->rc->x, &c->rc->x->planes[pl->l->plane], g, &a);
		f = trace_xflow_decode(a.flow);
		trace_pf_need_track(pl, 0);
		if ((k = trace_pf_place(pl, &b, &en)) == LEVELS_MAX)
			continue; /* counted */
		pbw_reset(te);
		pbw_reset(&c->id);
		pbw_u64(te, F_TE_TYPE, TYPE_BEGIN);
		if (k)
			pbw_u64(te, F_TE_TRACK, pl->uuid + k);
		iid = trace_pf_event_name(c->A, name, sizeof(name) - 1, pl->s.id, &c->id);
		if (iid)
			pbw_u64(te, F_TE_NAME_IID, iid);
		else
			pbw_str(te, F_TE_NAME, name, sizeof(name) - 1);
		pbw_fixed64(te, F_TE_TFLOW, (((uint64_t)f.cat << 56) | f.id) + 1);
		if ((r = trace_pf_err(c)) < 0)
			return r;
		trace_pf_emit_event(c, &pl->s, b, te, &c->id);
		pl->lv[k].end[pl->lv[k].n++] = en;
	}
	return xs_out_flush(c->o, false);
}

/* Whether a level-of-detail trace shows event @e of @pl's line: 1 yes, 0 no, or -errno. */
static int lod_keep(struct xs_rctx *rc, struct trace_pf_line *pl, const struct xs_event *e,
		    const struct xs_evmd *m, const struct trace_md *t, xs_ps128 ts, int64_t dur)
{
	struct trace_xflow f;
	int r;

	if (pl->counters)
		return trace_lod_counter(&pl->c->lod, m->name, m->name_len, ts);
	if ((r = trace_event_flow(rc, e, t, &rc->x->planes[pl->l->plane], &f)) < 0)
		return r;
	return trace_lod_event(&pl->c->lod, &pl->lod, ts, dur, f.dir != XFLOW_NONE ? &f : NULL);
}

/* A xs_event_fn writing one event of a line (arg: struct trace_pf_line). */
static int trace_pf_event(struct xs_rctx *rc, const struct xs_event *e, struct xs_evmd *m,
			  void *arg)
{
	struct trace_pf_line *pl = arg;
	struct trace_pf_ctx *c = pl->c;
	const struct trace_md *t = trace_md(m);
	xs_ps128 ts = (xs_ps128)pl->l->timestamp_ns * 1000 + (e->has_num ? 0 : e->offset_ps);
	int64_t dur = e->duration_ps > 0 ? e->duration_ps : 1;
	struct pbw *te = &c->te, *id = &c->id;
	struct trace_pf_evinfo v;
	struct trace_pf_md *md;
	uint64_t b, en;
	size_t k;
	int r;

	if (pl->derive) {
		xs_ps128 start = (xs_ps128)pl->l->timestamp_ns * 1000 + e->offset_ps;
		struct trace_derived_in in;

		if ((r = trace_derive_read(pl->derive, rc, e, start, &in)) < 0 ||
		    (r = trace_derive_event(pl->derive, &in)) < 0 ||
		    (r = trace_pf_derived_flush(c, pl->derive)) < 0)
			return r;
		if (pl->win && !(start < rc->win_to && start + dur > rc->win_from))
			return 0; /* the slice's rule (render.c win_test) */
	}
	if (pl->regions && (r = regions_before(pl, false, ts, e->duration_ps)) < 0)
		return r;
	if (t && t->internal)
		return 0;
	if (c->lod.on && (r = lod_keep(rc, pl, e, m, t, ts, dur)) <= 0)
		return r;
	if (pl->counters) {
		b = trace_pf_ns(ts);
		if (b < pl->last_ns)
			b = pl->last_ns;
		pl->last_ns = b;
		if ((r = counter_event(rc, pl, e, b)) < 0)
			return r;
		return xs_out_flush(c->o, false);
	}
	trace_pf_need_track(pl, 0);
	pbw_reset(id);
	if ((r = event_info(c, e, t, &v, PF_EVENT, pl->s.id)) < 0)
		return r;
	if (v.a.has_flow && v.a.is_async && v.f.dir != XFLOW_NONE) {
		/* held back for another sequence: names this one now has go out alone */
		if (id->len)
			trace_pf_emit_msg(c, &pl->s, F_PK_INTERNED, id);
		pbw_reset(id);
		if ((r = event_info(c, e, t, &v, PF_INLINE, 0)) < 0)
			return r;
		if ((r = trace_pf_async_hold(c, m, &v, ts, dur, e->duration_ps)) != 0)
			return r < 0 ? r : 0;
	}
	b = trace_pf_ns(ts);
	en = trace_pf_ns(ts + dur);
	k = trace_pf_place(pl, &b, &en);
	if (k == LEVELS_MAX) { /* dropped; the names its stats defined still go out */
		if (id->len)
			trace_pf_emit_msg(c, &pl->s, F_PK_INTERNED, id);
		return 0;
	}
	if ((r = trace_pf_md_get(c->A, rc, e->md, m, &md)) < 0)
		return r;
	pbw_reset(te);
	pbw_u64(te, F_TE_TYPE, TYPE_BEGIN);
	if (k)
		pbw_u64(te, F_TE_TRACK, pl->uuid + k);
	if (v.step) {
		size_t n = trace_pf_json_unescape(v.step, v.step_len, &c->name);

		pbw_str(te, F_TE_NAME, c->name.buf, n);
	} else {
		pbw_u64(te, F_TE_NAME_IID, md->name_iid);
	}
	trace_pf_md_define(c->A, md, m, m->name, m->name_len, pl->s.id, id);
	if (v.a.has_group)
		trace_pf_arg_int(c->A, "group_id", 8, v.a.group, PF_EVENT, pl->s.id, te, id);
	if (md->inline_args && t && t->args_len)
		trace_pf_args_encode(c->A, t->args, t->args_len, PF_EVENT, pl->s.id, 0, te, id);
	else
		pbw_bytes(te, trace_pf_md_blob(c->A, md), md->blob_len);
	pbw_bytes(te, c->evann.buf, c->evann.len);
	if (v.a.has_flow && !v.a.is_async && v.f.dir != XFLOW_NONE)
		/* flow_out starts (or continues) a flow, flow_in ends it */
		pbw_fixed64(te, v.f.dir == XFLOW_IN ? F_TE_TFLOW : F_TE_FLOW,
			    (((uint64_t)v.f.cat << 56) | v.f.id) + 1);
	if ((r = trace_pf_err(c)) < 0)
		return r;
	trace_pf_emit_event(c, &pl->s, b, te, id);
	pl->lv[k].end[pl->lv[k].n++] = en;
	return xs_out_flush(c->o, false);
}

/* The events of line @li of process @pid as a sequence of their own. */
int trace_pf_line(struct trace_pf_ctx *c, struct trace_pf_line *pl, uint32_t pid, size_t li)
{
	struct xs_rctx *rc = c->rc;
	enum trace_tline kind;
	int r;

	memset(pl, 0, sizeof(*pl));
	pl->c = c;
	pl->l = &rc->x->lines[li];
	kind = trace_line_kind(pl->l);
	if (kind == TL_SKIP)
		return 0;
	pl->counters = kind == TL_COUNTERS;
	pl->pid = pid;
	pl->tid = trace_tid(pl->l);
	pl->uuid = ((uint64_t)(li + 1) << 8);
	if (c->regions_on && kind == TL_THREAD) {
		if ((r = trace_regions_collect(rc, li, &c->regions)) < 0)
			return r;
		pl->regions = c->regions.n ? &c->regions : NULL;
	}
	if (kind == TL_THREAD && (r = trace_derive_new(rc, &rc->x->planes[pl->l->plane], pl->l,
						       trace_pf_derived_emit, c, &pl->derive)) < 0)
		return r;
	if (!pl->derive) {
		if ((r = xs_line_each(rc, li, NULL, trace_pf_event, pl)) < 0 ||
		    (pl->regions && (r = regions_before(pl, true, 0, 0)) < 0))
			return r;
		trace_pf_close_until(pl, UINT64_MAX);
		return xs_out_flush(c->o, false);
	}
	/* derived events are built from the whole line: a slice walks it all, filtering in trace_pf_event */
	for (int k = 0; k < DL_COUNT; k++)
		trace_pf_dline_start(&c->dl[k], c, pl->l, pid,
				     pl->uuid + LEVELS_MAX * (uint64_t)(k + 1));
	pl->win = rc->win;
	if (pl->win)
		trace_derive_window(pl->derive, rc->win_from, rc->win_to);
	rc->win = false;
	r = xs_line_each(rc, li, NULL, trace_pf_event, pl);
	rc->win = pl->win;
	if (r == 0 && pl->regions)
		r = regions_before(pl, true, 0, 0);
	if (r == 0)
		r = trace_derive_finish(pl->derive);
	trace_derive_free(pl->derive);
	pl->derive = NULL;
	if (r == 0)
		trace_pf_close_until(pl, UINT64_MAX);
	for (int k = 0; k < DL_COUNT && r == 0; k++)
		r = trace_pf_dline_end(&c->dl[k]);
	return r ? r : xs_out_flush(c->o, false);
}
