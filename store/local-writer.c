/*
 * store/local-writer.c - writers of the local-directory backend.
 *
 * - Exclusive writers (XPROFS_STORE_EXCL, used for new profiles) write into
 *   an anonymous O_TMPFILE in the target directory and publish on commit
 *   with linkat(), which fails with EEXIST instead of replacing: an existing
 *   file is never overwritten and a half-written profile is never visible.
 *   When the target's parents do not exist yet, nothing is created before
 *   the commit: the file lives in the deepest existing ancestor, and the
 *   commit builds the missing directories in a marked staging directory in
 *   the root and renames them into place (stage_publish()). The leftovers
 *   of a daemon killed right then are swept at the next start-up by
 *   store_local_sweep(), at the end of this file: the staging directories'
 *   format (name, marker) is known here alone.
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
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store-internal.h"

#define STAGE_PREFIX STORE_LOCAL_TMP_PREFIX "stage-"
#define STAGE_MARKER ".xprofs-staging"
#define STAGE_MARKER_TEXT "xprofs staging directory: removed by xprofs at start-up if left behind\n"
#define STAGE_MIN_AGE_S 60 /* a live publish takes microseconds; another mount's is spared */

struct local_writer {
	struct xprofs_store_writer base;
	int fd;
	int dirfd;     /* O_PATH of the parent (EXCL: of its deepest existing ancestor); owned */
	char *name;    /* last component; owned */
	char *path;    /* EXCL: the whole store path; owned */
	char *missing; /* EXCL: parents that did not exist at new(), below dirfd; owned */
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
	free(w->path);
	free(w->missing);
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
		snprintf(tmp, sizeof(tmp), "%s%ld-%08x", STORE_LOCAL_TMP_PREFIX, (long)getpid(),
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

/*
 * excl_new() - an exclusive writer of @path: its data goes to an anonymous
 * file in the parent directory or, when that does not exist yet, in its
 * deepest existing ancestor, so nothing is created in the store before the
 * commit (a capture that gets no data, or a daemon killed midway, leaves
 * no empty directories).
 */
static int excl_new(struct local_store *ls, struct local_writer *w, const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[XPROFS_PATH_MAX + 1];
	size_t n = slash ? (size_t)(slash - path) : 0, len;
	struct stat st;

	if (n > XPROFS_PATH_MAX)
		return -ENAMETOOLONG;
	memcpy(dir, path, n);
	dir[n] = '\0';
	w->name = strdup(slash ? slash + 1 : path);
	w->path = strdup(path);
	if (!w->name || !w->path)
		return -ENOMEM;
	w->dirfd = store_local_ancestor_open(ls, dir, &len);
	if (w->dirfd < 0)
		return w->dirfd;
	if (len < n) {
		w->missing = strdup(dir + len + (len ? 1 : 0));
		if (!w->missing)
			return -ENOMEM;
	} else if (fstatat(w->dirfd, w->name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		return -EEXIST; /* fail early; linkat() at commit is what makes it atomic */
	}
	return excl_open(w);
}

int store_local_writer_new(struct xprofs_store *s, const char *path, unsigned flags,
			   struct xprofs_store_writer **out)
{
	struct local_store *ls = to_local(s);
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
	if (w->excl) {
		r = excl_new(ls, w, path);
	} else {
		r = store_local_mkparents(ls, path);
		if (r == 0)
			w->dirfd = store_local_parent_open(ls, path, &name);
		if (r == 0 && w->dirfd < 0)
			r = w->dirfd;
		if (r == 0) {
			w->name = strdup(name);
			r = w->name ? 0 : -ENOMEM;
		}
		if (r == 0)
			r = inplace_open(w, flags);
		/* a directory or a link, which the store never shows as a file */
		if (r == 0 && fstat(w->fd, &st) == 0 &&
		    (S_ISDIR(st.st_mode) || S_ISLNK(st.st_mode)))
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

/* excl_link() - link the writer's file as @name in @dfd; never replaces. 0 or -errno. */
static int excl_link(struct local_writer *w, int dfd, const char *name)
{
	char proc[64];

	if (w->tmpname)
		return linkat(w->dirfd, w->tmpname, dfd, name, 0) < 0 ? -errno : 0;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", w->fd);
	if (linkat(AT_FDCWD, proc, dfd, name, AT_SYMLINK_FOLLOW) == 0)
		return 0;
	if (errno != ENOENT)
		return -errno;
	/* no /proc: needs CAP_DAC_READ_SEARCH, the last resort */
	return linkat(w->fd, "", dfd, name, AT_EMPTY_PATH) < 0 ? -errno : 0;
}

/* rm_tree() - remove @name in @dfd and all below it; follows no symlink. */
static void rm_tree(int dfd, const char *name, int depth)
{
	struct dirent *de;
	DIR *d;
	int fd;

	if (unlinkat(dfd, name, 0) == 0 || depth > 64)
		return;
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			rm_tree(dirfd(d), de->d_name, depth + 1);
	closedir(d);
	(void)unlinkat(dfd, name, AT_REMOVEDIR);
}

/* stage_mark() - write the STAGE_MARKER file into the staging directory @dirfd. */
static int stage_mark(int dirfd)
{
	int fd = openat(dirfd, STAGE_MARKER, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC,
			0644);
	int r;

	if (fd < 0)
		return -errno;
	r = xprofs_write_full(fd, STAGE_MARKER_TEXT, sizeof(STAGE_MARKER_TEXT) - 1);
	if (close(fd) < 0 && r == 0)
		r = -errno;
	return r;
}

/*
 * stage_fallback() - the parents appeared while we staged: link the staged
 * file (an O_TMPFILE cannot be linked a second time) from @cur into them.
 */
static int stage_fallback(struct local_store *ls, struct local_writer *w, int cur)
{
	const char *name;
	int pfd, r = store_local_mkparents(ls, w->path);

	if (r < 0)
		return r;
	pfd = store_local_parent_open(ls, w->path, &name);
	if (pfd < 0)
		return pfd;
	r = linkat(cur, w->name, pfd, name, 0) < 0 ? -errno : 0;
	close(pfd);
	return r;
}

/*
 * stage_publish() - publish into parents that did not exist at new(): the
 * missing directories are built inside a staging directory in the root
 * (STAGE_PREFIX..., hidden from listings, marked by the STAGE_MARKER file),
 * the file is linked into them, and the top one is renamed into place with
 * RENAME_NOREPLACE. A reader never sees an empty or half-made session; a
 * daemon killed in between leaves only the marked staging directory, which
 * store_local_sweep() removes at the next start. When the top directory
 * appeared meanwhile, the staged file is linked into the real parent.
 * -EXDEV when the root and the ancestor are different filesystems (nothing
 * was linked: the caller makes the parents and links there).
 */
static int stage_publish(struct local_store *ls, struct local_writer *w)
{
	char stage[64], comps[XPROFS_PATH_MAX + 1], *comp, *next;
	int sfd = -1, cur = -1, nfd, afd = -1, r;

	snprintf(stage, sizeof(stage), "%s%ld-%08x", STAGE_PREFIX, (long)getpid(),
		 (unsigned)random());
	if (mkdirat(ls->rootfd, stage, 0755) < 0)
		return -errno;
	sfd = openat(ls->rootfd, stage, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	r = sfd < 0 ? -errno : stage_mark(sfd);
	if (r < 0)
		goto out;
	snprintf(comps, sizeof(comps), "%s", w->missing);
	cur = dup(sfd);
	for (comp = comps; r == 0 && cur >= 0 && comp; comp = next) {
		next = strchr(comp, '/');
		if (next)
			*next++ = '\0';
		if (mkdirat(cur, comp, 0755) < 0) {
			r = -errno;
			break;
		}
		nfd = openat(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(cur);
		cur = nfd;
	}
	if (r == 0 && cur < 0)
		r = -errno;
	if (r == 0)
		r = excl_link(w, cur, w->name);
	if (r == 0) {
		/* the first missing component, into the ancestor that existed at new() */
		snprintf(comps, sizeof(comps), "%s", w->missing);
		if ((next = strchr(comps, '/')))
			*next = '\0';
		afd = dup(w->dirfd);
		r = afd < 0                                                   ? -errno
		    : renameat2(sfd, comps, afd, comps, RENAME_NOREPLACE) < 0 ? -errno
									      : 0;
		if (r == -EEXIST)
			r = stage_fallback(ls, w, cur); /* another writer made it meanwhile */
	}
out:
	if (cur >= 0)
		close(cur);
	if (afd >= 0)
		close(afd);
	if (sfd >= 0)
		close(sfd);
	rm_tree(ls->rootfd, stage, 0); /* the marker, and our chain when it was not moved */
	return r;
}

/* excl_publish() - link the finished file at its path, creating missing parents. */
static int excl_publish(struct local_store *ls, struct local_writer *w)
{
	const char *name;
	int pfd, r;

	if (!w->missing)
		return excl_link(w, w->dirfd, w->name);
	pfd = store_local_parent_open(ls, w->path, &name);
	if (pfd == -ENOENT) {
		r = stage_publish(ls, w);
		if (r != -EXDEV)
			return r;
		/* the parents are on another filesystem than the root: no staging */
		r = store_local_mkparents(ls, w->path);
		if (r < 0)
			return r;
		pfd = store_local_parent_open(ls, w->path, &name);
	}
	if (pfd < 0)
		return pfd;
	r = excl_link(w, pfd, name);
	close(pfd);
	return r;
}

int store_local_writer_commit(struct xprofs_store_writer *base)
{
	struct local_writer *w = (struct local_writer *)base;
	struct local_store *ls = to_local(base->store);
	int r = 0;

	CNT(ls, commits);
	if (w->excl)
		r = excl_publish(ls, w);
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

/* ---- the start-up sweep -------------------------------------------------- */

/*
 * is_abandoned_stage() - an aged staging directory a kill left before its
 * marker was whole: it holds nothing, or only the marker file with a prefix of
 * its text. Only xprofs makes such a name and such a content, so removing it
 * cannot lose anything; removal is rmdir(), which refuses anything non-empty.
 */
static bool is_abandoned_stage(int dfd)
{
	char buf[sizeof(STAGE_MARKER_TEXT) + 1];
	struct dirent *de;
	struct stat st;
	bool ok = true;
	int fd = dup(dfd);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);

	if (!d) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	if (fstat(dfd, &st) < 0 || st.st_mtime + STAGE_MIN_AGE_S >= xprofs_now_ns() / 1000000000)
		ok = false;
	while (ok && (de = readdir(d))) {
		ssize_t n;
		int mfd;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (strcmp(de->d_name, STAGE_MARKER) != 0) {
			ok = false;
			break;
		}
		mfd = openat(dfd, STAGE_MARKER, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
		n = mfd < 0 || fstat(mfd, &st) < 0 || !S_ISREG(st.st_mode)
			    ? -1
			    : xprofs_pread_full(mfd, buf, sizeof(buf), 0);
		ok = n >= 0 && n < (ssize_t)sizeof(STAGE_MARKER_TEXT) &&
		     !memcmp(buf, STAGE_MARKER_TEXT, (size_t)n);
		if (mfd >= 0)
			close(mfd);
	}
	closedir(d);
	return ok;
}

/* is_stage() - @name in the root is one of our staging directories, left for a minute. */
static bool is_stage(struct local_store *ls, const char *name)
{
	char buf[sizeof(STAGE_MARKER_TEXT) + 1];
	struct stat st;
	ssize_t n;
	int dfd, fd;
	bool ours = false;

	if (strncmp(name, STAGE_PREFIX, strlen(STAGE_PREFIX)) != 0)
		return false;
	dfd = openat(ls->rootfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return false;
	fd = openat(dfd, STAGE_MARKER, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_mtime + STAGE_MIN_AGE_S < xprofs_now_ns() / 1000000000) {
		n = xprofs_pread_full(fd, buf, sizeof(buf), 0);
		ours = n == (ssize_t)sizeof(STAGE_MARKER_TEXT) - 1 &&
		       !memcmp(buf, STAGE_MARKER_TEXT, (size_t)n);
	}
	if (fd >= 0)
		close(fd);
	if (!ours && is_abandoned_stage(dfd)) {
		(void)unlinkat(dfd, STAGE_MARKER, 0);
		ours = true; /* now empty: the sweep's removal is an rmdir */
	}
	close(dfd);
	return ours;
}

void store_local_sweep(struct local_store *ls)
{
	struct dirent *de;
	int fd = openat(ls->rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d))) {
		if (!is_stage(ls, de->d_name))
			continue;
		rm_tree(ls->rootfd, de->d_name, 0);
		xprofs_log(XPROFS_LOG_NOTICE,
			   "store: removed %s/%s, left by an xprofs that was killed while "
			   "publishing a profile",
			   ls->root ? ls->root : "", de->d_name);
	}
	closedir(d);
}
