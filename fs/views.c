/*
 * fs/views.c - the generated files under runs/: host views (summary, trace,
 * ops, steps), tracks (planes/<plane>/<line>) and session summaries, plus the
 * small per-mount tables that serve them: remembered sizes, render
 * single-flight, decode error notes (a host's errors file) and decoded track
 * lists. No FUSE here (unit-tested like index.c): where the kernel's cached
 * attributes must be dropped, the caller is told ("size changed").
 *
 * Design: views are rendered on open, never on getattr/readdir, under a
 * cache key naming the source file's version; later opens (and later
 * mounts) are cache hits. The render itself runs on a thread of live.c
 * (into the cache, or a temporary file without one), which serves readers
 * while it runs; an open waits a little (FS_LIVE_OPEN_MS/_BYTES) so small
 * views open finished with their size, and session summaries (which borrow
 * the runs index) always wait for the end. A render in flight is joined,
 * not repeated (single-flight by key hash). A damaged cache block
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
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "xprofs/decode.h"
#include "fs-internal.h"

void fs_views_init(struct fs_views *v)
{
	const char *slow = getenv("XPROFS_TEST_RENDER_DELAY_MS_PER_MB"); /* test-only */
	const char *late = getenv("XPROFS_TEST_RENDER_START_DELAY_MS");  /* test-only */

	memset(v, 0, sizeof(*v));
	v->delay_ms_per_mb = slow ? strtoull(slow, NULL, 10) : 0;
	v->start_delay_ms = late ? strtoull(late, NULL, 10) : 0;
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

/* ---- decoding --------------------------------------------------------- */

/*
 * An opened profile: the store file and its index. The reader is on the
 * heap: the index borrows it, and a struct prof moves (into a render job,
 * into and out of the kept indexes) after indexing.
 */
struct prof {
	struct xprofs_store_reader *f;
	struct xprofs_reader *r; /* owned */
	struct xprofs_xspace *x;
	struct xprofs_store_stat st;
};

static void prof_close(struct prof *p)
{
	p->x = xprofs_xspace_free(p->x);
	xprofs_store_reader_close(p->f);
	p->f = NULL;
	free(p->r);
	p->r = NULL;
}

/*
 * prof_index() - index @p's profile into @p->x (reason appended to @err).
 * A local file is indexed, and its stats views computed, on up to
 * PROF_THREADS threads, as xprofs-decode does (the index pass is most of a
 * big view's first-byte time); a gs:// file on one, since its reader
 * follows one sequential stream per open file and two threads reading apart
 * would cut it at every switch.
 */
#define PROF_THREADS 4
static int prof_index(struct fs_ctx *ctx, struct prof *p, struct xprofs_buf *err)
{
	struct xprofs_xspace_opts xo = {.threads = 1};

	if (fs_store_is_local(ctx)) {
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

		xo.threads = ncpu < 1 ? 1 : ncpu > PROF_THREADS ? PROF_THREADS : (unsigned)ncpu;
	}
	FS_CNT(ctx, profile_indexes);
	return xprofs_xspace_open_opts(p->r, &xo, err, &p->x);
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
	if (r == 0 && !(p->r = calloc(1, sizeof(*p->r))))
		r = -ENOMEM;
	if (r == 0)
		r = xprofs_store_reader_as_reader(p->f, p->r);
	if (r == 0 && decode)
		r = prof_index(ctx, p, err);
	if (r < 0)
		prof_close(p);
	return r;
}

/*
 * Kept indexes: an index (xprofs_xspace_open(), the whole-file pass) costs
 * about a second per GiB, and a person usually reads several views of one
 * host in a row (ls steps/, then steps/<n>/trace.json). So a profile opened
 * for one use is kept, idle, for the next: up to FS_KEPT of them, each for
 * FS_KEPT_NS after its last use, matched by path and store version. An
 * entry is taken out while in use (one user at a time: the reader and the
 * index are not shared between threads) and put back after; a concurrent
 * user of the same host opens its own. Expired entries are closed on the
 * next keep or take, all of them at unmount.
 */
#define FS_KEPT_NS ((int64_t)60 * 1000000000)

struct fs_kept {
	char hpath[XPROFS_PATH_MAX + 1];
	struct prof p;
	int64_t used_ns;
};

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static bool same_version(const struct xprofs_store_stat *a, const struct xprofs_store_stat *b)
{
	return a->size == b->size && a->mtime_ns == b->mtime_ns && a->generation == b->generation;
}

static void kept_free(struct fs_kept *k)
{
	if (k) {
		prof_close(&k->p);
		free(k);
	}
}

/* Move the expired entries of @v (lock held) to @old, to close after unlocking. */
static void kept_expire(struct fs_views *v, int64_t now, struct fs_kept **old)
{
	for (size_t i = 0; i < FS_KEPT; i++) {
		if (v->kept[i] && now - v->kept[i]->used_ns > FS_KEPT_NS) {
			old[i] = v->kept[i];
			v->kept[i] = NULL;
		}
	}
}

/*
 * prof_take() - the kept index of @hpath at version @st into @p (which the
 * caller then owns, as from prof_open(.., true, ..)); false when none.
 */
static bool prof_take(struct fs_ctx *ctx, const char *hpath, const struct xprofs_store_stat *st,
		      struct prof *p)
{
	struct fs_views *v = &ctx->views;
	struct fs_kept *old[FS_KEPT] = {0}, *hit = NULL;

	pthread_mutex_lock(&v->lock);
	kept_expire(v, mono_ns(), old);
	for (size_t i = 0; i < FS_KEPT && !hit; i++) {
		struct fs_kept *k = v->kept[i];

		if (k && !strcmp(k->hpath, hpath) && same_version(&k->p.st, st)) {
			hit = k;
			v->kept[i] = NULL;
		}
	}
	pthread_mutex_unlock(&v->lock);
	for (size_t i = 0; i < FS_KEPT; i++)
		kept_free(old[i]);
	if (!hit)
		return false;
	FS_CNT(ctx, index_reuses);
	*p = hit->p;
	free(hit);
	return true;
}

/* prof_keep() - keep @p (consumed) for the next use of @hpath; closes it if it has no index. */
static void prof_keep(struct fs_ctx *ctx, const char *hpath, struct prof *p)
{
	struct fs_views *v = &ctx->views;
	struct fs_kept *old[FS_KEPT] = {0}, *k, *evict = NULL;
	size_t slot = 0;
	int64_t now = mono_ns();

	if (!p->x || strlen(hpath) > XPROFS_PATH_MAX || !(k = calloc(1, sizeof(*k)))) {
		prof_close(p);
		return;
	}
	strcpy(k->hpath, hpath);
	k->p = *p;
	k->used_ns = now;
	memset(p, 0, sizeof(*p));
	pthread_mutex_lock(&v->lock);
	kept_expire(v, now, old);
	for (size_t i = 0; i < FS_KEPT; i++) { /* a free slot, else the least recently used */
		if (!v->kept[i]) {
			slot = i;
			break;
		}
		if (v->kept[i]->used_ns < v->kept[slot]->used_ns)
			slot = i;
	}
	evict = v->kept[slot];
	v->kept[slot] = k;
	pthread_mutex_unlock(&v->lock);
	kept_free(evict);
	for (size_t i = 0; i < FS_KEPT; i++)
		kept_free(old[i]);
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
	r = prof_take(ctx, hpath, st, &p) ? 0 : prof_open(ctx, hpath, true, &p, &err);
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
	prof_keep(ctx, hpath, &p);
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

/* ps_str() - non-negative @v in decimal into @buf (48 bytes hold any 128-bit value). */
static void ps_str(xprofs_ps128 v, char *buf, size_t n)
{
	char tmp[48];
	size_t k = sizeof(tmp);

	tmp[--k] = '\0';
	do {
		tmp[--k] = (char)('0' + (int)(v % 10));
		v /= 10;
	} while (v > 0 && k > 0);
	snprintf(buf, n, "%s", tmp + k);
}

/* slice_name() - "steps/<n>" or "window/<from_ps>-<to_ps>" (exact ps) of @t into @buf. */
static void slice_name(const struct fs_target *t, char *buf, size_t n)
{
	char a[48], b[48];

	if (t->slice == FS_SLICE_STEP) {
		snprintf(buf, n, FS_NAME_STEPS "/%" PRIu32, t->step);
		return;
	}
	ps_str(t->from_ps, a, sizeof(a));
	ps_str(t->to_ps, b, sizeof(b));
	snprintf(buf, n, FS_NAME_WINDOW "/%s-%sps", a, b);
}

/* key_add_slice() - which slice of the view: the cache key's last part. */
static int key_add_slice(struct xprofs_buf *k, const struct fs_target *t)
{
	char name[128];

	slice_name(t, name, sizeof(name));
	int r = xprofs_buf_add(k, "", 1);

	return r < 0 ? r : xprofs_buf_adds(k, name);
}

/* key_add_session() - the store path and version of every host of @sess (run @node). */
static int key_add_session(struct xprofs_buf *k, const struct fs_run_node *node,
			   const struct fs_session *sess)
{
	char p[XPROFS_PATH_MAX + 1];
	int r = 0;

	for (size_t i = 0; r == 0 && i < sess->nhosts; i++) {
		r = fs_store_path(p, sizeof(p), node->path, sess->name, sess->hosts[i].name);
		if (r == 0)
			r = key_add_file(k, p, &sess->hosts[i].st);
	}
	return r;
}

/*
 * view_id_make() - the cache key of generated file @t: "xprofs-view-v6" (v2:
 * trace.json with XProf's rules; v3: bytes_accessed hidden as IsInternalStat()
 * hides it; v4: TPU lines derived from stats; v5: trace.pftrace interns derived
 * events' args, TPU host-offload rows; v6: flows from correlation ids and
 * producer/consumer stats; older renders are never served),
 * version, source, then the store path and version (size, mtime,
 * generation) of each profile it is made from, then what is rendered.
 * @st: the host's version (from the open file, or the index); borrowed.
 * Caller owns @id->key (xprofs_buf_deinit()), also on failure.
 */
static int view_id_make(struct fs_ctx *ctx, const struct fs_target *t,
			const struct xprofs_store_stat *st, struct view_id *id)
{
	const char *src = xprofs_store_source(ctx->store);
	int r;

	xprofs_buf_init(&id->key, XPROFS_CACHE_KEY_MAX);
	id->hpath[0] = '\0';
	r = xprofs_buf_add(&id->key, "xprofs-view-v6\0" XPROFS_VERSION,
			   16 + strlen(XPROFS_VERSION));
	if (r == 0)
		r = xprofs_buf_add(&id->key, src, strlen(src) + 1);
	if (r < 0)
		return r;
	if (fs_kind_session_file(t->kind)) {
		r = key_add_session(&id->key, t->node, t->session);
		if (r == 0 && t->kind == FS_K_COMPARE_VIEW) /* the base, after a separator */
			r = xprofs_buf_adds(&id->key, "compare-base");
		if (r == 0 && t->kind == FS_K_COMPARE_VIEW)
			r = xprofs_buf_add(&id->key, "", 1);
		if (r == 0 && t->kind == FS_K_COMPARE_VIEW)
			r = key_add_session(&id->key, t->other_node, t->other);
		if (r == 0)
			r = xprofs_buf_adds(&id->key,
					    t->kind == FS_K_SESSION_SUMMARY ? "session-summary"
					    : t->kind == FS_K_SESSION_OPS   ? "session-ops"
					    : t->view == XPROFS_VIEW_OPS    ? "compare-ops"
									    : "compare-steps");
	} else {
		r = fs_host_path(t, id->hpath, sizeof(id->hpath));
		if (r == 0)
			r = key_add_file(&id->key, id->hpath, st);
		if (r == 0 && t->kind == FS_K_VIEW)
			r = xprofs_buf_adds(&id->key, xprofs_view_name(t->view));
		if (r == 0 && t->kind == FS_K_VIEW && t->slice != FS_SLICE_NONE)
			r = key_add_slice(&id->key, t);
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

/* The hosts of one session, opened and indexed for a session-wide view. */
struct sess_profs {
	size_t n;
	struct prof *ps;
	const char **names; /* borrowed from the index */
	struct xprofs_xspace **xs;
	char **errs; /* owned; why a host did not open */
};

static void sess_profs_close(struct sess_profs *s)
{
	for (size_t i = 0; s->ps && s->errs && i < s->n; i++) {
		prof_close(&s->ps[i]);
		free(s->errs[i]);
	}
	free(s->ps);
	free(s->names);
	free(s->xs);
	free(s->errs);
	memset(s, 0, sizeof(*s));
}

/*
 * sess_profs_open() - open and index every host of session @sess of run
 * @node (both borrowed from the index); a host that fails is noted in its
 * errors file under @what and left NULL. Close with sess_profs_close().
 */
static int sess_profs_open(struct fs_ctx *ctx, const struct fs_run_node *node,
			   const struct fs_session *sess, const char *what, struct sess_profs *s)
{
	char p[XPROFS_PATH_MAX + 1];
	struct xprofs_buf e;
	size_t n = sess->nhosts;
	int r;

	memset(s, 0, sizeof(*s));
	s->ps = calloc(n ? n : 1, sizeof(*s->ps));
	s->names = calloc(n ? n : 1, sizeof(char *));
	s->xs = calloc(n ? n : 1, sizeof(*s->xs));
	s->errs = calloc(n ? n : 1, sizeof(char *));
	if (!s->ps || !s->names || !s->xs || !s->errs)
		return -ENOMEM;
	s->n = n;
	for (size_t i = 0; i < n; i++) {
		s->names[i] = sess->hosts[i].name;
		xprofs_buf_init(&e, 4096);
		r = fs_store_path(p, sizeof(p), node->path, sess->name, s->names[i]);
		if (r == 0)
			r = prof_open(ctx, p, true, &s->ps[i], &e);
		if (r < 0) {
			s->errs[i] = xprofs_buf_steal(&e, NULL);
			if (!s->errs[i])
				s->errs[i] = strdup(strerror(-r));
			fs_error_note(ctx, p, &sess->hosts[i].st, what,
				      s->errs[i] ? s->errs[i] : "?");
		}
		s->xs[i] = s->ps[i].x;
		xprofs_buf_deinit(&e);
	}
	return 0;
}

static struct xprofs_session_in sess_in(const struct fs_session *sess, const struct sess_profs *s)
{
	return (struct xprofs_session_in){.name = sess->name,
					  .hosts = s->names,
					  .xs = s->xs,
					  .host_errors = (const char *const *)s->errs,
					  .n = s->n};
}

/* session_file_name() - what a session-wide file is called in errors and logs. */
static const char *session_file_name(const struct fs_target *t)
{
	if (t->kind == FS_K_SESSION_OPS)
		return "session ops";
	if (t->kind == FS_K_COMPARE_VIEW)
		return t->view == XPROFS_VIEW_OPS ? "compare ops" : "compare steps";
	return "session summary";
}

/*
 * render_session() - a session-wide file (summary.json, ops.json,
 * compare/<other>/<view>) into @out (borrowed); opens and frees every host
 * of the session(s) it is made from.
 */
static int render_session(struct fs_ctx *ctx, const struct fs_target *t,
			  const struct xprofs_sink *out, struct xprofs_buf *err)
{
	const char *what = session_file_name(t);
	struct sess_profs a = {0}, b = {0};
	struct xprofs_session_in ai, bi;
	int r;

	r = sess_profs_open(ctx, t->node, t->session, what, &a);
	if (r == 0 && t->kind == FS_K_COMPARE_VIEW)
		r = sess_profs_open(ctx, t->other_node, t->other, what, &b);
	if (r < 0)
		goto out;
	ai = sess_in(t->session, &a);
	if (t->kind == FS_K_SESSION_OPS) {
		r = xprofs_decode_session_ops(&ai, out);
	} else if (t->kind == FS_K_COMPARE_VIEW) {
		bi = sess_in(t->other, &b);
		r = xprofs_decode_compare((enum xprofs_view)t->view, &bi, &ai, out);
	} else {
		r = xprofs_decode_session_summary(t->session->name, a.names, a.xs,
						  (const char *const *)a.errs, a.n, out);
	}
out:
	if (r < 0 && xprofs_buf_printf(err, "%s: %s", what, strerror(-r)) < 0)
		xprofs_buf_reset(err);
	sess_profs_close(&a);
	sess_profs_close(&b);
	return r;
}

/*
 * slice_window() - the window of slice @t into @o: the named one, or that
 * of step t->step (-ENOENT past the last step).
 */
static int slice_window(const struct fs_target *t, struct xprofs_xspace *x,
			struct xprofs_render_opts *o, struct xprofs_buf *err)
{
	struct xprofs_step_window *w = NULL;
	size_t n = 0;
	int r;

	o->window = true;
	if (t->slice == FS_SLICE_WINDOW) {
		o->from_ps = t->from_ps;
		o->to_ps = t->to_ps;
		return 0;
	}
	if ((r = xprofs_xspace_steps(x, &w, &n, err)) < 0)
		return r;
	if (t->step < n) {
		o->from_ps = w[t->step].begin_ps;
		o->to_ps = w[t->step].end_ps;
	} else {
		(void)!xprofs_buf_printf(err, "step %" PRIu32 ": the profile has %zu steps",
					 t->step, n);
		r = -ENOENT;
	}
	free(w);
	return r;
}

int fs_steps_count(struct fs_ctx *ctx, const struct fs_target *t, size_t *n)
{
	struct xprofs_step_window *w = NULL;
	char hp[XPROFS_PATH_MAX + 1];
	struct xprofs_buf err;
	struct prof p;
	int r;

	*n = 0;
	if ((r = fs_host_path(t, hp, sizeof(hp))) < 0)
		return r;
	xprofs_buf_init(&err, 4096);
	r = prof_take(ctx, hp, &t->host->st, &p) ? 0 : prof_open(ctx, hp, true, &p, &err);
	if (r == 0) {
		r = xprofs_xspace_steps(p.x, &w, n, &err);
		prof_keep(ctx, hp, &p);
	}
	if (r < 0) {
		fs_error_note(ctx, hp, &t->host->st, FS_NAME_STEPS,
			      err.data ? err.data : strerror(-r));
		r = r == -ENOENT ? r : -EIO;
	}
	free(w);
	xprofs_buf_deinit(&err);
	return r;
}

/*
 * render() - generated file @t from open profile @p (host views) into @out.
 * @host is the host's name (trace.json names its processes after it); the
 * render runs on a live.c thread, so it is the job's own copy, never the
 * index's t->host->name, which an index rebuild frees meanwhile. Borrows
 * everything; @p->x is set if it was not (freed by prof_close()), so a second
 * render of the same open profile does not index it again.
 */
static int render(struct fs_ctx *ctx, const struct fs_target *t, const char *host, struct prof *p,
		  const struct xprofs_sink *out, struct xprofs_buf *err)
{
	int r, i;

	if (fs_kind_session_file(t->kind))
		return render_session(ctx, t, out, err);
	if (!p->x && (r = prof_index(ctx, p, err)) < 0)
		return r;
	if (t->kind == FS_K_VIEW) { /* trace.json names its processes after the host */
		/* parts made ahead on other threads wait where temporary renders go (-o tmp_dir) */
		struct xprofs_render_opts o = {.host = host, .spill_dir = ctx->tmp_dir};

		if (t->slice != FS_SLICE_NONE && (r = slice_window(t, p->x, &o, err)) < 0)
			return r;
		return xprofs_xspace_render_opts(p->x, t->view, &o, out, err);
	}
	i = xprofs_xspace_track_find(p->x, t->plane, t->line);
	if (i < 0)
		return i;
	return xprofs_xspace_render_track(p->x, (size_t)i, out, err);
}

#define SIZE_UNKNOWN UINT64_MAX /* in the sizes table: not rendered, not in the cache */

static int view_open(struct fs_ctx *ctx, const struct fs_target *t, struct fs_fh *fh,
		     bool *size_changed, bool sync);

/*
 * -o exact_sizes: render @t now (waiting for the end, as a reopen does) so
 * stat reports its true size; archivers (tar, rsync) trust stat's size. The
 * render is cached like any open's. 0 when it cannot be rendered.
 */
static uint64_t exact_size(struct fs_ctx *ctx, const struct fs_target *t)
{
	struct fs_fh *fh = fs_fh_new(FS_FH_FD);
	bool changed;
	uint64_t size = 0;

	if (fh && view_open(ctx, t, fh, &changed, true) == 0)
		size = fh->size;
	fs_fh_free(fh);
	return size;
}

/* fs_view_size() - the size a generated file will have, if known; else 0 (rendered first
 * with -o exact_sizes). */
uint64_t fs_view_size(struct fs_ctx *ctx, const struct fs_target *t)
{
	struct view_id id;
	uint64_t size = 0;

	if (view_id_make(ctx, t, t->host ? &t->host->st : NULL, &id) < 0)
		goto out;
	if (fs_size_lookup(ctx, id.hash, &size)) {
		if (size == SIZE_UNKNOWN)
			size = ctx->o->exact_sizes ? exact_size(ctx, t) : 0;
		goto out;
	}
	/* a peek is not a use: no hit in status.json, no recency bump for ls -l */
	if (ctx->cache && xprofs_cache_peek_size(ctx->cache, id.key.data, id.key.len, &size) == 0) {
		fs_size_store(ctx, id.hash, size);
	} else if (ctx->o->exact_sizes) {
		size = exact_size(ctx, t);
	} else {
		/* remembered so repeated getattr/ls does not probe the disk cache */
		fs_size_store(ctx, id.hash, SIZE_UNKNOWN);
	}
out:
	xprofs_buf_deinit(&id.key);
	return size;
}

/*
 * A render job (live.c runs it on its thread): what to render and what to
 * note when it fails. Host views own their open profile and a copy of the
 * target; session summaries borrow the opener's index through @t (their
 * open waits for the end, see view_open()).
 */
struct view_job {
	struct fs_ctx *ctx;
	struct fs_target t;             /* a copy; pointers used only by session summaries */
	char host[XPROFS_NAME_MAX + 1]; /* t.host->name, copied: the index may go */
	struct prof p;                  /* owned: the host profile (host views and tracks) */
	char hpath[XPROFS_PATH_MAX + 1];
	uint64_t hash;
};

static int job_render(void *arg, const struct xprofs_sink *out, struct xprofs_buf *err)
{
	struct view_job *j = arg;
	struct prof kept;

	/* a kept index of the same file version saves the whole-file pass */
	if (j->hpath[0] && j->p.f && !j->p.x && prof_take(j->ctx, j->hpath, &j->p.st, &kept)) {
		prof_close(&j->p);
		j->p = kept;
	}
	return render(j->ctx, &j->t, j->host, &j->p, out, err);
}

static void job_done(void *arg, int r, uint64_t size, const struct xprofs_buf *err)
{
	struct view_job *j = arg;
	const struct fs_target *t = &j->t;

	if (r == 0) {
		fs_size_store(j->ctx, j->hash, size);
		return;
	}
	if (r == -ENOENT && t->kind == FS_K_VIEW && t->view == XPROFS_VIEW_KERNELS)
		return; /* no GPU planes: kernels.json does not exist, not an error */
	FS_CNT(j->ctx, render_errors);
	fs_error_note(j->ctx, j->hpath[0] ? j->hpath : t->session->name,
		      j->hpath[0] ? &j->p.st : NULL,
		      t->kind == FS_K_VIEW    ? xprofs_view_name(t->view)
		      : t->kind == FS_K_TRACK ? "track"
					      : session_file_name(t),
		      err->data ? err->data : strerror(-r));
}

static void job_free(void *arg)
{
	struct view_job *j = arg;

	if (j->hpath[0])
		prof_keep(j->ctx, j->hpath, &j->p);
	else
		prof_close(&j->p);
	free(j);
}

/* view_label() - the mount path of @t, for status.json. */
static void view_label(const struct fs_target *t, char *buf, size_t n)
{
	const char *run =
		t->node && t->node->path && t->node->path[0] ? t->node->path : FS_NAME_ROOT_RUN;
	int k = snprintf(buf, n, "/" FS_NAME_RUNS "/%s/%s/", run, t->session->name);

	if (k < 0 || (size_t)k >= n)
		return;
	if (t->kind == FS_K_SESSION_SUMMARY)
		snprintf(buf + k, n - (size_t)k, FS_NAME_SESSION_SUMMARY);
	else if (t->kind == FS_K_SESSION_OPS)
		snprintf(buf + k, n - (size_t)k, FS_NAME_SESSION_OPS);
	else if (t->kind == FS_K_COMPARE_VIEW)
		snprintf(buf + k, n - (size_t)k, FS_NAME_COMPARE "/%s/%s", t->other->name,
			 xprofs_view_name(t->view));
	else if (t->kind == FS_K_VIEW && t->slice != FS_SLICE_NONE) {
		char sn[128];

		slice_name(t, sn, sizeof(sn));
		snprintf(buf + k, n - (size_t)k, "%s/%s/%s", t->host->name, sn,
			 xprofs_view_name(t->view));
	} else if (t->kind == FS_K_VIEW)
		snprintf(buf + k, n - (size_t)k, "%s/%s", t->host->name, xprofs_view_name(t->view));
	else
		snprintf(buf + k, n - (size_t)k, "%s/" FS_NAME_PLANES "/%s/%s", t->host->name,
			 t->plane, t->line);
}

/* Whether @t's ENOENT is found by its render (view_open() maps it), not by a lookup. */
static bool render_finds_missing(const struct fs_target *t)
{
	return t->kind == FS_K_TRACK || t->slice == FS_SLICE_STEP ||
	       (t->kind == FS_K_VIEW && t->view == XPROFS_VIEW_KERNELS);
}

/*
 * view_render() - start (or join) the render of @t under @id and attach it
 * to @fh. Consumes @p (the open host profile). Waits for the end when @sync,
 * else at most FS_LIVE_OPEN_MS / FS_LIVE_OPEN_BYTES: small views open
 * finished, with their size; big ones stream (FS_FH_LIVE). 1: finished;
 * 0: streaming; -EAGAIN: rendered meanwhile (try the cache again); -errno.
 */
static int view_render(struct fs_ctx *ctx, const struct fs_target *t, struct prof *p,
		       const struct view_id *id, bool sync, struct fs_fh *fh)
{
	struct view_job *j = calloc(1, sizeof(*j));
	struct fs_live_job job = {job_render, job_done, job_free, j, fs_shared_wanted(ctx, t)};
	char label[2 * XPROFS_PATH_MAX];
	struct fs_live *L;
	int r;

	if (!j)
		return -ENOMEM;
	j->ctx = ctx;
	j->t = *t;
	if (!fs_kind_session_file(t->kind) && t->host)
		snprintf(j->host, sizeof(j->host), "%s", t->host->name);
	j->p = *p;
	memset(p, 0, sizeof(*p));
	j->hash = id->hash;
	memcpy(j->hpath, id->hpath, sizeof(j->hpath));
	view_label(t, label, sizeof(label));
	r = fs_live_start(ctx, &id->key, id->hash, label, &job, &L);
	if (r < 0)
		return r;
	/*
	 * Whatever the wait says, attach() looks at the state again (and fails a
	 * failed render). A file that only its render finds missing (kernels.json
	 * without GPU planes, a step past the last, a line that is gone) waits for
	 * its first bytes or its end: ENOENT, never an EIO on a later read because
	 * the render was slower than the usual wait. No first byte comes later:
	 * the open returns as soon as there is one to read.
	 */
	if (sync)
		(void)fs_live_wait(L, -1, UINT64_MAX);
	else if (render_finds_missing(t))
		(void)fs_live_wait(L, -1, 1);
	else
		(void)fs_live_wait(L, FS_LIVE_OPEN_MS, FS_LIVE_OPEN_BYTES);
	return fs_live_attach(L, fh);
}

/*
 * view_open() - a cache hit, else render (once across concurrent opens) on a
 * render thread straight into the cache (live.c), serving what is done while
 * it runs. Session summaries (which borrow the index) always wait for the
 * end, as does @sync (fs_view_reopen()).
 */
static int view_open(struct fs_ctx *ctx, const struct fs_target *t, struct fs_fh *fh,
		     bool *size_changed, bool sync)
{
	struct xprofs_cache_reader *e = NULL;
	struct prof p = {0};
	struct xprofs_buf err;
	struct view_id id = {0};
	uint64_t known = 0;
	bool had_size;
	int r = -EAGAIN, attempt;

	*size_changed = false;
	xprofs_buf_init(&err, 4096);
	if (!fs_kind_session_file(t->kind)) {
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
	sync = sync || fs_kind_session_file(t->kind);
	for (attempt = 0, r = -EAGAIN; r == -EAGAIN && attempt < 3; attempt++) {
		if (ctx->cache &&
		    xprofs_cache_reader_open(ctx->cache, id.key.data, id.key.len, &e) == 0) {
			FS_CNT(ctx, view_hits);
			fh->kind = FS_FH_CACHE;
			fh->ce = e;
			fh->size = xprofs_cache_reader_size(e);
			r = 1;
			break;
		}
		if (!fs_kind_session_file(t->kind) && !p.f)
			r = prof_open(ctx, id.hpath, false, &p, &err);
		if (r == -EAGAIN || r == 0)
			r = view_render(ctx, t, &p, &id, sync, fh);
	}
	if (r == -EAGAIN)
		r = -EIO;
	if (r < 0) {
		/* kernels.json of a host without GPU planes does not exist (docs/stats.md) */
		if (r == -ENOENT && t->kind == FS_K_VIEW && t->view == XPROFS_VIEW_KERNELS)
			goto out;
		/* the render noted why in the errors file */
		r = r == -ENOENT && (t->kind == FS_K_TRACK || t->slice == FS_SLICE_STEP) ? -ENOENT
											 : -EIO;
		goto out;
	}
	if (r == 1) {
		fs_size_store(ctx, id.hash, fh->size);
		*size_changed = !had_size || known != fh->size;
	}
	r = 0;
out:
	prof_close(&p);
	xprofs_buf_deinit(&id.key);
	xprofs_buf_deinit(&err);
	return r;
}

int fs_view_open(struct fs_ctx *ctx, const struct fs_target *t, struct fs_fh *fh,
		 bool *size_changed)
{
	return view_open(ctx, t, fh, size_changed, false);
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
	if (r == 0 && t.kind != FS_K_VIEW && t.kind != FS_K_TRACK && !fs_kind_session_file(t.kind))
		r = -EIO;
	if (r == 0) {
		nfh = fs_fh_new(FS_FH_FD);
		r = nfh ? view_open(ctx, &t, nfh, size_changed, true) : -ENOMEM;
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
	if (fh->kind == FS_FH_LIVE)
		return fs_live_pread(fh->live, buf, n, off);
	if (fh->kind == FS_FH_CACHE)
		return xprofs_cache_reader_pread(fh->ce, buf, n, off);
	return xprofs_pread_full(fh->fd, buf, n, off);
}

uint64_t fs_view_fh_size(struct fs_fh *fh, bool *done)
{
	uint64_t size = fh->size;

	*done = true;
	if (fh->kind == FS_FH_LIVE)
		*done = fs_live_size(fh->live, &size);
	return size;
}

void fs_view_close(struct fs_fh *fh)
{
	if (fh->kind != FS_FH_LIVE)
		return;
	fs_live_close(fh->live);
	fh->live = NULL;
}

void fs_views_deinit(struct fs_views *v)
{
	fs_live_stop_all(v);
	for (size_t i = 0; i < FS_KEPT; i++)
		kept_free(v->kept[i]);
	for (size_t i = 0; i < FS_TRACKS; i++)
		tracks_free(&v->tracks[i]);
	for (size_t i = 0; i < FS_ERRHOSTS; i++) {
		free(v->errors[i].path);
		xprofs_buf_deinit(&v->errors[i].text);
	}
	pthread_cond_destroy(&v->cond);
	pthread_mutex_destroy(&v->lock);
}
