/*
 * lazy.c - a render's HLO source: the facts table of a profile's
 * programs, made on a view's first asking, once, and shared by the
 * render's contexts (struct xs_hlo_src, rc->hlo in xprofs/xspace.h).
 *
 * Design: the index lists the programs of the profile's "/host:metadata"
 * plane first (xprofs_hlo_index_add_xspace()), so that of a program id
 * both carry the profile's own is the one kept, then the sidecars attached
 * to the profile (xprofs_xspace_set_sidecars()); the facts table
 * (facts.c) is built from it under a mutex on the first get(), and a get()
 * after that only takes the mutex to read the result. A view that never
 * asks costs one allocation. xprofs_hlo_lazy_index() hands out the index
 * alone (made once under the same mutex), for the views that decode
 * programs themselves (memory_viewer.json): the facts are then not built
 * unless a view asks for them too.
 *
 * Limits: those of the index and of the facts table (mem_max); a source
 * that does not read (a name that is no sidecar's, a metadata plane that
 * does not parse, the index's limits) adds what it could: only -ENOMEM
 * fails the get().
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "hlo-internal.h"
#include "xprofs/xspace.h"

/*
 * The facts' options when the caller gives none. hlo/cost.c's function
 * goes in .cost: its FLOPs and bytes then fill each fact's flops and
 * bytes_accessed (NAN until then).
 */
static const struct xprofs_hlo_facts_opts default_opts = {.mem_max = XPROFS_HLO_FACTS_MEM_MAX};

struct xprofs_hlo_lazy {
	struct xs_hlo_src src; /* first: the views get &src */
	pthread_mutex_t lock;
	bool loaded, indexed;
	int r, index_r;
	const struct xprofs_xspace *x;
	struct xprofs_hlo_facts_opts opts;
	struct xprofs_hlo_index *idx;
	struct xprofs_hlo_facts *facts;
};

/* The index of the profile's programs, once; called with h->lock held. */
static int load_index(struct xprofs_hlo_lazy *h)
{
	struct xprofs_buf err;
	int r = 0;

	if (h->indexed)
		return h->index_r;
	h->indexed = true;
	xprofs_buf_init(&err, 1024);
	if ((r = xprofs_hlo_index_new(&h->idx)) < 0)
		goto out;
	if (xprofs_hlo_index_add_xspace(h->idx, h->x, &err) == -ENOMEM) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < h->x->n_sidecars; i++) {
		const struct xprofs_xspace_sidecar *sc = &h->x->sidecars[i];

		xprofs_buf_reset(&err);
		if (xprofs_hlo_index_add_sidecar(h->idx, sc->name, sc->r, &err) == -ENOMEM) {
			r = -ENOMEM;
			goto out;
		}
	}
out:
	xprofs_buf_deinit(&err);
	h->index_r = r;
	return r;
}

static int load(struct xprofs_hlo_lazy *h)
{
	int r = load_index(h);

	if (r == 0 && xprofs_hlo_index_count(h->idx))
		r = xprofs_hlo_facts_build(h->idx, &h->opts, &h->facts);
	return r;
}

static int get(struct xs_hlo_src *s, const struct xprofs_hlo_facts **out)
{
	struct xprofs_hlo_lazy *h = (struct xprofs_hlo_lazy *)s;
	int r;

	pthread_mutex_lock(&h->lock);
	if (!h->loaded) {
		h->loaded = true;
		h->r = load(h);
	}
	*out = h->facts;
	r = h->r;
	pthread_mutex_unlock(&h->lock);
	return r;
}

int xprofs_hlo_lazy_new(const struct xprofs_xspace *x, const struct xprofs_hlo_facts_opts *opts,
			struct xprofs_hlo_lazy **out)
{
	struct xprofs_hlo_lazy *h;

	*out = NULL;
	if (!(h = calloc(1, sizeof(*h))))
		return -ENOMEM;
	h->src.get = get;
	pthread_mutex_init(&h->lock, NULL);
	h->x = x;
	h->opts = opts ? *opts : default_opts;
	*out = h;
	return 0;
}

int xprofs_hlo_lazy_index(struct xs_hlo_src *s, const struct xprofs_hlo_index **out)
{
	struct xprofs_hlo_lazy *h = (struct xprofs_hlo_lazy *)s;
	int r;

	*out = NULL;
	if (!s || s->get != get) /* not ours: no index to hand out */
		return 0;
	pthread_mutex_lock(&h->lock);
	r = load_index(h);
	*out = r == 0 ? h->idx : NULL;
	pthread_mutex_unlock(&h->lock);
	return r;
}

struct xs_hlo_src *xprofs_hlo_lazy_src(struct xprofs_hlo_lazy *h)
{
	return h ? &h->src : NULL;
}

void xprofs_hlo_lazy_free(struct xprofs_hlo_lazy *h)
{
	if (!h)
		return;
	xprofs_hlo_facts_free(h->facts);
	xprofs_hlo_index_free(h->idx);
	pthread_mutex_destroy(&h->lock);
	free(h);
}
