/*
 * xprofs-gen - writes realistic XSpace profiles (*.xplane.pb) of any size,
 * and small demo log directories, as an independent oracle for the decoder.
 *
 * Design:
 * - Its own tiny protobuf wire encoder (varint, fixed64, length-delimited);
 *   it deliberately shares no code with decode/, so a bug in one cannot
 *   hide the same bug in the other.
 * - Output streams in constant memory. A protobuf message needs its length
 *   before its body, so each plane is written in two passes over the same
 *   seeded per-line RNG: a counting pass sizes every line (events are encoded
 *   one at a time into a small scratch buffer and only their sizes kept),
 *   then a writing pass regenerates the identical events and emits them. A
 *   plane's metadata maps do not grow with the event count; they are built
 *   in a bounded buffer. Memory is O(lines + metadata), never O(events).
 * - Everything is a pure function of (--seed, --kind, size, host index): the
 *   same arguments give the same bytes.
 * - The shapes follow the shared samples (TPU v6e and MI300 GPU JAX
 *   profiles): device planes with Steps / XLA Modules / XLA Ops / Async XLA
 *   Ops / _counters_ lines or GPU "Stream #n(...)" lines, a /host:CPU plane
 *   with many thread lines of nested framework events, /host:metadata with
 *   one "Hlo Proto" per module, and Task Environment with the wall-clock
 *   profile_start_time / profile_stop_time.
 * - Events on one line are sorted by offset, may nest, and never overlap
 *   (a child lies inside its parent; a sibling starts after the previous
 *   one ends).
 *
 * Limits: at most MAX_LINES lines per plane and MAX_META_BYTES of metadata
 * per plane; --size is approximate (the event count is calibrated on a small
 * counting run, so the result is usually within a few percent).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xprofs/util.h"

#define MAX_PLANES 24
#define MAX_LINES 3000 /* host thread lines; device planes have 8 */
#define MAX_DEPTH 6
#define MAX_META_BYTES (64u << 20)
#define SCRATCH_BYTES (64u << 10)
#define OUT_BUF_BYTES (1u << 20)
#define NAME_MAX_LEN 128
#define MAX_HOSTS 256
#define MAX_EVENTS (UINT64_C(1) << 40)

/* 2026-11-21 10:00:00 UTC: profile wall-clock start of every generated file. */
#define WALL_START_NS (INT64_C(1795255200) * 1000000000)
/* XProf's derived line ids start at 0xdeadbeef read as a signed int32. */
#define DERIVED_LINE_ID INT64_C(-559038737)

/* ---- protobuf wire encoder -------------------------------------------- */

/*
 * An append-only encoder that grows up to @max; the first overflow sets @err
 * to -E2BIG (sticky) so callers check once at the end of a message.
 */
struct pb {
	uint8_t *p;
	size_t len, cap, max;
	int err;
};

static void pb_init(struct pb *b, size_t max)
{
	memset(b, 0, sizeof(*b));
	b->max = max;
}

static void pb_deinit(struct pb *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

static void pb_put(struct pb *b, const void *src, size_t n)
{
	if (b->err)
		return;
	if (n > b->max - b->len) {
		b->err = -E2BIG;
		return;
	}
	if (b->len + n > b->cap) {
		size_t c = b->cap ? b->cap : 4096;
		uint8_t *np;

		while (c < b->len + n)
			c *= 2;
		if (c > b->max)
			c = b->max;
		np = realloc(b->p, c);
		if (!np) {
			b->err = -ENOMEM;
			return;
		}
		b->p = np;
		b->cap = c;
	}
	memcpy(b->p + b->len, src, n);
	b->len += n;
}

static size_t varint_size(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static size_t varint_encode(uint8_t *dst, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		dst[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	dst[n++] = (uint8_t)v;
	return n;
}

static void pb_varint(struct pb *b, uint64_t v)
{
	uint8_t tmp[10];

	pb_put(b, tmp, varint_encode(tmp, v));
}

enum { WT_VARINT = 0, WT_FIXED64 = 1, WT_LEN = 2 };

static void pb_tag(struct pb *b, unsigned field, unsigned wt)
{
	pb_varint(b, (uint64_t)field << 3 | wt);
}

/* int64 fields are plain varints: negatives take ten bytes (two's complement). */
static void pb_int(struct pb *b, unsigned field, uint64_t v)
{
	pb_tag(b, field, WT_VARINT);
	pb_varint(b, v);
}

static void pb_double(struct pb *b, unsigned field, double d)
{
	uint8_t tmp[8];
	uint64_t u;

	memcpy(&u, &d, sizeof(u));
	for (int i = 0; i < 8; i++)
		tmp[i] = (uint8_t)(u >> (8 * i));
	pb_tag(b, field, WT_FIXED64);
	pb_put(b, tmp, sizeof(tmp));
}

static void pb_bytes(struct pb *b, unsigned field, const void *p, size_t n)
{
	pb_tag(b, field, WT_LEN);
	pb_varint(b, n);
	pb_put(b, p, n);
}

static void pb_str(struct pb *b, unsigned field, const char *s)
{
	pb_bytes(b, field, s, strlen(s));
}

/* Size on the wire of a length-delimited field with a @n byte body. */
static uint64_t ld_size(unsigned field, uint64_t n)
{
	return varint_size((uint64_t)field << 3) + varint_size(n) + n;
}

/* ---- XStat ------------------------------------------------------------- */

enum stat_kind { ST_DOUBLE = 2, ST_U64 = 3, ST_I64 = 4, ST_STR = 5, ST_BYTES = 6, ST_REF = 7 };

/* Appends one XStat as field @field of the enclosing message (borrows @s). */
static void pb_stat(struct pb *b, unsigned field, int64_t mdid, enum stat_kind k, uint64_t u,
		    double d, const void *s, size_t slen)
{
	uint64_t body = 1 + varint_size((uint64_t)mdid);

	switch (k) {
	case ST_DOUBLE:
		body += 1 + 8;
		break;
	case ST_STR:
	case ST_BYTES:
		body += ld_size(k, slen);
		break;
	default:
		body += 1 + varint_size(u);
		break;
	}
	pb_tag(b, field, WT_LEN);
	pb_varint(b, body);
	pb_int(b, 1, (uint64_t)mdid);
	switch (k) {
	case ST_DOUBLE:
		pb_double(b, 2, d);
		break;
	case ST_STR:
	case ST_BYTES:
		pb_bytes(b, k, s, slen);
		break;
	default:
		pb_int(b, k, u);
		break;
	}
}

static void stat_u(struct pb *b, unsigned field, int64_t mdid, enum stat_kind k, uint64_t v)
{
	pb_stat(b, field, mdid, k, v, 0, NULL, 0);
}

static void stat_s(struct pb *b, unsigned field, int64_t mdid, const char *s)
{
	pb_stat(b, field, mdid, ST_STR, 0, 0, s, strlen(s));
}

/* ---- deterministic RNG (splitmix64) ----------------------------------- */

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

struct rng {
	uint64_t s;
};

static uint64_t rng_next(struct rng *r)
{
	r->s += UINT64_C(0x9e3779b97f4a7c15);
	return mix64(r->s);
}

/* Uniform in [0, n); n == 0 gives 0. */
static uint64_t rng_below(struct rng *r, uint64_t n)
{
	return n ? rng_next(r) % n : 0;
}

/* Uniform in [0, 1). */
static double rng_unit(struct rng *r)
{
	return (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

static double rng_range(struct rng *r, double lo, double hi)
{
	return lo + (hi - lo) * rng_unit(r);
}

/* Skewed pick in [0, n): low indices are much more frequent, like hot ops. */
static uint64_t rng_skewed(struct rng *r, uint64_t n)
{
	double u = rng_unit(r);

	return n ? (uint64_t)((double)n * u * u * u) % n : 0;
}

static uint64_t seed_of(uint64_t a, uint64_t b, uint64_t c)
{
	return mix64(mix64(mix64(a) ^ b) ^ (c * UINT64_C(0x2545f4914f6cdd1d)));
}

/* ---- the model: planes, lines, metadata ------------------------------- */

enum kind { KIND_TPU, KIND_GPU, KIND_CPU };
static const char *const kind_names[] = {"tpu", "gpu", "cpu"};

enum plane_kind { P_TPU, P_GPU, P_HOST, P_HOSTMETA, P_TASKENV };

enum line_kind {
	L_STEPS, L_MODULES, L_OPS, L_ASYNC, L_TRACEME, L_COUNTERS, L_EMPTY,
	L_KERNEL, L_MEMCPY, L_HOST,
};

/* Event metadata classes; each owns a contiguous id range in its plane. */
enum em_class { EM_MODULE, EM_OP, EM_ASYNC, EM_TRACEME, EM_STEP, EM_COUNTER, EM_KERNEL,
		EM_MEMCPY, EM_HOST, EM_COUNT };

/* Interned strings (targets of ref_value stats), ids from SI_BASE up. */
enum si_class { SI_KERNEL_DETAILS, SI_TF_OP, SI_HLO_OP, SI_HLO_MODULE, SI_COUNT };
#define SI_BASE 1000

/* Fixed stat metadata ids of device and host planes. */
enum {
	SM_STEP_NUM = 1, SM_GROUP_ID, SM_CORRELATION_ID, SM_TF_OP, SM_HLO_OP, SM_HLO_MODULE,
	SM_PROGRAM_ID, SM_HLO_CATEGORY, SM_FLOPS, SM_MODEL_FLOPS, SM_BYTES_ACCESSED,
	SM_SHAPE_WITH_LAYOUT, SM_SOURCE, SM_KERNEL_DETAILS, SM_MEMCPY_DETAILS,
	SM_DEVICE_OFFSET_PS, SM_DEVICE_DURATION_PS, SM_VALUE, SM_RUN_ID, SM_CLOCK_RATE,
	SM_PEAK_TFLOPS, SM_PEAK_HBM_BW, SM_DEVICE_VENDOR, SM_CORE_COUNT, SM_MEMORY_BANDWIDTH,
	SM_MEMORY_SIZE, SM_COMPUTE_CAP_MAJOR, SM_COMPUTE_CAP_MINOR, SM_DEVICE_TYPE_STRING,
	SM_STEP_NAME, SM_FLOW, SM_A, SM_SOURCE_STACK, SM_COUNT
};
static const char *const sm_names[SM_COUNT] = {
	NULL, "step_num", "group_id", "correlation_id", "tf_op", "hlo_op", "hlo_module",
	"program_id", "hlo_category", "flops", "model_flops", "bytes_accessed",
	"shape_with_layout", "source", "kernel_details", "memcpy_details",
	"device_offset_ps", "device_duration_ps", "value", "run_id", "clock_rate",
	"peak_teraflops_per_second", "peak_hbm_bw_gigabytes_per_second", "device_vendor",
	"core_count", "memory_bandwidth", "memory_size", "compute_cap_major",
	"compute_cap_minor", "device_type_string", "step_name", "flow", "_a", "source_stack",
};

struct gline {
	int64_t id, display_id;
	char name[NAME_MAX_LEN];
	char display_name[NAME_MAX_LEN];
	enum line_kind kind;
	int64_t timestamp_ns;
	uint64_t events;
	uint64_t seed;
	double weight;      /* share of the events, while planning */
	uint64_t body_size; /* set by the sizing pass */
};

struct gplane {
	int64_t id;
	char name[NAME_MAX_LEN];
	enum plane_kind kind;
	uint64_t seed;
	int index;         /* device index (stream ids, vendor names) */
	uint32_t em_base[EM_COUNT], em_n[EM_COUNT];
	uint32_t si_base[SI_COUNT], si_n[SI_COUNT];
	uint32_t n_stat_meta, n_plane_stats;
	size_t n_lines, max_lines;
	struct gline *lines; /* owned; max_lines entries */
};

struct gspace {
	enum kind kind;
	uint64_t seed;
	char host[NAME_MAX_LEN];
	int64_t span_ps;
	uint64_t events;
	uint64_t steps; /* training steps: group_id of every event */
	size_t n_planes;
	struct gplane planes[MAX_PLANES];
};

/* ---- names ------------------------------------------------------------- */

struct opcode { const char *op, *category; };
static const struct opcode opcodes[] = {
	{"fusion", "loop fusion"},        {"fusion", "output fusion"},
	{"convolution", "convolution"},   {"fusion", "convolution fusion"},
	{"dot", "convolution"},           {"all-reduce", "all-reduce"},
	{"all-gather", "all-gather"},     {"reduce-scatter", "reduce-scatter"},
	{"copy", "data formatting"},      {"transpose", "data formatting"},
	{"add", "non-fusion elementwise"}, {"multiply", "non-fusion elementwise"},
	{"reduce", "reduce"},             {"custom-call", "custom-call"},
	{"broadcast", "non-fusion elementwise"}, {"bitcast", "data formatting"},
};
#define N_OPCODES (sizeof(opcodes) / sizeof(opcodes[0]))

static const char *const module_names[] = {
	"jit_train_step", "jit_eval_step", "jit__normal", "jit_convert_element_type",
	"jit_forward", "jit__threefry_split", "jit_apply_gradients", "jit_init",
	"jit_broadcast_in_dim", "jit__psum", "jit_loss_fn", "jit_update",
};
#define N_MODULES (sizeof(module_names) / sizeof(module_names[0]))

static const char *const host_names[] = {
	"PjitFunction(train_step)", "PjRtStreamExecutorLoadedExecutable::Execute",
	"ThunkExecutor::Execute", "TfrtCpuExecutable::ExecuteHelper", "np.asarray",
	"device_put", "BufferFromPyval", "TransferToInfeed", "hipModuleLaunchKernel",
	"cudaLaunchKernel", "hipMemcpyWithStream", "cuStreamSynchronize",
	"DistributedRuntimeClient::WaitAtBarrier", "tsl::thread::ThreadPool::Schedule",
	"ParallelLoopRunner::Parallelize", "XlaCompile", "jit(train_step)/jit(main)/dot_general",
	"jit(train_step)/jit(main)/transpose", "LocalExecutable::Execute", "PjRtBuffer::ToLiteral",
};
#define N_HOST_FIXED (sizeof(host_names) / sizeof(host_names[0]))
#define LAUNCH_A 8 /* host_names[] indices of kernel launches (carry correlation_id) */
#define LAUNCH_B 9

static const char *const py_files[] = {"train.py", "model.py", "optax/_src/update.py",
	"flax/linen/module.py", "jax/_src/pjit.py", "jax/_src/api.py", "data/input_pipeline.py"};
static const char *const py_funcs[] = {"train_step", "loss_fn", "apply", "__call__",
	"update", "cache_miss", "_pjit_call_impl", "next_batch", "main", "run_epoch"};

static const char *const traceme_names[] = {"ThunkExecutor", "TpuExecute", "barrier-cores",
	"dependency-wait", "ProgramLoad", "HostToDeviceTransfer", "DeviceToHostTransfer"};
static const char *const counter_names[] = {"hbm_bw_utilization", "power_watts",
	"mxu_utilization", "memory_used_bytes", "temperature_c"};
static const char *const kernel_names[] = {
	"Cijk_Ailk_Bljk_BBS_BH_MT128x128x64_MI16x16x16x1_SN_1LDSB0_APM1_ABV0_ACED0_AF0EM1.kd",
	"Cijk_Ailk_Bljk_BBS_BH_MT256x224x64_MI16x16x16x1_SN_1LDSB1_APM1_ABV0_ACED0.kd",
	"gemm_fusion_dot_general_%u.kd", "loop_add_fusion_%u", "input_reduce_fusion_%u",
	"wrapped_broadcast_%u.kd", "__amd_rocclr_copyBuffer.kd", "loop_multiply_fusion_%u",
	"void cutlass::Kernel<cutlass_80_tensorop_bf16_s16816gemm_%u>(Params)",
	"triton_softmax_%u", "nccl_AllReduce_RING_LL_Sum_bf16_%u",
};
#define N_KERNEL_FORMS (sizeof(kernel_names) / sizeof(kernel_names[0]))

static uint64_t program_id_of(uint32_t module)
{
	return 2 * (uint64_t)module + 1;
}

/* Fills @dst with the module's name "jit_x(<program id>)" as XLA writes it. */
static void module_name(uint32_t module, char *dst, size_t n)
{
	snprintf(dst, n, "%s(%" PRIu64 ")", module_names[module % N_MODULES],
		 program_id_of(module));
}

static void shape_text(struct rng *r, char *dst, size_t n)
{
	static const unsigned dims[] = {8, 16, 32, 128, 256, 512, 1024, 4096};

	snprintf(dst, n, "bf16[%u,%u,%u]{2,1,0:T(8,128)(2,1)}", dims[rng_below(r, 8)],
		 dims[rng_below(r, 8)], dims[rng_below(r, 8)]);
}

/* ---- plan ----------------------------------------------------------- */

/*
 * Appends a plane with room for @max_lines lines; the returned plane is
 * borrowed from @s (its lines are freed by plan_free()). NULL when out of
 * memory or planes.
 */
static struct gplane *add_plane(struct gspace *s, enum plane_kind k, int64_t id, const char *name,
				int index, size_t max_lines)
{
	struct gplane *p;

	if (s->n_planes == MAX_PLANES)
		return NULL;
	p = &s->planes[s->n_planes++];
	memset(p, 0, sizeof(*p));
	p->max_lines = max_lines;
	p->kind = k;
	p->id = id;
	p->index = index;
	p->seed = seed_of(s->seed, 0x504c414e45 + s->n_planes, 0);
	snprintf(p->name, sizeof(p->name), "%s", name);
	if (max_lines) {
		p->lines = calloc(max_lines, sizeof(*p->lines));
		if (!p->lines)
			return NULL;
	}
	return p;
}

/* Appends a line to @p (borrowed from it); the plan's shape never exceeds max_lines. */
static struct gline *add_line(struct gplane *p, enum line_kind k, int64_t id, const char *name,
			      int64_t ts_ns)
{
	struct gline *l;

	if (p->n_lines == p->max_lines)
		abort(); /* a bug in plan_build(), not a runtime condition */
	l = &p->lines[p->n_lines];
	memset(l, 0, sizeof(*l));
	l->kind = k;
	l->id = id;
	l->timestamp_ns = ts_ns;
	l->seed = seed_of(p->seed, 0x4c494e45, p->n_lines);
	snprintf(l->name, sizeof(l->name), "%s", name);
	p->n_lines++;
	return l;
}

/* Event-count weight of a line kind, relative, before capping. */
static double line_weight(enum line_kind k, struct rng *r, size_t i)
{
	switch (k) {
	case L_STEPS: return 1.0;
	case L_MODULES: return 1.0;
	case L_OPS: return 60.0;
	case L_ASYNC: return 12.0;
	case L_TRACEME: return 3.0;
	case L_COUNTERS: return 1.5;
	case L_EMPTY: return 0;
	case L_KERNEL: return 25.0 * rng_range(r, 0.5, 1.5);
	case L_MEMCPY: return 3.0 * rng_range(r, 0.5, 1.5);
	case L_HOST:
		/* a few busy threads (main, executors), a long tail of idle ones */
		return i < 4 ? 40.0 : (i % 9 == 0 ? 8.0 : rng_range(r, 0.05, 1.2));
	}
	return 0;
}

/* Frees the lines of every plane of @s; @s itself is the caller's. */
static void plan_free(struct gspace *s)
{
	for (size_t i = 0; i < s->n_planes; i++)
		free(s->planes[i].lines);
	s->n_planes = 0;
}

static size_t host_thread_count(uint64_t events)
{
	uint64_t n = 16 + events / 12000;

	return n > MAX_LINES ? MAX_LINES : (size_t)n;
}

static void host_thread_name(struct rng *r, enum kind kind, size_t i, char *dst, size_t n,
			     int64_t *id)
{
	static const char *const pools[] = {"pjrt-tpu-tasks", "tfrt-dynamic-queue",
		"tfrt-non-blocking-queue", "switchto-default-SDomainT", "py_xla_execute",
		"EventFDAsyncWorker", "tf_pjrt_thread_pool", "Host Threads", "xla-cpu-worker"};
	uint64_t tid = 3116817 + i * 7 + rng_below(r, 7);

	if (i == 0 && kind == KIND_TPU) {
		snprintf(dst, n, "main/%" PRIu64, tid);
		*id = (int64_t)tid;
		return;
	}
	if (i == 0) {
		snprintf(dst, n, "python");
		*id = (int64_t)(rng_next(r) >> 4);
		return;
	}
	snprintf(dst, n, "%s/%" PRIu64, pools[rng_below(r, sizeof(pools) / sizeof(pools[0]))],
		 tid);
	/* hashed thread ids are often negative as int64 */
	*id = i % 5 == 0 ? (int64_t)rng_next(r) : (int64_t)tid;
}

/*
 * Builds the shape of one host file with @events events in total (exactly)
 * into @s (caller's storage; free its lines with plan_free()).
 * Lines get a share by weight; Steps and counters are capped so metadata
 * stays bounded, and the remainder goes to the busiest line.
 */
static int plan_build(struct gspace *s, enum kind kind, uint64_t seed, const char *host,
		      uint64_t events)
{
	struct rng r = {seed_of(seed, 0x504c414e, events)};
	size_t ndev = kind == KIND_TPU ? 4 : kind == KIND_GPU ? 8 : 0;
	size_t nthreads = host_thread_count(events);
	double whost = 0, wdev = 0, host_share;
	uint64_t given = 0;
	struct gline *busiest = NULL;
	double wbusy = -1;
	int ret = 0;

	memset(s, 0, sizeof(*s));
	s->kind = kind;
	s->seed = seed;
	s->events = events;
	snprintf(s->host, sizeof(s->host), "%s", host);
	/* about 100 ns of profile per event, at least one second */
	s->span_ps = (int64_t)(events * 100000 > 1000000000000 ? events * 100000 : 1000000000000);

	if (kind == KIND_GPU)
		if (!add_plane(s, P_HOSTMETA, 0, "/host:metadata", 0, 0)) {
			ret = -ENOMEM;
			goto fail;
		}
	for (size_t d = 0; d < ndev; d++) {
		char name[NAME_MAX_LEN];
		struct gplane *p;
		int64_t ts = 1000 + (int64_t)rng_below(&r, 1000);

		snprintf(name, sizeof(name), kind == KIND_TPU ? "/device:TPU:%zu" : "/device:GPU:%zu",
			 d);
		p = add_plane(s, kind == KIND_TPU ? P_TPU : P_GPU,
			      kind == KIND_TPU ? (int64_t)(2 + 8 * d) : (int64_t)d, name, (int)d, 16);
		if (!p) {
			ret = -ENOMEM;
			goto fail;
		}
		if (kind == KIND_TPU) {
			add_line(p, L_STEPS, DERIVED_LINE_ID, "Steps", ts);
			add_line(p, L_MODULES, 2, "XLA Modules", ts);
			add_line(p, L_OPS, 3, "XLA Ops", ts);
			add_line(p, L_ASYNC, 4, "Async XLA Ops", ts);
			add_line(p, L_TRACEME, 6, "XLA TraceMe", ts);
			add_line(p, L_EMPTY, 7, "Overlay", ts);
		} else {
			/*
			 * Raw GPU captures (like the MI300 samples) have only stream
			 * lines; XProf derives Steps / XLA Ops when it loads them.
			 */
			for (int k = 0; k < 4; k++) {
				static const char *const sk[] = {"Kernel", "MemcpyH2D", "Kernel,Memset",
								 "MemcpyD2H"};
				char ln[NAME_MAX_LEN];

				snprintf(ln, sizeof(ln), "Stream #%d(%s)", 16 + k, sk[k]);
				add_line(p, k % 2 ? L_MEMCPY : L_KERNEL, 16 + k, ln, ts);
			}
		}
		add_line(p, L_COUNTERS, kind == KIND_TPU ? 8 : 99, "_counters_", ts);
	}
	if (kind != KIND_GPU)
		if (!add_plane(s, P_HOSTMETA, 0, "/host:metadata", 0, 0)) {
			ret = -ENOMEM;
			goto fail;
		}
	{
		struct gplane *p = add_plane(s, P_HOST, 0, "/host:CPU", 0, nthreads);

		if (!p) {
			ret = -ENOMEM;
			goto fail;
		}
		for (size_t i = 0; i < nthreads; i++) {
			char name[NAME_MAX_LEN];
			int64_t id;
			struct gline *l;

			host_thread_name(&r, kind, i, name, sizeof(name), &id);
			l = add_line(p, L_HOST, id, name, 1000 + (int64_t)rng_below(&r, 100000));
			/* as in the GPU sample: display_name repeats the name on some lines */
			if (i % 3 == 1)
				snprintf(l->display_name, sizeof(l->display_name), "%s", name);
			if (i % 11 == 2)
				l->display_id = (int64_t)i;
		}
	}
	if (!add_plane(s, P_TASKENV, 0, "Task Environment", 0, 0)) {
		ret = -ENOMEM;
		goto fail;
	}

	/*
	 * Distribute the events: host threads get a fixed share of the whole
	 * (all of it for CPU-only profiles), devices the rest, by line weight.
	 */
	for (size_t pi = 0; pi < s->n_planes; pi++) {
		struct gplane *p = &s->planes[pi];

		for (size_t li = 0; li < p->n_lines; li++) {
			struct gline *l = &p->lines[li];

			l->weight = line_weight(l->kind, &r, li);
			if (p->kind == P_HOST)
				whost += l->weight;
			else
				wdev += l->weight;
		}
	}
	host_share = kind == KIND_CPU ? 1.0 : kind == KIND_GPU ? 0.3 : 0.25;
	for (size_t pi = 0; pi < s->n_planes; pi++) {
		struct gplane *p = &s->planes[pi];

		for (size_t li = 0; li < p->n_lines; li++) {
			struct gline *l = &p->lines[li];
			double share = p->kind == P_HOST ? host_share * l->weight / whost
							 : (1 - host_share) * l->weight / wdev;
			uint64_t n = (uint64_t)((double)events * share);

			if (l->kind == L_STEPS && n > 2000)
				n = 2000;
			if (l->kind == L_COUNTERS && n > 200000)
				n = 200000;
			if (given + n > events)
				n = events - given;
			l->events = n;
			given += n;
			if (l->kind != L_STEPS && l->kind != L_EMPTY && l->weight > wbusy) {
				wbusy = l->weight;
				busiest = l;
			}
			if (l->kind == L_STEPS && !s->steps)
				s->steps = n;
		}
	}
	if (busiest)
		busiest->events += events - given;
	if (!s->steps)
		s->steps = 100; /* CPU-only: no Steps line, group by 100 steps anyway */

	/* metadata id ranges */
	for (size_t pi = 0; pi < s->n_planes; pi++) {
		struct gplane *p = &s->planes[pi];
		uint32_t n[EM_COUNT] = {0}, si[SI_COUNT] = {0}, next = 1;
		uint64_t steps = 0;
		/* a model has hundreds to a few thousand distinct HLO ops and kernels */
		uint32_t nops = (uint32_t)(64 + s->events / 64 > 2000 ? 2000 : 64 + s->events / 64);
		uint32_t nkern = nops / 4;

		for (size_t li = 0; li < p->n_lines; li++)
			if (p->lines[li].kind == L_STEPS)
				steps = p->lines[li].events;
		switch (p->kind) {
		case P_TPU:
			n[EM_MODULE] = N_MODULES;
			n[EM_OP] = nops;
			n[EM_STEP] = (uint32_t)(steps ? steps : 1);
			n[EM_COUNTER] = sizeof(counter_names) / sizeof(counter_names[0]);
			n[EM_ASYNC] = nops / 8;
			n[EM_TRACEME] = sizeof(traceme_names) / sizeof(traceme_names[0]);
			si[SI_HLO_OP] = nops / 8;
			p->n_stat_meta = SM_COUNT - 1;
			p->n_plane_stats = 5;
			break;
		case P_GPU:
			n[EM_COUNTER] = sizeof(counter_names) / sizeof(counter_names[0]);
			n[EM_KERNEL] = nkern;
			n[EM_MEMCPY] = 4;
			si[SI_KERNEL_DETAILS] = 64;
			si[SI_TF_OP] = 128;
			si[SI_HLO_OP] = nkern / 2 + 1; /* some HLO ops run several kernels */
			si[SI_HLO_MODULE] = N_MODULES;
			p->n_stat_meta = SM_COUNT - 1;
			p->n_plane_stats = 5;
			break;
		case P_HOST:
			n[EM_HOST] = 600 < nops ? 600 : nops;
			si[SI_TF_OP] = 128;
			p->n_stat_meta = SM_COUNT - 1;
			break;
		case P_HOSTMETA:
			n[EM_MODULE] = N_MODULES;
			p->n_stat_meta = 1;
			break;
		case P_TASKENV:
			p->n_stat_meta = 2;
			p->n_plane_stats = 2;
			break;
		}
		for (int c = 0; c < EM_COUNT; c++) {
			p->em_base[c] = next;
			p->em_n[c] = n[c];
			next += n[c];
		}
		next = SI_BASE;
		for (int c = 0; c < SI_COUNT; c++) {
			p->si_base[c] = next;
			p->si_n[c] = si[c];
			next += si[c];
		}
		if (p->kind != P_HOSTMETA && p->kind != P_TASKENV)
			for (int c = 0; c < SI_COUNT; c++)
				p->n_stat_meta += si[c];
	}
	return 0;
fail:
	plan_free(s);
	return ret;
}

/* ---- metadata ---------------------------------------------------------- */

/* A tiny valid HloProto: hlo_module { name: @name, id: @id }. */
static size_t hlo_proto(const char *name, uint64_t id, uint8_t *dst, size_t cap)
{
	struct pb inner, outer;
	size_t n = 0;

	pb_init(&inner, 512);
	pb_str(&inner, 1, name);
	pb_int(&inner, 5, id);
	pb_init(&outer, 600);
	if (!inner.err)
		pb_bytes(&outer, 1, inner.p, inner.len);
	if (!outer.err && !inner.err && outer.len <= cap) {
		memcpy(dst, outer.p, outer.len);
		n = outer.len;
	}
	pb_deinit(&inner);
	pb_deinit(&outer);
	return n;
}

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
	case SI_KERNEL_DETAILS:
		snprintf(dst, n, " grid:%u,%u,1 block:256,1,1 private_mem:0 group_mem:%u occ_pct:0",
			 1u << rng_below(&r, 15), 1u + (unsigned)rng_below(&r, 128),
			 (unsigned)rng_below(&r, 65536) & ~127u);
		break;
	case SI_TF_OP:
		snprintf(dst, n, "jit(%s)/jit(main)/%s/%s", module_names[i % N_MODULES] + 4,
			 py_funcs[rng_below(&r, 10)], opcodes[i % N_OPCODES].op);
		break;
	case SI_HLO_OP:
		snprintf(dst, n, "%s.%u", opcodes[i % N_OPCODES].op, i);
		break;
	case SI_HLO_MODULE:
		snprintf(dst, n, "%s", module_names[i % N_MODULES]);
		break;
	}
}

/* Writes event metadata @id (class @c, index @i) as a map entry of field 4. */
static void em_entry(const struct gplane *p, struct pb *out, struct pb *val, int c, uint32_t i)
{
	struct rng r = {seed_of(p->seed, 0x454d + (uint64_t)c, i)};
	int64_t id = (int64_t)(p->em_base[c] + i);
	char name[1024], disp[NAME_MAX_LEN] = "", shape[96];

	val->len = 0;
	val->err = 0;
	pb_int(val, 1, (uint64_t)id);
	switch (c) {
	case EM_MODULE:
		module_name(i, name, sizeof(name));
		pb_str(val, 2, name);
		if (p->kind == P_HOSTMETA) {
			uint8_t hp[600];
			size_t n = hlo_proto(module_names[i % N_MODULES], program_id_of(i), hp,
					     sizeof(hp));

			pb_stat(val, 5, 1, ST_BYTES, 0, 0, hp, n);
		}
		break;
	case EM_OP: {
		const struct opcode *oc = &opcodes[i % N_OPCODES];
		/* per execution: 64 KFLOP .. 1 TFLOP, 4 KB .. 4 GB, spread over the ops */
		uint64_t flops = (uint64_t)((double)(UINT64_C(1) << (16 + (i * 7) % 24)) *
					    rng_range(&r, 0.5, 1.5));
		uint64_t bytes = (uint64_t)((double)(UINT64_C(1) << (12 + (i * 5) % 20)) *
					    rng_range(&r, 0.5, 1.5));

		shape_text(&r, shape, sizeof(shape));
		snprintf(disp, sizeof(disp), "%s.%u", oc->op, i);
		if (!strcmp(oc->op, "fusion"))
			snprintf(name, sizeof(name),
				 "%%%s = %s fusion(%s %%param.%u, %s %%param.%u), kind=k%s, calls=%%fused_computation.%u",
				 disp, shape, shape, i, shape, i + 1,
				 strstr(oc->category, "loop") ? "Loop" : "Output", i);
		else
			snprintf(name, sizeof(name), "%%%s = %s %s(%s %%p.%u), metadata={op_name=\"jit(train_step)/%s\"}",
				 disp, shape, oc->op, shape, i, oc->op);
		pb_str(val, 2, name);
		pb_str(val, 4, disp);
		stat_s(val, 5, SM_HLO_CATEGORY, oc->category);
		stat_u(val, 5, SM_PROGRAM_ID, ST_U64, program_id_of(i % N_MODULES));
		stat_u(val, 5, SM_FLOPS, ST_I64, flops);
		stat_u(val, 5, SM_MODEL_FLOPS, ST_I64, flops / 2);
		stat_u(val, 5, SM_BYTES_ACCESSED, ST_I64, bytes);
		stat_s(val, 5, SM_SHAPE_WITH_LAYOUT, shape);
		{
			char src[96];

			snprintf(src, sizeof(src), "%s:%u", py_files[i % 7], 20 + i % 400);
			stat_s(val, 5, SM_SOURCE, src);
		}
		snprintf(name, sizeof(name), "jit(%s)/jit(main)/%s",
			 module_names[i % N_MODULES] + 4, oc->op);
		stat_s(val, 5, SM_TF_OP, name);
		/* fusions list the ops they call (keys in this same map) */
		if (!strcmp(oc->op, "fusion") && p->em_n[EM_OP] > 2) {
			pb_int(val, 6, p->em_base[EM_OP] + (i + 1) % p->em_n[EM_OP]);
			pb_int(val, 6, p->em_base[EM_OP] + (i + 2) % p->em_n[EM_OP]);
		}
		break;
	}
	case EM_ASYNC: {
		static const char *const aops[] = {"all-gather-start", "all-gather-done",
			"copy-start", "copy-done", "collective-permute-start", "send", "recv-done"};
		const char *op = aops[i % 7];

		shape_text(&r, shape, sizeof(shape));
		snprintf(disp, sizeof(disp), "%s.%u", op, i);
		snprintf(name, sizeof(name), "%%%s = (%s, u32[]) %s(%s %%p.%u)", disp, shape, op,
			 shape, i);
		pb_str(val, 2, name);
		pb_str(val, 4, disp);
		stat_s(val, 5, SM_HLO_CATEGORY, "async");
		break;
	}
	case EM_TRACEME:
		pb_str(val, 2, traceme_names[i % (sizeof(traceme_names) / sizeof(traceme_names[0]))]);
		break;
	case EM_STEP:
		snprintf(name, sizeof(name), "%u", i);
		pb_str(val, 2, name);
		break;
	case EM_COUNTER:
		pb_str(val, 2, counter_names[i % (sizeof(counter_names) / sizeof(counter_names[0]))]);
		break;
	case EM_KERNEL: {
		/* "%u" in a kernel name form stands for the kernel's index */
		const char *form = kernel_names[i % N_KERNEL_FORMS], *pct = strstr(form, "%u");

		if (pct)
			snprintf(name, sizeof(name), "%.*s%u%s", (int)(pct - form), form, i, pct + 2);
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
		if (i < N_HOST_FIXED)
			snprintf(name, sizeof(name), "%s", host_names[i]);
		else
			snprintf(name, sizeof(name), "$%s:%u %s", py_files[i % 7], 10 + i,
				 py_funcs[(i / 7) % 10]);
		pb_str(val, 2, name);
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
static int plane_meta(const struct gspace *s, const struct gplane *p, struct pb *meta)
{
	struct pb val;
	char name[256];
	int ret;

	pb_init(&val, SCRATCH_BYTES);
	for (int c = 0; c < EM_COUNT; c++)
		for (uint32_t i = 0; i < p->em_n[c]; i++)
			em_entry(p, meta, &val, c, i);
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

/* ---- events ------------------------------------------------------------ */

struct frame {
	int64_t end;
	int kids;
};

struct lgen {
	struct rng r;
	int64_t t, slot;
	int depth;
	struct frame st[MAX_DEPTH];
	uint64_t i, corr;
	int max_depth;
	double p_parent;
};

static void lgen_init(struct lgen *g, const struct gspace *s, const struct gline *l)
{
	memset(g, 0, sizeof(*g));
	g->r.s = l->seed;
	g->slot = l->events ? s->span_ps / (int64_t)l->events : s->span_ps;
	if (g->slot < 1)
		g->slot = 1;
	g->corr = 1000 + (l->seed & 0xffff);
	switch (l->kind) {
	case L_OPS: g->max_depth = 2; g->p_parent = 0.08; break;
	case L_TRACEME: g->max_depth = 3; g->p_parent = 0.3; break;
	case L_HOST: g->max_depth = MAX_DEPTH - 1; g->p_parent = 0.35; break;
	default: break;
	}
}

/*
 * Chooses the next event's [start, start+dur) so that it nests in the open
 * parent (if any) and starts after the previous sibling ended.
 */
static void lgen_next_time(struct lgen *g, const struct gline *l, int64_t *start, int64_t *dur)
{
	struct rng *r = &g->r;

	if (l->kind == L_STEPS) {
		*start = g->t;
		*dur = g->slot;
		g->t += g->slot;
		return;
	}
	if (l->kind == L_COUNTERS) {
		*start = g->t;
		*dur = 0;
		g->t += g->slot;
		return;
	}
	while (g->depth > 0 && g->st[g->depth - 1].kids == 0) {
		g->t = g->st[g->depth - 1].end;
		g->depth--;
	}
	if (g->depth == 0) {
		/* duty cycle: modules cover most of the time, copies little of it */
		double lo = l->kind == L_MODULES ? 0.6 : l->kind == L_MEMCPY ? 0.02 : 0.3;
		double hi = l->kind == L_MODULES ? 0.9 : l->kind == L_MEMCPY ? 0.15 : 0.6;

		*start = g->t + (int64_t)((double)g->slot * rng_range(r, 0.05, 0.1 + (1 - hi) / 2));
		*dur = (int64_t)((double)g->slot * rng_range(r, lo, hi));
	} else {
		struct frame *f = &g->st[g->depth - 1];
		int64_t per = (f->end - g->t) / (f->kids + 1);

		*start = g->t + (int64_t)((double)per * rng_range(r, 0.02, 0.2));
		*dur = (int64_t)((double)per * rng_range(r, 0.5, 0.95));
		f->kids--;
	}
	if (g->depth < g->max_depth && rng_unit(r) < g->p_parent) {
		int kids = 1 + (int)rng_below(r, 4);

		/* a parent spans what its children need */
		if (g->depth == 0)
			*dur = (int64_t)((double)g->slot * (kids + 1) * rng_range(r, 0.8, 1.1));
		g->st[g->depth].end = *start + *dur;
		g->st[g->depth].kids = kids;
		g->depth++;
		g->t = *start;
	} else {
		if (l->kind == L_HOST && rng_below(r, 50) == 0)
			*dur = 0; /* TraceMe instants */
		g->t = *start + *dur;
	}
}

/* Encodes the body of the next event of line @l into @ev (reset first). */
static void gen_event(const struct gspace *s, const struct gplane *p, const struct gline *l,
		      struct lgen *g, struct pb *ev)
{
	struct rng *r = &g->r;
	int64_t start, dur;
	uint64_t md = 0;
	int64_t step_len = s->span_ps / (int64_t)(s->steps ? s->steps : 1);
	uint64_t group;

	ev->len = 0;
	lgen_next_time(g, l, &start, &dur);
	group = (uint64_t)(start / (step_len ? step_len : 1));
	switch (l->kind) {
	case L_STEPS: md = p->em_base[EM_STEP] + g->i % p->em_n[EM_STEP]; break;
	case L_MODULES: md = p->em_base[EM_MODULE] + rng_skewed(r, p->em_n[EM_MODULE]); break;
	case L_OPS: md = p->em_base[EM_OP] + rng_skewed(r, p->em_n[EM_OP]); break;
	case L_ASYNC: md = p->em_base[EM_ASYNC] + rng_below(r, p->em_n[EM_ASYNC]); break;
	case L_TRACEME: md = p->em_base[EM_TRACEME] + rng_below(r, p->em_n[EM_TRACEME]); break;
	case L_COUNTERS: md = p->em_base[EM_COUNTER] + g->i % p->em_n[EM_COUNTER]; break;
	case L_KERNEL: md = p->em_base[EM_KERNEL] + rng_skewed(r, p->em_n[EM_KERNEL]); break;
	case L_MEMCPY: md = p->em_base[EM_MEMCPY] + rng_below(r, p->em_n[EM_MEMCPY]); break;
	case L_HOST: md = p->em_base[EM_HOST] + rng_skewed(r, p->em_n[EM_HOST]); break;
	case L_EMPTY: break;
	}
	pb_int(ev, 1, md);
	pb_int(ev, 2, (uint64_t)start);
	if (dur)
		pb_int(ev, 3, (uint64_t)dur);
	switch (l->kind) {
	case L_STEPS:
		stat_u(ev, 4, SM_STEP_NUM, ST_I64, g->i);
		stat_u(ev, 4, SM_GROUP_ID, ST_I64, g->i);
		break;
	case L_MODULES:
		stat_u(ev, 4, SM_RUN_ID, ST_U64, 1 + g->i);
		stat_u(ev, 4, SM_PROGRAM_ID, ST_U64, program_id_of((uint32_t)(md - p->em_base[EM_MODULE])));
		stat_u(ev, 4, SM_GROUP_ID, ST_I64, group);
		break;
	case L_OPS:
		stat_u(ev, 4, SM_DEVICE_OFFSET_PS, ST_U64, (uint64_t)start);
		stat_u(ev, 4, SM_DEVICE_DURATION_PS, ST_U64, (uint64_t)dur);
		stat_u(ev, 4, SM_GROUP_ID, ST_I64, group);
		break;
	case L_ASYNC:
		stat_u(ev, 4, SM_HLO_OP, ST_REF, p->si_base[SI_HLO_OP] + rng_below(r, p->si_n[SI_HLO_OP]));
		stat_u(ev, 4, SM_A, ST_I64, 1);
		break;
	case L_COUNTERS:
		pb_stat(ev, 4, SM_VALUE, ST_DOUBLE, 0, rng_range(r, 0, 100.0), NULL, 0);
		break;
	case L_KERNEL: {
		uint32_t k = (uint32_t)(md - p->em_base[EM_KERNEL]);

		stat_u(ev, 4, SM_CORRELATION_ID, ST_U64, g->corr++);
		stat_u(ev, 4, SM_KERNEL_DETAILS, ST_REF, p->si_base[SI_KERNEL_DETAILS] + k % p->si_n[SI_KERNEL_DETAILS]);
		stat_u(ev, 4, SM_TF_OP, ST_REF, p->si_base[SI_TF_OP] + k % p->si_n[SI_TF_OP]);
		stat_u(ev, 4, SM_HLO_OP, ST_REF, p->si_base[SI_HLO_OP] + k % p->si_n[SI_HLO_OP]);
		stat_u(ev, 4, SM_HLO_MODULE, ST_REF, p->si_base[SI_HLO_MODULE] + k % p->si_n[SI_HLO_MODULE]);
		stat_u(ev, 4, SM_PROGRAM_ID, ST_I64, program_id_of(k % N_MODULES));
		stat_u(ev, 4, SM_GROUP_ID, ST_I64, group);
		break;
	}
	case L_MEMCPY: {
		char d[128];

		snprintf(d, sizeof(d), "kind_src:pageable kind_dst:device size:%u dest:%d async:1",
			 1u << (10 + rng_below(r, 16)), p->index);
		stat_u(ev, 4, SM_CORRELATION_ID, ST_U64, g->corr++);
		stat_s(ev, 4, SM_MEMCPY_DETAILS, d);
		stat_u(ev, 4, SM_GROUP_ID, ST_I64, group);
		break;
	}
	case L_HOST: {
		uint32_t h = (uint32_t)(md - p->em_base[EM_HOST]);

		if (h == LAUNCH_A || h == LAUNCH_B)
			stat_u(ev, 4, SM_CORRELATION_ID, ST_U64, g->corr++);
		else if (rng_below(r, 4) == 0)
			stat_u(ev, 4, SM_GROUP_ID, ST_I64, group);
		if (h >= N_HOST_FIXED && rng_below(r, 16) == 0)
			stat_u(ev, 4, SM_TF_OP, ST_REF, p->si_base[SI_TF_OP] + h % p->si_n[SI_TF_OP]);
		break;
	}
	case L_TRACEME:
	case L_EMPTY:
		break;
	}
	g->i++;
}

/* ---- output ----------------------------------------------------------- */

struct out {
	int fd;
	uint8_t *buf;
	size_t len;
	uint64_t total;
	int err;
};

static void out_flush(struct out *o)
{
	int r;

	if (o->err || !o->len)
		return;
	r = xprofs_write_full(o->fd, o->buf, o->len);
	if (r < 0)
		o->err = r;
	o->len = 0;
}

static void out_put(struct out *o, const void *p, size_t n)
{
	if (o->err)
		return;
	o->total += n;
	if (o->len + n > OUT_BUF_BYTES) {
		out_flush(o);
		if (n > OUT_BUF_BYTES) {
			int r = xprofs_write_full(o->fd, p, n);

			if (r < 0)
				o->err = r;
			return;
		}
	}
	memcpy(o->buf + o->len, p, n);
	o->len += n;
}

static void out_tag_len(struct out *o, unsigned field, uint64_t len)
{
	uint8_t tmp[20];
	size_t n = varint_encode(tmp, (uint64_t)field << 3 | WT_LEN);

	n += varint_encode(tmp + n, len);
	out_put(o, tmp, n);
}

/* Line fields before the events (1 id, 2 name, 3 timestamp_ns) into @h. */
static void line_head(const struct gline *l, struct pb *h)
{
	h->len = 0;
	if (l->id)
		pb_int(h, 1, (uint64_t)l->id);
	pb_str(h, 2, l->name);
	if (l->timestamp_ns)
		pb_int(h, 3, (uint64_t)l->timestamp_ns);
}

/* Line fields after the events (9 duration_ps, 10 display_id, 11 display_name). */
static void line_tail(const struct gline *l, int64_t end_ps, struct pb *h)
{
	h->len = 0;
	if (end_ps > 0)
		pb_int(h, 9, (uint64_t)end_ps);
	if (l->display_id)
		pb_int(h, 10, (uint64_t)l->display_id);
	if (l->display_name[0])
		pb_str(h, 11, l->display_name);
}

/*
 * Runs the events of line @l once: with @o == NULL only sizes them into
 * l->body_size; otherwise writes the whole line (tag, length, body) to @o,
 * regenerating exactly the events the sizing pass saw.
 */
static int line_run(const struct gspace *s, const struct gplane *p, struct gline *l,
		    struct pb *scratch, struct out *o, uint64_t *event_bytes)
{
	struct lgen g;
	uint64_t body = 0;
	int64_t end = 0;

	line_head(l, scratch);
	if (scratch->err)
		return scratch->err;
	body += scratch->len;
	if (o) {
		out_tag_len(o, 3, l->body_size);
		out_put(o, scratch->p, scratch->len);
	}
	lgen_init(&g, s, l);
	for (uint64_t i = 0; i < l->events; i++) {
		gen_event(s, p, l, &g, scratch);
		if (scratch->err)
			return scratch->err;
		body += ld_size(4, scratch->len);
		*event_bytes += ld_size(4, scratch->len);
		if (o) {
			out_tag_len(o, 4, scratch->len);
			out_put(o, scratch->p, scratch->len);
		}
	}
	/* the line's duration: the end of its last top-level event */
	for (int d = 0; d < g.depth; d++)
		if (g.st[d].end > end)
			end = g.st[d].end;
	if (g.t > end)
		end = g.t;
	line_tail(l, l->events ? end : 0, scratch);
	if (scratch->err)
		return scratch->err;
	body += scratch->len;
	if (o) {
		out_put(o, scratch->p, scratch->len);
		if (body != l->body_size) {
			xprofs_err("xprofs-gen: internal error: line '%s' sized %" PRIu64
				   " but wrote %" PRIu64, l->name, l->body_size, body);
			return -EPROTO;
		}
		return o->err;
	}
	l->body_size = body;
	return 0;
}

/* Accumulated facts for --stats. */
struct gstats {
	uint64_t bytes, events;
	uint64_t event_bytes; /* the share of @bytes spent on XEvent records */
};

/*
 * Writes the whole XSpace of @s to @o: for each plane, a sizing pass over
 * its lines, then the plane header, its lines and its metadata.
 */
static int space_write(struct gspace *s, struct out *o, struct gstats *st)
{
	struct pb scratch, meta, head;
	int ret = 0;

	pb_init(&scratch, SCRATCH_BYTES);
	pb_init(&meta, MAX_META_BYTES);
	pb_init(&head, SCRATCH_BYTES);
	memset(st, 0, sizeof(*st));
	for (size_t pi = 0; pi < s->n_planes; pi++) {
		struct gplane *p = &s->planes[pi];
		uint64_t body, ignored = 0;

		meta.len = 0;
		ret = plane_meta(s, p, &meta);
		if (ret)
			goto out;
		head.len = 0;
		if (p->id)
			pb_int(&head, 1, (uint64_t)p->id);
		pb_str(&head, 2, p->name);
		if (head.err) {
			ret = head.err;
			goto out;
		}
		body = head.len + meta.len;
		for (size_t li = 0; li < p->n_lines; li++) {
			ret = line_run(s, p, &p->lines[li], &scratch, NULL, &st->event_bytes);
			if (ret)
				goto out;
			body += ld_size(3, p->lines[li].body_size);
			st->events += p->lines[li].events;
		}
		if (o) {
			out_tag_len(o, 1, body);
			out_put(o, head.p, head.len);
			for (size_t li = 0; li < p->n_lines; li++) {
				ret = line_run(s, p, &p->lines[li], &scratch, o, &ignored);
				if (ret)
					goto out;
			}
			out_put(o, meta.p, meta.len);
		}
		st->bytes += ld_size(1, body);
	}
	head.len = 0;
	pb_str(&head, 4, s->host);
	if (head.err) {
		ret = head.err;
		goto out;
	}
	if (o) {
		out_put(o, head.p, head.len);
		out_flush(o);
		ret = o->err;
	}
	st->bytes += head.len;
out:
	pb_deinit(&head);
	pb_deinit(&meta);
	pb_deinit(&scratch);
	return ret;
}

#define PROBE_EVENTS 200000

/* Sizes (without writing) a plan of @events events: fixed and per-event bytes. */
static int probe_size(enum kind kind, uint64_t seed, const char *host, uint64_t events,
		      struct gspace *s, uint64_t *fixed, double *per_event)
{
	struct gstats st;
	int ret;

	ret = plan_build(s, kind, seed, host, events);
	if (ret)
		return ret;
	ret = space_write(s, NULL, &st);
	plan_free(s);
	if (ret)
		return ret;
	*fixed = st.bytes - st.event_bytes;
	*per_event = events ? (double)st.event_bytes / (double)events : 1;
	return 0;
}

/*
 * Chooses the event count for an approximate file size of @target bytes.
 * Bytes per event grow slowly with the profile (longer spans need longer
 * varints, more threads, more distinct ops), so a 200k-event probe gives a
 * first estimate and further probes refine it: near the count itself for
 * small files, at 1/8 of it for big ones. The probes only size, they write
 * nothing, so big files cost at most ~15% extra work.
 */
static int events_for_size(enum kind kind, uint64_t seed, const char *host, uint64_t target,
			   uint64_t *events)
{
	struct gspace *s = calloc(1, sizeof(*s));
	uint64_t probe = PROBE_EVENTS, fixed, e = 1;
	double per;
	int ret;

	if (!s)
		return -ENOMEM;
	for (int round = 0; round < 8; round++) {
		uint64_t next;

		ret = probe_size(kind, seed, host, probe, s, &fixed, &per);
		if (ret)
			goto out;
		e = target > fixed ? (uint64_t)((double)(target - fixed) / per) : 1;
		if (e < 1)
			e = 1;
		if (e > 8 * PROBE_EVENTS) {
			/* metadata no longer grows: a probe at 1/8 of it is representative */
			if (probe >= e / 8)
				break;
			next = e / 8;
		} else {
			/* metadata grows with events: converge on the count itself (damped) */
			if (e >= probe - probe / 20 && e <= probe + probe / 20)
				break;
			next = (e + probe) / 2;
		}
		if (next == probe)
			break;
		probe = next;
	}
	*events = e > MAX_EVENTS ? MAX_EVENTS : e;
out:
	free(s);
	return ret;
}

/* Appends the --stats record of one written file to @j (all arguments borrowed). */
static int stats_json(const struct gspace *s, const char *path, const struct gstats *st,
		      struct xprofs_buf *j)
{
	int r = 0;

	r = r ? r : xprofs_buf_adds(j, j->len > 1 ? ",{\"file\":" : "{\"file\":");
	r = r ? r : xprofs_buf_add_json_str(j, path, strlen(path));
	r = r ? r : xprofs_buf_adds(j, ",\"host\":");
	r = r ? r : xprofs_buf_add_json_str(j, s->host, strlen(s->host));
	r = r ? r : xprofs_buf_printf(j, ",\"kind\":\"%s\",\"seed\":%" PRIu64 ",\"bytes\":%" PRIu64
				      ",\"events\":%" PRIu64 ",\"span_ps\":%" PRId64 ",\"planes\":[",
				      kind_names[s->kind], s->seed, st->bytes, st->events, s->span_ps);
	for (size_t pi = 0; pi < s->n_planes && !r; pi++) {
		const struct gplane *p = &s->planes[pi];
		uint32_t nem = 0;

		for (int c = 0; c < EM_COUNT; c++)
			nem += p->em_n[c];
		r = r ? r : xprofs_buf_printf(j, "%s{\"id\":%" PRId64 ",\"name\":", pi ? "," : "", p->id);
		r = r ? r : xprofs_buf_add_json_str(j, p->name, strlen(p->name));
		r = r ? r : xprofs_buf_printf(j, ",\"event_metadata\":%u,\"stat_metadata\":%u,"
					      "\"stats\":%u,\"lines\":[", nem, p->n_stat_meta,
					      p->n_plane_stats);
		for (size_t li = 0; li < p->n_lines && !r; li++) {
			const struct gline *l = &p->lines[li];

			r = r ? r : xprofs_buf_printf(j, "%s{\"id\":%" PRId64 ",\"name\":", li ? "," : "",
						      l->id);
			r = r ? r : xprofs_buf_add_json_str(j, l->name, strlen(l->name));
			r = r ? r : xprofs_buf_printf(j, ",\"events\":%" PRIu64 "}", l->events);
		}
		r = r ? r : xprofs_buf_adds(j, "]}");
	}
	r = r ? r : xprofs_buf_adds(j, "]}");
	return r;
}

/* ---- files and directories ------------------------------------------- */

struct opts {
	const char *out;
	enum kind kind;
	uint64_t size, events, seed;
	bool have_events, stats;
	unsigned hosts;
	const char *logdir, *run, *session, *demo;
};

/*
 * Generates one host file at @path ("-" = stdout) with @events events, or
 * sized to @size unless @have_events; appends its stats record to @j if set.
 * Borrows @path, @host and @j.
 */
static int gen_file(const char *path, enum kind kind, uint64_t seed, const char *host,
		    uint64_t size, uint64_t events, bool have_events, struct xprofs_buf *j)
{
	struct gspace *s = calloc(1, sizeof(*s));
	struct out o = {.fd = -1};
	struct gstats st;
	char *tmp = NULL;
	int ret;

	if (!s)
		return -ENOMEM;
	if (!have_events) {
		ret = events_for_size(kind, seed, host, size, &events);
		if (ret)
			goto out;
	}
	ret = plan_build(s, kind, seed, host, events);
	if (ret)
		goto out;
	o.buf = malloc(OUT_BUF_BYTES);
	if (!o.buf) {
		ret = -ENOMEM;
		goto out_plan;
	}
	if (!strcmp(path, "-")) {
		o.fd = STDOUT_FILENO;
	} else {
		/* write beside and rename, so readers never see a partial profile */
		if (asprintf(&tmp, "%s.tmp.%d", path, (int)getpid()) < 0) {
			tmp = NULL;
			ret = -ENOMEM;
			goto out_buf;
		}
		o.fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (o.fd < 0) {
			ret = -errno;
			xprofs_err("xprofs-gen: %s: %s", tmp, strerror(errno));
			goto out_buf;
		}
	}
	ret = space_write(s, &o, &st);
	if (!ret && st.bytes != o.total) {
		xprofs_err("xprofs-gen: internal error: sized %" PRIu64 " wrote %" PRIu64, st.bytes,
			   o.total);
		ret = -EPROTO;
	}
	if (tmp) {
		if (close(o.fd) < 0 && !ret)
			ret = -errno;
		if (!ret && rename(tmp, path) < 0)
			ret = -errno;
		if (ret)
			unlink(tmp);
	}
	if (ret)
		xprofs_err("xprofs-gen: %s: %s", path, strerror(-ret));
	if (!ret && j)
		ret = stats_json(s, path, &st, j);
out_buf:
	free(tmp);
	free(o.buf);
out_plan:
	plan_free(s);
out:
	free(s);
	return ret;
}

static int write_small(const char *path, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	int ret;

	if (fd < 0)
		return -errno;
	ret = xprofs_write_full(fd, p, n);
	if (close(fd) < 0 && !ret)
		ret = -errno;
	return ret;
}

/*
 * Writes one session directory <logdir>/<run>/plugins/profile/<session>/
 * (all strings borrowed) with @hosts hosts named <@host_prefix><index> and, when @sidecars, one
 * <module>.hlo_proto.pb per module.
 */
static int gen_session(const char *logdir, const char *run, const char *session, enum kind kind,
		       uint64_t seed, unsigned hosts, const char *host_prefix, uint64_t size,
		       uint64_t events, bool have_events, bool sidecars, struct xprofs_buf *j)
{
	char *dir = NULL, *path = NULL;
	int ret;

	if (asprintf(&dir, "%s/%s%splugins/profile/%s", logdir, strcmp(run, ".") ? run : "",
		     strcmp(run, ".") ? "/" : "", session) < 0)
		return -ENOMEM;
	ret = xprofs_mkdir_p(dir);
	if (ret) {
		xprofs_err("xprofs-gen: mkdir %s: %s", dir, strerror(-ret));
		goto out;
	}
	for (unsigned h = 0; h < hosts && !ret; h++) {
		char host[NAME_MAX_LEN];

		snprintf(host, sizeof(host), "%s%u", host_prefix, h);
		free(path);
		if (asprintf(&path, "%s/%s.xplane.pb", dir, host) < 0) {
			path = NULL;
			ret = -ENOMEM;
			break;
		}
		ret = gen_file(path, kind, seed_of(seed, 0x484f5354, h), host, size, events,
			       have_events, j);
	}
	for (uint32_t m = 0; sidecars && !ret && m < N_MODULES; m++) {
		char name[NAME_MAX_LEN];
		uint8_t hp[600];
		size_t n;

		module_name(m, name, sizeof(name));
		n = hlo_proto(module_names[m], program_id_of(m), hp, sizeof(hp));
		free(path);
		if (asprintf(&path, "%s/%s.hlo_proto.pb", dir, name) < 0) {
			path = NULL;
			ret = -ENOMEM;
			break;
		}
		ret = write_small(path, hp, n);
	}
out:
	free(path);
	free(dir);
	return ret;
}

/* The run's empty "events.out.tfevents.<ts>.<host>.profile-empty" marker. */
static int gen_marker(const char *logdir, const char *run, const char *host)
{
	char *path = NULL;
	int ret;

	if (asprintf(&path, "%s/%s/events.out.tfevents.%" PRId64 ".%s.profile-empty", logdir, run,
		     WALL_START_NS / 1000000000, host) < 0)
		return -ENOMEM;
	ret = write_small(path, "", 0);
	free(path);
	return ret;
}

/*
 * A small demo logdir: a TPU run with two sessions of two hosts, a nested
 * GPU run "team/exp2", and a CPU run at the logdir root (run "."). A few MB.
 */
static int gen_demo(const char *dir, uint64_t seed, struct xprofs_buf *j)
{
	int ret;

	ret = gen_session(dir, "train_tpu", "2026_11_21_10_00_00", KIND_TPU, seed, 2,
			  "t1v-n-0-w-", 0, 12000, true, true, j);
	ret = ret ? ret : gen_session(dir, "train_tpu", "2026_11_21_10_05_00", KIND_TPU, seed + 1,
				      2, "t1v-n-0-w-", 0, 8000, true, true, j);
	ret = ret ? ret : gen_marker(dir, "train_tpu", "t1v-n-0-w-0");
	ret = ret ? ret : gen_session(dir, "team/exp2", "2026_11_21_11_30_00", KIND_GPU, seed + 2,
				      1, "gpu-node-", 0, 15000, true, true, j);
	ret = ret ? ret : gen_marker(dir, "team/exp2", "gpu-node-0");
	ret = ret ? ret : gen_session(dir, ".", "2026_11_21_09_00_00", KIND_CPU, seed + 3, 1,
				      "cpu-worker-", 0, 8000, true, false, j);
	ret = ret ? ret : gen_marker(dir, ".", "cpu-worker-0");
	return ret;
}

/* ---- command line ------------------------------------------------------ */

enum { ARG_KIND = 0x100, ARG_SIZE, ARG_EVENTS, ARG_SEED, ARG_HOSTS, ARG_LOGDIR, ARG_RUN,
       ARG_SESSION, ARG_DEMO, ARG_STATS };

static void usage(FILE *f)
{
	fprintf(f,
		"usage: xprofs-gen [options] -o FILE\n"
		"       xprofs-gen [options] --hosts N --logdir DIR --run NAME --session NAME\n"
		"       xprofs-gen --demo DIR\n"
		"Writes realistic XSpace profiles (*.xplane.pb), streaming in constant memory.\n"
		"  -o, --output FILE   output file ('-' = stdout)\n"
		"      --kind K        tpu (default), gpu or cpu\n"
		"      --size N[K|M|G] approximate file size (default 1M)\n"
		"      --events N      exact number of events instead of --size\n"
		"      --seed N        RNG seed (default 1); same seed, same bytes\n"
		"      --hosts N       hosts of a session (with --logdir/--run/--session)\n"
		"      --demo DIR      write a small demo logdir into DIR\n"
		"      --stats         print JSON facts (planes, lines, event counts) to stdout\n"
		"  -h, --help\n");
}

/* Strict unsigned parse; with @suffix, a size with an optional K/M/G/T suffix. */
static int parse_u64(const char *s, bool suffix, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (suffix)
		return xprofs_size_parse(s, out);
	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{"output", required_argument, NULL, 'o'},
		{"kind", required_argument, NULL, ARG_KIND},
		{"size", required_argument, NULL, ARG_SIZE},
		{"events", required_argument, NULL, ARG_EVENTS},
		{"seed", required_argument, NULL, ARG_SEED},
		{"hosts", required_argument, NULL, ARG_HOSTS},
		{"logdir", required_argument, NULL, ARG_LOGDIR},
		{"run", required_argument, NULL, ARG_RUN},
		{"session", required_argument, NULL, ARG_SESSION},
		{"demo", required_argument, NULL, ARG_DEMO},
		{"stats", no_argument, NULL, ARG_STATS},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct opts o = {.kind = KIND_TPU, .size = 1u << 20, .seed = 1};
	struct xprofs_buf j;
	uint64_t v;
	int c, ret = 0;

	while ((c = getopt_long(argc, argv, "o:h", lopts, NULL)) != -1) {
		switch (c) {
		case 'o': o.out = optarg; break;
		case ARG_KIND:
			if (!strcmp(optarg, "tpu"))
				o.kind = KIND_TPU;
			else if (!strcmp(optarg, "gpu"))
				o.kind = KIND_GPU;
			else if (!strcmp(optarg, "cpu"))
				o.kind = KIND_CPU;
			else
				goto bad;
			break;
		case ARG_SIZE:
			if (parse_u64(optarg, true, &o.size) || !o.size)
				goto bad;
			break;
		case ARG_EVENTS:
			if (parse_u64(optarg, true, &o.events) || o.events > MAX_EVENTS)
				goto bad;
			o.have_events = true;
			break;
		case ARG_SEED:
			if (parse_u64(optarg, false, &o.seed))
				goto bad;
			break;
		case ARG_HOSTS:
			if (parse_u64(optarg, false, &v) || !v || v > MAX_HOSTS)
				goto bad;
			o.hosts = (unsigned)v;
			break;
		case ARG_LOGDIR: o.logdir = optarg; break;
		case ARG_RUN: o.run = optarg; break;
		case ARG_SESSION: o.session = optarg; break;
		case ARG_DEMO: o.demo = optarg; break;
		case ARG_STATS: o.stats = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "xprofs-gen: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (!o.demo && !o.out && !o.hosts) {
		fprintf(stderr, "xprofs-gen: one of -o, --hosts or --demo is required\n");
		usage(stderr);
		return 2;
	}
	if (o.hosts && (!o.logdir || !o.run || !o.session || strstr(o.session, "/"))) {
		fprintf(stderr, "xprofs-gen: --hosts needs --logdir, --run and --session (no '/')\n");
		return 2;
	}
	if (o.stats && o.out && !strcmp(o.out, "-")) {
		fprintf(stderr, "xprofs-gen: --stats cannot share stdout with -o -\n");
		return 2;
	}

	xprofs_buf_init(&j, 256u << 20);
	ret = xprofs_buf_adds(&j, "[");
	if (!ret && o.demo)
		ret = gen_demo(o.demo, o.seed, &j);
	if (!ret && o.hosts)
		ret = gen_session(o.logdir, o.run, o.session, o.kind, o.seed, o.hosts, "host",
				  o.size, o.events, o.have_events, false, &j);
	if (!ret && o.out)
		ret = gen_file(o.out, o.kind, o.seed, "localhost", o.size, o.events,
			       o.have_events, &j);
	if (!ret)
		ret = xprofs_buf_adds(&j, "]");
	if (!ret && o.stats)
		printf("{\"files\":%s}\n", j.data);
	xprofs_buf_deinit(&j);
	if (ret) {
		fprintf(stderr, "xprofs-gen: failed: %s\n", strerror(-ret));
		return 1;
	}
	return 0;
bad:
	fprintf(stderr, "xprofs-gen: bad value '%s' for option\n", optarg);
	usage(stderr);
	return 2;
}
