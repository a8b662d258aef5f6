/*
 * opdb.c - XProf's op metrics database of a host or a session, the one all
 * its views read (docs/stats.md "Op database"): OpStats' device op metrics
 * db (every device plane's op table, ops.c, combined as OpMetricsDbCombiner
 * does), its host op metrics db, the PerfEnv and RunEnvironment; each op
 * with its HLO facts (TfOpName(), source_info()); a session's hosts folded
 * in one at a time as CombineAllOpStats() folds each host's OpStats; rows in
 * SortedOpMetricsDb() order; the framework op db (stats_opdb_tf()).
 *
 * Design: rows are keyed in a hash table and fold in plane order, then host
 * order: sums (CombineOpMetrics()), the first non-empty metadata
 * (CopyOpMetricsMetadata()). Two view families read it and each keeps the
 * rules it had (enum stats_db_kind): hlo_stats.json / roofline.json
 * (STATS_DB_HLO) key a row by (hlo_module_id, name), at most OPS_MAX rows,
 * the device planes only, the RunEnvironment of SetRunEnvironment();
 * op_profile.json / framework_op_stats.json / top_ops (STATS_DB_OPS) key by
 * (program, name) with no cap, add each device plane's IDLE op (its span,
 * first op start to last op end, less its ops' self time: SetTotalTimePs() +
 * AddIdleOp()) and a host db, keep the rows in (program, name) order, and
 * read the PerfEnv of the first device plane with ops.
 *
 * Limits: HLO: at most OPS_MAX rows (further ones fold into "(other)"); OPS:
 * at most XPROFS_TABLE_MAX rows. O(rows) memory plus one host's op tables
 * (made on the profile's threads, held until folded in plane order); never
 * O(events).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats-internal.h"

/* The key a look-up compares with: (pid, name) in a HLO db, (program, name) else. */
struct rkey {
	uint64_t pid;
	const char *program, *name;
};

static uint64_t rkey_hash(const struct stats_opdb *d, const struct rkey *k)
{
	uint64_t h;

	if (d->kind == STATS_DB_HLO)
		h = xprofs_table_hash(0, &k->pid, sizeof(k->pid));
	else /* NULL and "" apart */
		h = k->program ? xprofs_table_hash(1, k->program, strlen(k->program)) : 0;
	return xprofs_table_hash(h, k->name, strlen(k->name));
}

/* opt_cmp() - strcmp() where NULL sorts first. */
static int opt_cmp(const char *x, const char *y)
{
	if (!x || !y)
		return x ? 1 : y ? -1 : 0;
	return strcmp(x, y);
}

/* An xprofs_table_eq_fn: row @idx of the stats_opdb @ctx has key @key (a struct rkey). */
static bool rkey_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct stats_opdb *d = ctx;
	const struct stats_dbop *w = &d->r[idx];
	const struct rkey *k = key;

	if (d->kind == STATS_DB_HLO ? w->pid != k->pid : opt_cmp(w->op.program, k->program) != 0)
		return false;
	return !strcmp(w->op.name, k->name);
}

void stats_opdb_init(struct stats_opdb *d, enum stats_db_kind kind)
{
	memset(d, 0, sizeof(*d));
	d->kind = kind;
	d->other = -1;
}

void stats_opstats_init(struct stats_opstats *s, enum stats_db_kind kind)
{
	memset(s, 0, sizeof(*s));
	stats_opdb_init(&s->dev, kind);
	stats_opdb_init(&s->host, kind);
}

/* row_clear() - the strings row @w owns. */
static void row_clear(struct stats_dbop *w)
{
	char *owned[] = {w->op.name,   w->op.category, w->op.program, w->op.provenance,
			 w->op.source, w->tf_name,     w->tf_type};

	for (size_t i = 0; i < sizeof(owned) / sizeof(owned[0]); i++)
		free(owned[i]);
}

void stats_opdb_free(struct stats_opdb *d)
{
	enum stats_db_kind kind = d->kind;

	while (d->n > 0)
		row_clear(&d->r[--d->n]);
	free(d->r);
	xprofs_table_free(d->tab);
	stats_opdb_init(d, kind);
}

void stats_opstats_free(struct stats_opstats *s)
{
	stats_opdb_free(&s->dev);
	stats_opdb_free(&s->host);
	free(s->device_type);
	stats_opstats_init(s, s->dev.kind);
}

/* fill() - *@dst = a copy of @s when *@dst is NULL or empty and @s is not (the first non-empty). */
static int fill(char **dst, const char *s)
{
	char *c;

	if ((*dst && (*dst)[0]) || !s || !s[0])
		return 0;
	if (!(c = strdup(s)))
		return -ENOMEM;
	free(*dst);
	*dst = c;
	return 0;
}

/* row_key_cmp() - by (program, name), then as added: an OPS db's row order. */
static int row_key_cmp(const void *a, const void *b)
{
	const struct stats_dbop *x = a, *y = b;
	int c = opt_cmp(x->op.program, y->op.program);

	if (!c)
		c = strcmp(x->op.name, y->op.name);
	return c ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

/* db_order() - an OPS db's rows in (program, name) order; row_get() makes the table anew. */
static void db_order(struct stats_opdb *d)
{
	if (d->kind == STATS_DB_HLO || d->n < 2)
		return;
	qsort(d->r, d->n, sizeof(*d->r), row_key_cmp);
	xprofs_table_free(d->tab);
	d->tab = NULL;
}

/* tab_make() - @d's table of its rows (after db_order()). */
static int tab_make(struct stats_opdb *d)
{
	int r = xprofs_table_new(XPROFS_TABLE_MAX, &d->tab);

	for (size_t i = 0; i < d->n && r == 0; i++) {
		struct rkey k = {d->r[i].pid, d->r[i].op.program, d->r[i].op.name};

		r = xprofs_table_add(d->tab, rkey_hash(d, &k), (uint32_t)i);
	}
	return r;
}

/* row_new() - a new empty row keyed @k (its strings copied); its index, or -ENOMEM. */
static int64_t row_new(struct stats_opdb *d, const struct rkey *k)
{
	bool hlo = d->kind == STATS_DB_HLO;
	struct stats_dbop *w;
	int r;

	/* + 1: "(other)" */
	if (!d->tab && (r = xprofs_table_new(hlo ? OPS_MAX + 1 : XPROFS_TABLE_MAX, &d->tab)) < 0)
		return r;
	if ((r = xprofs_grow(&d->r, &d->cap, d->n, sizeof(*d->r), 256)) < 0)
		return r;
	w = &d->r[d->n];
	*w = (struct stats_dbop){.op = {.min = INT64_MAX, .max = INT64_MIN}, .pid = k->pid};
	/* a HLO db's rows always have a category, framework op and source ("": none) */
	r = !(w->op.name = strdup(k->name)) || !(w->op.category = strdup("")) ||
			    (k->program && !(w->op.program = strdup(k->program))) ||
			    (hlo &&
			     (!(w->op.provenance = strdup("")) || !(w->op.source = strdup(""))))
		    ? -ENOMEM
		    : xprofs_table_add(d->tab, rkey_hash(d, k), (uint32_t)d->n);
	if (r < 0) {
		row_clear(w);
		return r;
	}
	/* the "(other)" row itself (row_get() makes it past the cap), not the last op */
	if (++d->n > stats_ops_max && hlo && d->other < 0)
		d->other = (int64_t)d->n - 1;
	return (int64_t)d->n - 1;
}

/*
 * row_get() - the row keyed @k in @d (strings borrowed, copied when new), made
 * empty when new; past OPS_MAX rows of a HLO db "(other)". Index, or -ENOMEM.
 */
static int64_t row_get(struct stats_opdb *d, const struct rkey *k)
{
	uint32_t i;
	int r;

	if (!d->tab && d->n && (r = tab_make(d)) < 0)
		return r;
	if (xprofs_table_find(d->tab, rkey_hash(d, k), rkey_eq, d, k, &i) == 0)
		return i;
	if (d->kind != STATS_DB_HLO || d->n < stats_ops_max)
		return row_new(d, k);
	return d->other >= 0 ? d->other : row_new(d, &(struct rkey){0, NULL, "(other)"});
}

/*
 * row_fold() - row @a into row @w (XProf's CombineOpMetrics(): sums; the minimum,
 * or @a's while @w has no occurrences) and its metadata where @w has none yet
 * (CopyOpMetricsMetadata(): the first non-empty category, framework op, source;
 * the first program).
 */
static int row_fold(struct stats_dbop *w, const struct stats_dbop *a)
{
	struct op *b = &w->op;
	int r;

	if ((r = fill(&b->category, a->op.category)) < 0 ||
	    (r = fill(&b->provenance, a->op.provenance)) < 0 ||
	    (r = fill(&b->source, a->op.source)) < 0 || (r = fill(&w->tf_name, a->tf_name)) < 0 ||
	    (r = fill(&w->tf_type, a->tf_type)) < 0)
		return r;
	if (!b->program && a->op.program && !(b->program = strdup(a->op.program)))
		return -ENOMEM;
	w->idle |= a->idle;
	b->min = b->occurrences == 0 || a->op.min < b->min ? a->op.min : b->min;
	b->max = a->op.max > b->max ? a->op.max : b->max;
	stats_op_add(b, &a->op);
	return 0;
}

/* db_fold() - row @a into its row of @d. */
static int db_fold(struct stats_opdb *d, const struct stats_dbop *a)
{
	struct rkey k = {a->pid, a->op.program, a->op.name};
	int64_t gi = row_get(d, &k);

	if (gi < 0)
		return (int)gi;
	if (d->kind == STATS_DB_OPS && !d->r[gi].pid) /* HLO: the key's ("(other)": 0) */
		d->r[gi].pid = a->pid;
	return row_fold(&d->r[gi], a);
}

/*
 * program_id() - XProf's program id of @op into *@id: its own (GPU rows), else
 * the <id> its program name "<module>(<id>)" ends with; false (*@id 0) when
 * neither. A HLO db takes a pid of 0 as the op's id (hlo_module_id); an OPS db
 * reads the name then, and no id from 18446744073709551610 up (its old bound).
 */
static bool program_id(const struct op *op, bool hlo, uint64_t *id)
{
	const char *p = op->program, *e, *s;
	uint64_t v = 0;

	*id = 0;
	if (op->has_pid && (hlo || op->pid)) {
		*id = op->pid;
		return true;
	}
	if (!p || !(e = p + strlen(p)) || e == p || e[-1] != ')')
		return false;
	for (s = e - 1; s > p && s[-1] >= '0' && s[-1] <= '9'; s--)
		;
	if (s == p || s[-1] != '(' || s == e - 1)
		return false;
	for (; s < e - 1; s++) {
		uint64_t lim = (UINT64_MAX - (hlo ? (uint64_t)(*s - '0') : 9)) / 10;

		if (v > lim)
			return false; /* not a 64-bit program id */
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*id = v;
	return true;
}

/*
 * row_facts() - the HLO facts of op @a into row @x: its framework op (TfOpName())
 * and source in a HLO db; in an OPS db its framework op (NULL: none) and
 * ParseTfOpFullname()'s parts, else for a framework kernel row ("<tf_op
 * name>/<kernel>", its type as category) the tf_op it was made of. The strings
 * are new: free with row_clear().
 */
static int row_facts(struct stats_opdb *d, const struct xprofs_hlo_facts *facts, const struct op *a,
		     struct stats_dbop *x)
{
	bool hlo = d->kind == STATS_DB_HLO, has_id = program_id(a, hlo, &x->pid);
	struct xprofs_hlo_fact f;
	struct xprofs_buf tf;
	struct xs_tfop t;
	const char *slash;
	int r = 0;

	xprofs_buf_init(&tf, 1 << 16); /* more than name:type, each cut at the facts' max */
	/* HLO: the facts of hlo_module_id 0 when the op has no id */
	if ((has_id || hlo) && xprofs_hlo_facts_find(facts, x->pid, a->name, strlen(a->name), &f)) {
		if ((r = xprofs_hlo_tf_op_name(&f, &tf)) < 0 ||
		    (r = xprofs_buf_add(&tf, "", 1)) < 0)
			goto out;
		if (hlo) {
			x->op.provenance = strdup(tf.data);
			x->op.source = strndup(f.source, f.source_len);
			r = x->op.provenance && x->op.source ? 0 : -ENOMEM;
		} else if (tf.data[0]) {
			xs_tfop_parse(tf.data, strlen(tf.data), &t);
			x->op.provenance = strdup(tf.data);
			x->tf_name = strndup(t.name, t.name_len);
			x->tf_type = strndup(t.type, t.type_len);
			r = x->op.provenance && x->tf_name && x->tf_type ? 0 : -ENOMEM;
		}
	} else if (!hlo && a->has_pid && !a->pid && a->category[0] &&
		   (slash = strrchr(a->name, '/'))) {
		bool unknown = !strcmp(a->category, "unknown");

		x->tf_name = strndup(a->name, (size_t)(slash - a->name));
		x->tf_type = strdup(unknown ? "" : a->category);
		if (!x->tf_name || !x->tf_type ||
		    asprintf(&x->op.provenance, "%s%s%s", x->tf_name, unknown ? "" : ":",
			     x->tf_type) < 0) {
			x->op.provenance = NULL;
			r = -ENOMEM;
		}
	}
out:
	xprofs_buf_deinit(&tf);
	return r;
}

/*
 * op_fold() - op @a of an op table into @d with its HLO facts; an OPS db counts
 * missing FLOPs and bytes as 0 and model FLOPs as the FLOPs
 * (DeviceOpMetricsDbBuilder::EnterOp()).
 */
static int op_fold(struct stats_opdb *d, const struct xprofs_hlo_facts *facts, const struct op *a)
{
	struct stats_dbop x = {.op = *a};
	int r;

	x.op.provenance = x.op.source = NULL; /* the op table's own: not read here */
	if (d->kind == STATS_DB_OPS) {
		x.op.flops = a->has_flops ? a->flops : 0;
		x.op.bytes = a->has_bytes ? a->bytes : 0;
		x.op.model_flops =
			a->has_model_flops && a->model_flops != 0 ? a->model_flops : x.op.flops;
		x.op.has_flops = x.op.has_bytes = x.op.has_model_flops = true;
	}
	if ((r = row_facts(d, facts, a, &x)) == 0)
		r = db_fold(d, &x);
	free(x.op.provenance);
	free(x.op.source);
	free(x.tf_name);
	free(x.tf_type);
	return r;
}

/* add_idle() - @d's IDLE op of @ps (SetIdleOp(): occurrences 0, time = self). */
static int add_idle(struct stats_opdb *d, int64_t ps)
{
	struct stats_dbop idle = {.op = {.name = (char *)"IDLE", .category = (char *)"IDLE"}};

	idle.op.total = idle.op.self = ps;
	idle.op.has_flops = idle.op.has_bytes = idle.op.has_model_flops = true;
	idle.idle = true;
	return db_fold(d, &idle);
}

int stats_opstats_add(struct xs_rctx *rc, size_t q, const struct stats_ops *ops,
		      const struct stats_busy *busy, struct stats_opstats *out)
{
	bool dev = xs_plane_is_device(&rc->x->planes[q]), hlo = out->dev.kind == STATS_DB_HLO;
	struct stats_opdb *d = dev ? &out->dev : &out->host;
	int64_t span = busy && busy->any ? xs_sat_add(busy->last, -busy->first) : 0;
	const struct xprofs_hlo_facts *facts = NULL;
	int r = 0;

	if (!hlo && !ops->events)
		return 0;
	if (ops->events && (hlo || ops->m.n) && (r = xs_hlo_facts(rc, &facts)) < 0)
		return r;
	for (size_t i = 0; i < ops->m.n && r == 0; i++)
		r = op_fold(d, facts, &ops->m.ops[i]);
	if (r < 0 || !ops->events)
		return r;
	d->planes++;
	d->events += ops->events;
	d->total = xs_sat_add(d->total, ops->total);
	d->self = xs_sat_add(d->self, ops->self);
	if (hlo)
		return 0;
	if (!dev) {
		d->total_time = xs_sat_add(d->total_time, ops->self);
		return 0;
	}
	d->total_time = xs_sat_add(d->total_time, span > ops->self ? span : ops->self);
	if ((r = add_idle(d, span > ops->self ? span - ops->self : 0)) < 0)
		return r;
	/* an OPS db's PerfEnv: its first device plane's (GetPerfEnvFromXPlane()) */
	if (d->planes == 1) {
		out->peak_flops = ops->f.peak_flops;
		out->peak_bw = ops->f.peak_bw;
		out->gpu = ops->gpu;
	}
	return 0;
}

void stats_opstats_finish(struct stats_opstats *s)
{
	db_order(&s->dev);
	db_order(&s->host);
}

/* TPU plane stats GetPerfEnvFromXPlane() reads besides the peak FLOP/s and HBM bandwidth. */
static const char *const tpu_mem_stat[4] = {
	"peak_cmem_rd_bw_gigabytes_per_second", "peak_cmem_wr_bw_gigabytes_per_second",
	"peak_vmem_rd_bw_gigabytes_per_second", "peak_vmem_wr_bw_gigabytes_per_second"};

/* tpu_stat() - a xs_stat_fn: a TensorCore plane's memory peaks and flags into @arg (stats_opstats). */
static int tpu_stat(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s, void *arg)
{
	struct stats_opstats *d = arg;
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
 * env_get() - a HLO db's SetRunEnvironment() and GetPerfEnvFromXPlane()
 * (xplane_to_op_stats.cc): the hardware, device type and core count from the GPU
 * planes, else the TensorCore planes; the peak rates of the first of them.
 */
static int env_get(struct xs_rctx *rc, struct stats_opstats *d)
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

/* One plane's part of a host's op stats, made by slot_task(). */
struct plane_slot {
	struct stats_ops ops;
	struct stats_busy busy;
	int r;
	bool made;
};

/* What slot_task() makes: a HLO db's device planes' op tables, else every plane's and spans. */
struct slot_job {
	struct plane_slot *slot; /* one per plane, and the cut plane's second part last */
	bool hlo;
	bool win; /* a slice: the spans are stats_device_busy()'s (a whole walk: ops.c's) */
	struct stats_ops_cut cut; /* a host plane made in two parts (not for a HLO db) */
};

/*
 * A xs_task_fn: task 2q is plane q's op table (the first part of the cut
 * plane's), 2q + 1 its span (device planes); task 2 n_planes the cut's
 * second part.
 */
static int slot_task(struct xs_rctx *rc, size_t i, void *arg)
{
	const struct slot_job *job = arg;
	struct plane_slot *s = &job->slot[i / 2];
	bool dev = i / 2 < rc->x->n_planes && xs_plane_is_device(&rc->x->planes[i / 2]);

	if (i % 2) /* a whole walk's span is taken by the op table's walk (ops.c) */
		return dev && !job->hlo && job->win ? stats_device_busy(rc, i / 2, &s->busy) : 0;
	if (job->hlo && !dev)
		return 0;
	s->made = true;
	return s->r = stats_ops_task(rc, &job->cut, i / 2, false, NULL, &s->ops);
}

/* A xs_task_cost_fn: a plane's events (a part's); a span half of them; what is not made nothing. */
static uint64_t slot_cost(const struct xprofs_xspace *x, size_t i, void *arg)
{
	const struct slot_job *job = arg;
	bool dev = i / 2 < x->n_planes && xs_plane_is_device(&x->planes[i / 2]);

	if ((i % 2 && (job->hlo || !dev || !job->win)) || (job->hlo && !dev))
		return 0;
	return i % 2 ? x->planes[i / 2].events / 2 : stats_ops_task_cost(x, &job->cut, i / 2);
}

/*
 * stats_opstats_host() - the planes' op tables are independent: made first (on
 * several threads when the profile allows), then folded in plane order.
 */
int stats_opstats_host(struct xs_rctx *rc, enum stats_db_kind kind, struct stats_opstats *out)
{
	size_t n = rc->x->n_planes;
	struct slot_job job = {.slot = calloc(n + 1, sizeof(*job.slot)),
			       .hlo = kind == STATS_DB_HLO,
			       .win = rc->win};
	int r = job.slot ? 0 : -ENOMEM;

	stats_opstats_init(out, kind);
	if (r == 0 && job.hlo)
		r = env_get(rc, out);
	if (r == 0) {
		if (!job.hlo)
			stats_ops_cut(rc->x, &job.cut);
		r = xs_tasks_run(rc, 2 * n + (job.cut.line != 0), slot_task, slot_cost, &job);
		if (job.hlo)
			r = 0; /* each slot has its r */
	}
	if (job.slot && job.cut.line && job.slot[n].made) { /* the second part is the plane's too */
		struct plane_slot *a = &job.slot[job.cut.plane], *b = &job.slot[n];

		if (a->r == 0 && (a->r = b->r) == 0)
			a->r = stats_ops_join(rc, &job.cut, &a->ops, &b->ops);
		else
			stats_ops_free(&b->ops);
		b->made = false;
	}
	for (size_t q = 0; job.slot && q < n; q++) {
		if (!job.hlo && job.slot[q].made && job.slot[q].ops.has_busy)
			job.slot[q].busy = job.slot[q].ops.busy;
		else if (!job.hlo && job.slot[q].made && job.slot[q].ops.has_span)
			job.slot[q].busy = job.slot[q].ops.span; /* only its span is read */
		if (r == 0 && job.slot[q].made && (r = job.slot[q].r) == 0)
			r = stats_opstats_add(rc, q, &job.slot[q].ops, &job.slot[q].busy, out);
		if (job.slot[q].made)
			stats_ops_free(&job.slot[q].ops);
	}
	free(job.slot);
	if (r == 0)
		stats_opstats_finish(out);
	else
		stats_opstats_free(out);
	return r;
}

/* db_merge() - @src's rows and totals folded into @d. */
static int db_merge(struct stats_opdb *d, const struct stats_opdb *src)
{
	int r;

	for (size_t i = 0; i < src->n; i++)
		if ((r = db_fold(d, &src->r[i])) < 0)
			return r;
	d->planes += src->planes;
	d->events += src->events;
	d->total = xs_sat_add(d->total, src->total);
	d->self = xs_sat_add(d->self, src->self);
	d->total_time = xs_sat_add(d->total_time, src->total_time);
	db_order(d);
	return 0;
}

int stats_opstats_merge(struct stats_opstats *d, const struct stats_opstats *src)
{
	int r;

	if ((r = db_merge(&d->dev, &src->dev)) < 0 || (r = db_merge(&d->host, &src->host)) < 0)
		return r;
	d->cores += src->cores;
	/* CombinePerfEnv(): the last positive peak FLOP/s, the first bandwidth */
	if (src->peak_flops > 0)
		d->peak_flops = src->peak_flops;
	if (src->peak_bw > 0 && !(d->peak_bw > 0))
		d->peak_bw = src->peak_bw;
	d->gpu |= src->gpu;
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

/*
 * SortedOpMetricsDb(): self time descending, then name; xprofs: then program id
 * (HLO) or program name (OPS).
 */
static int sorted_cmp(const void *a, const void *b, void *arg)
{
	const struct stats_opdb *d = arg;
	const struct stats_dbop *x = &d->r[*(const size_t *)a], *y = &d->r[*(const size_t *)b];
	int c;

	if (x->op.self != y->op.self)
		return x->op.self > y->op.self ? -1 : 1;
	if ((c = strcmp(x->op.name, y->op.name)))
		return c;
	if (d->kind == STATS_DB_HLO)
		return x->pid < y->pid ? -1 : x->pid > y->pid;
	return opt_cmp(x->op.program, y->op.program);
}

size_t *stats_opdb_sorted(const struct stats_opdb *d)
{
	size_t *idx = malloc((d->n + 1) * sizeof(*idx));

	if (!idx)
		return NULL;
	for (size_t i = 0; i < d->n; i++)
		idx[i] = i;
	qsort_r(idx, d->n, sizeof(*idx), sorted_cmp, (void *)d);
	return idx;
}

/* ---- a session ------------------------------------------------------------ */

/* host_fn() - a xs_with_rctx() function: one host's db, with its own HLO, into @arg. */
static int host_fn(struct xs_rctx *rc, void *arg)
{
	struct stats_opstats *d = arg, h;
	struct xprofs_hlo_lazy *hlo = NULL;
	int r = xprofs_hlo_lazy_new(rc->x, NULL, &hlo);

	rc->hlo = xprofs_hlo_lazy_src(hlo); /* NULL after a failure */
	if (r == 0) {
		if ((r = stats_opstats_host(rc, d->dev.kind, &h)) == 0)
			r = stats_opstats_merge(d, &h);
		stats_opstats_free(&h);
	}
	rc->hlo = NULL;
	xprofs_hlo_lazy_free(hlo);
	return r;
}

int stats_db_session(const struct xprofs_session_in *in, struct stats_opstats *d, char ***errors)
{
	char **why = calloc(in->n + 1, sizeof(*why));
	int r = 0;

	*errors = why;
	if (!why)
		return -ENOMEM;
	for (size_t i = 0; i < in->n && r == 0; i++) {
		struct xprofs_buf err;
		int hr = -ENOENT;

		xprofs_buf_init(&err, 1024);
		if (in->xs[i])
			hr = xs_with_rctx(in->xs[i], &err, host_fn, d);
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

int stats_opstats_view(struct xs_rctx *rc, struct xs_out *o, enum stats_db_kind kind,
		       int (*write)(struct xs_out *o, const struct stats_opstats *s),
		       const char *tail)
{
	struct stats_opstats st;
	int r = stats_opstats_host(rc, kind, &st);

	if (r < 0)
		return r;
	OUT_LIT(o, "{");
	r = write(o, &st);
	xs_out_add(o, tail, strlen(tail));
	stats_opstats_free(&st);
	return r;
}

void stats_dbop_add(struct stats_dbop *b, const struct stats_dbop *a)
{
	b->op.occurrences = xs_sat_add(b->op.occurrences, a->op.occurrences);
	b->op.total = xs_sat_add(b->op.total, a->op.total);
	b->op.self = xs_sat_add(b->op.self, a->op.self);
	b->op.flops += a->op.flops;
	b->op.model_flops += a->op.model_flops;
	b->op.bytes += a->op.bytes;
}

/* ---- the framework op db -------------------------------------------------- */

/* The key of @r in the framework-op db: CreateTfMetricsDbFromDeviceOpMetricsDb(). */
static void tf_key(const struct stats_dbop *r, const char **name, const char **type)
{
	if (r->idle) {
		*name = *type = "IDLE";
	} else if (!r->op.provenance || !r->op.provenance[0] || !r->tf_name) {
		*name = r->op.name;
		*type = "";
	} else {
		*name = r->tf_name;
		*type = r->tf_type ? r->tf_type : "";
	}
}

/* tf_combine() - one row per name of @d (by name, then as added): occurrences the maximum, the rest summed, the first category. */
static void tf_combine(struct stats_opdb *d)
{
	size_t w = 0;

	if (d->n > 1)
		qsort(d->r, d->n, sizeof(*d->r), row_key_cmp);
	for (size_t i = 0; i < d->n; i++) {
		struct stats_dbop *a = &d->r[i], *b = w ? &d->r[w - 1] : NULL;

		if (b && !strcmp(b->op.name, a->op.name)) {
			b->op.occurrences = a->op.occurrences > b->op.occurrences
						    ? a->op.occurrences
						    : b->op.occurrences;
			b->op.total = xs_sat_add(b->op.total, a->op.total);
			b->op.self = xs_sat_add(b->op.self, a->op.self);
			b->op.flops += a->op.flops;
			b->op.bytes += a->op.bytes;
			row_clear(a);
			continue;
		}
		d->r[w++] = *a;
	}
	d->n = w;
}

int stats_opdb_tf(const struct stats_opdb *dev, bool with_idle, struct stats_opdb *out)
{
	int r = 0;

	stats_opdb_init(out, STATS_DB_OPS);
	for (size_t i = 0; i < dev->n; i++) {
		const struct stats_dbop *a = &dev->r[i];
		const char *name, *type;
		struct stats_dbop *b;

		if (a->idle && !with_idle)
			continue;
		tf_key(a, &name, &type);
		if ((r = xprofs_grow(&out->r, &out->cap, out->n, sizeof(*out->r), 256)) < 0)
			goto fail;
		b = &out->r[out->n];
		memset(b, 0, sizeof(*b));
		b->op.name = strdup(name);
		/* UpdateTfOpMetricsWithDeviceOpMetrics(): kUnknownOp -> "Unknown" */
		b->op.category = strdup(type[0] ? type : "Unknown");
		if (!b->op.name || !b->op.category) {
			row_clear(b);
			r = -ENOMEM;
			goto fail;
		}
		b->idle = a->idle;
		b->op.occurrences = a->op.occurrences; /* the maximum over its device ops */
		b->op.total = a->op.total;
		b->op.self = a->op.self;
		b->op.flops = a->op.flops;
		b->op.bytes = a->op.bytes; /* model flops are not carried over */
		b->seq = out->n++;
	}
	tf_combine(out);
	out->planes = dev->planes;
	out->self = dev->self;
	out->total_time = with_idle ? dev->total_time : dev->self;
	return 0;
fail:
	stats_opdb_free(out);
	return r;
}
