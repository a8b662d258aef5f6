/*
 * ops.c - one plane's op table: its ops aggregated by name as XProf's
 * OpMetricsDb (count, total, self, min/max time, flops / bytes accessed, the
 * program), the plane's XLA programs, and tables combined by name
 * (OpMetricsDbCombiner). ops.json, overview.json, overview.svg and the
 * session's ops.json are written from it.
 *
 * Design: which lines feed an op plane is stats_op_line_kind() (lines.c).
 * Ops are aggregated per plane in a hash map by name (GPU kernels by their
 * hlo_op); self time = duration minus the durations of the direct children
 * wholly inside it (XProf's rule, ConvertTensorCoreDeviceTraceXPlaneToOpMetricsDb()),
 * from a stack of open events. Limits: at most OPS_MAX distinct ops per
 * plane (the rest go to "(other)"), nesting at most OPS_DEPTH_MAX deep
 * (deeper events count as leaves), PROGS_MAX programs per plane.
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
	struct xs_rctx *rc;        /* borrowed: the render's, for its HLO facts */
};

static struct refc *refc_slot(struct ops_acc *a, int64_t ref)
{
	return &a->hc[((uint64_t)ref * 0x9e3779b97f4a7c15ull) >> 54];
}

/*
 * stream_category() - a GPU kernel's op category: its own (stat or metadata),
 * else, as XProf's GPU op metrics take it from the HLO, the category
 * (HloInstructionWrapper::Category()) of the instruction named by the last
 * "::" part of its hlo_op in its program. NULL: none; -errno in *@r.
 */
static const char *stream_category(struct ops_acc *a, const struct xs_evmd *md,
				   const struct xs_opstats *os, const char *hlo, int *r)
{
	const char *cat = os->category ? os->category : md->category, *last = hlo, *hit;
	bool has_id = os->has_program_id || md->has_program_id;
	const struct xprofs_hlo_facts *facts;
	struct xprofs_hlo_fact f;

	*r = 0;
	if ((cat && cat[0]) || !has_id)
		return cat;
	if ((*r = xs_hlo_facts(a->rc, &facts)) < 0 || !facts)
		return cat;
	while ((hit = strstr(last, "::")) != NULL)
		last = hit + 2;
	if (xprofs_hlo_facts_find(facts, os->has_program_id ? os->program_id : md->program_id, last,
				  strlen(last), &f))
		return f.category;
	return cat;
}

/* The op event @e of metadata @md counts towards (GPU kernels: their hlo_op), or -errno. */
static int64_t op_group(struct ops_acc *a, struct xs_evmd *md, const struct xs_opstats *os)
{
	const char *cat;
	int64_t gi;
	int r;

	if (a->kind == LK_STREAM && os->hlo_op && !(os->plain & (1u << XS_OS_HLO_OP))) {
		struct refc *c = refc_slot(a, os->ref[XS_OS_HLO_OP]);

		if (c->gi >= 0 && c->ref == os->ref[XS_OS_HLO_OP])
			return c->gi;
		cat = stream_category(a, md, os, os->hlo_op, &r);
		if (r < 0)
			return r;
		gi = opmap_get(a->m, os->hlo_op, cat);
		if (gi >= 0)
			*c = (struct refc){os->ref[XS_OS_HLO_OP], gi};
		return gi;
	}
	if (a->kind == LK_STREAM && (os->hlo_op || md->hlo_op)) {
		const char *hlo = os->hlo_op ? os->hlo_op : md->hlo_op;

		cat = stream_category(a, md, os, hlo, &r);
		if (r < 0)
			return r;
		return opmap_get(a->m, hlo, cat);
	}
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

/* ---- one plane ---------------------------------------------------------- */

int stats_ops_plane(struct xs_rctx *rc, size_t pi, struct stats_ops *out)
{
	struct xprofs_xspace *x = rc->x;
	const struct xs_plane *p = &x->planes[pi];
	bool fw = stats_plane_is_host(p) && stats_host_has_fw(x, p);
	struct ops_acc *acc = NULL;
	int r = 0;

	memset(out, 0, sizeof(*out));
	out->m.other = -1;
	if (!(acc = malloc(sizeof(*acc))))
		return -ENOMEM;
	acc->m = &out->m;
	acc->pm = &out->pm;
	acc->rc = rc;
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
