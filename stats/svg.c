/*
 * svg.c - the SVG drawing primitives of overview.svg and memory.svg
 * (svg.h): plain SVG 1.1 written as text, no dependency.
 *
 * Design: every primitive writes whole elements to the view's writer; the
 * geometry (where a chart or a list of bars goes) is the caller's. Text is
 * XML-escaped, control bytes become '?', invalid UTF-8 U+FFFD, and names
 * are cut at STATS_SVG_NAME_MAX bytes, so an SVG always parses. Numbers
 * have two decimals and non-finite ones are drawn as 0.
 *
 * Limits: an axis has at most 21 ticks.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "svg.h"

void stats_svg_begin(struct xs_out *o, int w, int h, const char *title, const char *host)
{
	char head[256];
	int n = snprintf(head, sizeof(head),
			 "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
			 "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
			 "height=\"%d\" viewBox=\"0 0 %d %d\">\n",
			 w, h, w, h);

	xs_out_add(o, head, (size_t)n);
	OUT_LIT(o, "<style>text{font:12px sans-serif}.h{font-weight:bold;font-size:14px}"
		   ".l{fill:#444}.none{fill:#888}</style>\n"
		   "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n"
		   "<title>");
	stats_svg_text(o, title, strlen(title));
	OUT_LIT(o, "</title>\n<text x=\"70\" y=\"22\" class=\"h\">");
	if (host && *host)
		stats_svg_text(o, host, strlen(host));
	else
		OUT_LIT(o, "profile");
	OUT_LIT(o, "</text>\n");
}

void stats_svg_text(struct xs_out *o, const char *s, size_t n)
{
	size_t l;

	if (n > STATS_SVG_NAME_MAX)
		n = STATS_SVG_NAME_MAX;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '<')
			OUT_LIT(o, "&lt;");
		else if (c == '>')
			OUT_LIT(o, "&gt;");
		else if (c == '&')
			OUT_LIT(o, "&amp;");
		else if (c == '"')
			OUT_LIT(o, "&quot;");
		else if (c < 0x20 || c == 0x7f)
			OUT_LIT(o, "?");
		else if (c < 0x80)
			xs_out_add(o, s + i, 1);
		else if ((l = xprofs_utf8_seq_len((const unsigned char *)s + i, n - i)) == 0)
			OUT_LIT(o, "\xef\xbf\xbd"); /* U+FFFD: an SVG is XML, always UTF-8 */
		else
			xs_out_add(o, s + i, l), i += l - 1;
	}
}

void stats_svg_num(struct xs_out *o, double v)
{
	char buf[48];
	int n = snprintf(buf, sizeof(buf), "%.2f", isfinite(v) ? v : 0.0);

	xs_out_add(o, buf, (size_t)n);
}

double stats_svg_tick_step(double max)
{
	double raw = max / 5, p;

	if (!(raw > 0) || !isfinite(raw))
		return 0;
	p = pow(10, floor(log10(raw)));
	return raw <= p ? p : raw <= 2 * p ? 2 * p : raw <= 5 * p ? 5 * p : 10 * p;
}

void stats_svg_value_axis(struct xs_out *o, const struct stats_svg_chart *c, double max,
			  const char *unit)
{
	double step = stats_svg_tick_step(max);
	char buf[224];
	int n = snprintf(buf, sizeof(buf), "<text x=\"%d\" y=\"%d\" class=\"l\">%s</text>\n",
			 c->x - 65, c->y - 8, unit);

	xs_out_add(o, buf, (size_t)n);
	for (int k = 0; step > 0 && k <= 20 && k * step <= max * (1 + 1e-9); k++) {
		double y = c->y + c->h - k * step / max * c->h;

		n = snprintf(buf, sizeof(buf),
			     "<line class=\"tick\" x1=\"%d\" y1=\"%.2f\" x2=\"%d\" y2=\"%.2f\" "
			     "stroke=\"%s\"/><text class=\"tick\" x=\"%d\" y=\"%.2f\">%g</text>\n",
			     c->x - 4, y, c->x + c->w, y, k ? "#eeeeee" : "#888888", c->x - 65,
			     y + 4, k * step);
		xs_out_add(o, buf, (size_t)n);
	}
}

void stats_svg_row(struct xs_out *o, const struct stats_svg_rows *rows, size_t i, const char *label,
		   size_t n, double w, const char *value)
{
	int y = rows->y0 + (int)i * rows->row;
	char buf[224];
	int k;

	if (!(w > 0.5))
		w = 0.5;
	k = snprintf(buf, sizeof(buf), "<rect class=\"%s\" x=\"%d\" y=\"%d\" width=\"", rows->cls,
		     rows->bar_x, y);
	xs_out_add(o, buf, (size_t)k);
	stats_svg_num(o, w);
	k = snprintf(buf, sizeof(buf),
		     "\" height=\"16\" fill=\"%s\"/><text x=\"%d\" y=\"%d\" "
		     "text-anchor=\"end\">",
		     rows->fill, rows->bar_x - 10, y + 12);
	xs_out_add(o, buf, (size_t)k);
	stats_svg_text(o, label, n);
	k = snprintf(buf, sizeof(buf), "</text><text x=\"%d\" y=\"%d\" class=\"l\">",
		     rows->bar_x + 10 + (int)w, y + 12);
	xs_out_add(o, buf, (size_t)k);
	OUT_RAW(o, value);
	OUT_LIT(o, "</text>\n");
}
