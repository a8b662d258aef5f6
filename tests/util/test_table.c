/* test_table.c - unit tests for the keyed hash table (util/table.c): find and add, growth,
 * the maximum, forced collisions, empty and binary keys, composite keys, the hash. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"
#include "xprofs/util.h"

/* The caller's side: byte-string keys stored back to back, as pftrace's tables do. */
struct strs {
	char *buf;
	size_t len, cap;
	size_t *off, *klen;
	size_t n, ncap;
};

struct bkey {
	const void *p;
	size_t n;
};

static bool strs_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct strs *s = ctx;
	const struct bkey *k = key;

	assert_true(idx < s->n); /* the table hands back only positions it was given */
	return s->klen[idx] == k->n && (!k->n || !memcmp(s->buf + s->off[idx], k->p, k->n));
}

/* The position of key @p (@n bytes) in @s, or -ENOENT. */
static int64_t strs_find(const struct xprofs_table *t, const struct strs *s, const void *p,
			 size_t n)
{
	struct bkey k = {p, n};
	uint32_t i = UINT32_MAX;
	int r = xprofs_table_find(t, xprofs_table_hash(0, p, n), strs_eq, s, &k, &i);

	return r < 0 ? r : (int64_t)i;
}

/* Key @p (@n bytes) appended to @s and added to @t: its position, or -errno. */
static int64_t strs_add(struct xprofs_table *t, struct strs *s, const void *p, size_t n)
{
	size_t ncap = s->ncap;
	int r;

	if (s->len + n > s->cap) {
		s->cap = (s->len + n) * 2;
		assert_non_null(s->buf = realloc(s->buf, s->cap)); /* moves: positions stay */
	}
	assert_int_equal(xprofs_grow(&s->off, &ncap, s->n, sizeof(*s->off), 8), 0);
	assert_int_equal(xprofs_grow(&s->klen, &s->ncap, s->n, sizeof(*s->klen), 8), 0);
	if ((r = xprofs_table_add(t, xprofs_table_hash(0, p, n), (uint32_t)s->n)) < 0)
		return r;
	if (n)
		memcpy(s->buf + s->len, p, n);
	s->off[s->n] = s->len;
	s->klen[s->n] = n;
	s->len += n;
	return (int64_t)s->n++;
}

static void strs_free(struct strs *s)
{
	free(s->buf);
	free(s->off);
	free(s->klen);
}

static void test_table_new_free(void **state)
{
	struct xprofs_table *t = (struct xprofs_table *)1;
	uint32_t i = 7;

	assert_int_equal(xprofs_table_new(0, &t), -EINVAL);
	assert_null(t);
	assert_int_equal(xprofs_table_new(XPROFS_TABLE_MAX + 1, &t), -EINVAL);
	assert_null(t);
	xprofs_table_free(NULL);
	assert_int_equal(xprofs_table_count(NULL), 0);
	/* a NULL table is an empty one for look-ups */
	assert_int_equal(xprofs_table_find(NULL, 1, strs_eq, NULL, NULL, &i), -ENOENT);
	assert_int_equal(i, 7);
	assert_int_equal(xprofs_table_new(XPROFS_TABLE_MAX, &t), 0);
	assert_int_equal(xprofs_table_count(t), 0);
	assert_int_equal(xprofs_table_find(t, 1, strs_eq, NULL, NULL, &i), -ENOENT);
	xprofs_table_free(t);
}

/* Insert, find, and growth through many doublings, every key still found after each. */
static void test_table_grow(void **state)
{
	struct xprofs_table *t;
	struct strs s = {0};
	char k[32];

	assert_int_equal(xprofs_table_new(100000, &t), 0);
	for (int i = 0; i < 100000; i++) {
		int n = snprintf(k, sizeof(k), "op.%d", i);

		assert_int_equal(strs_find(t, &s, k, (size_t)n), -ENOENT);
		assert_int_equal(strs_add(t, &s, k, (size_t)n), i);
		assert_int_equal(strs_find(t, &s, k, (size_t)n), i);
		if ((i & (i + 1)) == 0) /* after each power of two: all the earlier ones */
			for (int j = 0; j <= i; j++) {
				n = snprintf(k, sizeof(k), "op.%d", j);
				assert_int_equal(strs_find(t, &s, k, (size_t)n), j);
			}
	}
	assert_int_equal(xprofs_table_count(t), 100000);
	for (int i = 0; i < 100000; i++) {
		int n = snprintf(k, sizeof(k), "op.%d", i);

		assert_int_equal(strs_find(t, &s, k, (size_t)n), i);
	}
	assert_int_equal(strs_find(t, &s, "op.100000", 9), -ENOENT);
	assert_int_equal(strs_find(t, &s, "op.1", 3), -ENOENT); /* a prefix of keys */
	xprofs_table_free(t);
	strs_free(&s);
}

/* The maximum: -ENOSPC past it, the table unchanged; known keys still resolve. */
static void test_table_max(void **state)
{
	struct xprofs_table *t;
	struct strs s = {0};

	assert_int_equal(xprofs_table_new(3, &t), 0);
	assert_int_equal(strs_add(t, &s, "a", 1), 0);
	assert_int_equal(strs_add(t, &s, "b", 1), 1);
	assert_int_equal(strs_add(t, &s, "c", 1), 2);
	assert_int_equal(strs_add(t, &s, "d", 1), -ENOSPC);
	assert_int_equal(xprofs_table_count(t), 3);
	assert_int_equal(strs_find(t, &s, "d", 1), -ENOENT);
	assert_int_equal(strs_find(t, &s, "c", 1), 2);
	assert_int_equal(xprofs_table_add(t, 1, UINT32_MAX), -ENOSPC);
	xprofs_table_free(t);
	/* a position the slot cannot hold */
	assert_int_equal(xprofs_table_new(3, &t), 0);
	assert_int_equal(xprofs_table_add(t, 1, UINT32_MAX), -EINVAL);
	assert_int_equal(xprofs_table_count(t), 0);
	assert_int_equal(xprofs_table_add(t, 1, UINT32_MAX - 1), 0);
	xprofs_table_free(t);
	strs_free(&s);
}

/* Integer keys, every one with the same hash: one probe chain, eq alone tells them apart. */
static bool u64_eq(const void *ctx, uint32_t idx, const void *key)
{
	return ((const uint64_t *)ctx)[idx] == *(const uint64_t *)key;
}

static void test_table_collisions(void **state)
{
	enum { N = 2000 };
	static uint64_t v[N];
	struct xprofs_table *t;
	uint32_t i;

	assert_int_equal(xprofs_table_new(N, &t), 0);
	for (uint64_t k = 0; k < N; k++) {
		/* two tags (the table keeps a hash's top 32 bits): two long probe chains */
		uint64_t h = k % 2 ? 42 : UINT64_C(42) << 32;

		v[k] = k * 1000003;
		assert_int_equal(xprofs_table_find(t, h, u64_eq, v, &v[k], &i), -ENOENT);
		assert_int_equal(xprofs_table_add(t, h, (uint32_t)k), 0);
	}
	for (uint64_t k = 0; k < N; k++) {
		uint64_t h = k % 2 ? 42 : UINT64_C(42) << 32, miss = v[k] + 1;

		assert_int_equal(xprofs_table_find(t, h, u64_eq, v, &v[k], &i), 0);
		assert_int_equal(i, k);
		assert_int_equal(xprofs_table_find(t, h, u64_eq, v, &miss, &i), -ENOENT);
	}
	/* the same key under another hash is another key: the hash is the caller's contract */
	assert_int_equal(xprofs_table_find(t, UINT64_C(43) << 32, u64_eq, v, &v[1], &i), -ENOENT);
	xprofs_table_free(t);
}

/* The empty key and binary keys (NULs, high bytes, lengths around the 8-byte steps). */
static void test_table_binary_keys(void **state)
{
	static const unsigned char bin[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0x80, 0, 1};
	struct xprofs_table *t;
	struct strs s = {0};
	int64_t first[sizeof(bin) + 1];

	assert_int_equal(xprofs_table_new(1000, &t), 0);
	assert_int_equal(strs_find(t, &s, NULL, 0), -ENOENT);
	assert_int_equal(strs_add(t, &s, NULL, 0), 0);
	assert_int_equal(strs_find(t, &s, "", 0), 0);
	/* every prefix of bin: "", "\0", "\0\0", ... are all different keys */
	first[0] = 0;
	for (size_t n = 1; n <= sizeof(bin); n++) {
		assert_int_equal(strs_find(t, &s, bin, n), -ENOENT);
		first[n] = strs_add(t, &s, bin, n);
		assert_int_equal(first[n], n);
	}
	for (size_t n = 0; n <= sizeof(bin); n++)
		assert_int_equal(strs_find(t, &s, bin, n), first[n]);
	/* a key differing in its last byte only, past an 8-byte step */
	assert_int_equal(strs_find(t, &s, "\0\0\0\0\0\0\0\0\0\xff\x80\0\2", 13), -ENOENT);
	assert_int_equal(xprofs_table_count(t), sizeof(bin) + 1);
	xprofs_table_free(t);
	strs_free(&s);
}

/* A composite key: its parts' hashes chained; a part's bytes moved to the other part differ. */
static void test_table_hash(void **state)
{
	uint64_t ab_c = xprofs_table_hash(xprofs_table_hash(0, "ab", 2), "c", 1);
	uint64_t a_bc = xprofs_table_hash(xprofs_table_hash(0, "a", 1), "bc", 2);
	char big[64];

	assert_true(ab_c != a_bc);
	assert_true(xprofs_table_hash(0, "abc", 3) == xprofs_table_hash(0, "abc", 3));
	assert_true(xprofs_table_hash(0, "abc", 3) != xprofs_table_hash(1, "abc", 3));
	assert_true(xprofs_table_hash(0, "", 0) != xprofs_table_hash(0, "\0", 1));
	assert_true(xprofs_table_hash(0, "\0", 1) != xprofs_table_hash(0, "\0\0", 2));
	/* every byte of every length counts (the last 1 to 8 bytes are read specially) */
	memset(big, 'x', sizeof(big));
	for (size_t n = 1; n <= 24; n++)
		for (size_t i = 0; i < n; i++) {
			uint64_t h0 = xprofs_table_hash(0, big, n), h1;

			big[i] = 'y';
			h1 = xprofs_table_hash(0, big, n);
			big[i] = 'x';
			if (h0 == h1)
				fail_msg("byte %zu of a %zu-byte key left the hash as it was", i,
					 n);
		}
	/* one flipped bit anywhere in a long key changes about half the hash's bits */
	memset(big, 'x', sizeof(big));
	for (size_t i = 0; i < sizeof(big); i++) {
		uint64_t h0 = xprofs_table_hash(0, big, sizeof(big)), h1;
		int d;

		big[i] ^= 1;
		h1 = xprofs_table_hash(0, big, sizeof(big));
		big[i] ^= 1;
		d = __builtin_popcountll(h0 ^ h1);
		if (d < 12 || d > 52)
			fail_msg("flipping bit 0 of byte %zu changed %d of 64 hash bits", i, d);
	}
}

int main(void)
{
	return XT_RUN_TESTS(test_table_new_free, test_table_grow, test_table_max,
			    test_table_collisions, test_table_binary_keys, test_table_hash);
}
