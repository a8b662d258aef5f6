/*
 * gzip.c - trace.json.gz: a sink that gzip-compresses what a render writes
 * and passes the compressed bytes on to the caller's sink.
 *
 * Design: the render's bytes are cut into chunks of TRACE_GZ_IN bytes, and
 * each chunk is deflated on its own (raw deflate, level 1: JSON this
 * repetitive deflates about 2x faster than at the default level 6 for ~30%
 * more bytes), primed with the last 32 KiB of the chunk before it as the
 * dictionary and ended with a sync flush (the last one with the final
 * block), so the chunks' outputs, written in order between a gzip header
 * and trailer (the CRC-32s joined with crc32_combine()), are one ordinary
 * gzip member that decompresses to exactly the view: what pigz does. Being
 * independent, the chunks are deflated by up to TRACE_GZ_WORKERS_MAX worker
 * threads at once (deflate, not the render, is what limits this view); the
 * render only copies its writes into a free chunk slot and waits when every
 * slot is taken. The bytes depend on the chunking alone, never on the
 * number of workers or their timing: with no thread at all the caller's
 * thread deflates each chunk the same way.
 *
 * Output order: a finished chunk waits in its slot until every earlier one
 * is written; whichever thread finds the next chunk done writes it (one
 * writer at a time, the lock released while the next sink runs), so the
 * next sink sees one call at a time, in order. The stream is complete when
 * trace_gzip_finish() returns.
 *
 * Memory: per worker a zlib state (~270 KiB); per slot (2 per worker, plus
 * one) the chunk, its 32 KiB dictionary and its compressed form
 * (deflateBound() of a chunk, about the chunk's size): under 20 MiB with 4
 * workers, whatever the view's size. Limits: none of its own.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "trace-internal.h"

#define TRACE_GZ_IN ((size_t)1 << 20) /* a chunk */
#define TRACE_GZ_DICT ((size_t)32 << 10)
#define TRACE_GZ_WORKERS_MAX 4
#define TRACE_GZ_SLOTS (2 * TRACE_GZ_WORKERS_MAX + 1)
#define TRACE_GZ_LEVEL 1

enum slot_state { SLOT_FREE, SLOT_FILLING, SLOT_QUEUED, SLOT_BUSY, SLOT_DONE };

struct gz_slot {
	enum slot_state state;
	uint64_t seq;      /* the chunk's number */
	bool last;         /* ends the stream */
	unsigned char *in; /* owned, TRACE_GZ_IN */
	size_t in_len;
	unsigned char *dict; /* owned, TRACE_GZ_DICT: the previous chunk's tail */
	size_t dict_len;
	unsigned char *out; /* owned, out_cap */
	size_t out_len, out_cap;
	uLong crc; /* of in[0, in_len) */
	int err;
};

struct trace_gzip {
	const struct xprofs_sink *to; /* borrowed */
	unsigned nslots, nworkers, started;
	struct gz_slot slots[TRACE_GZ_SLOTS];
	z_stream z[TRACE_GZ_WORKERS_MAX + 1]; /* one per worker; the last: the caller's thread */
	bool z_ready[TRACE_GZ_WORKERS_MAX + 1];
	pthread_t th[TRACE_GZ_WORKERS_MAX];
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool sync_ready; /* mu and cv initialised */
	/* the render's (one thread) */
	int fill;                          /* the slot being filled, or -1 */
	unsigned char tail[TRACE_GZ_DICT]; /* the last TRACE_GZ_DICT bytes of the chunks so far */
	size_t tail_len;
	/* the writer's (the thread with @writing set) */
	bool header_out;
	uLong crc;      /* of the chunks written out */
	uint64_t total; /* their length */
	/* protected by mu */
	uint64_t next_seq; /* the next chunk to fill */
	uint64_t next_out; /* the next chunk to write out */
	bool writing;      /* a thread is writing chunks out */
	bool finish;       /* workers end once nothing is queued */
	bool ended;        /* the last chunk and the trailer are out */
	int err;           /* the first error (or -ECANCELED) */
};

/* The state of worker @w (TRACE_GZ_WORKERS_MAX: the caller's thread), made on first use. */
static int gz_state(struct trace_gzip *gz, unsigned w, z_stream **out)
{
	if (!gz->z_ready[w]) {
		/* windowBits -15: raw deflate; the gzip wrapper is written here */
		int r = xs_zlib_errno(deflateInit2(&gz->z[w], TRACE_GZ_LEVEL, Z_DEFLATED, -15, 8,
						   Z_DEFAULT_STRATEGY));

		if (r < 0)
			return r;
		gz->z_ready[w] = true;
	}
	*out = &gz->z[w];
	return 0;
}

/*
 * Deflate slot @sl with state @z (one thread at a time per state): a chunk
 * primed with its dictionary, ended by a sync flush (byte-aligned, so the
 * next chunk's output follows it) or, for the last, the final block.
 */
static int gz_chunk(z_stream *z, struct gz_slot *sl)
{
	int zr, flush = sl->last ? Z_FINISH : Z_SYNC_FLUSH;

	if ((zr = deflateReset(z)) != Z_OK)
		return xs_zlib_errno(zr);
	if (sl->dict_len && (zr = deflateSetDictionary(z, sl->dict, (uInt)sl->dict_len)) != Z_OK)
		return xs_zlib_errno(zr);
	z->next_in = sl->in;
	z->avail_in = (uInt)sl->in_len;
	sl->out_len = 0;
	for (;;) {
		if (sl->out_cap - sl->out_len < 64) { /* deflate said there is more: room */
			size_t cap = sl->out_cap * 2;
			unsigned char *o = realloc(sl->out, cap);

			if (!o)
				return -ENOMEM;
			sl->out = o;
			sl->out_cap = cap;
		}
		z->next_out = sl->out + sl->out_len;
		z->avail_out = (uInt)(sl->out_cap - sl->out_len);
		zr = deflate(z, flush);
		if (zr == Z_STREAM_ERROR)
			return -EINVAL;
		sl->out_len = sl->out_cap - z->avail_out;
		if (sl->last ? zr == Z_STREAM_END : z->avail_out != 0)
			break;
	}
	sl->crc = crc32(0L, sl->in, (uInt)sl->in_len);
	return 0;
}

static void put_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* The done slot holding chunk @seq, or NULL. Under mu. */
static struct gz_slot *gz_done(struct trace_gzip *gz, uint64_t seq)
{
	for (unsigned i = 0; i < gz->nslots; i++)
		if (gz->slots[i].state == SLOT_DONE && gz->slots[i].seq == seq)
			return &gz->slots[i];
	return NULL;
}

/*
 * Write out, in order, the chunks that are done, unless another thread is
 * already doing so (it will see them). Called and returns with mu held;
 * drops it while the next sink runs.
 */
static void gz_drain(struct trace_gzip *gz)
{
	static const unsigned char header[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 3};
	struct gz_slot *sl;

	if (gz->writing)
		return;
	gz->writing = true;
	while (!gz->err && (sl = gz_done(gz, gz->next_out))) {
		int r = sl->err;

		pthread_mutex_unlock(&gz->mu);
		if (r == 0 && !gz->header_out) {
			r = gz->to->write(gz->to->arg, header, sizeof(header));
			gz->header_out = true;
		}
		if (r == 0 && sl->out_len)
			r = gz->to->write(gz->to->arg, sl->out, sl->out_len);
		gz->crc = crc32_combine(gz->crc, sl->crc, (z_off_t)sl->in_len);
		gz->total += sl->in_len;
		if (r == 0 && sl->last) {
			unsigned char trailer[8];

			put_le32(trailer, (uint32_t)gz->crc);
			put_le32(trailer + 4, (uint32_t)gz->total); /* ISIZE: the length mod 2^32 */
			r = gz->to->write(gz->to->arg, trailer, sizeof(trailer));
		}
		pthread_mutex_lock(&gz->mu);
		if (r < 0 && !gz->err)
			gz->err = r;
		if (r == 0 && sl->last)
			gz->ended = true;
		sl->state = SLOT_FREE;
		gz->next_out++;
		pthread_cond_broadcast(&gz->cv);
	}
	gz->writing = false;
	pthread_cond_broadcast(&gz->cv);
}

/* The queued slot with the lowest chunk number, or NULL. Under mu. */
static struct gz_slot *gz_next_queued(struct trace_gzip *gz)
{
	struct gz_slot *best = NULL;

	for (unsigned i = 0; i < gz->nslots; i++)
		if (gz->slots[i].state == SLOT_QUEUED && (!best || gz->slots[i].seq < best->seq))
			best = &gz->slots[i];
	return best;
}

struct gz_worker_arg {
	struct trace_gzip *gz;
	unsigned w;
};

/* A worker: deflate queued chunks, lowest first; write out what is in order. */
static void *gz_worker(void *arg)
{
	struct trace_gzip *gz = ((struct gz_worker_arg *)arg)->gz;
	unsigned w = ((struct gz_worker_arg *)arg)->w;
	struct gz_slot *sl;

	free(arg);
	pthread_mutex_lock(&gz->mu);
	for (;;) {
		if (!(sl = gz_next_queued(gz))) {
			if (gz->finish)
				break;
			pthread_cond_wait(&gz->cv, &gz->mu);
			continue;
		}
		if (gz->err) { /* failed or cancelled: nothing more goes out */
			sl->state = SLOT_FREE;
			pthread_cond_broadcast(&gz->cv);
			continue;
		}
		sl->state = SLOT_BUSY;
		pthread_mutex_unlock(&gz->mu);
		z_stream *z;
		int r = gz_state(gz, w, &z);

		if (r == 0)
			r = gz_chunk(z, sl);
		pthread_mutex_lock(&gz->mu);
		sl->err = r;
		sl->state = SLOT_DONE;
		gz_drain(gz);
	}
	pthread_mutex_unlock(&gz->mu);
	return NULL;
}

static void gz_start(struct trace_gzip *gz)
{
	for (unsigned w = 0; w < gz->nworkers; w++) {
		struct gz_worker_arg *a = malloc(sizeof(*a));

		if (!a)
			break;
		*a = (struct gz_worker_arg){gz, w};
		if (pthread_create(&gz->th[w], NULL, gz_worker, a)) {
			free(a);
			break;
		}
		gz->started++;
	}
}

int trace_gzip_new(const struct xprofs_sink *to, unsigned threads, struct trace_gzip **out)
{
	struct trace_gzip *gz = calloc(1, sizeof(*gz));

	*out = NULL;
	if (!gz)
		return -ENOMEM;
	gz->to = to;
	gz->fill = -1;
	gz->nworkers = threads < 1                      ? 1
		       : threads > TRACE_GZ_WORKERS_MAX ? TRACE_GZ_WORKERS_MAX
							: threads;
	gz->nslots = 2 * gz->nworkers + 1;
	for (unsigned i = 0; i < gz->nslots; i++) {
		struct gz_slot *sl = &gz->slots[i];

		sl->out_cap =
			TRACE_GZ_IN + (TRACE_GZ_IN >> 3) + 256; /* grows if deflate needs more */
		if (!(sl->in = malloc(TRACE_GZ_IN)) || !(sl->dict = malloc(TRACE_GZ_DICT)) ||
		    !(sl->out = malloc(sl->out_cap))) {
			trace_gzip_free(gz);
			return -ENOMEM;
		}
	}
	if (pthread_mutex_init(&gz->mu, NULL)) {
		trace_gzip_free(gz);
		return -ENOMEM;
	}
	if (pthread_cond_init(&gz->cv, NULL)) {
		pthread_mutex_destroy(&gz->mu);
		trace_gzip_free(gz);
		return -ENOMEM;
	}
	gz->sync_ready = true;
	gz_start(gz); /* none started: the render's thread deflates each chunk */
	*out = gz;
	return 0;
}

/* Take a free slot to fill, primed with the tail of the chunks so far. */
static int gz_take(struct trace_gzip *gz)
{
	struct gz_slot *sl = NULL;
	int r;

	pthread_mutex_lock(&gz->mu);
	while (!gz->err) {
		for (unsigned i = 0; i < gz->nslots && !sl; i++)
			if (gz->slots[i].state == SLOT_FREE)
				sl = &gz->slots[i];
		if (sl)
			break;
		pthread_cond_wait(&gz->cv, &gz->mu);
	}
	if ((r = gz->err) == 0) {
		sl->state = SLOT_FILLING;
		sl->seq = gz->next_seq++;
		gz->fill = (int)(sl - gz->slots);
	}
	pthread_mutex_unlock(&gz->mu);
	if (r < 0)
		return r;
	sl->last = false;
	sl->in_len = 0;
	sl->err = 0;
	sl->dict_len = gz->tail_len;
	memcpy(sl->dict, gz->tail, gz->tail_len);
	return 0;
}

/* Hand the fill slot to the workers (or deflate it here when there are none). */
static int gz_submit(struct trace_gzip *gz, bool last)
{
	struct gz_slot *sl = &gz->slots[gz->fill];
	int r = 0;

	sl->last = last;
	if (sl->in_len >= TRACE_GZ_DICT) {
		memcpy(gz->tail, sl->in + sl->in_len - TRACE_GZ_DICT, TRACE_GZ_DICT);
		gz->tail_len = TRACE_GZ_DICT;
	} else if (!last) { /* cannot happen: only the last chunk is short */
		return -EINVAL;
	}
	gz->fill = -1;
	if (!gz->started) {
		z_stream *z;

		if ((r = gz_state(gz, TRACE_GZ_WORKERS_MAX, &z)) == 0)
			r = gz_chunk(z, sl);
	}
	pthread_mutex_lock(&gz->mu);
	if (gz->started) {
		sl->state = SLOT_QUEUED;
		pthread_cond_broadcast(&gz->cv);
	} else {
		sl->err = r;
		sl->state = SLOT_DONE;
		gz_drain(gz);
	}
	r = gz->err;
	pthread_mutex_unlock(&gz->mu);
	return r;
}

static int gz_write(void *arg, const void *p, size_t n)
{
	struct trace_gzip *gz = arg;
	const unsigned char *q = p;
	int r;

	while (n) {
		if (gz->fill < 0 && (r = gz_take(gz)) < 0)
			return r;
		struct gz_slot *sl = &gz->slots[gz->fill];
		size_t k = TRACE_GZ_IN - sl->in_len < n ? TRACE_GZ_IN - sl->in_len : n;

		memcpy(sl->in + sl->in_len, q, k);
		sl->in_len += k;
		q += k;
		n -= k;
		if (sl->in_len == TRACE_GZ_IN && (r = gz_submit(gz, false)) < 0)
			return r;
	}
	return 0;
}

struct xprofs_sink trace_gzip_sink(struct trace_gzip *gz)
{
	struct xprofs_sink s = {.write = gz_write, .arg = gz};

	return s;
}

/* End the workers (after what is queued, or at once with @cancel). */
static void gz_stop(struct trace_gzip *gz, bool cancel)
{
	pthread_mutex_lock(&gz->mu);
	if (cancel && !gz->err)
		gz->err = -ECANCELED;
	gz->finish = true;
	pthread_cond_broadcast(&gz->cv);
	pthread_mutex_unlock(&gz->mu);
	for (unsigned w = 0; w < gz->started; w++)
		pthread_join(gz->th[w], NULL);
	gz->started = 0;
}

int trace_gzip_finish(struct trace_gzip *gz)
{
	int r;

	/* the last chunk, empty when the view ended on a chunk boundary */
	if (gz->fill < 0 && (r = gz_take(gz)) < 0)
		goto out;
	if ((r = gz_submit(gz, true)) < 0)
		goto out;
	pthread_mutex_lock(&gz->mu);
	while (!gz->ended && !gz->err)
		pthread_cond_wait(&gz->cv, &gz->mu);
	r = gz->err;
	pthread_mutex_unlock(&gz->mu);
out:
	gz_stop(gz, r < 0);
	return r;
}

void trace_gzip_free(struct trace_gzip *gz)
{
	if (!gz)
		return;
	if (gz->sync_ready) {
		if (gz->started) /* a failed render: end the workers, writing nothing more */
			gz_stop(gz, true);
		pthread_cond_destroy(&gz->cv);
		pthread_mutex_destroy(&gz->mu);
	}
	for (unsigned w = 0; w <= TRACE_GZ_WORKERS_MAX; w++)
		if (gz->z_ready[w])
			deflateEnd(&gz->z[w]);
	for (unsigned i = 0; i < TRACE_GZ_SLOTS; i++) {
		free(gz->slots[i].in);
		free(gz->slots[i].dict);
		free(gz->slots[i].out);
	}
	free(gz);
}
