/*
 * test_capture.c - unit tests of capture/: the control-line grammar, the
 * gRPC frame parser and the incremental ProfileResponse parser (responses
 * built with protobuf-c, fed with a chunk boundary at every byte), the
 * error mapping, and the status JSON of a real manager over a local store
 * (a capture against a closed loopback port must end "unreachable").
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture-internal.h"
#include "profiler_service.pb-c.h"
#include "testutil.h"
#include "xprofs/capture.h"
#include "xprofs/store.h"

static int parse(const char *line, struct capture_req *q, struct xprofs_buf *why)
{
	return capture_line_parse(line, strlen(line), q, why);
}

/* ---- line grammar ----------------------------------------------------- */

static void test_line_defaults(void **state)
{
	struct capture_req *q = malloc(sizeof(*q));

	assert_int_equal(parse("localhost:9012", q, NULL), 0);
	assert_int_equal(q->cmd, CAPTURE_CMD_PROFILE);
	assert_int_equal(q->n_hosts, 1);
	assert_string_equal(q->hosts[0], "localhost:9012");
	assert_int_equal(q->duration_ms, CAPTURE_DEFAULT_DURATION_MS);
	assert_int_equal(q->host_tracer_level, 2);
	assert_int_equal(q->device_tracer_level, 1);
	assert_int_equal(q->python_tracer_level, 0);
	assert_false(q->has_run);
	assert_false(q->has_delay);
	assert_string_equal(q->session, "");
	free(q);
}

static void test_line_full(void **state)
{
	struct capture_req *q = malloc(sizeof(*q));

	assert_int_equal(
		parse("  run=exp/a/b  10.0.0.1:9012,worker-2.local:8466,[::1]:9 duration_ms=2500 "
		      "host_tracer_level=3 device_tracer_level=0 python_tracer_level=1 delay_ms=0 "
		      "session=s1 deadline_ms=5000 advanced.gpu_max_events=100 "
		      "advanced.tpu_trace_mode=TRACE_ONLY advanced.enable_x=true advanced.neg=-5\r",
		      q, NULL),
		0);
	assert_true(q->has_run);
	assert_string_equal(q->run, "exp/a/b");
	assert_int_equal(q->n_hosts, 3);
	assert_string_equal(q->hosts[1], "worker-2.local:8466");
	assert_string_equal(q->hosts[2], "[::1]:9");
	assert_int_equal(q->duration_ms, 2500);
	assert_int_equal(q->host_tracer_level, 3);
	assert_int_equal(q->device_tracer_level, 0);
	assert_int_equal(q->python_tracer_level, 1);
	assert_true(q->has_delay);
	assert_int_equal(q->delay_ms, 0);
	assert_true(q->has_deadline);
	assert_int_equal(q->deadline_ms, 5000);
	assert_string_equal(q->session, "s1");
	assert_int_equal(q->n_adv, 4);
	assert_string_equal(q->adv[0].key, "gpu_max_events");
	assert_int_equal(q->adv[0].type, CAPTURE_ADV_INT);
	assert_int_equal(q->adv[0].i, 100);
	assert_int_equal(q->adv[1].type, CAPTURE_ADV_STRING);
	assert_string_equal(q->adv[1].str, "TRACE_ONLY");
	assert_int_equal(q->adv[2].type, CAPTURE_ADV_BOOL);
	assert_true(q->adv[2].b);
	assert_int_equal(q->adv[3].type, CAPTURE_ADV_INT);
	assert_int_equal(q->adv[3].i, -5);
	free(q);
}

static void test_line_commands(void **state)
{
	struct capture_req *q = malloc(sizeof(*q));

	assert_int_equal(parse("stop", q, NULL), 0);
	assert_int_equal(q->cmd, CAPTURE_CMD_STOP);
	assert_int_equal(parse("run=r1 stop", q, NULL), 0);
	assert_int_equal(q->cmd, CAPTURE_CMD_STOP);
	assert_string_equal(q->run, "r1");
	assert_int_equal(parse("run=. h:1", q, NULL), 0);
	assert_true(q->has_run);
	assert_string_equal(q->run, "");
	assert_int_equal(parse("snapshot h:1,h:2", q, NULL), 0);
	assert_int_equal(q->cmd, CAPTURE_CMD_SNAPSHOT);
	assert_int_equal(q->n_hosts, 2);
	assert_int_equal(parse("continuous start h:1 duration_ms=5", q, NULL), 0);
	assert_int_equal(q->cmd, CAPTURE_CMD_CONT_START);
	assert_int_equal(q->duration_ms, 5);
	assert_int_equal(parse("continuous stop h:1", q, NULL), 0);
	assert_int_equal(q->cmd, CAPTURE_CMD_CONT_STOP);
	assert_int_equal(parse("h:1 host=worker0", q, NULL), 0);
	assert_string_equal(q->host_dir, "worker0");
	assert_int_equal(parse("", q, NULL), -ENODATA);
	assert_int_equal(parse("   \t ", q, NULL), -ENODATA);
	assert_int_equal(parse("# comment h:1", q, NULL), -ENODATA);
	free(q);
}

static void test_line_invalid(void **state)
{
	static const char *const bad[] = {
		"localhost",  /* no port */
		"localhost:", /* empty port */
		":9012",      /* empty host */
		"h:0",
		"h:65536",
		"h:12a",
		"h:-1",
		"h:+5",
		"h:1,",    /* empty second host */
		"h:1,h:1", /* duplicate */
		"h:1 h:2", /* two host lists */
		"ho st:1",
		"h/x:1",
		"[zz]:1",
		"[::1]",
		"[]:1",
		"h:1 duration_ms=0",
		"h:1 duration_ms=-1",
		"h:1 duration_ms=1e3",
		"h:1 duration_ms=",
		"h:1 duration_ms=3600001",
		"h:1 duration_ms=99999999999999999999999",
		"h:1 host_tracer_level=4",
		"h:1 device_tracer_level=3",
		"h:1 python_tracer_level=2",
		"h:1 delay_ms=600001",
		"h:1 deadline_ms=999",
		"run=../x h:1",
		"run=a/../b h:1",
		"run=/a h:1",
		"run=a/ h:1",
		"run=a//b h:1",
		"run= h:1",
		"run=a run=b h:1",
		"h:1 session=a/b",
		"h:1 session=..",
		"h:1 session=.",
		"h:1 session=",
		"h:1,h:2 host=x", /* host= needs one host */
		"h:1 host=a/b",
		"stop h:1",
		"stop now",
		"stop duration_ms=5",
		"continuous",
		"continuous go h:1",
		"continuous stop h:1 session=x",
		"snapshot",
		"h:1 frobnicate",
		"duration_ms=5",
		"h:1 bad$key=1",
		"h:1 k=1 k=2",
		"h:1 =5",
		("h:1 k=a\x01"
		 "b"),
		"duration_ms=5 stop",
	};
	struct capture_req *q = malloc(sizeof(*q));

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct xprofs_buf why;
		int r;

		xprofs_buf_init(&why, 4096);
		r = parse(bad[i], q, &why);
		if (r != -EINVAL)
			fail_msg("accepted '%s' (r=%d)", bad[i], r);
		assert_true(why.len > 0); /* a reason is always given */
		xprofs_buf_deinit(&why);
	}
	free(q);
}

static void test_line_limits(void **state)
{
	struct capture_req *q = malloc(sizeof(*q));
	struct xprofs_buf b;
	char with_nul[] = "h:1\0x";

	/* 64 hosts fit, 65 do not */
	xprofs_buf_init(&b, 1 << 20);
	for (int i = 0; i < CAPTURE_MAX_HOSTS; i++)
		assert_int_equal(xprofs_buf_printf(&b, "%sh%d:1", i ? "," : "", i), 0);
	assert_int_equal(parse(b.data, q, NULL), 0);
	assert_int_equal(q->n_hosts, CAPTURE_MAX_HOSTS);
	assert_int_equal(xprofs_buf_adds(&b, ",extra:1"), 0);
	assert_int_equal(parse(b.data, q, NULL), -EINVAL);
	xprofs_buf_reset(&b);
	/* an over-long line */
	for (int i = 0; i < CAPTURE_MAX_LINE; i++)
		assert_int_equal(xprofs_buf_adds(&b, " "), 0);
	assert_int_equal(xprofs_buf_adds(&b, "h:1"), 0);
	assert_int_equal(parse(b.data, q, NULL), -EINVAL);
	/* too many advanced options */
	xprofs_buf_reset(&b);
	assert_int_equal(xprofs_buf_adds(&b, "h:1"), 0);
	for (int i = 0; i <= CAPTURE_MAX_ADV; i++)
		assert_int_equal(xprofs_buf_printf(&b, " advanced.k%d=%d", i, i), 0);
	assert_int_equal(parse(b.data, q, NULL), -EINVAL);
	xprofs_buf_deinit(&b);
	/* NUL inside */
	assert_int_equal(capture_line_parse(with_nul, sizeof(with_nul) - 1, q, NULL), -EINVAL);
	/* int64 overflow falls back to a string value */
	assert_int_equal(parse("h:1 advanced.k=99999999999999999999", q, NULL), 0);
	assert_int_equal(q->adv[0].type, CAPTURE_ADV_STRING);
	free(q);
}

/* Unknown keys are refused (with the nearest known one), advanced.KEY= is the way out. */
static void test_line_unknown_keys(void **state)
{
	struct capture_req *q = malloc(sizeof(*q));
	struct xprofs_buf why;

	xprofs_buf_init(&why, 4096);
	assert_int_equal(parse("h:1 durationms=300", q, &why), -EINVAL);
	assert_non_null(strstr(why.data, "unknown option 'durationms'"));
	assert_non_null(strstr(why.data, "did you mean 'duration_ms'"));
	assert_non_null(strstr(why.data, "advanced.KEY=VALUE"));
	xprofs_buf_reset(&why);
	assert_int_equal(parse("h:1 gpu_max_events=7", q, &why), -EINVAL);
	assert_null(strstr(why.data, "did you mean"));
	assert_int_equal(parse("h:1 advanced.=7", q, NULL), -EINVAL);
	assert_int_equal(parse("h:1 advanced.a/b=7", q, NULL), -EINVAL);
	assert_int_equal(parse("h:1 advanced.durationms=300", q, NULL), 0);
	assert_int_equal(q->n_adv, 1);
	assert_string_equal(q->adv[0].key, "durationms");
	assert_int_equal(q->duration_ms, CAPTURE_DEFAULT_DURATION_MS);
	xprofs_buf_deinit(&why);
	free(q);
}

/* feed() - the lines @a makes of @in written in pieces of @step bytes, joined by '|'. */
static int feed(struct capture_asm *a, const char *in, size_t step, char *out, size_t cap)
{
	size_t n = strlen(in), pos = 0, used, len, o = 0;
	const char *line;
	int errs = 0;

	out[0] = '\0';
	while (pos < n) {
		size_t k = n - pos < step ? n - pos : step, off = 0;

		while (off < k) {
			int r = capture_asm_feed(a, in + pos + off, k - off, &used, &line, &len);

			off += used;
			if (r < 0)
				errs++;
			if (r == 1)
				o += (size_t)snprintf(out + o, cap - o, "%.*s|", (int)len, line);
		}
		pos += k;
	}
	if (capture_asm_end(a, &line, &len))
		o += (size_t)snprintf(out + o, cap - o, "%.*s|", (int)len, line);
	return errs;
}

static void test_line_assembly(void **state)
{
	struct capture_asm *a = malloc(sizeof(*a));
	char *big = malloc(CAPTURE_MAX_LINE + 64), *out = malloc(CAPTURE_MAX_LINE + 64);
	size_t cap = CAPTURE_MAX_LINE + 64;

	for (size_t step = 1; step <= 12; step++) {
		capture_asm_init(a);
		assert_int_equal(feed(a, "h:1 duration_ms=5\nstop\n\nlast", step, out, cap), 0);
		assert_string_equal(out, "h:1 duration_ms=5|stop||last|");
	}
	/* a line of exactly the limit passes; one byte more is refused and dropped */
	memset(big, 'x', CAPTURE_MAX_LINE);
	strcpy(big + CAPTURE_MAX_LINE, "\nok\n");
	capture_asm_init(a);
	assert_int_equal(feed(a, big, 1000, out, cap), 0);
	assert_int_equal(strlen(out), CAPTURE_MAX_LINE + strlen("|ok|"));
	assert_string_equal(out + CAPTURE_MAX_LINE, "|ok|");
	memset(big, 'x', CAPTURE_MAX_LINE + 1);
	strcpy(big + CAPTURE_MAX_LINE + 1, "\nok\n");
	for (size_t step = 1000; step <= CAPTURE_MAX_LINE + 8; step += 1111) {
		capture_asm_init(a);
		assert_int_equal(feed(a, big, step, out, cap), 1);
		assert_string_equal(out, "ok|");
	}
	assert_true(capture_line_blank(" \t# c", 6));
	assert_true(capture_line_blank("", 0));
	assert_false(capture_line_blank(" h:1", 4));
	free(out);
	free(big);
	free(a);
}

static void test_names(void **state)
{
	char out[16];

	assert_true(capture_name_valid("a b", 3));
	assert_false(capture_name_valid("..", 2));
	assert_false(capture_name_valid("a\x7f", 2));
	assert_true(xprofs_capture_run_valid("a/b/c", 5));
	assert_false(xprofs_capture_run_valid("a/./c", 5));
	assert_int_equal(capture_host_dirname("h:1", out, sizeof(out)), 0);
	assert_string_equal(out, "h_1");
	assert_int_equal(capture_host_dirname("0123456789abcdef", out, sizeof(out)), -ENAMETOOLONG);
}

/* ---- response parsers ------------------------------------------------- */

struct collect {
	struct xprofs_buf b;
};

static int collect_write(void *arg, const void *p, size_t n)
{
	return xprofs_buf_add(&((struct collect *)arg)->b, p, n);
}

/* A framed ProfileResponse: unknown fields of every wire type around real ones. */
static uint8_t *make_response(const uint8_t *xs, size_t xn, bool empty, bool with_tool, size_t *len)
{
	Tensorflow__ProfileResponse resp = TENSORFLOW__PROFILE_RESPONSE__INIT;
	Tensorflow__ProfileToolData td = TENSORFLOW__PROFILE_TOOL_DATA__INIT;
	Tensorflow__ProfileToolData *tds[1] = {&td};
	char name[] = "trace_viewer";
	static const uint8_t unknown[] = {
		0xa0, 0x01, 0x96, 0x01,                       /* field 20 varint 150 */
		0xaa, 0x01, 0x03, 'a',  'b', 'c',             /* field 21 len 3 */
		0xb1, 0x01, 1,    2,    3,   4,   5, 6, 7, 8, /* field 22 fixed64 */
		0xbd, 0x01, 1,    2,    3,   4,               /* field 23 fixed32 */
	};
	size_t n;
	uint8_t *buf;

	td.name = name;
	td.data.data = (uint8_t *)"xyz";
	td.data.len = 3;
	if (with_tool) {
		resp.n_tool_data = 1;
		resp.tool_data = tds;
	}
	resp.empty_trace = empty;
	if (xs) {
		resp.xspace.data = (uint8_t *)xs;
		resp.xspace.len = xn;
	}
	n = tensorflow__profile_response__get_packed_size(&resp) + sizeof(unknown);
	buf = malloc(n + 5);
	assert_non_null(buf);
	buf[0] = 0;
	buf[1] = (uint8_t)(n >> 24);
	buf[2] = (uint8_t)(n >> 16);
	buf[3] = (uint8_t)(n >> 8);
	buf[4] = (uint8_t)n;
	memcpy(buf + 5, unknown, sizeof(unknown));
	tensorflow__profile_response__pack(&resp, buf + 5 + sizeof(unknown));
	*len = n + 5;
	return buf;
}

/* Feed @msg split at every pair of points (@a, @b): three chunks. */
static void feed_split(const uint8_t *msg, size_t len, size_t a, size_t b, const uint8_t *xs,
		       size_t xn, bool empty, bool tool)
{
	struct collect col;
	struct capture_resp resp;
	struct capture_frames f;

	xprofs_buf_init(&col.b, 1 << 20);
	capture_resp_init(&resp, (struct xprofs_sink){.write = collect_write, .arg = &col});
	capture_frames_init(&f, &capture_resp_ops, &resp, 1 << 20, 1);
	assert_int_equal(capture_frames_feed(&f, msg, a), 0);
	assert_int_equal(capture_frames_feed(&f, msg + a, b - a), 0);
	assert_int_equal(capture_frames_feed(&f, msg + b, len - b), 0);
	assert_int_equal(capture_frames_finish(&f), 0);
	assert_int_equal(resp.has_xspace, xs != NULL);
	assert_int_equal(resp.xspace_bytes, xn);
	XT_SAME_BYTES(col.b.data, col.b.len, xs, xn);
	assert_int_equal(resp.empty_trace, empty);
	assert_int_equal(resp.n_tools, tool ? 1 : 0);
	if (tool)
		assert_string_equal(resp.tools[0], "trace_viewer");
	capture_resp_deinit(&resp);
	xprofs_buf_deinit(&col.b);
}

static void test_resp_every_split(void **state)
{
	uint8_t xs[300];
	size_t len;
	uint8_t *msg;

	for (size_t i = 0; i < sizeof(xs); i++)
		xs[i] = (uint8_t)(i * 7 + 1);
	msg = make_response(xs, sizeof(xs), false, true, &len);
	for (size_t a = 0; a <= len; a++)
		for (size_t b = a; b <= len; b += (a % 5 == 0) ? 1 : 17)
			feed_split(msg, len, a, b, xs, sizeof(xs), false, true);
	free(msg);

	msg = make_response(NULL, 0, true, false, &len);
	for (size_t a = 0; a <= len; a++)
		feed_split(msg, len, a, a, NULL, 0, true, false);
	free(msg);

	/* present but empty xspace (protobuf-c would omit it) still counts as "has xspace" */
	{
		static const uint8_t m[] = {0, 0, 0, 0, 2, 0x42, 0x00};

		for (size_t a = 0; a <= sizeof(m); a++)
			feed_split(m, sizeof(m), a, a, xs, 0, false, false);
	}
}

static void test_resp_byte_by_byte(void **state)
{
	uint8_t xs[1000];
	size_t len;
	uint8_t *msg;
	struct collect col;
	struct capture_resp resp;
	struct capture_frames f;

	for (size_t i = 0; i < sizeof(xs); i++)
		xs[i] = (uint8_t)rand();
	msg = make_response(xs, sizeof(xs), false, true, &len);
	xprofs_buf_init(&col.b, 1 << 20);
	capture_resp_init(&resp, (struct xprofs_sink){.write = collect_write, .arg = &col});
	capture_frames_init(&f, &capture_resp_ops, &resp, 1 << 20, 1);
	for (size_t i = 0; i < len; i++) {
		assert_int_equal(capture_frames_feed(&f, msg + i, 1), 0);
		if (i + 1 < len)
			assert_int_equal(capture_frames_finish(&f), -EPROTO); /* truncated so far */
	}
	assert_int_equal(capture_frames_finish(&f), 0);
	XT_SAME_BYTES(col.b.data, col.b.len, xs, sizeof(xs));
	capture_resp_deinit(&resp);
	xprofs_buf_deinit(&col.b);
	free(msg);
}

static int feed_all(const uint8_t *p, size_t n, uint64_t max)
{
	struct collect col;
	struct capture_resp resp;
	struct capture_frames f;
	int r;

	xprofs_buf_init(&col.b, 1 << 20);
	capture_resp_init(&resp, (struct xprofs_sink){.write = collect_write, .arg = &col});
	capture_frames_init(&f, &capture_resp_ops, &resp, max, 1);
	r = capture_frames_feed(&f, p, n);
	if (r == 0)
		r = capture_frames_finish(&f);
	capture_resp_deinit(&resp);
	xprofs_buf_deinit(&col.b);
	return r;
}

static void test_resp_malformed(void **state)
{
	uint8_t xs[10] = {0};
	size_t len;
	uint8_t *msg = make_response(xs, sizeof(xs), false, false, &len);
	uint8_t *two = malloc(2 * len);

	assert_int_equal(feed_all(msg, len, 1 << 20), 0);
	/* over the maximum: refused from the header alone */
	assert_int_equal(feed_all(msg, len, len - 6), -EMSGSIZE);
	/* compressed flag */
	msg[0] = 1;
	assert_int_equal(feed_all(msg, len, 1 << 20), -EPROTO);
	msg[0] = 0;
	/* two messages in a unary response */
	memcpy(two, msg, len);
	memcpy(two + len, msg, len);
	assert_int_equal(feed_all(two, 2 * len, 1 << 20), -EPROTO);
	/* truncated */
	assert_int_equal(feed_all(msg, len - 1, 1 << 20), -EPROTO);
	assert_int_equal(feed_all(msg, 3, 1 << 20), -EPROTO);
	free(msg);
	free(two);

	{
		/* a field length running past the message */
		static const uint8_t past[] = {0, 0, 0, 0, 3, 0x42, 0x05, 'a'};
		/* a group (wire type 3) */
		static const uint8_t group[] = {0, 0, 0, 0, 1, 0x0b};
		/* field 0 */
		static const uint8_t zero[] = {0, 0, 0, 0, 2, 0x00, 0x01};
		/* xspace with the wrong wire type */
		static const uint8_t wrong[] = {0, 0, 0, 0, 2, 0x40, 0x01};
		/* an 11-byte varint */
		static const uint8_t longv[] = {0,    0,    0,    0,    12,   0x38,
						0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
						0xff, 0xff, 0xff, 0xff, 0x01};
		/* a varint cut by the end of the message */
		static const uint8_t cut[] = {0, 0, 0, 0, 2, 0x38, 0x80};
		/* a fixed64 running past the message */
		static const uint8_t fix[] = {0, 0, 0, 0, 4, 0xb1, 0x01, 1, 2};
		/* a tool_data entry over the cap */
		static const uint8_t big[] = {0, 0, 0, 0, 6, 0x32, 0x80, 0x80, 0x80, 0x40, 0};
		/* an empty message is a valid (all-default) response */
		static const uint8_t empty[] = {0, 0, 0, 0, 0};

		assert_int_equal(feed_all(past, sizeof(past), 1 << 20), -EPROTO);
		assert_int_equal(feed_all(group, sizeof(group), 1 << 20), -EPROTO);
		assert_int_equal(feed_all(zero, sizeof(zero), 1 << 20), -EPROTO);
		assert_int_equal(feed_all(wrong, sizeof(wrong), 1 << 20), -EPROTO);
		assert_int_equal(feed_all(longv, sizeof(longv), 1 << 20), -EPROTO);
		assert_int_equal(feed_all(cut, sizeof(cut), 1 << 20), -EPROTO);
		assert_int_equal(feed_all(fix, sizeof(fix), 1 << 20), -EPROTO);
		assert_int_not_equal(feed_all(big, sizeof(big), 1 << 20), 0);
		assert_int_equal(feed_all(empty, sizeof(empty), 1 << 20), 0);
	}
}

static int fail_write(void *arg, const void *p, size_t n)
{
	return -ENOSPC;
}

static void test_resp_sink_error(void **state)
{
	uint8_t xs[64] = {1};
	size_t len;
	uint8_t *msg = make_response(xs, sizeof(xs), false, false, &len);
	struct capture_resp resp;
	struct capture_frames f;

	capture_resp_init(&resp, (struct xprofs_sink){.write = fail_write});
	capture_frames_init(&f, &capture_resp_ops, &resp, 1 << 20, 1);
	assert_int_equal(capture_frames_feed(&f, msg, len), -ENOSPC);
	/* sticky */
	assert_int_equal(capture_frames_feed(&f, msg, 1), -ENOSPC);
	assert_int_equal(capture_frames_finish(&f), -ENOSPC);
	capture_resp_deinit(&resp);
	free(msg);
}

static void test_buf_consumer(void **state)
{
	static const uint8_t m[] = {0, 0, 0, 0, 3, 'a', 'b', 'c'};
	struct xprofs_buf b;
	struct capture_frames f;

	xprofs_buf_init(&b, 2);
	capture_frames_init(&f, &capture_buf_ops, &b, 1 << 20, 1);
	assert_int_equal(capture_frames_feed(&f, m, sizeof(m)), -EMSGSIZE);
	xprofs_buf_deinit(&b);
	xprofs_buf_init(&b, 16);
	capture_frames_init(&f, &capture_buf_ops, &b, 1 << 20, 1);
	assert_int_equal(capture_frames_feed(&f, m, sizeof(m)), 0);
	assert_int_equal(capture_frames_finish(&f), 0);
	XT_SAME_BYTES(b.data, b.len, "abc", 3);
	xprofs_buf_deinit(&b);
}

/* ---- error mapping and headers ---------------------------------------- */

static void test_errno_map(void **state)
{
	struct capture_call call = {0};
	const char *what;

	call.grpc_status = -1;
	call.curl_code = CURLE_COULDNT_CONNECT;
	assert_int_equal(capture_grpc_errno(&call, &what), -ECONNREFUSED);
	assert_non_null(strstr(what, "UNAVAILABLE"));
	call.curl_code = CURLE_OPERATION_TIMEDOUT;
	assert_int_equal(capture_grpc_errno(&call, &what), -ETIMEDOUT);
	call.curl_code = CURLE_HTTP2_STREAM;
	assert_int_equal(capture_grpc_errno(&call, &what), -EPROTO);
	assert_non_null(strstr(what, "UNIMPLEMENTED"));
	call.curl_code = CURLE_ABORTED_BY_CALLBACK;
	assert_int_equal(capture_grpc_errno(&call, &what), -ECANCELED);
	call.curl_code = CURLE_OK;
	call.http_status = 200;
	assert_int_equal(capture_grpc_errno(&call, &what), -EPROTO); /* no grpc-status */
	call.http_status = 404;
	assert_int_equal(capture_grpc_errno(&call, &what), -EPROTO);
	call.grpc_status = GRPC_OK;
	assert_int_equal(capture_grpc_errno(&call, &what), 0);
	call.grpc_status = GRPC_INTERNAL;
	strcpy(call.grpc_message, "Another profiling session active.");
	assert_int_equal(capture_grpc_errno(&call, &what), -EBUSY);
	call.grpc_message[0] = '\0';
	assert_int_equal(capture_grpc_errno(&call, &what), -EIO);
	call.grpc_status = GRPC_UNIMPLEMENTED;
	assert_int_equal(capture_grpc_errno(&call, &what), -ENOSYS);
	call.grpc_status = GRPC_DEADLINE_EXCEEDED;
	assert_int_equal(capture_grpc_errno(&call, &what), -ETIMEDOUT);
	call.grpc_status = GRPC_NOT_FOUND;
	assert_int_equal(capture_grpc_errno(&call, &what), -ENOENT);
	call.grpc_status = GRPC_UNAVAILABLE;
	assert_int_equal(capture_grpc_errno(&call, &what), -ECONNREFUSED);
	call.grpc_status = 99;
	assert_int_equal(capture_grpc_errno(&call, &what), -EIO);
	/* the stream's own error wins when it stopped the transfer */
	call.grpc_status = -1;
	call.curl_code = CURLE_WRITE_ERROR;
	call.stream_err = -EEXIST;
	assert_int_equal(capture_grpc_errno(&call, &what), -EEXIST);
	assert_non_null(strstr(what, "exists"));
}

static void test_headers(void **state)
{
	char b[64];

	capture_grpc_timeout_header(60000, b, sizeof(b));
	assert_string_equal(b, "grpc-timeout: 60000m");
	capture_grpc_timeout_header(99999999, b, sizeof(b));
	assert_string_equal(b, "grpc-timeout: 99999999m");
	capture_grpc_timeout_header(100000000, b, sizeof(b));
	assert_string_equal(b, "grpc-timeout: 100000S");
	capture_pct_decode("Another%20profiling%2Gx%", 24, b, sizeof(b));
	assert_string_equal(b, "Another profiling%2Gx%");
	capture_pct_decode("abcdef", 6, b, 4);
	assert_string_equal(b, "abc");
	capture_pct_decode("a%0Ab", 5, b, sizeof(b));
	assert_string_equal(b, "a b"); /* no control characters into status JSON */
}

/* ---- manager and status JSON ------------------------------------------ */

static int notified;
static void on_notify(void *arg, const char *run, const char *session)
{
	notified++;
}

static void test_status_json(void **state)
{
	char dir[] = "/tmp/xprofs-capture-test-XXXXXX";
	struct xprofs_store *st;
	struct xprofs_capture *c;
	struct xprofs_buf out, why;
	char line[64];
	json_t *j, *h;
	json_error_t err;
	int tries;

	assert_non_null(mkdtemp(dir));
	assert_int_equal(xprofs_store_local_new(dir, &st), 0);
	assert_int_equal(xprofs_capture_new(st, on_notify, NULL, &c), 0);
	xprofs_buf_init(&out, 1 << 20);
	xprofs_buf_init(&why, 4096);

	/* help before any capture */
	assert_int_equal(xprofs_capture_status(c, NULL, &out), 0);
	assert_non_null(strstr(out.data, "duration_ms"));
	xprofs_buf_reset(&out);

	/* a rejected line: -EINVAL at once, reason readable back as JSON */
	assert_int_equal(xprofs_capture_submit(c, NULL, "h:1 bogus\n", 10, &why), -EINVAL);
	assert_non_null(strstr(why.data, "bogus"));
	assert_int_equal(xprofs_capture_status(c, NULL, &out), 0);
	j = json_loads(strrchr(out.data, '{'), JSON_DISABLE_EOF_CHECK, &err);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "rejected")), "h:1 bogus");
	assert_non_null(strstr(json_string_value(json_object_get(j, "reason")), "bogus"));
	json_decref(j);
	xprofs_buf_reset(&out);

	/* stop with nothing running */
	assert_int_equal(xprofs_capture_submit(c, "r", "stop", 4, NULL), -ESRCH);
	/* run= in a run's file must match */
	assert_int_equal(xprofs_capture_submit(c, "r", "run=x h:1", 9, NULL), -EINVAL);

	/* port 1: privileged and never listened on here, so connect() is refused */
	snprintf(line, sizeof(line), "run=a/b 127.0.0.1:1 session=s1\n");
	assert_int_equal(xprofs_capture_submit(c, NULL, line, strlen(line), NULL), 0);
	for (tries = 0; tries < 200; tries++) {
		xprofs_buf_reset(&out);
		assert_int_equal(xprofs_capture_status(c, "a/b", &out), 0);
		if (!strstr(out.data, "\"running\""))
			break;
		usleep(50000);
	}
	assert_true(tries < 200);
	j = json_loads(out.data, JSON_DISABLE_EOF_CHECK, &err);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "run")), "a/b");
	assert_string_equal(json_string_value(json_object_get(j, "session")), "s1");
	assert_string_equal(json_string_value(json_object_get(j, "state")), "unreachable");
	assert_true(json_is_integer(json_object_get(j, "id")));
	assert_true(json_is_string(json_object_get(j, "started")));
	assert_true(json_is_string(json_object_get(j, "finished")));
	assert_int_equal(json_integer_value(json_object_get(j, "duration_ms")), 1000);
	h = json_array_get(json_object_get(j, "hosts"), 0);
	assert_non_null(h);
	assert_string_equal(json_string_value(json_object_get(h, "state")), "unreachable");
	assert_true(json_is_null(json_object_get(h, "file")));
	assert_true(json_is_null(json_object_get(h, "grpc_status")));
	assert_non_null(strstr(json_string_value(json_object_get(h, "error")), "refused"));
	assert_int_equal(json_integer_value(json_object_get(h, "bytes")), 0);
	json_decref(j);
	assert_int_equal(notified, 0); /* nothing written, nothing to refresh */

	/* other runs' status shows help only; the top-level shows everything */
	xprofs_buf_reset(&out);
	assert_int_equal(xprofs_capture_status(c, "other", &out), 0);
	assert_null(strstr(out.data, "\"session\""));
	xprofs_buf_reset(&out);
	assert_int_equal(xprofs_capture_status(c, NULL, &out), 0);
	assert_non_null(strstr(out.data, "\"session\":\"s1\""));

	xprofs_buf_deinit(&out);
	xprofs_buf_deinit(&why);
	assert_null(xprofs_capture_free(c));
	assert_null(xprofs_capture_free(NULL));
	xprofs_store_free(st);
	assert_int_equal(rmdir(dir), 0); /* nothing was created in the logdir */
}

/* Several lines per write: all valid -> all start; one bad -> none starts. */
static void test_multi_line(void **state)
{
	char dir[] = "/tmp/xprofs-capture-test-XXXXXX";
	static const char ok[] =
		"run=m1 127.0.0.1:1 session=a\n# comment\n\nrun=m2 127.0.0.1:1 session=b\n";
	static const char bad[] = "run=m3 127.0.0.1:1\nrun=m4 nohost\n";
	struct xprofs_store *st;
	struct xprofs_capture *c;
	struct xprofs_buf out, why;

	assert_non_null(mkdtemp(dir));
	assert_int_equal(xprofs_store_local_new(dir, &st), 0);
	assert_int_equal(xprofs_capture_new(st, NULL, NULL, &c), 0);
	xprofs_buf_init(&out, 1 << 20);
	xprofs_buf_init(&why, 4096);
	assert_int_equal(xprofs_capture_submit(c, NULL, ok, sizeof(ok) - 1, NULL), 0);
	assert_int_equal(xprofs_capture_submit(c, NULL, bad, sizeof(bad) - 1, &why), -EINVAL);
	assert_non_null(strstr(why.data, "nohost"));
	assert_int_equal(xprofs_capture_submit(c, NULL, "\n\n", 2, NULL), -EINVAL);
	assert_int_equal(xprofs_capture_status(c, NULL, &out), 0);
	assert_non_null(strstr(out.data, "\"run\":\"m1\""));
	assert_non_null(strstr(out.data, "\"run\":\"m2\""));
	assert_null(strstr(out.data, "\"run\":\"m3\""));
	xprofs_buf_deinit(&out);
	xprofs_buf_deinit(&why);
	xprofs_capture_free(c);
	xprofs_store_free(st);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	int r;

	/* The library leaves libcurl's global state to the program. */
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return 1;
	r = XT_RUN_TESTS(test_line_defaults, test_line_full, test_line_unknown_keys,
			 test_line_assembly, test_line_commands, test_line_invalid,
			 test_line_limits, test_names, test_resp_every_split,
			 test_resp_byte_by_byte, test_resp_malformed, test_resp_sink_error,
			 test_buf_consumer, test_errno_map, test_headers, test_status_json,
			 test_multi_line);
	curl_global_cleanup();
	return r;
}
