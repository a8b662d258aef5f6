/*
 * gcs/url.c - "gs://BUCKET[/PREFIX]" parsing, bucket-name validation and the
 * percent-encoding of object names and query values.
 *
 * Bucket names follow Google's published rules (3-63 chars, or up to 222
 * with dot-separated components of at most 63; [a-z0-9._-]; alphanumeric at
 * both ends; no IPv4 look-alikes; no "goog" prefix, no "google" inside), so a
 * typo fails at mount with -EINVAL instead of as a 400 later. Prefixes must be
 * clean store paths (no empty, "." or ".." components) because every object
 * below them becomes a path in the mount.
 */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "gcs-internal.h"

static bool is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

bool gcs_bucket_valid(const char *b, size_t n)
{
	size_t i, comp = 0, dots = 0, digits_dots = 0;

	if (n < 3 || n > 222)
		return false;
	if (!is_lower_alnum(b[0]) || !is_lower_alnum(b[n - 1]))
		return false;
	for (i = 0; i < n; i++) {
		char c = b[i];

		if (c == '.') {
			if (comp == 0)
				return false; /* ".." or a leading dot */
			comp = 0;
			dots++;
			digits_dots++;
			continue;
		}
		if (!is_lower_alnum(c) && c != '-' && c != '_')
			return false;
		if (c >= '0' && c <= '9')
			digits_dots++;
		if (++comp > 63)
			return false;
	}
	if (dots == 0 && n > 63)
		return false;
	if (dots == 3 && digits_dots == n)
		return false; /* looks like an IPv4 address */
	if (n >= 4 && memcmp(b, "goog", 4) == 0)
		return false;
	if (memmem(b, n, "google", 6))
		return false;
	return true;
}

int gcs_url_parse(const char *url, char **bucket, char **prefix)
{
	const char *p, *slash, *start, *end, *c;
	char *b = NULL, *pf = NULL;
	size_t blen;
	int r = -EINVAL;

	if (!url || !bucket || !prefix || strncmp(url, "gs://", 5) != 0)
		goto out;
	p = url + 5;
	slash = strchr(p, '/');
	blen = slash ? (size_t)(slash - p) : strlen(p);
	if (!gcs_bucket_valid(p, blen))
		goto out;
	start = slash ? slash : p + blen;
	while (*start == '/')
		start++;
	end = start + strlen(start);
	while (end > start && end[-1] == '/')
		end--;
	if ((size_t)(end - start) > GCS_NAME_MAX)
		goto out;
	/* every component non-empty and not "." / ".." */
	for (c = start; c < end;) {
		const char *e = memchr(c, '/', (size_t)(end - c));
		size_t len;

		if (!e)
			e = end;
		len = (size_t)(e - c);
		if (len == 0 || (len == 1 && c[0] == '.') ||
		    (len == 2 && c[0] == '.' && c[1] == '.'))
			goto out;
		c = e + 1;
	}
	b = strndup(p, blen);
	pf = strndup(start, (size_t)(end - start));
	if (!b || !pf) {
		r = -ENOMEM;
		goto out;
	}
	*bucket = b;
	*prefix = pf;
	b = pf = NULL;
	r = 0;
out:
	free(pf);
	free(b);
	return r;
}

int gcs_pct_encode(struct xprofs_buf *out, const char *s, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t i;
	int r;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '.' || c == '_' || c == '~') {
			r = xprofs_buf_add(out, &s[i], 1);
		} else {
			char e[3] = {'%', hex[c >> 4], hex[c & 15]};

			r = xprofs_buf_add(out, e, 3);
		}
		if (r < 0)
			return r;
	}
	return 0;
}

/* ---- object names and request URLs ------------------------------------- */

/* The object name of store path @path (caller owns; free()). */
char *gcs_object_name(struct gcs_store *s, const char *path, const char *suffix)
{
	char *n = NULL;

	if (asprintf(&n, "%s%s%s%s", s->prefix, s->prefix[0] && path[0] ? "/" : "", path, suffix) <
	    0)
		return NULL;
	if (strlen(n) > GCS_NAME_MAX) {
		free(n);
		return NULL;
	}
	return n;
}

/* @out = endpoint + "/" + @api + "/b/BUCKET/o[/OBJECT]", no query */
int gcs_url_path(struct gcs_store *s, struct xprofs_buf *out, const char *api, const char *obj)
{
	int r;

	xprofs_buf_reset(out);
	if ((r = xprofs_buf_printf(out, "%s/%s/b/", s->endpoint, api)) < 0 ||
	    (r = gcs_pct_encode(out, s->bucket, strlen(s->bucket))) < 0 ||
	    (r = xprofs_buf_adds(out, "/o")) < 0)
		return r;
	if (obj && ((r = xprofs_buf_adds(out, "/")) < 0 ||
		    (r = gcs_pct_encode(out, obj, strlen(obj))) < 0))
		return r;
	return 0;
}

/* Requester pays: every storage request names the billed project. */
int gcs_url_user_project(struct gcs_store *s, struct xprofs_buf *out)
{
	return s->user_project ? gcs_url_param(out, "userProject", s->user_project) : 0;
}

/* @out = gcs_url_path() + the store's userProject, ready for more gcs_url_param()s. */
int gcs_url_object(struct gcs_store *s, struct xprofs_buf *out, const char *api, const char *obj)
{
	int r = gcs_url_path(s, out, api, obj);

	return r < 0 ? r : gcs_url_user_project(s, out);
}

/* A project id (lowercase letters, digits, '-') or number, as userProject takes: 1-63 bytes. */
bool gcs_project_valid(const char *p)
{
	size_t i, n = strlen(p);

	if (n == 0 || n > 63)
		return false;
	for (i = 0; i < n; i++)
		if (!is_lower_alnum(p[i]) && p[i] != '-')
			return false;
	return true;
}

int gcs_url_param(struct xprofs_buf *out, const char *key, const char *val)
{
	int r;

	if ((r = xprofs_buf_printf(out, "%c%s=", strchr(out->data, '?') ? '&' : '?', key)) < 0)
		return r;
	return gcs_pct_encode(out, val, strlen(val));
}

int gcs_url_param_u64(struct xprofs_buf *out, const char *key, uint64_t v)
{
	char tmp[24];

	snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)v);
	return gcs_url_param(out, key, tmp);
}

/* True when @url has the scheme, host and port of @endpoint. */
bool gcs_same_origin(const char *endpoint, const char *url)
{
	const char *e = strstr(endpoint, "://"), *end;
	size_t n;

	if (!e)
		return false;
	end = strchr(e + 3, '/');
	n = end ? (size_t)(end - endpoint) : strlen(endpoint);
	return strncasecmp(url, endpoint, n) == 0 && (url[n] == '/' || url[n] == '?');
}

char *gcs_endpoint_resolve(const struct xprofs_gcs_options *o)
{
	const char *e = o->endpoint;
	char *r = NULL;
	size_t n;

	if (!e || !*e)
		e = getenv("CLOUD_STORAGE_EMULATOR_ENDPOINT");
	if (!e || !*e) {
		e = getenv("STORAGE_EMULATOR_HOST");
		if (e && *e && !strstr(e, "://")) {
			if (asprintf(&r, "http://%s", e) < 0)
				return NULL;
		}
	}
	if (!r)
		r = strdup(e && *e ? e : "https://storage.googleapis.com");
	if (!r)
		return NULL;
	n = strlen(r);
	while (n > 0 && r[n - 1] == '/')
		r[--n] = '\0';
	/* accept rclone-style ".../storage/v1" too */
	if (n >= 11 && strcmp(r + n - 11, "/storage/v1") == 0)
		r[n - 11] = '\0';
	return r;
}
