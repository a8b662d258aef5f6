/*
 * duty.c - the TPU duty cycle and idle time of overview.json, as XProf's
 * ConstructDutyCycleTracker(), DutyCycleTracker and DutyCycleCombiner
 * (xplane_to_op_stats.cc, duty_cycle_tracker.cc, duty_cycle_combiner.h) and
 * IdleTimeRatio() of the device OpMetricsDb (op_metrics_db_utils.cc,
 * ConvertTensorCoreDeviceTraceXPlaneToOpMetricsDb()).
 *
 * Design: the TPU planes are grouped by chip (core_details' local_chip_id;
 * a plane without core_details is a chip of its own, CombineChip()). Per
 * chip one merge of its planes' "XLA Ops", "XLA Modules" and "Steps" lines
 * by start time (merge.c): "XLA Ops" events are active time unless their
 * hlo_category is off duty (IsOffDutyOp()), "XLA Modules" events only widen
 * the chip's span; the active time is kept as sorted disjoint intervals
 * (touching ones merged, as MergeOrInsert() does), and those ending before
 * the merge's time are final and counted out, so a chip holds O(1)
 * intervals (all of them when a line is out of order). The idle ratio takes
 * the first and last device timespan of each TensorCore plane's XLA Ops and
 * Steps events from the same merge; the op time is the caller's (ops.c's
 * self time).
 * Limits: DUTY_IVL_MAX disjoint intervals per chip (-E2BIG beyond); the first
 * STATS_MERGE_MAX lines of a chip.
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
	int64_t done; /* active time of the intervals counted out (tr_final()) */
	int64_t b, e; /* total span; valid when any */
	bool any;
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

/* tr_final() - the intervals ending before @t count out: no later event starts before @t. */
static void tr_final(struct tracker *t, int64_t at)
{
	size_t k = 0;

	while (k < t->n && t->v[k].e < at) {
		t->done = xs_sat_add(t->done, t->v[k].e - t->v[k].b);
		k++;
	}
	if (k) {
		memmove(t->v, &t->v[k], (t->n - k) * sizeof(*t->v));
		t->n -= k;
	}
}

static int64_t tr_active(const struct tracker *t)
{
	int64_t a = t->done;

	for (size_t i = 0; i < t->n; i++)
		a = xs_sat_add(a, t->v[i].e - t->v[i].b);
	return a;
}

/* A TPU plane's part: its chip, its lines' roles, its metadata off duty, its op span. */
struct duty_plane {
	bool has_chip;
	uint64_t chip;
	uint8_t *off;             /* owned: per event metadata index, off duty */
	int64_t dev_off, dev_dur; /* stat metadata keys (-1: none) */
	struct xs_stat_keys span; /* those of them the plane has */
	int64_t first, last;      /* of its XLA Ops and Steps events' device timespans */
	bool any_op, done;
};

/* core_stat() - a xs_stat_fn: the local_chip_id (field 4) of a core_details plane stat. */
static int core_stat(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s, void *arg)
{
	struct duty_plane *d = arg;
	const struct xs_stmd *m;
	const uint8_t *p, *e, *data;
	size_t n = s->len < CORE_DETAILS_MAX ? (size_t)s->len : CORE_DETAILS_MAX;
	uint64_t v;
	uint32_t f;
	int wt, r;

	if (s->kind != SV_BYTES)
		return 0;
	if ((r = xs_md_stat(rc, s->md, &m)) < 0)
		return r;
	if (!xs_str_eq(m->name, m->name_len, "core_details"))
		return 0;
	if ((r = wire_at(c, s->off, n, &p)) < 0)
		return r;
	/*
	 * XProf drops core details it cannot parse: a malformed one is a chip of
	 * its own. An absent local_chip_id is proto3's 0.
	 */
	d->chip = 0;
	d->has_chip = false;
	for (e = p + n; p < e;) {
		if (wire_rd_field(&p, e, &f, &wt, &v, &data) < 0)
			return 0;
		if (f == 4 && wt == WT_VARINT)
			d->chip = (uint32_t)v;
	}
	d->has_chip = true;
	return 0;
}

/* plane_setup() - plane @q's chip, stat keys and metadata off duty into @d. */
static int plane_setup(struct xs_rctx *rc, size_t q, struct duty_plane *d)
{
	const struct xs_plane *p = &rc->x->planes[q];
	struct wire_cur c;
	struct xs_evmd *m;
	int r;

	if ((r = xs_walk_plane_stats(rc, q, core_stat, d)) < 0)
		return r;
	wire_cur_init(&c, rc->x->r, NULL);
	d->dev_off = xs_stmd_key(&c, p, "device_offset_ps");
	d->dev_dur = xs_stmd_key(&c, p, "device_duration_ps");
	wire_cur_deinit(&c);
	if (d->dev_off != -1)
		xs_stat_keys_add(&d->span, d->dev_off);
	if (d->dev_dur != -1)
		xs_stat_keys_add(&d->span, d->dev_dur);
	if (!(d->off = calloc(p->ev.n ? p->ev.n : 1, 1)))
		return -ENOMEM;
	for (size_t k = 0; k < p->ev.n; k++) {
		xs_md_gc(rc);
		if ((r = xs_md_event(rc, p->ev.md[k].key, &m)) < 0)
			return r;
		d->off[k] = off_duty(m->category);
	}
	return 0;
}

/* What one event's device timespan stats say. */
struct devspan {
	const struct duty_plane *d;
	int64_t off, dur;
	bool has_off, has_dur;
};

/* A xs_stat_fn: device_offset_ps / device_duration_ps by the plane's keys (arg: struct devspan). */
static int span_stat(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s, void *arg)
{
	struct devspan *v = arg;

	(void)rc, (void)c;
	if ((s->kind != SV_U64 && s->kind != SV_I64) || s->md == -1) /* -1: the keys' "none" */
		return 0;
	if (s->md == v->d->dev_off)
		v->off = (int64_t)s->u, v->has_off = true;
	else if (s->md == v->d->dev_dur)
		v->dur = (int64_t)s->u, v->has_dur = true;
	return 0;
}

/* op_time() - an XLA Ops or Steps event of a TensorCore plane: its first / last. */
static int op_time(struct xs_rctx *rc, struct stats_mline *ml, struct duty_plane *d)
{
	struct devspan v = {.d = d};
	int64_t b = ml->e.start_ps, e = ml->e.end_ps;
	int r;

	if (ml->e.has_stats &&
	    (r = xs_walk_stats_keys(rc, &ml->rc.ev, ml->e.stats_off,
				    ml->e.off + ml->e.len - ml->e.stats_off, XEVENT_F_STATS,
				    &d->span, span_stat, &v)) < 0)
		return r;
	if (v.has_off && v.has_dur) /* GetDeviceEventTimespan() */
		b = v.off, e = xs_sat_add(v.off, v.dur);
	if (!d->any_op || b < d->first)
		d->first = b;
	if (!d->any_op || e > d->last)
		d->last = e;
	d->any_op = true;
	return 0;
}

/*
 * chip_walk() - the chip of plane @q0 (every plane of @dp with its chip, or
 * @q0 alone without one): one merge of their lines into @t.
 */
static int chip_walk(struct xs_rctx *rc, struct duty_plane *dp, size_t q0, struct tracker *t)
{
	const struct xprofs_xspace *x = rc->x;
	size_t *li = malloc(STATS_MERGE_MAX * sizeof(*li)), n = 0;
	struct stats_merge m = {0};
	bool ordered = true;
	int r = 0;

	if (!li)
		return -ENOMEM;
	for (size_t j = 0; j < x->n_lines && n < STATS_MERGE_MAX; j++) {
		const struct xs_line *l = &x->lines[j];
		struct duty_plane *d = &dp[l->plane];

		if (!d->off || d->done ||
		    (l->plane != q0 &&
		     (!d->has_chip || !dp[q0].has_chip || d->chip != dp[q0].chip)))
			continue;
		if (!xs_str_eq(l->name, l->name_len, "XLA Ops") &&
		    !xs_str_eq(l->name, l->name_len, "XLA Modules") &&
		    !xs_str_eq(l->name, l->name_len, "Steps"))
			continue;
		ordered &= !l->unsorted;
		li[n++] = j;
	}
	for (size_t k = 0; k < n; k++) /* their planes are this chip's */
		dp[x->lines[li[k]].plane].done = true;
	dp[q0].done = true;
	if (!n || (r = stats_merge_open(rc, li, n, NULL, &m)) < 0)
		goto out;
	while (m.nheap) {
		struct stats_mline *ml = stats_merge_top(&m);
		const struct xs_line *l = ml->it.l;
		struct duty_plane *d = &dp[l->plane];
		bool ops = xs_str_eq(l->name, l->name_len, "XLA Ops");
		ssize_t k = xs_md_find(ml->evx, ml->e.md);

		if (ordered)
			tr_final(t, ml->e.start_ps);
		if (!xs_str_eq(l->name, l->name_len, "Steps") &&
		    (r = tr_add(t, ml->e.start_ps, ml->e.end_ps, ops && !(k >= 0 && d->off[k]))) <
			    0)
			goto out;
		if (!xs_str_eq(l->name, l->name_len, "XLA Modules") &&
		    xs_plane_is_tensor_core(&x->planes[l->plane]) && (r = op_time(rc, ml, d)) < 0)
			goto out;
		if ((r = stats_merge_pop(&m)) < 0)
			goto out;
	}
	r = 0;
out:
	stats_merge_free(&m);
	free(li);
	return r;
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
	struct duty_plane *dp = calloc(x->n_planes + 1, sizeof(*dp));
	int r = 0;

	memset(out, 0, sizeof(*out));
	if (!dp)
		return -ENOMEM;
	for (size_t q = 0; q < x->n_planes && r == 0; q++)
		if (!strncmp(x->planes[q].name, "/device:TPU:", 12)) {
			out->planes++;
			r = plane_setup(rc, q, &dp[q]);
		}
	for (size_t q = 0; q < x->n_planes && r == 0; q++) {
		struct tracker t = {0};

		if (!dp[q].off || dp[q].done)
			continue;
		if ((r = chip_walk(rc, dp, q, &t)) == 0) {
			int64_t a = tr_active(&t);

			out->active = xs_sat_add(out->active, a);
			if (t.any)
				out->idle = xs_sat_add(out->idle, t.e - t.b - a);
		}
		free(t.v);
	}
	for (size_t q = 0; q < x->n_planes; q++) {
		if (dp[q].any_op) /* SetTotalTimePs(last - first) of the plane's OpMetricsDb */
			out->op_span = xs_sat_add(out->op_span, dp[q].last - dp[q].first);
		free(dp[q].off);
	}
	free(dp);
	return r;
}
