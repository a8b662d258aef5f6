/*
 * facts.c - the facts table: for every instruction of the programs of an
 * index, keyed by (program id, instruction name), what the views need
 * without decoding a program again: the framework op (op_full_name(),
 * op_name, op_type), source_info(), category (category.c), opcode, where
 * it is (program and instruction index), and room for three numbers, FLOPs
 * (the model's and the device's) and bytes accessed, that a cost function
 * may fill (NAN otherwise).
 *
 * Sources (openxla/xprof xprof/utils/hlo_module_map.cc): HloModuleMap keeps
 * the first module of a program id that converts (AddHloProto():
 * try_emplace after ConvertHloProtoToModule()); HloModuleWrapper keeps, per
 * name, the first instruction over the module's computations
 * (instructions_by_name_.try_emplace()); HloInstructionWrapper's
 * op_full_name() is TraceMeOp(op_name, op_type) = "<op_name>:<op_type>",
 * source_info() "<tsl::io::Basename(source_file)>:<source_line>" when
 * source_file is set, Category() HloInstruction::ToCategory().
 *
 * Design: programs are decoded one at a time (xprofs_hlo_program_load())
 * and freed; each instruction kept is one fixed entry with its strings in
 * one arena (category and opcode interned: they repeat), then the entries
 * are sorted by (program id, name, order read) and the later duplicates of
 * a key dropped; a look-up is a binary search.
 *
 * Limits: the entries (their array's allocation) and the strings each
 * stay under half of opts->mem_max (XPROFS_HLO_FACTS_MEM_MAX, 64 MiB, by
 * default: about 350k instructions); past it the instructions read so far
 * are kept and the table is marked truncated. Each string is cut at XPROFS_HLO_FACT_STR_MAX
 * bytes (the trace's derived names are cut there too).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hlo-internal.h"

#define INTERN_MAX 4096 /* distinct categories and opcodes interned */

struct fact {
	uint64_t program_id;
	double flops, dflops, bytes;
	uint32_t order, program, instr;
	/* into the arena (below mem_max, so 32 bits suffice) */
	uint32_t name_off, name_len, full_off, full_len, op_name_len, src_off, src_len;
	uint32_t cat_off, cat_len, opc_off, opc_len;
	uint8_t from;
};

struct span32 {
	uint32_t off, len;
};

struct xprofs_hlo_facts {
	struct fact *f;
	size_t n, cap;
	struct xprofs_buf arena;
	size_t mem_max;
	bool truncated;
	/* while building: the interned strings, and the program ids read */
	struct xprofs_table *intern;
	struct span32 *ints;
	size_t n_int, cap_int;
	struct xprofs_table *done;
	uint64_t *pids;
	size_t n_pids, cap_pids;
};

/* Append @n bytes of @s, cut at XPROFS_HLO_FACT_STR_MAX; *@len grows by what was kept. */
static int put(struct xprofs_hlo_facts *t, const char *s, size_t n, uint32_t *len)
{
	int r;

	if (n > XPROFS_HLO_FACT_STR_MAX)
		n = XPROFS_HLO_FACT_STR_MAX;
	if (n && (r = xprofs_buf_add(&t->arena, s, n)) < 0)
		return r;
	*len += (uint32_t)n;
	return 0;
}

static bool intern_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct xprofs_hlo_facts *t = ctx;
	const char *s = key;
	size_t n = strlen(s);

	return n == t->ints[idx].len && !memcmp(t->arena.data + t->ints[idx].off, s, n);
}

/* @s (a category or an opcode) once in the arena: its place in *@out. */
static int intern(struct xprofs_hlo_facts *t, const char *s, struct span32 *out)
{
	size_t n = strlen(s);
	uint64_t h = xprofs_table_hash(0, s, n);
	uint32_t i;
	int r;

	if (xprofs_table_find(t->intern, h, intern_eq, t, s, &i) == 0) {
		*out = t->ints[i];
		return 0;
	}
	out->off = (uint32_t)t->arena.len;
	out->len = 0;
	/* NUL-terminated, so the views may take it as a C string */
	if ((r = put(t, s, n, &out->len)) < 0 || (r = xprofs_buf_add(&t->arena, "", 1)) < 0)
		return r;
	if (t->n_int >= INTERN_MAX)
		return 0; /* kept, not interned */
	if ((r = xprofs_grow(&t->ints, &t->cap_int, t->n_int, sizeof(*t->ints), 64)) < 0 ||
	    (r = xprofs_table_add(t->intern, h, (uint32_t)t->n_int)) < 0)
		return r;
	t->ints[t->n_int++] = *out;
	return 0;
}

/* Instruction @i of program @pi (@p, id @pid): one entry. -E2BIG at the memory cap. */
static int add_instr(struct xprofs_hlo_facts *t, const struct xprofs_hlo_program *p, size_t pi,
		     uint64_t pid, enum xprofs_hlo_source from, size_t i,
		     const struct xprofs_hlo_facts_opts *opts)
{
	struct xprofs_hlo_instr in;
	struct span32 cat, opc;
	struct fact *e;
	size_t base, fl;
	int r;

	if ((r = xprofs_hlo_instr_get(p, i, &in)) < 0)
		return r;
	/* the entries' half of the cap, counting the array's next doubling */
	if (t->n >= UINT32_MAX || (t->n < t->cap ? t->cap
				   : t->cap      ? 2 * t->cap
						 : 256) *
						  sizeof(*t->f) >
					  t->mem_max / 2)
		return -E2BIG;
	if ((r = xprofs_grow(&t->f, &t->cap, t->n, sizeof(*t->f), 256)) < 0)
		return r;
	e = &t->f[t->n];
	memset(e, 0, sizeof(*e));
	e->program_id = pid;
	e->order = (uint32_t)t->n;
	e->program = (uint32_t)pi;
	e->instr = (uint32_t)i;
	e->from = (uint8_t)from;
	e->flops = e->dflops = e->bytes = NAN;
	e->name_off = (uint32_t)t->arena.len;
	if ((r = put(t, in.name, strlen(in.name), &e->name_len)) < 0)
		return r;
	/* op_full_name(): TraceMeOp(op_name, op_type) */
	e->full_off = (uint32_t)t->arena.len;
	if ((r = put(t, in.op_name, strlen(in.op_name), &e->full_len)) < 0)
		return r;
	e->op_name_len = e->full_len;
	if ((r = put(t, ":", 1, &e->full_len)) < 0 ||
	    (r = put(t, in.op_type, strlen(in.op_type), &e->full_len)) < 0)
		return r;
	/* source_info(): tsl::io::Basename() of the file (after its last '/'), ":", the line */
	e->src_off = (uint32_t)t->arena.len;
	if (in.source_file[0]) {
		fl = strlen(in.source_file);
		if (fl > XPROFS_HLO_FACT_STR_MAX)
			fl = XPROFS_HLO_FACT_STR_MAX;
		base = fl;
		while (base && in.source_file[base - 1] != '/')
			base--;
		if ((r = put(t, in.source_file + base, fl - base, &e->src_len)) < 0 ||
		    (r = xprofs_buf_printf(&t->arena, ":%" PRId32, in.source_line)) < 0)
			return r;
		e->src_len = (uint32_t)(t->arena.len - e->src_off);
	}
	if ((r = intern(t, xprofs_hlo_category(p, i), &cat)) < 0 ||
	    (r = intern(t, in.opcode, &opc)) < 0)
		return r;
	e = &t->f[t->n]; /* (unchanged: the arena moved, not the entries) */
	e->cat_off = cat.off, e->cat_len = cat.len;
	e->opc_off = opc.off, e->opc_len = opc.len;
	if (opts && opts->cost)
		opts->cost(opts->cost_arg, p, i, &e->flops, &e->dflops, &e->bytes);
	t->n++;
	return 0;
}

static bool pid_eq(const void *ctx, uint32_t idx, const void *key)
{
	return ((const struct xprofs_hlo_facts *)ctx)->pids[idx] == *(const uint64_t *)key;
}

/*
 * Program @pi of @idx, unless one of its id was read already. A program
 * that does not decode adds nothing (0); one cut by the cap keeps what was
 * read and gives -E2BIG.
 */
static int add_program(struct xprofs_hlo_facts *t, const struct xprofs_hlo_index *idx, size_t pi,
		       const struct xprofs_hlo_facts_opts *opts)
{
	struct xprofs_hlo_program_info info;
	struct xprofs_hlo_program *p = NULL;
	struct xprofs_hlo_module m;
	struct xprofs_buf err;
	uint64_t h;
	uint32_t k;
	int r;

	if ((r = xprofs_hlo_index_get(idx, pi, &info)) < 0)
		return r;
	h = xprofs_table_hash(0, &info.program_id, sizeof(info.program_id));
	if (xprofs_table_find(t->done, h, pid_eq, t, &info.program_id, &k) == 0)
		return 0;
	xprofs_buf_init(&err, 256);
	r = xprofs_hlo_program_load(idx, pi, &err, &p);
	xprofs_buf_deinit(&err);
	if (r == -EINVAL || r == -E2BIG) /* as a module XProf cannot convert */
		return 0;
	if (r < 0)
		return r;
	if ((r = xprofs_grow(&t->pids, &t->cap_pids, t->n_pids, sizeof(*t->pids), 64)) < 0 ||
	    (r = xprofs_table_add(t->done, h, (uint32_t)t->n_pids)) < 0)
		goto out;
	t->pids[t->n_pids++] = info.program_id;
	xprofs_hlo_program_module(p, &m);
	for (size_t i = 0; i < m.n_instructions && r == 0; i++)
		r = add_instr(t, p, pi, info.program_id, info.source, i, opts);
out:
	xprofs_hlo_program_free(p);
	return r;
}

static int cmp_key(const struct xprofs_hlo_facts *t, const struct fact *a, uint64_t pid,
		   const char *name, size_t n)
{
	size_t k = a->name_len < n ? a->name_len : n;
	int d;

	if (a->program_id != pid)
		return a->program_id < pid ? -1 : 1;
	if (k && (d = memcmp(t->arena.data + a->name_off, name, k)))
		return d;
	return a->name_len < n ? -1 : a->name_len > n;
}

static int cmp_fact(const void *pa, const void *pb, void *arg)
{
	const struct xprofs_hlo_facts *t = arg;
	const struct fact *a = pa, *b = pb;
	int d = cmp_key(t, a, b->program_id, t->arena.data + b->name_off, b->name_len);

	if (d)
		return d;
	return a->order < b->order ? -1 : a->order > b->order;
}

int xprofs_hlo_facts_build(const struct xprofs_hlo_index *idx,
			   const struct xprofs_hlo_facts_opts *opts, struct xprofs_hlo_facts **out)
{
	struct xprofs_hlo_facts *t;
	size_t k = 0;
	int r = 0;

	*out = NULL;
	if (!(t = calloc(1, sizeof(*t))))
		return -ENOMEM;
	t->mem_max = opts && opts->mem_max ? opts->mem_max : XPROFS_HLO_FACTS_MEM_MAX;
	if (t->mem_max > UINT32_MAX)
		t->mem_max = UINT32_MAX;
	xprofs_buf_init(&t->arena, t->mem_max / 2); /* its allocation never passes max + 1 */
	if ((r = xprofs_table_new(INTERN_MAX, &t->intern)) < 0 ||
	    (r = xprofs_table_new(XPROFS_HLO_PROGRAMS_MAX, &t->done)) < 0)
		goto fail;
	for (size_t i = 0; idx && i < xprofs_hlo_index_count(idx) && r == 0; i++)
		r = add_program(t, idx, i, opts);
	if (r == -E2BIG || r == -ENOBUFS) { /* the cap: what was read so far is kept */
		t->truncated = true;
		r = 0;
	}
	if (r < 0)
		goto fail;
	if (t->n) {
		/* sorted by (program id, name); of equal keys the first read is kept */
		qsort_r(t->f, t->n, sizeof(*t->f), cmp_fact, t);
		for (size_t i = 0; i < t->n; i++)
			if (!k || cmp_key(t, &t->f[k - 1], t->f[i].program_id,
					  t->arena.data + t->f[i].name_off, t->f[i].name_len))
				t->f[k++] = t->f[i];
		t->n = k;
	}
	xprofs_table_free(t->intern);
	xprofs_table_free(t->done);
	free(t->ints);
	free(t->pids);
	t->intern = t->done = NULL;
	t->ints = NULL;
	t->pids = NULL;
	*out = t;
	return 0;
fail:
	xprofs_hlo_facts_free(t);
	return r;
}

void xprofs_hlo_facts_free(struct xprofs_hlo_facts *t)
{
	if (!t)
		return;
	free(t->f);
	xprofs_buf_deinit(&t->arena);
	xprofs_table_free(t->intern);
	xprofs_table_free(t->done);
	free(t->ints);
	free(t->pids);
	free(t);
}

bool xprofs_hlo_facts_find(const struct xprofs_hlo_facts *t, uint64_t program_id, const char *name,
			   size_t n, struct xprofs_hlo_fact *out)
{
	size_t lo = 0, hi = t ? t->n : 0;
	const struct fact *e;
	const char *a;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cmp_key(t, &t->f[mid], program_id, name, n) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo >= (t ? t->n : 0) || cmp_key(t, &t->f[lo], program_id, name, n))
		return false;
	e = &t->f[lo];
	a = t->arena.data;
	memset(out, 0, sizeof(*out));
	out->program_id = e->program_id;
	out->name = a + e->name_off;
	out->name_len = e->name_len;
	out->op_full_name = out->op_name = a + e->full_off;
	out->op_full_name_len = e->full_len;
	out->op_name_len = e->op_name_len;
	out->op_type = a + e->full_off + e->op_name_len + 1;
	out->op_type_len = e->full_len - e->op_name_len - 1;
	out->source = a + e->src_off;
	out->source_len = e->src_len;
	out->category = a + e->cat_off;
	out->category_len = e->cat_len;
	out->opcode = a + e->opc_off;
	out->opcode_len = e->opc_len;
	out->from = (enum xprofs_hlo_source)e->from;
	out->program = e->program;
	out->instr = e->instr;
	out->flops = e->flops;
	out->device_flops = e->dflops;
	out->bytes_accessed = e->bytes;
	return true;
}

size_t xprofs_hlo_facts_count(const struct xprofs_hlo_facts *t)
{
	return t ? t->n : 0;
}

size_t xprofs_hlo_facts_bytes(const struct xprofs_hlo_facts *t)
{
	return t ? sizeof(*t) + t->cap * sizeof(*t->f) + t->arena.cap : 0;
}

bool xprofs_hlo_facts_truncated(const struct xprofs_hlo_facts *t)
{
	return t && t->truncated;
}

int xprofs_hlo_tf_op_name(const struct xprofs_hlo_fact *f, struct xprofs_buf *out)
{
	int r;

	if (!f->op_type_len) {
		if (!f->op_name_len)
			return 0;
		/* IsXlaArgsOrRetvals(): the name is the type too */
		if ((f->op_name_len == 8 && !memcmp(f->op_name, "XLA_Args", 8)) ||
		    (f->op_name_len == 11 && !memcmp(f->op_name, "XLA_Retvals", 11))) {
			if ((r = xprofs_buf_add(out, f->op_name, f->op_name_len)) < 0 ||
			    (r = xprofs_buf_add(out, ":", 1)) < 0)
				return r;
			return xprofs_buf_add(out, f->op_name, f->op_name_len);
		}
	}
	return xprofs_buf_add(out, f->op_full_name, f->op_full_name_len);
}
