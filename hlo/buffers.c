/*
 * buffers.c - decoding a program's buffer assignment (HloProto field 3,
 * BufferAssignmentProto: LogicalBufferProto, BufferAllocationProto with its
 * Assigned entries, HeapSimulatorTrace with its Events; field numbers as in
 * hlo/proto/hlo.proto, openxla/xla's) into flat arrays, ids resolved.
 *
 * Design: one wire cursor over the HloProto's range; every top-level field 3
 * is walked (a message field seen twice merges: its repeated fields append).
 * A logical buffer's shape index, an allocation's assigned entries and a
 * trace's events are appended while their message is read, so each one's
 * entries are contiguous. Event instruction names are interned into an
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
#include <stdlib.h>
#include <string.h>

#include "hlo-internal.h"

struct name_ix {
	uint32_t off, len;
};

struct xprofs_hlo_buffers {
	size_t mem;
	struct xprofs_hlo_logical_buffer *lb;
	size_t n_lb, cap_lb;
	size_t *lb_si; /* each logical buffer's first shape index entry (pointers made at the end) */
	size_t cap_lb_si;
	int64_t *si;
	size_t n_si, cap_si;
	struct xprofs_hlo_allocation *al;
	size_t n_al, cap_al;
	struct xprofs_hlo_assigned *as;
	size_t n_as, cap_as;
	struct xprofs_hlo_heap_trace *tr;
	size_t n_tr, cap_tr;
	struct xprofs_hlo_heap_event *ev;
	size_t n_ev, cap_ev;
	size_t dangling_as, dangling_ev;
	struct xprofs_buf arena; /* interned event names, each NUL-terminated; offset 0 is "" */
	struct name_ix *names;
	size_t n_names, cap_names;
	struct xprofs_table *name_tab;
};

struct bdec {
	struct xprofs_hlo_buffers *b;
	struct wire_cur c;
};

static int grow(struct bdec *d, void *arrayp, size_t *cap, size_t n, size_t size, size_t max)
{
	if (n >= max)
		return wire_fail(&d->c, "buffer assignment with more than %zu entries of a kind",
				 max);
	return hlo_grow(&d->b->mem, arrayp, cap, n, size, 64);
}

/* Narrow the cursor to a message field's value; the old end in *@save. */
static int enter(struct bdec *d, int wt, const char *msg, uint32_t f, uint64_t *save)
{
	uint64_t len;
	int r = wire_len_field(&d->c, wt, msg, f, &len);

	if (r < 0)
		return r;
	*save = d->c.end;
	d->c.end = d->c.pos + len;
	return 0;
}

static void leave(struct bdec *d, uint64_t save)
{
	d->c.pos = d->c.end;
	d->c.end = save;
}

static bool next(struct bdec *d, int *r, uint32_t *f, int *wt)
{
	if (*r != 0 || d->c.pos >= d->c.end)
		return false;
	*r = wire_tag(&d->c, f, wt);
	return *r == 0;
}

static int rd_bool(struct bdec *d, int wt, const char *msg, uint32_t f, bool *v)
{
	uint64_t x;
	int r = wire_varint_field(&d->c, wt, msg, f, &x);

	if (r == 0)
		*v = x != 0;
	return r;
}

/* LogicalBufferProto.Location: instruction_id, shape_index (packed or not). */
static int rd_location(struct bdec *d, struct xprofs_hlo_logical_buffer *lb)
{
	struct xprofs_hlo_buffers *b = d->b;
	uint64_t save, x;
	uint32_t f;
	int wt, r = 0;

	while (next(d, &r, &f, &wt)) {
		if (f == 4) {
			r = wire_i64_field(&d->c, wt, "Location", f, &lb->instruction_id);
		} else if (f == 3 && (wt == WT_VARINT || wt == WT_LEN)) {
			bool packed = wt == WT_LEN;

			if (packed && (r = enter(d, wt, "Location", f, &save)) < 0)
				break;
			do {
				if ((r = wire_varint(&d->c, &x)) < 0 ||
				    (r = grow(d, &b->si, &b->cap_si, b->n_si, sizeof(*b->si),
					      XPROFS_HLO_BUFFERS_MAX)) < 0)
					break;
				b->si[b->n_si++] = (int64_t)x;
				lb->n_shape_index++;
			} while (packed && d->c.pos < d->c.end);
			if (packed)
				leave(d, save);
		} else {
			r = wire_skip(&d->c, wt);
		}
	}
	return r;
}

static int rd_logical(struct bdec *d)
{
	struct xprofs_hlo_buffers *b = d->b;
	struct xprofs_hlo_logical_buffer *lb;
	uint64_t save;
	uint32_t f;
	int wt, r;

	if ((r = grow(d, &b->lb, &b->cap_lb, b->n_lb, sizeof(*b->lb), XPROFS_HLO_BUFFERS_MAX)) <
		    0 ||
	    (r = hlo_grow(&b->mem, &b->lb_si, &b->cap_lb_si, b->n_lb, sizeof(*b->lb_si), 64)) < 0)
		return r;
	lb = &b->lb[b->n_lb];
	memset(lb, 0, sizeof(*lb));
	b->lb_si[b->n_lb++] = b->n_si;
	while (next(d, &r, &f, &wt)) {
		if (f == 1)
			r = wire_i64_field(&d->c, wt, "LogicalBufferProto", f, &lb->id);
		else if (f == 2)
			r = wire_i64_field(&d->c, wt, "LogicalBufferProto", f, &lb->size);
		else if (f == 4)
			r = wire_i64_field(&d->c, wt, "LogicalBufferProto", f, &lb->color);
		else if (f == 3) {
			if ((r = enter(d, wt, "LogicalBufferProto", f, &save)) < 0)
				break;
			r = rd_location(d, lb);
			leave(d, save);
		} else
			r = wire_skip(&d->c, wt);
	}
	return r;
}

static int rd_assigned(struct bdec *d, struct xprofs_hlo_allocation *al)
{
	struct xprofs_hlo_buffers *b = d->b;
	struct xprofs_hlo_assigned *as;
	uint32_t f;
	int wt, r;

	if ((r = grow(d, &b->as, &b->cap_as, b->n_as, sizeof(*b->as), XPROFS_HLO_BUFFERS_MAX)) < 0)
		return r;
	as = &b->as[b->n_as++];
	memset(as, 0, sizeof(*as));
	al->n_assigned++;
	while (next(d, &r, &f, &wt)) {
		int64_t *slot[] = {NULL, &as->logical_buffer_id, &as->offset, &as->size};

		if (f >= 1 && f <= 3)
			r = wire_i64_field(&d->c, wt, "Assigned", f, slot[f]);
		else
			r = wire_skip(&d->c, wt);
	}
	return r;
}

static int rd_allocation(struct bdec *d)
{
	static const char msg[] = "BufferAllocationProto";
	struct xprofs_hlo_buffers *b = d->b;
	struct xprofs_hlo_allocation *al;
	uint64_t save;
	uint32_t f;
	int wt, r;

	if ((r = grow(d, &b->al, &b->cap_al, b->n_al, sizeof(*b->al), XPROFS_HLO_BUFFERS_MAX)) < 0)
		return r;
	al = &b->al[b->n_al++];
	memset(al, 0, sizeof(*al));
	al->first_assigned = b->n_as;
	while (next(d, &r, &f, &wt)) {
		switch (f) {
		case 1:
			r = wire_i64_field(&d->c, wt, msg, f, &al->index);
			break;
		case 2:
			r = wire_i64_field(&d->c, wt, msg, f, &al->size);
			break;
		case 3:
			r = rd_bool(d, wt, msg, f, &al->is_thread_local);
			break;
		case 5:
			r = rd_bool(d, wt, msg, f, &al->is_entry_computation_parameter);
			break;
		case 6:
			r = wire_i64_field(&d->c, wt, msg, f, &al->parameter_number);
			break;
		case 7:
			r = rd_bool(d, wt, msg, f, &al->maybe_live_out);
			break;
		case 8:
			r = wire_i64_field(&d->c, wt, msg, f, &al->color);
			break;
		case 11:
			r = rd_bool(d, wt, msg, f, &al->is_tuple);
			break;
		case 12:
			r = rd_bool(d, wt, msg, f, &al->is_constant);
			break;
		case 9:
			if ((r = enter(d, wt, msg, f, &save)) < 0)
				break;
			r = rd_assigned(d, al);
			leave(d, save);
			break;
		default:
			r = wire_skip(&d->c, wt);
		}
	}
	return r;
}

static bool name_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct xprofs_hlo_buffers *b = ctx;
	const struct name_ix *k = key;

	return b->names[idx].len == k->len &&
	       !memcmp(b->arena.data + b->names[idx].off, b->arena.data + k->off, k->len);
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
	if (xprofs_buf_add(&b->arena, s, n) < 0 || xprofs_buf_add(&b->arena, "", 1) < 0)
		return wire_fail(&d->c, "event names past %zu MiB", XPROFS_HLO_ARENA_MAX >> 20);
	h = xprofs_table_hash(0, s, n);
	if (xprofs_table_find(b->name_tab, h, name_eq, b, &key, &at) == 0) {
		xprofs_buf_truncate(&b->arena, key.off);
		*name = b->names[at].off;
	} else {
		if ((r = grow(d, &b->names, &b->cap_names, b->n_names, sizeof(*b->names),
			      XPROFS_HLO_BUFFERS_MAX)) < 0 ||
		    (r = xprofs_table_add(b->name_tab, h, (uint32_t)b->n_names)) < 0)
			return r == -ENOSPC ? -E2BIG : r;
		b->names[b->n_names++] = key;
		*name = key.off;
	}
	d->c.pos += len;
	return 0;
}

static int rd_event(struct bdec *d, struct xprofs_hlo_heap_trace *tr)
{
	struct xprofs_hlo_buffers *b = d->b;
	struct xprofs_hlo_heap_event *ev;
	int64_t kind;
	uint32_t f;
	int wt, r;

	if ((r = grow(d, &b->ev, &b->cap_ev, b->n_ev, sizeof(*b->ev), XPROFS_HLO_HEAP_EVENTS_MAX)) <
	    0)
		return r;
	ev = &b->ev[b->n_ev++];
	memset(ev, 0, sizeof(*ev));
	tr->n_events++;
	while (next(d, &r, &f, &wt)) {
		if (f == 1) {
			if ((r = wire_i64_field(&d->c, wt, "Event", f, &kind)) == 0)
				ev->kind = (int32_t)kind; /* an enum is an int32 */
		} else if (f == 2)
			r = wire_i64_field(&d->c, wt, "Event", f, &ev->buffer_id);
		else if (f == 5)
			r = wire_i64_field(&d->c, wt, "Event", f, &ev->share_with_canonical_id);
		else if (f == 4)
			r = rd_name(d, wt, f, &ev->name);
		else
			r = wire_skip(&d->c, wt);
	}
	return r;
}

static int rd_trace(struct bdec *d)
{
	struct xprofs_hlo_buffers *b = d->b;
	struct xprofs_hlo_heap_trace *tr;
	uint64_t save;
	uint32_t f;
	int wt, r;

	if ((r = grow(d, &b->tr, &b->cap_tr, b->n_tr, sizeof(*b->tr), XPROFS_HLO_BUFFERS_MAX)) < 0)
		return r;
	tr = &b->tr[b->n_tr++];
	memset(tr, 0, sizeof(*tr));
	tr->first_event = b->n_ev;
	while (next(d, &r, &f, &wt)) {
		if (f == 1) {
			if ((r = enter(d, wt, "HeapSimulatorTrace", f, &save)) < 0)
				break;
			r = rd_event(d, tr);
			leave(d, save);
		} else if (f == 2)
			r = rd_bool(d, wt, "HeapSimulatorTrace", f, &tr->whole_module_simulation);
		else if (f == 3)
			r = wire_i64_field(&d->c, wt, "HeapSimulatorTrace", f,
					   &tr->buffer_allocation_index);
		else
			r = wire_skip(&d->c, wt);
	}
	return r;
}

/* BufferAssignmentProto at the cursor. */
static int rd_assignment(struct bdec *d)
{
	int (*const rd[])(struct bdec *) = {NULL, rd_logical, NULL, rd_allocation, rd_trace};
	uint64_t save;
	uint32_t f;
	int wt, r = 0;

	while (next(d, &r, &f, &wt)) {
		if (f >= 5 || !rd[f]) {
			r = wire_skip(&d->c, wt); /* buffer_aliases: XProf does not read them */
			continue;
		}
		if ((r = enter(d, wt, "BufferAssignmentProto", f, &save)) < 0)
			break;
		r = rd[f](d);
		leave(d, save);
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

static int resolve(struct xprofs_hlo_buffers *b)
{
	struct hlo_id_ix *ids = NULL;

	if (b->n_lb && !(ids = malloc(b->n_lb * sizeof(*ids))))
		return -ENOMEM;
	for (size_t i = 0; i < b->n_lb; i++) {
		ids[i].id = b->lb[i].id;
		ids[i].i = (uint32_t)i;
		b->lb[i].shape_index = b->lb[i].n_shape_index ? b->si + b->lb_si[i] : NULL;
	}
	if (b->n_lb)
		qsort(ids, b->n_lb, sizeof(*ids), hlo_id_ix_cmp);
	for (size_t i = 0; i < b->n_as; i++) {
		b->as[i].buffer = find_last(ids, b->n_lb, b->as[i].logical_buffer_id);
		b->dangling_as += b->as[i].buffer < 0;
	}
	for (size_t i = 0; i < b->n_ev; i++) {
		struct xprofs_hlo_heap_event *ev = &b->ev[i];

		ev->buffer = find_last(ids, b->n_lb, ev->buffer_id);
		ev->canonical = ev->kind == XPROFS_HLO_HEAP_SHARE_WITH
					? find_last(ids, b->n_lb, ev->share_with_canonical_id)
					: -1;
		b->dangling_ev += ev->buffer < 0 ||
				  (ev->kind == XPROFS_HLO_HEAP_SHARE_WITH && ev->canonical < 0);
	}
	free(ids);
	return 0;
}

/* Walk the HloProto at the cursor: 0 with a buffer assignment, -ENOENT without. */
static int rd_proto(struct bdec *d)
{
	bool seen = false;
	uint64_t save;
	uint32_t f;
	int wt, r = 0;

	while (next(d, &r, &f, &wt)) {
		if (f != 3) {
			r = wire_skip(&d->c, wt);
			continue;
		}
		seen = true;
		if ((r = enter(d, wt, "HloProto", f, &save)) < 0)
			break;
		r = rd_assignment(d);
		leave(d, save);
	}
	if (r == 0 && !seen)
		return -ENOENT;
	return r;
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
	if (len > XPROFS_HLO_PROTO_MAX) {
		if (err && !err->len)
			(void)!xprofs_buf_printf(err,
						 "HloProto of %" PRIu64
						 " bytes is larger than the %" PRIu64 "-byte limit",
						 len, XPROFS_HLO_PROTO_MAX);
		return -E2BIG;
	}
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
	ret = rd_proto(&d);
	if (ret == -E2BIG)
		wire_fail(&d.c, "buffer assignment past %zu MiB of decoded data",
			  XPROFS_HLO_MEM_MAX >> 20);
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
	free(b->lb);
	free(b->lb_si);
	free(b->si);
	free(b->al);
	free(b->as);
	free(b->tr);
	free(b->ev);
	free(b->names);
	xprofs_table_free(b->name_tab);
	xprofs_buf_deinit(&b->arena);
	free(b);
}

void xprofs_hlo_buffers_get(const struct xprofs_hlo_buffers *b,
			    struct xprofs_hlo_buffer_assignment *out)
{
	*out = (struct xprofs_hlo_buffer_assignment){
		.logical = b->lb,
		.n_logical = b->n_lb,
		.allocations = b->al,
		.n_allocations = b->n_al,
		.assigned = b->as,
		.n_assigned = b->n_as,
		.traces = b->tr,
		.n_traces = b->n_tr,
		.events = b->ev,
		.n_events = b->n_ev,
		.dangling_assigned = b->dangling_as,
		.dangling_events = b->dangling_ev,
		.bytes = sizeof(*b) + b->mem + b->arena.cap,
	};
}

const char *xprofs_hlo_buffers_str(const struct xprofs_hlo_buffers *b, uint32_t name)
{
	return name < b->arena.len ? b->arena.data + name : "";
}
