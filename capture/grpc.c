/*
 * grpc.c - a unary gRPC client over libcurl, just enough for
 * tensorflow.ProfilerService: HTTP/2 with prior knowledge (h2c, no TLS, as
 * the profiler server listens), one framed request message, the response
 * body pushed through struct capture_frames into a caller's consumer as it
 * arrives, grpc-status / grpc-message taken from the header callback
 * (trailers, or a trailers-only response).
 *
 * Why one connection per call: libcurl 7.88.1 cannot reuse an h2c
 * prior-knowledge connection (curl issue 10634). Deadlines are enforced both
 * locally (CURLOPT_TIMEOUT_MS) and announced to the server (grpc-timeout).
 * An optional cancel flag is polled from the progress callback, which
 * libcurl calls at least once a second even on an idle connection.
 *
 * capture_grpc_errno() is the module's single mapping from the foreign error
 * domains (gRPC status, CURLcode, HTTP status) to errno.
 */
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "capture-internal.h"

struct call_ctx {
	struct capture_call *call;
	struct capture_frames frames;
	const uint8_t *body; /* framed request */
	size_t body_len, body_off;
};

void capture_pct_decode(const char *in, size_t n, char *out, size_t cap)
{
	size_t o = 0;

	if (cap == 0)
		return;
	for (size_t i = 0; i < n && o + 1 < cap; i++) {
		int hi, lo;

		if (in[i] == '%' && i + 2 < n) {
			hi = in[i + 1];
			lo = in[i + 2];
			hi = hi >= '0' && hi <= '9'                     ? hi - '0'
			     : (hi | 0x20) >= 'a' && (hi | 0x20) <= 'f' ? (hi | 0x20) - 'a' + 10
									: -1;
			lo = lo >= '0' && lo <= '9'                     ? lo - '0'
			     : (lo | 0x20) >= 'a' && (lo | 0x20) <= 'f' ? (lo | 0x20) - 'a' + 10
									: -1;
			if (hi >= 0 && lo >= 0) {
				unsigned char ch = (unsigned char)(hi << 4 | lo);

				out[o++] = ch < 0x20 || ch == 0x7f ? ' ' : (char)ch;
				i += 2;
				continue;
			}
		}
		out[o++] = (unsigned char)in[i] < 0x20 ? ' ' : in[i];
	}
	out[o] = '\0';
}

void capture_grpc_timeout_header(uint64_t ms, char *out, size_t cap)
{
	/* The spec allows at most 8 digits: step up the unit until it fits. */
	if (ms <= 99999999)
		snprintf(out, cap, "grpc-timeout: %" PRIu64 "m", ms);
	else if (ms / 1000 <= 99999999)
		snprintf(out, cap, "grpc-timeout: %" PRIu64 "S", ms / 1000);
	else
		snprintf(out, cap, "grpc-timeout: %" PRIu64 "H",
			 ms / 3600000 > 99999999 ? 99999999 : ms / 3600000);
}

static size_t on_write(char *p, size_t size, size_t nmemb, void *arg)
{
	struct call_ctx *x = arg;
	size_t n = size * nmemb;
	int r;

	x->call->rx_bytes += n;
	r = capture_frames_feed(&x->frames, p, n);
	if (r < 0) {
		x->call->stream_err = r;
		return 0; /* makes libcurl stop with CURLE_WRITE_ERROR */
	}
	return n;
}

static size_t on_read(char *p, size_t size, size_t nmemb, void *arg)
{
	struct call_ctx *x = arg;
	size_t n = size * nmemb, left = x->body_len - x->body_off;

	if (n > left)
		n = left;
	memcpy(p, x->body + x->body_off, n);
	x->body_off += n;
	return n;
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *arg)
{
	struct call_ctx *x = arg;
	size_t n = size * nmemb, vlen;
	const char *v;

	while (n > 0 && (p[n - 1] == '\n' || p[n - 1] == '\r'))
		n--;
	if (n > 12 && strncasecmp(p, "grpc-status:", 12) == 0) {
		int st = 0;
		size_t i = 12;

		while (i < n && p[i] == ' ')
			i++;
		for (; i < n && p[i] >= '0' && p[i] <= '9' && st < 1000; i++)
			st = st * 10 + (p[i] - '0');
		x->call->grpc_status = st;
	} else if (n > 13 && strncasecmp(p, "grpc-message:", 13) == 0) {
		v = p + 13;
		vlen = n - 13;
		while (vlen > 0 && *v == ' ') {
			v++;
			vlen--;
		}
		capture_pct_decode(v, vlen, x->call->grpc_message, sizeof(x->call->grpc_message));
	}
	return size * nmemb;
}

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct call_ctx *x = arg;

	return x->call->cancel && atomic_load(x->call->cancel) ? 1 : 0;
}

int capture_grpc_errno(const struct capture_call *call, const char **what)
{
	static const struct {
		int err;
		const char *what;
	} grpc[] = {
		[GRPC_OK] = {0, "OK"},
		[GRPC_CANCELLED] = {ECANCELED, "CANCELLED"},
		[GRPC_UNKNOWN] = {EIO, "UNKNOWN"},
		[GRPC_INVALID_ARGUMENT] = {EINVAL, "INVALID_ARGUMENT"},
		[GRPC_DEADLINE_EXCEEDED] = {ETIMEDOUT, "DEADLINE_EXCEEDED"},
		[GRPC_NOT_FOUND] = {ENOENT, "NOT_FOUND"},
		[GRPC_ALREADY_EXISTS] = {EEXIST, "ALREADY_EXISTS"},
		[GRPC_PERMISSION_DENIED] = {EACCES, "PERMISSION_DENIED"},
		[GRPC_RESOURCE_EXHAUSTED] = {ENOSPC, "RESOURCE_EXHAUSTED"},
		[GRPC_FAILED_PRECONDITION] = {EPERM, "FAILED_PRECONDITION"},
		[GRPC_ABORTED] = {ECONNABORTED, "ABORTED"},
		[GRPC_OUT_OF_RANGE] = {ERANGE, "OUT_OF_RANGE"},
		[GRPC_UNIMPLEMENTED] = {ENOSYS,
					"UNIMPLEMENTED (the server does not offer this method)"},
		[GRPC_INTERNAL] = {EIO, "INTERNAL"},
		[GRPC_UNAVAILABLE] = {ECONNREFUSED, "UNAVAILABLE"},
		[GRPC_DATA_LOSS] = {EIO, "DATA_LOSS"},
		[GRPC_UNAUTHENTICATED] = {EACCES, "UNAUTHENTICATED"},
	};
	const char *dummy;

	if (!what)
		what = &dummy;
	if (call->stream_err < 0 &&
	    (call->curl_code == CURLE_WRITE_ERROR || call->curl_code == CURLE_OK)) {
		switch (call->stream_err) {
		case -EMSGSIZE:
			*what = "response message larger than the maximum";
			break;
		case -EPROTO:
			*what = "malformed gRPC response";
			break;
		case -EEXIST:
			*what = "the profile file already exists (not overwritten)";
			break;
		case -ENOSPC:
			*what = "no space left while storing the profile";
			break;
		default:
			*what = "storing the profile failed";
			break;
		}
		return call->stream_err;
	}
	switch (call->curl_code) {
	case CURLE_OK:
		break;
	case CURLE_COULDNT_CONNECT:
		*what = "UNAVAILABLE: connection refused (is the profiler server running?)";
		return -ECONNREFUSED;
	case CURLE_COULDNT_RESOLVE_HOST:
		*what = "UNAVAILABLE: cannot resolve the host name";
		return -EHOSTUNREACH;
	case CURLE_OPERATION_TIMEDOUT:
		*what = "DEADLINE_EXCEEDED: no complete answer before the deadline";
		return -ETIMEDOUT;
	case CURLE_ABORTED_BY_CALLBACK:
		*what = "CANCELLED: the capture was cancelled";
		return -ECANCELED;
	case CURLE_HTTP2_STREAM:
		/* early server rejections race the upload and land here */
		*what = "HTTP/2 stream reset (probably UNIMPLEMENTED by this server)";
		return -EPROTO;
	case CURLE_GOT_NOTHING:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_HTTP2:
	case CURLE_PARTIAL_FILE:
		*what = "UNAVAILABLE: the connection broke during the call";
		return -ECONNRESET;
	case CURLE_OUT_OF_MEMORY:
		*what = "out of memory";
		return -ENOMEM;
	default:
		*what = "transport error";
		return -EIO;
	}
	if (call->grpc_status < 0) {
		if (call->http_status != 200) {
			*what = "not a gRPC server (HTTP status is not 200)";
			return -EPROTO;
		}
		*what = "the response ended without grpc-status";
		return -EPROTO;
	}
	if (call->grpc_status >= (int)(sizeof(grpc) / sizeof(grpc[0]))) {
		*what = "unknown gRPC status";
		return -EIO;
	}
	if (call->grpc_status == GRPC_INTERNAL &&
	    strstr(call->grpc_message, "Another profiling session active")) {
		*what = "INTERNAL: another profiling session is active on that server";
		return -EBUSY;
	}
	*what = grpc[call->grpc_status].what;
	if (call->grpc_status == GRPC_OK && call->stream_err < 0)
		return call->stream_err;
	return -grpc[call->grpc_status].err;
}

int capture_grpc_unary(struct capture_call *call)
{
	struct call_ctx x = {.call = call};
	struct curl_slist *hdrs = NULL, *h;
	char url[CAPTURE_MAX_HOSTLEN + 128], tmo[64];
	uint8_t *body = NULL;
	CURL *curl = NULL;
	int r;

	call->grpc_status = -1;
	call->grpc_message[0] = '\0';
	call->curl_code = CURLE_OK;
	call->http_status = 0;
	call->stream_err = 0;
	call->rx_bytes = 0;

	if (call->req_len > UINT32_MAX || strlen(call->target) > CAPTURE_MAX_HOSTLEN) {
		r = -EINVAL;
		goto out;
	}
	body = malloc(call->req_len + 5);
	if (!body) {
		r = -ENOMEM;
		goto out;
	}
	body[0] = 0;
	body[1] = (uint8_t)(call->req_len >> 24);
	body[2] = (uint8_t)(call->req_len >> 16);
	body[3] = (uint8_t)(call->req_len >> 8);
	body[4] = (uint8_t)call->req_len;
	if (call->req_len)
		memcpy(body + 5, call->req, call->req_len);
	x.body = body;
	x.body_len = call->req_len + 5;
	capture_frames_init(&x.frames, call->ops, call->ops_arg, call->max_msg, 1);

	snprintf(url, sizeof(url), "http://%s%s", call->target, call->method);
	capture_grpc_timeout_header(call->deadline_ms, tmo, sizeof(tmo));
	const char *const hv[] = {"content-type: application/grpc", "te: trailers",
				  "Expect:", "user-agent: xprofs/" XPROFS_VERSION, tmo};
	for (size_t i = 0; i < sizeof(hv) / sizeof(hv[0]); i++) {
		h = curl_slist_append(hdrs, hv[i]);
		if (!h) {
			r = -ENOMEM;
			goto out;
		}
		hdrs = h;
	}

	curl = curl_easy_init();
	if (!curl) {
		r = -ENOMEM;
		goto out;
	}
	curl_easy_setopt(curl, CURLOPT_URL, url);
	curl_easy_setopt(curl, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
	curl_easy_setopt(curl, CURLOPT_POST, 1L);
	curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)x.body_len);
	curl_easy_setopt(curl, CURLOPT_READFUNCTION, on_read);
	curl_easy_setopt(curl, CURLOPT_READDATA, &x);
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, &x);
	curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(curl, CURLOPT_HEADERDATA, &x);
	curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &x);
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(curl, CURLOPT_FRESH_CONNECT, 1L);
	curl_easy_setopt(curl, CURLOPT_FORBID_REUSE, 1L);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long)call->deadline_ms);
	curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, (long)call->connect_ms);
	curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http");
	curl_easy_setopt(curl, CURLOPT_TCP_NODELAY, 1L);

	call->curl_code = (int)curl_easy_perform(curl);
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &call->http_status);
	if (call->curl_code == CURLE_OK && call->grpc_status == GRPC_OK) {
		int e = capture_frames_finish(&x.frames);

		if (e < 0)
			call->stream_err = e;
		else if (x.frames.n_msgs == 0)
			call->stream_err = -EPROTO; /* OK but no response message */
	}
	r = capture_grpc_errno(call, NULL);
	if (r < 0) {
		const char *what;

		(void)capture_grpc_errno(call, &what);
		xprofs_debug("capture: %s on %s: %s (curl %d, http %ld, grpc %d %s)", call->method,
			     call->target, what, call->curl_code, call->http_status,
			     call->grpc_status, call->grpc_message);
	}
out:
	curl_easy_cleanup(curl);
	curl_slist_free_all(hdrs);
	free(body);
	return r;
}
