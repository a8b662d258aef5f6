/*
 * plan.c - plans one host's XSpace: its planes and lines, how the events
 * are shared among lines, and every line's seed.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gen.h"

/* ---- plan ----------------------------------------------------------- */

/*
 * Appends a plane with room for @max_lines lines; the returned plane is
 * borrowed from @s (its lines are freed by gen_plan_free()). NULL when out of
 * memory or planes.
 */
static struct gplane *add_plane(struct gspace *s, enum plane_kind k, int64_t id, const char *name,
				int index, size_t max_lines)
{
	struct gplane *p;

	if (s->n_planes == MAX_PLANES)
		return NULL;
	p = &s->planes[s->n_planes++];
	memset(p, 0, sizeof(*p));
	p->max_lines = max_lines;
	p->kind = k;
	p->id = id;
	p->index = index;
	p->seed = seed_of(s->seed, 0x504c414e45 + s->n_planes, 0);
	snprintf(p->name, sizeof(p->name), "%s", name);
	if (max_lines) {
		p->lines = calloc(max_lines, sizeof(*p->lines));
		if (!p->lines)
			return NULL;
	}
	return p;
}

/* Appends a line to @p (borrowed from it); the plan's shape never exceeds max_lines. */
static struct gline *add_line(struct gplane *p, enum line_kind k, int64_t id, const char *name,
			      int64_t ts_ns)
{
	struct gline *l;

	if (p->n_lines == p->max_lines)
		abort(); /* a bug in gen_plan_build(), not a runtime condition */
	l = &p->lines[p->n_lines];
	memset(l, 0, sizeof(*l));
	l->kind = k;
	l->id = id;
	l->timestamp_ns = ts_ns;
	l->seed = seed_of(p->seed, 0x4c494e45, p->n_lines);
	snprintf(l->name, sizeof(l->name), "%s", name);
	p->n_lines++;
	return l;
}

/* Event-count weight of a line kind, relative, before capping. */
static double line_weight(enum line_kind k, struct rng *r, size_t i)
{
	switch (k) {
	case L_STEPS:
		return 1.0;
	case L_MODULES:
		return 1.0;
	case L_OPS:
		return 60.0;
	case L_ASYNC:
		return 12.0;
	case L_TRACEME:
		return 3.0;
	case L_COUNTERS:
		return 1.5;
	case L_EMPTY:
		return 0;
	case L_KERNEL:
		return 25.0 * rng_range(r, 0.5, 1.5);
	case L_MEMCPY:
		return 3.0 * rng_range(r, 0.5, 1.5);
	case L_HOST:
		/* a few busy threads (main, executors), a long tail of idle ones */
		return i < 4 ? 40.0 : (i % 9 == 0 ? 8.0 : rng_range(r, 0.05, 1.2));
	case L_MEMORY:
		return 4.0; /* no draw: both memory lines get the same count */
	}
	return 0;
}

/* Frees the lines of every plane of @s; @s itself is the caller's. */
void gen_plan_free(struct gspace *s)
{
	for (size_t i = 0; i < s->n_planes; i++)
		free(s->planes[i].lines);
	s->n_planes = 0;
}

static size_t host_thread_count(uint64_t events)
{
	uint64_t n = 16 + events / 12000;

	return n > MAX_LINES ? MAX_LINES : (size_t)n;
}

static void host_thread_name(struct rng *r, enum kind kind, size_t i, char *dst, size_t n,
			     int64_t *id)
{
	static const char *const pools[] = {"pjrt-tpu-tasks",          "tfrt-dynamic-queue",
					    "tfrt-non-blocking-queue", "switchto-default-SDomainT",
					    "py_xla_execute",          "EventFDAsyncWorker",
					    "tf_pjrt_thread_pool",     "Host Threads",
					    "xla-cpu-worker"};
	uint64_t tid = 3116817 + i * 7 + rng_below(r, 7);

	if (i == 0 && kind == KIND_TPU) {
		snprintf(dst, n, "main/%" PRIu64, tid);
		*id = (int64_t)tid;
		return;
	}
	if (i == 0) {
		snprintf(dst, n, "python");
		*id = (int64_t)(rng_next(r) >> 4);
		return;
	}
	snprintf(dst, n, "%s/%" PRIu64, pools[rng_below(r, sizeof(pools) / sizeof(pools[0]))], tid);
	/* hashed thread ids are often negative as int64 */
	*id = i % 5 == 0 ? (int64_t)rng_next(r) : (int64_t)tid;
}

/* Adds the planes and lines of @s: devices, host metadata, host threads, Task Environment. */
static int plan_planes(struct gspace *s, enum kind kind, struct rng *r, size_t nthreads)
{
	size_t ndev = kind == KIND_TPU ? 4 : kind == KIND_GPU ? 8 : 0;

	if (kind == KIND_GPU)
		if (!add_plane(s, P_HOSTMETA, 0, "/host:metadata", 0, 0)) {
			return -ENOMEM;
		}
	for (size_t d = 0; d < ndev; d++) {
		char name[NAME_MAX_LEN];
		struct gplane *p;
		int64_t ts = 1000 + (int64_t)rng_below(r, 1000);

		snprintf(name, sizeof(name),
			 kind == KIND_TPU ? "/device:TPU:%zu" : "/device:GPU:%zu", d);
		p = add_plane(s, kind == KIND_TPU ? P_TPU : P_GPU,
			      kind == KIND_TPU ? (int64_t)(2 + 8 * d) : (int64_t)d, name, (int)d,
			      16);
		if (!p) {
			return -ENOMEM;
		}
		if (kind == KIND_TPU) {
			add_line(p, L_STEPS, DERIVED_LINE_ID, "Steps", ts);
			add_line(p, L_MODULES, 2, "XLA Modules", ts);
			add_line(p, L_OPS, 3, "XLA Ops", ts);
			add_line(p, L_ASYNC, 4, "Async XLA Ops", ts);
			add_line(p, L_TRACEME, 6, "XLA TraceMe", ts);
			add_line(p, L_EMPTY, 7, "Overlay", ts);
		} else {
			/*
			 * Raw GPU captures (like the MI300 samples) have only stream
			 * lines, and no group_id: XProf groups them and derives Steps /
			 * XLA Ops when it loads them (--ungrouped). A profile grouped
			 * before it was saved carries its group_ids and the Steps line
			 * (kThreadIdStepInfo) derived with them: XProf derives nothing
			 * on a grouped space, so without that line it has no steps.
			 */
			if (!(s->flags & GEN_UNGROUPED))
				add_line(p, L_STEPS, DERIVED_LINE_ID, "Steps", ts);
			for (int k = 0; k < 4; k++) {
				static const char *const sk[] = {"Kernel", "MemcpyH2D",
								 "Kernel,Memset", "MemcpyD2H"};
				char ln[NAME_MAX_LEN];

				snprintf(ln, sizeof(ln), "Stream #%d(%s)", 16 + k, sk[k]);
				add_line(p, k % 2 ? L_MEMCPY : L_KERNEL, 16 + k, ln, ts);
			}
		}
		add_line(p, L_COUNTERS, kind == KIND_TPU ? 8 : 99, "_counters_", ts);
	}
	if (kind != KIND_GPU)
		if (!add_plane(s, P_HOSTMETA, 0, "/host:metadata", 0, 0)) {
			return -ENOMEM;
		}
	{
		struct gplane *p = add_plane(s, P_HOST, 0, "/host:CPU", 0, nthreads + 2);

		if (!p) {
			return -ENOMEM;
		}
		for (size_t i = 0; i < nthreads; i++) {
			char name[NAME_MAX_LEN];
			int64_t id;
			struct gline *l;

			host_thread_name(r, kind, i, name, sizeof(name), &id);
			l = add_line(p, L_HOST, id, name, 1000 + (int64_t)rng_below(r, 100000));
			/* as in the GPU sample: display_name repeats the name on some lines */
			if (i % 3 == 1)
				snprintf(l->display_name, sizeof(l->display_name), "%s", name);
			if (i % 11 == 2)
				l->display_id = (int64_t)i;
		}
		/* two threads share one allocator's traffic (events.c), on one time base */
		add_line(p, L_MEMORY, 4000000, "allocator/4000000", 1000);
		add_line(p, L_MEMORY, 4000001, "allocator/4000001", 1000);
	}
	if (!add_plane(s, P_TASKENV, 0, "Task Environment", 0, 0)) {
		return -ENOMEM;
	}
	return 0;
}

/*
 * Shares @events among the lines of @s (exactly), by line weight drawn from
 * @r; Steps and counters are capped, the remainder goes to the busiest line.
 */
static void plan_events(struct gspace *s, enum kind kind, struct rng *r, uint64_t events)
{
	double whost = 0, wdev = 0, host_share;
	uint64_t given = 0;
	struct gline *busiest = NULL;
	double wbusy = -1;

	/*
	 * Distribute the events: host threads get a fixed share of the whole
	 * (all of it for CPU-only profiles), devices the rest, by line weight.
	 */
	for (size_t pi = 0; pi < s->n_planes; pi++) {
		struct gplane *p = &s->planes[pi];

		for (size_t li = 0; li < p->n_lines; li++) {
			struct gline *l = &p->lines[li];

			l->weight = line_weight(l->kind, r, li);
			if (p->kind == P_HOST)
				whost += l->weight;
			else
				wdev += l->weight;
		}
	}
	host_share = kind == KIND_CPU ? 1.0 : kind == KIND_GPU ? 0.3 : 0.25;
	for (size_t pi = 0; pi < s->n_planes; pi++) {
		struct gplane *p = &s->planes[pi];

		for (size_t li = 0; li < p->n_lines; li++) {
			struct gline *l = &p->lines[li];
			double share = p->kind == P_HOST ? host_share * l->weight / whost
							 : (1 - host_share) * l->weight / wdev;
			uint64_t n = (uint64_t)((double)events * share);

			if (l->kind == L_STEPS && n > 2000)
				n = 2000;
			if (l->kind == L_COUNTERS && n > 200000)
				n = 200000;
			if (given + n > events)
				n = events - given;
			l->events = n;
			given += n;
			if (l->kind != L_STEPS && l->kind != L_EMPTY && l->kind != L_MEMORY &&
			    l->weight > wbusy) {
				wbusy = l->weight;
				busiest = l;
			}
			if (l->kind == L_STEPS && !s->steps)
				s->steps = n;
		}
	}
	if (busiest)
		busiest->events += events - given;
	if (!s->steps)
		s->steps = 100; /* CPU-only: no Steps line, group by 100 steps anyway */
}

/* Gives each plane its metadata id ranges (event metadata classes, interned strings). */
static void plan_id_ranges(struct gspace *s)
{
	for (size_t pi = 0; pi < s->n_planes; pi++) {
		struct gplane *p = &s->planes[pi];
		uint32_t n[EM_COUNT] = {0}, si[SI_COUNT] = {0}, next = 1;
		uint64_t steps = 0;
		/* a model has hundreds to a few thousand distinct HLO ops and kernels */
		uint32_t nops = (uint32_t)(64 + s->events / 64 > 2000 ? 2000 : 64 + s->events / 64);
		uint32_t nkern = nops / 4;

		for (size_t li = 0; li < p->n_lines; li++)
			if (p->lines[li].kind == L_STEPS)
				steps = p->lines[li].events;
		switch (p->kind) {
		case P_TPU:
			n[EM_MODULE] = N_MODULES;
			n[EM_OP] = nops;
			n[EM_STEP] = (uint32_t)(steps ? steps : 1);
			n[EM_COUNTER] = N_COUNTERS;
			n[EM_ASYNC] = nops / 8;
			n[EM_TRACEME] = N_TRACEME;
			si[SI_HLO_OP] = nops / 8;
			p->n_stat_meta = SM_COUNT - 1;
			p->n_plane_stats = 5;
			break;
		case P_GPU:
			n[EM_STEP] = (uint32_t)steps; /* grouped: the Steps line's */
			n[EM_COUNTER] = N_COUNTERS;
			n[EM_KERNEL] = nkern;
			n[EM_MEMCPY] = 4;
			si[SI_KERNEL_DETAILS] = 64;
			si[SI_TF_OP] = 128;
			si[SI_HLO_OP] = nkern / 2 + 1; /* some HLO ops run several kernels */
			si[SI_HLO_MODULE] = N_MODULES;
			p->n_stat_meta = SM_COUNT - 1;
			p->n_plane_stats = 5;
			break;
		case P_HOST:
			n[EM_HOST] = 600 < nops ? 600 : nops;
			n[EM_MEMORY] = 2;
			si[SI_TF_OP] = 128;
			p->n_stat_meta = SM_COUNT - 1;
			break;
		case P_HOSTMETA:
			n[EM_MODULE] = N_MODULES;
			p->n_stat_meta = 1;
			break;
		case P_TASKENV:
			p->n_stat_meta = 2;
			p->n_plane_stats = 2;
			break;
		}
		for (int c = 0; c < EM_COUNT; c++) {
			p->em_base[c] = next;
			p->em_n[c] = n[c];
			next += n[c];
		}
		next = SI_BASE;
		for (int c = 0; c < SI_COUNT; c++) {
			p->si_base[c] = next;
			p->si_n[c] = si[c];
			next += si[c];
		}
		if (p->kind != P_HOSTMETA && p->kind != P_TASKENV)
			for (int c = 0; c < SI_COUNT; c++)
				p->n_stat_meta += si[c];
	}
}

/* plan_flags() - the stat metadata counts of @s's GEN_* variant (s->flags). */
static void plan_flags(struct gspace *s, unsigned flags)
{
	for (size_t i = 0; i < s->n_planes; i++) {
		struct gplane *p = &s->planes[i];

		if (p->kind != P_TPU && p->kind != P_GPU && p->kind != P_HOST)
			continue; /* the planes with the whole stat metadata table (meta.c) */
		if (flags & GEN_UNGROUPED)
			p->n_stat_meta--; /* no group_id */
		if (!(flags & GEN_REGIONS))
			p->n_stat_meta -= SM_COUNT - SM_C; /* no _c, _ct, _p, _pt */
	}
}

/*
 * Builds the shape of one host file with @events events in total (exactly)
 * into @s (caller's storage; free its lines with gen_plan_free()).
 */
int gen_plan_build(struct gspace *s, enum kind kind, uint64_t seed, const char *host,
		   uint64_t events, unsigned flags)
{
	struct rng r = {seed_of(seed, 0x504c414e, events)};
	size_t nthreads = host_thread_count(events);
	int ret;

	memset(s, 0, sizeof(*s));
	s->kind = kind;
	s->flags = flags;
	s->seed = seed;
	s->events = events;
	snprintf(s->host, sizeof(s->host), "%s", host);
	/* about 100 ns of profile per event, at least one second */
	s->span_ps = (int64_t)(events * 100000 > 1000000000000 ? events * 100000 : 1000000000000);
	ret = plan_planes(s, kind, &r, nthreads);
	if (ret < 0) {
		gen_plan_free(s);
		return ret;
	}
	plan_events(s, kind, &r, events);
	plan_id_ranges(s);
	plan_flags(s, flags);
	return 0;
}
