/*
 * host-tfops.c - how many framework ops a host plane ran, as XProf counts
 * them for the overview's host_tf_op_percent: the occurrences of the host
 * op metrics database of ConvertHostThreadsXPlaneToOpMetricsDb()
 * (xprof/convert/xplane_to_op_metrics_db.cc).
 *
 * XProf admits an event of a line that is not derived (IsDerivedThreadId())
 * as one activity when its name parses (TSL ParseTfOpFullname()) to a known
 * category (CollectTfOpsFromHostThreadsXPlane(): user TraceMes are
 * "unknown" and not counted), and as one more when it has a non-empty
 * "tf_op" stat (CollectTfActivities()), on the event or its metadata. An
 * event with an input_pipeline_stage_id is keyed by stage there; xprofs
 * counts it by its name like the rest (docs/stats.md).
 *
 * Cost: one walk of the plane's events, reading the stats of those that
 * have any; nothing kept per event.
 */
#include <errno.h>
#include <string.h>

#include "stats-internal.h"

static int tf_event(struct xs_rctx *rc, const struct xs_event *e, struct xs_evmd *md, void *arg)
{
	uint64_t *n = arg;
	struct xs_opstats os = {.borrow = true, .want_tf_op = true};
	struct xs_tfop t;
	const char *tf;
	int r = 0;

	xs_tfop_parse(md->name, md->name_len, &t);
	if (t.cat != XS_TFOP_UNKNOWN)
		++*n;
	if (e->has_stats)
		r = xs_walk_stats(rc, &rc->ev, e->stats_off, e->off + e->len - e->stats_off,
				  XEVENT_F_STATS, xs_collect_stat, &os);
	tf = os.tf_op ? os.tf_op : md->tf_op;
	if (r == 0 && tf && *tf)
		++*n;
	xs_opstats_clear(&os);
	return r;
}

int stats_host_tf_ops(struct xs_rctx *rc, size_t pi, uint64_t *out)
{
	const struct xs_plane *p = &rc->x->planes[pi];
	int r = 0;

	*out = 0;
	for (size_t j = p->first_line; j < p->first_line + p->n_lines && r == 0; j++)
		if (!xs_derived_tid(rc->x->lines[j].id))
			r = xs_line_each(rc, j, NULL, tf_event, out);
	return r;
}
