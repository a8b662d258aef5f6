/*
 * cache-internal.h - the on-disk entry format shared by cache.c (directory,
 * LRU, writers, open entries) and format.c (encoding, validation, block
 * reads). Nothing here is part of the public API.
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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define XC_MAGIC_HEAD "XPFCACHE"
#define XC_MAGIC_FOOT "XPFC_END"
#define XC_MAGIC_LEN 8
#define XC_VERSION 1u
#define XC_HDR_FIXED 32u
#define XC_REC_SIZE 24u
#define XC_FOOTER_SIZE 48u
#define XC_BS_MIN (4u << 10)
#define XC_BS_MAX (4u << 20)
#define XC_BS_DEFAULT (256u << 10)
#define XC_RAW_FLAG 0x80000000u

/* One index record, decoded. */
struct xc_rec {
	uint64_t off;
	uint32_t stored;
	uint32_t raw;
	bool plain; /* stored uncompressed */
	uint64_t sum;
};

/* What open-time validation proved about an entry file. */
struct xc_layout {
	uint64_t file_size;
	uint64_t hdr_len; /* header + key: offset of block 0 */
	uint64_t raw_size;
	uint64_t nblocks;
	uint64_t index_off;
	uint64_t header_hash;
	uint32_t bs;
};

uint64_t xc_hash64(const void *p, size_t n, uint64_t seed);

/** xc_bs_valid() - a block size a writer may use and a reader accepts. */
bool xc_bs_valid(uint32_t bs);
/** xc_block_raw_len() - raw length of block @i (< nblocks) of @L. */
uint32_t xc_block_raw_len(const struct xc_layout *L, uint64_t i);

/** xc_header_encode() - fill @out with the fixed header for @key (borrowed); returns its hash. */
uint64_t xc_header_encode(uint8_t out[XC_HDR_FIXED], const void *key, uint32_t keylen, uint32_t bs);
void xc_rec_encode(uint8_t out[XC_REC_SIZE], const struct xc_rec *r);
void xc_footer_encode(uint8_t out[XC_FOOTER_SIZE], uint64_t raw_size, uint64_t nblocks,
		      uint64_t index_off, uint64_t index_hash, uint64_t header_hash);

/**
 * xc_entry_check() - validate the entry file @fd (borrowed) for @key
 * (borrowed). 0 and *@L filled; -ESTALE when the file is a valid entry of a
 * different key (a hash collision: a plain miss); -EBADMSG when it is not a
 * valid entry; another -errno on I/O failure.
 */
int xc_entry_check(int fd, const void *key, size_t keylen, struct xc_layout *L);

/**
 * xc_block_read() - read block @i of the entry @fd into @dst (room for
 * xc_block_raw_len() bytes), verifying its record and checksum. Returns the
 * raw length, -EBADMSG for a corrupt block, or another -errno.
 */
ssize_t xc_block_read(int fd, const struct xc_layout *L, uint64_t i, uint8_t *dst);

/** xc_lz4_errno() - the one mapping of lz4 results (<= 0 = failure) to -errno. */
int xc_lz4_errno(int r);

#endif
