/*
 * buffers.c - decoding a program's buffer assignment (HloProto field 3,
 * BufferAssignmentProto: LogicalBufferProto, BufferAllocationProto with its
 * Assigned entries, HeapSimulatorTrace with its Events; field numbers as in
 * hlo/proto/hlo.proto, openxla/xla's) into flat arrays, ids resolved.
 *
 * Design: one wire cursor over the HloProto's range; every top-level field 3
 * is walked (a message field seen twice merges: its repeated fields append).
 * Each message is read by one walker (rd_msg()) from a table of its fields
 * (number, kind, offset in the entry). A logical buffer's shape index, an
 * allocation's assigned entries and a trace's events are appended while
 * their message is read, so each one's entries are contiguous and its first
 * is found by counting. Event instruction names are interned into an
 * arena (an instruction's name comes back for its ALLOC and its FREE).
 * When the walk ends, logical buffer ids are sorted once and every assigned
 * entry's and event's id is looked up: the last logical buffer of an id
 * wins (XProf fills absl maps by assignment), an id of none gives -1.
 *
 * Limits (include/xprofs/hlo.h): XPROFS_HLO_PROTO_MAX bytes in,
 * XPROFS_HLO_BUFFERS_MAX entries of each kind, XPROFS_HLO_HEAP_EVENTS_MAX
 * events, XPROFS_HLO_MEM_MAX bytes of arrays and XPROFS_HLO_ARENA_MAX of
 * names (each cut at XPROFS_HLO_STR_MAX): -E2BIG past any, with the reason.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "hlo-internal.h"

struct name_ix {
	uint32_t off, len;
};

/* The arrays, one per kind of entry; each parent's children are contiguous, in proto order. */
enum {
	V_LB,
	V_AL,
	V_AS,
	V_TR,
	V_EV,
	V_SI,
	V_NAMES,
	V_COUNT
}; /* V_SI: shape indices; V_NAMES: names */

struct vec {
	void *p;
	size_t n, cap;
};

struct xprofs_hlo_buffers {
	size_t mem;
	struct vec v[V_COUNT];
	size_t dangling_as, dangling_ev;
	struct xprofs_buf arena; /* interned event names, each NUL-terminated; offset 0 is "" */
	struct xprofs_table *name_tab;
};

#define LB(b) ((struct xprofs_hlo_logical_buffer *)(b)->v[V_LB].p)
#define AL(b) ((struct xprofs_hlo_allocation *)(b)->v[V_AL].p)
#define AS(b) ((struct xprofs_hlo_assigned *)(b)->v[V_AS].p)
#define TR(b) ((struct xprofs_hlo_heap_trace *)(b)->v[V_TR].p)
#define EV(b) ((struct xprofs_hlo_heap_event *)(b)->v[V_EV].p)
#define SI(b) ((int64_t *)(b)->v[V_SI].p)
#define NAMES(b) ((struct name_ix *)(b)->v[V_NAMES].p)

struct bdec {
	struct xprofs_hlo_buffers *b;
	struct wire_cur c;
};

static int grow(struct bdec *d, void *arrayp, size_t *cap, size_t n, size_t size, size_t max)
{
	if (n >= max) {
		wire_fail(&d->c, "buffer assignment with more than %zu entries of a kind", max);
		return -E2BIG;
	}
	return hlo_grow(&d->b->mem, arrayp, cap, n, size, 64);
}

/* How a field of a message is read (struct fd). */
enum fk {
	FK_I64,   /* an int64 (or an enum: size 4) at the offset */
	FK_BOOL,  /* a bool */
	FK_NAME,  /* a string, interned: its arena offset (uint32_t) */
	FK_INDEX, /* LogicalBufferProto.Location.shape_index, packed or not */
	FK_MSG,   /* a message into the same entry (msg) */
	FK_ENTRY, /* a message that is a new entry of array vk, a child of this one */
};

struct msg;

/* One field of a message: its number, how it is read, where it goes in the entry. */
struct fd {
	uint32_t field;
	enum fk kind;
	size_t off, size;
	int vk;
	const struct msg *msg;
};

struct msg {
	const char *name;
	const struct fd *f;
	size_t n;
};

#define I64(n, type, member)                                                                       \
	{                                                                                          \
		.field = n, .kind = FK_I64, .off = offsetof(type, member),                         \
		.size = sizeof(((type *)0)->member)                                                \
	}
#define FLAG(n, type, member)                                                                      \
	{                                                                                          \
		.field = n, .kind = FK_BOOL, .off = offsetof(type, member)                         \
	}
#define ENTRY(n, k)                                                                                \
	{                                                                                          \
		.field = n, .kind = FK_ENTRY, .vk = k                                              \
	}
#define MSG(name, fields)                                                                          \
	{                                                                                          \
		name, fields, sizeof(fields) / sizeof(fields[0])                                   \
	}

#define LBT struct xprofs_hlo_logical_buffer
static const struct fd loc_f[] = {I64(4, LBT, instruction_id), {.field = 3, .kind = FK_INDEX}};
static const struct msg loc_m = MSG("Location", loc_f);
static const struct fd lb_f[] = {I64(1, LBT, id),
				 I64(2, LBT, size),
				 I64(4, LBT, color),
				 {.field = 3, .kind = FK_MSG, .msg = &loc_m}};
#undef LBT
#define AST struct xprofs_hlo_assigned
static const struct fd as_f[] = {I64(1, AST, logical_buffer_id), I64(2, AST, offset),
				 I64(3, AST, size)};
#undef AST
#define ALT struct xprofs_hlo_allocation
static const struct fd al_f[] = {
	I64(1, ALT, index),
	I64(2, ALT, size),
	FLAG(3, ALT, is_thread_local),
	FLAG(5, ALT, is_entry_computation_parameter),
	I64(6, ALT, parameter_number),
	FLAG(7, ALT, maybe_live_out),
	I64(8, ALT, color),
	ENTRY(9, V_AS),
	FLAG(11, ALT, is_tuple),
	FLAG(12, ALT, is_constant),
};
#undef ALT
#define EVT struct xprofs_hlo_heap_event
static const struct fd ev_f[] = {
	I64(1, EVT, kind),
	I64(2, EVT, buffer_id),
	{.field = 4, .kind = FK_NAME, .off = offsetof(EVT, name)},
	I64(5, EVT, share_with_canonical_id),
};
#undef EVT
#define TRT struct xprofs_hlo_heap_trace
static const struct fd tr_f[] = {ENTRY(1, V_EV), FLAG(2, TRT, whole_module_simulation),
				 I64(3, TRT, buffer_allocation_index)};
#undef TRT
/* BufferAssignmentProto; buffer_aliases (2) skipped: XProf does not read them */
static const struct fd ba_f[] = {ENTRY(1, V_LB), ENTRY(3, V_AL), ENTRY(4, V_TR)};
static const struct msg ba_m = MSG("BufferAssignmentProto", ba_f);

/* Each kind of entry: its size, how many at most, its message, its parent's count of it. */
static const struct kind {
	size_t size, max;
	struct msg m;
	size_t count_off; /* in the parent; SIZE_MAX: no parent */
} kinds[V_COUNT] = {
	[V_LB] = {sizeof(struct xprofs_hlo_logical_buffer), XPROFS_HLO_BUFFERS_MAX,
		  MSG("LogicalBufferProto", lb_f), SIZE_MAX},
	[V_AL] = {sizeof(struct xprofs_hlo_allocation), XPROFS_HLO_BUFFERS_MAX,
		  MSG("BufferAllocationProto", al_f), SIZE_MAX},
	[V_AS] = {sizeof(struct xprofs_hlo_assigned), XPROFS_HLO_BUFFERS_MAX, MSG("Assigned", as_f),
		  offsetof(struct xprofs_hlo_allocation, n_assigned)},
	[V_TR] = {sizeof(struct xprofs_hlo_heap_trace), XPROFS_HLO_BUFFERS_MAX,
		  MSG("HeapSimulatorTrace", tr_f), SIZE_MAX},
	[V_EV] = {sizeof(struct xprofs_hlo_heap_event), XPROFS_HLO_HEAP_EVENTS_MAX,
		  MSG("Event", ev_f), offsetof(struct xprofs_hlo_heap_trace, n_events)},
};

/* The fields of the message at the cursor, while they go on and r is 0. */
#define FIELDS(d, r, f, wt)                                                                        \
	while ((r) == 0 && (d)->c.pos < (d)->c.end && ((r) = wire_tag(&(d)->c, &(f), &(wt))) == 0)

static int rd_msg(struct bdec *d, const struct msg *m, void *entry);

/* One shape index entry (a varint at the cursor) of logical buffer @lb. */
static int rd_index(struct bdec *d, struct xprofs_hlo_logical_buffer *lb)
{
	struct vec *v = &d->b->v[V_SI];
	uint64_t x;
	int r;

	if ((r = wire_varint(&d->c, &x)) < 0 ||
	    (r = grow(d, &v->p, &v->cap, v->n, sizeof(int64_t), XPROFS_HLO_BUFFERS_MAX)) < 0)
		return r;
	((int64_t *)v->p)[v->n++] = (int64_t)x;
	lb->n_shape_index++;
	return 0;
}

/* A new zeroed entry of kind @k, child of @parent, read from the message at the cursor. */
static int rd_entry(struct bdec *d, int k, void *parent)
{
	const struct kind *kd = &kinds[k];
	struct vec *v = &d->b->v[k];
	char *e;
	int r = grow(d, &v->p, &v->cap, v->n, kd->size, kd->max);

	if (r < 0)
		return r;
	e = (char *)v->p + v->n++ * kd->size;
	memset(e, 0, kd->size);
	if (kd->count_off != SIZE_MAX)
		++*(size_t *)(void *)((char *)parent + kd->count_off);
	return rd_msg(d, &kd->m, e);
}

/*
 * sub() - field @x's value (a message or a packed list, the tag read: wire
 * type @wt) with the cursor narrowed to it; past it afterwards.
 */
static int sub(struct bdec *d, int wt, const char *msg, const struct fd *x, void *entry)
{
	uint64_t len, outer = d->c.end;
	int r;

	if ((r = wire_len_field(&d->c, wt, msg, x->field, &len)) < 0)
		return r;
	d->c.end = d->c.pos + len;
	if (x->kind == FK_ENTRY)
		r = rd_entry(d, x->vk, entry);
	else if (x->kind == FK_MSG)
		r = rd_msg(d, x->msg, entry);
	else
		while (r == 0 && d->c.pos < d->c.end) /* packed shape index */
			r = rd_index(d, entry);
	d->c.pos = d->c.end;
	d->c.end = outer;
	return r;
}

static bool name_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct xprofs_hlo_buffers *b = ctx;
	const struct name_ix *k = key;

	return NAMES(b)[idx].len == k->len &&
	       !memcmp(b->arena.data + NAMES(b)[idx].off, b->arena.data + k->off, k->len);
}

/* An event's instruction_name: interned; its arena offset in *@name. */
static int rd_name(struct bdec *d, int wt, uint32_t f, uint32_t *name)
{
	struct xprofs_hlo_buffers *b = d->b;
	struct name_ix key;
	const uint8_t *s;
	uint64_t len, h;
	uint32_t at;
	size_t n;
	int r;

	if ((r = wire_len_field(&d->c, wt, "Event", f, &len)) < 0)
		return r;
	n = len > XPROFS_HLO_STR_MAX ? XPROFS_HLO_STR_MAX : (size_t)len;
	if ((r = wire_at(&d->c, d->c.pos, n, &s)) < 0)
		return r;
	/* the candidate goes at the arena's end; kept only when it is new */
	key.off = (uint32_t)b->arena.len;
	key.len = (uint32_t)n;
	if (xprofs_buf_add(&b->arena, s, n) < 0 || xprofs_buf_add(&b->arena, "", 1) < 0) {
		wire_fail(&d->c, "event names past %zu MiB", XPROFS_HLO_ARENA_MAX >> 20);
		return -E2BIG;
	}
	h = xprofs_table_hash(0, s, n);
	if (xprofs_table_find(b->name_tab, h, name_eq, b, &key, &at) == 0) {
		xprofs_buf_truncate(&b->arena, key.off);
		*name = NAMES(b)[at].off;
	} else {
		struct vec *v = &b->v[V_NAMES];

		if ((r = grow(d, &v->p, &v->cap, v->n, sizeof(key), XPROFS_HLO_BUFFERS_MAX)) < 0 ||
		    (r = xprofs_table_add(b->name_tab, h, (uint32_t)v->n)) < 0)
			return r == -ENOSPC ? -E2BIG : r;
		NAMES(b)[v->n++] = key;
		*name = key.off;
	}
	d->c.pos += len;
	return 0;
}

/* Field @x (tag read: wire type @wt) of message @m into @entry. */
static int rd_field(struct bdec *d, const struct msg *m, const struct fd *x, int wt, void *entry)
{
	/* no entry: a message read for its sub-messages only (no offset on NULL) */
	char *at = entry ? (char *)entry + x->off : NULL;
	int64_t v;
	uint64_t u;
	int r;

	switch (x->kind) {
	case FK_I64:
		if ((r = wire_i64_field(&d->c, wt, m->name, x->field, &v)) == 0 && x->size == 4)
			*(int32_t *)(void *)at = (int32_t)v; /* an enum is an int32 */
		else if (r == 0)
			*(int64_t *)(void *)at = v;
		return r;
	case FK_BOOL:
		if ((r = wire_varint_field(&d->c, wt, m->name, x->field, &u)) == 0)
			*(bool *)at = u != 0;
		return r;
	case FK_NAME:
		return rd_name(d, wt, x->field, (uint32_t *)(void *)at);
	case FK_INDEX:
		if (wt == WT_VARINT) /* one entry, not packed */
			return rd_index(d, entry);
		return sub(d, wt, m->name, x, entry);
	default:
		return sub(d, wt, m->name, x, entry);
	}
}

/* Message @m at the cursor into @entry: its known fields, the others skipped. */
static int rd_msg(struct bdec *d, const struct msg *m, void *entry)
{
	uint32_t f;
	int wt, r = 0;

	FIELDS(d, r, f, wt)
	{
		size_t i = 0;

		while (i < m->n && m->f[i].field != f)
			i++;
		r = i < m->n ? rd_field(d, m, &m->f[i], wt, entry) : wire_skip(&d->c, wt);
	}
	return r;
}

/* The index of the last logical buffer of @id in @ids (sorted by id, then index), or -1. */
static int32_t find_last(const struct hlo_id_ix *ids, size_t n, int64_t id)
{
	size_t lo = 0, hi = n;

	while (lo < hi) { /* the first entry past @id */
		size_t mid = lo + (hi - lo) / 2;

		if (ids[mid].id <= id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && ids[lo - 1].id == id ? (int32_t)ids[lo - 1].i : -1;
}

/* Each parent's first child (children are contiguous, in order), and the ids resolved. */
static int resolve(struct xprofs_hlo_buffers *b)
{
	size_t n = b->v[V_LB].n, si = 0, as = 0, ev = 0;
	struct hlo_id_ix *ids = NULL;

	if (n && !(ids = malloc(n * sizeof(*ids))))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct xprofs_hlo_logical_buffer *lb = &LB(b)[i];

		ids[i].id = lb->id;
		ids[i].i = (uint32_t)i;
		lb->shape_index = lb->n_shape_index ? SI(b) + si : NULL;
		si += lb->n_shape_index;
	}
	for (size_t i = 0; i < b->v[V_AL].n; as += AL(b)[i++].n_assigned)
		AL(b)[i].first_assigned = as;
	for (size_t i = 0; i < b->v[V_TR].n; ev += TR(b)[i++].n_events)
		TR(b)[i].first_event = ev;
	if (n)
		qsort(ids, n, sizeof(*ids), hlo_id_ix_cmp);
	for (size_t i = 0; i < b->v[V_AS].n; i++) {
		AS(b)[i].buffer = find_last(ids, n, AS(b)[i].logical_buffer_id);
		b->dangling_as += AS(b)[i].buffer < 0;
	}
	for (size_t i = 0; i < b->v[V_EV].n; i++) {
		struct xprofs_hlo_heap_event *e = &EV(b)[i];
		bool share = e->kind == XPROFS_HLO_HEAP_SHARE_WITH;

		e->buffer = find_last(ids, n, e->buffer_id);
		e->canonical = share ? find_last(ids, n, e->share_with_canonical_id) : -1;
		b->dangling_ev += e->buffer < 0 || (share && e->canonical < 0);
	}
	free(ids);
	return 0;
}

/* Walk the HloProto at the cursor: 0 with a buffer assignment, -ENOENT without. */
static int rd_proto(struct bdec *d)
{
	static const struct fd ba = {.field = 3, .kind = FK_MSG, .msg = &ba_m};
	bool seen = false;
	uint32_t f;
	int wt, r = 0;

	FIELDS(d, r, f, wt)
	{
		if (f == 3) {
			seen = true;
			r = sub(d, wt, "HloProto", &ba, NULL);
		} else {
			r = wire_skip(&d->c, wt);
		}
	}
	return r == 0 && !seen ? -ENOENT : r;
}

int xprofs_hlo_buffers_decode(const struct xprofs_reader *r, uint64_t off, uint64_t len,
			      struct xprofs_buf *err, struct xprofs_hlo_buffers **out)
{
	struct xprofs_hlo_buffers *b;
	struct bdec d;
	int ret;

	*out = NULL;
	if ((ret = hlo_span_check(r, off, len, err)) < 0)
		return ret;
	if (!(b = calloc(1, sizeof(*b))))
		return -ENOMEM;
	xprofs_buf_init(&b->arena, XPROFS_HLO_ARENA_MAX);
	if (xprofs_buf_add(&b->arena, "", 1) < 0 ||
	    xprofs_table_new(XPROFS_HLO_BUFFERS_MAX, &b->name_tab) < 0) {
		xprofs_hlo_buffers_free(b);
		return -ENOMEM;
	}
	d.b = b;
	wire_cur_init(&d.c, r, err);
	d.c.pos = off;
	d.c.end = off + len;
	ret = len > XPROFS_HLO_PROTO_MAX ? -E2BIG : rd_proto(&d);
	if (ret == -E2BIG)
		wire_fail(&d.c,
			  "HloProto of %" PRIu64 " bytes or its buffer assignment past the "
			  "limits (%" PRIu64 " bytes in, %zu MiB decoded)",
			  len, XPROFS_HLO_PROTO_MAX, XPROFS_HLO_MEM_MAX >> 20);
	wire_cur_deinit(&d.c);
	if (ret == 0)
		ret = resolve(b);
	xprofs_table_free(b->name_tab);
	b->name_tab = NULL;
	if (ret < 0) {
		xprofs_hlo_buffers_free(b);
		return ret;
	}
	*out = b;
	return 0;
}

int xprofs_hlo_buffers_load(const struct xprofs_hlo_index *idx, size_t i, struct xprofs_buf *err,
			    struct xprofs_hlo_buffers **out)
{
	struct xprofs_hlo_program_info info;
	int r;

	*out = NULL;
	if ((r = xprofs_hlo_index_get(idx, i, &info)) < 0)
		return r;
	return xprofs_hlo_buffers_decode(info.r, info.off, info.len, err, out);
}

void xprofs_hlo_buffers_free(struct xprofs_hlo_buffers *b)
{
	if (!b)
		return;
	for (int k = 0; k < V_COUNT; k++)
		free(b->v[k].p);
	xprofs_table_free(b->name_tab);
	xprofs_buf_deinit(&b->arena);
	free(b);
}

void xprofs_hlo_buffers_get(const struct xprofs_hlo_buffers *b,
			    struct xprofs_hlo_buffer_assignment *out)
{
	*out = (struct xprofs_hlo_buffer_assignment){
		.logical = LB(b),
		.n_logical = b->v[V_LB].n,
		.allocations = AL(b),
		.n_allocations = b->v[V_AL].n,
		.assigned = AS(b),
		.n_assigned = b->v[V_AS].n,
		.traces = TR(b),
		.n_traces = b->v[V_TR].n,
		.events = EV(b),
		.n_events = b->v[V_EV].n,
		.dangling_assigned = b->dangling_as,
		.dangling_events = b->dangling_ev,
		.bytes = sizeof(*b) + b->mem + b->arena.cap,
	};
}

const char *xprofs_hlo_buffers_str(const struct xprofs_hlo_buffers *b, uint32_t name)
{
	return name < b->arena.len ? b->arena.data + name : "";
}
