/*
 * view-hlo-stats.c - hlo_stats.json: one row per device op, as XProf's HLO
 * stats tool (ConvertOpStatsToHloStats(), op_stats_to_hlo_stats.cc, and
 * the record helpers of op_metrics_to_record.h): rank, program, category,
 * framework op, times, self-time fractions, FLOP rates, bandwidth, the
 * roofline bound, rematerialization, outside compilation, source line
 * (docs/stats.md "hlo_stats.json").
 *
 * Design: the rows are the host's device op database (opdb.c, STATS_DB_HLO: the device
 * planes' op tables combined by program and name, with each op's HLO
 * facts), written in SortedOpMetricsDb() order; the session's form
 * (session-hlo.c) writes a session's database with the same writer.
 * Limits: those of the database (OPS_MAX rows); O(rows) memory.
 */
#include <errno.h>
#include <stdlib.h>

#include "stats-internal.h"

/* row_write() - one HloStatsRecord (ConvertOpMetricsToHloStatsRecord()) of rank @rank. */
static void row_write(struct xs_out *o, const struct stats_opstats *d, const struct stats_dbop *w,
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
	stats_out_opt_str(o, ",\"program\":", w->op.program);
	xs_out_key_cstr(o, ",\"category\":", w->op.category);
	xs_out_key_cstr(o, ",\"hlo_op_name\":", w->op.name);
	xs_out_key_cstr(o, ",\"hlo_op_expression\":", expr);
	xs_out_key_cstr(o, ",\"tf_op_name\":", w->op.provenance);
	stats_op_times_write(o, &w->op, d->dev.self, cum);
	stats_roof_write(o, &w->op, &f);
	OUT_RAW(o, stats_is_remat(expr, w->op.provenance) ? ",\"rematerialization\":true"
							  : ",\"rematerialization\":false");
	OUT_RAW(o, stats_is_outside_compilation(w->op.provenance, expr)
			   ? ",\"outside_compilation\":true"
			   : ",\"outside_compilation\":false");
	xs_out_key_cstr(o, ",\"source_info\":", w->op.source);
	OUT_LIT(o, "}");
}

int stats_hlo_stats_write(struct xs_out *o, const struct stats_opstats *d)
{
	size_t *idx = stats_opdb_sorted(&d->dev);
	uint64_t rank = 0;
	double cum = 0;

	if (!idx)
		return -ENOMEM;
	stats_opstats_env_write(o, d);
	xs_out_key_i64(o, ",\"total_self_time_ps\":", d->dev.self);
	OUT_LIT(o, ",\"ops\":[");
	for (size_t i = 0; i < d->dev.n && o->r == 0; i++) {
		const struct stats_dbop *w = &d->dev.r[idx[i]];

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
	return stats_opstats_view(rc, o, STATS_DB_HLO, stats_hlo_stats_write, "");
}
