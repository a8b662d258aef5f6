/*
 * hlo.c - the HloProtos of generated profiles (sidecars and the metadata
 * plane's "Hlo Proto" stats), and one large HloProto for bench/hlo.sh.
 *
 * Each module's program is the same shape-consistent graph, so tests can
 * compute every FLOP figure by hand (docs/hlo.md "Generated HLO"):
 * - main.<id> holds parameters Arg_0..Arg_8 (f32), the GEN_HLO_INSTRS
 *   instructions named as the GPU kernels' hlo_op leaves ("<op>.<i>", op =
 *   gen_opcodes[i % 16]: XProf's symbol resolver finds them, with the same
 *   OpMetadata as always), a cuDNN convolution custom call "cudnn-conv.1",
 *   a scalar constant and a root tuple;
 * - dots: f32[256,512] x f32[512,1024] (contracting 1 / 0), and a batched
 *   f32[8,128,64] x f32[8,64,32]; convolutions: NHWC f32[8,32,32,16] with an
 *   HWIO 3x3 kernel, padding 1 (16 -> 32 features), feature_group_count 2, or
 *   stride 2; reduces over dimension 1 with the scalar-add region; custom
 *   calls "__cublas$gemm" (a dot's shapes, a backend_config) and
 *   "__cudnn$convForward" (window, dimension numbers);
 * - fusions call fused computations: kLoop (add, multiply, exponential),
 *   kOutput dot + broadcast bias + add, kOutput convolution + relu.
 * - sidecars only (cost_extras(), after "cudnn-conv.1"): transcendental
 *   and other elementwise ops, a small dot, convolutions with window and
 *   base dilation and batch groups, a reduce-window, a slice, a cuBLASLt
 *   batched matmul and a loop fusion over a slice, for the FLOPs and bytes
 *   tests (tests/hlo/oracle_cost.py); the metadata plane's program stays as
 *   it was, so profiles sized by --size keep their events.
 * Instruction ids are unique in the module; every operand comes earlier.
 *
 * It shares no code with the reader (hlo/): it is its oracle's input.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gen.h"

enum { PRED = 1, S8 = 2, U8 = 6, F32 = 11, BF16 = 16, TUPLE = 13 };

/* One instruction to encode (all borrowed). */
struct gi {
	const char *name, *opcode;
	int type;
	int64_t dims[4];
	size_t rank;
	const struct gi *tuple; /* tuple element shapes (type, dims, rank) */
	size_t n_tuple;
	int64_t ops[4];
	size_t n_ops;
	int64_t called[2];
	size_t n_called;
	const char *op_name, *op_type, *file;
	int line;
	const char *cc_target, *backend_config, *fusion_kind;
	int64_t attr_dims[4];
	size_t n_attr_dims;
	int64_t param;
	int conv; /* 0: none, else the window: wins[conv] */
	int64_t fgc, bgc;
	int dot;   /* 0: none, 1: plain, 2: batched */
	bool rwin; /* a reduce-window's 1x3 window */
};

struct hb {
	struct pb ins, tmp, tmp2, comp, mod;
	int64_t next_id;
};

static void packed(struct pb *b, unsigned field, const int64_t *v, size_t n, struct pb *tmp)
{
	if (!n)
		return;
	tmp->len = 0;
	for (size_t i = 0; i < n; i++)
		pb_varint(tmp, (uint64_t)v[i]);
	pb_bytes(b, field, tmp->p, tmp->len);
}

/* ShapeProto of @g's (type, dims) with a descending layout, as field @field of @b. */
static void shape(struct pb *b, unsigned field, const struct gi *g, struct pb *tmp)
{
	struct pb s, lay;
	int64_t m2m[4];

	pb_init(&s, 4096);
	pb_init(&lay, 256);
	pb_int(&s, 2, (uint64_t)g->type);
	packed(&s, 3, g->dims, g->rank, tmp);
	for (size_t i = 0; i < g->n_tuple; i++)
		shape(&s, 4, &g->tuple[i], tmp);
	if (g->type != TUPLE) {
		for (size_t i = 0; i < g->rank; i++)
			m2m[i] = (int64_t)(g->rank - 1 - i);
		packed(&lay, 1, m2m, g->rank, tmp);
		pb_bytes(&s, 5, lay.p, lay.len);
	}
	pb_bytes(b, field, s.p, s.len);
	b->err = b->err ? b->err : s.err;
	pb_deinit(&s);
	pb_deinit(&lay);
}

/* The 3x3 windows of the convolutions: size, stride, padding, dilations. */
static const struct win {
	int64_t stride, pad_lo, pad_hi, wdil, bdil;
} wins[] = {
	{0, 0, 0, 0, 0}, {1, 1, 1, 1, 1}, /* 1: padding 1 */
	{2, 0, 1, 1, 1},                  /* 2: stride 2, padding 0/1 */
	{1, 2, 2, 2, 1},                  /* 3: window dilation 2, padding 2 */
	{1, 1, 1, 1, 2},                  /* 4: base dilation 2 (a transposed convolution) */
};

/* The window and dimension numbers of convolution kind @k (NHWC, HWIO, NHWC). */
static void conv_attrs(struct pb *b, int k, struct pb *t, struct pb *t2)
{
	static const int64_t in_sp[] = {1, 2}, k_sp[] = {0, 1};
	const struct win *w = &wins[k];

	t2->len = 0;
	for (int d = 0; d < 2; d++) {
		t->len = 0;
		pb_int(t, 1, 3);
		pb_int(t, 2, (uint64_t)w->stride);
		pb_int(t, 3, (uint64_t)w->pad_lo);
		pb_int(t, 4, (uint64_t)w->pad_hi);
		pb_int(t, 5, (uint64_t)w->wdil);
		pb_int(t, 6, (uint64_t)w->bdil);
		pb_bytes(t2, 1, t->p, t->len);
	}
	pb_bytes(b, 15, t2->p, t2->len);
	t2->len = 0;
	pb_int(t2, 3, 2); /* kernel input feature */
	pb_int(t2, 4, 3); /* kernel output feature */
	packed(t2, 6, k_sp, 2, t);
	pb_int(t2, 7, 0); /* input batch (0: not written, as proto3 does) */
	pb_int(t2, 8, 3);
	pb_int(t2, 9, 0);
	pb_int(t2, 10, 3);
	packed(t2, 11, in_sp, 2, t);
	packed(t2, 12, in_sp, 2, t);
	pb_bytes(b, 16, t2->p, t2->len);
}

/* Append instruction @g (id: the next) to the computation being built; its id. */
static int64_t emit(struct hb *h, const struct gi *g)
{
	struct pb *b = &h->ins;
	int64_t id = h->next_id++;

	b->len = 0;
	pb_str(b, 1, g->name);
	pb_str(b, 2, g->opcode);
	shape(b, 3, g, &h->tmp);
	if (g->op_name) {
		struct pb *m = &h->tmp2;

		m->len = 0;
		if (g->op_type)
			pb_str(m, 1, g->op_type);
		pb_str(m, 2, g->op_name);
		if (g->file) {
			pb_str(m, 3, g->file);
			pb_int(m, 4, (uint64_t)g->line);
		}
		pb_bytes(b, 7, m->p, m->len);
	}
	if (g->param)
		pb_int(b, 9, (uint64_t)g->param);
	if (g->fusion_kind)
		pb_str(b, 11, g->fusion_kind);
	packed(b, 14, g->attr_dims, g->n_attr_dims, &h->tmp);
	if (g->conv)
		conv_attrs(b, g->conv, &h->tmp, &h->tmp2);
	if (g->rwin) {
		h->tmp2.len = 0;
		for (int d = 0; d < 2; d++) {
			h->tmp.len = 0;
			pb_int(&h->tmp, 1, d ? 3 : 1);
			pb_int(&h->tmp, 2, 1);
			pb_int(&h->tmp, 5, 1);
			pb_int(&h->tmp, 6, 1);
			pb_bytes(&h->tmp2, 1, h->tmp.p, h->tmp.len);
		}
		pb_bytes(b, 15, h->tmp2.p, h->tmp2.len);
	}
	if (g->cc_target)
		pb_str(b, 28, g->cc_target);
	if (g->dot) {
		static const int64_t one[] = {1}, zero[] = {0}, two[] = {2};
		struct pb *t = &h->tmp2;

		t->len = 0;
		packed(t, 1, g->dot == 2 ? two : one, 1, &h->tmp);
		packed(t, 2, g->dot == 2 ? one : zero, 1, &h->tmp);
		if (g->dot == 2) {
			packed(t, 3, zero, 1, &h->tmp);
			packed(t, 4, zero, 1, &h->tmp);
		}
		pb_bytes(b, 30, t->p, t->len);
	}
	pb_int(b, 35, (uint64_t)id);
	packed(b, 36, g->ops, g->n_ops, &h->tmp);
	packed(b, 38, g->called, g->n_called, &h->tmp);
	if (g->backend_config)
		pb_str(b, 43, g->backend_config);
	if (g->fgc > 1)
		pb_int(b, 50, (uint64_t)g->fgc);
	if (g->bgc > 1)
		pb_int(b, 58, (uint64_t)g->bgc);
	pb_bytes(&h->comp, 2, b->p, b->len);
	return id;
}

/* Close the computation being built as field 3 of the module; its id. */
static int64_t end_comp(struct hb *h, const char *name, int64_t root, bool fusion)
{
	int64_t id = h->next_id++;
	struct pb c;

	pb_init(&c, h->comp.len + 1024);
	pb_str(&c, 1, name);
	pb_put(&c, h->comp.p, h->comp.len); /* its field-2 instructions, as emitted */
	pb_int(&c, 5, (uint64_t)id);
	pb_int(&c, 6, (uint64_t)root);
	if (fusion)
		pb_int(&c, 7, 1);
	pb_bytes(&h->mod, 3, c.p, c.len);
	h->mod.err = h->mod.err ? h->mod.err : c.err;
	pb_deinit(&c);
	h->comp.len = 0;
	return id;
}

static const struct gi f32_scalar = {.type = F32};

/* The scalar-add region of reduces and all-reduces: two parameters and their sum. */
static int64_t region_add(struct hb *h, const char *f)
{
	struct gi a = {.name = "Arg_0.r", .opcode = "parameter", .type = F32};
	struct gi b = a, s = a;
	char on[160];
	int64_t x, y;

	snprintf(on, sizeof(on), "jit(%s)/jit(main)/reduce_sum", f);
	x = emit(h, &a);
	b.name = "Arg_1.r";
	b.param = 1;
	y = emit(h, &b);
	s.name = "add.r";
	s.opcode = "add";
	s.ops[0] = x;
	s.ops[1] = y;
	s.n_ops = 2;
	s.op_name = on;
	return end_comp(h, "region_add", emit(h, &s), false);
}

/*
 * The fused computation of fusion @i (kind @k: 0 loop, 1 dot output, 3 conv
 * output) named "fused_computation.<i>"; its parameter shapes match the
 * fusion's operands.
 */
static int64_t fused(struct hb *h, uint32_t i, int k, const char *f)
{
	char n[6][48], on[4][160], cname[48];
	struct gi g[6];
	int64_t id[6];

	memset(g, 0, sizeof(g));
	for (int j = 0; j < 6; j++)
		g[j].type = F32;
	snprintf(on[0], sizeof(on[0]), "jit(%s)/jit(main)/add", f);
	snprintf(on[1], sizeof(on[1]), "jit(%s)/jit(main)/mul", f);
	snprintf(on[2], sizeof(on[2]), "jit(%s)/jit(main)/exp", f);
	snprintf(on[3], sizeof(on[3]), "jit(%s)/jit(main)/%s", f,
		 k == 1 ? "dot_general" : "conv_general_dilated");
	for (int j = 0; j < 6; j++)
		snprintf(n[j], sizeof(n[j]), "%s.%u.1",
			 (const char *const[]){"param_0", "param_1", "x", "y", "z", "param_2"}[j],
			 i);
	g[0] = (struct gi){
		.name = n[0], .opcode = "parameter", .type = F32, .rank = 2, .dims = {256, 512}};
	g[1] = g[0];
	g[1].name = n[1];
	g[1].param = 1;
	if (k == 0) {
		id[0] = emit(h, &g[0]);
		id[1] = emit(h, &g[1]);
		g[2] = (struct gi){.name = n[2],
				   .opcode = "add",
				   .type = F32,
				   .rank = 2,
				   .dims = {256, 512},
				   .ops = {id[0], id[1]},
				   .n_ops = 2,
				   .op_name = on[0]};
		id[2] = emit(h, &g[2]);
		g[3] = g[2];
		g[3].name = n[3];
		g[3].opcode = "multiply";
		g[3].ops[0] = id[2];
		g[3].ops[1] = id[0];
		g[3].op_name = on[1];
		id[3] = emit(h, &g[3]);
		g[4] = g[2];
		g[4].name = n[4];
		g[4].opcode = "exponential";
		g[4].ops[0] = id[3];
		g[4].n_ops = 1;
		g[4].op_name = on[2];
		id[4] = emit(h, &g[4]);
	} else if (k == 1) {
		id[0] = emit(h, &g[0]);
		g[1].dims[0] = 512;
		g[1].dims[1] = 1024;
		id[1] = emit(h, &g[1]);
		g[5] = (struct gi){.name = n[5],
				   .opcode = "parameter",
				   .type = F32,
				   .rank = 1,
				   .dims = {1024},
				   .param = 2};
		id[5] = emit(h, &g[5]);
		g[2] = (struct gi){.name = n[2],
				   .opcode = "dot",
				   .type = F32,
				   .rank = 2,
				   .dims = {256, 1024},
				   .ops = {id[0], id[1]},
				   .n_ops = 2,
				   .op_name = on[3],
				   .dot = 1};
		id[2] = emit(h, &g[2]);
		g[3] = (struct gi){.name = n[3],
				   .opcode = "broadcast",
				   .type = F32,
				   .rank = 2,
				   .dims = {256, 1024},
				   .ops = {id[5]},
				   .n_ops = 1,
				   .attr_dims = {1},
				   .n_attr_dims = 1,
				   .op_name = on[0]};
		id[3] = emit(h, &g[3]);
		g[4] = (struct gi){.name = n[4],
				   .opcode = "add",
				   .type = F32,
				   .rank = 2,
				   .dims = {256, 1024},
				   .ops = {id[2], id[3]},
				   .n_ops = 2,
				   .op_name = on[0]};
		id[4] = emit(h, &g[4]);
	} else {
		g[0].rank = g[1].rank = 4;
		memcpy(g[0].dims, (int64_t[]){8, 32, 32, 16}, sizeof(g[0].dims));
		memcpy(g[1].dims, (int64_t[]){3, 3, 16, 32}, sizeof(g[1].dims));
		id[0] = emit(h, &g[0]);
		id[1] = emit(h, &g[1]);
		g[2] = (struct gi){.name = n[2],
				   .opcode = "convolution",
				   .type = F32,
				   .rank = 4,
				   .dims = {8, 32, 32, 32},
				   .ops = {id[0], id[1]},
				   .n_ops = 2,
				   .op_name = on[3],
				   .conv = 1};
		id[2] = emit(h, &g[2]);
		g[3] = (struct gi){
			.name = n[3], .opcode = "constant", .type = F32, .op_name = on[0]};
		id[3] = emit(h, &g[3]);
		g[4] = (struct gi){.name = n[4],
				   .opcode = "maximum",
				   .type = F32,
				   .rank = 4,
				   .dims = {8, 32, 32, 32},
				   .ops = {id[2], id[3]},
				   .n_ops = 2,
				   .op_name = on[0]};
		id[4] = emit(h, &g[4]);
	}
	snprintf(cname, sizeof(cname), "fused_computation.%u", i);
	return end_comp(h, cname, id[4], true);
}

/* The main computation's parameters: their shapes. */
static const struct gi args[9] = {
	{.name = "Arg_0.1", .rank = 2, .dims = {256, 512}},
	{.name = "Arg_1.2", .rank = 2, .dims = {256, 512}},
	{.name = "Arg_2.3", .rank = 1, .dims = {1024}},
	{.name = "Arg_3.4", .rank = 2, .dims = {512, 1024}},
	{.name = "Arg_4.5", .rank = 4, .dims = {8, 32, 32, 16}},
	{.name = "Arg_5.6", .rank = 3, .dims = {8, 128, 64}},
	{.name = "Arg_6.7", .rank = 3, .dims = {8, 64, 32}},
	{.name = "Arg_7.8", .rank = 4, .dims = {3, 3, 16, 32}},
	{.name = "Arg_8.9", .rank = 4, .dims = {3, 3, 8, 32}},
};

static const char gemm_config[] =
	"{\"operation_queue_id\":\"0\",\"wait_on_operation_queues\":[],"
	"\"gemm_backend_config\":{\"alpha_real\":1,\"alpha_imag\":0,\"beta\":0,"
	"\"dot_dimension_numbers\":{\"lhs_contracting_dimensions\":[\"1\"],"
	"\"rhs_contracting_dimensions\":[\"0\"],\"lhs_batch_dimensions\":[],"
	"\"rhs_batch_dimensions\":[]},\"precision_config\":{\"operand_precision\":"
	"[\"DEFAULT\",\"DEFAULT\"],\"algorithm\":\"ALG_UNSET\"},\"epilogue\":\"DEFAULT\","
	"\"lhs_stride\":\"131072\",\"rhs_stride\":\"524288\",\"grad_x\":false,\"grad_y\":false,"
	"\"damax_output\":false},\"force_earliest_schedule\":false}";
static const char conv_config[] =
	"{\"operation_queue_id\":\"0\",\"wait_on_operation_queues\":[],"
	"\"cudnn_conv_backend_config\":{\"conv_result_scale\":1,\"activation_mode\":\"kNone\","
	"\"side_input_scale\":0,\"leakyrelu_alpha\":0},\"force_earliest_schedule\":false}";

static const char lt_config[] =
	"{\"operation_queue_id\":\"0\",\"wait_on_operation_queues\":[],"
	"\"gemm_backend_config\":{\"alpha_real\":1,\"alpha_imag\":0,\"beta\":0,"
	"\"dot_dimension_numbers\":{\"lhs_contracting_dimensions\":[\"2\"],"
	"\"rhs_contracting_dimensions\":[\"1\"],\"lhs_batch_dimensions\":[\"0\"],"
	"\"rhs_batch_dimensions\":[\"0\"]},\"epilogue\":\"DEFAULT\"},"
	"\"force_earliest_schedule\":false}";

/*
 * The fused computation of "fusion.69": tanh of a slice of param 0 times the
 * log of param 1, f32[128,512]; built aside (main is being built in h->comp).
 */
static int64_t fused_tanh(struct hb *h)
{
	struct gi g[6] = {
		{.name = "p0.69", .opcode = "parameter", .rank = 2, .dims = {256, 512}},
		{.name = "p1.69", .opcode = "parameter", .rank = 2, .dims = {128, 512}, .param = 1},
		{.name = "s.69", .opcode = "slice", .rank = 2, .dims = {128, 512}, .n_ops = 1},
		{.name = "t.69", .opcode = "tanh", .rank = 2, .dims = {128, 512}, .n_ops = 1},
		{.name = "l.69", .opcode = "log", .rank = 2, .dims = {128, 512}, .n_ops = 1},
		{.name = "m.69", .opcode = "multiply", .rank = 2, .dims = {128, 512}, .n_ops = 2},
	};
	int64_t id[6], c;
	struct pb main_comp = h->comp;

	pb_init(&h->comp, GEN_HLO_PROTO_MAX);
	for (int k = 0; k < 6; k++) {
		g[k].type = F32;
		if (k == 2 || k == 4)
			g[k].ops[0] = id[k == 2 ? 0 : 1];
		if (k == 3)
			g[k].ops[0] = id[2];
		if (k == 5) {
			g[k].ops[0] = id[3];
			g[k].ops[1] = id[4];
		}
		id[k] = emit(h, &g[k]);
	}
	c = end_comp(h, "fused_computation.69", id[5], true);
	h->mod.err = h->mod.err ? h->mod.err : h->comp.err;
	pb_deinit(&h->comp);
	h->comp = main_comp;
	return c;
}

/*
 * The instructions the cost tests check by hand (docs/hlo.md "Generated
 * HLO"), after "cudnn-conv.1": parameters Arg_9..Arg_15, transcendental and
 * other elementwise ops, a small dot, dilated and batch-grouped convolutions,
 * a reduce-window, a slice, a cuBLASLt batched matmul and a loop fusion.
 */
static void cost_extras(struct hb *h, const int64_t *arg, int64_t region, int64_t zero)
{
	static const struct gi params[7] = {
		{.name = "Arg_9.10", .rank = 2, .dims = {8, 64}},
		{.name = "Arg_10.11", .rank = 2, .dims = {64, 32}},
		{.name = "Arg_11.12", .rank = 3, .dims = {4, 64, 128}},
		{.name = "Arg_12.13", .rank = 3, .dims = {4, 128, 32}},
		{.name = "Arg_13.14", .rank = 4, .dims = {16, 8, 8, 4}},
		{.name = "Arg_14.15", .rank = 4, .dims = {3, 3, 4, 8}},
		{.name = "Arg_15.16", .rank = 2, .dims = {128, 512}},
	};
	static const struct {
		const char *name, *op;
		int type;
		size_t n_ops;
	} ew[] = {
		{"tanh.50", "tanh", F32, 1},         {"log.51", "log", F32, 1},
		{"rsqrt.52", "rsqrt", F32, 1},       {"logistic.53", "logistic", F32, 1},
		{"sqrt.54", "sqrt", F32, 1},         {"power.55", "power", F32, 2},
		{"subtract.56", "subtract", F32, 2}, {"divide.57", "divide", F32, 2},
		{"negate.58", "negate", F32, 1},     {"sine.59", "sine", F32, 1},
		{"compare.60", "compare", PRED, 2},  {"convert.61", "convert", BF16, 1},
	};
	int64_t a[7], fc = fused_tanh(h);

	for (int k = 0; k < 7; k++) {
		struct gi g = params[k];

		g.opcode = "parameter";
		g.type = F32;
		g.param = 9 + k;
		a[k] = emit(h, &g);
	}
	for (size_t k = 0; k < sizeof(ew) / sizeof(ew[0]); k++) {
		struct gi g = {.name = ew[k].name,
			       .opcode = ew[k].op,
			       .type = ew[k].type,
			       .rank = 2,
			       .dims = {256, 512},
			       .ops = {arg[0], arg[1]},
			       .n_ops = ew[k].n_ops};

		emit(h, &g);
	}
	{
		struct gi g[] = {
			{.name = "dot.62",
			 .opcode = "dot",
			 .rank = 2,
			 .dims = {8, 32},
			 .ops = {a[0], a[1]},
			 .n_ops = 2,
			 .dot = 1},
			{.name = "convolution.63",
			 .opcode = "convolution",
			 .rank = 4,
			 .dims = {8, 32, 32, 32},
			 .ops = {arg[4], arg[7]},
			 .n_ops = 2,
			 .conv = 3},
			{.name = "convolution.64",
			 .opcode = "convolution",
			 .rank = 4,
			 .dims = {8, 63, 63, 32},
			 .ops = {arg[4], arg[7]},
			 .n_ops = 2,
			 .conv = 4},
			{.name = "convolution.65",
			 .opcode = "convolution",
			 .rank = 4,
			 .dims = {8, 8, 8, 8},
			 .ops = {a[4], a[5]},
			 .n_ops = 2,
			 .conv = 1,
			 .bgc = 2},
			{.name = "reduce-window.66",
			 .opcode = "reduce-window",
			 .rank = 2,
			 .dims = {256, 510},
			 .ops = {arg[0], zero},
			 .n_ops = 2,
			 .called = {region},
			 .n_called = 1,
			 .rwin = true},
			{.name = "slice.67",
			 .opcode = "slice",
			 .rank = 2,
			 .dims = {128, 512},
			 .ops = {arg[0]},
			 .n_ops = 1},
			{.name = "cublas-lt.68",
			 .opcode = "custom-call",
			 .rank = 3,
			 .dims = {4, 64, 32},
			 .ops = {a[2], a[3]},
			 .n_ops = 2,
			 .cc_target = "__cublas$lt$matmul",
			 .backend_config = lt_config},
			{.name = "fusion.69",
			 .opcode = "fusion",
			 .rank = 2,
			 .dims = {128, 512},
			 .ops = {arg[0], a[6]},
			 .n_ops = 2,
			 .called = {fc},
			 .n_called = 1,
			 .fusion_kind = "kLoop"},
		};

		for (size_t k = 0; k < sizeof(g) / sizeof(g[0]); k++) {
			g[k].type = F32;
			emit(h, &g[k]);
		}
	}
}

/*
 * Main instruction @i: gen_opcodes[i % 16] with its operands among @arg (the
 * parameters' ids); its fused computation or region in @called. The name and
 * OpMetadata are those the trace's resolver always found.
 */
static void main_instr(uint32_t i, const char *f, const int64_t *arg, int64_t region,
		       int64_t fusion_comp, int64_t zero, char *name, char *on, struct gi *g)
{
	const char *op = gen_opcodes[i % N_OPCODES].op;
	static const struct gi ws[2] = {{.type = F32, .rank = 2, .dims = {256, 1024}},
					{.type = S8, .rank = 1, .dims = {4194304}}};

	memset(g, 0, sizeof(*g));
	snprintf(name, 64, "%s.%u", op, i);
	g->name = name;
	g->opcode = op;
	g->type = F32;
	g->rank = 2;
	g->dims[0] = 256;
	g->dims[1] = 512;
	g->ops[0] = arg[0];
	g->ops[1] = arg[1];
	g->n_ops = 1;
	if (i % 7 != 6) {
		if (i % 3 == 0)
			g->op_type = op;
		snprintf(on, 160, "jit(%s)/jit(main)/%s", f, op);
		g->op_name = on;
		if (i % 2 == 0) {
			g->file = "/src/model/train.py";
			g->line = (int)(10 + i);
		}
	}
	switch (i % N_OPCODES) {
	case 0: /* fusion, kLoop */
	case 1: /* fusion, kOutput dot + bias */
	case 3: /* fusion, kOutput convolution + relu */
		g->fusion_kind = i % N_OPCODES == 0 ? "kLoop" : "kOutput";
		g->called[0] = fusion_comp;
		g->n_called = 1;
		g->n_ops = 2;
		if (i % N_OPCODES == 1) {
			g->ops[1] = arg[3];
			g->ops[2] = arg[2];
			g->n_ops = 3;
			g->dims[1] = 1024;
		} else if (i % N_OPCODES == 3) {
			g->ops[0] = arg[4];
			g->ops[1] = arg[7];
			g->rank = 4;
			memcpy(g->dims, (int64_t[]){8, 32, 32, 32}, sizeof(g->dims));
		}
		break;
	case 2: /* convolution: pad 1; feature groups 2; stride 2 */
		g->ops[0] = arg[4];
		g->ops[1] = i % 48 == 18 ? arg[8] : arg[7];
		g->n_ops = 2;
		g->rank = 4;
		memcpy(g->dims, (int64_t[]){8, 32, 32, 32}, sizeof(g->dims));
		g->conv = i % 48 == 34 ? 2 : 1;
		if (g->conv == 2)
			g->dims[1] = g->dims[2] = 16;
		g->fgc = i % 48 == 18 ? 2 : 1;
		break;
	case 4: /* dot: plain, or batched */
		g->n_ops = 2;
		g->dot = i % 48 == 20 ? 2 : 1;
		if (g->dot == 2) {
			g->ops[0] = arg[5];
			g->ops[1] = arg[6];
			g->rank = 3;
			memcpy(g->dims, (int64_t[]){8, 128, 32, 0}, sizeof(g->dims));
		} else {
			g->ops[1] = arg[3];
			g->dims[1] = 1024;
		}
		break;
	case 5: /* all-reduce */
	case 7: /* reduce-scatter */
		g->called[0] = region;
		g->n_called = 1;
		if (i % N_OPCODES == 7) {
			g->dims[0] = 64;
			g->attr_dims[0] = 0;
			g->n_attr_dims = 1;
		}
		break;
	case 6: /* all-gather */
		g->dims[0] = 1024;
		g->attr_dims[0] = 0;
		g->n_attr_dims = 1;
		break;
	case 9: /* transpose */
		g->dims[0] = 512;
		g->dims[1] = 256;
		g->attr_dims[0] = 1;
		g->attr_dims[1] = 0;
		g->n_attr_dims = 2;
		break;
	case 10: /* add */
	case 11: /* multiply */
		g->n_ops = 2;
		break;
	case 12: /* reduce over dimension 1 */
		g->ops[1] = zero;
		g->n_ops = 2;
		g->rank = 1;
		g->attr_dims[0] = 1;
		g->n_attr_dims = 1;
		g->called[0] = region;
		g->n_called = 1;
		break;
	case 13: /* a cuBLAS gemm: (result, workspace) */
		g->ops[1] = arg[3];
		g->n_ops = 2;
		g->type = TUPLE;
		g->rank = 0;
		g->tuple = ws;
		g->n_tuple = 2;
		g->cc_target = "__cublas$gemm";
		g->backend_config = gemm_config;
		break;
	case 14: /* broadcast of a vector */
		g->ops[0] = arg[2];
		g->dims[1] = 1024;
		g->attr_dims[0] = 1;
		g->n_attr_dims = 1;
		break;
	case 15: /* bitcast */
		g->dims[0] = 512;
		g->dims[1] = 256;
		break;
	}
}

/*
 * A serialized HloProto for module @name, program @id, into @dst (@cap
 * bytes): its size, 0 if it does not fit. The layout: see the file comment.
 */
size_t gen_hlo_proto(const char *name, uint64_t id, bool extras, uint8_t *dst, size_t cap)
{
	static const struct gi conv_out[2] = {{.type = F32, .rank = 4, .dims = {8, 32, 32, 32}},
					      {.type = U8, .rank = 1, .dims = {0}}};
	const char *f = strncmp(name, "jit_", 4) ? name : name + 4;
	int64_t fusion_comp[GEN_HLO_INSTRS], arg[9], region, zero, last[2], entry, ba_ins[10];
	char main_name[64], nm[64], on[160], ba_names[10][64];
	struct pb outer;
	struct hb h;
	size_t n = 0;

	memset(&h, 0, sizeof(h));
	pb_init(&h.ins, GEN_HLO_PROTO_MAX);
	pb_init(&h.tmp, GEN_HLO_PROTO_MAX);
	pb_init(&h.tmp2, GEN_HLO_PROTO_MAX);
	pb_init(&h.comp, GEN_HLO_PROTO_MAX);
	pb_init(&h.mod, GEN_HLO_PROTO_MAX);
	pb_init(&outer, GEN_HLO_PROTO_MAX);
	h.next_id = 1;
	pb_str(&h.mod, 1, name);
	/* callees first, as XLA orders computations */
	region = region_add(&h, f);
	for (uint32_t i = 0; i < GEN_HLO_INSTRS; i++) {
		int k = (int)(i % N_OPCODES);

		fusion_comp[i] = k == 0 || k == 1 || k == 3 ? fused(&h, i, k, f) : 0;
	}
	for (int a = 0; a < 9; a++) {
		struct gi g = args[a];

		g.opcode = "parameter";
		g.type = F32;
		g.param = a;
		arg[a] = emit(&h, &g);
	}
	{
		struct gi z = f32_scalar;

		z.name = "constant.0";
		z.opcode = "constant";
		zero = emit(&h, &z);
	}
	for (uint32_t i = 0; i < GEN_HLO_INSTRS; i++) {
		struct gi g;
		int64_t x;

		main_instr(i, f, arg, region, fusion_comp[i], zero, nm, on, &g);
		x = emit(&h, &g);
		if (i == 0 || i == 4)
			last[i == 4] = x;
		if (i < 7) {
			ba_ins[3 + i] = x;
			snprintf(ba_names[3 + i], sizeof(ba_names[0]), "%s", nm);
		}
	}
	{
		struct gi g = {.name = "cudnn-conv.1",
			       .opcode = "custom-call",
			       .type = TUPLE,
			       .tuple = conv_out,
			       .n_tuple = 2,
			       .ops = {arg[4], arg[7]},
			       .n_ops = 2,
			       .cc_target = "__cudnn$convForward",
			       .backend_config = conv_config,
			       .conv = 1};
		struct gi t = {.name = "tuple.root",
			       .opcode = "tuple",
			       .type = TUPLE,
			       .n_tuple = 2,
			       .ops = {last[0], last[1]},
			       .n_ops = 2};
		struct gi tt[2] = {args[0], {.rank = 2, .dims = {256, 1024}}};

		snprintf(on, sizeof(on), "jit(%s)/jit(main)/conv_general_dilated", f);
		g.op_name = on;
		g.file = "/src/model/layers.py";
		g.line = 42;
		emit(&h, &g);
		if (extras)
			cost_extras(&h, arg, region, zero);
		tt[0].type = tt[1].type = F32;
		t.tuple = tt;
		snprintf(main_name, sizeof(main_name), "main.%" PRIu64, id);
		ba_ins[2] = emit(&h, &t);
		entry = end_comp(&h, main_name, ba_ins[2], false);
	}
	pb_str(&h.mod, 2, main_name);
	pb_int(&h.mod, 5, id);
	pb_int(&h.mod, 6, (uint64_t)entry);
	pb_bytes(&outer, 1, h.mod.p, h.mod.len);
	if (extras) { /* sidecars: a buffer assignment too (the metadata plane's stays as it was) */
		ba_ins[0] = arg[0];
		ba_ins[1] = arg[1];
		snprintf(ba_names[0], sizeof(ba_names[0]), "%s", args[0].name);
		snprintf(ba_names[1], sizeof(ba_names[0]), "%s", args[1].name);
		snprintf(ba_names[2], sizeof(ba_names[0]), "tuple.root");
		gen_hlo_ba_small(&outer, ba_ins, ba_names, &h.mod, &h.tmp, &h.tmp2);
	}
	if (!h.ins.err && !h.tmp.err && !h.tmp2.err && !h.comp.err && !h.mod.err && !outer.err &&
	    outer.len <= cap) {
		memcpy(dst, outer.p, outer.len);
		n = outer.len;
	}
	pb_deinit(&h.ins);
	pb_deinit(&h.tmp);
	pb_deinit(&h.tmp2);
	pb_deinit(&h.comp);
	pb_deinit(&h.mod);
	pb_deinit(&outer);
	return n;
}

/* The name of gen_hlo_big()'s instruction @k (computation k / 4096). */
static void big_name(char *nm, size_t len, uint64_t k)
{
	uint32_t i = (uint32_t)(k % 4096);

	snprintf(nm, len, "%s.%" PRIu64 ".%u",
		 i < 2   ? "param"
		 : i % 3 ? "add"
			 : "multiply",
		 k / 4096, i);
}

/*
 * gen_hlo_big() - one HloProto of about @target bytes at @path: module
 * "jit_big", program 1, computations of 4096 instructions each (parameters,
 * then a chain of elementwise ops with metadata and, every 16th, a fusion's
 * backend config), written as they are made: memory stays small. About
 * 3/8 of @target is its buffer assignment (gen_hlo_ba_big(): one buffer
 * per instruction, built in memory), for memory_viewer.json.
 */
int gen_hlo_big(const char *path, uint64_t target)
{
	struct hb h;
	struct pb top;
	uint64_t ncomp, mod_len = 0;
	int fd, ret = 0;
	char nm[64], on[160];

	memset(&h, 0, sizeof(h));
	pb_init(&h.ins, 1 << 20);
	pb_init(&h.tmp, 1 << 20);
	pb_init(&h.tmp2, 1 << 20);
	pb_init(&h.comp, 64 << 20);
	pb_init(&h.mod, 64 << 20);
	pb_init(&top, 64);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	/* pass 0 sizes the module, pass 1 writes it: each computation is made twice */
	for (int pass = 0; pass < 2 && !ret; pass++) {
		uint64_t total = 0;

		h.next_id = 1;
		if (pass == 1) {
			top.len = 0;
			pb_tag(&top, 1, 2);
			pb_varint(&top, mod_len);
			if ((ret = xprofs_write_full(fd, top.p, top.len)) < 0)
				break;
		}
		ncomp = 0;
		while (!ret && (pass == 0 ? total < target - target * 3 / 8 : total < mod_len)) {
			int64_t prev = 0;

			h.mod.len = 0;
			if (ncomp == 0)
				pb_str(&h.mod, 1, "jit_big");
			for (uint32_t i = 0; i < 4096; i++) {
				struct gi g = {.name = nm,
					       .type = F32,
					       .rank = 3,
					       .dims = {64, 128, 256},
					       .op_name = on};

				big_name(nm, sizeof(nm), ncomp * 4096 + i);
				snprintf(on, sizeof(on),
					 "jit(big)/jit(main)/layer_%u/block_%" PRIu64 "/%s", i % 97,
					 ncomp % 13, i % 3 ? "add" : "mul");
				g.opcode = i < 2 ? "parameter" : i % 3 ? "add" : "multiply";
				g.param = i == 1;
				g.file = "/src/model/transformer_layers.py";
				g.line = (int)(100 + i % 500);
				if (i >= 2) {
					g.ops[0] = prev;
					g.ops[1] = prev - 1;
					g.n_ops = 2;
				}
				if (i % 16 == 15)
					g.backend_config = gemm_config;
				prev = emit(&h, &g);
			}
			snprintf(nm, sizeof(nm), "computation.%" PRIu64, ncomp);
			end_comp(&h, nm, prev, false);
			total += h.mod.len;
			if (h.mod.err || h.ins.err || h.tmp.err || h.comp.err)
				ret = -E2BIG;
			else if (pass == 1)
				ret = xprofs_write_full(fd, h.mod.p, h.mod.len);
			ncomp++;
		}
		if (pass == 0)
			mod_len = total;
	}
	if (!ret)
		ret = gen_hlo_ba_big(fd, ncomp * 4096, 1, 4096, big_name);
	if (close(fd) < 0 && !ret)
		ret = -errno;
	pb_deinit(&h.ins);
	pb_deinit(&h.tmp);
	pb_deinit(&h.tmp2);
	pb_deinit(&h.comp);
	pb_deinit(&h.mod);
	pb_deinit(&top);
	return ret;
}
