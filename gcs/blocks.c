/*
 * gcs/blocks.c - reads: open() pins the generation and size from the tree,
 * and data moves in GCS_BLOCK_SIZE (1 MiB) blocks through the store's block
 * table (block-table.c: single-flight, LRU, memory budget, disk cache).
 *
 * Design: the first reader of a missing block claims it (with read-ahead)
 * and loads it, from the disk cache or with ranged GETs; concurrent readers
 * wait for that load. A reader that keeps reading sequentially doubles its
 * read-ahead window from 1 to 16 blocks, and a prefetch thread keeps 16-32
 * blocks ahead of it; fetches of 4 blocks or more are split into parallel
 * ranged GETs that write straight into the block buffers and publish each
 * block as soon as it has arrived (a reader consumes a GET while it
 * streams). Once a reader is sequential it gets a stream instead
 * (gcs/stream.c: one GET of the rest of the object that fills the block
 * table as it arrives); the window and prefetch jobs are what random
 * readers, re-reads from the disk cache and short rests use. Blocks a
 * sequential reader has finished are evicted first.
 *
 * How a gs:// block is fetched: gcs_pread() -> blk_get() -> blk_claim() +
 * blk_fill() -> blk_load() (disk cache first) -> gcs_fetch_range() ->
 * ranged_get() -> gcs_http_do().
 *
 * Limits: when loading or referenced blocks fill block_mem_max, a miss
 * fetches a single block and the prefetcher pauses. A failed block answers
 * its error for a while before it is fetched again (block-table.c).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gcs-internal.h"

#define WINDOW_MAX 16
#define PREFETCH_BLOCKS 16 /* one prefetch job: 16 MiB as PARALLEL_MAX streaming GETs */
#define BLK_RUN_MAX 32     /* blocks of one fetch: >= WINDOW_MAX, PREFETCH_BLOCKS */
#define PREFETCH_AHEAD 32  /* blocks: a job starts when a missing block is this close */
#define PARALLEL_MIN 4     /* blocks: split a fetch this large into parallel GETs */
#define PARALLEL_MAX 4     /* ranged GETs at once for one fetch */
#define STREAM_MIN 8       /* blocks: a shorter rest is read with ranged GETs, not a stream */
#define STREAM_SCAN 4096   /* blocks looked at for where a stream may stop (then: a new one) */

/*
 * One ranged GET of a fetch: [off, off+len) of the pinned version, into @dst
 * or, in block mode, straight into the loading blocks @blocks, each of which
 * is published (made readable) as soon as its last byte has arrived, so a
 * sequential reader consumes a long GET while it streams.
 */
struct part {
	struct gcs_store *s;
	const char *obj;
	uint64_t gen, size, off;
	size_t len;
	uint8_t *dst;
	struct blk **blocks; /* block mode: consecutive loading blocks covering the range */
	size_t nblocks, published;
	int r;
	pthread_t th;
	bool started;
};

static void part_progress(void *arg, size_t got)
{
	struct part *p = arg;
	size_t done = got >= p->len ? p->nblocks : got / GCS_BLOCK_SIZE, i;

	if (done <= p->published)
		return;
	pthread_mutex_lock(&p->s->blk_lock);
	for (i = p->published; i < done; i++) {
		p->blocks[i]->published = true;
		p->blocks[i]->state = GCS_BLK_READY;
		/* counted before anyone can read it, like an unstreamed block */
		atomic_fetch_add(&p->s->ctr.block_misses, 1);
	}
	pthread_cond_broadcast(&p->s->blk_cond);
	pthread_mutex_unlock(&p->s->blk_lock);
	p->published = done;
}

static int ranged_get(struct part *p)
{
	struct gcs_store *s = p->s;
	const char *obj = p->obj;
	uint64_t gen = p->gen, size = p->size, off = p->off;
	size_t len = p->len, i;
	uint8_t *dst = p->dst, *ptrs[BLK_RUN_MAX];
	struct gcs_req rq = {.kind = GCS_REQ_GET, .method = "GET", .idempotent = true};
	struct xprofs_buf url;
	int r;

	if (p->blocks) {
		if (p->nblocks == 0 || p->nblocks > BLK_RUN_MAX)
			return -EINVAL;
		for (i = 0; i < p->nblocks; i++)
			ptrs[i] = p->blocks[i]->data;
		dst = ptrs[0];
		rq.dst_blocks = ptrs;
		rq.dst_block_size = GCS_BLOCK_SIZE;
		rq.on_progress = part_progress;
		rq.progress_arg = p;
	}

	xprofs_buf_init(&url, GCS_URL_MAX);
	if ((r = gcs_url_object(s, &url, "storage/v1", obj)) < 0 ||
	    (r = gcs_url_param(&url, "alt", "media")) < 0 ||
	    (r = gcs_url_param_u64(&url, "generation", gen)) < 0)
		goto out;
	rq.url = url.data;
	rq.headers[0] =
		"Accept-Encoding: gzip"; /* the stored bytes; transcoding would ignore Range */
	rq.dst = dst;
	rq.dst_len = len;
	rq.range_first = off;
	rq.expect_generation = gen;
	rq.expect_size = size;
	r = gcs_http_do(&s->http, &rq);
	if (r == -ESTALE)
		goto stale;
	if (r < 0)
		goto out;
	if (rq.status == 404 || rq.status == 412 || rq.status == 416)
		goto stale; /* the pinned generation is gone, or the object shrank */
	if (rq.status != 200 && rq.status != 206) {
		r = gcs_status_errno(&rq, obj);
		goto out;
	}
	if (rq.dst_got != len) {
		r = -EIO;
		goto out;
	}
	r = 0;
	goto out;
stale:
	atomic_fetch_add(&s->ctr.stale, 1);
	xprofs_info("gcs: gs://%s/%s changed (generation %llu gone): ESTALE", s->bucket, obj,
		    (unsigned long long)gen);
	r = -ESTALE;
out:
	xprofs_buf_deinit(&url);
	return gcs_data_errno(r, s->bucket, obj);
}

static void *part_main(void *arg)
{
	struct part *p = arg;

	p->r = ranged_get(p);
	return NULL;
}

/*
 * [@off, @off+@len) into @dst, or (block mode, @dst NULL) into the loading
 * blocks @blocks covering it, split into parallel ranged GETs when large.
 */
int gcs_fetch_range(struct gcs_store *s, const char *obj, uint64_t gen, uint64_t size, uint64_t off,
		    size_t len, uint8_t *dst, struct blk **blocks)
{
	struct part parts[PARALLEL_MAX];
	size_t nparts = (len + GCS_BLOCK_SIZE - 1) / GCS_BLOCK_SIZE >= PARALLEL_MIN ? PARALLEL_MAX
										    : 1,
	       per, i;
	int r = 0;

	if (nparts > s->http.max_handles)
		nparts = s->http.max_handles;
	if (nparts < 1)
		nparts = 1;
	per = (len / nparts + GCS_BLOCK_SIZE - 1) / GCS_BLOCK_SIZE * GCS_BLOCK_SIZE;
	memset(parts, 0, sizeof(parts));
	for (i = 0; i < nparts; i++) {
		struct part *p = &parts[i];
		size_t at = i * per;

		if (at >= len)
			break;
		*p = (struct part){.s = s,
				   .obj = obj,
				   .gen = gen,
				   .size = size,
				   .off = off + at,
				   .len = len - at < per ? len - at : per};
		if (blocks) {
			p->blocks = blocks + at / GCS_BLOCK_SIZE;
			p->nblocks = (p->len + GCS_BLOCK_SIZE - 1) / GCS_BLOCK_SIZE;
		} else {
			p->dst = dst + at;
		}
		if (i > 0 && pthread_create(&p->th, NULL, part_main, p) == 0)
			p->started = true;
		else
			part_main(p);
	}
	for (i = 0; i < nparts; i++) {
		if (parts[i].started)
			pthread_join(parts[i].th, NULL);
		if (parts[i].r < 0 && (r == 0 || parts[i].r == -ESTALE))
			r = parts[i].r;
	}
	return r;
}

/* Fill the loading blocks @v[0..@n) (consecutive indices) from the disk cache or GCS. */
static void blk_load(struct gcs_store *s, struct gcs_file *f, struct blk **v, size_t n)
{
	size_t i = 0, j, k;

	while (i < n) {
		uint64_t off = v[i]->idx * GCS_BLOCK_SIZE;
		size_t len = f->st.size - off < GCS_BLOCK_SIZE ? (size_t)(f->st.size - off)
							       : GCS_BLOCK_SIZE;

		v[i]->len = len;
		if (gcs_blk_disk_get(s, v[i])) {
			atomic_fetch_add(&s->ctr.block_disk_hits, 1);
			i++;
			continue;
		}
		/* a run of blocks missing from the disk cache: one fetch */
		for (j = i + 1; j < n; j++) {
			uint64_t o2 = v[j]->idx * GCS_BLOCK_SIZE;

			v[j]->len = f->st.size - o2 < GCS_BLOCK_SIZE ? (size_t)(f->st.size - o2)
								     : GCS_BLOCK_SIZE;
			if (gcs_blk_disk_get(s, v[j]))
				break;
		}
		/* blocks i..j-1 go over the network, straight into their buffers; j (if < n) came
		 * from disk */
		{
			size_t total = 0;
			int r;

			for (k = i; k < j; k++)
				total += v[k]->len;
			r = gcs_fetch_range(s, f->obj, f->st.generation, f->st.size, off, total,
					    NULL, v + i);
			for (k = i; k < j; k++) {
				/* a block published while streaming is good even if a later part
				 * failed */
				if (r < 0 && !v[k]->published) {
					v[k]->err = r;
					continue;
				}
				if (!v[k]->published)
					atomic_fetch_add(&s->ctr.block_misses, 1);
				v[k]->fetched = true;
			}
		}
		if (j < n)
			atomic_fetch_add(&s->ctr.block_disk_hits, 1);
		i = j + 1;
	}
}

/*
 * blk_lock held: create loading entries for the missing blocks @idx.. (up to
 * @window, stopping at the first one present or at the end), each holding
 * the loader's reference. Returns how many went into @v.
 */
static size_t blk_claim(struct gcs_store *s, struct gcs_file *f, uint64_t idx, unsigned window,
			struct blk **v)
{
	uint64_t nblocks = (f->st.size + GCS_BLOCK_SIZE - 1) / GCS_BLOCK_SIZE;
	size_t n = 0, i;

	for (i = 0; i < window && idx + i < nblocks; i++) {
		if (gcs_blk_claim_one(s, f->obj, f->st.generation, idx + i, &v[n]) < 0)
			break;
		n++;
	}
	return n;
}

/*
 * Load claimed blocks (no lock held), then publish them and wake the waiters.
 * Drops the loader's references (@v is not to be used after). Returns how
 * many loaded without error.
 */
static size_t blk_fill(struct gcs_store *s, struct gcs_file *f, struct blk **v, size_t n)
{
	blk_load(s, f, v, n);
	return gcs_blk_publish(s, v, n);
}

/*
 * The ready block @idx of @f, fetched (with read-ahead @window) if needed.
 * With a live stream @st (or NULL) that will reach @idx, wait for it instead.
 */
static int blk_get(struct gcs_store *s, struct gcs_file *f, struct gcs_stream *st, uint64_t idx,
		   unsigned window, struct blk **out)
{
	struct blk *v[WINDOW_MAX] = {0}, *b;
	size_t n;
	int r;

	pthread_mutex_lock(&s->blk_lock);
again:
	b = gcs_blk_find(s, f->obj, f->st.generation, idx);
	if (!b && gcs_stream_will_fill(st, idx)) {
		atomic_fetch_add(&s->ctr.block_waits, 1);
		s->stream_waiters++;
		while (!(b = gcs_blk_find(s, f->obj, f->st.generation, idx)) &&
		       gcs_stream_will_fill(st, idx))
			pthread_cond_wait(&s->blk_cond, &s->blk_lock);
		s->stream_waiters--;
	}
	if (b && gcs_blk_retry_due(s, b))
		b = NULL;
	if (b) {
		b->refs++;
		if (b->state == GCS_BLK_LOADING) {
			atomic_fetch_add(&s->ctr.block_waits, 1);
			while (b->state == GCS_BLK_LOADING)
				pthread_cond_wait(&s->blk_cond, &s->blk_lock);
			if (b->abandoned) {
				/* a stream dropped it half filled: fetch it another way */
				gcs_blk_unref(s, b);
				goto again;
			}
		} else {
			atomic_fetch_add(&s->ctr.block_hits, 1);
			gcs_blk_touch(s, b);
		}
		goto done;
	}
	if (gcs_stream_running(st))
		window = 1; /* a block the stream passed (evicted) or skipped: no read-ahead */
	if (!gcs_blk_room(s, (uint64_t)window * GCS_BLOCK_SIZE))
		window = 1; /* in-flight blocks fill the budget: no read-ahead */
	n = blk_claim(s, f, idx, window, v);
	if (n == 0) {
		pthread_mutex_unlock(&s->blk_lock);
		return -ENOMEM;
	}
	b = v[0];
	b->refs++; /* the caller's */
	pthread_mutex_unlock(&s->blk_lock);
	blk_fill(s, f, v, n);
	pthread_mutex_lock(&s->blk_lock);
done:
	r = b->err;
	if (r < 0) {
		gcs_blk_unref(s, b);
		pthread_mutex_unlock(&s->blk_lock);
		return r;
	}
	pthread_mutex_unlock(&s->blk_lock);
	*out = b;
	return 0;
}

/*
 * Asynchronous read-ahead for sequential readers: one thread per store
 * fetches the next PREFETCH_BLOCKS blocks while the reader consumes the ones before,
 * so a stream does not stall on every window. Jobs carry their own copy of
 * the file's identity (the reader may close meanwhile); the queue is short
 * and a full queue drops the job (the reader then fetches synchronously).
 */
struct gcs_prefetch {
	struct gcs_file f; /* f.obj owned */
	uint64_t idx;
	struct gcs_prefetch *next;
};

void *gcs_pf_main(void *arg)
{
	struct gcs_store *s = arg;

	pthread_mutex_lock(&s->bg_lock);
	for (;;) {
		struct gcs_prefetch *j = s->pf_head;
		struct blk *v[PREFETCH_BLOCKS];
		size_t n;

		if (s->bg_stop)
			break;
		if (!j) {
			pthread_cond_wait(&s->pf_cond, &s->bg_lock);
			continue;
		}
		s->pf_head = j->next;
		s->pf_len--;
		pthread_mutex_unlock(&s->bg_lock);

		pthread_mutex_lock(&s->blk_lock);
		n = 0;
		if (gcs_blk_room(s, (uint64_t)PREFETCH_BLOCKS * GCS_BLOCK_SIZE))
			n = blk_claim(s, &j->f, j->idx, PREFETCH_BLOCKS, v);
		pthread_mutex_unlock(&s->blk_lock);
		if (n)
			atomic_fetch_add(&s->ctr.prefetched, blk_fill(s, &j->f, v, n));
		free(j->f.obj);
		free(j);
		pthread_mutex_lock(&s->bg_lock);
	}
	pthread_mutex_unlock(&s->bg_lock);
	return NULL;
}

/*
 * After a sequential read ending at @end: queue the first missing
 * PREFETCH_BLOCKS blocks within PREFETCH_AHEAD, so one job streams while
 * the reader consumes the one before.
 */
static void prefetch_after(struct gcs_store *s, struct gcs_file *f, uint64_t end)
{
	uint64_t nblocks = (f->st.size + GCS_BLOCK_SIZE - 1) / GCS_BLOCK_SIZE, idx,
		 first = UINT64_MAX;
	struct gcs_prefetch *j;

	if (!s->pf_started)
		return;
	pthread_mutex_lock(&s->blk_lock);
	for (idx = end / GCS_BLOCK_SIZE + 1;
	     idx < nblocks && idx <= end / GCS_BLOCK_SIZE + PREFETCH_AHEAD; idx++) {
		if (!gcs_blk_find(s, f->obj, f->st.generation, idx)) {
			first = idx;
			break;
		}
	}
	pthread_mutex_unlock(&s->blk_lock);
	if (first == UINT64_MAX)
		return;
	j = calloc(1, sizeof(*j));
	if (!j || !(j->f.obj = strdup(f->obj))) {
		free(j);
		return;
	}
	j->f.st = f->st;
	j->idx = first;
	pthread_mutex_lock(&s->bg_lock);
	if (s->pf_len >= 8) {
		pthread_mutex_unlock(&s->bg_lock);
		free(j->f.obj);
		free(j);
		return;
	}
	j->next = s->pf_head;
	s->pf_head = j;
	s->pf_len++;
	pthread_cond_signal(&s->pf_cond);
	pthread_mutex_unlock(&s->bg_lock);
}

/*
 * After a sequential read ending at @end: make sure a stream (stream.c)
 * fills what comes next, starting one at the first missing block within
 * PREFETCH_AHEAD. Returns false when the old way fits better (prefetch
 * jobs, which read the disk cache): the rest is short, the next block is in
 * the disk cache (a re-read after a remount), or the last stream is still
 * ending (a seek just cancelled it).
 */
static bool stream_after(struct gcs_store *s, struct gcs_file *f, uint64_t end)
{
	uint64_t nblocks = (f->st.size + GCS_BLOCK_SIZE - 1) / GCS_BLOCK_SIZE, idx,
		 first = UINT64_MAX, stop = nblocks;
	bool running, ok = true;

	pthread_mutex_lock(&f->lock);
	pthread_mutex_lock(&s->blk_lock);
	running = gcs_stream_running(f->stream);
	for (idx = end / GCS_BLOCK_SIZE + 1;
	     !running && idx < nblocks && idx <= end / GCS_BLOCK_SIZE + PREFETCH_AHEAD; idx++) {
		if (!gcs_blk_find(s, f->obj, f->st.generation, idx)) {
			first = idx;
			break;
		}
	}
	/*
	 * The run ends where blocks are present again (an earlier stream's):
	 * a GET of them would download bytes only to drop them.
	 */
	for (idx = first + 1; first != UINT64_MAX && idx < nblocks && idx < first + STREAM_SCAN;
	     idx++) {
		if (gcs_blk_find(s, f->obj, f->st.generation, idx)) {
			stop = idx;
			break;
		}
	}
	pthread_mutex_unlock(&s->blk_lock);
	if (!running && first != UINT64_MAX) {
		if (stop - first < STREAM_MIN ||
		    gcs_blk_on_disk(s, f->obj, f->st.generation, first))
			ok = false;
		else
			ok = gcs_stream_start(s, f, first, stop) == 0;
	}
	pthread_mutex_unlock(&f->lock);
	return ok;
}

int gcs_open(struct xprofs_store *base, const char *path, struct xprofs_store_reader **out)
{
	struct gcs_store *s = (struct gcs_store *)base;
	struct xprofs_store_stat st;
	struct gcs_file *f;
	int r;

	r = gcs_ns_stat(s, path, &st);
	if (r < 0)
		return r;
	if (st.type != XPROFS_STORE_FILE)
		return -EISDIR;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->obj = gcs_object_name(s, path, "");
	if (!f->obj) {
		free(f);
		return -ENAMETOOLONG;
	}
	f->base.store = base;
	f->s = s;
	f->st = st;
	f->window = 1;
	pthread_mutex_init(&f->lock, NULL);
	*out = &f->base;
	return 0;
}

ssize_t gcs_pread(struct xprofs_store_reader *base, void *buf, size_t n, uint64_t off)
{
	struct gcs_file *f = (struct gcs_file *)base;
	struct gcs_stream *st; /* lives until close */
	size_t got = 0;
	unsigned window, seq_window;

	if (off >= f->st.size || n == 0)
		return 0;
	if (n > f->st.size - off)
		n = (size_t)(f->st.size - off);
	if (n > SSIZE_MAX)
		n = SSIZE_MAX;
	pthread_mutex_lock(&f->lock);
	/*
	 * sequential: grow the read-ahead window; a seek starts over at one
	 * block. The kernel's read-ahead sends several reads at once, which
	 * reach us a little out of order: near misses count as sequential.
	 */
	if (off + GCS_BLOCK_SIZE >= f->next_off &&
	    off <= f->next_off + 2 * (uint64_t)GCS_BLOCK_SIZE)
		f->window = f->window * 2 > WINDOW_MAX ? WINDOW_MAX : f->window * 2;
	else
		f->window = 1;
	window = seq_window = f->window;
	{
		/* a large read wants all its blocks at once (in parallel ranges) */
		uint64_t span = (off + n - 1) / GCS_BLOCK_SIZE - off / GCS_BLOCK_SIZE + 1;

		if (span > window)
			window = span > WINDOW_MAX ? WINDOW_MAX : (unsigned)span;
	}
	if (off + n > f->next_off || f->window == 1)
		f->next_off = off + n;
	if (f->window == 1)
		gcs_stream_cancel(f->stream); /* a seek: ranged GETs until it is sequential again */
	st = f->stream;
	gcs_stream_reader_at(st, (off + n - 1) / GCS_BLOCK_SIZE);
	pthread_mutex_unlock(&f->lock);

	while (got < n) {
		uint64_t pos = off + got, idx = pos / GCS_BLOCK_SIZE;
		size_t boff = (size_t)(pos - idx * GCS_BLOCK_SIZE), k;
		struct blk *b;
		int r;

		r = blk_get(f->s, f, st, idx, window, &b);
		if (r < 0)
			return got ? (ssize_t)got : r;
		k = b->len > boff ? b->len - boff : 0;
		if (k > n - got)
			k = n - got;
		memcpy((char *)buf + got, b->data + boff, k);
		/* a sequential reader at a block's end will not come back to it */
		gcs_blk_release(f->s, b, seq_window > 1 && boff + k == b->len);
		if (k == 0)
			break;
		got += k;
	}
	if (seq_window >= 4 && !stream_after(f->s, f, off + got))
		prefetch_after(f->s, f, off + got);
	return (ssize_t)got;
}

int gcs_file_stat(struct xprofs_store_reader *base, struct xprofs_store_stat *st)
{
	*st = ((struct gcs_file *)base)->st;
	return 0;
}

void gcs_close(struct xprofs_store_reader *base)
{
	struct gcs_file *f = (struct gcs_file *)base;

	gcs_stream_free(f->stream);
	pthread_mutex_destroy(&f->lock);
	free(f->obj);
	free(f);
}

/* At unmount, after the threads have stopped: the queued prefetch jobs and every block. */
void gcs_blocks_free(struct gcs_store *s)
{
	while (s->pf_head) {
		struct gcs_prefetch *j = s->pf_head;

		s->pf_head = j->next;
		free(j->f.obj);
		free(j);
	}
	gcs_blk_table_free(s);
}
