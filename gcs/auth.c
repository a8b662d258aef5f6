/*
 * gcs/auth.c - the credentials' tokens: gcs_auth_new() loads ONE source
 * (auth-source.c, Application Default Credentials order) and fetches the
 * first token at once, so a wrong key, a revoked refresh token or a missing
 * metadata server fail the mount with a clear message instead of a later EIO.
 *
 * Token requests (service-account JWT grant, refresh-token grant, metadata
 * server) go through the module's one HTTP path, gcs_http_do(), on a pool of
 * their own without an Authorization header: three attempts for 408/429/5xx
 * and dropped connections; a source that does not answer fails at once (the
 * metadata server gets 1 s to connect, so a machine off GCE fails fast).
 *
 * Tokens are cached under one mutex. A token is refreshed once less than
 * min(5 min, half its lifetime) remains, by one caller at a time, outside the
 * mutex: meanwhile other callers keep the still-valid token, or, when it has
 * expired, wait for that one refresh (no stampede on the token endpoint).
 * A failed refresh keeps a still-valid token and is not retried for
 * AUTH_RETRY_AFTER_NS.
 *
 * Limits: token responses are capped at 64 KiB, tokens at 4 KiB. Secrets are
 * wiped before they are freed and never logged, not even at debug level.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth-internal.h"

#define AUTH_SCOPE "https://www.googleapis.com/auth/devstorage.read_write"
#define AUTH_SCOPE_EXTERNAL "https://www.googleapis.com/auth/cloud-platform"
#define AUTH_REFRESH_MARGIN_NS (300LL * 1000000000LL)
#define AUTH_RETRY_AFTER_NS (5LL * 1000000000LL)
#define AUTH_ATTEMPTS 3
#define AUTH_FORM_MAX (32u * 1024)

/* ---- token requests ------------------------------------------------------ */

/*
 * How a token request's outcome reads to the caller. The errno comes from
 * the module's one mapping (gcs_http_errno(): a refused connection is
 * -ECONNREFUSED, no DNS answer -EHOSTUNREACH, as for storage requests) with
 * one rule of the token protocol on top: an OAuth error answer is 400 (RFC
 * 6749 section 5.2: invalid_grant, invalid_client), so 400 means the
 * credentials were refused (-EACCES). Any other failed answer is -EIO.
 */
static int token_errno(int r, long status)
{
	if (r < 0)
		return r;
	if (status == 400)
		return -EACCES;
	r = gcs_http_errno(status, 0);
	return r == 0 || r == -EACCES || r == -ENOENT ? r : -EIO;
}

/*
 * One token request: POST @form (borrowed; NULL = GET with the metadata
 * header) to @url through the credentials' own HTTP pool (no Authorization
 * header; its retry settings are set in auth_http_init()). The response body
 * goes to @body (bounded). 0 or -errno; errors are logged here.
 */
static int http_token_request(struct gcs_auth *a, const char *url, const struct xprofs_buf *form,
			      struct xprofs_buf *body)
{
	struct gcs_req rq = {.kind = GCS_REQ_OTHER, .url = url, .idempotent = true, .resp = body};
	int hr, r;

	if (form) {
		rq.method = "POST";
		rq.headers[0] = "Content-Type: application/x-www-form-urlencoded";
		rq.send_body = true;
		rq.body = form->data ? form->data : "";
		rq.body_len = form->len;
	} else {
		rq.method = "GET";
		rq.headers[0] = "Metadata-Flavor: Google";
	}
	hr = gcs_http_do(&a->http, &rq);
	r = token_errno(hr, rq.status);
	if (r == 0)
		return 0;
	if (hr < 0 && !form && (r == -EHOSTUNREACH || r == -ECONNREFUSED))
		xprofs_err("gcs auth: no credentials: GOOGLE_APPLICATION_CREDENTIALS is unset, "
			   "there is no gcloud application_default_credentials.json, and the "
			   "metadata server at %s does not answer (%s) - not on GCE? Use "
			   "-o credentials=FILE, or -o anonymous for a public bucket",
			   url, rq.errmsg[0] ? rq.errmsg : strerror(-r));
	else if (hr < 0)
		xprofs_err("gcs auth: %s credentials from %s: cannot reach %s: %s",
			   gcs_auth_kind(a), a->source, url,
			   rq.errmsg[0] ? rq.errmsg : strerror(-hr));
	else
		/* error codes and descriptions carry no secrets */
		xprofs_err("gcs auth: %s credentials from %s: token endpoint answered HTTP %ld%s%s",
			   gcs_auth_kind(a), a->source, rq.status, rq.errmsg[0] ? ": " : "",
			   rq.errmsg);
	return r;
}

/*
 * The credentials' HTTP pool: one handle, no Authorization header, three
 * attempts with a short backoff (about 200 ms, then 400 ms) for 408/429/5xx
 * and dropped connections. A source that does not answer is not retried:
 * the metadata server is link-local, so if it does not connect within 1 s
 * we are not on GCE and the mount should say so at once; it is also never
 * reached through a proxy.
 */
static int auth_http_init(struct gcs_auth *a)
{
	int r = gcs_http_init(&a->http, NULL, NULL, 1, &a->ctr);

	if (r < 0)
		return r;
	a->http.max_attempts = AUTH_ATTEMPTS;
	a->http.retry_initial_ms = 200;
	a->http.fail_fast = true;
	a->http.timeout_ms = 30000;
	a->http.connect_timeout_ms = a->kind == GCS_AUTH_METADATA ? 1000 : 10000;
	a->http.no_proxy = a->kind == GCS_AUTH_METADATA;
	return 0;
}

/* Append "&name=value" (value percent-encoded, as curl_easy_escape() would) to @form. */
static int form_add(struct xprofs_buf *form, const char *name, const char *value)
{
	int r = xprofs_buf_printf(form, "%s%s=", form->len ? "&" : "", name);

	return r < 0 ? r : gcs_pct_encode(form, value, strlen(value));
}

/*
 * An external_account's STS token exchange (RFC 8693, as Google's clients
 * send it: google-auth's identity_pool credentials): the subject token for
 * an access token with the cloud-platform scope.
 */
static int sts_form(struct gcs_auth *a, struct xprofs_buf *form)
{
	char *subject = NULL;
	int r = gcs_auth_subject_token(a, &subject);

	if (r == 0)
		r = form_add(form, "grant_type", "urn:ietf:params:oauth:grant-type:token-exchange");
	if (r == 0)
		r = form_add(form, "audience", a->audience);
	if (r == 0)
		r = form_add(form, "scope", AUTH_SCOPE_EXTERNAL);
	if (r == 0)
		r = form_add(form, "requested_token_type",
			     "urn:ietf:params:oauth:token-type:access_token");
	if (r == 0)
		r = form_add(form, "subject_token_type", a->subject_token_type);
	if (r == 0)
		r = form_add(form, "subject_token", subject);
	gcs_secret_free(subject);
	return r;
}

/* Build the POST body of a service_account, authorized_user or external_account grant. */
static int token_form(struct gcs_auth *a, struct xprofs_buf *form)
{
	struct xprofs_buf jwt;
	int r;

	if (a->kind == GCS_AUTH_EXTERNAL_ACCOUNT)
		return sts_form(a, form);
	xprofs_buf_init(&jwt, GCS_AUTH_JWT_MAX);
	if (a->kind == GCS_AUTH_SERVICE_ACCOUNT) {
		r = gcs_auth_jwt_build(&jwt, a->private_key, a->private_key_id, a->client_email,
				       AUTH_SCOPE, a->token_uri, xprofs_now_ns() / 1000000000LL);
		if (r == -EINVAL)
			xprofs_err("gcs auth: service_account credentials from %s: private_key is "
				   "not a usable RSA PEM key",
				   a->source);
		if (r == 0)
			r = form_add(form, "grant_type",
				     "urn:ietf:params:oauth:grant-type:jwt-bearer");
		if (r == 0)
			r = form_add(form, "assertion", jwt.data);
	} else {
		r = form_add(form, "grant_type", "refresh_token");
		if (r == 0)
			r = form_add(form, "client_id", a->client_id);
		if (r == 0)
			r = form_add(form, "client_secret", a->client_secret);
		if (r == 0)
			r = form_add(form, "refresh_token", a->refresh_token);
	}
	gcs_secret_buf_deinit(&jwt);
	return r;
}

/*
 * Trade *@token (the source credentials' token; consumed and replaced) for
 * the impersonated service account's at IAM's generateAccessToken
 * (@a->imp_url), as Google's auth libraries do for
 * impersonated_service_account and an external_account's
 * service_account_impersonation_url.
 */
static int impersonate(struct gcs_auth *a, char **token, int64_t *expires_in)
{
	struct gcs_req rq = {.kind = GCS_REQ_OTHER,
			     .method = "POST",
			     .url = a->imp_url,
			     .idempotent = true,
			     .send_body = true};
	struct xprofs_buf hdr, req, body;
	char *t = NULL;
	int hr, r;

	xprofs_buf_init(&hdr, GCS_AUTH_TOKEN_MAX + 64);
	xprofs_buf_init(&req, AUTH_FORM_MAX);
	xprofs_buf_init(&body, GCS_AUTH_RESPONSE_MAX);
	r = xprofs_buf_printf(&hdr, "Authorization: Bearer %s", *token);
	if (r == 0)
		r = xprofs_buf_printf(&req, "{\"scope\":[\"%s\"],\"lifetime\":\"3600s\"%s%s}",
				      AUTH_SCOPE, a->imp_delegates ? ",\"delegates\":" : "",
				      a->imp_delegates ? a->imp_delegates : "");
	if (r < 0)
		goto out;
	rq.headers[0] = "Content-Type: application/json";
	rq.headers[1] = hdr.data;
	rq.body = req.data;
	rq.body_len = req.len;
	rq.resp = &body;
	hr = gcs_http_do(&a->http, &rq);
	r = token_errno(hr, rq.status);
	if (r < 0) {
		xprofs_err("gcs auth: impersonation for %s credentials from %s at %s: %s%s%s",
			   gcs_auth_kind(a), a->source, a->imp_url,
			   hr < 0 ? "cannot reach it" : "HTTP error", rq.errmsg[0] ? ": " : "",
			   rq.errmsg);
		goto out;
	}
	r = gcs_auth_imp_token_parse(body.data, body.len, xprofs_now_ns(), &t, expires_in);
	if (r < 0) {
		xprofs_err("gcs auth: impersonation for %s credentials from %s: malformed answer",
			   gcs_auth_kind(a), a->source);
		goto out;
	}
	gcs_secret_free(*token);
	*token = t;
out:
	gcs_secret_buf_deinit(&body);
	xprofs_buf_deinit(&req);
	gcs_secret_buf_deinit(&hdr);
	return r;
}

/*
 * Ask the token endpoint or metadata server for a new token. Touches no
 * shared state (only the immutable credentials), so it runs without a->lock.
 * @token: caller owns; free with gcs_secret_free().
 */
static int auth_fetch(struct gcs_auth *a, char **token, int64_t *expires_in)
{
	struct xprofs_buf form, body;
	int r;

	xprofs_buf_init(&form, AUTH_FORM_MAX);
	xprofs_buf_init(&body, GCS_AUTH_RESPONSE_MAX);
	if (a->kind == GCS_AUTH_METADATA) {
		r = http_token_request(a, a->metadata_url, NULL, &body);
	} else {
		r = token_form(a, &form);
		if (r == 0)
			r = http_token_request(a, a->token_uri, &form, &body);
	}
	if (r < 0)
		goto out;
	r = gcs_auth_token_parse(body.data, body.len, token, expires_in);
	if (r < 0)
		xprofs_err("gcs auth: %s credentials from %s: malformed token response",
			   gcs_auth_kind(a), a->source);
	if (r == 0 && a->imp_url) {
		r = impersonate(a, token, expires_in);
		if (r < 0)
			*token = gcs_secret_free(*token);
	}
out:
	gcs_secret_buf_deinit(&body);
	gcs_secret_buf_deinit(&form);
	return r;
}

/*
 * Install @token (consumed) valid @expires_in seconds from @asked_ns, when
 * it was asked for (a conservative start). Called with a->lock held, or
 * before the handle is shared.
 */
static void auth_install(struct gcs_auth *a, char *token, int64_t expires_in, int64_t asked_ns)
{
	int64_t lifetime = expires_in * 1000000000LL, margin;

	/* Short-lived tokens (tests, some metadata servers) would otherwise be
	 * refreshed on every request. */
	margin = lifetime / 2 < AUTH_REFRESH_MARGIN_NS ? lifetime / 2 : AUTH_REFRESH_MARGIN_NS;
	gcs_secret_free(a->token);
	a->token = token;
	a->expiry_ns = asked_ns + lifetime;
	a->refresh_at_ns = a->expiry_ns - margin;
	a->retry_at_ns = 0;
	a->last_err = 0;
	xprofs_debug("gcs auth: new %s token, valid %lld s", gcs_auth_kind(a),
		     (long long)expires_in);
}

/* ---- public API ------------------------------------------------------------ */

int gcs_auth_new(const struct xprofs_gcs_options *o, struct gcs_auth **out)
{
	struct gcs_auth *a;
	char *token = NULL;
	int64_t expires_in = 0, asked;
	int r;

	if (!o || !out)
		return -EINVAL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	if (pthread_mutex_init(&a->lock, NULL) != 0) {
		free(a);
		return -ENOMEM;
	}
	if (pthread_cond_init(&a->refreshed, NULL) != 0) {
		pthread_mutex_destroy(&a->lock);
		free(a);
		return -ENOMEM;
	}
	r = gcs_auth_source(a, o);
	if (r < 0)
		goto fail;
	if (a->kind != GCS_AUTH_ANONYMOUS) {
		r = auth_http_init(a);
		if (r < 0)
			goto fail;
		asked = xprofs_mono_ns();
		r = auth_fetch(a, &token, &expires_in);
		if (r < 0)
			goto fail;
		auth_install(a, token, expires_in, asked);
	}
	xprofs_info("gcs auth: using %s credentials%s%s", gcs_auth_kind(a),
		    a->source ? " from " : "", a->source ? a->source : "");
	*out = a;
	return 0;
fail:
	gcs_auth_free(a);
	return r;
}

struct gcs_auth *gcs_auth_free(struct gcs_auth *a)
{
	if (!a)
		return NULL;
	gcs_secret_free(a->token);
	free(a->metadata_url);
	free(a->audience);
	free(a->subject_token_type);
	free(a->subject_file);
	free(a->subject_url);
	free(a->subject_field);
	free(a->imp_url);
	free(a->imp_delegates);
	free(a->token_uri);
	gcs_secret_free(a->refresh_token);
	gcs_secret_free(a->client_secret);
	free(a->client_id);
	free(a->private_key_id);
	gcs_secret_free(a->private_key);
	free(a->client_email);
	free(a->source);
	gcs_http_deinit(&a->http);
	pthread_cond_destroy(&a->refreshed);
	pthread_mutex_destroy(&a->lock);
	free(a);
	return NULL;
}

int gcs_auth_header(struct gcs_auth *a, struct xprofs_buf *out)
{
	int64_t now, asked, expires_in;
	bool due, valid;
	char *token;
	int r = 0;

	if (!a || !out)
		return -EINVAL;
	if (a->kind == GCS_AUTH_ANONYMOUS)
		return 0;
	pthread_mutex_lock(&a->lock);
	for (;;) {
		now = xprofs_mono_ns();
		valid = a->token && now < a->expiry_ns;
		due = !a->token || (now >= a->refresh_at_ns && now >= a->retry_at_ns);
		if (!due || a->refreshing) {
			/* A valid token is served even while another caller
			 * refreshes it: a slow token endpoint must not stall
			 * every request. Without one, wait for that refresh. */
			if (valid)
				break;
			if (!a->refreshing) {
				r = a->last_err ? a->last_err : -EACCES; /* expired, backing off */
				break;
			}
			pthread_cond_wait(&a->refreshed, &a->lock);
			continue;
		}
		a->refreshing = true;
		pthread_mutex_unlock(&a->lock);
		asked = xprofs_mono_ns();
		token = NULL;
		r = auth_fetch(a, &token, &expires_in);
		pthread_mutex_lock(&a->lock);
		a->refreshing = false;
		pthread_cond_broadcast(&a->refreshed);
		if (r == 0) {
			auth_install(a, token, expires_in, asked);
			continue;
		}
		a->retry_at_ns = asked + AUTH_RETRY_AFTER_NS;
		a->last_err = r;
		if (!a->token || xprofs_mono_ns() >= a->expiry_ns)
			break;
		xprofs_warn("gcs auth: token refresh failed (%s); keeping the current token (valid "
			    "%lld s more)",
			    strerror(-r),
			    (long long)((a->expiry_ns - xprofs_mono_ns()) / 1000000000LL));
		r = 0;
	}
	if (r == 0)
		r = xprofs_buf_printf(out, "Authorization: Bearer %s", a->token);
	pthread_mutex_unlock(&a->lock);
	return r;
}

const char *gcs_auth_kind(const struct gcs_auth *a)
{
	if (!a)
		return "anonymous";
	if (a->imp_url && a->kind != GCS_AUTH_EXTERNAL_ACCOUNT)
		return "impersonated_service_account";
	switch (a->kind) {
	case GCS_AUTH_SERVICE_ACCOUNT:
		return "service_account";
	case GCS_AUTH_AUTHORIZED_USER:
		return "authorized_user";
	case GCS_AUTH_METADATA:
		return "metadata";
	case GCS_AUTH_EXTERNAL_ACCOUNT:
		return "external_account";
	default:
		return "anonymous";
	}
}
