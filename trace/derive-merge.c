/*
 * derive-merge.c - a plane's events in time order, for the derivations that
 * read a whole plane (Steps, a TensorCore plane's lines): a merge over its
 * lines by start, then longer first (XProf's GetSortedEvents()); and the
 * stats of one event metadata entry of the plane.
 *
 * Design: each line has a wire cursor of its own holding its next event
 * (struct der_src); the merge takes the earliest of the lines' next events
 * by a linear scan. A slice's walk may start each line at its last
 * checkpoint (the index's) before which every event ends by a given time.
 *
 * Limits: one cursor per line with events: the caller bounds the line count
 * (DER_TPU_LINES).
 */
#include <inttypes.h>

#include "derived.h"

/* ---- the merge (GetSortedEvents()) --------------------------------------------- */

/* The next event of @s into s->ev (s->has false at the end). */
int trace_merge_step(struct der_src *s)
{
	struct xs_evhdr h;
	const uint8_t *p;
	uint64_t len;
	int r;

	s->has = false;
	if ((r = wire_next_len_field(&s->c, s->end, "XLine", XLINE_F_EVENTS, &len)) <= 0)
		return r;
	if ((r = wire_at(&s->c, s->c.pos, (size_t)len, &p)) < 0)
		return r;
	if (xs_parse_event(p, p + len, &h) < 0)
		return wire_fail(&s->c, "malformed XEvent at offset %" PRIu64, s->c.pos);
	s->ev.off = s->c.pos;
	s->ev.len = len;
	s->ev.md = h.md;
	s->ev.offset_ps = h.offset_ps;
	s->ev.duration_ps = h.duration_ps;
	s->ev.has_stats = h.has_stats;
	s->ev.stats_off = s->ev.off + h.stats_at;
	s->c.pos += len;
	s->has = true;
	return 1;
}

/*
 * A merge of a plane's lines by time: a cursor on each line of @p with
 * events, in @src (room for all of them), at its first event or, with
 * @seek, at xs_line_seek(@from); *@k counts the cursors opened (close them
 * with trace_merge_close(), also on failure).
 */
int trace_merge_open(struct xs_rctx *rc, const struct xs_plane *p, struct der_src *src, size_t *k,
		     bool seek, xs_ps128 from)
{
	int r;

	*k = 0;
	for (size_t j = 0; j < p->n_lines; j++) {
		const struct xs_line *l = &rc->x->lines[p->first_line + j];
		struct der_src *c = &src[*k];

		if (!l->msg.len)
			continue;
		wire_cur_init(&c->c, rc->x->r, rc->err);
		(*k)++;
		c->c.pos = seek ? xs_line_seek(l, from) : l->msg.off;
		c->c.end = c->end = l->msg.off + l->msg.len;
		c->base_ps = (xs_ps128)l->timestamp_ns * 1000;
		if ((r = trace_merge_step(c)) < 0)
			return r;
	}
	return 0;
}

/*
 * The cursor of @src (@n) whose next event comes first, by start then
 * longer first (GetSortedEvents()' order), with that start in *@start;
 * NULL when every line is done.
 */
struct der_src *trace_merge_next(struct der_src *src, size_t n, xs_ps128 *start)
{
	struct der_src *best = NULL;

	for (size_t i = 0; i < n; i++) {
		xs_ps128 st;

		if (!src[i].has)
			continue;
		st = src[i].base_ps + src[i].ev.offset_ps;
		if (!best || st < *start ||
		    (st == *start && src[i].ev.duration_ps > best->ev.duration_ps)) {
			best = &src[i];
			*start = st;
		}
	}
	return best;
}

void trace_merge_close(struct der_src *src, size_t k)
{
	for (size_t i = 0; i < k; i++)
		wire_cur_deinit(&src[i].c);
}

/* ---- event metadata ------------------------------------------------------ */

/*
 * @fn over the stats of the current plane's event metadata entry @k (an
 * index into its map), on the metadata cursor, which is left where it was.
 */
int trace_md_entry_stats(struct xs_rctx *rc, size_t k, xs_stat_fn fn, void *arg)
{
	const struct xs_md *e = &rc->x->planes[rc->plane].ev.md[k];
	struct wire_cur *c = &rc->md;
	uint64_t pos = c->pos, end = c->end;
	int r;

	c->pos = e->off;
	c->end = e->off + e->len;
	r = xs_walk_stats(rc, c, e->off, e->len, XEVMD_F_STATS, fn, arg);
	c->pos = pos;
	c->end = end;
	return r;
}
