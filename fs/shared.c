/*
 * fs/shared.c - the shared view cache (-o shared_cache=gs://BUCKET/PREFIX):
 * rendered host views stored once in a bucket, so other mounts fetch them
 * instead of rendering. No FUSE here.
 *
 * Design: a view's local cache key (views.c's view_id_make(): the renderer's
 * format and xprofs version, the gs:// source, the profile's object path,
 * size, mtime and generation, the view) also names its shared object,
 * PREFIX/<16 hex of the key's hash>-<view>. The object is the portable form
 * of the local cache entry (cache/portable.c: a header with the full key and
 * a checksum of the payload, then the lz4 entry as it is). A render thread
 * (live.c) asks here before rendering: one GET into an unlinked temporary
 * file, then xprofs_cache_import(), which checks header, key, checksum and
 * every block before publishing it as the local entry; absent, foreign or
 * damaged copies make the thread render as if there were no shared cache.
 * After a render is committed, its key is queued for the uploader thread,
 * which exports the entry and uploads it with ifGenerationMatch=0: the
 * reader never waits for an upload, concurrent writers never clobber each
 * other (412: stored already, fine), and a mount without write access (403)
 * stops trying after the first refusal, without an error for the user; a
 * read-only mount (-o ro) never uploads (read_only from the start). A
 * damaged copy found by the fetch is replaced, with ifGenerationMatch set to
 * its generation, so only that version is ever overwritten (a copy of
 * another key is left alone: it is sound, just not ours).
 *
 * Only gs:// sources share: their generation names the profile's version
 * everywhere, where a local file's size, mtime and inode do not (and hashing
 * its content would cost a good part of a render). Whole host views are
 * shared (summary, ops, steps, overview, kernels, overview.svg, trace.json.gz,
 * trace.pftrace): each costs a pass over the profile, and all but the two
 * traces are small next to it. trace.json is not: its render streams about
 * 700 MB/s of JSON from the first byte on (docs/fs.md), while its lz4 copy is
 * a fifth of it and must arrive whole and be checked before the first byte is
 * served, so fetching it is no faster on a good link and slower on the others
 * (bench/shared.sh). Tracks, slices and session summaries are rendered
 * locally.
 *
 * Faults: a fetch that fails on transport (not a 404) pauses fetching for
 * SHARED_PAUSE_S, so a broken bucket costs one retry deadline, not one per
 * view; the client's retry deadline and its stall timeout are at most
 * SHARED_DEADLINE_S, since a reader waits for a fetch where a render would
 * have served it.
 *
 * Locks: sh->lock guards the upload queue and the flags; it is a leaf, never
 * held across a request or a cache call.
 *
 * Limits: SHARED_QUEUE keys waiting for upload (more are dropped and
 * counted); an object fetched is at most the cache's cap plus its header.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xprofs/gcs.h"
#include "fs-internal.h"

#define SHARED_QUEUE 32
#define SHARED_PAUSE_S 30
#define SHARED_DEADLINE_S 10u
#define SHARED_HDR_SLACK (64u << 10) /* portable header + key on top of the entry */

struct fs_shared {
	struct fs_ctx *ctx; /* borrowed */
	char *url;          /* owned */
	struct xprofs_gcs_blobs *blobs;
	uint64_t max_object;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct xprofs_buf queue[SHARED_QUEUE]; /* keys to upload; under lock */
	uint64_t qgen[SHARED_QUEUE];           /* ... each with the generation it replaces */
	unsigned q_head, q_len;                /* under lock */
	bool stop, no_write;                   /* under lock */
	int64_t paused_until;                  /* mono ns; under lock */
	bool started;
	pthread_t th;
	/* counters (atomic) */
	uint64_t hits, misses, rejects, fetch_errors, skipped;
	uint64_t uploads, repairs, upload_exists, upload_errors, upload_dropped, bytes_fetched,
		bytes_uploaded;
};

#define SH_CNT(sh, f) __atomic_add_fetch(&(sh)->f, 1, __ATOMIC_RELAXED)
#define SH_GET(sh, f) __atomic_load_n(&(sh)->f, __ATOMIC_RELAXED)

/*
 * object_name() - PREFIX-relative name of @key (its last component is the
 * view name): "<16 hex>-<view>". The hash only spreads names; the key inside
 * the object is what is checked, so a collision is a rejected copy, never a
 * wrong view.
 */
static void object_name(const struct xprofs_buf *key, char *out, size_t n)
{
	const char *view = key->data, *end = key->data + key->len;

	for (const char *p = key->data; p < end; p++)
		if (*p == '\0' && p + 1 < end)
			view = p + 1;
	snprintf(out, n, "%016" PRIx64 "-%.64s", xprofs_hash64(key->data, key->len), view);
}

bool fs_shared_wanted(const struct fs_ctx *ctx, const struct fs_target *t)
{
	/* trace.json: a render streams it faster than its copy arrives (see the head comment) */
	return ctx->shared && ctx->cache && t->kind == FS_K_VIEW && t->slice == FS_SLICE_NONE &&
	       !t->lod && t->view != XPROFS_VIEW_TRACE;
}

int fs_shared_fetch(struct fs_ctx *ctx, const struct xprofs_buf *key, uint64_t *damaged_gen)
{
	struct fs_shared *sh = ctx->shared;
	char name[128];
	uint64_t len = 0, gen = 0;
	int64_t now = xprofs_mono_ns();
	bool paused;
	int fd, r;

	*damaged_gen = 0;
	pthread_mutex_lock(&sh->lock);
	paused = now < sh->paused_until;
	pthread_mutex_unlock(&sh->lock);
	if (paused) {
		SH_CNT(sh, skipped);
		return -EAGAIN;
	}
	object_name(key, name, sizeof(name));
	fd = xprofs_tmpfile(ctx->tmp_dir, "xprofs-shared");
	if (fd < 0)
		return fd;
	r = xprofs_gcs_blobs_get(sh->blobs, name, fd, sh->max_object, &len, &gen);
	if (r == 0) {
		int64_t got = xprofs_mono_ns();

		__atomic_add_fetch(&sh->bytes_fetched, len, __ATOMIC_RELAXED);
		r = xprofs_cache_import(ctx->cache, key->data, key->len, fd, len);
		xprofs_debug("shared cache: %s: %" PRIu64 " bytes fetched in %.3f s, checked and "
			     "imported in %.3f s: %s",
			     name, len, (double)(got - now) / 1e9,
			     (double)(xprofs_mono_ns() - got) / 1e9, r < 0 ? strerror(-r) : "ok");
		if (r == -ESTALE || r == -EBADMSG) {
			SH_CNT(sh, rejects);
			/* a damaged copy is replaced by ours; another key's sound one is left */
			*damaged_gen = r == -EBADMSG ? gen : 0;
			xprofs_warn("shared cache: %s/%s is %s: rendering instead", sh->url, name,
				    r == -ESTALE ? "another view's (foreign key)" : "damaged");
		} else if (r < 0) {
			SH_CNT(sh, fetch_errors);
			xprofs_warn("shared cache: %s/%s not imported: %s", sh->url, name,
				    strerror(-r));
		} else {
			SH_CNT(sh, hits);
		}
	} else if (r == -ENOENT) {
		SH_CNT(sh, misses);
	} else if (r == -EFBIG) {
		SH_CNT(sh, fetch_errors); /* bigger than this mount's cache may hold: not a fault */
	} else {
		SH_CNT(sh, fetch_errors);
		xprofs_warn("shared cache: %s/%s: %s; not asking again for %d s", sh->url, name,
			    strerror(-r), SHARED_PAUSE_S);
		pthread_mutex_lock(&sh->lock);
		sh->paused_until = xprofs_mono_ns() + (int64_t)SHARED_PAUSE_S * 1000000000;
		pthread_mutex_unlock(&sh->lock);
	}
	close(fd);
	return r;
}

void fs_shared_offer(struct fs_ctx *ctx, const struct xprofs_buf *key, uint64_t replace_gen)
{
	struct fs_shared *sh = ctx->shared;
	struct xprofs_buf *slot;
	bool dropped = false;

	pthread_mutex_lock(&sh->lock);
	if (sh->no_write || sh->stop) {
		pthread_mutex_unlock(&sh->lock);
		return;
	}
	if (sh->q_len == SHARED_QUEUE) {
		dropped = true;
	} else {
		slot = &sh->queue[(sh->q_head + sh->q_len) % SHARED_QUEUE];
		xprofs_buf_reset(slot);
		if (xprofs_buf_add(slot, key->data, key->len) < 0) {
			dropped = true;
		} else {
			sh->qgen[(sh->q_head + sh->q_len) % SHARED_QUEUE] = replace_gen;
			sh->q_len++;
		}
		pthread_cond_signal(&sh->cond);
	}
	pthread_mutex_unlock(&sh->lock);
	if (dropped)
		SH_CNT(sh, upload_dropped);
}

/*
 * upload() - export the local entry of @key and store it unless someone did
 * (@gen 0), or in place of exactly the damaged copy of generation @gen.
 */
static void upload(struct fs_shared *sh, const struct xprofs_buf *key, uint64_t gen)
{
	struct fs_ctx *ctx = sh->ctx;
	char name[128];
	uint64_t len = 0;
	int fd, r;

	object_name(key, name, sizeof(name));
	fd = xprofs_tmpfile(ctx->tmp_dir, "xprofs-shared");
	if (fd < 0) {
		SH_CNT(sh, upload_errors);
		return;
	}
	r = xprofs_cache_export(ctx->cache, key->data, key->len, fd, &len);
	if (r == 0)
		r = xprofs_gcs_blobs_put(sh->blobs, name, fd, len, gen);
	close(fd);
	if (r == 0) {
		SH_CNT(sh, uploads);
		if (gen)
			SH_CNT(sh, repairs);
		__atomic_add_fetch(&sh->bytes_uploaded, len, __ATOMIC_RELAXED);
	} else if (r == -EEXIST) {
		SH_CNT(sh, upload_exists); /* another mount stored it first */
	} else if (r == -EACCES) {
		pthread_mutex_lock(&sh->lock);
		sh->no_write = true;
		sh->q_len = 0;
		pthread_mutex_unlock(&sh->lock);
		xprofs_info("shared cache: %s is read-only for us: fetching only", sh->url);
	} else {
		SH_CNT(sh, upload_errors);
		xprofs_debug("shared cache: upload of %s/%s: %s", sh->url, name, strerror(-r));
	}
}

static void *uploader_main(void *arg)
{
	struct fs_shared *sh = arg;
	struct xprofs_buf key;
	uint64_t gen;

	xprofs_buf_init(&key, XPROFS_CACHE_KEY_MAX);
	pthread_mutex_lock(&sh->lock);
	for (;;) {
		while (!sh->stop && !sh->q_len)
			pthread_cond_wait(&sh->cond, &sh->lock);
		if (sh->stop)
			break;
		xprofs_buf_reset(&key);
		if (xprofs_buf_add(&key, sh->queue[sh->q_head].data, sh->queue[sh->q_head].len) < 0)
			xprofs_buf_reset(&key);
		gen = sh->qgen[sh->q_head];
		sh->q_head = (sh->q_head + 1) % SHARED_QUEUE;
		sh->q_len--;
		pthread_mutex_unlock(&sh->lock);
		if (key.len)
			upload(sh, &key, gen);
		pthread_mutex_lock(&sh->lock);
	}
	pthread_mutex_unlock(&sh->lock);
	xprofs_buf_deinit(&key);
	return NULL;
}

int fs_shared_start(struct fs_ctx *ctx)
{
	const struct fs_options *o = ctx->o;
	struct xprofs_gcs_options go = {0};
	struct fs_shared *sh;
	int r;

	if (!o->shared_cache)
		return 0;
	if (!ctx->cache) {
		xprofs_warn("shared cache: no local cache to import into: not used");
		return 0;
	}
	sh = calloc(1, sizeof(*sh));
	if (!sh)
		return -ENOMEM;
	sh->ctx = ctx;
	pthread_mutex_init(&sh->lock, NULL);
	pthread_cond_init(&sh->cond, NULL);
	for (size_t i = 0; i < SHARED_QUEUE; i++)
		xprofs_buf_init(&sh->queue[i], XPROFS_CACHE_KEY_MAX);
	sh->max_object = o->cache_max_bytes + SHARED_HDR_SLACK;
	/* -o ro promises no writes through this mount: fetch, never upload */
	sh->no_write = o->ro;
	sh->url = strdup(o->shared_cache);
	go.endpoint = o->endpoint;
	go.anonymous = o->anonymous;
	go.credentials = o->credentials;
	go.billing_project = o->billing_project;
	go.connections = 2;
	go.retry_deadline_s = o->retry_deadline && o->retry_deadline < SHARED_DEADLINE_S
				      ? o->retry_deadline
				      : SHARED_DEADLINE_S;
	go.stall_timeout_s = o->stall_timeout && o->stall_timeout < SHARED_DEADLINE_S
				     ? o->stall_timeout
				     : SHARED_DEADLINE_S;
	r = sh->url ? xprofs_gcs_blobs_new(o->shared_cache, &go, &sh->blobs) : -ENOMEM;
	if (r == 0) {
		r = -pthread_create(&sh->th, NULL, uploader_main, sh);
		sh->started = r == 0;
	}
	if (r < 0) {
		ctx->shared = sh;
		fs_shared_stop(ctx);
		return r;
	}
	ctx->shared = sh;
	xprofs_info("shared cache: %s%s", sh->url, o->ro ? " (read-only mount: fetch only)" : "");
	return 0;
}

void fs_shared_stop(struct fs_ctx *ctx)
{
	struct fs_shared *sh = ctx->shared;

	if (!sh)
		return;
	pthread_mutex_lock(&sh->lock);
	sh->stop = true; /* queued uploads are dropped; the one running ends first */
	pthread_cond_signal(&sh->cond);
	pthread_mutex_unlock(&sh->lock);
	if (sh->started)
		pthread_join(sh->th, NULL);
	xprofs_gcs_blobs_free(sh->blobs);
	for (size_t i = 0; i < SHARED_QUEUE; i++)
		xprofs_buf_deinit(&sh->queue[i]);
	pthread_cond_destroy(&sh->cond);
	pthread_mutex_destroy(&sh->lock);
	free(sh->url);
	free(sh);
	ctx->shared = NULL;
}

int fs_shared_status_json(struct fs_ctx *ctx, struct xprofs_buf *out)
{
	struct fs_shared *sh = ctx->shared;
	unsigned queued;
	bool no_write;
	int r;

	if (!sh)
		return xprofs_buf_adds(out, "null");
	pthread_mutex_lock(&sh->lock);
	queued = sh->q_len;
	no_write = sh->no_write;
	pthread_mutex_unlock(&sh->lock);
	r = xprofs_buf_add_json_member(out, "{\"url\":", sh->url);
	if (r == 0)
		r = xprofs_buf_printf(
			out,
			",\"hits\":%" PRIu64 ",\"misses\":%" PRIu64 ",\"rejects\":%" PRIu64
			",\"fetch_errors\":%" PRIu64 ",\"skipped\":%" PRIu64 ",\"uploads\":%" PRIu64
			",\"repairs\":%" PRIu64 ",\"upload_exists\":%" PRIu64
			",\"upload_errors\":%" PRIu64 ",\"upload_dropped\":%" PRIu64
			",\"upload_queued\":%u,\"read_only\":%s"
			",\"bytes_fetched\":%" PRIu64 ",\"bytes_uploaded\":%" PRIu64 ",\"store\":",
			SH_GET(sh, hits), SH_GET(sh, misses), SH_GET(sh, rejects),
			SH_GET(sh, fetch_errors), SH_GET(sh, skipped), SH_GET(sh, uploads),
			SH_GET(sh, repairs), SH_GET(sh, upload_exists), SH_GET(sh, upload_errors),
			SH_GET(sh, upload_dropped), queued, no_write ? "true" : "false",
			SH_GET(sh, bytes_fetched), SH_GET(sh, bytes_uploaded));
	if (r == 0)
		r = xprofs_gcs_blobs_status_json(sh->blobs, out);
	if (r == 0)
		r = xprofs_buf_adds(out, "}");
	return r;
}
