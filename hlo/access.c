/*
 * access.c - reading a decoded program: the module, computations, shapes
 * and instructions as the public structs of xprofs/hlo.h (pointers into the
 * program, nothing allocated), look-up by instruction name, the backend
 * config read on demand, and XLA's primitive types.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "hlo-internal.h"

void xprofs_hlo_program_module(const struct xprofs_hlo_program *p, struct xprofs_hlo_module *out)
{
	memset(out, 0, sizeof(*out));
	out->name = hlo_str(p, p->name);
	out->entry_computation_name = hlo_str(p, p->entry_name);
	out->id = p->id;
	out->entry = (ssize_t)p->entry;
	out->n_computations = p->n_comps;
	out->n_instructions = p->n_ins;
	out->n_shapes = p->n_shapes;
	out->bytes = hlo_program_bytes(p);
}

int xprofs_hlo_computation_get(const struct xprofs_hlo_program *p, size_t i,
			       struct xprofs_hlo_computation *out)
{
	const struct hlo_comp *c;

	if (i >= p->n_comps)
		return -ERANGE;
	c = &p->comps[i];
	out->name = hlo_str(p, c->name);
	out->id = c->id;
	out->first = c->first;
	out->n = c->n;
	out->root = c->root;
	out->is_fusion = c->is_fusion;
	return 0;
}

int xprofs_hlo_shape_get(const struct xprofs_hlo_program *p, size_t i, struct xprofs_hlo_shape *out)
{
	const struct hlo_shape *s;

	if (i >= p->n_shapes)
		return -ERANGE;
	s = &p->shapes[i];
	out->element_type = s->type;
	out->rank = s->rank;
	out->dims = HLO_AT(p->i64, s->dims_off);
	out->n_tuple = s->n_tuple;
	out->tuple = HLO_AT(p->u32, s->tuple_off);
	out->elements = s->elements;
	return 0;
}

int xprofs_hlo_instr_get(const struct xprofs_hlo_program *p, size_t i, struct xprofs_hlo_instr *out)
{
	const struct hlo_ins *in;
	const struct hlo_ext *e;

	if (i >= p->n_ins)
		return -ERANGE;
	in = &p->ins[i];
	memset(out, 0, sizeof(*out));
	out->id = in->id;
	out->name = hlo_str(p, in->name);
	out->opcode = hlo_str(p, in->opcode);
	out->computation = in->comp;
	out->shape = in->shape;
	out->operands = HLO_AT(p->u32, in->ops_off);
	out->n_operands = in->n_ops;
	out->op_name = hlo_str(p, in->op_name);
	out->op_type = hlo_str(p, in->op_type);
	out->source_file = hlo_str(p, in->source_file);
	out->source_line = in->line;
	out->custom_call_target = out->fusion_kind = hlo_str(p, 0);
	out->feature_group_count = out->batch_group_count = 1;
	out->called = p->u32;
	out->dimensions = p->i64;
	out->window = p->wins;
	if (!in->ext)
		return 0;
	e = &p->exts[in->ext - 1];
	out->called = HLO_AT(p->u32, e->called_off);
	out->n_called = e->n_called;
	out->custom_call_target = hlo_str(p, e->cc_target);
	out->fusion_kind = hlo_str(p, e->fusion_kind);
	out->parameter_number = e->parameter_number;
	out->tuple_index = e->tuple_index;
	out->dimensions = HLO_AT(p->i64, e->dims_off);
	out->n_dimensions = e->n_dims;
	out->feature_group_count = e->feature_group_count;
	out->batch_group_count = e->batch_group_count;
	out->window = HLO_AT(p->wins, e->win_off);
	out->n_window = e->n_win;
	out->backend_config_len = e->bc_len;
	if (e->conv) {
		const struct hlo_conv *cv = &p->convs[e->conv - 1];

		out->has_conv = true;
		out->conv.input_batch = cv->v[0];
		out->conv.input_feature = cv->v[1];
		out->conv.kernel_input_feature = cv->v[2];
		out->conv.kernel_output_feature = cv->v[3];
		out->conv.output_batch = cv->v[4];
		out->conv.output_feature = cv->v[5];
		out->conv.input_spatial = HLO_AT(p->i64, cv->off[0]);
		out->conv.n_input_spatial = cv->n[0];
		out->conv.kernel_spatial = HLO_AT(p->i64, cv->off[1]);
		out->conv.n_kernel_spatial = cv->n[1];
		out->conv.output_spatial = HLO_AT(p->i64, cv->off[2]);
		out->conv.n_output_spatial = cv->n[2];
	}
	if (e->dot) {
		const struct hlo_dot *dt = &p->dots[e->dot - 1];

		out->has_dot = true;
		out->dot.lhs_contracting = HLO_AT(p->i64, dt->off[0]);
		out->dot.n_lhs_contracting = dt->n[0];
		out->dot.rhs_contracting = HLO_AT(p->i64, dt->off[1]);
		out->dot.n_rhs_contracting = dt->n[1];
		out->dot.lhs_batch = HLO_AT(p->i64, dt->off[2]);
		out->dot.n_lhs_batch = dt->n[2];
		out->dot.rhs_batch = HLO_AT(p->i64, dt->off[3]);
		out->dot.n_rhs_batch = dt->n[3];
	}
	return 0;
}

int xprofs_hlo_backend_config(const struct xprofs_hlo_program *p, size_t i, struct xprofs_buf *out)
{
	const struct hlo_ext *e;
	size_t n, start = out->len;
	uint64_t off;
	int r;

	if (i >= p->n_ins)
		return -ERANGE;
	if (!p->ins[i].ext)
		return 0;
	e = &p->exts[p->ins[i].ext - 1];
	if (e->bc_len > out->max - out->len)
		return -E2BIG;
	for (off = 0; off < e->bc_len; off += n) {
		uint8_t tmp[4096];
		ssize_t got;

		n = e->bc_len - off < sizeof(tmp) ? (size_t)(e->bc_len - off) : sizeof(tmp);
		got = xprofs_reader_pread(p->r, tmp, n, e->bc_off + off);
		if (got != (ssize_t)n) {
			xprofs_buf_truncate(out, start);
			return got < 0 ? (int)got : -EIO;
		}
		if ((r = xprofs_buf_add(out, tmp, n)) < 0) {
			xprofs_buf_truncate(out, start);
			return r;
		}
	}
	return 0;
}

ssize_t xprofs_hlo_find_instr(const struct xprofs_hlo_program *p, const char *name, size_t n)
{
	size_t lo = 0, hi = p->n_ins;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct hlo_str *s = &p->strs[p->ins[p->by_name[mid]].name];
		size_t k = s->len < n ? s->len : n;
		int c = memcmp(p->arena.data + s->off, name, k);

		if (c < 0 || (c == 0 && s->len < n))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < p->n_ins) {
		const struct hlo_str *s = &p->strs[p->ins[p->by_name[lo]].name];

		if (s->len == n && !memcmp(p->arena.data + s->off, name, n))
			return p->by_name[lo];
	}
	return -ENOENT;
}

/* xla::PrimitiveType: value, bits (primitive_util::BitWidth()), the name XLA prints. */
static const struct {
	int type;
	unsigned bits;
	const char *name;
} types[] = {
	{1, 8, "pred"},
	{30, 1, "s1"},
	{26, 2, "s2"},
	{21, 4, "s4"},
	{2, 8, "s8"},
	{3, 16, "s16"},
	{4, 32, "s32"},
	{5, 64, "s64"},
	{31, 1, "u1"},
	{27, 2, "u2"},
	{22, 4, "u4"},
	{6, 8, "u8"},
	{7, 16, "u16"},
	{8, 32, "u32"},
	{9, 64, "u64"},
	{10, 16, "f16"},
	{11, 32, "f32"},
	{16, 16, "bf16"},
	{12, 64, "f64"},
	{19, 8, "f8e5m2"},
	{28, 8, "f8e4m3"},
	{20, 8, "f8e4m3fn"},
	{23, 8, "f8e4m3b11fnuz"},
	{29, 8, "f8e3m4"},
	{24, 8, "f8e5m2fnuz"},
	{25, 8, "f8e4m3fnuz"},
	{32, 4, "f4e2m1fn"},
	{33, 8, "f8e8m0fnu"},
	{15, 64, "c64"},
	{18, 128, "c128"},
	{13, 0, "tuple"},
	{14, 0, "opaque"},
	{17, 0, "token"},
	{34, 0, "buffer"},
};

unsigned xprofs_hlo_type_bits(int type)
{
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (types[i].type == type)
			return types[i].bits;
	return 0;
}

const char *xprofs_hlo_type_name(int type)
{
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (types[i].type == type)
			return types[i].name;
	return "?";
}
