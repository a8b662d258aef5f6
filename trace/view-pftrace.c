/*
 * view-pftrace.c - trace.pftrace: the profile as Perfetto's native protobuf
 * trace (a Trace message streamed packet by packet), with trace.json's event
 * set, names, args, flows and async pairs (the rules are in trace-model.c;
 * docs/pftrace.md has the mapping).
 *
 * Design: packet sequence 1 carries one TrackDescriptor per process (plane)
 * and the plane's stats as an instant on it. Each shown line gets a packet
 * sequence of its own (the usual producer layout); its first packet clears
 * incremental state, describes the line's thread track and sets
 * TracePacketDefaults (the track, and an incremental sequence clock whose
 * ClockSnapshot follows), so an event packet holds a timestamp delta and no
 * track. An XSpace complete event is a SLICE_BEGIN at its start and a
 * SLICE_END at its end (ns). Events of a line are sorted by start and nest;
 * an event that overlaps the open slice without nesting goes to an overflow
 * track ("<line> (overlap N)", a child of the line's track), so BEGIN/END
 * stay balanced and nested per track. Ends are written lazily, in time order
 * across the line's tracks, before the next begin that follows them. Args
 * (pftrace-args.c) and flows go on the BEGIN. Async events are held back
 * until their plane ends, paired as trace.json pairs them and written on
 * async tracks of their own (async_flush()).
 *
 * Limits: times are whole ns (picoseconds are truncated); times before 0 or
 * past 2^64 ns are clamped; an event starting before the previous one of its
 * line is moved to that start (monotonic sequences). Each track keeps at
 * most STACK_MAX open slices and a line at most LEVELS_MAX overflow tracks;
 * an event that fits none is dropped. Held-back async events take at most
 * ASYNC_MAX bytes per plane (past that they are slices of their line) and
 * ASYNC_TRACKS_MAX tracks (past that they are dropped).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "derived.h"
#include "pftrace.h"

#define STACK_MAX 256
#define LEVELS_MAX 8
#define NAME_MAX_LEN 2048
#define PROC_SEQ 1u
#define CLOCK_BOOT 6u  /* BUILTIN_CLOCK_BOOTTIME: the trace's default clock */
#define CLOCK_INCR 64u /* a sequence-scoped clock: each timestamp a delta */
#define ASYNC_MAX ((size_t)16 << 20)
#define ASYNC_TRACKS_MAX 1024
#define PROC_UUID(pid) ((UINT64_C(1) << 63) | (pid))
#define ASYNC_UUID(n) ((UINT64_C(1) << 62) | (n))

/* Perfetto field numbers (decode/proto/perfetto_trace.proto) */
enum {
	F_TRACE_PACKET = 1,
	F_PK_CLOCKS = 6,
	F_PK_TS = 8,
	F_PK_SEQ = 10,
	F_PK_EVENT = 11,
	F_PK_INTERNED = 12,
	F_PK_FLAGS = 13,
	F_PK_CLOCK_ID = 58,
	F_PK_DEFAULTS = 59,
	F_PK_TRACK = 60,
	F_DEF_CLOCK = 58,
	F_DEF_EVENT = 11,
	F_TED_TRACK = 11,
	F_CS_CLOCK = 1,
	F_CL_ID = 1,
	F_CL_TS = 2,
	F_CL_INCR = 3,
	F_TD_UUID = 1,
	F_TD_NAME = 2,
	F_TD_PROCESS = 3,
	F_TD_THREAD = 4,
	F_TD_PARENT = 5,
	F_TD_COUNTER = 8,
	F_PD_PID = 1,
	F_PD_NAME = 6,
	F_THD_PID = 1,
	F_THD_TID = 2,
	F_THD_NAME = 5,
	F_TE_TYPE = 9,
	F_TE_NAME_IID = 10,
	F_TE_TRACK = 11,
	F_TE_NAME = 23,
	F_TE_DCOUNTER = 44,
	F_TE_FLOW = 47,
	F_TE_TFLOW = 48,
};
enum { SEQ_CLEARED = 1, SEQ_NEEDS = 2 };
enum { TYPE_BEGIN = 1, TYPE_END = 2, TYPE_INSTANT = 3, TYPE_COUNTER = 4 };

/* A packet sequence being written: its id and its clock's last value. */
struct trace_pf_seq {
	uint32_t id;
	uint64_t last;
};

/* A held-back async event of the current plane (a span once paired). */
struct trace_pf_async {
	uint64_t key;            /* (flow id, category); 0: in-out */
	uint64_t ts, x_end, end; /* ns: start, end as a complete event, span end */
	size_t off, len;         /* its TrackEvent fields (name, args) in trace_pf_ctx.ablob */
	size_t args_at;          /* where its args start (after the name) */
	size_t end_off, end_len; /* the paired end's args (len 0: none) */
	uint32_t order, track;   /* arrival, assigned track */
	int dir;
	bool dead; /* consumed as the end of a span */
};

/* The render. */
struct trace_pf_ctx {
	struct xs_rctx *rc;
	struct xs_out *o;
	struct trace_pf_args *A;
	uint32_t next_seq, seq_step; /* the next sequence id; ids go next_seq, + seq_step, ... */
	uint64_t next_async;
	struct trace_pf_line *pl; /* the line being written */
	uint64_t proc_uuid;
	struct pbw pk, te, id, td, sub, name, evann; /* scratch */
	struct xs_out ev;                            /* scratch: one event's shown stats (JSON) */
	struct trace_pf_dline
		*dl;      /* [DL_KINDS]: a stream's derived lines, Steps, host-offload rows */
	struct pbw dte;   /* scratch: a derived event's long_name */
	struct xs_out dj; /* scratch: a derived event's long_name as JSON */
	struct trace_pf_async *as; /* the plane's held-back async events */
	size_t n_as, cap_as;
	struct pbw ablob;
};

/* One track of a line: its open slices' end times (innermost last). */
struct trace_pf_track {
	uint64_t end[STACK_MAX];
	size_t n;
	bool described;
};

/* One line being written. */
struct trace_pf_line {
	struct trace_pf_ctx *c;
	const struct xs_line *l;
	const char *title; /* a derived line: its name (else l's) */
	size_t title_len;
	struct trace_derive *derive; /* owned; the lines derived from this one, NULL: none */
	bool win;                    /* a slice walked whole for its derivation: filter here */
	struct trace_pf_seq s;
	uint32_t pid, tid;
	uint64_t uuid; /* of level 0; level k is uuid + k */
	uint64_t last_ns;
	bool counters;
	struct trace_pf_track lv[LEVELS_MAX];
	double cval;
	bool has_cval;
};

static int pbw_err(const struct trace_pf_ctx *c)
{
	return c->pk.overflow || c->te.overflow || c->id.overflow || c->td.overflow ||
			       c->sub.overflow || c->ablob.overflow || c->evann.overflow ||
			       c->dte.overflow
		       ? -E2BIG
		       : 0;
}

/* Write packet @pk as one Trace.packet record. */
static void emit(struct xs_out *o, const struct pbw *pk)
{
	uint8_t h[16];
	size_t n = 0;

	h[n++] = (F_TRACE_PACKET << 3) | 2;
	n += pbw_put_varint(h + n, pk->len);
	xs_out_add(o, h, n);
	xs_out_add(o, pk->buf, pk->len);
}

/* An event packet on @s at @ns: TrackEvent @te, InternedData @id (may be empty). */
static void emit_event(struct trace_pf_ctx *c, struct trace_pf_seq *s, uint64_t ns,
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

/* A packet on @s holding only InternedData @id (entries defined ahead of their use). */
static void emit_interned(struct trace_pf_ctx *c, struct trace_pf_seq *s, const struct pbw *id)
{
	pbw_reset(&c->pk);
	pbw_u64(&c->pk, F_PK_SEQ, s->id);
	pbw_u64(&c->pk, F_PK_FLAGS, SEQ_NEEDS);
	pbw_msg(&c->pk, F_PK_INTERNED, id);
	emit(c->o, &c->pk);
}

/*
 * Start sequence @s: a packet clearing incremental state with TrackDescriptor
 * @td and the defaults (track @track, clock CLOCK_INCR), then the clock's
 * snapshot (0 on both clocks: the first delta is the absolute time).
 */
static void seq_open(struct trace_pf_ctx *c, struct trace_pf_seq *s, uint64_t track,
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
	emit(c->o, pk);
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
	emit(c->o, pk);
}

/* ps -> ns, clamped to [0, 2^64) */
static uint64_t to_ns(xs_ps128 ps)
{
	if (ps < 0)
		return 0;
	ps /= 1000;
	if (ps > (xs_ps128)UINT64_MAX)
		return UINT64_MAX;
	return (uint64_t)ps;
}

static size_t capped(size_t n)
{
	return n > NAME_MAX_LEN ? NAME_MAX_LEN : n;
}

/* The TrackDescriptor of level @k of line @pl into c->td. */
static void describe(struct trace_pf_line *pl, size_t k)
{
	struct pbw *td = &pl->c->td, *th = &pl->c->sub;
	const struct xs_line *l = pl->l;
	const char *nm = pl->title ? pl->title : l->display_name_len ? l->display_name : l->name;
	size_t nl = capped(pl->title             ? pl->title_len
			   : l->display_name_len ? l->display_name_len
						 : l->name_len);

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
		char buf[NAME_MAX_LEN + 32];
		int n;

		if (k == 0)
			n = snprintf(buf, sizeof(buf), "%.*s", (int)nl, nm);
		else
			n = snprintf(buf, sizeof(buf), "%.*s (overlap %zu)", (int)nl, nm, k);
		pbw_u64(td, F_TD_PARENT, k == 0 ? pl->c->proc_uuid : pl->uuid);
		pbw_str(td, F_TD_NAME, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
		if (pl->counters)
			pbw_str(td, F_TD_COUNTER, "", 0);
	}
	pl->lv[k].described = true;
}

/* Level @k of line @pl is described on its sequence (level 0 opens the sequence). */
static void need_track(struct trace_pf_line *pl, size_t k)
{
	struct trace_pf_ctx *c = pl->c;

	if (!pl->lv[0].described) {
		describe(pl, 0);
		seq_open(c, &pl->s, pl->uuid, &c->td);
	}
	if (k && !pl->lv[k].described) {
		describe(pl, k);
		pbw_reset(&c->pk);
		pbw_u64(&c->pk, F_PK_SEQ, pl->s.id);
		pbw_u64(&c->pk, F_PK_FLAGS, SEQ_NEEDS);
		pbw_msg(&c->pk, F_PK_TRACK, &c->td);
		emit(c->o, &c->pk);
	}
}

/* Write the ends, in time order across levels, of slices ending at or before @ns. */
static void close_until(struct trace_pf_line *pl, uint64_t ns)
{
	struct pbw *te = &pl->c->te;

	for (;;) {
		size_t best = LEVELS_MAX;

		for (size_t k = 0; k < LEVELS_MAX; k++) {
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
		emit_event(pl->c, &pl->s, pl->lv[best].end[--pl->lv[best].n], te, NULL);
	}
}

/*
 * The track level of line @pl that a slice [*b, *en) goes on, described and
 * with the ends before *b written (*b kept monotonic, *en >= *b); LEVELS_MAX
 * when it fits none (then dropped).
 */
static size_t place(struct trace_pf_line *pl, uint64_t *b, uint64_t *en)
{
	size_t k;

	if (*b < pl->last_ns)
		*b = pl->last_ns;
	if (*en < *b)
		*en = *b;
	pl->last_ns = *b;
	close_until(pl, *b);
	for (k = 0; k < LEVELS_MAX; k++) {
		struct trace_pf_track *tr = &pl->lv[k];

		if (tr->n < STACK_MAX && (!tr->n || tr->end[tr->n - 1] >= *en))
			break; /* else full, or a partial overlap: try the next track */
	}
	if (k < LEVELS_MAX)
		need_track(pl, k);
	return k;
}

/* A xs_stat_fn keeping the first numeric stat (counter value). */
static int counter_stat(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s, void *arg)
{
	struct trace_pf_line *pl = arg;

	(void)rc, (void)c;
	if (pl->has_cval)
		return 0;
	switch (s->kind) {
	case SV_DOUBLE:
		pl->cval = s->d;
		break;
	case SV_I64:
		pl->cval = (double)(int64_t)s->u;
		break;
	case SV_U64:
		pl->cval = (double)s->u;
		break;
	default:
		return 0;
	}
	pl->has_cval = true;
	return 0;
}

/* A counter line's event: TYPE_COUNTER with the first numeric stat. */
static int counter_event(struct xs_rctx *rc, struct trace_pf_line *pl, const struct xs_event *e,
			 uint64_t ns)
{
	struct pbw *te = &pl->c->te;
	uint64_t bits;
	int r;

	pl->has_cval = false;
	pl->cval = 0;
	if (e->has_stats &&
	    (r = xs_walk_stats(rc, &rc->ev, e->stats_off, e->off + e->len - e->stats_off,
			       XEVENT_F_STATS, counter_stat, pl)) < 0)
		return r;
	need_track(pl, 0);
	pbw_reset(te);
	pbw_u64(te, F_TE_TYPE, TYPE_COUNTER);
	memcpy(&bits, &pl->cval, sizeof(bits));
	pbw_fixed64(te, F_TE_DCOUNTER, bits);
	emit_event(pl->c, &pl->s, ns, te, NULL);
	return 0;
}

/* What the walk over an event's stats found, with its metadata's (as trace.json). */
struct trace_pf_evinfo {
	struct trace_acc a;
	struct trace_xflow f;
	const char *step; /* JSON string of a step_name rename, or NULL */
	size_t step_len;
};

/*
 * Walk @e's stats: its annotations to c->evann (names interned on sequence
 * @seq, new ones defined in c->id, for PF_EVENT; all inline for PF_INLINE).
 */
static int event_info(struct trace_pf_ctx *c, const struct xs_event *e, const struct trace_md *t,
		      struct trace_pf_evinfo *v, enum trace_pf_mode mode, uint32_t seq)
{
	struct xs_rctx *rc = c->rc;
	struct trace_pf_evstats es = {
		.A = c->A, .mode = mode, .seq = seq, .ann = &c->evann, .id = &c->id};
	int r;

	memset(v, 0, sizeof(*v));
	c->ev.len = 0;
	pbw_reset(&c->evann);
	es.a.o = &c->ev;
	es.a.first = true;
	if (t) {
		es.a.flow = t->flow, es.a.has_flow = t->has_flow;
		es.a.group = t->group, es.a.has_group = t->has_group;
		es.a.is_async = t->is_async;
	}
	if (e->has_stats &&
	    (r = xs_walk_stats(rc, &rc->ev, e->stats_off, e->off + e->len - e->stats_off,
			       XEVENT_F_STATS, trace_pf_event_stat, &es)) < 0)
		return r;
	xs_trace_xflows(rc->x, &rc->x->planes[c->pl->l->plane], &es.a);
	v->a = es.a;
	if ((r = c->ev.r) < 0)
		return r;
	if (v->a.has_step) {
		v->step = c->ev.buf + v->a.step_off;
		v->step_len = v->a.step_len;
	} else if (t && t->step_len) {
		v->step = t->args + t->step_off;
		v->step_len = t->step_len;
	}
	v->f = trace_xflow_decode(v->a.flow);
	return 0;
}

/* The name (@v's rename or @m's) and args of an event into c->te, all inline (async). */
static void inline_body(struct trace_pf_ctx *c, const struct xs_evmd *m,
			const struct trace_pf_evinfo *v, size_t *args_at)
{
	struct pbw *te = &c->te;

	if (v->step) {
		size_t n = trace_pf_json_unescape(v->step, v->step_len, &c->name);

		pbw_str(te, F_TE_NAME, c->name.buf, capped(n));
	} else {
		pbw_str(te, F_TE_NAME, m->name, capped(m->name_len));
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
static int async_hold(struct trace_pf_ctx *c, const struct xs_evmd *m,
		      const struct trace_pf_evinfo *v, xs_ps128 ts, int64_t dur, int64_t raw_dur)
{
	struct trace_pf_async *it;
	uint64_t b = to_ns(ts);
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
	it->x_end = to_ns(ts + dur);
	it->end = v->f.dir == XFLOW_INOUT ? to_ns(ts + raw_dur) : it->x_end;
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
	return pbw_err(c) ? pbw_err(c) : 1;
}

struct trace_derive;
static int derived_flush(struct trace_pf_ctx *c, const struct trace_derive *dv);

/* A xs_event_fn writing one event of a line (arg: struct trace_pf_line). */
static int trace_pf_event(struct xs_rctx *rc, const struct xs_event *e, struct xs_evmd *m,
			  void *arg)
{
	struct trace_pf_line *pl = arg;
	struct trace_pf_ctx *c = pl->c;
	const struct trace_md *t = trace_md(m);
	xs_ps128 ts = (xs_ps128)pl->l->timestamp_ns * 1000 + (e->has_num ? 0 : e->offset_ps);
	int64_t dur = e->duration_ps > 0 ? e->duration_ps : 1;
	struct pbw *te = &c->te, *id = &c->id;
	struct trace_pf_evinfo v;
	struct trace_pf_md *md;
	uint64_t b, en;
	size_t k;
	int r;

	if (pl->derive) {
		xs_ps128 start = (xs_ps128)pl->l->timestamp_ns * 1000 + e->offset_ps;
		struct trace_derived_in in;

		if ((r = trace_derive_read(pl->derive, rc, e, start, &in)) < 0 ||
		    (r = trace_derive_event(pl->derive, &in)) < 0 ||
		    (r = derived_flush(c, pl->derive)) < 0)
			return r;
		if (pl->win && !(start < rc->win_to && start + dur > rc->win_from))
			return 0; /* the slice's rule (render.c win_test) */
	}
	if (t && t->internal)
		return 0;
	if (pl->counters) {
		b = to_ns(ts);
		if (b < pl->last_ns)
			b = pl->last_ns;
		pl->last_ns = b;
		if ((r = counter_event(rc, pl, e, b)) < 0)
			return r;
		return xs_out_flush(c->o, false);
	}
	need_track(pl, 0);
	pbw_reset(id);
	if ((r = event_info(c, e, t, &v, PF_EVENT, pl->s.id)) < 0)
		return r;
	if (v.a.has_flow && v.a.is_async && v.f.dir != XFLOW_NONE) {
		/* held back for another sequence: names this one now has go out alone */
		if (id->len)
			emit_interned(c, &pl->s, id);
		pbw_reset(id);
		if ((r = event_info(c, e, t, &v, PF_INLINE, 0)) < 0)
			return r;
		if ((r = async_hold(c, m, &v, ts, dur, e->duration_ps)) != 0)
			return r < 0 ? r : 0;
	}
	b = to_ns(ts);
	en = to_ns(ts + dur);
	k = place(pl, &b, &en);
	if (k == LEVELS_MAX) { /* dropped; the names its stats defined still go out */
		if (id->len)
			emit_interned(c, &pl->s, id);
		return 0;
	}
	if ((r = trace_pf_md_get(c->A, rc, e->md, m, &md)) < 0)
		return r;
	pbw_reset(te);
	pbw_u64(te, F_TE_TYPE, TYPE_BEGIN);
	if (k)
		pbw_u64(te, F_TE_TRACK, pl->uuid + k);
	if (v.step) {
		size_t n = trace_pf_json_unescape(v.step, v.step_len, &c->name);

		pbw_str(te, F_TE_NAME, c->name.buf, capped(n));
	} else {
		pbw_u64(te, F_TE_NAME_IID, md->name_iid);
	}
	trace_pf_md_define(c->A, md, m, m->name, capped(m->name_len), pl->s.id, id);
	if (v.a.has_group)
		trace_pf_arg_int(c->A, "group_id", 8, v.a.group, PF_EVENT, pl->s.id, te, id);
	if (md->inline_args && t && t->args_len)
		trace_pf_args_encode(c->A, t->args, t->args_len, PF_EVENT, pl->s.id, 0, te, id);
	else
		pbw_bytes(te, trace_pf_md_blob(c->A, md), md->blob_len);
	pbw_bytes(te, c->evann.buf, c->evann.len);
	if (v.a.has_flow && !v.a.is_async && v.f.dir != XFLOW_NONE)
		/* flow_out starts (or continues) a flow, flow_in ends it */
		pbw_fixed64(te, v.f.dir == XFLOW_IN ? F_TE_TFLOW : F_TE_FLOW,
			    (((uint64_t)v.f.cat << 56) | v.f.id) + 1);
	if ((r = pbw_err(c)) < 0)
		return r;
	emit_event(c, &pl->s, b, te, id);
	pl->lv[k].end[pl->lv[k].n++] = en;
	return xs_out_flush(c->o, false);
}

/* ---- derived lines ------------------------------------------------------------ */

/* A finished derived event waiting for its turn: its times, args and strings in trace_pf_dline.blob. */
struct trace_pf_dev {
	uint64_t b, en;
	int64_t group;
	size_t off; /* in trace_pf_dline.blob: its name (name_len bytes), long_name, more args */
	size_t name_len, ln_len, args_len;
	uint32_t order;
	bool has_group, has_ln;
};

/*
 * A derived line (derived.c): a sequence of its own. Its events come out as
 * they close, a parent after its children, so they wait here and are written
 * in start order once no event still open on the line can start before them.
 */
struct trace_pf_dline {
	struct trace_pf_line pl;
	char title[256];
	struct trace_pf_dev *ev;
	size_t n, cap;
	uint32_t order;
	bool sorted;     /* ev[] is in start order (new events arrive unsorted) */
	struct pbw blob; /* the waiting events' names and long_names */
};

/* Past these, waiting events are written as they are (start order then not guaranteed). */
#define DLINE_WAIT_MAX 65536
#define DLINE_BLOB_MAX ((size_t)64 << 20)

/* Make @d the empty derived line of source line @l (NULL: a plane's Steps) of process @pid. */
static void dline_start(struct trace_pf_dline *d, struct trace_pf_ctx *c, const struct xs_line *l,
			uint32_t pid, uint64_t uuid)
{
	memset(&d->pl, 0, sizeof(d->pl));
	d->pl.c = c;
	d->pl.l = l;
	d->pl.pid = pid;
	d->pl.uuid = uuid;
	d->n = 0;
	d->order = 0;
	d->sorted = true;
	pbw_reset(&d->blob);
}

/* start order; a parent (ending later) before the children that start with it */
static int cmp_dev(const void *pa, const void *pb)
{
	const struct trace_pf_dev *a = pa, *b = pb;

	if (a->b != b->b)
		return a->b < b->b ? -1 : 1;
	if (a->en != b->en)
		return a->en > b->en ? -1 : 1;
	return a->order < b->order ? -1 : a->order > b->order;
}

/* Write the waiting events of @d starting before @until (sorted), keep the rest. */
static int dline_write(struct trace_pf_dline *d, uint64_t until)
{
	struct trace_pf_ctx *c = d->pl.c;
	struct pbw *te = &c->te;
	size_t i, k;

	if (!d->n)
		return 0;
	if (!d->sorted) /* called after every event of the line: sort only what is new */
		qsort(d->ev, d->n, sizeof(*d->ev), cmp_dev);
	d->sorted = true;
	for (i = 0; i < d->n && d->ev[i].b < until; i++) {
		uint64_t b = d->ev[i].b, en = d->ev[i].en;

		if ((k = place(&d->pl, &b, &en)) == LEVELS_MAX)
			continue;
		const struct trace_pf_dev *v = &d->ev[i];
		const char *name = (const char *)d->blob.buf + v->off;
		uint64_t iid;

		pbw_reset(te);
		pbw_reset(&c->id);
		pbw_u64(te, F_TE_TYPE, TYPE_BEGIN);
		if (k)
			pbw_u64(te, F_TE_TRACK, d->pl.uuid + k);
		/*
		 * Names and long_names repeat (one per op or scope): interned on the
		 * sequence, inline past the tables' caps; args as trace.json's
		 * derived_event() writes them.
		 */
		iid = trace_pf_event_name(c->A, name, v->name_len, d->pl.s.id, &c->id);
		if (iid)
			pbw_u64(te, F_TE_NAME_IID, iid);
		else
			pbw_str(te, F_TE_NAME, name, v->name_len);
		if (v->has_group)
			trace_pf_arg_int(c->A, "group_id", 8, v->group, PF_EVENT, d->pl.s.id, te,
					 &c->id);
		if (v->has_ln)
			trace_pf_arg_str(c->A, "long_name", 9, name + v->name_len, v->ln_len,
					 d->pl.s.id, te, &c->id);
		if (v->args_len) /* trace.json's "k":v pairs (host-offload rows) */
			trace_pf_args_encode(c->A, name + v->name_len + v->ln_len, v->args_len,
					     PF_EVENT, d->pl.s.id, 0, te, &c->id);
		emit_event(c, &d->pl.s, b, te, &c->id);
		d->pl.lv[k].end[d->pl.lv[k].n++] = en;
	}
	memmove(d->ev, d->ev + i, (d->n - i) * sizeof(*d->ev));
	d->n -= i;
	if (!d->n)
		pbw_reset(&d->blob);
	return pbw_err(c) ? pbw_err(c) : xs_out_flush(c->o, false);
}

/* Write what @d still holds and close its slices. */
static int dline_end(struct trace_pf_dline *d)
{
	int r = dline_write(d, UINT64_MAX);

	close_until(&d->pl, UINT64_MAX);
	return r ? r : xs_out_flush(d->pl.c->o, false);
}

/* Write the waiting events of stream derivation @dv's lines that nothing open precedes. */
static int derived_flush(struct trace_pf_ctx *c, const struct trace_derive *dv)
{
	int r;

	for (int k = 0; k < DL_COUNT; k++) {
		struct trace_pf_dline *d = &c->dl[k];
		uint64_t until = UINT64_MAX;

		if (!d->n)
			continue;
		for (size_t i = 0; i < DER_LEVELS; i++)
			if (dv->lines[k].lv[i].open && to_ns(dv->lines[k].lv[i].begin) < until)
				until = to_ns(dv->lines[k].lv[i].begin);
		if ((r = dline_write(d, until)) < 0)
			return r;
	}
	return 0;
}

/* trace_derive_tpu()'s after-each-event hook: write what nothing open precedes. */
static int tpu_flush(void *arg, const struct trace_derive *dv)
{
	return derived_flush(arg, dv);
}

/* Whether @s (@n bytes) is all ASCII. */
static bool ascii(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] >= 0x80)
			return false;
	return true;
}

/*
 * A trace_derived_emit_fn (arg: struct trace_pf_ctx): one derived event, its name
 * and long_name kept (as trace.json escapes and trace_pf_args_encode() reads them
 * back), waiting in its line until its turn.
 */
static int derived_emit(void *arg, const struct trace_derived_ev *e)
{
	struct trace_pf_ctx *c = arg;
	struct trace_pf_dline *d = &c->dl[e->kind];
	struct pbw *ln = &c->dte;
	xs_ps128 dur = e->end <= e->begin ? 1 : e->end - e->begin;
	struct trace_pf_dev *v;
	int r;

	if (!d->pl.title) {
		size_t n = e->line_name_len < sizeof(d->title) ? e->line_name_len
							       : sizeof(d->title) - 1;

		memcpy(d->title, e->line_name, n);
		d->title[n] = '\0';
		d->pl.title = d->title;
		d->pl.title_len = n;
		d->pl.tid = e->tid;
	}
	pbw_reset(ln);
	if (e->disp_len && ascii(e->name, e->name_len)) {
		/* escaping ASCII and reading it back is a copy */
		pbw_bytes(ln, e->name, e->name_len);
	} else if (e->disp_len) {
		/* through trace.json's string escaping (invalid UTF-8 becomes U+FFFD), as both views show it */
		c->dj.len = 0;
		xs_out_str(&c->dj, e->name, e->name_len);
		if (c->dj.r < 0)
			return c->dj.r;
		trace_pf_json_unescape(c->dj.buf, c->dj.len, ln);
	}
	if (d->n >= DLINE_WAIT_MAX || d->blob.len > DLINE_BLOB_MAX)
		if ((r = dline_write(d, UINT64_MAX)) < 0)
			return r;
	if ((r = xprofs_grow(&d->ev, &d->cap, d->n, sizeof(*d->ev), 64)) < 0)
		return r;
	v = &d->ev[d->n++];
	v->b = to_ns(e->begin);
	v->en = to_ns(e->begin + (dur > INT64_MAX ? INT64_MAX : dur));
	v->group = e->group;
	v->has_group = e->has_group;
	v->has_ln = e->disp_len != 0;
	v->off = d->blob.len;
	v->order = d->order++;
	d->sorted = false;
	v->name_len = capped(e->disp_len ? e->disp_len : e->name_len);
	pbw_bytes(&d->blob, e->disp_len ? e->disp : e->name, v->name_len);
	v->ln_len = ln->len;
	pbw_bytes(&d->blob, ln->buf, ln->len);
	v->args_len = e->args_len;
	pbw_bytes(&d->blob, e->args, e->args_len);
	if ((r = pbw_err(c) ? pbw_err(c) : d->blob.overflow ? -E2BIG : 0) < 0)
		return r;
	/* a host-offload row's events come in start order (each starts after its row's last end) */
	return e->kind >= DL_OFFLOAD ? dline_write(d, UINT64_MAX) : 0;
}

/* The events of line @li of process @pid as a sequence of their own. */
static int trace_pf_line(struct trace_pf_ctx *c, struct trace_pf_line *pl, uint32_t pid, size_t li)
{
	struct xs_rctx *rc = c->rc;
	enum trace_tline kind;
	int r;

	memset(pl, 0, sizeof(*pl));
	pl->c = c;
	pl->l = &rc->x->lines[li];
	kind = trace_line_kind(pl->l);
	if (kind == TL_SKIP)
		return 0;
	pl->counters = kind == TL_COUNTERS;
	pl->pid = pid;
	pl->tid = trace_tid(pl->l);
	pl->uuid = ((uint64_t)(li + 1) << 8);
	if (kind == TL_THREAD && (r = trace_derive_new(rc, &rc->x->planes[pl->l->plane], pl->l,
						       derived_emit, c, &pl->derive)) < 0)
		return r;
	if (!pl->derive) {
		if ((r = xs_line_each(rc, li, NULL, trace_pf_event, pl)) < 0)
			return r;
		close_until(pl, UINT64_MAX);
		return xs_out_flush(c->o, false);
	}
	/* derived events are built from the whole line: a slice walks it all, filtering in trace_pf_event */
	for (int k = 0; k < DL_COUNT; k++)
		dline_start(&c->dl[k], c, pl->l, pid, pl->uuid + LEVELS_MAX * (uint64_t)(k + 1));
	pl->win = rc->win;
	if (pl->win)
		trace_derive_window(pl->derive, rc->win_from, rc->win_to);
	rc->win = false;
	r = xs_line_each(rc, li, NULL, trace_pf_event, pl);
	rc->win = pl->win;
	if (r == 0)
		r = trace_derive_finish(pl->derive);
	trace_derive_free(pl->derive);
	pl->derive = NULL;
	if (r == 0)
		close_until(pl, UINT64_MAX);
	for (int k = 0; k < DL_COUNT && r == 0; k++)
		r = dline_end(&c->dl[k]);
	return r ? r : xs_out_flush(c->o, false);
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

	if (a->dead != b->dead)
		return a->dead ? 1 : -1;
	if (a->track != b->track)
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
static uint32_t async_tracks(struct trace_pf_async *as, size_t n)
{
	uint64_t last[ASYNC_TRACKS_MAX];
	uint32_t nt = 0;

	qsort(as, n, sizeof(*as), cmp_start);
	for (size_t i = 0; i < n && !as[i].dead; i++) {
		uint32_t k;

		for (k = 0; k < nt && last[k] > as[i].ts; k++)
			;
		if (k == ASYNC_TRACKS_MAX) {
			as[i].dead = true; /* no track left: dropped */
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
	emit_event(c, s, ns, &c->te, NULL);
}

/* Write the plane's held-back async events: spans on async tracks under process @pid. */
static int async_flush(struct trace_pf_ctx *c)
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
	nt = async_tracks(as, n);
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
			seq_open(c, &s, ASYNC_UUID(base + cur), &c->td);
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

/* ---- processes --------------------------------------------------------------- */

/* The process TrackDescriptor of plane @p as process @pid into c->td. */
static void describe_process(struct trace_pf_ctx *c, const struct xs_plane *p, uint32_t pid)
{
	struct pbw *td = &c->td, *pd = &c->sub;
	const char *host = c->rc->host;
	char buf[NAME_MAX_LEN + 1];
	int n;

	if (host && *host) /* "<host> <plane name>", as trace.json */
		n = snprintf(buf, sizeof(buf), "%s %.*s", host, (int)capped(p->name_len), p->name);
	else
		n = snprintf(buf, sizeof(buf), "%.*s", (int)capped(p->name_len), p->name);
	if (n < 0)
		n = 0;
	pbw_reset(td);
	pbw_reset(pd);
	pbw_u64(pd, F_PD_PID, pid);
	pbw_str(pd, F_PD_NAME, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
	pbw_u64(td, F_TD_UUID, PROC_UUID(pid));
	pbw_msg(td, F_TD_PROCESS, pd);
}

/* The stats of plane @pi as an instant "plane stats" on its process track (at @ns on @s). */
static int plane_stats(struct trace_pf_ctx *c, size_t pi, uint32_t pid, struct trace_pf_seq *s,
		       uint64_t ns)
{
	struct xs_rctx *rc = c->rc;
	const struct xs_plane *p = &rc->x->planes[pi];
	struct xs_render_arg ra = {&c->ev, true};
	int r;

	if (!p->n_stats)
		return 0;
	if ((r = xs_plane_enter(rc, pi)) < 0)
		return r;
	c->ev.len = 0;
	for (size_t i = 0; i < p->n_stats; i++) {
		/* each plane stat is its own XStat message */
		struct wire_cur *cu = &rc->md;
		uint64_t pos = cu->pos, end = cu->end;
		struct xs_statv sv;

		cu->pos = p->stats[i].off;
		cu->end = p->stats[i].off + p->stats[i].len;
		r = xs_stat_parse(cu, &sv);
		cu->pos = pos;
		cu->end = end;
		if (r < 0 || (r = xs_render_stat(rc, cu, &sv, &ra)) < 0)
			return r;
	}
	if ((r = c->ev.r) < 0)
		return r;
	pbw_reset(&c->te);
	pbw_u64(&c->te, F_TE_TYPE, TYPE_INSTANT);
	pbw_u64(&c->te, F_TE_TRACK, PROC_UUID(pid));
	pbw_str(&c->te, F_TE_NAME, "plane stats", 11);
	trace_pf_args_encode(c->A, c->ev.buf, c->ev.len, PF_INLINE, 0, 0, &c->te, NULL);
	if ((r = pbw_err(c)) < 0)
		return r;
	emit_event(c, s, ns, &c->te, NULL);
	return 0;
}

/*
 * Sequence PROC_SEQ: the process tracks, then each plane's stats at the
 * earliest line timestamp of the shown planes (known without reading
 * events, so tracks-only opens agree; one time keeps the sequence monotonic).
 */
static int processes(struct trace_pf_ctx *c, const struct trace_plane *tp, size_t n)
{
	const struct xprofs_xspace *x = c->rc->x;
	struct trace_pf_seq s = {0};
	xs_ps128 first = 0;
	int r;

	for (size_t i = 0; i < n; i++) {
		const struct xs_plane *p = &x->planes[tp[i].plane];

		for (size_t j = 0; j < p->n_lines; j++) {
			xs_ps128 t = (xs_ps128)x->lines[p->first_line + j].timestamp_ns * 1000;

			if ((i == 0 && j == 0) || t < first)
				first = t;
		}
		describe_process(c, p, tp[i].pid);
		if (i == 0) {
			seq_open(c, &s, PROC_UUID(tp[i].pid), &c->td);
			continue;
		}
		pbw_reset(&c->pk);
		pbw_u64(&c->pk, F_PK_SEQ, s.id);
		pbw_u64(&c->pk, F_PK_FLAGS, SEQ_NEEDS);
		pbw_msg(&c->pk, F_PK_TRACK, &c->td);
		emit(c->o, &c->pk);
	}
	if (c->rc->win && first < c->rc->win_from)
		first = c->rc->win_from;
	for (size_t i = 0; i < n; i++)
		if ((r = plane_stats(c, tp[i].plane, tp[i].pid, &s, to_ns(first))) < 0)
			return r;
	return 0;
}

/* Free @c (NULL is fine). */
static void ctx_free(struct trace_pf_ctx *c)
{
	if (!c)
		return;
	free(c->pl);
	for (int k = 0; c->dl && k < DL_KINDS; k++) {
		free(c->dl[k].ev);
		pbw_free(&c->dl[k].blob);
	}
	free(c->dl);
	pbw_free(&c->dte);
	xs_out_deinit(&c->dj);
	free(c->as);
	trace_pf_args_free(c->A);
	pbw_free(&c->pk);
	pbw_free(&c->te);
	pbw_free(&c->id);
	pbw_free(&c->td);
	pbw_free(&c->sub);
	pbw_free(&c->name);
	pbw_free(&c->evann);
	pbw_free(&c->ablob);
	xs_out_deinit(&c->ev);
	free(c);
}

/*
 * A context writing to @o on @rc: part @part of @parts (sequence ids, interning
 * ids and async track uuids of its own residue, so parts made on different
 * threads never share one), or the processes' sequence when @part is
 * SIZE_MAX. Caller frees *@out with ctx_free().
 */
static int ctx_new(struct xs_rctx *rc, struct xs_out *o, size_t part, size_t parts,
		   struct trace_pf_ctx **out)
{
	struct trace_pf_ctx *c = calloc(1, sizeof(*c));
	bool head = part == SIZE_MAX;
	int r;

	*out = NULL;
	if (!c)
		return -ENOMEM;
	c->rc = rc;
	c->o = o;
	c->next_seq = head ? PROC_SEQ : PROC_SEQ + 1 + (uint32_t)part;
	c->seq_step = head ? 1 : (uint32_t)parts;
	c->next_async = head ? 0 : (uint64_t)part * (ASYNC_TRACKS_MAX + 1);
	xs_out_init(&c->ev, NULL);
	xs_out_init(&c->dj, NULL);
	if (!(c->pl = calloc(1, sizeof(*c->pl))) || !(c->dl = calloc(DL_KINDS, sizeof(*c->dl)))) {
		ctx_free(c);
		return -ENOMEM;
	}
	if ((r = trace_pf_args_new(head ? 1 : part + 1, head ? 1 : parts, &c->A)) < 0) {
		ctx_free(c);
		return r;
	}
	*out = c;
	return 0;
}

/* What the planes' parts share. */
struct trace_pf_parts {
	const struct trace_plane *tp;
	size_t n;
};

/* A xs_part_fn (arg: struct trace_pf_parts): plane @i's lines, Steps, TPU derived lines and async tracks. */
static int plane_part(struct xs_rctx *rc, size_t i, struct xs_out *o, void *arg)
{
	const struct trace_pf_parts *P = arg;
	const struct trace_plane *tp = &P->tp[i];
	struct xprofs_xspace *x = rc->x;
	const struct xs_plane *p = &x->planes[tp->plane];
	struct trace_pf_ctx *c;
	int r;

	rc->md_ext = &trace_md_ext;
	if ((r = ctx_new(rc, o, i, P->n, &c)) < 0)
		return r;
	c->proc_uuid = PROC_UUID(tp->pid);
	for (size_t j = 0; j < p->n_lines; j++)
		if ((r = trace_pf_line(c, c->pl, tp->pid, p->first_line + j)) < 0)
			goto out;
	dline_start(&c->dl[DL_STEPS], c, NULL, tp->pid,
		    (uint64_t)(x->n_lines + 1 + tp->plane) << 8);
	if ((r = trace_derive_steps(rc, tp->plane, derived_emit, c)) < 0 ||
	    (r = dline_end(&c->dl[DL_STEPS])) < 0)
		goto out;
	/* a TensorCore plane's derived lines: ids past Steps' and every stream's */
	for (int k = 0; k < DL_COUNT; k++)
		dline_start(&c->dl[k], c, NULL, tp->pid,
			    ((uint64_t)(x->n_lines + 1 + x->n_planes + tp->plane) << 8) +
				    LEVELS_MAX * (uint64_t)(k + 1));
	/* its host-offload rows: two 256-id slots per plane past those */
	for (int k = DL_OFFLOAD; k < DL_KINDS; k++)
		dline_start(&c->dl[k], c, NULL, tp->pid,
			    ((uint64_t)(x->n_lines + 1 + 2 * x->n_planes + 2 * tp->plane) << 8) +
				    LEVELS_MAX * (uint64_t)(k - DL_OFFLOAD + 1));
	if ((r = trace_derive_tpu(rc, tp->plane, derived_emit, tpu_flush, c)) < 0)
		goto out;
	for (int k = 0; k < DL_KINDS; k++)
		if (k != DL_STEPS && (r = dline_end(&c->dl[k])) < 0)
			goto out;
	if ((r = async_flush(c)) < 0)
		goto out;
	r = pbw_err(c);
	if (!r)
		r = xs_out_flush(o, false);
out:
	ctx_free(c);
	return r;
}

int trace_view_pftrace(struct xs_rctx *rc, struct xs_out *o)
{
	struct trace_plane *tp = NULL;
	struct trace_pf_parts P;
	struct trace_pf_ctx *c = NULL;
	size_t n = 0;
	int r;

	rc->md_ext = &trace_md_ext;
	if ((r = trace_planes(rc->x, &tp, &n)) < 0)
		goto out;
	if ((r = ctx_new(rc, o, SIZE_MAX, n, &c)) < 0 || (r = processes(c, tp, n)) < 0 ||
	    (r = pbw_err(c)) < 0)
		goto out;
	/* the planes are independent parts: on several threads when the profile allows */
	P = (struct trace_pf_parts){.tp = tp, .n = n};
	r = xs_parts_run(rc, n, plane_part, &P, o);
	if (!r)
		r = xs_out_flush(o, false);
out:
	ctx_free(c);
	free(tp);
	return r;
}
