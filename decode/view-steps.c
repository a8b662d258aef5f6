/*
 * view-steps.c - steps.json: the events of every "Steps" line, labelled by
 * step number (or step name, or the event name), with the time inside each
 * step during which any device op line is busy.
 *
 * Design: steps are collected, sorted by plane and start; then the op lines
 * of each device plane (dec_op_line_kind()) are merged by start time and
 * every interval of their union adds its overlap to the plane's steps
 * (binary search for the last step starting before it ends); the union of
 * all device planes' op lines does the same for host steps. Concurrent
 * streams count once. Limits: at most STEPS_MAX steps ("truncated": true
 * beyond); at most MERGE_MAX lines merged at once (16 KiB read-ahead each).
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

/*
 * Device busy time as a union: the events of several op lines merged by
 * start time (a k-way merge, one small cursor per line), so that concurrent
 * streams count once (XProf's step breakdown unions device activity,
 * event_span.cc ToNonOverlappedEvents()). Lines are in time order after
 * XProf's SortXSpace(); a line the index marks unsorted is merged as it
 * comes, so its out-of-order events can count twice.
 */
#define MERGE_MAX 1024               /* lines merged at once (more: groups, summed) */
#define MERGE_WIN ((size_t)16 << 10) /* read-ahead of each line's cursor */

struct mline {
	struct dec_rctx rc; /* only rc.x and rc.ev are used */
	struct dec_line_it it;
	struct dec_event e; /* the line's next event */
};

struct merge {
	struct mline *ml; /* owned, n of them */
	size_t *heap;     /* indexes into ml, a min-heap by e.start_ps */
	size_t n, nheap;
};

static bool mless(const struct merge *m, size_t a, size_t b)
{
	return m->ml[m->heap[a]].e.start_ps < m->ml[m->heap[b]].e.start_ps;
}

static void msift(struct merge *m, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, k = i, t;

		if (l < m->nheap && mless(m, l, k))
			k = l;
		if (r < m->nheap && mless(m, r, k))
			k = r;
		if (k == i)
			return;
		t = m->heap[i], m->heap[i] = m->heap[k], m->heap[k] = t;
		i = k;
	}
}

/* mnext() - advance line @k to its next positioned event: 1, 0 at its end, -errno. */
static int mnext(struct mline *ml)
{
	int r;

	while ((r = dec_line_next(&ml->it, &ml->e)) > 0)
		if (!ml->e.has_num) /* num_occurrences events have no place in time */
			return 1;
	return r;
}

static void merge_free(struct merge *m)
{
	for (size_t i = 0; i < m->n; i++)
		dec_cur_deinit(&m->ml[i].rc.ev);
	free(m->ml);
	free(m->heap);
	memset(m, 0, sizeof(*m));
}

/* merge_open() - a merge over the lines @li[0..n) (n <= MERGE_MAX). */
static int merge_open(struct dec_rctx *rc, const size_t *li, size_t n, struct merge *m)
{
	int r;

	memset(m, 0, sizeof(*m));
	m->ml = calloc(n ? n : 1, sizeof(*m->ml));
	m->heap = calloc(n ? n : 1, sizeof(*m->heap));
	if (!m->ml || !m->heap)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct mline *ml = &m->ml[m->n++];
		const struct dec_line *l = &rc->x->lines[li[i]];

		ml->rc.x = rc->x;
		dec_cur_init(&ml->rc.ev, rc->x->r, rc->err);
		ml->rc.ev.win_pref = MERGE_WIN;
		ml->it.rc = &ml->rc;
		ml->it.l = l;
		ml->it.end = l->msg.off + l->msg.len;
		ml->it.base_ps = dec_line_base_ps(l->timestamp_ns);
		ml->rc.ev.pos = l->msg.off;
		ml->rc.ev.end = ml->it.end;
		if ((r = mnext(ml)) < 0)
			return r;
		if (r > 0)
			m->heap[m->nheap++] = m->n - 1;
	}
	for (size_t i = m->nheap; i-- > 0;)
		msift(m, i);
	return 0;
}

/*
 * merge_union() - the union of the events of lines @li[0..n), as disjoint
 * intervals in time order, each added to the steps by @add(arg, from, to).
 */
static int merge_union(struct dec_rctx *rc, const size_t *li, size_t n,
		       void (*add)(void *arg, int64_t from, int64_t to), void *arg)
{
	struct merge m;
	int64_t cs = 0, ce = 0;
	bool open = false;
	int r;

	if ((r = merge_open(rc, li, n, &m)) < 0)
		goto out;
	while (m.nheap) {
		struct mline *ml = &m.ml[m.heap[0]];
		int64_t s = ml->e.start_ps, t = ml->e.end_ps;

		if (open && s > ce) {
			add(arg, cs, ce);
			open = false;
		}
		if (!open) {
			cs = s, ce = t, open = true;
		} else if (t > ce) {
			ce = t;
		}
		if ((r = mnext(ml)) < 0)
			goto out;
		if (r == 0)
			m.heap[0] = m.heap[--m.nheap];
		msift(&m, 0);
	}
	if (open)
		add(arg, cs, ce);
	r = 0;
out:
	merge_free(&m);
	return r;
}

/* What a union interval is added to: the steps of device plane @plane, or of every host plane. */
struct busy_add {
	struct steps *st;
	const size_t *ra, *rb;
	size_t plane; /* the device plane whose lines are merged, or SIZE_MAX: all */
	size_t n_planes;
	const struct xprofs_xspace *x;
};

static void busy_add_fn(void *arg, int64_t from, int64_t to)
{
	struct busy_add *b = arg;

	if (b->plane != SIZE_MAX) {
		steps_add(b->st, b->ra[b->plane], b->rb[b->plane], from, to);
		return;
	}
	for (size_t q = 0; q < b->n_planes; q++) {
		bool dev = dec_plane_is_device(&b->x->planes[q]);

		if (b->rb[q] <= b->ra[q])
			continue;
		if (!dev)
			steps_add(b->st, b->ra[q], b->rb[q], from, to);
	}
}

/*
 * steps_device() - device_ps: per device plane with steps, the union of its
 * op lines; for the steps of the other planes (host), the union of the op
 * lines of every device plane.
 */
static int steps_device(struct dec_rctx *rc, struct steps *st, const size_t *ra, const size_t *rb)
{
	struct xprofs_xspace *x = rc->x;
	struct busy_add b = {st, ra, rb, 0, x->n_planes, x};
	size_t *li = malloc(MERGE_MAX * sizeof(*li)), n;
	bool host_steps = false;
	int r = 0;

	if (!li)
		return -ENOMEM;
	for (size_t q = 0; q < x->n_planes; q++)
		if (rb[q] > ra[q] && !dec_plane_is_device(&x->planes[q]))
			host_steps = true;
	/* pass 0: each device plane's own steps; pass 1: the host steps, all device lines */
	for (int pass = 0; pass < 2 && r == 0; pass++) {
		for (size_t q = 0; q < x->n_planes && r == 0; q++) {
			const struct dec_plane *p = &x->planes[q];

			if (pass == 0 && (rb[q] <= ra[q] || !dec_plane_is_device(p)))
				continue;
			if (pass == 1 && (!host_steps || q > 0))
				break;
			b.plane = pass == 0 ? q : SIZE_MAX;
			n = 0;
			for (size_t j = 0; j < x->n_lines && r == 0; j++) {
				const struct dec_line *l = &x->lines[j];
				enum dec_line_kind k;

				if (pass == 0 && l->plane != q)
					continue;
				k = dec_op_line_kind(x, &x->planes[l->plane], l, false);
				if (k != LK_XLA_OPS && k != LK_STREAM)
					continue;
				li[n++] = j;
				if (n == MERGE_MAX) {
					r = merge_union(rc, li, n, busy_add_fn, &b);
					n = 0;
				}
			}
			if (r == 0 && n)
				r = merge_union(rc, li, n, busy_add_fn, &b);
		}
	}
	free(li);
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
	if (st.n && (r = steps_device(rc, &st, ra, rb)) < 0)
		goto out;
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
