/*
 * view-ops.c - ops.json: per plane, every op with its count, total, self,
 * min/mean/max time and flops / bytes accessed, sorted by self time, and the
 * rollups by category and by program (docs/stats.md).
 *
 * Design: the planes' op tables (stats_ops_plane(), ops.c) are computed first,
 * on several threads when the profile allows, then written in plane order
 * with ops-json.c's writers. Limits: those of the op table (OPS_MAX ops per
 * plane); all planes' tables are held until written.
 */
#include <errno.h>
#include <stdlib.h>

#include "stats-internal.h"

/*
 * unattributed_write() - ,"unattributed":{...}: the GPU kernels XProf's op table leaves
 * out (ConvertDeviceTraceXPlaneToOpMetricsDb()), by kernel name, with an op's fields
 * (share: of the plane's self_ps, the table XProf shows).
 */
static int unattributed_write(struct stats_ops *d, struct xs_out *o)
{
	size_t *idx = stats_opmap_sorted(&d->un);
	int r;

	if (!idx)
		return -ENOMEM;
	OUT_LIT(o, ",\"unattributed\":{\"events\":");
	xs_out_u64(o, d->un_events);
	xs_out_key_i64(o, ",\"total_ps\":", d->un_total);
	OUT_LIT(o, ",\"ops\":[");
	r = stats_ops_rows_write(o, &d->un, idx, &d->f, d->self);
	free(idx);
	OUT_LIT(o, "]}");
	return r;
}

static int ops_plane_write(struct xs_rctx *rc, size_t pi, struct stats_ops *d, struct xs_out *o)
{
	const struct xs_plane *p = &rc->x->planes[pi];
	size_t *idx = stats_ops_sorted(d);
	int r;

	if (!idx)
		return -ENOMEM;
	xs_out_str(o, p->name, p->name_len);
	OUT_LIT(o, ",\"file\":");
	xs_out_cstr(o, p->file);
	OUT_RAW(o, xs_plane_is_device(p) ? ",\"kind\":\"device\"" : ",\"kind\":\"host\"");
	r = stats_ops_table_write(o, &d->m, idx, d->events, d->total, d->self, &d->f);
	free(idx);
	if (r < 0)
		return r;
	if (d->gpu && (r = unattributed_write(d, o)) < 0)
		return r;
	OUT_LIT(o, "}");
	return xs_out_flush(o, false);
}

/* One plane of ops.json, computed by xs_tasks_run(). */
struct ops_slot {
	struct stats_ops d;
	int r;
};

/* The tasks of ops.json: one per plane, the cut plane's in two (struct stats_ops_cut). */
struct ops_tasks {
	struct ops_slot *slot; /* one per task: per plane, then the cut's second part */
	struct stats_ops_cut cut;
};

/* A xs_task_fn: op-table task @q (stats_ops_task()) into slot @q. */
static int ops_task(struct xs_rctx *rc, size_t q, void *arg)
{
	struct ops_tasks *t = arg;

	return t->slot[q].r = stats_ops_task(rc, &t->cut, q, false, NULL, &t->slot[q].d);
}

/* A xs_task_cost_fn: the events a task reads. */
static uint64_t ops_cost(const struct xprofs_xspace *x, size_t q, void *arg)
{
	return stats_ops_task_cost(x, &((const struct ops_tasks *)arg)->cut, q);
}

/*
 * stats_view_ops() - the planes' op tables are independent: they are computed
 * first (on several threads when the profile allows, xs_tasks_run()), then
 * written in plane order; a failing plane ends the output where a plane-by-plane
 * loop would have.
 */
int stats_view_ops(struct xs_rctx *rc, struct xs_out *o)
{
	struct xprofs_xspace *x = rc->x;
	struct ops_slot *slot = calloc(x->n_planes + 1, sizeof(*slot));
	struct ops_tasks t = {.slot = slot};
	bool first_plane = true;
	int r = 0;

	if (!slot)
		return -ENOMEM;
	stats_ops_cut(x, &t.cut);
	(void)xs_tasks_run(rc, stats_ops_ntasks(x, &t.cut), ops_task, ops_cost,
			   &t); /* each slot has its result */
	if (t.cut.line) {       /* the second part's result is the plane's too */
		struct ops_slot *a = &slot[t.cut.plane], *b = &slot[x->n_planes];

		if (a->r == 0 && (a->r = b->r) == 0)
			a->r = stats_ops_join(rc, &t.cut, &a->d, &b->d);
	}
	OUT_LIT(o, "{\"planes\":[");
	for (size_t pi = 0; pi < x->n_planes; pi++) {
		struct stats_ops *d = &slot[pi].d;

		if ((r = slot[pi].r) < 0)
			goto out;
		if (d->events || d->un_events) { /* else: not an op plane, or no op events */
			OUT_RAW(o, first_plane ? "\n{\"name\":" : ",\n{\"name\":");
			first_plane = false;
			if ((r = ops_plane_write(rc, pi, d, o)) < 0)
				goto out;
		}
		stats_ops_free(d);
	}
	OUT_LIT(o, "\n]}\n");
out:
	for (size_t pi = 0; pi <= x->n_planes; pi++)
		stats_ops_free(&slot[pi].d);
	free(slot);
	return r;
}
