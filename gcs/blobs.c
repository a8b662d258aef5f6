/*
 * gcs/blobs.c - a bucket prefix used as a store of whole immutable objects
 * addressed by name, outside any mounted tree: the mount's shared view cache
 * (docs/gcs.md "Shared view cache"). No listing, no block cache, no threads:
 * one GET per read, one media upload per write.
 *
 * Design: a struct xprofs_gcs_blobs wraps a struct gcs_store used only for
 * what url.c and http.c need (bucket, prefix, endpoint, billing project, the
 * credentials and an HTTP pool with its counters); its tree, threads and
 * block table are never set up. A read streams the object into the caller's
 * file (bounded by the caller's maximum), so memory does not grow with the
 * object. A write is a media upload with ifGenerationMatch=0 (or the one
 * generation a caller means to replace): a sound object is never replaced,
 * so concurrent writers of one name cannot clobber each other (412 = stored
 * already: -EEXIST) and the upload is safe to retry.
 * Retries, backoff and the errno mapping are http.c's.
 *
 * Limits: names are at most GCS_NAME_MAX bytes with the prefix; every
 * request is bounded by the retry deadline; error bodies by http.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth-internal.h"

struct xprofs_gcs_blobs {
	struct gcs_store s; /* only the URL fields, auth, http and ctr are used */
};

struct xprofs_gcs_blobs *xprofs_gcs_blobs_free(struct xprofs_gcs_blobs *b)
{
	if (!b)
		return NULL;
	gcs_http_deinit(&b->s.http);
	gcs_auth_free(b->s.auth);
	free(b->s.endpoint);
	free(b->s.user_project);
	free(b->s.prefix);
	free(b->s.bucket);
	free(b);
	return NULL;
}

/* probe() - one listing of at most one name under the prefix: is the bucket there and readable? */
static int probe(struct xprofs_gcs_blobs *b)
{
	struct gcs_req rq = {.kind = GCS_REQ_LIST, .method = "GET", .idempotent = true};
	struct xprofs_buf url, resp;
	int r;

	xprofs_buf_init(&url, GCS_URL_MAX);
	xprofs_buf_init(&resp, GCS_SMALL_MAX);
	if ((r = gcs_url_object(&b->s, &url, "storage/v1", NULL)) < 0 ||
	    (r = gcs_url_param(&url, "maxResults", "1")) < 0 ||
	    (r = gcs_url_param(&url, "fields", "kind")) < 0)
		goto out;
	if (b->s.prefix[0]) {
		char pfx[GCS_NAME_MAX + 2];

		snprintf(pfx, sizeof(pfx), "%s/", b->s.prefix);
		if ((r = gcs_url_param(&url, "prefix", pfx)) < 0)
			goto out;
	}
	rq.url = url.data;
	rq.resp = &resp;
	r = gcs_http_do(&b->s.http, &rq);
	if (r == 0 && rq.status != 200)
		r = gcs_status_errno(&rq, "shared cache listing");
	if (r < 0)
		xprofs_err("gcs: shared cache gs://%s/%s: %s%s%s", b->s.bucket, b->s.prefix,
			   strerror(-r), rq.errmsg[0] ? ": " : "", rq.errmsg);
out:
	xprofs_buf_deinit(&resp);
	xprofs_buf_deinit(&url);
	return r;
}

int xprofs_gcs_blobs_new(const char *url, const struct xprofs_gcs_options *o,
			 struct xprofs_gcs_blobs **out)
{
	static const struct xprofs_gcs_options defaults = {0};
	struct xprofs_gcs_blobs *b = calloc(1, sizeof(*b));
	unsigned deadline;
	int r;

	if (!b)
		return -ENOMEM;
	if (!o)
		o = &defaults;
	r = gcs_url_parse(url, &b->s.bucket, &b->s.prefix);
	if (r < 0) {
		xprofs_err("gcs: shared cache '%s' is not gs://BUCKET[/PREFIX]", url ? url : "");
		goto err;
	}
	b->s.endpoint = gcs_endpoint_resolve(o);
	if (!b->s.endpoint ||
	    (o->billing_project && !(b->s.user_project = strdup(o->billing_project)))) {
		r = -ENOMEM;
		goto err;
	}
	r = gcs_auth_new(o, &b->s.auth);
	if (r < 0) {
		xprofs_err("gcs: no usable credentials for the shared cache: %s", strerror(-r));
		goto err;
	}
	r = gcs_http_init(&b->s.http, b->s.auth, gcs_auth_header,
			  o->connections ? o->connections : 4, &b->s.ctr);
	if (r < 0)
		goto err;
	deadline = o->retry_deadline_s ? o->retry_deadline_s : 60;
	if (o->retry_initial_ms)
		b->s.http.retry_initial_ms = o->retry_initial_ms;
	if (o->stall_timeout_s)
		b->s.http.stall_timeout_s = o->stall_timeout_s;
	/* at mount, as for the source: a wrong bucket or no network fails in seconds */
	b->s.http.retry_deadline_s = deadline < 10 ? deadline : 10;
	r = probe(b);
	b->s.http.retry_deadline_s = deadline;
	if (r < 0)
		goto err;
	*out = b;
	return 0;
err:
	xprofs_gcs_blobs_free(b);
	return r;
}

/* object() - PREFIX/@name into @obj (GCS_NAME_MAX + 1 bytes); -ENAMETOOLONG. */
static int object(const struct xprofs_gcs_blobs *b, const char *name, char *obj)
{
	int k = snprintf(obj, GCS_NAME_MAX + 1, "%s%s%s", b->s.prefix, b->s.prefix[0] ? "/" : "",
			 name);

	return k < 0 || k > GCS_NAME_MAX ? -ENAMETOOLONG : 0;
}

int xprofs_gcs_blobs_get(struct xprofs_gcs_blobs *b, const char *name, int fd, uint64_t max,
			 uint64_t *len, uint64_t *gen)
{
	struct gcs_req rq = {.kind = GCS_REQ_GET,
			     .method = "GET",
			     .idempotent = true,
			     .to_fd = true,
			     .resp_fd = fd,
			     .resp_max = max};
	char obj[GCS_NAME_MAX + 1];
	struct xprofs_buf url;
	int r;

	xprofs_buf_init(&url, GCS_URL_MAX);
	if ((r = object(b, name, obj)) < 0 ||
	    (r = gcs_url_object(&b->s, &url, "storage/v1", obj)) < 0 ||
	    (r = gcs_url_param(&url, "alt", "media")) < 0)
		goto out;
	rq.url = url.data;
	/* the stored bytes, never transcoded */
	rq.headers[0] = "Accept-Encoding: gzip";
	r = gcs_http_do(&b->s.http, &rq);
	if (r == 0 && rq.status != 200)
		r = rq.status == 404 ? -ENOENT : gcs_status_errno(&rq, obj);
	if (r == 0) {
		*len = rq.fd_len;
		*gen = rq.goog_generation;
	}
out:
	xprofs_buf_deinit(&url);
	return r;
}

int xprofs_gcs_blobs_put(struct xprofs_gcs_blobs *b, const char *name, int fd, uint64_t len,
			 uint64_t if_gen)
{
	struct gcs_req rq = {.kind = GCS_REQ_UPLOAD,
			     .method = "POST",
			     .idempotent = true, /* ifGenerationMatch */
			     .send_body = true,
			     .body_fd = fd,
			     .body_len = len};
	char obj[GCS_NAME_MAX + 1];
	struct xprofs_buf url, resp;
	int r;

	xprofs_buf_init(&url, GCS_URL_MAX);
	xprofs_buf_init(&resp, GCS_SMALL_MAX);
	if ((r = object(b, name, obj)) < 0 ||
	    (r = gcs_url_object(&b->s, &url, "upload/storage/v1", NULL)) < 0 ||
	    (r = gcs_url_param(&url, "uploadType", "media")) < 0 ||
	    (r = gcs_url_param(&url, "name", obj)) < 0 ||
	    (r = gcs_url_param_u64(&url, "ifGenerationMatch", if_gen)) < 0 ||
	    (r = gcs_url_param(&url, "fields", "generation")) < 0)
		goto out;
	rq.url = url.data;
	rq.headers[0] = "Content-Type: application/octet-stream";
	rq.resp = &resp;
	r = gcs_http_do(&b->s.http, &rq);
	if (r == 0 && rq.status != 200 && rq.status != 201)
		r = gcs_status_errno(&rq, obj); /* 412 -> -EEXIST, 403 -> -EACCES */
out:
	xprofs_buf_deinit(&resp);
	xprofs_buf_deinit(&url);
	return r;
}

int xprofs_gcs_blobs_status_json(struct xprofs_gcs_blobs *b, struct xprofs_buf *out)
{
	int r;

	/* the kinds of request this client makes: no stale reads, no deletes */
	if ((r = xprofs_buf_adds(out, "{")) < 0 ||
	    (r = gcs_counters_json(&b->s.ctr,
				   GCS_CTR_KIND(GCS_REQ_LIST) | GCS_CTR_KIND(GCS_REQ_GET) |
					   GCS_CTR_KIND(GCS_REQ_UPLOAD),
				   out)) < 0)
		return r;
	return xprofs_buf_adds(out, "}");
}
