/*
 * lines.c - which lines of a plane hold ops: the rule shared by ops.json's op
 * tables (ops.c), kernels.json's launches and the device time and breakdown
 * of steps.json (steps.c, busy.c). The rule and its XProf sources are in
 * docs/decode.md: a device plane's "XLA Ops" line (XProf's device trace to
 * OpMetricsDb) and its GPU "Stream #" lines; on /host:CPU the "Framework Ops" /
 * "TensorFlow Ops" lines, else every line but the ones XProf derives.
 *
 * Design: a line's kind follows from its plane and its name alone, so
 * nothing here reads events. Limits: none; planes other than the devices and
 * /host:CPU hold no ops.
 */
#include <string.h>

#include "stats-internal.h"

bool stats_plane_is_host(const struct xs_plane *p)
{
	return !strcmp(p->name, "/host:CPU");
}

/* Which lines of @p feed ops.json (see docs/decode.md for the rule). */
enum stats_line_kind stats_op_line_kind(const struct xprofs_xspace *x, const struct xs_plane *p,
					const struct xs_line *l, bool host_has_fw)
{
	if (xs_plane_is_device(p)) {
		if (xs_str_eq(l->name, l->name_len, "XLA Ops"))
			return LK_XLA_OPS;
		if (!strncmp(l->name, "Stream #", 8))
			return LK_STREAM;
		return LK_NONE;
	}
	if (!stats_plane_is_host(p))
		return LK_NONE;
	if (host_has_fw)
		return xs_str_eq(l->name, l->name_len, "Framework Ops") ||
				       xs_str_eq(l->name, l->name_len, "TensorFlow Ops")
			       ? LK_HOST
			       : LK_NONE;
	static const char *const derived[] = {"Steps",       "_counters_",   "Framework Name Scope",
					      "XLA Modules", "Launch Stats", "Source code"};
	for (size_t i = 0; i < sizeof(derived) / sizeof(derived[0]); i++)
		if (xs_str_eq(l->name, l->name_len, derived[i]))
			return LK_NONE;
	return LK_HOST;
}

bool stats_host_has_fw(const struct xprofs_xspace *x, const struct xs_plane *p)
{
	for (size_t j = p->first_line; j < p->first_line + p->n_lines; j++)
		if (xs_str_eq(x->lines[j].name, x->lines[j].name_len, "Framework Ops") ||
		    xs_str_eq(x->lines[j].name, x->lines[j].name_len, "TensorFlow Ops"))
			return true;
	return false;
}

/* stats_step_lines() - the op lines of the steps of plane @q (SIZE_MAX: host steps) into @li. */
size_t stats_step_lines(const struct xprofs_xspace *x, size_t q, size_t *li, size_t max)
{
	size_t n = 0;
	/* one plane's lines are contiguous: a per-plane call does not scan the others */
	size_t j0 = q == SIZE_MAX ? 0 : x->planes[q].first_line;
	size_t j1 = q == SIZE_MAX ? x->n_lines : j0 + x->planes[q].n_lines;

	for (size_t j = j0; j < j1 && n < max; j++) {
		const struct xs_line *l = &x->lines[j];
		const struct xs_plane *p = &x->planes[l->plane];
		bool dev = xs_plane_is_device(p);
		enum stats_line_kind k;

		k = stats_op_line_kind(x, p, l, !dev && stats_host_has_fw(x, p));
		if (k == LK_XLA_OPS || k == LK_STREAM || (q == SIZE_MAX && k == LK_HOST))
			li[n++] = j;
	}
	return n;
}
