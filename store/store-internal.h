/*
 * store-internal.h - what the local backend's files share: store/local.c
 * (the store object, stat/list/readers and namespace operations) calls
 * store/local-writer.c (writers: exclusive publish with linkat(), in-place
 * writes, the start-up sweep of staging directories), and both call
 * store/local-path.c (path resolution beneath the root). Not part of the
 * public API.
 */
#ifndef XPROFS_STORE_INTERNAL_H
#define XPROFS_STORE_INTERNAL_H

#include <stdint.h>
#include <sys/stat.h>

#include "xprofs/store-backend.h"

struct local_counters {
	uint64_t stats, lists, opens, preads, bytes_read;
	uint64_t creates, writes, bytes_written, commits, aborts;
	uint64_t unlinks, renames, mkdirs, rmdirs, errors;
};

struct local_store {
	struct xprofs_store base; /* first: the wrappers cast */
	int rootfd;
	char *root;
	int no_openat2;     /* set once openat2 proved unavailable; relaxed atomic */
	int follow_outside; /* follow symlinks out of the root (xprofs_store_local_follow_outside()) */
	struct local_counters c;
};

#define CNT(ls, field) __atomic_add_fetch(&(ls)->c.field, 1, __ATOMIC_RELAXED)
#define CNT_ADD(ls, field, n) __atomic_add_fetch(&(ls)->c.field, (n), __ATOMIC_RELAXED)

/*
 * The hidden prefix of the exclusive writers' fallback temp files and
 * staging directories (local-writer.c); local.c hides these names.
 */
#define STORE_LOCAL_TMP_PREFIX ".xprofs-tmp-"

/* Small enough to inline; kept under the names local.c always used. */
static inline struct local_store *to_local(struct xprofs_store *s)
{
	return (struct local_store *)s;
}

/* count_err() - counts @r as an error unless it is 0 or -ENOENT; returns @r. */
static inline int count_err(struct local_store *ls, int r)
{
	if (r < 0 && r != -ENOENT)
		CNT(ls, errors);
	return r;
}

/* ---- path resolution beneath the root (local-path.c) ---- */

/**
 * store_local_resolve() - open @path (valid, relative; "" = the root) below
 * the root with @flags (and @mode for O_CREAT). An fd the caller closes, or
 * -errno; a lookup that would escape the root reads as -ENOENT.
 */
int store_local_resolve(struct local_store *ls, const char *path, int flags, mode_t mode);
/**
 * store_local_parent_open() - O_PATH fd of @path's parent directory (caller
 * closes) and, in *@name, a pointer into @path (borrowed) at the last component.
 */
int store_local_parent_open(struct local_store *ls, const char *path, const char **name);
/** store_local_mkparents() - create the directories above @path (mode 0755). */
int store_local_mkparents(struct local_store *ls, const char *path);
/**
 * store_local_ancestor_open() - O_PATH fd (caller closes) of the deepest
 * existing directory among @dir and its parents; *@len: the length of its
 * path, a prefix of @dir (0: the root). -errno other than a missing one.
 */
int store_local_ancestor_open(struct local_store *ls, const char *dir, size_t *len);

/* ---- writers and their staging directories (local-writer.c) ---- */

/**
 * store_local_sweep() - remove the staging directories (STAGE_PREFIX,
 * holding the STAGE_MARKER file with its exact text, older than a minute)
 * that a writer killed while publishing left in the root; nothing else.
 */
void store_local_sweep(struct local_store *ls);

/* The writer ops; see struct xprofs_store_ops. */
int store_local_writer_new(struct xprofs_store *s, const char *path, unsigned flags,
			   struct xprofs_store_writer **out);
ssize_t store_local_writer_write(struct xprofs_store_writer *base, const void *buf, size_t n,
				 uint64_t off);
ssize_t store_local_writer_pread(struct xprofs_store_writer *base, void *buf, size_t n,
				 uint64_t off);
int store_local_writer_truncate(struct xprofs_store_writer *base, uint64_t size);
int store_local_writer_flush(struct xprofs_store_writer *base);
int store_local_writer_commit(struct xprofs_store_writer *base);
void store_local_writer_abort(struct xprofs_store_writer *base);

#endif
