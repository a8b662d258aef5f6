/*
 * runs.c - the capture manager object and its run records: new/free, the
 * per-run history of sessions (at most CAPTURE_HISTORY each, at most
 * MAX_RUNS runs; the oldest idle run is evicted), the last CAPTURE_REJECTS
 * refused lines of each control file (a run's or the top-level one's) and
 * reaping finished coordinators. input.c and submit.c call in here, never
 * the other way.
 *
 * free() never cancels an RPC first: it sends Terminate to every running
 * session (capture_request_stop()), waits FREE_GRACE_MS for them to end
 * normally, then sets their cancel flags so the progress callbacks abort,
 * and joins every coordinator without c->lock (they take it to publish).
 *
 * libcurl's global state is the program's business: the daemon's main()
 * (and each test's) calls curl_global_init() before making a manager.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "capture-internal.h"

#define CAPTURE_HISTORY 32
#define MAX_RUNS 256
#define FREE_GRACE_MS 10000 /* Terminate, then cancel after this */

/* ---- run records (c->lock held) --------------------------------------- */

/* Frees @s and everything it owns; its threads must be joined. Accepts NULL; returns NULL. */
struct capture_session *capture_session_free(struct capture_session *s)
{
	if (!s)
		return NULL;
	for (size_t i = 0; i < s->n_hosts; i++) {
		free(s->hosts[i].file);
		free(s->hosts[i].server_file);
	}
	free(s->run);
	free(s->req);
	free(s->repo_root);
	free(s);
	return NULL;
}

static void run_free(struct capture_run *r)
{
	struct capture_session *s, *n;

	for (s = r->head; s; s = n) {
		n = s->next;
		capture_session_free(s);
	}
	free(r->run);
	capture_rejects_free(&r->rej);
	free(r);
}

/*
 * The record of @run (borrowed; duplicated when created). The result is owned
 * by @c and valid while c->lock is held. NULL: not found (or ENOMEM, or every
 * record busy when MAX_RUNS are in use).
 */
struct capture_run *capture_run_find(struct xprofs_capture *c, const char *run, bool create)
{
	struct capture_run *r, **pp, **victim = NULL;

	for (r = c->runs; r; r = r->next)
		if (strcmp(r->run, run) == 0) {
			r->touched = ++c->tick;
			return r;
		}
	if (!create)
		return NULL;
	if (c->n_runs >= MAX_RUNS) {
		/* evict the least recently used run record with nothing in flight */
		for (pp = &c->runs; *pp; pp = &(*pp)->next) {
			bool busy = (*pp)->running != NULL;

			for (struct capture_session *s = (*pp)->head; s && !busy; s = s->next)
				busy = !s->joined;
			if (!busy && (!victim || (*pp)->touched < (*victim)->touched))
				victim = pp;
		}
		if (!victim)
			return NULL;
		r = *victim;
		*victim = r->next;
		run_free(r);
		c->n_runs--;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->run = strdup(run);
	if (!r->run) {
		free(r);
		return NULL;
	}
	r->touched = ++c->tick;
	r->next = c->runs;
	c->runs = r;
	c->n_runs++;
	return r;
}

/* Join finished coordinators and trim histories (c->lock held). */
void capture_reap(struct xprofs_capture *c)
{
	for (struct capture_run *r = c->runs; r; r = r->next) {
		for (struct capture_session *s = r->head; s; s = s->next)
			if (s->done && !s->joined) {
				pthread_join(s->coord, NULL); /* it has returned or is returning */
				s->joined = true;
			}
		while (r->n > CAPTURE_HISTORY && r->head && r->head->joined) {
			struct capture_session *s = r->head;

			r->head = s->next;
			if (!r->head)
				r->tail = NULL;
			r->n--;
			capture_session_free(s);
		}
	}
}

/* ---- rejected lines --------------------------------------------------- */

void capture_rejects_free(struct capture_rejects *q)
{
	for (unsigned i = 0; i < CAPTURE_REJECTS; i++) {
		free(q->e[i].line);
		free(q->e[i].reason);
	}
	memset(q, 0, sizeof(*q));
}

/* rejects_add() - @line (@len bytes) and @why (both copied) as the newest entry of @q. */
static void rejects_add(struct capture_rejects *q, const char *line, size_t len, const char *why)
{
	char *l = strndup(line, len > CAPTURE_REJECT_LINE_MAX ? CAPTURE_REJECT_LINE_MAX : len);
	char *w = strdup(why);

	if (!l || !w) {
		free(l);
		free(w);
		return; /* out of memory: the rejection is still logged */
	}
	free(q->e[q->next].line);
	free(q->e[q->next].reason);
	q->e[q->next].line = l;
	q->e[q->next].reason = w;
	q->e[q->next].at_ns = xprofs_now_ns();
	q->next = (q->next + 1) % CAPTURE_REJECTS;
	if (q->n < CAPTURE_REJECTS)
		q->n++;
}

void capture_reject(struct xprofs_capture *c, const char *run, const char *line, size_t len,
		    struct xprofs_buf *out, const char *fmt, ...)
{
	struct xprofs_buf why;
	va_list ap;

	xprofs_buf_init(&why, 4096);
	va_start(ap, fmt);
	(void)!xprofs_buf_vprintf(&why, fmt, ap);
	va_end(ap);
	if (out)
		(void)!xprofs_buf_adds(out, why.data ? why.data : "");
	pthread_mutex_lock(&c->lock);
	if (run) {
		struct capture_run *r = capture_run_find(c, run, true);

		if (r)
			rejects_add(&r->rej, line, len, why.data ? why.data : "");
	} else {
		rejects_add(&c->rej, line, len, why.data ? why.data : "");
	}
	pthread_mutex_unlock(&c->lock);
	xprofs_info("capture: rejected '%.*s': %s", (int)(len > 200 ? 200 : len), line,
		    why.data ? why.data : "");
	xprofs_buf_deinit(&why);
}

/* ---- lifecycle -------------------------------------------------------- */

int xprofs_capture_new(struct xprofs_store *store, xprofs_capture_notify_fn notify, void *arg,
		       struct xprofs_capture **out)
{
	struct xprofs_capture *c;
	pthread_condattr_t ca;

	if (!store)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->store = store;
	c->notify = notify;
	c->arg = arg;
	pthread_mutex_init(&c->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cond, &ca);
	pthread_condattr_destroy(&ca);
	*out = c;
	return 0;
}

static bool any_running(struct xprofs_capture *c)
{
	for (struct capture_run *r = c->runs; r; r = r->next)
		for (struct capture_session *s = r->head; s; s = s->next)
			if (!s->done)
				return true;
	return false;
}

struct xprofs_capture *xprofs_capture_free(struct xprofs_capture *c)
{
	struct timespec ts;
	struct capture_run *r, *n;

	if (!c)
		return NULL;
	pthread_mutex_lock(&c->lock);
	c->closing = true;
	for (r = c->runs; r; r = r->next)
		for (struct capture_session *s = r->head; s; s = s->next)
			if (!s->done)
				(void)capture_request_stop(s);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += FREE_GRACE_MS / 1000;
	while (any_running(c))
		if (pthread_cond_timedwait(&c->cond, &c->lock, &ts) == ETIMEDOUT)
			break;
	for (r = c->runs; r; r = r->next)
		for (struct capture_session *s = r->head; s; s = s->next)
			atomic_store(&s->cancel, 1);
	pthread_mutex_unlock(&c->lock);

	/* joins without the lock: coordinators take it to publish */
	for (r = c->runs; r; r = r->next)
		for (struct capture_session *s = r->head; s; s = s->next)
			if (s->coord_started && !s->joined) {
				pthread_join(s->coord, NULL);
				s->joined = true;
			}
	for (r = c->runs; r; r = n) {
		n = r->next;
		run_free(r);
	}
	capture_rejects_free(&c->rej);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	free(c);
	return NULL;
}
