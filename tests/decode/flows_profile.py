"""tests/decode/flows_profile.py - made-up host and GPU planes with the stats XProf makes flows of.

XProf's trace viewer preprocesses a space that is not grouped yet
(PreprocessSingleHostXSpace(): AddFlowsToXplane() on every plane, only when
IsXSpaceGrouped() finds no "group_id" stat metadata): a correlation_id is a
GPU-launch flow (out of a host plane, into a device plane), _pt/_p a
producer flow out, _ct/_c a consumer flow in, each appended after the
event's own stats so the last one made is the event's flow. Real samples
have them (../shared); for a checkout without them this profile has, on
/host:CPU and /device:GPU:0:

  - launches and kernels pairing by correlation_id (uint64), one kernel
    whose correlation_id is an int64 (uint64_value() reads 0: it pairs
    with the host event whose uint64 id is 0);
  - producers and consumers of several context types (int64 and uint64
    values, one type above kLastContextType: generic), one event both
    producer and consumer (the consumer flow wins), one producer type
    without an id (no flow);
  - an event with a flow stat of its own and a correlation_id (the
    synthesized flow wins), and a correlation_id in event metadata only
    (metadata stats make no flow).

write(path, grouped=True) adds an unused "group_id" stat metadata to the
host plane: XProf then adds no flow at all, and neither may xprofs.
"""
import xproto

CORR, PT, P, CT, C, FLOW = 1, 2, 3, 4, 5, 6


def write(path, grouped=False):
    x, tmp = xproto.load("xplane")
    sp = x.XSpace()
    sp.hostnames.append("flowhost")
    host = sp.planes.add()
    host.id, host.name = 1, "/host:CPU"
    gpu = sp.planes.add()
    gpu.id, gpu.name = 2, "/device:GPU:0"
    for p in (host, gpu):
        for i, nm in ((CORR, "correlation_id"), (PT, "_pt"), (P, "_p"), (CT, "_ct"), (C, "_c"),
                      (FLOW, "flow")):
            p.stat_metadata[i].id, p.stat_metadata[i].name = i, nm
    if grouped:
        host.stat_metadata[9].id, host.stat_metadata[9].name = 9, "group_id"

    def md(p, mid, name, stats=()):
        m = p.event_metadata[mid]
        m.id, m.name = mid, name
        for sid, v in stats:
            st = m.stats.add()
            st.metadata_id, st.uint64_value = sid, v

    def event(line, mid, t, dur, stats):
        e = line.events.add()
        e.metadata_id, e.offset_ps, e.duration_ps = mid, t, dur
        for sid, v in stats:
            st = e.stats.add()
            st.metadata_id = sid
            if isinstance(v, tuple):  # ("i", v): an int64 value
                st.int64_value = v[1]
            else:
                st.uint64_value = v

    md(host, 1, "hipLaunchKernel")
    md(host, 2, "PjRtExecute")
    md(host, 3, "ThreadpoolListener::Record")
    md(host, 4, "metadataCorrelation", [(CORR, 77)])
    md(gpu, 1, "kernel_a")
    md(gpu, 2, "kernel_b", [(CORR, 78)])
    launch = host.lines.add()
    launch.id, launch.name, launch.timestamp_ns = 10, "launcher", 1000
    worker = host.lines.add()
    worker.id, worker.name, worker.timestamp_ns = 11, "worker", 1000
    stream = gpu.lines.add()
    stream.id, stream.name, stream.timestamp_ns = 1, "Stream #1(Compute)", 1000
    t = 0
    for i in range(40):
        event(launch, 1, t, 2000, [(CORR, 1000 + i)])
        if i % 5:  # every fifth launch has no kernel: a flow with one end, kept
            event(stream, 1, t + 5000, 3000, [(CORR, 1000 + i)])
        t += 10000
    event(launch, 1, t, 2000, [(CORR, 0)])                    # pairs with the int64 id below
    event(stream, 1, t + 5000, 3000, [(CORR, ("i", 1234))])
    event(launch, 4, t + 20000, 1000, [])                      # correlation in metadata: no flow
    event(stream, 2, t + 25000, 1000, [])
    t = 0
    for i in range(30):
        ctx = (5, 15, 14, 40)[i % 4]                            # PjRt, threadpool, pjrt call, >last
        event(worker, 2, t, 4000, [(PT, ("i", ctx)), (P, ("i", 500 + i))])
        event(worker, 3, t + 5000, 1000, [(CT, ctx), (C, 500 + i)])
        t += 10000
    t = 460000  # past the kernels above: every line stays sorted by start
    # producer and consumer at once: the consumer flow is made last and wins
    event(worker, 2, t, 4000, [(PT, ("i", 5)), (P, ("i", 900)), (CT, ("i", 5)), (C, ("i", 901))])
    event(worker, 3, t + 5000, 1000, [(PT, ("i", 5))])          # a type without an id: no flow
    # a flow stat of its own, then a correlation_id: the correlation flow wins
    event(worker, 3, t + 8000, 1000, [(FLOW, (77 << 2) | 2), (CORR, 2000)])
    event(stream, 1, t + 9000, 1000, [(CORR, 2000)])
    with open(path, "wb") as f:
        f.write(sp.SerializeToString())
    import shutil
    shutil.rmtree(tmp, ignore_errors=True)
