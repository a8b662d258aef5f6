/*
 * xprofs-gen (tools/gen/) - writes realistic XSpace profiles (*.xplane.pb) of any size,
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

/*
 * gen.h - what the files of xprofs-gen share (tools/gen/): limits, the
 * model of a generated XSpace (planes, lines, metadata classes), the name
 * tables, and the calls from one stage to the next:
 *   plan.c (gen_plan_build) -> meta.c (per-plane metadata) and events.c
 *   (per-line event streams) -> write.c (two-pass streaming writer) ->
 *   demo.c (files, sessions, the demo logdir) <- main.c (command line).
 * The generator is FUSE-free and independent of decode/: it must never
 * include a decode header (it is the decoder's test oracle).
 */
#ifndef XPROFS_GEN_H
#define XPROFS_GEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pb.h"
#include "rng.h"
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

/* ---- the model: planes, lines, metadata ------------------------------- */

enum kind { KIND_TPU, KIND_GPU, KIND_CPU };

enum plane_kind { P_TPU, P_GPU, P_HOST, P_HOSTMETA, P_TASKENV };

enum line_kind {
	L_STEPS,
	L_MODULES,
	L_OPS,
	L_ASYNC,
	L_TRACEME,
	L_COUNTERS,
	L_EMPTY,
	L_KERNEL,
	L_MEMCPY,
	L_HOST,
	L_MEMORY, /* allocator traffic on the host plane (events.c, gen_memory_next()) */
};

/* Event metadata classes; each owns a contiguous id range in its plane. */
enum em_class {
	EM_MODULE,
	EM_OP,
	EM_ASYNC,
	EM_TRACEME,
	EM_STEP,
	EM_COUNTER,
	EM_KERNEL,
	EM_MEMCPY,
	EM_HOST,
	EM_MEMORY, /* MemoryAllocation, MemoryDeallocation */
	EM_COUNT
};

/* Interned strings (targets of ref_value stats), ids from SI_BASE up. */
enum si_class { SI_KERNEL_DETAILS, SI_TF_OP, SI_HLO_OP, SI_HLO_MODULE, SI_COUNT };
#define SI_BASE 1000

/* Fixed stat metadata ids of device and host planes. */
enum {
	SM_STEP_NUM = 1,
	SM_GROUP_ID,
	SM_CORRELATION_ID,
	SM_TF_OP,
	SM_HLO_OP,
	SM_HLO_MODULE,
	SM_PROGRAM_ID,
	SM_HLO_CATEGORY,
	SM_FLOPS,
	SM_MODEL_FLOPS,
	SM_BYTES_ACCESSED,
	SM_SHAPE_WITH_LAYOUT,
	SM_SOURCE,
	SM_KERNEL_DETAILS,
	SM_MEMCPY_DETAILS,
	SM_DEVICE_OFFSET_PS,
	SM_DEVICE_DURATION_PS,
	SM_VALUE,
	SM_RUN_ID,
	SM_CLOCK_RATE,
	SM_PEAK_TFLOPS,
	SM_PEAK_HBM_BW,
	SM_DEVICE_VENDOR,
	SM_CORE_COUNT,
	SM_MEMORY_BANDWIDTH,
	SM_MEMORY_SIZE,
	SM_COMPUTE_CAP_MAJOR,
	SM_COMPUTE_CAP_MINOR,
	SM_DEVICE_TYPE_STRING,
	SM_STEP_NAME,
	SM_FLOW,
	SM_A,
	SM_SOURCE_STACK,
	/* allocator traffic (docs/memory.md) */
	SM_ALLOCATOR_NAME,
	SM_INDEX_ON_HOST,
	SM_BYTES_RESERVED,
	SM_BYTES_ALLOCATED,
	SM_BYTES_AVAILABLE,
	SM_FRAGMENTATION,
	SM_PEAK_BYTES_IN_USE,
	SM_REQUESTED_BYTES,
	SM_ALLOCATION_BYTES,
	SM_ADDR,
	SM_REGION_TYPE,
	SM_DATA_TYPE,
	SM_SHAPE,
	SM_C, /* TraceMe2 consumer and producer ids and types: --regions only */
	SM_CT,
	SM_P,
	SM_PT,
	SM_COUNT
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
	int index; /* device index (stream ids, vendor names) */
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
	unsigned flags; /* GEN_* variants of the profile */
	size_t n_planes;
	struct gplane planes[MAX_PLANES];
};

/* ---- name tables (names.c) ------------------------------------------------ */

struct opcode {
	const char *op, *category;
};
#define N_OPCODES ((size_t)16)
#define N_MODULES ((size_t)12)
#define N_HOST_FIXED ((size_t)20)
#define N_PY_FILES ((size_t)7)
#define N_PY_FUNCS ((size_t)10)
#define N_TRACEME ((size_t)7)
#define N_COUNTERS ((size_t)5)
#define N_KERNEL_FORMS ((size_t)11)
#define LAUNCH_A 8 /* gen_host_names[] indices of kernel launches (carry correlation_id) */
#define LAUNCH_B 9

extern const char *const gen_kind_names[3]; /* by enum kind */
extern const struct opcode gen_opcodes[N_OPCODES];
extern const char *const gen_module_names[N_MODULES];
extern const char *const gen_host_names[N_HOST_FIXED];
extern const char *const gen_py_files[N_PY_FILES];
extern const char *const gen_py_funcs[N_PY_FUNCS];
extern const char *const gen_traceme_names[N_TRACEME];
extern const char *const gen_counter_names[N_COUNTERS];
extern const char *const gen_kernel_names[N_KERNEL_FORMS];

uint64_t gen_program_id_of(uint32_t module);
/** gen_module_name() - the module's name "jit_x(<program id>)" as XLA writes it, into @dst. */
void gen_module_name(uint32_t module, char *dst, size_t n);
/** gen_framework_op() - the tf_op of framework (non-XLA) GPU kernel @i into @dst. */
void gen_framework_op(uint32_t i, char *dst, size_t n);
/** gen_shape_text() - a random bf16 shape with layout, drawn from @r, into @dst. */
void gen_shape_text(struct rng *r, char *dst, size_t n);

/* ---- plan (plan.c) ------------------------------------------------------- */

/** gen_plan_build() - plan the planes and lines of one host's XSpace, GEN_* variant @flags,
 * into @s (caller frees with gen_plan_free()). */
int gen_plan_build(struct gspace *s, enum kind kind, uint64_t seed, const char *host,
		   uint64_t events, unsigned flags);
void gen_plan_free(struct gspace *s);

/* ---- metadata (meta.c) --------------------------------------------------- */

/* Instructions named as kernels' hlo_op in each generated HloProto, and the most bytes one takes. */
#define GEN_HLO_INSTRS 48
#define GEN_HLO_PROTO_MAX 49152

/* ---- HLO (hlo.c) --------------------------------------------------------- */

/** gen_hlo_proto() - the serialized HloProto of module @name, program @id, into @dst (@cap bytes);
 * its size, 0 when it does not fit. @extras: with the instructions for the cost tests (sidecars;
 * the metadata plane keeps the older program, so profiles sized by --size keep their events). */
size_t gen_hlo_proto(const char *name, uint64_t id, bool extras, uint8_t *dst, size_t cap);
/** gen_hlo_big() - one HloProto of about @target bytes at @path (for bench/hlo.sh); 0 or -errno. */
int gen_hlo_big(const char *path, uint64_t target);
/** gen_hlo_ba_small() - the sidecars' buffer assignment as HloProto field 3 of @out (hlo-buffers.c):
 * @ins the ids and @names the names of Arg_0, Arg_1, the root tuple and main instructions 0..6;
 * @ba, @m, @e scratch. Errors stick in @out->err. */
void gen_hlo_ba_small(struct pb *out, const int64_t *ins, char names[][64], struct pb *ba,
		      struct pb *m, struct pb *e);
/** gen_hlo_ba_big() - gen_hlo_big()'s buffer assignment, written to @fd; 0 or -errno. */
int gen_hlo_ba_big(int fd, uint64_t n, uint64_t first_id, uint64_t per,
		   void (*name)(char *nm, size_t len, uint64_t k));
/** gen_plane_meta() - the metadata maps and plane stats of @p, appended to @meta. */
int gen_plane_meta(const struct gspace *s, const struct gplane *p, struct pb *meta);

/* ---- events (events.c) --------------------------------------------------- */

struct frame {
	int64_t end;
	int kids;
};

/*
 * One allocator's traffic (events.c): a few persistent allocations, then
 * per step a burst of allocations freed again, in live slots whose index
 * makes the address. Both memory lines of a host replay the same stream
 * (the same seed) and each writes every other event of it.
 */
#define MEM_LIVE 48
#define MEM_PERSIST 4
struct memsim {
	struct rng r;
	uint64_t k; /* events made so far */
	int64_t in_use, max_in_use, stack, capacity;
	uint64_t size[MEM_LIVE]; /* 0: a free slot */
	int64_t step;
	unsigned burst;
	bool freeing;
};

/* One event of the stream: what its stats say. */
struct memev {
	bool alloc;
	unsigned slot;
	uint64_t size, requested;
	int64_t t, in_use, max_in_use, step;
};

struct lgen {
	struct rng r;
	struct memsim mem;
	int64_t t, slot;
	int depth;
	struct frame st[MAX_DEPTH];
	uint64_t i, corr;
	int max_depth;
	double p_parent;
};

/** gen_lgen_init() - start the event stream of line @l (same seed, same events). */
void gen_lgen_init(struct lgen *g, const struct gspace *s, const struct gline *l);
/** gen_memory_init() - start the allocator stream of space @s (the same for both lines). */
void gen_memory_init(struct memsim *m, const struct gspace *s);
/** gen_memory_next() - the next event of @m's stream, @total events over the span. */
void gen_memory_next(struct memsim *m, const struct gspace *s, uint64_t total, struct memev *e);
/** gen_memory_peak() - the peak memory_profile.json must find on host plane @p. */
int64_t gen_memory_peak(const struct gspace *s, const struct gplane *p, uint64_t *events);
/** gen_memory_id() - the memory id XProf reads for space @s ("GPU_0_bfc", "0", "cpu"). */
const char *gen_memory_id(const struct gspace *s);
/** gen_event() - encode the next event of @g into @ev (reset first). */
void gen_event(const struct gspace *s, const struct gplane *p, const struct gline *l,
	       struct lgen *g, struct pb *ev);

/* ---- output (write.c) ---------------------------------------------------- */

struct out {
	int fd;
	uint8_t *buf;
	size_t len;
	uint64_t total;
	int err;
};

/* Accumulated facts for --stats. */
struct gstats {
	uint64_t bytes, events;
	uint64_t event_bytes; /* the share of @bytes spent on XEvent records */
};

/** gen_space_write() - write the whole XSpace of @s to @o, adding to @st. */
int gen_space_write(struct gspace *s, struct out *o, struct gstats *st);
/** gen_events_for_size() - the event count that makes a file of about @target bytes. */
/*
 * Variants of a profile (--ungrouped): GEN_UNGROUPED writes no group_id stat
 * and no "group_id" stat metadata, so the space is not grouped yet
 * (XProf's IsXSpaceGrouped()) and gets XProf's trace preprocessing.
 */
#define GEN_UNGROUPED 1u
/*
 * GEN_REGIONS (--regions): three of the fixed host names become
 * ThreadpoolListener::Record (with _p/_pt = 15), ::StartRegion (with _c/_ct =
 * 15) and ::StopRegion, so XProf's preprocessing adds threadpool regions.
 */
#define GEN_REGIONS 2u
#define REGION_RECORD 13 /* gen_host_names[] indices renamed by GEN_REGIONS */
#define REGION_START 14
#define REGION_STOP 15

int gen_events_for_size(enum kind kind, uint64_t seed, unsigned flags, const char *host,
			uint64_t target, uint64_t *events);
/** gen_stats_json() - append the --stats record of one written file to @j (all borrowed). */
int gen_stats_json(const struct gspace *s, const char *path, const struct gstats *st,
		   struct xprofs_buf *j);

/* ---- files, sessions, demo (demo.c) -------------------------------------- */

struct opts {
	const char *out;
	enum kind kind;
	uint64_t size, events, seed;
	bool have_events, stats, sidecars, ungrouped, regions;
	unsigned hosts;
	const char *logdir, *run, *session, *demo, *hlo;
};

int gen_file(const char *path, enum kind kind, uint64_t seed, unsigned flags, const char *host,
	     uint64_t size, uint64_t events, bool have_events, struct xprofs_buf *j);
int gen_session(const char *logdir, const char *run, const char *session, enum kind kind,
		uint64_t seed, unsigned hosts, const char *host_prefix, uint64_t size,
		uint64_t events, bool have_events, bool sidecars, struct xprofs_buf *j);
int gen_demo(const char *dir, uint64_t seed, struct xprofs_buf *j);

#endif
