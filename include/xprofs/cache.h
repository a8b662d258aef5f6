/*
 * xprofs/cache.h - a persistent, size-capped, LRU blob cache on local disk,
 * compressed with lz4. It holds decoded views (decode/) and GCS object blocks
 * (gcs/), so a second read is instant and survives a remount.
 *
 * Design: one file per entry under the cache directory, named by a hash of
 * the key. An entry is a header (magic, format version, key, uncompressed
 * size, block size, block count), the lz4-compressed blocks, and a block
 * index with per-block checksums, so pread() at any offset decompresses only
 * the blocks it needs. Entries are written to a temporary file and published
 * with rename(): readers never see a partial entry, and two mounts sharing a
 * directory at worst both write the same entry. Every entry is checked on
 * open and on each block read; a corrupt or foreign file is treated as a miss
 * and removed, never trusted.
 *
 * Keys are opaque strings (callers put the object's identity and version in
 * them, e.g. "view\0gs://b/o\0gen=123\0trace.json"); at most
 * XPROFS_CACHE_KEY_MAX bytes.
 *
 * Limits: the total size is kept under max_bytes by evicting least recently
 * used entries (recency = last open, persisted as the file's mtime), never
 * an open one; an entry bigger than max_bytes is refused with -EFBIG.
 * Vocabulary (shared with xprofs/store.h): a reader is opened, read with
 * pread, sized and closed (xprofs_cache_reader_*); a writer is made with
 * _new, written and ended by exactly one of commit or abort.
 * All functions are thread-safe; a writer belongs to one thread at a time,
 * an open entry may be read from several. The on-disk format, sharing and
 * clearing are described in docs/cache.md and cache/cache-internal.h.
 */
#ifndef XPROFS_CACHE_H
#define XPROFS_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "xprofs/util.h"

#define XPROFS_CACHE_KEY_MAX 4096

struct xprofs_cache;
struct xprofs_cache_writer;
struct xprofs_cache_reader;

struct xprofs_cache_stats {
	uint64_t hits, misses;      /* xprofs_cache_reader_open() results: lookups */
	uint64_t reopens;           /* xprofs_cache_reader_reopen()s that succeeded */
	uint64_t bytes;             /* compressed bytes on disk (approximate, as tracked) */
	uint64_t raw_bytes_written; /* uncompressed bytes committed since start */
	uint64_t entries;
	uint64_t evictions;
	uint64_t corrupt;         /* entries found corrupt and dropped */
	uint64_t space_evictions; /* evictions to keep min_free bytes free on the disk */
	uint64_t nospace;         /* writes refused or failed for disk space (ENOSPC) */
	uint64_t min_free;        /* the free space kept on the cache's filesystem */
};

/**
 * xprofs_cache_new() - open (creating it if needed) the cache in @dir.
 * @dir: borrowed; created with parents. @max_bytes: size cap (0 = 1 GiB).
 * @out: written on success; caller owns, free with xprofs_cache_free().
 */
int xprofs_cache_new(const char *dir, uint64_t max_bytes, struct xprofs_cache **out) XPROFS_WUR;
/**
 * xprofs_cache_set_block_size() - raw block size of entries written from now
 * on: a power of two from 4 KiB to 4 MiB (default 256 KiB). Smaller blocks
 * make small random reads cheaper, larger ones compress better. Existing
 * entries keep theirs (it is stored in each entry). 0 or -EINVAL.
 */
int xprofs_cache_set_block_size(struct xprofs_cache *c, uint32_t bs) XPROFS_WUR;
/*
 * lz4 acceleration (LZ4_compress_fast()): 1 compresses best; higher trades
 * ratio for speed. Measured on trace.json in 256 KiB blocks (docs/cache.md):
 * 1: ratio 4.4, 2: 4.3, 4: 4.1, 8: 3.9, 16: 3.3. Readers do not care: it is
 * not stored in the entry.
 */
#define XPROFS_CACHE_ACCEL_DEFAULT 1
#define XPROFS_CACHE_ACCEL_MAX 65537
/*
 * Not an lz4 acceleration: store the blocks as they are (checksummed, not
 * compressed), for data that is cheap to fetch again and read once, where
 * compressing costs more CPU than the transfer (gs:// blocks, docs/gcs.md).
 */
#define XPROFS_CACHE_ACCEL_STORE 0
/**
 * xprofs_cache_set_acceleration() - lz4 acceleration of writers started from
 * now on, 1..XPROFS_CACHE_ACCEL_MAX (default XPROFS_CACHE_ACCEL_DEFAULT).
 * 0 or -EINVAL.
 */
int xprofs_cache_set_acceleration(struct xprofs_cache *c, int accel) XPROFS_WUR;
/*
 * Free space: the cache keeps at least min_free bytes free on its
 * filesystem (statvfs f_bavail), evicting least recently used entries
 * before each block it writes; when it cannot (everything left is open), the
 * write fails with -ENOSPC and the caller serves the data uncached. A write
 * that meets ENOSPC anyway (another program filled the disk) evicts and
 * retries once. The default is 5% of the filesystem, at most 1 GiB.
 */
#define XPROFS_CACHE_MIN_FREE_DEFAULT UINT64_MAX
#define XPROFS_CACHE_MIN_FREE_PCT 5
#define XPROFS_CACHE_MIN_FREE_CAP (1ULL << 30)
/**
 * xprofs_cache_set_min_free() - keep @bytes free on the cache's filesystem
 * (0: none but what the disk has; XPROFS_CACHE_MIN_FREE_DEFAULT: 5% of the
 * filesystem, at most 1 GiB, which xprofs_cache_new() sets). Evicts at once
 * to reach it. 0 or -errno (statvfs failing for the default).
 */
int xprofs_cache_set_min_free(struct xprofs_cache *c, uint64_t bytes) XPROFS_WUR;
/**
 * xprofs_cache_free() - accepts NULL; returns NULL. Open entries must be
 * closed and writers ended first.
 */
struct xprofs_cache *xprofs_cache_free(struct xprofs_cache *c);
const char *xprofs_cache_dir(const struct xprofs_cache *c);

/**
 * xprofs_cache_writer_new() - start writing the entry for @key (@keylen bytes,
 * borrowed). Caller owns *@out and ends it with commit() or abort().
 */
int xprofs_cache_writer_new(struct xprofs_cache *c, const void *key, size_t keylen,
			    struct xprofs_cache_writer **out) XPROFS_WUR;
/**
 * xprofs_cache_writer_write() - append @n bytes (borrowed; copied before
 * return). Blocks are compressed on two writer-owned threads while the
 * caller goes on; memory stays bounded by four raw and three compressed
 * blocks whatever the entry size.
 * 0, -EFBIG when the entry would not fit under the cap, or another -errno;
 * errors are sticky, and one found by a compressor thread is returned by
 * the next write or by commit().
 */
int xprofs_cache_writer_write(struct xprofs_cache_writer *w, const void *p, size_t n) XPROFS_WUR;
/**
 * xprofs_cache_writer_set_acceleration() - lz4 acceleration for the blocks
 * of @w compressed from now on (1..XPROFS_CACHE_ACCEL_MAX, or
 * XPROFS_CACHE_ACCEL_STORE: not compressed); the cache's setting otherwise.
 * 0 or -EINVAL.
 */
int xprofs_cache_writer_set_acceleration(struct xprofs_cache_writer *w, int accel) XPROFS_WUR;
/**
 * xprofs_cache_writer_readable() - how many bytes of @w, from offset 0,
 * xprofs_cache_writer_pread() can return: every full block written (not the
 * one being filled). Call it on the writing thread.
 */
uint64_t xprofs_cache_writer_readable(const struct xprofs_cache_writer *w);
/**
 * xprofs_cache_writer_near_cap() - whether writing @n more bytes to @w could
 * make the entry pass the cache's cap (counting every block not yet stored
 * at its raw size), after which the writer would refuse it with -EFBIG and
 * drop blocks. Asked before a write, it lets the caller move the bytes
 * elsewhere while they are all still readable. Call it on the writing thread.
 */
bool xprofs_cache_writer_near_cap(struct xprofs_cache_writer *w, size_t n);
/**
 * xprofs_cache_writer_set_private() - @w will never be published: the cache's
 * cap stops applying to it (near_cap is false, no -EFBIG; the disk's
 * free-space floor still applies), so a view bigger than the cache can go on
 * compressed in its temporary file and be read back from there
 * (xprofs_cache_writer_seal(), then pread until the abort). Call it on the
 * writing thread.
 */
void xprofs_cache_writer_set_private(struct xprofs_cache_writer *w);
/**
 * xprofs_cache_writer_seal() - a private writer's end: its last bytes stored,
 * every byte written readable through xprofs_cache_writer_pread() from then
 * on (from any thread, also during the seal), until
 * xprofs_cache_writer_abort() frees it. No more writes. 0, or the writer's
 * error (-errno): then nothing more is readable.
 */
int xprofs_cache_writer_seal(struct xprofs_cache_writer *w) XPROFS_WUR;
/**
 * xprofs_cache_writer_tail() - the bytes written to @w that are past
 * xprofs_cache_writer_readable() (the block being filled): *@n bytes,
 * borrowed until the next write, commit or abort. Call it on the writing thread.
 */
const void *xprofs_cache_writer_tail(const struct xprofs_cache_writer *w, size_t *n);
/**
 * xprofs_cache_writer_pread() - read the entry while it is written: up to
 * @n bytes at @off into @buf (borrowed), from blocks already compressed
 * (read back from the temp file) or still queued (copied). Short at a block
 * end; 0 at or past xprofs_cache_writer_readable(). May run on other threads
 * while the writer's thread writes, but never during or after commit() or
 * abort(): the caller excludes those. Bytes read, or -errno (-EIO for a
 * block dropped after a write error or failing its checksum).
 */
ssize_t xprofs_cache_writer_pread(struct xprofs_cache_writer *w, void *buf, size_t n,
				  uint64_t off) XPROFS_WUR;
/** xprofs_cache_writer_as_sink() - a sink feeding @w (borrowed). */
struct xprofs_sink xprofs_cache_writer_as_sink(struct xprofs_cache_writer *w);
/** xprofs_cache_writer_commit() - publish atomically; consumes @w whatever the result. */
int xprofs_cache_writer_commit(struct xprofs_cache_writer *w);
/** xprofs_cache_writer_abort() - discard; consumes @w; accepts NULL. */
void xprofs_cache_writer_abort(struct xprofs_cache_writer *w);

/**
 * xprofs_cache_reader_open() - open the entry for @key. -ENOENT on a miss (also for
 * a corrupt entry, which is removed). Caller owns *@out; close with
 * xprofs_cache_reader_close().
 */
int xprofs_cache_reader_open(struct xprofs_cache *c, const void *key, size_t keylen,
			     struct xprofs_cache_reader **out) XPROFS_WUR;
/**
 * xprofs_cache_reader_reopen() - xprofs_cache_reader_open() of an entry the
 * caller knows is there (it just committed it, or waited for the render that
 * did): counted in reopens, not as a hit or miss, so hits and misses count
 * lookups only. Same ownership as open.
 */
int xprofs_cache_reader_reopen(struct xprofs_cache *c, const void *key, size_t keylen,
			       struct xprofs_cache_reader **out) XPROFS_WUR;
/**
 * xprofs_cache_peek_size() - the uncompressed size of the entry for @key
 * (@keylen bytes, borrowed) into *@size, without opening it for reading: not
 * counted as a hit or miss and not a use (recency is unchanged). The entry's
 * header and index are checked as by open(); a corrupt one reads as -ENOENT
 * (and is left for open() to drop). 0, -ENOENT, or another -errno.
 */
int xprofs_cache_peek_size(struct xprofs_cache *c, const void *key, size_t keylen,
			   uint64_t *size) XPROFS_WUR;
/** xprofs_cache_reader_size() - the uncompressed size. */
uint64_t xprofs_cache_reader_size(const struct xprofs_cache_reader *e);
/** xprofs_cache_reader_pread() - bytes read (short only at the end), or -EIO on a corrupt block. */
ssize_t xprofs_cache_reader_pread(struct xprofs_cache_reader *e, void *buf, size_t n, uint64_t off);
/** xprofs_cache_reader_as_reader() - a reader over @e (borrowed). */
struct xprofs_reader xprofs_cache_reader_as_reader(struct xprofs_cache_reader *e);
/** xprofs_cache_reader_close() - accepts NULL. */
void xprofs_cache_reader_close(struct xprofs_cache_reader *e);

/*
 * The portable form of an entry (cache/portable.c, docs/cache.md): a header
 * with the full key and a checksum of the payload, then the entry file as it
 * is (already compressed). It is how an entry is copied to another machine
 * (the mount's shared view cache in a bucket).
 */
/**
 * xprofs_cache_export() - write the portable form of the entry for @key
 * (@keylen bytes, borrowed) at offset 0 of @out (borrowed; a file the caller
 * owns), its length into *@len. Not a use of the entry (no hit, no recency).
 * 0, -ENOENT (no sound entry), or another -errno.
 */
int xprofs_cache_export(struct xprofs_cache *c, const void *key, size_t keylen, int out,
			uint64_t *len) XPROFS_WUR;
/**
 * xprofs_cache_import() - check the portable copy in @in (borrowed; @len
 * bytes from offset 0) against @key and publish it as the local entry for
 * @key. Nothing is published unless the header, key, payload checksum, the
 * entry's own structure and every block check out. 0; -ESTALE: a sound copy
 * of another key; -EBADMSG: damaged; -EFBIG: over the cap; -ENOSPC; -errno.
 */
int xprofs_cache_import(struct xprofs_cache *c, const void *key, size_t keylen, int in,
			uint64_t len) XPROFS_WUR;

/** xprofs_cache_remove() - drop the entry for @key if present; 0 or -ENOENT. */
int xprofs_cache_remove(struct xprofs_cache *c, const void *key, size_t keylen);
/**
 * xprofs_cache_rescan() - re-read the directory: learn entries that other
 * processes sharing it wrote or removed, then evict down to the cap. Commits
 * do this by themselves at most every 5 minutes. 0 or -errno.
 */
int xprofs_cache_rescan(struct xprofs_cache *c);
void xprofs_cache_get_stats(struct xprofs_cache *c, struct xprofs_cache_stats *st);

#endif
