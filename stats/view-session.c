/*
 * view-session.c - the session-wide views (docs/stats.md "Session ops",
 * "Compare"): runs/<run>/<session>/ops.json, the hosts' op tables combined
 * as XProf combines op metrics across hosts, and compare/<other>/ops.json
 * and steps.json, the change from one session to another.
 *
 * Design: each host is analysed alone (stats_ops_plane() per plane,
 * stats_steps_overview()) and folded into two session tables, device and
 * host, as XProf's CombineAllOpStats() folds each host's
 * device_op_metrics_db and host_op_metrics_db with OpMetricsDbCombiner:
 * ops keyed by (program, name) (LookupOrInsertNewOpMetrics(hlo_module_id,
 * name)), CombineOpMetrics() sums and minimum, CopyOpMetricsMetadata()'s
 * first non-empty category; peak rates as CombinePerfEnv(). A host is
 * folded only once its analysis has succeeded (its own tables first), so
 * a failing host leaves no partial numbers. Compare matches ops by name
 * (program ids are numbered per compilation, so they differ between
 * runs) and hosts by host name.
 *
 * Memory: O(distinct ops) per table, at most OPS_MAX per session table
 * (further ones fold into "(other)"), plus one host's tables and the
 * profile indexes the caller opened; never O(events).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stats-internal.h"

/* ---- a session op table: ops keyed by (program, name) ------------------ */

struct sdb {
	struct opmap m; /* m.tab keyed by (program, name) here, not by name as in view-ops.c */
	int64_t other;  /* index of "(other)" or -1 */
	uint64_t planes, events;
	int64_t total, self;
	struct stats_plane_facts f; /* peak rates only (no strings) */
	bool has_f;
};

static void sdb_init(struct sdb *d)
{
	memset(d, 0, sizeof(*d));
	d->m.other = -1;
	d->other = -1;
}

static void sdb_free(struct sdb *d)
{
	for (size_t i = 0; i < d->m.n; i++) {
		free(d->m.ops[i].name);
		free(d->m.ops[i].category);
		free(d->m.ops[i].program);
		free(d->m.ops[i].provenance);
		free(d->m.ops[i].source);
	}
	free(d->m.ops);
	xprofs_table_free(d->m.tab);
	sdb_init(d);
}

/* An op's key in a session table; @program may be NULL (no program), unlike "". */
struct skey {
	const char *program, *name;
};

static uint64_t key_hash(const struct skey *k)
{
	uint64_t h = xprofs_table_hash(0, k->name, strlen(k->name));

	return k->program ? xprofs_table_hash(h, k->program, strlen(k->program)) : h;
}

/* An xprofs_table_eq_fn: op @idx of the sdb @ctx has the key @key (a struct skey). */
static bool key_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct op *op = &((const struct sdb *)ctx)->m.ops[idx];
	const struct skey *k = key;

	if (strcmp(op->name, k->name))
		return false;
	return k->program && op->program ? !strcmp(k->program, op->program)
					 : k->program == op->program;
}

/*
 * sdb_get() - the op (@program, @name) of @d (both borrowed, copied on
 * insert; @program may be NULL), inserted empty when new; past OPS_MAX
 * distinct ops, "(other)". Index or -ENOMEM.
 */
static int64_t sdb_get(struct sdb *d, const char *program, const char *name)
{
	struct skey k = {program, name};
	uint64_t h = key_hash(&k);
	bool full = d->m.n >= stats_ops_max;
	struct op *op;
	uint32_t i;
	int r;

	if (xprofs_table_find(d->m.tab, h, key_eq, d, &k, &i) == 0)
		return i;
	if (full) {
		if (d->other >= 0)
			return d->other;
		program = NULL;
		name = "(other)";
		h = key_hash(&(struct skey){program, name});
	}
	if (!d->m.tab && (r = xprofs_table_new(OPS_MAX + 1, &d->m.tab)) < 0) /* + 1: "(other)" */
		return r;
	if ((r = xprofs_grow(&d->m.ops, &d->m.cap, d->m.n, sizeof(*d->m.ops), 256)) < 0)
		return r;
	op = &d->m.ops[d->m.n];
	memset(op, 0, sizeof(*op));
	op->name = strdup(name);
	op->category = strdup("");
	op->program = program ? strdup(program) : NULL;
	op->program_tried = true;
	if (!op->name || !op->category || (program && !op->program))
		r = -ENOMEM;
	else
		r = xprofs_table_add(d->m.tab, h, (uint32_t)d->m.n);
	if (r < 0) {
		free(op->name);
		free(op->category);
		free(op->program);
		return r;
	}
	op->min = INT64_MAX;
	op->max = INT64_MIN;
	d->m.n++;
	if (full) /* the "(other)" row itself, not the last op before the cap */
		d->other = (int64_t)d->m.n - 1;
	return (int64_t)d->m.n - 1;
}

/*
 * op_combine() - XProf's CombineOpMetrics() of @a into @b (sums; the minimum,
 * or @a's when @b has no occurrences yet) and CopyOpMetricsMetadata()'s
 * category (the first non-empty one), provenance and source likewise. The
 * maximum is xprofs' own.
 */
static int op_combine(struct op *b, const struct op *a)
{
	if (!b->category[0] && a->category[0]) {
		char *c = strdup(a->category);

		if (!c)
			return -ENOMEM;
		free(b->category);
		b->category = c;
	}
	if (stats_op_meta(b, a) < 0)
		return -ENOMEM;
	b->min = b->occurrences == 0 || a->min < b->min ? a->min : b->min;
	b->max = a->max > b->max ? a->max : b->max;
	stats_op_add(b, a);
	return 0;
}

/* sdb_add() - fold the ops of @src (borrowed) into @d (OpMetricsDbCombiner::Combine()). */
static int sdb_add(struct sdb *d, const struct opmap *src)
{
	for (size_t i = 0; i < src->n; i++) {
		int64_t gi = sdb_get(d, src->ops[i].program, src->ops[i].name);
		int r;

		if (gi < 0)
			return (int)gi;
		if ((r = op_combine(&d->m.ops[gi], &src->ops[i])) < 0)
			return r;
	}
	return 0;
}

/* sdb_merge() - fold table @src into @d: its ops, counts and peak rates (CombinePerfEnv()). */
static int sdb_merge(struct sdb *d, const struct sdb *src)
{
	int r = sdb_add(d, &src->m);

	if (r < 0)
		return r;
	d->planes += src->planes;
	d->events += src->events;
	d->total = xs_sat_add(d->total, src->total);
	d->self = xs_sat_add(d->self, src->self);
	if (src->has_f && src->f.peak_flops > 0)
		d->f.peak_flops = src->f.peak_flops; /* the last host's */
	if (src->has_f && src->f.peak_bw > 0 && !(d->f.peak_bw > 0))
		d->f.peak_bw = src->f.peak_bw; /* the first host's */
	d->has_f = d->has_f || src->has_f;
	return 0;
}

/* ---- one session: every host folded in --------------------------------- */

/* One host's contribution while it is analysed (folded in only on success). */
struct host_acc {
	struct sdb dev, host;
	struct stats_step_summary steps;
	bool want_ops, want_steps;
};

/* What a view needs of one session. */
struct sess {
	const struct xprofs_session_in *in;
	struct sdb dev, host;
	struct stats_step_summary *steps; /* per host, in @in's order */
	char **errors;                    /* per host: why its analysis failed; owned */
};

/* host_tables() - host_fn()'s work: one host's op tables and step summary. */
static int host_tables(struct xs_rctx *rc, struct host_acc *h)
{
	struct stats_ops ops;
	int r;

	if (h->want_steps && (r = stats_steps_overview(rc, &h->steps)) < 0)
		return r;
	for (size_t q = 0; h->want_ops && q < rc->x->n_planes; q++) {
		bool dev = xs_plane_is_device(&rc->x->planes[q]);
		struct sdb *d = dev ? &h->dev : &h->host;

		if ((r = stats_ops_plane(rc, q, &ops)) < 0)
			return r;
		if (ops.events) {
			r = sdb_add(d, &ops.m);
			d->planes++;
			d->events += ops.events;
			d->total = xs_sat_add(d->total, ops.total);
			d->self = xs_sat_add(d->self, ops.self);
			/* a host's PerfEnv: its first device plane's (GetPerfEnvFromXPlane()) */
			if (dev && !d->has_f) {
				d->f.peak_flops = ops.f.peak_flops;
				d->f.peak_bw = ops.f.peak_bw;
				d->has_f = true;
			}
		}
		stats_ops_free(&ops);
		if (r < 0)
			return r;
	}
	return 0;
}

/* host_fn() - a xs_with_rctx() function: one host's op tables and step summary. */
static int host_fn(struct xs_rctx *rc, void *arg)
{
	struct host_acc *h = arg;
	struct xprofs_hlo_lazy *hlo = NULL;
	int r;

	/* the host's HLO (metadata plane, attached sidecars), as its own ops.json sees it */
	if ((r = xprofs_hlo_lazy_new(rc->x, NULL, &hlo)) < 0)
		return r;
	rc->hlo = xprofs_hlo_lazy_src(hlo);
	r = host_tables(rc, h);
	rc->hlo = NULL;
	xprofs_hlo_lazy_free(hlo);
	return r;
}

static void sess_free(struct sess *s)
{
	sdb_free(&s->dev);
	sdb_free(&s->host);
	for (size_t i = 0; s->errors && i < s->in->n; i++)
		free(s->errors[i]);
	free(s->errors);
	free(s->steps);
	memset(s, 0, sizeof(*s));
}

/*
 * sess_load() - analyse every host of @in (borrowed; kept in @s): op tables
 * when @ops, step summaries when @steps. A host that did not open or whose
 * analysis fails is left out, with its reason in s->errors[i]. Free with
 * sess_free(), also on failure (-ENOMEM).
 */
static int sess_load(struct sess *s, const struct xprofs_session_in *in, bool ops, bool steps)
{
	struct xprofs_buf err;
	int r = 0;

	memset(s, 0, sizeof(*s));
	s->in = in;
	sdb_init(&s->dev);
	sdb_init(&s->host);
	s->steps = calloc(in->n + 1, sizeof(*s->steps));
	s->errors = calloc(in->n + 1, sizeof(*s->errors));
	if (!s->steps || !s->errors)
		return -ENOMEM;
	for (size_t i = 0; i < in->n && r == 0; i++) {
		struct host_acc h = {.want_ops = ops, .want_steps = steps};
		int hr = -ENOENT;

		sdb_init(&h.dev);
		sdb_init(&h.host);
		xprofs_buf_init(&err, 1024);
		if (in->xs[i])
			hr = xs_with_rctx(in->xs[i], &err, host_fn, &h);
		if (hr == 0) {
			s->steps[i] = h.steps;
			r = sdb_merge(&s->dev, &h.dev);
			if (r == 0)
				r = sdb_merge(&s->host, &h.host);
		} else if (hr == -ENOMEM) {
			r = hr;
		} else {
			const char *why = err.len ? err.data
					  : !in->xs[i] && in->host_errors && in->host_errors[i]
						  ? in->host_errors[i]
					  : !in->xs[i] ? "cannot open"
						       : strerror(-hr);

			if (!(s->errors[i] = strdup(why)))
				r = -ENOMEM;
		}
		sdb_free(&h.dev);
		sdb_free(&h.host);
		xprofs_buf_deinit(&err);
	}
	return r;
}

/* ---- session ops.json ----------------------------------------------------- */

static int sop_cmp(const void *a, const void *b, void *arg)
{
	const struct op *ops = arg, *x = &ops[*(const size_t *)a], *y = &ops[*(const size_t *)b];
	int c;

	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	if ((c = strcmp(x->name, y->name)))
		return c;
	if (!x->program || !y->program)
		return x->program ? 1 : y->program ? -1 : 0;
	return strcmp(x->program, y->program);
}

/* out_session() - "session":..,"hosts":[{"host":..,"error":..|null}...] of @s. */
static void out_session(struct xs_out *o, const struct sess *s)
{
	stats_session_hosts_write(o, s->in, s->errors); /* view-session-op.c */
}

/* table_write() - one session table as ops.json's plane object minus name/file/kind. */
static int table_write(struct xs_out *o, struct sdb *d)
{
	size_t *idx;
	int r;

	if (!d->planes) {
		OUT_LIT(o, "null");
		return 0;
	}
	if (!(idx = malloc((d->m.n + 1) * sizeof(*idx))))
		return -ENOMEM;
	for (size_t i = 0; i < d->m.n; i++)
		idx[i] = i;
	qsort_r(idx, d->m.n, sizeof(*idx), sop_cmp, d->m.ops);
	OUT_LIT(o, "{\"planes\":");
	xs_out_u64(o, d->planes);
	r = stats_ops_table_write(o, &d->m, idx, d->events, d->total, d->self, &d->f);
	free(idx);
	if (r < 0)
		return r;
	OUT_LIT(o, "}");
	return o->r;
}

/* out_end() - the view's closing brace, flushed: 0 or the first error. */
static int out_end(struct xs_out *o)
{
	OUT_LIT(o, "}\n");
	return o->r ? o->r : xs_out_flush(o, true);
}

static int valid(const struct xprofs_session_in *s)
{
	return s && (!s->n || (s->hosts && s->xs));
}

int xprofs_decode_session_ops(const struct xprofs_session_in *in, const struct xprofs_sink *sink)
{
	struct xs_out o;
	struct sess s;
	int r;

	if (!sink || !sink->write || !valid(in))
		return -EINVAL;
	xs_out_init(&o, sink);
	if ((r = sess_load(&s, in, true, false)) < 0)
		goto out;
	OUT_LIT(&o, "{");
	out_session(&o, &s);
	OUT_LIT(&o, ",\n\"device\":");
	if ((r = table_write(&o, &s.dev)) < 0)
		goto out;
	OUT_LIT(&o, ",\n\"host\":");
	if ((r = table_write(&o, &s.host)) < 0)
		goto out;
	r = out_end(&o);
out:
	sess_free(&s);
	xs_out_deinit(&o);
	return r;
}

/* ---- compare: ops --------------------------------------------------------- */

/* One op name of one side: its ops (all programs) added up. */
struct side {
	bool has;
	const char *category; /* borrowed; the first non-empty */
	int64_t occ, self;
};

/* One row of the diff. */
struct drow {
	const char *name; /* borrowed from a session table */
	struct side a, b; /* base, new */
};

/* By name, then program (none first): a name's first category is then well defined. */
static int name_cmp(const void *a, const void *b, void *arg)
{
	const struct op *ops = arg, *x = &ops[*(const size_t *)a], *y = &ops[*(const size_t *)b];
	int c = strcmp(x->name, y->name);

	if (c || !x->program || !y->program)
		return c ? c : x->program ? 1 : y->program ? -1 : 0;
	return strcmp(x->program, y->program);
}

/* by_name() - indexes of @d's ops sorted by name, then program; caller frees (NULL: no memory). */
static size_t *by_name(const struct sdb *d)
{
	size_t *idx = malloc((d->m.n + 1) * sizeof(*idx));

	if (!idx)
		return NULL;
	for (size_t i = 0; i < d->m.n; i++)
		idx[i] = i;
	qsort_r(idx, d->m.n, sizeof(*idx), name_cmp, d->m.ops);
	return idx;
}

/* side_take() - add up the ops of @d named like idx[*i] (and move *i past them). */
static const char *side_take(const struct sdb *d, const size_t *idx, size_t *i, struct side *s)
{
	const char *name = d->m.ops[idx[*i]].name;

	s->has = true;
	s->category = "";
	for (; *i < d->m.n && !strcmp(d->m.ops[idx[*i]].name, name); (*i)++) {
		const struct op *op = &d->m.ops[idx[*i]];

		if (!s->category[0])
			s->category = op->category;
		s->occ = xs_sat_add(s->occ, op->occurrences);
		s->self = xs_sat_add(s->self, op->self);
	}
	return name;
}

static int64_t abs64(int64_t v)
{
	return v < 0 ? -v : v; /* never INT64_MIN: both sides are >= 0 */
}

static int drow_cmp(const void *a, const void *b)
{
	const struct drow *x = a, *y = b;
	int64_t dx = abs64(x->b.self - x->a.self), dy = abs64(y->b.self - y->a.self);

	if (dx != dy)
		return dx > dy ? -1 : 1;
	dx = abs64(x->b.occ - x->a.occ);
	dy = abs64(y->b.occ - y->a.occ);
	if (dx != dy)
		return dx > dy ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* out_share3() - ,"share_base":..,"share_new":..,"delta_share":.. (null when a total is 0). */
static void out_share3(struct xs_out *o, int64_t a, int64_t ta, int64_t b, int64_t tb)
{
	double sa = ta > 0 ? (double)a / (double)ta : 0, sb = tb > 0 ? (double)b / (double)tb : 0;

	OUT_LIT(o, ",\"share_base\":");
	if (ta > 0)
		xs_out_double(o, sa);
	else
		OUT_LIT(o, "null");
	OUT_LIT(o, ",\"share_new\":");
	if (tb > 0)
		xs_out_double(o, sb);
	else
		OUT_LIT(o, "null");
	OUT_LIT(o, ",\"delta_share\":");
	if (ta > 0 && tb > 0)
		xs_out_double(o, sb - sa);
	else
		OUT_LIT(o, "null");
}

/* out_i64_3() - ,"<k>_base":a,"<k>_new":b,"delta_<k>":b-a (saturated). */
static void out_i64_3(struct xs_out *o, const char *k, int64_t a, int64_t b)
{
	OUT_LIT(o, ",\"");
	xs_out_add(o, k, strlen(k));
	xs_out_key_i64(o, "_base\":", a);
	OUT_LIT(o, ",\"");
	xs_out_add(o, k, strlen(k));
	xs_out_key_i64(o, "_new\":", b);
	OUT_LIT(o, ",\"delta_");
	xs_out_add(o, k, strlen(k));
	xs_out_key_i64(o, "\":", xs_sat_add(b, -a));
}

/*
 * diff_write() - the ops of tables @a (base) and @b (new) matched by name,
 * sorted by the absolute change of self time (then of occurrences, then
 * name); null when neither session has the table.
 */
static int diff_write(struct xs_out *o, const struct sdb *a, const struct sdb *b)
{
	size_t *ia = NULL, *ib = NULL, i = 0, j = 0, n = 0, na = 0, nb = 0;
	struct drow *rows = NULL;
	int r = -ENOMEM;

	if (!a->planes && !b->planes) {
		OUT_LIT(o, "null");
		return 0;
	}
	ia = by_name(a);
	ib = by_name(b);
	rows = calloc(a->m.n + b->m.n + 1, sizeof(*rows));
	if (!ia || !ib || !rows)
		goto out;
	while (i < a->m.n || j < b->m.n) {
		int c = i == a->m.n   ? 1
			: j == b->m.n ? -1
				      : strcmp(a->m.ops[ia[i]].name, b->m.ops[ib[j]].name);
		struct drow *w = &rows[n++];

		if (c <= 0) {
			w->name = side_take(a, ia, &i, &w->a);
			na++;
		}
		if (c >= 0) {
			w->name = side_take(b, ib, &j, &w->b);
			nb++;
		}
	}
	qsort(rows, n, sizeof(*rows), drow_cmp);
	OUT_LIT(o, "{\"planes_base\":");
	xs_out_u64(o, a->planes);
	OUT_LIT(o, ",\"planes_new\":");
	xs_out_u64(o, b->planes);
	out_i64_3(o, "self_ps", a->self, b->self);
	OUT_LIT(o, ",\"ops_base\":");
	xs_out_u64(o, na);
	OUT_LIT(o, ",\"ops_new\":");
	xs_out_u64(o, nb);
	OUT_LIT(o, ",\"ops\":[");
	for (size_t k = 0; k < n; k++) {
		const struct drow *w = &rows[k];

		OUT_RAW(o, k ? ",\n{\"name\":" : "\n{\"name\":");
		xs_out_cstr(o, w->name);
		OUT_LIT(o, ",\"category\":");
		xs_out_cstr(o, w->b.has && (w->b.category[0] || !w->a.has) ? w->b.category
									   : w->a.category);
		OUT_RAW(o, w->a.has && w->b.has ? ",\"in\":\"both\""
			   : w->a.has           ? ",\"in\":\"base\""
						: ",\"in\":\"new\"");
		out_i64_3(o, "occurrences", w->a.occ, w->b.occ);
		out_i64_3(o, "self_ps", w->a.self, w->b.self);
		out_share3(o, w->a.self, a->self, w->b.self, b->self);
		OUT_LIT(o, "}");
		if (xs_out_flush(o, false) < 0)
			break;
	}
	OUT_LIT(o, "]}");
	r = o->r;
out:
	free(ia);
	free(ib);
	free(rows);
	return r;
}

/* ---- compare: steps ------------------------------------------------------- */

/* A session's step time: every host's steps together (averages weighted by steps). */
struct sstep {
	uint64_t hosts, n;
	double avg, bd[STATS_BD_N];
	int64_t min, max;
};

static void sstep_of(const struct sess *s, struct sstep *t)
{
	memset(t, 0, sizeof(*t));
	for (size_t i = 0; i < s->in->n; i++) {
		const struct stats_step_summary *h = &s->steps[i];

		if (!h->has || s->errors[i])
			continue;
		t->min = !t->hosts || h->min < t->min ? h->min : t->min;
		t->max = !t->hosts || h->max > t->max ? h->max : t->max;
		t->hosts++;
		t->n += h->n;
		t->avg += h->avg * (double)h->n;
		for (int k = 0; k < STATS_BD_N; k++)
			t->bd[k] += h->bd[k] * (double)h->n;
	}
	if (!t->n)
		return;
	t->avg /= (double)t->n;
	for (int k = 0; k < STATS_BD_N; k++)
		t->bd[k] /= (double)t->n;
}

/* out_avg3() - "<k>_base", "<k>_new", "delta_<k>" of two averages (null without steps). */
static void out_avg3(struct xs_out *o, const char *k, bool ha, double a, bool hb, double b)
{
	OUT_LIT(o, ",\"");
	xs_out_add(o, k, strlen(k));
	xs_out_opt_double(o, "_base\":", ha, a);
	OUT_LIT(o, ",\"");
	xs_out_add(o, k, strlen(k));
	xs_out_opt_double(o, "_new\":", hb, b);
	OUT_LIT(o, ",\"delta_");
	xs_out_add(o, k, strlen(k));
	xs_out_opt_double(o, "\":", ha && hb, b - a);
}

/* out_u64_2() - @sep, then "<k>_base":a,"<k>_new":b. */
static void out_u64_2(struct xs_out *o, const char *sep, const char *k, uint64_t a, uint64_t b)
{
	xs_out_add(o, sep, strlen(sep));
	OUT_LIT(o, "\"");
	xs_out_add(o, k, strlen(k));
	OUT_LIT(o, "_base\":");
	xs_out_u64(o, a);
	OUT_LIT(o, ",\"");
	xs_out_add(o, k, strlen(k));
	OUT_LIT(o, "_new\":");
	xs_out_u64(o, b);
}

static void out_step_time(struct xs_out *o, const struct sstep *a, const struct sstep *b)
{
	bool ha = a->n > 0, hb = b->n > 0;

	out_u64_2(o, "{", "hosts", a->hosts, b->hosts);
	out_u64_2(o, ",", "steps", a->n, b->n);
	out_avg3(o, "avg_ps", ha, a->avg, hb, b->avg);
	xs_out_opt_double(o, ",\"ratio\":", ha && hb && a->avg > 0, b->avg / a->avg);
	out_avg3(o, "min_ps", ha, (double)a->min, hb, (double)b->min);
	out_avg3(o, "max_ps", ha, (double)a->max, hb, (double)b->max);
	OUT_LIT(o, ",\"breakdown_avg\":{");
	for (int k = 0; k < STATS_BD_N; k++) {
		OUT_RAW(o, k ? ",\"" : "\"");
		xs_out_add(o, stats_bd_keys[k], strlen(stats_bd_keys[k]));
		OUT_LIT(o, "\":{");
		xs_out_opt_double(o, "\"base\":", ha, a->bd[k]);
		xs_out_opt_double(o, ",\"new\":", hb, b->bd[k]);
		xs_out_opt_double(o, ",\"delta\":", ha && hb, b->bd[k] - a->bd[k]);
		OUT_LIT(o, "}");
	}
	OUT_LIT(o, "}}");
}

static int host_cmp(const void *a, const void *b, void *arg)
{
	const char *const *h = arg;
	const char *x = h[*(const size_t *)a] ? h[*(const size_t *)a] : "";
	const char *y = h[*(const size_t *)b] ? h[*(const size_t *)b] : "";

	return strcmp(x, y);
}

/* hosts_sorted() - indexes of @in's hosts by name; caller frees (NULL: no memory). */
static size_t *hosts_sorted(const struct xprofs_session_in *in)
{
	size_t *idx = malloc((in->n + 1) * sizeof(*idx));

	if (!idx)
		return NULL;
	for (size_t i = 0; i < in->n; i++)
		idx[i] = i;
	qsort_r(idx, in->n, sizeof(*idx), host_cmp, (void *)in->hosts);
	return idx;
}

static const char *host_name(const struct sess *s, size_t i)
{
	return s->in->hosts[i] ? s->in->hosts[i] : "";
}

/* One host of one side (NULL: absent, or without steps). */
static const struct stats_step_summary *host_steps(const struct sess *s, size_t i)
{
	return s->steps[i].has && !s->errors[i] ? &s->steps[i] : NULL;
}

/* A session's straggler (straggler.c), for its hosts' straggler_ratio. */
static int sess_straggler(const struct sess *s, struct stats_straggler *st)
{
	const struct stats_step_summary **h = calloc(s->in->n + 1, sizeof(*h));
	int r;

	if (!h)
		return -ENOMEM;
	for (size_t i = 0; i < s->in->n; i++)
		h[i] = host_steps(s, i);
	r = stats_straggler_get(h, s->in->n, st);
	free(h);
	return r;
}

/*
 * out_host_row() - one host of the per-host comparison (@a / @b: NULL when absent
 * there; @sa / @sb: the sessions' stragglers).
 */
static void out_host_row(struct xs_out *o, const char *name, const char *in,
			 const struct stats_step_summary *a, const struct stats_step_summary *b,
			 const struct stats_straggler *sa, const struct stats_straggler *sb)
{
	double ra = 0, rb = 0;
	bool ha = stats_straggler_ratio(sa, a, &ra), hb = stats_straggler_ratio(sb, b, &rb);

	OUT_LIT(o, "{\"host\":");
	xs_out_cstr(o, name);
	OUT_LIT(o, ",\"in\":");
	xs_out_cstr(o, in);
	out_u64_2(o, ",", "steps", a ? a->n : 0, b ? b->n : 0);
	out_avg3(o, "avg_ps", a, a ? a->avg : 0, b, b ? b->avg : 0);
	xs_out_opt_double(o, ",\"ratio\":", a && b && a->avg > 0, b && a ? b->avg / a->avg : 0);
	xs_out_opt_double(o, ",\"straggler_ratio_base\":", ha, ra);
	xs_out_opt_double(o, ",\"straggler_ratio_new\":", hb, rb);
	OUT_LIT(o, "}");
}

/* out_hosts_diff() - the hosts of both sessions by name, each with its step time change. */
static int out_hosts_diff(struct xs_out *o, const struct sess *a, const struct sess *b)
{
	size_t *ia = hosts_sorted(a->in), *ib = hosts_sorted(b->in), i = 0, j = 0, k = 0;
	struct stats_straggler sa, sb;

	if (!ia || !ib || sess_straggler(a, &sa) < 0 || sess_straggler(b, &sb) < 0) {
		free(ia);
		free(ib);
		return -ENOMEM;
	}
	OUT_LIT(o, "[");
	while (i < a->in->n || j < b->in->n) {
		int c = i == a->in->n   ? 1
			: j == b->in->n ? -1
					: strcmp(host_name(a, ia[i]), host_name(b, ib[j]));

		OUT_RAW(o, k ? ",\n" : "\n");
		k++;
		if (c == 0)
			out_host_row(o, host_name(a, ia[i]), "both", host_steps(a, ia[i]),
				     host_steps(b, ib[j]), &sa, &sb);
		else if (c < 0)
			out_host_row(o, host_name(a, ia[i]), "base", host_steps(a, ia[i]), NULL,
				     &sa, &sb);
		else
			out_host_row(o, host_name(b, ib[j]), "new", NULL, host_steps(b, ib[j]), &sa,
				     &sb);
		i += c <= 0;
		j += c >= 0;
	}
	OUT_LIT(o, "]");
	free(ia);
	free(ib);
	return 0;
}

int xprofs_decode_compare(enum xprofs_view v, const struct xprofs_session_in *base,
			  const struct xprofs_session_in *cur, const struct xprofs_sink *sink)
{
	bool ops = v == XPROFS_VIEW_OPS;
	struct sess a, b;
	struct sstep sa, sb;
	struct xs_out o;
	int r;

	if (v == XPROFS_VIEW_OP_PROFILE)
		return stats_compare_op_profile(base, cur, sink); /* view-session-op.c */
	if (v == XPROFS_VIEW_SUMMARY && sink && sink->write && valid(base) && valid(cur))
		return stats_compare_summary(base, cur, sink); /* session-memory.c */
	if ((v != XPROFS_VIEW_OPS && v != XPROFS_VIEW_STEPS) || !sink || !sink->write ||
	    !valid(base) || !valid(cur))
		return -EINVAL;
	xs_out_init(&o, sink);
	memset(&b, 0, sizeof(b));
	if ((r = sess_load(&a, base, ops, !ops)) < 0 || (r = sess_load(&b, cur, ops, !ops)) < 0)
		goto out;
	OUT_LIT(&o, "{\"base\":{");
	out_session(&o, &a);
	OUT_LIT(&o, "},\n\"new\":{");
	out_session(&o, &b);
	OUT_LIT(&o, "}");
	if (ops) {
		OUT_LIT(&o, ",\n\"device\":");
		if ((r = diff_write(&o, &a.dev, &b.dev)) < 0)
			goto out;
		OUT_LIT(&o, ",\n\"host\":");
		if ((r = diff_write(&o, &a.host, &b.host)) < 0)
			goto out;
	} else {
		sstep_of(&a, &sa);
		sstep_of(&b, &sb);
		OUT_LIT(&o, ",\n\"step_time\":");
		out_step_time(&o, &sa, &sb);
		OUT_LIT(&o, ",\n\"hosts\":");
		if ((r = out_hosts_diff(&o, &a, &b)) < 0)
			goto out;
	}
	r = out_end(&o);
out:
	sess_free(&a);
	sess_free(&b);
	xs_out_deinit(&o);
	return r;
}
