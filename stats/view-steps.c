/*
 * view-steps.c - steps.json: every step of every "Steps" line with its
 * label, start, duration, the time inside it during which any device op line
 * is busy (device_ps) and its breakdown by XProf's event types, then a
 * step-time summary per plane with steps (docs/stats.md).
 *
 * Design: the steps and their times are steps.c's (stats_steps_compute());
 * this file only writes them, flushing after each step. Limits: steps.c's
 * (STEPS_MAX steps, "truncated": true beyond).
 */
#include <stdlib.h>
#include <string.h>

#include "stats-internal.h"

static void out_breakdown(struct xs_out *o, const int64_t *bd)
{
	for (int k = 0; k < STATS_BD_N; k++) {
		OUT_RAW(o, k ? ",\"" : "{\"");
		xs_out_add(o, stats_bd_keys[k], strlen(stats_bd_keys[k]));
		OUT_LIT(o, "\":");
		xs_out_i64(o, bd[k]);
	}
	OUT_LIT(o, "}");
}

/* out_summary() - summary[]: one stats_step_summary per plane with steps. */
static void out_summary(struct xs_out *o, const struct xprofs_xspace *x,
			const struct stats_steps *st)
{
	struct stats_step_summary sum;

	for (size_t a = 0, b; a < st->n; a = b) {
		for (b = a; b < st->n && st->s[b].plane == st->s[a].plane; b++)
			;
		stats_steps_summarize(st, a, b, &sum);
		OUT_RAW(o, a ? ",\n" : "\n");
		stats_step_summary_write(o, x, &sum);
	}
}

int stats_view_steps(struct xs_rctx *rc, struct xs_out *o)
{
	struct xprofs_xspace *x = rc->x;
	struct stats_steps st = {0};
	size_t *ra = NULL, *rb = NULL; /* per plane: range of its steps */
	int r = 0;

	if ((r = stats_steps_compute(rc, &st, &ra, &rb, NULL)) < 0)
		goto out;
	OUT_LIT(o, "{\"steps\":[");
	for (size_t i = 0; i < st.n; i++) {
		const struct stats_step *s = &st.s[i];

		OUT_RAW(o, i ? ",\n{\"plane\":" : "\n{\"plane\":");
		xs_out_str(o, x->planes[s->plane].name, x->planes[s->plane].name_len);
		OUT_LIT(o, ",\"step\":");
		OUT_RAW(o, s->label);
		xs_out_key_i64(o, ",\"start_ps\":", s->start);
		xs_out_key_i64(o, ",\"duration_ps\":", s->dur);
		xs_out_key_i64(o, ",\"device_ps\":", s->device);
		OUT_LIT(o, ",\"breakdown\":");
		out_breakdown(o, s->bd);
		OUT_LIT(o, "}");
		if ((r = xs_out_flush(o, false)) < 0)
			goto out;
	}
	OUT_RAW(o, st.cut ? "\n],\"truncated\":true" : "\n],\"truncated\":false");
	OUT_LIT(o, ",\"summary\":[");
	out_summary(o, x, &st);
	OUT_LIT(o, "\n]}\n");
	r = 0;
out:
	stats_steps_free(&st);
	free(ra);
	free(rb);
	return r;
}
