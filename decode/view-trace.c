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
 * metadata's shown stats are rendered once per render (dec_trace_md).
 * Times are exact: 128-bit picoseconds written as decimal microseconds, so
 * epoch-based line timestamps neither overflow nor lose nesting.
 * displayTimeUnit comes first: Perfetto only looks for it near the start.
 *
 * Limits: none of its own; the output streams to the sink, the scratch
 * buffer holds one event's stats (at most DEC_OUT_MAX).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render-internal.h"

/* One line being written. */
struct trace_line {
	struct dec_out *o;
	struct dec_out *ev;                /* scratch: the current event's shown stats */
	const struct dec_async_set *async; /* the plane's async ends */
	const struct dec_line *l;
	uint32_t pid, tid;
	enum dec_tline kind;
	bool named; /* its thread metadata is out */
	dec_ps128 base_ps;
	char ids[48]; /* ,"pid":P,"tid":T */
	int ids_len;
};

static void out_pid(struct dec_out *o, uint32_t pid)
{
	OUT_LIT(o, ",\"pid\":");
	dec_out_u64(o, pid);
}

/* The thread_name and thread_sort_index metadata of @tl's line. */
static void thread_meta(struct trace_line *tl)
{
	struct dec_out *o = tl->o;

	OUT_LIT(o, ",\n{\"ph\":\"M\",\"name\":\"thread_name\"");
	dec_out_add(o, tl->ids, (size_t)tl->ids_len);
	OUT_LIT(o, ",\"args\":{\"name\":");
	dec_out_line_name(o, tl->l);
	OUT_LIT(o, "}},\n{\"ph\":\"M\",\"name\":\"thread_sort_index\"");
	dec_out_add(o, tl->ids, (size_t)tl->ids_len);
	OUT_LIT(o, ",\"args\":{\"sort_index\":");
	dec_out_u64(o, tl->tid);
	OUT_LIT(o, "}}");
	tl->named = true;
}

/* ,"args":{group_id, metadata stats, event stats}} */
static void out_args(struct dec_out *o, const struct dec_trace_md *t, const struct dec_out *ev,
		     const struct dec_trace_acc *a)
{
	bool first = true;

	OUT_LIT(o, ",\"args\":{");
	if (a->has_group) {
		OUT_LIT(o, "\"group_id\":");
		dec_out_i64(o, a->group);
		first = false;
	}
	if (t && t->args_len) {
		if (!first)
			OUT_LIT(o, ",");
		dec_out_add(o, t->args, t->args_len);
		first = false;
	}
	if (ev->len) {
		if (!first)
			OUT_LIT(o, ",");
		dec_out_add(o, ev->buf, ev->len);
	}
	OUT_LIT(o, "}}");
}

/* The common head of an event: ph, pid (tid), ts, then dur (@dur >= 0: "X" events), name. */
static void out_head(struct trace_line *tl, const char *ph, bool tid, dec_ps128 ts, int64_t dur,
		     const char *name, size_t name_len)
{
	struct dec_out *o = tl->o;

	OUT_LIT(o, ",\n{\"ph\":\"");
	dec_out_add(o, ph, strlen(ph));
	OUT_LIT(o, "\"");
	if (tid)
		dec_out_add(o, tl->ids, (size_t)tl->ids_len);
	else
		out_pid(o, tl->pid);
	OUT_LIT(o, ",\"ts\":");
	dec_trace_out_ps(o, ts);
	if (dur >= 0) {
		OUT_LIT(o, ",\"dur\":");
		dec_trace_out_ps(o, dur);
	}
	OUT_LIT(o, ",\"name\":");
	dec_out_add(o, name, name_len);
}

/* An async event's "b" or "e": shared id and cat (AddAsyncEvent, JsonEventWriter). */
static void out_async(struct trace_line *tl, const char *ph, dec_ps128 ts, const char *name,
		      size_t name_len, const struct dec_xflow *f)
{
	struct dec_out *o = tl->o;

	out_head(tl, ph, true, ts, -1, name, name_len);
	OUT_LIT(o, ",\"id\":");
	dec_out_u64(o, f->id);
	OUT_LIT(o, ",\"cat\":");
	dec_out_cstr(o, dec_trace_category(f->cat));
}

/* A dec_event_fn writing one event of a line (arg: struct trace_line). */
static int trace_event(struct dec_rctx *rc, const struct dec_event *e, struct dec_evmd *m,
		       void *arg)
{
	struct trace_line *tl = arg;
	const struct dec_trace_md *t = m->trace;
	struct dec_out *o = tl->o;
	struct dec_trace_acc a = {0};
	const char *name = m->name_json;
	size_t name_len = m->name_json_len;
	dec_ps128 ts = tl->base_ps + (e->has_num ? 0 : e->offset_ps);
	int64_t dur = e->duration_ps > 0 ? e->duration_ps : 1; /* never an instant: 1 ps */
	struct dec_xflow f;
	bool async;
	int r;

	if (tl->kind == TL_THREAD && !tl->named)
		thread_meta(tl);
	if (t && t->internal)
		return 0;
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
	    (r = dec_walk_stats(rc, &rc->ev, e->stats_off, e->off + e->len - e->stats_off,
				XEVENT_F_STATS, dec_trace_stat, &a)) < 0)
		return r;
	if ((r = tl->ev->r) < 0)
		return r;
	if (a.has_step) {
		name = tl->ev->buf + a.step_off;
		name_len = a.step_len;
	} else if (t && t->step_len) {
		name = t->args + t->step_off;
		name_len = t->step_len;
	}
	f = dec_xflow_decode(a.flow);
	async = a.has_flow && a.is_async && f.dir != XFLOW_NONE && dec_async_paired(tl->async, &f);
	if (tl->kind == TL_COUNTERS) {
		out_head(tl, "C", false, ts, -1, name, name_len);
	} else if (async) {
		out_async(tl, f.dir == XFLOW_IN ? "e" : "b", ts, name, name_len, &f);
	} else {
		/* a single-ended async event without its partner is a complete event */
		out_head(tl, "X", true, ts, dur, name, name_len);
		if (a.has_flow && !a.is_async && f.dir != XFLOW_NONE) {
			const char *cat = dec_trace_category(f.cat);

			OUT_LIT(o, ",\"bind_id\":");
			dec_out_u64(o, f.id);
			if (*cat) {
				OUT_LIT(o, ",\"cat\":");
				dec_out_cstr(o, cat);
			}
			if (f.dir & XFLOW_IN)
				OUT_LIT(o, ",\"flow_in\":true");
			if (f.dir & XFLOW_OUT)
				OUT_LIT(o, ",\"flow_out\":true");
		}
	}
	out_args(o, t, tl->ev, &a);
	if (tl->kind != TL_COUNTERS && async && f.dir == XFLOW_INOUT) {
		/* an in-out async event is a whole span: its end, without args */
		out_async(tl, "e", ts + e->duration_ps, name, name_len, &f);
		OUT_LIT(o, "}");
	}
	return dec_out_flush(o, false);
}

/* A dec_event_fn noting the ends of single-ended async events (arg: struct dec_async_set). */
static int async_event(struct dec_rctx *rc, const struct dec_event *e, struct dec_evmd *m,
		       void *arg)
{
	const struct dec_trace_md *t = m->trace;
	struct dec_trace_acc a = {0};
	struct dec_xflow f;
	int r;

	if (t) {
		if (t->internal)
			return 0;
		a.flow = t->flow, a.has_flow = t->has_flow;
		a.is_async = t->is_async;
	}
	if (e->has_stats &&
	    (r = dec_walk_stats(rc, &rc->ev, e->stats_off, e->off + e->len - e->stats_off,
				XEVENT_F_STATS, dec_trace_special_stat, &a)) < 0)
		return r;
	if (!a.has_flow || !a.is_async)
		return 0;
	f = dec_xflow_decode(a.flow);
	return f.dir == XFLOW_IN || f.dir == XFLOW_OUT ? dec_async_note(arg, &f) : 0;
}

/*
 * async_pass() - fill @set with the async ends of plane @pi: one more pass
 * over its lines, only when its stat names include "_a".
 */
static int async_pass(struct dec_rctx *rc, size_t pi, struct dec_async_set *set)
{
	const struct dec_plane *p = &rc->x->planes[pi];
	bool any;
	int r;

	dec_async_reset(set);
	if ((r = dec_trace_plane_has_async(rc, pi, &any)) < 0 || !any)
		return r;
	for (size_t j = 0; j < p->n_lines; j++) {
		if (dec_trace_line_kind(&rc->x->lines[p->first_line + j]) != TL_THREAD)
			continue;
		if ((r = dec_line_each(rc, p->first_line + j, async_event, set)) < 0)
			return r;
	}
	set->active = true;
	return 0;
}

/* The events of line @li of process @pid. */
static int trace_line(struct dec_rctx *rc, struct dec_out *o, struct dec_out *ev,
		      const struct dec_async_set *set, uint32_t pid, size_t li)
{
	struct trace_line tl = {0};

	tl.o = o;
	tl.ev = ev;
	tl.async = set;
	tl.l = &rc->x->lines[li];
	tl.kind = dec_trace_line_kind(tl.l);
	if (tl.kind == TL_SKIP)
		return 0;
	tl.pid = pid;
	tl.tid = dec_trace_tid(tl.l);
	tl.base_ps = (dec_ps128)tl.l->timestamp_ns * 1000;
	tl.ids_len = snprintf(tl.ids, sizeof(tl.ids), ",\"pid\":%u,\"tid\":%u", (unsigned)pid,
			      (unsigned)tl.tid);
	return dec_line_each(rc, li, trace_event, &tl);
}

/* The process metadata of plane @p as process @pid. */
static void process_meta(struct dec_rctx *rc, struct dec_out *o, const struct dec_plane *p,
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
			dec_out_str(o, b.data, b.len);
		xprofs_buf_deinit(&b);
	} else {
		dec_out_str(o, p->name, p->name_len);
	}
	OUT_LIT(o, "}},\n{\"ph\":\"M\",\"name\":\"process_sort_index\"");
	out_pid(o, pid);
	OUT_LIT(o, ",\"args\":{\"sort_index\":");
	dec_out_u64(o, pid);
	OUT_LIT(o, "}}");
}

int dec_view_trace(struct dec_rctx *rc, struct dec_out *o)
{
	struct xprofs_xspace *x = rc->x;
	struct dec_trace_plane *tp = NULL;
	struct dec_async_set set = {0};
	struct dec_out ev;
	size_t n = 0;
	int r;

	rc->trace = true;
	dec_out_init(&ev, NULL);
	if ((r = dec_trace_planes(x, &tp, &n)) < 0)
		goto out;
	/* displayTimeUnit first: Perfetto only looks for it near the start */
	OUT_LIT(o, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"xprofs\"},"
		   "\"traceEvents\":[\n{\"ph\":\"M\",\"pid\":0,\"name\":\"process_name\","
		   "\"args\":{\"name\":\"xprofs\"}}");
	for (size_t i = 0; i < n; i++) {
		const struct dec_plane *p = &x->planes[tp[i].plane];

		if ((r = async_pass(rc, tp[i].plane, &set)) < 0)
			goto out;
		process_meta(rc, o, p, tp[i].pid);
		for (size_t j = 0; j < p->n_lines; j++)
			if ((r = trace_line(rc, o, &ev, &set, tp[i].pid, p->first_line + j)) < 0)
				goto out;
	}
	OUT_LIT(o, "\n]}\n");
out:
	free(tp);
	dec_async_deinit(&set);
	dec_out_deinit(&ev);
	return r;
}
