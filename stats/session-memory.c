/*
 * session-memory.c - memory peaks above one host (docs/memory.md "Session
 * level"): each host's peak for the session summary.json (its "memory"
 * and the session's "memory_peak"), and compare/<other>/summary.json, the
 * change of the peaks from one session to another.
 *
 * Design: a host's peaks are its memory_profile.json's
 * profile_summary.peak_stats.peak_bytes_in_use per memory id, from the
 * profile's first pass only (stats_mem_open(): UpdateProfileSummary() over
 * every memory event; no timeline, no records). A host's peak is the
 * largest over its allocators (each allocator is its own memory, a
 * device's HBM or the host's RAM: they are not added up); the session's is
 * the largest over its hosts. Ties go to the first in memory_ids order,
 * then the first host in the session's order. Compare matches hosts by
 * name and allocators by memory id, as the other compare views match
 * hosts.
 *
 * Memory: per host its memory ids' names and peaks (at most MEM_IDS_MAX);
 * one host's profile is walked at a time.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "memory.h"
#include "stats-internal.h"

int stats_mem_peaks_get(struct xs_rctx *rc, struct stats_mem_peaks *out)
{
	struct mprof *mp;
	int r;

	memset(out, 0, sizeof(*out));
	out->max = SIZE_MAX;
	if ((r = stats_mem_open(rc, &mp)) < 0)
		return r;
	if (mp->nids && !(out->p = calloc(mp->nids, sizeof(*out->p)))) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < mp->nids; i++) {
		const struct mid *m = &mp->ids[mp->ord[i]];
		struct stats_mem_peak *p = &out->p[i];

		if (!(p->id = malloc(m->len + 1))) {
			r = -ENOMEM;
			goto out;
		}
		memcpy(p->id, m->name, m->len);
		p->id[m->len] = '\0';
		p->id_len = m->len;
		p->bytes = m->peak.peak;
		p->time_ps = m->peak_time;
		out->n++;
		if (out->max == SIZE_MAX || p->bytes > out->p[out->max].bytes)
			out->max = i;
	}
out:
	stats_mem_close(mp);
	if (r < 0)
		stats_mem_peaks_free(out);
	return r;
}

void stats_mem_peaks_free(struct stats_mem_peaks *p)
{
	for (size_t i = 0; p->p && i < p->n; i++)
		free(p->p[i].id);
	free(p->p);
	memset(p, 0, sizeof(*p));
	p->max = SIZE_MAX;
}

void stats_mem_peaks_write(struct xs_out *o, const struct stats_mem_peaks *p)
{
	const struct stats_mem_peak *top;

	if (!p || p->max == SIZE_MAX) {
		OUT_LIT(o, "null");
		return;
	}
	top = &p->p[p->max];
	OUT_LIT(o, "{\"memory_id\":");
	xs_out_str(o, top->id, top->id_len);
	xs_out_key_i64(o, ",\"peak_bytes\":", top->bytes);
	xs_out_key_i64(o, ",\"peak_time_ps\":", top->time_ps);
	OUT_LIT(o, ",\"peak_bytes_per_memory_id\":{");
	for (size_t i = 0; i < p->n; i++) {
		OUT_RAW(o, i ? "," : "");
		xs_out_str(o, p->p[i].id, p->p[i].id_len);
		xs_out_key_i64(o, ":", p->p[i].bytes);
	}
	OUT_LIT(o, "}}");
}

size_t stats_mem_session_max(const struct stats_mem_peaks *const *hosts, size_t n)
{
	size_t best = SIZE_MAX;

	for (size_t i = 0; i < n; i++)
		if (hosts[i] && hosts[i]->max != SIZE_MAX &&
		    (best == SIZE_MAX ||
		     hosts[i]->p[hosts[i]->max].bytes > hosts[best]->p[hosts[best]->max].bytes))
			best = i;
	return best;
}

void stats_mem_session_write(struct xs_out *o, const char *const *names,
			     const struct stats_mem_peaks *const *hosts, size_t n)
{
	size_t b = stats_mem_session_max(hosts, n);
	const struct stats_mem_peak *p;

	if (b == SIZE_MAX) {
		OUT_LIT(o, "null");
		return;
	}
	p = &hosts[b]->p[hosts[b]->max];
	OUT_LIT(o, "{\"host\":");
	xs_out_cstr(o, names[b] ? names[b] : "");
	OUT_LIT(o, ",\"memory_id\":");
	xs_out_str(o, p->id, p->id_len);
	xs_out_key_i64(o, ",\"peak_bytes\":", p->bytes);
	xs_out_key_i64(o, ",\"peak_time_ps\":", p->time_ps);
	OUT_LIT(o, "}");
}

/* ---- compare/<other>/summary.json ------------------------------------------ */

/* One session's peaks: per host (in its order), and why a host has none. */
struct msess {
	const struct xprofs_session_in *in;
	struct stats_mem_peaks *h;        /* owned, in->n */
	const struct stats_mem_peaks **p; /* owned: h[i] when known, else NULL */
	char **why;                       /* owned, per host: why it was left out */
	size_t *byname;                   /* owned: host indexes by name */
};

static int peaks_fn(struct xs_rctx *rc, void *arg)
{
	return stats_mem_peaks_get(rc, arg);
}

static int host_cmp(const void *a, const void *b, void *arg)
{
	const char *const *h = arg;
	const char *x = h[*(const size_t *)a] ? h[*(const size_t *)a] : "";
	const char *y = h[*(const size_t *)b] ? h[*(const size_t *)b] : "";

	return strcmp(x, y);
}

static void msess_free(struct msess *s)
{
	for (size_t i = 0; s->h && s->why && i < s->in->n; i++) {
		stats_mem_peaks_free(&s->h[i]);
		free(s->why[i]);
	}
	free(s->h);
	free(s->p);
	free(s->why);
	free(s->byname);
}

/* msess_load() - every host's peaks; a host that fails is left out with its reason. */
static int msess_load(struct msess *s, const struct xprofs_session_in *in)
{
	size_t n = in->n;

	memset(s, 0, sizeof(*s));
	s->in = in;
	s->h = calloc(n + 1, sizeof(*s->h));
	s->p = calloc(n + 1, sizeof(*s->p));
	s->why = calloc(n + 1, sizeof(*s->why));
	s->byname = malloc((n + 1) * sizeof(*s->byname));
	if (!s->h || !s->p || !s->why || !s->byname)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct xprofs_buf err;
		int r = -ENOENT;
		const char *why;

		s->h[i].max = SIZE_MAX;
		s->byname[i] = i;
		xprofs_buf_init(&err, 1024);
		if (in->xs[i])
			r = xs_with_rctx(in->xs[i], &err, peaks_fn, &s->h[i]);
		why = err.len                                               ? err.data
		      : !in->xs[i] && in->host_errors && in->host_errors[i] ? in->host_errors[i]
		      : !in->xs[i]                                          ? "cannot open"
									    : strerror(-r);
		if (r == 0)
			s->p[i] = &s->h[i];
		else if (r == -ENOMEM || !(s->why[i] = strdup(why)))
			r = -ENOMEM;
		xprofs_buf_deinit(&err);
		if (r == -ENOMEM)
			return r;
	}
	qsort_r(s->byname, n, sizeof(*s->byname), host_cmp, (void *)in->hosts);
	return 0;
}

/* @lit, then @v, or null without @has. */
static void out_opt_i64(struct xs_out *o, const char *lit, bool has, int64_t v)
{
	xs_out_add(o, lit, strlen(lit));
	if (has)
		xs_out_i64(o, v);
	else
		OUT_LIT(o, "null");
}

/* ,"peak_bytes_base":a|null,"peak_bytes_new":b|null,"delta_peak_bytes":b-a|null */
static void out_delta(struct xs_out *o, const struct stats_mem_peak *a,
		      const struct stats_mem_peak *b)
{
	out_opt_i64(o, ",\"peak_bytes_base\":", a != NULL, a ? a->bytes : 0);
	out_opt_i64(o, ",\"peak_bytes_new\":", b != NULL, b ? b->bytes : 0);
	out_opt_i64(o, ",\"delta_peak_bytes\":", a && b,
		    a && b ? xs_sat_add(b->bytes, -a->bytes) : 0);
}

static int id_cmp(const struct stats_mem_peak *a, const struct stats_mem_peak *b)
{
	int c = memcmp(a->id, b->id, a->id_len < b->id_len ? a->id_len : b->id_len);

	return c ? c : a->id_len < b->id_len ? -1 : a->id_len > b->id_len;
}

static const struct stats_mem_peak *top(const struct stats_mem_peaks *p)
{
	return p && p->max != SIZE_MAX ? &p->p[p->max] : NULL;
}

/* One host of the comparison: its peaks (@a, @b: NULL when absent or failed there). */
static void out_host(struct xs_out *o, const char *name, const char *in,
		     const struct stats_mem_peaks *a, const struct stats_mem_peaks *b)
{
	size_t i = 0, j = 0, k = 0, na = a ? a->n : 0, nb = b ? b->n : 0;

	OUT_LIT(o, "{\"host\":");
	xs_out_cstr(o, name);
	OUT_LIT(o, ",\"in\":");
	xs_out_cstr(o, in);
	out_delta(o, top(a), top(b));
	OUT_LIT(o, ",\"memory_ids\":[");
	while (i < na || j < nb) { /* both lists are in memory_ids (byte) order */
		int c = i == na ? 1 : j == nb ? -1 : id_cmp(&a->p[i], &b->p[j]);
		const struct stats_mem_peak *p = c <= 0 ? &a->p[i] : &b->p[j];

		OUT_RAW(o, k ? ",{\"memory_id\":" : "{\"memory_id\":");
		k++;
		xs_out_str(o, p->id, p->id_len);
		out_delta(o, c <= 0 ? &a->p[i] : NULL, c >= 0 ? &b->p[j] : NULL);
		OUT_LIT(o, "}");
		i += c <= 0;
		j += c >= 0;
	}
	OUT_LIT(o, "]}");
}

static const char *hname(const struct msess *s, size_t i)
{
	return s->in->hosts[i] ? s->in->hosts[i] : "";
}

/* The session's highest peak: ,"host_base":..|null,"host_new":..|null and the deltas. */
static void out_session_peak(struct xs_out *o, const struct msess *a, const struct msess *b)
{
	size_t ia = stats_mem_session_max(a->p, a->in->n),
	       ib = stats_mem_session_max(b->p, b->in->n);

	stats_out_opt_str(
		o, ",\n\"memory_peak\":{\"host_base\":", ia == SIZE_MAX ? NULL : hname(a, ia));
	stats_out_opt_str(o, ",\"host_new\":", ib == SIZE_MAX ? NULL : hname(b, ib));
	out_delta(o, ia == SIZE_MAX ? NULL : top(a->p[ia]), ib == SIZE_MAX ? NULL : top(b->p[ib]));
	OUT_LIT(o, "}");
}

int stats_compare_summary(const struct xprofs_session_in *base, const struct xprofs_session_in *cur,
			  const struct xprofs_sink *sink)
{
	struct msess a, b;
	struct xs_out o;
	size_t i = 0, j = 0, k = 0;
	int r;

	memset(&b, 0, sizeof(b));
	b.in = cur;
	xs_out_init(&o, sink);
	if ((r = msess_load(&a, base)) < 0 || (r = msess_load(&b, cur)) < 0)
		goto out;
	OUT_LIT(&o, "{\"base\":{");
	stats_session_hosts_write(&o, base, a.why);
	OUT_LIT(&o, "},\n\"new\":{");
	stats_session_hosts_write(&o, cur, b.why);
	OUT_LIT(&o, "}");
	out_session_peak(&o, &a, &b);
	OUT_LIT(&o, ",\n\"hosts\":[");
	while (i < base->n || j < cur->n) {
		size_t x = i < base->n ? a.byname[i] : 0, y = j < cur->n ? b.byname[j] : 0;
		int c = i == base->n ? 1 : j == cur->n ? -1 : strcmp(hname(&a, x), hname(&b, y));

		OUT_RAW(&o, k ? ",\n" : "\n");
		k++;
		out_host(&o, c <= 0 ? hname(&a, x) : hname(&b, y),
			 c == 0  ? "both"
			 : c < 0 ? "base"
				 : "new",
			 c <= 0 ? a.p[x] : NULL, c >= 0 ? b.p[y] : NULL);
		i += c <= 0;
		j += c >= 0;
		if ((r = xs_out_flush(&o, false)) < 0)
			goto out;
	}
	OUT_LIT(&o, "\n]}\n");
	r = o.r ? o.r : xs_out_flush(&o, true);
out:
	msess_free(&a);
	msess_free(&b);
	xs_out_deinit(&o);
	return r;
}
