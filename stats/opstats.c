/*
 * opstats.c - a host's op metrics as XProf's OpStats holds them for the op
 * profile and the framework op stats (op_profile.json, framework_op_stats.json,
 * overview.json's top_ops): the device op metrics db (every device plane's op
 * table, ConvertDeviceTraceXPlaneToOpMetricsDb(), combined as
 * OpMetricsDbCombiner by (program, name), with XProf's "IDLE" op), the host
 * op metrics db, the peak rates (PerfEnv) and per op its framework op
 * (provenance: TfOpName() of its HLO instruction).
 *
 * Design: built on the op table of ops.c (struct stats_ops), so whatever
 * rules decide its rows decide these; each device plane adds its span (first
 * op start to last op end, stats_device_busy()) as total time, as XProf's
 * SetTotalTimePs() + AddIdleOp() do, and IDLE = span - op self time (never
 * below 0). Rows combine by sorting on (program, name) and summing runs, so
 * several hosts (a session) fold in the same way. Limits: O(distinct ops)
 * rows; the host db has no IDLE row (xprofs' host op table keeps no
 * per-thread span).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats-internal.h"

static void row_clear(struct stats_dbop *r)
{
	free(r->name);
	free(r->category);
	free(r->program);
	free(r->provenance);
	free(r->tf_name);
	free(r->tf_type);
}

static void db_free(struct stats_opdb *d)
{
	for (size_t i = 0; i < d->n; i++)
		row_clear(&d->rows[i]);
	free(d->rows);
	memset(d, 0, sizeof(*d));
}

void stats_opstats_free(struct stats_opstats *s)
{
	db_free(&s->dev);
	db_free(&s->host);
	memset(s, 0, sizeof(*s));
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* program_id_of() - the program id of @op: its key's, else "<module>(<id>)"'s. */
static bool program_id_of(const struct op *op, uint64_t *id)
{
	const char *open, *p;
	size_t n;

	if (op->has_pid && op->pid) {
		*id = op->pid;
		return true;
	}
	if (!op->program || !(n = strlen(op->program)) || op->program[n - 1] != ')' ||
	    !(open = strrchr(op->program, '(')) || open[1] == ')')
		return false;
	*id = 0;
	for (p = open + 1; *p != ')'; p++) {
		if (*p < '0' || *p > '9' || *id > (UINT64_MAX - 9) / 10)
			return false;
		*id = *id * 10 + (uint64_t)(*p - '0');
	}
	return true;
}

/*
 * row_provenance() - @r's framework op: TfOpName() of its HLO instruction
 * (XProf's provenance of an XLA op), else for a framework kernel row
 * ("<tf_op name>/<kernel>", its type as category) the tf_op it was made of;
 * tf_name / tf_type are ParseTfOpFullname()'s parts.
 */
static int row_provenance(struct xs_rctx *rc, const struct op *op, struct stats_dbop *r)
{
	const struct xprofs_hlo_facts *facts;
	struct xprofs_hlo_fact f;
	struct xprofs_buf b;
	struct xs_tfop t;
	uint64_t id;
	int ret;

	if ((ret = xs_hlo_facts(rc, &facts)) < 0)
		return ret;
	if (program_id_of(op, &id))
		r->program_id = id;
	if (facts && program_id_of(op, &id) &&
	    xprofs_hlo_facts_find(facts, id, op->name, strlen(op->name), &f)) {
		xprofs_buf_init(&b, 1 << 16);
		ret = xprofs_hlo_tf_op_name(&f, &b);
		if (ret == 0 && (ret = xprofs_buf_add(&b, "", 1)) == 0) {
			r->provenance = strdup(b.data);
			ret = r->provenance ? 0 : -ENOMEM;
		}
		xprofs_buf_deinit(&b);
		if (ret == -E2BIG)
			ret = 0; /* a name past 64 KiB: no framework op */
		if (ret == 0 && r->provenance && !r->provenance[0]) {
			free(r->provenance); /* no framework op */
			r->provenance = NULL;
		}
		if (ret < 0 || !r->provenance)
			return ret;
		xs_tfop_parse(r->provenance, strlen(r->provenance), &t);
		r->tf_name = strndup(t.name, t.name_len);
		r->tf_type = strndup(t.type, t.type_len);
		return r->tf_name && r->tf_type ? 0 : -ENOMEM;
	}
	if (op->has_pid && !op->pid && op->category[0] && strrchr(op->name, '/')) {
		const char *slash = strrchr(op->name, '/');
		bool unknown = !strcmp(op->category, "unknown");

		r->tf_name = strndup(op->name, (size_t)(slash - op->name));
		r->tf_type = strdup(unknown ? "" : op->category);
		if (!r->tf_name || !r->tf_type ||
		    asprintf(&r->provenance, "%s%s%s", r->tf_name, unknown ? "" : ":", r->tf_type) <
			    0) {
			r->provenance = NULL;
			return -ENOMEM;
		}
	}
	return 0;
}

/* db_add_row() - a new row of @d copied from @op (names duplicated). */
static int db_add_row(struct stats_opdb *d, const struct op *op, struct xs_rctx *rc)
{
	struct stats_dbop *r;
	int ret;

	if ((ret = xprofs_grow(&d->rows, &d->cap, d->n, sizeof(*d->rows), 256)) < 0)
		return ret;
	r = &d->rows[d->n];
	memset(r, 0, sizeof(*r));
	r->name = strdup(op->name);
	r->category = strdup(op->category ? op->category : "");
	r->program = dup_or_null(op->program);
	if (!r->name || !r->category || (op->program && !r->program)) {
		row_clear(r);
		return -ENOMEM;
	}
	r->occ = op->occurrences;
	r->total = op->total;
	r->self = op->self;
	r->flops = op->has_flops ? op->flops : 0;
	r->bytes = op->has_bytes ? op->bytes : 0;
	/* DeviceOpMetricsDbBuilder::EnterOp(): no model flops -> the flops */
	r->model_flops = op->has_model_flops && op->model_flops != 0 ? op->model_flops : r->flops;
	if (rc && (ret = row_provenance(rc, op, r)) < 0) {
		row_clear(r);
		return ret;
	}
	d->n++;
	return 0;
}

static int opt_cmp(const char *x, const char *y)
{
	if (!x || !y)
		return x ? 1 : y ? -1 : 0;
	return strcmp(x, y);
}

/* By (program, name); then (a stable tie) by position. */
static int row_key_cmp(const void *a, const void *b)
{
	const struct stats_dbop *x = a, *y = b;
	int c = opt_cmp(x->program, y->program);

	if (!c)
		c = strcmp(x->name, y->name);
	if (!c)
		c = x->seq < y->seq ? -1 : x->seq > y->seq;
	return c;
}

/* Fill the empty strings of @b from @a (CopyOpMetricsMetadata(): the first non-empty). */
static void row_meta(struct stats_dbop *b, struct stats_dbop *a)
{
	char **pa[] = {&a->category, &a->provenance, &a->tf_name, &a->tf_type};
	char **pb[] = {&b->category, &b->provenance, &b->tf_name, &b->tf_type};

	for (size_t i = 0; i < sizeof(pa) / sizeof(pa[0]); i++) {
		if ((!*pb[i] || !**pb[i]) && *pa[i] && **pa[i]) {
			free(*pb[i]);
			*pb[i] = *pa[i];
			*pa[i] = NULL;
		}
	}
	if (!b->program_id)
		b->program_id = a->program_id;
}

void stats_dbop_add(struct stats_dbop *b, const struct stats_dbop *a)
{
	b->occ = xs_sat_add(b->occ, a->occ);
	b->total = xs_sat_add(b->total, a->total);
	b->self = xs_sat_add(b->self, a->self);
	b->flops += a->flops;
	b->model_flops += a->model_flops;
	b->bytes += a->bytes;
}

/*
 * db_compact() - rows of one (program, name) summed into the first of them
 * (OpMetricsDbCombiner::Combine() / CombineOpMetrics()), in first-seen order.
 */
static void db_compact(struct stats_opdb *d)
{
	size_t w = 0;

	for (size_t i = 0; i < d->n; i++)
		d->rows[i].seq = i;
	if (d->n > 1) /* rows is NULL while empty */
		qsort(d->rows, d->n, sizeof(*d->rows), row_key_cmp);
	for (size_t i = 0; i < d->n; i++) {
		struct stats_dbop *a = &d->rows[i];

		if (w && !opt_cmp(d->rows[w - 1].program, a->program) &&
		    !strcmp(d->rows[w - 1].name, a->name)) {
			struct stats_dbop *b = &d->rows[w - 1];

			stats_dbop_add(b, a);
			b->idle |= a->idle;
			row_meta(b, a);
			row_clear(a);
			continue;
		}
		d->rows[w++] = *a;
	}
	d->n = w;
}

/* db_add_idle() - @d's IDLE op of @ps (SetIdleOp(): occurrences 0, time = self). */
static int db_add_idle(struct stats_opdb *d, int64_t ps)
{
	struct op idle = {.name = (char *)"IDLE", .category = (char *)"IDLE"};
	int r;

	idle.total = idle.self = ps;
	if ((r = db_add_row(d, &idle, NULL)) < 0)
		return r;
	d->rows[d->n - 1].idle = true;
	return 0;
}

/* One plane's part of a host's op stats, computed by xs_tasks_run(). */
struct os_slot {
	struct stats_ops ops;
	struct stats_busy busy;
};

/* A xs_task_fn: task 2q is plane q's op table, 2q + 1 its span (device planes). */
static int os_task(struct xs_rctx *rc, size_t i, void *arg)
{
	struct os_slot *s = &((struct os_slot *)arg)[i / 2];

	if (i % 2 == 0)
		return stats_ops_plane(rc, i / 2, &s->ops);
	if (!xs_plane_is_device(&rc->x->planes[i / 2]))
		return 0;
	return stats_device_busy(rc, i / 2, &s->busy);
}

static uint64_t os_cost(const struct xprofs_xspace *x, size_t i, void *arg)
{
	(void)arg;
	if (i % 2 && !xs_plane_is_device(&x->planes[i / 2]))
		return 0;
	return x->planes[i / 2].events / (i % 2 ? 2 : 1);
}

int stats_opstats_add(struct xs_rctx *rc, size_t q, const struct stats_ops *ops,
		      const struct stats_busy *busy, struct stats_opstats *out)
{
	bool dev = xs_plane_is_device(&rc->x->planes[q]);
	struct stats_opdb *d = dev ? &out->dev : &out->host;
	int64_t span = busy && busy->any ? xs_sat_add(busy->last, -busy->first) : 0;
	int r;

	if (!ops->events)
		return 0;
	for (size_t i = 0; i < ops->m.n; i++)
		if ((r = db_add_row(d, &ops->m.ops[i], rc)) < 0)
			return r;
	d->planes++;
	d->total_op_time = xs_sat_add(d->total_op_time, ops->self);
	if (!dev) {
		d->total_time = xs_sat_add(d->total_time, ops->self);
		return 0;
	}
	d->total_time = xs_sat_add(d->total_time, span > ops->self ? span : ops->self);
	if ((r = db_add_idle(d, span > ops->self ? span - ops->self : 0)) < 0)
		return r;
	/* a host's PerfEnv: its first device plane's (GetPerfEnvFromXPlane()) */
	if (d->planes == 1) {
		out->peak_flops = ops->f.peak_flops;
		out->peak_bw = ops->f.peak_bw;
		out->gpu = ops->gpu;
	}
	return 0;
}

void stats_opstats_finish(struct stats_opstats *s)
{
	db_compact(&s->dev);
	db_compact(&s->host);
}

int stats_opstats_host(struct xs_rctx *rc, struct stats_opstats *out)
{
	struct xprofs_xspace *x = rc->x;
	struct os_slot *slot = calloc(x->n_planes + 1, sizeof(*slot));
	int r;

	memset(out, 0, sizeof(*out));
	if (!slot)
		return -ENOMEM;
	if ((r = xs_tasks_run(rc, 2 * x->n_planes, os_task, os_cost, slot)) < 0)
		goto out;
	for (size_t q = 0; q < x->n_planes && r == 0; q++)
		r = stats_opstats_add(rc, q, &slot[q].ops, &slot[q].busy, out);
	if (r == 0)
		stats_opstats_finish(out);
out:
	for (size_t q = 0; q < x->n_planes; q++)
		stats_ops_free(&slot[q].ops);
	free(slot);
	if (r < 0)
		stats_opstats_free(out);
	return r;
}

/* db_merge() - @src's rows moved into @dst (src left empty), then combined. */
static int db_merge(struct stats_opdb *dst, struct stats_opdb *src)
{
	int r;

	for (size_t i = 0; i < src->n; i++) {
		if ((r = xprofs_grow(&dst->rows, &dst->cap, dst->n, sizeof(*dst->rows), 256)) < 0)
			return r;
		dst->rows[dst->n++] = src->rows[i];
		memset(&src->rows[i], 0, sizeof(src->rows[i]));
	}
	src->n = 0;
	dst->planes += src->planes;
	dst->total_time = xs_sat_add(dst->total_time, src->total_time);
	dst->total_op_time = xs_sat_add(dst->total_op_time, src->total_op_time);
	db_compact(dst);
	return 0;
}

int stats_opstats_fold(struct xs_rctx *rc, void *db)
{
	struct stats_opstats h;
	int r = stats_opstats_host(rc, &h);

	if (r == 0) {
		r = stats_opstats_merge(db, &h);
		stats_opstats_free(&h);
	}
	return r;
}

int stats_opstats_view(struct xs_rctx *rc, struct xs_out *o,
		       int (*write)(struct xs_out *o, const struct stats_opstats *s))
{
	struct stats_opstats st;
	int r = stats_opstats_host(rc, &st);

	if (r < 0)
		return r;
	OUT_LIT(o, "{");
	r = write(o, &st);
	OUT_LIT(o, "}\n");
	stats_opstats_free(&st);
	return r;
}

int stats_opstats_merge(struct stats_opstats *dst, struct stats_opstats *src)
{
	int r;

	if ((r = db_merge(&dst->dev, &src->dev)) < 0 || (r = db_merge(&dst->host, &src->host)) < 0)
		return r;
	/* CombinePerfEnv(): the peak FLOP rate of the last host with one, HBM of the first */
	if (src->peak_flops > 0)
		dst->peak_flops = src->peak_flops;
	if (src->peak_bw > 0 && !(dst->peak_bw > 0))
		dst->peak_bw = src->peak_bw;
	dst->gpu |= src->gpu;
	return 0;
}

/* By self time (desc), then name: XProf's SortedOpMetricsDb(). */
static int sorted_cmp(const void *a, const void *b, void *arg)
{
	const struct stats_dbop *rows = arg;
	const struct stats_dbop *x = &rows[*(const size_t *)a], *y = &rows[*(const size_t *)b];
	int c;

	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	if ((c = strcmp(x->name, y->name)))
		return c;
	return opt_cmp(x->program, y->program);
}

size_t *stats_opdb_sorted(const struct stats_opdb *d)
{
	size_t *idx = malloc((d->n + 1) * sizeof(*idx));

	if (!idx)
		return NULL;
	for (size_t i = 0; i < d->n; i++)
		idx[i] = i;
	qsort_r(idx, d->n, sizeof(*idx), sorted_cmp, d->rows);
	return idx;
}

/* The key of @r in the framework-op db: CreateTfMetricsDbFromDeviceOpMetricsDb(). */
static void tf_key(const struct stats_dbop *r, const char **name, const char **type)
{
	if (r->idle) {
		*name = *type = "IDLE";
	} else if (!r->provenance || !r->provenance[0] || !r->tf_name) {
		*name = r->name;
		*type = "";
	} else {
		*name = r->tf_name;
		*type = r->tf_type ? r->tf_type : "";
	}
}

int stats_opdb_tf(const struct stats_opdb *dev, bool with_idle, struct stats_opdb *out)
{
	int r = 0;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < dev->n; i++) {
		const struct stats_dbop *a = &dev->rows[i];
		const char *name, *type;
		struct stats_dbop *b;

		if (a->idle && !with_idle)
			continue;
		tf_key(a, &name, &type);
		if ((r = xprofs_grow(&out->rows, &out->cap, out->n, sizeof(*out->rows), 256)) < 0)
			goto fail;
		b = &out->rows[out->n];
		memset(b, 0, sizeof(*b));
		b->name = strdup(name);
		/* UpdateTfOpMetricsWithDeviceOpMetrics(): kUnknownOp -> "Unknown" */
		b->category = strdup(type[0] ? type : "Unknown");
		if (!b->name || !b->category) {
			row_clear(b);
			r = -ENOMEM;
			goto fail;
		}
		b->idle = a->idle;
		b->occ = a->occ; /* the maximum over its device ops, below */
		b->total = a->total;
		b->self = a->self;
		b->flops = a->flops;
		b->bytes = a->bytes; /* model flops are not carried over */
		b->seq = out->n++;
	}
	/* one row per name: occurrences the maximum, the rest summed (first category) */
	if (out->n > 1)
		qsort(out->rows, out->n, sizeof(*out->rows), row_key_cmp);
	{
		size_t w = 0;

		for (size_t i = 0; i < out->n; i++) {
			struct stats_dbop *a = &out->rows[i], *b = w ? &out->rows[w - 1] : NULL;

			if (b && !strcmp(b->name, a->name)) {
				b->occ = a->occ > b->occ ? a->occ : b->occ;
				b->total = xs_sat_add(b->total, a->total);
				b->self = xs_sat_add(b->self, a->self);
				b->flops += a->flops;
				b->bytes += a->bytes;
				row_clear(a);
				continue;
			}
			out->rows[w++] = *a;
		}
		out->n = w;
	}
	out->planes = dev->planes;
	out->total_op_time = dev->total_op_time;
	out->total_time = with_idle ? dev->total_time : dev->total_op_time;
	return 0;
fail:
	db_free(out);
	return r;
}

void stats_opdb_free(struct stats_opdb *d)
{
	db_free(d);
}

double stats_safe_div(double a, double b)
{
	return b < 1e-10 && b > -1e-10 ? 0.0 : a / b;
}

/* GigaToGibi() */
static double giga_to_gibi(double x)
{
	return x * 1e9 / 1073741824.0;
}

const char *stats_bound_by(double flops, double bytes, int64_t ps, double peak_flops,
			   double peak_bw, double *futil, double *butil, double *hbm_gibps)
{
	double ns = (double)ps / 1000.0;
	const char *bound = "Unknown";

	*futil = stats_safe_div(stats_safe_div(flops, ns), peak_flops / 1e9);
	*hbm_gibps = giga_to_gibi(stats_safe_div(bytes, ns));
	*butil = stats_safe_div(*hbm_gibps, giga_to_gibi(peak_bw / 1e9));
	if (*futil > 0)
		bound = "Compute";
	if (*butil > *futil)
		bound = "HBM";
	return bound;
}

void stats_out_kv(struct xs_out *o, const struct stats_kv *kv, size_t n, const char *tail,
		  const char *str)
{
	for (size_t i = 0; i < n; i++) {
		xs_out_add(o, kv[i].key, strlen(kv[i].key));
		xs_out_double(o, kv[i].v);
	}
	xs_out_add(o, tail, strlen(tail));
	xs_out_cstr(o, str);
	OUT_LIT(o, "}");
}
