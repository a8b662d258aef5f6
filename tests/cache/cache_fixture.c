/*
 * cache_fixture.c - what the cache's unit tests share (test_cache.c,
 * test_writer.c): a fresh cache directory per test, caches in it, test data
 * that compresses (JSON-like) or not (random), and checks of whole entries.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cache_fixture.h"
#include "testutil.h"

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	return remove(p);
}

void rm_tree(const char *dir)
{
	nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	strcpy(f->dir, "/tmp/xprofs-cache-test.XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	*state = f;
	return 0;
}

int teardown(void **state)
{
	struct fixture *f = *state;

	nftw(f->dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

/* A new cache on the fixture's directory: cap @cap, block size @bs unless 0. */
struct xprofs_cache *new_cache(struct fixture *f, uint64_t cap, uint32_t bs)
{
	struct xprofs_cache *c;

	assert_int_equal(xprofs_cache_new(f->dir, cap, &c), 0);
	if (bs)
		assert_int_equal(xprofs_cache_set_block_size(c, bs), 0);
	return c;
}

static _Thread_local uint64_t rng_state = 88172645463325252ULL;

uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

uint8_t *random_data(size_t n)
{
	uint8_t *p = malloc(n ? n : 1);

	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rnd();
	return p;
}

/* JSON-like text: compresses well, but not trivially. */
uint8_t *json_data(size_t n)
{
	uint8_t *p = malloc(n + 256);
	size_t len = 0;
	unsigned i = 0;

	for (; len < n; i++)
		len += (size_t)sprintf((char *)p + len,
				       "{\"ph\":\"X\",\"name\":\"fusion.%u\",\"pid\":%u,\"tid\":%u,"
				       "\"ts\":%llu,\"dur\":%u},\n",
				       (unsigned)(rnd() % 500), i % 8, (i / 8) % 32,
				       (unsigned long long)i * 37, (unsigned)(rnd() % 10000));
	return p;
}

void put_entry(struct xprofs_cache *c, const char *key, const uint8_t *p, size_t n, size_t chunk)
{
	struct xprofs_cache_writer *w;

	assert_int_equal(xprofs_cache_writer_new(c, key, strlen(key), &w), 0);
	for (size_t off = 0; off < n; off += chunk) {
		size_t k = n - off < chunk ? n - off : chunk;

		assert_int_equal(xprofs_cache_writer_write(w, p + off, k), 0);
	}
	assert_int_equal(xprofs_cache_writer_commit(w), 0);
}

/* Opens @key and checks it holds exactly @p[0..n), whole and at random offsets. */
void check_entry(struct xprofs_cache *c, const char *key, const uint8_t *p, size_t n)
{
	struct xprofs_cache_reader *e;
	uint8_t *got = malloc(n + 100);

	assert_int_equal(xprofs_cache_reader_open(c, key, strlen(key), &e), 0);
	assert_int_equal(xprofs_cache_reader_size(e), n);
	XT_SAME_BYTES(got, xprofs_cache_reader_pread(e, got, n + 100, 0), p, n);
	for (int i = 0; i < 200 && n; i++) {
		uint64_t off = rnd() % n;
		size_t len = (size_t)(rnd() % (i % 4 == 0 ? n : 70000)) + 1;
		size_t want = len < n - off ? len : (size_t)(n - off);

		XT_SAME_BYTES(got, xprofs_cache_reader_pread(e, got, len, off), p + off, want);
	}
	assert_int_equal(xprofs_cache_reader_pread(e, got, 10, n), 0);
	assert_int_equal(xprofs_cache_reader_pread(e, got, 10, n + 12345), 0);
	xprofs_cache_reader_close(e);
	free(got);
}

/* Regular files in @dir: how many, or with @bytes their total size. */
uint64_t dir_files(const char *dir, bool bytes)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	uint64_t n = 0;

	assert_non_null(d);
	while ((de = readdir(d))) {
		struct stat st;

		if (de->d_type != DT_REG)
			continue;
		if (!bytes)
			n++;
		else if (fstatat(dirfd(d), de->d_name, &st, 0) == 0)
			n += (uint64_t)st.st_size;
	}
	closedir(d);
	return n;
}

void dir_touch(const char *dir, time_t sec)
{
	const struct timespec t[2] = {{.tv_sec = sec}, {.tv_sec = sec}};
	DIR *d = opendir(dir);
	struct dirent *de;

	assert_non_null(d);
	while ((de = readdir(d)))
		if (de->d_type == DT_REG)
			assert_int_equal(utimensat(dirfd(d), de->d_name, t, 0), 0);
	closedir(d);
}

/* Files in the fixture's tmp/ (the writers' unpublished entries). */
uint64_t tmp_files(struct fixture *f)
{
	char tmp[128];

	snprintf(tmp, sizeof(tmp), "%s/tmp", f->dir);
	return dir_files(tmp, false);
}

bool has(struct xprofs_cache *c, const char *key)
{
	struct xprofs_cache_reader *e;

	if (xprofs_cache_reader_open(c, key, strlen(key), &e) < 0)
		return false;
	xprofs_cache_reader_close(e);
	return true;
}
