/*
 * fuzz_decode.c - libFuzzer target: index the input as an XSpace and render
 * every view and every track of it (zero-copy reader); index it again on two
 * threads in tracks-only mode (must agree with the first open) and render its
 * tracks; render trace.json sliced (each step's window, a 2^63 window, and
 * an all-covering window that must give the same bytes as no window; the
 * last two for trace.pftrace too) and its level of detail (lod/: whole
 * and windowed, trace.pftrace's whole);
 * render the session-wide views with the profile as two hosts (session
 * ops.json, compare ops/steps with itself); render the stats views of a
 * two-thread open (split over threads) and of the one-thread open: the same
 * result, bytes and first error;
 * round-trip the input through the track file-name encoding. Any
 * crash, leak, sanitizer report, disagreement or a failure other than
 * -EINVAL/-E2BIG on malformed input is a bug.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xprofs/xspace.h"
#include "xprofs/decode.h"

static int discard(void *arg, const void *p, size_t n)
{
	*(size_t *)arg += n;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int collect(void *arg, const void *p, size_t n)
{
	return xprofs_buf_add(arg, p, n);
}

/*
 * The stats views and trace.pftrace (made in parts) of @x1 (one thread) and
 * @x2 (two): same result, bytes and error.
 */
static void fuzz_threads(struct xprofs_xspace *x1, struct xprofs_xspace *x2)
{
	static const int views[] = {XPROFS_VIEW_OPS,     XPROFS_VIEW_STEPS, XPROFS_VIEW_OVERVIEW,
				    XPROFS_VIEW_KERNELS, XPROFS_VIEW_SVG,   XPROFS_VIEW_PFTRACE};
	struct xprofs_buf b[2], e[2];

	for (size_t i = 0; i < sizeof(views) / sizeof(views[0]); i++) {
		int rc[2];
		size_t m;

		for (int k = 0; k < 2; k++) {
			struct xprofs_sink s = {.write = collect, .arg = &b[k]};

			xprofs_buf_init(&b[k], (size_t)64 << 20);
			xprofs_buf_init(&e[k], 4096);
			rc[k] = xprofs_decode_render(k ? x2 : x1, views[i], &s, &e[k]);
		}
		m = b[0].len < b[1].len ? b[0].len : b[1].len;
		/*
		 * Threads change nothing but the time; after a failure the bytes a
		 * render in parts had handed on may be a longer prefix than a loop's.
		 */
		if (rc[0] != rc[1] || (rc[0] == 0 && b[0].len != b[1].len) ||
		    (m && memcmp(b[0].data, b[1].data, m)) || e[0].len != e[1].len ||
		    (e[0].len && memcmp(e[0].data, e[1].data, e[0].len)))
			abort();
		for (int k = 0; k < 2; k++) {
			xprofs_buf_deinit(&b[k]);
			xprofs_buf_deinit(&e[k]);
		}
	}
}

/*
 * Render @view of @x with window [from, to) (NULL: none), with @lod its level
 * of detail (lod/); its byte count, or (size_t)-1.
 */
static size_t render_slice(struct xprofs_xspace *x, int view, const xprofs_ps128 *w, bool lod,
			   struct xprofs_buf *err)
{
	struct xprofs_render_opts ro = {.host = "h", .lod = lod};
	size_t total = 0;
	struct xprofs_sink s = {.write = discard, .arg = &total};
	int rc;

	if (w) {
		ro.window = true;
		ro.from_ps = w[0];
		ro.to_ps = w[1];
	}
	rc = xprofs_decode_render_opts(x, view, &ro, &s, err);
	if (rc < 0 && rc != -EINVAL && rc != -E2BIG)
		abort();
	return rc < 0 ? (size_t)-1 : total;
}

static size_t sliced_view(struct xprofs_xspace *x, int view, const xprofs_ps128 *w,
			  struct xprofs_buf *err)
{
	return render_slice(x, view, w, false, err);
}

static size_t sliced(struct xprofs_xspace *x, const xprofs_ps128 *w, struct xprofs_buf *err)
{
	return sliced_view(x, XPROFS_VIEW_TRACE, w, err);
}

static void fuzz_slices(struct xprofs_xspace *x, struct xprofs_buf *err)
{
	const xprofs_ps128 all[2] = {-((xprofs_ps128)1 << 100), (xprofs_ps128)1 << 100};
	const xprofs_ps128 big[2] = {(xprofs_ps128)1 << 63, ((xprofs_ps128)1 << 63) + 1};
	struct xprofs_step_window *w = NULL;
	size_t n = 0;
	int rc;

	if (sliced(x, NULL, err) != sliced(x, all, err))
		abort(); /* a window holding every time keeps every event */
	if (sliced_view(x, XPROFS_VIEW_PFTRACE, NULL, err) !=
	    sliced_view(x, XPROFS_VIEW_PFTRACE, all, err))
		abort(); /* the same for trace.pftrace */
	(void)sliced(x, big, err);
	(void)sliced_view(x, XPROFS_VIEW_PFTRACE, big, err);
	/* the level-of-detail trace, whole and in a window (trace/lod.c) */
	(void)render_slice(x, XPROFS_VIEW_TRACE, NULL, true, err);
	(void)render_slice(x, XPROFS_VIEW_PFTRACE, NULL, true, err);
	(void)render_slice(x, XPROFS_VIEW_TRACE, all, true, err);
	rc = xprofs_decode_steps(x, &w, &n, err);
	if (rc < 0 && rc != -EINVAL && rc != -E2BIG)
		abort();
	for (size_t i = 0; rc == 0 && i < n && i < 4; i++) {
		xprofs_ps128 sw[2] = {w[i].begin_ps, w[i].end_ps};

		if (sw[0] >= sw[1])
			abort(); /* a step's window is never empty */
		(void)sliced(x, sw, err);
	}
	free(w);
}

/*
 * fuzz_sessions() - the session-wide views with @x as both hosts of a
 * session and compared with itself: a host's own failure is reported in the
 * output, so anything but 0 (or -ENOMEM) is a bug.
 */
static void fuzz_sessions(struct xprofs_xspace *x)
{
	const char *hosts[] = {"a", "b"};
	struct xprofs_xspace *xs[] = {x, x};
	struct xprofs_session_in in = {"s", hosts, xs, NULL, 2};
	size_t total = 0;
	struct xprofs_sink s = {.write = discard, .arg = &total};
	int rc[3];

	rc[0] = xprofs_decode_session_ops(&in, &s);
	rc[1] = xprofs_decode_compare(XPROFS_VIEW_OPS, &in, &in, &s);
	rc[2] = xprofs_decode_compare(XPROFS_VIEW_STEPS, &in, &in, &s);
	for (int i = 0; i < 3; i++)
		if (rc[i] < 0 && rc[i] != -ENOMEM)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xprofs_reader r = xprofs_reader_mem(data, size);
	struct xprofs_xspace *x = NULL;
	struct xprofs_buf err;
	size_t total = 0, n;
	struct xprofs_sink s = {.write = discard, .arg = &total};
	char *enc, *dec;
	int rc, open_rc;

	xprofs_buf_init(&err, 4096);
	rc = open_rc = xprofs_xspace_open(&r, &err, &x);
	if (rc == 0) {
		/* with a host name: trace.json's process names take it */
		struct xprofs_render_opts ro = {.host = "fuzz-host"};

		for (int v = 0; v < XPROFS_VIEW_COUNT; v++) {
			rc = xprofs_decode_render_opts(x, v, v % 2 ? &ro : NULL, &s, &err);
			if (rc == -ENOENT && v == XPROFS_VIEW_KERNELS) /* no GPU planes */
				continue;
			if (rc < 0 && rc != -EINVAL && rc != -E2BIG)
				abort();
		}
		fuzz_sessions(x);
		fuzz_slices(x, &err);
		{
			struct xprofs_xspace_opts o = {.threads = 2};
			struct xprofs_xspace *x2 = NULL;

			xprofs_buf_reset(&err);
			if (xprofs_xspace_open_opts(&r, &o, &err, &x2) != 0)
				abort(); /* the one-thread open accepted it */
			fuzz_threads(x, x2);
			xprofs_xspace_free(x2);
		}
		for (size_t i = 0; i < xprofs_xspace_track_count(x); i++) {
			const char *pf, *lf;

			if (xprofs_xspace_track_names(x, i, &pf, &lf) < 0 ||
			    xprofs_xspace_track_find(x, pf, lf) != (int)i)
				abort();
			rc = xprofs_decode_render_track(x, i, &s, &err);
			if (rc < 0 && rc != -EINVAL && rc != -E2BIG)
				abort();
		}
		xprofs_xspace_free(x);
	} else if (rc != -EINVAL && rc != -E2BIG) {
		abort();
	}
	{
		struct xprofs_xspace_opts o = {.threads = 2, .tracks_only = true};
		struct xprofs_xspace *xt = NULL;
		int rt;

		xs_parallel_min_bytes = 0;
		xprofs_buf_reset(&err);
		rt = xprofs_xspace_open_opts(&r, &o, &err, &xt);
		/* tracks-only skips event headers, so it may accept what the full open rejects */
		if (open_rc == 0 && rt != 0)
			abort();
		for (size_t i = 0; rt == 0 && i < xprofs_xspace_track_count(xt); i++)
			(void)!xprofs_decode_render_track(xt, i, &s, &err);
		xprofs_xspace_free(xt);
	}
	xprofs_buf_deinit(&err);

	enc = xprofs_xspace_name_encode((const char *)data, size < 200 ? size : 200);
	if (!enc || strchr(enc, '/') || strlen(enc) > 255)
		abort();
	dec = xprofs_xspace_name_decode(enc, &n);
	/* exact round trip unless the name was cut and hashed ("~h" suffix) */
	if (!dec || (!strstr(enc, "~h") && n != (size < 200 ? size : 200)) || memcmp(dec, data, n))
		abort();
	free(dec);
	free(enc);
	return 0;
}
