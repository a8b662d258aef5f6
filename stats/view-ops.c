/*
 * view-ops.c - ops.json: per plane, every op with its count, total, self,
 * min/mean/max time and flops / bytes accessed, sorted by self time.
 *
 * Design: which lines feed an op plane is stats_op_line_kind() (the rule is in
 * docs/decode.md): "XLA Ops" and GPU stream lines of device planes, the
 * framework-op lines of /host:CPU. Ops are aggregated per plane in a hash
 * map by name (GPU kernels by their hlo_op); self time = duration minus the
 * durations of the direct children wholly inside it (XProf's rule), from a
 * stack of open events. Limits: at most
 * OPS_MAX distinct ops per plane (the rest go to "(other)"), nesting at most
 * OPS_DEPTH_MAX deep (deeper events count as leaves).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats-internal.h"

#define OPS_DEPTH_MAX 1024

static void opmap_free(struct opmap *m)
{
	for (size_t i = 0; i < m->n; i++) {
		free(m->ops[i].name);
		free(m->ops[i].category);
		free(m->ops[i].program);
	}
	free(m->ops);
	xprofs_table_free(m->tab);
	memset(m, 0, sizeof(*m));
	m->other = -1;
}

/* An xprofs_table_eq_fn: op @idx of the opmap @ctx is named @key. */
static bool op_name_eq(const void *ctx, uint32_t idx, const void *key)
{
	return !strcmp(((const struct opmap *)ctx)->ops[idx].name, key);
}

/* Index of the op named @name (borrowed; duplicated on insert). */
static int64_t opmap_get(struct opmap *m, const char *name, const char *category)
{
	uint64_t h = xprofs_table_hash(0, name, strlen(name));
	struct op *op;
	uint32_t i;
	int r;

	if (xprofs_table_find(m->tab, h, op_name_eq, m, name, &i) == 0)
		return i;
	if (m->n >= OPS_MAX) {
		if (m->other >= 0)
			return m->other;
		name = "(other)";
		category = "";
		h = xprofs_table_hash(0, name, strlen(name));
	}
	if (!m->tab && (r = xprofs_table_new(OPS_MAX + 1, &m->tab)) < 0) /* + 1: "(other)" */
		return r;
	if ((r = xprofs_grow(&m->ops, &m->cap, m->n, sizeof(*m->ops), 256)) < 0)
		return r;
	op = &m->ops[m->n];
	memset(op, 0, sizeof(*op));
	op->name = strdup(name);
	op->category = strdup(category ? category : "");
	r = op->name && op->category ? xprofs_table_add(m->tab, h, (uint32_t)m->n) : -ENOMEM;
	if (r < 0) {
		free(op->name);
		free(op->category);
		return r;
	}
	op->min = INT64_MAX;
	op->max = INT64_MIN;
	m->n++;
	if (m->n >= OPS_MAX)
		m->other = (int64_t)m->n - 1;
	return (int64_t)m->n - 1;
}

static bool is_host_plane(const struct xs_plane *p)
{
	return !strcmp(p->name, "/host:CPU");
}

/* Which lines of @p feed ops.json (see docs/decode.md for the rule). */
enum stats_line_kind stats_op_line_kind(const struct xprofs_xspace *x, const struct xs_plane *p,
					const struct xs_line *l, bool host_has_fw)
{
	if (xs_plane_is_device(p)) {
		if (xs_str_eq(l->name, l->name_len, "XLA Ops"))
			return LK_XLA_OPS;
		if (!strncmp(l->name, "Stream #", 8))
			return LK_STREAM;
		return LK_NONE;
	}
	if (!is_host_plane(p))
		return LK_NONE;
	if (host_has_fw)
		return xs_str_eq(l->name, l->name_len, "Framework Ops") ||
				       xs_str_eq(l->name, l->name_len, "TensorFlow Ops")
			       ? LK_HOST
			       : LK_NONE;
	static const char *const derived[] = {"Steps",       "_counters_",   "Framework Name Scope",
					      "XLA Modules", "Launch Stats", "Source code"};
	for (size_t i = 0; i < sizeof(derived) / sizeof(derived[0]); i++)
		if (xs_str_eq(l->name, l->name_len, derived[i]))
			return LK_NONE;
	return LK_HOST;
}

bool stats_host_has_fw(const struct xprofs_xspace *x, const struct xs_plane *p)
{
	for (size_t j = p->first_line; j < p->first_line + p->n_lines; j++)
		if (xs_str_eq(x->lines[j].name, x->lines[j].name_len, "Framework Ops") ||
		    xs_str_eq(x->lines[j].name, x->lines[j].name_len, "TensorFlow Ops"))
			return true;
	return false;
}

struct frame {
	int64_t start, end, dur, child;
	int64_t op;
};

static void op_finish(struct opmap *m, const struct frame *f)
{
	int64_t self = f->dur - f->child;

	m->ops[f->op].self += self > 0 ? self : 0;
}

/*
 * GPU ops are grouped by their hlo_op string; when it is a ref (the usual
 * case), the ref names the op within the plane, so a small direct-mapped
 * cache from the ref to the op's index skips hashing the string.
 */
#define REFC_SIZE 1024

struct refc {
	int64_t ref;
	int64_t gi; /* -1: empty */
};

/* One line's aggregation: the op map, the line's kind and the stack of open events. */
struct ops_acc {
	struct opmap *m;
	struct progmap *pm;
	enum stats_line_kind kind;
	uint64_t events;
	int64_t total;
	size_t depth;
	struct frame stack[OPS_DEPTH_MAX];
	struct refc hc[REFC_SIZE]; /* hlo_op ref -> op, for this plane's aggregation */
};

static struct refc *refc_slot(struct ops_acc *a, int64_t ref)
{
	return &a->hc[((uint64_t)ref * 0x9e3779b97f4a7c15ull) >> 54];
}

/* The op event @e of metadata @md counts towards (GPU kernels: their hlo_op), or -errno. */
static int64_t op_group(struct ops_acc *a, struct xs_evmd *md, const struct xs_opstats *os)
{
	int64_t gi;

	if (a->kind == LK_STREAM && os->hlo_op && !(os->plain & (1u << XS_OS_HLO_OP))) {
		struct refc *c = refc_slot(a, os->ref[XS_OS_HLO_OP]);

		if (c->gi >= 0 && c->ref == os->ref[XS_OS_HLO_OP])
			return c->gi;
		gi = opmap_get(a->m, os->hlo_op, os->category ? os->category : md->category);
		if (gi >= 0)
			*c = (struct refc){os->ref[XS_OS_HLO_OP], gi};
		return gi;
	}
	if (a->kind == LK_STREAM && (os->hlo_op || md->hlo_op))
		return opmap_get(a->m, os->hlo_op ? os->hlo_op : md->hlo_op,
				 os->category ? os->category : md->category);
	if (md->group >= 0 && md != &xs_empty_evmd)
		return md->group;
	gi = opmap_get(a->m, md->name, os->category ? os->category : md->category);
	if (gi >= 0 && md != &xs_empty_evmd && !os->category)
		md->group = gi; /* the next occurrence skips the look-up */
	return gi;
}

/*
 * Self time, XProf's rule (ConvertTensorCoreDeviceTraceXPlaneToOpMetricsDb():
 * an AncestorStack whose parent test is Timespan::Includes()): @e (of op
 * @gi) is a child of the innermost open event that wholly contains it
 * (start <= e.start and e.end <= end); open events that do not are closed
 * first. The parent's children time grows by @e's whole duration; an event
 * that only partly overlaps the open one is not its child.
 */
static void ops_nest(struct ops_acc *a, const struct xs_event *e, int64_t gi)
{
	struct frame f = {e->start_ps, e->end_ps, e->duration_ps, 0, gi};

	if (e->has_num) { /* aggregated: no position on the timeline */
		op_finish(a->m, &f);
		return;
	}
	while (a->depth > 0 && !(a->stack[a->depth - 1].start <= e->start_ps &&
				 e->end_ps <= a->stack[a->depth - 1].end))
		op_finish(a->m, &a->stack[--a->depth]);
	if (a->depth > 0) {
		struct frame *top = &a->stack[a->depth - 1];

		top->child = xs_sat_add(top->child, e->duration_ps > 0 ? e->duration_ps : 0);
	}
	if (a->depth < OPS_DEPTH_MAX)
		a->stack[a->depth++] = f;
	else
		op_finish(a->m, &f);
}

#define PROGS_MAX ((size_t)1 << 16)

static void progmap_free(struct progmap *pm)
{
	for (size_t i = 0; i < pm->n; i++)
		free(pm->name[i]);
	free(pm->id);
	free(pm->name);
	xprofs_table_free(pm->tab);
	memset(pm, 0, sizeof(*pm));
}

/* An xprofs_table_eq_fn: program @idx of the progmap @ctx has the id *@key. */
static bool prog_id_eq(const void *ctx, uint32_t idx, const void *key)
{
	return ((const struct progmap *)ctx)->id[idx] == *(const uint64_t *)key;
}

static uint64_t prog_hash(uint64_t id)
{
	return xprofs_table_hash(0, &id, sizeof(id));
}

/* prog_event() - a xs_event_fn: an "XLA Modules" event "<module>(<id>)" names program <id>. */
static int prog_event(struct xs_rctx *rc, const struct xs_event *e, struct xs_evmd *md, void *arg)
{
	struct progmap *pm = arg;
	const char *open = md->name_len ? memrchr(md->name, '(', md->name_len) : NULL;
	uint64_t id = 0, h;
	size_t cap;
	uint32_t i;
	int r;

	(void)rc;
	(void)e;
	if (!open || md->name[md->name_len - 1] != ')' || open + 2 >= md->name + md->name_len ||
	    pm->n >= PROGS_MAX)
		return 0;
	for (const char *q = open + 1; q < md->name + md->name_len - 1; q++) {
		uint64_t dgt = (uint64_t)(*q - '0');

		if (*q < '0' || *q > '9' || id > (UINT64_MAX - dgt) / 10)
			return 0;
		id = id * 10 + dgt;
	}
	h = prog_hash(id);
	if (xprofs_table_find(pm->tab, h, prog_id_eq, pm, &id, &i) == 0)
		return 0; /* keep the first name of an id */
	if (!pm->tab && (r = xprofs_table_new(PROGS_MAX, &pm->tab)) < 0)
		return r;
	cap = pm->cap;
	if ((r = xprofs_grow(&pm->id, &cap, pm->n, sizeof(*pm->id), 16)) < 0 ||
	    (r = xprofs_grow(&pm->name, &pm->cap, pm->n, sizeof(*pm->name), 16)) < 0)
		return r;
	if (!(pm->name[pm->n] = strndup(md->name, md->name_len)))
		return -ENOMEM;
	pm->id[pm->n] = id;
	if ((r = xprofs_table_add(pm->tab, h, (uint32_t)pm->n)) < 0) {
		free(pm->name[pm->n]);
		return r;
	}
	pm->n++;
	return 0;
}

static const char *progmap_find(const struct progmap *pm, uint64_t id)
{
	uint32_t i;

	return xprofs_table_find(pm->tab, prog_hash(id), prog_id_eq, pm, &id, &i) == 0 ? pm->name[i]
										       : NULL;
}

/*
 * op_program() - @op's program, from its first occurrence: "<hlo_module>(<program_id>)"
 * (XProf's HloModuleNameWithProgramId()), else the "XLA Modules" event of its program_id.
 */
static int op_program(const struct ops_acc *a, struct op *op, const struct xs_evmd *md,
		      const struct xs_opstats *os)
{
	const char *mod = os->hlo_module ? os->hlo_module : md->hlo_module;
	bool has_id = os->has_program_id || md->has_program_id;
	uint64_t id = os->has_program_id ? os->program_id : md->program_id;
	const char *known;

	op->program_tried = true;
	if (mod && has_id) {
		if (asprintf(&op->program, "%s(%" PRIu64 ")", mod, id) < 0) {
			op->program = NULL;
			return -ENOMEM;
		}
	} else if (mod) {
		op->program = strdup(mod);
	} else if (has_id && (known = progmap_find(a->pm, id))) {
		op->program = strdup(known);
	} else {
		return 0;
	}
	return op->program ? 0 : -ENOMEM;
}

/* A xs_event_fn: add one event to its op (arg: struct ops_acc). */
static int ops_event(struct xs_rctx *rc, const struct xs_event *ev, struct xs_evmd *md, void *arg)
{
	struct ops_acc *a = arg;
	struct xs_opstats os = {.borrow = true};
	struct xs_event dev = *ev, *e = &dev;
	double flops = md->flops, bytes = md->bytes, mflops = md->model_flops;
	bool has_flops = md->has_flops, has_bytes = md->has_bytes, has_mf = md->has_model_flops;
	struct op *op;
	int64_t gi;
	int r;

	if (e->has_stats && (a->kind == LK_STREAM || a->kind == LK_XLA_OPS)) {
		if ((r = xs_walk_stats(rc, &rc->ev, e->stats_off, e->off + e->len - e->stats_off,
				       XEVENT_F_STATS, xs_collect_stat, &os)) < 0)
			goto out;
		if (os.has_flops)
			flops = os.flops, has_flops = true;
		if (os.has_bytes)
			bytes = os.bytes, has_bytes = true;
		if (os.has_model_flops)
			mflops = os.model_flops, has_mf = true;
		/* GetDeviceEventTimespan(): the device's own clock when the event has it */
		if (a->kind == LK_XLA_OPS && os.has_dev_off && os.has_dev_dur && !e->has_num) {
			e->start_ps = os.dev_off;
			e->duration_ps = os.dev_dur;
			e->end_ps = xs_sat_add(os.dev_off, os.dev_dur);
		}
	}
	if ((r = (int)(gi = op_group(a, md, &os))) < 0)
		goto out;
	op = &a->m->ops[gi];
	if (!op->program_tried) { /* the first occurrence: its strings too (hlo_module) */
		struct xs_opstats ps = {.strings = true, .borrow = true};

		r = 0;
		if (e->has_stats && (a->kind == LK_STREAM || a->kind == LK_XLA_OPS))
			r = xs_walk_stats(rc, &rc->ev, e->stats_off, e->off + e->len - e->stats_off,
					  XEVENT_F_STATS, xs_collect_stat, &ps);
		if (r == 0)
			r = op_program(a, op, md, &ps);
		xs_opstats_clear(&ps);
		if (r < 0)
			goto out;
	}
	op->count++;
	op->occurrences = xs_sat_add(op->occurrences, e->has_num ? (e->num > 0 ? e->num : 0) : 1);
	op->total = xs_sat_add(op->total, e->duration_ps);
	if (e->duration_ps < op->min)
		op->min = e->duration_ps;
	if (e->duration_ps > op->max)
		op->max = e->duration_ps;
	if (has_flops)
		op->flops += flops, op->has_flops = true;
	if (has_bytes)
		op->bytes += bytes, op->has_bytes = true;
	if (has_mf)
		op->model_flops += mflops, op->has_model_flops = true;
	a->events++;
	a->total = xs_sat_add(a->total, e->duration_ps);
	ops_nest(a, e, gi);
	r = 0;
out:
	xs_opstats_clear(&os);
	return r;
}

/* Aggregate one line's events into @a->m; adds to a->events and a->total. */
static int ops_line(struct xs_rctx *rc, size_t li, struct ops_acc *a)
{
	int r = xs_line_each(rc, li, NULL, ops_event, a);

	while (a->depth > 0)
		op_finish(a->m, &a->stack[--a->depth]);
	return r;
}

static int op_cmp(const void *a, const void *b, void *arg)
{
	const struct opmap *m = arg;
	const struct op *x = &m->ops[*(const size_t *)a];
	const struct op *y = &m->ops[*(const size_t *)b];

	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* out_opt_double() - @lit then @d, or null when not @has. */
static void out_opt_double(struct xs_out *o, const char *lit, bool has, double d)
{
	xs_out_add(o, lit, strlen(lit));
	if (has)
		xs_out_double(o, d);
	else
		OUT_LIT(o, "null");
}

/* out_rate() - @lit then @amount per second of @ps (XProf's SafeDivide over time), null if unknown. */
static void out_rate(struct xs_out *o, const char *lit, bool has, double amount, int64_t ps)
{
	out_opt_double(o, lit, has && ps > 0, amount / (double)ps * 1e12);
}

/*
 * out_roofline() - arithmetic intensity and XProf's SetRooflineMetrics() bound:
 * bytes != 0 ? (flops/bytes >= ridge ? Compute : Memory) : (flops != 0 ? Compute : Unknown);
 * null without peak rates (no ridge point).
 */
static void out_roofline(struct xs_out *o, const struct op *op, const struct stats_plane_facts *f)
{
	double flops = op->has_flops ? op->flops : 0, bytes = op->has_bytes ? op->bytes : 0;
	const char *bound;

	out_opt_double(o, ",\"intensity\":", op->has_flops && bytes != 0, flops / bytes);
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
	out_opt_double(o, ",\"share\":", whole > 0, (double)part / (double)whole);
}

static void op_write(struct xs_out *o, const struct op *op, const struct stats_plane_facts *f,
		     int64_t plane_self)
{
	xs_out_cstr(o, op->name);
	OUT_LIT(o, ",\"category\":");
	xs_out_cstr(o, op->category);
	OUT_LIT(o, ",\"program\":");
	if (op->program)
		xs_out_cstr(o, op->program);
	else
		OUT_LIT(o, "null");
	OUT_LIT(o, ",\"count\":");
	xs_out_u64(o, op->count);
	xs_out_key_i64(o, ",\"occurrences\":", op->occurrences);
	xs_out_key_i64(o, ",\"total_ps\":", op->total);
	xs_out_key_i64(o, ",\"self_ps\":", op->self);
	xs_out_key_i64(o, ",\"min_ps\":", op->count ? op->min : 0);
	xs_out_key_i64(o, ",\"mean_ps\":", op->count ? op->total / (int64_t)op->count : 0);
	xs_out_key_i64(o, ",\"max_ps\":", op->count ? op->max : 0);
	out_opt_double(o, ",\"avg_ps\":", op->occurrences > 0,
		       (double)op->total / (double)op->occurrences);
	out_opt_double(o, ",\"flops\":", op->has_flops, op->flops);
	out_opt_double(o, ",\"model_flops\":", op->has_model_flops, op->model_flops);
	out_opt_double(o, ",\"bytes_accessed\":", op->has_bytes, op->bytes);
	out_rate(o, ",\"flops_per_s\":", op->has_flops, op->flops, op->total);
	out_rate(o, ",\"model_flops_per_s\":", op->has_model_flops, op->model_flops, op->total);
	out_rate(o, ",\"bytes_per_s\":", op->has_bytes, op->bytes, op->total);
	out_roofline(o, op, f);
	out_share(o, op->self, plane_self);
}

static int ops_write(struct opmap *m, const size_t *idx, const struct stats_plane_facts *f,
		     int64_t plane_self, struct xs_out *o)
{
	for (size_t i = 0; i < m->n; i++) {
		OUT_RAW(o, i ? ",\n{\"name\":" : "\n{\"name\":");
		op_write(o, &m->ops[idx[i]], f, plane_self);
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
 * ops_rollup() - "by_category" or "by_program": as XProf's UpdateNodeMetrics(), a
 * group's time is the sum of its ops' self times, and an op's flops / bytes count
 * only when it has no children time (total == self).
 */
static int ops_rollup(struct opmap *m, bool by_program, int64_t plane_self, struct xs_out *o)
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
		out_opt_double(o, ",\"flops\":", g[i].has_flops, g[i].flops);
		out_opt_double(o, ",\"model_flops\":", g[i].has_model_flops, g[i].model_flops);
		out_opt_double(o, ",\"bytes_accessed\":", g[i].has_bytes, g[i].bytes);
		out_rate(o, ",\"flops_per_s\":", g[i].has_flops, g[i].flops, g[i].self);
		out_rate(o, ",\"bytes_per_s\":", g[i].has_bytes, g[i].bytes, g[i].self);
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

/* ---- one plane ---------------------------------------------------------- */

int stats_ops_plane(struct xs_rctx *rc, size_t pi, struct stats_ops *out)
{
	struct xprofs_xspace *x = rc->x;
	const struct xs_plane *p = &x->planes[pi];
	bool fw = is_host_plane(p) && stats_host_has_fw(x, p);
	struct ops_acc *acc = NULL;
	int r = 0;

	memset(out, 0, sizeof(*out));
	out->m.other = -1;
	if (!(acc = malloc(sizeof(*acc))))
		return -ENOMEM;
	acc->m = &out->m;
	acc->pm = &out->pm;
	acc->events = 0;
	acc->total = 0;
	acc->depth = 0;
	for (size_t i = 0; i < REFC_SIZE; i++)
		acc->hc[i].gi = -1;
	for (size_t j = p->first_line; j < p->first_line + p->n_lines; j++)
		if (xs_plane_is_device(p) &&
		    xs_str_eq(x->lines[j].name, x->lines[j].name_len, "XLA Modules") &&
		    (r = xs_line_each(rc, j, NULL, prog_event, &out->pm)) < 0)
			goto out;
	for (size_t j = p->first_line; j < p->first_line + p->n_lines; j++) {
		enum stats_line_kind k = stats_op_line_kind(x, p, &x->lines[j], fw);

		if (k == LK_NONE)
			continue;
		acc->kind = k;
		if ((r = ops_line(rc, j, acc)) < 0)
			goto out;
	}
	out->events = acc->events;
	out->total = acc->total;
	for (size_t i = 0; i < out->m.n; i++)
		out->self = xs_sat_add(out->self, out->m.ops[i].self);
	if (out->events)
		r = stats_plane_facts_get(rc, pi, &out->f);
out:
	free(acc);
	if (r < 0)
		stats_ops_free(out);
	return r;
}

void stats_ops_free(struct stats_ops *d)
{
	opmap_free(&d->m);
	progmap_free(&d->pm);
	stats_plane_facts_clear(&d->f);
}

int stats_ops_merge(struct stats_ops *dst, const struct stats_ops *src)
{
	if (!dst->m.tab)
		dst->m.other = -1;
	for (size_t i = 0; i < src->m.n; i++) {
		const struct op *a = &src->m.ops[i];
		int64_t gi = opmap_get(&dst->m, a->name, a->category);
		struct op *b;

		if (gi < 0)
			return (int)gi;
		b = &dst->m.ops[gi];
		if (!b->program_tried && a->program && !(b->program = strdup(a->program)))
			return -ENOMEM;
		b->program_tried = true;
		b->count += a->count;
		b->occurrences = xs_sat_add(b->occurrences, a->occurrences);
		b->total = xs_sat_add(b->total, a->total);
		b->self = xs_sat_add(b->self, a->self);
		b->min = a->min < b->min ? a->min : b->min;
		b->max = a->max > b->max ? a->max : b->max;
		if (a->has_flops)
			b->flops += a->flops, b->has_flops = true;
		if (a->has_bytes)
			b->bytes += a->bytes, b->has_bytes = true;
		if (a->has_model_flops)
			b->model_flops += a->model_flops, b->has_model_flops = true;
	}
	dst->events += src->events;
	dst->total = xs_sat_add(dst->total, src->total);
	dst->self = xs_sat_add(dst->self, src->self);
	return 0;
}

/* stats_ops_sorted() - the ops' indexes by self time (desc), total, name. Caller frees. */
size_t *stats_ops_sorted(struct stats_ops *d)
{
	size_t *idx = malloc((d->m.n + 1) * sizeof(*idx));

	if (!idx)
		return NULL;
	for (size_t i = 0; i < d->m.n; i++)
		idx[i] = i;
	qsort_r(idx, d->m.n, sizeof(*idx), op_cmp, &d->m);
	return idx;
}

static void out_peak(struct xs_out *o, const struct stats_plane_facts *f)
{
	out_opt_double(o, ",\"peak_flops_per_s\":", f->peak_flops > 0, f->peak_flops);
	out_opt_double(o, ",\"peak_hbm_bytes_per_s\":", f->peak_bw > 0, f->peak_bw);
	out_opt_double(o, ",\"ridge_flops_per_byte\":", f->peak_flops > 0 && f->peak_bw > 0,
		       f->peak_flops / f->peak_bw);
}

static int ops_plane_write(struct xs_rctx *rc, size_t pi, struct stats_ops *d, struct xs_out *o)
{
	const struct xs_plane *p = &rc->x->planes[pi];
	size_t *idx = stats_ops_sorted(d);
	int r;

	if (!idx)
		return -ENOMEM;
	xs_out_str(o, p->name, p->name_len);
	OUT_LIT(o, ",\"file\":");
	xs_out_cstr(o, p->file);
	OUT_RAW(o, xs_plane_is_device(p) ? ",\"kind\":\"device\"" : ",\"kind\":\"host\"");
	OUT_LIT(o, ",\"events\":");
	xs_out_u64(o, d->events);
	xs_out_key_i64(o, ",\"total_ps\":", d->total);
	xs_out_key_i64(o, ",\"self_ps\":", d->self);
	out_peak(o, &d->f);
	OUT_LIT(o, ",\"ops\":[");
	r = ops_write(&d->m, idx, &d->f, d->self, o);
	free(idx);
	if (r < 0)
		return r;
	OUT_LIT(o, "],\"by_category\":[");
	if ((r = ops_rollup(&d->m, false, d->self, o)) < 0)
		return r;
	OUT_LIT(o, "],\"by_program\":[");
	if ((r = ops_rollup(&d->m, true, d->self, o)) < 0)
		return r;
	OUT_LIT(o, "]}");
	return xs_out_flush(o, false);
}

/* One plane of ops.json, computed by xs_tasks_run(). */
struct ops_slot {
	struct stats_ops d;
	int r;
};

/* A xs_task_fn: plane @pi's op table into slot @pi (arg: struct ops_slot[]). */
static int ops_task(struct xs_rctx *rc, size_t pi, void *arg)
{
	struct ops_slot *s = &((struct ops_slot *)arg)[pi];

	return s->r = stats_ops_plane(rc, pi, &s->d);
}

/* A xs_task_cost_fn: a plane's events. */
static uint64_t ops_cost(const struct xprofs_xspace *x, size_t pi, void *arg)
{
	(void)arg;
	return x->planes[pi].events;
}

/*
 * stats_view_ops() - the planes' op tables are independent: they are computed
 * first (on several threads when the profile allows, xs_tasks_run()), then
 * written in plane order; a failing plane ends the output where a plane-by-plane
 * loop would have.
 */
int stats_view_ops(struct xs_rctx *rc, struct xs_out *o)
{
	struct xprofs_xspace *x = rc->x;
	struct ops_slot *slot = calloc(x->n_planes + 1, sizeof(*slot));
	bool first_plane = true;
	int r = 0;

	if (!slot)
		return -ENOMEM;
	(void)xs_tasks_run(rc, x->n_planes, ops_task, ops_cost,
			   slot); /* each slot has its result */
	OUT_LIT(o, "{\"planes\":[");
	for (size_t pi = 0; pi < x->n_planes; pi++) {
		struct stats_ops *d = &slot[pi].d;

		if ((r = slot[pi].r) < 0)
			goto out;
		if (d->events) { /* else: not an op plane, or no op events */
			OUT_RAW(o, first_plane ? "\n{\"name\":" : ",\n{\"name\":");
			first_plane = false;
			if ((r = ops_plane_write(rc, pi, d, o)) < 0)
				goto out;
		}
		stats_ops_free(d);
	}
	OUT_LIT(o, "\n]}\n");
out:
	for (size_t pi = 0; pi < x->n_planes; pi++)
		stats_ops_free(&slot[pi].d);
	free(slot);
	return r;
}

/* ---- for the session-wide views (view-session.c) ----------------------- */

void stats_op_write(struct xs_out *o, const struct op *op, const struct stats_plane_facts *f,
		    int64_t plane_self)
{
	op_write(o, op, f, plane_self);
}

int stats_ops_rollup_write(struct opmap *m, bool by_program, int64_t plane_self, struct xs_out *o)
{
	return ops_rollup(m, by_program, plane_self, o);
}

void stats_ops_peak_write(struct xs_out *o, const struct stats_plane_facts *f)
{
	out_peak(o, f);
}
