/*
 * tests/fs/fuzz_path.c - libFuzzer target for what fs/ parses from FUSE and
 * the command line: mount-path classification (against a small runs index
 * built over an in-memory fake store, and without an index), store path
 * validation, and size options.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fs-internal.h"

static const char *const tree[] = {
	"plugins/profile/rootsess/r.xplane.pb",
	"tpu/plugins/profile/2025_01_01/host1.xplane.pb",
	"tpu/plugins/profile/2025_01_01/host2.xplane.pb",
	"gpu/gemm/plugins/profile/s1/a.xplane.pb",
	"gpu/gemm/deeper/plugins/profile/s2/b.xplane.pb",
	NULL,
};

static int fake_lookup(const char *path, struct xprofs_store_stat *st)
{
	size_t n = strlen(path);

	memset(st, 0, sizeof(*st));
	if (!n) {
		st->type = XPROFS_STORE_DIR;
		return 0;
	}
	for (const char *const *p = tree; *p; p++) {
		if (!strncmp(*p, path, n) && ((*p)[n] == '/' || !(*p)[n])) {
			st->type = (*p)[n] == '/' ? XPROFS_STORE_DIR : XPROFS_STORE_FILE;
			return 0;
		}
	}
	return -ENOENT;
}

static int fake_stat(struct xprofs_store *s, const char *path, struct xprofs_store_stat *st)
{
	(void)s;
	return fake_lookup(path, st);
}

/* lists the distinct next components below @dir (quadratic; tiny tree) */
static int fake_list(struct xprofs_store *s, const char *dir, xprofs_store_list_cb cb, void *arg)
{
	size_t n = strlen(dir);
	struct xprofs_store_stat st;

	(void)s;
	for (const char *const *p = tree; *p; p++) {
		const char *rest, *slash;
		char name[128], full[512];
		bool dup = false;

		if (n && (strncmp(*p, dir, n) || (*p)[n] != '/'))
			continue;
		rest = *p + (n ? n + 1 : 0);
		slash = strchr(rest, '/');
		snprintf(name, sizeof(name), "%.*s", (int)(slash ? (size_t)(slash - rest) : strlen(rest)), rest);
		for (const char *const *q = tree; q < p; q++)
			if (!strncmp(*q, *p, (size_t)(rest - *p) + strlen(name)) &&
			    ((*q)[(rest - *p) + strlen(name)] == '/' || !(*q)[(rest - *p) + strlen(name)]))
				dup = true;
		if (dup)
			continue;
		snprintf(full, sizeof(full), "%s%s%s", dir, n ? "/" : "", name);
		fake_lookup(full, &st);
		if (cb(arg, name, &st))
			return 1;
	}
	return 0;
}

static void fake_free(struct xprofs_store *s)
{
	(void)s;
}

static const struct xprofs_store_ops fake_ops = {
	.backend = "fake", .stat = fake_stat, .list = fake_list, .free = fake_free,
};

static struct xprofs_store fake_store = { .ops = &fake_ops, .source = (char *)"fake" };
static struct fs_index *idx;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fs_target t;
	uint64_t v;
	char *s;

	if (!idx && fs_index_build(&fake_store, &idx) < 0)
		abort();
	if (size > 8192)
		return 0;
	s = malloc(size + 2);
	if (!s)
		return 0;
	s[0] = '/';
	memcpy(s + 1, data, size);
	s[size + 1] = '\0';
	if (fs_path_classify(idx, s, &t) == 0 && t.kind == FS_K_LOGDIR &&
	    !xprofs_store_path_valid(t.store_path))
		abort(); /* a classified mirror path must be a valid store path */
	(void)fs_path_classify(NULL, s, &t);
	(void)fs_path_classify(idx, s + 1, &t);
	(void)xprofs_store_path_valid(s + 1);
	(void)xprofs_size_parse(s + 1, &v);
	(void)fs_is_profile_name(s + 1);
	free(s);
	return 0;
}
