/*
 * gcs/auth.c - Google credentials for the GCS client, in Application Default
 * Credentials order.
 *
 * Design: gcs_auth_new() picks ONE source and fetches the first token
 * immediately, so a wrong key, a revoked refresh token or a missing metadata
 * server fail the mount with a clear message instead of a later EIO:
 *   1. o->anonymous, or an emulator named in the environment (and no explicit
 *      credentials) -> no Authorization header;
 *   2. o->credentials, else $GOOGLE_APPLICATION_CREDENTIALS: a JSON file of
 *      type "service_account" (RS256 JWT bearer grant, OpenSSL libcrypto) or
 *      "authorized_user" (refresh-token grant). Unreadable or malformed is an
 *      error: never fall through to another identity;
 *   3. $CLOUDSDK_CONFIG/application_default_credentials.json, else
 *      ~/.config/gcloud/application_default_credentials.json (same types);
 *      absent -> next, present but bad -> error;
 *   4. the metadata server ($GCE_METADATA_HOST, $GCE_METADATA_ROOT, default
 *      metadata.google.internal) with a 1 s connect timeout, so a machine off
 *      GCE fails fast.
 * Tokens are cached under one mutex. A token is refreshed once less than
 * min(5 min, half its lifetime) remains, by one caller at a time, outside the
 * mutex: meanwhile other callers keep the still-valid token, or, when it has
 * expired, wait for that one refresh (no stampede on the token endpoint).
 * A failed refresh keeps a still-valid token and is not retried for
 * AUTH_RETRY_AFTER_NS. Token-endpoint calls retry 408/429/5xx and transient
 * transport errors three times with a short backoff.
 *
 * Limits: credentials files and token responses are capped at 64 KiB, tokens
 * at 4 KiB. external_account (workload identity federation) and impersonation
 * are not supported (-ENOTSUP with a message). Secrets are wiped before they
 * are freed and never logged, not even at debug level.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "gcs-internal.h"

#define AUTH_SCOPE "https://www.googleapis.com/auth/devstorage.read_write"
#define AUTH_DEFAULT_TOKEN_URI "https://oauth2.googleapis.com/token"
#define AUTH_METADATA_HOST "metadata.google.internal"
#define AUTH_METADATA_PATH "/computeMetadata/v1/instance/service-accounts/default/token"
#define AUTH_JWT_LIFETIME_S 3600
#define AUTH_REFRESH_MARGIN_NS (300LL * 1000000000LL)
#define AUTH_RETRY_AFTER_NS (5LL * 1000000000LL)
#define AUTH_ATTEMPTS 3
#define AUTH_JWT_MAX (16u * 1024)
#define AUTH_FORM_MAX (32u * 1024)

enum auth_kind {
	AUTH_ANONYMOUS,
	AUTH_SERVICE_ACCOUNT,
	AUTH_AUTHORIZED_USER,
	AUTH_METADATA,
};

struct gcs_auth {
	enum auth_kind kind;
	char *source;        /* where the credentials came from, for messages */
	/* service_account */
	char *client_email;
	char *private_key;   /* PEM; secret */
	char *private_key_id;
	/* authorized_user */
	char *client_id;
	char *client_secret; /* secret */
	char *refresh_token; /* secret */
	/* service_account, authorized_user */
	char *token_uri;
	/* metadata */
	char *metadata_url;

	pthread_mutex_t lock;
	pthread_cond_t refreshed; /* signalled when a refresh ends, with lock */
	bool refreshing;       /* protected by lock; one caller is fetching a token */
	char *token;           /* protected by lock; secret */
	int64_t expiry_ns;     /* protected by lock; monotonic clock */
	int64_t refresh_at_ns; /* protected by lock; monotonic clock */
	int64_t retry_at_ns;   /* protected by lock; no refresh before this after a failure */
	int last_err;          /* protected by lock; why the last refresh failed */

	struct gcs_http http;     /* token requests; no Authorization header */
	struct gcs_counters ctr;  /* of those requests (not reported) */
};

/* ---- small helpers ------------------------------------------------------ */

/* Overwrite then free a secret string; accepts NULL; returns NULL. */
static char *secret_free(char *s)
{
	if (s) {
		OPENSSL_cleanse(s, strlen(s));
		free(s);
	}
	return NULL;
}

/* Wipe and release a buffer that held secrets. */
static void secret_buf_deinit(struct xprofs_buf *b)
{
	if (b->data)
		OPENSSL_cleanse(b->data, b->cap);
	xprofs_buf_deinit(b);
}

static const char *env_nonempty(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

/* ---- base64url ---------------------------------------------------------- */

static const char b64url_alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

int gcs_b64url_encode(struct xprofs_buf *out, const void *p, size_t n)
{
	const uint8_t *s = p;
	char q[4];
	size_t i;
	int r;

	for (i = 0; i + 3 <= n; i += 3) {
		uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];

		q[0] = b64url_alphabet[v >> 18 & 63];
		q[1] = b64url_alphabet[v >> 12 & 63];
		q[2] = b64url_alphabet[v >> 6 & 63];
		q[3] = b64url_alphabet[v & 63];
		r = xprofs_buf_add(out, q, 4);
		if (r < 0)
			return r;
	}
	if (n - i == 1) {
		uint32_t v = (uint32_t)s[i] << 16;

		q[0] = b64url_alphabet[v >> 18 & 63];
		q[1] = b64url_alphabet[v >> 12 & 63];
		return xprofs_buf_add(out, q, 2);
	}
	if (n - i == 2) {
		uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8;

		q[0] = b64url_alphabet[v >> 18 & 63];
		q[1] = b64url_alphabet[v >> 12 & 63];
		q[2] = b64url_alphabet[v >> 6 & 63];
		return xprofs_buf_add(out, q, 3);
	}
	return 0;
}

static int b64url_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '-')
		return 62;
	if (c == '_')
		return 63;
	return -1;
}

int gcs_b64url_decode(struct xprofs_buf *out, const char *s, size_t n)
{
	uint32_t acc = 0;
	unsigned bits = 0;
	size_t i;
	int r;

	while (n > 0 && s[n - 1] == '=')
		n--;
	if (n % 4 == 1)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		int v = b64url_value(s[i]);

		if (v < 0)
			return -EINVAL;
		acc = (acc << 6 | (uint32_t)v) & 0xffffff;
		bits += 6;
		if (bits >= 8) {
			uint8_t byte = (uint8_t)(acc >> (bits - 8));

			bits -= 8;
			r = xprofs_buf_add(out, &byte, 1);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

/* ---- JWT ----------------------------------------------------------------- */

/* Append the base64url of @j's compact serialisation (borrows @j). */
static int jwt_add_json(struct xprofs_buf *out, const json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT);
	int r;

	if (!s)
		return -ENOMEM;
	r = gcs_b64url_encode(out, s, strlen(s));
	free(s);
	return r;
}

/* RS256 signature of @n bytes at @msg, base64url-appended to @out. */
static int jwt_sign(struct xprofs_buf *out, const char *pem, const void *msg, size_t n)
{
	EVP_PKEY *key = NULL;
	EVP_MD_CTX *md = NULL;
	unsigned char *sig = NULL;
	size_t sig_len = 0;
	BIO *bio;
	int r;

	bio = BIO_new_mem_buf(pem, -1);
	if (!bio)
		return -ENOMEM;
	key = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
	BIO_free(bio);
	if (!key || EVP_PKEY_get_base_id(key) != EVP_PKEY_RSA) {
		r = -EINVAL;
		goto out;
	}
	md = EVP_MD_CTX_new();
	if (!md) {
		r = -ENOMEM;
		goto out;
	}
	if (EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, key) != 1 ||
	    EVP_DigestSign(md, NULL, &sig_len, msg, n) != 1 || sig_len == 0 ||
	    sig_len > 2048) {
		r = -EINVAL;
		goto out;
	}
	sig = malloc(sig_len);
	if (!sig) {
		r = -ENOMEM;
		goto out;
	}
	if (EVP_DigestSign(md, sig, &sig_len, msg, n) != 1) {
		r = -EINVAL;
		goto out;
	}
	r = gcs_b64url_encode(out, sig, sig_len);
out:
	free(sig);
	EVP_MD_CTX_free(md);
	EVP_PKEY_free(key);
	return r;
}

int gcs_auth_jwt_build(struct xprofs_buf *out, const char *pem, const char *kid,
			      const char *email, const char *scope, const char *aud,
			      int64_t iat)
{
	json_t *hdr = NULL, *claims = NULL;
	struct xprofs_buf jwt;
	int r;

	xprofs_buf_init(&jwt, AUTH_JWT_MAX);
	hdr = kid ? json_pack("{s:s, s:s, s:s}", "alg", "RS256", "typ", "JWT", "kid", kid)
		  : json_pack("{s:s, s:s}", "alg", "RS256", "typ", "JWT");
	claims = json_pack("{s:s, s:s, s:s, s:I, s:I}", "iss", email, "scope", scope,
			   "aud", aud, "iat", (json_int_t)iat,
			   "exp", (json_int_t)(iat + AUTH_JWT_LIFETIME_S));
	if (!hdr || !claims) {
		r = -ENOMEM;
		goto out;
	}
	r = jwt_add_json(&jwt, hdr);
	if (r == 0)
		r = xprofs_buf_add(&jwt, ".", 1);
	if (r == 0)
		r = jwt_add_json(&jwt, claims);
	if (r == 0)
		r = xprofs_buf_add(&jwt, ".", 1);
	if (r < 0)
		goto out;
	/* The signing input is everything before the last '.'. */
	r = jwt_sign(&jwt, pem, jwt.data, jwt.len - 1);
	if (r == 0)
		r = xprofs_buf_add(out, jwt.data, jwt.len);
out:
	json_decref(claims);
	json_decref(hdr);
	xprofs_buf_deinit(&jwt);
	return r;
}

/* ---- token responses ----------------------------------------------------- */

int gcs_auth_token_parse(const char *body, size_t n, char **token,
				int64_t *expires_in_s)
{
	json_t *root, *tok, *exp;
	const char *s;
	size_t len, i;
	int64_t e = AUTH_JWT_LIFETIME_S;
	int r = -EPROTO;

	root = json_loadb(body, n, JSON_REJECT_DUPLICATES, NULL);
	if (!root || !json_is_object(root))
		goto out;
	tok = json_object_get(root, "access_token");
	if (!json_is_string(tok))
		goto out;
	s = json_string_value(tok);
	len = json_string_length(tok);
	if (len == 0 || len > GCS_AUTH_TOKEN_MAX)
		goto out;
	/* The token goes into an HTTP header: printable ASCII, no spaces. */
	for (i = 0; i < len; i++)
		if (!isgraph((unsigned char)s[i]))
			goto out;
	exp = json_object_get(root, "expires_in");
	if (exp) {
		if (json_is_integer(exp))
			e = json_integer_value(exp);
		else if (json_is_real(exp))
			e = (int64_t)json_real_value(exp);
		else
			goto out;
		if (e <= 0 || e > 7 * 24 * 3600)
			goto out;
	}
	*token = strdup(s);
	if (!*token) {
		r = -ENOMEM;
		goto out;
	}
	*expires_in_s = e;
	r = 0;
out:
	if (root) {
		/* jansson copied the token; wipe its copy before freeing. */
		tok = json_object_get(root, "access_token");
		if (json_is_string(tok))
			OPENSSL_cleanse((char *)json_string_value(tok), json_string_length(tok));
	}
	json_decref(root);
	return r;
}

/* ---- token requests ------------------------------------------------------ */

/*
 * How a token request's outcome reads to the caller. The errno comes from
 * the module's one mapping (gcs_http_errno()) with two rules of the token
 * protocol on top: an OAuth error answer is 400 (RFC 6749 section 5.2:
 * invalid_grant, invalid_client), so 400 means the credentials were refused
 * (-EACCES); and a credentials source that cannot be reached at all (no DNS
 * answer, connection refused) is -EHOSTUNREACH, one errno for "this source
 * is not there" (docs/gcs-auth.md). Any other failed answer is -EIO.
 */
static int token_errno(int r, long status)
{
	if (r == -ECONNREFUSED)
		return -EHOSTUNREACH;
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
	if (hr < 0 && !form && r == -EHOSTUNREACH)
		xprofs_err("gcs auth: no credentials: GOOGLE_APPLICATION_CREDENTIALS is unset, "
			   "there is no gcloud application_default_credentials.json, and the "
			   "metadata server at %s does not answer (%s) - not on GCE? Use "
			   "-o credentials=FILE, or -o anonymous for a public bucket",
			   url, rq.errmsg[0] ? rq.errmsg : strerror(-r));
	else if (hr < 0)
		xprofs_err("gcs auth: %s credentials from %s: cannot reach %s: %s", gcs_auth_kind(a),
			   a->source, url, rq.errmsg[0] ? rq.errmsg : strerror(-hr));
	else
		/* error codes and descriptions carry no secrets */
		xprofs_err("gcs auth: %s credentials from %s: token endpoint answered HTTP %ld%s%s",
			   gcs_auth_kind(a), a->source, rq.status, rq.errmsg[0] ? ": " : "", rq.errmsg);
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
	int r = gcs_http_init(&a->http, NULL, 1, &a->ctr);

	if (r < 0)
		return r;
	a->http.max_attempts = AUTH_ATTEMPTS;
	a->http.retry_initial_ms = 200;
	a->http.fail_fast = true;
	a->http.timeout_ms = 30000;
	a->http.connect_timeout_ms = a->kind == AUTH_METADATA ? 1000 : 10000;
	a->http.no_proxy = a->kind == AUTH_METADATA;
	return 0;
}

/* Append "&name=value" (value percent-encoded, as curl_easy_escape() would) to @form. */
static int form_add(struct xprofs_buf *form, const char *name, const char *value)
{
	int r = xprofs_buf_printf(form, "%s%s=", form->len ? "&" : "", name);

	return r < 0 ? r : gcs_pct_encode(form, value, strlen(value));
}

/* Build the POST body of a service_account or authorized_user grant. */
static int token_form(const struct gcs_auth *a, struct xprofs_buf *form)
{
	struct xprofs_buf jwt;
	int r;

	xprofs_buf_init(&jwt, AUTH_JWT_MAX);
	if (a->kind == AUTH_SERVICE_ACCOUNT) {
		r = gcs_auth_jwt_build(&jwt, a->private_key, a->private_key_id,
				       a->client_email, AUTH_SCOPE, a->token_uri,
				       xprofs_now_ns() / 1000000000LL);
		if (r == -EINVAL)
			xprofs_err("gcs auth: service_account credentials from %s: private_key is not a usable RSA PEM key",
				   a->source);
		if (r == 0)
			r = form_add(form, "grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer");
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
	secret_buf_deinit(&jwt);
	return r;
}

/*
 * Ask the token endpoint or metadata server for a new token. Touches no
 * shared state (only the immutable credentials), so it runs without a->lock.
 * @token: caller owns; free with secret_free().
 */
static int auth_fetch(struct gcs_auth *a, char **token, int64_t *expires_in)
{
	struct xprofs_buf form, body;
	int r;

	xprofs_buf_init(&form, AUTH_FORM_MAX);
	xprofs_buf_init(&body, GCS_AUTH_RESPONSE_MAX);
	if (a->kind == AUTH_METADATA) {
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
out:
	secret_buf_deinit(&body);
	secret_buf_deinit(&form);
	return r;
}

/*
 * Install @token (consumed) valid @expires_in seconds from @asked_ns, when
 * it was asked for (a conservative start). Called with a->lock held, or
 * before the handle is shared.
 */
static void auth_install(struct gcs_auth *a, char *token, int64_t expires_in,
			 int64_t asked_ns)
{
	int64_t lifetime = expires_in * 1000000000LL, margin;

	/* Short-lived tokens (tests, some metadata servers) would otherwise be
	 * refreshed on every request. */
	margin = lifetime / 2 < AUTH_REFRESH_MARGIN_NS ? lifetime / 2 : AUTH_REFRESH_MARGIN_NS;
	secret_free(a->token);
	a->token = token;
	a->expiry_ns = asked_ns + lifetime;
	a->refresh_at_ns = a->expiry_ns - margin;
	a->retry_at_ns = 0;
	a->last_err = 0;
	xprofs_debug("gcs auth: new %s token, valid %lld s", gcs_auth_kind(a),
		     (long long)expires_in);
}

/* ---- credentials files --------------------------------------------------- */

/* Duplicate string member @key of @j into *@dst; -EINVAL when required and absent. */
static int json_dup(const json_t *j, const char *key, bool required, char **dst)
{
	const char *v = json_string_value(json_object_get(j, key));

	if (!v || !*v)
		return required ? -EINVAL : 0;
	*dst = strdup(v);
	return *dst ? 0 : -ENOMEM;
}

/* Read at most GCS_AUTH_FILE_MAX bytes of @path into @b. */
static int read_small_file(const char *path, struct xprofs_buf *b)
{
	char chunk[4096];
	ssize_t n;
	int fd, r = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			break;
		}
		if (n == 0)
			break;
		r = xprofs_buf_add(b, chunk, (size_t)n);
		if (r < 0)
			break;
	}
	OPENSSL_cleanse(chunk, sizeof(chunk));
	close(fd);
	return r;
}

/*
 * Load the credentials JSON file @path (borrowed) into @a. Every failure is
 * logged with the file name and what is wrong, and is final: the caller does
 * not fall through to another identity.
 */
static int auth_load_file(struct gcs_auth *a, const char *path)
{
	struct xprofs_buf raw;
	json_error_t jerr;
	json_t *root = NULL;
	const char *type;
	int r;

	a->source = strdup(path);
	if (!a->source)
		return -ENOMEM;
	xprofs_buf_init(&raw, GCS_AUTH_FILE_MAX);
	r = read_small_file(path, &raw);
	if (r < 0) {
		xprofs_err("gcs auth: cannot read credentials file %s: %s", path,
			   r == -E2BIG ? "larger than 64 KiB" : strerror(-r));
		if (r == -E2BIG)
			r = -EINVAL;
		goto out;
	}
	root = json_loadb(raw.data ? raw.data : "", raw.len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root || !json_is_object(root)) {
		xprofs_err("gcs auth: credentials file %s is not a JSON object (line %d: %.120s)",
			   path, root ? 0 : jerr.line, root ? "not an object" : jerr.text);
		r = -EINVAL;
		goto out;
	}
	type = json_string_value(json_object_get(root, "type"));
	if (type && strcmp(type, "service_account") == 0) {
		a->kind = AUTH_SERVICE_ACCOUNT;
		r = json_dup(root, "client_email", true, &a->client_email);
		if (r == 0)
			r = json_dup(root, "private_key", true, &a->private_key);
		if (r == 0)
			r = json_dup(root, "private_key_id", false, &a->private_key_id);
		if (r == 0)
			r = json_dup(root, "token_uri", false, &a->token_uri);
		if (r == -EINVAL)
			xprofs_err("gcs auth: service_account file %s lacks client_email or private_key",
				   path);
	} else if (type && strcmp(type, "authorized_user") == 0) {
		a->kind = AUTH_AUTHORIZED_USER;
		r = json_dup(root, "client_id", true, &a->client_id);
		if (r == 0)
			r = json_dup(root, "client_secret", true, &a->client_secret);
		if (r == 0)
			r = json_dup(root, "refresh_token", true, &a->refresh_token);
		if (r == 0)
			r = json_dup(root, "token_uri", false, &a->token_uri);
		if (r == -EINVAL)
			xprofs_err("gcs auth: authorized_user file %s lacks client_id, client_secret or refresh_token",
				   path);
	} else {
		xprofs_err("gcs auth: credentials file %s has type \"%.40s\"; supported: service_account, authorized_user",
			   path, type ? type : "(none)");
		r = type ? -ENOTSUP : -EINVAL;
	}
	if (r == 0 && !a->token_uri) {
		a->token_uri = strdup(AUTH_DEFAULT_TOKEN_URI);
		if (!a->token_uri)
			r = -ENOMEM;
	}
	if (r == 0 && strncmp(a->token_uri, "https://", 8) != 0 &&
	    strncmp(a->token_uri, "http://", 7) != 0) {
		xprofs_err("gcs auth: credentials file %s: token_uri is not an http(s) URL", path);
		r = -EINVAL;
	}
out:
	if (root) {
		/* Wipe jansson's copies of the secrets. */
		static const char *const secret_keys[] = { "private_key", "client_secret",
							   "refresh_token" };
		size_t i;

		for (i = 0; i < sizeof(secret_keys) / sizeof(secret_keys[0]); i++) {
			json_t *s = json_object_get(root, secret_keys[i]);

			if (json_is_string(s))
				OPENSSL_cleanse((char *)json_string_value(s), json_string_length(s));
		}
	}
	json_decref(root);
	secret_buf_deinit(&raw);
	return r;
}

/* The gcloud well-known file, or NULL when it does not exist. Caller owns. */
static char *adc_well_known_path(void)
{
	const char *dir = env_nonempty("CLOUDSDK_CONFIG");
	const char *home = env_nonempty("HOME");
	char *path = NULL;
	int n;

	if (dir)
		n = asprintf(&path, "%s/application_default_credentials.json", dir);
	else if (home)
		n = asprintf(&path, "%s/.config/gcloud/application_default_credentials.json", home);
	else
		return NULL;
	if (n < 0)
		return NULL;
	if (access(path, F_OK) != 0) {
		free(path);
		return NULL;
	}
	return path;
}

static int auth_use_metadata(struct gcs_auth *a)
{
	const char *host = env_nonempty("GCE_METADATA_HOST");
	const char *scheme;

	if (!host)
		host = env_nonempty("GCE_METADATA_ROOT");
	if (!host)
		host = AUTH_METADATA_HOST;
	/* Accept "host:port" (what Google's clients read) and a full URL. */
	scheme = strstr(host, "://") ? "" : "http://";
	a->kind = AUTH_METADATA;
	if (asprintf(&a->metadata_url, "%s%s%s", scheme, host, AUTH_METADATA_PATH) < 0) {
		a->metadata_url = NULL;
		return -ENOMEM;
	}
	if (asprintf(&a->source, "the metadata server %s", host) < 0) {
		a->source = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* ---- public API ------------------------------------------------------------ */

int gcs_auth_new(const struct xprofs_gcs_options *o, struct gcs_auth **out)
{
	struct gcs_auth *a;
	const char *file;
	char *adc = NULL, *token = NULL;
	int64_t expires_in = 0, asked;
	bool emulator;
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
	a->kind = AUTH_ANONYMOUS;
	file = o->credentials && *o->credentials ? o->credentials
						 : env_nonempty("GOOGLE_APPLICATION_CREDENTIALS");
	emulator = !o->endpoint && (env_nonempty("CLOUD_STORAGE_EMULATOR_ENDPOINT") ||
				    env_nonempty("STORAGE_EMULATOR_HOST"));
	/* An explicit file wins over an emulator picked up from the environment. */
	if (o->anonymous || (emulator && !(o->credentials && *o->credentials))) {
		r = 0;
		goto done;
	}
	if (file) {
		r = auth_load_file(a, file);
	} else {
		adc = adc_well_known_path();
		r = adc ? auth_load_file(a, adc) : auth_use_metadata(a);
	}
	if (r == 0)
		r = auth_http_init(a);
	if (r < 0)
		goto fail;
	asked = xprofs_mono_ns();
	r = auth_fetch(a, &token, &expires_in);
	if (r < 0)
		goto fail;
	auth_install(a, token, expires_in, asked);
done:
	xprofs_info("gcs auth: using %s credentials%s%s", gcs_auth_kind(a),
		    a->source ? " from " : "", a->source ? a->source : "");
	free(adc);
	*out = a;
	return 0;
fail:
	free(adc);
	gcs_auth_free(a);
	return r;
}

struct gcs_auth *gcs_auth_free(struct gcs_auth *a)
{
	if (!a)
		return NULL;
	secret_free(a->token);
	free(a->metadata_url);
	free(a->token_uri);
	secret_free(a->refresh_token);
	secret_free(a->client_secret);
	free(a->client_id);
	free(a->private_key_id);
	secret_free(a->private_key);
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
	if (a->kind == AUTH_ANONYMOUS)
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
		xprofs_warn("gcs auth: token refresh failed (%s); keeping the current token (valid %lld s more)",
			    strerror(-r), (long long)((a->expiry_ns - xprofs_mono_ns()) / 1000000000LL));
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
	switch (a->kind) {
	case AUTH_SERVICE_ACCOUNT:
		return "service_account";
	case AUTH_AUTHORIZED_USER:
		return "authorized_user";
	case AUTH_METADATA:
		return "metadata";
	default:
		return "anonymous";
	}
}
