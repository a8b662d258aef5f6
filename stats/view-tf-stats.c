/*
 * view-tf-stats.c - framework_op_stats.json: host and device time per
 * framework op as XProf's ConvertOpStatsToTfStats() (op_stats_to_tf_stats.cc)
 * makes its TfStatsDatabase: the device side is the device op metrics db
 * (opdb.c) folded by framework op (CreateTfMetricsDbFromDeviceOpMetricsDb(),
 * op_metrics_db_utils.cc), the host side the host op metrics db; two tables,
 * with and without the IDLE op (GenerateTfStatsTable()).
 *
 * Design: each side is sorted as SortedOpMetricsDb() (self time, then name)
 * and cut at 500 rows (kMaxNumOfOps); ranks run on from the device rows
 * into the host rows, each side's fractions of its own total time
 * (SetRankAndDeviceTimeFractions() / SetRankAndHostTimeFractions()); rates and
 * bound-by as SetRooflineMetrics() (stats_bound_by()). Limits: O(rows); times
 * in ps where XProf prints µs; no GPU TensorCore utilisation (kernels.json
 * has it per kernel).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stats-internal.h"

#define TF_ROWS_MAX 500 /* kMaxNumOfOps, per side */

/* One side's running rank and cumulative fraction. */
struct side {
	uint64_t rank;
	double cum;
};

static void row_write(struct xs_out *o, const struct stats_dbop *r, bool dev, int64_t total,
		      struct side *s, const struct stats_opstats *st)
{
	double frac = stats_safe_div((double)r->op.self, (double)total), futil, butil, gibps;
	const char *bound = stats_bound_by(r->op.flops, r->op.bytes, r->op.total, st->peak_flops,
					   st->peak_bw, &futil, &butil, &gibps);

	s->cum += frac;
	{
		double t = (double)r->op.total;
		const struct stats_kv kv[] = {
			{",\"avg_time_ps\":", stats_safe_div(t, (double)r->op.occurrences)},
			{",\"avg_self_time_ps\":",
			 stats_safe_div((double)r->op.self, (double)r->op.occurrences)},
			{",\"device_total_self_time_fraction\":", dev ? frac : 0},
			{",\"device_cumulative_total_self_time_fraction\":", dev ? s->cum : 0},
			{",\"host_total_self_time_fraction\":", dev ? 0 : frac},
			{",\"host_cumulative_total_self_time_fraction\":", dev ? 0 : s->cum},
			{",\"flops\":", r->op.flops},
			{",\"bytes_accessed\":", r->op.bytes},
			{",\"measured_flop_rate\":", stats_safe_div(r->op.flops, t) * 1e12},
			{",\"model_flop_rate\":", stats_safe_div(r->op.model_flops, t) * 1e12},
			{",\"measured_memory_bw\":", stats_safe_div(r->op.bytes, t) * 1e12},
			{",\"operational_intensity\":", stats_safe_div(r->op.flops, r->op.bytes)},
		};

		xs_out_key_i64(o, "{\"rank\":", (int64_t)++s->rank);
		OUT_RAW(o, dev ? ",\"host_or_device\":\"Device\",\"type\":"
			       : ",\"host_or_device\":\"Host\",\"type\":");
		xs_out_cstr(o, r->op.category);
		OUT_LIT(o, ",\"operation\":");
		xs_out_cstr(o, r->op.name);
		xs_out_key_i64(o, ",\"occurrences\":", r->op.occurrences);
		xs_out_key_i64(o, ",\"total_time_ps\":", r->op.total);
		xs_out_key_i64(o, ",\"total_self_time_ps\":", r->op.self);
		stats_out_kv(o, kv, sizeof(kv) / sizeof(kv[0]), ",\"bound_by\":", bound);
	}
}

/* side_write() - one side's rows (the top TF_ROWS_MAX, IDLE left out when @excl). */
static int side_write(struct xs_out *o, const struct stats_opdb *d, bool dev, bool excl,
		      struct side *s, bool *first, const struct stats_opstats *st)
{
	size_t *idx = stats_opdb_sorted(d);
	int64_t total = excl ? d->self : d->total_time;

	if (!idx)
		return -ENOMEM;
	s->cum = 0;
	for (size_t i = 0; i < d->n && i < TF_ROWS_MAX; i++) {
		const struct stats_dbop *r = &d->r[idx[i]];

		if (excl && r->idle)
			continue;
		OUT_RAW(o, *first ? "\n" : ",\n");
		*first = false;
		row_write(o, r, dev, total, s, st);
		if (xs_out_flush(o, false) < 0)
			break;
	}
	free(idx);
	return o->r;
}

/* GenerateTfStatsTable(): the device rows, then the host rows. */
static int table_write(struct xs_out *o, const struct stats_opstats *s, bool excl)
{
	struct stats_opdb tf;
	struct side sd = {0, 0};
	bool first = true;
	int r;

	if ((r = stats_opdb_tf(&s->dev, true, &tf)) < 0)
		return r;
	xs_out_key_i64(o, "{\"device_total_time_ps\":", excl ? tf.self : tf.total_time);
	xs_out_key_i64(o, ",\"host_total_time_ps\":", excl ? s->host.self : s->host.total_time);
	OUT_LIT(o, ",\"rows\":[");
	if ((r = side_write(o, &tf, true, excl, &sd, &first, s)) == 0)
		r = side_write(o, &s->host, false, excl, &sd, &first, s);
	OUT_LIT(o, "]}");
	stats_opdb_free(&tf);
	return r;
}

int stats_tf_stats_write(struct xs_out *o, const struct stats_opstats *s)
{
	int r;

	OUT_LIT(o, "\"device_type\":");
	xs_out_cstr(o, s->gpu ? "GPU" : s->dev.planes ? "TPU" : "CPU_ONLY");
	xs_out_opt_double(o, ",\"peak_flops_per_s\":", s->peak_flops > 0, s->peak_flops);
	xs_out_opt_double(o, ",\"peak_hbm_bytes_per_s\":", s->peak_bw > 0, s->peak_bw);
	OUT_LIT(o, ",\n\"with_idle\":");
	if ((r = table_write(o, s, false)) < 0)
		return r;
	OUT_LIT(o, ",\n\"without_idle\":");
	return table_write(o, s, true);
}

int stats_view_tf_stats(struct xs_rctx *rc, struct xs_out *o)
{
	return stats_opstats_view(rc, o, STATS_DB_OPS, stats_tf_stats_write, "}\n");
}
