/*
 * test_cache.c - unit tests for cache/: round trips at block boundaries,
 * random-offset reads, persistence, sharing a directory, concurrency, the
 * size cap and LRU order, and hostile entry files (each one a counted miss
 * or an -EIO read, never a crash and never wrong bytes), and the portable
 * form's export and import (every damaged byte refused). Hostile files with
 * valid hashes are crafted with format.c's own encoders (white box), since
 * otherwise the hash checks would hide the bounds checks behind them.
 * The writer's own tests are in test_writer.c; the helpers both use in
 * cache_fixture.c.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cache_fixture.h"
#include "testutil.h"
#include "xprofs/cache.h"
#include "../../cache/cache-internal.h"

/* The only entry file in @dir (asserts there is exactly one). */
static void only_entry(const char *dir, char *out, size_t n)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int found = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		if (de->d_type == DT_REG && strstr(de->d_name, ".xc")) {
			snprintf(out, n, "%s/%s", dir, de->d_name);
			found++;
		}
	closedir(d);
	assert_int_equal(found, 1);
}

static void test_round_trip_sizes(void **state)
{
	struct fixture *f = *state;
	struct xprofs_cache *c;
	const uint32_t bss[] = {4096, 256 << 10};

	c = new_cache(f, 1ULL << 30, 0);
	for (size_t k = 0; k < 2; k++) {
		uint32_t bs = bss[k];
		const size_t sizes[] = {
			0, 1, bs - 1, bs, bs + 1, 3 * (size_t)bs, 5 * (size_t)bs + 17};

		assert_int_equal(xprofs_cache_set_block_size(c, bs), 0);
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			char key[64];
			uint8_t *r = random_data(sizes[i]), *j = json_data(sizes[i]);

			snprintf(key, sizeof(key), "rand/%u/%zu", bs, sizes[i]);
			put_entry(c, key, r, sizes[i], 1000);
			check_entry(c, key, r, sizes[i]);
			snprintf(key, sizeof(key), "json/%u/%zu", bs, sizes[i]);
			put_entry(c, key, j, sizes[i], sizes[i] ? sizes[i] : 1);
			check_entry(c, key, j, sizes[i]);
			free(r);
			free(j);
		}
	}
	assert_int_equal(xprofs_cache_set_block_size(c, 3000), -EINVAL);
	assert_int_equal(xprofs_cache_set_block_size(c, 8u << 20), -EINVAL);
	xprofs_cache_free(c);
}

static void test_multi_mb(void **state)
{
	struct fixture *f = *state;
	struct xprofs_cache_stats st;
	struct xprofs_cache *c;
	size_t n = 6 << 20;
	uint8_t *r = random_data(n), *j = json_data(n);

	c = new_cache(f, 0, 0);
	put_entry(c, "random", r, n, 65537);
	put_entry(c, "json", j, n, 1 << 20);
	check_entry(c, "random", r, n);
	check_entry(c, "json", j, n);
	xprofs_cache_get_stats(c, &st);
	assert_int_equal(st.entries, 2);
	assert_int_equal(st.raw_bytes_written, 2 * (uint64_t)n);
	/* random data is stored raw (small overhead), JSON shrinks a lot */
	assert_true(st.bytes < n + n / 2);
	assert_true(st.bytes > n);
	xprofs_cache_free(c);
	free(r);
	free(j);
}

/* 4 KiB blocks and > 1024 of them: the writer's index spills to a temp file. */
static void test_index_spill(void **state)
{
	struct fixture *f = *state;
	struct xprofs_cache *c;
	size_t n = 9 << 20;
	uint8_t *j = json_data(n);

	c = new_cache(f, 0, 4096);
	put_entry(c, "spill", j, n, 100000);
	check_entry(c, "spill", j, n);
	xprofs_cache_free(c);
	free(j);
}

static void test_sink_reader_abort_remove(void **state)
{
	struct fixture *f = *state;
	struct xprofs_cache_writer *w;
	struct xprofs_cache_reader *e;
	struct xprofs_cache *c;
	struct xprofs_reader rd;
	struct xprofs_sink s;
	char got[32];

	c = new_cache(f, 0, 0);
	assert_int_equal(xprofs_cache_writer_new(c, "k", 1, &w), 0);
	s = xprofs_cache_writer_as_sink(w);
	assert_int_equal(s.write(s.arg, "hello ", 6), 0);
	assert_int_equal(s.write(s.arg, "world", 5), 0);
	assert_int_equal(xprofs_cache_writer_commit(w), 0);
	assert_int_equal(xprofs_cache_reader_open(c, "k", 1, &e), 0);
	rd = xprofs_cache_reader_as_reader(e);
	assert_int_equal(rd.size, 11);
	XT_SAME_BYTES(got, xprofs_reader_pread(&rd, got, sizeof(got), 6), "world", 5);
	xprofs_cache_reader_close(e);

	/* abort publishes nothing and leaves no temp file */
	assert_int_equal(xprofs_cache_writer_new(c, "aborted", 7, &w), 0);
	assert_int_equal(xprofs_cache_writer_write(w, "x", 1), 0);
	xprofs_cache_writer_abort(w);
	xprofs_cache_writer_abort(NULL);
	assert_int_equal(xprofs_cache_reader_open(c, "aborted", 7, &e), -ENOENT);
	assert_int_equal(tmp_files(f), 0);

	assert_int_equal(xprofs_cache_remove(c, "k", 1), 0);
	assert_int_equal(xprofs_cache_remove(c, "k", 1), -ENOENT);
	assert_int_equal(xprofs_cache_reader_open(c, "k", 1, &e), -ENOENT);
	assert_int_equal(dir_files(f->dir, false), 0);
	xprofs_cache_reader_close(NULL);
	assert_null(xprofs_cache_free(c));
	assert_null(xprofs_cache_free(NULL));
}

static void test_persistence(void **state)
{
	struct fixture *f = *state;
	struct xprofs_cache_stats st;
	struct xprofs_cache *c;
	uint8_t *j = json_data(700000);

	c = new_cache(f, 0, 0);
	put_entry(c, "persist", j, 700000, 4096);
	xprofs_cache_free(c);

	c = new_cache(f, 0, 0);
	xprofs_cache_get_stats(c, &st);
	assert_int_equal(st.entries, 1);
	assert_true(st.bytes > 0 && st.bytes < 700000);
	check_entry(c, "persist", j, 700000);
	xprofs_cache_get_stats(c, &st);
	assert_int_equal(st.hits, 1);
	assert_int_equal(st.misses, 0);
	xprofs_cache_free(c);
	free(j);
}

static void test_two_caches_one_dir(void **state)
{
	struct fixture *f = *state;
	struct xprofs_cache *a, *b;
	struct xprofs_cache_reader *e;
	uint8_t *r = random_data(300000);

	a = new_cache(f, 0, 0);
	b = new_cache(f, 0, 0);
	put_entry(a, "shared", r, 300000, 7777);
	check_entry(b, "shared", r, 300000);
	/* b holds it open while a replaces it: b keeps reading its version */
	assert_int_equal(xprofs_cache_reader_open(b, "shared", 6, &e), 0);
	put_entry(a, "shared", (const uint8_t *)"new", 3, 3);
	{
		uint8_t got[16];

		XT_SAME_BYTES(got, xprofs_cache_reader_pread(e, got, 16, 0), r, 16);
	}
	xprofs_cache_reader_close(e);
	check_entry(b, "shared", (const uint8_t *)"new", 3);
	assert_int_equal(xprofs_cache_remove(b, "shared", 6), 0);
	assert_int_equal(xprofs_cache_reader_open(a, "shared", 6, &e), -ENOENT);
	xprofs_cache_free(a);
	xprofs_cache_free(b);
	free(r);
}

struct thr {
	struct xprofs_cache *c;
	const uint8_t *data;
	size_t n;
	int fails;
};

static void *writer_thread(void *arg)
{
	struct thr *t = arg;

	for (int i = 0; i < 5; i++) {
		struct xprofs_cache_writer *w;

		if (xprofs_cache_writer_new(t->c, "same", 4, &w) < 0) {
			t->fails++;
			continue;
		}
		for (size_t off = 0; off < t->n; off += 5000) {
			size_t k = t->n - off < 5000 ? t->n - off : 5000;

			if (xprofs_cache_writer_write(w, t->data + off, k) < 0)
				t->fails++;
		}
		if (xprofs_cache_writer_commit(w) < 0)
			t->fails++;
	}
	return NULL;
}

static void *reader_thread(void *arg)
{
	struct thr *t = arg;
	uint8_t *got = malloc(t->n);

	for (int i = 0; i < 200; i++) {
		struct xprofs_cache_reader *e;

		if (xprofs_cache_reader_open(t->c, "same", 4, &e) < 0)
			continue; /* not written yet: a miss is fine, wrong bytes are not */
		if (xprofs_cache_reader_size(e) != t->n ||
		    xprofs_cache_reader_pread(e, got, t->n, 0) != (ssize_t)t->n ||
		    memcmp(got, t->data, t->n) != 0)
			t->fails++;
		for (int k = 0; k < 20; k++) {
			uint64_t off = rnd() % t->n;
			size_t len = 1 + (size_t)(rnd() % 9000);

			if (len > t->n - off)
				len = (size_t)(t->n - off);
			if (xprofs_cache_reader_pread(e, got, len, off) != (ssize_t)len ||
			    memcmp(got, t->data + off, len) != 0)
				t->fails++;
		}
		xprofs_cache_reader_close(e);
	}
	free(got);
	return NULL;
}

static void test_concurrent_same_key(void **state)
{
	struct fixture *f = *state;
	struct xprofs_cache_stats st;
	struct xprofs_cache *c;
	pthread_t th[8];
	struct thr t[8];
	size_t n = 200000;
	uint8_t *j = json_data(n);

	c = new_cache(f, 0, 16384);
	for (int i = 0; i < 8; i++) {
		t[i] = (struct thr){.c = c, .data = j, .n = n};
		assert_int_equal(
			pthread_create(&th[i], NULL, i < 4 ? writer_thread : reader_thread, &t[i]),
			0);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(t[i].fails, 0);
	}
	check_entry(c, "same", j, n);
	xprofs_cache_get_stats(c, &st);
	assert_int_equal(st.entries, 1);
	assert_int_equal(st.corrupt, 0);
	assert_int_equal(dir_files(f->dir, false), 1);
	assert_int_equal(tmp_files(f), 0);
	xprofs_cache_free(c);
	free(j);
}

/*
 * Two processes, each with its own cache on one directory, both writing and
 * reading one key: atomic publish across processes (never a torn entry).
 */
static void test_two_processes(void **state)
{
	struct fixture *f = *state;
	struct xprofs_cache_stats st;
	struct xprofs_cache *c;
	struct thr t;
	size_t n = 300000;
	uint8_t *j = json_data(n);
	int status;
	pid_t pid;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct thr ct;

		if (xprofs_cache_new(f->dir, 0, &c) < 0 || xprofs_cache_set_block_size(c, 8192) < 0)
			_exit(2);
		ct = (struct thr){.c = c, .data = j, .n = n};
		writer_thread(&ct);
		reader_thread(&ct);
		writer_thread(&ct);
		xprofs_cache_free(c);
		_exit(ct.fails ? 1 : 0);
	}
	c = new_cache(f, 0, 16384); /* a different layout */
	t = (struct thr){.c = c, .data = j, .n = n};
	reader_thread(&t);
	writer_thread(&t);
	reader_thread(&t);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(t.fails, 0);
	check_entry(c, "same", j, n);
	xprofs_cache_get_stats(c, &st);
	assert_int_equal(st.corrupt, 0);
	assert_int_equal(dir_files(f->dir, false), 1);
	xprofs_cache_free(c);
	free(j);
}

/* Many threads reading one open entry: the one-block cache under contention. */
static void test_concurrent_reads_one_entry(void **state)
{
	struct fixture *f = *state;
	struct xprofs_cache *c;
	pthread_t th[6];
	struct thr t[6];
	size_t n = 1 << 20;
	uint8_t *r = random_data(n);

	c = new_cache(f, 0, 8192);
	put_entry(c, "same", r, n, n);
	for (int i = 0; i < 6; i++) {
		t[i] = (struct thr){.c = c, .data = r, .n = n};
		assert_int_equal(pthread_create(&th[i], NULL, reader_thread, &t[i]), 0);
	}
	for (int i = 0; i < 6; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(t[i].fails, 0);
	}
	xprofs_cache_free(c);
	free(r);
}

static void test_eviction_lru(void **state)
{
	struct fixture *f = *state;
	struct xprofs_cache_stats st;
	struct xprofs_cache_reader *pinned;
	struct xprofs_cache *c;
	const uint64_t cap = 5 * 50000 + 5000; /* five 50 KB random entries */
	uint8_t *r = random_data(50000);
	char key[32];

	c = new_cache(f, cap, 0);
	for (int i = 0; i < 5; i++) {
		snprintf(key, sizeof(key), "e%d", i);
		put_entry(c, key, r, 50000, 50000);
	}
	xprofs_cache_get_stats(c, &st);
	assert_int_equal(st.entries, 5);
	assert_int_equal(st.evictions, 0);
	/* use e0: e1 becomes the least recently used */
	assert_true(has(c, "e0"));
	put_entry(c, "e5", r, 50000, 50000);
	assert_false(has(c, "e1"));
	assert_true(has(c, "e0"));
	assert_true(has(c, "e2"));
	/* an open entry is never evicted, even as the LRU one */
	assert_int_equal(xprofs_cache_reader_open(c, "e3", 2, &pinned), 0);
	for (int i = 6; i < 14; i++) {
		snprintf(key, sizeof(key), "e%d", i);
		put_entry(c, key, r, 50000, 50000);
		xprofs_cache_get_stats(c, &st);
		assert_true(st.bytes <= cap);
		assert_true(dir_files(f->dir, true) <= cap);
	}
	assert_true(has(c, "e3"));
	assert_false(has(c, "e0"));
	assert_true(has(c, "e13"));
	xprofs_cache_reader_close(pinned);
	xprofs_cache_get_stats(c, &st);
	assert_true(st.evictions >= 9);
	assert_int_equal(st.entries, dir_files(f->dir, false));
	xprofs_cache_free(c);

	/* a smaller cap at startup evicts down to it, oldest mtime first */
	c = new_cache(f, 120000, 0);
	assert_true(dir_files(f->dir, true) <= 120000);
	assert_true(has(c, "e13"));
	xprofs_cache_free(c);
	free(r);
}

/*
 * Two caches on one directory each under the cap on their own but not
 * together: a rescan learns the other's entries and evicts down to the cap,
 * and forgets entries the other removed.
 */
static void test_rescan_shared_cap(void **state)
{
	struct fixture *f = *state;
	struct xprofs_cache_stats st;
	struct xprofs_cache *a, *b;
	const uint64_t cap = 5 * 50000 + 5000;
	uint8_t *r = random_data(50000);
	char key[32];

	a = new_cache(f, cap, 0);
	b = new_cache(f, cap, 0);
	for (int i = 0; i < 4; i++) {
		snprintf(key, sizeof(key), "a%d", i);
		put_entry(a, key, r, 50000, 50000);
	}
	for (int i = 0; i < 3; i++) {
		snprintf(key, sizeof(key), "b%d", i);
		put_entry(b, key, r, 50000, 50000);
	}
	/*
	 * b's entries reach a only through their files' mtimes, a's own through
	 * its clock: at a second boundary a file's (coarser) kernel time can read
	 * older than a's last write. Put b's clearly after, so the order tested
	 * is the rescan's, not the clocks' (a's known entries keep their times).
	 */
	dir_touch(f->dir, time(NULL) + 60);
	assert_true(dir_files(f->dir, true) > cap); /* neither knew */
	assert_int_equal(xprofs_cache_rescan(a), 0);
	assert_true(dir_files(f->dir, true) <= cap);
	xprofs_cache_get_stats(a, &st);
	assert_int_equal(st.entries, dir_files(f->dir, false));
	assert_int_equal(st.bytes, dir_files(f->dir, true));
	assert_int_equal(st.evictions, 2);
	/* a's oldest went first; b's newer entries survive */
	assert_false(has(a, "a0"));
	assert_false(has(a, "a1"));
	assert_true(has(b, "b0"));

	/* b removes one; a forgets it on its next rescan */
	assert_int_equal(xprofs_cache_remove(b, "b1", 2), 0);
	assert_int_equal(xprofs_cache_rescan(a), 0);
	xprofs_cache_get_stats(a, &st);
	assert_int_equal(st.entries, dir_files(f->dir, false));
	assert_int_equal(st.bytes, dir_files(f->dir, true));
	xprofs_cache_free(a);
	xprofs_cache_free(b);
	free(r);
}

static void test_too_big(void **state)
{
	struct fixture *f = *state;
	struct xprofs_cache_writer *w;
	struct xprofs_cache *c;
	uint8_t *r = random_data(300000);

	c = new_cache(f, 100000, 0);
	put_entry(c, "small", r, 1000, 1000);
	assert_int_equal(xprofs_cache_set_block_size(c, 4096), 0);
	assert_int_equal(xprofs_cache_writer_new(c, "big", 3, &w), 0);
	assert_int_equal(xprofs_cache_writer_write(w, r, 300000), -EFBIG);
	assert_int_equal(xprofs_cache_writer_write(w, r, 1), -EFBIG);
	assert_int_equal(xprofs_cache_writer_commit(w), -EFBIG);
	assert_true(has(c, "small"));
	assert_false(has(c, "big"));
	assert_int_equal(tmp_files(f), 0);
	xprofs_cache_free(c);
	free(r);
}

static uint8_t *slurp(const char *path, size_t *n)
{
	struct stat st;
	int fd = open(path, O_RDONLY);
	uint8_t *p;

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	p = malloc((size_t)st.st_size + 1);
	assert_int_equal(read(fd, p, (size_t)st.st_size), st.st_size);
	close(fd);
	*n = (size_t)st.st_size;
	return p;
}

static void spit(const char *path, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, p, n), (ssize_t)n);
	close(fd);
}

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

/*
 * Every single-byte flip and every truncation of a small multi-block entry,
 * with exact expectations: a flip in the header, key, index or footer and
 * any truncation are a miss on open (removed, counted); a flip inside a
 * block opens fine and its read fails with -EIO (removed, counted). Never a
 * crash, never wrong bytes. @data decides lz4 blocks (JSON) or raw ones.
 */
static void corrupt_exhaustive(const char *dir, const uint8_t *data, size_t dn)
{
	struct xprofs_cache_stats st;
	struct xprofs_cache *c;
	uint8_t *good, *got = malloc(dn + 100);
	uint64_t hdr_len = CACHE_HDR_FIXED + 6, index_off, expect_corrupt = 0;
	size_t n;
	char path[512];

	assert_int_equal(xprofs_cache_new(dir, 0, &c), 0);
	assert_int_equal(xprofs_cache_set_block_size(c, 4096), 0);
	put_entry(c, "victim", data, dn, 3000);
	only_entry(dir, path, sizeof(path));
	good = slurp(path, &n);
	index_off = le64(good + n - CACHE_FOOTER_SIZE + 16);
	assert_true(index_off > hdr_len && index_off < n);
	for (size_t i = 0; i < n + n; i++) {
		struct xprofs_cache_reader *e;
		uint8_t *bad = malloc(n);
		bool in_block = i >= hdr_len && i < index_off;
		size_t len = n;
		ssize_t k;

		memcpy(bad, good, n);
		if (i < n)
			bad[i] ^= (uint8_t)(1u << (i % 8));
		else
			len = i - n; /* truncated to every length */
		spit(path, bad, len);
		free(bad);
		expect_corrupt++;
		if (i >= n || !in_block) {
			assert_int_equal(xprofs_cache_reader_open(c, "victim", 6, &e), -ENOENT);
			assert_int_equal(access(path, F_OK), -1); /* removed */
			continue;
		}
		assert_int_equal(xprofs_cache_reader_open(c, "victim", 6, &e), 0);
		assert_int_equal(xprofs_cache_reader_size(e), dn);
		k = xprofs_cache_reader_pread(e, got, dn + 100, 0);
		assert_int_equal(k, -EIO);
		assert_int_equal(access(path, F_OK), -1);
		xprofs_cache_reader_close(e);
	}
	xprofs_cache_get_stats(c, &st);
	assert_int_equal(st.corrupt, expect_corrupt);
	xprofs_cache_free(c);
	free(good);
	free(got);
}

static void test_corrupt_exhaustive_lz4(void **state)
{
	struct fixture *f = *state;
	uint8_t *j = json_data(20000);

	corrupt_exhaustive(f->dir, j, 20000);
	free(j);
}

static void test_corrupt_exhaustive_raw(void **state)
{
	struct fixture *f = *state;
	uint8_t *r = random_data(9000);

	corrupt_exhaustive(f->dir, r, 9000);
	free(r);
}

/* Crafted files with valid hashes but impossible sizes, counts and offsets. */
static void craft(const char *path, const char *key, uint32_t bs, uint64_t raw_size,
		  uint64_t nblocks, int64_t index_off_delta, const struct cache_rec *recs,
		  size_t nrecs, size_t pad)
{
	size_t keylen = strlen(key), n = 0;
	uint8_t *p = calloc(1, CACHE_HDR_FIXED + keylen + pad + nrecs * CACHE_REC_SIZE +
				       CACHE_FOOTER_SIZE);
	uint64_t hh, ih, index_off;

	hh = cache_header_encode(p, key, (uint32_t)keylen, bs);
	n = CACHE_HDR_FIXED;
	memcpy(p + n, key, keylen);
	n += keylen + pad;
	index_off = n + (uint64_t)index_off_delta; /* 0 = where it is */
	ih = hh;
	for (size_t i = 0; i < nrecs; i++) {
		cache_rec_encode(p + n, &recs[i]);
		ih = cache_hash64(p + n, CACHE_REC_SIZE, ih);
		n += CACHE_REC_SIZE;
	}
	cache_footer_encode(p + n, raw_size, nblocks, index_off, ih, hh);
	n += CACHE_FOOTER_SIZE;
	spit(path, p, n);
	free(p);
}

/* Asserts @key misses as corrupt now, and counts it. */
static void expect_corrupt_miss(struct xprofs_cache *c, const char *key, uint64_t *corrupt)
{
	struct xprofs_cache_reader *e;
	struct xprofs_cache_stats st;

	assert_int_equal(xprofs_cache_reader_open(c, key, strlen(key), &e), -ENOENT);
	(*corrupt)++;
	xprofs_cache_get_stats(c, &st);
	assert_int_equal(st.corrupt, *corrupt);
}

static void test_hostile_files(void **state)
{
	struct fixture *f = *state;
	struct xprofs_cache_stats st;
	struct xprofs_cache_reader *e;
	struct xprofs_cache *c;
	char path[512];
	const char *k = "hostile";
	struct cache_rec rec = {.off = CACHE_HDR_FIXED + 7, .stored = 10, .raw = 10, .plain = true};
	uint8_t junk[4096];
	uint64_t corrupt = 0;

	c = new_cache(f, 0, 0);
	put_entry(c, k, (const uint8_t *)"0123456789", 10, 10);
	only_entry(f->dir, path, sizeof(path));

	/* garbage: empty, random, text */
	spit(path, "", 0);
	expect_corrupt_miss(c, k, &corrupt);
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)rnd();
	spit(path, junk, sizeof(junk));
	expect_corrupt_miss(c, k, &corrupt);
	memcpy(junk, CACHE_MAGIC_HEAD, CACHE_MAGIC_LEN); /* right magic, garbage after */
	spit(path, junk, sizeof(junk));
	expect_corrupt_miss(c, k, &corrupt);

	/* huge raw size / block count with valid hashes */
	craft(path, k, 4096, UINT64_MAX, 1, 0, &rec, 1, 10);
	expect_corrupt_miss(c, k, &corrupt);
	craft(path, k, 4096, 10, UINT64_MAX / 2, 0, &rec, 1, 10);
	expect_corrupt_miss(c, k, &corrupt);
	craft(path, k, 4096, (uint64_t)INT64_MAX, 1ULL << 51, 0, &rec, 1, 10);
	expect_corrupt_miss(c, k, &corrupt);
	/* a bad block size */
	craft(path, k, 4095, 10, 1, 0, &rec, 1, 10);
	expect_corrupt_miss(c, k, &corrupt);
	craft(path, k, 1u << 31, 10, 1, 0, &rec, 1, 10);
	expect_corrupt_miss(c, k, &corrupt);
	/* index offset not where the footer says */
	craft(path, k, 4096, 10, 1, -1, &rec, 1, 10);
	expect_corrupt_miss(c, k, &corrupt);
	/* record pointing outside the block area, oversized, or a gap */
	rec.off = 1ULL << 60;
	craft(path, k, 4096, 10, 1, 0, &rec, 1, 10);
	expect_corrupt_miss(c, k, &corrupt);
	rec.off = CACHE_HDR_FIXED + 7;
	rec.stored = UINT32_MAX;
	rec.plain = false;
	craft(path, k, 4096, 10, 1, 0, &rec, 1, 10);
	expect_corrupt_miss(c, k, &corrupt);
	rec = (struct cache_rec){.off = CACHE_HDR_FIXED + 8, .stored = 9, .raw = 10};
	craft(path, k, 4096, 10, 1, 0, &rec, 1, 10);
	expect_corrupt_miss(c, k, &corrupt);
	/* raw size of the last block disagreeing with the footer */
	rec = (struct cache_rec){.off = CACHE_HDR_FIXED + 7, .stored = 10, .raw = 9, .plain = true};
	craft(path, k, 4096, 10, 1, 0, &rec, 1, 10);
	expect_corrupt_miss(c, k, &corrupt);
	/* a sound layout whose lz4 block is garbage with a matching checksum */
	rec = (struct cache_rec){.off = CACHE_HDR_FIXED + 7, .stored = 10, .raw = 10};
	{
		uint8_t zero[10] = {0};

		rec.sum = cache_hash64(zero, 10, 0);
	}
	craft(path, k, 4096, 10, 1, 0, &rec, 1, 10);
	assert_int_equal(xprofs_cache_reader_open(c, k, 7, &e), 0);
	{
		uint8_t got[10];

		assert_int_equal(xprofs_cache_reader_pread(e, got, 10, 0), -EIO);
		corrupt++;
	}
	xprofs_cache_reader_close(e);
	/* a symlink in place of an entry is not followed */
	assert_int_equal(symlink("/etc/passwd", path), 0);
	assert_int_equal(xprofs_cache_reader_open(c, k, 7, &e), -ENOENT);
	unlink(path);
	/* nor is a FIFO waited on: it is not a regular file, so corrupt */
	assert_int_equal(mkfifo(path, 0600), 0);
	expect_corrupt_miss(c, k, &corrupt);
	assert_int_equal(access(path, F_OK), -1);

	xprofs_cache_get_stats(c, &st);
	assert_int_equal(st.corrupt, corrupt);
	assert_int_equal(st.hits, 1);
	xprofs_cache_free(c);
}

/* A sound entry of another key under our name: a miss, not corruption. */
/* peek_size(): the size without a use: no hit/miss, recency (mtime) unchanged; corrupt = -ENOENT. */
static void test_peek_size(void **state)
{
	struct fixture *f = *state;
	struct timespec old[2] = {{.tv_sec = 1000000000}, {.tv_sec = 1000000000}};
	struct xprofs_cache_stats st;
	struct xprofs_cache *c;
	uint8_t *j = json_data(300000);
	uint64_t size = 0;
	struct stat sb;
	char p[512];
	int fd;

	c = new_cache(f, 0, 0);
	assert_int_equal(xprofs_cache_peek_size(c, "peek", 4, &size), -ENOENT);
	put_entry(c, "peek", j, 300000, 4096);
	only_entry(f->dir, p, sizeof(p));
	assert_int_equal(utimensat(AT_FDCWD, p, old, 0), 0);
	assert_int_equal(xprofs_cache_peek_size(c, "peek", 4, &size), 0);
	assert_int_equal(size, 300000);
	assert_int_equal(xprofs_cache_peek_size(c, "peek-other", 10, &size), -ENOENT);
	xprofs_cache_get_stats(c, &st);
	assert_int_equal(st.hits, 0);
	assert_int_equal(st.misses, 0);
	assert_int_equal(stat(p, &sb), 0);
	assert_int_equal(sb.st_mtim.tv_sec, 1000000000);
	/* a torn entry is not trusted */
	fd = open(p, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, sb.st_size / 2), 0);
	close(fd);
	assert_int_equal(xprofs_cache_peek_size(c, "peek", 4, &size), -ENOENT);
	xprofs_cache_free(c);
	free(j);
}

static void test_key_mismatch(void **state)
{
	struct fixture *f = *state;
	struct xprofs_cache_stats st;
	struct xprofs_cache_reader *e;
	struct xprofs_cache *c;
	char pa[512], pb[512], aside[600];

	c = new_cache(f, 0, 0);
	put_entry(c, "key-A", (const uint8_t *)"aaaa", 4, 4);
	only_entry(f->dir, pa, sizeof(pa));
	snprintf(aside, sizeof(aside), "%s/aside", f->dir);
	assert_int_equal(rename(pa, aside), 0);
	put_entry(c, "key-B", (const uint8_t *)"bbbb", 4, 4);
	only_entry(f->dir, pb, sizeof(pb));
	assert_int_equal(rename(aside, pb), 0);
	assert_int_equal(xprofs_cache_reader_open(c, "key-B", 5, &e), -ENOENT);
	/* and a key that is a prefix of the stored one */
	assert_int_equal(xprofs_cache_reader_open(c, "key-", 4, &e), -ENOENT);
	xprofs_cache_get_stats(c, &st);
	assert_int_equal(st.corrupt, 0);
	assert_int_equal(access(pb, F_OK), 0); /* kept: it is a sound entry */
	/* the rightful writer replaces it */
	put_entry(c, "key-B", (const uint8_t *)"bbbb", 4, 4);
	check_entry(c, "key-B", (const uint8_t *)"bbbb", 4);
	xprofs_cache_free(c);
}

static void test_stale_tmp_cleanup(void **state)
{
	struct fixture *f = *state;
	struct xprofs_cache *c;
	struct timespec old[2] = {{.tv_sec = 1000000}, {.tv_sec = 1000000}};
	char tmpdir[128], stale[160], fresh[160], foreign[160];

	snprintf(tmpdir, sizeof(tmpdir), "%s/tmp", f->dir);
	assert_int_equal(mkdir(tmpdir, 0755), 0);
	snprintf(stale, sizeof(stale), "%s/w.stale", tmpdir);
	snprintf(fresh, sizeof(fresh), "%s/w.fresh", tmpdir);
	snprintf(foreign, sizeof(foreign), "%s/notes.txt", f->dir);
	spit(stale, "x", 1);
	spit(fresh, "y", 1);
	spit(foreign, "z", 1);
	assert_int_equal(utimensat(AT_FDCWD, stale, old, 0), 0);
	c = new_cache(f, 0, 0);
	assert_int_equal(access(stale, F_OK), -1);
	assert_int_equal(access(fresh, F_OK), 0);
	assert_int_equal(access(foreign, F_OK), 0); /* not ours: left alone */
	xprofs_cache_free(c);
}

/* "rm -rf DIR/..." while the cache is live: writers recreate tmp/, readers miss. */
static void test_cleared_under_us(void **state)
{
	struct fixture *f = *state;
	struct xprofs_cache_stats st;
	struct xprofs_cache_reader *e;
	struct xprofs_cache *c;
	char tmpdir[128];

	c = new_cache(f, 0, 0);
	put_entry(c, "a", (const uint8_t *)"1", 1, 1);
	rm_tree(f->dir);
	assert_int_equal(mkdir(f->dir, 0700), 0);
	assert_int_equal(xprofs_cache_reader_open(c, "a", 1, &e), -ENOENT);
	xprofs_cache_get_stats(c, &st);
	assert_int_equal(st.entries, 0);
	assert_int_equal(st.bytes, 0);
	put_entry(c, "b", (const uint8_t *)"2", 1, 1);
	check_entry(c, "b", (const uint8_t *)"2", 1);
	snprintf(tmpdir, sizeof(tmpdir), "%s/tmp", f->dir);
	assert_int_equal(access(tmpdir, F_OK), 0);
	xprofs_cache_free(c);
}

static void test_bad_args(void **state)
{
	struct fixture *f = *state;
	struct xprofs_cache_writer *w = (void *)1;
	struct xprofs_cache_reader *e = (void *)1;
	struct xprofs_cache *c = (void *)1;
	char *key = calloc(1, XPROFS_CACHE_KEY_MAX + 1);

	assert_int_equal(xprofs_cache_new("", 0, &c), -EINVAL);
	assert_ptr_equal(c, (void *)1); /* *out untouched on failure */
	assert_int_equal(xprofs_cache_new("/etc/passwd/sub", 0, &c), -ENOTDIR);
	assert_ptr_equal(c, (void *)1);
	c = new_cache(f, 0, 0);
	assert_int_equal(xprofs_cache_writer_new(c, key, XPROFS_CACHE_KEY_MAX + 1, &w), -EINVAL);
	assert_ptr_equal(w, (void *)1);
	assert_int_equal(xprofs_cache_reader_open(c, key, XPROFS_CACHE_KEY_MAX + 1, &e), -EINVAL);
	assert_ptr_equal(e, (void *)1);
	/* the longest key works, and so does the empty one */
	memset(key, 'k', XPROFS_CACHE_KEY_MAX);
	assert_int_equal(xprofs_cache_writer_new(c, key, XPROFS_CACHE_KEY_MAX, &w), 0);
	assert_int_equal(xprofs_cache_writer_write(w, "v", 1), 0);
	assert_int_equal(xprofs_cache_writer_commit(w), 0);
	assert_int_equal(xprofs_cache_reader_open(c, key, XPROFS_CACHE_KEY_MAX, &e), 0);
	xprofs_cache_reader_close(e);
	assert_int_equal(xprofs_cache_writer_new(c, NULL, 0, &w), 0);
	assert_int_equal(xprofs_cache_writer_commit(w), 0);
	assert_int_equal(xprofs_cache_reader_open(c, NULL, 0, &e), 0);
	assert_int_equal(xprofs_cache_reader_size(e), 0);
	xprofs_cache_reader_close(e);
	xprofs_cache_free(c);
	free(key);
}

/* export() - the portable form of @key into a new unlinked file; its fd, length into *@len. */
static int export_to_file(struct xprofs_cache *c, const char *key, uint64_t *len)
{
	int fd = xprofs_tmpfile("/tmp", "xprofs-port-test");

	assert_true(fd >= 0);
	assert_int_equal(xprofs_cache_export(c, key, strlen(key), fd, len), 0);
	return fd;
}

/* @n bytes of @fd from 0 into a new unlinked file, with byte @flip (if < n) xor-ed with @mask. */
static int copy_flipped(int fd, uint64_t n, uint64_t flip, uint8_t mask)
{
	uint8_t *buf = malloc(n ? n : 1);
	int out = xprofs_tmpfile("/tmp", "xprofs-port-test");

	assert_true(out >= 0);
	assert_int_equal(xprofs_pread_full(fd, buf, n, 0), (ssize_t)n);
	if (flip < n)
		buf[flip] ^= mask;
	assert_int_equal(pwrite(out, buf, n, 0), (ssize_t)n);
	free(buf);
	return out;
}

/*
 * The portable form (cache/portable.c): a round trip into another cache
 * gives the same bytes; every flipped byte, every truncation, another key
 * and a payload over the cap are refused, and nothing is published then.
 */
static void test_portable(void **state)
{
	struct fixture *f = *state;
	char d1[128], d2[128];
	struct xprofs_cache *a, *b;
	struct xprofs_cache_reader *e;
	uint8_t *p = json_data(300000), *small = json_data(9000);
	uint64_t len, slen;
	int fd, sfd, bad;

	snprintf(d1, sizeof(d1), "%s/a", f->dir);
	snprintf(d2, sizeof(d2), "%s/b", f->dir);
	assert_int_equal(xprofs_cache_new(d1, 0, &a), 0);
	assert_int_equal(xprofs_cache_new(d2, 0, &b), 0);
	assert_int_equal(xprofs_cache_set_block_size(a, 4096), 0);
	put_entry(a, "view-big", p, 300000, 7777);
	put_entry(a, "view-small", small, 9000, 9000);
	assert_int_equal(xprofs_cache_export(a, "absent", 6, 0, &len), -ENOENT);

	fd = export_to_file(a, "view-big", &len);
	assert_int_equal(xprofs_cache_import(b, "view-big", 8, fd, len), 0);
	check_entry(b, "view-big", p, 300000);
	/* another key's sound copy is never served for ours */
	assert_int_equal(xprofs_cache_import(b, "view-other", 10, fd, len), -ESTALE);
	assert_int_equal(xprofs_cache_reader_open(b, "view-other", 10, &e), -ENOENT);
	/* the length must be the object's */
	assert_int_equal(xprofs_cache_import(b, "view-big", 8, fd, len - 1), -EBADMSG);
	close(fd);

	/* every byte of a small copy flipped, and every truncation: refused, nothing published */
	sfd = export_to_file(a, "view-small", &slen);
	for (uint64_t i = 0; i < slen; i++) {
		bad = copy_flipped(sfd, slen, i, (uint8_t)(1u << (i % 8)));
		assert_int_not_equal(xprofs_cache_import(b, "view-small", 10, bad, slen), 0);
		assert_int_not_equal(xprofs_cache_import(b, "view-small", 10, bad, i), 0);
		close(bad);
	}
	assert_int_equal(xprofs_cache_reader_open(b, "view-small", 10, &e), -ENOENT);
	assert_int_equal(xprofs_cache_import(b, "view-small", 10, sfd, slen), 0);
	check_entry(b, "view-small", small, 9000);
	close(sfd);
	xprofs_cache_free(b);

	/* over the importing cache's cap */
	assert_int_equal(xprofs_cache_new(d2, 4096, &b), 0);
	fd = export_to_file(a, "view-big", &len);
	assert_int_equal(xprofs_cache_import(b, "view-big", 8, fd, len), -EFBIG);
	close(fd);
	xprofs_cache_free(b);
	xprofs_cache_free(a);
	free(p);
	free(small);
}

int main(void)
{
	return XT_RUN_FIXTURE_TESTS(
		setup, teardown, test_round_trip_sizes, test_multi_mb, test_index_spill,
		test_sink_reader_abort_remove, test_persistence, test_two_caches_one_dir,
		test_concurrent_same_key, test_concurrent_reads_one_entry, test_two_processes,
		test_eviction_lru, test_rescan_shared_cap, test_too_big,
		test_corrupt_exhaustive_lz4, test_corrupt_exhaustive_raw, test_hostile_files,
		test_peek_size, test_key_mismatch, test_stale_tmp_cleanup, test_cleared_under_us,
		test_bad_args, test_portable);
}
