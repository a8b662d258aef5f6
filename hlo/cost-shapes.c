/*
 * cost-shapes.c - what hlo/cost.c builds on: shapes sized as XLA sizes them
 * (ShapeUtil::ByteSizeOf()), HloCostAnalysis::Preprocess()'s default bytes,
 * the work budget, and the FLOPs of dots, convolutions and the cuBLAS /
 * cuDNN custom calls that stand for them: GetDotFlops(),
 * GetConvolutionFlops(), and which custom call targets GpuHloCostAnalysis
 * counts (xla/service/gpu/cublas_cudnn.cc).
 *
 * Design: functions of the instruction's shapes and attributes through the
 * public reader API; a figure that cannot be computed is an error with a
 * reason. Window arithmetic is done in 128 bits (window values are any
 * int64 of the file) and counted positions are charged to the caller's work
 * budget, so a hostile window costs bounded time.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "hlo-internal.h"

__extension__ typedef __int128 i128;

/* XLA's kDefaultPointerSize: a tuple's size is a table of these. */
#define XLA_POINTER_BYTES 8.0

void hlo_cost_mark(struct hlo_cost *c, unsigned bits, const char *why)
{
	c->unk |= bits;
	if (!c->why)
		c->why = why;
}

bool hlo_cost_charge(struct hlo_walk *w, uint64_t n)
{
	if (w->work < n) {
		w->work = 0;
		return false;
	}
	w->work -= n;
	return true;
}

void hlo_cost_instr(const struct hlo_walk *w, size_t i, struct xprofs_hlo_instr *in)
{
	if (xprofs_hlo_instr_get(w->p, i, in) < 0)
		memset(in, 0, sizeof(*in)); /* indices come from the reader: not reached */
}

void hlo_cost_shape(const struct hlo_walk *w, size_t i, struct xprofs_hlo_shape *s)
{
	if (xprofs_hlo_shape_get(w->p, i, s) < 0)
		memset(s, 0, sizeof(*s));
}

bool hlo_cost_is_tuple(const struct xprofs_hlo_shape *s)
{
	return s->element_type == XPROFS_HLO_TUPLE;
}

/* An array: not a tuple, token or opaque (XLA's Shape::IsArray()). */
bool hlo_cost_is_array(const struct xprofs_hlo_shape *s)
{
	return s->element_type != XPROFS_HLO_TUPLE && s->element_type != XPROFS_HLO_TOKEN &&
	       s->element_type != XPROFS_HLO_OPAQUE;
}

/*
 * XLA's ShapeUtil::ByteSizeOf(shape, 8), the top level only: elements times
 * the type's bytes, a tuple's pointer table, 0 for a token, a pointer for an
 * opaque. -1 for an element type XLA's table does not have.
 */
double hlo_cost_size_of(const struct xprofs_hlo_shape *s)
{
	unsigned bits;

	if (hlo_cost_is_tuple(s))
		return XLA_POINTER_BYTES * (double)s->n_tuple;
	if (s->element_type == XPROFS_HLO_TOKEN)
		return 0;
	if (s->element_type == XPROFS_HLO_OPAQUE)
		return XLA_POINTER_BYTES;
	bits = xprofs_hlo_type_bits(s->element_type);
	if (!bits)
		return -1;
	return (double)s->elements * (double)((bits + 7) / 8);
}

/* hlo_cost_size_of() of shape @i; marks @c's bytes unknown for an unknown type. */
double hlo_cost_size_at(const struct hlo_walk *w, size_t i, struct hlo_cost *c)
{
	struct xprofs_hlo_shape s;
	double n;

	hlo_cost_shape(w, i, &s);
	n = hlo_cost_size_of(&s);
	if (n < 0) {
		hlo_cost_mark(c, XPROFS_HLO_COST_BYTES | XPROFS_HLO_COST_RW,
			      "a shape has an element type XLA does not size");
		return 0;
	}
	return n;
}

/* Sum over the array subshapes of shape @i: their sizes (or @elements: elements). */
double hlo_cost_leaves(const struct hlo_walk *w, size_t i, bool elements, struct hlo_cost *c)
{
	struct xprofs_hlo_shape s;
	double n = 0;

	hlo_cost_shape(w, i, &s);
	if (!hlo_cost_is_tuple(&s)) {
		if (!hlo_cost_is_array(&s))
			return 0;
		return elements ? (double)s.elements : hlo_cost_size_at(w, i, c);
	}
	/* nesting is at most XPROFS_HLO_TUPLE_DEPTH_MAX, checked by the reader */
	for (size_t k = 0; k < s.n_tuple; k++)
		n += hlo_cost_leaves(w, s.tuple[k], elements, c);
	return n;
}

size_t hlo_cost_op_shape(const struct hlo_walk *w, const struct xprofs_hlo_instr *in, size_t k)
{
	struct xprofs_hlo_instr op;

	hlo_cost_instr(w, in->operands[k], &op);
	return op.shape;
}

/* Elements of shape @i, or of its first element when it is a tuple. */
double hlo_cost_first_elements(const struct hlo_walk *w, size_t i)
{
	struct xprofs_hlo_shape s;

	hlo_cost_shape(w, i, &s);
	if (hlo_cost_is_tuple(&s) && s.n_tuple)
		hlo_cost_shape(w, s.tuple[0], &s);
	return (double)s.elements;
}

/* HloCostAnalysis::Preprocess(): bytes = operands + output, each read or written. */
void hlo_cost_preprocess(const struct hlo_walk *w, const struct xprofs_hlo_instr *in,
			 struct hlo_cost *c)
{
	struct xprofs_hlo_shape s;
	double n = hlo_cost_size_at(w, in->shape, c);

	hlo_cost_shape(w, in->shape, &s);
	c->by = n;
	c->wr = hlo_cost_is_array(&s) ? n : 0;
	for (size_t k = 0; k < in->n_operands; k++) {
		size_t sh = hlo_cost_op_shape(w, in, k);

		n = hlo_cost_size_at(w, sh, c);
		hlo_cost_shape(w, sh, &s);
		c->by += n;
		c->rd += hlo_cost_is_array(&s) ? n : 0;
	}
}

/* Shape @i, or its first element when it is a tuple (a custom call's result). */
static void first_shape(const struct hlo_walk *w, size_t i, struct xprofs_hlo_shape *s)
{
	hlo_cost_shape(w, i, s);
	if (hlo_cost_is_tuple(s) && s->n_tuple)
		hlo_cost_shape(w, s->tuple[0], s);
}

int hlo_cost_dot(const struct hlo_walk *w, size_t lhs_shape, size_t out_shape,
		 const int64_t *contracting, size_t n, double *flops)
{
	struct xprofs_hlo_shape l, o;
	double width = 1;

	hlo_cost_shape(w, lhs_shape, &l);
	first_shape(w, out_shape, &o);
	for (size_t k = 0; k < n; k++) {
		if (contracting[k] < 0 || (uint64_t)contracting[k] >= l.rank)
			return -EINVAL;
		width *= (double)l.dims[contracting[k]];
	}
	/* each output element takes width fused multiply-adds of 2 flops */
	*flops = 2 * (double)o.elements * width;
	return 0;
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
static double positions(struct hlo_walk *w, const struct xprofs_hlo_window_dim *wd, int64_t in,
			int64_t ker, int64_t out)
{
	i128 s = wd->stride, bd = wd->base_dilation, wdl = wd->window_dilation;
	double n = 0;

	/* XLA's two shortcuts, which give what the loops give */
	if (in == out && ker == out && in == wd->base_dilation && wd->window_dilation == 1 &&
	    (in - 1 > 1 ? in - 1 : 1) == wd->stride && wd->padding_low == 0 &&
	    wd->padding_high == 0)
		return (double)in;
	if (in == 1 && ker == out && wd->window_dilation == 1 && wd->base_dilation == 1 &&
	    wd->stride == 1 && wd->padding_high == out - 1 && wd->padding_low == out - 1)
		return (double)out;
	/* ker and out are below 2^40: their product is a double */
	if ((double)ker * (bd > 1 ? (double)out + 1 : 1) > (double)w->work) {
		w->work = 0;
		return -1;
	}
	w->work -= (uint64_t)ker * (bd > 1 ? (uint64_t)out + 1 : 1);
	for (int64_t k = 0; k < ker; k++) {
		i128 c = (i128)k * wdl - wd->padding_low, lo, hi;

		if (bd == 1) {
			/* o in [0, out) with 0 <= o * s + c < in: a closed form */
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

int hlo_cost_conv(struct hlo_walk *w, const struct xprofs_hlo_instr *in, size_t res_shape,
		  double *flops, const char **why)
{
	const struct xprofs_hlo_conv_dnums *d = &in->conv;
	struct xprofs_hlo_shape l, r, o;
	double pos = 1;

	*why = "convolution dimension numbers that do not fit its shapes";
	if (in->n_operands < 2)
		return -EINVAL;
	hlo_cost_shape(w, hlo_cost_op_shape(w, in, 0), &l);
	hlo_cost_shape(w, hlo_cost_op_shape(w, in, 1), &r);
	first_shape(w, res_shape, &o);
	if (!dim_ok(d->input_batch, &l) || !dim_ok(d->input_feature, &l) ||
	    !dim_ok(d->output_feature, &o) || d->n_input_spatial < in->n_window ||
	    d->n_kernel_spatial < in->n_window || d->n_output_spatial < in->n_window)
		return -EINVAL;
	/* no window: one position (XLA makes a window of size 1) */
	for (size_t k = 0; k < in->n_window; k++) {
		const struct xprofs_hlo_window_dim *wd = &in->window[k];
		double n;

		if (!dim_ok(d->input_spatial[k], &l) || !dim_ok(d->kernel_spatial[k], &r) ||
		    !dim_ok(d->output_spatial[k], &o))
			return -EINVAL;
		if (wd->stride < 1 || wd->window_dilation < 1 || wd->base_dilation < 1) {
			*why = "a convolution window with a stride or dilation below 1";
			return -EINVAL;
		}
		n = positions(w, wd, l.dims[d->input_spatial[k]], r.dims[d->kernel_spatial[k]],
			      o.dims[d->output_spatial[k]]);
		if (n < 0) {
			*why = "more work than XPROFS_HLO_COST_WORK_MAX to count";
			return -E2BIG;
		}
		pos *= n;
	}
	*flops = 2 * (double)(l.dims[d->input_feature] / in->feature_group_count) *
		 (double)o.dims[d->output_feature] *
		 (double)(l.dims[d->input_batch] / in->batch_group_count) * pos;
	*why = NULL;
	return 0;
}

static bool target_in(const char *t, const char *const *set)
{
	for (; *set; set++)
		if (!strcmp(t, *set))
			return true;
	return false;
}

/* IsCublasGemm(), IsCustomCallToDnnConvolution(); ROCm's XLA emits the same targets. */
static const char *const gemm_targets[] = {"__cublas$gemm", "__cublas$lt$matmul",
					   "__cublas$lt$matmul$f8", NULL};
static const char *const dnn_conv_targets[] = {"__cudnn$convForward",
					       "__cudnn$convForwardGraph",
					       "__cudnn$convBackwardInput",
					       "__cudnn$convBackwardFilter",
					       "__cudnn$convBiasActivationForward",
					       NULL};

enum hlo_cost_call hlo_cost_call_kind(const char *target)
{
	if (target_in(target, gemm_targets))
		return HLO_COST_GEMM;
	if (target_in(target, dnn_conv_targets))
		return HLO_COST_DNN_CONV;
	return HLO_COST_OTHER;
}

/* One proto-JSON int64 (a string, or a number) into *@v; false when it is neither. */
static bool json_i64(const json_t *e, int64_t *v)
{
	const char *s;
	char *end;

	if (json_is_integer(e)) {
		*v = json_integer_value(e);
		return true;
	}
	if (!json_is_string(e))
		return false;
	s = json_string_value(e);
	errno = 0;
	*v = strtoll(s, &end, 10);
	return !errno && *end == '\0' && end != s;
}

int hlo_cost_gemm_contracting(const struct xprofs_hlo_program *p, size_t i, int64_t *v, size_t *n)
{
	json_t *root, *a, *e;
	struct xprofs_buf b;
	int ret = -ENOENT;
	size_t k;

	xprofs_buf_init(&b, XPROFS_HLO_COST_CONFIG_MAX);
	if (xprofs_hlo_backend_config(p, i, &b) < 0 || !b.len) {
		xprofs_buf_deinit(&b);
		return -ENOENT;
	}
	root = json_loadb(b.data, b.len, 0, NULL);
	a = json_object_get(json_object_get(json_object_get(root, "gemm_backend_config"),
					    "dot_dimension_numbers"),
			    "lhs_contracting_dimensions");
	if (json_is_array(a) && json_array_size(a) <= XPROFS_HLO_RANK_MAX) {
		ret = 0;
		*n = json_array_size(a);
		json_array_foreach(a, k, e)
		{
			if (!json_i64(e, &v[k]))
				ret = -EINVAL;
		}
	}
	json_decref(root);
	xprofs_buf_deinit(&b);
	return ret;
}
