/*
 * view-pftrace.c - trace.pftrace: the profile as Perfetto's native protobuf
 * trace (a Trace message streamed packet by packet), with trace.json's event
 * set, names, args, flows and async pairs (the rules are in trace-model.c;
 * docs/pftrace.md has the mapping). This file drives the render: the
 * processes, then each plane as a part.
 *
 * Design: packet sequence 1 carries one TrackDescriptor per process (plane)
 * and the plane's stats as an instant on it, at the first event's start
 * (Perfetto's first view spans every instant). Each plane is then a part
 * (xs_parts_run(): on another thread when the profile allows) with a context
 * of its own whose sequence ids, interning ids and async track uuids have a
 * residue of their own: its lines (pftrace-events.c), its Steps and
 * TensorCore derived lines (pftrace-derived.c), its async tracks
 * (pftrace-async.c). Packets, sequences and tracks are pftrace-tracks.c's;
 * args and interning pftrace-args.c's.
 *
 * Limits: names are trace.json's, whole; events that fit no track are
 * counted on a track of their plane's process (drop_note()); what the parts keep
 * is bounded in their files.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "derived.h"
#include "pftrace.h"

#define PROC_SEQ 1u
#define PROC_UUID(pid) ((UINT64_C(1) << 63) | (pid))

/* ---- processes --------------------------------------------------------------- */

/* The process TrackDescriptor of plane @p as process @pid into c->td. */
static void describe_process(struct trace_pf_ctx *c, const struct xs_plane *p, uint32_t pid)
{
	struct pbw *td = &c->td, *pd = &c->sub;
	const char *host = c->rc->host;
	size_t hl = host ? strlen(host) : 0;

	pbw_reset(td);
	pbw_reset(pd);
	pbw_u64(pd, F_PD_PID, pid);
	/* "<host> <plane name>", as trace.json, whole (the index cuts plane names at XS_NAME_MAX) */
	pbw_tag(pd, F_PD_NAME, 2);
	pbw_varint(pd, hl + (hl ? 1 : 0) + p->name_len);
	if (hl) {
		pbw_bytes(pd, host, hl);
		pbw_bytes(pd, " ", 1);
	}
	pbw_bytes(pd, p->name, p->name_len);
	pbw_u64(td, F_TD_UUID, PROC_UUID(pid));
	pbw_msg(td, F_TD_PROCESS, pd);
}

/* The stats of plane @pi as an instant "plane stats" on its process track (at @ns on @s). */
static int plane_stats(struct trace_pf_ctx *c, size_t pi, uint32_t pid, struct trace_pf_seq *s,
		       uint64_t ns)
{
	struct xs_rctx *rc = c->rc;
	const struct xs_plane *p = &rc->x->planes[pi];
	struct xs_render_arg ra = {&c->ev, true};
	int r;

	if (!p->n_stats)
		return 0;
	c->ev.len = 0;
	if ((r = xs_walk_plane_stats(rc, pi, xs_render_stat, &ra)) < 0 || (r = c->ev.r) < 0)
		return r;
	pbw_reset(&c->te);
	pbw_u64(&c->te, F_TE_TYPE, TYPE_INSTANT);
	pbw_u64(&c->te, F_TE_TRACK, PROC_UUID(pid));
	pbw_str(&c->te, F_TE_NAME, "plane stats", 11);
	trace_pf_args_encode(c->A, c->ev.buf, c->ev.len, PF_INLINE, 0, 0, &c->te, NULL);
	if ((r = trace_pf_err(c)) < 0)
		return r;
	trace_pf_emit_event(c, s, ns, &c->te, NULL);
	return 0;
}

/* The earliest start of a line's events (first_start()). */
struct first_acc {
	xs_ps128 base, first;
	bool found, one; /* one: the line is in start order, its first event will do */
};

/* A xs_stop_fn (arg: struct first_acc): a line in start order stops at its first event. */
static bool first_stop(void *arg)
{
	const struct first_acc *a = arg;

	return a->one && a->found;
}

/* A xs_event_fn (arg: struct first_acc): note @e's start. */
static int first_note(struct xs_rctx *rc, const struct xs_event *e, struct xs_evmd *m, void *arg)
{
	struct first_acc *a = arg;
	xs_ps128 t = a->base + e->offset_ps;

	(void)rc;
	(void)m;
	if (!a->found || t < a->first)
		a->first = t;
	a->found = true;
	return 0;
}

/*
 * The earliest start (ps, trace.json's ts) of the events the shown lines of
 * planes @tp[0..@n) show (in a slice: of those overlapping the window) into
 * *@first; false when there is none. The whole profile's comes from the
 * index (each line's first_ps) when it fits 64 bits; a slice, a tracks-only
 * index or epoch-based times walk the lines: a line in start order to its
 * first event (overlapping the window), any other line whole. So every open
 * of a profile gives the same time.
 */
static int first_start(struct xs_rctx *rc, const struct trace_plane *tp, size_t n, xs_ps128 *first,
		       bool *found)
{
	const struct xprofs_xspace *x = rc->x;
	int r;

	*found = false;
	for (size_t i = 0; i < n; i++) {
		const struct xs_plane *p = &x->planes[tp[i].plane];

		for (size_t j = 0; j < p->n_lines; j++) {
			size_t li = p->first_line + j;
			const struct xs_line *l = &x->lines[li];
			struct first_acc a = {.base = (xs_ps128)l->timestamp_ns * 1000,
					      .one = !x->tracks_only && !l->unsorted};

			if (trace_line_kind(l) == TL_SKIP || (!x->tracks_only && !l->has_events))
				continue;
			if (!rc->win && !x->tracks_only && l->first_ps != INT64_MAX &&
			    l->first_ps != INT64_MIN &&
			    a.base == xs_line_base_ps(l->timestamp_ns)) {
				a.first = l->first_ps; /* not saturated: exact */
				a.found = true;
			} else if ((r = xs_line_each(rc, li, first_stop, first_note, &a)) < 0) {
				return r;
			}
			if (a.found && (!*found || a.first < *first))
				*first = a.first;
			*found |= a.found;
		}
	}
	return 0;
}

/*
 * Sequence PROC_SEQ: the process tracks, then each plane's stats as
 * instants at one time (keeping the sequence monotonic): the earliest
 * event start of the shown lines, so that Perfetto's trace bounds, and its
 * first view, start where the events do, not at an earlier line timestamp
 * (0 in most profiles). Without events: the earliest line timestamp of the
 * shown planes (the window's start in a slice).
 */
static int processes(struct trace_pf_ctx *c, const struct trace_plane *tp, size_t n)
{
	const struct xprofs_xspace *x = c->rc->x;
	struct trace_pf_seq s = {0};
	xs_ps128 first = 0;
	bool found;
	int r;

	for (size_t i = 0; i < n; i++) {
		const struct xs_plane *p = &x->planes[tp[i].plane];

		for (size_t j = 0; j < p->n_lines; j++) {
			xs_ps128 t = (xs_ps128)x->lines[p->first_line + j].timestamp_ns * 1000;

			if ((i == 0 && j == 0) || t < first)
				first = t;
		}
		describe_process(c, p, tp[i].pid);
		if (i == 0) {
			trace_pf_seq_open(c, &s, PROC_UUID(tp[i].pid), &c->td);
			continue;
		}
		trace_pf_emit_msg(c, &s, F_PK_TRACK, &c->td);
	}
	if (c->rc->win && first < c->rc->win_from)
		first = c->rc->win_from;
	if ((r = first_start(c->rc, tp, n, &first, &found)) < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		if ((r = plane_stats(c, tp[i].plane, tp[i].pid, &s, trace_pf_ns(first))) < 0)
			return r;
	return 0;
}

/* Free @c (NULL is fine). */
static void ctx_free(struct trace_pf_ctx *c)
{
	if (!c)
		return;
	free(c->pl);
	trace_lod_deinit(&c->lod);
	for (int k = 0; c->dl && k < DL_KINDS; k++) {
		free(c->dl[k].ev);
		pbw_free(&c->dl[k].blob);
	}
	free(c->dl);
	pbw_free(&c->dte);
	xs_out_deinit(&c->dj);
	free(c->as);
	trace_pf_args_free(c->A);
	pbw_free(&c->pk);
	pbw_free(&c->te);
	pbw_free(&c->id);
	pbw_free(&c->td);
	pbw_free(&c->sub);
	pbw_free(&c->name);
	pbw_free(&c->evann);
	pbw_free(&c->ablob);
	trace_regions_free(&c->regions);
	xs_out_deinit(&c->ev);
	free(c);
}

/*
 * A context writing to @o on @rc: part @part of @parts (sequence ids, interning
 * ids and async track uuids of its own residue, so parts made on different
 * threads never share one), or the processes' sequence when @part is
 * SIZE_MAX. Caller frees *@out with ctx_free().
 */
static int ctx_new(struct xs_rctx *rc, struct xs_out *o, size_t part, size_t parts,
		   struct trace_pf_ctx **out)
{
	struct trace_pf_ctx *c = calloc(1, sizeof(*c));
	bool head = part == SIZE_MAX;
	int r;

	*out = NULL;
	if (!c)
		return -ENOMEM;
	c->rc = rc;
	c->o = o;
	c->next_seq = head ? PROC_SEQ : PROC_SEQ + 1 + (uint32_t)part;
	c->seq_step = head ? 1 : (uint32_t)parts;
	c->next_async = head ? 0 : (uint64_t)part * (ASYNC_TRACKS_MAX + 1);
	xs_out_init(&c->ev, NULL);
	xs_out_init(&c->dj, NULL);
	if (!(c->pl = calloc(1, sizeof(*c->pl))) || !(c->dl = calloc(DL_KINDS, sizeof(*c->dl)))) {
		ctx_free(c);
		return -ENOMEM;
	}
	if ((r = trace_pf_args_new(head ? 1 : part + 1, head ? 1 : parts, &c->A)) < 0) {
		ctx_free(c);
		return r;
	}
	*out = c;
	return 0;
}

/*
 * The events of plane @tp that fit no track (c->dropped; trace_pf_place(),
 * async_tracks()), counted where a reader sees them: one instant, at the
 * first one's start, on a track "xprofs: events that fit no track" of the
 * plane's process (an id past those of its derived lines), with the count
 * as its "dropped" arg; and in the log.
 */
static int drop_note(struct trace_pf_ctx *c, const struct trace_plane *tp)
{
	static const char title[] = "xprofs: events that fit no track";
	const struct xprofs_xspace *x = c->rc->x;
	uint64_t uuid = (uint64_t)(x->n_lines + 1 + 4 * x->n_planes + tp->plane) << 8;
	struct trace_pf_seq s = {0};
	char name[64];
	int n;

	xprofs_warn("trace.pftrace: %s: %llu events fit no track (dropped)",
		    x->planes[tp->plane].name, (unsigned long long)c->dropped);
	pbw_reset(&c->td);
	pbw_u64(&c->td, F_TD_UUID, uuid);
	pbw_u64(&c->td, F_TD_PARENT, PROC_UUID(tp->pid));
	pbw_str(&c->td, F_TD_NAME, title, sizeof(title) - 1);
	trace_pf_seq_open(c, &s, uuid, &c->td);
	n = snprintf(name, sizeof(name), "%llu events dropped", (unsigned long long)c->dropped);
	pbw_reset(&c->te);
	pbw_u64(&c->te, F_TE_TYPE, TYPE_INSTANT);
	pbw_str(&c->te, F_TE_NAME, name, n > 0 ? (size_t)n : 0);
	trace_pf_arg_int(c->A, "dropped", 7, (int64_t)c->dropped, PF_INLINE, 0, &c->te, NULL);
	if (trace_pf_err(c))
		return trace_pf_err(c);
	trace_pf_emit_event(c, &s, c->drop_ns, &c->te, NULL);
	return 0;
}

/* What the planes' parts share. */
struct trace_pf_parts {
	const struct trace_plane *tp;
	size_t n;
};

/* A xs_part_fn (arg: struct trace_pf_parts): plane @i's lines, Steps, TPU derived lines and async tracks. */
static int plane_part(struct xs_rctx *rc, size_t i, struct xs_out *o, void *arg)
{
	const struct trace_pf_parts *P = arg;
	const struct trace_plane *tp = &P->tp[i];
	struct xprofs_xspace *x = rc->x;
	const struct xs_plane *p = &x->planes[tp->plane];
	struct trace_pf_ctx *c;
	int r;

	rc->md_ext = &trace_md_ext;
	if ((r = ctx_new(rc, o, i, P->n, &c)) < 0)
		return r;
	c->proc_uuid = PROC_UUID(tp->pid);
	trace_lod_init(&c->lod, rc);
	if ((r = trace_regions_plane(rc, tp->plane, &c->regions_on)) < 0)
		goto out;
	for (size_t j = 0; j < p->n_lines; j++)
		if ((r = trace_pf_line(c, c->pl, tp->pid, p->first_line + j)) < 0)
			goto out;
	/* a TensorCore plane's derived lines: ids past Steps' and every stream's */
	for (int k = 0; k < DL_COUNT; k++)
		trace_pf_dline_start(&c->dl[k], c, NULL, tp->pid,
				     ((uint64_t)(x->n_lines + 1 + x->n_planes + tp->plane) << 8) +
					     LEVELS_MAX * (uint64_t)(k + 1));
	/* its host-offload rows: two 256-id slots per plane past those */
	for (int k = DL_OFFLOAD; k < DL_KINDS; k++)
		trace_pf_dline_start(&c->dl[k], c, NULL, tp->pid,
				     ((uint64_t)(x->n_lines + 1 + 2 * x->n_planes + 2 * tp->plane)
				      << 8) + LEVELS_MAX * (uint64_t)(k - DL_OFFLOAD + 1));
	if ((r = trace_derive_tpu(rc, tp->plane, trace_pf_derived_emit, trace_pf_tpu_flush, c)) < 0)
		goto out;
	for (int k = 0; k < DL_KINDS; k++)
		if (k != DL_STEPS && (r = trace_pf_dline_end(&c->dl[k])) < 0) /* no Steps slot */
			goto out;
	if ((r = trace_pf_async_flush(c)) < 0 || (c->dropped && (r = drop_note(c, tp)) < 0))
		goto out;
	r = trace_pf_err(c);
	if (!r)
		r = xs_out_flush(o, false);
out:
	ctx_free(c);
	return r;
}

int trace_view_pftrace(struct xs_rctx *rc, struct xs_out *o)
{
	struct trace_plane *tp = NULL;
	struct trace_pf_parts P;
	struct trace_pf_ctx *c = NULL;
	size_t n = 0;
	int r;

	rc->md_ext = &trace_md_ext;
	if ((r = trace_planes(rc->x, &tp, &n)) < 0 || (r = trace_lod_setup(rc)) < 0)
		goto out;
	if ((r = ctx_new(rc, o, SIZE_MAX, n, &c)) < 0 || (r = processes(c, tp, n)) < 0 ||
	    (r = trace_pf_err(c)) < 0)
		goto out;
	/* the planes are independent parts: on several threads when the profile allows */
	P = (struct trace_pf_parts){.tp = tp, .n = n};
	r = xs_parts_run(rc, n, plane_part, &P, o);
	if (!r)
		r = xs_out_flush(o, false);
out:
	ctx_free(c);
	free(tp);
	return r;
}
