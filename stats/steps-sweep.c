/*
 * steps-sweep.c - pass 2 of the step database (steps.c): the events of the
 * event lines merged by start time (merge.c), each admitted one (its group's
 * step, where its plane has a marker of it: admit()) to that step's sweep,
 * XProf's ToNonOverlappedEvents(): where events overlap, the highest type
 * open owns the time, added inside the step's tentative span.
 *
 * Design: on two threads the time is cut at the median of the lines'
 * checkpoints and each half merges its own events with its own sweeps,
 * admit() caches and marks; an event open at the cut enters the second half
 * there and ends the first there, so the halves add up to the serial pass
 * exactly (the time a type owns at an instant depends only on the events
 * open then). One thread, a render already inside a task, or a line out of
 * order: one range, the whole time. On the way it takes the busy time
 * (stats_union, merge.c) of each device plane all of whose op lines it
 * merges, for the overview and the session summary (busy.c).
 * Limits: ACTIVE_MAX events open at once in a step (more own no time); the
 * first STATS_MERGE_MAX event lines.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "steps-state.h"

/* A xs_stat_fn: the stats the steps read, by the plane's keys (arg: struct evstats). */
static int ev_stat(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s, void *arg)
{
	struct evstats *v = arg;
	bool num = s->kind == SV_U64 || s->kind == SV_I64;

	(void)rc, (void)c;
	if (s->md == -1) /* the keys' "none" */
		return 0;
	if (s->md == v->k->step_name)
		v->has_step_name |= (s->kind == SV_STR && s->len > 0) || s->kind == SV_REF;
	else if (!num)
		return 0;
	else if (s->md == v->k->group)
		v->group = (int64_t)s->u, v->has_group = true;
	else if (s->md == v->k->corr)
		v->corr = (int64_t)s->u, v->has_corr = true;
	else if (s->md == v->k->dev_off)
		v->dev_off = (int64_t)s->u, v->has_off = true;
	else if (s->md == v->k->dev_dur)
		v->dev_dur = (int64_t)s->u, v->has_dur = true;
	return 0;
}

/*
 * ev_hint() - what stats_steps_ev_stats() gives admit() of event @ml->e, from
 * its line's step hints (hints.c): its group and whether a correlation_id >= 0
 * is there (admit() reads no more of a device plane's events).
 */
static void ev_hint(struct stats_mline *ml, struct evstats *v)
{
	const struct stats_hrun *u = stats_hints_at(ml->hl, ml->nth, &ml->hcur);

	memset(v, 0, sizeof(*v));
	v->has_group = u->flags & STATS_HINT_GROUP;
	v->group = v->has_group ? u->group : 0;
	v->has_corr = u->flags & STATS_HINT_CORR;
	v->corr = v->has_corr ? 0 : -1;
}

int stats_steps_ev_stats(struct xs_rctx *rc, struct wire_cur *c, const struct xs_event *e,
			 const struct pkeys *k, const struct xs_stat_keys *want, struct evstats *v)
{
	memset(v, 0, sizeof(*v));
	v->k = k;
	if (!e->has_stats) /* the others are still checked, as xs_walk_stats() would */
		return 0;
	return xs_walk_stats_keys(rc, c, e->stats_off, e->off + e->len - e->stats_off,
				  XEVENT_F_STATS, want, ev_stat, v);
}

/* ---- pass 2: the events, each step's ToNonOverlappedEvents() ---------------- */

static int sweep_top(const struct ssweep *w)
{
	for (int k = BD_N - 1; k > BD_IDLE; k--)
		if (w->cnt[k] > 0)
			return k;
	return BD_IDLE;
}

/* piece() - [w->t, to) goes to the highest type open: its overlap with the step's span. */
static void piece(struct ssweep *w, int64_t to, int64_t *bd)
{
	int top = sweep_top(w);

	if (to <= w->t)
		return;
	if (top != BD_IDLE) {
		int64_t a = w->t > w->sb ? w->t : w->sb, b = to < w->se ? to : w->se;

		w->seen |= (uint16_t)(1u << top);
		if (b > a)
			bd[top] = xs_sat_add(bd[top], b - a);
	}
	w->t = to;
}

/* advance() - the sweep up to @to: open events ending by then close (ends before starts). */
static void advance(struct ssweep *w, int64_t to, int64_t *bd)
{
	while (w->n && w->a[0].end <= to) {
		piece(w, w->a[0].end, bd);
		w->cnt[w->a[0].type]--;
		w->a[0] = w->a[--w->n];
		for (size_t i = 0;;) { /* sift down */
			size_t l = 2 * i + 1, r = l + 1, k = i;
			struct active t;

			if (l < w->n && w->a[l].end < w->a[k].end)
				k = l;
			if (r < w->n && w->a[r].end < w->a[k].end)
				k = r;
			if (k == i)
				break;
			t = w->a[i], w->a[i] = w->a[k], w->a[k] = t;
			i = k;
		}
	}
	piece(w, to, bd);
}

/*
 * One time range of pass 2 (stats_steps_events()): the events starting in
 * [from, to) go to its own sweeps. With @seek an event that starts before @from and ends
 * after it enters at @from; with @cut one that ends after @to ends there. The
 * time a step's sweep gives each type at an instant depends only on the
 * events open then, so two ranges cut at one time add up to the whole.
 */
struct p2range {
	struct gsteps *g;
	bool seek, cut;
	int64_t from, to;
	struct ssweep *sw;      /* per step: g->sw, or the range's own */
	int64_t (*bd)[BD_N];    /* per step, NULL: the steps' own (st->s[k].bd) */
	struct pkeys *keys;     /* per plane: admit()'s look-up cache */
	bool *pm_events;        /* per marker, NULL: g->pm[].events */
	const bool *busy_line;  /* per line, NULL: none; its plane's busy time is taken here */
	struct stats_union *ub; /* per plane, with busy_line */
};

/* range_bd() - the breakdown step @k's sweep in range @h adds to. */
static int64_t *range_bd(struct p2range *h, size_t k)
{
	return h->bd ? h->bd[k] : h->g->st->s[k].bd;
}

/*
 * feed() - event [s, e) of type @type to step @k's sweep in range @h. An event
 * starting before the sweep's time (a line out of order) starts then.
 */
static int feed(struct p2range *h, size_t k, int64_t s, int64_t e, uint8_t type)
{
	struct ssweep *w = &h->sw[k];
	int64_t *bd = range_bd(h, k);
	size_t i;
	int r;

	if (!w->started || (!w->n && w->t < s)) /* no event open: the gap owns nothing */
		w->t = s, w->started = true;
	advance(w, s, bd);
	if (w->n >= ACTIVE_MAX)
		return 0;
	if ((r = xprofs_grow(&w->a, &w->cap, w->n, sizeof(*w->a), 16)) < 0)
		return r;
	i = w->n++;
	w->a[i] = (struct active){e > s ? e : s, type};
	while (i && w->a[(i - 1) / 2].end > w->a[i].end) {
		struct active t = w->a[i];

		w->a[i] = w->a[(i - 1) / 2];
		w->a[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
	w->cnt[type]++;
	return 0;
}

/*
 * admit() - the step an event of plane @q goes to (its group's, where the plane
 * has a marker of it), or SIZE_MAX: XProf's rules by kind (correlation_id and
 * group_id on GPU, group_id on TPU, a real host event of a group on the host).
 */
static size_t admit(struct p2range *h, size_t q, const struct evstats *v, uint8_t cls)
{
	struct gsteps *g = h->g;
	struct pmkey key = {q, v->group};
	struct pkeys *k = &h->keys[q];
	uint32_t i;

	if (!v->has_group || (g->kind == K_GPU && !(v->has_corr && v->corr >= 0 && v->group >= 0)))
		return SIZE_MAX;
	if (g->kind == K_NONE && (v->group < 0 || v->has_step_name || (cls & CL_NOT_REAL)))
		return SIZE_MAX;
	if (!k->last_ok || k->last_group != v->group) { /* the markers are fixed in pass 2 */
		if (xprofs_table_find(g->pmtab, pm_hash(q, v->group), pm_eq, g->pm, &key, &i) < 0)
			i = UINT32_MAX;
		k->last_ok = true, k->last_group = v->group, k->last_pm = i;
	}
	if ((i = k->last_pm) == UINT32_MAX)
		return SIZE_MAX; /* IntersectCombineStepEvents(): no marker of it here */
	if (h->pm_events)
		h->pm_events[i] = true;
	else
		g->pm[i].events = true;
	return g->pm[i].step;
}

/* range_run() - pass 2 over the lines @li[0..n) for range @h, its sweeps closed at the end. */
static int range_run(struct xs_rctx *rc, struct p2range *h, const size_t *li, size_t n)
{
	struct gsteps *g = h->g;
	struct stats_merge m = {0};
	int r = 0;

	if (!n || (r = stats_merge_open_at(rc, li, n, NULL, h->seek, h->from, &m)) < 0)
		goto out;
	for (size_t i = 0; g->kind != K_NONE && i < m.n; i++) /* host steps read more stats */
		m.ml[i].hl = stats_hints_line(g->st->hints, li[i], rc->x->lines[li[i]].events);
	while (m.nheap) {
		struct stats_mline *ml = stats_merge_top(&m);
		size_t q = ml->it.l->plane, k;
		int64_t s = ml->e.start_ps, e = ml->e.end_ps > s ? ml->e.end_ps : s;
		ssize_t c;
		uint8_t cls;
		struct evstats v;

		if (h->cut && s >= h->to) /* the lines are in order: so is the rest */
			break;
		if (h->seek && s < h->from) {
			if (e <= h->from) /* the range before's */
				goto next;
			s = h->from;
		}
		if (h->cut && e > h->to)
			e = h->to;
		if (h->busy_line && h->busy_line[ml->it.l - rc->x->lines])
			stats_union_add(&h->ub[q], s, e);
		c = xs_md_find(ml->evx, ml->e.md);
		cls = c >= 0              ? g->cls[q][c]
		      : g->kind == K_NONE ? BD_HOST_COMPUTE
					  : BD_DEVICE_COMPUTE;
		if (ml->hl)
			ev_hint(ml, &v);
		else if ((r = stats_steps_ev_stats(rc, &ml->rc.ev, &ml->e, &g->keys[q],
						   &g->keys[q].ev, &v)) < 0)
			goto out;
		k = admit(h, q, &v, cls);
		if (k != SIZE_MAX && (!g->second || h->sw[k].redo) &&
		    (r = feed(h, k, s, e, cls & CL_TYPE)) < 0)
			goto out;
	next:
		if ((r = stats_merge_pop(&m)) < 0)
			goto out;
	}
	r = 0;
out:
	for (size_t q = 0; h->busy_line && q < rc->x->n_planes; q++)
		stats_union_close(&h->ub[q]);
	for (size_t k = 0; k < g->st->n; k++) { /* close every sweep */
		if (r == 0)
			advance(&h->sw[k], INT64_MAX, range_bd(h, k));
		free(h->sw[k].a);
		h->sw[k].a = NULL;
		h->sw[k].n = h->sw[k].cap = 0;
		memset(h->sw[k].cnt, 0, sizeof(h->sw[k].cnt));
		h->sw[k].started = false;
	}
	stats_merge_free(&m);
	return r;
}

/* The two ranges of a split pass 2 and the lines they merge (range_task()). */
struct p2split {
	struct p2range h[2];
	const size_t *li;
	size_t n;
};

static int range_task(struct xs_rctx *rc, size_t i, void *arg)
{
	struct p2split *t = arg;

	return range_run(rc, &t->h[i], t->li, t->n);
}

static int i64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * split_at() - where pass 2 over the lines @li[0..n) is cut in two for the
 * render's threads, false when it is run whole (one thread, inside another
 * analysis's task, a line out of order): the median of the lines'
 * checkpoints (one per XS_CKPT_EVERY events; the latest end before each is
 * about its time), so that both halves read about as many events, else the
 * middle of their span.
 */
static bool split_at(const struct xs_rctx *rc, const size_t *li, size_t n, int64_t *at)
{
	const struct xprofs_xspace *x = rc->x;
	int64_t lo = INT64_MAX, hi = INT64_MIN, *v = NULL;
	size_t nv = 0, cap = 0;

	if (x->threads < 2 || rc->in_task || x->tracks_only)
		return false;
	for (size_t i = 0; i < n; i++) {
		const struct xs_line *l = &x->lines[li[i]];
		int64_t base = xs_line_base_ps(l->timestamp_ns);

		if (l->unsorted) {
			free(v);
			return false;
		}
		if (!l->has_events)
			continue;
		lo = l->first_ps < lo ? l->first_ps : lo;
		hi = l->last_ps > hi ? l->last_ps : hi;
		for (size_t c = 0; c < l->n_ckpt; c++)
			if (l->ckpt[c].max_end < INT64_MAX &&
			    xprofs_grow(&v, &cap, nv, sizeof(*v), 64) == 0)
				v[nv++] = xs_sat_add(base, l->ckpt[c].max_end);
	}
	if (lo >= hi || hi - lo < 2 || (lo < 0 && hi > INT64_MAX + lo)) {
		free(v);
		return false;
	}
	*at = lo + (hi - lo) / 2;
	if (nv) {
		qsort(v, nv, sizeof(*v), i64_cmp);
		if (v[nv / 2] > lo && v[nv / 2] < hi)
			*at = v[nv / 2];
	}
	free(v);
	return true;
}

/*
 * busy_lines() - which of the lines @li[0..n) that pass 2 merges make up a
 * device plane's busy time (stats_device_busy()'s lines: stats_step_lines(),
 * the first STATS_MERGE_MAX), for the planes all of whose such lines are
 * among them; those planes are marked in st->busy_done. *out (caller frees):
 * per line, NULL when no plane is.
 */
static int busy_lines(const struct xprofs_xspace *x, struct stats_steps *st, const size_t *li,
		      size_t n, bool **out)
{
	bool *in = calloc(x->n_lines + 1, sizeof(*in)), *bl = calloc(x->n_lines + 1, sizeof(*bl));
	size_t *ol = malloc(STATS_MERGE_MAX * sizeof(*ol)), k;
	bool any = false;
	int r = 0;

	*out = NULL;
	if (!in || !bl || !ol) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		in[li[i]] = true;
	for (size_t q = 0; q < x->n_planes; q++) {
		bool all = true;

		if (!xs_plane_is_device(&x->planes[q]))
			continue;
		k = stats_step_lines(x, q, ol, STATS_MERGE_MAX);
		for (size_t j = 0; j < k; j++)
			all &= in[ol[j]];
		if (!all)
			continue;
		for (size_t j = 0; j < k; j++)
			bl[ol[j]] = true;
		st->busy_done[q] = any = true;
	}
	if (any) {
		*out = bl;
		bl = NULL;
	}
out:
	free(in);
	free(bl);
	free(ol);
	return r;
}

/* busy_add() - range @u's part of a plane's busy time into @b (the ranges meet at a cut). */
static void busy_add(struct stats_busy *b, const struct stats_busy *u)
{
	if (!u->any)
		return;
	b->busy = xs_sat_add(b->busy, u->busy);
	stats_busy_widen(b, u->first, u->last);
}

/*
 * redo_window() - the time [*lo, *hi) that pass 2 run again reads: the spans
 * of the steps to redo. Their sweeps add only time inside their spans, and
 * an event open at either end enters or ends there (struct p2range), so the
 * events outside add nothing. False: no such step, or one span is empty.
 */
static bool redo_window(const struct gsteps *g, int64_t *lo, int64_t *hi)
{
	*lo = INT64_MAX, *hi = INT64_MIN;
	for (size_t k = 0; k < g->st->n; k++) {
		if (!g->sw[k].redo)
			continue;
		*lo = g->sw[k].sb < *lo ? g->sw[k].sb : *lo;
		*hi = g->sw[k].se > *hi ? g->sw[k].se : *hi;
	}
	return *lo < *hi;
}

/*
 * stats_steps_events() - pass 2: a merge of the event lines, each admitted event to its
 * step's sweep; on two threads the time is cut in the middle (split_at())
 * and each half has its own sweeps, added up after (struct p2range).
 */
int stats_steps_events(struct xs_rctx *rc, struct gsteps *g)
{
	const struct xprofs_xspace *x = rc->x;
	struct stats_steps *st = g->st;
	size_t *li = malloc(STATS_MERGE_MAX * sizeof(*li)), n = 0;
	struct p2split t = {.h = {{.g = g, .sw = g->sw, .keys = g->keys}}};
	struct p2range *h1 = &t.h[1];
	bool *bl = NULL;
	int64_t at, lo = 0, hi = 0;
	int r = 0;

	if (!li)
		return -ENOMEM;
	for (size_t j = 0; j < x->n_lines && n < STATS_MERGE_MAX; j++)
		if (event_line(g, &x->planes[x->lines[j].plane], &x->lines[j]))
			li[n++] = j;
	/* the planes' busy time on the way, the first time only (steps.c may run it again) */
	if (st->busy && !g->second && (r = busy_lines(x, st, li, n, &bl)) < 0)
		goto out;
	if (bl && !(t.h[0].ub = calloc(x->n_planes + 1, sizeof(*t.h[0].ub)))) {
		r = -ENOMEM;
		goto out;
	}
	t.h[0].busy_line = bl;
	/* pass 2 again: only the time of the steps whose span changed (redo_window()) */
	if (g->second && redo_window(g, &lo, &hi))
		t.h[0] = (struct p2range){.g = g,
					  .sw = g->sw,
					  .keys = g->keys,
					  .seek = true,
					  .from = lo,
					  .cut = true,
					  .to = hi};
	if (!split_at(rc, li, n, &at) || (t.h[0].cut && (at <= lo || at >= hi))) {
		r = range_run(rc, &t.h[0], li, n);
		goto busy;
	}
	t.li = li, t.n = n;
	t.h[0].cut = true, t.h[0].to = at;
	*h1 = (struct p2range){.g = g, .seek = true, .from = at, .busy_line = bl};
	if (g->second && t.h[0].seek)
		h1->cut = true, h1->to = hi;
	if (bl && !(h1->ub = calloc(x->n_planes + 1, sizeof(*h1->ub)))) {
		r = -ENOMEM;
		goto out;
	}
	h1->sw = calloc(st->n + 1, sizeof(*h1->sw));
	h1->bd = calloc(st->n + 1, sizeof(*h1->bd));
	h1->keys = malloc((x->n_planes + 1) * sizeof(*h1->keys));
	h1->pm_events = calloc(g->npm + 1, sizeof(*h1->pm_events));
	if (!h1->sw || !h1->bd || !h1->keys || !h1->pm_events) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t k = 0; k < st->n; k++) { /* the same spans, nothing seen yet */
		h1->sw[k].sb = g->sw[k].sb, h1->sw[k].se = g->sw[k].se;
		h1->sw[k].redo = g->sw[k].redo;
	}
	memcpy(h1->keys, g->keys, x->n_planes * sizeof(*h1->keys));
	for (size_t q = 0; q < x->n_planes; q++)
		h1->keys[q].last_ok = false;
	if ((r = xs_tasks_run(rc, 2, range_task, NULL, &t)) < 0)
		goto out;
	for (size_t k = 0; k < st->n; k++) {
		for (int b = 0; b < BD_N; b++)
			st->s[k].bd[b] = xs_sat_add(st->s[k].bd[b], h1->bd[k][b]);
		g->sw[k].seen |= h1->sw[k].seen;
	}
	for (size_t i = 0; i < g->npm; i++)
		g->pm[i].events |= h1->pm_events[i];
busy:
	for (size_t q = 0; r == 0 && bl && q < x->n_planes; q++) {
		if (!st->busy_done[q])
			continue;
		busy_add(&st->busy[q], &t.h[0].ub[q].b);
		if (h1->ub)
			busy_add(&st->busy[q], &h1->ub[q].b);
	}
out:
	free(t.h[0].ub);
	free(h1->ub);
	free(bl);
	if (h1->sw)
		for (size_t k = 0; k < st->n; k++)
			free(h1->sw[k].a);
	free(h1->sw);
	free(h1->bd);
	free(h1->keys);
	free(h1->pm_events);
	free(li);
	return r;
}
