/*
 * view-session-op.c - the session forms of op_profile.json and
 * framework_op_stats.json (runs/<run>/<session>/...), and
 * compare/<other>/op_profile.json (docs/stats.md "Session op profile",
 * "Compare").
 *
 * Design: each host is analysed alone (its own HLO) and folded into the
 * session's op stats as XProf's CombineAllOpStats() folds each host's
 * OpStats (stats_db_session() of opdb.c, STATS_DB_OPS: device and host dbs
 * by (program, name), total times summed, CombinePerfEnv()); a host that
 * fails is left out with its reason. Compare matches the two sessions' op profiles
 * by category and op name (program ids are numbered per compilation, so they
 * differ between runs): the by_category tree without IDLE, each op's
 * programs added up. Memory: O(distinct ops) per session plus one host's op
 * stats; never O(events).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stats-internal.h"

#define CMP_OPS_MAX 100 /* ops listed per category of compare/op_profile.json */

/* One session's op stats and why hosts were left out. */
struct ssn {
	const struct xprofs_session_in *in;
	struct stats_opstats st;
	char **why; /* per host, owned: NULL when it was folded in */
};

static void ssn_free(struct ssn *s)
{
	stats_db_errors_free(s->in, s->why);
	stats_opstats_free(&s->st);
}

/* ssn_load() - every host of @in folded into @s (free with ssn_free(), also on failure). */
static int ssn_load(struct ssn *s, const struct xprofs_session_in *in)
{
	memset(s, 0, sizeof(*s));
	s->in = in;
	stats_opstats_init(&s->st, STATS_DB_OPS);
	return stats_db_session(in, &s->st, &s->why);
}

static void hosts_write(struct xs_out *o, const struct ssn *s)
{
	stats_session_hosts_write(o, s->in, s->why);
}

static bool session_ok(const struct xprofs_session_in *s)
{
	return s && (!s->n || (s->hosts && s->xs));
}

int stats_session_opstats(enum xprofs_view v, const struct xprofs_session_in *in,
			  const struct xprofs_sink *sink)
{
	struct xs_out o;
	struct ssn s;
	int r;

	if ((v != XPROFS_VIEW_OP_PROFILE && v != XPROFS_VIEW_TF_STATS) || !sink || !sink->write ||
	    !session_ok(in))
		return -EINVAL;
	xs_out_init(&o, sink);
	if ((r = ssn_load(&s, in)) == 0) {
		stats_db_session_head(&o, in, s.why, false);
		r = v == XPROFS_VIEW_OP_PROFILE ? stats_op_profile_write(&o, &s.st)
						: stats_tf_stats_write(&o, &s.st);
		OUT_LIT(&o, "}\n");
		if (r == 0)
			r = o.r ? o.r : xs_out_flush(&o, true);
	}
	ssn_free(&s);
	xs_out_deinit(&o);
	return r;
}

/* ---- compare/<other>/op_profile.json -------------------------------------- */

/* One (category, op name) of one session: its leaf ops' time, occurrences and FLOPs. */
struct cent {
	const char *cat, *name; /* borrowed from a db row */
	int64_t time, occ;
	double flops;
};

/* A row of the diff: the same (category, name) in the base (a) and the new session (b). */
struct crow {
	const char *cat, *name;
	struct cent a, b;
	size_t grp; /* a category's: the index of its first row */
};

static int cent_cmp(const void *x, const void *y)
{
	const struct cent *a = x, *b = y;
	int c = strcmp(a->cat, b->cat);

	return c ? c : strcmp(a->name, b->name);
}

/*
 * leaves() - the op profile's leaf ops of @d (by_category without IDLE: no "region..."
 * ops, none with children time) by (category, name), their programs added up
 * (CombineOpMetrics()); caller frees *out.
 */
static int leaves(const struct stats_opdb *d, struct cent **out, size_t *n)
{
	struct cent *e = calloc(d->n + 1, sizeof(*e));
	size_t k = 0, w = 0;

	if (!e)
		return -ENOMEM;
	for (size_t i = 0; i < d->n; i++) {
		const struct stats_dbop *r = &d->r[i];

		if (r->idle || !strncmp(r->op.name, "region", 6) || r->op.total != r->op.self)
			continue;
		e[k++] = (struct cent){r->op.category, r->op.name, r->op.total, r->op.occurrences,
				       r->op.flops};
	}
	qsort(e, k, sizeof(*e), cent_cmp);
	for (size_t i = 0; i < k; i++) {
		if (w && !cent_cmp(&e[w - 1], &e[i])) {
			e[w - 1].time = xs_sat_add(e[w - 1].time, e[i].time);
			e[w - 1].occ = xs_sat_add(e[w - 1].occ, e[i].occ);
			e[w - 1].flops += e[i].flops;
		} else {
			e[w++] = e[i];
		}
	}
	*out = e;
	*n = w;
	return 0;
}

static int64_t delta_abs(const struct cent *a, const struct cent *b)
{
	int64_t d = xs_sat_add(b->time, -a->time);

	return d < 0 ? -d : d;
}

/* By the absolute change of time, then category and name. */
static int crow_cmp(const void *x, const void *y)
{
	const struct crow *a = x, *b = y;
	int64_t da = delta_abs(&a->a, &a->b), db = delta_abs(&b->a, &b->b);
	int c;

	if (da != db)
		return da > db ? -1 : 1;
	if ((c = strcmp(a->cat, b->cat)))
		return c;
	return a->name && b->name ? strcmp(a->name, b->name) : 0;
}

/* pair_write() - ,"<k>_base":..,"<k>_new":..,"delta_<k>":.. for times; shares of the totals. */
static void pair_write(struct xs_out *o, const struct crow *w, int64_t ta, int64_t tb)
{
	xs_out_key_i64(o, ",\"time_ps_base\":", w->a.time);
	xs_out_key_i64(o, ",\"time_ps_new\":", w->b.time);
	xs_out_key_i64(o, ",\"delta_time_ps\":", xs_sat_add(w->b.time, -w->a.time));
	xs_out_key_i64(o, ",\"occurrences_base\":", w->a.occ);
	xs_out_key_i64(o, ",\"occurrences_new\":", w->b.occ);
	OUT_LIT(o, ",\"share_base\":");
	xs_out_double(o, stats_safe_div((double)w->a.time, (double)ta));
	OUT_LIT(o, ",\"share_new\":");
	xs_out_double(o, stats_safe_div((double)w->b.time, (double)tb));
	OUT_LIT(o, ",\"flops_per_s_base\":");
	xs_out_double(o, stats_safe_div(w->a.flops, (double)w->a.time) * 1e12);
	OUT_LIT(o, ",\"flops_per_s_new\":");
	xs_out_double(o, stats_safe_div(w->b.flops, (double)w->b.time) * 1e12);
}

/*
 * diff_rows() - the (category, name) entries of both sides matched (merge of two
 * sorted lists) into *out (caller frees), *n of them.
 */
static int diff_rows(const struct cent *a, size_t na, const struct cent *b, size_t nb,
		     struct crow **out, size_t *n)
{
	struct crow *rows = calloc(na + nb + 1, sizeof(*rows));
	size_t i = 0, j = 0, k = 0;

	if (!rows)
		return -ENOMEM;
	while (i < na || j < nb) {
		int c = i == na ? 1 : j == nb ? -1 : cent_cmp(&a[i], &b[j]);
		struct crow *w = &rows[k++];

		if (c <= 0)
			w->a = a[i];
		if (c >= 0)
			w->b = b[j];
		w->cat = c <= 0 ? a[i].cat : b[j].cat;
		w->name = c <= 0 ? a[i].name : b[j].name;
		i += c <= 0;
		j += c >= 0;
	}
	*out = rows;
	*n = k;
	return 0;
}

/* ops_write() - ,"ops":[...]} of a category: its first CMP_OPS_MAX rows of @rows[0..n). */
static void ops_write(struct xs_out *o, const struct crow *rows, size_t n, int64_t ta, int64_t tb)
{
	OUT_LIT(o, ",\"ops\":[");
	for (size_t i = 0; i < n && i < CMP_OPS_MAX; i++) {
		OUT_RAW(o, i ? ",{\"name\":" : "{\"name\":");
		xs_out_cstr(o, rows[i].name);
		pair_write(o, &rows[i], ta, tb);
		OUT_LIT(o, "}");
	}
	OUT_LIT(o, "]}");
}

/* categories_write() - the diff rows @rows[0..n) (sorted by category) grouped and written. */
static int categories_write(struct xs_out *o, struct crow *rows, size_t n, int64_t ta, int64_t tb)
{
	struct crow *cats = calloc(n + 1, sizeof(*cats));
	size_t *first = calloc(n + 2, sizeof(*first)), nc = 0;
	int r = 0;

	if (!cats || !first) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (!nc || strcmp(cats[nc - 1].cat, rows[i].cat)) {
			first[nc] = i;
			cats[nc] = (struct crow){.cat = rows[i].cat, .grp = nc};
			nc++;
		}
		cats[nc - 1].a.time = xs_sat_add(cats[nc - 1].a.time, rows[i].a.time);
		cats[nc - 1].a.occ = xs_sat_add(cats[nc - 1].a.occ, rows[i].a.occ);
		cats[nc - 1].a.flops += rows[i].a.flops;
		cats[nc - 1].b.time = xs_sat_add(cats[nc - 1].b.time, rows[i].b.time);
		cats[nc - 1].b.occ = xs_sat_add(cats[nc - 1].b.occ, rows[i].b.occ);
		cats[nc - 1].b.flops += rows[i].b.flops;
	}
	first[nc] = n;
	qsort(cats, nc, sizeof(*cats), crow_cmp);
	for (size_t c = 0; c < nc; c++) {
		size_t lo = first[cats[c].grp], hi = first[cats[c].grp + 1];

		qsort(rows + lo, hi - lo, sizeof(*rows), crow_cmp);
		OUT_RAW(o, c ? ",\n{\"category\":" : "\n{\"category\":");
		xs_out_cstr(o, cats[c].cat);
		OUT_LIT(o, ",\"num_ops\":");
		xs_out_u64(o, hi - lo);
		pair_write(o, &cats[c], ta, tb);
		ops_write(o, rows + lo, hi - lo, ta, tb);
		if ((r = xs_out_flush(o, false)) < 0)
			break;
	}
out:
	free(cats);
	free(first);
	return r;
}

int stats_compare_op_profile(const struct xprofs_session_in *base,
			     const struct xprofs_session_in *cur, const struct xprofs_sink *sink)
{
	struct ssn a, b;
	struct cent *ea = NULL, *eb = NULL;
	struct crow *rows = NULL;
	size_t na = 0, nb = 0, n = 0;
	int64_t ta, tb;
	struct xs_out o;
	int r;

	if (!sink || !sink->write || !session_ok(base) || !session_ok(cur))
		return -EINVAL;
	xs_out_init(&o, sink);
	memset(&b, 0, sizeof(b));
	if ((r = ssn_load(&a, base)) < 0 || (r = ssn_load(&b, cur)) < 0 ||
	    (r = leaves(&a.st.dev, &ea, &na)) < 0 || (r = leaves(&b.st.dev, &eb, &nb)) < 0 ||
	    (r = diff_rows(ea, na, eb, nb, &rows, &n)) < 0)
		goto out;
	ta = a.st.dev.self;
	tb = b.st.dev.self;
	OUT_LIT(&o, "{\"base\":{");
	hosts_write(&o, &a);
	OUT_LIT(&o, "},\n\"new\":{");
	hosts_write(&o, &b);
	OUT_LIT(&o, "}");
	xs_out_key_i64(&o, ",\n\"total_op_time_ps_base\":", ta);
	xs_out_key_i64(&o, ",\"total_op_time_ps_new\":", tb);
	xs_out_key_i64(&o, ",\"delta_total_op_time_ps\":", xs_sat_add(tb, -ta));
	OUT_LIT(&o, ",\"categories\":[");
	if ((r = categories_write(&o, rows, n, ta, tb)) < 0)
		goto out;
	OUT_LIT(&o, "]}\n");
	r = o.r ? o.r : xs_out_flush(&o, true);
out:
	free(ea);
	free(eb);
	free(rows);
	ssn_free(&a);
	ssn_free(&b);
	xs_out_deinit(&o);
	return r;
}
