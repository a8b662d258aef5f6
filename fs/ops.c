/*
 * fs/ops.c - the FUSE operations of xprofs (high-level, path-based API) and
 * the mount context they share.
 *
 * Design:
 * - logdir/... maps 1:1 onto the store. Reads pread the store file; writes
 *   go through store writers. The no-overwrite rule for "*.xplane.pb" lives
 *   here: an existing profile cannot be opened for writing, truncated,
 *   unlinked, renamed or renamed over (EPERM); a new one is created with
 *   XPROFS_STORE_EXCL (visible when closed).
 * - runs/... is resolved against an immutable runs index snapshot
 *   (index.c), rebuilt when older than `refresh` or after a change made
 *   through the mount or by a capture.
 * - Generated files (views, tracks, session summaries) are rendered on open,
 *   never on getattr/readdir, straight into a cache writer under a key naming
 *   the source file's version; the committed entry serves this open, and
 *   later opens (and later mounts) are cache hits. Only without a usable
 *   cache (no_cache, bad dir, entry refused) does a render go to an unlinked
 *   temporary file. A render in flight is waited for, not repeated
 *   (single-flight by key hash). A damaged cache block under an open view is
 *   re-rendered in place (gen_reopen()). They are served with direct_io;
 *   getattr reports the rendered size when known (memory, then a cache peek
 *   that is not a use) and 0 before the first render. After a render the
 *   kernel's attributes are invalidated so fstat() after open is exact.
 * - Writers of stores that upload on commit (gs://) upload in flush (every
 *   close()) and fsync, so the failure is close()'s error; release commits
 *   only what changed after the last flush.
 * - Small virtual files (status.json, errors, capture) are snapshotted into
 *   memory at open.
 *
 * Limits: see fs-internal.h (FS_*). Timestamps/modes of logdir files cannot
 * be changed (chmod/chown/utimens succeed without effect).
 */
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "xprofs/decode.h"
#include "xprofs/fs.h"
#include "fs-internal.h"

#define CNT(ctx, f) __atomic_add_fetch(&(ctx)->c.f, 1, __ATOMIC_RELAXED)
#define CNT_ADD(ctx, f, n) __atomic_add_fetch(&(ctx)->c.f, (n), __ATOMIC_RELAXED)
#define CNT_GET(ctx, f) __atomic_load_n(&(ctx)->c.f, __ATOMIC_RELAXED)

enum fh_kind { FH_READER = 1, FH_WRITER, FH_FD, FH_CACHE, FH_MEM, FH_CAPTURE };

/* An open file. Writers are serialised by @lock (backends need not be). */
struct fs_fh {
	enum fh_kind kind;
	pthread_mutex_t lock;
	struct xprofs_store_file *rf;  /* FH_READER; owned */
	struct xprofs_store_writer *w; /* FH_WRITER; owned */
	uint64_t wsize;                /* FH_WRITER: size as written so far */
	bool profile;                  /* FH_WRITER of a new *.xplane.pb */
	bool dirty;                    /* FH_WRITER: changed since the last flush (under @lock) */
	bool published;                /* FH_WRITER: a local new profile linked in by a flush */
	int publish_err;               /* FH_WRITER: why that publish failed (-errno), else 0 */
	char *spath;                   /* FH_WRITER: store path; owned */
	int fd;                        /* FH_FD: unlinked rendered file; owned */
	struct xprofs_cache_entry *ce; /* FH_CACHE: a cache hit; owned */
	uint64_t size;                 /* FH_FD, FH_MEM */
	char *mem;                     /* FH_MEM, FH_CAPTURE (read snapshot); owned */
	char *run;                     /* FH_CAPTURE: run store path; NULL = top level; owned */
};

static struct fs_ctx *ctx_get(void)
{
	return fuse_get_context()->private_data;
}

/* ---- runs index ------------------------------------------------------- */

void fs_invalidate_index(struct fs_ctx *ctx)
{
	__atomic_store_n(&ctx->index_dirty, 1, __ATOMIC_RELEASE);
}

/*
 * index_get() - a reference to a fresh enough snapshot (caller puts), or NULL.
 *
 * One thread rebuilds at a time, outside the lock. While it does, readers
 * that only find the index old (refresh expired) keep using the old one;
 * readers after a change made through the mount (dirty) wait for a rebuild
 * that started after that change. Only an expired index asks the store to
 * drop its own listing caches (for gs://, a re-list of the bucket): changes
 * made through the mount are already in the store's view.
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
		CNT(ctx, index_builds);
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

/* ---- small per-mount tables ------------------------------------------- */

static uint64_t stat_key(const char *path, const struct xprofs_store_stat *st, const char *what)
{
	uint64_t v[4] = { xprofs_hash64(path, strlen(path)), st->size, (uint64_t)st->mtime_ns,
			  st->generation };
	uint64_t h = xprofs_hash64(v, sizeof(v));

	v[0] = h;
	v[1] = xprofs_hash64(what, strlen(what));
	return xprofs_hash64(v, 2 * sizeof(v[0])) | 1; /* never 0 */
}

static bool size_lookup(struct fs_ctx *ctx, uint64_t key, uint64_t *size)
{
	size_t i = key % FS_SIZES;
	bool found;

	pthread_mutex_lock(&ctx->lock);
	found = ctx->sizes_key[i] == key;
	if (found)
		*size = ctx->sizes_val[i];
	pthread_mutex_unlock(&ctx->lock);
	return found;
}

static void size_store(struct fs_ctx *ctx, uint64_t key, uint64_t size)
{
	size_t i = key % FS_SIZES;

	pthread_mutex_lock(&ctx->lock);
	ctx->sizes_key[i] = key;
	ctx->sizes_val[i] = size;
	pthread_mutex_unlock(&ctx->lock);
}

/*
 * error_note() - remember @msg for host @hpath (its errors file) and log it.
 * @st: the profile version it is about (borrowed; NULL: none): the text of an
 * older version is dropped, so a replaced profile starts with an empty file.
 */
static void error_note(struct fs_ctx *ctx, const char *hpath, const struct xprofs_store_stat *st,
		       const char *what, const char *msg)
{
	uint64_t ver = st ? stat_key(hpath, st, "errors") : 0;
	struct fs_errors *e = NULL;
	size_t i;

	xprofs_err("%s: %s: %s", hpath, what, msg);
	pthread_mutex_lock(&ctx->lock);
	for (i = 0; i < FS_ERRHOSTS; i++)
		if (ctx->errors[i].path && !strcmp(ctx->errors[i].path, hpath))
			e = &ctx->errors[i];
	if (!e) {
		e = &ctx->errors[ctx->errors_next];
		ctx->errors_next = (ctx->errors_next + 1) % FS_ERRHOSTS;
		free(e->path);
		xprofs_buf_deinit(&e->text);
		xprofs_buf_init(&e->text, FS_ERRMAX);
		e->path = strdup(hpath);
	}
	if (e->ver != ver || e->text.len > FS_ERRMAX / 2)
		xprofs_buf_reset(&e->text);
	e->ver = ver;
	if (xprofs_buf_printf(&e->text, "%s: %s\n", what, msg) < 0)
		xprofs_buf_reset(&e->text);
	pthread_mutex_unlock(&ctx->lock);
}

/* errors_snapshot() - append the errors of host @hpath at version @st to @out. */
static int errors_snapshot(struct fs_ctx *ctx, const char *hpath, const struct xprofs_store_stat *st,
			   struct xprofs_buf *out)
{
	uint64_t ver = stat_key(hpath, st, "errors");
	int r = 0;

	pthread_mutex_lock(&ctx->lock);
	for (size_t i = 0; i < FS_ERRHOSTS; i++)
		if (ctx->errors[i].path && !strcmp(ctx->errors[i].path, hpath) &&
		    ctx->errors[i].ver == ver && ctx->errors[i].text.len)
			r = xprofs_buf_add(out, ctx->errors[i].text.data, ctx->errors[i].text.len);
	pthread_mutex_unlock(&ctx->lock);
	return r;
}

/* sf_begin() - claim render @key; false when another thread is rendering it (then waits for it). */
static bool sf_begin(struct fs_ctx *ctx, uint64_t key)
{
	size_t i, free_slot = FS_INFLIGHT;
	bool waited = false;

	pthread_mutex_lock(&ctx->lock);
	for (;;) {
		bool busy = false;

		free_slot = FS_INFLIGHT;
		for (i = 0; i < FS_INFLIGHT; i++) {
			if (ctx->inflight[i] == key)
				busy = true;
			else if (!ctx->inflight[i] && free_slot == FS_INFLIGHT)
				free_slot = i;
		}
		if (!busy && waited)
			break;
		if (!busy && free_slot < FS_INFLIGHT) {
			ctx->inflight[free_slot] = key;
			pthread_mutex_unlock(&ctx->lock);
			return true;
		}
		waited = busy;
		pthread_cond_wait(&ctx->cond, &ctx->lock);
	}
	pthread_mutex_unlock(&ctx->lock);
	CNT(ctx, render_waits);
	return false;
}

static void sf_end(struct fs_ctx *ctx, uint64_t key)
{
	pthread_mutex_lock(&ctx->lock);
	for (size_t i = 0; i < FS_INFLIGHT; i++)
		if (ctx->inflight[i] == key)
			ctx->inflight[i] = 0;
	pthread_cond_broadcast(&ctx->cond);
	pthread_mutex_unlock(&ctx->lock);
}

/* ---- decoding --------------------------------------------------------- */

/* An opened profile: the store file and its index. */
struct prof {
	struct xprofs_store_file *f;
	struct xprofs_reader r;
	struct xprofs_xspace *x;
	struct xprofs_store_stat st;
};

static void prof_close(struct prof *p)
{
	p->x = xprofs_xspace_free(p->x);
	xprofs_store_close(p->f);
	p->f = NULL;
}

/*
 * prof_open() - open store file @hpath (borrowed) into @p; with @decode also
 * index it (reason appended to @err). Caller owns @p's members on success;
 * release with prof_close().
 */
static int prof_open(struct fs_ctx *ctx, const char *hpath, bool decode, struct prof *p,
		     struct xprofs_buf *err)
{
	int r;

	memset(p, 0, sizeof(*p));
	r = xprofs_store_open(ctx->store, hpath, &p->f);
	if (r < 0)
		return r;
	r = xprofs_store_file_stat(p->f, &p->st);
	if (r == 0)
		r = xprofs_store_file_reader(p->f, &p->r);
	if (r == 0 && decode)
		r = xprofs_xspace_open(&p->r, err, &p->x);
	if (r < 0)
		prof_close(p);
	return r;
}

static void tracks_free(struct fs_track_list *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->planes[i]);
		free(t->lines[i]);
	}
	free(t->planes);
	free(t->lines);
	memset(t, 0, sizeof(*t));
}

/*
 * tracks_get() - the track list of host @hpath at version @st, decoded once
 * per version. On success returns with ctx->lock HELD and *@out valid until
 * the caller unlocks.
 */
static int tracks_get(struct fs_ctx *ctx, const char *hpath, const struct xprofs_store_stat *st,
		      struct fs_track_list **out)
{
	uint64_t key = stat_key(hpath, st, "tracks");
	struct fs_track_list nt = { 0 }, *slot;
	struct xprofs_buf err;
	struct prof p;
	size_t i, lru = 0;
	int r;

	pthread_mutex_lock(&ctx->lock);
	for (i = 0; i < FS_TRACKS; i++) {
		if (ctx->tracks[i].key == key) {
			ctx->tracks[i].used = ++ctx->tick;
			*out = &ctx->tracks[i];
			return 0;
		}
	}
	pthread_mutex_unlock(&ctx->lock);

	xprofs_buf_init(&err, 4096);
	r = prof_open(ctx, hpath, true, &p, &err);
	if (r < 0) {
		error_note(ctx, hpath, st, "planes", err.data ? err.data : strerror(-r));
		xprofs_buf_deinit(&err);
		return r == -ENOENT ? r : -EIO;
	}
	nt.n = xprofs_xspace_track_count(p.x);
	nt.planes = calloc(nt.n ? nt.n : 1, sizeof(char *));
	nt.lines = calloc(nt.n ? nt.n : 1, sizeof(char *));
	r = nt.planes && nt.lines ? 0 : -ENOMEM;
	for (i = 0; r == 0 && i < nt.n; i++) {
		const char *pl, *ln;

		r = xprofs_xspace_track_names(p.x, i, &pl, &ln);
		if (r == 0) {
			nt.planes[i] = strdup(pl);
			nt.lines[i] = strdup(ln);
			if (!nt.planes[i] || !nt.lines[i])
				r = -ENOMEM;
		}
	}
	prof_close(&p);
	xprofs_buf_deinit(&err);
	if (r < 0) {
		tracks_free(&nt);
		return r;
	}
	nt.key = key;
	pthread_mutex_lock(&ctx->lock);
	for (i = 1; i < FS_TRACKS; i++)
		if (ctx->tracks[i].used < ctx->tracks[lru].used)
			lru = i;
	slot = &ctx->tracks[lru];
	tracks_free(slot);
	*slot = nt;
	slot->used = ++ctx->tick;
	*out = slot;
	return 0;
}

/* The identity of a generated file: cache key text, its hash, the host it explains. */
struct gen_id {
	struct xprofs_buf key;
	uint64_t hash;
	char hpath[FS_PATH_MAX + 1]; /* host store path ("" for session summaries) */
	struct xprofs_store_stat st;
};

static int host_path(const struct fs_target *t, char *buf, size_t size)
{
	return fs_store_path(buf, size, t->node->path, t->session->name, t->host->name);
}

static int key_add_file(struct xprofs_buf *k, const char *path, const struct xprofs_store_stat *st)
{
	int r = xprofs_buf_add(k, path, strlen(path) + 1);

	if (r == 0)
		r = xprofs_buf_printf(k, "%lu", (unsigned long)st->size);
	if (r == 0)
		r = xprofs_buf_add(k, "", 1);
	if (r == 0)
		r = xprofs_buf_printf(k, "%ld", (long)st->mtime_ns);
	if (r == 0)
		r = xprofs_buf_add(k, "", 1);
	if (r == 0)
		r = xprofs_buf_printf(k, "%lu", (unsigned long)st->generation);
	if (r == 0)
		r = xprofs_buf_add(k, "", 1);
	return r;
}

/*
 * gen_id_make() - the cache key of generated file @t: "xprofs-view-v1",
 * version, source, then the store path and version (size, mtime,
 * generation) of each profile it is made from, then what is rendered.
 * @st: the host's version (from the open file, or the index); borrowed.
 * Caller owns @id->key (xprofs_buf_deinit()), also on failure.
 */
static int gen_id_make(struct fs_ctx *ctx, const struct fs_target *t,
		       const struct xprofs_store_stat *st, struct gen_id *id)
{
	const char *src = xprofs_store_source(ctx->store);
	char p[FS_PATH_MAX + 1];
	int r;

	xprofs_buf_init(&id->key, XPROFS_CACHE_KEY_MAX);
	id->hpath[0] = '\0';
	r = xprofs_buf_add(&id->key, "xprofs-view-v1\0" XPROFS_VERSION, 16 + strlen(XPROFS_VERSION));
	if (r == 0)
		r = xprofs_buf_add(&id->key, src, strlen(src) + 1);
	if (r < 0)
		return r;
	if (t->kind == FS_K_SESSION_SUMMARY) {
		for (size_t i = 0; r == 0 && i < t->session->nhosts; i++) {
			r = fs_store_path(p, sizeof(p), t->node->path, t->session->name,
					  t->session->hosts[i].name);
			if (r == 0)
				r = key_add_file(&id->key, p, &t->session->hosts[i].st);
		}
		if (r == 0)
			r = xprofs_buf_adds(&id->key, "session-summary");
	} else {
		r = host_path(t, id->hpath, sizeof(id->hpath));
		if (r == 0)
			r = key_add_file(&id->key, id->hpath, st);
		if (r == 0 && t->kind == FS_K_VIEW)
			r = xprofs_buf_adds(&id->key, xprofs_view_name(t->view));
		if (r == 0 && t->kind == FS_K_TRACK) {
			r = xprofs_buf_printf(&id->key, "track");
			if (r == 0)
				r = xprofs_buf_add(&id->key, "", 1);
			if (r == 0)
				r = xprofs_buf_add(&id->key, t->plane, strlen(t->plane) + 1);
			if (r == 0)
				r = xprofs_buf_adds(&id->key, t->line);
		}
	}
	if (r < 0)
		return r == -E2BIG ? -ENAMETOOLONG : r;
	id->hash = xprofs_hash64(id->key.data, id->key.len) | 1;
	return 0;
}

/* render_session() - the session summary.json into @out (borrowed); opens and frees every host. */
static int render_session(struct fs_ctx *ctx, const struct fs_target *t,
			  const struct xprofs_sink *out, struct xprofs_buf *err)
{
	size_t n = t->session->nhosts, i;
	struct prof *ps = calloc(n ? n : 1, sizeof(*ps));
	const char **names = calloc(n ? n : 1, sizeof(char *));
	struct xprofs_xspace **xs = calloc(n ? n : 1, sizeof(*xs));
	char **errs = calloc(n ? n : 1, sizeof(char *));
	char p[FS_PATH_MAX + 1];
	struct xprofs_buf e;
	int r = -ENOMEM;

	if (!ps || !names || !xs || !errs)
		goto out;
	for (i = 0; i < n; i++) {
		names[i] = t->session->hosts[i].name;
		xprofs_buf_init(&e, 4096);
		r = fs_store_path(p, sizeof(p), t->node->path, t->session->name, names[i]);
		if (r == 0)
			r = prof_open(ctx, p, true, &ps[i], &e);
		if (r < 0) {
			errs[i] = xprofs_buf_steal(&e, NULL);
			if (!errs[i])
				errs[i] = strdup(strerror(-r));
			error_note(ctx, p, &t->session->hosts[i].st, "summary", errs[i] ? errs[i] : "?");
		}
		xs[i] = ps[i].x;
		xprofs_buf_deinit(&e);
	}
	r = xprofs_decode_session_summary(t->session->name, names, xs,
					  (const char *const *)errs, n, out);
	if (r < 0 && xprofs_buf_printf(err, "session summary: %s", strerror(-r)) < 0)
		xprofs_buf_reset(err);
out:
	for (i = 0; ps && errs && i < n; i++) {
		prof_close(&ps[i]);
		free(errs[i]);
	}
	free(ps);
	free(names);
	free(xs);
	free(errs);
	return r;
}

/*
 * render() - generated file @t from open profile @p (host views) into @out.
 * Borrows everything; @p->x is set if it was not (freed by prof_close()), so
 * a second render of the same open profile does not index it again.
 */
static int render(struct fs_ctx *ctx, const struct fs_target *t, struct prof *p,
		  const struct xprofs_sink *out, struct xprofs_buf *err)
{
	int r, i;

	if (t->kind == FS_K_SESSION_SUMMARY)
		return render_session(ctx, t, out, err);
	if (!p->x) {
		r = xprofs_xspace_open(&p->r, err, &p->x);
		if (r < 0)
			return r;
	}
	if (t->kind == FS_K_VIEW)
		return xprofs_xspace_render(p->x, t->view, out, err);
	i = xprofs_xspace_track_find(p->x, t->plane, t->line);
	if (i < 0)
		return i;
	return xprofs_xspace_render_track(p->x, (size_t)i, out, err);
}

/* tmp_fd() - an unlinked temporary file in ctx->tmp_dir; caller owns the fd. */
static int tmp_fd(struct fs_ctx *ctx)
{
	char tmpl[PATH_MAX];
	int fd;

	fd = open(ctx->tmp_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0)
		return fd;
	snprintf(tmpl, sizeof(tmpl), "%s/xprofs-render-XXXXXX", ctx->tmp_dir);
	fd = mkostemp(tmpl, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	unlink(tmpl);
	return fd;
}

/*
 * A sink into a cache writer that remembers the writer's own error, so that a
 * failed render can tell "the cache refused the bytes" (too big for the cap,
 * disk full: fall back to a temporary file) from "the profile does not
 * decode" (an error for the user).
 */
struct cw_sink {
	struct xprofs_cache_writer *w; /* borrowed */
	int err;
};

static int cw_write(void *arg, const void *p, size_t n)
{
	struct cw_sink *cs = arg;
	int r = xprofs_cache_writer_write(cs->w, p, n);

	if (r < 0 && !cs->err)
		cs->err = r;
	return r;
}

#define RENDER_NO_CACHE 1 /* render_cached(): the cache could not take it; use a temp file */

/*
 * render_cached() - render @t straight into a cache entry under @id, publish
 * it and open it: the bytes are written once, compressed, and no temporary
 * copy of the whole view is needed. 0 with *@out open (caller owns; close
 * with xprofs_cache_entry_close()); RENDER_NO_CACHE when the cache could not
 * store or reopen it (the caller renders to a temporary file instead); or the
 * render's -errno (reason in @err).
 */
static int render_cached(struct fs_ctx *ctx, const struct fs_target *t, struct prof *p,
			 const struct gen_id *id, struct xprofs_buf *err,
			 struct xprofs_cache_entry **out)
{
	struct cw_sink cs = { 0 };
	struct xprofs_sink sink = { cw_write, &cs };
	int r;

	r = xprofs_cache_writer_new(ctx->cache, id->key.data, id->key.len, &cs.w);
	if (r < 0) {
		xprofs_warn("cache: cannot write an entry (%s): rendering to a temporary file",
			    strerror(-r));
		return RENDER_NO_CACHE;
	}
	r = render(ctx, t, p, &sink, err);
	if (r < 0) {
		xprofs_cache_writer_abort(cs.w);
		if (!cs.err)
			return r;
		xprofs_warn("cache: entry not stored (%s): rendering to a temporary file",
			    strerror(-cs.err));
		xprofs_buf_reset(err);
		return RENDER_NO_CACHE;
	}
	r = xprofs_cache_writer_commit(cs.w);
	if (r == 0)
		r = xprofs_cache_open(ctx->cache, id->key.data, id->key.len, out);
	if (r < 0) {
		xprofs_warn("cache: entry not stored or gone at once (%s): rendering to a temporary file",
			    strerror(-r));
		return RENDER_NO_CACHE;
	}
	return 0;
}

#define SIZE_UNKNOWN UINT64_MAX /* in the sizes table: not rendered, not in the cache */

/* gen_size() - the size a generated file will have, if known; else 0. */
static uint64_t gen_size(struct fs_ctx *ctx, const struct fs_target *t)
{
	struct gen_id id;
	uint64_t size = 0;

	if (gen_id_make(ctx, t, t->host ? &t->host->st : NULL, &id) < 0)
		goto out;
	if (size_lookup(ctx, id.hash, &size)) {
		if (size == SIZE_UNKNOWN)
			size = 0;
		goto out;
	}
	/* a peek is not a use: no hit in status.json, no recency bump for ls -l */
	if (ctx->cache && xprofs_cache_peek_size(ctx->cache, id.key.data, id.key.len, &size) == 0) {
		size_store(ctx, id.hash, size);
	} else {
		/* remembered so repeated getattr/ls does not probe the disk cache */
		size_store(ctx, id.hash, SIZE_UNKNOWN);
	}
out:
	xprofs_buf_deinit(&id.key);
	return size;
}

/*
 * gen_open() - open generated file @t: a cache hit, else render (once across
 * concurrent opens) straight into the cache and serve the new entry (FH_CACHE);
 * without a usable cache, render into an unlinked temporary file (FH_FD).
 * Fills @fh. -EIO with the reason in the host's errors file when the profile
 * does not decode.
 */
static int gen_open(struct fs_ctx *ctx, const char *mpath, const struct fs_target *t, struct fs_fh *fh)
{
	struct xprofs_cache_entry *e = NULL;
	struct prof p = { 0 };
	struct xprofs_buf err;
	struct xprofs_sink sink;
	struct gen_id id = { 0 };
	struct stat sb;
	uint64_t known = 0;
	bool had_size, owner = false, hit = false;
	int r, fd = -1, attempt;

	xprofs_buf_init(&err, 4096);
	if (t->kind != FS_K_SESSION_SUMMARY) {
		/* the open file's own version names the cache entry */
		r = host_path(t, id.hpath, sizeof(id.hpath));
		if (r == 0)
			r = prof_open(ctx, id.hpath, false, &p, &err);
		if (r < 0)
			goto out;
	}
	r = gen_id_make(ctx, t, p.f ? &p.st : NULL, &id);
	if (r < 0)
		goto out;
	had_size = size_lookup(ctx, id.hash, &known);
	/* without a cache, renders cannot be shared: no point in waiting */
	for (attempt = 0; ctx->cache && attempt < 3 && !owner; attempt++) {
		if (xprofs_cache_open(ctx->cache, id.key.data, id.key.len, &e) == 0)
			break;
		owner = sf_begin(ctx, id.hash);
	}
	hit = e != NULL;
	if (!e) {
		if (!owner && ctx->cache)
			owner = sf_begin(ctx, id.hash);
		CNT(ctx, renders);
		r = ctx->cache ? render_cached(ctx, t, &p, &id, &err, &e) : RENDER_NO_CACHE;
		if (r == RENDER_NO_CACHE) {
			fd = tmp_fd(ctx);
			if (fd < 0) {
				r = fd;
				goto out_sf;
			}
			sink = xprofs_sink_fd(&fd);
			r = render(ctx, t, &p, &sink, &err);
			if (r == 0 && fstat(fd, &sb) < 0)
				r = -errno;
		}
		if (r < 0) {
			CNT(ctx, render_errors);
			error_note(ctx, id.hpath[0] ? id.hpath : t->session->name,
				   id.hpath[0] ? &p.st : NULL,
				   t->kind == FS_K_VIEW ? xprofs_view_name(t->view) :
				   t->kind == FS_K_TRACK ? "track" : "session summary",
				   err.data ? err.data : strerror(-r));
			r = r == -ENOENT && t->kind == FS_K_TRACK ? -ENOENT : -EIO;
			goto out_sf;
		}
	}
	if (e) {
		if (hit)
			CNT(ctx, view_hits);
		fh->kind = FH_CACHE;
		fh->ce = e;
		fh->size = xprofs_cache_entry_size(e);
		e = NULL;
	} else {
		fh->kind = FH_FD;
		fh->fd = fd;
		fh->size = (uint64_t)sb.st_size;
		fd = -1;
	}
	size_store(ctx, id.hash, fh->size);
	if (!had_size || known != fh->size)
		fuse_invalidate_path(fuse_get_context()->fuse, mpath);
	r = 0;
out_sf:
	if (owner)
		sf_end(ctx, id.hash);
out:
	if (fd >= 0)
		close(fd);
	xprofs_cache_entry_close(e);
	prof_close(&p);
	xprofs_buf_deinit(&id.key);
	xprofs_buf_deinit(&err);
	return r;
}

/* ---- status ------------------------------------------------------------ */

int fs_status_json(struct fs_ctx *ctx, struct xprofs_buf *out)
{
	struct xprofs_cache_stats cs = { 0 };
	const char *src = xprofs_store_source(ctx->store);
	struct fs_index *idx;
	int r;

	r = xprofs_buf_adds(out, "{\"source\":");
	if (r == 0)
		r = xprofs_buf_add_json_str(out, src, strlen(src));
	if (r == 0)
		r = xprofs_buf_printf(out,
			",\"backend\":\"%s\",\"version\":\"%s\",\"uptime_s\":%ld,"
			"\"read_only\":%s,\"refresh_s\":%ld,",
			xprofs_store_backend(ctx->store), XPROFS_VERSION,
			(long)((xprofs_mono_ns() - ctx->start_mono_ns) / 1000000000LL),
			ctx->o->ro ? "true" : "false", (long)(ctx->refresh_ns / 1000000000LL));
	pthread_mutex_lock(&ctx->index_lock);
	idx = fs_index_get(ctx->index);
	pthread_mutex_unlock(&ctx->index_lock);
	if (r == 0)
		r = xprofs_buf_printf(out, "\"runs\":%lu,\"sessions\":%lu,\"hosts\":%lu,",
				      (unsigned long)(idx ? idx->runs : 0),
				      (unsigned long)(idx ? idx->sessions : 0),
				      (unsigned long)(idx ? idx->hosts : 0));
	fs_index_put(idx);
	if (r == 0)
		r = xprofs_buf_printf(out,
			"\"counters\":{\"lookups\":%lu,\"readdirs\":%lu,\"opens\":%lu,"
			"\"bytes_read\":%lu,\"bytes_written\":%lu,\"renders\":%lu,"
			"\"render_errors\":%lu,\"render_waits\":%lu,\"view_cache_hits\":%lu,"
			"\"index_builds\":%lu},",
			(unsigned long)CNT_GET(ctx, lookups), (unsigned long)CNT_GET(ctx, readdirs),
			(unsigned long)CNT_GET(ctx, opens), (unsigned long)CNT_GET(ctx, bytes_read),
			(unsigned long)CNT_GET(ctx, bytes_written), (unsigned long)CNT_GET(ctx, renders),
			(unsigned long)CNT_GET(ctx, render_errors),
			(unsigned long)CNT_GET(ctx, render_waits),
			(unsigned long)CNT_GET(ctx, view_hits),
			(unsigned long)CNT_GET(ctx, index_builds));
	if (r == 0 && ctx->cache) {
		xprofs_cache_get_stats(ctx->cache, &cs);
		r = xprofs_buf_adds(out, "\"cache\":{\"dir\":");
		if (r == 0)
			r = xprofs_buf_add_json_str(out, xprofs_cache_dir(ctx->cache),
						    strlen(xprofs_cache_dir(ctx->cache)));
		if (r == 0)
			r = xprofs_buf_printf(out,
				",\"hits\":%lu,\"misses\":%lu,\"bytes\":%lu,\"raw_bytes_written\":%lu,"
				"\"entries\":%lu,\"evictions\":%lu,\"corrupt\":%lu},",
				(unsigned long)cs.hits, (unsigned long)cs.misses,
				(unsigned long)cs.bytes, (unsigned long)cs.raw_bytes_written,
				(unsigned long)cs.entries, (unsigned long)cs.evictions,
				(unsigned long)cs.corrupt);
	} else if (r == 0) {
		r = xprofs_buf_adds(out, "\"cache\":null,");
	}
	if (r == 0)
		r = xprofs_buf_adds(out, "\"store\":");
	if (r == 0)
		r = xprofs_store_status_json(ctx->store, out);
	if (r == 0)
		r = xprofs_buf_adds(out, ",\"capture\":");
	if (r == 0 && ctx->capture) {
		struct xprofs_buf cap;

		xprofs_buf_init(&cap, 1 << 20);
		r = xprofs_capture_status(ctx->capture, NULL, &cap);
		if (r == 0)
			r = xprofs_buf_add_json_str(out, cap.data ? cap.data : "", cap.len);
		xprofs_buf_deinit(&cap);
	} else if (r == 0) {
		r = xprofs_buf_adds(out, "null");
	}
	if (r == 0)
		r = xprofs_buf_adds(out, "}\n");
	return r;
}

/* ---- attributes -------------------------------------------------------- */

/* mem_content() - the current content of status.json, an errors or a capture file. */
static int mem_content(struct fs_ctx *ctx, const struct fs_target *t, struct xprofs_buf *b)
{
	char hp[FS_PATH_MAX + 1];
	int r;

	switch (t->kind) {
	case FS_K_STATUS:
		return fs_status_json(ctx, b);
	case FS_K_ERRORS:
		r = fs_store_path(hp, sizeof(hp), t->node->path, t->session->name, t->host->name);
		return r < 0 ? r : errors_snapshot(ctx, hp, &t->host->st, b);
	case FS_K_CAPTURE:
		if (ctx->capture)
			return xprofs_capture_status(ctx->capture, t->node ? t->node->path : NULL, b);
		return xprofs_buf_adds(b, "capture: unavailable in this mount\n");
	default:
		return -EINVAL;
	}
}

static void fill_dir(struct fs_ctx *ctx, struct stat *st, int64_t mtime_ns)
{
	memset(st, 0, sizeof(*st));
	st->st_mode = S_IFDIR | (ctx->o->ro ? 0555 : 0755);
	st->st_nlink = 2;
	st->st_uid = ctx->uid;
	st->st_gid = ctx->gid;
	if (!mtime_ns)
		mtime_ns = xprofs_now_ns() - (xprofs_mono_ns() - ctx->start_mono_ns);
	st->st_mtim.tv_sec = mtime_ns / 1000000000LL;
	st->st_mtim.tv_nsec = mtime_ns % 1000000000LL;
	st->st_atim = st->st_ctim = st->st_mtim;
}

static void fill_file(struct fs_ctx *ctx, struct stat *st, uint64_t size, int64_t mtime_ns, mode_t mode)
{
	fill_dir(ctx, st, mtime_ns);
	st->st_mode = S_IFREG | (ctx->o->ro ? (mode & 0555) : mode);
	st->st_nlink = 1;
	st->st_size = (off_t)size;
	/*
	 * The preferred I/O size sizes cat's and most readers' buffers. 256 KiB
	 * (the cache's block size) lets a sequential read of a view decompress
	 * each block straight into the FUSE buffer; 128 KiB reads go through the
	 * entry's block copy, and 1 MiB reads measured no faster (bench/mount.sh,
	 * docs/fs.md).
	 */
	st->st_blksize = FS_IO_SIZE;
	st->st_blocks = (blkcnt_t)((size + 511) / 512);
}

static int target_getattr(struct fs_ctx *ctx, const char *path, const struct fs_target *t,
			  struct stat *st)
{
	struct xprofs_store_stat ss;
	struct fs_track_list *tl;
	char hp[FS_PATH_MAX + 1];
	struct xprofs_buf b;
	bool found = false;
	int r;

	xprofs_buf_init(&b, FS_MEM_MAX);
	switch (t->kind) {
	case FS_K_ROOT:
	case FS_K_RUNS:
	case FS_K_SESSION:
		fill_dir(ctx, st, t->kind == FS_K_SESSION ? t->session->mtime_ns : 0);
		return 0;
	case FS_K_HOST:
	case FS_K_PLANES:
		fill_dir(ctx, st, t->host->st.mtime_ns);
		return 0;
	case FS_K_STATUS:
	case FS_K_CAPTURE:
	case FS_K_ERRORS:
		/* small and in memory: report the size the content has now */
		r = mem_content(ctx, t, &b);
		fill_file(ctx, st, r == 0 ? b.len : 0,
			  t->kind == FS_K_ERRORS ? t->host->st.mtime_ns : 0,
			  t->kind == FS_K_CAPTURE ? 0644 : 0444);
		xprofs_buf_deinit(&b);
		return 0;
	case FS_K_VIEW:
		fill_file(ctx, st, gen_size(ctx, t), t->host->st.mtime_ns, 0444);
		return 0;
	case FS_K_SESSION_SUMMARY:
		fill_file(ctx, st, gen_size(ctx, t), t->session->mtime_ns, 0444);
		return 0;
	case FS_K_PLANE:
	case FS_K_TRACK:
		r = host_path(t, hp, sizeof(hp));
		if (r < 0)
			return r;
		r = tracks_get(ctx, hp, &t->host->st, &tl);
		if (r < 0)
			return r;
		for (size_t i = 0; i < tl->n && !found; i++)
			found = !strcmp(tl->planes[i], t->plane) &&
				(t->kind == FS_K_PLANE || !strcmp(tl->lines[i], t->line));
		pthread_mutex_unlock(&ctx->lock);
		if (!found)
			return -ENOENT;
		if (t->kind == FS_K_PLANE)
			fill_dir(ctx, st, t->host->st.mtime_ns);
		else
			fill_file(ctx, st, gen_size(ctx, t), t->host->st.mtime_ns, 0444);
		return 0;
	case FS_K_LOGDIR:
		r = xprofs_store_stat(ctx->store, t->store_path, &ss);
		if (r < 0)
			return r;
		if (ss.type == XPROFS_STORE_DIR)
			fill_dir(ctx, st, ss.mtime_ns);
		else
			fill_file(ctx, st, ss.size, ss.mtime_ns, 0644);
		return 0;
	default:
		(void)path;
		return -ENOENT;
	}
}

/* classify() - resolve @path; takes an index reference in *@idx only when needed. */
static int classify(struct fs_ctx *ctx, const char *path, struct fs_index **idx, struct fs_target *t)
{
	*idx = NULL;
	if (!strncmp(path, "/runs", 5) && (path[5] == '/' || !path[5]))
		*idx = index_get(ctx);
	return fs_path_classify(*idx, path, t);
}

static int op_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = ctx_get();
	struct fs_fh *fh = fi ? (struct fs_fh *)(uintptr_t)fi->fh : NULL;
	struct fs_index *idx;
	struct fs_target t;
	int r;

	CNT(ctx, lookups);
	r = classify(ctx, path, &idx, &t);
	if (r == 0)
		r = target_getattr(ctx, path, &t, st);
	if (fh && (fh->kind == FH_WRITER || fh->kind == FH_FD || fh->kind == FH_CACHE)) {
		/* an open file knows its size better (new profiles are not visible yet) */
		bool local = !strcmp(xprofs_store_backend(ctx->store), "local");

		if (r < 0 && fh->kind == FH_WRITER)
			fill_file(ctx, st, 0, xprofs_now_ns(), 0644);
		/* local in-place writers: the file itself is the truth (other fds may write) */
		if (fh->kind != FH_WRITER || r < 0 || !local)
			st->st_size = (off_t)(fh->kind == FH_WRITER ? fh->wsize : fh->size);
		r = 0;
	}
	fs_index_put(idx);
	return r;
}

/* ---- directories ------------------------------------------------------- */

struct fill_arg {
	void *buf;
	fuse_fill_dir_t filler;
};

static int fill_name(struct fill_arg *a, const char *name)
{
	return a->filler(a->buf, name, NULL, 0, 0) ? 1 : 0;
}

static int list_cb(void *arg, const char *name, const struct xprofs_store_stat *st)
{
	return fill_name(arg, name);
}

static int op_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off,
		      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	static const char *const host_files[] = { "summary.json", "trace.json", "ops.json",
						  "steps.json", "errors", "planes" };
	struct fs_ctx *ctx = ctx_get();
	struct fill_arg a = { buf, filler };
	struct fs_track_list *tl;
	char hp[FS_PATH_MAX + 1];
	struct fs_index *idx;
	struct fs_target t;
	size_t i, j;
	int r;

	CNT(ctx, readdirs);
	r = classify(ctx, path, &idx, &t);
	if (r < 0)
		goto out;
	fill_name(&a, ".");
	fill_name(&a, "..");
	switch (t.kind) {
	case FS_K_ROOT:
		fill_name(&a, "logdir");
		fill_name(&a, "runs");
		fill_name(&a, "status.json");
		fill_name(&a, "capture");
		break;
	case FS_K_LOGDIR:
		r = xprofs_store_list(ctx->store, t.store_path, list_cb, &a);
		if (r > 0)
			r = 0;
		break;
	case FS_K_RUNS:
		for (i = 0; i < t.node->nchildren; i++)
			fill_name(&a, t.node->children[i]->name);
		if (t.node->is_run) {
			for (i = 0; i < t.node->nsessions; i++)
				if (!fs_node_child(t.node, t.node->sessions[i].name))
					fill_name(&a, t.node->sessions[i].name);
			fill_name(&a, "capture");
		}
		break;
	case FS_K_SESSION:
		for (i = 0; i < t.session->nhosts; i++)
			fill_name(&a, t.session->hosts[i].name);
		fill_name(&a, "summary.json");
		break;
	case FS_K_HOST:
		for (i = 0; i < sizeof(host_files) / sizeof(host_files[0]); i++)
			fill_name(&a, host_files[i]);
		break;
	case FS_K_PLANES:
	case FS_K_PLANE:
		r = host_path(&t, hp, sizeof(hp));
		if (r < 0)
			break;
		r = tracks_get(ctx, hp, &t.host->st, &tl);
		if (r < 0)
			break;
		for (i = 0; i < tl->n; i++) {
			if (t.kind == FS_K_PLANE) {
				if (!strcmp(tl->planes[i], t.plane))
					fill_name(&a, tl->lines[i]);
				continue;
			}
			for (j = 0; j < i && strcmp(tl->planes[j], tl->planes[i]); j++)
				;
			if (j == i)
				fill_name(&a, tl->planes[i]);
		}
		pthread_mutex_unlock(&ctx->lock);
		break;
	default:
		r = -ENOTDIR;
	}
out:
	fs_index_put(idx);
	(void)off;
	(void)fi;
	(void)flags;
	return r;
}

/* ---- files -------------------------------------------------------------- */

/* fh_new() - an empty handle; caller owns, free with fh_free() (which accepts NULL). */
static struct fs_fh *fh_new(enum fh_kind kind)
{
	struct fs_fh *fh = calloc(1, sizeof(*fh));

	if (fh) {
		fh->kind = kind;
		fh->fd = -1;
		pthread_mutex_init(&fh->lock, NULL);
	}
	return fh;
}

static void fh_free(struct fs_fh *fh)
{
	if (!fh)
		return;
	xprofs_store_close(fh->rf);
	xprofs_store_abort(fh->w);
	if (fh->fd >= 0)
		close(fh->fd);
	xprofs_cache_entry_close(fh->ce);
	free(fh->mem);
	free(fh->run);
	free(fh->spath);
	pthread_mutex_destroy(&fh->lock);
	free(fh);
}

static bool wants_write(int flags)
{
	return (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC);
}

/*
 * logdir_writer() - a writer for mirror path @sp (borrowed), applying the
 * profile rules. Caller owns *@out (free with fh_free(), which aborts an
 * uncommitted writer).
 */
static int logdir_writer(struct fs_ctx *ctx, const char *sp, bool create, int flags, struct fs_fh **out)
{
	const char *base = strrchr(sp, '/');
	struct xprofs_store_stat st;
	struct fs_fh *fh;
	unsigned sflags = 0;
	bool exists;
	int r;

	if (ctx->o->ro)
		return -EROFS;
	if (!*sp)
		return -EISDIR;
	base = base ? base + 1 : sp;
	r = xprofs_store_stat(ctx->store, sp, &st);
	if (r < 0 && r != -ENOENT)
		return r;
	exists = r == 0;
	if (exists && st.type == XPROFS_STORE_DIR)
		return -EISDIR;
	if (exists && create && (flags & O_EXCL))
		return -EEXIST;
	if (fs_is_profile_name(base)) {
		if (exists)
			return -EPERM; /* never overwrite a profile */
		sflags |= XPROFS_STORE_EXCL;
	} else if (flags & O_TRUNC) {
		sflags |= XPROFS_STORE_TRUNC;
	}
	if (!exists && !create)
		return -ENOENT;
	fh = fh_new(FH_WRITER);
	if (!fh)
		return -ENOMEM;
	fh->spath = strdup(sp);
	r = fh->spath ? xprofs_store_create(ctx->store, sp, sflags, &fh->w) : -ENOMEM;
	if (r < 0) {
		fh_free(fh);
		return r;
	}
	fh->profile = sflags & XPROFS_STORE_EXCL;
	fh->wsize = exists && !(sflags & XPROFS_STORE_TRUNC) ? st.size : 0;
	*out = fh;
	return 0;
}

/* mem_fh() - a handle serving @b's bytes: consumes @b's storage; caller owns *@out. */
static int mem_fh(struct xprofs_buf *b, enum fh_kind kind, struct fs_fh **out)
{
	struct fs_fh *fh = fh_new(kind);

	if (!fh)
		return -ENOMEM;
	fh->mem = xprofs_buf_steal(b, &fh->size);
	*out = fh;
	return 0;
}

static int op_open(const char *path, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = ctx_get();
	struct fs_fh *fh = NULL;
	struct fs_index *idx;
	struct xprofs_buf b;
	struct fs_target t;
	int r;

	CNT(ctx, opens);
	xprofs_buf_init(&b, FS_MEM_MAX);
	r = classify(ctx, path, &idx, &t);
	if (r < 0)
		goto out;
	if (t.kind != FS_K_LOGDIR && t.kind != FS_K_CAPTURE && wants_write(fi->flags)) {
		r = ctx->o->ro ? -EROFS : -EACCES;
		goto out;
	}
	switch (t.kind) {
	case FS_K_LOGDIR:
		if (wants_write(fi->flags)) {
			r = logdir_writer(ctx, t.store_path, false, fi->flags, &fh);
			break;
		}
		fh = fh_new(FH_READER);
		r = fh ? xprofs_store_open(ctx->store, t.store_path, &fh->rf) : -ENOMEM;
		break;
	case FS_K_STATUS:
	case FS_K_ERRORS:
		r = mem_content(ctx, &t, &b);
		if (r == 0)
			r = mem_fh(&b, FH_MEM, &fh);
		fi->direct_io = 1;
		break;
	case FS_K_CAPTURE:
		if (wants_write(fi->flags) && ctx->o->ro) {
			r = -EROFS;
			break;
		}
		r = mem_content(ctx, &t, &b);
		if (r == 0)
			r = mem_fh(&b, FH_CAPTURE, &fh);
		if (r == 0 && t.node) {
			fh->run = strdup(t.node->path);
			if (!fh->run)
				r = -ENOMEM;
		}
		fi->direct_io = 1;
		break;
	case FS_K_VIEW:
	case FS_K_TRACK:
	case FS_K_SESSION_SUMMARY:
		fh = fh_new(FH_FD);
		r = fh ? gen_open(ctx, path, &t, fh) : -ENOMEM;
		fi->direct_io = 1;
		break;
	default:
		r = -EISDIR;
	}
out:
	if (r == 0)
		fi->fh = (uint64_t)(uintptr_t)fh;
	else
		fh_free(fh);
	xprofs_buf_deinit(&b);
	fs_index_put(idx);
	return r;
}

static int op_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = ctx_get();
	struct fs_fh *fh = NULL;
	struct fs_index *idx;
	struct fs_target t;
	int r;

	CNT(ctx, opens);
	r = classify(ctx, path, &idx, &t);
	fs_index_put(idx);
	if (r < 0)
		return r;
	if (ctx->o->ro)
		return -EROFS;
	if (t.kind != FS_K_LOGDIR)
		return t.kind == FS_K_CAPTURE ? -EEXIST : -EACCES;
	r = logdir_writer(ctx, t.store_path, true, fi->flags, &fh);
	if (r < 0)
		return r;
	fi->fh = (uint64_t)(uintptr_t)fh;
	(void)mode;
	return 0;
}

/*
 * writer_need() - @fh's store writer, reopened after a flush published a new
 * local profile (a later write through another descriptor of the same open
 * goes on in place in the published file, as on gs:// where each close()
 * uploads what is there so far). Caller holds @fh->lock. 0 or -errno.
 */
static int writer_need(struct fs_ctx *ctx, struct fs_fh *fh)
{
	int r;

	if (fh->w)
		return 0;
	if (!fh->published)
		return fh->publish_err ? fh->publish_err : -EBADF;
	r = xprofs_store_create(ctx->store, fh->spath, 0, &fh->w);
	if (r == 0)
		fh->profile = false;
	return r;
}

/*
 * gen_reopen() - after a damaged cache block (-EIO from the entry, which the
 * cache has already dropped), render mount path @path again and move the new
 * content into @fh (FH_CACHE or FH_FD). The caller holds @fh->lock, so no
 * read uses the old entry while it is replaced. The render is of the same
 * profile version, so the bytes (and size) are the ones the reader expects.
 */
static int gen_reopen(struct fs_ctx *ctx, const char *path, struct fs_fh *fh)
{
	struct fs_fh *nfh = NULL;
	struct fs_index *idx;
	struct fs_target t;
	int r;

	r = classify(ctx, path, &idx, &t);
	if (r == 0 && t.kind != FS_K_VIEW && t.kind != FS_K_TRACK && t.kind != FS_K_SESSION_SUMMARY)
		r = -EIO;
	if (r == 0) {
		nfh = fh_new(FH_FD);
		r = nfh ? gen_open(ctx, path, &t, nfh) : -ENOMEM;
	}
	if (r == 0 && nfh->size != fh->size)
		r = -EIO; /* not the same content: the profile changed meanwhile */
	if (r == 0) {
		xprofs_cache_entry_close(fh->ce);
		fh->ce = nfh->ce;
		nfh->ce = NULL;
		fh->fd = nfh->fd;
		nfh->fd = -1;
		fh->kind = nfh->kind;
		xprofs_warn("%s: damaged cache entry dropped and rendered again", path);
	} else {
		xprofs_err("%s: damaged cache entry; rendering again failed: %s", path, strerror(-r));
	}
	fh_free(nfh);
	fs_index_put(idx);
	return r < 0 ? -EIO : 0;
}

static ssize_t gen_pread(struct fs_fh *fh, void *buf, size_t n, uint64_t off)
{
	if (fh->kind == FH_CACHE)
		return xprofs_cache_entry_pread(fh->ce, buf, n, off);
	return xprofs_pread_full(fh->fd, buf, n, off);
}

static int op_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = ctx_get();
	struct fs_fh *fh = (struct fs_fh *)(uintptr_t)fi->fh;
	ssize_t r;

	if (off < 0)
		return -EINVAL;
	switch (fh->kind) {
	case FH_READER:
		r = xprofs_store_pread(fh->rf, buf, size, (uint64_t)off);
		break;
	case FH_WRITER:
		pthread_mutex_lock(&fh->lock);
		r = writer_need(ctx, fh);
		if (r == 0)
			r = xprofs_store_wread(fh->w, buf, size, (uint64_t)off);
		pthread_mutex_unlock(&fh->lock);
		break;
	case FH_FD:
	case FH_CACHE:
		if ((uint64_t)off >= fh->size) {
			r = 0;
			break;
		}
		/* the lock keeps an entry alive while gen_reopen() may replace it */
		pthread_mutex_lock(&fh->lock);
		r = gen_pread(fh, buf, size, (uint64_t)off);
		if (r == -EIO && fh->kind == FH_CACHE && gen_reopen(ctx, path, fh) == 0)
			r = gen_pread(fh, buf, size, (uint64_t)off);
		pthread_mutex_unlock(&fh->lock);
		break;
	case FH_MEM:
	case FH_CAPTURE:
		if ((uint64_t)off >= fh->size) {
			r = 0;
			break;
		}
		r = (ssize_t)(fh->size - (uint64_t)off < size ? fh->size - (uint64_t)off : size);
		memcpy(buf, fh->mem + off, (size_t)r);
		break;
	default:
		r = -EBADF;
	}
	if (r > 0)
		CNT_ADD(ctx, bytes_read, (uint64_t)r);
	(void)path;
	return r > INT_MAX ? INT_MAX : (int)r;
}

static int op_write(const char *path, const char *buf, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = ctx_get();
	struct fs_fh *fh = (struct fs_fh *)(uintptr_t)fi->fh;
	struct xprofs_buf reason;
	ssize_t r;

	if (off < 0)
		return -EINVAL;
	if (fh->kind == FH_CAPTURE) {
		if (!ctx->capture)
			return -ENOSYS;
		xprofs_buf_init(&reason, 4096);
		r = xprofs_capture_submit(ctx->capture, fh->run, buf, size, &reason);
		if (r < 0)
			xprofs_warn("capture: %s", reason.data ? reason.data : strerror((int)-r));
		xprofs_buf_deinit(&reason);
		return r < 0 ? (int)r : (int)size;
	}
	if (fh->kind != FH_WRITER)
		return -EBADF;
	pthread_mutex_lock(&fh->lock);
	r = writer_need(ctx, fh);
	if (r == 0)
		r = xprofs_store_write(fh->w, buf, size, (uint64_t)off);
	if (r > 0 && (uint64_t)off + (uint64_t)r > fh->wsize)
		fh->wsize = (uint64_t)off + (uint64_t)r;
	if (r > 0)
		fh->dirty = true;
	pthread_mutex_unlock(&fh->lock);
	if (r > 0)
		CNT_ADD(ctx, bytes_written, (uint64_t)r);
	(void)path;
	return r > INT_MAX ? INT_MAX : (int)r;
}

static int op_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = ctx_get();
	struct fs_fh *fh = fi ? (struct fs_fh *)(uintptr_t)fi->fh : NULL;
	struct fs_index *idx;
	struct fs_target t;
	int r;

	if (size < 0)
		return -EINVAL;
	if (fh && fh->kind == FH_CAPTURE)
		return 0;
	if (fh && fh->kind == FH_WRITER) {
		pthread_mutex_lock(&fh->lock);
		r = writer_need(ctx, fh);
		if (r == 0)
			r = xprofs_store_wtruncate(fh->w, (uint64_t)size);
		if (r == 0) {
			fh->wsize = (uint64_t)size;
			fh->dirty = true;
		}
		pthread_mutex_unlock(&fh->lock);
		return r;
	}
	r = classify(ctx, path, &idx, &t);
	fs_index_put(idx);
	if (r < 0)
		return r;
	if (ctx->o->ro)
		return -EROFS;
	if (t.kind == FS_K_CAPTURE)
		return 0; /* "echo line > capture" truncates first */
	if (t.kind != FS_K_LOGDIR)
		return -EACCES;
	r = logdir_writer(ctx, t.store_path, false, O_WRONLY, &fh);
	if (r < 0)
		return r;
	r = xprofs_store_wtruncate(fh->w, (uint64_t)size);
	if (r == 0) {
		r = xprofs_store_commit(fh->w);
		fh->w = NULL;
	}
	fh_free(fh);
	return r;
}

/*
 * Uploads happen in flush (every close() of a descriptor, and fsync()), not
 * in release: FUSE ignores release's result, so an upload failing there
 * would be lost silently; a failing flush is close()'s error. A local store
 * writes in place, so its flush has nothing to publish (fsync() still syncs),
 * except a new profile, which a flush links in (EEXIST when a file of that
 * name appeared meanwhile).
 */
static bool uploads_on_commit(struct fs_ctx *ctx)
{
	return strcmp(xprofs_store_backend(ctx->store), "local") != 0;
}

/* writer_flush() - make @fh's data durable (upload); clears dirty even on failure: the caller reports it. */
static int writer_flush(struct fs_fh *fh, const char *path)
{
	int r;

	pthread_mutex_lock(&fh->lock);
	r = fh->w ? xprofs_store_flush(fh->w) : fh->publish_err;
	fh->dirty = false;
	pthread_mutex_unlock(&fh->lock);
	if (r < 0)
		xprofs_err("%s: flush/upload failed: %s", path ? path : "?", strerror(-r));
	return r;
}

static int op_flush(const char *path, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = ctx_get();
	struct fs_fh *fh = (struct fs_fh *)(uintptr_t)fi->fh;

	int r;

	if (fh->kind != FH_WRITER)
		return 0;
	if (uploads_on_commit(ctx))
		return writer_flush(fh, path);
	pthread_mutex_lock(&fh->lock);
	if (!fh->profile || !fh->w) {
		pthread_mutex_unlock(&fh->lock);
		return 0;
	}
	r = xprofs_store_commit(fh->w); /* the exclusive link; consumes the writer */
	fh->w = NULL;
	fh->published = r == 0;
	fh->publish_err = r;
	fh->dirty = false;
	pthread_mutex_unlock(&fh->lock);
	fs_invalidate_index(ctx);
	if (r < 0)
		xprofs_err("%s: new profile not published: %s", path ? path : "?", strerror(-r));
	return r;
}

static int op_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	struct fs_fh *fh = (struct fs_fh *)(uintptr_t)fi->fh;

	(void)datasync;
	return fh->kind == FH_WRITER ? writer_flush(fh, path) : 0;
}

/*
 * op_release() - the last close. Remote writers commit only what changed
 * since the last flush (normally nothing: close() flushed); a writer whose
 * last flush failed was reported to close() and is not retried here, so it is
 * discarded. Local writers always commit (close the file; a new profile
 * normally was published by its flush already).
 */
static int op_release(const char *path, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = ctx_get();
	struct fs_fh *fh = (struct fs_fh *)(uintptr_t)fi->fh;
	int r;

	if (fh->kind == FH_WRITER) {
		if (fh->w && (!uploads_on_commit(ctx) || fh->dirty)) {
			r = xprofs_store_commit(fh->w);
			fh->w = NULL;
			if (r < 0)
				xprofs_err("%s: commit failed: %s", path ? path : "?", strerror(-r));
		}
		fs_invalidate_index(ctx);
	}
	fh_free(fh); /* aborts a writer not committed above: its data was flushed or reported */
	return 0;
}

/* ---- namespace changes -------------------------------------------------- */

static int logdir_target(struct fs_ctx *ctx, const char *path, struct fs_target *t)
{
	struct fs_index *idx;
	int r;

	r = classify(ctx, path, &idx, t);
	fs_index_put(idx);
	if (r < 0)
		return r;
	if (t->kind != FS_K_LOGDIR)
		return ctx->o->ro ? -EROFS : -EPERM;
	if (!*t->store_path)
		return -EBUSY;
	return ctx->o->ro ? -EROFS : 0;
}

static int op_unlink(const char *path)
{
	struct fs_ctx *ctx = ctx_get();
	struct fs_target t;
	int r;

	r = logdir_target(ctx, path, &t);
	if (r < 0)
		return r;
	if (fs_is_profile_name(t.store_path))
		return -EPERM;
	r = xprofs_store_unlink(ctx->store, t.store_path);
	fs_invalidate_index(ctx);
	return r;
}

static int op_rmdir(const char *path)
{
	struct fs_ctx *ctx = ctx_get();
	struct fs_target t;
	int r;

	r = logdir_target(ctx, path, &t);
	if (r < 0)
		return r;
	r = xprofs_store_rmdir(ctx->store, t.store_path);
	fs_invalidate_index(ctx);
	return r;
}

/* mkdir_run() - "mkdir runs/NAME": create NAME/plugins/profile in the store. */
static int mkdir_run(struct fs_ctx *ctx, const char *path)
{
	const char *rel = path + strlen("/runs/");
	char p[FS_PATH_MAX + 1];
	struct fs_index *idx;
	struct fs_target t;
	const char *slash;
	int r;

	if (ctx->o->ro)
		return -EROFS;
	slash = strrchr(path, '/');
	if (slash == path + strlen("/runs"))
		r = 0; /* a top-level run: the parent is runs/ itself */
	else {
		char parent[FS_PATH_MAX + 1];

		snprintf(parent, sizeof(parent), "%.*s", (int)(slash - path), path);
		r = classify(ctx, parent, &idx, &t);
		fs_index_put(idx);
		if (r == 0 && t.kind != FS_K_RUNS)
			r = -EPERM; /* sessions are made by captures, not mkdir */
		if (r < 0)
			return r;
	}
	if (!strcmp(rel, FS_ROOT_RUN))
		rel = "";
	else if (!strncmp(rel, FS_ROOT_RUN "/", strlen(FS_ROOT_RUN) + 1) ||
		 !xprofs_store_path_valid(rel))
		return -EPERM;
	r = fs_store_path(p, sizeof(p), rel, NULL, NULL);
	if (r < 0)
		return r;
	/* create each level; an existing one is fine */
	for (char *s = strchr(p, '/');; s = strchr(s + 1, '/')) {
		if (s)
			*s = '\0';
		r = xprofs_store_mkdir(ctx->store, p);
		if (r == -EEXIST)
			r = 0;
		if (s)
			*s = '/';
		if (r < 0 || !s)
			break;
	}
	fs_invalidate_index(ctx);
	return r;
}

static int op_mkdir(const char *path, mode_t mode)
{
	struct fs_ctx *ctx = ctx_get();
	struct fs_target t;
	int r;

	if (!strncmp(path, "/runs/", 6))
		return mkdir_run(ctx, path);
	r = logdir_target(ctx, path, &t);
	if (r < 0)
		return r;
	r = xprofs_store_mkdir(ctx->store, t.store_path);
	fs_invalidate_index(ctx);
	(void)mode;
	return r;
}

static int op_rename(const char *from, const char *to, unsigned int flags)
{
	struct fs_ctx *ctx = ctx_get();
	struct xprofs_store_stat st;
	struct fs_target a, b;
	bool exists;
	int r;

	r = logdir_target(ctx, from, &a);
	if (r == 0)
		r = logdir_target(ctx, to, &b);
	if (r < 0)
		return r == -EPERM ? -EXDEV : r;
	if (flags & RENAME_EXCHANGE)
		return -EINVAL;
	if (fs_is_profile_name(a.store_path))
		return -EPERM; /* rename-away */
	r = xprofs_store_stat(ctx->store, b.store_path, &st);
	exists = r == 0;
	if (exists && fs_is_profile_name(b.store_path))
		return -EPERM; /* rename-over */
	if (exists && (flags & RENAME_NOREPLACE))
		return -EEXIST;
	r = xprofs_store_rename(ctx->store, a.store_path, b.store_path);
	fs_invalidate_index(ctx);
	return r;
}

static int op_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	struct stat st;
	int r = op_getattr(path, &st, fi);

	(void)mode;
	return r < 0 ? r : ctx_get()->o->ro ? -EROFS : 0;
}

static int op_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
	(void)uid;
	(void)gid;
	return op_chmod(path, 0, fi);
}

static int op_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
	(void)tv;
	return op_chmod(path, 0, fi);
}

static int op_statfs(const char *path, struct statvfs *sv)
{
	struct fs_ctx *ctx = ctx_get();

	/* a local source reports its own filesystem (df, free-space checks) */
	if (!strcmp(xprofs_store_backend(ctx->store), "local") &&
	    statvfs(xprofs_store_source(ctx->store), sv) == 0) {
		sv->f_namemax = FS_NAME_MAX;
		if (ctx->o->ro)
			sv->f_flag |= ST_RDONLY;
		return 0;
	}
	memset(sv, 0, sizeof(*sv));
	sv->f_bsize = 1 << 16;
	sv->f_frsize = 1 << 16;
	sv->f_blocks = 1ULL << 28;
	sv->f_bfree = 1ULL << 27;
	sv->f_bavail = 1ULL << 27;
	sv->f_files = 1ULL << 24;
	sv->f_ffree = 1ULL << 23;
	sv->f_favail = 1ULL << 23;
	sv->f_namemax = FS_NAME_MAX;
	if (ctx_get()->o->ro)
		sv->f_flag |= ST_RDONLY;
	(void)path;
	return 0;
}

static void *op_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	struct fs_ctx *ctx = ctx_get();

	/*
	 * Attributes and entries may be cached for 1 s (never longer than
	 * refresh); negative lookups are not cached so new files show up at
	 * once. Unlinked open files keep working (hard_remove: no .fuse_hidden).
	 */
	cfg->entry_timeout = ctx->refresh_ns < 1000000000LL ? 0 : 1.0;
	cfg->attr_timeout = cfg->entry_timeout;
	cfg->negative_timeout = 0;
	cfg->hard_remove = 1;
	cfg->nullpath_ok = 0;
	cfg->use_ino = 0;
	/* keep a logdir file's page cache across opens while its mtime and size are unchanged */
	cfg->auto_cache = 1;
	conn->max_readahead = 1 << 20;
	return ctx;
}

static const struct fuse_operations fs_ops = {
	.init = op_init,
	.getattr = op_getattr,
	.readdir = op_readdir,
	.open = op_open,
	.create = op_create,
	.read = op_read,
	.write = op_write,
	.truncate = op_truncate,
	.flush = op_flush,
	.fsync = op_fsync,
	.release = op_release,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.mkdir = op_mkdir,
	.rename = op_rename,
	.chmod = op_chmod,
	.chown = op_chown,
	.utimens = op_utimens,
	.statfs = op_statfs,
};

const struct fuse_operations *fs_operations(void)
{
	return &fs_ops;
}

/* ---- context ------------------------------------------------------------ */

static void capture_notify(void *arg, const char *run, const char *session)
{
	struct fs_ctx *ctx = arg;

	xprofs_info("capture: new session %s in run \"%s\"", session, run);
	fs_invalidate_index(ctx);
}

int fs_ctx_init(struct fs_ctx *ctx, struct xprofs_options *o, struct xprofs_store *store,
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
	ctx->tmp_dir = cache ? xprofs_cache_dir(cache) : getenv("TMPDIR");
	if (!ctx->tmp_dir || !*ctx->tmp_dir)
		ctx->tmp_dir = "/tmp";
	pthread_mutex_init(&ctx->index_lock, NULL);
	pthread_cond_init(&ctx->index_cond, NULL);
	pthread_mutex_init(&ctx->lock, NULL);
	pthread_cond_init(&ctx->cond, NULL);
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
	for (size_t i = 0; i < FS_TRACKS; i++)
		tracks_free(&ctx->tracks[i]);
	for (size_t i = 0; i < FS_ERRHOSTS; i++) {
		free(ctx->errors[i].path);
		xprofs_buf_deinit(&ctx->errors[i].text);
	}
	ctx->cache = xprofs_cache_free(ctx->cache);
	ctx->store = xprofs_store_free(ctx->store);
	pthread_cond_destroy(&ctx->cond);
	pthread_mutex_destroy(&ctx->lock);
	pthread_mutex_destroy(&ctx->index_lock);
	pthread_cond_destroy(&ctx->index_cond);
}
