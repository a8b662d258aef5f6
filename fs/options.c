/*
 * fs/options.c - the xprofs command line (one fuse_opt table into one
 * struct xprofs_options), startup checks, daemonisation and the FUSE loop.
 *
 * Design: we daemonise ourselves instead of with fuse_daemonize(): the
 * parent waits on a pipe until the child has opened the source (a GCS store
 * validates its bucket here), opened the cache and mounted, and exits with
 * the child's verdict. So a bad SOURCE, bad credentials or a bad MOUNTPOINT
 * give a message on stderr and exit status 1 even without -f, and no thread
 * (curl, capture) is ever created before fork().
 *
 * fstab: mount(8) runs "xprofs SOURCE MOUNTPOINT -o opts"; the noise options
 * fstab adds (defaults, noauto, user, _netdev, nofail, x-systemd.*, ...) are
 * discarded here; everything we do not know goes to libfuse (allow_other,
 * max_read=, ...), which rejects what it does not know either.
 */
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xprofs/fs.h"
#include "xprofs/gcs.h"
#include "fs-internal.h"

enum {
	KEY_HELP,
	KEY_VERSION,
	KEY_RO,
	KEY_FOREGROUND,
	KEY_DEBUG,
	KEY_SINGLE,
};

#define XOPT(t, f, v) { t, offsetof(struct xprofs_options, f), v }

static const struct fuse_opt xprofs_opts[] = {
	XOPT("cache_dir=%s", cache_dir, 0),
	XOPT("cache_max=%s", cache_max, 0),
	XOPT("cache_accel=%d", cache_accel, 0),
	XOPT("no_cache", no_cache, 1),
	XOPT("refresh=%d", refresh, 0),
	XOPT("loglevel=%s", loglevel, 0),
	XOPT("endpoint=%s", endpoint, 0),
	XOPT("anonymous", anonymous, 1),
	XOPT("credentials=%s", credentials, 0),
	XOPT("connections=%u", connections, 0),
	FUSE_OPT_KEY("ro", KEY_RO),
	FUSE_OPT_KEY("-h", KEY_HELP),
	FUSE_OPT_KEY("--help", KEY_HELP),
	FUSE_OPT_KEY("-V", KEY_VERSION),
	FUSE_OPT_KEY("--version", KEY_VERSION),
	FUSE_OPT_KEY("-f", KEY_FOREGROUND),
	FUSE_OPT_KEY("-d", KEY_DEBUG),
	FUSE_OPT_KEY("debug", KEY_DEBUG),
	FUSE_OPT_KEY("-s", KEY_SINGLE),
	/* fstab noise */
	FUSE_OPT_KEY("defaults", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("auto", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("noauto", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("user", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("users", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("nouser", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("owner", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("_netdev", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("nofail", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("rw", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("exec", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("noexec", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("comment=%s", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_END
};

static const char usage_text[] =
	"usage: xprofs SOURCE MOUNTPOINT [-f] [-d] [-o opt[,opt...]]\n"
	"\n"
	"Mount an XProf profile log directory (a local directory or gs://BUCKET[/PREFIX]):\n"
	"  MOUNTPOINT/logdir/   byte-identical read/write mirror (for TensorBoard)\n"
	"  MOUNTPOINT/runs/     <run>/<session>/<host>/ with decoded JSON views\n"
	"  MOUNTPOINT/status.json, MOUNTPOINT/capture\n"
	"\n"
	"options:\n"
	"  -h, --help            this text\n"
	"  -V, --version         print the version\n"
	"  -f                    stay in the foreground (log to stderr)\n"
	"  -d                    FUSE debug output (implies -f)\n"
	"  -s                    single-threaded\n"
	"  -o ro                 read-only mount (every change fails with EROFS)\n"
	"  -o cache_dir=DIR      view cache (default $XDG_CACHE_HOME/xprofs or ~/.cache/xprofs)\n"
	"  -o cache_max=SIZE     cache size cap, e.g. 512M, 2G (default 2G)\n"
	"  -o cache_accel=N      lz4 acceleration of cached views, 1 (smallest) to 65537 (default 1)\n"
	"  -o no_cache           render views into temporary files, cache nothing\n"
	"  -o refresh=SECS       max age of the runs index (default 5 local, 30 gs://)\n"
	"  -o loglevel=LEVEL     err|warning|notice|info|debug (default notice)\n"
	"  -o endpoint=URL       GCS JSON API endpoint (emulators)\n"
	"  -o anonymous          GCS without credentials\n"
	"  -o credentials=FILE   GCS credentials JSON file\n"
	"  -o connections=N      parallel GCS connections\n"
	"  -o allow_other, max_read=N, ...   passed to FUSE\n";

static int opt_proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	struct xprofs_options *o = data;

	switch (key) {
	case FUSE_OPT_KEY_NONOPT:
		if (!o->source) {
			o->source = strdup(arg);
			return o->source ? 0 : -1;
		}
		if (!o->mountpoint) {
			o->mountpoint = strdup(arg);
			return o->mountpoint ? 0 : -1;
		}
		fprintf(stderr, "xprofs: unexpected argument '%s'\n", arg);
		return -1;
	case FUSE_OPT_KEY_OPT:
		if (!strncmp(arg, "x-systemd.", 10) || !strncmp(arg, "x-", 2))
			return 0;
		return 1;
	case KEY_HELP:
		o->show_help = 1;
		return 0;
	case KEY_VERSION:
		o->show_version = 1;
		return 0;
	case KEY_RO:
		o->ro = 1;
		return 1; /* also a kernel mount flag */
	case KEY_FOREGROUND:
		o->foreground = 1;
		return 0;
	case KEY_DEBUG:
		o->debug = 1;
		o->foreground = 1;
		return 1;
	case KEY_SINGLE:
		o->single = 1;
		return 0;
	default:
		return 1;
	}
}

static void options_free(struct xprofs_options *o)
{
	free(o->source);
	free(o->mountpoint);
	free(o->cache_dir);
	free(o->cache_max);
	free(o->loglevel);
	free(o->endpoint);
	free(o->credentials);
}

static char *default_cache_dir(void)
{
	const char *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
	char buf[PATH_MAX];

	if (x && *x)
		snprintf(buf, sizeof(buf), "%s/xprofs", x);
	else if (h && *h)
		snprintf(buf, sizeof(buf), "%s/.cache/xprofs", h);
	else
		snprintf(buf, sizeof(buf), "/tmp/xprofs-cache-%ld", (long)getuid());
	return strdup(buf);
}

/* check_options() - cross-option checks and defaults; prints the problem. */
static int check_options(struct xprofs_options *o)
{
	bool gcs;
	char *rp;
	struct stat st;
	int lvl;

	if (!o->source || !o->mountpoint) {
		fprintf(stderr, "xprofs: %s\n%s", !o->source ? "missing SOURCE" : "missing MOUNTPOINT",
			usage_text);
		return -EINVAL;
	}
	gcs = !strncmp(o->source, "gs://", 5);
	if (o->loglevel) {
		lvl = xprofs_log_level_parse(o->loglevel);
		if (lvl < 0) {
			fprintf(stderr, "xprofs: bad loglevel '%s'\n", o->loglevel);
			return -EINVAL;
		}
		xprofs_log_set_level(lvl);
	}
	else if (o->debug)
		xprofs_log_set_level(XPROFS_LOG_DEBUG);
	if (o->refresh < 0)
		o->refresh = gcs ? 30 : 5;
	if (xprofs_size_parse(o->cache_max, &o->cache_max_bytes) < 0 || !o->cache_max_bytes) {
		fprintf(stderr, "xprofs: bad cache_max '%s' (e.g. 512M, 2G)\n", o->cache_max);
		return -EINVAL;
	}
	if (o->cache_accel && (o->cache_accel < 1 || o->cache_accel > XPROFS_CACHE_ACCEL_MAX)) {
		fprintf(stderr, "xprofs: bad cache_accel %d (1 to %d)\n", o->cache_accel,
			XPROFS_CACHE_ACCEL_MAX);
		return -EINVAL;
	}
	if (!o->cache_dir) {
		o->cache_dir = default_cache_dir();
		if (!o->cache_dir)
			return -ENOMEM;
	}
	if (!gcs) {
		/* check SOURCE before anything else; absolute because we chdir("/") */
		if (stat(o->source, &st) < 0 || !S_ISDIR(st.st_mode) ||
		    access(o->source, R_OK | X_OK) < 0) {
			fprintf(stderr, "xprofs: SOURCE %s: %s\n", o->source,
				errno ? strerror(errno) : "not a directory");
			if (!errno || (stat(o->source, &st) == 0 && !S_ISDIR(st.st_mode)))
				fprintf(stderr, "xprofs: SOURCE must be a readable directory\n");
			return -ENOENT;
		}
		rp = realpath(o->source, NULL);
		if (!rp)
			return -errno;
		free(o->source);
		o->source = rp;
	}
	errno = 0;
	if (stat(o->mountpoint, &st) < 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "xprofs: MOUNTPOINT %s: %s\n", o->mountpoint,
			errno ? strerror(errno) : "not a directory");
		return -ENOTDIR;
	}
	rp = realpath(o->mountpoint, NULL);
	if (!rp)
		return -errno;
	free(o->mountpoint);
	o->mountpoint = rp;
	return 0;
}

__attribute__((format(printf, 2, 0)))
static void fuse_log_to_ours(enum fuse_log_level level, const char *fmt, va_list ap)
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
static int open_backends(struct xprofs_options *o, struct xprofs_store **store,
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
	struct xprofs_options o = { 0 };
	struct xprofs_store *store = NULL;
	struct xprofs_cache *cache = NULL;
	struct fuse_loop_config *lc = NULL;
	struct fs_ctx ctx;
	struct fuse *fuse = NULL;
	bool ctx_live = false, mounted = false, handlers = false;
	int notify_fd = -1, ret = 1, r;

	o.refresh = -1;
	o.cache_max = strdup("2G");
	if (!o.cache_max || fuse_opt_parse(&args, &o, xprofs_opts, opt_proc) < 0)
		goto out;
	if (o.show_help) {
		printf("%s", usage_text);
		ret = 0;
		goto out;
	}
	if (o.show_version) {
		printf("xprofs %s (libfuse %s)\n", XPROFS_VERSION, fuse_pkgversion());
		ret = 0;
		goto out;
	}
	if (check_options(&o) < 0)
		goto out;
	fuse_set_log_func(fuse_log_to_ours);
	if (!o.foreground && daemonise(&notify_fd) < 0) {
		fprintf(stderr, "xprofs: cannot daemonise: %s\n", strerror(errno));
		goto out;
	}
	if (open_backends(&o, &store, &cache) < 0)
		goto out;
	r = fs_ctx_init(&ctx, &o, store, cache);
	store = NULL;
	cache = NULL;
	if (r < 0)
		goto out;
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
	if (ctx_live)
		fs_ctx_deinit(&ctx);
	xprofs_cache_free(cache);
	xprofs_store_free(store);
	fuse_opt_free_args(&args);
	options_free(&o);
	return ret;
}
