/*
 * tests/fs/fuzz_path.c - libFuzzer target for what fs/ parses from FUSE and
 * the command line: mount-path classification (against a small runs index
 * built over the in-memory fake store of tests/lib, and without an index),
 * store path validation, size options, and slice names (steps/<n>,
 * window/<from>-<to>: a classified window is never empty or past 10^26 ps),
 * and /proc/self/mountinfo lines (the check for a FUSE mount at MOUNTPOINT).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fake_store.h"
#include "fs-internal.h"

static const char *const tree[] = {
	"plugins/profile/rootsess/r.xplane.pb",
	"tpu/plugins/profile/2025_01_01/host1.xplane.pb",
	"tpu/plugins/profile/2025_01_01/host2.xplane.pb",
	"gpu/gemm/plugins/profile/s1/a.xplane.pb",
	"gpu/gemm/deeper/plugins/profile/s2/b.xplane.pb",
	NULL,
};

static struct fake_store fake;
static struct fs_index *idx;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const xprofs_ps128 max_ps = (xprofs_ps128)100000000000000000LL * 1000000000; /* 10^26 */
	struct fs_target t;
	xprofs_ps128 from, to;
	uint32_t step;
	uint64_t v;
	char *s;

	if (!idx) {
		fake_store_init(&fake, tree);
		if (fs_index_build(&fake.base, &idx) < 0)
			abort();
	}
	if (size > 8192)
		return 0;
	s = malloc(size + 2);
	if (!s)
		return 0;
	s[0] = '/';
	memcpy(s + 1, data, size);
	s[size + 1] = '\0';
	if (fs_path_classify(idx, s, &t) == 0 && t.kind == FS_K_LOGDIR &&
	    !xprofs_store_path_valid(t.store_path))
		abort(); /* a classified mirror path must be a valid store path */
	if (fs_path_classify(idx, s, &t) == 0 && t.slice == FS_SLICE_WINDOW &&
	    !(t.from_ps >= 0 && t.from_ps < t.to_ps && t.to_ps < max_ps))
		abort(); /* a window name gives a non-empty window within its limits */
	if (xprofs_decode_window_parse((const char *)data, size, &from, &to) == 0 &&
	    !(from >= 0 && from < to && to < max_ps))
		abort();
	if (xprofs_decode_step_parse((const char *)data, size, &step) == 0 && step >= (1u << 20))
		abort();
	(void)fs_path_classify(NULL, s, &t);
	(void)fs_path_classify(idx, s + 1, &t);
	(void)xprofs_store_path_valid(s + 1);
	(void)xprofs_size_parse(s + 1, &v);
	(void)fs_is_profile_name(s + 1);
	{
		char type[64];

		if (fs_mountinfo_fuse_at(s + 1, "/mnt/x y", type, sizeof(type)) &&
		    strncmp(type, "fuse", 4))
			abort(); /* only FUSE types match */
	}
	free(s);
	return 0;
}
