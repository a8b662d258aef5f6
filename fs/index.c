/*
 * fs/index.c - the runs index behind MOUNT/runs/, and mount-path
 * classification. No FUSE here (unit-tested over a fake store).
 *
 * Design: one recursive walk of the store finds every "<run>/plugins/profile"
 * (as TensorBoard's recursive "profile" glob does), lists its sessions and each
 * session's "*.xplane.pb" hosts, and builds an immutable tree: runs nest by
 * path components ("a/b" becomes runs/a/b/), the logdir-root run is shown as
 * "_root". Readers take a reference to a snapshot, so a rebuild never
 * changes what a running request sees. Nothing here opens a profile.
 *
 * Symlinks: the store's list() follows a symlink that stays inside the root
 * (anywhere with follow_symlinks=outside), so a linked run, session or host
 * appears under the link's name, as TensorBoard's and XProf's walks of a
 * logdir (tf.io.gfile.walk / listdir + isdir, which follow links) list it.
 * A link to a directory the walk is already inside (e.g. "loop -> ..") is
 * never entered: directories are identified by their store fileid.
 *
 * Limits: FS_INDEX_MAX_DEPTH directory levels and FS_INDEX_MAX_ENTRIES listed
 * entries per walk (beyond that the walk stops, logs, and keeps what it has).
 * The contents of session directories are not walked further.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xprofs/decode.h"
#include "fs-internal.h"

#define PROFILE_SUBDIR FS_PLUGINS_DIR "/" FS_PROFILE_DIR

bool fs_is_profile_name(const char *name)
{
	size_t n = strlen(name), s = strlen(FS_HOST_SUFFIX);

	return n >= s && !strcmp(name + n - s, FS_HOST_SUFFIX);
}

int fs_store_path(char *buf, size_t size, const char *run, const char *session, const char *host)
{
	int n;

	n = snprintf(buf, size, "%s%s" PROFILE_SUBDIR "%s%s%s%s%s", run, *run ? "/" : "",
		     session ? "/" : "", session ? session : "", host ? "/" : "", host ? host : "",
		     host ? FS_HOST_SUFFIX : "");
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

int fs_host_path(const struct fs_target *t, char *buf, size_t size)
{
	return fs_store_path(buf, size, t->node->path, t->session->name, t->host->name);
}

/* ---- listing into arrays ---------------------------------------------- */

struct ent {
	char *name;
	struct xprofs_store_stat st;
};

struct ents {
	struct ent *v;
	size_t n, cap;
	size_t *budget; /* shared entry budget of the walk */
};

static int ents_add(void *arg, const char *name, const struct xprofs_store_stat *st)
{
	struct ents *e = arg;
	int r;

	if (*e->budget == 0)
		return -E2BIG;
	if ((r = xprofs_grow(&e->v, &e->cap, e->n, sizeof(*e->v), 16)) < 0)
		return r;
	e->v[e->n].name = strdup(name);
	if (!e->v[e->n].name)
		return -ENOMEM;
	e->v[e->n].st = *st;
	e->n++;
	(*e->budget)--;
	return 0;
}

static void ents_free(struct ents *e)
{
	for (size_t i = 0; i < e->n; i++)
		free(e->v[i].name);
	free(e->v);
	e->v = NULL;
	e->n = e->cap = 0;
}

static int ent_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ent *)a)->name, ((const struct ent *)b)->name);
}

static int list_sorted(struct xprofs_store *s, const char *dir, size_t *budget, struct ents *e)
{
	int r;

	memset(e, 0, sizeof(*e));
	e->budget = budget;
	r = xprofs_store_list(s, dir, ents_add, e);
	if (r < 0) {
		ents_free(e);
		return r;
	}
	if (e->n)
		qsort(e->v, e->n, sizeof(*e->v), ent_cmp);
	return 0;
}

/* ---- tree ------------------------------------------------------------- */

static void node_free_members(struct fs_run_node *n)
{
	for (size_t i = 0; i < n->nchildren; i++) {
		node_free_members(n->children[i]);
		free(n->children[i]);
	}
	free(n->children);
	for (size_t i = 0; i < n->nsessions; i++) {
		for (size_t j = 0; j < n->sessions[i].nhosts; j++)
			free(n->sessions[i].hosts[j].name);
		free(n->sessions[i].hosts);
		for (size_t j = 0; j < n->sessions[i].nsidecars; j++)
			free(n->sessions[i].sidecars[j].name);
		free(n->sessions[i].sidecars);
		free(n->sessions[i].name);
	}
	free(n->sessions);
	free(n->name);
	free(n->path);
}

static struct fs_run_node *node_child(const struct fs_run_node *n, const char *name, size_t len)
{
	for (size_t i = 0; i < n->nchildren; i++)
		if (strlen(n->children[i]->name) == len && !memcmp(n->children[i]->name, name, len))
			return n->children[i];
	return NULL;
}

const struct fs_run_node *fs_node_child(const struct fs_run_node *n, const char *name)
{
	return node_child(n, name, strlen(name));
}

static int child_cmp(const void *a, const void *b)
{
	return strcmp((*(struct fs_run_node *const *)a)->name,
		      (*(struct fs_run_node *const *)b)->name);
}

/* node_get_child() - find or add child @name (@len bytes) of @n. */
static int node_get_child(struct fs_run_node *n, const char *name, size_t len,
			  struct fs_run_node **out)
{
	struct fs_run_node *c, **nv;

	c = node_child(n, name, len);
	if (c) {
		*out = c;
		return 0;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->name = strndup(name, len);
	nv = realloc(n->children, (n->nchildren + 1) * sizeof(*nv));
	if (!c->name || !nv) {
		free(c->name);
		free(c);
		if (nv)
			n->children = nv;
		return -ENOMEM;
	}
	n->children = nv;
	n->children[n->nchildren++] = c;
	qsort(n->children, n->nchildren, sizeof(*n->children), child_cmp);
	*out = c;
	return 0;
}

/* add_run() - the node for run @path, created with its parents. */
static int add_run(struct fs_index *idx, const char *path, struct fs_run_node **out)
{
	struct fs_run_node *n = &idx->top;
	const char *p = path, *slash;
	int r;

	if (!*path) {
		r = node_get_child(n, FS_NAME_ROOT_RUN, strlen(FS_NAME_ROOT_RUN), &n);
		if (r < 0)
			return r;
	}
	while (*p) {
		slash = strchr(p, '/');
		r = node_get_child(n, p, slash ? (size_t)(slash - p) : strlen(p), &n);
		if (r < 0)
			return r;
		p = slash ? slash + 1 : p + strlen(p);
	}
	if (!n->is_run) {
		n->path = strdup(path);
		if (!n->path)
			return -ENOMEM;
		n->is_run = true;
		idx->runs++;
	}
	*out = n;
	return 0;
}

static bool is_sidecar_name(const char *name)
{
	size_t n = strlen(name), s = strlen(FS_SIDECAR_SUFFIX);

	return n > s && !strcmp(name + n - s, FS_SIDECAR_SUFFIX);
}

/*
 * load_sidecars() - the session's sidecars (XLA programs) from its listing
 * @he (sorted), at most FS_SIDECARS_MAX. 0 or -ENOMEM.
 */
static int load_sidecars(struct fs_session *sess, struct ents *he)
{
	size_t n = 0;

	for (size_t j = 0; j < he->n; j++)
		n += he->v[j].st.type == XPROFS_STORE_FILE && is_sidecar_name(he->v[j].name);
	if (n > FS_SIDECARS_MAX)
		n = FS_SIDECARS_MAX;
	if (!n)
		return 0;
	if (!(sess->sidecars = calloc(n, sizeof(*sess->sidecars))))
		return -ENOMEM;
	for (size_t j = 0; j < he->n && sess->nsidecars < n; j++) {
		struct fs_host *h = &sess->sidecars[sess->nsidecars];

		if (he->v[j].st.type != XPROFS_STORE_FILE || !is_sidecar_name(he->v[j].name))
			continue;
		if (!(h->name = strdup(he->v[j].name)))
			return -ENOMEM;
		h->st = he->v[j].st;
		sess->nsidecars++;
	}
	return 0;
}

/* load_sessions() - fill @run's sessions from "<run>/plugins/profile". */
static int load_sessions(struct xprofs_store *s, struct fs_index *idx, struct fs_run_node *run,
			 size_t *budget)
{
	char dir[XPROFS_PATH_MAX + 1], sdir[XPROFS_PATH_MAX + 1];
	struct ents se = {0}, he = {0};
	size_t i, j, nsess = 0;
	int r;

	r = fs_store_path(dir, sizeof(dir), run->path, NULL, NULL);
	if (r < 0)
		return r;
	r = list_sorted(s, dir, budget, &se);
	if (r < 0)
		return r;
	for (i = 0; i < se.n; i++)
		nsess += se.v[i].st.type == XPROFS_STORE_DIR;
	run->sessions = calloc(nsess ? nsess : 1, sizeof(*run->sessions));
	if (!run->sessions) {
		r = -ENOMEM;
		goto out;
	}
	for (i = 0; i < se.n; i++) {
		struct fs_session *sess;
		size_t nh = 0;

		if (se.v[i].st.type != XPROFS_STORE_DIR)
			continue;
		sess = &run->sessions[run->nsessions++];
		sess->name = se.v[i].name;
		se.v[i].name = NULL;
		sess->mtime_ns = se.v[i].st.mtime_ns;
		sess->mode = se.v[i].st.mode;
		sess->uid = se.v[i].st.uid;
		sess->gid = se.v[i].st.gid;
		r = fs_store_path(sdir, sizeof(sdir), run->path, sess->name, NULL);
		if (r < 0)
			goto out;
		r = list_sorted(s, sdir, budget, &he);
		if (r == -ENOENT)
			continue; /* vanished meanwhile */
		if (r < 0)
			goto out;
		for (j = 0; j < he.n; j++)
			nh += he.v[j].st.type == XPROFS_STORE_FILE &&
			      fs_is_profile_name(he.v[j].name) &&
			      strlen(he.v[j].name) > strlen(FS_HOST_SUFFIX);
		sess->hosts = calloc(nh ? nh : 1, sizeof(*sess->hosts));
		if (!sess->hosts) {
			r = -ENOMEM;
			ents_free(&he);
			goto out;
		}
		for (j = 0; j < he.n; j++) {
			size_t len = strlen(he.v[j].name);
			struct fs_host *h;

			if (he.v[j].st.type != XPROFS_STORE_FILE ||
			    !fs_is_profile_name(he.v[j].name) || len <= strlen(FS_HOST_SUFFIX))
				continue;
			h = &sess->hosts[sess->nhosts];
			h->name = strndup(he.v[j].name, len - strlen(FS_HOST_SUFFIX));
			if (!h->name) {
				r = -ENOMEM;
				ents_free(&he);
				goto out;
			}
			h->st = he.v[j].st;
			sess->nhosts++;
			idx->hosts++;
		}
		r = load_sidecars(sess, &he);
		ents_free(&he);
		if (r < 0)
			goto out;
		idx->sessions++;
	}
	r = 0;
out:
	ents_free(&se);
	return r;
}

/* is_plugins_dir() - @dir is "plugins" or ends in "/plugins". */
static bool is_plugins_dir(const char *dir)
{
	size_t n = strlen(dir), p = strlen(FS_PLUGINS_DIR);

	return !strcmp(dir, FS_PLUGINS_DIR) ||
	       (n > p + 1 && dir[n - p - 1] == '/' && !strcmp(dir + n - p, FS_PLUGINS_DIR));
}

/* on_path() - @id is one of the @n directories the walk is inside (a symlink loop). */
static bool on_path(const uint64_t *anc, unsigned n, uint64_t id)
{
	for (unsigned i = 0; id && i < n; i++)
		if (anc[i] == id)
			return true;
	return false;
}

/* walk() - index @dir; @anc[0..@depth] are the fileids of the directories down to @dir. */
static int walk(struct xprofs_store *s, struct fs_index *idx, const char *dir, unsigned depth,
		uint64_t *anc, size_t *budget)
{
	char sub[XPROFS_PATH_MAX + 1], pl[XPROFS_PATH_MAX + 1];
	struct fs_run_node *run;
	struct xprofs_store_stat st;
	struct ents e = {0};
	size_t i;
	int r, n;

	if (depth > FS_INDEX_MAX_DEPTH)
		return 0;
	r = list_sorted(s, dir, budget, &e);
	if (r < 0)
		return depth ? (r == -E2BIG || r == -ENOMEM ? r : 0) : r;
	for (i = 0; i < e.n; i++) {
		if (e.v[i].st.type != XPROFS_STORE_DIR || strcmp(e.v[i].name, FS_PLUGINS_DIR))
			continue;
		n = snprintf(pl, sizeof(pl), "%s%s" PROFILE_SUBDIR, dir, *dir ? "/" : "");
		if (n < 0 || (size_t)n >= sizeof(pl))
			continue;
		if (xprofs_store_stat(s, pl, &st) < 0 || st.type != XPROFS_STORE_DIR)
			continue;
		r = add_run(idx, dir, &run);
		if (r == 0 && !run->sessions) {
			run->mode = st.mode;
			run->uid = st.uid;
			run->gid = st.gid;
			r = load_sessions(s, idx, run, budget);
		}
		if (r == -ENOMEM || r == -E2BIG)
			goto out;
		r = 0;
	}
	for (i = 0; i < e.n; i++) {
		if (e.v[i].st.type != XPROFS_STORE_DIR ||
		    (e.v[i].st.link && on_path(anc, depth + 1, e.v[i].st.fileid)))
			continue;
		/* "<x>/plugins/profile" holds sessions, already read above */
		if (!strcmp(e.v[i].name, FS_PROFILE_DIR) && is_plugins_dir(dir))
			continue;
		n = snprintf(sub, sizeof(sub), "%s%s%s", dir, *dir ? "/" : "", e.v[i].name);
		if (n < 0 || (size_t)n >= sizeof(sub))
			continue;
		anc[depth + 1] = e.v[i].st.fileid;
		r = walk(s, idx, sub, depth + 1, anc, budget);
		if (r < 0)
			goto out;
	}
	r = 0;
out:
	ents_free(&e);
	return r;
}

int fs_index_build(struct xprofs_store *store, struct fs_index **out)
{
	size_t budget = FS_INDEX_MAX_ENTRIES;
	uint64_t anc[FS_INDEX_MAX_DEPTH + 2] = {0};
	struct xprofs_store_stat rst;
	struct fs_index *idx;
	int r;

	idx = calloc(1, sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	idx->refs = 1;
	idx->built_mono_ns = xprofs_mono_ns();
	if (xprofs_store_stat(store, "", &rst) == 0)
		anc[0] = rst.fileid;
	r = walk(store, idx, "", 0, anc, &budget);
	if (r == -E2BIG) {
		xprofs_warn("runs index: more than %d entries in the source, index is partial",
			    FS_INDEX_MAX_ENTRIES);
		r = 0;
	}
	if (r < 0) {
		fs_index_put(idx);
		return r;
	}
	*out = idx;
	return 0;
}

struct fs_index *fs_index_get(struct fs_index *idx)
{
	if (idx)
		__atomic_add_fetch(&idx->refs, 1, __ATOMIC_RELAXED);
	return idx;
}

void fs_index_put(struct fs_index *idx)
{
	if (!idx || __atomic_sub_fetch(&idx->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	node_free_members(&idx->top);
	free(idx);
}

/* ---- classification --------------------------------------------------- */

/* next_comp() - the component at *@p (length in *@len); advances *@p past it. */
static const char *next_comp(const char **p, size_t *len)
{
	const char *c = *p, *slash;

	while (*c == '/')
		c++;
	if (!*c)
		return NULL;
	slash = strchr(c, '/');
	*len = slash ? (size_t)(slash - c) : strlen(c);
	*p = c + *len;
	return c;
}

/*
 * dir_comp() - next_comp(), or at the path's end NULL with @t the directory
 * @kind: the caller returns 0 then.
 */
static const char *dir_comp(const char **p, size_t *len, struct fs_target *t, enum fs_kind kind)
{
	const char *c = next_comp(p, len);

	if (!c)
		t->kind = kind;
	return c;
}

static bool comp_is(const char *c, size_t len, const char *s)
{
	return strlen(s) == len && !memcmp(c, s, len);
}

/* leaf() - @t is a file of @kind: nothing may follow it in the path (rest @p). */
static int leaf(const char *p, struct fs_target *t, enum fs_kind kind)
{
	size_t len;

	t->kind = kind;
	return next_comp(&p, &len) ? -ENOTDIR : 0;
}

/*
 * comp_copy() - a plane/line name into @dst (XPROFS_NAME_MAX + 1 bytes);
 * fs_path_classify() has checked every component's length already.
 */
static void comp_copy(char *dst, const char *c, size_t len)
{
	memcpy(dst, c, len);
	dst[len] = '\0';
}

static const struct fs_session *find_session(const struct fs_run_node *n, const char *c, size_t len)
{
	for (size_t i = 0; i < n->nsessions; i++)
		if (comp_is(c, len, n->sessions[i].name))
			return &n->sessions[i];
	return NULL;
}

static const struct fs_host *find_host(const struct fs_session *s, const char *c, size_t len)
{
	for (size_t i = 0; i < s->nhosts; i++)
		if (comp_is(c, len, s->hosts[i].name))
			return &s->hosts[i];
	return NULL;
}

/*
 * The views of a slice directory: trace.json (and later trace.pftrace: one
 * more entry). Every one must render through the line walk, which applies
 * the window.
 */
const enum xprofs_view fs_slice_views[] = {XPROFS_VIEW_TRACE, XPROFS_VIEW_PFTRACE};
const enum xprofs_view fs_session_views[] = {XPROFS_VIEW_HLO_STATS, XPROFS_VIEW_ROOFLINE,
					     XPROFS_VIEW_OP_PROFILE, XPROFS_VIEW_TF_STATS};
const size_t fs_session_nviews = sizeof(fs_session_views) / sizeof(fs_session_views[0]);
const size_t fs_slice_nviews = sizeof(fs_slice_views) / sizeof(fs_slice_views[0]);

/*
 * view_leaf() - component @c (@len bytes) as one of the @n @views: @t is
 * that view's file of @kind (nothing may follow it, rest @p), else -ENOENT.
 */
static int view_leaf(const char *p, struct fs_target *t, const char *c, size_t len,
		     const enum xprofs_view *views, size_t n, enum fs_kind kind)
{
	for (size_t i = 0; i < n; i++) {
		if (comp_is(c, len, xprofs_decode_view_name(views[i]))) {
			t->view = (int)views[i];
			return leaf(p, t, kind);
		}
	}
	return -ENOENT;
}

/* classify_lod() - below a lod/ directory (rest @p): its trace views. */
static int classify_lod(const char *p, struct fs_target *t)
{
	const char *c;
	size_t len;

	t->lod = true;
	c = dir_comp(&p, &len, t, FS_K_LOD);
	if (!c)
		return 0;
	return view_leaf(p, t, c, len, fs_slice_views, fs_slice_nviews, FS_K_VIEW);
}

/* classify_slice() - below steps/ or window/ (@kind says which; rest @p). */
static int classify_slice(const char *p, struct fs_target *t, enum fs_slice kind)
{
	const char *c;
	size_t len;

	c = dir_comp(&p, &len, t, kind == FS_SLICE_STEP ? FS_K_STEPS : FS_K_WINDOWS);
	if (!c)
		return 0;
	t->slice = kind;
	if (kind == FS_SLICE_STEP
		    ? xprofs_decode_step_parse(c, len, &t->step) < 0
		    : xprofs_decode_window_parse(c, len, &t->from_ps, &t->to_ps) < 0) {
		t->bad = c; /* the caller logs why (fs_bad_name_why()) */
		t->bad_len = len;
		return -ENOENT;
	}
	c = dir_comp(&p, &len, t, FS_K_SLICE);
	if (!c)
		return 0;
	if (comp_is(c, len, FS_NAME_LOD))
		return classify_lod(p, t);
	return view_leaf(p, t, c, len, fs_slice_views, fs_slice_nviews, FS_K_VIEW);
}

/*
 * The largest window bound, and how long a bound can be: 20 integer digits
 * and 6 decimals (xprofs_decode_window_parse()).
 */
#define BOUND_MAX "99999999999999999999.999999"
#define WINDOW_SYNTAX                                                                              \
	"window names are <from>-<to>: microseconds in trace.json's time base, decimal, at "       \
	"most 20 digits and 6 decimals, no sign or exponent, from < to (e.g. 1000-2000.5)"

/*
 * bound_ok() - whether @s (@len bytes) is a window bound. The parser decides:
 * a bound is good when it makes a window with the smallest or the largest
 * bound on the other side, so this never drifts from the accepted syntax.
 */
static bool bound_ok(const char *s, size_t len)
{
	char w[2 * sizeof(BOUND_MAX) + 2];
	xprofs_ps128 a, b;
	int k;

	if (len >= sizeof(BOUND_MAX))
		return false;
	k = snprintf(w, sizeof(w), "%.*s-" BOUND_MAX, (int)len, s);
	if (k > 0 && (size_t)k < sizeof(w) && xprofs_decode_window_parse(w, (size_t)k, &a, &b) == 0)
		return true;
	k = snprintf(w, sizeof(w), "0-%.*s", (int)len, s);
	return k > 0 && (size_t)k < sizeof(w) &&
	       xprofs_decode_window_parse(w, (size_t)k, &a, &b) == 0;
}

void fs_bad_name_why(const struct fs_target *t, char *buf, size_t n)
{
	const char *c = t->bad, *dash = c ? memchr(c, '-', t->bad_len) : NULL;
	size_t len = t->bad_len, fl = dash ? (size_t)(dash - c) : 0, tl = dash ? len - fl - 1 : 0;
	int w = len > 80 ? 80 : (int)len; /* the name as shown */

	if (!c)
		snprintf(buf, n, "no bad name");
	else if (t->slice == FS_SLICE_STEP)
		snprintf(buf, n,
			 "\"%.*s\" is not a step: steps are numbered 0, 1, ... (decimal, no sign "
			 "or leading zero, below 1048576)",
			 w, c);
	else if (len > XPROFS_WINDOW_NAME_MAX)
		snprintf(buf, n, "\"%.*s...\" is longer than %d bytes; " WINDOW_SYNTAX, 32, c,
			 XPROFS_WINDOW_NAME_MAX);
	else if (!dash)
		snprintf(buf, n, "\"%.*s\" has no '-' between <from> and <to>; " WINDOW_SYNTAX, w,
			 c);
	else if (!bound_ok(c, fl))
		snprintf(buf, n, "<from> \"%.*s\" is not a time; " WINDOW_SYNTAX, (int)fl, c);
	else if (!bound_ok(dash + 1, tl))
		snprintf(buf, n, "<to> \"%.*s\" is not a time; " WINDOW_SYNTAX, (int)tl, dash + 1);
	else
		snprintf(buf, n, "<from> %.*s is not before <to> %.*s; " WINDOW_SYNTAX, (int)fl, c,
			 (int)tl, dash + 1);
}

/* classify_host() - the part below a host dir. */
static int classify_host(const char *p, struct fs_target *t)
{
	const char *c;
	size_t len;

	c = dir_comp(&p, &len, t, FS_K_HOST);
	if (!c)
		return 0;
	if (comp_is(c, len, FS_NAME_STEPS))
		return classify_slice(p, t, FS_SLICE_STEP);
	if (comp_is(c, len, FS_NAME_WINDOW))
		return classify_slice(p, t, FS_SLICE_WINDOW);
	if (comp_is(c, len, FS_NAME_LOD))
		return classify_lod(p, t);
	for (int v = 0; v < XPROFS_VIEW_COUNT; v++) {
		if (comp_is(c, len, xprofs_decode_view_name((enum xprofs_view)v))) {
			t->kind = FS_K_VIEW;
			t->view = v;
			break;
		}
	}
	if (comp_is(c, len, FS_NAME_ERRORS))
		t->kind = FS_K_ERRORS;
	if (t->kind != FS_K_NONE)
		return leaf(p, t, t->kind);
	if (!comp_is(c, len, FS_NAME_PLANES))
		return -ENOENT;
	c = dir_comp(&p, &len, t, FS_K_PLANES);
	if (!c)
		return 0;
	comp_copy(t->plane, c, len);
	c = dir_comp(&p, &len, t, FS_K_PLANE);
	if (!c)
		return 0;
	comp_copy(t->line, c, len);
	return leaf(p, t, FS_K_TRACK);
}

/* classify_compare_dir() - below compare/<other> (other set; rest @p). */
static int classify_compare_dir(const char *p, struct fs_target *t)
{
	static const enum xprofs_view views[] = {XPROFS_VIEW_OPS, XPROFS_VIEW_STEPS,
						 XPROFS_VIEW_OP_PROFILE, XPROFS_VIEW_SUMMARY};
	const char *c;
	size_t len;

	c = dir_comp(&p, &len, t, FS_K_COMPARE_DIR);
	if (!c)
		return 0;
	return view_leaf(p, t, c, len, views, sizeof(views) / sizeof(views[0]), FS_K_COMPARE_VIEW);
}

/*
 * classify_compare() - below session/compare/ (rest @p): a session of the
 * same run, else a run path as under runs/ followed by one of its sessions
 * (docs/fs.md "Compare"). The run path's directories resolve but list
 * nothing, so a walk never enters another run from here.
 */
static int classify_compare(const struct fs_index *idx, const char *p, struct fs_target *t)
{
	const struct fs_run_node *n = &idx->top, *child;
	const char *c;
	size_t len;

	c = dir_comp(&p, &len, t, FS_K_COMPARE);
	if (!c)
		return 0;
	if ((t->other = find_session(t->node, c, len))) {
		t->other_node = t->node;
		return classify_compare_dir(p, t);
	}
	for (;;) {
		child = node_child(n, c, len);
		if (child) {
			n = child;
			if (!(c = next_comp(&p, &len))) {
				t->kind = FS_K_COMPARE_RUN;
				return 0;
			}
			continue;
		}
		if (!n->is_run || !(t->other = find_session(n, c, len)))
			return -ENOENT;
		t->other_node = n;
		return classify_compare_dir(p, t);
	}
}

static int classify_runs(const struct fs_index *idx, const char *p, struct fs_target *t)
{
	const struct fs_run_node *n;
	const char *c;
	size_t len;

	if (!idx)
		return -ENOENT;
	n = &idx->top;
	for (;;) {
		const struct fs_run_node *child;

		c = next_comp(&p, &len);
		if (!c) {
			t->kind = FS_K_RUNS;
			t->node = n;
			return 0;
		}
		child = node_child(n, c, len);
		if (child) {
			n = child;
			continue;
		}
		if (!n->is_run)
			return -ENOENT;
		t->node = n;
		if (comp_is(c, len, FS_NAME_CAPTURE))
			return leaf(p, t, FS_K_CAPTURE);
		t->session = find_session(n, c, len);
		if (!t->session)
			return -ENOENT;
		c = dir_comp(&p, &len, t, FS_K_SESSION);
		if (!c)
			return 0;
		if (comp_is(c, len, FS_NAME_SESSION_SUMMARY))
			return leaf(p, t, FS_K_SESSION_SUMMARY);
		if (comp_is(c, len, FS_NAME_SESSION_OPS))
			return leaf(p, t, FS_K_SESSION_OPS);
		if (comp_is(c, len, FS_NAME_COMPARE))
			return classify_compare(idx, p, t);
		for (size_t i = 0; i < fs_session_nviews; i++)
			if (comp_is(c, len, xprofs_decode_view_name(fs_session_views[i])))
				return view_leaf(p, t, c, len, fs_session_views, fs_session_nviews,
						 FS_K_SESSION_VIEW);
		t->host = find_host(t->session, c, len);
		if (!t->host)
			return -ENOENT;
		return classify_host(p, t);
	}
}

int fs_path_classify(const struct fs_index *idx, const char *path, struct fs_target *t)
{
	const char *p = path, *c;
	size_t len;

	memset(t, 0, sizeof(*t));
	if (!path || path[0] != '/')
		return -EINVAL;
	if (strlen(path) > XPROFS_PATH_MAX)
		return -ENAMETOOLONG;
	while (next_comp(&p, &len))
		if (len > XPROFS_NAME_MAX)
			return -ENAMETOOLONG;
	p = path;
	c = dir_comp(&p, &len, t, FS_K_ROOT);
	if (!c)
		return 0;
	if (comp_is(c, len, FS_NAME_LOGDIR)) {
		while (*p == '/')
			p++;
		t->kind = FS_K_LOGDIR;
		t->store_path = p;
		return xprofs_store_path_valid(p) ? 0 : -ENOENT;
	}
	if (comp_is(c, len, FS_NAME_STATUS))
		return leaf(p, t, FS_K_STATUS);
	if (comp_is(c, len, FS_NAME_CAPTURE))
		return leaf(p, t, FS_K_CAPTURE);
	if (comp_is(c, len, FS_NAME_RUNS))
		return classify_runs(idx, p, t);
	return -ENOENT;
}
