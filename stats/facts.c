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
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "stats-internal.h"

/* The plane stats (TSL StatType names) kept as strings and as numbers. */
static const struct {
	const char *name;
	size_t off; /* of the char * */
} str_stats[] = {
	{"device_type_string", offsetof(struct stats_plane_facts, device_type)},
	{"device_vendor", offsetof(struct stats_plane_facts, vendor)},
	{"gpu_device_name", offsetof(struct stats_plane_facts, gpu_device_name)},
};
#define NUM_STAT(name, f, has)                                                                     \
	{                                                                                          \
		name, offsetof(struct stats_plane_facts, f),                                       \
			offsetof(struct stats_plane_facts, has)                                    \
	}
static const struct {
	const char *name;
	size_t off, has; /* of the double, of its bool (has == off: none) */
} num_stats[] = {
	NUM_STAT("peak_teraflops_per_second", peak_tflops, has_peak_tflops),
	NUM_STAT("peak_hbm_bw_gigabytes_per_second", peak_hbm_gbps, has_peak_hbm_gbps),
	NUM_STAT("memory_bandwidth", mem_bw, has_mem_bw),
	NUM_STAT("clock_rate", clock_khz, has_clock),
	NUM_STAT("core_count", core_count, has_core_count),
	NUM_STAT("compute_cap_major", cc_major, has_cc),
	NUM_STAT("compute_cap_minor", cc_minor, cc_minor),
};

/* facts_stat() - a xs_stat_fn: one plane stat into struct stats_plane_facts (by TSL StatType name). */
static int facts_stat(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s, void *arg)
{
	struct stats_plane_facts *f = arg;
	const struct xs_stmd *m;
	double d;
	int r;

	if ((r = xs_md_stat(rc, s->md, &m)) < 0)
		return r;
	for (size_t i = 0; i < sizeof(str_stats) / sizeof(str_stats[0]); i++) {
		char **v = (char **)((char *)f + str_stats[i].off);

		if (xs_str_eq(m->name, m->name_len, str_stats[i].name))
			return *v ? 0 : xs_stat_string(rc, c, s, v);
	}
	if (!xs_stat_number(s, &d))
		return 0;
	for (size_t i = 0; i < sizeof(num_stats) / sizeof(num_stats[0]); i++) {
		if (!xs_str_eq(m->name, m->name_len, num_stats[i].name))
			continue;
		*(double *)((char *)f + num_stats[i].off) = d;
		if (num_stats[i].has != num_stats[i].off)
			*(bool *)((char *)f + num_stats[i].has) = true;
		break;
	}
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
