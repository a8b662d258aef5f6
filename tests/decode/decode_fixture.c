/*
 * decode_fixture.c - the helpers the decode unit tests share
 * (decode_fixture.h): the XSpace builder, the sample profile, renders and
 * JSON checks.
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

void *tb_alloc(struct tb *b, size_t size)
{
	void *p = calloc(1, size);

	assert_non_null(p);
	assert_true(b->n < TB_MAX);
	b->p[b->n++] = p;
	return p;
}

char *tb_str(struct tb *b, const char *s)
{
	char *d = tb_alloc(b, strlen(s) + 1);

	memcpy(d, s, strlen(s));
	return d;
}

void *tb_msg(struct tb *b, const ProtobufCMessageDescriptor *desc)
{
	void *m = tb_alloc(b, desc->sizeof_message);

	protobuf_c_message_init(desc, m);
	return m;
}

void tb_push_cap(struct tb *b, void ***arr, size_t *n, void *item, size_t cap)
{
	if (!*arr)
		*arr = tb_alloc(b, cap * sizeof(void *));
	assert_true(*n < cap);
	(*arr)[(*n)++] = item;
}

struct tb *tb_new(void)
{
	struct tb *b = calloc(1, sizeof(*b));

	assert_non_null(b);
	tensorflow__profiler__xspace__init(&b->xs);
	return b;
}

void tb_free(struct tb *b)
{
	for (size_t i = 0; i < b->n; i++)
		free(b->p[i]);
	free(b);
}

XPlane *tb_plane(struct tb *b, int64_t id, const char *name)
{
	XPlane *p = TB_MSG(b, xplane);

	p->id = id;
	p->name = tb_str(b, name);
	tb_push(b, &b->xs.planes, &b->xs.n_planes, p);
	return p;
}

XLine *tb_line(struct tb *b, XPlane *p, int64_t id, const char *name, int64_t ts_ns)
{
	XLine *l = TB_MSG(b, xline);

	l->id = id;
	l->name = tb_str(b, name);
	l->timestamp_ns = ts_ns;
	tb_push(b, &p->lines, &p->n_lines, l);
	return l;
}

XEvent *tb_event(struct tb *b, XLine *l, int64_t md, int64_t off_ps, int64_t dur_ps)
{
	XEvent *e = TB_MSG(b, xevent);

	e->metadata_id = md;
	e->data_case = TENSORFLOW__PROFILER__XEVENT__DATA_OFFSET_PS;
	e->offset_ps = off_ps;
	e->duration_ps = dur_ps;
	tb_push(b, &l->events, &l->n_events, e);
	return e;
}

XStat *tb_stat(struct tb *b, XStat ***arr, size_t *n, int64_t md, int vc)
{
	XStat *s = TB_MSG(b, xstat);

	s->metadata_id = md;
	s->value_case = vc;
	tb_push(b, arr, n, s);
	return s;
}

void tb_stat_i(struct tb *b, XStat ***arr, size_t *n, int64_t md, int64_t v)
{
	tb_stat(b, arr, n, md, VC(INT64))->int64_value = v;
}

void tb_stat_s(struct tb *b, XStat ***arr, size_t *n, int64_t md, const char *v)
{
	tb_stat(b, arr, n, md, VC(STR))->str_value = tb_str(b, v);
}

Tensorflow__Profiler__XEventMetadata *tb_evmd(struct tb *b, XPlane *p, int64_t key,
					      const char *name, const char *display)
{
	Tensorflow__Profiler__XPlane__EventMetadataEntry *e =
		TB_MSG(b, xplane__event_metadata_entry);
	Tensorflow__Profiler__XEventMetadata *m = TB_MSG(b, xevent_metadata);

	m->id = e->key = key;
	m->name = tb_str(b, name);
	if (display)
		m->display_name = tb_str(b, display);
	e->value = m;
	tb_push(b, &p->event_metadata, &p->n_event_metadata, e);
	return m;
}

void tb_stmd(struct tb *b, XPlane *p, int64_t key, const char *name)
{
	Tensorflow__Profiler__XPlane__StatMetadataEntry *e = TB_MSG(b, xplane__stat_metadata_entry);
	Tensorflow__Profiler__XStatMetadata *m = TB_MSG(b, xstat_metadata);

	m->id = e->key = key;
	m->name = tb_str(b, name);
	e->value = m;
	tb_push(b, &p->stat_metadata, &p->n_stat_metadata, e);
}

void tb_stmds(struct tb *b, XPlane *p, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (names[i])
			tb_stmd(b, p, (int64_t)i + 1, names[i]);
}

uint8_t *tb_pack(struct tb *b, size_t *len)
{
	size_t n = tensorflow__profiler__xspace__get_packed_size(&b->xs);
	uint8_t *buf = malloc(n + 1);

	assert_non_null(buf);
	assert_int_equal(tensorflow__profiler__xspace__pack(&b->xs, buf), n);
	*len = n;
	return buf;
}

struct xprofs_xspace *open_mem(const uint8_t *p, size_t n, struct xprofs_reader *r)
{
	struct xprofs_xspace *x = NULL;
	struct xprofs_buf err;
	int rc;

	xprofs_buf_init(&err, 4096);
	*r = xprofs_reader_mem(p, n);
	rc = xprofs_xspace_open(r, &err, &x);
	if (rc < 0)
		fail_msg("open failed: %d %s", rc, err.data ? err.data : "");
	xprofs_buf_deinit(&err);
	return x;
}

char *gunzip(const uint8_t *p, size_t n)
{
	struct xprofs_buf out;
	uint8_t chunk[65536];
	z_stream z;
	int zr;

	memset(&z, 0, sizeof(z));
	assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK);
	xprofs_buf_init(&out, (size_t)1 << 30);
	z.next_in = (unsigned char *)(uintptr_t)p;
	z.avail_in = (unsigned)n;
	do {
		z.next_out = chunk;
		z.avail_out = sizeof(chunk);
		zr = inflate(&z, Z_NO_FLUSH);
		if (zr != Z_OK && zr != Z_STREAM_END)
			fail_msg("bad gzip stream: %d", zr);
		assert_int_equal(xprofs_buf_add(&out, chunk, sizeof(chunk) - z.avail_out), 0);
	} while (zr != Z_STREAM_END);
	assert_int_equal(z.avail_in, 0); /* nothing after the stream */
	inflateEnd(&z);
	assert_int_equal(xprofs_buf_add(&out, "", 0), 0);
	return xprofs_buf_steal(&out, NULL);
}

char *hex_steal(struct xprofs_buf *out)
{
	char *h = malloc(out->len * 2 + 1);

	assert_non_null(h);
	for (size_t i = 0; i < out->len; i++)
		snprintf(h + 2 * i, 3, "%02x", (unsigned char)out->data[i]);
	h[out->len * 2] = '\0';
	xprofs_buf_deinit(out);
	return h;
}

void assert_subs(const char *s, const char *const *subs, bool want, const char *file, int line)
{
	for (size_t i = 0; subs[i]; i++)
		if (!strstr(s, subs[i]) == want) {
			print_error("%s '%s' in %zu bytes of output, which begin: %.200s\n",
				    want ? "no" : "unexpected", subs[i], strlen(s), s);
			_fail(file, line);
		}
}

char *render_opts(struct xprofs_xspace *x, int v, size_t track, const struct xprofs_render_opts *ro)
{
	struct xprofs_buf out, err;
	struct xprofs_sink s;
	char *txt;
	size_t n;
	int rc;

	xprofs_buf_init(&out, (size_t)1 << 30);
	xprofs_buf_init(&err, 4096);
	s = xprofs_sink_buf(&out);
	rc = v >= 0 ? xprofs_decode_render_opts(x, v, ro, &s, &err)
		    : xprofs_decode_render_track(x, track, &s, &err);
	/* kernels.json does not exist without GPU planes (docs/stats.md): compare its absence */
	if (rc == -ENOENT && v == XPROFS_VIEW_KERNELS && out.len == 0) {
		xprofs_buf_deinit(&err);
		xprofs_buf_deinit(&out);
		return strdup("<ENOENT>");
	}
	if (rc < 0)
		fail_msg("render %d failed: %d %s", v, rc, err.data ? err.data : "");
	xprofs_buf_deinit(&err);
	if (v == XPROFS_VIEW_PFTRACE)
		return hex_steal(&out);
	if (v != XPROFS_VIEW_TRACE_GZ)
		return xprofs_buf_steal(&out, NULL);
	txt = gunzip((const uint8_t *)out.data, out.len);
	n = out.len;
	xprofs_buf_deinit(&out);
	assert_true(n > 18); /* a gzip header and trailer at least */
	return txt;
}

char *render(struct xprofs_xspace *x, int v, size_t track)
{
	return render_opts(x, v, track, NULL);
}

json_t *render_json(struct xprofs_xspace *x, int v, size_t track)
{
	char *s = render(x, v, track);
	bool svg = v == XPROFS_VIEW_SVG || v == XPROFS_VIEW_MEMORY_SVG;
	json_error_t je;
	json_t *j;

	if (svg) /* a whole SVG document, never cut short */
		assert_true(!strncmp(s, "<?xml", 5) && strstr(s, "</svg>\n"));
	j = v == XPROFS_VIEW_PFTRACE || svg || !strcmp(s, "<ENOENT>") ? json_string(s)
								      : json_loads(s, 0, &je);

	if (!j)
		fail_msg("invalid JSON (%s) in: %.300s", je.text, s);
	free(s);
	return j;
}

json_t *jget(json_t *o, const char *path)
{
	json_t *v = o;
	char buf[256], *save = NULL, *tok;

	snprintf(buf, sizeof(buf), "%s", path);
	for (tok = strtok_r(buf, ".", &save); tok; tok = strtok_r(NULL, ".", &save)) {
		if (json_is_array(v))
			v = json_array_get(v, (size_t)strtoul(tok, NULL, 10));
		else
			v = json_object_get(v, tok);
		if (!v)
			fail_msg("no %s", path);
	}
	return v;
}

int64_t jint(json_t *o, const char *path)
{
	json_t *v = jget(o, path);

	if (!json_is_integer(v))
		fail_msg("%s is not an integer", path);
	return (int64_t)json_integer_value(v);
}

const char *jstr(json_t *o, const char *path)
{
	json_t *v = jget(o, path);

	if (!json_is_string(v))
		fail_msg("%s is not a string", path);
	return json_string_value(v);
}

struct xprofs_xspace *opened_new(struct opened *o, struct tb *b)
{
	o->b = b;
	o->buf = tb_pack(b, &o->n);
	o->x = open_mem(o->buf, o->n, &o->r);
	return o->x;
}

void opened_free(struct opened *o)
{
	xprofs_xspace_free(o->x);
	free(o->buf);
	tb_free(o->b);
}

void assert_same_render(struct xprofs_xspace *x1, struct xprofs_xspace *x2, int v, size_t track)
{
	char *a = render(x1, v, track), *c = render(x2, v, track);

	assert_string_equal(a, c);
	free(a);
	free(c);
}

void assert_json(json_t *j, const struct jwant *w, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		if (w[k].s && strcmp(jstr(j, w[k].path), w[k].s) != 0)
			fail_msg("%s is \"%s\", not \"%s\"", w[k].path, jstr(j, w[k].path), w[k].s);
		if (!w[k].s && jint(j, w[k].path) != w[k].i)
			fail_msg("%s is %lld, not %lld", w[k].path, (long long)jint(j, w[k].path),
				 (long long)w[k].i);
	}
}

struct tb *sample(void)
{
	struct tb *b = tb_new();
	XPlane *host, *gpu, *env;
	XLine *l;
	XEvent *e;
	Tensorflow__Profiler__XEventMetadata *m;
	static char host_name[] = "host0";
	static char *hosts[] = {host_name};

	b->xs.hostnames = hosts;
	b->xs.n_hostnames = 1;
	host = tb_plane(b, 0, "/host:CPU");
	TB_STMDS(b, host, "step_num", "tf_op", "source");
	m = tb_evmd(b, host, 10, "Outer", NULL);
	tb_stat_s(b, &m->stats, &m->n_stats, 3, "from-metadata");
	tb_evmd(b, host, 11, "my/Inner:Inner", "Inner");
	tb_evmd(b, host, 12, "train", NULL);
	l = tb_line(b, host, 5, "python", 1);
	e = tb_event(b, l, 10, 0, 100000000);
	tb_stat_s(b, &e->stats, &e->n_stats, 2, "tfop");
	tb_event(b, l, 11, 10000000, 20000000);
	tb_event(b, l, 11, 40000000, 10000000);
	l = tb_line(b, host, -1, "Steps", 1);
	e = tb_event(b, l, 12, 0, 200000000);
	tb_stat_i(b, &e->stats, &e->n_stats, 1, 7);

	gpu = tb_plane(b, 1, "/device:GPU:0");
	TB_STMDS(b, gpu, "hlo_op", "fusion.1", "clock_rate", "value", "flops");
	tb_evmd(b, gpu, 1, "kernel_a", NULL);
	tb_evmd(b, gpu, 2, "kernel_b", NULL);
	tb_evmd(b, gpu, 3, "bw", NULL);
	tb_stat(b, &gpu->stats, &gpu->n_stats, 3, VC(UINT64))->uint64_value = 1410;
	l = tb_line(b, gpu, 1, "Stream #1(Kernel)", 1);
	e = tb_event(b, l, 1, 50000000, 30000000);
	tb_stat(b, &e->stats, &e->n_stats, 1, VC(REF))->ref_value = 2;
	tb_stat_i(b, &e->stats, &e->n_stats, 5, 1000);
	e = tb_event(b, l, 2, 90000000, 20000000);
	tb_stat(b, &e->stats, &e->n_stats, 1, VC(REF))->ref_value = 2;
	tb_event(b, l, 1, 300000000, 5000000); /* no hlo_op: grouped by name */
	l = tb_line(b, gpu, 2, "_counters_", 1);
	e = tb_event(b, l, 3, 0, 0);
	tb_stat(b, &e->stats, &e->n_stats, 4, VC(DOUBLE))->double_value = 2.5;

	env = tb_plane(b, 0, "Task Environment");
	TB_STMDS(b, env, "profile_start_time", "profile_stop_time");
	tb_stat_i(b, &env->stats, &env->n_stats, 1, 1700000000000000000);
	tb_stat_i(b, &env->stats, &env->n_stats, 2, 1700000000001000000);
	return b;
}

int failing_write(void *arg, const void *p, size_t n)
{
	struct failing_sink *f = arg;

	(void)p;
	f->calls++;
	if (n > f->left)
		return -EIO;
	f->left -= n;
	return 0;
}
