/*
 * gcs/namespace.c - the store's namespace: one flat, paginated listing of
 * PREFIX/ (no delimiter, fields projected, 1000 items a page) builds the
 * in-memory tree (tree.c) at mount; stat() and list() are answered from it.
 *
 * When the tree is older than list_ttl_s a background thread relists
 * (readers keep the old tree meanwhile); xprofs_store_refresh() relists
 * synchronously. Mutations made through the store update the tree at once
 * (gcs_ns_apply()) and are journaled while a listing is running, so a
 * refresh that started before them cannot lose them. Files being written
 * through this store show up in stat() and list() as what they will become.
 *
 * Limits: a listing that fails keeps the old tree and is retried in about
 * 5 s; objects whose names are not usable paths are skipped and counted.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gcs-internal.h"

/* A mutation made while a listing runs, replayed onto the new tree. */
struct gcs_journal {
	int op; /* GCS_J_* */
	char *path;
	struct xprofs_store_stat st;
	struct gcs_journal *next;
};

void gcs_ns_journal_free(struct gcs_store *s)
{
	struct gcs_journal *j, *n;

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
	case GCS_J_ADD_FILE:
		return gcs_tree_add_file(t, path, st);
	case GCS_J_REMOVE:
		return gcs_tree_remove(t, path);
	default:
		return gcs_tree_add_dir(t, path, true);
	}
}

/* Apply a mutation made through the store to the live tree (and the journal). */
int gcs_ns_apply(struct gcs_store *s, int op, const char *path, const struct xprofs_store_stat *st)
{
	int r;

	pthread_rwlock_wrlock(&s->tree_lock);
	r = tree_do(s->tree, op, path, st);
	if (s->journaling) {
		struct gcs_journal *j = calloc(1, sizeof(*j));

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

	if (it->name_len < c->plen ||
	    memcmp(it->name, c->s->prefix, c->plen ? c->plen - 1 : 0) != 0 ||
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

		if ((r = gcs_url_object(s, &url, "storage/v1", NULL)) < 0 ||
		    (lprefix[0] && (r = gcs_url_param(&url, "prefix", lprefix)) < 0) ||
		    (r = gcs_url_param(&url, "fields",
				       "items(name,size,generation,updated),nextPageToken")) < 0 ||
		    (r = gcs_url_param(&url, "prettyPrint", "false")) < 0 ||
		    (r = gcs_url_param(&url, "maxResults", "1000")) < 0 ||
		    (token && (r = gcs_url_param(&url, "pageToken", token)) < 0))
			goto out;
		free(token);
		token = NULL;
		rq.url = url.data;
		rq.resp = &page;
		r = gcs_http_do(&s->http, &rq);
		if (r < 0)
			goto out;
		if (rq.status != 200) {
			r = gcs_status_errno(&rq, "list");
			if (rq.status == 404)
				xprofs_err("gcs: bucket '%s' does not exist (%s)", s->bucket,
					   rq.errmsg);
			else if (rq.status == 401 || rq.status == 403)
				xprofs_err("gcs: access to gs://%s denied (HTTP %ld: %s); check "
					   "the credentials",
					   s->bucket, rq.status, rq.errmsg);
			else
				xprofs_err("gcs: listing gs://%s/%s failed: HTTP %ld %s", s->bucket,
					   s->prefix, rq.status, rq.errmsg);
			goto out;
		}
		r = gcs_list_parse(page.data ? page.data : "", page.len, list_item, &c, &token,
				   &skipped);
		c.skipped += skipped;
		if (r < 0) {
			xprofs_err("gcs: listing gs://%s/%s: malformed answer (%s)", s->bucket,
				   s->prefix, strerror(-r));
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

int gcs_ns_refresh(struct gcs_store *s)
{
	struct gcs_tree *nt = NULL;
	struct gcs_journal *j;
	int64_t start, ms;
	int r;

	pthread_mutex_lock(&s->list_lock);
	pthread_rwlock_wrlock(&s->tree_lock);
	gcs_ns_journal_free(s);
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
		s->tree_time =
			xprofs_mono_ns() - (int64_t)s->o.list_ttl_s * 1000000000LL + 5000000000LL;
	}
	s->journaling = false;
	gcs_ns_journal_free(s);
	pthread_rwlock_unlock(&s->tree_lock);
	pthread_mutex_unlock(&s->list_lock);
	gcs_tree_free(nt);
	if (r == 0)
		xprofs_debug("gcs: listed gs://%s/%s in %lld ms", s->bucket, s->prefix,
			     (long long)ms);
	return r;
}

void *gcs_ns_bg_main(void *arg)
{
	struct gcs_store *s = arg;

	pthread_mutex_lock(&s->bg_lock);
	while (!s->bg_stop) {
		if (!s->bg_want) {
			pthread_cond_wait(&s->bg_cond, &s->bg_lock);
			continue;
		}
		pthread_mutex_unlock(&s->bg_lock);
		if (gcs_ns_refresh(s) < 0)
			xprofs_warn("gcs: background relisting of gs://%s/%s failed; keeping the "
				    "old tree",
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
	struct gcs_list *n;
	bool found = false;

	pthread_mutex_lock(&s->w_lock);
	for (n = s->writers; n && !found; n = n->next) {
		struct gcs_writer *w = gcs_list_entry(n, struct gcs_writer, link);

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

int gcs_ns_stat(struct gcs_store *s, const char *path, struct xprofs_store_stat *st)
{
	int r;

	pthread_rwlock_rdlock(&s->tree_lock);
	maybe_refresh(s);
	r = gcs_tree_stat(s->tree, path, st);
	pthread_rwlock_unlock(&s->tree_lock);
	return r;
}

int gcs_stat(struct xprofs_store *base, const char *path, struct xprofs_store_stat *st)
{
	struct gcs_store *s = (struct gcs_store *)base;
	int r = gcs_ns_stat(s, path, st);

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
	int r;

	if ((r = xprofs_grow(&l->v, &l->cap, l->n, sizeof(*l->v), 64)) < 0)
		return r;
	l->v[l->n].name = strdup(name);
	if (!l->v[l->n].name)
		return -ENOMEM;
	l->v[l->n++].st = *st;
	return 0;
}

int gcs_list(struct xprofs_store *base, const char *dir, xprofs_store_list_cb cb, void *arg)
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
		struct gcs_list *n;

		pthread_mutex_lock(&s->w_lock);
		for (n = s->writers; n && r == 0; n = n->next) {
			struct gcs_writer *w = gcs_list_entry(n, struct gcs_writer, link);
			const char *name = w->path + dlen + (dlen ? 1 : 0);
			struct xprofs_store_stat wst = {.type = XPROFS_STORE_FILE};

			if (strncmp(w->path, dir, dlen) != 0 || (dlen && w->path[dlen] != '/') ||
			    strchr(name, '/'))
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

int gcs_refresh(struct xprofs_store *base)
{
	return gcs_ns_refresh((struct gcs_store *)base);
}
