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

/*
 * xt_bytes_diff() of @got (@ngot bytes, or -errno) and @want reports a
 * difference, and its text holds each of @says (NULL-ended).
 */
static void assert_diff_says(const void *got, ssize_t ngot, const void *want, size_t nwant,
			     const char *const says[])
{
	char why[XT_WHY_MAX];

	assert_true(xt_bytes_diff(why, sizeof(why), got, ngot, want, nwant));
	for (; *says; says++)
		if (!strstr(why, *says))
			fail_msg("\"%s\" is not in \"%s\"", *says, why);
}

static void test_differs(void **state)
{
	static const char *const says[] = {"got 24 bytes, want 20", "first difference at offset 10",
					   "cdefghijX1234567", "cdefghij01234567", NULL};

	(void)state;
	assert_diff_says("abcdefghijX123456789tail", 24, "abcdefghij0123456789", 20, says);
}

static void test_prefix_and_binary(void **state)
{
	static const unsigned char a[] = {0, 1, 2, '\\'}, b[] = {0, 1, 2, '\\', 0xff};
	static const char *const says[] = {"got 4 bytes, want 5",
					   "offset 4 (one is a prefix of the other)",
					   "\\x00\\x01\\x02\\x5c\\xff", NULL};

	(void)state;
	assert_diff_says(a, 4, b, 5, says);
}

static void test_read_failed(void **state)
{
	const char *const says[] = {"the read failed: -5", strerror(EIO), NULL};

	(void)state;
	assert_diff_says(NULL, -EIO, "x", 1, says);
}

int main(void)
{
	return XT_RUN_TESTS(test_same, test_differs, test_prefix_and_binary, test_read_failed);
}
