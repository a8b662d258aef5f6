#!/usr/bin/python3
"""tests/tools/test_cookbook.py - every `sh` block of docs/cookbook.md runs.

Mounts a demo logdir (xprofs-gen --demo) and runs each ```sh block of the
cookbook with bash -e -o pipefail, after the "Setup used by the recipes"
block, with MNT set to the mount: each must exit 0 and print something.
Also checks the cookbook has at least 15 recipes (## headings) and that
every ``` block is marked sh (run) or text (shown only). TAP output.
"""
import os
import re
import subprocess
import sys

import xmount

ROOT = os.environ.get("XPROFS_SOURCE_ROOT", ".")
BUILD = os.environ.get("XPROFS_BUILD_ROOT", "build")
GEN = os.path.join(BUILD, "tools", "xprofs-gen")
BOOK = os.path.join(ROOT, "docs", "cookbook.md")


def sections(text):
    """[(heading, [(lang, code)])] in order."""
    out, cur = [], None
    for m in re.finditer(r"^## ([^\n]+)$|^```(\w*)\n(.*?)^```$", text, re.M | re.S):
        if m.group(1):
            cur = (m.group(1), [])
            out.append(cur)
        elif cur is not None:
            cur[1].append((m.group(2), m.group(3)))
    return out


def body(t, w):
    text = open(BOOK).read()
    secs = sections(text)
    recipes = [s for s in secs if s[0] != "Setup used by the recipes"]
    t.ok(len(recipes) >= 15, "the cookbook has %d recipes (at least 15)" % len(recipes))
    langs = {lang for _, blocks in secs for lang, _ in blocks}
    t.ok(langs <= {"sh", "text"}, "every block is marked sh or text (%s)" % sorted(langs))
    setup = [c for h, blocks in secs if h == "Setup used by the recipes" for l, c in blocks if l == "sh"]
    t.ok(len(setup) == 1, "one setup block")
    demo = os.path.join(w.path, "src")
    subprocess.check_call([GEN, "--demo", demo], stdout=subprocess.DEVNULL)
    m = w.mount(demo)
    env = dict(os.environ, MNT=m.mnt, PATH=os.path.join(BUILD, "tools") + ":" + os.environ["PATH"])
    for head, blocks in secs:
        for lang, code in blocks:
            if lang != "sh":
                continue
            script = (setup[0] if head != "Setup used by the recipes" else "") + "\n" + code
            r = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], env=env,
                               capture_output=True, timeout=300)
            out = r.stdout.decode(errors="replace")
            t.ok(r.returncode == 0 and out.strip(), "recipe runs: %s" % head,
                 "exit %d\nstdout: %s\nstderr: %s" % (r.returncode, out[-800:],
                                                      r.stderr.decode(errors="replace")[-800:]))


if __name__ == "__main__":
    sys.exit(xmount.run("xprofs-cookbook-", body))
