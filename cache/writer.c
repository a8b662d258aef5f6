/*
 * writer.c - cache entry writers: stream an entry into a temp file, with
 * lz4 compression on threads of the writer's own, and publish it with
 * rename().
 *
 * Writers stream into DIR/tmp/w.XXXXXX and rename() over the final name:
 * readers and other mounts sharing DIR never see a partial entry; concurrent
 * writers of one key both publish and the last rename wins (identical
 * content). No fsync(): the cache is a cache, and a file torn by a power cut
 * fails its footer, index hash or block checksums and is dropped as corrupt,
 * so durability is not worth halving write speed.
 *
 * Threads: a writer compresses on WRITER_THREADS threads of its own (started
 * by an entry's first full block, so small entries never start them): the
 * caller's bytes are copied into one of WRITER_QUEUE raw blocks; the threads
 * compress full ones in parallel and append them in order while the caller
 * produces the next, so a renderer and lz4 share the cores (lz4 is the
 * slower of the two, hence two threads). Errors found by a thread are sticky
 * and reported by the next write or the commit. A writer that stores blocks
 * as they are (XPROFS_CACHE_ACCEL_STORE: gs:// blocks) starts no threads and
 * appends on the caller's thread, whole blocks straight from the caller's
 * bytes: with nothing to compress, a thread hand-off and a copy per block
 * were most of its cost.
 *
 * Memory: a writer holds WRITER_QUEUE raw blocks, WRITER_RECENT more once
 * that many were appended, one compressed block and a fixed run of index
 * records (spilled to an unlinked temp file beyond that), so a many-GB entry
 * costs the same as a small one.
 *
 * Reads while writing: xprofs_cache_writer_pread() serves the full blocks
 * handed on so far to other threads (the mount streams a view while it
 * renders): queued blocks and the last WRITER_RECENT appended ones are
 * copied from memory (a reader keeping up with the render never reads back
 * or decompresses), older ones read back from the temp file through their
 * index record. The caller keeps commit()
 * and abort() away from a running pread().
 *
 * Locks: w->qlock guards the queue; w->ilock the index records (taken after
 * qlock by readers, alone by the appending thread); the commit takes c->lock
 * (never while holding either) around the publishing rename() and the table
 * update.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lz4.h>

#include "cache-internal.h"

#define WRITER_IDX_RECS 1024u /* index records a writer keeps before spilling */
#define WRITER_QUEUE 4u       /* raw blocks a writer holds: 1 filling + up to 3 queued */
#define WRITER_THREADS 2u     /* compressor threads per writer */
#define WRITER_RECENT 8u      /* appended blocks whose raw bytes a writer keeps for readers */

struct xprofs_cache_writer {
	struct xprofs_cache *c;
	uint64_t id[2];
	int fd, spill_fd;
	int err; /* first failure; sticky; protected by qlock once the thread runs */
	uint32_t bs;
	int accel;    /* lz4 acceleration; atomic (read by the compressor thread) */
	uint8_t *raw; /* the block being filled: slot[fill] */
	size_t raw_len;
	uint64_t raw_total;
	/*
	 * Compression queue: slot[(head + i) % WRITER_QUEUE] for i < queued are
	 * full blocks waiting for (or under) compression; the producer fills
	 * slot[(head + queued) % WRITER_QUEUE], so at most WRITER_QUEUE - 1 wait.
	 */
	uint8_t *slot[WRITER_QUEUE];
	size_t slot_len[WRITER_QUEUE];
	unsigned head, queued;
	unsigned claimed; /* queued blocks, from head, that a thread is compressing */
	uint64_t handed;  /* full blocks taken out of w->raw (queued or appended); under qlock */
	/*
	 * The raw bytes of the last recent_n appended blocks, [recent_end -
	 * recent_n, recent_end), block b at recent[b % WRITER_RECENT]: a reader
	 * just behind the render copies them instead of reading back and
	 * decompressing. Their buffers are retired queue slots, swapped, not
	 * copied; under qlock.
	 */
	uint8_t *recent[WRITER_RECENT];
	size_t recent_len[WRITER_RECENT];
	uint64_t recent_end;
	unsigned recent_n;
	unsigned nthreads;
	bool threaded, stop;
	bool private; /* never published, no cap (xprofs_cache_writer_set_private()); atomic */
	pthread_t thread[WRITER_THREADS];
	pthread_mutex_t qlock;
	pthread_cond_t qcond;
	/*
	 * Owned by the compressor (the thread while it runs, else the caller);
	 * nblocks, spilled, idx_n and idx also under ilock, for
	 * xprofs_cache_writer_pread().
	 */
	pthread_mutex_t ilock;
	uint8_t *cbuf;
	int cbuf_cap;
	uint64_t off, nblocks, spilled;
	uint64_t header_hash, index_hash;
	size_t idx_n;
	uint8_t idx[WRITER_IDX_RECS * CACHE_REC_SIZE];
	char tmp_path[PATH_MAX];
};

/* ---- writer ------------------------------------------------------------------ */

static int open_tmp(struct xprofs_cache_writer *w)
{
	for (int attempt = 0; attempt < 2; attempt++) {
		int r = snprintf(w->tmp_path, sizeof(w->tmp_path), "%s/w.XXXXXX", w->c->tmpdir);

		if (r < 0 || (size_t)r >= sizeof(w->tmp_path))
			return -ENAMETOOLONG;
		w->fd = mkostemp(w->tmp_path, O_CLOEXEC);
		if (w->fd >= 0)
			return 0;
		/* Someone cleared the cache directory under us: recreate it. */
		if (errno != ENOENT || attempt)
			return -errno;
		r = xprofs_mkdir_p(w->c->tmpdir);
		if (r < 0)
			return r;
	}
	return -ENOENT;
}

int xprofs_cache_writer_new(struct xprofs_cache *c, const void *key, size_t keylen,
			    struct xprofs_cache_writer **out)
{
	uint8_t hdr[CACHE_HDR_FIXED];
	struct xprofs_cache_writer *w;
	int r;

	if (keylen > XPROFS_CACHE_KEY_MAX || (keylen && !key))
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->c = c;
	w->fd = w->spill_fd = -1;
	pthread_mutex_lock(&c->lock);
	w->bs = c->bs;
	w->accel = c->accel;
	pthread_mutex_unlock(&c->lock);
	r = pthread_mutex_init(&w->qlock, NULL);
	if (r) {
		free(w);
		return -r;
	}
	r = pthread_cond_init(&w->qcond, NULL);
	if (r) {
		pthread_mutex_destroy(&w->qlock);
		free(w);
		return -r;
	}
	r = pthread_mutex_init(&w->ilock, NULL);
	if (r) {
		pthread_cond_destroy(&w->qcond);
		pthread_mutex_destroy(&w->qlock);
		free(w);
		return -r;
	}
	cache_key_id(key, keylen, w->id);
	w->cbuf_cap = LZ4_compressBound((int)w->bs);
	w->raw = w->slot[0] = malloc(w->bs);
	w->cbuf = malloc((size_t)w->cbuf_cap);
	if (!w->raw || !w->cbuf) {
		r = -ENOMEM;
		goto fail;
	}
	r = open_tmp(w);
	if (r < 0)
		goto fail;
	w->header_hash = cache_header_encode(hdr, key, (uint32_t)keylen, w->bs);
	w->index_hash = w->header_hash;
	r = xprofs_write_full(w->fd, hdr, sizeof(hdr));
	if (r == 0 && keylen)
		r = xprofs_write_full(w->fd, key, keylen);
	if (r < 0)
		goto fail;
	w->off = CACHE_HDR_FIXED + keylen;
	*out = w;
	return 0;
fail:
	xprofs_cache_writer_abort(w);
	return r;
}

static int spill_index(struct xprofs_cache_writer *w)
{
	int r;

	if (w->spill_fd < 0) {
		int fd = xprofs_tmpfile(w->c->tmpdir, "s");

		if (fd < 0)
			return fd;
		w->spill_fd = fd;
	}
	r = xprofs_write_full(w->spill_fd, w->idx, w->idx_n * CACHE_REC_SIZE);
	if (r < 0)
		return r;
	w->spilled += w->idx_n;
	w->idx_n = 0;
	return 0;
}

/*
 * Compresses @len raw bytes at @data (borrowed) into @cbuf (room for
 * w->cbuf_cap) and fills @rec but its offset; returns what to store (@cbuf,
 * or @data when lz4 does not shrink it or the writer stores blocks as they
 * are).
 */
static const uint8_t *compress_block(struct xprofs_cache_writer *w, uint8_t *cbuf,
				     const uint8_t *data, size_t len, struct cache_rec *rec)
{
	int accel = __atomic_load_n(&w->accel, __ATOMIC_RELAXED);
	int n = accel == XPROFS_CACHE_ACCEL_STORE
			? 0
			: LZ4_compress_fast((const char *)data, (char *)cbuf, (int)len, w->cbuf_cap,
					    accel);

	*rec = (struct cache_rec){.raw = (uint32_t)len};
	if (n <= 0 || (size_t)n >= len) {
		rec->plain = true;
		rec->stored = (uint32_t)len;
		rec->sum = cache_hash64(data, len, 0);
		return data;
	}
	rec->stored = (uint32_t)n;
	rec->sum = cache_hash64(cbuf, (size_t)n, 0);
	return cbuf;
}

/*
 * write_room() - write @n bytes (borrowed) at w->off, keeping the cache's
 * free-space floor: entries are evicted first if the disk is short of room;
 * a write that meets ENOSPC or EDQUOT anyway evicts about twice its size,
 * drops what it wrote and retries once. 0 or -errno (-ENOSPC: no room to
 * be had; the caller serves the data uncached).
 */
static int write_room(struct xprofs_cache_writer *w, const void *p, size_t n)
{
	struct xprofs_cache *c = w->c;
	uint64_t freed;
	int r;

	pthread_mutex_lock(&c->lock);
	r = cache_make_room(c, n);
	pthread_mutex_unlock(&c->lock);
	if (r < 0)
		return r;
	r = xprofs_write_full(w->fd, p, n);
	if (r != -ENOSPC && r != -EDQUOT)
		return r;
	pthread_mutex_lock(&c->lock);
	freed = cache_evict_bytes(c, 2 * (uint64_t)n);
	pthread_mutex_unlock(&c->lock);
	if (!freed || ftruncate(w->fd, (off_t)w->off) < 0 ||
	    lseek(w->fd, (off_t)w->off, SEEK_SET) < 0)
		return -ENOSPC;
	return xprofs_write_full(w->fd, p, n);
}

/* Appends the next block: @stored (borrowed) as described by @rec. Blocks must come in order. */
static int append_block(struct xprofs_cache_writer *w, const uint8_t *stored, struct cache_rec *rec)
{
	uint8_t *recb;
	int r;

	rec->off = w->off;
	/* Refuse an entry that could never fit instead of evicting everything. */
	if (!__atomic_load_n(&w->private, __ATOMIC_RELAXED) &&
	    w->off + rec->stored + (w->nblocks + 1) * CACHE_REC_SIZE + CACHE_FOOTER_SIZE >
		    w->c->max_bytes)
		return -EFBIG;
	r = write_room(w, stored, rec->stored);
	if (r < 0)
		return r;
	pthread_mutex_lock(&w->ilock);
	recb = w->idx + w->idx_n * CACHE_REC_SIZE;
	cache_rec_encode(recb, rec);
	w->index_hash = cache_hash64(recb, CACHE_REC_SIZE, w->index_hash);
	w->idx_n++;
	w->off += rec->stored;
	w->nblocks++;
	if (w->idx_n == WRITER_IDX_RECS)
		r = spill_index(w);
	pthread_mutex_unlock(&w->ilock);
	return r;
}

/* Compresses and appends one block of @len raw bytes at @data (borrowed), here. */
static int flush_block(struct xprofs_cache_writer *w, const uint8_t *data, size_t len)
{
	struct cache_rec rec;
	const uint8_t *stored = compress_block(w, w->cbuf, data, len, &rec);

	return append_block(w, stored, &rec);
}

int xprofs_cache_writer_set_acceleration(struct xprofs_cache_writer *w, int accel)
{
	if ((accel < 1 && accel != XPROFS_CACHE_ACCEL_STORE) || accel > XPROFS_CACHE_ACCEL_MAX)
		return -EINVAL;
	__atomic_store_n(&w->accel, accel, __ATOMIC_RELAXED);
	return 0;
}

/*
 * keep_recent() - queue slot @i, the head, was appended: its buffer joins the
 * recent blocks and the slot takes the oldest recent one's (NULL until the
 * ring is full: block_done() allocates). Under qlock.
 */
static void keep_recent(struct xprofs_cache_writer *w, unsigned i)
{
	uint64_t b = w->handed - w->queued; /* the head's block number */
	unsigned k = (unsigned)(b % WRITER_RECENT);
	uint8_t *old = w->recent[k];

	w->recent[k] = w->slot[i];
	w->recent_len[k] = w->slot_len[i];
	w->slot[i] = old;
	w->recent_end = b + 1;
	if (w->recent_n < WRITER_RECENT)
		w->recent_n++;
}

/*
 * A compressor thread: claims the oldest unclaimed queued block, compresses
 * it into its own buffer (in parallel with the other thread and with the
 * producer), then waits for the block's turn (it is the queue's head) to
 * append it, so blocks land in order. Runs until told to stop with nothing
 * left to claim. After a failure the threads keep draining the queue
 * (dropping the blocks) so the producer never waits forever; the producer
 * sees w->err at its next block.
 */
static void *compressor(void *arg)
{
	struct xprofs_cache_writer *w = arg;
	uint8_t *cbuf = malloc((size_t)w->cbuf_cap);

	pthread_mutex_lock(&w->qlock);
	if (!cbuf && !w->err)
		w->err = -ENOMEM;
	for (;;) {
		const uint8_t *stored = NULL;
		struct cache_rec rec;
		unsigned i;
		int r = 0;

		while (w->claimed == w->queued && !w->stop)
			pthread_cond_wait(&w->qcond, &w->qlock);
		if (w->claimed == w->queued)
			break;
		i = (w->head + w->claimed) % WRITER_QUEUE;
		w->claimed++;
		if (!w->err) {
			pthread_mutex_unlock(&w->qlock);
			stored = compress_block(w, cbuf, w->slot[i], w->slot_len[i], &rec);
			pthread_mutex_lock(&w->qlock);
		}
		while (w->head != i)
			pthread_cond_wait(&w->qcond, &w->qlock);
		if (stored && !w->err) {
			pthread_mutex_unlock(&w->qlock);
			r = append_block(w, stored, &rec);
			pthread_mutex_lock(&w->qlock);
		}
		if (r < 0 && !w->err)
			w->err = r;
		if (stored && !w->err)
			keep_recent(w, i);
		w->head = (w->head + 1) % WRITER_QUEUE;
		w->queued--;
		w->claimed--;
		pthread_cond_broadcast(&w->qcond);
	}
	pthread_mutex_unlock(&w->qlock);
	free(cbuf);
	return NULL;
}

/*
 * append_here() - a full block of @len bytes at @data (borrowed), compressed
 * and appended on this thread (no compressor threads), then handed on to
 * readers. 0 or -errno.
 */
static int append_here(struct xprofs_cache_writer *w, const uint8_t *data, size_t len)
{
	int r = flush_block(w, data, len);

	if (r == 0) {
		pthread_mutex_lock(&w->qlock);
		w->handed++;
		pthread_mutex_unlock(&w->qlock);
	}
	return r;
}

/* flush_here() - append_here() of the block being filled; emptied either way. */
static int flush_here(struct xprofs_cache_writer *w)
{
	int r = append_here(w, w->raw, w->raw_len);

	w->raw_len = 0;
	return r;
}

/*
 * Hands the full block w->raw to the compressors and points w->raw at a free
 * slot, waiting while WRITER_QUEUE - 1 blocks are queued. Without threads
 * (none started yet, or it could not be) it compresses here. 0 or the
 * writer's error.
 */
static int block_done(struct xprofs_cache_writer *w)
{
	unsigned fill;
	int r;

	if (!w->threaded) {
		/* stored blocks have no lz4 pass to overlap: hashed and appended here */
		if (__atomic_load_n(&w->accel, __ATOMIC_RELAXED) == XPROFS_CACHE_ACCEL_STORE)
			return flush_here(w);
		/* the first block of an entry starts the threads: small entries never do */
		while (w->nthreads < WRITER_THREADS &&
		       pthread_create(&w->thread[w->nthreads], NULL, compressor, w) == 0)
			w->nthreads++;
		w->threaded = w->nthreads > 0;
		if (!w->threaded)
			return flush_here(w);
	}
	pthread_mutex_lock(&w->qlock);
	w->slot_len[(w->head + w->queued) % WRITER_QUEUE] = w->raw_len;
	w->queued++;
	w->handed++;
	pthread_cond_broadcast(&w->qcond);
	while (w->queued == WRITER_QUEUE && !w->err)
		pthread_cond_wait(&w->qcond, &w->qlock);
	r = w->err;
	fill = (w->head + w->queued) % WRITER_QUEUE;
	pthread_mutex_unlock(&w->qlock);
	w->raw_len = 0;
	if (r < 0)
		return r;
	if (!w->slot[fill]) {
		w->slot[fill] = malloc(w->bs);
		if (!w->slot[fill]) {
			pthread_mutex_lock(&w->qlock);
			if (!w->err)
				w->err = -ENOMEM;
			pthread_mutex_unlock(&w->qlock);
			return -ENOMEM;
		}
	}
	w->raw = w->slot[fill];
	return 0;
}

/* Stops the compressor threads once it has drained the queue; 0 or the writer's error. */
static int writer_join(struct xprofs_cache_writer *w)
{
	int r;

	if (!w->threaded)
		return w->err;
	pthread_mutex_lock(&w->qlock);
	w->stop = true;
	pthread_cond_broadcast(&w->qcond);
	pthread_mutex_unlock(&w->qlock);
	for (unsigned i = 0; i < w->nthreads; i++)
		pthread_join(w->thread[i], NULL);
	w->nthreads = 0;
	w->threaded = false;
	r = w->err;
	return r;
}

static int writer_error(struct xprofs_cache_writer *w)
{
	int r;

	if (!w->threaded)
		return w->err;
	pthread_mutex_lock(&w->qlock);
	r = w->err;
	pthread_mutex_unlock(&w->qlock);
	return r;
}

int xprofs_cache_writer_write(struct xprofs_cache_writer *w, const void *p, size_t n)
{
	const uint8_t *s = p;
	int r = writer_error(w);

	if (r < 0)
		return r;
	while (n) {
		size_t take = w->bs - w->raw_len;

		/*
		 * A whole block stored as it is (a gs:// block group) is hashed
		 * and appended from the caller's bytes: no thread runs after we
		 * return, so no copy is needed.
		 */
		if (w->raw_len == 0 && n >= w->bs && !w->threaded &&
		    __atomic_load_n(&w->accel, __ATOMIC_RELAXED) == XPROFS_CACHE_ACCEL_STORE) {
			if ((r = append_here(w, s, w->bs)) < 0) {
				w->err = r;
				return r;
			}
			s += w->bs;
			n -= w->bs;
			w->raw_total += w->bs;
			continue;
		}
		/*
		 * Otherwise copied: the compressor may run after we return, and a
		 * memcpy costs far less than the lz4 pass it lets overlap.
		 */
		if (take > n)
			take = n;
		memcpy(w->raw + w->raw_len, s, take);
		w->raw_len += take;
		if (w->raw_len == w->bs) {
			r = block_done(w);
			if (r < 0) {
				if (!w->threaded)
					w->err = r;
				return r;
			}
		}
		s += take;
		n -= take;
		w->raw_total += take;
	}
	return 0;
}

uint64_t xprofs_cache_writer_readable(const struct xprofs_cache_writer *w)
{
	return w->raw_total - w->raw_len;
}

bool xprofs_cache_writer_near_cap(struct xprofs_cache_writer *w, size_t n)
{
	uint64_t stored, appended, handed, pending, worst;

	if (__atomic_load_n(&w->private, __ATOMIC_RELAXED))
		return false;

	pthread_mutex_lock(&w->qlock);
	handed = w->handed;
	pthread_mutex_unlock(&w->qlock);
	pthread_mutex_lock(&w->ilock);
	stored = w->off;
	appended = w->nblocks;
	pthread_mutex_unlock(&w->ilock);
	/* blocks not appended yet: queued, the one being filled, those @n makes; each stored
	 * at most at its raw size (lz4's output is kept only when smaller) */
	pending = (handed - appended) + (w->raw_len + n) / w->bs + 1;
	worst = stored + pending * w->bs + (appended + pending) * CACHE_REC_SIZE +
		CACHE_FOOTER_SIZE;
	return worst > w->c->max_bytes;
}

void xprofs_cache_writer_set_private(struct xprofs_cache_writer *w)
{
	/* read by the compressor threads' appends */
	__atomic_store_n(&w->private, true, __ATOMIC_RELAXED);
}

int xprofs_cache_writer_seal(struct xprofs_cache_writer *w)
{
	int r = writer_join(w);

	if (r == 0 && w->raw_len) /* the last block: readers see it once handed on */
		r = flush_here(w);
	pthread_mutex_lock(&w->qlock);
	if (r < 0 && !w->err)
		w->err = r;
	/* only reads from here, all of the file's: no block buffers kept */
	for (unsigned i = 0; i < WRITER_RECENT; i++) {
		free(w->recent[i]);
		w->recent[i] = NULL;
	}
	w->recent_n = 0;
	for (unsigned i = 0; i < WRITER_QUEUE; i++) { /* empty after the join */
		free(w->slot[i]);
		w->slot[i] = NULL;
	}
	w->raw = NULL;
	pthread_mutex_unlock(&w->qlock);
	return r;
}

const void *xprofs_cache_writer_tail(const struct xprofs_cache_writer *w, size_t *n)
{
	*n = w->raw_len;
	return w->raw;
}

/* raw_copy() - up to @n bytes of raw block @blk (@len bytes) from @boff into @buf: how many. */
static size_t raw_copy(void *buf, size_t n, const uint8_t *blk, size_t len, size_t boff)
{
	size_t got = boff < len ? len - boff : 0;

	if (got > n)
		got = n;
	memcpy(buf, blk + boff, got);
	return got;
}

/*
 * Finds block @b for a reader of the entry being written: 1 with its index
 * record in @recb (appended: read it from the temp file), 0 with up to @n
 * bytes at @boff copied into @buf from the compression queue (*@got), or
 * -errno (a block dropped after a failure, or not handed on yet: -EAGAIN).
 * Lock order: qlock, then ilock; the compressor appends under ilock alone
 * and moves the queue's head under qlock only after appending, so a block
 * not appended yet is still in the queue.
 */
static int writer_find_block(struct xprofs_cache_writer *w, uint64_t b, uint8_t *recb, void *buf,
			     size_t n, size_t boff, size_t *got)
{
	int r = 1;

	pthread_mutex_lock(&w->qlock);
	if (b >= w->handed) {
		r = -EAGAIN;
		goto out;
	}
	if (b < w->recent_end && b + w->recent_n >= w->recent_end) {
		unsigned k = (unsigned)(b % WRITER_RECENT);

		*got = raw_copy(buf, n, w->recent[k], w->recent_len[k], boff);
		r = 0;
		goto out;
	}
	pthread_mutex_lock(&w->ilock);
	if (b < w->spilled) {
		ssize_t k =
			xprofs_pread_full(w->spill_fd, recb, CACHE_REC_SIZE, b * CACHE_REC_SIZE);

		r = k < 0 ? (int)k : k == CACHE_REC_SIZE ? 1 : -EIO;
	} else if (b < w->nblocks) {
		memcpy(recb, w->idx + (b - w->spilled) * CACHE_REC_SIZE, CACHE_REC_SIZE);
	} else if (b < w->handed - w->queued) {
		r = w->err ? w->err : -EIO; /* dropped from the queue after a failure */
	} else {
		unsigned i = (w->head + (unsigned)(b - (w->handed - w->queued))) % WRITER_QUEUE;

		*got = raw_copy(buf, n, w->slot[i], w->slot_len[i], boff);
		r = 0;
	}
	pthread_mutex_unlock(&w->ilock);
out:
	pthread_mutex_unlock(&w->qlock);
	return r;
}

ssize_t xprofs_cache_writer_pread(struct xprofs_cache_writer *w, void *buf, size_t n, uint64_t off)
{
	uint8_t recb[CACHE_REC_SIZE], *blk;
	uint64_t b = off / w->bs;
	size_t boff = (size_t)(off % w->bs), got = 0;
	ssize_t r;

	if (!n)
		return 0;
	r = writer_find_block(w, b, recb, buf, n, boff, &got);
	if (r == -EAGAIN)
		return 0;
	if (r <= 0)
		return r < 0 ? r : (ssize_t)got;
	blk = malloc(w->bs);
	if (!blk)
		return -ENOMEM;
	r = cache_block_read_rec(w->fd, recb, w->bs, blk);
	if (r >= 0) {
		got = boff < (size_t)r ? (size_t)r - boff : 0;
		if (got > n)
			got = n;
		memcpy(buf, blk + boff, got);
		r = (ssize_t)got;
	}
	free(blk);
	return r == -EBADMSG ? -EIO : r;
}

static int sink_write(void *arg, const void *p, size_t n)
{
	return xprofs_cache_writer_write(arg, p, n);
}

struct xprofs_sink xprofs_cache_writer_as_sink(struct xprofs_cache_writer *w)
{
	return (struct xprofs_sink){.write = sink_write, .arg = w};
}

/* Appends the spilled and in-memory index records, then the footer. */
static int write_tail(struct xprofs_cache_writer *w)
{
	uint8_t footer[CACHE_FOOTER_SIZE];
	uint64_t index_off = w->off, done = 0;
	size_t chunk = w->bs - w->bs % CACHE_REC_SIZE;
	int r;

	while (done < w->spilled * CACHE_REC_SIZE) {
		uint64_t left = w->spilled * CACHE_REC_SIZE - done;
		size_t n = left < chunk ? (size_t)left : chunk;
		ssize_t got = xprofs_pread_full(w->spill_fd, w->raw, n, done);

		if (got < 0)
			return (int)got;
		if ((size_t)got != n)
			return -EIO;
		r = xprofs_write_full(w->fd, w->raw, n);
		if (r < 0)
			return r;
		done += n;
	}
	r = xprofs_write_full(w->fd, w->idx, w->idx_n * CACHE_REC_SIZE);
	if (r < 0)
		return r;
	w->off += w->nblocks * CACHE_REC_SIZE;
	cache_footer_encode(footer, w->raw_total, w->nblocks, index_off, w->index_hash,
			    w->header_hash);
	r = xprofs_write_full(w->fd, footer, sizeof(footer));
	if (r < 0)
		return r;
	w->off += CACHE_FOOTER_SIZE;
	return 0;
}

int xprofs_cache_writer_commit(struct xprofs_cache_writer *w)
{
	struct xprofs_cache *c = w->c;
	char path[PATH_MAX];
	bool rescan = false;
	struct cache_node *n;
	int64_t now;
	int r = writer_join(w);

	if (r < 0)
		goto out;
	if (w->raw_len) {
		r = flush_block(w, w->raw, w->raw_len);
		if (r < 0)
			goto out;
		w->raw_len = 0;
	}
	r = write_tail(w);
	if (r < 0)
		goto out;
	r = close(w->fd) < 0 ? -errno : 0;
	w->fd = -1;
	if (r < 0)
		goto out;
	r = cache_entry_path(c, w->id, path, sizeof(path));
	if (r < 0)
		goto out;
	pthread_mutex_lock(&c->lock);
	if (rename(w->tmp_path, path) < 0) {
		r = -errno;
		pthread_mutex_unlock(&c->lock);
		goto out;
	}
	w->tmp_path[0] = '\0';
	now = xprofs_now_ns() / 1000000000;
	n = cache_node_get(c, w->id);
	if (n) {
		cache_node_set_present(c, n, w->off);
		cache_seen_now(c, n);
		n->touched = now;
		cache_evict(c, n);
	} else {
		xprofs_warn("cache: out of memory, entry published but not tracked");
	}
	c->st.raw_bytes_written += w->raw_total;
	if (now - c->last_scan_s >= CACHE_RESCAN_EVERY_S && !c->rescan_running)
		rescan = c->rescan_running = true;
	pthread_mutex_unlock(&c->lock);
	if (rescan) {
		/* Learn what other processes sharing DIR added or evicted. */
		(void)xprofs_cache_rescan(c);
		pthread_mutex_lock(&c->lock);
		c->rescan_running = false;
		pthread_mutex_unlock(&c->lock);
	}
out:
	if (r < 0)
		xprofs_debug("cache: commit failed: %s", strerror(-r));
	xprofs_cache_writer_abort(w);
	return r;
}

void xprofs_cache_writer_abort(struct xprofs_cache_writer *w)
{
	if (!w)
		return;
	if (w->threaded) {
		/* drop what is queued: the entry is not wanted */
		pthread_mutex_lock(&w->qlock);
		if (!w->err)
			w->err = -ECANCELED;
		pthread_mutex_unlock(&w->qlock);
		(void)writer_join(w);
	}
	if (w->spill_fd >= 0)
		close(w->spill_fd);
	if (w->fd >= 0)
		close(w->fd);
	if (w->tmp_path[0])
		unlink(w->tmp_path);
	free(w->cbuf);
	for (unsigned i = 0; i < WRITER_QUEUE; i++)
		free(w->slot[i]);
	for (unsigned i = 0; i < WRITER_RECENT; i++)
		free(w->recent[i]);
	pthread_mutex_destroy(&w->ilock);
	pthread_cond_destroy(&w->qcond);
	pthread_mutex_destroy(&w->qlock);
	free(w);
}
