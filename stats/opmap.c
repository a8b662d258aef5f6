/*
 * opmap.c - an op table's rows (struct opmap): ops keyed by name, on GPU by
 * (program id, name) as XProf keys them, found through a hash table, the
 * ones past stats_ops_max folded into one "(other)" row; and the rows in
 * ops.json's order. ops.c fills them, the views read them.
 *
 * Design: rows live in one array in the order they were first met; the
 * table maps a key to its row. Limits: stats_ops_max rows (2^20) and the
 * "(other)" row.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stats-internal.h"

size_t stats_ops_max = OPS_MAX;

void stats_opmap_free(struct opmap *m)
{
	for (size_t i = 0; i < m->n; i++) {
		free(m->ops[i].name);
		free(m->ops[i].category);
		free(m->ops[i].program);
		free(m->ops[i].provenance);
		free(m->ops[i].source);
	}
	free(m->ops);
	xprofs_table_free(m->tab);
	memset(m, 0, sizeof(*m));
	m->other = -1;
}

/* An xprofs_table_eq_fn: op @idx of the opmap @ctx has the key @key (a struct stats_opkey). */
static bool op_key_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct op *op = &((const struct opmap *)ctx)->ops[idx];
	const struct stats_opkey *k = key;

	return op->has_pid == k->has_pid && op->pid == k->pid && !strcmp(op->name, k->name);
}

static uint64_t op_key_hash(const struct stats_opkey *k)
{
	uint64_t h = xprofs_table_hash(0, k->name, strlen(k->name));

	return k->has_pid ? xprofs_table_hash(h, &k->pid, sizeof(k->pid)) : h;
}

int64_t stats_opmap_get_key(struct opmap *m, struct stats_opkey k, const char *category)
{
	uint64_t h = op_key_hash(&k);
	bool full = m->n >= stats_ops_max;
	struct op *op;
	uint32_t i;
	int r;

	if (xprofs_table_find(m->tab, h, op_key_eq, m, &k, &i) == 0)
		return i;
	if (full) {
		if (m->other >= 0)
			return m->other;
		k = (struct stats_opkey){"(other)", false, 0};
		category = "";
		h = op_key_hash(&k);
	}
	if (!m->tab && (r = xprofs_table_new(OPS_MAX + 1, &m->tab)) < 0) /* + 1: "(other)" */
		return r;
	if ((r = xprofs_grow(&m->ops, &m->cap, m->n, sizeof(*m->ops), 256)) < 0)
		return r;
	op = &m->ops[m->n];
	memset(op, 0, sizeof(*op));
	op->name = strdup(k.name);
	op->category = strdup(category ? category : "");
	op->has_pid = k.has_pid;
	op->pid = k.pid;
	r = op->name && op->category ? xprofs_table_add(m->tab, h, (uint32_t)m->n) : -ENOMEM;
	if (r < 0) {
		free(op->name);
		free(op->category);
		return r;
	}
	op->min = INT64_MAX;
	op->max = INT64_MIN;
	m->n++;
	if (full) /* the "(other)" row itself, not the last op before the cap */
		m->other = (int64_t)m->n - 1;
	return (int64_t)m->n - 1;
}

int64_t stats_opmap_get(struct opmap *m, const char *name, const char *category)
{
	return stats_opmap_get_key(m, (struct stats_opkey){name, false, 0}, category);
}

static int op_cmp(const void *a, const void *b, void *arg)
{
	const struct opmap *m = arg;
	const struct op *x = &m->ops[*(const size_t *)a];
	const struct op *y = &m->ops[*(const size_t *)b];
	int c;

	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	if ((c = strcmp(x->name, y->name)) != 0)
		return c;
	if (x->has_pid != y->has_pid)
		return x->has_pid ? 1 : -1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* stats_opmap_sorted() - the ops' indexes by self time (desc), total, name, program id. */
size_t *stats_opmap_sorted(struct opmap *m)
{
	size_t *idx = malloc((m->n + 1) * sizeof(*idx));

	if (!idx)
		return NULL;
	for (size_t i = 0; i < m->n; i++)
		idx[i] = i;
	qsort_r(idx, m->n, sizeof(*idx), op_cmp, m);
	return idx;
}
