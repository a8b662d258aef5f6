/*
 * order.c - the GPU line order XProf's trace gives a profile: each line's
 * trace tid (its display id; on a GPU plane the streams renumbered 1, 7,
 * 13, ... compute streams first, then by event count, as
 * DeriveEventsFromAnnotations() in openxla/xprof xprof/utils/
 * derived_timeline.cc orders them, so that each stream's derived lines can
 * follow it) and which derived line names a plane already holds.
 *
 * Design: computed once after the index (xs_derived_assign()), so every
 * render and slice shares it; the derivation itself is trace/'s
 * (trace/derive-gpu.c). Like the rest of XProf's preprocessing
 * (PreprocessSingleHostXSpace()) it is done only on a space that is not
 * grouped yet (no "group_id" stat metadata, IsXSpaceGrouped()): a grouped
 * space keeps its display ids and gets no derived lines. Limits: at most MAX_STREAMS streams of a plane get
 * derived lines; the rest keep their display ids.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "xprofs/xspace.h"

/* kThreadIdSource - kThreadIdTfNameScope + 1: ids reserved per stream */
#define PER_STREAM 6
/* streams that get derived lines: next + PER_STREAM must stay within the device range */
#define MAX_STREAMS ((TID_DEVICE_DERIVED_MAX - TID_DEVICE_DERIVED_MIN) / PER_STREAM)

const char *const xs_derived_names[DL_COUNT] = {
	[DL_MODULE] = "XLA Modules",              /* kXlaModuleLineName */
	[DL_HLO_OP] = "XLA Ops",                  /* kXlaOpLineName */
	[DL_NAME_SCOPE] = "Framework Name Scope", /* kTensorFlowNameScopeLineName */
	[DL_TF_OP] = "Framework Ops",             /* kTensorFlowOpLineName */
	[DL_SOURCE] = "Source code",              /* kSourceLineName */
};

bool xs_derived_tid(int64_t id)
{
	int32_t t = (int32_t)id; /* IsDerivedThreadId() takes an int */

	return t >= TID_DERIVED_MIN && t <= TID_DERIVED_MAX;
}

/* ---- line order ---------------------------------------------------------- */

struct ord {
	size_t li;
	bool compute;
	uint64_t size;
};

static int cmp_ord(const void *a, const void *b)
{
	const struct ord *x = a, *y = b;

	if (x->compute != y->compute)
		return x->compute ? -1 : 1;
	if (x->size != y->size)
		return x->size > y->size ? -1 : 1;
	return x->li < y->li ? -1 : x->li > y->li;
}

uint8_t xs_plane_derived_have(const struct xprofs_xspace *x, const struct xs_plane *p,
			      xs_derived_is_fn is)
{
	uint8_t have = 0;

	for (size_t j = 0; j < p->n_lines; j++)
		for (int k = 0; k < DL_COUNT; k++)
			if (is(&x->lines[p->first_line + j], k))
				have |= (uint8_t)(1u << k);
	return have;
}

/* Whether @l has the name of derived line @k: then it is not derived again. */
static bool derived_named(const struct xs_line *l, int k)
{
	return xs_derived_names[k] && xs_str_eq(l->name, l->name_len, xs_derived_names[k]);
}

static int order_plane(struct xprofs_xspace *x, struct xs_plane *p)
{
	struct ord *o = calloc(p->n_lines ? p->n_lines : 1, sizeof(*o));
	size_t n = 0;

	if (!o)
		return -ENOMEM;
	p->derived_have = xs_plane_derived_have(x, p, derived_named);
	for (size_t j = 0; j < p->n_lines; j++) {
		struct xs_line *l = &x->lines[p->first_line + j];

		if (xs_derived_tid(l->id))
			continue;
		o[n].li = p->first_line + j;
		o[n].compute = l->name && memmem(l->name, l->name_len, "Compute", 7) != NULL;
		/* events_size(); an index without event counts sorts by message size */
		o[n].size = x->tracks_only ? l->msg.len : l->events;
		n++;
	}
	qsort(o, n, sizeof(*o), cmp_ord);
	for (size_t k = 0; k < n && k < MAX_STREAMS; k++) {
		x->lines[o[k].li].trace_tid = (uint32_t)(k * PER_STREAM + 1);
		x->lines[o[k].li].derive_slot = (int32_t)k;
	}
	free(o);
	return 0;
}

int xs_derived_assign(struct xprofs_xspace *x)
{
	int r;

	for (size_t i = 0; i < x->n_lines; i++) {
		struct xs_line *l = &x->lines[i];

		l->trace_tid = (uint32_t)(l->display_id ? l->display_id : l->id);
		l->derive_slot = -1;
	}
	if (x->grouped) /* IsXSpaceGrouped(): XProf leaves the lines as the file has them */
		return 0;
	for (size_t i = 0; i < x->n_planes; i++)
		if (xs_plane_is_gpu(&x->planes[i]) && (r = order_plane(x, &x->planes[i])) < 0)
			return r;
	return 0;
}
