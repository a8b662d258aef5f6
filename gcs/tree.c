/*
 * gcs/tree.c - the in-memory namespace of a bucket prefix: what a flat
 * listing says exists, plus implicit directories (every '/'-separated prefix
 * of an object name) and directories created locally with mkdir.
 *
 * Design: one node per file or directory, found by full path through a
 * chained hash table (FNV-1a, doubling at load 1), with parent / first-child /
 * doubly-linked sibling pointers so list() walks only the children and
 * remove() is O(1). Conflicts are settled the way other GCS filesystems do:
 * when an object "a" and an object "a/b" both exist, "a" is a directory and
 * the file is hidden.
 *
 * Cost: sizeof(struct node) (~96 bytes) + the path + one hash slot (8 bytes)
 * per node, i.e. about 110 + strlen(path) bytes per object; at most
 * GCS_TREE_MAX nodes (-E2BIG beyond). Not thread-safe: the store
 * guards a tree with its rwlock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gcs-internal.h"

#define GCS_TREE_MAX (20u * 1000 * 1000)

struct node {
	char *path;       /* owned; "" for the root */
	const char *name; /* last component, points into path */
	uint64_t hash;
	struct node *hnext;
	struct node *parent, *first, *prev, *next;
	struct xprofs_store_stat st;
	bool local; /* mkdir'ed here: survives refreshes until rmdir */
};

struct gcs_tree {
	struct node *root;
	struct node **slots;
	size_t nslots;
	size_t count; /* nodes, the root included */
	uint64_t bytes;
};

static uint64_t path_hash(const char *p, size_t n)
{
	return xprofs_hash64(p, n);
}

static struct node *find(const struct gcs_tree *t, const char *p, size_t n)
{
	uint64_t h = path_hash(p, n);
	struct node *x;

	for (x = t->slots[h & (t->nslots - 1)]; x; x = x->hnext)
		if (x->hash == h && strncmp(x->path, p, n) == 0 && x->path[n] == '\0')
			return x;
	return NULL;
}

static int grow(struct gcs_tree *t)
{
	size_t n = t->nslots * 2, i;
	struct node **s = calloc(n, sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (i = 0; i < t->nslots; i++) {
		struct node *x = t->slots[i], *nx;

		for (; x; x = nx) {
			nx = x->hnext;
			x->hnext = s[x->hash & (n - 1)];
			s[x->hash & (n - 1)] = x;
		}
	}
	free(t->slots);
	t->slots = s;
	t->bytes += (n - t->nslots) * sizeof(*s);
	t->nslots = n;
	return 0;
}

/* A new child @p (@n bytes) of @parent; not yet in the table. */
static int insert(struct gcs_tree *t, struct node *parent, const char *p, size_t n, int type,
		  struct node **out)
{
	struct node *x;
	const char *slash;
	size_t i;

	if (t->count >= GCS_TREE_MAX)
		return -E2BIG;
	if (t->count >= t->nslots && grow(t) < 0)
		return -ENOMEM;
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->path = strndup(p, n);
	if (!x->path) {
		free(x);
		return -ENOMEM;
	}
	slash = memrchr(x->path, '/', n);
	x->name = slash ? slash + 1 : x->path;
	x->hash = path_hash(p, n);
	x->st.type = type;
	i = x->hash & (t->nslots - 1);
	x->hnext = t->slots[i];
	t->slots[i] = x;
	x->parent = parent;
	if (parent) {
		x->next = parent->first;
		if (parent->first)
			parent->first->prev = x;
		parent->first = x;
	}
	t->count++;
	t->bytes += sizeof(*x) + n + 1;
	*out = x;
	return 0;
}

static void unlink_node(struct gcs_tree *t, struct node *x)
{
	struct node **pp = &t->slots[x->hash & (t->nslots - 1)];

	while (*pp != x)
		pp = &(*pp)->hnext;
	*pp = x->hnext;
	if (x->prev)
		x->prev->next = x->next;
	else if (x->parent)
		x->parent->first = x->next;
	if (x->next)
		x->next->prev = x->prev;
	t->count--;
	t->bytes -= sizeof(*x) + strlen(x->path) + 1;
	free(x->path);
	free(x);
}

int gcs_tree_new(struct gcs_tree **out)
{
	struct gcs_tree *t = calloc(1, sizeof(*t));
	int r = -ENOMEM;

	if (!t)
		goto err;
	t->nslots = 64;
	t->slots = calloc(t->nslots, sizeof(*t->slots));
	if (!t->slots)
		goto err;
	t->bytes = sizeof(*t) + t->nslots * sizeof(*t->slots);
	r = insert(t, NULL, "", 0, XPROFS_STORE_DIR, &t->root);
	if (r < 0)
		goto err;
	*out = t;
	return 0;
err:
	gcs_tree_free(t);
	return r;
}

struct gcs_tree *gcs_tree_free(struct gcs_tree *t)
{
	size_t i;

	if (!t)
		return NULL;
	for (i = 0; t->slots && i < t->nslots; i++) {
		struct node *x = t->slots[i], *nx;

		for (; x; x = nx) {
			nx = x->hnext;
			free(x->path);
			free(x);
		}
	}
	free(t->slots);
	free(t);
	return NULL;
}

/* The directory node for @p (@n bytes), created with its parents as needed. */
static int ensure_dir(struct gcs_tree *t, const char *p, size_t n, struct node **out)
{
	struct node *x, *parent;
	const char *slash;
	int r;

	if (n == 0) {
		*out = t->root;
		return 0;
	}
	x = find(t, p, n);
	if (x) {
		if (x->st.type != XPROFS_STORE_DIR) {
			/* an object "a" and objects under "a/": the directory wins */
			xprofs_debug("gcs: hiding object '%.*s': it is also a directory", (int)n,
				     p);
			x->st.type = XPROFS_STORE_DIR;
			x->st.size = 0;
			x->st.generation = 0;
		}
		*out = x;
		return 0;
	}
	slash = memrchr(p, '/', n);
	r = ensure_dir(t, p, slash ? (size_t)(slash - p) : 0, &parent);
	if (r < 0)
		return r;
	return insert(t, parent, p, n, XPROFS_STORE_DIR, out);
}

int gcs_tree_add_file(struct gcs_tree *t, const char *path, const struct xprofs_store_stat *st)
{
	size_t n = strlen(path);
	const char *slash;
	struct node *x, *parent;
	int r;

	if (n == 0)
		return -EEXIST;
	x = find(t, path, n);
	if (x) {
		if (x->st.type == XPROFS_STORE_DIR)
			return -EEXIST;
		x->st = *st;
		x->st.type = XPROFS_STORE_FILE;
		return 0;
	}
	slash = memrchr(path, '/', n);
	r = ensure_dir(t, path, slash ? (size_t)(slash - path) : 0, &parent);
	if (r < 0)
		return r;
	r = insert(t, parent, path, n, XPROFS_STORE_FILE, &x);
	if (r < 0)
		return r;
	x->st = *st;
	x->st.type = XPROFS_STORE_FILE;
	return 0;
}

int gcs_tree_add_dir(struct gcs_tree *t, const char *path, bool local)
{
	struct node *x;
	int r;

	x = find(t, path, strlen(path));
	if (x && x->st.type != XPROFS_STORE_DIR)
		return -EEXIST;
	r = ensure_dir(t, path, strlen(path), &x);
	if (r < 0)
		return r;
	if (local && x != t->root)
		x->local = true;
	return 0;
}

int gcs_tree_remove(struct gcs_tree *t, const char *path)
{
	struct node *x = find(t, path, strlen(path));

	if (!x)
		return -ENOENT;
	if (x == t->root)
		return -EBUSY;
	if (x->first)
		return -ENOTEMPTY;
	unlink_node(t, x);
	return 0;
}

int gcs_tree_stat(struct gcs_tree *t, const char *path, struct xprofs_store_stat *st)
{
	struct node *x = find(t, path, strlen(path));

	if (!x)
		return -ENOENT;
	*st = x->st;
	return 0;
}

int gcs_tree_list(struct gcs_tree *t, const char *dir, xprofs_store_list_cb cb, void *arg)
{
	struct node *x = find(t, dir, strlen(dir));
	int r;

	if (!x)
		return -ENOENT;
	if (x->st.type != XPROFS_STORE_DIR)
		return -ENOTDIR;
	for (x = x->first; x; x = x->next) {
		r = cb(arg, x->name, &x->st);
		if (r != 0)
			return r;
	}
	return 0;
}

int gcs_tree_copy_local_dirs(struct gcs_tree *from, struct gcs_tree *to)
{
	size_t i;
	int r;

	for (i = 0; i < from->nslots; i++) {
		struct node *x;

		for (x = from->slots[i]; x; x = x->hnext) {
			if (!x->local)
				continue;
			r = gcs_tree_add_dir(to, x->path, true);
			if (r < 0 && r != -EEXIST)
				return r;
		}
	}
	return 0;
}

void gcs_tree_count(const struct gcs_tree *t, uint64_t *nodes, uint64_t *bytes)
{
	*nodes = t->count;
	*bytes = t->bytes;
}
