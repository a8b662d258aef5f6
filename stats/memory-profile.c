/*
 * memory-profile.c - memory_profile.json: XProf's memory profile
 * (xprof/convert/xplane_to_memory_profile.cc) of the host plane, per memory
 * id (allocator), with XProf's field names (docs/memory.md).
 *
 * Design: XProf keeps every MemoryAllocation / MemoryDeallocation event as
 * a snapshot proto; here the host plane ("/host:CPU") is walked three times
 * with xs_line_each(), keeping little per event:
 *   1. every memory event: its memory id, UpdateProfileSummary() (the
 *      peak, in visiting order: lines, then events) and a count per id;
 *   2. the events of a batch of ids: one 48-byte record each (time,
 *      heap + stack, address, allocation bytes, step, visiting ordinal),
 *      sorted by time (stably: XProf's std::sort leaves ties unspecified),
 *      then UpdateStepId(), SampleMemoryProfileTimeline()'s choice,
 *      GetPeakMemoryStep(), ProcessActiveAllocations() and
 *      UpdateDeallocation()'s matching, both per address over an
 *      address-sorted permutation (each address's events are independent);
 *   3. the same events again: every field (strings too) of just the
 *      snapshots the output shows (the sampled timeline, the active
 *      allocations and the allocations the sampled deallocations match).
 * Stats are read as XProf's visitors read them: IntValue() is the int64
 * value only (0 for any other kind), DoubleValue() the double only,
 * StrOrRefValue() a string or a ref's name (else ""); the last stat of a
 * type wins. Byte sums wrap as two's complement, as XProf's int64 do.
 *
 * Limits: MEM_IDS_MAX memory ids (events of further ids are left out);
 * MEM_EVENTS_MAX events held in step 2 at once (~100 MiB): a memory id with
 * more keeps only its summary, with the reason in "errors".
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xprofs/stats.h"

#define MEM_IDS_MAX ((size_t)1024)
#define MEM_EVENTS_MAX ((size_t)2 << 20)
#define MEM_SNAPSHOTS 1000 /* ConvertXPlaneToMemoryProfile()'s max_num_snapshots */
#define ERRORS_MAX 64

enum { ACT_ALLOC = 1, ACT_DEALLOC = 2 }; /* MemoryActivity */

/* The stats GenerateMemoryProfile() reads (TSL StatType names), + 1 in the kind cache. */
enum mstat {
	MS_NONE = 0,
	MS_ID_INT, /* index_on_host, device_ordinal */
	MS_ID_STR, /* allocator_name */
	MS_RESERVED,
	MS_ALLOCATED,
	MS_AVAILABLE,
	MS_FRAG,
	MS_PEAK,
	MS_REQUESTED,
	MS_ABYTES,
	MS_ADDR,
	MS_TF_OP,
	MS_GROUP,
	MS_REGION,
	MS_DTYPE,
	MS_SHAPE,
};

static const struct {
	const char *name;
	enum mstat kind;
} mstat_names[] = {
	{"index_on_host", MS_ID_INT},
	{"device_ordinal", MS_ID_INT},
	{"allocator_name", MS_ID_STR},
	{"bytes_reserved", MS_RESERVED},
	{"bytes_allocated", MS_ALLOCATED},
	{"bytes_available", MS_AVAILABLE},
	{"fragmentation", MS_FRAG},
	{"peak_bytes_in_use", MS_PEAK},
	{"requested_bytes", MS_REQUESTED},
	{"allocation_bytes", MS_ABYTES},
	{"addr", MS_ADDR},
	{"tf_op", MS_TF_OP},
	{"group_id", MS_GROUP},
	{"region_type", MS_REGION},
	{"data_type", MS_DTYPE},
	{"shape", MS_SHAPE},
};

/* MemoryAggregationStats */
struct agg {
	int64_t stack, heap, free, peak;
	double frag;
};

/* One memory event, as GenerateMemoryProfile() reads it. */
struct mev {
	int act;
	struct agg a;
	int64_t req, abytes, step, dtype;
	uint64_t addr;
	const char *id; /* borrowed (a ref's name, or idbuf / idstr) */
	size_t id_len;
	char idbuf[24];
	char *idstr;                  /* owned: an allocator_name given as a string */
	bool strings;                 /* also read tf_op, region_type, shape */
	char *tf_op, *region, *shape; /* owned when @strings */
};

/* One event in step 2 (sorted by time, then visiting ordinal). */
struct mrec {
	int64_t t, sum, abytes, step;
	uint64_t addr;
	uint32_t seq; /* visiting ordinal within its memory id */
	uint8_t act;
};

/* A snapshot the output shows, every field (step 3). */
struct msnap {
	int64_t t;
	struct agg a;
	int act;
	int64_t req, abytes, step;
	uint64_t addr;
	char *tf_op, *region, *shape; /* owned, never NULL once read */
	char dtype[48];               /* DataTypeString() */
	bool read;
};

/* A row of active_allocations before merging: a snapshot position, or a special (-1, -2). */
struct arow {
	int64_t idx;           /* position in the time-sorted snapshots, or -1 - special index */
	const struct msnap *m; /* its metadata */
};

struct mid {
	char *name; /* owned */
	size_t len;
	uint64_t n; /* events */
	/* MemoryProfileSummary */
	int64_t lifetime, peak_time, capacity;
	struct agg peak;
	/* steps 2 and 3 */
	struct mrec *rec;   /* owned, n entries in time order */
	uint32_t *want;     /* owned: sorted visiting ordinals of the snapshots shown */
	struct msnap *snap; /* owned, parallel to want */
	size_t nwant;
	bool batched;
};

struct mprof {
	struct xs_rctx *rc;
	size_t plane;
	int8_t *skind;     /* stat metadata index -> enum mstat + 1 (0: not yet known) */
	uint8_t *mem_line; /* lines (of the plane) holding memory events */
	size_t cur_line;
	struct mid *ids; /* owned */
	size_t nids, cap;
	uint16_t slot[MEM_IDS_MAX * 2]; /* 1 + index into ids, 0: empty */
	bool ids_full;
	int pass;       /* 1, 2 or 3 */
	uint64_t *seen; /* owned, per id: events visited in this pass */
	char *errors[ERRORS_MAX];
	size_t nerrors;
};

static void add_error(struct mprof *mp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void add_error(struct mprof *mp, const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;

	if (mp->nerrors >= ERRORS_MAX)
		return;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) >= 0)
		mp->errors[mp->nerrors++] = s;
	va_end(ap);
}

static int64_t wadd(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a + (uint64_t)b);
}

/* The kind of stat metadata @key (MS_NONE: no type, as XProf's Type() without a value). */
static enum mstat stat_kind(struct mprof *mp, int64_t key)
{
	struct xs_rctx *rc = mp->rc;
	ssize_t k = xs_md_find(&rc->x->planes[rc->plane].st, key);
	const struct xs_stmd *sm;

	if (k < 0)
		return MS_NONE;
	if (!mp->skind[k]) {
		enum mstat kind = MS_NONE;

		if (xs_md_stat(rc, key, &sm) < 0)
			return MS_NONE;
		for (size_t i = 0; i < sizeof(mstat_names) / sizeof(mstat_names[0]); i++)
			if (xs_str_eq(sm->name, sm->name_len, mstat_names[i].name))
				kind = mstat_names[i].kind;
		mp->skind[k] = (int8_t)(kind + 1);
	}
	return (enum mstat)(mp->skind[k] - 1);
}

/* IntValue(): the int64 value, 0 for any other kind. */
static int64_t int_value(const struct xs_statv *s)
{
	return s->kind == SV_I64 ? (int64_t)s->u : 0;
}

/*
 * str_value() - StrOrRefValue(): a string, or a ref's stat metadata name,
 * else "". *out borrowed (@own NULL) or owned (*own, free()).
 */
static int str_value(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s,
		     const char **out, size_t *len, char **own)
{
	const struct xs_stmd *ref;
	int r;

	*own = NULL;
	*out = "";
	*len = 0;
	if (s->kind == SV_REF) {
		if ((r = xs_md_stat(rc, (int64_t)s->u, &ref)) < 0)
			return r;
		*out = ref->name;
		*len = ref->name_len;
	} else if (s->kind == SV_STR) {
		if ((r = xs_stat_string(rc, c, s, own)) < 0)
			return r;
		*out = *own;
		*len = strlen(*own);
	}
	return 0;
}

/* Replace string *dst (owned) by StrOrRefValue() of @s. */
static int set_str(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s, char **dst)
{
	const char *v;
	char *own;
	size_t n;
	int r;

	if ((r = str_value(rc, c, s, &v, &n, &own)) < 0)
		return r;
	free(*dst);
	*dst = own ? own : strndup(v, n);
	return *dst ? 0 : -ENOMEM;
}

/* A xs_stat_fn: one stat of a memory event into struct mev (GenerateMemoryProfile()'s switch). */
static int mev_stat(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s, void *arg)
{
	struct mprof *mp = ((void **)arg)[0];
	struct mev *e = ((void **)arg)[1];
	int r;

	switch (stat_kind(mp, s->md)) {
	case MS_NONE:
		break;
	case MS_ID_INT:
		free(e->idstr);
		e->idstr = NULL;
		e->id_len = (size_t)snprintf(e->idbuf, sizeof(e->idbuf), "%" PRId64, int_value(s));
		e->id = e->idbuf;
		break;
	case MS_ID_STR: {
		char *own;

		free(e->idstr);
		e->idstr = NULL;
		if ((r = str_value(rc, c, s, &e->id, &e->id_len, &own)) < 0)
			return r;
		e->idstr = own;
		break;
	}
	case MS_RESERVED:
		e->a.stack = int_value(s);
		break;
	case MS_ALLOCATED:
		e->a.heap = int_value(s);
		break;
	case MS_AVAILABLE:
		e->a.free = int_value(s);
		break;
	case MS_FRAG:
		e->a.frag = s->kind == SV_DOUBLE ? s->d : 0;
		break;
	case MS_PEAK:
		e->a.peak = int_value(s);
		break;
	case MS_REQUESTED:
		e->req = int_value(s);
		break;
	case MS_ABYTES:
		e->abytes = int_value(s);
		break;
	case MS_ADDR:
		e->addr = (uint64_t)int_value(s);
		break;
	case MS_GROUP:
		e->step = int_value(s);
		break;
	case MS_DTYPE:
		e->dtype = int_value(s);
		break;
	case MS_TF_OP:
		return e->strings ? set_str(rc, c, s, &e->tf_op) : 0;
	case MS_REGION:
		return e->strings ? set_str(rc, c, s, &e->region) : 0;
	case MS_SHAPE:
		return e->strings ? set_str(rc, c, s, &e->shape) : 0;
	}
	return 0;
}

static void mev_clear(struct mev *e)
{
	free(e->idstr);
	free(e->tf_op);
	free(e->region);
	free(e->shape);
}

/* mev_read() - the stats of event @ev into @e (reset first); the strings too with @strings. */
static int mev_read(struct mprof *mp, const struct xs_event *ev, int act, bool strings,
		    struct mev *e)
{
	struct xs_rctx *rc = mp->rc;
	void *arg[2] = {mp, e};

	memset(e, 0, sizeof(*e));
	e->act = act;
	e->step = -1; /* kInvalidStepId */
	e->id = "";
	e->strings = strings;
	if (!ev->has_stats)
		return 0;
	return xs_walk_stats(rc, &rc->ev, ev->stats_off, ev->off + ev->len - ev->stats_off,
			     XEVENT_F_STATS, mev_stat, arg);
}

/* mid_find() - the index of memory id @name, added in pass 1; -1 when unknown or full. */
static ssize_t mid_find(struct mprof *mp, const char *name, size_t len, bool add)
{
	size_t h = (size_t)xprofs_hash64(name, len) & (MEM_IDS_MAX * 2 - 1);
	struct mid *m;

	while (mp->slot[h]) {
		m = &mp->ids[mp->slot[h] - 1];
		if (m->len == len && !memcmp(m->name, name, len))
			return mp->slot[h] - 1;
		h = (h + 1) & (MEM_IDS_MAX * 2 - 1);
	}
	if (!add)
		return -1;
	if (mp->nids >= MEM_IDS_MAX) {
		mp->ids_full = true;
		return -1;
	}
	if (xprofs_grow(&mp->ids, &mp->cap, mp->nids, sizeof(*mp->ids), 8) < 0)
		return -ENOMEM;
	m = &mp->ids[mp->nids];
	memset(m, 0, sizeof(*m));
	if (!(m->name = malloc(len + 1)))
		return -ENOMEM;
	memcpy(m->name, name, len);
	m->name[len] = 0;
	m->len = len;
	mp->slot[h] = (uint16_t)(mp->nids + 1);
	return (ssize_t)mp->nids++;
}

/* UpdateProfileSummary() of event stats @a at @t_ps. */
static void update_summary(struct mid *m, const struct agg *a, int64_t t_ps)
{
	int64_t sum = wadd(a->stack, a->heap);

	m->lifetime = a->peak;
	if (sum >= m->peak.peak) {
		m->peak = *a;
		m->peak.peak = sum;
		m->peak_time = t_ps;
		m->capacity = wadd(sum, a->free);
	}
}

/* The activity of an event by its metadata's name (XProf's event Type()); 0: not a memory event. */
static int event_act(const struct xs_evmd *m)
{
	if (xs_str_eq(m->full_json, m->full_json_len, "\"MemoryAllocation\""))
		return ACT_ALLOC;
	if (xs_str_eq(m->full_json, m->full_json_len, "\"MemoryDeallocation\""))
		return ACT_DEALLOC;
	return 0;
}

/* DataTypeString() of TensorflowDataType @v (an int32, as the cast to the enum makes it). */
static void dtype_str(int64_t v, char *buf, size_t n)
{
	static const char *const names[] = {"INVALID",
					    "float",
					    "double",
					    "int32",
					    "uint8",
					    "int16",
					    "int8",
					    "string",
					    "complex64",
					    "int64",
					    "bool",
					    "qint8",
					    "quint8",
					    "qint32",
					    "bfloat16",
					    "qint16",
					    "quint16",
					    "uint16",
					    "complex128",
					    "half",
					    "resource",
					    "variant",
					    "uint32",
					    "uint64",
					    "float8_e5m2",
					    "float8_e4m3fn",
					    "float8_e4m3fnuz",
					    "float8_e4m3b11fnuz",
					    "float8_e5m2fnuz",
					    "int4",
					    "uint4"};
	int32_t d = (int32_t)(uint32_t)(uint64_t)v;
	bool ref = d > 100; /* IsRefType(): kDataTypeRefOffset */

	if (ref)
		d -= 100;
	if (d >= 0 && (size_t)d < sizeof(names) / sizeof(names[0]))
		snprintf(buf, n, "%s%s", names[d], ref ? "_ref" : "");
	else
		snprintf(buf, n, "unknown dtype enum (%" PRId32 ")%s", d, ref ? "_ref" : "");
}

/* Step 3: every field of the wanted snapshot of @m at visiting ordinal @seq. */
static int snap_fill(struct mprof *mp, struct mid *m, uint32_t seq, const struct xs_event *ev,
		     int act)
{
	size_t lo = 0, hi = m->nwant;
	struct msnap *s;
	struct mev e;
	int r;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->want[mid] < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == m->nwant || m->want[lo] != seq)
		return 0;
	if ((r = mev_read(mp, ev, act, true, &e)) < 0)
		goto out;
	s = &m->snap[lo];
	s->t = ev->offset_ps;
	s->a = e.a;
	s->act = act;
	s->req = e.req;
	s->abytes = e.abytes;
	s->step = e.step;
	dtype_str(e.dtype, s->dtype, sizeof(s->dtype));
	s->addr = e.addr;
	s->tf_op = e.tf_op ? e.tf_op : strdup("");
	s->region = e.region ? e.region : strdup("");
	s->shape = e.shape ? e.shape : strdup("");
	e.tf_op = e.region = e.shape = NULL;
	s->read = true;
	if (!s->tf_op || !s->region || !s->shape)
		r = -ENOMEM;
out:
	mev_clear(&e);
	return r;
}

/* A xs_event_fn over the host plane's lines: the work of pass mp->pass. */
static int mem_event(struct xs_rctx *rc, const struct xs_event *ev, struct xs_evmd *md, void *arg)
{
	struct mprof *mp = arg;
	int act = event_act(md);
	struct mev e;
	struct mid *m;
	ssize_t k;
	int r;

	(void)rc;
	if (!act)
		return 0;
	mp->mem_line[mp->cur_line] = 1;
	if ((r = mev_read(mp, ev, act, false, &e)) < 0)
		goto out;
	if ((k = mid_find(mp, e.id, e.id_len, mp->pass == 1)) < 0) {
		r = k == -ENOMEM ? -ENOMEM : 0;
		goto out;
	}
	m = &mp->ids[k];
	if (mp->pass == 1) {
		m->n++;
		update_summary(m, &e.a, ev->offset_ps);
	} else if (m->batched) {
		uint32_t seq = (uint32_t)mp->seen[k]++;

		if (mp->pass == 2) {
			struct mrec *q = &m->rec[seq];

			q->t = ev->offset_ps;
			q->sum = wadd(e.a.stack, e.a.heap);
			q->abytes = e.abytes;
			q->step = e.step;
			q->addr = e.addr;
			q->seq = seq;
			q->act = (uint8_t)act;
		} else {
			r = snap_fill(mp, m, seq, ev, act);
		}
	}
out:
	mev_clear(&e);
	return r;
}

/* One pass over the host plane's lines (after pass 1: only those holding memory events). */
static int walk(struct mprof *mp, int pass)
{
	const struct xs_plane *p = &mp->rc->x->planes[mp->plane];
	int r;

	mp->pass = pass;
	memset(mp->seen, 0, (mp->nids + 1) * sizeof(*mp->seen));
	for (size_t i = 0; i < p->n_lines; i++) {
		if (pass > 1 && !mp->mem_line[i])
			continue;
		mp->cur_line = i;
		if ((r = xs_line_each(mp->rc, p->first_line + i, NULL, mem_event, mp)) < 0)
			return r;
	}
	return 0;
}

static int rec_time_cmp(const void *a, const void *b)
{
	const struct mrec *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Positions of records sorted by (address, position), for the per-address walks. */
static int addr_cmp(const void *a, const void *b, void *arg)
{
	const struct mrec *rec = arg;
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;

	if (rec[i].addr != rec[j].addr)
		return rec[i].addr < rec[j].addr ? -1 : 1;
	return i < j ? -1 : i > j;
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* What step 2 decides for one memory id: positions (in time order) the output needs. */
struct plan {
	uint32_t sampled[MEM_SNAPSHOTS];
	size_t nsampled;
	int32_t sampled_match[MEM_SNAPSHOTS]; /* a sampled deallocation's allocation, or -1 */
	uint32_t *active;                     /* owned: positions live at the peak */
	size_t nactive;
	int64_t unmapped; /* unmapped_allocation_bytes, final */
	int64_t peak_step;
	uint64_t unmatched_frees, unfreed;
};

/* SampleMemoryProfileTimeline(): a max box filter over the heap + stack of @n records. */
static void sample(const struct mrec *rec, size_t n, struct plan *pl)
{
	size_t width, count1, count2;

	pl->nsampled = 0;
	if (n <= MEM_SNAPSHOTS) {
		for (size_t i = 0; i < n; i++)
			pl->sampled[pl->nsampled++] = (uint32_t)i;
		return;
	}
	width = n / MEM_SNAPSHOTS;
	count1 = MEM_SNAPSHOTS * (width + 1) - n;
	count2 = MEM_SNAPSHOTS - count1;
	for (int pass = 0; pass < 2; pass++) {
		size_t w = pass ? width + 1 : width, count = pass ? count2 : count1;
		size_t start = pass ? width * count1 : 0;

		for (size_t i = 0; i < count; i++) {
			size_t best = start + w * i;

			for (size_t j = best + 1; j < start + w * (i + 1); j++)
				if (rec[j].sum > rec[best].sum)
					best = j;
			pl->sampled[pl->nsampled++] = (uint32_t)best;
		}
	}
}

/*
 * plan_id() - step 2 for memory id @m: its records sorted by time, then
 * UpdateStepId(), the sampled timeline, GetPeakMemoryStep(),
 * ProcessActiveAllocations()'s live set and UpdateDeallocation()'s matches
 * for the sampled deallocations; the visiting ordinals needed in m->want.
 */
static int plan_id(struct mid *m, struct plan *pl)
{
	struct mrec *rec = m->rec;
	size_t n = m->n, ncand = 0, nw = 0;
	uint32_t *perm = NULL, *cand = NULL;
	int64_t last_valid = -1, unmapped_dealloc = 0;
	int r = 0;

	qsort(rec, n, sizeof(*rec), rec_time_cmp);
	for (size_t i = 0; i < n; i++) { /* UpdateStepId() */
		if (rec[i].step == -1)
			rec[i].step = last_valid + 1;
		else
			last_valid = rec[i].step;
	}
	sample(rec, n, pl);
	pl->peak_step = 0; /* GetPeakMemoryStep(): the last snapshot at the peak */
	for (size_t i = 0; i < n; i++)
		if (rec[i].sum == m->peak.peak)
			pl->peak_step = rec[i].step;
	if (!(perm = malloc((n + 1) * sizeof(*perm))) ||
	    !(cand = malloc((n + 1) * sizeof(*cand)))) {
		r = -ENOMEM;
		goto out;
	}
	/* UpdateDeallocation(): per address, an allocation waits for the next deallocation */
	for (size_t i = 0; i < n; i++)
		perm[i] = (uint32_t)i;
	qsort_r(perm, n, sizeof(*perm), addr_cmp, rec);
	for (size_t i = 0; i < pl->nsampled; i++)
		pl->sampled_match[i] = -1;
	pl->unmatched_frees = pl->unfreed = 0;
	for (size_t g = 0; g < n;) {
		size_t e = g;
		int64_t pending = -1;

		while (e < n && rec[perm[e]].addr == rec[perm[g]].addr)
			e++;
		for (size_t j = g; j < e; j++) {
			uint32_t i = perm[j];

			if (rec[i].act == ACT_DEALLOC) {
				if (pending < 0) {
					pl->unmatched_frees++;
					continue;
				}
				/* sampled positions strictly increase (disjoint boxes) */
				for (size_t lo = 0, hi = pl->nsampled; lo < hi;) {
					size_t mid = lo + (hi - lo) / 2;

					if (pl->sampled[mid] == i) {
						pl->sampled_match[mid] = (int32_t)pending;
						break;
					}
					if (pl->sampled[mid] < i)
						lo = mid + 1;
					else
						hi = mid;
				}
				pending = -1;
			} else if (pending < 0) {
				pending = i;
			}
		}
		pl->unfreed += pending >= 0;
		g = e;
	}
	/*
	 * ProcessActiveAllocations(): the snapshots up to the peak's time in the
	 * peak's step; per address the last allocation stays live unless a
	 * deallocation follows it.
	 */
	pl->unmapped = m->peak.heap;
	for (size_t i = 0; i < n && rec[i].t <= m->peak_time; i++) {
		if (rec[i].step != pl->peak_step)
			continue;
		cand[ncand++] = (uint32_t)i;
		if (rec[i].act == ACT_ALLOC)
			pl->unmapped = wadd(pl->unmapped, -rec[i].abytes);
		else
			pl->unmapped = wadd(pl->unmapped, rec[i].abytes);
	}
	qsort_r(cand, ncand, sizeof(*cand), addr_cmp, rec);
	pl->nactive = 0;
	for (size_t g = 0; g < ncand;) {
		size_t e = g;
		int64_t live = -1;

		while (e < ncand && rec[cand[e]].addr == rec[cand[g]].addr)
			e++;
		for (size_t j = g; j < e; j++) {
			uint32_t i = cand[j];

			if (rec[i].act == ACT_ALLOC)
				live = i;
			else if (live >= 0)
				live = -1;
			else
				unmapped_dealloc = wadd(unmapped_dealloc, rec[i].abytes);
		}
		if (live >= 0)
			cand[pl->nactive++] =
				(uint32_t)live; /* nactive <= g: writes behind the scan */
		g = e;
	}
	pl->unmapped = wadd(pl->unmapped, -unmapped_dealloc);
	pl->active = cand;
	cand = NULL;
	/* the visiting ordinals of every position shown */
	free(perm);
	if (!(perm = malloc((2 * pl->nsampled + pl->nactive + 1) * sizeof(*perm)))) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < pl->nsampled; i++) {
		perm[nw++] = rec[pl->sampled[i]].seq;
		if (pl->sampled_match[i] >= 0)
			perm[nw++] = rec[pl->sampled_match[i]].seq;
	}
	for (size_t i = 0; i < pl->nactive; i++)
		perm[nw++] = rec[pl->active[i]].seq;
	qsort(perm, nw, sizeof(*perm), u32_cmp);
	m->nwant = 0;
	for (size_t i = 0; i < nw; i++)
		if (!m->nwant || perm[i] != perm[m->nwant - 1])
			perm[m->nwant++] = perm[i];
	if (!(m->snap = calloc(m->nwant + 1, sizeof(*m->snap)))) {
		r = -ENOMEM;
		goto out;
	}
	m->want = perm;
	perm = NULL;
out:
	free(perm);
	free(cand);
	return r;
}

/* The snapshot of position @pos of @m (after step 3). */
static const struct msnap *snap_at(const struct mid *m, uint32_t pos)
{
	uint32_t seq = m->rec[pos].seq;
	size_t lo = 0, hi = m->nwant;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->want[mid] < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return &m->snap[lo];
}

static void out_agg(struct xs_out *o, const struct agg *a)
{
	xs_out_key_i64(o, "{\"stack_reserved_bytes\":", a->stack);
	xs_out_key_i64(o, ",\"heap_allocated_bytes\":", a->heap);
	xs_out_key_i64(o, ",\"free_memory_bytes\":", a->free);
	OUT_LIT(o, ",\"fragmentation\":");
	xs_out_double(o, a->frag);
	xs_out_key_i64(o, ",\"peak_bytes_in_use\":", a->peak);
	OUT_LIT(o, "}");
}

/* A MemoryActivityMetadata; @src: where the strings come from (a deallocation's allocation). */
static void out_meta(struct xs_out *o, const struct msnap *s, const struct msnap *src)
{
	OUT_RAW(o, s->act == ACT_ALLOC ? "{\"memory_activity\":\"ALLOCATION\""
				       : "{\"memory_activity\":\"DEALLOCATION\"");
	xs_out_key_i64(o, ",\"requested_bytes\":", s->req);
	xs_out_key_i64(o, ",\"allocation_bytes\":", s->abytes);
	OUT_LIT(o, ",\"address\":");
	xs_out_u64(o, s->addr);
	OUT_LIT(o, ",\"tf_op_name\":");
	xs_out_cstr(o, src->tf_op);
	xs_out_key_i64(o, ",\"step_id\":", s->step);
	OUT_LIT(o, ",\"region_type\":");
	xs_out_cstr(o, src->region);
	OUT_LIT(o, ",\"data_type\":");
	xs_out_cstr(o, src->dtype);
	OUT_LIT(o, ",\"tensor_shape\":");
	xs_out_cstr(o, src->shape);
	OUT_LIT(o, "}");
}

/* A MemoryProfileSnapshot; the step id after UpdateStepId() (@step). */
static void out_snap(struct xs_out *o, const struct msnap *s, const struct msnap *src, int64_t step)
{
	struct msnap c = *s;

	c.step = step;
	xs_out_key_i64(o, "{\"time_offset_ps\":", s->t);
	OUT_LIT(o, ",\"aggregation_stats\":");
	out_agg(o, &s->a);
	OUT_LIT(o, ",\"activity_metadata\":");
	out_meta(o, &c, src);
	OUT_LIT(o, "}");
}

/* MetadataComparator, then the position (XProf leaves ties to its hash map's order). */
static int arow_cmp(const void *a, const void *b)
{
	const struct arow *x = a, *y = b;
	const struct msnap *p = x->m, *q = y->m;
	int c;

	/* -allocation_bytes ascending: INT64_MIN negates to itself, as in XProf */
	if (p->abytes != q->abytes)
		return wadd(0, -p->abytes) < wadd(0, -q->abytes) ? -1 : 1;
	if (p->req != q->req)
		return wadd(0, -p->req) < wadd(0, -q->req) ? -1 : 1;
	if ((c = strcmp(p->tf_op, q->tf_op)) || (c = strcmp(p->region, q->region)) ||
	    (c = strcmp(p->dtype, q->dtype)) || (c = strcmp(p->shape, q->shape)))
		return c;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static bool arow_same(const struct arow *x, const struct arow *y)
{
	const struct msnap *p = x->m, *q = y->m;

	return p->abytes == q->abytes && p->req == q->req && !strcmp(p->tf_op, q->tf_op) &&
	       !strcmp(p->region, q->region) && !strcmp(p->dtype, q->dtype) &&
	       !strcmp(p->shape, q->shape);
}

/* A special allocation of InsertSpecialAllocations(). */
static void special(struct msnap *s, int64_t bytes, int64_t step, const char *op,
		    const char *region)
{
	memset(s, 0, sizeof(*s));
	s->act = ACT_ALLOC;
	s->req = s->abytes = bytes;
	s->step = step;
	s->tf_op = (char *)op;
	s->region = (char *)region;
	s->shape = (char *)"unknown";
	dtype_str(0, s->dtype, sizeof(s->dtype));
}

/*
 * out_detail() - active_allocations, the snapshots they show, the special
 * allocations and the sampled timeline of @m: InsertSpecialAllocations(),
 * the sort and merge of ProcessActiveAllocations(),
 * SaveActiveAllocationSnapshots(); then the xprofs additions.
 */
static int out_detail(struct xs_out *o, const struct mid *m, const struct plan *pl)
{
	struct msnap sp[2];
	struct arow *rows;
	size_t nrows = 0, nsp = 0, shown = 0;
	int r;

	if (!(rows = malloc((pl->nactive + 3) * sizeof(*rows))))
		return -ENOMEM;
	for (size_t i = 0; i < pl->nactive; i++)
		rows[nrows++] = (struct arow){pl->active[i], snap_at(m, pl->active[i])};
	if (pl->unmapped > 0) {
		special(&sp[nsp], pl->unmapped, pl->peak_step, "unused preallocated device memory",
			"persist/dynamic");
		nsp++;
		rows[nrows++] = (struct arow){-(int64_t)nsp, &sp[nsp - 1]};
	}
	if (m->peak.stack > 0) {
		special(&sp[nsp], m->peak.stack, pl->peak_step, "stack", "stack");
		nsp++;
		rows[nrows++] = (struct arow){-(int64_t)nsp, &sp[nsp - 1]};
	}
	qsort(rows, nrows, sizeof(*rows), arow_cmp);
	OUT_LIT(o, ",\"memory_profile_snapshots\":[");
	for (size_t i = 0; i < nrows; i++) {
		if (rows[i].idx < 0)
			continue;
		OUT_RAW(o, shown ? ",\n" : "\n");
		shown++;
		out_snap(o, rows[i].m, rows[i].m, m->rec[rows[i].idx].step);
		while (i + 1 < nrows && arow_same(&rows[i], &rows[i + 1]))
			i++;
	}
	OUT_LIT(o, "],\"active_allocations\":[");
	shown = 0;
	for (size_t i = 0, k = 0; i < nrows; i++) {
		size_t first = i;

		while (i + 1 < nrows && arow_same(&rows[i], &rows[i + 1]))
			i++;
		OUT_RAW(o, k ? ",\n" : "\n");
		k++;
		if (rows[first].idx >= 0) {
			xs_out_key_i64(o, "{\"snapshot_index\":", (int64_t)shown++);
			OUT_LIT(o, ",\"special_index\":-1");
		} else {
			xs_out_key_i64(o, "{\"snapshot_index\":", rows[first].idx);
			xs_out_key_i64(o, ",\"special_index\":", -rows[first].idx - 1);
		}
		xs_out_key_i64(o, ",\"num_occurrences\":", (int64_t)(i - first + 1));
		OUT_LIT(o, "}");
		if ((r = xs_out_flush(o, false)) < 0)
			goto out;
	}
	OUT_LIT(o, "],\"special_allocations\":[");
	for (size_t i = 0; i < nsp; i++) {
		OUT_RAW(o, i ? ",\n" : "\n");
		out_meta(o, &sp[i], &sp[i]);
	}
	OUT_LIT(o, "],\"sampled_timeline_snapshots\":[");
	for (size_t i = 0; i < pl->nsampled; i++) {
		uint32_t pos = pl->sampled[i];
		const struct msnap *s = snap_at(m, pos), *src = s;

		if (s->act == ACT_DEALLOC && pl->sampled_match[i] >= 0)
			src = snap_at(m, (uint32_t)pl->sampled_match[i]);
		OUT_RAW(o, i ? ",\n" : "\n");
		out_snap(o, s, src, m->rec[pos].step);
		if ((r = xs_out_flush(o, false)) < 0)
			goto out;
	}
	OUT_LIT(o, "]");
	xs_out_key_i64(o, ",\"num_snapshots\":", (int64_t)m->n);
	xs_out_key_i64(o, ",\"peak_step_id\":", pl->peak_step);
	OUT_LIT(o, ",\"unmatched_deallocations\":");
	xs_out_u64(o, pl->unmatched_frees);
	OUT_LIT(o, ",\"unfreed_allocations\":");
	xs_out_u64(o, pl->unfreed);
	r = o->r;
out:
	free(rows);
	return r;
}

/* One entry of memory_profile_per_allocator: its summary, then the detail when @pl. */
static int out_id(struct xs_out *o, const struct mid *m, const struct plan *pl, bool first)
{
	OUT_RAW(o, first ? "\n" : ",\n");
	xs_out_str(o, m->name, m->len);
	xs_out_key_i64(o, ":{\"profile_summary\":{\"peak_bytes_usage_lifetime\":", m->lifetime);
	OUT_LIT(o, ",\"peak_stats\":");
	out_agg(o, &m->peak);
	xs_out_key_i64(o, ",\"peak_stats_time_ps\":", m->peak_time);
	xs_out_key_i64(o, ",\"memory_capacity\":", m->capacity);
	OUT_LIT(o, "}");
	if (pl) {
		int r = out_detail(o, m, pl);

		if (r < 0)
			return r;
	} else {
		OUT_LIT(o, ",\"memory_profile_snapshots\":[],\"active_allocations\":[],"
			   "\"special_allocations\":[],\"sampled_timeline_snapshots\":[]");
		xs_out_key_i64(o, ",\"num_snapshots\":", (int64_t)m->n);
		OUT_LIT(o, ",\"peak_step_id\":null,\"unmatched_deallocations\":null,"
			   "\"unfreed_allocations\":null");
	}
	OUT_LIT(o, "}");
	return xs_out_flush(o, false);
}

static void mid_drop_detail(struct mid *m)
{
	for (size_t i = 0; m->snap && i < m->nwant; i++) {
		free(m->snap[i].tf_op);
		free(m->snap[i].region);
		free(m->snap[i].shape);
	}
	free(m->snap);
	free(m->want);
	free(m->rec);
	m->snap = NULL;
	m->want = NULL;
	m->rec = NULL;
	m->nwant = 0;
	m->batched = false;
}

/*
 * out_batch() - steps 2 and 3 for the ids ord[lo, hi) (their events at most
 * MEM_EVENTS_MAX together, or one id alone that has more: summary only),
 * and their entries.
 */
static int out_batch(struct mprof *mp, struct xs_out *o, const size_t *ord, size_t lo, size_t hi)
{
	struct plan *pl = NULL;
	int r = 0;

	if (hi - lo == 1 && mp->ids[ord[lo]].n > MEM_EVENTS_MAX) {
		const struct mid *m = &mp->ids[ord[lo]];

		add_error(mp,
			  "memory id \"%s\": %" PRIu64 " events, more than the %zu kept: only its "
			  "profile_summary is given",
			  m->name, m->n, MEM_EVENTS_MAX);
		return out_id(o, m, NULL, lo == 0);
	}
	if (!(pl = calloc(hi - lo, sizeof(*pl))))
		return -ENOMEM;
	for (size_t i = lo; i < hi; i++) {
		struct mid *m = &mp->ids[ord[i]];

		if (!(m->rec = malloc((m->n + 1) * sizeof(*m->rec)))) {
			r = -ENOMEM;
			goto out;
		}
		m->batched = true;
	}
	if ((r = walk(mp, 2)) < 0)
		goto out;
	for (size_t i = lo; i < hi; i++) {
		struct mid *m = &mp->ids[ord[i]];

		if (mp->seen[ord[i]] != m->n) { /* the file changed under us: same reader, cannot */
			r = -EIO;
			goto out;
		}
		if ((r = plan_id(m, &pl[i - lo])) < 0)
			goto out;
	}
	if ((r = walk(mp, 3)) < 0)
		goto out;
	for (size_t i = lo; i < hi && r == 0; i++)
		r = out_id(o, &mp->ids[ord[i]], &pl[i - lo], i == 0);
out:
	for (size_t i = lo; i < hi; i++) {
		mid_drop_detail(&mp->ids[ord[i]]);
		if (pl)
			free(pl[i - lo].active);
	}
	free(pl);
	return r;
}

static int id_cmp(const void *a, const void *b, void *arg)
{
	const struct mid *ids = arg;
	const struct mid *x = &ids[*(const size_t *)a], *y = &ids[*(const size_t *)b];
	int c = memcmp(x->name, y->name, x->len < y->len ? x->len : y->len);

	return c ? c : x->len < y->len ? -1 : x->len > y->len;
}

/* GenerateHloModules(): the "XLA Modules" events of the TPU planes. */
struct hlo_mods {
	struct xs_out *o;
	const struct xs_plane *p;
	int64_t id;
};

static int hlo_module_event(struct xs_rctx *rc, const struct xs_event *e, struct xs_evmd *m,
			    void *arg)
{
	struct hlo_mods *h = arg;
	struct xs_out *o = h->o;

	(void)rc;
	OUT_RAW(o, h->id ? ",\n{\"name\":" : "\n{\"name\":");
	xs_out_add(o, m->full_json, m->full_json_len);
	xs_out_key_i64(o, ",\"start_time_ps\":", e->offset_ps);
	xs_out_key_i64(o, ",\"end_time_ps\":", wadd(e->offset_ps, e->duration_ps));
	xs_out_key_i64(o, ",\"id\":", h->id++);
	OUT_LIT(o, ",\"plane_name\":");
	xs_out_str(o, h->p->name + 8, h->p->name_len - 8); /* StripPrefix("/device:") */
	OUT_LIT(o, "}");
	return xs_out_flush(o, false);
}

static int out_hlo_modules(struct xs_rctx *rc, struct xs_out *o)
{
	const struct xprofs_xspace *x = rc->x;
	struct hlo_mods h = {o, NULL, 0};
	int r;

	OUT_LIT(o, ",\"hlo_modules\":[");
	for (size_t pi = 0; pi < x->n_planes; pi++) {
		const struct xs_plane *p = &x->planes[pi];

		if (strncmp(p->name, "/device:TPU:", 12))
			continue;
		h.p = p;
		for (size_t li = p->first_line; li < p->first_line + p->n_lines; li++)
			if (xs_str_eq(x->lines[li].name, x->lines[li].name_len, "XLA Modules") &&
			    (r = xs_line_each(rc, li, NULL, hlo_module_event, &h)) < 0)
				return r;
	}
	OUT_LIT(o, "]");
	return o->r;
}

static void out_errors(struct xs_out *o, const struct mprof *mp)
{
	OUT_LIT(o, ",\"errors\":[");
	for (size_t i = 0; i < mp->nerrors; i++) {
		OUT_RAW(o, i ? "," : "");
		xs_out_cstr(o, mp->errors[i]);
	}
	OUT_LIT(o, "]}\n");
}

int stats_view_memory_profile(struct xs_rctx *rc, struct xs_out *o)
{
	struct xprofs_xspace *x = rc->x;
	struct mprof *mp;
	size_t *ord = NULL, host = SIZE_MAX;
	int r = 0;

	for (size_t pi = 0; pi < x->n_planes && host == SIZE_MAX; pi++)
		if (xs_str_eq(x->planes[pi].name, x->planes[pi].name_len, "/host:CPU"))
			host = pi; /* FindPlaneWithName(kHostThreadsPlaneName): the first */
	if (!(mp = calloc(1, sizeof(*mp))))
		return -ENOMEM;
	mp->rc = rc;
	if (host == SIZE_MAX) {
		OUT_LIT(o, "{\"num_hosts\":0,\"memory_ids\":[],\"version\":1,"
			   "\"memory_profile_per_allocator\":{},\"hlo_modules\":[]");
		goto done;
	}
	mp->plane = host;
	if ((r = xs_plane_enter(rc, host)) < 0)
		goto out;
	if (!(mp->skind = calloc(x->planes[host].st.n + 1, 1)) ||
	    !(mp->mem_line = calloc(x->planes[host].n_lines + 1, 1)) ||
	    !(mp->seen = calloc(MEM_IDS_MAX + 1, sizeof(*mp->seen)))) {
		r = -ENOMEM;
		goto out;
	}
	if ((r = walk(mp, 1)) < 0)
		goto out;
	if (mp->ids_full)
		add_error(mp, "more than %zu memory ids: the events of the others are left out",
			  MEM_IDS_MAX);
	if (!(ord = malloc((mp->nids + 1) * sizeof(*ord)))) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < mp->nids; i++)
		ord[i] = i;
	qsort_r(ord, mp->nids, sizeof(*ord), id_cmp, mp->ids);
	OUT_LIT(o, "{\"num_hosts\":1,\"memory_ids\":[");
	for (size_t i = 0; i < mp->nids; i++) {
		OUT_RAW(o, i ? "," : "");
		xs_out_str(o, mp->ids[ord[i]].name, mp->ids[ord[i]].len);
	}
	OUT_LIT(o, "],\"version\":1,\"memory_profile_per_allocator\":{");
	for (size_t lo = 0, hi; lo < mp->nids && r == 0; lo = hi) {
		uint64_t sum = mp->ids[ord[lo]].n;

		hi = lo + 1;
		while (hi < mp->nids && sum <= MEM_EVENTS_MAX &&
		       sum + mp->ids[ord[hi]].n <= MEM_EVENTS_MAX)
			sum += mp->ids[ord[hi++]].n;
		r = out_batch(mp, o, ord, lo, hi);
	}
	if (r < 0)
		goto out;
	OUT_LIT(o, "\n}");
	if ((r = out_hlo_modules(rc, o)) < 0)
		goto out;
done:
	out_errors(o, mp);
	r = xs_out_flush(o, false);
out:
	for (size_t i = 0; i < mp->nids; i++) {
		mid_drop_detail(&mp->ids[i]);
		free(mp->ids[i].name);
	}
	for (size_t i = 0; i < mp->nerrors; i++)
		free(mp->errors[i]);
	free(mp->ids);
	free(mp->skind);
	free(mp->mem_line);
	free(mp->seen);
	free(mp);
	free(ord);
	return r;
}
