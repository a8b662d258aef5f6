/*
 * xprofs/store.h - the storage interface behind the mount: a log directory as
 * a tree of files addressed by '/'-separated paths relative to its root
 * ("" is the root itself; no leading or trailing '/', no "." or ".."
 * components: callers pass only names they got from list() or from FUSE).
 *
 * Two backends serve it: the local directory backend here (store/local.c)
 * and the GCS backend (gcs/, xprofs_gcs_store_new()). Backends implement
 * the ops table of xprofs/store-backend.h; callers use only the
 * xprofs_store_*() wrappers declared here. Vocabulary: a reader is opened,
 * read with pread, stat'ed and closed (xprofs_store_reader_*); a writer is
 * made with _new, written, read back with pread, truncated, flushed and
 * ended by exactly one of commit or abort (xprofs_store_writer_*).
 * docs/store.md describes the backends and the path rules.
 *
 * Rules every backend keeps:
 * - All operations are thread-safe (FUSE runs them from a thread pool).
 * - Errors are -errno: -ENOENT for a vanished object (never a crash),
 *   -EEXIST for an exclusive create that lost, -ESTALE for an object that
 *   changed under an open reader, -EIO for what nothing better describes.
 * - A reader is pinned to the version it opened (local: the open fd;
 *   GCS: the generation), so a read never splices two versions.
 * - A writer's data is durable only after commit() returned 0; commit()
 *   reports upload failures. abort() discards.
 * - The store never refuses to overwrite by itself: the no-overwrite policy
 *   for *.xplane.pb lives in fs/, and profile creation uses
 *   XPROFS_STORE_EXCL, which is atomic in both backends.
 */
#ifndef XPROFS_STORE_H
#define XPROFS_STORE_H

#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "xprofs/util.h"

/*
 * Path limits, the one definition for the stores and fs/: a store path is at
 * most XPROFS_PATH_MAX bytes, each '/'-separated name at most XPROFS_NAME_MAX.
 * They are Linux's PATH_MAX and NAME_MAX: the kernel hands FUSE no longer
 * names, a local store must be able to open what it lists, and GCS object
 * names (at most 1024 bytes) fit.
 */
#define XPROFS_PATH_MAX 4096
#define XPROFS_NAME_MAX 255

enum xprofs_store_type {
	XPROFS_STORE_FILE = 1,
	XPROFS_STORE_DIR = 2,
	/*
	 * A symbolic link seen as itself: from xprofs_store_lstat(), and from
	 * list() for a link the store does not follow (dangling, a loop, or
	 * leading out of the root where that is not allowed).
	 */
	XPROFS_STORE_LINK = 3,
};

struct xprofs_store_stat {
	int type;         /* enum xprofs_store_type */
	uint64_t size;    /* bytes; 0 for directories */
	int64_t mtime_ns; /* ns since the epoch */
	uint64_t
		generation; /* GCS generation; local: a value that changes when the file is replaced */
	/* Owners, modes and times where the backend has them (local); gs:// leaves them 0. */
	uint32_t mode;              /* permission bits (07777); 0: the backend has no modes */
	uint32_t uid, gid;          /* owners (valid when mode != 0) */
	int64_t atime_ns, ctime_ns; /* 0: unknown */
	uint64_t fileid;            /* which object (local: device + inode); 0: unknown */
	bool link; /* list(): the entry is a symlink (followed when type != LINK) */
};

/*
 * What xprofs_store_setattr() changes (local backend only): each XPROFS_ATTR_*
 * bit in @valid selects a field; times take UTIME_NOW / UTIME_OMIT in tv_nsec.
 */
#define XPROFS_ATTR_MODE 0x1
#define XPROFS_ATTR_UID 0x2
#define XPROFS_ATTR_GID 0x4
#define XPROFS_ATTR_TIMES 0x8
struct xprofs_store_attr {
	unsigned valid;
	uint32_t mode, uid, gid;
	struct timespec times[2]; /* atime, mtime as utimensat() takes them */
};

/* Flags for xprofs_store_writer_new(). */
#define XPROFS_STORE_EXCL 0x1 /* fail with -EEXIST if the path exists (GCS: ifGenerationMatch=0) */
#define XPROFS_STORE_TRUNC                                                                         \
	0x2 /* start empty even if the file exists; otherwise start from its content */
/*
 * XPROFS_STORE_WITH_MODE(m): a file this writer creates gets exactly the
 * permission bits @m (local; backends without modes ignore it).
 */
#define XPROFS_STORE_MODE 0x4
#define XPROFS_STORE_WITH_MODE(m) (XPROFS_STORE_MODE | (((unsigned)(m)&07777u) << 16))
#define XPROFS_STORE_MODE_OF(flags) (((flags) >> 16) & 07777u)

/*
 * list() callback: @name is one directory entry (borrowed, valid during the
 * call). Return 0 to go on, non-zero to stop (the value is returned by
 * xprofs_store_list()).
 */
typedef int (*xprofs_store_list_cb)(void *arg, const char *name,
				    const struct xprofs_store_stat *st);

struct xprofs_store;

/*
 * An open reader / writer; opaque to callers. Backends define them through
 * xprofs/store-backend.h.
 */
struct xprofs_store_reader;
struct xprofs_store_writer;

/**
 * xprofs_store_local_new() - a store over the local directory @root.
 * @root: borrowed (duplicated). Must be an existing, readable directory:
 *        -ENOENT / -ENOTDIR / -EACCES otherwise.
 * @out:  written on success only; caller owns, free with xprofs_store_free().
 */
int xprofs_store_local_new(const char *root, struct xprofs_store **out) XPROFS_WUR;

/** xprofs_store_free() - accepts NULL; returns NULL. */
struct xprofs_store *xprofs_store_free(struct xprofs_store *s);

const char *xprofs_store_backend(const struct xprofs_store *s);
const char *xprofs_store_source(const struct xprofs_store *s);

int xprofs_store_stat(struct xprofs_store *s, const char *path,
		      struct xprofs_store_stat *st) XPROFS_WUR;
int xprofs_store_list(struct xprofs_store *s, const char *dir, xprofs_store_list_cb cb,
		      void *arg) XPROFS_WUR;

/**
 * xprofs_store_reader_open() - open @path for reading; caller owns *@out,
 * close with xprofs_store_reader_close().
 */
int xprofs_store_reader_open(struct xprofs_store *s, const char *path,
			     struct xprofs_store_reader **out) XPROFS_WUR;
ssize_t xprofs_store_reader_pread(struct xprofs_store_reader *f, void *buf, size_t n, uint64_t off);
/** xprofs_store_reader_stat() - the pinned version's size/mtime/generation. */
int xprofs_store_reader_stat(struct xprofs_store_reader *f, struct xprofs_store_stat *st);
/** xprofs_store_reader_close() - accepts NULL. */
void xprofs_store_reader_close(struct xprofs_store_reader *f);
/**
 * xprofs_store_reader_as_reader() - a struct xprofs_reader over @f (borrowed: @f
 * must stay open while the reader is used).
 */
int xprofs_store_reader_as_reader(struct xprofs_store_reader *f, struct xprofs_reader *out);

/**
 * xprofs_store_writer_new() - open a writer for @path (parents are created as
 * needed). @flags: XPROFS_STORE_EXCL, XPROFS_STORE_TRUNC. Caller owns *@out
 * and must end it with exactly one of commit() or abort().
 */
int xprofs_store_writer_new(struct xprofs_store *s, const char *path, unsigned flags,
			    struct xprofs_store_writer **out) XPROFS_WUR;
ssize_t xprofs_store_writer_write(struct xprofs_store_writer *w, const void *buf, size_t n,
				  uint64_t off);
/** xprofs_store_writer_pread() - read back what the writer holds (for O_RDWR opens). */
ssize_t xprofs_store_writer_pread(struct xprofs_store_writer *w, void *buf, size_t n, uint64_t off);
int xprofs_store_writer_truncate(struct xprofs_store_writer *w, uint64_t size);
int xprofs_store_writer_flush(struct xprofs_store_writer *w);
/** xprofs_store_writer_commit() - publish and free @w (consumed, whatever the result). */
int xprofs_store_writer_commit(struct xprofs_store_writer *w);
/** xprofs_store_writer_abort() - discard and free @w (consumed); accepts NULL. */
void xprofs_store_writer_abort(struct xprofs_store_writer *w);

int xprofs_store_unlink(struct xprofs_store *s, const char *path) XPROFS_WUR;
int xprofs_store_rename(struct xprofs_store *s, const char *from, const char *to) XPROFS_WUR;
int xprofs_store_mkdir(struct xprofs_store *s, const char *path) XPROFS_WUR;
/**
 * xprofs_store_writable() - could a writer create @path now? Checks what a
 * backend can tell cheaply (local: the deepest existing parent directory's
 * filesystem is not read-only and is writable by us). 0 (also when the
 * backend cannot tell), -EROFS, -EACCES, or another -errno.
 */
int xprofs_store_writable(struct xprofs_store *s, const char *path) XPROFS_WUR;
int xprofs_store_rmdir(struct xprofs_store *s, const char *path) XPROFS_WUR;
/** xprofs_store_mkdir_mode() - mkdir with exactly the permission bits @mode (where modes exist). */
int xprofs_store_mkdir_mode(struct xprofs_store *s, const char *path, uint32_t mode) XPROFS_WUR;

/*
 * Symlinks and attributes. stat() and list() follow symlinks (inside the
 * root, or anywhere after xprofs_store_local_follow_outside()); lstat()
 * reports a symlink at @path itself (type XPROFS_STORE_LINK, size = length of
 * its target). Backends without symlinks (gs://): lstat() is stat(),
 * readlink() -EINVAL, symlink() and setattr() -EPERM.
 */
int xprofs_store_lstat(struct xprofs_store *s, const char *path,
		       struct xprofs_store_stat *st) XPROFS_WUR;
/** xprofs_store_readlink() - @path's target into @buf (NUL-terminated); its length or -errno. */
int xprofs_store_readlink(struct xprofs_store *s, const char *path, char *buf,
			  size_t size) XPROFS_WUR;
/** xprofs_store_symlink() - create the symlink @path pointing at @target (borrowed). */
int xprofs_store_symlink(struct xprofs_store *s, const char *target, const char *path) XPROFS_WUR;
/** xprofs_store_setattr() - change what @a selects on @path itself (never through a symlink). */
int xprofs_store_setattr(struct xprofs_store *s, const char *path,
			 const struct xprofs_store_attr *a) XPROFS_WUR;
/**
 * xprofs_store_local_follow_outside() - let a local store follow symlinks
 * that lead out of its root (stat, list, readers). Off by default: then a
 * link out of the root reads as a link (lstat/list) and is not followed.
 * -EINVAL for a store that is not local.
 */
int xprofs_store_local_follow_outside(struct xprofs_store *s, bool on);
int xprofs_store_refresh(struct xprofs_store *s);
/** xprofs_store_status_json() - append the backend's counters as one JSON object to @out. */
int xprofs_store_status_json(struct xprofs_store *s, struct xprofs_buf *out);

/**
 * xprofs_store_path_valid() - true when @path is a clean relative path: no
 * leading/trailing/double '/', no "." or ".." component, no NUL, length <= 4096.
 */
bool xprofs_store_path_valid(const char *path);

#endif
