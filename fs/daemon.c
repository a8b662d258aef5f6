/*
 * fs/daemon.c - xprofs_fs_main(): parse the options, open the backends
 * (store and view cache), daemonise, mount and run the FUSE loop.
 *
 * Design: we daemonise ourselves instead of with fuse_daemonize(): the
 * parent waits on a pipe until the child has opened the source (a GCS store
 * validates its bucket here), opened the cache and mounted, and exits with
 * the child's verdict. So a bad SOURCE, bad credentials or a bad MOUNTPOINT
 * give a message on stderr and exit status 1 even without -f, and no thread
 * (curl, capture) is ever created before fork(). libcurl's global state is
 * set up here, once, in the process that serves (after the fork, before any
 * backend or thread), and torn down at exit: the libraries do not do it.
 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xprofs/fs.h"
#include "xprofs/gcs.h"
#include "fs-internal.h"

__attribute__((format(printf, 2, 0))) static void fuse_log_to_ours(enum fuse_log_level level,
								   const char *fmt, va_list ap)
{
	char buf[1024];
	size_t n;

	vsnprintf(buf, sizeof(buf), fmt, ap);
	n = strlen(buf);
	if (n && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
	xprofs_log((int)level, "fuse: %s", buf);
}

/* open_backends() - the store and the cache for @o; caller owns both. */
static int open_backends(struct fs_options *o, struct xprofs_store **store,
			 struct xprofs_cache **cache)
{
	struct xprofs_gcs_options go;
	int r;

	*cache = NULL;
	if (!o->no_cache) {
		r = xprofs_cache_new(o->cache_dir, o->cache_max_bytes, cache);
		if (r == 0 && o->cache_accel)
			r = xprofs_cache_set_acceleration(*cache, o->cache_accel);
		if (r < 0) {
			*cache = xprofs_cache_free(*cache);
			xprofs_warn("cache %s unusable (%s): rendering to temporary files",
				    o->cache_dir, strerror(-r));
			*cache = NULL;
		}
	}
	if (!strncmp(o->source, "gs://", 5)) {
		memset(&go, 0, sizeof(go));
		go.endpoint = o->endpoint;
		go.anonymous = o->anonymous;
		go.credentials = o->credentials;
		go.billing_project = o->billing_project;
		go.list_ttl_s = (unsigned)o->refresh;
		go.connections = o->connections;
		go.read_only = o->ro;
		go.cache = *cache;
		r = xprofs_gcs_store_new(o->source, &go, store);
	} else {
		r = xprofs_store_local_new(o->source, store);
	}
	if (r < 0) {
		fprintf(stderr, "xprofs: cannot open SOURCE %s: %s\n", o->source, strerror(-r));
		*cache = xprofs_cache_free(*cache);
	}
	return r;
}

/* daemonise() - fork; the parent exits with what the child reports on the pipe. */
static int daemonise(int *notify_fd)
{
	int p[2];
	pid_t pid;
	char status = 1;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0) {
		close(p[1]);
		if (read(p[0], &status, 1) != 1)
			status = 1;
		_exit(status);
	}
	close(p[0]);
	setsid();
	*notify_fd = p[1];
	return 0;
}

static void daemon_ready(int *notify_fd, char status)
{
	int nul;

	if (*notify_fd < 0)
		return;
	if (status == 0) {
		xprofs_log_use_syslog(true);
		if (chdir("/") < 0)
			xprofs_warn("chdir /: %s", strerror(errno));
		nul = open("/dev/null", O_RDWR);
		if (nul >= 0) {
			dup2(nul, 0);
			dup2(nul, 1);
			dup2(nul, 2);
			if (nul > 2)
				close(nul);
		}
	}
	if (write(*notify_fd, &status, 1) != 1)
		xprofs_warn("cannot tell the parent we are ready");
	close(*notify_fd);
	*notify_fd = -1;
}

int xprofs_fs_main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fs_options o = {0};
	struct xprofs_store *store = NULL;
	struct xprofs_cache *cache = NULL;
	struct fuse_loop_config *lc = NULL;
	struct fs_ctx ctx;
	struct fuse *fuse = NULL;
	bool curl_live = false, ctx_live = false, mounted = false, handlers = false;
	int notify_fd = -1, ret = 1, r;

	if (fs_options_parse(&args, &o) < 0)
		goto out;
	if (o.show_help) {
		printf("%s", fs_options_usage());
		ret = 0;
		goto out;
	}
	if (o.show_version) {
		printf("xprofs %s (libfuse %s)\n", XPROFS_VERSION, fuse_pkgversion());
		ret = 0;
		goto out;
	}
	if (fs_options_check(&o) < 0)
		goto out;
	fuse_set_log_func(fuse_log_to_ours);
	if (!o.foreground && daemonise(&notify_fd) < 0) {
		fprintf(stderr, "xprofs: cannot daemonise: %s\n", strerror(errno));
		goto out;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		fprintf(stderr, "xprofs: cannot initialise libcurl\n");
		goto out;
	}
	curl_live = true;
	if (open_backends(&o, &store, &cache) < 0)
		goto out;
	r = fs_ctx_init(&ctx, &o, store, cache);
	store = NULL;
	cache = NULL;
	if (r < 0)
		goto out;
	fs_views_init(&ctx.views);
	ctx_live = true;
	fuse = fuse_new(&args, fs_operations(), sizeof(struct fuse_operations), &ctx);
	if (!fuse) {
		fprintf(stderr, "xprofs: bad FUSE options (see xprofs --help)\n");
		goto out;
	}
	if (fuse_mount(fuse, o.mountpoint) < 0) {
		fprintf(stderr, "xprofs: cannot mount on %s\n", o.mountpoint);
		goto out;
	}
	mounted = true;
	if (fuse_set_signal_handlers(fuse_get_session(fuse)) < 0)
		goto out;
	handlers = true;
	xprofs_info("mounted %s on %s (%s)", o.source, o.mountpoint,
		    xprofs_store_backend(ctx.store));
	daemon_ready(&notify_fd, 0);
	lc = fuse_loop_cfg_create();
	if (!lc)
		goto out;
	fuse_loop_cfg_set_clone_fd(lc, 0);
	fuse_loop_cfg_set_max_threads(lc, 16);
	fuse_loop_cfg_set_idle_threads(lc, 8);
	r = o.single ? fuse_loop(fuse) : fuse_loop_mt(fuse, lc);
	/* libfuse returns the signal number after SIGINT/SIGTERM/SIGHUP: a clean stop */
	ret = r == 0 || r == SIGINT || r == SIGTERM || r == SIGHUP ? 0 : 1;
	if (ret)
		xprofs_err("FUSE loop ended with %d", r);
	else
		xprofs_info("unmounting %s", o.mountpoint);
out:
	daemon_ready(&notify_fd, (char)(ret ? ret : 1));
	if (lc)
		fuse_loop_cfg_destroy(lc);
	if (handlers)
		fuse_remove_signal_handlers(fuse_get_session(fuse));
	if (mounted)
		fuse_unmount(fuse);
	if (fuse)
		fuse_destroy(fuse);
	if (ctx_live) {
		fs_views_deinit(&ctx.views);
		fs_ctx_deinit(&ctx);
	}
	xprofs_cache_free(cache);
	xprofs_store_free(store);
	if (curl_live)
		curl_global_cleanup();
	fuse_opt_free_args(&args);
	fs_options_free(&o);
	return ret;
}
