/*
 * intern.c - the decoded program's strings and shapes, each stored once.
 *
 * Design: strings live in one arena (NUL-terminated, so accessors hand out
 * plain C strings); the repeated ones (opcodes, op names, source files...)
 * go through an open-addressing set keyed by their bytes, names do not (they
 * are unique). Shapes are interned by structure (element type, dims, tuple
 * element ids), which makes equal shapes one id and a tuple's elements
 * always earlier ids: a shape graph has no cycle by construction.
 *
 * Strings are cut at their first NUL byte, so a name is exactly the C string
 * the accessors give. Limits: the arena is capped at XPROFS_HLO_ARENA_MAX; sets and shapes are
 * charged to the program's XPROFS_HLO_MEM_MAX budget. A dim < 0 or an array
 * shape of XPROFS_HLO_ELEMENTS_MAX elements or more is malformed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "hlo-internal.h"

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	h *= 0xff51afd7ed558ccdull;
	return h ^ (h >> 33);
}

static uint64_t hash_bytes(const uint8_t *s, size_t n)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */

	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 1099511628211ull;
	return mix(h, n);
}

void hlo_set_free(struct hlo_set *set)
{
	free(set->slot);
	memset(set, 0, sizeof(*set));
}

/*
 * Make room for one more entry (grown at half full, rehashed with @hash_of);
 * charged to *@mem.
 */
static int set_room(struct hlo_set *set, size_t *mem, const struct xprofs_hlo_program *p,
		    uint64_t (*hash_of)(const struct xprofs_hlo_program *, uint32_t))
{
	size_t ncap = set->cap ? set->cap * 2 : 256;
	uint32_t *ns;

	if ((set->n + 1) * 2 <= set->cap)
		return 0;
	if (ncap * sizeof(*ns) > XPROFS_HLO_MEM_MAX - *mem)
		return -E2BIG;
	if (!(ns = calloc(ncap, sizeof(*ns))))
		return -ENOMEM;
	for (size_t i = 0; i < set->cap; i++) {
		uint32_t v = set->slot[i];
		size_t j;

		if (!v)
			continue;
		j = (size_t)hash_of(p, v - 1) & (ncap - 1);
		while (ns[j])
			j = (j + 1) & (ncap - 1);
		ns[j] = v;
	}
	*mem += (ncap - set->cap) * sizeof(*ns);
	free(set->slot);
	set->slot = ns;
	set->cap = ncap;
	return 0;
}

static uint64_t str_hash(const struct xprofs_hlo_program *p, uint32_t id)
{
	return hash_bytes((const uint8_t *)p->arena.data + p->strs[id].off, p->strs[id].len);
}

int hlo_str_add(struct xprofs_hlo_program *p, struct hlo_set *set, const uint8_t *s, size_t n,
		uint32_t *id)
{
	size_t j = 0, mask;
	uint64_t h = 0;
	int r;

	n = strnlen((const char *)s, n); /* a C string: cut at a NUL (XLA writes none) */
	if (set) {
		if ((r = set_room(set, &p->mem, p, str_hash)) < 0)
			return r;
		h = hash_bytes(s, n);
		mask = set->cap - 1;
		for (j = (size_t)h & mask; set->slot[j]; j = (j + 1) & mask) {
			const struct hlo_str *e = &p->strs[set->slot[j] - 1];

			if (e->len == n && !memcmp(p->arena.data + e->off, s, n)) {
				*id = set->slot[j] - 1;
				return 0;
			}
		}
	}
	if (p->n_strs >= UINT32_MAX - 1)
		return -E2BIG;
	if ((r = hlo_grow(&p->mem, &p->strs, &p->cap_strs, p->n_strs, sizeof(*p->strs), 1024)) < 0)
		return r;
	p->strs[p->n_strs].off = (uint32_t)p->arena.len;
	p->strs[p->n_strs].len = (uint32_t)n;
	if ((r = xprofs_buf_add(&p->arena, s, n)) < 0 || (r = xprofs_buf_add(&p->arena, "", 1)) < 0)
		return r == -ENOBUFS ? -E2BIG : r;
	*id = (uint32_t)p->n_strs++;
	if (set) {
		set->slot[j] = *id + 1;
		set->n++;
	}
	return 0;
}

static uint64_t shape_hash_tmp(const struct hlo_shape_tmp *t)
{
	uint64_t h = mix(0x5348, (uint64_t)(uint32_t)t->type);

	h = mix(h, t->rank);
	for (size_t i = 0; i < t->rank; i++)
		h = mix(h, (uint64_t)t->dims[i]);
	h = mix(h, t->n_tuple);
	for (size_t i = 0; i < t->n_tuple; i++)
		h = mix(h, t->tuple[i]);
	return h;
}

/* The stored shape @id seen as a tmp (borrowing the pools). */
static void shape_view(const struct xprofs_hlo_program *p, uint32_t id, struct hlo_shape_tmp *t)
{
	const struct hlo_shape *s = &p->shapes[id];

	memset(t, 0, sizeof(*t));
	t->type = s->type;
	t->rank = s->rank;
	t->dims = HLO_AT(p->i64, s->dims_off);
	t->n_tuple = s->n_tuple;
	t->tuple = HLO_AT(p->u32, s->tuple_off);
}

static uint64_t shape_hash(const struct xprofs_hlo_program *p, uint32_t id)
{
	struct hlo_shape_tmp t;

	shape_view(p, id, &t);
	return shape_hash_tmp(&t);
}

static bool shape_eq(const struct xprofs_hlo_program *p, uint32_t id, const struct hlo_shape_tmp *t)
{
	struct hlo_shape_tmp s;

	shape_view(p, id, &s);
	return s.type == t->type && s.rank == t->rank && s.n_tuple == t->n_tuple &&
	       (!t->rank || !memcmp(s.dims, t->dims, t->rank * sizeof(*t->dims))) &&
	       (!t->n_tuple || !memcmp(s.tuple, t->tuple, t->n_tuple * sizeof(*t->tuple)));
}

int hlo_shape_add(struct xprofs_hlo_program *p, struct hlo_set *set, struct wire_cur *c,
		  const struct hlo_shape_tmp *t, uint32_t *id)
{
	uint64_t h, elements = 1;
	struct hlo_shape *s;
	size_t j, mask;
	int r;

	for (size_t i = 0; i < t->rank; i++) {
		uint64_t d = (uint64_t)t->dims[i];

		if (t->dims[i] < 0)
			return wire_fail(c,
					 "shape dimension %zu is %" PRId64
					 " (negative) near offset %" PRIu64,
					 i, t->dims[i], c->pos);
		if (d && elements >= (XPROFS_HLO_ELEMENTS_MAX + d - 1) / d)
			return wire_fail(c,
					 "shape of %zu dimensions has 2^40 elements or more "
					 "(dimension %zu is %" PRId64 ") near offset %" PRIu64,
					 t->rank, i, t->dims[i], c->pos);
		elements *= d;
	}
	if ((r = set_room(set, &p->mem, p, shape_hash)) < 0)
		return r;
	h = shape_hash_tmp(t);
	mask = set->cap - 1;
	for (j = (size_t)h & mask; set->slot[j]; j = (j + 1) & mask)
		if (shape_eq(p, set->slot[j] - 1, t)) {
			*id = set->slot[j] - 1;
			return 0;
		}
	if (p->n_shapes >= UINT32_MAX - 1 || p->n_i64 + t->rank >= UINT32_MAX ||
	    p->n_u32 + t->n_tuple >= UINT32_MAX)
		return -E2BIG;
	if ((r = hlo_grow(&p->mem, &p->shapes, &p->cap_shapes, p->n_shapes, sizeof(*p->shapes),
			  256)) < 0)
		return r;
	s = &p->shapes[p->n_shapes];
	s->type = t->type;
	s->rank = (uint32_t)t->rank;
	s->dims_off = (uint32_t)p->n_i64;
	s->tuple_off = (uint32_t)p->n_u32;
	s->n_tuple = (uint32_t)t->n_tuple;
	s->elements = t->n_tuple || t->type == XPROFS_HLO_TUPLE ? 0 : elements;
	for (size_t i = 0; i < t->rank; i++) {
		if ((r = hlo_grow(&p->mem, &p->i64, &p->cap_i64, p->n_i64, sizeof(*p->i64), 1024)) <
		    0)
			return r;
		p->i64[p->n_i64++] = t->dims[i];
	}
	for (size_t i = 0; i < t->n_tuple; i++) {
		if ((r = hlo_grow(&p->mem, &p->u32, &p->cap_u32, p->n_u32, sizeof(*p->u32), 1024)) <
		    0)
			return r;
		p->u32[p->n_u32++] = t->tuple[i];
	}
	*id = (uint32_t)p->n_shapes++;
	set->slot[j] = *id + 1;
	set->n++;
	return 0;
}
