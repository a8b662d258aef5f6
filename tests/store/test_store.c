/*
 * tests/store/test_store.c - unit tests of the store wrappers and the local
 * backend, on a fresh temporary directory per test.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"
#include "xprofs/store.h"

struct fx {
	char dir[64];
	struct xprofs_store *s;
};

static void put_file(const char *dir, const char *rel, const char *content)
{
	char p[512];
	int n = snprintf(p, sizeof(p), "%s/%s", dir, rel);
	FILE *f;

	assert_true(n > 0 && (size_t)n < sizeof(p));
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(content, f);
	fclose(f);
}

static int read_file(const char *dir, const char *rel, char *buf, size_t n)
{
	char p[512];
	ssize_t r;
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	fd = open(p, O_RDONLY);
	if (fd < 0)
		return -errno;
	r = read(fd, buf, n - 1);
	close(fd);
	if (r < 0)
		return -errno;
	buf[r] = '\0';
	return (int)r;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	char p[512];

	assert_non_null(f);
	strcpy(f->dir, "/tmp/xprofs-store-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(p, sizeof(p), "%s/run/plugins/profile/s1", f->dir);
	assert_int_equal(xprofs_mkdir_p(p), 0);
	put_file(f->dir, "run/plugins/profile/s1/h.xplane.pb", "0123456789");
	put_file(f->dir, "top.txt", "hello");
	assert_int_equal(xprofs_store_local_new(f->dir, &f->s), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];

	xprofs_store_free(f->s);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

static void test_path_valid(void **state)
{
	char longc[300];

	(void)state;
	assert_true(xprofs_store_path_valid(""));
	assert_true(xprofs_store_path_valid("a"));
	assert_true(xprofs_store_path_valid("a/b.c/.hidden/..x"));
	assert_false(xprofs_store_path_valid(NULL));
	assert_false(xprofs_store_path_valid("/a"));
	assert_false(xprofs_store_path_valid("a/"));
	assert_false(xprofs_store_path_valid("a//b"));
	assert_false(xprofs_store_path_valid("."));
	assert_false(xprofs_store_path_valid(".."));
	assert_false(xprofs_store_path_valid("a/../b"));
	assert_false(xprofs_store_path_valid("a/./b"));
	assert_false(xprofs_store_path_valid("a/.."));
	memset(longc, 'x', sizeof(longc) - 1);
	longc[sizeof(longc) - 1] = '\0';
	assert_false(xprofs_store_path_valid(longc));
}

static void test_new_errors(void **state)
{
	struct xprofs_store *s = (struct xprofs_store *)0x1;
	struct fx *f = *state;
	char p[512];

	assert_int_equal(xprofs_store_local_new("/nonexistent/xprofs", &s), -ENOENT);
	snprintf(p, sizeof(p), "%s/top.txt", f->dir);
	assert_int_equal(xprofs_store_local_new(p, &s), -ENOTDIR);
	assert_ptr_equal(s, (struct xprofs_store *)0x1); /* untouched on failure */
	assert_null(xprofs_store_free(NULL));
	assert_string_equal(xprofs_store_backend(f->s), "local");
	assert_string_equal(xprofs_store_source(f->s), f->dir);
}

static void test_stat_and_read(void **state)
{
	struct fx *f = *state;
	struct xprofs_store_stat st, st2;
	struct xprofs_store_reader *file;
	struct xprofs_reader rd;
	char buf[32];

	assert_int_equal(xprofs_store_stat(f->s, "", &st), 0);
	assert_int_equal(st.type, XPROFS_STORE_DIR);
	assert_int_equal(xprofs_store_stat(f->s, "run/plugins/profile/s1/h.xplane.pb", &st), 0);
	assert_int_equal(st.type, XPROFS_STORE_FILE);
	assert_int_equal(st.size, 10);
	assert_true(st.mtime_ns > 0);
	assert_int_equal(xprofs_store_stat(f->s, "nope", &st2), -ENOENT);
	assert_int_equal(xprofs_store_stat(f->s, "../etc", &st2), -EINVAL);

	assert_int_equal(
		xprofs_store_reader_open(f->s, "run/plugins/profile/s1/h.xplane.pb", &file), 0);
	XT_SAME_BYTES(buf, xprofs_store_reader_pread(file, buf, 4, 3), "3456", 4);
	assert_int_equal(xprofs_store_reader_pread(file, buf, 100, 8), 2);
	assert_int_equal(xprofs_store_reader_pread(file, buf, 100, 1ULL << 40), 0);
	assert_int_equal(xprofs_store_reader_as_reader(file, &rd), 0);
	assert_int_equal(rd.size, 10);
	XT_SAME_BYTES(buf, xprofs_reader_pread(&rd, buf, 3, 0), "012", 3);
	assert_int_equal(xprofs_store_reader_stat(file, &st2), 0);
	assert_int_equal(st2.generation, st.generation);

	/* replacing the file: the reader keeps the old bytes, generation changes */
	put_file(f->dir, "tmp.new", "abcdefghijXYZ");
	{
		char a[512], b[512];

		snprintf(a, sizeof(a), "%s/tmp.new", f->dir);
		snprintf(b, sizeof(b), "%s/run/plugins/profile/s1/h.xplane.pb", f->dir);
		assert_int_equal(rename(a, b), 0);
	}
	XT_SAME_BYTES(buf, xprofs_store_reader_pread(file, buf, 4, 0), "0123", 4);
	assert_int_equal(xprofs_store_stat(f->s, "run/plugins/profile/s1/h.xplane.pb", &st2), 0);
	assert_int_equal(st2.size, 13);
	assert_int_not_equal(st2.generation, st.generation);
	xprofs_store_reader_close(file);
	xprofs_store_reader_close(NULL);

	assert_int_equal(xprofs_store_reader_open(f->s, "run", &file), -EISDIR);
	assert_int_equal(xprofs_store_reader_open(f->s, "nope", &file), -ENOENT);
	assert_int_equal(xprofs_store_reader_open(f->s, "", &file), -EINVAL);
}

/* openat2 is missing on old kernels and under valgrind 3.19: the backend falls back */
static bool have_openat2(void)
{
	struct open_how how = {.flags = O_RDONLY | O_DIRECTORY, .resolve = RESOLVE_BENEATH};
	long fd = syscall(SYS_openat2, AT_FDCWD, ".", &how, sizeof(how));

	if (fd >= 0)
		close((int)fd);
	return fd >= 0 || errno != ENOSYS;
}

static int stop_at_first(void *arg, const char *name, const struct xprofs_store_stat *st)
{
	(void)arg;
	(void)name;
	(void)st;
	return 42;
}

static void test_list_and_symlinks(void **state)
{
	struct fx *f = *state;
	struct xprofs_store_stat st;
	struct xprofs_store_reader *file;
	struct xt_names n = {0};
	char p[512];

	snprintf(p, sizeof(p), "%s/escape", f->dir);
	assert_int_equal(symlink("/etc", p), 0);
	snprintf(p, sizeof(p), "%s/inside", f->dir);
	assert_int_equal(symlink("top.txt", p), 0);
	snprintf(p, sizeof(p), "%s/fifo", f->dir);
	assert_int_equal(mkfifo(p, 0600), 0);
	put_file(f->dir, ".xprofs-tmp-leftover", "x");

	assert_int_equal(xprofs_store_list(f->s, "", xt_names_add, &n), 0);
	assert_int_equal(xt_names_type(&n, "run"), XPROFS_STORE_DIR);
	assert_int_equal(xt_names_type(&n, "top.txt"), XPROFS_STORE_FILE);
	/* a symlink inside the root is followed with openat2, a link for the fallback walk */
	assert_int_equal(xt_names_type(&n, "inside"),
			 have_openat2() ? XPROFS_STORE_FILE : XPROFS_STORE_LINK);
	assert_int_equal(xt_names_type(&n, "escape"), XPROFS_STORE_LINK); /* not followed */
	assert_int_equal(xt_names_type(&n, "fifo"), 0);
	assert_int_equal(xt_names_type(&n, ".xprofs-tmp-leftover"), 0);
	assert_int_equal(n.n, 4);
	assert_int_equal(xprofs_store_stat(f->s, "escape", &st), -ENOENT);
	assert_int_equal(xprofs_store_stat(f->s, "escape/passwd", &st), -ENOENT);
	assert_int_equal(xprofs_store_reader_open(f->s, "escape/passwd", &file), -ENOENT);
	assert_int_equal(xprofs_store_list(f->s, "", stop_at_first, NULL), 42);
	assert_int_equal(xprofs_store_list(f->s, "nope", xt_names_add, &n), -ENOENT);
	assert_int_equal(xprofs_store_list(f->s, "top.txt", xt_names_add, &n), -ENOTDIR);
}

/* backdate() - @path's times an hour back (the sweep's age rule is about age). */
static void backdate(const char *path)
{
	struct timespec ts[2] = {{.tv_sec = time(NULL) - 3600}, {.tv_sec = time(NULL) - 3600}};

	assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

/*
 * A kill between a staging directory's mkdir and its whole marker leaves it
 * empty or with part of the marker: the start-up sweep removes those once
 * aged, and never one holding anything else. Such names are hidden from
 * stat and open too, as from listings.
 */
static void test_sweep_abandoned_stages(void **state)
{
	struct fx *f = *state;
	struct xprofs_store *s2 = NULL;
	struct xprofs_store_stat st;
	char p[512];

	snprintf(p, sizeof(p), "%s/.xprofs-tmp-stage-1-empty", f->dir);
	assert_int_equal(mkdir(p, 0755), 0);
	backdate(p);
	snprintf(p, sizeof(p), "%s/.xprofs-tmp-stage-2-partial", f->dir);
	assert_int_equal(mkdir(p, 0755), 0);
	put_file(p, ".xprofs-staging", "xprofs stag");
	backdate(p);
	snprintf(p, sizeof(p), "%s/.xprofs-tmp-stage-3-other", f->dir);
	assert_int_equal(mkdir(p, 0755), 0);
	put_file(p, "data", "not ours to remove");
	backdate(p);
	snprintf(p, sizeof(p), "%s/.xprofs-tmp-stage-4-young", f->dir);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/.xprofs-tmp-stage-5-wrongtext", f->dir);
	assert_int_equal(mkdir(p, 0755), 0);
	put_file(p, ".xprofs-staging", "something else");
	backdate(p);

	assert_int_equal(xprofs_store_local_new(f->dir, &s2), 0);
	snprintf(p, sizeof(p), "%s/.xprofs-tmp-stage-1-empty", f->dir);
	assert_int_equal(access(p, F_OK), -1);
	snprintf(p, sizeof(p), "%s/.xprofs-tmp-stage-2-partial", f->dir);
	assert_int_equal(access(p, F_OK), -1);
	snprintf(p, sizeof(p), "%s/.xprofs-tmp-stage-3-other/data", f->dir);
	assert_int_equal(access(p, F_OK), 0);
	snprintf(p, sizeof(p), "%s/.xprofs-tmp-stage-4-young", f->dir);
	assert_int_equal(access(p, F_OK), 0);
	snprintf(p, sizeof(p), "%s/.xprofs-tmp-stage-5-wrongtext/.xprofs-staging", f->dir);
	assert_int_equal(access(p, F_OK), 0);
	assert_int_equal(xprofs_store_stat(s2, ".xprofs-tmp-stage-4-young", &st), -ENOENT);
	assert_int_equal(xprofs_store_lstat(s2, ".xprofs-tmp-stage-3-other/data", &st), -ENOENT);
	xprofs_store_free(s2);
}

/* no_staging_left() - @dir holds no ".xprofs-tmp-*" entry (a staging directory). */
static bool no_staging_left(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	bool none = true;

	assert_non_null(d);
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, ".xprofs-tmp-", 12))
			none = false;
	closedir(d);
	return none;
}

/* A new exclusive writer of @rel in @f's store holding @data (both asserted); the caller commits
 * or aborts it. */
static struct xprofs_store_writer *excl_written(struct fx *f, const char *rel, const char *data)
{
	struct xprofs_store_writer *w = NULL;
	size_t n = strlen(data);

	assert_int_equal(xprofs_store_writer_new(f->s, rel, XPROFS_STORE_EXCL, &w), 0);
	assert_int_equal(xprofs_store_writer_write(w, data, n, 0), (ssize_t)n);
	return w;
}

static void test_excl_create(void **state)
{
	struct fx *f = *state;
	struct xprofs_store_writer *w, *w2;
	struct xt_names n = {0};
	char buf[64];

	/* parents are created at commit only; nothing is visible before it, not even them */
	assert_int_equal(xprofs_store_writer_new(f->s, "new/plugins/profile/s/h.xplane.pb",
						 XPROFS_STORE_EXCL, &w),
			 0);
	assert_int_equal(xprofs_store_writer_write(w, "hello", 5, 0), 5);
	assert_int_equal(xprofs_store_writer_write(w, "!", 1, 5), 1);
	assert_int_equal(xprofs_store_writer_pread(w, buf, sizeof(buf), 0), 6);
	assert_int_equal(read_file(f->dir, "new/plugins/profile/s/h.xplane.pb", buf, sizeof(buf)),
			 -ENOENT);
	assert_int_equal(xprofs_store_list(f->s, "new/plugins/profile/s", xt_names_add, &n),
			 -ENOENT);
	assert_int_equal(n.n, 0);
	assert_int_equal(read_file(f->dir, "new", buf, sizeof(buf)), -ENOENT);
	/* a second exclusive writer for the same path loses at commit */
	w2 = excl_written(f, "new/plugins/profile/s/h.xplane.pb", "other");
	assert_int_equal(xprofs_store_writer_commit(w), 0);
	assert_int_equal(read_file(f->dir, "new/plugins/profile/s/h.xplane.pb", buf, sizeof(buf)),
			 6);
	assert_string_equal(buf, "hello!");
	assert_int_equal(xprofs_store_writer_commit(w2), -EEXIST);
	assert_int_equal(read_file(f->dir, "new/plugins/profile/s/h.xplane.pb", buf, sizeof(buf)),
			 6);
	assert_string_equal(buf, "hello!");
	assert_true(no_staging_left(f->dir));
	/* two writers of one new session: each is published, no staging is left */
	w = excl_written(f, "n2/plugins/profile/s/a.xplane.pb", "A");
	w2 = excl_written(f, "n2/plugins/profile/s/b.xplane.pb", "B");
	assert_int_equal(read_file(f->dir, "n2", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(xprofs_store_writer_commit(w2), 0);
	assert_int_equal(xprofs_store_writer_commit(w), 0);
	assert_int_equal(read_file(f->dir, "n2/plugins/profile/s/a.xplane.pb", buf, sizeof(buf)),
			 1);
	assert_int_equal(read_file(f->dir, "n2/plugins/profile/s/b.xplane.pb", buf, sizeof(buf)),
			 1);
	assert_true(no_staging_left(f->dir));
	/* two new sessions of one new run: the second finds the run made meanwhile */
	w = excl_written(f, "n4/plugins/profile/s/a.xplane.pb", "A");
	w2 = excl_written(f, "n4/plugins/profile/t/b.xplane.pb", "BB");
	assert_int_equal(xprofs_store_writer_commit(w), 0);
	assert_int_equal(xprofs_store_writer_commit(w2), 0);
	assert_int_equal(read_file(f->dir, "n4/plugins/profile/t/b.xplane.pb", buf, sizeof(buf)),
			 2);
	assert_true(no_staging_left(f->dir));
	/* an aborted writer of a new directory leaves nothing at all */
	w = excl_written(f, "n3/plugins/profile/s/a.xplane.pb", "A");
	xprofs_store_writer_abort(w);
	assert_int_equal(read_file(f->dir, "n3", buf, sizeof(buf)), -ENOENT);
	assert_true(no_staging_left(f->dir));
	/* and an existing file is refused up front */
	assert_int_equal(xprofs_store_writer_new(f->s, "top.txt", XPROFS_STORE_EXCL, &w), -EEXIST);
	/* abort leaves nothing behind */
	w = excl_written(f, "aborted.xplane.pb", "x");
	xprofs_store_writer_abort(w);
	xprofs_store_writer_abort(NULL);
	assert_int_equal(read_file(f->dir, "aborted.xplane.pb", buf, sizeof(buf)), -ENOENT);
}

static void test_inplace_writer(void **state)
{
	struct fx *f = *state;
	struct xprofs_store_writer *w;
	char buf[64];

	/* without TRUNC: starts from the content, written in place */
	assert_int_equal(xprofs_store_writer_new(f->s, "top.txt", 0, &w), 0);
	assert_int_equal(xprofs_store_writer_write(w, "J", 1, 0), 1);
	assert_int_equal(read_file(f->dir, "top.txt", buf, sizeof(buf)), 5);
	assert_string_equal(buf, "Jello");
	assert_int_equal(xprofs_store_writer_truncate(w, 2), 0);
	assert_int_equal(xprofs_store_writer_pread(w, buf, sizeof(buf), 0), 2);
	assert_int_equal(xprofs_store_writer_flush(w), 0);
	assert_int_equal(xprofs_store_writer_commit(w), 0);
	assert_int_equal(read_file(f->dir, "top.txt", buf, sizeof(buf)), 2);
	/* TRUNC */
	assert_int_equal(xprofs_store_writer_new(f->s, "top.txt", XPROFS_STORE_TRUNC, &w), 0);
	assert_int_equal(xprofs_store_writer_write(w, "abc", 3, 10), 3);
	assert_int_equal(xprofs_store_writer_commit(w), 0);
	assert_int_equal(read_file(f->dir, "top.txt", buf, sizeof(buf)), 13);
	/* abort removes a file this writer created, keeps an existing one */
	assert_int_equal(xprofs_store_writer_new(f->s, "a/b/.cached_tools.json", 0, &w), 0);
	xprofs_store_writer_abort(w);
	assert_int_equal(read_file(f->dir, "a/b/.cached_tools.json", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(xprofs_store_writer_new(f->s, "top.txt", 0, &w), 0);
	xprofs_store_writer_abort(w);
	assert_int_equal(read_file(f->dir, "top.txt", buf, sizeof(buf)), 13);
	/* directories and bad paths */
	assert_int_equal(xprofs_store_writer_new(f->s, "run", 0, &w), -EISDIR);
	assert_int_equal(xprofs_store_writer_new(f->s, "a/../x", 0, &w), -EINVAL);
	assert_int_equal(xprofs_store_writer_new(f->s, "x", 0x80, &w), -EINVAL);
}

static void test_namespace_ops(void **state)
{
	struct fx *f = *state;
	struct xprofs_store_stat st;
	struct xprofs_buf b;
	char buf[64];

	assert_int_equal(xprofs_store_mkdir(f->s, "d"), 0);
	assert_int_equal(xprofs_store_mkdir(f->s, "d"), -EEXIST);
	assert_int_equal(xprofs_store_mkdir(f->s, "nope/d"), -ENOENT);
	assert_int_equal(xprofs_store_rename(f->s, "top.txt", "d/moved.txt"), 0);
	assert_int_equal(read_file(f->dir, "d/moved.txt", buf, sizeof(buf)), 5);
	assert_int_equal(xprofs_store_stat(f->s, "top.txt", &st), -ENOENT);
	assert_int_equal(xprofs_store_rmdir(f->s, "d"), -ENOTEMPTY);
	assert_int_equal(xprofs_store_unlink(f->s, "d/moved.txt"), 0);
	assert_int_equal(xprofs_store_unlink(f->s, "d/moved.txt"), -ENOENT);
	assert_int_equal(xprofs_store_unlink(f->s, "d"), -EISDIR);
	assert_int_equal(xprofs_store_rmdir(f->s, "d"), 0);
	assert_int_equal(xprofs_store_unlink(f->s, ""), -EINVAL);
	assert_int_equal(xprofs_store_rename(f->s, "../x", "y"), -EINVAL);
	assert_int_equal(xprofs_store_refresh(f->s), 0);

	xprofs_buf_init(&b, 1 << 16);
	assert_int_equal(xprofs_store_status_json(f->s, &b), 0);
	assert_non_null(strstr(b.data, "\"backend\":\"local\""));
	assert_non_null(strstr(b.data, "\"renames\":1"));
	assert_non_null(strstr(b.data, "\"unlinks\":3"));
	assert_true(b.data[0] == '{' && b.data[b.len - 1] == '}');
	xprofs_buf_deinit(&b);
}

/* lstat/readlink see links as links; modes, owners, times; exact create modes; outside links */
static void test_modes_and_links(void **state)
{
	struct fx *f = *state;
	struct xprofs_store_attr a = {.valid = XPROFS_ATTR_MODE, .mode = 0600};
	struct xprofs_store_writer *w;
	struct xprofs_store_stat st;
	char p[512], buf[64];
	struct stat ks;
	mode_t old = umask(022);

	snprintf(p, sizeof(p), "%s/loop", f->dir);
	assert_int_equal(symlink(".", p), 0);
	snprintf(p, sizeof(p), "%s/escape", f->dir);
	assert_int_equal(symlink("/etc", p), 0);
	assert_int_equal(xprofs_store_lstat(f->s, "loop", &st), 0);
	assert_int_equal(st.type, XPROFS_STORE_LINK);
	assert_int_equal(st.size, 1);
	assert_int_equal(xprofs_store_readlink(f->s, "loop", buf, sizeof(buf)), 1);
	assert_string_equal(buf, ".");
	assert_int_equal(xprofs_store_readlink(f->s, "top.txt", buf, sizeof(buf)), -EINVAL);
	assert_int_equal(xprofs_store_readlink(f->s, "loop", buf, 1), -ENAMETOOLONG);
	/* modes and owners are the source's */
	assert_int_equal(xprofs_store_setattr(f->s, "top.txt", &a), 0);
	assert_int_equal(xprofs_store_lstat(f->s, "top.txt", &st), 0);
	assert_int_equal(st.mode, 0600);
	assert_int_equal(st.uid, getuid());
	assert_int_not_equal(st.fileid, 0);
	assert_int_equal(xprofs_store_setattr(f->s, "loop", &a), -EPERM); /* never through a link */
	a.valid = XPROFS_ATTR_TIMES;
	a.times[0].tv_sec = a.times[1].tv_sec = 1000;
	a.times[0].tv_nsec = a.times[1].tv_nsec = 0;
	assert_int_equal(xprofs_store_setattr(f->s, "top.txt", &a), 0);
	assert_int_equal(xprofs_store_stat(f->s, "top.txt", &st), 0);
	assert_int_equal(st.mtime_ns, 1000000000000LL);
	/* creates get exactly the mode asked for, whatever our umask */
	assert_int_equal(xprofs_store_mkdir_mode(f->s, "d", 0771), 0);
	snprintf(p, sizeof(p), "%s/d", f->dir);
	assert_int_equal(stat(p, &ks), 0);
	assert_int_equal(ks.st_mode & 07777, 0771);
	assert_int_equal(xprofs_store_writer_new(f->s, "d/n.txt", XPROFS_STORE_WITH_MODE(0664), &w),
			 0);
	assert_int_equal(xprofs_store_writer_commit(w), 0);
	snprintf(p, sizeof(p), "%s/d/n.txt", f->dir);
	assert_int_equal(stat(p, &ks), 0);
	assert_int_equal(ks.st_mode & 07777, 0664);
	assert_int_equal(xprofs_store_writer_new(f->s, "d/x.xplane.pb",
						 XPROFS_STORE_EXCL | XPROFS_STORE_WITH_MODE(0640),
						 &w),
			 0);
	assert_int_equal(xprofs_store_writer_commit(w), 0);
	snprintf(p, sizeof(p), "%s/d/x.xplane.pb", f->dir);
	assert_int_equal(stat(p, &ks), 0);
	assert_int_equal(ks.st_mode & 07777, 0640);
	assert_int_equal(xprofs_store_symlink(f->s, "top.txt", "d/l"), 0);
	assert_int_equal(xprofs_store_readlink(f->s, "d/l", buf, sizeof(buf)), 7);
	/* a link out of the root is followed only when allowed */
	if (have_openat2()) {
		assert_int_equal(xprofs_store_stat(f->s, "escape/passwd", &st), -ENOENT);
		assert_int_equal(xprofs_store_local_follow_outside(f->s, true), 0);
		assert_int_equal(xprofs_store_stat(f->s, "escape/passwd", &st), 0);
		assert_int_equal(st.type, XPROFS_STORE_FILE);
		assert_int_equal(xprofs_store_local_follow_outside(f->s, false), 0);
		assert_int_equal(xprofs_store_stat(f->s, "escape/passwd", &st), -ENOENT);
	}
	umask(old);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path_valid),
		cmocka_unit_test_setup_teardown(test_new_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stat_and_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_list_and_symlinks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sweep_abandoned_stages, setup, teardown),
		cmocka_unit_test_setup_teardown(test_excl_create, setup, teardown),
		cmocka_unit_test_setup_teardown(test_inplace_writer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_namespace_ops, setup, teardown),
		cmocka_unit_test_setup_teardown(test_modes_and_links, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
