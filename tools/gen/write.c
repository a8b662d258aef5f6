/*
 * write.c - the streaming writer: a counting pass sizes every line, a
 * writing pass regenerates and emits it, so memory is O(lines + metadata),
 * never O(events); plus size calibration and the --stats record.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gen.h"

/* ---- output ----------------------------------------------------------- */

static void out_flush(struct out *o)
{
	int r;

	if (o->err || !o->len)
		return;
	r = xprofs_write_full(o->fd, o->buf, o->len);
	if (r < 0)
		o->err = r;
	o->len = 0;
}

static void out_put(struct out *o, const void *p, size_t n)
{
	if (o->err)
		return;
	o->total += n;
	if (o->len + n > OUT_BUF_BYTES) {
		out_flush(o);
		if (n > OUT_BUF_BYTES) {
			int r = xprofs_write_full(o->fd, p, n);

			if (r < 0)
				o->err = r;
			return;
		}
	}
	memcpy(o->buf + o->len, p, n);
	o->len += n;
}

static void out_tag_len(struct out *o, unsigned field, uint64_t len)
{
	uint8_t tmp[20];
	size_t n = xprofs_put_varint(tmp, (uint64_t)field << 3 | WT_LEN);

	n += xprofs_put_varint(tmp + n, len);
	out_put(o, tmp, n);
}

/* Line fields before the events (1 id, 2 name, 3 timestamp_ns) into @h. */
static void line_head(const struct gline *l, struct pb *h)
{
	h->len = 0;
	if (l->id)
		pb_int(h, 1, (uint64_t)l->id);
	pb_str(h, 2, l->name);
	if (l->timestamp_ns)
		pb_int(h, 3, (uint64_t)l->timestamp_ns);
}

/* Line fields after the events (9 duration_ps, 10 display_id, 11 display_name). */
static void line_tail(const struct gline *l, int64_t end_ps, struct pb *h)
{
	h->len = 0;
	if (end_ps > 0)
		pb_int(h, 9, (uint64_t)end_ps);
	if (l->display_id)
		pb_int(h, 10, (uint64_t)l->display_id);
	if (l->display_name[0])
		pb_str(h, 11, l->display_name);
}

/*
 * Runs the events of line @l once: with @o == NULL only sizes them into
 * l->body_size; otherwise writes the whole line (tag, length, body) to @o,
 * regenerating exactly the events the sizing pass saw.
 */
static int line_run(const struct gspace *s, const struct gplane *p, struct gline *l,
		    struct pb *scratch, struct out *o, uint64_t *event_bytes)
{
	struct lgen g;
	uint64_t body = 0;
	int64_t end = 0;

	line_head(l, scratch);
	if (scratch->err)
		return scratch->err;
	body += scratch->len;
	if (o) {
		out_tag_len(o, 3, l->body_size);
		out_put(o, scratch->p, scratch->len);
	}
	gen_lgen_init(&g, s, l);
	for (uint64_t i = 0; i < l->events; i++) {
		gen_event(s, p, l, &g, scratch);
		if (scratch->err)
			return scratch->err;
		body += ld_size(4, scratch->len);
		*event_bytes += ld_size(4, scratch->len);
		if (o) {
			out_tag_len(o, 4, scratch->len);
			out_put(o, scratch->p, scratch->len);
		}
	}
	/* the line's duration: the end of its last top-level event */
	for (int d = 0; d < g.depth; d++)
		if (g.st[d].end > end)
			end = g.st[d].end;
	if (g.t > end)
		end = g.t;
	line_tail(l, l->events ? end : 0, scratch);
	if (scratch->err)
		return scratch->err;
	body += scratch->len;
	if (o) {
		out_put(o, scratch->p, scratch->len);
		if (body != l->body_size) {
			xprofs_err("xprofs-gen: internal error: line '%s' sized %" PRIu64
				   " but wrote %" PRIu64,
				   l->name, l->body_size, body);
			return -EPROTO;
		}
		return o->err;
	}
	l->body_size = body;
	return 0;
}

/*
 * Writes the whole XSpace of @s to @o: for each plane, a sizing pass over
 * its lines, then the plane header, its lines and its metadata.
 */
int gen_space_write(struct gspace *s, struct out *o, struct gstats *st)
{
	struct pb scratch, meta, head;
	int ret = 0;

	pb_init(&scratch, SCRATCH_BYTES);
	pb_init(&meta, MAX_META_BYTES);
	pb_init(&head, SCRATCH_BYTES);
	memset(st, 0, sizeof(*st));
	for (size_t pi = 0; pi < s->n_planes; pi++) {
		struct gplane *p = &s->planes[pi];
		uint64_t body, ignored = 0;

		meta.len = 0;
		ret = gen_plane_meta(s, p, &meta);
		if (ret)
			goto out;
		head.len = 0;
		if (p->id)
			pb_int(&head, 1, (uint64_t)p->id);
		pb_str(&head, 2, p->name);
		if (head.err) {
			ret = head.err;
			goto out;
		}
		body = head.len + meta.len;
		for (size_t li = 0; li < p->n_lines; li++) {
			ret = line_run(s, p, &p->lines[li], &scratch, NULL, &st->event_bytes);
			if (ret)
				goto out;
			body += ld_size(3, p->lines[li].body_size);
			st->events += p->lines[li].events;
		}
		if (o) {
			out_tag_len(o, 1, body);
			out_put(o, head.p, head.len);
			for (size_t li = 0; li < p->n_lines; li++) {
				ret = line_run(s, p, &p->lines[li], &scratch, o, &ignored);
				if (ret)
					goto out;
			}
			out_put(o, meta.p, meta.len);
		}
		st->bytes += ld_size(1, body);
	}
	head.len = 0;
	pb_str(&head, 4, s->host);
	if (head.err) {
		ret = head.err;
		goto out;
	}
	if (o) {
		out_put(o, head.p, head.len);
		out_flush(o);
		ret = o->err;
	}
	st->bytes += head.len;
out:
	pb_deinit(&head);
	pb_deinit(&meta);
	pb_deinit(&scratch);
	return ret;
}

#define PROBE_EVENTS 200000

/* Sizes (without writing) a plan of @events events: fixed and per-event bytes. */
static int probe_size(enum kind kind, uint64_t seed, unsigned flags, const char *host,
		      uint64_t events, struct gspace *s, uint64_t *fixed, double *per_event)
{
	struct gstats st;
	int ret;

	ret = gen_plan_build(s, kind, seed, host, events, flags);
	if (ret)
		return ret;
	ret = gen_space_write(s, NULL, &st);
	gen_plan_free(s);
	if (ret)
		return ret;
	*fixed = st.bytes - st.event_bytes;
	*per_event = events ? (double)st.event_bytes / (double)events : 1;
	return 0;
}

/*
 * Chooses the event count for an approximate file size of @target bytes.
 * Bytes per event grow slowly with the profile (longer spans need longer
 * varints, more threads, more distinct ops), so a 200k-event probe gives a
 * first estimate and further probes refine it: near the count itself for
 * small files, at 1/8 of it for big ones. The probes only size, they write
 * nothing, so big files cost at most ~15% extra work.
 */
int gen_events_for_size(enum kind kind, uint64_t seed, unsigned flags, const char *host,
			uint64_t target, uint64_t *events)
{
	struct gspace *s = calloc(1, sizeof(*s));
	uint64_t probe = PROBE_EVENTS, fixed, e = 1;
	double per;
	int ret;

	if (!s)
		return -ENOMEM;
	for (int round = 0; round < 8; round++) {
		uint64_t next;

		ret = probe_size(kind, seed, flags, host, probe, s, &fixed, &per);
		if (ret)
			goto out;
		e = target > fixed ? (uint64_t)((double)(target - fixed) / per) : 1;
		if (e < 1)
			e = 1;
		if (e > 8 * PROBE_EVENTS) {
			/* metadata no longer grows: a probe at 1/8 of it is representative */
			if (probe >= e / 8)
				break;
			next = e / 8;
		} else {
			/* metadata grows with events: converge on the count itself (damped) */
			if (e >= probe - probe / 20 && e <= probe + probe / 20)
				break;
			next = (e + probe) / 2;
		}
		if (next == probe)
			break;
		probe = next;
	}
	*events = e > MAX_EVENTS ? MAX_EVENTS : e;
out:
	free(s);
	return ret;
}

/* Appends the --stats record of one written file to @j (all arguments borrowed). */
int gen_stats_json(const struct gspace *s, const char *path, const struct gstats *st,
		   struct xprofs_buf *j)
{
	int r = 0;

	r = r ? r : xprofs_buf_adds(j, j->len > 1 ? ",{\"file\":" : "{\"file\":");
	r = r ? r : xprofs_buf_add_json_str(j, path, strlen(path));
	r = r ? r : xprofs_buf_adds(j, ",\"host\":");
	r = r ? r : xprofs_buf_add_json_str(j, s->host, strlen(s->host));
	r = r ? r
	      : xprofs_buf_printf(j,
				  ",\"kind\":\"%s\",\"seed\":%" PRIu64 ",\"bytes\":%" PRIu64
				  ",\"events\":%" PRIu64 ",\"span_ps\":%" PRId64 ",\"planes\":[",
				  gen_kind_names[s->kind], s->seed, st->bytes, st->events,
				  s->span_ps);
	for (size_t pi = 0; pi < s->n_planes && !r; pi++) {
		const struct gplane *p = &s->planes[pi];
		uint32_t nem = 0;

		for (int c = 0; c < EM_COUNT; c++)
			nem += p->em_n[c];
		r = r ? r
		      : xprofs_buf_printf(j, "%s{\"id\":%" PRId64 ",\"name\":", pi ? "," : "",
					  p->id);
		r = r ? r : xprofs_buf_add_json_str(j, p->name, strlen(p->name));
		r = r ? r
		      : xprofs_buf_printf(j,
					  ",\"event_metadata\":%u,\"stat_metadata\":%u,"
					  "\"stats\":%u,\"lines\":[",
					  nem, p->n_stat_meta, p->n_plane_stats);
		for (size_t li = 0; li < p->n_lines && !r; li++) {
			const struct gline *l = &p->lines[li];

			r = r ? r
			      : xprofs_buf_printf(
					j, "%s{\"id\":%" PRId64 ",\"name\":", li ? "," : "", l->id);
			r = r ? r : xprofs_buf_add_json_str(j, l->name, strlen(l->name));
			r = r ? r : xprofs_buf_printf(j, ",\"events\":%" PRIu64 "}", l->events);
		}
		r = r ? r : xprofs_buf_adds(j, "]}");
	}
	/* the allocator traffic's peak, as memory_profile.json must find it (docs/memory.md) */
	r = r ? r : xprofs_buf_adds(j, "],\"memory\":[");
	for (size_t pi = 0; pi < s->n_planes && !r; pi++) {
		const struct gplane *p = &s->planes[pi];
		uint64_t n;
		int64_t peak;

		if (p->kind != P_HOST)
			continue;
		peak = gen_memory_peak(s, p, &n);
		if (!n)
			continue;
		r = r ? r : xprofs_buf_adds(j, "{\"memory_id\":");
		r = r ? r : xprofs_buf_add_json_str(j, gen_memory_id(s), strlen(gen_memory_id(s)));
		r = r ? r
		      : xprofs_buf_printf(j, ",\"peak_bytes\":%" PRId64 ",\"events\":%" PRIu64 "}",
					  peak, n);
	}
	r = r ? r : xprofs_buf_adds(j, "]}");
	return r;
}
