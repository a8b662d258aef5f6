/*
 * fuzz_capture_line.c - libFuzzer target for the control-line grammar and the
 * per-open-file line assembly in front of it: the input (after its first
 * byte, which picks the size of the pieces it is written in) goes through
 * capture_asm_feed()/capture_asm_end() as a control file would receive it,
 * and every whole line is parsed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "capture-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_line(const char *line, size_t len)
{
	static struct capture_req q;
	struct xprofs_buf why;

	/* what the assembler hands on is one line within the limit */
	if (len > CAPTURE_MAX_LINE || memchr(line, '\n', len))
		abort();
	if (capture_line_blank(line, len))
		return;
	xprofs_buf_init(&why, 4096);
	if (capture_line_parse(line, len, &q, &why) == 0) {
		/* what was accepted must be safe to use as paths */
		if (q.has_run && q.run[0] && !xprofs_capture_run_valid(q.run, strlen(q.run)))
			abort();
		if (q.session[0] && !capture_name_valid(q.session, strlen(q.session)))
			abort();
		if (q.n_hosts > CAPTURE_MAX_HOSTS || q.n_adv > CAPTURE_MAX_ADV)
			abort();
		for (size_t i = 0; i < q.n_hosts; i++)
			if (!strchr(q.hosts[i], ':') || strchr(q.hosts[i], '/'))
				abort();
		for (size_t i = 0; i < q.n_adv; i++)
			if (!q.adv[i].key[0] || strchr(q.adv[i].key, '='))
				abort();
	}
	xprofs_buf_deinit(&why);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct capture_asm a;
	size_t step, pos, used, len;
	const char *p = (const char *)data + 1, *line;

	if (size == 0)
		return 0;
	step = (size_t)data[0] * 37 + 1; /* 1 .. 9436: pieces below and above the limit */
	size--;
	capture_asm_init(&a);
	for (pos = 0; pos < size;) {
		size_t k = size - pos < step ? size - pos : step, off = 0;

		while (off < k) {
			int r = capture_asm_feed(&a, p + pos + off, k - off, &used, &line, &len);

			if (used == 0 || used > k - off)
				abort(); /* always progresses, never past the piece */
			off += used;
			if (r == 1)
				check_line(line, len);
		}
		pos += k;
	}
	if (capture_asm_end(&a, &line, &len))
		check_line(line, len);
	return 0;
}
