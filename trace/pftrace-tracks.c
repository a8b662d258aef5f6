/*
 * pftrace-tracks.c - trace.pftrace's packets, sequences and tracks: a
 * TracePacket as one Trace.packet record, an event packet on a sequence (a
 * timestamp delta, its TrackEvent and InternedData), a sequence's start, a
 * line's thread track and its overflow tracks, and the track a slice goes
 * on.
 *
 * Design: a sequence's first packet clears incremental state, describes the
 * sequence's track and sets TracePacketDefaults (the track, and an
 * incremental sequence clock whose ClockSnapshot follows), so an event
 * packet holds a timestamp delta and no track. Each track keeps its open
 * slices' ends (innermost last); an event that overlaps the open slice
 * without nesting goes to an overflow track ("<line> (overlap N)", a child
 * of the line's track), so BEGIN/END stay balanced and nested per track.
 * Ends are written lazily, in time order across the line's tracks, before
 * the next begin that follows them. Written from Perfetto's protos
 * (docs/pftrace.md lists them); no XProf code has this job.
 *
 * Limits: times are whole ns (picoseconds are truncated); times before 0 or
 * past 2^64 ns are clamped; an event starting before the previous one of its
 * line is moved to that start (monotonic sequences). Each track keeps at
 * most STACK_MAX open slices and a line at most LEVELS_MAX overflow tracks;
 * an event that fits none is dropped and counted (c->dropped; the plane's
 * part writes the count, view-pftrace.c). Track names are trace.json's,
 * whole (the index cuts line names at XS_NAME_MAX).
 */
#include <errno.h>
#include <stdio.h>

#include "pftrace.h"

#define CLOCK_BOOT 6u  /* BUILTIN_CLOCK_BOOTTIME: the trace's default clock */
#define CLOCK_INCR 64u /* a sequence-scoped clock: each timestamp a delta */

int trace_pf_err(const struct trace_pf_ctx *c)
{
	return c->pk.overflow || c->te.overflow || c->id.overflow || c->td.overflow ||
			       c->sub.overflow || c->ablob.overflow || c->evann.overflow ||
			       c->dte.overflow
		       ? -E2BIG
		       : 0;
}

/* Write packet @pk as one Trace.packet record. */
void trace_pf_emit(struct xs_out *o, const struct pbw *pk)
{
	uint8_t h[16];
	size_t n = 0;

	h[n++] = (F_TRACE_PACKET << 3) | 2;
	n += pbw_put_varint(h + n, pk->len);
	xs_out_add(o, h, n);
	xs_out_add(o, pk->buf, pk->len);
}

/* An event packet on @s at @ns: TrackEvent @te, InternedData @id (may be empty). */
void trace_pf_emit_event(struct trace_pf_ctx *c, struct trace_pf_seq *s, uint64_t ns,
			 const struct pbw *te, const struct pbw *id)
{
	uint8_t f[64], h[16];
	size_t n = 0, k = 0, body;

	f[n++] = F_PK_TS << 3;
	n += pbw_put_varint(f + n, ns - s->last);
	s->last = ns;
	f[n++] = F_PK_SEQ << 3;
	n += pbw_put_varint(f + n, s->id);
	f[n++] = F_PK_FLAGS << 3;
	f[n++] = SEQ_NEEDS;
	f[n++] = (F_PK_EVENT << 3) | 2;
	n += pbw_put_varint(f + n, te->len);
	body = n + te->len;
	if (id && id->len) {
		uint8_t t[12];

		body += 1 + pbw_put_varint(t, id->len) + id->len;
	}
	h[k++] = (F_TRACE_PACKET << 3) | 2;
	k += pbw_put_varint(h + k, body);
	xs_out_add(c->o, h, k);
	xs_out_add(c->o, f, n);
	xs_out_add(c->o, te->buf, te->len);
	if (id && id->len) {
		k = 0;
		h[k++] = (F_PK_INTERNED << 3) | 2;
		k += pbw_put_varint(h + k, id->len);
		xs_out_add(c->o, h, k);
		xs_out_add(c->o, id->buf, id->len);
	}
}

/*
 * A packet on @s holding only message @m as packet field @field: InternedData
 * (entries defined ahead of their use) or a TrackDescriptor.
 */
void trace_pf_emit_msg(struct trace_pf_ctx *c, const struct trace_pf_seq *s, uint32_t field,
		       const struct pbw *m)
{
	pbw_reset(&c->pk);
	pbw_u64(&c->pk, F_PK_SEQ, s->id);
	pbw_u64(&c->pk, F_PK_FLAGS, SEQ_NEEDS);
	pbw_msg(&c->pk, field, m);
	trace_pf_emit(c->o, &c->pk);
}

/*
 * Start sequence @s: a packet clearing incremental state with TrackDescriptor
 * @td and the defaults (track @track, clock CLOCK_INCR), then the clock's
 * snapshot (0 on both clocks: the first delta is the absolute time).
 */
void trace_pf_seq_open(struct trace_pf_ctx *c, struct trace_pf_seq *s, uint64_t track,
		       const struct pbw *td)
{
	struct pbw *pk = &c->pk, *d = &c->sub, *cl = &c->name;

	s->id = c->next_seq;
	c->next_seq += c->seq_step;
	s->last = 0;
	pbw_reset(pk);
	pbw_reset(d);
	pbw_reset(cl);
	pbw_u64(pk, F_PK_SEQ, s->id);
	pbw_u64(pk, F_PK_FLAGS, SEQ_CLEARED);
	pbw_u64(cl, F_TED_TRACK, track);
	pbw_u64(d, F_DEF_CLOCK, CLOCK_INCR);
	pbw_msg(d, F_DEF_EVENT, cl);
	pbw_msg(pk, F_PK_DEFAULTS, d);
	pbw_msg(pk, F_PK_TRACK, td);
	trace_pf_emit(c->o, pk);
	pbw_reset(pk);
	pbw_reset(d);
	pbw_u64(pk, F_PK_TS, 0);
	pbw_u64(pk, F_PK_CLOCK_ID, CLOCK_BOOT);
	pbw_u64(pk, F_PK_SEQ, s->id);
	pbw_u64(pk, F_PK_FLAGS, SEQ_NEEDS);
	pbw_reset(cl);
	pbw_u64(cl, F_CL_ID, CLOCK_BOOT);
	pbw_u64(cl, F_CL_TS, 0);
	pbw_msg(d, F_CS_CLOCK, cl);
	pbw_reset(cl);
	pbw_u64(cl, F_CL_ID, CLOCK_INCR);
	pbw_u64(cl, F_CL_TS, 0);
	pbw_u64(cl, F_CL_INCR, 1);
	pbw_msg(d, F_CS_CLOCK, cl);
	pbw_msg(pk, F_PK_CLOCKS, d);
	trace_pf_emit(c->o, pk);
}

/* ps -> ns, clamped to [0, 2^64) */
uint64_t trace_pf_ns(xs_ps128 ps)
{
	if (ps < 0)
		return 0;
	if (ps <= INT64_MAX) /* the common case: a 64-bit division, not __divti3's */
		return (uint64_t)(int64_t)ps / 1000;
	ps /= 1000;
	if (ps > (xs_ps128)UINT64_MAX)
		return UINT64_MAX;
	return (uint64_t)ps;
}

/* The TrackDescriptor of level @k of line @pl into c->td. */
static void describe(struct trace_pf_line *pl, size_t k)
{
	struct pbw *td = &pl->c->td, *th = &pl->c->sub;
	const struct xs_line *l = pl->l;
	const char *nm = pl->title ? pl->title : l->display_name_len ? l->display_name : l->name;
	size_t nl = pl->title             ? pl->title_len
		    : l->display_name_len ? l->display_name_len
					  : l->name_len;

	pbw_reset(td);
	pbw_reset(th);
	pbw_u64(td, F_TD_UUID, pl->uuid + k);
	if (k == 0 && !pl->counters) {
		pbw_u64(td, F_TD_PARENT, pl->c->proc_uuid);
		pbw_u64(th, F_THD_PID, pl->pid);
		pbw_u64(th, F_THD_TID, pl->tid);
		pbw_str(th, F_THD_NAME, nm, nl);
		pbw_msg(td, F_TD_THREAD, th);
	} else {
		char sfx[32];
		int n = k ? snprintf(sfx, sizeof(sfx), " (overlap %zu)", k) : 0;

		pbw_u64(td, F_TD_PARENT, k == 0 ? pl->c->proc_uuid : pl->uuid);
		pbw_str2(td, F_TD_NAME, nm, nl, sfx, n > 0 ? (size_t)n : 0);
		if (pl->counters)
			pbw_str(td, F_TD_COUNTER, "", 0);
	}
	pl->lv[k].described = true;
}

/* Level @k of line @pl is described on its sequence (level 0 opens the sequence). */
void trace_pf_need_track(struct trace_pf_line *pl, size_t k)
{
	struct trace_pf_ctx *c = pl->c;

	if (!pl->lv[0].described) {
		describe(pl, 0);
		trace_pf_seq_open(c, &pl->s, pl->uuid, &c->td);
	}
	if (k && !pl->lv[k].described) {
		describe(pl, k);
		trace_pf_emit_msg(c, &pl->s, F_PK_TRACK, &c->td);
	}
}

/* Write the ends, in time order across levels, of slices ending at or before @ns. */
void trace_pf_close_until(struct trace_pf_line *pl, uint64_t ns)
{
	struct pbw *te = &pl->c->te;

	for (;;) {
		size_t best = LEVELS_MAX;

		for (size_t k = 0; k < pl->nlv; k++) {
			struct trace_pf_track *t = &pl->lv[k];

			if (t->n && t->end[t->n - 1] <= ns &&
			    (best == LEVELS_MAX ||
			     t->end[t->n - 1] < pl->lv[best].end[pl->lv[best].n - 1]))
				best = k;
		}
		if (best == LEVELS_MAX)
			return;
		pbw_reset(te);
		pbw_u64(te, F_TE_TYPE, TYPE_END);
		if (best)
			pbw_u64(te, F_TE_TRACK, pl->uuid + best);
		trace_pf_emit_event(pl->c, &pl->s, pl->lv[best].end[--pl->lv[best].n], te, NULL);
	}
}

/* One more event that fits no track, starting at @ns (the first one's start is kept). */
void trace_pf_dropped(struct trace_pf_ctx *c, uint64_t ns)
{
	if (!c->dropped++)
		c->drop_ns = ns;
}

/*
 * The track level of line @pl that a slice [*b, *en) goes on, described and
 * with the ends before *b written (*b kept monotonic, *en >= *b); LEVELS_MAX
 * when it fits none (then dropped).
 */
size_t trace_pf_place(struct trace_pf_line *pl, uint64_t *b, uint64_t *en)
{
	size_t k;

	if (*b < pl->last_ns)
		*b = pl->last_ns;
	if (*en < *b)
		*en = *b;
	pl->last_ns = *b;
	trace_pf_close_until(pl, *b);
	for (k = 0; k < LEVELS_MAX; k++) {
		struct trace_pf_track *tr = &pl->lv[k];

		if (tr->n < STACK_MAX && (!tr->n || tr->end[tr->n - 1] >= *en))
			break; /* else full, or a partial overlap: try the next track */
	}
	if (k < LEVELS_MAX) {
		trace_pf_need_track(pl, k);
		if (k >= pl->nlv)
			pl->nlv = k + 1;
	} else {
		trace_pf_dropped(pl->c, *b);
	}
	return k;
}
