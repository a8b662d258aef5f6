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
 * stats_tpu_duty() on TPU hosts (after the op tables: their walks of the
 * XLA Ops lines take its part where they can),
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
#define INPUT_HIGH 20.0    /* kHighlyInfeedBoundThresholdInPercent */
#define INPUT_MODERATE 5.0 /* kModeratelyInfeedBoundThresholdInPercent */
#define COLL_HIGH 15.0     /* kHighlyDeviceCollectivesBoundThresholdInPercent */
#define COLL_MODERATE 3.0
#define LAUNCH_HIGH 15.0 /* kHighlyKernelLaunchBoundThresholdInPercent */
#define LAUNCH_MODERATE 3.0
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
};

/* The tasks of one overview: the steps' summary, then per plane its ops and its busy time. */
struct ov_tasks {
	struct stats_step_summary steps;
	struct ov_slot *slot;     /* owned, one per plane, then the cut plane's second part */
	struct stats_ops_cut cut; /* the biggest host plane's ops made in two parts */
	bool *busy_done;          /* owned, per plane: the steps took its busy time on the way */
	bool tpu;                 /* XProf's TPU analysis: the duty cycle task runs */
	struct stats_duty duty;
	struct stats_hints *hints; /* owned: the op walks' notes for the steps (hints.c) */
};

/*
 * ov_steps() - stats_steps_overview_busy(), which takes the device planes'
 * busy time where its pass 2 merges their op lines anyway. It runs after
 * the plane tasks, not as one of them: its own parts (the planes' event
 * classes, pass 2's two halves of the time) are tasks too, and a task's
 * tasks run one after another (xs_tasks_run()), which left the steps, half
 * of a GPU overview's work, on one thread while the planes' op tables
 * finished early on the other. After them, pass 2 reads the groups of the
 * device events from the op walks' notes instead of decoding their stats
 * again (hints.c).
 */
static int ov_steps(struct xs_rctx *rc, struct ov_tasks *t)
{
	struct stats_busy *busy = calloc(rc->x->n_planes + 1, sizeof(*busy));
	int r = busy ? stats_steps_overview_busy(rc, &t->steps, busy, t->busy_done, t->hints)
		     : -ENOMEM;

	for (size_t p = 0; r == 0 && p < rc->x->n_planes; p++)
		if (t->busy_done[p])
			t->slot[p].busy = busy[p];
	free(busy);
	return r;
}

/*
 * ov_task() - a xs_task_fn: op-table task @q (stats_ops_task(): plane q's
 * ops, with a host plane's host_tf_ops and a TPU plane's duty part on the
 * same walk; q == n_planes the cut host plane's second part).
 */
static int ov_task(struct xs_rctx *rc, size_t q, void *arg)
{
	struct ov_tasks *t = arg;

	return stats_ops_task(rc, &t->cut, q, true, t->hints, &t->slot[q].ops);
}

/*
 * ov_duty() - the TPU duty cycle, from the parts the planes' op walks took
 * (struct stats_duty_part) where they could.
 */
static int ov_duty(struct xs_rctx *rc, struct ov_tasks *t)
{
	const struct stats_duty_part **parts = calloc(rc->x->n_planes + 1, sizeof(*parts));
	int r;

	if (!parts)
		return -ENOMEM;
	for (size_t q = 0; q < rc->x->n_planes; q++)
		parts[q] = t->slot[q].ops.has_duty ? &t->slot[q].ops.duty : NULL;
	r = stats_tpu_duty(rc, parts, &t->duty);
	free(parts);
	return r;
}

/*
 * ov_busy() - a xs_task_fn: device plane @q's busy time, unless the steps
 * took it; task n_planes: the TPU duty cycle.
 */
static int ov_busy(struct xs_rctx *rc, size_t q, void *arg)
{
	struct ov_tasks *t = arg;

	if (q == rc->x->n_planes)
		return t->tpu ? ov_duty(rc, t) : 0;
	if (!xs_plane_is_device(&rc->x->planes[q]) || t->busy_done[q])
		return 0;
	if (t->slot[q].ops.has_busy) { /* one line's: the op table's walk took it */
		t->slot[q].busy = t->slot[q].ops.busy;
		return 0;
	}
	return stats_device_busy(rc, q, &t->slot[q].busy);
}

static uint64_t ov_busy_cost(const struct xprofs_xspace *x, size_t q, void *arg)
{
	const struct ov_tasks *t = arg;

	if (q == x->n_planes) /* the duty cycle: the lines no op walk took */
		return t->tpu ? x->totals.events / 8 : 0;
	return xs_plane_is_device(&x->planes[q]) && !t->busy_done[q] && !t->slot[q].ops.has_busy
		       ? x->planes[q].events
		       : 0;
}

/* A xs_task_cost_fn: the events each op-table task reads. */
static uint64_t ov_cost(const struct xprofs_xspace *x, size_t q, void *arg)
{
	return stats_ops_task_cost(x, &((const struct ov_tasks *)arg)->cut, q);
}

/* ov_plane() - add device or host plane @q (its ops and busy time in @s) to @d. */
static int ov_plane(struct xs_rctx *rc, size_t q, struct ov_slot *s, struct ov_dev *d)
{
	const struct xs_plane *p = &rc->x->planes[q];
	struct stats_ops *ops = &s->ops;
	const struct stats_busy *b = &s->busy;

	/* host_tf_op_percent counts XProf's host framework ops, not the host op table */
	d->host_occ = xs_sat_add(d->host_occ, (int64_t)ops->host_tf_ops);
	/* a GPU busy with kernels XProf's table leaves out (ops->un) still counts
	 * towards the device's busy time and span */
	if (!ops->events && !ops->un_events)
		return 0;
	for (size_t i = 0; i < ops->m.n; i++) {
		const struct op *op = &ops->m.ops[i];

		if (!xs_plane_is_device(p))
			continue;
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

/*
 * out_device() - busy, span and duty cycle: on TPU hosts XProf's duty cycle
 * (@duty, stats_tpu_duty()) and device_idle_time_percent (1 − op self time ÷
 * the planes' op spans, IdleTimeRatio()); elsewhere the union of the op
 * lines over their span, and no idle share (XProf computes none off TPU).
 */
static void out_device(struct xs_out *o, const struct ov_dev *d, const struct stats_duty *duty)
{
	int64_t busy = d->busy, span = d->span;

	if (!d->planes) {
		OUT_LIT(o, "null");
		return;
	}
	if (duty) {
		busy = duty->active;
		span = xs_sat_add(duty->active, duty->idle);
	}
	xs_out_key_i64(o, "{\"busy_ps\":", busy);
	xs_out_key_i64(o, ",\"span_ps\":", span);
	xs_out_opt_double(o, ",\"duty_cycle\":", span > 0, (double)busy / (double)span);
	xs_out_opt_double(o, ",\"idle_share\":", duty != NULL,
			  1.0 - (duty && duty->op_span > 0
					 ? (double)d->ops.self / (double)duty->op_span
					 : 0));
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
		const struct stats_dbop *op = &tf.r[idx[i]];
		double frac = stats_safe_div((double)op->op.self, (double)tf.total_time);

		cum += frac;
		OUT_RAW(o, i ? ",\n{\"name\":" : "\n{\"name\":");
		xs_out_cstr(o, op->op.name);
		OUT_LIT(o, ",\"category\":");
		xs_out_cstr(o, op->op.category);
		xs_out_key_i64(o, ",\"self_ps\":", op->op.self);
		OUT_LIT(o, ",\"self_share\":");
		xs_out_double(o, frac);
		OUT_LIT(o, ",\"cumulative_share\":");
		xs_out_double(o, cum);
		OUT_LIT(o, ",\"flops_per_s\":");
		xs_out_double(o, stats_safe_div(op->op.flops, (double)op->op.total) * 1e12);
		OUT_LIT(o, "}");
	}
	OUT_LIT(o, "]");
	free(idx);
	stats_opdb_free(&tf);
	return 0;
}

/* One of BottleneckAnalysis's classifications: "high" / "moderate" / "no" and its statement. */
struct ov_class {
	const char *level;
	char text[320];
};

/*
 * classify() - DeviceCollectivesAnalysis(), KernelLaunchAnalysis() (tf.data
 * is never seen in use: no contention sentence) and AllOtherAnalysis():
 * @pct against @high / @moderate, the statement "<pct> @what" (OneDigit()).
 */
static void classify(struct ov_class *c, double pct, double high, double moderate, const char *what)
{
	c->level = pct >= high ? "high" : pct >= moderate ? "moderate" : "no";
	c->text[0] = 0;
	if (pct >= moderate)
		snprintf(c->text, sizeof(c->text), "%.1f%s", pct, what);
}

static void out_class(struct xs_out *o, const char *key, const struct ov_class *c)
{
	OUT_LIT(o, ",\"");
	xs_out_add(o, key, strlen(key));
	OUT_LIT(o, "\":");
	xs_out_cstr(o, c->level);
	OUT_LIT(o, ",\"");
	xs_out_add(o, key, strlen(key));
	OUT_LIT(o, "_statement\":");
	xs_out_cstr(o, c->text);
}

/*
 * input_analysis() - InputAnalysis(): the classification ("host", "both",
 * "device") and statement of @in percent input time, or of @other percent
 * all-other time when input is low; true when it reported the all-other time.
 */
static bool input_analysis(double in, double other, const char **kind, char *text, size_t cap)
{
	if (in >= INPUT_HIGH) {
		*kind = "host";
		snprintf(text, cap,
			 "Your program is HIGHLY input-bound because %.1f%% of the total step time "
			 "sampled is waiting for input. Therefore, you should first focus on "
			 "reducing the input time.",
			 in);
		return false;
	}
	if (in >= INPUT_MODERATE) {
		*kind = "both";
		snprintf(text, cap,
			 "Your program is MODERATELY input-bound because %.1f%% of the total step "
			 "time sampled is waiting for input. Therefore, you would need to reduce "
			 "both the input time and other time.",
			 in);
		return false;
	}
	if (other >= OTHER_MODERATE) {
		*kind = "both";
		snprintf(text, cap,
			 "Your program is POTENTIALLY input-bound because %.1f%% of the total step "
			 "time sampled is spent on 'All Others' time (which could be due to I/O or "
			 "Python execution or both).",
			 other);
		return true;
	}
	*kind = "device";
	snprintf(text, cap,
		 "Your program is NOT input-bound because only %.1f%% of the total step time "
		 "sampled is waiting for input. Therefore, you should focus on reducing other "
		 "time.",
		 in);
	return false;
}

/*
 * out_bottleneck() - the overview's recommendation as XProf's
 * ComputeBottleneckAnalysis() makes it (op_stats_to_input_pipeline_analysis.cc)
 * from the steps' breakdown summed in ms (@s): the percentages of the total
 * step time, InputAnalysis()'s classification and statement, and the device
 * collectives, kernel launch and all-other classifications. Without step
 * time: "unknown" and XProf's statement that says so.
 */
static void out_bottleneck(struct xs_out *o, const struct stats_step_summary *s)
{
	double t = s->has ? s->ms_step : 0, in, out, comp, coll, idle, launch, other;
	struct ov_class cc, cl, co;
	const char *kind;
	char text[512];
	bool reported;

	if (!(t != 0)) {
		OUT_LIT(o,
			"{\"kind\":\"unknown\",\"statement\":\"No step time measured. Therefore we "
			"cannot tell where the performance bottleneck is.\"");
		OUT_LIT(o, ",\"input_percent\":null,\"output_percent\":null,\"idle_percent\":null,"
			   "\"compute_percent\":null,\"device_collectives_percent\":null,"
			   "\"kernel_launch_percent\":null,\"all_other_percent\":null");
		OUT_LIT(o, ",\"device_collectives\":\"no\",\"device_collectives_statement\":\"\","
			   "\"kernel_launch\":\"no\",\"kernel_launch_statement\":\"\","
			   "\"all_other\":\"no\",\"all_other_statement\":\"\"}");
		return;
	}
	in = 100.0 * s->ms_input / t;
	out = 100.0 * s->ms[B_D2H] / t;
	comp = 100.0 * s->ms[B_DCOMP] / t;
	coll = 100.0 * s->ms[B_COLL] / t;
	idle = 100.0 - in - out - comp - coll;
	idle = idle > 0 ? idle : 0;
	launch = 0; /* HOST_PREPARE: XProf's step events never hold it (docs/stats.md) */
	other = 100.0 * s->ms[B_IDLE] / t;
	reported = input_analysis(in, other, &kind, text, sizeof(text));
	classify(&cc, coll, COLL_HIGH, COLL_MODERATE,
		 " % of the total step time sampled is spent on 'Device Collective "
		 "Communication'.");
	classify(&cl, launch, LAUNCH_HIGH, LAUNCH_MODERATE,
		 " % of the total step time sampled is spent on 'Kernel Launch'.");
	classify(&co, reported ? 0 : other, OTHER_HIGH, OTHER_MODERATE,
		 " % of the total step time sampled is spent on 'All Others' time. This could "
		 "be due to Python execution overhead.");
	OUT_LIT(o, "{\"kind\":");
	xs_out_cstr(o, kind);
	OUT_LIT(o, ",\"statement\":");
	xs_out_cstr(o, text);
	xs_out_opt_double(o, ",\"input_percent\":", true, in);
	xs_out_opt_double(o, ",\"output_percent\":", true, out);
	xs_out_opt_double(o, ",\"idle_percent\":", true, idle);
	xs_out_opt_double(o, ",\"compute_percent\":", true, comp);
	xs_out_opt_double(o, ",\"device_collectives_percent\":", true, coll);
	xs_out_opt_double(o, ",\"kernel_launch_percent\":", true, launch);
	xs_out_opt_double(o, ",\"all_other_percent\":", true, other);
	out_class(o, "device_collectives", &cc);
	out_class(o, "kernel_launch", &cl);
	out_class(o, "all_other", &co);
	OUT_LIT(o, "}");
}

/* XProf's diagnostics.cc messages (PopulateOverviewDiagnostics(), PopulateStepDiagnostics()). */
static const char no_device_trace[] =
	"No TensorCore device trace was collected. This might happen if your job hadn't been run "
	"on the device when sampling was turned on. You could try the sampling again later.";
static const char no_step_marker[] =
	"No step marker observed and hence the step time is unknown. This may happen if (1) "
	"training steps are not instrumented (e.g., if you are not using Keras) or (2) the "
	"profiling duration is shorter than the step time. For (1), you need to add step "
	"instrumentation; for (2), you may try to profile longer.";

struct ov_str { /* a borrowed string */
	const char *s;
	size_t n;
};

static int str_cmp(const void *a, const void *b)
{
	const struct ov_str *x = a, *y = b;
	int c = memcmp(x->s, y->s, x->n < y->n ? x->n : y->n);

	return c ? c : x->n < y->n ? -1 : x->n > y->n;
}

/*
 * out_unique() - the strings of @s, each once, sorted (XProf keeps the
 * XSpace's errors and warnings in a hash set; errors it sorts), then @more
 * (NULL: none). -ENOMEM.
 */
static int out_unique(struct xs_out *o, const struct xs_strs *s, const char *more)
{
	struct ov_str *v = malloc((s->n ? s->n : 1) * sizeof(*v));
	size_t n = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < s->n; i++)
		v[i] = (struct ov_str){s->s[i], s->len[i]};
	qsort(v, s->n, sizeof(*v), str_cmp);
	OUT_LIT(o, "[");
	for (size_t i = 0; i < s->n; i++) {
		if (i && !str_cmp(&v[i - 1], &v[i]))
			continue;
		OUT_RAW(o, n ? "," : "");
		xs_out_str(o, v[i].s, v[i].n);
		n++;
	}
	if (more) {
		OUT_RAW(o, n ? "," : "");
		xs_out_cstr(o, more);
	}
	OUT_LIT(o, "]");
	free(v);
	return 0;
}

/*
 * out_diagnostics() - PopulateOverviewDiagnostics(): the XSpace's errors
 * (else XProf's "no device trace" error when a device type has no cores),
 * its warnings and the step diagnostic (no steps: "No step marker
 * observed..."); XProf's overview adds no info.
 */
static int out_diagnostics(struct xs_out *o, const struct xprofs_xspace *x, const struct ov_env *e,
			   const struct stats_step_summary *s)
{
	bool nodev = !x->errors.n && strcmp(e->type ? e->type : "", "CPU") && e->count == 0;
	int r;

	OUT_LIT(o, "{\"info\":[],\"warnings\":");
	if ((r = out_unique(o, &x->warnings, s->has ? NULL : no_step_marker)) < 0)
		return r;
	OUT_LIT(o, ",\"errors\":");
	if ((r = out_unique(o, &x->errors, nodev ? no_device_trace : NULL)) < 0)
		return r;
	OUT_LIT(o, "}");
	return 0;
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
	t.busy_done = calloc(x->n_planes + 1, sizeof(*t.busy_done));
	if (!t.slot || !t.busy_done) {
		r = -ENOMEM;
		goto out;
	}
	t.tpu = stats_is_tpu(x);
	stats_ops_cut(x, &t.cut);
	if ((r = stats_hints_new(x->n_lines, &t.hints)) < 0 ||
	    (r = xs_tasks_run(rc, stats_ops_ntasks(x, &t.cut), ov_task, ov_cost, &t)) < 0 ||
	    (t.cut.line && (r = stats_ops_join(rc, &t.cut, &t.slot[t.cut.plane].ops,
					       &t.slot[x->n_planes].ops)) < 0) ||
	    (r = ov_steps(rc, &t)) < 0)
		goto out;
	stats_hints_free(t.hints);
	t.hints = NULL;
	if ((r = xs_tasks_run(rc, x->n_planes + 1, ov_busy, ov_busy_cost, &t)) < 0)
		goto out;
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
		stats_step_summary_write(o, steps);
	else
		OUT_LIT(o, "null");
	OUT_LIT(o, ",\n\"device\":");
	out_device(o, &d, t.tpu ? &t.duty : NULL);
	OUT_LIT(o, ",\n\"op_time\":");
	out_op_time(o, &d);
	OUT_LIT(o, ",\n\"top_ops\":");
	if ((r = out_top(o, &os)) < 0)
		goto out;
	OUT_LIT(o, ",\n\"bottleneck\":");
	out_bottleneck(o, steps);
	OUT_LIT(o, ",\n\"diagnostics\":");
	if ((r = out_diagnostics(o, x, &env, steps)) < 0)
		goto out;
	OUT_LIT(o, "}\n");
out:
	for (size_t q = 0; t.slot && q <= x->n_planes; q++) /* the cut's second part too */
		stats_ops_free(&t.slot[q].ops);
	free(t.slot);
	free(t.busy_done);
	stats_hints_free(t.hints);
	stats_ops_free(&d.ops);
	stats_opstats_free(&os);
	stats_plane_facts_clear(&d.f);
	free(env.tpu_type);
	return r;
}
