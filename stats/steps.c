/*
 * steps.c - the step analysis: the events of every "Steps" line as steps,
 * labelled by step number (or step name, or the event name); the time inside
 * each during which any device op line is busy (device_ps); each step's time
 * by XProf's event types (event_span.cc ToNonOverlappedEvents(),
 * ClassifyGpuEvent(), ClassifyCpuEvent()); a plane's step-time summary
 * (XProf's StepSummary). steps.json, overview.json, overview.svg, the
 * session views and the steps/N windows are made from it.
 *
 * Design: steps are collected, sorted by plane and start; then the op lines
 * of each device plane (stats_step_lines(), lines.c) are merged by start
 * time (merge.c) and every interval of their union adds its overlap to the
 * plane's steps (binary search for the last step starting before it ends);
 * the union of all device planes' op lines does the same for host steps.
 * Concurrent streams count once. The breakdown's sweep over the same lines
 * adds the union too where it has them all (steps_breakdown()), so the union
 * pass runs only for the rest; the sweeps are xs_tasks_run() tasks. Limits:
 * at most STEPS_MAX steps (then cut); at most STATS_MERGE_MAX lines merged at
 * once; at most ACTIVE_MAX events open at once in a sweep.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "stats-internal.h"

#define STEPS_MAX ((size_t)1 << 20)

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

static int step_cmp(const void *a, const void *b)
{
	const struct stats_step *x = a, *y = b;

	if (x->plane != y->plane)
		return x->plane < y->plane ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return 0;
}

/* A xs_stop_fn: the step cap, checked before an event's metadata is looked up. */
static bool steps_full(void *arg)
{
	struct stats_steps *st = arg;

	if (st->n < STEPS_MAX)
		return false;
	st->cut = true;
	return true;
}

/* A xs_event_fn: one step of the "Steps" line being collected (arg: struct stats_steps). */
static int steps_event(struct xs_rctx *rc, const struct xs_event *e, struct xs_evmd *m, void *arg)
{
	struct stats_steps *st = arg;
	struct xs_opstats os = {.borrow = true};
	struct stats_step *s;
	struct xs_out lo;
	int r;

	if (e->has_stats &&
	    (r = xs_walk_stats(rc, &rc->ev, e->stats_off, e->off + e->len - e->stats_off,
			       XEVENT_F_STATS, xs_collect_stat, &os)) < 0) {
		xs_opstats_clear(&os);
		return r;
	}
	xs_out_init(&lo, NULL);
	if (os.has_step_num)
		xs_out_i64(&lo, os.step_num);
	else if (m->has_step_num)
		xs_out_i64(&lo, m->step_num);
	else if (os.step_name)
		xs_out_cstr(&lo, os.step_name);
	else
		xs_out_add(&lo, m->name_json, m->name_json_len);
	xs_opstats_clear(&os);
	if (lo.r < 0 || xprofs_grow(&st->s, &st->cap, st->n, sizeof(*st->s), 64) < 0) {
		xs_out_deinit(&lo);
		return -ENOMEM;
	}
	s = &st->s[st->n++];
	s->plane = st->plane;
	s->start = e->start_ps;
	s->dur = e->duration_ps;
	s->device = 0;
	memset(s->bd, 0, sizeof(s->bd));
	s->begin = (xprofs_ps128)rc->x->lines[st->line].timestamp_ns * 1000 + e->offset_ps;
	s->end = s->begin + (e->duration_ps > 0 ? e->duration_ps : 1);
	s->label = xs_out_steal(&lo, NULL);
	xs_out_deinit(&lo);
	if (!s->label) {
		st->n--;
		return -ENOMEM;
	}
	return 0;
}

static int steps_collect(struct xs_rctx *rc, size_t li, struct stats_steps *st)
{
	st->plane = rc->x->lines[li].plane;
	st->line = li;
	return xs_line_each(rc, li, steps_full, steps_event, st);
}

/*
 * steps_find() - the first step of [a, b) starting at or after @end. The pieces
 * of a sweep come in time order, so the last answer (*hint) or the next one
 * usually is it; else a binary search.
 */
static size_t steps_find(const struct stats_steps *st, size_t a, size_t b, int64_t end,
			 size_t *hint)
{
	size_t lo = *hint, hi;

	if (lo >= a && lo <= b && (lo == a || st->s[lo - 1].start < end)) {
		while (lo < b && st->s[lo].start < end && lo - *hint < 2)
			lo++;
		if (lo == b || st->s[lo].start >= end)
			return *hint = lo;
	}
	lo = a, hi = b;
	while (lo < hi) { /* first step starting at or after @end */
		size_t mid = lo + (hi - lo) / 2;

		if (st->s[mid].start < end)
			lo = mid + 1;
		else
			hi = mid;
	}
	return *hint = lo;
}

/*
 * steps_add() - add the overlap of [start, end) to @slot (BD_N: device time; -1:
 * none) and, with @dev, to the device time too, of the steps of plane range [a, b).
 */
static void steps_add(struct stats_steps *st, size_t a, size_t b, int64_t start, int64_t end,
		      int slot, bool dev, size_t *hint)
{
	size_t lo = steps_find(st, a, b, end, hint);

	for (size_t k = lo; k > a; k--) {
		struct stats_step *s = &st->s[k - 1];
		int64_t s_end = xs_sat_add(s->start, s->dur);
		int64_t from = start > s->start ? start : s->start;
		int64_t to = end < s_end ? end : s_end;

		if (s_end <= start)
			break;
		if (to > from) {
			if (slot >= 0) {
				int64_t *acc = slot == BD_N ? &s->device : &s->bd[slot];

				*acc = xs_sat_add(*acc, to - from);
			}
			if (dev)
				s->device = xs_sat_add(s->device, to - from);
		}
	}
}

/* steps_gather() - the steps of every "Steps" line, in steps.json's order. */
static int steps_gather(struct xs_rctx *rc, struct stats_steps *st)
{
	struct xprofs_xspace *x = rc->x;
	int r;

	for (size_t li = 0; li < x->n_lines; li++) {
		const struct xs_line *l = &x->lines[li];

		if (xs_str_eq(l->name, l->name_len, "Steps") && (r = steps_collect(rc, li, st)) < 0)
			return r;
	}
	if (st->n)
		qsort(st->s, st->n, sizeof(*st->s), step_cmp);
	return 0;
}

void stats_steps_free(struct stats_steps *st)
{
	for (size_t i = 0; i < st->n; i++)
		free(st->s[i].label);
	free(st->s);
	free(st->hint);
	free(st->busy);
}

int stats_steps_windows(struct xs_rctx *rc, struct xprofs_step_window **out, size_t *n)
{
	struct stats_steps st = {0};
	int r;

	if ((r = steps_gather(rc, &st)) == 0 && st.n) {
		*out = calloc(st.n, sizeof(**out));
		if (!*out)
			r = -ENOMEM;
		for (size_t i = 0; r == 0 && i < st.n; i++) {
			(*out)[i].plane = st.s[i].plane;
			(*out)[i].begin_ps = st.s[i].begin;
			(*out)[i].end_ps = st.s[i].end;
		}
		if (r == 0)
			*n = st.n;
	}
	stats_steps_free(&st);
	return r;
}

/* What a union interval is added to: the steps of device plane @plane, or of every host plane. */
struct busy_add {
	struct stats_steps *st;
	const size_t *ra, *rb;
	size_t plane; /* the device plane whose lines are merged, or SIZE_MAX: all */
	size_t n_planes;
	const struct xprofs_xspace *x;
};

/* busy_add_typed() - [from, to) to type @slot (-1: none; BD_N: device) and, with @dev, device. */
static void busy_add_typed(struct busy_add *b, int64_t from, int64_t to, int slot, bool dev)
{
	if (b->plane != SIZE_MAX) {
		steps_add(b->st, b->ra[b->plane], b->rb[b->plane], from, to, slot, dev,
			  &b->st->hint[b->plane]);
		return;
	}
	for (size_t q = 0; q < b->n_planes; q++) {
		if (b->rb[q] <= b->ra[q])
			continue;
		if (!xs_plane_is_device(&b->x->planes[q]))
			steps_add(b->st, b->ra[q], b->rb[q], from, to, slot, dev, &b->st->hint[q]);
	}
}

/* ---- the step-time breakdown (XProf's ToNonOverlappedEvents()) --------- */

#define ACTIVE_MAX ((size_t)1 << 20) /* events open at once in a sweep (more: ignored) */

static bool prefix_icase(const char *s, size_t n, const char *lit)
{
	size_t k = strlen(lit);

	return n >= k && !strncasecmp(s, lit, k);
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

/* ClassifyCpuEvent() without the correlation id (HOST_PREPARE is not told apart). */
static uint8_t classify_host(const struct xs_evmd *m)
{
	if (prefix_icase(m->name, m->name_len, "memcpyhtod") ||
	    has_sub(m->name, m->name_len, "InfeedEnqueue"))
		return BD_HOST_TO_DEVICE;
	if (prefix_icase(m->name, m->name_len, "memcpyhtoh"))
		return BD_HOST_TO_HOST;
	if (prefix_icase(m->name, m->name_len, "IteratorGetNext"))
		return BD_HOST_WAIT_INPUT;
	return BD_HOST_COMPUTE;
}

/* classify_plane() - the event type of every event metadata of plane @q. *out: caller frees. */
static int classify_plane(struct xs_rctx *rc, size_t q, uint8_t **out)
{
	const struct xs_plane *p = &rc->x->planes[q];
	bool dev = xs_plane_is_device(p);
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

struct active { /* an open event of a sweep */
	int64_t end;
	uint8_t type;
	bool dev; /* of a device op line */
};

struct sweep {
	struct active *a; /* owned: a min-heap by end */
	size_t n, cap;
	int64_t cnt[BD_N]; /* open events by type */
	int64_t ndev;      /* open events of device op lines */
	int64_t t;         /* where the last segment ended */
	bool fuse;         /* also add device_ps: the time any device op event is open */
	bool lost;         /* an event was not pushed (ACTIVE_MAX): device_ps is not the union */
	struct stats_busy
		busy; /* fused: the union of the device op events, as stats_device_busy() */
};

static void act_sift_down(struct sweep *w, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, k = i;
		struct active t;

		if (l < w->n && w->a[l].end < w->a[k].end)
			k = l;
		if (r < w->n && w->a[r].end < w->a[k].end)
			k = r;
		if (k == i)
			return;
		t = w->a[i], w->a[i] = w->a[k], w->a[k] = t;
		i = k;
	}
}

static int act_push(struct sweep *w, int64_t end, uint8_t type, bool dev)
{
	size_t i;
	int r;

	if (w->n >= ACTIVE_MAX) {
		w->lost = true;
		return 0;
	}
	if ((r = xprofs_grow(&w->a, &w->cap, w->n, sizeof(*w->a), 64)) < 0)
		return r;
	i = w->n++;
	w->a[i] = (struct active){end, type, dev};
	w->ndev += dev;
	while (i && w->a[(i - 1) / 2].end > w->a[i].end) {
		struct active t = w->a[i];

		w->a[i] = w->a[(i - 1) / 2];
		w->a[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
	w->cnt[type]++;
	return 0;
}

static int sweep_top(const struct sweep *w)
{
	for (int k = BD_N - 1; k > BD_IDLE; k--)
		if (w->cnt[k] > 0)
			return k;
	return BD_IDLE;
}

/*
 * sweep_to() - the time up to @t goes to the highest open type, and (fused) to
 * device_ps when a device op event is open: the pieces where one is open are
 * the union of the device op events that stats_merge_union() would add, in parts.
 */
static void sweep_to(struct sweep *w, int64_t t, struct busy_add *b)
{
	int top = sweep_top(w);
	bool dev = w->fuse && w->ndev > 0;

	if (t > w->t && (top != BD_IDLE || dev))
		busy_add_typed(b, w->t, t, top != BD_IDLE ? top : -1, dev);
	if (t > w->t && dev)
		w->busy.busy = xs_sat_add(w->busy.busy, t - w->t);
	if (t > w->t)
		w->t = t;
}

/*
 * merge_sweep() - ToNonOverlappedEvents() over the events of lines @li[0..n)
 * in start order: every piece of time goes to the highest-priority type open
 * then; ends come before starts at the same time. With @fuse, device_ps too
 * (the union of the device op lines among @li); *lost: it is not exact.
 */
static int merge_sweep(struct xs_rctx *rc, const size_t *li, size_t n, uint8_t *const *cls,
		       struct busy_add *b, bool fuse, bool *lost, struct stats_busy *busy)
{
	struct sweep w = {.fuse = fuse};
	struct stats_merge m;
	int r;

	if ((r = stats_merge_open(rc, li, n, cls, &m)) < 0)
		goto out;
	while (m.nheap || w.n) {
		struct stats_mline *ml = m.nheap ? &m.ml[m.heap[0]] : NULL;
		ssize_t k;
		uint8_t type;

		if (w.n && (!ml || w.a[0].end <= ml->e.start_ps)) {
			sweep_to(&w, w.a[0].end, b);
			w.cnt[w.a[0].type]--;
			w.ndev -= w.a[0].dev;
			w.a[0] = w.a[--w.n];
			act_sift_down(&w, 0);
			continue;
		}
		if (!w.n)
			w.t = ml->e.start_ps;
		sweep_to(&w, ml->e.start_ps, b);
		k = xs_md_find(ml->evx, ml->e.md);
		type = k >= 0 && ml->cls ? ml->cls[k]
					 : (xs_plane_is_device(&rc->x->planes[ml->it.l->plane])
						    ? BD_DEVICE_COMPUTE
						    : BD_HOST_COMPUTE);
		if (ml->dev) { /* busy_sum_fn()'s first / last: the union's ends */
			int64_t s = ml->e.start_ps, t = ml->e.end_ps > s ? ml->e.end_ps : s;

			if (!w.busy.any || s < w.busy.first)
				w.busy.first = s;
			if (!w.busy.any || t > w.busy.last)
				w.busy.last = t;
			w.busy.any = true;
		}
		if ((r = act_push(&w, ml->e.end_ps, type, ml->dev)) < 0)
			goto out;
		if ((r = stats_merge_next(ml)) < 0)
			goto out;
		if (r == 0)
			m.heap[0] = m.heap[--m.nheap];
		stats_merge_sift(&m, 0);
	}
	r = 0;
out:
	*lost = w.lost;
	*busy = w.busy;
	stats_merge_free(&m);
	free(w.a);
	return r;
}

static void busy_add_fn(void *arg, int64_t from, int64_t to)
{
	busy_add_typed(arg, from, to, BD_N, false);
}

/*
 * steps_device() - device_ps: per device plane with steps, the union of its
 * op lines; for the steps of the other planes (host), the union of the op
 * lines of every device plane. @done: per plane (and [n_planes] for the host
 * steps) whether steps_breakdown()'s sweep already added it.
 */
static int steps_device(struct xs_rctx *rc, struct stats_steps *st, const size_t *ra,
			const size_t *rb, const bool *done)
{
	struct xprofs_xspace *x = rc->x;
	struct busy_add b = {st, ra, rb, 0, x->n_planes, x};
	size_t *li = malloc(STATS_MERGE_MAX * sizeof(*li)), n;
	bool host_steps = false;
	int r = 0;

	if (!li)
		return -ENOMEM;
	for (size_t q = 0; q < x->n_planes; q++)
		if (rb[q] > ra[q] && !xs_plane_is_device(&x->planes[q]))
			host_steps = true;
	/* pass 0: each device plane's own steps; pass 1: the host steps, all device lines */
	for (int pass = 0; pass < 2 && r == 0; pass++) {
		for (size_t q = 0; q < x->n_planes && r == 0; q++) {
			const struct xs_plane *p = &x->planes[q];

			if (pass == 0 && (rb[q] <= ra[q] || !xs_plane_is_device(p) || done[q]))
				continue;
			if (pass == 1 && (!host_steps || q > 0 || done[x->n_planes]))
				break;
			b.plane = pass == 0 ? q : SIZE_MAX;
			n = 0;
			for (size_t j = 0; j < x->n_lines && r == 0; j++) {
				const struct xs_line *l = &x->lines[j];
				enum stats_line_kind k;

				if (pass == 0 && l->plane != q)
					continue;
				k = stats_op_line_kind(x, &x->planes[l->plane], l, false);
				if (k != LK_XLA_OPS && k != LK_STREAM)
					continue;
				li[n++] = j;
				if (n == STATS_MERGE_MAX) {
					r = stats_merge_union(rc, li, n, busy_add_fn, &b);
					n = 0;
				}
			}
			if (r == 0 && n)
				r = stats_merge_union(rc, li, n, busy_add_fn, &b);
		}
	}
	free(li);
	return r;
}

/*
 * sweep_fusable() - whether a sweep over @li[0..n) (stats_step_lines() of a group) can also
 * give that group's device_ps exactly: it has every device op line stats_merge_union()
 * would take (stats_step_lines() was not cut at STATS_MERGE_MAX), and each line is known to be in
 * time order (the union's and the sweep's treatments of out-of-order events differ).
 */
static bool sweep_fusable(const struct xprofs_xspace *x, const size_t *li, size_t n)
{
	if (n >= STATS_MERGE_MAX || x->tracks_only)
		return false;
	for (size_t i = 0; i < n; i++)
		if (x->lines[li[i]].unsorted)
			return false;
	return true;
}

/* device_reset() - device_ps back to 0 for steps [a, b) (a sweep's partial union). */
static void device_reset(struct stats_steps *st, size_t a, size_t b)
{
	for (size_t i = a; i < b; i++)
		st->s[i].device = 0;
}

/* The sweeps of one steps_breakdown(), as xs_tasks_run() tasks. */
struct bd_tasks {
	struct stats_steps *st;
	const size_t *ra, *rb;
	uint8_t **cls; /* per plane: its event types by metadata index */
	bool *done;
	bool host_steps;
};

/*
 * bd_task() - a xs_task_fn: task q < n_planes sweeps device plane q's op lines
 * for its steps, task n_planes every op line for the host steps. They write to
 * disjoint steps (their planes'), hints, busy times and done flags.
 */
static int bd_task(struct xs_rctx *rc, size_t q, void *arg)
{
	struct bd_tasks *t = arg;
	struct xprofs_xspace *x = rc->x;
	struct stats_steps *st = t->st;
	struct busy_add b = {st, t->ra, t->rb, q, x->n_planes, x};
	size_t *li, n;
	bool fuse, lost = false, host = q == x->n_planes;
	struct stats_busy all, *busy = host ? &all : &st->busy[q];
	int r = 0;

	if (host ? !t->host_steps : t->rb[q] <= t->ra[q] || !xs_plane_is_device(&x->planes[q]))
		return 0;
	if (!(li = malloc(STATS_MERGE_MAX * sizeof(*li))))
		return -ENOMEM;
	b.plane = host ? SIZE_MAX : q;
	n = stats_step_lines(x, b.plane, li, STATS_MERGE_MAX);
	fuse = sweep_fusable(x, li, n);
	memset(busy, 0, sizeof(*busy));
	if (n)
		r = merge_sweep(rc, li, n, t->cls, &b, fuse, &lost, busy);
	t->done[q] = fuse && !lost;
	for (size_t p = 0; fuse && lost && p < x->n_planes; p++)
		if (host ? !xs_plane_is_device(&x->planes[p]) : p == q)
			device_reset(st, t->ra[p], t->rb[p]);
	free(li);
	return r;
}

/* A xs_task_cost_fn: the events a sweep reads, roughly. */
static uint64_t bd_cost(const struct xprofs_xspace *x, size_t q, void *arg)
{
	(void)arg;
	return q < x->n_planes ? x->planes[q].events : x->totals.events;
}

/*
 * steps_breakdown() - every step's time by XProf's event types: a device plane's
 * steps from its op lines, host steps from every device op line and the host op
 * lines; the rest of the step is idle. More than STATS_MERGE_MAX lines: the first ones only.
 * Where the sweep has every line the union needs (sweep_fusable()), it adds
 * device_ps as well, and done[q] (done[n_planes]: the host steps) says so: one pass
 * over those lines instead of two. The sweeps run as xs_tasks_run() tasks.
 */
static int steps_breakdown(struct xs_rctx *rc, struct stats_steps *st, const size_t *ra,
			   const size_t *rb, bool *done)
{
	struct xprofs_xspace *x = rc->x;
	struct bd_tasks t = {st, ra, rb, calloc(x->n_planes + 1, sizeof(*t.cls)), done, false};
	int r = 0;

	if (!t.cls)
		return -ENOMEM;
	for (size_t q = 0; q < x->n_planes && r == 0; q++) {
		t.host_steps |= rb[q] > ra[q] && !xs_plane_is_device(&x->planes[q]);
		r = classify_plane(rc, q, &t.cls[q]);
	}
	if (r == 0)
		r = xs_tasks_run(rc, x->n_planes + 1, bd_task, bd_cost, &t);
	for (size_t i = 0; r == 0 && i < st->n; i++) {
		struct stats_step *s = &st->s[i];
		int64_t busy = 0;

		for (int k = BD_IDLE + 1; k < BD_N; k++)
			busy = xs_sat_add(busy, s->bd[k]);
		s->bd[BD_IDLE] = s->dur > busy ? s->dur - busy : 0;
	}
	for (size_t q = 0; q < x->n_planes; q++)
		free(t.cls[q]);
	free(t.cls);
	return r;
}

/*
 * stats_steps_summarize() - the overview page's step-time summary of steps [a, b) (one
 * plane's): XProf's StepSummary (average, standard deviation of the population,
 * minimum, maximum) of duration_ps, and the average of each breakdown type.
 */
void stats_steps_summarize(const struct stats_steps *st, size_t a, size_t b,
			   struct stats_step_summary *sum)
{
	double total = 0, var = 0;

	memset(sum, 0, sizeof(*sum));
	sum->has = true;
	sum->plane = st->s[a].plane;
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

void stats_step_summary_write(struct xs_out *o, const struct xprofs_xspace *x,
			      const struct stats_step_summary *sum)
{
	OUT_LIT(o, "{\"plane\":");
	xs_out_str(o, x->planes[sum->plane].name, x->planes[sum->plane].name_len);
	OUT_LIT(o, ",\"steps\":");
	xs_out_u64(o, sum->n);
	OUT_LIT(o, ",\"avg_ps\":");
	xs_out_double(o, sum->avg);
	OUT_LIT(o, ",\"stddev_ps\":");
	xs_out_double(o, sum->stddev);
	xs_out_key_i64(o, ",\"min_ps\":", sum->min);
	xs_out_key_i64(o, ",\"max_ps\":", sum->max);
	OUT_LIT(o, ",\"breakdown_avg\":{");
	for (int k = 0; k < BD_N; k++) {
		OUT_RAW(o, k ? ",\"" : "\"");
		xs_out_add(o, stats_bd_keys[k], strlen(stats_bd_keys[k]));
		OUT_LIT(o, "\":");
		xs_out_double(o, sum->bd[k]);
	}
	OUT_LIT(o, "}}");
}

/* stats_steps_compute() - every step with its device time and breakdown; *ra, *rb: per plane
 * the range of its steps (caller frees both and the steps). */
int stats_steps_compute(struct xs_rctx *rc, struct stats_steps *st, size_t **ra, size_t **rb,
			bool **done_out)
{
	struct xprofs_xspace *x = rc->x;
	bool *done;
	int r;

	*ra = calloc(x->n_planes + 1, sizeof(**ra));
	*rb = calloc(x->n_planes + 1, sizeof(**rb));
	if (!*ra || !*rb)
		return -ENOMEM;
	if ((r = steps_gather(rc, st)) < 0)
		return r;
	for (size_t i = 0; i < st->n; i++) {
		if ((*ra)[st->s[i].plane] == (*rb)[st->s[i].plane])
			(*ra)[st->s[i].plane] = i;
		(*rb)[st->s[i].plane] = i + 1;
	}
	if (!st->n)
		return 0;
	if (!(st->hint = calloc(x->n_planes + 1, sizeof(*st->hint))) ||
	    !(st->busy = calloc(x->n_planes + 1, sizeof(*st->busy))))
		return -ENOMEM;
	if (!(done = calloc(x->n_planes + 1, sizeof(*done))))
		return -ENOMEM;
	if ((r = steps_breakdown(rc, st, *ra, *rb, done)) == 0)
		r = steps_device(rc, st, *ra, *rb, done);
	if (done_out)
		*done_out = done;
	else
		free(done);
	return r;
}

/* The plane whose steps the overview shows: host steps first (the steps XProf groups
 * by), else the first device plane's; SIZE_MAX: no steps. */
static size_t steps_pick(const struct xprofs_xspace *x, const size_t *ra, const size_t *rb)
{
	for (size_t q = 0; q < x->n_planes; q++)
		if (rb[q] > ra[q] && !xs_plane_is_device(&x->planes[q]))
			return q;
	for (size_t q = 0; q < x->n_planes; q++)
		if (rb[q] > ra[q])
			return q;
	return SIZE_MAX;
}

int stats_steps_each(struct xs_rctx *rc, stats_step_fn fn, void *arg)
{
	struct stats_steps st = {0};
	size_t *ra = NULL, *rb = NULL, pick;
	int r;

	if ((r = stats_steps_compute(rc, &st, &ra, &rb, NULL)) < 0)
		goto out;
	pick = steps_pick(rc->x, ra, rb);
	for (size_t i = 0; pick != SIZE_MAX && i < rb[pick] - ra[pick] && r == 0; i++) {
		const struct stats_step *s = &st.s[ra[pick] + i];

		r = fn(arg, i, rb[pick] - ra[pick], s->dur, s->bd);
	}
out:
	stats_steps_free(&st);
	free(ra);
	free(rb);
	return r;
}

int stats_steps_overview_busy(struct xs_rctx *rc, struct stats_step_summary *sum,
			      struct stats_busy *busy, bool *busy_ok)
{
	struct xprofs_xspace *x = rc->x;
	struct stats_steps st = {0};
	size_t *ra = NULL, *rb = NULL, pick;
	bool *done = NULL;
	int r;

	memset(sum, 0, sizeof(*sum));
	if ((r = stats_steps_compute(rc, &st, &ra, &rb, &done)) < 0)
		goto out;
	pick = steps_pick(x, ra, rb);
	if (pick != SIZE_MAX)
		stats_steps_summarize(&st, ra[pick], rb[pick], sum);
	for (size_t q = 0; busy && q < x->n_planes; q++) {
		busy_ok[q] = done && done[q] && xs_plane_is_device(&x->planes[q]);
		if (busy_ok[q])
			busy[q] = st.busy[q];
	}
out:
	stats_steps_free(&st);
	free(ra);
	free(rb);
	free(done);
	return r;
}

int stats_steps_overview(struct xs_rctx *rc, struct stats_step_summary *sum)
{
	return stats_steps_overview_busy(rc, sum, NULL, NULL);
}
