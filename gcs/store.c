/*
 * gcs/store.c - the GCS store backend: struct xprofs_store over
 * "gs://BUCKET[/PREFIX]" through the JSON API.
 *
 * Namespace: one flat, paginated listing of PREFIX/ (no delimiter, fields
 * projected, 1000 items a page) builds the in-memory tree (tree.c) at mount;
 * stat() and list() are answered from it. When the tree is older than
 * list_ttl_s a background thread relists (readers keep the old tree
 * meanwhile); xprofs_store_refresh() relists synchronously. Mutations made
 * through the store update the tree at once and are journaled while a
 * listing is running, so a refresh that started before them cannot lose them.
 *
 * Reads: open() pins the generation and size from the tree. Data moves in
 * 1 MiB blocks through a per-store table of blocks (single-flight: the first
 * reader of a block fetches it, concurrent readers of the same block wait
 * for that fetch), an LRU of ready blocks bounded by block_mem_max, and the
 * optional shared lz4 cache (key: bucket/object/generation/block). A reader
 * that keeps reading sequentially doubles its read-ahead window from 1 to 16
 * blocks, and a prefetch thread keeps 16-32 blocks ahead of it; fetches of 4
 * blocks or more are split into parallel ranged GETs that write straight
 * into the block buffers and publish each block as soon as it has arrived
 * (a reader consumes a GET while it streams). Blocks a sequential reader has
 * finished are evicted first; fetched blocks go to the disk cache from a
 * writer thread (a short queue; when it is full a block is not cached).
 * Memory is bounded by block_mem_max: idle cached blocks are evicted to make
 * room, and when loading or referenced blocks fill it a miss fetches a
 * single block and the prefetcher pauses.
 *
 * Writes: create() spools into an unlinked temporary file ($TMPDIR or /tmp);
 * flush()/commit() upload it (media upload up to resumable_threshold, else a
 * resumable session in upload_chunk pieces that resumes from the committed
 * offset after a failed chunk). Every upload carries ifGenerationMatch (0
 * for a new object, else the generation it replaces), which makes it safe to
 * retry and makes XPROFS_STORE_EXCL atomic (412 -> -EEXIST).
 *
 * Limits: directory renames are -EXDEV (callers copy); a directory exists as
 * long as objects below it exist (or it was mkdir'ed in this mount, or has a
 * "dir/" placeholder object).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gcs-internal.h"

#define BLOCK_SIZE (1u << 20)
#define WINDOW_MAX 16
#define PREFETCH_BLOCKS 16   /* one prefetch job: 16 MiB as PARALLEL_MAX streaming GETs */
#define BLK_RUN_MAX 32       /* blocks of one fetch: >= WINDOW_MAX, PREFETCH_BLOCKS */
#define PREFETCH_AHEAD 32    /* blocks: a job starts when a missing block is this close */
#define DW_MAX 8             /* fetched blocks queued for the disk cache (pinned in memory) */
#define PARALLEL_MIN 4       /* blocks: split a fetch this large into parallel GETs */
#define PARALLEL_MAX 4       /* ranged GETs at once for one fetch */
#define BLK_SLOTS 4096
#define CHUNK_ALIGN (256u << 10)
#define RESUME_MAX 20        /* failed chunks before a resumable upload gives up */
#define NEG_TTL_NS (10LL * 1000000000LL) /* how long a failed block fetch is remembered */

enum { BLK_LOADING, BLK_READY };

struct blk {
	char *obj;
	uint64_t gen, idx, hash;
	int state;
	int err;
	uint8_t *data;
	size_t len;
	unsigned refs;
	bool in_table;
	bool fetched;      /* came from GCS: goes to the disk cache once published */
	bool published;    /* made ready by the streaming GET before its fetch ended */
	int64_t err_until; /* a failed block answers its error until then (mono ns) */
	struct blk *hnext;
	struct blk *lru_prev, *lru_next;
};

enum { J_ADD_FILE, J_REMOVE, J_ADD_DIR };

struct journal {
	int op;
	char *path;
	struct xprofs_store_stat st;
	struct journal *next;
};

struct gcs_store {
	struct xprofs_store base;
	char *bucket, *prefix, *endpoint;
	struct xprofs_gcs_options o; /* pointers in it are not kept, except cache */
	struct gcs_auth *auth;
	struct gcs_http http;
	struct gcs_counters ctr;
	const char *tmpdir;

	pthread_rwlock_t tree_lock;
	struct gcs_tree *tree;        /* protected by tree_lock */
	int64_t tree_time;                   /* mono ns when its listing began; protected by tree_lock */
	bool journaling;                     /* protected by tree_lock */
	struct journal *journal, **journal_tail; /* protected by tree_lock */

	pthread_mutex_t list_lock;           /* one listing at a time */
	atomic_uint_fast64_t listings, last_list_ms, skipped;

	pthread_mutex_t bg_lock;
	pthread_cond_t bg_cond;
	bool bg_want, bg_stop;               /* protected by bg_lock */
	bool bg_started;
	pthread_t bg;
	pthread_cond_t pf_cond;              /* prefetch jobs queued */
	struct prefetch *pf_head;            /* protected by bg_lock */
	unsigned pf_len;                     /* protected by bg_lock */
	bool pf_started;
	pthread_t pf;
	pthread_cond_t dw_cond;              /* blocks queued for the disk cache */
	pthread_cond_t dw_room;              /* the queue has room again */
	struct blk *dw_q[DW_MAX];            /* ring; each holds a block reference; protected by bg_lock */
	unsigned dw_head, dw_len;            /* protected by bg_lock */
	bool dw_started;
	pthread_t dw;

	pthread_mutex_t w_lock;
	struct gcs_writer *writers;          /* open writers; protected by w_lock */

	pthread_mutex_t blk_lock;
	pthread_cond_t blk_cond;
	struct blk *blk_slots[BLK_SLOTS];    /* protected by blk_lock */
	struct blk lru;                      /* sentinel; protected by blk_lock */
	uint64_t blk_mem;                    /* protected by blk_lock */
};

struct gcs_file {
	struct xprofs_store_file base;
	struct gcs_store *s;
	char *obj;
	struct xprofs_store_stat st;
	pthread_mutex_t lock;
	uint64_t next_off; /* protected by lock */
	unsigned window;   /* blocks; protected by lock */
};

struct gcs_writer {
	struct xprofs_store_writer base;
	struct gcs_store *s;
	char *path, *obj;
	int fd;
	pthread_mutex_t lock;
	uint64_t size;     /* protected by lock */
	uint64_t if_gen;   /* precondition of the next upload; protected by lock */
	bool excl, dirty;  /* protected by lock */
	int64_t mtime_ns;  /* protected by lock */
	struct gcs_writer *wprev, *wnext; /* in s->writers; protected by s->w_lock */
};

/* ---- names and URLs ---------------------------------------------------- */

/* The object name of store path @path (caller owns; free()). */
static char *object_name(struct gcs_store *s, const char *path, const char *suffix)
{
	char *n = NULL;

	if (asprintf(&n, "%s%s%s%s", s->prefix, s->prefix[0] && path[0] ? "/" : "", path, suffix) < 0)
		return NULL;
	if (strlen(n) > GCS_NAME_MAX) {
		free(n);
		return NULL;
	}
	return n;
}

/* @out = endpoint + "/" + @api + "/b/BUCKET/o[/OBJECT]" */
static int url_object(struct gcs_store *s, struct xprofs_buf *out, const char *api, const char *obj)
{
	int r;

	xprofs_buf_reset(out);
	if ((r = xprofs_buf_printf(out, "%s/%s/b/", s->endpoint, api)) < 0 ||
	    (r = gcs_pct_encode(out, s->bucket, strlen(s->bucket))) < 0 ||
	    (r = xprofs_buf_adds(out, "/o")) < 0)
		return r;
	if (obj && ((r = xprofs_buf_adds(out, "/")) < 0 || (r = gcs_pct_encode(out, obj, strlen(obj))) < 0))
		return r;
	return 0;
}

static int url_param(struct xprofs_buf *out, const char *key, const char *val)
{
	int r;

	if ((r = xprofs_buf_printf(out, "%c%s=", strchr(out->data, '?') ? '&' : '?', key)) < 0)
		return r;
	return gcs_pct_encode(out, val, strlen(val));
}

static int url_param_u64(struct xprofs_buf *out, const char *key, uint64_t v)
{
	char tmp[24];

	snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)v);
	return url_param(out, key, tmp);
}

/* What a failed answer means for a store call, logged once here. */
static int status_errno(struct gcs_store *s, const struct gcs_req *rq, const char *what)
{
	int r = gcs_http_errno(rq->status, 0);

	if (rq->status >= 400)
		xprofs_debug("gcs: %s: HTTP %ld %s", what, rq->status, rq->errmsg);
	if (r == 0 && (rq->status < 200 || rq->status >= 300))
		r = -EIO; /* 1xx/3xx we did not ask for */
	return r;
}

/*
 * What a read or an upload that exhausted its retries reports to the
 * application: transport trouble (timeouts, resets, refused connections,
 * 429s) is EIO, as for a failing disk; the cause goes to the log. Errors with
 * a meaning of their own (ESTALE, EACCES, ENOENT, EEXIST, ...) pass through.
 */
static int data_errno(struct gcs_store *s, int r, const char *obj)
{
	switch (r) {
	case -ETIMEDOUT:
	case -ECONNRESET:
	case -ECONNREFUSED:
	case -EHOSTUNREACH:
	case -EAGAIN:
	case -EPROTO:
		xprofs_err("gcs: gs://%s/%s: %s after retries", s->bucket, obj, strerror(-r));
		return -EIO;
	default:
		return r;
	}
}

/* ---- tree and refresh -------------------------------------------------- */

static void journal_free(struct gcs_store *s)
{
	struct journal *j, *n;

	for (j = s->journal; j; j = n) {
		n = j->next;
		free(j->path);
		free(j);
	}
	s->journal = NULL;
	s->journal_tail = &s->journal;
}

static int tree_do(struct gcs_tree *t, int op, const char *path, const struct xprofs_store_stat *st)
{
	switch (op) {
	case J_ADD_FILE:
		return gcs_tree_add_file(t, path, st);
	case J_REMOVE:
		return gcs_tree_remove(t, path);
	default:
		return gcs_tree_add_dir(t, path, true);
	}
}

/* Apply a mutation made through the store to the live tree (and the journal). */
static int tree_apply(struct gcs_store *s, int op, const char *path, const struct xprofs_store_stat *st)
{
	int r;

	pthread_rwlock_wrlock(&s->tree_lock);
	r = tree_do(s->tree, op, path, st);
	if (s->journaling) {
		struct journal *j = calloc(1, sizeof(*j));

		if (j && (j->path = strdup(path))) {
			j->op = op;
			if (st)
				j->st = *st;
			*s->journal_tail = j;
			s->journal_tail = &j->next;
		} else {
			free(j);
			s->tree_time = 0; /* cannot journal: make the next access relist */
		}
	}
	pthread_rwlock_unlock(&s->tree_lock);
	return r;
}

struct list_ctx {
	struct gcs_store *s;
	struct gcs_tree *t;
	size_t plen; /* listing prefix length, "PREFIX/" */
	uint64_t objects, skipped;
	char path[GCS_NAME_MAX + 1];
};

static int list_item(void *arg, const struct gcs_item *it)
{
	struct list_ctx *c = arg;
	struct xprofs_store_stat st = {.type = XPROFS_STORE_FILE};
	size_t n;
	int r;

	if (it->name_len < c->plen || memcmp(it->name, c->s->prefix, c->plen ? c->plen - 1 : 0) != 0 ||
	    it->name_len == c->plen) {
		c->skipped++; /* the "PREFIX/" placeholder itself, or not ours */
		return 0;
	}
	n = it->name_len - c->plen;
	memcpy(c->path, it->name + c->plen, n);
	c->path[n] = '\0';
	c->objects++;
	if (c->path[n - 1] == '/') {
		c->path[n - 1] = '\0'; /* a "dir/" placeholder */
		if (!xprofs_store_path_valid(c->path)) {
			c->skipped++;
			return 0;
		}
		r = gcs_tree_add_dir(c->t, c->path, false);
	} else {
		if (!xprofs_store_path_valid(c->path)) {
			xprofs_debug("gcs: skipping object '%s': not a usable path", it->name);
			c->skipped++;
			return 0;
		}
		st.size = it->size;
		st.generation = it->generation;
		st.mtime_ns = it->mtime_ns;
		r = gcs_tree_add_file(c->t, c->path, &st);
	}
	if (r == -EEXIST) {
		c->skipped++;
		r = 0;
	}
	return r;
}

/* One full listing of the prefix into a new tree (caller owns *@out). */
static int list_all(struct gcs_store *s, struct gcs_tree **out)
{
	struct list_ctx c = {.s = s};
	struct xprofs_buf url, page;
	char *token = NULL, *lprefix = NULL;
	unsigned skipped;
	int r;

	xprofs_buf_init(&url, GCS_URL_MAX);
	xprofs_buf_init(&page, GCS_PAGE_MAX);
	r = gcs_tree_new(&c.t);
	if (r < 0)
		goto out;
	if (asprintf(&lprefix, "%s%s", s->prefix, s->prefix[0] ? "/" : "") < 0) {
		lprefix = NULL;
		r = -ENOMEM;
		goto out;
	}
	c.plen = strlen(lprefix);
	do {
		struct gcs_req rq = {.kind = GCS_REQ_LIST, .method = "GET", .idempotent = true};

		if ((r = url_object(s, &url, "storage/v1", NULL)) < 0 ||
		    (lprefix[0] && (r = url_param(&url, "prefix", lprefix)) < 0) ||
		    (r = url_param(&url, "fields", "items(name,size,generation,updated),nextPageToken")) < 0 ||
		    (r = url_param(&url, "prettyPrint", "false")) < 0 ||
		    (r = url_param(&url, "maxResults", "1000")) < 0 ||
		    (token && (r = url_param(&url, "pageToken", token)) < 0))
			goto out;
		free(token);
		token = NULL;
		rq.url = url.data;
		rq.resp = &page;
		r = gcs_http_do(&s->http, &rq);
		if (r < 0)
			goto out;
		if (rq.status != 200) {
			r = status_errno(s, &rq, "list");
			if (rq.status == 404)
				xprofs_err("gcs: bucket '%s' does not exist (%s)", s->bucket, rq.errmsg);
			else if (rq.status == 401 || rq.status == 403)
				xprofs_err("gcs: access to gs://%s denied (HTTP %ld: %s); check the credentials",
					   s->bucket, rq.status, rq.errmsg);
			else
				xprofs_err("gcs: listing gs://%s/%s failed: HTTP %ld %s", s->bucket, s->prefix,
					   rq.status, rq.errmsg);
			goto out;
		}
		r = gcs_list_parse(page.data ? page.data : "", page.len, list_item, &c, &token, &skipped);
		c.skipped += skipped;
		if (r < 0) {
			xprofs_err("gcs: listing gs://%s/%s: malformed answer (%s)", s->bucket, s->prefix,
				   strerror(-r));
			goto out;
		}
	} while (token);
	atomic_store(&s->skipped, c.skipped);
	*out = c.t;
	c.t = NULL;
	r = 0;
out:
	free(token);
	free(lprefix);
	gcs_tree_free(c.t);
	xprofs_buf_deinit(&page);
	xprofs_buf_deinit(&url);
	return r;
}

static int refresh_now(struct gcs_store *s)
{
	struct gcs_tree *nt = NULL;
	struct journal *j;
	int64_t start, ms;
	int r;

	pthread_mutex_lock(&s->list_lock);
	pthread_rwlock_wrlock(&s->tree_lock);
	journal_free(s);
	s->journaling = true;
	pthread_rwlock_unlock(&s->tree_lock);

	start = xprofs_mono_ns();
	r = list_all(s, &nt);
	ms = (xprofs_mono_ns() - start) / 1000000;
	atomic_store(&s->last_list_ms, (uint64_t)ms);
	atomic_fetch_add(&s->listings, 1);

	pthread_rwlock_wrlock(&s->tree_lock);
	if (r == 0 && s->tree)
		r = gcs_tree_copy_local_dirs(s->tree, nt);
	if (r == 0) {
		for (j = s->journal; j; j = j->next)
			(void)tree_do(nt, j->op, j->path, &j->st);
		gcs_tree_free(s->tree);
		s->tree = nt;
		nt = NULL;
		s->tree_time = start;
	} else if (s->tree) {
		/* keep serving the old tree; try again in about 5 s, not on every access */
		s->tree_time = xprofs_mono_ns() - (int64_t)s->o.list_ttl_s * 1000000000LL + 5000000000LL;
	}
	s->journaling = false;
	journal_free(s);
	pthread_rwlock_unlock(&s->tree_lock);
	pthread_mutex_unlock(&s->list_lock);
	gcs_tree_free(nt);
	if (r == 0)
		xprofs_debug("gcs: listed gs://%s/%s in %lld ms", s->bucket, s->prefix, (long long)ms);
	return r;
}

static void *bg_main(void *arg)
{
	struct gcs_store *s = arg;

	pthread_mutex_lock(&s->bg_lock);
	while (!s->bg_stop) {
		if (!s->bg_want) {
			pthread_cond_wait(&s->bg_cond, &s->bg_lock);
			continue;
		}
		pthread_mutex_unlock(&s->bg_lock);
		if (refresh_now(s) < 0)
			xprofs_warn("gcs: background relisting of gs://%s/%s failed; keeping the old tree",
				    s->bucket, s->prefix);
		pthread_mutex_lock(&s->bg_lock);
		s->bg_want = false;
	}
	pthread_mutex_unlock(&s->bg_lock);
	return NULL;
}

/* Called with tree_lock held (read): ask for a relisting when the tree is old. */
static void maybe_refresh(struct gcs_store *s)
{
	int64_t ttl = (int64_t)s->o.list_ttl_s * 1000000000LL;

	if (xprofs_mono_ns() - s->tree_time < ttl || !s->bg_started)
		return;
	pthread_mutex_lock(&s->bg_lock);
	if (!s->bg_want) {
		s->bg_want = true;
		pthread_cond_signal(&s->bg_cond);
	}
	pthread_mutex_unlock(&s->bg_lock);
}

/* A file being written through this store looks like what it will become. */
static bool writer_stat(struct gcs_store *s, const char *path, struct xprofs_store_stat *st)
{
	struct gcs_writer *w;
	bool found = false;

	pthread_mutex_lock(&s->w_lock);
	for (w = s->writers; w && !found; w = w->wnext) {
		if (strcmp(w->path, path) != 0)
			continue;
		pthread_mutex_lock(&w->lock);
		st->type = XPROFS_STORE_FILE;
		st->size = w->size;
		st->mtime_ns = w->mtime_ns;
		st->generation = w->if_gen;
		pthread_mutex_unlock(&w->lock);
		found = true;
	}
	pthread_mutex_unlock(&s->w_lock);
	return found;
}

static int tree_stat(struct gcs_store *s, const char *path, struct xprofs_store_stat *st)
{
	int r;

	pthread_rwlock_rdlock(&s->tree_lock);
	maybe_refresh(s);
	r = gcs_tree_stat(s->tree, path, st);
	pthread_rwlock_unlock(&s->tree_lock);
	return r;
}

static int gcs_stat(struct xprofs_store *base, const char *path, struct xprofs_store_stat *st)
{
	struct gcs_store *s = (struct gcs_store *)base;
	int r = tree_stat(s, path, st);

	if ((r == -ENOENT || (r == 0 && st->type == XPROFS_STORE_FILE)) && writer_stat(s, path, st))
		r = 0;
	return r;
}

struct dirent_copy {
	char *name;
	struct xprofs_store_stat st;
};

struct list_copy {
	struct dirent_copy *v;
	size_t n, cap;
};

static int list_copy_cb(void *arg, const char *name, const struct xprofs_store_stat *st)
{
	struct list_copy *l = arg;

	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct dirent_copy *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n].name = strdup(name);
	if (!l->v[l->n].name)
		return -ENOMEM;
	l->v[l->n++].st = *st;
	return 0;
}

static int gcs_list(struct xprofs_store *base, const char *dir, xprofs_store_list_cb cb, void *arg)
{
	struct gcs_store *s = (struct gcs_store *)base;
	struct list_copy l = {0};
	size_t i;
	int r;

	/* copy out, so @cb runs without the tree lock and may call back into the store */
	pthread_rwlock_rdlock(&s->tree_lock);
	maybe_refresh(s);
	r = gcs_tree_list(s->tree, dir, list_copy_cb, &l);
	pthread_rwlock_unlock(&s->tree_lock);
	if (r == 0) {
		/* new files still being written here are listed too */
		size_t dlen = strlen(dir), known = l.n, k;
		struct gcs_writer *w;

		pthread_mutex_lock(&s->w_lock);
		for (w = s->writers; w && r == 0; w = w->wnext) {
			const char *name = w->path + dlen + (dlen ? 1 : 0);
			struct xprofs_store_stat wst = {.type = XPROFS_STORE_FILE};

			if (strncmp(w->path, dir, dlen) != 0 || (dlen && w->path[dlen] != '/') || strchr(name, '/'))
				continue;
			for (k = 0; k < known && strcmp(l.v[k].name, name) != 0; k++)
				;
			if (k < known)
				continue;
			pthread_mutex_lock(&w->lock);
			wst.size = w->size;
			wst.mtime_ns = w->mtime_ns;
			pthread_mutex_unlock(&w->lock);
			r = list_copy_cb(&l, name, &wst);
		}
		pthread_mutex_unlock(&s->w_lock);
	}
	for (i = 0; r == 0 && i < l.n; i++)
		r = cb(arg, l.v[i].name, &l.v[i].st);
	for (i = 0; i < l.n; i++)
		free(l.v[i].name);
	free(l.v);
	return r;
}

static int gcs_refresh(struct xprofs_store *base)
{
	return refresh_now((struct gcs_store *)base);
}

/* ---- reads ----------------------------------------------------------- */

/*
 * One ranged GET of a fetch: [off, off+len) of the pinned version, into @dst
 * or, in block mode, straight into the loading blocks @blocks, each of which
 * is published (made readable) as soon as its last byte has arrived, so a
 * sequential reader consumes a long GET while it streams.
 */
struct part {
	struct gcs_store *s;
	const char *obj;
	uint64_t gen, size, off;
	size_t len;
	uint8_t *dst;
	struct blk **blocks;  /* block mode: consecutive loading blocks covering the range */
	size_t nblocks, published;
	int r;
	pthread_t th;
	bool started;
};

static void part_progress(void *arg, size_t got)
{
	struct part *p = arg;
	size_t done = got >= p->len ? p->nblocks : got / BLOCK_SIZE, i;

	if (done <= p->published)
		return;
	pthread_mutex_lock(&p->s->blk_lock);
	for (i = p->published; i < done; i++) {
		p->blocks[i]->published = true;
		p->blocks[i]->state = BLK_READY;
		/* counted before anyone can read it, like an unstreamed block */
		atomic_fetch_add(&p->s->ctr.block_misses, 1);
	}
	pthread_cond_broadcast(&p->s->blk_cond);
	pthread_mutex_unlock(&p->s->blk_lock);
	p->published = done;
}

static int ranged_get(struct part *p)
{
	struct gcs_store *s = p->s;
	const char *obj = p->obj;
	uint64_t gen = p->gen, size = p->size, off = p->off;
	size_t len = p->len, i;
	uint8_t *dst = p->dst, *ptrs[BLK_RUN_MAX];
	struct gcs_req rq = {.kind = GCS_REQ_GET, .method = "GET", .idempotent = true};
	struct xprofs_buf url;
	int r;

	if (p->blocks) {
		if (p->nblocks == 0 || p->nblocks > BLK_RUN_MAX)
			return -EINVAL;
		for (i = 0; i < p->nblocks; i++)
			ptrs[i] = p->blocks[i]->data;
		dst = ptrs[0];
		rq.dst_blocks = ptrs;
		rq.dst_block_size = BLOCK_SIZE;
		rq.on_progress = part_progress;
		rq.progress_arg = p;
	}

	xprofs_buf_init(&url, GCS_URL_MAX);
	if ((r = url_object(s, &url, "storage/v1", obj)) < 0 || (r = url_param(&url, "alt", "media")) < 0 ||
	    (r = url_param_u64(&url, "generation", gen)) < 0)
		goto out;
	rq.url = url.data;
	rq.headers[0] = "Accept-Encoding: gzip"; /* the stored bytes; transcoding would ignore Range */
	rq.dst = dst;
	rq.dst_len = len;
	rq.range_first = off;
	rq.expect_generation = gen;
	rq.expect_size = size;
	r = gcs_http_do(&s->http, &rq);
	if (r == -ESTALE)
		goto stale;
	if (r < 0)
		goto out;
	if (rq.status == 404 || rq.status == 412 || rq.status == 416)
		goto stale; /* the pinned generation is gone, or the object shrank */
	if (rq.status != 200 && rq.status != 206) {
		r = status_errno(s, &rq, obj);
		goto out;
	}
	if (rq.dst_got != len) {
		r = -EIO;
		goto out;
	}
	r = 0;
	goto out;
stale:
	atomic_fetch_add(&s->ctr.stale, 1);
	xprofs_info("gcs: gs://%s/%s changed (generation %llu gone): ESTALE", s->bucket, obj,
		    (unsigned long long)gen);
	r = -ESTALE;
out:
	xprofs_buf_deinit(&url);
	return data_errno(s, r, obj);
}

static void *part_main(void *arg)
{
	struct part *p = arg;

	p->r = ranged_get(p);
	return NULL;
}

/*
 * [@off, @off+@len) into @dst, or (block mode, @dst NULL) into the loading
 * blocks @blocks covering it, split into parallel ranged GETs when large.
 */
static int fetch_range(struct gcs_store *s, const char *obj, uint64_t gen, uint64_t size, uint64_t off,
		       size_t len, uint8_t *dst, struct blk **blocks)
{
	struct part parts[PARALLEL_MAX];
	size_t nparts = (len + BLOCK_SIZE - 1) / BLOCK_SIZE >= PARALLEL_MIN ? PARALLEL_MAX : 1, per, i;
	int r = 0;

	if (nparts > s->http.max_handles)
		nparts = s->http.max_handles;
	if (nparts < 1)
		nparts = 1;
	per = (len / nparts + BLOCK_SIZE - 1) / BLOCK_SIZE * BLOCK_SIZE;
	memset(parts, 0, sizeof(parts));
	for (i = 0; i < nparts; i++) {
		struct part *p = &parts[i];
		size_t at = i * per;

		if (at >= len)
			break;
		*p = (struct part){.s = s, .obj = obj, .gen = gen, .size = size, .off = off + at,
				   .len = len - at < per ? len - at : per};
		if (blocks) {
			p->blocks = blocks + at / BLOCK_SIZE;
			p->nblocks = (p->len + BLOCK_SIZE - 1) / BLOCK_SIZE;
		} else {
			p->dst = dst + at;
		}
		if (i > 0 && pthread_create(&p->th, NULL, part_main, p) == 0)
			p->started = true;
		else
			part_main(p);
	}
	for (i = 0; i < nparts; i++) {
		if (parts[i].started)
			pthread_join(parts[i].th, NULL);
		if (parts[i].r < 0 && (r == 0 || parts[i].r == -ESTALE))
			r = parts[i].r;
	}
	return r;
}

static size_t cache_key(char *key, size_t n, struct gcs_store *s, const char *obj, uint64_t gen, uint64_t idx)
{
	int k = snprintf(key, n, "gcs%c%s/%s%c%llu%c%llu", 0, s->bucket, obj, 0, (unsigned long long)gen, 0,
			 (unsigned long long)idx);

	return k < 0 || (size_t)k >= n ? 0 : (size_t)k;
}

static bool disk_get(struct gcs_store *s, struct blk *b, size_t len)
{
	char key[GCS_NAME_MAX + 512];
	size_t klen = cache_key(key, sizeof(key), s, b->obj, b->gen, b->idx);
	struct xprofs_cache_entry *e = NULL;
	bool ok = false;

	if (!s->o.cache || !klen || xprofs_cache_open(s->o.cache, key, klen, &e) < 0)
		return false;
	if (xprofs_cache_entry_size(e) == len && xprofs_cache_entry_pread(e, b->data, len, 0) == (ssize_t)len)
		ok = true;
	xprofs_cache_entry_close(e);
	return ok;
}

static void disk_put(struct gcs_store *s, struct blk *b)
{
	char key[GCS_NAME_MAX + 512];
	size_t klen = cache_key(key, sizeof(key), s, b->obj, b->gen, b->idx);
	struct xprofs_cache_writer *w = NULL;

	if (!s->o.cache || !klen || xprofs_cache_writer_new(s->o.cache, key, klen, &w) < 0)
		return;
	if (xprofs_cache_writer_write(w, b->data, b->len) < 0) {
		xprofs_cache_writer_abort(w);
		return;
	}
	(void)xprofs_cache_writer_commit(w);
}

static uint64_t blk_hash(const char *obj, uint64_t gen, uint64_t idx)
{
	uint64_t h = xprofs_hash64(obj, strlen(obj));

	return h ^ (gen * 0x9e3779b97f4a7c15ULL) ^ (idx * 0xff51afd7ed558ccdULL);
}

/* blk_lock held */
static struct blk *blk_find(struct gcs_store *s, const char *obj, uint64_t gen, uint64_t idx)
{
	uint64_t h = blk_hash(obj, gen, idx);
	struct blk *b;

	for (b = s->blk_slots[h % BLK_SLOTS]; b; b = b->hnext)
		if (b->hash == h && b->gen == gen && b->idx == idx && strcmp(b->obj, obj) == 0)
			return b;
	return NULL;
}

static void lru_del(struct blk *b)
{
	if (b->lru_next) {
		b->lru_prev->lru_next = b->lru_next;
		b->lru_next->lru_prev = b->lru_prev;
		b->lru_prev = b->lru_next = NULL;
	}
}

static void lru_push(struct gcs_store *s, struct blk *b)
{
	lru_del(b);
	b->lru_next = s->lru.lru_next;
	b->lru_prev = &s->lru;
	s->lru.lru_next->lru_prev = b;
	s->lru.lru_next = b;
}

/* The other end: the next block to evict. */
static void lru_push_oldest(struct gcs_store *s, struct blk *b)
{
	lru_del(b);
	b->lru_prev = s->lru.lru_prev;
	b->lru_next = &s->lru;
	s->lru.lru_prev->lru_next = b;
	s->lru.lru_prev = b;
}

static void blk_table_del(struct gcs_store *s, struct blk *b)
{
	struct blk **pp = &s->blk_slots[b->hash % BLK_SLOTS];

	if (!b->in_table)
		return;
	while (*pp != b)
		pp = &(*pp)->hnext;
	*pp = b->hnext;
	b->in_table = false;
	lru_del(b);
}

static void blk_destroy(struct gcs_store *s, struct blk *b)
{
	if (b->data)
		s->blk_mem -= BLOCK_SIZE;
	free(b->data);
	free(b->obj);
	free(b);
}

/* blk_lock held */
static void blk_unref(struct gcs_store *s, struct blk *b)
{
	if (--b->refs == 0 && !b->in_table)
		blk_destroy(s, b);
}

/*
 * blk_lock held: drop unused ready blocks, oldest first, until @need more
 * bytes fit in the budget. Returns whether they fit: blocks that are loading
 * or referenced cannot be dropped, and only they make the budget "full"
 * (counting idle cached blocks as used would turn read-ahead off for good
 * once the cache has filled, one 1 MiB GET per block from then on).
 */
static bool blk_make_room(struct gcs_store *s, uint64_t need)
{
	struct blk *b = s->lru.lru_prev, *p;

	for (; b != &s->lru && s->blk_mem + need > s->o.block_mem_max; b = p) {
		p = b->lru_prev;
		if (b->refs == 0) {
			blk_table_del(s, b);
			blk_destroy(s, b);
		}
	}
	return s->blk_mem + need <= s->o.block_mem_max;
}

/* blk_lock held: drop unused ready blocks, oldest first, until under budget. */
static void blk_evict(struct gcs_store *s)
{
	(void)blk_make_room(s, 0);
}

/* Fill the loading blocks @v[0..@n) (consecutive indices) from the disk cache or GCS. */
static void blk_load(struct gcs_store *s, struct gcs_file *f, struct blk **v, size_t n)
{
	size_t i = 0, j, k;

	while (i < n) {
		uint64_t off = v[i]->idx * BLOCK_SIZE;
		size_t len = f->st.size - off < BLOCK_SIZE ? (size_t)(f->st.size - off) : BLOCK_SIZE;

		v[i]->len = len;
		if (disk_get(s, v[i], len)) {
			atomic_fetch_add(&s->ctr.block_disk_hits, 1);
			i++;
			continue;
		}
		/* a run of blocks missing from the disk cache: one fetch */
		for (j = i + 1; j < n; j++) {
			uint64_t o2 = v[j]->idx * BLOCK_SIZE;

			v[j]->len = f->st.size - o2 < BLOCK_SIZE ? (size_t)(f->st.size - o2) : BLOCK_SIZE;
			if (disk_get(s, v[j], v[j]->len))
				break;
		}
		/* blocks i..j-1 go over the network, straight into their buffers; j (if < n) came from disk */
		{
			size_t total = 0;
			int r;

			for (k = i; k < j; k++)
				total += v[k]->len;
			r = fetch_range(s, f->obj, f->st.generation, f->st.size, off, total, NULL, v + i);
			for (k = i; k < j; k++) {
				/* a block published while streaming is good even if a later part failed */
				if (r < 0 && !v[k]->published) {
					v[k]->err = r;
					continue;
				}
				if (!v[k]->published)
					atomic_fetch_add(&s->ctr.block_misses, 1);
				v[k]->fetched = true;
			}
		}
		if (j < n)
			atomic_fetch_add(&s->ctr.block_disk_hits, 1);
		i = j + 1;
	}
}

/*
 * blk_lock held: create loading entries for the missing blocks @idx.. (up to
 * @window, stopping at the first one present or at the end), each holding
 * the loader's reference. Returns how many went into @v.
 */
static size_t blk_claim(struct gcs_store *s, struct gcs_file *f, uint64_t idx, unsigned window, struct blk **v)
{
	uint64_t nblocks = (f->st.size + BLOCK_SIZE - 1) / BLOCK_SIZE;
	size_t n = 0, i;

	for (i = 0; i < window && idx + i < nblocks; i++) {
		struct blk *nb;

		if (blk_find(s, f->obj, f->st.generation, idx + i))
			break;
		nb = calloc(1, sizeof(*nb));
		if (nb && !(nb->obj = strdup(f->obj))) {
			free(nb);
			nb = NULL;
		}
		if (nb && !(nb->data = malloc(BLOCK_SIZE))) {
			free(nb->obj);
			free(nb);
			nb = NULL;
		}
		if (!nb)
			break;
		nb->gen = f->st.generation;
		nb->idx = idx + i;
		nb->hash = blk_hash(f->obj, nb->gen, nb->idx);
		nb->state = BLK_LOADING;
		nb->refs = 1; /* the loader's */
		nb->in_table = true;
		nb->hnext = s->blk_slots[nb->hash % BLK_SLOTS];
		s->blk_slots[nb->hash % BLK_SLOTS] = nb;
		s->blk_mem += BLOCK_SIZE;
		v[n++] = nb;
	}
	return n;
}

/*
 * The disk-cache writer: lz4 compression and file I/O of fetched blocks run
 * on their own thread, after the blocks were published, so readers do not
 * wait for them and the next fetch overlaps them. The queue is short (it
 * pins its blocks in the memory budget); a loader that finds it full waits
 * for room, so a disk slower than the network slows fetching down instead
 * of leaving blocks out of the cache.
 */
static bool dw_push(struct gcs_store *s, struct blk *b)
{
	bool ok = false;

	pthread_mutex_lock(&s->bg_lock);
	while (s->dw_started && !s->bg_stop && s->dw_len >= DW_MAX)
		pthread_cond_wait(&s->dw_room, &s->bg_lock);
	if (s->dw_started && !s->bg_stop && s->dw_len < DW_MAX) {
		s->dw_q[(s->dw_head + s->dw_len++) % DW_MAX] = b;
		pthread_cond_signal(&s->dw_cond);
		ok = true;
	}
	pthread_mutex_unlock(&s->bg_lock);
	return ok;
}

static void *dw_main(void *arg)
{
	struct gcs_store *s = arg;

	pthread_mutex_lock(&s->bg_lock);
	for (;;) {
		struct blk *b;
		bool stop = s->bg_stop;

		if (!s->dw_len) {
			if (stop)
				break;
			pthread_cond_wait(&s->dw_cond, &s->bg_lock);
			continue;
		}
		b = s->dw_q[s->dw_head];
		s->dw_head = (s->dw_head + 1) % DW_MAX;
		s->dw_len--;
		pthread_cond_signal(&s->dw_room);
		pthread_mutex_unlock(&s->bg_lock);
		disk_put(s, b); /* at unmount too: the queue is short */
		pthread_mutex_lock(&s->blk_lock);
		blk_unref(s, b);
		blk_evict(s);
		pthread_mutex_unlock(&s->blk_lock);
		pthread_mutex_lock(&s->bg_lock);
	}
	pthread_mutex_unlock(&s->bg_lock);
	return NULL;
}

/*
 * Load claimed blocks (no lock held), then publish them and wake the waiters.
 * Drops the loader's references (@v is not to be used after). Returns how
 * many loaded without error.
 */
static size_t blk_fill(struct gcs_store *s, struct gcs_file *f, struct blk **v, size_t n)
{
	size_t i, ok = 0;

	blk_load(s, f, v, n);
	pthread_mutex_lock(&s->blk_lock);
	for (i = 0; i < n; i++) {
		v[i]->state = BLK_READY;
		ok += v[i]->err == 0;
		if (v[i]->err) {
			/*
			 * Remember the failure briefly: the kernel re-asks a failed
			 * read (readahead, then the read itself), and each fresh
			 * attempt would spend the whole retry deadline again.
			 */
			v[i]->err_until = xprofs_mono_ns() + NEG_TTL_NS;
			free(v[i]->data);
			v[i]->data = NULL;
			s->blk_mem -= BLOCK_SIZE;
		}
		lru_push(s, v[i]);
	}
	pthread_cond_broadcast(&s->blk_cond);
	pthread_mutex_unlock(&s->blk_lock);
	/*
	 * Only now, off the waiters' path, hand fetched blocks to the disk
	 * cache: a ready block's data no longer changes, and the loader's
	 * reference, which the queue takes over, keeps it alive meanwhile.
	 */
	for (i = 0; i < n; i++) {
		if (v[i]->err || !v[i]->fetched || !s->o.cache)
			continue;
		if (dw_push(s, v[i]))
			v[i] = NULL;
		else if (!s->dw_started)
			disk_put(s, v[i]); /* no writer thread: the old, synchronous way */
	}
	pthread_mutex_lock(&s->blk_lock);
	for (i = 0; i < n; i++)
		if (v[i])
			blk_unref(s, v[i]);
	blk_evict(s);
	pthread_mutex_unlock(&s->blk_lock);
	return ok;
}

/* The ready block @idx of @f, fetched (with read-ahead @window) if needed. */
static int blk_get(struct gcs_store *s, struct gcs_file *f, uint64_t idx, unsigned window, struct blk **out)
{
	struct blk *v[WINDOW_MAX] = {0}, *b;
	size_t n;
	int r;

	pthread_mutex_lock(&s->blk_lock);
	b = blk_find(s, f->obj, f->st.generation, idx);
	if (b && b->err && b->state == BLK_READY && xprofs_mono_ns() >= b->err_until) {
		blk_table_del(s, b); /* the remembered failure is old: try again */
		if (b->refs == 0)
			blk_destroy(s, b);
		b = NULL;
	}
	if (b) {
		b->refs++;
		if (b->state == BLK_LOADING) {
			atomic_fetch_add(&s->ctr.block_waits, 1);
			while (b->state == BLK_LOADING)
				pthread_cond_wait(&s->blk_cond, &s->blk_lock);
		} else {
			atomic_fetch_add(&s->ctr.block_hits, 1);
			if (b->in_table)
				lru_push(s, b);
		}
		goto done;
	}
	if (!blk_make_room(s, (uint64_t)window * BLOCK_SIZE))
		window = 1; /* in-flight blocks fill the budget: no read-ahead */
	n = blk_claim(s, f, idx, window, v);
	if (n == 0) {
		pthread_mutex_unlock(&s->blk_lock);
		return -ENOMEM;
	}
	b = v[0];
	b->refs++; /* the caller's */
	pthread_mutex_unlock(&s->blk_lock);
	blk_fill(s, f, v, n);
	pthread_mutex_lock(&s->blk_lock);
done:
	r = b->err;
	if (r < 0) {
		blk_unref(s, b);
		pthread_mutex_unlock(&s->blk_lock);
		return r;
	}
	pthread_mutex_unlock(&s->blk_lock);
	*out = b;
	return 0;
}

/*
 * Asynchronous read-ahead for sequential readers: one thread per store
 * fetches the next PREFETCH_BLOCKS blocks while the reader consumes the ones before,
 * so a stream does not stall on every window. Jobs carry their own copy of
 * the file's identity (the reader may close meanwhile); the queue is short
 * and a full queue drops the job (the reader then fetches synchronously).
 */
struct prefetch {
	struct gcs_file f; /* f.obj owned */
	uint64_t idx;
	struct prefetch *next;
};

static void *pf_main(void *arg)
{
	struct gcs_store *s = arg;

	pthread_mutex_lock(&s->bg_lock);
	for (;;) {
		struct prefetch *j = s->pf_head;
		struct blk *v[PREFETCH_BLOCKS];
		size_t n;

		if (s->bg_stop)
			break;
		if (!j) {
			pthread_cond_wait(&s->pf_cond, &s->bg_lock);
			continue;
		}
		s->pf_head = j->next;
		s->pf_len--;
		pthread_mutex_unlock(&s->bg_lock);

		pthread_mutex_lock(&s->blk_lock);
		n = 0;
		if (blk_make_room(s, (uint64_t)PREFETCH_BLOCKS * BLOCK_SIZE))
			n = blk_claim(s, &j->f, j->idx, PREFETCH_BLOCKS, v);
		pthread_mutex_unlock(&s->blk_lock);
		if (n)
			atomic_fetch_add(&s->ctr.prefetched, blk_fill(s, &j->f, v, n));
		free(j->f.obj);
		free(j);
		pthread_mutex_lock(&s->bg_lock);
	}
	pthread_mutex_unlock(&s->bg_lock);
	return NULL;
}

/*
 * After a sequential read ending at @end: queue the first missing
 * PREFETCH_BLOCKS blocks within PREFETCH_AHEAD, so one job streams while
 * the reader consumes the one before.
 */
static void prefetch_after(struct gcs_store *s, struct gcs_file *f, uint64_t end)
{
	uint64_t nblocks = (f->st.size + BLOCK_SIZE - 1) / BLOCK_SIZE, idx, first = UINT64_MAX;
	struct prefetch *j;

	if (!s->pf_started)
		return;
	pthread_mutex_lock(&s->blk_lock);
	for (idx = end / BLOCK_SIZE + 1; idx < nblocks && idx <= end / BLOCK_SIZE + PREFETCH_AHEAD; idx++) {
		if (!blk_find(s, f->obj, f->st.generation, idx)) {
			first = idx;
			break;
		}
	}
	pthread_mutex_unlock(&s->blk_lock);
	if (first == UINT64_MAX)
		return;
	j = calloc(1, sizeof(*j));
	if (!j || !(j->f.obj = strdup(f->obj))) {
		free(j);
		return;
	}
	j->f.st = f->st;
	j->idx = first;
	pthread_mutex_lock(&s->bg_lock);
	if (s->pf_len >= 8) {
		pthread_mutex_unlock(&s->bg_lock);
		free(j->f.obj);
		free(j);
		return;
	}
	j->next = s->pf_head;
	s->pf_head = j;
	s->pf_len++;
	pthread_cond_signal(&s->pf_cond);
	pthread_mutex_unlock(&s->bg_lock);
}

/*
 * Drop a reader's reference. @consumed: a sequential reader has read the
 * block to its end and will not come back, so it is the first to go, before
 * the read-ahead blocks it is about to need (plain LRU would evict those).
 */
static void blk_put(struct gcs_store *s, struct blk *b, bool consumed)
{
	pthread_mutex_lock(&s->blk_lock);
	if (consumed && b->in_table && b->lru_next)
		lru_push_oldest(s, b);
	blk_unref(s, b);
	blk_evict(s);
	pthread_mutex_unlock(&s->blk_lock);
}

static int gcs_open(struct xprofs_store *base, const char *path, struct xprofs_store_file **out)
{
	struct gcs_store *s = (struct gcs_store *)base;
	struct xprofs_store_stat st;
	struct gcs_file *f;
	int r;

	r = tree_stat(s, path, &st);
	if (r < 0)
		return r;
	if (st.type != XPROFS_STORE_FILE)
		return -EISDIR;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->obj = object_name(s, path, "");
	if (!f->obj) {
		free(f);
		return -ENAMETOOLONG;
	}
	f->base.store = base;
	f->s = s;
	f->st = st;
	f->window = 1;
	pthread_mutex_init(&f->lock, NULL);
	*out = &f->base;
	return 0;
}

static ssize_t gcs_pread(struct xprofs_store_file *base, void *buf, size_t n, uint64_t off)
{
	struct gcs_file *f = (struct gcs_file *)base;
	size_t got = 0;
	unsigned window, seq_window;

	if (off >= f->st.size || n == 0)
		return 0;
	if (n > f->st.size - off)
		n = (size_t)(f->st.size - off);
	if (n > SSIZE_MAX)
		n = SSIZE_MAX;
	pthread_mutex_lock(&f->lock);
	/*
	 * sequential: grow the read-ahead window; a seek starts over at one
	 * block. The kernel's read-ahead sends several reads at once, which
	 * reach us a little out of order: near misses count as sequential.
	 */
	if (off + BLOCK_SIZE >= f->next_off && off <= f->next_off + 2 * (uint64_t)BLOCK_SIZE)
		f->window = f->window * 2 > WINDOW_MAX ? WINDOW_MAX : f->window * 2;
	else
		f->window = 1;
	window = seq_window = f->window;
	{
		/* a large read wants all its blocks at once (in parallel ranges) */
		uint64_t span = (off + n - 1) / BLOCK_SIZE - off / BLOCK_SIZE + 1;

		if (span > window)
			window = span > WINDOW_MAX ? WINDOW_MAX : (unsigned)span;
	}
	if (off + n > f->next_off || f->window == 1)
		f->next_off = off + n;
	pthread_mutex_unlock(&f->lock);

	while (got < n) {
		uint64_t pos = off + got, idx = pos / BLOCK_SIZE;
		size_t boff = (size_t)(pos - idx * BLOCK_SIZE), k;
		struct blk *b;
		int r;

		r = blk_get(f->s, f, idx, window, &b);
		if (r < 0)
			return got ? (ssize_t)got : r;
		k = b->len > boff ? b->len - boff : 0;
		if (k > n - got)
			k = n - got;
		memcpy((char *)buf + got, b->data + boff, k);
		blk_put(f->s, b, seq_window > 1 && boff + k == b->len);
		if (k == 0)
			break;
		got += k;
	}
	if (seq_window >= 4)
		prefetch_after(f->s, f, off + got);
	return (ssize_t)got;
}

static int gcs_file_stat(struct xprofs_store_file *base, struct xprofs_store_stat *st)
{
	*st = ((struct gcs_file *)base)->st;
	return 0;
}

static void gcs_close(struct xprofs_store_file *base)
{
	struct gcs_file *f = (struct gcs_file *)base;

	pthread_mutex_destroy(&f->lock);
	free(f->obj);
	free(f);
}

/* ---- writes ------------------------------------------------------------ */

/* The current generation of @obj (0 when absent), asked from GCS itself. */
static int object_generation(struct gcs_store *s, const char *obj, uint64_t *gen)
{
	struct gcs_req rq = {.kind = GCS_REQ_OTHER, .method = "GET", .idempotent = true};
	struct xprofs_store_stat st;
	struct xprofs_buf url, resp;
	int r;

	xprofs_buf_init(&url, GCS_URL_MAX);
	xprofs_buf_init(&resp, GCS_SMALL_MAX);
	if ((r = url_object(s, &url, "storage/v1", obj)) < 0)
		goto out;
	rq.url = url.data;
	rq.resp = &resp;
	r = gcs_http_do(&s->http, &rq);
	if (r < 0)
		goto out;
	if (rq.status == 404) {
		*gen = 0;
		goto out;
	}
	if (rq.status != 200) {
		r = status_errno(s, &rq, obj);
		goto out;
	}
	r = gcs_object_parse(resp.data ? resp.data : "", resp.len, &st, NULL);
	if (r == 0)
		*gen = st.generation;
out:
	xprofs_buf_deinit(&resp);
	xprofs_buf_deinit(&url);
	return r;
}

static int upload_media(struct gcs_store *s, struct gcs_writer *w, uint64_t size, struct xprofs_store_stat *st)
{
	struct gcs_req rq = {.kind = GCS_REQ_UPLOAD, .method = "POST", .idempotent = true,
				    .send_body = true, .body_fd = w->fd, .body_len = size};
	struct xprofs_buf url, resp;
	int r;

	xprofs_buf_init(&url, GCS_URL_MAX);
	xprofs_buf_init(&resp, GCS_SMALL_MAX);
	if ((r = url_object(s, &url, "upload/storage/v1", NULL)) < 0 ||
	    (r = url_param(&url, "uploadType", "media")) < 0 || (r = url_param(&url, "name", w->obj)) < 0 ||
	    (r = url_param_u64(&url, "ifGenerationMatch", w->if_gen)) < 0)
		goto out;
	rq.url = url.data;
	rq.headers[0] = "Content-Type: application/octet-stream";
	rq.resp = &resp;
	r = gcs_http_do(&s->http, &rq);
	if (r < 0)
		goto out;
	if (rq.status == 412) {
		r = -EEXIST; /* the caller decides what a lost precondition means */
		goto out;
	}
	if (rq.status != 200 && rq.status != 201) {
		r = status_errno(s, &rq, w->obj);
		goto out;
	}
	r = gcs_object_parse(resp.data ? resp.data : "", resp.len, st, NULL);
out:
	xprofs_buf_deinit(&resp);
	xprofs_buf_deinit(&url);
	return r;
}

/* Ask a resumable session how much it has (*@committed), or whether it is done (1). */
static int resumable_query(struct gcs_store *s, const char *session, uint64_t size, uint64_t *committed,
			   struct xprofs_store_stat *st)
{
	struct gcs_req rq = {.kind = GCS_REQ_UPLOAD, .method = "PUT", .idempotent = true,
				    .send_body = true, .body = "", .body_len = 0, .url = session};
	struct xprofs_buf resp;
	char cr[64];
	int r;

	xprofs_buf_init(&resp, GCS_SMALL_MAX);
	snprintf(cr, sizeof(cr), "Content-Range: bytes */%llu", (unsigned long long)size);
	rq.headers[0] = cr;
	rq.resp = &resp;
	r = gcs_http_do(&s->http, &rq);
	if (r < 0)
		goto out;
	if (rq.status == 308) {
		r = gcs_range_parse(rq.range, committed);
		if (r == 0 && *committed > size)
			r = -EPROTO;
	} else if (rq.status == 200 || rq.status == 201) {
		r = gcs_object_parse(resp.data ? resp.data : "", resp.len, st, NULL);
		if (r == 0)
			r = 1;
	} else {
		r = rq.status == 412 ? -EEXIST : status_errno(s, &rq, "resumable upload session");
	}
out:
	xprofs_buf_deinit(&resp);
	return r;
}

/* True when @url has the scheme, host and port of @endpoint. */
static bool same_origin(const char *endpoint, const char *url)
{
	const char *e = strstr(endpoint, "://"), *end;
	size_t n;

	if (!e)
		return false;
	end = strchr(e + 3, '/');
	n = end ? (size_t)(end - endpoint) : strlen(endpoint);
	return strncasecmp(url, endpoint, n) == 0 && (url[n] == '/' || url[n] == '?');
}

static int upload_resumable(struct gcs_store *s, struct gcs_writer *w, uint64_t size, struct xprofs_store_stat *st)
{
	struct gcs_req rq = {.kind = GCS_REQ_UPLOAD, .method = "POST", .idempotent = true,
				    .send_body = true, .body = "{}", .body_len = 2};
	struct xprofs_buf url, resp;
	char *session = NULL;
	char len_hdr[64], cr[96];
	uint64_t off = 0, chunk = s->o.upload_chunk;
	unsigned failures = 0;
	int r;

	xprofs_buf_init(&url, GCS_URL_MAX);
	xprofs_buf_init(&resp, GCS_SMALL_MAX);
	if ((r = url_object(s, &url, "upload/storage/v1", NULL)) < 0 ||
	    (r = url_param(&url, "uploadType", "resumable")) < 0 || (r = url_param(&url, "name", w->obj)) < 0 ||
	    (r = url_param_u64(&url, "ifGenerationMatch", w->if_gen)) < 0)
		goto out;
	snprintf(len_hdr, sizeof(len_hdr), "X-Upload-Content-Length: %llu", (unsigned long long)size);
	rq.url = url.data;
	rq.headers[0] = "Content-Type: application/json; charset=UTF-8";
	rq.headers[1] = "X-Upload-Content-Type: application/octet-stream";
	rq.headers[2] = len_hdr;
	rq.resp = &resp;
	r = gcs_http_do(&s->http, &rq);
	if (r < 0)
		goto out;
	if (rq.status == 412) {
		r = -EEXIST;
		goto out;
	}
	if (rq.status != 200 && rq.status != 201) {
		r = status_errno(s, &rq, w->obj);
		goto out;
	}
	if (!same_origin(s->endpoint, rq.location)) {
		/* the session URI gets our Authorization header: never send it elsewhere */
		xprofs_err("gcs: resumable upload of %s: session URI '%.80s' is not on %s", w->obj, rq.location,
			   s->endpoint);
		r = -EPROTO;
		goto out;
	}
	session = strdup(rq.location);
	if (!session) {
		r = -ENOMEM;
		goto out;
	}
	for (;;) {
		struct gcs_req pq = {.kind = GCS_REQ_UPLOAD, .method = "PUT", .url = session,
					    .send_body = true, .body_fd = w->fd};
		uint64_t len = size - off < chunk ? size - off : chunk;

		/* a chunk is not blindly retried: after a failure we ask what arrived */
		pq.body_off = off;
		pq.body_len = len;
		if (size == 0)
			snprintf(cr, sizeof(cr), "Content-Range: bytes */0");
		else
			snprintf(cr, sizeof(cr), "Content-Range: bytes %llu-%llu/%llu", (unsigned long long)off,
				 (unsigned long long)(off + len - 1), (unsigned long long)size);
		pq.headers[0] = cr;
		pq.resp = &resp;
		r = gcs_http_do(&s->http, &pq);
		if (r == 0 && (pq.status == 200 || pq.status == 201)) {
			r = gcs_object_parse(resp.data ? resp.data : "", resp.len, st, NULL);
			goto out;
		}
		if (r == 0 && pq.status == 308) {
			uint64_t committed;

			r = gcs_range_parse(pq.range, &committed);
			if (r < 0 || committed < off || committed > size) {
				r = -EPROTO;
				goto out;
			}
			if (committed == off && len > 0 && ++failures > RESUME_MAX) {
				r = -EIO;
				goto out;
			}
			off = committed;
			continue;
		}
		if (r == 0 && pq.status == 412) {
			r = -EEXIST;
			goto out;
		}
		if (r == 0 && !gcs_retryable(pq.status, 0)) {
			r = status_errno(s, &pq, w->obj);
			goto out;
		}
		/* a failed chunk: resume from what the session says it has */
		if (++failures > RESUME_MAX) {
			r = r < 0 ? r : -EIO;
			goto out;
		}
		atomic_fetch_add(&s->ctr.retries, 1);
		r = resumable_query(s, session, size, &off, st);
		if (r == 1) {
			r = 0;
			goto out;
		}
		if (r < 0)
			goto out;
	}
out:
	if (r == 0 && st->size != size) {
		xprofs_err("gcs: upload of %s finished with %llu of %llu bytes", w->obj,
			   (unsigned long long)st->size, (unsigned long long)size);
		r = -EIO;
	}
	free(session);
	xprofs_buf_deinit(&resp);
	xprofs_buf_deinit(&url);
	return r;
}

/* w->lock held. Upload the spooled content and publish it in the tree. */
static int writer_upload(struct gcs_writer *w)
{
	struct gcs_store *s = w->s;
	struct xprofs_store_stat st = {0};
	unsigned tries = 0;
	int r;

	for (;;) {
		if (w->size > s->o.resumable_threshold)
			r = upload_resumable(s, w, w->size, &st);
		else
			r = upload_media(s, w, w->size, &st);
		if (r != -EEXIST || w->excl || ++tries > 3)
			break;
		/* someone else replaced the object since we looked: last writer wins */
		r = object_generation(s, w->obj, &w->if_gen);
		if (r < 0)
			break;
	}
	if (r < 0) {
		if (r != -EEXIST)
			xprofs_err("gcs: upload of gs://%s/%s failed: %s", s->bucket, w->obj, strerror(-r));
		return data_errno(s, r, w->obj);
	}
	if (st.size != w->size) {
		xprofs_err("gcs: upload of gs://%s/%s stored %llu of %llu bytes", s->bucket, w->obj,
			   (unsigned long long)st.size, (unsigned long long)w->size);
		return -EIO;
	}
	w->if_gen = st.generation;
	w->excl = false; /* it is ours now: later flushes replace our own version */
	w->dirty = false;
	st.type = XPROFS_STORE_FILE;
	r = tree_apply(s, J_ADD_FILE, w->path, &st);
	return r == -EEXIST ? 0 : r;
}

static int spool_open(struct gcs_store *s)
{
	char tmpl[4096];
	int fd;

	fd = open(s->tmpdir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0)
		return fd;
	snprintf(tmpl, sizeof(tmpl), "%s/xprofs-gcs-XXXXXX", s->tmpdir);
	fd = mkostemp(tmpl, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	unlink(tmpl);
	return fd;
}

/* Copy the pinned version of @obj into @fd (for a non-truncating create). */
static int prefill(struct gcs_store *s, const char *obj, const struct xprofs_store_stat *st, int fd)
{
	size_t bufsz = 8u << 20;
	uint8_t *buf = malloc(bufsz);
	uint64_t off;
	int r = 0;

	if (!buf)
		return -ENOMEM;
	for (off = 0; off < st->size && r == 0; off += bufsz) {
		size_t n = st->size - off < bufsz ? (size_t)(st->size - off) : bufsz;

		r = fetch_range(s, obj, st->generation, st->size, off, n, buf, NULL);
		if (r == 0 && pwrite(fd, buf, n, (off_t)off) != (ssize_t)n)
			r = -EIO;
	}
	free(buf);
	return r;
}

static int gcs_create(struct xprofs_store *base, const char *path, unsigned flags,
		      struct xprofs_store_writer **out)
{
	struct gcs_store *s = (struct gcs_store *)base;
	struct xprofs_store_stat st;
	struct gcs_writer *w = NULL;
	bool exists;
	int r;

	if (s->o.read_only)
		return -EROFS;
	r = tree_stat(s, path, &st);
	if (r < 0 && r != -ENOENT)
		return r;
	exists = r == 0;
	if (exists && st.type == XPROFS_STORE_DIR)
		return -EISDIR;
	if (exists && (flags & XPROFS_STORE_EXCL))
		return -EEXIST;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->fd = -1;
	w->base.store = base;
	w->s = s;
	w->path = strdup(path);
	w->obj = object_name(s, path, "");
	if (!w->path || !w->obj) {
		r = w->path ? -ENAMETOOLONG : -ENOMEM;
		goto err;
	}
	w->fd = spool_open(s);
	if (w->fd < 0) {
		r = w->fd;
		goto err;
	}
	w->excl = flags & XPROFS_STORE_EXCL;
	w->if_gen = exists ? st.generation : 0;
	w->dirty = true; /* even an empty new file must become an object */
	if (exists && !(flags & XPROFS_STORE_TRUNC)) {
		r = prefill(s, w->obj, &st, w->fd);
		if (r < 0)
			goto err;
		w->size = st.size;
		w->dirty = false;
	}
	pthread_mutex_init(&w->lock, NULL);
	w->mtime_ns = xprofs_now_ns();
	pthread_mutex_lock(&s->w_lock);
	w->wnext = s->writers;
	if (s->writers)
		s->writers->wprev = w;
	s->writers = w;
	pthread_mutex_unlock(&s->w_lock);
	*out = &w->base;
	return 0;
err:
	if (w->fd >= 0)
		close(w->fd);
	free(w->obj);
	free(w->path);
	free(w);
	return r;
}

static ssize_t gcs_write(struct xprofs_store_writer *base, const void *buf, size_t n, uint64_t off)
{
	struct gcs_writer *w = (struct gcs_writer *)base;
	ssize_t k;

	pthread_mutex_lock(&w->lock);
	k = pwrite(w->fd, buf, n, (off_t)off);
	if (k < 0) {
		k = -errno;
	} else {
		if (off + (uint64_t)k > w->size)
			w->size = off + (uint64_t)k;
		w->dirty = true;
		w->mtime_ns = xprofs_now_ns();
	}
	pthread_mutex_unlock(&w->lock);
	return k;
}

static ssize_t gcs_wread(struct xprofs_store_writer *base, void *buf, size_t n, uint64_t off)
{
	struct gcs_writer *w = (struct gcs_writer *)base;
	ssize_t k;

	pthread_mutex_lock(&w->lock);
	if (off >= w->size)
		k = 0;
	else
		k = xprofs_pread_full(w->fd, buf, n < w->size - off ? n : (size_t)(w->size - off), off);
	pthread_mutex_unlock(&w->lock);
	return k;
}

static int gcs_truncate(struct xprofs_store_writer *base, uint64_t size)
{
	struct gcs_writer *w = (struct gcs_writer *)base;
	int r = 0;

	pthread_mutex_lock(&w->lock);
	if (ftruncate(w->fd, (off_t)size) < 0) {
		r = -errno;
	} else {
		w->size = size;
		w->dirty = true;
	}
	pthread_mutex_unlock(&w->lock);
	return r;
}

static int gcs_flush(struct xprofs_store_writer *base)
{
	struct gcs_writer *w = (struct gcs_writer *)base;
	int r = 0;

	pthread_mutex_lock(&w->lock);
	if (w->dirty)
		r = writer_upload(w);
	pthread_mutex_unlock(&w->lock);
	return r;
}

static void writer_free(struct gcs_writer *w)
{
	struct gcs_store *s = w->s;

	pthread_mutex_lock(&s->w_lock);
	if (w->wprev)
		w->wprev->wnext = w->wnext;
	else
		s->writers = w->wnext;
	if (w->wnext)
		w->wnext->wprev = w->wprev;
	pthread_mutex_unlock(&s->w_lock);
	pthread_mutex_destroy(&w->lock);
	close(w->fd);
	free(w->obj);
	free(w->path);
	free(w);
}

static int gcs_commit(struct xprofs_store_writer *base)
{
	struct gcs_writer *w = (struct gcs_writer *)base;
	int r = 0;

	pthread_mutex_lock(&w->lock);
	if (w->dirty)
		r = writer_upload(w);
	pthread_mutex_unlock(&w->lock);
	writer_free(w);
	return r;
}

static void gcs_abort(struct xprofs_store_writer *base)
{
	writer_free((struct gcs_writer *)base);
}

/* DELETE @obj, with ifGenerationMatch=@gen when @gen is not 0. A vanished object is success. */
static int delete_object(struct gcs_store *s, const char *obj, uint64_t gen)
{
	struct gcs_req rq = {.kind = GCS_REQ_DELETE, .method = "DELETE"};
	struct xprofs_buf url;
	int r;

	xprofs_buf_init(&url, GCS_URL_MAX);
	for (;;) {
		if ((r = url_object(s, &url, "storage/v1", obj)) < 0 ||
		    (gen && (r = url_param_u64(&url, "ifGenerationMatch", gen)) < 0))
			goto out;
		rq.url = url.data;
		rq.idempotent = gen != 0;
		r = gcs_http_do(&s->http, &rq);
		if (r < 0)
			goto out;
		if (rq.status == 412 && gen) {
			gen = 0; /* replaced since we listed it: delete what is there */
			continue;
		}
		break;
	}
	if (rq.status == 404 || rq.status == 204 || rq.status == 200)
		r = 0;
	else
		r = status_errno(s, &rq, obj);
out:
	xprofs_buf_deinit(&url);
	return r;
}

static int gcs_unlink(struct xprofs_store *base, const char *path)
{
	struct gcs_store *s = (struct gcs_store *)base;
	struct xprofs_store_stat st;
	char *obj;
	int r;

	if (s->o.read_only)
		return -EROFS;
	r = tree_stat(s, path, &st);
	if (r < 0)
		return r;
	if (st.type == XPROFS_STORE_DIR)
		return -EISDIR;
	obj = object_name(s, path, "");
	if (!obj)
		return -ENAMETOOLONG;
	r = delete_object(s, obj, st.generation);
	free(obj);
	if (r == 0) {
		r = tree_apply(s, J_REMOVE, path, NULL);
		if (r == -ENOENT)
			r = 0;
	}
	return r;
}

static int rewrite_object(struct gcs_store *s, const char *from, uint64_t gen, const char *to, uint64_t to_gen,
			  struct xprofs_store_stat *st)
{
	struct xprofs_buf url, resp;
	char *token = NULL;
	bool done = false;
	unsigned rounds = 0;
	int r;

	xprofs_buf_init(&url, GCS_URL_MAX);
	xprofs_buf_init(&resp, GCS_SMALL_MAX);
	while (!done) {
		struct gcs_req rq = {.kind = GCS_REQ_OTHER, .method = "POST", .idempotent = true,
					    .send_body = true, .body = "{}", .body_len = 2};

		if ((r = url_object(s, &url, "storage/v1", from)) < 0 || (r = xprofs_buf_adds(&url, "/rewriteTo/b/")) < 0 ||
		    (r = gcs_pct_encode(&url, s->bucket, strlen(s->bucket))) < 0 ||
		    (r = xprofs_buf_adds(&url, "/o/")) < 0 || (r = gcs_pct_encode(&url, to, strlen(to))) < 0 ||
		    (r = url_param_u64(&url, "sourceGeneration", gen)) < 0 ||
		    (r = url_param_u64(&url, "ifGenerationMatch", to_gen)) < 0 ||
		    (token && (r = url_param(&url, "rewriteToken", token)) < 0))
			goto out;
		rq.url = url.data;
		rq.headers[0] = "Content-Type: application/json";
		rq.resp = &resp;
		r = gcs_http_do(&s->http, &rq);
		if (r < 0)
			goto out;
		if (rq.status == 404) {
			r = -ESTALE; /* the source changed since we listed it */
			goto out;
		}
		if (rq.status == 412) {
			r = -EEXIST;
			goto out;
		}
		if (rq.status == 501) {
			r = -ENOTSUP; /* a server without rewrite: the caller copies the bytes */
			goto out;
		}
		if (rq.status != 200) {
			r = status_errno(s, &rq, from);
			goto out;
		}
		r = gcs_object_parse(resp.data ? resp.data : "", resp.len, st, &done);
		if (r < 0)
			goto out;
		if (!done) {
			free(token);
			token = NULL;
			r = gcs_json_string(resp.data, resp.len, "rewriteToken", &token);
			if (r < 0 || ++rounds > 10000) {
				r = -EPROTO;
				goto out;
			}
		}
	}
	r = 0;
out:
	free(token);
	xprofs_buf_deinit(&resp);
	xprofs_buf_deinit(&url);
	return r;
}

/* Copy through this machine (download, then upload) for servers without rewriteTo. */
static int copy_via_spool(struct gcs_store *s, const char *from, const struct xprofs_store_stat *fst,
			  const char *to, const char *to_obj, uint64_t to_gen, struct xprofs_store_stat *st)
{
	struct gcs_writer w = {.s = s, .fd = -1, .if_gen = to_gen, .size = fst->size};
	int r;

	w.fd = spool_open(s);
	if (w.fd < 0)
		return w.fd;
	w.obj = (char *)to_obj;
	r = prefill(s, from, fst, w.fd);
	if (r == 0)
		r = w.size > s->o.resumable_threshold ? upload_resumable(s, &w, w.size, st)
						      : upload_media(s, &w, w.size, st);
	close(w.fd);
	return r;
}

static int gcs_rename(struct xprofs_store *base, const char *from, const char *to)
{
	struct gcs_store *s = (struct gcs_store *)base;
	struct xprofs_store_stat st, dst, nst;
	char *ofrom = NULL, *oto = NULL;
	uint64_t to_gen = 0;
	int r;

	if (s->o.read_only)
		return -EROFS;
	r = tree_stat(s, from, &st);
	if (r < 0)
		return r;
	if (st.type == XPROFS_STORE_DIR)
		return -EXDEV; /* many objects: let the caller copy */
	if (strcmp(from, to) == 0)
		return 0;
	r = tree_stat(s, to, &dst);
	if (r == 0 && dst.type == XPROFS_STORE_DIR)
		return -EISDIR;
	if (r == 0)
		to_gen = dst.generation;
	ofrom = object_name(s, from, "");
	oto = object_name(s, to, "");
	if (!ofrom || !oto) {
		r = -ENAMETOOLONG;
		goto out;
	}
	r = rewrite_object(s, ofrom, st.generation, oto, to_gen, &nst);
	if (r == -ENOTSUP)
		r = copy_via_spool(s, ofrom, &st, to, oto, to_gen, &nst);
	if (r == -EEXIST) {
		/* the target changed since we looked: replace what is there now */
		r = object_generation(s, oto, &to_gen);
		if (r == 0)
			r = rewrite_object(s, ofrom, st.generation, oto, to_gen, &nst);
		if (r == -ENOTSUP)
			r = copy_via_spool(s, ofrom, &st, to, oto, to_gen, &nst);
	}
	if (r < 0)
		goto out;
	nst.type = XPROFS_STORE_FILE;
	(void)tree_apply(s, J_ADD_FILE, to, &nst);
	r = delete_object(s, ofrom, st.generation);
	if (r == 0)
		(void)tree_apply(s, J_REMOVE, from, NULL);
out:
	free(oto);
	free(ofrom);
	return r;
}

static int gcs_mkdir(struct xprofs_store *base, const char *path)
{
	struct gcs_store *s = (struct gcs_store *)base;
	struct xprofs_store_stat st;
	const char *slash = strrchr(path, '/');
	char *parent;
	int r;

	if (s->o.read_only)
		return -EROFS;
	if (gcs_stat(base, path, &st) == 0)
		return -EEXIST;
	parent = strndup(path, slash ? (size_t)(slash - path) : 0);
	if (!parent)
		return -ENOMEM;
	r = gcs_stat(base, parent, &st);
	free(parent);
	if (r < 0)
		return r;
	if (st.type != XPROFS_STORE_DIR)
		return -ENOTDIR;
	if (s->o.mkdir_placeholders) {
		struct gcs_writer w = {.s = s, .fd = -1, .if_gen = 0};
		struct xprofs_store_stat pst;

		w.obj = object_name(s, path, "/");
		if (!w.obj)
			return -ENAMETOOLONG;
		w.fd = spool_open(s);
		r = w.fd < 0 ? w.fd : upload_media(s, &w, 0, &pst);
		if (w.fd >= 0)
			close(w.fd);
		free(w.obj);
		if (r < 0 && r != -EEXIST)
			return r;
	}
	return tree_apply(s, J_ADD_DIR, path, NULL);
}

struct any_child {
	bool found;
};

static int any_child_cb(void *arg, const char *name, const struct xprofs_store_stat *st)
{
	((struct any_child *)arg)->found = true;
	return 1;
}

static int gcs_rmdir(struct xprofs_store *base, const char *path)
{
	struct gcs_store *s = (struct gcs_store *)base;
	struct xprofs_store_stat st;
	struct any_child c = {false};
	char *obj;
	int r;

	if (s->o.read_only)
		return -EROFS;
	pthread_rwlock_rdlock(&s->tree_lock);
	r = gcs_tree_stat(s->tree, path, &st);
	if (r == 0 && st.type != XPROFS_STORE_DIR)
		r = -ENOTDIR;
	if (r == 0 && gcs_tree_list(s->tree, path, any_child_cb, &c) < 0)
		r = -EIO;
	pthread_rwlock_unlock(&s->tree_lock);
	if (r < 0)
		return r;
	if (c.found)
		return -ENOTEMPTY;
	/* a "dir/" placeholder would bring it back at the next listing */
	obj = object_name(s, path, "/");
	if (!obj)
		return -ENAMETOOLONG;
	r = delete_object(s, obj, 0);
	free(obj);
	if (r < 0)
		return r;
	r = tree_apply(s, J_REMOVE, path, NULL);
	return r == -ENOENT ? 0 : r;
}

/* ---- status and lifecycle ---------------------------------------------- */

static int gcs_status_json(struct xprofs_store *base, struct xprofs_buf *out)
{
	struct gcs_store *s = (struct gcs_store *)base;
	struct gcs_counters *c = &s->ctr;
	uint64_t nodes, bytes, mem;
	int r;

	pthread_rwlock_rdlock(&s->tree_lock);
	gcs_tree_count(s->tree, &nodes, &bytes);
	pthread_rwlock_unlock(&s->tree_lock);
	pthread_mutex_lock(&s->blk_lock);
	mem = s->blk_mem;
	pthread_mutex_unlock(&s->blk_lock);
	if ((r = xprofs_buf_adds(out, "{\"backend\":\"gcs\",\"bucket\":")) < 0 ||
	    (r = xprofs_buf_add_json_str(out, s->bucket, strlen(s->bucket))) < 0 ||
	    (r = xprofs_buf_adds(out, ",\"prefix\":")) < 0 ||
	    (r = xprofs_buf_add_json_str(out, s->prefix, strlen(s->prefix))) < 0 ||
	    (r = xprofs_buf_adds(out, ",\"endpoint\":")) < 0 ||
	    (r = xprofs_buf_add_json_str(out, s->endpoint, strlen(s->endpoint))) < 0)
		return r;
	return xprofs_buf_printf(
		out,
		",\"auth\":\"%s\",\"tree\":{\"nodes\":%llu,\"bytes\":%llu,\"skipped_objects\":%llu,"
		"\"listings\":%llu,\"last_listing_ms\":%llu},"
		"\"requests\":{\"list\":%llu,\"get\":%llu,\"upload\":%llu,\"delete\":%llu,\"other\":%llu},"
		"\"retries\":%llu,\"errors\":%llu,\"stale\":%llu,\"bytes_downloaded\":%llu,\"bytes_uploaded\":%llu,"
		"\"blocks\":{\"hits\":%llu,\"disk_hits\":%llu,\"misses\":%llu,\"coalesced\":%llu,\"prefetched\":%llu,"
		"\"mem_bytes\":%llu}}",
		gcs_auth_kind(s->auth), (unsigned long long)nodes, (unsigned long long)bytes,
		(unsigned long long)atomic_load(&s->skipped), (unsigned long long)atomic_load(&s->listings),
		(unsigned long long)atomic_load(&s->last_list_ms),
		(unsigned long long)atomic_load(&c->requests[GCS_REQ_LIST]),
		(unsigned long long)atomic_load(&c->requests[GCS_REQ_GET]),
		(unsigned long long)atomic_load(&c->requests[GCS_REQ_UPLOAD]),
		(unsigned long long)atomic_load(&c->requests[GCS_REQ_DELETE]),
		(unsigned long long)atomic_load(&c->requests[GCS_REQ_OTHER]),
		(unsigned long long)atomic_load(&c->retries), (unsigned long long)atomic_load(&c->errors),
		(unsigned long long)atomic_load(&c->stale), (unsigned long long)atomic_load(&c->bytes_down),
		(unsigned long long)atomic_load(&c->bytes_up), (unsigned long long)atomic_load(&c->block_hits),
		(unsigned long long)atomic_load(&c->block_disk_hits),
		(unsigned long long)atomic_load(&c->block_misses), (unsigned long long)atomic_load(&c->block_waits),
		(unsigned long long)atomic_load(&c->prefetched), (unsigned long long)mem);
}

static void gcs_free(struct xprofs_store *base)
{
	struct gcs_store *s = (struct gcs_store *)base;
	size_t i;

	pthread_mutex_lock(&s->bg_lock);
	s->bg_stop = true;
	pthread_cond_signal(&s->bg_cond);
	pthread_cond_signal(&s->pf_cond);
	pthread_cond_signal(&s->dw_cond);
	pthread_cond_broadcast(&s->dw_room);
	pthread_mutex_unlock(&s->bg_lock);
	if (s->dw_started)
		pthread_join(s->dw, NULL); /* writes out the queue */
	if (s->bg_started)
		pthread_join(s->bg, NULL);
	if (s->pf_started)
		pthread_join(s->pf, NULL);
	while (s->pf_head) {
		struct prefetch *j = s->pf_head;

		s->pf_head = j->next;
		free(j->f.obj);
		free(j);
	}
	for (i = 0; i < BLK_SLOTS; i++) {
		struct blk *b, *n;

		for (b = s->blk_slots[i]; b; b = n) {
			n = b->hnext;
			free(b->data);
			free(b->obj);
			free(b);
		}
	}
	journal_free(s);
	gcs_tree_free(s->tree);
	gcs_http_deinit(&s->http);
	gcs_auth_free(s->auth);
	pthread_mutex_destroy(&s->blk_lock);
	pthread_cond_destroy(&s->blk_cond);
	pthread_mutex_destroy(&s->w_lock);
	pthread_mutex_destroy(&s->bg_lock);
	pthread_cond_destroy(&s->bg_cond);
	pthread_cond_destroy(&s->pf_cond);
	pthread_cond_destroy(&s->dw_cond);
	pthread_cond_destroy(&s->dw_room);
	pthread_mutex_destroy(&s->list_lock);
	pthread_rwlock_destroy(&s->tree_lock);
	free(s->endpoint);
	free(s->prefix);
	free(s->bucket);
	free(s->base.source);
	free(s);
}

static const struct xprofs_store_ops gcs_ops = {
	.backend = "gcs",
	.stat = gcs_stat,
	.list = gcs_list,
	.open = gcs_open,
	.pread = gcs_pread,
	.file_stat = gcs_file_stat,
	.close = gcs_close,
	.create = gcs_create,
	.write = gcs_write,
	.wread = gcs_wread,
	.truncate = gcs_truncate,
	.flush = gcs_flush,
	.commit = gcs_commit,
	.abort = gcs_abort,
	.unlink = gcs_unlink,
	.rename = gcs_rename,
	.mkdir = gcs_mkdir,
	.rmdir = gcs_rmdir,
	.refresh = gcs_refresh,
	.status_json = gcs_status_json,
	.free = gcs_free,
};

char *gcs_endpoint_resolve(const struct xprofs_gcs_options *o)
{
	const char *e = o->endpoint;
	char *r = NULL;
	size_t n;

	if (!e || !*e)
		e = getenv("CLOUD_STORAGE_EMULATOR_ENDPOINT");
	if (!e || !*e) {
		e = getenv("STORAGE_EMULATOR_HOST");
		if (e && *e && !strstr(e, "://")) {
			if (asprintf(&r, "http://%s", e) < 0)
				return NULL;
		}
	}
	if (!r)
		r = strdup(e && *e ? e : "https://storage.googleapis.com");
	if (!r)
		return NULL;
	n = strlen(r);
	while (n > 0 && r[n - 1] == '/')
		r[--n] = '\0';
	/* accept rclone-style ".../storage/v1" too */
	if (n >= 11 && strcmp(r + n - 11, "/storage/v1") == 0)
		r[n - 11] = '\0';
	return r;
}

int xprofs_gcs_store_new(const char *url, const struct xprofs_gcs_options *o, struct xprofs_store **out)
{
	static const struct xprofs_gcs_options defaults = {0};
	struct gcs_store *s;
	int r;

	if (!o)
		o = &defaults;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->base.ops = &gcs_ops;
	pthread_rwlock_init(&s->tree_lock, NULL);
	pthread_mutex_init(&s->list_lock, NULL);
	pthread_mutex_init(&s->bg_lock, NULL);
	pthread_cond_init(&s->bg_cond, NULL);
	pthread_cond_init(&s->pf_cond, NULL);
	pthread_cond_init(&s->dw_cond, NULL);
	pthread_cond_init(&s->dw_room, NULL);
	pthread_mutex_init(&s->blk_lock, NULL);
	pthread_cond_init(&s->blk_cond, NULL);
	pthread_mutex_init(&s->w_lock, NULL);
	s->lru.lru_next = s->lru.lru_prev = &s->lru;
	s->journal_tail = &s->journal;

	r = gcs_url_parse(url, &s->bucket, &s->prefix);
	if (r < 0) {
		xprofs_err("gcs: '%s' is not gs://BUCKET[/PREFIX] with a valid bucket name", url ? url : "");
		goto err;
	}
	s->o = *o;
	s->o.endpoint = NULL;
	s->o.credentials = NULL;
	if (!s->o.list_ttl_s)
		s->o.list_ttl_s = 30;
	if (!s->o.connections)
		s->o.connections = 8;
	if (!s->o.retry_deadline_s)
		s->o.retry_deadline_s = 60;
	if (!s->o.resumable_threshold)
		s->o.resumable_threshold = 8u << 20;
	s->o.upload_chunk = s->o.upload_chunk / CHUNK_ALIGN * CHUNK_ALIGN;
	if (!s->o.upload_chunk)
		s->o.upload_chunk = 8u << 20;
	if (!s->o.block_mem_max)
		s->o.block_mem_max = 64u << 20;
	if (s->o.block_mem_max < 2 * BLOCK_SIZE)
		s->o.block_mem_max = 2 * BLOCK_SIZE;
	s->tmpdir = getenv("TMPDIR");
	if (!s->tmpdir || !*s->tmpdir)
		s->tmpdir = "/tmp";
	s->base.source = strdup(url);
	s->endpoint = gcs_endpoint_resolve(o);
	if (!s->base.source || !s->endpoint) {
		r = -ENOMEM;
		goto err;
	}
	r = gcs_auth_new(o, &s->auth);
	if (r < 0) {
		xprofs_err("gcs: no usable credentials for gs://%s: %s", s->bucket, strerror(-r));
		goto err;
	}
	r = gcs_http_init(&s->http, s->auth, s->o.connections, &s->ctr);
	if (r < 0)
		goto err;
	s->http.retry_deadline_s = s->o.retry_deadline_s;
	if (o->retry_initial_ms)
		s->http.retry_initial_ms = o->retry_initial_ms;
	if (o->stall_timeout_s)
		s->http.stall_timeout_s = o->stall_timeout_s;

	/* fail fast: the first listing validates endpoint, credentials and bucket */
	r = refresh_now(s);
	if (r < 0) {
		if (r == -ECONNREFUSED || r == -EHOSTUNREACH || r == -ETIMEDOUT)
			xprofs_err("gcs: cannot reach %s: %s", s->endpoint, strerror(-r));
		goto err;
	}
	if (pthread_create(&s->bg, NULL, bg_main, s) == 0)
		s->bg_started = true;
	else
		xprofs_warn("gcs: no background relisting thread; the tree refreshes only on demand");
	if (pthread_create(&s->pf, NULL, pf_main, s) == 0)
		s->pf_started = true;
	if (s->o.cache && pthread_create(&s->dw, NULL, dw_main, s) == 0)
		s->dw_started = true;
	xprofs_info("gcs: mounted gs://%s/%s via %s (%s credentials)", s->bucket, s->prefix, s->endpoint,
		    gcs_auth_kind(s->auth));
	*out = &s->base;
	return 0;
err:
	gcs_free(&s->base);
	return r;
}
