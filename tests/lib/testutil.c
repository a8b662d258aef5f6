/*
 * testutil.c - helpers the cmocka unit tests of several modules share: a
 * runner for tests that all use one fixture, a collector for directory
 * listings, and the message of a failed byte comparison. See testutil.h.
 */
#include <ctype.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"

int xt_run_fixture_tests(const char *names, const CMUnitTestFunction *fns, size_t n,
			 CMFixtureFunction setup, CMFixtureFunction teardown)
{
	struct CMUnitTest tests[XT_TESTS_MAX] = {{0}};
	char buf[XT_TESTS_MAX * 64], *save = NULL, *tok;
	size_t i = 0;

	if (n > XT_TESTS_MAX || strlen(names) >= sizeof(buf)) {
		fprintf(stderr, "xt_run_fixture_tests: more tests than %d\n", XT_TESTS_MAX);
		return 1;
	}
	snprintf(buf, sizeof(buf), "%s", names);
	for (tok = strtok_r(buf, ", ", &save); tok && i < n; tok = strtok_r(NULL, ", ", &save)) {
		tests[i] = (struct CMUnitTest){.name = tok,
					       .test_func = fns[i],
					       .setup_func = setup,
					       .teardown_func = teardown};
		i++;
	}
	if (i != n) {
		fprintf(stderr, "xt_run_fixture_tests: %zu names for %zu tests\n", i, n);
		return 1;
	}
	return _cmocka_run_group_tests("tests", tests, n, NULL, NULL);
}

int xt_names_add(void *arg, const char *name, const struct xprofs_store_stat *st)
{
	struct xt_names *n = arg;

	if (n->n >= XT_NAMES_MAX)
		return -ENOSPC;
	snprintf(n->v[n->n], sizeof(n->v[0]), "%s", name);
	n->types[n->n++] = st->type;
	return 0;
}

bool xt_names_has(const struct xt_names *n, const char *name, int type)
{
	for (int i = 0; i < n->n; i++)
		if (strcmp(n->v[i], name) == 0 && n->types[i] == type)
			return true;
	return false;
}

int xt_names_type(const struct xt_names *n, const char *name)
{
	for (int i = 0; i < n->n; i++)
		if (!strcmp(n->v[i], name))
			return n->types[i];
	return 0;
}

/* show() - up to @n bytes of @p at @from..@to as text: printable as is, others \xNN. */
static size_t show(char *out, size_t room, const unsigned char *p, size_t from, size_t to)
{
	size_t k = 0;

	for (size_t i = from; i < to && k + 5 < room; i++) {
		if (isprint(p[i]) && p[i] != '\\')
			out[k++] = (char)p[i];
		else
			k += (size_t)snprintf(out + k, room - k, "\\x%02x", p[i]);
	}
	out[k] = '\0';
	return k;
}

bool xt_bytes_diff(char *why, size_t n, const void *got, ssize_t got_n, const void *want,
		   size_t want_n)
{
	const unsigned char *g = got, *w = want;
	char gs[80], ws[80];
	size_t m, off = 0, lo, hi;

	if (got_n < 0) {
		snprintf(why, n, "the read failed: %zd (%s), want %zu bytes", got_n,
			 strerror((int)-got_n), want_n);
		return true;
	}
	m = (size_t)got_n < want_n ? (size_t)got_n : want_n;
	while (off < m && g[off] == w[off])
		off++;
	if (off == m && (size_t)got_n == want_n)
		return false;
	lo = off > 8 ? off - 8 : 0;
	hi = off + 8;
	show(gs, sizeof(gs), g, lo, hi < (size_t)got_n ? hi : (size_t)got_n);
	show(ws, sizeof(ws), w, lo, hi < want_n ? hi : want_n);
	snprintf(why, n,
		 "got %zd bytes, want %zu; first difference at offset %zu%s\n"
		 "  got  [%zu..]: \"%s\"\n  want [%zu..]: \"%s\"",
		 got_n, want_n, off, off == m ? " (one is a prefix of the other)" : "", lo, gs, lo,
		 ws);
	return true;
}
