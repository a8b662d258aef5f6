/*
 * gcs/list.c - parsers for what GCS sends back: objects.list pages, decimal
 * int64 strings, RFC 3339 timestamps, Content-Range / Range headers and error
 * bodies. Everything here treats its input as hostile (bounded sizes, checked
 * numbers, skipped malformed items) and has a libFuzzer target
 * (tests/gcs/fuzz_list.c).
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "gcs-internal.h"

int gcs_u64_parse(const char *s, uint64_t max, uint64_t *v)
{
	uint64_t x = 0;
	size_t i;

	if (!s || !s[0] || strlen(s) > 20)
		return -EINVAL;
	for (i = 0; s[i]; i++) {
		unsigned d;

		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		d = (unsigned)(s[i] - '0');
		if (x > (max - d) / 10)
			return -ERANGE;
		x = x * 10 + d;
	}
	*v = x;
	return 0;
}

/* size/generation arrive as strings ("123") in the JSON API, as numbers from some emulators */
static int json_u64(json_t *j, uint64_t max, uint64_t *v)
{
	if (json_is_string(j))
		return gcs_u64_parse(json_string_value(j), max, v);
	if (json_is_integer(j)) {
		json_int_t i = json_integer_value(j);

		if (i < 0 || (uint64_t)i > max)
			return -ERANGE;
		*v = (uint64_t)i;
		return 0;
	}
	return -EINVAL;
}

static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	/* Howard Hinnant's algorithm: no timegm()/TZ dependence */
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;

	return era * 146097 + (int64_t)doe - 719468;
}

int gcs_time_parse(const char *s, int64_t *ns)
{
	unsigned Y, M, D, h, m, sec;
	int n = 0;
	int64_t frac = 0, scale = 100000000, t;
	const char *p;

	if (!s || sscanf(s, "%4u-%2u-%2uT%2u:%2u:%2u%n", &Y, &M, &D, &h, &m, &sec, &n) != 6 ||
	    n != 19)
		return -EINVAL;
	if (Y < 1970 || Y > 2200 || M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 ||
	    sec > 60)
		return -EINVAL;
	p = s + n;
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return -EINVAL;
		for (; *p >= '0' && *p <= '9'; p++) {
			frac += (*p - '0') * scale;
			scale /= 10;
		}
	}
	t = days_from_civil(Y, M, D) * 86400 + h * 3600 + m * 60 + sec;
	if (*p == 'Z' && p[1] == '\0') {
		/* UTC */
	} else if ((*p == '+' || *p == '-') && strlen(p) == 6 && p[3] == ':') {
		unsigned oh, om;

		if (sscanf(p + 1, "%2u:%2u", &oh, &om) != 2 || oh > 23 || om > 59)
			return -EINVAL;
		t += (*p == '+' ? -1 : 1) * (int64_t)(oh * 3600 + om * 60);
	} else {
		return -EINVAL;
	}
	*ns = t * 1000000000LL + frac;
	return 0;
}

int gcs_list_parse(const char *json, size_t len, gcs_item_cb cb, void *arg, char **next_token,
		   unsigned *skipped)
{
	json_error_t jerr;
	json_t *root = NULL, *items, *tok, *it;
	char *token = NULL;
	size_t i;
	int r;

	*skipped = 0;
	if (len > GCS_PAGE_MAX)
		return -E2BIG;
	root = json_loadb(json, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
	if (!root || !json_is_object(root)) {
		r = -EBADMSG;
		goto out;
	}
	tok = json_object_get(root, "nextPageToken");
	if (tok && !json_is_null(tok)) {
		if (!json_is_string(tok)) {
			r = -EBADMSG;
			goto out;
		}
		if (json_string_length(tok) > GCS_TOKEN_MAX) {
			r = -E2BIG;
			goto out;
		}
		if (json_string_length(tok) > 0) {
			token = strndup(json_string_value(tok), json_string_length(tok));
			if (!token) {
				r = -ENOMEM;
				goto out;
			}
		}
	}
	items = json_object_get(root, "items");
	if (items && !json_is_array(items)) {
		r = -EBADMSG;
		goto out;
	}
	json_array_foreach(items, i, it)
	{
		struct gcs_item item = {0};
		json_t *name = json_object_get(it, "name");
		json_t *upd = json_object_get(it, "updated");

		if (!json_is_string(name) || json_string_length(name) == 0 ||
		    json_string_length(name) > GCS_NAME_MAX ||
		    strlen(json_string_value(name)) != json_string_length(name) ||
		    json_u64(json_object_get(it, "size"), INT64_MAX, &item.size) < 0 ||
		    json_u64(json_object_get(it, "generation"), INT64_MAX, &item.generation) < 0) {
			(*skipped)++;
			continue;
		}
		item.name = json_string_value(name);
		item.name_len = json_string_length(name);
		if (!json_is_string(upd) ||
		    gcs_time_parse(json_string_value(upd), &item.mtime_ns) < 0)
			item.mtime_ns = 0; /* a missing time is not worth hiding the object */
		r = cb(arg, &item);
		if (r != 0)
			goto out;
	}
	*next_token = token;
	token = NULL;
	r = 0;
out:
	free(token);
	json_decref(root);
	return r;
}

int gcs_content_range_parse(const char *s, uint64_t *first, uint64_t *last, uint64_t *total)
{
	char a[24], b[24], t[24];
	int n = 0;

	if (!s)
		return -EINVAL;
	if (strncasecmp(s, "bytes ", 6) != 0)
		return -EINVAL;
	s += 6;
	if (sscanf(s, "*/%20[0-9]%n", t, &n) == 1 && s[n] == '\0') {
		if (gcs_u64_parse(t, INT64_MAX, total) < 0)
			return -EINVAL;
		return -ERANGE;
	}
	if (sscanf(s, "%20[0-9]-%20[0-9]/%20[0-9]%n", a, b, t, &n) != 3 || s[n] != '\0')
		return -EINVAL;
	if (gcs_u64_parse(a, INT64_MAX, first) < 0 || gcs_u64_parse(b, INT64_MAX, last) < 0 ||
	    gcs_u64_parse(t, INT64_MAX, total) < 0)
		return -EINVAL;
	if (*first > *last || *last >= *total)
		return -EINVAL;
	return 0;
}

int gcs_range_parse(const char *s, uint64_t *committed)
{
	char a[24], b[24];
	uint64_t first, last;
	int n = 0;

	*committed = 0;
	if (!s || !s[0])
		return 0;
	if (sscanf(s, "bytes=%20[0-9]-%20[0-9]%n", a, b, &n) != 2 || s[n] != '\0')
		return -EINVAL;
	if (gcs_u64_parse(a, INT64_MAX - 1, &first) < 0 ||
	    gcs_u64_parse(b, INT64_MAX - 1, &last) < 0 || first != 0)
		return -EINVAL;
	*committed = last + 1;
	return 0;
}

void gcs_error_message(const char *body, size_t len, char *out, size_t n)
{
	json_t *root, *msg, *desc;

	out[0] = '\0';
	if (n == 0 || len > GCS_SMALL_MAX)
		return;
	root = json_loadb(body, len, 0, NULL);
	/* GCS: {"error": {"message": ...}}; OAuth token endpoints (RFC 6749
	 * section 5.2): {"error": "invalid_grant", "error_description": ...} */
	msg = json_object_get(root, "error");
	if (json_is_object(msg))
		msg = json_object_get(msg, "message");
	desc = json_object_get(root, "error_description");
	if (json_is_string(msg) || json_is_string(desc)) {
		snprintf(out, n, "%s%s%s", json_is_string(msg) ? json_string_value(msg) : "",
			 json_is_string(desc) ? " - " : "",
			 json_is_string(desc) ? json_string_value(desc) : "");
	} else if (!root) {
		/* not JSON: keep a printable prefix of the body */
		size_t i, k = 0;

		for (i = 0; i < len && k + 1 < n; i++)
			out[k++] = (body[i] >= 0x20 && body[i] < 0x7f) ? body[i] : ' ';
		out[k] = '\0';
	}
	json_decref(root);
}

int gcs_object_parse(const char *json, size_t len, struct xprofs_store_stat *st, bool *done)
{
	json_t *root, *res, *d, *upd;
	int r = -EBADMSG;

	if (len > GCS_SMALL_MAX)
		return -E2BIG;
	root = json_loadb(json, len, 0, NULL);
	if (!json_is_object(root))
		goto out;
	res = root;
	if (done) {
		/* a rewrite answer: {"done": bool, "resource": {...}, "rewriteToken": ...} */
		d = json_object_get(root, "done");
		*done = json_is_true(d);
		if (!*done) {
			r = 0;
			goto out;
		}
		res = json_object_get(root, "resource");
		if (!json_is_object(res))
			goto out;
	}
	memset(st, 0, sizeof(*st));
	st->type = XPROFS_STORE_FILE;
	if (json_u64(json_object_get(res, "size"), INT64_MAX, &st->size) < 0 ||
	    json_u64(json_object_get(res, "generation"), INT64_MAX, &st->generation) < 0)
		goto out;
	upd = json_object_get(res, "updated");
	if (!json_is_string(upd) || gcs_time_parse(json_string_value(upd), &st->mtime_ns) < 0)
		st->mtime_ns = xprofs_now_ns();
	r = 0;
out:
	json_decref(root);
	return r;
}

int gcs_json_string(const char *json, size_t len, const char *key, char **out)
{
	json_t *root, *v;
	int r = -ENOENT;

	if (len > GCS_SMALL_MAX)
		return -E2BIG;
	root = json_loadb(json, len, 0, NULL);
	v = json_object_get(root, key);
	if (json_is_string(v) && json_string_length(v) <= GCS_TOKEN_MAX &&
	    strlen(json_string_value(v)) == json_string_length(v)) {
		*out = strdup(json_string_value(v));
		r = *out ? 0 : -ENOMEM;
	}
	json_decref(root);
	return r;
}
