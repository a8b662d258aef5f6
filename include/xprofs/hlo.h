/*
 * xprofs/hlo.h - reading the XLA programs (HloProto) a profile carries,
 * lazily and in bounded memory (docs/hlo.md).
 *
 * Model: an index (struct xprofs_hlo_index) lists the programs it was given
 * and where each one's bytes lie, reading nothing but each module's name:
 * the session's sidecar files "<module>(<program id>).hlo_proto.pb"
 * (xprofs_hlo_index_add_sidecar()) and the "Hlo Proto" stats of a profile's
 * "/host:metadata" plane (xprofs_hlo_index_add_xspace()), or any byte range
 * of any reader (xprofs_hlo_index_add()). A program is decoded when asked
 * (xprofs_hlo_program_load()) into a compact, read-only form: its
 * computations, and their instructions with opcode, shape, operands, called
 * computations, OpMetadata, custom-call target, fusion kind and the
 * convolution/dot attributes, all ids resolved to indices and checked (no
 * dangling id, no cycle of operands or calls). The caller decodes one
 * program at a time and frees it.
 *
 * Schema: hlo/proto/hlo.proto, a subset of openxla/xla's
 * xla/service/hlo.proto and xla/xla_data.proto with the same field numbers,
 * walked by hand with wire/ (no generated code).
 *
 * Errors: 0 or -errno. A malformed or hostile proto gives -EINVAL and the
 * reason (with the file offset) in @err; a program past one of the limits
 * below gives -E2BIG with the reason; a read error the reader's -errno.
 * Never a crash, a hang or an allocation sized by a claim in the file alone.
 *
 * Thread safety: an index and a decoded program are read-only once built;
 * several threads may decode programs of one index at once when the readers'
 * pread() is thread-safe.
 */
#ifndef XPROFS_HLO_H
#define XPROFS_HLO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "xprofs/util.h"

struct xprofs_xspace;

/* ---- limits (per program unless said) --------------------------------- */

/* Bytes of one serialized HloProto. */
#define XPROFS_HLO_PROTO_MAX ((uint64_t)256 << 20)
/* Instructions and computations of one program. */
#define XPROFS_HLO_INSTRS_MAX ((size_t)1 << 22)
#define XPROFS_HLO_COMPS_MAX ((size_t)1 << 20)
/* Bytes of strings kept (each string is cut at XPROFS_HLO_STR_MAX bytes). */
#define XPROFS_HLO_ARENA_MAX ((size_t)128 << 20)
#define XPROFS_HLO_STR_MAX ((size_t)64 << 10)
/*
 * Bytes of everything else a program holds while it is decoded and after
 * (instructions, shapes, lists, look-up tables): with the arena, a decoded
 * program never holds more than 384 MiB, whatever the proto claims.
 */
#define XPROFS_HLO_MEM_MAX ((size_t)256 << 20)
/* The rank and the tuple nesting of one shape. */
#define XPROFS_HLO_RANK_MAX 64
#define XPROFS_HLO_TUPLE_DEPTH_MAX 32
/* An array shape has fewer elements than this (4 TiB of f32: more than any device holds). */
#define XPROFS_HLO_ELEMENTS_MAX ((uint64_t)1 << 40)
/* Programs in one index. */
#define XPROFS_HLO_PROGRAMS_MAX ((size_t)1 << 16)

/* ---- the index of programs -------------------------------------------- */

enum xprofs_hlo_source {
	XPROFS_HLO_SIDECAR,  /* a "<module>(<program id>).hlo_proto.pb" file */
	XPROFS_HLO_METADATA, /* an "Hlo Proto" stat of the "/host:metadata" plane */
	XPROFS_HLO_RANGE,    /* a byte range given by the caller */
};

struct xprofs_hlo_index;

/* One indexed program; every pointer borrowed from the index. */
struct xprofs_hlo_program_info {
	const char *module; /* HloModuleProto.name (the file name's for a sidecar) */
	uint64_t program_id;
	enum xprofs_hlo_source source;
	const struct xprofs_reader *r; /* the reader its bytes are in */
	uint64_t off, len;             /* the serialized HloProto */
};

/** xprofs_hlo_index_new() - an empty index; caller frees with xprofs_hlo_index_free(). */
int xprofs_hlo_index_new(struct xprofs_hlo_index **out) XPROFS_WUR;
/** xprofs_hlo_index_free() - accepts NULL. The readers it was given are not closed. */
void xprofs_hlo_index_free(struct xprofs_hlo_index *idx);

/**
 * xprofs_hlo_index_add() - add the HloProto at [@off, @off + @len) of @r as
 * program @program_id. @r is borrowed and must outlive the index and every
 * program decoded from it. @module (borrowed, copied) may be NULL: the
 * module's name is then read from the proto. -EINVAL (reason in @err) when
 * the range lies outside @r or the name cannot be read; -E2BIG past
 * XPROFS_HLO_PROTO_MAX or XPROFS_HLO_PROGRAMS_MAX.
 */
int xprofs_hlo_index_add(struct xprofs_hlo_index *idx, const struct xprofs_reader *r, uint64_t off,
			 uint64_t len, uint64_t program_id, const char *module,
			 enum xprofs_hlo_source source, struct xprofs_buf *err) XPROFS_WUR;

/**
 * xprofs_hlo_sidecar_name() - split a sidecar's file name (no directory)
 * "<module>(<program id>).hlo_proto.pb": 0 with the module name's length in
 * *@module_len and the id in *@program_id, or -EINVAL when it is not one.
 */
int xprofs_hlo_sidecar_name(const char *file_name, size_t *module_len, uint64_t *program_id);

/**
 * xprofs_hlo_index_add_sidecar() - add the sidecar file @file_name (its base
 * name, borrowed) whose content @r holds (borrowed, as in xprofs_hlo_index_add()).
 * Reads nothing: module and program id come from the name.
 */
int xprofs_hlo_index_add_sidecar(struct xprofs_hlo_index *idx, const char *file_name,
				 const struct xprofs_reader *r, struct xprofs_buf *err) XPROFS_WUR;

/**
 * xprofs_hlo_index_add_xspace() - add the HloProtos of @x's first
 * "/host:metadata" plane, as XProf's ParseHloProtosFromXSpace() finds them:
 * the bytes value of each event metadata's "Hlo Proto" stat, program id =
 * the metadata's id; or, in the legacy form (a plane with plane stats),
 * every bytes plane stat, program id = its metadata id. @x is borrowed and
 * must outlive the index (its reader holds the bytes). Entries whose module
 * name cannot be read are skipped (XProf drops a proto that does not parse).
 * Returns the number of programs added, or -errno.
 */
ssize_t xprofs_hlo_index_add_xspace(struct xprofs_hlo_index *idx, const struct xprofs_xspace *x,
				    struct xprofs_buf *err) XPROFS_WUR;

/** xprofs_hlo_index_count() - the programs added, in the order they were added. */
size_t xprofs_hlo_index_count(const struct xprofs_hlo_index *idx);
/** xprofs_hlo_index_get() - program @i (borrowed pointers); -ERANGE past the end. */
int xprofs_hlo_index_get(const struct xprofs_hlo_index *idx, size_t i,
			 struct xprofs_hlo_program_info *out);
/**
 * xprofs_hlo_index_find() - the first program added with @program_id (as
 * XProf's HloProtoMap keeps the first), or -ENOENT.
 */
ssize_t xprofs_hlo_index_find(const struct xprofs_hlo_index *idx, uint64_t program_id);

/* ---- a decoded program -------------------------------------------------- */

struct xprofs_hlo_program;

/**
 * xprofs_hlo_program_load() - decode program @i of @idx (borrowed; must
 * outlive the program, which reads its backend configs from the reader).
 * Caller frees *@out with xprofs_hlo_program_free().
 */
int xprofs_hlo_program_load(const struct xprofs_hlo_index *idx, size_t i, struct xprofs_buf *err,
			    struct xprofs_hlo_program **out) XPROFS_WUR;
/**
 * xprofs_hlo_program_decode() - decode the HloProto at [@off, @off + @len)
 * of @r (borrowed; must outlive the program). Caller frees *@out with
 * xprofs_hlo_program_free().
 */
int xprofs_hlo_program_decode(const struct xprofs_reader *r, uint64_t off, uint64_t len,
			      struct xprofs_buf *err, struct xprofs_hlo_program **out) XPROFS_WUR;
/** xprofs_hlo_program_free() - accepts NULL. */
void xprofs_hlo_program_free(struct xprofs_hlo_program *p);

/* The module; strings borrowed from the program ("" when absent). */
struct xprofs_hlo_module {
	const char *name, *entry_computation_name;
	int64_t id;
	ssize_t entry; /* the entry computation's index, -1 when the module names none */
	size_t n_computations, n_instructions, n_shapes;
	size_t bytes; /* memory the decoded program holds */
};
void xprofs_hlo_program_module(const struct xprofs_hlo_program *p, struct xprofs_hlo_module *out);

/* Computation @i: its instructions are [first, first + n) of the program's. */
struct xprofs_hlo_computation {
	const char *name;
	int64_t id;
	size_t first, n;
	ssize_t root; /* the root instruction's index, -1 when it has no instructions */
	bool is_fusion;
};
int xprofs_hlo_computation_get(const struct xprofs_hlo_program *p, size_t i,
			       struct xprofs_hlo_computation *out);

/* xla::PrimitiveType values used by the shapes (xla_data.proto). */
enum xprofs_hlo_type {
	XPROFS_HLO_TYPE_INVALID = 0,
	XPROFS_HLO_PRED = 1,
	XPROFS_HLO_TUPLE = 13,
	XPROFS_HLO_OPAQUE = 14,
	XPROFS_HLO_TOKEN = 17,
};

/* Shape @i: an array (element type, dims) or a tuple of shapes; borrowed. */
struct xprofs_hlo_shape {
	int element_type;    /* xla::PrimitiveType as in the proto */
	const int64_t *dims; /* rank entries */
	size_t rank;
	const uint32_t *tuple; /* shape indices, for a tuple */
	size_t n_tuple;
	uint64_t elements; /* product of the dims (1 for a scalar, 0 for a tuple) */
};
int xprofs_hlo_shape_get(const struct xprofs_hlo_program *p, size_t i,
			 struct xprofs_hlo_shape *out);
/**
 * xprofs_hlo_type_bits() - bits per element of @type (xla::PrimitiveType),
 * 0 for a tuple, token, opaque or unknown type.
 */
unsigned xprofs_hlo_type_bits(int type);
/** xprofs_hlo_type_name() - "f32", "bf16", ... as XLA prints them; "?" if unknown. */
const char *xprofs_hlo_type_name(int type);

struct xprofs_hlo_window_dim {
	int64_t size, stride, padding_low, padding_high, window_dilation, base_dilation;
	bool window_reversal;
};

struct xprofs_hlo_conv_dnums {
	int64_t input_batch, input_feature, kernel_input_feature, kernel_output_feature,
		output_batch, output_feature;
	const int64_t *input_spatial, *kernel_spatial, *output_spatial;
	size_t n_input_spatial, n_kernel_spatial, n_output_spatial;
};

struct xprofs_hlo_dot_dnums {
	const int64_t *lhs_contracting, *rhs_contracting, *lhs_batch, *rhs_batch;
	size_t n_lhs_contracting, n_rhs_contracting, n_lhs_batch, n_rhs_batch;
};

/* Instruction @i of the program; every pointer borrowed from it. */
struct xprofs_hlo_instr {
	int64_t id;
	const char *name, *opcode;
	size_t computation;       /* the computation it belongs to */
	size_t shape;             /* xprofs_hlo_shape_get() */
	const uint32_t *operands; /* instruction indices, in the same computation */
	size_t n_operands;
	const uint32_t *called; /* computation indices (fused computation, reducer, ...) */
	size_t n_called;
	/* OpMetadata ("" / 0 when absent) */
	const char *op_name, *op_type, *source_file;
	int32_t source_line;
	const char *custom_call_target, *fusion_kind;
	int64_t parameter_number, tuple_index;
	const int64_t *dimensions; /* the "dimensions" attribute (reduce, transpose, ...) */
	size_t n_dimensions;
	int64_t feature_group_count, batch_group_count; /* at least 1 */
	const struct xprofs_hlo_window_dim *window;
	size_t n_window;
	bool has_conv, has_dot;
	struct xprofs_hlo_conv_dnums conv;
	struct xprofs_hlo_dot_dnums dot;
	uint64_t backend_config_len; /* read it with xprofs_hlo_backend_config() */
};
int xprofs_hlo_instr_get(const struct xprofs_hlo_program *p, size_t i,
			 struct xprofs_hlo_instr *out);

/**
 * xprofs_hlo_backend_config() - append instruction @i's backend_config (raw
 * bytes, usually JSON) to @out (borrowed; its max bounds it: -E2BIG), read
 * from the program's reader now.
 */
int xprofs_hlo_backend_config(const struct xprofs_hlo_program *p, size_t i,
			      struct xprofs_buf *out) XPROFS_WUR;

/**
 * xprofs_hlo_find_instr() - the first instruction named @name (@n bytes) in
 * computation order, as XProf's HloModuleWrapper keeps it, or -ENOENT.
 */
ssize_t xprofs_hlo_find_instr(const struct xprofs_hlo_program *p, const char *name, size_t n);

/* ---- a program's buffer assignment (buffers.c, docs/hlo.md) ------------ */

/*
 * HloProto.buffer_assignment (field 3: BufferAssignmentProto), decoded on
 * demand apart from the program: its logical buffers, buffer allocations
 * (with the logical buffers assigned to each) and heap simulator traces.
 * Ids are kept as read and also resolved: an id that names no logical
 * buffer resolves to -1 (counted in dangling_*), never to a wrong entry;
 * several logical buffers of one id resolve to the last (as XProf's maps
 * keep it). Nothing here judges the trace (a buffer never freed, freed
 * twice): that is the caller's simulation.
 */

/* Logical buffers, allocations, assigned entries and traces, each; and events of all traces. */
#define XPROFS_HLO_BUFFERS_MAX ((size_t)1 << 24)
#define XPROFS_HLO_HEAP_EVENTS_MAX ((size_t)1 << 25)

/* HeapSimulatorTrace.Event.Kind; any other value is kept as read. */
enum { XPROFS_HLO_HEAP_ALLOC = 0, XPROFS_HLO_HEAP_FREE = 1, XPROFS_HLO_HEAP_SHARE_WITH = 2 };

struct xprofs_hlo_logical_buffer {
	int64_t id, size, color;
	int64_t instruction_id;     /* defined_at.instruction_id */
	const int64_t *shape_index; /* defined_at.shape_index */
	size_t n_shape_index;
};

struct xprofs_hlo_allocation {
	int64_t index, size, color, parameter_number;
	bool is_thread_local, is_tuple, is_entry_computation_parameter, is_constant, maybe_live_out;
	size_t first_assigned, n_assigned; /* its entries of the assigned array */
};

struct xprofs_hlo_assigned {
	int64_t logical_buffer_id, offset, size;
	int32_t buffer; /* the logical buffer's index, -1: the id names none */
};

struct xprofs_hlo_heap_trace {
	size_t first_event, n_events; /* its entries of the events array */
	bool whole_module_simulation;
	int64_t buffer_allocation_index;
};

struct xprofs_hlo_heap_event {
	int64_t buffer_id, share_with_canonical_id;
	int32_t buffer, canonical; /* their logical buffers' indices, -1: none */
	int32_t kind;              /* XPROFS_HLO_HEAP_*, or the value read */
	uint32_t name;             /* instruction_name: xprofs_hlo_buffers_str() */
};

/* A decoded buffer assignment; every array borrowed from it, in proto order. */
struct xprofs_hlo_buffer_assignment {
	const struct xprofs_hlo_logical_buffer *logical;
	size_t n_logical;
	const struct xprofs_hlo_allocation *allocations;
	size_t n_allocations;
	const struct xprofs_hlo_assigned *assigned;
	size_t n_assigned;
	const struct xprofs_hlo_heap_trace *traces;
	size_t n_traces;
	const struct xprofs_hlo_heap_event *events;
	size_t n_events;
	/* ids that name no logical buffer: assigned entries, events (buffer_id, or a share's canonical) */
	size_t dangling_assigned, dangling_events;
	size_t bytes; /* memory it holds */
};

struct xprofs_hlo_buffers;

/**
 * xprofs_hlo_buffers_decode() - the buffer assignment of the HloProto at
 * [@off, @off + @len) of @r (borrowed for the call). -ENOENT when the proto
 * has none (no field 3); -EINVAL (reason in @err) when it is malformed;
 * -E2BIG past XPROFS_HLO_BUFFERS_MAX, XPROFS_HLO_HEAP_EVENTS_MAX or the
 * memory budget (XPROFS_HLO_MEM_MAX, strings XPROFS_HLO_ARENA_MAX). Caller
 * frees *@out with xprofs_hlo_buffers_free().
 */
int xprofs_hlo_buffers_decode(const struct xprofs_reader *r, uint64_t off, uint64_t len,
			      struct xprofs_buf *err, struct xprofs_hlo_buffers **out) XPROFS_WUR;
/** xprofs_hlo_buffers_load() - the same for program @i of @idx (borrowed for the call). */
int xprofs_hlo_buffers_load(const struct xprofs_hlo_index *idx, size_t i, struct xprofs_buf *err,
			    struct xprofs_hlo_buffers **out) XPROFS_WUR;
/** xprofs_hlo_buffers_free() - accepts NULL. */
void xprofs_hlo_buffers_free(struct xprofs_hlo_buffers *b);
/** xprofs_hlo_buffers_get() - the arrays of @b (borrowed from it). */
void xprofs_hlo_buffers_get(const struct xprofs_hlo_buffers *b,
			    struct xprofs_hlo_buffer_assignment *out);
/** xprofs_hlo_buffers_str() - an event's name (NUL-terminated, borrowed from @b); "" if unknown. */
const char *xprofs_hlo_buffers_str(const struct xprofs_hlo_buffers *b, uint32_t name);

/* ---- FLOPs and bytes (hlo/cost.c, docs/hlo.md "FLOPs and bytes") -------- */

/* Which figures of struct xprofs_hlo_cost are known. */
enum {
	XPROFS_HLO_COST_FLOPS = 1u << 0,
	XPROFS_HLO_COST_TRANSCENDENTALS = 1u << 1,
	XPROFS_HLO_COST_BYTES = 1u << 2, /* bytes_accessed */
	XPROFS_HLO_COST_RW = 1u << 3,    /* bytes_read and bytes_written */
	XPROFS_HLO_COST_ALL = 15u,
};

/*
 * One instruction's cost as XLA's HloCostAnalysis gives it (with
 * GpuHloCostAnalysis's cuBLAS gemm and cuDNN convolution custom calls):
 * flops (a fused multiply-add is 2), transcendentals (counted apart from
 * flops), bytes_accessed (XLA's kBytesAccessedKey: operands + output as XLA
 * sizes them, a tuple being its table of 8-byte pointers), and the split XProf
 * exports per memory space: bytes_read (XLA's GetBytesRead(): the operands'
 * array leaves) and bytes_written (GetBytesWritten(): the output's array
 * leaves). Figures are doubles (exact below 2^53; XLA keeps them in floats).
 * A figure not in @known is 0 and @reason (a static string) says why the
 * program does not determine it; @reason is NULL when all are known.
 */
struct xprofs_hlo_cost {
	double flops, transcendentals, bytes_accessed;
	double bytes_read, bytes_written;
	unsigned known; /* XPROFS_HLO_COST_* */
	const char *reason;
};

/*
 * Work one xprofs_hlo_cost_get() may do: instructions visited (a fusion, a
 * reduce's region, a while's body...) plus convolution positions counted.
 * Past it the figures that needed the work are unknown. Calls deeper than
 * XPROFS_HLO_COST_DEPTH_MAX levels are unknown too.
 */
#define XPROFS_HLO_COST_WORK_MAX ((uint64_t)1 << 24)
#define XPROFS_HLO_COST_DEPTH_MAX 64

/**
 * xprofs_hlo_cost_get() - the cost of instruction @instr of @p (borrowed) in
 * *@out. Reads the backend config of a gemm custom call from the program's
 * reader. 0, or -ERANGE when @instr is no instruction of @p; a figure the
 * program does not determine is not an error (see @out->known). Allocates at
 * most one backend config (XPROFS_HLO_COST_CONFIG_MAX bytes).
 */
#define XPROFS_HLO_COST_CONFIG_MAX ((size_t)1 << 20)
int xprofs_hlo_cost_get(const struct xprofs_hlo_program *p, size_t instr,
			struct xprofs_hlo_cost *out) XPROFS_WUR;
/* ---- categories and the facts table (category.c, facts.c) -------------- */

/**
 * xprofs_hlo_category() - instruction @i's category as XProf shows it for a
 * device op (HloInstructionWrapper::Category() = XLA's
 * HloInstruction::ToCategory()): "loop fusion", "input fusion", "output
 * fusion", "custom fusion"; "data formatting" (transpose, copy, reshape,
 * dynamic-reshape); "non-fusion elementwise"; else the opcode. A static
 * string or one borrowed from @p; "" when @i is out of range.
 */
const char *xprofs_hlo_category(const struct xprofs_hlo_program *p, size_t i);

/* Strings a facts table keeps are cut at this many bytes each. */
#define XPROFS_HLO_FACT_STR_MAX ((size_t)4096)
/* The default cap of a facts table's memory (entries and strings). */
#define XPROFS_HLO_FACTS_MEM_MAX ((size_t)64 << 20)

/*
 * A cost function: sets *@flops (the model's: XProf's ModelFlops()),
 * *@device_flops (normalized to the device's peak rate: DeviceFlops()) and
 * *@bytes_accessed of instruction @i of @p (each NAN when it leaves it),
 * called once for each instruction the table keeps, while its program is
 * decoded. @arg is the caller's.
 */
typedef void (*xprofs_hlo_cost_fn)(void *arg, const struct xprofs_hlo_program *p, size_t i,
				   double *flops, double *device_flops, double *bytes_accessed);

struct xprofs_hlo_facts_opts {
	size_t mem_max;          /* 0: XPROFS_HLO_FACTS_MEM_MAX */
	xprofs_hlo_cost_fn cost; /* NULL: flops, device_flops, bytes_accessed stay NAN */
	void *cost_arg;
};

/* One instruction's facts; strings borrowed from the table (not NUL-terminated). */
struct xprofs_hlo_fact {
	uint64_t program_id;
	const char *name;
	size_t name_len;
	/* op_full_name() = TSL TraceMeOp(op_name, op_type) = "<op_name>:<op_type>" */
	const char *op_full_name;
	size_t op_full_name_len;
	const char *op_name, *op_type; /* the two parts of op_full_name */
	size_t op_name_len, op_type_len;
	const char *source; /* source_info(): "<basename of source_file>:<line>", or "" */
	size_t source_len;
	const char *category, *opcode; /* these two NUL-terminated */
	size_t category_len, opcode_len;
	enum xprofs_hlo_source from;  /* where its program came from */
	size_t program;               /* the program's index in the index ... */
	size_t instr;                 /* ... and the instruction's in the program */
	double flops, bytes_accessed; /* from the cost function, else NAN */
	double device_flops;          /* likewise */
};

struct xprofs_hlo_facts;

/**
 * xprofs_hlo_facts_build() - the facts of every instruction of the programs
 * of @idx (borrowed; the table copies what it keeps), keyed by (program id,
 * instruction name), as XProf's HloModuleMap: the first program of an id
 * that decodes wins, and in it the first instruction of a name. Programs
 * are decoded one at a time and freed; one that does not decode (-EINVAL,
 * -E2BIG) adds nothing, as XProf drops a module it cannot convert. Past
 * @opts->mem_max the instructions read so far are kept and the table says
 * it is truncated. @opts may be NULL. Caller frees *@out with
 * xprofs_hlo_facts_free(). 0, or -ENOMEM.
 */
int xprofs_hlo_facts_build(const struct xprofs_hlo_index *idx,
			   const struct xprofs_hlo_facts_opts *opts,
			   struct xprofs_hlo_facts **out) XPROFS_WUR;
/** xprofs_hlo_facts_free() - accepts NULL. */
void xprofs_hlo_facts_free(struct xprofs_hlo_facts *f);
/**
 * xprofs_hlo_facts_find() - the facts of instruction @name (@n bytes) of
 * program @program_id into *@out: true, or false when the table has none.
 * @f may be NULL (no facts).
 */
bool xprofs_hlo_facts_find(const struct xprofs_hlo_facts *f, uint64_t program_id, const char *name,
			   size_t n, struct xprofs_hlo_fact *out);
/* The instructions kept, the bytes held, and whether the memory cap cut the table. */
size_t xprofs_hlo_facts_count(const struct xprofs_hlo_facts *f);
size_t xprofs_hlo_facts_bytes(const struct xprofs_hlo_facts *f);
bool xprofs_hlo_facts_truncated(const struct xprofs_hlo_facts *f);
/**
 * xprofs_hlo_tf_op_name() - append XProf's TfOpName() of @fact to @out
 * (borrowed; -E2BIG past its max): tsl TfOpFullname(op_type, op_name), which
 * is op_full_name except "" when both parts are empty and
 * "<op_name>:<op_name>" for an "XLA_Args" / "XLA_Retvals" op without a type.
 */
int xprofs_hlo_tf_op_name(const struct xprofs_hlo_fact *fact, struct xprofs_buf *out) XPROFS_WUR;

/* ---- a render's HLO source (lazy.c) ------------------------------------- */

struct xprofs_hlo_lazy;
struct xs_hlo_src;

/**
 * xprofs_hlo_lazy_new() - the HLO source of a render of @x (borrowed;
 * must outlive the source): give xprofs_hlo_lazy_src() to the render
 * context (rc->hlo); the first view that asks (xs_hlo_facts()) builds the
 * facts of @x's metadata plane and attached sidecars, once, with @opts
 * (copied; NULL: the defaults, 64 MiB). Caller frees with
 * xprofs_hlo_lazy_free() after the render. 0 or -ENOMEM.
 */
int xprofs_hlo_lazy_new(const struct xprofs_xspace *x, const struct xprofs_hlo_facts_opts *opts,
			struct xprofs_hlo_lazy **out) XPROFS_WUR;
/** xprofs_hlo_lazy_src() - what a render context borrows (rc->hlo); NULL for NULL. */
struct xs_hlo_src *xprofs_hlo_lazy_src(struct xprofs_hlo_lazy *h);
/** xprofs_hlo_lazy_free() - accepts NULL. */
void xprofs_hlo_lazy_free(struct xprofs_hlo_lazy *h);

/**
 * xprofs_hlo_lazy_index() - the index of the programs of the render whose
 * HLO source is @s (rc->hlo): metadata plane first, then sidecars, as the
 * facts are built from, made once on first use (without the facts). *@out
 * is borrowed from the source (NULL when @s is NULL or not made by
 * xprofs_hlo_lazy_new()). 0 or -ENOMEM.
 */
int xprofs_hlo_lazy_index(struct xs_hlo_src *s, const struct xprofs_hlo_index **out) XPROFS_WUR;

#endif
