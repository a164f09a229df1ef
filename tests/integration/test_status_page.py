# SPDX-License-Identifier: BSD-3-Clause
"""The status page (GET /) as a person sees it, in headless Chromium.

A throwaway redis-server holds a leaked lock, a lock with a hostile key
(markup, quotes, an apostrophe, an ampersand), a binary key, a long-held
lock written by liblockwatch (host and pid in its token) and a Redisson
lock taken too many times.  lockwatchd watches it with short leak_grace and
max_hold, so its alerts fire.  Debian's chromium, driven over the DevTools
protocol (a small WebSocket client below: standard library only), loads the
page and reads what is rendered (document.body.innerText of each section):

- the target is listed as up, the leaked key in "Leaked locks", the
  LockLeaked alert in "Alerts firing";
- the hostile key shows as the literal text it is, and the page has no
  script element and no event-handler attribute; nothing is fetched but the
  page itself; it refreshes itself (meta refresh); the response carries a
  Content-Security-Policy that forbids scripts;
- the lockctl commands shown are real: run through sh with --dry-run --yes
  against the same Redis, `show` and `release` succeed for the plain, the
  hostile and the binary key alike.

A screenshot of the page is saved under the test's temp dir (and copied
to $LOCKWATCH_ARTIFACTS when that is set); its path is printed.  Skipped,
saying why, when chromium is not installed (apt-get install chromium).
"""

import base64
import glob
import http.client
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.parse

import harness as h

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
LOCKCTL = os.path.join(h.BUILD, "bin", "lockctl")
RUUID = "3f2c9a1e-8b7d-4c6e-9f10-2a3b4c5d6e7f"
HOSTILE = b"lock:<script>alert(1)</script>:\"x'&"
BINARY = b"lock:bin:\xff\x00\x1b[31m"


LONGKEY = b"lock:long:" + b"k" * 2048

class WebSocket:
    """Just enough of RFC 6455 for the DevTools protocol: text frames, client
    masking, fragmented messages, pings answered."""

    def __init__(self, url, timeout=20):
        u = urllib.parse.urlparse(url)
        self.sock = socket.create_connection((u.hostname, u.port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        req = ("GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\n"
               "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
               "Sec-WebSocket-Version: 13\r\n\r\n" % (u.path, u.hostname, u.port, key))
        self.sock.sendall(req.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("DevTools closed the connection during the handshake")
            head += chunk
        head, self.buf = head.split(b"\r\n\r\n", 1)
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise ConnectionError("WebSocket handshake refused: %r" % head[:200])

    def _read(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("DevTools closed the connection")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _send_frame(self, opcode, payload):
        mask = os.urandom(4)
        n = len(payload)
        if n < 126:
            head = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
        elif n < 65536:
            head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
        else:
            head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(head + mask + masked)

    def send(self, text):
        self._send_frame(0x1, text.encode("utf-8"))

    def recv(self):
        parts = []
        while True:
            b0, b1 = self._read(2)
            opcode, n = b0 & 0x0F, b1 & 0x7F
            if n == 126:
                n = struct.unpack("!H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._read(8))[0]
            mask = self._read(4) if b1 & 0x80 else None
            data = self._read(n)
            if mask:
                data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
            if opcode == 0x9:                   # ping
                self._send_frame(0xA, data)
                continue
            if opcode == 0x8:
                raise ConnectionError("DevTools closed the WebSocket")
            if opcode in (0x0, 0x1, 0x2):
                parts.append(data)
                if b0 & 0x80:
                    return b"".join(parts).decode("utf-8")

    def close(self):
        try:
            self._send_frame(0x8, b"")
        except OSError:
            pass
        self.sock.close()


class Browser:
    """chromium --headless with the DevTools protocol on a port it picks
    (loopback), one page, and a bounded wait for every answer."""

    def __init__(self, workdir):
        self.profile = os.path.join(workdir, "chromium-profile")
        self.log = os.path.join(workdir, "chromium.log")
        self._log = open(self.log, "wb")
        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu",
             "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check",
             "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--metrics-recording-only", "--hide-scrollbars",
             "--disable-extensions", "--disable-default-apps", "--no-pings",
             "--disable-domain-reliability", "--disable-client-side-phishing-detection",
             # loopback only: every host name but 127.0.0.1 fails to resolve
             "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
             "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
             "--user-data-dir=" + self.profile, "--window-size=1400,1600", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log)
        h._live_procs.append(self.proc)    # killed at exit whatever happens
        portfile = os.path.join(self.profile, "DevToolsActivePort")

        def port():
            if self.proc.poll() is not None:
                raise h.Fatal("chromium exited %s:\n%s" % (self.proc.returncode,
                                                          h.tail(self.log)))
            with open(portfile) as f:
                return int(f.readline())
        self.port = h.wait_until(port, 30, 0.1, "chromium's DevTools port")
        pages = h.wait_until(lambda: [t for t in self._json("/json/list")
                                      if t.get("type") == "page"], 15, 0.1, "a page target")
        self.ws = WebSocket(pages[0]["webSocketDebuggerUrl"])
        self.next_id = 0
        self.events = []

    def _json(self, path):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            c.request("GET", path)
            return json.loads(c.getresponse().read().decode("utf-8"))
        finally:
            c.close()

    def call(self, method, **params):
        self.next_id += 1
        my = self.next_id
        self.ws.send(json.dumps({"id": my, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == my:
                if "error" in msg:
                    raise AssertionError("%s: %s" % (method, msg["error"]))
                return msg["result"]
            self.events.append(msg)

    def wait_event(self, name, timeout=20):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for i, e in enumerate(self.events):
                if e.get("method") == name:
                    return self.events.pop(i)
            self.events.append(json.loads(self.ws.recv()))
        raise AssertionError("no %s within %ss" % (name, timeout))

    def eval(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True)
        if "exceptionDetails" in r:
            raise AssertionError("%s: %s" % (expr, r["exceptionDetails"]))
        return r["result"].get("value")

    def load(self, url):
        self.call("Page.enable")
        self.call("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired")

    def screenshot(self, path):
        r = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        with open(path, "wb") as f:
            f.write(base64.b64decode(r["data"]))

    def close(self):
        try:
            self.ws.close()
        except Exception:
            pass
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        try:
            h._live_procs.remove(self.proc)
        except ValueError:
            pass
        self._log.close()


@__import__("unittest").skipUnless(os.access(CHROMIUM, os.X_OK),
                                   "headless Chromium is not installed (apt-get install chromium)")
class StatusPage(h.TestCase):

    def test_what_a_person_sees(self):
        rs = self.start_redis()
        c = rs.client()
        c.set("lock:order:1001", "holder-a")                       # leaked
        c.set(HOSTILE, b"tok<b>")                                  # leaked, hostile
        c.set(BINARY, b"t")                                        # leaked, binary
        c.set(LONGKEY, b"tok-long")                                # leaked, a 2 KiB key
        c.set("lock:job:42", "lw1:web-3:4242:7:%d:00112233aabbccdd"
              % int(time.time() * 1000), px=600000)                # long held
        c.hset("lock:rlock:7", "%s:1" % RUUID, "20")               # reentrancy 20
        c.pexpire("lock:rlock:7", 600000)
        ag = self.start_agent(rs, scan_interval="500ms", leak_grace="1s", max_hold="1s")

        def alert_fired():
            st, body = ag.get_json("/api/v1/alerts")
            return any(a["labels"]["alertname"] == "LockLeaked" and
                       a["labels"].get("key") == "lock:order:1001" for a in body["alerts"])
        ag.wait_for(alert_fired, 20, desc="LockLeaked for lock:order:1001")

        st, headers, raw = ag.get("/")
        self.assertEqual(st, 200)
        self.assertTrue(headers["content-type"].startswith("text/html"))
        self.assertIn("script-src", headers["content-security-policy"].replace(
            "default-src 'none'", "script-src"))
        self.assertNotIn(b"<script", raw)
        # every link of the page's nav answers (the API routes a person
        # goes on to: classes and deadlocks among them)
        nav = re.search(rb"<nav>(.*?)</nav>", raw).group(1)
        links = re.findall(rb'href="([^"]+)"', nav)
        for want in (b"api/v1/classes", b"api/v1/deadlocks", b"api/v1/events"):
            self.assertIn(want, links)
        for link in links:
            self.assertEqual(ag.get("/" + link.decode())[0], 200, link)

        work = tempfile.mkdtemp(prefix="lw-status-page-")
        self.addCleanup(shutil.rmtree, work, True)
        browser = Browser(work)
        self.addCleanup(browser.close)
        browser.load("http://127.0.0.1:%d/" % ag.port)

        def text(section):
            return browser.eval("document.getElementById(%s).innerText" % json.dumps(section))

        targets, alerts, leaked = text("targets"), text("alerts"), text("leaked")
        longheld, reentrant = text("long"), text("reentrant_high")
        self.assertRegex(targets, r"main\s+up")
        self.assertIn("LockLeaked", alerts)
        self.assertIn("lock:order:1001", alerts)
        self.assertIn("lock:order:1001", leaked)
        self.assertIn(HOSTILE.decode(), leaked)            # as text, exactly
        self.assertIn("lock:bin:\ufffd\ufffd\ufffd[31m", leaked)
        self.assertIn("web-3 / 4242", longheld)            # host and pid from the token
        self.assertIn("lock:rlock:7", reentrant)
        self.assertIn("\u00d720", reentrant)                # the hold count
        self.assertEqual(browser.eval("document.scripts.length"), 0)
        self.assertFalse(browser.eval(
            "[...document.querySelectorAll('*')].some(e => [...e.attributes]"
            ".some(a => a.name.startsWith('on')))"))
        self.assertEqual(browser.eval(
            "document.querySelector('meta[http-equiv=refresh]').content"), "15")
        self.assertEqual(browser.eval("performance.getEntriesByType('resource').length"), 0)

        shot = os.path.join(work, "status.png")
        browser.screenshot(shot)
        with open(shot, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        self.assertGreater(os.path.getsize(shot), 20000)
        sys.stderr.write("\nscreenshot: %s\n" % shot)
        if os.environ.get("LOCKWATCH_ARTIFACTS"):
            os.makedirs(os.environ["LOCKWATCH_ARTIFACTS"], exist_ok=True)
            shutil.copy(shot, os.path.join(os.environ["LOCKWATCH_ARTIFACTS"], "status.png"))

        # The commands on the page work as shown (dry run: nothing changes).
        commands = browser.eval(
            "[...document.querySelectorAll('#leaked code')].map(e => e.textContent)")
        if not os.access(LOCKCTL, os.X_OK):
            self.skipTest("%s is not built" % LOCKCTL)
        env = dict(os.environ, PATH=os.path.dirname(LOCKCTL) + os.pathsep + os.environ["PATH"])
        ran = 0
        for cmd in commands:
            if " release " in cmd:
                cmd += " --dry-run --yes"
            p = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=30,
                               stdin=subprocess.DEVNULL, env=env)
            self.assertEqual(p.returncode, 0, "%s\n%s%s" % (cmd, p.stdout, p.stderr))
            ran += 1
        # show + release for each of the four leaked keys, the 2 KiB one too
        # (an on-call trial: it had none over 1 KiB, where lockctl pastes 16)
        self.assertEqual(ran, 8)
        for key in (b"lock:order:1001", HOSTILE, BINARY, LONGKEY):
            self.assertEqual(c.exists(key), 1)

    def test_worst_first_and_keys_readable_at_900_and_1400(self):
        """Alerts worst first by the alert kinds' severity and order
        (critical LockTargetDown, then LockLeaked, LockHeldTooLong,
        LockReentrancyHigh), not oldest first: here the reentrancy alert
        fires first and the leak last.  At 900 and 1400 px wide no key
        column (keys, holders, the lockctl commands) is under 16 characters
        and the page needs no sideways scrolling (measured in the browser with
        getBoundingClientRect against the width of 16 of the page's
        monospace characters).  Screenshots of both are kept for a person
        to look at (their paths are printed)."""
        rs = self.start_redis()
        c = rs.client()
        long_key = "lock:order:" + "-".join("segment%d" % i for i in range(12))
        c.set(long_key, "holder-a")                                 # leaked at 4s
        c.set("lock:job:42", "lw1:web-3:4242:7:%d:00112233aabbccdd"
              % int(time.time() * 1000), px=600000)                 # long at 1s
        c.hset("lock:rlock:7", "%s:1" % RUUID, "20")                # reentrant at once
        c.pexpire("lock:rlock:7", 600000)
        down = socket.socket()
        down.bind(("127.0.0.1", 0))
        down_port = down.getsockname()[1]
        down.close()                                                # nothing listens
        ag = self.start_agent(targets=[("main", rs.url),
                                       ("gone", "redis://127.0.0.1:%d/0" % down_port)],
                              scan_interval="500ms", leak_grace="4s", max_hold="1s",
                              target_extra={"connect_timeout": "200ms"})
        want = ["LockTargetDown", "LockLeaked", "LockHeldTooLong", "LockReentrancyHigh"]

        def firing():
            st, body = ag.get_json("/api/v1/alerts")
            return {a["labels"]["alertname"] for a in body["alerts"]} >= set(want)
        ag.wait_for(firing, 30, desc="the four alerts firing")
        st, body = ag.get_json("/api/v1/alerts")
        # every lock here is also held longer than max_hold: one kind's
        # alerts are one run of rows, the runs in the kinds' order
        def runs(names):
            return [n for i, n in enumerate(names) if i == 0 or names[i - 1] != n]
        by_age = runs([a["labels"]["alertname"] for a in
                       sorted(body["alerts"], key=lambda a: a["startsAt"])])
        self.assertNotEqual(by_age, want, "oldest first would pass too: %s" % by_age)

        work = tempfile.mkdtemp(prefix="lw-status-widths-")
        self.addCleanup(shutil.rmtree, work, True)
        browser = Browser(work)
        self.addCleanup(browser.close)
        for width in (900, 1400):
            browser.call("Emulation.setDeviceMetricsOverride", width=width, height=1000,
                         deviceScaleFactor=1, mobile=False)
            browser.load("http://127.0.0.1:%d/" % ag.port)
            order = browser.eval(
                "[...document.querySelectorAll('#alerts tbody tr td:first-child')]"
                ".map(e => e.textContent)")
            self.assertEqual(runs(order), want, (width, order))
            # 16 monospace characters, as the page sets them
            ch16 = browser.eval(
                "(() => { const s = document.createElement('span');"
                " s.style.fontFamily = 'ui-monospace,monospace';"
                " s.textContent = 'x'.repeat(16); document.body.appendChild(s);"
                " const w = s.getBoundingClientRect().width; s.remove(); return w; })()")
            widths = browser.eval(
                "[...document.querySelectorAll('td.key, td.cmd')].map(e => "
                "[e.closest('section').id, e.getBoundingClientRect().width])")
            self.assertTrue(widths, width)
            narrow = [(sec, w) for sec, w in widths if w + 0.5 < ch16]
            self.assertEqual(narrow, [], "at %d px, 16 characters are %.0f px" % (width, ch16))
            # and the page still fits the window: nothing to scroll sideways
            self.assertLessEqual(browser.eval("document.documentElement.scrollWidth"), width)
            shot = os.path.join(work, "status-%d.png" % width)
            browser.screenshot(shot)
            self.assertGreater(os.path.getsize(shot), 10000)
            sys.stderr.write("\nscreenshot at %d px: %s\n" % (width, shot))
            if os.environ.get("LOCKWATCH_ARTIFACTS"):
                os.makedirs(os.environ["LOCKWATCH_ARTIFACTS"], exist_ok=True)
                shutil.copy(shot, os.environ["LOCKWATCH_ARTIFACTS"])


if __name__ == "__main__":
    h.main()
