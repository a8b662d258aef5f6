/*
 * view-ops.c - ops.json: per plane, every op with its count, total, self,
 * min/mean/max time and flops / bytes accessed, sorted by self time.
 *
 * Design: which lines feed an op plane is dec_op_line_kind() (the rule is in
 * docs/decode.md): "XLA Ops" and GPU stream lines of device planes, the
 * framework-op lines of /host:CPU. Ops are aggregated per plane in a hash
 * map by name (GPU kernels by their hlo_op); self time = duration minus the
 * direct children's overlap, from a stack of open events. Limits: at most
 * OPS_MAX distinct ops per plane (the rest go to "(other)"), nesting at most
 * OPS_DEPTH_MAX deep (deeper events count as leaves).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "render-internal.h"

#define OPS_MAX ((size_t)1 << 20)
#define OPS_DEPTH_MAX 1024

struct op {
	char *name, *category; /* owned */
	uint64_t count;
	int64_t total, self, min, max;
	double flops, bytes;
	bool has_flops, has_bytes;
};

struct opmap {
	struct op *ops; /* owned */
	size_t n, cap;
	uint32_t *slot; /* 1 + op index, 0 empty */
	size_t nslot;
	int64_t other; /* index of "(other)" or -1 */
};

static void opmap_free(struct opmap *m)
{
	for (size_t i = 0; i < m->n; i++) {
		free(m->ops[i].name);
		free(m->ops[i].category);
	}
	free(m->ops);
	free(m->slot);
	memset(m, 0, sizeof(*m));
	m->other = -1;
}

static int opmap_rehash(struct opmap *m, size_t nslot)
{
	uint32_t *s = calloc(nslot, sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < m->n; i++) {
		size_t h =
			(size_t)xprofs_hash64(m->ops[i].name, strlen(m->ops[i].name)) & (nslot - 1);

		while (s[h])
			h = (h + 1) & (nslot - 1);
		s[h] = (uint32_t)(i + 1);
	}
	free(m->slot);
	m->slot = s;
	m->nslot = nslot;
	return 0;
}

/* Index of the op named @name (borrowed; duplicated on insert). */
static int64_t opmap_get(struct opmap *m, const char *name, const char *category)
{
	size_t h;
	struct op *op;
	int r;

	if (!m->slot && opmap_rehash(m, 1024) < 0)
		return -ENOMEM;
	h = (size_t)xprofs_hash64(name, strlen(name)) & (m->nslot - 1);
	while (m->slot[h]) {
		if (!strcmp(m->ops[m->slot[h] - 1].name, name))
			return m->slot[h] - 1;
		h = (h + 1) & (m->nslot - 1);
	}
	if (m->n >= OPS_MAX) {
		if (m->other >= 0)
			return m->other;
		name = "(other)";
		category = "";
	}
	if ((r = xprofs_grow(&m->ops, &m->cap, m->n, sizeof(*m->ops), 256)) < 0)
		return r;
	op = &m->ops[m->n];
	memset(op, 0, sizeof(*op));
	op->name = strdup(name);
	op->category = strdup(category ? category : "");
	if (!op->name || !op->category) {
		free(op->name);
		free(op->category);
		return -ENOMEM;
	}
	op->min = INT64_MAX;
	m->n++;
	if (m->n >= OPS_MAX)
		m->other = (int64_t)m->n - 1;
	if (m->n * 2 > m->nslot) {
		if (opmap_rehash(m, m->nslot * 2) < 0)
			return -ENOMEM;
	} else {
		m->slot[h] = (uint32_t)m->n;
	}
	return (int64_t)m->n - 1;
}

static bool is_host_plane(const struct dec_plane *p)
{
	return !strcmp(p->name, "/host:CPU");
}

/* Which lines of @p feed ops.json (see docs/decode.md for the rule). */
enum dec_line_kind dec_op_line_kind(const struct xprofs_xspace *x, const struct dec_plane *p,
				    const struct dec_line *l, bool host_has_fw)
{
	if (dec_plane_is_device(p)) {
		if (dec_str_eq(l->name, l->name_len, "XLA Ops"))
			return LK_XLA_OPS;
		if (!strncmp(l->name, "Stream #", 8))
			return LK_STREAM;
		return LK_NONE;
	}
	if (!is_host_plane(p))
		return LK_NONE;
	if (host_has_fw)
		return dec_str_eq(l->name, l->name_len, "Framework Ops") ||
				       dec_str_eq(l->name, l->name_len, "TensorFlow Ops")
			       ? LK_HOST
			       : LK_NONE;
	static const char *const derived[] = {"Steps",       "_counters_",   "Framework Name Scope",
					      "XLA Modules", "Launch Stats", "Source code"};
	for (size_t i = 0; i < sizeof(derived) / sizeof(derived[0]); i++)
		if (dec_str_eq(l->name, l->name_len, derived[i]))
			return LK_NONE;
	return LK_HOST;
}

static bool host_has_framework_lines(const struct xprofs_xspace *x, const struct dec_plane *p)
{
	for (size_t j = p->first_line; j < p->first_line + p->n_lines; j++)
		if (dec_str_eq(x->lines[j].name, x->lines[j].name_len, "Framework Ops") ||
		    dec_str_eq(x->lines[j].name, x->lines[j].name_len, "TensorFlow Ops"))
			return true;
	return false;
}

struct frame {
	int64_t end, dur, child;
	int64_t op;
};

static void op_finish(struct opmap *m, const struct frame *f)
{
	int64_t self = f->dur - f->child;

	m->ops[f->op].self += self > 0 ? self : 0;
}

/* One line's aggregation: the op map, the line's kind and the stack of open events. */
struct ops_acc {
	struct opmap *m;
	enum dec_line_kind kind;
	uint64_t events;
	int64_t total;
	size_t depth;
	struct frame stack[OPS_DEPTH_MAX];
};

/* The op event @e of metadata @md counts towards (GPU kernels: their hlo_op), or -errno. */
static int64_t op_group(struct ops_acc *a, struct dec_evmd *md, const struct dec_opstats *os)
{
	int64_t gi;

	if (a->kind == LK_STREAM && (os->hlo_op || md->hlo_op))
		return opmap_get(a->m, os->hlo_op ? os->hlo_op : md->hlo_op,
				 os->category ? os->category : md->category);
	if (md->group >= 0 && md != &dec_empty_evmd)
		return md->group;
	gi = opmap_get(a->m, md->name, os->category ? os->category : md->category);
	if (gi >= 0 && md != &dec_empty_evmd && !os->category)
		md->group = gi; /* the next occurrence skips the look-up */
	return gi;
}

/* Self time: @e (of op @gi) is a child of the innermost open event it starts in. */
static void ops_nest(struct ops_acc *a, const struct dec_event *e, int64_t gi)
{
	struct frame *top;

	if (e->has_num) { /* aggregated: no position on the timeline */
		struct frame f = {0, e->duration_ps, 0, gi};

		op_finish(a->m, &f);
		return;
	}
	while (a->depth > 0 && a->stack[a->depth - 1].end <= e->start_ps)
		op_finish(a->m, &a->stack[--a->depth]);
	if (a->depth > 0) {
		top = &a->stack[a->depth - 1];
		int64_t end = e->end_ps < top->end ? e->end_ps : top->end;
		int64_t ov = end - e->start_ps;

		if (ov > 0)
			top->child = dec_sat_add(top->child, ov);
	}
	if (a->depth < OPS_DEPTH_MAX) {
		a->stack[a->depth++] = (struct frame){e->end_ps, e->duration_ps, 0, gi};
	} else {
		struct frame f = {e->end_ps, e->duration_ps, 0, gi};

		op_finish(a->m, &f);
	}
}

/* A dec_event_fn: add one event to its op (arg: struct ops_acc). */
static int ops_event(struct dec_rctx *rc, const struct dec_event *e, struct dec_evmd *md, void *arg)
{
	struct ops_acc *a = arg;
	struct dec_opstats os = {0};
	double flops = md->flops, bytes = md->bytes;
	bool has_flops = md->has_flops, has_bytes = md->has_bytes;
	struct op *op;
	int64_t gi;
	int r;

	if (e->has_stats && (a->kind == LK_STREAM || a->kind == LK_XLA_OPS)) {
		if ((r = dec_walk_stats(rc, &rc->ev, e->stats_off, e->off + e->len - e->stats_off,
					XEVENT_F_STATS, dec_collect_stat, &os)) < 0) {
			dec_opstats_clear(&os);
			return r;
		}
		if (os.has_flops)
			flops = os.flops, has_flops = true;
		if (os.has_bytes)
			bytes = os.bytes, has_bytes = true;
	}
	gi = op_group(a, md, &os);
	dec_opstats_clear(&os);
	if (gi < 0)
		return (int)gi;
	op = &a->m->ops[gi];
	op->count++;
	op->total = dec_sat_add(op->total, e->duration_ps);
	if (e->duration_ps < op->min)
		op->min = e->duration_ps;
	if (e->duration_ps > op->max)
		op->max = e->duration_ps;
	if (has_flops)
		op->flops += flops, op->has_flops = true;
	if (has_bytes)
		op->bytes += bytes, op->has_bytes = true;
	a->events++;
	a->total = dec_sat_add(a->total, e->duration_ps);
	ops_nest(a, e, gi);
	return 0;
}

/* Aggregate one line's events into @a->m; adds to a->events and a->total. */
static int ops_line(struct dec_rctx *rc, size_t li, struct ops_acc *a)
{
	int r = dec_line_each(rc, li, NULL, ops_event, a);

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
static void out_opt_double(struct dec_out *o, const char *lit, bool has, double d)
{
	dec_out_add(o, lit, strlen(lit));
	if (has)
		dec_out_double(o, d);
	else
		OUT_LIT(o, "null");
}

static int ops_write(struct opmap *m, struct dec_out *o)
{
	size_t *idx = malloc((m->n + 1) * sizeof(*idx));

	if (!idx)
		return -ENOMEM;
	for (size_t i = 0; i < m->n; i++)
		idx[i] = i;
	qsort_r(idx, m->n, sizeof(*idx), op_cmp, m);
	for (size_t i = 0; i < m->n; i++) {
		const struct op *op = &m->ops[idx[i]];

		OUT_RAW(o, i ? ",\n{\"name\":" : "\n{\"name\":");
		dec_out_cstr(o, op->name);
		OUT_LIT(o, ",\"category\":");
		dec_out_cstr(o, op->category);
		OUT_LIT(o, ",\"count\":");
		dec_out_u64(o, op->count);
		dec_out_key_i64(o, ",\"total_ps\":", op->total);
		dec_out_key_i64(o, ",\"self_ps\":", op->self);
		dec_out_key_i64(o, ",\"min_ps\":", op->count ? op->min : 0);
		dec_out_key_i64(o, ",\"mean_ps\":", op->count ? op->total / (int64_t)op->count : 0);
		dec_out_key_i64(o, ",\"max_ps\":", op->max);
		out_opt_double(o, ",\"flops\":", op->has_flops, op->flops);
		out_opt_double(o, ",\"bytes_accessed\":", op->has_bytes, op->bytes);
		OUT_LIT(o, "}");
		if (dec_out_flush(o, false) < 0)
			break;
	}
	free(idx);
	return o->r;
}

int dec_view_ops(struct dec_rctx *rc, struct dec_out *o)
{
	struct xprofs_xspace *x = rc->x;
	struct ops_acc acc; /* one plane's, reset per plane (its stack is 32 KiB) */
	struct opmap m;
	bool first_plane = true;
	int r = 0;

	memset(&m, 0, sizeof(m));
	m.other = -1;
	OUT_LIT(o, "{\"planes\":[");
	for (size_t pi = 0; pi < x->n_planes; pi++) {
		const struct dec_plane *p = &x->planes[pi];
		bool fw = is_host_plane(p) && host_has_framework_lines(x, p);

		acc.m = &m;
		acc.events = 0;
		acc.total = 0;
		acc.depth = 0;

		for (size_t j = p->first_line; j < p->first_line + p->n_lines; j++) {
			enum dec_line_kind k = dec_op_line_kind(x, p, &x->lines[j], fw);

			if (k == LK_NONE)
				continue;
			acc.kind = k;
			if ((r = ops_line(rc, j, &acc)) < 0)
				goto out;
		}
		if (acc.events == 0) /* not an op plane, or no op events */
			continue;
		OUT_RAW(o, first_plane ? "\n{\"name\":" : ",\n{\"name\":");
		first_plane = false;
		dec_out_str(o, p->name, p->name_len);
		OUT_LIT(o, ",\"file\":");
		dec_out_cstr(o, p->file);
		OUT_RAW(o, dec_plane_is_device(p) ? ",\"kind\":\"device\"" : ",\"kind\":\"host\"");
		OUT_LIT(o, ",\"events\":");
		dec_out_u64(o, acc.events);
		dec_out_key_i64(o, ",\"total_ps\":", acc.total);
		OUT_LIT(o, ",\"ops\":[");
		if ((r = ops_write(&m, o)) < 0)
			goto out;
		OUT_LIT(o, "]}");
		opmap_free(&m);
		if ((r = dec_out_flush(o, false)) < 0)
			goto out;
	}
	OUT_LIT(o, "\n]}\n");
out:
	opmap_free(&m);
	return r;
}
