/*
 * fs/status.c - the small files made in memory: a host's errors file, a
 * capture file (the capture service's status), and MOUNT/status.json: what
 * the mount serves and how it is doing
 * (source, backend, version, uptime, runs index totals, counters, the
 * renders in progress (live.c: path, bytes done, start, elapsed), the view
 * cache, the shared view cache (shared.c), the store's and the capture
 * service's own status), one JSON object
 * and a newline. No FUSE here.
 *
 * Design: each is built fresh at every open and getattr (fs_mem_content();
 * ops.c snapshots it into the open file). status.json is made from atomics and each part's own status call; it never
 * rebuilds the runs index (it shows the current snapshot's totals).
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "xprofs/capture.h"
#include "fs-internal.h"

/* "options": what is in force after defaults (docs/fs.md names each). */
static int options_json(const struct fs_options *o, struct xprofs_buf *out)
{
	int r = xprofs_buf_printf(
		out,
		",\"options\":{\"cache_max_bytes\":%llu,"
		"\"cache_accel\":%d,\"no_cache\":%s,\"exact_sizes\":%s,\"connections\":%u,\"retry_"
		"deadline_s\":%u,"
		"\"stall_timeout_s\":%u,\"follow_symlinks\":\"%s\",\"uid\":%lu,\"gid\":%lu,"
		"\"umask\":\"%04o\"",
		(unsigned long long)o->cache_max_bytes, o->cache_accel,
		o->no_cache ? "true" : "false", o->exact_sizes ? "true" : "false", o->connections,
		o->retry_deadline, o->stall_timeout, o->follow_outside ? "outside" : "inside",
		(unsigned long)o->uid, (unsigned long)o->gid, (unsigned)o->umask);

	/* null: the default, 5% of the cache's filesystem (cache.min_free has the bytes) */
	if (o->cache_min_free_bytes == XPROFS_CACHE_MIN_FREE_DEFAULT)
		r = r ? r : xprofs_buf_adds(out, ",\"cache_min_free_bytes\":null");
	else
		r = r ? r
		      : xprofs_buf_printf(out, ",\"cache_min_free_bytes\":%llu",
					  (unsigned long long)o->cache_min_free_bytes);
	r = r ? r
	      : xprofs_buf_printf(out, ",\"stream_min_bytes\":%llu",
				  (unsigned long long)o->stream_min_bytes);
	r = r ? r : xprofs_buf_add_json_member(out, ",\"tmp_dir\":", o->tmp_dir);
	r = r ? r : xprofs_buf_add_json_member(out, ",\"endpoint\":", o->endpoint);
	r = r ? r : xprofs_buf_add_json_member(out, ",\"credentials\":", o->credentials);
	r = r ? r : xprofs_buf_add_json_member(out, ",\"billing_project\":", o->billing_project);
	r = r ? r : xprofs_buf_add_json_member(out, ",\"shared_cache\":", o->shared_cache);
	r = r ? r : xprofs_buf_printf(out, ",\"anonymous\":%s},", o->anonymous ? "true" : "false");
	return r;
}

/* "@name": what @value writes for @ctx, and the comma after it. */
static int member_json(struct fs_ctx *ctx, struct xprofs_buf *out, const char *name,
		       int (*value)(struct fs_ctx *ctx, struct xprofs_buf *out))
{
	int r = xprofs_buf_printf(out, "\"%s\":", name);

	if (r == 0)
		r = value(ctx, out);
	if (r == 0)
		r = xprofs_buf_adds(out, ",");
	return r;
}

int fs_status_json(struct fs_ctx *ctx, struct xprofs_buf *out)
{
	struct xprofs_cache_stats cs = {0};
	const char *src = xprofs_store_source(ctx->store);
	struct fs_index *idx;
	int r;

	r = xprofs_buf_adds(out, "{\"source\":");
	if (r == 0)
		r = xprofs_buf_add_json_str(out, src, strlen(src));
	if (r == 0)
		r = xprofs_buf_printf(
			out,
			",\"backend\":\"%s\",\"version\":\"%s\",\"pid\":%ld,\"uptime_s\":%ld,"
			"\"read_only\":%s,\"refresh_s\":%ld,\"mountpoint\":",
			xprofs_store_backend(ctx->store), XPROFS_VERSION, (long)getpid(),
			(long)((xprofs_mono_ns() - ctx->start_mono_ns) / 1000000000LL),
			ctx->o->ro ? "true" : "false", (long)(ctx->refresh_ns / 1000000000LL));
	if (r == 0)
		r = xprofs_buf_add_json_str(out, ctx->o->mountpoint, strlen(ctx->o->mountpoint));
	if (r == 0)
		r = options_json(ctx->o, out);
	idx = fs_index_snapshot(ctx);
	if (r == 0)
		r = xprofs_buf_printf(out, "\"runs\":%lu,\"sessions\":%lu,\"hosts\":%lu,",
				      (unsigned long)(idx ? idx->runs : 0),
				      (unsigned long)(idx ? idx->sessions : 0),
				      (unsigned long)(idx ? idx->hosts : 0));
	fs_index_put(idx);
	if (r == 0)
		r = xprofs_buf_printf(
			out,
			"\"counters\":{\"lookups\":%lu,\"readdirs\":%lu,\"opens\":%lu,"
			"\"bytes_read\":%lu,\"bytes_written\":%lu,\"renders\":%lu,"
			"\"render_errors\":%lu,\"render_waits\":%lu,\"view_cache_hits\":%lu,"
			"\"index_builds\":%lu,\"profile_indexes\":%lu,\"index_reuses\":%lu,"
			"\"streamed\":%lu,\"stream_restarts\":%lu,\"stream_dropped\":%lu},",
			(unsigned long)FS_CNT_GET(ctx, lookups),
			(unsigned long)FS_CNT_GET(ctx, readdirs),
			(unsigned long)FS_CNT_GET(ctx, opens),
			(unsigned long)FS_CNT_GET(ctx, bytes_read),
			(unsigned long)FS_CNT_GET(ctx, bytes_written),
			(unsigned long)FS_CNT_GET(ctx, renders),
			(unsigned long)FS_CNT_GET(ctx, render_errors),
			(unsigned long)FS_CNT_GET(ctx, render_waits),
			(unsigned long)FS_CNT_GET(ctx, view_hits),
			(unsigned long)FS_CNT_GET(ctx, index_builds),
			(unsigned long)FS_CNT_GET(ctx, profile_indexes),
			(unsigned long)FS_CNT_GET(ctx, index_reuses),
			(unsigned long)FS_CNT_GET(ctx, streamed),
			(unsigned long)FS_CNT_GET(ctx, stream_restarts),
			(unsigned long)FS_CNT_GET(ctx, stream_dropped));
	if (r == 0)
		r = xprofs_buf_printf(out, "\"open\":{\"files\":%llu,\"dirs\":%lld},",
				      (unsigned long long)fs_fh_count(),
				      (long long)FS_CNT_GET(ctx, open_dirs));
	if (r == 0)
		r = member_json(ctx, out, "renders", fs_live_status_json);
	if (r == 0 && ctx->cache) {
		xprofs_cache_get_stats(ctx->cache, &cs);
		r = xprofs_buf_adds(out, "\"cache\":{\"dir\":");
		if (r == 0)
			r = xprofs_buf_add_json_str(out, xprofs_cache_dir(ctx->cache),
						    strlen(xprofs_cache_dir(ctx->cache)));
		if (r == 0)
			r = xprofs_buf_printf(
				out,
				",\"hits\":%lu,\"misses\":%lu,\"reopens\":%lu,\"bytes\":%lu,\"raw_"
				"bytes_written\":%"
				"lu,"
				"\"entries\":%lu,\"evictions\":%lu,\"corrupt\":%lu,"
				"\"space_evictions\":%lu,\"nospace\":%lu,\"min_free\":%lu},",
				(unsigned long)cs.hits, (unsigned long)cs.misses,
				(unsigned long)cs.reopens, (unsigned long)cs.bytes,
				(unsigned long)cs.raw_bytes_written, (unsigned long)cs.entries,
				(unsigned long)cs.evictions, (unsigned long)cs.corrupt,
				(unsigned long)cs.space_evictions, (unsigned long)cs.nospace,
				(unsigned long)cs.min_free);
	} else if (r == 0) {
		r = xprofs_buf_adds(out, "\"cache\":null,");
	}
	if (r == 0)
		r = member_json(ctx, out, "shared_cache", fs_shared_status_json);
	if (r == 0)
		r = xprofs_buf_adds(out, "\"store\":");
	if (r == 0)
		r = xprofs_store_status_json(ctx->store, out);
	if (r == 0)
		r = xprofs_buf_adds(out, ",\"capture\":");
	if (r == 0 && ctx->capture) {
		r = xprofs_capture_status_json(ctx->capture, out);
	} else if (r == 0) {
		r = xprofs_buf_adds(out, "null");
	}
	if (r == 0)
		r = xprofs_buf_adds(out, "}\n");
	return r;
}

int fs_mem_content(struct fs_ctx *ctx, const struct fs_target *t, struct xprofs_buf *b)
{
	char hp[XPROFS_PATH_MAX + 1];
	int r;

	switch (t->kind) {
	case FS_K_STATUS:
		return fs_status_json(ctx, b);
	case FS_K_ERRORS:
		r = fs_host_path(t, hp, sizeof(hp));
		return r < 0 ? r : fs_errors_snapshot(ctx, hp, &t->host->st, b);
	case FS_K_CAPTURE:
		if (ctx->capture)
			return xprofs_capture_status(ctx->capture, t->node ? t->node->path : NULL,
						     b);
		return xprofs_buf_adds(b, "capture: unavailable in this mount\n");
	default:
		return -EINVAL;
	}
}
