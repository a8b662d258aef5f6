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
 * Files: memory-events.c reads the events (passes 1-3), this file plans
 * the batches and the sampled timeline and writes the JSON; memory.h holds
 * what they share.
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

#include "memory.h"

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

/* The end of the run of positions idx[@g..@n) whose records share rec[idx[@g]]'s address. */
static size_t addr_run_end(const struct mrec *rec, const uint32_t *idx, size_t n, size_t g)
{
	size_t e = g;

	while (e < n && rec[idx[e]].addr == rec[idx[g]].addr)
		e++;
	return e;
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* SampleMemoryProfileTimeline(): a max box filter over the heap + stack of @n records. */
static void sample(const struct mrec *rec, size_t n, struct mplan *pl)
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
static int plan_id(struct mid *m, struct mplan *pl)
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
	for (size_t g = 0, e; g < n; g = e) {
		int64_t pending = -1;

		e = addr_run_end(rec, perm, n, g);
		for (size_t j = g, k; j < e; j++) {
			uint32_t i = perm[j];

			if (rec[i].act == ACT_DEALLOC) {
				if (pending < 0) {
					pl->unmatched_frees++;
					continue;
				}
				/* sampled positions strictly increase (disjoint boxes) */
				k = stats_mem_u32_lower(pl->sampled, pl->nsampled, i);
				if (k < pl->nsampled && pl->sampled[k] == i)
					pl->sampled_match[k] = (int32_t)pending;
				pending = -1;
			} else if (pending < 0) {
				pending = i;
			}
		}
		pl->unfreed += pending >= 0;
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
			pl->unmapped = stats_mem_wadd(pl->unmapped, -rec[i].abytes);
		else
			pl->unmapped = stats_mem_wadd(pl->unmapped, rec[i].abytes);
	}
	qsort_r(cand, ncand, sizeof(*cand), addr_cmp, rec);
	pl->nactive = 0;
	for (size_t g = 0, e; g < ncand; g = e) {
		int64_t live = -1;

		e = addr_run_end(rec, cand, ncand, g);
		for (size_t j = g; j < e; j++) {
			uint32_t i = cand[j];

			if (rec[i].act == ACT_ALLOC)
				live = i;
			else if (live >= 0)
				live = -1;
			else
				unmapped_dealloc = stats_mem_wadd(unmapped_dealloc, rec[i].abytes);
		}
		if (live >= 0)
			cand[pl->nactive++] =
				(uint32_t)live; /* nactive <= g: writes behind the scan */
	}
	pl->unmapped = stats_mem_wadd(pl->unmapped, -unmapped_dealloc);
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

const struct msnap *stats_mem_snap_at(const struct mid *m, uint32_t pos)
{
	return &m->snap[stats_mem_u32_lower(m->want, m->nwant, m->rec[pos].seq)];
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
	xs_out_key_u64(o, ",\"address\":", s->addr);
	xs_out_key_cstr(o, ",\"tf_op_name\":", src->tf_op);
	xs_out_key_i64(o, ",\"step_id\":", s->step);
	xs_out_key_cstr(o, ",\"region_type\":", src->region);
	xs_out_key_cstr(o, ",\"data_type\":", src->dtype);
	xs_out_key_cstr(o, ",\"tensor_shape\":", src->shape);
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
		return stats_mem_wadd(0, -p->abytes) < stats_mem_wadd(0, -q->abytes) ? -1 : 1;
	if (p->req != q->req)
		return stats_mem_wadd(0, -p->req) < stats_mem_wadd(0, -q->req) ? -1 : 1;
	if ((c = strcmp(p->tf_op, q->tf_op)) || (c = strcmp(p->region, q->region)) ||
	    (c = strcmp(p->dtype, q->dtype)) || (c = strcmp(p->shape, q->shape)))
		return c;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

bool stats_mem_row_same(const struct arow *x, const struct arow *y)
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
	stats_mem_dtype_str(0, s->dtype, sizeof(s->dtype));
}

int stats_mem_rows(const struct mid *m, const struct mplan *pl, struct msnap sp[2], size_t *nsp,
		   struct arow **out, size_t *nout)
{
	struct arow *rows;
	size_t nrows = 0;

	*nsp = 0;
	if (!(rows = malloc((pl->nactive + 3) * sizeof(*rows))))
		return -ENOMEM;
	for (size_t i = 0; i < pl->nactive; i++)
		rows[nrows++] = (struct arow){pl->active[i], stats_mem_snap_at(m, pl->active[i])};
	if (pl->unmapped > 0) {
		special(&sp[*nsp], pl->unmapped, pl->peak_step, "unused preallocated device memory",
			"persist/dynamic");
		(*nsp)++;
		rows[nrows++] = (struct arow){-(int64_t)*nsp, &sp[*nsp - 1]};
	}
	if (m->peak.stack > 0) {
		special(&sp[*nsp], m->peak.stack, pl->peak_step, "stack", "stack");
		(*nsp)++;
		rows[nrows++] = (struct arow){-(int64_t)*nsp, &sp[*nsp - 1]};
	}
	qsort(rows, nrows, sizeof(*rows), arow_cmp);
	*out = rows;
	*nout = nrows;
	return 0;
}

/*
 * out_detail() - active_allocations, the snapshots they show, the special
 * allocations and the sampled timeline of @m: the rows of stats_mem_rows()
 * merged (ProcessActiveAllocations()), SaveActiveAllocationSnapshots();
 * then the xprofs additions.
 */
static int out_detail(struct xs_out *o, const struct mid *m, const struct mplan *pl)
{
	struct msnap sp[2];
	struct arow *rows;
	size_t nrows, nsp, shown = 0;
	int r;

	if ((r = stats_mem_rows(m, pl, sp, &nsp, &rows, &nrows)) < 0)
		return r;
	OUT_LIT(o, ",\"memory_profile_snapshots\":[");
	for (size_t i = 0; i < nrows; i++) {
		if (rows[i].idx < 0)
			continue;
		OUT_RAW(o, shown ? ",\n" : "\n");
		shown++;
		out_snap(o, rows[i].m, rows[i].m, m->rec[rows[i].idx].step);
		while (i + 1 < nrows && stats_mem_row_same(&rows[i], &rows[i + 1]))
			i++;
	}
	OUT_LIT(o, "],\"active_allocations\":[");
	shown = 0;
	for (size_t i = 0, k = 0; i < nrows; i++) {
		size_t first = i;

		while (i + 1 < nrows && stats_mem_row_same(&rows[i], &rows[i + 1]))
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
		const struct msnap *s = stats_mem_snap_at(m, pos), *src = s;

		if (s->act == ACT_DEALLOC && pl->sampled_match[i] >= 0)
			src = stats_mem_snap_at(m, (uint32_t)pl->sampled_match[i]);
		OUT_RAW(o, i ? ",\n" : "\n");
		out_snap(o, s, src, m->rec[pos].step);
		if ((r = xs_out_flush(o, false)) < 0)
			goto out;
	}
	OUT_LIT(o, "]");
	xs_out_key_i64(o, ",\"num_snapshots\":", (int64_t)m->n);
	xs_out_key_i64(o, ",\"peak_step_id\":", pl->peak_step);
	xs_out_key_u64(o, ",\"unmatched_deallocations\":", pl->unmatched_frees);
	xs_out_key_u64(o, ",\"unfreed_allocations\":", pl->unfreed);
	r = o->r;
out:
	free(rows);
	return r;
}

/* One entry of memory_profile_per_allocator: its summary, then the detail when @pl. */
static int out_id(struct xs_out *o, const struct mid *m, const struct mplan *pl, bool first)
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
 * batch() - steps 2 and 3 for the ids ord[lo, hi) (their events at most
 * MEM_EVENTS_MAX together, or one id alone that has more: summary only),
 * then @fn for each, in order.
 */
static int batch(struct mprof *mp, const size_t *ord, size_t lo, size_t hi, stats_mem_id_fn fn,
		 void *arg)
{
	struct mplan *pl = NULL;
	int r = 0;

	if (hi - lo == 1 && mp->ids[ord[lo]].n > MEM_EVENTS_MAX) {
		const struct mid *m = &mp->ids[ord[lo]];

		stats_mem_add_error(mp,
				    "memory id \"%s\": %" PRIu64
				    " events, more than the %zu kept: only its "
				    "profile_summary is given",
				    m->name, m->n, MEM_EVENTS_MAX);
		return fn(arg, m, NULL, lo);
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
	if ((r = stats_mem_walk(mp, 2)) < 0)
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
	if ((r = stats_mem_walk(mp, 3)) < 0)
		goto out;
	for (size_t i = lo; i < hi && r == 0; i++)
		r = fn(arg, &mp->ids[ord[i]], &pl[i - lo], i);
out:
	for (size_t i = lo; i < hi; i++) {
		mid_drop_detail(&mp->ids[ord[i]]);
		if (pl)
			free(pl[i - lo].active);
	}
	free(pl);
	return r;
}

int stats_mem_details(struct mprof *mp, const size_t *ord, size_t n, stats_mem_id_fn fn, void *arg)
{
	int r = 0;

	for (size_t lo = 0, hi; lo < n && r == 0; lo = hi) {
		uint64_t sum = mp->ids[ord[lo]].n;

		hi = lo + 1;
		while (hi < n && sum <= MEM_EVENTS_MAX &&
		       sum + mp->ids[ord[hi]].n <= MEM_EVENTS_MAX)
			sum += mp->ids[ord[hi++]].n;
		r = batch(mp, ord, lo, hi, fn, arg);
	}
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
	xs_out_key_i64(o, ",\"end_time_ps\":", stats_mem_wadd(e->offset_ps, e->duration_ps));
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

int stats_mem_open(struct xs_rctx *rc, struct mprof **out)
{
	struct xprofs_xspace *x = rc->x;
	struct mprof *mp;
	size_t host = SIZE_MAX;
	int r = 0;

	*out = NULL;
	for (size_t pi = 0; pi < x->n_planes && host == SIZE_MAX; pi++)
		if (xs_str_eq(x->planes[pi].name, x->planes[pi].name_len, "/host:CPU"))
			host = pi; /* FindPlaneWithName(kHostThreadsPlaneName): the first */
	if (!(mp = calloc(1, sizeof(*mp))))
		return -ENOMEM;
	mp->rc = rc;
	mp->plane = host;
	if (host == SIZE_MAX)
		goto done;
	if ((r = xs_plane_enter(rc, host)) < 0)
		goto out;
	if (!(mp->skind = calloc(x->planes[host].st.n + 1, 1)) ||
	    !(mp->mem_line = calloc(x->planes[host].n_lines + 1, 1)) ||
	    !(mp->seen = calloc(MEM_IDS_MAX + 1, sizeof(*mp->seen)))) {
		r = -ENOMEM;
		goto out;
	}
	if ((r = stats_mem_walk(mp, 1)) < 0)
		goto out;
	if (mp->ids_full)
		stats_mem_add_error(
			mp, "more than %zu memory ids: the events of the others are left out",
			MEM_IDS_MAX);
	if (!(mp->ord = malloc((mp->nids + 1) * sizeof(*mp->ord)))) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < mp->nids; i++)
		mp->ord[i] = i;
	qsort_r(mp->ord, mp->nids, sizeof(*mp->ord), id_cmp, mp->ids);
done:
	*out = mp;
	mp = NULL;
out:
	stats_mem_close(mp);
	return r;
}

void stats_mem_close(struct mprof *mp)
{
	if (!mp)
		return;
	for (size_t i = 0; i < mp->nids; i++) {
		mid_drop_detail(&mp->ids[i]);
		free(mp->ids[i].name);
	}
	for (size_t i = 0; i < mp->nerrors; i++)
		free(mp->errors[i]);
	free(mp->ids);
	xprofs_table_free(mp->ids_tab);
	free(mp->skind);
	free(mp->mem_line);
	free(mp->seen);
	free(mp->ord);
	free(mp);
}

/* A stats_mem_id_fn: the entry of @m in memory_profile_per_allocator. */
static int json_id(void *arg, const struct mid *m, const struct mplan *pl, size_t k)
{
	return out_id(arg, m, pl, k == 0);
}

int stats_view_memory_profile(struct xs_rctx *rc, struct xs_out *o)
{
	struct mprof *mp;
	int r;

	if ((r = stats_mem_open(rc, &mp)) < 0)
		return r;
	if (mp->plane == SIZE_MAX) {
		OUT_LIT(o, "{\"num_hosts\":0,\"memory_ids\":[],\"version\":1,"
			   "\"memory_profile_per_allocator\":{},\"hlo_modules\":[]");
		goto done;
	}
	OUT_LIT(o, "{\"num_hosts\":1,\"memory_ids\":[");
	for (size_t i = 0; i < mp->nids; i++) {
		OUT_RAW(o, i ? "," : "");
		xs_out_str(o, mp->ids[mp->ord[i]].name, mp->ids[mp->ord[i]].len);
	}
	OUT_LIT(o, "],\"version\":1,\"memory_profile_per_allocator\":{");
	if ((r = stats_mem_details(mp, mp->ord, mp->nids, json_id, o)) < 0)
		goto out;
	OUT_LIT(o, "\n}");
	if ((r = out_hlo_modules(rc, o)) < 0)
		goto out;
done:
	out_errors(o, mp);
	r = xs_out_flush(o, false);
out:
	stats_mem_close(mp);
	return r;
}
