/*
 * xprofs/store-backend.h - what a store backend implements: the ops table
 * behind the xprofs_store_*() wrappers of xprofs/store.h, and the structs a
 * backend embeds. Only backends (store/local.c, gcs/) and test doubles
 * include this; callers of the store need only xprofs/store.h.
 *
 * A backend embeds struct xprofs_store as the FIRST member of its own store
 * struct and points .ops at a static table; likewise its reader and writer
 * structs embed struct xprofs_store_reader / xprofs_store_writer first, with
 * .store set, so the generic wrappers find the ops. A NULL namespace op
 * makes its wrapper return -ENOTSUP (a NULL create: -EROFS); the per-handle
 * ops (pread, file_stat, close, write, ...) are required. Every op keeps
 * the rules listed in store.h.
 */
#ifndef XPROFS_STORE_BACKEND_H
#define XPROFS_STORE_BACKEND_H

#include "xprofs/store.h"

/* An open reader / writer, embedded first in the backend's own struct. */
struct xprofs_store_reader {
	struct xprofs_store *store; /* borrowed; outlives the reader */
};
struct xprofs_store_writer {
	struct xprofs_store *store; /* borrowed; outlives the writer */
};

/*
 * The ops: each implements the wrapper of the same job in store.h.
 * open/pread/file_stat/close serve xprofs_store_reader_open/_pread/_stat/
 * _close; create/write/wread/truncate/flush/commit/abort serve
 * xprofs_store_writer_new/_write/_pread/_truncate/_flush/_commit/_abort.
 * Paths are already validated (xprofs_store_path_valid()) when an op runs.
 */
struct xprofs_store_ops {
	const char *backend; /* "local", "gcs" */
	int (*stat)(struct xprofs_store *s, const char *path, struct xprofs_store_stat *st);
	int (*list)(struct xprofs_store *s, const char *dir, xprofs_store_list_cb cb, void *arg);
	int (*open)(struct xprofs_store *s, const char *path, struct xprofs_store_reader **out);
	ssize_t (*pread)(struct xprofs_store_reader *f, void *buf, size_t n, uint64_t off);
	int (*file_stat)(struct xprofs_store_reader *f, struct xprofs_store_stat *st);
	void (*close)(struct xprofs_store_reader *f);
	int (*create)(struct xprofs_store *s, const char *path, unsigned flags,
		      struct xprofs_store_writer **out);
	ssize_t (*write)(struct xprofs_store_writer *w, const void *buf, size_t n, uint64_t off);
	ssize_t (*wread)(struct xprofs_store_writer *w, void *buf, size_t n, uint64_t off);
	int (*truncate)(struct xprofs_store_writer *w, uint64_t size);
	int (*flush)(
		struct xprofs_store_writer *w); /* make data durable so far (fsync); may upload */
	int (*commit)(struct xprofs_store_writer *w); /* publish and free */
	void (*abort)(struct xprofs_store_writer *w); /* discard and free */
	int (*unlink)(struct xprofs_store *s, const char *path);
	int (*rename)(struct xprofs_store *s, const char *from, const char *to);
	int (*mkdir)(struct xprofs_store *s, const char *path);
	int (*rmdir)(struct xprofs_store *s, const char *path);
	/* optional (NULL: see store.h): modes, symlinks, attributes */
	int (*mkdir_mode)(struct xprofs_store *s, const char *path, uint32_t mode);
	int (*lstat)(struct xprofs_store *s, const char *path, struct xprofs_store_stat *st);
	int (*readlink)(struct xprofs_store *s, const char *path, char *buf, size_t size);
	int (*symlink)(struct xprofs_store *s, const char *target, const char *path);
	int (*setattr)(struct xprofs_store *s, const char *path, const struct xprofs_store_attr *a);
	int (*refresh)(struct xprofs_store
			       *s); /* drop listing caches so the next list() sees the source */
	int (*status_json)(struct xprofs_store *s,
			   struct xprofs_buf *out); /* appends one JSON object */
	void (*free)(struct xprofs_store *s);
	/* may a file be created at path? 0, -EROFS, -EACCES; NULL: cannot tell (0) */
	int (*writable)(struct xprofs_store *s, const char *path);
};

struct xprofs_store {
	const struct xprofs_store_ops *ops;
	char *source; /* as given by the user, e.g. "/data/logs" or "gs://b/p"; owned */
};

#endif
