/*
 * gpu-peak.c - a GPU plane's peak FLOP/s from its device capabilities, as
 * XProf derives it (xprof/utils/hardware_type_utils.cc,
 * GetFlopMaxThroughputPerSM(), and GetPerfEnvFromXPlane() in
 * xplane_to_op_stats.cc): the number of SMs (CUs) times the per-SM peak
 * (the largest of the FP32 and FP16 rates of the vector and matrix units,
 * in FLOPs per cycle, times the clock in GHz).
 *
 * Design: one table per vendor, holding only the per-cycle maximum of each
 * architecture (the four rates XProf takes the maximum of are its
 * whitepaper figures; the other precisions do not enter the peak). Inputs
 * are the plane stats GetDeviceCaps() reads: device_vendor ("Nvidia",
 * "AMD"), clock_rate (kHz), core_count, compute_cap_major/_minor and, for
 * AMD, gpu_device_name ("gfx942:..."). Limits: an unknown vendor or AMD
 * architecture, a missing/non-positive clock or core count, or a result
 * that is not finite gives 0 (unknown); hostile values (NaN, 2^64-1,
 * negative) never reach an integer conversion.
 */
#include <math.h>
#include <string.h>

#include "stats-internal.h"

/* FLOPs per SM per cycle, by normalized compute capability (major * 1000 + minor * 10). */
static const struct {
	double cc, flops;
} nvidia[] = {
	{2000, 64},   /* 2.0: vector FP32 */
	{3000, 384},  /* 3.0: vector FP32 */
	{5000, 256},  /* 5.0: vector FP32 */
	{6000, 256},  /* 6.0: vector FP16 */
	{6010, 256},  /* 6.1: vector FP32 */
	{7000, 1024}, /* 7.0: matrix FP16 */
	{7050, 1024}, /* 7.5: matrix FP16 */
	{8000, 2048}, /* 8.0: matrix FP16 */
	{8060, 1024}, /* 8.6: matrix FP16 */
	{8090, 1024}, /* 8.9: matrix FP16 */
	{9000, 4096}, /* 9.0: matrix FP16 */
	{10000, 8192} /* 10.0: matrix FP16 */
};

/* FLOPs per CU per cycle, by gfx architecture (GetAmdFlopCapsPerCuPerCycle()). */
static const struct {
	const char *gfx;
	double flops;
} amd[] = {
	{"gfx908", 1024}, /* CDNA 1: matrix FP16 */
	{"gfx90a", 2048}, /* CDNA 2: matrix FP16 */
	{"gfx942", 2048}, /* CDNA 3: matrix FP16 */
	{"gfx950", 4096}, /* CDNA 4: matrix FP16 */
};

/*
 * nvidia_per_cycle() - GetNvidiaFlopCapsPerSMPerCycle(): the entry of the
 * highest capability not above @major.@minor, else the oldest one.
 */
static double nvidia_per_cycle(double major, double minor)
{
	double cc = major * 1000 + minor * 10;
	size_t n = sizeof(nvidia) / sizeof(nvidia[0]), k = 0;

	for (size_t i = 0; i < n; i++)
		if (nvidia[i].cc <= cc) /* false for NaN: the oldest entry */
			k = i;
	return nvidia[k].flops;
}

/*
 * amd_per_cycle() - ResolveAmdGfxVersion(): the device name up to its first
 * ':', else gfx942 / gfx950 for compute capability 9.4 / 9.5; 0 if unknown.
 */
static double amd_per_cycle(const struct stats_plane_facts *f)
{
	const char *gfx = NULL;
	size_t len = 0;

	if (f->gpu_device_name && f->gpu_device_name[0]) {
		gfx = f->gpu_device_name;
		len = strcspn(gfx, ":");
	} else if (f->cc_major == 9 && f->cc_minor == 4) {
		gfx = "gfx942";
	} else if (f->cc_major == 9 && f->cc_minor == 5) {
		gfx = "gfx950";
	}
	if (gfx && !len)
		len = strlen(gfx);
	for (size_t i = 0; gfx && i < sizeof(amd) / sizeof(amd[0]); i++)
		if (strlen(amd[i].gfx) == len && !memcmp(amd[i].gfx, gfx, len))
			return amd[i].flops;
	return 0;
}

double stats_gpu_peak_flops(const struct stats_plane_facts *f)
{
	double per_cycle = 0, peak;

	if (!f->vendor || !f->has_clock || !f->has_core_count)
		return 0;
	if (!strcmp(f->vendor, "Nvidia"))
		per_cycle = nvidia_per_cycle(f->cc_major, f->cc_minor);
	else if (!strcmp(f->vendor, "AMD"))
		per_cycle = amd_per_cycle(f);
	/* per-SM GFLOP/s = per cycle x clock_rate (kHz) / 1e6; x cores; x 1e9 */
	peak = per_cycle * (f->clock_khz / 1e6) * f->core_count * 1e9;
	return isfinite(peak) && peak > 0 && f->clock_khz > 0 && f->core_count > 0 ? peak : 0;
}
