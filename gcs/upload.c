/*
 * gcs/upload.c - writes: create() spools into an unlinked temporary file
 * ($TMPDIR or /tmp); flush()/commit() upload it (media upload up to
 * resumable_threshold, else a resumable session in upload_chunk pieces that
 * resumes from the committed offset after a failed chunk).
 *
 * Every upload carries ifGenerationMatch (0 for a new object, else the
 * generation it replaces), which makes it safe to retry and makes
 * XPROFS_STORE_EXCL atomic (412 -> -EEXIST). A non-exclusive writer that
 * loses the precondition re-reads the generation and tries again (last
 * writer wins).
 *
 * An answer that is lost is not a failure before GCS was asked: a final
 * resumable chunk whose 2xx body cannot be read queries the session
 * (an empty PUT with "Content-Range: bytes * /N", as Google's clients do), and
 * an upload whose retry met its own ifGenerationMatch (412 after the request
 * went out twice), or whose session cannot tell, compares the stored
 * object's generation, size and CRC-32C with the spool (upload_is_ours()):
 * close() succeeds exactly when the object stored is ours.
 *
 * Limits: a resumable upload gives up after RESUME_MAX failed chunks; a
 * session URI on another origin than the endpoint is refused (it would get
 * our Authorization header).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gcs-internal.h"

#define RESUME_MAX 20 /* failed chunks before a resumable upload gives up */

/* @obj's metadata into @resp (*@found false when absent), asked from GCS itself. */
int gcs_object_meta(struct gcs_store *s, const char *obj, struct xprofs_buf *resp, bool *found)
{
	struct gcs_req rq = {.kind = GCS_REQ_OTHER, .method = "GET", .idempotent = true};
	struct xprofs_buf url;
	int r;

	xprofs_buf_init(&url, GCS_URL_MAX);
	*found = false;
	if ((r = gcs_url_object(s, &url, "storage/v1", obj)) < 0)
		goto out;
	rq.url = url.data;
	rq.resp = resp;
	r = gcs_http_do(&s->http, &rq);
	if (r < 0 || rq.status == 404)
		goto out;
	if (rq.status != 200) {
		r = gcs_status_errno(&rq, obj);
		goto out;
	}
	*found = true;
out:
	xprofs_buf_deinit(&url);
	return r;
}

/* The current generation of @obj (0 when absent), asked from GCS itself. */
int gcs_object_generation(struct gcs_store *s, const char *obj, uint64_t *gen)
{
	struct xprofs_store_stat st;
	struct xprofs_buf resp;
	bool found;
	int r;

	xprofs_buf_init(&resp, GCS_SMALL_MAX);
	*gen = 0;
	r = gcs_object_meta(s, obj, &resp, &found);
	if (r == 0 && found) {
		r = gcs_object_parse(resp.data ? resp.data : "", resp.len, &st, NULL);
		if (r == 0)
			*gen = st.generation;
	}
	xprofs_buf_deinit(&resp);
	return r;
}

/* CRC-32C (Castagnoli, reflected 0x82F63B78) of @n bytes at @p, continuing @crc. */
static uint32_t crc32c(uint32_t crc, const uint8_t *p, size_t n)
{
	unsigned k;

	crc = ~crc;
	while (n--) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
	}
	return ~crc;
}

/* GCS's "crc32c" field for the first @size bytes of @fd: base64 of the big-endian CRC. */
static int spool_crc32c(int fd, uint64_t size, char out[9])
{
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	uint8_t buf[64 * 1024], be[4];
	uint32_t crc = 0, v;
	uint64_t off = 0;

	while (off < size) {
		size_t n = size - off < sizeof(buf) ? (size_t)(size - off) : sizeof(buf);
		ssize_t k = xprofs_pread_full(fd, buf, n, off);

		if (k != (ssize_t)n)
			return k < 0 ? (int)k : -EIO;
		crc = crc32c(crc, buf, n);
		off += n;
	}
	be[0] = (uint8_t)(crc >> 24);
	be[1] = (uint8_t)(crc >> 16);
	be[2] = (uint8_t)(crc >> 8);
	be[3] = (uint8_t)crc;
	v = (uint32_t)be[0] << 16 | (uint32_t)be[1] << 8 | be[2];
	out[0] = b64[v >> 18 & 63];
	out[1] = b64[v >> 12 & 63];
	out[2] = b64[v >> 6 & 63];
	out[3] = b64[v & 63];
	out[4] = b64[be[3] >> 2];
	out[5] = b64[(be[3] & 3) << 4];
	out[6] = out[7] = '=';
	out[8] = '\0';
	return 0;
}

/*
 * After an upload whose answer was lost, or whose retry met its own
 * precondition (412: the first attempt did store it), whether the object GCS
 * now holds is @w's spool: a new generation (not the one we replaced) of
 * @size bytes with our CRC-32C. 1 (and *@st) when it is, 0 when not, -errno.
 */
static int upload_is_ours(struct gcs_store *s, struct gcs_writer *w, uint64_t size,
			  struct xprofs_store_stat *st)
{
	struct xprofs_buf resp;
	char ours[9], *theirs = NULL;
	bool found;
	int r;

	xprofs_buf_init(&resp, GCS_SMALL_MAX);
	r = gcs_object_meta(s, w->obj, &resp, &found);
	if (r < 0 || !found)
		goto out;
	r = gcs_object_parse(resp.data, resp.len, st, NULL);
	if (r < 0 || st->size != size || st->generation == w->if_gen)
		goto out;
	r = gcs_json_string(resp.data, resp.len, "crc32c", &theirs);
	if (r < 0)
		goto out;
	r = spool_crc32c(w->fd, size, ours);
	if (r == 0)
		r = strcmp(ours, theirs) == 0;
	xprofs_info("gcs: upload of %s: answer lost; the stored object %s ours", w->obj,
		    r == 1 ? "is" : "is not");
out:
	free(theirs);
	xprofs_buf_deinit(&resp);
	return r == -ENOENT ? 0 : r;
}

/* @url = the upload endpoint for @w's object, with uploadType=@type and its precondition. */
static int upload_url(struct gcs_store *s, struct gcs_writer *w, const char *type,
		      struct xprofs_buf *url)
{
	int r;

	if ((r = gcs_url_object(s, url, "upload/storage/v1", NULL)) < 0 ||
	    (r = gcs_url_param(url, "uploadType", type)) < 0 ||
	    (r = gcs_url_param(url, "name", w->obj)) < 0)
		return r;
	return gcs_url_param_u64(url, "ifGenerationMatch", w->if_gen);
}

/* The answer to an upload's first request: 412 is -EEXIST (the caller decides what it means). */
static int upload_status(const struct gcs_writer *w, const struct gcs_req *rq)
{
	if (rq->status == 412)
		return -EEXIST;
	if (rq->status != 200 && rq->status != 201)
		return gcs_status_errno(rq, w->obj);
	return 0;
}

static int upload_media(struct gcs_store *s, struct gcs_writer *w, uint64_t size,
			struct xprofs_store_stat *st)
{
	struct gcs_req rq = {.kind = GCS_REQ_UPLOAD,
			     .method = "POST",
			     .idempotent = true,
			     .send_body = true,
			     .body_fd = w->fd,
			     .body_len = size};
	struct xprofs_buf url, resp;
	int r;

	xprofs_buf_init(&url, GCS_URL_MAX);
	xprofs_buf_init(&resp, GCS_SMALL_MAX);
	if ((r = upload_url(s, w, "media", &url)) < 0)
		goto out;
	rq.url = url.data;
	rq.headers[0] = "Content-Type: application/octet-stream";
	rq.resp = &resp;
	r = gcs_http_do(&s->http, &rq);
	if (r == 0)
		r = upload_status(w, &rq);
	if (r == 0)
		r = gcs_object_parse(resp.data ? resp.data : "", resp.len, st, NULL);
	/* sent more than once: a 412 may be our own first attempt's object */
	if ((r == -EEXIST && rq.sends > 1) || r == -EBADMSG) {
		int ours = upload_is_ours(s, w, size, st);

		if (ours != 0)
			r = ours == 1 ? 0 : ours;
	}
out:
	xprofs_buf_deinit(&resp);
	xprofs_buf_deinit(&url);
	return r;
}

/* Ask a resumable session how much it has (*@committed), or whether it is done (1). */
static int resumable_query(struct gcs_store *s, const char *session, uint64_t size,
			   uint64_t *committed, struct xprofs_store_stat *st)
{
	struct gcs_req rq = {.kind = GCS_REQ_UPLOAD,
			     .method = "PUT",
			     .idempotent = true,
			     .send_body = true,
			     .body = "",
			     .body_len = 0,
			     .url = session};
	struct xprofs_buf resp;
	char cr[64];
	int r;

	xprofs_buf_init(&resp, GCS_SMALL_MAX);
	snprintf(cr, sizeof(cr), "Content-Range: bytes */%llu", (unsigned long long)size);
	rq.headers[0] = cr;
	rq.resp = &resp;
	r = gcs_http_do(&s->http, &rq);
	if (r < 0)
		goto out;
	if (rq.status == 308) {
		r = gcs_range_parse(rq.range, committed);
		if (r == 0 && *committed > size)
			r = -EPROTO;
	} else if (rq.status == 200 || rq.status == 201) {
		r = gcs_object_parse(resp.data ? resp.data : "", resp.len, st, NULL);
		if (r == 0)
			r = 1;
	} else {
		r = rq.status == 412 ? -EEXIST : gcs_status_errno(&rq, "resumable upload session");
	}
out:
	xprofs_buf_deinit(&resp);
	return r;
}

/*
 * Start a resumable session for @size bytes of @w. *@session: the session
 * URI; caller owns (free()). It must be on the endpoint's origin: it gets
 * our Authorization header, which must never go elsewhere.
 */
static int resumable_start(struct gcs_store *s, struct gcs_writer *w, uint64_t size, char **session)
{
	struct gcs_req rq = GCS_REQ_POST_EMPTY_JSON(GCS_REQ_UPLOAD);
	struct xprofs_buf url;
	char len_hdr[64];
	int r;

	xprofs_buf_init(&url, GCS_URL_MAX);
	if ((r = upload_url(s, w, "resumable", &url)) < 0)
		goto out;
	snprintf(len_hdr, sizeof(len_hdr), "X-Upload-Content-Length: %llu",
		 (unsigned long long)size);
	rq.url = url.data;
	rq.headers[0] = "Content-Type: application/json; charset=UTF-8";
	rq.headers[1] = "X-Upload-Content-Type: application/octet-stream";
	rq.headers[2] = len_hdr;
	r = gcs_http_do(&s->http, &rq);
	if (r == 0)
		r = upload_status(w, &rq);
	if (r < 0)
		goto out;
	if (!gcs_same_origin(s->endpoint, rq.location)) {
		xprofs_err("gcs: resumable upload of %s: session URI '%.80s' is not on %s", w->obj,
			   rq.location, s->endpoint);
		r = -EPROTO;
		goto out;
	}
	*session = strdup(rq.location);
	if (!*session)
		r = -ENOMEM;
out:
	xprofs_buf_deinit(&url);
	return r;
}

/* PUT the chunk [@off, @off+@len) of @size bytes of @w to @session; answers in @pq and @resp. */
static int resumable_put(struct gcs_store *s, struct gcs_writer *w, const char *session,
			 uint64_t off, uint64_t len, uint64_t size, struct gcs_req *pq,
			 struct xprofs_buf *resp)
{
	char cr[96];

	/* a chunk is not blindly retried: after a failure we ask what arrived */
	*pq = (struct gcs_req){.kind = GCS_REQ_UPLOAD,
			       .method = "PUT",
			       .url = session,
			       .send_body = true,
			       .body_fd = w->fd,
			       .body_off = off,
			       .body_len = len};
	if (size == 0)
		snprintf(cr, sizeof(cr), "Content-Range: bytes */0");
	else
		snprintf(cr, sizeof(cr), "Content-Range: bytes %llu-%llu/%llu",
			 (unsigned long long)off, (unsigned long long)(off + len - 1),
			 (unsigned long long)size);
	pq->headers[0] = cr;
	pq->resp = resp;
	return gcs_http_do(&s->http, pq);
}

static int upload_resumable(struct gcs_store *s, struct gcs_writer *w, uint64_t size,
			    struct xprofs_store_stat *st)
{
	struct xprofs_buf resp;
	char *session = NULL;
	uint64_t off = 0, chunk = s->o.upload_chunk;
	unsigned failures = 0;
	bool sent_last = false;
	int r;

	xprofs_buf_init(&resp, GCS_SMALL_MAX);
	r = resumable_start(s, w, size, &session);
	if (r < 0)
		goto out;
	for (;;) {
		struct gcs_req pq;
		uint64_t len = size - off < chunk ? size - off : chunk;

		r = resumable_put(s, w, session, off, len, size, &pq, &resp);
		sent_last = sent_last || off + len == size;
		if (r == 0 && (pq.status == 200 || pq.status == 201)) {
			r = gcs_object_parse(resp.data ? resp.data : "", resp.len, st, NULL);
			if (r == 0)
				goto out;
			/* stored, but the answer is unreadable: ask the session (below) */
		}
		if (r == 0 && pq.status == 308) {
			uint64_t committed;

			r = gcs_range_parse(pq.range, &committed);
			if (r < 0 || committed < off || committed > size) {
				r = -EPROTO;
				goto out;
			}
			if (committed == off && len > 0 && ++failures > RESUME_MAX) {
				r = -EIO;
				goto out;
			}
			off = committed;
			continue;
		}
		if (r == 0 && pq.status == 412) {
			r = -EEXIST;
			goto out;
		}
		if (r == 0 && !gcs_retryable(pq.status, 0)) {
			r = gcs_status_errno(&pq, w->obj);
			goto out;
		}
		/* a failed chunk: resume from what the session says it has */
		if (++failures > RESUME_MAX) {
			r = r < 0 ? r : -EIO;
			goto out;
		}
		atomic_fetch_add(&s->ctr.retries, 1);
		r = resumable_query(s, session, size, &off, st);
		if (r == 1) {
			r = 0;
			goto out;
		}
		if (r < 0)
			goto out;
	}
out:
	if (r < 0 && r != -EEXIST && sent_last) {
		/* the session is gone or will not say: the object tells whether we are done */
		int ours = upload_is_ours(s, w, size, st);

		if (ours != 0)
			r = ours == 1 ? 0 : ours;
	}
	if (r == 0 && st->size != size) {
		xprofs_err("gcs: upload of %s finished with %llu of %llu bytes", w->obj,
			   (unsigned long long)st->size, (unsigned long long)size);
		r = -EIO;
	}
	free(session);
	xprofs_buf_deinit(&resp);
	return r;
}

/* Upload @size bytes of @w's spool: a media upload, or a resumable one above resumable_threshold.
 */
int gcs_upload(struct gcs_store *s, struct gcs_writer *w, uint64_t size,
	       struct xprofs_store_stat *st)
{
	return size > s->o.resumable_threshold ? upload_resumable(s, w, size, st)
					       : upload_media(s, w, size, st);
}

/* w->lock held. Upload the spooled content and publish it in the tree. */
static int writer_upload(struct gcs_writer *w)
{
	struct gcs_store *s = w->s;
	struct xprofs_store_stat st = {0};
	unsigned tries = 0;
	int r;

	for (;;) {
		r = gcs_upload(s, w, w->size, &st);
		if (r != -EEXIST || w->excl || ++tries > 3)
			break;
		/* someone else replaced the object since we looked: last writer wins */
		r = gcs_object_generation(s, w->obj, &w->if_gen);
		if (r < 0)
			break;
	}
	if (r < 0) {
		if (r != -EEXIST)
			xprofs_err("gcs: upload of gs://%s/%s failed: %s", s->bucket, w->obj,
				   strerror(-r));
		return gcs_data_errno(r, s->bucket, w->obj);
	}
	if (st.size != w->size) {
		xprofs_err("gcs: upload of gs://%s/%s stored %llu of %llu bytes", s->bucket, w->obj,
			   (unsigned long long)st.size, (unsigned long long)w->size);
		return -EIO;
	}
	w->if_gen = st.generation;
	w->excl = false; /* it is ours now: later flushes replace our own version */
	w->dirty = false;
	st.type = XPROFS_STORE_FILE;
	r = gcs_ns_apply(s, GCS_J_ADD_FILE, w->path, &st);
	return r == -EEXIST ? 0 : r;
}

int gcs_spool_open(struct gcs_store *s)
{
	return xprofs_tmpfile(s->tmpdir, "xprofs-gcs");
}

/* Copy the pinned version of @obj into @fd (for a non-truncating create). */
int gcs_prefill(struct gcs_store *s, const char *obj, const struct xprofs_store_stat *st, int fd)
{
	size_t bufsz = 8u << 20;
	uint8_t *buf = malloc(bufsz);
	uint64_t off;
	int r = 0;

	if (!buf)
		return -ENOMEM;
	for (off = 0; off < st->size && r == 0; off += bufsz) {
		size_t n = st->size - off < bufsz ? (size_t)(st->size - off) : bufsz;

		r = gcs_fetch_range(s, obj, st->generation, st->size, off, n, buf, NULL);
		if (r == 0 && pwrite(fd, buf, n, (off_t)off) != (ssize_t)n)
			r = -EIO;
	}
	free(buf);
	return r;
}

int gcs_create(struct xprofs_store *base, const char *path, unsigned flags,
	       struct xprofs_store_writer **out)
{
	struct gcs_store *s = (struct gcs_store *)base;
	struct xprofs_store_stat st;
	struct gcs_writer *w = NULL;
	bool exists;
	int r;

	if (s->o.read_only)
		return -EROFS;
	r = gcs_ns_stat(s, path, &st);
	if (r < 0 && r != -ENOENT)
		return r;
	exists = r == 0;
	if (exists && st.type == XPROFS_STORE_DIR)
		return -EISDIR;
	if (exists && (flags & XPROFS_STORE_EXCL))
		return -EEXIST;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->fd = -1;
	w->base.store = base;
	w->s = s;
	w->path = strdup(path);
	w->obj = gcs_object_name(s, path, "");
	if (!w->path || !w->obj) {
		r = w->path ? -ENAMETOOLONG : -ENOMEM;
		goto err;
	}
	w->fd = gcs_spool_open(s);
	if (w->fd < 0) {
		r = w->fd;
		goto err;
	}
	w->excl = flags & XPROFS_STORE_EXCL;
	w->if_gen = exists ? st.generation : 0;
	w->dirty = true; /* even an empty new file must become an object */
	if (exists && !(flags & XPROFS_STORE_TRUNC)) {
		r = gcs_prefill(s, w->obj, &st, w->fd);
		if (r < 0)
			goto err;
		w->size = st.size;
		w->dirty = false;
	}
	pthread_mutex_init(&w->lock, NULL);
	w->mtime_ns = xprofs_now_ns();
	pthread_mutex_lock(&s->w_lock);
	gcs_list_push(&s->writers, &w->link);
	pthread_mutex_unlock(&s->w_lock);
	*out = &w->base;
	return 0;
err:
	if (w->fd >= 0)
		close(w->fd);
	free(w->obj);
	free(w->path);
	free(w);
	return r;
}

ssize_t gcs_write(struct xprofs_store_writer *base, const void *buf, size_t n, uint64_t off)
{
	struct gcs_writer *w = (struct gcs_writer *)base;
	ssize_t k;

	pthread_mutex_lock(&w->lock);
	k = pwrite(w->fd, buf, n, (off_t)off);
	if (k < 0) {
		k = -errno;
	} else {
		if (off + (uint64_t)k > w->size)
			w->size = off + (uint64_t)k;
		w->dirty = true;
		w->mtime_ns = xprofs_now_ns();
	}
	pthread_mutex_unlock(&w->lock);
	return k;
}

ssize_t gcs_wread(struct xprofs_store_writer *base, void *buf, size_t n, uint64_t off)
{
	struct gcs_writer *w = (struct gcs_writer *)base;
	ssize_t k;

	pthread_mutex_lock(&w->lock);
	if (off >= w->size)
		k = 0;
	else
		k = xprofs_pread_full(w->fd, buf, n < w->size - off ? n : (size_t)(w->size - off),
				      off);
	pthread_mutex_unlock(&w->lock);
	return k;
}

int gcs_truncate(struct xprofs_store_writer *base, uint64_t size)
{
	struct gcs_writer *w = (struct gcs_writer *)base;
	int r = 0;

	pthread_mutex_lock(&w->lock);
	if (ftruncate(w->fd, (off_t)size) < 0) {
		r = -errno;
	} else {
		w->size = size;
		w->dirty = true;
	}
	pthread_mutex_unlock(&w->lock);
	return r;
}

int gcs_flush(struct xprofs_store_writer *base)
{
	struct gcs_writer *w = (struct gcs_writer *)base;
	int r = 0;

	pthread_mutex_lock(&w->lock);
	if (w->dirty)
		r = writer_upload(w);
	pthread_mutex_unlock(&w->lock);
	return r;
}

static void writer_free(struct gcs_writer *w)
{
	struct gcs_store *s = w->s;

	pthread_mutex_lock(&s->w_lock);
	gcs_list_del(&s->writers, &w->link);
	pthread_mutex_unlock(&s->w_lock);
	pthread_mutex_destroy(&w->lock);
	close(w->fd);
	free(w->obj);
	free(w->path);
	free(w);
}

int gcs_commit(struct xprofs_store_writer *base)
{
	int r = gcs_flush(base);

	writer_free((struct gcs_writer *)base);
	return r;
}

void gcs_abort(struct xprofs_store_writer *base)
{
	writer_free((struct gcs_writer *)base);
}
