/*
 * view-steps.c - steps.json: the host's steps as XProf's step database has
 * them (one per group_id, combined across devices) with the step number,
 * start, duration, the device time inside it (device_ps) and its breakdown
 * by XProf's event types, then the host's step-time summary (docs/stats.md).
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

int stats_view_steps(struct xs_rctx *rc, struct xs_out *o)
{
	struct xprofs_xspace *x = rc->x;
	struct stats_steps st = {0};
	struct stats_step_summary sum;
	int r = 0;

	if ((r = stats_steps_compute(rc, &st)) < 0)
		goto out;
	OUT_LIT(o, "{\"steps\":[");
	for (size_t i = 0; i < st.n; i++) {
		const struct stats_step *s = &st.s[i];

		OUT_RAW(o, i ? ",\n{\"plane\":" : "\n{\"plane\":");
		xs_out_str(o, x->planes[s->plane].name, x->planes[s->plane].name_len);
		xs_out_key_i64(o, ",\"step\":", s->num);
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
	if (st.n) {
		stats_steps_summarize(&st, 0, st.n, &sum);
		OUT_LIT(o, "\n");
		stats_step_summary_write(o, &sum);
	}
	OUT_LIT(o, "\n]}\n");
	r = 0;
out:
	stats_steps_free(&st);
	return r;
}
