/*
 * ops.c - one plane's op table: its ops aggregated by name as XProf's
 * OpMetricsDb (count, total, self, min/max time, flops / bytes accessed, the
 * program), the plane's XLA programs (programs.c), and tables combined by
 * name (OpMetricsDbCombiner). ops.json, overview.json, overview.svg and the
 * session's ops.json are written from it.
 *
 * Design: which lines feed an op plane is stats_op_line_kind() (lines.c).
 * Ops are aggregated per plane in an op map by name (opmap.c; GPU kernels
 * by program id and hlo_op); self time = duration minus the durations of the direct children
 * wholly inside it (XProf's rule, ConvertTensorCoreDeviceTraceXPlaneToOpMetricsDb()),
 * from a stack of open events. A GPU XLA op takes its category, provenance,
 * source and per-occurrence FLOPs / bytes from its HLO instruction in the
 * render's facts table (xla_group(), xla_account()), as XProf's
 * AggregateHloFunc() does. On a whole walk it also takes a device plane's
 * span (first op start, last op end) for the op db's IDLE op, so no second
 * walk merges the op lines for it. Limits: at most OPS_MAX distinct ops per
 * plane (the rest go to "(other)"), nesting at most OPS_DEPTH_MAX deep
 * (deeper events count as leaves).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats-internal.h"

#define OPS_DEPTH_MAX 1024

uint64_t stats_ops_cut_min = (uint64_t)1 << 20;

struct frame {
	int64_t start, end, dur, child;
	int64_t op;
};

static void op_finish(struct opmap *m, const struct frame *f)
{
	int64_t self = f->dur - f->child;

	m->ops[f->op].self += self > 0 ? self : 0;
}

/*
 * GPU ops are keyed by their hlo_op string and program id; when the string is
 * a ref (the usual case), the ref names it within the plane, so a table from
 * (ref, program id) to the op's index skips splitting and hashing the
 * string. Open addressing, not a direct-mapped cache: a plane names 10^3 to
 * 10^4 kernels, and two of them in one slot, met by turns, missed every time
 * (70 % of the kernels of a generated GPU profile). Filled to 3/4 at most;
 * past that, new kernels take the slow path.
 */
#define REFC_BITS 14
#define REFC_SIZE ((size_t)1 << REFC_BITS)

struct refc {
	int64_t ref;
	uint64_t pid;
	int64_t gi; /* -1: empty; -ENOENT: no op (the kernel is unattributed) */
};

/*
 * Framework ops and left-out kernels are keyed by strings made from the
 * kernel's metadata (and its tf_op); a small direct-mapped cache from the
 * metadata id (and a copy of the tf_op, NULL for a left-out kernel) to the
 * op's index skips parsing and hashing them for every kernel.
 */
#define MDC_BITS 12 /* real GPU planes name 10^3..10^4 kernels */
#define MDC_SIZE ((size_t)1 << MDC_BITS)

struct mdc {
	int64_t md;
	char *tf;    /* owned; NULL: the entry is a left-out kernel's */
	int64_t gi1; /* the op's index + 1; 0: empty (so a zeroed table is empty) */
};

/*
 * The GPU run being merged: ConvertDeviceTraceXPlaneToOpMetricsDb() merges
 * contiguous events of one HLO op name and group_id into one entry of the
 * first event's op, each event an occurrence (its HLOTracker since xprof
 * beea666b); @group is 0 after each flush, as its Reset() leaves it.
 */
struct run {
	int64_t gi; /* -1: none open */
	int64_t group;
	uint64_t events;
	int64_t dur;
	struct xs_amounts v;
};

/* One line's aggregation: the op maps, the line's kind and the stack of open events. */
struct ops_acc {
	struct stats_union *ub;  /* the line being walked makes the plane's busy time: its union */
	struct stats_busy *span; /* the line being walked is one of the plane's span: or NULL */
	struct opmap *m, *un;
	struct progmap *pm;
	enum stats_line_kind kind;
	uint64_t events, un_events;
	int64_t total, un_total;
	struct run run;
	size_t depth;
	struct frame stack[OPS_DEPTH_MAX];
	struct refc hc[REFC_SIZE]; /* (hlo_op ref, program id) -> op, for this plane */
	size_t hc_n;               /* its entries in use */
	/* kernel metadata (and tf_op) -> framework / left-out op: MDC_SIZE entries, owned,
	 * allocated at the first kernel (a plane without kernels costs nothing) */
	struct mdc *mc;
	struct xs_rctx *rc; /* borrowed: the render's, for its HLO facts */
	/* the stats ops_event() reads on stream / XLA Ops lines: the walk decodes only them */
	struct xs_stat_keys ks_stream, ks_xla;
	/* borrowed: the plane's duty part on its XLA Ops line, or NULL */
	struct stats_duty_part *dp;
	/* borrowed: the host framework-op count on this line, or NULL */
	struct tf_walk *tfw;
	/* borrowed, NULL: none: the step hints this walk notes, and the line's (hints.c) */
	struct stats_hints *hints;
	struct stats_hline *hl;
};

/*
 * The stats xs_collect_stat() fills that the op tables read, per line kind:
 * the others of an event are checked but not decoded (xs_walk_stats_keys()).
 */
static const char *const stream_keys[] = {"hlo_category",   "hlo_op",      "flops",
					  "bytes_accessed", "model_flops", "program_id",
					  "group_id",       "tf_op"};
static const char *const xla_keys[] = {"hlo_category",
				       "hlo_op",
				       "flops",
				       "bytes_accessed",
				       "model_flops",
				       "program_id",
				       "device_offset_ps",
				       "device_duration_ps"};
/* What a walk that notes step hints also reads (stats_hints_add()). */
static const char *const hint_keys[] = {"group_id", "correlation_id"};
_Static_assert(sizeof(stream_keys) / sizeof(stream_keys[0]) + 2 <= XS_STAT_KEYS_MAX &&
		       sizeof(xla_keys) / sizeof(xla_keys[0]) + 2 <= XS_STAT_KEYS_MAX,
	       "a key set holds an op walk's stats and the hints'");

/* keys_of() - the ids plane @p gives the stat names @names[0..n) into @out. */
static void keys_of(struct wire_cur *c, const struct xs_plane *p, const char *const *names,
		    size_t n, struct xs_stat_keys *out)
{
	for (size_t i = 0; i < n; i++) {
		int64_t k = xs_stmd_key(c, p, names[i]);

		if (k >= 0)
			xs_stat_keys_add(out, k);
	}
}

/*
 * refc_of() - the table entry of kernel stats @os's hlo_op in program @pid,
 * or the empty one it would take; NULL when the hlo_op is a plain string (no
 * ref: no identity to key by), or when it is not there and the table is full.
 */
static struct refc *refc_of(struct ops_acc *a, const struct xs_opstats *os, uint64_t pid)
{
	int64_t ref = os->ref[XS_OS_HLO_OP];
	size_t i;

	if (!os->hlo_op || (os->plain & (1u << XS_OS_HLO_OP)))
		return NULL;
	i = (size_t)((((uint64_t)ref ^ (pid * 0xff51afd7ed558ccdull)) * 0x9e3779b97f4a7c15ull) >>
		     (64 - REFC_BITS));
	while (a->hc[i].gi != -1 && (a->hc[i].ref != ref || a->hc[i].pid != pid))
		i = (i + 1) & (REFC_SIZE - 1); /* ends: the table keeps empty entries */
	return a->hc[i].gi != -1 || a->hc_n < REFC_SIZE / 4 * 3 ? &a->hc[i] : NULL;
}

/* refc_holds() - whether entry @c (of refc_of()) holds @os's hlo_op in program @pid. */
static bool refc_holds(const struct refc *c, const struct xs_opstats *os, uint64_t pid)
{
	return c && c->gi != -1 && c->ref == os->ref[XS_OS_HLO_OP] && c->pid == pid;
}

/* The op a TPU / host op event of metadata @md counts towards (by name), or -errno. */
static int64_t op_group(struct ops_acc *a, struct xs_evmd *md, const struct xs_opstats *os)
{
	int64_t gi;

	if (md->group >= 0 && md != &xs_empty_evmd)
		return md->group;
	gi = stats_opmap_get(a->m, md->name, os->category ? os->category : md->category);
	if (gi >= 0 && md != &xs_empty_evmd && !os->category)
		md->group = gi; /* the next occurrence skips the look-up */
	return gi;
}

/* hlo_leaf() - GpuEventStats' hlo_op_names.back(): the piece after the last "::". */
static const char *hlo_leaf(const char *hlo)
{
	const char *p;

	while ((p = strstr(hlo, "::")) != NULL)
		hlo = p + 2;
	return hlo;
}

/*
 * op_hlo() - when @op (keyed (@pid, @leaf)) is first found in the HLO, what
 * XProf's AggregateHloFunc() takes from its HLO instruction @f: provenance
 * TfOpName(), SourceInfo(), and the PerformanceInfoWrapper's figures. Not
 * for "(other)", which holds ops of many instructions.
 */
static int op_hlo(struct op *op, const char *leaf, uint64_t pid, const struct xprofs_hlo_fact *f)
{
	struct xprofs_buf b;
	int r;

	if (op->hlo || !op->has_pid || op->pid != pid || strcmp(op->name, leaf))
		return 0;
	op->hlo = true;
	op->hlo_flops = f->device_flops;
	op->hlo_model_flops = f->flops;
	op->hlo_bytes = f->bytes_accessed;
	/* op_name ":" op_type, each cut at XPROFS_HLO_FACT_STR_MAX: it fits */
	xprofs_buf_init(&b, 2 * XPROFS_HLO_FACT_STR_MAX + 2);
	r = xprofs_hlo_tf_op_name(f, &b);
	if (r == 0 && b.len && !(op->provenance = strndup(b.data, b.len)))
		r = -ENOMEM;
	xprofs_buf_deinit(&b);
	if (r == 0 && f->source_len && !(op->source = strndup(f->source, f->source_len)))
		r = -ENOMEM;
	return r;
}

/*
 * xla_find() - instruction @leaf of program @pid in the render's HLO facts
 * (*f, *found): 0 when the kernel counts, -ENOENT when the profile has HLO
 * without it (xla_group() says when), -errno.
 */
static int xla_find(struct ops_acc *a, const char *leaf, uint64_t pid, struct xprofs_hlo_fact *f,
		    bool *found)
{
	const struct xprofs_hlo_facts *facts;
	int r;

	if ((r = xs_hlo_facts(a->rc, &facts)) < 0)
		return r;
	*found = xprofs_hlo_facts_find(facts, pid, leaf, strlen(leaf), f);
	if (!*found && xprofs_hlo_facts_count(facts) && !xprofs_hlo_facts_truncated(facts))
		return -ENOENT;
	return 0;
}

/*
 * xla_group() - the op of a GPU event with an hlo_op @hlo and a program id @pid
 * (XProf's key (program_id, name)), or -errno; -ENOENT when the kernel is
 * left out: the name is empty, or the profile has HLO and no instruction of
 * that name in program @pid (ConvertDeviceTraceXPlaneToOpMetricsDb() counts
 * an XLA kernel only when GetHloInstruction() finds it). A profile without
 * HLO keeps every kernel (XProf would show none; docs/stats.md), and so
 * does one whose facts table was cut by its memory cap (a name missing
 * there may be in the part not read). The op's category is its
 * instruction's Category() when found, else the event's. @c: the kernel's
 * cache entry (refc_of(), may be NULL), read and filled here.
 */
static int64_t xla_group(struct ops_acc *a, struct xs_evmd *md, const struct xs_opstats *os,
			 const char *hlo, uint64_t pid, struct refc *c)
{
	const char *cat = os->category ? os->category : md->category, *leaf;
	struct xprofs_hlo_fact f;
	bool found;
	int64_t gi;
	int r;

	if (refc_holds(c, os, pid))
		return c->gi;
	if (!*(leaf = hlo_leaf(hlo)))
		return -ENOENT;
	if ((r = xla_find(a, leaf, pid, &f, &found)) < 0) {
		gi = r;
	} else {
		gi = stats_opmap_get_key(a->m, (struct stats_opkey){leaf, true, pid},
					 found ? f.category : cat);
		if (gi >= 0 && found && (r = op_hlo(&a->m->ops[gi], leaf, pid, &f)) < 0)
			return r;
	}
	if (c && (gi >= 0 || gi == -ENOENT)) {
		a->hc_n += c->gi == -1;
		*c = (struct refc){os->ref[XS_OS_HLO_OP], pid, gi};
	}
	return gi;
}

/*
 * xla_leaf() - hlo_leaf(@hlo), from the op cache entry @c holds for it when
 * it holds one (@c: refc_of(), may be NULL).
 */
static const char *xla_leaf(const struct ops_acc *a, const struct refc *c,
			    const struct xs_opstats *os, const char *hlo, uint64_t pid)
{
	/* "(other)", past OPS_MAX ops, is not the kernel's name */
	if (refc_holds(c, os, pid) && c->gi >= 0 && c->gi != a->m->other)
		return a->m->ops[c->gi].name;
	return hlo_leaf(hlo);
}

/*
 * xla_counts() - whether kernel @leaf of program @pid (stats @os, cache entry
 * @c of refc_of()) counts, as xla_group() decides, without making its op: 0,
 * -ENOENT (left out), -errno.
 */
static int xla_counts(struct ops_acc *a, const struct refc *c, const struct xs_opstats *os,
		      const char *leaf, uint64_t pid)
{
	struct xprofs_hlo_fact f;
	bool found;

	if (refc_holds(c, os, pid))
		return c->gi == -ENOENT ? -ENOENT : 0;
	return xla_find(a, leaf, pid, &f, &found);
}

/* mdc_slot() - the cache entry of kernel metadata @md (with @tf: a framework op's); NULL: no memory. */
static struct mdc *mdc_slot(struct ops_acc *a, int64_t md, const char *tf)
{
	uint64_t h = (uint64_t)md * 0x9e3779b97f4a7c15ull;

	if (!a->mc && !(a->mc = calloc(MDC_SIZE, sizeof(*a->mc))))
		return NULL;
	if (tf)
		h ^= xprofs_table_hash(0, tf, strlen(tf));
	return &a->mc[(h * 0xff51afd7ed558ccdull) >> (64 - MDC_BITS)];
}

/* mdc_hit() - the op cached for (@md, @tf), or -1. */
static int64_t mdc_hit(struct ops_acc *a, int64_t md, const char *tf)
{
	struct mdc *c = mdc_slot(a, md, tf);

	if (!c || !c->gi1 || c->md != md || !c->tf != !tf || (tf && strcmp(c->tf, tf)))
		return -1;
	return c->gi1 - 1;
}

/* mdc_set() - cache op @gi for (@md, @tf) (best effort: no memory, no entry). */
static void mdc_set(struct ops_acc *a, int64_t md, const char *tf, int64_t gi)
{
	struct mdc *c = mdc_slot(a, md, tf);
	char *copy = c && tf ? strdup(tf) : NULL;

	if (!c || (tf && !copy))
		return;
	free(c->tf);
	*c = (struct mdc){md, copy, gi + 1};
}

/*
 * Self time, XProf's rule (ConvertTensorCoreDeviceTraceXPlaneToOpMetricsDb():
 * an AncestorStack whose parent test is Timespan::Includes()): @e (of op
 * @gi) is a child of the innermost open event that wholly contains it
 * (start <= e.start and e.end <= end); open events that do not are closed
 * first. The parent's children time grows by @e's whole duration; an event
 * that only partly overlaps the open one is not its child.
 */
static void ops_nest(struct ops_acc *a, const struct xs_event *e, int64_t gi)
{
	struct frame f = {e->start_ps, e->end_ps, e->duration_ps, 0, gi};

	if (e->has_num) { /* aggregated: no position on the timeline */
		op_finish(a->m, &f);
		return;
	}
	while (a->depth > 0 && !(a->stack[a->depth - 1].start <= e->start_ps &&
				 e->end_ps <= a->stack[a->depth - 1].end))
		op_finish(a->m, &a->stack[--a->depth]);
	if (a->depth > 0) {
		struct frame *top = &a->stack[a->depth - 1];

		top->child = xs_sat_add(top->child, e->duration_ps > 0 ? e->duration_ps : 0);
	}
	if (a->depth < OPS_DEPTH_MAX)
		a->stack[a->depth++] = f;
	else
		op_finish(a->m, &f);
}

/*
 * op_program() - @op's program, from its first occurrence: "<hlo_module>(<program_id>)"
 * (XProf's HloModuleNameWithProgramId()), else the "XLA Modules" event of its program_id.
 */
static int op_program(const struct ops_acc *a, struct op *op, const struct xs_evmd *md,
		      const struct xs_opstats *os)
{
	const char *mod = os->hlo_module ? os->hlo_module : md->hlo_module;
	bool has_id = os->has_program_id || md->has_program_id;
	uint64_t id = os->has_program_id ? os->program_id : md->program_id;
	const char *known;

	op->program_tried = true;
	if (mod && has_id) {
		if (asprintf(&op->program, "%s(%" PRIu64 ")", mod, id) < 0) {
			op->program = NULL;
			return -ENOMEM;
		}
	} else if (mod) {
		op->program = strdup(mod);
	} else if (has_id && (known = stats_progmap_find(a->pm, id))) {
		op->program = strdup(known);
	} else {
		return 0;
	}
	return op->program ? 0 : -ENOMEM;
}

/* op_first() - at @op's first occurrence (event @e of @md): its program, from the event's strings. */
static int op_first(struct xs_rctx *rc, const struct ops_acc *a, struct op *op,
		    const struct xs_event *e, const struct xs_evmd *md)
{
	struct xs_opstats ps;
	int r = 0;

	if (op->program_tried)
		return 0;
	memset(&ps, 0, sizeof(ps));
	ps.strings = ps.borrow = true;
	if (e->has_stats && (a->kind == LK_STREAM || a->kind == LK_XLA_OPS))
		r = xs_walk_stats(rc, &rc->ev, e->stats_off, e->off + e->len - e->stats_off,
				  XEVENT_F_STATS, xs_collect_stat, &ps);
	if (r == 0)
		r = op_program(a, op, md, &ps);
	xs_opstats_clear(&ps);
	return r;
}

/* op_add_amounts() - the FLOPs, bytes and model FLOPs @v has, added to @op. */
static void op_add_amounts(struct op *op, const struct xs_amounts *v)
{
	if (v->has_flops)
		op->flops += v->flops, op->has_flops = true;
	if (v->has_bytes)
		op->bytes += v->bytes, op->has_bytes = true;
	if (v->has_model_flops)
		op->model_flops += v->model_flops, op->has_model_flops = true;
}

/*
 * op_account() - @events events of @occ occurrences and @dur in all into @op,
 * with @v: stats_op_add() of such an op (no self time), field by field, since
 * it runs once per event.
 */
static void op_account(struct op *op, uint64_t events, int64_t occ, int64_t dur,
		       const struct xs_amounts *v)
{
	op->count += events;
	op->occurrences = xs_sat_add(op->occurrences, occ);
	op->total = xs_sat_add(op->total, dur);
	op_add_amounts(op, v);
	if (dur < op->min)
		op->min = dur;
	if (dur > op->max)
		op->max = dur;
}

/*
 * GPU self time: ConvertDeviceTraceXPlaneToOpMetricsDb() enters every op with
 * children_time_ps = 0, so an op's self time is its time (kernels nested on a
 * stream are not subtracted; never below 0 here).
 */
static void gpu_self(struct op *op, int64_t dur)
{
	op->self = xs_sat_add(op->self, dur > 0 ? dur : 0);
}

/* pick() - an amount: the HLO's @hlo when > 0, else the stat's, else a known 0 or none. */
static void pick(const struct op *op, double hlo, bool has_stat, double stat, double *out,
		 bool *has)
{
	if (op->hlo && hlo > 0)
		*out = hlo, *has = true;
	else if (has_stat)
		*out = stat, *has = true;
	else
		*has = op->hlo && !isnan(hlo); /* a known 0 */
}

/*
 * xla_account() - run @u into its XLA op @op as DeviceOpMetricsDbBuilder::
 * EnterOp() takes AggregateHloFunc()'s OpData (xprof beea666b, 2026-07-23):
 * occurrences = the run's kernels; per occurrence flops = the instruction's
 * DeviceFlops() when > 0, else the run's last "flops" stat (HLOTracker keeps
 * one occurrence's value); bytes likewise; model flops = ModelFlops() when
 * > 0, else that flops stat, and when that is 0 the op's flops so far. Each
 * amount counts once per occurrence. An amount is null only when neither
 * the HLO nor a stat gives one (pick()).
 */
static void xla_account(struct op *op, const struct run *u)
{
	struct xs_amounts v = {0};
	double n = (double)u->events, mf = 0;

	pick(op, op->hlo_flops, u->v.has_flops, u->v.flops, &v.flops, &v.has_flops);
	pick(op, op->hlo_bytes, u->v.has_bytes, u->v.bytes, &v.bytes, &v.has_bytes);
	if (op->hlo && op->hlo_model_flops > 0)
		mf = op->hlo_model_flops;
	else if (u->v.has_flops)
		mf = u->v.flops;
	v.flops *= n;
	v.bytes *= n;
	if (mf != 0)
		v.model_flops = mf * n, v.has_model_flops = true;
	op_account(op, u->events, (int64_t)u->events, u->dur, &v);
	if (mf == 0) {
		op->model_flops = op->flops;
		op->has_model_flops = op->has_flops;
	}
	gpu_self(op, u->dur);
}

/* run_flush() - the open run, if any, into its op (AggregateHloFunc()). */
static void run_flush(struct ops_acc *a)
{
	struct run *u = &a->run;

	if (u->gi >= 0)
		xla_account(&a->m->ops[u->gi], u);
	memset(u, 0, sizeof(*u));
	u->gi = -1;
}

/*
 * run_goes_on() - whether a found XLA kernel named @leaf with stats @os joins
 * the open run: the same name and the same group_id (a kernel without one
 * never does). Its program may differ: the run stays the first kernel's
 * (HLOTracker takes the op from the run's first occurrence).
 */
static bool run_goes_on(const struct ops_acc *a, const char *leaf, const struct xs_opstats *os)
{
	const struct run *u = &a->run;

	return u->gi >= 0 && os->has_group_id && os->group_id == u->group &&
	       (leaf == a->m->ops[u->gi].name || !strcmp(a->m->ops[u->gi].name, leaf));
}

/*
 * run_add() - kernel @e (stats @os, amounts @v) into the open run; @gi >= 0:
 * it starts a new run of op @gi instead, after flushing the open one.
 */
static void run_add(struct ops_acc *a, int64_t gi, const struct xs_event *e,
		    const struct xs_opstats *os, const struct xs_amounts *v)
{
	struct run *u = &a->run;

	if (gi >= 0) {
		run_flush(a);
		u->gi = gi;
		if (os->has_group_id)
			u->group = os->group_id;
	}
	u->events++;
	u->dur = xs_sat_add(u->dur, e->duration_ps);
	if (v->has_flops) /* one occurrence's value: the last one seen */
		u->v.flops = v->flops, u->v.has_flops = true;
	if (v->has_bytes)
		u->v.bytes = v->bytes, u->v.has_bytes = true;
}

/* tf_group() - XProf's op of framework kernel @e: "<tf_op name>/<kernel>", its type. */
static int64_t tf_group(struct ops_acc *a, const char *tf_op, const struct xs_event *e,
			const struct xs_evmd *md)
{
	struct xs_tfop t;
	char *name = NULL, *type = NULL;
	int64_t gi = mdc_hit(a, e->md, tf_op);

	if (gi >= 0)
		return gi;
	gi = -ENOMEM;
	xs_tfop_parse(tf_op, strlen(tf_op), &t);
	if (asprintf(&name, "%.*s/%s", (int)t.name_len, t.name, md->name) < 0)
		return -ENOMEM;
	/* DeviceOpMetricsDbBuilder::EnterOp(): an empty type is "unknown" */
	if (!(type = t.type_len ? strndup(t.type, t.type_len) : strdup("unknown")))
		goto out;
	gi = stats_opmap_get_key(a->m, (struct stats_opkey){name, true, 0}, type);
	if (gi >= 0 && !a->m->ops[gi].provenance && !strcmp(a->m->ops[gi].name, name) &&
	    !(a->m->ops[gi].provenance = strdup(tf_op)))
		gi = -ENOMEM; /* its provenance: the tf_op (EnterOpMetadata()) */
	if (gi >= 0)
		mdc_set(a, e->md, tf_op, gi);
out:
	free(name);
	free(type);
	return gi;
}

/*
 * stream_event() - a GPU stream event, as ConvertDeviceTraceXPlaneToOpMetricsDb():
 * with an hlo_op and a program id, an XLA op keyed (program_id, hlo_op's last
 * "::" piece), contiguous events of one name and group_id one run, entered
 * into the op of its first event (run_add(), xla_account()); else
 * with a tf_op, a framework op; else (XProf leaves it out) an unattributed
 * kernel, as is an XLA kernel whose instruction the HLO lacks (xla_group()).
 * A left-out kernel does not end the run being merged (XProf skips it). The
 * rest of the rules: docs/stats.md.
 */
static int stream_event(struct xs_rctx *rc, struct ops_acc *a, const struct xs_event *e,
			struct xs_evmd *md, const struct xs_opstats *os, const struct xs_amounts *v)
{
	const char *hlo = os->hlo_op ? os->hlo_op : md->hlo_op;
	bool has_pid = os->has_program_id || md->has_program_id;
	uint64_t pid = os->has_program_id ? os->program_id : md->program_id;
	const char *tf_op = hlo ? NULL : os->tf_op ? os->tf_op : md->tf_op;
	struct refc *c = hlo && has_pid ? refc_of(a, os, pid) : NULL;
	/* a kernel the table knows is left out needs no name: it is unattributed either way */
	bool out = refc_holds(c, os, pid) && c->gi == -ENOENT;
	const char *leaf = hlo && has_pid && !out ? xla_leaf(a, c, os, hlo, pid) : NULL;
	/* checked before xla_group(), which would make an op the run never enters */
	bool goes_on = leaf && run_goes_on(a, leaf, os);
	static const struct xs_amounts none;
	struct opmap *m = a->m;
	int64_t gi;
	int r;

	if (goes_on && (r = xla_counts(a, c, os, leaf, pid)) != -ENOENT) {
		if (r < 0)
			return r;
		run_add(a, -1, e, os, v);
	} else if (leaf && !goes_on && (gi = xla_group(a, md, os, hlo, pid, c)) != -ENOENT) {
		if (gi < 0 || (r = op_first(rc, a, &m->ops[gi], e, md)) < 0)
			return gi < 0 ? (int)gi : r;
		run_add(a, gi, e, os, v);
	} else if (tf_op && *tf_op) {
		run_flush(a);
		if ((r = (int)(gi = tf_group(a, tf_op, e, md))) < 0 ||
		    (r = op_first(rc, a, &m->ops[gi], e, md)) < 0)
			return r;
		op_account(&m->ops[gi], 1, 1, e->duration_ps, &none); /* flops, bytes: 0 */
		gpu_self(&m->ops[gi], e->duration_ps);
	} else {
		m = a->un;
		if ((gi = mdc_hit(a, e->md, NULL)) < 0) {
			const char *cat = os->category ? os->category : md->category;

			if ((r = (int)(gi = stats_opmap_get(m, md->name, cat))) < 0)
				return r;
			if (!os->category) /* its category is the metadata's: one op per metadata */
				mdc_set(a, e->md, NULL, gi);
		}
		if ((r = op_first(rc, a, &m->ops[gi], e, md)) < 0)
			return r;
		op_account(&m->ops[gi], 1, 1, e->duration_ps, v);
		gpu_self(&m->ops[gi], e->duration_ps);
		a->un_events++;
		a->un_total = xs_sat_add(a->un_total, e->duration_ps);
		return 0;
	}
	a->events++;
	a->total = xs_sat_add(a->total, e->duration_ps);
	return 0;
}

/* A xs_event_fn: add one event to its op (arg: struct ops_acc). */
static int ops_event(struct xs_rctx *rc, const struct xs_event *ev, struct xs_evmd *md, void *arg)
{
	struct ops_acc *a = arg;
	struct xs_opstats os = {.borrow = true, .want_tf_op = a->kind == LK_STREAM};
	struct xs_event dev = *ev, *e = &dev;
	struct xs_amounts v = md->amt;
	int64_t gi;
	int r;

	if (a->tfw && (r = stats_host_tf_event(rc, ev, md, a->tfw)) < 0)
		return r;
	if (a->ub && !ev->has_num) /* as stats_merge_union() takes it: the event's own times */
		stats_union_add(a->ub, ev->start_ps,
				ev->end_ps > ev->start_ps ? ev->end_ps : ev->start_ps);
	if (a->span && !ev->has_num) /* its first and last, the same way */
		stats_busy_widen(a->span, ev->start_ps,
				 ev->end_ps > ev->start_ps ? ev->end_ps : ev->start_ps);
	if (e->has_stats && (a->kind == LK_STREAM || a->kind == LK_XLA_OPS)) {
		if ((r = xs_walk_stats_keys(rc, &rc->ev, e->stats_off,
					    e->off + e->len - e->stats_off, XEVENT_F_STATS,
					    a->kind == LK_STREAM ? &a->ks_stream : &a->ks_xla,
					    xs_collect_stat, &os)) < 0)
			goto out;
		if (os.amt.has_flops)
			v.flops = os.amt.flops, v.has_flops = true;
		if (os.amt.has_bytes)
			v.bytes = os.amt.bytes, v.has_bytes = true;
		if (os.amt.has_model_flops)
			v.model_flops = os.amt.model_flops, v.has_model_flops = true;
		/* GetDeviceEventTimespan(): the device's own clock when the event has it */
		if (a->kind == LK_XLA_OPS && os.has_dev_off && os.has_dev_dur && !e->has_num) {
			e->start_ps = os.dev_off;
			e->duration_ps = os.dev_dur;
			e->end_ps = xs_sat_add(os.dev_off, os.dev_dur);
		}
	}
	if (a->hl) /* what pass 2 of the steps reads of the event, as ev_stat() takes it */
		stats_hints_add(a->hints, a->hl,
				(os.has_group_id ? STATS_HINT_GROUP : 0) |
					(os.has_corr && os.corr >= 0 ? STATS_HINT_CORR : 0),
				os.group_id);
	if (a->dp && a->kind == LK_XLA_OPS) { /* this walk is also the duty cycle's */
		int64_t ds[2] = {os.dev_off, os.dev_dur};

		stats_duty_part_op(a->dp, ev, md, os.has_dev_off && os.has_dev_dur ? ds : NULL);
	}
	if (a->kind == LK_STREAM) {
		r = stream_event(rc, a, e, md, &os, &v);
		goto out;
	}
	if ((r = (int)(gi = op_group(a, md, &os))) < 0 ||
	    (r = op_first(rc, a, &a->m->ops[gi], e, md)) < 0)
		goto out;
	op_account(&a->m->ops[gi], 1, e->has_num ? (e->num > 0 ? e->num : 0) : 1, e->duration_ps,
		   &v);
	a->events++;
	a->total = xs_sat_add(a->total, e->duration_ps);
	ops_nest(a, e, gi);
	r = 0;
out:
	if (os.owned) /* borrow mode: only copies to free, and nearly never any */
		xs_opstats_clear(&os);
	return r;
}

/* Aggregate one line's events into @a->m (and a->un); adds to a->events and a->total. */
static int ops_line(struct xs_rctx *rc, size_t li, struct ops_acc *a)
{
	int r = xs_line_each(rc, li, NULL, ops_event, a);

	run_flush(a); /* XProf aggregates the last run at the end of each line */
	while (a->depth > 0)
		op_finish(a->m, &a->stack[--a->depth]);
	return r;
}

/* module_event() - a xs_event_fn: an "XLA Modules" event, its program and its duty span (arg: struct ops_acc). */
static int module_event(struct xs_rctx *rc, const struct xs_event *e, struct xs_evmd *md, void *arg)
{
	struct ops_acc *a = arg;

	if (a->dp)
		stats_duty_part_module(a->dp, e);
	return stats_progmap_event(rc, e, md, a->pm);
}

/* ---- one plane ---------------------------------------------------------- */

/*
 * ops_plane() - stats_ops_plane(); with @duty, also the plane's duty part where
 * it fits; with @tf on a host plane, also stats_host_tf_ops() into
 * out->host_tf_ops, on the same walk where the lines are the same.
 */
static int ops_plane(struct xs_rctx *rc, size_t pi, size_t lo, size_t hi, bool duty, bool tf,
		     struct stats_hints *hints, struct stats_ops *out)
{
	struct xprofs_xspace *x = rc->x;
	const struct xs_plane *p = &x->planes[pi];
	bool fw = stats_plane_is_host(p) && stats_host_has_fw(x, p);
	bool whole = lo == 0 && hi == p->n_lines; /* a part (a host plane's) has no span or duty */
	struct ops_acc *acc = NULL;
	struct tf_walk *tfw = NULL;
	size_t bl, span_lines = 0;
	int r = 0;

	memset(out, 0, sizeof(*out));
	out->m.other = -1;
	/* the other part of a cut plane may have been this context's last table */
	xs_md_groups_forget(rc, pi);
	if (!(acc = malloc(sizeof(*acc))))
		return -ENOMEM;
	acc->mc = NULL;
	acc->tfw = NULL;
	tf = tf && stats_plane_is_host(p);
	if (tf && (r = stats_host_tf_new(rc, pi, &tfw)) < 0)
		goto out;
	out->un.other = -1;
	acc->m = &out->m;
	acc->un = &out->un;
	acc->pm = &out->pm;
	acc->rc = rc;
	{
		struct wire_cur c;

		wire_cur_init(&c, x->r, NULL);
		memset(&acc->ks_stream, 0, sizeof(acc->ks_stream));
		memset(&acc->ks_xla, 0, sizeof(acc->ks_xla));
		keys_of(&c, p, stream_keys, sizeof(stream_keys) / sizeof(stream_keys[0]),
			&acc->ks_stream);
		keys_of(&c, p, xla_keys, sizeof(xla_keys) / sizeof(xla_keys[0]), &acc->ks_xla);
		if (hints && xs_plane_is_device(p)) {
			keys_of(&c, p, hint_keys, 2, &acc->ks_stream);
			keys_of(&c, p, hint_keys, 2, &acc->ks_xla);
		}
		wire_cur_deinit(&c); /* its read window, in pread mode */
	}
	acc->events = acc->un_events = 0;
	acc->total = acc->un_total = 0;
	acc->depth = 0;
	memset(&acc->run, 0, sizeof(acc->run));
	acc->run.gi = -1;
	for (size_t i = 0; i < REFC_SIZE; i++)
		acc->hc[i].gi = -1;
	acc->hc_n = 0;
	out->has_duty = duty && whole && !rc->win && stats_duty_part_fits(x, pi);
	acc->dp = out->has_duty ? &out->duty : NULL;
	for (size_t j = p->first_line; whole && j < p->first_line + p->n_lines; j++)
		if (xs_plane_is_device(p) &&
		    xs_str_eq(x->lines[j].name, x->lines[j].name_len, "XLA Modules") &&
		    (r = xs_line_each(rc, j, NULL, module_event, acc)) < 0)
			goto out;
	/* a slice walks part of the line */
	bl = rc->win || !whole ? SIZE_MAX : stats_busy_line(x, pi);
	/* a slice walks part of the lines: its span is stats_device_busy()'s to take;
	 * one line's union (has_busy) has it already */
	out->has_span = xs_plane_is_device(p) && whole && !rc->win && bl == SIZE_MAX;
	for (size_t j = p->first_line + lo; j < p->first_line + hi; j++) {
		enum stats_line_kind k = stats_op_line_kind(x, p, &x->lines[j], fw);
		struct stats_union u = {0};
		bool tf_line = tf && stats_host_tf_line(x, j);

		if (k == LK_NONE && tf_line &&
		    (r = xs_line_each(rc, j, NULL, stats_host_tf_event, tfw)) < 0)
			goto out;
		if (k == LK_NONE)
			continue;
		acc->tfw = tf_line ? tfw : NULL;
		acc->kind = k;
		acc->ub = j == bl ? &u : NULL;
		acc->hints = hints;
		acc->hl = hints && whole && !rc->win && (k == LK_XLA_OPS || k == LK_STREAM)
				  ? stats_hints_begin(hints, j)
				  : NULL;
		/* stats_step_lines()'s lines, the first STATS_MERGE_MAX of them */
		acc->span = out->has_span && (k == LK_XLA_OPS || k == LK_STREAM) &&
					    span_lines++ < STATS_MERGE_MAX
				    ? &out->span
				    : NULL;
		out->gpu |= k == LK_STREAM;
		if ((r = ops_line(rc, j, acc)) < 0)
			goto out;
		if (acc->ub) {
			stats_union_close(&u);
			out->busy = u.b;
			out->has_busy = true;
		}
	}
	if (tf)
		out->host_tf_ops = stats_host_tf_count(tfw);
	out->events = acc->events;
	out->total = acc->total;
	out->un_events = acc->un_events;
	out->un_total = acc->un_total;
	for (size_t i = 0; i < out->m.n; i++)
		out->self = xs_sat_add(out->self, out->m.ops[i].self);
	if (out->events || out->un_events)
		r = stats_plane_facts_get(rc, pi, &out->f);
out:
	stats_host_tf_free(tfw);
	for (size_t i = 0; acc && acc->mc && i < MDC_SIZE; i++)
		free(acc->mc[i].tf);
	if (acc)
		free(acc->mc);
	free(acc);
	if (r < 0)
		stats_ops_free(out);
	return r;
}

int stats_ops_plane(struct xs_rctx *rc, size_t pi, struct stats_ops *out)
{
	return ops_plane(rc, pi, 0, rc->x->planes[pi].n_lines, false, false, NULL, out);
}

void stats_ops_cut(const struct xprofs_xspace *x, struct stats_ops_cut *cut)
{
	uint64_t most = 0, sum = 0;
	const struct xs_plane *p;

	memset(cut, 0, sizeof(*cut));
	for (size_t q = 0; q < x->n_planes; q++)
		if (stats_plane_is_host(&x->planes[q]) && x->planes[q].events > most)
			most = x->planes[q].events, cut->plane = q;
	if (most < stats_ops_cut_min)
		return;
	p = &x->planes[cut->plane];
	/* the second part: the lines after the one that passes half the events */
	for (size_t j = 0; j < p->n_lines && !cut->line; j++)
		if ((sum += x->lines[p->first_line + j].events) >= most / 2)
			cut->line = j + 1;
	cut->first = sum, cut->second = most - sum;
	if (cut->line >= p->n_lines || !cut->second)
		cut->line = 0;
}

int stats_ops_task(struct xs_rctx *rc, const struct stats_ops_cut *cut, size_t q, bool overview,
		   struct stats_hints *hints, struct stats_ops *out)
{
	size_t lo = 0, hi;

	if (q == rc->x->n_planes) { /* the cut's second part */
		q = cut->plane;
		lo = cut->line;
		hi = rc->x->planes[q].n_lines;
	} else {
		hi = cut->line && q == cut->plane ? cut->line : rc->x->planes[q].n_lines;
	}
	return ops_plane(rc, q, lo, hi, overview, overview, hints, out);
}

uint64_t stats_ops_task_cost(const struct xprofs_xspace *x, const struct stats_ops_cut *cut,
			     size_t q)
{
	if (q == x->n_planes)
		return cut->second;
	return cut->line && q == cut->plane ? cut->first : x->planes[q].events;
}

int stats_ops_join(struct xs_rctx *rc, const struct stats_ops_cut *cut, struct stats_ops *dst,
		   struct stats_ops *src)
{
	bool had = dst->events || dst->un_events;
	int r;

	if ((r = stats_ops_merge(dst, src)) < 0)
		goto out;
	dst->un_events += src->un_events;
	dst->un_total = xs_sat_add(dst->un_total, src->un_total);
	dst->host_tf_ops += src->host_tf_ops;
	if (!had && (dst->events || dst->un_events)) /* the facts the first part did not take */
		r = stats_plane_facts_get(rc, cut->plane, &dst->f);
out:
	stats_ops_free(src);
	return r;
}

void stats_ops_free(struct stats_ops *d)
{
	stats_opmap_free(&d->m);
	stats_opmap_free(&d->un);
	stats_progmap_free(&d->pm);
	stats_plane_facts_clear(&d->f);
}

void stats_op_add(struct op *b, const struct op *a)
{
	const struct xs_amounts v = {a->flops,     a->bytes,     a->model_flops,
				     a->has_flops, a->has_bytes, a->has_model_flops};

	b->count += a->count;
	b->occurrences = xs_sat_add(b->occurrences, a->occurrences);
	b->total = xs_sat_add(b->total, a->total);
	b->self = xs_sat_add(b->self, a->self);
	op_add_amounts(b, &v);
}

int stats_op_meta(struct op *b, const struct op *a)
{
	if ((!b->provenance && a->provenance && !(b->provenance = strdup(a->provenance))) ||
	    (!b->source && a->source && !(b->source = strdup(a->source))))
		return -ENOMEM;
	return 0;
}

int stats_ops_merge(struct stats_ops *dst, const struct stats_ops *src)
{
	int r;

	if (!dst->m.tab)
		dst->m.other = -1;
	for (size_t i = 0; i < src->m.n; i++) {
		const struct op *a = &src->m.ops[i];
		int64_t gi = stats_opmap_get(&dst->m, a->name, a->category);
		struct op *b;

		if (gi < 0)
			return (int)gi;
		b = &dst->m.ops[gi];
		if (!b->program_tried && a->program && !(b->program = strdup(a->program)))
			return -ENOMEM;
		b->program_tried = true;
		if ((r = stats_op_meta(b, a)) < 0)
			return r;
		b->min = a->min < b->min ? a->min : b->min;
		b->max = a->max > b->max ? a->max : b->max;
		stats_op_add(b, a);
	}
	dst->events += src->events;
	dst->total = xs_sat_add(dst->total, src->total);
	dst->self = xs_sat_add(dst->self, src->self);
	return 0;
}

size_t *stats_ops_sorted(struct stats_ops *d)
{
	return stats_opmap_sorted(&d->m);
}
