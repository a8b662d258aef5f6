/*
 * stats-internal.h - the analyses the stats views share, by file: a plane's
 * facts (facts.c, gpu-peak.c), which lines hold ops (lines.c), one plane's op
 * table (ops.c: ops aggregated by name as XProf's OpMetricsDb, the plane's
 * programs and its peak rates; its JSON in ops-json.c), several lines merged
 * by time (merge.c), the steps and their breakdown (steps.c), device busy
 * time (busy.c), the TPU duty cycle (duty.c) and a host's op stats as
 * XProf's OpStats, the one op metrics database of a
 * host or session all op views read (opdb.c, opdb-out.c). The view-*.c files write their views from
 * these and call no other view's file, but for the session forms of
 * op_profile.json / framework_op_stats.json (view-session-op.c writes them
 * with their host views' writers, and view-session.c hands it
 * compare/<other>/op_profile.json and the session's host list). Memory: an
 * op table is O(distinct ops), at most OPS_MAX; the steps O(steps), at
 * most 1 Mi.
 */
#ifndef XPROFS_STATS_INTERNAL_H
#define XPROFS_STATS_INTERNAL_H

#include <stdatomic.h>

#include "xprofs/hlo.h"
#include "xprofs/stats.h"
#include "xprofs/xspace.h"

struct stats_hints;

/*
 * What the analyses read from a plane's own stats (TSL StatType names, see
 * docs/stats.md): peak rates (TPU: peak_teraflops_per_second,
 * peak_hbm_bw_gigabytes_per_second; GPU: memory_bandwidth in bytes/s) and
 * the device description. peak_flops / peak_bw: per second, 0 = unknown.
 */
struct stats_plane_facts {
	char *device_type, *vendor; /* owned, NULL when absent */
	char *gpu_device_name;      /* owned, NULL when absent (AMD: "gfx942:...") */
	double peak_tflops, peak_hbm_gbps, mem_bw, clock_khz, core_count, cc_major, cc_minor;
	bool has_peak_tflops, has_peak_hbm_gbps, has_mem_bw, has_clock, has_core_count, has_cc;
	double peak_flops, peak_bw;
};
/* stats_plane_facts_get() - the facts of plane @pi (enters it); clear with stats_plane_facts_clear(). */
int stats_plane_facts_get(struct xs_rctx *rc, size_t pi, struct stats_plane_facts *f);
void stats_plane_facts_clear(struct stats_plane_facts *f);
/*
 * stats_gpu_peak_flops() - XProf's GPU peak FLOP/s from @f's device
 * capabilities (gpu-peak.c, hardware_type_utils.cc); 0 when unknown.
 */
double stats_gpu_peak_flops(const struct stats_plane_facts *f);
/*
 * stats_gpu_model_name() - XProf's GpuModelName() of @f ("Nvidia GPU
 * (Hopper)", "AMD GPU - gfx942", "" for an unknown vendor) into @buf (@cap
 * bytes); -ENAMETOOLONG when it does not fit.
 */
int stats_gpu_model_name(const struct stats_plane_facts *f, char *buf, size_t cap);

/* ---- which lines hold ops (lines.c) ---- */

/* Which lines feed ops.json (and the device time of steps.json). */
enum stats_line_kind { LK_NONE = 0, LK_XLA_OPS, LK_STREAM, LK_HOST };
/* stats_op_line_kind() - the kind of line @l of plane @p (rule: docs/decode.md). */
enum stats_line_kind stats_op_line_kind(const struct xprofs_xspace *x, const struct xs_plane *p,
					const struct xs_line *l, bool host_has_fw);
/* stats_host_has_fw() - @p has "Framework Ops" / "TensorFlow Ops" lines (then only they hold ops). */
bool stats_host_has_fw(const struct xprofs_xspace *x, const struct xs_plane *p);
/* stats_plane_is_host() - @p is /host:CPU, the one host plane whose lines hold ops. */
bool stats_plane_is_host(const struct xs_plane *p);
/*
 * stats_step_lines() - the op lines whose time counts in the steps of plane @q (a
 * device plane: its "XLA Ops" and stream lines; SIZE_MAX: the host steps, those of
 * every device plane and the host's op lines), in line order, at most @max, into @li.
 */
size_t stats_step_lines(const struct xprofs_xspace *x, size_t q, size_t *li, size_t max);

/* ---- one plane's op table (ops.c) ---- */

#define OPS_MAX ((size_t)1 << 20) /* stats_ops_max's default */

struct op {
	char *name, *category; /* owned */
	char *program;         /* owned, NULL: none known (set by the first occurrence) */
	bool program_tried;
	bool has_pid; /* keyed by (pid, name) as XProf's GPU OpMetricsDb, else by name */
	uint64_t pid;
	uint64_t count;
	int64_t occurrences; /* positioned events 1, num_occurrences events their count */
	int64_t total, self, min, max;
	double flops, bytes, model_flops;
	bool has_flops, has_bytes, has_model_flops;
	/* GPU: XProf's provenance (an XLA op's instruction's TfOpName(), a
	 * framework op's tf_op) and the instruction's source_info(); owned, NULL: none */
	char *provenance, *source;
	/* GPU XLA op found in the HLO: its instruction's DeviceFlops(),
	 * ModelFlops(), bytes_accessed() per occurrence (NAN: not determined) */
	bool hlo;
	double hlo_flops, hlo_model_flops, hlo_bytes;
};

struct opmap {
	struct op *ops; /* owned */
	size_t n, cap;
	struct xprofs_table *tab; /* name -> index in ops[]; NULL until the first op */
	int64_t other;            /* index of "(other)" or -1 */
};

/* A plane's XLA programs: program_id -> the "XLA Modules" event named "<module>(<id>)". */
struct progmap {
	uint64_t *id;
	char **name; /* owned */
	size_t n, cap;
	struct xprofs_table *tab; /* id -> index; NULL until the first program */
};

/* ---- op maps (opmap.c) and programs (programs.c) ------------------------- */

/* An op's key: its name, and on GPU its program id (XProf's (program_id, name)). */
struct stats_opkey {
	const char *name; /* borrowed */
	bool has_pid;
	uint64_t pid;
};

/* stats_opmap_free() - free @m's rows and table; @m is left empty. */
void stats_opmap_free(struct opmap *m);
/*
 * stats_opmap_get_key() - the row of the op keyed @k (its name borrowed, copied
 * on insert; @category too), made at its first look-up; past stats_ops_max
 * rows, the "(other)" row. -errno when out of memory.
 */
int64_t stats_opmap_get_key(struct opmap *m, struct stats_opkey k, const char *category);
/* stats_opmap_get() - stats_opmap_get_key() of the op named @name, keyed by name alone. */
int64_t stats_opmap_get(struct opmap *m, const char *name, const char *category);
/* stats_progmap_free() - free @pm's programs; @pm is left empty. */
void stats_progmap_free(struct progmap *pm);
/*
 * stats_progmap_event() - a xs_event_fn: an "XLA Modules" event "<module>(<id>)"
 * names program <id> in @arg (a struct progmap).
 */
int stats_progmap_event(struct xs_rctx *rc, const struct xs_event *e, struct xs_evmd *md,
			void *arg);
/* stats_progmap_find() - the name of program @id (borrowed from @pm), or NULL. */
const char *stats_progmap_find(const struct progmap *pm, uint64_t id);

/* A device plane's busy time: the union of its op lines, and their first start / last end. */
struct stats_busy {
	int64_t busy, first, last;
	bool any;
};

/* stats_busy_widen() - @b's first start / last end widened to take [first, last). */
static inline void stats_busy_widen(struct stats_busy *b, int64_t first, int64_t last)
{
	if (!b->any || first < b->first)
		b->first = first;
	if (!b->any || last > b->last)
		b->last = last;
	b->any = true;
}

/*
 * A union of intervals given in start order (merge.c): the one still open
 * and, in @b, the time covered, the first start and the last end (XProf's
 * step breakdown unions device activity: concurrent streams count once).
 * stats_union_add() takes [s, t); stats_union_close() ends the open one.
 */
struct stats_union {
	int64_t cs, ce;
	bool open;
	struct stats_busy b;
};

/*
 * What one TPU plane adds to its chip's tracker when it is the chip's only
 * plane and its "XLA Ops" line its only one, in start order (as the index
 * checked): that line's events taken in its own order give the same union as
 * the chip's merge. Filled by stats_duty_part_op() / _module() for the events
 * of a whole walk (ops.c takes it on its own walk of those lines); num
 * occurrences events have no place in time and are left out, as the merge
 * leaves them.
 */
struct stats_duty_part {
	struct stats_union on;  /* its on-duty XLA Ops events (own times) */
	struct stats_busy span; /* of its XLA Ops and XLA Modules events (busy unused) */
	struct stats_busy dev;  /* of its XLA Ops events' device timespans (busy unused) */
};

/*
 * One plane's ops (stats_ops_plane()). On a GPU plane (@gpu: it has stream lines)
 * @m is XProf's op table (ConvertDeviceTraceXPlaneToOpMetricsDb()) and @un the
 * kernels it leaves out (no hlo_op with a program_id, no tf_op), by kernel name.
 */
struct stats_ops {
	struct opmap m, un;
	struct progmap pm;
	struct stats_plane_facts f; /* filled when events + un_events > 0 */
	uint64_t events, un_events;
	int64_t total, self; /* sums of the op events' durations / of the ops' self times */
	int64_t un_total;    /* sum of the unattributed events' durations */
	bool gpu;
	uint64_t host_tf_ops; /* stats_host_tf_ops(), set by the overview on the host plane */
	/* stats_device_busy() of the plane, taken on the way when it is one line's
	 * (stats_busy_line()) and the walk is whole */
	struct stats_busy busy;
	bool has_busy;
	/* a device plane's span on a whole walk of several op lines (one line's is in
	 * @busy): stats_device_busy()'s first and last (any) without its merge, its
	 * busy field left 0; what the op db needs */
	struct stats_busy span;
	bool has_span;
	/* a TPU plane's part of the duty cycle on a whole walk, where it fits
	 * (stats_duty_part_fits()): stats_tpu_duty() need not walk it again */
	struct stats_duty_part duty;
	bool has_duty;
};

/* stats_ops_plane() - aggregate the op lines of plane @pi; free with stats_ops_free(). */
int stats_ops_plane(struct xs_rctx *rc, size_t pi, struct stats_ops *out);

/*
 * A host plane's op table made as two tasks, so that a host plane much
 * bigger than the others (a CPU-only profile's only one) does not keep one
 * thread busy alone: its lines [0, line) and [line, n_lines), with
 * @first/@second events, when it has stats_ops_cut_min events or more.
 * Lines are independent in an op table (nesting is per line), and the
 * second part's rows fold into the first's in their order
 * (stats_ops_join()), so the table is the one walk's.
 */
struct stats_ops_cut {
	size_t plane, line; /* line 0: no cut */
	uint64_t first, second;
};
/* stats_ops_cut() - the cut of the profile's biggest host plane into *@cut (line 0: none). */
void stats_ops_cut(const struct xprofs_xspace *x, struct stats_ops_cut *cut);
/* The op-table tasks of a render with @cut: one per plane, and the cut's second part. */
static inline size_t stats_ops_ntasks(const struct xprofs_xspace *x,
				      const struct stats_ops_cut *cut)
{
	return x->n_planes + (cut->line != 0);
}
/*
 * stats_ops_task() - op-table task @q of stats_ops_ntasks(): plane @q's table
 * (the first part of @cut's plane), q == n_planes the cut's second part;
 * with @overview, what the overview also reads of the plane on the same
 * walk: a TPU plane's duty part where it fits (struct stats_duty_part), a
 * host plane's stats_host_tf_ops() in out->host_tf_ops; with @hints (borrowed,
 * may be NULL), the step hints of a device plane's op lines (hints.c). Free
 * with stats_ops_free().
 */
int stats_ops_task(struct xs_rctx *rc, const struct stats_ops_cut *cut, size_t q, bool overview,
		   struct stats_hints *hints, struct stats_ops *out);
/* stats_ops_task_cost() - the events task @q reads (a xs_task_cost_fn's figure). */
uint64_t stats_ops_task_cost(const struct xprofs_xspace *x, const struct stats_ops_cut *cut,
			     size_t q);
/*
 * stats_ops_join() - the second part @src folded into the first part @dst, as
 * one walk of the plane would have made it; consumes @src (freed).
 */
int stats_ops_join(struct xs_rctx *rc, const struct stats_ops_cut *cut, struct stats_ops *dst,
		   struct stats_ops *src);
/*
 * stats_host_tf_ops() - the framework-op activities of host plane @pi as
 * XProf's host op metrics database counts them (host-tfops.c): the
 * overview's host ops. 0 or -errno.
 */
int stats_host_tf_ops(struct xs_rctx *rc, size_t pi, uint64_t *out);
/*
 * The same count on another walk of host plane @pi: stats_host_tf_new() (caller
 * frees with stats_host_tf_free()), stats_host_tf_event() (a xs_event_fn, arg: the
 * walk) for every event of each line stats_host_tf_line() admits (a line that is
 * not derived), then stats_host_tf_count().
 */
struct tf_walk;
int stats_host_tf_new(struct xs_rctx *rc, size_t pi, struct tf_walk **out);
int stats_host_tf_event(struct xs_rctx *rc, const struct xs_event *e, struct xs_evmd *md,
			void *arg);
bool stats_host_tf_line(const struct xprofs_xspace *x, size_t li);
uint64_t stats_host_tf_count(const struct tf_walk *w);
void stats_host_tf_free(struct tf_walk *w);
void stats_ops_free(struct stats_ops *d);
/* stats_op_add() - @a's counts, times, flops and bytes added to @b (not min / max / names). */
void stats_op_add(struct op *b, const struct op *a);
/* stats_op_meta() - @a's provenance and source copied into @b where it has none
 * (CopyOpMetricsMetadata()); 0 or -ENOMEM. */
int stats_op_meta(struct op *b, const struct op *a);
/* stats_ops_merge() - add @src's ops to @dst's by name (XProf's OpMetricsDbCombiner); @dst
 * starts zeroed. Its facts and programs map stay empty. */
int stats_ops_merge(struct stats_ops *dst, const struct stats_ops *src);
/* stats_ops_sorted() - indexes of d->m.ops by self time (desc), total, name, program id;
 * caller frees. stats_opmap_sorted(): the same of any op map. */
size_t *stats_ops_sorted(struct stats_ops *d);
size_t *stats_opmap_sorted(struct opmap *m);

/*
 * ---- an op table's JSON (ops-json.c), for ops.json and the session's ops.json ----
 * One op's fields after its opening "{\"name\":" (stats_op_write()), a by_category /
 * by_program rollup's elements over m->ops[0..n) (stats_ops_rollup_write()),
 * and the ",\"peak_flops_per_s\":..." keys of @f (stats_ops_peak_write()).
 */
void stats_op_write(struct xs_out *o, const struct op *op, const struct stats_plane_facts *f,
		    int64_t plane_self);
/* stats_ops_rows_write() - the ops idx[0..m->n) of @m, each "{\"name\":...}", comma-separated. */
int stats_ops_rows_write(struct xs_out *o, const struct opmap *m, const size_t *idx,
			 const struct stats_plane_facts *f, int64_t plane_self);
/*
 * stats_ops_table_write() - an op table's keys after its name (ops.json) or planes (the
 * session's): ,"events",..,"total_ps","self_ps", the peak rates, "ops" (@m's ops in the
 * order @idx) and the rollups; the object is left open.
 */
int stats_ops_table_write(struct xs_out *o, struct opmap *m, const size_t *idx, uint64_t events,
			  int64_t total, int64_t self, const struct stats_plane_facts *f);
/* stats_ops_rollups_write() - ],"by_category":[...],"by_program":[...] of @m (the ops' array open). */
int stats_ops_rollups_write(struct xs_out *o, struct opmap *m, int64_t plane_self);
int stats_ops_rollup_write(struct opmap *m, bool by_program, int64_t plane_self, struct xs_out *o);
void stats_ops_peak_write(struct xs_out *o, const struct stats_plane_facts *f);

/* ---- several lines' events merged by start time (merge.c) ---- */

#define STATS_MERGE_MAX 1024 /* lines merged at once (more: groups, summed) */

/* One line of a merge: its cursor and its next positioned event. */
struct stats_mline {
	struct xs_rctx rc; /* only rc.x and rc.ev are used */
	bool dev;          /* a device plane's op line (counts towards device_ps) */
	struct xs_line_it it;
	struct xs_event e;            /* the line's next event */
	uint64_t nth, next;           /* @e's number in the line; the next one's */
	const struct stats_hline *hl; /* set by the merge's user: the line's step hints, or NULL */
	size_t hcur;                  /* stats_hints_at()'s cursor */
	const uint8_t *cls;           /* borrowed: its plane's event type by metadata index */
	const struct xs_mdix *evx;    /* its plane's event metadata index */
};

/* A line in a merge's heap: its next event's start (kept here, where the heap compares). */
struct stats_mkey {
	int64_t start; /* = ml[i].e.start_ps */
	size_t i;
};

struct stats_merge {
	struct stats_mline *ml;  /* owned, n of them */
	struct stats_mkey *heap; /* owned: the lines with events, a min-heap by start */
	size_t n, nheap;
};

/* stats_merge_top() - the line with the earliest next event (m->nheap > 0). */
static inline struct stats_mline *stats_merge_top(struct stats_merge *m)
{
	return &m->ml[m->heap[0].i];
}

/*
 * stats_merge_open() - a merge over the lines @li[0..n) (n <= STATS_MERGE_MAX), each
 * at its first positioned event; @cls: per plane its event types by metadata index
 * (borrowed, may be NULL). Free with stats_merge_free(), also after a failure.
 */
int stats_merge_open(struct xs_rctx *rc, const size_t *li, size_t n, uint8_t *const *cls,
		     struct stats_merge *m);
/*
 * stats_merge_open_at() - stats_merge_open(), with @seek each line started where
 * its events ending after @from begin (xs_line_seek()): earlier ones may still
 * come (a checkpoint's worth), later ones all do.
 */
int stats_merge_open_at(struct xs_rctx *rc, const size_t *li, size_t n, uint8_t *const *cls,
			bool seek, int64_t from, struct stats_merge *m);
void stats_merge_free(struct stats_merge *m);
/* stats_merge_next() - advance @ml to its next positioned event: 1, 0 at its end, -errno. */
int stats_merge_next(struct stats_mline *ml);
/* stats_merge_sift() - restore the heap below m->heap[@i] (after its line advanced). */
void stats_merge_sift(struct stats_merge *m, size_t i);
/* stats_merge_pop() - advance the line of the earliest event (m->heap[0]); 0 or -errno. */
int stats_merge_pop(struct stats_merge *m);

/* ---- the steps and their breakdown (steps.c) ---- */

#define STATS_BD_N 9 /* steps.json's breakdown types (steps.c) */

/* steps.json's breakdown keys ("idle_ps", ...), by type. */
extern const char *const stats_bd_keys[STATS_BD_N];

/* struct stats_union (above): merge.c's */
void stats_union_add(struct stats_union *u, int64_t s, int64_t t);
void stats_union_close(struct stats_union *u);
/* stats_merge_union() - the union of the events of lines @li[0..n) (merged by start) into @b. */
int stats_merge_union(struct xs_rctx *rc, const size_t *li, size_t n, struct stats_busy *b);

/* One step of XProf's step database (steps.c): a group_id's step on the host. */
struct stats_step {
	int64_t num;  /* the step number: its group_id */
	size_t plane; /* the plane of the marker that gave its step time */
	int64_t start, dur, device;
	int64_t bd[STATS_BD_N];  /* time by event type (bd[BD_IDLE]: the rest of the step) */
	xprofs_ps128 begin, end; /* exact window (xprofs_decode_steps()) */
};

/* ---- step hints (hints.c) ------------------------------------------------- */

#define STATS_HINT_GROUP 1u               /* the event has a group_id */
#define STATS_HINT_CORR 2u                /* it has a correlation_id >= 0 */
#define STATS_HINT_RUNS ((size_t)1 << 18) /* stats_hint_runs' default */

/* The events numbered from @first to the next run's first have these notes. */
struct stats_hrun {
	uint64_t first;
	int64_t group; /* when STATS_HINT_GROUP */
	uint8_t flags;
};

/* One line's notes: @events noted so far, coded in runs (owned). */
struct stats_hline {
	struct stats_hrun *r;
	size_t n, cap;
	uint64_t events;
	bool dropped; /* past stats_hint_runs or out of memory: no notes */
};

/* The notes of a profile's lines; lines are written by one walk each, the run count is shared. */
struct stats_hints {
	struct stats_hline *line; /* owned, per line of the profile */
	size_t n_lines;
	atomic_size_t runs;
};

/* stats_hints_new() - empty notes for @n_lines lines; free with stats_hints_free(). */
int stats_hints_new(size_t n_lines, struct stats_hints **out);
void stats_hints_free(struct stats_hints *h);
/* stats_hints_begin() - line @li's notes, emptied for a walk of the line (NULL: no @h). */
struct stats_hline *stats_hints_begin(struct stats_hints *h, size_t li);
/* stats_hints_add() - the next event of the line of @hl has @flags and @group. */
void stats_hints_add(struct stats_hints *h, struct stats_hline *hl, unsigned flags, int64_t group);
/*
 * stats_hints_line() - line @li's notes when they cover all of its @events
 * events (borrowed from @h), else NULL.
 */
const struct stats_hline *stats_hints_line(const struct stats_hints *h, size_t li, uint64_t events);
/*
 * stats_hints_at() - the run holding event @nth of the line of @hl; *cur is
 * the caller's cursor (start it at SIZE_MAX), for look-ups in event order.
 */
const struct stats_hrun *stats_hints_at(const struct stats_hline *hl, uint64_t nth, size_t *cur);

/* The steps of a host, by step number (stats_steps_compute()). */
struct stats_steps {
	struct stats_step *s; /* owned */
	size_t n, cap;
	bool cut;       /* more groups than steps.c's maximum */
	size_t nplanes; /* of the profile */
	/*
	 * Set by the caller, may be NULL: per plane, pass 2 (steps-sweep.c)
	 * also takes stats_device_busy()'s union where it merges all of the
	 * plane's op lines anyway, and sets busy_done[q] (borrowed arrays).
	 */
	struct stats_busy *busy;
	bool *busy_done;
	/* set by the caller, may be NULL: what the op tables' walk noted for pass 2 (borrowed) */
	const struct stats_hints *hints;
};

/* The step-time summary of a host's steps (XProf's StepSummary) and breakdown averages. */
struct stats_step_summary {
	bool has; /* false: no steps */
	uint64_t n;
	double avg, stddev;
	int64_t min, max;
	double bd[STATS_BD_N]; /* average ps per step, by type (steps.json's breakdown order) */
	/* Σ over the steps in ms, as ComputeBottleneckAnalysis() adds PicoToMilli() values */
	double ms_step, ms_input, ms[STATS_BD_N]; /* ms_input: Σ (wait input + host to device) */
};

/*
 * stats_steps_compute() - XProf's step database of the host into @st (zeroed
 * by the caller): StepEventsToStepsDb() over the device planes' (else the
 * host's) step events, combined by group_id. Caller frees @st with
 * stats_steps_free(), also after a failure.
 */
int stats_steps_compute(struct xs_rctx *rc, struct stats_steps *st);
void stats_steps_free(struct stats_steps *st);
/* stats_steps_summarize() - @sum of the steps [a, b) of @st (a < b). */
void stats_steps_summarize(const struct stats_steps *st, size_t a, size_t b,
			   struct stats_step_summary *sum);
/* One step of the host: index @i of @n, its duration and breakdown (ps, STATS_BD_N
 * types, summing to @dur). Nonzero return stops the walk. */
typedef int (*stats_step_fn)(void *arg, uint64_t i, uint64_t n, int64_t dur, const int64_t *bd);
/* stats_steps_each() - @fn for each step of the host, in order. */
int stats_steps_each(struct xs_rctx *rc, stats_step_fn fn, void *arg);
/* stats_steps_overview() - the summary of the host's steps (sum->has false: none). */
int stats_steps_overview(struct xs_rctx *rc, struct stats_step_summary *sum);
/*
 * stats_steps_overview_busy() - stats_steps_overview(), and per device plane q
 * its busy time into @busy[q] where the steps took it on the way (@done[q]
 * true; the caller takes the rest with stats_device_busy()). @busy, @done:
 * borrowed, one per plane, zeroed by the caller. @hints (borrowed, may be
 * NULL): the op tables' notes of the events' groups, read instead of their stats.
 */
int stats_steps_overview_busy(struct xs_rctx *rc, struct stats_step_summary *sum,
			      struct stats_busy *busy, bool *done, const struct stats_hints *hints);
/* stats_step_summary_write() - @sum as steps.json's summary object. */
void stats_step_summary_write(struct xs_out *o, const struct stats_step_summary *sum);

/* ---- a session's straggler (straggler.c) ---- */

/* The median of a session's hosts' average step times (docs/stats.md "Session summary"). */
struct stats_straggler {
	size_t hosts;  /* hosts with steps */
	double median; /* of their averages */
	size_t worst;  /* the host with the highest average, SIZE_MAX: none */
};
/* stats_straggler_get() - of the @n hosts' summaries @h (NULL: no steps); 0 or -ENOMEM. */
int stats_straggler_get(const struct stats_step_summary *const *h, size_t n,
			struct stats_straggler *s);
/*
 * stats_straggler_ratio() - host @h's average ÷ the median into *ratio; false (no ratio)
 * with fewer than two hosts with steps, @h without steps, or a median <= 0.
 */
bool stats_straggler_ratio(const struct stats_straggler *s, const struct stats_step_summary *h,
			   double *ratio);

/* ---- device busy time (busy.c) ---- */

/* stats_device_busy() - device plane @q's busy time into @b (the union of its op lines). */
int stats_device_busy(struct xs_rctx *rc, size_t q, struct stats_busy *b);
/*
 * stats_busy_line() - the line of device plane @q whose events alone make its
 * stats_device_busy() (its one op line; a TPU's XLA Ops), or SIZE_MAX: several
 * or none. The union of one line is taken in its order, no merge needed.
 */
size_t stats_busy_line(const struct xprofs_xspace *x, size_t q);
/*
 * stats_steps_busy_sum() - stats_steps_overview() into @sum, and Σ over the device
 * planes (in plane order) of stats_device_busy()'s busy time and span (last end −
 * first start) into *busy, *span: the session summary's per-host numbers (on TPU
 * hosts stats_tpu_duty()'s active time and span instead).
 */
int stats_steps_busy_sum(struct xs_rctx *rc, struct stats_step_summary *sum, int64_t *busy,
			 int64_t *span);

/* ---- the TPU duty cycle and idle time (duty.c) ---- */

/* What duty.c finds over a host's TPU planes (all ps). */
struct stats_duty {
	int64_t active, idle; /* DutyCycleCombiner's totals: Σ over chips */
	int64_t op_span;      /* Σ over TensorCore planes of last - first op (device timespans) */
	uint64_t planes;      /* "/device:TPU:" planes walked */
};
/* stats_is_tpu() - @x has "/device:TPU:" planes: XProf's TPU analysis applies. */
bool stats_is_tpu(const struct xprofs_xspace *x);
/*
 * stats_duty_part_fits() - plane @q is a "/device:TPU:" plane with one
 * "XLA Ops" line, in start order, and at most STATS_MERGE_MAX lines a chip's
 * merge takes: a stats_duty_part can stand for its part of its chip's walk.
 */
bool stats_duty_part_fits(const struct xprofs_xspace *x, size_t q);
/*
 * stats_duty_part_op() - "XLA Ops" event @ev of metadata @md into @d, with
 * its device_offset_ps / device_duration_ps (@dev[0], @dev[1]) when @dev is
 * not NULL (GetDeviceEventTimespan()); @md notes whether its category is
 * off duty (xs_evmd.off_duty). stats_duty_part_module(): an
 * "XLA Modules" event (it only widens the span).
 */
void stats_duty_part_op(struct stats_duty_part *d, const struct xs_event *ev, struct xs_evmd *md,
			const int64_t *dev);
void stats_duty_part_module(struct stats_duty_part *d, const struct xs_event *ev);
/*
 * stats_tpu_duty() - ConstructDutyCycleTracker() over every TPU plane, the
 * planes of one chip united (DutyCycleCombiner), into @out, with the op span
 * IdleTimeRatio() divides by. @parts (NULL, or one borrowed pointer per plane,
 * NULL where there is none) gives the planes whose XLA Ops and XLA Modules
 * lines were already walked: a plane alone on its chip with a part is not
 * walked again but for its "Steps" lines.
 */
int stats_tpu_duty(struct xs_rctx *rc, const struct stats_duty_part *const *parts,
		   struct stats_duty *out);
/* ---- a host's / session's op metrics database (opdb.c, opdb-out.c) ---- */

/* XProf's RunEnvironment hardware_type, as SetRunEnvironment() finds it. */
enum stats_hw { STATS_HW_CPU = 0, STATS_HW_GPU, STATS_HW_TPU };

/*
 * Whose rules a database keeps (opdb.c): the op profile's, framework op stats'
 * and top_ops' (OPS: keyed by (program, name), IDLE ops, a host db, the first
 * device plane's PerfEnv), or hlo_stats' and roofline's (HLO: keyed by
 * (hlo_module_id, name), at most OPS_MAX rows, the device planes, the
 * RunEnvironment). 0 is OPS, so a zeroed database is one.
 */
enum stats_db_kind { STATS_DB_OPS = 0, STATS_DB_HLO };

/* One op of an op metrics db (XProf's OpMetrics). */
struct stats_dbop {
	/*
	 * owned strings; op.provenance: TfOpName() of its HLO instruction (XProf's
	 * provenance; OPS: NULL when none, HLO: ""), op.source its source_info()
	 * (HLO only, "": none). OPS: FLOPs, bytes and model FLOPs are 0 when unknown.
	 */
	struct op op;
	uint64_t pid; /* program id (HLO: hlo_module_id, the key; OPS: the first non-0), 0: none */
	char *tf_name, *tf_type; /* owned, NULL: none; ParseTfOpFullname(provenance) (OPS) */
	bool idle;               /* XProf's "IDLE" op */
	size_t seq;              /* sort tie-break */
};

/* An op metrics db: its rows, totals (op time, self time, time with IDLE). */
struct stats_opdb {
	enum stats_db_kind kind;
	struct stats_dbop *r; /* owned, n of them */
	size_t n, cap;
	struct xprofs_table *tab; /* key -> index; NULL until the first row / after a sort */
	int64_t other;            /* HLO: index of "(other)" or -1 */
	uint64_t planes, events;  /* planes with ops */
	int64_t total, self;      /* Σ of the planes' op time and self time */
	int64_t total_time;       /* OPS: with IDLE time (TotalTimePs()) */
};

struct stats_busy;

/* A host's (or a session's) OpStats: device and host dbs, PerfEnv, RunEnvironment. */
struct stats_opstats {
	struct stats_opdb dev, host; /* HLO: host stays empty */
	double peak_flops, peak_bw;  /* per second; 0: unknown (CombinePerfEnv() across hosts) */
	bool gpu;                    /* OPS: a GPU host's */
	/* HLO: SetRunEnvironment()'s */
	enum stats_hw hw;
	uint64_t cores;
	char *device_type; /* owned, NULL: none (GPU: GpuModelName(); TPU: device_type_string) */
	/* a TPU host's (not a session's): CMEM read, write, VMEM read, write peaks (bytes/s, 0: none) */
	double peak_mem[4];
	bool merged_vmem, megacore, tpu_env;
};

void stats_opdb_init(struct stats_opdb *d, enum stats_db_kind kind);
void stats_opdb_free(struct stats_opdb *d);
void stats_opstats_init(struct stats_opstats *s, enum stats_db_kind kind);
void stats_opstats_free(struct stats_opstats *s);
/* stats_opstats_host() - the @kind op stats of @rc's profile into @out; free with stats_opstats_free(). */
int stats_opstats_host(struct xs_rctx *rc, enum stats_db_kind kind, struct stats_opstats *out);
/*
 * stats_opstats_add() - plane @q's op table @ops (and a device plane's span from @busy,
 * may be NULL: no IDLE time) into @out (zeroed or initialised first); then
 * stats_opstats_finish().
 */
int stats_opstats_add(struct xs_rctx *rc, size_t q, const struct stats_ops *ops,
		      const struct stats_busy *busy, struct stats_opstats *out);
/* stats_opstats_finish() - an OPS db's rows in (program, name) order. */
void stats_opstats_finish(struct stats_opstats *s);
/*
 * stats_opstats_view() - a host view: "{", @write(o, the host's @kind op stats),
 * then @tail.
 */
int stats_opstats_view(struct xs_rctx *rc, struct xs_out *o, enum stats_db_kind kind,
		       int (*write)(struct xs_out *o, const struct stats_opstats *s),
		       const char *tail);
/* stats_dbop_add() - CombineOpMetrics(): @a's occurrences, times, FLOPs and bytes added to @b. */
void stats_dbop_add(struct stats_dbop *b, const struct stats_dbop *a);
/* stats_opstats_merge() - fold @src into @d as XProf's CombineAllOpStats(). */
int stats_opstats_merge(struct stats_opstats *d, const struct stats_opstats *src);
/* stats_opdb_sorted() - @d's row indexes as SortedOpMetricsDb(); caller frees, NULL: -ENOMEM. */
size_t *stats_opdb_sorted(const struct stats_opdb *d);
/*
 * stats_opdb_tf() - CreateTfMetricsDbFromDeviceOpMetricsDb() of @dev into @out (free with
 * stats_opdb_free()): one row per framework op, IDLE only @with_idle.
 */
int stats_opdb_tf(const struct stats_opdb *dev, bool with_idle, struct stats_opdb *out);
/*
 * stats_db_session() - every host of @in folded into @d (initialised with its kind),
 * one at a time, each with its own HLO; *@errors (caller frees with
 * stats_db_errors_free(), also on failure): per host why it adds nothing, or NULL.
 * 0 or -ENOMEM.
 */
int stats_db_session(const struct xprofs_session_in *in, struct stats_opstats *d, char ***errors);
void stats_db_errors_free(const struct xprofs_session_in *in, char **errors);
/*
 * stats_session_hosts_write() - "session":..,"hosts":[{"host":..,"error":..|null}...] of
 * session @in, @why[i] the reason host i was left out (NULL: it was not).
 */
void stats_session_hosts_write(struct xs_out *o, const struct xprofs_session_in *in,
			       char *const *why);
/* stats_db_session_head() - "{", the hosts (@nl: each on a new line), ",\n": a session view's. */
int stats_db_session_head(struct xs_out *o, const struct xprofs_session_in *in, char **errors,
			  bool nl);

/* stats_safe_div() - tsl SafeDivide(): @a / @b, 0 for |@b| < 1e-10. */
double stats_safe_div(double a, double b);
/*
 * stats_bound_by() - SetRooflineMetrics()'s bottleneck over compute and HBM (every byte
 * counted as HBM: no memory_accessed_breakdown) of @flops and @bytes in @ps at the peaks
 * (per second): "Compute", "HBM" or "Unknown"; the FLOP and HBM utilisations (uncapped)
 * and the HBM GiB/s into *futil, *butil, *hbm_gibps.
 */
const char *stats_bound_by(double flops, double bytes, int64_t ps, double peak_flops,
			   double peak_bw, double *futil, double *butil, double *hbm_gibps);
/* A key (with its punctuation) and a number. */
struct stats_kv {
	const char *key;
	double v;
};
/* stats_out_opt_str() - @lit (a key and colon), then @s, or null when @s is NULL. */
void stats_out_opt_str(struct xs_out *o, const char *lit, const char *s);
/* stats_out_per_s() - @lit, then @amount per second of @ps, or null without @has or time. */
void stats_out_per_s(struct xs_out *o, const char *lit, bool has, double amount, int64_t ps);
/* stats_out_kv() - the @n numbers @kv in order, then @tail, the string @str and "}". */
void stats_out_kv(struct xs_out *o, const struct stats_kv *kv, size_t n, const char *tail,
		  const char *str);
/* An op's roofline numbers (SetRooflineMetrics()), rates per second, 0 where XProf has 0. */
struct stats_roof {
	double flop_rate, model_rate, hbm_bw, intensity, bottleneck_intensity;
	double flops_util, hbm_util; /* of the peak FLOP/s and bandwidth (0: unknown peak) */
	const char *bound;           /* "Compute", "HBM" or "Unknown" */
};
/* stats_roofline_get() - @op's roofline numbers against the peaks of @d. */
void stats_roofline_get(const struct op *op, const struct stats_opstats *d, struct stats_roof *out);
/* stats_is_remat() - tsl IsRematerialization(@expr, @tf_op). */
bool stats_is_remat(const char *expr, const char *tf_op);
/* stats_is_outside_compilation() - tsl IsOutsideCompilationOp(@tf_op, @expr). */
bool stats_is_outside_compilation(const char *tf_op, const char *expr);
/*
 * stats_op_times_write() - ,"occurrences",..,"avg_self_time_ps" of @op
 * (SetExecutionTimes()) and its self-time fraction of @table_ps and the running
 * sum *@cum (SetRankAndTimeFractions(); null when @table_ps is 0).
 */
void stats_op_times_write(struct xs_out *o, const struct op *op, int64_t table_ps, double *cum);
/* stats_roof_write() - ,"measured_flops_per_s",..,"bound_by", the amounts, of @op and @f. */
void stats_roof_write(struct xs_out *o, const struct op *op, const struct stats_roof *f);
/* stats_opstats_env_write() - "hardware_type",..,"peak_hbm_bytes_per_s" of @d (no comma before). */
void stats_opstats_env_write(struct xs_out *o, const struct stats_opstats *d);

/* stats_op_profile_write() - op_profile.json's keys of @s (view-op-profile.c), no braces. */
int stats_op_profile_write(struct xs_out *o, const struct stats_opstats *s);
/* stats_compare_op_profile() - compare/<base>/op_profile.json (view-session-op.c). */
int stats_compare_op_profile(const struct xprofs_session_in *base,
			     const struct xprofs_session_in *cur, const struct xprofs_sink *sink);
/* stats_tf_stats_write() - framework_op_stats.json's keys of @s (view-tf-stats.c), no braces. */
int stats_tf_stats_write(struct xs_out *o, const struct stats_opstats *s);

/* ---- memory peaks above one host (session-memory.c, docs/memory.md) ---- */

/* One allocator's peak: memory_profile.json's profile_summary. */
struct stats_mem_peak {
	char *id; /* owned, NUL-terminated (id_len bytes: may hold a NUL) */
	size_t id_len;
	int64_t bytes, time_ps; /* peak_stats.peak_bytes_in_use, peak_stats_time_ps */
};
/* A host's peaks in memory_ids order; max: the highest (first of equals), SIZE_MAX: none. */
struct stats_mem_peaks {
	struct stats_mem_peak *p; /* owned, n of them */
	size_t n, max;
};
/* stats_mem_peaks_get() - the host's peaks; free with stats_mem_peaks_free(), also on failure. */
int stats_mem_peaks_get(struct xs_rctx *rc, struct stats_mem_peaks *out);
void stats_mem_peaks_free(struct stats_mem_peaks *p);
/* stats_mem_peaks_write() - a host's "memory" object of the session summary, or null. */
void stats_mem_peaks_write(struct xs_out *o, const struct stats_mem_peaks *p);
/* stats_mem_session_max() - the host (index) of the highest peak; SIZE_MAX: none (NULL: unknown). */
size_t stats_mem_session_max(const struct stats_mem_peaks *const *hosts, size_t n);
/* stats_mem_session_write() - the session summary's "memory_peak" of @n hosts named @names. */
void stats_mem_session_write(struct xs_out *o, const char *const *names,
			     const struct stats_mem_peaks *const *hosts, size_t n);
/* stats_compare_summary() - compare/<base>/summary.json: the change of the memory peaks. */
int stats_compare_summary(const struct xprofs_session_in *base, const struct xprofs_session_in *cur,
			  const struct xprofs_sink *sink);

/* The views' writers, for their session forms (session-hlo.c). */
/*
 * stats_session_opstats() - a session's op_profile.json or
 * framework_op_stats.json (view-session-op.c), for
 * xprofs_decode_session_view(); -EINVAL for another view.
 */
int stats_session_opstats(enum xprofs_view v, const struct xprofs_session_in *in,
			  const struct xprofs_sink *sink);
int stats_hlo_stats_write(struct xs_out *o, const struct stats_opstats *d);
int stats_roofline_write(struct xs_out *o, const struct stats_opstats *d);

#endif
