/*
 * table.c - the cache directory and its in-memory entry table: entry names,
 * the hash table of known entries, the LRU list and the size cap (eviction),
 * directory scans (startup, rescans), and the cache object itself
 * (new/free/settings/stats/remove). Writers (writer.c) and readers
 * (reader.c) reach the table through the cache_node_*() calls declared in
 * cache-internal.h, always with c->lock held.
 *
 * Layout: DIR/<32 hex>.xc, the name being two xxh64 of the key (128 bits;
 * the key itself is stored in the entry and compared on open, so a collision
 * is a miss, never wrong data); DIR/tmp/ holds writers' temp files.
 *
 * Size cap and recency: the table (seeded by scanning DIR at startup,
 * ordered by mtime) tracks bytes on disk and an LRU list. Opening an entry
 * makes it most recent and, at most once a minute, touches its mtime so the
 * order survives a restart. A commit that pushes the total past max_bytes
 * evicts least recently used entries, never one that is open in this
 * process. Another process sharing DIR may unlink an entry we have open: on
 * Linux the open fd keeps reading the old inode, which is fine. The cap is
 * enforced per process on what it knows: its scans of DIR (at start, then by
 * a commit at most every 5 minutes, or xprofs_cache_rescan()) plus what it
 * writes and opens, so two mounts sharing DIR may together exceed the cap by
 * what they wrote since their last rescan. Free space: before each block a
 * writer appends, entries are evicted until the filesystem keeps min_free
 * bytes free (measured with statvfs(), since other programs share the
 * disk); a write that cannot get room fails with -ENOSPC. Temp files older than an hour
 * (crashed writers; a live writer's temp mtime moves with every block) are
 * removed at startup.
 *
 * Limits: the table grows by doubling (an allocation failure only makes
 * chains longer); a scan holds one 32-byte record per entry file.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "cache-internal.h"

#define CACHE_DEFAULT_MAX (1ULL << 30)
#define CACHE_NAME_LEN 35 /* 32 hex + ".xc" */
#define CACHE_TMP_MAX_AGE_S 3600
#define ID_SEED2 0x5851F42D4C957F2DULL

/* ---- names and the entry table (callers hold c->lock) ------------------- */

void cache_key_id(const void *key, size_t keylen, uint64_t id[2])
{
	id[0] = cache_hash64(key, keylen, 0);
	id[1] = cache_hash64(key, keylen, ID_SEED2);
}

int cache_entry_path(const struct xprofs_cache *c, const uint64_t id[2], char *out, size_t n)
{
	int r = snprintf(out, n, "%s/%016" PRIx64 "%016" PRIx64 ".xc", c->dir, id[0], id[1]);

	return (r < 0 || (size_t)r >= n) ? -ENAMETOOLONG : 0;
}

int cache_key_path(const struct xprofs_cache *c, const void *key, size_t keylen, uint64_t id[2],
		   char *path, size_t n)
{
	if (keylen > XPROFS_CACHE_KEY_MAX || (keylen && !key))
		return -EINVAL;
	cache_key_id(key, keylen, id);
	return cache_entry_path(c, id, path, n);
}

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	return -1;
}

/* Parses "<32 lowercase hex>.xc"; anything else in DIR is not ours. */
static bool name_to_id(const char *name, uint64_t id[2])
{
	if (strlen(name) != CACHE_NAME_LEN || strcmp(name + 32, ".xc") != 0)
		return false;
	id[0] = id[1] = 0;
	for (int i = 0; i < 32; i++) {
		int v = hexval(name[i]);

		if (v < 0)
			return false;
		id[i / 16] = (id[i / 16] << 4) | (uint64_t)v;
	}
	return true;
}

static size_t bucket_of(const struct xprofs_cache *c, const uint64_t id[2])
{
	return (size_t)(id[0] ^ id[1]) & (c->nbuckets - 1);
}

static struct cache_node *node_find(struct xprofs_cache *c, const uint64_t id[2])
{
	for (struct cache_node *n = c->buckets[bucket_of(c, id)]; n; n = n->hnext)
		if (n->id[0] == id[0] && n->id[1] == id[1])
			return n;
	return NULL;
}

static void table_grow(struct xprofs_cache *c)
{
	size_t nb = c->nbuckets * 2;
	struct cache_node **b = calloc(nb, sizeof(*b));

	if (!b)
		return; /* longer chains, still correct */
	for (size_t i = 0; i < c->nbuckets; i++) {
		struct cache_node *n = c->buckets[i], *next;

		for (; n; n = next) {
			size_t k = (size_t)(n->id[0] ^ n->id[1]) & (nb - 1);

			next = n->hnext;
			n->hnext = b[k];
			b[k] = n;
		}
	}
	free(c->buckets);
	c->buckets = b;
	c->nbuckets = nb;
}

/* Finds or adds the node of @id; NULL only when out of memory. */
struct cache_node *cache_node_get(struct xprofs_cache *c, const uint64_t id[2])
{
	struct cache_node *n = node_find(c, id);
	size_t k;

	if (n)
		return n;
	n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	n->id[0] = id[0];
	n->id[1] = id[1];
	if (c->nnodes >= c->nbuckets)
		table_grow(c);
	k = bucket_of(c, id);
	n->hnext = c->buckets[k];
	c->buckets[k] = n;
	c->nnodes++;
	return n;
}

static void lru_unlink(struct xprofs_cache *c, struct cache_node *n)
{
	if (n->prev)
		n->prev->next = n->next;
	else
		c->mru = n->next;
	if (n->next)
		n->next->prev = n->prev;
	else
		c->lru = n->prev;
	n->prev = n->next = NULL;
}

static void lru_push_front(struct xprofs_cache *c, struct cache_node *n)
{
	n->prev = NULL;
	n->next = c->mru;
	if (c->mru)
		c->mru->prev = n;
	c->mru = n;
	if (!c->lru)
		c->lru = n;
}

/* Marks @n present with @size bytes and most recently used. */
void cache_node_set_present(struct xprofs_cache *c, struct cache_node *n, uint64_t size)
{
	if (n->present) {
		c->st.bytes -= n->size;
		lru_unlink(c, n);
	} else {
		c->st.entries++;
		n->present = true;
	}
	n->size = size;
	c->st.bytes += size;
	lru_push_front(c, n);
}

void cache_node_set_absent(struct xprofs_cache *c, struct cache_node *n)
{
	if (!n->present)
		return;
	lru_unlink(c, n);
	c->st.bytes -= n->size;
	c->st.entries--;
	n->present = false;
	n->size = 0;
}

/*
 * Marks @n as known to exist for the next merge_scan(), whose listing may
 * have been taken before we published or opened it.
 */
void cache_seen_now(struct xprofs_cache *c, struct cache_node *n)
{
	n->seen = c->scan_gen + 1;
}

/* Frees @n once nothing refers to it. */
void cache_node_put(struct xprofs_cache *c, struct cache_node *n)
{
	struct cache_node **pp;

	if (n->present || n->opens)
		return;
	for (pp = &c->buckets[bucket_of(c, n->id)]; *pp; pp = &(*pp)->hnext) {
		if (*pp == n) {
			*pp = n->hnext;
			break;
		}
	}
	c->nnodes--;
	free(n);
}

/* evict_one() - removes @n's file and forgets it; false when it may not go (open). */
static bool evict_one(struct xprofs_cache *c, struct cache_node *n)
{
	char path[PATH_MAX];

	if (n->opens || cache_entry_path(c, n->id, path, sizeof(path)) < 0)
		return false;
	if (unlink(path) < 0 && errno != ENOENT)
		xprofs_warn("cache: cannot evict %s: %s", path, strerror(errno));
	else
		c->st.evictions++;
	cache_node_set_absent(c, n);
	cache_node_put(c, n);
	return true;
}

/* Evicts least recently used entries until under the cap; spares @keep and open ones. */
void cache_evict(struct xprofs_cache *c, const struct cache_node *keep)
{
	struct cache_node *n = c->lru;

	while (c->st.bytes > c->max_bytes && n) {
		struct cache_node *prev = n->prev;

		if (n != keep)
			(void)evict_one(c, n);
		n = prev;
	}
	if (c->st.bytes > c->max_bytes)
		xprofs_debug("cache: %" PRIu64 " bytes over the cap, all of it open",
			     c->st.bytes - c->max_bytes);
}

/* fs_free() - bytes an unprivileged writer may still use on the cache's filesystem. */
static uint64_t fs_free(const struct xprofs_cache *c)
{
	struct statvfs sv;

	if (statvfs(c->dir, &sv) < 0)
		return UINT64_MAX; /* unknown: let the write itself find out */
	return (uint64_t)sv.f_bavail * sv.f_frsize;
}

/*
 * Called before every block a writer appends (a statvfs() each, ~1 us):
 * the free space is measured, not tracked, because other programs share the
 * disk. The freed bytes are estimated from the entries' sizes while
 * evicting, then measured again.
 */
/* evict_lru_bytes() - evicts LRU entries (never open ones) of at least @bytes; bytes evicted. */
static uint64_t evict_lru_bytes(struct xprofs_cache *c, uint64_t bytes)
{
	struct cache_node *n = c->lru;
	uint64_t done = 0;

	while (done < bytes && n) {
		struct cache_node *prev = n->prev;
		uint64_t size = n->size;

		if (evict_one(c, n)) {
			done += size;
			c->st.space_evictions++;
		}
		n = prev;
	}
	return done;
}

int cache_make_room(struct xprofs_cache *c, uint64_t need)
{
	uint64_t want = c->min_free + need, fr = fs_free(c);

	if (fr >= want || (evict_lru_bytes(c, want - fr) && fs_free(c) >= want))
		return 0;
	c->st.nospace++;
	return -ENOSPC;
}

uint64_t cache_evict_bytes(struct xprofs_cache *c, uint64_t bytes)
{
	c->st.nospace++;
	return evict_lru_bytes(c, bytes);
}

int xprofs_cache_set_min_free(struct xprofs_cache *c, uint64_t bytes)
{
	struct statvfs sv;
	uint64_t v = bytes;

	if (bytes == XPROFS_CACHE_MIN_FREE_DEFAULT) {
		if (statvfs(c->dir, &sv) < 0)
			return -errno;
		v = (uint64_t)sv.f_blocks * sv.f_frsize / 100 * XPROFS_CACHE_MIN_FREE_PCT;
		if (v > XPROFS_CACHE_MIN_FREE_CAP)
			v = XPROFS_CACHE_MIN_FREE_CAP;
	}
	pthread_mutex_lock(&c->lock);
	c->min_free = v;
	c->st.min_free = v;
	(void)cache_make_room(c, 0); /* a refusal here only counts */
	pthread_mutex_unlock(&c->lock);
	return 0;
}

/* Unlinks the corrupt file of @n if it is still the inode we judged. */
void cache_drop_corrupt(struct xprofs_cache *c, struct cache_node *n, dev_t dev, ino_t ino)
{
	char path[PATH_MAX];
	struct stat st;

	if (cache_entry_path(c, n->id, path, sizeof(path)) == 0 && lstat(path, &st) == 0 &&
	    st.st_dev == dev && st.st_ino == ino) {
		if (unlink(path) < 0)
			xprofs_warn("cache: cannot remove corrupt %s: %s", path, strerror(errno));
		else
			xprofs_warn("cache: removed corrupt entry %s", path);
	}
	c->st.corrupt++;
	cache_node_set_absent(c, n);
}

/* ---- directory scans -------------------------------------------------------- */

struct scanned {
	uint64_t id[2];
	uint64_t size;
	int64_t mtime_ns;
};

static int scanned_cmp(const void *a, const void *b)
{
	const struct scanned *x = a, *y = b;

	return (x->mtime_ns > y->mtime_ns) - (x->mtime_ns < y->mtime_ns);
}

static void clean_tmp(struct xprofs_cache *c)
{
	int64_t cutoff = xprofs_now_ns() / 1000000000 - CACHE_TMP_MAX_AGE_S;
	DIR *d = opendir(c->tmpdir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		struct stat st;

		if (de->d_name[0] == '.')
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode) || st.st_mtime >= cutoff)
			continue;
		if (unlinkat(dirfd(d), de->d_name, 0) == 0)
			xprofs_info("cache: removed stale temp file %s/%s", c->tmpdir, de->d_name);
	}
	closedir(d);
}

/*
 * Lists the entry files in DIR, oldest mtime first, without the lock (a big
 * directory must not stall readers). Caller owns *@out; free with free().
 */
static int scan_dir(const char *dir, struct scanned **out, size_t *count)
{
	struct scanned *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d;
	int r = 0;

	d = opendir(dir);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		struct stat st;
		uint64_t id[2];

		if (!name_to_id(de->d_name, id))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		if ((r = xprofs_grow(&v, &cap, n, sizeof(*v), 256)) < 0)
			goto out;
		v[n++] = (struct scanned){{id[0], id[1]},
					  (uint64_t)st.st_size,
					  st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec};
	}
	if (n)
		qsort(v, n, sizeof(*v), scanned_cmp);
	*out = v;
	*count = n;
	v = NULL;
out:
	free(v);
	closedir(d);
	return r;
}

/*
 * Folds a directory listing @v (oldest first) into the table; c->lock held.
 * Entries we did not know are inserted into the LRU list by mtime in one
 * merge pass (the list is ordered by recency, and a file's mtime is its last
 * recorded use, ours or another process's). Entries we thought present but
 * that are gone were removed by someone else: forgotten, unless open or
 * published or opened by us since the previous merge (such a file may be
 * newer than the listing; see cache_seen_now()).
 */
static int merge_scan(struct xprofs_cache *c, const struct scanned *v, size_t n)
{
	struct cache_node *pos = c->lru; /* walks from least towards most recent */
	struct cache_node *node, *next;
	uint64_t gen = ++c->scan_gen;

	for (size_t i = 0; i < n; i++) {
		int64_t t = v[i].mtime_ns / 1000000000;

		node = cache_node_get(c, v[i].id);
		if (!node)
			return -ENOMEM;
		node->seen = gen;
		if (node->present) {
			c->st.bytes += v[i].size - node->size; /* rewritten elsewhere */
			node->size = v[i].size;
			continue;
		}
		while (pos && pos->touched <= t)
			pos = pos->prev;
		/* insert on the least-recent side of @pos (or at the MRU end) */
		node->present = true;
		node->size = v[i].size;
		node->touched = t;
		c->st.bytes += node->size;
		c->st.entries++;
		node->prev = pos;
		node->next = pos ? pos->next : c->mru;
		if (node->next)
			node->next->prev = node;
		else
			c->lru = node;
		if (pos)
			pos->next = node;
		else
			c->mru = node;
	}
	for (node = c->lru; node; node = next) {
		next = node->prev;
		if (node->seen != gen && !node->opens) {
			cache_node_set_absent(c, node);
			cache_node_put(c, node);
		}
	}
	return 0;
}

int xprofs_cache_rescan(struct xprofs_cache *c)
{
	struct scanned *v = NULL;
	size_t n = 0;
	int r;

	r = scan_dir(c->dir, &v, &n);
	if (r < 0)
		return r;
	pthread_mutex_lock(&c->lock);
	r = merge_scan(c, v, n);
	cache_evict(c, NULL);
	c->last_scan_s = xprofs_now_ns() / 1000000000;
	pthread_mutex_unlock(&c->lock);
	free(v);
	return r;
}

/* ---- cache ------------------------------------------------------------------ */

int xprofs_cache_new(const char *dir, uint64_t max_bytes, struct xprofs_cache **out)
{
	struct xprofs_cache *c;
	int r;

	if (!dir || !*dir || strlen(dir) > PATH_MAX - 64)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	r = pthread_mutex_init(&c->lock, NULL);
	if (r) {
		free(c);
		return -r;
	}
	c->max_bytes = max_bytes ? max_bytes : CACHE_DEFAULT_MAX;
	c->bs = CACHE_BS_DEFAULT;
	c->accel = XPROFS_CACHE_ACCEL_DEFAULT;
	c->nbuckets = 64;
	c->buckets = calloc(c->nbuckets, sizeof(*c->buckets));
	c->dir = strdup(dir);
	if (!c->buckets || !c->dir || asprintf(&c->tmpdir, "%s/tmp", dir) < 0) {
		c->tmpdir = NULL;
		r = -ENOMEM;
		goto fail;
	}
	r = xprofs_mkdir_p(c->tmpdir);
	if (r < 0) {
		xprofs_err("cache: cannot create %s: %s", c->tmpdir, strerror(-r));
		goto fail;
	}
	clean_tmp(c);
	r = xprofs_cache_rescan(c);
	if (r == 0)
		r = xprofs_cache_set_min_free(c, XPROFS_CACHE_MIN_FREE_DEFAULT);
	if (r < 0)
		goto fail;
	xprofs_info("cache: %s: %" PRIu64 " entries, %" PRIu64 " bytes, cap %" PRIu64
		    ", keeping %" PRIu64 " bytes free",
		    c->dir, c->st.entries, c->st.bytes, c->max_bytes, c->min_free);
	*out = c;
	return 0;
fail:
	xprofs_cache_free(c);
	return r;
}

struct xprofs_cache *xprofs_cache_free(struct xprofs_cache *c)
{
	if (!c)
		return NULL;
	for (size_t i = 0; c->buckets && i < c->nbuckets; i++) {
		struct cache_node *n = c->buckets[i], *next;

		for (; n; n = next) {
			next = n->hnext;
			if (n->opens)
				xprofs_err("cache: freed with %u open entries (caller bug)",
					   n->opens);
			free(n);
		}
	}
	free(c->buckets);
	free(c->tmpdir);
	free(c->dir);
	pthread_mutex_destroy(&c->lock);
	free(c);
	return NULL;
}

const char *xprofs_cache_dir(const struct xprofs_cache *c)
{
	return c->dir;
}

int xprofs_cache_set_block_size(struct xprofs_cache *c, uint32_t bs)
{
	if (!cache_bs_valid(bs))
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	c->bs = bs;
	pthread_mutex_unlock(&c->lock);
	return 0;
}

int xprofs_cache_set_acceleration(struct xprofs_cache *c, int accel)
{
	if (accel < 1 || accel > XPROFS_CACHE_ACCEL_MAX)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	c->accel = accel;
	pthread_mutex_unlock(&c->lock);
	return 0;
}

void xprofs_cache_get_stats(struct xprofs_cache *c, struct xprofs_cache_stats *st)
{
	pthread_mutex_lock(&c->lock);
	*st = c->st;
	pthread_mutex_unlock(&c->lock);
}

int xprofs_cache_remove(struct xprofs_cache *c, const void *key, size_t keylen)
{
	char path[PATH_MAX];
	uint64_t id[2];
	struct cache_node *n;
	int r;

	r = cache_key_path(c, key, keylen, id, path, sizeof(path));
	if (r < 0)
		return r == -EINVAL ? -ENOENT : r; /* no such key can be stored */
	pthread_mutex_lock(&c->lock);
	r = unlink(path) < 0 ? -errno : 0;
	n = node_find(c, id);
	if (n) {
		cache_node_set_absent(c, n);
		cache_node_put(c, n);
	}
	pthread_mutex_unlock(&c->lock);
	return r;
}
