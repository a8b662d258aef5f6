/*
 * decode_fixture.h - what the decode unit tests share (decode_fixture.c): a
 * tiny arena-based XSpace builder on the protobuf-c code generated from the
 * project's xplane.proto, the sample profile most tests use, and helpers
 * around the API (open from memory or a pread() reader, render a view to a
 * string or to jansson, JSON path look-ups, substring and JSON assertions).
 * Memory: the builder's arena is freed by tb_free(); rendered strings and
 * JSON are the caller's (free(), json_decref()).
 */
#ifndef XPROFS_TESTS_DECODE_FIXTURE_H
#define XPROFS_TESTS_DECODE_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <jansson.h>

#include "xprofs/xspace.h"
#include "xprofs/decode.h"
#include "xprofs/trace.h"
#include "xplane.pb-c.h"

typedef Tensorflow__Profiler__XSpace XSpace;
typedef Tensorflow__Profiler__XPlane XPlane;
typedef Tensorflow__Profiler__XLine XLine;
typedef Tensorflow__Profiler__XEvent XEvent;
typedef Tensorflow__Profiler__XStat XStat;

/* ---- a tiny arena-based XSpace builder ------------------------------- */

#define TB_MAX 400000

#define TB_ARR 256

struct tb {
	void *p[TB_MAX];
	size_t n;
	XSpace xs;
};

#define TB_MSG(b, type) tb_msg((b), &tensorflow__profiler__##type##__descriptor)

#define tb_push(b, arr, n, item) tb_push_cap((b), (void ***)(arr), (n), (item), TB_ARR)

#define VC(kind) TENSORFLOW__PROFILER__XSTAT__VALUE_##kind##_VALUE

#define TB_STMDS(b, p, ...)                                                                        \
	tb_stmds((b), (p), (const char *const[]){__VA_ARGS__},                                     \
		 sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *))

#define HAS(s, ...)                                                                                \
	assert_subs((s), (const char *const[]){__VA_ARGS__, NULL}, true, __FILE__, __LINE__)

#define LACKS(s, ...)                                                                              \
	assert_subs((s), (const char *const[]){__VA_ARGS__, NULL}, false, __FILE__, __LINE__)

/* An XSpace built with tb, packed and opened from memory. */
struct opened {
	struct tb *b;
	uint8_t *buf; /* the packed bytes */
	size_t n;
	struct xprofs_reader r;
	struct xprofs_xspace *x;
};

/* What a view's JSON holds at @path: the string @s or, when @s is NULL, the integer @i. */
struct jwant {
	const char *path;
	const char *s;
	int64_t i;
};

#define JS(path, str)                                                                              \
	{                                                                                          \
		(path), (str), 0                                                                   \
	}

#define JI(path, num)                                                                              \
	{                                                                                          \
		(path), NULL, (num)                                                                \
	}

#define ASSERT_JSON(j, ...)                                                                        \
	do {                                                                                       \
		static const struct jwant w_[] = {__VA_ARGS__};                                    \
		assert_json((j), w_, sizeof(w_) / sizeof(w_[0]));                                  \
	} while (0)

void *tb_alloc(struct tb *b, size_t size);
char *tb_str(struct tb *b, const char *s);
/* A new message of @desc's type, initialised to its defaults; freed with @b. */
void *tb_msg(struct tb *b, const ProtobufCMessageDescriptor *desc);
/* Append @item to a protobuf-c repeated field (capacity TB_ARR, or @cap). */
void tb_push_cap(struct tb *b, void ***arr, size_t *n, void *item, size_t cap);
struct tb *tb_new(void);
void tb_free(struct tb *b);
XPlane *tb_plane(struct tb *b, int64_t id, const char *name);
XLine *tb_line(struct tb *b, XPlane *p, int64_t id, const char *name, int64_t ts_ns);
XEvent *tb_event(struct tb *b, XLine *l, int64_t md, int64_t off_ps, int64_t dur_ps);
/* Append a stat of @md to @arr, its value of kind @vc (a ..._XSTAT__VALUE_* case) to be set. */
XStat *tb_stat(struct tb *b, XStat ***arr, size_t *n, int64_t md, int vc);
void tb_stat_i(struct tb *b, XStat ***arr, size_t *n, int64_t md, int64_t v);
void tb_stat_s(struct tb *b, XStat ***arr, size_t *n, int64_t md, const char *v);
Tensorflow__Profiler__XEventMetadata *tb_evmd(struct tb *b, XPlane *p, int64_t key,
					      const char *name, const char *display);
void tb_stmd(struct tb *b, XPlane *p, int64_t key, const char *name);
/* Stat metadata ids 1..@n of @p named @names[0..n) (a NULL name: no such id). */
void tb_stmds(struct tb *b, XPlane *p, const char *const *names, size_t n);
/* Serialise the XSpace; caller owns the result (free()). */
uint8_t *tb_pack(struct tb *b, size_t *len);
/* ---- helpers around the API ------------------------------------------ */
struct xprofs_xspace *open_mem(const uint8_t *p, size_t n, struct xprofs_reader *r);
/* gunzip(@p, @n) as a NUL-terminated string (fails the test on a bad stream). */
char *gunzip(const uint8_t *p, size_t n);
/* trace.pftrace is binary: tests compare it as a hex string. Consumes @out. */
char *hex_steal(struct xprofs_buf *out);
/*
 * Asserts that @s holds (@want) or lacks each NULL-terminated @subs; says
 * which does not, failing at the caller's @file:@line.
 */
void assert_subs(const char *s, const char *const *subs, bool want, const char *file, int line);
/* Render view @v (or track @track when @v < 0) with @ro as a string; trace.json.gz gunzipped. */
char *render_opts(struct xprofs_xspace *x, int v, size_t track,
		  const struct xprofs_render_opts *ro);
/* Render view @v (or track @track when @v < 0) as a NUL-terminated string. */
char *render(struct xprofs_xspace *x, int v, size_t track);
json_t *render_json(struct xprofs_xspace *x, int v, size_t track);
/* The value at dotted @path ("planes.0.name": array indexes are numbers); fails when absent. */
json_t *jget(json_t *o, const char *path);
int64_t jint(json_t *o, const char *path);
const char *jstr(json_t *o, const char *path);
/* Pack @b (consumed: opened_free frees it) and open it from memory into @o; returns o->x. */
struct xprofs_xspace *opened_new(struct opened *o, struct tb *b);
/* Free what opened_new made: the xspace, the packed bytes and the builder. */
void opened_free(struct opened *o);
/* Assert that @x1 and @x2 render view @v (track @track when @v < 0) alike. */
void assert_same_render(struct xprofs_xspace *x1, struct xprofs_xspace *x2, int v, size_t track);
/* Assert each of the @n facts @w about @j. */
void assert_json(json_t *j, const struct jwant *w, size_t n);
/* ---- the sample profile used by most tests --------------------------- */
/*
 * /host:CPU: thread "python" with Outer [0,100) containing Inner [10,30) and
 * Inner [40,50); a "Steps" line with step 7 over [0,200).
 * /device:GPU:0: "Stream #1(Kernel)" with two kernels carrying hlo_op refs,
 * and "_counters_" with a counter; plane stat clock_rate.
 * Task Environment: profile_start_time / profile_stop_time.
 */
struct tb *sample(void);

/* A sink that fails with -EIO once it has taken @left bytes (failing_write()). */
struct failing_sink {
	size_t left;
	int calls;
};
int failing_write(void *arg, const void *p, size_t n);

#endif
