/*
 * gcs/auth-internal.h - the credentials API the gcs module (http.c, the
 * store) and its tests use, plus the pieces exposed only for white-box tests:
 * base64url and the service-account JWT builder (tests decode what is signed
 * without a network round trip) and the token-answer parser (fuzzed).
 * Not part of the public contract (include/xprofs/gcs.h).
 */
#ifndef GCS_AUTH_INTERNAL_H
#define GCS_AUTH_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "xprofs/gcs.h"
#include "xprofs/util.h"

/* ---- credentials (auth.c) ---------------------------------------------- */

struct gcs_auth;

/**
 * gcs_auth_new() - resolve credentials in ADC order:
 * @o->anonymous or an emulator from the environment -> none;
 * @o->credentials or GOOGLE_APPLICATION_CREDENTIALS (unreadable = error, no
 * fall-through) -> service_account (RS256 JWT grant) or authorized_user
 * (refresh token); then $CLOUDSDK_CONFIG or ~/.config/gcloud
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
/** gcs_auth_kind() - "anonymous", "service_account", "authorized_user", "metadata". */
const char *gcs_auth_kind(const struct gcs_auth *a);

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
int gcs_auth_jwt_build(struct xprofs_buf *out, const char *pem, const char *kid,
			      const char *email, const char *scope, const char *aud,
			      int64_t iat) XPROFS_WUR;

/**
 * gcs_auth_token_parse() - parse a token endpoint / metadata server
 * answer {access_token, expires_in}. @token: caller owns; free with free()
 * (after wiping it). @expires_in_s: seconds, defaults to 3600 when absent.
 * -EPROTO on anything malformed (no token, a token with characters that
 * cannot go in an HTTP header, a negative lifetime).
 */
int gcs_auth_token_parse(const char *body, size_t n, char **token,
				int64_t *expires_in_s) XPROFS_WUR;

#endif
