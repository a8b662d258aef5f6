/*
 * fs/memo.c - what the mount remembers about its generated files between
 * opens: the size of each rendered file (so getattr can report it without
 * a render), the errors of each host (the text of its errors file) and a
 * few facts about each profile version that lookups need without a render
 * (a GPU plane or none: kernels.json; the step count: steps/<n>). No FUSE
 * here.
 *
 * Design: small fixed tables in ctx->views (fs-internal.h), keyed by a hash
 * of what they are about; a new entry replaces whatever shared its slot
 * (sizes, facts) or the oldest host (errors), so memory is bounded and a
 * forgotten size or fact only costs a cache peek, a count or an index. The
 * errors file describes the current state: one entry per failing file with
 * its latest reason and time, removed when that file is made; entries name
 * the profile version they are about, so a replaced profile starts with an
 * empty errors file.
 *
 * Locks: ctx->views.lock, held only around the table accesses (never while
 * logging).
 *
 * Limits: FS_SIZES sizes, FS_FACTS profile versions, FS_ERRHOSTS hosts x
 * FS_ERRENTS entries or FS_ERRMAX bytes of errors (a reason is cut at
 * FS_ERRMAX / 8 bytes).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs-internal.h"

uint64_t fs_version_key(const char *path, const struct xprofs_store_stat *st, const char *what)
{
	uint64_t v[4] = {xprofs_hash64(path, strlen(path)), st->size, (uint64_t)st->mtime_ns,
			 st->generation};
	uint64_t h = xprofs_hash64(v, sizeof(v));

	v[0] = h;
	v[1] = xprofs_hash64(what, strlen(what));
	return xprofs_hash64(v, 2 * sizeof(v[0])) | 1; /* never 0 */
}

bool fs_size_lookup(struct fs_ctx *ctx, uint64_t key, uint64_t *size)
{
	struct fs_views *v = &ctx->views;
	size_t i = key % FS_SIZES;
	bool found;

	pthread_mutex_lock(&v->lock);
	found = v->sizes_key[i] == key;
	if (found)
		*size = v->sizes_val[i];
	pthread_mutex_unlock(&v->lock);
	return found;
}

void fs_size_store(struct fs_ctx *ctx, uint64_t key, uint64_t size)
{
	struct fs_views *v = &ctx->views;
	size_t i = key % FS_SIZES;

	pthread_mutex_lock(&v->lock);
	v->sizes_key[i] = key;
	v->sizes_val[i] = size;
	pthread_mutex_unlock(&v->lock);
}

/*
 * Error notes: per host, one entry per file that failed (what), holding its
 * latest reason and time; the entry leaves when that file is made. So the
 * errors file says what fails now, not what ever failed. Entries belong to
 * one profile version: a note about another version drops them all.
 */
#define ERRMSG_MAX (FS_ERRMAX / 8) /* bytes of one reason; longer ones are cut */

static struct fs_errors *errors_find(struct fs_views *v, const char *hpath)
{
	for (size_t i = 0; i < FS_ERRHOSTS; i++)
		if (v->errors[i].path && !strcmp(v->errors[i].path, hpath))
			return &v->errors[i];
	return NULL;
}

static void ent_drop(struct fs_errors *e, size_t i)
{
	e->bytes -= strlen(e->ents[i].what) + strlen(e->ents[i].msg);
	free(e->ents[i].what);
	free(e->ents[i].msg);
	memmove(&e->ents[i], &e->ents[i + 1], (e->n - i - 1) * sizeof(e->ents[0]));
	e->n--;
}

static void errors_reset(struct fs_errors *e)
{
	while (e->n)
		ent_drop(e, e->n - 1);
}

/* msg_line() - @msg as one line of at most ERRMSG_MAX bytes; caller frees. NULL: no memory. */
static char *msg_line(const char *msg)
{
	char *m = strndup(msg, ERRMSG_MAX);

	for (char *c = m; c && *c; c++)
		if (*c == '\n' || *c == '\r')
			*c = ' ';
	return m;
}

void fs_error_note(struct fs_ctx *ctx, const char *hpath, const struct xprofs_store_stat *st,
		   const char *what, const char *msg)
{
	struct fs_views *v = &ctx->views;
	uint64_t ver = st ? fs_version_key(hpath, st, "errors") : 0;
	char *m = msg_line(msg), *w = strdup(what);
	struct fs_errors *e;
	bool changed = true;
	size_t i;

	pthread_mutex_lock(&v->lock);
	if (!m || !w)
		goto out;
	e = errors_find(v, hpath);
	if (!e) {
		e = &v->errors[v->errors_next];
		v->errors_next = (v->errors_next + 1) % FS_ERRHOSTS;
		errors_reset(e);
		free(e->path);
		e->path = strdup(hpath);
		if (!e->path)
			goto out;
	}
	if (e->ver != ver)
		errors_reset(e);
	e->ver = ver;
	for (i = 0; i < e->n && strcmp(e->ents[i].what, what); i++)
		;
	if (i < e->n) { /* failing again: the latest reason and time */
		changed = strcmp(e->ents[i].msg, m) != 0;
		e->bytes += strlen(m) - strlen(e->ents[i].msg);
		free(e->ents[i].msg);
		e->ents[i].msg = m;
		m = NULL;
	} else {
		if (e->n == FS_ERRENTS)
			ent_drop(e, 0);
		i = e->n++;
		e->ents[i].what = w;
		e->ents[i].msg = m;
		e->bytes += strlen(w) + strlen(m);
		w = m = NULL;
	}
	e->ents[i].when_ns = xprofs_now_ns();
	while (e->bytes > FS_ERRMAX && e->n > 1) /* the oldest failures go first */
		ent_drop(e, 0);
out:
	pthread_mutex_unlock(&v->lock);
	if (changed)
		xprofs_err("%s: %s: %s", hpath, what, msg);
	free(m);
	free(w);
}

void fs_error_clear(struct fs_ctx *ctx, const char *hpath, const struct xprofs_store_stat *st,
		    const char *what)
{
	struct fs_views *v = &ctx->views;
	uint64_t ver = st ? fs_version_key(hpath, st, "errors") : 0;
	struct fs_errors *e;
	bool gone = false;

	pthread_mutex_lock(&v->lock);
	e = errors_find(v, hpath);
	for (size_t i = 0; e && e->ver == ver && i < e->n; i++) {
		if (!strcmp(e->ents[i].what, what)) {
			ent_drop(e, i);
			gone = true;
			break;
		}
	}
	pthread_mutex_unlock(&v->lock);
	if (gone)
		xprofs_info("%s: %s: made now, no longer in errors", hpath, what);
}

int fs_errors_snapshot(struct fs_ctx *ctx, const char *hpath, const struct xprofs_store_stat *st,
		       struct xprofs_buf *out)
{
	struct fs_views *v = &ctx->views;
	uint64_t ver = fs_version_key(hpath, st, "errors");
	struct fs_errors *e;
	int r = 0;

	pthread_mutex_lock(&v->lock);
	e = errors_find(v, hpath);
	for (size_t i = 0; r == 0 && e && e->ver == ver && i < e->n; i++) {
		time_t sec = (time_t)(e->ents[i].when_ns / 1000000000);
		char when[32];
		struct tm tm;

		if (!gmtime_r(&sec, &tm) ||
		    !strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm))
			snprintf(when, sizeof(when), "%lld", (long long)sec);
		r = xprofs_buf_printf(out, "%s %s: %s\n", when, e->ents[i].what, e->ents[i].msg);
	}
	pthread_mutex_unlock(&v->lock);
	return r;
}

/*
 * Facts: one slot per profile version (direct-mapped by key): a version that
 * lost its slot is only learnt again, at the cost of an index or a count.
 */
static struct fs_facts *facts_slot(struct fs_views *v, uint64_t key)
{
	struct fs_facts *f = &v->facts[key % FS_FACTS];

	if (f->key != key)
		*f = (struct fs_facts){.key = key, .gpu = -1};
	return f;
}

void fs_facts_get(struct fs_ctx *ctx, const char *hpath, const struct xprofs_store_stat *st,
		  struct fs_facts *f)
{
	struct fs_views *v = &ctx->views;
	uint64_t key = fs_version_key(hpath, st, "facts");
	const struct fs_facts *s = &v->facts[key % FS_FACTS];

	pthread_mutex_lock(&v->lock);
	*f = s->key == key ? *s : (struct fs_facts){.key = key, .gpu = -1};
	pthread_mutex_unlock(&v->lock);
}

void fs_facts_set_gpu(struct fs_ctx *ctx, const char *hpath, const struct xprofs_store_stat *st,
		      int gpu)
{
	struct fs_views *v = &ctx->views;
	uint64_t key = fs_version_key(hpath, st, "facts");

	pthread_mutex_lock(&v->lock);
	facts_slot(v, key)->gpu = gpu;
	pthread_mutex_unlock(&v->lock);
}

void fs_facts_set_steps(struct fs_ctx *ctx, const char *hpath, const struct xprofs_store_stat *st,
			size_t n)
{
	struct fs_views *v = &ctx->views;
	uint64_t key = fs_version_key(hpath, st, "facts");
	struct fs_facts *f;

	pthread_mutex_lock(&v->lock);
	f = facts_slot(v, key);
	f->steps = n;
	f->steps_known = true;
	pthread_mutex_unlock(&v->lock);
}

void fs_memo_free(struct fs_views *v)
{
	for (size_t i = 0; i < FS_ERRHOSTS; i++) {
		errors_reset(&v->errors[i]);
		free(v->errors[i].path);
		v->errors[i].path = NULL;
	}
}
