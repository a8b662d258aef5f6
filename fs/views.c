/*
 * fs/views.c - the generated files under runs/: host views (summary, trace,
 * ops, steps), tracks (planes/<plane>/<line>) and session summaries, plus the
 * small per-mount tables that serve them: remembered sizes, render
 * single-flight, decode error notes (a host's errors file) and decoded track
 * lists. No FUSE here (unit-tested like index.c): where the kernel's cached
 * attributes must be dropped, the caller is told ("size changed").
 *
 * Design: views are rendered on open, never on getattr/readdir, straight
 * into a cache writer under a key naming the source file's version; the
 * committed entry serves this open, and later opens (and later mounts) are
 * cache hits. Only without a usable cache (no_cache, bad dir, entry refused)
 * does a render go to an unlinked temporary file. A render in flight is
 * waited for, not repeated (single-flight by key hash). A damaged cache block
 * under an open view is re-rendered in place (fs_view_reopen()). getattr
 * reports the rendered size when known (memory, then a cache peek that is not
 * a use) and 0 before the first render.
 *
 * Locks: ctx->views.lock guards every table here; it is held only around
 * table accesses, never across a render or store I/O, except that
 * fs_tracks_get() returns with it held for the caller to read the list.
 *
 * Limits: FS_SIZES sizes, FS_ERRHOSTS hosts x FS_ERRMAX bytes of errors,
 * FS_TRACKS track lists, FS_INFLIGHT renders at once (fs-internal.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xprofs/decode.h"
#include "fs-internal.h"

void fs_views_init(struct fs_views *v)
{
	memset(v, 0, sizeof(*v));
	pthread_mutex_init(&v->lock, NULL);
	pthread_cond_init(&v->cond, NULL);
}

/* ---- small per-mount tables ------------------------------------------- */

static uint64_t stat_key(const char *path, const struct xprofs_store_stat *st, const char *what)
{
	uint64_t v[4] = {xprofs_hash64(path, strlen(path)), st->size, (uint64_t)st->mtime_ns,
			 st->generation};
	uint64_t h = xprofs_hash64(v, sizeof(v));

	v[0] = h;
	v[1] = xprofs_hash64(what, strlen(what));
	return xprofs_hash64(v, 2 * sizeof(v[0])) | 1; /* never 0 */
}

bool fs_size_lookup(struct fs_ctx *ctx, uint64_t key, uint64_t *size)
{
	struct fs_views *v = &ctx->views;
	size_t i = key % FS_SIZES;
	bool found;

	pthread_mutex_lock(&v->lock);
	found = v->sizes_key[i] == key;
	if (found)
		*size = v->sizes_val[i];
	pthread_mutex_unlock(&v->lock);
	return found;
}

void fs_size_store(struct fs_ctx *ctx, uint64_t key, uint64_t size)
{
	struct fs_views *v = &ctx->views;
	size_t i = key % FS_SIZES;

	pthread_mutex_lock(&v->lock);
	v->sizes_key[i] = key;
	v->sizes_val[i] = size;
	pthread_mutex_unlock(&v->lock);
}

/*
 * fs_error_note() - remember @msg for host @hpath (its errors file) and log it.
 * @st: the profile version it is about (borrowed; NULL: none): the text of an
 * older version is dropped, so a replaced profile starts with an empty file.
 */
void fs_error_note(struct fs_ctx *ctx, const char *hpath, const struct xprofs_store_stat *st,
		   const char *what, const char *msg)
{
	struct fs_views *v = &ctx->views;
	uint64_t ver = st ? stat_key(hpath, st, "errors") : 0;
	struct fs_errors *e = NULL;
	size_t i;

	xprofs_err("%s: %s: %s", hpath, what, msg);
	pthread_mutex_lock(&v->lock);
	for (i = 0; i < FS_ERRHOSTS; i++)
		if (v->errors[i].path && !strcmp(v->errors[i].path, hpath))
			e = &v->errors[i];
	if (!e) {
		e = &v->errors[v->errors_next];
		v->errors_next = (v->errors_next + 1) % FS_ERRHOSTS;
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
	pthread_mutex_unlock(&v->lock);
}

/* fs_errors_snapshot() - append the errors of host @hpath at version @st to @out. */
int fs_errors_snapshot(struct fs_ctx *ctx, const char *hpath, const struct xprofs_store_stat *st,
		       struct xprofs_buf *out)
{
	struct fs_views *v = &ctx->views;
	uint64_t ver = stat_key(hpath, st, "errors");
	int r = 0;

	pthread_mutex_lock(&v->lock);
	for (size_t i = 0; i < FS_ERRHOSTS; i++)
		if (v->errors[i].path && !strcmp(v->errors[i].path, hpath) &&
		    v->errors[i].ver == ver && v->errors[i].text.len)
			r = xprofs_buf_add(out, v->errors[i].text.data, v->errors[i].text.len);
	pthread_mutex_unlock(&v->lock);
	return r;
}

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
		pthread_cond_wait(&v->cond, &v->lock);
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

/* ---- decoding --------------------------------------------------------- */

/* An opened profile: the store file and its index. */
struct prof {
	struct xprofs_store_reader *f;
	struct xprofs_reader r;
	struct xprofs_xspace *x;
	struct xprofs_store_stat st;
};

static void prof_close(struct prof *p)
{
	p->x = xprofs_xspace_free(p->x);
	xprofs_store_reader_close(p->f);
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
	r = xprofs_store_reader_open(ctx->store, hpath, &p->f);
	if (r < 0)
		return r;
	r = xprofs_store_reader_stat(p->f, &p->st);
	if (r == 0)
		r = xprofs_store_reader_as_reader(p->f, &p->r);
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
 * per version. On success returns with ctx->views.lock HELD and *@out valid
 * until the caller unlocks.
 */
static int tracks_get(struct fs_ctx *ctx, const char *hpath, const struct xprofs_store_stat *st,
		      struct fs_track_list **out)
{
	struct fs_views *v = &ctx->views;
	uint64_t key = stat_key(hpath, st, "tracks");
	struct fs_track_list nt = {0}, *slot;
	struct xprofs_buf err;
	struct prof p;
	size_t i, lru = 0;
	int r;

	pthread_mutex_lock(&v->lock);
	for (i = 0; i < FS_TRACKS; i++) {
		if (v->tracks[i].key == key) {
			v->tracks[i].used = ++v->tick;
			*out = &v->tracks[i];
			return 0;
		}
	}
	pthread_mutex_unlock(&v->lock);

	xprofs_buf_init(&err, 4096);
	r = prof_open(ctx, hpath, true, &p, &err);
	if (r < 0) {
		fs_error_note(ctx, hpath, st, FS_NAME_PLANES, err.data ? err.data : strerror(-r));
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
	pthread_mutex_lock(&v->lock);
	for (i = 1; i < FS_TRACKS; i++)
		if (v->tracks[i].used < v->tracks[lru].used)
			lru = i;
	slot = &v->tracks[lru];
	tracks_free(slot);
	*slot = nt;
	slot->used = ++v->tick;
	*out = slot;
	return 0;
}

int fs_tracks_get(struct fs_ctx *ctx, const struct fs_target *t, struct fs_track_list **out)
{
	char hp[XPROFS_PATH_MAX + 1];
	int r;

	r = fs_host_path(t, hp, sizeof(hp));
	return r < 0 ? r : tracks_get(ctx, hp, &t->host->st, out);
}

/* The identity of a generated file: cache key text, its hash, the host it explains. */
struct view_id {
	struct xprofs_buf key;
	uint64_t hash;
	char hpath[XPROFS_PATH_MAX + 1]; /* host store path ("" for session summaries) */
	struct xprofs_store_stat st;
};

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
 * view_id_make() - the cache key of generated file @t: "xprofs-view-v2" (v2:
 * trace.json with XProf's rules; older renders are never served),
 * version, source, then the store path and version (size, mtime,
 * generation) of each profile it is made from, then what is rendered.
 * @st: the host's version (from the open file, or the index); borrowed.
 * Caller owns @id->key (xprofs_buf_deinit()), also on failure.
 */
static int view_id_make(struct fs_ctx *ctx, const struct fs_target *t,
			const struct xprofs_store_stat *st, struct view_id *id)
{
	const char *src = xprofs_store_source(ctx->store);
	char p[XPROFS_PATH_MAX + 1];
	int r;

	xprofs_buf_init(&id->key, XPROFS_CACHE_KEY_MAX);
	id->hpath[0] = '\0';
	r = xprofs_buf_add(&id->key, "xprofs-view-v2\0" XPROFS_VERSION,
			   16 + strlen(XPROFS_VERSION));
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
		r = fs_host_path(t, id->hpath, sizeof(id->hpath));
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
	char p[XPROFS_PATH_MAX + 1];
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
			fs_error_note(ctx, p, &t->session->hosts[i].st, "summary",
				      errs[i] ? errs[i] : "?");
		}
		xs[i] = ps[i].x;
		xprofs_buf_deinit(&e);
	}
	r = xprofs_decode_session_summary(t->session->name, names, xs, (const char *const *)errs, n,
					  out);
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
	if (t->kind == FS_K_VIEW) /* trace.json names its processes after the host */
		return xprofs_xspace_render_opts(
			p->x, t->view, &(struct xprofs_render_opts){.host = t->host->name}, out,
			err);
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
 * with xprofs_cache_reader_close()); RENDER_NO_CACHE when the cache could not
 * store or reopen it (the caller renders to a temporary file instead); or the
 * render's -errno (reason in @err).
 */
static int render_cached(struct fs_ctx *ctx, const struct fs_target *t, struct prof *p,
			 const struct view_id *id, struct xprofs_buf *err,
			 struct xprofs_cache_reader **out)
{
	struct cw_sink cs = {0};
	struct xprofs_sink sink = {cw_write, &cs};
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
		r = xprofs_cache_reader_open(ctx->cache, id->key.data, id->key.len, out);
	if (r < 0) {
		xprofs_warn("cache: entry not stored or gone at once (%s): rendering to a "
			    "temporary file",
			    strerror(-r));
		return RENDER_NO_CACHE;
	}
	return 0;
}

#define SIZE_UNKNOWN UINT64_MAX /* in the sizes table: not rendered, not in the cache */

/* fs_view_size() - the size a generated file will have, if known; else 0. */
uint64_t fs_view_size(struct fs_ctx *ctx, const struct fs_target *t)
{
	struct view_id id;
	uint64_t size = 0;

	if (view_id_make(ctx, t, t->host ? &t->host->st : NULL, &id) < 0)
		goto out;
	if (fs_size_lookup(ctx, id.hash, &size)) {
		if (size == SIZE_UNKNOWN)
			size = 0;
		goto out;
	}
	/* a peek is not a use: no hit in status.json, no recency bump for ls -l */
	if (ctx->cache && xprofs_cache_peek_size(ctx->cache, id.key.data, id.key.len, &size) == 0) {
		fs_size_store(ctx, id.hash, size);
	} else {
		/* remembered so repeated getattr/ls does not probe the disk cache */
		fs_size_store(ctx, id.hash, SIZE_UNKNOWN);
	}
out:
	xprofs_buf_deinit(&id.key);
	return size;
}

/*
 * fs_view_open() - a cache hit, else render (once across concurrent opens)
 * straight into the cache and serve the new entry (FS_FH_CACHE); without a
 * usable cache, render into an unlinked temporary file (FS_FH_FD).
 */
int fs_view_open(struct fs_ctx *ctx, const struct fs_target *t, struct fs_fh *fh,
		 bool *size_changed)
{
	struct xprofs_cache_reader *e = NULL;
	struct prof p = {0};
	struct xprofs_buf err;
	struct xprofs_sink sink;
	struct view_id id = {0};
	struct stat sb;
	uint64_t known = 0;
	bool had_size, owner = false, hit = false;
	int r, fd = -1, attempt;

	*size_changed = false;
	xprofs_buf_init(&err, 4096);
	if (t->kind != FS_K_SESSION_SUMMARY) {
		/* the open file's own version names the cache entry */
		r = fs_host_path(t, id.hpath, sizeof(id.hpath));
		if (r == 0)
			r = prof_open(ctx, id.hpath, false, &p, &err);
		if (r < 0)
			goto out;
	}
	r = view_id_make(ctx, t, p.f ? &p.st : NULL, &id);
	if (r < 0)
		goto out;
	had_size = fs_size_lookup(ctx, id.hash, &known);
	/* without a cache, renders cannot be shared: no point in waiting */
	for (attempt = 0; ctx->cache && attempt < 3 && !owner; attempt++) {
		if (xprofs_cache_reader_open(ctx->cache, id.key.data, id.key.len, &e) == 0)
			break;
		owner = fs_render_begin(ctx, id.hash);
	}
	hit = e != NULL;
	if (!e) {
		if (!owner && ctx->cache)
			owner = fs_render_begin(ctx, id.hash);
		FS_CNT(ctx, renders);
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
			FS_CNT(ctx, render_errors);
			fs_error_note(ctx, id.hpath[0] ? id.hpath : t->session->name,
				      id.hpath[0] ? &p.st : NULL,
				      t->kind == FS_K_VIEW    ? xprofs_view_name(t->view)
				      : t->kind == FS_K_TRACK ? "track"
							      : "session summary",
				      err.data ? err.data : strerror(-r));
			r = r == -ENOENT && t->kind == FS_K_TRACK ? -ENOENT : -EIO;
			goto out_sf;
		}
	}
	if (e) {
		if (hit)
			FS_CNT(ctx, view_hits);
		fh->kind = FS_FH_CACHE;
		fh->ce = e;
		fh->size = xprofs_cache_reader_size(e);
		e = NULL;
	} else {
		fh->kind = FS_FH_FD;
		fh->fd = fd;
		fh->size = (uint64_t)sb.st_size;
		fd = -1;
	}
	fs_size_store(ctx, id.hash, fh->size);
	*size_changed = !had_size || known != fh->size;
	r = 0;
out_sf:
	if (owner)
		fs_render_end(ctx, id.hash);
out:
	if (fd >= 0)
		close(fd);
	xprofs_cache_reader_close(e);
	prof_close(&p);
	xprofs_buf_deinit(&id.key);
	xprofs_buf_deinit(&err);
	return r;
}

/*
 * The cache has already dropped the damaged entry. The caller holds @fh->lock,
 * so no read uses the old entry while it is replaced. The render is of the
 * same profile version, so the bytes (and size) are the ones the reader
 * expects.
 */
int fs_view_reopen(struct fs_ctx *ctx, const char *mpath, struct fs_fh *fh, bool *size_changed)
{
	struct fs_fh *nfh = NULL;
	struct fs_index *idx;
	struct fs_target t;
	int r;

	*size_changed = false;
	r = fs_classify(ctx, mpath, &idx, &t);
	if (r == 0 && t.kind != FS_K_VIEW && t.kind != FS_K_TRACK && t.kind != FS_K_SESSION_SUMMARY)
		r = -EIO;
	if (r == 0) {
		nfh = fs_fh_new(FS_FH_FD);
		r = nfh ? fs_view_open(ctx, &t, nfh, size_changed) : -ENOMEM;
	}
	if (r == 0 && nfh->size != fh->size)
		r = -EIO; /* not the same content: the profile changed meanwhile */
	if (r == 0) {
		xprofs_cache_reader_close(fh->ce);
		fh->ce = nfh->ce;
		nfh->ce = NULL;
		fh->fd = nfh->fd;
		nfh->fd = -1;
		fh->kind = nfh->kind;
		xprofs_warn("%s: damaged cache entry dropped and rendered again", mpath);
	} else {
		xprofs_err("%s: damaged cache entry; rendering again failed: %s", mpath,
			   strerror(-r));
	}
	fs_fh_free(nfh);
	fs_index_put(idx);
	return r < 0 ? -EIO : 0;
}

ssize_t fs_view_pread(struct fs_fh *fh, void *buf, size_t n, uint64_t off)
{
	if (fh->kind == FS_FH_CACHE)
		return xprofs_cache_reader_pread(fh->ce, buf, n, off);
	return xprofs_pread_full(fh->fd, buf, n, off);
}

void fs_views_deinit(struct fs_views *v)
{
	for (size_t i = 0; i < FS_TRACKS; i++)
		tracks_free(&v->tracks[i]);
	for (size_t i = 0; i < FS_ERRHOSTS; i++) {
		free(v->errors[i].path);
		xprofs_buf_deinit(&v->errors[i].text);
	}
	pthread_cond_destroy(&v->cond);
	pthread_mutex_destroy(&v->lock);
}
