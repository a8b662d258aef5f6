/*
 * view-kernels.c - kernels.json: XProf's kernel stats (kernel_stats_utils.cc,
 * xplane_to_kernel_stats_db.cc) for the GPU planes of a host.
 *
 * Design: every event of a GPU plane's "Stream #" line that has a
 * kernel_details stat is a kernel launch; launches are grouped by XProf's
 * KernelReport key (name, grid, block, registers per thread, static and
 * dynamic shared memory, Tensor Core use, op eligibility, op name) in a hash
 * map, then sorted by total time (then by the key, as
 * KernelReportLessThanComparator) and the first KERNELS_SHOWN written.
 * Without GPU planes the view does not exist: -ENOENT, nothing written.
 * Each GPU plane is counted into its own map (on several threads when the
 * profile allows) and the maps are merged in plane order; a small cache
 * from the launch's metadata and stat refs to its key skips re-parsing.
 * Limits: KERNELS_MAX distinct keys held (launches of further keys are
 * dropped, and "truncated" is true).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stats-internal.h"

#define KERNELS_SHOWN 1000            /* kMaxNumOfKernels */
#define KERNELS_MAX ((size_t)1 << 20) /* distinct keys held */

struct kernel {
	char *name, *op; /* owned */
	uint32_t grid[3], block[3], regs, sshm, dshm;
	bool tc_used, tc_eligible;
	uint64_t occurrences;
	int64_t total, min, max;
};

/*
 * A launch's key follows from its event metadata (name, hlo_op) and its
 * kernel_details, hlo_op and tf_op stats; when those stats are refs (the
 * usual case) the refs identify the strings within the plane, so a small
 * direct-mapped cache from (metadata, refs) to the key's index skips
 * parsing kernel_details and hashing the strings again.
 */
#define KC_SIZE 4096

struct kcache {
	int64_t md, kd, hlo, tf; /* hlo / tf: the ref, or INT64_MIN when absent */
	uint64_t pid;            /* the program id (its HLO names the op), UINT64_MAX: none */
	int64_t idx;             /* -1: empty */
};

struct kmap {
	struct kernel *k; /* owned */
	size_t n, cap;
	struct xprofs_table *tab; /* key -> index in k[]; NULL until the first key */
	bool full;
	bool sat;          /* a total saturated: merging per-plane maps could differ */
	struct kcache *kc; /* owned, KC_SIZE entries; NULL: no cache */
	size_t kc_plane;   /* the plane the cache's refs belong to */
	const struct xprofs_hlo_facts *hlo; /* borrowed, may be NULL: the render's HLO facts */
	struct xprofs_buf op;               /* a launch's op from the HLO (launch_op()) */
};

/* kTensorCoreKernelNamePatterns: a kernel uses Tensor Cores if its name contains one. */
static bool tc_used(const char *name)
{
	static const char *const pat[] = {"16816",
					  "c1688",
					  "conv1x1",
					  "conv2d_c1_k1",
					  "dgrad_1x1_stride_2x2",
					  "direct_group",
					  "first_layer_wgrad_kernel",
					  "h1688",
					  "h884",
					  "hmma",
					  "i16832",
					  "i8816",
					  "s884",
					  "s1688",
					  "xmma_gemm",
					  "xmma_implicit_gemm",
					  "xmma_sparse_conv",
					  "xmma_sparse_gemm",
					  "xmma_warp_specialized_implicit_gemm"};

	for (size_t i = 0; i < sizeof(pat) / sizeof(pat[0]); i++)
		if (strstr(name, pat[i]))
			return true;
	return false;
}

static bool ends_with(const char *s, const char *lit)
{
	size_t n = strlen(s), k = strlen(lit);

	return n >= k && !strcmp(s + n - k, lit);
}

/* IsOpTensorCoreEligible() of the op's name. */
static bool tc_eligible(const char *op)
{
	static const char *const ends[] = {"Conv2D",
					   "Conv2DBackpropFilter",
					   "Conv2DBackpropInput",
					   "Conv3D",
					   "DepthwiseConv2dNative",
					   "DepthwiseConv2dNativeBackpropFilter",
					   "DepthwiseConv2dNativeBackpropInput",
					   "/MatMul",
					   "FusedMatMul",
					   "/CudnnRNN",
					   "XlaDot",
					   "XlaDotV2"};
	static const char *const has[] = {"BatchMatMul", "CudnnRNNV", "CudnnRNNForward",
					  "CudnnRNNBackprop"};

	for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++)
		if (ends_with(op, ends[i]))
			return true;
	for (size_t i = 0; i < sizeof(has) / sizeof(has[0]); i++)
		if (strstr(op, has[i]))
			return true;
	return false;
}

/* SimpleAtoi() into a uint32: optional '+', digits, nothing else. */
static bool atou32(const char *s, size_t n, uint32_t *out)
{
	uint64_t v = 0;
	size_t i = 0;

	if (i < n && s[i] == '+')
		i++;
	if (i == n)
		return false;
	for (; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
		if (v > UINT32_MAX)
			return false;
	}
	*out = (uint32_t)v;
	return true;
}

/* Three comma-separated uint32s, all or nothing. */
static void dims(const char *s, size_t n, uint32_t d[3])
{
	const char *c1 = memchr(s, ',', n), *c2, *end = s + n;
	uint32_t t[3];

	if (!c1 || !(c2 = memchr(c1 + 1, ',', (size_t)(end - c1 - 1))) ||
	    memchr(c2 + 1, ',', (size_t)(end - c2 - 1)))
		return;
	if (atou32(s, (size_t)(c1 - s), &t[0]) && atou32(c1 + 1, (size_t)(c2 - c1 - 1), &t[1]) &&
	    atou32(c2 + 1, (size_t)(end - c2 - 1), &t[2]))
		memcpy(d, t, sizeof(t));
}

/* ParseKernelLaunchParams(): "key:value" tokens split on spaces and newlines. */
static void parse_details(const char *s, struct kernel *k)
{
	for (int i = 0; i < 3; i++)
		k->grid[i] = k->block[i] = 1;
	while (*s) {
		size_t n = strcspn(s, " \n");
		const char *colon = memchr(s, ':', n), *v;
		size_t kl, vl;

		if (colon && !memchr(colon + 1, ':', n - (size_t)(colon - s) - 1)) {
			kl = (size_t)(colon - s);
			v = colon + 1;
			vl = n - kl - 1;
			if (kl == 4 && !memcmp(s, "regs", 4))
				atou32(v, vl, &k->regs);
			else if (kl == 13 && !memcmp(s, "static_shared", 13))
				atou32(v, vl, &k->sshm);
			else if (kl == 14 && !memcmp(s, "dynamic_shared", 14))
				atou32(v, vl, &k->dshm);
			else if (kl == 5 && !memcmp(s, "block", 5))
				dims(v, vl, k->block);
			else if (kl == 4 && !memcmp(s, "grid", 4))
				dims(v, vl, k->grid);
		}
		s += n;
		if (*s)
			s++;
	}
}

static uint64_t khash(const struct kernel *k)
{
	uint64_t h = xprofs_table_hash(0, k->name, strlen(k->name));
	/* tc_used / tc_eligible follow from name / op: not hashed */
	uint32_t v[9] = {k->grid[0],  k->grid[1], k->grid[2], k->block[0], k->block[1],
			 k->block[2], k->regs,    k->sshm,    k->dshm};

	h = xprofs_table_hash(h, k->op, strlen(k->op));
	return xprofs_table_hash(h, v, sizeof(v));
}

/* An xprofs_table_eq_fn: key @idx of the kmap @ctx is the struct kernel @key's. */
static bool ksame(const void *ctx, uint32_t idx, const void *key)
{
	const struct kernel *a = &((const struct kmap *)ctx)->k[idx], *b = key;

	return !memcmp(a->grid, b->grid, sizeof(a->grid)) &&
	       !memcmp(a->block, b->block, sizeof(a->block)) && a->regs == b->regs &&
	       a->sshm == b->sshm && a->dshm == b->dshm && !strcmp(a->name, b->name) &&
	       !strcmp(a->op, b->op);
}

/* kmap_count() - one more launch of key @e lasting @dur. */
static void kmap_count(struct kmap *m, struct kernel *e, int64_t dur)
{
	int64_t t;

	if (__builtin_add_overflow(e->total, dur, &t))
		m->sat = true;
	e->occurrences++;
	e->total = xs_sat_add(e->total, dur);
	e->min = dur < e->min ? dur : e->min;
	e->max = dur > e->max ? dur : e->max;
}

/*
 * kmap_get() - the entry of key @k (its strings borrowed; copied on insert): *out,
 * or NULL when the key is new and the map is full (then m->full is set).
 */
static int kmap_get(struct kmap *m, const struct kernel *k, struct kernel **out)
{
	uint64_t h = khash(k);
	struct kernel *e;
	uint32_t i;
	int r;

	*out = NULL;
	if (xprofs_table_find(m->tab, h, ksame, m, k, &i) == 0) {
		*out = &m->k[i];
		return 0;
	}
	if (m->n >= KERNELS_MAX) {
		m->full = true;
		return 0;
	}
	if (!m->tab && (r = xprofs_table_new(KERNELS_MAX, &m->tab)) < 0)
		return r;
	if ((r = xprofs_grow(&m->k, &m->cap, m->n, sizeof(*m->k), 256)) < 0)
		return r;
	e = &m->k[m->n];
	*e = *k;
	e->tc_used = tc_used(k->name); /* once per key: they follow from the strings */
	e->tc_eligible = tc_eligible(k->op);
	e->name = strdup(k->name);
	e->op = strdup(k->op);
	r = e->name && e->op ? xprofs_table_add(m->tab, h, (uint32_t)m->n) : -ENOMEM;
	if (r < 0) {
		free(e->name);
		free(e->op);
		return r;
	}
	e->occurrences = 0;
	e->total = 0;
	e->min = INT64_MAX;
	e->max = INT64_MIN;
	*out = &m->k[m->n++];
	return 0;
}

/*
 * kmap_add() - one launch of @k (its strings borrowed; copied on insert) lasting @dur.
 * *idx: the key's index, or -1 when it was dropped (the map is full).
 */
static int kmap_add(struct kmap *m, const struct kernel *k, int64_t dur, int64_t *idx)
{
	struct kernel *e;
	int r;

	*idx = -1;
	if ((r = kmap_get(m, k, &e)) < 0 || !e)
		return r;
	kmap_count(m, e, dur);
	*idx = e - m->k;
	return 0;
}

/*
 * kmap_merge() - add @src's keys, in their insertion order, to @dst: what adding
 * @src's launches one by one after @dst's would give, unless a total would
 * saturate on the way (then dst->sat is set: the caller counts launch by launch).
 */
static int kmap_merge(struct kmap *dst, const struct kmap *src)
{
	for (size_t i = 0; i < src->n; i++) {
		const struct kernel *a = &src->k[i];
		struct kernel *e;
		int64_t t;
		int r;

		if ((r = kmap_get(dst, a, &e)) < 0)
			return r;
		if (!e)
			continue;
		if (__builtin_add_overflow(e->total, a->total, &t))
			dst->sat = true;
		e->occurrences += a->occurrences;
		e->total = t;
		e->min = a->min < e->min ? a->min : e->min;
		e->max = a->max > e->max ? a->max : e->max;
	}
	return 0;
}

static void kmap_free(struct kmap *m)
{
	for (size_t i = 0; i < m->n; i++) {
		free(m->k[i].name);
		free(m->k[i].op);
	}
	free(m->k);
	xprofs_table_free(m->tab);
	free(m->kc);
	xprofs_buf_deinit(&m->op);
	memset(m, 0, sizeof(*m));
}

/* The op that launched a kernel: its hlo_op, else the name part of its tf_op ("name:type"). */
static const char *op_name(const struct xs_opstats *os, const struct xs_evmd *md, char **tmp)
{
	const char *colon;

	if (os->hlo_op)
		return os->hlo_op;
	if (md->hlo_op)
		return md->hlo_op;
	if (!os->tf_op)
		return "";
	colon = strchr(os->tf_op, ':');
	if (!colon)
		return os->tf_op;
	*tmp = strndup(os->tf_op, (size_t)(colon - os->tf_op));
	return *tmp ? *tmp : "";
}

/*
 * launch_op() - the op of a launch. XProf's on_kernel_fn (ConvertXSpaceToOpStats()):
 * an XLA kernel whose instruction (the last "::" part of its hlo_op, in
 * program program_id) the HLO has gets HloInstructionWrapper::TfOpName();
 * otherwise op_name(). The string is borrowed from @m or @os / @md, or *@tmp.
 */
static const char *launch_op(struct kmap *m, const struct xs_opstats *os, const struct xs_evmd *md,
			     uint64_t pid, char **tmp)
{
	const char *hlo = os->hlo_op ? os->hlo_op : md->hlo_op, *last = hlo, *hit;
	struct xprofs_hlo_fact f;

	if (m->hlo && hlo && pid != UINT64_MAX) {
		while ((hit = strstr(last, "::")) != NULL)
			last = hit + 2;
		if (xprofs_hlo_facts_find(m->hlo, pid, last, strlen(last), &f)) {
			if (!m->op.max)
				xprofs_buf_init(&m->op, 2 * XPROFS_HLO_FACT_STR_MAX + 64);
			xprofs_buf_reset(&m->op);
			if (xprofs_hlo_tf_op_name(&f, &m->op) == 0)
				return m->op.data ? m->op.data : "";
		}
	}
	return op_name(os, md, tmp);
}

/*
 * kc_find() - the cache entry of (@md, the refs of @os, program @pid), or
 * NULL when @os has plain strings.
 */
static struct kcache *kc_find(struct kmap *m, int64_t md, const struct xs_opstats *os, uint64_t pid)
{
	const uint8_t used =
		(1u << XS_OS_KERNEL_DETAILS) | (1u << XS_OS_HLO_OP) | (1u << XS_OS_TF_OP);
	int64_t kd = os->ref[XS_OS_KERNEL_DETAILS];
	int64_t hlo = os->hlo_op ? os->ref[XS_OS_HLO_OP] : INT64_MIN;
	int64_t tf = os->tf_op ? os->ref[XS_OS_TF_OP] : INT64_MIN;
	uint64_t h;
	struct kcache *c;

	if (!m->kc || (os->plain & used))
		return NULL;
	h = ((uint64_t)md * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)kd * 0xc2b2ae3d27d4eb4full) ^
	    ((uint64_t)hlo * 0x165667b19e3779f9ull) ^ ((uint64_t)tf * 0x27d4eb2f165667c5ull) ^
	    (pid * 0x85ebca77c2b2ae63ull);
	c = &m->kc[(h ^ (h >> 29)) & (KC_SIZE - 1)];
	if (c->idx >= 0 &&
	    (c->md != md || c->kd != kd || c->hlo != hlo || c->tf != tf || c->pid != pid))
		c->idx = -1; /* another key's: replaced below */
	c->md = md, c->kd = kd, c->hlo = hlo, c->tf = tf, c->pid = pid;
	return c;
}

/* A xs_event_fn: a stream event with kernel_details is a launch (arg: struct kmap). */
static int kernel_event(struct xs_rctx *rc, const struct xs_event *e, struct xs_evmd *md, void *arg)
{
	struct xs_opstats os = {.strings = true, .borrow = true};
	struct kmap *m = arg;
	struct kcache *c;
	struct kernel k;
	char *tmp = NULL;
	int64_t idx;
	uint64_t pid;
	int r = 0;

	if (!e->has_stats)
		return 0;
	if ((r = xs_walk_stats(rc, &rc->ev, e->stats_off, e->off + e->len - e->stats_off,
			       XEVENT_F_STATS, xs_collect_stat, &os)) < 0 ||
	    !os.kernel_details)
		goto out;
	if (m->kc && m->kc_plane != rc->plane) { /* refs name strings of their plane only */
		for (size_t i = 0; i < KC_SIZE; i++)
			m->kc[i].idx = -1;
		m->kc_plane = rc->plane;
	}
	pid = os.has_program_id ? os.program_id : md->has_program_id ? md->program_id : UINT64_MAX;
	if ((c = kc_find(m, e->md, &os, pid)) && c->idx >= 0) {
		kmap_count(m, &m->k[c->idx], e->duration_ps);
		goto out;
	}
	memset(&k, 0, sizeof(k));
	parse_details(os.kernel_details, &k);
	k.name = md->name;
	k.op = (char *)launch_op(m, &os, md, pid, &tmp);
	r = kmap_add(m, &k, e->duration_ps, &idx);
	if (c)
		c->idx = idx;
out:
	free(tmp);
	xs_opstats_clear(&os);
	return r;
}

/* KernelReportLessThanComparator after total time, descending. */
static int kernel_cmp(const void *a, const void *b, void *arg)
{
	const struct kmap *m = arg;
	const struct kernel *x = &m->k[*(const size_t *)a], *y = &m->k[*(const size_t *)b];
	int c;

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	if ((c = strcmp(x->name, y->name)))
		return c;
	for (int i = 0; i < 3; i++)
		if (x->grid[i] != y->grid[i])
			return x->grid[i] < y->grid[i] ? -1 : 1;
	for (int i = 0; i < 3; i++)
		if (x->block[i] != y->block[i])
			return x->block[i] < y->block[i] ? -1 : 1;
	if (x->regs != y->regs)
		return x->regs < y->regs ? -1 : 1;
	if (x->sshm != y->sshm)
		return x->sshm < y->sshm ? -1 : 1;
	if (x->dshm != y->dshm)
		return x->dshm < y->dshm ? -1 : 1;
	if (x->tc_used != y->tc_used)
		return x->tc_used < y->tc_used ? -1 : 1;
	if (x->tc_eligible != y->tc_eligible)
		return x->tc_eligible < y->tc_eligible ? -1 : 1;
	return strcmp(x->op, y->op);
}

static void out_dims(struct xs_out *o, const char *lit, const uint32_t d[3])
{
	xs_out_add(o, lit, strlen(lit));
	for (int i = 0; i < 3; i++) {
		OUT_RAW(o, i ? "," : "[");
		xs_out_u64(o, d[i]);
	}
	OUT_LIT(o, "]");
}

static void kernel_write(struct xs_out *o, const struct kernel *k)
{
	xs_out_cstr(o, k->name);
	OUT_LIT(o, ",\"op\":");
	xs_out_cstr(o, k->op);
	out_dims(o, ",\"grid\":", k->grid);
	out_dims(o, ",\"block\":", k->block);
	OUT_LIT(o, ",\"registers_per_thread\":");
	xs_out_u64(o, k->regs);
	OUT_LIT(o, ",\"static_shmem_bytes\":");
	xs_out_u64(o, k->sshm);
	OUT_LIT(o, ",\"dynamic_shmem_bytes\":");
	xs_out_u64(o, k->dshm);
	OUT_RAW(o, k->tc_used ? ",\"tensor_core_used\":true" : ",\"tensor_core_used\":false");
	OUT_RAW(o, k->tc_eligible ? ",\"op_tensor_core_eligible\":true"
				  : ",\"op_tensor_core_eligible\":false");
	OUT_LIT(o, ",\"occurrences\":");
	xs_out_u64(o, k->occurrences);
	xs_out_key_i64(o, ",\"total_ps\":", k->total);
	xs_out_key_i64(o, ",\"min_ps\":", k->min);
	xs_out_key_i64(o, ",\"max_ps\":", k->max);
	OUT_LIT(o, ",\"avg_ps\":");
	xs_out_double(o, (double)k->total / (double)k->occurrences);
}

static bool is_gpu_plane(const struct xs_plane *p)
{
	return !strncmp(p->name, "/device:GPU:", 12);
}

/* kernels_plane() - the launches of the stream lines of GPU plane @pi into @m. */
static int kernels_plane(struct xs_rctx *rc, size_t pi, struct kmap *m)
{
	const struct xprofs_xspace *x = rc->x;
	const struct xs_plane *p = &x->planes[pi];
	int r;

	if ((r = xs_hlo_facts(rc, &m->hlo)) < 0)
		return r;
	if (!m->kc && (m->kc = malloc(KC_SIZE * sizeof(*m->kc))) != NULL) {
		for (size_t i = 0; i < KC_SIZE; i++)
			m->kc[i].idx = -1;
		m->kc_plane = SIZE_MAX;
	}
	for (size_t li = p->first_line; li < p->first_line + p->n_lines; li++)
		if (stats_op_line_kind(x, p, &x->lines[li], false) == LK_STREAM &&
		    (r = xs_line_each(rc, li, NULL, kernel_event, m)) < 0)
			return r;
	return 0;
}

/* The GPU planes' maps of one kernels.json, computed by xs_tasks_run(). */
struct ktasks {
	size_t *plane;  /* owned: the GPU planes */
	struct kmap *m; /* owned: one map each */
};

static int ktask(struct xs_rctx *rc, size_t i, void *arg)
{
	struct ktasks *t = arg;

	return kernels_plane(rc, t->plane[i], &t->m[i]);
}

static uint64_t ktask_cost(const struct xprofs_xspace *x, size_t i, void *arg)
{
	return x->planes[((struct ktasks *)arg)->plane[i]].events;
}

/*
 * kernels_collect() - every GPU plane's launches into @m: with several threads,
 * one map per plane (xs_tasks_run()) merged in plane order, which gives the
 * same map as counting launch by launch unless a map filled up or a total
 * saturated; then, and with one thread, launch by launch in line order.
 */
static int kernels_collect(struct xs_rctx *rc, const size_t *plane, size_t n, struct kmap *m)
{
	struct ktasks t = {NULL, NULL};
	bool redo = false;
	int r = 0;

	if (rc->x->threads > 1 && n > 1) {
		if (!(t.m = calloc(n, sizeof(*t.m))))
			return -ENOMEM;
		t.plane = (size_t *)plane;
		if ((r = xs_tasks_run(rc, n, ktask, ktask_cost, &t)) < 0)
			goto out;
		for (size_t i = 0; i < n && !redo; i++)
			redo = t.m[i].full || t.m[i].sat;
		for (size_t i = 0; i < n && !redo && r == 0; i++) {
			r = kmap_merge(m, &t.m[i]);
			redo = m->sat;
		}
		if (!redo || r < 0)
			goto out;
		kmap_free(m);
	}
	for (size_t i = 0; i < n && r == 0; i++)
		r = kernels_plane(rc, plane[i], m);
out:
	for (size_t i = 0; t.m && i < n; i++)
		kmap_free(&t.m[i]);
	free(t.m);
	return r;
}

int stats_view_kernels(struct xs_rctx *rc, struct xs_out *o)
{
	struct xprofs_xspace *x = rc->x;
	struct kmap m = {0};
	size_t *idx = NULL, *gp = NULL, ngp = 0, shown;
	bool gpu = false;
	int r = 0;

	if (!(gp = malloc((x->n_planes + 1) * sizeof(*gp))))
		return -ENOMEM;
	for (size_t pi = 0; pi < x->n_planes; pi++)
		if (is_gpu_plane(&x->planes[pi]))
			gp[ngp++] = pi;
	gpu = ngp > 0;
	if ((r = kernels_collect(rc, gp, ngp, &m)) < 0)
		goto out;
	for (size_t pi = 0; pi < x->n_planes && !gpu; pi++)
		gpu = is_gpu_plane(&x->planes[pi]);
	if (!gpu) {
		r = -ENOENT;
		goto out;
	}
	if (!(idx = malloc((m.n + 1) * sizeof(*idx)))) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < m.n; i++)
		idx[i] = i;
	qsort_r(idx, m.n, sizeof(*idx), kernel_cmp, &m);
	shown = m.n < KERNELS_SHOWN ? m.n : KERNELS_SHOWN;
	OUT_LIT(o, "{\"kernels\":[");
	for (size_t i = 0; i < shown; i++) {
		OUT_RAW(o, i ? ",\n{\"name\":" : "\n{\"name\":");
		kernel_write(o, &m.k[idx[i]]);
		OUT_LIT(o, "}");
		if ((r = xs_out_flush(o, false)) < 0)
			goto out;
	}
	OUT_LIT(o, "\n],\"distinct\":");
	xs_out_u64(o, m.n);
	OUT_RAW(o, m.n > shown || m.full ? ",\"truncated\":true}\n" : ",\"truncated\":false}\n");
out:
	free(idx);
	free(gp);
	kmap_free(&m);
	return r;
}
