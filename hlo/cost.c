/*
 * cost.c - FLOPs, transcendentals and bytes accessed of one HLO instruction,
 * as XLA's HloCostAnalysis (xla/service/hlo_cost_analysis.cc) computes them,
 * with GpuHloCostAnalysis's cuBLAS gemm and cuDNN convolution custom calls
 * (xla/service/gpu/model/gpu_hlo_cost_analysis.cc). Every formula and what
 * stays unknown: docs/hlo.md "FLOPs and bytes".
 *
 * Design: a sorted table maps each opcode to the handler that follows XLA's
 * for it; each fills a struct hlo_cost from the instruction's shapes and
 * attributes through the public reader API (the reader checked every index
 * and rank) and the helpers of cost-shapes.c (sizes, dots, convolutions). Called computations (fusions,
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

#include "hlo-internal.h"

enum { U_FL = XPROFS_HLO_COST_FLOPS, U_TR = XPROFS_HLO_COST_TRANSCENDENTALS };
enum { U_BY = XPROFS_HLO_COST_BYTES, U_RW = XPROFS_HLO_COST_RW, U_ALL = XPROFS_HLO_COST_ALL };

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

static void cost_of(struct hlo_walk *w, size_t i, struct hlo_cost *c);

/*
 * HloCostAnalysis::ProcessSubcomputation(): the sums over every instruction
 * of computation @comp (XLA's nested visitor visits them all).
 */
static void comp_sum(struct hlo_walk *w, size_t comp, struct hlo_cost *sum)
{
	struct xprofs_hlo_computation cc;

	memset(sum, 0, sizeof(*sum));
	if (xprofs_hlo_computation_get(w->p, comp, &cc) < 0)
		return;
	if (w->depth >= XPROFS_HLO_COST_DEPTH_MAX) {
		hlo_cost_mark(sum, U_ALL,
			      "computations called deeper than XPROFS_HLO_COST_DEPTH_MAX levels");
		return;
	}
	w->depth++;
	for (size_t k = 0; k < cc.n; k++) {
		struct hlo_cost one;

		if (!hlo_cost_charge(w, 1)) {
			hlo_cost_mark(sum, U_ALL,
				      "more work than XPROFS_HLO_COST_WORK_MAX to count");
			break;
		}
		cost_of(w, cc.first + k, &one);
		sum->fl += one.fl;
		sum->tr += one.tr;
		sum->by += one.by;
		hlo_cost_mark(sum, one.unk, one.why);
	}
	w->depth--;
}

/* The called computation @k of @in, or false (and @c marked) when it has none. */
static bool called(const struct xprofs_hlo_instr *in, size_t k, struct hlo_cost *c, size_t *out)
{
	if (k >= in->n_called) {
		hlo_cost_mark(c, U_ALL, "a called computation is missing");
		return false;
	}
	*out = in->called[k];
	return true;
}

/* Copy @times x @sub's flops and transcendentals (KeyToCopyFromSubcomputation()). */
static void apply(struct hlo_cost *c, const struct hlo_cost *sub, double times)
{
	c->fl = sub->fl * times;
	c->tr = sub->tr * times;
	hlo_cost_mark(c, sub->unk & (U_FL | U_TR), sub->why);
}

/* The per-element handlers: map, reduce. */
static void handle_reduce(struct hlo_walk *w, size_t i, const struct xprofs_hlo_instr *in, int arg,
			  struct hlo_cost *c)
{
	bool map = arg == K_MAP;
	struct xprofs_hlo_shape s;
	struct hlo_cost sub;
	size_t comp;
	double n;

	if (!called(in, 0, c, &comp))
		return;
	if (!map && in->n_operands < 1) {
		hlo_cost_mark(c, U_FL | U_TR, "a reduce without operand");
		return;
	}
	comp_sum(w, comp, &sub);
	hlo_cost_shape(w, in->shape, &s);
	if (map)
		n = (double)s.elements; /* HandleMap() */
	else                            /* HandleReduce(): applications of the reducer */
		n = hlo_cost_first_elements(w, hlo_cost_op_shape(w, in, 0)) -
		    hlo_cost_first_elements(w, in->shape);
	apply(c, &sub, n);
}

/* HloCostAnalysis::HandleReduceWindow(). */
static void handle_reduce_window(struct hlo_walk *w, size_t i, const struct xprofs_hlo_instr *in,
				 int arg, struct hlo_cost *c)
{
	struct xprofs_hlo_shape s;
	struct hlo_cost sub;
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
	out = hlo_cost_first_elements(w, in->shape);
	count = (wec - 1) * out;
	hlo_cost_shape(w, in->shape, &s);
	/* a reduce then broadcast back along one padded dimension */
	if (nred == 1 && npad == 1 && hlo_cost_is_array(&s)) {
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
static void handle_select_and_scatter(struct hlo_walk *w, size_t i,
				      const struct xprofs_hlo_instr *in, int arg,
				      struct hlo_cost *c)
{
	struct hlo_cost sel, sca;
	size_t cs, cx;
	double wec = 1, src;

	if (!called(in, 0, c, &cs) || !called(in, 1, c, &cx))
		return;
	if (in->n_operands < 2) {
		hlo_cost_mark(c, U_FL | U_TR, "a select-and-scatter without source");
		return;
	}
	comp_sum(w, cs, &sel);
	comp_sum(w, cx, &sca);
	for (size_t k = 0; k < in->n_window; k++)
		wec *= (double)in->window[k].size;
	src = hlo_cost_first_elements(w, hlo_cost_op_shape(w, in, 1));
	c->fl = sel.fl * src * (wec - 1) + sca.fl * src;
	c->tr = sel.tr * src * (wec - 1) + sca.tr * src;
	hlo_cost_mark(c, (sel.unk | sca.unk) & (U_FL | U_TR), sel.why ? sel.why : sca.why);
}

/*
 * GpuHloCostAnalysis::HandleCustomCall(): a cuBLAS gemm counts as a dot of
 * its first operand and (first) output with the backend config's dimension
 * numbers; a cuDNN convolution as a convolution whose output is its first
 * tuple element (the scratch buffer counted nowhere). Anything else is
 * unknown, as HloCostAnalysis::HandleCustomCall() says.
 */
static void handle_custom_call(struct hlo_walk *w, size_t i, const struct xprofs_hlo_instr *in,
			       int arg, struct hlo_cost *c)
{
	struct xprofs_hlo_shape s;
	int64_t contracting[XPROFS_HLO_RANK_MAX];
	const char *why;
	size_t n;

	hlo_cost_shape(w, in->shape, &s);
	switch (hlo_cost_call_kind(in->custom_call_target)) {
	case HLO_COST_GEMM:
		if (in->n_operands < 1 || hlo_cost_gemm_contracting(w->p, i, contracting, &n) < 0)
			hlo_cost_mark(c, U_FL,
				      "a gemm custom call without gemm_backend_config "
				      "dot_dimension_numbers");
		else if (hlo_cost_dot(w, hlo_cost_op_shape(w, in, 0), in->shape, contracting, n,
				      &c->fl) < 0)
			hlo_cost_mark(c, U_FL, "a contracting dimension is not one of the lhs's");
		return;
	case HLO_COST_DNN_CONV:
		if (!in->has_conv)
			hlo_cost_mark(c, U_FL, "a cuDNN convolution without dimension numbers");
		else if (hlo_cost_conv(w, in, in->shape, &c->fl, &why) < 0)
			hlo_cost_mark(c, U_FL, why);
		/* the output is the first element; the scratch buffer is not counted */
		if (hlo_cost_is_tuple(&s) && s.n_tuple)
			c->by += hlo_cost_size_at(w, s.tuple[0], c) -
				 hlo_cost_size_at(w, in->shape, c);
		return;
	case HLO_COST_OTHER:
		break;
	}
	c->by = c->rd = c->wr = 0;
	hlo_cost_mark(c, U_ALL, "a custom call whose target XLA's cost analysis does not know");
}

/* ---- fusions -------------------------------------------------------------- */

/* The parameter @number of computation @comp, or -1 (also past the budget). */
static ssize_t fused_param(struct hlo_walk *w, size_t comp, int64_t number)
{
	struct xprofs_hlo_computation cc;

	if (xprofs_hlo_computation_get(w->p, comp, &cc) < 0 || !hlo_cost_charge(w, cc.n))
		return -1;
	for (size_t k = 0; k < cc.n; k++) {
		struct xprofs_hlo_instr in;

		hlo_cost_instr(w, cc.first + k, &in);
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
static double param_reads(struct hlo_walk *w, size_t comp, size_t h, unsigned depth,
			  struct hlo_cost *c)
{
	struct xprofs_hlo_computation cc;
	struct xprofs_hlo_instr hi;
	bool seen = false;
	double n = 0, hs;

	if (xprofs_hlo_computation_get(w->p, comp, &cc) < 0)
		return 0;
	if (depth >= XPROFS_HLO_COST_DEPTH_MAX || !hlo_cost_charge(w, cc.n))
		return -1;
	hlo_cost_instr(w, h, &hi);
	hs = hlo_cost_size_at(w, hi.shape, c);
	for (size_t k = 0; k < cc.n; k++) {
		struct xprofs_hlo_instr u;

		hlo_cost_instr(w, cc.first + k, &u);
		if (!hlo_cost_charge(w, u.n_operands))
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
			n += hlo_cost_size_at(w, u.shape, c);
		} else if (!strcmp(u.opcode, "dynamic-slice") && u.operands[0] == h) {
			n += hlo_cost_size_at(w, u.shape, c);
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
static size_t leaf_gte(const struct hlo_walk *w, size_t comp, size_t param, const size_t *index,
		       size_t depth)
{
	struct xprofs_hlo_computation cc;
	size_t g = param;

	if (xprofs_hlo_computation_get(w->p, comp, &cc) < 0)
		return param;
	for (size_t d = 0; d < depth; d++) {
		for (size_t k = 0; k < cc.n; k++) {
			struct xprofs_hlo_instr u;

			hlo_cost_instr(w, cc.first + k, &u);
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
static double tuple_param_reads(struct hlo_walk *w, size_t comp, size_t param, size_t sh,
				size_t *index, size_t depth, struct hlo_cost *c)
{
	struct xprofs_hlo_shape s;
	double n = 0;

	hlo_cost_shape(w, sh, &s);
	if (!hlo_cost_is_tuple(&s) || !s.n_tuple)
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
static double fusion_output(struct hlo_walk *w, const struct xprofs_hlo_instr *in, size_t root,
			    struct hlo_cost *c)
{
	struct xprofs_hlo_instr r, e;
	struct xprofs_hlo_shape s;
	double n = 0;

	hlo_cost_instr(w, root, &r);
	hlo_cost_shape(w, in->shape, &s);
	if (!hlo_cost_is_tuple(&s)) {
		if (!strcmp(r.opcode, "dynamic-update-slice") && r.n_operands > 1)
			return hlo_cost_size_at(w, hlo_cost_op_shape(w, &r, 1), c);
		return hlo_cost_is_array(&s) ? hlo_cost_size_at(w, in->shape, c) : 0;
	}
	for (size_t k = 0; k < s.n_tuple; k++) {
		struct xprofs_hlo_shape t;

		hlo_cost_shape(w, s.tuple[k], &t);
		if (!strcmp(r.opcode, "tuple") && k < r.n_operands && !hlo_cost_is_tuple(&t) &&
		    hlo_cost_is_array(&t)) {
			hlo_cost_instr(w, r.operands[k], &e);
			if (!strcmp(e.opcode, "dynamic-update-slice") && e.n_operands > 1) {
				n += hlo_cost_size_at(w, hlo_cost_op_shape(w, &e, 1), c);
				continue;
			}
		}
		n += hlo_cost_leaves(w, s.tuple[k], false, c);
	}
	return n;
}

/* The first gather or scatter of a custom fusion's computation, or -1. */
static ssize_t custom_fusion_op(const struct hlo_walk *w, size_t comp)
{
	struct xprofs_hlo_computation cc;

	if (xprofs_hlo_computation_get(w->p, comp, &cc) < 0)
		return -1;
	for (size_t k = 0; k < cc.n; k++) {
		struct xprofs_hlo_instr u;

		hlo_cost_instr(w, cc.first + k, &u);
		if (!strcmp(u.opcode, "gather") || !strcmp(u.opcode, "scatter"))
			return (ssize_t)(cc.first + k);
	}
	return -1;
}

static void handle_gather(struct hlo_walk *w, size_t i, const struct xprofs_hlo_instr *in, int arg,
			  struct hlo_cost *c);
static void handle_scatter(struct hlo_walk *w, size_t i, const struct xprofs_hlo_instr *in, int arg,
			   struct hlo_cost *c);

/*
 * HloCostAnalysis::HandleFusion(): flops and transcendentals are the sums
 * over the fused computation; bytes are not the inner sum but the fusion's
 * outputs, its large constants and what each parameter reads.
 */
static void handle_fusion(struct hlo_walk *w, size_t i, const struct xprofs_hlo_instr *in, int arg,
			  struct hlo_cost *c)
{
	struct xprofs_hlo_computation cc;
	struct hlo_cost sub;
	size_t comp, index[XPROFS_HLO_TUPLE_DEPTH_MAX];

	if (!called(in, 0, c, &comp) || xprofs_hlo_computation_get(w->p, comp, &cc) < 0)
		return;
	if (!strcmp(in->fusion_kind, "kCustom")) {
		ssize_t g = custom_fusion_op(w, comp);

		if (g >= 0) {
			struct xprofs_hlo_instr gi;

			hlo_cost_instr(w, (size_t)g, &gi);
			if (!strcmp(gi.opcode, "gather"))
				handle_gather(w, (size_t)g, &gi, 0, c);
			else
				handle_scatter(w, (size_t)g, &gi, 0, c);
			return;
		}
	}
	comp_sum(w, comp, &sub);
	c->fl = sub.fl;
	c->tr = sub.tr;
	hlo_cost_mark(c, sub.unk & (U_FL | U_TR), sub.why);
	c->rd = 0;
	c->by = c->wr = cc.root >= 0 ? fusion_output(w, in, (size_t)cc.root, c) : 0;
	for (size_t k = 0; k < cc.n; k++) {
		struct xprofs_hlo_instr u;
		struct xprofs_hlo_shape s;

		hlo_cost_instr(w, cc.first + k, &u);
		hlo_cost_shape(w, u.shape, &s);
		/* constants of more than immediate_constant_max_elements() (1) */
		if (!strcmp(u.opcode, "constant") && s.elements > 1)
			c->by += hlo_cost_size_at(w, u.shape, c);
	}
	for (size_t k = 0; k < in->n_operands; k++) {
		ssize_t prm = fused_param(w, comp, (int64_t)k);
		struct xprofs_hlo_instr pi;
		double n;

		if (prm < 0) {
			hlo_cost_mark(c, U_BY | U_RW,
				      w->work ? "a fusion operand without its fused parameter"
					      : "more work than XPROFS_HLO_COST_WORK_MAX to count");
			return;
		}
		hlo_cost_instr(w, (size_t)prm, &pi);
		n = tuple_param_reads(w, comp, (size_t)prm, pi.shape, index, 0, c);
		if (n < 0) {
			hlo_cost_mark(c, U_BY | U_RW,
				      "more work than XPROFS_HLO_COST_WORK_MAX to count");
			return;
		}
		c->by += n;
		c->rd += n;
	}
}

/* ---- the other handlers ------------------------------------------------------ */

/* HandleGather(): the output's worth of operand 0 and the indices. */
static void handle_gather(struct hlo_walk *w, size_t i, const struct xprofs_hlo_instr *in, int arg,
			  struct hlo_cost *c)
{
	double out = hlo_cost_size_at(w, in->shape, c), idx;

	if (in->n_operands < 2) {
		hlo_cost_mark(c, U_BY | U_RW, "a gather without indices");
		return;
	}
	idx = hlo_cost_size_at(w, hlo_cost_op_shape(w, in, 1), c);
	c->by = 2 * out + idx;
	c->rd = out + idx;
	c->wr = out;
}

/*
 * HandleScatter(): operands [inputs..., indices, updates...]: three times
 * the updates and the indices; the to_apply region once per update element.
 */
static void handle_scatter(struct hlo_walk *w, size_t i, const struct xprofs_hlo_instr *in, int arg,
			   struct hlo_cost *c)
{
	struct xprofs_hlo_shape s;
	struct hlo_cost sub;
	size_t n = in->n_operands / 2, comp;
	double upd = 0, idx;

	if (in->n_operands < 3 || in->n_operands % 2 == 0) {
		hlo_cost_mark(c, U_ALL,
			      "a scatter whose operands are not inputs, indices, updates");
		return;
	}
	for (size_t k = 0; k < n; k++)
		upd += hlo_cost_size_at(w, hlo_cost_op_shape(w, in, n + 1 + k), c);
	idx = hlo_cost_size_at(w, hlo_cost_op_shape(w, in, n), c);
	hlo_cost_shape(w, in->shape, &s);
	c->by = 3 * upd + idx;
	c->rd = 2 * upd + idx;
	c->wr = hlo_cost_is_array(&s) ? upd : 0;
	if (!called(in, 0, c, &comp))
		return;
	comp_sum(w, comp, &sub);
	apply(c, &sub, hlo_cost_first_elements(w, hlo_cost_op_shape(w, in, n + 1)));
}

/* Sum of the other operands' Preprocess() bytes, from operand @from on. */
static double rest(const struct hlo_walk *w, const struct xprofs_hlo_instr *in, size_t from,
		   struct hlo_cost *c)
{
	double n = 0;

	for (size_t k = from; k < in->n_operands; k++) {
		struct xprofs_hlo_shape s;
		size_t sh = hlo_cost_op_shape(w, in, k);

		hlo_cost_shape(w, sh, &s);
		n += hlo_cost_is_array(&s) ? hlo_cost_size_at(w, sh, c) : 0;
	}
	return n;
}

static void handle_slices(struct hlo_walk *w, size_t i, const struct xprofs_hlo_instr *in, int arg,
			  struct hlo_cost *c)
{
	enum kind kind = (enum kind)arg;
	double out = hlo_cost_size_at(w, in->shape, c), a, b;

	if (kind == K_SLICE) {
		c->by = 2 * out;
		c->rd = in->n_operands ? out : 0;
		c->wr = out;
		return;
	}
	if (in->n_operands < (kind == K_DYNAMIC_SLICE ? 2u : 3u)) {
		hlo_cost_mark(c, U_BY | U_RW, "a dynamic slice without its operands");
		return;
	}
	if (kind == K_DYNAMIC_SLICE) { /* the slice and its start indices */
		a = hlo_cost_size_at(w, hlo_cost_op_shape(w, in, 1), c);
		c->by = 2 * out + a;
		c->rd = out + rest(w, in, 1, c);
		c->wr = out;
		return;
	}
	/* dynamic-update-slice: operand 0 is the output, aliased */
	a = hlo_cost_size_at(w, hlo_cost_op_shape(w, in, 1), c);
	b = hlo_cost_size_at(w, hlo_cost_op_shape(w, in, 2), c);
	c->by = 2 * a + b;
	c->rd = rest(w, in, 1, c);
	c->wr = a;
}

static void handle_collective_io(struct hlo_walk *w, size_t i, const struct xprofs_hlo_instr *in,
				 int arg, struct hlo_cost *c)
{
	enum kind kind = (enum kind)arg;
	struct xprofs_hlo_shape s;
	double n = 0;

	hlo_cost_shape(w, in->shape, &s);
	if (kind == K_INFEED) { /* the output's leaves */
		c->by = c->wr = hlo_cost_leaves(w, in->shape, false, c);
		return;
	}
	if (kind == K_OUTFEED) { /* the operands' leaves */
		for (size_t k = 0; k < in->n_operands; k++)
			n += hlo_cost_leaves(w, hlo_cost_op_shape(w, in, k), false, c);
		c->by = c->rd = n;
		return;
	}
	/* HandleAllReduce(): one flop per output element (two replicas assumed) */
	c->fl = hlo_cost_leaves(w, in->shape, true, c);
	n = hlo_cost_leaves(w, in->shape, false, c);
	c->by = n;
	for (size_t k = 0; k < in->n_operands; k++)
		c->by += hlo_cost_size_at(w, hlo_cost_op_shape(w, in, k), c);
	c->wr = hlo_cost_is_array(&s) ? n : 0;
}

static double log2_ceil(double n)
{
	double l = 0;

	while (l < 64 && ldexp(1, (int)l) < n)
		l++;
	return l;
}

/* Handlers of a single formula on shapes: rng, sort, linear algebra, dots. */
static void handle_shapes(struct hlo_walk *w, size_t i, const struct xprofs_hlo_instr *in, int arg,
			  struct hlo_cost *c)
{
	enum kind kind = (enum kind)arg;
	struct xprofs_hlo_shape s, a;
	const char *why;

	hlo_cost_shape(w, in->shape, &s);
	switch (kind) {
	case K_RNG:
		c->tr = (double)s.elements;
		return;
	case K_RNG_BIT_GENERATOR:
		c->tr = hlo_cost_leaves(w, in->shape, true, c);
		return;
	case K_DOT:
		if (in->n_operands < 1) {
			hlo_cost_mark(c, U_FL, "a dot without operands");
			return;
		}
		if (hlo_cost_dot(w, hlo_cost_op_shape(w, in, 0), in->shape, in->dot.lhs_contracting,
				 in->dot.n_lhs_contracting, &c->fl) < 0)
			hlo_cost_mark(c, U_FL, "a contracting dimension is not one of the lhs's");
		return;
	case K_CONVOLUTION:
		if (hlo_cost_conv(w, in, in->shape, &c->fl, &why) < 0)
			hlo_cost_mark(c, U_FL, why);
		return;
	default:
		break;
	}
	if (in->n_operands < (kind == K_TRIANGULAR_SOLVE ? 2u : 1u)) {
		hlo_cost_mark(c, U_ALL, "an instruction without its operands");
		return;
	}
	hlo_cost_shape(w, hlo_cost_op_shape(w, in, 0), &a);
	if (kind == K_SORT) { /* n log n comparisons */
		c->fl = (double)a.elements * log2_ceil((double)a.elements);
		return;
	}
	if (!a.rank) {
		hlo_cost_mark(c, U_FL, "a scalar matrix");
		return;
	}
	if (kind == K_CHOLESKY) { /* n^3 / 3 per batch; half of a read, half written */
		double sa = hlo_cost_size_at(w, hlo_cost_op_shape(w, in, 0), c);

		c->fl = floor((double)a.dims[a.rank - 1] * (double)a.elements / 3);
		c->by = sa;
		c->rd = sa / 2;
		c->wr = sa / 2;
		return;
	}
	/* triangular solve: 2 x m x elements(b); half of a read (XLA then records b's size) */
	{
		struct xprofs_hlo_shape b;
		double sb = hlo_cost_size_at(w, hlo_cost_op_shape(w, in, 1), c);

		hlo_cost_shape(w, hlo_cost_op_shape(w, in, 1), &b);
		c->fl = 2 * (double)a.dims[a.rank - 1] * (double)b.elements;
		c->by = hlo_cost_size_at(w, in->shape, c) +
			hlo_cost_size_at(w, hlo_cost_op_shape(w, in, 0), c) / 2 + sb;
		c->rd = 2 * sb;
	}
}

/* Call, while, conditional, async-start: the called computations' sums. */
static void handle_calls(struct hlo_walk *w, size_t i, const struct xprofs_hlo_instr *in, int arg,
			 struct hlo_cost *c)
{
	enum kind kind = (enum kind)arg;
	size_t n = kind == K_CALL ? (in->n_called ? 1 : 0) : in->n_called;

	memset(c, 0, sizeof(*c));
	if (!n) {
		hlo_cost_mark(c, U_ALL, "a called computation is missing");
		return;
	}
	for (size_t k = 0; k < n; k++) {
		struct hlo_cost sub;

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
		hlo_cost_mark(c, sub.unk, sub.why);
	}
	hlo_cost_mark(c, U_RW, "the reads and writes of a call are its computation's, not summed");
}

/* The plain handlers: elementwise ops, and those whose bytes are all XLA changes. */
static void h_simple(struct hlo_walk *w, size_t i, const struct xprofs_hlo_instr *in, int arg,
		     struct hlo_cost *c)
{
	struct xprofs_hlo_shape s;

	hlo_cost_shape(w, in->shape, &s);
	switch ((enum kind)arg) {
	case K_ELEMENTWISE: /* one flop per output element */
		c->fl = (double)s.elements;
		break;
	case K_TRANSCENDENTAL: /* counted apart from flops */
		c->tr = (double)s.elements;
		break;
	case K_NOTHING:
		c->by = c->rd = c->wr = 0;
		break;
	case K_TUPLE: /* the pointer table, written; no leaf is written */
		c->by = hlo_cost_size_at(w, in->shape, c);
		c->rd = c->wr = 0;
		break;
	case K_TRANSPOSE:
		hlo_cost_mark(
			c, U_BY | U_RW,
			"a transpose is a bitcast (no bytes) or a copy by its layouts, not read");
		break;
	case K_NEEDS_MORE:
		hlo_cost_mark(
			c, U_FL | U_TR,
			"fft lengths and ragged-dot dimension numbers are not read from the proto");
		break;
	default: /* K_PLAIN: Preprocess()'s bytes, no flops */
		break;
	}
}

typedef void handler_fn(struct hlo_walk *w, size_t i, const struct xprofs_hlo_instr *in, int arg,
			struct hlo_cost *c);

/*
 * HLO opcode names (xla/hlo/ir/hlo_opcode.h), sorted, with the handler that
 * follows XLA's for each and its argument.
 */
static const struct op {
	const char *name;
	handler_fn *fn;
	int arg;
} ops[] = {
	/* clang-format off */
	{"abs", h_simple, K_ELEMENTWISE}, {"add", h_simple, K_ELEMENTWISE},
	{"add-dependency", h_simple, K_NOTHING}, {"after-all", h_simple, K_NOTHING},
	{"all-gather", h_simple, K_PLAIN}, {"all-gather-done", h_simple, K_PLAIN},
	{"all-gather-start", h_simple, K_PLAIN}, {"all-reduce", handle_collective_io, K_ALL_REDUCE},
	{"all-reduce-done", h_simple, K_PLAIN},
	{"all-reduce-start", handle_collective_io, K_ALL_REDUCE}, {"all-to-all", h_simple, K_PLAIN},
	{"and", h_simple, K_ELEMENTWISE}, {"async-done", h_simple, K_PLAIN},
	{"async-start", handle_calls, K_CALL}, {"async-update", h_simple, K_PLAIN},
	{"atan2", h_simple, K_TRANSCENDENTAL}, {"batch-norm-grad", h_simple, K_PLAIN},
	{"batch-norm-inference", h_simple, K_PLAIN}, {"batch-norm-training", h_simple, K_PLAIN},
	{"bitcast", h_simple, K_NOTHING}, {"bitcast-convert", h_simple, K_ELEMENTWISE},
	{"broadcast", h_simple, K_PLAIN}, {"call", handle_calls, K_CALL},
	{"cbrt", h_simple, K_TRANSCENDENTAL}, {"ceil", h_simple, K_ELEMENTWISE},
	{"cholesky", handle_shapes, K_CHOLESKY}, {"clamp", h_simple, K_ELEMENTWISE},
	{"collective-broadcast", h_simple, K_PLAIN}, {"collective-permute", h_simple, K_PLAIN},
	{"collective-permute-done", h_simple, K_PLAIN},
	{"collective-permute-start", h_simple, K_PLAIN}, {"compare", h_simple, K_ELEMENTWISE},
	{"complex", h_simple, K_ELEMENTWISE}, {"concatenate", h_simple, K_PLAIN},
	{"conditional", handle_calls, K_CONDITIONAL}, {"constant", h_simple, K_NOTHING},
	{"convert", h_simple, K_ELEMENTWISE}, {"convolution", handle_shapes, K_CONVOLUTION},
	{"copy", h_simple, K_PLAIN}, {"copy-done", h_simple, K_PLAIN},
	{"copy-start", h_simple, K_PLAIN}, {"cosine", h_simple, K_TRANSCENDENTAL},
	{"count-leading-zeros", h_simple, K_ELEMENTWISE},
	{"custom-call", handle_custom_call, K_CUSTOM_CALL}, {"divide", h_simple, K_ELEMENTWISE},
	{"domain", h_simple, K_NOTHING}, {"dot", handle_shapes, K_DOT},
	{"dynamic-reshape", h_simple, K_PLAIN}, {"dynamic-slice", handle_slices, K_DYNAMIC_SLICE},
	{"dynamic-update-slice", handle_slices, K_DYNAMIC_UPDATE_SLICE},
	{"erf", h_simple, K_TRANSCENDENTAL}, {"exponential", h_simple, K_TRANSCENDENTAL},
	{"exponential-minus-one", h_simple, K_TRANSCENDENTAL}, {"fft", h_simple, K_NEEDS_MORE},
	{"floor", h_simple, K_ELEMENTWISE}, {"fusion", handle_fusion, K_FUSION},
	{"gather", handle_gather, K_GATHER}, {"get-dimension-size", h_simple, K_PLAIN},
	{"get-tuple-element", h_simple, K_NOTHING}, {"imag", h_simple, K_ELEMENTWISE},
	{"infeed", handle_collective_io, K_INFEED}, {"iota", h_simple, K_PLAIN},
	{"is-finite", h_simple, K_ELEMENTWISE}, {"log", h_simple, K_TRANSCENDENTAL},
	{"log-plus-one", h_simple, K_TRANSCENDENTAL}, {"logistic", h_simple, K_TRANSCENDENTAL},
	{"map", handle_reduce, K_MAP}, {"maximum", h_simple, K_ELEMENTWISE},
	{"minimum", h_simple, K_ELEMENTWISE}, {"multiply", h_simple, K_ELEMENTWISE},
	{"negate", h_simple, K_ELEMENTWISE}, {"not", h_simple, K_ELEMENTWISE},
	{"optimization-barrier", h_simple, K_PLAIN}, {"or", h_simple, K_ELEMENTWISE},
	{"outfeed", handle_collective_io, K_OUTFEED}, {"pad", h_simple, K_PLAIN},
	{"parameter", h_simple, K_NOTHING}, {"partition-id", h_simple, K_PLAIN},
	{"popcnt", h_simple, K_ELEMENTWISE}, {"power", h_simple, K_TRANSCENDENTAL},
	{"ragged-all-to-all", h_simple, K_PLAIN}, {"ragged-dot", h_simple, K_NEEDS_MORE},
	{"real", h_simple, K_ELEMENTWISE}, {"recv", h_simple, K_PLAIN},
	{"recv-done", h_simple, K_PLAIN}, {"reduce", handle_reduce, K_REDUCE},
	{"reduce-precision", h_simple, K_ELEMENTWISE}, {"reduce-scatter", h_simple, K_PLAIN},
	{"reduce-window", handle_reduce_window, K_REDUCE_WINDOW},
	{"remainder", h_simple, K_ELEMENTWISE}, {"replica-id", h_simple, K_PLAIN},
	{"reshape", h_simple, K_PLAIN}, {"reverse", h_simple, K_PLAIN}, {"rng", handle_shapes, K_RNG},
	{"rng-bit-generator", handle_shapes, K_RNG_BIT_GENERATOR},
	{"rng-get-and-update-state", h_simple, K_PLAIN},
	{"round-nearest-afz", h_simple, K_ELEMENTWISE},
	{"round-nearest-even", h_simple, K_ELEMENTWISE}, {"rsqrt", h_simple, K_TRANSCENDENTAL},
	{"scatter", handle_scatter, K_SCATTER}, {"select", h_simple, K_ELEMENTWISE},
	{"select-and-scatter", handle_select_and_scatter, K_SELECT_AND_SCATTER},
	{"send", h_simple, K_PLAIN}, {"send-done", h_simple, K_PLAIN},
	{"set-dimension-size", h_simple, K_PLAIN}, {"shift-left", h_simple, K_ELEMENTWISE},
	{"shift-right-arithmetic", h_simple, K_ELEMENTWISE},
	{"shift-right-logical", h_simple, K_ELEMENTWISE}, {"sign", h_simple, K_ELEMENTWISE},
	{"sine", h_simple, K_TRANSCENDENTAL}, {"slice", handle_slices, K_SLICE},
	{"sort", handle_shapes, K_SORT}, {"sqrt", h_simple, K_TRANSCENDENTAL},
	{"stochastic-convert", h_simple, K_ELEMENTWISE}, {"subtract", h_simple, K_ELEMENTWISE},
	{"tan", h_simple, K_TRANSCENDENTAL}, {"tanh", h_simple, K_TRANSCENDENTAL},
	{"topk", h_simple, K_PLAIN}, {"transpose", h_simple, K_TRANSPOSE},
	{"triangular-solve", handle_shapes, K_TRIANGULAR_SOLVE}, {"tuple", h_simple, K_TUPLE},
	{"while", handle_calls, K_WHILE}, {"xor", h_simple, K_ELEMENTWISE},
	/* clang-format on */
};

static int op_cmp(const void *key, const void *e)
{
	return strcmp(key, ((const struct op *)e)->name);
}

static void cost_of(struct hlo_walk *w, size_t i, struct hlo_cost *c)
{
	struct xprofs_hlo_instr in;
	const struct op *op;

	memset(c, 0, sizeof(*c));
	hlo_cost_instr(w, i, &in);
	op = bsearch(in.opcode, ops, sizeof(ops) / sizeof(ops[0]), sizeof(ops[0]), op_cmp);
	if (!op) {
		hlo_cost_mark(c, U_ALL, "an opcode XLA's cost analysis does not handle");
		return;
	}
	hlo_cost_preprocess(w, &in, c);
	op->fn(w, i, &in, op->arg, c);
}

int xprofs_hlo_cost_get(const struct xprofs_hlo_program *p, size_t i, struct xprofs_hlo_cost *out)
{
	struct xprofs_hlo_module m;
	struct hlo_walk w = {.p = p, .work = XPROFS_HLO_COST_WORK_MAX};
	struct hlo_cost c;

	xprofs_hlo_program_module(p, &m);
	memset(out, 0, sizeof(*out));
	if (i >= m.n_instructions)
		return -ERANGE;
	cost_of(&w, i, &c);
	/* a hostile window or shape can make a count negative or overflow a double */
	if (!(c.fl >= 0 && c.fl < INFINITY) || !(c.tr >= 0 && c.tr < INFINITY))
		hlo_cost_mark(&c, U_FL | U_TR, "a count no program reaches (negative or infinite)");
	if (!(c.by >= 0 && c.by < INFINITY) || !(c.rd >= 0 && c.rd < INFINITY) ||
	    !(c.wr >= 0 && c.wr < INFINITY))
		hlo_cost_mark(&c, U_BY | U_RW, "a count no program reaches (negative or infinite)");
	out->known = U_ALL & ~c.unk;
	out->reason = c.unk ? c.why : NULL;
	out->flops = c.unk & U_FL ? 0 : c.fl;
	out->transcendentals = c.unk & U_TR ? 0 : c.tr;
	out->bytes_accessed = c.unk & U_BY ? 0 : c.by;
	out->bytes_read = c.unk & U_RW ? 0 : c.rd;
	out->bytes_written = c.unk & U_RW ? 0 : c.wr;
	return 0;
}
