/*
 * tests/gcs/fuzz_auth_token.c - libFuzzer target for the parsers of bytes
 * that come from a token endpoint or metadata server (gcs/auth-jwt.c): the token
 * answer (JSON, token characters, lifetime) and base64url.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "auth-internal.h"

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
	return 0;
}
