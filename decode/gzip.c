/*
 * gzip.c - trace.json.gz: a sink that gzip-compresses what a render writes
 * and passes the compressed bytes on to the caller's sink.
 *
 * Design: one zlib deflate stream (gzip header, level 1: JSON this
 * repetitive deflates about 2x faster than at the default level 6 for ~30%
 * more bytes) run by a worker thread, so the render and the compression
 * use two cores. The render's writes are copied into DEC_GZ_NBUF input
 * buffers of DEC_GZ_IN bytes; a full buffer is queued to the worker, which
 * deflates it and hands each full output buffer (DEC_GZ_BUF) to the next
 * sink; the render waits only when every buffer is queued. The next sink is
 * called from the worker alone, one call at a time, and the stream is
 * complete when dec_gzip_finish() returns (it joins the worker). Memory:
 * the zlib state (~270 KiB) plus DEC_GZ_NBUF * DEC_GZ_IN + DEC_GZ_BUF,
 * whatever the view's size. The bytes decompress to exactly the
 * uncompressed view. When no thread can be started, the same stream is
 * deflated on the caller's thread. Limits: none of its own.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "render-internal.h"

#define DEC_GZ_BUF ((size_t)128 << 10)
#define DEC_GZ_IN ((size_t)1 << 20)
#define DEC_GZ_NBUF 3
#define DEC_GZ_LEVEL 1

struct dec_gzip {
	z_stream z;
	const struct xprofs_sink *to; /* borrowed */
	unsigned char *buf;           /* owned, DEC_GZ_BUF bytes */
	bool ready;                   /* deflateInit2() succeeded */
	/* the worker */
	bool threaded;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned char *in[DEC_GZ_NBUF]; /* owned */
	size_t in_len[DEC_GZ_NBUF];
	unsigned head, queued; /* ring: in[head] is the worker's next, queued buffers from head */
	unsigned fill;         /* the buffer the render writes into (not queued) */
	bool finish;           /* no more input: end the stream */
	int err;               /* the worker's first error */
};

/* Deflate what is pending with @flush; full buffers go to the next sink. */
static int gz_pump(struct dec_gzip *gz, int flush)
{
	int zr, r;

	do {
		gz->z.next_out = gz->buf;
		gz->z.avail_out = (unsigned)DEC_GZ_BUF;
		zr = deflate(&gz->z, flush);
		if (zr == Z_STREAM_ERROR)
			return -EINVAL;
		size_t n = DEC_GZ_BUF - gz->z.avail_out;

		if (n && (r = gz->to->write(gz->to->arg, gz->buf, n)) < 0)
			return r;
	} while (gz->z.avail_out == 0 || (flush == Z_FINISH && zr != Z_STREAM_END));
	return 0;
}

/* Deflate @n bytes at @p (no flush). */
static int gz_deflate(struct dec_gzip *gz, const unsigned char *p, size_t n)
{
	int r;

	while (n) {
		unsigned k = n > UINT32_MAX ? UINT32_MAX : (unsigned)n;

		gz->z.next_in = (unsigned char *)(uintptr_t)p;
		gz->z.avail_in = k;
		if ((r = gz_pump(gz, Z_NO_FLUSH)) < 0)
			return r;
		p += k;
		n -= k;
	}
	return 0;
}

/* The worker: deflate queued buffers in order; end the stream on finish. */
static void *gz_worker(void *arg)
{
	struct dec_gzip *gz = arg;
	int r = 0;

	pthread_mutex_lock(&gz->mu);
	for (;;) {
		while (!gz->queued && !gz->finish)
			pthread_cond_wait(&gz->cv, &gz->mu);
		if (!gz->queued)
			break;
		unsigned i = gz->head;
		size_t n = gz->in_len[i];

		if (gz->err) /* failed or cancelled: drain without deflating */
			r = r ? r : gz->err;
		pthread_mutex_unlock(&gz->mu);
		if (r == 0)
			r = gz_deflate(gz, gz->in[i], n);
		pthread_mutex_lock(&gz->mu);
		if (r < 0 && !gz->err)
			gz->err = r;
		gz->head = (gz->head + 1) % DEC_GZ_NBUF;
		gz->queued--;
		pthread_cond_broadcast(&gz->cv);
	}
	if (gz->err)
		r = r ? r : gz->err;
	pthread_mutex_unlock(&gz->mu);
	if (r == 0) {
		gz->z.next_in = NULL;
		gz->z.avail_in = 0;
		r = gz_pump(gz, Z_FINISH);
	}
	pthread_mutex_lock(&gz->mu);
	if (r < 0 && !gz->err)
		gz->err = r;
	pthread_mutex_unlock(&gz->mu);
	return NULL;
}

static bool gz_start(struct dec_gzip *gz)
{
	for (int i = 0; i < DEC_GZ_NBUF; i++)
		if (!(gz->in[i] = malloc(DEC_GZ_IN)))
			return false;
	if (pthread_mutex_init(&gz->mu, NULL))
		return false;
	if (pthread_cond_init(&gz->cv, NULL)) {
		pthread_mutex_destroy(&gz->mu);
		return false;
	}
	if (pthread_create(&gz->th, NULL, gz_worker, gz)) {
		pthread_cond_destroy(&gz->cv);
		pthread_mutex_destroy(&gz->mu);
		return false;
	}
	gz->threaded = true;
	return true;
}

int dec_gzip_new(const struct xprofs_sink *to, struct dec_gzip **out)
{
	struct dec_gzip *gz = calloc(1, sizeof(*gz));
	int r;

	*out = NULL;
	if (!gz || !(gz->buf = malloc(DEC_GZ_BUF))) {
		free(gz);
		return -ENOMEM;
	}
	gz->to = to;
	/* windowBits 15 + 16: a gzip wrapper instead of zlib's */
	if ((r = dec_zlib_errno(deflateInit2(&gz->z, DEC_GZ_LEVEL, Z_DEFLATED, 15 + 16, 8,
					     Z_DEFAULT_STRATEGY))) < 0) {
		dec_gzip_free(gz);
		return r;
	}
	gz->ready = true;
	if (!gz_start(gz)) { /* compress on the caller's thread instead */
		for (int i = 0; i < DEC_GZ_NBUF; i++) {
			free(gz->in[i]);
			gz->in[i] = NULL;
		}
	}
	*out = gz;
	return 0;
}

/* Queue the fill buffer to the worker; wait for a free one. */
static int gz_queue(struct dec_gzip *gz)
{
	int r;

	pthread_mutex_lock(&gz->mu);
	gz->queued++;
	pthread_cond_broadcast(&gz->cv);
	while (gz->queued == DEC_GZ_NBUF && !gz->err)
		pthread_cond_wait(&gz->cv, &gz->mu);
	if ((r = gz->err) == 0) {
		gz->fill = (gz->head + gz->queued) % DEC_GZ_NBUF;
		gz->in_len[gz->fill] = 0;
	}
	pthread_mutex_unlock(&gz->mu);
	return r;
}

static int gz_write(void *arg, const void *p, size_t n)
{
	struct dec_gzip *gz = arg;
	const unsigned char *q = p;
	int r;

	if (!gz->threaded)
		return gz_deflate(gz, q, n);
	while (n) {
		size_t *len = &gz->in_len[gz->fill];
		size_t k = DEC_GZ_IN - *len < n ? DEC_GZ_IN - *len : n;

		memcpy(gz->in[gz->fill] + *len, q, k);
		*len += k;
		q += k;
		n -= k;
		if (*len == DEC_GZ_IN && (r = gz_queue(gz)) < 0)
			return r;
	}
	return 0;
}

struct xprofs_sink dec_gzip_sink(struct dec_gzip *gz)
{
	struct xprofs_sink s = {gz_write, gz};

	return s;
}

/*
 * Stop the worker: with @last the fill buffer is queued and the stream
 * ended after what is queued; else (a failed render) nothing more is
 * deflated.
 */
static int gz_stop(struct dec_gzip *gz, bool last)
{
	int r;

	if (!gz->threaded)
		return 0;
	pthread_mutex_lock(&gz->mu);
	if (!last && !gz->err)
		gz->err = -ECANCELED;
	else if (last && !gz->err && gz->in_len[gz->fill])
		gz->queued++;
	gz->finish = true;
	pthread_cond_broadcast(&gz->cv);
	pthread_mutex_unlock(&gz->mu);
	pthread_join(gz->th, NULL);
	pthread_cond_destroy(&gz->cv);
	pthread_mutex_destroy(&gz->mu);
	gz->threaded = false;
	r = gz->err;
	gz->err = 0;
	return r;
}

int dec_gzip_finish(struct dec_gzip *gz)
{
	if (gz->threaded)
		return gz_stop(gz, true); /* the worker ends the stream */
	gz->z.next_in = NULL;
	gz->z.avail_in = 0;
	return gz_pump(gz, Z_FINISH);
}

void dec_gzip_free(struct dec_gzip *gz)
{
	if (!gz)
		return;
	if (gz->threaded) /* a failed render: end the worker, deflating nothing more */
		(void)gz_stop(gz, false);
	if (gz->ready)
		deflateEnd(&gz->z);
	for (int i = 0; i < DEC_GZ_NBUF; i++)
		free(gz->in[i]);
	free(gz->buf);
	free(gz);
}
