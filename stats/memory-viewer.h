/*
 * memory-viewer.h - what memory-viewer.c (XProf's memory viewer analysis of
 * one program) hands view-memory-viewer.c (memory_viewer.json).
 *
 * One struct mv per program: its decoded HLO and buffer assignment
 * (borrowed), XProf's HloProtoBufferWrapper (which logical buffers are
 * usable, the allocations by index, the heap trace of each allocation), and
 * the result of one memory color's analysis (struct mv_res), made again for
 * each color. The JSON side reads them and asks for the timeline through
 * stats_mv_timeline(), which replays the trace.
 */
#ifndef XPROFS_STATS_MEMORY_VIEWER_H
#define XPROFS_STATS_MEMORY_VIEWER_H

#include <stdbool.h>
#include <stdint.h>

#include "xprofs/hlo.h"
#include "xprofs/xspace.h"

/* XProf's kSmallBufferSize: buffers below it are one "small" heap object. */
#define MV_SMALL_BUFFER_SIZE 16384
/* Work of the SHARE_WITH chains of one replay (steps followed): past it, an error. */
#define MV_CHAIN_WORK_MAX ((uint64_t)1 << 26)
/* Bytes of one shape string (XProf does not cut them). */
#define MV_SHAPE_MAX 4096

/* XProf's LogicalBufferStruct, by logical buffer index; alloc < 0: GetLogicalBuffer() is null. */
struct mv_lb {
	int32_t alloc;  /* the allocation that assigned it (the last one) */
	int32_t instr;  /* its instruction in the program */
	int64_t offset; /* in that allocation */
	int64_t unpadded;
	size_t shape; /* the shape at its shape index (xprofs_hlo_shape_get()) */
	/* the replay's state */
	int64_t ref, span0, span1;
	int32_t canonical, alive; /* -1: none */
	bool has_span, seen;
};

/* One entry of XProf's std::list of live buffer ids: pushed at event born, removed at died. */
struct mv_ent {
	int32_t lb, next; /* next: the previous entry of the same buffer still in the list */
	int64_t born, died;
};

/* One memory color's result (PreprocessResult's figures, in bytes). */
struct mv_res {
	int64_t color, trace; /* the heap simulator trace shown, -1: none */
	int64_t peak, peak_unpadded, peak_pos, indefinite_usage;
	int64_t entry_params, non_reusable, maybe_live_out, total, indefinite;
	size_t n_allocations;
	char err[256]; /* XProf's error, "" when none */
	/* max_heap: heap objects (logical buffer indices; -1: the "small" one) */
	int32_t *heap;
	size_t n_heap, cap_heap;
	int64_t small_bytes;
	int32_t *peak_lbs; /* peak_logical_buffers */
	size_t n_peak_lbs;
};

struct mv {
	const struct xprofs_hlo_program *p;
	const struct xprofs_hlo_buffers *b;
	struct xprofs_hlo_buffer_assignment ba;
	struct mv_lb *lb;
	uint32_t *amap; /* id_to_buffer_allocation_: the last allocation of each index, by index */
	size_t n_amap;
	int64_t *trace_of; /* per allocation: its heap trace id, -1 */
	uint8_t *aseen;    /* per allocation: seen by the replay */
	size_t n_aseen;
	struct mv_ent *ent;
	size_t n_ent, cap_ent;
	uint64_t chain_work;
	size_t unusable_events; /* events whose buffer GetLogicalBuffer() does not find */
	size_t unusable_assigned;
	struct mv_res res;
};

/* A timeline point of the replay: heap and unpadded heap bytes before event @i (the last: after all). */
typedef void (*mv_point_fn)(void *arg, int64_t heap, int64_t unpadded, const char *name);

/**
 * stats_mv_init() - XProf's HloProtoBufferWrapper over @p and @b (borrowed
 * for @mv's life). 0 or -ENOMEM; free with stats_mv_free().
 */
int stats_mv_init(struct mv *mv, const struct xprofs_hlo_program *p,
		  const struct xprofs_hlo_buffers *b);
void stats_mv_free(struct mv *mv);
/**
 * stats_mv_color() - ConvertHloProtoToPreprocessResult() for memory color
 * @color into mv->res (the previous result dropped). 0 (XProf's error, if
 * any, in mv->res.err) or -ENOMEM.
 */
int stats_mv_color(struct mv *mv, int64_t color);
/**
 * stats_mv_timeline() - replay mv->res's trace again, calling @fn for each
 * point of the heap size timeline. 0 or -ENOMEM.
 */
int stats_mv_timeline(struct mv *mv, mv_point_fn fn, void *arg);
/** stats_mv_category() - the allocation's category (XProf's BufferAllocationStruct::category()). */
const char *stats_mv_category(const struct xprofs_hlo_allocation *a);
/** stats_mv_indefinite() - IsIndefinite(): thread-local, parameter, constant or maybe live out. */
bool stats_mv_indefinite(const struct xprofs_hlo_allocation *a);
/**
 * stats_mv_shape() - ShapeUtil::HumanString() of shape @s of @p into @out
 * (reset first; cut at MV_SHAPE_MAX bytes with "...").
 */
void stats_mv_shape(const struct xprofs_hlo_program *p, size_t s, struct xprofs_buf *out);

#endif
