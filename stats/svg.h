/*
 * svg.h - the drawing primitives the SVG views share (svg.c): the document's
 * head, escaped text, numbers, a value axis with round ticks and grid lines,
 * and labelled horizontal bars. overview.svg (view-svg.c) and memory.svg
 * (view-memory-svg.c) are drawn with them, so both look alike. Private to
 * stats/.
 */
#ifndef XPROFS_STATS_SVG_H
#define XPROFS_STATS_SVG_H

#include <stddef.h>

#include "xprofs/xspace.h"

/* Text is cut at this many bytes (names of ops, allocators, hosts). */
#define STATS_SVG_NAME_MAX 60

/* A chart's plot area, in SVG pixels: the value axis is left of @x. */
struct stats_svg_chart {
	int x, y, w, h;
};

/* Where a list of labelled bars goes: row i at y0 + i * row; labels end at bar_x - 10. */
struct stats_svg_rows {
	int y0, row, bar_x, bar_w; /* bar_w: the longest bar */
	const char *cls, *fill;    /* the bars' class and colour (borrowed, static) */
};

/*
 * stats_svg_begin() - the XML prolog, an <svg> of @w x @h pixels, the shared
 * style, a white background, the document's <title> @title and the heading
 * (@host, or "profile" when NULL or empty). Strings are borrowed.
 */
void stats_svg_begin(struct xs_out *o, int w, int h, const char *title, const char *host);
/* stats_svg_text() - @s (@n bytes, borrowed) as SVG text: cut at STATS_SVG_NAME_MAX bytes, escaped. */
void stats_svg_text(struct xs_out *o, const char *s, size_t n);
/* stats_svg_num() - @v with two decimals (0 when not finite). */
void stats_svg_num(struct xs_out *o, double v);
/*
 * stats_svg_tick_step() - a round tick step for an axis from 0 to @max (1, 2
 * or 5 times a power of ten, about five ticks); 0 when @max is not positive
 * and finite.
 */
double stats_svg_tick_step(double max);
/*
 * stats_svg_value_axis() - the value axis of @c from 0 to @max (in the unit
 * @unit, written above it): a tick every stats_svg_tick_step(@max), each
 * with a light grid line across the chart and its value as label.
 */
void stats_svg_value_axis(struct xs_out *o, const struct stats_svg_chart *c, double max,
			  const char *unit);
/*
 * stats_svg_row() - bar @i of @rows: a <rect> @w pixels long (at least half a
 * pixel), @label (@n bytes) right-aligned before it, @value after it.
 */
void stats_svg_row(struct xs_out *o, const struct stats_svg_rows *rows, size_t i, const char *label,
		   size_t n, double w, const char *value);

#endif
