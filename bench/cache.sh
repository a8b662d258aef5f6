#!/usr/bin/env bash
# bench/cache.sh - write and read back trace.json-like data through the cache
# (cache/): MB/s written (compress + write + commit, no fsync), MB/s read back
# sequentially in 128 KiB preads (verifying every byte), random 4 KiB preads
# per second, the compression ratio, and how much the peak RSS grew while
# writing (the writer's memory, bounded by one block whatever the size). Builds its own optimised binary from
# the module sources into bench/out/ (git-ignored); the cache directory is
# bench/out/cache-bench.d/ (on the same disk as the checkout) and is emptied
# after each run. Prints a markdown table; not a test.
#
#   bench/cache.sh                    # 1024 MiB JSON at 256 KiB blocks, plus
#                                     # 64/1024 KiB blocks and random data at 256 MiB
#   SIZE_MB=256 BLOCKS="256" bench/cache.sh
#   TRACE=path/trace.json bench/cache.sh   # also a real rendered trace (tiled);
#                                          # by default the TPU sample's trace is
#                                          # rendered with BUILD/tools/xprofs-decode
#                                          # when both exist (BUILD=build)
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE_MB=${SIZE_MB:-1024}
BLOCKS=${BLOCKS:-64 1024}
OUT=bench/out
mkdir -p "$OUT"
cc -std=gnu11 -O2 -DNDEBUG -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -Iinclude \
	bench/cache_bench.c cache/table.c cache/writer.c cache/reader.c cache/format.c util/*.c \
	-o "$OUT/cache-bench" -llz4 -lpthread
dir=$OUT/cache-bench.d
rm -rf "$dir"
echo "| data | size | block | write | seq read | random 4 KiB | ratio | writer peak RSS growth |"
echo "|---|---|---|---|---|---|---|---|"
"$OUT/cache-bench" "$dir" "$SIZE_MB" 256 json
small=$(( SIZE_MB < 256 ? SIZE_MB : 256 ))
for bs in $BLOCKS; do
	"$OUT/cache-bench" "$dir" "$small" "$bs" json
done
"$OUT/cache-bench" "$dir" "$small" 256 random
BUILD=${BUILD:-build}
SAMPLE=${SAMPLE:-../shared/samples/tpu_v6e_jax/tpu_inference_2.xplane.pb}
TRACE=${TRACE:-}
if [ -z "$TRACE" ] && [ -x "$BUILD/tools/xprofs-decode" ] && [ -f "$SAMPLE" ]; then
	TRACE=$OUT/sample-trace.json
	"$BUILD/tools/xprofs-decode" "$SAMPLE" --view trace >"$TRACE"
fi
if [ -n "$TRACE" ]; then
	"$OUT/cache-bench" "$dir" "$SIZE_MB" 256 "$TRACE"
fi
rm -rf "$dir"
