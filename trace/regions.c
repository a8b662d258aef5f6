/*
 * regions.c - the "ThreadpoolListener::Region" events XProf's preprocessing
 * adds to a line: one per StartRegion ... StopRegion span, with the
 * StartRegion's consumer id (_c) and consumer type 15 (threadpool_event),
 * so each ends a flow. Both trace views put them on the line's thread.
 *
 * Sources: TSL preprocess_xplane.h ThreadpoolLineMutatorFactory
 * (ThreadpoolLineMutator::MutateEventsInLine()), run by PreprocessXPlane()
 * from PreprocessSingleHostXSpace() on a space not grouped yet; the names
 * kThreadpoolListenerStartRegion/StopRegion/Region (TSL xplane_schema).
 *
 * Design: the regions must go out where the sorted line has them (a region
 * starts with its StartRegion and, being longer, comes first), but a region
 * is only known at its StopRegion. So a line of a plane holding both marker
 * names is walked once ahead (the whole line, also in a slice), its regions
 * kept sorted by (start, longer first); the writers take them in turn before
 * each event (trace_regions_next()).
 *
 * Limits: at most REGIONS_MAX regions per line (later ones are not made);
 * markers are found by their metadata's full name (XProf looks the metadata
 * up by name: of two metadata with one name it takes one).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trace-internal.h"

#define REGIONS_MAX ((size_t)1 << 20)

static const char start_name[] = "\"ThreadpoolListener::StartRegion\"";
static const char stop_name[] = "\"ThreadpoolListener::StopRegion\"";

/* @m's full name (JSON) is @j (a literal). */
#define FULL_IS(m, j)                                                                              \
	((m)->full_json_len == sizeof(j) - 1 && !memcmp((m)->full_json, j, sizeof(j) - 1))

void trace_regions_free(struct trace_regions *g)
{
	free(g->r);
	memset(g, 0, sizeof(*g));
}

int trace_regions_plane(struct xs_rctx *rc, size_t pi, bool *on)
{
	const struct xs_mdix *ix = &rc->x->planes[pi].ev;
	bool start = false, stop = false;
	int r;

	*on = false;
	if (rc->x->grouped) /* PreprocessXPlane() runs only on a space not grouped yet */
		return 0;
	if ((r = xs_plane_enter(rc, pi)) < 0)
		return r;
	for (size_t k = 0; k < ix->n && !(start && stop); k++) {
		struct xs_evmd *m;

		if ((r = xs_md_event(rc, ix->md[k].key, &m)) < 0)
			return r;
		start |= FULL_IS(m, start_name);
		stop |= FULL_IS(m, stop_name);
		xs_md_gc(rc);
	}
	*on = start && stop;
	return 0;
}

/* The walk ahead: XProf's state (a start time of 0 is none) and the regions made. */
struct ahead {
	struct trace_regions *g;
	xs_ps128 base;
	int64_t start;
	uint64_t id, c;
	bool has_c;
};

/* A xs_stat_fn: the event's own _c, of any kind (IntOrUintValue(): 0 unless an integer; arg: struct ahead). */
static int consumer_stat(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s,
			 void *arg)
{
	struct ahead *a = arg;
	const struct xs_stmd *m;
	int r;

	(void)c;
	if ((r = xs_md_stat(rc, s->md, &m)) < 0)
		return r;
	if (trace_stat_kind(m->name, m->name_len) == TS_CID) {
		a->c = s->kind == SV_U64 || s->kind == SV_I64 ? s->u : 0;
		a->has_c = true;
	}
	return 0;
}

/* A xs_event_fn of the walk ahead (arg: struct ahead): MutateEventsInLine()'s loop. */
static int ahead_event(struct xs_rctx *rc, const struct xs_event *e, struct xs_evmd *m, void *arg)
{
	struct ahead *a = arg;
	struct trace_regions *g = a->g;
	int64_t ts = (int64_t)a->base + (e->has_num ? 0 : e->offset_ps); /* TimestampPs() */
	int r;

	if (FULL_IS(m, start_name)) {
		a->has_c = false;
		if (e->has_stats &&
		    (r = xs_walk_stats(rc, &rc->ev, e->stats_off, e->off + e->len - e->stats_off,
				       XEVENT_F_STATS, consumer_stat, a)) < 0)
			return r;
		if (a->has_c) {
			a->start = ts;
			a->id = a->c;
		}
	} else if (FULL_IS(m, stop_name) && a->start != 0 && g->n < REGIONS_MAX) {
		if ((r = xprofs_grow(&g->r, &g->cap, g->n, sizeof(*g->r), 64)) < 0)
			return r;
		g->r[g->n++] = (struct trace_region){.b = a->start, .e = ts, .id = a->id};
	}
	return 0;
}

/* SortXLine()'s order: start, then longer first; then the order they were made. */
static int cmp_region(const void *x, const void *y)
{
	const struct trace_region *a = x, *b = y;

	if (a->b != b->b)
		return a->b < b->b ? -1 : 1;
	if (a->e - a->b != b->e - b->b)
		return a->e - a->b > b->e - b->b ? -1 : 1;
	return a < b ? -1 : a > b;
}

int trace_regions_collect(struct xs_rctx *rc, size_t li, struct trace_regions *g)
{
	struct ahead a = {.g = g, .base = (xs_ps128)rc->x->lines[li].timestamp_ns * 1000};
	bool win = rc->win;
	int r;

	g->n = g->next = 0;
	g->win = win;
	g->from = rc->win_from;
	g->to = rc->win_to;
	rc->win = false; /* a region may start before a slice's window */
	r = xs_line_each(rc, li, NULL, ahead_event, &a);
	rc->win = win;
	if (r == 0 && g->n > 1)
		qsort(g->r, g->n, sizeof(*g->r), cmp_region);
	return r;
}

const struct trace_region *trace_regions_next(struct trace_regions *g, bool all, xs_ps128 ts,
					      int64_t dur)
{
	while (g->next < g->n) {
		const struct trace_region *r = &g->r[g->next];
		int64_t rd = r->e - r->b;

		if (!all && !((xs_ps128)r->b < ts || ((xs_ps128)r->b == ts && rd >= dur)))
			return NULL; /* the event goes first */
		g->next++;
		if (!g->win ||
		    ((xs_ps128)r->b < g->to && (xs_ps128)r->b + (rd > 0 ? rd : 1) > g->from))
			return r; /* in a slice, only those overlapping its window (render.c win_test) */
	}
	return NULL;
}

void trace_region_acc(const struct xprofs_xspace *x, const struct xs_plane *p,
		      const struct trace_region *r, struct trace_acc *a)
{
	/* SetOrAddStatValue(_c, region id), (_ct, kThreadpoolEvent): own stats, so a flow in */
	a->xf[TS_CID - TS_CORR] = r->id;
	a->xf[TS_CTYPE - TS_CORR] = TRACE_CONTEXT_THREADPOOL;
	a->xf_has |= 1u << (TS_CID - TS_CORR) | 1u << (TS_CTYPE - TS_CORR);
	xs_trace_xflows(x, p, a);
}
