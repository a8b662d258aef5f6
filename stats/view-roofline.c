/*
 * view-roofline.c - roofline.json: XProf's roofline model
 * (ConvertOpStatsToRooflineModel(), op_stats_to_roofline_model.cc): the
 * device's peak FLOP/s, bandwidths and ridge points
 * (InitializeRooflineModelDatabaseFromOpStats()), and the "Total" records
 * over the whole profile (AddRooflineModelRecordForProfileDuration()): a
 * "Program" record of the innermost ops (GenerateRooflineModelProgramRecord())
 * and one record per op (ConvertOpMetricsToRooflineModelRecord()), at most
 * 1000, infeed and outfeed left out (docs/stats.md "roofline.json").
 *
 * Design: the records are written from the host's device op database
 * (hlo-db.c), the same as hlo_stats.json's; the session's form
 * (session-hlo.c) uses the same writer. Not made: the per-step and
 * average-step records (XProf's per-step op databases; xprofs has none).
 * Limits: O(rows) memory; 1001 records.
 */
#include <errno.h>
#include <string.h>
#include <stdlib.h>

#include "stats-internal.h"

#define ROOF_RECORDS_MAX 1000 /* kMaxNumRecords */

/* tsl IsInfeedOrOutfeed(): the category names infeed or outfeed. */
static bool is_feed(const char *cat)
{
	return strstr(cat, "infeed") || strstr(cat, "outfeed");
}

/* tsl MayHaveInnerOps(): call, conditional, while, megacore fusion. */
static bool has_inner(const char *cat)
{
	return !strcmp(cat, "call") || !strcmp(cat, "conditional") || !strcmp(cat, "while") ||
	       !strcmp(cat, "megacore fusion");
}

/* One record's numbers beyond the op's own. */
struct rec {
	uint64_t rank;
	uint64_t pid;
	const char *name, *category, *source;
	int64_t table_ps;
};

/* record_write() - one RooflineModelRecord of @op (ConvertOpMetricsToRooflineModelRecord()). */
static void record_write(struct xs_out *o, const struct stats_hdb *d, const struct op *op,
			 const struct rec *c, double *cum)
{
	struct stats_roof f;
	double eff, mem;

	stats_roofline_get(op, d, &f);
	/* no CMEM / VMEM bytes (no breakdown): the memory utilization is HBM's */
	mem = f.hbm_util;
	eff = mem > f.flops_util ? mem : f.flops_util;
	OUT_LIT(o, "{\"step\":\"Total\",\"rank\":");
	xs_out_u64(o, c->rank);
	xs_out_key_cstr(o, ",\"category\":", c->category);
	xs_out_key_cstr(o, ",\"operation\":", c->name);
	OUT_LIT(o, ",\"program_id\":\"");
	xs_out_u64(o, c->pid); /* a string, as XProf's table has it (and > 2^53 on TPU) */
	OUT_LIT(o, "\"");
	stats_hrow_times_write(o, op, c->table_ps, cum);
	stats_roof_write(o, op, &f);
	xs_out_opt_double(o, ",\"hbm_operational_intensity\":",
			  op->has_flops && op->has_bytes && op->bytes != 0, f.intensity);
	OUT_LIT(o, ",\"bottleneck_operational_intensity\":");
	xs_out_double(o, f.bottleneck_intensity);
	xs_out_opt_double(o, ",\"total_time_per_core_ps\":", d->cores > 0,
			  (double)op->total / (double)d->cores);
	xs_out_opt_double(o, ",\"total_time_fraction\":", c->table_ps > 0,
			  (double)op->total / (double)c->table_ps);
	xs_out_opt_double(o, ",\"optimal_flops_per_s\":", op->has_flops && op->total > 0,
			  eff > 1e-10 ? f.flop_rate / eff : 0);
	OUT_LIT(o, ",\"roofline_efficiency\":");
	xs_out_double(o, eff);
	OUT_LIT(o, ",\"compute_efficiency\":");
	xs_out_double(o, f.flops_util);
	OUT_LIT(o, ",\"max_mem_bw_utilization\":");
	xs_out_double(o, mem);
	xs_out_key_cstr(o, ",\"source_info\":", c->source);
	OUT_LIT(o, "}");
}

/* program_get() - GenerateRooflineModelProgramRecord()'s op: the innermost ops' amounts. */
static void program_get(const struct stats_hdb *d, int64_t table_ps, struct op *p)
{
	memset(p, 0, sizeof(*p));
	p->occurrences = 1;
	p->count = 1;
	p->total = table_ps;
	for (size_t i = 0; i < d->n; i++) {
		const struct op *a = &d->r[i].op;
		struct op amounts = {.flops = a->flops,
				     .bytes = a->bytes,
				     .model_flops = a->model_flops,
				     .has_flops = a->has_flops,
				     .has_bytes = a->has_bytes,
				     .has_model_flops = a->has_model_flops};

		if (!has_inner(a->category) && !is_feed(a->category))
			stats_op_add(p, &amounts);
	}
}

static void device_write(struct xs_out *o, const struct stats_hdb *d)
{
	bool gpu = d->hw == STATS_HW_GPU, bw = d->peak_bw > 0, ridge = bw && d->peak_flops > 0;
	double rp = ridge ? d->peak_flops / d->peak_bw : 0;

	stats_hdb_env_write(o, d);
	/* GPU: MakePerfEnv()'s peak_bws are memory_bandwidth four times; TPU ones: not read */
	OUT_RAW(o, gpu ? ",\"megacore\":false,\"has_cmem\":false,\"has_merged_vmem\":true"
		       : ",\"megacore\":null,\"has_cmem\":null,\"has_merged_vmem\":null");
	OUT_LIT(o, ",\"peak_cmem_read_bytes_per_s\":null,\"peak_cmem_write_bytes_per_s\":null");
	xs_out_opt_double(o, ",\"peak_vmem_read_bytes_per_s\":", gpu && bw, d->peak_bw);
	xs_out_opt_double(o, ",\"peak_vmem_write_bytes_per_s\":", gpu && bw, d->peak_bw);
	xs_out_opt_double(o, ",\"hbm_ridge_point\":", ridge, rp);
	OUT_LIT(o, ",\"cmem_read_ridge_point\":null,\"cmem_write_ridge_point\":null");
	xs_out_opt_double(o, ",\"vmem_read_ridge_point\":", gpu && ridge, rp);
	xs_out_opt_double(o, ",\"vmem_write_ridge_point\":", gpu && ridge, rp);
	OUT_LIT(o, ",\"memory_access_breakdown\":false,\"include_infeed_outfeed\":false");
}

int stats_roofline_write(struct xs_out *o, const struct stats_hdb *d)
{
	size_t *idx = stats_hdb_sorted(d);
	int64_t feed = 0, table_ps;
	uint64_t rank = 0;
	double cum = 0;
	struct op prog;

	if (!idx)
		return -ENOMEM;
	device_write(o, d);
	OUT_LIT(o, ",\"records\":[");
	if (d->hw == STATS_HW_CPU) /* ConvertOpStatsToRooflineModel(): GPU and TPU only */
		goto end;
	for (size_t i = 0; i < d->n; i++)
		if (is_feed(d->r[i].op.category))
			feed = xs_sat_add(feed, d->r[i].op.total);
	table_ps = d->self - feed > 0 ? d->self - feed : 0;
	program_get(d, table_ps, &prog);
	record_write(o, d, &prog, &(struct rec){0, 0, "Program", "Program", "", table_ps}, &cum);
	/* SortedOpMetricsDb(db, kMaxNumRecords): the first 1000, then the skips */
	for (size_t i = 0; i < d->n && i < ROOF_RECORDS_MAX && o->r == 0; i++) {
		const struct stats_hrow *w = &d->r[idx[i]];

		if (w->op.occurrences == 0 || is_feed(w->op.category))
			continue;
		OUT_LIT(o, ",\n");
		record_write(o, d, &w->op,
			     &(struct rec){++rank, w->pid, w->op.name, w->op.category, w->source,
					   table_ps},
			     &cum);
	}
end:
	OUT_LIT(o, "\n]}\n");
	free(idx);
	return o->r;
}

int stats_view_roofline(struct xs_rctx *rc, struct xs_out *o)
{
	return stats_hdb_view(rc, o, stats_roofline_write);
}
