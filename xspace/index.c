/*
 * index.c - the one structural pass of xprofs_xspace_open(): it indexes an
 * XSpace (planes, lines, metadata maps, plane stats) without reading event
 * bodies.
 *
 * Design: the pass walks XSpace -> XPlane -> XLine -> XEvent headers with
 * the wire walker, skipping every stat body and every metadata value (only
 * the map key and the value's location are kept). Per line it counts events
 * and records first start / last end; per plane it records the metadata
 * maps as key-sorted (key, offset, length) arrays, deduplicated with
 * protobuf's last-wins rule. The top level is walked first (it only notes
 * where each plane lies); the planes are then indexed by up to @threads
 * threads, each taking the next plane in file order with its own cursor,
 * and merged in file order, so the result and the reported error (the
 * first failing plane's) do not depend on the thread count. tracks_only
 * skips the event headers.
 *
 * Limits: memory is O(planes + lines + metadata entries), capped at
 * XS_INDEX_MAX entries, XS_PLANES_MAX planes and XS_LINES_MAX lines.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xprofs/xspace.h"

/* One plane being indexed (by whichever thread takes it) and its lines. */
struct pslot {
	struct xs_span span;   /* the XPlane message */
	struct xs_plane p;     /* moved into the xspace on success */
	struct xs_line *lines; /* owned until the merge */
	size_t n_lines, lines_cap;
	struct xprofs_buf err; /* this plane's failure reason */
	int r;
};

/* What the indexing threads of one open() share. */
struct open_ctx {
	const struct xprofs_reader *r; /* borrowed */
	struct pslot *slots;           /* owned */
	size_t n_slots, slots_cap;
	atomic_size_t entries; /* index entries so far, all threads */
	atomic_size_t lines;   /* lines so far, all threads */
	atomic_size_t next;    /* next slot to take */
	atomic_bool failed;    /* stop taking planes */
	bool tracks_only;      /* skip event headers */
};

struct ix { /* one indexing thread's state */
	struct open_ctx *oc;
	struct wire_cur c;
};

static int ix_count(struct ix *ix, size_t n)
{
	size_t old = atomic_fetch_add(&ix->oc->entries, n);

	if (old > XS_INDEX_MAX || n > XS_INDEX_MAX - old)
		return wire_fail(&ix->c, "profile index would exceed %zu entries", XS_INDEX_MAX);
	return 0;
}

/* Read a name at the cursor (cut to XS_NAME_MAX). Caller owns *out. */
static int ix_string(struct ix *ix, char **out, size_t *out_len)
{
	return wire_string(&ix->c, XS_NAME_MAX, out, out_len);
}

static int ix_strs_add(struct ix *ix, struct xs_strs *st, int wt, uint32_t field)
{
	size_t cap = st->n;
	char **s;
	size_t *l;
	int r;

	if ((r = wire_expect(&ix->c, wt, WT_LEN, "XSpace", field)) < 0)
		return r;
	if ((r = ix_count(ix, 1)) < 0)
		return r;
	s = realloc(st->s, (cap + 1) * sizeof(*s));
	if (!s)
		return -ENOMEM;
	st->s = s;
	l = realloc(st->len, (cap + 1) * sizeof(*l));
	if (!l)
		return -ENOMEM;
	st->len = l;
	st->s[st->n] = NULL;
	if ((r = ix_string(ix, &st->s[st->n], &st->len[st->n])) < 0)
		return r;
	st->n++;
	return 0;
}

/* What the index keeps of a line's events: count, first start, last end (line-relative). */
struct line_acc {
	struct xs_line *l;
	int64_t first, last;
	int64_t prev, max_end; /* the previous event's start; the latest end so far (slices) */
	size_t ckpt_cap;
};

/* A checkpoint before event number l->events (at file offset @off): the slices' seek map. */
static int line_ckpt(struct ix *ix, struct line_acc *a, uint64_t off)
{
	struct xs_line *l = a->l;
	int r;

	if ((r = ix_count(ix, 1)) < 0 ||
	    (r = xprofs_grow(&l->ckpt, &a->ckpt_cap, l->n_ckpt, sizeof(*l->ckpt), 16)) < 0)
		return r;
	l->ckpt[l->n_ckpt].off = off;
	l->ckpt[l->n_ckpt++].max_end = a->max_end;
	return 0;
}

/* Note event @h, whose field starts at file offset @off, into @a. */
static inline int line_note(struct ix *ix, struct line_acc *a, const struct xs_evhdr *h,
			    uint64_t off)
{
	int64_t end = xs_sat_add(h->offset_ps, h->duration_ps);
	int r;

	if (a->l->has_events && !(a->l->events % XS_CKPT_EVERY) && (r = line_ckpt(ix, a, off)) < 0)
		return r;
	if (!a->l->has_events || h->offset_ps < a->first)
		a->first = h->offset_ps;
	if (!a->l->has_events || end > a->last)
		a->last = end;
	if (a->l->has_events && h->offset_ps < a->prev)
		a->l->unsorted = true;
	if (h->odd) /* num_occurrences, field 5, is one of the odd fields */
		a->l->plain = false;
	a->prev = h->offset_ps;
	end = xs_event_end_rel(h->offset_ps, h->duration_ps);
	if (!a->l->has_events || end > a->max_end)
		a->max_end = end;
	a->l->has_events = true;
	a->l->events++;
	return 0;
}

/*
 * The hot loop: step over every event lying wholly in the cursor's window
 * in one go, noting each into @a unless tracks_only (then events are only
 * read when rendered).
 */
static int ix_window_events(struct ix *ix, struct line_acc *a)
{
	struct wire_cur *c = &ix->c;
	const uint8_t *bp = NULL, *bq, *be;
	size_t avail = wire_avail(c, &bp);
	struct xs_evhdr h;

	if (avail < 2)
		return 0;
	be = bp + avail;
	bq = bp;
	while (be - bq >= 2 && bq[0] == TAG_XLINE_EVENT) {
		const uint8_t *q = bq + 1;
		uint64_t el;

		if (wire_rd_varint(&q, be, &el) < 0 || el > (uint64_t)(be - q))
			break;
		if (!ix->oc->tracks_only) {
			if (xs_parse_event(q, q + el, &h) < 0) {
				c->pos += (uint64_t)(bq - bp);
				return wire_fail(c, "malformed XEvent at offset %" PRIu64, c->pos);
			}
			int r = line_note(ix, a, &h, c->pos + (uint64_t)(bq - bp));

			if (r < 0)
				return r;
		}
		bq = q + el;
	}
	c->pos += (uint64_t)(bq - bp);
	return 0;
}

/* One event outside the window (field XLINE_F_EVENTS, wire type @wt): the general path. */
static int ix_event(struct ix *ix, struct line_acc *a, int wt, uint64_t tag_off)
{
	struct wire_cur *c = &ix->c;
	uint64_t elen, eend;
	struct xs_evhdr h;
	const uint8_t *ep;
	int r;

	if ((r = wire_len_field(c, wt, "XLine", XLINE_F_EVENTS, &elen)) < 0)
		return r;
	if (ix->oc->tracks_only) { /* events are read when rendered */
		c->pos += elen;
		return 0;
	}
	eend = c->pos + elen;
	if ((r = wire_at(c, c->pos, (size_t)elen, &ep)) < 0)
		return r;
	if (xs_parse_event(ep, ep + elen, &h) < 0)
		return wire_fail(c, "malformed XEvent at offset %" PRIu64, c->pos);
	c->pos = eend;
	return line_note(ix, a, &h, tag_off);
}

/* One XLine field other than the events. */
static int ix_line_field(struct ix *ix, struct xs_line *l, uint32_t f, int wt)
{
	struct wire_cur *c = &ix->c;
	uint64_t v;
	int r;

	switch (f) {
	case XLINE_F_ID:
	case XLINE_F_TIMESTAMP_NS:
	case XLINE_F_DURATION_PS:
	case XLINE_F_DISPLAY_ID:
		if ((r = wire_varint_field(c, wt, "XLine", f, &v)) < 0)
			return r;
		if (f == XLINE_F_ID)
			l->id = (int64_t)v;
		else if (f == XLINE_F_TIMESTAMP_NS)
			l->timestamp_ns = (int64_t)v;
		else if (f == XLINE_F_DURATION_PS)
			l->duration_ps = (int64_t)v;
		else
			l->display_id = (int64_t)v;
		return 0;
	case XLINE_F_NAME:
	case XLINE_F_DISPLAY_NAME:
		if ((r = wire_expect(c, wt, WT_LEN, "XLine", f)) < 0)
			return r;
		return f == XLINE_F_NAME ? ix_string(ix, &l->name, &l->name_len)
					 : ix_string(ix, &l->display_name, &l->display_name_len);
	default:
		return wire_skip(c, wt);
	}
}

/* Index the XLine of @len bytes at the cursor into a new line of @ps. */
static int ix_line(struct ix *ix, struct pslot *ps, uint64_t len)
{
	struct wire_cur *c = &ix->c;
	uint64_t end = c->pos + len, saved_end = c->end;
	struct line_acc a = {0};
	uint64_t tag_off;
	uint32_t f;
	int wt, r;

	if (atomic_fetch_add(&ix->oc->lines, 1) >= XS_LINES_MAX)
		return wire_fail(c, "profile has more than %zu lines", XS_LINES_MAX);
	if ((r = ix_count(ix, 1)) < 0 ||
	    (r = xprofs_grow(&ps->lines, &ps->lines_cap, ps->n_lines, sizeof(*ps->lines), 8)) < 0)
		return r;
	a.l = &ps->lines[ps->n_lines++];
	memset(a.l, 0, sizeof(*a.l));
	a.l->msg.off = c->pos;
	a.l->msg.len = len;
	a.l->plain = !ix->oc->tracks_only; /* until an event says otherwise (line_note()) */
	c->end = end;
	while (c->pos < end) {
		if ((r = ix_window_events(ix, &a)) < 0)
			return r;
		if (c->pos >= end)
			break;
		tag_off = c->pos;
		if ((r = wire_tag(c, &f, &wt)) < 0)
			return r;
		r = f == XLINE_F_EVENTS ? ix_event(ix, &a, wt, tag_off)
					: ix_line_field(ix, a.l, f, wt);
		if (r < 0)
			return r;
	}
	c->end = saved_end;
	if (a.l->has_events) {
		int64_t base = xs_line_base_ps(a.l->timestamp_ns);

		a.l->first_ps = xs_sat_add(base, a.first);
		a.l->last_ps = xs_sat_add(base, a.last);
	}
	return 0;
}

static int md_cmp(const void *a, const void *b)
{
	const struct xs_md *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	/* stable on file order so that the later entry (last wins) sorts last */
	return x->off < y->off ? -1 : x->off > y->off;
}

/*
 * Sort by key, keep the last entry of each key (protobuf map semantics) and
 * build the dense key table when the keys span at most 4n + 1024 values.
 */
static int md_finish(struct xs_mdix *ix)
{
	struct xs_md *md = ix->md;
	size_t o = 0, n = ix->n;
	uint64_t span;

	if (n == 0)
		return 0;
	qsort(md, n, sizeof(*md), md_cmp);
	for (size_t i = 0; i < n; i++) {
		if (o > 0 && md[o - 1].key == md[i].key)
			md[o - 1] = md[i];
		else
			md[o++] = md[i];
	}
	ix->n = o;
	span = (uint64_t)md[o - 1].key - (uint64_t)md[0].key + 1;
	if (span != 0 && span <= 4 * (uint64_t)o + 1024 && o <= INT32_MAX) {
		ix->dense = malloc(span * sizeof(*ix->dense));
		if (!ix->dense)
			return -ENOMEM;
		memset(ix->dense, 0xff, span * sizeof(*ix->dense));
		for (size_t i = 0; i < o; i++)
			ix->dense[(uint64_t)md[i].key - (uint64_t)md[0].key] = (int32_t)i;
		ix->base = md[0].key;
		ix->span = span;
	}
	return 0;
}

/* Stat metadata values longer than this are not looked at for their name (never seen). */
#define IX_STMD_PEEK_MAX 4096

/*
 * Whether the XStatMetadata message [p, e) is named "group_id" (its last name
 * field, as protobuf reads a repeated singular field). A malformed message is
 * not: the render reports it when it reads the entry.
 */
static bool stmd_is_group_id(const uint8_t *p, const uint8_t *e)
{
	static const char want[] = "group_id";
	bool is = false;

	while (p < e) {
		const uint8_t *d = NULL;
		uint64_t v;
		uint32_t f;
		int wt;

		if (wire_rd_field(&p, e, &f, &wt, &v, &d) < 0)
			return false;
		if (f == XSTMD_F_NAME && wt == WT_LEN)
			is = v == sizeof(want) - 1 && !memcmp(d, want, v);
	}
	return is;
}

/* One map entry (a key, and a value message whose location is kept). */
static int ix_map_entry(struct ix *ix, uint64_t len, struct xs_md **arr, size_t *n, size_t *cap)
{
	struct wire_cur *c = &ix->c;
	uint64_t end = c->pos + len, saved_end = c->end, vlen;
	struct xs_md e = {0, 0, 0};
	uint32_t f;
	int wt, r;

	if ((r = ix_count(ix, 1)) < 0 || (r = xprofs_grow(arr, cap, *n, sizeof(**arr), 8)) < 0)
		return r;
	e.off = end; /* absent value: an empty message */
	c->end = end;
	while (c->pos < end) {
		if ((r = wire_tag(c, &f, &wt)) < 0)
			return r;
		if (f == MAPENTRY_F_KEY) {
			if ((r = wire_i64_field(c, wt, "map entry", f, &e.key)) < 0)
				return r;
		} else if (f == MAPENTRY_F_VALUE) {
			if ((r = wire_len_field(c, wt, "map entry", f, &vlen)) < 0)
				return r;
			e.off = c->pos;
			e.len = vlen;
			c->pos += vlen;
		} else if ((r = wire_skip(c, wt)) < 0) {
			return r;
		}
	}
	c->end = saved_end;
	(*arr)[(*n)++] = e;
	return 0;
}

/* Index the XPlane of @ps (its span) with the thread's cursor. */
static int ix_plane(struct ix *ix, struct pslot *ps)
{
	struct wire_cur *c = &ix->c;
	uint64_t end = ps->span.off + ps->span.len, sub;
	size_t ev_cap = 0, st_cap = 0, stats_cap = 0;
	struct xs_plane *p = &ps->p;
	uint32_t f;
	int wt, r;

	p->msg = ps->span;
	c->pos = ps->span.off;
	c->end = end;
	while (c->pos < end) {
		if ((r = wire_tag(c, &f, &wt)) < 0)
			return r;
		if (f == XPLANE_F_ID) {
			if ((r = wire_i64_field(c, wt, "XPlane", f, &p->id)) < 0)
				return r;
			continue;
		}
		if (f < XPLANE_F_NAME || f > XPLANE_F_STATS) {
			if ((r = wire_skip(c, wt)) < 0)
				return r;
			continue;
		}
		if ((r = wire_expect(c, wt, WT_LEN, "XPlane", f)) < 0)
			return r;
		if (f == XPLANE_F_NAME) {
			if ((r = ix_string(ix, &p->name, &p->name_len)) < 0)
				return r;
			continue;
		}
		if ((r = wire_len(c, &sub)) < 0)
			return r;
		switch (f) {
		case XPLANE_F_LINES:
			r = ix_line(ix, ps, sub);
			p->n_lines++;
			break;
		case XPLANE_F_EVENT_METADATA:
			r = ix_map_entry(ix, sub, &p->ev.md, &p->ev.n, &ev_cap);
			break;
		case XPLANE_F_STAT_METADATA:
			r = ix_map_entry(ix, sub, &p->st.md, &p->st.n, &st_cap);
			/* an XStatMetadata is an id, a name and a description: a few bytes */
			if (r == 0 && !p->group_ids &&
			    p->st.md[p->st.n - 1].len <= IX_STMD_PEEK_MAX) {
				const struct xs_md *m = &p->st.md[p->st.n - 1];
				const uint8_t *v;

				if ((r = wire_at(c, m->off, m->len, &v)) == 0)
					p->group_ids = stmd_is_group_id(v, v + m->len);
			}
			break;
		case XPLANE_F_STATS:
			if ((r = ix_count(ix, 1)) < 0 ||
			    (r = xprofs_grow(&p->stats, &stats_cap, p->n_stats, sizeof(*p->stats),
					     8)) < 0)
				break;
			p->stats[p->n_stats++] = (struct xs_span){c->pos, sub};
			break;
		}
		if (r < 0)
			return r;
		c->pos = c->pos > end ? end : c->pos;
		if (f == XPLANE_F_STATS)
			c->pos += sub;
	}
	if (!p->name && !(p->name = strdup("")))
		return -ENOMEM;
	if ((r = md_finish(&p->ev)) < 0 || (r = md_finish(&p->st)) < 0)
		return r;
	for (int k = 0; k < 2; k++) {
		const struct xs_mdix *m = k ? &p->st : &p->ev;

		for (size_t i = 0; i < m->n; i++) {
			if (m->md[i].len == 0)
				continue;
			if (p->md_hi == 0 || m->md[i].off < p->md_lo)
				p->md_lo = m->md[i].off;
			if (m->md[i].off + m->md[i].len > p->md_hi)
				p->md_hi = m->md[i].off + m->md[i].len;
		}
	}
	for (size_t i = 0; i < ps->n_lines; i++) {
		struct xs_line *l = &ps->lines[i];

		if (!l->has_events)
			continue;
		p->events += l->events;
		if (!p->has_events || l->first_ps < p->first_ps)
			p->first_ps = l->first_ps;
		if (!p->has_events || l->last_ps > p->last_ps)
			p->last_ps = l->last_ps;
		p->has_events = true;
	}
	return 0;
}

/* The top level: strings, and where each plane lies (planes come later). */
static int ix_space(struct ix *ix, struct xprofs_xspace *x)
{
	struct open_ctx *oc = ix->oc;
	struct wire_cur *c = &ix->c;
	struct pslot *ps;
	uint64_t len;
	uint32_t f;
	int wt, r;

	while (c->pos < c->end) {
		if ((r = wire_tag(c, &f, &wt)) < 0)
			return r;
		switch (f) {
		case XSPACE_F_PLANES:
			if (oc->n_slots >= XS_PLANES_MAX)
				return wire_fail(c, "profile has more than %zu planes",
						 XS_PLANES_MAX);
			if ((r = wire_len_field(c, wt, "XSpace", f, &len)) < 0 ||
			    (r = ix_count(ix, 1)) < 0 ||
			    (r = xprofs_grow(&oc->slots, &oc->slots_cap, oc->n_slots,
					     sizeof(*oc->slots), 8)) < 0)
				return r;
			ps = &oc->slots[oc->n_slots++];
			memset(ps, 0, sizeof(*ps));
			ps->span = (struct xs_span){c->pos, len};
			xprofs_buf_init(&ps->err, 1024);
			c->pos += len;
			break;
		case XSPACE_F_ERRORS:
			r = ix_strs_add(ix, &x->errors, wt, f);
			break;
		case XSPACE_F_WARNINGS:
			r = ix_strs_add(ix, &x->warnings, wt, f);
			break;
		case XSPACE_F_HOSTNAMES:
			r = ix_strs_add(ix, &x->hostnames, wt, f);
			break;
		default:
			r = wire_skip(c, wt);
		}
		if (r < 0)
			return r;
	}
	return 0;
}

void xs_line_deinit(struct xs_line *l)
{
	free(l->name);
	free(l->display_name);
	free(l->file);
	free(l->ckpt);
}

void xs_plane_deinit(struct xs_plane *p)
{
	free(p->name);
	free(p->file);
	free(p->ev.md);
	free(p->ev.dense);
	free(p->st.md);
	free(p->st.dense);
	free(p->stats);
}

/* An indexing thread: takes planes in file order until none is left. */
static void *index_worker(void *arg)
{
	struct open_ctx *oc = arg;
	struct ix ix = {.oc = oc};
	size_t i;

	wire_cur_init(&ix.c, oc->r, NULL);
	while (!atomic_load(&oc->failed) && (i = atomic_fetch_add(&oc->next, 1)) < oc->n_slots) {
		struct pslot *ps = &oc->slots[i];

		ix.c.err = &ps->err;
		ps->r = ix_plane(&ix, ps);
		if (ps->r < 0)
			atomic_store(&oc->failed, true);
	}
	wire_cur_deinit(&ix.c);
	return NULL;
}

size_t xs_parallel_min_bytes = (size_t)64 << 20;

/* Index every slot on up to @threads threads (the caller's included). */
static void index_planes(struct open_ctx *oc, unsigned threads)
{
	pthread_t th[XS_THREADS_MAX];
	size_t n = 0;

	if (threads > XS_THREADS_MAX)
		threads = XS_THREADS_MAX;
	if (oc->r->size < xs_parallel_min_bytes)
		threads = 1;
	for (size_t t = 1; t < threads && t < oc->n_slots; t++) {
		if (pthread_create(&th[n], NULL, index_worker, oc) != 0)
			break; /* fewer threads is fine */
		n++;
	}
	index_worker(oc);
	for (size_t t = 0; t < n; t++)
		pthread_join(th[t], NULL);
}

/* Move the indexed slots into @x, in file order; the first failure wins. */
static int merge_slots(struct open_ctx *oc, struct xprofs_xspace *x, struct xprofs_buf *err)
{
	size_t lines = 0, li = 0;

	for (size_t i = 0; i < oc->n_slots; i++) {
		if (oc->slots[i].r < 0) {
			if (err && err->len == 0 && oc->slots[i].err.len)
				(void)!xprofs_buf_add(err, oc->slots[i].err.data,
						      oc->slots[i].err.len);
			return oc->slots[i].r;
		}
		lines += oc->slots[i].n_lines;
	}
	x->planes = calloc(oc->n_slots + 1, sizeof(*x->planes));
	x->lines = calloc(lines + 1, sizeof(*x->lines));
	if (!x->planes || !x->lines)
		return -ENOMEM;
	for (size_t i = 0; i < oc->n_slots; i++) {
		struct pslot *ps = &oc->slots[i];

		x->planes[i] = ps->p;
		x->planes[i].first_line = li;
		memset(&ps->p, 0, sizeof(ps->p));
		for (size_t j = 0; j < ps->n_lines; j++) {
			x->lines[li] = ps->lines[j];
			x->lines[li++].plane = i;
		}
		ps->n_lines = 0;
		x->n_planes = i + 1;
		x->n_lines = li;
	}
	return 0;
}

static void slots_free(struct open_ctx *oc)
{
	for (size_t i = 0; i < oc->n_slots; i++) {
		struct pslot *ps = &oc->slots[i];

		for (size_t j = 0; j < ps->n_lines; j++)
			xs_line_deinit(&ps->lines[j]);
		free(ps->lines);
		xs_plane_deinit(&ps->p);
		xprofs_buf_deinit(&ps->err);
	}
	free(oc->slots);
}

/*
 * xs_index_build() - the structural pass: index the profile behind x->r
 * into @x (x->tracks_only set by the caller) on up to @threads threads.
 * On failure @x holds what was merged so far (free it with the xspace).
 */
int xs_index_build(struct xprofs_xspace *x, unsigned threads, struct xprofs_buf *err)
{
	struct open_ctx oc;
	struct ix top;
	int ret;

	memset(&oc, 0, sizeof(oc));
	oc.r = x->r;
	oc.tracks_only = x->tracks_only;
	atomic_init(&oc.entries, 0);
	atomic_init(&oc.lines, 0);
	atomic_init(&oc.next, 0);
	atomic_init(&oc.failed, false);
	top.oc = &oc;
	wire_cur_init(&top.c, x->r, err);
	if ((ret = ix_space(&top, x)) == 0) {
		index_planes(&oc, threads);
		ret = merge_slots(&oc, x, err);
		if (ret == 0) {
			for (size_t i = 0; i < x->n_planes; i++)
				x->grouped |= x->planes[i].group_ids;
			/* any stable hash: XProf's (absl::HashOf) is salted per process */
			x->host_id = x->hostnames.n
					     ? xprofs_hash64(x->hostnames.s[0], x->hostnames.len[0])
					     : 0;
			ret = xs_derived_assign(x);
		}
	}
	slots_free(&oc);
	wire_cur_deinit(&top.c);
	return ret;
}
