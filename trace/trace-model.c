/*
 * trace-model.c - what XProf shows of an XSpace in its trace viewer, apart
 * from any output format: which planes become processes and their pids,
 * which lines become threads and their tids, which events and stats are
 * hidden, what the special stats (flow, _a, group_id, step_name) mean, the
 * flows XProf's preprocessing makes of correlation_id and _pt/_p/_ct/_c
 * (xs_trace_xflows()), and the XFlow encoding. view-trace.c writes Chrome
 * JSON from it, view-pftrace.c Perfetto's protobuf trace.
 *
 * Sources (openxla/xprof, TSL in openxla/xla; docs/trace.md has the list):
 * ConvertXSpaceToTraceEventsContainer(), ConvertXPlaneToTraceEventsContainer(),
 * ConvertXLineToTraceEventsContainer() and ConvertXStatsToTraceEventArguments()
 * in xprof/convert/xplane_to_trace_container.cc; IsInternalEvent(),
 * IsInternalStat() and XFlow in xla/tsl/profiler/utils/xplane_schema.{h,cc};
 * the pid constants in xla/tsl/profiler/utils/trace_utils.h;
 * GetContextTypeString() in xla/tsl/profiler/lib/context_types.cc;
 * PreprocessSingleHostXSpace() (xprof/convert/preprocess_single_host_xplane.cc)
 * with AddFlowsToXplane() and IsXSpaceGrouped() (TSL xplane_utils.cc).
 *
 * Design: names are classified once per stat metadata entry (cached in
 * struct xs_stmd) and an event metadata's shown stats are rendered once
 * (struct trace_md), so the per-event cost is the event's own stats.
 * Limits: the plane list is O(planes).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace-internal.h"

/* xla/tsl/profiler/utils/trace_utils.h */
#define FIRST_DEVICE_ID 1u
#define LAST_DEVICE_ID 500u
#define FIRST_CUSTOM_ID (LAST_DEVICE_ID + 1)
#define HOST_THREADS_ID (FIRST_CUSTOM_ID + 200 - 1 + 1)

/* the long name XProf keeps in args (kMaxLongName) and what marks the cut */
#define LONG_NAME_MAX 10000
#define LONG_NAME_CUT "...<truncated>"

/* HostEventType names that IsInternalEvent() hides */
static const char *const internal_events[] = {
	"MemoryAllocation",
	"MemoryDeallocation",
	"PrefetchProduce",
	"PrefetchConsume",
	"ParallelInterleaveProduce",
	"ParallelInterleaveConsume",
	"ParallelInterleaveInitializeInput",
	"ParallelMapProduce",
	"ParallelMapConsume",
	"MapAndBatchProduce",
	"MapAndBatchConsume",
	"ParseExampleProduce",
	"ParseExampleConsume",
};

/* StatType names with a meaning of their own in the trace */
static const struct {
	const char *name;
	enum trace_tstat kind;
} stat_kinds[] = {
	/* IsInternalStat() */
	{"kernel_details", TS_INTERNAL},
	{"_pt", TS_PTYPE},
	{"_p", TS_PID},
	{"_ct", TS_CTYPE},
	{"_c", TS_CID},
	{"_r", TS_INTERNAL},
	{"flops", TS_INTERNAL},
	{"bytes_accessed", TS_INTERNAL},
	{"program_id", TS_INTERNAL},
	{"symbol_id", TS_INTERNAL},
	/* ConvertXStatToTraceEventArgument() */
	{"flow", TS_FLOW},
	{"group_id", TS_GROUP},
	{"_a", TS_ASYNC},
	{"step_name", TS_STEP},
	/* AddFlowsToXplane(): shown, and a flow */
	{"correlation_id", TS_CORR},
};

/* GetContextTypeString() by ContextType; "" for kGeneric and kLegacy */
static const char *const context_types[] = {
	"",
	"",
	"tf_exec",
	"tfrt_exec",
	"batch_sched",
	"PjRt",
	"as_batch_sched",
	"tfrt_rt",
	"tpu_embed",
	"gpu_launch",
	"batcher",
	"tpu_stream",
	"tpu_launch",
	"pathways_exec",
	"pjrt_library_call",
	"threadpool_event",
	"", /* kJaxServingExecutor: its string is not in the sources read */
};
/* ContextType::kLastContextType (kJaxServingExecutor): GetSafeContextType() maps above it to 0 */
#define CONTEXT_LAST 16
#define CONTEXT_GPU_LAUNCH 9

enum trace_tstat trace_stat_kind(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(stat_kinds) / sizeof(stat_kinds[0]); i++)
		if (xs_str_eq(name, len, stat_kinds[i].name))
			return stat_kinds[i].kind;
	return TS_SHOW;
}

bool trace_event_internal(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(internal_events) / sizeof(internal_events[0]); i++)
		if (xs_str_eq(name, len, internal_events[i]))
			return true;
	return false;
}

struct trace_xflow trace_xflow_decode(uint64_t v)
{
	struct trace_xflow f;

	f.dir = (int)(v & 3);
	f.id = (v >> 2) & ((UINT64_C(1) << 56) - 1);
	f.cat = (unsigned)(v >> 58);
	return f;
}

/*
 * XFlow::GetFlowId(host_id, local_id[, context]): XProf hashes them with
 * absl::HashOf, salted per process, so its ids differ from run to run; any
 * stable hash keeps the pairing. FNV-1a over host_id, local_id and
 * context + 1 (0 for the two-argument form of correlation ids), each 8
 * bytes little-endian, masked to 56 bits.
 */
static uint64_t flow_id(uint64_t host, uint64_t local, uint64_t ctx_plus1)
{
	const uint64_t w[3] = {host, local, ctx_plus1};
	uint64_t h = UINT64_C(0xcbf29ce484222325);

	for (int i = 0; i < 3; i++)
		for (int b = 0; b < 8; b++) {
			h ^= (w[i] >> (8 * b)) & 0xff;
			h *= UINT64_C(0x100000001b3);
		}
	return h & ((UINT64_C(1) << 56) - 1);
}

/* XFlow::ToStatValue() */
static uint64_t xflow_encode(uint64_t id, int dir, unsigned cat)
{
	return (uint64_t)dir | (id << 2) | ((uint64_t)cat << 58);
}

/* IsDevicePlane(): /device..., #Chip... (TPU non-core) or custom planes; no host plane name starts so */
static bool plane_is_device(const struct xs_plane *p)
{
	return !strncmp(p->name, "/device", 7) || !strncmp(p->name, "#Chip", 5) ||
	       !strncmp(p->name, "/custom:", 8);
}

void trace_stat_note(struct trace_acc *a, enum trace_tstat k, const struct xs_statv *s)
{
	unsigned i = (unsigned)(k - TS_CORR);

	if (k < TS_CORR || k > TS_CID)
		return;
	/* correlation_id: uint64_value(), 0 for another kind; the others IntOrUintValue() */
	a->xf[i] = s->kind == SV_U64 || (k != TS_CORR && s->kind == SV_I64) ? s->u : 0;
	a->xf_has |= 1u << i;
}

/*
 * A TraceMe producer (@type_k _pt, @id_k _p) or consumer (_ct, _c) flow in
 * direction @dir when the event has both stats; its category is
 * GetSafeContextType() of the type (as uint32_t).
 */
static void traceme_flow(const struct xprofs_xspace *x, struct trace_acc *a,
			 enum trace_tstat type_k, enum trace_tstat id_k, int dir)
{
	unsigned ti = (unsigned)(type_k - TS_CORR), ii = (unsigned)(id_k - TS_CORR);
	uint32_t t = (uint32_t)a->xf[ti];

	if (!(a->xf_has & 1u << ti) || !(a->xf_has & 1u << ii))
		return;
	t = t > CONTEXT_LAST ? 0 : t;
	a->flow = xflow_encode(flow_id(x->host_id, a->xf[ii], t + 1), dir, t);
	a->has_flow = true;
}

void xs_trace_xflows(const struct xprofs_xspace *x, const struct xs_plane *p, struct trace_acc *a)
{
	if (!a->xf_has || x->grouped)
		return;
	if (a->xf_has & 1u << (TS_CORR - TS_CORR)) {
		/* GPU launch: out of the host's launch, into the device's kernel */
		a->flow =
			xflow_encode(flow_id(x->host_id, a->xf[TS_CORR - TS_CORR], 0),
				     plane_is_device(p) ? XFLOW_IN : XFLOW_OUT, CONTEXT_GPU_LAUNCH);
		a->has_flow = true;
	}
	traceme_flow(x, a, TS_PTYPE, TS_PID, XFLOW_OUT);
	traceme_flow(x, a, TS_CTYPE, TS_CID, XFLOW_IN);
}

const char *trace_category(unsigned cat)
{
	/* GetSafeContextType(): unknown categories are kGeneric */
	return cat < sizeof(context_types) / sizeof(context_types[0]) ? context_types[cat] : "";
}

/* ---- processes and threads --------------------------------------------- */

static bool has_prefix(const struct xs_plane *p, const char *pre)
{
	return !strncmp(p->name, pre, strlen(pre));
}

static int cmp_host(const void *a, const void *b, void *arg)
{
	const struct xprofs_xspace *x = arg;
	size_t ia = ((const struct trace_plane *)a)->plane;
	size_t ib = ((const struct trace_plane *)b)->plane;
	const struct xs_plane *pa = &x->planes[ia], *pb = &x->planes[ib];
	size_t n = pa->name_len < pb->name_len ? pa->name_len : pb->name_len;
	int c = memcmp(pa->name, pb->name, n);

	if (c)
		return c;
	if (pa->name_len != pb->name_len)
		return pa->name_len < pb->name_len ? -1 : 1;
	return ia < ib ? -1 : ia > ib; /* stable: file order among equal names */
}

/* Append the planes with prefix @pre (file order) to @tp; their count. */
static size_t pick(const struct xprofs_xspace *x, const char *pre, struct trace_plane *tp, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < x->n_planes; i++)
		if (has_prefix(&x->planes[i], pre))
			tp[n + k++].plane = i;
	return k;
}

int trace_planes(const struct xprofs_xspace *x, struct trace_plane **out, size_t *n_out)
{
	struct trace_plane *tp = calloc(x->n_planes + 1, sizeof(*tp));
	size_t n = 0, k, keep = 0;

	*out = NULL;
	*n_out = 0;
	if (!tp)
		return -ENOMEM;
	/* host threads: "/host:CPU..." sorted by name, pids from kHostThreadsDeviceId up */
	k = pick(x, "/host:CPU", tp, n);
	qsort_r(tp + n, k, sizeof(*tp), cmp_host, (void *)(uintptr_t)x);
	for (size_t i = 0; i < k; i++)
		tp[n + i].pid = HOST_THREADS_ID + (uint32_t)i;
	n += k;
	/* the GPU planes, or the TPU planes when there are none: kFirstDeviceId + id */
	k = pick(x, "/device:GPU:", tp, n);
	if (k == 0)
		k = pick(x, "/device:TPU:", tp, n);
	for (size_t i = 0; i < k; i++) {
		uint32_t pid = FIRST_DEVICE_ID + (uint32_t)x->planes[tp[n + i].plane].id;

		tp[n + i].pid = pid > LAST_DEVICE_ID ? FIRST_DEVICE_ID : pid;
	}
	n += k;
	/* custom planes: kFirstCustomPlaneDeviceId + id */
	k = pick(x, "/device:CUSTOM:", tp, n);
	for (size_t i = 0; i < k; i++)
		tp[n + i].pid = FIRST_CUSTOM_ID + (uint32_t)x->planes[tp[n + i].plane].id;
	n += k;
	/* a plane without lines is not in the trace */
	for (size_t i = 0; i < n; i++)
		if (x->planes[tp[i].plane].n_lines)
			tp[keep++] = tp[i];
	*out = tp;
	*n_out = keep;
	return 0;
}

enum trace_tline trace_line_kind(const struct xs_line *l)
{
	if (xs_str_eq(l->name, l->name_len, "_counters_"))
		return TL_COUNTERS;
	if (l->name_len >= 9 && !memcmp(l->name, "counters_", 9))
		return TL_SKIP;
	return TL_THREAD;
}

uint32_t trace_tid(const struct xs_line *l)
{
	return l->trace_tid; /* DisplayId(), GPU lines renumbered by xs_derived_assign() */
}

/* ---- stats --------------------------------------------------------------- */

/* A stat's class, cached in its metadata entry. */
static enum trace_tstat stat_kind(struct xs_stmd *m)
{
	if (!m->tkind)
		m->tkind = (int8_t)(trace_stat_kind(m->name, m->name_len) + 1);
	return (enum trace_tstat)(m->tkind - 1);
}

/* An integer XProf quotes: JavaScript doubles lose integers above 2^53. */
static void out_int(struct xs_out *o, uint64_t u, bool neg)
{
	uint64_t mag = neg ? (uint64_t)0 - u : u;
	bool quote = mag > (UINT64_C(1) << 53);

	if (quote)
		OUT_LIT(o, "\"");
	if (neg)
		xs_out_i64(o, (int64_t)u);
	else
		xs_out_u64(o, u);
	if (quote)
		OUT_LIT(o, "\"");
}

int trace_stat(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s, void *arg)
{
	struct trace_acc *a = arg;
	struct xs_out *o = a->o;
	const struct xs_stmd *cm;
	struct xs_stmd *m;
	enum trace_tstat k;
	bool is_int = s->kind == SV_U64 || s->kind == SV_I64;
	size_t at;
	int r;

	if ((r = xs_md_stat(rc, s->md, &cm)) < 0)
		return r;
	m = (struct xs_stmd *)cm; /* the cache entry is ours for the render */
	k = stat_kind(m);
	if (k >= TS_CORR) {
		trace_stat_note(a, k, s);
		if (k != TS_CORR) /* IsInternalStat() */
			return 0;
	}
	if (s->kind == SV_NONE || s->kind == SV_BYTES) /* XProf shows neither */
		return 0;
	if (k == TS_INTERNAL)
		return 0;
	if (is_int && k == TS_FLOW) {
		a->flow = s->u;
		a->has_flow = true;
		return 0;
	}
	if (is_int && k == TS_GROUP) {
		a->group = (int64_t)s->u;
		a->has_group = true;
		return 0;
	}
	if (is_int && k == TS_ASYNC) { /* set whatever its value, as XProf does */
		a->is_async = true;
		return 0;
	}
	if (!a->first)
		OUT_LIT(o, ",");
	a->first = false;
	if (is_int || (s->kind == SV_DOUBLE && !isfinite(s->d))) {
		xs_out_add(o, m->json, m->json_len + 1);
		if (s->kind == SV_DOUBLE)
			OUT_RAW(o, isnan(s->d) ? "\"NaN\""
				   : s->d > 0  ? "\"Infinity\""
					       : "\"-Infinity\"");
		else
			out_int(o, s->u, s->kind == SV_I64 && (int64_t)s->u < 0);
		return 0;
	}
	at = o->len;
	{
		struct xs_render_arg ra = {o, true};

		if ((r = xs_render_stat(rc, c, s, &ra)) < 0)
			return r;
	}
	if (k == TS_STEP && (s->kind == SV_STR || s->kind == SV_REF) && !o->r) {
		/* the value after "name": is the new event name (a JSON string) */
		a->step_off = at + m->json_len + 1;
		a->step_len = o->len - a->step_off;
		a->has_step = a->step_len > 2; /* an empty step_name renames nothing */
	}
	return 0;
}

/* A xs_stat_fn: trace_stat()'s flow, _a and preprocessing stats only, nothing rendered. */
static int flow_stat(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s, void *arg)
{
	struct trace_acc *a = arg;
	const struct xs_stmd *cm;
	enum trace_tstat k;
	bool is_int = s->kind == SV_U64 || s->kind == SV_I64;
	int r;

	(void)c;
	if ((r = xs_md_stat(rc, s->md, &cm)) < 0)
		return r;
	k = stat_kind((struct xs_stmd *)cm);
	if (k >= TS_CORR)
		trace_stat_note(a, k, s);
	else if (is_int && k == TS_FLOW)
		a->flow = s->u, a->has_flow = true;
	else if (is_int && k == TS_ASYNC)
		a->is_async = true;
	return 0;
}

int trace_event_flow(struct xs_rctx *rc, const struct xs_event *e, const struct trace_md *t,
		     const struct xs_plane *p, struct trace_xflow *f)
{
	struct trace_acc a = {0};
	int r;

	if (t)
		a.flow = t->flow, a.has_flow = t->has_flow;
	if (e->has_stats &&
	    (r = xs_walk_stats(rc, &rc->ev, e->stats_off, e->off + e->len - e->stats_off,
			       XEVENT_F_STATS, flow_stat, &a)) < 0)
		return r;
	xs_trace_xflows(rc->x, p, &a);
	*f = trace_xflow_decode(a.flow);
	if (!a.has_flow)
		f->dir = XFLOW_NONE;
	return 0;
}

/* ---- event metadata ------------------------------------------------------ */

void trace_md_free(struct trace_md *t)
{
	if (!t)
		return;
	free(t->args);
	free(t);
}

int trace_md_fill(struct xs_rctx *rc, struct xs_evmd *e, const char *full, size_t full_len,
		  size_t disp_len, uint64_t off, uint64_t len)
{
	struct trace_md *t = calloc(1, sizeof(*t));
	struct trace_acc a = {0};
	struct xs_out o;
	int r;

	if (!t)
		return -ENOMEM;
	xs_out_init(&o, NULL);
	a.o = &o;
	a.first = true;
	t->internal = full && trace_event_internal(full, full_len);
	/* HasDisplayName(): the full name goes to args.long_name, cut at kMaxLongName */
	if (disp_len > 0) {
		OUT_LIT(&o, "\"long_name\":");
		if (full_len > LONG_NAME_MAX) {
			struct xprofs_buf b;

			xprofs_buf_init(&b, LONG_NAME_MAX + sizeof(LONG_NAME_CUT));
			if (xprofs_buf_add(&b, full, LONG_NAME_MAX) < 0 ||
			    xprofs_buf_adds(&b, LONG_NAME_CUT) < 0) {
				xprofs_buf_deinit(&b);
				r = -ENOMEM;
				goto out;
			}
			xs_out_str(&o, b.data, b.len);
			xprofs_buf_deinit(&b);
		} else {
			xs_out_str(&o, full ? full : "", full ? full_len : 0);
		}
		a.first = false;
	}
	if ((r = xs_walk_stats(rc, &rc->md, off, len, XEVMD_F_STATS, trace_stat, &a)) < 0)
		goto out;
	if ((r = o.r) < 0)
		goto out;
	t->flow = a.flow;
	t->has_flow = a.has_flow;
	t->group = a.group;
	t->has_group = a.has_group;
	t->is_async = a.is_async;
	if (a.has_step) {
		t->step_off = a.step_off;
		t->step_len = a.step_len;
	}
	t->args = xs_out_steal(&o, &t->args_len);
	if (!t->args && o.len) {
		r = -ENOMEM;
		goto out;
	}
	if (!t->args)
		t->args_len = 0;
	e->view_md = t;
	e->view_md_bytes = t->args_len;
	t = NULL;
out:
	xs_out_deinit(&o);
	trace_md_free(t);
	return r;
}

/* ---- times --------------------------------------------------------------- */

void trace_out_ps_wide(struct xs_out *o, xs_ps128 ps)
{
	xs_ups128 u = ps < 0 ? (xs_ups128)0 - (xs_ups128)ps : (xs_ups128)ps;
	xs_ups128 whole;
	uint64_t hi, lo;
	char *p;
	size_t n = 0;

	/* epoch-based or hostile times: microseconds as hi * 10^18 + lo */
	whole = u / 1000000;
	hi = (uint64_t)(whole / UINT64_C(1000000000000000000));
	lo = (uint64_t)(whole % UINT64_C(1000000000000000000));
	if (!(p = xs_out_reserve(o, 64)))
		return;
	if (ps < 0)
		p[n++] = '-';
	if (hi) {
		char t[24];

		n += xs_fmt_u64(p + n, hi);
		snprintf(t, sizeof(t), "%018llu", (unsigned long long)lo);
		memcpy(p + n, t, 18);
		n += 18;
	} else {
		n += xs_fmt_u64(p + n, lo);
	}
	o->len += n;
	{
		uint32_t frac = (uint32_t)(u % 1000000);
		char f[6];
		size_t m = 6;

		if (!frac)
			return;
		for (int i = 5; i >= 0; i--, frac /= 10)
			f[i] = (char)('0' + frac % 10);
		while (f[m - 1] == '0')
			m--;
		OUT_LIT(o, ".");
		xs_out_add(o, f, m);
	}
}

/* ---- async pairing --------------------------------------------------------- */

/*
 * A single-ended async event (flow direction in or out) is a Chrome "b" or
 * "e" only when its flow id has both ends on its plane; otherwise viewers
 * would show a slice that never ends (or an end of nothing), so it is
 * written as a complete event. The set holds (id, category) -> which ends
 * were seen, open addressing, at most TRACE_ASYNC_MAX keys; past that,
 * unknown ids count as paired (written as XProf writes them).
 */
#define TRACE_ASYNC_MAX ((size_t)1 << 22)

static uint64_t async_key(const struct trace_xflow *f)
{
	return ((f->id << 6) | f->cat) + 1; /* id < 2^56: never 0, never wraps */
}

static size_t async_slot(const struct trace_async_set *s, uint64_t key)
{
	uint64_t h = key * UINT64_C(0x9e3779b97f4a7c15);
	size_t i = (size_t)(h >> 20) & (s->cap - 1);

	while (s->keys[i] && s->keys[i] != key)
		i = (i + 1) & (s->cap - 1);
	return i;
}

static int async_grow(struct trace_async_set *s)
{
	struct trace_async_set g = {0};
	size_t cap = s->cap ? s->cap * 2 : 1024;

	g.keys = calloc(cap, sizeof(*g.keys));
	g.ends = calloc(cap, sizeof(*g.ends));
	if (!g.keys || !g.ends) {
		free(g.keys);
		free(g.ends);
		return -ENOMEM;
	}
	g.cap = cap;
	for (size_t i = 0; i < s->cap; i++) {
		if (s->keys[i]) {
			size_t j = async_slot(&g, s->keys[i]);

			g.keys[j] = s->keys[i];
			g.ends[j] = s->ends[i];
		}
	}
	g.n = s->n;
	free(s->keys);
	free(s->ends);
	*s = g;
	return 0;
}

int trace_async_note(struct trace_async_set *s, const struct trace_xflow *f)
{
	uint64_t key = async_key(f);
	size_t i;
	int r;

	if (s->full)
		return 0;
	if ((s->n + 1) * 2 > s->cap) {
		if (s->n >= TRACE_ASYNC_MAX) {
			s->full = true;
			return 0;
		}
		if ((r = async_grow(s)) < 0)
			return r;
	}
	i = async_slot(s, key);
	if (!s->keys[i]) {
		s->keys[i] = key;
		s->n++;
	}
	s->ends[i] |= (uint8_t)f->dir; /* XFLOW_IN 1, XFLOW_OUT 2 */
	return 0;
}

bool trace_async_paired(const struct trace_async_set *s, const struct trace_xflow *f)
{
	size_t i;

	if (f->dir == XFLOW_INOUT)
		return true;
	if (!s->cap)
		return s->full;
	i = async_slot(s, async_key(f));
	if (!s->keys[i])
		return s->full;
	return s->ends[i] == XFLOW_INOUT;
}

void trace_async_reset(struct trace_async_set *s)
{
	if (s->cap) {
		memset(s->keys, 0, s->cap * sizeof(*s->keys));
		memset(s->ends, 0, s->cap * sizeof(*s->ends));
	}
	s->n = 0;
	s->full = false;
}

void trace_async_deinit(struct trace_async_set *s)
{
	free(s->keys);
	free(s->ends);
	memset(s, 0, sizeof(*s));
}

static void md_ext_free(void *t)
{
	trace_md_free(t);
}

const struct xs_md_ext trace_md_ext = {.fill = trace_md_fill, .free = md_ext_free};
