/*
 * view-op-profile.c - op_profile.json: XProf's op profile
 * (ConvertOpStatsToOpProfile(), op_stats_to_op_profile.cc; OpProfileBuilder,
 * op_profile_builder.cc) of a host's device op metrics db (opdb.c): the
 * trees by program (program -> category -> op) and by category (category
 * -> op), each with and without the IDLE op, with XProf's options (group by
 * deduplicated name, at most 100 children below the grouping levels) and
 * each node's metrics as PopulateOpMetricsNode() computes them.
 *
 * Design: one tree at a time in an array of nodes (children as index
 * arrays). The rows are sorted by (program, category, name), so each
 * grouping node is made once, in one pass (XProf's maps); the root and
 * program nodes sum as UpdateNodeMetrics(), the others as
 * CombineOpMetrics(); then SortAndPruneChildren() and
 * FinalizeDeduplicatedNodes(). Limits: O(rows) nodes; rows named "region..."
 * are left out as XProf leaves them out; the per-memory-space bandwidths
 * count every byte as HBM (the op table has no memory_accessed_breakdown;
 * SetRooflineMetrics()'s rule for such profiles), on-chip ones are 0.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats-internal.h"

#define CHILDREN_MAX 100 /* op_profile_limit of XProf's op profile tool */

struct pn {
	const char *name;            /* borrowed from a row (or a constant) */
	const struct stats_dbop *op; /* an op node's row; NULL: a grouping node */
	bool dup_group;              /* "<op> and its duplicate(s)": @op is the top child's */
	struct stats_dbop m;         /* its OpMetrics (numbers only; m.op.total is its time) */
	size_t *kid;                 /* owned */
	size_t nk, ck;
};

struct tree {
	struct pn *n; /* owned; n[0] is the root */
	size_t nn, cap;
	const struct stats_opdb *d;
	bool by_program;
};

static void tree_free(struct tree *t)
{
	for (size_t i = 0; i < t->nn; i++)
		free(t->n[i].kid);
	free(t->n);
}

/* node_add() - a new child of @parent (SIZE_MAX: none) named @name; its index or -ENOMEM. */
static ssize_t node_add(struct tree *t, size_t parent, const char *name,
			const struct stats_dbop *op)
{
	struct pn *p;

	if (xprofs_grow(&t->n, &t->cap, t->nn, sizeof(*t->n), 64) < 0)
		return -ENOMEM;
	memset(&t->n[t->nn], 0, sizeof(t->n[t->nn]));
	t->n[t->nn].name = name;
	t->n[t->nn].op = op;
	if (parent != SIZE_MAX) {
		p = &t->n[parent];
		if (xprofs_grow(&p->kid, &p->ck, p->nk, sizeof(*p->kid), 8) < 0)
			return -ENOMEM;
		p->kid[p->nk++] = t->nn;
	}
	return (ssize_t)t->nn++;
}

/* UpdateNodeMetrics(): time grows by the op's self time; amounts only from ops without children. */
static void update(struct stats_dbop *m, const struct stats_dbop *r)
{
	struct stats_dbop add = {.op = {.total = r->op.self, .self = r->op.self}};

	if (r->op.total == r->op.self) {
		add.op.flops = r->op.flops;
		add.op.model_flops = r->op.model_flops;
		add.op.bytes = r->op.bytes;
	}
	stats_dbop_add(m, &add);
}

static const char *prog_name(const struct stats_dbop *r)
{
	return r->op.program ? r->op.program : "main"; /* GenerateProgramName() of an unknown id */
}

static int row_cmp(const void *a, const void *b, void *arg)
{
	const struct tree *t = arg;
	const struct stats_dbop *x = &t->d->r[*(const size_t *)a];
	const struct stats_dbop *y = &t->d->r[*(const size_t *)b];
	int c = t->by_program ? strcmp(prog_name(x), prog_name(y)) : 0;

	if (!c)
		c = strcmp(x->op.category, y->op.category);
	if (!c)
		c = strcmp(x->op.name, y->op.name);
	return c ? c
		 : (*(const size_t *)a > *(const size_t *)b) -
			       (*(const size_t *)a < *(const size_t *)b);
}

/* tree_fill() - OpProfileBuilder::AddOp() of every row but "region..." (and IDLE if @excl). */
static int tree_fill(struct tree *t, bool excl)
{
	const struct stats_opdb *d = t->d;
	size_t *idx = malloc((d->n + 1) * sizeof(*idx)), n = 0;
	size_t prog = SIZE_MAX, cat = SIZE_MAX, dup = SIZE_MAX;
	ssize_t k;
	int r = -ENOMEM;

	if (!idx || node_add(t, SIZE_MAX, t->by_program ? "by_program" : "by_category", NULL) < 0)
		goto out;
	for (size_t i = 0; i < d->n; i++)
		if (strncmp(d->r[i].op.name, "region", 6) && !(excl && d->r[i].idle))
			idx[n++] = i;
	qsort_r(idx, n, sizeof(*idx), row_cmp, t);
	for (size_t i = 0; i < n; i++) {
		const struct stats_dbop *row = &d->r[idx[i]];

		update(&t->n[0].m, row);
		if (row->idle) {
			if (row->op.total != row->op.self ||
			    (k = node_add(t, 0, row->op.name, row)) < 0)
				continue;
			stats_dbop_add(&t->n[k].m, row);
			continue;
		}
		if (t->by_program &&
		    (prog == SIZE_MAX || strcmp(t->n[prog].name, prog_name(row)))) {
			if ((k = node_add(t, 0, prog_name(row), NULL)) < 0)
				goto out;
			prog = (size_t)k;
			cat = SIZE_MAX;
		}
		if (t->by_program)
			update(&t->n[prog].m, row);
		if (row->op.total != row->op.self) /* ops with children time are not leaves */
			continue;
		if (cat == SIZE_MAX || strcmp(t->n[cat].name, row->op.category)) {
			if ((k = node_add(t, t->by_program ? prog : 0, row->op.category, NULL)) < 0)
				goto out;
			cat = (size_t)k;
			dup = SIZE_MAX;
		}
		/* LookupOrAddDeduplicatedNode(): the op's name (no deduplicated_name known) */
		if (dup == SIZE_MAX || strcmp(t->n[dup].name, row->op.name)) {
			if ((k = node_add(t, cat, row->op.name, NULL)) < 0)
				goto out;
			dup = (size_t)k;
		}
		if ((k = node_add(t, dup, row->op.name, row)) < 0)
			goto out;
		stats_dbop_add(&t->n[cat].m, row);
		stats_dbop_add(&t->n[dup].m, row);
		stats_dbop_add(&t->n[k].m, row);
	}
	/* Finalize(): the root's time is the db's total (TotalTimePs()) */
	t->n[0].m.op.total = excl ? d->self : d->total_time;
	r = 0;
out:
	free(idx);
	return r;
}

static int kid_cmp(const void *a, const void *b, void *arg)
{
	const struct tree *t = arg;
	const struct pn *x = &t->n[*(const size_t *)a], *y = &t->n[*(const size_t *)b];

	int c;

	if (x->m.op.total != y->m.op.total)
		return x->m.op.total > y->m.op.total ? -1 : 1;
	if ((c = strcmp(x->name, y->name)) || !x->op || !y->op)
		return c;
	/* one name in two programs (a group of duplicates): by program, none first */
	if (!x->op->op.program || !y->op->op.program)
		return !!x->op->op.program - !!y->op->op.program;
	return strcmp(x->op->op.program, y->op->op.program);
}

/* SortAndPruneChildren(): by time; below the grouping levels, the top CHILDREN_MAX. */
static void prune(struct tree *t, size_t i, int level)
{
	struct pn *p = &t->n[i];

	for (size_t j = 0; j < p->nk; j++)
		prune(t, p->kid[j], level - 1);
	if (p->nk > 1) /* kid is NULL without children */
		qsort_r(p->kid, p->nk, sizeof(*p->kid), kid_cmp, t);
	if (level <= 0 && p->nk > CHILDREN_MAX)
		p->nk = CHILDREN_MAX;
}

/* FinalizeNodeRecursive(): a group of one op becomes the op; of several, "<top> and its duplicate(s)". */
static void finalize(struct tree *t, size_t i)
{
	struct pn *p = &t->n[i];
	bool group = p->nk > 0 && !p->op;

	for (size_t j = 0; group && j < p->nk; j++)
		group = t->n[p->kid[j]].op != NULL;
	if (!group) {
		for (size_t j = 0; j < p->nk; j++)
			finalize(t, p->kid[j]);
		return;
	}
	if (p->nk == 1) {
		size_t k = p->kid[0];

		free(p->kid);
		*p = t->n[k]; /* its children move with it */
		t->n[k].kid = NULL;
		t->n[k].nk = t->n[k].ck = 0;
		return;
	}
	p->op = t->n[p->kid[0]].op;
	p->dup_group = true;
}

/* ---- the JSON --------------------------------------------------------------- */

static bool is_fusion(const char *category)
{
	size_t n = strlen(category);

	return n >= 7 && !strcmp(category + n - 7, " fusion");
}

struct peaks {
	double flops, bw; /* per second */
	int64_t total;    /* the tree's total time */
};

/*
 * metrics_write() - PopulateOpMetricsNode() of @m, and xprofs' own rates and
 * bound (SetRooflineMetrics()'s rule over compute and HBM).
 */
static void metrics_write(struct xs_out *o, const struct stats_dbop *m, const struct peaks *pk)
{
	double t = (double)m->op.total, futil, butil, gibps;
	const char *bound = stats_bound_by(m->op.flops, m->op.bytes, m->op.total, pk->flops, pk->bw,
					   &futil, &butil, &gibps);
	const struct stats_kv kv[] = {
		{",\"avg_time_ps\":", stats_safe_div(t, (double)m->op.occurrences)},
		{",\"raw_flops\":", m->op.model_flops},
		{",\"bf16_flops\":", m->op.flops},
		{",\"flops\":", (futil < 1.0 ? futil : 1.0) * stats_safe_div(t, (double)pk->total)},
		{",\"flops_per_s\":", stats_safe_div(m->op.flops, t) * 1e12},
		{",\"model_flops_per_s\":", stats_safe_div(m->op.model_flops, t) * 1e12},
		{",\"bytes_accessed\":", m->op.bytes},
		{",\"memory_bw_bytes_per_s\":", stats_safe_div(m->op.bytes, t) * 1e12},
		{",\"bandwidth_utils\":[", butil < 1.0 ? butil : 1.0},
		{",0,0],\"raw_bytes_accessed_array\":[", gibps * 1073741824.0 / 1e9 * (t / 1000.0)},
	};

	xs_out_key_i64(o, "{\"raw_time_ps\":", m->op.total);
	xs_out_key_i64(o, ",\"self_time_ps\":", m->op.self);
	xs_out_key_i64(o, ",\"occurrences\":", m->op.occurrences);
	stats_out_kv(o, kv, sizeof(kv) / sizeof(kv[0]), ",0,0],\"bound_by\":", bound);
}

/* xla_write() - PopulateSymbolNode() / CopySymbolDetailsToDeduplicatedNode() of node @p. */
static void xla_write(struct xs_out *o, const struct pn *p)
{
	const struct stats_dbop *r = p->op;

	OUT_LIT(o, ",\"xla\":");
	if (!r) {
		OUT_LIT(o, "null");
		return;
	}
	OUT_LIT(o, "{\"program_id\":");
	xs_out_u64(o, r->pid);
	stats_out_opt_str(o, ",\"program\":", r->op.program);
	stats_out_opt_str(o, ",\"category\":", r->op.category);
	stats_out_opt_str(o, ",\"provenance\":",
			  p->dup_group && is_fusion(r->op.category) ? NULL : r->op.provenance);
	OUT_LIT(o, "}");
}

static int node_write(struct xs_out *o, const struct tree *t, size_t i, const struct peaks *pk)
{
	const struct pn *p = &t->n[i];
	int r;

	OUT_LIT(o, "{\"name\":");
	if (p->dup_group) {
		char *name = NULL;

		if (asprintf(&name, "%s and its duplicate(s)", t->n[p->kid[0]].name) < 0)
			return -ENOMEM;
		xs_out_cstr(o, name);
		free(name);
	} else {
		xs_out_cstr(o, p->name);
	}
	OUT_LIT(o, ",\"num_children\":");
	xs_out_u64(o, p->nk);
	xla_write(o, p);
	OUT_LIT(o, ",\"metrics\":");
	metrics_write(o, &p->m, pk);
	OUT_LIT(o, ",\"children\":[");
	for (size_t j = 0; j < p->nk; j++) {
		if (j)
			OUT_LIT(o, ",\n");
		if ((r = node_write(o, t, p->kid[j], pk)) < 0)
			return r;
	}
	OUT_LIT(o, "]}");
	return xs_out_flush(o, false);
}

/* BuildOpProfileNodeTree(): one tree, or null without device ops. */
static int tree_write(struct xs_out *o, const struct stats_opstats *s, bool by_program, bool excl)
{
	struct tree t = {.d = &s->dev, .by_program = by_program};
	struct peaks pk = {s->peak_flops, s->peak_bw, 0};
	int r;

	if (!s->dev.n) {
		OUT_LIT(o, "null");
		return 0;
	}
	if ((r = tree_fill(&t, excl)) == 0) {
		/* Finalize(): the metrics are of the db's total time, before pruning */
		pk.total = excl ? s->dev.self : s->dev.total_time;
		prune(&t, 0, by_program ? 2 : 1);
		finalize(&t, 0);
		r = node_write(o, &t, 0, &pk);
	}
	tree_free(&t);
	return r;
}

int stats_op_profile_write(struct xs_out *o, const struct stats_opstats *s)
{
	static const char *const keys[] = {
		",\n\"by_program\":", ",\n\"by_program_exclude_idle\":", ",\n\"by_category\":",
		",\n\"by_category_exclude_idle\":"};
	int r;

	OUT_LIT(o, "\"device_type\":");
	xs_out_cstr(o, s->gpu ? "GPU" : s->dev.planes ? "TPU" : "CPU_ONLY");
	OUT_LIT(o, ",\"device_planes\":");
	xs_out_u64(o, s->dev.planes);
	xs_out_key_i64(o, ",\"total_time_ps\":", s->dev.total_time);
	xs_out_key_i64(o, ",\"total_op_time_ps\":", s->dev.self);
	xs_out_opt_double(o, ",\"peak_flops_per_s\":", s->peak_flops > 0, s->peak_flops);
	xs_out_opt_double(o, ",\"peak_hbm_bytes_per_s\":", s->peak_bw > 0, s->peak_bw);
	OUT_LIT(o, ",\"children_limit\":");
	xs_out_u64(o, CHILDREN_MAX);
	for (int i = 0; i < 4; i++) {
		xs_out_add(o, keys[i], strlen(keys[i]));
		if ((r = tree_write(o, s, i < 2, i % 2)) < 0)
			return r;
	}
	return o->r;
}

int stats_view_op_profile(struct xs_rctx *rc, struct xs_out *o)
{
	return stats_opstats_view(rc, o, STATS_DB_OPS, stats_op_profile_write, "}\n");
}
