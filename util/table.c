/*
 * table.c - the keyed hash table (util.h, "keyed hash table"): an index from
 * keys to positions in the caller's own array of entries.
 *
 * Design: open addressing with linear probing over a power-of-two array of
 * 8-byte slots, at most half full. A slot holds the entry's position + 1 in
 * its low 32 bits (0: free) and the top 32 bits of its key's hash, the tag,
 * in its high 32 bits: a probe compares tags first and asks the caller's eq
 * function only on a match, and growing rehashes from the tags alone (the
 * home slot is a multiplicative hash of the tag), never touching the keys.
 * Keeping no keys is what lets one table serve keys of every shape and
 * entries that move (the caller's array is realloc()ed, strings stored back
 * to back in a growing buffer): positions stay valid where pointers would
 * not, and nothing is copied.
 *
 * The hash (xprofs_table_hash()) reads eight bytes a step and is seeded once
 * per process from getrandom(): a profile, which may come from anyone, cannot
 * be crafted to put its names in one probe chain. So hashes differ from run
 * to run: a table's order must never reach an output (callers keep entries
 * in their array's order, which is the order of first insertion).
 *
 * Limits: at most the table's max_entries entries (XPROFS_TABLE_MAX at the
 * most: the home slot comes from 32 bits); slots take 16 to 32 bytes an
 * entry.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "xprofs/util.h"

#define TABLE_FIRST 16 /* slots of the first allocation */

struct xprofs_table {
	uint64_t *slot; /* (tag << 32) | (position + 1); 0: free */
	size_t cap;     /* slots: 0 or a power of 2 */
	unsigned shift; /* 32 - log2(cap): the home slot is the top bits of 32 */
	size_t n, max;
};

/* The process's hash seed: random, made by whichever thread hashes first. */
static uint64_t seed(void)
{
	static uint64_t s;
	uint64_t v = __atomic_load_n(&s, __ATOMIC_RELAXED), none = 0;

	if (v)
		return v;
	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v))
		v = (uint64_t)xprofs_mono_ns() ^ (uint64_t)(uintptr_t)&v; /* weaker, still varies */
	v |= 1;
	if (!__atomic_compare_exchange_n(&s, &none, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		v = none; /* another thread's won: every table of the process uses one seed */
	return v;
}

/* Spreads every input bit over all 64 output bits (a bijection). */
static uint64_t fold(uint64_t x)
{
	x ^= x >> 31;
	x *= UINT64_C(0xbf58476d1ce4e5b9);
	x ^= x >> 29;
	x *= UINT64_C(0x94d049bb133111eb);
	x ^= x >> 32;
	return x;
}

/* One word into the state: a bijection of the state for a given word, so no input is lost. */
static uint64_t step(uint64_t x, uint64_t w)
{
	x = (x ^ w) * UINT64_C(0xd6e8feb86659fd93);
	return x ^ (x >> 32);
}

uint64_t xprofs_table_hash(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t x = (h ^ seed()) + (uint64_t)n * UINT64_C(0x9e3779b97f4a7c15), w = 0;
	size_t left = n;

	for (; left > 8; b += 8, left -= 8) {
		memcpy(&w, b, 8);
		x = step(x, w);
	}
	/*
	 * The last 1 to 8 bytes in fixed-size loads, which may read bytes again
	 * (n is in the state, so no two keys of one length mix alike): a
	 * memcpy() of a variable length costs more than the rest of a short key.
	 */
	if (n >= 8) {
		memcpy(&w, b + left - 8, 8);
	} else if (n >= 4) {
		uint32_t lo, hi;

		memcpy(&lo, b, 4);
		memcpy(&hi, b + n - 4, 4);
		w = (uint64_t)hi << 32 | lo;
	} else if (n) {
		w = (uint64_t)b[0] << 16 | (uint64_t)b[n / 2] << 8 | b[n - 1];
	}
	return fold(step(x, w));
}

int xprofs_table_new(size_t max_entries, struct xprofs_table **out)
{
	struct xprofs_table *t;

	*out = NULL;
	if (max_entries < 1 || max_entries > XPROFS_TABLE_MAX)
		return -EINVAL;
	if (!(t = calloc(1, sizeof(*t))))
		return -ENOMEM;
	t->max = max_entries;
	*out = t;
	return 0;
}

size_t xprofs_table_count(const struct xprofs_table *t)
{
	return t ? t->n : 0;
}

void xprofs_table_free(struct xprofs_table *t)
{
	if (t)
		free(t->slot);
	free(t);
}

static size_t home(uint32_t tag, unsigned shift)
{
	/* the tag's bits mixed once more: a caller's hash may be weak in its top bits */
	return (uint32_t)(tag * UINT32_C(0x9e3779b1)) >> shift;
}

/* Puts slot value @v in the first free slot from its home in @slot (@cap slots). */
static void place(uint64_t *slot, size_t cap, unsigned shift, uint64_t v)
{
	size_t i = home((uint32_t)(v >> 32), shift);

	while (slot[i])
		i = (i + 1) & (cap - 1);
	slot[i] = v;
}

/* Doubles @t's slots (TABLE_FIRST at first); 0 or -ENOMEM with @t unchanged. */
static int grow(struct xprofs_table *t)
{
	size_t cap = t->cap ? t->cap * 2 : TABLE_FIRST;
	unsigned shift = t->cap ? t->shift - 1 : 32 - 4; /* TABLE_FIRST == 1 << 4 */
	uint64_t *slot = calloc(cap, sizeof(*slot));

	if (!slot)
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++)
		if (t->slot[i])
			place(slot, cap, shift, t->slot[i]);
	free(t->slot);
	t->slot = slot;
	t->cap = cap;
	t->shift = shift;
	return 0;
}

int xprofs_table_find(const struct xprofs_table *t, uint64_t hash, xprofs_table_eq_fn *eq,
		      const void *ctx, const void *key, uint32_t *idx)
{
	uint32_t tag = (uint32_t)(hash >> 32);
	size_t i;

	if (!t || !t->n)
		return -ENOENT;
	for (i = home(tag, t->shift); t->slot[i]; i = (i + 1) & (t->cap - 1)) {
		uint64_t s = t->slot[i];

		if ((uint32_t)(s >> 32) == tag && eq(ctx, (uint32_t)s - 1, key)) {
			*idx = (uint32_t)s - 1;
			return 0;
		}
	}
	return -ENOENT;
}

int xprofs_table_add(struct xprofs_table *t, uint64_t hash, uint32_t idx)
{
	int r;

	if (t->n >= t->max)
		return -ENOSPC;
	if (idx == UINT32_MAX)
		return -EINVAL; /* position + 1 must fit the slot's 32 bits */
	/* at most half full: t->max <= XPROFS_TABLE_MAX keeps cap within 2^31 */
	if ((t->n + 1) * 2 > t->cap && (r = grow(t)) < 0)
		return r;
	place(t->slot, t->cap, t->shift, (hash >> 32 << 32) | ((uint64_t)idx + 1));
	t->n++;
	return 0;
}
