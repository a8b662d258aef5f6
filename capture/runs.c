/*
 * runs.c - the capture manager object and its run records: new/free, the
 * per-run history of sessions (at most CAPTURE_HISTORY each, at most
 * MAX_RUNS runs; the oldest idle run is evicted) and reaping finished
 * coordinators.
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
