/*
 * cache_bench.c - throughput of the cache on trace.json-like data: streams
 * SIZE bytes through one writer (1 MiB writes, then commit), reads the entry
 * back sequentially in 128 KiB preads (the FUSE read size) verifying every
 * byte, then times random 4 KiB preads. Prints MB/s and the compression
 * ratio. Built and run by bench/cache.sh; not a test.
 *
 * Usage: cache-bench DIR SIZE_MB [BLOCK_KIB] [json|random|FILE]
 * FILE (e.g. a trace.json rendered by xprofs-decode) is tiled to 64 MiB.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "xprofs/cache.h"

#define GEN_SIZE (64u << 20) /* generated once and cycled: lz4 sees one block at a time */

static uint64_t x = 88172645463325252ULL;

static uint64_t rnd(void)
{
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return x;
}

/* @path's content repeated to GEN_SIZE bytes; NULL if unreadable or empty. */
static char *tile(const char *path)
{
	char *p = malloc(GEN_SIZE);
	FILE *f = fopen(path, "rb");
	size_t n = 0, got;

	if (!f || !p)
		goto fail;
	while (n < GEN_SIZE && (got = fread(p + n, 1, GEN_SIZE - n, f)) > 0)
		n += got;
	fclose(f);
	if (n == 0)
		goto fail;
	for (size_t k = n; k < GEN_SIZE; k++)
		p[k] = p[k % n];
	return p;
fail:
	free(p);
	return NULL;
}

/* Chrome trace events as decode/ renders them: varied names, numbers, args. */
static char *gen(int json)
{
	char *p = malloc(GEN_SIZE + 512);
	size_t n = 0;
	uint64_t ts = 1700000000000ULL;

	if (!json) {
		for (size_t i = 0; i < GEN_SIZE; i += 8) {
			uint64_t v = rnd();

			memcpy(p + i, &v, 8);
		}
		return p;
	}
	while (n < GEN_SIZE) {
		ts += rnd() % 5000;
		n += (size_t)sprintf(
			p + n,
			"{\"ph\":\"X\",\"pid\":%u,\"tid\":%u,\"ts\":%llu.%03u,\"dur\":%u.%03u,"
			"\"name\":\"%s.%u\",\"args\":{\"flops\":%llu,\"bytes_accessed\":%llu,"
			"\"long_name\":\"%%fusion.%u = bf16[%u,%u]{1,0} fusion(%%p.%u)\"}},\n",
			(unsigned)(rnd() % 8), (unsigned)(rnd() % 64),
			(unsigned long long)(ts / 1000), (unsigned)(ts % 1000),
			(unsigned)(rnd() % 900), (unsigned)(rnd() % 1000),
			(rnd() % 3) ? "fusion" : "copy-start", (unsigned)(rnd() % 4000),
			(unsigned long long)(rnd() % 100000000000ULL),
			(unsigned long long)(rnd() % 1000000000ULL), (unsigned)(rnd() % 4000),
			(unsigned)(128 << (rnd() % 5)), (unsigned)(128 << (rnd() % 5)),
			(unsigned)(rnd() % 300));
	}
	return p;
}

static long max_rss_kib(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

static double now_s(void)
{
	return (double)xprofs_mono_ns() / 1e9;
}

int main(int argc, char **argv)
{
	struct xprofs_cache_writer *w;
	struct xprofs_cache_reader *e;
	struct xprofs_cache_stats st;
	struct xprofs_cache *c;
	uint64_t size, bs, nrand = 20000;
	char *data, *buf;
	double t0, tw, tr, trr;
	long rss0, rss1;
	const char *kind;
	int json;

	if (argc < 3) {
		fprintf(stderr, "usage: %s DIR SIZE_MB [BLOCK_KIB] [json|random]\n", argv[0]);
		return 2;
	}
	size = strtoull(argv[2], NULL, 10) << 20;
	bs = argc > 3 ? strtoull(argv[3], NULL, 10) << 10 : 256 << 10;
	kind = argc > 4 ? argv[4] : "json";
	json = strcmp(kind, "random") != 0;
	if (strcmp(kind, "json") == 0 || !json) {
		data = gen(json);
	} else {
		data = tile(kind);
		kind = strrchr(kind, '/') ? strrchr(kind, '/') + 1 : kind;
	}
	if (!data) {
		fprintf(stderr, "cannot read %s\n", kind);
		return 1;
	}
	buf = malloc(1 << 20);
	if (xprofs_cache_new(argv[1], size * 2 + (64 << 20), &c) < 0 ||
	    xprofs_cache_set_block_size(c, (uint32_t)bs) < 0) {
		fprintf(stderr, "cannot open cache in %s\n", argv[1]);
		return 1;
	}

	memset(buf, 0, 1 << 20);
	rss0 = max_rss_kib();
	t0 = now_s();
	if (xprofs_cache_writer_new(c, "bench", 5, &w) < 0)
		return 1;
	for (uint64_t off = 0; off < size; off += 1 << 20)
		if (xprofs_cache_writer_write(w, data + off % GEN_SIZE, 1 << 20) < 0)
			return 1;
	if (xprofs_cache_writer_commit(w) < 0)
		return 1;
	tw = now_s() - t0;
	rss1 = max_rss_kib();

	t0 = now_s();
	if (xprofs_cache_reader_open(c, "bench", 5, &e) < 0)
		return 1;
	for (uint64_t off = 0; off < size; off += 128 << 10) {
		if (xprofs_cache_reader_pread(e, buf, 128 << 10, off) != 128 << 10 ||
		    memcmp(buf, data + off % GEN_SIZE, 128 << 10) != 0) {
			fprintf(stderr, "mismatch at %llu\n", (unsigned long long)off);
			return 1;
		}
	}
	tr = now_s() - t0;

	t0 = now_s();
	for (uint64_t i = 0; i < nrand; i++) {
		uint64_t off = rnd() % (size - 4096);

		if (xprofs_cache_reader_pread(e, buf, 4096, off) != 4096)
			return 1;
	}
	trr = now_s() - t0;
	xprofs_cache_reader_close(e);
	xprofs_cache_get_stats(c, &st);

	printf("| %s | %llu MiB | %llu KiB | %.0f MB/s | %.0f MB/s | %.0f reads/s | %.2f (%llu MiB "
	       "on disk) | +%ld KiB |\n",
	       kind, (unsigned long long)(size >> 20), (unsigned long long)(bs >> 10),
	       (double)size / 1e6 / tw, (double)size / 1e6 / tr, (double)nrand / trr,
	       (double)size / (double)st.bytes, (unsigned long long)(st.bytes >> 20), rss1 - rss0);
	if (xprofs_cache_remove(c, "bench", 5) < 0)
		return 1;
	xprofs_cache_free(c);
	free(buf);
	free(data);
	return 0;
}
