/*
 * buf.c - bounded growable buffers, growable arrays and JSON string escaping.
 * Growth doubles up to the buffer's max; an append that would pass max fails
 * with -E2BIG and leaves the buffer as it was. Arrays (xprofs_grow()) double
 * too; their callers bound the count.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xprofs/util.h"

void xprofs_buf_init(struct xprofs_buf *b, size_t max)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->max = max;
}

void xprofs_buf_deinit(struct xprofs_buf *b)
{
	free(b->data);
	xprofs_buf_init(b, b->max); /* empty and reusable, with the same max */
}

void xprofs_buf_reset(struct xprofs_buf *b)
{
	xprofs_buf_truncate(b, 0);
}

void xprofs_buf_truncate(struct xprofs_buf *b, size_t n)
{
	if (n >= b->len)
		return;
	b->len = n;
	if (b->data)
		b->data[n] = '\0';
}

/* Make room for @n more bytes plus the terminating NUL. */
static int buf_reserve(struct xprofs_buf *b, size_t n)
{
	size_t need, cap;
	char *p;

	if (n > b->max || b->len > b->max - n)
		return -E2BIG;
	need = b->len + n + 1;
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	if (cap > b->max + 1)
		cap = b->max + 1;
	p = realloc(b->data, cap);
	if (!p)
		return -ENOMEM;
	b->data = p;
	b->cap = cap;
	return 0;
}

int xprofs_grow(void *arrayp, size_t *cap, size_t n, size_t size, size_t first)
{
	size_t ncap;
	void *old, *nv;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : first;
	if (ncap < *cap || ncap > SIZE_MAX / size)
		return -ENOMEM;
	/* memcpy, not a cast to void **: @arrayp points to a pointer of another type. */
	memcpy(&old, arrayp, sizeof(old));
	nv = realloc(old, ncap * size);
	if (!nv)
		return -ENOMEM;
	memcpy(arrayp, &nv, sizeof(nv));
	*cap = ncap;
	return 0;
}

int xprofs_buf_add(struct xprofs_buf *b, const void *p, size_t n)
{
	int r = buf_reserve(b, n);

	if (r < 0)
		return r;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int xprofs_buf_adds(struct xprofs_buf *b, const char *s)
{
	return xprofs_buf_add(b, s, strlen(s));
}

int xprofs_buf_vprintf(struct xprofs_buf *b, const char *fmt, va_list ap)
{
	va_list cp;
	int n, r;

	va_copy(cp, ap);
	n = vsnprintf(NULL, 0, fmt, cp);
	va_end(cp);
	if (n < 0)
		return -EINVAL;
	r = buf_reserve(b, (size_t)n);
	if (r < 0)
		return r;
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int xprofs_buf_printf(struct xprofs_buf *b, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = xprofs_buf_vprintf(b, fmt, ap);
	va_end(ap);
	return r;
}

char *xprofs_buf_steal(struct xprofs_buf *b, size_t *len)
{
	char *p = b->data;

	if (len)
		*len = b->len;
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	return p;
}

size_t xprofs_utf8_seq_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, cp = c & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/* Bytes that go out as they are: printable ASCII but '"' and '\\' (one load per byte in the scan). */
#define JP1(c) [c] = 1
#define JP4(c) JP1(c), JP1(c + 1), JP1(c + 2), JP1(c + 3)
#define JP16(c) JP4(c), JP4(c + 4), JP4(c + 8), JP4(c + 12)
static const bool json_plain[256] = {
	JP1(0x20), JP1(0x21), JP1(0x23), JP4(0x24), JP4(0x28), JP4(0x2c), JP16(0x30), JP16(0x40),
	JP4(0x50), JP4(0x54), JP4(0x58), JP1(0x5d), JP1(0x5e), JP1(0x5f), JP16(0x60), JP16(0x70),
};
#undef JP16
#undef JP4
#undef JP1

/* The characters JSON escapes as a backslash and one character, and those characters. */
static const char json_short_from[] = "\"\\\n\r\t", json_short_to[] = "\"\\nrt";

int xprofs_buf_add_json_str(struct xprofs_buf *b, const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t start = b->len, i = 0, run;
	const char *short_esc;
	char esc[8];
	int r;

	if ((r = xprofs_buf_add(b, "\"", 1)) < 0)
		return r;
	while (i < n) {
		/* copy the longest run that needs no escaping in one append */
		run = i;
		while (run < n && json_plain[s[run]])
			run++;
		if (run > i) {
			if ((r = xprofs_buf_add(b, s + i, run - i)) < 0)
				goto fail;
			i = run;
			continue;
		}
		if (s[i] >= 0x80) {
			size_t l = xprofs_utf8_seq_len(s + i, n - i);

			if (l)
				r = xprofs_buf_add(b, s + i, l);
			else
				r = xprofs_buf_add(b, "\xef\xbf\xbd", 3), l = 1;
			if (r < 0)
				goto fail;
			i += l;
			continue;
		}
		short_esc = memchr(json_short_from, s[i], sizeof(json_short_from) - 1);
		if (short_esc) {
			esc[0] = '\\';
			esc[1] = json_short_to[short_esc - json_short_from];
			r = xprofs_buf_add(b, esc, 2);
		} else {
			snprintf(esc, sizeof(esc), "\\u%04x", s[i]);
			r = xprofs_buf_add(b, esc, 6);
		}
		if (r < 0)
			goto fail;
		i++;
	}
	if ((r = xprofs_buf_add(b, "\"", 1)) < 0)
		goto fail;
	return 0;
fail:
	b->len = start;
	if (b->data)
		b->data[start] = '\0';
	return r;
}

int xprofs_buf_add_json_member(struct xprofs_buf *b, const char *lit, const char *s)
{
	int r = xprofs_buf_adds(b, lit);

	if (r == 0)
		r = s ? xprofs_buf_add_json_str(b, s, strlen(s)) : xprofs_buf_adds(b, "null");
	return r;
}
