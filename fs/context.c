/*
 * fs/context.c - the mount context every other fs file works in: its life
 * cycle (store, cache, capture service), access to the runs index snapshot
 * and its invalidation, and path classification against it. No FUSE here.
 *
 * Design: the runs index (index.c) is an immutable snapshot shared by
 * reference. It is rebuilt when older than `refresh`, or after a change made
 * through the mount or by a capture (fs_invalidate_index(), which only sets
 * a flag: it is called from FUSE handlers and from capture threads). One
 * thread rebuilds at a time, outside the lock.
 *
 * Locks: index_lock guards the snapshot pointer and the rebuild flag; it is
 * never held while calling out (store, other locks). See docs/fs.md for the
 * order of all fs locks.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs-internal.h"

void fs_invalidate_index(struct fs_ctx *ctx)
{
	__atomic_store_n(&ctx->index_dirty, 1, __ATOMIC_RELEASE);
}

/*
 * index_get() - a reference to a fresh enough snapshot (caller puts), or NULL.
 *
 * While one thread rebuilds, readers that only find the index old (refresh
 * expired) keep using the old one; readers after a change made through the
 * mount (dirty) wait for a rebuild that started after that change. Only an
 * expired index asks the store to drop its own listing caches (for gs://, a
 * re-list of the bucket): changes made through the mount are already in the
 * store's view.
 */
static struct fs_index *index_get(struct fs_ctx *ctx)
{
	struct fs_index *idx, *fresh;
	bool expired, dirty;
	int r;

	pthread_mutex_lock(&ctx->index_lock);
	for (;;) {
		idx = ctx->index;
		dirty = __atomic_load_n(&ctx->index_dirty, __ATOMIC_ACQUIRE);
		expired = idx && xprofs_mono_ns() - idx->built_mono_ns >= ctx->refresh_ns;
		if (idx && !dirty && !expired)
			break;
		if (ctx->index_building) {
			if (idx && !dirty)
				break; /* stale is fine while someone rebuilds */
			pthread_cond_wait(&ctx->index_cond, &ctx->index_lock);
			continue;
		}
		ctx->index_building = true;
		__atomic_store_n(&ctx->index_dirty, 0, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&ctx->index_lock);
		if (expired || !idx)
			xprofs_store_refresh(ctx->store);
		r = fs_index_build(ctx->store, &fresh);
		FS_CNT(ctx, index_builds);
		pthread_mutex_lock(&ctx->index_lock);
		ctx->index_building = false;
		pthread_cond_broadcast(&ctx->index_cond);
		if (r == 0) {
			fs_index_put(ctx->index);
			ctx->index = fresh;
			xprofs_debug("runs index: %lu runs, %lu sessions, %lu hosts",
				     (unsigned long)fresh->runs, (unsigned long)fresh->sessions,
				     (unsigned long)fresh->hosts);
		} else {
			xprofs_err("runs index: %s (keeping the previous one)", strerror(-r));
		}
		break;
	}
	idx = fs_index_get(ctx->index);
	pthread_mutex_unlock(&ctx->index_lock);
	return idx;
}

struct fs_index *fs_index_snapshot(struct fs_ctx *ctx)
{
	struct fs_index *idx;

	pthread_mutex_lock(&ctx->index_lock);
	idx = fs_index_get(ctx->index);
	pthread_mutex_unlock(&ctx->index_lock);
	return idx;
}

int fs_classify(struct fs_ctx *ctx, const char *path, struct fs_index **idx, struct fs_target *t)
{
	static const char runs[] = "/" FS_NAME_RUNS;
	int r;

	*idx = NULL;
	if (!strncmp(path, runs, sizeof(runs) - 1) &&
	    (path[sizeof(runs) - 1] == '/' || !path[sizeof(runs) - 1]))
		*idx = index_get(ctx);
	r = fs_path_classify(*idx, path, t);
	if (r == -ENOENT && t->bad) {
		char why[512];

		fs_bad_name_why(t, why, sizeof(why));
		fs_refused(ctx, "%s: no such slice: %s", path, why);
	}
	return r;
}

void fs_refused(struct fs_ctx *ctx, const char *fmt, ...)
{
	char msg[1024];
	uint64_t h;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	h = xprofs_hash64(msg, strlen(msg)) | 1;
	/* a message seen in its slot just now is not logged again */
	if (__atomic_exchange_n(&ctx->refused[h % FS_BADNAMES], h, __ATOMIC_RELAXED) == h)
		return;
	xprofs_log(XPROFS_LOG_NOTICE, "%s", msg);
}

bool fs_store_is_local(const struct fs_ctx *ctx)
{
	return !strcmp(xprofs_store_backend(ctx->store), "local");
}

/* ---- life cycle ---------------------------------------------------------- */

/* capture_notify() - a capture wrote a new session (called on a capture thread). */
static void capture_notify(void *arg, const char *run, const char *session)
{
	struct fs_ctx *ctx = arg;

	xprofs_info("capture: new session %s in run \"%s\"", session, run);
	fs_invalidate_index(ctx);
}

int fs_ctx_init(struct fs_ctx *ctx, struct fs_options *o, struct xprofs_store *store,
		struct xprofs_cache *cache)
{
	int r;

	memset(ctx, 0, sizeof(*ctx));
	ctx->o = o;
	ctx->store = store;
	ctx->cache = cache;
	ctx->uid = getuid();
	ctx->gid = getgid();
	ctx->start_mono_ns = xprofs_mono_ns();
	ctx->refresh_ns = (int64_t)o->refresh * 1000000000LL;
	/*
	 * Never the cache dir: a render falls back to a temp file when the
	 * cache's disk is full, so it must not land on that same disk.
	 */
	ctx->tmp_dir = xprofs_tmpdir(o->tmp_dir);
	pthread_mutex_init(&ctx->index_lock, NULL);
	pthread_cond_init(&ctx->index_cond, NULL);
	if (!o->ro) {
		r = xprofs_capture_new(store, capture_notify, ctx, &ctx->capture);
		if (r < 0)
			xprofs_warn("capture: unavailable: %s", strerror(-r));
	}
	return 0;
}

void fs_ctx_deinit(struct fs_ctx *ctx)
{
	ctx->capture = xprofs_capture_free(ctx->capture);
	fs_index_put(ctx->index);
	ctx->index = NULL;
	/* the store first: a gs:// store's threads write to the cache until it is freed */
	ctx->store = xprofs_store_free(ctx->store);
	ctx->cache = xprofs_cache_free(ctx->cache);
	pthread_mutex_destroy(&ctx->index_lock);
	pthread_cond_destroy(&ctx->index_cond);
}
