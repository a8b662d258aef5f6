/*
 * testutil.c - helpers the cmocka unit tests of several modules share: a
 * runner for tests that all use one fixture, and a collector for directory
 * listings. See testutil.h.
 */
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
