/*
 * offload.c - the host-offload rows of a TensorCore plane: each copy or
 * dynamic-slice start to host memory paired with its done, as one event on
 * the first row free at its start.
 *
 * Sources (openxla/xprof xprof/utils/host_offload_utils.cc):
 * HostOffloadEventProcessor::IsHostOffloadOpName(),
 * GetOffloadInstructionName(), ProcessHostOffloadOpEvent(); called from
 * DeriveLinesFromStats(): derive-tpu.c hands it each event of its walk.
 *
 * Design: starts wait in first-in-first-out queues by key (open addressing
 * by the key's hash); a done takes the oldest start of its key; the rows'
 * latest ends pick its row. The events go out through the derivation's emit
 * function, not through a line builder.
 *
 * Limits: at most OFF_PENDING_MAX starts wait (OFF_BYTES_MAX bytes of keys
 * and shapes), later ones are not paired; at most DER_OFFLOAD_ROWS rows (then
 * the last); starts left waiting at the end make nothing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "derived.h"

#define OFF_TID 8             /* kThreadIdHostOffloadOpStart - kThreadIdDerivedMin */
#define OFF_PENDING_MAX 65536 /* starts waiting for their done; past it, new ones are dropped */
#define OFF_BYTES_MAX ((size_t)16 << 20) /* and the bytes of their keys and shapes */

/* A start event waiting for its done: its begin and its metadata's shape_with_layout arg. */
struct off_start {
	xs_ps128 begin;
	char *shape; /* owned: "\"shape_with_layout\":..." or NULL */
	size_t shape_len;
};

/* The starts of one key waiting, oldest first: q[head, n). */
struct off_key {
	uint64_t hash; /* 0: free slot */
	char *key;     /* owned */
	size_t key_len;
	struct off_start *q;
	size_t head, n, cap;
};

struct der_offload {
	struct off_key *t; /* open addressing by key hash, a power of two slots */
	size_t cap, keys;
	size_t pending, bytes; /* starts waiting, and their keys' and shapes' bytes */
	size_t before_to;      /* of them, begun before the slice's window end (d->to) */
	xs_ps128 frontier[DER_OFFLOAD_ROWS]; /* each row's latest end */
	size_t rows;
	struct xs_out args; /* scratch: an event's args */
	char title[64];
};

struct der_offload *trace_offload_new(void)
{
	struct der_offload *o = calloc(1, sizeof(*o));

	if (o)
		xs_out_init(&o->args, NULL);
	return o;
}

void trace_offload_free(struct der_offload *o)
{
	if (!o)
		return;
	for (size_t i = 0; i < o->cap; i++) {
		struct off_key *k = &o->t[i];

		for (size_t j = k->head; j < k->n; j++)
			free(k->q[j].shape);
		free(k->q);
		free(k->key);
	}
	free(o->t);
	xs_out_deinit(&o->args);
	free(o);
}

/* The queue of key @s (@n bytes) in @o; made when @add (NULL past the bounds or out of memory). */
static struct off_key *offload_queue(struct der_offload *o, const char *s, size_t n, bool add)
{
	uint64_t h = xprofs_hash64(s, n) | 1;
	size_t i;

	if (add && (o->keys + 1) * 2 > o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 64;
		struct off_key *t = calloc(cap, sizeof(*t));

		if (!t)
			return NULL;
		for (size_t j = 0; j < o->cap; j++) {
			if (!o->t[j].hash)
				continue;
			for (i = o->t[j].hash & (cap - 1); t[i].hash; i = (i + 1) & (cap - 1))
				;
			t[i] = o->t[j];
		}
		free(o->t);
		o->t = t;
		o->cap = cap;
	}
	if (!o->cap)
		return NULL;
	for (i = h & (o->cap - 1); o->t[i].hash; i = (i + 1) & (o->cap - 1))
		if (o->t[i].hash == h && o->t[i].key_len == n && !memcmp(o->t[i].key, s, n))
			return &o->t[i];
	if (!add || !(o->t[i].key = malloc(n + 1)))
		return NULL;
	memcpy(o->t[i].key, s, n);
	o->t[i].key_len = n;
	o->t[i].hash = h;
	o->keys++;
	o->bytes += n;
	return &o->t[i];
}

/* IsHostOffloadOpName(): a copy/dynamic-slice start or done whose name holds the host memory space. */
static int offload_kind(const struct xs_evmd *m)
{
	static const char *const kw[] = {"copy-start",
					 "copy-done",
					 "dynamic-slice-start",
					 "dynamic-slice-done",
					 "dynamic-update-slice-start",
					 "dynamic-update-slice-done"};
	bool hit = false;

	/* the full name as JSON: escaping leaves "S(5)" (xla::Layout::kHostMemorySpace) alone */
	if (!m->name || !m->full_json || !memmem(m->full_json, m->full_json_len, "S(5)", 4))
		return 0;
	for (size_t i = 0; i < sizeof(kw) / sizeof(kw[0]) && !hit; i++)
		hit = memmem(m->name, m->name_len, kw[i], strlen(kw[i])) != NULL;
	if (!hit)
		return 0;
	if (memmem(m->name, m->name_len, "-start", 6))
		return 1;
	return memmem(m->name, m->name_len, "-done", 5) ? 2 : 0;
}

/*
 * GetOffloadInstructionName() of display name @n (@len bytes) into @b:
 * "offload-" + the name before "-start" (else "-done") + "." + the part
 * after its last '.' ("0" without one).
 */
static int offload_key(struct xprofs_buf *b, const char *n, size_t len)
{
	const char *dot = memrchr(n, '.', len), *st = memmem(n, len, "-start", 6);
	const char *dn = memmem(n, len, "-done", 5);
	size_t op = st ? (size_t)(st - n) : dn ? (size_t)(dn - n) : len;
	int r;

	xprofs_buf_reset(b);
	if ((r = xprofs_buf_adds(b, "offload-")) < 0 || (r = xprofs_buf_add(b, n, op)) < 0 ||
	    (r = xprofs_buf_adds(b, ".")) < 0)
		return r;
	return dot ? xprofs_buf_add(b, dot + 1, len - (size_t)(dot + 1 - n))
		   : xprofs_buf_adds(b, "0");
}

/* What offload_arg() keeps: the trace.json pair of one metadata stat, by name. */
struct off_arg {
	const char *name;
	struct xs_render_arg ra;
};

static int offload_arg(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s, void *arg)
{
	struct off_arg *a = arg;
	const struct xs_stmd *m;
	int r;

	if ((r = xs_md_stat(rc, s->md, &m)) < 0)
		return r;
	if (!xs_str_eq(m->name, m->name_len, a->name))
		return 0;
	return xs_render_stat(rc, c, s, &a->ra);
}

/* The "name":value pairs of event metadata @key's stats called @name, appended to @o. */
static int offload_md_arg(struct xs_rctx *rc, int64_t key, const char *name, struct xs_out *o)
{
	ssize_t k = xs_md_find(&rc->x->planes[rc->plane].ev, key);
	struct off_arg a = {name, {o, o->len == 0}};
	int r;

	if (k < 0)
		return 0;
	r = trace_md_entry_stats(rc, (size_t)k, offload_arg, &a);
	return r < 0 ? r : o->r;
}

/* Whether a start still waiting for its done began before the slice's end (its event may overlap). */
bool trace_offload_pending_before_to(const struct trace_derive *d)
{
	return d->off && d->off->before_to > 0;
}

/*
 * ProcessHostOffloadOpEvent(): a start waits (by key, first in first out);
 * a done takes the oldest start of its key and makes one event [start,
 * done's end] named by the key, on the row whose latest end is the
 * earliest at or before its start (a new row when none fits, at most
 * DER_OFFLOAD_ROWS: then the last), with its done's raw_bytes_accessed and
 * its start's shape_with_layout (metadata stats) as args.
 */
int trace_offload_event(struct xs_rctx *rc, struct trace_derive *d, const struct der_src *src,
			xs_ps128 begin, xs_ps128 end)
{
	struct der_offload *o = d->off;
	struct off_key *q;
	struct xs_evmd *m;
	struct off_start st;
	size_t row;
	int kind, r = 0;

	if ((r = xs_md_event(rc, src->ev.md, &m)) < 0)
		return r;
	if (!(kind = offload_kind(m)))
		return 0;
	if ((r = offload_key(&d->tmp, m->name, m->name_len)) < 0)
		return r;
	if (kind == 1) {
		if (o->pending >= OFF_PENDING_MAX || o->bytes + d->tmp.len > OFF_BYTES_MAX ||
		    !(q = offload_queue(o, d->tmp.data, d->tmp.len, true)))
			return 0; /* past the bounds: this start is not paired */
		o->args.len = 0;
		if ((r = offload_md_arg(rc, src->ev.md, "shape_with_layout", &o->args)) < 0)
			return r;
		if (q->head && q->head == q->n)
			q->head = q->n = 0;
		if ((r = xprofs_grow(&q->q, &q->cap, q->n, sizeof(*q->q), 4)) < 0)
			return r;
		st = (struct off_start){.begin = begin, .shape_len = o->args.len};
		if (o->args.len && !(st.shape = malloc(o->args.len)))
			return -ENOMEM;
		if (o->args.len)
			memcpy(st.shape, o->args.buf, o->args.len);
		q->q[q->n++] = st;
		o->pending++;
		o->bytes += st.shape_len;
		o->before_to += d->win && begin < d->to;
		return 0;
	}
	if (!(q = offload_queue(o, d->tmp.data, d->tmp.len, false)) || q->head == q->n)
		return 0; /* a done without a traced start */
	st = q->q[q->head++];
	o->pending--;
	o->bytes -= st.shape_len;
	o->before_to -= d->win && st.begin < d->to;
	begin = st.begin;
	if (end < begin)
		end = begin;
	/* the row with the earliest latest end at or before the start; ties: the later row */
	{
		xs_ps128 least = begin;
		bool fits = false;

		row = 0;
		for (size_t k = 0; k < o->rows; k++)
			if (o->frontier[k] <= least) {
				row = k;
				least = o->frontier[k];
				fits = true;
			}
		if (!fits) {
			if (o->rows < DER_OFFLOAD_ROWS)
				o->frontier[o->rows++] = end;
			row = o->rows - 1;
		}
	}
	if (o->frontier[row] < end)
		o->frontier[row] = end;
	/* the args: long_name (the new metadata has no name), then the event's stats in order */
	o->args.len = 0;
	if ((r = offload_md_arg(rc, src->ev.md, "raw_bytes_accessed", &o->args)) < 0)
		goto out;
	if (st.shape_len) {
		if (o->args.len)
			OUT_LIT(&o->args, ",");
		xs_out_add(&o->args, st.shape, st.shape_len);
	}
	if ((r = o->args.r) < 0)
		goto out;
	if (d->dry || (d->win && !(begin < d->to && (end > begin ? end : begin + 1) > d->from)))
		goto out; /* a slice keeps what overlaps its window */
	if (!trace_derive_lod_keep(d, DL_OFFLOAD + (int)row, 0, begin, end))
		goto out; /* and a level-of-detail trace what it tells apart */
	snprintf(o->title, sizeof(o->title), "Host Offload Ops row %zu", row);
	{
		struct trace_derived_ev e = {
			.kind = DL_OFFLOAD + (int)row,
			.tid = d->tid0 + OFF_TID + (uint32_t)row,
			.line_name = o->title,
			.line_name_len = strlen(o->title),
			.name = "",
			.name_len = 0,
			.disp = d->tmp.data,
			.disp_len = d->tmp.len,
			.begin = begin,
			.end = end,
			.args = o->args.buf,
			.args_len = o->args.len,
		};

		r = d->emit(d->arg, &e);
	}
out:
	free(st.shape);
	return r;
}

/*
 * Whether TensorCore plane @p (the current one) gets host-offload rows: it
 * has an event metadata IsHostOffloadOpName() takes, and no line of its own
 * with a row's id (kThreadIdHostOffloadOpStart..End).
 */
int trace_offload_wanted(struct xs_rctx *rc, const struct xs_plane *p, bool *out)
{
	const struct xs_mdix *ix = &p->ev;
	int r;

	*out = false;
	for (size_t j = 0; j < p->n_lines; j++) {
		int32_t id = (int32_t)rc->x->lines[p->first_line + j].id;

		if (id >= TID_DERIVED_MIN + OFF_TID &&
		    id < TID_DERIVED_MIN + OFF_TID + DER_OFFLOAD_ROWS)
			return 0;
	}
	for (size_t k = 0; k < ix->n && !*out; k++) {
		struct xs_evmd *m;

		if ((r = xs_md_event(rc, ix->md[k].key, &m)) < 0)
			return r;
		*out = offload_kind(m) != 0;
		xs_md_gc(rc);
	}
	return 0;
}
