/*
 * hlo-syms.c - XProf's symbol resolver for XLA kernels on GPU planes: the
 * framework op name and source line of each HLO instruction, read from the
 * HLO protos the XSpace carries, for the derived Framework and Source code
 * lines (derive-gpu.c).
 *
 * Sources (openxla/xprof): GenerateDerivedTimeLines() (derived_timeline.cc:
 * the resolver gives, for a kernel's program_id and the last part of its
 * hlo_op, tf_op_name = the instruction's op_full_name() and source_info),
 * ParseHloProtosFromXSpace() / HloProtoMap (hlo_proto_map.cc: the
 * first "/host:metadata" plane's event metadata whose "Hlo Proto" stat holds a
 * bytes HloProto, keyed by the metadata's id = program id; a plane with
 * plane stats is the legacy form: each bytes plane stat is one HloProto,
 * keyed by its metadata id), HloModuleWrapper / HloInstructionWrapper
 * (hlo_module_map.cc: every instruction of every computation by name, the
 * first of a name kept; op_full_name() = TSL TraceMeOp(op_name, op_type) =
 * "<op_name>:<op_type>"; source_info() = "<basename of source_file>:<line>"
 * when source_file is set).
 *
 * The schema subset read (hlo/proto/hlo.proto, written from XLA's public
 * hlo.proto and xla_data.proto): HloProto.hlo_module (1) -> HloModuleProto
 * .computations (3) -> HloComputationProto.instructions (2) ->
 * HloInstructionProto.name (1), .metadata (7) -> OpMetadata.op_type (1),
 * .op_name (2), .source_file (3), .source_line (4). The walk uses the
 * decoder's own wire cursor (no generated code in the library).
 *
 * Design: loaded once per render on the first deriving GPU stream, into one
 * sorted array of (program id, instruction name) with the two strings in an
 * arena; looked up by binary search per XLA kernel.
 *
 * Limits: at most HLO_SYMS_MAX instructions and HLO_ARENA_MAX bytes of
 * strings, 52 MiB in all, from at most HLO_PROTOS_MAX protos (further
 * instructions are not resolved); each string cut at
 * DER_NAME_MAX bytes. A proto that does not parse (a wire error) adds
 * nothing, as XProf's ParseFromString() failing; unlike XProf, which builds
 * an HloModule and drops protos that fail to convert, the instructions'
 * metadata is read without validating the module, and proto3's UTF-8 check
 * of strings is not made.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "derived.h"

/* 2^19 entries of 40 bytes (20 MiB) and 32 MiB of strings: at most 52 MiB per render */
#define HLO_SYMS_MAX ((size_t)1 << 19)
#define HLO_ARENA_MAX ((size_t)32 << 20)
/* HLO protos read (their program ids are compared one by one) */
#define HLO_PROTOS_MAX ((size_t)1 << 14)

struct hlo_sym {
	uint64_t program_id;
	uint32_t order; /* insertion order: the first of a name wins */
	/* into the arena (below HLO_ARENA_MAX, so 32 bits suffice) */
	uint32_t name_off, name_len, op_off, op_len, src_off, src_len;
};

struct trace_hlo_syms {
	struct hlo_sym *s;
	size_t n, cap;
	struct xprofs_buf arena;
	uint64_t *pids; /* the program ids read (HloModuleMap's try_emplace: the first wins) */
	size_t n_pids, cap_pids;
};

/* One instruction being read: where its strings lie in the file (last occurrence wins). */
struct instr {
	struct xs_span name, op_type, op_name, file;
	int32_t line;
};

/* The string at @sp (cut at DER_NAME_MAX) appended to the arena; its offset and length. */
static int put(struct trace_hlo_syms *t, struct wire_cur *c, const struct xs_span *sp,
	       uint32_t *off, uint32_t *len)
{
	size_t n = sp->len > DER_NAME_MAX ? DER_NAME_MAX : (size_t)sp->len;
	const uint8_t *p;
	int r;

	*off = (uint32_t)t->arena.len;
	*len = (uint32_t)n;
	if (!n)
		return 0;
	if ((r = wire_at(c, sp->off, n, &p)) < 0)
		return r;
	return xprofs_buf_add(&t->arena, p, n);
}

/* Record instruction @in of program @pid: name, TraceMeOp(op_name, op_type), source_info(). */
static int add_instr(struct trace_hlo_syms *t, struct wire_cur *c, uint64_t pid,
		     const struct instr *in)
{
	struct hlo_sym *s;
	uint32_t off, len;
	size_t base;
	int r;

	if (t->n >= HLO_SYMS_MAX)
		return -E2BIG;
	if ((r = xprofs_grow(&t->s, &t->cap, t->n, sizeof(*t->s), 256)) < 0)
		return r;
	s = &t->s[t->n];
	memset(s, 0, sizeof(*s));
	s->program_id = pid;
	s->order = (uint32_t)t->n;
	if ((r = put(t, c, &in->name, &s->name_off, &s->name_len)) < 0 ||
	    (r = put(t, c, &in->op_name, &s->op_off, &len)) < 0 ||
	    (r = xprofs_buf_add(&t->arena, ":", 1)) < 0 ||
	    (r = put(t, c, &in->op_type, &off, &len)) < 0)
		return r;
	s->op_len = (uint32_t)(t->arena.len - s->op_off);
	s->src_off = (uint32_t)t->arena.len;
	if (in->file.len) {
		/* tsl::io::Basename(): what follows the last '/' */
		struct xs_span f = in->file;
		size_t n = f.len > DER_NAME_MAX ? DER_NAME_MAX : (size_t)f.len;
		const uint8_t *p;

		if ((r = wire_at(c, f.off, n, &p)) < 0)
			return r;
		base = n;
		while (base && p[base - 1] != '/')
			base--;
		if ((r = xprofs_buf_add(&t->arena, p + base, n - base)) < 0 ||
		    (r = xprofs_buf_printf(&t->arena, ":%" PRId32, in->line)) < 0)
			return r;
	}
	s->src_len = (uint32_t)(t->arena.len - s->src_off);
	t->n++;
	return 0;
}

/* OpMetadata at [pos, end): op_type, op_name, source_file, source_line. */
static int read_metadata(struct wire_cur *c, uint64_t end, struct instr *in)
{
	uint32_t f;
	int wt, r;
	uint64_t len, v;

	while (c->pos < end) {
		if ((r = wire_tag(c, &f, &wt)) < 0)
			return r;
		if (f >= 1 && f <= 3) {
			struct xs_span *sp = f == 1   ? &in->op_type
					     : f == 2 ? &in->op_name
						      : &in->file;

			if ((r = wire_len_field(c, wt, "OpMetadata", f, &len)) < 0)
				return r;
			sp->off = c->pos;
			sp->len = len;
			c->pos += len;
		} else if (f == 4) {
			if ((r = wire_varint_field(c, wt, "OpMetadata", f, &v)) < 0)
				return r;
			in->line = (int32_t)(uint32_t)v; /* int32: the low 32 bits */
		} else if ((r = wire_skip(c, wt)) < 0) {
			return r;
		}
	}
	return 0;
}

/* HloInstructionProto at [pos, end): its name and metadata. */
static int read_instr(struct trace_hlo_syms *t, struct wire_cur *c, uint64_t end, uint64_t pid)
{
	struct instr in;
	uint32_t f;
	int wt, r;
	uint64_t len, save;

	memset(&in, 0, sizeof(in));
	while (c->pos < end) {
		if ((r = wire_tag(c, &f, &wt)) < 0)
			return r;
		if (f == 1) {
			if ((r = wire_len_field(c, wt, "HloInstructionProto", f, &len)) < 0)
				return r;
			in.name.off = c->pos;
			in.name.len = len;
			c->pos += len;
		} else if (f == 7) { /* a repeated singular message merges: fields keep the last */
			if ((r = wire_len_field(c, wt, "HloInstructionProto", f, &len)) < 0)
				return r;
			save = c->end;
			c->end = c->pos + len;
			r = read_metadata(c, c->end, &in);
			c->end = save;
			if (r < 0)
				return r;
		} else if ((r = wire_skip(c, wt)) < 0) {
			return r;
		}
	}
	return add_instr(t, c, pid, &in);
}

/* Walk the LEN fields @field of the message [pos, end), calling @fn on each. */
static int each_len(struct trace_hlo_syms *t, struct wire_cur *c, uint64_t end, const char *msg,
		    uint32_t field, uint64_t pid,
		    int (*fn)(struct trace_hlo_syms *, struct wire_cur *, uint64_t, uint64_t))
{
	uint64_t len, save;
	int r;

	while ((r = wire_next_len_field(c, end, msg, field, &len)) > 0) {
		save = c->end;
		c->end = c->pos + len;
		r = fn(t, c, c->end, pid);
		c->pos = c->end;
		c->end = save;
		if (r < 0)
			return r;
	}
	return r;
}

static int read_comp(struct trace_hlo_syms *t, struct wire_cur *c, uint64_t end, uint64_t pid)
{
	return each_len(t, c, end, "HloComputationProto", 2, pid, read_instr);
}

static int read_module(struct trace_hlo_syms *t, struct wire_cur *c, uint64_t end, uint64_t pid)
{
	return each_len(t, c, end, "HloModuleProto", 3, pid, read_comp);
}

/*
 * One HloProto at @sp, program @pid; a proto that does not parse adds
 * nothing, one of a program id already read is not read.
 */
static int read_proto(struct trace_hlo_syms *t, struct wire_cur *c, const struct xs_span *sp,
		      uint64_t pid)
{
	size_t n0 = t->n, a0 = t->arena.len;
	uint64_t save = c->end;
	int r;

	for (size_t i = 0; i < t->n_pids; i++)
		if (t->pids[i] == pid)
			return 0;
	c->pos = sp->off;
	c->end = sp->off + sp->len;
	r = each_len(t, c, c->end, "HloProto", 1, pid, read_module);
	c->end = save;
	if (r == -EINVAL) { /* malformed: as a failed ParseFromString() */
		t->n = n0;
		t->arena.len = a0;
		return 0;
	}
	if (r == 0 && t->n_pids >= HLO_PROTOS_MAX)
		return -E2BIG;
	if (r == 0 &&
	    (r = xprofs_grow(&t->pids, &t->cap_pids, t->n_pids, sizeof(*t->pids), 64)) == 0)
		t->pids[t->n_pids++] = pid;
	return r;
}

/* XStat at [pos, end): metadata id and, if bytes, where the bytes lie. */
static int read_stat(struct wire_cur *c, uint64_t end, uint64_t *md, struct xs_span *bytes,
		     bool *is_bytes)
{
	uint32_t f;
	int wt, r;
	uint64_t len;

	*md = 0;
	*is_bytes = false;
	while (c->pos < end) {
		if ((r = wire_tag(c, &f, &wt)) < 0)
			return r;
		if (f == XSTAT_F_METADATA_ID) {
			if ((r = wire_varint_field(c, wt, "XStat", f, md)) < 0)
				return r;
		} else if (f >= XSTAT_F_DOUBLE &&
			   f <= XSTAT_F_LAST) { /* the value oneof: last wins */
			*is_bytes = f == XSTAT_F_BYTES;
			if (*is_bytes) {
				if ((r = wire_len_field(c, wt, "XStat", f, &len)) < 0)
					return r;
				bytes->off = c->pos;
				bytes->len = len;
				c->pos += len;
			} else if ((r = wire_skip(c, wt)) < 0) {
				return r;
			}
		} else if ((r = wire_skip(c, wt)) < 0) {
			return r;
		}
	}
	return 0;
}

/* The HloProtos of metadata plane @p (ParseHloProtosFromXSpace()). */
static int read_plane(struct trace_hlo_syms *t, struct wire_cur *c, const struct xs_plane *p)
{
	struct xs_span b = {0};
	uint64_t md, len, id;
	bool is_bytes;
	int64_t want;
	int r;

	if (p->n_stats) { /* the legacy aggregated plane: every bytes plane stat */
		for (size_t i = 0; i < p->n_stats; i++) {
			c->pos = p->stats[i].off;
			c->end = p->stats[i].off + p->stats[i].len;
			if (read_stat(c, c->end, &md, &b, &is_bytes) < 0 || !is_bytes)
				continue;
			if ((r = read_proto(t, c, &b, md)) < 0)
				return r;
		}
		return 0;
	}
	if ((want = xs_stmd_key(c, p, "Hlo Proto")) < 0)
		return 0;
	for (size_t i = 0; i < p->ev.n; i++) {
		const struct xs_md *m = &p->ev.md[i];
		bool found = false, bytes = false;
		uint32_t f;
		int wt;

		id = 0;
		c->pos = m->off;
		c->end = m->off + m->len;
		while (c->pos < c->end) { /* XEventMetadata: id, and the first "Hlo Proto" stat */
			if (wire_tag(c, &f, &wt) < 0)
				break;
			if (f == XEVMD_F_ID) {
				if (wire_varint_field(c, wt, "XEventMetadata", f, &id) < 0)
					break;
			} else if (f == XEVMD_F_STATS && wt == WT_LEN && !found) {
				struct xs_span sb;
				uint64_t save = c->end;

				if (wire_len(c, &len) < 0)
					break;
				c->end = c->pos + len;
				r = read_stat(c, c->end, &md, &sb, &is_bytes);
				c->pos = c->end;
				c->end = save;
				if (r < 0)
					break;
				if ((int64_t)md == want) {
					found = true;
					bytes = is_bytes;
					b = sb;
				}
			} else if (wire_skip(c, wt) < 0) {
				break;
			}
		}
		if (found && bytes && (r = read_proto(t, c, &b, id)) < 0)
			return r;
	}
	return 0;
}

static int cmp_sym_arena(const struct trace_hlo_syms *t, const struct hlo_sym *a, uint64_t pid,
			 const char *name, size_t n)
{
	size_t k = a->name_len < n ? a->name_len : n;
	int d;

	if (a->program_id != pid)
		return a->program_id < pid ? -1 : 1;
	if ((d = memcmp(t->arena.data + a->name_off, name, k)))
		return d;
	return a->name_len < n ? -1 : a->name_len > n;
}

static int cmp_sym(const void *pa, const void *pb, void *arg)
{
	const struct trace_hlo_syms *t = arg;
	const struct hlo_sym *a = pa, *b = pb;
	int d = cmp_sym_arena(t, a, b->program_id, t->arena.data + b->name_off, b->name_len);

	if (d)
		return d;
	return a->order < b->order ? -1 : a->order > b->order;
}

int trace_hlo_syms_load(const struct xprofs_xspace *x, struct trace_hlo_syms **out)
{
	struct trace_hlo_syms *t;
	struct wire_cur c;
	size_t k = 0;
	int r = 0;

	*out = NULL;
	if (!(t = calloc(1, sizeof(*t))))
		return -ENOMEM;
	xprofs_buf_init(&t->arena, HLO_ARENA_MAX);
	wire_cur_init(&c, x->r, NULL);
	for (size_t i = 0; i < x->n_planes; i++)
		if (xs_str_eq(x->planes[i].name, x->planes[i].name_len, "/host:metadata")) {
			r = read_plane(t, &c, &x->planes[i]); /* FindPlaneWithName(): the first */
			break;
		}
	wire_cur_deinit(&c);
	if (r == -E2BIG || r == -ENOBUFS || r == -EOVERFLOW)
		r = 0; /* a cap reached: what was read so far is kept */
	if (r < 0) {
		trace_hlo_syms_free(t);
		return r;
	}
	if (t->n) {
		/* sorted by (program id, name); of equal keys the first read is kept */
		qsort_r(t->s, t->n, sizeof(*t->s), cmp_sym, t);
		for (size_t i = 0; i < t->n; i++)
			if (!k || cmp_sym_arena(t, &t->s[k - 1], t->s[i].program_id,
						t->arena.data + t->s[i].name_off, t->s[i].name_len))
				t->s[k++] = t->s[i];
		t->n = k;
	}
	*out = t;
	return 0;
}

bool trace_hlo_syms_find(const struct trace_hlo_syms *t, uint64_t program_id, const char *name,
			 size_t n, struct trace_hlo_sym *out)
{
	size_t lo = 0, hi = t ? t->n : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cmp_sym_arena(t, &t->s[mid], program_id, name, n) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo >= (t ? t->n : 0) || cmp_sym_arena(t, &t->s[lo], program_id, name, n))
		return false;
	out->tf_op = t->arena.data + t->s[lo].op_off;
	out->tf_op_len = t->s[lo].op_len;
	out->source = t->arena.data + t->s[lo].src_off;
	out->source_len = t->s[lo].src_len;
	return true;
}

void trace_hlo_syms_free(struct trace_hlo_syms *t)
{
	if (!t)
		return;
	free(t->s);
	free(t->pids);
	xprofs_buf_deinit(&t->arena);
	free(t);
}
