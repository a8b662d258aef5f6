#!/usr/bin/python3
"""profiler_server.py - a stand-in for the profiler server a JAX / TensorFlow /
PyTorch-XLA workload starts (gRPC service tensorflow.ProfilerService), for
the capture tests. Real gRPC over HTTP/2 (grpcio generic handlers), with the
messages generated at start-up by `protoc --python_out` from the project's
own capture/proto/profiler_service.proto, so the C client is checked against
an independent stack and an independent protobuf implementation.

Behaves like xla/tsl/profiler/rpc/profiler_service_impl.cc where it matters:
- Profile waits for opts.start_timestamp_ns, then "traces" for
  opts.duration_ms unless Terminate(session_id) arrives (sticky per id), and
  returns the XSpace in field 8 when emit_xspace is set, else writes
  <repository_root>/<session_id>/<host_name with ':'->'_'>.xplane.pb itself.
- One session at a time: a concurrent Profile gets INTERNAL "Another
  profiling session active."
- Continuous mode: StartContinuousProfiling / GetSnapshot / Stop...;
  GetSnapshot is NOT_FOUND when continuous mode is off.
- Monitor and everything else: UNIMPLEMENTED (not registered).

Test knobs: --old-server (ignore emit_xspace), --slow-ms (extra delay
before answering), --die (the process exits mid-call), --hang (never
answers, ignores Terminate), --empty (empty_trace), --big-mb N (the XSpace
is the base profile repeated until >= N MiB: concatenated serialized XSpace
messages merge into one valid XSpace), --record FILE (one JSON line per
request received, with the sha256 of the XSpace sent).

The base XSpace: --xspace FILE, else $XPROFS_SHARED/samples/...tw003.xplane.pb,
else one made by $XPROFS_BUILD_ROOT/tools/xprofs-gen, else a tiny hand-encoded
one.
"""
import argparse
import hashlib
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent import futures

import grpc

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("XPROFS_SOURCE_ROOT", os.path.join(HERE, "..", ".."))
PROTO = os.path.join(SRC, "capture", "proto", "profiler_service.proto")


def load_pb2():
    out = tempfile.mkdtemp(prefix="xprofs-pb2-")
    subprocess.run(["protoc", "--proto_path=" + os.path.dirname(PROTO),
                    "--python_out=" + out, PROTO], check=True)
    sys.path.insert(0, out)
    try:
        return importlib.import_module("profiler_service_pb2")
    finally:
        # the module is loaded; its generated source need not outlive it
        sys.path.remove(out)
        shutil.rmtree(out, ignore_errors=True)


def base_xspace(path):
    if path:
        with open(path, "rb") as f:
            return f.read()
    shared = os.environ.get("XPROFS_SHARED", "")
    sample = os.path.join(shared, "samples", "gpu_mi300_jax_gemm", "tw003.xplane.pb")
    if shared and os.path.exists(sample):
        with open(sample, "rb") as f:
            return f.read()
    gen = os.path.join(os.environ.get("XPROFS_BUILD_ROOT", ""), "tools", "xprofs-gen")
    if os.access(gen, os.X_OK):
        with tempfile.NamedTemporaryFile(suffix=".xplane.pb") as t:
            subprocess.run([gen, "--kind", "cpu", "--size", "100K", "-o", t.name], check=True)
            return open(t.name, "rb").read()
    # XSpace{planes: [XPlane{id: 1, name: "/host:CPU"}], hostnames: ["test"]}
    plane = b"\x08\x01\x12\x09/host:CPU"
    return b"\x0a" + bytes([len(plane)]) + plane + b"\x22\x04test"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--bind", default="127.0.0.1")
    ap.add_argument("--port-file")
    ap.add_argument("--xspace")
    ap.add_argument("--record")
    ap.add_argument("--old-server", action="store_true")
    ap.add_argument("--slow-ms", type=int, default=0)
    ap.add_argument("--die", action="store_true")
    ap.add_argument("--hang", action="store_true")
    ap.add_argument("--empty", action="store_true")
    ap.add_argument("--big-mb", type=int, default=0)
    args = ap.parse_args()

    pb = load_pb2()
    base = base_xspace(args.xspace)
    if args.big_mb:
        reps = (args.big_mb << 20) // len(base) + 1
        xspace = base * reps
    else:
        xspace = base
    digest = hashlib.sha256(xspace).hexdigest()

    lock = threading.Lock()
    state = {"active": None, "continuous": False}
    terminated = set()
    term_cv = threading.Condition(lock)
    rec_lock = threading.Lock()

    def record(d):
        if not args.record:
            return
        with rec_lock, open(args.record, "a") as f:
            f.write(json.dumps(d) + "\n")

    def response(empty=False):
        if empty:
            return pb.ProfileResponse(empty_trace=True).SerializeToString()
        # field 8, length-delimited, built by hand so a big XSpace is not copied twice
        n = len(xspace)
        hdr = bytearray(b"\x42")
        while True:
            b = n & 0x7F
            n >>= 7
            hdr.append(b | (0x80 if n else 0))
            if not n:
                break
        return bytes(hdr) + xspace

    def profile(req, ctx):
        now = time.time_ns()
        o = req.opts
        rec = {"method": "Profile", "session_id": req.session_id, "host_name": req.host_name,
               "received_ns": now, "start_timestamp_ns": o.start_timestamp_ns,
               "duration_ms": req.duration_ms, "opts_duration_ms": o.duration_ms,
               "version": o.version, "host_tracer_level": o.host_tracer_level,
               "device_tracer_level": o.device_tracer_level,
               "python_tracer_level": o.python_tracer_level,
               "emit_xspace": req.emit_xspace, "repository_root": req.repository_root,
               "time_remaining": ctx.time_remaining(),
               "advanced": {k: v.WhichOneof("value") + ":" + str(getattr(v, v.WhichOneof("value")))
                            for k, v in o.advanced_configuration.items()}}
        with lock:
            if state["active"] is not None:
                rec["result"] = "busy"
                record(rec)
                ctx.abort(grpc.StatusCode.INTERNAL, "Another profiling session active.")
            state["active"] = req.session_id
        # an event tests can wait on: the request arrived (the Profile line comes at the end)
        record({"method": "ProfileStart", "session_id": req.session_id, "received_ns": now})
        try:
            if args.die:
                record(dict(rec, result="die"))
                time.sleep(0.2)
                os._exit(3)
            if args.hang:
                record(dict(rec, result="hang"))
                time.sleep(3600)
            # wait for the shared start time, then trace for duration_ms or until Terminate
            if o.start_timestamp_ns:
                delay = (o.start_timestamp_ns - time.time_ns()) / 1e9
                if delay > 0:
                    time.sleep(min(delay, 600))
            rec["started_ns"] = time.time_ns()
            end = time.monotonic() + o.duration_ms / 1000.0
            with lock:
                while req.session_id not in terminated and time.monotonic() < end:
                    term_cv.wait(end - time.monotonic())
                rec["terminated"] = req.session_id in terminated
            rec["stopped_ns"] = time.time_ns()
            if args.slow_ms:
                time.sleep(args.slow_ms / 1000.0)
            if args.empty:
                rec["result"] = "empty"
                record(rec)
                return response(empty=True)
            if args.old_server or not req.emit_xspace:
                d = os.path.join(req.repository_root, req.session_id)
                os.makedirs(d, exist_ok=True)
                p = os.path.join(d, req.host_name.replace(":", "_") + ".xplane.pb")
                with open(p, "wb") as f:
                    f.write(xspace)
                rec.update(result="written", file=p, sha256=digest, bytes=len(xspace))
                record(rec)
                return pb.ProfileResponse().SerializeToString()
            rec.update(result="xspace", sha256=digest, bytes=len(xspace))
            record(rec)
            return response()
        finally:
            with lock:
                state["active"] = None

    def terminate(req, ctx):
        with lock:
            terminated.add(req.session_id)
            term_cv.notify_all()
        record({"method": "Terminate", "session_id": req.session_id, "received_ns": time.time_ns()})
        return pb.TerminateResponse()

    def start_cont(req, ctx):
        with lock:
            state["continuous"] = True
        record({"method": "StartContinuousProfiling", "received_ns": time.time_ns()})
        return pb.Empty()

    def stop_cont(req, ctx):
        with lock:
            state["continuous"] = False
        record({"method": "StopContinuousProfiling", "received_ns": time.time_ns()})
        return pb.Empty()

    def snapshot(req, ctx):
        with lock:
            on = state["continuous"]
        rec = {"method": "GetSnapshot", "received_ns": time.time_ns(),
               "snapshot_session_id": req.snapshot_session_id}
        if not on:
            record(dict(rec, result="not_found"))
            ctx.abort(grpc.StatusCode.NOT_FOUND, "continuous profiling is not running")
        record(dict(rec, result="xspace", sha256=digest, bytes=len(xspace)))
        return response()

    ident = lambda b: b
    handlers = {
        "Profile": grpc.unary_unary_rpc_method_handler(
            profile, request_deserializer=pb.ProfileRequest.FromString, response_serializer=ident),
        "Terminate": grpc.unary_unary_rpc_method_handler(
            terminate, request_deserializer=pb.TerminateRequest.FromString,
            response_serializer=pb.TerminateResponse.SerializeToString),
        "StartContinuousProfiling": grpc.unary_unary_rpc_method_handler(
            start_cont, request_deserializer=pb.ProfileRequest.FromString,
            response_serializer=pb.Empty.SerializeToString),
        "StopContinuousProfiling": grpc.unary_unary_rpc_method_handler(
            stop_cont, request_deserializer=pb.Empty.FromString,
            response_serializer=pb.Empty.SerializeToString),
        "GetSnapshot": grpc.unary_unary_rpc_method_handler(
            snapshot, request_deserializer=pb.GetSnapshotRequest.FromString,
            response_serializer=ident),
    }
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8),
                         options=[("grpc.max_send_message_length", -1),
                                  ("grpc.max_receive_message_length", 64 << 20)])
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("tensorflow.ProfilerService", handlers),))
    port = server.add_insecure_port("%s:%d" % (args.bind, args.port))
    server.start()
    if args.port_file:
        with open(args.port_file + ".tmp", "w") as f:
            f.write("%d\n" % port)
        os.rename(args.port_file + ".tmp", args.port_file)
    print("profiler_server: listening on 127.0.0.1:%d, xspace %d bytes sha256 %s"
          % (port, len(xspace), digest), flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
