/*
 * store/local-writer.c - writers of the local-directory backend.
 *
 * - Exclusive writers (XPROFS_STORE_EXCL, used for new profiles) write into
 *   an anonymous O_TMPFILE in the target directory and publish on commit
 *   with linkat(), which fails with EEXIST instead of replacing: an existing
 *   file is never overwritten and a half-written profile is never visible.
 *   Where O_TMPFILE is unsupported a hidden ".xprofs-tmp-*" file is linked
 *   then unlinked instead (list() hides that prefix).
 * - Other writers write IN PLACE (O_CREAT on the real file): this is what
 *   TensorBoard's cache files (.cached_tools.json, *.SSTABLE, ...) expect
 *   from a local filesystem (seeks, O_RDWR, visibility before close).
 *   commit() just closes; abort() removes the file only if this writer
 *   created it.
 *
 * Limits: no durability guarantee on commit() (no fsync; flush() does fsync).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store-internal.h"

struct local_writer {
	struct xprofs_store_writer base;
	int fd;
	int dirfd;     /* O_PATH of the parent; owned */
	char *name;    /* last component; owned */
	char *tmpname; /* EXCL fallback: hidden temp name in dirfd; owned */
	bool excl;     /* publish with linkat() on commit */
	bool tmpfile;  /* fd is an O_TMPFILE */
	bool created;  /* in-place writer created the file (abort removes it) */
	int mode;      /* exact mode of a file this writer creates; -1: 0644 under our umask */
};

static void writer_free(struct local_writer *w)
{
	if (w->fd >= 0)
		close(w->fd);
	if (w->dirfd >= 0)
		close(w->dirfd);
	free(w->name);
	free(w->tmpname);
	free(w);
}

/* excl_open() - the unpublished file of an exclusive writer. */
static int excl_open(struct local_writer *w)
{
	char tmp[64];
	unsigned i;

	w->fd = openat(w->dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0644);
	if (w->fd >= 0) {
		w->tmpfile = true;
		return w->mode >= 0 && fchmod(w->fd, (mode_t)w->mode) < 0 ? -errno : 0;
	}
	if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
		return -errno;
	for (i = 0; i < 100; i++) {
		snprintf(tmp, sizeof(tmp), "%s%ld-%08x", store_local_tmp_prefix, (long)getpid(),
			 (unsigned)random());
		w->fd = openat(w->dirfd, tmp, O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW | O_CLOEXEC,
			       0644);
		if (w->fd >= 0) {
			w->tmpname = strdup(tmp);
			if (!w->tmpname)
				return -ENOMEM;
			return w->mode >= 0 && fchmod(w->fd, (mode_t)w->mode) < 0 ? -errno : 0;
		}
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

/* inplace_open() - open the real file for writing, remembering whether we made it. */
static int inplace_open(struct local_writer *w, unsigned flags)
{
	int tr = (flags & XPROFS_STORE_TRUNC) ? O_TRUNC : 0;

	w->fd = openat(w->dirfd, w->name, O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (w->fd >= 0) {
		w->created = true;
		/* exactly the creator's mode, whatever our own umask is */
		return w->mode >= 0 && fchmod(w->fd, (mode_t)w->mode) < 0 ? -errno : 0;
	}
	if (errno != EEXIST)
		return -errno;
	w->fd = openat(w->dirfd, w->name, O_RDWR | O_NOFOLLOW | O_CLOEXEC | tr);
	if (w->fd < 0)
		return errno == ELOOP ? -EPERM : -errno;
	return 0;
}

int store_local_writer_new(struct xprofs_store *s, const char *path, unsigned flags,
			   struct xprofs_store_writer **out)
{
	struct local_store *ls = to_local(s);
	struct xprofs_store_stat xst;
	struct local_writer *w;
	const char *name;
	struct stat st;
	int r;

	CNT(ls, creates);
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->base.store = s;
	w->fd = -1;
	w->dirfd = -1;
	w->excl = flags & XPROFS_STORE_EXCL;
	w->mode = (flags & XPROFS_STORE_MODE) ? (int)XPROFS_STORE_MODE_OF(flags) : -1;
	r = store_local_mkparents(ls, path);
	if (r < 0)
		goto err;
	w->dirfd = store_local_parent_open(ls, path, &name);
	if (w->dirfd < 0) {
		r = w->dirfd;
		goto err;
	}
	w->name = strdup(name);
	if (!w->name) {
		r = -ENOMEM;
		goto err;
	}
	if (w->excl) {
		/* fail early; linkat() at commit is what makes it atomic */
		if (fstatat(w->dirfd, w->name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
			r = -EEXIST;
			goto err;
		}
		r = excl_open(w);
	} else {
		r = inplace_open(w, flags);
		if (r == 0 && fstat(w->fd, &st) == 0 && store_local_fill(&st, &xst) == 0 &&
		    xst.type != XPROFS_STORE_FILE)
			r = -EISDIR;
	}
	if (r < 0)
		goto err;
	*out = &w->base;
	return 0;

err:
	w->created = false;
	writer_free(w);
	return count_err(ls, r);
}

ssize_t store_local_writer_write(struct xprofs_store_writer *base, const void *buf, size_t n,
				 uint64_t off)
{
	struct local_writer *w = (struct local_writer *)base;
	struct local_store *ls = to_local(base->store);
	size_t done = 0;
	ssize_t r;

	CNT(ls, writes);
	while (done < n) {
		r = pwrite(w->fd, (const char *)buf + done, n - done, (off_t)(off + done));
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (done)
				break;
			return count_err(ls, -errno);
		}
		done += (size_t)r;
	}
	CNT_ADD(ls, bytes_written, done);
	return (ssize_t)done;
}

ssize_t store_local_writer_pread(struct xprofs_store_writer *base, void *buf, size_t n,
				 uint64_t off)
{
	struct local_writer *w = (struct local_writer *)base;

	return xprofs_pread_full(w->fd, buf, n, off);
}

int store_local_writer_truncate(struct xprofs_store_writer *base, uint64_t size)
{
	struct local_writer *w = (struct local_writer *)base;

	return ftruncate(w->fd, (off_t)size) < 0 ? -errno : 0;
}

int store_local_writer_flush(struct xprofs_store_writer *base)
{
	struct local_writer *w = (struct local_writer *)base;

	return fsync(w->fd) < 0 ? -errno : 0;
}

static int excl_publish(struct local_writer *w)
{
	char proc[64];

	if (w->tmpname) {
		if (linkat(w->dirfd, w->tmpname, w->dirfd, w->name, 0) < 0)
			return -errno;
		return 0;
	}
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", w->fd);
	if (linkat(AT_FDCWD, proc, w->dirfd, w->name, AT_SYMLINK_FOLLOW) == 0)
		return 0;
	if (errno != ENOENT)
		return -errno;
	/* no /proc: needs CAP_DAC_READ_SEARCH, the last resort */
	return linkat(w->fd, "", w->dirfd, w->name, AT_EMPTY_PATH) < 0 ? -errno : 0;
}

int store_local_writer_commit(struct xprofs_store_writer *base)
{
	struct local_writer *w = (struct local_writer *)base;
	struct local_store *ls = to_local(base->store);
	int r = 0;

	CNT(ls, commits);
	if (w->excl)
		r = excl_publish(w);
	if (w->tmpname)
		unlinkat(w->dirfd, w->tmpname, 0);
	if (close(w->fd) < 0 && r == 0)
		r = -EIO;
	w->fd = -1;
	writer_free(w);
	return count_err(ls, r);
}

void store_local_writer_abort(struct xprofs_store_writer *base)
{
	struct local_writer *w = (struct local_writer *)base;
	struct local_store *ls = to_local(base->store);

	CNT(ls, aborts);
	if (w->tmpname)
		unlinkat(w->dirfd, w->tmpname, 0);
	if (w->created)
		unlinkat(w->dirfd, w->name, 0);
	writer_free(w);
}
