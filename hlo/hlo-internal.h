/*
 * hlo-internal.h - what the files of hlo/ share: the decoded program's
 * compact form and the index's entries (prefix hlo_).
 *
 * Design: a decoded program is a few flat arrays, no pointer per
 * instruction. Strings are ids into one arena (id 0 is ""), the repeated
 * strings (opcode, op_name, op_type, source file, custom-call target, fusion
 * kind) interned once; shapes are interned by structure; lists (operands,
 * called computations, tuple elements) are runs of a uint32 pool and
 * integer attributes (dims, dimension numbers) runs of an int64 pool. What
 * few instructions carry (called computations, dimensions, window, dot and
 * convolution numbers, backend config) is in an optional side record, so a
 * plain instruction costs 56 bytes plus its name. Backend configs are not
 * copied: their place in the reader is kept and read when asked.
 */
#ifndef XPROFS_HLO_INTERNAL_H
#define XPROFS_HLO_INTERNAL_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "xprofs/hlo.h"
#include "xprofs/wire.h"

/* HloProto / HloModuleProto / HloComputationProto field numbers (hlo.proto). */
#define HLO_F_PROTO_MODULE 1
#define HLO_F_MOD_NAME 1
#define HLO_F_MOD_ENTRY_NAME 2
#define HLO_F_MOD_COMPS 3
#define HLO_F_MOD_ID 5
#define HLO_F_MOD_ENTRY_ID 6
#define HLO_F_COMP_NAME 1
#define HLO_F_COMP_INSTRS 2
#define HLO_F_COMP_ID 5
#define HLO_F_COMP_ROOT_ID 6
#define HLO_F_COMP_IS_FUSION 7

struct hlo_str {
	uint32_t off, len; /* into the arena; NUL-terminated there */
};

struct hlo_ins {
	int64_t id;
	uint32_t name, opcode, op_name, op_type, source_file; /* string ids */
	uint32_t comp, shape;
	uint32_t ops_off, n_ops; /* u32 pool: instruction indices */
	uint32_t ext;            /* 1 + index into exts, 0: none */
	int32_t line;
};

struct hlo_ext {
	uint32_t called_off, n_called; /* u32 pool: computation indices */
	uint32_t cc_target, fusion_kind;
	uint32_t dims_off, n_dims; /* i64 pool */
	uint32_t win_off, n_win;   /* windows */
	uint32_t conv, dot;        /* 1 + index into convs / dots, 0: none */
	int64_t parameter_number, tuple_index, feature_group_count, batch_group_count;
	uint64_t bc_off, bc_len; /* the backend config's bytes in the reader */
};

struct hlo_conv {
	int64_t v[6]; /* input batch/feature, kernel in/out feature, output batch/feature */
	uint32_t off[3], n[3]; /* i64 pool: input, kernel, output spatial dimensions */
};

struct hlo_dot {
	uint32_t off[4], n[4]; /* i64 pool: lhs/rhs contracting, lhs/rhs batch */
};

struct hlo_shape {
	int32_t type;
	uint32_t rank, dims_off;     /* i64 pool */
	uint32_t tuple_off, n_tuple; /* u32 pool: shape indices */
	uint64_t elements;
};

struct hlo_comp {
	int64_t id;
	uint32_t name;
	uint32_t first, n;
	int32_t root; /* instruction index, -1: none */
	bool is_fusion;
};

/*
 * &@base[@off] of a pool (u32, i64, wins) that may still be empty: a program
 * without, say, one operand never allocates its u32 pool, and NULL + 0 is
 * undefined behaviour in C, so an empty pool's entries are NULL.
 */
#define HLO_AT(base, off) ((base) ? (base) + (off) : NULL)

struct xprofs_hlo_program {
	const struct xprofs_reader *r; /* borrowed: backend configs are read from it */
	size_t mem;                    /* bytes allocated besides the arena (XPROFS_HLO_MEM_MAX) */
	uint32_t name, entry_name;
	int64_t id;
	int64_t entry;
	struct xprofs_buf arena;
	struct hlo_str *strs;
	size_t n_strs, cap_strs;
	struct hlo_ins *ins;
	size_t n_ins, cap_ins;
	struct hlo_ext *exts;
	size_t n_exts, cap_exts;
	struct hlo_comp *comps;
	size_t n_comps, cap_comps;
	struct hlo_shape *shapes;
	size_t n_shapes, cap_shapes;
	struct hlo_conv *convs;
	size_t n_convs, cap_convs;
	struct hlo_dot *dots;
	size_t n_dots, cap_dots;
	struct xprofs_hlo_window_dim *wins;
	size_t n_wins, cap_wins;
	uint32_t *u32;
	size_t n_u32, cap_u32;
	int64_t *i64;
	size_t n_i64, cap_i64;
	uint32_t *by_name; /* instruction indices sorted by (name, index) */
};

/*
 * hlo_grow() - xprofs_grow() charged to the budget *@mem: -E2BIG, before
 * allocating, when the doubled array would pass XPROFS_HLO_MEM_MAX.
 */
static inline int hlo_grow(size_t *mem, void *arrayp, size_t *cap, size_t n, size_t size,
			   size_t first)
{
	size_t old = *cap, ncap;
	int r;

	if (n < old)
		return 0;
	ncap = old ? old * 2 : first;
	if (ncap < old || ncap - old > (XPROFS_HLO_MEM_MAX - *mem) / size)
		return -E2BIG;
	if ((r = xprofs_grow(arrayp, cap, n, size, first)) < 0)
		return r;
	*mem += (*cap - old) * size;
	return 0;
}

/* An open-addressing set of ids (1 + id; 0: empty slot), grown at half full. */
struct hlo_set {
	uint32_t *slot;
	size_t cap, n;
};

/*
 * hlo_str_add() - append @n bytes at @s (borrowed) to the arena as a new
 * string; its id in *@id. With @set, an equal string already added through
 * the same set is reused (interning).
 */
int hlo_str_add(struct xprofs_hlo_program *p, struct hlo_set *set, const uint8_t *s, size_t n,
		uint32_t *id);

/* A shape being read: its element type, dims and tuple elements (shape ids). */
struct hlo_shape_tmp {
	int32_t type;
	int64_t *dims;
	size_t rank, cap_dims;
	uint32_t *tuple;
	size_t n_tuple, cap_tuple;
};

/*
 * hlo_shape_add() - the id of shape @t (borrowed) in *@id, interned through
 * @set: a shape equal in type, dims and elements is stored once. -EINVAL
 * (reason through @c) for a negative dim or XPROFS_HLO_ELEMENTS_MAX
 * elements or more.
 */
int hlo_shape_add(struct xprofs_hlo_program *p, struct hlo_set *set, struct wire_cur *c,
		  const struct hlo_shape_tmp *t, uint32_t *id);

void hlo_set_free(struct hlo_set *set);

/* The string of id @s (NUL-terminated, borrowed from the program). */
static inline const char *hlo_str(const struct xprofs_hlo_program *p, uint32_t s)
{
	return p->arena.data + p->strs[s].off;
}

/* An id read from the proto and the index of what it names, for id -> index look-ups. */
struct hlo_id_ix {
	int64_t id;
	uint32_t i;
};
/* hlo_id_ix_cmp() - qsort order: by id, then index (check.c). */
int hlo_id_ix_cmp(const void *a, const void *b);
/* hlo_id_ix_find() - the index of @id in the sorted ids[0..n), or -1 (check.c). */
int64_t hlo_id_ix_find(const struct hlo_id_ix *ids, size_t n, int64_t id);

/*
 * hlo_check() - resolve what refers across computations and prove the
 * program safe to walk (check.c): called computation ids to indices, the
 * entry computation, and no cycle of calls or operands. @c only reports.
 */
int hlo_check(struct xprofs_hlo_program *p, struct wire_cur *c, const int64_t *called_ids,
	      bool have_entry_id, int64_t entry_id);

/*
 * hlo_span_check() - 0 when @len bytes at @off lie inside @r, else -EINVAL
 * with the reason in @err (when it is still empty) (program.c).
 */
int hlo_span_check(const struct xprofs_reader *r, uint64_t off, uint64_t len,
		   struct xprofs_buf *err);

/* The bytes a decoded program holds (for xprofs_hlo_module.bytes). */
size_t hlo_program_bytes(const struct xprofs_hlo_program *p);

/* ---- cost-shapes.c: what cost.c builds on -------------------------------- */

/* One instruction's figures while they are computed (xprofs_hlo_cost's). */
struct hlo_cost {
	double fl, tr, by, rd, wr;
	unsigned unk; /* figures not known: XPROFS_HLO_COST_* */
	const char *why;
};

/* A cost query: its program, work left, calls deep. */
struct hlo_walk {
	const struct xprofs_hlo_program *p;
	uint64_t work; /* steps left */
	unsigned depth;
};

/* hlo_cost_mark() - figures @bits of @c unknown; the first reason stays. */
void hlo_cost_mark(struct hlo_cost *c, unsigned bits, const char *why);
/* hlo_cost_charge() - take @n steps of @w's work; false (and none left) past it. */
bool hlo_cost_charge(struct hlo_walk *w, uint64_t n);
/* hlo_cost_instr(), hlo_cost_shape() - instruction / shape @i (indices from the reader). */
void hlo_cost_instr(const struct hlo_walk *w, size_t i, struct xprofs_hlo_instr *in);
void hlo_cost_shape(const struct hlo_walk *w, size_t i, struct xprofs_hlo_shape *s);
bool hlo_cost_is_tuple(const struct xprofs_hlo_shape *s);
/* hlo_cost_is_array() - not a tuple, token or opaque (XLA's Shape::IsArray()). */
bool hlo_cost_is_array(const struct xprofs_hlo_shape *s);
/*
 * hlo_cost_size_of() - XLA's ShapeUtil::ByteSizeOf(shape, 8), the top level
 * only; -1 for an element type XLA does not size. hlo_cost_size_at(): of
 * shape @i, marking @c's bytes unknown (and 0) for such a type.
 */
double hlo_cost_size_of(const struct xprofs_hlo_shape *s);
double hlo_cost_size_at(const struct hlo_walk *w, size_t i, struct hlo_cost *c);
/* hlo_cost_leaves() - the sum over shape @i's array leaves of their sizes (@elements: elements). */
double hlo_cost_leaves(const struct hlo_walk *w, size_t i, bool elements, struct hlo_cost *c);
/* hlo_cost_op_shape() - the shape of @in's operand @k. */
size_t hlo_cost_op_shape(const struct hlo_walk *w, const struct xprofs_hlo_instr *in, size_t k);
/* hlo_cost_first_elements() - elements of shape @i, or of its first element for a tuple. */
double hlo_cost_first_elements(const struct hlo_walk *w, size_t i);
/* hlo_cost_preprocess() - HloCostAnalysis::Preprocess(): bytes = operands + output. */
void hlo_cost_preprocess(const struct hlo_walk *w, const struct xprofs_hlo_instr *in,
			 struct hlo_cost *c);

/*
 * hlo_cost_dot() - XLA's GetDotFlops(): 2 x the elements of @out_shape (its
 * first element for a tuple) x the product of @lhs_shape's dimensions
 * @contracting[0..n). -EINVAL when one is not a dimension of the lhs.
 */
int hlo_cost_dot(const struct hlo_walk *w, size_t lhs_shape, size_t out_shape,
		 const int64_t *contracting, size_t n, double *flops);
/*
 * hlo_cost_conv() - XLA's GetConvolutionFlops() of @in (a convolution or a
 * cuDNN call) with result @res_shape (its first element for a tuple),
 * charging the positions it counts to @w. -EINVAL (dimension numbers or
 * window that do not fit) or -E2BIG (past the work budget) with the reason
 * in *@why.
 */
int hlo_cost_conv(struct hlo_walk *w, const struct xprofs_hlo_instr *in, size_t res_shape,
		  double *flops, const char **why);

enum hlo_cost_call { HLO_COST_OTHER, HLO_COST_GEMM, HLO_COST_DNN_CONV };
/* hlo_cost_call_kind() - what GpuHloCostAnalysis counts custom call @target as. */
enum hlo_cost_call hlo_cost_call_kind(const char *target);
/*
 * hlo_cost_gemm_contracting() - the lhs contracting dimensions of gemm
 * custom call @i's backend config (gemm_backend_config.dot_dimension_numbers)
 * into @v (XPROFS_HLO_RANK_MAX entries) and *@n; -ENOENT without them,
 * -EINVAL when one is not an integer.
 */
int hlo_cost_gemm_contracting(const struct xprofs_hlo_program *p, size_t i, int64_t *v, size_t *n);

#endif
