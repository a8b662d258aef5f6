/*
 * busy.c - a device plane's busy time: the union of its op lines' events
 * (concurrent streams count once, as XProf's step breakdown unions device
 * activity) with their first start and last end, for overview.json's device
 * duty cycle and the session summary's per-host busy share.
 *
 * Design: each device plane takes the union of its op lines
 * (stats_merge_union(), merge.c). stats_steps_busy_sum() runs the steps,
 * whose pass 2 takes the unions of the planes whose op lines it merges
 * anyway (steps-sweep.c), then the planes' unions left as xs_tasks_run()
 * tasks; on TPU hosts its busy time and span are XProf's duty cycle's
 * (duty.c), as overview.json's are, so the unions are not taken there.
 * Limits: the first STATS_MERGE_MAX op lines of a plane.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stats-internal.h"

/* The tasks of one stats_steps_busy_sum(): each device plane's union the steps did not take. */
struct sb_tasks {
	struct stats_busy *busy; /* owned, per plane */
	bool *done;              /* owned, per plane: the steps took it (or TPU: not wanted) */
};

static int sb_task(struct xs_rctx *rc, size_t q, void *arg)
{
	struct sb_tasks *t = arg;

	if (!xs_plane_is_device(&rc->x->planes[q]) || t->done[q])
		return 0;
	return stats_device_busy(rc, q, &t->busy[q]);
}

static uint64_t sb_cost(const struct xprofs_xspace *x, size_t q, void *arg)
{
	const struct sb_tasks *t = arg;

	return xs_plane_is_device(&x->planes[q]) && !t->done[q] ? x->planes[q].events : 0;
}

int stats_steps_busy_sum(struct xs_rctx *rc, struct stats_step_summary *sum, int64_t *busy,
			 int64_t *span)
{
	struct xprofs_xspace *x = rc->x;
	struct sb_tasks t = {calloc(x->n_planes + 1, sizeof(*t.busy)),
			     calloc(x->n_planes + 1, sizeof(*t.done))};
	bool tpu = stats_is_tpu(x);
	int r = 0;

	memset(sum, 0, sizeof(*sum));
	*busy = *span = 0;
	if (!t.busy || !t.done) {
		r = -ENOMEM;
		goto out;
	}
	/* the steps take the unions their pass 2 merges anyway; on TPU hosts the duty
	 * cycle replaces them, so none is taken there */
	if ((r = tpu ? stats_steps_overview(rc, sum)
		     : stats_steps_overview_busy(rc, sum, t.busy, t.done, NULL)) < 0)
		goto out;
	for (size_t q = 0; tpu && q < x->n_planes; q++)
		t.done[q] = true;
	if ((r = xs_tasks_run(rc, x->n_planes, sb_task, sb_cost, &t)) < 0)
		goto out;
	for (size_t q = 0; q < x->n_planes; q++) {
		const struct stats_busy *b = &t.busy[q];

		if (!xs_plane_is_device(&x->planes[q]))
			continue;
		*busy = xs_sat_add(*busy, b->busy);
		*span = xs_sat_add(*span, b->any ? xs_sat_add(b->last, -b->first) : 0);
	}
	if (tpu) { /* overview.json's duty cycle on TPU hosts */
		struct stats_duty d;

		if ((r = stats_tpu_duty(rc, NULL, &d)) < 0)
			goto out;
		*busy = d.active;
		*span = xs_sat_add(d.active, d.idle);
	}
out:
	free(t.busy);
	free(t.done);
	return r;
}

size_t stats_busy_line(const struct xprofs_xspace *x, size_t q)
{
	size_t li[2];

	if (!xs_plane_is_device(&x->planes[q]) || stats_step_lines(x, q, li, 2) != 1)
		return SIZE_MAX;
	return li[0];
}

int stats_device_busy(struct xs_rctx *rc, size_t q, struct stats_busy *b)
{
	size_t *li = malloc(STATS_MERGE_MAX * sizeof(*li)), n;
	int r = 0;

	memset(b, 0, sizeof(*b));
	if (!li)
		return -ENOMEM;
	if ((n = stats_step_lines(rc->x, q, li, STATS_MERGE_MAX)))
		r = stats_merge_union(rc, li, n, b);
	free(li);
	return r;
}
