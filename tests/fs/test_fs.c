/*
 * tests/fs/test_fs.c - unit tests of fs/'s FUSE-free parts: the runs index
 * built over the in-memory fake store (tests/lib), mount-path classification
 * against it, the option helpers, and the permissions of files made from
 * several profiles (attr.c).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_store.h"
#include "fs-internal.h"
#include "xprofs/decode.h"

static struct fake_store fake;

static const char *const tree[] = {
	"plugins/profile/rootsess/r.xplane.pb",
	"tpu/plugins/profile/2025_01_01/host1.xplane.pb",
	"tpu/plugins/profile/2025_01_01/host2.xplane.pb",
	"tpu/plugins/profile/2025_01_01/host1.SSTABLE",
	"tpu/plugins/profile/2025_01_01/.cached_tools.json",
	"tpu/plugins/profile/2025_01_01/.xplane.pb",     /* no host name: ignored */
	"tpu/plugins/profile/2025_01_01/dir.xplane.pb/", /* a directory: ignored */
	"tpu/plugins/profile/2025_01_02/",               /* empty session */
	"tpu/plugins/profile/stray.txt",                 /* a file, not a session */
	"tpu/events.out.tfevents.1.profile-empty",
	"gpu/gemm/plugins/profile/s1/a.xplane.pb",        /* nested run */
	"gpu/gemm/deeper/plugins/profile/s2/b.xplane.pb", /* run inside a run */
	"gpu/other/notaprofile/",
	"noprofile/plugins/",      /* plugins without profile */
	"newrun/plugins/profile/", /* run without sessions */
	NULL,
};

static int setup(void **state)
{
	struct fs_index *idx = NULL;

	fake_store_init(&fake, tree);
	assert_int_equal(fs_index_build(&fake.base, &idx), 0);
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

/* Assert that @path names a thing of kind @want (into t, of the test's idx). */
#define CLASSIFY_AS(path, want)                                                                    \
	do {                                                                                       \
		assert_int_equal(fs_path_classify(idx, (path), &t), 0);                            \
		assert_int_equal(t.kind, (want));                                                  \
	} while (0)

static void test_classify(void **state)
{
	struct fs_index *idx = *state;
	struct fs_target t;

	CLASSIFY_AS("/", FS_K_ROOT);
	CLASSIFY_AS("/status.json", FS_K_STATUS);
	CLASSIFY_AS("/capture", FS_K_CAPTURE);
	assert_null(t.node);
	CLASSIFY_AS("/logdir", FS_K_LOGDIR);
	assert_string_equal(t.store_path, "");
	assert_int_equal(fs_path_classify(idx, "/logdir/a/b.txt", &t), 0);
	assert_string_equal(t.store_path, "a/b.txt");
	assert_int_equal(fs_path_classify(NULL, "/logdir/a/../b", &t), -ENOENT);
	assert_int_equal(fs_path_classify(idx, "/nope", &t), -ENOENT);
	assert_int_equal(fs_path_classify(idx, "relative", &t), -EINVAL);
	assert_int_equal(fs_path_classify(idx, "/status.json/x", &t), -ENOTDIR);

	CLASSIFY_AS("/runs", FS_K_RUNS);
	assert_ptr_equal(t.node, &idx->top);
	CLASSIFY_AS("/runs/gpu", FS_K_RUNS);
	assert_int_equal(fs_path_classify(idx, "/runs/gpu/capture", &t), -ENOENT); /* not a run */
	CLASSIFY_AS("/runs/gpu/gemm/capture", FS_K_CAPTURE);
	assert_string_equal(t.node->path, "gpu/gemm");
	CLASSIFY_AS("/runs/_root/rootsess/r", FS_K_HOST);
	assert_string_equal(t.node->path, "");

	CLASSIFY_AS("/runs/tpu/2025_01_01", FS_K_SESSION);
	CLASSIFY_AS("/runs/tpu/2025_01_01/summary.json", FS_K_SESSION_SUMMARY);
	/* session-wide views and compare/ (docs/fs.md "Compare") */
	CLASSIFY_AS("/runs/tpu/2025_01_01/ops.json", FS_K_SESSION_OPS);
	CLASSIFY_AS("/runs/tpu/2025_01_01/compare", FS_K_COMPARE);
	CLASSIFY_AS("/runs/tpu/2025_01_01/compare/2025_01_02", FS_K_COMPARE_DIR);
	assert_string_equal(t.other->name, "2025_01_02");
	assert_string_equal(t.other_node->path, "tpu");
	assert_string_equal(t.session->name, "2025_01_01");
	CLASSIFY_AS("/runs/tpu/2025_01_01/compare/2025_01_02/ops.json", FS_K_COMPARE_VIEW);
	assert_int_equal(t.view, XPROFS_VIEW_OPS);
	CLASSIFY_AS("/runs/tpu/2025_01_01/compare/2025_01_02/steps.json", FS_K_COMPARE_VIEW);
	assert_int_equal(t.view, XPROFS_VIEW_STEPS);
	CLASSIFY_AS("/runs/tpu/2025_01_01/compare/gpu", FS_K_COMPARE_RUN);
	CLASSIFY_AS("/runs/tpu/2025_01_01/compare/gpu/gemm", FS_K_COMPARE_RUN);
	CLASSIFY_AS("/runs/tpu/2025_01_01/compare/gpu/gemm/s1/ops.json", FS_K_COMPARE_VIEW);
	assert_string_equal(t.other_node->path, "gpu/gemm");
	assert_string_equal(t.other->name, "s1");
	CLASSIFY_AS("/runs/tpu/2025_01_01/compare/gpu/gemm/deeper/s2", FS_K_COMPARE_DIR);
	assert_string_equal(t.other_node->path, "gpu/gemm/deeper");
	CLASSIFY_AS("/runs/tpu/2025_01_01/compare/_root/rootsess", FS_K_COMPARE_DIR);
	assert_string_equal(t.other_node->path, "");
	CLASSIFY_AS("/runs/tpu/2025_01_01/compare/tpu/2025_01_02/steps.json", FS_K_COMPARE_VIEW);
	assert_ptr_equal(t.other_node, t.node);
	/* bad names: ENOENT, never a guess */
	assert_int_equal(fs_path_classify(idx, "/runs/tpu/2025_01_01/compare/nope", &t), -ENOENT);
	assert_int_equal(fs_path_classify(idx, "/runs/tpu/2025_01_01/compare/gpu/nope", &t),
			 -ENOENT);
	assert_int_equal(fs_path_classify(idx, "/runs/tpu/2025_01_01/compare/gpu/s1", &t),
			 -ENOENT); /* gpu is not a run */
	assert_int_equal(
		fs_path_classify(idx, "/runs/tpu/2025_01_01/compare/2025_01_02/trace.json", &t),
		-ENOENT);
	assert_int_equal(
		fs_path_classify(idx, "/runs/tpu/2025_01_01/compare/2025_01_02/ops.json/x", &t),
		-ENOTDIR);
	assert_int_equal(fs_path_classify(idx, "/runs/tpu/2025_01_01/ops.json/x", &t), -ENOTDIR);
	assert_int_equal(fs_path_classify(idx, "/runs/tpu/2025_01_01/compare/..", &t), -ENOENT);
	CLASSIFY_AS("/runs/tpu/2025_01_01/host2", FS_K_HOST);
	assert_string_equal(t.host->name, "host2");
	CLASSIFY_AS("/runs/tpu/2025_01_01/host2/trace.json", FS_K_VIEW);
	assert_int_equal(t.view, XPROFS_VIEW_TRACE);
	assert_string_equal(xprofs_decode_view_name(t.view), "trace.json");
	assert_int_equal(fs_path_classify(idx, "/runs/tpu/2025_01_01/host2/steps.json", &t), 0);
	assert_int_equal(t.view, XPROFS_VIEW_STEPS);
	assert_int_equal(fs_path_classify(idx, "/runs/tpu/2025_01_01/host2/trace.json.gz", &t), 0);
	assert_int_equal(t.kind, FS_K_VIEW);
	assert_int_equal(t.view, XPROFS_VIEW_TRACE_GZ);
	CLASSIFY_AS("/runs/tpu/2025_01_01/host2/errors", FS_K_ERRORS);
	CLASSIFY_AS("/runs/tpu/2025_01_01/host2/planes", FS_K_PLANES);
	CLASSIFY_AS("/runs/tpu/2025_01_01/host2/planes/%2Fdevice:TPU:0", FS_K_PLANE);
	assert_string_equal(t.plane, "%2Fdevice:TPU:0");
	CLASSIFY_AS("/runs/tpu/2025_01_01/host2/planes/p/XLA Ops.json", FS_K_TRACK);
	assert_string_equal(t.line, "XLA Ops.json");
	assert_int_equal(fs_path_classify(idx, "/runs/tpu/2025_01_01/host2/planes/p/l/x", &t),
			 -ENOTDIR);

	assert_int_equal(fs_path_classify(idx, "/runs/tpu/2025_01_01/host1.SSTABLE", &t), -ENOENT);
	assert_int_equal(fs_path_classify(idx, "/runs/tpu/2025_01_01/host3", &t), -ENOENT);
	assert_int_equal(fs_path_classify(idx, "/runs/tpu/2025_01_01/host2/nope.json", &t),
			 -ENOENT);
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

/* Slices: steps/<n>/ and window/<from>-<to>/ (µs, trace.json's base) with their views. */
static void test_classify_slices(void **state)
{
	static const char *const bad[] = {
		"window/abc",
		"window/5-5",
		"window/6-5",
		"window/1-",
		"window/-1",
		"window/1e3-2e3",
		"window/+1-2",
		"window/1.-2",
		"window/.5-2",
		"window/1-2-3",
		"window/1 -2",
		"window/1.1234567-2",
		"window/123456789012345678901-123456789012345678902",
		"window/0-99999999999999999999999999999999999999999999999999999999999999999",
		"steps/01",
		"steps/-1",
		"steps/x",
		"steps/1048576",
		"steps/1.5",
		"steps/0/ops.json",
		"window/1-2/steps.json",
		"window/1-2/nope",
		"steps/0/trace.json/x",
		"lod/ops.json",
		"lod/lod",
		"window/1-2/lod/steps.json",
	};
	struct fs_index *idx = *state;
	char p[256];
	struct fs_target t;

	CLASSIFY_AS("/runs/tpu/2025_01_01/host2/steps", FS_K_STEPS);
	CLASSIFY_AS("/runs/tpu/2025_01_01/host2/window", FS_K_WINDOWS);
	CLASSIFY_AS("/runs/tpu/2025_01_01/host2/steps/0", FS_K_SLICE);
	assert_int_equal(t.slice, FS_SLICE_STEP);
	assert_int_equal(t.step, 0);
	CLASSIFY_AS("/runs/tpu/2025_01_01/host2/steps/1048575/trace.json", FS_K_VIEW);
	assert_int_equal(t.slice, FS_SLICE_STEP);
	assert_int_equal(t.step, 1048575);
	assert_int_equal(t.view, XPROFS_VIEW_TRACE);
	CLASSIFY_AS("/runs/tpu/2025_01_01/host2/window/1700000000000001.5-1700000000000100",
		    FS_K_SLICE);
	assert_int_equal(t.slice, FS_SLICE_WINDOW);
	assert_true(t.from_ps == (xprofs_ps128)17000000000000015 * 100000);
	assert_true(t.to_ps == (xprofs_ps128)1700000000000100 * 1000000);
	CLASSIFY_AS("/runs/tpu/2025_01_01/host2/window/0-0.000001/trace.json", FS_K_VIEW);
	assert_true(t.from_ps == 0 && t.to_ps == 1);
	assert_int_equal(t.view, XPROFS_VIEW_TRACE);
	CLASSIFY_AS("/runs/tpu/2025_01_01/host2/window/99999999999999999998-"
		    "99999999999999999999.999999/trace.json",
		    FS_K_VIEW);
	assert_true(t.to_ps == (xprofs_ps128)100000000000000000LL * 1000000000 - 1); /* 10^26 - 1 */
	/* the level-of-detail trace: lod/ of the host and of a slice */
	CLASSIFY_AS("/runs/tpu/2025_01_01/host2/lod", FS_K_LOD);
	assert_true(t.lod);
	assert_int_equal(t.slice, FS_SLICE_NONE);
	CLASSIFY_AS("/runs/tpu/2025_01_01/host2/lod/trace.pftrace", FS_K_VIEW);
	assert_true(t.lod);
	assert_int_equal(t.view, XPROFS_VIEW_PFTRACE);
	CLASSIFY_AS("/runs/tpu/2025_01_01/host2/window/1-2/lod/trace.json", FS_K_VIEW);
	assert_true(t.lod);
	assert_int_equal(t.slice, FS_SLICE_WINDOW);
	assert_int_equal(t.view, XPROFS_VIEW_TRACE);
	CLASSIFY_AS("/runs/tpu/2025_01_01/host2/steps/3/lod", FS_K_LOD);
	assert_int_equal(t.slice, FS_SLICE_STEP);
	/* a plain view after a slice: the slice fields are reset */
	CLASSIFY_AS("/runs/tpu/2025_01_01/host2/trace.json", FS_K_VIEW);
	assert_int_equal(t.slice, FS_SLICE_NONE);
	assert_false(t.lod);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(p, sizeof(p), "/runs/tpu/2025_01_01/host2/%s", bad[i]);
		int r = fs_path_classify(idx, p, &t);

		if (r != -ENOENT && r != -ENOTDIR)
			fail_msg("%s: %d", p, r);
		if (strcmp(bad[i], "steps/0/trace.json/x"))
			assert_int_equal(r, -ENOENT);
	}
}

/* Why a slice name is refused (the daemon logs it): each reason names the part at fault. */
static void test_bad_name_why(void **state)
{
	static const struct {
		const char *name, *why;
	} cases[] = {
		{"window/abc", "\"abc\" has no '-' between <from> and <to>"},
		{"window/2000-1000", "<from> 2000 is not before <to> 1000"},
		{"window/5-5", "<from> 5 is not before <to> 5"},
		{"window/1e6-2e6", "<from> \"1e6\" is not a time"},
		{"window/1-2e6", "<to> \"2e6\" is not a time"},
		{"window/-1", "<from> \"\" is not a time"},
		{"window/1-2-3", "<to> \"2-3\" is not a time"},
		{"window/1.1234567-2", "<from> \"1.1234567\" is not a time"},
		{"window/123456789012345678901-123456789012345678902", "<from> \"1234"},
		{"window/0-99999999999999999999999999999999999999999999999999999999999999999",
		 "is longer than 64 bytes"},
		{"steps/01", "\"01\" is not a step"},
		{"steps/1048576", "\"1048576\" is not a step"},
	};
	struct fs_index *idx = *state;
	char p[256], why[512];
	struct fs_target t;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(p, sizeof(p), "/runs/tpu/2025_01_01/host2/%s", cases[i].name);
		assert_int_equal(fs_path_classify(idx, p, &t), -ENOENT);
		assert_non_null(t.bad);
		fs_bad_name_why(&t, why, sizeof(why));
		if (!strstr(why, cases[i].why))
			fail_msg("%s: \"%s\" lacks \"%s\"", cases[i].name, why, cases[i].why);
		/* every window reason recalls the syntax */
		if (!strncmp(cases[i].name, "window/", 7) &&
		    !strstr(why, "<from>-<to>: microseconds"))
			fail_msg("%s: no syntax in \"%s\"", cases[i].name, why);
	}
	/* not a slice name: nothing to explain */
	assert_int_equal(fs_path_classify(idx, "/runs/tpu/2025_01_01/host2/steps/0/ops.json", &t),
			 -ENOENT);
	assert_null(t.bad);
	assert_int_equal(fs_path_classify(idx, "/runs/tpu/2025_01_01/host2/nope", &t), -ENOENT);
	assert_null(t.bad);
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

/* A user as default_permissions sees one: uid, primary gid, supplementary groups. */
struct user {
	uid_t uid;
	gid_t gid;
	gid_t groups[2];
	int n;
};

static bool may_read(struct fs_perm p, const struct user *u)
{
	return fs_perm_readable(p, u->uid, u->gid, u->groups, u->n);
}

/*
 * A session file (summary.json, ops.json) is readable only by whom may read
 * its directory and every host: checked for every read-bit pattern and owner
 * pair of the directory and one host, and every user of a small world.
 */
static void test_session_perms(void **state)
{
	struct fs_options o = {.umask = 022};
	struct fs_ctx ctx = {.o = &o};
	char a[] = "a", b[] = "b", s[] = "s";
	struct fs_host hosts[2] = {{.name = a}, {.name = b}};
	struct fs_session sess = {.name = s, .hosts = hosts, .nhosts = 1};
	struct fs_target t = {.kind = FS_K_SESSION_OPS, .session = &sess};
	struct user users[64];
	size_t nu = 0;
	struct fs_perm p;

	(void)state;
	for (uid_t uid = 1; uid <= 3; uid++)
		for (gid_t gid = 10; gid <= 30; gid += 10)
			for (int g = 0; g < 4; g++)
				users[nu++] = (struct user){
					uid, gid, {g & 1 ? 10 : 30, g & 2 ? 20 : 30}, 2};
	for (unsigned dm = 0; dm < 8; dm++) {
		for (unsigned hm = 0; hm < 8; hm++) {
			for (unsigned own = 0; own < 16; own++) {
				struct fs_perm d, h;

				sess.mode = 040000 | (dm & 4 ? 0500 : 0) | (dm & 2 ? 050 : 0) |
					    (dm & 1 ? 05 : 0);
				sess.uid = 1 + (own & 1);
				sess.gid = own & 2 ? 10 : 20;
				hosts[0].st.mode = 0100000 | (hm & 4 ? 0600 : 0) |
						   (hm & 2 ? 060 : 0) | (hm & 1 ? 06 : 0);
				hosts[0].st.uid = 1 + (own >> 2 & 1);
				hosts[0].st.gid = own & 8 ? 10 : 20;
				p = fs_perm_session(&ctx, &t, false);
				d = fs_perm_src(&ctx, sess.mode, sess.uid, sess.gid, true);
				h = fs_perm_src(&ctx, hosts[0].st.mode, hosts[0].st.uid,
						hosts[0].st.gid, false);
				for (size_t i = 0; i < nu; i++)
					if (may_read(p, &users[i]) &&
					    (!may_read(d, &users[i]) || !may_read(h, &users[i])))
						fail_msg("dir %o %u:%u host %o %u:%u -> %o %u:%u: "
							 "uid %u "
							 "gid %u reads it",
							 sess.mode, sess.uid, sess.gid,
							 hosts[0].st.mode, hosts[0].st.uid,
							 hosts[0].st.gid, p.mode, p.uid, p.gid,
							 users[i].uid, users[i].gid);
				/* the same owners: exactly the bits both grant */
				if (sess.uid == hosts[0].st.uid && sess.gid == hosts[0].st.gid)
					assert_int_equal(p.mode,
							 sess.mode & hosts[0].st.mode & 0444);
			}
		}
	}
	/* issue 25 item 0: a 0600 root host in a 0755 session makes its files 0400 root */
	sess.mode = 040755;
	sess.uid = sess.gid = 0;
	hosts[0].st = (struct xprofs_store_stat){.mode = 0100644};
	hosts[1].st = (struct xprofs_store_stat){.mode = 0100600};
	sess.nhosts = 2;
	p = fs_perm_session(&ctx, &t, false);
	assert_int_equal(p.mode, 0400);
	assert_false(may_read(p, &users[0]));
	assert_true(fs_perm_readable(p, 0, 0, NULL, 0));
	/* the same through a link a user made: their session, root's target */
	sess.uid = sess.gid = 65534;
	hosts[0].st.uid = hosts[0].st.gid = 65534;
	p = fs_perm_session(&ctx, &t, false);
	assert_false(fs_perm_readable(p, 65534, 65534, NULL, 0));
	/* every host readable: the session directory's bits */
	hosts[1].st = hosts[0].st;
	p = fs_perm_session(&ctx, &t, false);
	assert_int_equal(p.mode, 0444);
	/* groups unknown: a group-only grant is not enough */
	assert_false(fs_perm_readable((struct fs_perm){0040, 1, 10}, 2, 20, NULL, -1));
	assert_true(fs_perm_readable((struct fs_perm){0044, 1, 10}, 2, 20, NULL, -1));
}

static void test_index_refcount_and_errors(void **state)
{
	static const char *const empty[] = {NULL};
	struct fs_index *idx = NULL, *ref;

	(void)state;
	fake_store_init(&fake, empty);
	assert_int_equal(fs_index_build(&fake.base, &idx), 0);
	assert_int_equal(idx->runs, 0);
	ref = fs_index_get(idx);
	assert_ptr_equal(ref, idx);
	fs_index_put(idx);
	fs_index_put(ref); /* freed here; ASan checks both */
	fs_index_put(NULL);
	assert_null(fs_index_get(NULL));
	fake_store_init(&fake, tree);
	assert_int_equal(fs_index_build(&fake.base, &idx), 0);
	assert_true(fake.lists > 0);
	fs_index_put(idx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_index_shape, setup, teardown),
		cmocka_unit_test_setup_teardown(test_classify, setup, teardown),
		cmocka_unit_test_setup_teardown(test_classify_slices, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_name_why, setup, teardown),
		cmocka_unit_test(test_store_path_and_names),
		cmocka_unit_test(test_index_refcount_and_errors),
		cmocka_unit_test(test_session_perms),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
