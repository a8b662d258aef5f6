/*
 * flight.c - single flight for renders: one render per key at a time, at
 * most FS_INFLIGHT keys at once. live.c claims a key before it starts a
 * render (fs_render_begin()) and gives it back when the render's entry
 * is published or dropped (fs_render_end()); a thread that finds its key
 * taken waits and then reads what the other render left (the cache).
 *
 * Design: a fixed table of keys (ctx->views.inflight) under the views
 * lock, one condition variable for every waiter: renders are few and
 * long, so a broadcast per finished render costs nothing that matters.
 * Counters: render_waiting / render_wakeups (status.json), render_waits.
 */
#include <pthread.h>

#include "fs-internal.h"

/* fs_render_begin() - claim render @key; false when another thread rendered it (waited for). */
bool fs_render_begin(struct fs_ctx *ctx, uint64_t key)
{
	struct fs_views *v = &ctx->views;
	size_t i, free_slot = FS_INFLIGHT;
	bool waited = false;

	pthread_mutex_lock(&v->lock);
	for (;;) {
		bool busy = false;

		free_slot = FS_INFLIGHT;
		for (i = 0; i < FS_INFLIGHT; i++) {
			if (v->inflight[i] == key)
				busy = true;
			else if (!v->inflight[i] && free_slot == FS_INFLIGHT)
				free_slot = i;
		}
		if (!busy && waited)
			break;
		if (!busy && free_slot < FS_INFLIGHT) {
			v->inflight[free_slot] = key;
			pthread_mutex_unlock(&v->lock);
			return true;
		}
		waited = busy;
		v->render_waiting++;
		pthread_cond_wait(&v->cond, &v->lock);
		v->render_waiting--;
		v->render_wakeups++;
	}
	pthread_mutex_unlock(&v->lock);
	FS_CNT(ctx, render_waits);
	return false;
}

void fs_render_end(struct fs_ctx *ctx, uint64_t key)
{
	struct fs_views *v = &ctx->views;

	pthread_mutex_lock(&v->lock);
	for (size_t i = 0; i < FS_INFLIGHT; i++)
		if (v->inflight[i] == key)
			v->inflight[i] = 0;
	pthread_cond_broadcast(&v->cond);
	pthread_mutex_unlock(&v->lock);
}
