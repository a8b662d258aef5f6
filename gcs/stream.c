/*
 * gcs/stream.c - streaming sequential reads: one long-lived GET per
 * sequential reader, from its position to the end of the object, that fills
 * the block table as the bytes arrive.
 *
 * Why: a ranged GET per few MiB pays a request round trip and the server's
 * per-request cost every time; one GET of the rest of the object pays it
 * once, and reaches what a single plain download of the object reaches.
 *
 * Design: gcs_pread() (blocks.c) starts a stream once a reader is
 * established as sequential (where it used to queue prefetch jobs), at the
 * first block it does not have yet. The stream's thread runs one
 * gcs_http_do() of [start, size) of the pinned generation (generation=G,
 * the answer's generation and total checked like every ranged GET) with a
 * sink: each 1 MiB block is claimed in the block table just before its first
 * byte arrives (single-flight: readers of it wait for the stream like for any
 * other loading block) and published as soon as its last byte has arrived,
 * then handed to the disk cache: 16 blocks to an entry (GCS_DISK_GROUP,
 * written by this thread once readers have the block), or one by one
 * through the disk writer thread when the run starts or resumes mid-group.
 * A block already present (another reader's fetch) is skipped over, and
 * after STREAM_SKIP_MAX in a row the run ends (another stream is ahead); a
 * block in the disk cache is loaded from there and its bytes from the
 * network are dropped. Retries (resets,
 * truncations, stalls, 5xx) go through gcs_http_do()'s policy and resume
 * after the last byte taken, so a retry never re-downloads or rewrites what a
 * reader may already have.
 *
 * Flow control and memory: the stream stays at most STREAM_AHEAD blocks
 * ahead of its reader and claims a block only when the block budget
 * (block_mem_max) has room for it; the sink waits (on blk_cond) otherwise,
 * inside libcurl's write callback, which stops reading the socket, so the
 * server is held back by TCP. A stream whose reader has not moved on for
 * STREAM_IDLE_NS ends itself (the reader starts another one when it comes
 * back).
 *
 * Ending: a seek (a read that is not sequential), close and unmount cancel
 * the stream (an atomic flag that the sink, libcurl's progress callback and
 * the backoff sleep look at: within about a second). The block being filled
 * when a stream is cancelled is abandoned (removed from the table; its
 * waiters fetch it with a ranged GET); when the GET fails for good (retries
 * exhausted, ESTALE: another generation, 404/412 for the pinned one) that
 * block gets the error, exactly as a ranged GET of it would have, and the
 * blocks after it are fetched by ranged GETs again, which report the same
 * (ESTALE for a replaced object).
 *
 * Locks: a stream's shared fields are protected by the store's blk_lock and
 * its changes are broadcast on blk_cond, the condition readers of loading
 * blocks already wait on. No other lock is taken with blk_lock held; no
 * request runs with it held.
 *
 * Limits: one stream per open file, at most half the store's HTTP handles
 * streaming at once (each run holds one); at most STREAM_AHEAD MiB of
 * read-ahead per stream, within block_mem_max for the whole store. An
 * object replaced while a stream reads it is served in its pinned
 * generation for as long as the server keeps serving that request.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gcs-internal.h"

#define STREAM_AHEAD 32                        /* blocks filled past the reader's position */
#define STREAM_IDLE_NS (10LL * 1000000000LL)   /* a reader that long away: end the stream */
#define STREAM_WAIT_SLICE_NS (100LL * 1000000) /* re-check of the budget and the idle time */
#define STREAM_SKIP_MAX 4 /* blocks in a row someone else fetched: leave the rest to them */

struct gcs_stream {
	struct gcs_store *s;
	char *obj; /* owned */
	uint64_t gen, size;
	atomic_bool cancel;
	pthread_t th;
	bool joinable; /* a thread was started and not joined yet (the owner's, under f->lock) */
	/* protected by s->blk_lock */
	uint64_t start;       /* first block of this run */
	uint64_t end;         /* block after its last: the object's end or the next block present */
	uint64_t next;        /* the block being filled, or the next one to claim */
	uint64_t reader;      /* the reader's block: the run stays within STREAM_AHEAD of it */
	bool done;            /* the run's thread has finished with the store */
	bool waiting;         /* the run waits for its reader or for room (wake it on a move) */
	struct gcs_list link; /* in s->streams */
	/* the run's thread only */
	struct blk *cur;  /* the block being filled (the loader's reference), or NULL: skipping */
	bool in_block;    /* the bytes arriving belong to block @next */
	unsigned skipped; /* blocks in a row that were present already */
	struct xprofs_cache_writer *cw; /* the disk cache entry of the current block group */
	uint64_t cw_next;               /* the block @cw takes next */
};

static size_t block_len(const struct gcs_stream *st, uint64_t idx)
{
	uint64_t off = idx * GCS_BLOCK_SIZE;

	return st->size - off < GCS_BLOCK_SIZE ? (size_t)(st->size - off) : GCS_BLOCK_SIZE;
}

/* blk_lock held */
bool gcs_stream_running(const struct gcs_stream *st)
{
	return st && !st->done && !atomic_load(&st->cancel);
}

/* blk_lock held: whether the running stream @st will claim block @idx (not there yet). */
bool gcs_stream_will_fill(const struct gcs_stream *st, uint64_t idx)
{
	return gcs_stream_running(st) && idx >= st->next && idx < st->reader + STREAM_AHEAD;
}

static void deadline_in(struct timespec *ts, int64_t ns)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += (time_t)(ns / 1000000000LL);
	ts->tv_nsec += (long)(ns % 1000000000LL);
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/*
 * The first byte of block @idx is about to arrive: wait until the reader is
 * close enough and the budget has room, then claim it (or, when it is
 * present already, skip it; when the disk cache has it, load it from there
 * and skip its bytes). 0, or -ECANCELED (cancelled, or the reader went away),
 * -ENOMEM.
 */
static int stream_begin_block(struct gcs_stream *st, uint64_t idx)
{
	struct gcs_store *s = st->s;
	int64_t idle_since = xprofs_mono_ns();
	uint64_t reader;
	struct blk *b = NULL;
	int r;

	pthread_mutex_lock(&s->blk_lock);
	st->next = idx;
	reader = st->reader;
	for (;;) {
		struct timespec ts;

		if (atomic_load(&st->cancel)) {
			r = -ECANCELED;
			goto out;
		}
		if (idx < st->reader + STREAM_AHEAD && gcs_blk_room(s, GCS_BLOCK_SIZE))
			break;
		if (st->reader != reader) { /* the reader moves: not idle */
			reader = st->reader;
			idle_since = xprofs_mono_ns();
		}
		if (xprofs_mono_ns() - idle_since > s->stream_idle_ns) {
			xprofs_debug("gcs: stream of gs://%s/%s: reader idle, stream ended",
				     s->bucket, st->obj);
			r = -ECANCELED;
			goto out;
		}
		deadline_in(&ts, STREAM_WAIT_SLICE_NS);
		st->waiting = true;
		pthread_cond_timedwait(&s->blk_cond, &s->blk_lock, &ts);
		st->waiting = false;
	}
	r = gcs_blk_claim_one(s, st->obj, st->gen, idx, &b);
	if (s->stream_waiters) /* readers waiting for the stream to get there */
		pthread_cond_broadcast(&s->blk_cond);
	if (r == -EEXIST) {
		/*
		 * Another reader's (or its stream's): skip its bytes. Several in
		 * a row: another stream is ahead on this object; downloading
		 * what it fetches only to drop it is a waste.
		 */
		b = NULL;
		r = ++st->skipped > STREAM_SKIP_MAX ? -ECANCELED : 0;
	} else {
		st->skipped = 0;
	}
out:
	pthread_mutex_unlock(&s->blk_lock);
	st->cur = NULL;
	if (r < 0 || !b)
		return r;
	b->len = block_len(st, idx);
	if (gcs_blk_disk_get(s, b)) {
		atomic_fetch_add(&s->ctr.block_disk_hits, 1);
		(void)gcs_blk_publish(s, &b, 1); /* not fetched: not written back */
		return 0;
	}
	st->cur = b;
	return 0;
}

/* Commit the group entry so far (its blocks are complete and in order). */
static void group_end(struct gcs_stream *st)
{
	if (st->cw)
		(void)xprofs_cache_writer_commit(st->cw); /* the cache is best effort */
	st->cw = NULL;
}

/*
 * Whether block @idx goes into a group entry of the disk cache: the next
 * block of the open one, or the first of a group (a new entry). Other
 * blocks (a stream starting mid-group, after a skipped block) go to the
 * disk cache one by one, as fetched blocks always did.
 */
static bool group_want(struct gcs_stream *st, uint64_t idx)
{
	struct gcs_store *s = st->s;
	char key[GCS_NAME_MAX + 512];
	size_t klen;

	if (!s->o.cache)
		return false;
	if (st->cw && idx == st->cw_next)
		return true;
	group_end(st);
	if (idx % GCS_DISK_GROUP != 0)
		return false;
	klen = gcs_disk_group_key(key, sizeof(key), s, st->obj, st->gen, idx);
	if (!klen || xprofs_cache_writer_new(s->o.cache, key, klen, &st->cw) < 0) {
		st->cw = NULL;
		return false;
	}
	/* stored as they are: docs/gcs.md "Disk cache" */
	if (xprofs_cache_writer_set_acceleration(st->cw, XPROFS_CACHE_ACCEL_STORE) < 0) {
		xprofs_cache_writer_abort(st->cw);
		st->cw = NULL;
		return false;
	}
	st->cw_next = idx;
	return true;
}

/*
 * The block being filled is complete: publish it, then hand it to the disk
 * cache (its group entry, written here once readers have it, or the disk
 * writer thread's queue).
 */
static void stream_end_block(struct gcs_stream *st)
{
	struct gcs_store *s = st->s;
	struct blk *b = st->cur, *v[1];
	uint64_t nblocks = (st->size + GCS_BLOCK_SIZE - 1) / GCS_BLOCK_SIZE;
	bool grouped;

	st->in_block = false;
	st->cur = NULL;
	if (!b) {
		group_end(st); /* a skipped block ends the group's run */
		return;
	}
	grouped = group_want(st, b->idx);
	atomic_fetch_add(&s->ctr.block_misses, 1);
	if (grouped) {
		pthread_mutex_lock(&s->blk_lock);
		b->refs++; /* ours: a ready block's data no longer changes */
		pthread_mutex_unlock(&s->blk_lock);
	} else {
		b->fetched = true; /* for the disk writer thread */
	}
	v[0] = b;
	(void)gcs_blk_publish(s, v, 1); /* consumes the loader's reference */
	if (!grouped)
		return;
	if (xprofs_cache_writer_write(st->cw, b->data, b->len) < 0) {
		xprofs_cache_writer_abort(st->cw);
		st->cw = NULL;
	} else if (++st->cw_next % GCS_DISK_GROUP == 0 || st->cw_next == nblocks) {
		group_end(st);
	}
	gcs_blk_release(s, b, false);
}

/* gcs_req's sink: @n bytes at @rel from the run's first byte, in order, each once. */
static int stream_sink(void *arg, uint64_t rel, const uint8_t *p, size_t n)
{
	struct gcs_stream *st = arg;
	uint64_t first = st->start * GCS_BLOCK_SIZE;

	while (n > 0) {
		uint64_t pos = first + rel, idx = pos / GCS_BLOCK_SIZE;
		size_t bo = (size_t)(pos % GCS_BLOCK_SIZE), blen = block_len(st, idx), k;
		int r;

		if (!st->in_block || idx != st->next) {
			if (st->in_block) /* cannot happen: blocks end where their last byte lands */
				return -EPROTO;
			if ((r = stream_begin_block(st, idx)) < 0)
				return r;
			st->in_block = true;
		}
		k = blen - bo < n ? blen - bo : n;
		if (st->cur)
			memcpy(st->cur->data + bo, p, k);
		p += k;
		n -= k;
		rel += k;
		if (bo + k == blen)
			stream_end_block(st);
	}
	return 0;
}

/*
 * How long a stream waits for a reader that stopped reading: STREAM_IDLE_NS,
 * or (tests only) XPROFS_TEST_STREAM_IDLE_MS, for tests whose reader pauses
 * on purpose (an upload between two reads) on a machine loaded enough to
 * make that pause longer than STREAM_IDLE_NS.
 */
int64_t gcs_stream_idle_ns(void)
{
	const char *v = getenv("XPROFS_TEST_STREAM_IDLE_MS");
	char *end;
	long long ms;

	if (!v || !*v)
		return STREAM_IDLE_NS;
	errno = 0;
	ms = strtoll(v, &end, 10);
	if (errno || *end || ms < 1 || ms > 3600LL * 1000)
		return STREAM_IDLE_NS;
	return ms * 1000000LL;
}

/* The run: one GET of [start block, end of object) of the pinned generation. */
static void *stream_main(void *arg)
{
	struct gcs_stream *st = arg;
	struct gcs_store *s = st->s;
	uint64_t first = st->start * GCS_BLOCK_SIZE;
	struct gcs_req rq = {.kind = GCS_REQ_GET, .method = "GET", .idempotent = true};
	struct xprofs_buf url;
	int r;

	xprofs_buf_init(&url, GCS_URL_MAX);
	/*
	 * Claim the first block before asking: a request that fails for good
	 * puts its error there (a reader gets it after one retry deadline, not
	 * after the stream's and then a ranged GET's).
	 */
	if ((r = stream_begin_block(st, st->start)) < 0)
		goto out;
	st->in_block = true;
	if ((r = gcs_url_object(s, &url, "storage/v1", st->obj)) < 0 ||
	    (r = gcs_url_param(&url, "alt", "media")) < 0 ||
	    (r = gcs_url_param_u64(&url, "generation", st->gen)) < 0)
		goto out;
	rq.url = url.data;
	rq.headers[0] = "Accept-Encoding: gzip"; /* the stored bytes, as ranged_get() */
	rq.sink = stream_sink;
	rq.sink_arg = st;
	rq.cancel = &st->cancel;
	rq.range_first = first;
	rq.dst_len = (size_t)((st->end * GCS_BLOCK_SIZE < st->size ? st->end * GCS_BLOCK_SIZE
								   : st->size) -
			      first);
	rq.expect_generation = st->gen;
	rq.expect_size = st->size;
	r = gcs_http_do(&s->http, &rq);
	if (r == 0 && (rq.status == 404 || rq.status == 412 || rq.status == 416))
		r = -ESTALE; /* the pinned generation is gone, or the object shrank */
	else if (r == 0 && rq.status != 200 && rq.status != 206)
		r = gcs_status_errno(&rq, st->obj);
	else if (r == 0 && rq.dst_got != rq.dst_len)
		r = -EIO;
	if (r == -ESTALE) {
		atomic_fetch_add(&s->ctr.stale, 1);
		xprofs_info("gcs: gs://%s/%s changed (generation %llu gone): ESTALE", s->bucket,
			    st->obj, (unsigned long long)st->gen);
	}
out:
	if (r == -ECANCELED)
		atomic_fetch_add(&s->ctr.streams_ended, 1);
	if (r < 0 && r != -ECANCELED)
		r = gcs_data_errno(r, s->bucket, st->obj);
	if (st->cur) {
		struct blk *b = st->cur;

		st->cur = NULL;
		if (r == -ECANCELED || r == 0) {
			gcs_blk_abandon(s, b);
		} else {
			b->err = r;
			(void)gcs_blk_publish(s, &b, 1);
		}
	}
	group_end(st); /* the blocks it has are whole */
	xprofs_buf_deinit(&url);
	pthread_mutex_lock(&s->blk_lock);
	st->done = true;
	s->streams_running--;
	pthread_cond_broadcast(&s->blk_cond);
	pthread_mutex_unlock(&s->blk_lock);
	return NULL;
}

int gcs_stream_start(struct gcs_store *s, struct gcs_file *f, uint64_t idx, uint64_t end)
{
	struct gcs_stream *st = f->stream;
	bool running;

	if (!st) {
		st = calloc(1, sizeof(*st));
		if (!st)
			return -ENOMEM;
		st->obj = strdup(f->obj);
		if (!st->obj) {
			free(st);
			return -ENOMEM;
		}
		st->s = s;
		st->gen = f->st.generation;
		st->size = f->st.size;
		st->done = true;
		pthread_mutex_lock(&s->blk_lock);
		gcs_list_push(&s->streams, &st->link);
		pthread_mutex_unlock(&s->blk_lock);
		f->stream = st;
	}
	pthread_mutex_lock(&s->blk_lock);
	running = !st->done;
	pthread_mutex_unlock(&s->blk_lock);
	if (running)
		return -EBUSY; /* the last run is still ending (a cancelled request) */
	if (st->joinable) {
		pthread_join(st->th, NULL); /* done: it is returning */
		st->joinable = false;
	}
	pthread_mutex_lock(&s->blk_lock);
	if (s->streams_stop) {
		pthread_mutex_unlock(&s->blk_lock);
		return -ESHUTDOWN;
	}
	if (s->streams_running >= (s->http.max_handles > 1 ? s->http.max_handles / 2 : 1)) {
		pthread_mutex_unlock(&s->blk_lock);
		return -EBUSY;
	}
	s->streams_running++;
	atomic_store(&st->cancel, false);
	st->start = st->next = idx;
	st->end = end;
	if (st->reader < idx)
		st->reader = idx;
	st->done = false;
	st->in_block = false;
	st->cur = NULL;
	st->skipped = 0;
	pthread_mutex_unlock(&s->blk_lock);
	if (pthread_create(&st->th, NULL, stream_main, st) != 0) {
		pthread_mutex_lock(&s->blk_lock);
		st->done = true;
		s->streams_running--;
		pthread_cond_broadcast(&s->blk_cond);
		pthread_mutex_unlock(&s->blk_lock);
		return -EAGAIN;
	}
	st->joinable = true;
	atomic_fetch_add(&s->ctr.streams, 1);
	return 0;
}

void gcs_stream_cancel(struct gcs_stream *st)
{
	if (!st)
		return;
	pthread_mutex_lock(&st->s->blk_lock);
	atomic_store(&st->cancel, true);
	pthread_cond_broadcast(&st->s->blk_cond);
	pthread_mutex_unlock(&st->s->blk_lock);
}

void gcs_stream_reader_at(struct gcs_stream *st, uint64_t idx)
{
	if (!st)
		return;
	pthread_mutex_lock(&st->s->blk_lock);
	if (idx > st->reader || !gcs_stream_running(st)) {
		st->reader = idx;
		if (st->waiting) /* every broadcast wakes every reader waiting for a block */
			pthread_cond_broadcast(&st->s->blk_cond);
	}
	pthread_mutex_unlock(&st->s->blk_lock);
}

void gcs_stream_free(struct gcs_stream *st)
{
	struct gcs_store *s;

	if (!st)
		return;
	s = st->s;
	gcs_stream_cancel(st);
	if (st->joinable)
		pthread_join(st->th, NULL);
	pthread_mutex_lock(&s->blk_lock);
	gcs_list_del(&s->streams, &st->link);
	pthread_mutex_unlock(&s->blk_lock);
	free(st->obj);
	free(st);
}

void gcs_streams_stop(struct gcs_store *s)
{
	struct gcs_list *n;
	bool running;

	pthread_mutex_lock(&s->blk_lock);
	s->streams_stop = true;
	for (;;) {
		running = false;
		for (n = s->streams; n; n = n->next) {
			struct gcs_stream *st = gcs_list_entry(n, struct gcs_stream, link);

			atomic_store(&st->cancel, true);
			running |= !st->done;
		}
		if (!running)
			break;
		pthread_cond_broadcast(&s->blk_cond);
		pthread_cond_wait(&s->blk_cond, &s->blk_lock);
	}
	pthread_mutex_unlock(&s->blk_lock);
}
