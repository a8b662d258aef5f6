/*
 * derive-steps.c - the "Steps" line XProf derives from group_id on a GPU
 * plane that has none: over every event of the plane in time order,
 * consecutive events of one group make one step event, named after the
 * group.
 *
 * Sources (openxla/xprof xprof/utils/derived_timeline.cc):
 * DeriveStepEventsFromGroups(), GetSortedEvents(),
 * DerivedXLineBuilder::ExpandOrAddEvent() on a GPU plane;
 * kThreadIdStepInfo and kStepLineName from TSL xplane_schema.
 *
 * Design: a merge of the plane's lines by time (derive-merge.c), each read
 * with a cursor of its own, feeds one builder line at level 0
 * (derive-builder.c); only the open step is held.
 *
 * Limits: only planes of at most DER_STEP_LINES lines with events (one
 * cursor each); a plane that already holds a Steps line (by id or name)
 * derives none.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "derived.h"

/* A xs_stat_fn: an integer group_id stat of an event (arg: struct trace_derived_in). */
static int group_stat(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s, void *arg)
{
	struct trace_derived_in *in = arg;
	const struct xs_stmd *m;
	int r;

	(void)c;
	if (s->kind != SV_U64 && s->kind != SV_I64)
		return 0;
	if ((r = xs_md_stat(rc, s->md, &m)) < 0)
		return r;
	if (xs_str_eq(m->name, m->name_len, "group_id")) {
		in->group = (int64_t)s->u;
		in->has_group = true;
	}
	return 0;
}

/*
 * Whether plane @p derives Steps: GPU, no Steps line, a group_id stat metadata
 * (found by the index, which never reports a malformed entry it only looked at:
 * loading every entry here left its message behind in a render that succeeds).
 */
static bool steps_wanted(struct xs_rctx *rc, const struct xs_plane *p, size_t *n_src)
{
	if (!xs_plane_is_gpu(p) || !p->group_ids || rc->x->grouped)
		return false;
	*n_src = 0;
	for (size_t j = 0; j < p->n_lines; j++) {
		const struct xs_line *l = &rc->x->lines[p->first_line + j];

		if (l->id == TID_DERIVED_MIN || xs_str_eq(l->name, l->name_len, "Steps"))
			return false; /* kThreadIdStepInfo, kStepLineName: the profile has them */
		if (l->msg.len)
			(*n_src)++;
	}
	return *n_src > 0 && *n_src <= DER_STEP_LINES;
}

/*
 * The merge: events of all lines by (start, longer first), each event's
 * group_id extending or starting the one open Steps event (named after the
 * group; ExpandOrAddEvent() on a GPU plane).
 */
static int steps_merge(struct xs_rctx *rc, struct der_src *src, size_t n, struct trace_derive *d)
{
	struct der_line *dl = &d->lines[0];
	struct trace_derived_in in;
	int r;

	for (;;) {
		xs_ps128 bs = 0;
		struct der_src *best = trace_merge_next(src, n, &bs);

		if (!best)
			return d->r;
		memset(&in, 0, sizeof(in));
		if (best->ev.has_stats &&
		    (r = xs_walk_stats(rc, &best->c, best->ev.stats_off,
				       best->ev.off + best->ev.len - best->ev.stats_off,
				       XEVENT_F_STATS, group_stat, &in)) < 0)
			return r;
		if (in.has_group) {
			in.begin = bs;
			in.end = bs + (best->ev.duration_ps > 0 ? best->ev.duration_ps : 0);
			char num[24];
			size_t nl = 0;

			/* by hand: one per grouped event, and printf showed in profiles */
			if (in.group < 0)
				num[nl++] = '-';
			nl += xs_fmt_u64(num + nl, in.group < 0 ? 0 - (uint64_t)in.group
								: (uint64_t)in.group);
			xprofs_buf_reset(&d->tmp);
			if ((r = xprofs_buf_add(&d->tmp, num, nl)) < 0 ||
			    (r = trace_der_expand_or_add(d, dl, 0, &d->tmp, NULL, 0, &in)) < 0)
				return r;
		}
		if ((r = trace_merge_step(best)) < 0)
			return r;
	}
}

int trace_derive_steps(struct xs_rctx *rc, size_t pi, trace_derived_emit_fn emit, void *arg)
{
	const struct xs_plane *p = &rc->x->planes[pi];
	struct der_src *src = NULL;
	struct trace_derive *d = NULL;
	size_t n = 0, k = 0;
	int r;

	if ((r = xs_plane_enter(rc, pi)) < 0 || !steps_wanted(rc, p, &n))
		return r;
	if (!(d = calloc(1, sizeof(*d))) || !(src = calloc(n, sizeof(*src)))) {
		r = -ENOMEM;
		goto out;
	}
	d->emit = emit;
	d->arg = arg;
	d->tid0 = (uint32_t)TID_DERIVED_MIN; /* kThreadIdStepInfo, display id unset */
	if (rc->win)
		trace_derive_window(d, rc->win_from, rc->win_to);
	xprofs_buf_init(&d->tmp, 64);
	if ((r = trace_derive_lod(d, rc)) < 0)
		goto out;
	xprofs_buf_init(&d->lines[0].title, 16);
	d->lines[0].kind = DL_STEPS;
	for (int i = 0; i < DER_LEVELS; i++) {
		xprofs_buf_init(&d->lines[0].lv[i].name, 64);
		xprofs_buf_init(&d->lines[0].lv[i].disp, 1);
	}
	if ((r = xprofs_buf_adds(&d->lines[0].title, "Steps")) < 0 ||
	    (r = trace_merge_open(rc, p, src, &k, false, 0)) < 0)
		goto out;
	if ((r = steps_merge(rc, src, k, d)) == 0) {
		/* XProf resets nothing at the end: the last step stays as it is */
		trace_der_lv_close(d, &d->lines[0], 0);
		r = d->r;
	}
out:
	trace_merge_close(src, k);
	free(src);
	trace_derive_free(d);
	return r;
}
