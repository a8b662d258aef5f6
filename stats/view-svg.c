/*
 * view-svg.c - overview.svg: a picture of a host for a browser or image
 * viewer: step time per step as stacked bars (steps.json's breakdown of the
 * host's steps), and the top ops by self time
 * (overview.json's top_ops: the device planes' ops by framework op).
 *
 * Design: plain SVG 1.1 written here (no dependency), from the same parts the
 * JSON views use: stats_steps_each() and stats_ops_plane()/stats_opdb_tf(). Every
 * bar is a <g class="bar"> of one <rect> per non-zero breakdown type, with a
 * <title> giving the numbers; every op row a <rect class="op">. Text is
 * escaped; names are cut at STATS_SVG_NAME_MAX bytes. The drawing primitives
 * (head, text, axis, bars) are svg.c's, shared with memory.svg.
 *
 * The step chart has a time axis (round ticks in ms, light grid lines) and
 * step numbers under at most ten bars; the legend lists only the breakdown
 * types with time. A host without device ops shows its host ops instead.
 *
 * Limits: at most BARS_MAX bars: with more steps, consecutive steps are
 * averaged into one bar (the title says how many per bar). Memory: the
 * bars (BARS_MAX) and the ops table of overview.json (O(distinct ops)).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats-internal.h"
#include "svg.h"

#define BARS_MAX 200
#define TOP_OPS 10
#define W 1000
#define CHART_X 70
#define CHART_Y 60
#define CHART_W 900
#define CHART_H 300
#define OPS_Y 430
#define OP_ROW 22
#define LEGEND_Y 384

/* The breakdown types' colours, by stats_bd_keys[] index (idle first). */
static const char *const bd_colour[STATS_BD_N] = {
	"#d0d0d0", "#8da0cb", "#a6d854", "#e78ac3", "#fc8d62",
	"#ffd92f", "#e5c494", "#b3b3b3", "#66c2a5",
};

struct bar {
	double dur, bd[STATS_BD_N]; /* averages over the steps of the bar, ps */
	uint64_t first, count;
};

struct svg {
	struct bar b[BARS_MAX];
	size_t nb;
	uint64_t per; /* steps per bar */
	uint64_t steps;
};

static int add_step(void *arg, uint64_t i, uint64_t n, int64_t dur, const int64_t *bd)
{
	struct svg *g = arg;
	struct bar *b;

	if (i == 0) {
		g->steps = n;
		g->per = n <= BARS_MAX ? 1 : (n + BARS_MAX - 1) / BARS_MAX;
	}
	if (i / g->per >= BARS_MAX)
		return 0;
	b = &g->b[i / g->per];
	if (i / g->per >= g->nb) {
		g->nb = i / g->per + 1;
		b->first = i;
	}
	b->count++;
	b->dur += (double)dur;
	for (int k = 0; k < STATS_BD_N; k++)
		b->bd[k] += (double)bd[k];
	return 0;
}

/* A time in ms for labels. */
static void out_ms(struct xs_out *o, double ps)
{
	char buf[48];
	int n = snprintf(buf, sizeof(buf), "%.3f ms", isfinite(ps) ? ps / 1e9 : 0.0);

	xs_out_add(o, buf, (size_t)n);
}

/*
 * out_axes() - the time axis (ticks every stats_svg_tick_step() ms with light grid
 * lines, labelled in ms) and the steps' numbers under at most ten bars.
 */
static void out_axes(struct xs_out *o, const struct svg *g, double max_ps)
{
	static const struct stats_svg_chart chart = {CHART_X, CHART_Y, CHART_W, CHART_H};
	double bw = (double)CHART_W / (double)g->nb;
	size_t every = g->nb <= 10 ? 1 : (g->nb + 9) / 10;
	char buf[224];
	int n;

	stats_svg_value_axis(o, &chart, max_ps / 1e9, "ms");
	for (size_t i = 0; i < g->nb; i += every) {
		n = snprintf(buf, sizeof(buf),
			     "<text class=\"stepno\" x=\"%.2f\" y=\"%d\">%" PRIu64 "</text>\n",
			     CHART_X + bw * (double)i, CHART_Y + CHART_H + 14, g->b[i].first);
		xs_out_add(o, buf, (size_t)n);
	}
}

/* out_legend() - the breakdown types that have time in some bar, in one row. */
static void out_legend(struct xs_out *o, const struct svg *g)
{
	int x = CHART_X;

	for (int k = 0; k < STATS_BD_N; k++) {
		char buf[224];
		bool any = false;
		int n;

		for (size_t i = 0; i < g->nb && !any; i++)
			any = g->b[i].bd[k] > 0;
		if (!any)
			continue;
		n = snprintf(buf, sizeof(buf),
			     "<rect class=\"key\" x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" "
			     "fill=\"%s\"/><text x=\"%d\" y=\"%d\" class=\"l\">%.*s</text>\n",
			     x, LEGEND_Y, bd_colour[k], x + 14, LEGEND_Y + 9,
			     (int)(strlen(stats_bd_keys[k]) - 3), stats_bd_keys[k]);
		xs_out_add(o, buf, (size_t)n);
		x += 14 + 7 * (int)(strlen(stats_bd_keys[k]) - 3) + 16;
	}
}

static void out_bars(struct xs_out *o, struct svg *g)
{
	double max = 0, bw, gap;

	for (size_t i = 0; i < g->nb; i++) {
		for (int k = 0; k < STATS_BD_N; k++)
			g->b[i].bd[k] /= (double)g->b[i].count;
		g->b[i].dur /= (double)g->b[i].count;
		if (g->b[i].dur > max)
			max = g->b[i].dur;
	}
	OUT_LIT(o, "<text x=\"70\" y=\"45\" class=\"h\">Step time by step");
	if (g->per > 1) {
		char buf[96];
		int n = snprintf(buf, sizeof(buf), " (each bar: the average of %" PRIu64 " steps)",
				 g->per);

		xs_out_add(o, buf, (size_t)n);
	}
	OUT_LIT(o, "</text>\n");
	if (!g->nb) {
		OUT_LIT(o, "<text x=\"70\" y=\"120\" class=\"none\">no steps in this "
			   "profile</text>\n");
		return;
	}
	out_axes(o, g, max);
	bw = (double)CHART_W / (double)g->nb;
	gap = bw > 10 ? bw * 0.15 : bw > 2 ? 1 : 0; /* white between bars, for the eye */
	for (size_t i = 0; i < g->nb; i++) {
		const struct bar *b = &g->b[i];
		double y = CHART_Y + CHART_H, x = CHART_X + bw * (double)i;
		char t[160];
		int n = snprintf(t, sizeof(t), "step %" PRIu64 "%s: ", b->first,
				 b->count > 1 ? " and the next" : "");

		OUT_LIT(o, "<g class=\"bar\"><title>");
		xs_out_add(o, t, (size_t)n);
		out_ms(o, b->dur);
		OUT_LIT(o, "</title>");
		for (int k = STATS_BD_N - 1; k >= 0; k--) {
			double h = max > 0 ? b->bd[k] / max * CHART_H : 0;

			if (h <= 0)
				continue;
			y -= h;
			OUT_LIT(o, "<rect x=\"");
			stats_svg_num(o, x);
			OUT_LIT(o, "\" y=\"");
			stats_svg_num(o, y);
			OUT_LIT(o, "\" width=\"");
			stats_svg_num(o, bw - gap);
			OUT_LIT(o, "\" height=\"");
			stats_svg_num(o, h);
			OUT_LIT(o, "\" fill=\"");
			OUT_RAW(o, bd_colour[k]);
			OUT_LIT(o, "\"/>");
		}
		OUT_LIT(o, "</g>\n");
	}
	out_legend(o, g);
}

/*
 * top_ops() - the ops overview.json ranks (top_ops): the device planes' ops by
 * framework op (stats_opdb_tf()); on a host without device ops, the host
 * planes' ops (*@host set), so a CPU-only profile is not a blank picture.
 */
static int top_ops(struct xs_rctx *rc, struct stats_opdb *all, bool *host)
{
	const struct xprofs_xspace *x = rc->x;
	struct stats_opstats os;
	int r = 0;

	memset(&os, 0, sizeof(os));
	for (size_t q = 0; q < x->n_planes && r == 0; q++) {
		struct stats_ops ops;

		if ((r = stats_ops_plane(rc, q, &ops)) < 0)
			break;
		r = stats_opstats_add(rc, q, &ops, NULL, &os);
		stats_ops_free(&ops);
	}
	if (r == 0) {
		stats_opstats_finish(&os);
		*host = !os.dev.planes;
		if (*host) {
			*all = os.host; /* moved */
			memset(&os.host, 0, sizeof(os.host));
		} else {
			r = stats_opdb_tf(&os.dev, false, all);
		}
	}
	stats_opstats_free(&os);
	return r;
}

static int out_ops(struct xs_out *o, struct stats_opdb *all, bool host)
{
	static const struct stats_svg_rows rows = {OPS_Y, OP_ROW, 420, 480, "op", "#66c2a5"};
	size_t *idx, n = all->n < TOP_OPS ? all->n : TOP_OPS;
	double max;

	if (host)
		OUT_LIT(o, "<text x=\"70\" y=\"420\" class=\"h\">Top host ops by self time (no "
			   "device ops)</text>\n");
	else
		OUT_LIT(o, "<text x=\"70\" y=\"420\" class=\"h\">Top ops by self time</text>\n");
	if (!n) {
		OUT_LIT(o, "<text x=\"70\" y=\"450\" class=\"none\">no ops in this "
			   "profile</text>\n");
		return 0;
	}
	if (!(idx = stats_opdb_sorted(all)))
		return -ENOMEM;
	max = (double)all->r[idx[0]].op.self;
	for (size_t i = 0; i < n; i++) {
		const struct stats_dbop *op = &all->r[idx[i]];
		double self = (double)op->op.self;
		char ms[48];

		snprintf(ms, sizeof(ms), "%.3f ms", isfinite(self) ? self / 1e9 : 0.0);
		stats_svg_row(o, &rows, i, op->op.name, strlen(op->op.name),
			      max > 0 ? self / max * rows.bar_w : 0, ms);
	}
	free(idx);
	return 0;
}

int stats_view_svg(struct xs_rctx *rc, struct xs_out *o)
{
	struct svg *g = calloc(1, sizeof(*g));
	struct stats_opdb all;
	bool host = false;
	int r;

	memset(&all, 0, sizeof(all));
	if (!g)
		return -ENOMEM;
	if ((r = stats_steps_each(rc, add_step, g)) < 0 || (r = top_ops(rc, &all, &host)) < 0)
		goto out;
	stats_svg_begin(o, W, OPS_Y + TOP_OPS * OP_ROW + 20,
			"xprofs overview: step time and top ops", rc->host);
	out_bars(o, g);
	if ((r = out_ops(o, &all, host)) < 0)
		goto out;
	OUT_LIT(o, "</svg>\n");
	r = 0;
out:
	stats_opdb_free(&all);
	free(g);
	return r;
}
