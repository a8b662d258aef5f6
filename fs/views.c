/*
 * fs/views.c - opening a generated file under runs/: host views (summary,
 * trace, ops, steps; whole or a slice), tracks (planes/<plane>/<line>) and
 * the session-wide files of session.c. Here: the per-mount tables' life
 * cycle, cache keys, cache hits, render jobs handed to live.c, sizes for
 * getattr, reads of an open view. No FUSE here (unit-tested like index.c):
 * where the kernel's cached attributes must be dropped, the caller is told
 * ("size changed").
 *
 * Design: views are rendered on open, never on getattr/readdir, under a
 * cache key naming the source file's version; later opens (and later
 * mounts) are cache hits. The render itself runs on a thread of live.c
 * (into the cache, or a temporary file without one), which serves readers
 * while it runs; an open waits a little (FS_LIVE_OPEN_MS/_BYTES) so small
 * views open finished with their size, and session-wide files (which borrow
 * the runs index) always wait for the end. A render in flight is joined,
 * not repeated (single-flight by key hash). A damaged cache block
 * under an open view is re-rendered in place (fs_view_reopen()). getattr
 * reports the rendered size when known (memo.c's table, then a cache peek
 * that is not a use) and 0 before the first render.
 *
 * Locks: none of its own; the tables it uses lock ctx->views.lock inside
 * memo.c, profiles.c and live.c.
 *
 * Limits: FS_INFLIGHT renders at once (fs-internal.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xprofs/decode.h"
#include "fs-internal.h"

void fs_views_init(struct fs_views *v)
{
	const char *slow = getenv("XPROFS_TEST_RENDER_DELAY_MS_PER_MB"); /* test-only */
	const char *late = getenv("XPROFS_TEST_RENDER_START_DELAY_MS");  /* test-only */
	const char *lag = getenv("XPROFS_TEST_RENDER_END_DELAY_MS");     /* test-only */

	memset(v, 0, sizeof(*v));
	v->delay_ms_per_mb = slow ? strtoull(slow, NULL, 10) : 0;
	v->start_delay_ms = late ? strtoull(late, NULL, 10) : 0;
	v->end_delay_ms = lag ? strtoull(lag, NULL, 10) : 0;
	pthread_mutex_init(&v->lock, NULL);
	pthread_cond_init(&v->cond, NULL);
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

/* us_str() - @ps as the microseconds of a window name: "<int>[.<frac>]", no trailing zeros. */
static void us_str(xprofs_ps128 ps, char *buf, size_t n)
{
	char i[48];
	unsigned frac = (unsigned)(ps % 1000000);
	int k;

	ps_str(ps / 1000000, i, sizeof(i));
	if (!frac) {
		snprintf(buf, n, "%s", i);
		return;
	}
	k = snprintf(buf, n, "%s.%06u", i, frac);
	while (k > 0 && (size_t)k < n && buf[k - 1] == '0')
		buf[--k] = '\0';
}

/*
 * file_what() - what generated file @t is called in its host's errors file:
 * its path below the host dir ("summary.json", "steps/3/trace.json",
 * "window/1.5-2/trace.json" with the window in its shortest name,
 * "planes/<plane>/<line>"), or the session file's name.
 */
static void file_what(const struct fs_target *t, char *buf, size_t n)
{
	char a[64], b[64];
	const char *lod = t->lod ? FS_NAME_LOD "/" : "";

	if (fs_kind_session_file(t->kind))
		snprintf(buf, n, "%s", fs_session_file_name(t));
	else if (t->kind == FS_K_TRACK)
		snprintf(buf, n, FS_NAME_PLANES "/%s/%s", t->plane, t->line);
	else if (t->slice == FS_SLICE_STEP)
		snprintf(buf, n, FS_NAME_STEPS "/%" PRIu32 "/%s%s", t->step, lod,
			 xprofs_decode_view_name(t->view));
	else if (t->slice == FS_SLICE_WINDOW) {
		us_str(t->from_ps, a, sizeof(a));
		us_str(t->to_ps, b, sizeof(b));
		snprintf(buf, n, FS_NAME_WINDOW "/%s-%s/%s%s", a, b, lod,
			 xprofs_decode_view_name(t->view));
	} else
		snprintf(buf, n, "%s%s", lod, xprofs_decode_view_name(t->view));
}

/* key_add_slice() - which slice of the view: the cache key's last part. */
static int key_add_slice(struct xprofs_buf *k, const struct fs_target *t)
{
	char name[128];

	slice_name(t, name, sizeof(name));
	int r = xprofs_buf_add(k, "", 1);

	return r < 0 ? r : xprofs_buf_adds(k, name);
}

/*
 * key_add_sidecars() - the name and version of every sidecar of @sess (the
 * HLO the views read): a sidecar written or changed later makes new keys.
 */
static int key_add_sidecars(struct xprofs_buf *k, const struct fs_session *sess)
{
	int r = 0;

	for (size_t i = 0; r == 0 && i < sess->nsidecars; i++)
		r = key_add_file(k, sess->sidecars[i].name, &sess->sidecars[i].st);
	return r;
}

/*
 * key_add_session() - the store path and version of every host of @sess
 * (run @node), then of its sidecars.
 */
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
	if (r == 0)
		r = key_add_sidecars(k, sess);
	return r;
}

/*
 * view_id_make() - the cache key of generated file @t: "xprofs-view-v8" (v2:
 * trace.json with XProf's rules; v3: bytes_accessed hidden as IsInternalStat()
 * hides it; v4: TPU lines derived from stats; v5: trace.pftrace interns derived
 * events' args, TPU host-offload rows; v6: flows from correlation ids and
 * producer/consumer stats; v7: kernels.json's ops and GPU op categories from
 * the HLO; v8: the session summary's memory peaks; older renders are never
 * served),
 * version, source, then the store path and version (size, mtime,
 * generation) of each profile it is made from (a view: and the session's
 * sidecars, whose HLO it may read), then what is rendered.
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
	r = xprofs_buf_add(&id->key, "xprofs-view-v8\0" XPROFS_VERSION,
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
					    : t->kind == FS_K_SESSION_VIEW  ? "session-view"
					    : t->view == XPROFS_VIEW_OPS    ? "compare-ops"
					    : t->view == XPROFS_VIEW_STEPS  ? "compare-steps"
									    : "compare-view");
		/* the view of a session-view / compare-view key */
		if (r == 0 && (t->kind == FS_K_SESSION_VIEW ||
			       (t->kind == FS_K_COMPARE_VIEW && t->view != XPROFS_VIEW_OPS &&
				t->view != XPROFS_VIEW_STEPS)))
			r = xprofs_buf_adds(&id->key, xprofs_decode_view_name(t->view));
	} else {
		r = fs_host_path(t, id->hpath, sizeof(id->hpath));
		if (r == 0)
			r = key_add_file(&id->key, id->hpath, st);
		if (r == 0 && t->kind == FS_K_VIEW)
			r = key_add_sidecars(&id->key, t->session);
		if (r == 0 && t->kind == FS_K_VIEW)
			r = xprofs_buf_adds(&id->key, xprofs_decode_view_name(t->view));
		if (r == 0 && t->kind == FS_K_VIEW && t->slice != FS_SLICE_NONE)
			r = key_add_slice(&id->key, t);
		if (r == 0 && t->kind == FS_K_VIEW && t->lod) {
			r = xprofs_buf_add(&id->key, "", 1);
			if (r == 0)
				r = xprofs_buf_adds(&id->key, FS_NAME_LOD);
		}
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
	if ((r = xprofs_decode_steps(x, &w, &n, err)) < 0)
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

/*
 * render() - generated file @t from open profile @p (host views, of store
 * path @hpath) into @out. @host is the host's name (trace.json names its processes after it); the
 * render runs on a live.c thread, so it is the job's own copy, never the
 * index's t->host->name, which an index rebuild frees meanwhile. Borrows
 * everything; @p->x is set if it was not (freed by fs_prof_close()), so a second
 * render of the same open profile does not index it again.
 */
static int render(struct fs_ctx *ctx, const struct fs_target *t, const char *host,
		  const char *hpath, struct fs_prof *p, const struct xprofs_sink *out,
		  struct xprofs_buf *err)
{
	int r, i;

	if (fs_kind_session_file(t->kind))
		return fs_session_render(ctx, t, out, err);
	if (!p->x && (r = fs_prof_index(ctx, hpath, p, err)) < 0)
		return r;
	if (t->kind == FS_K_VIEW) { /* trace.json names its processes after the host */
		/* parts made ahead on other threads wait where temporary renders go (-o tmp_dir) */
		struct xprofs_render_opts o = {.host = host, .spill_dir = ctx->tmp_dir};
		struct fs_sidecars sc;

		if (t->slice != FS_SLICE_NONE && (r = slice_window(t, p->x, &o, err)) < 0)
			return r;
		o.lod = t->lod;
		/* the session's XLA programs, for the views that read the HLO */
		if ((r = fs_sidecars_open(ctx, t->node, t->session, p->x, &sc)) < 0)
			return r;
		r = xprofs_decode_render_opts(p->x, t->view, &o, out, err);
		fs_sidecars_close(&sc, p->x);
		return r;
	}
	i = xprofs_xspace_track_find(p->x, t->plane, t->line);
	if (i < 0)
		return i;
	return xprofs_decode_render_track(p->x, (size_t)i, out, err);
}

#define SIZE_UNKNOWN UINT64_MAX /* in the sizes table: not rendered, not in the cache */

static int view_open(struct fs_ctx *ctx, struct fs_index *idx, const struct fs_target *t,
		     struct fs_fh *fh, bool *size_changed, bool sync);

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

	if (fh && view_open(ctx, NULL, t, fh, &changed, true) == 0)
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
 * target, whose pointers (the session, its run node, its sidecars' names:
 * fs_sidecars_open()) are into the opener's index: the job holds a
 * reference to it, since the render outlives the open (and a refresh may
 * replace the index meanwhile). Without one (exact sizes) the open waits for
 * the end, as session summaries' opens do.
 */
struct view_job {
	struct fs_ctx *ctx;
	struct fs_index *idx;           /* a reference: @t's pointers are into it; or NULL */
	struct fs_target t;             /* a copy */
	char host[XPROFS_NAME_MAX + 1]; /* t.host->name, copied: the index may go */
	struct fs_prof p;               /* owned: the host profile (host views and tracks) */
	char hpath[XPROFS_PATH_MAX + 1];
	uint64_t hash;
};

static int job_render(void *arg, const struct xprofs_sink *out, struct xprofs_buf *err)
{
	struct view_job *j = arg;
	struct fs_prof kept;

	/* a kept index of the same file version saves the whole-file pass */
	if (j->hpath[0] && j->p.f && !j->p.x && fs_prof_take(j->ctx, j->hpath, &j->p.st, &kept)) {
		fs_prof_close(&j->p);
		j->p = kept;
	}
	return render(j->ctx, &j->t, j->host, j->hpath, &j->p, out, err);
}

/*
 * job_done() - the errors file says what fails now: a failure notes why, a
 * success removes the file's earlier note.
 */
static void job_done(void *arg, int r, uint64_t size, const struct xprofs_buf *err)
{
	struct view_job *j = arg;
	const struct fs_target *t = &j->t;
	const char *hp = j->hpath[0] ? j->hpath : t->session->name;
	const struct xprofs_store_stat *st = j->hpath[0] ? &j->p.st : NULL;
	char what[2 * XPROFS_NAME_MAX + 64];

	file_what(t, what, sizeof(what));
	if (r == 0) {
		fs_size_store(j->ctx, j->hash, size);
		fs_error_clear(j->ctx, hp, st, what);
		return;
	}
	if (r == -ENOENT && t->kind == FS_K_VIEW && t->view == XPROFS_VIEW_KERNELS)
		return; /* no GPU planes: kernels.json does not exist, not an error */
	FS_CNT(j->ctx, render_errors);
	fs_error_note(j->ctx, hp, st, what, err->data ? err->data : strerror(-r));
}

static void job_free(void *arg)
{
	struct view_job *j = arg;

	fs_index_put(j->idx);
	if (j->hpath[0])
		fs_prof_keep(j->ctx, j->hpath, &j->p);
	else
		fs_prof_close(&j->p);
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
	else if (t->kind == FS_K_SESSION_VIEW)
		snprintf(buf + k, n - (size_t)k, "%s", xprofs_decode_view_name(t->view));
	else if (t->kind == FS_K_COMPARE_VIEW)
		snprintf(buf + k, n - (size_t)k, FS_NAME_COMPARE "/%s/%s", t->other->name,
			 xprofs_decode_view_name(t->view));
	else if (t->kind == FS_K_VIEW && t->slice != FS_SLICE_NONE) {
		char sn[128];

		slice_name(t, sn, sizeof(sn));
		snprintf(buf + k, n - (size_t)k, "%s/%s/%s%s", t->host->name, sn,
			 t->lod ? FS_NAME_LOD "/" : "", xprofs_decode_view_name(t->view));
	} else if (t->kind == FS_K_VIEW)
		snprintf(buf + k, n - (size_t)k, "%s/%s%s", t->host->name,
			 t->lod ? FS_NAME_LOD "/" : "", xprofs_decode_view_name(t->view));
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
static int view_render(struct fs_ctx *ctx, struct fs_index *idx, const struct fs_target *t,
		       struct fs_prof *p, const struct view_id *id, bool sync, struct fs_fh *fh)
{
	struct view_job *j = calloc(1, sizeof(*j));
	struct fs_live_job job = {job_render, job_done, job_free, j, fs_shared_wanted(ctx, t),
				  false};
	char label[2 * XPROFS_PATH_MAX];
	struct fs_live *L;
	int r;

	if (!j)
		return -ENOMEM;
	j->ctx = ctx;
	j->idx = fs_index_get(idx);
	j->t = *t;
	sync = sync || !idx; /* nothing keeps @t's pointers alive past this open */
	if (!fs_kind_session_file(t->kind) && t->host)
		snprintf(j->host, sizeof(j->host), "%s", t->host->name);
	/* a whole trace of a big profile: streamed to its readers, not cached (live.c) */
	job.stream = !sync && !job.shared && t->kind == FS_K_VIEW && t->slice == FS_SLICE_NONE &&
		     !t->lod && (t->view == XPROFS_VIEW_TRACE || t->view == XPROFS_VIEW_PFTRACE) &&
		     ctx->o->stream_min_bytes && p->f && p->st.size >= ctx->o->stream_min_bytes;
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

/* view_made() - @t (@id; host version @st) is served from the cache: not failing now. */
static void view_made(struct fs_ctx *ctx, const struct fs_target *t, const struct view_id *id,
		      const struct xprofs_store_stat *st)
{
	char what[2 * XPROFS_NAME_MAX + 64];

	file_what(t, what, sizeof(what));
	fs_error_clear(ctx, id->hpath[0] ? id->hpath : t->session->name, st, what);
}

/*
 * view_open() - a cache hit, else render (once across concurrent opens) on a
 * render thread straight into the cache (live.c), serving what is done while
 * it runs. Session summaries (which borrow the index) always wait for the
 * end, as does @sync (fs_view_reopen()).
 */
static int view_open(struct fs_ctx *ctx, struct fs_index *idx, const struct fs_target *t,
		     struct fs_fh *fh, bool *size_changed, bool sync)
{
	struct xprofs_cache_reader *e = NULL;
	struct fs_prof p = {0};
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
			r = fs_prof_open(ctx, id.hpath, false, &p, &err);
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
			view_made(ctx, t, &id, p.f ? &p.st : NULL);
			fh->kind = FS_FH_CACHE;
			fh->ce = e;
			fh->size = xprofs_cache_reader_size(e);
			r = 1;
			break;
		}
		if (!fs_kind_session_file(t->kind) && !p.f)
			r = fs_prof_open(ctx, id.hpath, false, &p, &err);
		if (r == -EAGAIN || r == 0)
			r = view_render(ctx, idx, t, &p, &id, sync, fh);
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
	fs_prof_close(&p);
	xprofs_buf_deinit(&id.key);
	xprofs_buf_deinit(&err);
	return r;
}

int fs_view_open(struct fs_ctx *ctx, struct fs_index *idx, const struct fs_target *t,
		 struct fs_fh *fh, bool *size_changed)
{
	return view_open(ctx, idx, t, fh, size_changed, false);
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
		r = nfh ? view_open(ctx, idx, &t, nfh, size_changed, true) : -ENOMEM;
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

void fs_views_deinit(struct fs_views *v)
{
	fs_live_stop_all(v);
	fs_profiles_free(v);
	fs_memo_free(v);
	pthread_cond_destroy(&v->cond);
	pthread_mutex_destroy(&v->lock);
}
