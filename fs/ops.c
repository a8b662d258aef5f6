/*
 * fs/ops.c - the FUSE operations of xprofs (high-level, path-based API) and
 * their table. Each handler resolves the mount path (fs_classify()) and hands
 * the work to the file that owns it (attributes: attr.c; listings: dirs.c;
 * generated files: views.c; logdir/ writes: logdir.c; small files:
 * status.c); this is the only fs file that calls libfuse during a request.
 *
 * Design:
 * - logdir/... maps 1:1 onto the store. Reads pread the store file; writes
 *   go through logdir.c's writers. The no-overwrite rule for "*.xplane.pb"
 *   in the namespace: an existing profile cannot be unlinked, renamed or
 *   renamed over (EPERM); opening and truncating it are refused in logdir.c.
 * - runs/... is resolved against the runs index snapshot (context.c, index.c).
 * - Generated files (views, tracks, session summaries) are rendered on open
 *   by views.c and served with direct_io; after a render that changed the
 *   size getattr could report, the kernel's attributes are invalidated here,
 *   so fstat() after open is exact. A big view still rendering when the open
 *   returns (FS_FH_LIVE, live.c) reports size 0 and is read to EOF (direct_io
 *   makes the kernel ignore st_size); its release invalidates the attributes
 *   once the real size is known.
 * - Small virtual files (status.json, errors, capture) are snapshotted into
 *   memory at open.
 * - Permissions: the kernel checks them (default_permissions) against the
 *   modes and owners getattr reports (attr.c); the open of a file made from
 *   several profiles checks the caller here too (caller_may_read()); chmod/chown/
 *   utimens change logdir/ files in the source, never a profile.
 * - Symlinks in logdir/ are symlinks (getattr, readlink, symlink): the kernel
 *   follows them itself, so no lookup through one reaches the store.
 *
 * Limits: see fs-internal.h (FS_*).
 */
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "xprofs/capture.h"
#include "xprofs/decode.h"
#include "fs-internal.h"

#define RUNS_DIR "/" FS_NAME_RUNS

static struct fs_ctx *ctx_get(void)
{
	return fuse_get_context()->private_data;
}

/*
 * invalidate_attrs() - drop the kernel's attributes of @path after a render
 * changed the size getattr could have reported, so fstat() after open is
 * exact (the high-level API has one attribute timeout for everything).
 */
static void invalidate_attrs(const char *path)
{
	fuse_invalidate_path(fuse_get_context()->fuse, path);
}

/*
 * on_target() - resolve @path and run @fn on its target while the index
 * reference that keeps the target alive is held; fs_classify()'s error, else
 * @fn's result.
 */
static int on_target(struct fs_ctx *ctx, const char *path,
		     int (*fn)(struct fs_ctx *ctx, const struct fs_target *t, void *arg), void *arg)
{
	struct fs_index *idx;
	struct fs_target t;
	int r;

	r = fs_classify(ctx, path, &idx, &t);
	if (r == 0)
		r = fn(ctx, &t, arg);
	fs_index_put(idx);
	return r;
}

/* ---- attributes (attr.c) ------------------------------------------------ */

static int getattr_fn(struct fs_ctx *ctx, const struct fs_target *t, void *st)
{
	return fs_getattr(ctx, t, st);
}

static int op_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = ctx_get();
	struct fs_fh *fh = fi ? (struct fs_fh *)(uintptr_t)fi->fh : NULL;
	int r;

	FS_CNT(ctx, lookups);
	r = on_target(ctx, path, getattr_fn, st);
	if (fh && fh->kind == FS_FH_LIVE) {
		bool done;

		/* still rendering: the size is unknown (0); reads go to EOF (direct_io) */
		if (r == 0)
			st->st_size = (off_t)fs_view_fh_size(fh, &done);
	} else if (fh &&
		   (fh->kind == FS_FH_WRITER || fh->kind == FS_FH_FD || fh->kind == FS_FH_CACHE)) {
		/* an open file knows its size better (new profiles are not visible yet) */
		bool local = fs_store_is_local(ctx);

		if (r < 0 && fh->kind == FS_FH_WRITER)
			fs_fill_file(ctx, st, 0, xprofs_now_ns(), fs_perm_own(ctx, fh->mode));
		/* local in-place writers: the file itself is the truth (other fds may write) */
		if (fh->kind != FS_FH_WRITER || r < 0 || !local)
			st->st_size = (off_t)(fh->kind == FS_FH_WRITER ? fh->wsize : fh->size);
		r = 0;
	}
	return r;
}

/* ---- directories (dirs.c) ----------------------------------------------- */

/*
 * op_opendir(), op_releasedir() - only count open directories: libfuse keeps
 * their state. status.json shows the count, so a caller about to unmount can
 * wait until the kernel has released them (a RELEASEDIR still queued at
 * unmount is dropped, and libfuse's handle with it).
 */
static int op_opendir(const char *path, struct fuse_file_info *fi)
{
	FS_CNT(ctx_get(), open_dirs);
	return 0;
}

static int op_releasedir(const char *path, struct fuse_file_info *fi)
{
	__atomic_sub_fetch(&ctx_get()->c.open_dirs, 1, __ATOMIC_RELAXED);
	return 0;
}

struct fill_fuse_arg {
	void *buf;
	fuse_fill_dir_t filler;
};

/* fill_fuse() - one name into libfuse's readdir buffer @arg; 1 when it is full. */
static int fill_fuse(void *arg, const char *name)
{
	const struct fill_fuse_arg *a = arg;

	return a->filler(a->buf, name, NULL, 0, 0) ? 1 : 0;
}

static int readdir_fn(struct fs_ctx *ctx, const struct fs_target *t, void *a)
{
	return fs_dir_list(ctx, t, fill_fuse, a);
}

static int op_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off,
		      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	struct fs_ctx *ctx = ctx_get();
	struct fill_fuse_arg a = {buf, filler};

	FS_CNT(ctx, readdirs);
	(void)off;
	(void)fi;
	(void)flags;
	return on_target(ctx, path, readdir_fn, &a);
}

/* ---- files -------------------------------------------------------------- */

static bool wants_write(int flags)
{
	return (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC);
}

/* mem_fh() - a handle serving @b's bytes: consumes @b's storage; caller owns *@out. */
static int mem_fh(struct xprofs_buf *b, enum fs_fh_kind kind, struct fs_fh **out)
{
	struct fs_fh *fh = fs_fh_new(kind);

	if (!fh)
		return -ENOMEM;
	fh->mem = xprofs_buf_steal(b, &fh->size);
	*out = fh;
	return 0;
}

/*
 * give_to_caller() - a file or directory just created at store path @sp
 * belongs to the user who created it, as on a local filesystem: when the
 * daemon runs as root over a local source, chown it to the caller (the
 * group stays the directory's under a setgid directory). Failures are logged.
 */
static void give_to_caller(struct fs_ctx *ctx, const char *sp)
{
	struct fuse_context *fc = fuse_get_context();
	struct xprofs_store_attr a = {
		.valid = XPROFS_ATTR_UID | XPROFS_ATTR_GID, .uid = fc->uid, .gid = fc->gid};
	char parent[XPROFS_PATH_MAX + 1];
	struct xprofs_store_stat pst;
	const char *slash = strrchr(sp, '/');
	int r;

	if (geteuid() != 0 || !fs_store_is_local(ctx) || (fc->uid == 0 && fc->gid == 0))
		return;
	snprintf(parent, sizeof(parent), "%.*s", slash ? (int)(slash - sp) : 0, sp);
	if (xprofs_store_stat(ctx->store, parent, &pst) == 0 && (pst.mode & S_ISGID))
		a.valid = XPROFS_ATTR_UID;
	r = xprofs_store_setattr(ctx->store, sp, &a);
	if (r < 0)
		xprofs_warn("%s: cannot give it to its creator (uid %u): %s", sp, (unsigned)fc->uid,
			    strerror(-r));
}

/* may_control() - the caller is the mounting user or root: who may write capture files. */
static bool may_control(const struct fs_ctx *ctx)
{
	uid_t uid = fuse_get_context()->uid;

	return uid == 0 || uid == ctx->uid;
}

/*
 * caller_may_read() - whether the caller may read a file with @p, judged here
 * as the kernel judges it (uid, then gid and supplementary groups). A
 * session-wide file's @p comes from the same index snapshot as the hosts its
 * render combines, while the kernel may check attributes it cached from an
 * older one (a host added since); groups that cannot be read count as
 * unknown (meet()'s rule: group and others bits both).
 */
static bool caller_may_read(struct fs_perm p)
{
	const struct fuse_context *fc = fuse_get_context();
	gid_t groups[256];
	int n = fuse_getgroups((int)(sizeof(groups) / sizeof(groups[0])), groups);

	if (n > (int)(sizeof(groups) / sizeof(groups[0])))
		n = -1;
	return fs_perm_readable(p, fc->uid, fc->gid, groups, n);
}

static int op_open(const char *path, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = ctx_get();
	struct fs_fh *fh = NULL;
	struct fs_index *idx;
	struct xprofs_buf b;
	struct fs_target t;
	bool changed;
	int r;

	FS_CNT(ctx, opens);
	xprofs_buf_init(&b, FS_MEM_MAX);
	r = fs_classify(ctx, path, &idx, &t);
	if (r < 0)
		goto out;
	if (t.kind != FS_K_LOGDIR && t.kind != FS_K_CAPTURE && wants_write(fi->flags)) {
		r = ctx->o->ro ? -EROFS : -EACCES;
		goto out;
	}
	switch (t.kind) {
	case FS_K_LOGDIR:
		if (wants_write(fi->flags)) {
			r = fs_logdir_writer(ctx, t.store_path, false, fi->flags, 0, &fh);
			break;
		}
		fh = fs_fh_new(FS_FH_READER);
		r = fh ? xprofs_store_reader_open(ctx->store, t.store_path, &fh->rf) : -ENOMEM;
		break;
	case FS_K_STATUS:
	case FS_K_ERRORS:
		r = fs_mem_content(ctx, &t, &b);
		if (r == 0)
			r = mem_fh(&b, FS_FH_MEM, &fh);
		fi->direct_io = 1;
		break;
	case FS_K_CAPTURE:
		if (wants_write(fi->flags) && ctx->o->ro) {
			r = -EROFS;
			break;
		}
		if (wants_write(fi->flags) && !may_control(ctx)) {
			r = -EACCES; /* also without default_permissions */
			break;
		}
		r = fs_mem_content(ctx, &t, &b);
		if (r == 0)
			r = mem_fh(&b, FS_FH_CAPTURE, &fh);
		if (r == 0 && t.node) {
			fh->run = strdup(t.node->path);
			if (!fh->run)
				r = -ENOMEM;
		}
		if (r == 0 && wants_write(fi->flags))
			r = xprofs_capture_input_new(fh->run, &fh->cin);
		fi->direct_io = 1;
		break;
	case FS_K_SESSION_SUMMARY:
	case FS_K_SESSION_OPS:
	case FS_K_SESSION_VIEW:
	case FS_K_COMPARE_VIEW:
		if (!caller_may_read(t.kind == FS_K_COMPARE_VIEW
					     ? fs_perm_compare(ctx, &t, false)
					     : fs_perm_session(ctx, &t, false))) {
			r = -EACCES; /* also with attributes the kernel cached from an older index */
			break;
		}
		/* fall through */
	case FS_K_VIEW:
	case FS_K_TRACK:
		fh = fs_fh_new(FS_FH_FD);
		r = fh ? fs_view_open(ctx, idx, &t, fh, &changed) : -ENOMEM;
		if (r == 0 && changed)
			invalidate_attrs(path);
		fi->direct_io = 1;
		break;
	default:
		r = -EISDIR;
	}
out:
	if (r == 0)
		fi->fh = (uint64_t)(uintptr_t)fh;
	else
		fs_fh_free(fh);
	xprofs_buf_deinit(&b);
	fs_index_put(idx);
	return r;
}

/*
 * classify_for_change() - @path's target for a change that needs only its
 * kind and store_path (the index reference is dropped at once: the other
 * pointers of @t must not be used); -EROFS on a read-only mount.
 */
static int classify_for_change(struct fs_ctx *ctx, const char *path, struct fs_target *t)
{
	struct fs_index *idx;
	int r;

	r = fs_classify(ctx, path, &idx, t);
	fs_index_put(idx);
	if (r < 0)
		return r;
	return ctx->o->ro ? -EROFS : 0;
}

static int op_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = ctx_get();
	struct fs_fh *fh = NULL;
	struct fs_target t;
	int r;

	FS_CNT(ctx, opens);
	r = classify_for_change(ctx, path, &t);
	if (r < 0)
		return r;
	if (t.kind != FS_K_LOGDIR)
		return t.kind == FS_K_CAPTURE ? -EEXIST : -EACCES;
	/* @mode has the caller's umask applied (the kernel does it) */
	r = fs_logdir_writer(ctx, t.store_path, true, fi->flags, mode & 07777, &fh);
	if (r < 0)
		return r;
	if (fh->mode && !fh->profile)
		give_to_caller(ctx, t.store_path); /* a new profile stays the daemon's */
	fi->fh = (uint64_t)(uintptr_t)fh;
	return 0;
}

/*
 * All @size bytes at @off of a store file (or up to its end), or -errno.
 * A reply shorter than asked reads as the end of the file to the kernel
 * (FUSE shrinks its idea of the size), so an error after some bytes (a
 * replaced gs:// object's next block: ESTALE) is returned as the error,
 * not as those bytes: the reader sees the error, never a silent end.
 */
static ssize_t reader_read(struct xprofs_store_reader *rf, char *buf, size_t size, uint64_t off)
{
	size_t got = 0;

	while (got < size) {
		ssize_t k = xprofs_store_reader_pread(rf, buf + got, size - got, off + got);

		if (k < 0)
			return k;
		if (k == 0)
			break;
		got += (size_t)k;
	}
	return (ssize_t)got;
}

static int op_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = ctx_get();
	struct fs_fh *fh = (struct fs_fh *)(uintptr_t)fi->fh;
	bool changed;
	ssize_t r;

	if (off < 0)
		return -EINVAL;
	switch (fh->kind) {
	case FS_FH_READER:
		r = reader_read(fh->rf, buf, size, (uint64_t)off);
		break;
	case FS_FH_WRITER:
		r = fs_writer_read(ctx, fh, buf, size, (uint64_t)off);
		break;
	case FS_FH_LIVE:
		/* no fh->lock: a reader may wait here for the render, others go on */
		r = fs_view_pread(fh, buf, size, (uint64_t)off);
		break;
	case FS_FH_FD:
	case FS_FH_CACHE:
		if ((uint64_t)off >= fh->size) {
			r = 0;
			break;
		}
		/* the lock keeps an entry alive while fs_view_reopen() may replace it */
		pthread_mutex_lock(&fh->lock);
		r = fs_view_pread(fh, buf, size, (uint64_t)off);
		if (r == -EIO && fh->kind == FS_FH_CACHE &&
		    fs_view_reopen(ctx, path, fh, &changed) == 0) {
			if (changed)
				invalidate_attrs(path);
			r = fs_view_pread(fh, buf, size, (uint64_t)off);
		}
		pthread_mutex_unlock(&fh->lock);
		break;
	case FS_FH_MEM:
	case FS_FH_CAPTURE:
		r = 0;
		if ((uint64_t)off < fh->size) {
			uint64_t left = fh->size - (uint64_t)off;

			r = (ssize_t)(left < size ? left : size);
			memcpy(buf, fh->mem + off, (size_t)r);
		}
		break;
	default:
		r = -EBADF;
	}
	if (r > 0)
		FS_CNT_ADD(ctx, bytes_read, (uint64_t)r);
	(void)path;
	return r > INT_MAX ? INT_MAX : (int)r;
}

static int op_write(const char *path, const char *buf, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = ctx_get();
	struct fs_fh *fh = (struct fs_fh *)(uintptr_t)fi->fh;
	struct xprofs_buf reason;
	ssize_t r;

	if (off < 0)
		return -EINVAL;
	if (fh->kind == FS_FH_CAPTURE) {
		if (!ctx->capture || !fh->cin)
			return !ctx->capture ? -ENOSYS : -EBADF;
		/* a command is a line: assembled per open file until '\n' or close */
		xprofs_buf_init(&reason, 4096);
		pthread_mutex_lock(&fh->lock);
		r = xprofs_capture_input_write(ctx->capture, fh->cin, buf, size, &reason);
		pthread_mutex_unlock(&fh->lock);
		if (r < 0)
			xprofs_warn("capture: %s", reason.data ? reason.data : strerror((int)-r));
		xprofs_buf_deinit(&reason);
		return r > INT_MAX ? INT_MAX : (int)r;
	}
	if (fh->kind != FS_FH_WRITER)
		return -EBADF;
	r = fs_writer_write(ctx, fh, buf, size, (uint64_t)off);
	if (r > 0)
		FS_CNT_ADD(ctx, bytes_written, (uint64_t)r);
	(void)path;
	return r > INT_MAX ? INT_MAX : (int)r;
}

static int op_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = ctx_get();
	struct fs_fh *fh = fi ? (struct fs_fh *)(uintptr_t)fi->fh : NULL;
	struct fs_target t;
	int r;

	if (size < 0)
		return -EINVAL;
	if (fh && fh->kind == FS_FH_CAPTURE)
		return 0;
	if (fh && fh->kind == FS_FH_WRITER)
		return fs_writer_truncate(ctx, fh, (uint64_t)size);
	r = classify_for_change(ctx, path, &t);
	if (r < 0)
		return r;
	if (t.kind == FS_K_CAPTURE)
		return 0; /* "echo line > capture" truncates first */
	if (t.kind != FS_K_LOGDIR)
		return -EACCES;
	return fs_logdir_truncate(ctx, t.store_path, (uint64_t)size);
}

/* Uploads and publishing happen in flush, not release: see logdir.c. */
static int op_flush(const char *path, struct fuse_file_info *fi)
{
	struct fs_fh *fh = (struct fs_fh *)(uintptr_t)fi->fh;
	struct fs_ctx *ctx = ctx_get();
	struct xprofs_buf reason;
	int r;

	if (fh->kind == FS_FH_CAPTURE && fh->cin && ctx->capture) {
		/* close() ends an unterminated last line: act on it, its error is close()'s */
		xprofs_buf_init(&reason, 4096);
		pthread_mutex_lock(&fh->lock);
		r = xprofs_capture_input_close(ctx->capture, fh->cin, &reason);
		pthread_mutex_unlock(&fh->lock);
		if (r < 0)
			xprofs_warn("capture: %s", reason.data ? reason.data : strerror(-r));
		xprofs_buf_deinit(&reason);
		return r;
	}
	return fh->kind == FS_FH_WRITER ? fs_writer_flush(ctx, fh, path) : 0;
}

static int op_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	struct fs_fh *fh = (struct fs_fh *)(uintptr_t)fi->fh;

	(void)datasync;
	return fh->kind == FS_FH_WRITER ? fs_writer_fsync(fh, path) : 0;
}

/* op_release() - the last close; FUSE drops its result, so failures are only logged. */
static int op_release(const char *path, struct fuse_file_info *fi)
{
	struct fs_fh *fh = (struct fs_fh *)(uintptr_t)fi->fh;

	bool done;

	if (fh->kind == FS_FH_WRITER)
		fs_writer_release(ctx_get(), fh, path);
	if (fh->kind == FS_FH_LIVE) {
		/* opened while rendering: getattr may have cached size 0 since */
		fs_view_fh_size(fh, &done);
		if (done)
			invalidate_attrs(path);
	}
	/* aborts a writer not committed (its data was flushed or reported), drops a render */
	fs_fh_free(fh);
	return 0;
}

/* ---- namespace changes -------------------------------------------------- */

/*
 * logdir_target() - @path as a logdir/ entry to change: EPERM outside
 * logdir/, EBUSY for logdir/ itself, before EROFS where those apply.
 */
static int logdir_target(struct fs_ctx *ctx, const char *path, struct fs_target *t)
{
	int r = classify_for_change(ctx, path, t);

	if (r < 0 && r != -EROFS)
		return r; /* no such path */
	if (t->kind != FS_K_LOGDIR)
		return r < 0 ? r : -EPERM;
	if (!*t->store_path)
		return -EBUSY;
	return r;
}

/*
 * mkdir_run() - "mkdir runs/NAME": create NAME/plugins/profile in the store,
 * each level made with @mode. NAME follows the capture grammar's run names
 * (xprofs_capture_run_valid(), the one rule: no control characters, no
 * '\\', no "." or ".." components).
 */
static int mkdir_run(struct fs_ctx *ctx, const char *path, mode_t mode)
{
	const char *rel = path + strlen(RUNS_DIR "/");
	char p[XPROFS_PATH_MAX + 1];
	struct fs_index *idx;
	struct fs_target t;
	const char *slash;
	int r;

	if (ctx->o->ro)
		return -EROFS;
	slash = strrchr(path, '/');
	if (slash == path + strlen(RUNS_DIR))
		r = 0; /* a top-level run: the parent is runs/ itself */
	else {
		char parent[XPROFS_PATH_MAX + 1];

		snprintf(parent, sizeof(parent), "%.*s", (int)(slash - path), path);
		r = fs_classify(ctx, parent, &idx, &t);
		fs_index_put(idx);
		if (r == 0 && t.kind != FS_K_RUNS)
			r = -EPERM; /* sessions are made by captures, not mkdir */
		if (r < 0)
			return r;
	}
	if (!strcmp(rel, FS_NAME_ROOT_RUN))
		rel = "";
	else if (!strncmp(rel, FS_NAME_ROOT_RUN "/", strlen(FS_NAME_ROOT_RUN) + 1) ||
		 !xprofs_store_path_valid(rel))
		return -EPERM;
	else if (!xprofs_capture_run_valid(rel, strlen(rel)))
		return -EINVAL; /* a name no capture line could name */
	r = fs_store_path(p, sizeof(p), rel, NULL, NULL);
	if (r < 0)
		return r;
	/* create each level; an existing one is fine */
	for (char *s = strchr(p, '/');; s = strchr(s + 1, '/')) {
		if (s)
			*s = '\0';
		r = xprofs_store_mkdir_mode(ctx->store, p, mode & 07777);
		if (r == 0)
			give_to_caller(ctx, p);
		if (r == -EEXIST)
			r = 0;
		if (s)
			*s = '/';
		if (r < 0 || !s)
			break;
	}
	fs_invalidate_index(ctx);
	return r;
}

enum logdir_op { LD_UNLINK, LD_RMDIR, LD_MKDIR, LD_SYMLINK };

/*
 * logdir_change() - make or remove the logdir/ entry @path in the source
 * (@link: a symlink's target, borrowed; @mode: a directory's), then let the
 * runs index be rebuilt. A profile is never unlinked (EPERM).
 */
static int logdir_change(struct fs_ctx *ctx, const char *path, enum logdir_op op, const char *link,
			 mode_t mode)
{
	struct fs_target t;
	int r;

	r = logdir_target(ctx, path, &t);
	if (r < 0)
		return r;
	switch (op) {
	case LD_UNLINK:
		if (fs_is_profile_name(t.store_path))
			return -EPERM;
		r = xprofs_store_unlink(ctx->store, t.store_path);
		break;
	case LD_RMDIR:
		r = xprofs_store_rmdir(ctx->store, t.store_path);
		break;
	case LD_MKDIR:
		r = xprofs_store_mkdir_mode(ctx->store, t.store_path, mode & 07777);
		if (r == 0)
			give_to_caller(ctx, t.store_path);
		break;
	case LD_SYMLINK:
		r = xprofs_store_symlink(ctx->store, link, t.store_path);
		break;
	}
	fs_invalidate_index(ctx);
	return r;
}

static int op_unlink(const char *path)
{
	return logdir_change(ctx_get(), path, LD_UNLINK, NULL, 0);
}

static int op_rmdir(const char *path)
{
	return logdir_change(ctx_get(), path, LD_RMDIR, NULL, 0);
}

static int op_mkdir(const char *path, mode_t mode)
{
	struct fs_ctx *ctx = ctx_get();

	/* @mode has the caller's umask applied (the kernel does it) */
	if (!strncmp(path, RUNS_DIR "/", strlen(RUNS_DIR "/")))
		return mkdir_run(ctx, path, mode);
	return logdir_change(ctx, path, LD_MKDIR, NULL, mode);
}

static int op_rename(const char *from, const char *to, unsigned int flags)
{
	struct fs_ctx *ctx = ctx_get();
	struct xprofs_store_stat st;
	struct fs_target a, b;
	bool exists;
	int r;

	r = logdir_target(ctx, from, &a);
	if (r == 0)
		r = logdir_target(ctx, to, &b);
	if (r < 0)
		return r == -EPERM ? -EXDEV : r;
	if (flags & RENAME_EXCHANGE)
		return -EINVAL;
	if (fs_is_profile_name(a.store_path))
		return -EPERM; /* rename-away */
	r = xprofs_store_stat(ctx->store, b.store_path, &st);
	exists = r == 0;
	if (exists && fs_is_profile_name(b.store_path))
		return -EPERM; /* rename-over */
	if (exists && (flags & RENAME_NOREPLACE))
		return -EEXIST;
	r = xprofs_store_rename(ctx->store, a.store_path, b.store_path);
	fs_invalidate_index(ctx);
	return r;
}

/*
 * set_attr() - chmod/chown/utimens of a logdir/ entry: applied to the source
 * object itself (local). Refused with EPERM everywhere else: under runs/, on
 * the mount's own files, and on an existing profile (profiles never change).
 * A new profile still being written (not visible yet, e.g. "cp -p") accepts
 * them without effect, as does a gs:// source (no modes or owners there).
 */
static int set_attr(const char *path, const struct xprofs_store_attr *a, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = ctx_get();
	struct fs_fh *fh = fi ? (struct fs_fh *)(uintptr_t)fi->fh : NULL;
	const char *base;
	struct fs_target t;
	int r;

	if (fh && fh->kind == FS_FH_WRITER && fh->profile)
		return ctx->o->ro ? -EROFS : 0;
	r = classify_for_change(ctx, path, &t);
	if (r < 0 && r != -EROFS)
		return r;
	if (t.kind != FS_K_LOGDIR)
		return r < 0 ? r : -EPERM;
	if (r < 0)
		return r;
	base = strrchr(t.store_path, '/');
	if (fs_is_profile_name(base ? base + 1 : t.store_path))
		return -EPERM;
	if (!fs_store_is_local(ctx))
		return 0;
	return xprofs_store_setattr(ctx->store, t.store_path, a);
}

static int op_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	struct xprofs_store_attr a = {.valid = XPROFS_ATTR_MODE, .mode = mode & 07777};

	return set_attr(path, &a, fi);
}

static int op_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
	struct xprofs_store_attr a = {.uid = uid, .gid = gid};

	a.valid =
		(uid != (uid_t)-1 ? XPROFS_ATTR_UID : 0) | (gid != (gid_t)-1 ? XPROFS_ATTR_GID : 0);
	return set_attr(path, &a, fi);
}

static int op_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
	struct xprofs_store_attr a = {.valid = XPROFS_ATTR_TIMES};

	a.times[0] = tv[0];
	a.times[1] = tv[1];
	return set_attr(path, &a, fi);
}

struct readlink_arg {
	char *buf;
	size_t size;
};

static int readlink_fn(struct fs_ctx *ctx, const struct fs_target *t, void *arg)
{
	struct readlink_arg *a = arg;

	if (t->kind != FS_K_LOGDIR)
		return -EINVAL;
	return xprofs_store_readlink(ctx->store, t->store_path, a->buf, a->size);
}

/* op_readlink() - a symlink in logdir/: its target, as the source has it. */
static int op_readlink(const char *path, char *buf, size_t size)
{
	struct readlink_arg a = {buf, size};
	int r;

	r = on_target(ctx_get(), path, readlink_fn, &a);
	return r < 0 ? r : 0;
}

/* op_symlink() - "ln -s TARGET logdir/NAME": the link is made in the source as given. */
static int op_symlink(const char *target, const char *path)
{
	return logdir_change(ctx_get(), path, LD_SYMLINK, target, 0);
}

static int op_statfs(const char *path, struct statvfs *sv)
{
	struct fs_ctx *ctx = ctx_get();

	/* a local source reports its own filesystem (df, free-space checks) */
	if (fs_store_is_local(ctx) && statvfs(xprofs_store_source(ctx->store), sv) == 0) {
		sv->f_namemax = XPROFS_NAME_MAX;
		if (ctx->o->ro)
			sv->f_flag |= ST_RDONLY;
		return 0;
	}
	memset(sv, 0, sizeof(*sv));
	sv->f_bsize = 1 << 16;
	sv->f_frsize = 1 << 16;
	sv->f_blocks = 1ULL << 28;
	sv->f_bfree = 1ULL << 27;
	sv->f_bavail = 1ULL << 27;
	sv->f_files = 1ULL << 24;
	sv->f_ffree = 1ULL << 23;
	sv->f_favail = 1ULL << 23;
	sv->f_namemax = XPROFS_NAME_MAX;
	if (ctx_get()->o->ro)
		sv->f_flag |= ST_RDONLY;
	(void)path;
	return 0;
}

static void *op_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	struct fs_ctx *ctx = ctx_get();

	/*
	 * Attributes and entries may be cached for 1 s (never longer than
	 * refresh); negative lookups are not cached so new files show up at
	 * once. Unlinked open files keep working (hard_remove: no .fuse_hidden).
	 */
	cfg->entry_timeout = ctx->refresh_ns < 1000000000LL ? 0 : 1.0;
	cfg->attr_timeout = cfg->entry_timeout;
	cfg->negative_timeout = 0;
	cfg->hard_remove = 1;
	cfg->nullpath_ok = 0;
	cfg->use_ino = 0;
	/* keep a logdir file's page cache across opens while its mtime and size are unchanged */
	cfg->auto_cache = 1;
	conn->max_readahead = 1 << 20;
	return ctx;
}

static const struct fuse_operations fs_ops = {
	.init = op_init,
	.getattr = op_getattr,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.releasedir = op_releasedir,
	.open = op_open,
	.create = op_create,
	.read = op_read,
	.write = op_write,
	.truncate = op_truncate,
	.flush = op_flush,
	.fsync = op_fsync,
	.release = op_release,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.mkdir = op_mkdir,
	.rename = op_rename,
	.chmod = op_chmod,
	.chown = op_chown,
	.utimens = op_utimens,
	.readlink = op_readlink,
	.symlink = op_symlink,
	.statfs = op_statfs,
};

const struct fuse_operations *fs_operations(void)
{
	return &fs_ops;
}
