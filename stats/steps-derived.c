/*
 * steps-derived.c - the step markers of a GPU plane without a step line, as
 * XProf's preprocessing derives its Steps line from group_id
 * (DeriveStepEventsFromGroups(), as trace/ shows it): over the plane's events
 * (not derived lines) in start order, consecutive events of one group_id make
 * one marker from the first start to the last end (ExpandOrAddEvent()). steps.c
 * takes them as step markers (docs/stats.md "steps.json").
 *
 * Design: stats_derived_runs() walks one plane's merge (merge.c), reading
 * only group_id (xs_walk_stats_keys()), and hands each run to a callback.
 * stats_derived_planes() runs it for several planes as xs_tasks_run() tasks,
 * each reducing its runs to what steps.c keeps of them (the longest per group,
 * the first of equals, in the order the groups first appear), so steps.c can
 * add them plane by plane as if it had walked the planes itself.
 * Limits: the first STATS_MERGE_MAX lines of a plane; @budget runs kept over
 * all planes (a plane past it is marked, and steps.c walks it itself).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "stats-internal.h"

/* What stats_derived_runs() reads of an event: group_id, as steps.c reads it. */
struct dgroup {
	const int64_t *keys; /* group_id, step_name (-1: none) */
	int64_t group;
	bool has;
};

/* A xs_stat_fn: group_id, a number (step_name's key is never group_id's: steps.c's rule). */
static int group_stat(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s, void *arg)
{
	struct dgroup *v = arg;

	(void)rc, (void)c;
	if (s->md == -1 || s->md == v->keys[1] || (s->kind != SV_U64 && s->kind != SV_I64))
		return 0;
	if (s->md == v->keys[0])
		v->group = (int64_t)s->u, v->has = true;
	return 0;
}

int stats_derived_runs(struct xs_rctx *rc, size_t q, const int64_t keys[2], bool (*stop)(void *arg),
		       stats_dmark_fn fn, void *arg)
{
	const struct xprofs_xspace *x = rc->x;
	const struct xs_plane *p = &x->planes[q];
	size_t *li = malloc(STATS_MERGE_MAX * sizeof(*li)), n = 0;
	struct stats_merge m = {0};
	struct stats_dmark run = {0};
	struct xs_stat_keys want = {0};
	bool open = false;
	int r = 0;

	if (!li)
		return -ENOMEM;
	if (keys[0] != -1)
		xs_stat_keys_add(&want, keys[0]);
	for (size_t j = p->first_line; j < p->first_line + p->n_lines && n < STATS_MERGE_MAX; j++)
		if (!xs_derived_tid(x->lines[j].id))
			li[n++] = j;
	if (!n || (r = stats_merge_open(rc, li, n, NULL, &m)) < 0)
		goto out;
	while (m.nheap && !stop(arg)) {
		struct stats_mline *ml = stats_merge_top(&m);
		struct dgroup v = {keys, 0, false};

		if (ml->e.has_stats &&
		    (r = xs_walk_stats_keys(rc, &ml->rc.ev, ml->e.stats_off,
					    ml->e.off + ml->e.len - ml->e.stats_off, XEVENT_F_STATS,
					    &want, group_stat, &v)) < 0)
			goto out;
		if (v.has && open && v.group == run.group) {
			run.e = ml->e.end_ps > run.e ? ml->e.end_ps : run.e;
		} else if (v.has) {
			if (open && (r = fn(arg, &run)) < 0)
				goto out;
			open = true;
			run.group = v.group;
			run.b = ml->e.start_ps;
			run.e = ml->e.end_ps > run.b ? ml->e.end_ps : run.b;
			run.b128 = (xprofs_ps128)ml->it.l->timestamp_ns * 1000 + ml->e.offset_ps;
		}
		if ((r = stats_merge_pop(&m)) < 0)
			goto out;
	}
	r = open ? fn(arg, &run) : 0;
out:
	stats_merge_free(&m);
	free(li);
	return r;
}

/* The tasks of one stats_derived_planes(). */
struct dtasks {
	const size_t *planes;
	const int64_t (*keys)[2];
	struct stats_dplane *out;
	atomic_size_t left; /* runs that may still be kept, over all planes */
};

/* One task's plane and the tasks' budget (stats_derived_runs()'s arg). */
struct dtask {
	struct dtasks *t;
	struct stats_dplane *d;
};

static bool group_eq(const void *ctx, uint32_t idx, const void *key)
{
	return ((const struct stats_dmark *)ctx)[idx].group == *(const int64_t *)key;
}

/* A stats_dmark_fn: the longest run per group, in first appearance (arg: struct dtask). */
static int keep_run(void *arg, const struct stats_dmark *run)
{
	struct dtask *a = arg;
	struct stats_dplane *d = a->d;
	uint64_t h = xprofs_table_hash(0, &run->group, sizeof(run->group));
	size_t left;
	uint32_t i;
	int r;

	if (xprofs_table_find(d->tab, h, group_eq, d->m, &run->group, &i) == 0) {
		if (run->e - run->b > d->m[i].e - d->m[i].b) /* StepTime(): a longer one only */
			d->m[i] = *run;
		return 0;
	}
	for (left = atomic_load(&a->t->left);;) /* take one of the budget */
		if (!left || atomic_compare_exchange_weak(&a->t->left, &left, left - 1))
			break;
	if (!left) {
		d->over = true;
		return 0;
	}
	if ((r = xprofs_grow(&d->m, &d->cap, d->n, sizeof(*d->m), 64)) < 0 ||
	    (r = xprofs_table_add(d->tab, h, (uint32_t)d->n)) < 0)
		return r;
	d->m[d->n++] = *run;
	return 0;
}

/* A xs_stop_fn: the budget ran out for this plane. */
static bool dplane_over(void *arg)
{
	const struct dtask *a = arg;

	return a->d->over;
}

static int dtask_run(struct xs_rctx *rc, size_t i, void *arg)
{
	struct dtasks *t = arg;
	struct dtask a = {t, &t->out[i]};
	int r;

	if ((r = xprofs_table_new(XPROFS_TABLE_MAX, &a.d->tab)) < 0)
		return r;
	return stats_derived_runs(rc, t->planes[i], t->keys[i], dplane_over, keep_run, &a);
}

static uint64_t dtask_cost(const struct xprofs_xspace *x, size_t i, void *arg)
{
	const struct dtasks *t = arg;

	return x->planes[t->planes[i]].events;
}

int stats_derived_planes(struct xs_rctx *rc, const size_t *planes, const int64_t (*keys)[2],
			 size_t n, size_t budget, struct stats_dplane *out)
{
	struct dtasks t = {.planes = planes, .keys = keys, .out = out};

	memset(out, 0, n * sizeof(*out));
	atomic_init(&t.left, budget);
	return xs_tasks_run(rc, n, dtask_run, dtask_cost, &t);
}

void stats_dplane_free(struct stats_dplane *d)
{
	free(d->m);
	xprofs_table_free(d->tab);
	memset(d, 0, sizeof(*d));
}
