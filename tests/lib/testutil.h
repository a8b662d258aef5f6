/*
 * testutil.h - helpers the cmocka unit tests of several modules share.
 *
 * Design: small, assertion-making helpers, so that a test reads as the list
 * of facts it checks. Checks that should point at the test's own line are
 * macros; the rest are functions in testutil.c. Include after <cmocka.h>.
 * A failing comparison says why (XT_SAME_BYTES: sizes, first differing
 * offset, errno), as the shell and Python helpers do (tests/lib/xcheck.py).
 * Limits: xt_names holds XT_NAMES_MAX names of up to 63 bytes; a listing
 * with more entries fails with -ENOSPC. XT_RUN_FIXTURE_TESTS takes up to
 * XT_TESTS_MAX tests.
 */
#ifndef XPROFS_TESTUTIL_H
#define XPROFS_TESTUTIL_H

#include <stdbool.h>
#include <sys/types.h>

#include "xprofs/store.h"
#include "xprofs/util.h"

/*
 * Assert that @call (which appends to the xprofs_buf @b) returned 0 and left
 * exactly the string @want in @b; then empty @b for the next check.
 */
#define XT_BUF_IS(b, call, want)                                                                   \
	do {                                                                                       \
		assert_int_equal((call), 0);                                                       \
		assert_string_equal((b)->data, (want));                                            \
		xprofs_buf_reset(b);                                                               \
	} while (0)

#define XT_WHY_MAX 512 /* bytes of an XT_SAME_BYTES failure message */

/*
 * Assert that a read returned exactly the @want_n bytes at @want: @got_n is
 * the read's result (bytes at @got, or -errno). A failure says why at the
 * caller's line: the read's errno, or both sizes and the first differing
 * offset with the bytes around it (xt_bytes_diff()).
 */
#define XT_SAME_BYTES(got, got_n, want, want_n)                                                    \
	do {                                                                                       \
		char xt_why_[XT_WHY_MAX];                                                          \
		if (xt_bytes_diff(xt_why_, sizeof(xt_why_), (got), (ssize_t)(got_n), (want),       \
				  (size_t)(want_n)))                                               \
			fail_msg("%s", xt_why_);                                                   \
	} while (0)

/*
 * xt_bytes_diff() - whether @got_n (bytes at @got, or a -errno) differs from
 * the @want_n bytes at @want; if so, why into @why (@n bytes, always
 * terminated): the errno, or both sizes, the first differing offset and up
 * to 8 bytes each side (printable as is, others as \xNN). Borrows all.
 */
bool xt_bytes_diff(char *why, size_t n, const void *got, ssize_t got_n, const void *want,
		   size_t want_n);

#define XT_TESTS_MAX 64

/*
 * Run the test functions named in ... (in that order) as one cmocka group ("tests"), each
 * between @setup and @teardown (a fresh fixture per test), under their own
 * names; returns the number of failures, as cmocka_run_group_tests() does.
 */
#define XT_RUN_FIXTURE_TESTS(setup, teardown, ...)                                                 \
	xt_run_fixture_tests(#__VA_ARGS__, (const CMUnitTestFunction[]){__VA_ARGS__},              \
			     sizeof((const CMUnitTestFunction[]){__VA_ARGS__}) /                   \
				     sizeof(CMUnitTestFunction),                                   \
			     (setup), (teardown))

/* The same for tests without a fixture. */
#define XT_RUN_TESTS(...) XT_RUN_FIXTURE_TESTS(NULL, NULL, __VA_ARGS__)

/* XT_RUN_FIXTURE_TESTS' worker: @names is the comma-separated list of the @n @fns. */
int xt_run_fixture_tests(const char *names, const CMUnitTestFunction *fns, size_t n,
			 CMFixtureFunction setup, CMFixtureFunction teardown);

#define XT_NAMES_MAX 16

/* The entries of a directory listing: name and XPROFS_STORE_* type each. */
struct xt_names {
	char v[XT_NAMES_MAX][64];
	int types[XT_NAMES_MAX];
	int n;
};

/* A listing callback (xprofs_store_list and alike): appends to @arg, a struct xt_names. */
int xt_names_add(void *arg, const char *name, const struct xprofs_store_stat *st);

/* Whether @n holds an entry @name of @type. */
bool xt_names_has(const struct xt_names *n, const char *name, int type);

/* The type of the first entry @name in @n, or 0 when there is none. */
int xt_names_type(const struct xt_names *n, const char *name);

#endif
