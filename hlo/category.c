/*
 * category.c - the category of an HLO instruction, as XProf shows it for a
 * device op: HloInstructionWrapper::Category() (xprof/utils/hlo_module_map.cc)
 * is XLA's HloInstruction::ToCategory() (xla/hlo/ir/hlo_instruction.cc),
 * which HloFusionInstruction overrides (hlo_instructions.cc).
 *
 * The rules, in XLA's order:
 *  - fusion: its kind, "loop fusion", "input fusion", "output fusion" or
 *    "custom fusion" (HloFusionInstruction::ToCategory());
 *  - transpose, copy, reshape, dynamic-reshape: "data formatting";
 *  - an elementwise instruction (HloInstruction::IsElementwise(), i.e.
 *    IsElementwiseImpl() with no operand): "non-fusion elementwise";
 *  - anything else: its opcode ("convolution", "custom-call", "reduce", ...).
 * Elementwise is XLA's IsOpElementwise() list of opcodes, except a
 * bitcast-convert between types of different bit widths (not elementwise),
 * plus the subclasses that say so themselves: constant and rng always
 * (HloConstantInstruction, HloRngInstruction), map when its dimensions are
 * none or 0..rank-1 in order (HloMapInstruction). dynamic-update-slice is
 * elementwise on operand 0 only, so not here.
 *
 * Limits: a fusion kind XLA does not know fails XLA's proto conversion (the
 * module would be dropped); here it gives "fusion", the opcode.
 */
#include <stdlib.h>
#include <string.h>

#include "hlo-internal.h"

/* XLA's HloInstruction::IsOpElementwise(), sorted for bsearch(). */
static const char *const elementwise[] = {
	"abs",
	"add",
	"and",
	"atan2",
	"bitcast-convert",
	"cbrt",
	"ceil",
	"clamp",
	"clz",
	"compare",
	"complex",
	"convert",
	"copy",
	"cosine",
	"divide",
	"erf",
	"exponential",
	"exponential-minus-one",
	"floor",
	"imag",
	"is-finite",
	"log",
	"log-plus-one",
	"logistic",
	"maximum",
	"minimum",
	"multiply",
	"negate",
	"not",
	"or",
	"popcnt",
	"power",
	"real",
	"reduce-precision",
	"remainder",
	"round-nearest-afz",
	"round-nearest-even",
	"rsqrt",
	"select",
	"shift-left",
	"shift-right-arithmetic",
	"shift-right-logical",
	"sign",
	"sine",
	"sqrt",
	"stochastic-convert",
	"subtract",
	"tan",
	"tanh",
	"xor",
};

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The element bit width of shape @shape (0: a tuple or an unknown type). */
static unsigned shape_bits(const struct xprofs_hlo_program *p, size_t shape)
{
	struct xprofs_hlo_shape s;

	if (xprofs_hlo_shape_get(p, shape, &s) < 0)
		return 0;
	return xprofs_hlo_type_bits(s.element_type);
}

/* HloMapInstruction::IsElementwiseImpl(): no dimensions, or exactly 0..rank-1. */
static bool map_elementwise(const struct xprofs_hlo_program *p, const struct xprofs_hlo_instr *in)
{
	struct xprofs_hlo_shape s;

	if (!in->n_dimensions)
		return true;
	if (xprofs_hlo_shape_get(p, in->shape, &s) < 0 || s.rank != in->n_dimensions)
		return false;
	for (size_t d = 0; d < in->n_dimensions; d++)
		if (in->dimensions[d] != (int64_t)d)
			return false;
	return true;
}

/* HloInstruction::IsElementwise() of @in (not a fusion). */
static bool is_elementwise(const struct xprofs_hlo_program *p, const struct xprofs_hlo_instr *in)
{
	const char *op = in->opcode;
	struct xprofs_hlo_instr o;

	if (!strcmp(op, "constant") || !strcmp(op, "rng"))
		return true;
	if (!strcmp(op, "map"))
		return map_elementwise(p, in);
	if (!bsearch(&op, elementwise, sizeof(elementwise) / sizeof(elementwise[0]),
		     sizeof(elementwise[0]), cmp_str))
		return false;
	/* a bitcast-convert that changes the element width is not elementwise */
	if (!strcmp(op, "bitcast-convert") && in->n_operands &&
	    xprofs_hlo_instr_get(p, in->operands[0], &o) == 0 &&
	    shape_bits(p, in->shape) != shape_bits(p, o.shape))
		return false;
	return true;
}

/* HloFusionInstruction::ToCategory(): {fusion kind, category} */
static const char *const fusions[][2] = {{"kLoop", "loop fusion"},
					 {"kInput", "input fusion"},
					 {"kOutput", "output fusion"},
					 {"kCustom", "custom fusion"}};

const char *xprofs_hlo_category(const struct xprofs_hlo_program *p, size_t i)
{
	struct xprofs_hlo_instr in;

	if (xprofs_hlo_instr_get(p, i, &in) < 0)
		return "";
	if (!strcmp(in.opcode, "fusion")) {
		for (size_t k = 0; k < sizeof(fusions) / sizeof(fusions[0]); k++)
			if (!strcmp(in.fusion_kind, fusions[k][0]))
				return fusions[k][1];
		return in.opcode;
	}
	if (!strcmp(in.opcode, "transpose") || !strcmp(in.opcode, "copy") ||
	    !strcmp(in.opcode, "reshape") || !strcmp(in.opcode, "dynamic-reshape"))
		return "data formatting";
	if (is_elementwise(p, &in))
		return "non-fusion elementwise";
	return in.opcode;
}
