/*
 * view-tracks.c - the tracks: one per (plane, line), their file names and
 * planes/<plane>/<line>.json, every event of that line with its name, times
 * and stats.
 *
 * Design: the track names come from the index (xspace/open.c assigns them); a
 * track render streams one line once. Limits: those of the line walk and
 * the stats (xprofs/xspace.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trace-internal.h"

/* track_state: what track_event() needs between events. */
struct track_state {
	struct xs_out *o;
	bool first_ev;
};

/* A xs_event_fn writing one event of the track. */
static int track_event(struct xs_rctx *rc, const struct xs_event *e, struct xs_evmd *m, void *arg)
{
	struct track_state *ts = arg;
	struct xs_out *o = ts->o;
	bool first = true;
	int r;

	OUT_RAW(o, ts->first_ev ? "\n{\"name\":" : ",\n{\"name\":");
	ts->first_ev = false;
	xs_out_add(o, m->name_json, m->name_json_len);
	OUT_LIT(o, ",\"full_name\":");
	xs_out_add(o, m->full_json, m->full_json_len);
	xs_out_key_i64(o, ",\"metadata_id\":", e->md);
	if (e->has_num)
		xs_out_key_i64(o, ",\"num_occurrences\":", e->num);
	else
		xs_out_key_i64(o, ",\"start_ps\":", e->start_ps);
	xs_out_key_i64(o, ",\"duration_ps\":", e->duration_ps);
	OUT_LIT(o, ",\"stats\":{");
	if ((r = xs_event_stats(rc, m, e, o, &first)) < 0)
		return r;
	OUT_LIT(o, "}}");
	return xs_out_flush(o, false);
}

int trace_view_track(struct xs_rctx *rc, size_t li, struct xs_out *o)
{
	const struct xs_line *l = &rc->x->lines[li];
	const struct xs_plane *p = &rc->x->planes[l->plane];
	struct track_state ts = {o, true};
	int r;

	OUT_LIT(o, "{\"plane\":");
	xs_out_str(o, p->name, p->name_len);
	OUT_LIT(o, ",\"line\":");
	xs_out_str(o, l->name, l->name_len);
	xs_out_key_i64(o, ",\"id\":", l->id);
	xs_out_key_i64(o, ",\"display_id\":", l->display_id ? l->display_id : l->id);
	OUT_LIT(o, ",\"display_name\":");
	xs_out_line_name(o, l);
	xs_out_key_i64(o, ",\"timestamp_ns\":", l->timestamp_ns);
	xs_out_key_i64(o, ",\"duration_ps\":", l->duration_ps);
	OUT_LIT(o, ",\"events\":[");
	if ((r = xs_line_each(rc, li, NULL, track_event, &ts)) < 0)
		return r;
	OUT_LIT(o, "]}\n");
	return 0;
}
