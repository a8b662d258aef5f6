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
struct dec_plane_facts {
	char *device_type, *vendor; /* owned, NULL when absent */
	char *gpu_device_name;      /* owned, NULL when absent (AMD: "gfx942:...") */
	double peak_tflops, peak_hbm_gbps, mem_bw, clock_khz, core_count, cc_major, cc_minor;
	bool has_peak_tflops, has_peak_hbm_gbps, has_mem_bw, has_clock, has_core_count, has_cc;
	double peak_flops, peak_bw;
};
/* dec_plane_facts_get() - the facts of plane @pi (enters it); clear with dec_plane_facts_clear(). */
int dec_plane_facts_get(struct dec_rctx *rc, size_t pi, struct dec_plane_facts *f);
void dec_plane_facts_clear(struct dec_plane_facts *f);
/*
 * dec_gpu_peak_flops() - XProf's GPU peak FLOP/s from @f's device
 * capabilities (gpu-peak.c, hardware_type_utils.cc); 0 when unknown.
 */
double dec_gpu_peak_flops(const struct dec_plane_facts *f);

/* Which lines feed ops.json (and the device time of steps.json). */
enum dec_line_kind { LK_NONE = 0, LK_XLA_OPS, LK_STREAM, LK_HOST };
/* dec_op_line_kind() - the kind of line @l of plane @p (rule: docs/decode.md). */
enum dec_line_kind dec_op_line_kind(const struct xprofs_xspace *x, const struct dec_plane *p,
				    const struct dec_line *l, bool host_has_fw);
/* dec_host_has_fw() - @p has "Framework Ops" / "TensorFlow Ops" lines (then only they hold ops). */
bool dec_host_has_fw(const struct xprofs_xspace *x, const struct dec_plane *p);

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
	uint32_t *slot; /* 1 + op index, 0 empty */
	size_t nslot;
	int64_t other; /* index of "(other)" or -1 */
};

/* A plane's XLA programs: program_id -> the "XLA Modules" event named "<module>(<id>)". */
struct progmap {
	uint64_t *id;
	char **name; /* owned */
	size_t n, cap;
	bool sorted;
};

/* One plane's ops (dec_ops_plane()). */
struct dec_ops {
	struct opmap m;
	struct progmap pm;
	struct dec_plane_facts f; /* filled when events > 0 */
	uint64_t events;
	int64_t total, self; /* sums of the op events' durations / of the ops' self times */
};

/* dec_ops_plane() - aggregate the op lines of plane @pi; free with dec_ops_free(). */
int dec_ops_plane(struct dec_rctx *rc, size_t pi, struct dec_ops *out);
void dec_ops_free(struct dec_ops *d);
/* dec_ops_merge() - add @src's ops to @dst's by name (XProf's OpMetricsDbCombiner); @dst
 * starts zeroed. Its facts and programs map stay empty. */
int dec_ops_merge(struct dec_ops *dst, const struct dec_ops *src);
/* dec_ops_sorted() - indexes of d->m.ops by self time (desc), total, name; caller frees. */
size_t *dec_ops_sorted(struct dec_ops *d);

/*
 * For the session-wide views (view-session.c), ops.json's writers: one op's
 * fields after its opening "{\"name\":" (dec_op_write()), a by_category /
 * by_program rollup's elements over m->ops[0..n) (dec_ops_rollup_write()),
 * and the ",\"peak_flops_per_s\":..." keys of @f (dec_ops_peak_write()).
 */
void dec_op_write(struct dec_out *o, const struct op *op, const struct dec_plane_facts *f,
		  int64_t plane_self);
int dec_ops_rollup_write(struct opmap *m, bool by_program, int64_t plane_self, struct dec_out *o);
void dec_ops_peak_write(struct dec_out *o, const struct dec_plane_facts *f);

/* ---- steps (view-steps.c), for overview.json ---- */

#define DEC_BD_N 9 /* steps.json's breakdown types (view-steps.c) */

/* One plane's step-time summary (XProf's StepSummary) and breakdown averages. */
struct dec_step_summary {
	bool has; /* false: no steps */
	size_t plane;
	uint64_t n;
	double avg, stddev;
	int64_t min, max;
	double bd[DEC_BD_N]; /* average ps per step, by type (steps.json's breakdown order) */
};
/* steps.json's breakdown keys ("idle_ps", ...), by type. */
extern const char *const dec_bd_keys[DEC_BD_N];
/* One step of the plane dec_steps_overview() summarizes: index @i of @n, its duration and
 * breakdown (ps, DEC_BD_N types, summing to @dur). Nonzero return stops the walk. */
typedef int (*dec_step_fn)(void *arg, uint64_t i, uint64_t n, int64_t dur, const int64_t *bd);
/* dec_steps_each() - @fn for each step dec_steps_overview() summarizes, in order. */
int dec_steps_each(struct dec_rctx *rc, dec_step_fn fn, void *arg);
/* dec_steps_overview() - the summary of the host steps, else of the first plane with steps. */
int dec_steps_overview(struct dec_rctx *rc, struct dec_step_summary *sum);
/* dec_step_summary_write() - @sum as steps.json's summary object. */
void dec_step_summary_write(struct dec_out *o, const struct xprofs_xspace *x,
			    const struct dec_step_summary *sum);

/* A device plane's busy time: the union of its op lines, and their first start / last end. */
struct dec_busy {
	int64_t busy, first, last;
	bool any;
};
int dec_device_busy(struct dec_rctx *rc, size_t q, struct dec_busy *b);
/*
 * dec_steps_overview_busy() - dec_steps_overview(), and where the step sweep of a
 * device plane q already merged all its op lines, busy_ok[q] true and busy[q] what
 * dec_device_busy(q) gives (@busy, @busy_ok: x->n_planes each, or both NULL).
 */
int dec_steps_overview_busy(struct dec_rctx *rc, struct dec_step_summary *sum,
			    struct dec_busy *busy, bool *busy_ok);
/*
 * dec_busy_in_steps() - whether device plane @q's busy time will likely come with
 * dec_steps_overview_busy() (it has steps, so their sweep merges its op lines):
 * its own union pass can be left out, and run afterwards only if it did not.
 */
bool dec_busy_in_steps(const struct xprofs_xspace *x, size_t q);
/*
 * dec_steps_busy_sum() - dec_steps_overview() into @sum, and Σ over the device
 * planes (in plane order) of dec_device_busy()'s busy time and span (last end −
 * first start) into *busy, *span: the session summary's per-host numbers.
 */
int dec_steps_busy_sum(struct dec_rctx *rc, struct dec_step_summary *sum, int64_t *busy,
		       int64_t *span);

#endif
