/*
 * test_decode_slices.c - unit tests of the decode module's slices and
 * concurrency (cmocka, TAP): the checkpoint index and windowed renders, the
 * pread() path against the zero-copy one, and several renders of one xspace
 * at once.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <zlib.h>

#include "decode_fixture.h"

/* ---- slices: the checkpoint index and windowed renders --------------- */

/* How many times @needle occurs in @hay. */
static size_t count_of(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *q = hay; (q = strstr(q, needle)); q += strlen(needle))
		n++;
	return n;
}

/* trace.json of @x with window [from, to) (ps, trace.json's base): its X events. */
static size_t window_events(struct xprofs_xspace *x, xprofs_ps128 from, xprofs_ps128 to)
{
	struct xprofs_render_opts ro = {.window = true, .from_ps = from, .to_ps = to};
	char *t = render_opts(x, XPROFS_VIEW_TRACE, 0, &ro);
	size_t n = count_of(t, "\"ph\":\"X\"");

	free(t);
	return n;
}

/*
 * One line of 10,000 events: event 0 is long (it spans them all), event i
 * in [i us, i us + 500 ps); a second, unsorted line. The index keeps a
 * checkpoint every XS_CKPT_EVERY events with the latest end before it,
 * and a window render keeps exactly the overlapping events, the long one
 * included although it lies before the checkpoint the walk seeks to.
 */
static void test_slices(void **state)
{
	struct tb *b = tb_new();
	XPlane *p = tb_plane(b, 0, "/device:TPU:0");
	XLine *l = tb_line(b, p, 1, "XLA Ops", 1000); /* base 1,000,000 ps */
	XLine *u = tb_line(b, p, 2, "Stream #2", 1000);
	const size_t nev = 10000;
	const int64_t base = 1000000, long_end = 20000000000LL;
	struct xprofs_step_window *w = NULL;
	struct xprofs_buf err;
	const struct xs_line *dl;
	struct opened o;
	struct xprofs_xspace *x;
	size_t ns;

	tb_evmd(b, p, 1, "op", NULL);
	l->events = tb_alloc(b, nev * sizeof(*l->events));
	for (size_t i = 0; i < nev; i++) {
		XEvent *e = tb_alloc(b, sizeof(*e));

		tensorflow__profiler__xevent__init(e);
		e->metadata_id = 1;
		e->data_case = TENSORFLOW__PROFILER__XEVENT__DATA_OFFSET_PS;
		e->offset_ps = (int64_t)i * 1000000;
		e->duration_ps = i ? 500 : long_end;
		l->events[l->n_events++] = e;
	}
	tb_event(b, u, 1, 5000000000LL, 10); /* unsorted: the later event comes first */
	tb_event(b, u, 1, 3000000000LL, 10);
	x = opened_new(&o, b);
	dl = &x->lines[0];
	assert_int_equal(dl->events, nev);
	assert_int_equal(dl->n_ckpt, (nev - 1) / XS_CKPT_EVERY);
	assert_false(dl->unsorted);
	assert_true(x->lines[1].unsorted);
	for (size_t k = 0; k < dl->n_ckpt; k++) {
		assert_int_equal(dl->ckpt[k].max_end, long_end);
		assert_true(dl->ckpt[k].off > dl->msg.off &&
			    dl->ckpt[k].off < dl->msg.off + dl->msg.len);
		assert_int_equal(o.buf[dl->ckpt[k].off], 0x22); /* XLine.events, wire type 2 */
	}
	/* events 5000 and 5001 overlap, the long event 0 and the unsorted line's first */
	assert_int_equal(window_events(x, base + 5000000000LL, base + 5001000001LL), 4);
	/* ends are exclusive: event 5000 ends at 5e9 + 500 */
	assert_int_equal(window_events(x, base + 5000000500LL, base + 5001000000LL), 1);
	/* both lines: the unsorted line's events are found past its first later one */
	assert_int_equal(window_events(x, base + 2999999999LL, base + 3000000001LL), 3);
	assert_int_equal(window_events(x, base + 2999999999LL, base + 5000000001LL), 2000 + 1 + 3);
	assert_int_equal(window_events(x, base + long_end, base + long_end + 1), 0);
	assert_int_equal(window_events(x, 0, (xprofs_ps128)1 << 100), nev + 2);
	assert_int_equal(window_events(x, (xprofs_ps128)1 << 63, (xprofs_ps128)1 << 64), 0);
	assert_int_equal(window_events(x, 7, 7), 0); /* empty */
	/* no Steps line: no step windows */
	xprofs_buf_init(&err, 4096);
	assert_int_equal(xprofs_decode_steps(x, &w, &ns, &err), 0);
	assert_int_equal(ns, 0);
	assert_null(w);
	xprofs_buf_deinit(&err);
	opened_free(&o);
}

/* xprofs_decode_steps(): steps.json's steps, in its order, as exact windows. */
static void test_step_windows(void **state)
{
	struct xprofs_step_window *w = NULL;
	struct xprofs_buf err;
	struct opened o;
	struct xprofs_xspace *x;
	size_t n = 0;

	x = opened_new(&o, sample());
	xprofs_buf_init(&err, 4096);
	assert_int_equal(xprofs_decode_steps(x, &w, &n, &err), 0);
	assert_int_equal(n, 0); /* as test_steps: no step of XProf's (test_steps.py has them) */
	assert_null(w);
	xprofs_buf_deinit(&err);
	opened_free(&o);
}

/* session_json() - @fn's output parsed (asserts success). */
static json_t *session_json(struct xprofs_buf *out)
{
	json_t *j = json_loads(out->data, 0, NULL);

	assert_non_null(j);
	xprofs_buf_reset(out);
	return j;
}

/*
 * A session of two hosts for the session views: @xs[0] sample() (in @o),
 * @xs[1] a host that did not open. Returns a sink into @out (deinit it).
 */
static struct xprofs_sink session_two(struct opened *o, struct xprofs_xspace **xs,
				      struct xprofs_buf *out)
{
	xs[0] = opened_new(o, sample());
	xs[1] = NULL;
	xprofs_buf_init(out, 1 << 20);
	return xprofs_sink_buf(out);
}

static void test_session_summary(void **state)
{
	const char *hosts[] = {"a", "b"};
	const char *errs[] = {NULL, "truncated"};
	struct opened o;
	struct xprofs_xspace *xs[2];
	struct xprofs_buf out;
	struct xprofs_sink s;
	json_t *j;

	s = session_two(&o, xs, &out);
	assert_int_equal(xprofs_decode_session_summary("sess", hosts, xs, errs, 2, &s), 0);
	j = session_json(&out);
	assert_string_equal(jstr(j, "session"), "sess");
	assert_int_equal(jint(j, "hosts.0.events"), 8);
	assert_string_equal(jstr(j, "hosts.1.error"), "truncated");
	assert_int_equal(jint(j, "events"), 8);
	json_decref(j);
	xprofs_buf_deinit(&out);
	opened_free(&o);
}

/*
 * The session-wide views (view-session.c): a host that did not open keeps
 * its error and adds nothing; empty sessions give null tables; bad
 * arguments are -EINVAL; a failing sink fails the call, never a crash.
 */
static void test_session_views(void **state)
{
	const char *hosts[] = {"a", "b"}, *errs[] = {NULL, "truncated"};
	struct xprofs_xspace *xs[2];
	struct opened o;
	struct xprofs_buf out;
	struct xprofs_sink s;
	json_t *j;

	s = session_two(&o, xs, &out);
	struct xprofs_session_in both = {"s2", hosts, xs, errs, 2},
				 one = {"s1", hosts, xs, NULL, 1};
	struct xprofs_session_in none = {"s0", NULL, NULL, NULL, 0}, bad = {"x", NULL, xs, NULL, 1};

	assert_int_equal(xprofs_decode_session_ops(&both, &s), 0);
	j = session_json(&out);
	assert_string_equal(jstr(j, "session"), "s2");
	assert_true(json_is_null(jget(j, "hosts.0.error")));
	assert_string_equal(jstr(j, "hosts.1.error"), "truncated");
	json_decref(j);

	assert_int_equal(xprofs_decode_session_ops(&none, &s), 0);
	j = session_json(&out);
	assert_true(json_is_null(jget(j, "device")) && json_is_null(jget(j, "host")));
	json_decref(j);

	/* a session against itself: every delta 0 */
	assert_int_equal(xprofs_decode_compare(XPROFS_VIEW_OPS, &one, &both, &s), 0);
	j = session_json(&out);
	assert_string_equal(jstr(j, "base.session"), "s1");
	assert_string_equal(jstr(j, "new.session"), "s2");
	for (size_t i = 0; i < 2; i++) {
		json_t *t = json_object_get(j, i ? "host" : "device"), *op;
		size_t k;

		if (json_is_null(t))
			continue;
		json_array_foreach(json_object_get(t, "ops"), k, op)
		{
			assert_int_equal(json_integer_value(json_object_get(op, "delta_self_ps")),
					 0);
			assert_string_equal(json_string_value(json_object_get(op, "in")), "both");
		}
	}
	json_decref(j);
	assert_int_equal(xprofs_decode_compare(XPROFS_VIEW_STEPS, &none, &one, &s), 0);
	j = session_json(&out);
	assert_true(json_is_null(jget(j, "step_time.avg_ps_base")));
	assert_true(json_is_null(jget(j, "step_time.delta_avg_ps")));
	assert_string_equal(jstr(j, "hosts.0.in"), "new");
	json_decref(j);

	assert_int_equal(xprofs_decode_compare(XPROFS_VIEW_TRACE, &one, &one, &s), -EINVAL);
	assert_int_equal(xprofs_decode_compare(XPROFS_VIEW_OPS, &bad, &one, &s), -EINVAL);
	assert_int_equal(xprofs_decode_compare(XPROFS_VIEW_OPS, NULL, &one, &s), -EINVAL);
	assert_int_equal(xprofs_decode_session_ops(&one, NULL), -EINVAL);
	assert_int_equal(xprofs_decode_session_ops(&bad, &s), -EINVAL);
	/* the sink fails anywhere before the end: an error back, never a crash */
	assert_int_equal(xprofs_decode_session_ops(&both, &s), 0);
	size_t n_ops = out.len;
	xprofs_buf_reset(&out);
	assert_int_equal(xprofs_decode_compare(XPROFS_VIEW_STEPS, &one, &both, &s), 0);
	size_t n_steps = out.len;
	xprofs_buf_reset(&out);
	assert_true(n_ops > 0 && n_steps > 0);
	for (size_t at = 0; at < n_ops || at < n_steps; at += 37) {
		struct failing_sink f = {at, 0};
		struct xprofs_sink fs = {.write = failing_write, .arg = &f};

		if (at < n_ops)
			assert_true(xprofs_decode_session_ops(&both, &fs) < 0);
		f = (struct failing_sink){at, 0};
		if (at < n_steps)
			assert_true(xprofs_decode_compare(XPROFS_VIEW_STEPS, &one, &both, &fs) < 0);
	}
	xprofs_buf_deinit(&out);
	opened_free(&o);
}

/* Edge semantics: missing ids, num_occurrences, bytes, gzip, non-UTF-8. */
static void test_edge_values(void **state)
{
	struct tb *b = tb_new();
	struct opened o;
	struct xprofs_xspace *x;
	XPlane *p = tb_plane(b, 0, "/host:CPU");
	XLine *l = tb_line(b, p, 1, "bad\xff\xfename", 0);
	XEvent *e;
	XStat *s;
	static uint8_t raw[] = {1, 2, 3};
	uint8_t gz[256];
	z_stream z;
	json_t *j;
	char *txt;

	TB_STMDS(b, p, "blob", "z");
	tb_evmd(b, p, 5, "\xc3\x28 invalid", NULL);
	e = tb_event(b, l, 999, 0, 10);                 /* no such metadata */
	tb_stat_i(b, &e->stats, &e->n_stats, 12345, 1); /* no such stat metadata */
	e = tb_event(b, l, 5, 20, 0);
	e->data_case = TENSORFLOW__PROFILER__XEVENT__DATA_NUM_OCCURRENCES;
	e->num_occurrences = 12;
	s = tb_stat(b, &e->stats, &e->n_stats, 1, VC(BYTES));
	s->bytes_value.data = raw;
	s->bytes_value.len = sizeof(raw);
	memset(&z, 0, sizeof(z));
	assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
	z.next_in = (unsigned char *)"hello gzip";
	z.avail_in = 10;
	z.next_out = gz;
	z.avail_out = sizeof(gz);
	assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
	s = tb_stat(b, &e->stats, &e->n_stats, 2, VC(COMPRESSED_STR));
	s->compressed_str_value.data = gz;
	s->compressed_str_value.len = z.total_out;
	deflateEnd(&z);
	x = opened_new(&o, b);
	for (int v = 0; v < XPROFS_VIEW_COUNT; v++)
		json_decref(render_json(x, v, 0)); /* valid JSON despite bad UTF-8 */
	txt = render(x, -1, 0);
	j = json_loads(txt, 0, NULL);
	assert_non_null(j);
	assert_string_equal(jstr(j, "events.0.name"), "");
	assert_int_equal(
		json_integer_value(json_object_get(
			json_object_get(json_array_get(json_object_get(j, "events"), 0), "stats"),
			"")),
		1); /* a missing stat metadata: the empty name */
	assert_int_equal(jint(j, "events.1.num_occurrences"), 12);
	assert_string_equal(jstr(j, "events.1.stats.blob"), "<3 bytes>");
	assert_string_equal(jstr(j, "events.1.stats.z"), "hello gzip");
	assert_string_equal(jstr(j, "line"), "bad\xef\xbf\xbd\xef\xbf\xbdname");
	json_decref(j);
	free(txt);
	opened_free(&o);
}

/* ---- pread path == zero-copy path on a file larger than the window ----- */

static ssize_t mem_pread(void *arg, void *dst, size_t n, uint64_t off)
{
	const struct xprofs_reader *m = arg;

	return xprofs_reader_pread(m, dst, n, off);
}

static void test_pread_matches_mem(void **state)
{
	struct tb *b = tb_new();
	XPlane *p = tb_plane(b, 2, "/device:TPU:0");
	XLine *l = tb_line(b, p, 3, "XLA Ops", 1000);
	struct xprofs_reader rm, rp;
	struct xprofs_xspace *xm, *xp;
	struct xprofs_buf err;
	size_t nev = 60000, n;
	uint8_t *buf;
	char name[64];
	static char shared[] = "a string stat that makes every event about 60 bytes";
	static char longer[] =
		"a longer string stat so that events are of uneven sizes, crossing windows";
	XStat *s;

	tb_stmd(b, p, 1, "long");
	for (int i = 0; i < 50; i++) {
		snprintf(name, sizeof(name), "%%fusion.%d = f32[%d] fusion()", i, i);
		tb_evmd(b, p, i, name, name + 1);
	}
	l->events = tb_alloc(b, nev * sizeof(*l->events));
	for (size_t i = 0; i < nev; i++) {
		XEvent *e = tb_alloc(b, sizeof(*e));

		tensorflow__profiler__xevent__init(e);
		e->metadata_id = (int64_t)(i % 50);
		e->data_case = TENSORFLOW__PROFILER__XEVENT__DATA_OFFSET_PS;
		e->offset_ps = (int64_t)i * 1000;
		e->duration_ps = i % 7 ? 900 : 0;
		l->events[l->n_events++] = e;
		s = tb_stat(b, &e->stats, &e->n_stats, 1, VC(STR));
		s->str_value = i % 1000 ? shared : longer;
	}
	buf = tb_pack(b, &n);
	assert_true(n > 2 * WIRE_WIN_SIZE);
	xm = open_mem(buf, n, &rm);
	rp = (struct xprofs_reader){.pread = mem_pread, .arg = &rm, .size = n, .data = NULL};
	xprofs_buf_init(&err, 4096);
	assert_int_equal(xprofs_xspace_open(&rp, &err, &xp), 0);
	for (int v = -1; v < XPROFS_VIEW_COUNT; v++) {
		char *a = render(xm, v, 0), *c = render(xp, v, 0), *d;
		size_t saved = xs_md_region_max;

		assert_string_equal(a, c);
		xs_md_region_max = 0; /* metadata read entry by entry */
		d = render(xp, v, 0);
		xs_md_region_max = saved;
		assert_string_equal(a, d);
		free(d);
		if (v == XPROFS_VIEW_OPS) {
			json_t *j = json_loads(a, 0, NULL);

			assert_int_equal(jint(j, "planes.0.events"), (int64_t)nev);
			json_decref(j);
		}
		free(a);
		free(c);
	}
	xprofs_buf_deinit(&err);
	xprofs_xspace_free(xp);
	xprofs_xspace_free(xm);
	free(buf);
	tb_free(b);
}

/* ---- several renders of one xspace at once ----------------------------- */

struct par {
	struct xprofs_xspace *x;
	int view;
	char *out;
};

static void *par_render(void *arg)
{
	struct par *p = arg;
	struct xprofs_buf out;
	struct xprofs_sink s;

	xprofs_buf_init(&out, (size_t)1 << 30);
	s = xprofs_sink_buf(&out);
	if (xprofs_decode_render(p->x, p->view, &s, NULL) == 0)
		p->out = p->view == XPROFS_VIEW_TRACE_GZ
				 ? gunzip((const uint8_t *)out.data,
					  out.len) /* as render() gives it */
			 : p->view == XPROFS_VIEW_PFTRACE ? hex_steal(&out)
							  : xprofs_buf_steal(&out, NULL);
	xprofs_buf_deinit(&out);
	return NULL;
}

static void test_parallel_renders(void **state)
{
	struct tb *b = sample();
	struct xprofs_reader rm, rp;
	struct xprofs_xspace *x;
	struct par par[8];
	pthread_t th[8];
	uint8_t *buf;
	size_t n;

	buf = tb_pack(b, &n);
	rm = xprofs_reader_mem(buf, n);
	rp = (struct xprofs_reader){.pread = mem_pread, .arg = &rm, .size = n, .data = NULL};
	assert_int_equal(xprofs_xspace_open(&rp, NULL, &x), 0);
	for (int i = 0; i < 8; i++) {
		par[i] = (struct par){x, i % XPROFS_VIEW_COUNT, NULL};
		assert_int_equal(pthread_create(&th[i], NULL, par_render, &par[i]), 0);
	}
	for (int i = 0; i < 8; i++) {
		char *want;

		assert_int_equal(pthread_join(th[i], NULL), 0);
		assert_non_null(par[i].out);
		want = render(x, par[i].view, 0);
		assert_string_equal(par[i].out, want);
		free(want);
		free(par[i].out);
	}
	xprofs_xspace_free(x);
	free(buf);
	tb_free(b);
}

/* open_opts(4 threads) == open(): same views, same first error */
static void test_parallel_open(void **state)
{
	struct tb *b = sample();
	size_t saved = xs_parallel_min_bytes, n;
	uint8_t *buf;

	xs_parallel_min_bytes = 0;
	b->xs.n_hostnames = 0;
	tb_plane(b, 7, "/device:GPU:1"); /* more planes than threads */
	tb_plane(b, 8, "/device:GPU:2");
	buf = tb_pack(b, &n);
	for (size_t cut = 0; cut <= n; cut += (cut < n && cut + 7 > n) ? n - cut : 7) {
		struct xprofs_reader r = xprofs_reader_mem(buf, cut);
		struct xprofs_xspace *x1 = NULL, *x4 = NULL;
		struct xprofs_buf e1, e4;
		int r1, r4;

		xprofs_buf_init(&e1, 4096);
		xprofs_buf_init(&e4, 4096);
		struct xprofs_xspace_opts o1 = {.threads = 1}, o4 = {.threads = 4};

		r1 = xprofs_xspace_open_opts(&r, &o1, &e1, &x1);
		r4 = xprofs_xspace_open_opts(&r, &o4, &e4, &x4);
		assert_int_equal(r1, r4);
		if (r1 < 0) {
			assert_string_equal(e1.data, e4.data);
		} else {
			for (int v = 0; v < XPROFS_VIEW_COUNT; v++)
				assert_same_render(x1, x4, v, 0);
		}
		xprofs_xspace_free(x1);
		xprofs_xspace_free(x4);
		xprofs_buf_deinit(&e1);
		xprofs_buf_deinit(&e4);
		if (cut == n)
			break;
	}
	xs_parallel_min_bytes = saved;
	free(buf);
	tb_free(b);
}

/*
 * trace.pftrace made in parts on 4 threads (parts.c): the same bytes as on
 * one, whether the parts made ahead go to a spill directory or none can be
 * had (then the caller makes every part itself); nothing is left behind.
 */
static void test_parallel_parts(void **state)
{
	struct tb *b = sample();
	size_t saved = xs_parallel_min_bytes, n;
	char dir[] = "/tmp/xprofs-parts.XXXXXX";
	struct xprofs_xspace *x1 = NULL, *x4 = NULL;
	struct xprofs_xspace_opts o1 = {.threads = 1}, o4 = {.threads = 4};
	struct xprofs_render_opts ro = {.host = "h"};
	struct xprofs_reader r;
	uint8_t *buf;
	char *want, *got;

	(void)state;
	xs_parallel_min_bytes = 0;
	for (int i = 0; i < 6; i++) { /* more planes than threads, each with events */
		char name[32];
		XPlane *p;
		XLine *l;

		snprintf(name, sizeof(name), "/device:%s:%d", i % 2 ? "GPU" : "TPU", 10 + i);
		p = tb_plane(b, 20 + i, name);
		tb_evmd(b, p, 1, "fusion.1", NULL);
		tb_evmd(b, p, 2, "%dot.2 = f32[8] dot(f32[8] %p)", "dot.2");
		TB_STMDS(b, p, "tf_op", "group_id");
		l = tb_line(b, p, 1, "XLA Ops", 1000 + i);
		for (int k = 0; k < 30 * (i + 1); k++) {
			XEvent *e = tb_event(b, l, 1 + k % 2, k * 1000, 900);

			tb_stat_s(b, &e->stats, &e->n_stats, 1,
				  k % 3 ? "jit(f)/dot" : "jit(f)/add");
			tb_stat_i(b, &e->stats, &e->n_stats, 2, k / 10);
		}
	}
	buf = tb_pack(b, &n);
	r = xprofs_reader_mem(buf, n);
	assert_int_equal(xprofs_xspace_open_opts(&r, &o1, NULL, &x1), 0);
	assert_int_equal(xprofs_xspace_open_opts(&r, &o4, NULL, &x4), 0);
	want = render_opts(x1, XPROFS_VIEW_PFTRACE, 0, &ro);
	assert_non_null(mkdtemp(dir));
	ro.spill_dir = dir;
	got = render_opts(x4, XPROFS_VIEW_PFTRACE, 0, &ro);
	assert_string_equal(want, got);
	free(got);
	assert_int_equal(rmdir(dir), 0); /* empty: the parts' files are gone */
	ro.spill_dir = "/nonexistent/xprofs-parts";
	got = render_opts(x4, XPROFS_VIEW_PFTRACE, 0, &ro);
	assert_string_equal(want, got);
	free(got);
	free(want);
	xprofs_xspace_free(x1);
	xprofs_xspace_free(x4);
	xs_parallel_min_bytes = saved;
	free(buf);
	tb_free(b);
}

/* What parts_window_fn()'s parts share. */
struct parts_window {
	struct xs_rctx *caller;
	atomic_int made_elsewhere; /* parts made on another context than the caller's */
	bool saw[3];               /* each part saw the render's window */
};

/*
 * A xs_part_fn: notes whether part @i saw the window [5, 9); the caller's
 * part turns the caller's window off until another context has made a
 * part, as trace.pftrace does for a derived line's whole walk.
 */
static int parts_window_fn(struct xs_rctx *rc, size_t i, struct xs_out *o, void *arg)
{
	struct parts_window *w = arg;
	struct timespec t0, t;

	w->saw[i] = rc->win && rc->win_from == 5 && rc->win_to == 9;
	OUT_LIT(o, "p");
	if (rc != w->caller) {
		atomic_fetch_add(&w->made_elsewhere, 1);
		return 0;
	}
	if (i != 0)
		return 0;
	rc->win = false;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do { /* polled, bounded: a helper that never starts fails below, not here */
		sched_yield();
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (!atomic_load(&w->made_elsewhere) && t.tv_sec - t0.tv_sec < 10);
	rc->win = true;
	return 0;
}

/*
 * xs_parts_run() on 2 threads: every part sees the caller's settings as they
 * were when the run began, even when the caller's own part changes them for
 * a while (a helper used to copy the caller's context once it got going, so
 * a trace.pftrace slice sometimes rendered whole planes). Looped: the helper
 * thread then started late enough to lose almost every time.
 */
static void test_parts_window(void **state)
{
	struct tb *b = sample();
	struct xprofs_xspace_opts o2 = {.threads = 2};
	struct xprofs_xspace *x = NULL;
	struct xprofs_reader r;
	uint8_t *buf;
	size_t n;

	(void)state;
	buf = tb_pack(b, &n);
	r = xprofs_reader_mem(buf, n);
	assert_int_equal(xprofs_xspace_open_opts(&r, &o2, NULL, &x), 0);
	for (int k = 0; k < 100; k++) {
		struct parts_window w = {0};
		struct xs_rctx rc;
		struct xs_out o;
		char *got;

		xs_rctx_init(&rc, x, NULL);
		rc.win = true;
		rc.win_from = 5;
		rc.win_to = 9;
		w.caller = &rc;
		xs_out_init(&o, NULL);
		assert_int_equal(xs_parts_run(&rc, 3, parts_window_fn, &w, &o), 0);
		got = xs_out_steal(&o, NULL);
		assert_string_equal(got, "ppp");
		free(got);
		xs_out_deinit(&o);
		xs_rctx_deinit(&rc);
		if (!atomic_load(&w.made_elsewhere))
			fail_msg("run %d: no part was made on a helper thread", k);
		for (int i = 0; i < 3; i++)
			if (!w.saw[i])
				fail_msg("run %d: part %d did not see the window [5, 9)", k, i);
	}
	xprofs_xspace_free(x);
	free(buf);
	tb_free(b);
}

/* tracks_only: the same tracks, ops, steps and trace; no summary */
static void test_tracks_only(void **state)
{
	struct opened o;
	struct xprofs_xspace_opts topts = {.tracks_only = true};
	struct xprofs_xspace *x, *xt = NULL;
	struct xprofs_buf out, err;
	struct xprofs_sink s;

	x = opened_new(&o, sample());
	assert_int_equal(xprofs_xspace_open_opts(&o.r, &topts, NULL, &xt), 0);
	assert_int_equal(xprofs_xspace_track_count(xt), xprofs_xspace_track_count(x));
	for (size_t i = 0; i < xprofs_xspace_track_count(x); i++)
		assert_same_render(x, xt, -1, i);
	for (int v = XPROFS_VIEW_TRACE; v < XPROFS_VIEW_COUNT; v++)
		assert_same_render(x, xt, v, 0);
	xprofs_buf_init(&out, 1 << 20);
	xprofs_buf_init(&err, 1024);
	s = xprofs_sink_buf(&out);
	assert_int_equal(xprofs_decode_render(xt, XPROFS_VIEW_SUMMARY, &s, &err), -EOPNOTSUPP);
	HAS(err.data, "tracks only");
	xprofs_buf_deinit(&out);
	xprofs_buf_deinit(&err);
	xprofs_xspace_free(xt);
	opened_free(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slices),           cmocka_unit_test(test_step_windows),
		cmocka_unit_test(test_session_summary),  cmocka_unit_test(test_session_views),
		cmocka_unit_test(test_edge_values),      cmocka_unit_test(test_pread_matches_mem),
		cmocka_unit_test(test_parallel_renders), cmocka_unit_test(test_parallel_open),
		cmocka_unit_test(test_parallel_parts),   cmocka_unit_test(test_parts_window),
		cmocka_unit_test(test_tracks_only),
	};

	xprofs_log_set_level(XPROFS_LOG_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
