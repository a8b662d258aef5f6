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
 * Cost: one walk of the plane's events, reading only their tf_op stat
 * (xs_walk_stats_keys(), the key XProf's GetStatMetadataByType() gives) and
 * parsing each metadata's name once (a direct-mapped cache); nothing kept
 * per event. The walk is also a per-event function (stats_host_tf_event()),
 * so the overview counts on its op table's walk of the lines both read.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stats-internal.h"

#define TF_NAMED_BITS 10 /* names parsed once per metadata (direct-mapped) */
#define TF_NAMED ((size_t)1 << TF_NAMED_BITS)

/* One walk's state: the count, the tf_op key, and per metadata whether its name counts. */
struct tf_walk {
	uint64_t n;
	struct xs_stat_keys keys; /* tf_op (XProf's key of the name), only */
	struct {
		int64_t md; /* -1: empty */
		bool known; /* the name parses to a known category */
	} named[TF_NAMED];
};

int stats_host_tf_event(struct xs_rctx *rc, const struct xs_event *e, struct xs_evmd *md, void *arg)
{
	struct tf_walk *w = arg;
	struct xs_opstats os = {.borrow = true, .want_tf_op = true};
	size_t slot = ((uint64_t)e->md * 0x9e3779b97f4a7c15ull) >> (64 - TF_NAMED_BITS);
	const char *tf;
	int r = 0;

	if (w->named[slot].md != e->md) { /* parse a name once per metadata, not per event */
		struct xs_tfop t;

		xs_tfop_parse(md->name, md->name_len, &t);
		w->named[slot].md = e->md;
		w->named[slot].known = t.cat != XS_TFOP_UNKNOWN;
	}
	w->n += w->named[slot].known;
	if (e->has_stats)
		r = xs_walk_stats_keys(rc, &rc->ev, e->stats_off, e->off + e->len - e->stats_off,
				       XEVENT_F_STATS, &w->keys, xs_collect_stat, &os);
	tf = os.tf_op ? os.tf_op : md->tf_op;
	if (r == 0 && tf && *tf)
		w->n++;
	if (os.owned) /* borrow mode: only copies to free */
		xs_opstats_clear(&os);
	return r;
}

int stats_host_tf_new(struct xs_rctx *rc, size_t pi, struct tf_walk **out)
{
	const struct xs_plane *p = &rc->x->planes[pi];
	struct tf_walk *w = malloc(sizeof(*w));
	struct wire_cur c;
	int64_t k;

	*out = NULL;
	if (!w)
		return -ENOMEM;
	memset(w, 0, sizeof(*w));
	for (size_t i = 0; i < TF_NAMED; i++)
		w->named[i].md = -1;
	wire_cur_init(&c, rc->x->r, NULL);
	if ((k = xs_stmd_key(&c, p, "tf_op")) >= 0)
		xs_stat_keys_add(&w->keys, k);
	wire_cur_deinit(&c);
	*out = w;
	return 0;
}

uint64_t stats_host_tf_count(const struct tf_walk *w)
{
	return w->n;
}

void stats_host_tf_free(struct tf_walk *w)
{
	free(w);
}

bool stats_host_tf_line(const struct xprofs_xspace *x, size_t li)
{
	return !xs_derived_tid(x->lines[li].id);
}

int stats_host_tf_ops(struct xs_rctx *rc, size_t pi, uint64_t *out)
{
	const struct xs_plane *p = &rc->x->planes[pi];
	struct tf_walk *w;
	int r;

	*out = 0;
	if ((r = stats_host_tf_new(rc, pi, &w)) < 0)
		return r;
	for (size_t j = p->first_line; j < p->first_line + p->n_lines && r == 0; j++)
		if (stats_host_tf_line(rc->x, j))
			r = xs_line_each(rc, j, NULL, stats_host_tf_event, w);
	*out = w->n;
	stats_host_tf_free(w);
	return r;
}
