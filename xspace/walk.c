/*
 * walk.c - the per-render context, the walk over one line's events, and
 * the threads a render's independent tasks run on.
 *
 * Design: a render owns a struct xs_rctx (two cursors and the metadata
 * cache, see metadata.c) and a struct xs_out; the views stream each line's
 * events once through xs_line_begin()/xs_line_next(), holding one event at
 * a time. The common event (tag, short length, wholly in the window) is
 * parsed inline by xs_event_fast(); xs_line_next_slow() takes any other
 * field order or size. Output already written before a failure is not
 * retracted; the reason goes to @err once. xs_tasks_run() splits a view's
 * independent parts over the profile's thread allowance (x->threads), each
 * thread with a render context of its own; the tasks' results land in
 * their own slots and the lowest failing task's error is the one reported,
 * so any thread count gives the same bytes and error.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "xprofs/xspace.h"

void xs_rctx_init(struct xs_rctx *rc, struct xprofs_xspace *x, struct xprofs_buf *err)
{
	memset(rc, 0, sizeof(*rc));
	rc->x = x;
	rc->err = err;
	rc->plane = SIZE_MAX;
	wire_cur_init(&rc->ev, x->r, err);
	wire_cur_init(&rc->md, x->r, err);
	xprofs_buf_init(&rc->tmp, XS_STR_MAX + 64);
}

void xs_rctx_deinit(struct xs_rctx *rc)
{
	xs_md_drop(rc);
	free(rc->evmd);
	free(rc->stmd);
	wire_cur_deinit(&rc->ev);
	wire_cur_deinit(&rc->md);
	xprofs_buf_deinit(&rc->tmp);
}

void xs_rctx_child(struct xs_rctx *rc, const struct xs_rctx *parent, struct xprofs_buf *err)
{
	xs_rctx_init(rc, parent->x, err);
	rc->host = parent->host;
	rc->win = parent->win;
	rc->win_from = parent->win_from;
	rc->win_to = parent->win_to;
	rc->lod = parent->lod;
	rc->lod_from = parent->lod_from;
	rc->lod_to = parent->lod_to;
	rc->lod_res = parent->lod_res;
	rc->lod_px = parent->lod_px;
	rc->spill_dir = parent->spill_dir;
	rc->hlo = parent->hlo;
	rc->in_task = true;
}

int xs_line_begin(struct xs_rctx *rc, size_t li, struct xs_line_it *it)
{
	const struct xs_line *l = &rc->x->lines[li];
	int r;

	if ((r = xs_plane_enter(rc, l->plane)) < 0)
		return r;
	it->rc = rc;
	it->l = l;
	it->end = l->msg.off + l->msg.len;
	it->base_ps = xs_line_base_ps(l->timestamp_ns);
	rc->ev.pos = l->msg.off;
	rc->ev.end = it->end;
	return 0;
}

/* Any field order, events of any size (xs_event_fast() takes the common case). */
int xs_line_next_slow(struct xs_line_it *it, struct xs_evhdr *h, uint64_t *off, uint64_t *len)
{
	struct wire_cur *c = &it->rc->ev;
	const uint8_t *p;
	int r;

	if ((r = wire_next_len_field(c, it->end, "XLine", XLINE_F_EVENTS, len)) <= 0)
		return r;
	if ((r = wire_at(c, c->pos, (size_t)*len, &p)) < 0)
		return r;
	if (xs_parse_event(p, p + *len, h) < 0)
		return wire_fail(c, "malformed XEvent at offset %" PRIu64, c->pos);
	*off = c->pos;
	c->pos += *len;
	return 1;
}

uint64_t xs_line_seek(const struct xs_line *l, xprofs_ps128 from)
{
	uint64_t nth;

	return xs_line_seek_nth(l, from, &nth);
}

uint64_t xs_line_seek_nth(const struct xs_line *l, xprofs_ps128 from, uint64_t *nth)
{
	xprofs_ps128 rel = from - (xprofs_ps128)l->timestamp_ns * 1000;
	size_t lo = 0, hi = l->n_ckpt;

	/* max_end is a running maximum, so the skippable checkpoints are a prefix */
	while (lo < hi) { /* first checkpoint that may not be skipped to */
		size_t mid = lo + (hi - lo) / 2;

		if (l->ckpt[mid].max_end < INT64_MAX && l->ckpt[mid].max_end <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	*nth = (uint64_t)lo * XS_CKPT_EVERY; /* checkpoint k is at event (k + 1) * XS_CKPT_EVERY */
	return lo ? l->ckpt[lo - 1].off : l->msg.off;
}

/* win_test() - event @e in a slice: 0 keep, 1 skip, 2 nothing more of the line overlaps. */
static int win_test(const struct xs_rctx *rc, const struct xs_line_it *it, const struct xs_event *e)
{
	xprofs_ps128 start = (xprofs_ps128)it->l->timestamp_ns * 1000 + e->offset_ps;

	if (start >= rc->win_to) /* sorted lines: so is every later event */
		return it->l->unsorted || rc->x->tracks_only ? 1 : 2;
	if (start + (e->duration_ps > 0 ? e->duration_ps : 1) <= rc->win_from)
		return 1;
	return 0;
}

int xs_line_each(struct xs_rctx *rc, size_t li, xs_stop_fn stop, xs_event_fn fn, void *arg)
{
	struct xs_line_it it;
	struct xs_event e;
	struct xs_evmd *m;
	int r, w;

	if ((r = xs_line_begin(rc, li, &it)) < 0)
		return r;
	if (rc->win)
		rc->ev.pos = xs_line_seek(it.l, rc->win_from); /* a slice's walk */
	while ((r = xs_line_next(&it, &e)) > 0) {
		if (rc->win && (w = win_test(rc, &it, &e)) != 0) {
			if (w == 2)
				return 0;
			continue;
		}
		if (stop && stop(arg))
			return 0;
		xs_md_gc(rc);
		if ((r = xs_md_event(rc, e.md, &m)) < 0 || (r = fn(rc, &e, m, arg)) < 0)
			return r;
	}
	return r;
}

int xs_with_rctx(struct xprofs_xspace *x, struct xprofs_buf *err,
		 int (*fn)(struct xs_rctx *rc, void *arg), void *arg)
{
	struct xs_rctx rc;
	int r;

	xs_rctx_init(&rc, x, err);
	r = fn(&rc, arg);
	xs_rctx_deinit(&rc);
	return r;
}

/* What the threads of one xs_tasks_run() share. */
struct tasks {
	struct xs_rctx *rc; /* the caller's: settings copied from it */
	size_t n;
	xs_task_fn fn;
	void *arg;
	size_t *order;        /* owned: the tasks, costliest first */
	atomic_size_t next;   /* the next task to take (index into order) */
	atomic_size_t failed; /* the lowest failed task so far (n: none) */
	int *r;               /* owned: each task's result */
	char **msg;           /* owned: each failed task's message (NULL: none) */
};

/* A thread of xs_tasks_run(): takes tasks in order until none is left (or one before failed). */
static void *tasks_worker(void *arg)
{
	struct tasks *t = arg;
	struct xprofs_buf err;
	struct xs_rctx rc;
	size_t i;

	xprofs_buf_init(&err, (size_t)64 << 10);
	xs_rctx_child(&rc, t->rc, &err);
	while ((i = atomic_fetch_add(&t->next, 1)) < t->n) {
		size_t f = atomic_load(&t->failed);

		i = t->order[i];
		if (f < i) /* a loop would have stopped before this one */
			continue;
		xprofs_buf_reset(&err);
		if ((t->r[i] = t->fn(&rc, i, t->arg)) < 0) {
			t->msg[i] = err.len ? strdup(err.data) : NULL;
			while (f > i && !atomic_compare_exchange_weak(&t->failed, &f, i))
				;
		}
	}
	xs_rctx_deinit(&rc);
	xprofs_buf_deinit(&err);
	return NULL;
}

/* For sorting the tasks: cost descending, then index. */
struct task_key {
	uint64_t cost;
	size_t i;
};

static int task_key_cmp(const void *a, const void *b)
{
	const struct task_key *x = a, *y = b;

	if (x->cost != y->cost)
		return x->cost > y->cost ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

int xs_tasks_run(struct xs_rctx *rc, size_t n, xs_task_fn fn, xs_task_cost_fn cost, void *arg)
{
	pthread_t th[XS_THREADS_MAX];
	struct tasks t = {.rc = rc, .n = n, .fn = fn, .arg = arg};
	struct task_key *key = NULL;
	size_t nth = 0, f;
	unsigned want = rc->x->threads;
	int r = 0;

	if (want <= 1 || n <= 1 || rc->in_task) { /* the plain loop */
		for (size_t i = 0; i < n; i++)
			if ((r = fn(rc, i, arg)) < 0)
				return r;
		return 0;
	}
	atomic_init(&t.next, 0);
	atomic_init(&t.failed, n);
	t.r = calloc(n, sizeof(*t.r));
	t.msg = calloc(n, sizeof(*t.msg));
	t.order = malloc(n * sizeof(*t.order));
	key = malloc(n * sizeof(*key));
	if (!t.r || !t.msg || !t.order || !key) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		key[i] = (struct task_key){cost ? cost(rc->x, i, arg) : 0, i};
	qsort(key, n, sizeof(*key), task_key_cmp);
	for (size_t i = 0; i < n; i++)
		t.order[i] = key[i].i;
	for (size_t k = 1; k < want && k < n && k < XS_THREADS_MAX; k++) {
		if (pthread_create(&th[nth], NULL, tasks_worker, &t) != 0)
			break; /* fewer threads is fine */
		nth++;
	}
	tasks_worker(&t);
	for (size_t k = 0; k < nth; k++)
		pthread_join(th[k], NULL);
	f = atomic_load(&t.failed);
	if (f < n) {
		r = t.r[f];
		if (t.msg[f] && rc->err && rc->err->len == 0)
			(void)!xprofs_buf_adds(rc->err, t.msg[f]);
	}
out:
	for (size_t i = 0; t.msg && i < n; i++)
		free(t.msg[i]);
	free(t.msg);
	free(t.r);
	free(t.order);
	free(key);
	return r;
}
