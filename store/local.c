/*
 * store/local.c - the local-directory backend of struct xprofs_store: the
 * store object, stat/list, readers and the namespace operations. Its
 * writers (and the start-up sweep of their staging directories) live in
 * local-writer.c; both resolve paths beneath the root through local-path.c.
 *
 * Design:
 * - Every path is resolved beneath one directory fd opened at mount time
 *   (store_local_resolve(): openat2 RESOLVE_BENEATH, or a walk with
 *   O_NOFOLLOW on kernels without it). stat(), list() and readers follow
 *   symlinks that resolve inside the root (or anywhere with follow_outside);
 *   lstat() and list() report a link as a link (list(): .link, and type
 *   XPROFS_STORE_LINK when it is not followed).
 * - Owners, modes and times are the source's (struct xprofs_store_stat);
 *   setattr() changes them on the object itself through an O_PATH|O_NOFOLLOW
 *   fd and its /proc/self/fd name, so a symlink swapped in meanwhile is never
 *   followed.
 * - Readers are open fds: a file replaced by rename() after open keeps serving
 *   the old bytes (pinned version); pread() at any offset.
 * - generation = hash(dev, inode, ctime): it changes when the file is replaced
 *   or rewritten, which is what view caches need in their keys.
 * - Writers (local-writer.c): exclusive ones publish with linkat(), others
 *   write in place; list() hides the exclusive writers' temporaries
 *   (STORE_LOCAL_TMP_PREFIX), and stat() and open() act as if absent.
 * - Only regular files, directories and symlinks are exposed; fifos, sockets
 *   and device nodes are invisible (-ENOENT).
 *
 * Limits: counters are approximate under concurrency (relaxed atomics).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "store-internal.h"

/*
 * tmp_hidden() - @path names one of the exclusive writers' temp files or
 * staging directories, or something inside one: list() never shows them, so
 * stat(), open() and creation act as if they were not there either.
 */
static bool tmp_hidden(const char *path)
{
	const char *c = path;

	while (c && *c) {
		if (!strncmp(c, STORE_LOCAL_TMP_PREFIX, strlen(STORE_LOCAL_TMP_PREFIX)))
			return true;
		c = strchr(c, '/');
		if (c)
			c++;
	}
	return false;
}

struct local_file {
	struct xprofs_store_reader base;
	int fd;
};

/*
 * local_writable() - can a file be created at @path? Checks the deepest
 * directory of its parents that exists (the writer creates the rest): a
 * read-only filesystem is -EROFS, no write or search permission -EACCES.
 */
static int local_writable(struct xprofs_store *s, const char *path)
{
	struct local_store *ls = to_local(s);
	char dir[XPROFS_PATH_MAX + 1];
	const char *slash = strrchr(path, '/');
	struct statvfs sv;
	size_t n = slash ? (size_t)(slash - path) : 0, len;
	int fd, r = 0;

	if (n > XPROFS_PATH_MAX)
		return -ENAMETOOLONG;
	if (tmp_hidden(path))
		return -EPERM; /* names reserved for the exclusive writers' temporaries */
	memcpy(dir, path, n);
	dir[n] = '\0';
	fd = store_local_ancestor_open(ls, dir, &len);
	if (fd < 0)
		return fd;
	if (fstatvfs(fd, &sv) == 0 && (sv.f_flag & ST_RDONLY))
		r = -EROFS;
	else if (faccessat(fd, ".", W_OK | X_OK, AT_EACCESS) < 0)
		r = -errno;
	close(fd);
	return r;
}

static uint64_t make_generation(const struct stat *st)
{
	uint64_t v[4] = {(uint64_t)st->st_dev, (uint64_t)st->st_ino, (uint64_t)st->st_ctim.tv_sec,
			 (uint64_t)st->st_ctim.tv_nsec};

	return xprofs_hash64(v, sizeof(v));
}

static int64_t ts_ns(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000LL + t->tv_nsec;
}

/* stat_fill() - translate @st; -ENOENT for what we do not expose. */
static int stat_fill(const struct stat *st, struct xprofs_store_stat *out)
{
	uint64_t id[2] = {(uint64_t)st->st_dev, (uint64_t)st->st_ino};

	memset(out, 0, sizeof(*out));
	if (S_ISREG(st->st_mode) || S_ISLNK(st->st_mode)) {
		out->type = S_ISREG(st->st_mode) ? XPROFS_STORE_FILE : XPROFS_STORE_LINK;
		out->size = (uint64_t)st->st_size;
	} else if (S_ISDIR(st->st_mode)) {
		out->type = XPROFS_STORE_DIR;
	} else {
		return -ENOENT;
	}
	out->mtime_ns = ts_ns(&st->st_mtim);
	out->atime_ns = ts_ns(&st->st_atim);
	out->ctime_ns = ts_ns(&st->st_ctim);
	out->generation = make_generation(st);
	out->mode = st->st_mode & 07777;
	out->uid = st->st_uid;
	out->gid = st->st_gid;
	out->fileid = xprofs_hash64(id, sizeof(id)) | 1; /* never 0 (unknown) */
	out->link = S_ISLNK(st->st_mode);
	return 0;
}

/*
 * resolve_stat() - store_local_resolve(@path, @flags) and fstat() it into @st: the fd
 * (caller closes) or a counted -errno; a staging name is -ENOENT (tmp_hidden()).
 */
static int resolve_stat(struct local_store *ls, const char *path, int flags, struct stat *st)
{
	int fd, r;

	if (tmp_hidden(path))
		return count_err(ls, -ENOENT);
	fd = store_local_resolve(ls, path, flags, 0);
	if (fd < 0)
		return count_err(ls, fd);
	if (fstat(fd, st) < 0) {
		r = -errno;
		close(fd);
		return count_err(ls, r);
	}
	return fd;
}

static int local_stat(struct xprofs_store *s, const char *path, struct xprofs_store_stat *out)
{
	struct local_store *ls = to_local(s);
	struct stat st;
	int fd;

	CNT(ls, stats);
	fd = resolve_stat(ls, path, O_PATH, &st);
	if (fd < 0)
		return fd;
	close(fd);
	return count_err(ls, stat_fill(&st, out));
}

static int local_list(struct xprofs_store *s, const char *dir, xprofs_store_list_cb cb, void *arg)
{
	struct local_store *ls = to_local(s);
	char full[XPROFS_PATH_MAX + 2 + XPROFS_NAME_MAX];
	struct xprofs_store_stat xst;
	struct dirent *de;
	struct stat st;
	DIR *d = NULL;
	int fd, r = 0;

	CNT(ls, lists);
	fd = store_local_resolve(ls, dir, O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0)
		return count_err(ls, fd);
	d = fdopendir(fd);
	if (!d) {
		r = -errno;
		close(fd);
		return count_err(ls, r);
	}
	for (;;) {
		errno = 0;
		de = readdir(d);
		if (!de) {
			r = errno ? -errno : 0;
			break;
		}
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !strncmp(de->d_name, STORE_LOCAL_TMP_PREFIX, strlen(STORE_LOCAL_TMP_PREFIX)))
			continue;
		if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* vanished meanwhile */
		if (stat_fill(&st, &xst) < 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			/* followed where allowed (inside the root), else listed as a link */
			snprintf(full, sizeof(full), "%s%s%s", dir, *dir ? "/" : "", de->d_name);
			if (xprofs_store_path_valid(full) && local_stat(s, full, &xst) == 0)
				xst.link = true;
		}
		r = cb(arg, de->d_name, &xst);
		if (r)
			break;
	}
	closedir(d);
	return count_err(ls, r);
}

static int local_open(struct xprofs_store *s, const char *path, struct xprofs_store_reader **out)
{
	struct local_store *ls = to_local(s);
	struct local_file *f = NULL;
	struct stat st;
	int fd, r;

	CNT(ls, opens);
	fd = resolve_stat(ls, path, O_RDONLY, &st);
	if (fd < 0)
		return fd;
	if (S_ISDIR(st.st_mode)) {
		r = -EISDIR;
		goto err_close;
	}
	if (!S_ISREG(st.st_mode)) {
		r = -ENOENT;
		goto err_close;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		r = -ENOMEM;
		goto err_close;
	}
	f->base.store = s;
	f->fd = fd;
	*out = &f->base;
	return 0;

err_close:
	close(fd);
	return count_err(ls, r);
}

static ssize_t local_pread(struct xprofs_store_reader *base, void *buf, size_t n, uint64_t off)
{
	struct local_file *f = (struct local_file *)base;
	struct local_store *ls = to_local(base->store);
	ssize_t r;

	if (off > INT64_MAX)
		return -EINVAL;
	CNT(ls, preads);
	r = xprofs_pread_ahead(f->fd, buf, n, off);
	if (r > 0)
		CNT_ADD(ls, bytes_read, (uint64_t)r);
	return r < 0 ? count_err(ls, (int)r) : r;
}

static int local_file_stat(struct xprofs_store_reader *base, struct xprofs_store_stat *out)
{
	struct local_file *f = (struct local_file *)base;
	struct stat st;

	if (fstat(f->fd, &st) < 0)
		return -errno;
	return stat_fill(&st, out);
}

static void local_close(struct xprofs_store_reader *base)
{
	struct local_file *f = (struct local_file *)base;

	close(f->fd);
	free(f);
}

/* at_op() - run one *at() syscall on @path's parent; 0 or -errno. */
enum at_kind { AT_UNLINK, AT_RMDIR, AT_MKDIR };

static int at_op_mode(struct local_store *ls, const char *path, enum at_kind k, mode_t mode);

static int at_op(struct local_store *ls, const char *path, enum at_kind k)
{
	return at_op_mode(ls, path, k, 0755);
}

static int at_op_mode(struct local_store *ls, const char *path, enum at_kind k, mode_t mode)
{
	const char *name;
	int pfd, r;

	pfd = store_local_parent_open(ls, path, &name);
	if (pfd < 0)
		return count_err(ls, pfd);
	switch (k) {
	case AT_UNLINK:
		r = unlinkat(pfd, name, 0);
		break;
	case AT_RMDIR:
		r = unlinkat(pfd, name, AT_REMOVEDIR);
		break;
	default:
		r = mkdirat(pfd, name, mode);
		break;
	}
	r = r < 0 ? -errno : 0;
	close(pfd);
	return count_err(ls, r);
}

/*
 * local_setattr() - change what @a selects on @path itself: an O_PATH fd of
 * the object (never following a symlink at the last component), then
 * chmod/chown/utimensat on its /proc/self/fd name, which names that very
 * object. A symlink itself is refused (-EPERM): the kernel follows links
 * before it asks a FUSE filesystem to change attributes.
 */
static int local_setattr(struct xprofs_store *s, const char *path,
			 const struct xprofs_store_attr *a)
{
	struct local_store *ls = to_local(s);
	char proc[64];
	struct stat st;
	int fd, r = 0;

	fd = store_local_resolve(ls, path, O_PATH | O_NOFOLLOW, 0);
	if (fd < 0)
		return count_err(ls, fd);
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto out;
	}
	if (S_ISLNK(st.st_mode)) {
		r = -EPERM;
		goto out;
	}
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if ((a->valid & XPROFS_ATTR_MODE) && chmod(proc, a->mode & 07777) < 0)
		r = -errno;
	if (r == 0 && (a->valid & (XPROFS_ATTR_UID | XPROFS_ATTR_GID)) &&
	    chown(proc, (a->valid & XPROFS_ATTR_UID) ? a->uid : (uid_t)-1,
		  (a->valid & XPROFS_ATTR_GID) ? a->gid : (gid_t)-1) < 0)
		r = -errno;
	if (r == 0 && (a->valid & XPROFS_ATTR_TIMES) && utimensat(AT_FDCWD, proc, a->times, 0) < 0)
		r = -errno;
out:
	close(fd);
	return count_err(ls, r);
}

/* local_mkdir_mode() - mkdir, then exactly @mode (our own umask may have masked it). */
static int local_mkdir_mode(struct xprofs_store *s, const char *path, uint32_t mode)
{
	struct xprofs_store_attr a = {.valid = XPROFS_ATTR_MODE, .mode = mode};
	int r;

	CNT(to_local(s), mkdirs);
	r = at_op_mode(to_local(s), path, AT_MKDIR, mode & 07777);
	return r < 0 ? r : local_setattr(s, path, &a);
}

static int local_lstat(struct xprofs_store *s, const char *path, struct xprofs_store_stat *out)
{
	struct local_store *ls = to_local(s);
	const char *name;
	struct stat st;
	int pfd, r;

	if (!*path)
		return local_stat(s, path, out);
	CNT(ls, stats);
	if (tmp_hidden(path))
		return count_err(ls, -ENOENT);
	pfd = store_local_parent_open(ls, path, &name);
	if (pfd < 0)
		return count_err(ls, pfd);
	r = fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : stat_fill(&st, out);
	close(pfd);
	return count_err(ls, r);
}

static int local_readlink(struct xprofs_store *s, const char *path, char *buf, size_t size)
{
	struct local_store *ls = to_local(s);
	char tmp[XPROFS_PATH_MAX + 1];
	const char *name;
	ssize_t n;
	int pfd;

	pfd = store_local_parent_open(ls, path, &name);
	if (pfd < 0)
		return count_err(ls, pfd);
	n = readlinkat(pfd, name, tmp, sizeof(tmp));
	if (n < 0)
		n = -errno;
	close(pfd);
	if (n < 0)
		return count_err(ls, (int)n);
	if ((size_t)n >= sizeof(tmp) || (size_t)n >= size)
		return -ENAMETOOLONG;
	memcpy(buf, tmp, (size_t)n);
	buf[n] = '\0';
	return (int)n;
}

static int local_symlink(struct xprofs_store *s, const char *target, const char *path)
{
	struct local_store *ls = to_local(s);
	const char *name;
	int pfd, r;

	pfd = store_local_parent_open(ls, path, &name);
	if (pfd < 0)
		return count_err(ls, pfd);
	r = symlinkat(target, pfd, name) < 0 ? -errno : 0;
	close(pfd);
	return count_err(ls, r);
}

static int local_unlink(struct xprofs_store *s, const char *path)
{
	CNT(to_local(s), unlinks);
	return at_op(to_local(s), path, AT_UNLINK);
}

static int local_rmdir(struct xprofs_store *s, const char *path)
{
	CNT(to_local(s), rmdirs);
	return at_op(to_local(s), path, AT_RMDIR);
}

static int local_mkdir(struct xprofs_store *s, const char *path)
{
	CNT(to_local(s), mkdirs);
	return at_op(to_local(s), path, AT_MKDIR);
}

static int local_rename(struct xprofs_store *s, const char *from, const char *to)
{
	struct local_store *ls = to_local(s);
	const char *n1, *n2;
	int p1, p2 = -1, r;

	CNT(ls, renames);
	p1 = store_local_parent_open(ls, from, &n1);
	if (p1 < 0)
		return count_err(ls, p1);
	p2 = store_local_parent_open(ls, to, &n2);
	if (p2 < 0) {
		r = p2;
		goto out;
	}
	r = renameat(p1, n1, p2, n2) < 0 ? -errno : 0;
	close(p2);
out:
	close(p1);
	return count_err(ls, r);
}

static int local_refresh(struct xprofs_store *s)
{
	return 0; /* nothing cached: every list() reads the directory */
}

static int local_status_json(struct xprofs_store *s, struct xprofs_buf *out)
{
	struct local_store *ls = to_local(s);
	struct local_counters c;
	int r;

#define LD(f) c.f = __atomic_load_n(&ls->c.f, __ATOMIC_RELAXED)
	LD(stats);
	LD(lists);
	LD(opens);
	LD(preads);
	LD(bytes_read);
	LD(creates);
	LD(writes);
	LD(bytes_written);
	LD(commits);
	LD(aborts);
	LD(unlinks);
	LD(renames);
	LD(mkdirs);
	LD(rmdirs);
	LD(errors);
#undef LD
	r = xprofs_buf_add_json_member(out, "{\"backend\":\"local\",\"root\":", ls->root);
	if (r == 0)
		r = xprofs_buf_printf(
			out,
			",\"stats\":%lu,\"lists\":%lu,\"opens\":%lu,\"preads\":%lu,"
			"\"bytes_read\":%lu,\"creates\":%lu,\"writes\":%lu,"
			"\"bytes_written\":%lu,\"commits\":%lu,\"aborts\":%lu,"
			"\"unlinks\":%lu,\"renames\":%lu,\"mkdirs\":%lu,\"rmdirs\":%lu,"
			"\"errors\":%lu}",
			(unsigned long)c.stats, (unsigned long)c.lists, (unsigned long)c.opens,
			(unsigned long)c.preads, (unsigned long)c.bytes_read,
			(unsigned long)c.creates, (unsigned long)c.writes,
			(unsigned long)c.bytes_written, (unsigned long)c.commits,
			(unsigned long)c.aborts, (unsigned long)c.unlinks, (unsigned long)c.renames,
			(unsigned long)c.mkdirs, (unsigned long)c.rmdirs, (unsigned long)c.errors);
	return r;
}

static void local_free(struct xprofs_store *s)
{
	struct local_store *ls = to_local(s);

	if (ls->rootfd >= 0)
		close(ls->rootfd);
	free(ls->root);
	free(ls->base.source);
	free(ls);
}

static const struct xprofs_store_ops local_ops = {
	.backend = "local",
	.stat = local_stat,
	.list = local_list,
	.open = local_open,
	.pread = local_pread,
	.file_stat = local_file_stat,
	.close = local_close,
	.create = store_local_writer_new,
	.write = store_local_writer_write,
	.wread = store_local_writer_pread,
	.truncate = store_local_writer_truncate,
	.flush = store_local_writer_flush,
	.commit = store_local_writer_commit,
	.abort = store_local_writer_abort,
	.unlink = local_unlink,
	.rename = local_rename,
	.mkdir = local_mkdir,
	.rmdir = local_rmdir,
	.mkdir_mode = local_mkdir_mode,
	.lstat = local_lstat,
	.readlink = local_readlink,
	.symlink = local_symlink,
	.setattr = local_setattr,
	.refresh = local_refresh,
	.status_json = local_status_json,
	.free = local_free,
	.writable = local_writable,
};

int xprofs_store_local_follow_outside(struct xprofs_store *s, bool on)
{
	if (!s || s->ops != &local_ops)
		return -EINVAL;
	__atomic_store_n(&to_local(s)->follow_outside, on, __ATOMIC_RELAXED);
	return 0;
}

int xprofs_store_local_new(const char *root, struct xprofs_store **out)
{
	struct local_store *ls;
	int r;

	if (!root || !*root)
		return -EINVAL;
	ls = calloc(1, sizeof(*ls));
	if (!ls)
		return -ENOMEM;
	ls->base.ops = &local_ops;
	ls->rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ls->rootfd < 0) {
		r = -errno;
		goto err;
	}
	if (faccessat(ls->rootfd, ".", R_OK | X_OK, 0) < 0) {
		r = -errno;
		goto err;
	}
	ls->root = realpath(root, NULL);
	ls->base.source = strdup(root);
	if (!ls->root || !ls->base.source) {
		r = -ENOMEM;
		goto err;
	}
	store_local_sweep(ls);
	*out = &ls->base;
	return 0;

err:
	local_free(&ls->base);
	return r;
}
