/*
 * view-memory-viewer.c - memory_viewer.json: XProf's memory viewer
 * (PreprocessResult of hlo_proto_to_memory_visualization_utils.cc) for each
 * program of the profile whose HloProto has a buffer assignment, with the
 * breakdown per memory space (memory color) besides (docs/memory.md).
 *
 * Design: the programs come from the render's HLO index (metadata plane,
 * then sidecars; xprofs_hlo_lazy_index()); of a program id the first copy
 * with a buffer assignment is listed (XProf's HloProtoMap keeps the first
 * copy; a metadata plane's copy may lack the assignment its sidecar has). Each program's buffer assignment is
 * decoded first (cheap when there is none: the top-level fields are
 * skipped), then the program, one program at a time; memory-viewer.c makes
 * each color's result, and the heap size timeline is written by replaying
 * the trace once per array. The memory color shown in full is XProf's
 * default, 0.
 *
 * Limits: MV_COLORS_MAX memory colors per program in the breakdown;
 * MV_NOTES_MAX lines in "errors" (then a count). A program that does not
 * decode is left out with its reason in "errors"; XProf's own errors (a
 * buffer freed twice, a heap below 0, a trace of several allocations) are
 * the program's "error".
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memory-viewer.h"
#include "xprofs/stats.h"

#define MV_COLORS_MAX 64
#define MV_NOTES_MAX 64
#define MIB(b) ((double)(b) / (double)(1ull << 20)) /* XProf's BytesToMiB() */

struct notes {
	char *s[MV_NOTES_MAX];
	size_t n, more;
};

static void note(struct notes *nt, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void note(struct notes *nt, const char *fmt, ...)
{
	va_list ap;

	if (nt->n >= MV_NOTES_MAX) {
		nt->more++;
		return;
	}
	va_start(ap, fmt);
	if (vasprintf(&nt->s[nt->n], fmt, ap) >= 0)
		nt->n++;
	va_end(ap);
}

static int64_t wsum(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a + (uint64_t)b);
}

static void key_mib(struct xs_out *o, const char *lit, int64_t bytes)
{
	xs_out_add(o, lit, strlen(lit));
	xs_out_double(o, MIB(bytes));
}

/* The JSON side's scratch: shape strings. */
struct vw {
	struct xs_out *o;
	struct mv *mv;
	struct xprofs_buf shape, common;
	int which; /* the timeline array being written: 0 heap, 1 unpadded, 2 names */
	bool first;
	int64_t add;                 /* indefinite_memory_usage_bytes, added to each point */
	struct xprofs_table *listed; /* program ids listed so far: positions in ids */
	uint64_t *ids;
	size_t n_ids, cap_ids;
};

static bool id_eq(const void *ctx, uint32_t i, const void *key)
{
	return ((const struct vw *)ctx)->ids[i] == *(const uint64_t *)key;
}

static void point(void *arg, int64_t heap, int64_t unpadded, const char *name)
{
	struct vw *w = arg;

	OUT_RAW(w->o, w->first ? "" : ",");
	w->first = false;
	if (w->which == 2)
		xs_out_cstr(w->o, name);
	else
		xs_out_double(w->o, MIB(w->which ? unpadded : heap) + MIB(w->add));
}

static int timeline(struct vw *w)
{
	static const char *const keys[] = {",\"heap_sizes\":[", ",\"unpadded_heap_sizes\":[",
					   ",\"hlo_instruction_names\":["};
	int r;

	for (w->which = 0; w->which < 3; w->which++) {
		OUT_RAW(w->o, keys[w->which]);
		w->first = true;
		if ((r = stats_mv_timeline(w->mv, point, w)) < 0)
			return r;
		OUT_LIT(w->o, "]");
		if ((r = xs_out_flush(w->o, false)) < 0)
			return r;
	}
	return 0;
}

/* A HeapObject (MakeHeapObject()); @bi -1: the "small" one. */
static void heap_object(struct vw *w, int32_t bi, int32_t numbered)
{
	const struct mv *mv = w->mv;
	struct xs_out *o = w->o;
	const struct xprofs_hlo_logical_buffer *l;
	const struct mv_lb *lb;
	struct xprofs_hlo_instr in;
	char small[48];

	xs_out_key_i64(o, "{\"numbered\":", numbered);
	if (bi < 0) {
		snprintf(small, sizeof(small), "small (<%d bytes)", MV_SMALL_BUFFER_SIZE);
		xs_out_key_cstr(o, ",\"label\":", small);
		OUT_LIT(o, ",\"logical_buffer_id\":-1");
		key_mib(o, ",\"logical_buffer_size_mib\":", mv->res.small_bytes);
		OUT_LIT(o, ",\"unpadded_shape_mib\":0");
		xs_out_key_i64(o, ",\"size_bytes\":", mv->res.small_bytes);
		OUT_LIT(o, ",\"unpadded_size_bytes\":0}");
		return;
	}
	l = &mv->ba.logical[bi];
	lb = &mv->lb[bi];
	if (xprofs_hlo_instr_get(mv->p, (size_t)lb->instr, &in) < 0)
		memset(&in, 0, sizeof(in));
	stats_mv_shape(mv->p, lb->shape, &w->shape);
	OUT_LIT(o, ",\"label\":");
	{
		char *label = NULL;

		if (asprintf(&label, "%s: %s # %s", in.name ? in.name : "",
			     w->shape.data ? w->shape.data : "", in.op_name ? in.op_name : "") < 0)
			label = NULL;
		xs_out_cstr(o, label ? label : "");
		free(label);
	}
	xs_out_key_i64(o, ",\"logical_buffer_id\":", l->id);
	key_mib(o, ",\"logical_buffer_size_mib\":", l->size);
	key_mib(o, ",\"unpadded_shape_mib\":", lb->unpadded);
	OUT_LIT(o, ",\"instruction_name\":");
	/* GetInstructionNameWithShapeIndex(): "name{0,1}" */
	{
		struct xprofs_buf nm;

		xprofs_buf_init(&nm, XPROFS_HLO_STR_MAX + 512);
		(void)!xprofs_buf_adds(&nm, in.name ? in.name : "");
		for (size_t i = 0; i < l->n_shape_index; i++)
			(void)!xprofs_buf_printf(&nm, "%s%" PRId64, i ? "," : "{",
						 l->shape_index[i]);
		if (l->n_shape_index)
			(void)!xprofs_buf_adds(&nm, "}");
		xs_out_str(o, nm.data ? nm.data : "", nm.len);
		xprofs_buf_deinit(&nm);
	}
	xs_out_key_cstr(o, ",\"group_name\":", stats_mv_category(&mv->ba.allocations[lb->alloc]));
	xs_out_key_cstr(o, ",\"tf_op_name\":", in.op_name ? in.op_name : "");
	OUT_LIT(o, ",\"shape_string\":");
	xs_out_str(o, w->shape.data ? w->shape.data : "", w->shape.len);
	xs_out_key_cstr(o, ",\"op_code\":", in.opcode ? in.opcode : "");
	xs_out_key_i64(o, ",\"size_bytes\":", l->size);
	xs_out_key_i64(o, ",\"unpadded_size_bytes\":", lb->unpadded);
	if (in.source_file && in.source_file[0]) {
		xs_out_key_cstr(o, ",\"source_info\":{\"file_name\":", in.source_file);
		xs_out_key_i64(o, ",\"line_number\":", in.source_line);
		OUT_LIT(o, "}");
	}
	OUT_LIT(o, "}");
}

static int by_size_cmp(const void *a, const void *b, void *arg)
{
	const struct mv *mv = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	int32_t bx = mv->res.heap[x], by = mv->res.heap[y];
	double sx = MIB(bx < 0 ? mv->res.small_bytes : mv->ba.logical[bx].size);
	double sy = MIB(by < 0 ? mv->res.small_bytes : mv->ba.logical[by].size);

	if (sx != sy)
		return sx > sy ? -1 : 1;
	return x < y ? -1 : x > y; /* XProf's std::sort leaves ties unspecified */
}

/* max_heap, by_size_to_max_heap, max_heap_to_by_size. */
static int heap_objects(struct vw *w)
{
	const struct mv_res *res = &w->mv->res;
	struct xs_out *o = w->o;
	uint32_t *ord = malloc((res->n_heap + 1) * 2 * sizeof(*ord)), *inv;

	if (!ord)
		return -ENOMEM;
	inv = ord + res->n_heap + 1;
	OUT_LIT(o, ",\"max_heap\":[");
	for (size_t i = 0; i < res->n_heap; i++) {
		OUT_RAW(o, i ? "," : "");
		heap_object(w, res->heap[i], (int32_t)i);
		ord[i] = (uint32_t)i;
	}
	qsort_r(ord, res->n_heap, sizeof(*ord), by_size_cmp, w->mv);
	OUT_LIT(o, "],\"by_size_to_max_heap\":[");
	for (size_t i = 0; i < res->n_heap; i++) {
		OUT_RAW(o, i ? "," : "");
		xs_out_u64(o, ord[i]);
		inv[ord[i]] = (uint32_t)i;
	}
	OUT_LIT(o, "],\"max_heap_to_by_size\":[");
	for (size_t i = 0; i < res->n_heap; i++) {
		OUT_RAW(o, i ? "," : "");
		xs_out_u64(o, inv[i]);
	}
	OUT_LIT(o, "],\"peak_logical_buffer_ids\":[");
	for (size_t i = 0; i < res->n_peak_lbs; i++) {
		OUT_RAW(o, i ? "," : "");
		xs_out_i64(o, w->mv->ba.logical[res->peak_lbs[i]].id);
	}
	OUT_LIT(o, "]");
	free(ord);
	return xs_out_flush(o, false);
}

/* logical_buffer_spans of the buffers the replay saw with a span, by id. */
static void spans(struct vw *w)
{
	const struct mv *mv = w->mv;
	bool first = true;

	OUT_LIT(w->o, ",\"logical_buffer_spans\":{");
	for (size_t i = 0; i < mv->ba.n_logical; i++) {
		const struct mv_lb *lb = &mv->lb[i];
		char key[48];

		if (lb->alloc < 0 || !lb->seen || !lb->has_span)
			continue;
		snprintf(key, sizeof(key), "%s\"%" PRId64 "\":{\"start\":", first ? "" : ",",
			 mv->ba.logical[i].id);
		OUT_RAW(w->o, key);
		xs_out_i64(w->o, (int32_t)lb->span0); /* BufferSpan's fields are int32 */
		xs_out_key_i64(w->o, ",\"limit\":", (int32_t)lb->span1);
		OUT_LIT(w->o, "}");
		first = false;
	}
	OUT_LIT(w->o, "}");
}

/* indefinite_lifetimes: Convert(BufferAllocationProto) of each indefinite allocation. */
static void indefinite(struct vw *w)
{
	const struct mv *mv = w->mv;
	struct xs_out *o = w->o;
	bool first = true;

	OUT_LIT(o, ",\"indefinite_lifetimes\":[");
	for (size_t m = 0; m < mv->n_amap; m++) {
		const struct xprofs_hlo_allocation *al = &mv->ba.allocations[mv->amap[m]];
		bool common = true;

		if (al->color != mv->res.color || !stats_mv_indefinite(al))
			continue;
		xprofs_buf_reset(&w->common);
		xs_out_key_i64(o, first ? "{\"id\":" : ",{\"id\":", al->index);
		first = false;
		key_mib(o, ",\"size_mib\":", al->size);
		OUT_LIT(o, ",\"attributes\":[");
		OUT_RAW(o, al->is_entry_computation_parameter ? "\"entry computation parameter\""
							      : "");
		if (al->maybe_live_out)
			OUT_RAW(o, al->is_entry_computation_parameter ? ",\"may-be live out\""
								      : "\"may-be live out\"");
		if (!al->is_thread_local && !al->is_tuple) /* IsReusable() */
			OUT_RAW(o, al->is_entry_computation_parameter || al->maybe_live_out
					   ? ",\"reusable\""
					   : "\"reusable\"");
		OUT_LIT(o, "],\"logical_buffers\":[");
		for (size_t k = 0; k < al->n_assigned; k++) {
			const struct xprofs_hlo_assigned *as =
				&mv->ba.assigned[al->first_assigned + k];
			const struct xprofs_hlo_logical_buffer *l;
			struct xprofs_hlo_instr in;

			xs_out_key_i64(o, k ? ",{\"id\":" : "{\"id\":", as->logical_buffer_id);
			key_mib(o, ",\"size_mib\":", as->size);
			if (as->buffer < 0 || mv->lb[as->buffer].alloc < 0 ||
			    xprofs_hlo_instr_get(mv->p, (size_t)mv->lb[as->buffer].instr, &in) <
				    0) {
				common = false; /* no shape: "" differs from any other */
				OUT_LIT(o, "}");
				continue;
			}
			l = &mv->ba.logical[as->buffer];
			xs_out_key_cstr(o, ",\"hlo_name\":", in.name);
			OUT_LIT(o, ",\"shape_index\":[");
			for (size_t i = 0; i < l->n_shape_index; i++) {
				OUT_RAW(o, i ? "," : "");
				xs_out_i64(o, l->shape_index[i]);
			}
			stats_mv_shape(mv->p, mv->lb[as->buffer].shape, &w->shape);
			OUT_LIT(o, "],\"shape\":");
			xs_out_str(o, w->shape.data ? w->shape.data : "", w->shape.len);
			OUT_LIT(o, "}");
			if (k == 0) /* the first one's shape, to compare the others' with */
				(void)!xprofs_buf_add(&w->common,
						      w->shape.data ? w->shape.data : "",
						      w->shape.len);
			else if (w->shape.len != w->common.len ||
				 memcmp(w->shape.data ? w->shape.data : "",
					w->common.data ? w->common.data : "", w->shape.len))
				common = false;
		}
		OUT_LIT(o, "]");
		if (common && w->common.len) { /* XProf sets a common shape that is not "" */
			OUT_LIT(o, ",\"common_shape\":");
			xs_out_str(o, w->common.data, w->common.len);
		}
		OUT_LIT(o, "}");
	}
	OUT_LIT(o, "]");
}

/* One memory color's figures, for the breakdown per memory space. */
static void space(struct xs_out *o, const struct mv_res *res, bool first)
{
	xs_out_key_i64(o, first ? "{\"memory_color\":" : ",{\"memory_color\":", res->color);
	xs_out_key_i64(o, ",\"heap_simulator_trace_id\":", res->trace);
	xs_out_key_u64(o, ",\"buffer_allocations\":", res->n_allocations);
	if (res->err[0]) {
		xs_out_key_cstr(o, ",\"error\":", res->err);
	} else {
		OUT_LIT(o, ",\"error\":null");
		xs_out_key_i64(o, ",\"peak_heap_bytes\":", wsum(res->peak, res->indefinite_usage));
		xs_out_key_i64(o, ",\"peak_unpadded_heap_bytes\":",
			       wsum(res->peak_unpadded, res->indefinite_usage));
		xs_out_key_i64(o, ",\"indefinite_memory_usage_bytes\":", res->indefinite_usage);
		OUT_LIT(o, ",\"peak_heap_mib\":");
		xs_out_double(o, MIB(res->peak) + MIB(res->indefinite_usage));
	}
	xs_out_key_i64(o, ",\"total_buffer_allocation_bytes\":", res->total);
	xs_out_key_i64(o, ",\"indefinite_buffer_allocation_bytes\":", res->indefinite);
	OUT_LIT(o, "}");
}

/* The colors of @mv's allocations, ascending and distinct, at most MV_COLORS_MAX. */
static size_t colors(const struct mv *mv, int64_t *out, bool *cut)
{
	size_t n = 0;

	*cut = false;
	for (size_t a = 0; a < mv->ba.n_allocations; a++) {
		int64_t c = mv->ba.allocations[a].color;
		size_t i = 0;

		while (i < n && out[i] < c)
			i++;
		if (i < n && out[i] == c)
			continue;
		if (n == MV_COLORS_MAX) {
			*cut = true;
			continue;
		}
		memmove(out + i + 1, out + i, (n - i) * sizeof(*out));
		out[i] = c;
		n++;
	}
	return n;
}

/* The PreprocessResult of the shown color (mv->res), after the program's identity. */
static int detail(struct vw *w)
{
	const struct mv_res *res = &w->mv->res;
	struct xs_out *o = w->o;
	char msg[320];
	int r;

	xs_out_key_i64(o, ",\"memory_color\":", res->color);
	if (res->err[0]) { /* ConvertHloProtoToPreprocessResult()'s InvalidArgument */
		snprintf(msg, sizeof(msg), "Failed to process heap simulator trace: %s", res->err);
		xs_out_key_cstr(o, ",\"error\":", msg);
		return 0;
	}
	{
		const int64_t add = res->indefinite_usage;
		const struct {
			const char *key;
			int64_t v;
			bool mib;
		} f[] = {
			{",\"error\":null,\"heap_simulator_trace_id\":", res->trace, false},
			{",\"peak_heap_size_position\":", res->peak_pos, false},
			{",\"peak_heap_bytes\":", wsum(res->peak, add), false},
			{",\"peak_unpadded_heap_bytes\":", wsum(res->peak_unpadded, add), false},
			{",\"indefinite_memory_usage_bytes\":", add, false},
			{",\"entry_computation_parameters_mib\":", res->entry_params, true},
			{",\"non_reusable_mib\":", res->non_reusable, true},
			{",\"maybe_live_out_mib\":", res->maybe_live_out, true},
			{",\"total_buffer_allocation_mib\":", res->total, true},
			{",\"indefinite_buffer_allocation_mib\":", res->indefinite, true},
		};

		for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
			if (f[i].mib)
				key_mib(o, f[i].key, f[i].v);
			else
				xs_out_key_i64(o, f[i].key, f[i].v);
		}
		/* the peaks: MiB of the trace's peak plus MiB of the indefinite buffers */
		OUT_LIT(o, ",\"peak_heap_mib\":");
		xs_out_double(o, MIB(res->peak) + MIB(add));
		OUT_LIT(o, ",\"peak_unpadded_heap_mib\":");
		xs_out_double(o, MIB(res->peak_unpadded) + MIB(add));
	}
	w->add = res->indefinite_usage;
	if ((r = timeline(w)) < 0 || (r = heap_objects(w)) < 0)
		return r;
	spans(w);
	indefinite(w);
	return 0;
}

/* Whether program @id is listed already; its hash in *@h. */
static bool listed(const struct vw *w, uint64_t id, uint64_t *h)
{
	uint32_t at;

	*h = xprofs_table_hash(0, &id, sizeof(id));
	return xprofs_table_find(w->listed, *h, id_eq, w, &id, &at) == 0;
}

/* One program of @idx: its object in "programs" (0), or nothing and a note. */
static int program(struct vw *w, const struct xprofs_hlo_index *idx, size_t i, bool *first,
		   struct notes *nt)
{
	int64_t cs[MV_COLORS_MAX];
	struct xs_out *o = w->o;
	struct xprofs_hlo_buffers *b = NULL;
	struct xprofs_hlo_program *p = NULL;
	struct xprofs_hlo_program_info info;
	struct xprofs_hlo_module mod;
	struct xprofs_buf err;
	struct mv mv;
	size_t nc;
	uint64_t h;
	bool cut;
	int r;

	if ((r = xprofs_hlo_index_get(idx, i, &info)) < 0)
		return r;
	if (listed(w, info.program_id, &h))
		return 0; /* the first copy of an id with a buffer assignment wins */
	xprofs_buf_init(&err, 1024);
	r = xprofs_hlo_buffers_load(idx, i, &err, &b);
	if (r == 0)
		r = xprofs_hlo_program_load(idx, i, &err, &p);
	if (r == 0) {
		if ((r = xprofs_grow(&w->ids, &w->cap_ids, w->n_ids, sizeof(*w->ids), 16)) < 0 ||
		    (r = xprofs_table_add(w->listed, h, (uint32_t)w->n_ids)) < 0)
			goto out;
		w->ids[w->n_ids++] = info.program_id;
	}
	if (r == -ENOENT || r == -EINVAL || r == -E2BIG) {
		if (r != -ENOENT)
			note(nt, "program %" PRIu64 " (%s): left out: %s", info.program_id,
			     info.module, err.data ? err.data : strerror(-r));
		r = 0;
		goto out;
	}
	if (r < 0 || (r = stats_mv_init(&mv, p, b)) < 0)
		goto out;
	xprofs_hlo_program_module(p, &mod);
	OUT_RAW(o, *first ? "\n{\"program_id\":" : ",\n{\"program_id\":");
	*first = false;
	xs_out_u64(o, info.program_id);
	xs_out_key_cstr(o, ",\"module_name\":", mod.name);
	xs_out_key_cstr(o, ",\"entry_computation_name\":", mod.entry_computation_name);
	xs_out_key_cstr(o,
			",\"source\":", info.source == XPROFS_HLO_SIDECAR ? "sidecar" : "metadata");
	OUT_LIT(o, ",\"memory_spaces\":[");
	nc = colors(&mv, cs, &cut);
	for (size_t c = 0; c < nc && r == 0; c++)
		if ((r = stats_mv_color(&mv, cs[c])) == 0)
			space(o, &mv.res, c == 0);
	OUT_LIT(o, "]");
	if (cut)
		note(nt, "program %" PRIu64 ": more than %d memory colors: the others left out",
		     info.program_id, MV_COLORS_MAX);
	w->mv = &mv;
	if (r == 0 && (r = stats_mv_color(&mv, 0)) == 0)
		r = detail(w);
	if (mv.unusable_assigned)
		note(nt,
		     "program %" PRIu64 ": %zu assigned logical buffers name no logical buffer "
		     "or no instruction: left out",
		     info.program_id, mv.unusable_assigned);
	if (mv.unusable_events && !mv.res.err[0])
		note(nt,
		     "program %" PRIu64 ": %zu events of heap simulator trace %" PRId64
		     " name no usable logical buffer: skipped",
		     info.program_id, mv.unusable_events, mv.res.trace);
	OUT_LIT(o, "}");
	stats_mv_free(&mv);
	if (r == 0)
		r = xs_out_flush(o, false);
out:
	xprofs_hlo_program_free(p);
	xprofs_hlo_buffers_free(b);
	xprofs_buf_deinit(&err);
	return r;
}

int stats_view_memory_viewer(struct xs_rctx *rc, struct xs_out *o)
{
	const struct xprofs_hlo_index *idx = NULL;
	struct vw w = {.o = o};
	struct notes nt = {0};
	bool first = true;
	int r;

	xprofs_buf_init(&w.shape, MV_SHAPE_MAX + 64);
	xprofs_buf_init(&w.common, MV_SHAPE_MAX + 64);
	if ((r = xprofs_hlo_lazy_index(rc->hlo, &idx)) < 0 ||
	    (r = xprofs_table_new(XPROFS_HLO_PROGRAMS_MAX, &w.listed)) < 0)
		goto out;
	xs_out_key_i64(o, "{\"memory_color\":", 0);
	xs_out_key_i64(o, ",\"small_buffer_size\":", MV_SMALL_BUFFER_SIZE);
	OUT_LIT(o, ",\"programs\":[");
	for (size_t i = 0; idx && i < xprofs_hlo_index_count(idx) && r == 0; i++)
		r = program(&w, idx, i, &first, &nt);
	if (r < 0)
		goto out;
	OUT_LIT(o, "],\"errors\":[");
	for (size_t i = 0; i < nt.n; i++) {
		OUT_RAW(o, i ? "," : "");
		xs_out_cstr(o, nt.s[i]);
	}
	if (nt.more)
		xs_out_key_u64(o, nt.n ? ",\"... and more: " : "\"... and more: ", nt.more);
	OUT_RAW(o, nt.more ? "\"]}\n" : "]}\n");
	r = xs_out_flush(o, false);
out:
	for (size_t i = 0; i < nt.n; i++)
		free(nt.s[i]);
	xprofs_buf_deinit(&w.shape);
	xprofs_buf_deinit(&w.common);
	xprofs_table_free(w.listed);
	free(w.ids);
	return r;
}
