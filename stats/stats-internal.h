/*
 * stats-internal.h - one plane's op table (view-ops.c), shared by ops.json and
 * overview.json: ops aggregated by name as XProf's OpMetricsDb, the plane's
 * programs and its peak rates. Memory: O(distinct ops), at most OPS_MAX.
 */
#ifndef XPROFS_STATS_INTERNAL_H
#define XPROFS_STATS_INTERNAL_H

#include "xprofs/stats.h"
#include "xprofs/xspace.h"

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

/* Which lines feed ops.json (and the device time of steps.json). */
enum stats_line_kind { LK_NONE = 0, LK_XLA_OPS, LK_STREAM, LK_HOST };
/* stats_op_line_kind() - the kind of line @l of plane @p (rule: docs/decode.md). */
enum stats_line_kind stats_op_line_kind(const struct xprofs_xspace *x, const struct xs_plane *p,
					const struct xs_line *l, bool host_has_fw);
/* stats_host_has_fw() - @p has "Framework Ops" / "TensorFlow Ops" lines (then only they hold ops). */
bool stats_host_has_fw(const struct xprofs_xspace *x, const struct xs_plane *p);

#define OPS_MAX ((size_t)1 << 20)

struct op {
	char *name, *category; /* owned */
	char *program;         /* owned, NULL: none known (set by the first occurrence) */
	bool program_tried;
	uint64_t count;
	int64_t occurrences; /* positioned events 1, num_occurrences events their count */
	int64_t total, self, min, max;
	double flops, bytes, model_flops;
	bool has_flops, has_bytes, has_model_flops;
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

/* One plane's ops (stats_ops_plane()). */
struct stats_ops {
	struct opmap m;
	struct progmap pm;
	struct stats_plane_facts f; /* filled when events > 0 */
	uint64_t events;
	int64_t total, self; /* sums of the op events' durations / of the ops' self times */
};

/* stats_ops_plane() - aggregate the op lines of plane @pi; free with stats_ops_free(). */
int stats_ops_plane(struct xs_rctx *rc, size_t pi, struct stats_ops *out);
void stats_ops_free(struct stats_ops *d);
/* stats_ops_merge() - add @src's ops to @dst's by name (XProf's OpMetricsDbCombiner); @dst
 * starts zeroed. Its facts and programs map stay empty. */
int stats_ops_merge(struct stats_ops *dst, const struct stats_ops *src);
/* stats_ops_sorted() - indexes of d->m.ops by self time (desc), total, name; caller frees. */
size_t *stats_ops_sorted(struct stats_ops *d);

/*
 * For the session-wide views (view-session.c), ops.json's writers: one op's
 * fields after its opening "{\"name\":" (stats_op_write()), a by_category /
 * by_program rollup's elements over m->ops[0..n) (stats_ops_rollup_write()),
 * and the ",\"peak_flops_per_s\":..." keys of @f (stats_ops_peak_write()).
 */
void stats_op_write(struct xs_out *o, const struct op *op, const struct stats_plane_facts *f,
		    int64_t plane_self);
int stats_ops_rollup_write(struct opmap *m, bool by_program, int64_t plane_self, struct xs_out *o);
void stats_ops_peak_write(struct xs_out *o, const struct stats_plane_facts *f);

/* ---- steps (view-steps.c), for overview.json ---- */

#define STATS_BD_N 9 /* steps.json's breakdown types (view-steps.c) */

/* One plane's step-time summary (XProf's StepSummary) and breakdown averages. */
struct stats_step_summary {
	bool has; /* false: no steps */
	size_t plane;
	uint64_t n;
	double avg, stddev;
	int64_t min, max;
	double bd[STATS_BD_N]; /* average ps per step, by type (steps.json's breakdown order) */
};
/* steps.json's breakdown keys ("idle_ps", ...), by type. */
extern const char *const stats_bd_keys[STATS_BD_N];
/* One step of the plane stats_steps_overview() summarizes: index @i of @n, its duration and
 * breakdown (ps, STATS_BD_N types, summing to @dur). Nonzero return stops the walk. */
typedef int (*stats_step_fn)(void *arg, uint64_t i, uint64_t n, int64_t dur, const int64_t *bd);
/* stats_steps_each() - @fn for each step stats_steps_overview() summarizes, in order. */
int stats_steps_each(struct xs_rctx *rc, stats_step_fn fn, void *arg);
/* stats_steps_overview() - the summary of the host steps, else of the first plane with steps. */
int stats_steps_overview(struct xs_rctx *rc, struct stats_step_summary *sum);
/* stats_step_summary_write() - @sum as steps.json's summary object. */
void stats_step_summary_write(struct xs_out *o, const struct xprofs_xspace *x,
			      const struct stats_step_summary *sum);

/* A device plane's busy time: the union of its op lines, and their first start / last end. */
struct stats_busy {
	int64_t busy, first, last;
	bool any;
};
int stats_device_busy(struct xs_rctx *rc, size_t q, struct stats_busy *b);
/*
 * stats_steps_overview_busy() - stats_steps_overview(), and where the step sweep of a
 * device plane q already merged all its op lines, busy_ok[q] true and busy[q] what
 * stats_device_busy(q) gives (@busy, @busy_ok: x->n_planes each, or both NULL).
 */
int stats_steps_overview_busy(struct xs_rctx *rc, struct stats_step_summary *sum,
			      struct stats_busy *busy, bool *busy_ok);
/*
 * stats_busy_in_steps() - whether device plane @q's busy time will likely come with
 * stats_steps_overview_busy() (it has steps, so their sweep merges its op lines):
 * its own union pass can be left out, and run afterwards only if it did not.
 */
bool stats_busy_in_steps(const struct xprofs_xspace *x, size_t q);
/*
 * stats_steps_busy_sum() - stats_steps_overview() into @sum, and Σ over the device
 * planes (in plane order) of stats_device_busy()'s busy time and span (last end −
 * first start) into *busy, *span: the session summary's per-host numbers.
 */
int stats_steps_busy_sum(struct xs_rctx *rc, struct stats_step_summary *sum, int64_t *busy,
			 int64_t *span);

#endif
