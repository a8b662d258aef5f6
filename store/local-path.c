/*
 * store/local-path.c - resolving store paths beneath the local backend's
 * root: a path's fd, its parent's, the deepest existing ancestor of a
 * directory, and making a path's parents. local.c (stat/list, readers,
 * namespace operations) and local-writer.c (writers) both resolve through
 * here; this file calls neither.
 *
 * Design: every path is resolved relative to the root's directory fd, with
 * openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS): even a symlink or a
 * concurrent rename inside SOURCE cannot make a lookup leave the root
 * (with follow_outside only RESOLVE_NO_MAGICLINKS; paths are validated, so
 * only a symlink can lead out). On kernels without openat2 the path is
 * walked component by component with O_NOFOLLOW (symlinks are then not
 * followed at all), and the first ENOSYS is remembered in ls->no_openat2.
 *
 * Limits: paths of at most XPROFS_PATH_MAX bytes (-ENAMETOOLONG).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "store-internal.h"

/* Open @path below the root by walking components without following symlinks. */
static int walk_open(struct local_store *ls, const char *path, int flags, mode_t mode)
{
	char buf[XPROFS_PATH_MAX + 1];
	char *comp, *slash;
	struct stat st;
	int cur, next, saved;

	if (strlen(path) > XPROFS_PATH_MAX)
		return -ENAMETOOLONG;
	strcpy(buf, path);
	cur = dup(ls->rootfd);
	if (cur < 0)
		return -errno;
	comp = buf;
	while ((slash = strchr(comp, '/'))) {
		*slash = '\0';
		next = openat(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		saved = errno;
		if (next < 0 && saved == ENOTDIR &&
		    fstatat(cur, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
			saved = ENOENT; /* a symlink we do not follow reads as absent */
		close(cur);
		if (next < 0)
			return saved == ELOOP ? -ENOENT : -saved;
		cur = next;
		comp = slash + 1;
	}
	next = openat(cur, comp, flags | O_NOFOLLOW | O_CLOEXEC, mode);
	saved = errno;
	close(cur);
	if (next < 0)
		return saved == ELOOP ? -ENOENT : -saved;
	return next;
}

/*
 * store_local_resolve() - open @path (valid, relative; "" = the root) below
 * the root. Returns an fd the caller owns, or -errno. A lookup that would
 * escape the root reads as -ENOENT.
 */
int store_local_resolve(struct local_store *ls, const char *path, int flags, mode_t mode)
{
	struct open_how how;
	int fd;

	if (!*path)
		path = ".";
	if (!__atomic_load_n(&ls->no_openat2, __ATOMIC_RELAXED)) {
		memset(&how, 0, sizeof(how));
		how.flags = (uint64_t)(flags | O_CLOEXEC);
		how.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0;
		how.resolve = RESOLVE_NO_MAGICLINKS;
		if (!__atomic_load_n(&ls->follow_outside, __ATOMIC_RELAXED))
			how.resolve |= RESOLVE_BENEATH;
		fd = (int)syscall(SYS_openat2, ls->rootfd, path, &how, sizeof(how));
		if (fd >= 0)
			return fd;
		if (errno != ENOSYS)
			return errno == EXDEV || errno == ELOOP ? -ENOENT : -errno;
		__atomic_store_n(&ls->no_openat2, 1, __ATOMIC_RELAXED);
	}
	if (!strcmp(path, ".")) {
		fd = openat(ls->rootfd, ".", flags | O_CLOEXEC, mode);
		return fd < 0 ? -errno : fd;
	}
	return walk_open(ls, path, flags, mode);
}

/*
 * store_local_parent_open() - O_PATH fd of @path's parent directory and, in *@name, a
 * pointer into @path (borrowed) at the last component.
 */
int store_local_parent_open(struct local_store *ls, const char *path, const char **name)
{
	char parent[XPROFS_PATH_MAX + 1];
	const char *slash = strrchr(path, '/');
	size_t n;

	if (!slash) {
		*name = path;
		return store_local_resolve(ls, "", O_PATH | O_DIRECTORY, 0);
	}
	n = (size_t)(slash - path);
	if (n > XPROFS_PATH_MAX)
		return -ENAMETOOLONG;
	memcpy(parent, path, n);
	parent[n] = '\0';
	*name = slash + 1;
	return store_local_resolve(ls, parent, O_PATH | O_DIRECTORY, 0);
}

int store_local_ancestor_open(struct local_store *ls, const char *dir, size_t *len)
{
	char buf[XPROFS_PATH_MAX + 1];
	size_t n = strlen(dir);
	int fd;

	if (n > XPROFS_PATH_MAX)
		return -ENAMETOOLONG;
	memcpy(buf, dir, n + 1);
	for (;;) {
		fd = store_local_resolve(ls, buf, O_PATH | O_DIRECTORY, 0);
		if (fd >= 0 || fd != -ENOENT || n == 0)
			break;
		while (n > 0 && buf[n - 1] != '/')
			n--;
		if (n > 0)
			n--; /* the '/' before the component */
		buf[n] = '\0';
	}
	*len = n;
	return fd;
}

/* store_local_mkparents() - create the directories above @path (mode 0755), EEXIST is fine. */
int store_local_mkparents(struct local_store *ls, const char *path)
{
	char prefix[XPROFS_PATH_MAX + 1];
	const char *p, *name;
	int pfd, r;

	for (p = strchr(path, '/'); p; p = strchr(p + 1, '/')) {
		size_t n = (size_t)(p - path);

		if (n > XPROFS_PATH_MAX)
			return -ENAMETOOLONG;
		memcpy(prefix, path, n);
		prefix[n] = '\0';
		pfd = store_local_parent_open(ls, prefix, &name);
		if (pfd < 0)
			return pfd;
		r = mkdirat(pfd, name, 0755) < 0 && errno != EEXIST ? -errno : 0;
		close(pfd);
		if (r < 0)
			return r;
	}
	return 0;
}
