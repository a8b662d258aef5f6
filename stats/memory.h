/*
 * memory.h - what the two halves of memory_profile.json share: the
 * records memory-events.c reads from the host plane's memory events and
 * memory-profile.c plans and writes (docs/memory.md). Private to stats/.
 */
#ifndef XPROFS_STATS_MEMORY_H
#define XPROFS_STATS_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xprofs/stats.h"

#define MEM_IDS_MAX ((size_t)1024)
#define MEM_EVENTS_MAX ((size_t)2 << 20)
#define MEM_SNAPSHOTS 1000 /* ConvertXPlaneToMemoryProfile()'s max_num_snapshots */
#define ERRORS_MAX 64

enum { ACT_ALLOC = 1, ACT_DEALLOC = 2 }; /* MemoryActivity */

/* How GenerateMemoryProfile() reads a stat (TSL StatType names: memory-events.c). */
enum mstat {
	MS_ID_INT = 1, /* index_on_host, device_ordinal */
	MS_ID_STR,     /* allocator_name */
	MS_INT,        /* IntValue() into an int64 of struct mev */
	MS_FRAG,       /* fragmentation: DoubleValue() */
	MS_STR,        /* StrOrRefValue() into a string of struct mev */
};

/* MemoryAggregationStats */
struct agg {
	int64_t stack, heap, free, peak;
	double frag;
};

/* One memory event, as GenerateMemoryProfile() reads it. */
struct mev {
	int act;
	struct agg a;
	int64_t req, abytes, step, dtype;
	uint64_t addr;
	const char *id; /* borrowed (a ref's name, or idbuf / idstr) */
	size_t id_len;
	char idbuf[24];
	char *idstr;                  /* owned: an allocator_name given as a string */
	bool strings;                 /* also read tf_op, region_type, shape */
	char *tf_op, *region, *shape; /* owned when @strings */
};

/* One event in step 2 (sorted by time, then visiting ordinal). */
struct mrec {
	int64_t t, sum, abytes, step;
	uint64_t addr;
	uint32_t seq; /* visiting ordinal within its memory id */
	uint8_t act;
};

/* A snapshot the output shows, every field (step 3). */
struct msnap {
	int64_t t;
	struct agg a;
	int act;
	int64_t req, abytes, step;
	uint64_t addr;
	char *tf_op, *region, *shape; /* owned, never NULL once read */
	char dtype[48];               /* DataTypeString() */
	bool read;
};

/* A row of active_allocations before merging: a snapshot position, or a special (-1, -2). */
struct arow {
	int64_t idx;           /* position in the time-sorted snapshots, or -1 - special index */
	const struct msnap *m; /* its metadata */
};

struct mid {
	char *name; /* owned */
	size_t len;
	uint64_t n; /* events */
	/* MemoryProfileSummary */
	int64_t lifetime, peak_time, capacity;
	struct agg peak;
	/* steps 2 and 3 */
	struct mrec *rec;   /* owned, n entries in time order */
	uint32_t *want;     /* owned: sorted visiting ordinals of the snapshots shown */
	struct msnap *snap; /* owned, parallel to want */
	size_t nwant;
	bool batched;
};

/* What step 2 decides for one memory id: positions (in time order) the output needs. */
struct mplan {
	uint32_t sampled[MEM_SNAPSHOTS];
	size_t nsampled;
	int32_t sampled_match[MEM_SNAPSHOTS]; /* a sampled deallocation's allocation, or -1 */
	uint32_t *active;                     /* owned: positions live at the peak */
	size_t nactive;
	int64_t unmapped; /* unmapped_allocation_bytes, final */
	int64_t peak_step;
	uint64_t unmatched_frees, unfreed;
};

struct mprof {
	struct xs_rctx *rc;
	size_t plane;      /* the host plane; SIZE_MAX: none */
	int8_t *skind;     /* stat metadata index -> its stat + 2 (1: none, 0: not yet known) */
	uint8_t *mem_line; /* lines (of the plane) holding memory events */
	size_t cur_line;
	struct mid *ids; /* owned */
	size_t nids, cap;
	struct xprofs_table *ids_tab; /* owned: name -> index into ids; NULL until the first */
	bool ids_full;
	int pass;       /* 1, 2 or 3 */
	uint64_t *seen; /* owned, per id: events visited in this pass */
	size_t *ord;    /* owned: the ids sorted by name (memory_ids' order) */
	char *errors[ERRORS_MAX];
	size_t nerrors;
};

/* stats_mem_wadd() - @a + @b wrapping as two's complement, as XProf's int64 sums do. */
static inline int64_t stats_mem_wadd(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a + (uint64_t)b);
}

/* stats_mem_u32_lower() - the first position of sorted a[0..@n) not below @v (@n: none). */
static inline size_t stats_mem_u32_lower(const uint32_t *a, size_t n, uint32_t v)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (a[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* stats_mem_add_error() - note a reason in the view's "errors" (at most ERRORS_MAX). */
void stats_mem_add_error(struct mprof *mp, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* stats_mem_dtype_str() - the data_type stat @v as XProf names it, into @buf (@n bytes). */
void stats_mem_dtype_str(int64_t v, char *buf, size_t n);
/*
 * stats_mem_walk() - walk the host plane's memory events for @pass (1: the
 * summaries and counts; 2: the records of a batch of ids; 3: the fields of
 * the snapshots the output shows), as memory-events.c describes.
 */
int stats_mem_walk(struct mprof *mp, int pass);

/*
 * stats_mem_open() - find the host plane and walk it once (pass 1: every
 * memory id's profile_summary and event count, mp->ord); no host plane:
 * (*@out)->plane is SIZE_MAX, no ids. Caller frees with stats_mem_close().
 */
int stats_mem_open(struct xs_rctx *rc, struct mprof **out);
void stats_mem_close(struct mprof *mp);
/*
 * What stats_mem_details() hands its caller per memory id, in the order
 * asked: its summary and records (@m), what step 2 decided (@pl; NULL when
 * the id has more than MEM_EVENTS_MAX events: summary only), and @k, the
 * id's position in the order. Both borrowed for the call.
 */
typedef int (*stats_mem_id_fn)(void *arg, const struct mid *m, const struct mplan *pl, size_t k);
/*
 * stats_mem_details() - steps 2 and 3 for the ids ord[0..@n) (indexes into
 * mp->ids), in batches of at most MEM_EVENTS_MAX events, then @fn per id.
 */
int stats_mem_details(struct mprof *mp, const size_t *ord, size_t n, stats_mem_id_fn fn, void *arg);
/* stats_mem_snap_at() - the snapshot of (time-sorted) position @pos of @m, during @fn. */
const struct msnap *stats_mem_snap_at(const struct mid *m, uint32_t pos);
/*
 * stats_mem_rows() - the rows of active_allocations before merging, sorted
 * as ProcessActiveAllocations() sorts them (MetadataComparator), the
 * special allocations of InsertSpecialAllocations() in @sp (*@nsp of them)
 * included; consecutive rows stats_mem_row_same() merge into one.
 * *@rows: caller frees with free(); they point into @m and @sp.
 */
int stats_mem_rows(const struct mid *m, const struct mplan *pl, struct msnap sp[2], size_t *nsp,
		   struct arow **rows, size_t *nrows);
bool stats_mem_row_same(const struct arow *x, const struct arow *y);

#endif
