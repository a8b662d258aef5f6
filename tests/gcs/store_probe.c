/*
 * tests/gcs/store_probe.c - drives the GCS store backend through the public
 * store API against a real JSON API server (the emulator, or the fault
 * server fake_gcs.py) and prints TAP. Run by test_store.sh, which seeds the
 * bucket and passes the local copy to compare with.
 *
 *   store-probe ENDPOINT gs://BUCKET/PREFIX LOCAL_DIR [CACHE_DIR]   # full check
 *   store-probe --faults ENDPOINT gs://BUCKET/PREFIX               # fault server
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>

#include "xprofs/cache.h"
#include "xprofs/gcs.h"
#include "xprofs/store.h"

static int tap_n, tap_fail;

static void check(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s %d - ", ok ? "ok" : "not ok", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!ok)
		tap_fail++;
}

static char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	char *p = NULL;
	long len;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fseek(f, 0, SEEK_SET);
	p = malloc((size_t)len + 1);
	if (p && fread(p, 1, (size_t)len, f) != (size_t)len) {
		free(p);
		p = NULL;
	}
	fclose(f);
	*n = (size_t)len;
	return p;
}

/* Read all of @path through the store with reads of @chunk bytes. Caller owns. */
static char *store_slurp(struct xprofs_store *s, const char *path, size_t chunk, size_t *n,
			 int *err)
{
	struct xprofs_store_reader *f = NULL;
	struct xprofs_store_stat st;
	char *buf = NULL;
	uint64_t off = 0;

	*err = xprofs_store_reader_open(s, path, &f);
	if (*err < 0)
		return NULL;
	*err = xprofs_store_reader_stat(f, &st);
	buf = malloc(st.size + 1);
	while (*err == 0 && buf && off < st.size) {
		ssize_t k = xprofs_store_reader_pread(f, buf + off, chunk, off);

		if (k <= 0) {
			*err = k < 0 ? (int)k : -EIO;
			break;
		}
		off += (uint64_t)k;
	}
	xprofs_store_reader_close(f);
	*n = off;
	return buf;
}

struct walk {
	struct xprofs_store *s;
	const char *local;
	int files, mismatches;
};

static int walk_dir(struct walk *w, const char *rel);

struct list_ctx {
	struct walk *w;
	const char *rel;
	int entries;
};

static int list_cb(void *arg, const char *name, const struct xprofs_store_stat *st)
{
	struct list_ctx *c = arg;
	char rel[4096], lpath[8192];
	struct stat lst;

	c->entries++;
	snprintf(rel, sizeof(rel), "%s%s%s", c->rel, c->rel[0] ? "/" : "", name);
	snprintf(lpath, sizeof(lpath), "%s/%s", c->w->local, rel);
	if (stat(lpath, &lst) < 0) {
		printf("# extra entry in the store: %s\n", rel);
		c->w->mismatches++;
		return 0;
	}
	if (st->type == XPROFS_STORE_DIR) {
		if (!S_ISDIR(lst.st_mode))
			c->w->mismatches++;
		return walk_dir(c->w, rel);
	}
	if (!S_ISREG(lst.st_mode) || (uint64_t)lst.st_size != st->size) {
		printf("# %s: size %llu vs local %lld\n", rel, (unsigned long long)st->size,
		       (long long)lst.st_size);
		c->w->mismatches++;
		return 0;
	}
	{
		size_t n1 = 0, n2 = 0;
		int err;
		char *a = slurp(lpath, &n1);
		/* odd read sizes cross block boundaries */
		char *b = store_slurp(c->w->s, rel, 131072 + 17, &n2, &err);

		if (err || !a || !b || n1 != n2 || memcmp(a, b, n1) != 0) {
			printf("# %s: content differs (err %d)\n", rel, err);
			c->w->mismatches++;
		}
		free(a);
		free(b);
	}
	c->w->files++;
	return 0;
}

static int walk_dir(struct walk *w, const char *rel)
{
	struct list_ctx c = {.w = w, .rel = rel};
	char lpath[8192];
	DIR *d;
	struct dirent *e;
	int local = 0, r;

	r = xprofs_store_list(w->s, rel, list_cb, &c);
	if (r < 0)
		return r;
	snprintf(lpath, sizeof(lpath), "%s/%s", w->local, rel);
	d = opendir(lpath);
	if (!d)
		return -errno;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			local++;
	closedir(d);
	if (local != c.entries) {
		printf("# %s: %d entries in the store, %d locally\n", rel, c.entries, local);
		w->mismatches++;
	}
	return 0;
}

static int put(struct xprofs_store *s, const char *path, unsigned flags, const void *p, size_t n)
{
	struct xprofs_store_writer *w = NULL;
	int r = xprofs_store_writer_new(s, path, flags, &w);

	if (r < 0)
		return r;
	if (n && xprofs_store_writer_write(w, p, n, 0) != (ssize_t)n) {
		xprofs_store_writer_abort(w);
		return -EIO;
	}
	return xprofs_store_writer_commit(w);
}

static bool same_content(struct xprofs_store *s, const char *path, const void *p, size_t n)
{
	size_t got = 0;
	int err;
	char *b = store_slurp(s, path, 65536, &got, &err);
	bool ok = !err && b && got == n && memcmp(b, p, n) == 0;

	free(b);
	return ok;
}

static int pending_cb(void *arg, const char *name, const struct xprofs_store_stat *st)
{
	if (strcmp(name, "pending.bin") == 0 && st->size == 5)
		(*(int *)arg)++;
	return 0;
}

struct reader_arg {
	struct xprofs_store *s;
	const char *path;
	const char *want;
	size_t n;
	int ok;
};

static void *reader_main(void *arg)
{
	struct reader_arg *a = arg;
	size_t got = 0;
	int err;
	char *b = store_slurp(a->s, a->path, 100000, &got, &err);

	a->ok = !err && b && got == a->n && memcmp(b, a->want, got) == 0;
	free(b);
	return NULL;
}

static json_t *status(struct xprofs_store *s)
{
	struct xprofs_buf b;
	json_t *j;

	xprofs_buf_init(&b, 1 << 20);
	if (xprofs_store_status_json(s, &b) < 0) {
		xprofs_buf_deinit(&b);
		return NULL;
	}
	j = json_loads(b.data, 0, NULL);
	xprofs_buf_deinit(&b);
	return j;
}

static long long counter(json_t *j, const char *group, const char *key)
{
	json_t *g = group ? json_object_get(j, group) : j;

	return json_integer_value(json_object_get(g, key));
}

static void pattern(char *p, size_t n, unsigned seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (char)((i * 2654435761u + seed) >> 13);
}

/* A new store of @url for the @what test (a check says whether it opened); NULL when not. */
static struct xprofs_store *fresh_store(const char *url, const struct xprofs_gcs_options *o,
					const char *what)
{
	struct xprofs_store *c = NULL;

	check(xprofs_gcs_store_new(url, o, &c) == 0, "fresh store for the %s test", what);
	return c;
}

/* A sequential reader of w/stale.bin (@big bytes of @data2) in @c gets blocks fetched ahead. */
static void read_ahead(struct xprofs_store *c, const char *data2, size_t big)
{
	struct xprofs_store_reader *sf = NULL;
	char *sb = malloc(big);
	size_t off = 0;
	long long pf, g0;
	json_t *j;
	bool sok = xprofs_store_reader_open(c, "w/stale.bin", &sf) == 0;

	/* 4 sequential 64 KiB reads establish a stream (blocks 0-1 fetched) */
	for (; sok && off < 4 * 65536; off += 65536)
		sok = xprofs_store_reader_pread(sf, sb + off, 65536, off) == 65536;
	/* the application "thinks" while the prefetcher works (up to 20 s on a loaded machine) */
	for (int t = 0; t < 200; t++) {
		usleep(100000);
		j = status(c);
		pf = counter(j, "blocks", "prefetched");
		g0 = counter(j, "requests", "get");
		json_decref(j);
		if (pf >= 2)
			break;
	}
	check(sok && pf >= 2, "read-ahead: %lld blocks fetched ahead of the reader", pf);
	for (; sok && off < big; off += 65536) {
		size_t k = big - off < 65536 ? big - off : 65536;

		sok = xprofs_store_reader_pread(sf, sb + off, k, off) == (ssize_t)k;
	}
	j = status(c);
	check(sok && memcmp(sb, data2, big) == 0 && counter(j, "requests", "get") == g0,
	      "the rest of the file came from the prefetched blocks (%lld GETs in all)", g0);
	json_decref(j);
	xprofs_store_reader_close(sf);
	free(sb);
}

/* One large first read of w/stale.bin in @c: all its blocks at once, in parallel ranges. */
static void large_read(struct xprofs_store *c, const char *data2, size_t big)
{
	struct xprofs_store_reader *lf = NULL;
	char *lb = malloc(big);
	ssize_t k = -1;
	json_t *j;

	if (xprofs_store_reader_open(c, "w/stale.bin", &lf) == 0)
		k = xprofs_store_reader_pread(lf, lb, big, 0);
	check(k == (ssize_t)big && memcmp(lb, data2, big) == 0, "one %zu-byte pread", big);
	j = status(c);
	check(counter(j, "requests", "get") == 4 && counter(j, "blocks", "misses") == 4,
	      "... fetched as 4 parallel ranged GETs (%lld)", counter(j, "requests", "get"));
	json_decref(j);
	xprofs_store_reader_close(lf);
	free(lb);
}

static int full(const char *endpoint, const char *url, const char *local, const char *cache_dir)
{
	struct xprofs_gcs_options o = {
		.endpoint = endpoint, .anonymous = true, .retry_deadline_s = 10};
	struct xprofs_store *a = NULL, *b = NULL;
	struct xprofs_store_writer *w = NULL, *w2 = NULL;
	struct xprofs_store_reader *f = NULL;
	struct xprofs_store_stat st;
	struct xprofs_cache *cache = NULL;
	struct walk wk = {0};
	size_t big = 3 * 1024 * 1024 + 12345, n;
	char *data = malloc(big), *data2 = malloc(big), buf[4096];
	json_t *j;
	int r;

	r = xprofs_gcs_store_new(url, &o, &a);
	check(r == 0, "store_new %s: %d", url, r);
	if (r < 0)
		return 1;
	r = xprofs_gcs_store_new(url, &o, &b);
	check(r == 0, "second store on the same prefix: %d", r);
	if (r < 0)
		return 1;

	/* 1. the mirror: every directory and file as seeded, byte for byte */
	wk.s = a;
	wk.local = local;
	r = walk_dir(&wk, "");
	check(r == 0 && wk.mismatches == 0 && wk.files > 0,
	      "tree and contents match %s (%d files, %d mismatches)", local, wk.files,
	      wk.mismatches);

	/* 2. write, read back, atomic exclusive create */
	pattern(data, big, 1);
	r = put(a, "w/new/file.bin", XPROFS_STORE_EXCL, data, big);
	check(r == 0, "exclusive create of w/new/file.bin: %d", r);
	check(xprofs_store_stat(a, "w/new", &st) == 0 && st.type == XPROFS_STORE_DIR,
	      "implicit parent dir appears");
	check(same_content(a, "w/new/file.bin", data, big), "read back what was written");
	check(put(a, "w/new/file.bin", XPROFS_STORE_EXCL, "x", 1) == -EEXIST,
	      "second exclusive create: EEXIST");
	r = xprofs_store_writer_new(a, "w/race.bin", XPROFS_STORE_EXCL, &w);
	check(r == 0, "exclusive writer opened");
	check(put(b, "w/race.bin", XPROFS_STORE_EXCL, "B", 1) == 0,
	      "another client creates the same name");
	if (w) {
		(void)!xprofs_store_writer_write(w, "A", 1, 0);
		r = xprofs_store_writer_commit(w);
		check(r == -EEXIST,
		      "the loser's commit fails with EEXIST (ifGenerationMatch=0): %d", r);
	}
	check(xprofs_store_refresh(a) == 0, "refresh");
	check(same_content(a, "w/race.bin", "B", 1), "the winner's content stays");

	/* 3. resumable uploads in chunks */
	{
		struct xprofs_gcs_options o2 = o;
		struct xprofs_store *c = NULL;

		o2.resumable_threshold = 512 * 1024;
		o2.upload_chunk = 256 * 1024;
		r = xprofs_gcs_store_new(url, &o2, &c);
		pattern(data2, big, 2);
		check(r == 0 && put(c, "w/resumable.bin", XPROFS_STORE_TRUNC, data2, big) == 0,
		      "resumable upload of %zu bytes in 256 KiB chunks", big);
		check(same_content(c, "w/resumable.bin", data2, big) &&
			      same_content(b, "w/resumable.bin", data2, big) == false,
		      "read back the resumable upload (other store not refreshed yet)");
		check(xprofs_store_refresh(b) == 0 &&
			      same_content(b, "w/resumable.bin", data2, big),
		      "other store sees it after refresh");
		j = status(c);
		check(counter(j, "requests", "upload") >= 14,
		      "resumable upload took a session + 13 chunks (%lld uploads)",
		      counter(j, "requests", "upload"));
		json_decref(j);
		xprofs_store_free(c);
	}

	/* 4. non-truncating create starts from the object's content */
	r = xprofs_store_writer_new(a, "w/new/file.bin", 0, &w);
	check(r == 0, "non-TRUNC create of an existing object");
	if (r == 0) {
		memcpy(data + 100, "PATCHED", 7);
		(void)!xprofs_store_writer_write(w, "PATCHED", 7, 100);
		n = (size_t)xprofs_store_writer_pread(w, buf, sizeof(buf), 96);
		check(n == sizeof(buf) && memcmp(buf + 4, "PATCHED", 7) == 0 &&
			      memcmp(buf, data + 96, 4) == 0,
		      "wread sees the pre-filled content and the patch");
		check(xprofs_store_writer_flush(w) == 0, "flush uploads");
		(void)!xprofs_store_writer_write(w, "AGAIN", 5, 200);
		memcpy(data + 200, "AGAIN", 5);
		check(xprofs_store_writer_commit(w) == 0,
		      "commit after flush replaces our own version");
		check(same_content(a, "w/new/file.bin", data, big),
		      "content is the patched original");
	}

	/* 5. namespace operations */
	check(xprofs_store_rename(a, "w/new/file.bin", "w/renamed.bin") == 0, "rename a file");
	check(xprofs_store_stat(a, "w/new/file.bin", &st) == -ENOENT, "old name gone");
	check(same_content(a, "w/renamed.bin", data, big), "new name has the content");
	/* a directory rename moves it object by object (issue 12); and back for what follows */
	check(xprofs_store_rename(a, "w", "w2") == 0 &&
		      xprofs_store_stat(a, "w/renamed.bin", &st) == -ENOENT &&
		      same_content(a, "w2/renamed.bin", data, big),
	      "directory rename moves its files");
	check(xprofs_store_rename(a, "w2", "w") == 0 &&
		      same_content(a, "w/renamed.bin", data, big) &&
		      xprofs_store_stat(a, "w2", &st) == -ENOENT,
	      "and back");
	check(xprofs_store_mkdir(a, "w/emptydir") == 0, "mkdir");
	check(xprofs_store_mkdir(a, "w/emptydir") == -EEXIST, "mkdir again: EEXIST");
	check(xprofs_store_mkdir(a, "nope/deeper") == -ENOENT, "mkdir without parent: ENOENT");
	check(xprofs_store_refresh(a) == 0 && xprofs_store_stat(a, "w/emptydir", &st) == 0 &&
		      st.type == XPROFS_STORE_DIR,
	      "a mkdir'ed directory survives a refresh");
	check(xprofs_store_rmdir(a, "w") == -ENOTEMPTY, "rmdir non-empty: ENOTEMPTY");
	check(xprofs_store_rmdir(a, "w/emptydir") == 0, "rmdir empty");
	check(xprofs_store_unlink(a, "w/renamed.bin") == 0, "unlink");
	check(xprofs_store_stat(a, "w/renamed.bin", &st) == -ENOENT, "unlinked file gone");
	check(xprofs_store_unlink(a, "w/renamed.bin") == -ENOENT, "unlink again: ENOENT");
	check(xprofs_store_refresh(a) == 0 && xprofs_store_stat(a, "w/renamed.bin", &st) == -ENOENT,
	      "still gone after relisting (deleted in the bucket)");

	/* 6. a reader pinned to a generation sees ESTALE when the object is replaced */
	pattern(data2, big, 3);
	check(put(a, "w/stale.bin", XPROFS_STORE_TRUNC, data, big) == 0,
	      "object for the stale test");
	r = xprofs_store_reader_open(a, "w/stale.bin", &f);
	check(r == 0 && xprofs_store_reader_pread(f, buf, 10, 0) == 10,
	      "reader opened and read the first block");
	check(put(b, "w/stale.bin", XPROFS_STORE_TRUNC, data2, big) == 0,
	      "another client replaces it");
	if (f) {
		ssize_t k = xprofs_store_reader_pread(f, buf, 10, 2 * 1024 * 1024 + 5);

		check(k == -ESTALE, "the old reader gets ESTALE, never spliced data: %zd", k);
		xprofs_store_reader_close(f);
	}
	check(xprofs_store_refresh(a) == 0 && same_content(a, "w/stale.bin", data2, big),
	      "a new open sees the new version");

	/* 7. an unchanged reader keeps working while writers come and go */
	r = xprofs_store_writer_new(a, "w/pending.bin", XPROFS_STORE_EXCL, &w2);
	check(r == 0 && xprofs_store_writer_write(w2, "12345", 5, 0) == 5 &&
		      xprofs_store_stat(a, "w/pending.bin", &st) == 0 && st.size == 5,
	      "a file being written is visible to its own store with its current size");
	{
		int seen = 0;

		check(xprofs_store_list(a, "w", pending_cb, &seen) == 0 && seen == 1,
		      "... and listed in its directory");
	}
	check(xprofs_store_refresh(b) == 0 && xprofs_store_stat(b, "w/pending.bin", &st) == -ENOENT,
	      "but not in the bucket before commit");
	xprofs_store_writer_abort(w2);
	check(xprofs_store_stat(a, "w/pending.bin", &st) == -ENOENT, "abort leaves nothing");

	/* 8. counters */
	j = status(a);
	check(j && counter(j, "requests", "list") >= 1 && counter(j, "requests", "get") >= 1 &&
		      counter(j, "requests", "upload") >= 1 &&
		      counter(j, "requests", "delete") >= 1 &&
		      counter(j, NULL, "bytes_downloaded") > 0 && counter(j, NULL, "stale") >= 1,
	      "status_json counts requests, bytes and stale reads");
	json_decref(j);

	/* 9. single-flight: 8 readers of the same cold object fetch each block once */
	{
		struct xprofs_store *c;
		struct reader_arg ra[8];
		pthread_t th[8];
		int i, ok = 0;
		long long gets, misses, waits;

		c = fresh_store(url, &o, "concurrency");
		for (i = 0; c && i < 8; i++) {
			ra[i] = (struct reader_arg){
				.s = c, .path = "w/stale.bin", .want = data2, .n = big};
			pthread_create(&th[i], NULL, reader_main, &ra[i]);
		}
		for (i = 0; c && i < 8; i++) {
			pthread_join(th[i], NULL);
			ok += ra[i].ok;
		}
		j = status(c);
		gets = counter(j, "requests", "get");
		misses = counter(j, "blocks", "misses");
		waits = counter(j, "blocks", "coalesced");
		json_decref(j);
		check(ok == 8, "8 concurrent readers all read the right bytes");
		check(misses == 4 && gets <= 4 && waits > 0,
		      "each of the 4 blocks fetched once: %lld GETs, %lld misses, %lld coalesced "
		      "waits",
		      gets, misses, waits);
		xprofs_store_free(c);
		/* a sequential reader gets the next blocks fetched ahead of it */
		c = fresh_store(url, &o, "read-ahead");
		if (c)
			read_ahead(c, data2, big);
		xprofs_store_free(c);
		/* one large first read: all its blocks at once, in parallel ranges */
		c = fresh_store(url, &o, "large-read");
		if (c)
			large_read(c, data2, big);
		xprofs_store_free(c);
	}

	/* 10. the shared lz4 cache: a second mount reads blocks from disk, not GCS */
	if (cache_dir && xprofs_cache_new(cache_dir, 256u << 20, &cache) == 0) {
		struct xprofs_gcs_options o3 = o;
		struct xprofs_store *c1 = NULL, *c2 = NULL;
		long long gets1, gets2, disk;

		o3.cache = cache;
		check(xprofs_gcs_store_new(url, &o3, &c1) == 0 &&
			      same_content(c1, "w/stale.bin", data2, big),
		      "cold read through the cache");
		j = status(c1);
		gets1 = counter(j, "requests", "get");
		json_decref(j);
		/* a remount: blocks reach the disk cache from a writer thread, all of them by unmount */
		c1 = xprofs_store_free(c1);
		check(xprofs_gcs_store_new(url, &o3, &c2) == 0 &&
			      same_content(c2, "w/stale.bin", data2, big),
		      "warm read through the cache");
		j = status(c2);
		gets2 = counter(j, "requests", "get");
		disk = counter(j, "blocks", "disk_hits");
		json_decref(j);
		check(gets1 > 0 && gets2 == 0 && disk >= 4,
		      "warm read: %lld GETs (cold %lld), %lld disk blocks", gets2, gets1, disk);
		xprofs_store_free(c2);
		xprofs_store_free(c1);
		xprofs_cache_free(cache);
	}

	/* clean the scratch objects so the mirror check can run again */
	(void)!xprofs_store_unlink(a, "w/stale.bin");
	(void)!xprofs_store_unlink(a, "w/race.bin");
	(void)!xprofs_store_unlink(a, "w/resumable.bin");
	xprofs_store_free(b);
	xprofs_store_free(a);
	free(data);
	free(data2);
	return 0;
}

/* Against fake_gcs.py: mount-time errors, retries, truncation, 200-for-range. */
/* Whether @p holds the fake server's bytes: (i * 7 + 3) & 0xff at each offset i of @n. */
static bool is_served_pattern(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)p[i] != (unsigned char)((i * 7 + 3) & 0xff))
			return false;
	return true;
}

static int faults(const char *endpoint, const char *url)
{
	struct xprofs_gcs_options o = {.endpoint = endpoint,
				       .anonymous = true,
				       .retry_deadline_s = 5,
				       .retry_initial_ms = 10};
	struct xprofs_store *s = NULL;
	char bucket_url[512], *buf = malloc(3 << 20), *want = NULL;
	size_t n = 0;
	int err, r;
	json_t *j;

	r = xprofs_gcs_store_new("gs://no-such-bucket", &o, &s);
	check(r == -ENOENT && !s, "missing bucket: ENOENT at mount (%d)", r);
	r = xprofs_gcs_store_new("gs://forbidden-bucket", &o, &s);
	check(r == -EACCES, "403 at mount: EACCES (%d)", r);
	{
		struct xprofs_gcs_options o2 = o;

		o2.endpoint = "http://127.0.0.1:1";
		o2.retry_deadline_s = 1;
		r = xprofs_gcs_store_new(url, &o2, &s);
		check(r == -ECONNREFUSED, "nothing listening: ECONNREFUSED (%d)", r);
	}
	r = xprofs_gcs_store_new(url, &o, &s);
	check(r == 0, "store over the fault server (listing paginated, with 503s): %d", r);
	if (r < 0)
		return 1;
	/* the server's objects: "obj-N" of N KiB-ish of a known pattern, names from its listing */
	snprintf(bucket_url, sizeof(bucket_url), "%s", url);
	{
		struct xprofs_store_stat st;

		check(xprofs_store_stat(s, "many/0999", &st) == 0,
		      "all 3 pages listed (many/0999 present)");
		check(xprofs_store_stat(s, "weird", &st) == -ENOENT,
		      "objects with unusable names are skipped");
	}
	want = store_slurp(s, "full200.bin", 100000, &n, &err);
	check(err == 0 && n == 3000000,
	      "server answering 200 (whole body) to ranges: read %zu bytes, err %d", n, err);
	if (want && err == 0)
		check(is_served_pattern(want, n), "... and the bytes are right at every offset");
	free(want);
	{
		/* the fake's gz.bin: a gzip member of 44000 bytes of a known line */
		const char line[] = "decompress me and the sizes no longer match\n";
		char *gz = store_slurp(s, "gz.bin", 4096, &n, &err);

		check(err == 0 && gz && n > 18 && (unsigned char)gz[0] == 0x1f &&
			      (unsigned char)gz[1] == 0x8b &&
			      memmem(gz, n, line, sizeof(line) - 1) == NULL,
		      "a gzip-encoded object reads as its stored bytes, never decoded (%zu bytes)",
		      n);
		free(gz);
	}
	want = store_slurp(s, "flaky.bin", 1 << 20, &n, &err);
	check(err == 0 && n == 3000000,
	      "truncated bodies, resets and 503s are retried: %zu bytes, err %d", n, err);
	if (want && err == 0)
		check(is_served_pattern(want, n), "... with the right bytes");
	free(want);
	{
		int64_t t0 = xprofs_mono_ns(), t1;
		long long gets0, gets1;

		want = store_slurp(s, "broken.bin", 1 << 20, &n, &err);
		t1 = xprofs_mono_ns();
		check(err == -EIO && t1 - t0 >= 4000000000LL,
		      "an object that always fails: EIO after the 5 s retry deadline (%d, %.1f s)",
		      err, (double)(t1 - t0) / 1e9);
		free(want);
		j = status(s);
		gets0 = counter(j, "requests", "get");
		json_decref(j);
		t0 = xprofs_mono_ns();
		want = store_slurp(s, "broken.bin", 1 << 20, &n, &err);
		t1 = xprofs_mono_ns();
		j = status(s);
		gets1 = counter(j, "requests", "get");
		json_decref(j);
		check(err == -EIO && t1 - t0 < 1000000000LL && gets1 == gets0,
		      "asking again at once fails fast from the remembered failure (%.3f s, %lld "
		      "new GETs)",
		      (double)(t1 - t0) / 1e9, gets1 - gets0);
		free(want);
	}
	{
		struct xprofs_gcs_options o2 = o;
		struct xprofs_store *u = NULL;
		size_t un = 1100000;
		char *ud = malloc(un);

		pattern(ud, un, 7);
		o2.resumable_threshold = 512 * 1024;
		o2.upload_chunk = 256 * 1024;
		check(xprofs_gcs_store_new(url, &o2, &u) == 0,
		      "store with 256 KiB resumable chunks");
		r = u ? put(u, "up/flaky-resumable.bin", XPROFS_STORE_EXCL, ud, un) : -1;
		check(r == 0, "a chunk lost half way: the upload asks the session and resumes (%d)",
		      r);
		check(r == 0 && same_content(u, "up/flaky-resumable.bin", ud, un),
		      "... and the object is complete");
		r = u ? put(u, "up/evil.bin", XPROFS_STORE_EXCL, ud, un) : -1;
		check(r == -EIO,
		      "a session URI on another host is refused, credentials never sent there (%d)",
		      r);
		xprofs_store_free(u);
		free(ud);
	}
	j = status(s);
	check(j && counter(j, NULL, "retries") >= 3, "retries counted (%lld)",
	      counter(j, NULL, "retries"));
	json_decref(j);
	xprofs_store_free(s);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	int r;

	if (getenv("XPROFS_DEBUG"))
		xprofs_log_set_level(XPROFS_LOG_DEBUG);
	/* libcurl's global state belongs to the program, not to the library */
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return 1;
	if (argc >= 4 && strcmp(argv[1], "--faults") == 0)
		r = faults(argv[2], argv[3]);
	else if (argc >= 4)
		r = full(argv[1], argv[2], argv[3], argc > 4 ? argv[4] : NULL);
	else {
		fprintf(stderr,
			"usage: %s ENDPOINT gs://B/P LOCAL [CACHE] | --faults ENDPOINT gs://B/P\n",
			argv[0]);
		curl_global_cleanup();
		return 2;
	}
	curl_global_cleanup();
	printf("1..%d\n", tap_n);
	return r || tap_fail ? 1 : 0;
}
