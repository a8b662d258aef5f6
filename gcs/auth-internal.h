/*
 * gcs/auth-internal.h - pieces of gcs/auth.c exposed only to the gcs module
 * and its unit tests: base64url and the service-account JWT builder, so tests
 * can decode what is signed without a network round trip.
 */
#ifndef XPROFS_GCS_AUTH_INTERNAL_H
#define XPROFS_GCS_AUTH_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "xprofs/util.h"

/* Largest credentials file, token response and token accepted. */
#define XPROFS_GCS_AUTH_FILE_MAX (64u * 1024)
#define XPROFS_GCS_AUTH_RESPONSE_MAX (64u * 1024)
#define XPROFS_GCS_AUTH_TOKEN_MAX 4096u

/**
 * xprofs_gcs_b64url_encode() - append @n bytes at @p (borrowed) to @out as
 * unpadded base64url (RFC 7515 §2). 0, -ENOMEM or -E2BIG.
 */
int xprofs_gcs_b64url_encode(struct xprofs_buf *out, const void *p, size_t n) XPROFS_WUR;

/**
 * xprofs_gcs_b64url_decode() - append the bytes of the unpadded (or padded)
 * base64url text @s (@n bytes, borrowed) to @out. -EINVAL on a character
 * outside the alphabet or an impossible length.
 */
int xprofs_gcs_b64url_decode(struct xprofs_buf *out, const char *s, size_t n) XPROFS_WUR;

/**
 * xprofs_gcs_auth_jwt_build() - append a signed RS256 JWT grant assertion to
 * @out: header {alg: RS256, typ: JWT[, kid: @kid]}, claims {iss: @email,
 * scope: @scope, aud: @aud, iat: @iat, exp: @iat + 3600}.
 * @pem: a PEM private key (PKCS#8 or PKCS#1 RSA; borrowed). All strings are
 * borrowed; @kid may be NULL. -EINVAL for a key that is not RSA or does not
 * parse, -ENOMEM, -E2BIG.
 */
int xprofs_gcs_auth_jwt_build(struct xprofs_buf *out, const char *pem, const char *kid,
			      const char *email, const char *scope, const char *aud,
			      int64_t iat) XPROFS_WUR;

/**
 * xprofs_gcs_auth_token_parse() - parse a token endpoint / metadata server
 * answer {access_token, expires_in}. @token: caller owns; free with free()
 * (after wiping it). @expires_in_s: seconds, defaults to 3600 when absent.
 * -EPROTO on anything malformed (no token, a token with characters that
 * cannot go in an HTTP header, a negative lifetime).
 */
int xprofs_gcs_auth_token_parse(const char *body, size_t n, char **token,
				int64_t *expires_in_s) XPROFS_WUR;

#endif
