/*
 * events.c - the event stream of one line: nested, non-overlapping events
 * regenerated identically from the line's seed for both passes.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gen.h"

/* ---- events ------------------------------------------------------------ */

/*
 * Per line kind: how deep its events nest and how often an event opens a
 * parent (the kinds not listed stay flat), and which metadata class its
 * events take and how one is picked (L_EMPTY has no events).
 */
enum md_pick { PICK_NONE, PICK_SEQ, PICK_SKEWED, PICK_UNIFORM };

static const struct line_shape {
	int max_depth;
	double p_parent;
	enum em_class em;
	enum md_pick pick;
} line_shapes[] = {
	[L_STEPS] = {0, 0, EM_STEP, PICK_SEQ},
	[L_MODULES] = {0, 0, EM_MODULE, PICK_SKEWED},
	[L_OPS] = {2, 0.08, EM_OP, PICK_SKEWED},
	[L_ASYNC] = {0, 0, EM_ASYNC, PICK_UNIFORM},
	[L_TRACEME] = {3, 0.3, EM_TRACEME, PICK_UNIFORM},
	[L_COUNTERS] = {0, 0, EM_COUNTER, PICK_SEQ},
	[L_EMPTY] = {0, 0, EM_MODULE, PICK_NONE},
	[L_KERNEL] = {0, 0, EM_KERNEL, PICK_SKEWED},
	[L_MEMCPY] = {0, 0, EM_MEMCPY, PICK_UNIFORM},
	[L_HOST] = {MAX_DEPTH - 1, 0.35, EM_HOST, PICK_SKEWED},
	[L_MEMORY] = {0, 0, EM_MEMORY, PICK_NONE},
};

/* ---- allocator traffic ---------------------------------------------------- */

const char *gen_memory_id(const struct gspace *s)
{
	return s->kind == KIND_GPU ? "GPU_0_bfc" : s->kind == KIND_TPU ? "0" : "cpu";
}

void gen_memory_init(struct memsim *m, const struct gspace *s)
{
	memset(m, 0, sizeof(*m));
	m->r.s = seed_of(s->seed, 0x4d454d, 0);
	m->capacity = INT64_C(16) << 30;
	m->stack = s->kind == KIND_TPU ? INT64_C(1) << 30 : 0; /* libtpu reserves a stack */
	m->burst = 0;
}

/*
 * The next event: the first MEM_PERSIST allocate weights that are never
 * freed; then each step allocates a burst of 3..18 tensors (4 KiB .. 512
 * MiB) into free slots and frees them again in random order.
 */
void gen_memory_next(struct memsim *m, const struct gspace *s, uint64_t total, struct memev *e)
{
	struct rng *r = &m->r;
	int64_t tick = s->span_ps / (int64_t)(total + 1);
	unsigned slot = 0, used = 0;

	memset(e, 0, sizeof(*e));
	for (unsigned i = MEM_PERSIST; i < MEM_LIVE; i++)
		used += m->size[i] != 0;
	if (m->k >= MEM_PERSIST && !m->freeing && !m->burst) {
		if (used) {
			m->freeing = true;
		} else {
			m->step++;
			m->burst = 3 + (unsigned)rng_below(r, 16);
		}
	}
	if (m->k < MEM_PERSIST) {
		slot = (unsigned)m->k;
		e->alloc = true;
		e->size = (UINT64_C(256) << 20) >> m->k;
	} else if (m->freeing) {
		unsigned pick = (unsigned)rng_below(r, used);

		for (slot = MEM_PERSIST; slot < MEM_LIVE; slot++)
			if (m->size[slot] && !pick--)
				break;
		e->size = m->size[slot];
		m->freeing = used > 1;
	} else {
		while (m->size[slot] || slot < MEM_PERSIST)
			slot++;
		/* two draws, in a fixed order (an expression's operands have none) */
		uint64_t units = 1 + rng_below(r, 64);

		e->alloc = true;
		e->size = units << (12 + rng_below(r, 12));
		m->burst--;
	}
	e->slot = slot;
	e->requested = e->size - (e->alloc ? rng_below(r, 256) % e->size : 0);
	if (e->alloc) {
		m->size[slot] = e->size;
		m->in_use += (int64_t)e->size;
	} else {
		m->size[slot] = 0;
		m->in_use -= (int64_t)e->size;
	}
	if (m->in_use > m->max_in_use)
		m->max_in_use = m->in_use;
	e->t = (int64_t)(m->k + 1) * (tick > 0 ? tick : 1);
	e->in_use = m->in_use;
	e->max_in_use = m->max_in_use;
	e->step = m->step;
	m->k++;
}

/* The memory lines' stream length: every event index either line writes. */
static uint64_t memory_total(const struct gplane *p)
{
	uint64_t most = 0;

	for (size_t i = 0; i < p->n_lines; i++)
		if (p->lines[i].kind == L_MEMORY && p->lines[i].events > most)
			most = p->lines[i].events;
	return 2 * most;
}

/* A group_id event stat of @v, unless the profile is ungrouped (GEN_UNGROUPED). */
static void group_stat(const struct gspace *s, struct pb *ev, uint64_t v)
{
	if (!(s->flags & GEN_UNGROUPED))
		stat_u(ev, 4, SM_GROUP_ID, ST_I64, v);
}

/* Encodes event @g->i of memory line @l: stream event 2i + (its id's parity). */
static void memory_event(const struct gspace *s, const struct gplane *p, const struct gline *l,
			 struct lgen *g, struct pb *ev)
{
	static const char *const region[] = {"output", "temp", "persist"};
	static const char *const ops[] = {"jit(train_step)/dot_general", "jit(train_step)/add",
					  "jit(train_step)/transpose", "jit(train_step)/reduce_sum",
					  "jit(train_step)/convolution"};
	uint64_t total = memory_total(p), want = 2 * g->i + (uint64_t)(l->id & 1);
	struct memsim *m = &g->mem;
	struct memev e;
	char shape[48];

	if (g->i == 0)
		gen_memory_init(m, s);
	do
		gen_memory_next(m, s, total, &e);
	while (m->k <= want);
	pb_int(ev, 1, p->em_base[EM_MEMORY] + (e.alloc ? 0 : 1));
	pb_int(ev, 2, (uint64_t)e.t);
	if (s->kind == KIND_TPU)
		stat_u(ev, 4, SM_INDEX_ON_HOST, ST_I64, 0);
	else
		stat_s(ev, 4, SM_ALLOCATOR_NAME, gen_memory_id(s));
	stat_u(ev, 4, SM_BYTES_RESERVED, ST_I64, (uint64_t)m->stack);
	stat_u(ev, 4, SM_BYTES_ALLOCATED, ST_I64, (uint64_t)e.in_use);
	stat_u(ev, 4, SM_BYTES_AVAILABLE, ST_I64, (uint64_t)(m->capacity - m->stack - e.in_use));
	pb_stat(ev, 4, SM_FRAGMENTATION, ST_DOUBLE, 0, (double)(e.slot % 8) / 16, NULL, 0);
	stat_u(ev, 4, SM_PEAK_BYTES_IN_USE, ST_I64, (uint64_t)(m->stack + e.max_in_use));
	stat_u(ev, 4, SM_REQUESTED_BYTES, ST_I64, e.requested);
	stat_u(ev, 4, SM_ALLOCATION_BYTES, ST_I64, e.size);
	stat_u(ev, 4, SM_ADDR, ST_I64, UINT64_C(0x7f0000000000) + ((uint64_t)e.slot << 32));
	group_stat(s, ev, (uint64_t)e.step);
	if (e.alloc) {
		stat_s(ev, 4, SM_TF_OP, ops[e.slot % 5]);
		stat_s(ev, 4, SM_REGION_TYPE, region[e.slot < MEM_PERSIST ? 2 : e.slot % 2]);
		stat_u(ev, 4, SM_DATA_TYPE, ST_I64, e.slot % 3 ? 14 : 1); /* bfloat16, float */
		snprintf(shape, sizeof(shape), "[%" PRIu64 "]", e.size / (e.slot % 3 ? 2 : 4));
		stat_s(ev, 4, SM_SHAPE, shape);
	}
	g->t = e.t;
	g->i++;
}

/*
 * gen_memory_peak() - what memory_profile.json's peak of @s must be: the
 * stack plus the most bytes in use after any event the memory lines of
 * host plane @p write; *events: how many they write.
 */
int64_t gen_memory_peak(const struct gspace *s, const struct gplane *p, uint64_t *events)
{
	uint64_t n[2] = {0, 0}, total = memory_total(p);
	struct memsim m;
	struct memev e;
	int64_t peak = INT64_MIN;

	for (size_t i = 0; i < p->n_lines; i++)
		if (p->lines[i].kind == L_MEMORY)
			n[p->lines[i].id & 1] = p->lines[i].events;
	gen_memory_init(&m, s);
	for (uint64_t k = 0; k < total; k++) {
		gen_memory_next(&m, s, total, &e);
		if (k / 2 < n[k & 1] && m.stack + e.in_use > peak)
			peak = m.stack + e.in_use;
	}
	*events = n[0] + n[1];
	return peak;
}

void gen_lgen_init(struct lgen *g, const struct gspace *s, const struct gline *l)
{
	memset(g, 0, sizeof(*g));
	g->r.s = l->seed;
	g->slot = l->events ? s->span_ps / (int64_t)l->events : s->span_ps;
	if (g->slot < 1)
		g->slot = 1;
	g->corr = 1000 + (l->seed & 0xffff);
	g->max_depth = line_shapes[l->kind].max_depth;
	g->p_parent = line_shapes[l->kind].p_parent;
}

/* The metadata id of the next event of line @l (0 for L_EMPTY). */
static uint64_t next_md(const struct gplane *p, const struct gline *l, struct lgen *g)
{
	const struct line_shape *ls = &line_shapes[l->kind];
	uint64_t n = p->em_n[ls->em];

	switch (ls->pick) {
	case PICK_SEQ:
		return p->em_base[ls->em] + g->i % n;
	case PICK_SKEWED:
		return p->em_base[ls->em] + rng_skewed(&g->r, n);
	case PICK_UNIFORM:
		return p->em_base[ls->em] + rng_below(&g->r, n);
	default:
		return 0;
	}
}

/*
 * Chooses the next event's [start, start+dur) so that it nests in the open
 * parent (if any) and starts after the previous sibling ended.
 */
static void lgen_next_time(struct lgen *g, const struct gline *l, int64_t *start, int64_t *dur)
{
	struct rng *r = &g->r;

	if (l->kind == L_STEPS) {
		*start = g->t;
		*dur = g->slot;
		g->t += g->slot;
		return;
	}
	if (l->kind == L_COUNTERS) {
		*start = g->t;
		*dur = 0;
		g->t += g->slot;
		return;
	}
	while (g->depth > 0 && g->st[g->depth - 1].kids == 0) {
		g->t = g->st[g->depth - 1].end;
		g->depth--;
	}
	if (g->depth == 0) {
		/* duty cycle: modules cover most of the time, copies little of it */
		double lo = l->kind == L_MODULES ? 0.6 : l->kind == L_MEMCPY ? 0.02 : 0.3;
		double hi = l->kind == L_MODULES ? 0.9 : l->kind == L_MEMCPY ? 0.15 : 0.6;

		*start = g->t + (int64_t)((double)g->slot * rng_range(r, 0.05, 0.1 + (1 - hi) / 2));
		*dur = (int64_t)((double)g->slot * rng_range(r, lo, hi));
	} else {
		struct frame *f = &g->st[g->depth - 1];
		int64_t per = (f->end - g->t) / (f->kids + 1);

		*start = g->t + (int64_t)((double)per * rng_range(r, 0.02, 0.2));
		*dur = (int64_t)((double)per * rng_range(r, 0.5, 0.95));
		f->kids--;
	}
	if (g->depth < g->max_depth && rng_unit(r) < g->p_parent) {
		int kids = 1 + (int)rng_below(r, 4);

		/* a parent spans what its children need */
		if (g->depth == 0)
			*dur = (int64_t)((double)g->slot * (kids + 1) * rng_range(r, 0.8, 1.1));
		g->st[g->depth].end = *start + *dur;
		g->st[g->depth].kids = kids;
		g->depth++;
		g->t = *start;
	} else {
		if (l->kind == L_HOST && rng_below(r, 50) == 0)
			*dur = 0; /* TraceMe instants */
		g->t = *start + *dur;
	}
}

/* Encodes the body of the next event of line @l into @ev (reset first). */
void gen_event(const struct gspace *s, const struct gplane *p, const struct gline *l,
	       struct lgen *g, struct pb *ev)
{
	struct rng *r = &g->r;
	int64_t start, dur;
	uint64_t md;
	int64_t step_len = s->span_ps / (int64_t)(s->steps ? s->steps : 1);
	uint64_t group;

	ev->len = 0;
	if (l->kind == L_MEMORY) {
		memory_event(s, p, l, g, ev);
		return;
	}
	lgen_next_time(g, l, &start, &dur);
	group = (uint64_t)(start / (step_len ? step_len : 1));
	md = next_md(p, l, g);
	pb_int(ev, 1, md);
	pb_int(ev, 2, (uint64_t)start);
	if (dur)
		pb_int(ev, 3, (uint64_t)dur);
	switch (l->kind) {
	case L_STEPS:
		stat_u(ev, 4, SM_STEP_NUM, ST_I64, g->i);
		group_stat(s, ev, g->i);
		break;
	case L_MODULES:
		stat_u(ev, 4, SM_RUN_ID, ST_U64, 1 + g->i);
		stat_u(ev, 4, SM_PROGRAM_ID, ST_U64,
		       gen_program_id_of((uint32_t)(md - p->em_base[EM_MODULE])));
		group_stat(s, ev, group);
		break;
	case L_OPS:
		stat_u(ev, 4, SM_DEVICE_OFFSET_PS, ST_U64, (uint64_t)start);
		stat_u(ev, 4, SM_DEVICE_DURATION_PS, ST_U64, (uint64_t)dur);
		group_stat(s, ev, group);
		break;
	case L_ASYNC:
		stat_u(ev, 4, SM_HLO_OP, ST_REF,
		       p->si_base[SI_HLO_OP] + rng_below(r, p->si_n[SI_HLO_OP]));
		stat_u(ev, 4, SM_A, ST_I64, 1);
		break;
	case L_COUNTERS:
		pb_stat(ev, 4, SM_VALUE, ST_DOUBLE, 0, rng_range(r, 0, 100.0), NULL, 0);
		break;
	case L_KERNEL: {
		uint32_t k = (uint32_t)(md - p->em_base[EM_KERNEL]);

		stat_u(ev, 4, SM_CORRELATION_ID, ST_U64, g->corr++);
		stat_u(ev, 4, SM_KERNEL_DETAILS, ST_REF,
		       p->si_base[SI_KERNEL_DETAILS] + k % p->si_n[SI_KERNEL_DETAILS]);
		if (k % 4 == 3) {
			/* a framework kernel (TensorFlow, PyTorch, JAX eager): tf_op, no HLO */
			char op[160];

			gen_framework_op(k / 4, op, sizeof(op));
			stat_s(ev, 4, SM_TF_OP, op);
			group_stat(s, ev, group);
			break;
		}
		stat_u(ev, 4, SM_TF_OP, ST_REF, p->si_base[SI_TF_OP] + k % p->si_n[SI_TF_OP]);
		stat_u(ev, 4, SM_HLO_OP, ST_REF, p->si_base[SI_HLO_OP] + k % p->si_n[SI_HLO_OP]);
		stat_u(ev, 4, SM_HLO_MODULE, ST_REF,
		       p->si_base[SI_HLO_MODULE] + k % p->si_n[SI_HLO_MODULE]);
		stat_u(ev, 4, SM_PROGRAM_ID, ST_I64, gen_program_id_of(k % N_MODULES));
		group_stat(s, ev, group);
		break;
	}
	case L_MEMCPY: {
		char d[128];

		snprintf(d, sizeof(d), "kind_src:pageable kind_dst:device size:%u dest:%d async:1",
			 1u << (10 + rng_below(r, 16)), p->index);
		stat_u(ev, 4, SM_CORRELATION_ID, ST_U64, g->corr++);
		stat_s(ev, 4, SM_MEMCPY_DETAILS, d);
		group_stat(s, ev, group);
		break;
	}
	case L_HOST: {
		uint32_t h = (uint32_t)(md - p->em_base[EM_HOST]);

		if (h == LAUNCH_A || h == LAUNCH_B)
			stat_u(ev, 4, SM_CORRELATION_ID, ST_U64, g->corr++);
		else if (rng_below(r, 4) == 0)
			group_stat(s, ev, group);
		if (h >= N_HOST_FIXED && rng_below(r, 16) == 0)
			stat_u(ev, 4, SM_TF_OP, ST_REF,
			       p->si_base[SI_TF_OP] + h % p->si_n[SI_TF_OP]);
		if ((s->flags & GEN_REGIONS) && (h == REGION_RECORD || h == REGION_START)) {
			/* a small id space, so records and regions of one id meet */
			uint64_t id = 1 + rng_below(r, 64);

			stat_u(ev, 4, h == REGION_START ? SM_C : SM_P, ST_U64, id);
			stat_u(ev, 4, h == REGION_START ? SM_CT : SM_PT, ST_I64, 15);
		}
		break;
	}
	case L_TRACEME:
	case L_EMPTY:
	case L_MEMORY:
		break;
	}
	g->i++;
}
