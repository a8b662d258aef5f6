/*
 * json.c - the streaming JSON writer's out-of-line half: buffer growth and
 * sink writes, JSON string escaping, doubles (see json.h for the design).
 *
 * Limits: a string is escaped in a scratch buffer of at most 6 x XS_STR_MAX
 * bytes; without a sink the output stops at XS_OUT_MAX (-E2BIG).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xprofs/xspace.h"

void xs_out_init(struct xs_out *o, const struct xprofs_sink *sink)
{
	memset(o, 0, sizeof(*o));
	o->sink = sink;
	xprofs_buf_init(&o->esc, XS_STR_MAX * 6 + 64);
}

void xs_out_deinit(struct xs_out *o)
{
	if (!o->lent)
		free(o->buf);
	o->buf = NULL;
	o->len = o->cap = 0;
	xprofs_buf_deinit(&o->esc);
}

char *xs_out_steal(struct xs_out *o, size_t *len)
{
	char *p = o->buf;

	if (o->r || !p) {
		if (len)
			*len = 0;
		return NULL;
	}
	if (len)
		*len = o->len;
	p[o->len] = '\0';
	o->buf = NULL;
	o->len = o->cap = 0;
	return p;
}

static int out_write(struct xs_out *o)
{
	int r;

	if (o->lent) { /* the sink's own memory: the room is used up either way */
		if ((r = o->sink->commit(o->sink->arg, o->len)) < 0)
			o->r = r;
		o->buf = NULL;
		o->len = o->cap = 0;
		o->lent = false;
		return o->r;
	}
	if (o->len && (r = o->sink->write(o->sink->arg, o->buf, o->len)) < 0)
		o->r = r;
	o->len = 0;
	return o->r;
}

/* Make room for @n more bytes (plus a NUL for xs_out_steal()). */
int xs_out_room(struct xs_out *o, size_t n)
{
	size_t cap;
	char *p;

	if (o->sink && (o->len || o->lent) && out_write(o) < 0)
		return o->r;
	/* a sink that lends memory is asked first: its room spares a copy */
	if (o->sink && o->sink->room) {
		size_t got = 0;
		int err = 0;

		p = o->sink->room(o->sink->arg, n + 1 > XS_OUT_CHUNK ? n + 1 : XS_OUT_CHUNK, &got,
				  &err);
		if (p) {
			free(o->buf);
			o->buf = p;
			o->cap = got;
			o->lent = true;
			return 0;
		}
		if (err < 0) {
			o->r = err;
			return o->r;
		}
	}
	if (n < o->cap - o->len)
		return 0;
	if (n > XS_OUT_MAX - o->len - 1) {
		o->r = -E2BIG;
		return o->r;
	}
	cap = o->cap ? o->cap : (o->sink ? XS_OUT_CHUNK : 256);
	while (cap < o->len + n + 1)
		cap *= 2;
	p = realloc(o->buf, cap);
	if (!p) {
		o->r = -ENOMEM;
		return o->r;
	}
	o->buf = p;
	o->cap = cap;
	return 0;
}

void xs_out_str(struct xs_out *o, const char *s, size_t n)
{
	int r;

	if (o->r)
		return;
	xprofs_buf_reset(&o->esc);
	if ((r = xprofs_buf_add_json_str(&o->esc, s, n)) < 0) {
		o->r = r;
		return;
	}
	xs_out_add(o, o->esc.data, o->esc.len);
}

void xs_out_cstr(struct xs_out *o, const char *s)
{
	xs_out_str(o, s, strlen(s));
}

void xs_out_key_cstr(struct xs_out *o, const char *lit, const char *s)
{
	xs_out_add(o, lit, strlen(lit));
	xs_out_str(o, s, strlen(s));
}

const char xs_digits2[201] = "00010203040506070809101112131415161718192021222324"
			     "25262728293031323334353637383940414243444546474849"
			     "50515253545556575859606162636465666768697071727374"
			     "75767778798081828384858687888990919293949596979899";

void xs_out_opt_double(struct xs_out *o, const char *lit, bool has, double d)
{
	xs_out_add(o, lit, strlen(lit));
	if (has)
		xs_out_double(o, d);
	else
		OUT_LIT(o, "null");
}

void xs_out_double(struct xs_out *o, double d)
{
	char buf[40];
	int n;

	if (!isfinite(d)) {
		OUT_LIT(o, "null");
		return;
	}
	/* integral values (counters mostly) need no printf */
	if (d > -9007199254740992.0 && d < 9007199254740992.0 && d == (double)(int64_t)d) {
		xs_out_i64(o, (int64_t)d);
		return;
	}
	n = snprintf(buf, sizeof(buf), "%.15g", d);
	if (strtod(buf, NULL) != d)
		n = snprintf(buf, sizeof(buf), "%.17g", d);
	xs_out_add(o, buf, (size_t)n);
}

int xs_out_flush(struct xs_out *o, bool force)
{
	if (o->r || !o->sink || !force)
		return o->r;
	return out_write(o);
}

int xs_json_dup(const char *s, size_t n, char **out, size_t *out_len)
{
	struct xprofs_buf b;
	int r;

	xprofs_buf_init(&b, SIZE_MAX / 2);
	if ((r = xprofs_buf_add_json_str(&b, s, n)) < 0) {
		xprofs_buf_deinit(&b);
		return r;
	}
	*out = xprofs_buf_steal(&b, out_len);
	return 0;
}
