/*
 * check.c - what makes a decoded program safe to walk: called computation
 * ids resolved to indices, the entry computation found, and proof that
 * neither calls (a fusion calling its own computation, directly or not) nor
 * operands form a cycle, so a later analysis may follow either without a
 * visited mark.
 *
 * Design: computation ids sorted once and binary-searched; operands that
 * all come before their users (as XLA writes them) need no further check;
 * otherwise, and for calls, the cycle checks are Kahn's algorithm (repeatedly take a node nothing unvisited
 * points at), iterative, O(nodes + edges), with two temporary uint32 arrays
 * charged to the program's memory budget. A node left over lies on a cycle
 * or below one; the error names it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "hlo-internal.h"

int hlo_id_ix_cmp(const void *a, const void *b)
{
	const struct hlo_id_ix *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

int64_t hlo_id_ix_find(const struct hlo_id_ix *ids, size_t n, int64_t id)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ids[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && ids[lo].id == id ? (int64_t)ids[lo].i : -1;
}

/* Temporary arrays: charged to the budget while they live. */
static void *tmp_alloc(struct xprofs_hlo_program *p, size_t n, size_t size)
{
	if (n > (XPROFS_HLO_MEM_MAX - p->mem) / size)
		return NULL;
	return calloc(n ? n : 1, size);
}

/* Kahn's state: in-degrees, then the queue of nodes nothing unvisited points at. */
struct kahn {
	uint32_t *indeg, *queue;
	size_t tail;
	bool counting; /* first pass: count in-degrees; then take nodes */
};

/* One edge to @v: counted, or taken away (and @v queued once nothing points at it). */
static void kahn_edge(struct kahn *k, uint32_t v)
{
	if (k->counting)
		k->indeg[v]++;
	else if (--k->indeg[v] == 0)
		k->queue[k->tail++] = v;
}

/* A graph's edges from node @i, each handed to kahn_edge(). */
typedef void kahn_edges_fn(const struct xprofs_hlo_program *p, size_t i, struct kahn *k);

/* The calls: from computation @i to those its instructions call. */
static void call_edges(const struct xprofs_hlo_program *p, size_t i, struct kahn *k)
{
	const struct hlo_comp *cp = &p->comps[i];

	for (size_t x = cp->first; x < (size_t)cp->first + cp->n; x++) {
		const struct hlo_ins *in = &p->ins[x];

		if (!in->ext)
			continue;
		for (uint32_t j = 0; j < p->exts[in->ext - 1].n_called; j++)
			kahn_edge(k, p->u32[p->exts[in->ext - 1].called_off + j]);
	}
}

/* The operands: from instruction @i to each of its operands. */
static void operand_edges(const struct xprofs_hlo_program *p, size_t i, struct kahn *k)
{
	const struct hlo_ins *in = &p->ins[i];

	for (uint32_t j = 0; j < in->n_ops; j++)
		kahn_edge(k, p->u32[in->ops_off + j]);
}

/*
 * kahn() - Kahn's algorithm over the @n nodes whose edges @edges hands out:
 * *@left is a node left over (on or below a cycle), or @n when none is.
 * -E2BIG when the temporary arrays are past the budget.
 */
static int kahn(struct xprofs_hlo_program *p, size_t n, kahn_edges_fn *edges, size_t *left)
{
	struct kahn k = {.counting = true};
	size_t head = 0;
	int r = 0;

	*left = n;
	k.indeg = tmp_alloc(p, n, sizeof(uint32_t));
	k.queue = tmp_alloc(p, n, sizeof(uint32_t));
	if (!k.indeg || !k.queue) {
		r = -E2BIG;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		edges(p, i, &k);
	for (size_t i = 0; i < n; i++)
		if (!k.indeg[i])
			k.queue[k.tail++] = (uint32_t)i;
	k.counting = false;
	while (head < k.tail)
		edges(p, k.queue[head++], &k);
	for (size_t i = 0; k.tail < n && i < n; i++)
		if (k.indeg[i]) {
			*left = i;
			break;
		}
out:
	free(k.indeg);
	free(k.queue);
	return r;
}

/* No computation calls itself, directly or not: -EINVAL naming one on or below a cycle. */
static int check_calls(struct xprofs_hlo_program *p, struct wire_cur *c)
{
	size_t left;
	int r = kahn(p, p->n_comps, call_edges, &left);

	if (r == 0 && left < p->n_comps)
		r = wire_fail(c,
			      "computation %s is called in a cycle (a fusion or call "
			      "that reaches its own computation)",
			      hlo_str(p, p->comps[left].name));
	return r;
}

/* No instruction is its own operand, directly or through others. */
static int check_operands(struct xprofs_hlo_program *p, struct wire_cur *c)
{
	size_t n = p->n_ins, left;
	bool ordered = true;
	int r;

	/* XLA writes operands before their users: then there is no cycle, and no memory is needed */
	for (size_t i = 0; i < n && ordered; i++)
		for (uint32_t j = 0; j < p->ins[i].n_ops && ordered; j++)
			ordered = p->u32[p->ins[i].ops_off + j] < i;
	if (ordered)
		return 0;
	r = kahn(p, n, operand_edges, &left);
	if (r == 0 && left < n)
		r = wire_fail(c,
			      "instruction %s of computation %s is its own operand, "
			      "directly or through others (an operand cycle)",
			      hlo_str(p, p->ins[left].name),
			      hlo_str(p, p->comps[p->ins[left].comp].name));
	return r;
}

/* Called computation ids to indices, then the entry computation. */
static int resolve(struct xprofs_hlo_program *p, struct wire_cur *c, const struct hlo_id_ix *ids,
		   const int64_t *called_ids, bool have_entry_id, int64_t entry_id)
{
	size_t k = 0, n = p->n_comps;
	bool have_name = p->strs[p->entry_name].len > 0;
	int64_t e = -1;

	for (size_t i = 0; i < p->n_ins; i++) {
		const struct hlo_ins *in = &p->ins[i];
		const struct hlo_ext *x;

		if (!in->ext)
			continue;
		x = &p->exts[in->ext - 1];
		for (uint32_t j = 0; j < x->n_called; j++, k++) {
			int64_t ci = hlo_id_ix_find(ids, n, called_ids[k]);

			if (ci < 0)
				return wire_fail(c,
						 "instruction %s calls computation id %" PRId64
						 ", which the module does not have",
						 hlo_str(p, in->name), called_ids[k]);
			p->u32[x->called_off + j] = (uint32_t)ci;
		}
	}
	if (have_entry_id)
		e = hlo_id_ix_find(ids, n, entry_id);
	for (size_t i = 0; e < 0 && have_name && i < n; i++)
		if (!strcmp(hlo_str(p, p->comps[i].name), hlo_str(p, p->entry_name)))
			e = (int64_t)i;
	if (e < 0 && (have_entry_id || have_name))
		return wire_fail(c,
				 "the module's entry computation (id %" PRId64
				 ", name \"%s\") is none of its %zu computations",
				 entry_id, hlo_str(p, p->entry_name), n);
	p->entry = e;
	return 0;
}

int hlo_check(struct xprofs_hlo_program *p, struct wire_cur *c, const int64_t *called_ids,
	      bool have_entry_id, int64_t entry_id)
{
	size_t n = p->n_comps;
	struct hlo_id_ix *ids = tmp_alloc(p, n, sizeof(*ids));
	int r;

	if (!ids)
		return -E2BIG;
	for (size_t i = 0; i < n; i++) {
		ids[i].id = p->comps[i].id;
		ids[i].i = (uint32_t)i;
	}
	qsort(ids, n, sizeof(*ids), hlo_id_ix_cmp);
	for (size_t i = 1; i < n; i++)
		if (ids[i].id == ids[i - 1].id) {
			r = wire_fail(c, "computations %s and %s have the same id %" PRId64,
				      hlo_str(p, p->comps[ids[i - 1].i].name),
				      hlo_str(p, p->comps[ids[i].i].name), ids[i].id);
			goto out;
		}
	if ((r = resolve(p, c, ids, called_ids, have_entry_id, entry_id)) < 0 ||
	    (r = check_calls(p, c)) < 0)
		goto out;
	r = check_operands(p, c);
out:
	free(ids);
	return r;
}
