/*
 * hints.c - step hints: what pass 2 of the steps (steps-sweep.c, admit())
 * reads of each event of a device op line (its group_id, and whether it has
 * a correlation_id >= 0), noted by the op tables' walk of that line, which
 * decodes the event's stats anyway. overview.json walks the op tables
 * first, then the steps, and pass 2 reads the notes instead of decoding the
 * same stats a second time.
 *
 * Design: the notes are run-length coded by event number in line order
 * (both walks read a line's events in file order; the second half of a
 * split pass 2 starts at a checkpoint, whose event number the index gives:
 * xs_line_seek_nth()). The runs are long: a stream's kernels of one step
 * come one after another. A line's notes are used only when they cover
 * every one of its events. Limits: stats_hint_runs runs in all; a line that
 * would pass them drops its own, and pass 2 decodes its stats as before.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stats-internal.h"

size_t stats_hint_runs = STATS_HINT_RUNS;
atomic_size_t stats_hint_lines;

int stats_hints_new(size_t n_lines, struct stats_hints **out)
{
	struct stats_hints *h = calloc(1, sizeof(*h));

	*out = NULL;
	if (!h || !(h->line = calloc(n_lines + 1, sizeof(*h->line)))) {
		free(h);
		return -ENOMEM;
	}
	h->n_lines = n_lines;
	atomic_init(&h->runs, 0);
	*out = h;
	return 0;
}

void stats_hints_free(struct stats_hints *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->n_lines; i++)
		free(h->line[i].r);
	free(h->line);
	free(h);
}

struct stats_hline *stats_hints_begin(struct stats_hints *h, size_t li)
{
	struct stats_hline *hl;

	if (!h || li >= h->n_lines)
		return NULL;
	hl = &h->line[li];
	free(hl->r);
	memset(hl, 0, sizeof(*hl));
	return hl;
}

void stats_hints_add(struct stats_hints *h, struct stats_hline *hl, unsigned flags, int64_t group)
{
	struct stats_hrun *u;

	if (hl->dropped) {
		hl->events++;
		return;
	}
	if (hl->n && hl->r[hl->n - 1].flags == flags && hl->r[hl->n - 1].group == group) {
		hl->events++;
		return;
	}
	if (atomic_fetch_add(&h->runs, 1) >= stats_hint_runs ||
	    xprofs_grow(&hl->r, &hl->cap, hl->n, sizeof(*hl->r), 64) < 0) {
		free(hl->r); /* this line's stats are decoded again by pass 2 */
		hl->r = NULL;
		hl->n = hl->cap = 0;
		hl->dropped = true;
		hl->events++;
		return;
	}
	u = &hl->r[hl->n++];
	u->first = hl->events++;
	u->group = group;
	u->flags = (uint8_t)flags;
}

const struct stats_hline *stats_hints_line(const struct stats_hints *h, size_t li, uint64_t events)
{
	const struct stats_hline *hl;

	if (!h || li >= h->n_lines)
		return NULL;
	hl = &h->line[li];
	if (hl->dropped || !hl->n || hl->events != events)
		return NULL;
	atomic_fetch_add(&stats_hint_lines, 1);
	return hl;
}

const struct stats_hrun *stats_hints_at(const struct stats_hline *hl, uint64_t nth, size_t *cur)
{
	size_t i = *cur;

	if (i >= hl->n || hl->r[i].first > nth) { /* the first look-up: a binary search */
		size_t lo = 0, hi = hl->n;

		while (hi - lo > 1) { /* the last run starting at or before nth */
			size_t mid = lo + (hi - lo) / 2;

			if (hl->r[mid].first <= nth)
				lo = mid;
			else
				hi = mid;
		}
		i = lo;
	}
	while (i + 1 < hl->n && hl->r[i + 1].first <= nth)
		i++;
	*cur = i;
	return &hl->r[i];
}
