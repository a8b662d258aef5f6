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
 *   the root and renames them into place (stage_publish(); leftovers of a
 *   daemon killed right then are swept by store_local_sweep() at start-up).
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

void store_local_rm_tree(int dfd, const char *name, int depth)
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
			store_local_rm_tree(dirfd(d), de->d_name, depth + 1);
	closedir(d);
	(void)unlinkat(dfd, name, AT_REMOVEDIR);
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

	snprintf(stage, sizeof(stage), "%s%ld-%08x", store_local_stage_prefix, (long)getpid(),
		 (unsigned)random());
	if (mkdirat(ls->rootfd, stage, 0755) < 0)
		return -errno;
	sfd = openat(ls->rootfd, stage, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	r = sfd < 0 ? -errno : store_local_mark(sfd);
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
	store_local_rm_tree(ls->rootfd, stage,
			    0); /* the marker, and our chain when it was not moved */
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
