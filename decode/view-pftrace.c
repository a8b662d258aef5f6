/*
 * view-pftrace.c - trace.pftrace: the profile as Perfetto's native protobuf
 * trace (a Trace message streamed packet by packet), with trace.json's event
 * set, names and process names (the rules are in trace-model.c).
 *
 * Design: packet sequence 1 carries one TrackDescriptor per process (plane).
 * Each shown line gets a packet sequence of its own (the usual producer
 * layout), starting with its thread TrackDescriptor (parent: the process
 * track) in a packet with SEQ_INCREMENTAL_STATE_CLEARED; so timestamps are
 * monotonic per sequence. An XSpace complete event is a SLICE_BEGIN at its
 * start and a SLICE_END at its end (ns). Events of a line are sorted by start
 * and nest; an event that overlaps the open slice without nesting goes to an
 * overflow track ("<line> (overlap N)", a child of the line's track), so
 * BEGIN/END stay balanced and nested per track. Ends are written lazily, in
 * time order across the line's tracks, before the next begin that follows
 * them. Counter lines get a counter track whose events are TYPE_COUNTER
 * with the first numeric stat as double_counter_value. Event names are
 * interned per sequence (InternedData.event_names, keyed by metadata id),
 * defined in the packet of their first use.
 *
 * Limits: times are whole ns (picoseconds are truncated); times before 0 or
 * past 2^64 ns are clamped; an event starting before the previous one of its
 * line is moved to that start (monotonic sequences). Each track keeps at
 * most STACK_MAX open slices and a line at most LEVELS_MAX overflow tracks;
 * an event that fits none is dropped. Names are written inline (not
 * interned past IID_SLOTS/2 per line, and step names always); args, flows
 * and async pairing are not written yet.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pb-writer.h"
#include "render-internal.h"

#define STACK_MAX 256
#define LEVELS_MAX 8
#define NAME_MAX_LEN 2048
#define PROC_SEQ 1u
#define IID_SLOTS 4096 /* interned names per line; more are written inline */

/* Perfetto field numbers (decode/proto/perfetto_trace.proto) */
enum {
	F_TRACE_PACKET = 1,
	F_PK_TS = 8,
	F_PK_SEQ = 10,
	F_PK_EVENT = 11,
	F_PK_INTERNED = 12,
	F_ID_EVENT_NAMES = 2,
	F_EN_IID = 1,
	F_EN_NAME = 2,
	F_PK_FLAGS = 13,
	F_PK_TRACK = 60,
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
};
enum { SEQ_CLEARED = 1, SEQ_NEEDS = 2 };
enum { TYPE_BEGIN = 1, TYPE_END = 2, TYPE_COUNTER = 4 };

/* One track of a line: its open slices' end times (innermost last). */
struct pf_track {
	uint64_t end[STACK_MAX];
	size_t n;
	bool described;
};

/* One line being written. */
struct pf_line {
	struct dec_out *o;
	const struct dec_line *l;
	uint32_t pid, tid, seq;
	uint64_t uuid; /* of level 0; level k is uuid + k */
	uint64_t proc_uuid;
	uint64_t last_ns;
	bool counters;
	struct pf_track lv[LEVELS_MAX];
	struct pbw pk, ev, sub; /* scratch: packet, track event / descriptor, nested */
	double cval;
	bool has_cval;
	struct dec_out *ev_stats; /* scratch: one event's shown stats (JSON) */
	uint64_t *iids;           /* interned names: metadata id + 1 per slot, 0 free */
	size_t n_iids;
	char name[NAME_MAX_LEN + 8]; /* an unescaped step name */
};

/* Write packet @pk as one Trace.packet record. */
static void emit(struct dec_out *o, const struct pbw *pk)
{
	struct pbw head = {.len = 0};

	pbw_tag(&head, F_TRACE_PACKET, 2);
	pbw_varint(&head, pk->len);
	dec_out_add(o, head.buf, head.len);
	dec_out_add(o, pk->buf, pk->len);
}

/* ps -> ns, clamped to [0, 2^64) */
static uint64_t to_ns(dec_ps128 ps)
{
	if (ps < 0)
		return 0;
	ps /= 1000;
	if (ps > (dec_ps128)UINT64_MAX)
		return UINT64_MAX;
	return (uint64_t)ps;
}

static size_t capped(size_t n)
{
	return n > NAME_MAX_LEN ? NAME_MAX_LEN : n;
}

/* The TrackDescriptor of level @k of line @pl. */
static void describe(struct pf_line *pl, size_t k)
{
	struct pbw *pk = &pl->pk, *td = &pl->ev, *th = &pl->sub;
	const struct dec_line *l = pl->l;
	const char *nm = l->display_name_len ? l->display_name : l->name;
	size_t nl = capped(l->display_name_len ? l->display_name_len : l->name_len);

	pk->len = td->len = th->len = 0;
	pk->overflow = td->overflow = th->overflow = false;
	pbw_u64(td, F_TD_UUID, pl->uuid + k);
	if (k == 0 && !pl->counters) {
		pbw_u64(td, F_TD_PARENT, pl->proc_uuid);
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
		pbw_u64(td, F_TD_PARENT, k == 0 ? pl->proc_uuid : pl->uuid);
		pbw_str(td, F_TD_NAME, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
		if (pl->counters)
			pbw_str(td, F_TD_COUNTER, "", 0);
	}
	pbw_u64(pk, F_PK_SEQ, pl->seq);
	pbw_u64(pk, F_PK_FLAGS, k == 0 ? SEQ_CLEARED : SEQ_NEEDS);
	pbw_msg(pk, F_PK_TRACK, td);
	emit(pl->o, pk);
	pl->lv[k].described = true;
}

/* A TrackEvent packet of @type at @ns on level @k, named by interned @iid (defined here
 * when @fresh) or else by @name (NULL: no name, for ends and counters). */
static void track_event(struct pf_line *pl, size_t k, unsigned type, uint64_t ns, const char *name,
			size_t name_len, uint64_t iid, bool fresh)
{
	struct pbw *pk = &pl->pk, *te = &pl->ev;

	if (!pl->lv[k].described)
		describe(pl, k);
	pk->len = te->len = 0;
	pk->overflow = te->overflow = false;
	pbw_u64(te, F_TE_TYPE, type);
	pbw_u64(te, F_TE_TRACK, pl->uuid + k);
	if (iid)
		pbw_u64(te, F_TE_NAME_IID, iid);
	else if (name)
		pbw_str(te, F_TE_NAME, name, capped(name_len));
	if (type == TYPE_COUNTER) {
		uint64_t bits;

		memcpy(&bits, &pl->cval, sizeof(bits));
		pbw_fixed64(te, F_TE_DCOUNTER, bits);
	}
	pbw_u64(pk, F_PK_TS, ns);
	pbw_u64(pk, F_PK_SEQ, pl->seq);
	pbw_u64(pk, F_PK_FLAGS, SEQ_NEEDS);
	pbw_msg(pk, F_PK_EVENT, te);
	if (iid && fresh) { /* InternedData { event_names { iid, name } } */
		struct pbw *en = &pl->sub;

		en->len = te->len = 0;
		en->overflow = te->overflow = false;
		pbw_u64(en, F_EN_IID, iid);
		pbw_str(en, F_EN_NAME, name, capped(name_len));
		pbw_msg(te, F_ID_EVENT_NAMES, en);
		pbw_msg(pk, F_PK_INTERNED, te);
	}
	emit(pl->o, pk);
}

/* Unescape JSON string @j (with its quotes) into @out (at most @cap - 1 bytes); its length. */
static size_t json_unescape(const char *j, size_t n, char *out, size_t cap)
{
	size_t k = 0;

	if (n >= 2 && j[0] == '"') {
		j++;
		n -= 2;
	}
	for (size_t i = 0; i < n && k + 4 < cap; i++) {
		char c = j[i];
		unsigned u = 0;

		if (c != '\\' || i + 1 >= n) {
			out[k++] = c;
			continue;
		}
		c = j[++i];
		switch (c) {
		case 'b':
			out[k++] = '\b';
			break;
		case 'f':
			out[k++] = '\f';
			break;
		case 'n':
			out[k++] = '\n';
			break;
		case 'r':
			out[k++] = '\r';
			break;
		case 't':
			out[k++] = '\t';
			break;
		case 'u':
			for (int d = 0; d < 4 && i + 1 < n; d++) {
				char h = j[++i];

				u = u * 16 + (unsigned)(h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10);
			}
			if (u >= 0xd800 && u < 0xdc00 && i + 6 < n && j[i + 1] == '\\' &&
			    j[i + 2] == 'u') {
				unsigned lo = 0;

				for (int d = 0; d < 4; d++) {
					char h = j[i + 3 + d];

					lo = lo * 16 +
					     (unsigned)(h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10);
				}
				if (lo >= 0xdc00 && lo < 0xe000) {
					u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
					i += 6;
				}
			}
			if (u < 0x80) {
				out[k++] = (char)u;
			} else if (u < 0x800) {
				out[k++] = (char)(0xc0 | (u >> 6));
				out[k++] = (char)(0x80 | (u & 0x3f));
			} else if (u < 0x10000) {
				out[k++] = (char)(0xe0 | (u >> 12));
				out[k++] = (char)(0x80 | ((u >> 6) & 0x3f));
				out[k++] = (char)(0x80 | (u & 0x3f));
			} else {
				out[k++] = (char)(0xf0 | (u >> 18));
				out[k++] = (char)(0x80 | ((u >> 12) & 0x3f));
				out[k++] = (char)(0x80 | ((u >> 6) & 0x3f));
				out[k++] = (char)(0x80 | (u & 0x3f));
			}
			break;
		default:
			out[k++] = c;
			break;
		}
	}
	out[k] = '\0';
	return k;
}

/* The interned-name id of metadata @md on this line: *@fresh when new; 0 when the table is full. */
static uint64_t intern(struct pf_line *pl, int64_t md, bool *fresh)
{
	uint64_t key = (uint64_t)md + 1, h = key * 0x9e3779b97f4a7c15ull;

	*fresh = false;
	if (!key)
		return 0;
	for (size_t i = 0; i < IID_SLOTS; i++) {
		size_t at = (h + i) & (IID_SLOTS - 1);

		if (pl->iids[at] == key)
			return at + 1;
		if (!pl->iids[at]) {
			if (pl->n_iids >= IID_SLOTS / 2)
				return 0;
			pl->iids[at] = key;
			pl->n_iids++;
			*fresh = true;
			return at + 1;
		}
	}
	return 0;
}

/* Write the ends, in time order across levels, of slices ending at or before @ns. */
static void close_until(struct pf_line *pl, uint64_t ns)
{
	for (;;) {
		size_t best = LEVELS_MAX;

		for (size_t k = 0; k < LEVELS_MAX; k++) {
			struct pf_track *t = &pl->lv[k];

			if (t->n && t->end[t->n - 1] <= ns &&
			    (best == LEVELS_MAX ||
			     t->end[t->n - 1] < pl->lv[best].end[pl->lv[best].n - 1]))
				best = k;
		}
		if (best == LEVELS_MAX)
			return;
		track_event(pl, best, TYPE_END, pl->lv[best].end[--pl->lv[best].n], NULL, 0, 0,
			    false);
	}
}

/* A dec_stat_fn keeping the first numeric stat (counter value). */
static int counter_stat(struct dec_rctx *rc, struct dec_cur *c, const struct dec_statv *s,
			void *arg)
{
	struct pf_line *pl = arg;

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

/* A dec_event_fn writing one event of a line (arg: struct pf_line). */
static int pf_event(struct dec_rctx *rc, const struct dec_event *e, struct dec_evmd *m, void *arg)
{
	struct pf_line *pl = arg;
	const struct dec_trace_md *t = m->trace;
	dec_ps128 ts = (dec_ps128)pl->l->timestamp_ns * 1000 + (e->has_num ? 0 : e->offset_ps);
	int64_t dur = e->duration_ps > 0 ? e->duration_ps : 1;
	uint64_t b, en, iid = 0;
	const char *name = NULL;
	size_t name_len = 0;
	bool fresh = false;
	int r;

	if (t && t->internal)
		return 0;
	b = to_ns(ts);
	en = to_ns(ts + dur);
	if (b < pl->last_ns)
		b = pl->last_ns;
	if (en < b)
		en = b;
	pl->last_ns = b;
	if (pl->counters) {
		pl->has_cval = false;
		pl->cval = 0;
		if (e->has_stats &&
		    (r = dec_walk_stats(rc, &rc->ev, e->stats_off, e->off + e->len - e->stats_off,
					XEVENT_F_STATS, counter_stat, pl)) < 0)
			return r;
		track_event(pl, 0, TYPE_COUNTER, b, NULL, 0, 0, false);
		return dec_out_flush(pl->o, false);
	}
	/* the name: step_name (the event's stat, else its metadata's), else interned */
	if (e->has_stats) {
		struct dec_trace_acc a = {0};

		pl->ev_stats->len = 0;
		a.o = pl->ev_stats;
		a.first = true;
		if ((r = dec_walk_stats(rc, &rc->ev, e->stats_off, e->off + e->len - e->stats_off,
					XEVENT_F_STATS, dec_trace_stat, &a)) < 0)
			return r;
		if ((r = pl->ev_stats->r) < 0)
			return r;
		if (a.has_step)
			name_len = json_unescape(pl->ev_stats->buf + a.step_off, a.step_len,
						 pl->name, sizeof(pl->name));
	}
	if (!name_len && t && t->step_len)
		name_len = json_unescape(t->args + t->step_off, t->step_len, pl->name,
					 sizeof(pl->name));
	if (name_len) {
		name = pl->name;
	} else {
		name = m->name;
		name_len = m->name_len;
		iid = intern(pl, e->md, &fresh);
	}
	close_until(pl, b);
	for (size_t k = 0; k < LEVELS_MAX; k++) {
		struct pf_track *tr = &pl->lv[k];

		if (tr->n == STACK_MAX || (tr->n && tr->end[tr->n - 1] < en))
			continue; /* full, or a partial overlap: try the next track */
		track_event(pl, k, TYPE_BEGIN, b, name, name_len, iid, fresh);
		tr->end[tr->n++] = en;
		break;
	}
	return dec_out_flush(pl->o, false);
}

/* The events of line @li of process @pid (@proc_uuid) as sequence @seq. */
static int pf_line(struct dec_rctx *rc, struct dec_out *o, struct pf_line *pl, uint32_t pid,
		   uint64_t proc_uuid, uint32_t seq, size_t li)
{
	enum dec_tline kind;
	int r;

	uint64_t *iids = pl->iids;
	struct dec_out *ev = pl->ev_stats;

	memset(pl, 0, sizeof(*pl));
	memset(iids, 0, IID_SLOTS * sizeof(*iids));
	pl->iids = iids;
	pl->ev_stats = ev;
	pl->o = o;
	pl->l = &rc->x->lines[li];
	kind = dec_trace_line_kind(pl->l);
	if (kind == TL_SKIP)
		return 0;
	pl->counters = kind == TL_COUNTERS;
	pl->pid = pid;
	pl->tid = dec_trace_tid(pl->l);
	pl->seq = seq;
	pl->proc_uuid = proc_uuid;
	pl->uuid = ((uint64_t)(li + 1) << 8);
	if ((r = dec_line_each(rc, li, NULL, pf_event, pl)) < 0)
		return r;
	close_until(pl, UINT64_MAX);
	return dec_out_flush(o, false);
}

/* The process TrackDescriptor of plane @p as process @pid, on sequence PROC_SEQ. */
static void pf_process(struct dec_rctx *rc, struct dec_out *o, struct pf_line *pl,
		       const struct dec_plane *p, uint32_t pid, bool first)
{
	struct pbw *pk = &pl->pk, *td = &pl->ev, *pd = &pl->sub;
	char buf[NAME_MAX_LEN + 1];
	int n;

	if (rc->host && *rc->host) /* "<host> <plane name>", as trace.json */
		n = snprintf(buf, sizeof(buf), "%s %.*s", rc->host, (int)capped(p->name_len),
			     p->name);
	else
		n = snprintf(buf, sizeof(buf), "%.*s", (int)capped(p->name_len), p->name);
	if (n < 0)
		n = 0;
	pk->len = td->len = pd->len = 0;
	pk->overflow = td->overflow = pd->overflow = false;
	pbw_u64(pd, F_PD_PID, pid);
	pbw_str(pd, F_PD_NAME, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
	pbw_u64(td, F_TD_UUID, (1ull << 63) | pid);
	pbw_msg(td, F_TD_PROCESS, pd);
	pbw_u64(pk, F_PK_SEQ, PROC_SEQ);
	pbw_u64(pk, F_PK_FLAGS, first ? SEQ_CLEARED : SEQ_NEEDS);
	pbw_msg(pk, F_PK_TRACK, td);
	emit(o, pk);
}

int dec_view_pftrace(struct dec_rctx *rc, struct dec_out *o)
{
	struct xprofs_xspace *x = rc->x;
	struct dec_trace_plane *tp = NULL;
	struct pf_line *pl;
	struct dec_out ev;
	uint32_t seq = PROC_SEQ + 1;
	size_t n = 0;
	int r;

	rc->trace = true;
	dec_out_init(&ev, NULL);
	if (!(pl = calloc(1, sizeof(*pl))))
		return -ENOMEM;
	pl->ev_stats = &ev;
	if (!(pl->iids = calloc(IID_SLOTS, sizeof(*pl->iids)))) {
		r = -ENOMEM;
		goto out;
	}
	if ((r = dec_trace_planes(x, &tp, &n)) < 0)
		goto out;
	for (size_t i = 0; i < n; i++)
		pf_process(rc, o, pl, &x->planes[tp[i].plane], tp[i].pid, i == 0);
	for (size_t i = 0; i < n; i++) {
		const struct dec_plane *p = &x->planes[tp[i].plane];

		for (size_t j = 0; j < p->n_lines; j++)
			if ((r = pf_line(rc, o, pl, tp[i].pid, (1ull << 63) | tp[i].pid, seq++,
					 p->first_line + j)) < 0)
				goto out;
	}
	r = dec_out_flush(o, false);
out:
	free(tp);
	free(pl->iids);
	free(pl);
	dec_out_deinit(&ev);
	return r;
}
