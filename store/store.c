/*
 * store/store.c - the generic xprofs_store_*() wrappers over a backend's ops
 * table, plus the backend-independent helpers (path validation, the reader
 * seam over an open file).
 *
 * Design: the wrappers are thin on purpose. They validate paths once, here,
 * so no backend can be handed a path that escapes its root, and they turn a
 * missing op into -ENOTSUP instead of a NULL call. Readers and writers carry
 * their store (struct xprofs_store_reader / _writer, embedded first by the
 * backend), which is how the per-handle wrappers find the ops.
 *
 * Limits: paths are at most XPROFS_PATH_MAX bytes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "xprofs/store-backend.h"

bool xprofs_store_path_valid(const char *path)
{
	size_t len, i, comp = 0;

	if (!path)
		return false;
	len = strnlen(path, XPROFS_PATH_MAX + 1);
	if (len > XPROFS_PATH_MAX)
		return false;
	if (len == 0)
		return true; /* the root */
	if (path[0] == '/' || path[len - 1] == '/')
		return false;
	for (i = 0; i <= len; i++) {
		if (i < len && path[i] != '/')
			continue;
		/* component is path[comp .. i) */
		if (i == comp)
			return false; /* "//" */
		if (i - comp == 1 && path[comp] == '.')
			return false;
		if (i - comp == 2 && path[comp] == '.' && path[comp + 1] == '.')
			return false;
		if (i - comp > XPROFS_NAME_MAX)
			return false;
		comp = i + 1;
	}
	return true;
}

struct xprofs_store *xprofs_store_free(struct xprofs_store *s)
{
	if (s && s->ops && s->ops->free)
		s->ops->free(s);
	return NULL;
}

const char *xprofs_store_backend(const struct xprofs_store *s)
{
	return s && s->ops ? s->ops->backend : "none";
}

const char *xprofs_store_source(const struct xprofs_store *s)
{
	return s && s->source ? s->source : "";
}

int xprofs_store_stat(struct xprofs_store *s, const char *path, struct xprofs_store_stat *st)
{
	if (!xprofs_store_path_valid(path))
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	return s->ops->stat ? s->ops->stat(s, path, st) : -ENOTSUP;
}

int xprofs_store_lstat(struct xprofs_store *s, const char *path, struct xprofs_store_stat *st)
{
	if (!xprofs_store_path_valid(path))
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	if (s->ops->lstat)
		return s->ops->lstat(s, path, st);
	return s->ops->stat ? s->ops->stat(s, path, st) : -ENOTSUP;
}

int xprofs_store_readlink(struct xprofs_store *s, const char *path, char *buf, size_t size)
{
	if (!xprofs_store_path_valid(path) || !*path || !size)
		return -EINVAL;
	return s->ops->readlink ? s->ops->readlink(s, path, buf, size) : -EINVAL;
}

int xprofs_store_symlink(struct xprofs_store *s, const char *target, const char *path)
{
	if (!xprofs_store_path_valid(path) || !*path || !target || !*target ||
	    strnlen(target, XPROFS_PATH_MAX + 1) > XPROFS_PATH_MAX)
		return -EINVAL;
	return s->ops->symlink ? s->ops->symlink(s, target, path) : -EPERM;
}

int xprofs_store_setattr(struct xprofs_store *s, const char *path,
			 const struct xprofs_store_attr *a)
{
	if (!xprofs_store_path_valid(path))
		return -EINVAL;
	return s->ops->setattr ? s->ops->setattr(s, path, a) : -EPERM;
}

int xprofs_store_list(struct xprofs_store *s, const char *dir, xprofs_store_list_cb cb, void *arg)
{
	if (!xprofs_store_path_valid(dir))
		return -EINVAL;
	return s->ops->list ? s->ops->list(s, dir, cb, arg) : -ENOTSUP;
}

int xprofs_store_reader_open(struct xprofs_store *s, const char *path,
			     struct xprofs_store_reader **out)
{
	if (!xprofs_store_path_valid(path) || !*path)
		return -EINVAL;
	return s->ops->open ? s->ops->open(s, path, out) : -ENOTSUP;
}

ssize_t xprofs_store_reader_pread(struct xprofs_store_reader *f, void *buf, size_t n, uint64_t off)
{
	if (off > INT64_MAX)
		return -EINVAL;
	return f->store->ops->pread(f, buf, n, off);
}

int xprofs_store_reader_stat(struct xprofs_store_reader *f, struct xprofs_store_stat *st)
{
	return f->store->ops->file_stat(f, st);
}

void xprofs_store_reader_close(struct xprofs_store_reader *f)
{
	if (f)
		f->store->ops->close(f);
}

static ssize_t file_reader_pread(void *arg, void *buf, size_t n, uint64_t off)
{
	return xprofs_store_reader_pread(arg, buf, n, off);
}

int xprofs_store_reader_as_reader(struct xprofs_store_reader *f, struct xprofs_reader *out)
{
	struct xprofs_store_stat st;
	int r;

	r = xprofs_store_reader_stat(f, &st);
	if (r < 0)
		return r;
	memset(out, 0, sizeof(*out));
	out->pread = file_reader_pread;
	out->arg = f;
	out->size = st.size;
	return 0;
}

int xprofs_store_writer_new(struct xprofs_store *s, const char *path, unsigned flags,
			    struct xprofs_store_writer **out)
{
	if (!xprofs_store_path_valid(path) || !*path)
		return -EINVAL;
	if (flags &
	    ~(unsigned)(XPROFS_STORE_EXCL | XPROFS_STORE_TRUNC | XPROFS_STORE_WITH_MODE(07777)))
		return -EINVAL;
	return s->ops->create ? s->ops->create(s, path, flags, out) : -EROFS;
}

ssize_t xprofs_store_writer_write(struct xprofs_store_writer *w, const void *buf, size_t n,
				  uint64_t off)
{
	if (off > INT64_MAX || n > INT64_MAX - off)
		return -EFBIG;
	return w->store->ops->write(w, buf, n, off);
}

ssize_t xprofs_store_writer_pread(struct xprofs_store_writer *w, void *buf, size_t n, uint64_t off)
{
	if (off > INT64_MAX)
		return -EINVAL;
	return w->store->ops->wread ? w->store->ops->wread(w, buf, n, off) : -ENOTSUP;
}

int xprofs_store_writer_truncate(struct xprofs_store_writer *w, uint64_t size)
{
	if (size > INT64_MAX)
		return -EFBIG;
	return w->store->ops->truncate ? w->store->ops->truncate(w, size) : -ENOTSUP;
}

int xprofs_store_writer_flush(struct xprofs_store_writer *w)
{
	return w->store->ops->flush ? w->store->ops->flush(w) : 0;
}

int xprofs_store_writer_commit(struct xprofs_store_writer *w)
{
	return w->store->ops->commit(w);
}

void xprofs_store_writer_abort(struct xprofs_store_writer *w)
{
	if (w)
		w->store->ops->abort(w);
}

int xprofs_store_unlink(struct xprofs_store *s, const char *path)
{
	if (!xprofs_store_path_valid(path) || !*path)
		return -EINVAL;
	return s->ops->unlink ? s->ops->unlink(s, path) : -EROFS;
}

int xprofs_store_rename(struct xprofs_store *s, const char *from, const char *to)
{
	if (!xprofs_store_path_valid(from) || !*from || !xprofs_store_path_valid(to) || !*to)
		return -EINVAL;
	return s->ops->rename ? s->ops->rename(s, from, to) : -EROFS;
}

int xprofs_store_mkdir(struct xprofs_store *s, const char *path)
{
	if (!xprofs_store_path_valid(path) || !*path)
		return -EINVAL;
	return s->ops->mkdir ? s->ops->mkdir(s, path) : -EROFS;
}

int xprofs_store_mkdir_mode(struct xprofs_store *s, const char *path, uint32_t mode)
{
	if (!xprofs_store_path_valid(path) || !*path || (mode & ~07777u))
		return -EINVAL;
	if (s->ops->mkdir_mode)
		return s->ops->mkdir_mode(s, path, mode);
	return s->ops->mkdir ? s->ops->mkdir(s, path) : -EROFS;
}

int xprofs_store_rmdir(struct xprofs_store *s, const char *path)
{
	if (!xprofs_store_path_valid(path) || !*path)
		return -EINVAL;
	return s->ops->rmdir ? s->ops->rmdir(s, path) : -EROFS;
}

int xprofs_store_writable(struct xprofs_store *s, const char *path)
{
	if (!xprofs_store_path_valid(path) || !*path)
		return -EINVAL;
	return s->ops->writable ? s->ops->writable(s, path) : 0;
}

int xprofs_store_refresh(struct xprofs_store *s)
{
	return s->ops->refresh ? s->ops->refresh(s) : 0;
}

int xprofs_store_status_json(struct xprofs_store *s, struct xprofs_buf *out)
{
	if (s->ops->status_json)
		return s->ops->status_json(s, out);
	return xprofs_buf_adds(out, "{}");
}
