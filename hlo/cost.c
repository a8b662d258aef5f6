/*
 * cost.c - FLOPs, transcendentals and bytes accessed of one HLO instruction,
 * as XLA's HloCostAnalysis (xla/service/hlo_cost_analysis.cc) computes them,
 * with GpuHloCostAnalysis's cuBLAS gemm and cuDNN convolution custom calls
 * (xla/service/gpu/model/gpu_hlo_cost_analysis.cc). Every formula and what
 * stays unknown: docs/hlo.md "FLOPs and bytes".
 *
 * Design: one handler per kind of opcode, each filling a struct cost from
 * the instruction's shapes and attributes through the public reader API
 * (the reader checked every index and rank). Called computations (fusions,
 * reduce regions, while bodies) are summed recursively, each call charged
 * to a work budget and a depth bound, so a hostile program costs at most
 * XPROFS_HLO_COST_WORK_MAX steps and no deep stack. Figures are doubles:
 * products of dimensions never overflow.
 *
 * Limits: layouts are not read by the reader, so every shape is sized as if
 * it has one (XLA sizes a shape without a layout as 0 bytes) and sub-byte
 * packing is not applied; a transpose's bytes stay unknown (it is a bitcast
 * or a copy depending on its layouts).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "xprofs/hlo.h"

enum { U_FL = XPROFS_HLO_COST_FLOPS, U_TR = XPROFS_HLO_COST_TRANSCENDENTALS };
enum { U_BY = XPROFS_HLO_COST_BYTES, U_RW = XPROFS_HLO_COST_RW, U_ALL = XPROFS_HLO_COST_ALL };

/* Window arithmetic on int64 values from the file cannot overflow in 128 bits. */
__extension__ typedef __int128 i128;

/* XLA's pointer size (kDefaultPointerSize): a tuple is a table of these. */
#define PTR_BYTES 8.0

struct cost {
	double fl, tr, by, rd, wr;
	unsigned unk; /* figures not known: U_* */
	const char *why;
};

struct walk {
	const struct xprofs_hlo_program *p;
	uint64_t work; /* steps left */
	unsigned depth;
};

static void mark(struct cost *c, unsigned bits, const char *why)
{
	c->unk |= bits;
	if (!c->why)
		c->why = why;
}

static bool charge(struct walk *w, uint64_t n)
{
	if (w->work < n) {
		w->work = 0;
		return false;
	}
	w->work -= n;
	return true;
}

static void instr(const struct walk *w, size_t i, struct xprofs_hlo_instr *in)
{
	if (xprofs_hlo_instr_get(w->p, i, in) < 0)
		memset(in, 0, sizeof(*in)); /* indices come from the reader: not reached */
}

static void shape(const struct walk *w, size_t i, struct xprofs_hlo_shape *s)
{
	if (xprofs_hlo_shape_get(w->p, i, s) < 0)
		memset(s, 0, sizeof(*s));
}

static bool is_tuple(const struct xprofs_hlo_shape *s)
{
	return s->element_type == XPROFS_HLO_TUPLE;
}

/* An array: not a tuple, token or opaque (XLA's Shape::IsArray()). */
static bool is_array(const struct xprofs_hlo_shape *s)
{
	return s->element_type != XPROFS_HLO_TUPLE && s->element_type != XPROFS_HLO_TOKEN &&
	       s->element_type != XPROFS_HLO_OPAQUE;
}

/*
 * XLA's ShapeUtil::ByteSizeOf(shape, 8), the top level only: elements times
 * the type's bytes, a tuple's pointer table, 0 for a token, a pointer for an
 * opaque. -1 for an element type XLA's table does not have.
 */
static double size_of(const struct xprofs_hlo_shape *s)
{
	unsigned bits;

	if (is_tuple(s))
		return PTR_BYTES * (double)s->n_tuple;
	if (s->element_type == XPROFS_HLO_TOKEN)
		return 0;
	if (s->element_type == XPROFS_HLO_OPAQUE)
		return PTR_BYTES;
	bits = xprofs_hlo_type_bits(s->element_type);
	if (!bits)
		return -1;
	return (double)s->elements * (double)((bits + 7) / 8);
}

/* size_of() of shape @i; marks @c's bytes unknown for an unknown type. */
static double size_at(const struct walk *w, size_t i, struct cost *c)
{
	struct xprofs_hlo_shape s;
	double n;

	shape(w, i, &s);
	n = size_of(&s);
	if (n < 0) {
		mark(c, U_BY | U_RW, "a shape has an element type XLA does not size");
		return 0;
	}
	return n;
}

/* Sum over the array subshapes of shape @i: their sizes (or @elements: elements). */
static double leaves(const struct walk *w, size_t i, bool elements, struct cost *c)
{
	struct xprofs_hlo_shape s;
	double n = 0;

	shape(w, i, &s);
	if (!is_tuple(&s)) {
		if (!is_array(&s))
			return 0;
		return elements ? (double)s.elements : size_at(w, i, c);
	}
	/* nesting is at most XPROFS_HLO_TUPLE_DEPTH_MAX, checked by the reader */
	for (size_t k = 0; k < s.n_tuple; k++)
		n += leaves(w, s.tuple[k], elements, c);
	return n;
}

static size_t op_shape(const struct walk *w, const struct xprofs_hlo_instr *in, size_t k)
{
	struct xprofs_hlo_instr op;

	instr(w, in->operands[k], &op);
	return op.shape;
}

/* Elements of shape @i, or of its first element when it is a tuple. */
static double first_elements(const struct walk *w, size_t i)
{
	struct xprofs_hlo_shape s;

	shape(w, i, &s);
	if (is_tuple(&s) && s.n_tuple)
		shape(w, s.tuple[0], &s);
	return (double)s.elements;
}

/* HloCostAnalysis::Preprocess(): bytes = operands + output, each read or written. */
static void preprocess(const struct walk *w, const struct xprofs_hlo_instr *in, struct cost *c)
{
	struct xprofs_hlo_shape s;
	double n = size_at(w, in->shape, c);

	shape(w, in->shape, &s);
	c->by = n;
	c->wr = is_array(&s) ? n : 0;
	for (size_t k = 0; k < in->n_operands; k++) {
		size_t sh = op_shape(w, in, k);

		n = size_at(w, sh, c);
		shape(w, sh, &s);
		c->by += n;
		c->rd += is_array(&s) ? n : 0;
	}
}

/* ---- opcodes --------------------------------------------------------------- */

enum kind {
	K_ELEMENTWISE,
	K_TRANSCENDENTAL,
	K_PLAIN,   /* no flops, Preprocess()'s bytes */
	K_NOTHING, /* no flops, no bytes (parameter, constant, bitcast, ...) */
	K_TUPLE,
	K_SLICE,
	K_DYNAMIC_SLICE,
	K_DYNAMIC_UPDATE_SLICE,
	K_GATHER,
	K_SCATTER,
	K_INFEED,
	K_OUTFEED,
	K_ALL_REDUCE,
	K_RNG,
	K_RNG_BIT_GENERATOR,
	K_SORT,
	K_TRIANGULAR_SOLVE,
	K_CHOLESKY,
	K_DOT,
	K_CONVOLUTION,
	K_MAP,
	K_REDUCE,
	K_REDUCE_WINDOW,
	K_SELECT_AND_SCATTER,
	K_FUSION,
	K_CALL, /* call, async-start: the called computation's sums */
	K_WHILE,
	K_CONDITIONAL,
	K_CUSTOM_CALL,
	K_TRANSPOSE,
	K_NEEDS_MORE, /* fft, ragged-dot: attributes the reader does not keep */
};

/* HLO opcode names (xla/hlo/ir/hlo_opcode.h) and XLA's handler for each; sorted. */
static const struct op {
	const char *name;
	enum kind kind;
} ops[] = {
	{"abs", K_ELEMENTWISE},
	{"add", K_ELEMENTWISE},
	{"add-dependency", K_NOTHING},
	{"after-all", K_NOTHING},
	{"all-gather", K_PLAIN},
	{"all-gather-done", K_PLAIN},
	{"all-gather-start", K_PLAIN},
	{"all-reduce", K_ALL_REDUCE},
	{"all-reduce-done", K_PLAIN},
	{"all-reduce-start", K_ALL_REDUCE},
	{"all-to-all", K_PLAIN},
	{"and", K_ELEMENTWISE},
	{"async-done", K_PLAIN},
	{"async-start", K_CALL},
	{"async-update", K_PLAIN},
	{"atan2", K_TRANSCENDENTAL},
	{"batch-norm-grad", K_PLAIN},
	{"batch-norm-inference", K_PLAIN},
	{"batch-norm-training", K_PLAIN},
	{"bitcast", K_NOTHING},
	{"bitcast-convert", K_ELEMENTWISE},
	{"broadcast", K_PLAIN},
	{"call", K_CALL},
	{"cbrt", K_TRANSCENDENTAL},
	{"ceil", K_ELEMENTWISE},
	{"cholesky", K_CHOLESKY},
	{"clamp", K_ELEMENTWISE},
	{"collective-broadcast", K_PLAIN},
	{"collective-permute", K_PLAIN},
	{"collective-permute-done", K_PLAIN},
	{"collective-permute-start", K_PLAIN},
	{"compare", K_ELEMENTWISE},
	{"complex", K_ELEMENTWISE},
	{"concatenate", K_PLAIN},
	{"conditional", K_CONDITIONAL},
	{"constant", K_NOTHING},
	{"convert", K_ELEMENTWISE},
	{"convolution", K_CONVOLUTION},
	{"copy", K_PLAIN},
	{"copy-done", K_PLAIN},
	{"copy-start", K_PLAIN},
	{"cosine", K_TRANSCENDENTAL},
	{"count-leading-zeros", K_ELEMENTWISE},
	{"custom-call", K_CUSTOM_CALL},
	{"divide", K_ELEMENTWISE},
	{"domain", K_NOTHING},
	{"dot", K_DOT},
	{"dynamic-reshape", K_PLAIN},
	{"dynamic-slice", K_DYNAMIC_SLICE},
	{"dynamic-update-slice", K_DYNAMIC_UPDATE_SLICE},
	{"erf", K_TRANSCENDENTAL},
	{"exponential", K_TRANSCENDENTAL},
	{"exponential-minus-one", K_TRANSCENDENTAL},
	{"fft", K_NEEDS_MORE},
	{"floor", K_ELEMENTWISE},
	{"fusion", K_FUSION},
	{"gather", K_GATHER},
	{"get-dimension-size", K_PLAIN},
	{"get-tuple-element", K_NOTHING},
	{"imag", K_ELEMENTWISE},
	{"infeed", K_INFEED},
	{"iota", K_PLAIN},
	{"is-finite", K_ELEMENTWISE},
	{"log", K_TRANSCENDENTAL},
	{"log-plus-one", K_TRANSCENDENTAL},
	{"logistic", K_TRANSCENDENTAL},
	{"map", K_MAP},
	{"maximum", K_ELEMENTWISE},
	{"minimum", K_ELEMENTWISE},
	{"multiply", K_ELEMENTWISE},
	{"negate", K_ELEMENTWISE},
	{"not", K_ELEMENTWISE},
	{"optimization-barrier", K_PLAIN},
	{"or", K_ELEMENTWISE},
	{"outfeed", K_OUTFEED},
	{"pad", K_PLAIN},
	{"parameter", K_NOTHING},
	{"partition-id", K_PLAIN},
	{"popcnt", K_ELEMENTWISE},
	{"power", K_TRANSCENDENTAL},
	{"ragged-all-to-all", K_PLAIN},
	{"ragged-dot", K_NEEDS_MORE},
	{"real", K_ELEMENTWISE},
	{"recv", K_PLAIN},
	{"recv-done", K_PLAIN},
	{"reduce", K_REDUCE},
	{"reduce-precision", K_ELEMENTWISE},
	{"reduce-scatter", K_PLAIN},
	{"reduce-window", K_REDUCE_WINDOW},
	{"remainder", K_ELEMENTWISE},
	{"replica-id", K_PLAIN},
	{"reshape", K_PLAIN},
	{"reverse", K_PLAIN},
	{"rng", K_RNG},
	{"rng-bit-generator", K_RNG_BIT_GENERATOR},
	{"rng-get-and-update-state", K_PLAIN},
	{"round-nearest-afz", K_ELEMENTWISE},
	{"round-nearest-even", K_ELEMENTWISE},
	{"rsqrt", K_TRANSCENDENTAL},
	{"scatter", K_SCATTER},
	{"select", K_ELEMENTWISE},
	{"select-and-scatter", K_SELECT_AND_SCATTER},
	{"send", K_PLAIN},
	{"send-done", K_PLAIN},
	{"set-dimension-size", K_PLAIN},
	{"shift-left", K_ELEMENTWISE},
	{"shift-right-arithmetic", K_ELEMENTWISE},
	{"shift-right-logical", K_ELEMENTWISE},
	{"sign", K_ELEMENTWISE},
	{"sine", K_TRANSCENDENTAL},
	{"slice", K_SLICE},
	{"sort", K_SORT},
	{"sqrt", K_TRANSCENDENTAL},
	{"stochastic-convert", K_ELEMENTWISE},
	{"subtract", K_ELEMENTWISE},
	{"tan", K_TRANSCENDENTAL},
	{"tanh", K_TRANSCENDENTAL},
	{"topk", K_PLAIN},
	{"transpose", K_TRANSPOSE},
	{"triangular-solve", K_TRIANGULAR_SOLVE},
	{"tuple", K_TUPLE},
	{"while", K_WHILE},
	{"xor", K_ELEMENTWISE},
};

static int op_cmp(const void *key, const void *e)
{
	return strcmp(key, ((const struct op *)e)->name);
}

static const struct op *op_find(const char *opcode)
{
	return bsearch(opcode, ops, sizeof(ops) / sizeof(ops[0]), sizeof(ops[0]), op_cmp);
}

static void cost_of(struct walk *w, size_t i, struct cost *c);

/*
 * HloCostAnalysis::ProcessSubcomputation(): the sums over every instruction
 * of computation @comp (XLA's nested visitor visits them all).
 */
static void comp_sum(struct walk *w, size_t comp, struct cost *sum)
{
	struct xprofs_hlo_computation cc;

	memset(sum, 0, sizeof(*sum));
	if (xprofs_hlo_computation_get(w->p, comp, &cc) < 0)
		return;
	if (w->depth >= XPROFS_HLO_COST_DEPTH_MAX) {
		mark(sum, U_ALL,
		     "computations called deeper than XPROFS_HLO_COST_DEPTH_MAX levels");
		return;
	}
	w->depth++;
	for (size_t k = 0; k < cc.n; k++) {
		struct cost one;

		if (!charge(w, 1)) {
			mark(sum, U_ALL, "more work than XPROFS_HLO_COST_WORK_MAX to count");
			break;
		}
		cost_of(w, cc.first + k, &one);
		sum->fl += one.fl;
		sum->tr += one.tr;
		sum->by += one.by;
		mark(sum, one.unk, one.why);
	}
	w->depth--;
}

/* The called computation @k of @in, or false (and @c marked) when it has none. */
static bool called(const struct xprofs_hlo_instr *in, size_t k, struct cost *c, size_t *out)
{
	if (k >= in->n_called) {
		mark(c, U_ALL, "a called computation is missing");
		return false;
	}
	*out = in->called[k];
	return true;
}

/* Copy @times x @sub's flops and transcendentals (KeyToCopyFromSubcomputation()). */
static void apply(struct cost *c, const struct cost *sub, double times)
{
	c->fl = sub->fl * times;
	c->tr = sub->tr * times;
	mark(c, sub->unk & (U_FL | U_TR), sub->why);
}

/* The per-element handlers: map, reduce. */
static void handle_reduce(struct walk *w, const struct xprofs_hlo_instr *in, struct cost *c,
			  bool map)
{
	struct xprofs_hlo_shape s;
	struct cost sub;
	size_t comp;
	double n;

	if (!called(in, 0, c, &comp))
		return;
	if (!map && in->n_operands < 1) {
		mark(c, U_FL | U_TR, "a reduce without operand");
		return;
	}
	comp_sum(w, comp, &sub);
	shape(w, in->shape, &s);
	if (map)
		n = (double)s.elements; /* HandleMap() */
	else                            /* HandleReduce(): applications of the reducer */
		n = first_elements(w, op_shape(w, in, 0)) - first_elements(w, in->shape);
	apply(c, &sub, n);
}

/* HloCostAnalysis::HandleReduceWindow(). */
static void handle_reduce_window(struct walk *w, const struct xprofs_hlo_instr *in, struct cost *c)
{
	struct xprofs_hlo_shape s;
	struct cost sub;
	double wec = 1, out, count;
	size_t comp, nred = 0, npad = 0, d;

	if (!called(in, 0, c, &comp))
		return;
	comp_sum(w, comp, &sub);
	for (size_t k = 0; k < in->n_window; k++) {
		const struct xprofs_hlo_window_dim *wd = &in->window[k];

		wec *= (double)wd->size;
		nred += wd->size != 1;
		npad += wd->padding_low != 0 || wd->padding_high != 0;
	}
	out = first_elements(w, in->shape);
	count = (wec - 1) * out;
	shape(w, in->shape, &s);
	/* a reduce then broadcast back along one padded dimension */
	if (nred == 1 && npad == 1 && is_array(&s)) {
		for (d = 0; d < in->n_window; d++) {
			const struct xprofs_hlo_window_dim *wd = &in->window[d];

			if (wd->size != 1 && wd->padding_low != 0 && wd->padding_high != 0 &&
			    wd->padding_low == wd->padding_high &&
			    wd->size == 2 * wd->padding_low + 1)
				break;
		}
		if (d < in->n_window && d < s.rank && s.dims[d] > 0 &&
		    in->window[d].padding_low == s.dims[d] - 1) {
			wec = (double)s.dims[d];
			count = floor(out / wec) + (wec - 1);
		}
	}
	apply(c, &sub, count);
}

/* HloCostAnalysis::HandleSelectAndScatter(). */
static void handle_select_and_scatter(struct walk *w, const struct xprofs_hlo_instr *in,
				      struct cost *c)
{
	struct cost sel, sca;
	size_t cs, cx;
	double wec = 1, src;

	if (!called(in, 0, c, &cs) || !called(in, 1, c, &cx))
		return;
	if (in->n_operands < 2) {
		mark(c, U_FL | U_TR, "a select-and-scatter without source");
		return;
	}
	comp_sum(w, cs, &sel);
	comp_sum(w, cx, &sca);
	for (size_t k = 0; k < in->n_window; k++)
		wec *= (double)in->window[k].size;
	src = first_elements(w, op_shape(w, in, 1));
	c->fl = sel.fl * src * (wec - 1) + sca.fl * src;
	c->tr = sel.tr * src * (wec - 1) + sca.tr * src;
	mark(c, (sel.unk | sca.unk) & (U_FL | U_TR), sel.why ? sel.why : sca.why);
}

/* ---- dots and convolutions ------------------------------------------------ */

/* HloCostAnalysis::GetDotFlops(): 2 x output elements x the contracted extent. */
static void dot_flops(const struct walk *w, size_t lhs_shape, size_t out_shape,
		      const int64_t *contracting, size_t n, struct cost *c)
{
	struct xprofs_hlo_shape l, o;
	double width = 1;

	shape(w, lhs_shape, &l);
	shape(w, out_shape, &o);
	if (is_tuple(&o) && o.n_tuple)
		shape(w, o.tuple[0], &o);
	for (size_t k = 0; k < n; k++) {
		if (contracting[k] < 0 || (uint64_t)contracting[k] >= l.rank) {
			mark(c, U_FL, "a contracting dimension is not one of the lhs's");
			return;
		}
		width *= (double)l.dims[contracting[k]];
	}
	c->fl = 2 * (double)o.elements * width;
}

static i128 floor_div(i128 a, i128 b)
{
	i128 q = a / b;

	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/*
 * The valid (output, kernel) position pairs of one spatial dimension, as
 * GetConvolutionFlops() counts them: output index o and kernel index k meet
 * input index (o * stride - padding_low + k * window_dilation) / base_dilation
 * when that divides and lies in [0, input). -1 past the work budget.
 */
static double conv_positions(struct walk *w, const struct xprofs_hlo_window_dim *wd, int64_t in,
			     int64_t ker, int64_t out)
{
	i128 s = wd->stride, bd = wd->base_dilation, wdl = wd->window_dilation;
	i128 pl = wd->padding_low;
	double n = 0;

	/* XLA's two shortcuts, which give what the loops give */
	if (in == out && ker == out && in == wd->base_dilation && wd->window_dilation == 1 &&
	    (in - 1 > 1 ? in - 1 : 1) == wd->stride && wd->padding_low == 0 &&
	    wd->padding_high == 0)
		return (double)in;
	if (in == 1 && ker == out && wd->window_dilation == 1 && wd->base_dilation == 1 &&
	    wd->stride == 1 && wd->padding_high == out - 1 && wd->padding_low == out - 1)
		return (double)out;
	/* ker and out are below 2^40: their product is compared as a double */
	if ((double)ker * (bd > 1 ? (double)out + 1 : 1) > (double)w->work)
		return -1;
	charge(w, (uint64_t)((double)ker * (bd > 1 ? (double)out + 1 : 1)));
	for (int64_t k = 0; k < ker; k++) {
		i128 c = (i128)k * wdl - pl, lo, hi;

		if (bd == 1) {
			/* o in [0, out) with 0 <= o * s + c < in */
			lo = -floor_div(c, s); /* ceil(-c / s) */
			lo = lo < 0 ? 0 : lo;
			hi = floor_div((i128)in - 1 - c, s);
			hi = hi > out - 1 ? out - 1 : hi;
			n += hi >= lo ? (double)(hi - lo + 1) : 0;
			continue;
		}
		for (int64_t o = 0; o < out; o++) {
			i128 u = (i128)o * s + c;

			if (u >= 0 && u % bd == 0 && u / bd < in)
				n += 1;
		}
	}
	return n;
}

static bool dim_ok(int64_t d, const struct xprofs_hlo_shape *s)
{
	return d >= 0 && (uint64_t)d < s->rank;
}

/*
 * HloCostAnalysis::GetConvolutionFlops(): 2 x (input features / feature
 * groups) x output features x (batch / batch groups) x the product over
 * spatial dimensions of the valid positions. @res_shape: the result (a
 * cuDNN call's first tuple element).
 */
static void conv_flops(struct walk *w, const struct xprofs_hlo_instr *in, size_t res_shape,
		       struct cost *c)
{
	const struct xprofs_hlo_conv_dnums *d = &in->conv;
	struct xprofs_hlo_shape l, r, o;
	double pos = 1, fma;

	if (in->n_operands < 2) {
		mark(c, U_FL, "a convolution without two operands");
		return;
	}
	shape(w, op_shape(w, in, 0), &l);
	shape(w, op_shape(w, in, 1), &r);
	shape(w, res_shape, &o);
	if (!dim_ok(d->input_batch, &l) || !dim_ok(d->input_feature, &l) ||
	    !dim_ok(d->output_feature, &o) || d->n_input_spatial < in->n_window ||
	    d->n_kernel_spatial < in->n_window || d->n_output_spatial < in->n_window) {
		mark(c, U_FL, "convolution dimension numbers that do not fit its shapes");
		return;
	}
	for (size_t k = 0; k < in->n_window; k++) {
		const struct xprofs_hlo_window_dim *wd = &in->window[k];
		double n;

		if (!dim_ok(d->input_spatial[k], &l) || !dim_ok(d->kernel_spatial[k], &r) ||
		    !dim_ok(d->output_spatial[k], &o)) {
			mark(c, U_FL, "convolution dimension numbers that do not fit its shapes");
			return;
		}
		if (wd->stride < 1 || wd->window_dilation < 1 || wd->base_dilation < 1) {
			mark(c, U_FL, "a convolution window with a stride or dilation below 1");
			return;
		}
		n = conv_positions(w, wd, l.dims[d->input_spatial[k]], r.dims[d->kernel_spatial[k]],
				   o.dims[d->output_spatial[k]]);
		if (n < 0) {
			mark(c, U_FL, "more work than XPROFS_HLO_COST_WORK_MAX to count");
			return;
		}
		pos *= n;
	}
	/* no window: one position (XLA makes a window of size 1) */
	fma = (double)(l.dims[d->input_feature] / in->feature_group_count) *
	      (double)o.dims[d->output_feature] *
	      (double)(l.dims[d->input_batch] / in->batch_group_count) * pos;
	c->fl = 2 * fma;
}

/* ---- custom calls ------------------------------------------------------- */

static bool target_in(const char *t, const char *const *set)
{
	for (; *set; set++)
		if (!strcmp(t, *set))
			return true;
	return false;
}

/* xla/service/gpu/cublas_cudnn.cc: IsCublasGemm(), IsCustomCallToDnnConvolution(). */
static const char *const gemm_targets[] = {"__cublas$gemm", "__cublas$lt$matmul",
					   "__cublas$lt$matmul$f8", NULL};
static const char *const dnn_conv_targets[] = {"__cudnn$convForward",
					       "__cudnn$convForwardGraph",
					       "__cudnn$convBackwardInput",
					       "__cudnn$convBackwardFilter",
					       "__cudnn$convBiasActivationForward",
					       NULL};

/* gemm_backend_config.dot_dimension_numbers.lhs_contracting_dimensions (proto JSON). */
static int gemm_contracting(const struct walk *w, size_t i, int64_t *v, size_t *n)
{
	json_t *root, *a;
	struct xprofs_buf b;
	int ret = -ENOENT;
	size_t k;

	xprofs_buf_init(&b, XPROFS_HLO_COST_CONFIG_MAX);
	if (xprofs_hlo_backend_config(w->p, i, &b) < 0 || !b.len) {
		xprofs_buf_deinit(&b);
		return -ENOENT;
	}
	root = json_loadb(b.data, b.len, 0, NULL);
	a = json_object_get(json_object_get(json_object_get(root, "gemm_backend_config"),
					    "dot_dimension_numbers"),
			    "lhs_contracting_dimensions");
	if (json_is_array(a) && json_array_size(a) <= XPROFS_HLO_RANK_MAX) {
		json_t *e;

		ret = 0;
		*n = json_array_size(a);
		json_array_foreach(a, k, e)
		{
			/* proto JSON writes int64 as strings */
			if (json_is_integer(e)) {
				v[k] = json_integer_value(e);
			} else if (json_is_string(e)) {
				char *end;

				errno = 0;
				v[k] = strtoll(json_string_value(e), &end, 10);
				if (errno || *end || end == json_string_value(e))
					ret = -EINVAL;
			} else {
				ret = -EINVAL;
			}
		}
	}
	json_decref(root);
	xprofs_buf_deinit(&b);
	return ret;
}

/*
 * GpuHloCostAnalysis::HandleCustomCall(): a cuBLAS gemm counts as a dot of
 * its first operand and (first) output with the backend config's dimension
 * numbers; a cuDNN convolution as a convolution whose output is its first
 * tuple element (the scratch buffer counted nowhere). Anything else is
 * unknown, as HloCostAnalysis::HandleCustomCall() says.
 */
static void handle_custom_call(struct walk *w, size_t i, const struct xprofs_hlo_instr *in,
			       struct cost *c)
{
	struct xprofs_hlo_shape s;
	int64_t contracting[XPROFS_HLO_RANK_MAX];
	size_t n;

	shape(w, in->shape, &s);
	if (target_in(in->custom_call_target, gemm_targets)) {
		if (in->n_operands < 1 || gemm_contracting(w, i, contracting, &n) < 0) {
			mark(c, U_FL,
			     "a gemm custom call without gemm_backend_config "
			     "dot_dimension_numbers");
			return;
		}
		dot_flops(w, op_shape(w, in, 0), in->shape, contracting, n, c);
		return;
	}
	if (target_in(in->custom_call_target, dnn_conv_targets)) {
		size_t res = is_tuple(&s) && s.n_tuple ? s.tuple[0] : in->shape;

		if (!in->has_conv) {
			mark(c, U_FL, "a cuDNN convolution without dimension numbers");
			return;
		}
		conv_flops(w, in, res, c);
		if (is_tuple(&s))
			c->by += size_at(w, res, c) - size_at(w, in->shape, c);
		return;
	}
	c->by = c->rd = c->wr = 0;
	mark(c, U_ALL, "a custom call whose target XLA's cost analysis does not know");
}

/* ---- fusions -------------------------------------------------------------- */

/* The parameter @number of computation @comp, or -1 (also past the budget). */
static ssize_t fused_param(struct walk *w, size_t comp, int64_t number)
{
	struct xprofs_hlo_computation cc;

	if (xprofs_hlo_computation_get(w->p, comp, &cc) < 0 || !charge(w, cc.n))
		return -1;
	for (size_t k = 0; k < cc.n; k++) {
		struct xprofs_hlo_instr in;

		instr(w, cc.first + k, &in);
		if (!strcmp(in.opcode, "parameter") && in.parameter_number == number)
			return (ssize_t)(cc.first + k);
	}
	return -1;
}

static bool uses(const struct xprofs_hlo_instr *u, size_t h)
{
	for (size_t k = 0; k < u->n_operands; k++)
		if (u->operands[k] == h)
			return true;
	return false;
}

/*
 * HloCostAnalysis::FusionParameterReadBytes(): what fused parameter (or
 * get-tuple-element of one) @h of computation @comp reads, from its users: a
 * slice reads its output, a dynamic slice its output when @h is what it
 * slices, a broadcast or reshape the whole of @h each, every other user one
 * shared read of @h; a nested fusion what its own parameter reads. -1 past
 * the budget or the depth bound.
 */
static double param_reads(struct walk *w, size_t comp, size_t h, unsigned depth, struct cost *c)
{
	struct xprofs_hlo_computation cc;
	struct xprofs_hlo_instr hi;
	bool seen = false;
	double n = 0, hs;

	if (xprofs_hlo_computation_get(w->p, comp, &cc) < 0)
		return 0;
	if (depth >= XPROFS_HLO_COST_DEPTH_MAX || !charge(w, cc.n))
		return -1;
	instr(w, h, &hi);
	hs = size_at(w, hi.shape, c);
	for (size_t k = 0; k < cc.n; k++) {
		struct xprofs_hlo_instr u;

		instr(w, cc.first + k, &u);
		if (!charge(w, u.n_operands))
			return -1;
		if (!uses(&u, h))
			continue;
		if (!strcmp(u.opcode, "fusion")) {
			for (size_t j = 0; j < u.n_operands; j++) {
				ssize_t np;
				double m;

				if (u.operands[j] != h)
					continue;
				np = u.n_called ? fused_param(w, u.called[0], (int64_t)j) : -1;
				if (np < 0)
					continue; /* XLA needs it; the reader does not check it */
				m = param_reads(w, u.called[0], (size_t)np, depth + 1, c);
				if (m < 0)
					return -1;
				n += m;
			}
		} else if (!strcmp(u.opcode, "slice")) {
			n += size_at(w, u.shape, c);
		} else if (!strcmp(u.opcode, "dynamic-slice") && u.operands[0] == h) {
			n += size_at(w, u.shape, c);
		} else if (!strcmp(u.opcode, "dynamic-update-slice") && u.operands[0] == h) {
			continue; /* aliased to the output */
		} else if (!strcmp(u.opcode, "broadcast") || !strcmp(u.opcode, "reshape")) {
			n += hs;
		} else if (!seen) {
			seen = true;
			n += hs;
		}
	}
	return n;
}

/* The fused get-tuple-element of @param at @index, or @param itself (XLA's walk). */
static size_t leaf_gte(const struct walk *w, size_t comp, size_t param, const size_t *index,
		       size_t depth)
{
	struct xprofs_hlo_computation cc;
	size_t g = param;

	if (xprofs_hlo_computation_get(w->p, comp, &cc) < 0)
		return param;
	for (size_t d = 0; d < depth; d++) {
		for (size_t k = 0; k < cc.n; k++) {
			struct xprofs_hlo_instr u;

			instr(w, cc.first + k, &u);
			if (!strcmp(u.opcode, "get-tuple-element") && u.tuple_index >= 0 &&
			    (size_t)u.tuple_index == index[d] && uses(&u, g)) {
				g = cc.first + k;
				break;
			}
		}
	}
	return g;
}

/* Reads of tuple-shaped fused parameter @param: its leaves' gtes' reads. */
static double tuple_param_reads(struct walk *w, size_t comp, size_t param, size_t sh, size_t *index,
				size_t depth, struct cost *c)
{
	struct xprofs_hlo_shape s;
	double n = 0;

	shape(w, sh, &s);
	if (!is_tuple(&s) || !s.n_tuple)
		return param_reads(w, comp, leaf_gte(w, comp, param, index, depth), 0, c);
	for (size_t k = 0; k < s.n_tuple && depth < XPROFS_HLO_TUPLE_DEPTH_MAX; k++) {
		double m;

		index[depth] = k;
		m = tuple_param_reads(w, comp, param, s.tuple[k], index, depth + 1, c);
		if (m < 0)
			return -1;
		n += m;
	}
	return n;
}

/*
 * A fusion's output bytes (FusionProcessOutputBytesAccessed()): each array
 * subshape, except that a dynamic-update-slice root (or tuple root's
 * element) writes only its update.
 */
static double fusion_output(struct walk *w, const struct xprofs_hlo_instr *in, size_t root,
			    struct cost *c)
{
	struct xprofs_hlo_instr r, e;
	struct xprofs_hlo_shape s;
	double n = 0;

	instr(w, root, &r);
	shape(w, in->shape, &s);
	if (!is_tuple(&s)) {
		if (!strcmp(r.opcode, "dynamic-update-slice") && r.n_operands > 1)
			return size_at(w, op_shape(w, &r, 1), c);
		return is_array(&s) ? size_at(w, in->shape, c) : 0;
	}
	for (size_t k = 0; k < s.n_tuple; k++) {
		struct xprofs_hlo_shape t;

		shape(w, s.tuple[k], &t);
		if (!strcmp(r.opcode, "tuple") && k < r.n_operands && !is_tuple(&t) &&
		    is_array(&t)) {
			instr(w, r.operands[k], &e);
			if (!strcmp(e.opcode, "dynamic-update-slice") && e.n_operands > 1) {
				n += size_at(w, op_shape(w, &e, 1), c);
				continue;
			}
		}
		n += leaves(w, s.tuple[k], false, c);
	}
	return n;
}

/* The first gather or scatter of a custom fusion's computation, or -1. */
static ssize_t custom_fusion_op(const struct walk *w, size_t comp)
{
	struct xprofs_hlo_computation cc;

	if (xprofs_hlo_computation_get(w->p, comp, &cc) < 0)
		return -1;
	for (size_t k = 0; k < cc.n; k++) {
		struct xprofs_hlo_instr u;

		instr(w, cc.first + k, &u);
		if (!strcmp(u.opcode, "gather") || !strcmp(u.opcode, "scatter"))
			return (ssize_t)(cc.first + k);
	}
	return -1;
}

static void handle_gather(const struct walk *w, const struct xprofs_hlo_instr *in, struct cost *c);
static void handle_scatter(struct walk *w, const struct xprofs_hlo_instr *in, struct cost *c);

/*
 * HloCostAnalysis::HandleFusion(): flops and transcendentals are the sums
 * over the fused computation; bytes are not the inner sum but the fusion's
 * outputs, its large constants and what each parameter reads.
 */
static void handle_fusion(struct walk *w, const struct xprofs_hlo_instr *in, struct cost *c)
{
	struct xprofs_hlo_computation cc;
	struct cost sub;
	size_t comp, index[XPROFS_HLO_TUPLE_DEPTH_MAX];

	if (!called(in, 0, c, &comp) || xprofs_hlo_computation_get(w->p, comp, &cc) < 0)
		return;
	if (!strcmp(in->fusion_kind, "kCustom")) {
		ssize_t g = custom_fusion_op(w, comp);

		if (g >= 0) {
			struct xprofs_hlo_instr gi;

			instr(w, (size_t)g, &gi);
			if (!strcmp(gi.opcode, "gather"))
				handle_gather(w, &gi, c);
			else
				handle_scatter(w, &gi, c);
			return;
		}
	}
	comp_sum(w, comp, &sub);
	c->fl = sub.fl;
	c->tr = sub.tr;
	mark(c, sub.unk & (U_FL | U_TR), sub.why);
	c->rd = 0;
	c->by = c->wr = cc.root >= 0 ? fusion_output(w, in, (size_t)cc.root, c) : 0;
	for (size_t k = 0; k < cc.n; k++) {
		struct xprofs_hlo_instr u;
		struct xprofs_hlo_shape s;

		instr(w, cc.first + k, &u);
		shape(w, u.shape, &s);
		/* constants of more than immediate_constant_max_elements() (1) */
		if (!strcmp(u.opcode, "constant") && s.elements > 1)
			c->by += size_at(w, u.shape, c);
	}
	for (size_t k = 0; k < in->n_operands; k++) {
		ssize_t prm = fused_param(w, comp, (int64_t)k);
		struct xprofs_hlo_instr pi;
		double n;

		if (prm < 0) {
			mark(c, U_BY | U_RW,
			     w->work ? "a fusion operand without its fused parameter"
				     : "more work than XPROFS_HLO_COST_WORK_MAX to count");
			return;
		}
		instr(w, (size_t)prm, &pi);
		n = tuple_param_reads(w, comp, (size_t)prm, pi.shape, index, 0, c);
		if (n < 0) {
			mark(c, U_BY | U_RW, "more work than XPROFS_HLO_COST_WORK_MAX to count");
			return;
		}
		c->by += n;
		c->rd += n;
	}
}

/* ---- the other handlers ------------------------------------------------------ */

/* HandleGather(): the output's worth of operand 0 and the indices. */
static void handle_gather(const struct walk *w, const struct xprofs_hlo_instr *in, struct cost *c)
{
	double out = size_at(w, in->shape, c), idx;

	if (in->n_operands < 2) {
		mark(c, U_BY | U_RW, "a gather without indices");
		return;
	}
	idx = size_at(w, op_shape(w, in, 1), c);
	c->by = 2 * out + idx;
	c->rd = out + idx;
	c->wr = out;
}

/*
 * HandleScatter(): operands [inputs..., indices, updates...]: three times
 * the updates and the indices; the to_apply region once per update element.
 */
static void handle_scatter(struct walk *w, const struct xprofs_hlo_instr *in, struct cost *c)
{
	struct xprofs_hlo_shape s;
	struct cost sub;
	size_t n = in->n_operands / 2, comp;
	double upd = 0, idx;

	if (in->n_operands < 3 || in->n_operands % 2 == 0) {
		mark(c, U_ALL, "a scatter whose operands are not inputs, indices, updates");
		return;
	}
	for (size_t k = 0; k < n; k++)
		upd += size_at(w, op_shape(w, in, n + 1 + k), c);
	idx = size_at(w, op_shape(w, in, n), c);
	shape(w, in->shape, &s);
	c->by = 3 * upd + idx;
	c->rd = 2 * upd + idx;
	c->wr = is_array(&s) ? upd : 0;
	if (!called(in, 0, c, &comp))
		return;
	comp_sum(w, comp, &sub);
	apply(c, &sub, first_elements(w, op_shape(w, in, n + 1)));
}

/* Sum of the other operands' Preprocess() bytes, from operand @from on. */
static double rest(const struct walk *w, const struct xprofs_hlo_instr *in, size_t from,
		   struct cost *c)
{
	double n = 0;

	for (size_t k = from; k < in->n_operands; k++) {
		struct xprofs_hlo_shape s;
		size_t sh = op_shape(w, in, k);

		shape(w, sh, &s);
		n += is_array(&s) ? size_at(w, sh, c) : 0;
	}
	return n;
}

static void handle_slices(const struct walk *w, const struct xprofs_hlo_instr *in, enum kind kind,
			  struct cost *c)
{
	double out = size_at(w, in->shape, c), a, b;

	if (kind == K_SLICE) {
		c->by = 2 * out;
		c->rd = in->n_operands ? out : 0;
		c->wr = out;
		return;
	}
	if (in->n_operands < (kind == K_DYNAMIC_SLICE ? 2u : 3u)) {
		mark(c, U_BY | U_RW, "a dynamic slice without its operands");
		return;
	}
	if (kind == K_DYNAMIC_SLICE) { /* the slice and its start indices */
		a = size_at(w, op_shape(w, in, 1), c);
		c->by = 2 * out + a;
		c->rd = out + rest(w, in, 1, c);
		c->wr = out;
		return;
	}
	/* dynamic-update-slice: operand 0 is the output, aliased */
	a = size_at(w, op_shape(w, in, 1), c);
	b = size_at(w, op_shape(w, in, 2), c);
	c->by = 2 * a + b;
	c->rd = rest(w, in, 1, c);
	c->wr = a;
}

static void handle_collective_io(const struct walk *w, const struct xprofs_hlo_instr *in,
				 enum kind kind, struct cost *c)
{
	struct xprofs_hlo_shape s;
	double n = 0;

	shape(w, in->shape, &s);
	if (kind == K_INFEED) { /* the output's leaves */
		c->by = c->wr = leaves(w, in->shape, false, c);
		return;
	}
	if (kind == K_OUTFEED) { /* the operands' leaves */
		for (size_t k = 0; k < in->n_operands; k++)
			n += leaves(w, op_shape(w, in, k), false, c);
		c->by = c->rd = n;
		return;
	}
	/* HandleAllReduce(): one flop per output element (two replicas assumed) */
	c->fl = leaves(w, in->shape, true, c);
	n = leaves(w, in->shape, false, c);
	c->by = n;
	for (size_t k = 0; k < in->n_operands; k++)
		c->by += size_at(w, op_shape(w, in, k), c);
	c->wr = is_array(&s) ? n : 0;
}

static double log2_ceil(double n)
{
	double l = 0;

	while (l < 64 && ldexp(1, (int)l) < n)
		l++;
	return l;
}

/* Handlers of a single formula on shapes: rng, sort, linear algebra, dots. */
static void handle_shapes(struct walk *w, const struct xprofs_hlo_instr *in, enum kind kind,
			  struct cost *c)
{
	struct xprofs_hlo_shape s, a;

	shape(w, in->shape, &s);
	switch (kind) {
	case K_RNG:
		c->tr = (double)s.elements;
		return;
	case K_RNG_BIT_GENERATOR:
		c->tr = leaves(w, in->shape, true, c);
		return;
	case K_DOT:
		if (in->n_operands < 1) {
			mark(c, U_FL, "a dot without operands");
			return;
		}
		dot_flops(w, op_shape(w, in, 0), in->shape, in->dot.lhs_contracting,
			  in->dot.n_lhs_contracting, c);
		return;
	case K_CONVOLUTION:
		conv_flops(w, in, in->shape, c);
		return;
	default:
		break;
	}
	if (in->n_operands < (kind == K_TRIANGULAR_SOLVE ? 2u : 1u)) {
		mark(c, U_ALL, "an instruction without its operands");
		return;
	}
	shape(w, op_shape(w, in, 0), &a);
	if (kind == K_SORT) { /* n log n comparisons */
		c->fl = (double)a.elements * log2_ceil((double)a.elements);
		return;
	}
	if (!a.rank) {
		mark(c, U_FL, "a scalar matrix");
		return;
	}
	if (kind == K_CHOLESKY) { /* n^3 / 3 per batch; half of a read, half written */
		double sa = size_at(w, op_shape(w, in, 0), c);

		c->fl = floor((double)a.dims[a.rank - 1] * (double)a.elements / 3);
		c->by = sa;
		c->rd = sa / 2;
		c->wr = sa / 2;
		return;
	}
	/* triangular solve: 2 x m x elements(b); half of a read (XLA then records b's size) */
	{
		struct xprofs_hlo_shape b;
		double sb = size_at(w, op_shape(w, in, 1), c);

		shape(w, op_shape(w, in, 1), &b);
		c->fl = 2 * (double)a.dims[a.rank - 1] * (double)b.elements;
		c->by = size_at(w, in->shape, c) + size_at(w, op_shape(w, in, 0), c) / 2 + sb;
		c->rd = 2 * sb;
	}
}

/* Call, while, conditional, async-start: the called computations' sums. */
static void handle_calls(struct walk *w, const struct xprofs_hlo_instr *in, enum kind kind,
			 struct cost *c)
{
	size_t n = kind == K_CALL ? (in->n_called ? 1 : 0) : in->n_called;

	memset(c, 0, sizeof(*c));
	if (!n) {
		mark(c, U_ALL, "a called computation is missing");
		return;
	}
	for (size_t k = 0; k < n; k++) {
		struct cost sub;

		comp_sum(w, in->called[k], &sub);
		if (kind == K_CONDITIONAL && k) { /* the costliest branch, per figure */
			c->fl = fmax(c->fl, sub.fl);
			c->tr = fmax(c->tr, sub.tr);
			c->by = fmax(c->by, sub.by);
		} else { /* a while: one iteration of body and condition */
			c->fl += sub.fl;
			c->tr += sub.tr;
			c->by += sub.by;
		}
		mark(c, sub.unk, sub.why);
	}
	mark(c, U_RW, "the reads and writes of a call are its computation's, not summed");
}

static void cost_of(struct walk *w, size_t i, struct cost *c)
{
	struct xprofs_hlo_instr in;
	struct xprofs_hlo_shape s;
	const struct op *op;

	memset(c, 0, sizeof(*c));
	instr(w, i, &in);
	op = op_find(in.opcode);
	if (!op) {
		mark(c, U_ALL, "an opcode XLA's cost analysis does not handle");
		return;
	}
	preprocess(w, &in, c);
	shape(w, in.shape, &s);
	switch (op->kind) {
	case K_ELEMENTWISE:
		c->fl = (double)s.elements;
		break;
	case K_TRANSCENDENTAL:
		c->tr = (double)s.elements;
		break;
	case K_PLAIN:
		break;
	case K_NOTHING:
		c->by = c->rd = c->wr = 0;
		break;
	case K_TUPLE: /* the pointer table, written; no leaf is written */
		c->by = size_at(w, in.shape, c);
		c->rd = c->wr = 0;
		break;
	case K_SLICE:
	case K_DYNAMIC_SLICE:
	case K_DYNAMIC_UPDATE_SLICE:
		handle_slices(w, &in, op->kind, c);
		break;
	case K_GATHER:
		handle_gather(w, &in, c);
		break;
	case K_SCATTER:
		handle_scatter(w, &in, c);
		break;
	case K_INFEED:
	case K_OUTFEED:
	case K_ALL_REDUCE:
		handle_collective_io(w, &in, op->kind, c);
		break;
	case K_RNG:
	case K_RNG_BIT_GENERATOR:
	case K_SORT:
	case K_TRIANGULAR_SOLVE:
	case K_CHOLESKY:
	case K_DOT:
	case K_CONVOLUTION:
		handle_shapes(w, &in, op->kind, c);
		break;
	case K_MAP:
	case K_REDUCE:
		handle_reduce(w, &in, c, op->kind == K_MAP);
		break;
	case K_REDUCE_WINDOW:
		handle_reduce_window(w, &in, c);
		break;
	case K_SELECT_AND_SCATTER:
		handle_select_and_scatter(w, &in, c);
		break;
	case K_FUSION:
		handle_fusion(w, &in, c);
		break;
	case K_CALL:
	case K_WHILE:
	case K_CONDITIONAL:
		handle_calls(w, &in, op->kind, c);
		break;
	case K_CUSTOM_CALL:
		handle_custom_call(w, i, &in, c);
		break;
	case K_TRANSPOSE:
		mark(c, U_BY | U_RW,
		     "a transpose is a bitcast (no bytes) or a copy by its layouts, not read");
		break;
	case K_NEEDS_MORE:
		mark(c, U_FL | U_TR,
		     "fft lengths and ragged-dot dimension numbers are not read from the proto");
		break;
	}
}

int xprofs_hlo_cost_get(const struct xprofs_hlo_program *p, size_t i, struct xprofs_hlo_cost *out)
{
	struct xprofs_hlo_module m;
	struct walk w = {.p = p, .work = XPROFS_HLO_COST_WORK_MAX};
	struct cost c;

	xprofs_hlo_program_module(p, &m);
	memset(out, 0, sizeof(*out));
	if (i >= m.n_instructions)
		return -ERANGE;
	cost_of(&w, i, &c);
	/* a hostile window or shape can make a count negative or overflow a double */
	if (!(c.fl >= 0 && c.fl < INFINITY) || !(c.tr >= 0 && c.tr < INFINITY))
		mark(&c, U_FL | U_TR, "a count no program reaches (negative or infinite)");
	if (!(c.by >= 0 && c.by < INFINITY) || !(c.rd >= 0 && c.rd < INFINITY) ||
	    !(c.wr >= 0 && c.wr < INFINITY))
		mark(&c, U_BY | U_RW, "a count no program reaches (negative or infinite)");
	out->known = U_ALL & ~c.unk;
	out->reason = c.unk ? c.why : NULL;
	out->flops = c.unk & U_FL ? 0 : c.fl;
	out->transcendentals = c.unk & U_TR ? 0 : c.tr;
	out->bytes_accessed = c.unk & U_BY ? 0 : c.by;
	out->bytes_read = c.unk & U_RW ? 0 : c.rd;
	out->bytes_written = c.unk & U_RW ? 0 : c.wr;
	return 0;
}
