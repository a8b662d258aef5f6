/*
 * cache.c - placeholder: every entry point of include/xprofs/cache.h, always a
 * miss, so other modules can link while the real cache is written.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "xprofs/cache.h"

struct xprofs_cache {
	char *dir;
	struct xprofs_cache_stats st;
};

int xprofs_cache_new(const char *dir, uint64_t max_bytes, struct xprofs_cache **out)
{
	struct xprofs_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->dir = strdup(dir);
	if (!c->dir) {
		free(c);
		return -ENOMEM;
	}
	*out = c;
	return 0;
}

struct xprofs_cache *xprofs_cache_free(struct xprofs_cache *c)
{
	if (c) {
		free(c->dir);
		free(c);
	}
	return NULL;
}

const char *xprofs_cache_dir(const struct xprofs_cache *c)
{
	return c->dir;
}

int xprofs_cache_writer_new(struct xprofs_cache *c, const void *key, size_t keylen,
			    struct xprofs_cache_writer **out)
{
	return -ENOSYS;
}

int xprofs_cache_writer_write(struct xprofs_cache_writer *w, const void *p, size_t n)
{
	return -ENOSYS;
}

static int stub_sink_write(void *arg, const void *p, size_t n)
{
	return -ENOSYS;
}

struct xprofs_sink xprofs_cache_writer_sink(struct xprofs_cache_writer *w)
{
	return (struct xprofs_sink){.write = stub_sink_write, .arg = w};
}

int xprofs_cache_writer_commit(struct xprofs_cache_writer *w)
{
	return -ENOSYS;
}

void xprofs_cache_writer_abort(struct xprofs_cache_writer *w)
{
}

int xprofs_cache_open(struct xprofs_cache *c, const void *key, size_t keylen,
		      struct xprofs_cache_entry **out)
{
	c->st.misses++;
	return -ENOENT;
}

uint64_t xprofs_cache_entry_size(const struct xprofs_cache_entry *e)
{
	return 0;
}

ssize_t xprofs_cache_entry_pread(struct xprofs_cache_entry *e, void *buf, size_t n, uint64_t off)
{
	return -EIO;
}

struct xprofs_reader xprofs_cache_entry_reader(struct xprofs_cache_entry *e)
{
	return (struct xprofs_reader){.pread = NULL, .arg = e, .size = 0, .data = NULL};
}

void xprofs_cache_entry_close(struct xprofs_cache_entry *e)
{
}

int xprofs_cache_remove(struct xprofs_cache *c, const void *key, size_t keylen)
{
	return -ENOENT;
}

void xprofs_cache_get_stats(struct xprofs_cache *c, struct xprofs_cache_stats *st)
{
	*st = c->st;
}
