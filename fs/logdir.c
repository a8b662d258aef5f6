/*
 * fs/logdir.c - writes under MOUNT/logdir/: writer handles over store
 * writers, the no-overwrite rule for profiles, and when data is uploaded.
 * No FUSE here; ops.c maps the handlers onto these calls.
 *
 * Design:
 * - An existing "*.xplane.pb" cannot be opened for writing or truncated
 *   (EPERM); a new one is created with XPROFS_STORE_EXCL (visible when
 *   closed). Other files are written in place (local) or uploaded (gs://).
 * - Uploads happen in flush (every close() of a descriptor, and fsync()),
 *   not in release: FUSE ignores release's result, so an upload failing
 *   there would be lost silently; a failing flush is close()'s error. A
 *   local store writes in place, so its flush has nothing to publish
 *   (fsync() still syncs), except a new profile, which a flush links in
 *   (EEXIST when a file of that name appeared meanwhile). Release commits
 *   only what changed after the last flush.
 *
 * Locks: a writer handle's fh->lock serialises its store writer (backends
 * need not be thread-safe per writer); store calls are made under it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "fs-internal.h"

int fs_logdir_writer(struct fs_ctx *ctx, const char *sp, bool create, int flags, mode_t mode,
		     struct fs_fh **out)
{
	const char *base = strrchr(sp, '/');
	struct xprofs_store_stat st;
	struct fs_fh *fh;
	unsigned sflags = 0;
	bool exists;
	int r;

	if (ctx->o->ro)
		return -EROFS;
	if (!*sp)
		return -EISDIR;
	base = base ? base + 1 : sp;
	r = xprofs_store_stat(ctx->store, sp, &st);
	if (r < 0 && r != -ENOENT)
		return r;
	exists = r == 0;
	if (exists && st.type == XPROFS_STORE_DIR)
		return -EISDIR;
	if (exists && create && (flags & O_EXCL))
		return -EEXIST;
	if (fs_is_profile_name(base)) {
		if (exists)
			return -EPERM; /* never overwrite a profile */
		sflags |= XPROFS_STORE_EXCL;
	} else if (flags & O_TRUNC) {
		sflags |= XPROFS_STORE_TRUNC;
	}
	if (!exists && !create)
		return -ENOENT;
	if (!exists)
		sflags |= XPROFS_STORE_WITH_MODE(mode);
	fh = fs_fh_new(FS_FH_WRITER);
	if (!fh)
		return -ENOMEM;
	fh->spath = strdup(sp);
	r = fh->spath ? xprofs_store_writer_new(ctx->store, sp, sflags, &fh->w) : -ENOMEM;
	if (r < 0) {
		fs_fh_free(fh);
		return r;
	}
	fh->profile = sflags & XPROFS_STORE_EXCL;
	fh->mode = exists ? 0 : mode & 07777;
	fh->wsize = exists && !(sflags & XPROFS_STORE_TRUNC) ? st.size : 0;
	*out = fh;
	return 0;
}

/*
 * writer_need() - @fh's store writer, reopened after a flush published a new
 * local profile (a later write through another descriptor of the same open
 * goes on in place in the published file, as on gs:// where each close()
 * uploads what is there so far). Caller holds @fh->lock. 0 or -errno.
 */
static int writer_need(struct fs_ctx *ctx, struct fs_fh *fh)
{
	int r;

	if (fh->w)
		return 0;
	if (!fh->published)
		return fh->publish_err ? fh->publish_err : -EBADF;
	r = xprofs_store_writer_new(ctx->store, fh->spath, 0, &fh->w);
	if (r == 0)
		fh->profile = false;
	return r;
}

ssize_t fs_writer_read(struct fs_ctx *ctx, struct fs_fh *fh, void *buf, size_t n, uint64_t off)
{
	ssize_t r;

	pthread_mutex_lock(&fh->lock);
	r = writer_need(ctx, fh);
	if (r == 0)
		r = xprofs_store_writer_pread(fh->w, buf, n, off);
	pthread_mutex_unlock(&fh->lock);
	return r;
}

ssize_t fs_writer_write(struct fs_ctx *ctx, struct fs_fh *fh, const void *buf, size_t n,
			uint64_t off)
{
	ssize_t r;

	pthread_mutex_lock(&fh->lock);
	r = writer_need(ctx, fh);
	if (r == 0)
		r = xprofs_store_writer_write(fh->w, buf, n, off);
	if (r > 0 && off + (uint64_t)r > fh->wsize)
		fh->wsize = off + (uint64_t)r;
	if (r > 0)
		fh->dirty = true;
	pthread_mutex_unlock(&fh->lock);
	return r;
}

int fs_writer_truncate(struct fs_ctx *ctx, struct fs_fh *fh, uint64_t size)
{
	int r;

	pthread_mutex_lock(&fh->lock);
	r = writer_need(ctx, fh);
	if (r == 0)
		r = xprofs_store_writer_truncate(fh->w, size);
	if (r == 0) {
		fh->wsize = size;
		fh->dirty = true;
	}
	pthread_mutex_unlock(&fh->lock);
	return r;
}

int fs_logdir_truncate(struct fs_ctx *ctx, const char *sp, uint64_t size)
{
	struct fs_fh *fh;
	int r;

	r = fs_logdir_writer(ctx, sp, false, O_WRONLY, 0, &fh);
	if (r < 0)
		return r;
	r = xprofs_store_writer_truncate(fh->w, size);
	if (r == 0) {
		r = xprofs_store_writer_commit(fh->w);
		fh->w = NULL;
	}
	fs_fh_free(fh);
	return r;
}

/* uploads_on_commit() - the store uploads on commit (gs://), rather than writing in place. */
static bool uploads_on_commit(struct fs_ctx *ctx)
{
	return !fs_store_is_local(ctx);
}

/* fs_writer_fsync() clears dirty even on failure: the caller reports it. */
int fs_writer_fsync(struct fs_fh *fh, const char *path)
{
	int r;

	pthread_mutex_lock(&fh->lock);
	r = fh->w ? xprofs_store_writer_flush(fh->w) : fh->publish_err;
	fh->dirty = false;
	pthread_mutex_unlock(&fh->lock);
	if (r < 0)
		xprofs_err("%s: flush/upload failed: %s", path ? path : "?", strerror(-r));
	return r;
}

int fs_writer_flush(struct fs_ctx *ctx, struct fs_fh *fh, const char *path)
{
	int r;

	if (uploads_on_commit(ctx))
		return fs_writer_fsync(fh, path);
	pthread_mutex_lock(&fh->lock);
	if (!fh->profile || !fh->w) {
		pthread_mutex_unlock(&fh->lock);
		return 0;
	}
	r = xprofs_store_writer_commit(fh->w); /* the exclusive link; consumes the writer */
	fh->w = NULL;
	fh->published = r == 0;
	fh->publish_err = r;
	fh->dirty = false;
	pthread_mutex_unlock(&fh->lock);
	fs_invalidate_index(ctx);
	if (r < 0)
		xprofs_err("%s: new profile not published: %s", path ? path : "?", strerror(-r));
	return r;
}

/*
 * Remote writers commit only what changed since the last flush (normally
 * nothing: close() flushed); a writer whose last flush failed was reported to
 * close() and is not retried here, so fs_fh_free() discards it. Local writers
 * always commit (close the file; a new profile normally was published by its
 * flush already).
 */
void fs_writer_release(struct fs_ctx *ctx, struct fs_fh *fh, const char *path)
{
	int r;

	if (fh->w && (!uploads_on_commit(ctx) || fh->dirty)) {
		r = xprofs_store_writer_commit(fh->w);
		fh->w = NULL;
		if (r < 0)
			xprofs_err("%s: commit failed: %s", path ? path : "?", strerror(-r));
	}
	fs_invalidate_index(ctx);
}
