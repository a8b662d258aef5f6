/*
 * gcs/auth-jwt.c - the byte-level pieces of the credentials: base64url
 * (RFC 7515), the signed RS256 JWT grant assertion of a service account
 * (OpenSSL libcrypto), the parser of token answers, and secret wiping.
 *
 * Design: pure functions over caller buffers, no I/O and no shared state,
 * so tests check them without a network and the token parser is fuzzed
 * (tests/gcs/fuzz_auth_token.c).
 *
 * Limits: a JWT is at most GCS_AUTH_JWT_MAX bytes, an RSA signature at most
 * 2048 bytes, a token at most GCS_AUTH_TOKEN_MAX printable ASCII characters
 * and a lifetime at most a week. Token answers are hostile input.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "auth-internal.h"

/* ---- secrets ------------------------------------------------------------- */

char *gcs_secret_free(char *s)
{
	if (s) {
		OPENSSL_cleanse(s, strlen(s));
		free(s);
	}
	return NULL;
}

void gcs_secret_buf_deinit(struct xprofs_buf *b)
{
	if (b->data)
		OPENSSL_cleanse(b->data, b->cap);
	xprofs_buf_deinit(b);
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

/* The value of base64url digit @c: its place in the encoder's alphabet, or -1. */
static int b64url_value(char c)
{
	const char *p = c ? strchr(b64url_alphabet, c) : NULL;

	return p ? (int)(p - b64url_alphabet) : -1;
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
	    EVP_DigestSign(md, NULL, &sig_len, msg, n) != 1 || sig_len == 0 || sig_len > 2048) {
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

int gcs_auth_jwt_build(struct xprofs_buf *out, const char *pem, const char *kid, const char *email,
		       const char *scope, const char *aud, int64_t iat)
{
	json_t *hdr = NULL, *claims = NULL;
	struct xprofs_buf jwt;
	int r;

	xprofs_buf_init(&jwt, GCS_AUTH_JWT_MAX);
	hdr = kid ? json_pack("{s:s, s:s, s:s}", "alg", "RS256", "typ", "JWT", "kid", kid)
		  : json_pack("{s:s, s:s}", "alg", "RS256", "typ", "JWT");
	claims = json_pack("{s:s, s:s, s:s, s:I, s:I}", "iss", email, "scope", scope, "aud", aud,
			   "iat", (json_int_t)iat, "exp",
			   (json_int_t)(iat + GCS_AUTH_JWT_LIFETIME_S));
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

/* A token answer's lifetime member @exp (absent: the default) in seconds; -EPROTO if bad. */
static int answer_lifetime(const json_t *exp, bool is_time, int64_t now_ns, int64_t *e)
{
	int64_t at_ns;

	if (is_time) { /* IAM: "expireTime": RFC 3339 */
		if (!json_is_string(exp) || gcs_time_parse(json_string_value(exp), &at_ns) < 0)
			return -EPROTO;
		*e = (at_ns - now_ns) / 1000000000LL;
	} else if (json_is_integer(exp)) { /* OAuth: "expires_in": seconds */
		*e = json_integer_value(exp);
	} else if (json_is_real(exp)) {
		*e = (int64_t)json_real_value(exp);
	} else if (exp) {
		return -EPROTO;
	}
	return *e <= 0 || *e > 7 * 24 * 3600 ? -EPROTO : 0;
}

/*
 * The token answers of OAuth endpoints ({access_token, expires_in}) and of
 * IAM ({accessToken, expireTime}): the token member @tok_key and its
 * lifetime; the token must fit in an HTTP header.
 */
static int token_answer_parse(const char *body, size_t n, const char *tok_key, const char *exp_key,
			      bool exp_is_time, int64_t now_ns, char **token, int64_t *expires_in_s)
{
	json_t *root, *tok;
	const char *s;
	size_t len, i;
	int64_t e = GCS_AUTH_JWT_LIFETIME_S;
	int r = -EPROTO;

	root = json_loadb(body, n, JSON_REJECT_DUPLICATES, NULL);
	if (!root || !json_is_object(root))
		goto out;
	tok = json_object_get(root, tok_key);
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
	if (answer_lifetime(json_object_get(root, exp_key), exp_is_time, now_ns, &e) < 0)
		goto out;
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
		tok = json_object_get(root, tok_key);
		if (json_is_string(tok))
			OPENSSL_cleanse((char *)json_string_value(tok), json_string_length(tok));
	}
	json_decref(root);
	return r;
}

int gcs_auth_token_parse(const char *body, size_t n, char **token, int64_t *expires_in_s)
{
	return token_answer_parse(body, n, "access_token", "expires_in", false, 0, token,
				  expires_in_s);
}

int gcs_auth_imp_token_parse(const char *body, size_t n, int64_t now_ns, char **token,
			     int64_t *expires_in_s)
{
	return token_answer_parse(body, n, "accessToken", "expireTime", true, now_ns, token,
				  expires_in_s);
}
