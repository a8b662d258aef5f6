/*
 * testutil.c - helpers the cmocka unit tests of several modules share: a
 * collector for directory listings. See testutil.h.
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
