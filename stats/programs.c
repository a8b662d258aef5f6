/*
 * programs.c - a plane's XLA programs: program id -> the name of the "XLA
 * Modules" event "<module>(<id>)" that runs it, for an op's program when
 * its events name only the id (ops.c op_program()).
 *
 * Design: ids in an array, found through a hash table; the first name of
 * an id is kept. Limits: PROGS_MAX programs per plane (the rest have none).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stats-internal.h"

#define PROGS_MAX ((size_t)1 << 16)

void stats_progmap_free(struct progmap *pm)
{
	for (size_t i = 0; i < pm->n; i++)
		free(pm->name[i]);
	free(pm->id);
	free(pm->name);
	xprofs_table_free(pm->tab);
	memset(pm, 0, sizeof(*pm));
}

/* An xprofs_table_eq_fn: program @idx of the progmap @ctx has the id *@key. */
static bool prog_id_eq(const void *ctx, uint32_t idx, const void *key)
{
	return ((const struct progmap *)ctx)->id[idx] == *(const uint64_t *)key;
}

static uint64_t prog_hash(uint64_t id)
{
	return xprofs_table_hash(0, &id, sizeof(id));
}

/* stats_progmap_event() - a xs_event_fn: an "XLA Modules" event "<module>(<id>)" names program <id>. */
int stats_progmap_event(struct xs_rctx *rc, const struct xs_event *e, struct xs_evmd *md, void *arg)
{
	struct progmap *pm = arg;
	const char *open = md->name_len ? memrchr(md->name, '(', md->name_len) : NULL;
	uint64_t id = 0, h;
	size_t cap;
	uint32_t i;
	int r;

	(void)rc;
	(void)e;
	if (!open || md->name[md->name_len - 1] != ')' || open + 2 >= md->name + md->name_len ||
	    pm->n >= PROGS_MAX)
		return 0;
	for (const char *q = open + 1; q < md->name + md->name_len - 1; q++) {
		uint64_t dgt = (uint64_t)(*q - '0');

		if (*q < '0' || *q > '9' || id > (UINT64_MAX - dgt) / 10)
			return 0;
		id = id * 10 + dgt;
	}
	h = prog_hash(id);
	if (xprofs_table_find(pm->tab, h, prog_id_eq, pm, &id, &i) == 0)
		return 0; /* keep the first name of an id */
	if (!pm->tab && (r = xprofs_table_new(PROGS_MAX, &pm->tab)) < 0)
		return r;
	cap = pm->cap;
	if ((r = xprofs_grow(&pm->id, &cap, pm->n, sizeof(*pm->id), 16)) < 0 ||
	    (r = xprofs_grow(&pm->name, &pm->cap, pm->n, sizeof(*pm->name), 16)) < 0)
		return r;
	if (!(pm->name[pm->n] = strndup(md->name, md->name_len)))
		return -ENOMEM;
	pm->id[pm->n] = id;
	if ((r = xprofs_table_add(pm->tab, h, (uint32_t)pm->n)) < 0) {
		free(pm->name[pm->n]);
		return r;
	}
	pm->n++;
	return 0;
}

const char *stats_progmap_find(const struct progmap *pm, uint64_t id)
{
	uint32_t i;

	return xprofs_table_find(pm->tab, prog_hash(id), prog_id_eq, pm, &id, &i) == 0 ? pm->name[i]
										       : NULL;
}
