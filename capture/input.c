/*
 * input.c - what is written to one open control file becomes commands, one
 * per line: bytes are assembled per open file until '\n' or close, so a line
 * split over two write()s is one command and several lines in one write()
 * are several commands, each acted on in order.
 *
 * Design: the assembler (capture_asm_*) is pure and allocation-free (fuzzed
 * with the line parser by fuzz-capture-line); the input object adds the
 * manager. A write() returns how many bytes it consumed: when a line in the
 * middle of a write is rejected, the write is short (it ends before that
 * line), so the writer's retry starts with the rejected line and fails with
 * its error -- exactly what a caller of write() expects; the retry is not
 * acted on or recorded twice (the input remembers the line it just refused).
 * A line that passes CAPTURE_MAX_LINE is refused as soon as it does, with
 * the limit in the reason, and its rest (up to its '\n') is dropped.
 * Blank lines and '#' comments are skipped.
 *
 * Limits: CAPTURE_MAX_LINE bytes per line held per open file.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "capture-internal.h"

struct xprofs_capture_input {
	char *run; /* owned; NULL: the top-level control file */
	/* the line refused last, its length and its error: a short write's retry */
	uint64_t rej_hash;
	size_t rej_len;
	int rej_err;
	bool short_write; /* the last write() ended before a refused line */
	struct capture_asm a;
};

void capture_asm_init(struct capture_asm *a)
{
	a->len = 0;
	a->overflow = false;
}

int capture_asm_feed(struct capture_asm *a, const char *p, size_t n, size_t *used,
		     const char **line, size_t *len)
{
	size_t pos = 0;

	for (;;) {
		const char *nl = memchr(p + pos, '\n', n - pos);
		size_t seg = nl ? (size_t)(nl - (p + pos)) : n - pos;

		if (a->overflow) {
			/* the rest of a line already refused as too long */
			pos += seg + (nl ? 1 : 0);
			if (!nl) {
				*used = pos;
				return 0;
			}
			a->overflow = false;
			continue;
		}
		if (a->len + seg > CAPTURE_MAX_LINE) {
			a->len = 0;
			a->overflow = !nl;
			*used = pos + seg + (nl ? 1 : 0);
			return -EMSGSIZE;
		}
		if (!nl) {
			memcpy(a->buf + a->len, p + pos, seg);
			a->len += seg;
			*used = n;
			return 0;
		}
		*used = pos + seg + 1;
		if (a->len) {
			memcpy(a->buf + a->len, p + pos, seg);
			*line = a->buf;
			*len = a->len + seg;
			a->len = 0;
		} else {
			*line = p + pos;
			*len = seg;
		}
		return 1;
	}
}

int capture_asm_end(struct capture_asm *a, const char **line, size_t *len)
{
	bool had = a->len > 0;

	*line = a->buf;
	*len = a->len;
	a->len = 0;
	a->overflow = false;
	return had ? 1 : 0;
}

bool capture_line_blank(const char *line, size_t len)
{
	size_t i = 0;

	while (i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
		i++;
	return i == len || line[i] == '#';
}

int xprofs_capture_input_new(const char *run, struct xprofs_capture_input **out)
{
	struct xprofs_capture_input *in = calloc(1, sizeof(*in));

	if (!in)
		return -ENOMEM;
	if (run) {
		in->run = strdup(run);
		if (!in->run) {
			free(in);
			return -ENOMEM;
		}
	}
	capture_asm_init(&in->a);
	*out = in;
	return 0;
}

void xprofs_capture_input_free(struct xprofs_capture_input *in)
{
	if (!in)
		return;
	free(in->run);
	free(in);
}

/*
 * input_line() - act on one whole line; 0 or the -errno it was refused with.
 * @retry: the line opens the write after a short one: if it is the line
 * refused then, give the same error without acting on or recording it again.
 */
static int input_line(struct xprofs_capture *c, struct xprofs_capture_input *in, const char *line,
		      size_t len, bool retry, struct xprofs_buf *reason)
{
	uint64_t h;

	if (capture_line_blank(line, len))
		return 0;
	h = xprofs_hash64(line, len);
	if (retry && in->rej_err && in->rej_len == len && in->rej_hash == h)
		return in->rej_err;
	in->rej_hash = h;
	in->rej_len = len;
	in->rej_err = xprofs_capture_submit(c, in->run, line, len, reason);
	return in->rej_err;
}

ssize_t xprofs_capture_input_write(struct xprofs_capture *c, struct xprofs_capture_input *in,
				   const char *p, size_t n, struct xprofs_buf *reason)
{
	bool retry = in->short_write;
	size_t done = 0, used;
	const char *line;
	size_t len;
	int r;

	in->short_write = false;
	while (done < n) {
		r = capture_asm_feed(&in->a, p + done, n - done, &used, &line, &len);
		if (r == 0)
			return (ssize_t)n;
		if (r < 0 && done) {
			capture_asm_init(&in->a); /* the retry starts with the long line */
			in->short_write = true;
			in->rej_err = 0;
			return (ssize_t)done;
		}
		if (r < 0) {
			capture_reject(c, in->run, p, used, reason,
				       "line too long: a control line is at most %d bytes",
				       CAPTURE_MAX_LINE);
			return -EINVAL;
		}
		r = input_line(c, in, line, len, retry && !done, reason);
		if (r < 0 && done) {
			in->short_write = true; /* the retry starts with this line */
			return (ssize_t)done;
		}
		if (r < 0)
			return r;
		done += used;
	}
	return (ssize_t)done;
}

int xprofs_capture_input_close(struct xprofs_capture *c, struct xprofs_capture_input *in,
			       struct xprofs_buf *reason)
{
	const char *line;
	size_t len;

	if (!capture_asm_end(&in->a, &line, &len))
		return 0;
	in->short_write = false;
	return input_line(c, in, line, len, false, reason);
}
