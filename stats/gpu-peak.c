/*
 * gpu-peak.c - a GPU plane's peak FLOP/s from its device capabilities and
 * its model name, as XProf derives them (openxla/xprof
 * xprof/utils/cuda_type_utils.cc and rocm_type_utils.cc:
 * GetFlopMaxThroughputPerCore(), GpuModelName(); GetPerfEnvFromXPlane() in
 * xprof/convert/xplane_to_op_stats.cc multiplies by the core count): the
 * number of SMs (CUs) times the per-SM peak (the largest of the FP32 and
 * FP16 rates of the vector and matrix units, in FLOPs per cycle, times the
 * clock in GHz).
 *
 * Design: one table per vendor, holding only the per-cycle maximum of each
 * architecture (the four rates XProf takes the maximum of are its
 * whitepaper figures; the other precisions do not enter the peak). Inputs
 * are the plane stats GetDeviceCaps() reads: device_vendor ("Nvidia",
 * "AMD"), clock_rate (kHz), core_count, compute_cap_major/_minor and, for
 * AMD, gpu_device_name: used only when well formed ("gfx" and at least
 * three hex digits, nothing else: "gfx90a:sramecc+" and "AMD Instinct
 * MI300X" are not), else compute capability 9.4 / 9.5 name gfx942 / gfx950.
 * A plane's own peak_teraflops_per_second stat wins over the tables
 * (stats/facts.c), as GetPerfEnvFromXPlane() prefers it. Limits: an
 * unknown vendor or AMD architecture, a missing/non-positive clock or core
 * count, or a result that is not finite gives 0 (unknown); hostile values
 * (NaN, 2^64-1, negative) never reach an integer conversion.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
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

/*
 * FLOPs per CU per cycle, by gfx architecture (GetAmdFlopCapsPerCuPerCycle():
 * the maximum of its vector and matrix FP32/FP16 rates).
 */
static const struct {
	const char *gfx;
	double flops;
} amd[] = {
	{"gfx908", 1024}, /* CDNA 1 (MI100): matrix FP16 */
	{"gfx90a", 1024}, /* CDNA 2 (MI250X): matrix FP16 */
	{"gfx942", 2048}, /* CDNA 3 (MI300X): matrix FP16 */
	{"gfx950", 4096}, /* CDNA 4 (MI355X): matrix FP16 */
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

/* gfx_well_formed() - GfxVersionIfWellFormed(): "gfx" and >= 3 hex digits, nothing else. */
static bool gfx_well_formed(const char *s)
{
	size_t n;

	if (!s || strncmp(s, "gfx", 3))
		return false;
	n = strlen(s + 3);
	return n >= 3 && strspn(s + 3, "0123456789abcdefABCDEF") == n;
}

/*
 * amd_gfx() - ResolveAmdGfxVersion(): the device name when well formed,
 * else gfx942 / gfx950 for compute capability 9.4 / 9.5; NULL if neither.
 */
static const char *amd_gfx(const struct stats_plane_facts *f)
{
	if (gfx_well_formed(f->gpu_device_name))
		return f->gpu_device_name;
	if (f->cc_major == 9 && f->cc_minor == 4)
		return "gfx942";
	if (f->cc_major == 9 && f->cc_minor == 5)
		return "gfx950";
	return NULL;
}

/* amd_per_cycle() - the per-CU peak of @f's architecture; 0 if unknown. */
static double amd_per_cycle(const struct stats_plane_facts *f)
{
	const char *gfx = amd_gfx(f);

	for (size_t i = 0; gfx && i < sizeof(amd) / sizeof(amd[0]); i++)
		if (!strcmp(amd[i].gfx, gfx))
			return amd[i].flops;
	return 0;
}

int stats_gpu_model_name(const struct stats_plane_facts *f, char *buf, size_t cap)
{
	static const char *const nv[] = {
		[2] = "Fermi", [3] = "Kepler", [5] = "Maxwell", [6] = "Pascal",
		[7] = "Volta", [8] = "Ampere", [9] = "Hopper",  [10] = "Blackwell",
	};
	const char *gfx, *arch = NULL;
	int major = f->has_cc && isfinite(f->cc_major) && fabs(f->cc_major) < 1e9 ? (int)f->cc_major
										  : 0;
	int r;

	if (!f->vendor)
		r = snprintf(buf, cap, "%s", "");
	else if (!strcmp(f->vendor, "Nvidia")) {
		if (major >= 0 && major < (int)(sizeof(nv) / sizeof(nv[0])))
			arch = nv[major];
		if (major == 7 && f->cc_minor >= 5)
			arch = "Turing";
		if (major == 8 && f->cc_minor >= 9)
			arch = "Ada Lovelace";
		r = arch ? snprintf(buf, cap, "Nvidia GPU (%s)", arch)
			 : snprintf(buf, cap, "Nvidia GPU");
	} else if (!strcmp(f->vendor, "AMD")) {
		if ((gfx = amd_gfx(f)))
			r = snprintf(buf, cap, "AMD GPU - %s", gfx);
		else if (major >= 9 && major <= 11)
			r = snprintf(buf, cap, "AMD GPU - gfx-%dXX series", major);
		else
			r = snprintf(buf, cap, "AMD GPU");
	} else {
		r = snprintf(buf, cap, "%s", "");
	}
	return r < 0 || (size_t)r >= cap ? -ENAMETOOLONG : 0;
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
