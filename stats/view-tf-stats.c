/*
 * view-tf-stats.c - framework_op_stats.json: host and device time per
 * framework op as XProf's ConvertOpStatsToTfStats() (op_stats_to_tf_stats.cc)
 * makes its TfStatsDatabase: the device side is the device op metrics db
 * (opstats.c) folded by framework op (CreateTfMetricsDbFromDeviceOpMetricsDb(),
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
	double frac = stats_safe_div((double)r->self, (double)total), futil, butil, gibps;
	const char *bound = stats_bound_by(r->flops, r->bytes, r->total, st->peak_flops,
					   st->peak_bw, &futil, &butil, &gibps);

	s->cum += frac;
	OUT_LIT(o, "{\"rank\":");
	xs_out_u64(o, ++s->rank);
	OUT_RAW(o, dev ? ",\"host_or_device\":\"Device\"" : ",\"host_or_device\":\"Host\"");
	OUT_LIT(o, ",\"type\":");
	xs_out_cstr(o, r->category);
	OUT_LIT(o, ",\"operation\":");
	xs_out_cstr(o, r->name);
	xs_out_key_i64(o, ",\"occurrences\":", r->occ);
	xs_out_key_i64(o, ",\"total_time_ps\":", r->total);
	OUT_LIT(o, ",\"avg_time_ps\":");
	xs_out_double(o, stats_safe_div((double)r->total, (double)r->occ));
	xs_out_key_i64(o, ",\"total_self_time_ps\":", r->self);
	OUT_LIT(o, ",\"avg_self_time_ps\":");
	xs_out_double(o, stats_safe_div((double)r->self, (double)r->occ));
	OUT_LIT(o, ",\"device_total_self_time_fraction\":");
	xs_out_double(o, dev ? frac : 0);
	OUT_LIT(o, ",\"device_cumulative_total_self_time_fraction\":");
	xs_out_double(o, dev ? s->cum : 0);
	OUT_LIT(o, ",\"host_total_self_time_fraction\":");
	xs_out_double(o, dev ? 0 : frac);
	OUT_LIT(o, ",\"host_cumulative_total_self_time_fraction\":");
	xs_out_double(o, dev ? 0 : s->cum);
	OUT_LIT(o, ",\"flops\":");
	xs_out_double(o, r->flops);
	OUT_LIT(o, ",\"bytes_accessed\":");
	xs_out_double(o, r->bytes);
	OUT_LIT(o, ",\"measured_flop_rate\":");
	xs_out_double(o, stats_safe_div(r->flops, (double)r->total) * 1e12);
	OUT_LIT(o, ",\"model_flop_rate\":");
	xs_out_double(o, stats_safe_div(r->model_flops, (double)r->total) * 1e12);
	OUT_LIT(o, ",\"measured_memory_bw\":");
	xs_out_double(o, stats_safe_div(r->bytes, (double)r->total) * 1e12);
	OUT_LIT(o, ",\"operational_intensity\":");
	xs_out_double(o, stats_safe_div(r->flops, r->bytes));
	OUT_LIT(o, ",\"bound_by\":");
	xs_out_cstr(o, bound);
	OUT_LIT(o, "}");
}

/* side_write() - one side's rows (the top TF_ROWS_MAX, IDLE left out when @excl). */
static int side_write(struct xs_out *o, const struct stats_opdb *d, bool dev, bool excl,
		      struct side *s, bool *first, const struct stats_opstats *st)
{
	size_t *idx = stats_opdb_sorted(d);
	int64_t total = excl ? d->total_op_time : d->total_time;

	if (!idx)
		return -ENOMEM;
	s->cum = 0;
	for (size_t i = 0; i < d->n && i < TF_ROWS_MAX; i++) {
		const struct stats_dbop *r = &d->rows[idx[i]];

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
	xs_out_key_i64(o, "{\"device_total_time_ps\":", excl ? tf.total_op_time : tf.total_time);
	xs_out_key_i64(
		o, ",\"host_total_time_ps\":", excl ? s->host.total_op_time : s->host.total_time);
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
	struct stats_opstats s;
	int r;

	if ((r = stats_opstats_host(rc, &s)) < 0)
		return r;
	OUT_LIT(o, "{");
	r = stats_tf_stats_write(o, &s);
	OUT_LIT(o, "}\n");
	stats_opstats_free(&s);
	return r;
}
