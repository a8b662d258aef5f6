/*
 * memory-viewer.c - XProf's memory viewer analysis of one program
 * (xprof/convert/hlo_proto_to_memory_visualization_utils.cc,
 * ConvertHloProtoToPreprocessResult()): which logical buffers are usable
 * (HloProtoBufferWrapper::Init()), which heap simulator trace a memory color
 * shows (GetHeapSimulatorTraceId()), the replay of that trace
 * (ProcessHeapSimulatorTrace(), HeapSimulatorStats: the heap size before
 * each event, the peak, the buffers live at it, each buffer's span), the
 * heap objects at the peak (CreatePeakUsageSnapshot(), PeakUsageSnapshot)
 * and the allocation sums (NoteSpecialAllocations()). docs/memory.md.
 *
 * Design: XProf's std::list of live buffer ids (copied whole at each new
 * peak) becomes an array of entries, each with the event that pushed it and
 * the one that removed it: the buffers live at the peak are read once at the
 * end, so the replay is linear in the events. The timeline is not kept: the
 * JSON side replays the trace again for each array it writes
 * (stats_mv_timeline()). Sums wrap as two's complement, as XProf's int64
 * do; a size is compared as XProf's size_t (a negative one is huge).
 * Where XProf would crash or never return (a SHARE_WITH that makes a cycle
 * of canonical buffers), the result is an error; where it iterates a hash
 * map (allocations), allocations go by index.
 *
 * Limits: the replay's memory is one 24-byte entry per event and the
 * per-buffer state (struct mv_lb); SHARE_WITH chains are followed at most
 * MV_CHAIN_WORK_MAX steps per replay.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memory-viewer.h"

static int64_t wadd(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a + (uint64_t)b);
}

static int64_t wsub(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a - (uint64_t)b);
}

bool stats_mv_indefinite(const struct xprofs_hlo_allocation *a)
{
	return a->is_thread_local || a->is_entry_computation_parameter || a->is_constant ||
	       a->maybe_live_out;
}

const char *stats_mv_category(const struct xprofs_hlo_allocation *a)
{
	if (a->is_entry_computation_parameter)
		return "Parameter";
	if (a->maybe_live_out)
		return "Output";
	if (a->is_thread_local)
		return "Thread-local";
	return a->is_constant ? "Constant" : "Temporary";
}

static void shape_add(const struct xprofs_hlo_program *p, size_t s, struct xprofs_buf *out)
{
	struct xprofs_hlo_shape sh;
	char num[24];

	if (xprofs_hlo_shape_get(p, s, &sh) < 0)
		return;
	if (sh.element_type == XPROFS_HLO_TUPLE) {
		(void)!xprofs_buf_adds(out, "(");
		for (size_t i = 0; i < sh.n_tuple && out->len < MV_SHAPE_MAX; i++) {
			if (i)
				(void)!xprofs_buf_adds(out, ", ");
			shape_add(p, sh.tuple[i], out);
		}
		(void)!xprofs_buf_adds(out, ")");
		return;
	}
	(void)!xprofs_buf_adds(out, xprofs_hlo_type_name(sh.element_type));
	(void)!xprofs_buf_adds(out, "[");
	for (size_t i = 0; i < sh.rank; i++) {
		snprintf(num, sizeof(num), "%s%" PRId64, i ? "," : "", sh.dims[i]);
		(void)!xprofs_buf_adds(out, num);
	}
	(void)!xprofs_buf_adds(out, "]");
}

void stats_mv_shape(const struct xprofs_hlo_program *p, size_t s, struct xprofs_buf *out)
{
	xprofs_buf_reset(out);
	shape_add(p, s, out); /* the reader bounds the nesting (XPROFS_HLO_TUPLE_DEPTH_MAX) */
	if (out->len > MV_SHAPE_MAX) {
		xprofs_buf_truncate(out, MV_SHAPE_MAX);
		(void)!xprofs_buf_adds(out, "...");
	}
}

/* ShapeUnpaddedSize(): XLA's ShapeUtil::ByteSizeOf() with the default layout, 8-byte pointers. */
static int64_t unpadded_size(const struct xprofs_hlo_shape *sh)
{
	unsigned bits = xprofs_hlo_type_bits(sh->element_type);

	if (sh->element_type == XPROFS_HLO_TUPLE)
		return 8 * (int64_t)sh->n_tuple;
	if (sh->element_type == XPROFS_HLO_OPAQUE)
		return 8;
	/* a token, or a type XLA would refuse, is 0; sub-byte types take a byte each */
	return bits ? (int64_t)sh->elements * (int64_t)((bits + 7) / 8) : 0;
}

/*
 * An absl::flat_hash_map filled by assignment: int64 key -> the last value
 * put. Keys in [lo, lo + span) with span at most 4 per key (instruction ids
 * usually are) go in a plain array; others through a hash table (keys in
 * @keys, the table maps a key to its slot).
 */
struct last_map {
	int64_t lo;
	uint64_t span;   /* dense: the array's length; 0: the table */
	int32_t *direct; /* dense: the value of lo + i, -1: none */
	struct xprofs_table *t;
	int64_t *keys;
	uint32_t *vals;
	size_t n;
	void *mem; /* owns direct, or keys and vals */
};

static bool key_eq(const void *ctx, uint32_t i, const void *key)
{
	return ((const struct last_map *)ctx)->keys[i] == *(const int64_t *)key;
}

/* @m for at most @n keys in [@lo, @hi]. 0 or -ENOMEM; free with map_free(). */
static int map_new(struct last_map *m, size_t n, int64_t lo, int64_t hi)
{
	uint64_t span = (uint64_t)hi - (uint64_t)lo + 1;

	memset(m, 0, sizeof(*m));
	m->lo = lo;
	if (n && span && span / 4 <= n && n < INT32_MAX) {
		m->span = span;
		if (!(m->mem = m->direct = malloc(span * sizeof(*m->direct))))
			return -ENOMEM;
		memset(m->direct, 0xff, span * sizeof(*m->direct)); /* -1 */
		return 0;
	}
	if (!(m->mem = malloc((n + 1) * (sizeof(*m->keys) + sizeof(*m->vals)))))
		return -ENOMEM;
	m->keys = m->mem;
	m->vals = (uint32_t *)(void *)(m->keys + n + 1);
	return xprofs_table_new(n + 1, &m->t) < 0 ? -ENOMEM : 0;
}

static void map_free(struct last_map *m)
{
	xprofs_table_free(m->t);
	free(m->mem);
}

static int map_put(struct last_map *m, int64_t key, uint32_t val)
{
	uint64_t h;
	uint32_t at;

	if (m->span) {
		m->direct[(uint64_t)key - (uint64_t)m->lo] = (int32_t)val;
		return 0;
	}
	h = xprofs_table_hash(0, &key, sizeof(key));
	if (xprofs_table_find(m->t, h, key_eq, m, &key, &at) < 0) {
		if (xprofs_table_add(m->t, h, (uint32_t)m->n) < 0)
			return -ENOMEM;
		at = (uint32_t)m->n++;
		m->keys[at] = key;
	}
	m->vals[at] = val;
	return 0;
}

/* The last value put for @key, or -1. */
static int64_t map_get(const struct last_map *m, int64_t key)
{
	uint32_t at;

	if (m->span)
		return (uint64_t)key - (uint64_t)m->lo < m->span
			       ? m->direct[(uint64_t)key - (uint64_t)m->lo]
			       : -1;
	if (xprofs_table_find(m->t, xprofs_table_hash(0, &key, sizeof(key)), key_eq, m, &key, &at) <
	    0)
		return -1;
	return m->vals[at];
}

/* The logical buffer struct of index @bi: its shape and unpadded size (LogicalBufferStruct()). */
static void lb_make(struct mv *mv, size_t bi, uint32_t a, uint32_t instr, int64_t offset)
{
	const struct xprofs_hlo_logical_buffer *l = &mv->ba.logical[bi];
	struct mv_lb *lb = &mv->lb[bi];
	struct xprofs_hlo_instr in;
	struct xprofs_hlo_shape sh;

	lb->alloc = (int32_t)a;
	lb->instr = (int32_t)instr;
	lb->offset = offset;
	lb->unpadded = 0;
	if (xprofs_hlo_instr_get(mv->p, instr, &in) < 0)
		return;
	lb->shape = in.shape;
	/* ResolveShapeIndex(): the last index picks a tuple element when there is one */
	if (l->n_shape_index && xprofs_hlo_shape_get(mv->p, in.shape, &sh) == 0) {
		int64_t k = l->shape_index[l->n_shape_index - 1];

		if (k >= 0 && (uint64_t)k < sh.n_tuple)
			lb->shape = sh.tuple[k];
	}
	if (xprofs_hlo_shape_get(mv->p, lb->shape, &sh) == 0)
		lb->unpadded = unpadded_size(&sh);
}

/* Allocation positions by their allocations' index (distinct: one per index). */
static int by_index(const void *a, const void *b, void *arg)
{
	const struct xprofs_hlo_allocation *al = arg;
	int64_t x = al[*(const uint32_t *)a].index, y = al[*(const uint32_t *)b].index;

	return (x > y) - (x < y);
}

/* HloProtoBufferWrapper::Init(): usable logical buffers, the allocation map, trace ids. */
static int wrap(struct mv *mv, const struct last_map *ins, struct last_map *allocs)
{
	const struct xprofs_hlo_buffer_assignment *ba = &mv->ba;

	for (size_t a = 0; a < ba->n_allocations; a++) {
		const struct xprofs_hlo_allocation *al = &ba->allocations[a];

		if (map_put(allocs, al->index, (uint32_t)a) < 0) /* id_to_buffer_allocation_ */
			return -ENOMEM;
		for (size_t k = al->first_assigned; k < al->first_assigned + al->n_assigned; k++) {
			const struct xprofs_hlo_assigned *as = &ba->assigned[k];
			int64_t instr =
				as->buffer < 0
					? -1
					: map_get(ins, ba->logical[as->buffer].instruction_id);

			if (instr < 0) {
				mv->unusable_assigned++; /* XProf: LOG(DFATAL), skipped */
				continue;
			}
			lb_make(mv, (size_t)as->buffer, (uint32_t)a, (uint32_t)instr, as->offset);
		}
	}
	/* the map's allocations, by index (XProf iterates its hash map) */
	memcpy(mv->amap, allocs->vals, allocs->n * sizeof(*mv->amap));
	mv->n_amap = allocs->n;
	qsort_r(mv->amap, mv->n_amap, sizeof(*mv->amap), by_index, (void *)ba->allocations);
	/* a trace belongs to the allocation of its first event's buffer */
	for (size_t t = 0; t < ba->n_traces; t++) {
		const struct xprofs_hlo_heap_trace *tr = &ba->traces[t];
		int32_t bi = tr->n_events ? ba->events[tr->first_event].buffer : -1;
		int64_t a;

		if (bi < 0 || mv->lb[bi].alloc < 0)
			continue;
		a = map_get(allocs, ba->allocations[mv->lb[bi].alloc].index);
		if (a >= 0)
			mv->trace_of[a] = (int64_t)t;
	}
	return 0;
}

/* The smallest and largest instruction id of @p (@n instructions; hi < lo when none). */
static void ids_range(const struct xprofs_hlo_program *p, size_t n, int64_t *lo, int64_t *hi)
{
	struct xprofs_hlo_instr in;

	*lo = INT64_MAX;
	*hi = INT64_MIN;
	for (size_t i = 0; i < n; i++) {
		if (xprofs_hlo_instr_get(p, i, &in) < 0)
			continue;
		*lo = in.id < *lo ? in.id : *lo;
		*hi = in.id > *hi ? in.id : *hi;
	}
}

int stats_mv_init(struct mv *mv, const struct xprofs_hlo_program *p,
		  const struct xprofs_hlo_buffers *b)
{
	struct xprofs_hlo_module mod;
	struct last_map ins, allocs;
	int64_t lo, hi;
	size_t na;
	int r = -ENOMEM;

	memset(mv, 0, sizeof(*mv));
	memset(&ins, 0, sizeof(ins));
	memset(&allocs, 0, sizeof(allocs));
	mv->p = p;
	mv->b = b;
	xprofs_hlo_buffers_get(b, &mv->ba);
	xprofs_hlo_program_module(p, &mod);
	na = mv->ba.n_allocations;
	mv->lb = calloc(mv->ba.n_logical + 1, sizeof(*mv->lb));
	mv->amap = malloc((na + 1) * sizeof(*mv->amap));
	mv->trace_of = malloc((na + 1) * sizeof(*mv->trace_of));
	mv->aseen = calloc(na + 1, 1);
	if (ids_range(p, mod.n_instructions, &lo, &hi),
	    map_new(&ins, mod.n_instructions, lo, hi) < 0 || map_new(&allocs, na, 1, 0) < 0 ||
		    !mv->lb || !mv->amap || !mv->trace_of || !mv->aseen)
		goto out;
	for (size_t i = 0; i < mv->ba.n_logical; i++)
		mv->lb[i].alloc = mv->lb[i].canonical = mv->lb[i].alive = -1;
	for (size_t a = 0; a < na; a++)
		mv->trace_of[a] = -1;
	/* unique_id_to_hlo: every instruction of every computation, the last of an id wins */
	for (size_t i = 0; i < mod.n_instructions; i++) {
		struct xprofs_hlo_instr in;

		if (xprofs_hlo_instr_get(p, i, &in) == 0 && map_put(&ins, in.id, (uint32_t)i) < 0)
			goto out;
	}
	r = wrap(mv, &ins, &allocs);
out:
	map_free(&ins);
	map_free(&allocs);
	if (r < 0)
		stats_mv_free(mv);
	return r;
}

void stats_mv_free(struct mv *mv)
{
	free(mv->lb);
	free(mv->amap);
	free(mv->trace_of);
	free(mv->aseen);
	free(mv->ent);
	free(mv->res.heap);
	free(mv->res.peak_lbs);
	memset(mv, 0, sizeof(*mv));
}

/* ---- the replay (ProcessHeapSimulatorTrace()) ------------------------------- */

struct replay {
	struct mv *mv;
	int64_t n; /* events of the trace */
	int64_t heap, unpadded;
	bool peaked;
	size_t n_seen_allocs;
	char *err; /* mv->res.err */
};

#define FAIL(rp, ...) (snprintf((rp)->err, sizeof((rp)->mv->res.err), __VA_ARGS__), -EINVAL)

/* get_canonical_buffer(): the end of @bi's SHARE_WITH chain, or -1 past the work budget. */
static int32_t root_of(struct replay *rp, int32_t bi)
{
	struct mv *mv = rp->mv;

	while (mv->lb[bi].canonical >= 0) {
		if (++mv->chain_work > MV_CHAIN_WORK_MAX)
			return -1;
		bi = mv->lb[bi].canonical;
	}
	return bi;
}

/* IncreaseMemoryUsage() of buffer @bi at event @e. */
static int increase(struct replay *rp, int32_t bi, int64_t e, bool init_span)
{
	struct mv *mv = rp->mv;
	struct mv_lb *lb = &mv->lb[bi];
	struct mv_ent *en;
	int r;

	if ((r = xprofs_grow(&mv->ent, &mv->cap_ent, mv->n_ent, sizeof(*mv->ent), 1024)) < 0)
		return r;
	en = &mv->ent[mv->n_ent];
	*en = (struct mv_ent){bi, lb->alive, e, INT64_MAX};
	lb->alive = (int32_t)mv->n_ent++;
	rp->heap = wadd(rp->heap, mv->ba.logical[bi].size);
	rp->unpadded = wadd(rp->unpadded, lb->unpadded);
	if (rp->heap > mv->res.peak) { /* peak = max(peak, heap) changed */
		mv->res.peak = rp->heap;
		mv->res.peak_pos = e;
		mv->res.peak_unpadded = rp->unpadded;
		rp->peaked = true;
	}
	if (init_span) {
		lb->has_span = true;
		lb->span0 = e;
		lb->span1 = rp->n - 1;
	}
	return 0;
}

/* DecreaseMemoryUsage() of buffer @bi at event @e: every entry of it leaves the list. */
static int decrease(struct replay *rp, int32_t bi, int64_t e)
{
	struct mv *mv = rp->mv;
	struct mv_lb *lb = &mv->lb[bi];

	for (int32_t k = lb->alive; k >= 0; k = mv->ent[k].next)
		mv->ent[k].died = e;
	lb->alive = -1;
	rp->heap = wsub(rp->heap, mv->ba.logical[bi].size);
	if (rp->heap < 0)
		return FAIL(rp, "Heap size should be non-negative, but get: %" PRId64, rp->heap);
	rp->unpadded = wsub(rp->unpadded, lb->unpadded);
	if (lb->has_span)
		lb->span1 = e;
	return 0;
}

/* SHARE_WITH: @bi shares @ci's memory (share_with()); a cycle is an error. */
static int share(struct replay *rp, int32_t bi, int32_t ci, int64_t e)
{
	struct mv *mv = rp->mv;
	int32_t root;

	for (int32_t k = ci;; k = mv->lb[k].canonical) {
		if (k == bi)
			return FAIL(rp,
				    "SHARE_WITH of buffer %" PRId64 " with %" PRId64
				    " makes a cycle of canonical buffers",
				    mv->ba.logical[bi].id, mv->ba.logical[ci].id);
		if (mv->lb[k].canonical < 0)
			break;
		if (++mv->chain_work > MV_CHAIN_WORK_MAX)
			return FAIL(rp, "SHARE_WITH chains past %" PRIu64 " steps",
				    MV_CHAIN_WORK_MAX);
	}
	mv->lb[bi].canonical = ci;
	root = root_of(rp, ci);
	if (root < 0)
		return FAIL(rp, "SHARE_WITH chains past %" PRIu64 " steps", MV_CHAIN_WORK_MAX);
	if (++mv->lb[root].ref == 1)
		return increase(rp, ci, e, false);
	return 0;
}

static int event(struct replay *rp, const struct xprofs_hlo_heap_event *ev, int64_t e)
{
	struct mv *mv = rp->mv;
	int32_t bi = ev->buffer, root;

	if (!mv->lb[bi].seen)
		mv->lb[bi].seen = true;
	if (!mv->aseen[mv->lb[bi].alloc]) {
		mv->aseen[mv->lb[bi].alloc] = 1;
		rp->n_seen_allocs++;
	}
	if (ev->kind == XPROFS_HLO_HEAP_SHARE_WITH) {
		if (ev->canonical < 0 || mv->lb[ev->canonical].alloc < 0)
			return 0; /* GetLogicalBuffer() of the canonical id is null: skipped */
		return share(rp, bi, ev->canonical, e);
	}
	if (ev->kind != XPROFS_HLO_HEAP_ALLOC && ev->kind != XPROFS_HLO_HEAP_FREE)
		return FAIL(rp, "Unhandled event kind: %" PRId32, ev->kind);
	if ((root = root_of(rp, bi)) < 0)
		return FAIL(rp, "SHARE_WITH chains past %" PRIu64 " steps", MV_CHAIN_WORK_MAX);
	if (ev->kind == XPROFS_HLO_HEAP_ALLOC) {
		mv->lb[root].ref++;
		return increase(rp, bi, e, true);
	}
	if (--mv->lb[root].ref < 0)
		return FAIL(rp, "Buffer %" PRId64 " is freed multiple times.",
			    mv->ba.logical[bi].id);
	return mv->lb[root].ref == 0 ? decrease(rp, root, e) : 0;
}

/* Replay trace mv->res.trace, calling @fn (may be NULL) at each timeline point. */
static int replay(struct mv *mv, mv_point_fn fn, void *arg)
{
	const struct xprofs_hlo_buffer_assignment *ba = &mv->ba;
	const struct xprofs_hlo_heap_trace *tr;
	struct replay rp = {.mv = mv, .err = mv->res.err};
	int r = 0;

	for (size_t i = 0; i < ba->n_logical; i++) {
		struct mv_lb *lb = &mv->lb[i];

		lb->ref = 0;
		lb->canonical = lb->alive = -1;
		lb->has_span = lb->seen = false;
	}
	memset(mv->aseen, 0, ba->n_allocations);
	mv->n_ent = 0;
	mv->chain_work = 0;
	mv->unusable_events = 0;
	mv->res.peak = mv->res.peak_unpadded = mv->res.peak_pos = 0;
	mv->res.err[0] = 0;
	if (mv->res.trace < 0 || (uint64_t)mv->res.trace >= ba->n_traces)
		return 0; /* no trace: nothing replayed, no timeline */
	tr = &ba->traces[mv->res.trace];
	rp.n = (int64_t)tr->n_events;
	for (size_t i = 0; i < tr->n_events && r == 0; i++) {
		const struct xprofs_hlo_heap_event *ev = &ba->events[tr->first_event + i];

		if (fn)
			fn(arg, rp.heap, rp.unpadded, xprofs_hlo_buffers_str(mv->b, ev->name));
		if (ev->buffer < 0 || mv->lb[ev->buffer].alloc < 0) {
			mv->unusable_events++; /* XProf: GetLogicalBuffer() null, skipped */
			continue;
		}
		r = event(&rp, ev, (int64_t)i);
	}
	if (r < 0)
		return r;
	if (fn)
		fn(arg, rp.heap, rp.unpadded, "");
	if (rp.n_seen_allocs != 1)
		return FAIL(&rp,
			    "All heap simulation should work out of a single buffer allocation, "
			    "actual seen_buffer_allocations.size():%zu",
			    rp.n_seen_allocs);
	if (!rp.peaked)
		return 0;
	/* peak_logical_buffers: the list as it was at the peak, in push order */
	for (size_t k = 0; k < mv->n_ent; k++) {
		const struct mv_ent *en = &mv->ent[k];

		if (en->born <= mv->res.peak_pos && en->died > mv->res.peak_pos)
			mv->res.peak_lbs[mv->res.n_peak_lbs++] = en->lb;
	}
	return 0;
}

int stats_mv_timeline(struct mv *mv, mv_point_fn fn, void *arg)
{
	size_t n = mv->res.n_peak_lbs;
	int r;

	mv->res.n_peak_lbs = 0;
	r = replay(mv, fn, arg);
	mv->res.n_peak_lbs = n; /* the same replay again: the same list */
	return r == -EINVAL ? 0 : r;
}

/* GetHeapSimulatorTraceId(): the trace of the color's first temporary allocation, else by events. */
static int64_t trace_id(const struct mv *mv, int64_t color)
{
	const struct xprofs_hlo_buffer_assignment *ba = &mv->ba;
	int64_t best = -1, best_count = 0;

	for (size_t m = 0; m < mv->n_amap; m++) {
		const struct xprofs_hlo_allocation *al = &ba->allocations[mv->amap[m]];

		if (al->color == color && !stats_mv_indefinite(al) &&
		    mv->trace_of[mv->amap[m]] >= 0)
			return mv->trace_of[mv->amap[m]];
	}
	for (size_t t = 0; t < ba->n_traces; t++) {
		const struct xprofs_hlo_heap_trace *tr = &ba->traces[t];
		int64_t count = 0;

		for (size_t i = tr->first_event; i < tr->first_event + tr->n_events; i++) {
			int32_t bi = ba->events[i].buffer;

			if (bi >= 0 && mv->lb[bi].alloc >= 0 && ba->logical[bi].color == color)
				count++;
		}
		if (count > best_count) {
			best = (int64_t)t;
			best_count = count;
		}
	}
	return best;
}

/* AddHeapObject(): a buffer below the small size joins the "small" object. */
static int heap_object(struct mv_res *res, const struct mv *mv, int32_t bi)
{
	int64_t size = mv->ba.logical[bi].size;

	if ((uint64_t)size < MV_SMALL_BUFFER_SIZE) {
		res->small_bytes = wadd(res->small_bytes, size);
		return 0;
	}
	if (xprofs_grow(&res->heap, &res->cap_heap, res->n_heap, sizeof(*res->heap), 64) < 0)
		return -ENOMEM;
	res->heap[res->n_heap++] = bi;
	return 0;
}

/* The sums of NoteSpecialAllocations() and CreatePeakUsageSnapshot()'s indefinite buffers. */
static int sums(struct mv *mv, struct mv_res *res)
{
	const struct xprofs_hlo_buffer_assignment *ba = &mv->ba;

	for (size_t a = 0; a < ba->n_allocations; a++) /* ComputeTotalAllocationBytes() */
		if (ba->allocations[a].color == res->color)
			res->total = wadd(res->total, ba->allocations[a].size);
	for (size_t m = 0; m < mv->n_amap; m++) {
		const struct xprofs_hlo_allocation *al = &ba->allocations[mv->amap[m]];
		int32_t best = -1;
		uint64_t best_size = 0;

		if (al->color != res->color)
			continue;
		res->n_allocations++;
		if (al->is_entry_computation_parameter)
			res->entry_params = wadd(res->entry_params, al->size);
		if (al->is_thread_local || al->is_tuple) /* !IsReusable() */
			res->non_reusable = wadd(res->non_reusable, al->size);
		if (al->maybe_live_out)
			res->maybe_live_out = wadd(res->maybe_live_out, al->size);
		if (!stats_mv_indefinite(al))
			continue;
		res->indefinite = wadd(res->indefinite, al->size);
		/* LogicalBuffersWithIndefiniteLifetime(): its largest usable buffer */
		for (size_t k = al->first_assigned; k < al->first_assigned + al->n_assigned; k++) {
			int32_t bi = ba->assigned[k].buffer;

			if (bi >= 0 && mv->lb[bi].alloc >= 0 &&
			    (uint64_t)ba->logical[bi].size > best_size) {
				best_size = (uint64_t)ba->logical[bi].size;
				best = bi;
			}
		}
		if (best < 0)
			continue;
		res->indefinite_usage =
			wadd(res->indefinite_usage, ba->allocations[mv->lb[best].alloc].size);
		if (heap_object(res, mv, best) < 0)
			return -ENOMEM;
	}
	return 0;
}

int stats_mv_color(struct mv *mv, int64_t color)
{
	struct mv_res *res = &mv->res;
	int r;

	free(res->heap);
	free(res->peak_lbs);
	memset(res, 0, sizeof(*res));
	res->color = color;
	res->trace = trace_id(mv, color);
	if (!(res->peak_lbs = malloc((mv->ba.n_events + 1) * sizeof(*res->peak_lbs))))
		return -ENOMEM;
	/* the sums (and the indefinite heap objects, which come first) stand beside an error */
	if ((r = sums(mv, res)) < 0)
		return r;
	r = replay(mv, NULL, NULL);
	if (r == -EINVAL)
		return 0; /* XProf's error: res->err */
	if (r < 0)
		return r;
	for (size_t i = 0; i < res->n_peak_lbs; i++) /* FinalizeBufferUsage() */
		if (heap_object(res, mv, res->peak_lbs[i]) < 0)
			return -ENOMEM;
	if (res->small_bytes != 0) {
		if (xprofs_grow(&res->heap, &res->cap_heap, res->n_heap, sizeof(*res->heap), 64) <
		    0)
			return -ENOMEM;
		res->heap[res->n_heap++] = -1;
	}
	return 0;
}
