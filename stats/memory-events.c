/*
 * memory-events.c - reading the host plane's MemoryAllocation and
 * MemoryDeallocation events for memory_profile.json: their stats as XProf's
 * visitors read them (GenerateMemoryProfile(), xplane_to_memory_profile.cc),
 * the memory ids, UpdateProfileSummary()'s peaks, the per-event records
 * and the shown snapshots' fields, in the three passes memory-profile.c
 * describes.
 *
 * Limits: MEM_IDS_MAX memory ids (events of further ids are left out, with
 * an error); strings are copied only for the snapshots the output shows.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memory.h"

/* The stats read, how, and where in struct mev an int or a string goes. */
static const struct mstat_def {
	const char *name;
	enum mstat kind;
	size_t off; /* MS_INT: an int64_t or uint64_t; MS_STR: an owned char * */
} mstat_defs[] = {
	{"index_on_host", MS_ID_INT, 0},
	{"device_ordinal", MS_ID_INT, 0},
	{"allocator_name", MS_ID_STR, 0},
	{"bytes_reserved", MS_INT, offsetof(struct mev, a.stack)},
	{"bytes_allocated", MS_INT, offsetof(struct mev, a.heap)},
	{"bytes_available", MS_INT, offsetof(struct mev, a.free)},
	{"fragmentation", MS_FRAG, 0},
	{"peak_bytes_in_use", MS_INT, offsetof(struct mev, a.peak)},
	{"requested_bytes", MS_INT, offsetof(struct mev, req)},
	{"allocation_bytes", MS_INT, offsetof(struct mev, abytes)},
	{"addr", MS_INT, offsetof(struct mev, addr)},
	{"tf_op", MS_STR, offsetof(struct mev, tf_op)},
	{"group_id", MS_INT, offsetof(struct mev, step)},
	{"region_type", MS_STR, offsetof(struct mev, region)},
	{"data_type", MS_INT, offsetof(struct mev, dtype)},
	{"shape", MS_STR, offsetof(struct mev, shape)},
};

void stats_mem_add_error(struct mprof *mp, const char *fmt, ...)
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

/* What stat metadata @key is read as; NULL: nothing (as XProf's Type() without a value). */
static const struct mstat_def *stat_def(struct mprof *mp, int64_t key)
{
	struct xs_rctx *rc = mp->rc;
	ssize_t k = xs_md_find(&rc->x->planes[rc->plane].st, key);
	const struct xs_stmd *sm;

	if (k < 0)
		return NULL;
	if (!mp->skind[k]) {
		int8_t def = 1;

		if (xs_md_stat(rc, key, &sm) < 0)
			return NULL;
		for (size_t i = 0; i < sizeof(mstat_defs) / sizeof(mstat_defs[0]); i++)
			if (xs_str_eq(sm->name, sm->name_len, mstat_defs[i].name))
				def = (int8_t)(i + 2);
		mp->skind[k] = def;
	}
	return mp->skind[k] > 1 ? &mstat_defs[mp->skind[k] - 2] : NULL;
}

/* IntValue(): the int64 value, 0 for any other kind. */
static int64_t int_value(const struct xs_statv *s)
{
	return s->kind == SV_I64 ? (int64_t)s->u : 0;
}

/*
 * str_value() - StrOrRefValue(): a string, or a ref's stat metadata name,
 * else "". *out borrowed (@own NULL: a ref's name) or owned (*own, free():
 * a string, copied out of the cursor's window).
 */
static int str_value(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s,
		     const char **out, size_t *len, char **own)
{
	int r;

	*own = NULL;
	*out = "";
	*len = 0;
	if ((r = xs_stat_str_at(rc, c, s, XS_NAME_MAX, out, len)) <= 0 || s->kind != SV_STR)
		return r < 0 ? r : 0;
	if (!(*own = strndup(*out, *len)))
		return -ENOMEM;
	*out = *own;
	*len = strlen(*own);
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
	const struct mstat_def *d = stat_def(mp, s->md);
	char *field = (char *)e + (d ? d->off : 0);
	int64_t v;
	int r;

	if (!d)
		return 0;
	switch (d->kind) {
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
	case MS_INT:
		v = int_value(s);
		memcpy(field, &v, sizeof(v)); /* addr is the uint64_t of the same bits */
		break;
	case MS_FRAG:
		e->a.frag = s->kind == SV_DOUBLE ? s->d : 0;
		break;
	case MS_STR:
		return e->strings ? set_str(rc, c, s, (char **)(void *)field) : 0;
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
/* An xprofs_table_eq_fn: memory id @idx of @ctx (struct mprof) is named @key (struct mkey). */
struct mkey {
	const char *name;
	size_t len;
};

static bool mid_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct mid *m = &((const struct mprof *)ctx)->ids[idx];
	const struct mkey *k = key;

	return m->len == k->len && !memcmp(m->name, k->name, k->len);
}

static ssize_t mid_find(struct mprof *mp, const char *name, size_t len, bool add)
{
	uint64_t h = xprofs_table_hash(0, name, len);
	struct mkey k = {name, len};
	struct mid *m;
	uint32_t i;
	int r;

	if (xprofs_table_find(mp->ids_tab, h, mid_eq, mp, &k, &i) == 0)
		return i;
	if (!add)
		return -1;
	if (mp->nids >= MEM_IDS_MAX) {
		mp->ids_full = true;
		return -1;
	}
	if (!mp->ids_tab && (r = xprofs_table_new(MEM_IDS_MAX, &mp->ids_tab)) < 0)
		return r;
	if (xprofs_grow(&mp->ids, &mp->cap, mp->nids, sizeof(*mp->ids), 8) < 0)
		return -ENOMEM;
	m = &mp->ids[mp->nids];
	memset(m, 0, sizeof(*m));
	if (!(m->name = malloc(len + 1)))
		return -ENOMEM;
	memcpy(m->name, name, len);
	m->name[len] = 0;
	m->len = len;
	if ((r = xprofs_table_add(mp->ids_tab, h, (uint32_t)mp->nids)) < 0) {
		free(m->name);
		return r;
	}
	return (ssize_t)mp->nids++;
}

/* UpdateProfileSummary() of event stats @a at @t_ps. */
static void update_summary(struct mid *m, const struct agg *a, int64_t t_ps)
{
	int64_t sum = stats_mem_wadd(a->stack, a->heap);

	m->lifetime = a->peak;
	if (sum >= m->peak.peak) {
		m->peak = *a;
		m->peak.peak = sum;
		m->peak_time = t_ps;
		m->capacity = stats_mem_wadd(sum, a->free);
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
void stats_mem_dtype_str(int64_t v, char *buf, size_t n)
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
	size_t lo = stats_mem_u32_lower(m->want, m->nwant, seq);
	struct msnap *s;
	struct mev e;
	int r;

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
	stats_mem_dtype_str(e.dtype, s->dtype, sizeof(s->dtype));
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
			q->sum = stats_mem_wadd(e.a.stack, e.a.heap);
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
int stats_mem_walk(struct mprof *mp, int pass)
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
