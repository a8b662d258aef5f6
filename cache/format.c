/*
 * format.c - encoding and validation of cache entry files (the format is
 * described in cache-internal.h). Everything read from an entry file is
 * treated as hostile: every length, offset and count is bounds-checked
 * before use, with overflow-free arithmetic, and memory use is bounded by
 * the block size and a fixed index chunk whatever the file claims.
 *
 * Stateless and thread-safe: it only pread()s the fd it is given.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <lz4.h>

#include "xprofs/cache.h"
#include "cache-internal.h"

/* Index records validated per read() on open: bounds open-time memory. */
#define CACHE_CHECK_CHUNK 2048u

/* The little-endian helpers are cache_put32() & co. in cache-internal.h. */

/* ---- xxh64 --------------------------------------------------------------- */

#define P1 0x9E3779B185EBCA87ULL
#define P2 0xC2B2AE3D27D4EB4FULL
#define P3 0x165667B19E3779F9ULL
#define P4 0x85EBCA77C2B2AE63ULL
#define P5 0x27D4EB2F165667C5ULL

static uint64_t rotl64(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static uint64_t xxh_round(uint64_t acc, uint64_t in)
{
	acc += in * P2;
	acc = rotl64(acc, 31);
	return acc * P1;
}

static uint64_t xxh_merge(uint64_t acc, uint64_t v)
{
	acc ^= xxh_round(0, v);
	return acc * P1 + P4;
}

uint64_t cache_hash64(const void *p, size_t n, uint64_t seed)
{
	const uint8_t *s = p;
	const uint8_t *end = n ? s + n : s; /* no offset on NULL (n == 0) */
	uint64_t h;

	if (n >= 32) {
		uint64_t v1 = seed + P1 + P2, v2 = seed + P2, v3 = seed, v4 = seed - P1;

		do {
			v1 = xxh_round(v1, cache_get64(s));
			v2 = xxh_round(v2, cache_get64(s + 8));
			v3 = xxh_round(v3, cache_get64(s + 16));
			v4 = xxh_round(v4, cache_get64(s + 24));
			s += 32;
		} while ((size_t)(end - s) >= 32);
		h = rotl64(v1, 1) + rotl64(v2, 7) + rotl64(v3, 12) + rotl64(v4, 18);
		h = xxh_merge(h, v1);
		h = xxh_merge(h, v2);
		h = xxh_merge(h, v3);
		h = xxh_merge(h, v4);
	} else {
		h = seed + P5;
	}
	h += (uint64_t)n;
	while ((size_t)(end - s) >= 8) {
		h ^= xxh_round(0, cache_get64(s));
		h = rotl64(h, 27) * P1 + P4;
		s += 8;
	}
	if ((size_t)(end - s) >= 4) {
		h ^= (uint64_t)cache_get32(s) * P1;
		h = rotl64(h, 23) * P2 + P3;
		s += 4;
	}
	while (s < end) {
		h ^= (*s++) * P5;
		h = rotl64(h, 11) * P1;
	}
	h ^= h >> 33;
	h *= P2;
	h ^= h >> 29;
	h *= P3;
	h ^= h >> 32;
	return h;
}

/* ---- encoding ------------------------------------------------------------ */

bool cache_bs_valid(uint32_t bs)
{
	return bs >= CACHE_BS_MIN && bs <= CACHE_BS_MAX && (bs & (bs - 1)) == 0;
}

uint32_t cache_block_raw_len(const struct cache_layout *L, uint64_t i)
{
	if (i + 1 < L->nblocks)
		return L->bs;
	return (uint32_t)(L->raw_size - (L->nblocks - 1) * (uint64_t)L->bs);
}

uint64_t cache_header_encode(uint8_t out[CACHE_HDR_FIXED], const void *key, uint32_t keylen,
			     uint32_t bs)
{
	uint64_t h;

	memcpy(out, CACHE_MAGIC_HEAD, CACHE_MAGIC_LEN);
	cache_put32(out + 8, CACHE_VERSION);
	cache_put32(out + 12, keylen);
	cache_put32(out + 16, bs);
	cache_put32(out + 20, 0);
	h = cache_hash64(key, keylen, cache_hash64(out, 24, 0));
	cache_put64(out + 24, h);
	return h;
}

void cache_rec_encode(uint8_t out[CACHE_REC_SIZE], const struct cache_rec *r)
{
	cache_put64(out, r->off);
	cache_put32(out + 8, r->stored);
	cache_put32(out + 12, r->raw | (r->plain ? CACHE_RAW_FLAG : 0));
	cache_put64(out + 16, r->sum);
}

static void rec_decode(const uint8_t in[CACHE_REC_SIZE], struct cache_rec *r)
{
	uint32_t raw = cache_get32(in + 12);

	r->off = cache_get64(in);
	r->stored = cache_get32(in + 8);
	r->plain = (raw & CACHE_RAW_FLAG) != 0;
	r->raw = raw & ~CACHE_RAW_FLAG;
	r->sum = cache_get64(in + 16);
}

void cache_footer_encode(uint8_t out[CACHE_FOOTER_SIZE], uint64_t raw_size, uint64_t nblocks,
			 uint64_t index_off, uint64_t index_hash, uint64_t header_hash)
{
	cache_put64(out, raw_size);
	cache_put64(out + 8, nblocks);
	cache_put64(out + 16, index_off);
	cache_put64(out + 24, index_hash);
	cache_put64(out + 32, cache_hash64(out, 32, header_hash));
	memcpy(out + 40, CACHE_MAGIC_FOOT, CACHE_MAGIC_LEN);
}

/* ---- validation ---------------------------------------------------------- */

/* Reads exactly @n bytes or says why not: a short file is a corrupt entry. */
static int read_exact(int fd, void *buf, size_t n, uint64_t off)
{
	ssize_t r = xprofs_pread_full(fd, buf, n, off);

	if (r < 0)
		return (int)r;
	return (size_t)r == n ? 0 : -EBADMSG;
}

/*
 * Checks record @i against the layout. Contiguity is proven once on open
 * (check_index); reads re-check these bounds because the file may have been
 * changed under an open fd.
 */
static int rec_check(const struct cache_layout *L, uint64_t i, const struct cache_rec *r)
{
	if (r->raw != cache_block_raw_len(L, i) || r->stored == 0)
		return -EBADMSG;
	if (r->plain ? r->stored != r->raw : r->stored > (uint32_t)LZ4_compressBound((int)L->bs))
		return -EBADMSG;
	if (r->off < L->hdr_len || r->off > L->index_off || r->stored > L->index_off - r->off)
		return -EBADMSG;
	return 0;
}

static int check_header(int fd, const void *key, size_t keylen, struct cache_layout *L)
{
	uint8_t hdr[CACHE_HDR_FIXED];
	uint8_t *fkey = NULL;
	uint32_t fkeylen;
	int r;

	r = read_exact(fd, hdr, sizeof(hdr), 0);
	if (r < 0)
		goto out;
	r = -EBADMSG;
	if (memcmp(hdr, CACHE_MAGIC_HEAD, CACHE_MAGIC_LEN) != 0 ||
	    cache_get32(hdr + 8) != CACHE_VERSION || cache_get32(hdr + 20) != 0)
		goto out;
	fkeylen = cache_get32(hdr + 12);
	L->bs = cache_get32(hdr + 16);
	if (fkeylen > XPROFS_CACHE_KEY_MAX || !cache_bs_valid(L->bs))
		goto out;
	L->hdr_len = CACHE_HDR_FIXED + (uint64_t)fkeylen;
	if (L->file_size < L->hdr_len + CACHE_FOOTER_SIZE)
		goto out;
	fkey = malloc(fkeylen ? fkeylen : 1);
	if (!fkey) {
		r = -ENOMEM;
		goto out;
	}
	r = read_exact(fd, fkey, fkeylen, CACHE_HDR_FIXED);
	if (r < 0)
		goto out;
	L->header_hash = cache_hash64(fkey, fkeylen, cache_hash64(hdr, 24, 0));
	if (L->header_hash != cache_get64(hdr + 24)) {
		r = -EBADMSG;
		goto out;
	}
	/* A sound entry of another key: a name-hash collision, not corruption. */
	r = (fkeylen == keylen && (keylen == 0 || memcmp(fkey, key, keylen) == 0)) ? 0 : -ESTALE;
out:
	free(fkey);
	return r;
}

static int check_footer(int fd, struct cache_layout *L, uint64_t *index_hash)
{
	uint8_t f[CACHE_FOOTER_SIZE];
	uint64_t room, full;
	int r;

	r = read_exact(fd, f, sizeof(f), L->file_size - CACHE_FOOTER_SIZE);
	if (r < 0)
		return r;
	if (memcmp(f + 40, CACHE_MAGIC_FOOT, CACHE_MAGIC_LEN) != 0 ||
	    cache_get64(f + 32) != cache_hash64(f, 32, L->header_hash))
		return -EBADMSG;
	L->raw_size = cache_get64(f);
	L->nblocks = cache_get64(f + 8);
	L->index_off = cache_get64(f + 16);
	*index_hash = cache_get64(f + 24);
	/* Everything between the key and the footer is blocks then index. */
	room = L->file_size - CACHE_FOOTER_SIZE - L->hdr_len;
	if (L->nblocks > room / CACHE_REC_SIZE)
		return -EBADMSG;
	if (L->index_off != L->file_size - CACHE_FOOTER_SIZE - L->nblocks * CACHE_REC_SIZE)
		return -EBADMSG;
	if (L->raw_size > (uint64_t)INT64_MAX)
		return -EBADMSG;
	full = L->raw_size / L->bs;
	if (L->nblocks != full + (L->raw_size % L->bs ? 1 : 0))
		return -EBADMSG;
	return 0;
}

/* Proves the index: hash chain, and blocks tiling [hdr_len, index_off) exactly. */
static int check_index(int fd, struct cache_layout *L, uint64_t want_hash)
{
	uint8_t *chunk;
	uint64_t h = L->header_hash, expect = L->hdr_len, i = 0;
	int r = 0;

	chunk = malloc((size_t)CACHE_CHECK_CHUNK * CACHE_REC_SIZE);
	if (!chunk)
		return -ENOMEM;
	while (i < L->nblocks) {
		uint64_t n = L->nblocks - i;

		if (n > CACHE_CHECK_CHUNK)
			n = CACHE_CHECK_CHUNK;
		r = read_exact(fd, chunk, (size_t)n * CACHE_REC_SIZE,
			       L->index_off + i * CACHE_REC_SIZE);
		if (r < 0)
			goto out;
		for (uint64_t k = 0; k < n; k++, i++) {
			struct cache_rec rec;

			rec_decode(chunk + k * CACHE_REC_SIZE, &rec);
			h = cache_hash64(chunk + k * CACHE_REC_SIZE, CACHE_REC_SIZE, h);
			r = rec_check(L, i, &rec);
			if (r < 0)
				goto out;
			if (rec.off != expect) {
				r = -EBADMSG;
				goto out;
			}
			expect += rec.stored;
		}
	}
	r = (expect == L->index_off && h == want_hash) ? 0 : -EBADMSG;
out:
	free(chunk);
	return r;
}

int cache_entry_check(int fd, const void *key, size_t keylen, struct cache_layout *L)
{
	struct cache_layout l = {0};
	uint64_t index_hash;
	struct stat st;
	int r;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_size < (off_t)(CACHE_HDR_FIXED + CACHE_FOOTER_SIZE))
		return -EBADMSG;
	l.file_size = (uint64_t)st.st_size;
	r = check_header(fd, key, keylen, &l);
	if (r < 0)
		return r;
	r = check_footer(fd, &l, &index_hash);
	if (r < 0)
		return r;
	r = check_index(fd, &l, index_hash);
	if (r < 0)
		return r;
	*L = l;
	return 0;
}

int cache_lz4_errno(int r)
{
	/* lz4 reports malformed input and too-small output alike with r <= 0. */
	return r > 0 ? 0 : -EBADMSG;
}

/* Reads the block @rec describes (already checked) into @dst and verifies it. */
static ssize_t read_stored(int fd, const struct cache_rec *rec, uint8_t *dst)
{
	uint8_t *src = NULL;
	ssize_t r;
	int d;

	if (rec->plain) {
		r = read_exact(fd, dst, rec->raw, rec->off);
		if (r < 0)
			return r;
		return cache_hash64(dst, rec->raw, 0) == rec->sum ? (ssize_t)rec->raw : -EBADMSG;
	}
	src = malloc(rec->stored);
	if (!src)
		return -ENOMEM;
	r = read_exact(fd, src, rec->stored, rec->off);
	if (r < 0)
		goto out;
	if (cache_hash64(src, rec->stored, 0) != rec->sum) {
		r = -EBADMSG;
		goto out;
	}
	d = LZ4_decompress_safe((const char *)src, (char *)dst, (int)rec->stored, (int)rec->raw);
	if (d != (int)rec->raw)
		r = d <= 0 ? cache_lz4_errno(d) : -EBADMSG;
	else
		r = (ssize_t)rec->raw;
out:
	free(src);
	return r;
}

ssize_t cache_block_read(int fd, const struct cache_layout *L, uint64_t i, uint8_t *dst)
{
	uint8_t recb[CACHE_REC_SIZE];
	struct cache_rec rec;
	ssize_t r;

	if (i >= L->nblocks)
		return -EINVAL;
	r = read_exact(fd, recb, sizeof(recb), L->index_off + i * CACHE_REC_SIZE);
	if (r < 0)
		return r;
	rec_decode(recb, &rec);
	r = rec_check(L, i, &rec);
	if (r < 0)
		return r;
	return read_stored(fd, &rec, dst);
}

ssize_t cache_block_read_rec(int fd, const uint8_t recb[CACHE_REC_SIZE], uint32_t bs, uint8_t *dst)
{
	struct cache_rec rec;

	rec_decode(recb, &rec);
	if (rec.raw > bs ||
	    (rec.plain ? rec.stored != rec.raw : rec.stored > (uint32_t)LZ4_compressBound((int)bs)))
		return -EBADMSG;
	return read_stored(fd, &rec, dst);
}
