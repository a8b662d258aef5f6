/*
 * mkcorpus.c - writes seed inputs for fuzz-cache-entry: real entries made by
 * the cache (lz4 blocks, raw blocks, empty, multi-block), each prefixed with
 * the 0x03 fix-up byte the harness reads; with IMPORT_OUTDIR also their
 * portable forms for fuzz-cache-import (same prefix).
 * Usage: mkcorpus-cache OUTDIR [IMPORT_OUTDIR]
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xprofs/cache.h"

/*
 * @fd's bytes from offset 0 to its end, after the 0x03 fix-up byte, as
 * @outdir/@name (borrows @fd): the bytes copied, or -1.
 */
static int64_t write_seed(int fd, const char *outdir, const char *name)
{
	char path[1024], buf[65536];
	int64_t off = 0;
	ssize_t n;
	FILE *out;

	snprintf(path, sizeof(path), "%s/%s", outdir, name);
	out = fopen(path, "wb");
	if (!out)
		return -1;
	fputc(3, out);
	while ((n = xprofs_pread_full(fd, buf, sizeof(buf), (uint64_t)off)) > 0) {
		fwrite(buf, 1, (size_t)n, out);
		off += n;
	}
	fclose(out);
	return n < 0 ? -1 : off;
}

/* The cache file (*.xc) in @cdir as @outdir/@name. */
static int emit(const char *cdir, const char *outdir, const char *name)
{
	char path[1024];
	struct dirent *de;
	DIR *d = opendir(cdir);
	int fd = -1;
	int64_t n;

	while (d && (de = readdir(d)))
		if (strstr(de->d_name, ".xc")) {
			snprintf(path, sizeof(path), "%s/%s", cdir, de->d_name);
			if (fd >= 0)
				close(fd);
			fd = open(path, O_RDONLY);
		}
	if (d)
		closedir(d);
	if (fd < 0)
		return -1;
	n = write_seed(fd, outdir, name);
	close(fd);
	return n < 0 ? -1 : 0;
}

/* The portable form of the entry "fuzz-key" of @c as @outdir/@name. */
static int emit_portable(struct xprofs_cache *c, const char *outdir, const char *name)
{
	uint64_t len = 0;
	int fd = xprofs_tmpfile("/tmp", "xprofs-mkcorpus");
	int64_t n;

	if (fd < 0 || xprofs_cache_export(c, "fuzz-key", 8, fd, &len) < 0)
		return -1;
	n = write_seed(fd, outdir, name);
	close(fd);
	return n == (int64_t)len ? 0 : -1;
}

int main(int argc, char **argv)
{
	const char *names[] = {"empty", "json-3-blocks", "raw-2-blocks"};
	char json[10000];
	size_t jl = 0;

	if (argc != 2 && argc != 3)
		return 2;
	while (jl < sizeof(json) - 64)
		jl += (size_t)snprintf(json + jl, sizeof(json) - jl,
				       "{\"ts\":%zu,\"name\":\"op\"},", jl);
	for (int i = 0; i < 3; i++) {
		char dir[] = "/tmp/xprofs-mkcorpus.XXXXXX", cmd[128];
		struct xprofs_cache_writer *w;
		struct xprofs_cache *c;
		int r = 0;

		if (!mkdtemp(dir) || xprofs_cache_new(dir, 0, &c) < 0 ||
		    xprofs_cache_set_block_size(c, 4096) < 0 ||
		    xprofs_cache_writer_new(c, "fuzz-key", 8, &w) < 0)
			return 1;
		if (i == 1)
			r = xprofs_cache_writer_write(w, json, jl);
		for (uint64_t k = 0, x = 88172645463325252ULL; i == 2 && k < 5000 && r == 0; k++) {
			unsigned char b;

			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			b = (unsigned char)x;
			r = xprofs_cache_writer_write(w, &b, 1);
		}
		if (r < 0 || xprofs_cache_writer_commit(w) < 0 || emit(dir, argv[1], names[i]) < 0)
			return 1;
		if (argc == 3 && emit_portable(c, argv[2], names[i]) < 0)
			return 1;
		xprofs_cache_free(c);
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd) != 0)
			return 1;
	}
	return 0;
}
