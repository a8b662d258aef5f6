/*
 * cache.c - the persistent lz4 blob cache: directory layout, size cap and
 * LRU, streaming writers with atomic publish, and open entries with random
 * access. The entry file format and its validation live in format.c (format
 * described in cache-internal.h).
 *
 * Layout: DIR/<32 hex>.xc, the name being two xxh64 of the key (128 bits;
 * the key itself is stored in the entry and compared on open, so a collision
 * is a miss, never wrong data). Writers stream into DIR/tmp/w.XXXXXX and
 * rename() over the final name: readers and other mounts sharing DIR never
 * see a partial entry; concurrent writers of one key both publish and the
 * last rename wins (identical content). No fsync(): the cache is a cache, and
 * a file torn by a power cut fails its footer, index hash or block checksums
 * and is dropped as corrupt, so durability is not worth halving write speed.
 *
 * Writers compress on WRITER_THREADS threads of their own (started by an
 * entry's first full block, so small entries never start them): the
 * caller's bytes are copied into one of WRITER_QUEUE raw blocks; the threads
 * compress full ones in parallel and append them in order while the caller
 * produces the next, so a renderer and lz4 share the cores (lz4 is the
 * slower of the two, hence two threads). Errors found by a thread are sticky
 * and reported by the next write or the commit.
 *
 * Memory: a writer holds WRITER_QUEUE raw blocks, one compressed block and a fixed
 * run of index records (spilled to an unlinked temp file beyond that), so a
 * many-GB entry costs the same as a small one. An open entry holds its
 * layout and one decompressed block (the last partially-read one) plus one
 * spare block buffer to decompress the next into; reads of
 * whole blocks decompress straight into the caller's buffer.
 *
 * Size cap and recency: an in-memory table of entries (seeded by scanning
 * DIR at startup, ordered by mtime) tracks bytes on disk and an LRU list.
 * Opening an entry makes it most recent and, at most once a minute, touches
 * its mtime so the order survives a restart. A commit that pushes the total
 * past max_bytes evicts least recently used entries, never one that is open
 * in this process. Another process sharing DIR may unlink an entry we have
 * open: on Linux the open fd keeps reading the old inode, which is fine. The
 * cap is enforced per process on what it knows: its scans of DIR (at start,
 * then by a commit at most every 5 minutes, or xprofs_cache_rescan()) plus
 * what it writes and opens, so two mounts sharing DIR may together exceed
 * the cap by what they wrote since their last rescan. Temp files older than an hour (crashed writers; a live
 * writer's temp mtime moves with every block) are removed at startup.
 *
 * Thread safety: one mutex per cache guards the table, LRU and stats, and is
 * also held across the publishing rename() and eviction unlink()s so a
 * commit and an eviction of the same name cannot interleave. Each open entry
 * has its own mutex for its one-block cache; decompression runs unlocked.
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
#include <unistd.h>

#include <lz4.h>

#include "xprofs/cache.h"
#include "cache-internal.h"

#define CACHE_DEFAULT_MAX (1ULL << 30)
#define CACHE_NAME_LEN 35 /* 32 hex + ".xc" */
#define CACHE_TMP_MAX_AGE_S 3600
#define CACHE_TOUCH_EVERY_S 60
#define CACHE_RESCAN_EVERY_S 300 /* commits re-read DIR at most this often */
#define WRITER_IDX_RECS 1024u /* index records a writer keeps before spilling */
#define WRITER_QUEUE 4u /* raw blocks a writer holds: 1 filling + up to 3 queued */
#define WRITER_THREADS 2u /* compressor threads per writer */
#define ID_SEED2 0x5851F42D4C957F2DULL

/* One known entry file. Freed only when neither present nor open. */
struct cnode {
	uint64_t id[2];
	uint64_t size;   /* bytes on disk while present */
	int64_t touched; /* s; last mtime we know of for the file */
	unsigned opens;  /* open entries pointing here */
	bool present;    /* file believed to exist; only then on the LRU list */
	uint64_t seen;   /* scan generation that last listed the file */
	struct cnode *hnext;
	struct cnode *prev, *next; /* LRU: c->mru is the most recent */
};

struct xprofs_cache {
	char *dir;
	char *tmpdir;
	uint64_t max_bytes;
	pthread_mutex_t lock;
	uint32_t bs;               /* protected by lock */
	int accel;                 /* protected by lock; lz4 acceleration of new writers */
	struct cnode **buckets;    /* protected by lock */
	size_t nbuckets, nnodes;   /* protected by lock */
	struct cnode *mru, *lru;   /* protected by lock */
	struct xprofs_cache_stats st; /* protected by lock */
	uint64_t scan_gen;         /* protected by lock */
	int64_t last_scan_s;       /* protected by lock */
	bool rescan_running;       /* protected by lock */
};

struct xprofs_cache_writer {
	struct xprofs_cache *c;
	uint64_t id[2];
	int fd, spill_fd;
	int err; /* first failure; sticky; protected by qlock once the thread runs */
	uint32_t bs;
	int accel; /* lz4 acceleration; atomic (read by the compressor thread) */
	uint8_t *raw; /* the block being filled: slot[fill] */
	size_t raw_len;
	uint64_t raw_total;
	/*
	 * Compression queue: slot[(head + i) % WRITER_QUEUE] for i < queued are
	 * full blocks waiting for (or under) compression; the producer fills
	 * slot[(head + queued) % WRITER_QUEUE], so at most WRITER_QUEUE - 1 wait.
	 */
	uint8_t *slot[WRITER_QUEUE];
	size_t slot_len[WRITER_QUEUE];
	unsigned head, queued;
	unsigned claimed; /* queued blocks, from head, that a thread is compressing */
	unsigned nthreads;
	bool threaded, stop;
	pthread_t thread[WRITER_THREADS];
	pthread_mutex_t qlock;
	pthread_cond_t qcond;
	/* Owned by the compressor (the thread while it runs, else the caller). */
	uint8_t *cbuf;
	int cbuf_cap;
	uint64_t off, nblocks, spilled;
	uint64_t header_hash, index_hash;
	size_t idx_n;
	uint8_t idx[WRITER_IDX_RECS * XC_REC_SIZE];
	char tmp_path[PATH_MAX];
};

struct xprofs_cache_entry {
	struct xprofs_cache *c;
	struct cnode *node; /* kept alive by node->opens */
	int fd;
	dev_t dev;
	ino_t ino;
	struct xc_layout L;
	bool corrupt; /* protected by c->lock */
	pthread_mutex_t lock;
	uint64_t cached_idx; /* protected by lock; UINT64_MAX = none */
	uint8_t *cached;     /* protected by lock */
	uint8_t *spare;      /* protected by lock; the previous cached block, reused */
};

/* ---- names and the entry table (callers hold c->lock) ------------------- */

static void key_id(const void *key, size_t keylen, uint64_t id[2])
{
	id[0] = xc_hash64(key, keylen, 0);
	id[1] = xc_hash64(key, keylen, ID_SEED2);
}

static int entry_path(const struct xprofs_cache *c, const uint64_t id[2], char *out, size_t n)
{
	int r = snprintf(out, n, "%s/%016" PRIx64 "%016" PRIx64 ".xc", c->dir, id[0], id[1]);

	return (r < 0 || (size_t)r >= n) ? -ENAMETOOLONG : 0;
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

static struct cnode *node_find(struct xprofs_cache *c, const uint64_t id[2])
{
	for (struct cnode *n = c->buckets[bucket_of(c, id)]; n; n = n->hnext)
		if (n->id[0] == id[0] && n->id[1] == id[1])
			return n;
	return NULL;
}

static void table_grow(struct xprofs_cache *c)
{
	size_t nb = c->nbuckets * 2;
	struct cnode **b = calloc(nb, sizeof(*b));

	if (!b)
		return; /* longer chains, still correct */
	for (size_t i = 0; i < c->nbuckets; i++) {
		struct cnode *n = c->buckets[i], *next;

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
static struct cnode *node_get(struct xprofs_cache *c, const uint64_t id[2])
{
	struct cnode *n = node_find(c, id);
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

static void lru_unlink(struct xprofs_cache *c, struct cnode *n)
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

static void lru_push_front(struct xprofs_cache *c, struct cnode *n)
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
static void node_set_present(struct xprofs_cache *c, struct cnode *n, uint64_t size)
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

static void node_set_absent(struct xprofs_cache *c, struct cnode *n)
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
static void seen_now(struct xprofs_cache *c, struct cnode *n)
{
	n->seen = c->scan_gen + 1;
}

/* Frees @n once nothing refers to it. */
static void node_put(struct xprofs_cache *c, struct cnode *n)
{
	struct cnode **pp;

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

/* Evicts least recently used entries until under the cap; spares @keep and open ones. */
static void evict(struct xprofs_cache *c, const struct cnode *keep)
{
	struct cnode *n = c->lru;
	char path[PATH_MAX];

	while (c->st.bytes > c->max_bytes && n) {
		struct cnode *prev = n->prev;

		if (n != keep && n->opens == 0 && entry_path(c, n->id, path, sizeof(path)) == 0) {
			if (unlink(path) < 0 && errno != ENOENT)
				xprofs_warn("cache: cannot evict %s: %s", path, strerror(errno));
			else
				c->st.evictions++;
			node_set_absent(c, n);
			node_put(c, n);
		}
		n = prev;
	}
	if (c->st.bytes > c->max_bytes)
		xprofs_debug("cache: %" PRIu64 " bytes over the cap, all of it open",
			     c->st.bytes - c->max_bytes);
}

/* Unlinks the corrupt file of @n if it is still the inode we judged. */
static void drop_corrupt(struct xprofs_cache *c, struct cnode *n, dev_t dev, ino_t ino)
{
	char path[PATH_MAX];
	struct stat st;

	if (entry_path(c, n->id, path, sizeof(path)) == 0 && lstat(path, &st) == 0 &&
	    st.st_dev == dev && st.st_ino == ino) {
		if (unlink(path) < 0)
			xprofs_warn("cache: cannot remove corrupt %s: %s", path, strerror(errno));
		else
			xprofs_warn("cache: removed corrupt entry %s", path);
	}
	c->st.corrupt++;
	node_set_absent(c, n);
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
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 256;
			struct scanned *nv = realloc(v, ncap * sizeof(*v));

			if (!nv) {
				r = -ENOMEM;
				goto out;
			}
			v = nv;
			cap = ncap;
		}
		v[n++] = (struct scanned){{id[0], id[1]}, (uint64_t)st.st_size,
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
 * newer than the listing; see seen_now()).
 */
static int merge_scan(struct xprofs_cache *c, const struct scanned *v, size_t n)
{
	struct cnode *pos = c->lru; /* walks from least towards most recent */
	struct cnode *node, *next;
	uint64_t gen = ++c->scan_gen;

	for (size_t i = 0; i < n; i++) {
		int64_t t = v[i].mtime_ns / 1000000000;

		node = node_get(c, v[i].id);
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
			node_set_absent(c, node);
			node_put(c, node);
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
	evict(c, NULL);
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
	c->bs = XC_BS_DEFAULT;
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
	if (r < 0)
		goto fail;
	xprofs_info("cache: %s: %" PRIu64 " entries, %" PRIu64 " bytes, cap %" PRIu64, c->dir,
		    c->st.entries, c->st.bytes, c->max_bytes);
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
		struct cnode *n = c->buckets[i], *next;

		for (; n; n = next) {
			next = n->hnext;
			if (n->opens)
				xprofs_err("cache: freed with %u open entries (caller bug)", n->opens);
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
	if (!xc_bs_valid(bs))
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
	struct cnode *n;
	int r;

	if (keylen > XPROFS_CACHE_KEY_MAX)
		return -ENOENT;
	key_id(key, keylen, id);
	r = entry_path(c, id, path, sizeof(path));
	if (r < 0)
		return r;
	pthread_mutex_lock(&c->lock);
	r = unlink(path) < 0 ? -errno : 0;
	n = node_find(c, id);
	if (n) {
		node_set_absent(c, n);
		node_put(c, n);
	}
	pthread_mutex_unlock(&c->lock);
	return r;
}

/* ---- writer ------------------------------------------------------------------ */

static int open_tmp(struct xprofs_cache_writer *w)
{
	for (int attempt = 0; attempt < 2; attempt++) {
		int r = snprintf(w->tmp_path, sizeof(w->tmp_path), "%s/w.XXXXXX", w->c->tmpdir);

		if (r < 0 || (size_t)r >= sizeof(w->tmp_path))
			return -ENAMETOOLONG;
		w->fd = mkostemp(w->tmp_path, O_CLOEXEC);
		if (w->fd >= 0)
			return 0;
		/* Someone cleared the cache directory under us: recreate it. */
		if (errno != ENOENT || attempt)
			return -errno;
		r = xprofs_mkdir_p(w->c->tmpdir);
		if (r < 0)
			return r;
	}
	return -ENOENT;
}

int xprofs_cache_writer_new(struct xprofs_cache *c, const void *key, size_t keylen,
			    struct xprofs_cache_writer **out)
{
	uint8_t hdr[XC_HDR_FIXED];
	struct xprofs_cache_writer *w;
	int r;

	if (keylen > XPROFS_CACHE_KEY_MAX || (keylen && !key))
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->c = c;
	w->fd = w->spill_fd = -1;
	pthread_mutex_lock(&c->lock);
	w->bs = c->bs;
	w->accel = c->accel;
	pthread_mutex_unlock(&c->lock);
	r = pthread_mutex_init(&w->qlock, NULL);
	if (r) {
		free(w);
		return -r;
	}
	r = pthread_cond_init(&w->qcond, NULL);
	if (r) {
		pthread_mutex_destroy(&w->qlock);
		free(w);
		return -r;
	}
	key_id(key, keylen, w->id);
	w->cbuf_cap = LZ4_compressBound((int)w->bs);
	w->raw = w->slot[0] = malloc(w->bs);
	w->cbuf = malloc((size_t)w->cbuf_cap);
	if (!w->raw || !w->cbuf) {
		r = -ENOMEM;
		goto fail;
	}
	r = open_tmp(w);
	if (r < 0)
		goto fail;
	w->header_hash = xc_header_encode(hdr, key, (uint32_t)keylen, w->bs);
	w->index_hash = w->header_hash;
	r = xprofs_write_full(w->fd, hdr, sizeof(hdr));
	if (r == 0 && keylen)
		r = xprofs_write_full(w->fd, key, keylen);
	if (r < 0)
		goto fail;
	w->off = XC_HDR_FIXED + keylen;
	*out = w;
	return 0;
fail:
	xprofs_cache_writer_abort(w);
	return r;
}

static int spill_index(struct xprofs_cache_writer *w)
{
	int r;

	if (w->spill_fd < 0) {
		w->spill_fd = open(w->c->tmpdir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
		if (w->spill_fd < 0) {
			/* No O_TMPFILE on this filesystem: an unlinked named file. */
			char path[PATH_MAX];
			int n = snprintf(path, sizeof(path), "%s/s.XXXXXX", w->c->tmpdir);

			if (n < 0 || (size_t)n >= sizeof(path))
				return -ENAMETOOLONG;
			w->spill_fd = mkostemp(path, O_CLOEXEC);
			if (w->spill_fd < 0)
				return -errno;
			unlink(path);
		}
	}
	r = xprofs_write_full(w->spill_fd, w->idx, w->idx_n * XC_REC_SIZE);
	if (r < 0)
		return r;
	w->spilled += w->idx_n;
	w->idx_n = 0;
	return 0;
}

/*
 * Compresses @len raw bytes at @data (borrowed) into @cbuf (room for
 * w->cbuf_cap) and fills @rec but its offset; returns what to store (@cbuf,
 * or @data when lz4 does not shrink it).
 */
static const uint8_t *compress_block(struct xprofs_cache_writer *w, uint8_t *cbuf,
				     const uint8_t *data, size_t len, struct xc_rec *rec)
{
	int n = LZ4_compress_fast((const char *)data, (char *)cbuf, (int)len, w->cbuf_cap,
				  __atomic_load_n(&w->accel, __ATOMIC_RELAXED));

	*rec = (struct xc_rec){.raw = (uint32_t)len};
	if (n <= 0 || (size_t)n >= len) {
		rec->plain = true;
		rec->stored = (uint32_t)len;
		rec->sum = xc_hash64(data, len, 0);
		return data;
	}
	rec->stored = (uint32_t)n;
	rec->sum = xc_hash64(cbuf, (size_t)n, 0);
	return cbuf;
}

/* Appends the next block: @stored (borrowed) as described by @rec. Blocks must come in order. */
static int append_block(struct xprofs_cache_writer *w, const uint8_t *stored, struct xc_rec *rec)
{
	uint8_t *recb;
	int r;

	rec->off = w->off;
	/* Refuse an entry that could never fit instead of evicting everything. */
	if (w->off + rec->stored + (w->nblocks + 1) * XC_REC_SIZE + XC_FOOTER_SIZE > w->c->max_bytes)
		return -EFBIG;
	r = xprofs_write_full(w->fd, stored, rec->stored);
	if (r < 0)
		return r;
	recb = w->idx + w->idx_n * XC_REC_SIZE;
	xc_rec_encode(recb, rec);
	w->index_hash = xc_hash64(recb, XC_REC_SIZE, w->index_hash);
	w->idx_n++;
	w->off += rec->stored;
	w->nblocks++;
	if (w->idx_n == WRITER_IDX_RECS)
		return spill_index(w);
	return 0;
}

/* Compresses and appends one block of @len raw bytes at @data (borrowed), here. */
static int flush_block(struct xprofs_cache_writer *w, const uint8_t *data, size_t len)
{
	struct xc_rec rec;
	const uint8_t *stored = compress_block(w, w->cbuf, data, len, &rec);

	return append_block(w, stored, &rec);
}

int xprofs_cache_writer_set_acceleration(struct xprofs_cache_writer *w, int accel)
{
	if (accel < 1 || accel > XPROFS_CACHE_ACCEL_MAX)
		return -EINVAL;
	__atomic_store_n(&w->accel, accel, __ATOMIC_RELAXED);
	return 0;
}

/*
 * A compressor thread: claims the oldest unclaimed queued block, compresses
 * it into its own buffer (in parallel with the other thread and with the
 * producer), then waits for the block's turn (it is the queue's head) to
 * append it, so blocks land in order. Runs until told to stop with nothing
 * left to claim. After a failure the threads keep draining the queue
 * (dropping the blocks) so the producer never waits forever; the producer
 * sees w->err at its next block.
 */
static void *compressor(void *arg)
{
	struct xprofs_cache_writer *w = arg;
	uint8_t *cbuf = malloc((size_t)w->cbuf_cap);

	pthread_mutex_lock(&w->qlock);
	if (!cbuf && !w->err)
		w->err = -ENOMEM;
	for (;;) {
		const uint8_t *stored = NULL;
		struct xc_rec rec;
		unsigned i;
		int r = 0;

		while (w->claimed == w->queued && !w->stop)
			pthread_cond_wait(&w->qcond, &w->qlock);
		if (w->claimed == w->queued)
			break;
		i = (w->head + w->claimed) % WRITER_QUEUE;
		w->claimed++;
		if (!w->err) {
			pthread_mutex_unlock(&w->qlock);
			stored = compress_block(w, cbuf, w->slot[i], w->slot_len[i], &rec);
			pthread_mutex_lock(&w->qlock);
		}
		while (w->head != i)
			pthread_cond_wait(&w->qcond, &w->qlock);
		if (stored && !w->err) {
			pthread_mutex_unlock(&w->qlock);
			r = append_block(w, stored, &rec);
			pthread_mutex_lock(&w->qlock);
		}
		if (r < 0 && !w->err)
			w->err = r;
		w->head = (w->head + 1) % WRITER_QUEUE;
		w->queued--;
		w->claimed--;
		pthread_cond_broadcast(&w->qcond);
	}
	pthread_mutex_unlock(&w->qlock);
	free(cbuf);
	return NULL;
}

/*
 * Hands the full block w->raw to the compressors and points w->raw at a free
 * slot, waiting while WRITER_QUEUE - 1 blocks are queued. Without threads
 * (none started yet, or it could not be) it compresses here. 0 or the
 * writer's error.
 */
static int block_done(struct xprofs_cache_writer *w)
{
	unsigned fill;
	int r;

	if (!w->threaded) {
		/* the first block of an entry starts the threads: small entries never do */
		while (w->nthreads < WRITER_THREADS &&
		       pthread_create(&w->thread[w->nthreads], NULL, compressor, w) == 0)
			w->nthreads++;
		w->threaded = w->nthreads > 0;
		if (!w->threaded) {
			r = flush_block(w, w->raw, w->raw_len);
			w->raw_len = 0;
			return r;
		}
	}
	pthread_mutex_lock(&w->qlock);
	w->slot_len[(w->head + w->queued) % WRITER_QUEUE] = w->raw_len;
	w->queued++;
	pthread_cond_broadcast(&w->qcond);
	while (w->queued == WRITER_QUEUE && !w->err)
		pthread_cond_wait(&w->qcond, &w->qlock);
	r = w->err;
	fill = (w->head + w->queued) % WRITER_QUEUE;
	pthread_mutex_unlock(&w->qlock);
	w->raw_len = 0;
	if (r < 0)
		return r;
	if (!w->slot[fill]) {
		w->slot[fill] = malloc(w->bs);
		if (!w->slot[fill]) {
			pthread_mutex_lock(&w->qlock);
			if (!w->err)
				w->err = -ENOMEM;
			pthread_mutex_unlock(&w->qlock);
			return -ENOMEM;
		}
	}
	w->raw = w->slot[fill];
	return 0;
}

/* Stops the compressor threads once it has drained the queue; 0 or the writer's error. */
static int writer_join(struct xprofs_cache_writer *w)
{
	int r;

	if (!w->threaded)
		return w->err;
	pthread_mutex_lock(&w->qlock);
	w->stop = true;
	pthread_cond_broadcast(&w->qcond);
	pthread_mutex_unlock(&w->qlock);
	for (unsigned i = 0; i < w->nthreads; i++)
		pthread_join(w->thread[i], NULL);
	w->nthreads = 0;
	w->threaded = false;
	r = w->err;
	return r;
}

static int writer_error(struct xprofs_cache_writer *w)
{
	int r;

	if (!w->threaded)
		return w->err;
	pthread_mutex_lock(&w->qlock);
	r = w->err;
	pthread_mutex_unlock(&w->qlock);
	return r;
}

int xprofs_cache_writer_write(struct xprofs_cache_writer *w, const void *p, size_t n)
{
	const uint8_t *s = p;
	int r = writer_error(w);

	if (r < 0)
		return r;
	while (n) {
		size_t take = w->bs - w->raw_len;

		/*
		 * Always copied: the compressor may run after we return, and a
		 * memcpy costs far less than the lz4 pass it lets overlap.
		 */
		if (take > n)
			take = n;
		memcpy(w->raw + w->raw_len, s, take);
		w->raw_len += take;
		if (w->raw_len == w->bs) {
			r = block_done(w);
			if (r < 0) {
				if (!w->threaded)
					w->err = r;
				return r;
			}
		}
		s += take;
		n -= take;
		w->raw_total += take;
	}
	return 0;
}

static int sink_write(void *arg, const void *p, size_t n)
{
	return xprofs_cache_writer_write(arg, p, n);
}

struct xprofs_sink xprofs_cache_writer_sink(struct xprofs_cache_writer *w)
{
	return (struct xprofs_sink){.write = sink_write, .arg = w};
}

/* Appends the spilled and in-memory index records, then the footer. */
static int write_tail(struct xprofs_cache_writer *w)
{
	uint8_t footer[XC_FOOTER_SIZE];
	uint64_t index_off = w->off, done = 0;
	size_t chunk = w->bs - w->bs % XC_REC_SIZE;
	int r;

	while (done < w->spilled * XC_REC_SIZE) {
		uint64_t left = w->spilled * XC_REC_SIZE - done;
		size_t n = left < chunk ? (size_t)left : chunk;
		ssize_t got = xprofs_pread_full(w->spill_fd, w->raw, n, done);

		if (got < 0)
			return (int)got;
		if ((size_t)got != n)
			return -EIO;
		r = xprofs_write_full(w->fd, w->raw, n);
		if (r < 0)
			return r;
		done += n;
	}
	r = xprofs_write_full(w->fd, w->idx, w->idx_n * XC_REC_SIZE);
	if (r < 0)
		return r;
	w->off += w->nblocks * XC_REC_SIZE;
	xc_footer_encode(footer, w->raw_total, w->nblocks, index_off, w->index_hash,
			 w->header_hash);
	r = xprofs_write_full(w->fd, footer, sizeof(footer));
	if (r < 0)
		return r;
	w->off += XC_FOOTER_SIZE;
	return 0;
}

int xprofs_cache_writer_commit(struct xprofs_cache_writer *w)
{
	struct xprofs_cache *c = w->c;
	char path[PATH_MAX];
	bool rescan = false;
	struct cnode *n;
	int64_t now;
	int r = writer_join(w);

	if (r < 0)
		goto out;
	if (w->raw_len) {
		r = flush_block(w, w->raw, w->raw_len);
		if (r < 0)
			goto out;
		w->raw_len = 0;
	}
	r = write_tail(w);
	if (r < 0)
		goto out;
	r = close(w->fd) < 0 ? -errno : 0;
	w->fd = -1;
	if (r < 0)
		goto out;
	r = entry_path(c, w->id, path, sizeof(path));
	if (r < 0)
		goto out;
	pthread_mutex_lock(&c->lock);
	if (rename(w->tmp_path, path) < 0) {
		r = -errno;
		pthread_mutex_unlock(&c->lock);
		goto out;
	}
	w->tmp_path[0] = '\0';
	now = xprofs_now_ns() / 1000000000;
	n = node_get(c, w->id);
	if (n) {
		node_set_present(c, n, w->off);
		seen_now(c, n);
		n->touched = now;
		evict(c, n);
	} else {
		xprofs_warn("cache: out of memory, entry published but not tracked");
	}
	c->st.raw_bytes_written += w->raw_total;
	if (now - c->last_scan_s >= CACHE_RESCAN_EVERY_S && !c->rescan_running)
		rescan = c->rescan_running = true;
	pthread_mutex_unlock(&c->lock);
	if (rescan) {
		/* Learn what other processes sharing DIR added or evicted. */
		(void)xprofs_cache_rescan(c);
		pthread_mutex_lock(&c->lock);
		c->rescan_running = false;
		pthread_mutex_unlock(&c->lock);
	}
out:
	if (r < 0)
		xprofs_debug("cache: commit failed: %s", strerror(-r));
	xprofs_cache_writer_abort(w);
	return r;
}

void xprofs_cache_writer_abort(struct xprofs_cache_writer *w)
{
	if (!w)
		return;
	if (w->threaded) {
		/* drop what is queued: the entry is not wanted */
		pthread_mutex_lock(&w->qlock);
		if (!w->err)
			w->err = -ECANCELED;
		pthread_mutex_unlock(&w->qlock);
		(void)writer_join(w);
	}
	if (w->spill_fd >= 0)
		close(w->spill_fd);
	if (w->fd >= 0)
		close(w->fd);
	if (w->tmp_path[0])
		unlink(w->tmp_path);
	free(w->cbuf);
	for (unsigned i = 0; i < WRITER_QUEUE; i++)
		free(w->slot[i]);
	pthread_cond_destroy(&w->qcond);
	pthread_mutex_destroy(&w->qlock);
	free(w);
}

/* ---- entries ------------------------------------------------------------------ */

/* Persists recency for the next startup's scan; best effort. */
static void touch_mtime(int fd)
{
	struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_nsec = UTIME_NOW}};

	(void)futimens(fd, ts);
}

int xprofs_cache_open(struct xprofs_cache *c, const void *key, size_t keylen,
		      struct xprofs_cache_entry **out)
{
	struct xprofs_cache_entry *e = NULL;
	char path[PATH_MAX];
	struct xc_layout L;
	struct cnode *n;
	struct stat st;
	uint64_t id[2];
	bool touch = false;
	int64_t now;
	int fd = -1, r;

	if (keylen > XPROFS_CACHE_KEY_MAX || (keylen && !key))
		return -EINVAL;
	key_id(key, keylen, id);
	r = entry_path(c, id, path, sizeof(path));
	if (r < 0)
		return r;
	pthread_mutex_lock(&c->lock);
	n = node_get(c, id);
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
			node_set_absent(c, n); /* removed by someone else, or not ours */
			pthread_mutex_unlock(&c->lock);
			r = -ENOENT;
		}
		goto fail;
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto fail;
	}
	r = xc_entry_check(fd, key, keylen, &L);
	if (r == -ESTALE) {
		/* Another key's sound entry (a name collision): a miss; keep it. */
		pthread_mutex_lock(&c->lock);
		node_set_present(c, n, (uint64_t)st.st_size);
		pthread_mutex_unlock(&c->lock);
		r = -ENOENT;
		goto fail;
	}
	if (r == -EBADMSG) {
		pthread_mutex_lock(&c->lock);
		drop_corrupt(c, n, st.st_dev, st.st_ino);
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
	node_set_present(c, n, (uint64_t)st.st_size);
	seen_now(c, n);
	c->st.hits++;
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
	c->st.misses++;
	n->opens--;
	node_put(c, n);
	pthread_mutex_unlock(&c->lock);
	return r;
}

int xprofs_cache_peek_size(struct xprofs_cache *c, const void *key, size_t keylen, uint64_t *size)
{
	char path[PATH_MAX];
	struct xc_layout L;
	uint64_t id[2];
	int fd, r;

	if (keylen > XPROFS_CACHE_KEY_MAX || (keylen && !key))
		return -EINVAL;
	key_id(key, keylen, id);
	r = entry_path(c, id, path, sizeof(path));
	if (r < 0)
		return r;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOENT || errno == ELOOP ? -ENOENT : -errno;
	r = xc_entry_check(fd, key, keylen, &L);
	close(fd);
	if (r == -ESTALE || r == -EBADMSG)
		return -ENOENT;
	if (r == 0)
		*size = L.raw_size;
	return r;
}

uint64_t xprofs_cache_entry_size(const struct xprofs_cache_entry *e)
{
	return e->L.raw_size;
}

/* Decodes block @b into @dst; a corrupt block drops the entry and reads as -EIO. */
static ssize_t entry_block(struct xprofs_cache_entry *e, uint64_t b, uint8_t *dst)
{
	ssize_t r = xc_block_read(e->fd, &e->L, b, dst);

	if (r != -EBADMSG)
		return r;
	pthread_mutex_lock(&e->c->lock);
	if (!e->corrupt) {
		e->corrupt = true;
		drop_corrupt(e->c, e->node, e->dev, e->ino);
	}
	pthread_mutex_unlock(&e->c->lock);
	return -EIO;
}

ssize_t xprofs_cache_entry_pread(struct xprofs_cache_entry *e, void *buf, size_t n, uint64_t off)
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
		size_t in = (size_t)(pos % e->L.bs), blen = xc_block_raw_len(&e->L, b);
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
	return xprofs_cache_entry_pread(arg, buf, n, off);
}

struct xprofs_reader xprofs_cache_entry_reader(struct xprofs_cache_entry *e)
{
	return (struct xprofs_reader){
		.pread = reader_pread, .arg = e, .size = e->L.raw_size, .data = NULL};
}

void xprofs_cache_entry_close(struct xprofs_cache_entry *e)
{
	if (!e)
		return;
	pthread_mutex_lock(&e->c->lock);
	e->node->opens--;
	node_put(e->c, e->node);
	pthread_mutex_unlock(&e->c->lock);
	close(e->fd);
	free(e->cached);
	free(e->spare);
	pthread_mutex_destroy(&e->lock);
	free(e);
}
