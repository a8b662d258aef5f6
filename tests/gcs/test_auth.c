/*
 * tests/gcs/test_auth.c - unit tests of gcs/auth.c that need no network:
 * base64url, the RS256 JWT (decoded back and its signature verified with the
 * public half of a key generated here), token-response parsing, and the ADC
 * source selection / fail-fast rules of gcs_auth_new().
 * The token flows over HTTP are covered by tests/gcs/test_auth_flows.py.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include "auth-internal.h"

static EVP_PKEY *test_key; /* generated once: RSA keygen is slow under ASan */
static char *test_pem;

/* Group setup: libcurl's global state (the tests make token requests; the
 * library leaves curl_global_init() to the program) and an RSA test key. */
static int setup_key(void **state)
{
	BIO *bio;
	char *p;
	long n;

	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return -1;
	bio = BIO_new(BIO_s_mem());
	test_key = EVP_RSA_gen(2048);
	if (!bio || !test_key ||
	    !PEM_write_bio_PrivateKey(bio, test_key, NULL, NULL, 0, NULL, NULL))
		return -1;
	n = BIO_get_mem_data(bio, &p);
	test_pem = strndup(p, (size_t)n);
	BIO_free(bio);
	return test_pem ? 0 : -1;
}

static int teardown_key(void **state)
{
	EVP_PKEY_free(test_key);
	free(test_pem);
	curl_global_cleanup();
	return 0;
}

static void test_b64url_vectors(void **state)
{
	static const struct {
		const char *in;
		size_t n;
		const char *out;
	} v[] = {
		{"", 0, ""},
		{"f", 1, "Zg"},
		{"fo", 2, "Zm8"},
		{"foo", 3, "Zm9v"},
		{"foob", 4, "Zm9vYg"},
		{"fooba", 5, "Zm9vYmE"},
		{"\xfb\xff", 2, "-_8"},
		{"\xff\xff\xfe", 3, "___-"},
	};
	struct xprofs_buf b;
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		xprofs_buf_init(&b, 1024);
		assert_int_equal(gcs_b64url_encode(&b, v[i].in, v[i].n), 0);
		assert_string_equal(b.data ? b.data : "", v[i].out);
		xprofs_buf_reset(&b);
		assert_int_equal(gcs_b64url_decode(&b, v[i].out, strlen(v[i].out)), 0);
		assert_int_equal(b.len, v[i].n);
		if (v[i].n)
			assert_memory_equal(b.data, v[i].in, v[i].n);
		xprofs_buf_deinit(&b);
	}
}

static void test_b64url_roundtrip_and_errors(void **state)
{
	unsigned char raw[257];
	struct xprofs_buf enc, dec;
	size_t n, i;

	for (i = 0; i < sizeof(raw); i++)
		raw[i] = (unsigned char)(i * 131 + 7);
	for (n = 0; n <= sizeof(raw); n++) {
		xprofs_buf_init(&enc, 4096);
		xprofs_buf_init(&dec, 4096);
		assert_int_equal(gcs_b64url_encode(&enc, raw, n), 0);
		assert_int_equal(enc.len, (n * 4 + 2) / 3);
		for (i = 0; i < enc.len; i++)
			assert_null(strchr("+/=", enc.data[i]));
		assert_int_equal(gcs_b64url_decode(&dec, enc.data ? enc.data : "", enc.len), 0);
		assert_int_equal(dec.len, n);
		if (n)
			assert_memory_equal(dec.data, raw, n);
		xprofs_buf_deinit(&enc);
		xprofs_buf_deinit(&dec);
	}
	xprofs_buf_init(&dec, 4096);
	assert_int_equal(gcs_b64url_decode(&dec, "Zm9v+", 5), -EINVAL);
	assert_int_equal(gcs_b64url_decode(&dec, "Zm9vY", 5), -EINVAL); /* 4k+1 chars */
	assert_int_equal(gcs_b64url_decode(&dec, "Zm\n9v", 5), -EINVAL);
	xprofs_buf_deinit(&dec);
	/* The output bound holds. */
	xprofs_buf_init(&enc, 3);
	assert_int_equal(gcs_b64url_encode(&enc, "foobar", 6), -E2BIG);
	xprofs_buf_deinit(&enc);
}

/* Decode JWT segment @i (0-based) of @jwt into JSON; caller owns. */
static json_t *jwt_segment_json(const char *jwt, int i)
{
	const char *s = jwt, *e;
	struct xprofs_buf b;
	json_t *j;

	while (i-- > 0)
		s = strchr(s, '.') + 1;
	e = strchr(s, '.');
	xprofs_buf_init(&b, 8192);
	assert_int_equal(gcs_b64url_decode(&b, s, e ? (size_t)(e - s) : strlen(s)), 0);
	j = json_loadb(b.data, b.len, 0, NULL);
	xprofs_buf_deinit(&b);
	assert_non_null(j);
	return j;
}

static void test_jwt_claims_and_signature(void **state)
{
	struct xprofs_buf jwt, sig;
	json_t *hdr, *claims;
	const char *dot2;
	EVP_MD_CTX *md;

	xprofs_buf_init(&jwt, 16384);
	assert_int_equal(gcs_auth_jwt_build(&jwt, test_pem, "kid-1", "sa@p.iam.example",
					    "https://www.googleapis.com/auth/devstorage.read_write",
					    "http://127.0.0.1:1/token", 1700000000),
			 0);
	assert_non_null(strchr(jwt.data, '.'));
	dot2 = strrchr(jwt.data, '.');
	assert_ptr_not_equal(dot2, strchr(jwt.data, '.'));

	hdr = jwt_segment_json(jwt.data, 0);
	assert_string_equal(json_string_value(json_object_get(hdr, "alg")), "RS256");
	assert_string_equal(json_string_value(json_object_get(hdr, "typ")), "JWT");
	assert_string_equal(json_string_value(json_object_get(hdr, "kid")), "kid-1");
	claims = jwt_segment_json(jwt.data, 1);
	assert_string_equal(json_string_value(json_object_get(claims, "iss")), "sa@p.iam.example");
	assert_string_equal(json_string_value(json_object_get(claims, "aud")),
			    "http://127.0.0.1:1/token");
	assert_string_equal(json_string_value(json_object_get(claims, "scope")),
			    "https://www.googleapis.com/auth/devstorage.read_write");
	assert_int_equal(json_integer_value(json_object_get(claims, "iat")), 1700000000);
	assert_int_equal(json_integer_value(json_object_get(claims, "exp")), 1700003600);
	json_decref(hdr);
	json_decref(claims);

	/* The signature verifies over "header.claims" with the public key ... */
	xprofs_buf_init(&sig, 4096);
	assert_int_equal(gcs_b64url_decode(&sig, dot2 + 1, strlen(dot2 + 1)), 0);
	assert_int_equal(sig.len, 256);
	md = EVP_MD_CTX_new();
	assert_int_equal(EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, test_key), 1);
	assert_int_equal(EVP_DigestVerify(md, (unsigned char *)sig.data, sig.len,
					  (unsigned char *)jwt.data, (size_t)(dot2 - jwt.data)),
			 1);
	/* ... and not over anything else. */
	EVP_MD_CTX_reset(md);
	assert_int_equal(EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, test_key), 1);
	jwt.data[5] ^= 1;
	assert_int_not_equal(EVP_DigestVerify(md, (unsigned char *)sig.data, sig.len,
					      (unsigned char *)jwt.data, (size_t)(dot2 - jwt.data)),
			     1);
	EVP_MD_CTX_free(md);
	xprofs_buf_deinit(&sig);

	/* Without a kid the header has just alg and typ. */
	xprofs_buf_reset(&jwt);
	assert_int_equal(gcs_auth_jwt_build(&jwt, test_pem, NULL, "a", "s", "u", 1), 0);
	hdr = jwt_segment_json(jwt.data, 0);
	assert_int_equal(json_object_size(hdr), 2);
	json_decref(hdr);
	xprofs_buf_deinit(&jwt);
}

static void test_jwt_rejects_bad_keys(void **state)
{
	struct xprofs_buf jwt, pem;
	EVP_PKEY *ec;
	BIO *bio;
	char *p;
	long n;

	xprofs_buf_init(&jwt, 16384);
	assert_int_equal(gcs_auth_jwt_build(&jwt, "not a key", NULL, "a", "s", "u", 1), -EINVAL);
	assert_int_equal(jwt.len, 0);
	/* A valid PEM key of the wrong algorithm. */
	ec = EVP_EC_gen("P-256");
	assert_non_null(ec);
	bio = BIO_new(BIO_s_mem());
	assert_true(PEM_write_bio_PrivateKey(bio, ec, NULL, NULL, 0, NULL, NULL));
	n = BIO_get_mem_data(bio, &p);
	xprofs_buf_init(&pem, 8192);
	assert_int_equal(xprofs_buf_add(&pem, p, (size_t)n), 0);
	assert_int_equal(gcs_auth_jwt_build(&jwt, pem.data, NULL, "a", "s", "u", 1), -EINVAL);
	assert_int_equal(jwt.len, 0);
	/* A truncated RSA key. */
	xprofs_buf_reset(&pem);
	assert_int_equal(xprofs_buf_add(&pem, test_pem, strlen(test_pem) / 2), 0);
	assert_int_equal(gcs_auth_jwt_build(&jwt, pem.data, NULL, "a", "s", "u", 1), -EINVAL);
	xprofs_buf_deinit(&pem);
	BIO_free(bio);
	EVP_PKEY_free(ec);
	xprofs_buf_deinit(&jwt);
}

static void test_token_parse(void **state)
{
	char *tok = NULL;
	int64_t exp = 0;
	char big[6000];
	static const char *const bad[] = {
		"",
		"[]",
		"{\"expires_in\": 10}",
		"{\"access_token\": 5}",
		"{\"access_token\": \"\"}",
		"{\"access_token\": \"a b\"}",
		"{\"access_token\": \"ab\\r\\nX-Evil: 1\"}",
		"{\"access_token\": \"ab\", \"expires_in\": -1}",
		"{\"access_token\": \"ab\", \"expires_in\": \"60\"}",
		"{\"access_token\": \"ab\", \"access_token\": \"cd\"}",
		"{\"access_token\": \"ab\"",
	};
	size_t i;

	static const char good[] =
		"{\"access_token\":\"ya29.x-y_z\",\"expires_in\":3599,\"token_type\":\"Bearer\"}";

	assert_int_equal(gcs_auth_token_parse(good, strlen(good), &tok, &exp), 0);
	assert_string_equal(tok, "ya29.x-y_z");
	assert_int_equal(exp, 3599);
	free(tok);
	assert_int_equal(gcs_auth_token_parse("{\"access_token\":\"t\"}", 20, &tok, &exp), 0);
	assert_int_equal(exp, 3600);
	free(tok);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		tok = NULL;
		assert_int_equal(gcs_auth_token_parse(bad[i], strlen(bad[i]), &tok, &exp), -EPROTO);
		assert_null(tok);
	}
	/* A token longer than the cap. */
	memset(big, 'a', sizeof(big));
	memcpy(big, "{\"access_token\":\"", 17);
	memcpy(big + sizeof(big) - 2, "\"}", 2);
	assert_int_equal(gcs_auth_token_parse(big, sizeof(big), &tok, &exp), -EPROTO);
}

/* Write @text to a temporary file; caller owns the path (unlink + free). */
static char *temp_file(const char *text)
{
	char *path = strdup("/tmp/xprofs-test-auth-XXXXXX");
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

static void clear_env(void)
{
	unsetenv("GOOGLE_APPLICATION_CREDENTIALS");
	unsetenv("CLOUD_STORAGE_EMULATOR_ENDPOINT");
	unsetenv("STORAGE_EMULATOR_HOST");
	unsetenv("GCE_METADATA_HOST");
	unsetenv("GCE_METADATA_ROOT");
	setenv("CLOUDSDK_CONFIG", "/nonexistent-xprofs-test", 1);
}

static void test_anonymous_and_emulator(void **state)
{
	struct xprofs_gcs_options o = {.anonymous = true};
	struct gcs_auth *a = NULL;
	struct xprofs_buf b;

	clear_env();
	/* anonymous wins even over a credentials file that does not exist */
	o.credentials = "/nonexistent/creds.json";
	assert_int_equal(gcs_auth_new(&o, &a), 0);
	assert_string_equal(gcs_auth_kind(a), "anonymous");
	xprofs_buf_init(&b, 4096);
	assert_int_equal(gcs_auth_header(a, &b), 0);
	assert_int_equal(b.len, 0);
	a = gcs_auth_free(a);
	assert_null(a);

	/* An emulator from the environment means no credentials ... */
	o.anonymous = false;
	o.credentials = NULL;
	setenv("STORAGE_EMULATOR_HOST", "127.0.0.1:9", 1);
	setenv("GCE_METADATA_HOST", "127.0.0.1:1", 1);
	assert_int_equal(gcs_auth_new(&o, &a), 0);
	assert_string_equal(gcs_auth_kind(a), "anonymous");
	a = gcs_auth_free(a);
	/* ... but not when an explicit endpoint replaces it: ADC goes on to the
	 * (here unreachable) metadata server and fails fast. */
	o.endpoint = "http://127.0.0.1:9";
	assert_int_equal(gcs_auth_new(&o, &a), -ECONNREFUSED);
	assert_null(a);
	xprofs_buf_deinit(&b);
	assert_null(gcs_auth_free(NULL));
	clear_env();
}

static void test_bad_files_do_not_fall_through(void **state)
{
	struct xprofs_gcs_options o = {0};
	struct gcs_auth *a = NULL;
	static const struct {
		const char *json;
		int err;
	} cases[] = {
		{"{not json", -EINVAL},
		{"[1,2]", -EINVAL},
		/* external_account: malformed, or what is not supported */
		{"{\"type\":\"external_account\"}", -EINVAL},
		{"{\"type\":\"external_account\",\"audience\":\"a\",\"subject_token_type\":\"t\","
		 "\"token_url\":\"http://127.0.0.1:1/token\",\"credential_source\":{}}",
		 -EINVAL},
		{"{\"type\":\"external_account\",\"audience\":\"a\",\"subject_token_type\":\"t\","
		 "\"token_url\":\"http://127.0.0.1:1/token\",\"credential_source\":{\"file\":\"f\","
		 "\"url\":\"http://u\"}}",
		 -EINVAL},
		{"{\"type\":\"external_account\",\"audience\":\"a\",\"subject_token_type\":\"t\","
		 "\"token_url\":\"http://127.0.0.1:1/token\",\"credential_source\":{\"file\":\"f\","
		 "\"format\":{\"type\":\"json\"}}}",
		 -EINVAL},
		{"{\"type\":\"external_account\",\"credential_source\":{\"environment_id\":"
		 "\"aws1\"}}",
		 -ENOTSUP},
		{"{\"type\":\"external_account\",\"service_account_impersonation_url\":\"ftp://"
		 "x\"}",
		 -EINVAL},
		{"{\"type\":\"impersonated_service_account\"}", -EINVAL},
		{"{\"type\":\"impersonated_service_account\",\"service_account_impersonation_url\":"
		 "\"http://x\",\"source_credentials\":{\"type\":\"external_account\"}}",
		 -ENOTSUP},
		{"{\"type\":\"impersonated_service_account\",\"source_credentials\":{\"type\":"
		 "\"authorized_user\",\"client_id\":\"x\",\"client_secret\":\"y\",\"refresh_"
		 "token\":"
		 "\"z\"},\"service_account_impersonation_url\":\"http://x\",\"delegates\":[1]}",
		 -EINVAL},
		{"{\"client_email\":\"x\"}", -EINVAL},
		{"{\"type\":\"service_account\",\"client_email\":\"x\"}", -EINVAL},
		{"{\"type\":\"authorized_user\",\"client_id\":\"x\",\"client_secret\":\"y\"}",
		 -EINVAL},
		{"{\"type\":\"authorized_user\",\"client_id\":\"x\",\"client_secret\":\"y\","
		 "\"refresh_token\":\"z\",\"token_uri\":\"file:///etc/passwd\"}",
		 -EINVAL},
		/* A private key that is not RSA PEM: found when signing, at new(). */
		{"{\"type\":\"service_account\",\"client_email\":\"x\",\"private_key\":\"junk\","
		 "\"token_uri\":\"http://127.0.0.1:1/token\"}",
		 -EINVAL},
	};
	size_t i;
	char *path;

	clear_env();
	/* A metadata server that would answer were we to fall through. */
	setenv("GCE_METADATA_HOST", "127.0.0.1:1", 1);
	setenv("GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent/creds.json", 1);
	assert_int_equal(gcs_auth_new(&o, &a), -ENOENT);
	assert_null(a);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		path = temp_file(cases[i].json);
		o.credentials = path; /* the option beats the variable */
		assert_int_equal(gcs_auth_new(&o, &a), cases[i].err);
		assert_null(a);
		unlink(path);
		free(path);
	}
	/* A reachable-but-refusing token endpoint: connection refused. */
	path = temp_file(
		"{\"type\":\"authorized_user\",\"client_id\":\"x\",\"client_secret\":\"y\","
		"\"refresh_token\":\"z\",\"token_uri\":\"http://127.0.0.1:1/token\"}");
	o.credentials = path;
	assert_int_equal(gcs_auth_new(&o, &a), -ECONNREFUSED);
	unlink(path);
	free(path);
	clear_env();
}

static void test_adc_well_known_file(void **state)
{
	struct xprofs_gcs_options o = {0};
	struct gcs_auth *a = NULL;
	char dir[] = "/tmp/xprofs-test-adc-XXXXXX";
	char path[256];
	FILE *f;

	clear_env();
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/application_default_credentials.json", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"type\":\"bogus\"}", f);
	fclose(f);
	setenv("CLOUDSDK_CONFIG", dir, 1);
	setenv("GCE_METADATA_HOST", "127.0.0.1:1", 1);
	/* The well-known file is used (and its bad type reported) before the
	 * metadata server is tried. */
	assert_int_equal(gcs_auth_new(&o, &a), -ENOTSUP);
	unlink(path);
	/* Without it, the metadata server is next. */
	assert_int_equal(gcs_auth_new(&o, &a), -ECONNREFUSED);
	assert_null(a);
	rmdir(dir);
	clear_env();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_b64url_vectors),
		cmocka_unit_test(test_b64url_roundtrip_and_errors),
		cmocka_unit_test(test_jwt_claims_and_signature),
		cmocka_unit_test(test_jwt_rejects_bad_keys),
		cmocka_unit_test(test_token_parse),
		cmocka_unit_test(test_anonymous_and_emulator),
		cmocka_unit_test(test_bad_files_do_not_fall_through),
		cmocka_unit_test(test_adc_well_known_file),
	};

	xprofs_log_set_level(XPROFS_LOG_ERR);
	return cmocka_run_group_tests(tests, setup_key, teardown_key);
}
