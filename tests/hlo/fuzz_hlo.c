/*
 * fuzz_hlo.c - libFuzzer target: decode the input as one HloProto, twice
 * (zero-copy reader, then a pread-only one with a tiny window: the same
 * result and error), walk everything the program gives (every instruction,
 * its shape tree, operands, called computations, backend config, look-up by
 * name, its cost: FLOPs and bytes, known or with a reason, never negative)
 * and check the indices it hands out are in range; also index the
 * input as a sidecar. Its buffer assignment is decoded the same two ways
 * (resolved ids must name logical buffers of the ids read, every range in
 * bounds) and, with the program, run through the memory viewer's analysis
 * (stats/memory-viewer.c, white-box: each memory color, and the timeline
 * replay). Any crash, leak, sanitizer report, disagreement or a failure
 * other than -EINVAL/-E2BIG (-ENOENT: no buffer assignment) is a bug.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../stats/memory-viewer.h"
#include "xprofs/hlo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct mem {
	const uint8_t *p;
	size_t n;
};

static ssize_t mem_pread(void *arg, void *buf, size_t n, uint64_t off)
{
	const struct mem *m = arg;

	if (off >= m->n)
		return 0;
	if (n > m->n - off)
		n = m->n - off;
	memcpy(buf, m->p + off, n);
	return (ssize_t)n;
}

/* xprofs_hlo_cost_get(): a reason exactly when a figure is unknown; finite, >= 0. */
static void cost(const struct xprofs_hlo_program *p, size_t i)
{
	struct xprofs_hlo_cost c;
	const double v[] = {0, 0, 0, 0, 0};

	if (xprofs_hlo_cost_get(p, i, &c) < 0 || (c.known & ~(unsigned)XPROFS_HLO_COST_ALL) ||
	    (c.known != XPROFS_HLO_COST_ALL) != (c.reason != NULL))
		abort();
	for (size_t k = 0; k < sizeof(v) / sizeof(v[0]); k++) {
		double x = k == 0   ? c.flops
			   : k == 1 ? c.transcendentals
			   : k == 2 ? c.bytes_accessed
			   : k == 3 ? c.bytes_read
				    : c.bytes_written;

		if (!isfinite(x) || x < v[k])
			abort();
	}
}

static void walk(const struct xprofs_hlo_program *p)
{
	struct xprofs_hlo_module m;
	struct xprofs_buf bc;

	xprofs_hlo_program_module(p, &m);
	if (m.entry >= (ssize_t)m.n_computations)
		abort();
	xprofs_buf_init(&bc, 1 << 20);
	for (size_t c = 0; c < m.n_computations; c++) {
		struct xprofs_hlo_computation comp;

		if (xprofs_hlo_computation_get(p, c, &comp) < 0 ||
		    comp.first + comp.n > m.n_instructions ||
		    (comp.root >= 0 &&
		     ((size_t)comp.root < comp.first || (size_t)comp.root >= comp.first + comp.n)))
			abort();
	}
	for (size_t i = 0; i < m.n_instructions; i++) {
		struct xprofs_hlo_instr in;
		struct xprofs_hlo_shape s;

		if (xprofs_hlo_instr_get(p, i, &in) < 0 || in.shape >= m.n_shapes ||
		    in.computation >= m.n_computations)
			abort();
		for (size_t k = 0; k < in.n_operands; k++)
			if (in.operands[k] >= m.n_instructions)
				abort();
		for (size_t k = 0; k < in.n_called; k++)
			if (in.called[k] >= m.n_computations)
				abort();
		if (xprofs_hlo_shape_get(p, in.shape, &s) < 0)
			abort();
		for (size_t k = 0; k < s.n_tuple; k++)
			if (s.tuple[k] >= in.shape) /* tuple elements are interned first */
				abort();
		xprofs_buf_reset(&bc);
		if (xprofs_hlo_backend_config(p, i, &bc) < 0 && in.backend_config_len < (1 << 20))
			abort();
		if (xprofs_hlo_find_instr(p, in.name, strlen(in.name)) < 0)
			abort();
		(void)xprofs_hlo_type_bits(s.element_type);
		cost(p, i);
	}
	xprofs_buf_deinit(&bc);
}

/*
 * The facts table of @idx (facts.c, category.c): built, and every
 * instruction of @p (the same bytes, decoded) found with its category.
 */
static void facts(const struct xprofs_hlo_index *idx, const struct xprofs_hlo_program *p)
{
	struct xprofs_hlo_facts *f = NULL;
	struct xprofs_hlo_module m;
	struct xprofs_hlo_fact fact;
	struct xprofs_buf tf;

	if (xprofs_hlo_facts_build(idx, NULL, &f) < 0)
		abort();
	xprofs_buf_init(&tf, 3 * XPROFS_HLO_FACT_STR_MAX);
	if (p)
		xprofs_hlo_program_module(p, &m);
	for (size_t i = 0; p && !xprofs_hlo_facts_truncated(f) && i < m.n_instructions; i++) {
		struct xprofs_hlo_instr in;

		if (xprofs_hlo_instr_get(p, i, &in) < 0)
			abort();
		(void)xprofs_hlo_category(p, i);
		if (strlen(in.name) > XPROFS_HLO_FACT_STR_MAX)
			continue; /* kept cut: not found by its whole name */
		if (!xprofs_hlo_facts_find(f, 7, in.name, strlen(in.name), &fact) ||
		    fact.category[fact.category_len] != '\0' ||
		    fact.op_name_len + 1 + fact.op_type_len != fact.op_full_name_len ||
		    /* the first instruction of a name, as xprofs_hlo_find_instr() */
		    (ssize_t)fact.instr != xprofs_hlo_find_instr(p, in.name, strlen(in.name)))
			abort();
		xprofs_buf_reset(&tf);
		if (xprofs_hlo_tf_op_name(&fact, &tf) < 0)
			abort();
	}
	xprofs_buf_deinit(&tf);
	xprofs_hlo_facts_free(f);
}

static void assignment_check(const struct xprofs_hlo_buffer_assignment *ba)
{
	for (size_t i = 0; i < ba->n_logical; i++)
		for (size_t k = 0; k < ba->logical[i].n_shape_index; k++)
			(void)*(volatile const int64_t *)&ba->logical[i].shape_index[k];
	for (size_t i = 0; i < ba->n_allocations; i++)
		if (ba->allocations[i].first_assigned + ba->allocations[i].n_assigned >
		    ba->n_assigned)
			abort();
	for (size_t i = 0; i < ba->n_assigned; i++) {
		int32_t b = ba->assigned[i].buffer;

		if (b >= (int64_t)ba->n_logical ||
		    (b >= 0 && ba->logical[b].id != ba->assigned[i].logical_buffer_id))
			abort();
	}
	for (size_t i = 0; i < ba->n_traces; i++)
		if (ba->traces[i].first_event + ba->traces[i].n_events > ba->n_events)
			abort();
	for (size_t i = 0; i < ba->n_events; i++) {
		const struct xprofs_hlo_heap_event *e = &ba->events[i];

		if (e->buffer >= (int64_t)ba->n_logical || e->canonical >= (int64_t)ba->n_logical ||
		    (e->buffer >= 0 && ba->logical[e->buffer].id != e->buffer_id) ||
		    (e->canonical >= 0 &&
		     ba->logical[e->canonical].id != e->share_with_canonical_id))
			abort();
	}
}

static void count_point(void *arg, int64_t heap, int64_t unpadded, const char *name)
{
	(void)heap;
	(void)unpadded;
	(void)name[0];
	++*(size_t *)arg;
}

/* The buffer assignment, both ways, then the memory viewer's analysis over @p (may be NULL). */
static void buffers(const struct xprofs_reader *zr, const struct xprofs_reader *pr, size_t size,
		    const struct xprofs_hlo_program *p)
{
	struct xprofs_hlo_buffers *a = NULL, *b = NULL;
	struct xprofs_hlo_buffer_assignment ba, bb;
	struct xprofs_buf ea, eb;
	struct mv mv;
	int ra, rb;

	xprofs_buf_init(&ea, 4096);
	xprofs_buf_init(&eb, 4096);
	ra = xprofs_hlo_buffers_decode(zr, 0, size, &ea, &a);
	rb = xprofs_hlo_buffers_decode(pr, 0, size, &eb, &b);
	if (ra != rb || (ra < 0 && ra != -EINVAL && ra != -E2BIG && ra != -ENOENT) ||
	    ((ra == -EINVAL || ra == -E2BIG) && !ea.len))
		abort();
	if (ra == 0) {
		xprofs_hlo_buffers_get(a, &ba);
		xprofs_hlo_buffers_get(b, &bb);
		if (ba.n_logical != bb.n_logical || ba.n_events != bb.n_events ||
		    ba.dangling_events != bb.dangling_events)
			abort();
		assignment_check(&ba);
		if (p && stats_mv_init(&mv, p, a) == 0) {
			for (int64_t c = -1; c <= 1; c++) {
				size_t n = 0;

				if (stats_mv_color(&mv, c) < 0 ||
				    stats_mv_timeline(&mv, count_point, &n) < 0)
					break;
				if (!mv.res.err[0] && mv.res.trace >= 0 &&
				    n != ba.traces[mv.res.trace].n_events + 1)
					abort(); /* one point per event, and one after */
			}
			stats_mv_free(&mv);
		}
	}
	xprofs_hlo_buffers_free(a);
	xprofs_hlo_buffers_free(b);
	xprofs_buf_deinit(&ea);
	xprofs_buf_deinit(&eb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mem m = {data, size};
	struct xprofs_reader zr = xprofs_reader_mem(data, size);
	struct xprofs_reader pr = {.pread = mem_pread, .arg = &m, .size = size};
	struct xprofs_hlo_program *a = NULL, *b = NULL;
	struct xprofs_hlo_index *idx = NULL;
	struct xprofs_buf ea, eb;
	int ra, rb;

	xprofs_buf_init(&ea, 4096);
	xprofs_buf_init(&eb, 4096);
	ra = xprofs_hlo_program_decode(&zr, 0, size, &ea, &a);
	rb = xprofs_hlo_program_decode(&pr, 0, size, &eb, &b);
	if (ra != rb || (ra < 0 && ra != -EINVAL && ra != -E2BIG))
		abort();
	if (ra == 0) {
		struct xprofs_hlo_module ma, mb;

		xprofs_hlo_program_module(a, &ma);
		xprofs_hlo_program_module(b, &mb);
		if (ma.n_instructions != mb.n_instructions || ma.bytes != mb.bytes)
			abort();
		walk(a);
	} else if (!ea.len) {
		abort(); /* every failure says why */
	}
	buffers(&zr, &pr, size, a);
	if (xprofs_hlo_index_new(&idx) == 0) {
		(void)!xprofs_hlo_index_add_sidecar(idx, "jit_f(7).hlo_proto.pb", &zr, NULL);
		(void)!xprofs_hlo_index_add(idx, &pr, 0, size, 1, NULL, XPROFS_HLO_RANGE, NULL);
		facts(idx, a);
	}
	xprofs_hlo_index_free(idx);
	xprofs_hlo_program_free(a);
	xprofs_hlo_program_free(b);
	xprofs_buf_deinit(&ea);
	xprofs_buf_deinit(&eb);
	return 0;
}
