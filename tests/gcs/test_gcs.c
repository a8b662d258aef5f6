/*
 * tests/gcs/test_gcs.c - unit tests of the GCS client's pure parts: URL and
 * bucket parsing, name encoding, listing pages (including hostile JSON),
 * RFC 3339 times, Content-Range / Range headers, the errno mapping, the
 * retry classification and backoff, and the in-memory tree.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "gcs-internal.h"
#include "testutil.h"

static void test_url_parse(void **state)
{
	char *b = NULL, *p = NULL;

	assert_int_equal(gcs_url_parse("gs://my-bucket", &b, &p), 0);
	assert_string_equal(b, "my-bucket");
	assert_string_equal(p, "");
	free(b);
	free(p);
	assert_int_equal(gcs_url_parse("gs://my.bucket_1/a/b//", &b, &p), 0);
	assert_string_equal(b, "my.bucket_1");
	assert_string_equal(p, "a/b");
	free(b);
	free(p);
	assert_int_equal(gcs_url_parse("gs://bkt///logs/run1/", &b, &p), 0);
	assert_string_equal(p, "logs/run1");
	free(b);
	free(p);
	b = p = (char *)"untouched";
	assert_int_equal(gcs_url_parse("s3://bucket/x", &b, &p), -EINVAL);
	assert_string_equal(b, "untouched");
	assert_int_equal(gcs_url_parse("gs://", &b, &p), -EINVAL);
	assert_int_equal(gcs_url_parse("gs://ab", &b, &p), -EINVAL);
	assert_int_equal(gcs_url_parse("gs://Bucket", &b, &p), -EINVAL);
	assert_int_equal(gcs_url_parse("gs://bucket/a//b", &b, &p), -EINVAL);
	assert_int_equal(gcs_url_parse("gs://bucket/a/../b", &b, &p), -EINVAL);
	assert_int_equal(gcs_url_parse("gs://bucket/./b", &b, &p), -EINVAL);
	assert_int_equal(gcs_url_parse(NULL, &b, &p), -EINVAL);
}

static void check_endpoint(const struct xprofs_gcs_options *o, const char *want)
{
	char *e = gcs_endpoint_resolve(o);

	assert_non_null(e);
	assert_string_equal(e, want);
	free(e);
}

static void test_endpoint(void **state)
{
	struct xprofs_gcs_options o = {0};

	unsetenv("CLOUD_STORAGE_EMULATOR_ENDPOINT");
	unsetenv("STORAGE_EMULATOR_HOST");
	check_endpoint(&o, "https://storage.googleapis.com");
	setenv("STORAGE_EMULATOR_HOST", "localhost:9023", 1);
	check_endpoint(&o, "http://localhost:9023");
	setenv("STORAGE_EMULATOR_HOST", "https://emu:1/", 1);
	check_endpoint(&o, "https://emu:1");
	setenv("CLOUD_STORAGE_EMULATOR_ENDPOINT", "http://cpp-emu:2/storage/v1/", 1);
	check_endpoint(&o, "http://cpp-emu:2");
	o.endpoint = "http://127.0.0.1:5//";
	check_endpoint(&o, "http://127.0.0.1:5");
	unsetenv("CLOUD_STORAGE_EMULATOR_ENDPOINT");
	unsetenv("STORAGE_EMULATOR_HOST");
}

static void test_bucket_rules(void **state)
{
	static const struct {
		const char *name;
		bool valid;
	} cases[] = {
		{"abc", true},     {"a-b_c.d", true},        {"-abc", false},
		{"abc-", false},   {"a..b", false},          {"192.168.5.4", false},
		{"goog-x", false}, {"my-google-bkt", false}, {"a b", false},
	};
	char long64[65];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (gcs_bucket_valid(cases[i].name, strlen(cases[i].name)) != cases[i].valid)
			fail_msg("gcs_bucket_valid(\"%s\") is not %s", cases[i].name,
				 cases[i].valid ? "true" : "false");
	memset(long64, 'a', 64);
	long64[64] = '\0';
	assert_false(gcs_bucket_valid(long64, 64));
	assert_true(gcs_bucket_valid(long64, 63));
}

static void test_pct_encode(void **state)
{
	struct xprofs_buf b;

	xprofs_buf_init(&b, 1024);
	XT_BUF_IS(&b, gcs_pct_encode(&b, "run 1/plugins/a+b%~_.-Z9", 24),
		  "run%201%2Fplugins%2Fa%2Bb%25~_.-Z9");
	XT_BUF_IS(&b, gcs_pct_encode(&b, "\xc3\xa9?&=#", 6), "%C3%A9%3F%26%3D%23");
	xprofs_buf_deinit(&b);
	xprofs_buf_init(&b, 5);
	assert_int_equal(gcs_pct_encode(&b, "//", 2), -E2BIG);
	xprofs_buf_deinit(&b);
}

struct collect {
	char names[16][64];
	uint64_t sizes[16], gens[16];
	int64_t mtimes[16];
	int n;
	char *tok;        /* the next page token gcs_list_parse returned */
	unsigned skipped; /* the items it skipped */
};

static int collect_cb(void *arg, const struct gcs_item *it)
{
	struct collect *c = arg;

	if (c->n >= 16)
		return -ENOSPC;
	snprintf(c->names[c->n], sizeof(c->names[0]), "%.*s", (int)it->name_len, it->name);
	c->sizes[c->n] = it->size;
	c->gens[c->n] = it->generation;
	c->mtimes[c->n] = it->mtime_ns;
	c->n++;
	return 0;
}

/* gcs_list_parse(@page) into @c, its token and skip count included; returns its rc. */
static int list(struct collect *c, const char *page, size_t len)
{
	return gcs_list_parse(page, len, collect_cb, c, &c->tok, &c->skipped);
}

static void test_list_parse(void **state)
{
	const char *page =
		"{\"items\":[{\"name\":\"p/"
		"a.xplane.pb\",\"size\":\"12\",\"generation\":\"1700000000000001\","
		"\"updated\":\"2024-01-02T03:04:05.678Z\"},"
		"{\"name\":\"p/b\",\"size\":7,\"generation\":\"5\"}],\"nextPageToken\":\"tok/1=\"}";
	struct collect c = {.skipped = 99};

	assert_int_equal(list(&c, page, strlen(page)), 0);
	assert_int_equal(c.n, 2);
	assert_int_equal(c.skipped, 0);
	assert_string_equal(c.names[0], "p/a.xplane.pb");
	assert_int_equal(c.sizes[0], 12);
	assert_true(c.gens[0] == 1700000000000001ULL);
	assert_true(c.mtimes[0] == 1704164645678000000LL);
	assert_int_equal(c.sizes[1], 7);
	assert_int_equal(c.mtimes[1], 0);
	assert_non_null(c.tok);
	assert_string_equal(c.tok, "tok/1=");
	free(c.tok);

	/* last page: no token, no items */
	memset(&c, 0, sizeof(c));
	c.tok = (char *)"x";
	assert_int_equal(list(&c, "{}", 2), 0);
	assert_null(c.tok);
	assert_int_equal(c.n, 0);
}

static void test_list_parse_hostile(void **state)
{
	const char *page =
		"{\"items\":["
		"{\"size\":\"1\",\"generation\":\"1\"}," /* no name */
		"{\"name\":\"a\",\"size\":\"99999999999999999999999\",\"generation\":\"1\"}," /* huge */
		"{\"name\":\"b\",\"size\":\"-1\",\"generation\":\"1\"},"        /* negative */
		"{\"name\":\"c\",\"size\":\"1\",\"generation\":\"12abc\"},"     /* non-numeric */
		"{\"name\":\"d\",\"size\":\"1\"},"                              /* no generation */
		"{\"name\":\"e\",\"size\":1.5,\"generation\":\"1\"},"           /* float */
		"{\"name\":\"f\\u0000g\",\"size\":\"1\",\"generation\":\"1\"}," /* embedded NUL */
		"{\"name\":\"\",\"size\":\"1\",\"generation\":\"1\"},"          /* empty name */
		"42,"                                                           /* not an object */
		"{\"name\":\"ok\",\"size\":\"9223372036854775807\",\"generation\":\"2\","
		"\"updated\":\"garbage\"}"
		"]}";
	struct collect c = {0};

	assert_int_equal(list(&c, page, strlen(page)), 0);
	assert_int_equal(c.n, 1);
	assert_string_equal(c.names[0], "ok");
	assert_true(c.sizes[0] == INT64_MAX);
	assert_int_equal(c.skipped, 9);
	assert_null(c.tok);

	assert_int_equal(list(&c, "[]", 2), -EBADMSG);
	assert_int_equal(list(&c, "{\"items\":{}}", 12), -EBADMSG);
	assert_int_equal(list(&c, "{\"items\":[", 10), -EBADMSG);
	assert_int_equal(list(&c, "{\"nextPageToken\":5}", 19), -EBADMSG);
	assert_int_equal(list(&c, "{\"a\":1,\"a\":2}", 13), -EBADMSG);
}

static void test_time_parse(void **state)
{
	int64_t ns;

	assert_int_equal(gcs_time_parse("1970-01-01T00:00:00Z", &ns), 0);
	assert_int_equal(ns, 0);
	assert_int_equal(gcs_time_parse("2000-03-01T00:00:01.5Z", &ns), 0);
	assert_true(ns == 951868801500000000LL);
	assert_int_equal(gcs_time_parse("2000-03-01T01:00:01+01:00", &ns), 0);
	assert_true(ns == 951868801000000000LL);
	assert_int_equal(gcs_time_parse("2000-13-01T00:00:00Z", &ns), -EINVAL);
	assert_int_equal(gcs_time_parse("2000-01-01", &ns), -EINVAL);
	assert_int_equal(gcs_time_parse("2000-01-01T00:00:00", &ns), -EINVAL);
	assert_int_equal(gcs_time_parse("2000-01-01T00:00:00.Z", &ns), -EINVAL);
}

static void test_ranges(void **state)
{
	uint64_t a, b, t;

	assert_int_equal(gcs_content_range_parse("bytes 0-99/1000", &a, &b, &t), 0);
	assert_true(a == 0 && b == 99 && t == 1000);
	assert_int_equal(gcs_content_range_parse("bytes 5-5/6", &a, &b, &t), 0);
	assert_int_equal(gcs_content_range_parse("bytes */1000", &a, &b, &t), -ERANGE);
	assert_true(t == 1000);
	assert_int_equal(gcs_content_range_parse("bytes 10-5/100", &a, &b, &t), -EINVAL);
	assert_int_equal(gcs_content_range_parse("bytes 0-100/100", &a, &b, &t), -EINVAL);
	assert_int_equal(gcs_content_range_parse("bytes 0-1/2x", &a, &b, &t), -EINVAL);
	assert_int_equal(gcs_content_range_parse("bytes -1-2/3", &a, &b, &t), -EINVAL);
	assert_int_equal(gcs_content_range_parse("bytes 0-99999999999999999999/1", &a, &b, &t),
			 -EINVAL);
	assert_int_equal(gcs_content_range_parse("", &a, &b, &t), -EINVAL);
	assert_int_equal(gcs_content_range_parse(NULL, &a, &b, &t), -EINVAL);

	assert_int_equal(gcs_range_parse("bytes=0-262143", &a), 0);
	assert_true(a == 262144);
	assert_int_equal(gcs_range_parse("", &a), 0);
	assert_true(a == 0);
	assert_int_equal(gcs_range_parse("bytes=5-9", &a), -EINVAL);
	assert_int_equal(gcs_range_parse("bytes=0-", &a), -EINVAL);
}

static void test_errno_map(void **state)
{
	assert_int_equal(gcs_http_errno(200, CURLE_OK), 0);
	assert_int_equal(gcs_http_errno(206, CURLE_OK), 0);
	assert_int_equal(gcs_http_errno(308, CURLE_OK), 0);
	assert_int_equal(gcs_http_errno(404, CURLE_OK), -ENOENT);
	assert_int_equal(gcs_http_errno(401, CURLE_OK), -EACCES);
	assert_int_equal(gcs_http_errno(403, CURLE_OK), -EACCES);
	assert_int_equal(gcs_http_errno(412, CURLE_OK), -EEXIST);
	assert_int_equal(gcs_http_errno(416, CURLE_OK), -ERANGE);
	assert_int_equal(gcs_http_errno(429, CURLE_OK), -EAGAIN);
	assert_int_equal(gcs_http_errno(503, CURLE_OK), -EIO);
	assert_int_equal(gcs_http_errno(501, CURLE_OK), -ENOTSUP);
	assert_false(gcs_retryable(501, CURLE_OK));
	assert_int_equal(gcs_http_errno(0, CURLE_COULDNT_CONNECT), -ECONNREFUSED);
	assert_int_equal(gcs_http_errno(0, CURLE_COULDNT_RESOLVE_HOST), -EHOSTUNREACH);
	assert_int_equal(gcs_http_errno(0, CURLE_OPERATION_TIMEDOUT), -ETIMEDOUT);
	assert_int_equal(gcs_http_errno(200, CURLE_RECV_ERROR), -ECONNRESET);

	assert_true(gcs_retryable(503, CURLE_OK));
	assert_true(gcs_retryable(429, CURLE_OK));
	assert_true(gcs_retryable(408, CURLE_OK));
	assert_true(gcs_retryable(0, CURLE_RECV_ERROR));
	assert_true(gcs_retryable(0, CURLE_PARTIAL_FILE));
	assert_false(gcs_retryable(404, CURLE_OK));
	assert_false(gcs_retryable(412, CURLE_OK));
	assert_false(gcs_retryable(200, CURLE_OK));
	assert_false(gcs_retryable(0, CURLE_URL_MALFORMAT));
}

/* status.json's store and shared-cache client: the kinds each asks for, in enum order. */
static void test_counters_json(void **state)
{
	struct gcs_counters c;
	struct xprofs_buf b;
	int k;

	memset(&c, 0, sizeof(c));
	for (k = 0; k < GCS_REQ_KINDS; k++)
		atomic_store(&c.requests[k], 10 + k);
	atomic_store(&c.retries, 2);
	atomic_store(&c.errors, 3);
	atomic_store(&c.stale, 4);
	atomic_store(&c.bytes_down, 5);
	atomic_store(&c.bytes_up, 6);
	xprofs_buf_init(&b, 4096);
	XT_BUF_IS(&b, gcs_counters_json(&c, GCS_CTR_ALL_KINDS | GCS_CTR_STALE, &b),
		  "\"requests\":{\"list\":10,\"get\":11,\"upload\":12,\"delete\":13,\"other\":14},"
		  "\"retries\":2,\"errors\":3,\"stale\":4,\"bytes_downloaded\":5,"
		  "\"bytes_uploaded\":6");
	XT_BUF_IS(&b,
		  gcs_counters_json(&c,
				    GCS_CTR_KIND(GCS_REQ_LIST) | GCS_CTR_KIND(GCS_REQ_GET) |
					    GCS_CTR_KIND(GCS_REQ_UPLOAD),
				    &b),
		  "\"requests\":{\"list\":10,\"get\":11,\"upload\":12},\"retries\":2,"
		  "\"errors\":3,\"bytes_downloaded\":5,\"bytes_uploaded\":6");
	xprofs_buf_deinit(&b);
}

static void test_backoff(void **state)
{
	unsigned seed = 1, i, ms;

	for (i = 0; i < 200; i++) {
		ms = gcs_backoff_ms(100, 1000, 1, &seed);
		assert_true(ms >= 50 && ms <= 100);
		ms = gcs_backoff_ms(100, 1000, 3, &seed);
		assert_true(ms >= 200 && ms <= 400);
		ms = gcs_backoff_ms(100, 1000, 30, &seed);
		assert_true(ms >= 500 && ms <= 1000);
	}
}

static void test_object_parse(void **state)
{
	const char *obj = "{\"name\":\"x\",\"size\":\"42\",\"generation\":\"7\",\"updated\":\"2024-"
			  "01-01T00:00:00Z\"}";
	const char *rw = "{\"done\":false,\"rewriteToken\":\"abc\"}";
	struct xprofs_store_stat st;
	bool done = true;
	char *tok = NULL;

	assert_int_equal(gcs_object_parse(obj, strlen(obj), &st, NULL), 0);
	assert_int_equal(st.size, 42);
	assert_int_equal(st.generation, 7);
	assert_int_equal(gcs_object_parse(rw, strlen(rw), &st, &done), 0);
	assert_false(done);
	assert_int_equal(gcs_json_string(rw, strlen(rw), "rewriteToken", &tok), 0);
	assert_string_equal(tok, "abc");
	free(tok);
	assert_int_equal(gcs_object_parse("{\"size\":\"x\"}", 12, &st, NULL), -EBADMSG);
	assert_int_equal(gcs_object_parse("nope", 4, &st, NULL), -EBADMSG);
}

static void test_error_message(void **state)
{
	const char *e = "{\"error\":{\"code\":404,\"message\":\"No such object: b/o\"}}";
	char m[64];

	gcs_error_message(e, strlen(e), m, sizeof(m));
	assert_string_equal(m, "No such object: b/o");
	gcs_error_message("Not\nFound", 9, m, sizeof(m));
	assert_string_equal(m, "Not Found");
	gcs_error_message("{}", 2, m, sizeof(m));
	assert_string_equal(m, "");
}

static void test_tree(void **state)
{
	struct gcs_tree *t = NULL, *t2 = NULL;
	struct xprofs_store_stat st = {.type = XPROFS_STORE_FILE, .size = 5, .generation = 9}, out;
	struct xt_names n = {0};
	uint64_t nodes, bytes;

	assert_int_equal(gcs_tree_new(&t), 0);
	assert_int_equal(gcs_tree_add_file(t, "run1/plugins/profile/s1/h.xplane.pb", &st), 0);
	assert_int_equal(gcs_tree_add_file(t, "run1/events.out", &st), 0);
	assert_int_equal(gcs_tree_stat(t, "run1/plugins/profile", &out), 0);
	assert_int_equal(out.type, XPROFS_STORE_DIR);
	assert_int_equal(gcs_tree_stat(t, "run1/plugins/profile/s1/h.xplane.pb", &out), 0);
	assert_int_equal(out.type, XPROFS_STORE_FILE);
	assert_int_equal(out.size, 5);
	assert_int_equal(out.generation, 9);
	assert_int_equal(gcs_tree_stat(t, "nope", &out), -ENOENT);
	assert_int_equal(gcs_tree_list(t, "run1", xt_names_add, &n), 0);
	assert_int_equal(n.n, 2);
	assert_true(xt_names_has(&n, "plugins", XPROFS_STORE_DIR));
	assert_true(xt_names_has(&n, "events.out", XPROFS_STORE_FILE));
	assert_int_equal(gcs_tree_list(t, "run1/events.out", xt_names_add, &n), -ENOTDIR);

	/* replacing a file updates it in place */
	st.size = 6;
	assert_int_equal(gcs_tree_add_file(t, "run1/events.out", &st), 0);
	assert_int_equal(gcs_tree_stat(t, "run1/events.out", &out), 0);
	assert_int_equal(out.size, 6);

	/* file/dir conflicts: the directory wins */
	assert_int_equal(gcs_tree_add_file(t, "x", &st), 0);
	assert_int_equal(gcs_tree_add_file(t, "x/y", &st), 0);
	assert_int_equal(gcs_tree_stat(t, "x", &out), 0);
	assert_int_equal(out.type, XPROFS_STORE_DIR);
	assert_int_equal(gcs_tree_add_file(t, "run1", &st), -EEXIST);

	/* removal */
	assert_int_equal(gcs_tree_remove(t, "run1/plugins"), -ENOTEMPTY);
	assert_int_equal(gcs_tree_remove(t, "x/y"), 0);
	assert_int_equal(gcs_tree_remove(t, "x"), 0);
	assert_int_equal(gcs_tree_remove(t, "x"), -ENOENT);
	assert_int_equal(gcs_tree_remove(t, ""), -EBUSY);

	/* local directories survive into a new tree, others do not */
	assert_int_equal(gcs_tree_add_dir(t, "made/here", true), 0);
	assert_int_equal(gcs_tree_add_dir(t, "run1/events.out", true), -EEXIST);
	assert_int_equal(gcs_tree_new(&t2), 0);
	assert_int_equal(gcs_tree_copy_local_dirs(t, t2), 0);
	assert_int_equal(gcs_tree_stat(t2, "made/here", &out), 0);
	assert_int_equal(out.type, XPROFS_STORE_DIR);
	assert_int_equal(gcs_tree_stat(t2, "run1", &out), -ENOENT);

	gcs_tree_count(t, &nodes, &bytes);
	assert_int_equal(nodes,
			 9); /* root, run1, plugins, profile, s1, h, events.out, made, here */
	assert_true(bytes > nodes * 32);
	gcs_tree_free(t2);
	gcs_tree_free(t);
}

static void test_tree_many(void **state)
{
	struct gcs_tree *t = NULL;
	struct xprofs_store_stat st = {.type = XPROFS_STORE_FILE, .size = 1}, out;
	char p[64];
	int i;

	assert_int_equal(gcs_tree_new(&t), 0);
	for (i = 0; i < 5000; i++) {
		snprintf(p, sizeof(p), "d%d/f%d", i % 37, i);
		st.generation = (uint64_t)i + 1;
		assert_int_equal(gcs_tree_add_file(t, p, &st), 0);
	}
	for (i = 0; i < 5000; i += 7) {
		snprintf(p, sizeof(p), "d%d/f%d", i % 37, i);
		assert_int_equal(gcs_tree_stat(t, p, &out), 0);
		assert_int_equal(out.generation, (uint64_t)i + 1);
		assert_int_equal(gcs_tree_remove(t, p), 0);
		assert_int_equal(gcs_tree_stat(t, p, &out), -ENOENT);
	}
	gcs_tree_free(t);
}

int main(void)
{
	return XT_RUN_TESTS(test_url_parse, test_bucket_rules, test_endpoint, test_pct_encode,
			    test_list_parse, test_list_parse_hostile, test_time_parse, test_ranges,
			    test_errno_map, test_counters_json, test_backoff, test_object_parse,
			    test_error_message, test_tree, test_tree_many);
}
