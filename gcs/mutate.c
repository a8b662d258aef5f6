/*
 * gcs/mutate.c - namespace changes through the store: unlink (a DELETE
 * pinned to the listed generation), rename (a server-side rewriteTo, or a
 * copy through this machine for servers without it, then a DELETE), mkdir
 * (a directory in the tree, plus a "dir/" placeholder object with
 * mkdir_placeholders) and rmdir. Each updates the tree at once through
 * gcs_ns_apply().
 *
 * A directory rename moves object by object (rewriteTo with
 * ifGenerationMatch=0, then a DELETE pinned to the source generation; a
 * failed DELETE deletes the copy again), so an interrupted rename leaves
 * every object in exactly one of the two places, and running it again
 * finishes it: a destination that already holds an identical copy (size and
 * CRC-32C) of a source, left by a crash between copy and delete, counts as
 * copied.
 *
 * Limits: a directory rename is not atomic (other clients see it half
 * done) and holds the list of the directory's files in memory. Unlike
 * rename(2) it merges into an existing destination directory (so that an
 * interrupted rename can be run again), never replacing a file there
 * (-EEXIST unless it is an identical copy).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gcs-internal.h"

/* The stat of @path for a change to it: -EROFS on a read-only store. */
static int stat_to_change(struct gcs_store *s, const char *path, struct xprofs_store_stat *st)
{
	if (s->o.read_only)
		return -EROFS;
	return gcs_ns_stat(s, path, st);
}

/* DELETE @obj, with ifGenerationMatch=@gen when @gen is not 0. A vanished object is success. */
static int delete_object(struct gcs_store *s, const char *obj, uint64_t gen)
{
	struct gcs_req rq = {.kind = GCS_REQ_DELETE, .method = "DELETE"};
	struct xprofs_buf url;
	int r;

	xprofs_buf_init(&url, GCS_URL_MAX);
	for (;;) {
		if ((r = gcs_url_object(s, &url, "storage/v1", obj)) < 0 ||
		    (gen && (r = gcs_url_param_u64(&url, "ifGenerationMatch", gen)) < 0))
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
		r = gcs_status_errno(&rq, obj);
out:
	xprofs_buf_deinit(&url);
	return r;
}

int gcs_unlink(struct xprofs_store *base, const char *path)
{
	struct gcs_store *s = (struct gcs_store *)base;
	struct xprofs_store_stat st;
	char *obj;
	int r;

	r = stat_to_change(s, path, &st);
	if (r < 0)
		return r;
	if (st.type == XPROFS_STORE_DIR)
		return -EISDIR;
	obj = gcs_object_name(s, path, "");
	if (!obj)
		return -ENAMETOOLONG;
	r = delete_object(s, obj, st.generation);
	free(obj);
	if (r == 0) {
		r = gcs_ns_apply(s, GCS_J_REMOVE, path, NULL);
		if (r == -ENOENT)
			r = 0;
	}
	return r;
}

static int rewrite_object(struct gcs_store *s, const char *from, uint64_t gen, const char *to,
			  uint64_t to_gen, struct xprofs_store_stat *st)
{
	struct xprofs_buf url, resp;
	char *token = NULL;
	bool done = false;
	unsigned rounds = 0;
	int r;

	xprofs_buf_init(&url, GCS_URL_MAX);
	xprofs_buf_init(&resp, GCS_SMALL_MAX);
	while (!done) {
		struct gcs_req rq = GCS_REQ_POST_EMPTY_JSON(GCS_REQ_OTHER);

		if ((r = gcs_url_path(s, &url, "storage/v1", from)) < 0 ||
		    (r = xprofs_buf_adds(&url, "/rewriteTo/b/")) < 0 ||
		    (r = gcs_pct_encode(&url, s->bucket, strlen(s->bucket))) < 0 ||
		    (r = xprofs_buf_adds(&url, "/o/")) < 0 ||
		    (r = gcs_pct_encode(&url, to, strlen(to))) < 0 ||
		    (r = gcs_url_user_project(s, &url)) < 0 ||
		    (r = gcs_url_param_u64(&url, "sourceGeneration", gen)) < 0 ||
		    (r = gcs_url_param_u64(&url, "ifGenerationMatch", to_gen)) < 0 ||
		    (token && (r = gcs_url_param(&url, "rewriteToken", token)) < 0))
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
			r = gcs_status_errno(&rq, from);
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
static int copy_via_spool(struct gcs_store *s, const char *from,
			  const struct xprofs_store_stat *fst, const char *to, const char *to_obj,
			  uint64_t to_gen, struct xprofs_store_stat *st)
{
	struct gcs_writer w = {.s = s, .fd = -1, .if_gen = to_gen, .size = fst->size};
	int r;

	w.fd = gcs_spool_open(s);
	if (w.fd < 0)
		return w.fd;
	w.obj = (char *)to_obj;
	r = gcs_prefill(s, from, fst, w.fd);
	if (r == 0)
		r = gcs_upload(s, &w, w.size, st);
	close(w.fd);
	return r;
}

/* Whether objects @a and @b hold the same bytes: the same size and CRC-32C. 1, 0 or -errno. */
static int same_content(struct gcs_store *s, const char *a, const char *b)
{
	struct xprofs_buf ra, rb;
	struct xprofs_store_stat sa, sb;
	char *ca = NULL, *cb = NULL;
	bool fa, fb;
	int r;

	xprofs_buf_init(&ra, GCS_SMALL_MAX);
	xprofs_buf_init(&rb, GCS_SMALL_MAX);
	if ((r = gcs_object_meta(s, a, &ra, &fa)) < 0 || (r = gcs_object_meta(s, b, &rb, &fb)) < 0)
		goto out;
	r = 0;
	if (!fa || !fb || gcs_object_parse(ra.data, ra.len, &sa, NULL) < 0 ||
	    gcs_object_parse(rb.data, rb.len, &sb, NULL) < 0 || sa.size != sb.size ||
	    gcs_json_string(ra.data, ra.len, "crc32c", &ca) < 0 ||
	    gcs_json_string(rb.data, rb.len, "crc32c", &cb) < 0)
		goto out;
	r = strcmp(ca, cb) == 0;
out:
	free(ca);
	free(cb);
	xprofs_buf_deinit(&rb);
	xprofs_buf_deinit(&ra);
	return r;
}

/* Move file @from to the absent @to (a step of a directory rename); see the header. */
static int move_file(struct gcs_store *s, const char *from, const char *to)
{
	struct xprofs_store_stat st, nst = {0};
	char *ofrom = gcs_object_name(s, from, ""), *oto = gcs_object_name(s, to, "");
	int r;

	if (!ofrom || !oto) {
		r = -ENAMETOOLONG;
		goto out;
	}
	r = gcs_ns_stat(s, from, &st);
	if (r < 0)
		goto out;
	r = rewrite_object(s, ofrom, st.generation, oto, 0, &nst);
	if (r == -ENOTSUP)
		r = copy_via_spool(s, ofrom, &st, to, oto, 0, &nst);
	if (r == -EEXIST && same_content(s, ofrom, oto) == 1) {
		xprofs_info("gcs: rename: %s already holds a copy of %s", oto, ofrom);
		r = gcs_ns_stat(s, to, &nst);
		if (r < 0) /* not in our tree yet: any generation will do for the rollback below */
			r = gcs_object_generation(s, oto, &nst.generation);
		nst.size = st.size;
		nst.mtime_ns = st.mtime_ns;
	}
	if (r < 0)
		goto out;
	nst.type = XPROFS_STORE_FILE;
	(void)gcs_ns_apply(s, GCS_J_ADD_FILE, to, &nst);
	r = delete_object(s, ofrom, st.generation);
	if (r < 0) {
		/* not in two places: take the copy back */
		if (delete_object(s, oto, nst.generation) == 0)
			(void)gcs_ns_apply(s, GCS_J_REMOVE, to, NULL);
		goto out;
	}
	(void)gcs_ns_apply(s, GCS_J_REMOVE, from, NULL);
out:
	free(oto);
	free(ofrom);
	return r;
}

/* A directory walk for a rename: every file and directory under @dir, parents first. */
struct walk {
	struct gcs_store *s;
	struct walk_entry {
		char *path; /* owned */
		bool is_dir;
	} * v;
	size_t n, cap;
	const char *dir;
};

static int walk_dir(struct walk *w, const char *dir);

static int walk_cb(void *arg, const char *name, const struct xprofs_store_stat *st)
{
	struct walk *w = arg;
	char *p;
	int r;

	if (asprintf(&p, "%s/%s", w->dir, name) < 0)
		return -ENOMEM;
	if ((r = xprofs_grow(&w->v, &w->cap, w->n, sizeof(*w->v), 64)) < 0) {
		free(p);
		return r;
	}
	w->v[w->n].path = p;
	w->v[w->n++].is_dir = st->type == XPROFS_STORE_DIR;
	return st->type == XPROFS_STORE_DIR ? walk_dir(w, p) : 0;
}

static int walk_dir(struct walk *w, const char *dir)
{
	const char *saved = w->dir;
	int r;

	w->dir = dir;
	r = gcs_list(&w->s->base, dir, walk_cb, w);
	w->dir = saved;
	return r;
}

/* Rename directory @from to @to, object by object; files already at @to are kept (-EEXIST). */
static int rename_dir(struct gcs_store *s, const char *from, const char *to)
{
	struct walk w = {.s = s};
	struct xprofs_store_stat dst;
	size_t i, flen = strlen(from);
	char *dpath = NULL;
	int r;

	if (strncmp(to, from, flen) == 0 && to[flen] == '/')
		return -EINVAL; /* into itself */
	r = gcs_ns_stat(s, to, &dst);
	if (r == 0 && dst.type != XPROFS_STORE_DIR)
		return -ENOTDIR;
	/* an existing @to (an interrupted rename's) is merged into; a file there is not replaced */
	r = gcs_ns_apply(s, GCS_J_ADD_DIR, to, NULL);
	if (r < 0 && r != -EEXIST)
		goto out;
	r = walk_dir(&w, from);
	for (i = 0; r == 0 && i < w.n; i++) {
		free(dpath);
		if (asprintf(&dpath, "%s%s", to, w.v[i].path + flen) < 0) {
			dpath = NULL;
			r = -ENOMEM;
			break;
		}
		if (w.v[i].is_dir) {
			r = gcs_ns_apply(s, GCS_J_ADD_DIR, dpath, NULL);
			r = r == -EEXIST ? 0 : r;
		} else {
			r = move_file(s, w.v[i].path, dpath);
		}
	}
	/* the source's directories, deepest first (empty now unless a step failed) */
	for (i = w.n; r == 0 && i > 0; i--)
		if (w.v[i - 1].is_dir)
			(void)gcs_rmdir(&s->base, w.v[i - 1].path);
	if (r == 0)
		r = gcs_rmdir(&s->base, from);
out:
	free(dpath);
	for (i = 0; i < w.n; i++)
		free(w.v[i].path);
	free(w.v);
	return r;
}

int gcs_rename(struct xprofs_store *base, const char *from, const char *to)
{
	struct gcs_store *s = (struct gcs_store *)base;
	struct xprofs_store_stat st, dst, nst;
	char *ofrom = NULL, *oto = NULL;
	uint64_t to_gen = 0;
	int r;

	r = stat_to_change(s, from, &st);
	if (r < 0)
		return r;
	if (strcmp(from, to) == 0)
		return 0;
	if (st.type == XPROFS_STORE_DIR)
		return rename_dir(s, from, to);
	r = gcs_ns_stat(s, to, &dst);
	if (r == 0 && dst.type == XPROFS_STORE_DIR)
		return -EISDIR;
	if (r == 0)
		to_gen = dst.generation;
	ofrom = gcs_object_name(s, from, "");
	oto = gcs_object_name(s, to, "");
	if (!ofrom || !oto) {
		r = -ENAMETOOLONG;
		goto out;
	}
	r = rewrite_object(s, ofrom, st.generation, oto, to_gen, &nst);
	if (r == -ENOTSUP)
		r = copy_via_spool(s, ofrom, &st, to, oto, to_gen, &nst);
	if (r == -EEXIST) {
		/* the target changed since we looked: replace what is there now */
		r = gcs_object_generation(s, oto, &to_gen);
		if (r == 0)
			r = rewrite_object(s, ofrom, st.generation, oto, to_gen, &nst);
		if (r == -ENOTSUP)
			r = copy_via_spool(s, ofrom, &st, to, oto, to_gen, &nst);
	}
	if (r < 0)
		goto out;
	nst.type = XPROFS_STORE_FILE;
	(void)gcs_ns_apply(s, GCS_J_ADD_FILE, to, &nst);
	r = delete_object(s, ofrom, st.generation);
	if (r == 0)
		(void)gcs_ns_apply(s, GCS_J_REMOVE, from, NULL);
out:
	free(oto);
	free(ofrom);
	return r;
}

int gcs_mkdir(struct xprofs_store *base, const char *path)
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

		w.obj = gcs_object_name(s, path, "/");
		if (!w.obj)
			return -ENAMETOOLONG;
		w.fd = gcs_spool_open(s);
		r = w.fd < 0 ? w.fd : gcs_upload(s, &w, 0, &pst);
		if (w.fd >= 0)
			close(w.fd);
		free(w.obj);
		if (r < 0 && r != -EEXIST)
			return r;
	}
	return gcs_ns_apply(s, GCS_J_ADD_DIR, path, NULL);
}

struct any_child {
	bool found;
};

static int any_child_cb(void *arg, const char *name, const struct xprofs_store_stat *st)
{
	((struct any_child *)arg)->found = true;
	return 1;
}

int gcs_rmdir(struct xprofs_store *base, const char *path)
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
	obj = gcs_object_name(s, path, "/");
	if (!obj)
		return -ENAMETOOLONG;
	r = delete_object(s, obj, 0);
	free(obj);
	if (r < 0)
		return r;
	r = gcs_ns_apply(s, GCS_J_REMOVE, path, NULL);
	return r == -ENOENT ? 0 : r;
}
