"""tests/lib/httpd.py - the HTTP server plumbing the test servers share
(fault_proxy.py, token_server.py, tests/gcs/fake_gcs.py): a quiet threaded
server on loopback, a handler base that speaks HTTP/1.1 and sends JSON, a
start/stop base for in-process servers, and the "ready PORT" /
serve-until-the-parent-exits loop of their command lines.
Test code only: no TLS, no limits beyond the standard library's.
"""
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class QuietServer(ThreadingHTTPServer):
    """Clients that hang up mid-answer (a daemon exiting, a test's timeout)
    are normal here, not tracebacks. One daemon thread per connection."""

    daemon_threads = True

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


class Handler(BaseHTTPRequestHandler):
    """Keep-alive HTTP/1.1, no access log, JSON answers."""

    protocol_version = "HTTP/1.1"
    json_type = "application/json"

    def log_message(self, fmt, *args):
        pass

    def send_json(self, status, obj, extra=()):
        """Answer @status with @obj as JSON and the @extra (name, value)
        headers; a HEAD request gets the headers only."""
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", self.json_type)
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


class Served:
    """Base of the in-process servers: self.httpd (set by the subclass) is
    served from a daemon thread between start() and stop()."""

    def start(self):
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def announce_and_wait(port, parent_pid=0):
    """The command-line servers' main loop: print "ready PORT" (what the
    shell tests wait for), then sleep until @parent_pid (when non-zero) is
    gone or the process is interrupted."""
    print("ready %d" % port, flush=True)
    try:
        while True:
            time.sleep(1)
            if parent_pid:
                os.kill(parent_pid, 0)
    except (OSError, KeyboardInterrupt):
        pass
