/*
 * test_decode_views.c - unit tests of every view of the decode module
 * (cmocka, TAP): XSpace inputs built with decode_fixture.c, packed, decoded
 * through the real entry points (xprofs_xspace_open + render) and checked
 * with jansson.
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
#include "xprofs/stats.h"

/* ---- views ------------------------------------------------------------ */

static void test_summary(void **state)
{
	struct opened o;
	struct xprofs_xspace_totals t;
	struct xprofs_xspace *x;
	json_t *j;

	x = opened_new(&o, sample());
	assert_int_equal(xprofs_xspace_get_totals(x, &t), 0);
	assert_int_equal(t.planes, 3);
	assert_int_equal(t.lines, 4);
	assert_int_equal(t.events, 8);
	assert_int_equal(t.first_ps, 1000);
	assert_int_equal(t.last_ps, 1000 + 300000000 + 5000000);
	assert_true(t.start_walltime_ns == 1700000000000000000);
	j = render_json(x, XPROFS_VIEW_SUMMARY, 0);
	ASSERT_JSON(j, JS("hostnames.0", "host0"), JI("events", 8),
		    JI("profile_stop_walltime_ns", 1700000000001000000),
		    JS("planes.0.name", "/host:CPU"), JS("planes.0.file", "%2Fhost:CPU"),
		    JS("planes.0.lines.0.file", "python.json"), JI("planes.0.lines.0.events", 3),
		    JI("planes.0.lines.0.first_ps", 1000),
		    JI("planes.0.lines.0.last_ps", 100001000),
		    JI("planes.1.stats.clock_rate", 1410), JI("span_ps", 305000000));
	json_decref(j);
	opened_free(&o);
}

static void test_track(void **state)
{
	struct opened o;
	struct xprofs_xspace *x;
	json_t *j;
	const char *key;
	json_t *v;
	int i = 0;

	x = opened_new(&o, sample());
	j = render_json(x, -1, 0);
	assert_string_equal(jstr(j, "plane"), "/host:CPU");
	assert_int_equal(json_array_size(json_object_get(j, "events")), 3);
	assert_string_equal(jstr(j, "events.0.name"), "Outer");
	assert_int_equal(jint(j, "events.0.start_ps"), 1000);
	assert_int_equal(jint(j, "events.0.duration_ps"), 100000000);
	/* metadata stats before the event's own */
	json_object_foreach(
		json_object_get(json_array_get(json_object_get(j, "events"), 0), "stats"), key, v)
	{
		assert_string_equal(key, i == 0 ? "source" : "tf_op");
		i++;
	}
	assert_int_equal(i, 2);
	assert_string_equal(jstr(j, "events.1.name"), "Inner");
	assert_string_equal(jstr(j, "events.1.full_name"), "my/Inner:Inner");
	json_decref(j);
	/* ref_value resolved through stat_metadata */
	j = render_json(x, -1, 2);
	assert_string_equal(jstr(j, "events.0.stats.hlo_op"), "fusion.1");
	json_decref(j);
	opened_free(&o);
}

/*
 * trace.json.gz's deflating sink (gzip.c, chunks deflated on worker
 * threads): 9 MiB written in odd-sized pieces come back exactly, and the
 * bytes are the same whatever the worker count; an empty stream and one that
 * ends on a chunk boundary are valid gzip; a failing next sink fails the
 * writer or the finish with its error (no hang); freeing it mid-stream is
 * clean.
 */
static void gzip_roundtrip(const char *src, size_t total, unsigned threads, struct xprofs_buf *out)
{
	size_t at = 0, piece = 1;
	struct xprofs_sink s = xprofs_sink_buf(out), gs;
	struct trace_gzip *gz;
	char *back;

	assert_int_equal(trace_gzip_new(&s, threads, &gz), 0);
	gs = trace_gzip_sink(gz);
	while (at < total) {
		size_t n = piece < total - at ? piece : total - at;

		assert_int_equal(gs.write(gs.arg, src + at, n), 0);
		at += n;
		piece = piece * 3 + 1;
		if (piece > ((size_t)3 << 20))
			piece = 17;
	}
	assert_int_equal(trace_gzip_finish(gz), 0);
	trace_gzip_free(gz);
	back = gunzip((const uint8_t *)out->data, out->len);
	if (total)
		assert_memory_equal(back, src, total);
	free(back);
}

static void test_gzip_sink(void **state)
{
	size_t total = (size_t)9 << 20, at;
	char *src = malloc(total);
	struct xprofs_buf out, first;
	struct xprofs_sink s, gs;
	struct trace_gzip *gz;
	int r = 0;

	(void)state;
	assert_non_null(src);
	for (size_t i = 0, v = 1; i < total; i++) { /* random letters: ~5.5 MB deflated */
		v = v * 6364136223846793005u + 1442695040888963407u;
		src[i] = (char)('a' + (v >> 33) % 26);
	}
	xprofs_buf_init(&first, (size_t)64 << 20);
	gzip_roundtrip(src, total, 1, &first);
	for (unsigned threads = 0; threads <= 5; threads++) {
		xprofs_buf_init(&out, (size_t)64 << 20);
		gzip_roundtrip(src, total, threads, &out);
		assert_int_equal(out.len, first.len);
		assert_memory_equal(out.data, first.data, first.len);
		xprofs_buf_deinit(&out);
	}
	xprofs_buf_deinit(&first);
	for (size_t len = 0; len <= ((size_t)2 << 20); len += (size_t)1 << 20) {
		xprofs_buf_init(&out, (size_t)64 << 20);
		gzip_roundtrip(src, len, 2, &out); /* empty, then whole chunks only */
		xprofs_buf_deinit(&out);
	}

	for (size_t fail_at = 0; fail_at < ((size_t)1 << 20); fail_at += 300000) {
		struct failing_sink f = {fail_at, 0};
		struct xprofs_sink fs = {.write = failing_write, .arg = &f};

		assert_int_equal(trace_gzip_new(&fs, 2, &gz), 0);
		gs = trace_gzip_sink(gz);
		for (at = 0, r = 0; at < total && r == 0; at += 65536)
			r = gs.write(gs.arg, src + at, 65536);
		if (r == 0)
			r = trace_gzip_finish(gz);
		assert_int_equal(r, -EIO);
		trace_gzip_free(gz);
	}
	/* freed mid-stream, without finish */
	xprofs_buf_init(&out, (size_t)64 << 20);
	s = xprofs_sink_buf(&out);
	assert_int_equal(trace_gzip_new(&s, 2, &gz), 0);
	gs = trace_gzip_sink(gz);
	assert_int_equal(gs.write(gs.arg, src, (size_t)5 << 20), 0);
	trace_gzip_free(gz);
	xprofs_buf_deinit(&out);
	free(src);
}

/* A kernel of the derived-lines test: its annotations as event stats (module @mod, program 9). */
static void derived_kernel(struct tb *b, XLine *l, int64_t off_us, const char *op, const char *mod)
{
	XEvent *e = tb_event(b, l, 1, off_us * 1000000, 1000000);

	tb_stat_s(b, &e->stats, &e->n_stats, 1, "regs:32");
	tb_stat_s(b, &e->stats, &e->n_stats, 2, op);
	tb_stat_s(b, &e->stats, &e->n_stats, 3, mod);
	tb_stat_i(b, &e->stats, &e->n_stats, 4, 9);
}

/*
 * trace.json of the derived-lines tests' GPU plane: a memcpy stream #8 and
 * a compute stream #7, in a space @grouped or not (a "group_id" stat
 * metadata). Caller frees the result and opened_free(@o).
 */
static char *derived_trace(bool grouped, struct opened *o)
{
	struct tb *b = tb_new();
	struct xprofs_render_opts ro = {.host = "h"};
	XPlane *gpu = tb_plane(b, 0, "/device:GPU:0");
	XLine *k, *c;
	XEvent *e;

	TB_STMDS(b, gpu, "kernel_details", "hlo_op", "hlo_module", "program_id",
		 grouped ? "group_id" : NULL);
	tb_evmd(b, gpu, 1, "kern", NULL);
	c = tb_line(b, gpu, 8, "Stream #8(MemcpyH2D)", 0); /* more events, not Compute: second */
	for (int i = 0; i < 5; i++)
		tb_event(b, c, 1, (10 + i) * 1000000, 1000);
	k = tb_line(b, gpu, 7, "Stream #7(Compute)", 0);
	derived_kernel(b, k, 0, "fusion.1::dot.2", "m");
	derived_kernel(b, k, 2, "fusion.1::dot.2", "m"); /* same op and module: expands */
	derived_kernel(b, k, 4, "add.3", "n");           /* new module, new op */
	e = tb_event(b, k, 1, 6000000, 500000);          /* no kernel_details: derives nothing */
	tb_stat_s(b, &e->stats, &e->n_stats, 2, "x");
	return render_opts(opened_new(o, b), XPROFS_VIEW_TRACE, 0, &ro);
}

/*
 * XProf's derived GPU lines (xspace/order.c, trace/derive-gpu.c) on a space
 * not grouped yet: stream order and display ids, XLA Modules / XLA Ops from
 * kernel annotations with nesting, merging, a module change, the 1 ns shrink
 * of equal spans, a memcpy deriving nothing; no Steps without group_id.
 */
static void test_trace_derived(void **state)
{
	struct opened o;
	char *s;

	(void)state;
	s = derived_trace(false, &o);
	/* display ids: Compute stream 1, its XLA Modules 4 and XLA Ops 5; the other stream 7 */
	HAS(s, "\"tid\":1,\"args\":{\"name\":\"Stream #7(Compute)\"}",
	    "\"tid\":7,\"args\":{\"name\":\"Stream #8(MemcpyH2D)\"}",
	    "\"tid\":4,\"args\":{\"name\":\"XLA Modules - from #7\"}",
	    "\"tid\":5,\"args\":{\"name\":\"XLA Ops - from #7\"}",
	    "{\"ph\":\"X\",\"pid\":1,\"tid\":4,\"ts\":0,\"dur\":3,"
	    "\"name\":\"m(9)\",\"args\":{}}",
	    "{\"ph\":\"X\",\"pid\":1,\"tid\":4,\"ts\":4,\"dur\":1,"
	    "\"name\":\"n(9)\",\"args\":{}}",
	    "{\"ph\":\"X\",\"pid\":1,\"tid\":5,\"ts\":0,\"dur\":3,"
	    "\"name\":\"fusion.1\",\"args\":{"
	    "\"long_name\":\"9/fusion.1\"}}");
	/* the inner level of an equal-span stack is 1 ns shorter (AdjustDurationForTraceViewer) */
	HAS(s,
	    "{\"ph\":\"X\",\"pid\":1,\"tid\":5,\"ts\":0,\"dur\":2.999,"
	    "\"name\":\"dot.2\",\"args\":{"
	    "\"long_name\":\"9/dot.2\"}}",
	    "\"tid\":5,\"ts\":4,\"dur\":1,\"name\":\"add.3\"");
	LACKS(s, "\"name\":\"x\"", "\"tid\":3735928559");
	free(s);
	opened_free(&o);
	/*
	 * The same plane in a space already grouped (a "group_id" stat metadata,
	 * even unused: IsXSpaceGrouped()): XProf's preprocessing does not run, so
	 * the streams keep their display ids and their order and nothing is derived.
	 */
	s = derived_trace(true, &o);
	HAS(s, "\"tid\":7,\"args\":{\"name\":\"Stream #7(Compute)\"}",
	    "\"tid\":8,\"args\":{\"name\":\"Stream #8(MemcpyH2D)\"}",
	    "\"tid\":8,\"args\":{\"sort_index\":8}", "\"tid\":7,\"args\":{\"sort_index\":7}");
	LACKS(s, "XLA Modules", "XLA Ops", "\"tid\":1,", "\"tid\":3735928559");
	/* file order kept: stream #8 is the first line, so its thread comes first */
	assert_true(strstr(s, "Stream #8(MemcpyH2D)") < strstr(s, "Stream #7(Compute)"));
	free(s);
	opened_free(&o);
}

/* A kernel of 1 us at @off_us with tf_op @op (NULL: none). */
static XEvent *fw_kernel(struct tb *b, XLine *l, int64_t off_us, const char *op)
{
	XEvent *e = tb_event(b, l, 1, off_us * 1000000, 1000000);

	tb_stat_s(b, &e->stats, &e->n_stats, 1, "regs:32");
	if (op)
		tb_stat_s(b, &e->stats, &e->n_stats, 6, op);
	return e;
}

/*
 * The Framework lines XProf derives from a non-XLA kernel's tf_op
 * (ProcessTfOpEvent()): ParseTfOpFullname()'s categories and
 * TfOpEventName()s, name scopes of TensorFlow and JAX ops, merging, a new
 * scope closing the open op, an op without scopes leaving the scopes open
 * (not expanded), an XLA kernel's tf_op ignored, a new module closing the
 * scopes and the op, empty, 20-deep and 100 KB tf_ops.
 */
static void test_trace_framework(void **state)
{
	static const char *const ops[] = {
		"model/dense/MatMul:MatMul",                  /* 0: TensorFlow */
		"model/dense/MatMul:MatMul",                  /* 1: expands */
		"model/dense/BiasAdd:BiasAdd",                /* 2: scopes expand, new op */
		"jit(f)/jvp(g)/dot_general_7:",               /* 3: JAX, type from the name */
		"transpose_op:transpose[permutation=(1, 0)]", /* 4: JAX, no scope */
		"aten::addmm ",                               /* 5: unknown */
		"MEMCPYHToD",                                 /* 6: memcpy */
		"Iterator::Batch::Map",                       /* 7: tf.data */
		"",                                           /* 8: not a tf op */
		"outer/Conv2D_3:",                            /* 9: TensorFlow, type derived */
	};
	struct tb *b = tb_new();
	struct xprofs_render_opts ro = {.host = "h"};
	XPlane *gpu = tb_plane(b, 0, "/device:GPU:0");
	XLine *k;
	XEvent *e;
	struct opened o;
	struct xprofs_xspace *x;
	char *s, *deep, *huge, *want;
	struct xprofs_buf name;
	json_t *j;

	(void)state;
	TB_STMDS(b, gpu, "kernel_details", "hlo_op", "hlo_module", NULL, NULL, "tf_op");
	tb_evmd(b, gpu, 1, "kern", NULL);
	k = tb_line(b, gpu, 7, "Stream #7(Compute)", 0);
	for (int i = 0; i < 10; i++)
		fw_kernel(b, k, i, ops[i]);
	e = fw_kernel(b, k, 10, "xla/Op:Op"); /* an XLA kernel: its tf_op is not used */
	tb_stat_s(b, &e->stats, &e->n_stats, 2, "add.1");
	e = fw_kernel(b, k, 11, "outer/Conv2D_3:"); /* a module closes the scopes (and the op) */
	tb_stat_s(b, &e->stats, &e->n_stats, 3, "m");
	deep = calloc(1, 20 * 4 + 8);
	assert_non_null(deep);
	for (int i = 0; i < 20; i++)
		sprintf(deep + strlen(deep), "s%02d/", i);
	strcat(deep, "Op:Op");
	fw_kernel(b, k, 12, deep);
	huge = malloc(100001);
	assert_non_null(huge);
	memset(huge, 'a', 100000);
	huge[100000] = '\0';
	huge[50000] = '/';
	fw_kernel(b, k, 13, huge);
	x = opened_new(&o, b);
	s = render_opts(x, XPROFS_VIEW_TRACE, 0, &ro);
	j = json_loads(s, 0, NULL);
	assert_non_null(j);
	/* line names and display ids: the stream 1, Name Scope 2, Framework Ops 3 */
	HAS(s, "\"tid\":2,\"args\":{\"name\":\"Framework Name Scope - from #7\"}",
	    "\"tid\":3,\"args\":{\"name\":\"Framework Ops - from #7\"}");
	/* scopes of 0-2 nest with equal spans: the inner one 1 ns shorter when a new scope comes */
	HAS(s,
	    "{\"ph\":\"X\",\"pid\":1,\"tid\":2,\"ts\":0,\"dur\":3,"
	    "\"name\":\"model\",\"args\":{}}",
	    "{\"ph\":\"X\",\"pid\":1,\"tid\":2,\"ts\":0,\"dur\":2.999,"
	    "\"name\":\"dense\",\"args\":{}}",
	    "{\"ph\":\"X\",\"pid\":1,\"tid\":3,\"ts\":0,\"dur\":2,"
	    "\"name\":\"MatMul\",\"args\":{"
	    "\"long_name\":\"model/dense/MatMul:MatMul\"}}",
	    "\"tid\":3,\"ts\":2,\"dur\":1,\"name\":\"BiasAdd\"");
	/* JAX: scopes jit(f) and jvp(g), left open (not expanded) by the scope-less ops after */
	HAS(s, "\"tid\":2,\"ts\":3,\"dur\":1,\"name\":\"jit(f)\"",
	    "\"tid\":2,\"ts\":3,\"dur\":0.999,\"name\":\"jvp(g)\"",
	    "\"tid\":3,\"ts\":3,\"dur\":1,\"name\":\"dot_general\","
	    "\"args\":{\"long_name\":\"jit(f)/jvp(g)/"
	    "dot_general_7:\"}}",
	    "\"tid\":3,\"ts\":4,\"dur\":1,\"name\":\"transpose\"",
	    "\"tid\":3,\"ts\":5,\"dur\":1,\"name\":\"aten::addmm\","
	    "\"args\":{\"long_name\":\"aten::addmm \"}}",
	    "\"tid\":3,\"ts\":6,\"dur\":1,\"name\":\"MemcpyHToD\"",
	    "\"tid\":3,\"ts\":7,\"dur\":1,\"name\":\"Iterator::Map\"");
	/* Conv2D at 9 stays open over the XLA kernel at 10; the module at 11 closes it and its scope */
	HAS(s, "\"tid\":3,\"ts\":9,\"dur\":1,\"name\":\"Conv2D\"",
	    "\"tid\":3,\"ts\":11,\"dur\":1,\"name\":\"Conv2D\"",
	    "\"tid\":2,\"ts\":9,\"dur\":1,\"name\":\"outer\"",
	    "\"tid\":2,\"ts\":11,\"dur\":1,\"name\":\"outer\"");
	LACKS(s, "\"tid\":3,\"ts\":10,", "\"long_name\":\"xla/Op:Op\"");
	/* 20 scopes: the first DER_LEVELS are derived */
	HAS(s, "\"tid\":2,\"ts\":12,\"dur\":1,\"name\":\"s15\"");
	LACKS(s, "\"name\":\"s16\"");
	/* the huge tf_op: cut at DER_NAME_MAX bytes, so no ':' and no scope: an unknown op */
	LACKS(s, "\"tid\":2,\"ts\":13,");
	/* the name: 10,000 of the 100,000 bytes */
	xprofs_buf_init(&name, 16384);
	assert_int_equal(xprofs_buf_adds(&name, "\"name\":\""), 0);
	for (int i = 0; i < 10000; i++)
		assert_int_equal(xprofs_buf_add(&name, "a", 1), 0);
	assert_int_equal(xprofs_buf_adds(&name, "\","), 0);
	HAS(s, "\"tid\":3,\"ts\":13,\"dur\":1,\"name\":\"aaaa");
	want = xprofs_buf_steal(&name, NULL);
	assert_non_null(want);
	assert_non_null(strstr(s, want));
	free(want);
	json_decref(j);
	free(s);
	free(deep);
	free(huge);
	opened_free(&o);
}

/* Protobuf LEN field @f holding @n bytes of @v, appended at @o (a test encoder). */
static size_t pb_len(uint8_t *o, unsigned f, const void *v, size_t n)
{
	size_t k = 0;

	o[k++] = (uint8_t)(f << 3 | 2);
	for (size_t x = n;; x >>= 7) {
		o[k++] = (uint8_t)((x & 127) | (x >= 128 ? 128 : 0));
		if (x < 128)
			break;
	}
	memcpy(o + k, v, n);
	return k + n;
}

/*
 * XLA kernels' symbols (hlo-syms.c): the HloProto of program 42 in
 * /host:metadata resolves dot.1 (the last hlo_op part) to its OpMetadata
 * (Framework Name Scope, Framework Ops "<op_name>:<op_type>", Source code
 * "<basename>:<line>"), an instruction without metadata to XProf's ":" op
 * (a second proto of program 42 is not used); a malformed proto and a
 * kernel without program_id resolve nothing.
 */
static void test_trace_hlo_symbols(void **state)
{
	struct tb *b = tb_new();
	struct xprofs_render_opts ro = {.host = "h"};
	XPlane *gpu = tb_plane(b, 0, "/device:GPU:0"), *meta = tb_plane(b, 1, "/host:metadata");
	Tensorflow__Profiler__XEventMetadata *m;
	XStat *st;
	XLine *k;
	XEvent *e;
	struct opened o;
	struct xprofs_xspace *x;
	uint8_t md[128], in1[160], in2[32], comp[256], mod[300], proto[320];
	uint8_t md2[32], in3[64], comp2[80], mod2[96], proto2[112];
	size_t nm, ni1, ni2, nc, nmod, np, n2;
	char *s;
	static const char *const hlo_ops[] = {"fusion.1::dot.1", "copy.2", "dot.1", "dot.1",
					      "add.3"};
	static const int64_t pids[] = {42, 42, 43, -1, 42};

	(void)state;
	/* OpMetadata {op_type "MatMul", op_name "model/dense/MatMul", source_file, line 12} */
	nm = pb_len(md, 1, "MatMul", 6);
	nm += pb_len(md + nm, 2, "model/dense/MatMul", 18);
	nm += pb_len(md + nm, 3, "/a/b/model.py", 13);
	md[nm++] = 4 << 3;
	md[nm++] = 12;
	ni1 = pb_len(in1, 1, "dot.1", 5);
	ni1 += pb_len(in1 + ni1, 7, md, nm);
	ni2 = pb_len(in2, 1, "copy.2", 6);
	/* id 1 (dot.1 has id 0, the computation's root): a module hlo/ accepts, as XLA would */
	in2[ni2++] = 0x98; /* field 35 (id), varint */
	in2[ni2++] = 0x02;
	in2[ni2++] = 1;
	nc = pb_len(comp, 2, in1, ni1);
	nc += pb_len(comp + nc, 2, in2, ni2);
	nmod = pb_len(mod, 3, comp, nc);
	np = pb_len(proto, 1, mod, nmod);
	tb_stmd(b, meta, 1, "Hlo Proto");
	m = tb_evmd(b, meta, 42, "jit_f(42)", NULL);
	st = tb_stat(b, &m->stats, &m->n_stats, 1, VC(BYTES));
	st->bytes_value.data = proto;
	st->bytes_value.len = np;
	/* a second proto of program 42 (another metadata entry, add.3): XProf keeps the first */
	n2 = pb_len(md2, 3, "other.py", 8);
	md2[n2++] = 4 << 3;
	md2[n2++] = 1;
	n2 = pb_len(in3, 7, md2, n2);
	n2 += pb_len(in3 + n2, 1, "add.3", 5);
	n2 = pb_len(comp2, 2, in3, n2);
	n2 = pb_len(mod2, 3, comp2, n2);
	n2 = pb_len(proto2, 1, mod2, n2);
	m = tb_evmd(b, meta, 44, "jit_f(42)", NULL);
	m->id = 42;
	st = tb_stat(b, &m->stats, &m->n_stats, 1, VC(BYTES));
	st->bytes_value.data = proto2;
	st->bytes_value.len = n2;
	m = tb_evmd(b, meta, 43, "jit_g(43)", NULL); /* cut inside a length: does not parse */
	st = tb_stat(b, &m->stats, &m->n_stats, 1, VC(BYTES));
	st->bytes_value.data = proto;
	st->bytes_value.len = np - 3;
	TB_STMDS(b, gpu, "kernel_details", "hlo_op", NULL, "program_id");
	tb_evmd(b, gpu, 1, "kern", NULL);
	k = tb_line(b, gpu, 7, "Stream #7(Compute)", 0);
	for (int i = 0; i < 5; i++) {
		e = tb_event(b, k, 1, i * 2000000, 1000000);
		tb_stat_s(b, &e->stats, &e->n_stats, 1, "regs:32");
		tb_stat_s(b, &e->stats, &e->n_stats, 2, hlo_ops[i]);
		if (pids[i] >= 0)
			tb_stat_i(b, &e->stats, &e->n_stats, 4, pids[i]);
	}
	x = opened_new(&o, b);
	s = render_opts(x, XPROFS_VIEW_TRACE, 0, &ro);
	HAS(s, "\"tid\":6,\"args\":{\"name\":\"Source code - from #7\"}",
	    "{\"ph\":\"X\",\"pid\":1,\"tid\":6,\"ts\":0,\"dur\":1,"
	    "\"name\":\"model.py:12\",\"args\":{}}",
	    "{\"ph\":\"X\",\"pid\":1,\"tid\":3,\"ts\":0,\"dur\":1,"
	    "\"name\":\"MatMul\",\"args\":{\"long_name\":"
	    "\"model/dense/MatMul:MatMul\"}}",
	    "\"tid\":2,\"ts\":0,\"dur\":1,\"name\":\"model\"",
	    "\"tid\":2,\"ts\":0,\"dur\":1,\"name\":\"dense\"");
	/* no metadata: TraceMeOp("", "") = ":" is still a framework op (a TensorFlow op, type "") */
	HAS(s, "{\"ph\":\"X\",\"pid\":1,\"tid\":3,\"ts\":2,\"dur\":1,"
	       "\"name\":\":\",\"args\":{}}");
	LACKS(s, "\"tid\":6,\"ts\":2,", "other.py");
	/* program 43 does not parse; the last kernel has no program_id */
	LACKS(s, "\"ts\":4,\"dur\":1,\"name\":\"MatMul\"", "\"ts\":6,\"dur\":1,\"name\":\"MatMul\"",
	      "\"tid\":6,\"ts\":4,");
	free(s);
	/* trace.pftrace (hex here) names the Source code track and its event */
	s = render_opts(x, XPROFS_VIEW_PFTRACE, 0, &ro);
	HAS(s, "536f7572636520636f6465202d2066726f6d202337", /* "Source code - from #7" */
	    "6d6f64656c2e70793a3132");                       /* "model.py:12" */
	free(s);
	opened_free(&o);
}

static void test_trace(void **state)
{
	struct opened o;
	struct xprofs_xspace *x;
	size_t nx = 0, ni = 0, nc = 0, nm = 0, idx;
	char *s;
	json_t *j, *ev;

	x = opened_new(&o, sample());
	s = render(x, XPROFS_VIEW_TRACE, 0);
	assert_true(!strncmp(s, "{\"displayTimeUnit\":\"ns\"", 23));
	j = json_loads(s, 0, NULL);
	assert_non_null(j);
	json_array_foreach(json_object_get(j, "traceEvents"), idx, ev)
	{
		const char *ph = json_string_value(json_object_get(ev, "ph"));

		if (!strcmp(ph, "X"))
			nx++;
		else if (!strcmp(ph, "i"))
			ni++;
		else if (!strcmp(ph, "C"))
			nc++;
		else if (!strcmp(ph, "M"))
			nm++;
	}
	assert_int_equal(nx, 7);
	assert_int_equal(ni, 0);
	assert_int_equal(nc, 1);
	/* xprofs, 2 processes (Task Environment is not one), 3 threads (_counters_ is not one) */
	assert_int_equal(nm, 1 + 2 * 2 + 3 * 2);
	/* exact microseconds: 1000 ps = 0.001 us; 10001000 ps = 10.001 us */
	HAS(s, "\"ts\":0.001,\"dur\":100,\"name\":\"Outer\"",
	    "\"ts\":10.001,\"dur\":20,\"name\":\"Inner\"", "\"long_name\":\"my/Inner:Inner\"",
	    "\"ph\":\"C\"");
	/* XProf's pids: host threads 701, GPU 1 + plane id; tid = (uint32) line id */
	HAS(s, "\"pid\":701,\"tid\":5,", "\"pid\":701,\"tid\":4294967295,", "\"pid\":2,\"tid\":1,");
	LACKS(s, "Task Environment", "\"flops\"" /* IsInternalStat */);
	json_decref(j);
	free(s);
	opened_free(&o);
}

/* A uint64 stat @v on @arr with metadata @md. */
static void tb_stat_u(struct tb *b, XStat ***arr, size_t *n, int64_t md, uint64_t v)
{
	tb_stat(b, arr, n, md, VC(UINT64))->uint64_value = v;
}

/* XFlow's stat value: direction, 56-bit id, category. */
static uint64_t xflow(uint64_t id, unsigned dir, unsigned cat)
{
	return (uint64_t)dir | (id << 2) | ((uint64_t)cat << 58);
}

/* The trace event of @j named @name with phase @ph, or NULL. */
static json_t *trace_find(json_t *j, const char *name, const char *ph)
{
	size_t i;
	json_t *ev;

	json_array_foreach(json_object_get(j, "traceEvents"), i, ev)
	{
		if (!strcmp(json_string_value(json_object_get(ev, "ph")), ph) &&
		    !strcmp(json_string_value(json_object_get(ev, "name")), name))
			return ev;
	}
	return NULL;
}

/* XProf's rules: planes, pids, names, hidden events and stats, flows, async events. */
static void test_trace_xprof(void **state)
{
	struct tb *b = tb_new();
	struct xprofs_render_opts ro = {.host = "h1"};
	XPlane *host = tb_plane(b, 0, "/host:CPU");
	XPlane *gpu = tb_plane(b, 600, "/device:GPU:0"); /* past kLastDeviceId: pid 1 */
	XPlane *tpu = tb_plane(b, 0, "/device:TPU:0");   /* GPUs win: not shown */
	XPlane *cust = tb_plane(b, 3, "/device:CUSTOM:acc");
	XPlane *meta = tb_plane(b, 0, "/host:metadata");
	XPlane *empty = tb_plane(b, 9, "/device:CUSTOM:empty"); /* no lines: not shown */
	XLine *l, *l2;
	XEvent *e;
	struct opened o;
	struct xprofs_xspace *x;
	char *s, *gz;
	json_t *j, *ev;

	(void)empty;
	for (int i = 0; i < 2; i++) {
		XPlane *p = i ? gpu : host;

		TB_STMDS(b, p, "flow", "_a", "step_name", "group_id", "_pt", "program_id",
			 "kernel_details", "shown");
	}
	tb_evmd(b, host, 1, "Launch", NULL);
	tb_evmd(b, host, 2, "MemoryAllocation", NULL);
	tb_evmd(b, host, 3, "Step", NULL);
	tb_evmd(b, host, 4, "Zero", NULL);
	l = tb_line(b, host, 11, "main", 1000);
	l->display_id = 77;
	l->display_name = tb_str(b, "Main thread");
	e = tb_event(b, l, 1, 0, 5000000);
	tb_stat_u(b, &e->stats, &e->n_stats, 1, xflow(5, 2, 2)); /* flow out, tf_exec */
	tb_stat_i(b, &e->stats, &e->n_stats, 4, 42);
	tb_stat_i(b, &e->stats, &e->n_stats, 5, 1);
	tb_stat_i(b, &e->stats, &e->n_stats, 6, 1);
	tb_stat_s(b, &e->stats, &e->n_stats, 7, "regs");
	tb_stat_i(b, &e->stats, &e->n_stats, 8, 3);
	tb_event(b, l, 2, 1000, 10); /* internal: hidden */
	e = tb_event(b, l, 3, 6000000, 1000000);
	tb_stat_s(b, &e->stats, &e->n_stats, 3, "step 12");
	tb_event(b, l, 4, 8000000, 0); /* zero duration: 1 ps */
	e = tb_event(b, l, 1, 9000000, 10);
	tb_stat_u(b, &e->stats, &e->n_stats, 1, xflow(9, 2, 0)); /* flow out, no partner */
	tb_line(b, host, 12, "idle", 0);                         /* no events: no thread */
	l = tb_line(b, host, 13, "counters_x", 0);               /* skipped */
	tb_event(b, l, 1, 0, 10);

	tb_evmd(b, gpu, 1, "kernel", NULL);
	tb_evmd(b, gpu, 2, "copy-start", "copy");
	l = tb_line(b, gpu, 1, "Stream #1", 1700000000000000000); /* epoch ns */
	e = tb_event(b, l, 1, 1234567, 2000);
	tb_stat_u(b, &e->stats, &e->n_stats, 1, xflow(5, 1, 2)); /* flow in: pairs with out 5 */
	l2 = tb_line(b, gpu, 2, "Async XLA Ops", 1000);
	e = tb_event(b, l2, 2, 0, 3000000);
	tb_stat_u(b, &e->stats, &e->n_stats, 1, xflow(7, 3, 0)); /* async in-out: b + e */
	tb_stat_i(b, &e->stats, &e->n_stats, 2, 1);
	e = tb_event(b, l2, 2, 1000000, 3000000);
	tb_stat_u(b, &e->stats, &e->n_stats, 1, xflow(8, 3, 0)); /* overlaps the first */
	tb_stat_i(b, &e->stats, &e->n_stats, 2, 1);
	e = tb_event(b, l2, 2, 6000000, 10);
	tb_stat_u(b, &e->stats, &e->n_stats, 1, xflow(20, 2, 5)); /* a begin ... */
	tb_stat_i(b, &e->stats, &e->n_stats, 2, 1);
	e = tb_event(b, l2, 2, 8000000, 10);
	tb_stat_u(b, &e->stats, &e->n_stats, 1, xflow(20, 1, 5)); /* ... and its end (PjRt) */
	tb_stat_i(b, &e->stats, &e->n_stats, 2, 1);
	e = tb_event(b, l2, 2, 9000000, 10);
	tb_stat_u(b, &e->stats, &e->n_stats, 1, xflow(99, 1, 0)); /* an end without begin */
	tb_stat_i(b, &e->stats, &e->n_stats, 2, 0);
	l = tb_line(b, gpu, 3, "huge", INT64_MAX); /* 2^63 - 1 ns: no overflow */
	tb_event(b, l, 1, INT64_MAX, INT64_MAX);
	l = tb_line(b, gpu, 4, "negative", INT64_MIN);
	tb_event(b, l, 1, INT64_MIN, -5);

	tb_evmd(b, tpu, 1, "tpu_op", NULL);
	tb_event(b, tb_line(b, tpu, 1, "XLA Ops", 0), 1, 0, 10);
	tb_evmd(b, cust, 1, "custom_op", NULL);
	tb_event(b, tb_line(b, cust, 1, "ops", 0), 1, 0, 10);
	tb_evmd(b, meta, 1, "meta_op", NULL);
	tb_event(b, tb_line(b, meta, 1, "m", 0), 1, 0, 10);

	x = opened_new(&o, b);
	s = render_opts(x, XPROFS_VIEW_TRACE, 0, &ro);
	j = json_loads(s, 0, NULL);
	assert_non_null(j);
	/* processes: "<host> <plane>", XProf's pids; no TPU, metadata or lineless plane */
	HAS(s, "\"pid\":701,\"args\":{\"name\":\"h1 /host:CPU\"}",
	    "\"pid\":1,\"args\":{\"name\":\"h1 /device:GPU:0\"}",
	    "\"pid\":504,\"args\":{\"name\":\"h1 /device:CUSTOM:acc\"}");
	LACKS(s, "tpu_op", "meta_op", "CUSTOM:empty");
	/* threads: display id and name; no empty or counters_ lines */
	HAS(s, "\"tid\":77,\"args\":{\"name\":\"Main thread\"}");
	LACKS(s, "idle", "counters_x");
	/* hidden events and stats; group_id shown, step_name renames */
	LACKS(s, "MemoryAllocation", "_pt", "program_id", "kernel_details", "\"_a\"", "\"flow\"");
	ev = trace_find(j, "Launch", "X");
	assert_non_null(ev);
	assert_int_equal(jint(ev, "args.group_id"), 42);
	assert_int_equal(jint(ev, "args.shown"), 3);
	assert_int_equal(jint(ev, "bind_id"), 5);
	assert_true(json_is_true(json_object_get(ev, "flow_out")));
	assert_string_equal(jstr(ev, "cat"), "tf_exec");
	assert_non_null(trace_find(j, "step 12", "X"));
	assert_null(trace_find(j, "Step", "X"));
	HAS(s, "\"ts\":9,\"dur\":0.000001,\"name\":\"Zero\"");
	/* the flow's other end, at an exact epoch time */
	ev = trace_find(j, "kernel", "X");
	assert_non_null(ev);
	assert_true(json_is_true(json_object_get(ev, "flow_in")));
	assert_int_equal(jint(ev, "bind_id"), 5);
	HAS(s, "\"ts\":1700000000000001.234567,\"dur\":0.002,");
	/* 2^63 - 1 ns + 2^63 - 1 ps, and the most negative: exact, no wrap */
	HAS(s, "\"ts\":9232595408891630.582807,",
	    "\"ts\":-9232595408891630.583808,\"dur\":0.000001,");
	/*
	 * A grouped space (a "group_id" stat metadata: IsXSpaceGrouped()) keeps the
	 * GPU lines' display ids: XProf renumbers streams only when it derives lines
	 */
	HAS(s, "\"pid\":1,\"tid\":1,\"args\":{\"name\":\"Stream #1\"}");
	/* async: overlapping in-out events are b/e pairs with their flow id, not X slices */
	HAS(s,
	    "{\"ph\":\"b\",\"pid\":1,\"tid\":2,\"ts\":1,\"name\":\"copy\","
	    "\"id\":7,\"cat\":\"\"",
	    "{\"ph\":\"e\",\"pid\":1,\"tid\":2,\"ts\":4,\"name\":\"copy\","
	    "\"id\":7,\"cat\":\"\"}",
	    "\"ts\":2,\"name\":\"copy\",\"id\":8,", "\"ts\":5,\"name\":\"copy\",\"id\":8,");
	/* single-ended: a begin and an end sharing id and cat */
	HAS(s,
	    "{\"ph\":\"b\",\"pid\":1,\"tid\":2,\"ts\":7,\"name\":\"copy\","
	    "\"id\":20,\"cat\":\"PjRt\"",
	    "{\"ph\":\"e\",\"pid\":1,\"tid\":2,\"ts\":9,\"name\":\"copy\","
	    "\"id\":20,\"cat\":\"PjRt\"");
	/* an end without its begin: a complete event, no unbalanced "e" */
	ev = trace_find(j, "copy", "X");
	assert_non_null(ev);
	HAS(s, "{\"ph\":\"X\",\"pid\":1,\"tid\":2,\"ts\":10,\"dur\":0.00001,"
	       "\"name\":\"copy\",\"args\"");
	LACKS(s, "\"id\":99");
	/* trace.json.gz: the same bytes, gzip-compressed */
	gz = render_opts(x, XPROFS_VIEW_TRACE_GZ, 0, &ro);
	assert_string_equal(gz, s);
	free(gz);
	json_decref(j);
	free(s);
	opened_free(&o);
}

static json_t *find_op(json_t *plane, const char *name)
{
	size_t i;
	json_t *op;

	json_array_foreach(
		json_object_get(plane, "ops"), i,
		op) if (!strcmp(json_string_value(json_object_get(op, "name")), name)) return op;
	fail_msg("no op %s", name);
	return NULL;
}

static void test_ops(void **state)
{
	struct opened o;
	struct xprofs_xspace *x;
	size_t i;
	json_t *j, *p, *op;

	x = opened_new(&o, sample());
	j = render_json(x, XPROFS_VIEW_OPS, 0);
	assert_int_equal(json_array_size(json_object_get(j, "planes")), 2);
	p = json_array_get(json_object_get(j, "planes"), 0);
	assert_string_equal(jstr(p, "kind"), "host");
	assert_int_equal(jint(p, "events"), 3); /* Steps is not an op line */
	op = find_op(p, "Outer");
	assert_int_equal(jint(op, "total_ps"), 100000000);
	assert_int_equal(jint(op, "self_ps"), 70000000); /* minus its two children */
	op = find_op(p, "Inner");
	assert_int_equal(jint(op, "count"), 2);
	assert_int_equal(jint(op, "min_ps"), 10000000);
	assert_int_equal(jint(op, "max_ps"), 20000000);
	assert_int_equal(jint(op, "mean_ps"), 15000000);
	/* sorted by self time */
	assert_string_equal(jstr(p, "ops.0.name"), "Outer");
	p = json_array_get(json_object_get(j, "planes"), 1);
	assert_string_equal(jstr(p, "kind"), "device");
	/* no program_id: XProf's GPU table leaves every kernel out, ops.json lists them
	 * apart, by kernel name (test_gpu_ops.py has the whole rule) */
	assert_int_equal(jint(p, "events"), 0);
	assert_int_equal(json_array_size(json_object_get(p, "ops")), 0);
	assert_int_equal(jint(p, "unattributed.events"), 3);
	assert_int_equal(jint(p, "unattributed.total_ps"), 55000000);
	op = find_op(json_object_get(p, "unattributed"), "kernel_a");
	assert_int_equal(jint(op, "count"), 2);
	assert_true(json_real_value(json_object_get(op, "flops")) == 1000.0 ||
		    json_integer_value(json_object_get(op, "flops")) == 1000);
	/* invariants: counts and totals add up */
	json_array_foreach(json_object_get(j, "planes"), i, p)
	{
		int64_t cnt = 0, tot = 0;
		size_t k;

		json_array_foreach(json_object_get(p, "ops"), k, op)
		{
			cnt += jint(op, "count");
			tot += jint(op, "total_ps");
		}
		assert_int_equal(cnt, jint(p, "events"));
		assert_int_equal(tot, jint(p, "total_ps"));
	}
	json_decref(j);
	opened_free(&o);
}

/* session_ops_json() - the session ops.json of two hosts that are both @x. */
static json_t *session_ops_json(struct xprofs_xspace *x)
{
	const char *const hosts[] = {"h0", "h1"};
	struct xprofs_xspace *const xs[] = {x, x};
	struct xprofs_session_in in = {"s", hosts, xs, NULL, 2};
	struct xprofs_buf out;
	struct xprofs_sink sink;
	json_error_t e;
	json_t *j;

	xprofs_buf_init(&out, (size_t)1 << 20);
	sink = xprofs_sink_buf(&out);
	assert_int_equal(xprofs_decode_session_ops(&in, &sink), 0);
	j = json_loadb(out.data, out.len, 0, &e);
	assert_non_null(j);
	xprofs_buf_deinit(&out);
	return j;
}

/*
 * Past the op cap the rest of a plane's ops fold into one "(other)" row:
 * the ops before the cap keep their own rows and numbers (the last of them
 * used to become the sink itself), in a plane's table and a session's.
 */
static void test_ops_other(void **state)
{
	static const char *const names[] = {"A", "B", "C", "D", "E"};
	struct tb *b = tb_new();
	size_t saved = stats_ops_max;
	struct opened o;
	XPlane *host, *gpu;
	XLine *l;
	json_t *j, *sj, *p, *op;
	size_t k;
	int seen = 0;

	(void)state;
	host = tb_plane(b, 0, "/host:CPU");
	for (int i = 0; i < 5; i++)
		tb_evmd(b, host, 10 + i, names[i], NULL);
	l = tb_line(b, host, 1, "python", 1);
	for (int i = 0; i < 5; i++) /* A..E: 1..5 us, one after another */
		tb_event(b, l, 10 + i, (int64_t)i * 10000000, (int64_t)(i + 1) * 1000000);
	stats_ops_max = 3;
	j = render_json(opened_new(&o, b), XPROFS_VIEW_OPS, 0);
	sj = session_ops_json(o.x);
	stats_ops_max = saved;
	/* the session table meets "(other)" as a fourth name: it folds it into its own */
	p = json_object_get(sj, "host");
	assert_int_equal(json_array_size(json_object_get(p, "ops")), 4);
	op = find_op(p, "C");
	assert_int_equal(jint(op, "total_ps"), 6000000); /* C 3 us, from both hosts */
	op = find_op(p, "(other)");
	assert_int_equal(jint(op, "count"), 4);
	json_decref(sj);
	p = json_array_get(json_object_get(j, "planes"), 0);
	assert_int_equal(json_array_size(json_object_get(p, "ops")), 4);
	for (int i = 0; i < 3; i++) {
		op = find_op(p, names[i]);
		assert_int_equal(jint(op, "count"), 1);
		assert_int_equal(jint(op, "total_ps"), (int64_t)(i + 1) * 1000000);
	}
	op = find_op(p, "(other)");
	assert_int_equal(jint(op, "count"), 2);
	assert_int_equal(jint(op, "total_ps"), 9000000); /* D 4 us + E 5 us */
	assert_int_equal(jint(p, "events"), 5);
	json_decref(j);
	opened_free(&o);

	/* hlo_stats.json's database: a GPU plane's five XLA ops (no HLO in the
	 * profile: every kernel counts) meet its cap of 3 as A, B, C, "(other)" */
	b = tb_new();
	gpu = tb_plane(b, 1, "/device:GPU:0");
	TB_STMDS(b, gpu, "hlo_op", "program_id");
	for (int i = 0; i < 5; i++)
		tb_evmd(b, gpu, 10 + i, names[i], NULL);
	l = tb_line(b, gpu, 1, "Stream #1(Kernel)", 1);
	for (int i = 0; i < 5; i++) {
		XEvent *e =
			tb_event(b, l, 10 + i, (int64_t)i * 10000000, (int64_t)(i + 1) * 1000000);

		tb_stat_s(b, &e->stats, &e->n_stats, 1, names[i]);
		tb_stat_i(b, &e->stats, &e->n_stats, 2, 7);
	}
	stats_ops_max = 3;
	j = render_json(opened_new(&o, b), XPROFS_VIEW_HLO_STATS, 0);
	stats_ops_max = saved;
	assert_int_equal(json_array_size(json_object_get(j, "ops")), 4);
	json_array_foreach(json_object_get(j, "ops"), k, op)
	{
		const char *name = json_string_value(json_object_get(op, "hlo_op_name"));

		assert_non_null(name);
		if (!strcmp(name, "C"))
			assert_int_equal(jint(op, "total_time_ps"), 3000000);
		if (!strcmp(name, "(other)"))
			assert_int_equal(jint(op, "total_time_ps"), 9000000); /* D and E */
		seen += !strcmp(name, "C") + !strcmp(name, "(other)");
	}
	assert_int_equal(seen, 2);
	json_decref(j);
	opened_free(&o);
}

/*
 * A big host plane's op table is made as two tasks, half its lines each, and
 * joined (stats_ops_cut()): every view made from op tables must be the one
 * walk's, on one thread (both parts on one context, one after the other:
 * the second must not meet the first's cached ops groups) and on two.
 */
static void test_ops_cut(void **state)
{
	static const char *const names[] = {"A", "B", "C", "D"};
	static const int views[] = {XPROFS_VIEW_OPS, XPROFS_VIEW_OVERVIEW, XPROFS_VIEW_OP_PROFILE,
				    XPROFS_VIEW_TF_STATS};
	uint64_t saved = stats_ops_cut_min;
	struct tb *b = tb_new();
	struct opened o;
	struct xprofs_xspace *x;
	XPlane *host;

	(void)state;
	host = tb_plane(b, 0, "/host:CPU");
	TB_STMDS(b, host, "tf_op");
	for (int i = 0; i < 4; i++)
		tb_evmd(b, host, 10 + i, names[i], NULL);
	for (int li = 0; li < 4; li++) { /* each line: A (B C) D, names met in another order */
		XLine *l = tb_line(b, host, li + 1, "thread", 1);

		for (int k = 0; k < 3; k++) {
			int64_t t0 = (int64_t)k * 100000000;
			XEvent *e = tb_event(b, l, 10 + (li + k) % 4, t0, 50000000);

			tb_stat_s(b, &e->stats, &e->n_stats, 1, "model/dense/MatMul:MatMul");
			tb_event(b, l, 10 + (li + k + 1) % 4, t0 + 10000000, 20000000);
			tb_event(b, l, 10 + (li + k + 2) % 4, t0 + 60000000, 5000000);
		}
	}
	x = opened_new(&o, b);
	for (unsigned th = 1; th <= 2; th++) {
		x->threads = th;
		for (size_t v = 0; v < sizeof(views) / sizeof(views[0]); v++) {
			char *whole, *cut;

			stats_ops_cut_min = UINT64_MAX;
			whole = render(x, views[v], 0);
			stats_ops_cut_min = 1;
			cut = render(x, views[v], 0);
			stats_ops_cut_min = saved;
			assert_string_equal(cut, whole);
			free(whole);
			free(cut);
		}
	}
	opened_free(&o);
}

/*
 * A device plane for test_step_hints(): a step line with a marker of each
 * of 5 groups over all of the time, and an op line of @n overlapping events
 * of groups (i / 7) % 5, some without a group_id, on GPU some without a
 * correlation_id or with -1 (admit() leaves those out): an event read as
 * the wrong one changes what the steps count.
 */
static void hints_plane(struct tb *b, int64_t id, bool gpu, int n)
{
	XPlane *p = tb_plane(b, id, gpu ? "/device:GPU:0" : "/device:TPU:0");
	XLine *st = tb_line(b, p, gpu ? TID_DERIVED_MIN : 1, "Steps", 0);
	XLine *l = tb_line(b, p, 7, gpu ? "Stream #7(Kernel)" : "XLA Ops", 0);

	/* every stat an op walk reads first: the notes' two must still fit in its key set */
	TB_STMDS(b, p, "hlo_category", "hlo_op", "flops", "bytes_accessed", "model_flops",
		 "program_id", "tf_op", "device_offset_ps", "device_duration_ps", "group_id",
		 "correlation_id");
	tb_evmd(b, p, 10, "fusion.1", NULL);
	tb_evmd(b, p, 11, "step", NULL);
	for (int g = 0; g < 5; g++) {
		XEvent *e = tb_event(b, st, 11, 0, (int64_t)n * 1500 + 5000);

		tb_stat_i(b, &e->stats, &e->n_stats, 10, g);
	}
	for (int i = 0; i < n; i++) {
		XEvent *e = TB_MSG(b, xevent);

		e->metadata_id = 10;
		e->data_case = TENSORFLOW__PROFILER__XEVENT__DATA_OFFSET_PS;
		e->offset_ps = (int64_t)i * 1500;
		e->duration_ps = 1000 + (i % 3) * 400;
		tb_push_cap(b, (void ***)&l->events, &l->n_events, e, (size_t)n);
		if (i % 7 != 3)
			tb_stat_i(b, &e->stats, &e->n_stats, 10, (i / 7) % 5);
		if (gpu && i % 11 != 5)
			tb_stat_i(b, &e->stats, &e->n_stats, 11, i % 13 == 4 ? -1 : i);
	}
}

/*
 * overview.json's pass 2 of the steps reads the groups of the device events
 * from the op walk's notes (stats/hints.c): the overview must be the one
 * made when pass 2 decodes every event's stats itself (no notes), on one
 * thread and on two, where the second half of the time starts at a
 * checkpoint of a line of more than XS_CKPT_EVERY events; a line whose notes
 * were dropped (one run allowed) also falls back.
 */
static void test_step_hints(void **state)
{
	size_t saved = stats_hint_runs;

	(void)state;
	for (int gpu = 0; gpu < 2; gpu++) {
		struct tb *b = tb_new();
		struct opened o;
		struct xprofs_xspace *x;

		hints_plane(b, 1, gpu, 3 * XS_CKPT_EVERY + 100);
		x = opened_new(&o, b);
		for (unsigned th = 1; th <= 2; th++) {
			size_t used = atomic_load(&stats_hint_lines);
			char *with, *without, *one;
			json_t *j;

			x->threads = th;
			with = render(x, XPROFS_VIEW_OVERVIEW, 0);
			assert_true(atomic_load(&stats_hint_lines) >
				    used); /* the notes were read */
			stats_hint_runs = 0;
			without = render(x, XPROFS_VIEW_OVERVIEW, 0);
			stats_hint_runs = 1;
			one = render(x, XPROFS_VIEW_OVERVIEW, 0);
			stats_hint_runs = saved;
			assert_string_equal(with, without);
			assert_string_equal(one, without);
			j = json_loads(with, 0, NULL);
			assert_non_null(j);
			/* 5 steps; a device compute time that counts the admitted events only */
			assert_int_equal(jint(j, "step_time.steps"), 5);
			json_decref(j);
			free(with);
			free(without);
			free(one);
		}
		opened_free(&o);
	}
}

static void test_steps(void **state)
{
	struct opened o;
	struct xprofs_xspace *x;
	json_t *j;

	x = opened_new(&o, sample());
	j = render_json(x, XPROFS_VIEW_STEPS, 0);
	/*
	 * XProf's steps are group_id steps of the device planes: the host's "Steps"
	 * line marks none, and the GPU has no step line (tests/decode/test_steps.py
	 * has the steps that are)
	 */
	assert_int_equal(json_array_size(json_object_get(j, "steps")), 0);
	assert_int_equal(json_array_size(json_object_get(j, "summary")), 0);
	json_decref(j);
	opened_free(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_summary),
		cmocka_unit_test(test_track),
		cmocka_unit_test(test_trace),
		cmocka_unit_test(test_gzip_sink),
		cmocka_unit_test(test_trace_derived),
		cmocka_unit_test(test_trace_framework),
		cmocka_unit_test(test_trace_hlo_symbols),
		cmocka_unit_test(test_trace_xprof),
		cmocka_unit_test(test_ops),
		cmocka_unit_test(test_ops_other),
		cmocka_unit_test(test_ops_cut),
		cmocka_unit_test(test_step_hints),
		cmocka_unit_test(test_steps),
	};

	xprofs_log_set_level(XPROFS_LOG_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
