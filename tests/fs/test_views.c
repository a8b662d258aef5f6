/*
 * tests/fs/test_views.c - unit tests of fs/views.c without FUSE: the
 * remembered sizes, render single-flight, error notes (a host's errors file),
 * and a whole open of a session summary.json over the in-memory fake store
 * (tests/lib), whose hosts cannot be opened: the render must still succeed,
 * note each host's failure, remember the size and report a size change once.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "fake_store.h"
#include "fs-internal.h"
#include "testutil.h"

static const char *const tree[] = {
	"tpu/plugins/profile/2025_01_01/host1.xplane.pb",
	"tpu/plugins/profile/2025_01_01/host2.xplane.pb",
	NULL,
};

struct fixture {
	struct fake_store store;
	struct fs_options o;
	struct fs_ctx ctx;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	fake_store_init(&f->store, tree);
	f->o.ro = 1; /* no capture service */
	f->o.refresh = 5;
	assert_int_equal(fs_ctx_init(&f->ctx, &f->o, &f->store.base, NULL), 0);
	fs_views_init(&f->ctx.views);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	fs_views_deinit(&f->ctx.views);
	fs_ctx_deinit(&f->ctx); /* frees the fake store: a no-op */
	free(f);
	return 0;
}

static void test_sizes(void **state)
{
	struct fs_ctx *ctx = &((struct fixture *)*state)->ctx;
	uint64_t size = 42;

	assert_false(fs_size_lookup(ctx, 5, &size));
	assert_int_equal(size, 42); /* untouched on a miss */
	fs_size_store(ctx, 5, 123);
	assert_true(fs_size_lookup(ctx, 5, &size));
	assert_int_equal(size, 123);
	fs_size_store(ctx, 5, 0);
	assert_true(fs_size_lookup(ctx, 5, &size));
	assert_int_equal(size, 0);
	/* a key sharing the slot replaces it */
	fs_size_store(ctx, 5 + FS_SIZES, 7);
	assert_false(fs_size_lookup(ctx, 5, &size));
	assert_true(fs_size_lookup(ctx, 5 + FS_SIZES, &size));
	assert_int_equal(size, 7);
}

struct waiter {
	struct fs_ctx *ctx;
	uint64_t key;
	bool got;
	int done; /* atomic */
};

static void *wait_render(void *arg)
{
	struct waiter *w = arg;

	w->got = fs_render_begin(w->ctx, w->key);
	__atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * wait_for() - poll until fs_render_begin() has @waiting threads blocked and
 * has woken at least @wakeups times (under the views' lock), for up to 30 s:
 * the test waits on the event, never on a fixed sleep.
 */
static void wait_for(struct fs_ctx *ctx, unsigned waiting, uint64_t wakeups)
{
	struct fs_views *v = &ctx->views;
	struct timespec ts = {0, 1000 * 1000};

	for (int i = 0; i < 30000; i++) {
		bool ok;

		pthread_mutex_lock(&v->lock);
		ok = v->render_waiting == waiting && v->render_wakeups >= wakeups;
		pthread_mutex_unlock(&v->lock);
		if (ok)
			return;
		nanosleep(&ts, NULL);
	}
	fail_msg("fs_render_begin(): %u threads waiting, %llu wakeups; want %u and >= %llu",
		 v->render_waiting, (unsigned long long)v->render_wakeups, waiting,
		 (unsigned long long)wakeups);
}

static void test_single_flight(void **state)
{
	struct fs_ctx *ctx = &((struct fixture *)*state)->ctx;
	struct waiter w = {ctx, 11, true, 0};
	pthread_t th;

	assert_true(fs_render_begin(ctx, 11));
	assert_true(fs_render_begin(ctx, 12)); /* another key renders at the same time */
	assert_int_equal(pthread_create(&th, NULL, wait_render, &w), 0);
	wait_for(ctx, 1, 0);
	assert_int_equal(__atomic_load_n(&w.done, __ATOMIC_ACQUIRE), 0); /* waits for key 11 */
	fs_render_end(ctx, 12);
	wait_for(ctx, 1, 1); /* woken by key 12's end, it waits again */
	assert_int_equal(__atomic_load_n(&w.done, __ATOMIC_ACQUIRE), 0); /* not for key 12 */
	fs_render_end(ctx, 11);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_false(w.got); /* it waited; the render is done, not its own */
	assert_int_equal(FS_CNT_GET(ctx, render_waits), 1);
	assert_true(fs_render_begin(ctx, 11)); /* free again */
	fs_render_end(ctx, 11);
}

static void test_single_flight_full(void **state)
{
	struct fs_ctx *ctx = &((struct fixture *)*state)->ctx;
	struct waiter w = {ctx, 1000, false, 0};
	pthread_t th;
	uint64_t k;

	for (k = 1; k <= FS_INFLIGHT; k++)
		assert_true(fs_render_begin(ctx, k));
	assert_int_equal(pthread_create(&th, NULL, wait_render, &w), 0);
	wait_for(ctx, 1, 0);
	assert_int_equal(__atomic_load_n(&w.done, __ATOMIC_ACQUIRE), 0); /* no free slot */
	fs_render_end(ctx, 3);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_true(w.got); /* a slot freed: it claims its own render */
	assert_int_equal(FS_CNT_GET(ctx, render_waits), 0);
	fs_render_end(ctx, 1000);
	for (k = 1; k <= FS_INFLIGHT; k++)
		fs_render_end(ctx, k);
}

/*
 * snapshot() - the errors file of @h at @st is @want: its lines without
 * their times ("<what>: <reason>\n" each), every time a UTC ISO 8601 one.
 */
static void snapshot(struct fs_ctx *ctx, const char *h, const struct xprofs_store_stat *st,
		     const char *want)
{
	struct xprofs_buf b, got;
	const char *l, *nl;

	xprofs_buf_init(&b, FS_MEM_MAX);
	xprofs_buf_init(&got, FS_MEM_MAX);
	assert_int_equal(fs_errors_snapshot(ctx, h, st, &b), 0);
	for (l = b.data; l && l < b.data + b.len; l = nl + 1) {
		nl = memchr(l, '\n', (size_t)(b.data + b.len - l));
		assert_non_null(nl);
		/* "YYYY-MM-DDTHH:MM:SSZ " */
		assert_true(nl - l > 21 && l[4] == '-' && l[10] == 'T' && l[19] == 'Z' &&
			    l[20] == ' ');
		assert_int_equal(xprofs_buf_add(&got, l + 21, (size_t)(nl + 1 - (l + 21))), 0);
	}
	assert_int_equal(got.len, strlen(want));
	if (got.len)
		assert_memory_equal(got.data, want, got.len);
	xprofs_buf_deinit(&got);
	xprofs_buf_deinit(&b);
}

static void test_error_notes(void **state)
{
	struct fs_ctx *ctx = &((struct fixture *)*state)->ctx;
	struct xprofs_store_stat v1 = {.type = XPROFS_STORE_FILE,
				       .size = 10,
				       .mtime_ns = 1000,
				       .generation = 1},
				 v2 = v1;
	char host[64], big[FS_ERRMAX], what[16];

	v2.generation = 2;
	snapshot(ctx, "h", &v1, "");
	fs_error_note(ctx, "h", &v1, "trace.json", "bad varint");
	fs_error_note(ctx, "h", &v1, "ops.json", "bad varint");
	snapshot(ctx, "h", &v1, "trace.json: bad varint\nops.json: bad varint\n");
	snapshot(ctx, "other", &v1, "");
	/* failing again: one entry per file, with its latest reason, in place */
	fs_error_note(ctx, "h", &v1, "trace.json", "truncated\nat 12");
	snapshot(ctx, "h", &v1, "trace.json: truncated at 12\nops.json: bad varint\n");
	/* made now: the entry goes; of another version or file: nothing changes */
	fs_error_clear(ctx, "h", &v2, "ops.json");
	fs_error_clear(ctx, "h", &v1, "summary.json");
	fs_error_clear(ctx, "other", &v1, "ops.json");
	snapshot(ctx, "h", &v1, "trace.json: truncated at 12\nops.json: bad varint\n");
	fs_error_clear(ctx, "h", &v1, "ops.json");
	snapshot(ctx, "h", &v1, "trace.json: truncated at 12\n");
	fs_error_clear(ctx, "h", &v1, "trace.json");
	snapshot(ctx, "h", &v1, "");
	fs_error_note(ctx, "h", &v1, "steps/3/trace.json", "x");
	/* another version of the profile: the old entries are not shown, then dropped */
	snapshot(ctx, "h", &v2, "");
	fs_error_note(ctx, "h", &v2, "summary.json", "truncated");
	snapshot(ctx, "h", &v2, "summary.json: truncated\n");
	snapshot(ctx, "h", &v1, "");
	/* a long reason is cut; past FS_ERRMAX bytes, the oldest entries go */
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	for (int i = 0; i < 9; i++) {
		snprintf(what, sizeof(what), "v%d", i);
		fs_error_note(ctx, "h", &v2, what, big);
	}
	{
		struct xprofs_buf b;

		xprofs_buf_init(&b, FS_MEM_MAX);
		assert_int_equal(fs_errors_snapshot(ctx, "h", &v2, &b), 0);
		assert_true(b.len <= FS_ERRMAX + 8 * 32);
		assert_null(strstr(b.data, "summary.json"));
		assert_null(strstr(b.data, " v0: "));
		assert_non_null(strstr(b.data, " v8: xxx"));
		xprofs_buf_deinit(&b);
	}
	/* at most FS_ERRENTS entries: the oldest go */
	for (int i = 0; i < FS_ERRENTS + 1; i++) {
		snprintf(what, sizeof(what), "e%d", i);
		fs_error_note(ctx, "h", &v1, what, "r");
	}
	{
		struct xprofs_buf b;

		xprofs_buf_init(&b, FS_MEM_MAX);
		assert_int_equal(fs_errors_snapshot(ctx, "h", &v1, &b), 0);
		assert_null(strstr(b.data, " e0: "));
		assert_non_null(strstr(b.data, " e1: r\n"));
		assert_non_null(strstr(b.data, " e64: r\n"));
		xprofs_buf_deinit(&b);
	}
	/* FS_ERRHOSTS hosts later, "h" has been evicted */
	for (int i = 0; i < FS_ERRHOSTS; i++) {
		snprintf(host, sizeof(host), "host%d", i);
		fs_error_note(ctx, host, &v1, "x", "y");
	}
	snapshot(ctx, "h", &v1, "");
	snapshot(ctx, "host255", &v1, "x: y\n");
}

/* Facts: per profile version; a version sharing the slot replaces them. */
static void test_facts(void **state)
{
	struct fs_ctx *ctx = &((struct fixture *)*state)->ctx;
	struct xprofs_store_stat v1 = {.type = XPROFS_STORE_FILE, .size = 10, .generation = 1},
				 v2 = v1;
	struct fs_facts f;

	v2.generation = 2;
	fs_facts_get(ctx, "h", &v1, &f);
	assert_int_equal(f.gpu, -1);
	assert_false(f.steps_known);
	fs_facts_set_gpu(ctx, "h", &v1, 0);
	fs_facts_set_steps(ctx, "h", &v1, 7);
	fs_facts_get(ctx, "h", &v1, &f);
	assert_int_equal(f.gpu, 0);
	assert_true(f.steps_known);
	assert_int_equal(f.steps, 7);
	fs_facts_get(ctx, "h", &v2, &f); /* another version knows nothing */
	assert_int_equal(f.gpu, -1);
	assert_false(f.steps_known);
	fs_facts_get(ctx, "g", &v1, &f); /* nor another host */
	assert_int_equal(f.gpu, -1);
	fs_facts_set_gpu(ctx, "h", &v1, 1);
	fs_facts_get(ctx, "h", &v1, &f); /* the steps stay */
	assert_int_equal(f.gpu, 1);
	assert_int_equal(f.steps, 7);
}

static void test_session_summary_open(void **state)
{
	struct fixture *f = *state;
	struct fs_ctx *ctx = &f->ctx;
	const struct xprofs_store_stat *st;
	struct fs_index *idx = NULL;
	struct fs_fh *fh, *fh2;
	struct fs_target t;
	struct xprofs_buf b;
	bool changed = false;
	char hp[XPROFS_PATH_MAX + 1], c;

	assert_int_equal(fs_index_build(&f->store.base, &idx), 0);
	assert_int_equal(fs_path_classify(idx, "/runs/tpu/2025_01_01/summary.json", &t), 0);
	assert_int_equal(t.kind, FS_K_SESSION_SUMMARY);
	assert_int_equal(fs_view_size(ctx, &t), 0); /* never rendered, no cache */

	fh = fs_fh_new(FS_FH_FD);
	assert_non_null(fh);
	assert_int_equal(fs_view_open(ctx, idx, &t, fh, &changed), 0);
	assert_true(changed); /* getattr said 0 */
	assert_int_equal(fh->kind, FS_FH_FD);
	assert_true(fh->size > 0);
	assert_int_equal(fs_view_pread(fh, &c, 1, 0), 1);
	assert_int_equal(c, '{');
	assert_int_equal(fs_view_size(ctx, &t), fh->size);
	assert_int_equal(FS_CNT_GET(ctx, renders), 1);

	/* the fake store cannot open the hosts: each failure is in its errors file */
	st = &t.session->hosts[0].st;
	assert_int_equal(fs_store_path(hp, sizeof(hp), "tpu", "2025_01_01", "host1"), 0);
	xprofs_buf_init(&b, FS_MEM_MAX);
	assert_int_equal(fs_errors_snapshot(ctx, hp, st, &b), 0);
	assert_non_null(b.data);
	assert_non_null(strstr(b.data, "summary: "));
	xprofs_buf_deinit(&b);

	/* the same size again: nothing for the kernel to drop */
	fh2 = fs_fh_new(FS_FH_FD);
	assert_non_null(fh2);
	assert_int_equal(fs_view_open(ctx, idx, &t, fh2, &changed), 0);
	assert_false(changed);
	assert_int_equal(fh2->size, fh->size);
	fs_fh_free(fh2);
	fs_fh_free(fh);
	fs_index_put(idx);
}

int main(void)
{
	return XT_RUN_FIXTURE_TESTS(setup, teardown, test_sizes, test_facts, test_single_flight,
				    test_single_flight_full, test_error_notes,
				    test_session_summary_open);
}
