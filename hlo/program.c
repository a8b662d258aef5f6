/*
 * program.c - decoding one HloProto into the compact form of
 * hlo-internal.h: the walk over HloProto -> HloModuleProto ->
 * HloComputationProto -> HloInstructionProto (ShapeProto, OpMetadata,
 * Window, ConvolutionDimensionNumbers, DotDimensionNumbers), field numbers
 * as in hlo/proto/hlo.proto (openxla/xla's).
 *
 * Design: one wire cursor over the program's byte range; each message is
 * walked by narrowing the cursor's end. Protobuf's merge rules hold: a
 * singular message field seen twice merges (its repeated fields append, its
 * scalars keep the last), repeated integers are read packed or not. An
 * instruction's repeated fields are gathered in scratch vectors and
 * committed at its end; operand ids are resolved when their computation
 * ends (ids are per computation), called computation ids when the module
 * ends (check.c, which also proves there is no cycle).
 *
 * Limits (include/xprofs/hlo.h): XPROFS_HLO_PROTO_MAX bytes in,
 * XPROFS_HLO_INSTRS_MAX / _COMPS_MAX, the arena and memory budgets, strings
 * cut at XPROFS_HLO_STR_MAX, shapes nested at most XPROFS_HLO_TUPLE_DEPTH_MAX
 * deep with at most XPROFS_HLO_RANK_MAX dims. Backend configs are not read:
 * their place is kept.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo-internal.h"

struct v64 {
	int64_t *a;
	size_t n, cap;
};

/* What an instruction's fields gather before it is committed. */
struct ins_tmp {
	struct hlo_ins in;
	struct hlo_ext ext;
	bool has_ext, has_conv, has_dot, has_shape;
	struct hlo_conv conv;
	struct v64 ops, called, dims, conv_sp[3], dot_d[4];
	struct xprofs_hlo_window_dim *win;
	size_t n_win, cap_win;
};

struct dec {
	struct xprofs_hlo_program *p;
	struct wire_cur c;
	struct hlo_set strs, shapes;
	struct hlo_shape_tmp sh[XPROFS_HLO_TUPLE_DEPTH_MAX + 1];
	struct ins_tmp t;
	struct v64 called_ids; /* raw ids of every called computation, in ext order */
	/* the current computation: its instructions' ids, sorted to resolve operands */
	struct hlo_id_ix *ids;
	size_t cap_ids;
	struct v64 comp_ops; /* raw operand ids of the current computation */
	bool have_entry_id;
	int64_t entry_id;
};

static int v64_push(struct dec *d, struct v64 *v, int64_t x)
{
	int r = hlo_grow(&d->p->mem, &v->a, &v->cap, v->n, sizeof(*v->a), 16);

	if (r == 0)
		v->a[v->n++] = x;
	return r;
}

static void v64_free(struct v64 *v)
{
	free(v->a);
	memset(v, 0, sizeof(*v));
}

/* A message field's value [pos, pos + len): narrow the cursor, return the old end. */
static int enter(struct dec *d, int wt, const char *msg, uint32_t f, uint64_t *save)
{
	uint64_t len;
	int r = wire_len_field(&d->c, wt, msg, f, &len);

	if (r < 0)
		return r;
	*save = d->c.end;
	d->c.end = d->c.pos + len;
	return 0;
}

static void leave(struct dec *d, uint64_t save)
{
	d->c.pos = d->c.end;
	d->c.end = save;
}

/*
 * next_field() - the next field's tag of the message at the cursor, while it
 * goes on and *@r (what the last field's reading gave) is 0; false at its end
 * or on an error (then in *@r).
 */
static bool next_field(struct dec *d, int *r, uint32_t *f, int *wt)
{
	if (*r != 0 || d->c.pos >= d->c.end)
		return false;
	*r = wire_tag(&d->c, f, wt);
	return *r == 0;
}

/* A repeated int64 field, packed (LEN) or not (VARINT), appended to @v. */
static int rd_i64s(struct dec *d, int wt, const char *msg, uint32_t f, struct v64 *v)
{
	uint64_t x, save;
	int r;

	if (wt == WT_VARINT) {
		if ((r = wire_varint(&d->c, &x)) < 0)
			return r;
		return v64_push(d, v, (int64_t)x);
	}
	if ((r = enter(d, wt, msg, f, &save)) < 0)
		return r;
	while (d->c.pos < d->c.end) {
		if ((r = wire_varint(&d->c, &x)) < 0 || (r = v64_push(d, v, (int64_t)x)) < 0)
			break;
	}
	leave(d, save);
	return r;
}

/* A string field into the arena (cut at XPROFS_HLO_STR_MAX), interned when @set. */
static int rd_str(struct dec *d, int wt, const char *msg, uint32_t f, struct hlo_set *set,
		  uint32_t *id)
{
	uint64_t len;
	const uint8_t *s;
	size_t n;
	int r;

	if ((r = wire_len_field(&d->c, wt, msg, f, &len)) < 0)
		return r;
	n = len > XPROFS_HLO_STR_MAX ? XPROFS_HLO_STR_MAX : (size_t)len;
	if ((r = wire_at(&d->c, d->c.pos, n, &s)) < 0)
		return r;
	if ((r = hlo_str_add(d->p, set, s, n, id)) < 0) {
		if (r == -E2BIG)
			wire_fail(&d->c,
				  "program past the limits of %zu MiB of strings or %zu MiB "
				  "of decoded data",
				  XPROFS_HLO_ARENA_MAX >> 20, XPROFS_HLO_MEM_MAX >> 20);
		return r;
	}
	d->c.pos += len;
	return 0;
}

static int rd_int(struct dec *d, int wt, const char *msg, uint32_t f, int64_t *v)
{
	return wire_i64_field(&d->c, wt, msg, f, v);
}

/* ShapeProto at the cursor into d->sh[depth] (merged into what it holds). */
static int rd_shape(struct dec *d, size_t depth)
{
	struct hlo_shape_tmp *t = &d->sh[depth];
	uint64_t save, v;
	uint32_t f, id;
	int wt, r = 0;

	while (next_field(d, &r, &f, &wt)) {
		if (f == 2) {
			if ((r = wire_varint_field(&d->c, wt, "ShapeProto", f, &v)) == 0)
				t->type = (int32_t)v;
		} else if (f == 3) {
			struct v64 dims = {t->dims, t->rank, t->cap_dims};

			r = rd_i64s(d, wt, "ShapeProto", f, &dims);
			t->dims = dims.a;
			t->rank = dims.n;
			t->cap_dims = dims.cap;
			if (r == 0 && t->rank > XPROFS_HLO_RANK_MAX)
				r = wire_fail(
					&d->c,
					"shape of rank %zu (more than %d) near offset %" PRIu64,
					t->rank, XPROFS_HLO_RANK_MAX, d->c.pos);
		} else if (f == 4) {
			struct hlo_shape_tmp *k;

			if (depth >= XPROFS_HLO_TUPLE_DEPTH_MAX)
				return wire_fail(
					&d->c,
					"tuple shapes nested more than %d deep at offset %" PRIu64,
					XPROFS_HLO_TUPLE_DEPTH_MAX, d->c.pos);
			if ((r = enter(d, wt, "ShapeProto", f, &save)) < 0)
				break;
			k = &d->sh[depth + 1];
			k->type = 0;
			k->rank = k->n_tuple = 0;
			r = rd_shape(d, depth + 1);
			if (r == 0)
				r = hlo_shape_add(d->p, &d->shapes, &d->c, k, &id);
			leave(d, save);
			if (r == 0 && (r = hlo_grow(&d->p->mem, &t->tuple, &t->cap_tuple,
						    t->n_tuple, sizeof(*t->tuple), 8)) == 0)
				t->tuple[t->n_tuple++] = id;
		} else {
			r = wire_skip(&d->c, wt);
		}
	}
	return r;
}

/* OpMetadata: op_type, op_name, source_file, source_line. */
static int rd_metadata(struct dec *d, struct hlo_ins *in)
{
	uint32_t f;
	uint64_t v;
	int wt, r = 0;

	while (next_field(d, &r, &f, &wt)) {
		if (f == 1)
			r = rd_str(d, wt, "OpMetadata", f, &d->strs, &in->op_type);
		else if (f == 2)
			r = rd_str(d, wt, "OpMetadata", f, &d->strs, &in->op_name);
		else if (f == 3)
			r = rd_str(d, wt, "OpMetadata", f, &d->strs, &in->source_file);
		else if (f == 4) {
			if ((r = wire_varint_field(&d->c, wt, "OpMetadata", f, &v)) == 0)
				in->line = (int32_t)(uint32_t)v; /* int32: the low 32 bits */
		} else
			r = wire_skip(&d->c, wt);
	}
	return r;
}

/* Window: its WindowDimensions appended to the instruction's. */
static int rd_window(struct dec *d, struct ins_tmp *t)
{
	uint64_t save;
	uint32_t f;
	int wt, r = 0;

	while (next_field(d, &r, &f, &wt)) {
		struct xprofs_hlo_window_dim *w;

		if (f != 1) {
			r = wire_skip(&d->c, wt);
			continue;
		}
		if ((r = hlo_grow(&d->p->mem, &t->win, &t->cap_win, t->n_win, sizeof(*t->win), 4)) <
			    0 ||
		    (r = enter(d, wt, "Window", f, &save)) < 0)
			break;
		w = &t->win[t->n_win++];
		memset(w, 0, sizeof(*w));
		while (next_field(d, &r, &f, &wt)) {
			int64_t *slot[] = {NULL,
					   &w->size,
					   &w->stride,
					   &w->padding_low,
					   &w->padding_high,
					   &w->window_dilation,
					   &w->base_dilation};
			int64_t v;

			if (f >= 1 && f <= 6)
				r = rd_int(d, wt, "WindowDimension", f, slot[f]);
			else if (f == 7) {
				if ((r = rd_int(d, wt, "WindowDimension", f, &v)) == 0)
					w->window_reversal = v != 0;
			} else
				r = wire_skip(&d->c, wt);
		}
		leave(d, save);
	}
	return r;
}

/* ConvolutionDimensionNumbers into t->conv and t->conv_sp[]. */
static int rd_conv(struct dec *d, struct ins_tmp *t)
{
	/* field number -> scalar slot (t->conv.v) or spatial list (conv_sp) */
	static const int8_t scalar[13] = {-1, -1, -1, 2, 3, -1, -1, 0, 1, 4, 5, -1, -1};
	static const int8_t list[13] = {-1, -1, -1, -1, -1, -1, 1, -1, -1, -1, -1, 0, 2};
	uint32_t f;
	int wt, r = 0;

	t->has_conv = true;
	while (next_field(d, &r, &f, &wt)) {
		if (f < 13 && scalar[f] >= 0)
			r = rd_int(d, wt, "ConvolutionDimensionNumbers", f, &t->conv.v[scalar[f]]);
		else if (f < 13 && list[f] >= 0)
			r = rd_i64s(d, wt, "ConvolutionDimensionNumbers", f, &t->conv_sp[list[f]]);
		else
			r = wire_skip(&d->c, wt);
	}
	return r;
}

static int rd_dot(struct dec *d, struct ins_tmp *t)
{
	uint32_t f;
	int wt, r = 0;

	t->has_dot = true;
	while (next_field(d, &r, &f, &wt)) {
		if (f >= 1 && f <= 4)
			r = rd_i64s(d, wt, "DotDimensionNumbers", f, &t->dot_d[f - 1]);
		else
			r = wire_skip(&d->c, wt);
	}
	return r;
}

/* Append @v's entries to the program's int64 pool; their offset in *@off. */
static int put_i64s(struct dec *d, const struct v64 *v, uint32_t *off)
{
	struct xprofs_hlo_program *p = d->p;
	int r;

	if (p->n_i64 + v->n >= UINT32_MAX)
		return -E2BIG;
	*off = (uint32_t)p->n_i64;
	for (size_t i = 0; i < v->n; i++) {
		if ((r = hlo_grow(&p->mem, &p->i64, &p->cap_i64, p->n_i64, sizeof(*p->i64), 1024)) <
		    0)
			return r;
		p->i64[p->n_i64++] = v->a[i];
	}
	return 0;
}

/* Reserve @n entries of the uint32 pool (filled when the ids are resolved). */
static int put_u32s(struct dec *d, size_t n, uint32_t *off)
{
	struct xprofs_hlo_program *p = d->p;
	int r;

	if (p->n_u32 + n >= UINT32_MAX)
		return -E2BIG;
	*off = (uint32_t)p->n_u32;
	for (size_t i = 0; i < n; i++) {
		if ((r = hlo_grow(&p->mem, &p->u32, &p->cap_u32, p->n_u32, sizeof(*p->u32), 1024)) <
		    0)
			return r;
		p->u32[p->n_u32++] = 0;
	}
	return 0;
}

/* The side record of instruction @t, when it has anything to put there. */
static int commit_ext(struct dec *d, struct ins_tmp *t)
{
	struct xprofs_hlo_program *p = d->p;
	struct hlo_ext *e = &t->ext;
	int r;

	if (!t->has_ext && !t->called.n && !t->dims.n && !t->n_win && !t->has_conv && !t->has_dot)
		return 0;
	e->n_called = (uint32_t)t->called.n;
	if ((r = put_u32s(d, t->called.n, &e->called_off)) < 0)
		return r;
	for (size_t i = 0; i < t->called.n; i++)
		if ((r = v64_push(d, &d->called_ids, t->called.a[i])) < 0)
			return r;
	e->n_dims = (uint32_t)t->dims.n;
	if ((r = put_i64s(d, &t->dims, &e->dims_off)) < 0)
		return r;
	e->win_off = (uint32_t)p->n_wins;
	e->n_win = (uint32_t)t->n_win;
	for (size_t i = 0; i < t->n_win; i++) {
		if ((r = hlo_grow(&p->mem, &p->wins, &p->cap_wins, p->n_wins, sizeof(*p->wins),
				  64)) < 0)
			return r;
		p->wins[p->n_wins++] = t->win[i];
	}
	if (t->has_conv) {
		for (int k = 0; k < 3; k++) {
			t->conv.n[k] = (uint32_t)t->conv_sp[k].n;
			if ((r = put_i64s(d, &t->conv_sp[k], &t->conv.off[k])) < 0)
				return r;
		}
		if ((r = hlo_grow(&p->mem, &p->convs, &p->cap_convs, p->n_convs, sizeof(*p->convs),
				  16)) < 0)
			return r;
		p->convs[p->n_convs++] = t->conv;
		e->conv = (uint32_t)p->n_convs;
	}
	if (t->has_dot) {
		struct hlo_dot dot;

		for (int k = 0; k < 4; k++) {
			dot.n[k] = (uint32_t)t->dot_d[k].n;
			if ((r = put_i64s(d, &t->dot_d[k], &dot.off[k])) < 0)
				return r;
		}
		if ((r = hlo_grow(&p->mem, &p->dots, &p->cap_dots, p->n_dots, sizeof(*p->dots),
				  16)) < 0)
			return r;
		p->dots[p->n_dots++] = dot;
		e->dot = (uint32_t)p->n_dots;
	}
	if (e->feature_group_count < 0 || e->batch_group_count < 0)
		return wire_fail(&d->c,
				 "negative feature or batch group count near offset %" PRIu64,
				 d->c.pos);
	if (!e->feature_group_count)
		e->feature_group_count = 1;
	if (!e->batch_group_count)
		e->batch_group_count = 1;
	if ((r = hlo_grow(&p->mem, &p->exts, &p->cap_exts, p->n_exts, sizeof(*p->exts), 64)) < 0)
		return r;
	p->exts[p->n_exts++] = *e;
	t->in.ext = (uint32_t)p->n_exts;
	return 0;
}

static void ins_reset(struct ins_tmp *t)
{
	memset(&t->in, 0, sizeof(t->in));
	memset(&t->ext, 0, sizeof(t->ext));
	memset(&t->conv, 0, sizeof(t->conv));
	t->has_ext = t->has_conv = t->has_dot = t->has_shape = false;
	t->ops.n = t->called.n = t->dims.n = 0;
	for (int k = 0; k < 3; k++)
		t->conv_sp[k].n = 0;
	for (int k = 0; k < 4; k++)
		t->dot_d[k].n = 0;
	t->n_win = 0;
}

/*
 * One HloInstructionProto: every field read into d->t, then committed.
 * Long (~110 lines) because it is one switch over the instruction's fields.
 */
static int rd_instr(struct dec *d, uint32_t comp)
{
	struct xprofs_hlo_program *p = d->p;
	struct ins_tmp *t = &d->t;
	struct hlo_shape_tmp *s0 = &d->sh[0];
	uint64_t save, len;
	uint32_t f;
	int wt, r = 0;

	if (p->n_ins >= XPROFS_HLO_INSTRS_MAX) {
		wire_fail(&d->c, "more than %zu instructions", XPROFS_HLO_INSTRS_MAX);
		return -E2BIG;
	}
	ins_reset(t);
	s0->type = 0;
	s0->rank = s0->n_tuple = 0;
	while (next_field(d, &r, &f, &wt)) {
		switch (f) {
		case 1:
			r = rd_str(d, wt, "HloInstructionProto", f, NULL, &t->in.name);
			break;
		case 2:
			r = rd_str(d, wt, "HloInstructionProto", f, &d->strs, &t->in.opcode);
			break;
		case 3:
		case 7:
		case 15:
		case 16:
		case 30:
			if ((r = enter(d, wt, "HloInstructionProto", f, &save)) < 0)
				break;
			if (f == 3) {
				t->has_shape = true;
				r = rd_shape(d, 0);
			} else if (f == 7) {
				r = rd_metadata(d, &t->in);
			} else if (f == 15) {
				r = rd_window(d, t);
			} else if (f == 16) {
				r = rd_conv(d, t);
			} else {
				r = rd_dot(d, t);
			}
			leave(d, save);
			break;
		case 9:
			r = rd_int(d, wt, "HloInstructionProto", f, &t->ext.parameter_number);
			t->has_ext |= t->ext.parameter_number != 0;
			break;
		case 11:
			r = rd_str(d, wt, "HloInstructionProto", f, &d->strs, &t->ext.fusion_kind);
			t->has_ext = true;
			break;
		case 13:
			r = rd_int(d, wt, "HloInstructionProto", f, &t->ext.tuple_index);
			t->has_ext |= t->ext.tuple_index != 0;
			break;
		case 14:
			r = rd_i64s(d, wt, "HloInstructionProto", f, &t->dims);
			break;
		case 28:
			r = rd_str(d, wt, "HloInstructionProto", f, &d->strs, &t->ext.cc_target);
			t->has_ext = true;
			break;
		case 35:
			r = rd_int(d, wt, "HloInstructionProto", f, &t->in.id);
			break;
		case 36:
			r = rd_i64s(d, wt, "HloInstructionProto", f, &t->ops);
			break;
		case 38:
			r = rd_i64s(d, wt, "HloInstructionProto", f, &t->called);
			break;
		case 43:
			if ((r = wire_len_field(&d->c, wt, "HloInstructionProto", f, &len)) < 0)
				break;
			t->ext.bc_off = d->c.pos;
			t->ext.bc_len = len;
			t->has_ext = true;
			d->c.pos += len;
			break;
		case 50:
			r = rd_int(d, wt, "HloInstructionProto", f, &t->ext.feature_group_count);
			t->has_ext = true;
			break;
		case 58:
			r = rd_int(d, wt, "HloInstructionProto", f, &t->ext.batch_group_count);
			t->has_ext = true;
			break;
		default:
			r = wire_skip(&d->c, wt);
			break;
		}
	}
	if (r < 0)
		return r;
	/* the shape: an absent one reads as ShapeProto's defaults (invalid type, scalar) */
	if ((r = hlo_shape_add(p, &d->shapes, &d->c, s0, &t->in.shape)) < 0)
		return r;
	t->in.comp = comp;
	t->in.n_ops = (uint32_t)t->ops.n;
	if ((r = put_u32s(d, t->ops.n, &t->in.ops_off)) < 0)
		return r;
	for (size_t i = 0; i < t->ops.n; i++)
		if ((r = v64_push(d, &d->comp_ops, t->ops.a[i])) < 0)
			return r;
	if ((r = commit_ext(d, t)) < 0)
		return r;
	if ((r = hlo_grow(&p->mem, &p->ins, &p->cap_ins, p->n_ins, sizeof(*p->ins), 256)) < 0)
		return r;
	p->ins[p->n_ins++] = t->in;
	return 0;
}

/* The end of computation @ci: its instruction ids unique, operands and root resolved. */
static int end_comp(struct dec *d, size_t ci, int64_t root_id)
{
	struct xprofs_hlo_program *p = d->p;
	struct hlo_comp *cp = &p->comps[ci];
	size_t n = cp->n, k = 0;
	int64_t root;
	int r;

	for (size_t i = 0; i < n; i++) {
		if ((r = hlo_grow(&p->mem, &d->ids, &d->cap_ids, i, sizeof(*d->ids), 256)) < 0)
			return r;
		d->ids[i].id = p->ins[cp->first + i].id;
		d->ids[i].i = (uint32_t)(cp->first + i);
	}
	if (n > 1)
		qsort(d->ids, n, sizeof(*d->ids), hlo_id_ix_cmp);
	for (size_t i = 1; i < n; i++)
		if (d->ids[i].id == d->ids[i - 1].id)
			return wire_fail(&d->c,
					 "computation %s: two instructions have id %" PRId64
					 " (%s, %s)",
					 hlo_str(p, cp->name), d->ids[i].id,
					 hlo_str(p, p->ins[d->ids[i - 1].i].name),
					 hlo_str(p, p->ins[d->ids[i].i].name));
	for (size_t i = cp->first; i < cp->first + n; i++) {
		struct hlo_ins *in = &p->ins[i];

		for (uint32_t j = 0; j < in->n_ops; j++, k++) {
			int64_t o = hlo_id_ix_find(d->ids, n, d->comp_ops.a[k]);

			if (o < 0)
				return wire_fail(
					&d->c,
					"computation %s: instruction %s has operand id %" PRId64
					", which is no instruction of the computation",
					hlo_str(p, cp->name), hlo_str(p, in->name),
					d->comp_ops.a[k]);
			p->u32[in->ops_off + j] = (uint32_t)o;
		}
	}
	d->comp_ops.n = 0;
	if (!n)
		return 0;
	if ((root = hlo_id_ix_find(d->ids, n, root_id)) < 0)
		return wire_fail(&d->c,
				 "computation %s: root id %" PRId64 " is no instruction of it",
				 hlo_str(p, cp->name), root_id);
	cp->root = (int32_t)root;
	return 0;
}

/* One HloComputationProto. */
static int rd_comp(struct dec *d)
{
	struct xprofs_hlo_program *p = d->p;
	size_t ci = p->n_comps;
	int64_t root_id = 0, v;
	uint64_t save;
	uint32_t f;
	int wt, r = 0;

	if (ci >= XPROFS_HLO_COMPS_MAX) {
		wire_fail(&d->c, "more than %zu computations", XPROFS_HLO_COMPS_MAX);
		return -E2BIG;
	}
	if ((r = hlo_grow(&p->mem, &p->comps, &p->cap_comps, ci, sizeof(*p->comps), 16)) < 0)
		return r;
	memset(&p->comps[ci], 0, sizeof(p->comps[ci]));
	p->comps[ci].first = (uint32_t)p->n_ins;
	p->comps[ci].root = -1;
	p->n_comps++;
	d->comp_ops.n = 0;
	while (next_field(d, &r, &f, &wt)) {
		if (f == HLO_F_COMP_NAME) {
			r = rd_str(d, wt, "HloComputationProto", f, NULL, &p->comps[ci].name);
		} else if (f == HLO_F_COMP_INSTRS) {
			if ((r = enter(d, wt, "HloComputationProto", f, &save)) < 0)
				return r;
			r = rd_instr(d, (uint32_t)ci);
			leave(d, save);
		} else if (f == HLO_F_COMP_ID) {
			r = rd_int(d, wt, "HloComputationProto", f, &p->comps[ci].id);
		} else if (f == HLO_F_COMP_ROOT_ID) {
			r = rd_int(d, wt, "HloComputationProto", f, &root_id);
		} else if (f == HLO_F_COMP_IS_FUSION) {
			if ((r = rd_int(d, wt, "HloComputationProto", f, &v)) == 0)
				p->comps[ci].is_fusion = v != 0;
		} else {
			r = wire_skip(&d->c, wt);
		}
	}
	if (r < 0)
		return r;
	p->comps[ci].n = (uint32_t)(p->n_ins - p->comps[ci].first);
	return end_comp(d, ci, root_id);
}

/* One HloModuleProto occurrence (a second one merges into the first). */
static int rd_module(struct dec *d)
{
	struct xprofs_hlo_program *p = d->p;
	uint64_t save;
	uint32_t f;
	int wt, r = 0;

	while (next_field(d, &r, &f, &wt)) {
		if (f == HLO_F_MOD_NAME) {
			r = rd_str(d, wt, "HloModuleProto", f, NULL, &p->name);
		} else if (f == HLO_F_MOD_ENTRY_NAME) {
			r = rd_str(d, wt, "HloModuleProto", f, NULL, &p->entry_name);
		} else if (f == HLO_F_MOD_COMPS) {
			if ((r = enter(d, wt, "HloModuleProto", f, &save)) < 0)
				return r;
			r = rd_comp(d);
			leave(d, save);
		} else if (f == HLO_F_MOD_ID) {
			r = rd_int(d, wt, "HloModuleProto", f, &p->id);
		} else if (f == HLO_F_MOD_ENTRY_ID) {
			r = rd_int(d, wt, "HloModuleProto", f, &d->entry_id);
			d->have_entry_id = true;
		} else {
			r = wire_skip(&d->c, wt);
		}
	}
	return r;
}

static int cmp_name(const void *a, const void *b, void *arg)
{
	const struct xprofs_hlo_program *p = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	const struct hlo_str *sx = &p->strs[p->ins[x].name], *sy = &p->strs[p->ins[y].name];
	size_t n = sx->len < sy->len ? sx->len : sy->len;
	int c = memcmp(p->arena.data + sx->off, p->arena.data + sy->off, n);

	if (c)
		return c;
	if (sx->len != sy->len)
		return sx->len < sy->len ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* The whole HloProto at the cursor's [pos, end). */
static int rd_proto(struct dec *d)
{
	struct xprofs_hlo_program *p = d->p;
	bool have_module = false;
	uint64_t save;
	uint32_t f, none;
	int wt, r;

	/* string id 0 is "" */
	if ((r = hlo_str_add(p, &d->strs, (const uint8_t *)"", 0, &none)) < 0)
		return r;
	while (next_field(d, &r, &f, &wt)) {
		if (f == HLO_F_PROTO_MODULE) {
			if ((r = enter(d, wt, "HloProto", f, &save)) < 0)
				return r;
			r = rd_module(d);
			leave(d, save);
			have_module = true;
		} else {
			r = wire_skip(&d->c, wt);
		}
	}
	if (r < 0)
		return r;
	if (!have_module)
		return wire_fail(&d->c, "HloProto has no hlo_module");
	if ((r = hlo_check(p, &d->c, d->called_ids.a, d->have_entry_id, d->entry_id)) < 0)
		return r;
	if (p->n_ins > (XPROFS_HLO_MEM_MAX - p->mem) / sizeof(*p->by_name))
		return -E2BIG;
	if (!(p->by_name = malloc((p->n_ins ? p->n_ins : 1) * sizeof(*p->by_name))))
		return -ENOMEM;
	p->mem += p->n_ins * sizeof(*p->by_name);
	for (size_t i = 0; i < p->n_ins; i++)
		p->by_name[i] = (uint32_t)i;
	qsort_r(p->by_name, p->n_ins, sizeof(*p->by_name), cmp_name, p);
	return 0;
}

static void dec_free(struct dec *d)
{
	hlo_set_free(&d->strs);
	hlo_set_free(&d->shapes);
	for (size_t i = 0; i <= XPROFS_HLO_TUPLE_DEPTH_MAX; i++) {
		free(d->sh[i].dims);
		free(d->sh[i].tuple);
	}
	v64_free(&d->t.ops);
	v64_free(&d->t.called);
	v64_free(&d->t.dims);
	for (int k = 0; k < 3; k++)
		v64_free(&d->t.conv_sp[k]);
	for (int k = 0; k < 4; k++)
		v64_free(&d->t.dot_d[k]);
	free(d->t.win);
	v64_free(&d->called_ids);
	v64_free(&d->comp_ops);
	free(d->ids);
	wire_cur_deinit(&d->c);
}

int hlo_span_check(const struct xprofs_reader *r, uint64_t off, uint64_t len,
		   struct xprofs_buf *err)
{
	if (off <= r->size && len <= r->size - off)
		return 0;
	if (err && !err->len)
		(void)!xprofs_buf_printf(err,
					 "HloProto of %" PRIu64 " bytes at offset %" PRIu64
					 " lies past the end of its %" PRIu64 "-byte source",
					 len, off, r->size);
	return -EINVAL;
}

/* Give back what the decoder over-allocated: a program is kept a while. */
static void shrink(void **a, size_t n, size_t size)
{
	void *q;

	if (*a && n && (q = realloc(*a, n * size)))
		*a = q;
}

int xprofs_hlo_program_decode(const struct xprofs_reader *r, uint64_t off, uint64_t len,
			      struct xprofs_buf *err, struct xprofs_hlo_program **out)
{
	struct xprofs_hlo_program *p;
	struct dec *d;
	int ret;

	*out = NULL;
	if ((ret = hlo_span_check(r, off, len, err)) < 0)
		return ret;
	if (len > XPROFS_HLO_PROTO_MAX) {
		if (err && !err->len)
			(void)!xprofs_buf_printf(err,
						 "HloProto of %" PRIu64
						 " bytes is larger than the %" PRIu64 "-byte limit",
						 len, XPROFS_HLO_PROTO_MAX);
		return -E2BIG;
	}
	p = calloc(1, sizeof(*p));
	d = calloc(1, sizeof(*d));
	if (!p || !d) {
		free(p);
		free(d);
		return -ENOMEM;
	}
	p->r = r;
	p->entry = -1;
	xprofs_buf_init(&p->arena, XPROFS_HLO_ARENA_MAX);
	d->p = p;
	wire_cur_init(&d->c, r, err);
	d->c.pos = off;
	d->c.end = off + len;
	ret = rd_proto(d);
	if (ret == -E2BIG)
		wire_fail(&d->c,
			  "program past the decoder's limits (instructions, strings or %zu "
			  "MiB of decoded data)",
			  XPROFS_HLO_MEM_MAX >> 20);
	dec_free(d);
	free(d);
	if (ret < 0) {
		xprofs_hlo_program_free(p);
		return ret;
	}
	shrink((void **)&p->ins, p->n_ins, sizeof(*p->ins));
	shrink((void **)&p->strs, p->n_strs, sizeof(*p->strs));
	shrink((void **)&p->u32, p->n_u32, sizeof(*p->u32));
	shrink((void **)&p->i64, p->n_i64, sizeof(*p->i64));
	*out = p;
	return 0;
}

void xprofs_hlo_program_free(struct xprofs_hlo_program *p)
{
	if (!p)
		return;
	xprofs_buf_deinit(&p->arena);
	free(p->strs);
	free(p->ins);
	free(p->exts);
	free(p->comps);
	free(p->shapes);
	free(p->convs);
	free(p->dots);
	free(p->wins);
	free(p->u32);
	free(p->i64);
	free(p->by_name);
	free(p);
}

size_t hlo_program_bytes(const struct xprofs_hlo_program *p)
{
	return sizeof(*p) + p->arena.len + p->n_strs * sizeof(*p->strs) +
	       p->n_ins * (sizeof(*p->ins) + sizeof(*p->by_name)) + p->n_exts * sizeof(*p->exts) +
	       p->n_comps * sizeof(*p->comps) + p->n_shapes * sizeof(*p->shapes) +
	       p->n_convs * sizeof(*p->convs) + p->n_dots * sizeof(*p->dots) +
	       p->n_wins * sizeof(*p->wins) + p->n_u32 * sizeof(*p->u32) +
	       p->n_i64 * sizeof(*p->i64);
}
