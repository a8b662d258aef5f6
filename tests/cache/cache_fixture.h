/*
 * cache_fixture.h - the helpers the cache's unit tests share (cache_fixture.c).
 * Memory they return is the caller's to free().
 */
#ifndef XPROFS_TESTS_CACHE_FIXTURE_H
#define XPROFS_TESTS_CACHE_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "xprofs/cache.h"

/* One test's cache directory (cmocka state). */
struct fixture {
	char dir[64];
};

/* cmocka setup / teardown: a fresh directory under the temp dir, removed after. */
int setup(void **state);
int teardown(void **state);
/* new_cache() - a cache in @f's directory, capped at @cap, block size @bs (0: default). */
struct xprofs_cache *new_cache(struct fixture *f, uint64_t cap, uint32_t bs);
/* rm_tree() - @dir and everything under it, removed. */
void rm_tree(const char *dir);
/* rnd() - the tests' xorshift generator (per thread, fixed seed). */
uint64_t rnd(void);
/* random_data() / json_data() - @n bytes that lz4 cannot / can shrink; caller frees. */
uint8_t *random_data(size_t n);
uint8_t *json_data(size_t n);
/* put_entry() - @n bytes at @p written as entry @key in @chunk-byte writes, committed. */
void put_entry(struct xprofs_cache *c, const char *key, const uint8_t *p, size_t n, size_t chunk);
/* check_entry() - entry @key reads back as exactly @p[0..n). */
void check_entry(struct xprofs_cache *c, const char *key, const uint8_t *p, size_t n);
/* dir_files() - the files in @dir (with @bytes: their bytes). */
uint64_t dir_files(const char *dir, bool bytes);
/* dir_touch() - set the mtime of every regular file in @dir to @sec. */
void dir_touch(const char *dir, time_t sec);
/* tmp_files() - the files in @f's cache's tmp/ directory. */
uint64_t tmp_files(struct fixture *f);
/* has() - entry @key opens (a hit). */
bool has(struct xprofs_cache *c, const char *key);

#endif
