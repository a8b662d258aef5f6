/*
 * pftrace-async.c - trace.pftrace's async events: an event with an
 * asynchronous flow is held back until its plane ends, paired as trace.json
 * pairs them, and written as a span on an async track of its own ("Async
 * <n>", a child of the process track), where it overlaps nothing.
 *
 * Design: a held-back event keeps its TrackEvent fields (name and args, all
 * inline: the span goes out on another sequence) in one blob. At the plane's
 * end the events are sorted by (flow id, category) key to pair them (each
 * end closes the earliest open begin of its key, as trace.json's "b"/"e"),
 * then by start to assign tracks, then by track to write them, one sequence
 * per track.
 *
 * Limits: held-back events take at most ASYNC_MAX bytes per plane (past
 * that they are slices of their line) and ASYNC_TRACKS_MAX tracks (past that
 * they are dropped and counted, trace_pf_dropped()).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pftrace.h"

#define ASYNC_MAX ((size_t)16 << 20)
#define ASYNC_UUID(n) ((UINT64_C(1) << 62) | (n))

/* The name (@v's rename or @m's) and args of an event into c->te, all inline (async). */
static void inline_body(struct trace_pf_ctx *c, const struct xs_evmd *m,
			const struct trace_pf_evinfo *v, size_t *args_at)
{
	struct pbw *te = &c->te;

	if (v->step) {
		size_t n = trace_pf_json_unescape(v->step, v->step_len, &c->name);

		pbw_str(te, F_TE_NAME, c->name.buf, n);
	} else {
		pbw_str(te, F_TE_NAME, m->name, m->name_len);
	}
	*args_at = te->len;
	if (v->a.has_group)
		trace_pf_arg_int(c->A, "group_id", 8, v->a.group, PF_INLINE, 0, te, NULL);
	if (trace_md(m) && trace_md(m)->args_len)
		trace_pf_args_encode(c->A, trace_md(m)->args, trace_md(m)->args_len, PF_INLINE, 0,
				     0, te, NULL);
	pbw_bytes(te, c->evann.buf, c->evann.len);
}

/* Hold back async event @e: 1 when held, 0 when the store is full (a line slice then). */
int trace_pf_async_hold(struct trace_pf_ctx *c, const struct xs_evmd *m,
			const struct trace_pf_evinfo *v, xs_ps128 ts, int64_t dur, int64_t raw_dur)
{
	struct trace_pf_async *it;
	uint64_t b = trace_pf_ns(ts);
	int r;

	if (c->ablob.len > ASYNC_MAX)
		return 0;
	if ((r = xprofs_grow(&c->as, &c->cap_as, c->n_as, sizeof(*c->as), 64)) < 0)
		return r;
	it = &c->as[c->n_as];
	memset(it, 0, sizeof(*it));
	it->dir = v->f.dir;
	it->key = v->f.dir == XFLOW_INOUT ? 0 : ((v->f.id << 6) | v->f.cat) + 1;
	it->ts = b;
	it->x_end = trace_pf_ns(ts + dur);
	it->end = v->f.dir == XFLOW_INOUT ? trace_pf_ns(ts + raw_dur) : it->x_end;
	if (it->end < b)
		it->end = b;
	if (it->x_end < b)
		it->x_end = b;
	it->order = (uint32_t)c->n_as;
	pbw_reset(&c->te);
	inline_body(c, m, v, &it->args_at);
	it->off = c->ablob.len;
	pbw_bytes(&c->ablob, c->te.buf, c->te.len);
	it->len = c->te.len;
	c->n_as++;
	return trace_pf_err(c) ? trace_pf_err(c) : 1;
}

/* ---- async events ---------------------------------------------------------- */

static int cmp_key(const void *pa, const void *pb)
{
	const struct trace_pf_async *a = pa, *b = pb;

	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	if (a->dir != b->dir) /* at one time, a begin (out) before an end (in) */
		return a->dir == XFLOW_OUT ? -1 : 1;
	return a->order < b->order ? -1 : a->order > b->order;
}

static int cmp_start(const void *pa, const void *pb)
{
	const struct trace_pf_async *a = pa, *b = pb;

	if (a->dead != b->dead)
		return a->dead ? 1 : -1;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	if (a->end != b->end)
		return a->end > b->end ? -1 : 1;
	return a->order < b->order ? -1 : a->order > b->order;
}

static int cmp_track(const void *pa, const void *pb)
{
	const struct trace_pf_async *a = pa, *b = pb;

	/* the dead last, as cmp_start() orders them; the living by track, then as it does */
	if (a->dead == b->dead && a->track != b->track)
		return a->track < b->track ? -1 : 1;
	return cmp_start(pa, pb);
}

/*
 * Pair the single-ended events of one (id, category) key, [from, to) sorted
 * by time: as trace.json, only a key with both an out (begin) and an in
 * (end) on the plane has "b"/"e" events; each end closes the earliest open
 * begin. What stays unpaired is a complete event (its own duration).
 */
static void async_pair(struct trace_pf_async *as, size_t from, size_t to, size_t *open)
{
	size_t head = 0, tail = 0;
	bool in = false, out = false;

	for (size_t i = from; i < to; i++)
		in |= as[i].dir == XFLOW_IN, out |= as[i].dir == XFLOW_OUT;
	for (size_t i = from; i < to; i++) {
		struct trace_pf_async *it = &as[i];

		it->end = it->x_end;
		if (!in || !out)
			continue;
		if (it->dir == XFLOW_OUT) {
			open[tail++] = i;
		} else if (head < tail) {
			struct trace_pf_async *bg = &as[open[head++]];

			bg->end = it->ts > bg->ts ? it->ts : bg->ts;
			bg->end_off = it->off + it->args_at;
			bg->end_len = it->len - it->args_at;
			it->dead = true;
		}
	}
}

/* Assign each live span a track on which it overlaps nothing; the track count. */
static uint32_t async_tracks(struct trace_pf_ctx *c, struct trace_pf_async *as, size_t n)
{
	uint64_t last[ASYNC_TRACKS_MAX];
	uint32_t nt = 0;

	qsort(as, n, sizeof(*as), cmp_start);
	for (size_t i = 0; i < n && !as[i].dead; i++) {
		uint32_t k;

		for (k = 0; k < nt && last[k] > as[i].ts; k++)
			;
		if (k == ASYNC_TRACKS_MAX) {
			as[i].dead = true; /* no track left: dropped, counted */
			trace_pf_dropped(c, as[i].ts);
			continue;
		}
		if (k == nt)
			nt++;
		last[k] = as[i].end;
		as[i].track = k;
	}
	return nt;
}

/* The TrackEvent fields at @off (@len bytes) of the held-back store, after @type. */
static void async_event(struct trace_pf_ctx *c, struct trace_pf_seq *s, unsigned type, uint64_t ns,
			size_t off, size_t len)
{
	pbw_reset(&c->te);
	pbw_u64(&c->te, F_TE_TYPE, type);
	pbw_bytes(&c->te, c->ablob.buf + off, len);
	trace_pf_emit_event(c, s, ns, &c->te, NULL);
}

/* Write the plane's held-back async events: spans on async tracks under process @pid. */
int trace_pf_async_flush(struct trace_pf_ctx *c)
{
	struct trace_pf_async *as = c->as;
	size_t n = c->n_as, *open = NULL, i = 0;
	struct trace_pf_seq s = {0};
	uint32_t nt, cur = UINT32_MAX;
	uint64_t base = c->next_async;
	int r = 0;

	if (!n)
		return 0;
	if (!(open = malloc(n * sizeof(*open))))
		return -ENOMEM;
	qsort(as, n, sizeof(*as), cmp_key);
	while (i < n) {
		size_t j = i;

		while (j < n && as[j].key == as[i].key)
			j++;
		if (as[i].key) /* in-out events (key 0) are whole spans already */
			async_pair(as, i, j, open);
		i = j;
	}
	nt = async_tracks(c, as, n);
	c->next_async += nt;
	qsort(as, n, sizeof(*as), cmp_track);
	for (i = 0; i < n && !as[i].dead; i++) {
		const struct trace_pf_async *it = &as[i];

		if (it->track != cur) {
			char nm[48];
			int k = snprintf(nm, sizeof(nm), "Async %u", it->track + 1);

			cur = it->track;
			pbw_reset(&c->td);
			pbw_u64(&c->td, F_TD_UUID, ASYNC_UUID(base + cur));
			pbw_u64(&c->td, F_TD_PARENT, c->proc_uuid);
			pbw_str(&c->td, F_TD_NAME, nm, (size_t)k);
			trace_pf_seq_open(c, &s, ASYNC_UUID(base + cur), &c->td);
		}
		async_event(c, &s, TYPE_BEGIN, it->ts, it->off, it->len);
		/* the end carries the paired end event's args (Perfetto merges them) */
		async_event(c, &s, TYPE_END, it->end, it->end_off, it->end_len);
		if ((r = xs_out_flush(c->o, false)) < 0)
			break;
	}
	free(open);
	c->n_as = 0;
	pbw_reset(&c->ablob);
	return r;
}
