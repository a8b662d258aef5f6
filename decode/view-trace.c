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
#include <stdio.h>
#include <errno.h>
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
		for (size_t j = 0; j < p->n_lines; j++) {
			size_t li = p->first_line + j;
			const struct dec_line *l = &x->lines[li];
			bool counters = l->name_len == 10 && !memcmp(l->name, "_counters_", 10);
			uint64_t tid = j + 1;
			char pre[3][96]; /* per-event prefixes of this track: X, i, C */
			int prelen[3];
			struct dec_line_it it;
			struct dec_event e;
			struct dec_evmd *m;

			trace_meta(o, "thread_name", pid, tid, true);
			OUT_LIT(o, "\"name\":");
			dec_out_line_name(o, l);
			OUT_LIT(o, "}}");
			trace_meta(o, "thread_sort_index", pid, tid, true);
			OUT_LIT(o, "\"sort_index\":");
			dec_out_u64(o, tid);
			OUT_LIT(o, "}}");
			prelen[0] = snprintf(pre[0], sizeof(pre[0]),
					     ",\n{\"ph\":\"X\",\"pid\":%zu,\"tid\":%zu,\"ts\":", (size_t)pid, (size_t)tid);
			prelen[1] = snprintf(pre[1], sizeof(pre[1]),
					     ",\n{\"ph\":\"i\",\"s\":\"t\",\"pid\":%zu,\"tid\":%zu,\"ts\":",
					     (size_t)pid, (size_t)tid);
			prelen[2] = snprintf(pre[2], sizeof(pre[2]),
					     ",\n{\"ph\":\"C\",\"pid\":%zu,\"tid\":%zu,\"ts\":", (size_t)pid, (size_t)tid);
			if ((r = dec_line_begin(rc, li, &it)) < 0)
				return r;
			while ((r = dec_line_next(&it, &e)) > 0) {
				bool first = true;

				dec_md_gc(rc);
				if ((r = dec_md_event(rc, e.md, &m)) < 0)
					return r;
				int k = counters ? 2 : (e.duration_ps == 0 || e.has_num) ? 1 : 0;

				dec_out_add(o, pre[k], (size_t)prelen[k]);
				dec_out_us(o, e.start_ps);
				if (!counters && e.duration_ps != 0 && !e.has_num) {
					OUT_LIT(o, ",\"dur\":");
					dec_out_us(o, e.duration_ps);
				}
				OUT_LIT(o, ",\"name\":");
				dec_out_add(o, m->name_json, m->name_json_len);
				OUT_LIT(o, ",\"args\":{");
				if ((r = dec_event_stats(rc, m, &e, o, &first)) < 0)
					return r;
				if (!counters && m->has_display) {
					OUT_RAW(o, first ? "\"long_name\":" : ",\"long_name\":");
					dec_out_add(o, m->full_json, m->full_json_len);
					first = false;
				}
				if (e.has_num) {
					OUT_RAW(o, first ? "\"num_occurrences\":" : ",\"num_occurrences\":");
					dec_out_i64(o, e.num);
					if (e.duration_ps) {
						OUT_LIT(o, ",\"duration_ps\":");
						dec_out_i64(o, e.duration_ps);
					}
				}
				OUT_LIT(o, "}}");
				if ((r = dec_out_flush(o, false)) < 0)
					return r;
			}
			if (r < 0)
				return r;
		}
	}
	OUT_LIT(o, "\n]}\n");
	return 0;
}
