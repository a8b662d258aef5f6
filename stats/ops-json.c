/*
 * ops-json.c - the JSON of an op table that ops.json and the session's
 * ops.json share: one op's fields (stats_op_write()), the by_category /
 * by_program rollups (XProf's op profile, op_profile_builder.cc) and a plane's
 * peak-rate keys; rates and the roofline bound as XProf's SafeDivide() and
 * SetRooflineMetrics().
 *
 * Design: writers only, over a table ops.c filled; a rollup sorts indexes of
 * the ops by key and sums each run. Limits: a rollup holds one group per op
 * at most (O(distinct ops)); a value that cannot be computed is null.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stats-internal.h"

/*
 * out_roofline() - arithmetic intensity and XProf's SetRooflineMetrics() bound:
 * bytes != 0 ? (flops/bytes >= ridge ? Compute : Memory) : (flops != 0 ? Compute : Unknown);
 * null without peak rates (no ridge point).
 */
static void out_roofline(struct xs_out *o, const struct op *op, const struct stats_plane_facts *f)
{
	double flops = op->has_flops ? op->flops : 0, bytes = op->has_bytes ? op->bytes : 0;
	const char *bound;

	xs_out_opt_double(o, ",\"intensity\":", op->has_flops && bytes != 0, flops / bytes);
	OUT_LIT(o, ",\"bound\":");
	if (!(f->peak_flops > 0 && f->peak_bw > 0)) {
		OUT_LIT(o, "null");
		return;
	}
	if (bytes != 0)
		bound = flops / bytes >= f->peak_flops / f->peak_bw ? "\"Compute\"" : "\"Memory\"";
	else
		bound = flops != 0 ? "\"Compute\"" : "\"Unknown\"";
	xs_out_add(o, bound, strlen(bound));
}

/* out_share() - ,"share": @part / @whole, null when @whole is 0. */
static void out_share(struct xs_out *o, int64_t part, int64_t whole)
{
	xs_out_opt_double(o, ",\"share\":", whole > 0, (double)part / (double)whole);
}

void stats_op_write(struct xs_out *o, const struct op *op, const struct stats_plane_facts *f,
		    int64_t plane_self)
{
	xs_out_cstr(o, op->name);
	OUT_LIT(o, ",\"category\":");
	xs_out_cstr(o, op->category);
	stats_out_opt_str(o, ",\"program\":", op->program);
	stats_out_opt_str(o, ",\"provenance\":", op->provenance);
	stats_out_opt_str(o, ",\"source\":", op->source);
	OUT_LIT(o, ",\"count\":");
	xs_out_u64(o, op->count);
	xs_out_key_i64(o, ",\"occurrences\":", op->occurrences);
	xs_out_key_i64(o, ",\"total_ps\":", op->total);
	xs_out_key_i64(o, ",\"self_ps\":", op->self);
	xs_out_key_i64(o, ",\"min_ps\":", op->count ? op->min : 0);
	xs_out_key_i64(o, ",\"mean_ps\":", op->count ? op->total / (int64_t)op->count : 0);
	xs_out_key_i64(o, ",\"max_ps\":", op->count ? op->max : 0);
	xs_out_opt_double(o, ",\"avg_ps\":", op->occurrences > 0,
			  (double)op->total / (double)op->occurrences);
	xs_out_opt_double(o, ",\"flops\":", op->has_flops, op->flops);
	xs_out_opt_double(o, ",\"model_flops\":", op->has_model_flops, op->model_flops);
	xs_out_opt_double(o, ",\"bytes_accessed\":", op->has_bytes, op->bytes);
	stats_out_per_s(o, ",\"flops_per_s\":", op->has_flops, op->flops, op->total);
	stats_out_per_s(o, ",\"model_flops_per_s\":", op->has_model_flops, op->model_flops,
			op->total);
	stats_out_per_s(o, ",\"bytes_per_s\":", op->has_bytes, op->bytes, op->total);
	out_roofline(o, op, f);
	out_share(o, op->self, plane_self);
}

int stats_ops_rows_write(struct xs_out *o, const struct opmap *m, const size_t *idx,
			 const struct stats_plane_facts *f, int64_t plane_self)
{
	for (size_t i = 0; i < m->n; i++) {
		OUT_RAW(o, i ? ",\n{\"name\":" : "\n{\"name\":");
		stats_op_write(o, &m->ops[idx[i]], f, plane_self);
		OUT_LIT(o, "}");
		if (xs_out_flush(o, false) < 0)
			break;
	}
	return o->r;
}

/* ---- rollups: XProf's op profile by category / by program ------------- */

/* One group of ops (op_profile_builder.cc: a category or program node). */
struct rollup {
	const char *key; /* borrowed from an op; NULL: no program */
	uint64_t ops;
	int64_t occurrences, self, total;
	double flops, bytes, model_flops;
	bool has_flops, has_bytes, has_model_flops;
};

static const char *op_key(const struct op *op, bool by_program)
{
	return by_program ? op->program : op->category;
}

static int key_cmp(const char *x, const char *y)
{
	if (!x || !y)
		return x ? 1 : y ? -1 : 0;
	return strcmp(x, y);
}

struct key_sort_arg {
	const struct opmap *m;
	bool by_program;
};

static int key_sort(const void *a, const void *b, void *arg)
{
	const struct key_sort_arg *k = arg;
	const struct op *x = &k->m->ops[*(const size_t *)a], *y = &k->m->ops[*(const size_t *)b];

	return key_cmp(op_key(x, k->by_program), op_key(y, k->by_program));
}

static int rollup_cmp(const void *a, const void *b)
{
	const struct rollup *x = a, *y = b;

	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	return key_cmp(x->key, y->key);
}

/*
 * stats_ops_rollup_write() - "by_category" or "by_program": as XProf's UpdateNodeMetrics(), a
 * group's time is the sum of its ops' self times, and an op's flops / bytes count
 * only when it has no children time (total == self).
 */
int stats_ops_rollup_write(struct opmap *m, bool by_program, int64_t plane_self, struct xs_out *o)
{
	size_t *idx = malloc((m->n + 1) * sizeof(*idx)), ng = 0;
	struct rollup *g = calloc(m->n + 1, sizeof(*g));
	struct key_sort_arg ka = {m, by_program};
	int r = 0;

	if (!idx || !g) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < m->n; i++)
		idx[i] = i;
	qsort_r(idx, m->n, sizeof(*idx), key_sort, &ka);
	for (size_t i = 0; i < m->n; i++) {
		const struct op *op = &m->ops[idx[i]];
		struct rollup *cur;
		bool leaf = op->total == op->self;

		if (!ng || key_cmp(g[ng - 1].key, op_key(op, by_program)))
			g[ng++].key = op_key(op, by_program);
		cur = &g[ng - 1];
		cur->ops++;
		cur->occurrences = xs_sat_add(cur->occurrences, op->occurrences);
		cur->self = xs_sat_add(cur->self, op->self);
		cur->total = xs_sat_add(cur->total, op->total);
		if (leaf && op->has_flops)
			cur->flops += op->flops, cur->has_flops = true;
		if (leaf && op->has_bytes)
			cur->bytes += op->bytes, cur->has_bytes = true;
		if (leaf && op->has_model_flops)
			cur->model_flops += op->model_flops, cur->has_model_flops = true;
	}
	qsort(g, ng, sizeof(*g), rollup_cmp);
	for (size_t i = 0; i < ng; i++) {
		OUT_RAW(o, i ? ",\n{\"name\":" : "\n{\"name\":");
		if (g[i].key)
			xs_out_cstr(o, g[i].key);
		else
			OUT_LIT(o, "null");
		OUT_LIT(o, ",\"ops\":");
		xs_out_u64(o, g[i].ops);
		xs_out_key_i64(o, ",\"occurrences\":", g[i].occurrences);
		xs_out_key_i64(o, ",\"self_ps\":", g[i].self);
		xs_out_key_i64(o, ",\"total_ps\":", g[i].total);
		xs_out_opt_double(o, ",\"flops\":", g[i].has_flops, g[i].flops);
		xs_out_opt_double(o, ",\"model_flops\":", g[i].has_model_flops, g[i].model_flops);
		xs_out_opt_double(o, ",\"bytes_accessed\":", g[i].has_bytes, g[i].bytes);
		stats_out_per_s(o, ",\"flops_per_s\":", g[i].has_flops, g[i].flops, g[i].self);
		stats_out_per_s(o, ",\"bytes_per_s\":", g[i].has_bytes, g[i].bytes, g[i].self);
		out_share(o, g[i].self, plane_self);
		OUT_LIT(o, "}");
		if ((r = xs_out_flush(o, false)) < 0)
			break;
	}
out:
	free(idx);
	free(g);
	return r < 0 ? r : o->r;
}

int stats_ops_rollups_write(struct xs_out *o, struct opmap *m, int64_t plane_self)
{
	int r;

	OUT_LIT(o, "],\"by_category\":[");
	if ((r = stats_ops_rollup_write(m, false, plane_self, o)) < 0)
		return r;
	OUT_LIT(o, "],\"by_program\":[");
	if ((r = stats_ops_rollup_write(m, true, plane_self, o)) < 0)
		return r;
	OUT_LIT(o, "]");
	return o->r;
}

int stats_ops_table_write(struct xs_out *o, struct opmap *m, const size_t *idx, uint64_t events,
			  int64_t total, int64_t self, const struct stats_plane_facts *f)
{
	int r;

	OUT_LIT(o, ",\"events\":");
	xs_out_u64(o, events);
	xs_out_key_i64(o, ",\"total_ps\":", total);
	xs_out_key_i64(o, ",\"self_ps\":", self);
	stats_ops_peak_write(o, f);
	OUT_LIT(o, ",\"ops\":[");
	if ((r = stats_ops_rows_write(o, m, idx, f, self)) < 0)
		return r;
	return stats_ops_rollups_write(o, m, self);
}

void stats_ops_peak_write(struct xs_out *o, const struct stats_plane_facts *f)
{
	xs_out_opt_double(o, ",\"peak_flops_per_s\":", f->peak_flops > 0, f->peak_flops);
	xs_out_opt_double(o, ",\"peak_hbm_bytes_per_s\":", f->peak_bw > 0, f->peak_bw);
	xs_out_opt_double(o, ",\"ridge_flops_per_byte\":", f->peak_flops > 0 && f->peak_bw > 0,
			  f->peak_flops / f->peak_bw);
}
