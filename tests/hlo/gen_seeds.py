"""tests/hlo/gen_seeds.py - write fuzz-hlo's seed corpus (tests/fuzz/corpus/hlo/).

    /usr/bin/python3 tests/hlo/gen_seeds.py BUILD_DIR

Seeds: the oracle's small well-formed module, each of its hostile protos,
the hostile buffer assignments of tests/decode/test_memory_viewer.py, and
two programs of xprofs-gen (BUILD_DIR/tools/xprofs-gen) as sidecars (with
their buffer assignments). Nothing is copied from the shared samples.
"""
import glob
import os
import subprocess
import sys
import tempfile

import oracle_hlo
import test_memory_viewer  # noqa: E402  (tests/decode, on the path oracle_hlo adds)

out = os.path.join(oracle_hlo.xproto.SRC, "tests", "fuzz", "corpus", "hlo")
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "good.pb"), "wb") as fh:
    fh.write(oracle_hlo.good().SerializeToString())
for label, data, _, _ in oracle_hlo.hostile_cases():
    with open(os.path.join(out, "hostile-" + label.replace(" ", "-").replace("^", "") + ".pb"),
              "wb") as fh:
        fh.write(data)
for label, data, _ in test_memory_viewer.hostile(oracle_hlo.hlo_pb2):
    with open(os.path.join(out, "buffers-" + label + ".pb"), "wb") as fh:
        fh.write(data)
with tempfile.TemporaryDirectory() as tmp:
    subprocess.run([os.path.join(sys.argv[1], "tools", "xprofs-gen"), "--kind", "gpu",
                    "--events", "1000", "--hosts", "1", "--logdir", tmp, "--run", "r",
                    "--session", "s", "--sidecars"], check=True)
    for f in sorted(glob.glob(os.path.join(tmp, "r/plugins/profile/s/*.hlo_proto.pb")))[:2]:
        with open(f, "rb") as src, open(os.path.join(out, "gen-" + os.path.basename(f)
                                                     .replace("(", "-").replace(")", "")),
                                        "wb") as dst:
            dst.write(src.read())
