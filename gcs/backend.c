/*
 * gcs/backend.c - the GCS store backend's entry point: struct xprofs_store
 * over "gs://BUCKET[/PREFIX]" through the JSON API. Holds the store's ops
 * table, xprofs_gcs_store_new() (options, credentials, the HTTP pool, the
 * first listing that validates all of them, the background threads),
 * gcs_free() and the status JSON.
 *
 * The work is split by job: namespace.c (listing, tree, refresh; stat/list),
 * blocks.c (block cache and reads), upload.c (spooled writers, uploads),
 * mutate.c (delete, rename, mkdir, rmdir). struct gcs_store and the lock
 * order are in gcs-internal.h.
 *
 * Limits: directory renames move object by object (not atomic); a directory exists as
 * long as objects below it exist (or it was mkdir'ed in this mount, or has a
 * "dir/" placeholder object).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "auth-internal.h"

#define CHUNK_ALIGN (256u << 10) /* resumable chunks are multiples of 256 KiB */
#define MOUNT_CHECK_S 10u        /* the longest the mount-time listing is retried, seconds */

/* ---- status and lifecycle ---------------------------------------------- */

static int gcs_status_json(struct xprofs_store *base, struct xprofs_buf *out)
{
	struct gcs_store *s = (struct gcs_store *)base;
	struct gcs_counters *c = &s->ctr;
	uint64_t nodes, bytes, mem;
	int r;

	pthread_rwlock_rdlock(&s->tree_lock);
	gcs_tree_count(s->tree, &nodes, &bytes);
	pthread_rwlock_unlock(&s->tree_lock);
	pthread_mutex_lock(&s->blk_lock);
	mem = s->blk_mem;
	pthread_mutex_unlock(&s->blk_lock);
	r = xprofs_buf_add_json_member(out, "{\"backend\":\"gcs\",\"bucket\":", s->bucket);
	r = r ? r : xprofs_buf_add_json_member(out, ",\"prefix\":", s->prefix);
	r = r ? r : xprofs_buf_add_json_member(out, ",\"endpoint\":", s->endpoint);
	if (r < 0)
		return r;
	if ((r = xprofs_buf_printf(
		     out,
		     ",\"auth\":\"%s\",\"tree\":{\"nodes\":%llu,\"bytes\":%llu,"
		     "\"skipped_objects\":%llu,\"listings\":%llu,\"last_listing_ms\":%llu},",
		     gcs_auth_kind(s->auth), (unsigned long long)nodes, (unsigned long long)bytes,
		     (unsigned long long)atomic_load(&s->skipped),
		     (unsigned long long)atomic_load(&s->listings),
		     (unsigned long long)atomic_load(&s->last_list_ms))) < 0 ||
	    (r = gcs_counters_json(c, GCS_CTR_ALL_KINDS | GCS_CTR_STALE, out)) < 0)
		return r;
	return xprofs_buf_printf(
		out,
		",\"blocks\":{\"hits\":%llu,\"disk_hits\":%llu,\"misses\":%llu,\"coalesced\":%llu,"
		"\"prefetched\":%llu,\"streams\":%llu,\"streams_ended\":%llu,"
		"\"mem_bytes\":%llu}}",
		(unsigned long long)atomic_load(&c->block_hits),
		(unsigned long long)atomic_load(&c->block_disk_hits),
		(unsigned long long)atomic_load(&c->block_misses),
		(unsigned long long)atomic_load(&c->block_waits),
		(unsigned long long)atomic_load(&c->prefetched),
		(unsigned long long)atomic_load(&c->streams),
		(unsigned long long)atomic_load(&c->streams_ended), (unsigned long long)mem);
}

static void gcs_free(struct xprofs_store *base)
{
	struct gcs_store *s = (struct gcs_store *)base;

	gcs_streams_stop(s); /* before the pool and the block table go */
	pthread_mutex_lock(&s->bg_lock);
	s->bg_stop = true;
	pthread_cond_signal(&s->bg_cond);
	pthread_cond_signal(&s->pf_cond);
	pthread_cond_signal(&s->dw_cond);
	pthread_cond_broadcast(&s->dw_room);
	pthread_mutex_unlock(&s->bg_lock);
	if (s->dw_started)
		pthread_join(s->dw, NULL); /* writes out the queue */
	if (s->bg_started)
		pthread_join(s->bg, NULL);
	if (s->pf_started)
		pthread_join(s->pf, NULL);
	gcs_blocks_free(s);
	gcs_ns_journal_free(s);
	gcs_tree_free(s->tree);
	gcs_http_deinit(&s->http);
	gcs_auth_free(s->auth);
	pthread_mutex_destroy(&s->blk_lock);
	pthread_cond_destroy(&s->blk_cond);
	pthread_mutex_destroy(&s->w_lock);
	pthread_mutex_destroy(&s->bg_lock);
	pthread_cond_destroy(&s->bg_cond);
	pthread_cond_destroy(&s->pf_cond);
	pthread_cond_destroy(&s->dw_cond);
	pthread_cond_destroy(&s->dw_room);
	pthread_mutex_destroy(&s->list_lock);
	pthread_rwlock_destroy(&s->tree_lock);
	free(s->endpoint);
	free(s->user_project);
	free(s->prefix);
	free(s->bucket);
	free(s->base.source);
	free(s);
}

static const struct xprofs_store_ops gcs_ops = {
	.backend = "gcs",
	.stat = gcs_stat,
	.list = gcs_list,
	.open = gcs_open,
	.pread = gcs_pread,
	.file_stat = gcs_file_stat,
	.close = gcs_close,
	.create = gcs_create,
	.write = gcs_write,
	.wread = gcs_wread,
	.truncate = gcs_truncate,
	.flush = gcs_flush,
	.commit = gcs_commit,
	.abort = gcs_abort,
	.unlink = gcs_unlink,
	.rename = gcs_rename,
	.mkdir = gcs_mkdir,
	.rmdir = gcs_rmdir,
	.refresh = gcs_refresh,
	.status_json = gcs_status_json,
	.free = gcs_free,
};

/* @dst = @o with the defaults filled in; its endpoint and credentials are not kept (the cache is).
 */
static void options_set(struct xprofs_gcs_options *dst, const struct xprofs_gcs_options *o)
{
	*dst = *o;
	dst->endpoint = NULL;
	dst->credentials = NULL;
	dst->billing_project = NULL;
	if (!dst->list_ttl_s)
		dst->list_ttl_s = 30;
	if (!dst->connections)
		dst->connections = 8;
	if (!dst->retry_deadline_s)
		dst->retry_deadline_s = 60;
	if (!dst->resumable_threshold)
		dst->resumable_threshold = 8u << 20;
	dst->upload_chunk = dst->upload_chunk / CHUNK_ALIGN * CHUNK_ALIGN;
	if (!dst->upload_chunk)
		dst->upload_chunk = 8u << 20;
	if (!dst->block_mem_max)
		dst->block_mem_max = 64u << 20;
	if (dst->block_mem_max < 2 * GCS_BLOCK_SIZE)
		dst->block_mem_max = 2 * GCS_BLOCK_SIZE;
}

int xprofs_gcs_store_new(const char *url, const struct xprofs_gcs_options *o,
			 struct xprofs_store **out)
{
	static const struct xprofs_gcs_options defaults = {0};
	struct gcs_store *s;
	unsigned check_s;
	int r;

	if (!o)
		o = &defaults;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->base.ops = &gcs_ops;
	pthread_rwlock_init(&s->tree_lock, NULL);
	pthread_mutex_init(&s->list_lock, NULL);
	pthread_mutex_init(&s->bg_lock, NULL);
	pthread_cond_init(&s->bg_cond, NULL);
	pthread_cond_init(&s->pf_cond, NULL);
	pthread_cond_init(&s->dw_cond, NULL);
	pthread_cond_init(&s->dw_room, NULL);
	pthread_mutex_init(&s->blk_lock, NULL);
	{
		/* stream.c waits on it with timeouts on the monotonic clock */
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&s->blk_cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	pthread_mutex_init(&s->w_lock, NULL);
	s->lru.lru_next = s->lru.lru_prev = &s->lru;
	s->journal_tail = &s->journal;

	r = gcs_url_parse(url, &s->bucket, &s->prefix);
	if (r < 0) {
		xprofs_err("gcs: '%s' is not gs://BUCKET[/PREFIX] with a valid bucket name",
			   url ? url : "");
		goto err;
	}
	options_set(&s->o, o);
	s->tmpdir = xprofs_tmpdir(NULL);
	s->stream_idle_ns = gcs_stream_idle_ns();
	s->base.source = strdup(url);
	s->endpoint = gcs_endpoint_resolve(o);
	if (!s->base.source || !s->endpoint) {
		r = -ENOMEM;
		goto err;
	}
	if (o->billing_project) {
		if (!gcs_project_valid(o->billing_project)) {
			xprofs_err("gcs: billing_project '%.80s' is not a project id or number",
				   o->billing_project);
			r = -EINVAL;
			goto err;
		}
		s->user_project = strdup(o->billing_project);
		if (!s->user_project) {
			r = -ENOMEM;
			goto err;
		}
	}
	r = gcs_auth_new(o, &s->auth);
	if (r < 0) {
		xprofs_err("gcs: no usable credentials for gs://%s: %s", s->bucket, strerror(-r));
		goto err;
	}
	r = gcs_http_init(&s->http, s->auth, gcs_auth_header, s->o.connections, &s->ctr);
	if (r < 0)
		goto err;
	s->http.retry_deadline_s = s->o.retry_deadline_s;
	if (o->retry_initial_ms)
		s->http.retry_initial_ms = o->retry_initial_ms;
	if (o->stall_timeout_s)
		s->http.stall_timeout_s = o->stall_timeout_s;

	/*
	 * Fail fast: the first listing validates endpoint, credentials and bucket,
	 * retried for at most MOUNT_CHECK_S (or the retry deadline if shorter), so
	 * a mount without network says so in seconds, not after the whole deadline.
	 */
	check_s = s->o.retry_deadline_s < MOUNT_CHECK_S ? s->o.retry_deadline_s : MOUNT_CHECK_S;
	s->http.retry_deadline_s = check_s;
	r = gcs_ns_refresh(s);
	s->http.retry_deadline_s = s->o.retry_deadline_s;
	if (r < 0) {
		if (r == -ECONNREFUSED || r == -EHOSTUNREACH || r == -ETIMEDOUT)
			xprofs_err("gcs: cannot reach %s (tried for up to %u s): %s", s->endpoint,
				   check_s, strerror(-r));
		goto err;
	}
	if (pthread_create(&s->bg, NULL, gcs_ns_bg_main, s) == 0)
		s->bg_started = true;
	else
		xprofs_warn(
			"gcs: no background relisting thread; the tree refreshes only on demand");
	if (pthread_create(&s->pf, NULL, gcs_pf_main, s) == 0)
		s->pf_started = true;
	if (s->o.cache && pthread_create(&s->dw, NULL, gcs_dw_main, s) == 0)
		s->dw_started = true;
	xprofs_info("gcs: mounted gs://%s/%s via %s (%s credentials)", s->bucket, s->prefix,
		    s->endpoint, gcs_auth_kind(s->auth));
	*out = &s->base;
	return 0;
err:
	gcs_free(&s->base);
	return r;
}
