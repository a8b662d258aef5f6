/*
 * tests/gcs/fuzz_auth_token.c - libFuzzer target for the parsers of bytes
 * that come from a token endpoint or metadata server (gcs/auth-jwt.c): the token
 * answer (JSON, token characters, lifetime) and base64url; and of a
 * credentials file of any type (gcs_auth_json_load()), a subject token
 * answer (gcs/auth-source.c) and an IAM impersonation answer (auth-jwt.c).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "auth-internal.h"

/* The external_account parser and the subject token extraction on @data. */
static void fuzz_external(const uint8_t *data, size_t size)
{
	struct xprofs_buf b = {.data = (char *)data, .len = size};
	struct gcs_auth a = {0};
	json_t *root = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
	char *s = NULL;
	int64_t exp = 0;

	if (json_is_object(root)) {
		(void)!gcs_auth_json_load(&a, root, "fuzz");
		free(a.client_email);
		free(a.private_key);
		free(a.private_key_id);
		free(a.client_id);
		free(a.client_secret);
		free(a.refresh_token);
		free(a.imp_url);
		free(a.imp_delegates);
		free(a.audience);
		free(a.subject_token_type);
		free(a.token_uri);
		free(a.subject_file);
		free(a.subject_url);
		free(a.subject_field);
	}
	json_decref(root);
	if (gcs_auth_imp_token_parse((const char *)data, size, 0, &s, &exp) == 0 &&
	    (!s || !*s || exp <= 0))
		abort();
	free(s);
	s = NULL;
	if (gcs_auth_subject_extract(&b, size > 0 && data[0] == '{' ? "id_token" : NULL, &s) == 0 &&
	    (!s || !*s || strlen(s) > size))
		abort();
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xprofs_buf b;
	char *tok = NULL;
	int64_t exp = 0;
	size_t i;

	if (gcs_auth_token_parse((const char *)data, size, &tok, &exp) == 0) {
		/* What passes must be safe to put in a header. */
		if (!tok || !*tok || strlen(tok) > GCS_AUTH_TOKEN_MAX || exp <= 0)
			abort();
		for (i = 0; tok[i]; i++)
			if (tok[i] <= ' ' || tok[i] > '~')
				abort();
		free(tok);
	}
	xprofs_buf_init(&b, 1 << 16);
	if (gcs_b64url_decode(&b, (const char *)data, size) == 0 && b.len > (size * 3) / 4 + 3)
		abort();
	xprofs_buf_deinit(&b);
	fuzz_external(data, size);
	return 0;
}
