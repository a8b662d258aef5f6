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
 * metadata) are read per plane as xs_tasks_run() tasks. Pass 1 reads the
 * step markers (a device plane's step line, or the host's step-marker
 * events), the longest per (plane, group). Pass 2
 * (steps-sweep.c) merges the lines whose events go to steps by start time
 * (merge.c) and gives each admitted event to its group's sweep
 * (ToNonOverlappedEvents(): the highest type open owns the time), which adds
 * the time it owns inside the step's tentative span, the span of every
 * marker; on two threads each half of the time has its own sweeps. A marker
 * counts only where its plane has events of its group
 * (IntersectCombineStepEvents()); where that changes a step's span, pass 2
 * runs again for those steps. Stat keys are looked up once per plane, so the
 * merge reads events of several planes without entering them, and each pass
 * decodes only the stats it reads (xs_walk_stats_keys()).
 * Limits: at most STEPS_MAX groups and PMARKS_MAX (plane, group) markers
 * (then cut); at most STATS_MERGE_MAX lines merged (the first ones); pass
 * 2's (steps-sweep.c).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "steps-state.h"

#define STEPS_MAX ((size_t)1 << 20)
#define PMARKS_MAX ((size_t)1 << 22) /* (plane, group) markers kept */

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

static bool group_eq(const void *ctx, uint32_t idx, const void *key)
{
	return ((const struct stats_step *)ctx)[idx].num == *(const int64_t *)key;
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

	if ((r = stats_steps_ev_stats(rc, &rc->ev, e, &g->keys[g->plane], &g->keys[g->plane].mark,
				      &v)) < 0 ||
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
 * markers() - pass 1: the step markers of every device plane, or of the host.
 * A GPU plane's markers are its step line's only. XProf derives a Steps line
 * from group_id (DeriveStepEventsFromGroups()) in the preprocessing that
 * PreprocessSingleHostXSpace() runs only on a space not grouped yet
 * (!IsXSpaceGrouped(): no "group_id" stat metadata), and a space whose
 * events carry group_id is grouped: on such a space without a step line,
 * XProf's GPU step events meet no markers (IntersectCombineStepEvents())
 * and it has no steps. (An ungrouped space gets its group_ids from XProf's
 * own grouping, GroupTfEvents(), which xprofs does not do: docs/stats.md.)
 */
static int markers(struct xs_rctx *rc, struct gsteps *g)
{
	const struct xprofs_xspace *x = rc->x;
	int r = 0;

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
		if ((r = stats_steps_events(rc, g)) < 0)
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
	if ((r = stats_steps_events(rc, &g)) == 0)
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
