# SPDX-License-Identifier: BSD-3-Clause
"""Local HTTP receivers for the alert tests (tests/integration/test_alerts*.py).

A Receiver is a Python http.server on a free loopback port, on its own thread,
that records every request (path, headers, body, arrival time) and answers
from a script: a list of statuses to answer in order (then `default`), an
optional hang (hold the request without answering until the test ends), and an
optional check of the body (a Slack receiver answers 400 to anything but
Slack's documented minimal shape).

Also: Standard Webhooks signature verification (hmac/hashlib/base64), as a
receiver would do it.  Standard library only.
"""

import base64
import hashlib
import hmac
import http.server
import json
import socketserver
import threading
import time

import harness as h


class Request:
    def __init__(self, path, headers, body):
        self.path = path
        self.headers = {k.lower(): v for k, v in headers.items()}
        self.body = body
        self.at = time.monotonic()
        self.status = None      # what the receiver answered

    def json(self):
        return json.loads(self.body.decode("utf-8"))


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class Receiver:
    """statuses: answer these in order, then default.  hang: never answer
    (until stop()).  check(request) -> None or an error string: when it
    returns a string the answer is 400 with that text."""

    def __init__(self, statuses=(), default=200, hang=False, check=None,
                 retry_after=None, body=b"ok", status_for=None):
        self.statuses = list(statuses)
        self.default = default
        self.hang = hang
        self.check = check
        self.retry_after = retry_after
        self.answer_body = body
        self.status_for = status_for      # request -> a status, or None
        self.requests = []
        self.lock = threading.Lock()
        self.released = threading.Event()
        recv = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n)
                req = Request(self.path, dict(self.headers), body)
                with recv.lock:
                    recv.requests.append(req)
                    status = recv.statuses.pop(0) if recv.statuses else recv.default
                    if recv.status_for is not None:
                        status = recv.status_for(req) or status
                if recv.hang:
                    recv.released.wait(120)
                    return
                text = recv.answer_body
                if recv.check is not None:
                    err = recv.check(req)
                    if err:
                        status, text = 400, err.encode()
                req.status = status
                self.send_response(status)
                if recv.retry_after is not None and status != 200:
                    self.send_header("Retry-After", str(recv.retry_after))
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(text)))
                self.end_headers()
                self.wfile.write(text)

        self.port = h.free_port()
        self.server = _Server(("127.0.0.1", self.port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return "http://127.0.0.1:%d/hook" % self.port

    def snapshot(self):
        with self.lock:
            return list(self.requests)

    def notices(self, status=None):
        """Parsed generic notices (optionally only those with this status)."""
        out = []
        for r in self.snapshot():
            body = r.json()
            if status is None or body.get("status") == status:
                out.append((r, body))
        return out

    def stop(self):
        self.released.set()
        self.server.shutdown()
        self.server.server_close()


def verify_signature(req, secret):
    """Standard Webhooks verification of one request with the shared secret
    (a "whsec_" secret is base64 after the prefix; any other is the key bytes).
    Returns None when valid, else why not."""
    msg_id = req.headers.get("webhook-id")
    ts = req.headers.get("webhook-timestamp")
    sigs = req.headers.get("webhook-signature")
    if not (msg_id and ts and sigs):
        return "missing webhook-id / webhook-timestamp / webhook-signature"
    if abs(time.time() - int(ts)) > 300:
        return "timestamp %s too far from now" % ts
    key = base64.b64decode(secret[6:]) if secret.startswith("whsec_") else secret.encode()
    signed = msg_id.encode() + b"." + ts.encode() + b"." + req.body
    want = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    for s in sigs.split(" "):
        ver, _, val = s.partition(",")
        if ver == "v1" and hmac.compare_digest(val, want):
            return None
    return "no v1 signature matches"


def slack_check(req):
    """Slack's documented minimal incoming-webhook message: a JSON object
    with a non-empty "text" string, sent as application/json."""
    if not req.headers.get("content-type", "").startswith("application/json"):
        return "invalid_payload: content-type"
    try:
        body = req.json()
    except ValueError:
        return "invalid_payload: not JSON"
    if not isinstance(body, dict) or not isinstance(body.get("text"), str) \
            or not body["text"].strip():
        return "no_text"
    if len(body["text"]) > 40000:
        return "msg_too_long"
    return None
