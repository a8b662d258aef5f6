#!/usr/bin/python3
"""test_memory_viewer.py - memory_viewer.json against oracle_memory_viewer.py (TAP).

- A generated GPU session (xprofs-gen --sidecars): every sidecar carries the
  generator's buffer assignment, whose peaks are also checked as worked out
  by hand (docs/memory.md "Generated buffer assignment").
- Hostile programs as sidecars: ids that point nowhere, a heap trace that
  never frees, huge and negative sizes, a buffer freed twice, a trace over
  two allocations, an unknown event kind, a SHARE_WITH cycle, an
  instruction id of none, odd shape indices, an empty assignment and a
  malformed one: strict JSON, the oracle's objects, XProf's errors.
- The shared samples (skipped with a message when ../shared is absent):
  their metadata planes' and sidecars' programs with buffer assignments are
  all listed and equal the oracle's.
- The jq recipes of docs/memory.md marked memory_viewer.json, and a real
  mount (when one can be made): the host lists memory_viewer.json and it is
  the CLI's bytes.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys

import oracle_memory_viewer as oracle
import xcheck
import xmount
import xproto
import xtap

from xproto import CLI, GEN, SHARED


def strict(raw):
    def bad(c):
        raise ValueError("non-JSON constant %s" % c)
    return json.loads(raw, parse_constant=bad)


def render(host, sidecars):
    args = [CLI, host, "--view", "memory_viewer"]
    for s in sidecars:
        args += ["--hlo", s]
    r = subprocess.run(args, capture_output=True)
    return r.returncode, r.stdout, r.stderr.decode(errors="replace")[-300:]


def sidecar_id(path):
    b = os.path.basename(path)
    return int(b[b.rindex("(") + 1:b.rindex(")")])


def expected(xpb2, hpb2, host, sidecars):
    xs = xpb2.XSpace()
    with open(host, "rb") as f:
        xs.ParseFromString(f.read())
    protos = [(oracle.u64(pid), raw, "metadata") for pid, raw in xproto.hlo_protos(xs)]
    for s in sidecars:
        with open(s, "rb") as f:
            protos.append((sidecar_id(s), f.read(), "sidecar"))
    return oracle.view(protos, hpb2)


def check(t, label, xpb2, hpb2, host, sidecars):
    """Render, parse strictly, compare with the oracle; the parsed view or None."""
    rc, out, err = render(host, sidecars)
    got = None
    try:
        got = strict(out) if rc == 0 else None
    except ValueError as e:
        err = str(e)
    if not t.ok(got is not None, "%s: memory_viewer renders strict JSON" % label, err):
        return None
    progs, notes = expected(xpb2, hpb2, host, sidecars)
    have = {p["program_id"]: p for p in got["programs"]}
    t.ok(sorted(have) == sorted(progs), "%s: the programs with a buffer assignment (%d)" %
         (label, len(progs)), (sorted(have), sorted(progs)))
    bad = [(pid, xcheck.diff_json(have[pid], progs[pid])) for pid in progs
           if pid in have and xcheck.diff_json(have[pid], progs[pid])]
    t.ok(not bad, "%s: every program equals the recomputation" % label, bad[:3])
    t.ok(got["errors"] == notes, "%s: errors as the recomputation's" % label,
         (got["errors"], notes))
    return got


def by_module(got):
    return {p["module_name"]: p for p in got["programs"]}


def hand(t, got):
    """The generator's assignment (docs/memory.md), by hand."""
    p = got["programs"][0]
    t.ok(len(got["programs"]) == 12 and all(q["source"] == "sidecar" for q in got["programs"]),
         "generated: the 12 sidecars are listed (the metadata plane's copies have none)",
         [(q["program_id"], q["source"]) for q in got["programs"]])
    # parameters 2 x 512 KiB + live-out tuple 16 B + its element 1 MiB, held throughout
    indef = 2 * 524288 + 16 + 1048576
    # the trace: 1M, 3M, 3M+4K, 2M+4K, (14 shares 11), 5M+4K = peak at event 5
    heap = [0, 1, 3, 3, 2, 2, 5, 5, 5, 3, 0]
    small = [0, 0, 0, 4096, 4096, 4096, 4096, 4096, 0, 0, 0]
    t.ok(p["peak_heap_bytes"] == 5 * 1048576 + 4096 + indef and
         p["peak_heap_size_position"] == 5 and p["indefinite_memory_usage_bytes"] == indef,
         "hand: peak 5 MiB + 4 KiB over 2 MiB + 16 B held, at event 5",
         (p["peak_heap_bytes"], p["peak_heap_size_position"]))
    t.ok(p["heap_sizes"] == [(h * 1048576 + s + indef) / 1048576 for h, s in zip(heap, small)],
         "hand: the heap size timeline (11 points)", p["heap_sizes"])
    t.ok(p["peak_logical_buffer_ids"] == [11, 12, 13], "hand: 11, 12, 13 live at the peak",
         p["peak_logical_buffer_ids"])
    t.ok([o["logical_buffer_id"] for o in p["max_heap"]] == [0, 1, 3, 11, 13, -1] and
         p["max_heap"][-1]["size_bytes"] == 16 + 4096,
         "hand: heap objects (the 16 B tuple and 4 KiB buffer fold into \"small\")",
         [(o["logical_buffer_id"], o["size_bytes"]) for o in p["max_heap"]])
    sp = {s["memory_color"]: s for s in p["memory_spaces"]}
    t.ok(sorted(sp) == [0, 1] and sp[1]["peak_heap_bytes"] == 98304 and
         sp[1]["heap_simulator_trace_id"] == 1 and sp[0]["peak_heap_bytes"] == p["peak_heap_bytes"],
         "hand: memory color 1 peaks at 96 KiB on its own trace", p["memory_spaces"])
    t.ok(p["logical_buffer_spans"]["11"] == {"start": 1, "limit": 8} and
         p["logical_buffer_spans"]["13"] == {"start": 5, "limit": 9},
         "hand: 11 lives from event 1 to its last sharer's free (8)", p["logical_buffer_spans"])


def generated(t, xpb2, hpb2, tmp):
    d = os.path.join(tmp, "gen")
    r = subprocess.run([GEN, "--kind", "gpu", "--events", "2000", "--hosts", "1", "--logdir", d,
                        "--run", "r", "--session", "s", "--sidecars"], capture_output=True)
    if not t.ok(r.returncode == 0, "xprofs-gen writes a GPU session with sidecars",
                r.stderr[-300:]):
        return None, []
    s = os.path.join(d, "r", "plugins", "profile", "s")
    host = glob.glob(os.path.join(s, "*.xplane.pb"))[0]
    sidecars = sorted(glob.glob(os.path.join(s, "*.hlo_proto.pb")))
    got = check(t, "generated", xpb2, hpb2, host, sidecars)
    if got:
        hand(t, got)
    rc, out, _ = render(host, [])
    t.ok(rc == 0 and strict(out)["programs"] == [],
         "generated without sidecars: no program (the metadata plane's have no assignment)",
         out[:200])
    return host, sidecars


# ---- hostile programs ---------------------------------------------------------

def base(hpb2, name):
    """A program of four instructions: p0 f32[1024], a f32[4096,4], b f32[8192], t (a, b)."""
    h = hpb2.HloProto()
    m = h.hlo_module
    m.name, m.entry_computation_name = name, "main"
    c = m.computations.add()
    c.name, c.id, c.root_id = "main", 100, 4
    for iid, nm, op, dims in ((1, "p0", "parameter", [1024]), (2, "a", "add", [4096, 4]),
                              (3, "b", "multiply", [8192]), (4, "t", "tuple", None)):
        i = c.instructions.add()
        i.id, i.name, i.opcode = iid, nm, op
        i.metadata.op_name = "jit(%s)/%s" % (name, nm)
        if dims is None:
            i.shape.element_type = 13
            for d in ([4096, 4], [8192]):
                e = i.shape.tuple_shapes.add()
                e.element_type = 11
                e.dimensions.extend(d)
        else:
            i.shape.element_type = 11
            i.shape.dimensions.extend(dims)
    return h


def lb(ba, bid, size, instr, sidx=(), color=0):
    x = ba.logical_buffers.add()
    x.id, x.size, x.color = bid, size, color
    x.defined_at.instruction_id = instr
    x.defined_at.shape_index.extend(sidx)


def alloc(ba, index, size, ids, sizes=None, **flags):
    a = ba.buffer_allocations.add()
    a.index, a.size = index, size
    for k, v in flags.items():
        setattr(a, k, v)
    for i, bid in enumerate(ids):
        s = a.assigned.add()
        s.logical_buffer_id, s.size = bid, (sizes or {}).get(bid, 65536)
    return a


def trace(ba, events):
    tr = ba.heap_simulator_traces.add()
    for ev in events:
        e = tr.events.add()
        e.kind, e.buffer_id = ev[0], ev[1]
        e.instruction_name = "i%d" % ev[1]
        if len(ev) > 2:
            e.share_with_canonical_id = ev[2]
    return tr


def temps(h, sizes=(65536, 131072, 32768)):
    """Buffers 10.. of instructions 2, 3, 4 in temporary allocation 1; parameter 0 in 0."""
    ba = h.buffer_assignment
    lb(ba, 1, 4096, 1)
    alloc(ba, 0, 4096, [1], is_entry_computation_parameter=True)
    for k, s in enumerate(sizes):
        lb(ba, 10 + k, s, 2 + k)
    alloc(ba, 1, oracle.i64(sum(sizes)), [10 + k for k in range(len(sizes))])
    return ba


def hostile(hpb2):
    """[(name, HloProto bytes, what the program's object must show)]."""
    A, F, S = 0, 1, 2
    out = []

    h = base(hpb2, "dangling")
    ba = temps(h)
    ba.buffer_allocations[1].assigned.add().logical_buffer_id = 999
    trace(ba, [(A, 10), (A, 777), (S, 11, 555), (A, 11), (F, 10), (F, 11)])
    out.append(("dangling", h.SerializeToString(),
                lambda p: p["error"] is None and p["peak_heap_bytes"] == 65536 + 131072 + 4096))

    h = base(hpb2, "nofree")
    ba = temps(h)
    trace(ba, [(A, 10), (A, 11), (A, 12)])
    out.append(("nofree", h.SerializeToString(),
                lambda p: p["error"] is None and p["peak_heap_size_position"] == 2 and
                p["logical_buffer_spans"]["10"] == {"start": 0, "limit": 2} and
                p["peak_logical_buffer_ids"] == [10, 11, 12]))

    h = base(hpb2, "huge")
    ba = temps(h, sizes=((1 << 63) - 1, -5, 1 << 40))
    ba.buffer_allocations[1].size = -1
    trace(ba, [(A, 10), (A, 11), (A, 12)])
    out.append(("huge", h.SerializeToString(), lambda p: p["error"] is None))

    h = base(hpb2, "twice")
    ba = temps(h)
    trace(ba, [(A, 10), (F, 10), (F, 10)])
    out.append(("twice", h.SerializeToString(),
                lambda p: "Buffer 10 is freed multiple times." in (p["error"] or "")))

    h = base(hpb2, "twoallocs")
    ba = temps(h)
    trace(ba, [(A, 10), (A, 1), (F, 10), (F, 1)])
    out.append(("twoallocs", h.SerializeToString(),
                lambda p: "single buffer allocation" in (p["error"] or "")))

    h = base(hpb2, "badkind")
    ba = temps(h)
    trace(ba, [(A, 10), (7, 10)])
    out.append(("badkind", h.SerializeToString(),
                lambda p: "Unhandled event kind: 7" in (p["error"] or "")))

    h = base(hpb2, "cycle")
    ba = temps(h)
    trace(ba, [(A, 10), (S, 11, 10), (S, 10, 11)])
    out.append(("cycle", h.SerializeToString(), lambda p: "cycle" in (p["error"] or "")))

    h = base(hpb2, "noinstr")
    ba = temps(h)
    ba.logical_buffers[2].defined_at.instruction_id = 12345
    trace(ba, [(A, 10), (A, 11), (F, 11), (F, 10)])
    out.append(("noinstr", h.SerializeToString(),
                lambda p: p["error"] is None and p["peak_heap_bytes"] == 65536 + 4096))

    h = base(hpb2, "shapeidx")
    ba = temps(h)
    ba.logical_buffers[3].defined_at.instruction_id = 4
    ba.logical_buffers[3].defined_at.shape_index.extend([-1])
    lb(ba, 20, 65536, 4, (1,))
    lb(ba, 21, 65536, 4, (7,))
    alloc(ba, 2, 131072, [20, 21], maybe_live_out=True)
    trace(ba, [(A, 10), (A, 12), (F, 12), (F, 10)])
    out.append(("shapeidx", h.SerializeToString(),
                lambda p: p["error"] is None and
                any(o.get("instruction_name") == "t{1}" and o["shape_string"] == "f32[8192]"
                    for o in p["max_heap"])))

    h = base(hpb2, "sparse")  # instruction ids too far apart for a plain array
    h.hlo_module.computations[0].instructions[3].id = 1 << 40
    h.hlo_module.computations[0].root_id = 1 << 40
    ba = temps(h)
    ba.logical_buffers[3].defined_at.instruction_id = 1 << 40
    trace(ba, [(A, 10), (A, 12), (F, 12), (F, 10)])
    out.append(("sparse", h.SerializeToString(),
                lambda p: p["error"] is None and p["peak_heap_bytes"] == 65536 + 32768 + 4096))

    h = base(hpb2, "empty")
    h.buffer_assignment.SetInParent()
    out.append(("empty", h.SerializeToString(),
                lambda p: p["error"] is None and p["heap_simulator_trace_id"] == -1 and
                p["peak_heap_bytes"] == 0 and p["memory_spaces"] == [] and p["heap_sizes"] == []))
    return out


def hostiles(t, xpb2, hpb2, tmp, host):
    d = os.path.join(tmp, "hostile")
    os.makedirs(d, exist_ok=True)
    cases, files = hostile(hpb2), []
    for k, (name, raw, _) in enumerate(cases):
        files.append(os.path.join(d, "%s(%d).hlo_proto.pb" % (name, 900 + k)))
        with open(files[-1], "wb") as f:
            f.write(raw)
    # malformed: a logical buffer claims 5 bytes of a 1-byte assignment
    bad = base(hpb2, "malformed").SerializeToString() + bytes([0x1a, 0x03, 0x0a, 0x05, 0x08])
    mal = os.path.join(d, "malformed(990).hlo_proto.pb")
    with open(mal, "wb") as f:
        f.write(bad)
    got = check(t, "hostile", xpb2, hpb2, host, files)
    if got is None:
        return
    mods = by_module(got)
    for name, _, want in cases:
        p = mods.get(name)
        t.ok(p is not None and want(p), "hostile %s: handled as docs/memory.md says" % name,
             json.dumps(p)[:400])
    t.ok(any("assigned logical buffers" in e for e in got["errors"]) and
         any("name no usable logical buffer" in e for e in got["errors"]),
         "hostile: ids that point nowhere are counted in errors", got["errors"])
    rc, out, err = render(host, files + [mal])
    g2 = strict(out) if rc == 0 else {"programs": [], "errors": []}
    t.ok(rc == 0 and "malformed" not in by_module(g2) and
         any("program 990 (malformed): left out" in e for e in g2["errors"]) and
         len(g2["programs"]) == len(got["programs"]),
         "hostile: a malformed assignment leaves its program out, with the reason",
         (err, g2["errors"]))


# ---- samples, recipes, mount ----------------------------------------------------

def samples(t, xpb2, hpb2):
    hosts = sorted(glob.glob(os.path.join(SHARED, "samples", "*", "*.xplane.pb")))
    if not hosts:
        print("# shared samples absent (%s): skipping them" % SHARED)
        return
    for host in hosts:
        sidecars = sorted(glob.glob(os.path.join(os.path.dirname(host), "*.hlo_proto.pb")))
        got = check(t, os.path.relpath(host, SHARED), xpb2, hpb2, host, sidecars)
        if got is not None and "conv_session" in host:
            t.ok(len(got["programs"]) == 8 and
                 any(p.get("peak_heap_bytes", 0) > 0 for p in got["programs"]),
                 "conv_session: its 8 programs with buffer assignments are listed",
                 [(p["module_name"], p.get("peak_heap_bytes")) for p in got["programs"]])


def recipes():
    """The jq lines after "<!-- recipe: memory_viewer.json -->" in docs/memory.md."""
    with open(os.path.join(xproto.SRC, "docs", "memory.md")) as f:
        return re.findall(r"^<!-- recipe: memory_viewer\.json -->\n(jq .*)$", f.read(), re.M)


def run_recipes(t, tmp, host, sidecars):
    rs = recipes()
    t.ok(len(rs) >= 3, "docs/memory.md has memory_viewer.json recipes", rs)
    f = os.path.join(tmp, "memory_viewer.json")
    with open(f, "wb") as fh:
        fh.write(render(host, sidecars)[1])
    for cmd in rs:
        r = subprocess.run(["bash", "-c", cmd + " " + f], capture_output=True)
        t.ok(r.returncode == 0 and r.stdout.strip() != b"", "recipe: %s" % cmd,
             r.stderr.decode()[:200])


def mount_check(t, host, sidecars):
    """Through a real mount of a session with @host and @sidecars (skipped without FUSE)."""
    if xmount.usable():
        print("# mount part skipped: %s" % xmount.usable())
        return
    with xmount.Workdir(t, "xprofs-mv-") as w:
        sess = w.session()
        for f in [host] + sidecars:
            shutil.copy(f, os.path.join(sess, "host0.xplane.pb" if f == host else
                                        os.path.basename(f)))
        mine = sorted(os.path.join(sess, os.path.basename(s)) for s in sidecars)
        m = w.mount(os.path.join(w.path, "src"))
        d = os.path.join(m.mnt, "runs", "run", "s1", "host0")
        t.ok("memory_viewer.json" in os.listdir(d), "mount: the host lists memory_viewer.json",
             os.listdir(d))
        _, got = xmount.read_whole(os.path.join(d, "memory_viewer.json"))
        t.same(got, render(os.path.join(sess, "host0.xplane.pb"), mine)[1],
               "mount: memory_viewer.json is the CLI's bytes with the session's sidecars",
               m.log_tail)


def main():
    if not os.access(CLI, os.X_OK) or not os.access(GEN, os.X_OK):
        print("not ok 1 - %s and %s built" % (CLI, GEN))
        return 1
    xpb2, tmp = xproto.load("xplane")
    hpb2, tmp2 = xproto.load("hlo")
    shutil.rmtree(tmp2, ignore_errors=True)
    t = xtap.Tap()
    try:
        host, sidecars = generated(t, xpb2, hpb2, tmp)
        if host:
            hostiles(t, xpb2, hpb2, tmp, host)
            run_recipes(t, tmp, host, sidecars)
        samples(t, xpb2, hpb2)
        if host:
            mount_check(t, host, sidecars)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
