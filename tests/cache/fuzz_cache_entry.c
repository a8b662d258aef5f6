/*
 * fuzz_cache_entry.c - libFuzzer target for the cache's on-disk entry parser.
 * Each input becomes the entry file of one fixed key in a temp cache
 * directory, which is then opened and read at several offsets through the
 * public API (the real path: open-time validation, block index, checksums,
 * lz4). Input byte 0 selects fix-ups the harness applies first so the fuzzer
 * gets past the hashes and reaches the bounds checks behind them: bit 0
 * writes our key into the header, bit 1 recomputes the header, index,
 * footer hashes and every in-bounds block checksum. The rest is the file.
 * Seeds (tests/fuzz/corpus/cache-entry/) are real entries made by
 * mkcorpus-cache with a 0x03 prefix.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xprofs/cache.h"
#include "../../cache/cache-internal.h"

#define FUZZ_KEY "fuzz-key"

static struct xprofs_cache *cache;
static char cache_dir[64];
static char entry_path[600];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Leaves no temp directory behind when libFuzzer exits. */
static void cleanup(void)
{
	char tmp[128];

	unlink(entry_path);
	snprintf(tmp, sizeof(tmp), "%s/tmp", cache_dir);
	rmdir(tmp);
	rmdir(cache_dir);
}

static void init(void)
{
	char *dir = cache_dir;
	struct xprofs_cache_writer *w;
	struct dirent *de;
	DIR *d;

	strcpy(cache_dir, "/tmp/xprofs-fuzz-cache.XXXXXX");
	xprofs_log_set_level(XPROFS_LOG_ERR);
	if (!mkdtemp(dir) || xprofs_cache_new(dir, 0, &cache) < 0 ||
	    xprofs_cache_writer_new(cache, FUZZ_KEY, strlen(FUZZ_KEY), &w) < 0 ||
	    xprofs_cache_writer_commit(w) < 0)
		abort();
	/* learn the entry's file name from the cache itself */
	d = opendir(dir);
	while (d && (de = readdir(d)))
		if (strstr(de->d_name, ".xc"))
			snprintf(entry_path, sizeof(entry_path), "%s/%s", dir, de->d_name);
	if (d)
		closedir(d);
	if (!entry_path[0])
		abort();
	atexit(cleanup);
}

static void fixup(uint8_t *p, size_t n, unsigned mode)
{
	uint64_t hh, ih, nblocks, index_off;
	uint8_t *f;
	uint32_t keylen;

	if (n < CACHE_HDR_FIXED + CACHE_FOOTER_SIZE)
		return;
	keylen = get32(p + 12);
	if ((mode & 1) && CACHE_HDR_FIXED + strlen(FUZZ_KEY) + CACHE_FOOTER_SIZE <= n) {
		keylen = (uint32_t)strlen(FUZZ_KEY);
		p[12] = (uint8_t)keylen;
		p[13] = p[14] = p[15] = 0;
		memcpy(p + CACHE_HDR_FIXED, FUZZ_KEY, keylen);
	}
	if (!(mode & 2) || keylen > n - CACHE_HDR_FIXED - CACHE_FOOTER_SIZE)
		return;
	hh = cache_hash64(p + CACHE_HDR_FIXED, keylen, cache_hash64(p, 24, 0));
	put64(p + 24, hh);
	f = p + n - CACHE_FOOTER_SIZE;
	nblocks = get64(f + 8);
	index_off = get64(f + 16);
	ih = hh;
	if (index_off <= n - CACHE_FOOTER_SIZE &&
	    nblocks <= (n - CACHE_FOOTER_SIZE - index_off) / CACHE_REC_SIZE) {
		for (uint64_t i = 0; i < nblocks; i++) {
			uint8_t *r = p + index_off + i * CACHE_REC_SIZE;
			uint64_t off = get64(r);
			uint32_t stored = get32(r + 8);

			if (off <= n && stored <= n - off)
				put64(r + 16, cache_hash64(p + off, stored, 0));
			ih = cache_hash64(r, CACHE_REC_SIZE, ih);
		}
		put64(f + 24, ih);
	}
	put64(f + 32, cache_hash64(f, 32, hh));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xprofs_cache_reader *e;
	static uint8_t out[1 << 16];
	uint8_t *p;
	FILE *fp;

	if (!cache)
		init();
	if (size < 1)
		return 0;
	p = malloc(size);
	memcpy(p, data + 1, size - 1);
	fixup(p, size - 1, data[0]);
	fp = fopen(entry_path, "wb");
	if (!fp)
		abort();
	fwrite(p, 1, size - 1, fp);
	fclose(fp);
	free(p);
	if (xprofs_cache_reader_open(cache, FUZZ_KEY, strlen(FUZZ_KEY), &e) == 0) {
		uint64_t sz = xprofs_cache_reader_size(e);
		uint64_t offs[] = {0, 1, sz / 2, sz ? sz - 1 : 0, sz, sz + 100};

		for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++)
			(void)xprofs_cache_reader_pread(e, out, sizeof(out), offs[i]);
		xprofs_cache_reader_close(e);
	}
	return 0;
}
