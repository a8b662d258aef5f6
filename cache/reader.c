/*
 * reader.c - open cache entries: lookup by key (hit/miss accounting, corrupt
 * entries dropped), random-access reads that decompress only the blocks
 * they touch, and the size peek that opens nothing.
 *
 * Memory: an open entry holds its layout and one decompressed block (the
 * last partially-read one) plus one spare block buffer to decompress the
 * next into; reads of whole blocks decompress straight into the caller's
 * buffer.
 *
 * Locks: each open entry has its own mutex (e->lock) for its one-block
 * cache; decompression runs unlocked. c->lock is taken for the table and
 * never while holding e->lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache-internal.h"

#define CACHE_TOUCH_EVERY_S 60

struct xprofs_cache_reader {
	struct xprofs_cache *c;
	struct cache_node *node; /* kept alive by node->opens */
	int fd;
	dev_t dev;
	ino_t ino;
	struct cache_layout L;
	bool corrupt; /* protected by c->lock */
	pthread_mutex_t lock;
	uint64_t cached_idx; /* protected by lock; UINT64_MAX = none */
	uint8_t *cached;     /* protected by lock */
	uint8_t *spare;      /* protected by lock; the previous cached block, reused */
};

/* ---- entries ------------------------------------------------------------------ */

/* Persists recency for the next startup's scan; best effort. */
static void touch_mtime(int fd)
{
	struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_nsec = UTIME_NOW}};

	(void)futimens(fd, ts);
}

/*
 * reader_open() - xprofs_cache_reader_open() and _reopen(); @lookup: count
 * the result as a hit or a miss (a reopen is neither: the caller knew the
 * entry was there, so counting it would make hits exceed the lookups that found
 * something, which is what status.json's readers compare).
 */
static int reader_open(struct xprofs_cache *c, const void *key, size_t keylen,
		       struct xprofs_cache_reader **out, bool lookup)
{
	struct xprofs_cache_reader *e = NULL;
	char path[PATH_MAX];
	struct cache_layout L;
	struct cache_node *n;
	struct stat st;
	uint64_t id[2];
	bool touch = false;
	int64_t now;
	int fd = -1, r;

	r = cache_key_path(c, key, keylen, id, path, sizeof(path));
	if (r < 0)
		return r;
	pthread_mutex_lock(&c->lock);
	n = cache_node_get(c, id);
	if (n)
		n->opens++; /* pins it against eviction while we look */
	pthread_mutex_unlock(&c->lock);
	if (!n)
		return -ENOMEM;

	/* O_NONBLOCK: a FIFO planted under an entry's name must not hang us. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		r = -errno;
		if (r == -ENOENT || r == -ELOOP) {
			pthread_mutex_lock(&c->lock);
			cache_node_set_absent(c, n); /* removed by someone else, or not ours */
			pthread_mutex_unlock(&c->lock);
			r = -ENOENT;
		}
		goto fail;
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto fail;
	}
	r = cache_entry_check(fd, key, keylen, &L);
	if (r == -ESTALE) {
		/* Another key's sound entry (a name collision): a miss; keep it. */
		pthread_mutex_lock(&c->lock);
		cache_node_set_present(c, n, (uint64_t)st.st_size);
		pthread_mutex_unlock(&c->lock);
		r = -ENOENT;
		goto fail;
	}
	if (r == -EBADMSG) {
		pthread_mutex_lock(&c->lock);
		cache_drop_corrupt(c, n, st.st_dev, st.st_ino);
		pthread_mutex_unlock(&c->lock);
		r = -ENOENT;
		goto fail;
	}
	if (r < 0)
		goto fail;
	e = calloc(1, sizeof(*e));
	if (!e) {
		r = -ENOMEM;
		goto fail;
	}
	r = -pthread_mutex_init(&e->lock, NULL);
	if (r < 0)
		goto fail;
	e->c = c;
	e->node = n;
	e->fd = fd;
	e->dev = st.st_dev;
	e->ino = st.st_ino;
	e->L = L;
	e->cached_idx = UINT64_MAX;
	now = xprofs_now_ns() / 1000000000;
	pthread_mutex_lock(&c->lock);
	cache_node_set_present(c, n, (uint64_t)st.st_size);
	cache_seen_now(c, n);
	if (lookup)
		c->st.hits++;
	else
		c->st.reopens++;
	if (now - n->touched >= CACHE_TOUCH_EVERY_S) {
		n->touched = now;
		touch = true;
	}
	pthread_mutex_unlock(&c->lock);
	if (touch)
		touch_mtime(fd);
	*out = e;
	return 0;
fail:
	free(e);
	if (fd >= 0)
		close(fd);
	pthread_mutex_lock(&c->lock);
	if (lookup)
		c->st.misses++;
	n->opens--;
	cache_node_put(c, n);
	pthread_mutex_unlock(&c->lock);
	return r;
}

int xprofs_cache_reader_open(struct xprofs_cache *c, const void *key, size_t keylen,
			     struct xprofs_cache_reader **out)
{
	return reader_open(c, key, keylen, out, true);
}

int xprofs_cache_reader_reopen(struct xprofs_cache *c, const void *key, size_t keylen,
			       struct xprofs_cache_reader **out)
{
	return reader_open(c, key, keylen, out, false);
}

int xprofs_cache_peek_size(struct xprofs_cache *c, const void *key, size_t keylen, uint64_t *size)
{
	char path[PATH_MAX];
	struct cache_layout L;
	uint64_t id[2];
	int fd, r;

	r = cache_key_path(c, key, keylen, id, path, sizeof(path));
	if (r < 0)
		return r;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOENT || errno == ELOOP ? -ENOENT : -errno;
	r = cache_entry_check(fd, key, keylen, &L);
	close(fd);
	if (r == -ESTALE || r == -EBADMSG)
		return -ENOENT;
	if (r == 0)
		*size = L.raw_size;
	return r;
}

uint64_t xprofs_cache_reader_size(const struct xprofs_cache_reader *e)
{
	return e->L.raw_size;
}

/* Decodes block @b into @dst; a corrupt block drops the entry and reads as -EIO. */
static ssize_t entry_block(struct xprofs_cache_reader *e, uint64_t b, uint8_t *dst)
{
	ssize_t r = cache_block_read(e->fd, &e->L, b, dst);

	if (r != -EBADMSG)
		return r;
	pthread_mutex_lock(&e->c->lock);
	if (!e->corrupt) {
		e->corrupt = true;
		cache_drop_corrupt(e->c, e->node, e->dev, e->ino);
	}
	pthread_mutex_unlock(&e->c->lock);
	return -EIO;
}

ssize_t xprofs_cache_reader_pread(struct xprofs_cache_reader *e, void *buf, size_t n, uint64_t off)
{
	uint8_t *out = buf;
	size_t done = 0;

	if (off >= e->L.raw_size)
		return 0;
	if (n > e->L.raw_size - off)
		n = (size_t)(e->L.raw_size - off);
	if (n > SSIZE_MAX)
		n = SSIZE_MAX;
	while (done < n) {
		uint64_t pos = off + done, b = pos / e->L.bs;
		size_t in = (size_t)(pos % e->L.bs), blen = cache_block_raw_len(&e->L, b);
		size_t take = blen - in < n - done ? blen - in : n - done;
		uint8_t *tmp, *old;
		ssize_t r;

		if (in == 0 && take == blen) {
			r = entry_block(e, b, out + done);
			if (r < 0)
				return r;
			done += take;
			continue;
		}
		pthread_mutex_lock(&e->lock);
		if (e->cached_idx == b) {
			memcpy(out + done, e->cached + in, take);
			pthread_mutex_unlock(&e->lock);
			done += take;
			continue;
		}
		/*
		 * Reuse the block buffer the last replacement freed: a sequential
		 * reader with requests smaller than a block (FUSE's 128 KiB) would
		 * otherwise malloc and free a block-sized (mmap) buffer per block.
		 */
		tmp = e->spare;
		e->spare = NULL;
		pthread_mutex_unlock(&e->lock);
		if (!tmp)
			tmp = malloc(e->L.bs);
		if (!tmp)
			return -ENOMEM;
		r = entry_block(e, b, tmp);
		if (r < 0) {
			free(tmp);
			return r;
		}
		memcpy(out + done, tmp + in, take);
		pthread_mutex_lock(&e->lock);
		old = e->cached;
		e->cached = tmp;
		e->cached_idx = b;
		if (!e->spare) {
			e->spare = old;
			old = NULL;
		}
		pthread_mutex_unlock(&e->lock);
		free(old);
		done += take;
	}
	return (ssize_t)done;
}

static ssize_t reader_pread(void *arg, void *buf, size_t n, uint64_t off)
{
	return xprofs_cache_reader_pread(arg, buf, n, off);
}

struct xprofs_reader xprofs_cache_reader_as_reader(struct xprofs_cache_reader *e)
{
	return (struct xprofs_reader){
		.pread = reader_pread, .arg = e, .size = e->L.raw_size, .data = NULL};
}

void xprofs_cache_reader_close(struct xprofs_cache_reader *e)
{
	if (!e)
		return;
	pthread_mutex_lock(&e->c->lock);
	e->node->opens--;
	cache_node_put(e->c, e->node);
	pthread_mutex_unlock(&e->c->lock);
	close(e->fd);
	free(e->cached);
	free(e->spare);
	pthread_mutex_destroy(&e->lock);
	free(e);
}
