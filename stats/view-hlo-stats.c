/*
 * view-hlo-stats.c - hlo_stats.json: one row per device op, as XProf's HLO
 * stats tool (ConvertOpStatsToHloStats(), op_stats_to_hlo_stats.cc, and
 * the record helpers of op_metrics_to_record.h): rank, program, category,
 * framework op, times, self-time fractions, FLOP rates, bandwidth, the
 * roofline bound, rematerialization, outside compilation, source line
 * (docs/stats.md "hlo_stats.json").
 *
 * Design: the rows are the host's device op database (hlo-db.c: the device
 * planes' op tables combined by program and name, with each op's HLO
 * facts), written in SortedOpMetricsDb() order; the session's form
 * (session-hlo.c) writes a session's database with the same writer.
 * Limits: those of the database (OPS_MAX rows); O(rows) memory.
 */
#include <errno.h>
#include <stdlib.h>

#include "stats-internal.h"

/* row_write() - one HloStatsRecord (ConvertOpMetricsToHloStatsRecord()) of rank @rank. */
static void row_write(struct xs_out *o, const struct stats_hdb *d, const struct stats_hrow *w,
		      uint64_t rank, double *cum)
{
	/* no HLO text here: the expression is the op's name, XProf's own fallback */
	const char *expr = w->op.name;
	struct stats_roof f;

	stats_roofline_get(&w->op, d, &f);
	OUT_LIT(o, "{\"rank\":");
	xs_out_u64(o, rank);
	OUT_LIT(o, ",\"program_id\":\"");
	xs_out_u64(o, w->pid); /* a string, as XProf's table has it (and > 2^53 on TPU) */
	OUT_LIT(o, "\"");
	OUT_LIT(o, ",\"program\":");
	if (w->op.program)
		xs_out_cstr(o, w->op.program);
	else
		OUT_LIT(o, "null");
	xs_out_key_cstr(o, ",\"category\":", w->op.category);
	xs_out_key_cstr(o, ",\"hlo_op_name\":", w->op.name);
	xs_out_key_cstr(o, ",\"hlo_op_expression\":", expr);
	xs_out_key_cstr(o, ",\"tf_op_name\":", w->tf_op);
	stats_hrow_times_write(o, &w->op, d->self, cum);
	stats_roof_write(o, &w->op, &f);
	OUT_RAW(o, stats_is_remat(expr, w->tf_op) ? ",\"rematerialization\":true"
						  : ",\"rematerialization\":false");
	OUT_RAW(o, stats_is_outside_compilation(w->tf_op, expr) ? ",\"outside_compilation\":true"
								: ",\"outside_compilation\":false");
	xs_out_key_cstr(o, ",\"source_info\":", w->source);
	OUT_LIT(o, "}");
}

int stats_hlo_stats_write(struct xs_out *o, const struct stats_hdb *d)
{
	size_t *idx = stats_hdb_sorted(d);
	uint64_t rank = 0;
	double cum = 0;

	if (!idx)
		return -ENOMEM;
	stats_hdb_env_write(o, d);
	xs_out_key_i64(o, ",\"total_self_time_ps\":", d->self);
	OUT_LIT(o, ",\"ops\":[");
	for (size_t i = 0; i < d->n && o->r == 0; i++) {
		const struct stats_hrow *w = &d->r[idx[i]];

		if (w->op.occurrences ==
		    0) /* AddHloStatsRecordsRecursively(): skip empty metrics */
			continue;
		OUT_RAW(o, rank ? ",\n" : "\n");
		row_write(o, d, w, ++rank, &cum);
		if ((rank & 255) == 0)
			(void)xs_out_flush(o, false);
	}
	OUT_LIT(o, "\n]}\n");
	free(idx);
	return o->r;
}

int stats_view_hlo_stats(struct xs_rctx *rc, struct xs_out *o)
{
	return stats_hdb_view(rc, o, stats_hlo_stats_write);
}
