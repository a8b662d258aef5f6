/*
 * gcs/http.c - the one HTTP path of the gcs module: a bounded pool of
 * libcurl easy handles, one request runner with Google's retry policy, and
 * the one mapping from HTTP status / CURLcode to -errno (gcs_http_errno(),
 * and on it what a failed answer or exhausted retries mean for a store
 * call: gcs_status_errno(), gcs_data_errno()). Storage requests
 * and token requests (auth.c, on a pool of its own without Authorization
 * header) both go through gcs_http_do(). The Authorization header comes
 * from a function the pool's owner hands it (gcs_auth_header() for the
 * store's pools): http.c calls nothing in auth.c, which sits above it.
 *
 * libcurl's global state is the program's: it calls curl_global_init()
 * once before starting threads; nothing here does.
 *
 * Design: each request borrows an idle easy handle from the pool (creating
 * one up to max_handles, else waiting), so connections are reused per handle
 * and the number of parallel connections is bounded. Handles are HTTP/1.1
 * (faster than HTTP/2 for bulk GCS reads), CURLOPT_NOSIGNAL (threaded
 * daemon), with a connect timeout and stall detection (LOW_SPEED). Bodies
 * are never decoded by curl (no CURLOPT_ACCEPT_ENCODING): ranged reads send
 * "Accept-Encoding: gzip" themselves so GCS returns the stored bytes.
 *
 * Whole-object GETs may stream into a file (to_fd, bounded by resp_max)
 * instead of a memory buffer; each attempt rewrites it from offset 0.
 * Ranged GETs write straight into the caller's buffer. A server answering
 * 200 with the whole object instead of 206 (the firebase emulator does) is
 * handled by skipping to the wanted offset, and the transfer is ended once
 * the range is in; a 200 that carries a Content-Range (storage-testbench's
 * broken-stream faults) is read like a 206. A 206 whose Content-Range does
 * not start at the wanted offset is a protocol error. A body shorter than
 * asked is a truncation and is retried like a reset.
 *
 * Retries: idempotent requests only; 408/429/5xx, connection failures,
 * timeouts, resets and truncated bodies; truncated exponential backoff with
 * equal jitter from retry_initial_ms, capped at retry_max_ms, until
 * retry_deadline_s has passed since the first attempt, or max_attempts were
 * made. A fail_fast pool does not retry a server that cannot be reached.
 * libcurl itself resends a request once when a reused connection dies
 * before any answer: request bodies can be rewound for that (a seek
 * callback; without one the resend fails with CURLE_SEND_FAIL_REWIND), and
 * each resend is counted as a retry (the pre-request callback runs per send).
 *
 * A ranged GET's bytes go to a buffer, to block buffers, or to a sink (a
 * streaming read, stream.c) that takes them in order and may block for flow
 * control. Bytes handed out (dst_frozen) are never asked for again: a retry's
 * Range starts after them, so a stream reset 200 MB in re-downloads nothing.
 * A request with a cancel flag ends with -ECANCELED within about a second of
 * it being set (libcurl's progress callback, the sliced backoff sleep).
 *
 * A 200 to a ranged GET without a Content-Range whose length is the
 * range's, not the object's (a range answered with the wrong status, and
 * nothing saying where it sits) is not another version: it is retried like
 * a truncation. ESTALE needs evidence of another version: a different
 * x-goog-generation, a Content-Range total (206 or 200) or a whole-object
 * 200 of another size.
 */
#include <curl/curl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "gcs-internal.h"

/*
 * What each CURLcode means: its errno, whether Google's retry policy retries
 * it, and whether it says the server could not be reached at all (a
 * fail_fast pool does not retry those). Codes not listed are -EIO, final.
 */
static const struct curl_meaning {
	int code;
	int err;
	bool retry;
	bool unreachable;
} curl_meanings[] = {
	{CURLE_COULDNT_RESOLVE_HOST, -EHOSTUNREACH, true, true}, /* transient DNS failures happen */
	{CURLE_COULDNT_RESOLVE_PROXY, -EHOSTUNREACH, false, true},
	{CURLE_COULDNT_CONNECT, -ECONNREFUSED, true, true},
	{CURLE_OPERATION_TIMEDOUT, -ETIMEDOUT, true, true},
	{CURLE_OUT_OF_MEMORY, -ENOMEM, false, false},
	{CURLE_SEND_ERROR, -ECONNRESET, true, false},
	{CURLE_RECV_ERROR, -ECONNRESET, true, false},
	{CURLE_GOT_NOTHING, -ECONNRESET, true, false},
	{CURLE_PARTIAL_FILE, -ECONNRESET, true, false},
	{CURLE_SEND_FAIL_REWIND, -ECONNRESET, true, false}, /* a resend that could not rewind */
	{CURLE_PEER_FAILED_VERIFICATION, -EACCES, false, false},
	{CURLE_SSL_CONNECT_ERROR, -EACCES, false, false},
	{CURLE_SSL_CACERT_BADFILE, -EACCES, false, false},
	{CURLE_URL_MALFORMAT, -EINVAL, false, false},
	{CURLE_UNSUPPORTED_PROTOCOL, -EINVAL, false, false},
};

static const struct curl_meaning *curl_meaning(int curl_code)
{
	static const struct curl_meaning other = {0, -EIO, false, false};
	size_t i;

	for (i = 0; i < sizeof(curl_meanings) / sizeof(curl_meanings[0]); i++)
		if (curl_meanings[i].code == curl_code)
			return &curl_meanings[i];
	return &other;
}

int gcs_http_errno(long http_status, int curl_code)
{
	if (curl_code != CURLE_OK)
		return curl_meaning(curl_code)->err;
	if (http_status >= 200 && http_status < 300)
		return 0;
	switch (http_status) {
	case 308: /* resumable upload: incomplete, not an error */
		return 0;
	case 304:
		return 0;
	case 400:
		return -EINVAL;
	case 401:
	case 403:
		return -EACCES;
	case 404:
	case 410:
		return -ENOENT;
	case 409:
	case 412:
		return -EEXIST;
	case 413:
		return -EFBIG;
	case 501:
		return -ENOTSUP;
	case 416:
		return -ERANGE;
	case 408:
	case 504:
		return -ETIMEDOUT;
	case 429:
		return -EAGAIN;
	case 0:
		return -EPROTO;
	default:
		return -EIO;
	}
}

int gcs_status_errno(const struct gcs_req *rq, const char *what)
{
	int r = gcs_http_errno(rq->status, 0);

	if (rq->status >= 400)
		xprofs_debug("gcs: %s: HTTP %ld %s", what, rq->status, rq->errmsg);
	if (r == 0 && (rq->status < 200 || rq->status >= 300))
		r = -EIO; /* 1xx/3xx we did not ask for */
	return r;
}

/*
 * Transport trouble is EIO for the application, as for a failing disk: what
 * it was goes to the log, once, here.
 */
int gcs_data_errno(int r, const char *bucket, const char *obj)
{
	switch (r) {
	case -ETIMEDOUT:
	case -ECONNRESET:
	case -ECONNREFUSED:
	case -EHOSTUNREACH:
	case -EAGAIN:
	case -EPROTO:
		xprofs_err("gcs: gs://%s/%s: %s after retries", bucket, obj, strerror(-r));
		return -EIO;
	default:
		return r;
	}
}

bool gcs_retryable(long http_status, int curl_code)
{
	if (curl_code != CURLE_OK)
		return curl_meaning(curl_code)->retry;
	/* 501 Not Implemented is a permanent answer (an emulator lacking a route) */
	return http_status == 408 || http_status == 429 ||
	       (http_status >= 500 && http_status <= 599 && http_status != 501);
}

unsigned gcs_backoff_ms(unsigned initial_ms, unsigned max_ms, unsigned attempt, unsigned *seed)
{
	uint64_t cap = initial_ms ? initial_ms : 1;
	unsigned i;

	for (i = 1; i < attempt && cap < max_ms; i++)
		cap *= 2;
	if (cap > max_ms)
		cap = max_ms;
	/* "equal jitter": at least half the step, so retries never hammer */
	return (unsigned)(cap / 2 + (uint64_t)rand_r(seed) % (cap / 2 + 1));
}

int gcs_http_init(struct gcs_http *h, struct gcs_auth *auth, gcs_auth_header_fn auth_header,
		  unsigned max_handles, struct gcs_counters *ctr)
{
	memset(h, 0, sizeof(*h));
	h->auth = auth;
	h->auth_header = auth_header;
	h->ctr = ctr;
	h->max_handles = max_handles ? max_handles : 8;
	h->retry_initial_ms = 100;
	h->retry_max_ms = 10000;
	h->retry_deadline_s = 60;
	h->connect_timeout_ms = 10000;
	h->stall_timeout_s = 30;
	h->idle = calloc(h->max_handles, sizeof(*h->idle));
	if (!h->idle)
		return -ENOMEM;
	pthread_mutex_init(&h->lock, NULL);
	pthread_cond_init(&h->cond, NULL);
	return 0;
}

void gcs_http_deinit(struct gcs_http *h)
{
	unsigned i;

	if (!h->idle)
		return;
	for (i = 0; i < h->n_idle; i++)
		curl_easy_cleanup(h->idle[i]);
	free(h->idle);
	h->idle = NULL;
	pthread_cond_destroy(&h->cond);
	pthread_mutex_destroy(&h->lock);
}

int gcs_counters_json(const struct gcs_counters *c, unsigned what, struct xprofs_buf *out)
{
	static const char *const kind_names[GCS_REQ_KINDS] = {
		[GCS_REQ_LIST] = "list",     [GCS_REQ_GET] = "get",     [GCS_REQ_UPLOAD] = "upload",
		[GCS_REQ_DELETE] = "delete", [GCS_REQ_OTHER] = "other",
	};
	const char *sep = "";
	int k, r;

	if ((r = xprofs_buf_adds(out, "\"requests\":{")) < 0)
		return r;
	for (k = 0; k < GCS_REQ_KINDS; k++) {
		if (!(what & GCS_CTR_KIND(k)))
			continue;
		r = xprofs_buf_printf(out, "%s\"%s\":%llu", sep, kind_names[k],
				      (unsigned long long)atomic_load(&c->requests[k]));
		if (r < 0)
			return r;
		sep = ",";
	}
	if ((r = xprofs_buf_printf(out, "},\"retries\":%llu,\"errors\":%llu",
				   (unsigned long long)atomic_load(&c->retries),
				   (unsigned long long)atomic_load(&c->errors))) < 0)
		return r;
	if ((what & GCS_CTR_STALE) &&
	    (r = xprofs_buf_printf(out, ",\"stale\":%llu",
				   (unsigned long long)atomic_load(&c->stale))) < 0)
		return r;
	return xprofs_buf_printf(out, ",\"bytes_downloaded\":%llu,\"bytes_uploaded\":%llu",
				 (unsigned long long)atomic_load(&c->bytes_down),
				 (unsigned long long)atomic_load(&c->bytes_up));
}

static CURL *handle_get(struct gcs_http *h)
{
	CURL *c = NULL;

	pthread_mutex_lock(&h->lock);
	for (;;) {
		if (h->n_idle > 0) {
			c = h->idle[--h->n_idle];
			break;
		}
		if (h->n_created < h->max_handles) {
			c = curl_easy_init();
			if (c)
				h->n_created++;
			break;
		}
		pthread_cond_wait(&h->cond, &h->lock);
	}
	pthread_mutex_unlock(&h->lock);
	return c;
}

static void handle_put(struct gcs_http *h, CURL *c, bool broken)
{
	pthread_mutex_lock(&h->lock);
	if (broken || h->n_idle >= h->max_handles) {
		curl_easy_cleanup(c);
		h->n_created--;
	} else {
		h->idle[h->n_idle++] = c;
	}
	pthread_cond_signal(&h->cond);
	pthread_mutex_unlock(&h->lock);
}

/* Per-attempt state shared with the curl callbacks. */
struct attempt {
	struct gcs_req *rq;
	CURL *c;
	uint64_t up_pos;       /* request body bytes sent */
	uint64_t down_pos;     /* response body bytes seen */
	struct xprofs_buf err; /* non-2xx body, for the error message */
	int cb_err;            /* -errno raised inside a callback */
	unsigned sends;        /* pre-request callbacks: >1 when libcurl resent on its own */
	bool partial_200;      /* a 200 carrying only the asked range: retried, not ESTALE */
	bool range_done;       /* every byte asked for is in: the rest was cut off on purpose */
	uint64_t body_first;   /* ranged GET: where the answer's body starts in the object */
	uint64_t first;        /* ranged GET: the first byte this attempt asks for */
	size_t want;           /* ... and how many (a retry resumes after dst_frozen) */
};

/* A ranged GET: into a buffer, into blocks, or into a streaming sink. */
static bool is_ranged(const struct gcs_req *rq)
{
	return rq->dst || rq->sink;
}

static void copy_header_value(char *dst, size_t dstn, const char *v, size_t n)
{
	while (n > 0 && (*v == ' ' || *v == '\t')) {
		v++;
		n--;
	}
	while (n > 0 && (v[n - 1] == '\r' || v[n - 1] == '\n' || v[n - 1] == ' '))
		n--;
	if (n >= dstn)
		n = dstn - 1;
	memcpy(dst, v, n);
	dst[n] = '\0';
}

static size_t on_header(char *p, size_t size, size_t nitems, void *arg)
{
	struct attempt *a = arg;
	struct gcs_req *rq = a->rq;
	size_t n = size * nitems;
	const char *colon = memchr(p, ':', n);
	size_t klen;
	char tmp[32];

	if (n >= 5 && memcmp(p, "HTTP/", 5) == 0) {
		/* a new response (e.g. after 100 Continue): forget the last one's headers */
		rq->content_range[0] = rq->range[0] = rq->location[0] = '\0';
		rq->goog_generation = 0;
		return n;
	}
	if (!colon)
		return n;
	klen = (size_t)(colon - p);
	if (klen == 13 && strncasecmp(p, "Content-Range", 13) == 0)
		copy_header_value(rq->content_range, sizeof(rq->content_range), colon + 1,
				  n - klen - 1);
	else if (klen == 5 && strncasecmp(p, "Range", 5) == 0)
		copy_header_value(rq->range, sizeof(rq->range), colon + 1, n - klen - 1);
	else if (klen == 8 && strncasecmp(p, "Location", 8) == 0)
		copy_header_value(rq->location, sizeof(rq->location), colon + 1, n - klen - 1);
	else if (klen == 17 && strncasecmp(p, "x-goog-generation", 17) == 0) {
		copy_header_value(tmp, sizeof(tmp), colon + 1, n - klen - 1);
		if (gcs_u64_parse(tmp, INT64_MAX, &rq->goog_generation) < 0)
			rq->goog_generation = 0;
	}
	return n;
}

/*
 * Before the first byte of a ranged GET is handed out: the answer must be the
 * pinned version (the same checks http_attempt() makes after the transfer,
 * early, since progress reports let callers use bytes before the end).
 */
static int dst_check(struct attempt *a, long status)
{
	struct gcs_req *rq = a->rq;
	curl_off_t cl = -1;
	uint64_t f, l, t;
	bool ranged;

	if (!rq->expect_generation)
		return 0;
	if (rq->goog_generation && rq->goog_generation != rq->expect_generation)
		return -ESTALE;
	/* a Content-Range's total is the object's size, whatever the status */
	ranged = gcs_content_range_parse(rq->content_range, &f, &l, &t) == 0;
	if (ranged && t != rq->expect_size)
		return -ESTALE;
	curl_easy_getinfo(a->c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
	if (status == 200 && !ranged && cl >= 0 && (uint64_t)cl != rq->expect_size) {
		if ((uint64_t)cl != a->want ||
		    (rq->goog_generation && rq->goog_generation != rq->expect_generation))
			return -ESTALE;
		a->partial_200 = true; /* our range under the wrong status: not a new version */
		return -EAGAIN;
	}
	return 0;
}

/*
 * Where the body of a ranged GET's answer starts in the object, into
 * @a->body_first. A 206 is at its Content-Range, which must start where this
 * attempt asked. A 200 with a Content-Range is a range answered with the
 * wrong status (storage-testbench does it for its broken-stream faults) and
 * is read like a 206, except that it may also start earlier (a whole object
 * that says so: its leading bytes are skipped). A 200 without one is the
 * whole object, from byte 0. -EPROTO for an answer that starts after the
 * first byte asked for (the bytes before it would never come).
 */
static int body_at(struct attempt *a, long status)
{
	uint64_t first, last, total;
	bool ranged = gcs_content_range_parse(a->rq->content_range, &first, &last, &total) == 0;

	if (status == 206 && (!ranged || first != a->first))
		return -EPROTO;
	if (ranged && first > a->first)
		return -EPROTO;
	a->body_first = ranged ? first : 0;
	return 0;
}

/*
 * @n bytes at @rel (relative to range_first) into the destination, skipping
 * frozen ones. 0, or the sink's -errno.
 */
static int dst_copy(struct gcs_req *rq, size_t rel, const char *p, size_t n)
{
	if (rel + n <= rq->dst_frozen)
		return 0;
	if (rel < rq->dst_frozen) {
		p += rq->dst_frozen - rel;
		n -= rq->dst_frozen - rel;
		rel = rq->dst_frozen;
	}
	if (rq->sink)
		return rq->sink(rq->sink_arg, rel, (const uint8_t *)p, n);
	if (!rq->dst_blocks) {
		memcpy(rq->dst + rel, p, n);
		return 0;
	}
	while (n > 0) {
		size_t bi = rel / rq->dst_block_size, bo = rel % rq->dst_block_size;
		size_t k = rq->dst_block_size - bo < n ? rq->dst_block_size - bo : n;

		memcpy(rq->dst_blocks[bi] + bo, p, k);
		p += k;
		rel += k;
		n -= k;
	}
	return 0;
}

static size_t on_body(char *p, size_t size, size_t nmemb, void *arg)
{
	struct attempt *a = arg;
	struct gcs_req *rq = a->rq;
	size_t n = size * nmemb;
	long status = 0;
	uint64_t start;
	size_t skip = 0, take;

	curl_easy_getinfo(a->c, CURLINFO_RESPONSE_CODE, &status);
	if (status < 200 || status >= 300) {
		/* keep what fits: it is only for the log */
		(void)!xprofs_buf_add(&a->err, p, n);
		return n;
	}
	if (!is_ranged(rq)) {
		if (rq->to_fd) {
			ssize_t put;

			if (a->down_pos + n > rq->resp_max) {
				a->cb_err = -EFBIG;
				return CURL_WRITEFUNC_ERROR;
			}
			put = pwrite(rq->resp_fd, p, n, (off_t)a->down_pos);
			if (put != (ssize_t)n) {
				a->cb_err = put < 0 ? -errno : -EIO;
				return CURL_WRITEFUNC_ERROR;
			}
		} else if (rq->resp) {
			a->cb_err = xprofs_buf_add(rq->resp, p, n);
			if (a->cb_err < 0)
				return CURL_WRITEFUNC_ERROR;
		}
		a->down_pos += n;
		return n;
	}
	/* ranged GET: where does this chunk sit in the object? */
	if (a->down_pos == 0 &&
	    ((a->cb_err = body_at(a, status)) < 0 || (a->cb_err = dst_check(a, status)) < 0))
		return CURL_WRITEFUNC_ERROR;
	start = a->body_first + a->down_pos;
	a->down_pos += n;
	if (start + n <= rq->range_first)
		return n; /* before the wanted range: skip */
	if (start < rq->range_first)
		skip = (size_t)(rq->range_first - start);
	start += skip;
	if (start - rq->range_first >= rq->dst_len) {
		/*
		 * Past it (a 200 with more than the range): every byte asked for
		 * is in, so end the transfer instead of downloading the rest of
		 * the object only to drop it.
		 */
		a->range_done = true;
		return CURL_WRITEFUNC_ERROR;
	}
	take = n - skip;
	if (take > rq->dst_len - (start - rq->range_first))
		take = (size_t)(rq->dst_len - (start - rq->range_first));
	if ((a->cb_err = dst_copy(rq, (size_t)(start - rq->range_first), p + skip, take)) < 0)
		return CURL_WRITEFUNC_ERROR;
	if (start - rq->range_first + take > rq->dst_got)
		rq->dst_got = (size_t)(start - rq->range_first + take);
	if ((rq->on_progress || rq->sink) && rq->dst_got > rq->dst_frozen) {
		if (rq->on_progress)
			rq->on_progress(rq->progress_arg, rq->dst_got);
		rq->dst_frozen = rq->dst_got; /* a retry resumes after these */
	}
	return n;
}

/* libcurl rewinds the request body before resending it on a fresh connection. */
static int on_seek(void *arg, curl_off_t off, int origin)
{
	struct attempt *a = arg;

	if (origin != SEEK_SET || off < 0 || (uint64_t)off > a->rq->body_len)
		return CURL_SEEKFUNC_CANTSEEK;
	a->up_pos = (uint64_t)off;
	return CURL_SEEKFUNC_OK;
}

/* Called before every send of the request, libcurl's own resends included. */
static int on_prereq(void *arg, char *conn_primary_ip, char *conn_local_ip, int conn_primary_port,
		     int conn_local_port)
{
	struct attempt *a = arg;

	(void)conn_primary_ip;
	(void)conn_local_ip;
	(void)conn_primary_port;
	(void)conn_local_port;
	a->sends++;
	return CURL_PREREQFUNC_OK;
}

/* libcurl calls this at least once a second, also while no byte moves. */
static int on_xferinfo(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	struct attempt *a = arg;

	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	(void)ulnow;
	if (!atomic_load(a->rq->cancel))
		return 0;
	a->cb_err = -ECANCELED;
	return 1; /* CURLE_ABORTED_BY_CALLBACK */
}

static size_t on_read(char *p, size_t size, size_t nmemb, void *arg)
{
	struct attempt *a = arg;
	struct gcs_req *rq = a->rq;
	size_t n = size * nmemb;
	uint64_t left = rq->body_len - a->up_pos;
	ssize_t got;

	if (n > left)
		n = (size_t)left;
	if (n == 0)
		return 0;
	if (rq->body) {
		memcpy(p, (const char *)rq->body + a->up_pos, n);
		got = (ssize_t)n;
	} else {
		got = xprofs_pread_full(rq->body_fd, p, n, rq->body_off + a->up_pos);
		if (got <= 0) {
			a->cb_err = got < 0 ? (int)got : -EIO;
			return CURL_READFUNC_ABORT;
		}
	}
	a->up_pos += (uint64_t)got;
	return (size_t)got;
}

static int add_header(struct curl_slist **l, const char *h)
{
	struct curl_slist *n = curl_slist_append(*l, h);

	if (!n)
		return -ENOMEM;
	*l = n;
	return 0;
}

static int build_headers(struct gcs_http *h, struct gcs_req *rq, struct curl_slist **out)
{
	struct curl_slist *l = NULL;
	struct xprofs_buf auth;
	unsigned i;
	int r;

	xprofs_buf_init(&auth, 64 * 1024);
	if (h->auth_header) {
		r = h->auth_header(h->auth, &auth);
		if (r < 0)
			goto out;
		while (auth.len > 0 &&
		       (auth.data[auth.len - 1] == '\n' || auth.data[auth.len - 1] == '\r'))
			auth.data[--auth.len] = '\0';
		if (auth.len > 0 && (r = add_header(&l, auth.data)) < 0)
			goto out;
	}
	/* no 100-continue round trip on uploads */
	if ((r = add_header(&l, "Expect:")) < 0)
		goto out;
	for (i = 0; i < sizeof(rq->headers) / sizeof(rq->headers[0]) && rq->headers[i]; i++)
		if ((r = add_header(&l, rq->headers[i])) < 0)
			goto out;
	*out = l;
	l = NULL;
	r = 0;
out:
	curl_slist_free_all(l);
	xprofs_buf_deinit(&auth);
	return r;
}

/* Point @c at @rq for one attempt: method, body, range, timeouts, callbacks into @a. */
static void setup_handle(struct gcs_http *h, struct gcs_req *rq, CURL *c, struct attempt *a,
			 struct curl_slist *hdrs, char *errbuf)
{
	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, rq->url);
	curl_easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)h->connect_timeout_ms);
	if (h->timeout_ms)
		curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)h->timeout_ms);
	if (h->no_proxy)
		curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, (long)h->stall_timeout_s);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, a);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, a);
	if (is_ranged(rq))
		/* object reads: fewer, larger recv()s and write callbacks than curl's 16 KiB default */
		curl_easy_setopt(c, CURLOPT_BUFFERSIZE, 512L * 1024);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "xprofs/" XPROFS_VERSION);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	if (strcmp(rq->method, "GET") == 0) {
		curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
	} else if (strcmp(rq->method, "PUT") == 0) {
		curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)rq->body_len);
	} else if (strcmp(rq->method, "POST") == 0) {
		curl_easy_setopt(c, CURLOPT_POST, 1L);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rq->body_len);
	} else {
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, rq->method);
	}
	if (rq->send_body) {
		curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(c, CURLOPT_READDATA, a);
		curl_easy_setopt(c, CURLOPT_SEEKFUNCTION, on_seek);
		curl_easy_setopt(c, CURLOPT_SEEKDATA, a);
	}
	curl_easy_setopt(c, CURLOPT_PREREQFUNCTION, on_prereq);
	curl_easy_setopt(c, CURLOPT_PREREQDATA, a);
	if (rq->cancel) {
		curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_xferinfo);
		curl_easy_setopt(c, CURLOPT_XFERINFODATA, a);
		curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	}
	if (is_ranged(rq)) {
		char range[96];

		snprintf(range, sizeof(range), "%llu-%llu", (unsigned long long)a->first,
			 (unsigned long long)(a->first + a->want - 1));
		curl_easy_setopt(c, CURLOPT_RANGE, range); /* curl copies it */
	}
}

/* One attempt: fills rq->status; returns 0 (*@curl_code says how it went), or -errno from a callback/setup. */
static int attempt_once(struct gcs_http *h, struct gcs_req *rq, CURL *c, int *curl_code,
			bool *truncated)
{
	struct attempt a = {.rq = rq, .c = c};
	struct curl_slist *hdrs = NULL;
	char errbuf[CURL_ERROR_SIZE] = "";
	curl_off_t cl = -1;
	CURLcode cc;
	int r;

	*truncated = false;
	xprofs_buf_init(&a.err, 64 * 1024);
	rq->status = 0;
	/* bytes already handed out are not asked for again */
	rq->dst_got = rq->dst_frozen;
	a.first = rq->range_first + rq->dst_frozen;
	a.want = rq->dst_len - rq->dst_frozen;
	rq->content_range[0] = rq->range[0] = rq->location[0] = rq->errmsg[0] = '\0';
	rq->goog_generation = 0;
	if (rq->resp)
		xprofs_buf_reset(rq->resp);
	r = build_headers(h, rq, &hdrs);
	if (r < 0)
		goto out;
	setup_handle(h, rq, c, &a, hdrs, errbuf);

	atomic_fetch_add(&h->ctr->requests[rq->kind], 1);
	cc = curl_easy_perform(c);
	if (a.range_done && cc == CURLE_WRITE_ERROR)
		cc = CURLE_OK; /* we ended it: the rest of the body was not wanted */
	*curl_code = (int)cc;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &rq->status);
	if (a.up_pos)
		atomic_fetch_add(&h->ctr->bytes_up, a.up_pos);
	if (a.down_pos)
		atomic_fetch_add(&h->ctr->bytes_down, a.down_pos);
	rq->fd_len = a.down_pos;
	rq->sends += a.sends ? a.sends : 1;
	if (a.sends > 1) {
		xprofs_debug("gcs: %s %s: resent %u time(s) by libcurl", rq->method, rq->url,
			     a.sends - 1);
		atomic_fetch_add(&h->ctr->retries, a.sends - 1);
	}
	if (a.partial_200) {
		xprofs_debug("gcs: %s %s: a 200 carrying only the range", rq->method, rq->url);
		*truncated = true;
		r = 0;
		goto out;
	}
	if (a.cb_err < 0) {
		r = a.cb_err;
		goto out;
	}
	if (cc != CURLE_OK) {
		snprintf(rq->errmsg, sizeof(rq->errmsg), "%s",
			 errbuf[0] ? errbuf : curl_easy_strerror(cc));
		xprofs_debug("gcs: %s %s: %s", rq->method, rq->url, rq->errmsg);
		r = 0;
		goto out;
	}
	if (rq->status >= 200 && rq->status < 300) {
		/* a server that ignored generation= may have served another version */
		r = dst_check(&a, rq->status);
		if (a.partial_200) {
			*truncated = true;
			r = 0;
			goto out;
		}
		if (r < 0)
			goto out;
		curl_easy_getinfo(c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
		if (cl >= 0 && (uint64_t)cl != a.down_pos && !a.range_done)
			*truncated = true;
		if (is_ranged(rq) && rq->dst_got < rq->dst_len)
			*truncated = true; /* the caller asked only for bytes that exist */
	} else if (a.err.len > 0) {
		gcs_error_message(a.err.data, a.err.len, rq->errmsg, sizeof(rq->errmsg));
	}
	r = 0;
out:
	curl_slist_free_all(hdrs);
	xprofs_buf_deinit(&a.err);
	return r;
}

/* Whether attempt @attempt's outcome is worth another attempt under @h's policy. */
static bool should_retry(struct gcs_http *h, const struct gcs_req *rq, int cc, bool truncated)
{
	if (truncated)
		return true;
	if (!gcs_retryable(rq->status, cc))
		return false;
	return !(h->fail_fast && cc != CURLE_OK && curl_meaning(cc)->unreachable);
}

/* Sleep the backoff before retry @attempt, never past @deadline: one last attempt right at it. */
static void backoff(struct gcs_http *h, const struct gcs_req *rq, unsigned attempt,
		    int64_t deadline, unsigned *seed, int cc, bool truncated)
{
	unsigned ms = gcs_backoff_ms(h->retry_initial_ms, h->retry_max_ms, attempt, seed);
	int64_t left_ms = (deadline - xprofs_mono_ns()) / 1000000;

	if (left_ms < (int64_t)ms)
		ms = left_ms > 0 ? (unsigned)left_ms : 0;
	xprofs_debug("gcs: %s %s: %s (status %ld), retry %u in %u ms", rq->method, rq->url,
		     cc          ? curl_easy_strerror((CURLcode)cc)
		     : truncated ? "truncated body"
				 : "server error",
		     rq->status, attempt, ms);
	atomic_fetch_add(&h->ctr->retries, 1);
	/* in slices, so a cancelled request does not sleep out a 10 s step */
	while (ms > 0 && !(rq->cancel && atomic_load(rq->cancel))) {
		unsigned step = ms < 100 ? ms : 100;

		xprofs_sleep_ms(step);
		ms -= step;
	}
}

int gcs_http_do(struct gcs_http *h, struct gcs_req *rq)
{
	int64_t deadline = xprofs_mono_ns() + (int64_t)h->retry_deadline_s * 1000000000LL;
	unsigned seed = (unsigned)xprofs_mono_ns() ^ (unsigned)(uintptr_t)rq;
	unsigned attempt = 0;
	CURL *c;
	int r;

	rq->sends = 0;
	for (;;) {
		int cc = 0;
		bool truncated = false;

		attempt++;
		if (rq->cancel && atomic_load(rq->cancel))
			return -ECANCELED;
		if (attempt > 1 && is_ranged(rq) && rq->dst_len && rq->dst_frozen >= rq->dst_len)
			return 0; /* every byte arrived before the failure: rq->status is that answer's */
		c = handle_get(h);
		if (!c)
			return -ENOMEM;
		r = attempt_once(h, rq, c, &cc, &truncated);
		handle_put(h, c, cc != CURLE_OK);
		if (r < 0) {
			if (r != -ECANCELED)
				atomic_fetch_add(&h->ctr->errors, 1);
			return r;
		}
		if (!should_retry(h, rq, cc, truncated)) {
			r = gcs_http_errno(cc == CURLE_OK ? 200 : 0, cc);
			if (r < 0 || (rq->status >= 400))
				atomic_fetch_add(&h->ctr->errors, 1);
			return r;
		}
		if (!rq->idempotent || xprofs_mono_ns() >= deadline ||
		    (h->max_attempts && attempt >= h->max_attempts)) {
			atomic_fetch_add(&h->ctr->errors, 1);
			if (cc != CURLE_OK)
				return gcs_http_errno(0, cc);
			if (truncated)
				return -EIO;
			return 0; /* a retryable status: the caller maps it */
		}
		backoff(h, rq, attempt, deadline, &seed, cc, truncated);
	}
}
