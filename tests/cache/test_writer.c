/*
 * test_writer.c - unit tests for cache/writer.c: the cap seen before a write
 * (near_cap), lz4 acceleration, the compressor threads, reads of an entry
 * while it is written (queued, recent and appended blocks), and private
 * writers that go past the cap and are sealed instead of published.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
#include <unistd.h>

#include <cmocka.h>

#include "cache_fixture.h"
#include "testutil.h"
#include "xprofs/cache.h"
#include "../../cache/cache-internal.h"

/*
 * near_cap() says so before a write would pass the cap, and while it does not,
 * every byte written is still there: pread() of the full blocks plus tail().
 */
static void test_near_cap(void **state)
{
	struct fixture *f = *state;
	struct xprofs_cache_writer *w;
	struct xprofs_cache *c;
	size_t n = 300000, done = 0, chunk = 1000, tn;
	uint8_t *r = random_data(n), *back = malloc(n);
	const uint8_t *tail;
	uint64_t rd;

	c = new_cache(f, 100000, 4096);
	assert_int_equal(xprofs_cache_writer_new(c, "big", 3, &w), 0);
	assert_false(xprofs_cache_writer_near_cap(w, chunk));
	while (!xprofs_cache_writer_near_cap(w, chunk)) {
		assert_int_equal(xprofs_cache_writer_write(w, r + done, chunk), 0);
		done += chunk;
	}
	/* conservative (random data is stored raw), but not by more than a few blocks */
	assert_true(done > 100000 - 8 * 4096 && done <= 100000);
	rd = xprofs_cache_writer_readable(w);
	for (uint64_t off = 0; off < rd;) {
		ssize_t k = xprofs_cache_writer_pread(w, back + off, (size_t)(rd - off), off);

		assert_true(k > 0);
		off += (uint64_t)k;
	}
	tail = xprofs_cache_writer_tail(w, &tn);
	assert_int_equal(rd + tn, done);
	memcpy(back + rd, tail, tn);
	XT_SAME_BYTES(back, done, r, done);
	/* writing on does pass the cap */
	assert_int_equal(xprofs_cache_writer_write(w, r, n), -EFBIG);
	xprofs_cache_writer_abort(w);
	xprofs_cache_free(c);
	free(back);
	free(r);
}

/* Bytes the cache counts on disk for one entry of @p written with lz4 @accel (writer setting). */
static uint64_t entry_bytes_at(struct xprofs_cache *c, const char *key, const uint8_t *p, size_t n,
			       int accel)
{
	struct xprofs_cache_stats a, b;
	struct xprofs_cache_writer *w;

	xprofs_cache_get_stats(c, &a);
	assert_int_equal(xprofs_cache_writer_new(c, key, strlen(key), &w), 0);
	if (accel >= 0) /* -1: the cache's setting */
		assert_int_equal(xprofs_cache_writer_set_acceleration(w, accel), 0);
	assert_int_equal(xprofs_cache_writer_write(w, p, n), 0);
	assert_int_equal(xprofs_cache_writer_commit(w), 0);
	xprofs_cache_get_stats(c, &b);
	check_entry(c, key, p, n);
	return b.bytes - a.bytes;
}

/*
 * Acceleration: range checks on both setters, a writer storing blocks as they
 * are (XPROFS_CACHE_ACCEL_STORE), and that the setting reaches
 * lz4 (the fastest setting stores JSON bigger than the default, the cache-wide
 * setting acts like the per-writer one) while every entry reads back exactly.
 */
static void test_acceleration(void **state)
{
	struct fixture *f = *state;
	struct xprofs_cache_writer *w;
	struct xprofs_cache *c;
	size_t n = 3u << 20;
	uint8_t *p = json_data(n);
	uint64_t def, fast, cache_fast;

	c = new_cache(f, 0, 0);
	assert_int_equal(xprofs_cache_set_acceleration(c, 0), -EINVAL);
	assert_int_equal(xprofs_cache_set_acceleration(c, -3), -EINVAL);
	assert_int_equal(xprofs_cache_set_acceleration(c, XPROFS_CACHE_ACCEL_MAX + 1), -EINVAL);
	assert_int_equal(xprofs_cache_writer_new(c, "x", 1, &w), 0);
	assert_int_equal(xprofs_cache_writer_set_acceleration(w, -1), -EINVAL);
	assert_int_equal(xprofs_cache_writer_set_acceleration(w, XPROFS_CACHE_ACCEL_MAX + 1),
			 -EINVAL);
	xprofs_cache_writer_abort(w);

	def = entry_bytes_at(c, "k-1", p, n, -1);
	fast = entry_bytes_at(c, "k-2", p, n, XPROFS_CACHE_ACCEL_MAX);
	/* a writer may store its blocks as they are (gs:// blocks): all n bytes, read back */
	assert_true(entry_bytes_at(c, "k-5", p, n, XPROFS_CACHE_ACCEL_STORE) >= n);
	assert_int_equal(xprofs_cache_set_acceleration(c, XPROFS_CACHE_ACCEL_MAX), 0);
	cache_fast = entry_bytes_at(c, "k-3", p, n, -1);
	assert_true(def < n / 2);
	assert_true(fast > def + def / 10);
	assert_int_equal(cache_fast, fast);
	/* a writer setting overrides the cache's (keys of one length: the key is stored) */
	assert_int_equal(entry_bytes_at(c, "k-4", p, n, XPROFS_CACHE_ACCEL_DEFAULT), def);
	xprofs_cache_free(c);
	free(p);
}

/*
 * A writer that stores blocks as they are (gs:// blocks) takes whole blocks
 * straight from the caller's bytes and the rest through its own block: mixed
 * pieces (a part block, whole blocks written from mid-block, whole blocks from
 * a block boundary, a short tail) read back exactly, while writing
 * (xprofs_cache_writer_pread()) and after the commit, and take their raw size.
 */
static void test_writer_store(void **state)
{
	struct fixture *f = *state;
	const uint32_t bs = 64 << 10;
	const size_t cuts[] = {7, 2 * bs + 5, bs - 12, 3 * bs, bs / 2};
	struct xprofs_cache_stats a, b;
	struct xprofs_cache_writer *w;
	struct xprofs_cache *c = new_cache(f, 0, bs);
	size_t n = 0, at = 0, full;
	uint8_t *p, *back;

	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++)
		n += cuts[i];
	p = random_data(n);
	back = malloc(n);
	assert_non_null(back);
	xprofs_cache_get_stats(c, &a);
	assert_int_equal(xprofs_cache_writer_new(c, "store", 5, &w), 0);
	assert_int_equal(xprofs_cache_writer_set_acceleration(w, XPROFS_CACHE_ACCEL_STORE), 0);
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		assert_int_equal(xprofs_cache_writer_write(w, p + at, cuts[i]), 0);
		at += cuts[i];
		full = at / bs * bs;
		assert_int_equal(xprofs_cache_writer_readable(w), full);
		for (size_t rd = 0; rd < full;) { /* a block or less per call */
			ssize_t k = xprofs_cache_writer_pread(w, back + rd, full - rd, rd);

			assert_true(k > 0);
			rd += (size_t)k;
		}
		XT_SAME_BYTES(back, full, p, full);
	}
	assert_int_equal(xprofs_cache_writer_commit(w), 0);
	xprofs_cache_get_stats(c, &b);
	assert_true(b.bytes - a.bytes >= n);
	check_entry(c, "store", p, n);
	xprofs_cache_free(c);
	free(back);
	free(p);
}

/*
 * The compressor thread: aborting a writer with blocks queued leaves no temp
 * file; an error the thread finds (-EFBIG at the cap) comes back from a later
 * write or the commit and sticks; and an entry written in odd-sized pieces
 * across many small blocks reads back exactly while another writer runs.
 */
/* A reader chasing a writer: reads below xprofs_cache_writer_readable() only. */
struct chase {
	struct xprofs_cache_writer *w;
	const uint8_t *want;
	size_t n;
	uint64_t readable; /* published by the writer; atomic */
	int bad;
};

static void *chase_reader(void *arg)
{
	struct chase *ch = arg;
	uint8_t *buf = malloc(5000);
	size_t off = 0;

	assert_non_null(buf);
	while (off < ch->n && !ch->bad) {
		uint64_t lim = __atomic_load_n(&ch->readable, __ATOMIC_ACQUIRE);
		ssize_t k;

		if (off >= lim) {
			sched_yield();
			continue;
		}
		k = xprofs_cache_writer_pread(ch->w, buf, 5000, off);
		if (k <= 0 || memcmp(buf, ch->want + off, (size_t)k))
			ch->bad = 1;
		off += k > 0 ? (size_t)k : 0;
	}
	free(buf);
	return NULL;
}

/*
 * Reads of an entry while it is written: every full block (appended, queued,
 * spilled index) reads back exactly, from another thread too; nothing past
 * the readable end; the entry still commits and reads back.
 */
static void test_writer_pread(void **state)
{
	struct fixture *f = *state;
	struct xprofs_cache_reader *e;
	struct xprofs_cache *c;
	size_t n = 5u << 20, done = 0;
	uint8_t *p = json_data(n), buf[8192];
	struct chase ch = {.want = p, .n = n};
	pthread_t t;

	c = new_cache(f, 64u << 20, 4096);
	assert_int_equal(xprofs_cache_writer_new(c, "live", 4, &ch.w), 0);
	assert_int_equal(xprofs_cache_writer_readable(ch.w), 0);
	assert_int_equal(xprofs_cache_writer_pread(ch.w, buf, sizeof(buf), 0), 0);
	assert_int_equal(pthread_create(&t, NULL, chase_reader, &ch), 0);
	while (done < n) {
		size_t k = n - done < 3001 ? n - done : 3001;
		uint64_t rd;

		assert_int_equal(xprofs_cache_writer_write(ch.w, p + done, k), 0);
		done += k;
		rd = xprofs_cache_writer_readable(ch.w);
		assert_int_equal(rd, done / 4096 * 4096);
		__atomic_store_n(&ch.readable, rd, __ATOMIC_RELEASE);
		if (rd && done % 7 == 0) {
			uint64_t off = (done * 2654435761u) % rd;
			ssize_t got = xprofs_cache_writer_pread(ch.w, buf, sizeof(buf), off);

			assert_true(got > 0 && (uint64_t)got <= rd - off);
			assert_memory_equal(buf, p + off, (size_t)got);
		}
		assert_int_equal(xprofs_cache_writer_pread(ch.w, buf, sizeof(buf), rd), 0);
	}
	/* the last partial block is not readable before the commit */
	__atomic_store_n(&ch.readable, n, __ATOMIC_RELEASE);
	ch.n = xprofs_cache_writer_readable(ch.w);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_false(ch.bad);
	assert_int_equal(xprofs_cache_writer_commit(ch.w), 0);
	assert_int_equal(xprofs_cache_reader_open(c, "live", 4, &e), 0);
	assert_int_equal(xprofs_cache_reader_size(e), n);
	XT_SAME_BYTES(buf, xprofs_cache_reader_pread(e, buf, 100, n - 100), p + n - 100, 100);
	xprofs_cache_reader_close(e);
	xprofs_cache_free(c);
	free(p);
}

/* damage() - every byte of the one writer temp file in @dir/tmp from @from on, overwritten. */
static void damage(const char *dir, off_t from)
{
	char path[PATH_MAX];
	uint8_t junk[4096];
	struct dirent *de;
	struct stat st;
	int fd = -1;
	DIR *d;

	memset(junk, 0xa5, sizeof(junk));
	snprintf(path, sizeof(path), "%s/tmp", dir);
	assert_non_null(d = opendir(path));
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, "w.", 2)) {
			snprintf(path, sizeof(path), "%s/tmp/%s", dir, de->d_name);
			assert_true((fd = open(path, O_WRONLY)) >= 0);
		}
	closedir(d);
	assert_true(fd >= 0 && fstat(fd, &st) == 0 && st.st_size > from);
	for (off_t o = from; o < st.st_size; o += 4096) {
		size_t k = st.st_size - o < 4096 ? (size_t)(st.st_size - o) : 4096;

		assert_int_equal(pwrite(fd, junk, k, o), (ssize_t)k);
	}
	close(fd);
}

/*
 * A reader just behind the render is served from memory: with the writer's
 * temp file damaged, the last WRITER_RECENT (8) blocks handed on still read
 * back exactly (queued ones, and appended ones the writer keeps), while an old
 * block fails its checksum (-EIO): it was read back from the file.
 */
static void test_writer_recent(void **state)
{
	struct fixture *f = *state;
	struct xprofs_cache_writer *w;
	struct xprofs_cache *c;
	size_t bs = 4096, n = 64 * bs;
	uint8_t *p = json_data(n), buf[4096];
	uint64_t rd;

	c = new_cache(f, 64u << 20, (uint32_t)bs);
	assert_int_equal(xprofs_cache_writer_new(c, "recent", 6, &w), 0);
	assert_int_equal(xprofs_cache_writer_write(w, p, n), 0);
	rd = xprofs_cache_writer_readable(w);
	assert_int_equal(rd, n);
	/* the oldest block, once appended, reads back from the file */
	XT_SAME_BYTES(buf, xprofs_cache_writer_pread(w, buf, bs, 0), p, bs);
	damage(f->dir, CACHE_HDR_FIXED + 6); /* the blocks, after the header and key */
	assert_int_equal(xprofs_cache_writer_pread(w, buf, bs, 0), -EIO);
	for (uint64_t off = rd - 8 * bs; off < rd; off += bs)
		XT_SAME_BYTES(buf, xprofs_cache_writer_pread(w, buf, bs, off), p + off, bs);
	xprofs_cache_writer_abort(w);
	xprofs_cache_free(c);
	free(p);
}

/*
 * A private writer: past the cache's cap it goes on (no -EFBIG, near_cap
 * false), sealed it reads back every byte, the last partial block too, from
 * another thread while it seals, and it is never published.
 */
static void test_writer_private(void **state)
{
	struct fixture *f = *state;
	struct xprofs_cache_reader *e;
	struct xprofs_cache_writer *w;
	struct xprofs_cache *c;
	size_t n = (3u << 20) + 1234;
	uint8_t *p = json_data(n), *back = malloc(n);
	struct chase ch = {.want = p};
	pthread_t t;
	size_t off = 0;

	assert_non_null(back);
	c = new_cache(f, 256u << 10, 4096); /* the view compresses to more than this */
	assert_int_equal(xprofs_cache_writer_new(c, "private", 7, &w), 0);
	assert_int_equal(xprofs_cache_writer_write(w, p, 64u << 10), 0);
	xprofs_cache_writer_set_private(w);
	assert_false(xprofs_cache_writer_near_cap(w, n));
	assert_int_equal(xprofs_cache_writer_write(w, p + (64u << 10), n - (64u << 10)), 0);
	ch.w = w;
	ch.n = n;
	__atomic_store_n(&ch.readable, xprofs_cache_writer_readable(w), __ATOMIC_RELEASE);
	assert_int_equal(pthread_create(&t, NULL, chase_reader, &ch), 0);
	assert_int_equal(xprofs_cache_writer_seal(w), 0);
	__atomic_store_n(&ch.readable, n, __ATOMIC_RELEASE);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_false(ch.bad);
	while (off < n) {
		ssize_t k = xprofs_cache_writer_pread(w, back + off, n - off, off);

		assert_true(k > 0);
		off += (size_t)k;
	}
	assert_memory_equal(back, p, n);
	assert_int_equal(xprofs_cache_writer_pread(w, back, 10, n), 0);
	xprofs_cache_writer_abort(w);
	assert_int_equal(xprofs_cache_reader_open(c, "private", 7, &e), -ENOENT);
	xprofs_cache_free(c);
	free(back);
	free(p);
}

static void test_writer_thread(void **state)
{
	struct fixture *f = *state;
	struct xprofs_cache_writer *w, *w2;
	struct xprofs_cache *c;
	size_t n = 2u << 20;
	uint8_t *p = json_data(n), *r = random_data(64 << 10);
	int err = 0;

	c = new_cache(f, 1u << 20, 4096);

	assert_int_equal(xprofs_cache_writer_new(c, "aborted", 7, &w), 0);
	assert_int_equal(xprofs_cache_writer_write(w, p, 100000), 0);
	xprofs_cache_writer_abort(w);
	assert_int_equal(tmp_files(f), 0);
	assert_false(has(c, "aborted"));

	/* random bytes do not compress: 1 MiB cap, 2 MiB written */
	assert_int_equal(xprofs_cache_writer_new(c, "big", 3, &w), 0);
	for (int i = 0; i < 32 && !err; i++)
		err = xprofs_cache_writer_write(w, r, 64 << 10);
	assert_int_equal(err, -EFBIG);
	assert_int_equal(xprofs_cache_writer_write(w, r, 1), -EFBIG);
	assert_int_equal(xprofs_cache_writer_commit(w), -EFBIG);
	assert_int_equal(tmp_files(f), 0);

	/* the last blocks overflow only on the thread, seen by the commit */
	assert_int_equal(xprofs_cache_writer_new(c, "late", 4, &w), 0);
	for (size_t off = 0; off + (64 << 10) <= (1u << 20) + (32 << 10); off += 64 << 10)
		err = xprofs_cache_writer_write(w, r, 64 << 10);
	(void)err; /* may or may not have seen it yet */
	assert_int_equal(xprofs_cache_writer_commit(w), -EFBIG);
	assert_false(has(c, "late"));

	assert_int_equal(xprofs_cache_writer_new(c, "a", 1, &w), 0);
	assert_int_equal(xprofs_cache_writer_new(c, "b", 1, &w2), 0);
	for (size_t off = 0, k = 1; off < n; off += k, k = k * 7 % 9973 + 1) {
		size_t m = n - off < k ? n - off : k;

		assert_int_equal(xprofs_cache_writer_write(w, p + off, m), 0);
		assert_int_equal(xprofs_cache_writer_write(w2, p + n - off - m, m), 0);
	}
	assert_int_equal(xprofs_cache_writer_commit(w2), 0);
	assert_int_equal(xprofs_cache_writer_commit(w), 0);
	check_entry(c, "a", p, n);
	assert_int_equal(tmp_files(f), 0);
	xprofs_cache_free(c);
	free(p);
	free(r);
}

int main(void)
{
	return XT_RUN_FIXTURE_TESTS(setup, teardown, test_near_cap, test_acceleration,
				    test_writer_store, test_writer_thread, test_writer_pread,
				    test_writer_recent, test_writer_private);
}
