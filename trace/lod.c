/*
 * lod.c - the level-of-detail trace (lod/trace.json, lod/trace.pftrace):
 * which events XProf's trace viewer would show of a span drawn at
 * TRACE_LOD_PX pixels, as a predicate the trace walks ask per event.
 *
 * Source: openxla/xprof xprof/convert/trace_viewer/trace_viewer_visibility.{h,cc}
 * (TraceViewerVisibility::Visible(), VisibleAtResolution(),
 * RowVisibility::Depth(); TraceVisibilityFilter::SetUp() and ResolutionPs()
 * for the span and the resolution). docs/trace.md "Level of detail" has
 * the rules and where xprofs differs.
 *
 * Design: the resolution is llround(span / width) picoseconds, the span
 * being the shown lines' events (a window: clipped to them) and the width
 * TRACE_LOD_PX pixels, less when the rows' events would pass the output's
 * budget at that width (lod_width()). Each row (a line: pid, tid) keeps
 * XProf's stack of the ends of its last visible events; an event is visible when it lasts at least the resolution, or
 * starts at least the resolution after the last visible end at its depth
 * (or none is there). Flow events share one decision per flow id, made by
 * the flow's first event (a plane's flow table, in walk order), and a row's
 * arrows are thinned like its events. Counter series (pid, name) keep a
 * sample at least the resolution after the last kept one. Derived lines
 * hand their events out a parent after its children, so there the depth is
 * the derivation's level (trace_lod_level()).
 *
 * Limits: TRACE_LOD_DEPTH levels per row (deeper events are visible);
 * TRACE_LOD_FLOWS flows and TRACE_LOD_COUNTERS series per plane (further ones
 * are decided alone, as a flow's first event or a series' first sample).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "trace-internal.h"

#define TRACE_LOD_FLOWS ((size_t)4 << 20)
#define TRACE_LOD_COUNTERS ((size_t)1 << 16)

/*
 * The events of line @l a render on @rc may show, as the index knows them:
 * all of them, or for a window the share its span covers.
 */
static uint64_t line_share(const struct xs_rctx *rc, const struct xs_line *l)
{
	xs_ps128 a = l->first_ps, b = l->last_ps, len = b - a;

	if (!rc->win || len <= 0)
		return l->events;
	if (rc->win_from > a)
		a = rc->win_from;
	if (rc->win_to < b)
		b = rc->win_to;
	return b <= a ? 0 : (uint64_t)((xs_ps128)l->events * (b - a) / len);
}

/*
 * The width in pixels: TRACE_LOD_PX, or the largest below it for which
 * sum over the rows of min(events, width) stays within TRACE_LOD_EVENTS (a
 * row shows about one event per pixel and depth: a profile of a thousand
 * busy threads would pass the output's budget at full width).
 */
static uint64_t lod_width(const uint64_t *share, size_t n)
{
	uint64_t lo = 1, hi = TRACE_LOD_PX;

	while (lo < hi) {
		uint64_t w = lo + (hi - lo + 1) / 2, sum = 0;

		for (size_t i = 0; i < n && sum <= TRACE_LOD_EVENTS; i++)
			sum += share[i] < w ? share[i] : w;
		if (sum <= TRACE_LOD_EVENTS)
			lo = w;
		else
			hi = w - 1;
	}
	return lo;
}

int trace_lod_setup(struct xs_rctx *rc)
{
	const struct xprofs_xspace *x = rc->x;
	struct trace_plane *tp = NULL;
	xs_ps128 first = 0, last = 0;
	uint64_t *share = NULL;
	bool any = false;
	size_t n = 0, rows = 0;
	int r;

	if (!rc->lod)
		return 0;
	if ((r = trace_planes(x, &tp, &n)) < 0)
		return r;
	if (!(share = calloc(x->n_lines ? x->n_lines : 1, sizeof(*share)))) {
		free(tp);
		return -ENOMEM;
	}
	/* the trace's span (TraceVisibilityFilter::SetUp(): min and max timestamps) */
	for (size_t i = 0; i < n; i++) {
		const struct xs_plane *p = &x->planes[tp[i].plane];

		for (size_t j = 0; j < p->n_lines; j++) {
			const struct xs_line *l = &x->lines[p->first_line + j];

			if (!l->has_events || trace_line_kind(l) == TL_SKIP)
				continue;
			if (!any || l->first_ps < first)
				first = l->first_ps;
			if (!any || l->last_ps > last)
				last = l->last_ps;
			any = true;
			share[rows++] = line_share(rc, l);
		}
	}
	free(tp);
	rc->lod_px = lod_width(share, rows);
	free(share);
	if (rc->win) {
		if (!any || rc->win_from > first)
			first = rc->win_from;
		if (!any || rc->win_to < last)
			last = rc->win_to;
	}
	rc->lod_from = first;
	rc->lod_to = last > first ? last : first;
	/* ResolutionPs(): llround(duration / resolution); 0 (or an instant span) keeps all */
	rc->lod_res = (uint64_t)llroundl((long double)(rc->lod_to - rc->lod_from) / rc->lod_px);
	xprofs_debug("lod: %zu rows, %" PRIu64 " px, resolution %" PRIu64 " ps", rows, rc->lod_px,
		     rc->lod_res);
	return 0;
}

void trace_lod_init(struct trace_lod *L, const struct xs_rctx *rc)
{
	memset(L, 0, sizeof(*L));
	L->on = rc->lod;
	L->res = rc->lod_res;
}

void trace_lod_plane(struct trace_lod *L)
{
	if (L->fkeys)
		memset(L->fkeys, 0, L->fcap * sizeof(*L->fkeys));
	if (L->ckeys)
		memset(L->ckeys, 0, L->ccap * sizeof(*L->ckeys));
	L->fn = L->cn = 0;
}

void trace_lod_deinit(struct trace_lod *L)
{
	free(L->fkeys);
	free(L->fvals);
	free(L->ckeys);
	free(L->cts);
	memset(L, 0, sizeof(*L));
}

/* ---- open addressing (keys stored + 1: 0 is an empty slot) ----------------- */

static size_t slot_of(uint64_t key, size_t cap)
{
	return (size_t)((key * UINT64_C(0x9e3779b97f4a7c15)) >> 17) & (cap - 1);
}

/* The slot of @key in @keys (cap a power of two): its own, or the empty one it would take. */
static size_t find(const uint64_t *keys, size_t cap, uint64_t key)
{
	size_t i = slot_of(key, cap);

	while (keys[i] && keys[i] != key + 1)
		i = (i + 1) & (cap - 1);
	return i;
}

/*
 * Room for one more key in a table of @n keys: doubles @keys and @vals
 * (@vsize bytes each) past half full, up to @max. False when full.
 */
static bool room(uint64_t **keys, void **vals, size_t vsize, size_t *cap, size_t n, size_t max)
{
	size_t ncap = *cap ? *cap * 2 : 1024;
	uint64_t *nk;
	char *nv;

	if (2 * (n + 1) <= *cap)
		return true;
	if (n >= max)
		return false;
	nk = calloc(ncap, sizeof(*nk));
	nv = calloc(ncap, vsize);
	if (!nk || !nv) {
		free(nk);
		free(nv);
		return false;
	}
	for (size_t i = 0; i < *cap; i++) {
		size_t j;

		if (!(*keys)[i])
			continue;
		j = find(nk, ncap, (*keys)[i] - 1);
		nk[j] = (*keys)[i];
		memcpy(nv + j * vsize, (char *)*vals + i * vsize, vsize);
	}
	free(*keys);
	free(*vals);
	*keys = nk;
	*vals = nv;
	*cap = ncap;
	return true;
}

/* Remove slot @i of a linear-probing table, moving later keys of its run back. */
static void erase(uint64_t *keys, uint8_t *vals, size_t cap, size_t i)
{
	size_t j = i;

	keys[i] = 0;
	for (;;) {
		size_t k;

		j = (j + 1) & (cap - 1);
		if (!keys[j])
			return;
		k = slot_of(keys[j] - 1, cap);
		/* keys[j] may fill the hole at i when its home k is not in (i, j] */
		if ((j > i && (k <= i || k > j)) || (j < i && (k <= i && k > j))) {
			keys[i] = keys[j];
			vals[i] = vals[j];
			keys[j] = 0;
			i = j;
		}
	}
}

/* ---- the rules ---------------------------------------------------------------- */

bool trace_lod_counter(struct trace_lod *L, const char *name, size_t len, xs_ps128 ts)
{
	uint64_t key = xprofs_hash64(name, len);
	size_t i;

	if (!L->on || !L->res)
		return true;
	if (!room(&L->ckeys, (void **)&L->cts, sizeof(*L->cts), &L->ccap, L->cn,
		  TRACE_LOD_COUNTERS)) {
		/* a series not recorded: each of its samples is a first one */
		i = L->ccap ? find(L->ckeys, L->ccap, key) : 0;
		if (!L->ccap || !L->ckeys[i])
			return true;
	} else {
		i = find(L->ckeys, L->ccap, key);
	}
	/* XProf subtracts unsigned: a sample before the last kept one is kept */
	if (L->ckeys[i] && ts >= L->cts[i] && ts - L->cts[i] < (xs_ps128)L->res)
		return false;
	if (!L->ckeys[i])
		L->cn++;
	L->ckeys[i] = key + 1;
	L->cts[i] = ts;
	return true;
}

/* RowVisibility::Depth(): the first level whose last visible end is at or before @begin. */
static size_t depth(const struct trace_lod_row *row, xs_ps128 begin)
{
	size_t d = 0;

	while (d < row->n && row->end[d] > begin)
		d++;
	return d;
}

bool trace_lod_event(struct trace_lod *L, struct trace_lod_row *row, xs_ps128 ts, int64_t dur,
		     const struct trace_xflow *f)
{
	xs_ps128 res = (xs_ps128)L->res, end = ts + (dur > 0 ? dur : 0);
	size_t d;
	bool vis;

	if (!L->on || !L->res)
		return true;
	vis = dur >= 0 && (uint64_t)dur >= L->res;
	d = depth(row, ts);
	if (!vis)
		vis = d >= row->n || ts - row->end[d] >= res;
	if (f) {
		/* a flow's first event decides for the flow's events not visible by themselves */
		uint64_t key = f->id;
		size_t i = 0;
		bool have =
			room(&L->fkeys, (void **)&L->fvals, 1, &L->fcap, L->fn, TRACE_LOD_FLOWS);
		bool fvis;

		if (L->fcap)
			i = find(L->fkeys, L->fcap, key);
		if (L->fcap && L->fkeys[i]) {
			fvis = L->fvals[i];
		} else {
			/* unsigned in XProf: an arrow before the row's last one passes too */
			fvis = vis || !row->has_flow || end < row->last_flow ||
			       end - row->last_flow >= res;
			if (have) {
				L->fkeys[i] = key + 1;
				L->fvals[i] = fvis;
				L->fn++;
			}
		}
		if (!vis)
			vis = fvis;
		/* the flow's last event (FLOW_END) forgets it */
		if (f->dir == XFLOW_IN && L->fcap && L->fkeys[i]) {
			erase(L->fkeys, L->fvals, L->fcap, i);
			L->fn--;
		}
		if (vis) {
			row->has_flow = true;
			row->last_flow = end;
		}
	}
	if (vis && d < TRACE_LOD_DEPTH) {
		row->end[d] = end;
		row->n = d + 1;
	}
	return vis;
}

bool trace_lod_level(uint64_t res, struct trace_lod_lv *lv, xs_ps128 begin, xs_ps128 end)
{
	bool vis;

	if (!res)
		return true;
	vis = end - begin >= (xs_ps128)res || !lv->has || begin - lv->end >= (xs_ps128)res;
	if (vis) {
		lv->has = true;
		lv->end = end;
	}
	return vis;
}
