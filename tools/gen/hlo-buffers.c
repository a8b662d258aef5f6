/*
 * hlo-buffers.c - the buffer assignments (HloProto field 3) of generated
 * HloProtos: a small one with peaks to compute by hand in every sidecar
 * (gen_hlo_ba_small(), docs/memory.md "Generated buffer assignment"), and a
 * large one for bench/hlo.sh's memory_viewer.json (gen_hlo_ba_big()).
 *
 * It shares no code with the reader (hlo/buffers.c): it is its oracle's input.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"

/*
 * A sidecar's buffer assignment, with peaks to compute by hand (docs/memory.md
 * "Generated buffer assignment"). Instructions (@ins): 0, 1 Arg_0, Arg_1; 2 the
 * root tuple; 3.. the main instructions 0..6. Color 0: two parameters, a
 * live-out tuple (16 bytes) and its element {1}, a temporary allocation whose
 * trace peaks at 5 MiB + 4 KiB (buffers 11, 12, 13 live; 14 shares 11); color
 * 1: one allocation whose trace peaks at 96 KiB.
 */
enum { BA_PARAM = 1, BA_LIVE = 2, BA_TUPLE = 4 };
static const struct glb {
	int64_t id, size, off;
	int ins, sidx, color;
} glbs[] = {
	{0, 524288, 0, 0, -1, 0},
	{1, 524288, 0, 1, -1, 0},
	{2, 16, 0, 2, -1, 0},
	{3, 1048576, 0, 2, 1, 0},
	{10, 1048576, 0, 3, -1, 0},
	{11, 2097152, 1048576, 4, -1, 0},
	{12, 4096, 3145728, 5, -1, 0},
	{13, 3145728, 0, 6, -1, 0},
	{14, 2097152, 1048576, 7, -1, 0},
	{20, 65536, 0, 8, -1, 1},
	{21, 32768, 65536, 9, -1, 1},
};
static const struct gal {
	int64_t index, size;
	int flags, color, param, first, n;
} gals[] = {
	{0, 524288, BA_PARAM, 0, 0, 0, 1},
	{1, 524288, BA_PARAM, 0, 1, 1, 1},
	{2, 16, BA_LIVE | BA_TUPLE, 0, 0, 2, 1},
	{3, 1048576, BA_LIVE, 0, 0, 3, 1},
	{4, 5246976, 0, 0, 0, 4, 5},
	{5, 98304, 0, 1, 0, 9, 2},
};
/* trace, kind (0 alloc, 1 free, 2 share), buffer id, the shared buffer's id */
static const int64_t gevs[][4] = {
	{0, 0, 10, 0}, {0, 0, 11, 0}, {0, 0, 12, 0}, {0, 1, 10, 0}, {0, 2, 14, 11},
	{0, 0, 13, 0}, {0, 1, 11, 0}, {0, 1, 12, 0}, {0, 1, 14, 0}, {0, 1, 13, 0},
	{1, 0, 20, 0}, {1, 0, 21, 0}, {1, 1, 20, 0}, {1, 1, 21, 0},
};

void gen_hlo_ba_small(struct pb *out, const int64_t *ins, char names[][64], struct pb *ba,
		      struct pb *m, struct pb *e)
{

	ba->len = 0;
	for (size_t i = 0; i < sizeof(glbs) / sizeof(glbs[0]); i++) {
		const struct glb *l = &glbs[i];

		m->len = e->len = 0;
		pb_int(e, 4, (uint64_t)ins[l->ins]);
		if (l->sidx >= 0)
			pb_int(e, 3, (uint64_t)l->sidx);
		pb_int(m, 1, (uint64_t)l->id);
		pb_int(m, 2, (uint64_t)l->size);
		pb_bytes(m, 3, e->p, e->len);
		pb_int(m, 4, (uint64_t)l->color);
		pb_bytes(ba, 1, m->p, m->len);
	}
	for (size_t i = 0; i < sizeof(gals) / sizeof(gals[0]); i++) {
		const struct gal *a = &gals[i];

		m->len = 0;
		pb_int(m, 1, (uint64_t)a->index);
		pb_int(m, 2, (uint64_t)a->size);
		if (a->flags & BA_PARAM) {
			pb_int(m, 5, 1);
			pb_int(m, 6, (uint64_t)a->param);
		}
		if (a->flags & BA_LIVE)
			pb_int(m, 7, 1);
		pb_int(m, 8, (uint64_t)a->color);
		for (int k = a->first; k < a->first + a->n; k++) {
			e->len = 0;
			pb_int(e, 1, (uint64_t)glbs[k].id);
			pb_int(e, 2, (uint64_t)glbs[k].off);
			pb_int(e, 3, (uint64_t)glbs[k].size);
			pb_bytes(m, 9, e->p, e->len);
		}
		if (a->flags & BA_TUPLE)
			pb_int(m, 11, 1);
		pb_bytes(ba, 3, m->p, m->len);
	}
	for (int t = 0; t < 2; t++) {
		m->len = 0;
		for (size_t i = 0; i < sizeof(gevs) / sizeof(gevs[0]); i++) {
			size_t k = 0;

			if (gevs[i][0] != t)
				continue;
			while (glbs[k].id != gevs[i][2])
				k++;
			e->len = 0;
			pb_int(e, 1, (uint64_t)gevs[i][1]);
			pb_int(e, 2, (uint64_t)gevs[i][2]);
			pb_str(e, 4, names[glbs[k].ins]);
			if (gevs[i][1] == 2)
				pb_int(e, 5, (uint64_t)gevs[i][3]);
			pb_bytes(m, 1, e->p, e->len);
		}
		pb_int(m, 3, (uint64_t)(t ? 5 : 4));
		pb_bytes(ba, 4, m->p, m->len);
	}
	pb_bytes(out, 3, ba->p, ba->len);
	out->err = out->err ? out->err : ba->err ? ba->err : m->err ? m->err : e->err;
}

/*
 * gen_hlo_ba_big() - the buffer assignment of gen_hlo_big()'s module, whose
 * @n instructions have ids @first_id + (k / @per) * (@per + 1) + k % @per
 * (each computation of @per takes one id more) and names @name(k): one
 * 8 MiB buffer each (id k), all in one temporary allocation, and a trace
 * that frees each buffer two allocations later: the heap peaks at 24 MiB
 * at event 2. Written to @fd as HloProto field 3.
 */
int gen_hlo_ba_big(int fd, uint64_t n, uint64_t first_id, uint64_t per,
		   void (*name)(char *nm, size_t len, uint64_t k))
{
	struct pb ba, al, tr, m, lb, top;
	char nm[64];
	int r;

	pb_init(&ba, (size_t)1 << 30);
	pb_init(&al, (size_t)1 << 30);
	pb_init(&tr, (size_t)1 << 30);
	pb_init(&m, 4096);
	pb_init(&lb, 4096);
	pb_init(&top, 64);
	pb_int(&al, 1, 0);
	pb_int(&al, 2, (uint64_t)3 << 23);
	for (uint64_t k = 0; k < n; k++) {
		lb.len = m.len = 0;
		pb_int(&m, 4, first_id + (k / per) * (per + 1) + k % per);
		pb_int(&lb, 1, k);
		pb_int(&lb, 2, (uint64_t)1 << 23);
		pb_bytes(&lb, 3, m.p, m.len);
		pb_bytes(&ba, 1, lb.p, lb.len);
		m.len = 0;
		pb_int(&m, 1, k);
		pb_int(&m, 2, (k % 3) << 23);
		pb_int(&m, 3, (uint64_t)1 << 23);
		pb_bytes(&al, 9, m.p, m.len);
		for (int f = 0; f < 2; f++) { /* ALLOC k, then FREE k - 2 */
			uint64_t b = f ? k - 2 : k;

			if (f && k < 2)
				break;
			name(nm, sizeof(nm), b);
			m.len = 0;
			pb_int(&m, 1, (uint64_t)f);
			pb_int(&m, 2, b);
			pb_str(&m, 4, nm);
			pb_bytes(&tr, 1, m.p, m.len);
		}
	}
	for (uint64_t b = n >= 2 ? n - 2 : 0; b < n; b++) {
		name(nm, sizeof(nm), b);
		m.len = 0;
		pb_int(&m, 1, 1);
		pb_int(&m, 2, b);
		pb_str(&m, 4, nm);
		pb_bytes(&tr, 1, m.p, m.len);
	}
	pb_int(&tr, 3, 0);
	pb_bytes(&ba, 3, al.p, al.len);
	pb_bytes(&ba, 4, tr.p, tr.len);
	pb_tag(&top, 3, 2);
	pb_varint(&top, ba.len);
	r = ba.err ? ba.err : al.err ? al.err : tr.err ? tr.err : m.err ? m.err : lb.err;
	if (r == 0 && (r = xprofs_write_full(fd, top.p, top.len)) == 0)
		r = xprofs_write_full(fd, ba.p, ba.len);
	pb_deinit(&ba);
	pb_deinit(&al);
	pb_deinit(&tr);
	pb_deinit(&m);
	pb_deinit(&lb);
	pb_deinit(&top);
	return r;
}
