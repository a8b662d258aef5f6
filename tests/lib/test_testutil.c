/*
 * test_testutil.c - the cmocka helpers' own failure messages: what
 * XT_SAME_BYTES prints when a comparison fails (xt_bytes_diff()) must say
 * why (the errno, both sizes, the first differing offset and the bytes
 * around it), so the message cannot silently regress.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"

static void test_same(void **state)
{
	char why[XT_WHY_MAX] = "untouched";

	(void)state;
	assert_false(xt_bytes_diff(why, sizeof(why), "abc", 3, "abc", 3));
	assert_false(xt_bytes_diff(why, sizeof(why), "", 0, "", 0));
	XT_SAME_BYTES("abc", 3, "abc", 3);
}

static void test_differs(void **state)
{
	const char *want = "abcdefghij0123456789", *got = "abcdefghijX123456789tail";
	char why[XT_WHY_MAX];

	(void)state;
	assert_true(xt_bytes_diff(why, sizeof(why), got, 24, want, 20));
	assert_non_null(strstr(why, "got 24 bytes, want 20"));
	assert_non_null(strstr(why, "first difference at offset 10"));
	assert_non_null(strstr(why, "cdefghijX1234567"));
	assert_non_null(strstr(why, "cdefghij01234567"));
}

static void test_prefix_and_binary(void **state)
{
	const unsigned char a[] = {0, 1, 2, '\\'}, b[] = {0, 1, 2, '\\', 0xff};
	char why[XT_WHY_MAX];

	(void)state;
	assert_true(xt_bytes_diff(why, sizeof(why), a, 4, b, 5));
	assert_non_null(strstr(why, "got 4 bytes, want 5"));
	assert_non_null(strstr(why, "offset 4 (one is a prefix of the other)"));
	assert_non_null(strstr(why, "\\x00\\x01\\x02\\x5c\\xff"));
}

static void test_read_failed(void **state)
{
	char why[XT_WHY_MAX];

	(void)state;
	assert_true(xt_bytes_diff(why, sizeof(why), NULL, -EIO, "x", 1));
	assert_non_null(strstr(why, "the read failed: -5"));
	assert_non_null(strstr(why, strerror(EIO)));
}

int main(void)
{
	return XT_RUN_TESTS(test_same, test_differs, test_prefix_and_binary, test_read_failed);
}
