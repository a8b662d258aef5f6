/*
 * meta.c - a plane's metadata: event metadata per class, interned strings,
 * stat metadata and plane stats, built in a bounded buffer.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gen.h"

/* ---- metadata ---------------------------------------------------------- */

static const char *const sm_names[SM_COUNT] = {
	NULL,
	"step_num",
	"group_id",
	"correlation_id",
	"tf_op",
	"hlo_op",
	"hlo_module",
	"program_id",
	"hlo_category",
	"flops",
	"model_flops",
	"bytes_accessed",
	"shape_with_layout",
	"source",
	"kernel_details",
	"memcpy_details",
	"device_offset_ps",
	"device_duration_ps",
	"value",
	"run_id",
	"clock_rate",
	"peak_teraflops_per_second",
	"peak_hbm_bw_gigabytes_per_second",
	"device_vendor",
	"core_count",
	"memory_bandwidth",
	"memory_size",
	"compute_cap_major",
	"compute_cap_minor",
	"device_type_string",
	"step_name",
	"flow",
	"_a",
	"source_stack",
	"allocator_name",
	"index_on_host",
	"bytes_reserved",
	"bytes_allocated",
	"bytes_available",
	"fragmentation",
	"peak_bytes_in_use",
	"requested_bytes",
	"allocation_bytes",
	"addr",
	"region_type",
	"data_type",
	"shape",
	"_c",
	"_ct",
	"_p",
	"_pt",
};

/* Appends a map<int64, message> entry {1: @key, 2: @val} as field @field (borrows @val). */
static void pb_map_entry(struct pb *out, unsigned field, int64_t key, const struct pb *val)
{
	pb_tag(out, field, WT_LEN);
	pb_varint(out, 1 + varint_size((uint64_t)key) + ld_size(2, val->len));
	pb_int(out, 1, (uint64_t)key);
	pb_bytes(out, 2, val->p, val->len);
}

/* Name of interned string @i of class @c. */
static void si_name(const struct gplane *p, int c, uint32_t i, char *dst, size_t n)
{
	struct rng r = {seed_of(p->seed, 0x5349 + (uint64_t)c, i)};

	switch (c) {
	case SI_KERNEL_DETAILS: {
		/* draws in a fixed order (a call's arguments have none): the last value first */
		unsigned mem = (unsigned)rng_below(&r, 65536) & ~127u;
		unsigned gy = 1u + (unsigned)rng_below(&r, 128);

		snprintf(dst, n, " grid:%u,%u,1 block:256,1,1 private_mem:0 group_mem:%u occ_pct:0",
			 1u << rng_below(&r, 15), gy, mem);
		break;
	}
	case SI_TF_OP:
		snprintf(dst, n, "jit(%s)/jit(main)/%s/%s", gen_module_names[i % N_MODULES] + 4,
			 gen_py_funcs[rng_below(&r, N_PY_FUNCS)], gen_opcodes[i % N_OPCODES].op);
		break;
	case SI_HLO_OP:
		/* some kernels run inside a fusion: "outer::inner", as XLA GPU annotates them */
		if (i % 5 == 4)
			snprintf(dst, n, "fusion.%u::%s.%u", i / 5, gen_opcodes[i % N_OPCODES].op,
				 i);
		else
			snprintf(dst, n, "%s.%u", gen_opcodes[i % N_OPCODES].op, i);
		break;
	case SI_HLO_MODULE:
		snprintf(dst, n, "%s", gen_module_names[i % N_MODULES]);
		break;
	}
}

/*
 * Writes event metadata @id (class @c, index @i) as a map entry of field 4.
 * Long (~120 lines) because it is one switch over the metadata classes whose
 * RNG draws must stay in this order: splitting it would hide that order.
 */
static void em_entry(const struct gspace *s, const struct gplane *p, struct pb *out, struct pb *val,
		     int c, uint32_t i)
{
	static const char *const regions[] = {
		[REGION_RECORD - REGION_RECORD] = "ThreadpoolListener::Record",
		[REGION_START - REGION_RECORD] = "ThreadpoolListener::StartRegion",
		[REGION_STOP - REGION_RECORD] = "ThreadpoolListener::StopRegion",
	};
	struct rng r = {seed_of(p->seed, 0x454d + (uint64_t)c, i)};
	int64_t id = (int64_t)(p->em_base[c] + i);
	char name[1024], disp[NAME_MAX_LEN] = "", shape[96];

	val->len = 0;
	val->err = 0;
	pb_int(val, 1, (uint64_t)id);
	switch (c) {
	case EM_MODULE:
		gen_module_name(i, name, sizeof(name));
		pb_str(val, 2, name);
		if (p->kind == P_HOSTMETA) {
			static uint8_t hp[GEN_HLO_PROTO_MAX];
			size_t n = gen_hlo_proto(gen_module_names[i % N_MODULES],
						 gen_program_id_of(i), false, hp, sizeof(hp));

			pb_stat(val, 5, 1, ST_BYTES, 0, 0, hp, n);
		}
		break;
	case EM_OP: {
		const struct opcode *oc = &gen_opcodes[i % N_OPCODES];
		/* per execution: 64 KFLOP .. 1 TFLOP, 4 KB .. 4 GB, spread over the ops */
		uint64_t flops = (uint64_t)((double)(UINT64_C(1) << (16 + (i * 7) % 24)) *
					    rng_range(&r, 0.5, 1.5));
		uint64_t bytes = (uint64_t)((double)(UINT64_C(1) << (12 + (i * 5) % 20)) *
					    rng_range(&r, 0.5, 1.5));

		gen_shape_text(&r, shape, sizeof(shape));
		snprintf(disp, sizeof(disp), "%s.%u", oc->op, i);
		if (!strcmp(oc->op, "fusion"))
			snprintf(name, sizeof(name),
				 "%%%s = %s fusion(%s %%param.%u, %s %%param.%u), kind=k%s, "
				 "calls=%%fused_computation.%u",
				 disp, shape, shape, i, shape, i + 1,
				 strstr(oc->category, "loop") ? "Loop" : "Output", i);
		else
			snprintf(name, sizeof(name),
				 "%%%s = %s %s(%s %%p.%u), "
				 "metadata={op_name=\"jit(train_step)/%s\"}",
				 disp, shape, oc->op, shape, i, oc->op);
		pb_str(val, 2, name);
		pb_str(val, 4, disp);
		stat_s(val, 5, SM_HLO_CATEGORY, oc->category);
		stat_u(val, 5, SM_PROGRAM_ID, ST_U64, gen_program_id_of(i % N_MODULES));
		stat_u(val, 5, SM_FLOPS, ST_I64, flops);
		stat_u(val, 5, SM_MODEL_FLOPS, ST_I64, flops / 2);
		stat_u(val, 5, SM_BYTES_ACCESSED, ST_I64, bytes);
		stat_s(val, 5, SM_SHAPE_WITH_LAYOUT, shape);
		{
			char src[96];

			snprintf(src, sizeof(src), "%s:%u", gen_py_files[i % N_PY_FILES],
				 20 + i % 400);
			stat_s(val, 5, SM_SOURCE, src);
		}
		snprintf(name, sizeof(name), "jit(%s)/jit(main)/%s",
			 gen_module_names[i % N_MODULES] + 4, oc->op);
		stat_s(val, 5, SM_TF_OP, name);
		/* fusions list the ops they call (keys in this same map) */
		if (!strcmp(oc->op, "fusion") && p->em_n[EM_OP] > 2) {
			pb_int(val, 6, p->em_base[EM_OP] + (i + 1) % p->em_n[EM_OP]);
			pb_int(val, 6, p->em_base[EM_OP] + (i + 2) % p->em_n[EM_OP]);
		}
		break;
	}
	case EM_ASYNC: {
		static const char *const aops[] = {
			"all-gather-start", "all-gather-done",          "copy-start",
			"copy-done",        "collective-permute-start", "send",
			"recv-done"};
		const char *op = aops[i % 7];

		gen_shape_text(&r, shape, sizeof(shape));
		snprintf(disp, sizeof(disp), "%s.%u", op, i);
		snprintf(name, sizeof(name), "%%%s = (%s, u32[]) %s(%s %%p.%u)", disp, shape, op,
			 shape, i);
		pb_str(val, 2, name);
		pb_str(val, 4, disp);
		stat_s(val, 5, SM_HLO_CATEGORY, "async");
		break;
	}
	case EM_TRACEME:
		pb_str(val, 2, gen_traceme_names[i % (N_TRACEME)]);
		break;
	case EM_STEP:
		snprintf(name, sizeof(name), "%u", i);
		pb_str(val, 2, name);
		break;
	case EM_COUNTER:
		pb_str(val, 2, gen_counter_names[i % (N_COUNTERS)]);
		break;
	case EM_KERNEL: {
		/* "%u" in a kernel name form stands for the kernel's index */
		const char *form = gen_kernel_names[i % N_KERNEL_FORMS], *pct = strstr(form, "%u");

		if (pct)
			snprintf(name, sizeof(name), "%.*s%u%s", (int)(pct - form), form, i,
				 pct + 2);
		else
			snprintf(name, sizeof(name), "%s", form);
		pb_str(val, 2, name);
		break;
	}
	case EM_MEMCPY: {
		static const char *const mc[] = {"MemcpyH2D", "MemcpyD2H", "MemcpyD2D", "Memset"};

		pb_str(val, 2, mc[i % 4]);
		break;
	}
	case EM_HOST:
		if ((s->flags & GEN_REGIONS) && i >= REGION_RECORD && i <= REGION_STOP)
			snprintf(name, sizeof(name), "%s", regions[i - REGION_RECORD]);
		else if (i < N_HOST_FIXED)
			snprintf(name, sizeof(name), "%s", gen_host_names[i]);
		else
			snprintf(name, sizeof(name), "$%s:%u %s", gen_py_files[i % N_PY_FILES],
				 10 + i, gen_py_funcs[(i / N_PY_FILES) % N_PY_FUNCS]);
		pb_str(val, 2, name);
		break;
	case EM_MEMORY:
		pb_str(val, 2, i ? "MemoryDeallocation" : "MemoryAllocation");
		break;
	}
	if (!val->err)
		pb_map_entry(out, 4, id, val);
}

static void sm_entry(struct pb *out, struct pb *val, int64_t id, const char *name)
{
	val->len = 0;
	pb_int(val, 1, (uint64_t)id);
	pb_str(val, 2, name);
	if (!val->err)
		pb_map_entry(out, 5, id, val);
}

/*
 * Encodes the plane's fields after its lines (event_metadata, stat_metadata,
 * plane stats), appending to @meta (borrowed; bounded by its max).
 */
int gen_plane_meta(const struct gspace *s, const struct gplane *p, struct pb *meta)
{
	struct pb val;
	char name[256];
	int ret;

	pb_init(&val, SCRATCH_BYTES);
	for (int c = 0; c < EM_COUNT; c++)
		for (uint32_t i = 0; i < p->em_n[c]; i++)
			em_entry(s, p, meta, &val, c, i);
	switch (p->kind) {
	case P_HOSTMETA:
		sm_entry(meta, &val, 1, "Hlo Proto");
		break;
	case P_TASKENV:
		sm_entry(meta, &val, 1, "profile_start_time");
		sm_entry(meta, &val, 2, "profile_stop_time");
		stat_u(meta, 6, 1, ST_U64, (uint64_t)WALL_START_NS);
		stat_u(meta, 6, 2, ST_U64,
		       (uint64_t)(WALL_START_NS + s->span_ps / 1000 + 200000000));
		break;
	default:
		for (int i = 1; i < SM_COUNT; i++)
			if ((i != SM_GROUP_ID || !(s->flags & GEN_UNGROUPED)) &&
			    (i < SM_C || (s->flags & GEN_REGIONS)))
				sm_entry(meta, &val, i, sm_names[i]);
		for (int c = 0; c < SI_COUNT; c++)
			for (uint32_t i = 0; i < p->si_n[c]; i++) {
				si_name(p, c, i, name, sizeof(name));
				sm_entry(meta, &val, p->si_base[c] + i, name);
			}
		if (p->kind == P_TPU) {
			stat_s(meta, 6, SM_DEVICE_TYPE_STRING, "TPU v6 lite");
			stat_u(meta, 6, SM_CLOCK_RATE, ST_U64, 1750000000);
			pb_stat(meta, 6, SM_PEAK_TFLOPS, ST_DOUBLE, 0, 918.0, NULL, 0);
			pb_stat(meta, 6, SM_PEAK_HBM_BW, ST_DOUBLE, 0, 1640.0, NULL, 0);
			stat_u(meta, 6, SM_CORE_COUNT, ST_U64, 1);
		} else if (p->kind == P_GPU) {
			stat_s(meta, 6, SM_DEVICE_VENDOR, "AMD");
			stat_u(meta, 6, SM_CLOCK_RATE, ST_U64, 2100000);
			stat_u(meta, 6, SM_CORE_COUNT, ST_U64, 304);
			stat_u(meta, 6, SM_MEMORY_BANDWIDTH, ST_U64, UINT64_C(5300000000000));
			stat_u(meta, 6, SM_MEMORY_SIZE, ST_U64, UINT64_C(206141652992));
		}
		break;
	}
	ret = val.err ? val.err : meta->err;
	pb_deinit(&val);
	return ret;
}
