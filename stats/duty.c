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
 * self time). A chip of one plane whose only "XLA Ops" line is in start order
 * needs no merge: its lines are walked one by one (or the caller's walk of
 * its XLA Ops and XLA Modules lines already took them, struct
 * stats_duty_part), which gives the same union, span and timespans.
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
	int64_t done;           /* active time of the intervals counted out (tr_final()) */
	struct stats_busy span; /* of everything added (busy unused) */
};

/* IsOffDutyOp() (xprof/utils/op_utils.h), by hlo_category. */
static bool off_duty(const char *cat)
{
	static const char *const c[] = {"infeed",         "outfeed",   "host send",
					"host send-done", "host recv", "host recv-done",
					"megacore fusion"};

	if (!cat || (cat[0] != 'i' && cat[0] != 'o' && cat[0] != 'h' && cat[0] != 'm'))
		return false; /* the common case, one compare */
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
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
	stats_busy_widen(&t->span, b, e);
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
	bool tpu; /* a "/device:TPU:" plane */
	bool has_chip;
	uint64_t chip;
	uint8_t *off;             /* owned: per event metadata index, off duty (plane_off()) */
	int64_t dev_off, dev_dur; /* stat metadata keys (-1: none) */
	struct xs_stat_keys span; /* those of them the plane has */
	struct stats_busy op; /* of its XLA Ops and Steps events' device timespans (busy unused) */
	bool done;
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

/* plane_setup() - plane @q's chip and stat keys into @d. */
static int plane_setup(struct xs_rctx *rc, size_t q, struct duty_plane *d)
{
	const struct xs_plane *p = &rc->x->planes[q];
	struct wire_cur c;
	int r;

	d->tpu = true;
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
	return 0;
}

/* plane_off() - plane @q's metadata off duty into @d (for the merge, chip_walk()). */
static int plane_off(struct xs_rctx *rc, size_t q, struct duty_plane *d)
{
	const struct xs_plane *p = &rc->x->planes[q];
	struct xs_evmd *m;
	int r;

	if ((r = xs_plane_enter(rc, q)) < 0)
		return r;
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

/* dev_span() - event @ev's device_offset_ps / device_duration_ps into @v, read with @c. */
static int dev_span(struct xs_rctx *rc, struct wire_cur *c, const struct xs_event *ev,
		    const struct duty_plane *d, struct devspan *v)
{
	*v = (struct devspan){.d = d};
	if (!ev->has_stats)
		return 0;
	return xs_walk_stats_keys(rc, c, ev->stats_off, ev->off + ev->len - ev->stats_off,
				  XEVENT_F_STATS, &d->span, span_stat, v);
}

/* op_time() - XLA Ops or Steps event @ev of a TensorCore plane, read with @c: its first / last. */
static int op_time(struct xs_rctx *rc, struct wire_cur *c, const struct xs_event *ev,
		   struct duty_plane *d)
{
	struct devspan v;
	int64_t b = ev->start_ps, e = ev->end_ps;
	int r;

	if ((r = dev_span(rc, c, ev, d, &v)) < 0)
		return r;
	if (v.has_off && v.has_dur) /* GetDeviceEventTimespan() */
		b = v.off, e = xs_sat_add(v.off, v.dur);
	stats_busy_widen(&d->op, b, e);
	return 0;
}

/* ---- a chip of one plane, without a merge (struct stats_duty_part) ------------ */

bool stats_duty_part_fits(const struct xprofs_xspace *x, size_t q)
{
	const struct xs_plane *p = &x->planes[q];
	size_t ops = 0, lines = 0;
	bool sorted = true;

	if (strncmp(p->name, "/device:TPU:", 12) != 0)
		return false;
	for (size_t j = p->first_line; j < p->first_line + p->n_lines; j++) {
		const struct xs_line *l = &x->lines[j];

		if (xs_str_eq(l->name, l->name_len, "XLA Ops"))
			ops++, sorted = !l->unsorted;
		else if (!xs_str_eq(l->name, l->name_len, "XLA Modules") &&
			 !xs_str_eq(l->name, l->name_len, "Steps"))
			continue;
		lines++;
	}
	return ops == 1 && sorted && lines <= STATS_MERGE_MAX;
}

/* md_off_duty() - off_duty() of @md's category, noted in @md (not the shared empty entry). */
static bool md_off_duty(struct xs_evmd *md)
{
	bool off;

	if (md->off_duty)
		return md->off_duty == 2;
	off = off_duty(md->category);
	if (md != &xs_empty_evmd)
		md->off_duty = off ? 2 : 1;
	return off;
}

/* tr_add() of the span alone: [b, e) with e raised to b. */
static void part_span(struct stats_duty_part *d, int64_t b, int64_t e)
{
	stats_busy_widen(&d->span, b, e < b ? b : e);
}

void stats_duty_part_op(struct stats_duty_part *d, const struct xs_event *ev, struct xs_evmd *md,
			const int64_t *dev)
{
	int64_t b = ev->start_ps, e = ev->end_ps;

	if (ev->has_num) /* the merge leaves these out */
		return;
	part_span(d, b, e);
	if (e > b && !md_off_duty(md)) /* in start order: a running union */
		stats_union_add(&d->on, b, e);
	if (dev)
		b = dev[0], e = xs_sat_add(dev[0], dev[1]);
	stats_busy_widen(&d->dev, b, e);
}

void stats_duty_part_module(struct stats_duty_part *d, const struct xs_event *ev)
{
	if (!ev->has_num)
		part_span(d, ev->start_ps, ev->end_ps);
}

/* What part_event() needs: the part being filled, the plane's keys. */
struct part_walk {
	struct stats_duty_part *part;
	struct duty_plane *d;
	enum { PW_OPS, PW_MODULES, PW_STEPS } line;
};

/* part_event() - a xs_event_fn: one event of a plane alone on its chip (arg: struct part_walk). */
static int part_event(struct xs_rctx *rc, const struct xs_event *e, struct xs_evmd *md, void *arg)
{
	struct part_walk *w = arg;
	struct devspan v;
	int64_t dev[2];
	int r;

	if (e->has_num)
		return 0;
	if (w->line == PW_MODULES) {
		stats_duty_part_module(w->part, e);
		return 0;
	}
	if (w->line == PW_STEPS) /* TensorCore planes only: the caller's choice */
		return op_time(rc, &rc->ev, e, w->d);
	if ((r = dev_span(rc, &rc->ev, e, w->d, &v)) < 0)
		return r;
	dev[0] = v.off, dev[1] = v.dur;
	stats_duty_part_op(w->part, e, md, v.has_off && v.has_dur ? dev : NULL);
	return 0;
}

/*
 * part_chip() - plane @q, alone on its chip, into @out's sums: its XLA Ops
 * and XLA Modules lines from @given (or walked here when NULL), its Steps
 * lines walked here (TensorCores). 0 or -errno.
 */
static int part_chip(struct xs_rctx *rc, size_t q, struct duty_plane *d,
		     const struct stats_duty_part *given, struct stats_duty *out)
{
	const struct xprofs_xspace *x = rc->x;
	const struct xs_plane *p = &x->planes[q];
	bool tc = xs_plane_is_tensor_core(p);
	struct stats_duty_part own = {0};
	struct part_walk w = {&own, d, PW_OPS};
	struct stats_union on;
	int r;

	for (size_t j = p->first_line; j < p->first_line + p->n_lines; j++) {
		const struct xs_line *l = &x->lines[j];

		if (xs_str_eq(l->name, l->name_len, "Steps"))
			w.line = PW_STEPS;
		else if (given)
			continue;
		else if (xs_str_eq(l->name, l->name_len, "XLA Ops"))
			w.line = PW_OPS;
		else if (xs_str_eq(l->name, l->name_len, "XLA Modules"))
			w.line = PW_MODULES;
		else
			continue;
		if ((w.line != PW_STEPS || tc) &&
		    (r = xs_line_each(rc, j, NULL, part_event, &w)) < 0)
			return r;
	}
	if (!given)
		given = &own;
	on = given->on;
	stats_union_close(&on);
	out->active = xs_sat_add(out->active, on.b.busy);
	if (given->span.any)
		out->idle = xs_sat_add(out->idle, given->span.last - given->span.first - on.b.busy);
	if (tc && given->dev.any)
		stats_busy_widen(&d->op, given->dev.first, given->dev.last);
	return 0;
}

/* same_chip() - TPU plane @q2 is on TPU plane @q's chip (DutyCycleCombiner: both name it). */
static bool same_chip(const struct duty_plane *dp, size_t q, size_t q2)
{
	return q2 == q || (dp[q].has_chip && dp[q2].has_chip && dp[q2].chip == dp[q].chip);
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

		if (!d->tpu || d->done || !same_chip(dp, q0, l->plane))
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
		    xs_plane_is_tensor_core(&x->planes[l->plane]) &&
		    (r = op_time(rc, &ml->rc.ev, &ml->e, d)) < 0)
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

/* alone() - no plane after TPU plane @q names its chip (the earlier ones would have taken it). */
static bool alone(const struct xprofs_xspace *x, const struct duty_plane *dp, size_t q)
{
	for (size_t q2 = q + 1; q2 < x->n_planes; q2++)
		if (dp[q2].tpu && same_chip(dp, q, q2))
			return false;
	return true;
}

/* merge_chip() - plane @q's chip by a merge (chip_walk()) into @out's sums. */
static int merge_chip(struct xs_rctx *rc, struct duty_plane *dp, size_t q, struct stats_duty *out)
{
	const struct xprofs_xspace *x = rc->x;
	struct tracker t = {0};
	int r = 0;

	for (size_t q2 = q; q2 < x->n_planes && r == 0; q2++) /* chip_walk()'s planes */
		if (dp[q2].tpu && !dp[q2].done && !dp[q2].off && same_chip(dp, q, q2))
			r = plane_off(rc, q2, &dp[q2]);
	if (r == 0 && (r = chip_walk(rc, dp, q, &t)) == 0) {
		int64_t a = tr_active(&t);

		out->active = xs_sat_add(out->active, a);
		if (t.span.any)
			out->idle = xs_sat_add(out->idle, t.span.last - t.span.first - a);
	}
	free(t.v);
	return r;
}

int stats_tpu_duty(struct xs_rctx *rc, const struct stats_duty_part *const *parts,
		   struct stats_duty *out)
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
		if (!dp[q].tpu || dp[q].done)
			continue;
		if (alone(x, dp, q) && stats_duty_part_fits(x, q)) {
			dp[q].done = true;
			r = part_chip(rc, q, &dp[q], parts ? parts[q] : NULL, out);
		} else {
			r = merge_chip(rc, dp, q, out);
		}
	}
	for (size_t q = 0; q < x->n_planes; q++) {
		if (dp[q].op.any) /* SetTotalTimePs(last - first) of the plane's OpMetricsDb */
			out->op_span = xs_sat_add(out->op_span, dp[q].op.last - dp[q].op.first);
		free(dp[q].off);
	}
	free(dp);
	return r;
}
