/*
 * steps-out.c - what the views take of the host's step database (steps.c):
 * the steps/N windows (the mount's step slices), each step's duration and
 * breakdown (overview.svg), the overview's step-time summary and its JSON
 * object (steps.json, overview.json, the session views).
 *
 * Design: each computes the steps afresh with stats_steps_compute() and frees
 * them; memory is steps.c's (O(steps)).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stats-internal.h"

int stats_steps_windows(struct xs_rctx *rc, struct xprofs_step_window **out, size_t *n)
{
	struct stats_steps st = {0};
	int r;

	if ((r = stats_steps_compute(rc, &st)) == 0 && st.n) {
		*out = calloc(st.n, sizeof(**out));
		if (!*out)
			r = -ENOMEM;
		for (size_t i = 0; r == 0 && i < st.n; i++) {
			(*out)[i].plane = st.s[i].plane;
			(*out)[i].begin_ps = st.s[i].begin;
			(*out)[i].end_ps =
				st.s[i].end > st.s[i].begin ? st.s[i].end : st.s[i].begin + 1;
		}
		if (r == 0)
			*n = st.n;
	}
	stats_steps_free(&st);
	return r;
}

void stats_step_summary_write(struct xs_out *o, const struct stats_step_summary *sum)
{
	static const char *const dkey[] = {",\"avg_ps\":", ",\"stddev_ps\":"};
	const double dval[] = {sum->avg, sum->stddev};

	xs_out_key_u64(o, "{\"steps\":", sum->n);
	for (int i = 0; i < 2; i++) {
		xs_out_add(o, dkey[i], strlen(dkey[i]));
		xs_out_double(o, dval[i]);
	}
	xs_out_key_i64(o, ",\"min_ps\":", sum->min);
	xs_out_key_i64(o, ",\"max_ps\":", sum->max);
	OUT_LIT(o, ",\"breakdown_avg\":{");
	for (int k = 0; k < STATS_BD_N; k++) {
		OUT_RAW(o, k ? ",\"" : "\"");
		xs_out_add(o, stats_bd_keys[k], strlen(stats_bd_keys[k]));
		OUT_LIT(o, "\":");
		xs_out_double(o, sum->bd[k]);
	}
	OUT_LIT(o, "}}");
}

int stats_steps_each(struct xs_rctx *rc, stats_step_fn fn, void *arg)
{
	struct stats_steps st = {0};
	int r;

	if ((r = stats_steps_compute(rc, &st)) < 0)
		goto out;
	for (size_t i = 0; i < st.n && r == 0; i++)
		r = fn(arg, i, st.n, st.s[i].dur, st.s[i].bd);
out:
	stats_steps_free(&st);
	return r;
}

int stats_steps_overview(struct xs_rctx *rc, struct stats_step_summary *sum)
{
	return stats_steps_overview_busy(rc, sum, NULL, NULL, NULL);
}

int stats_steps_overview_busy(struct xs_rctx *rc, struct stats_step_summary *sum,
			      struct stats_busy *busy, bool *done, const struct stats_hints *hints)
{
	struct stats_steps st = {.busy = busy, .busy_done = done, .hints = hints};
	int r;

	memset(sum, 0, sizeof(*sum));
	if ((r = stats_steps_compute(rc, &st)) == 0 && st.n)
		stats_steps_summarize(&st, 0, st.n, sum);
	stats_steps_free(&st);
	return r;
}
