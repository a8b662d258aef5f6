/*
 * fs/dirs.c - what each directory of the mount lists: the root, logdir/
 * (the store's listing), runs/ and inner runs, a session (its hosts,
 * summary.json, ops.json, compare/), compare/ (the nearest other
 * sessions), compare/<other>/, a host (its views, errors, planes/, steps/,
 * window/), steps/ (one entry per step), a slice, planes/ and a plane (the
 * track list). No FUSE here: ops.c hands in libfuse's filler as the fill
 * callback.
 *
 * Design: names come from the runs index snapshot the caller classified
 * against and, for planes/ and steps/, from the profile's index
 * (profiles.c: decoded once per profile version). window/ lists nothing
 * (every valid name resolves) and compare/ at most FS_COMPARE_LISTED
 * sessions (every one resolves).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fs-internal.h"

/* The caller's fill callback and its argument. */
struct fill_arg {
	fs_dir_fill fill;
	void *arg;
};

/* fill_name() - add @name; 1 when the caller's buffer is full (the rest is dropped). */
static int fill_name(struct fill_arg *a, const char *name)
{
	return a->fill(a->arg, name) ? 1 : 0;
}

static int list_cb(void *arg, const char *name, const struct xprofs_store_stat *st)
{
	return fill_name(arg, name);
}

/* fill_tracks() - planes/ (each plane once) or planes/<plane>/ (its lines). */
static int fill_tracks(struct fs_ctx *ctx, const struct fs_target *t, struct fill_arg *a)
{
	struct fs_track_list *tl;
	size_t i, j;
	int r;

	r = fs_tracks_get(ctx, t, &tl);
	if (r < 0)
		return r;
	for (i = 0; i < tl->n; i++) {
		if (t->kind == FS_K_PLANE) {
			if (!strcmp(tl->planes[i], t->plane))
				fill_name(a, tl->lines[i]);
			continue;
		}
		for (j = 0; j < i && strcmp(tl->planes[j], tl->planes[i]); j++)
			;
		if (j == i)
			fill_name(a, tl->planes[i]);
	}
	pthread_mutex_unlock(&ctx->views.lock);
	return 0;
}

/*
 * compare_listed() - which sessions compare/ lists: at most FS_COMPARE_LISTED
 * others, those nearest session @self of @n in name order (for timestamped
 * names, the captures just before and after), as [@lo, @hi) around it. A
 * walk of a run of N sessions then sees at most N x FS_COMPARE_LISTED
 * compare directories, not N x N; the others still resolve by name.
 */
static void compare_listed(size_t n, size_t self, size_t *lo, size_t *hi)
{
	size_t want = n - 1 < FS_COMPARE_LISTED ? n - 1 : FS_COMPARE_LISTED;

	*lo = self > want / 2 ? self - want / 2 : 0;
	*hi = *lo + want + 1 < n ? *lo + want + 1 : n;
	*lo = *hi > want + 1 ? *hi - want - 1 : 0;
}

int fs_dir_list(struct fs_ctx *ctx, const struct fs_target *t, fs_dir_fill fill, void *arg)
{
	struct fill_arg a = {fill, arg};
	size_t i;
	int r = 0;

	fill_name(&a, ".");
	fill_name(&a, "..");
	switch (t->kind) {
	case FS_K_ROOT:
		fill_name(&a, FS_NAME_LOGDIR);
		fill_name(&a, FS_NAME_RUNS);
		fill_name(&a, FS_NAME_STATUS);
		fill_name(&a, FS_NAME_CAPTURE);
		break;
	case FS_K_LOGDIR:
		r = xprofs_store_list(ctx->store, t->store_path, list_cb, &a);
		if (r > 0)
			r = 0;
		break;
	case FS_K_RUNS:
		for (i = 0; i < t->node->nchildren; i++)
			fill_name(&a, t->node->children[i]->name);
		if (t->node->is_run) {
			for (i = 0; i < t->node->nsessions; i++)
				if (!fs_node_child(t->node, t->node->sessions[i].name))
					fill_name(&a, t->node->sessions[i].name);
			fill_name(&a, FS_NAME_CAPTURE);
		}
		break;
	case FS_K_SESSION:
		for (i = 0; i < t->session->nhosts; i++)
			fill_name(&a, t->session->hosts[i].name);
		fill_name(&a, FS_NAME_SESSION_SUMMARY);
		fill_name(&a, FS_NAME_SESSION_OPS);
		for (i = 0; i < fs_session_nviews; i++)
			fill_name(&a, xprofs_decode_view_name(fs_session_views[i]));
		fill_name(&a, FS_NAME_COMPARE);
		break;
	case FS_K_COMPARE: { /* the run's other sessions nearest by name; all resolve */
		size_t self = (size_t)(t->session - t->node->sessions), lo, hi;

		compare_listed(t->node->nsessions, self, &lo, &hi);
		for (i = lo; i < hi; i++)
			if (i != self)
				fill_name(&a, t->node->sessions[i].name);
		break;
	}
	case FS_K_COMPARE_RUN: /* a run path on the way to a session: lists nothing */
		break;
	case FS_K_COMPARE_DIR:
		fill_name(&a, xprofs_decode_view_name(XPROFS_VIEW_OPS));
		fill_name(&a, xprofs_decode_view_name(XPROFS_VIEW_STEPS));
		fill_name(&a, xprofs_decode_view_name(XPROFS_VIEW_OP_PROFILE));
		fill_name(&a, xprofs_decode_view_name(XPROFS_VIEW_SUMMARY));
		break;
	case FS_K_HOST: {
		bool no_gpu = fs_host_lacks_gpu(ctx, t);

		for (i = 0; i < XPROFS_VIEW_COUNT; i++)
			if (i != XPROFS_VIEW_KERNELS || !no_gpu)
				fill_name(&a, xprofs_decode_view_name((enum xprofs_view)i));
		fill_name(&a, FS_NAME_ERRORS);
		fill_name(&a, FS_NAME_PLANES);
		fill_name(&a, FS_NAME_STEPS);
		fill_name(&a, FS_NAME_WINDOW);
		fill_name(&a, FS_NAME_LOD);
		break;
	}
	case FS_K_STEPS: {
		size_t n = 0;
		char num[24];

		r = fs_steps_count(ctx, t, &n);
		for (i = 0; r == 0 && i < n; i++) {
			snprintf(num, sizeof(num), "%zu", i);
			fill_name(&a, num);
		}
		break;
	}
	case FS_K_WINDOWS: /* names are made up by the reader: nothing to list */
		break;
	case FS_K_SLICE:
	case FS_K_LOD:
		for (i = 0; i < fs_slice_nviews; i++)
			fill_name(&a, xprofs_decode_view_name(fs_slice_views[i]));
		if (t->kind == FS_K_SLICE)
			fill_name(&a, FS_NAME_LOD);
		break;
	case FS_K_PLANES:
	case FS_K_PLANE:
		r = fill_tracks(ctx, t, &a);
		break;
	default:
		r = -ENOTDIR;
	}
	return r;
}
