/*
 * cache-internal.h - what the cache's files share: the on-disk entry format
 * (encoded and validated by format.c), and the cache object with its entry
 * table (table.c) that writers (writer.c) and open entries (reader.c) update.
 * Nothing here is part of the public API.
 *
 * Entry file, all integers little-endian:
 *
 *   header   32 bytes  magic "XPFCACHE" | u32 version (1) | u32 key length |
 *                      u32 block size | u32 flags (0) | u64 header hash
 *   key      key length bytes (at most XPROFS_CACHE_KEY_MAX)
 *   blocks   block 0, block 1, ... back to back; each is the lz4 block
 *            (LZ4_compress_fast, any acceleration) of block-size raw bytes (the last one may
 *            be shorter), or the raw bytes themselves when lz4 does not
 *            shrink them
 *   index    one 24-byte record per block: u64 file offset | u32 stored
 *            size | u32 raw size, bit 31 set = stored uncompressed |
 *            u64 checksum of the stored bytes
 *   footer   48 bytes  u64 raw size | u64 block count | u64 index offset |
 *                      u64 index hash | u64 footer hash | magic "XPFC_END"
 *
 * Hashes are xxh64 (implemented here: liblz4 1.9.4 does not export its
 * xxhash). header hash = xxh64(header[0..24) ++ key, seed 0); index hash =
 * fold h = xxh64(record, 24, h) over the records starting from the header
 * hash; footer hash = xxh64(footer[0..32), seed = header hash), which binds
 * the footer to the header. The footer sits at the end so a writer streams
 * blocks without knowing the final size, and never seeks back.
 *
 * Validation on open checks every field (magic, version, key, block size
 * range, footer position, block count against raw size, and each index
 * record: blocks contiguous from the end of the key to the index, sizes
 * within lz4's bound); each block read re-checks its record and its checksum.
 */
#ifndef XPROFS_CACHE_INTERNAL_H
#define XPROFS_CACHE_INTERNAL_H

#include <endian.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <pthread.h>
#include <sys/types.h>

#include "xprofs/cache.h"

/*
 * Little-endian fields of the on-disk formats (format.c, portable.c);
 * memcpy + le*toh compile to single loads, so the hash runs at memory speed.
 */
static inline void cache_put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline void cache_put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint32_t cache_get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static inline uint64_t cache_get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

#define CACHE_MAGIC_HEAD "XPFCACHE"
#define CACHE_MAGIC_FOOT "XPFC_END"
#define CACHE_MAGIC_LEN 8
#define CACHE_VERSION 1u
#define CACHE_HDR_FIXED 32u
#define CACHE_REC_SIZE 24u
#define CACHE_FOOTER_SIZE 48u
#define CACHE_BS_MIN (4u << 10)
#define CACHE_BS_MAX (4u << 20)
#define CACHE_BS_DEFAULT (256u << 10)
#define CACHE_RAW_FLAG 0x80000000u

/* The portable form of an entry (portable.c): header, key, the entry file. */
#define CACHE_PORT_MAGIC "XPFSHARE"
#define CACHE_PORT_VERSION 1u
#define CACHE_PORT_HDR 40u          /* magic, version, key length, payload length/hash, hash */
#define CACHE_PORT_PIECE (1u << 20) /* the payload hash chains over pieces this big */

/* One index record, decoded. */
struct cache_rec {
	uint64_t off;
	uint32_t stored;
	uint32_t raw;
	bool plain; /* stored uncompressed */
	uint64_t sum;
};

/* What open-time validation proved about an entry file. */
struct cache_layout {
	uint64_t file_size;
	uint64_t hdr_len; /* header + key: offset of block 0 */
	uint64_t raw_size;
	uint64_t nblocks;
	uint64_t index_off;
	uint64_t header_hash;
	uint32_t bs;
};

uint64_t cache_hash64(const void *p, size_t n, uint64_t seed);

/** cache_bs_valid() - a block size a writer may use and a reader accepts. */
bool cache_bs_valid(uint32_t bs);
/** cache_block_raw_len() - raw length of block @i (< nblocks) of @L. */
uint32_t cache_block_raw_len(const struct cache_layout *L, uint64_t i);

/** cache_header_encode() - fill @out with the fixed header for @key (borrowed); returns its hash. */
uint64_t cache_header_encode(uint8_t out[CACHE_HDR_FIXED], const void *key, uint32_t keylen,
			     uint32_t bs);
void cache_rec_encode(uint8_t out[CACHE_REC_SIZE], const struct cache_rec *r);
void cache_footer_encode(uint8_t out[CACHE_FOOTER_SIZE], uint64_t raw_size, uint64_t nblocks,
			 uint64_t index_off, uint64_t index_hash, uint64_t header_hash);

/**
 * cache_entry_check() - validate the entry file @fd (borrowed) for @key
 * (borrowed). 0 and *@L filled; -ESTALE when the file is a valid entry of a
 * different key (a hash collision: a plain miss); -EBADMSG when it is not a
 * valid entry; another -errno on I/O failure.
 */
int cache_entry_check(int fd, const void *key, size_t keylen, struct cache_layout *L);

/**
 * cache_block_read() - read block @i of the entry @fd into @dst (room for
 * cache_block_raw_len() bytes), verifying its record and checksum. Returns the
 * raw length, -EBADMSG for a corrupt block, or another -errno.
 */
ssize_t cache_block_read(int fd, const struct cache_layout *L, uint64_t i, uint8_t *dst);

/**
 * cache_block_read_rec() - read the block that the encoded record @recb
 * describes (a writer's own record, for reads of an entry being written) from
 * @fd into @dst (room for @bs bytes), verifying its checksum. As
 * cache_block_read().
 */
ssize_t cache_block_read_rec(int fd, const uint8_t recb[CACHE_REC_SIZE], uint32_t bs, uint8_t *dst);

/** cache_lz4_errno() - the one mapping of lz4 results (<= 0 = failure) to -errno. */
int cache_lz4_errno(int r);

/* ---- the cache object and its entry table (table.c) ---------------------- */

#define CACHE_RESCAN_EVERY_S 300 /* commits re-read DIR at most this often */

/* One known entry file. Freed only when neither present nor open. */
struct cache_node {
	uint64_t id[2];
	uint64_t size;   /* bytes on disk while present */
	int64_t touched; /* s; last mtime we know of for the file */
	unsigned opens;  /* open entries pointing here */
	bool present;    /* file believed to exist; only then on the LRU list */
	uint64_t seen;   /* scan generation that last listed the file */
	struct cache_node *hnext;
	struct cache_node *prev, *next; /* LRU: c->mru is the most recent */
};

struct xprofs_cache {
	char *dir;
	char *tmpdir;
	uint64_t max_bytes;
	uint64_t min_free; /* protected by lock; bytes kept free on the filesystem */
	pthread_mutex_t lock;
	uint32_t bs;                  /* protected by lock */
	int accel;                    /* protected by lock; lz4 acceleration of new writers */
	struct cache_node **buckets;  /* protected by lock */
	size_t nbuckets, nnodes;      /* protected by lock */
	struct cache_node *mru, *lru; /* protected by lock */
	struct xprofs_cache_stats st; /* protected by lock */
	uint64_t scan_gen;            /* protected by lock */
	int64_t last_scan_s;          /* protected by lock */
	bool rescan_running;          /* protected by lock */
};

/*
 * Locking: one mutex per cache, c->lock, guards the table, the LRU list and
 * the stats, and is also held across the publishing rename() and eviction
 * unlink()s so a commit and an eviction of one name cannot interleave.
 * Lock order: c->lock is innermost. Writers take it only while not holding
 * their w->qlock; open entries take it without holding their e->lock.
 * The cache_node_*() calls, cache_evict() and cache_drop_corrupt() need
 * c->lock held.
 */

/**
 * cache_key_path() - the id of @key (borrowed) into @id and its entry file
 * name into @path; the one check of a caller's key: -EINVAL when it is
 * longer than XPROFS_CACHE_KEY_MAX or NULL with a length.
 */
int cache_key_path(const struct xprofs_cache *c, const void *key, size_t keylen, uint64_t id[2],
		   char *path, size_t n);
/** cache_entry_path() - the entry file name of @id into @out (@n bytes); 0 or -ENAMETOOLONG. */
int cache_entry_path(const struct xprofs_cache *c, const uint64_t id[2], char *out, size_t n);
/** cache_key_id() - the 128-bit id (file name) of @key. */
void cache_key_id(const void *key, size_t keylen, uint64_t id[2]);
/** cache_node_get() - finds or adds the node of @id; NULL only when out of memory. */
struct cache_node *cache_node_get(struct xprofs_cache *c, const uint64_t id[2]);
/** cache_node_set_present() - marks @n present with @size bytes and most recently used. */
void cache_node_set_present(struct xprofs_cache *c, struct cache_node *n, uint64_t size);
void cache_node_set_absent(struct xprofs_cache *c, struct cache_node *n);
/** cache_seen_now() - @n exists for the next scan merge, whatever its listing says. */
void cache_seen_now(struct xprofs_cache *c, struct cache_node *n);
/** cache_node_put() - frees @n once it is neither present nor open. */
void cache_node_put(struct xprofs_cache *c, struct cache_node *n);
/** cache_evict() - evicts LRU entries until under the cap; spares @keep and open ones. */
void cache_evict(struct xprofs_cache *c, const struct cache_node *keep);
/**
 * cache_make_room() - evicts LRU entries (never open ones) until the cache's
 * filesystem has @need bytes free above c->min_free. 0, or -ENOSPC.
 */
int cache_make_room(struct xprofs_cache *c, uint64_t need);
/**
 * cache_evict_bytes() - after a write met ENOSPC: evicts LRU entries (never
 * open ones) of at least @bytes in all; returns the bytes evicted.
 */
uint64_t cache_evict_bytes(struct xprofs_cache *c, uint64_t bytes);
/** cache_drop_corrupt() - unlinks @n's file if it is still the inode (@dev, @ino) we judged. */
void cache_drop_corrupt(struct xprofs_cache *c, struct cache_node *n, dev_t dev, ino_t ino);

#endif
