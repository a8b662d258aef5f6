/*
 * view-summary.c - summary.json of one host (from the index, plus the
 * plane-level stats) and the session-level summary over several hosts.
 *
 * Design: no event bodies are read: counts and first/last times come from
 * the index built by xprofs_xspace_open(). Limits: a profile opened with
 * tracks_only has no event statistics, so its summary is refused
 * (-EOPNOTSUPP, in render()).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stats-internal.h"

static void out_strs(struct xs_out *o, const char *key, const struct xs_strs *s)
{
	xs_out_str(o, key, strlen(key));
	OUT_LIT(o, ":[");
	for (size_t i = 0; i < s->n; i++) {
		if (i)
			OUT_LIT(o, ",");
		xs_out_str(o, s->s[i], s->len[i]);
	}
	OUT_LIT(o, "]");
}

/* out_span() - ,"first_ps":N,"last_ps":N; both null when there are no events (no time). */
static void out_span(struct xs_out *o, uint64_t events, int64_t first_ps, int64_t last_ps)
{
	if (!events) {
		OUT_LIT(o, ",\"first_ps\":null,\"last_ps\":null");
		return;
	}
	xs_out_key_i64(o, ",\"first_ps\":", first_ps);
	xs_out_key_i64(o, ",\"last_ps\":", last_ps);
}

/* out_counts() - ,"events":N,"first_ps":N,"last_ps":N (null times when N is 0) */
static void out_counts(struct xs_out *o, uint64_t events, int64_t first_ps, int64_t last_ps)
{
	OUT_LIT(o, ",\"events\":");
	xs_out_u64(o, events);
	out_span(o, events, first_ps, last_ps);
}

/* out_host_counts() - ,"planes":N,"lines":N and out_counts() of @t (session summary). */
static void out_host_counts(struct xs_out *o, const struct xprofs_xspace_totals *t)
{
	OUT_LIT(o, ",\"planes\":");
	xs_out_u64(o, t->planes);
	OUT_LIT(o, ",\"lines\":");
	xs_out_u64(o, t->lines);
	out_counts(o, t->events, t->first_ps, t->last_ps);
}

/* out_walltime() - @lit then @ns, or null for 0 (absent). */
static void out_walltime(struct xs_out *o, const char *lit, int64_t ns)
{
	xs_out_add(o, lit, strlen(lit));
	if (ns)
		xs_out_i64(o, ns);
	else
		OUT_LIT(o, "null");
}

static int plane_stats(struct xs_rctx *rc, size_t pi, struct xs_out *o)
{
	struct xs_render_arg ra = {o, true};
	int r;

	OUT_LIT(o, "{");
	if ((r = xs_walk_plane_stats(rc, pi, xs_render_stat, &ra)) < 0)
		return r;
	OUT_LIT(o, "}");
	xs_md_gc(rc);
	return 0;
}

int stats_view_summary(struct xs_rctx *rc, struct xs_out *o)
{
	struct xprofs_xspace *x = rc->x;
	const struct xprofs_xspace_totals *t = &x->totals;
	int r;

	OUT_LIT(o, "{");
	out_strs(o, "hostnames", &x->hostnames);
	OUT_LIT(o, ",");
	out_strs(o, "errors", &x->errors);
	OUT_LIT(o, ",");
	out_strs(o, "warnings", &x->warnings);
	out_walltime(o, ",\"profile_start_walltime_ns\":", t->start_walltime_ns);
	out_walltime(o, ",\"profile_stop_walltime_ns\":", t->stop_walltime_ns);
	out_span(o, t->events, t->first_ps, t->last_ps);
	/* saturated: first_ps may be INT64_MIN in a hostile file (no -INT64_MIN) */
	if (!t->events)
		OUT_LIT(o, ",\"span_ps\":null");
	else
		xs_out_key_i64(o, ",\"span_ps\":",
			       t->first_ps == INT64_MIN ? INT64_MAX
							: xs_sat_add(t->last_ps, -t->first_ps));
	OUT_LIT(o, ",\"events\":");
	xs_out_u64(o, t->events);
	OUT_LIT(o, ",\"planes\":[");
	for (size_t pi = 0; pi < x->n_planes; pi++) {
		const struct xs_plane *p = &x->planes[pi];

		if (pi)
			OUT_LIT(o, ",");
		xs_out_key_i64(o, "{\"id\":", p->id);
		OUT_LIT(o, ",\"name\":");
		xs_out_str(o, p->name, p->name_len);
		OUT_LIT(o, ",\"file\":");
		xs_out_cstr(o, p->file);
		out_counts(o, p->events, p->first_ps, p->last_ps);
		OUT_LIT(o, ",\"event_metadata\":");
		xs_out_u64(o, p->ev.n);
		OUT_LIT(o, ",\"stat_metadata\":");
		xs_out_u64(o, p->st.n);
		OUT_LIT(o, ",\"stats\":");
		if ((r = plane_stats(rc, pi, o)) < 0)
			return r;
		OUT_LIT(o, ",\"lines\":[");
		for (size_t j = 0; j < p->n_lines; j++) {
			const struct xs_line *l = &x->lines[p->first_line + j];

			if (j)
				OUT_LIT(o, ",");
			xs_out_key_i64(o, "{\"id\":", l->id);
			xs_out_key_i64(o,
				       ",\"display_id\":", l->display_id ? l->display_id : l->id);
			OUT_LIT(o, ",\"name\":");
			xs_out_str(o, l->name, l->name_len);
			OUT_LIT(o, ",\"display_name\":");
			xs_out_line_name(o, l);
			OUT_LIT(o, ",\"file\":");
			xs_out_cstr(o, l->file);
			xs_out_key_i64(o, ",\"timestamp_ns\":", l->timestamp_ns);
			xs_out_key_i64(o, ",\"duration_ps\":", l->duration_ps);
			out_counts(o, l->events, l->first_ps, l->last_ps);
			OUT_LIT(o, "}");
		}
		OUT_LIT(o, "]}");
		if ((r = xs_out_flush(o, false)) < 0)
			return r;
	}
	OUT_LIT(o, "]}\n");
	return 0;
}

/* One host's numbers for the session summary (docs/stats.md "Session summary"). */
struct host_stat {
	struct xprofs_xspace_totals t;
	bool opened; /* @t is known */
	struct stats_step_summary steps;
	int64_t busy, span;
	bool ok;
	struct stats_mem_peaks mem; /* its memory peaks (session-memory.c) */
	bool mem_ok;
};

/* host_stat_fn() - a xs_with_rctx() function: the step summary and device busy share. */
static int host_stat_fn(struct xs_rctx *rc, void *arg)
{
	struct host_stat *h = arg;
	int r;

	/* apart from the steps: a host may have memory events and no steps, or the reverse */
	h->mem_ok = stats_mem_peaks_get(rc, &h->mem) == 0;
	if ((r = stats_steps_busy_sum(rc, &h->steps, &h->busy, &h->span)) < 0)
		return r;
	h->ok = true;
	return 0;
}

static void out_host_stat(struct xs_out *o, const struct host_stat *h,
			  const struct stats_straggler *s)
{
	double ratio = 0;
	bool has_ratio = h->ok && stats_straggler_ratio(s, &h->steps, &ratio);

	if (h->ok && h->steps.has) {
		OUT_LIT(o, ",\"step_avg_ps\":");
		xs_out_double(o, h->steps.avg);
		xs_out_key_i64(o, ",\"step_max_ps\":", h->steps.max);
		OUT_LIT(o, ",\"steps\":");
		xs_out_u64(o, h->steps.n);
	} else {
		OUT_LIT(o, ",\"step_avg_ps\":null,\"step_max_ps\":null,\"steps\":0");
	}
	OUT_LIT(o, ",\"device_busy_share\":");
	if (h->ok && h->span > 0)
		xs_out_double(o, (double)h->busy / (double)h->span);
	else
		OUT_LIT(o, "null");
	xs_out_opt_double(o, ",\"straggler_ratio\":", has_ratio, ratio);
	OUT_LIT(o, ",\"memory\":");
	stats_mem_peaks_write(o, h->mem_ok ? &h->mem : NULL);
}

/*
 * out_straggler() - the host with the highest average step time, the median of the
 * hosts' averages and its ratio (stats_straggler_get(), straggler.c); null unless
 * two hosts have steps and that host is slower than the median (a tie is no straggler).
 */
static void out_straggler(struct xs_out *o, const char *const *hosts, const struct host_stat *hs,
			  const struct stats_straggler *s)
{
	double ratio;

	OUT_LIT(o, ",\"straggler\":");
	if (s->worst == SIZE_MAX || !stats_straggler_ratio(s, &hs[s->worst].steps, &ratio) ||
	    !(ratio > 1)) {
		OUT_LIT(o, "null");
		return;
	}
	OUT_LIT(o, "{\"host\":");
	xs_out_cstr(o, hosts[s->worst] ? hosts[s->worst] : "");
	OUT_LIT(o, ",\"step_avg_ps\":");
	xs_out_double(o, hs[s->worst].steps.avg);
	OUT_LIT(o, ",\"median_step_avg_ps\":");
	xs_out_double(o, s->median);
	OUT_LIT(o, ",\"ratio\":");
	xs_out_double(o, ratio);
	OUT_LIT(o, "}");
}

/* host_steps() - the step summaries of @hs as straggler.c takes them (NULL: no steps). */
static const struct stats_step_summary **host_steps(const struct host_stat *hs, size_t n)
{
	const struct stats_step_summary **h = calloc(n + 1, sizeof(*h));

	for (size_t i = 0; h && i < n; i++)
		h[i] = hs[i].ok && hs[i].steps.has ? &hs[i].steps : NULL;
	return h;
}

/* host_mems() - the memory peaks of @hs as session-memory.c takes them (NULL: unknown). */
static const struct stats_mem_peaks **host_mems(const struct host_stat *hs, size_t n)
{
	const struct stats_mem_peaks **m = calloc(n + 1, sizeof(*m));

	for (size_t i = 0; m && i < n; i++)
		m[i] = hs[i].mem_ok ? &hs[i].mem : NULL;
	return m;
}

/*
 * xprofs_decode_session_summary() - every host is analysed first (its counts, steps,
 * busy time and memory peaks), then the straggler, which each host's row needs, then
 * the JSON.
 */
int xprofs_decode_session_summary(const char *session, const char *const *hosts,
				  struct xprofs_xspace *const *xs, const char *const *host_errors,
				  size_t n, const struct xprofs_sink *sink)
{
	struct xprofs_xspace_totals sum = {0};
	const struct stats_step_summary **steps = NULL;
	const struct stats_mem_peaks **mems = NULL;
	struct stats_straggler strag;
	struct host_stat *hs;
	bool any = false;
	struct xs_out o;
	int r;

	if (!sink || !sink->write || (n && (!hosts || !xs)))
		return -EINVAL;
	if (!(hs = calloc(n + 1, sizeof(*hs))))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (!xs[i] || xprofs_xspace_get_totals(xs[i], &hs[i].t) < 0)
			continue;
		hs[i].opened = true;
		/* a host whose analyses fail still has its counts (its views say why) */
		(void)xs_with_rctx(xs[i], NULL, host_stat_fn, &hs[i]);
	}
	if (!(steps = host_steps(hs, n)) || !(mems = host_mems(hs, n)) ||
	    stats_straggler_get(steps, n, &strag) < 0) {
		r = -ENOMEM;
		goto out;
	}
	xs_out_init(&o, sink);
	OUT_LIT(&o, "{\"session\":");
	xs_out_cstr(&o, session ? session : "");
	OUT_LIT(&o, ",\"hosts\":[");
	for (size_t i = 0; i < n; i++) {
		const struct xprofs_xspace_totals *t = &hs[i].t;

		OUT_RAW(&o, i ? ",\n{\"host\":" : "\n{\"host\":");
		xs_out_cstr(&o, hosts[i] ? hosts[i] : "");
		if (!hs[i].opened) {
			OUT_LIT(&o, ",\"planes\":0,\"lines\":0,\"events\":0,\"first_ps\":null,"
				    "\"last_ps\":null,\"error\":");
			xs_out_cstr(&o,
				    host_errors && host_errors[i] ? host_errors[i] : "cannot open");
			out_host_stat(&o, &hs[i], &strag);
			OUT_LIT(&o, "}");
			continue;
		}
		out_host_counts(&o, t);
		out_host_stat(&o, &hs[i], &strag);
		OUT_LIT(&o, ",\"error\":null}");
		sum.planes += t->planes;
		sum.lines += t->lines;
		sum.events += t->events;
		if (t->events) {
			if (!any || t->first_ps < sum.first_ps)
				sum.first_ps = t->first_ps;
			if (!any || t->last_ps > sum.last_ps)
				sum.last_ps = t->last_ps;
			any = true;
		}
	}
	OUT_LIT(&o, "\n]");
	out_host_counts(&o, &sum);
	out_straggler(&o, hosts, hs, &strag);
	OUT_LIT(&o, ",\"memory_peak\":");
	stats_mem_session_write(&o, hosts, mems, n);
	OUT_LIT(&o, "}\n");
	r = o.r ? o.r : xs_out_flush(&o, true);
	xs_out_deinit(&o);
out:
	for (size_t i = 0; i < n; i++)
		stats_mem_peaks_free(&hs[i].mem);
	free(mems);
	free(steps);
	free(hs);
	return r;
}
