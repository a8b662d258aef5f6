/*
 * gcs/block-table.c - the store's block table: every GCS_BLOCK_SIZE (1 MiB)
 * block of an object generation that is in memory or being loaded, its LRU
 * and memory budget, and the lz4 disk cache behind it with its writer
 * thread. Readers (blocks.c) and streams (stream.c) both fill it; neither
 * calls the other for that, they meet here.
 *
 * Design: a hash table of blocks (single-flight: whoever claims a missing
 * block loads it, concurrent readers of the same block wait for it on
 * blk_cond), an LRU of ready blocks bounded by block_mem_max, and the
 * optional shared lz4 cache (key: bucket/object/generation/block, or a
 * stream's group of GCS_DISK_GROUP blocks). A loader publishes its blocks
 * (gcs_blk_publish()): they become ready, their waiters wake, and fetched
 * ones go to the disk cache from a writer thread (a short queue; a loader
 * waits for room, so a disk slower than the network slows fetching down
 * instead of leaving blocks out of the cache).
 *
 * Locks: the table, the LRU and every block's state are under s->blk_lock;
 * the writer's queue is under s->bg_lock; the two are never held together,
 * and no request or disk-cache I/O runs with either held.
 *
 * Limits: memory is bounded by block_mem_max: idle ready blocks are evicted
 * to make room; loading and referenced blocks cannot be. A failed block
 * answers its error for NEG_TTL_NS before it is fetched again.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gcs-internal.h"

#define NEG_TTL_NS (10LL * 1000000000LL) /* how long a failed block fetch is remembered */

/*
 * The disk cache's key of block @idx ("gcs"), or with @group of the
 * GCS_DISK_GROUP blocks from @idx on that a stream wrote as one entry
 * ("gcsg": one file per 16 MiB instead of per 1 MiB; creating a file and
 * starting the writer's threads per entry cost more CPU than the bytes).
 */
static size_t cache_key(char *key, size_t n, struct gcs_store *s, const char *obj, uint64_t gen,
			uint64_t idx, bool group)
{
	int k = snprintf(key, n, "%s%c%s/%s%c%llu%c%llu", group ? "gcsg" : "gcs", 0, s->bucket, obj,
			 0, (unsigned long long)gen, 0, (unsigned long long)idx);

	return k < 0 || (size_t)k >= n ? 0 : (size_t)k;
}

size_t gcs_disk_group_key(char *key, size_t n, struct gcs_store *s, const char *obj, uint64_t gen,
			  uint64_t first)
{
	return cache_key(key, n, s, obj, gen, first, true);
}

/* @b->len bytes of @b from its own entry, else from the group entry holding it. */
bool gcs_blk_disk_get(struct gcs_store *s, struct blk *b)
{
	size_t len = b->len;
	char key[GCS_NAME_MAX + 512];
	uint64_t at = 0, first = b->idx - b->idx % GCS_DISK_GROUP;
	size_t klen = cache_key(key, sizeof(key), s, b->obj, b->gen, b->idx, false);
	struct xprofs_cache_reader *e = NULL;
	bool grouped = false, ok = false;

	if (!s->o.cache || !klen)
		return false;
	if (xprofs_cache_reader_open(s->o.cache, key, klen, &e) < 0) {
		klen = cache_key(key, sizeof(key), s, b->obj, b->gen, first, true);
		if (!klen || xprofs_cache_reader_open(s->o.cache, key, klen, &e) < 0)
			return false;
		grouped = true;
		at = (b->idx - first) * GCS_BLOCK_SIZE;
	}
	/* a block entry is the block; a group entry covers it (a group may end early) */
	if ((grouped ? xprofs_cache_reader_size(e) >= at + len
		     : xprofs_cache_reader_size(e) == len) &&
	    xprofs_cache_reader_pread(e, b->data, len, at) == (ssize_t)len)
		ok = true;
	xprofs_cache_reader_close(e);
	return ok;
}

static void disk_put(struct gcs_store *s, struct blk *b)
{
	char key[GCS_NAME_MAX + 512];
	size_t klen = cache_key(key, sizeof(key), s, b->obj, b->gen, b->idx, false);
	struct xprofs_cache_writer *w = NULL;

	if (!s->o.cache || !klen || xprofs_cache_writer_new(s->o.cache, key, klen, &w) < 0)
		return;
	/* stored as they are: docs/gcs.md "Disk cache" */
	if (xprofs_cache_writer_set_acceleration(w, XPROFS_CACHE_ACCEL_STORE) < 0 ||
	    xprofs_cache_writer_write(w, b->data, b->len) < 0) {
		xprofs_cache_writer_abort(w);
		return;
	}
	(void)xprofs_cache_writer_commit(w);
}

static uint64_t blk_hash(const char *obj, uint64_t gen, uint64_t idx)
{
	uint64_t h = xprofs_hash64(obj, strlen(obj));

	return h ^ (gen * 0x9e3779b97f4a7c15ULL) ^ (idx * 0xff51afd7ed558ccdULL);
}

struct blk *gcs_blk_find(struct gcs_store *s, const char *obj, uint64_t gen, uint64_t idx)
{
	uint64_t h = blk_hash(obj, gen, idx);
	struct blk *b;

	for (b = s->blk_slots[h % GCS_BLK_SLOTS]; b; b = b->hnext)
		if (b->hash == h && b->gen == gen && b->idx == idx && strcmp(b->obj, obj) == 0)
			return b;
	return NULL;
}

static void lru_del(struct blk *b)
{
	if (b->lru_next) {
		b->lru_prev->lru_next = b->lru_next;
		b->lru_next->lru_prev = b->lru_prev;
		b->lru_prev = b->lru_next = NULL;
	}
}

/* Link @b (not on the list) between the neighbours @prev and @next. */
static void lru_link(struct blk *b, struct blk *prev, struct blk *next)
{
	b->lru_prev = prev;
	b->lru_next = next;
	prev->lru_next = b;
	next->lru_prev = b;
}

static void lru_push(struct gcs_store *s, struct blk *b)
{
	lru_del(b);
	lru_link(b, &s->lru, s->lru.lru_next);
}

/* The other end: the next block to evict. */
static void lru_push_oldest(struct gcs_store *s, struct blk *b)
{
	lru_del(b);
	lru_link(b, s->lru.lru_prev, &s->lru);
}

static void blk_table_del(struct gcs_store *s, struct blk *b)
{
	struct blk **pp = &s->blk_slots[b->hash % GCS_BLK_SLOTS];

	if (!b->in_table)
		return;
	while (*pp != b)
		pp = &(*pp)->hnext;
	*pp = b->hnext;
	b->in_table = false;
	lru_del(b);
}

static void blk_destroy(struct gcs_store *s, struct blk *b)
{
	if (b->data)
		s->blk_mem -= GCS_BLOCK_SIZE;
	free(b->data);
	free(b->obj);
	free(b);
}

void gcs_blk_unref(struct gcs_store *s, struct blk *b)
{
	if (--b->refs == 0 && !b->in_table)
		blk_destroy(s, b);
}

/*
 * blk_lock held: drop unused ready blocks, oldest first, until @need more
 * bytes fit in the budget. Returns whether they fit: blocks that are loading
 * or referenced cannot be dropped, and only they make the budget "full"
 * (counting idle cached blocks as used would turn read-ahead off for good
 * once the cache has filled, one 1 MiB GET per block from then on).
 */
bool gcs_blk_room(struct gcs_store *s, uint64_t need)
{
	struct blk *b = s->lru.lru_prev, *p;

	for (; b != &s->lru && s->blk_mem + need > s->o.block_mem_max; b = p) {
		p = b->lru_prev;
		if (b->refs == 0) {
			blk_table_del(s, b);
			blk_destroy(s, b);
		}
	}
	return s->blk_mem + need <= s->o.block_mem_max;
}

/* blk_lock held: drop unused ready blocks, oldest first, until under budget. */
static void blk_evict(struct gcs_store *s)
{
	(void)gcs_blk_room(s, 0);
}

bool gcs_blk_retry_due(struct gcs_store *s, struct blk *b)
{
	if (!b->err || b->state != GCS_BLK_READY || xprofs_mono_ns() < b->err_until)
		return false;
	blk_table_del(s, b); /* the remembered failure is old: try again */
	if (b->refs == 0)
		blk_destroy(s, b);
	return true;
}

void gcs_blk_touch(struct gcs_store *s, struct blk *b)
{
	if (b->in_table)
		lru_push(s, b);
}

bool gcs_blk_on_disk(struct gcs_store *s, const char *obj, uint64_t gen, uint64_t idx)
{
	char key[GCS_NAME_MAX + 512];
	uint64_t first = idx - idx % GCS_DISK_GROUP, size;
	size_t klen = cache_key(key, sizeof(key), s, obj, gen, idx, false);

	if (!s->o.cache || !klen)
		return false;
	if (xprofs_cache_peek_size(s->o.cache, key, klen, &size) == 0)
		return true;
	klen = cache_key(key, sizeof(key), s, obj, gen, first, true);
	return klen && xprofs_cache_peek_size(s->o.cache, key, klen, &size) == 0 &&
	       size > (idx - first) * GCS_BLOCK_SIZE;
}

int gcs_blk_claim_one(struct gcs_store *s, const char *obj, uint64_t gen, uint64_t idx,
		      struct blk **out)
{
	struct blk *nb;

	if (gcs_blk_find(s, obj, gen, idx))
		return -EEXIST;
	nb = calloc(1, sizeof(*nb));
	if (nb && !(nb->obj = strdup(obj))) {
		free(nb);
		nb = NULL;
	}
	if (nb && !(nb->data = malloc(GCS_BLOCK_SIZE))) {
		free(nb->obj);
		free(nb);
		nb = NULL;
	}
	if (!nb)
		return -ENOMEM;
	nb->gen = gen;
	nb->idx = idx;
	nb->hash = blk_hash(obj, gen, idx);
	nb->state = GCS_BLK_LOADING;
	nb->refs = 1; /* the loader's */
	nb->in_table = true;
	nb->hnext = s->blk_slots[nb->hash % GCS_BLK_SLOTS];
	s->blk_slots[nb->hash % GCS_BLK_SLOTS] = nb;
	s->blk_mem += GCS_BLOCK_SIZE;
	*out = nb;
	return 0;
}

/*
 * The disk-cache writer: lz4 compression and file I/O of fetched blocks run
 * on their own thread, after the blocks were published, so readers do not
 * wait for them and the next fetch overlaps them. The queue is short (it
 * pins its blocks in the memory budget); a loader that finds it full waits
 * for room, so a disk slower than the network slows fetching down instead
 * of leaving blocks out of the cache.
 */
static bool dw_push(struct gcs_store *s, struct blk *b)
{
	bool ok = false;

	pthread_mutex_lock(&s->bg_lock);
	while (s->dw_started && !s->bg_stop && s->dw_len >= GCS_DW_MAX)
		pthread_cond_wait(&s->dw_room, &s->bg_lock);
	if (s->dw_started && !s->bg_stop && s->dw_len < GCS_DW_MAX) {
		s->dw_q[(s->dw_head + s->dw_len++) % GCS_DW_MAX] = b;
		pthread_cond_signal(&s->dw_cond);
		ok = true;
	}
	pthread_mutex_unlock(&s->bg_lock);
	return ok;
}

void *gcs_dw_main(void *arg)
{
	struct gcs_store *s = arg;

	pthread_mutex_lock(&s->bg_lock);
	for (;;) {
		struct blk *b;
		bool stop = s->bg_stop;

		if (!s->dw_len) {
			if (stop)
				break;
			pthread_cond_wait(&s->dw_cond, &s->bg_lock);
			continue;
		}
		b = s->dw_q[s->dw_head];
		s->dw_head = (s->dw_head + 1) % GCS_DW_MAX;
		s->dw_len--;
		pthread_cond_signal(&s->dw_room);
		pthread_mutex_unlock(&s->bg_lock);
		disk_put(s, b); /* at unmount too: the queue is short */
		pthread_mutex_lock(&s->blk_lock);
		gcs_blk_unref(s, b);
		blk_evict(s);
		pthread_mutex_unlock(&s->blk_lock);
		pthread_mutex_lock(&s->bg_lock);
	}
	pthread_mutex_unlock(&s->bg_lock);
	return NULL;
}

size_t gcs_blk_publish(struct gcs_store *s, struct blk **v, size_t n)
{
	size_t i, ok = 0;

	pthread_mutex_lock(&s->blk_lock);
	for (i = 0; i < n; i++) {
		v[i]->state = GCS_BLK_READY;
		ok += v[i]->err == 0;
		if (v[i]->err) {
			/*
			 * Remember the failure briefly: the kernel re-asks a failed
			 * read (readahead, then the read itself), and each fresh
			 * attempt would spend the whole retry deadline again.
			 */
			v[i]->err_until = xprofs_mono_ns() + NEG_TTL_NS;
			free(v[i]->data);
			v[i]->data = NULL;
			s->blk_mem -= GCS_BLOCK_SIZE;
		}
		lru_push(s, v[i]);
	}
	pthread_cond_broadcast(&s->blk_cond);
	pthread_mutex_unlock(&s->blk_lock);
	/*
	 * Only now, off the waiters' path, hand fetched blocks to the disk
	 * cache: a ready block's data no longer changes, and the loader's
	 * reference, which the queue takes over, keeps it alive meanwhile.
	 */
	for (i = 0; i < n; i++) {
		if (v[i]->err || !v[i]->fetched || !s->o.cache)
			continue;
		if (dw_push(s, v[i]))
			v[i] = NULL;
		else /* no writer thread, or it is stopping (a prefetch ending at unmount) */
			disk_put(s, v[i]);
	}
	pthread_mutex_lock(&s->blk_lock);
	for (i = 0; i < n; i++)
		if (v[i])
			gcs_blk_unref(s, v[i]);
	blk_evict(s);
	pthread_mutex_unlock(&s->blk_lock);
	return ok;
}

void gcs_blk_release(struct gcs_store *s, struct blk *b, bool consumed)
{
	pthread_mutex_lock(&s->blk_lock);
	/*
	 * A block its sequential reader has finished goes first, before the
	 * read-ahead blocks it is about to need (plain LRU would evict those).
	 */
	if (consumed && b->in_table && b->lru_next)
		lru_push_oldest(s, b);
	gcs_blk_unref(s, b);
	blk_evict(s);
	pthread_mutex_unlock(&s->blk_lock);
}

void gcs_blk_abandon(struct gcs_store *s, struct blk *b)
{
	pthread_mutex_lock(&s->blk_lock);
	b->abandoned = true;
	b->state = GCS_BLK_READY;
	blk_table_del(s, b);
	pthread_cond_broadcast(&s->blk_cond);
	gcs_blk_unref(s, b);
	pthread_mutex_unlock(&s->blk_lock);
}

void gcs_blk_table_free(struct gcs_store *s)
{
	size_t i;

	for (i = 0; i < GCS_BLK_SLOTS; i++) {
		struct blk *b, *n;

		for (b = s->blk_slots[i]; b; b = n) {
			n = b->hnext;
			free(b->data);
			free(b->obj);
			free(b);
		}
	}
}
