/*
 * view-trace.c - trace.json (and, through gzip.c, trace.json.gz): the
 * profile as Chrome trace-event JSON, as XProf's trace viewer shows it, for
 * Perfetto UI and chrome://tracing.
 *
 * Design: the rules (which planes and lines, pids and tids, hidden events
 * and stats, flows, async events) are in trace-model.c; this file writes
 * them as JSON in one streaming pass, plane by plane in XProf's process
 * order, line by line, event by event. A thread's metadata events come with
 * its first event, so empty lines cost nothing. An event's own stats are
 * rendered into a scratch buffer first, because step_name (the event's
 * name), flow and _a (its phase) and group_id come from them; the event
 * metadata's shown stats are rendered once per render (trace_md).
 * Single-ended async events (flow direction in or out) are held back until
 * their plane ends, rendered both ways, and written as "b"/"e" when their
 * flow id has both ends on the plane, else as a complete event ("X"), so
 * the output never has a begin without an end. Times are exact: 128-bit
 * picoseconds written as decimal microseconds, so epoch-based line
 * timestamps neither overflow nor lose nesting. A complete event's "dur"
 * is written so that a reader adding ts + dur in IEEE double gets the
 * double of the exact end (out_dur()): back-to-back events stay back to
 * back and nested ones nested. displayTimeUnit comes first: Perfetto only
 * looks for it near the start. A level-of-detail render (rc->lod, lod/)
 * asks lod.c about each event of a line before writing it (threadpool
 * regions are not asked: docs/trace.md).
 *
 * Limits: the scratch buffer holds one event's stats; held-back async
 * events take at most DEFER_MAX bytes per plane (past that they are written
 * at once as "b"/"e", as XProf writes them).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "derived.h"
#include "trace-internal.h"

#define DEFER_MAX ((size_t)64 << 20)
/* Times (ps) below this convert to a double exactly; so does N / 10^d for N below it, d <= 22. */
#define EXACT_MAX ((int64_t)1 << 53)
/* The most decimals out_dur() writes (10^-20 µs is far below any double's step there). */
#define DUR_DECIMALS_MAX 20

/* A held-back single-ended async event: its "b"/"e" and its "X" form in trace_defer.buf. */
struct defer_item {
	struct trace_xflow f;
	size_t off, async_len, x_len; /* the "X" form follows the async one */
};

/* The held-back async events of the current plane. */
struct trace_defer {
	struct xs_out buf; /* no sink: a growing string */
	struct defer_item *items;
	size_t n, cap;
	struct trace_async_set ends;
};

/* One line being written. */
struct trace_line {
	struct xs_out *o;
	struct xs_out *ev; /* scratch: the current event's shown stats */
	struct trace_defer *defer;
	const struct xs_line *l;
	uint32_t pid, tid;
	enum trace_tline kind;
	bool named; /* its thread metadata is out */
	xs_ps128 base_ps;
	char ids[48]; /* ,"pid":P,"tid":T (ids_fmt()) */
	size_t ids_len;
	struct trace_derive *derive;  /* owned; the stream's derived lines, NULL: none */
	bool derived_named[DL_KINDS]; /* and Steps, and the host-offload rows */
	bool win; /* a slice walked whole for its derived lines: filter events here */
	xs_ps128 from, to;
	struct trace_regions *regions; /* borrowed; its threadpool regions, NULL: none */
	struct trace_lod *lod;         /* borrowed: the render's level of detail (off: all shown) */
	struct trace_lod_row row;      /* the line's level-of-detail state */
};

/* What one event is written as. */
enum trace_form { TF_X, TF_ASYNC, TF_COUNTER };

/* Everything needed to write an event, in any form. */
struct trace_ev {
	const char *name;
	size_t name_len;
	xs_ps128 ts;
	int64_t dur, raw_dur;
	const struct trace_md *t;
	const struct trace_acc *a;
	struct trace_xflow f;
};

static void out_pid(struct xs_out *o, uint32_t pid)
{
	OUT_LIT(o, ",\"pid\":");
	xs_out_u64(o, pid);
}

/* ,"pid":@pid,"tid":@tid into @buf (room for 48 bytes); its length. By hand: once per derived event. */
static size_t ids_fmt(char *buf, uint32_t pid, uint32_t tid)
{
	size_t n = 0;

	memcpy(buf, ",\"pid\":", 7);
	n = 7 + xs_fmt_u64(buf + 7, pid);
	memcpy(buf + n, ",\"tid\":", 7);
	n += 7;
	return n + xs_fmt_u64(buf + n, tid);
}

/* The thread_name and thread_sort_index metadata of @tl's line. */
static void thread_meta(struct trace_line *tl)
{
	struct xs_out *o = tl->o;

	OUT_LIT(o, ",\n{\"ph\":\"M\",\"name\":\"thread_name\"");
	xs_out_add(o, tl->ids, tl->ids_len);
	OUT_LIT(o, ",\"args\":{\"name\":");
	xs_out_line_name(o, tl->l);
	OUT_LIT(o, "}},\n{\"ph\":\"M\",\"name\":\"thread_sort_index\"");
	xs_out_add(o, tl->ids, tl->ids_len);
	OUT_LIT(o, ",\"args\":{\"sort_index\":");
	xs_out_u64(o, tl->tid);
	OUT_LIT(o, "}}");
	tl->named = true;
}

/* ,"args":{group_id, metadata stats, event stats}} */
static void out_args(struct xs_out *o, const struct trace_ev *v, const struct xs_out *ev)
{
	bool first = true;

	OUT_LIT(o, ",\"args\":{");
	if (v->a->has_group) {
		OUT_LIT(o, "\"group_id\":");
		xs_out_i64(o, v->a->group);
		first = false;
	}
	if (v->t && v->t->args_len) {
		if (!first)
			OUT_LIT(o, ",");
		xs_out_add(o, v->t->args, v->t->args_len);
		first = false;
	}
	if (ev->len) {
		if (!first)
			OUT_LIT(o, ",");
		xs_out_add(o, ev->buf, ev->len);
	}
	OUT_LIT(o, "}}");
}

/* ---- durations a double reader adds up right ------------------------------ */

static const double pow10_d[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
				 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
				 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/*
 * llround(@x) for |@x| < 2^52 without the libm call: x - (int64_t)x is
 * exact there, so comparing it with one half rounds ties away from zero.
 */
static int64_t round_half_away(double x)
{
	int64_t i = (int64_t)x;
	double f = x - (double)i;

	return f >= 0.5 ? i + 1 : f <= -0.5 ? i - 1 : i;
}

/* @n / 10^@d written as a decimal into @buf (room for 48); its length. Trailing zeros go. */
static size_t dec_fmt(char *buf, uint64_t n, int d)
{
	char dig[24];
	size_t k = xs_fmt_u64(dig, n), len = 0;

	if (k <= (size_t)d) { /* 0.000ddd */
		buf[len++] = '0';
		buf[len++] = '.';
		for (size_t z = k; z < (size_t)d; z++)
			buf[len++] = '0';
		memcpy(buf + len, dig, k);
		len += k;
	} else {
		memcpy(buf, dig, k - (size_t)d);
		len = k - (size_t)d;
		buf[len++] = '.';
		memcpy(buf + len, dig + k - (size_t)d, (size_t)d);
		len += (size_t)d;
	}
	while (buf[len - 1] == '0')
		len--;
	if (buf[len - 1] == '.')
		len--;
	buf[len] = 0;
	return len;
}

/* The double a reader parses @n / 10^@d into (correctly rounded, as JavaScript and strtod). */
static double dec_value(uint64_t n, int d)
{
	char buf[48];

	if (n < (uint64_t)EXACT_MAX) /* both exact: one rounding, the division's */
		return (double)n / pow10_d[d];
	dec_fmt(buf, n, d);
	return strtod(buf, NULL);
}

/* Whether a reader adding @t and @n / 10^@d gets @e. */
static bool dec_ends_at(double t, uint64_t n, int d, double e)
{
	double sum = t + dec_value(n, d);

	return sum == e;
}

/*
 * The duration @dur ps (0 < @dur) of an event starting at double @t, whose
 * exact end is double @e, as the decimal with the fewest decimals (7 to
 * DUR_DECIMALS_MAX) that still rounds to @dur ps and that a reader adds to
 * @t to get exactly @e; of those, the nearest to @dur. Into @buf (room for
 * 48); its length, 0 when there is none.
 */
static size_t dur_digits(char *buf, double t, double e, int64_t dur)
{
	double center = e - t, x = (double)dur / 1e6;
	uint64_t scale = 1;

	/* e - t is exact when t >= e / 2 (Sterbenz); else step to a double that adds up to e */
	for (int k = 0; k < 8 && t + center != e; k++)
		center = nextafter(center, t + center < e ? INFINITY : -INFINITY);
	if (t + center != e)
		return 0;
	for (int d = 7; d <= DUR_DECIMALS_MAX; d++) {
		int64_t half, j0, j = 0;
		uint64_t base;
		double dj;
		bool found = false;

		scale *= 10; /* 10^(d - 6): one picosecond in units of 10^-d µs */
		/* dur * scale + scale would pass UINT64_MAX (no division: this runs per event) */
		if (__builtin_mul_overflow((uint64_t)dur, scale, &base) ||
		    base > UINT64_MAX - scale)
			break;
		half = (int64_t)(scale / 2); /* |j| < half: still rounds to dur ps */
		dj = center - x;
		dj *= pow10_d[d];
		if (!(fabs(dj) < (double)half + 2))
			continue;
		j0 = round_half_away(dj);
		/* the center is in the admissible interval: one of its nearest three is too, if any */
		for (int64_t k = -1; k <= 1 && !found; k++) {
			j = j0 + k;
			found = j > -half && j < half && dec_ends_at(t, base + (uint64_t)j, d, e);
		}
		if (!found)
			continue;
		/* the interval is contiguous: walk toward @dur while it holds */
		while (j != 0) {
			int64_t nj = j > 0 ? j - 1 : j + 1;

			if (!dec_ends_at(t, base + (uint64_t)nj, d, e))
				break;
			j = nj;
		}
		return dec_fmt(buf, base + (uint64_t)j, d);
	}
	return 0;
}

/*
 * "dur" of a complete event at @ts lasting @dur ps (>= 1): its exact decimal
 * microseconds when a reader's double ts + dur is the double of the exact
 * end, else dur_digits()'s. Readers (DevTools, speedscope) add the two in
 * IEEE double: 62719.239 + 300.321 is 63019.560000000005, past an event
 * starting at 63019.56. With the double of the exact end, every order and
 * equality of exact ends and starts survives. Where no double added to ts
 * gives it (about 1 event in 30,000), the sum is the double just below it,
 * so an event still never passes the next one's start. Times past 2^53 ps (2.5 h in
 * trace.json's base), where a double's step nears a picosecond, keep the
 * exact digits.
 */
static void out_dur(struct xs_out *o, xs_ps128 ts, int64_t dur)
{
	xs_ps128 end = ts + dur;
	char buf[48];
	size_t n;
	double t, e, sum;

	if (dur <= 0 || dur >= EXACT_MAX || ts <= -EXACT_MAX || end >= EXACT_MAX) {
		xs_out_us(o, dur);
		return;
	}
	t = (double)(int64_t)ts / 1e6;
	e = (double)(int64_t)end / 1e6;
	sum = t + (double)dur / 1e6;
	/* no double adds up to e (ties round away on both sides): the double just below it */
	if (sum == e || (!(n = dur_digits(buf, t, e, dur)) &&
			 (sum < e || !(n = dur_digits(buf, t, nextafter(e, -INFINITY), dur))))) {
		xs_out_us(o, dur);
		return;
	}
	xs_out_add(o, buf, n);
}

/* The common head of an event: ph, pid (tid), ts, then dur (@dur >= 0: "X" events), name. */
static void out_head(struct xs_out *o, const struct trace_line *tl, const char *ph, bool tid,
		     xs_ps128 ts, int64_t dur, const struct trace_ev *v)
{
	OUT_LIT(o, ",\n{\"ph\":\"");
	xs_out_add(o, ph, strlen(ph));
	OUT_LIT(o, "\"");
	if (tid)
		xs_out_add(o, tl->ids, tl->ids_len);
	else
		out_pid(o, tl->pid);
	OUT_LIT(o, ",\"ts\":");
	trace_out_ps(o, ts);
	if (dur >= 0) {
		OUT_LIT(o, ",\"dur\":");
		out_dur(o, ts, dur);
	}
	OUT_LIT(o, ",\"name\":");
	xs_out_add(o, v->name, v->name_len);
}

/* An async event's "b" or "e": shared id and cat (AddAsyncEvent, JsonEventWriter). */
static void out_async(struct xs_out *o, const struct trace_line *tl, const char *ph, xs_ps128 ts,
		      const struct trace_ev *v)
{
	out_head(o, tl, ph, true, ts, -1, v);
	OUT_LIT(o, ",\"id\":");
	xs_out_u64(o, v->f.id);
	OUT_LIT(o, ",\"cat\":");
	xs_out_cstr(o, trace_category(v->f.cat));
}

/* Write event @v to @o as @form. */
static void write_event(struct xs_out *o, const struct trace_line *tl, enum trace_form form,
			const struct trace_ev *v)
{
	const struct trace_acc *a = v->a;

	switch (form) {
	case TF_COUNTER:
		out_head(o, tl, "C", false, v->ts, -1, v);
		break;
	case TF_ASYNC:
		out_async(o, tl, v->f.dir == XFLOW_IN ? "e" : "b", v->ts, v);
		break;
	case TF_X:
		out_head(o, tl, "X", true, v->ts, v->dur, v);
		if (a->has_flow && !a->is_async && v->f.dir != XFLOW_NONE) {
			const char *cat = trace_category(v->f.cat);

			OUT_LIT(o, ",\"bind_id\":");
			xs_out_u64(o, v->f.id);
			if (*cat) {
				OUT_LIT(o, ",\"cat\":");
				xs_out_cstr(o, cat);
			}
			if (v->f.dir & XFLOW_IN)
				OUT_LIT(o, ",\"flow_in\":true");
			if (v->f.dir & XFLOW_OUT)
				OUT_LIT(o, ",\"flow_out\":true");
		}
		break;
	}
	out_args(o, v, tl->ev);
	if (form == TF_ASYNC && v->f.dir == XFLOW_INOUT) {
		/* an in-out async event is a whole span: its end, without args */
		out_async(o, tl, "e", v->ts + v->raw_dur, v);
		OUT_LIT(o, "}");
	}
}

/* Hold back a single-ended async event: both forms go to the plane's buffer. */
static int defer_event(struct trace_line *tl, const struct trace_ev *v)
{
	struct trace_defer *d = tl->defer;
	struct defer_item *it;
	size_t at = d->buf.len;
	int r;

	if ((r = trace_async_note(&d->ends, &v->f)) < 0)
		return r;
	if (d->buf.len > DEFER_MAX) { /* too many: written at once, as XProf writes them */
		write_event(tl->o, tl, TF_ASYNC, v);
		return 0;
	}
	if ((r = xprofs_grow(&d->items, &d->cap, d->n, sizeof(*d->items), 256)) < 0)
		return r;
	it = &d->items[d->n++];
	it->f = v->f;
	it->off = at;
	write_event(&d->buf, tl, TF_ASYNC, v);
	it->async_len = d->buf.len - at;
	write_event(&d->buf, tl, TF_X, v);
	it->x_len = d->buf.len - at - it->async_len;
	return d->buf.r;
}

/* Write the plane's held-back events: "b"/"e" when paired, else "X". */
static int defer_flush(struct trace_defer *d, struct xs_out *o)
{
	int r;

	for (size_t i = 0; i < d->n; i++) {
		const struct defer_item *it = &d->items[i];

		if (trace_async_paired(&d->ends, &it->f))
			xs_out_add(o, d->buf.buf + it->off, it->async_len);
		else
			xs_out_add(o, d->buf.buf + it->off + it->async_len, it->x_len);
		if ((r = xs_out_flush(o, false)) < 0)
			return r;
	}
	d->n = 0;
	d->buf.len = 0;
	trace_async_reset(&d->ends);
	return 0;
}

/*
 * The threadpool regions (regions.c) that come before an event at @ts of
 * duration @dur (@all: every one left): complete events named
 * "ThreadpoolListener::Region", each ending its flow, no args.
 */
static int regions_before(struct xs_rctx *rc, struct trace_line *tl, bool all, xs_ps128 ts,
			  int64_t dur)
{
	static const char name[] = "\"" TRACE_REGION_NAME "\"";
	const struct trace_region *g;

	while ((g = trace_regions_next(tl->regions, all, ts, dur))) {
		struct trace_acc a = {0};
		struct trace_ev v = {.name = name, .name_len = sizeof(name) - 1, .ts = g->b};

		if (tl->kind == TL_THREAD && !tl->named)
			thread_meta(tl);
		trace_region_acc(rc->x, &rc->x->planes[tl->l->plane], g, &a);
		v.raw_dur = g->e - g->b;
		v.dur = v.raw_dur > 0 ? v.raw_dur : 1;
		v.a = &a;
		v.f = trace_xflow_decode(a.flow);
		tl->ev->len = 0;
		write_event(tl->o, tl, TF_X, &v);
	}
	return xs_out_flush(tl->o, false);
}

/* Whether a level-of-detail trace shows event @e of @tl's line: 1 yes, 0 no, or -errno. */
static int lod_keep(struct xs_rctx *rc, struct trace_line *tl, const struct xs_event *e,
		    const struct xs_evmd *m, const struct trace_md *t)
{
	xs_ps128 ts = tl->base_ps + (e->has_num ? 0 : e->offset_ps);
	struct trace_xflow f;
	int r;

	if (tl->kind == TL_COUNTERS)
		return trace_lod_counter(tl->lod, m->name, m->name_len, ts);
	if ((r = trace_event_flow(rc, e, t, &rc->x->planes[tl->l->plane], &f)) < 0)
		return r;
	return trace_lod_event(tl->lod, &tl->row, ts, e->duration_ps > 0 ? e->duration_ps : 1,
			       f.dir != XFLOW_NONE ? &f : NULL);
}

/* A xs_event_fn writing one event of a line (arg: struct trace_line). */
static int trace_event(struct xs_rctx *rc, const struct xs_event *e, struct xs_evmd *m, void *arg)
{
	struct trace_line *tl = arg;
	const struct trace_md *t = trace_md(m);
	struct trace_acc a = {0};
	struct trace_ev v;
	enum trace_form form = TF_X;
	int r;

	if (tl->derive) {
		xs_ps128 start = tl->base_ps + e->offset_ps;
		struct trace_derived_in in;

		if ((r = trace_derive_read(tl->derive, rc, e, start, &in)) < 0 ||
		    (r = trace_derive_event(tl->derive, &in)) < 0)
			return r;
		if (tl->win && !(start < tl->to &&
				 start + (e->duration_ps > 0 ? e->duration_ps : 1) > tl->from))
			return 0; /* the slice's rule (render.c win_test) */
	}
	if (tl->regions &&
	    (r = regions_before(rc, tl, false, tl->base_ps + (e->has_num ? 0 : e->offset_ps),
				e->duration_ps)) < 0)
		return r;
	if (tl->kind == TL_THREAD && !tl->named)
		thread_meta(tl);
	if (t && t->internal)
		return 0;
	if (tl->lod->on && (r = lod_keep(rc, tl, e, m, t)) <= 0)
		return r;
	/* metadata stats first, then the event's: the event's special stats win */
	tl->ev->len = 0;
	a.o = tl->ev;
	a.first = true;
	if (t) {
		a.flow = t->flow, a.has_flow = t->has_flow;
		a.group = t->group, a.has_group = t->has_group;
		a.is_async = t->is_async;
	}
	if (e->has_stats &&
	    (r = xs_walk_stats(rc, &rc->ev, e->stats_off, e->off + e->len - e->stats_off,
			       XEVENT_F_STATS, trace_stat, &a)) < 0)
		return r;
	xs_trace_xflows(rc->x, &rc->x->planes[tl->l->plane], &a);
	if ((r = tl->ev->r) < 0)
		return r;
	v.name = m->name_json;
	v.name_len = m->name_json_len;
	if (a.has_step) {
		v.name = tl->ev->buf + a.step_off;
		v.name_len = a.step_len;
	} else if (t && t->step_len) {
		v.name = t->args + t->step_off;
		v.name_len = t->step_len;
	}
	v.ts = tl->base_ps + (e->has_num ? 0 : e->offset_ps);
	v.raw_dur = e->duration_ps;
	v.dur = e->duration_ps > 0 ? e->duration_ps : 1; /* never an instant: 1 ps */
	v.t = t;
	v.a = &a;
	v.f = trace_xflow_decode(a.flow);
	if (tl->kind == TL_COUNTERS)
		form = TF_COUNTER;
	else if (a.has_flow && a.is_async && v.f.dir != XFLOW_NONE)
		form = TF_ASYNC;
	if (form == TF_ASYNC && v.f.dir != XFLOW_INOUT) {
		if ((r = defer_event(tl, &v)) < 0)
			return r;
	} else {
		write_event(tl->o, tl, form, &v);
	}
	return xs_out_flush(tl->o, false);
}

/*
 * A trace_derived_emit_fn: one derived event as a complete event on its own
 * thread, named like any event (display name, the full name in long_name).
 */
static int derived_event(void *arg, const struct trace_derived_ev *e)
{
	struct trace_line *tl = arg;
	struct xs_out *o = tl->o;
	char ids[48];
	size_t n = ids_fmt(ids, tl->pid, e->tid);

	if (!tl->derived_named[e->kind]) {
		OUT_LIT(o, ",\n{\"ph\":\"M\",\"name\":\"thread_name\"");
		xs_out_add(o, ids, n);
		OUT_LIT(o, ",\"args\":{\"name\":");
		xs_out_str(o, e->line_name, e->line_name_len);
		OUT_LIT(o, "}},\n{\"ph\":\"M\",\"name\":\"thread_sort_index\"");
		xs_out_add(o, ids, n);
		OUT_LIT(o, ",\"args\":{\"sort_index\":");
		xs_out_u64(o, e->tid);
		OUT_LIT(o, "}}");
		tl->derived_named[e->kind] = true;
	}
	OUT_LIT(o, ",\n{\"ph\":\"X\"");
	xs_out_add(o, ids, n);
	OUT_LIT(o, ",\"ts\":");
	trace_out_ps(o, e->begin);
	OUT_LIT(o, ",\"dur\":");
	out_dur(o, e->begin,
		e->end <= e->begin              ? 1
		: e->end - e->begin > INT64_MAX ? INT64_MAX
						: (int64_t)(e->end - e->begin));
	OUT_LIT(o, ",\"name\":");
	if (e->disp_len)
		xs_out_str(o, e->disp, e->disp_len);
	else
		xs_out_str(o, e->name, e->name_len);
	OUT_LIT(o, ",\"args\":{");
	if (e->has_group) {
		OUT_LIT(o, "\"group_id\":");
		xs_out_i64(o, e->group);
	}
	if (e->disp_len) {
		if (e->has_group)
			OUT_LIT(o, ",");
		OUT_LIT(o, "\"long_name\":");
		xs_out_str(o, e->name, e->name_len);
	}
	if (e->args_len) {
		if (e->has_group || e->disp_len)
			OUT_LIT(o, ",");
		xs_out_add(o, e->args, e->args_len);
	}
	OUT_LIT(o, "}}");
	return xs_out_flush(o, false);
}

/*
 * The events of line @li of process @pid, with the lines derived from it and
 * its threadpool regions (@g: NULL when its plane has none).
 */
static int trace_line(struct xs_rctx *rc, struct xs_out *o, struct xs_out *ev,
		      struct trace_defer *d, struct trace_lod *lod, uint32_t pid, size_t li,
		      struct trace_regions *g)
{
	struct trace_line tl = {0};
	int r;

	tl.lod = lod;
	tl.o = o;
	tl.ev = ev;
	tl.defer = d;
	tl.l = &rc->x->lines[li];
	tl.kind = trace_line_kind(tl.l);
	if (tl.kind == TL_SKIP)
		return 0;
	tl.pid = pid;
	tl.tid = trace_tid(tl.l);
	tl.base_ps = (xs_ps128)tl.l->timestamp_ns * 1000;
	tl.ids_len = ids_fmt(tl.ids, pid, tl.tid);
	if (g && tl.kind == TL_THREAD) {
		if ((r = trace_regions_collect(rc, li, g)) < 0)
			return r;
		tl.regions = g->n ? g : NULL;
	}
	if (tl.kind == TL_THREAD && (r = trace_derive_new(rc, &rc->x->planes[tl.l->plane], tl.l,
							  derived_event, &tl, &tl.derive)) < 0)
		return r;
	if (!tl.derive) {
		r = xs_line_each(rc, li, NULL, trace_event, &tl);
		return r == 0 && tl.regions ? regions_before(rc, &tl, true, 0, 0) : r;
	}
	/* derived events are built from the whole line: a slice walks it all, filtering here */
	tl.win = rc->win;
	tl.from = rc->win_from;
	tl.to = rc->win_to;
	if (tl.win)
		trace_derive_window(tl.derive, tl.from, tl.to);
	rc->win = false;
	r = xs_line_each(rc, li, NULL, trace_event, &tl);
	rc->win = tl.win;
	if (r == 0 && tl.regions)
		r = regions_before(rc, &tl, true, 0, 0);
	if (r == 0)
		r = trace_derive_finish(tl.derive);
	trace_derive_free(tl.derive);
	if (r == 0)
		r = xs_out_flush(o, false);
	return r;
}

/* The process metadata of plane @p as process @pid. */
static void process_meta(struct xs_rctx *rc, struct xs_out *o, const struct xs_plane *p,
			 uint32_t pid)
{
	OUT_LIT(o, ",\n{\"ph\":\"M\",\"name\":\"process_name\"");
	out_pid(o, pid);
	OUT_LIT(o, ",\"args\":{\"name\":");
	if (rc->host && *rc->host) {
		/* "<host> <plane name>" (ConvertXPlaneToTraceEventsContainer) */
		struct xprofs_buf b;

		xprofs_buf_init(&b, strlen(rc->host) + 1 + p->name_len + 1);
		if (xprofs_buf_adds(&b, rc->host) < 0 || xprofs_buf_adds(&b, " ") < 0 ||
		    xprofs_buf_add(&b, p->name, p->name_len) < 0)
			o->r = o->r ? o->r : -ENOMEM;
		else
			xs_out_str(o, b.data, b.len);
		xprofs_buf_deinit(&b);
	} else {
		xs_out_str(o, p->name, p->name_len);
	}
	OUT_LIT(o, "}},\n{\"ph\":\"M\",\"name\":\"process_sort_index\"");
	out_pid(o, pid);
	OUT_LIT(o, ",\"args\":{\"sort_index\":");
	xs_out_u64(o, pid);
	OUT_LIT(o, "}}");
}

int trace_view_trace(struct xs_rctx *rc, struct xs_out *o)
{
	struct xprofs_xspace *x = rc->x;
	struct trace_plane *tp = NULL;
	struct trace_defer d = {0};
	struct trace_regions g = {0};
	struct trace_lod lod;
	struct xs_out ev;
	size_t n = 0;
	int r;

	rc->md_ext = &trace_md_ext;
	trace_lod_init(&lod, rc);
	xs_out_init(&ev, NULL);
	xs_out_init(&d.buf, NULL);
	if ((r = trace_planes(x, &tp, &n)) < 0 || (r = trace_lod_setup(rc)) < 0)
		goto out;
	trace_lod_init(&lod, rc);
	/* displayTimeUnit first: Perfetto only looks for it near the start */
	OUT_LIT(o, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"xprofs\"},"
		   "\"traceEvents\":[\n{\"ph\":\"M\",\"pid\":0,\"name\":\"process_name\","
		   "\"args\":{\"name\":\"xprofs\"}}");
	for (size_t i = 0; i < n; i++) {
		const struct xs_plane *p = &x->planes[tp[i].plane];

		/* the plane's own derived lines (Steps, TPU lines): named once each by kind */
		struct trace_line plane = {.o = o, .pid = tp[i].pid};
		bool regions;

		process_meta(rc, o, p, tp[i].pid);
		trace_lod_plane(&lod);
		if ((r = trace_regions_plane(rc, tp[i].plane, &regions)) < 0)
			goto out;
		for (size_t j = 0; j < p->n_lines; j++)
			if ((r = trace_line(rc, o, &ev, &d, &lod, tp[i].pid, p->first_line + j,
					    regions ? &g : NULL)) < 0)
				goto out;
		if ((r = trace_derive_tpu(rc, tp[i].plane, derived_event, NULL, &plane)) < 0)
			goto out;
		if ((r = defer_flush(&d, o)) < 0)
			goto out;
	}
	OUT_LIT(o, "\n]}\n");
out:
	trace_regions_free(&g);
	free(tp);
	trace_lod_deinit(&lod);
	free(d.items);
	trace_async_deinit(&d.ends);
	xs_out_deinit(&d.buf);
	xs_out_deinit(&ev);
	return r;
}
