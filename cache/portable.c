/*
 * portable.c - the portable form of a cache entry, for copies that leave this
 * machine (the mount's shared view cache in a bucket, docs/fs.md): export
 * writes one, import checks one and publishes it as a local entry.
 *
 * Format (all integers little-endian):
 *
 *   header   40 bytes  magic "XPFSHARE" | u32 version (1) | u32 key length |
 *                      u64 payload length | u64 payload hash | u64 header hash
 *   key      key length bytes (at most XPROFS_CACHE_KEY_MAX)
 *   payload  the entry file itself (cache-internal.h), byte for byte
 *
 * payload hash = xxh64 chained over the payload in CACHE_PORT_PIECE pieces from
 * seed 0 (h = xxh64(piece, h)); header hash = xxh64(header[0..32) ++ key).
 * The payload already carries the key and its own hashes; the outer header
 * lets an importer reject a foreign or damaged copy before copying it, and
 * the payload hash covers every byte end to end (an entry's own block
 * checksums are otherwise only checked when a block is read).
 *
 * Design: the entry is shipped as it is (already lz4-compressed), so a
 * fetched view costs a copy, not a recompression. An import never trusts
 * the copy: header, key, length and payload hash, then the entry's own
 * validation (cache_entry_check()) and every block's checksum and lz4
 * decode, all before the rename() that publishes it. Anything wrong is
 * -EBADMSG (damaged) or -ESTALE (a sound copy of another key): the caller
 * renders instead.
 *
 * Limits: one CACHE_PORT_PIECE buffer and one block buffer per call; a payload
 * bigger than the cache's cap is refused (-EFBIG).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache-internal.h"

/* The header hash: the fixed fields before it, then the key. */
static uint64_t header_hash(const uint8_t *hdr, const void *key, size_t keylen)
{
	return cache_hash64(key, keylen, cache_hash64(hdr, 32, 0));
}

/*
 * copy_hashed() - copy @len bytes from @in at @in_off to @out at @out_off
 * (out < 0: only hash them), chaining the payload hash into *@h. 0, -EBADMSG
 * when @in ends early, or -errno.
 */
static int copy_hashed(int in, uint64_t in_off, int out, uint64_t out_off, uint64_t len,
		       uint8_t *buf, uint64_t *h)
{
	while (len > 0) {
		size_t n = len < CACHE_PORT_PIECE ? (size_t)len : CACHE_PORT_PIECE;
		ssize_t got = xprofs_pread_full(in, buf, n, in_off);
		ssize_t put;

		if (got < 0)
			return (int)got;
		if ((size_t)got != n)
			return -EBADMSG;
		*h = cache_hash64(buf, n, *h);
		if (out >= 0) {
			put = pwrite(out, buf, n, (off_t)out_off);
			if (put < 0)
				return -errno;
			if ((size_t)put != n)
				return -EIO;
		}
		in_off += n;
		out_off += n;
		len -= n;
	}
	return 0;
}

int xprofs_cache_export(struct xprofs_cache *c, const void *key, size_t keylen, int out,
			uint64_t *len)
{
	uint8_t hdr[CACHE_PORT_HDR], *buf = NULL;
	char path[PATH_MAX];
	struct cache_layout L;
	uint64_t id[2], h = 0;
	ssize_t put;
	int fd = -1, r;

	r = cache_key_path(c, key, keylen, id, path, sizeof(path));
	if (r < 0)
		return r;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return errno == ELOOP ? -ENOENT : -errno;
	r = cache_entry_check(fd, key, keylen, &L);
	if (r == -ESTALE || r == -EBADMSG)
		r = -ENOENT; /* not ours to ship; the next open drops a corrupt one */
	if (r < 0)
		goto out;
	buf = malloc(CACHE_PORT_PIECE);
	if (!buf) {
		r = -ENOMEM;
		goto out;
	}
	r = copy_hashed(fd, 0, out, CACHE_PORT_HDR + keylen, L.file_size, buf, &h);
	if (r < 0)
		goto out;
	memcpy(hdr, CACHE_PORT_MAGIC, CACHE_MAGIC_LEN);
	cache_put32(hdr + 8, CACHE_PORT_VERSION);
	cache_put32(hdr + 12, (uint32_t)keylen);
	cache_put64(hdr + 16, L.file_size);
	cache_put64(hdr + 24, h);
	cache_put64(hdr + 32, header_hash(hdr, key, keylen));
	put = pwrite(out, hdr, CACHE_PORT_HDR, 0);
	if (put == (ssize_t)CACHE_PORT_HDR && keylen)
		put = pwrite(out, key, keylen, CACHE_PORT_HDR) == (ssize_t)keylen
			      ? (ssize_t)CACHE_PORT_HDR
			      : -1;
	if (put != (ssize_t)CACHE_PORT_HDR) {
		r = put < 0 ? -errno : -EIO;
		goto out;
	}
	*len = CACHE_PORT_HDR + keylen + L.file_size;
out:
	free(buf);
	close(fd);
	return r;
}

/*
 * check_portable_header() - the header and key of the copy @in (@len bytes)
 * against @key; the payload length into *@plen and its hash into *@phash.
 */
static int check_portable_header(int in, uint64_t len, const void *key, size_t keylen,
				 uint64_t *plen, uint64_t *phash)
{
	uint8_t hdr[CACHE_PORT_HDR];
	uint8_t *k = NULL;
	uint32_t klen;
	ssize_t got;
	int r;

	if (len < CACHE_PORT_HDR)
		return -EBADMSG;
	got = xprofs_pread_full(in, hdr, CACHE_PORT_HDR, 0);
	if (got < 0)
		return (int)got;
	if (got != CACHE_PORT_HDR || memcmp(hdr, CACHE_PORT_MAGIC, CACHE_MAGIC_LEN) != 0 ||
	    cache_get32(hdr + 8) != CACHE_PORT_VERSION)
		return -EBADMSG;
	klen = cache_get32(hdr + 12);
	if (klen > XPROFS_CACHE_KEY_MAX || len < CACHE_PORT_HDR + (uint64_t)klen)
		return -EBADMSG;
	*plen = cache_get64(hdr + 16);
	*phash = cache_get64(hdr + 24);
	if (*plen != len - CACHE_PORT_HDR - klen)
		return -EBADMSG;
	k = malloc(klen ? klen : 1);
	if (!k)
		return -ENOMEM;
	got = xprofs_pread_full(in, k, klen, CACHE_PORT_HDR);
	if (got < 0)
		r = (int)got;
	else if ((size_t)got != klen || cache_get64(hdr + 32) != header_hash(hdr, k, klen))
		r = -EBADMSG;
	else if (klen != keylen || memcmp(k, key, keylen) != 0)
		r = -ESTALE; /* a sound copy of another key: never served for ours */
	else
		r = 0;
	free(k);
	return r;
}

/* Every block of the entry @fd decodes and matches its checksum. */
static int check_blocks(int fd, const struct cache_layout *L)
{
	uint8_t *blk = malloc(L->bs);
	int r = blk ? 0 : -ENOMEM;

	for (uint64_t i = 0; r == 0 && i < L->nblocks; i++) {
		ssize_t got = cache_block_read(fd, L, i, blk);

		if (got < 0)
			r = (int)got;
		else if ((uint64_t)got != cache_block_raw_len(L, i))
			r = -EBADMSG;
	}
	free(blk);
	return r;
}

/* publish() - rename the checked temp file @tmp into place as entry @id of @size bytes. */
static int publish(struct xprofs_cache *c, const char *tmp, const uint64_t id[2], uint64_t size)
{
	char path[PATH_MAX];
	struct cache_node *n;
	int r = cache_entry_path(c, id, path, sizeof(path));

	if (r < 0)
		return r;
	pthread_mutex_lock(&c->lock);
	if (rename(tmp, path) < 0) {
		r = -errno;
		pthread_mutex_unlock(&c->lock);
		return r;
	}
	n = cache_node_get(c, id);
	if (n) {
		cache_node_set_present(c, n, size);
		cache_seen_now(c, n);
		n->touched = xprofs_now_ns() / 1000000000;
		cache_evict(c, n);
	}
	pthread_mutex_unlock(&c->lock);
	return 0;
}

int xprofs_cache_import(struct xprofs_cache *c, const void *key, size_t keylen, int in,
			uint64_t len)
{
	char tmp[PATH_MAX] = "";
	struct cache_layout L;
	uint64_t plen = 0, want = 0, h = 0, id[2];
	uint8_t *buf = NULL;
	int fd = -1, r;

	if (keylen > XPROFS_CACHE_KEY_MAX || (keylen && !key))
		return -EINVAL;
	r = check_portable_header(in, len, key, keylen, &plen, &want);
	if (r < 0)
		return r;
	if (plen > c->max_bytes)
		return -EFBIG;
	pthread_mutex_lock(&c->lock);
	r = cache_make_room(c, plen);
	pthread_mutex_unlock(&c->lock);
	if (r < 0)
		return r;
	r = snprintf(tmp, sizeof(tmp), "%s/w.XXXXXX", c->tmpdir);
	if (r < 0 || (size_t)r >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && xprofs_mkdir_p(c->tmpdir) == 0)
		fd = mkostemp(tmp, O_CLOEXEC); /* the cache dir was cleared under us */
	if (fd < 0) {
		r = -errno;
		tmp[0] = '\0';
		goto out;
	}
	buf = malloc(CACHE_PORT_PIECE);
	r = buf ? copy_hashed(in, CACHE_PORT_HDR + keylen, fd, 0, plen, buf, &h) : -ENOMEM;
	if (r == 0 && h != want)
		r = -EBADMSG;
	if (r == 0)
		r = cache_entry_check(fd, key, keylen, &L);
	if (r == 0 && L.file_size != plen)
		r = -EBADMSG;
	if (r == 0)
		r = check_blocks(fd, &L);
	if (r == 0) {
		cache_key_id(key, keylen, id);
		r = publish(c, tmp, id, plen);
		if (r == 0)
			tmp[0] = '\0';
	}
out:
	free(buf);
	if (fd >= 0)
		close(fd);
	if (tmp[0])
		unlink(tmp);
	return r;
}
