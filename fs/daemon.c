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
 *
 * Identity and permissions: the mount is named after SOURCE (fsname) with
 * subtype "xprofs" (findmnt: "SOURCE ... fuse.xprofs"), the kernel checks
 * permissions (default_permissions; fs/attr.c makes the modes), and a
 * MOUNTPOINT that already is a FUSE mount is refused (/proc/self/mountinfo)
 * rather than stacked over.
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

/*
 * libfuse's messages, through our logger. libfuse writes some in pieces
 * ("unknown option(s): `", the option, "'\n"), so pieces are gathered per
 * thread until the newline. An unknown-option message is kept for
 * xprofs_fs_main() to print as its one error line instead of logging it.
 */
static char fuse_opt_err[512];
static __thread char fuse_line[1024];
static __thread size_t fuse_line_len;

__attribute__((format(printf, 2, 0))) static void fuse_log_to_ours(enum fuse_log_level level,
								   const char *fmt, va_list ap)
{
	char *b = fuse_line;
	size_t n;
	int k;

	k = vsnprintf(b + fuse_line_len, sizeof(fuse_line) - fuse_line_len, fmt, ap);
	if (k > 0)
		fuse_line_len = strlen(b);
	n = fuse_line_len;
	if (n && b[n - 1] != '\n' && n < sizeof(fuse_line) - 1)
		return; /* a piece: wait for the rest of the line */
	fuse_line_len = 0;
	if (n && b[n - 1] == '\n')
		b[n - 1] = '\0';
	if (!strncmp(b, "fuse: ", 6))
		b += 6;
	if (!strncmp(b, "unknown option", 14)) {
		snprintf(fuse_opt_err, sizeof(fuse_opt_err), "%.500s", b);
		return;
	}
	xprofs_log((int)level, "fuse: %s", b);
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
		if (r == 0 && o->cache_min_free_bytes != XPROFS_CACHE_MIN_FREE_DEFAULT)
			r = xprofs_cache_set_min_free(*cache, o->cache_min_free_bytes);
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
		go.retry_deadline_s = o->retry_deadline;
		go.stall_timeout_s = o->stall_timeout;
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

/* unescape_mountinfo() - undo mountinfo's octal escapes (\040 ...) in place. */
static void unescape_mountinfo(char *s)
{
	char *w = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*w++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*w++ = *s;
		}
	}
	*w = '\0';
}

bool fs_mountinfo_fuse_at(const char *line, const char *dir, char *type, size_t tsize)
{
	char mp[XPROFS_PATH_MAX + 1], fstype[64];
	const char *sep = strstr(line, " - ");

	if (!sep || sscanf(line, "%*s %*s %*s %*s %4096s", mp) != 1 ||
	    sscanf(sep + 3, "%63s", fstype) != 1)
		return false;
	unescape_mountinfo(mp);
	if (strcmp(mp, dir) || (strcmp(fstype, "fuse") && strncmp(fstype, "fuse.", 5)))
		return false;
	snprintf(type, tsize, "%s", fstype);
	return true;
}

/* fuse_mounted_at() - whether @dir (absolute, resolved) is a FUSE mount point now. */
static bool fuse_mounted_at(const char *dir, char *type, size_t tsize)
{
	char line[2 * XPROFS_PATH_MAX + 512];
	bool found = false;
	FILE *f;

	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = fs_mountinfo_fuse_at(line, dir, type, tsize);
	fclose(f);
	return found;
}

/*
 * identity_args() - what every xprofs mount adds to libfuse's options, before
 * the user's (a later one wins): fsname=SOURCE (',' and '\\' escaped),
 * subtype=xprofs, default_permissions.
 */
static int identity_args(struct fuse_args *args, const char *source)
{
	char opt[2 * XPROFS_PATH_MAX + 16], *w;

	w = opt + snprintf(opt, sizeof(opt), "-ofsname=");
	for (const char *s = source; *s && w < opt + sizeof(opt) - 3; s++) {
		if (*s == ',' || *s == '\\')
			*w++ = '\\';
		*w++ = *s;
	}
	*w = '\0';
	if (fuse_opt_insert_arg(args, 1, opt) < 0 ||
	    fuse_opt_insert_arg(args, 2, "-osubtype=xprofs") < 0 ||
	    fuse_opt_insert_arg(args, 3, "-odefault_permissions") < 0)
		return -ENOMEM;
	return 0;
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
	char fstype[64];
	const char *delay;

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
	if (fuse_mounted_at(o.mountpoint, fstype, sizeof(fstype))) {
		fprintf(stderr,
			"xprofs: MOUNTPOINT %s is already a FUSE mount (%s); unmount it first "
			"(fusermount3 -u %s)\n",
			o.mountpoint, fstype, o.mountpoint);
		goto out;
	}
	if (identity_args(&args, o.source) < 0)
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
	if (o.follow_outside && !strncmp(xprofs_store_backend(store), "local", 5))
		(void)xprofs_store_local_follow_outside(store, true);
	r = fs_ctx_init(&ctx, &o, store, cache);
	store = NULL;
	cache = NULL;
	if (r < 0)
		goto out;
	fs_views_init(&ctx.views);
	ctx_live = true;
	if (fs_shared_start(&ctx) < 0) {
		fprintf(stderr, "xprofs: cannot use shared_cache=%s (see the log)\n",
			o.shared_cache);
		goto out;
	}
	fuse = fuse_new(&args, fs_operations(), sizeof(struct fuse_operations), &ctx);
	if (!fuse) {
		fprintf(stderr, "xprofs: %s (see xprofs --help)\n",
			fuse_opt_err[0] ? fuse_opt_err : "bad FUSE options");
		goto out;
	}
	/*
	 * The handlers go in before the mount: a SIGTERM that comes as soon as
	 * the mount shows (a test, systemd) must stop the loop cleanly, not kill
	 * the process with its mount still in place. One that comes before the
	 * loop starts makes the loop return at once, and we unmount.
	 */
	if (fuse_set_signal_handlers(fuse_get_session(fuse)) < 0)
		goto out;
	handlers = true;
	if (fuse_mount(fuse, o.mountpoint) < 0) {
		fprintf(stderr, "xprofs: cannot mount on %s\n", o.mountpoint);
		goto out;
	}
	mounted = true;
	if ((delay = getenv("XPROFS_TEST_AFTER_MOUNT_DELAY_MS")))
		xprofs_sleep_ms(
			strtoull(delay, NULL, 10)); /* test-only: the mount shows, no loop yet */
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
		fs_fh_free_unreleased();
		fs_views_deinit(&ctx.views); /* no render offers an upload after this */
		fs_shared_stop(&ctx);
		fs_ctx_deinit(&ctx);
	}
	xprofs_store_free(store); /* before the cache its threads write to */
	xprofs_cache_free(cache);
	if (curl_live)
		curl_global_cleanup();
	fuse_opt_free_args(&args);
	fs_options_free(&o);
	return ret;
}
