/*
 * gcs/auth-internal.h - the credentials API the gcs module (http.c, the
 * store) and its tests use; what auth.c, auth-source.c and auth-jwt.c share
 * (struct gcs_auth, secret wiping); and the pieces exposed for white-box
 * tests: base64url and the service-account JWT builder (tests decode what is
 * signed without a network round trip) and the token-answer parser (fuzzed).
 * Not part of the public contract (include/xprofs/gcs.h).
 */
#ifndef GCS_AUTH_INTERNAL_H
#define GCS_AUTH_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "gcs-internal.h"

/* ---- credentials (auth.c) ---------------------------------------------- */

/**
 * gcs_auth_new() - resolve credentials in ADC order:
 * @o->anonymous or an emulator from the environment -> none;
 * @o->credentials or GOOGLE_APPLICATION_CREDENTIALS (unreadable = error, no
 * fall-through) -> service_account (RS256 JWT grant), authorized_user
 * (refresh token), external_account (subject token exchanged at STS) or
 * impersonated_service_account (a source token traded at IAM); then $CLOUDSDK_CONFIG or ~/.config/gcloud
 * application_default_credentials.json; then the metadata server
 * (GCE_METADATA_HOST, default metadata.google.internal). The first token is
 * fetched here so bad credentials fail fast.
 * @out: caller owns, free with gcs_auth_free().
 */
int gcs_auth_new(const struct xprofs_gcs_options *o, struct gcs_auth **out) XPROFS_WUR;
/** gcs_auth_free() - accepts NULL; returns NULL. */
struct gcs_auth *gcs_auth_free(struct gcs_auth *a);
/**
 * gcs_auth_header() - append "Authorization: Bearer <token>" to @out
 * (nothing for anonymous). Refreshes the token when it is within 5 minutes of
 * expiry (serialised; a failed refresh keeps a still-valid token). Thread-safe.
 */
int gcs_auth_header(struct gcs_auth *a, struct xprofs_buf *out) XPROFS_WUR;
/**
 * gcs_auth_kind() - "anonymous", "service_account", "authorized_user",
 * "metadata", "external_account", "impersonated_service_account".
 */
const char *gcs_auth_kind(const struct gcs_auth *a);

#define GCS_AUTH_JWT_LIFETIME_S 3600 /* of an assertion; also a token answer's default */
#define GCS_AUTH_JWT_MAX (16u * 1024)

/* Largest credentials file, token response and token accepted. */
#define GCS_AUTH_FILE_MAX (64u * 1024)
#define GCS_AUTH_RESPONSE_MAX (64u * 1024)
#define GCS_AUTH_TOKEN_MAX 4096u

/**
 * gcs_b64url_encode() - append @n bytes at @p (borrowed) to @out as
 * unpadded base64url (RFC 7515 §2). 0, -ENOMEM or -E2BIG.
 */
int gcs_b64url_encode(struct xprofs_buf *out, const void *p, size_t n) XPROFS_WUR;

/**
 * gcs_b64url_decode() - append the bytes of the unpadded (or padded)
 * base64url text @s (@n bytes, borrowed) to @out. -EINVAL on a character
 * outside the alphabet or an impossible length.
 */
int gcs_b64url_decode(struct xprofs_buf *out, const char *s, size_t n) XPROFS_WUR;

/**
 * gcs_auth_jwt_build() - append a signed RS256 JWT grant assertion to
 * @out: header {alg: RS256, typ: JWT[, kid: @kid]}, claims {iss: @email,
 * scope: @scope, aud: @aud, iat: @iat, exp: @iat + 3600}.
 * @pem: a PEM private key (PKCS#8 or PKCS#1 RSA; borrowed). All strings are
 * borrowed; @kid may be NULL. -EINVAL for a key that is not RSA or does not
 * parse, -ENOMEM, -E2BIG.
 */
int gcs_auth_jwt_build(struct xprofs_buf *out, const char *pem, const char *kid, const char *email,
		       const char *scope, const char *aud, int64_t iat) XPROFS_WUR;

/**
 * gcs_auth_token_parse() - parse a token endpoint / metadata server
 * answer {access_token, expires_in}. @token: caller owns; free with free()
 * (after wiping it). @expires_in_s: seconds, defaults to 3600 when absent.
 * -EPROTO on anything malformed (no token, a token with characters that
 * cannot go in an HTTP header, a negative lifetime).
 */
int gcs_auth_token_parse(const char *body, size_t n, char **token,
			 int64_t *expires_in_s) XPROFS_WUR;

/**
 * gcs_auth_imp_token_parse() - parse an IAM generateAccessToken answer
 * {accessToken, expireTime (RFC 3339)} received at @now_ns (wall clock).
 * @token: caller owns (wipe, free). *@expires_in_s: seconds left. -EPROTO
 * on anything malformed, a token that cannot go in a header, or a time
 * that has passed or is more than a week away.
 */
int gcs_auth_imp_token_parse(const char *body, size_t n, int64_t now_ns, char **token,
			     int64_t *expires_in_s) XPROFS_WUR;

/* ---- shared by auth.c, auth-source.c, auth-jwt.c ---------------------- */

enum gcs_auth_kind {
	GCS_AUTH_ANONYMOUS,
	GCS_AUTH_SERVICE_ACCOUNT,
	GCS_AUTH_AUTHORIZED_USER,
	GCS_AUTH_METADATA,
	GCS_AUTH_EXTERNAL_ACCOUNT,
};

/* The credentials: immutable after gcs_auth_new() except the token state under @lock. */
struct gcs_auth {
	enum gcs_auth_kind kind;
	char *source; /* where the credentials came from, for messages */
	/* service_account */
	char *client_email;
	char *private_key; /* PEM; secret */
	char *private_key_id;
	/* authorized_user */
	char *client_id;
	char *client_secret; /* secret */
	char *refresh_token; /* secret */
	/* service_account, authorized_user */
	char *token_uri;
	/* metadata */
	char *metadata_url;
	/* external_account: a subject token (file or URL; text, or a JSON field) exchanged at STS */
	char *audience;
	char *subject_token_type;
	char *subject_file;
	char *subject_url;
	char *subject_field; /* "format": {"type": "json"}'s subject_token_field_name; NULL: text */
	/* impersonation: the token above is traded at this IAM generateAccessToken URL */
	char *imp_url;
	char *imp_delegates; /* JSON array text of "delegates", or NULL */

	pthread_mutex_t lock;
	pthread_cond_t refreshed; /* signalled when a refresh ends, with lock */
	bool refreshing;          /* protected by lock; one caller is fetching a token */
	char *token;              /* protected by lock; secret */
	int64_t expiry_ns;        /* protected by lock; monotonic clock */
	int64_t refresh_at_ns;    /* protected by lock; monotonic clock */
	int64_t retry_at_ns;      /* protected by lock; no refresh before this after a failure */
	int last_err;             /* protected by lock; why the last refresh failed */

	struct gcs_http http;    /* token requests; no Authorization header */
	struct gcs_counters ctr; /* of those requests (not reported) */
};

/**
 * gcs_auth_source() - pick the credentials in ADC order (see gcs_auth_new())
 * and load them into @a (kind, source and the secrets; GCS_AUTH_ANONYMOUS
 * when none are used). Every failure is logged and final: no fall-through
 * to another identity. Borrows @o.
 */
int gcs_auth_source(struct gcs_auth *a, const struct xprofs_gcs_options *o) XPROFS_WUR;
/**
 * gcs_auth_subject_token() - an external_account's subject token, from its
 * file or (through @a->http) its URL, as text or the JSON field named by
 * subject_token_field_name; surrounding whitespace dropped. *@out: caller
 * owns, free with gcs_secret_free(). -EACCES when absent or empty; logged.
 */
int gcs_auth_subject_token(struct gcs_auth *a, char **out) XPROFS_WUR;
/**
 * gcs_auth_subject_extract() - the subject token in @b (borrowed, hostile):
 * its text, or its JSON string member @field (NULL: text), without
 * surrounding whitespace. *@out: caller owns. -EACCES when empty or absent.
 */
int gcs_auth_subject_extract(const struct xprofs_buf *b, const char *field, char **out) XPROFS_WUR;
/**
 * gcs_auth_json_load() - the credentials of the parsed credentials file
 * @root (a json_t object; borrowed, hostile) into @a, by its "type". Every
 * failure is logged naming @path. The caller frees @a's members.
 */
int gcs_auth_json_load(struct gcs_auth *a, const void *root, const char *path) XPROFS_WUR;
/**
 * gcs_auth_external_parse() - the external_account members of the
 * credentials JSON @root (borrowed, hostile: a file) into @a. -EINVAL when
 * malformed, -ENOTSUP for what is not supported (impersonation, AWS,
 * executables); messages name @path.
 */
int gcs_auth_external_parse(struct gcs_auth *a, const void *root, const char *path) XPROFS_WUR;
/** gcs_secret_free() - overwrite then free a secret string; accepts NULL; returns NULL. */
char *gcs_secret_free(char *s);
/** gcs_secret_buf_deinit() - wipe and release a buffer that held secrets. */
void gcs_secret_buf_deinit(struct xprofs_buf *b);

#endif
