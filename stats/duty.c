/*
 * duty.c - the TPU duty cycle and idle time of overview.json, as XProf's
 * ConstructDutyCycleTracker(), DutyCycleTracker and DutyCycleCombiner
 * (xplane_to_op_stats.cc, duty_cycle_tracker.cc, duty_cycle_combiner.h) and
 * IdleTimeRatio() of the device OpMetricsDb (op_metrics_db_utils.cc,
 * ConvertTensorCoreDeviceTraceXPlaneToOpMetricsDb()).
 *
 * Design: per TPU plane, the "XLA Ops" events are active time unless their
 * hlo_category is off duty (IsOffDutyOp()); "XLA Modules" events only widen
 * the plane's span. Active time is kept as sorted disjoint intervals
 * (touching ones merged, as MergeOrInsert() does), appended in the usual
 * time order and inserted by binary search otherwise. Planes that name the
 * same chip (core_details' local_chip_id) are united; a plane without
 * core_details counts as a chip of its own (CombineChip()). The idle ratio
 * walks the XLA Ops and Steps lines for their first and last device
 * timespan; the op time is the caller's (ops.c's self time).
 * Limits: DUTY_IVL_MAX disjoint intervals per chip (-E2BIG beyond).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stats-internal.h"

#define DUTY_IVL_MAX ((size_t)1 << 24)
#define CORE_DETAILS_MAX 256 /* bytes of a core_details stat read */

struct ivl {
	int64_t b, e;
};

/* XProf's DutyCycleTracker: the span of everything added, the union of the active part. */
struct tracker {
	struct ivl *v; /* owned, sorted, disjoint, not touching */
	size_t n, cap;
	int64_t b, e; /* total span; valid when any */
	bool any;
	bool has_chip;
	uint64_t chip;
};

/* IsOffDutyOp() (xprof/utils/op_utils.h), by hlo_category. */
static bool off_duty(const char *cat)
{
	static const char *const c[] = {"infeed",         "outfeed",   "host send",
					"host send-done", "host recv", "host recv-done",
					"megacore fusion"};

	for (size_t i = 0; cat && i < sizeof(c) / sizeof(c[0]); i++)
		if (!strcmp(cat, c[i]))
			return true;
	return false;
}

/* tr_add() - AddInterval(): widen the span by [b, e); with @active, unite it. */
static int tr_add(struct tracker *t, int64_t b, int64_t e, bool active)
{
	size_t lo, hi, k;
	int r;

	if (e < b)
		e = b;
	if (!t->any || b < t->b)
		t->b = b;
	if (!t->any || e > t->e)
		t->e = e;
	t->any = true;
	if (!active || e == b)
		return 0;                    /* an empty interval adds no active time */
	if (t->n && b >= t->v[t->n - 1].b) { /* the usual case: at or after the last */
		if (b <= t->v[t->n - 1].e) {
			if (e > t->v[t->n - 1].e)
				t->v[t->n - 1].e = e;
			return 0;
		}
	} else if (t->n) { /* out of order: the first interval ending at or after b */
		for (lo = 0, hi = t->n; lo < hi;) {
			size_t mid = lo + (hi - lo) / 2;

			if (t->v[mid].e < b)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (k = lo; k < t->n && t->v[k].b <= e; k++)
			;
		if (k > lo) { /* merge [lo, k) with [b, e) */
			t->v[lo].b = b < t->v[lo].b ? b : t->v[lo].b;
			t->v[lo].e = e > t->v[k - 1].e ? e : t->v[k - 1].e;
			memmove(&t->v[lo + 1], &t->v[k], (t->n - k) * sizeof(*t->v));
			t->n -= k - lo - 1;
			return 0;
		}
		if (t->n >= DUTY_IVL_MAX)
			return -E2BIG;
		if ((r = xprofs_grow(&t->v, &t->cap, t->n, sizeof(*t->v), 64)) < 0)
			return r;
		memmove(&t->v[lo + 1], &t->v[lo], (t->n - lo) * sizeof(*t->v));
		t->v[lo] = (struct ivl){b, e};
		t->n++;
		return 0;
	}
	if (t->n >= DUTY_IVL_MAX)
		return -E2BIG;
	if ((r = xprofs_grow(&t->v, &t->cap, t->n, sizeof(*t->v), 64)) < 0)
		return r;
	t->v[t->n++] = (struct ivl){b, e};
	return 0;
}

static int64_t tr_active(const struct tracker *t)
{
	int64_t a = 0;

	for (size_t i = 0; i < t->n; i++)
		a = xs_sat_add(a, t->v[i].e - t->v[i].b);
	return a;
}

/* tr_union() - Union(): @src's span and intervals into @dst. */
static int tr_union(struct tracker *dst, const struct tracker *src)
{
	int r = 0;

	if (src->any && (r = tr_add(dst, src->b, src->e, false)) < 0)
		return r;
	for (size_t i = 0; i < src->n && r == 0; i++)
		r = tr_add(dst, src->v[i].b, src->v[i].e, true);
	return r;
}

/* One TPU plane's walk: its tracker, and the first / last device timespan of its op lines. */
struct duty_plane {
	struct tracker t;
	bool ops_line;  /* the line being walked is XLA Ops (else Modules or Steps) */
	bool time_line; /* it counts in the first / last op timestamps */
	bool duty_line; /* it counts in the tracker */
	int64_t first, last;
	bool any_op;
};

/* core_stat() - a xs_stat_fn: the local_chip_id (field 4) of a core_details plane stat. */
static int core_stat(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s, void *arg)
{
	struct tracker *t = arg;
	const struct xs_stmd *m;
	const uint8_t *p, *e, *data;
	size_t n = s->len < CORE_DETAILS_MAX ? (size_t)s->len : CORE_DETAILS_MAX;
	uint64_t v;
	uint32_t f;
	int wt, r;

	if (s->kind != SV_BYTES || (r = xs_md_stat(rc, s->md, &m)) < 0)
		return s->kind != SV_BYTES ? 0 : r;
	if (!xs_str_eq(m->name, m->name_len, "core_details"))
		return 0;
	if ((r = wire_at(c, s->off, s->len < CORE_DETAILS_MAX ? s->len : CORE_DETAILS_MAX, &p)) < 0)
		return r;
	/*
	 * XProf drops core details it cannot parse: a malformed one is a chip of
	 * its own. An absent local_chip_id is proto3's 0.
	 */
	t->chip = 0;
	t->has_chip = false;
	for (e = p + n; p < e;) {
		if (wire_rd_field(&p, e, &f, &wt, &v, &data) < 0)
			return 0;
		if (f == 4 && wt == WT_VARINT)
			t->chip = (uint32_t)v;
	}
	t->has_chip = true;
	return 0;
}

/* A xs_event_fn over one line of a TPU plane (arg: struct duty_plane). */
static int duty_event(struct xs_rctx *rc, const struct xs_event *e, struct xs_evmd *m, void *arg)
{
	struct duty_plane *d = arg;
	int64_t b = e->start_ps, end = e->end_ps;
	int r;

	if (d->duty_line &&
	    (r = tr_add(&d->t, e->start_ps, e->end_ps, d->ops_line && !off_duty(m->category))) < 0)
		return r;
	if (!d->time_line)
		return 0;
	if (e->has_stats) { /* GetDeviceEventTimespan() */
		struct xs_opstats os = {.borrow = true};

		r = xs_walk_stats(rc, &rc->ev, e->stats_off, e->off + e->len - e->stats_off,
				  XEVENT_F_STATS, xs_collect_stat, &os);
		if (r == 0 && os.has_dev_off && os.has_dev_dur)
			b = os.dev_off, end = xs_sat_add(os.dev_off, os.dev_dur);
		xs_opstats_clear(&os);
		if (r < 0)
			return r;
	}
	if (!d->any_op || b < d->first)
		d->first = b;
	if (!d->any_op || end > d->last)
		d->last = end;
	d->any_op = true;
	return 0;
}

/* duty_plane_walk() - plane @q's tracker and op span into @d (zeroed by the caller). */
static int duty_plane_walk(struct xs_rctx *rc, size_t q, struct duty_plane *d)
{
	const struct xprofs_xspace *x = rc->x;
	const struct xs_plane *p = &x->planes[q];
	int r;

	if ((r = xs_walk_plane_stats(rc, q, core_stat, &d->t)) < 0)
		return r;
	for (size_t j = p->first_line; j < p->first_line + p->n_lines; j++) {
		const struct xs_line *l = &x->lines[j];
		bool ops = xs_str_eq(l->name, l->name_len, "XLA Ops");
		bool mods = xs_str_eq(l->name, l->name_len, "XLA Modules");
		bool steps = xs_str_eq(l->name, l->name_len, "Steps");

		if (!ops && !mods && !steps)
			continue;
		d->ops_line = ops;
		d->duty_line = ops || mods;
		d->time_line = (ops || steps) && xs_plane_is_tensor_core(p);
		if ((r = xs_line_each(rc, j, NULL, duty_event, d)) < 0)
			return r;
	}
	return 0;
}

bool stats_is_tpu(const struct xprofs_xspace *x)
{
	for (size_t q = 0; q < x->n_planes; q++)
		if (!strncmp(x->planes[q].name, "/device:TPU:", 12))
			return true;
	return false;
}

int stats_tpu_duty(struct xs_rctx *rc, struct stats_duty *out)
{
	const struct xprofs_xspace *x = rc->x;
	struct tracker *chips = calloc(x->n_planes + 1, sizeof(*chips));
	size_t nchips = 0;
	int r = 0;

	memset(out, 0, sizeof(*out));
	if (!chips)
		return -ENOMEM;
	for (size_t q = 0; q < x->n_planes && r == 0; q++) {
		struct duty_plane d;
		size_t c;

		if (strncmp(x->planes[q].name, "/device:TPU:", 12))
			continue;
		memset(&d, 0, sizeof(d));
		if ((r = duty_plane_walk(rc, q, &d)) < 0) {
			free(d.t.v);
			break;
		}
		if (d.any_op) /* SetTotalTimePs(last - first) of the plane's OpMetricsDb */
			out->op_span = xs_sat_add(out->op_span, d.last - d.first);
		out->planes++;
		for (c = 0; c < nchips && d.t.has_chip; c++)
			if (chips[c].has_chip && chips[c].chip == d.t.chip)
				break;
		if (d.t.has_chip && c < nchips) { /* CombineCore(): this chip's union */
			r = tr_union(&chips[c], &d.t);
			free(d.t.v);
		} else { /* a new chip, or CombineChip(): one of its own */
			chips[nchips++] = d.t;
		}
	}
	for (size_t c = 0; c < nchips; c++) {
		int64_t a = tr_active(&chips[c]);

		out->active = xs_sat_add(out->active, a);
		if (chips[c].any)
			out->idle = xs_sat_add(out->idle, chips[c].e - chips[c].b - a);
		free(chips[c].v);
	}
	free(chips);
	return r;
}
