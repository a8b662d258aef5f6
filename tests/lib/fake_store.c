/*
 * tests/lib/fake_store.c - the in-memory test store (see fake_store.h).
 *
 * Design: the tree is the list of paths itself; stat finds a path or a
 * directory prefix of one, list collects the distinct next components below
 * a directory in list order (quadratic; test trees are tiny).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "fake_store.h"

static struct fake_store *to_fake(struct xprofs_store *s)
{
	return (struct fake_store *)((char *)s - offsetof(struct fake_store, base));
}

static int fake_lookup(const struct fake_store *fs, const char *path, struct xprofs_store_stat *st)
{
	size_t n = strlen(path);

	memset(st, 0, sizeof(*st));
	if (!n) {
		st->type = XPROFS_STORE_DIR;
		return 0;
	}
	for (const char *const *p = fs->paths; *p; p++) {
		if (!strncmp(*p, path, n) && ((*p)[n] == '/' || !(*p)[n])) {
			st->type = (*p)[n] == '/' ? XPROFS_STORE_DIR : XPROFS_STORE_FILE;
			st->size = 100 + n;
			st->mtime_ns = 1000;
			st->generation = 7;
			return 0;
		}
	}
	return -ENOENT;
}

static int fake_stat(struct xprofs_store *s, const char *path, struct xprofs_store_stat *st)
{
	return fake_lookup(to_fake(s), path, st);
}

static int fake_list(struct xprofs_store *s, const char *dir, xprofs_store_list_cb cb, void *arg)
{
	struct fake_store *fs = to_fake(s);
	char seen[FAKE_STORE_MAX_NAMES][128];
	size_t nseen = 0, n = strlen(dir);
	struct xprofs_store_stat st;
	int r;

	fs->lists++;
	if (fake_lookup(fs, dir, &st) < 0)
		return -ENOENT;
	if (st.type != XPROFS_STORE_DIR)
		return -ENOTDIR;
	for (const char *const *p = fs->paths; *p; p++) {
		const char *rest, *slash;
		char name[128], full[512];
		size_t i;

		if (n && (strncmp(*p, dir, n) || (*p)[n] != '/'))
			continue;
		rest = *p + (n ? n + 1 : 0);
		slash = strchr(rest, '/');
		snprintf(name, sizeof(name), "%.*s",
			 (int)(slash ? (size_t)(slash - rest) : strlen(rest)), rest);
		if (!*name)
			continue;
		for (i = 0; i < nseen && strcmp(seen[i], name); i++)
			;
		if (i < nseen || nseen == FAKE_STORE_MAX_NAMES)
			continue;
		strcpy(seen[nseen++], name);
		snprintf(full, sizeof(full), "%s%s%s", dir, n ? "/" : "", name);
		fake_lookup(fs, full, &st);
		r = cb(arg, name, &st);
		if (r)
			return r;
	}
	return 0;
}

static void fake_free(struct xprofs_store *s)
{
	(void)s;
}

static const struct xprofs_store_ops fake_ops = {
	.backend = "fake",
	.stat = fake_stat,
	.list = fake_list,
	.free = fake_free,
};

void fake_store_init(struct fake_store *fs, const char *const *paths)
{
	static char source[] = "fake";

	memset(fs, 0, sizeof(*fs));
	fs->base.ops = &fake_ops;
	fs->base.source = source;
	fs->paths = paths;
}
