/*
 * pftrace-derived.c - trace.pftrace's derived lines (docs/trace.md: a GPU
 * stream's lines, a plane's Steps, a TensorCore plane's lines and
 * host-offload rows): each a thread track with a sequence of its own, fed by
 * the derivations (derived.h) through trace_pf_derived_emit().
 *
 * Design: a derivation hands out an event when it closes, a parent after its
 * children, so events wait in their line (struct trace_pf_dline: times, with
 * names, long_names and args in one blob) and are written in start order
 * once no event still open on the line can start before them
 * (trace_pf_derived_flush(), called after each event the derivation reads).
 * Names and long_names repeat (one per op or scope), so they are interned on
 * the sequence; args are written as trace.json's derived_event() writes
 * them.
 *
 * Limits: at most DLINE_WAIT_MAX waiting events or DLINE_BLOB_MAX bytes of
 * them per line; past that they are written as they are (start order is then
 * not guaranteed, and the monotonic rule of pftrace-tracks.c applies). Line
 * names are cut at 255 bytes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "derived.h"
#include "pftrace.h"

/* Past these, waiting events are written as they are (start order then not guaranteed). */
#define DLINE_WAIT_MAX 65536
#define DLINE_BLOB_MAX ((size_t)64 << 20)

/* Make @d the empty derived line of source line @l (NULL: a plane's Steps) of process @pid. */
void trace_pf_dline_start(struct trace_pf_dline *d, struct trace_pf_ctx *c, const struct xs_line *l,
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

		if ((k = trace_pf_place(&d->pl, &b, &en)) == LEVELS_MAX)
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
		trace_pf_emit_event(c, &d->pl.s, b, te, &c->id);
		d->pl.lv[k].end[d->pl.lv[k].n++] = en;
	}
	memmove(d->ev, d->ev + i, (d->n - i) * sizeof(*d->ev));
	d->n -= i;
	if (!d->n)
		pbw_reset(&d->blob);
	return trace_pf_err(c) ? trace_pf_err(c) : xs_out_flush(c->o, false);
}

/* Write what @d still holds and close its slices. */
int trace_pf_dline_end(struct trace_pf_dline *d)
{
	int r = dline_write(d, UINT64_MAX);

	trace_pf_close_until(&d->pl, UINT64_MAX);
	return r ? r : xs_out_flush(d->pl.c->o, false);
}

/* Write the waiting events of stream derivation @dv's lines that nothing open precedes. */
int trace_pf_derived_flush(struct trace_pf_ctx *c, const struct trace_derive *dv)
{
	int r;

	for (int k = 0; k < DL_COUNT; k++) {
		struct trace_pf_dline *d = &c->dl[k];
		uint64_t until = UINT64_MAX;

		if (!d->n)
			continue;
		for (size_t i = 0; i < DER_LEVELS; i++)
			if (dv->lines[k].lv[i].open &&
			    trace_pf_ns(dv->lines[k].lv[i].begin) < until)
				until = trace_pf_ns(dv->lines[k].lv[i].begin);
		if ((r = dline_write(d, until)) < 0)
			return r;
	}
	return 0;
}

/* trace_derive_tpu()'s after-each-event hook: write what nothing open precedes. */
int trace_pf_tpu_flush(void *arg, const struct trace_derive *dv)
{
	return trace_pf_derived_flush(arg, dv);
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
int trace_pf_derived_emit(void *arg, const struct trace_derived_ev *e)
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
	v->b = trace_pf_ns(e->begin);
	v->en = trace_pf_ns(e->begin + (dur > INT64_MAX ? INT64_MAX : dur));
	v->group = e->group;
	v->has_group = e->has_group;
	v->has_ln = e->disp_len != 0;
	v->off = d->blob.len;
	v->order = d->order++;
	d->sorted = false;
	v->name_len = e->disp_len ? e->disp_len : e->name_len;
	pbw_bytes(&d->blob, e->disp_len ? e->disp : e->name, v->name_len);
	v->ln_len = ln->len;
	pbw_bytes(&d->blob, ln->buf, ln->len);
	v->args_len = e->args_len;
	pbw_bytes(&d->blob, e->args, e->args_len);
	if ((r = trace_pf_err(c) ? trace_pf_err(c) : d->blob.overflow ? -E2BIG : 0) < 0)
		return r;
	/* a host-offload row's events come in start order (each starts after its row's last end) */
	return e->kind >= DL_OFFLOAD ? dline_write(d, UINT64_MAX) : 0;
}
