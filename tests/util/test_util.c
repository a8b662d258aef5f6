/* test_util.c - unit tests for util/: bounded buffers, JSON escaping, readers, log levels,
 * temporary files, growable arrays, command-line tables. */
#include <errno.h>
#include <getopt.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"
#include "xprofs/util.h"

static void test_buf_cap(void **state)
{
	struct xprofs_buf b;

	xprofs_buf_init(&b, 8);
	assert_int_equal(xprofs_buf_adds(&b, "12345678"), 0);
	assert_int_equal(xprofs_buf_add(&b, "9", 1), -E2BIG);
	assert_int_equal(b.len, 8);
	assert_string_equal(b.data, "12345678");
	xprofs_buf_reset(&b);
	assert_int_equal(xprofs_buf_printf(&b, "%d-%s", 42, "x"), 0);
	assert_string_equal(b.data, "42-x");
	assert_int_equal(xprofs_buf_printf(&b, "%s", "toolongtext"), -E2BIG);
	assert_string_equal(b.data, "42-x");
	xprofs_buf_deinit(&b);
}

static void test_buf_steal(void **state)
{
	struct xprofs_buf b;
	size_t n;
	char *p;

	xprofs_buf_init(&b, 1 << 20);
	assert_null(xprofs_buf_steal(&b, &n));
	for (int i = 0; i < 1000; i++)
		assert_int_equal(xprofs_buf_adds(&b, "abc"), 0);
	p = xprofs_buf_steal(&b, &n);
	assert_int_equal(n, 3000);
	assert_int_equal(strlen(p), 3000);
	assert_int_equal(b.len, 0);
	free(p);
}

/* xprofs_buf_truncate(): shortens, never lengthens, keeps the NUL; on an empty buffer a no-op. */
static void test_buf_truncate(void **state)
{
	struct xprofs_buf b;

	xprofs_buf_init(&b, 64);
	xprofs_buf_truncate(&b, 0);
	assert_null(b.data);
	assert_int_equal(xprofs_buf_adds(&b, "abcdef"), 0);
	xprofs_buf_truncate(&b, 10);
	assert_string_equal(b.data, "abcdef");
	xprofs_buf_truncate(&b, 3);
	assert_int_equal(b.len, 3);
	assert_string_equal(b.data, "abc");
	assert_int_equal(xprofs_buf_adds(&b, "xy"), 0);
	assert_string_equal(b.data, "abcxy");
	xprofs_buf_reset(&b);
	assert_int_equal(b.len, 0);
	assert_string_equal(b.data, "");
	xprofs_buf_deinit(&b);
}

static void test_json_str(void **state)
{
	struct xprofs_buf b;

	xprofs_buf_init(&b, 1024);
	XT_BUF_IS(&b, xprofs_buf_add_json_str(&b, "a\"b\\c\n\x01", 7), "\"a\\\"b\\\\c\\n\\u0001\"");
	XT_BUF_IS(&b, xprofs_buf_add_json_str(&b, "\r\t\b\x1f", 4), "\"\\r\\t\\u0008\\u001f\"");
	/* valid UTF-8 passes, invalid bytes become U+FFFD, embedded NUL is escaped */
	XT_BUF_IS(&b, xprofs_buf_add_json_str(&b, "\xc3\xa9\xff\x00z", 5),
		  "\"\xc3\xa9\xef\xbf\xbd\\u0000z\"");
	/* overlong encoding and surrogates are invalid */
	XT_BUF_IS(&b, xprofs_buf_add_json_str(&b, "\xc0\xaf\xed\xa0\x80", 5),
		  "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
	xprofs_buf_deinit(&b);

	/* failure leaves the buffer unchanged */
	xprofs_buf_init(&b, 6);
	assert_int_equal(xprofs_buf_adds(&b, "ab"), 0);
	assert_int_equal(xprofs_buf_add_json_str(&b, "cdef", 4), -E2BIG);
	assert_string_equal(b.data, "ab");
	xprofs_buf_deinit(&b);
}

static void test_reader_mem(void **state)
{
	struct xprofs_reader r = xprofs_reader_mem("hello", 5);
	char buf[8];

	XT_SAME_BYTES(buf, xprofs_reader_pread(&r, buf, 8, 0), "hello", 5);
	XT_SAME_BYTES(buf, xprofs_reader_pread(&r, buf, 8, 3), "lo", 2);
	assert_int_equal(xprofs_reader_pread(&r, buf, 8, 5), 0);
	assert_int_equal(xprofs_reader_pread(&r, buf, 8, UINT64_MAX), 0);
}

static void test_log_level_parse(void **state)
{
	assert_int_equal(xprofs_log_level_parse("debug"), XPROFS_LOG_DEBUG);
	assert_int_equal(xprofs_log_level_parse("ERR"), XPROFS_LOG_ERR);
	assert_int_equal(xprofs_log_level_parse("6"), XPROFS_LOG_INFO);
	assert_int_equal(xprofs_log_level_parse("loud"), -EINVAL);
	assert_int_equal(xprofs_log_level_parse(""), -EINVAL);
}

static void test_size_parse(void **state)
{
	uint64_t v = 7;

	assert_int_equal(xprofs_size_parse("0", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(xprofs_size_parse("512", &v), 0);
	assert_int_equal(v, 512);
	assert_int_equal(xprofs_size_parse("4k", &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(xprofs_size_parse("2G", &v), 0);
	assert_int_equal(v, UINT64_C(2) << 30);
	assert_int_equal(xprofs_size_parse("3MiB", &v), 0);
	assert_int_equal(v, UINT64_C(3) << 20);
	assert_int_equal(xprofs_size_parse("1TB", &v), 0);
	assert_int_equal(v, UINT64_C(1) << 40);
	assert_int_equal(xprofs_size_parse("100B", &v), 0);
	assert_int_equal(v, 100);
	v = 7;
	assert_int_equal(xprofs_size_parse("-1", &v), -EINVAL);
	assert_int_equal(xprofs_size_parse(" 1", &v), -EINVAL);
	assert_int_equal(xprofs_size_parse("", &v), -EINVAL);
	assert_int_equal(xprofs_size_parse("1X", &v), -EINVAL);
	assert_int_equal(xprofs_size_parse("1iB", &v), -EINVAL);
	assert_int_equal(xprofs_size_parse("G", &v), -EINVAL);
	assert_int_equal(xprofs_size_parse(NULL, &v), -EINVAL);
	assert_int_equal(xprofs_size_parse("1Kx", &v), -EINVAL);
	assert_int_equal(xprofs_size_parse("99999999999T", &v), -EINVAL);
	assert_int_equal(xprofs_size_parse("18446744073709551616", &v), -EINVAL);
	assert_int_equal(v, 7);
}

static void test_hash(void **state)
{
	assert_true(xprofs_hash64("a", 1) != xprofs_hash64("b", 1));
	assert_true(xprofs_hash64("", 0) == 0xcbf29ce484222325ULL);
}

static void test_grow(void **state)
{
	uint32_t *v = NULL;
	size_t cap = 0, n;

	for (n = 0; n < 100; n++) {
		assert_int_equal(xprofs_grow(&v, &cap, n, sizeof(*v), 4), 0);
		assert_true(cap > n);
		v[n] = (uint32_t)n;
	}
	assert_int_equal(cap, 128); /* 4, then doubling */
	assert_int_equal(xprofs_grow(&v, &cap, 50, sizeof(*v), 4), 0);
	assert_int_equal(cap, 128); /* room already there: untouched */
	for (n = 0; n < 100; n++)
		assert_int_equal(v[n], n);
	free(v);
	v = NULL;
	cap = SIZE_MAX / 2 + 1;
	assert_int_equal(xprofs_grow(&v, &cap, cap, 1, 4), -ENOMEM);
	assert_null(v);
}

static void test_tmpfile(void **state)
{
	char dir[] = "/tmp/xprofs-test-tmpfile-XXXXXX";
	struct stat st;
	char got[4];
	int fd;

	assert_non_null(mkdtemp(dir));
	fd = xprofs_tmpfile(dir, "t");
	assert_true(fd >= 0);
	assert_int_equal(xprofs_write_full(fd, "abc", 3), 0);
	XT_SAME_BYTES(got, xprofs_pread_full(fd, got, 3, 0), "abc", 3);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_nlink, 0); /* never visible in @dir */
	close(fd);
	assert_int_equal(rmdir(dir), 0); /* so nothing was left there */
	assert_int_equal(xprofs_tmpfile("/nonexistent-xprofs-dir", "t"), -ENOENT);
}

/* xprofs_sleep_ms(): at least that long (no upper bound: a loaded machine may sleep longer). */
static void test_sleep_ms(void **state)
{
	int64_t t0 = xprofs_mono_ns();

	xprofs_sleep_ms(0);
	xprofs_sleep_ms(1030);
	assert_true(xprofs_mono_ns() - t0 >= 1030LL * 1000000);
}

/* xprofs_tmpdir(): the given dir, else $TMPDIR, else /tmp; empty strings count as unset. */
static void test_tmpdir(void **state)
{
	char *saved = getenv("TMPDIR") ? strdup(getenv("TMPDIR")) : NULL;
	char dir[] = "/tmp/xprofs-test-tmpdir-XXXXXX";
	struct stat st;
	int fd;

	assert_non_null(mkdtemp(dir));
	assert_int_equal(setenv("TMPDIR", "/var/tmp", 1), 0);
	assert_string_equal(xprofs_tmpdir("/x"), "/x");
	assert_string_equal(xprofs_tmpdir(NULL), "/var/tmp");
	assert_string_equal(xprofs_tmpdir(""), "/var/tmp");
	assert_int_equal(setenv("TMPDIR", "", 1), 0);
	assert_string_equal(xprofs_tmpdir(NULL), "/tmp");
	assert_int_equal(unsetenv("TMPDIR"), 0);
	assert_string_equal(xprofs_tmpdir(""), "/tmp");
	/* a NULL dir takes $TMPDIR: a file there, and ENOENT once $TMPDIR is gone */
	assert_int_equal(setenv("TMPDIR", dir, 1), 0);
	fd = xprofs_tmpfile(NULL, "t");
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	close(fd);
	assert_int_equal(setenv("TMPDIR", "/nonexistent-xprofs-dir", 1), 0);
	assert_int_equal(xprofs_tmpfile(NULL, "t"), -ENOENT);
	assert_int_equal(rmdir(dir), 0);
	if (saved)
		assert_int_equal(setenv("TMPDIR", saved, 1), 0);
	else
		assert_int_equal(unsetenv("TMPDIR"), 0);
	free(saved);
}

static int parse_even(const char *v, void *dst)
{
	int n = atoi(v);

	if (n % 2)
		return -EINVAL;
	*(int *)dst = n;
	return 0;
}

/* Runs xprofs_args_parse() over the NULL-terminated @argv with a fixed table. */
static int args_run(const char **argv, bool *flag, const char **str, int *even)
{
	const struct xprofs_arg args[] = {
		{"flag", 'f', XPROFS_ARG_FLAG, flag, NULL, NULL},
		{"str", 0, XPROFS_ARG_STR, str, NULL, NULL},
		{"even", 'e', XPROFS_ARG_FN, even, parse_even, "an even number"},
		{"help", 'h', XPROFS_ARG_STOP, NULL, NULL, NULL},
	};
	int argc = 0;

	while (argv[argc])
		argc++;
	optind = 0; /* a new command line: getopt_long() starts over */
	*flag = false;
	*str = NULL;
	*even = -1;
	return xprofs_args_parse("t", argc, (char **)argv, args, 4);
}

static void test_args_parse(void **state)
{
	const char *a1[] = {"t", "-f", "--str=x", "--even", "4", "op", NULL};
	const char *a2[] = {"t", "--str", "y", "-e6", "--help", "--flag", NULL};
	const char *a3[] = {"t", "--even", "3", NULL}, *a4[] = {"t", "--nope", NULL};
	const char *a5[] = {"t", "--str", NULL}, *a6[] = {"t", "-fz", NULL};
	const char *str;
	bool flag;
	int even;

	assert_int_equal(args_run(a1, &flag, &str, &even), -1);
	assert_true(flag);
	assert_string_equal(str, "x");
	assert_int_equal(even, 4);
	assert_int_equal(optind, 5); /* "op" (getopt_long() moves operands last) */
	assert_string_equal(a1[optind], "op");
	/* --help stops there: what came before is stored, --flag after it not read */
	assert_int_equal(args_run(a2, &flag, &str, &even), 3);
	assert_string_equal(str, "y");
	assert_int_equal(even, 6);
	assert_false(flag);
	/* a bad value, an unknown option, a missing value, an unknown letter */
	assert_int_equal(args_run(a3, &flag, &str, &even), -2);
	assert_int_equal(even, -1);
	assert_int_equal(args_run(a4, &flag, &str, &even), -2);
	assert_int_equal(args_run(a5, &flag, &str, &even), -2);
	assert_null(str);
	assert_int_equal(args_run(a6, &flag, &str, &even), -2);
	assert_int_equal(xprofs_args_parse("t", 1, (char **)a1, NULL, XPROFS_ARGS_MAX + 1), -2);
}

/* xprofs_mirror_map(): the second half is the first, so a write across the end wraps. */
static void test_mirror(void **state)
{
	size_t size = 64 << 10;
	uint8_t *m = xprofs_mirror_map(size);

	(void)state;
	assert_non_null(m);
	memcpy(m + size - 10, "0123456789abcdefghij", 20); /* one contiguous write past the end */
	assert_memory_equal(m + size - 10, "0123456789", 10);
	assert_memory_equal(m, "abcdefghij", 10); /* ... landed at the start */
	m[100] = 'x';
	assert_int_equal(m[size + 100], 'x');
	xprofs_mirror_unmap(m, size);
	xprofs_mirror_unmap(NULL, size);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_buf_cap),      cmocka_unit_test(test_buf_steal),
		cmocka_unit_test(test_buf_truncate), cmocka_unit_test(test_json_str),
		cmocka_unit_test(test_reader_mem),   cmocka_unit_test(test_log_level_parse),
		cmocka_unit_test(test_hash),         cmocka_unit_test(test_size_parse),
		cmocka_unit_test(test_tmpfile),      cmocka_unit_test(test_tmpdir),
		cmocka_unit_test(test_sleep_ms),     cmocka_unit_test(test_grow),
		cmocka_unit_test(test_args_parse),   cmocka_unit_test(test_mirror),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
