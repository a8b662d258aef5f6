/*
 * parts.c - an ordered render on several threads: xs_parts_run().
 *
 * Design: the parts are taken in order from one counter. The caller's
 * thread takes the next part when its turn comes and nobody has it yet, and
 * writes it straight into the render's output, so a streaming reader gets
 * its first bytes as early as in a plain loop. Each other thread takes the
 * next part not yet taken and writes it to an unlinked temporary file; when
 * the caller reaches that part it waits for it and copies the file into the
 * output. With equal parts and two threads the caller writes part 0 while a
 * helper makes part 1, then the caller copies 1 and makes 2 while the
 * helper makes 3, and so on. A part a helper could not make (a full disk, a
 * failed allocation) is made again by the caller, whose result is the one
 * that counts, so the bytes and errors do not depend on the threads (after
 * a failure, the bytes already handed to the sink may be a longer prefix of
 * the same stream than a loop would have handed on: a copied part is
 * flushed through at once).
 *
 * Each helper's render context is made from the caller's before any part
 * runs: a part may change the caller's context while it runs (trace.pftrace
 * turns its window off for a derived line's whole walk), so a helper
 * copying it later could take a setting half-way (a slice rendered whole).
 *
 * Limits: the temporary files hold at most the parts made ahead (the
 * render's size, on disk, never in memory); the helpers stop at the next
 * 64 KiB they write once the caller has failed.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xprofs/xspace.h"

/* One part made by a helper. */
struct part {
	int fd;    /* its temporary file; -1: the caller makes it */
	int r;     /* the helper's result */
	bool done; /* the helper is finished with it */
};

/* What the threads of one xs_parts_run() share. */
struct parts {
	size_t n;
	xs_part_fn fn;
	void *arg;
	struct part *p; /* owned: [n] */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	size_t next;      /* the next part not yet taken (under mu) */
	atomic_bool stop; /* the caller failed: helpers give up */
};

/* A helper thread's own: its context, made on the caller's thread. */
struct helper {
	struct parts *t;
	struct xs_rctx rc;
	struct xprofs_buf err;
};

/* What a helper's output writes to: its part's file, unless the caller has failed. */
struct spill_sink {
	int fd;
	atomic_bool *stop;
};

static int spill_write(void *arg, const void *p, size_t n)
{
	struct spill_sink *s = arg;

	if (atomic_load(s->stop))
		return -ECANCELED;
	return xprofs_write_full(s->fd, p, n);
}

/* Make part @i of @t on @rc into file @fd; 0 or -errno. */
static int helper_part(struct parts *t, struct xs_rctx *rc, size_t i, int fd)
{
	struct spill_sink ss = {.fd = fd, .stop = &t->stop};
	struct xprofs_sink sink = {.write = spill_write, .arg = &ss};
	struct xs_out o;
	int r;

	xs_out_init(&o, &sink);
	r = t->fn(rc, i, &o, t->arg);
	if (r == 0)
		r = o.r;
	if (r == 0)
		r = xs_out_flush(&o, true);
	xs_out_deinit(&o);
	return r;
}

static bool take_ahead(struct parts *t, struct xs_rctx *rc);

/* A helper thread: makes the next part not yet taken until none is left or the caller failed. */
static void *helper_main(void *arg)
{
	struct helper *h = arg;
	struct parts *t = h->t;

	pthread_mutex_lock(&t->mu);
	while (!atomic_load(&t->stop)) {
		xprofs_buf_reset(&h->err);
		if (!take_ahead(t, &h->rc))
			break;
	}
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

/* Append file @fd (a part made ahead) to @o: straight to its sink when it has one. */
static int copy_part(int fd, struct xs_out *o)
{
	size_t cap = (size_t)1 << 20;
	char *buf = malloc(cap);
	off_t at = 0;
	int r;

	if (!buf)
		return -ENOMEM;
	if ((r = xs_out_flush(o, true)) < 0)
		goto out;
	for (;;) {
		ssize_t k = xprofs_pread_full(fd, buf, cap, (uint64_t)at);

		if (k < 0) {
			r = (int)k;
			break;
		}
		if (k == 0)
			break;
		if (o->sink) {
			if ((r = o->sink->write(o->sink->arg, buf, (size_t)k)) < 0) {
				o->r = r;
				break;
			}
		} else {
			xs_out_add(o, buf, (size_t)k);
			if ((r = o->r) < 0)
				break;
		}
		at += k;
	}
out:
	free(buf);
	return r;
}

/*
 * Make the next part not yet taken into a temporary file on @rc (the caller
 * holds t->mu, which is released while the part is made); false when none is
 * left or no file can be had.
 */
static bool take_ahead(struct parts *t, struct xs_rctx *rc)
{
	size_t i;
	int fd, r;

	if (t->next >= t->n)
		return false;
	pthread_mutex_unlock(&t->mu);
	fd = xprofs_tmpfile(rc->spill_dir, "xprofs-part");
	pthread_mutex_lock(&t->mu);
	if (fd < 0)
		return false;
	if (t->next >= t->n) {
		close(fd);
		return false;
	}
	i = t->next++;
	t->p[i].fd = fd;
	pthread_mutex_unlock(&t->mu);
	r = helper_part(t, rc, i, fd);
	pthread_mutex_lock(&t->mu);
	t->p[i].r = r;
	t->p[i].done = true;
	pthread_cond_broadcast(&t->cv);
	return true;
}

int xs_parts_run(struct xs_rctx *rc, size_t n, xs_part_fn fn, void *arg, struct xs_out *o)
{
	pthread_t th[XS_THREADS_MAX];
	struct helper h[XS_THREADS_MAX];
	struct parts t = {.n = n, .fn = fn, .arg = arg};
	unsigned want = rc->x->threads;
	size_t nth = 0, out = 0;
	/* parts this thread makes ahead: a context of their own, so their messages never
	 * reach rc->err (which keeps the first: that of the first part failing in order) */
	struct xs_rctx ahead;
	struct xprofs_buf ahead_err;
	bool have_ahead = false;
	int r = 0;

	if (want <= 1 || n <= 1 || rc->in_task) { /* the plain loop */
		for (size_t i = 0; i < n; i++)
			if ((r = fn(rc, i, o, arg)) < 0)
				return r;
		return 0;
	}
	if (!(t.p = calloc(n, sizeof(*t.p))))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		t.p[i].fd = -1;
	pthread_mutex_init(&t.mu, NULL);
	pthread_cond_init(&t.cv, NULL);
	atomic_init(&t.stop, false);
	for (size_t k = 1; k < want && k < n && k < XS_THREADS_MAX; k++) {
		/* its context now: the parts below change rc while it runs */
		h[nth].t = &t;
		xprofs_buf_init(&h[nth].err, (size_t)64 << 10);
		xs_rctx_child(&h[nth].rc, rc, &h[nth].err);
		if (pthread_create(&th[nth], NULL, helper_main, &h[nth]) != 0) {
			xs_rctx_deinit(&h[nth].rc);
			xprofs_buf_deinit(&h[nth].err);
			break; /* fewer threads is fine */
		}
		nth++;
	}
	/*
	 * Part @out is the next to go out: written straight when nobody has it
	 * yet, copied once made ahead; while it is being made elsewhere, this
	 * thread makes a later part ahead instead of waiting.
	 */
	pthread_mutex_lock(&t.mu);
	while (out < n && r == 0) {
		struct part *p = &t.p[out];
		bool live = false;

		if (t.next == out) {
			t.next++;
			live = true;
		} else if (!p->done) {
			if (!have_ahead) {
				xprofs_buf_init(&ahead_err, (size_t)64 << 10);
				xs_rctx_child(&ahead, rc, &ahead_err);
				have_ahead = true;
			}
			xprofs_buf_reset(&ahead_err);
			/* take_ahead() lets go of t.mu: the part may have been done meanwhile */
			if (!take_ahead(&t, &ahead) && !p->done)
				pthread_cond_wait(&t.cv, &t.mu);
			continue;
		}
		pthread_mutex_unlock(&t.mu);
		if (!live && p->r == 0)
			r = copy_part(p->fd, o);
		else
			r = fn(rc, out, o, arg); /* its turn, or made ahead and failed: made here */
		pthread_mutex_lock(&t.mu);
		if (p->fd >= 0) {
			close(p->fd);
			p->fd = -1;
		}
		out++;
	}
	pthread_mutex_unlock(&t.mu);
	atomic_store(&t.stop, true);
	for (size_t k = 0; k < nth; k++) {
		pthread_join(th[k], NULL);
		xs_rctx_deinit(&h[k].rc);
		xprofs_buf_deinit(&h[k].err);
	}
	for (size_t i = 0; i < n; i++)
		if (t.p[i].fd >= 0)
			close(t.p[i].fd);
	if (have_ahead) {
		xs_rctx_deinit(&ahead);
		xprofs_buf_deinit(&ahead_err);
	}
	pthread_cond_destroy(&t.cv);
	pthread_mutex_destroy(&t.mu);
	free(t.p);
	return r;
}
