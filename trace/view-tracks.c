/*
 * view-tracks.c - the tracks: one per (plane, line), their file names and
 * planes/<plane>/<line>.json, every event of that line with its name, times
 * and stats.
 *
 * Design: the track names come from the index (xspace.c assigns them); a
 * track render streams one line once. Limits: those of the line walk and
 * the stats (xprofs/xspace.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trace-internal.h"

/* track_state: what track_event() needs between events. */
struct track_state {
	struct dec_out *o;
	bool first_ev;
};

/* A dec_event_fn writing one event of the track. */
static int track_event(struct dec_rctx *rc, const struct dec_event *e, struct dec_evmd *m,
		       void *arg)
{
	struct track_state *ts = arg;
	struct dec_out *o = ts->o;
	bool first = true;
	int r;

	OUT_RAW(o, ts->first_ev ? "\n{\"name\":" : ",\n{\"name\":");
	ts->first_ev = false;
	dec_out_add(o, m->name_json, m->name_json_len);
	OUT_LIT(o, ",\"full_name\":");
	dec_out_add(o, m->full_json, m->full_json_len);
	dec_out_key_i64(o, ",\"metadata_id\":", e->md);
	if (e->has_num)
		dec_out_key_i64(o, ",\"num_occurrences\":", e->num);
	else
		dec_out_key_i64(o, ",\"start_ps\":", e->start_ps);
	dec_out_key_i64(o, ",\"duration_ps\":", e->duration_ps);
	OUT_LIT(o, ",\"stats\":{");
	if ((r = dec_event_stats(rc, m, e, o, &first)) < 0)
		return r;
	OUT_LIT(o, "}}");
	return dec_out_flush(o, false);
}

int dec_view_track(struct dec_rctx *rc, size_t li, struct dec_out *o)
{
	const struct dec_line *l = &rc->x->lines[li];
	const struct dec_plane *p = &rc->x->planes[l->plane];
	struct track_state ts = {o, true};
	int r;

	OUT_LIT(o, "{\"plane\":");
	dec_out_str(o, p->name, p->name_len);
	OUT_LIT(o, ",\"line\":");
	dec_out_str(o, l->name, l->name_len);
	dec_out_key_i64(o, ",\"id\":", l->id);
	dec_out_key_i64(o, ",\"display_id\":", l->display_id ? l->display_id : l->id);
	OUT_LIT(o, ",\"display_name\":");
	dec_out_line_name(o, l);
	dec_out_key_i64(o, ",\"timestamp_ns\":", l->timestamp_ns);
	dec_out_key_i64(o, ",\"duration_ps\":", l->duration_ps);
	OUT_LIT(o, ",\"events\":[");
	if ((r = dec_line_each(rc, li, NULL, track_event, &ts)) < 0)
		return r;
	OUT_LIT(o, "]}\n");
	return 0;
}
