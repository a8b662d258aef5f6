/*
 * gzip.c - trace.json.gz: a sink that gzip-compresses what a render writes
 * and passes the compressed bytes on to the caller's sink.
 *
 * Design: one zlib deflate stream (gzip header, level 6, the default) and
 * one fixed output buffer; every write deflates into the buffer and hands
 * each full buffer to the next sink, so memory is the zlib state (~270 KiB)
 * plus DEC_GZ_BUF, whatever the view's size. The bytes decompress to exactly
 * the uncompressed view. Limits: none of its own.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "render-internal.h"

#define DEC_GZ_BUF ((size_t)128 << 10)

struct dec_gzip {
	z_stream z;
	const struct xprofs_sink *to; /* borrowed */
	unsigned char *buf;           /* owned, DEC_GZ_BUF bytes */
	bool ready;                   /* deflateInit2() succeeded */
};

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
	if ((r = dec_zlib_errno(deflateInit2(&gz->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
					     Z_DEFAULT_STRATEGY))) < 0) {
		dec_gzip_free(gz);
		return r;
	}
	gz->ready = true;
	*out = gz;
	return 0;
}

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

static int gz_write(void *arg, const void *p, size_t n)
{
	struct dec_gzip *gz = arg;
	const unsigned char *q = p;
	int r;

	while (n) {
		unsigned k = n > UINT32_MAX ? UINT32_MAX : (unsigned)n;

		gz->z.next_in = (unsigned char *)(uintptr_t)q;
		gz->z.avail_in = k;
		if ((r = gz_pump(gz, Z_NO_FLUSH)) < 0)
			return r;
		q += k;
		n -= k;
	}
	return 0;
}

struct xprofs_sink dec_gzip_sink(struct dec_gzip *gz)
{
	struct xprofs_sink s = {gz_write, gz};

	return s;
}

int dec_gzip_finish(struct dec_gzip *gz)
{
	gz->z.next_in = NULL;
	gz->z.avail_in = 0;
	return gz_pump(gz, Z_FINISH);
}

void dec_gzip_free(struct dec_gzip *gz)
{
	if (!gz)
		return;
	if (gz->ready)
		deflateEnd(&gz->z);
	free(gz->buf);
	free(gz);
}
