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
 * (opdb.c, STATS_DB_HLO), the same as hlo_stats.json's; the session's form
 * (session-hlo.c) uses the same writer. Not made: the per-step and
 * average-step records (XProf's per-step op databases; xprofs has none).
 * Limits: O(rows) memory; 1001 records.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
static void record_write(struct xs_out *o, const struct stats_opstats *d, const struct op *op,
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
	stats_op_times_write(o, op, c->table_ps, cum);
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
static void program_get(const struct stats_opstats *d, int64_t table_ps, struct op *p)
{
	memset(p, 0, sizeof(*p));
	p->occurrences = 1;
	p->count = 1;
	p->total = table_ps;
	for (size_t i = 0; i < d->dev.n; i++) {
		const struct op *a = &d->dev.r[i].op;
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

/* out_flag() - @lit, then true / false when @known, else null. */
static void out_flag(struct xs_out *o, const char *lit, bool known, bool v)
{
	OUT_RAW(o, lit);
	OUT_RAW(o, !known ? "null" : v ? "true" : "false");
}

/*
 * device_write() - InitializeRooflineModelDatabaseFromOpStats(): the peaks per
 * memory and their ridge points (RidgePoint(): peak FLOP/s ÷ peak bytes/s). A
 * TPU host's CMEM peaks when it has CMEM, else its VMEM peaks when it has merged
 * VMEM; a GPU's VMEM (shared memory) peaks are not derived; a session has only
 * the peak FLOP/s and HBM bandwidth (CombinePerfEnv()).
 */
static void device_write(struct xs_out *o, const struct stats_opstats *d)
{
	static const char *const keys[4] = {"cmem_read", "cmem_write", "vmem_read", "vmem_write"};
	bool tpu = d->tpu_env, gpu = d->hw == STATS_HW_GPU;
	bool cmem = tpu && (d->peak_mem[0] > 0 || d->peak_mem[1] > 0);
	char key[64];

	stats_opstats_env_write(o, d);
	out_flag(o, ",\"megacore\":", tpu || gpu, tpu && d->megacore);
	out_flag(o, ",\"has_cmem\":", tpu || gpu, cmem);
	out_flag(o, ",\"has_merged_vmem\":", tpu || gpu, gpu || d->merged_vmem);
	xs_out_opt_double(o, ",\"hbm_ridge_point\":", d->peak_flops > 0 && d->peak_bw > 0,
			  d->peak_flops / d->peak_bw);
	for (size_t i = 0; i < 4; i++) {
		/* CMEM's when it has CMEM, else VMEM's when it has merged VMEM */
		double bw = (i < 2 ? cmem : tpu && !cmem && d->merged_vmem) ? d->peak_mem[i] : 0;

		snprintf(key, sizeof(key), ",\"peak_%s_bytes_per_s\":", keys[i]);
		xs_out_opt_double(o, key, bw > 0, bw);
		snprintf(key, sizeof(key), ",\"%s_ridge_point\":", keys[i]);
		xs_out_opt_double(o, key, bw > 0 && d->peak_flops > 0, d->peak_flops / bw);
	}
	OUT_LIT(o, ",\"memory_access_breakdown\":false,\"include_infeed_outfeed\":false");
}

int stats_roofline_write(struct xs_out *o, const struct stats_opstats *d)
{
	size_t *idx = stats_opdb_sorted(&d->dev);
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
	for (size_t i = 0; i < d->dev.n; i++)
		if (is_feed(d->dev.r[i].op.category))
			feed = xs_sat_add(feed, d->dev.r[i].op.total);
	table_ps = d->dev.self - feed > 0 ? d->dev.self - feed : 0;
	program_get(d, table_ps, &prog);
	record_write(o, d, &prog, &(struct rec){0, 0, "Program", "Program", "", table_ps}, &cum);
	/* SortedOpMetricsDb(db, kMaxNumRecords): the first 1000, then the skips */
	for (size_t i = 0; i < d->dev.n && i < ROOF_RECORDS_MAX && o->r == 0; i++) {
		const struct stats_dbop *w = &d->dev.r[idx[i]];

		if (w->op.occurrences == 0 || is_feed(w->op.category))
			continue;
		OUT_LIT(o, ",\n");
		record_write(o, d, &w->op,
			     &(struct rec){++rank, w->pid, w->op.name, w->op.category, w->op.source,
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
	return stats_opstats_view(rc, o, STATS_DB_HLO, stats_roofline_write, "");
}
