/*
 * fs/live.c - renders in progress: a generated file is rendered on a thread
 * of its own while its readers read what is already done. No FUSE here.
 *
 * Design: fs_live_start() claims the view's single-flight slot
 * (fs_render_begin() in flight.c, which also bounds renders at FS_INFLIGHT) and starts one
 * detached thread per render. The thread streams the JSON into a cache
 * writer; readers read the writer's full blocks (xprofs_cache_writer_pread():
 * compressed ones back from its temp file, queued ones copied), so no
 * uncompressed copy of the view is kept anywhere and memory stays bounded by
 * the writer's few blocks. A reader asking past what is done waits on the
 * render's condition variable (signalled every FS_LIVE_PUBLISH bytes and at
 * the end); EOF comes only once the render is complete, and a failed render
 * gives its readers -EIO (never a short file that looks complete). After the
 * commit the published entry serves the rest. Without a usable cache (no
 * cache, writer refused) the render goes to an unlinked temporary file
 * instead, which readers pread. An entry about to pass the cache's cap
 * (xprofs_cache_writer_near_cap(), asked before each write) goes on
 * uncached but still compressed: its writer turns private (never
 * published, no cap), is sealed at the end and serves the readers until the
 * last of them closes, so a view bigger than the cache costs one render and
 * its compressed size on disk, not its raw size (a 6 GB trace.json: 1.3 GB,
 * and no raw copy written at disk speed); a refusal met anyway (a full disk)
 * restarts the render into a file and readers wait until it catches up (the
 * same bytes).
 * A reader that closes early cancels nothing: the thread holds its own
 * reference and the entry is cached.
 * Streamed renders (job.stream: whole traces of big profiles, -o
 * stream_min) skip the cache: the render fills a ring of FS_RING_SIZE bytes
 * in memory (a memfd mapped twice in a row, so any stretch is contiguous;
 * the render's writer builds its bytes in it through the sink's room()),
 * waiting for its leading reader, and keeps nothing; a reader
 * that needs bytes gone from the ring, or a full ring nobody reads for
 * FS_RING_STALL_MS, makes it start over into the cache as above (readers
 * wait for it to catch up), and when every reader has left it stops.
 * With a shared view cache (shared.c), the thread of a shared view first
 * fetches the view's checked copy into the cache (then nothing is rendered)
 * and, after rendering one, queues its upload (replacing a damaged copy)
 * once the readers were told.
 *
 * Locks: L->lock guards a render's state, source and readable end and is
 * never held across I/O; ctx->views.lock guards the table of renders (slots
 * parallel to the single-flight keys) and is taken without L->lock held.
 * The render thread waits for readers inside the writer (L->preads) to leave
 * before it commits or aborts (L->quiesce), so the writer is never freed
 * under a reader.
 *
 * Limits: FS_INFLIGHT renders at once (more wait for a slot; a finished
 * streamed render keeps its slot and ring while its file is open); unmounting
 * cancels renders in progress (their sinks fail with -ECANCELED) and waits
 * for their threads. Test-only knobs: XPROFS_TEST_RENDER_DELAY_MS_PER_MB
 * slows every render by that many milliseconds per MiB written, so tests can
 * observe a render in progress on a small profile;
 * XPROFS_TEST_RENDER_START_DELAY_MS starts every render that late;
 * XPROFS_TEST_RENDER_END_DELAY_MS keeps a finished render in the table that
 * long (an open meeting a failed one there renders again).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fs-internal.h"

#define RENDER_NO_CACHE 1 /* live_into_cache(): the cache could not take it; use a temp file */
#define RENDER_RESTART 2  /* live_streamed(): a reader missed the ring; render into the cache */
#define RENDER_STREAMED 3 /* live_streamed(): served to the end, nothing kept */
#define RENDER_DROPPED 4  /* live_streamed(): every reader left; stopped, nothing kept */

enum live_state { LIVE_RUNNING, LIVE_DONE, LIVE_FAILED };

struct fs_live {
	struct fs_ctx *ctx;
	int refs; /* atomic: the thread, each opener until attached, each live handle */
	uint64_t hash;
	struct xprofs_buf key; /* the cache key; owned */
	char *label;           /* mount path for status.json; owned */
	int64_t started_ns, started_mono_ns;
	struct fs_live_job job;
	uint64_t done; /* atomic: bytes produced by the current attempt */
	/* render thread only */
	uint64_t produced, published, slept_mb;
	int sink_err; /* the cache writer's own failure */
	/* under lock */
	pthread_mutex_t lock;
	pthread_cond_t cond; /* CLOCK_MONOTONIC: progress, quiesce, the end */
	enum live_state state;
	int err;           /* LIVE_FAILED: the render's -errno */
	uint64_t readable; /* bytes readers may read now, from offset 0 */
	bool quiesce;      /* the thread wants the writer to itself */
	unsigned preads;   /* readers inside xprofs_cache_writer_pread() */
	unsigned handles;  /* live handles attached (FS_FH_LIVE) */
	bool private_w;    /* the writer passed the cap: never published (live_write()) */
	/* the entry being written; or NULL; once private and sealed, LIVE_DONE's source */
	struct xprofs_cache_writer *w;
	int fd;                            /* the temporary file; or -1 */
	struct xprofs_cache_reader *entry; /* LIVE_DONE from the cache */
	uint64_t size;                     /* LIVE_DONE; a streamed render's once ring_end */
	/* a streamed render (live_streamed()), under lock */
	uint8_t *ring;      /* FS_RING_SIZE bytes: offset p at ring[p % FS_RING_SIZE]; or NULL */
	uint64_t ring_lo;   /* the oldest byte still in the ring */
	uint64_t ring_at;   /* the furthest byte any reader has read */
	bool ring_full;     /* the render waits for a reader to make room */
	uint64_t ring_need; /* ring_full: the ring_at that makes room for the render's bytes */
	uint64_t woken;     /* L->readable when waiting readers were last woken */
	unsigned waiters;   /* readers (and opens) waiting for bytes of a streamed render */
	bool ring_end;      /* rendered to the end (size set): reads past it are EOF */
	bool restart;       /* a reader missed the ring: render again, into the cache */
	bool gone;          /* LIVE_DONE with nothing kept: an open renders again */
	bool dropped;       /* every reader left: the sink stopped the render (RENDER_DROPPED) */
};

static void live_put(struct fs_live *L)
{
	if (!L || __atomic_sub_fetch(&L->refs, 1, __ATOMIC_ACQ_REL))
		return;
	xprofs_cache_reader_close(L->entry);
	xprofs_mirror_unmap(L->ring, FS_RING_SIZE);
	if (L->private_w) /* sealed, or left by a failed render: either way ours now */
		xprofs_cache_writer_abort(L->w);
	if (L->fd >= 0)
		close(L->fd);
	xprofs_buf_deinit(&L->key);
	free(L->label);
	pthread_cond_destroy(&L->cond);
	pthread_mutex_destroy(&L->lock);
	free(L);
}

/* live_publish() - readers may read @readable bytes now; wakes them. */
static void live_publish(struct fs_live *L, uint64_t readable)
{
	pthread_mutex_lock(&L->lock);
	L->readable = readable;
	pthread_cond_broadcast(&L->cond);
	pthread_mutex_unlock(&L->lock);
	L->published = readable;
}

/* live_throttle() - the test-only delay, applied per MiB produced. */
static void live_throttle(struct fs_live *L)
{
	uint64_t mb = L->produced >> 20, ms = L->ctx->views.delay_ms_per_mb * (mb - L->slept_mb);

	if (!L->ctx->views.delay_ms_per_mb || mb == L->slept_mb)
		return;
	L->slept_mb = mb;
	xprofs_sleep_ms(ms);
}

/* live_progress() - after bytes were written: status.json's count, then the test-only delay. */
static void live_progress(struct fs_live *L)
{
	__atomic_store_n(&L->done, L->produced, __ATOMIC_RELAXED);
	live_throttle(L);
}

static bool live_stopping(const struct fs_live *L)
{
	return __atomic_load_n(&L->ctx->views.stopping, __ATOMIC_RELAXED);
}

/* live_timedwait() - wait on L->cond (lock held) for at most @ms. */
static void live_timedwait(struct fs_live *L, int64_t ms)
{
	int64_t until = xprofs_mono_ns() + ms * 1000000;
	struct timespec ts = {(time_t)(until / 1000000000), (long)(until % 1000000000)};

	(void)pthread_cond_timedwait(&L->cond, &L->lock, &ts);
}

/*
 * ring_wait_room() - with the lock held: wait until @k more bytes fit in the
 * ring without overwriting bytes its leading reader has not read, then let
 * the bytes they overwrite go (ring_lo). 0; -EAGAIN when the render has to
 * stop here (as ring_write()); -ECANCELED at unmount.
 */
static int ring_wait_room(struct fs_live *L, size_t k)
{
	int64_t idle_since = xprofs_mono_ns();
	uint64_t seen = L->ring_at;

	while (!L->restart && !L->dropped && !live_stopping(L) &&
	       L->produced + k > L->ring_at + FS_RING_SIZE) {
		if (__atomic_load_n(&L->refs, __ATOMIC_ACQUIRE) == 1) {
			L->dropped = true; /* nobody holds it: nobody will read */
			break;
		}
		L->ring_need = L->produced + k - FS_RING_SIZE;
		if (!L->ring_full) {
			L->ring_full = true; /* an open waiting for bytes takes it now */
			L->woken = L->readable;
			pthread_cond_broadcast(&L->cond);
		}
		if (L->ring_at != seen) {
			seen = L->ring_at;
			idle_since = xprofs_mono_ns();
		} else if (xprofs_mono_ns() - idle_since > FS_RING_STALL_MS * 1000000LL) {
			L->restart = true;
			xprofs_info("views: %s: no reader for %d ms: rendering it into the "
				    "cache instead",
				    L->label, FS_RING_STALL_MS);
			break;
		}
		live_timedwait(L, 100);
	}
	L->ring_full = false;
	if (L->restart || L->dropped || live_stopping(L))
		return live_stopping(L) ? -ECANCELED : -EAGAIN;
	/* readers copy under the lock: from here no reader asks for these */
	if (L->produced + k > FS_RING_SIZE && L->produced + k - FS_RING_SIZE > L->ring_lo)
		L->ring_lo = L->produced + k - FS_RING_SIZE;
	return 0;
}

/* ring_commit() - @k more bytes of the render are in the ring (lock held): readers may read them. */
static void ring_commit(struct fs_live *L, size_t k)
{
	L->produced += k;
	L->readable = L->produced;
	/* waiting readers are woken for a block of bytes, not for each write */
	if (L->waiters && L->readable - L->woken >= FS_RING_WAKE) {
		L->woken = L->readable;
		pthread_cond_broadcast(&L->cond);
	}
}

/*
 * ring_write() - a streamed render's sink: @n bytes (borrowed) into the
 * ring, waiting while they would overwrite bytes that its leading reader has
 * not read yet. 0; -EAGAIN when the render has to stop here: L->restart (a
 * reader missed the ring, or a full ring went unread for FS_RING_STALL_MS:
 * the render starts over into the cache) or L->dropped (every reader left);
 * -ECANCELED at unmount.
 */
static int ring_write(struct fs_live *L, const uint8_t *p, size_t n)
{
	int r;

	while (n) {
		size_t k = n < FS_RING_SIZE / 4 ? n : FS_RING_SIZE / 4;

		pthread_mutex_lock(&L->lock);
		if ((r = ring_wait_room(L, k)) < 0) {
			pthread_mutex_unlock(&L->lock);
			return r;
		}
		/* the ring is mapped twice in a row: any FS_RING_SIZE bytes are contiguous */
		memcpy(L->ring + L->produced % FS_RING_SIZE, p, k);
		ring_commit(L, k);
		pthread_mutex_unlock(&L->lock);
		p += k;
		n -= k;
	}
	return 0;
}

/*
 * ring_room() - xprofs_sink.room of a streamed render: the render's JSON
 * writer builds its next bytes in the ring itself (no copy from its buffer
 * into the ring). At least @need bytes, FS_RING_LEND when they fit.
 */
static void *ring_room(void *arg, size_t need, size_t *got, int *err)
{
	struct fs_live *L = arg;
	size_t k = need > FS_RING_LEND ? need : FS_RING_LEND;
	void *p;

	*err = 0;
	if (!L->ring || need > FS_RING_SIZE / 4)
		return NULL; /* write() copies it */
	if (live_stopping(L)) {
		*err = -ECANCELED;
		return NULL;
	}
	pthread_mutex_lock(&L->lock);
	if (L->produced + k > L->ring_at + FS_RING_SIZE && k > need)
		k = need; /* less to wait for */
	if ((*err = ring_wait_room(L, k)) < 0) {
		pthread_mutex_unlock(&L->lock);
		return NULL;
	}
	p = L->ring + L->produced % FS_RING_SIZE;
	pthread_mutex_unlock(&L->lock);
	*got = k;
	return p;
}

/* ring_commit_sink() - xprofs_sink.commit of a streamed render. */
static int ring_commit_sink(void *arg, size_t n)
{
	struct fs_live *L = arg;

	pthread_mutex_lock(&L->lock);
	ring_commit(L, n);
	pthread_mutex_unlock(&L->lock);
	live_progress(L);
	return live_stopping(L) ? -ECANCELED : 0;
}

/*
 * ring_read() - up to @n bytes at @off of a streamed render (lock held):
 * how many (0 at its end), or -EAGAIN when they left the ring already.
 */
static ssize_t ring_read(struct fs_live *L, void *buf, size_t n, uint64_t off)
{
	if (L->ring_end && off >= L->size)
		return 0;
	if (off < L->ring_lo)
		return -EAGAIN;
	if (n > L->readable - off)
		n = (size_t)(L->readable - off);
	memcpy(buf, L->ring + off % FS_RING_SIZE, n); /* mapped twice: contiguous */
	if (off + n > L->ring_at) {
		L->ring_at = off + n;
		if (L->ring_full && L->ring_at >= L->ring_need) /* room for the render's bytes */
			pthread_cond_broadcast(&L->cond);
	}
	return (ssize_t)n;
}

/* The render's sink: into the ring, the cache writer or the temporary file, then progress. */
static int live_write(void *arg, const void *p, size_t n)
{
	struct fs_live *L = arg;
	uint64_t readable;
	int r;

	if (live_stopping(L))
		return -ECANCELED;
	if (L->ring) { /* the render thread's own field: set and cleared by it */
		if ((r = ring_write(L, p, n)) < 0)
			return r;
		live_progress(L);
		return 0;
	}
	/* an entry the cache would refuse midway goes on uncached, still compressed */
	if (L->w && !L->private_w && xprofs_cache_writer_near_cap(L->w, n)) {
		xprofs_cache_writer_set_private(L->w);
		L->private_w = true;
		xprofs_info("cache: %s passes the cache's cap: going on uncached, compressed in "
			    "a temporary file",
			    L->label);
	}
	if (L->w) {
		r = xprofs_cache_writer_write(L->w, p, n);
		if (r < 0) {
			L->sink_err = r;
			return r;
		}
		readable = xprofs_cache_writer_readable(L->w);
	} else {
		r = xprofs_write_full(L->fd, p, n);
		if (r < 0)
			return r;
		readable = L->produced + n;
	}
	L->produced += n;
	if (readable >= L->published + FS_LIVE_PUBLISH)
		live_publish(L, readable);
	live_progress(L);
	return 0;
}

/* live_source() - readers start over on @w or @fd (the same bytes, from 0). */
static void live_source(struct fs_live *L, struct xprofs_cache_writer *w, int fd)
{
	L->produced = L->published = L->slept_mb = 0;
	__atomic_store_n(&L->done, 0, __ATOMIC_RELAXED);
	pthread_mutex_lock(&L->lock);
	L->w = w;
	L->fd = fd;
	L->readable = 0;
	L->quiesce = false;
	pthread_cond_broadcast(&L->cond);
	pthread_mutex_unlock(&L->lock);
}

/* live_quiesce() - wait until no reader is inside the writer; none enters after. */
static void live_quiesce(struct fs_live *L)
{
	pthread_mutex_lock(&L->lock);
	L->quiesce = true;
	while (L->preads)
		pthread_cond_wait(&L->cond, &L->lock);
	L->w = NULL;
	pthread_mutex_unlock(&L->lock);
}

/*
 * live_into_cache() - render into a new cache entry, commit and open it.
 * 0 with L->entry and L->size set; RENDER_NO_CACHE when the cache could not
 * store or reopen it; or the render's -errno (reason in @err).
 */
static int live_into_cache(struct fs_live *L, struct xprofs_buf *err)
{
	struct xprofs_cache *c = L->ctx->cache;
	struct xprofs_sink sink = {.write = live_write, .arg = L};
	struct xprofs_cache_reader *e = NULL;
	struct xprofs_cache_writer *w;
	int r;

	r = xprofs_cache_writer_new(c, L->key.data, L->key.len, &w);
	if (r < 0) {
		xprofs_warn("cache: cannot write an entry (%s): rendering to a temporary file",
			    strerror(-r));
		return RENDER_NO_CACHE;
	}
	L->sink_err = 0;
	live_source(L, w, -1);
	r = L->job.render(L->job.arg, &sink, err);
	if (L->private_w && r == 0 && (r = xprofs_cache_writer_seal(w)) < 0)
		L->sink_err = r;
	if (L->private_w && r == 0) { /* the writer serves the readers from here */
		pthread_mutex_lock(&L->lock);
		L->size = L->produced;
		pthread_mutex_unlock(&L->lock);
		return 0;
	}
	live_quiesce(L);
	if (r < 0) {
		L->private_w = false; /* aborted here */
		xprofs_cache_writer_abort(w);
		if (!L->sink_err)
			return r;
		xprofs_warn("cache: entry not stored (%s): rendering to a temporary file",
			    strerror(-L->sink_err));
		xprofs_buf_reset(err);
		return RENDER_NO_CACHE;
	}
	r = xprofs_cache_writer_commit(w);
	if (r == 0)
		r = xprofs_cache_reader_reopen(c, L->key.data, L->key.len, &e);
	if (r < 0) {
		xprofs_warn("cache: entry not stored or gone at once (%s): rendering to a "
			    "temporary file",
			    strerror(-r));
		return RENDER_NO_CACHE;
	}
	pthread_mutex_lock(&L->lock);
	L->entry = e;
	L->size = xprofs_cache_reader_size(e);
	pthread_mutex_unlock(&L->lock);
	return 0;
}

/*
 * live_streamed() - render into a ring of FS_RING_SIZE bytes that its readers
 * read as it fills, caching nothing (a whole trace of a big profile: the lz4
 * pass and the cache writes cost more than rendering it again). The render
 * waits for its leading reader. Once done, the thread stays while anyone
 * holds the render (a reader may still read the ring's last bytes).
 * RENDER_STREAMED: served, nothing kept (job.done() called); RENDER_DROPPED:
 * every reader left first; RENDER_RESTART: a reader asked for bytes that had
 * left the ring (a seek back, a second reader, one that fell behind) or a
 * full ring went unread: the caller renders again into the cache and the
 * readers wait for it to catch up (the same bytes); or the render's -errno.
 */
static int live_streamed(struct fs_live *L, struct xprofs_buf *err)
{
	struct xprofs_sink sink = {
		.write = live_write, .arg = L, .room = ring_room, .commit = ring_commit_sink};
	uint8_t *ring = xprofs_mirror_map(FS_RING_SIZE);
	bool restart;
	int r;

	if (!ring)
		return RENDER_RESTART;
	live_source(L, NULL, -1);
	pthread_mutex_lock(&L->lock);
	L->ring = ring;
	L->ring_lo = L->ring_at = L->woken = 0;
	L->dropped = false;
	pthread_mutex_unlock(&L->lock);
	r = L->job.render(L->job.arg, &sink, err);
	if (r == 0) {
		/* before readers see the end: the errors note and the size are in place */
		L->job.done(L->job.arg, 0, L->produced, err);
		pthread_mutex_lock(&L->lock);
		L->size = L->produced;
		L->ring_end = true;
		pthread_cond_broadcast(&L->cond);
		while (!L->restart && !live_stopping(L) &&
		       __atomic_load_n(&L->refs, __ATOMIC_ACQUIRE) > 1)
			live_timedwait(L, 100);
		pthread_mutex_unlock(&L->lock);
	}
	pthread_mutex_lock(&L->lock);
	restart = L->restart;
	if (restart) { /* readers wait for the next source (live_source()) */
		L->ring = NULL;
		L->ring_end = L->ring_full = L->restart = false;
		L->readable = 0;
		pthread_cond_broadcast(&L->cond);
	}
	pthread_mutex_unlock(&L->lock);
	if (restart) {
		xprofs_mirror_unmap(ring, FS_RING_SIZE);
		FS_CNT(L->ctx, stream_restarts);
		xprofs_buf_reset(err);
		return RENDER_RESTART;
	}
	if (r == 0)
		return RENDER_STREAMED;
	if (L->dropped && !live_stopping(L)) {
		xprofs_info("views: %s: every reader left: render stopped, nothing kept", L->label);
		xprofs_buf_reset(err);
		return RENDER_DROPPED;
	}
	return r;
}

/* live_into_file() - render into an unlinked temporary file; 0 with L->size set, or -errno. */
static int live_into_file(struct fs_live *L, struct xprofs_buf *err)
{
	struct xprofs_sink sink = {.write = live_write, .arg = L};
	struct stat sb;
	int fd = xprofs_tmpfile(L->ctx->tmp_dir, "xprofs-render"), r;

	if (fd < 0)
		return fd;
	live_source(L, NULL, fd); /* L owns fd from here */
	r = L->job.render(L->job.arg, &sink, err);
	if (r == 0 && fstat(fd, &sb) < 0)
		r = -errno;
	if (r == 0) {
		pthread_mutex_lock(&L->lock);
		L->size = (uint64_t)sb.st_size;
		pthread_mutex_unlock(&L->lock);
	}
	return r;
}

/* live_unlist() - free the render's slot in the table and its single-flight key. */
static void live_unlist(struct fs_live *L)
{
	struct fs_views *v = &L->ctx->views;

	pthread_mutex_lock(&v->lock);
	for (size_t i = 0; i < FS_INFLIGHT; i++)
		if (v->live[i] == L)
			v->live[i] = NULL;
	pthread_mutex_unlock(&v->lock);
	fs_render_end(L->ctx, L->hash);
}

/*
 * live_from_shared() - the view from the shared cache (shared.c) into the
 * local cache, opened as the finished entry: true, and nothing to render.
 */
static bool live_from_shared(struct fs_live *L, uint64_t *damaged_gen)
{
	struct xprofs_cache_reader *e = NULL;

	if (fs_shared_fetch(L->ctx, &L->key, damaged_gen) < 0 ||
	    xprofs_cache_reader_reopen(L->ctx->cache, L->key.data, L->key.len, &e) < 0)
		return false;
	pthread_mutex_lock(&L->lock);
	L->entry = e;
	L->size = xprofs_cache_reader_size(e);
	pthread_mutex_unlock(&L->lock);
	return true;
}

/*
 * The render thread: the shared cache (a shared view), else render into the
 * cache, else into a temporary file; then tell the readers. A view rendered
 * into the cache is offered to the shared cache after its readers were told,
 * so uploading never delays them.
 */
static void *live_main(void *arg)
{
	struct fs_live *L = arg;
	struct fs_views *v = &L->ctx->views;
	struct xprofs_buf err;
	bool shared = L->job.shared && L->ctx->shared && L->ctx->cache, fetched = false;
	uint64_t damaged_gen = 0;
	bool offer, gone;
	int r;

	if (v->start_delay_ms) /* the test-only knob: a render slower than any open's wait */
		xprofs_sleep_ms(v->start_delay_ms);
	xprofs_buf_init(&err, 4096);
	if (shared) {
		fetched = live_from_shared(L, &damaged_gen);
		if (!fetched)
			FS_CNT(L->ctx, renders);
	}
	if (fetched) {
		r = 0;
	} else {
		r = L->job.stream && !shared ? live_streamed(L, &err) : RENDER_RESTART;
		if (r == RENDER_RESTART)
			r = L->ctx->cache ? live_into_cache(L, &err) : RENDER_NO_CACHE;
	}
	/* only a render committed into the cache has an entry to share */
	offer = shared && !fetched && r == 0 && !L->private_w;
	if (r == RENDER_NO_CACHE)
		r = live_into_file(L, &err);
	gone = r == RENDER_STREAMED || r == RENDER_DROPPED;
	if (r == RENDER_STREAMED)
		FS_CNT(L->ctx, streamed);
	else if (r == RENDER_DROPPED)
		FS_CNT(L->ctx, stream_dropped);
	/* before readers see the end: the errors note and the size are in place */
	if (!gone)
		L->job.done(L->job.arg, r, r < 0 ? 0 : L->size, &err);
	L->job.free(L->job.arg);
	xprofs_buf_deinit(&err);
	pthread_mutex_lock(&L->lock);
	L->state = r < 0 ? LIVE_FAILED : LIVE_DONE;
	L->err = r < 0 ? r : 0;
	L->gone = gone;
	pthread_cond_broadcast(&L->cond);
	pthread_mutex_unlock(&L->lock);
	if (offer)
		fs_shared_offer(L->ctx, &L->key, damaged_gen);
	if (v->end_delay_ms) /* the test-only knob: a finished render still in the table */
		xprofs_sleep_ms(v->end_delay_ms);
	live_unlist(L);
	live_put(L);
	/* the last touch of the mount: fs_views_deinit() waits for this */
	pthread_mutex_lock(&v->lock);
	v->live_threads--;
	pthread_cond_broadcast(&v->cond);
	pthread_mutex_unlock(&v->lock);
	return NULL;
}

/*
 * live_find() - the render of @hash in progress or done, with a reference;
 * NULL when none. A failed one still in the table (its thread between telling
 * its readers and leaving the table) is not joined: its failure belongs to
 * the opens that waited for it, and a later open renders again once the slot
 * is free (fs_render_begin() waits for it).
 */
static struct fs_live *live_find(struct fs_views *v, uint64_t hash)
{
	struct fs_live *L = NULL;

	pthread_mutex_lock(&v->lock);
	for (size_t i = 0; i < FS_INFLIGHT && !L; i++) {
		struct fs_live *c = v->live[i];
		bool failed;

		if (!c || c->hash != hash)
			continue;
		pthread_mutex_lock(&c->lock); /* views.lock, then L->lock: the allowed order */
		failed = c->state == LIVE_FAILED || c->gone;
		pthread_mutex_unlock(&c->lock);
		if (!failed)
			L = c;
	}
	if (L)
		__atomic_add_fetch(&L->refs, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&v->lock);
	return L;
}

static struct fs_live *live_new(struct fs_ctx *ctx, const struct xprofs_buf *key, uint64_t hash,
				const char *label, const struct fs_live_job *job)
{
	struct fs_live *L = calloc(1, sizeof(*L));
	pthread_condattr_t ca;

	if (!L)
		return NULL;
	xprofs_buf_init(&L->key, XPROFS_CACHE_KEY_MAX);
	L->label = strdup(label);
	if (!L->label || xprofs_buf_add(&L->key, key->data, key->len) < 0) {
		xprofs_buf_deinit(&L->key);
		free(L->label);
		free(L);
		return NULL;
	}
	L->ctx = ctx;
	L->hash = hash;
	L->job = *job;
	L->fd = -1;
	L->refs = 2; /* the thread's and the caller's */
	L->started_ns = xprofs_now_ns();
	L->started_mono_ns = xprofs_mono_ns();
	pthread_mutex_init(&L->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&L->cond, &ca);
	pthread_condattr_destroy(&ca);
	return L;
}

int fs_live_start(struct fs_ctx *ctx, const struct xprofs_buf *key, uint64_t hash,
		  const char *label, const struct fs_live_job *job, struct fs_live **out)
{
	struct fs_views *v = &ctx->views;
	struct fs_live *L;
	pthread_attr_t pa;
	pthread_t th;
	bool started = false;

	*out = live_find(v, hash);
	if (*out) {
		job->free(job->arg);
		return 0;
	}
	if (!fs_render_begin(ctx, hash)) {
		job->free(job->arg); /* rendered meanwhile by another thread */
		return -EAGAIN;
	}
	L = live_new(ctx, key, hash, label, job);
	if (!L) {
		fs_render_end(ctx, hash);
		job->free(job->arg);
		return -ENOMEM;
	}
	if (!(job->shared && ctx->shared && ctx->cache))
		FS_CNT(ctx, renders); /* else counted once the shared cache did not have it */
	pthread_mutex_lock(&v->lock);
	for (size_t i = 0; i < FS_INFLIGHT; i++) {
		if (!v->live[i]) {
			v->live[i] = L; /* a free slot exists: fs_render_begin() took one */
			break;
		}
	}
	v->live_threads++;
	pthread_mutex_unlock(&v->lock);
	if (pthread_attr_init(&pa) == 0) {
		pthread_attr_setdetachstate(&pa, PTHREAD_CREATE_DETACHED);
		started = pthread_create(&th, &pa, live_main, L) == 0;
		pthread_attr_destroy(&pa);
	}
	if (!started)
		live_main(L); /* no thread to be had: render here, the open waits */
	*out = L;
	return 0;
}

int fs_live_wait(struct fs_live *L, int64_t max_ms, uint64_t max_bytes)
{
	struct timespec ts;
	int64_t until = max_ms < 0 ? INT64_MAX : xprofs_mono_ns() + max_ms * 1000000;
	int r;

	ts.tv_sec = (time_t)(until / 1000000000);
	ts.tv_nsec = (long)(until % 1000000000);
	pthread_mutex_lock(&L->lock);
	while (L->state == LIVE_RUNNING && L->readable < max_bytes && !L->ring_full &&
	       !L->ring_end) {
		int w;

		L->waiters++;
		if (max_ms < 0)
			w = pthread_cond_wait(&L->cond, &L->lock);
		else
			w = pthread_cond_timedwait(&L->cond, &L->lock, &ts);
		L->waiters--;
		if (w == ETIMEDOUT)
			break;
	}
	r = L->state == LIVE_FAILED ? L->err : L->state == LIVE_DONE;
	pthread_mutex_unlock(&L->lock);
	return r;
}

int fs_live_attach(struct fs_live *L, struct fs_fh *fh)
{
	struct xprofs_cache_reader *e = NULL;
	bool own = false;
	int r = 0;

	pthread_mutex_lock(&L->lock);
	if (L->state == LIVE_RUNNING || (L->state == LIVE_DONE && L->private_w)) {
		/* rendering, or done in a private writer only this render can read */
		bool done = L->state == LIVE_DONE;

		L->handles++;
		pthread_mutex_unlock(&L->lock);
		fh->kind = FS_FH_LIVE;
		fh->live = L; /* the reference moves into the handle */
		if (done)
			fh->size = L->size;
		return done;
	}
	if (L->state == LIVE_FAILED) {
		r = L->err;
	} else if (L->gone) {
		r = -EAGAIN; /* streamed, nothing kept: the open renders again */
	} else if (L->entry && !L->handles) {
		e = L->entry; /* no live handle needs it: this open takes it */
		L->entry = NULL;
	} else {
		own = true;
	}
	pthread_mutex_unlock(&L->lock);
	if (r == 0 && own && L->fd >= 0) {
		fh->fd = fcntl(L->fd, F_DUPFD_CLOEXEC, 0);
		r = fh->fd < 0 ? -errno : 0;
		fh->kind = FS_FH_FD;
	} else if (r == 0) {
		if (own)
			r = xprofs_cache_reader_reopen(L->ctx->cache, L->key.data, L->key.len, &e);
		fh->kind = FS_FH_CACHE;
		fh->ce = e;
	}
	fh->size = L->size;
	live_put(L);
	return r < 0 ? r : 1;
}

/*
 * live_done_pread() - read a finished render (its entry or temporary file,
 * immutable once done); -EIO for a failed one.
 */
static ssize_t live_done_pread(struct fs_live *L, void *buf, size_t n, uint64_t off)
{
	if (L->state == LIVE_FAILED || L->gone)
		return -EIO;
	if (off >= L->size)
		return 0;
	if (n > L->size - off)
		n = (size_t)(L->size - off);
	if (L->entry)
		return xprofs_cache_reader_pread(L->entry, buf, n, off);
	if (L->private_w) /* sealed: immutable, freed with the last reference */
		return xprofs_cache_writer_pread(L->w, buf, n, off);
	return xprofs_pread_full(L->fd, buf, n, off);
}

/*
 * A read of the cache writer can fail while the render goes on (the writer
 * met its cap and dropped blocks: the render starts over into a temporary
 * file); then the reader waits for the writer to be gone and reads again
 * from whatever serves the bytes next.
 */
ssize_t fs_live_pread(struct fs_live *L, void *buf, size_t n, uint64_t off)
{
	struct xprofs_cache_writer *w;
	ssize_t r;
	int fd;

	pthread_mutex_lock(&L->lock);
	for (;;) {
		while (L->state == LIVE_RUNNING && !L->ring_end &&
		       (L->quiesce || off >= L->readable)) {
			if (L->ring && off > L->ring_at) { /* a jump ahead: what lies before goes */
				L->ring_at = off;
				if (L->ring_full && L->ring_at >= L->ring_need)
					pthread_cond_broadcast(&L->cond);
			}
			L->waiters++;
			pthread_cond_wait(&L->cond, &L->lock);
			L->waiters--;
		}
		if (L->state != LIVE_RUNNING) {
			pthread_mutex_unlock(&L->lock);
			return live_done_pread(L, buf, n, off);
		}
		if (L->ring) {
			r = ring_read(L, buf, n, off);
			if (r != -EAGAIN)
				break;
			/* gone from the ring: the render starts over into the cache */
			if (!L->restart)
				xprofs_info("views: %s: a reader needs bytes the stream passed: "
					    "rendering it again into the cache",
					    L->label);
			L->restart = true;
			pthread_cond_broadcast(&L->cond);
			while (L->state == LIVE_RUNNING && L->ring)
				pthread_cond_wait(&L->cond, &L->lock);
			continue;
		}
		if (n > L->readable - off)
			n = (size_t)(L->readable - off);
		w = L->w;
		fd = L->fd;
		if (!w) {
			pthread_mutex_unlock(&L->lock);
			return xprofs_pread_full(fd, buf, n, off);
		}
		L->preads++;
		pthread_mutex_unlock(&L->lock);
		r = xprofs_cache_writer_pread(w, buf, n, off);
		pthread_mutex_lock(&L->lock);
		if (--L->preads == 0 && L->quiesce)
			pthread_cond_broadcast(&L->cond);
		if (r >= 0)
			break;
		while (L->state == LIVE_RUNNING && L->w == w)
			pthread_cond_wait(&L->cond, &L->lock);
	}
	pthread_mutex_unlock(&L->lock);
	return r;
}

bool fs_live_size(struct fs_live *L, uint64_t *size)
{
	bool done;

	pthread_mutex_lock(&L->lock);
	done = (L->state == LIVE_DONE && !L->gone) || L->ring_end;
	*size = done ? L->size : 0;
	pthread_mutex_unlock(&L->lock);
	return done;
}

void fs_live_close(struct fs_live *L)
{
	if (!L)
		return;
	pthread_mutex_lock(&L->lock);
	L->handles--;
	if (L->ring) /* a streamed render ends when nobody holds it */
		pthread_cond_broadcast(&L->cond);
	pthread_mutex_unlock(&L->lock);
	live_put(L);
}

/* iso_time() - @ns (CLOCK_REALTIME) as "YYYY-MM-DDTHH:MM:SS.mmmZ". */
static void iso_time(int64_t ns, char *buf, size_t n)
{
	time_t t = (time_t)(ns / 1000000000);
	struct tm tm;
	size_t k;

	gmtime_r(&t, &tm);
	k = strftime(buf, n, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + k, n - k, ".%03dZ", (int)(ns / 1000000 % 1000));
}

int fs_live_status_json(struct fs_ctx *ctx, struct xprofs_buf *out)
{
	struct fs_views *v = &ctx->views;
	int64_t now = xprofs_mono_ns();
	bool first = true;
	char when[32];
	int r = xprofs_buf_adds(out, "[");

	pthread_mutex_lock(&v->lock);
	for (size_t i = 0; r == 0 && i < FS_INFLIGHT; i++) {
		struct fs_live *L = v->live[i];
		int64_t el;

		if (!L)
			continue;
		el = now - L->started_mono_ns;
		iso_time(L->started_ns, when, sizeof(when));
		r = xprofs_buf_adds(out, first ? "{\"path\":" : ",{\"path\":");
		if (r == 0)
			r = xprofs_buf_add_json_str(out, L->label, strlen(L->label));
		if (r == 0)
			r = xprofs_buf_printf(
				out,
				",\"bytes_done\":%lu,\"started_at\":\"%s\",\"elapsed_s\":%.3f}",
				(unsigned long)__atomic_load_n(&L->done, __ATOMIC_RELAXED), when,
				(double)el / 1e9);
		first = false;
	}
	pthread_mutex_unlock(&v->lock);
	if (r == 0)
		r = xprofs_buf_adds(out, "]");
	return r;
}

void fs_live_stop_all(struct fs_views *v)
{
	pthread_mutex_lock(&v->lock);
	__atomic_store_n(&v->stopping, 1, __ATOMIC_RELAXED);
	while (v->live_threads)
		pthread_cond_wait(&v->cond, &v->lock);
	pthread_mutex_unlock(&v->lock);
}
