/*
 * fs/memo.c - what the mount remembers about its generated files between
 * opens: the size of each rendered file (so getattr can report it without
 * a render) and the decode errors of each host (the text of its errors
 * file). No FUSE here.
 *
 * Design: both are small fixed tables in ctx->views (fs-internal.h),
 * keyed by a hash of what they are about; a new entry replaces whatever
 * shared its slot (sizes) or the oldest host (errors), so memory is
 * bounded and a forgotten size only costs a cache peek or a render. Error
 * text names the profile version it is about: a replaced profile starts
 * with an empty errors file.
 *
 * Locks: ctx->views.lock, held only around the table accesses.
 *
 * Limits: FS_SIZES sizes, FS_ERRHOSTS hosts x FS_ERRMAX bytes of errors.
 */
#include <stdlib.h>
#include <string.h>

#include "fs-internal.h"

uint64_t fs_version_key(const char *path, const struct xprofs_store_stat *st, const char *what)
{
	uint64_t v[4] = {xprofs_hash64(path, strlen(path)), st->size, (uint64_t)st->mtime_ns,
			 st->generation};
	uint64_t h = xprofs_hash64(v, sizeof(v));

	v[0] = h;
	v[1] = xprofs_hash64(what, strlen(what));
	return xprofs_hash64(v, 2 * sizeof(v[0])) | 1; /* never 0 */
}

bool fs_size_lookup(struct fs_ctx *ctx, uint64_t key, uint64_t *size)
{
	struct fs_views *v = &ctx->views;
	size_t i = key % FS_SIZES;
	bool found;

	pthread_mutex_lock(&v->lock);
	found = v->sizes_key[i] == key;
	if (found)
		*size = v->sizes_val[i];
	pthread_mutex_unlock(&v->lock);
	return found;
}

void fs_size_store(struct fs_ctx *ctx, uint64_t key, uint64_t size)
{
	struct fs_views *v = &ctx->views;
	size_t i = key % FS_SIZES;

	pthread_mutex_lock(&v->lock);
	v->sizes_key[i] = key;
	v->sizes_val[i] = size;
	pthread_mutex_unlock(&v->lock);
}

/*
 * fs_error_note() - remember @msg for host @hpath (its errors file) and log it.
 * @st: the profile version it is about (borrowed; NULL: none): the text of an
 * older version is dropped, so a replaced profile starts with an empty file.
 */
void fs_error_note(struct fs_ctx *ctx, const char *hpath, const struct xprofs_store_stat *st,
		   const char *what, const char *msg)
{
	struct fs_views *v = &ctx->views;
	uint64_t ver = st ? fs_version_key(hpath, st, "errors") : 0;
	struct fs_errors *e = NULL;
	size_t i;

	xprofs_err("%s: %s: %s", hpath, what, msg);
	pthread_mutex_lock(&v->lock);
	for (i = 0; i < FS_ERRHOSTS; i++)
		if (v->errors[i].path && !strcmp(v->errors[i].path, hpath))
			e = &v->errors[i];
	if (!e) {
		e = &v->errors[v->errors_next];
		v->errors_next = (v->errors_next + 1) % FS_ERRHOSTS;
		free(e->path);
		xprofs_buf_deinit(&e->text);
		xprofs_buf_init(&e->text, FS_ERRMAX);
		e->path = strdup(hpath);
	}
	if (e->ver != ver || e->text.len > FS_ERRMAX / 2)
		xprofs_buf_reset(&e->text);
	e->ver = ver;
	if (xprofs_buf_printf(&e->text, "%s: %s\n", what, msg) < 0)
		xprofs_buf_reset(&e->text);
	pthread_mutex_unlock(&v->lock);
}

/* fs_errors_snapshot() - append the errors of host @hpath at version @st to @out. */
int fs_errors_snapshot(struct fs_ctx *ctx, const char *hpath, const struct xprofs_store_stat *st,
		       struct xprofs_buf *out)
{
	struct fs_views *v = &ctx->views;
	uint64_t ver = fs_version_key(hpath, st, "errors");
	int r = 0;

	pthread_mutex_lock(&v->lock);
	for (size_t i = 0; i < FS_ERRHOSTS; i++)
		if (v->errors[i].path && !strcmp(v->errors[i].path, hpath) &&
		    v->errors[i].ver == ver && v->errors[i].text.len)
			r = xprofs_buf_add(out, v->errors[i].text.data, v->errors[i].text.len);
	pthread_mutex_unlock(&v->lock);
	return r;
}

void fs_memo_free(struct fs_views *v)
{
	for (size_t i = 0; i < FS_ERRHOSTS; i++) {
		free(v->errors[i].path);
		xprofs_buf_deinit(&v->errors[i].text);
	}
}
