/*
 * steps-state.h - what the two passes of the step database share (steps.c:
 * setup, pass 1 and the database; steps-sweep.c: pass 2, the sweeps): XProf's
 * event types, the state of one computation, which lines hold markers and
 * events. Private to stats/.
 */
#ifndef XPROFS_STATS_STEPS_STATE_H
#define XPROFS_STATS_STEPS_STATE_H

#include "stats-internal.h"

#define ACTIVE_MAX ((size_t)1 << 20) /* events open at once in a step's sweep */

/*
 * XProf's step-time event types (event_span.h EventType), in its priority
 * order: where events overlap, the highest type owns the time
 * (ToNonOverlappedEvents()). BD_IDLE is UNKNOWN_TIME: no event at all.
 */
enum {
	BD_IDLE = 0,
	BD_HOST_COMPUTE,
	BD_HOST_TO_HOST,
	BD_HOST_TO_DEVICE,
	BD_DEVICE_COLLECTIVES,
	BD_HOST_WAIT_INPUT,
	BD_DEVICE_TO_DEVICE,
	BD_DEVICE_TO_HOST,
	BD_DEVICE_COMPUTE,
	BD_N
};
_Static_assert(BD_N == STATS_BD_N, "stats-internal.h counts the breakdown types");

/* A metadata's class (classify_plane()): its event type, and for host events two flags. */
#define CL_TYPE 0x0f
#define CL_MARKER 0x10   /* IsExplicitHostStepMarker() */
#define CL_NOT_REAL 0x20 /* not IsRealCpuCompute() */

/* ---- the state of one computation ------------------------------------------ */

/*
 * Which stat metadata keys of a plane name the stats the steps read (-1: none),
 * and the sets of them each pass reads (xs_walk_stats_keys()).
 */
struct pkeys {
	int64_t group, corr, step_name, dev_off, dev_dur;
	struct xs_stat_keys mark, ev; /* what the markers, the step events read */
	/* admit()'s last lookup on the plane: events of one group come in runs */
	bool last_ok;
	int64_t last_group;
	uint32_t last_pm; /* UINT32_MAX: the plane has no marker of it */
};

/* The longest marker of one group on one plane (StepDetails' markers). */
struct pmark {
	int64_t group;
	size_t plane, step;
	int64_t b, e;
	xprofs_ps128 b128; /* the exact begin, for the steps/N windows */
	bool events;       /* the plane has events of the group */
};

struct active { /* an open event of a step's sweep */
	int64_t end;
	uint8_t type;
};

/* One step's ToNonOverlappedEvents() sweep. */
struct ssweep {
	struct active *a; /* owned: a min-heap by end */
	size_t n, cap;
	int32_t cnt[BD_N];
	int64_t t;      /* where the last piece ended */
	uint16_t seen;  /* types that owned time somewhere (not only inside the step) */
	int64_t sb, se; /* the span pieces are added to */
	bool started;   /* t is set */
	bool redo;      /* pass 2 again: the span changed */
};

enum { K_NONE, K_GPU, K_TPU };

struct gsteps {
	struct stats_steps *st;
	int kind;           /* K_*: whose device planes, or none (host steps) */
	size_t host;        /* the /host:CPU plane (SIZE_MAX: none) */
	struct pkeys *keys; /* owned, per plane */
	uint8_t **cls;      /* owned, per plane: classify_plane(), NULL: not read */
	struct pmark *pm;   /* owned */
	size_t npm, cappm;
	struct xprofs_table *pmtab, *gtab; /* (plane, group) -> pm; group -> st->s */
	struct ssweep *sw;                 /* owned, per step */
	size_t *first, *idx; /* owned: step k's markers are pm[idx[first[k] .. first[k + 1])] */
	bool second;         /* pass 2 is running again (only the steps to redo) */
	size_t plane, line;  /* pass 1: the plane and line being read */
};

static inline bool device_plane(const struct gsteps *g, const struct xs_plane *p)
{
	return g->kind == K_TPU ? !strncmp(p->name, "/device:TPU:", 12)
				: g->kind == K_GPU && xs_plane_is_gpu(p);
}

/* step_line() - whether line @l of device plane @p holds its step markers. */
static inline bool step_line(const struct xs_plane *p, const struct xs_line *l)
{
	return l->id == TID_DERIVED_MIN || /* kThreadIdStepInfo */
	       (xs_plane_is_tensor_core(p) && xs_str_eq(l->name, l->name_len, "Steps"));
}

/* event_line() - whether the events of line @l of plane @p may go to steps. */
static inline bool event_line(const struct gsteps *g, const struct xs_plane *p,
			      const struct xs_line *l)
{
	if (g->kind == K_NONE)
		return l->plane == g->host;
	if (!device_plane(g, p) || step_line(p, l))
		return false;
	if (g->kind == K_TPU) /* ConvertTpuDeviceTraceXLineToStepEvents(): TensorCore op lines */
		return xs_plane_is_tensor_core(p) && xs_str_eq(l->name, l->name_len, "XLA Ops");
	return !xs_derived_tid(l->id);
}

struct pmkey {
	size_t plane;
	int64_t group;
};

static inline bool pm_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct pmark *m = &((const struct pmark *)ctx)[idx];
	const struct pmkey *k = key;

	return m->plane == k->plane && m->group == k->group;
}

static inline uint64_t pm_hash(size_t plane, int64_t group)
{
	return xprofs_table_hash(xprofs_table_hash(0, &plane, sizeof(plane)), &group,
				 sizeof(group));
}

/* What one event's stats say (ev_stat()). */
struct evstats {
	const struct pkeys *k;
	int64_t group, corr, dev_off, dev_dur;
	bool has_group, has_corr, has_step_name, has_off, has_dur;
};

/*
 * stats_steps_ev_stats() - the stats @want (one of @k's sets) of event @e at
 * cursor @c into @v (steps-sweep.c).
 */
int stats_steps_ev_stats(struct xs_rctx *rc, struct wire_cur *c, const struct xs_event *e,
			 const struct pkeys *k, const struct xs_stat_keys *want, struct evstats *v);
/*
 * stats_steps_events() - pass 2: every admitted event of the event lines to
 * its step's sweep, on two threads where the render has them (steps-sweep.c).
 */
int stats_steps_events(struct xs_rctx *rc, struct gsteps *g);

#endif
