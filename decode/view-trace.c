/*
 * view-trace.c - trace.json: the whole profile as Chrome trace-event JSON
 * (the format Perfetto and chrome://tracing read).
 *
 * Design: one process per plane (pid = plane index + 1), one thread per
 * line (tid = line index + 1, named by its display name); "X" events, "i"
 * for zero durations and aggregated events, "C" counters on "_counters_"
 * lines. Times are exact decimal microseconds, so nested events keep
 * nesting. displayTimeUnit comes first: Perfetto only looks for it near the
 * start. Limits: none of its own; the output streams to the sink.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render-internal.h"

static void trace_meta(struct dec_out *o, const char *what, uint64_t pid, uint64_t tid, bool thread)
{
	OUT_LIT(o, ",\n{\"ph\":\"M\",\"pid\":");
	dec_out_u64(o, pid);
	if (thread) {
		OUT_LIT(o, ",\"tid\":");
		dec_out_u64(o, tid);
	}
	OUT_LIT(o, ",\"name\":\"");
	dec_out_add(o, what, strlen(what));
	OUT_LIT(o, "\",\"args\":{");
}

/* One track of the trace: its per-event prefixes ("X", "i", "C") with pid and tid. */
struct trace_line {
	struct dec_out *o;
	bool counters; /* a "_counters_" line: "C" events */
	char pre[3][96];
	int prelen[3];
};

/* A dec_event_fn writing one trace event (arg: struct trace_line). */
static int trace_event(struct dec_rctx *rc, const struct dec_event *e, struct dec_evmd *m,
		       void *arg)
{
	struct trace_line *tl = arg;
	struct dec_out *o = tl->o;
	int k = tl->counters ? 2 : (e->duration_ps == 0 || e->has_num) ? 1 : 0;
	bool first = true;
	int r;

	dec_out_add(o, tl->pre[k], (size_t)tl->prelen[k]);
	dec_out_us(o, e->start_ps);
	if (!tl->counters && e->duration_ps != 0 && !e->has_num) {
		OUT_LIT(o, ",\"dur\":");
		dec_out_us(o, e->duration_ps);
	}
	OUT_LIT(o, ",\"name\":");
	dec_out_add(o, m->name_json, m->name_json_len);
	OUT_LIT(o, ",\"args\":{");
	if ((r = dec_event_stats(rc, m, e, o, &first)) < 0)
		return r;
	if (!tl->counters && m->has_display) {
		OUT_RAW(o, first ? "\"long_name\":" : ",\"long_name\":");
		dec_out_add(o, m->full_json, m->full_json_len);
		first = false;
	}
	if (e->has_num) {
		OUT_RAW(o, first ? "\"num_occurrences\":" : ",\"num_occurrences\":");
		dec_out_i64(o, e->num);
		if (e->duration_ps) {
			OUT_LIT(o, ",\"duration_ps\":");
			dec_out_i64(o, e->duration_ps);
		}
	}
	OUT_LIT(o, "}}");
	return dec_out_flush(o, false);
}

/* The thread metadata and the events of line @li, the @j-th of process @pid. */
static int trace_line(struct dec_rctx *rc, struct dec_out *o, uint64_t pid, size_t j, size_t li)
{
	const struct dec_line *l = &rc->x->lines[li];
	uint64_t tid = j + 1;
	struct trace_line tl;

	tl.o = o;
	tl.counters = dec_str_eq(l->name, l->name_len, "_counters_");
	trace_meta(o, "thread_name", pid, tid, true);
	OUT_LIT(o, "\"name\":");
	dec_out_line_name(o, l);
	OUT_LIT(o, "}}");
	trace_meta(o, "thread_sort_index", pid, tid, true);
	OUT_LIT(o, "\"sort_index\":");
	dec_out_u64(o, tid);
	OUT_LIT(o, "}}");
	tl.prelen[0] = snprintf(tl.pre[0], sizeof(tl.pre[0]),
				",\n{\"ph\":\"X\",\"pid\":%zu,\"tid\":%zu,\"ts\":", (size_t)pid,
				(size_t)tid);
	tl.prelen[1] = snprintf(tl.pre[1], sizeof(tl.pre[1]),
				",\n{\"ph\":\"i\",\"s\":\"t\",\"pid\":%zu,\"tid\":%zu,\"ts\":",
				(size_t)pid, (size_t)tid);
	tl.prelen[2] = snprintf(tl.pre[2], sizeof(tl.pre[2]),
				",\n{\"ph\":\"C\",\"pid\":%zu,\"tid\":%zu,\"ts\":", (size_t)pid,
				(size_t)tid);
	return dec_line_each(rc, li, NULL, trace_event, &tl);
}

int dec_view_trace(struct dec_rctx *rc, struct dec_out *o)
{
	struct xprofs_xspace *x = rc->x;
	int r;

	/* displayTimeUnit first: Perfetto only looks for it near the start */
	OUT_LIT(o, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"xprofs\"},"
		   "\"traceEvents\":[\n{\"ph\":\"M\",\"pid\":0,\"name\":\"process_name\","
		   "\"args\":{\"name\":\"xprofs\"}}");
	for (size_t pi = 0; pi < x->n_planes; pi++) {
		const struct dec_plane *p = &x->planes[pi];
		uint64_t pid = pi + 1;

		trace_meta(o, "process_name", pid, 0, false);
		OUT_LIT(o, "\"name\":");
		dec_out_str(o, p->name, p->name_len);
		OUT_LIT(o, "}}");
		trace_meta(o, "process_sort_index", pid, 0, false);
		OUT_LIT(o, "\"sort_index\":");
		dec_out_u64(o, pid);
		OUT_LIT(o, "}}");
		for (size_t j = 0; j < p->n_lines; j++)
			if ((r = trace_line(rc, o, pid, j, p->first_line + j)) < 0)
				return r;
	}
	OUT_LIT(o, "\n]}\n");
	return 0;
}
