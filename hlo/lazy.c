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
 * The default options fill each fact's FLOPs and bytes with hlo/cost.c's
 * figures as XProf's GPU cost analysis gives them (gpu_cost()): the open
 * XProf registers a cost analysis for GPUs only, and the views use them on
 * GPU planes only.
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
 * The divisor of XProf's GPU "device flops" (XProfGpuCostAnalysis in
 * xprof/utils/xprof_gpu_cost_analysis.cc): an instruction whose widest
 * operand (GetInputBitwidths(): array operands only) has 8 bits runs at
 * twice the 16-bit peak, 4 bits at four times, so its flops count half or a
 * quarter against that peak. A custom call is not given the default rule:
 * only a cuBLASLt gemm is, by its first operand's width; any other keeps
 * its flops.
 */
static unsigned device_divisor(const struct xprofs_hlo_program *p, size_t i)
{
	struct xprofs_hlo_instr in;
	struct xprofs_hlo_shape s;
	unsigned bits = 0, b;

	if (xprofs_hlo_instr_get(p, i, &in) < 0)
		return 1;
	if (!strcmp(in.opcode, "custom-call")) {
		if (strcmp(in.custom_call_target, "__cublas$lt$matmul") &&
		    strcmp(in.custom_call_target, "__cublas$lt$matmul$f8"))
			return 1;
		if (in.n_operands > 1)
			in.n_operands = 1;
	}
	for (size_t k = 0; k < in.n_operands; k++) {
		struct xprofs_hlo_instr op;

		if (xprofs_hlo_instr_get(p, in.operands[k], &op) < 0 ||
		    xprofs_hlo_shape_get(p, op.shape, &s) < 0)
			continue;
		b = xprofs_hlo_type_bits(s.element_type); /* 0: tuple, token, opaque */
		bits = b > bits ? b : bits;
	}
	return bits == 8 ? 2 : bits == 4 ? 4 : 1;
}

/*
 * A xprofs_hlo_cost_fn: hlo/cost.c's figures as XProf's GPU
 * PerformanceInfoWrapper takes them (HloCostAnalysisWrapper, with
 * ValidHloCost()): ModelFlops() the analysis' flops, DeviceFlops() those
 * less XProfGpuCostAnalysis's adjustment (device_divisor()),
 * bytes_accessed() its bytes accessed; a figure the program does not
 * determine stays NAN.
 */
static void gpu_cost(void *arg, const struct xprofs_hlo_program *p, size_t i, double *flops,
		     double *device_flops, double *bytes_accessed)
{
	struct xprofs_hlo_cost c;

	(void)arg;
	if (xprofs_hlo_cost_get(p, i, &c) < 0)
		return;
	if (c.known & XPROFS_HLO_COST_FLOPS) {
		*flops = c.flops;
		*device_flops = c.flops / device_divisor(p, i);
	}
	if (c.known & XPROFS_HLO_COST_BYTES)
		*bytes_accessed = c.bytes_accessed;
}

/* The facts' options when the caller gives none: 64 MiB, XProf's GPU figures. */
static const struct xprofs_hlo_facts_opts default_opts = {.mem_max = XPROFS_HLO_FACTS_MEM_MAX,
							  .cost = gpu_cost};

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
