/*
 * fuzz_grpc_frames.c - libFuzzer target for the gRPC frame parser and the
 * incremental ProfileResponse parser. The first input byte picks a chunk
 * size so chunk boundaries are fuzzed too; the xspace bytes that come out
 * must never exceed what went in.
 */
#include <stdint.h>
#include <stdlib.h>

#include "capture-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct count {
	uint64_t n;
};

static int count_write(void *arg, const void *p, size_t n)
{
	((struct count *)arg)->n += n;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct count cnt = {0};
	struct capture_resp resp;
	struct capture_frames f;
	size_t chunk, off;

	if (size < 1)
		return 0;
	chunk = (size_t)data[0] % 17 + 1;
	data++;
	size--;
	capture_resp_init(&resp, (struct xprofs_sink){.write = count_write, .arg = &cnt});
	capture_frames_init(&f, &capture_resp_ops, &resp, 1 << 20, 1);
	for (off = 0; off < size; off += chunk) {
		size_t n = size - off < chunk ? size - off : chunk;

		if (capture_frames_feed(&f, data + off, n) < 0)
			break;
	}
	(void)capture_frames_finish(&f);
	if (cnt.n > size || cnt.n != resp.xspace_bytes)
		abort();
	capture_resp_deinit(&resp);
	return 0;
}
