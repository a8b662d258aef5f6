/*
 * fuzz_cache_import.c - libFuzzer target for the portable form's parser
 * (cache/portable.c, xprofs_cache_import()): each input is a portable copy
 * offered for one fixed key; an import that succeeds must serve an entry
 * that reads without error to its end. Input byte 0 selects fix-ups the
 * harness applies first so the fuzzer gets past the hashes: bit 0 writes our
 * key and its length into the header, bit 1 sets the payload length to what
 * follows the key and recomputes the payload and header hashes. The entry
 * behind them is fuzz-cache-entry's ground. Seeds
 * (tests/fuzz/corpus/cache-import/) are real exports made by mkcorpus-cache.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xprofs/cache.h"
#include "../../cache/cache-internal.h"

#define FUZZ_KEY "fuzz-key"

static struct xprofs_cache *cache;
static char cache_dir[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void cleanup(void)
{
	char cmd[128];

	xprofs_cache_free(cache);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", cache_dir);
	(void)!system(cmd);
}

static void fixup(uint8_t *p, size_t n, unsigned mode)
{
	uint32_t keylen;
	uint64_t h = 0;

	if (n < CACHE_PORT_HDR)
		return;
	if ((mode & 1) && n >= CACHE_PORT_HDR + strlen(FUZZ_KEY)) {
		cache_put32(p + 12, (uint32_t)strlen(FUZZ_KEY));
		memcpy(p + CACHE_PORT_HDR, FUZZ_KEY, strlen(FUZZ_KEY));
	}
	keylen = cache_get32(p + 12);
	if (!(mode & 2) || keylen > n - CACHE_PORT_HDR)
		return;
	cache_put64(p + 16, n - CACHE_PORT_HDR - keylen);
	for (size_t off = CACHE_PORT_HDR + keylen; off < n; off += CACHE_PORT_PIECE)
		h = cache_hash64(p + off, n - off < CACHE_PORT_PIECE ? n - off : CACHE_PORT_PIECE,
				 h);
	cache_put64(p + 24, h);
	cache_put64(p + 32, cache_hash64(p + CACHE_PORT_HDR, keylen, cache_hash64(p, 32, 0)));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xprofs_cache_reader *e;
	static uint8_t out[1 << 16];
	uint8_t *p;
	int fd;

	if (!cache) {
		strcpy(cache_dir, "/tmp/xprofs-fuzz-import.XXXXXX");
		xprofs_log_set_level(XPROFS_LOG_ERR);
		if (!mkdtemp(cache_dir) || xprofs_cache_new(cache_dir, 0, &cache) < 0)
			abort();
		atexit(cleanup);
	}
	if (size < 1)
		return 0;
	p = malloc(size);
	memcpy(p, data + 1, size - 1);
	fixup(p, size - 1, data[0]);
	fd = xprofs_tmpfile("/tmp", "xprofs-fuzz-import");
	if (fd < 0 || (size > 1 && pwrite(fd, p, size - 1, 0) != (ssize_t)(size - 1)))
		abort();
	free(p);
	if (xprofs_cache_import(cache, FUZZ_KEY, strlen(FUZZ_KEY), fd, size - 1) == 0) {
		uint64_t sz, off = 0;
		ssize_t n;

		if (xprofs_cache_reader_open(cache, FUZZ_KEY, strlen(FUZZ_KEY), &e) < 0)
			abort(); /* published, yet not a sound entry */
		sz = xprofs_cache_reader_size(e);
		while ((n = xprofs_cache_reader_pread(e, out, sizeof(out), off)) > 0)
			off += (uint64_t)n;
		if (n < 0 || off != sz)
			abort(); /* every block was checked before publishing */
		xprofs_cache_reader_close(e);
		(void)xprofs_cache_remove(cache, FUZZ_KEY, strlen(FUZZ_KEY));
	}
	close(fd);
	return 0;
}
