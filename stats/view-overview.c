/*
 * view-overview.c - overview.json: XProf's overview page as data
 * (op_stats_to_overview_page.cc, op_stats_to_input_pipeline_analysis.cc):
 * run environment, step-time summary, device duty cycle, host vs device op
 * time, the top device ops, FLOP utilization where peak rates are known and
 * a bottleneck statement with XProf's thresholds. docs/stats.md has every
 * field and what is missing without the HLO protos.
 *
 * Design: built from the other analyses' parts: stats_steps_overview() (steps,
 * breakdown), stats_device_busy() per device plane (union of its op lines),
 * stats_ops_plane() per plane, the device planes' ops combined by name
 * (stats_ops_merge()). Memory: O(distinct ops + steps).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats-internal.h"

#define TOP_OPS 10 /* kNumTopOpsShown */

/* op_stats_to_input_pipeline_analysis.cc's thresholds, in percent of the step time. */
#define INPUT_HIGH 20.0 /* kHighlyInfeedBoundThresholdInPercent */
#define INPUT_MODERATE 5.0
#define OUTPUT_HIGH 20.0 /* kHighlyOutfeedBoundThresholdInPercent */
#define OUTPUT_MODERATE 5.0
#define COLL_HIGH 15.0 /* kHighlyDeviceCollectivesBoundThresholdInPercent */
#define COLL_MODERATE 3.0
#define OTHER_HIGH 15.0 /* kHighlyAllOtherBoundThresholdInPercent */
#define OTHER_MODERATE 3.0

/* steps.json's breakdown indexes (steps.c's order) */
enum { B_IDLE, B_HCOMP, B_H2H, B_H2D, B_COLL, B_WAIT, B_D2D, B_D2H, B_DCOMP };

/* What the device planes add up to. */
struct ov_dev {
	uint64_t planes;
	int64_t busy, span;
	double flops, model_flops, peak_flop_s; /* peak_flop_s: Σ peak × span seconds */
	bool has_flops, has_model_flops, all_peaks;
	struct stats_plane_facts f; /* the first device plane's */
	struct stats_ops ops;       /* combined by name */
	int64_t host_self;
	int64_t host_occ, dev_occ;
};

static void out_cstr_or_null(struct xs_out *o, const char *s)
{
	if (s)
		xs_out_cstr(o, s);
	else
		OUT_LIT(o, "null");
}

/* What one plane contributes, computed by xs_tasks_run() (ov_task()). */
struct ov_slot {
	struct stats_ops ops;
	struct stats_busy busy; /* device planes */
	bool from_steps;        /* busy is left to the steps' sweep (stats_busy_in_steps()) */
};

/* The tasks of one overview: the steps' summary, then per plane its ops and its busy time. */
struct ov_tasks {
	struct stats_step_summary steps;
	struct ov_slot *slot;     /* owned, one per plane */
	struct stats_busy *sbusy; /* owned: the busy times the steps' sweep gave */
	bool *sbusy_ok;           /* owned: which */
};

/*
 * ov_task() - a xs_task_fn: task 0 is stats_steps_overview(), task 1 + 2q plane
 * q's ops, task 2 + 2q its busy time: the order a plane-by-plane loop takes.
 */
static int ov_task(struct xs_rctx *rc, size_t i, void *arg)
{
	struct ov_tasks *t = arg;
	size_t q = (i - 1) / 2;

	if (i == 0)
		return stats_steps_overview_busy(rc, &t->steps, t->sbusy, t->sbusy_ok);
	if (i % 2)
		return stats_ops_plane(rc, q, &t->slot[q].ops);
	if (!xs_plane_is_device(&rc->x->planes[q]) || t->slot[q].from_steps)
		return 0;
	return stats_device_busy(rc, q, &t->slot[q].busy);
}

/*
 * A xs_task_cost_fn: the events each task reads. The steps' sweep reads the
 * device op lines of the planes with steps twice (their union and breakdown),
 * and the host op lines for host steps: counted as all events, which puts it first.
 */
static uint64_t ov_cost(const struct xprofs_xspace *x, size_t i, void *arg)
{
	const struct ov_tasks *t = arg;
	size_t q = (i - 1) / 2;

	if (i == 0)
		return x->totals.events;
	if (i % 2 == 0) /* busy time: a merge without stats, device planes only */
		return xs_plane_is_device(&x->planes[q]) && !t->slot[q].from_steps
			       ? x->planes[q].events / 2
			       : 0;
	return x->planes[q].events;
}

/* ov_plane() - add device or host plane @q (its ops and busy time in @s) to @d. */
static int ov_plane(struct xs_rctx *rc, size_t q, struct ov_slot *s, struct ov_dev *d)
{
	const struct xs_plane *p = &rc->x->planes[q];
	struct stats_ops *ops = &s->ops;
	const struct stats_busy *b = &s->busy;

	if (!ops->events)
		return 0;
	for (size_t i = 0; i < ops->m.n; i++) {
		const struct op *op = &ops->m.ops[i];

		if (!xs_plane_is_device(p)) {
			d->host_occ = xs_sat_add(d->host_occ, op->occurrences);
			continue;
		}
		d->dev_occ = xs_sat_add(d->dev_occ, op->occurrences);
		if (op->total != op->self) /* UpdateNodeMetrics(): leaf ops only */
			continue;
		if (op->has_flops)
			d->flops += op->flops, d->has_flops = true;
		if (op->has_model_flops)
			d->model_flops += op->model_flops, d->has_model_flops = true;
	}
	if (!xs_plane_is_device(p)) {
		d->host_self = xs_sat_add(d->host_self, ops->self);
		return 0;
	}
	if (ops->f.peak_flops > 0) /* hfu/mfu over wall time: the plane's span, idle included */
		d->peak_flop_s += ops->f.peak_flops *
				  (double)(b->any ? xs_sat_add(b->last, -b->first) : 0) * 1e-12;
	else
		d->all_peaks = false;
	if (!d->planes++) {
		d->f = ops->f;
		memset(&ops->f, 0, sizeof(ops->f)); /* moved */
	}
	d->busy = xs_sat_add(d->busy, b->busy);
	d->span = xs_sat_add(d->span, b->any ? xs_sat_add(b->last, -b->first) : 0);
	return stats_ops_merge(&d->ops, ops);
}

/*
 * The accelerators as XProf's SetRunEnvironment() (xplane_to_op_stats.cc)
 * counts them: every GPU plane, else every TensorCore plane, else none.
 */
struct ov_env {
	uint64_t count;
	char model[128];  /* GPU: GpuModelName() of the first GPU plane */
	char *tpu_type;   /* owned; TPU: the first TensorCore's device_type_string */
	const char *type; /* what device_type shows: one of the above, or "CPU" */
};

static int env_get(struct xs_rctx *rc, struct ov_env *e)
{
	const struct xprofs_xspace *x = rc->x;
	struct stats_plane_facts f;
	ssize_t first = -1;
	bool gpu = false;
	int r = 0;

	memset(e, 0, sizeof(*e));
	for (size_t q = 0; q < x->n_planes; q++)
		gpu |= xs_plane_is_gpu(&x->planes[q]);
	for (size_t q = 0; q < x->n_planes; q++) {
		const struct xs_plane *p = &x->planes[q];

		if (gpu ? xs_plane_is_gpu(p) : xs_plane_is_tensor_core(p)) {
			if (first < 0)
				first = (ssize_t)q;
			e->count++;
		}
	}
	e->type = "CPU";
	if (first < 0)
		return 0;
	if ((r = stats_plane_facts_get(rc, (size_t)first, &f)) < 0)
		return r;
	if (gpu) {
		if (stats_gpu_model_name(&f, e->model, sizeof(e->model)) < 0 || !e->model[0])
			snprintf(e->model, sizeof(e->model), "GPU");
		e->type = e->model;
	} else {
		e->tpu_type = f.device_type;
		f.device_type = NULL; /* moved */
		e->type = e->tpu_type;
	}
	stats_plane_facts_clear(&f);
	return 0;
}

static void out_env(struct xs_out *o, const struct xprofs_xspace *x, const struct ov_dev *d,
		    const struct ov_env *e)
{
	OUT_LIT(o, "{\"host\":");
	if (x->hostnames.n)
		xs_out_str(o, x->hostnames.s[0], x->hostnames.len[0]);
	else
		OUT_LIT(o, "null");
	OUT_LIT(o, ",\"device_type\":");
	out_cstr_or_null(o, e->type);
	OUT_LIT(o, ",\"device_vendor\":");
	out_cstr_or_null(o, d->f.vendor);
	OUT_LIT(o, ",\"device_planes\":");
	xs_out_u64(o, d->planes);
	OUT_LIT(o, ",\"device_core_count\":");
	xs_out_u64(o, e->count);
	xs_out_opt_double(o, ",\"peak_flops_per_s\":", d->f.peak_flops > 0, d->f.peak_flops);
	xs_out_opt_double(o, ",\"peak_hbm_bytes_per_s\":", d->f.peak_bw > 0, d->f.peak_bw);
	OUT_LIT(o, "}");
}

static void out_device(struct xs_out *o, const struct ov_dev *d)
{
	if (!d->planes) {
		OUT_LIT(o, "null");
		return;
	}
	xs_out_key_i64(o, "{\"busy_ps\":", d->busy);
	xs_out_key_i64(o, ",\"span_ps\":", d->span);
	xs_out_opt_double(o, ",\"duty_cycle\":", d->span > 0, (double)d->busy / (double)d->span);
	xs_out_opt_double(o, ",\"idle_share\":", d->span > 0,
			  1.0 - (double)d->busy / (double)d->span);
	xs_out_opt_double(o, ",\"flops\":", d->has_flops, d->flops);
	xs_out_opt_double(o, ",\"model_flops\":", d->has_model_flops, d->model_flops);
	xs_out_opt_double(o, ",\"flops_per_s\":", d->has_flops && d->busy > 0,
			  d->flops / (double)d->busy * 1e12);
	xs_out_opt_double(o, ",\"hfu\":", d->has_flops && d->all_peaks && d->peak_flop_s > 0,
			  d->flops / d->peak_flop_s);
	xs_out_opt_double(o, ",\"mfu\":", d->has_model_flops && d->all_peaks && d->peak_flop_s > 0,
			  d->model_flops / d->peak_flop_s);
	OUT_LIT(o, "}");
}

static void out_op_time(struct xs_out *o, const struct ov_dev *d)
{
	int64_t all = xs_sat_add(d->host_occ, d->dev_occ);

	xs_out_key_i64(o, "{\"host_ops\":", d->host_occ);
	xs_out_key_i64(o, ",\"device_ops\":", d->dev_occ);
	xs_out_opt_double(o, ",\"host_op_share\":", all > 0, (double)d->host_occ / (double)all);
	xs_out_opt_double(o, ",\"device_op_share\":", all > 0, (double)d->dev_occ / (double)all);
	xs_out_key_i64(o, ",\"host_self_ps\":", d->host_self);
	xs_out_key_i64(o, ",\"device_self_ps\":", d->ops.self);
	OUT_LIT(o, "}");
}

/*
 * The top device ops by framework op (ComputeAnalysisResult(): the device ops folded by
 * CreateTfMetricsDbFromDeviceOpMetricsDb() without IDLE, by self time, fractions of their
 * time, FLOP rate over their time).
 */
static int out_top(struct xs_out *o, const struct stats_opstats *os)
{
	struct stats_opdb tf;
	size_t *idx = NULL, n;
	double cum = 0;
	int r;

	if ((r = stats_opdb_tf(&os->dev, false, &tf)) < 0)
		return r;
	if (!(idx = stats_opdb_sorted(&tf))) {
		stats_opdb_free(&tf);
		return -ENOMEM;
	}
	n = tf.n < TOP_OPS ? tf.n : TOP_OPS;
	OUT_LIT(o, "[");
	for (size_t i = 0; i < n; i++) {
		const struct stats_dbop *op = &tf.rows[idx[i]];
		double frac = stats_safe_div((double)op->self, (double)tf.total_time);

		cum += frac;
		OUT_RAW(o, i ? ",\n{\"name\":" : "\n{\"name\":");
		xs_out_cstr(o, op->name);
		OUT_LIT(o, ",\"category\":");
		xs_out_cstr(o, op->category);
		xs_out_key_i64(o, ",\"self_ps\":", op->self);
		OUT_LIT(o, ",\"self_share\":");
		xs_out_double(o, frac);
		OUT_LIT(o, ",\"cumulative_share\":");
		xs_out_double(o, cum);
		OUT_LIT(o, ",\"flops_per_s\":");
		xs_out_double(o, stats_safe_div(op->flops, (double)op->total) * 1e12);
		OUT_LIT(o, "}");
	}
	OUT_LIT(o, "]");
	free(idx);
	stats_opdb_free(&tf);
	return 0;
}

static const char *level(double pct, double high, double moderate)
{
	return pct >= high ? "high" : pct >= moderate ? "moderate" : "no";
}

/*
 * out_bottleneck() - GenericBottleneck's classifications from the average
 * step breakdown (input = host wait + host to device; all other = idle), the
 * verdict (the first "high" of input, communication, host/idle, output; else
 * compute when device compute is half the step or more; else the first
 * "moderate"; else "none") and a statement in words with the numbers.
 */
static void out_bottleneck(struct xs_out *o, const struct stats_step_summary *s)
{
	double in, coll, other, out, comp;
	const char *li, *lc, *lo, *lt, *kind = "none";
	char text[512];

	if (!s->has || !(s->avg > 0)) {
		OUT_LIT(o, "null");
		return;
	}
	in = 100.0 * (s->bd[B_WAIT] + s->bd[B_H2D]) / s->avg;
	coll = 100.0 * s->bd[B_COLL] / s->avg;
	other = 100.0 * s->bd[B_IDLE] / s->avg;
	out = 100.0 * s->bd[B_D2H] / s->avg;
	comp = 100.0 * s->bd[B_DCOMP] / s->avg;
	li = level(in, INPUT_HIGH, INPUT_MODERATE);
	lc = level(coll, COLL_HIGH, COLL_MODERATE);
	lo = level(other, OTHER_HIGH, OTHER_MODERATE);
	lt = level(out, OUTPUT_HIGH, OUTPUT_MODERATE);
	for (int pass = 0; pass < 2 && !strcmp(kind, "none"); pass++) {
		const char *want = pass ? "moderate" : "high";

		if (!strcmp(li, want))
			kind = "input";
		else if (!strcmp(lc, want))
			kind = "communication";
		else if (!strcmp(lo, want))
			kind = "host";
		else if (!strcmp(lt, want))
			kind = "output";
		else if (!pass && comp >= 50.0)
			kind = "compute";
	}
	snprintf(text, sizeof(text),
		 "%s-bound: of the average step (%.6g ps), %.1f %% is input (%s), %.1f %% "
		 "device collectives (%s), %.1f %% idle or host (%s), %.1f %% output (%s), "
		 "%.1f %% device compute",
		 kind, s->avg, in, li, coll, lc, other, lo, out, lt, comp);
	OUT_LIT(o, "{\"kind\":");
	xs_out_cstr(o, kind);
	xs_out_opt_double(o, ",\"input_percent\":", true, in);
	OUT_LIT(o, ",\"input\":");
	xs_out_cstr(o, li);
	xs_out_opt_double(o, ",\"collectives_percent\":", true, coll);
	OUT_LIT(o, ",\"collectives\":");
	xs_out_cstr(o, lc);
	xs_out_opt_double(o, ",\"all_other_percent\":", true, other);
	OUT_LIT(o, ",\"all_other\":");
	xs_out_cstr(o, lo);
	xs_out_opt_double(o, ",\"output_percent\":", true, out);
	OUT_LIT(o, ",\"output\":");
	xs_out_cstr(o, lt);
	xs_out_opt_double(o, ",\"device_compute_percent\":", true, comp);
	OUT_LIT(o, ",\"statement\":");
	xs_out_cstr(o, text);
	OUT_LIT(o, "}");
}

/*
 * stats_view_overview() - the steps' summary and each plane's ops and busy time
 * are independent: they are computed first (xs_tasks_run(), on several threads
 * when the profile allows), then the planes are added up in order.
 */
int stats_view_overview(struct xs_rctx *rc, struct xs_out *o)
{
	struct xprofs_xspace *x = rc->x;
	struct ov_tasks t;
	struct stats_step_summary *steps = &t.steps;
	struct ov_dev d;
	struct ov_env env;
	struct stats_opstats os;
	int r;

	memset(&os, 0, sizeof(os));
	memset(&d, 0, sizeof(d));
	memset(&env, 0, sizeof(env));
	memset(&t, 0, sizeof(t));
	d.ops.m.other = -1;
	d.all_peaks = true;
	t.slot = calloc(x->n_planes + 1, sizeof(*t.slot));
	t.sbusy = calloc(x->n_planes + 1, sizeof(*t.sbusy));
	t.sbusy_ok = calloc(x->n_planes + 1, sizeof(*t.sbusy_ok));
	if (!t.slot || !t.sbusy || !t.sbusy_ok) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t q = 0; q < x->n_planes; q++)
		t.slot[q].from_steps = stats_busy_in_steps(x, q);
	if ((r = xs_tasks_run(rc, 1 + 2 * x->n_planes, ov_task, ov_cost, &t)) < 0)
		goto out;
	for (size_t q = 0; q < x->n_planes; q++) {
		if (!t.slot[q].from_steps)
			continue;
		if (t.sbusy_ok[q])
			t.slot[q].busy = t.sbusy[q];
		else if ((r = stats_device_busy(rc, q, &t.slot[q].busy)) < 0)
			goto out;
	}
	for (size_t q = 0; q < x->n_planes; q++)
		if ((r = stats_opstats_add(rc, q, &t.slot[q].ops, NULL, &os)) < 0 ||
		    (r = ov_plane(rc, q, &t.slot[q], &d)) < 0)
			goto out;
	stats_opstats_finish(&os);
	if ((r = env_get(rc, &env)) < 0)
		goto out;
	OUT_LIT(o, "{\"run_environment\":");
	out_env(o, x, &d, &env);
	OUT_LIT(o, ",\n\"step_time\":");
	if (steps->has)
		stats_step_summary_write(o, x, steps);
	else
		OUT_LIT(o, "null");
	OUT_LIT(o, ",\n\"device\":");
	out_device(o, &d);
	OUT_LIT(o, ",\n\"op_time\":");
	out_op_time(o, &d);
	OUT_LIT(o, ",\n\"top_ops\":");
	if ((r = out_top(o, &os)) < 0)
		goto out;
	OUT_LIT(o, ",\n\"bottleneck\":");
	out_bottleneck(o, steps);
	OUT_LIT(o, "}\n");
out:
	for (size_t q = 0; t.slot && q < x->n_planes; q++)
		stats_ops_free(&t.slot[q].ops);
	free(t.slot);
	free(t.sbusy);
	free(t.sbusy_ok);
	stats_ops_free(&d.ops);
	stats_opstats_free(&os);
	stats_plane_facts_clear(&d.f);
	free(env.tpu_type);
	return r;
}
