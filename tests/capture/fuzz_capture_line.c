/* fuzz_capture_line.c - libFuzzer target for the control-line grammar. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "capture-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct capture_req q;
	struct xprofs_buf why;

	xprofs_buf_init(&why, 4096);
	if (capture_line_parse((const char *)data, size, &q, &why) == 0) {
		/* what was accepted must be safe to use as paths */
		if (q.has_run && q.run[0] && !capture_run_valid(q.run, strlen(q.run)))
			abort();
		if (q.session[0] && !capture_name_valid(q.session, strlen(q.session)))
			abort();
		if (q.n_hosts > CAPTURE_MAX_HOSTS || q.n_adv > CAPTURE_MAX_ADV)
			abort();
		for (size_t i = 0; i < q.n_hosts; i++)
			if (!strchr(q.hosts[i], ':') || strchr(q.hosts[i], '/'))
				abort();
	}
	xprofs_buf_deinit(&why);
	return 0;
}
