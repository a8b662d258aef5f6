/*
 * fs/profiles.c - opened profiles: a host's store file and its index
 * (xprofs_xspace_open()), the indexes kept between uses, and what is read
 * from an index without a render: the track list behind planes/ listings
 * and the step count behind steps/ listings and lookups, and whether a
 * profile has a GPU plane (kernels.json). No FUSE here.
 *
 * Design: an index costs one pass over the whole file, so one built for one
 * use is kept, idle, for the next use of the same file version (see "Kept
 * indexes" below); a track list is decoded once per file version and kept
 * in memory (LRU); the step count and the GPU answer are remembered per
 * version too (memo.c's facts), learnt when an index is built or the steps
 * counted. Renders (views.c, session.c) open their profiles here, and
 * their session's sidecars (fs_sidecars_open()) for the time of a render.
 *
 * Locks: ctx->views.lock guards the kept indexes and the track lists; it is
 * never held across I/O or an index, except that fs_tracks_get() returns
 * with it held for the caller to read the list.
 *
 * Limits: FS_KEPT kept indexes (FS_KEPT_NS each), FS_TRACKS track lists.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "xprofs/decode.h"
#include "fs-internal.h"

void fs_prof_close(struct fs_prof *p)
{
	p->x = xprofs_xspace_free(p->x);
	xprofs_store_reader_close(p->f);
	p->f = NULL;
	free(p->r);
	p->r = NULL;
}

/*
 * Sidecars: a session's "*.hlo_proto.pb" files, opened for one render and
 * attached to the profile being rendered (hlo/ reads them when a view asks
 * for the HLO: kernels.json, ops.json, ...); closed with the render, so a
 * kept index never holds one. A store reader does not read until asked.
 */
int fs_sidecars_open(struct fs_ctx *ctx, const struct fs_run_node *node,
		     const struct fs_session *sess, struct xprofs_xspace *x,
		     struct fs_sidecars *out)
{
	char p[XPROFS_PATH_MAX + 1];
	size_t n = sess->nsidecars;

	memset(out, 0, sizeof(*out));
	if (!n)
		return 0;
	out->f = calloc(n, sizeof(*out->f));
	out->r = calloc(n, sizeof(*out->r));
	out->sc = calloc(n, sizeof(*out->sc));
	if (!out->f || !out->r || !out->sc) {
		fs_sidecars_close(out, NULL);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		struct xprofs_store_reader *f = NULL;
		size_t k = out->n;

		if (fs_store_path(p, sizeof(p), node->path, sess->name, NULL) < 0 ||
		    strlen(p) + 1 + strlen(sess->sidecars[i].name) > XPROFS_PATH_MAX)
			continue;
		strcat(p, "/");
		strcat(p, sess->sidecars[i].name);
		if (xprofs_store_reader_open(ctx->store, p, &f) < 0)
			continue;
		if (xprofs_store_reader_as_reader(f, &out->r[k]) < 0) {
			xprofs_store_reader_close(f);
			continue;
		}
		out->f[k] = f;
		out->sc[k] = (struct xprofs_xspace_sidecar){sess->sidecars[i].name, &out->r[k]};
		out->n++;
	}
	if (x)
		xprofs_xspace_set_sidecars(x, out->sc, out->n);
	return 0;
}

void fs_sidecars_close(struct fs_sidecars *s, struct xprofs_xspace *x)
{
	if (x)
		xprofs_xspace_set_sidecars(x, NULL, 0);
	for (size_t i = 0; s->f && i < s->n; i++)
		xprofs_store_reader_close(s->f[i]);
	free(s->f);
	free(s->r);
	free(s->sc);
	memset(s, 0, sizeof(*s));
}

/*
 * note_gpu() - remember whether indexed profile @p (of @hpath) has a GPU
 * plane: kernels.json exists exactly then (stats/view-kernels.c).
 */
static void note_gpu(struct fs_ctx *ctx, const char *hpath, const struct fs_prof *p)
{
	fs_facts_set_gpu(ctx, hpath, &p->st, xprofs_xspace_has_gpu(p->x));
}

/*
 * fs_prof_index() - index @p's profile (store path @hpath) into @p->x
 * (reason appended to @err), and remember what lookups learn from an index.
 * A local file is indexed, and its stats views computed, on up to
 * PROF_THREADS threads, as xprofs-decode does (the index pass is most of a
 * big view's first-byte time); a gs:// file on one, since its reader
 * follows one sequential stream per open file and two threads reading apart
 * would cut it at every switch.
 */
#define PROF_THREADS 4
int fs_prof_index(struct fs_ctx *ctx, const char *hpath, struct fs_prof *p, struct xprofs_buf *err)
{
	struct xprofs_xspace_opts xo = {.threads = 1};
	int r;

	if (fs_store_is_local(ctx)) {
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

		xo.threads = ncpu < 1 ? 1 : ncpu > PROF_THREADS ? PROF_THREADS : (unsigned)ncpu;
	}
	FS_CNT(ctx, profile_indexes);
	r = xprofs_xspace_open_opts(p->r, &xo, err, &p->x);
	if (r == 0)
		note_gpu(ctx, hpath, p);
	return r;
}

/*
 * fs_prof_open() - open store file @hpath (borrowed) into @p; with @decode also
 * index it (reason appended to @err). Caller owns @p's members on success;
 * release with fs_prof_close().
 */
int fs_prof_open(struct fs_ctx *ctx, const char *hpath, bool decode, struct fs_prof *p,
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
		r = fs_prof_index(ctx, hpath, p, err);
	if (r < 0)
		fs_prof_close(p);
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
	struct fs_prof p;
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
		fs_prof_close(&k->p);
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
 * fs_prof_take() - the kept index of @hpath at version @st into @p (which the
 * caller then owns, as from fs_prof_open(.., true, ..)); false when none.
 */
bool fs_prof_take(struct fs_ctx *ctx, const char *hpath, const struct xprofs_store_stat *st,
		  struct fs_prof *p)
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
	note_gpu(ctx, hpath, p); /* again: the facts' slot may have gone to another profile */
	return true;
}

/* fs_prof_keep() - keep @p (consumed) for the next use of @hpath; closes it if it has no index. */
void fs_prof_keep(struct fs_ctx *ctx, const char *hpath, struct fs_prof *p)
{
	struct fs_views *v = &ctx->views;
	struct fs_kept *old[FS_KEPT] = {0}, *k, *evict = NULL;
	size_t slot = 0;
	int64_t now = mono_ns();

	if (!p->x || strlen(hpath) > XPROFS_PATH_MAX || !(k = calloc(1, sizeof(*k)))) {
		fs_prof_close(p);
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
	uint64_t key = fs_version_key(hpath, st, "tracks");
	struct fs_track_list nt = {0}, *slot;
	struct xprofs_buf err;
	struct fs_prof p;
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
	r = fs_prof_take(ctx, hpath, st, &p) ? 0 : fs_prof_open(ctx, hpath, true, &p, &err);
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
	fs_prof_keep(ctx, hpath, &p);
	xprofs_buf_deinit(&err);
	if (r < 0) {
		tracks_free(&nt);
		return r;
	}
	fs_error_clear(ctx, hpath, st, FS_NAME_PLANES);
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

/*
 * fs_steps_count() - the step count is remembered per profile version
 * (memo.c's facts): lookups of steps/<n> ask it each time, and counting
 * costs an index (kept, see above) plus a walk of the step lines.
 */
int fs_steps_count(struct fs_ctx *ctx, const struct fs_target *t, size_t *n)
{
	struct xprofs_step_window *w = NULL;
	char hp[XPROFS_PATH_MAX + 1];
	struct xprofs_buf err;
	struct fs_facts f;
	struct fs_prof p;
	int r;

	*n = 0;
	if ((r = fs_host_path(t, hp, sizeof(hp))) < 0)
		return r;
	fs_facts_get(ctx, hp, &t->host->st, &f);
	if (f.steps_known) {
		*n = f.steps;
		return 0;
	}
	xprofs_buf_init(&err, 4096);
	r = fs_prof_take(ctx, hp, &t->host->st, &p) ? 0 : fs_prof_open(ctx, hp, true, &p, &err);
	if (r == 0) {
		r = xprofs_decode_steps(p.x, &w, n, &err);
		if (r == 0) { /* the open file's version: the index's may be older */
			fs_facts_set_steps(ctx, hp, &p.st, *n);
			fs_error_clear(ctx, hp, &p.st, FS_NAME_STEPS);
		}
		fs_prof_keep(ctx, hp, &p);
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

int fs_step_check(struct fs_ctx *ctx, const struct fs_target *t)
{
	char hp[XPROFS_PATH_MAX + 1];
	size_t n;
	int r;

	if (t->slice != FS_SLICE_STEP)
		return 0;
	r = fs_steps_count(ctx, t, &n);
	if (r < 0 || t->step < n)
		return r;
	if (fs_host_path(t, hp, sizeof(hp)) == 0)
		fs_refused(ctx,
			   "%s: no such slice: " FS_NAME_STEPS "/%" PRIu32
			   ": the profile has %zu steps",
			   hp, t->step, n);
	return -ENOENT;
}

bool fs_host_lacks_gpu(struct fs_ctx *ctx, const struct fs_target *t)
{
	char hp[XPROFS_PATH_MAX + 1];
	struct fs_facts f;

	if (fs_host_path(t, hp, sizeof(hp)) < 0)
		return false;
	fs_facts_get(ctx, hp, &t->host->st, &f);
	return f.gpu == 0;
}

void fs_profiles_free(struct fs_views *v)
{
	for (size_t i = 0; i < FS_KEPT; i++)
		kept_free(v->kept[i]);
	for (size_t i = 0; i < FS_TRACKS; i++)
		tracks_free(&v->tracks[i]);
}
