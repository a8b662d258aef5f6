/*
 * fs/options.c - the xprofs command line: one fuse_opt table into one
 * struct fs_options, the defaults, and the cross-option checks (which also
 * make SOURCE and MOUNTPOINT absolute: the daemon chdirs to "/").
 *
 * fstab: mount(8) runs "xprofs SOURCE MOUNTPOINT -o opts"; the noise options
 * fstab adds (defaults, noauto, user, _netdev, nofail, x-systemd.*, ...) are
 * discarded here; everything we do not know goes to libfuse (allow_other,
 * max_read=, ...), which rejects what it does not know either.
 */
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

#include "fs-internal.h"

enum {
	KEY_HELP,
	KEY_VERSION,
	KEY_RO,
	KEY_FOREGROUND,
	KEY_DEBUG,
	KEY_SINGLE,
};

#define XOPT(t, f, v)                                                                              \
	{                                                                                          \
		t, offsetof(struct fs_options, f), v                                               \
	}

static const struct fuse_opt fs_opts[] = {
	XOPT("cache_dir=%s", cache_dir, 0), XOPT("cache_max=%s", cache_max, 0),
	XOPT("cache_accel=%d", cache_accel, 0), XOPT("no_cache", no_cache, 1),
	XOPT("refresh=%d", refresh, 0), XOPT("loglevel=%s", loglevel, 0),
	XOPT("endpoint=%s", endpoint, 0), XOPT("anonymous", anonymous, 1),
	XOPT("credentials=%s", credentials, 0), XOPT("connections=%u", connections, 0),
	XOPT("retry_deadline=%u", retry_deadline, 0), XOPT("stall_timeout=%u", stall_timeout, 0),
	XOPT("uid=%s", uid_s, 0), XOPT("gid=%s", gid_s, 0), XOPT("umask=%s", umask_s, 0),
	XOPT("follow_symlinks=%s", follow_symlinks, 0), XOPT("tmp_dir=%s", tmp_dir, 0),
	XOPT("exact_sizes", exact_sizes, 1), XOPT("cache_min_free=%s", cache_min_free, 0),
	XOPT("billing_project=%s", billing_project, 0), XOPT("shared_cache=%s", shared_cache, 0),
	XOPT("stream_min=%s", stream_min, 0), FUSE_OPT_KEY("ro", KEY_RO),
	FUSE_OPT_KEY("-h", KEY_HELP), FUSE_OPT_KEY("--help", KEY_HELP),
	FUSE_OPT_KEY("-V", KEY_VERSION), FUSE_OPT_KEY("--version", KEY_VERSION),
	FUSE_OPT_KEY("-f", KEY_FOREGROUND), FUSE_OPT_KEY("-d", KEY_DEBUG),
	FUSE_OPT_KEY("debug", KEY_DEBUG), FUSE_OPT_KEY("-s", KEY_SINGLE),
	/* fstab noise */
	FUSE_OPT_KEY("defaults", FUSE_OPT_KEY_DISCARD), FUSE_OPT_KEY("auto", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("noauto", FUSE_OPT_KEY_DISCARD), FUSE_OPT_KEY("user", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("users", FUSE_OPT_KEY_DISCARD), FUSE_OPT_KEY("nouser", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("owner", FUSE_OPT_KEY_DISCARD), FUSE_OPT_KEY("_netdev", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("nofail", FUSE_OPT_KEY_DISCARD), FUSE_OPT_KEY("rw", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("exec", FUSE_OPT_KEY_DISCARD), FUSE_OPT_KEY("noexec", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("comment=%s", FUSE_OPT_KEY_DISCARD), FUSE_OPT_END};

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
	"  -o cache_accel=N      lz4 acceleration of cached views, 1 (smallest) to 65537 (default "
	"1)\n"
	"  -o no_cache           render views into temporary files, cache nothing\n"
	"  -o cache_min_free=SIZE  free space the cache keeps on its disk, evicting old\n"
	"                        entries (default 5% of that filesystem, at most 1G; 0: none)\n"
	"  -o tmp_dir=DIR        temporary renders (uncached views; default $TMPDIR or /tmp)\n"
	"  -o stream_min=SIZE    trace.json and trace.pftrace of profiles at least this big\n"
	"                        stream to their reader as they render, uncached (default\n"
	"                        256M; 0: cache them like the other views)\n"
	"  -o exact_sizes        stat renders a view first, so tar/rsync see its true size\n"
	"  -o refresh=SECS       max age of the runs index (default 5 local, 30 gs://)\n"
	"  -o loglevel=LEVEL     err|warning|notice|info|debug (default notice)\n"
	"  -o endpoint=URL       GCS JSON API endpoint (emulators)\n"
	"  -o anonymous          GCS without credentials\n"
	"  -o credentials=FILE   GCS credentials JSON file\n"
	"  -o connections=N      parallel GCS connections\n"
	"  -o retry_deadline=SECS  GCS: give up retrying a request after this long (default 60)\n"
	"  -o stall_timeout=SECS   GCS: abort a transfer that moved nothing for this long (30)\n"
	"  -o uid=N,gid=N        owner shown for a gs:// source (default: the mounting user)\n"
	"  -o umask=OCTAL        modes of a gs:// source: 0666/0777 & ~umask (default 022)\n"
	"  -o follow_symlinks=inside|outside   follow symlinks out of SOURCE for runs/\n"
	"                        (outside: anyone who can make a link in SOURCE exposes\n"
	"                        what xprofs can read; default inside)\n"
	"  -o billing_project=P  bill GCS requests to project P (requester pays)\n"
	"  -o shared_cache=gs://BUCKET[/PREFIX]   fetch rendered views of a gs:// SOURCE\n"
	"                        from there instead of rendering; upload what is rendered\n"
	"  -o allow_other, max_read=N, ...   passed to FUSE\n";

static int opt_proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	struct fs_options *o = data;

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

void fs_options_free(struct fs_options *o)
{
	free(o->source);
	free(o->mountpoint);
	/* the strings fuse_opt_parse() allocates: the table's "...=%s" members */
	for (const struct fuse_opt *t = fs_opts; t->templ; t++) {
		size_t n = strlen(t->templ);

		if (t->offset != -1U && n >= 2 && !strcmp(t->templ + n - 2, "%s"))
			free(*(char **)((char *)o + t->offset));
	}
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

/* make_absolute() - replace *@path (owned) with its realpath. */
static int make_absolute(char **path)
{
	char *rp = realpath(*path, NULL);

	if (!rp)
		return -errno;
	free(*path);
	*path = rp;
	return 0;
}

/* parse_id() - a decimal uid/gid @s into *@v; false when it is not one. */
static bool parse_id(const char *s, uint32_t *v)
{
	char *end;
	unsigned long n;

	errno = 0;
	n = strtoul(s, &end, 10);
	if (!*s || *end || errno || n >= (uint32_t)-1 || *s == '-')
		return false;
	*v = (uint32_t)n;
	return true;
}

/*
 * perm_options_check() - uid=, gid=, umask= (a source without modes: gs://
 * only) and follow_symlinks=; prints the problem. Defaults: the mounting
 * user, umask 022, inside.
 */
static int perm_options_check(struct fs_options *o, bool gcs)
{
	uint32_t uid = getuid(), gid = getgid();
	char *end;
	long um = 022;

	if (!gcs && (o->uid_s || o->gid_s || o->umask_s)) {
		fprintf(stderr, "xprofs: uid=, gid= and umask= are for gs:// sources (a local "
				"SOURCE shows its own owners and modes)\n");
		return -EINVAL;
	}
	if ((o->uid_s && !parse_id(o->uid_s, &uid)) || (o->gid_s && !parse_id(o->gid_s, &gid))) {
		fprintf(stderr, "xprofs: bad %s '%s' (a number)\n", o->uid_s ? "uid" : "gid",
			o->uid_s && !parse_id(o->uid_s, &uid) ? o->uid_s : o->gid_s);
		return -EINVAL;
	}
	if (o->umask_s) {
		errno = 0;
		um = strtol(o->umask_s, &end, 8);
		if (!*o->umask_s || *end || errno || um < 0 || um > 0777) {
			fprintf(stderr, "xprofs: bad umask '%s' (octal, e.g. 022)\n", o->umask_s);
			return -EINVAL;
		}
	}
	o->uid = uid;
	o->gid = gid;
	o->umask = (mode_t)um;
	if (o->follow_symlinks && strcmp(o->follow_symlinks, "inside") &&
	    strcmp(o->follow_symlinks, "outside")) {
		fprintf(stderr, "xprofs: bad follow_symlinks '%s' (inside or outside)\n",
			o->follow_symlinks);
		return -EINVAL;
	}
	o->follow_outside = o->follow_symlinks && !strcmp(o->follow_symlinks, "outside");
	if (o->follow_outside && gcs)
		xprofs_warn("follow_symlinks=outside has no effect on gs:// (no symlinks there)");
	return 0;
}

int fs_options_check(struct fs_options *o)
{
	bool gcs;
	struct stat st;
	int lvl, r;

	if (!o->source || !o->mountpoint) {
		fprintf(stderr,
			"xprofs: %s (usage: xprofs SOURCE MOUNTPOINT [-o opt,...]; see xprofs "
			"--help)\n",
			!o->source ? "missing SOURCE" : "missing MOUNTPOINT");
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
	} else if (o->debug)
		xprofs_log_set_level(XPROFS_LOG_DEBUG);
	if (o->refresh < 0)
		o->refresh = gcs ? 30 : 5;
	if (xprofs_size_parse(o->cache_max, &o->cache_max_bytes) < 0 || !o->cache_max_bytes) {
		fprintf(stderr, "xprofs: bad cache_max '%s' (e.g. 512M, 2G)\n", o->cache_max);
		return -EINVAL;
	}
	o->cache_min_free_bytes = XPROFS_CACHE_MIN_FREE_DEFAULT;
	if (o->cache_min_free &&
	    xprofs_size_parse(o->cache_min_free, &o->cache_min_free_bytes) < 0) {
		fprintf(stderr, "xprofs: bad cache_min_free '%s' (e.g. 0, 100M, 1G)\n",
			o->cache_min_free);
		return -EINVAL;
	}
	o->stream_min_bytes = (uint64_t)256 << 20;
	if (o->stream_min && xprofs_size_parse(o->stream_min, &o->stream_min_bytes) < 0) {
		fprintf(stderr, "xprofs: bad stream_min '%s' (e.g. 0, 64M, 1G)\n", o->stream_min);
		return -EINVAL;
	}
	if (o->tmp_dir && (stat(o->tmp_dir, &st) < 0 || !S_ISDIR(st.st_mode) ||
			   access(o->tmp_dir, W_OK | X_OK) < 0 || make_absolute(&o->tmp_dir) < 0)) {
		fprintf(stderr, "xprofs: tmp_dir %s: not a writable directory\n", o->tmp_dir);
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
		r = make_absolute(&o->source);
		if (r < 0)
			return r;
	}
	if (o->shared_cache && (!gcs || strncmp(o->shared_cache, "gs://", 5) || o->no_cache)) {
		fprintf(stderr, "xprofs: shared_cache=%s: %s\n", o->shared_cache,
			strncmp(o->shared_cache, "gs://", 5) ? "must be gs://BUCKET[/PREFIX]"
			: !gcs ? "needs a gs:// SOURCE (only GCS generations name a profile's "
				 "version on every machine)"
			       : "needs the local cache (not no_cache)");
		return -EINVAL;
	}
	r = perm_options_check(o, gcs);
	if (r < 0)
		return r;
	errno = 0;
	if (stat(o->mountpoint, &st) < 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "xprofs: MOUNTPOINT %s: %s\n", o->mountpoint,
			errno ? strerror(errno) : "not a directory");
		return -ENOTDIR;
	}
	return make_absolute(&o->mountpoint);
}

const char *fs_options_usage(void)
{
	return usage_text;
}

int fs_options_parse(struct fuse_args *args, struct fs_options *o)
{
	memset(o, 0, sizeof(*o));
	o->refresh = -1;
	o->cache_max = strdup("2G");
	if (!o->cache_max || fuse_opt_parse(args, o, fs_opts, opt_proc) < 0)
		return -EINVAL;
	return 0;
}
