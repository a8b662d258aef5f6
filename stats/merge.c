/*
 * merge.c - the events of several lines merged by start time, and their union
 * as disjoint intervals: device busy time in which concurrent streams count
 * once (XProf's step breakdown unions device activity, event_span.cc
 * ToNonOverlappedEvents()). steps.c sweeps a merge for the step breakdown;
 * steps.c and busy.c take unions.
 *
 * Design: a k-way merge, one small cursor per line and a min-heap by start
 * time. Lines are in time order after XProf's SortXSpace(); a line the index
 * marks unsorted is merged as it comes, so its out-of-order events can count
 * twice. Limits: at most STATS_MERGE_MAX lines at once (callers merge more in
 * groups); 16 KiB to 1 MiB read-ahead per line, 2 MiB in all: the lines'
 * windows are read by turns, and windows that stay in the core's cache
 * between pread()'s copy and the read cost less than larger ones.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stats-internal.h"

#define MERGE_WIN ((size_t)16 << 10)      /* least read-ahead of each line's cursor */
#define MERGE_WIN_MAX ((size_t)1 << 20)   /* most (WIRE_WIN_SIZE) */
#define MERGE_WIN_TOTAL ((size_t)2 << 20) /* all cursors' read-ahead together */

void stats_merge_sift(struct stats_merge *m, size_t i)
{
	struct stats_mkey *h = m->heap, t = h[i];

	/* the element sinks as a hole: the swaps of a plain sift, the same order */
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, k = i;
		int64_t ks = t.start;

		if (l < m->nheap && h[l].start < ks)
			k = l, ks = h[l].start;
		if (r < m->nheap && h[r].start < ks)
			k = r;
		if (k == i)
			break;
		h[i] = h[k];
		i = k;
	}
	h[i] = t;
}

/* stats_merge_next() - advance line @k to its next positioned event: 1, 0 at its end, -errno. */
int stats_merge_next(struct stats_mline *ml)
{
	int r;

	while ((r = xs_line_next(&ml->it, &ml->e)) > 0) {
		ml->nth = ml->next++;
		if (!ml->e.has_num) /* num_occurrences events have no place in time */
			return 1;
	}
	return r;
}

void stats_merge_free(struct stats_merge *m)
{
	for (size_t i = 0; i < m->n; i++)
		wire_cur_deinit(&m->ml[i].rc.ev);
	free(m->ml);
	free(m->heap);
	memset(m, 0, sizeof(*m));
}

int stats_merge_open(struct xs_rctx *rc, const size_t *li, size_t n, uint8_t *const *cls,
		     struct stats_merge *m)
{
	return stats_merge_open_at(rc, li, n, cls, false, 0, m);
}

int stats_merge_open_at(struct xs_rctx *rc, const size_t *li, size_t n, uint8_t *const *cls,
			bool seek, int64_t from, struct stats_merge *m)
{
	int r;

	memset(m, 0, sizeof(*m));
	m->ml = calloc(n ? n : 1, sizeof(*m->ml));
	m->heap = calloc(n ? n : 1, sizeof(*m->heap));
	if (!m->ml || !m->heap)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct stats_mline *ml = &m->ml[m->n++];
		const struct xs_line *l = &rc->x->lines[li[i]];

		ml->rc.x = rc->x;
		ml->dev = xs_plane_is_device(&rc->x->planes[l->plane]);
		ml->cls = cls ? cls[l->plane] : NULL;
		ml->evx = &rc->x->planes[l->plane].ev;
		wire_cur_init(&ml->rc.ev, rc->x->r, rc->err);
		/* few lines: bigger windows, fewer reads; many: 16 MiB in all */
		ml->rc.ev.win_pref = MERGE_WIN_TOTAL / n < MERGE_WIN       ? MERGE_WIN
				     : MERGE_WIN_TOTAL / n > MERGE_WIN_MAX ? MERGE_WIN_MAX
									   : MERGE_WIN_TOTAL / n;
		ml->it.rc = &ml->rc;
		ml->it.l = l;
		ml->it.end = l->msg.off + l->msg.len;
		ml->it.base_ps = xs_line_base_ps(l->timestamp_ns);
		ml->rc.ev.pos = seek ? xs_line_seek_nth(l, from, &ml->next) : l->msg.off;
		ml->hcur = SIZE_MAX;
		ml->rc.ev.end = ml->it.end;
		if ((r = stats_merge_next(ml)) < 0)
			return r;
		if (r > 0)
			m->heap[m->nheap++] = (struct stats_mkey){ml->e.start_ps, m->n - 1};
	}
	for (size_t i = m->nheap; i-- > 0;)
		stats_merge_sift(m, i);
	return 0;
}

/* stats_merge_pop() - the first line in @m to its next event, the heap restored. */
int stats_merge_pop(struct stats_merge *m)
{
	struct stats_mline *ml = stats_merge_top(m);
	int r = stats_merge_next(ml);

	if (r < 0)
		return r;
	if (r == 0)
		m->heap[0] = m->heap[--m->nheap];
	else
		m->heap[0].start = ml->e.start_ps;
	stats_merge_sift(m, 0);
	return 0;
}

void stats_union_add(struct stats_union *u, int64_t s, int64_t t)
{
	if (u->open && s > u->ce) {
		u->b.busy = xs_sat_add(u->b.busy, u->ce - u->cs);
		u->open = false;
	}
	if (!u->open) {
		stats_busy_widen(&u->b, s, t);
		u->cs = s, u->ce = t, u->open = true;
	} else if (t > u->ce) {
		u->ce = t;
	}
	if (t > u->b.last)
		u->b.last = t;
}

void stats_union_close(struct stats_union *u)
{
	if (u->open)
		u->b.busy = xs_sat_add(u->b.busy, u->ce - u->cs);
	u->open = false;
}

int stats_merge_union(struct xs_rctx *rc, const size_t *li, size_t n, struct stats_busy *b)
{
	struct stats_merge m;
	struct stats_union u = {0};
	int r;

	if ((r = stats_merge_open(rc, li, n, NULL, &m)) < 0)
		goto out;
	while (m.nheap) {
		struct stats_mline *ml = stats_merge_top(&m);
		int64_t s = ml->e.start_ps;

		stats_union_add(&u, s, ml->e.end_ps > s ? ml->e.end_ps : s);
		if ((r = stats_merge_pop(&m)) < 0)
			goto out;
	}
	stats_union_close(&u);
	*b = u.b;
	r = 0;
out:
	stats_merge_free(&m);
	return r;
}
