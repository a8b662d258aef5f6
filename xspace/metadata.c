/*
 * metadata.c - the render's cache of the current plane's decoded event
 * metadata, and entering a plane (which drops the cache of the one before).
 *
 * Design: the cache is two arrays parallel to the plane's key indexes (event
 * and stat metadata), filled on demand (event metadata here, by
 * xs_md_load_event(); stat metadata by xs_md_load_stat() in stmd.c, which
 * an event's stats need: so this file sits above xstat.c and stmd.c), dropped
 * entirely when it passes XS_MD_BUDGET bytes (checked between events) or
 * when the render moves to another plane, so memory is O(metadata entries)
 * + XS_MD_BUDGET whatever the profile size. Names are kept pre-escaped as
 * JSON and an event metadata's own stats pre-rendered, since the views
 * write them once per event. The plane's metadata region is read into the
 * metadata window in one go when it is at most xs_md_region_max (16 MiB);
 * larger regions are read entry by entry with 16 KiB refills (look-ups come
 * in no particular order).
 *
 * Limits: names are cut at XS_STR_MAX; a missing entry reads as the empty
 * name with no stats.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "xprofs/xspace.h"

size_t xs_md_region_max = (size_t)16 << 20;

struct xs_evmd xs_empty_evmd = {.loaded = true,
				.name = (char *)"",
				.name_json = (char *)"\"\"",
				.name_json_len = 2,
				.full_json = (char *)"\"\"",
				.full_json_len = 2,
				.stats_json = (char *)"",
				.group = -1};

static void evmd_clear(const struct xs_rctx *rc, struct xs_evmd *e)
{
	free(e->name);
	free(e->name_json);
	free(e->full_json);
	free(e->stats_json);
	free(e->category);
	free(e->hlo_op);
	free(e->hlo_module);
	free(e->tf_op);
	if (e->view_md && rc->md_ext)
		rc->md_ext->free(e->view_md);
	memset(e, 0, sizeof(*e));
}

void xs_md_drop(struct xs_rctx *rc)
{
	const struct xs_plane *p;

	if (rc->plane >= rc->x->n_planes)
		return;
	p = &rc->x->planes[rc->plane];
	for (size_t i = 0; rc->evmd && i < p->ev.n; i++)
		if (rc->evmd[i].loaded)
			evmd_clear(rc, &rc->evmd[i]);
	for (size_t i = 0; rc->stmd && i < p->st.n; i++)
		if (rc->stmd[i].loaded)
			xs_stmd_clear(&rc->stmd[i]);
	rc->md_bytes = 0;
}

void xs_md_groups_forget(struct xs_rctx *rc, size_t pi)
{
	if (rc->plane != pi || !rc->evmd) /* entering the plane starts every entry unknown */
		return;
	for (size_t k = 0; k < rc->x->planes[pi].ev.n; k++)
		rc->evmd[k].group = -1;
}

int xs_plane_enter(struct xs_rctx *rc, size_t pi)
{
	const struct xs_plane *p = &rc->x->planes[pi];

	if (rc->plane == pi)
		return 0;
	xs_md_drop(rc);
	free(rc->evmd);
	free(rc->stmd);
	rc->evmd = calloc(p->ev.n + 1, sizeof(*rc->evmd));
	rc->stmd = calloc(p->st.n + 1, sizeof(*rc->stmd));
	rc->plane = pi;
	if (!rc->evmd || !rc->stmd) {
		free(rc->evmd);
		free(rc->stmd);
		rc->evmd = NULL;
		rc->stmd = NULL;
		rc->plane = SIZE_MAX;
		return -ENOMEM;
	}
	/*
	 * Metadata is looked up in no particular order: read the plane's whole
	 * metadata region into the metadata window at once when it is small
	 * enough, so that look-ups never refill.
	 */
	if (!rc->md.base && p->md_hi > p->md_lo && p->md_hi - p->md_lo <= xs_md_region_max) {
		const uint8_t *q;

		rc->md.win_pref = WIRE_WIN_SIZE;
		return wire_at(&rc->md, p->md_lo, (size_t)(p->md_hi - p->md_lo), &q);
	}
	/* a huge region is read entry by entry: small refills, no 1 MiB per miss */
	rc->md.win_pref = (size_t)16 << 10;
	return 0;
}

/* The names of @e: the display name when set, the full name kept as JSON. Consumes *disp. */
static int evmd_set_names(struct xs_evmd *e, const char *full, size_t full_len, char **disp,
			  size_t disp_len)
{
	int r;

	e->has_display = disp_len > 0 && (disp_len != full_len || memcmp(*disp, full, disp_len));
	if (disp_len > 0) {
		e->name = *disp;
		e->name_len = disp_len;
		*disp = NULL;
	} else if (!(e->name = malloc(full_len + 1))) { /* names may hold NUL bytes */
		return -ENOMEM;
	} else {
		memcpy(e->name, full, full_len + 1);
		e->name_len = full_len;
	}
	if ((r = xs_json_dup(e->name, e->name_len, &e->name_json, &e->name_json_len)) < 0 ||
	    (r = xs_json_dup(full, full_len, &e->full_json, &e->full_json_len)) < 0)
		return r;
	return 0;
}

/* Decode the XEventMetadata [off, off+len) at the metadata cursor into @e (cleared on failure). */
static int evmd_fill(struct xs_rctx *rc, struct xs_evmd *e, uint64_t off, uint64_t len)
{
	char *full = NULL, *disp = NULL;
	size_t full_len = 0, disp_len = 0;
	struct xs_opstats os = {.strings = true};
	struct xs_render_arg ra;
	struct xs_out so;
	int r;

	xs_out_init(&so, NULL);
	if ((r = xs_md_names(&rc->md, "XEventMetadata", &full, &full_len, &disp, &disp_len)) < 0)
		goto out;
	ra.o = &so;
	ra.first = true;
	if ((r = xs_walk_stats(rc, &rc->md, off, len, XEVMD_F_STATS, xs_render_stat, &ra)) < 0 ||
	    (r = xs_walk_stats(rc, &rc->md, off, len, XEVMD_F_STATS, xs_collect_stat, &os)) < 0)
		goto out;
	if ((r = so.r) < 0)
		goto out;
	if (!full && !(full = strdup(""))) {
		r = -ENOMEM;
		goto out;
	}
	if (rc->md_ext && (r = rc->md_ext->fill(rc, e, full, full_len, disp_len, off, len)) < 0)
		goto out;
	if ((r = evmd_set_names(e, full, full_len, &disp, disp_len)) < 0)
		goto out;
	e->stats_json = xs_out_steal(&so, &e->stats_json_len);
	if (!e->stats_json && !(e->stats_json = strdup(""))) {
		r = -ENOMEM;
		goto out;
	}
	e->category = os.category;
	e->hlo_op = os.hlo_op;
	os.category = os.hlo_op = NULL;
	e->amt = os.amt;
	e->hlo_module = os.hlo_module;
	e->tf_op = os.tf_op;
	os.hlo_module = os.tf_op = NULL;
	e->program_id = os.program_id;
	e->has_program_id = os.has_program_id;
	e->group = -1;
	e->loaded = true;
	rc->md_bytes += sizeof(*e) + len + e->name_len + e->name_json_len + e->full_json_len +
			e->stats_json_len + e->view_md_bytes;
out:
	if (r < 0)
		evmd_clear(rc, e);
	xs_opstats_clear(&os);
	xs_out_deinit(&so);
	free(full);
	free(disp);
	return r;
}

/* evmd_decode() - an xs_md_decode_fn: the event metadata entry at the metadata cursor. */
static int evmd_decode(struct xs_rctx *rc, void *entry, const struct xs_md *m)
{
	return evmd_fill(rc, entry, m->off, m->len);
}

int xs_md_load_event(struct xs_rctx *rc, int64_t key, struct xs_evmd **out)
{
	const struct xs_plane *p = &rc->x->planes[rc->plane];
	ssize_t k = xs_md_find(&p->ev, key);

	if (k < 0) {
		*out = &xs_empty_evmd;
		return 0;
	}
	*out = &rc->evmd[k];
	if (rc->evmd[k].loaded)
		return 0;
	return xs_md_decode(rc, &p->ev.md[k], evmd_decode, &rc->evmd[k]);
}

int xs_walk_plane_stats(struct xs_rctx *rc, size_t pi, xs_stat_fn fn, void *arg)
{
	const struct xs_plane *p = &rc->x->planes[pi];
	int r;

	if ((r = xs_plane_enter(rc, pi)) < 0)
		return r;
	for (size_t i = 0; i < p->n_stats; i++) {
		/* each plane stat is its own XStat message */
		struct wire_cur *c = &rc->md;
		uint64_t pos = c->pos, end = c->end;
		struct xs_statv s;

		c->pos = p->stats[i].off;
		c->end = p->stats[i].off + p->stats[i].len;
		r = xs_stat_parse(c, &s);
		c->pos = pos;
		c->end = end;
		if (r < 0 || (r = fn(rc, c, &s, arg)) < 0)
			return r;
	}
	return 0;
}
