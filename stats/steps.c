/*
 * steps.c - the step analysis as XProf's step database: the steps of a host
 * keyed by group_id and combined across its devices, each with its step time
 * and its time by XProf's event types (xplane_to_step_events.cc,
 * event_span.cc, step_events_to_steps_db.cc, xplane_to_op_stats.cc
 * ConvertXSpaceToOpStats()); a step-time summary (XProf's StepSummary).
 * steps.json, overview.json, overview.svg, the session views and the
 * steps/N windows are made from it. docs/stats.md has every rule.
 *
 * Design: the device planes are the TPU planes, else the GPU planes; a host
 * without them has host steps. The planes' event classes (from their
 * metadata) and the markers GPU planes derive from group_id (steps-derived.c)
 * are read per plane as xs_tasks_run() tasks, then added in plane order. Pass
 * 1 reads the step markers (those, a device plane's step line, or the host's
 * step-marker events), the longest per (plane, group). Pass 2 merges the lines whose events go to steps by start
 * time (merge.c) and gives each admitted event to its group's sweep
 * (ToNonOverlappedEvents(): the highest type open owns the time), which adds
 * the time it owns inside the step's tentative span, the span of every
 * marker. A marker counts only where its plane has events of its group
 * (IntersectCombineStepEvents()); where that changes a step's span, pass 2
 * runs again for those steps. Stat keys are looked up once per plane, so the
 * merge reads events of several planes without entering them, and each pass
 * decodes only the stats it reads (xs_walk_stats_keys()).
 * Limits: at most STEPS_MAX groups and PMARKS_MAX (plane, group) markers
 * (then cut); at most STATS_MERGE_MAX lines merged (the first ones); at most
 * ACTIVE_MAX events open at once in a step (more own no time).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "stats-internal.h"

#define STEPS_MAX ((size_t)1 << 20)
#define ACTIVE_MAX ((size_t)1 << 20)
#define PMARKS_MAX ((size_t)1 << 22) /* (plane, group) markers kept */

/*
 * XProf's step-time event types (event_span.h EventType), in its priority
 * order: where events overlap, the highest type owns the time
 * (ToNonOverlappedEvents()). BD_IDLE is UNKNOWN_TIME: no event at all.
 */
enum {
	BD_IDLE = 0,
	BD_HOST_COMPUTE,
	BD_HOST_TO_HOST,
	BD_HOST_TO_DEVICE,
	BD_DEVICE_COLLECTIVES,
	BD_HOST_WAIT_INPUT,
	BD_DEVICE_TO_DEVICE,
	BD_DEVICE_TO_HOST,
	BD_DEVICE_COMPUTE,
	BD_N
};
_Static_assert(BD_N == STATS_BD_N, "stats-internal.h counts the breakdown types");

/* steps.json's breakdown keys, by type (also overview.svg's legend). */
const char *const stats_bd_keys[BD_N] = {
	"idle_ps",
	"host_compute_ps",
	"host_to_host_ps",
	"host_to_device_ps",
	"device_collectives_ps",
	"host_wait_input_ps",
	"device_to_device_ps",
	"device_to_host_ps",
	"device_compute_ps",
};

/* A metadata's class (classify_plane()): its event type, and for host events two flags. */
#define CL_TYPE 0x0f
#define CL_MARKER 0x10   /* IsExplicitHostStepMarker() */
#define CL_NOT_REAL 0x20 /* not IsRealCpuCompute() */

/* ---- classifying events (ClassifyGpuEvent(), ClassifyCpuEvent()) ---------- */

static bool prefix_icase(const char *s, size_t n, const char *lit)
{
	size_t k = strlen(lit);

	return n >= k && !strncasecmp(s, lit, k);
}

static bool prefix(const char *s, size_t n, const char *lit)
{
	size_t k = strlen(lit);

	return n >= k && !memcmp(s, lit, k);
}

static bool has_sub(const char *s, size_t n, const char *lit)
{
	return memmem(s, n, lit, strlen(lit)) != NULL;
}

/* The collective HLO categories (hlo_category) of TPU ops. */
static bool is_collective(const char *cat)
{
	static const char *const c[] = {"all-reduce",
					"all-gather",
					"reduce-scatter",
					"all-to-all",
					"ragged-all-to-all",
					"collective-permute",
					"collective-broadcast",
					"send",
					"recv"};

	for (size_t i = 0; cat && i < sizeof(c) / sizeof(c[0]); i++)
		if (!strncmp(cat, c[i], strlen(c[i])))
			return true;
	return false;
}

/* ClassifyGpuEvent() (by name), and for TPU ops their hlo_category. */
static uint8_t classify_device(const struct xs_evmd *m)
{
	if (prefix_icase(m->name, m->name_len, "memcpyhtod"))
		return BD_HOST_TO_DEVICE;
	if (prefix_icase(m->name, m->name_len, "memcpydtoh"))
		return BD_DEVICE_TO_HOST;
	if (prefix_icase(m->name, m->name_len, "memcpydtod"))
		return BD_DEVICE_TO_DEVICE;
	if (prefix_icase(m->name, m->name_len, "nccl") || is_collective(m->category))
		return BD_DEVICE_COLLECTIVES;
	if (m->category && !strcmp(m->category, "infeed"))
		return BD_HOST_TO_DEVICE;
	if (m->category && !strcmp(m->category, "outfeed"))
		return BD_DEVICE_TO_HOST;
	return BD_DEVICE_COMPUTE;
}

/*
 * ClassifyCpuEvent() of a host without devices (so never HOST_PREPARE), with
 * IsExplicitHostStepMarker() and IsRealCpuCompute() as flags.
 */
static uint8_t classify_host(const struct xs_evmd *m)
{
	const char *s = m->name;
	size_t n = m->name_len;
	uint8_t t = BD_HOST_COMPUTE;

	if (prefix_icase(s, n, "memcpyhtod") || has_sub(s, n, "InfeedEnqueue"))
		t = BD_HOST_TO_DEVICE;
	else if (prefix_icase(s, n, "memcpyhtoh"))
		t = BD_HOST_TO_HOST;
	else if (prefix_icase(s, n, "IteratorGetNext"))
		t = BD_HOST_WAIT_INPUT;
	if ((prefix(s, n, "train") || prefix(s, n, "test") || prefix(s, n, "TraceContext")) &&
	    !memchr(s, '/', n))
		return t | CL_MARKER | CL_NOT_REAL;
	if (prefix(s, n, "EagerExecute") || prefix(s, n, "EagerLocalExecute") ||
	    prefix(s, n, "EagerKernelExecute") || prefix(s, n, "FunctionRun"))
		t |= CL_NOT_REAL;
	return t;
}

/* classify_plane() - the class of every event metadata of plane @q. *out: caller frees. */
static int classify_plane(struct xs_rctx *rc, size_t q, bool dev, uint8_t **out)
{
	const struct xs_plane *p = &rc->x->planes[q];
	uint8_t *cls = malloc(p->ev.n ? p->ev.n : 1);
	struct xs_evmd *m;
	int r;

	*out = NULL;
	if (!cls)
		return -ENOMEM;
	if ((r = xs_plane_enter(rc, q)) < 0)
		goto fail;
	for (size_t k = 0; k < p->ev.n; k++) {
		xs_md_gc(rc);
		if ((r = xs_md_event(rc, p->ev.md[k].key, &m)) < 0)
			goto fail;
		cls[k] = dev ? classify_device(m) : classify_host(m);
	}
	*out = cls;
	return 0;
fail:
	free(cls);
	return r;
}

/* ---- the state of one computation ------------------------------------------ */

/*
 * Which stat metadata keys of a plane name the stats the steps read (-1: none),
 * and the sets of them each pass reads (xs_walk_stats_keys()).
 */
struct pkeys {
	int64_t group, corr, step_name, dev_off, dev_dur;
	struct xs_stat_keys mark, ev; /* what the markers, the step events read */
	/* admit()'s last lookup on the plane: events of one group come in runs */
	bool last_ok;
	int64_t last_group;
	uint32_t last_pm; /* UINT32_MAX: the plane has no marker of it */
};

/* The longest marker of one group on one plane (StepDetails' markers). */
struct pmark {
	int64_t group;
	size_t plane, step;
	int64_t b, e;
	xprofs_ps128 b128; /* the exact begin, for the steps/N windows */
	bool events;       /* the plane has events of the group */
};

struct active { /* an open event of a step's sweep */
	int64_t end;
	uint8_t type;
};

/* One step's ToNonOverlappedEvents() sweep. */
struct ssweep {
	struct active *a; /* owned: a min-heap by end */
	size_t n, cap;
	int32_t cnt[BD_N];
	int64_t t;      /* where the last piece ended */
	uint16_t seen;  /* types that owned time somewhere (not only inside the step) */
	int64_t sb, se; /* the span pieces are added to */
	bool started;   /* t is set */
	bool redo;      /* pass 2 again: the span changed */
};

enum { K_NONE, K_GPU, K_TPU };

struct gsteps {
	struct stats_steps *st;
	int kind;           /* K_*: whose device planes, or none (host steps) */
	size_t host;        /* the /host:CPU plane (SIZE_MAX: none) */
	struct pkeys *keys; /* owned, per plane */
	uint8_t **cls;      /* owned, per plane: classify_plane(), NULL: not read */
	struct pmark *pm;   /* owned */
	size_t npm, cappm;
	struct xprofs_table *pmtab, *gtab; /* (plane, group) -> pm; group -> st->s */
	struct ssweep *sw;                 /* owned, per step */
	size_t *first, *idx; /* owned: step k's markers are pm[idx[first[k] .. first[k + 1])] */
	bool second;         /* pass 2 is running again (only the steps to redo) */
	size_t plane, line;  /* pass 1: the plane and line being read */
};

static bool device_plane(const struct gsteps *g, const struct xs_plane *p)
{
	return g->kind == K_TPU ? !strncmp(p->name, "/device:TPU:", 12)
				: g->kind == K_GPU && xs_plane_is_gpu(p);
}

/* step_line() - whether line @l of device plane @p holds its step markers. */
static bool step_line(const struct xs_plane *p, const struct xs_line *l)
{
	return l->id == TID_DERIVED_MIN || /* kThreadIdStepInfo */
	       (xs_plane_is_tensor_core(p) && xs_str_eq(l->name, l->name_len, "Steps"));
}

/* event_line() - whether the events of line @l of plane @p may go to steps. */
static bool event_line(const struct gsteps *g, const struct xs_plane *p, const struct xs_line *l)
{
	if (g->kind == K_NONE)
		return l->plane == g->host;
	if (!device_plane(g, p) || step_line(p, l))
		return false;
	if (g->kind == K_TPU) /* ConvertTpuDeviceTraceXLineToStepEvents(): TensorCore op lines */
		return xs_plane_is_tensor_core(p) && xs_str_eq(l->name, l->name_len, "XLA Ops");
	return !xs_derived_tid(l->id);
}

static bool group_eq(const void *ctx, uint32_t idx, const void *key)
{
	return ((const struct stats_step *)ctx)[idx].num == *(const int64_t *)key;
}

struct pmkey {
	size_t plane;
	int64_t group;
};

static bool pm_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct pmark *m = &((const struct pmark *)ctx)[idx];
	const struct pmkey *k = key;

	return m->plane == k->plane && m->group == k->group;
}

static uint64_t pm_hash(size_t plane, int64_t group)
{
	return xprofs_table_hash(xprofs_table_hash(0, &plane, sizeof(plane)), &group,
				 sizeof(group));
}

/* What one event's stats say (ev_stat()). */
struct evstats {
	const struct pkeys *k;
	int64_t group, corr, dev_off, dev_dur;
	bool has_group, has_corr, has_step_name, has_off, has_dur;
};

/* A xs_stat_fn: the stats the steps read, by the plane's keys (arg: struct evstats). */
static int ev_stat(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s, void *arg)
{
	struct evstats *v = arg;
	bool num = s->kind == SV_U64 || s->kind == SV_I64;

	(void)rc, (void)c;
	if (s->md == -1) /* the keys' "none" */
		return 0;
	if (s->md == v->k->step_name)
		v->has_step_name |= (s->kind == SV_STR && s->len > 0) || s->kind == SV_REF;
	else if (!num)
		return 0;
	else if (s->md == v->k->group)
		v->group = (int64_t)s->u, v->has_group = true;
	else if (s->md == v->k->corr)
		v->corr = (int64_t)s->u, v->has_corr = true;
	else if (s->md == v->k->dev_off)
		v->dev_off = (int64_t)s->u, v->has_off = true;
	else if (s->md == v->k->dev_dur)
		v->dev_dur = (int64_t)s->u, v->has_dur = true;
	return 0;
}

/* ev_stats() - the stats @want (one of @k's sets) of event @e into @v. */
static int ev_stats(struct xs_rctx *rc, struct wire_cur *c, const struct xs_event *e,
		    const struct pkeys *k, const struct xs_stat_keys *want, struct evstats *v)
{
	memset(v, 0, sizeof(*v));
	v->k = k;
	if (!e->has_stats) /* the others are still checked, as xs_walk_stats() would */
		return 0;
	return xs_walk_stats_keys(rc, c, e->stats_off, e->off + e->len - e->stats_off,
				  XEVENT_F_STATS, want, ev_stat, v);
}

/* key_set() - the keys of @ks[0..n) that a plane has (not -1) into @out. */
static void key_set(const int64_t *ks, size_t n, struct xs_stat_keys *out)
{
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < n; i++)
		if (ks[i] != -1)
			xs_stat_keys_add(out, ks[i]);
}

/* ---- pass 1: the markers ---------------------------------------------------- */

/* step_of() - the step of group @group, added when new; -ENOSPC past STEPS_MAX. */
static int step_of(struct gsteps *g, int64_t group, size_t *out)
{
	struct stats_steps *st = g->st;
	uint64_t h = xprofs_table_hash(0, &group, sizeof(group));
	uint32_t i;
	int r;

	if (xprofs_table_find(g->gtab, h, group_eq, st->s, &group, &i) == 0) {
		*out = i;
		return 0;
	}
	if (st->n >= STEPS_MAX) {
		st->cut = true;
		return -ENOSPC;
	}
	if ((r = xprofs_grow(&st->s, &st->cap, st->n, sizeof(*st->s), 64)) < 0 ||
	    (r = xprofs_table_add(g->gtab, h, (uint32_t)st->n)) < 0)
		return r;
	memset(&st->s[st->n], 0, sizeof(*st->s));
	st->s[st->n].num = group;
	*out = st->n++;
	return 0;
}

/* add_marker() - a marker [b, e) of @group on g->plane; the longest per plane is kept. */
static int add_marker(struct gsteps *g, int64_t group, int64_t b, int64_t e, xprofs_ps128 b128)
{
	struct pmkey k = {g->plane, group};
	uint64_t h = pm_hash(g->plane, group);
	struct pmark *m;
	uint32_t i;
	size_t step;
	int r;

	if (e < b) /* a negative duration: an empty span */
		e = b;
	if (xprofs_table_find(g->pmtab, h, pm_eq, g->pm, &k, &i) == 0) {
		m = &g->pm[i];
		if (e - b > m->e - m->b) /* StepTime(): a longer one only */
			m->b = b, m->e = e, m->b128 = b128;
		return 0;
	}
	if (g->npm >= PMARKS_MAX) {
		g->st->cut = true;
		return 0;
	}
	if ((r = step_of(g, group, &step)) < 0)
		return r == -ENOSPC ? 0 : r;
	if ((r = xprofs_grow(&g->pm, &g->cappm, g->npm, sizeof(*g->pm), 64)) < 0 ||
	    (r = xprofs_table_add(g->pmtab, h, (uint32_t)g->npm)) < 0)
		return r;
	g->pm[g->npm++] = (struct pmark){group, g->plane, step, b, e, b128, false};
	return 0;
}

/* A xs_event_fn: one event of a step line, or of a host line (arg: struct gsteps). */
static int marker_event(struct xs_rctx *rc, const struct xs_event *e, struct xs_evmd *m, void *arg)
{
	struct gsteps *g = arg;
	const struct xs_line *l = &rc->x->lines[g->line];
	xprofs_ps128 b128 = (xprofs_ps128)l->timestamp_ns * 1000 + e->offset_ps;
	struct evstats v;
	ssize_t k;
	int r;

	if ((r = ev_stats(rc, &rc->ev, e, &g->keys[g->plane], &g->keys[g->plane].mark, &v)) < 0 ||
	    !v.has_group)
		return r;
	if (g->kind !=
	    K_NONE) { /* ConvertDeviceStepInfoToStepMarkers(): GetDeviceEventTimespan() */
		if (v.has_off && v.has_dur)
			return add_marker(g, v.group, v.dev_off, xs_sat_add(v.dev_off, v.dev_dur),
					  v.dev_off);
		return add_marker(g, v.group, e->start_ps, e->end_ps, b128);
	}
	/* ConvertHostThreadsXLineToStepEvents(): explicit or implicit host step markers */
	(void)m;
	k = xs_md_find(&rc->x->planes[g->plane].ev, e->md);
	if (v.group < 0 || !((k >= 0 && (g->cls[g->plane][k] & CL_MARKER)) || v.has_step_name))
		return 0;
	return add_marker(g, v.group, e->start_ps, e->end_ps, b128);
}

/* A xs_stop_fn: the group cap. */
static bool steps_full(void *arg)
{
	const struct gsteps *g = arg;

	return g->st->cut;
}

/*
 * derives() - whether GPU plane @q gets the Steps line XProf's preprocessing
 * derives from group_id (DeriveStepEventsFromGroups(), as trace/ shows it):
 * it has none (by id or name) and a group_id stat metadata.
 */
static bool derives(const struct gsteps *g, const struct xprofs_xspace *x, size_t q)
{
	const struct xs_plane *p = &x->planes[q];

	if (g->kind != K_GPU || !xs_plane_is_gpu(p) || !p->group_ids)
		return false;
	for (size_t j = p->first_line; j < p->first_line + p->n_lines; j++)
		if (x->lines[j].id == TID_DERIVED_MIN ||
		    xs_str_eq(x->lines[j].name, x->lines[j].name_len, "Steps"))
			return false;
	return true;
}

/* A stats_dmark_fn: a derived marker of g->plane (arg: struct gsteps). */
static int add_run(void *arg, const struct stats_dmark *run)
{
	return add_marker(arg, run->group, run->b, run->e, run->b128);
}

/*
 * derived_markers() - the markers of the GPU planes' derived Steps lines
 * (steps-derived.c), added plane by plane in plane order. The planes are read
 * as tasks, each reduced to the markers add_marker() keeps; adding those gives
 * what adding every run gives, unless the caps cut in the middle of a plane:
 * such a plane, or all of them when a task failed, is walked here run by run.
 */
static int derived_markers(struct xs_rctx *rc, struct gsteps *g)
{
	const struct xprofs_xspace *x = rc->x;
	size_t *planes = calloc(x->n_planes + 1, sizeof(*planes)), n = 0;
	int64_t(*keys)[2] = calloc(x->n_planes + 1, sizeof(*keys));
	struct stats_dplane *dp = calloc(x->n_planes + 1, sizeof(*dp));
	bool quiet = rc->err && rc->err->len == 0, tasks;
	int r = 0;

	if (!planes || !keys || !dp) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t q = 0; q < x->n_planes; q++)
		if (derives(g, x, q)) {
			keys[n][0] = g->keys[q].group, keys[n][1] = g->keys[q].step_name;
			planes[n++] = q;
		}
	tasks = n &&
		stats_derived_planes(rc, planes, (const int64_t(*)[2])keys, n, PMARKS_MAX, dp) == 0;
	if (n && !tasks && quiet) /* a failed task: the walk below says why */
		xprofs_buf_reset(rc->err);
	for (size_t i = 0; i < n && r == 0; i++) {
		const struct stats_dplane *d = &dp[i];

		g->plane = planes[i];
		if (tasks && !d->over && !g->st->cut && g->npm + d->n <= PMARKS_MAX &&
		    g->st->n + d->n <= STEPS_MAX)
			for (size_t k = 0; k < d->n && r == 0; k++)
				r = add_run(g, &d->m[k]);
		else
			r = stats_derived_runs(rc, planes[i], keys[i], steps_full, add_run, g);
	}
out:
	for (size_t i = 0; dp && i < n; i++)
		stats_dplane_free(&dp[i]);
	free(dp);
	free(keys);
	free(planes);
	return r;
}

/* markers() - pass 1: the step markers of every device plane, or of the host. */
static int markers(struct xs_rctx *rc, struct gsteps *g)
{
	const struct xprofs_xspace *x = rc->x;
	int r = derived_markers(rc, g);

	for (size_t li = 0; li < x->n_lines && r == 0; li++) {
		const struct xs_line *l = &x->lines[li];
		const struct xs_plane *p = &x->planes[l->plane];

		if (g->kind == K_NONE ? l->plane != g->host
				      : !device_plane(g, p) || !step_line(p, l))
			continue;
		g->plane = l->plane;
		g->line = li;
		r = xs_line_each(rc, li, steps_full, marker_event, g);
	}
	return r;
}

/* ---- pass 2: the events, each step's ToNonOverlappedEvents() ---------------- */

static int sweep_top(const struct ssweep *w)
{
	for (int k = BD_N - 1; k > BD_IDLE; k--)
		if (w->cnt[k] > 0)
			return k;
	return BD_IDLE;
}

/* piece() - [w->t, to) goes to the highest type open: its overlap with the step's span. */
static void piece(struct ssweep *w, int64_t to, int64_t *bd)
{
	int top = sweep_top(w);

	if (to <= w->t)
		return;
	if (top != BD_IDLE) {
		int64_t a = w->t > w->sb ? w->t : w->sb, b = to < w->se ? to : w->se;

		w->seen |= (uint16_t)(1u << top);
		if (b > a)
			bd[top] = xs_sat_add(bd[top], b - a);
	}
	w->t = to;
}

/* advance() - the sweep up to @to: open events ending by then close (ends before starts). */
static void advance(struct ssweep *w, int64_t to, int64_t *bd)
{
	while (w->n && w->a[0].end <= to) {
		piece(w, w->a[0].end, bd);
		w->cnt[w->a[0].type]--;
		w->a[0] = w->a[--w->n];
		for (size_t i = 0;;) { /* sift down */
			size_t l = 2 * i + 1, r = l + 1, k = i;
			struct active t;

			if (l < w->n && w->a[l].end < w->a[k].end)
				k = l;
			if (r < w->n && w->a[r].end < w->a[k].end)
				k = r;
			if (k == i)
				break;
			t = w->a[i], w->a[i] = w->a[k], w->a[k] = t;
			i = k;
		}
	}
	piece(w, to, bd);
}

/*
 * feed() - event [s, e) of type @type to step @k's sweep. An event starting
 * before the sweep's time (a line out of order) starts then.
 */
static int feed(struct gsteps *g, size_t k, int64_t s, int64_t e, uint8_t type)
{
	struct ssweep *w = &g->sw[k];
	int64_t *bd = g->st->s[k].bd;
	size_t i;
	int r;

	if (!w->started || (!w->n && w->t < s)) /* no event open: the gap owns nothing */
		w->t = s, w->started = true;
	advance(w, s, bd);
	if (w->n >= ACTIVE_MAX)
		return 0;
	if ((r = xprofs_grow(&w->a, &w->cap, w->n, sizeof(*w->a), 16)) < 0)
		return r;
	i = w->n++;
	w->a[i] = (struct active){e > s ? e : s, type};
	while (i && w->a[(i - 1) / 2].end > w->a[i].end) {
		struct active t = w->a[i];

		w->a[i] = w->a[(i - 1) / 2];
		w->a[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
	w->cnt[type]++;
	return 0;
}

/*
 * admit() - the step an event of plane @q goes to (its group's, where the plane
 * has a marker of it), or SIZE_MAX: XProf's rules by kind (correlation_id and
 * group_id on GPU, group_id on TPU, a real host event of a group on the host).
 */
static size_t admit(struct gsteps *g, size_t q, const struct evstats *v, uint8_t cls)
{
	struct pmkey key = {q, v->group};
	struct pkeys *k = &g->keys[q];
	uint32_t i;

	if (!v->has_group || (g->kind == K_GPU && !(v->has_corr && v->corr >= 0 && v->group >= 0)))
		return SIZE_MAX;
	if (g->kind == K_NONE && (v->group < 0 || v->has_step_name || (cls & CL_NOT_REAL)))
		return SIZE_MAX;
	if (!k->last_ok || k->last_group != v->group) { /* the markers are fixed in pass 2 */
		if (xprofs_table_find(g->pmtab, pm_hash(q, v->group), pm_eq, g->pm, &key, &i) < 0)
			i = UINT32_MAX;
		k->last_ok = true, k->last_group = v->group, k->last_pm = i;
	}
	if ((i = k->last_pm) == UINT32_MAX)
		return SIZE_MAX; /* IntersectCombineStepEvents(): no marker of it here */
	g->pm[i].events = true;
	return g->pm[i].step;
}

/* events() - pass 2: a merge of the event lines, each admitted event to its step's sweep. */
static int events(struct xs_rctx *rc, struct gsteps *g)
{
	const struct xprofs_xspace *x = rc->x;
	size_t *li = malloc(STATS_MERGE_MAX * sizeof(*li)), n = 0;
	struct stats_merge m = {0};
	int r = 0;

	if (!li)
		return -ENOMEM;
	for (size_t j = 0; j < x->n_lines && n < STATS_MERGE_MAX; j++)
		if (event_line(g, &x->planes[x->lines[j].plane], &x->lines[j]))
			li[n++] = j;
	if (!n || (r = stats_merge_open(rc, li, n, NULL, &m)) < 0)
		goto out;
	while (m.nheap) {
		struct stats_mline *ml = stats_merge_top(&m);
		size_t q = ml->it.l->plane, k;
		ssize_t c = xs_md_find(ml->evx, ml->e.md);
		uint8_t cls = c >= 0              ? g->cls[q][c]
			      : g->kind == K_NONE ? BD_HOST_COMPUTE
						  : BD_DEVICE_COMPUTE;
		struct evstats v;

		if ((r = ev_stats(rc, &ml->rc.ev, &ml->e, &g->keys[q], &g->keys[q].ev, &v)) < 0)
			goto out;
		k = admit(g, q, &v, cls);
		if (k != SIZE_MAX && (!g->second || g->sw[k].redo) &&
		    (r = feed(g, k, ml->e.start_ps, ml->e.end_ps, cls & CL_TYPE)) < 0)
			goto out;
		if ((r = stats_merge_pop(&m)) < 0)
			goto out;
	}
	for (size_t k = 0; k < g->st->n; k++) { /* close every sweep */
		advance(&g->sw[k], INT64_MAX, g->st->s[k].bd);
		free(g->sw[k].a);
		g->sw[k].a = NULL;
		g->sw[k].n = g->sw[k].cap = 0;
		memset(g->sw[k].cnt, 0, sizeof(g->sw[k].cnt));
		g->sw[k].started = false;
	}
	r = 0;
out:
	stats_merge_free(&m);
	free(li);
	return r;
}

/* ---- the step database (ConvertStepEventsToStepDb()) -------------------------- */

/*
 * step_time() - StepDetails::StepTime() of step @k from the markers in @pm
 * (only those whose plane has events of the group with @counted): the longest
 * device marker, else the longest host marker (device planes and host steps
 * never mix here). *mk: the marker chosen, NULL: none.
 */
static void step_time(const struct gsteps *g, size_t k, bool counted, const struct pmark **mk)
{
	*mk = NULL;
	for (size_t i = g->first[k]; i < g->first[k + 1]; i++) {
		const struct pmark *m = &g->pm[g->idx[i]];

		if (counted && !m->events && g->kind != K_NONE)
			continue;
		if (!*mk || m->e - m->b > (*mk)->e - (*mk)->b)
			*mk = m;
	}
}

/*
 * keep() - whether step @k is in XProf's step database: its group has events
 * with markers on some device plane (GPU: UnionCombineStepEvents()) or on
 * every device plane that has any (TPU: IntersectCombineStepEvents()), a
 * step time, and is well formed (ConvertStepDetailsToStepInfo(): device
 * compute time, or host compute time on a host without devices).
 * @planes: per plane whether it has any counted marker.
 */
static bool keep(const struct gsteps *g, size_t k, const bool *planes, const struct pmark *mk)
{
	size_t have = 0, need = 0;

	if (!mk || mk->e <= mk->b)
		return false;
	if (!(g->sw[k].seen & (1u << (g->kind == K_NONE ? BD_HOST_COMPUTE : BD_DEVICE_COMPUTE))))
		return false;
	if (g->kind != K_TPU)
		return true;
	for (size_t i = g->first[k]; i < g->first[k + 1]; i++)
		have += g->pm[g->idx[i]].events;
	for (size_t q = 0; planes && q < g->st->nplanes; q++)
		need += planes[q];
	return have == need;
}

static int num_cmp(const void *a, const void *b)
{
	const struct stats_step *x = a, *y = b;

	return x->num < y->num ? -1 : x->num > y->num;
}

/* finish() - every step kept with its step time, idle time and device time, by group. */
static int finish(struct xs_rctx *rc, struct gsteps *g)
{
	struct stats_steps *st = g->st;
	bool *planes = calloc(st->nplanes + 1, sizeof(*planes)), redo = false;
	size_t n = 0;
	int r = 0;

	if (!planes)
		return -ENOMEM;
	for (size_t i = 0; i < g->npm; i++)
		if (g->pm[i].events)
			planes[g->pm[i].plane] = true;
	for (size_t k = 0; k < st->n; k++) { /* the spans that changed: pass 2 again */
		const struct pmark *mk;

		step_time(g, k, true, &mk);
		if (mk && (mk->b != g->sw[k].sb || mk->e != g->sw[k].se)) {
			g->sw[k].redo = redo = true;
			g->sw[k].sb = mk->b, g->sw[k].se = mk->e;
			memset(st->s[k].bd, 0, sizeof(st->s[k].bd));
		}
	}
	if (redo) {
		g->second = true;
		if ((r = events(rc, g)) < 0)
			goto out;
	}
	for (size_t k = 0; k < st->n; k++) {
		struct stats_step *s = &st->s[k];
		const struct pmark *mk;
		int64_t busy = 0;

		step_time(g, k, true, &mk);
		if (!keep(g, k, planes, mk))
			continue;
		s->plane = mk->plane;
		s->start = mk->b;
		s->dur = mk->e - mk->b;
		s->begin = mk->b128;
		s->end = mk->b128 + s->dur;
		for (int t = BD_IDLE + 1; t < BD_N; t++)
			busy = xs_sat_add(busy, s->bd[t]);
		s->bd[BD_IDLE] = s->dur > busy ? s->dur - busy : 0;
		s->device = g->kind != K_NONE ? s->dur - s->bd[BD_IDLE] : 0;
		st->s[n++] = *s;
	}
	st->n = n;
	if (n)
		qsort(st->s, n, sizeof(*st->s), num_cmp);
out:
	free(planes);
	return r;
}

/* The planes whose event classes setup() reads as tasks (classify_task()). */
struct cls_tasks {
	struct gsteps *g;
	size_t *planes; /* owned */
};

static int classify_task(struct xs_rctx *rc, size_t i, void *arg)
{
	const struct cls_tasks *t = arg;
	size_t q = t->planes[i];

	return classify_plane(rc, q, t->g->kind != K_NONE, &t->g->cls[q]);
}

static uint64_t classify_cost(const struct xprofs_xspace *x, size_t i, void *arg)
{
	const struct cls_tasks *t = arg;

	return x->planes[t->planes[i]].ev.n;
}

/* setup() - the kind of host, the stat keys and event classes of the planes read. */
static int setup(struct xs_rctx *rc, struct gsteps *g)
{
	const struct xprofs_xspace *x = rc->x;
	struct cls_tasks t = {g, calloc(x->n_planes + 1, sizeof(*t.planes))};
	struct wire_cur c;
	size_t n = 0;
	int r = 0;

	g->kind = K_NONE;
	g->host = SIZE_MAX;
	for (size_t q = 0; q < x->n_planes; q++) {
		const char *name = x->planes[q].name;

		if (!strncmp(name, "/device:TPU:", 12))
			g->kind = K_TPU;
		else if (xs_plane_is_gpu(&x->planes[q]) && g->kind == K_NONE)
			g->kind = K_GPU;
		if (xs_str_eq(name, x->planes[q].name_len, "/host:CPU") && g->host == SIZE_MAX)
			g->host = q;
	}
	g->keys = calloc(x->n_planes + 1, sizeof(*g->keys));
	g->cls = calloc(x->n_planes + 1, sizeof(*g->cls));
	if (!t.planes || !g->keys || !g->cls || xprofs_table_new(STEPS_MAX, &g->gtab) < 0 ||
	    xprofs_table_new(XPROFS_TABLE_MAX, &g->pmtab) < 0) {
		free(t.planes);
		return -ENOMEM;
	}
	wire_cur_init(&c, x->r, NULL);
	for (size_t q = 0; q < x->n_planes; q++) {
		const struct xs_plane *p = &x->planes[q];
		struct pkeys *k = &g->keys[q];

		if (g->kind == K_NONE ? q != g->host : !device_plane(g, p))
			continue;
		k->group = xs_stmd_key(&c, p, "group_id");
		k->corr = xs_stmd_key(&c, p, "correlation_id");
		k->step_name = xs_stmd_key(&c, p, "step_name");
		k->dev_off = xs_stmd_key(&c, p, "device_offset_ps");
		k->dev_dur = xs_stmd_key(&c, p, "device_duration_ps");
		key_set((int64_t[]){k->group, k->corr, k->step_name, k->dev_off, k->dev_dur}, 5,
			&k->mark);
		key_set((int64_t[]){k->group, k->corr, k->step_name}, 3, &k->ev);
		t.planes[n++] = q;
	}
	wire_cur_deinit(&c);
	/* the planes' metadata, decoded on the render's threads (the first failure in plane order) */
	r = xs_tasks_run(rc, n, classify_task, classify_cost, &t);
	free(t.planes);
	return r;
}

/* stats_steps_compute() - XProf's step database of the host into @st (zeroed by the caller). */
int stats_steps_compute(struct xs_rctx *rc, struct stats_steps *st)
{
	const struct xprofs_xspace *x = rc->x;
	struct gsteps g = {.st = st};
	int r;

	st->nplanes = x->n_planes;
	if ((r = setup(rc, &g)) < 0 || (r = markers(rc, &g)) < 0 || !st->n)
		goto out;
	g.sw = calloc(st->n, sizeof(*g.sw));
	g.first = calloc(st->n + 1, sizeof(*g.first));
	g.idx = calloc(g.npm + 1, sizeof(*g.idx));
	if (!g.sw || !g.first || !g.idx) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < g.npm; i++) /* the markers by step (CSR), in their order */
		g.first[g.pm[i].step + 1]++;
	for (size_t k = 0; k < st->n; k++)
		g.first[k + 1] += g.first[k];
	for (size_t i = 0; i < g.npm; i++)
		g.idx[g.first[g.pm[i].step]++] = i;
	for (size_t k = st->n; k > 0; k--) /* undo the fill's advance */
		g.first[k] = g.first[k - 1];
	g.first[0] = 0;
	for (size_t k = 0; k < st->n; k++) { /* the tentative spans: every marker */
		const struct pmark *mk;

		step_time(&g, k, false, &mk);
		g.sw[k].sb = mk ? mk->b : 0;
		g.sw[k].se = mk ? mk->e : 0;
	}
	if ((r = events(rc, &g)) == 0)
		r = finish(rc, &g);
out:
	for (size_t q = 0; g.cls && q < x->n_planes; q++)
		free(g.cls[q]);
	for (size_t k = 0; g.sw && k < st->n; k++)
		free(g.sw[k].a);
	free(g.cls);
	free(g.keys);
	free(g.pm);
	free(g.sw);
	free(g.first);
	free(g.idx);
	xprofs_table_free(g.gtab);
	xprofs_table_free(g.pmtab);
	return r;
}

void stats_steps_free(struct stats_steps *st)
{
	free(st->s);
	memset(st, 0, sizeof(*st));
}

/*
 * stats_steps_summarize() - the overview page's step-time summary of steps [a, b):
 * XProf's StepSummary (average, standard deviation of the population,
 * minimum, maximum) of duration_ps, and the average of each breakdown type.
 */
void stats_steps_summarize(const struct stats_steps *st, size_t a, size_t b,
			   struct stats_step_summary *sum)
{
	double total = 0, var = 0;

	memset(sum, 0, sizeof(*sum));
	sum->has = true;
	sum->n = b - a;
	sum->min = INT64_MAX;
	sum->max = INT64_MIN;
	for (size_t i = a; i < b; i++) {
		total += (double)st->s[i].dur;
		sum->min = st->s[i].dur < sum->min ? st->s[i].dur : sum->min;
		sum->max = st->s[i].dur > sum->max ? st->s[i].dur : sum->max;
		for (int k = 0; k < BD_N; k++) {
			sum->bd[k] += (double)st->s[i].bd[k];
			sum->ms[k] += (double)st->s[i].bd[k] / 1e9;
		}
		sum->ms_step += (double)st->s[i].dur / 1e9;
		sum->ms_input += (double)st->s[i].bd[BD_HOST_WAIT_INPUT] / 1e9 +
				 (double)st->s[i].bd[BD_HOST_TO_DEVICE] / 1e9;
	}
	sum->avg = total / (double)(b - a);
	for (size_t i = a; i < b; i++)
		var += ((double)st->s[i].dur - sum->avg) * ((double)st->s[i].dur - sum->avg);
	sum->stddev = sqrt(var / (double)(b - a));
	for (int k = 0; k < BD_N; k++)
		sum->bd[k] /= (double)(b - a);
}
