/*
 * opdb-out.c - what the views of the op database (opdb.c) write alike: the
 * roofline numbers of an op (XProf's SetRooflineMetrics(),
 * op_metrics_to_record.h) and their keys, an op's execution times
 * (SetExecutionTimes(), SetRankAndTimeFractions()), the run environment, tsl's
 * IsRematerialization() / IsOutsideCompilationOp(), and the op profile's
 * bound and rate numbers.
 *
 * Design: writers and pure functions over one row or one database; nothing
 * here allocates. Limits: none beyond the output's.
 */
#include <string.h>

#include "stats-internal.h"

double stats_safe_div(double a, double b)
{
	return b < 1e-10 && b > -1e-10 ? 0.0 : a / b;
}

void stats_roofline_get(const struct op *op, const struct stats_opstats *d, struct stats_roof *out)
{
	double t = (double)op->total; /* ps: SafeDivide() over the time, then per second */
	double flops = op->has_flops ? op->flops : 0, bytes = op->has_bytes ? op->bytes : 0;

	memset(out, 0, sizeof(*out));
	out->flop_rate = stats_safe_div(flops, t) * 1e12;
	out->model_rate = stats_safe_div(op->has_model_flops ? op->model_flops : 0, t) * 1e12;
	/* no memory_accessed_breakdown: all bytes are HBM bytes (the legacy rule) */
	out->hbm_bw = stats_safe_div(bytes, t) * 1e12;
	out->intensity = stats_safe_div(flops, bytes);
	out->bound = "Unknown";
	out->flops_util = d->peak_flops > 0 ? out->flop_rate / d->peak_flops : 0;
	out->hbm_util = d->peak_bw > 0 ? out->hbm_bw / d->peak_bw : 0;
	if (out->flops_util > 0) {
		out->bound = "Compute";
		out->bottleneck_intensity = out->intensity;
	}
	if (out->hbm_util > out->flops_util) {
		out->bound = "HBM";
		out->bottleneck_intensity = out->intensity;
	}
	/*
	 * GPU: Shm/L1 is weighed with the HBM bytes against peak_bws[2], which
	 * MakePerfEnv() sets to memory_bandwidth again, so it never beats HBM; TPU:
	 * CMEM / VMEM need the breakdown (not decoded), so they never win either.
	 */
}

bool stats_is_remat(const char *expr, const char *tf_op)
{
	const char *eq = strchr(expr, '=');
	size_t n = eq ? (size_t)(eq - expr) : strlen(expr);

	/* IsHloRematerialization(): ".remat" before the first '=' */
	if (memmem(expr, n, ".remat", 6))
		return true;
	return strstr(tf_op, "/rematted_computation/") != NULL;
}

/* ends() - @s ends with @suf. */
static bool ends(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);

	return n >= m && !strcmp(s + n - m, suf);
}

bool stats_is_outside_compilation(const char *tf_op, const char *expr)
{
	if (ends(tf_op, ":XlaSendToHost") || ends(tf_op, ":XlaRecvFromHost"))
		return true;
	return strstr(expr, "send-done") && strstr(expr, "is_host_transfer=true");
}

/* ---- the fields both views write ------------------------------------------ */

void stats_out_per_s(struct xs_out *o, const char *lit, bool has, double amount, int64_t ps)
{
	xs_out_opt_double(o, lit, has && ps > 0, amount / (double)ps * 1e12);
}

void stats_op_times_write(struct xs_out *o, const struct op *op, int64_t table_ps, double *cum)
{
	double occ = (double)op->occurrences;
	double frac = table_ps > 0 ? (double)op->self / (double)table_ps : 0;

	/* SetExecutionTimes(), in ps */
	xs_out_key_i64(o, ",\"occurrences\":", op->occurrences);
	xs_out_key_i64(o, ",\"total_time_ps\":", op->total);
	xs_out_opt_double(o, ",\"avg_time_ps\":", occ > 0, (double)op->total / occ);
	xs_out_key_i64(o, ",\"total_self_time_ps\":", op->self);
	xs_out_opt_double(o, ",\"avg_self_time_ps\":", occ > 0, (double)op->self / occ);
	/* SetRankAndTimeFractions() */
	*cum += frac;
	xs_out_opt_double(o, ",\"total_self_time_fraction\":", table_ps > 0, frac);
	xs_out_opt_double(o, ",\"cumulative_total_self_time_fraction\":", table_ps > 0, *cum);
}

void stats_roof_write(struct xs_out *o, const struct op *op, const struct stats_roof *f)
{
	double bytes = op->has_bytes ? op->bytes : 0;

	stats_out_per_s(o, ",\"measured_flops_per_s\":", op->has_flops, op->flops, op->total);
	stats_out_per_s(o, ",\"model_flops_per_s\":", op->has_model_flops, op->model_flops,
			op->total);
	stats_out_per_s(o, ",\"measured_memory_bytes_per_s\":", op->has_bytes, op->bytes,
			op->total);
	stats_out_per_s(o, ",\"hbm_bytes_per_s\":", op->has_bytes, op->bytes, op->total);
	xs_out_opt_double(o, ",\"operational_intensity\":", op->has_flops && bytes != 0,
			  f->intensity);
	xs_out_key_cstr(o, ",\"bound_by\":", f->bound);
	xs_out_opt_double(o, ",\"flops\":", op->has_flops, op->flops);
	xs_out_opt_double(o, ",\"model_flops\":", op->has_model_flops, op->model_flops);
	xs_out_opt_double(o, ",\"bytes_accessed\":", op->has_bytes, op->bytes);
}

void stats_opstats_env_write(struct xs_out *o, const struct stats_opstats *d)
{
	static const char *const hw[] = {"CPU", "GPU", "TPU"};

	OUT_LIT(o, "\"hardware_type\":");
	xs_out_cstr(o, hw[d->hw]);
	stats_out_opt_str(o, ",\"device_type\":", d->device_type);
	xs_out_key_i64(o, ",\"device_core_count\":", (int64_t)d->cores);
	xs_out_key_i64(o, ",\"device_planes\":", (int64_t)d->dev.planes);
	xs_out_opt_double(o, ",\"peak_flops_per_s\":", d->peak_flops > 0, d->peak_flops);
	xs_out_opt_double(o, ",\"peak_hbm_bytes_per_s\":", d->peak_bw > 0, d->peak_bw);
}

/* GigaToGibi() */
static double giga_to_gibi(double x)
{
	return x * 1e9 / 1073741824.0;
}

const char *stats_bound_by(double flops, double bytes, int64_t ps, double peak_flops,
			   double peak_bw, double *futil, double *butil, double *hbm_gibps)
{
	double ns = (double)ps / 1000.0;
	const char *bound = "Unknown";

	*futil = stats_safe_div(stats_safe_div(flops, ns), peak_flops / 1e9);
	*hbm_gibps = giga_to_gibi(stats_safe_div(bytes, ns));
	*butil = stats_safe_div(*hbm_gibps, giga_to_gibi(peak_bw / 1e9));
	if (*futil > 0)
		bound = "Compute";
	if (*butil > *futil)
		bound = "HBM";
	return bound;
}

void stats_out_kv(struct xs_out *o, const struct stats_kv *kv, size_t n, const char *tail,
		  const char *str)
{
	for (size_t i = 0; i < n; i++) {
		xs_out_add(o, kv[i].key, strlen(kv[i].key));
		xs_out_double(o, kv[i].v);
	}
	xs_out_add(o, tail, strlen(tail));
	xs_out_cstr(o, str);
	OUT_LIT(o, "}");
}

void stats_out_opt_str(struct xs_out *o, const char *lit, const char *s)
{
	xs_out_add(o, lit, strlen(lit));
	if (s)
		xs_out_cstr(o, s);
	else
		OUT_LIT(o, "null");
}
