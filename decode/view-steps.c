/*
 * view-steps.c - steps.json: the events of every "Steps" line, labelled by
 * step number (or step name, or the event name), with the device time that
 * the top-level device ops of the op lines spend inside each step.
 *
 * Design: steps are collected, sorted by plane and start, then every
 * top-level event of the device op lines (dec_op_line_kind()) adds its
 * overlap to the steps of its own plane and of the host planes (binary
 * search for the last step starting before the event ends). Limits: at most
 * STEPS_MAX steps ("truncated": true beyond).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "render-internal.h"

#define STEPS_MAX ((size_t)1 << 20)

struct step {
	size_t plane;
	int64_t start, dur, device;
	xprofs_ps128 begin, end; /* exact window (xprofs_xspace_steps()) */
	char *label;             /* owned; a JSON value (number or string) */
};

struct steps {
	struct step *s;
	size_t n, cap;
	bool cut;
	size_t plane, line; /* of the line being collected */
};

static int step_cmp(const void *a, const void *b)
{
	const struct step *x = a, *y = b;

	if (x->plane != y->plane)
		return x->plane < y->plane ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return 0;
}

/* A dec_stop_fn: the step cap, checked before an event's metadata is looked up. */
static bool steps_full(void *arg)
{
	struct steps *st = arg;

	if (st->n < STEPS_MAX)
		return false;
	st->cut = true;
	return true;
}

/* A dec_event_fn: one step of the "Steps" line being collected (arg: struct steps). */
static int steps_event(struct dec_rctx *rc, const struct dec_event *e, struct dec_evmd *m,
		       void *arg)
{
	struct steps *st = arg;
	struct dec_opstats os = {0};
	struct step *s;
	struct dec_out lo;
	int r;

	if (e->has_stats &&
	    (r = dec_walk_stats(rc, &rc->ev, e->stats_off, e->off + e->len - e->stats_off,
				XEVENT_F_STATS, dec_collect_stat, &os)) < 0) {
		dec_opstats_clear(&os);
		return r;
	}
	dec_out_init(&lo, NULL);
	if (os.has_step_num)
		dec_out_i64(&lo, os.step_num);
	else if (m->has_step_num)
		dec_out_i64(&lo, m->step_num);
	else if (os.step_name)
		dec_out_cstr(&lo, os.step_name);
	else
		dec_out_add(&lo, m->name_json, m->name_json_len);
	dec_opstats_clear(&os);
	if (lo.r < 0 || xprofs_grow(&st->s, &st->cap, st->n, sizeof(*st->s), 64) < 0) {
		dec_out_deinit(&lo);
		return -ENOMEM;
	}
	s = &st->s[st->n++];
	s->plane = st->plane;
	s->start = e->start_ps;
	s->dur = e->duration_ps;
	s->device = 0;
	s->begin = (xprofs_ps128)rc->x->lines[st->line].timestamp_ns * 1000 + e->offset_ps;
	s->end = s->begin + (e->duration_ps > 0 ? e->duration_ps : 1);
	s->label = dec_out_steal(&lo, NULL);
	dec_out_deinit(&lo);
	if (!s->label) {
		st->n--;
		return -ENOMEM;
	}
	return 0;
}

static int steps_collect(struct dec_rctx *rc, size_t li, struct steps *st)
{
	st->plane = rc->x->lines[li].plane;
	st->line = li;
	return dec_line_each(rc, li, steps_full, steps_event, st);
}

/* Add the overlap of [start, end) to the steps of plane range [a, b). */
static void steps_add(struct steps *st, size_t a, size_t b, int64_t start, int64_t end)
{
	size_t lo = a, hi = b;

	while (lo < hi) { /* first step starting at or after @end */
		size_t mid = lo + (hi - lo) / 2;

		if (st->s[mid].start < end)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t k = lo; k > a; k--) {
		struct step *s = &st->s[k - 1];
		int64_t s_end = dec_sat_add(s->start, s->dur);
		int64_t from = start > s->start ? start : s->start;
		int64_t to = end < s_end ? end : s_end;

		if (s_end <= start)
			break;
		if (to > from)
			s->device = dec_sat_add(s->device, to - from);
	}
}

/* steps_gather() - the steps of every "Steps" line, in steps.json's order. */
static int steps_gather(struct dec_rctx *rc, struct steps *st)
{
	struct xprofs_xspace *x = rc->x;
	int r;

	for (size_t li = 0; li < x->n_lines; li++) {
		const struct dec_line *l = &x->lines[li];

		if (dec_str_eq(l->name, l->name_len, "Steps") &&
		    (r = steps_collect(rc, li, st)) < 0)
			return r;
	}
	if (st->n)
		qsort(st->s, st->n, sizeof(*st->s), step_cmp);
	return 0;
}

static void steps_free(struct steps *st)
{
	for (size_t i = 0; i < st->n; i++)
		free(st->s[i].label);
	free(st->s);
}

int dec_steps_windows(struct dec_rctx *rc, struct xprofs_step_window **out, size_t *n)
{
	struct steps st = {0};
	int r;

	if ((r = steps_gather(rc, &st)) == 0 && st.n) {
		*out = calloc(st.n, sizeof(**out));
		if (!*out)
			r = -ENOMEM;
		for (size_t i = 0; r == 0 && i < st.n; i++) {
			(*out)[i].plane = st.s[i].plane;
			(*out)[i].begin_ps = st.s[i].begin;
			(*out)[i].end_ps = st.s[i].end;
		}
		if (r == 0)
			*n = st.n;
	}
	steps_free(&st);
	return r;
}

int dec_view_steps(struct dec_rctx *rc, struct dec_out *o)
{
	struct xprofs_xspace *x = rc->x;
	struct steps st = {0};
	size_t *ra = NULL, *rb = NULL; /* per plane: range of its steps */
	int r = 0;

	if ((r = steps_gather(rc, &st)) < 0)
		goto out;
	ra = calloc(x->n_planes + 1, sizeof(*ra));
	rb = calloc(x->n_planes + 1, sizeof(*rb));
	if (!ra || !rb) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < st.n; i++) {
		if (ra[st.s[i].plane] == rb[st.s[i].plane])
			ra[st.s[i].plane] = i;
		rb[st.s[i].plane] = i + 1;
	}
	/* device time: top-level events of the device op lines */
	for (size_t li = 0; st.n && li < x->n_lines; li++) {
		const struct dec_line *l = &x->lines[li];
		const struct dec_plane *p = &x->planes[l->plane];
		enum dec_line_kind k = dec_op_line_kind(x, p, l, false);
		int64_t top_end = INT64_MIN;
		struct dec_line_it it;
		struct dec_event e;

		if (k != LK_XLA_OPS && k != LK_STREAM)
			continue;
		if ((r = dec_line_begin(rc, li, &it)) < 0)
			goto out;
		while ((r = dec_line_next(&it, &e)) > 0) {
			if (e.has_num || e.start_ps < top_end)
				continue;
			top_end = e.end_ps;
			steps_add(&st, ra[l->plane], rb[l->plane], e.start_ps, e.end_ps);
			for (size_t q = 0; q < x->n_planes; q++)
				if (q != l->plane && rb[q] > ra[q] &&
				    !dec_plane_is_device(&x->planes[q]))
					steps_add(&st, ra[q], rb[q], e.start_ps, e.end_ps);
		}
		if (r < 0)
			goto out;
	}
	OUT_LIT(o, "{\"steps\":[");
	for (size_t i = 0; i < st.n; i++) {
		const struct step *s = &st.s[i];

		OUT_RAW(o, i ? ",\n{\"plane\":" : "\n{\"plane\":");
		dec_out_str(o, x->planes[s->plane].name, x->planes[s->plane].name_len);
		OUT_LIT(o, ",\"step\":");
		OUT_RAW(o, s->label);
		dec_out_key_i64(o, ",\"start_ps\":", s->start);
		dec_out_key_i64(o, ",\"duration_ps\":", s->dur);
		dec_out_key_i64(o, ",\"device_ps\":", s->device);
		OUT_LIT(o, "}");
		if ((r = dec_out_flush(o, false)) < 0)
			goto out;
	}
	OUT_RAW(o, st.cut ? "\n],\"truncated\":true}\n" : "\n],\"truncated\":false}\n");
	r = 0;
out:
	steps_free(&st);
	free(ra);
	free(rb);
	return r;
}
