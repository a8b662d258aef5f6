/*
 * tests/fs/test_fs.c - unit tests of fs/'s FUSE-free parts: the runs index
 * built over a fake in-memory store, mount-path classification against it,
 * and the option helpers.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fs-internal.h"
#include "xprofs/decode.h"

/* ---- a fake store: a fixed list of paths (dirs end in '/') -------------- */

static const char *const *fake_paths;
static int fake_lists;

static int fake_lookup(const char *path, struct xprofs_store_stat *st)
{
	size_t n = strlen(path);

	memset(st, 0, sizeof(*st));
	if (!n) {
		st->type = XPROFS_STORE_DIR;
		return 0;
	}
	for (const char *const *p = fake_paths; *p; p++) {
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
	(void)s;
	return fake_lookup(path, st);
}

static int fake_list(struct xprofs_store *s, const char *dir, xprofs_store_list_cb cb, void *arg)
{
	char seen[64][128];
	size_t nseen = 0, n = strlen(dir);
	struct xprofs_store_stat st;
	int r;

	(void)s;
	fake_lists++;
	if (fake_lookup(dir, &st) < 0)
		return -ENOENT;
	if (st.type != XPROFS_STORE_DIR)
		return -ENOTDIR;
	for (const char *const *p = fake_paths; *p; p++) {
		const char *rest, *slash;
		char name[128], full[512];
		size_t i;

		if (n && (strncmp(*p, dir, n) || (*p)[n] != '/'))
			continue;
		rest = *p + (n ? n + 1 : 0);
		slash = strchr(rest, '/');
		snprintf(name, sizeof(name), "%.*s", (int)(slash ? (size_t)(slash - rest) : strlen(rest)), rest);
		if (!*name)
			continue;
		for (i = 0; i < nseen && strcmp(seen[i], name); i++)
			;
		if (i < nseen || nseen == 64)
			continue;
		strcpy(seen[nseen++], name);
		snprintf(full, sizeof(full), "%s%s%s", dir, n ? "/" : "", name);
		fake_lookup(full, &st);
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
	.backend = "fake", .stat = fake_stat, .list = fake_list, .free = fake_free,
};

static struct xprofs_store fake_store = { .ops = &fake_ops, .source = (char *)"fake" };

static const char *const tree[] = {
	"plugins/profile/rootsess/r.xplane.pb",
	"tpu/plugins/profile/2025_01_01/host1.xplane.pb",
	"tpu/plugins/profile/2025_01_01/host2.xplane.pb",
	"tpu/plugins/profile/2025_01_01/host1.SSTABLE",
	"tpu/plugins/profile/2025_01_01/.cached_tools.json",
	"tpu/plugins/profile/2025_01_01/.xplane.pb",       /* no host name: ignored */
	"tpu/plugins/profile/2025_01_01/dir.xplane.pb/",   /* a directory: ignored */
	"tpu/plugins/profile/2025_01_02/",                  /* empty session */
	"tpu/plugins/profile/stray.txt",                    /* a file, not a session */
	"tpu/events.out.tfevents.1.profile-empty",
	"gpu/gemm/plugins/profile/s1/a.xplane.pb",         /* nested run */
	"gpu/gemm/deeper/plugins/profile/s2/b.xplane.pb",  /* run inside a run */
	"gpu/other/notaprofile/",
	"noprofile/plugins/",                               /* plugins without profile */
	"newrun/plugins/profile/",                          /* run without sessions */
	NULL,
};

static int setup(void **state)
{
	struct fs_index *idx = NULL;

	fake_paths = tree;
	assert_int_equal(fs_index_build(&fake_store, &idx), 0);
	*state = idx;
	return 0;
}

static int teardown(void **state)
{
	fs_index_put(*state);
	return 0;
}

static void test_index_shape(void **state)
{
	struct fs_index *idx = *state;
	const struct fs_run_node *top = &idx->top, *n;

	assert_int_equal(idx->runs, 5);
	assert_int_equal(idx->sessions, 5);
	assert_int_equal(idx->hosts, 5);
	assert_int_equal(top->nchildren, 4); /* _root gpu newrun tpu (sorted) */
	assert_string_equal(top->children[0]->name, "_root");
	assert_string_equal(top->children[1]->name, "gpu");
	assert_string_equal(top->children[2]->name, "newrun");
	assert_string_equal(top->children[3]->name, "tpu");
	assert_false(top->is_run);

	n = fs_node_child(top, "_root");
	assert_true(n->is_run);
	assert_string_equal(n->path, "");
	assert_int_equal(n->nsessions, 1);

	n = fs_node_child(top, "tpu");
	assert_true(n->is_run);
	assert_string_equal(n->path, "tpu");
	assert_int_equal(n->nsessions, 2);
	assert_string_equal(n->sessions[0].name, "2025_01_01");
	assert_int_equal(n->sessions[0].nhosts, 2);
	assert_string_equal(n->sessions[0].hosts[0].name, "host1");
	assert_string_equal(n->sessions[0].hosts[1].name, "host2");
	assert_int_equal(n->sessions[0].hosts[0].st.generation, 7);
	assert_int_equal(n->sessions[1].nhosts, 0);

	n = fs_node_child(top, "gpu");
	assert_false(n->is_run); /* an intermediate directory */
	assert_null(fs_node_child(n, "other"));
	n = fs_node_child(n, "gemm");
	assert_true(n->is_run);
	assert_string_equal(n->path, "gpu/gemm");
	n = fs_node_child(n, "deeper");
	assert_true(n->is_run);
	assert_string_equal(n->path, "gpu/gemm/deeper");
	assert_string_equal(n->sessions[0].hosts[0].name, "b");

	assert_true(fs_node_child(top, "newrun")->is_run);
	assert_null(fs_node_child(top, "noprofile"));
}

static void test_classify(void **state)
{
	struct fs_index *idx = *state;
	struct fs_target t;

	assert_int_equal(fs_path_classify(idx, "/", &t), 0);
	assert_int_equal(t.kind, FS_K_ROOT);
	assert_int_equal(fs_path_classify(idx, "/status.json", &t), 0);
	assert_int_equal(t.kind, FS_K_STATUS);
	assert_int_equal(fs_path_classify(idx, "/capture", &t), 0);
	assert_int_equal(t.kind, FS_K_CAPTURE);
	assert_null(t.node);
	assert_int_equal(fs_path_classify(idx, "/logdir", &t), 0);
	assert_int_equal(t.kind, FS_K_LOGDIR);
	assert_string_equal(t.store_path, "");
	assert_int_equal(fs_path_classify(idx, "/logdir/a/b.txt", &t), 0);
	assert_string_equal(t.store_path, "a/b.txt");
	assert_int_equal(fs_path_classify(NULL, "/logdir/a/../b", &t), -ENOENT);
	assert_int_equal(fs_path_classify(idx, "/nope", &t), -ENOENT);
	assert_int_equal(fs_path_classify(idx, "relative", &t), -EINVAL);
	assert_int_equal(fs_path_classify(idx, "/status.json/x", &t), -ENOTDIR);

	assert_int_equal(fs_path_classify(idx, "/runs", &t), 0);
	assert_int_equal(t.kind, FS_K_RUNS);
	assert_ptr_equal(t.node, &idx->top);
	assert_int_equal(fs_path_classify(idx, "/runs/gpu", &t), 0);
	assert_int_equal(t.kind, FS_K_RUNS);
	assert_int_equal(fs_path_classify(idx, "/runs/gpu/capture", &t), -ENOENT); /* not a run */
	assert_int_equal(fs_path_classify(idx, "/runs/gpu/gemm/capture", &t), 0);
	assert_int_equal(t.kind, FS_K_CAPTURE);
	assert_string_equal(t.node->path, "gpu/gemm");
	assert_int_equal(fs_path_classify(idx, "/runs/_root/rootsess/r", &t), 0);
	assert_int_equal(t.kind, FS_K_HOST);
	assert_string_equal(t.node->path, "");

	assert_int_equal(fs_path_classify(idx, "/runs/tpu/2025_01_01", &t), 0);
	assert_int_equal(t.kind, FS_K_SESSION);
	assert_int_equal(fs_path_classify(idx, "/runs/tpu/2025_01_01/summary.json", &t), 0);
	assert_int_equal(t.kind, FS_K_SESSION_SUMMARY);
	assert_int_equal(fs_path_classify(idx, "/runs/tpu/2025_01_01/host2", &t), 0);
	assert_int_equal(t.kind, FS_K_HOST);
	assert_string_equal(t.host->name, "host2");
	assert_int_equal(fs_path_classify(idx, "/runs/tpu/2025_01_01/host2/trace.json", &t), 0);
	assert_int_equal(t.kind, FS_K_VIEW);
	assert_int_equal(t.view, XPROFS_VIEW_TRACE);
	assert_string_equal(xprofs_view_name(t.view), "trace.json");
	assert_int_equal(fs_path_classify(idx, "/runs/tpu/2025_01_01/host2/steps.json", &t), 0);
	assert_int_equal(t.view, XPROFS_VIEW_STEPS);
	assert_int_equal(fs_path_classify(idx, "/runs/tpu/2025_01_01/host2/errors", &t), 0);
	assert_int_equal(t.kind, FS_K_ERRORS);
	assert_int_equal(fs_path_classify(idx, "/runs/tpu/2025_01_01/host2/planes", &t), 0);
	assert_int_equal(t.kind, FS_K_PLANES);
	assert_int_equal(fs_path_classify(idx, "/runs/tpu/2025_01_01/host2/planes/%2Fdevice:TPU:0", &t), 0);
	assert_int_equal(t.kind, FS_K_PLANE);
	assert_string_equal(t.plane, "%2Fdevice:TPU:0");
	assert_int_equal(fs_path_classify(idx, "/runs/tpu/2025_01_01/host2/planes/p/XLA Ops.json", &t), 0);
	assert_int_equal(t.kind, FS_K_TRACK);
	assert_string_equal(t.line, "XLA Ops.json");
	assert_int_equal(fs_path_classify(idx, "/runs/tpu/2025_01_01/host2/planes/p/l/x", &t), -ENOTDIR);

	assert_int_equal(fs_path_classify(idx, "/runs/tpu/2025_01_01/host1.SSTABLE", &t), -ENOENT);
	assert_int_equal(fs_path_classify(idx, "/runs/tpu/2025_01_01/host3", &t), -ENOENT);
	assert_int_equal(fs_path_classify(idx, "/runs/tpu/2025_01_01/host2/nope.json", &t), -ENOENT);
	assert_int_equal(fs_path_classify(idx, "/runs/tpu/nosession", &t), -ENOENT);
	assert_int_equal(fs_path_classify(idx, "/runs/tpu/stray.txt", &t), -ENOENT);
	assert_int_equal(fs_path_classify(NULL, "/runs", &t), -ENOENT);
	{
		char longp[400] = "/runs/";

		memset(longp + 6, 'x', 300);
		longp[306] = '\0';
		assert_int_equal(fs_path_classify(idx, longp, &t), -ENAMETOOLONG);
	}
}

static void test_store_path_and_names(void **state)
{
	char buf[64], small[8];

	(void)state;
	assert_int_equal(fs_store_path(buf, sizeof(buf), "", NULL, NULL), 0);
	assert_string_equal(buf, "plugins/profile");
	assert_int_equal(fs_store_path(buf, sizeof(buf), "a/b", "s", "h"), 0);
	assert_string_equal(buf, "a/b/plugins/profile/s/h.xplane.pb");
	assert_int_equal(fs_store_path(buf, sizeof(buf), "a", "s", NULL), 0);
	assert_string_equal(buf, "a/plugins/profile/s");
	assert_int_equal(fs_store_path(small, sizeof(small), "a", "s", "h"), -ENAMETOOLONG);
	assert_true(fs_is_profile_name("x.xplane.pb"));
	assert_true(fs_is_profile_name("a/b/.xplane.pb"));
	assert_false(fs_is_profile_name("x.xplane.pb.tmp"));
	assert_false(fs_is_profile_name("x.SSTABLE"));
	assert_false(fs_is_profile_name("pb"));
}

static void test_index_refcount_and_errors(void **state)
{
	static const char *const empty[] = { NULL };
	struct fs_index *idx = NULL, *ref;

	(void)state;
	fake_paths = empty;
	assert_int_equal(fs_index_build(&fake_store, &idx), 0);
	assert_int_equal(idx->runs, 0);
	ref = fs_index_get(idx);
	assert_ptr_equal(ref, idx);
	fs_index_put(idx);
	fs_index_put(ref); /* freed here; ASan checks both */
	fs_index_put(NULL);
	assert_null(fs_index_get(NULL));
	fake_paths = tree;
	fake_lists = 0;
	assert_int_equal(fs_index_build(&fake_store, &idx), 0);
	assert_true(fake_lists > 0);
	fs_index_put(idx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_index_shape, setup, teardown),
		cmocka_unit_test_setup_teardown(test_classify, setup, teardown),
		cmocka_unit_test(test_store_path_and_names),
		cmocka_unit_test(test_index_refcount_and_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
