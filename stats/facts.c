/*
 * facts.c - what the analyses read from a plane's own stats: the device
 * description and its peak rates (TSL StatType names: device_type_string,
 * peak_teraflops_per_second, peak_hbm_bw_gigabytes_per_second,
 * memory_bandwidth, and the GPU capabilities gpu-peak.c turns into a peak
 * FLOP/s). docs/stats.md lists the rules.
 *
 * Limits: a peak rate is used only when positive and finite; a hostile 0,
 * -1 or NaN reads as unknown (0).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stats-internal.h"

/* facts_stat() - a xs_stat_fn: one plane stat into struct stats_plane_facts (by TSL StatType name). */
static int facts_stat(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s, void *arg)
{
	struct stats_plane_facts *f = arg;
	const struct xs_stmd *m;
	double d;
	int r;

	if ((r = xs_md_stat(rc, s->md, &m)) < 0)
		return r;
	if (xs_str_eq(m->name, m->name_len, "device_type_string") && !f->device_type)
		return xs_stat_string(rc, c, s, &f->device_type);
	if (xs_str_eq(m->name, m->name_len, "device_vendor") && !f->vendor)
		return xs_stat_string(rc, c, s, &f->vendor);
	if (xs_str_eq(m->name, m->name_len, "gpu_device_name") && !f->gpu_device_name)
		return xs_stat_string(rc, c, s, &f->gpu_device_name);
	if (!xs_stat_number(s, &d))
		return 0;
	if (xs_str_eq(m->name, m->name_len, "peak_teraflops_per_second"))
		f->peak_tflops = d, f->has_peak_tflops = true;
	else if (xs_str_eq(m->name, m->name_len, "peak_hbm_bw_gigabytes_per_second"))
		f->peak_hbm_gbps = d, f->has_peak_hbm_gbps = true;
	else if (xs_str_eq(m->name, m->name_len, "memory_bandwidth"))
		f->mem_bw = d, f->has_mem_bw = true;
	else if (xs_str_eq(m->name, m->name_len, "clock_rate"))
		f->clock_khz = d, f->has_clock = true;
	else if (xs_str_eq(m->name, m->name_len, "core_count"))
		f->core_count = d, f->has_core_count = true;
	else if (xs_str_eq(m->name, m->name_len, "compute_cap_major"))
		f->cc_major = d, f->has_cc = true;
	else if (xs_str_eq(m->name, m->name_len, "compute_cap_minor"))
		f->cc_minor = d;
	return 0;
}

int stats_plane_facts_get(struct xs_rctx *rc, size_t pi, struct stats_plane_facts *f)
{
	int r;

	memset(f, 0, sizeof(*f));
	if ((r = xs_walk_plane_stats(rc, pi, facts_stat, f)) < 0) {
		stats_plane_facts_clear(f);
		return r;
	}
	/* peak rates are used only when positive and finite (a hostile 0 or -1 is "unknown") */
	f->peak_flops = f->has_peak_tflops && f->peak_tflops > 0 ? f->peak_tflops * 1e12 : 0;
	if (f->has_peak_hbm_gbps && f->peak_hbm_gbps > 0)
		f->peak_bw = f->peak_hbm_gbps * 1e9;
	else if (f->has_mem_bw && f->mem_bw > 0)
		f->peak_bw = f->mem_bw;
	/*
	 * GPU planes: GetPerfEnvFromXPlane() prefers the plane's own positive
	 * peak_teraflops_per_second, else derives it from the capabilities
	 * (gpu-peak.c)
	 */
	if (xs_plane_is_gpu(&rc->x->planes[pi]) && f->peak_flops <= 0)
		f->peak_flops = stats_gpu_peak_flops(f);
	if (!isfinite(f->peak_flops))
		f->peak_flops = 0;
	if (!isfinite(f->peak_bw))
		f->peak_bw = 0;
	return 0;
}

void stats_plane_facts_clear(struct stats_plane_facts *f)
{
	free(f->device_type);
	free(f->vendor);
	free(f->gpu_device_name);
	memset(f, 0, sizeof(*f));
}
