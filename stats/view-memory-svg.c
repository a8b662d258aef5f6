/*
 * view-memory-svg.c - memory.svg: a picture of where a host's memory went,
 * from memory_profile.json's data (docs/memory.md "memory.svg"): per
 * allocator (memory id), its memory timeline (stack + heap of the sampled
 * timeline snapshots, as a step line), the peak marked (a red dot and
 * dashed line at profile_summary's peak_stats_time_ps and
 * peak_bytes_in_use), and the largest allocations live at the peak as
 * bars (the first rows of active_allocations, special rows included).
 *
 * Design: the memory profile's own steps (stats_mem_open(),
 * stats_mem_details(), stats_mem_rows() in memory-profile.c) give the
 * numbers, so the picture and the JSON cannot disagree; the drawing
 * primitives are svg.c's, as overview.svg's. Each allocator is a
 * <g class="allocator"> whose data-* attributes repeat the memory id and
 * its peak (bytes, time) for tools and tests. Times on the x axis are the
 * snapshots' time_offset_ps in ms; the x range runs from the first to the
 * last sampled snapshot (the peak's time included).
 *
 * Limits: at most IDS_SHOWN allocators, those with the highest peaks
 * (ties: memory_ids order), the heading says how many were left out; at
 * most TOP_ALLOCS bars each. Memory: what memory_profile.json's render
 * holds, for the allocators shown only.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memory.h"
#include "svg.h"

#define IDS_SHOWN 4
#define TOP_ALLOCS 10
#define W 1000
#define TOP_Y 60    /* the first panel */
#define PANEL_H 520 /* one allocator */
#define CHART_DY 50 /* the chart's top below the panel's */
#define CHART_H 180
#define ROWS_DY 290 /* the first bar below the panel's top */
#define ROW_H 22
#define PEAK "#d62728"

/* @v bytes as a label: "N B", else KiB/MiB/GiB/TiB with two decimals. */
static void bytes_str(int64_t v, char *buf, size_t n)
{
	static const char *const unit[] = {"KiB", "MiB", "GiB", "TiB"};
	double a = (double)v;
	int k = -1;

	while (k < 3 && fabs(a) >= 1024)
		a /= 1024, k++;
	if (k < 0)
		snprintf(buf, n, "%" PRId64 " B", v);
	else
		snprintf(buf, n, "%.2f %s", a, unit[k]);
}

/* The y axis' unit for values up to @max bytes: its size and name. */
static double axis_unit(double max, const char **name)
{
	static const char *const names[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
	double u = 1;
	int k = 0;

	while (k < 4 && max >= u * 1024)
		u *= 1024, k++;
	*name = names[k];
	return u;
}

/* Stack + heap of a snapshot, wrapping as XProf's int64 sum. */
static int64_t in_use(const struct msnap *s)
{
	return stats_mem_wadd(s->a.stack, s->a.heap);
}

struct frame {
	struct stats_svg_chart c;
	int64_t t0, t1; /* x range, ps */
	double ymax;    /* bytes at the chart's top */
};

static double fx(const struct frame *f, int64_t t)
{
	if (f->t1 <= f->t0)
		return f->c.x;
	return f->c.x + ((double)t - (double)f->t0) / ((double)f->t1 - (double)f->t0) * f->c.w;
}

static double fy(const struct frame *f, int64_t v)
{
	double d = (double)v;

	if (!(f->ymax > 0) || d <= 0)
		return f->c.y + f->c.h;
	if (d > f->ymax)
		d = f->ymax;
	return f->c.y + f->c.h - d / f->ymax * f->c.h;
}

/* The time axis under the chart: round ticks in ms between t0 and t1. */
static void out_time_axis(struct xs_out *o, const struct frame *f)
{
	double a = (double)f->t0 / 1e9, b = (double)f->t1 / 1e9;
	double step = stats_svg_tick_step(b - a);
	char buf[224];
	int n;

	n = snprintf(buf, sizeof(buf), "<text x=\"%d\" y=\"%d\" class=\"l\">ms</text>\n",
		     f->c.x + f->c.w + 4, f->c.y + f->c.h + 14);
	xs_out_add(o, buf, (size_t)n);
	if (!(step > 0))
		return;
	for (int k = 0; k <= 20; k++) {
		double v = (ceil(a / step) + k) * step;

		if (v > b * (1 + 1e-12) + 1e-12)
			break;
		n = snprintf(buf, sizeof(buf),
			     "<text class=\"xtick\" x=\"%.2f\" y=\"%d\" "
			     "text-anchor=\"middle\">%g</text>\n",
			     f->c.x + (v - a) / (b - a) * f->c.w, f->c.y + f->c.h + 14, v);
		xs_out_add(o, buf, (size_t)n);
	}
}

/* The sampled timeline as a step line, and the peak marked. */
static void out_timeline(struct xs_out *o, const struct mid *m, const struct mplan *pl,
			 const struct frame *f)
{
	char buf[320], pk[48];
	int n;

	OUT_LIT(o, "<path class=\"timeline\" fill=\"none\" stroke=\"#1f77b4\" "
		   "stroke-width=\"1.5\" d=\"");
	for (size_t i = 0; i < pl->nsampled; i++) {
		const struct msnap *s = stats_mem_snap_at(m, pl->sampled[i]);

		OUT_RAW(o, i ? " H" : "M");
		stats_svg_num(o, fx(f, s->t));
		OUT_RAW(o, i ? " V" : " ");
		stats_svg_num(o, fy(f, in_use(s)));
	}
	OUT_LIT(o, "\"/>\n");
	bytes_str(m->peak.peak, pk, sizeof(pk));
	n = snprintf(buf, sizeof(buf),
		     "<line class=\"peak\" x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" "
		     "stroke=\"" PEAK "\" stroke-dasharray=\"4 3\"/>\n"
		     "<circle class=\"peak\" cx=\"%.2f\" cy=\"%.2f\" r=\"4\" fill=\"" PEAK "\">"
		     "<title>peak %s at %.3f ms</title></circle>\n",
		     fx(f, m->peak_time), f->c.y, fx(f, m->peak_time), f->c.y + f->c.h,
		     fx(f, m->peak_time), fy(f, m->peak.peak), pk, (double)m->peak_time / 1e9);
	xs_out_add(o, buf, (size_t)n);
}

/* The largest allocations at the peak: the first TOP_ALLOCS merged rows. */
static int out_allocs(struct xs_out *o, const struct mid *m, const struct mplan *pl, int y)
{
	const struct stats_svg_rows rows = {y, ROW_H, 420, 480, "alloc", "#8da0cb"};
	struct msnap sp[2];
	struct arow *r;
	size_t nr, nsp, shown = 0;
	int64_t max = 0;
	int e;

	if ((e = stats_mem_rows(m, pl, sp, &nsp, &r, &nr)) < 0)
		return e;
	for (size_t i = 0; i < nr; i++)
		if (r[i].m->abytes > max)
			max = r[i].m->abytes;
	for (size_t i = 0; i < nr && shown < TOP_ALLOCS; i++, shown++) {
		const struct msnap *s = r[i].m;
		const char *label = *s->tf_op ? s->tf_op : "(no op)";
		size_t first = i;
		char v[96];
		int k;

		while (i + 1 < nr && stats_mem_row_same(&r[i], &r[i + 1]))
			i++;
		bytes_str(s->abytes, v, sizeof(v));
		k = (int)strlen(v);
		if (i > first)
			snprintf(v + k, sizeof(v) - (size_t)k, " x %zu", i - first + 1);
		stats_svg_row(o, &rows, shown, label, strlen(label),
			      max > 0 ? (double)s->abytes / (double)max * rows.bar_w : 0, v);
	}
	if (!shown) {
		char buf[128];
		int n = snprintf(buf, sizeof(buf),
				 "<text x=\"70\" y=\"%d\" class=\"none\">no allocation live at "
				 "the peak</text>\n",
				 y + 12);

		xs_out_add(o, buf, (size_t)n);
	}
	free(r);
	return 0;
}

/* A stats_mem_id_fn: the panel of allocator @m, the @k-th drawn. */
static int panel(void *arg, const struct mid *m, const struct mplan *pl, size_t k)
{
	struct xs_out *o = arg;
	int y = TOP_Y + (int)k * PANEL_H;
	struct frame f = {{70, y + CHART_DY, 900, CHART_H}, 0, 0, 0};
	const char *unit;
	char buf[256], pk[48];
	double u;
	int n, r;

	bytes_str(m->peak.peak, pk, sizeof(pk));
	xs_out_key_i64(o, "<g class=\"allocator\" data-peak-bytes=\"", m->peak.peak);
	xs_out_key_i64(o, "\" data-peak-time-ps=\"", m->peak_time);
	OUT_LIT(o, "\" data-memory-id=\"");
	stats_svg_text(o, m->name, m->len);
	n = snprintf(buf, sizeof(buf), "\">\n<text x=\"70\" y=\"%d\" class=\"h\">", y + 20);
	xs_out_add(o, buf, (size_t)n);
	stats_svg_text(o, m->name, m->len);
	n = snprintf(buf, sizeof(buf), ": peak %s at %.3f ms", pk, (double)m->peak_time / 1e9);
	xs_out_add(o, buf, (size_t)n);
	if (pl) {
		n = snprintf(buf, sizeof(buf), " (step %" PRId64 ")", pl->peak_step);
		xs_out_add(o, buf, (size_t)n);
	}
	OUT_LIT(o, "</text>\n");
	if (!pl) {
		n = snprintf(buf, sizeof(buf),
			     "<text x=\"70\" y=\"%d\" class=\"none\">more than %zu events: only "
			     "the summary (memory_profile.json's errors)</text>\n</g>\n",
			     y + 60, MEM_EVENTS_MAX);
		xs_out_add(o, buf, (size_t)n);
		return xs_out_flush(o, false);
	}
	f.t0 = f.t1 = m->peak_time;
	f.ymax = m->peak.peak > 0 ? (double)m->peak.peak : 0;
	for (size_t i = 0; i < pl->nsampled; i++) {
		const struct msnap *s = stats_mem_snap_at(m, pl->sampled[i]);

		f.t0 = s->t < f.t0 ? s->t : f.t0;
		f.t1 = s->t > f.t1 ? s->t : f.t1;
		if ((double)in_use(s) > f.ymax)
			f.ymax = (double)in_use(s);
	}
	u = axis_unit(f.ymax, &unit);
	stats_svg_value_axis(o, &f.c, f.ymax / u, unit);
	out_time_axis(o, &f);
	out_timeline(o, m, pl, &f);
	n = snprintf(buf, sizeof(buf),
		     "<text x=\"70\" y=\"%d\" class=\"h\">Largest allocations live at the "
		     "peak</text>\n",
		     y + ROWS_DY - 10);
	xs_out_add(o, buf, (size_t)n);
	if ((r = out_allocs(o, m, pl, y + ROWS_DY)) < 0)
		return r;
	OUT_LIT(o, "</g>\n");
	return xs_out_flush(o, false);
}

/* Highest peak first; ties keep memory_ids order (@a, @b index mp->ord). */
static int peak_cmp(const void *a, const void *b, void *arg)
{
	const struct mprof *mp = arg;
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	int64_t x = mp->ids[mp->ord[i]].peak.peak, y = mp->ids[mp->ord[j]].peak.peak;

	if (x != y)
		return x > y ? -1 : 1;
	return i < j ? -1 : i > j;
}

int stats_view_memory_svg(struct xs_rctx *rc, struct xs_out *o)
{
	struct mprof *mp;
	size_t *pos = NULL, shown;
	char buf[256];
	int r, n;

	if ((r = stats_mem_open(rc, &mp)) < 0)
		return r;
	shown = mp->nids < IDS_SHOWN ? mp->nids : IDS_SHOWN;
	if (!(pos = malloc((mp->nids + 1) * sizeof(*pos)))) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < mp->nids; i++)
		pos[i] = i;
	qsort_r(pos, mp->nids, sizeof(*pos), peak_cmp, mp);
	for (size_t i = 0; i < shown; i++)
		pos[i] = mp->ord[pos[i]];
	stats_svg_begin(o, W, TOP_Y + (int)(shown ? shown : 1) * PANEL_H,
			"xprofs memory: memory in use per allocator", rc->host);
	if (!mp->nids)
		n = snprintf(buf, sizeof(buf),
			     "<text x=\"70\" y=\"45\" class=\"none\">no memory events in this "
			     "profile%s</text>\n",
			     mp->plane == SIZE_MAX ? " (no /host:CPU plane)" : "");
	else
		n = snprintf(buf, sizeof(buf),
			     "<text x=\"70\" y=\"45\" class=\"l\">Memory in use (stack + heap) "
			     "per allocator: %zu of %zu, highest peak first</text>\n",
			     shown, mp->nids);
	xs_out_add(o, buf, (size_t)n);
	if ((r = stats_mem_details(mp, pos, shown, panel, o)) < 0)
		goto out;
	OUT_LIT(o, "</svg>\n");
	r = xs_out_flush(o, false);
out:
	free(pos);
	stats_mem_close(mp);
	return r;
}
