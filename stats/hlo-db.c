/*
 * hlo-db.c - a host's device op database as hlo_stats.json and
 * roofline.json read it (docs/stats.md "hlo_stats.json"): XProf's
 * OpStats::device_op_metrics_db, the device planes' op tables (ops.c)
 * combined as OpMetricsDbCombiner does, keyed by (program id, op name)
 * (LookupOrInsertNewOpMetrics(hlo_module_id, name)), each op with the
 * framework op and source line of its HLO instruction; the same folded
 * across a session's hosts (CombineAllOpStats()); and the per-op roofline
 * numbers both views show (SetRooflineMetrics(), op_metrics_to_record.h).
 *
 * Design: the rows are ops.c's op rows (struct op), so what the op table
 * learns (categories, FLOPs and bytes from the HLO cost analysis) flows
 * into both views. A row's program id is the op's own (GPU) or the
 * "(<id>)" its program name ends with (TPU; else 0, XProf's default);
 * its HLO facts are looked up once, when the row is made, through the
 * render context (xs_hlo_facts()). A session analyses one host at a time
 * and folds it in only when its whole analysis succeeded.
 *
 * Limits: at most OPS_MAX rows (further ones fold into "(other)"); O(rows)
 * memory plus the device planes' op tables (made on the profile's threads,
 * held until folded in plane order); never O(events).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stats-internal.h"

static uint64_t hkey_hash(uint64_t pid, const char *name)
{
	return xprofs_table_hash(xprofs_table_hash(0, &pid, sizeof(pid)), name, strlen(name));
}

/* The key a look-up compares with. */
struct hkey {
	uint64_t pid;
	const char *name;
};

/* An xprofs_table_eq_fn: row @idx of the stats_hdb @ctx has key @key (a struct hkey). */
static bool hkey_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct stats_hrow *w = &((const struct stats_hdb *)ctx)->r[idx];
	const struct hkey *k = key;

	return w->pid == k->pid && !strcmp(w->op.name, k->name);
}

void stats_hdb_init(struct stats_hdb *d)
{
	memset(d, 0, sizeof(*d));
	d->other = -1;
}

/* hrow_free() - the strings row @w owns. */
static void hrow_free(struct stats_hrow *w)
{
	char *owned[] = {w->op.name, w->op.category, w->op.program, w->tf_op, w->source};

	for (size_t i = 0; i < sizeof(owned) / sizeof(owned[0]); i++)
		free(owned[i]);
}

void stats_hdb_free(struct stats_hdb *d)
{
	while (d->n > 0)
		hrow_free(&d->r[--d->n]);
	free(d->r);
	free(d->device_type);
	xprofs_table_free(d->tab);
	stats_hdb_init(d);
}

/* dupe() - *@dst = a copy of @s (@n bytes) unless *@dst already holds a non-empty string. */
static int dupe(char **dst, const char *s, size_t n)
{
	char *c;

	if (*dst && (*dst)[0])
		return 0;
	if (!(c = strndup(s ? s : "", s ? n : 0)))
		return -ENOMEM;
	free(*dst);
	*dst = c;
	return 0;
}

/* row_new() - a new empty row keyed @k (its name copied); its index, or -ENOMEM. */
static int64_t row_new(struct stats_hdb *d, struct hkey k)
{
	struct stats_hrow *w;
	int r;

	if (!d->tab && (r = xprofs_table_new(OPS_MAX + 1, &d->tab)) < 0) /* + 1: "(other)" */
		return r;
	if ((r = xprofs_grow(&d->r, &d->cap, d->n, sizeof(*d->r), 256)) < 0)
		return r;
	w = &d->r[d->n];
	*w = (struct stats_hrow){.op = {.min = INT64_MAX, .max = INT64_MIN}, .pid = k.pid};
	r = !(w->op.name = strdup(k.name)) || dupe(&w->op.category, "", 0) < 0 ||
			    dupe(&w->tf_op, "", 0) < 0 || dupe(&w->source, "", 0) < 0
		    ? -ENOMEM
		    : xprofs_table_add(d->tab, hkey_hash(k.pid, k.name), (uint32_t)d->n);
	if (r < 0) {
		hrow_free(w);
		return r;
	}
	if (++d->n >= OPS_MAX)
		d->other = (int64_t)d->n - 1;
	return (int64_t)d->n - 1;
}

/*
 * row_get() - the row keyed (@pid, @name) of @d (borrowed, copied when new), made
 * empty when new; past OPS_MAX rows "(other)". Index, or -ENOMEM.
 */
static int64_t row_get(struct stats_hdb *d, uint64_t pid, const char *name)
{
	struct hkey k = {pid, name};
	uint32_t i;

	if (xprofs_table_find(d->tab, hkey_hash(pid, name), hkey_eq, d, &k, &i) == 0)
		return i;
	if (d->n < OPS_MAX)
		return row_new(d, k);
	return d->other >= 0 ? d->other : row_new(d, (struct hkey){0, "(other)"});
}

/*
 * row_fold() - @a's numbers into row @w (XProf's CombineOpMetrics(): sums; the
 * minimum, or @a's while @w has no occurrences) and its metadata where @w has
 * none yet (CopyOpMetricsMetadata(): category, program; here also the HLO facts).
 */
static int row_fold(struct stats_hrow *w, const struct op *a, const char *tf_op, const char *source)
{
	struct op *b = &w->op;
	int r;

	if ((r = dupe(&b->category, a->category, strlen(a->category))) < 0 ||
	    (r = dupe(&w->tf_op, tf_op, strlen(tf_op))) < 0 ||
	    (r = dupe(&w->source, source, strlen(source))) < 0)
		return r;
	if (!b->program && a->program && !(b->program = strdup(a->program)))
		return -ENOMEM;
	b->min = b->occurrences == 0 || a->min < b->min ? a->min : b->min;
	b->max = a->max > b->max ? a->max : b->max;
	stats_op_add(b, a);
	return 0;
}

/*
 * stats_op_program_id() - XProf's hlo_module_id of @op: its own program id (GPU
 * rows), else the <id> its program name "<module>(<id>)" ends with; else 0.
 */
uint64_t stats_op_program_id(const struct op *op)
{
	const char *p = op->program, *e, *s;
	uint64_t v = 0;

	if (op->has_pid)
		return op->pid;
	if (!p || !(e = p + strlen(p)) || e == p || e[-1] != ')')
		return 0;
	for (s = e - 1; s > p && s[-1] >= '0' && s[-1] <= '9'; s--)
		;
	if (s == p || s[-1] != '(' || s == e - 1)
		return 0;
	for (; s < e - 1; s++) {
		if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return 0; /* not a 64-bit program id */
		v = v * 10 + (uint64_t)(*s - '0');
	}
	return v;
}

/* plane_fold() - a device plane's op table @ops into @d, with each op's HLO facts. */
static int plane_fold(struct xs_rctx *rc, const struct stats_ops *ops, struct stats_hdb *d)
{
	const struct xprofs_hlo_facts *facts = NULL;
	struct xprofs_buf tf;
	int r = 0;

	xprofs_buf_init(&tf, XPROFS_HLO_FACT_STR_MAX * 2 + 2);
	if (ops->events && (r = xs_hlo_facts(rc, &facts)) < 0)
		goto out;
	for (size_t i = 0; i < ops->m.n && r == 0; i++) {
		const struct op *a = &ops->m.ops[i];
		uint64_t pid = stats_op_program_id(a);
		struct xprofs_hlo_fact f;
		char *src = NULL;
		int64_t gi;

		xprofs_buf_reset(&tf);
		if (xprofs_hlo_facts_find(facts, pid, a->name, strlen(a->name), &f)) {
			if ((r = xprofs_hlo_tf_op_name(&f, &tf)) < 0 && r != -E2BIG)
				break;
			if (!(src = strndup(f.source, f.source_len))) {
				r = -ENOMEM;
				break;
			}
		}
		if ((gi = row_get(d, pid, a->name)) < 0)
			r = (int)gi;
		else
			r = row_fold(&d->r[gi], a, tf.len ? tf.data : "", src ? src : "");
		free(src);
	}
	if (r < 0 || !ops->events)
		goto out;
	d->planes++;
	d->events += ops->events;
	d->total = xs_sat_add(d->total, ops->total);
	d->self = xs_sat_add(d->self, ops->self);
out:
	xprofs_buf_deinit(&tf);
	return r;
}

/* TPU plane stats GetPerfEnvFromXPlane() reads besides the peak FLOP/s and HBM bandwidth. */
static const char *const tpu_mem_stat[4] = {
	"peak_cmem_rd_bw_gigabytes_per_second", "peak_cmem_wr_bw_gigabytes_per_second",
	"peak_vmem_rd_bw_gigabytes_per_second", "peak_vmem_wr_bw_gigabytes_per_second"};

/* tpu_stat() - a xs_stat_fn: a TensorCore plane's memory peaks and flags into @arg (stats_hdb). */
static int tpu_stat(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s, void *arg)
{
	struct stats_hdb *d = arg;
	const struct xs_stmd *m;
	double v;
	int r;

	(void)c;
	if ((r = xs_md_stat(rc, s->md, &m)) < 0)
		return r;
	if (!xs_stat_number(s, &v) || !isfinite(v))
		return 0;
	for (size_t i = 0; i < 4; i++)
		if (xs_str_eq(m->name, m->name_len, tpu_mem_stat[i]))
			d->peak_mem[i] = v > 0 ? v * 1e9 : 0;
	if (xs_str_eq(m->name, m->name_len, "has_merged_vmem"))
		d->merged_vmem = v != 0;
	else if (xs_str_eq(m->name, m->name_len, "has_megacore"))
		d->megacore = v != 0;
	return 0;
}

/*
 * env_get() - SetRunEnvironment() and GetPerfEnvFromXPlane() (xplane_to_op_stats.cc):
 * the hardware, device type and core count from the GPU planes, else the TensorCore
 * planes; the peak rates of the first of them.
 */
static int env_get(struct xs_rctx *rc, struct stats_hdb *d)
{
	const struct xprofs_xspace *x = rc->x;
	struct stats_plane_facts f;
	size_t first = SIZE_MAX;
	char model[128];
	int r;

	for (size_t q = 0; q < x->n_planes; q++)
		if (xs_plane_is_gpu(&x->planes[q]))
			d->hw = STATS_HW_GPU;
	for (size_t q = x->n_planes; q-- > 0;) {
		const struct xs_plane *p = &x->planes[q];

		if (d->hw == STATS_HW_GPU ? xs_plane_is_gpu(p) : xs_plane_is_tensor_core(p)) {
			d->cores++;
			first = q;
		}
	}
	if (first == SIZE_MAX)
		return 0;
	if ((r = stats_plane_facts_get(rc, first, &f)) < 0)
		return r;
	d->peak_flops = f.peak_flops;
	d->peak_bw = f.peak_bw;
	d->has_f = true;
	if (d->hw == STATS_HW_GPU) {
		if (stats_gpu_model_name(&f, model, sizeof(model)) < 0 || !model[0])
			strcpy(model, "GPU");
		d->device_type = strdup(model);
	} else {
		d->hw = STATS_HW_TPU;
		d->device_type = f.device_type; /* moved; NULL when the plane has none */
		f.device_type = NULL;
		d->tpu_env = true;
		r = xs_walk_plane_stats(rc, first, tpu_stat, d);
	}
	stats_plane_facts_clear(&f);
	return d->hw == STATS_HW_GPU && !d->device_type ? -ENOMEM : r;
}

/* One plane's op table, made by table_task() (device planes only). */
struct plane_slot {
	struct stats_ops ops;
	int r;
	bool made;
};

/* A xs_task_fn: device plane @q's op table into its slot (@arg: struct plane_slot[]). */
static int table_task(struct xs_rctx *rc, size_t q, void *arg)
{
	struct plane_slot *s = (struct plane_slot *)arg + q;

	if (!xs_plane_is_device(&rc->x->planes[q]))
		return 0;
	s->made = true;
	return s->r = stats_ops_plane(rc, q, &s->ops);
}

/* A xs_task_cost_fn: a device plane's events; other planes cost nothing. */
static uint64_t table_cost(const struct xprofs_xspace *x, size_t q, void *arg)
{
	(void)arg;
	return xs_plane_is_device(&x->planes[q]) ? x->planes[q].events : 0;
}

/*
 * stats_hdb_host() - the device planes' op tables are independent: made first
 * (on several threads when the profile allows), then folded in plane order.
 */
int stats_hdb_host(struct xs_rctx *rc, struct stats_hdb *d)
{
	size_t n = rc->x->n_planes;
	struct plane_slot *slot = calloc(n + 1, sizeof(*slot));
	int r = slot ? env_get(rc, d) : -ENOMEM;

	if (r == 0)
		(void)xs_tasks_run(rc, n, table_task, table_cost, slot); /* each slot has its r */
	for (size_t q = 0; slot && q < n; q++) {
		if (r == 0 && slot[q].made && (r = slot[q].r) == 0)
			r = plane_fold(rc, &slot[q].ops, d);
		if (slot[q].made)
			stats_ops_free(&slot[q].ops);
	}
	free(slot);
	return r;
}

int stats_hdb_merge(struct stats_hdb *d, const struct stats_hdb *src)
{
	for (size_t i = 0; i < src->n; i++) {
		const struct stats_hrow *a = &src->r[i];
		int64_t gi = row_get(d, a->pid, a->op.name);
		int r;

		if (gi < 0)
			return (int)gi;
		if ((r = row_fold(&d->r[gi], &a->op, a->tf_op, a->source)) < 0)
			return r;
	}
	d->planes += src->planes;
	d->cores += src->cores;
	d->events += src->events;
	d->total = xs_sat_add(d->total, src->total);
	d->self = xs_sat_add(d->self, src->self);
	/* CombinePerfEnv(): the last positive peak FLOP/s, the first bandwidth */
	if (src->has_f && src->peak_flops > 0)
		d->peak_flops = src->peak_flops;
	if (src->has_f && src->peak_bw > 0 && !(d->peak_bw > 0))
		d->peak_bw = src->peak_bw;
	d->has_f |= src->has_f;
	/* CombineRunEnvironment(): the last accelerator host's device */
	if (src->hw != STATS_HW_CPU) {
		char *t = src->device_type ? strdup(src->device_type) : NULL;

		if (src->device_type && !t)
			return -ENOMEM;
		free(d->device_type);
		d->device_type = t;
		d->hw = src->hw;
	}
	return 0;
}

/* SortedOpMetricsDb(): self time descending, then name; xprofs: then program id. */
static int hrow_cmp(const void *a, const void *b, void *arg)
{
	const struct stats_hrow *r = arg, *x = &r[*(const size_t *)a], *y = &r[*(const size_t *)b];
	int c;

	if (x->op.self != y->op.self)
		return x->op.self > y->op.self ? -1 : 1;
	if ((c = strcmp(x->op.name, y->op.name)))
		return c;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

size_t *stats_hdb_sorted(const struct stats_hdb *d)
{
	size_t *idx = malloc((d->n + 1) * sizeof(*idx));

	if (!idx)
		return NULL;
	for (size_t i = 0; i < d->n; i++)
		idx[i] = i;
	qsort_r(idx, d->n, sizeof(*idx), hrow_cmp, d->r);
	return idx;
}

/* tsl SafeDivide(): 0 when the divisor is within 1e-10 of 0. */
static double safe_div(double a, double b)
{
	return fabs(b) < 1e-10 ? 0 : a / b;
}

void stats_roofline_get(const struct op *op, const struct stats_hdb *d, struct stats_roof *out)
{
	double t = (double)op->total; /* ps: SafeDivide() over the time, then per second */
	double flops = op->has_flops ? op->flops : 0, bytes = op->has_bytes ? op->bytes : 0;

	memset(out, 0, sizeof(*out));
	out->flop_rate = safe_div(flops, t) * 1e12;
	out->model_rate = safe_div(op->has_model_flops ? op->model_flops : 0, t) * 1e12;
	/* no memory_accessed_breakdown: all bytes are HBM bytes (the legacy rule) */
	out->hbm_bw = safe_div(bytes, t) * 1e12;
	out->intensity = safe_div(flops, bytes);
	out->bound = "Unknown";
	out->flops_util = d->peak_flops > 0 ? out->flop_rate / d->peak_flops : 0;
	out->hbm_util = d->peak_bw > 0 ? out->hbm_bw / d->peak_bw : 0;
	if (out->flops_util > 0) {
		out->bound = "Compute";
		out->bottleneck_intensity = out->intensity;
	}
	if (out->hbm_util > out->flops_util) {
		out->bound = "HBM";
		out->bottleneck_intensity = out->intensity;
	}
	/*
	 * GPU: Shm/L1 is weighed with the HBM bytes against peak_bws[2], which
	 * MakePerfEnv() sets to memory_bandwidth again, so it never beats HBM; TPU:
	 * CMEM / VMEM need the breakdown (not decoded), so they never win either.
	 */
}

bool stats_is_remat(const char *expr, const char *tf_op)
{
	const char *eq = strchr(expr, '=');
	size_t n = eq ? (size_t)(eq - expr) : strlen(expr);

	/* IsHloRematerialization(): ".remat" before the first '=' */
	if (memmem(expr, n, ".remat", 6))
		return true;
	return strstr(tf_op, "/rematted_computation/") != NULL;
}

/* ends() - @s ends with @suf. */
static bool ends(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);

	return n >= m && !strcmp(s + n - m, suf);
}

bool stats_is_outside_compilation(const char *tf_op, const char *expr)
{
	if (ends(tf_op, ":XlaSendToHost") || ends(tf_op, ":XlaRecvFromHost"))
		return true;
	return strstr(expr, "send-done") && strstr(expr, "is_host_transfer=true");
}

/* ---- a session ------------------------------------------------------------ */

/* What host_fn() runs: @fold of one host's render context into @db. */
struct host_job {
	int (*fold)(struct xs_rctx *rc, void *db);
	void *db;
};

/* host_fn() - a xs_with_rctx() function: the job @arg on one host, with its own HLO. */
static int host_fn(struct xs_rctx *rc, void *arg)
{
	const struct host_job *job = arg;
	struct xprofs_hlo_lazy *hlo = NULL;
	int r = xprofs_hlo_lazy_new(rc->x, NULL, &hlo);

	rc->hlo = xprofs_hlo_lazy_src(hlo); /* NULL after a failure */
	if (r == 0)
		r = job->fold(rc, job->db);
	rc->hlo = NULL;
	xprofs_hlo_lazy_free(hlo);
	return r;
}

int stats_db_session(const struct xprofs_session_in *in, int (*fold)(struct xs_rctx *rc, void *db),
		     void *db, char ***errors)
{
	char **why = calloc(in->n + 1, sizeof(*why));
	struct host_job job = {fold, db};
	int r = 0;

	*errors = why;
	if (!why)
		return -ENOMEM;
	for (size_t i = 0; i < in->n && r == 0; i++) {
		struct xprofs_buf err;
		int hr = -ENOENT;

		xprofs_buf_init(&err, 1024);
		if (in->xs[i])
			hr = xs_with_rctx(in->xs[i], &err, host_fn, &job);
		if (hr == -ENOMEM)
			r = hr;
		else if (hr != 0 && !(why[i] = strdup(err.len     ? err.data
						      : in->xs[i] ? strerror(-hr)
						      : in->host_errors && in->host_errors[i]
							      ? in->host_errors[i]
							      : "cannot open")))
			r = -ENOMEM;
		xprofs_buf_deinit(&err);
	}
	return r;
}

void stats_db_errors_free(const struct xprofs_session_in *in, char **errors)
{
	for (size_t i = 0; errors && i < in->n; i++)
		free(errors[i]);
	free(errors);
}

/* hosts_write() - stats_session_hosts_write(), with @nl each host on a new line. */
static void hosts_write(struct xs_out *o, const struct xprofs_session_in *in, char *const *why,
			bool nl)
{
	OUT_LIT(o, "\"session\":");
	xs_out_cstr(o, in->name ? in->name : "");
	OUT_LIT(o, ",\"hosts\":[");
	for (size_t i = 0; i < in->n; i++) {
		if (i)
			OUT_LIT(o, ",");
		if (nl)
			OUT_LIT(o, "\n");
		xs_out_key_cstr(o, "{\"host\":", in->hosts[i] ? in->hosts[i] : "");
		if (why[i])
			xs_out_key_cstr(o, ",\"error\":", why[i]);
		else
			OUT_LIT(o, ",\"error\":null");
		OUT_LIT(o, "}");
	}
	OUT_LIT(o, "]");
}

void stats_session_hosts_write(struct xs_out *o, const struct xprofs_session_in *in,
			       char *const *why)
{
	hosts_write(o, in, why, false);
}

int stats_db_session_head(struct xs_out *o, const struct xprofs_session_in *in, char **errors,
			  bool nl)
{
	OUT_LIT(o, "{");
	hosts_write(o, in, errors, nl);
	OUT_LIT(o, ",\n");
	return o->r;
}

int stats_hdb_fold(struct xs_rctx *rc, void *db)
{
	struct stats_hdb h;
	int r;

	stats_hdb_init(&h);
	if ((r = stats_hdb_host(rc, &h)) == 0)
		r = stats_hdb_merge(db, &h);
	stats_hdb_free(&h);
	return r;
}

int stats_hdb_view(struct xs_rctx *rc, struct xs_out *o,
		   int (*write)(struct xs_out *o, const struct stats_hdb *d))
{
	struct stats_hdb d;
	int r;

	stats_hdb_init(&d);
	r = stats_hdb_host(rc, &d);
	OUT_LIT(o, "{");
	if (r == 0)
		r = write(o, &d);
	stats_hdb_free(&d);
	return r;
}

/* ---- the fields both views write ------------------------------------------ */

/* out_per_s() - @lit, then @amount per second of @ps, or null without @has or time. */
static void out_per_s(struct xs_out *o, const char *lit, bool has, double amount, int64_t ps)
{
	xs_out_opt_double(o, lit, has && ps > 0, amount / (double)ps * 1e12);
}

void stats_hrow_times_write(struct xs_out *o, const struct op *op, int64_t table_ps, double *cum)
{
	double occ = (double)op->occurrences;
	double frac = table_ps > 0 ? (double)op->self / (double)table_ps : 0;

	/* SetExecutionTimes(), in ps */
	xs_out_key_i64(o, ",\"occurrences\":", op->occurrences);
	xs_out_key_i64(o, ",\"total_time_ps\":", op->total);
	xs_out_opt_double(o, ",\"avg_time_ps\":", occ > 0, (double)op->total / occ);
	xs_out_key_i64(o, ",\"total_self_time_ps\":", op->self);
	xs_out_opt_double(o, ",\"avg_self_time_ps\":", occ > 0, (double)op->self / occ);
	/* SetRankAndTimeFractions() */
	*cum += frac;
	xs_out_opt_double(o, ",\"total_self_time_fraction\":", table_ps > 0, frac);
	xs_out_opt_double(o, ",\"cumulative_total_self_time_fraction\":", table_ps > 0, *cum);
}

void stats_roof_write(struct xs_out *o, const struct op *op, const struct stats_roof *f)
{
	double bytes = op->has_bytes ? op->bytes : 0;

	out_per_s(o, ",\"measured_flops_per_s\":", op->has_flops, op->flops, op->total);
	out_per_s(o, ",\"model_flops_per_s\":", op->has_model_flops, op->model_flops, op->total);
	out_per_s(o, ",\"measured_memory_bytes_per_s\":", op->has_bytes, op->bytes, op->total);
	out_per_s(o, ",\"hbm_bytes_per_s\":", op->has_bytes, op->bytes, op->total);
	xs_out_opt_double(o, ",\"operational_intensity\":", op->has_flops && bytes != 0,
			  f->intensity);
	xs_out_key_cstr(o, ",\"bound_by\":", f->bound);
	xs_out_opt_double(o, ",\"flops\":", op->has_flops, op->flops);
	xs_out_opt_double(o, ",\"model_flops\":", op->has_model_flops, op->model_flops);
	xs_out_opt_double(o, ",\"bytes_accessed\":", op->has_bytes, op->bytes);
}

void stats_hdb_env_write(struct xs_out *o, const struct stats_hdb *d)
{
	static const char *const hw[] = {"CPU", "GPU", "TPU"};

	OUT_LIT(o, "\"hardware_type\":");
	xs_out_cstr(o, hw[d->hw]);
	OUT_LIT(o, ",\"device_type\":");
	if (d->device_type)
		xs_out_cstr(o, d->device_type);
	else
		OUT_LIT(o, "null");
	xs_out_key_i64(o, ",\"device_core_count\":", (int64_t)d->cores);
	xs_out_key_i64(o, ",\"device_planes\":", (int64_t)d->planes);
	xs_out_opt_double(o, ",\"peak_flops_per_s\":", d->peak_flops > 0, d->peak_flops);
	xs_out_opt_double(o, ",\"peak_hbm_bytes_per_s\":", d->peak_bw > 0, d->peak_bw);
}
