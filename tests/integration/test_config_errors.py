# SPDX-License-Identifier: BSD-3-Clause
"""lockwatchd -n: config check.

A bad duration, an unknown key, a missing password_file: exit 2 and stderr
names the file and line ("FILE:LINE") and the key.  A good config: exit 0 and
the effective config on stdout, with no secret in it.  The shipped
conf/lockwatch.ini passes -n.  A bad config also stops a normal start (exit 2).
"""

import os
import signal
import socket
import time
import urllib.request

import harness as h

SECRET = "S3cr3t-lockwatch-XYZZY-4711"


def good_config(port, password_file=None, rules_extra=""):
    lines = [
        "; lockwatch test config",
        "[agent]",
        "listen = 127.0.0.1:%d" % port,
        "samples = off",
        "top_offenders = 20",
        "",
        "[target main]",
        "url = redis://127.0.0.1:6379/0",
    ]
    if password_file:
        lines.append("password_file = %s" % password_file)
    lines += [
        "patterns = lock:*, mutex:*",
        "scan_interval = 1s",
        "scan_duty = 100%",
        "",
        "[rules]",
        "leak_grace = 3s",
        "max_hold = 5s",
        "max_reentrancy = 16",
    ]
    if rules_extra:
        lines.append(rules_extra)
    return "\n".join(lines) + "\n"


class ConfigErrors(h.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = h._mkdtemp("lw-conf-")

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def check(self, cfg_path):
        p = h.run_lockwatchd(["-n", "-c", cfg_path], timeout=20)
        return (p.returncode, p.stdout.decode("utf-8", "replace"),
                p.stderr.decode("utf-8", "replace"))

    def assert_refused(self, text, bad_line_prefix, key):
        path = self.write("bad.ini", text)
        lines = text.split("\n")
        lineno = 1 + next(i for i, l in enumerate(lines) if l.startswith(bad_line_prefix))
        rc, out, err = self.check(path)
        self.assertEqual(rc, 2, "exit %s for %r\nstdout: %s\nstderr: %s"
                         % (rc, bad_line_prefix, out, err))
        self.assertIn("%s:%d" % (path, lineno), err,
                      "stderr must name FILE:LINE (%s:%d): %r" % (path, lineno, err))
        self.assertIn(key, err)
        self.assertLess(len(err.strip().splitlines()), 20, err)
        # the same config refuses a normal start too
        p = h.run_lockwatchd(["-d", "-c", path], timeout=20)
        self.assertEqual(p.returncode, 2, p.stderr[-1000:])
        self.assertIn(("%s:%d" % (path, lineno)).encode(), p.stderr)
        return err

    def test_bad_duration(self):
        text = good_config(h.free_port()).replace("max_hold = 5s", "max_hold = 5x")
        err = self.assert_refused(text, "max_hold", "max_hold")
        self.assertIn("5x", err)
        self.assertIn("rules", err)

    def test_bad_duration_in_target(self):
        text = good_config(h.free_port()).replace("scan_interval = 1s", "scan_interval = soon")
        self.assert_refused(text, "scan_interval", "scan_interval")

    def test_unknown_key(self):
        text = good_config(h.free_port()).replace(
            "patterns = lock:*, mutex:*", "patterns = lock:*, mutex:*\nbogus_knob = 1")
        err = self.assert_refused(text, "bogus_knob", "bogus_knob")
        self.assertIn("main", err)      # [target main]

    def test_missing_password_file(self):
        missing = os.path.join(self.dir, "nope", "main.pass")
        text = good_config(h.free_port(), password_file=missing)
        err = self.assert_refused(text, "password_file", "password_file")
        self.assertIn(missing, err)

    def test_more_bad_values(self):
        # (replace this line, with this, key named in the message)
        port = h.free_port()
        cases = [
            ("scan_duty = 100%", "scan_duty = 150%", "scan_duty"),
            ("scan_interval = 1s", "scan_interval = 10ms", "scan_interval"),   # < 100ms
            ("url = redis://127.0.0.1:6379/0", "url = http://127.0.0.1:6379/0", "url"),
            ("max_reentrancy = 16", "max_reentrancy = many", "max_reentrancy"),
            ("top_offenders = 20", "top_offenders = -3", "top_offenders"),
            # the writes' user needs its password, and the reverse
            ("scan_duty = 100%", "release_user = lockctl\nscan_duty = 100%",
             "release_password_file: missing"),
        ]
        for old, new, key in cases:
            with self.subTest(new=new):
                text = good_config(port).replace(old, new)
                self.assertIn(new, text)
                self.assert_refused(text, new.split(" =")[0], key)

    def test_password_in_url_refused_and_not_echoed(self):
        text = good_config(h.free_port()).replace(
            "url = redis://127.0.0.1:6379/0",
            "url = redis://watcher:%s@127.0.0.1:6379/0" % SECRET)
        err = self.assert_refused(text, "url", "url")
        self.assertNotIn(SECRET, err)

    def test_explicit_missing_config_file(self):
        missing = os.path.join(self.dir, "absent.ini")
        rc, out, err = self.check(missing)
        self.assertEqual(rc, 2, err)
        self.assertIn(missing, err)

    def test_builtin_defaults_without_c(self):
        if os.path.exists("/etc/lockwatch/lockwatch.ini"):
            self.skipTest("/etc/lockwatch/lockwatch.ini exists on this machine")
        p = h.run_lockwatchd(["-n"], timeout=20)
        out = p.stdout.decode("utf-8", "replace")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("redis://127.0.0.1:6379", out)
        self.assertRegex(out, r"(?m)^\s*patterns\s*=\s*lock:\*\s*$")

    def test_listen_address_in_use(self):
        import socket
        s = socket.socket()
        self.addCleanup(s.close)
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        path = self.write("busy.ini", good_config(port).replace(
            "redis://127.0.0.1:6379/0", "redis://127.0.0.1:%d/0" % h.free_port()))
        p = h.run_lockwatchd(["-d", "-c", path], timeout=15)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn(str(port).encode(), p.stderr)

    def test_good_config_prints_effective_config_without_secret(self):
        pw = self.write("main.pass", SECRET + "\n")
        os.chmod(pw, 0o600)
        path = self.write("good.ini", good_config(h.free_port(), password_file=pw))
        rc, out, err = self.check(path)
        self.assertEqual(rc, 0, "stdout: %s\nstderr: %s" % (out, err))
        self.assertNotIn(SECRET, out)
        self.assertNotIn(SECRET, err)
        self.assertNotIn(SECRET[:12], out)
        # the effective config: sections, the values we set, and defaults we did not
        self.assertRegex(out, r"(?m)^\[agent\]")
        self.assertRegex(out, r"(?m)^\[target main\]")
        self.assertRegex(out, r"(?m)^\[rules\]")
        self.assertIn("redis://127.0.0.1:6379/0", out)
        self.assertRegex(out, r"(?m)^\s*max_reentrancy\s*=\s*16\b")
        self.assertRegex(out, r"(?m)^\s*scan_count\s*=")       # a default filled in
        self.assertRegex(out, r"(?m)^\s*wait_p99\s*=")         # a default filled in

    def test_webhook_url_token_masked(self):
        # a webhook URL with a token in its user info or query is a bearer
        # secret: -n says where it goes, never the token
        text = good_config(h.free_port()) + (
            "\n[webhook hook]\nurl = https://%s@hooks.example:8443/in?token=%s&x=1\n"
            "format = slack\n" % (SECRET, SECRET))
        rc, out, err = self.check(self.write("hook.ini", text))
        self.assertEqual(rc, 0, err)
        self.assertNotIn(SECRET[:12], out)
        self.assertNotIn(SECRET[:12], err)
        self.assertRegex(out, r"(?m)^url\s*= https://\*\*\*@hooks\.example:8443/in\?\*\*\*$")
        # the masked output still passes -n
        rc2, _, err2 = self.check(self.write("again.ini", out))
        self.assertEqual(rc2, 0, err2)

    def test_control_bytes_in_an_error_are_escaped(self):
        # an ESC sequence in a bad line must not reach the terminal raw
        text = good_config(h.free_port()).replace(
            "max_hold = 5s", "max_hold = 5\x1b]0;owned\x07\x1b[2J")
        path = self.write("esc.ini", text)
        for args in (["-n", "-c", path], ["-d", "-c", path]):
            p = h.run_lockwatchd(args, timeout=20)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertNotIn(b"\x1b", p.stderr)
            self.assertNotIn(b"\x07", p.stderr)
            self.assertIn(b"[rules] max_hold: contains a control character (byte 0x1b)",
                          p.stderr)

    def test_effective_config_is_itself_valid(self):
        path = self.write("good.ini", good_config(h.free_port()))
        rc, out, err = self.check(path)
        self.assertEqual(rc, 0, err)
        again = self.write("again.ini", out)
        rc2, out2, err2 = self.check(again)
        self.assertEqual(rc2, 0, "the printed config does not pass -n:\n%s\n%s" % (out, err2))

    def test_shipped_config_passes(self):
        shipped = os.path.join(h.REPO, "conf", "lockwatch.ini")
        self.assertTrue(os.path.isfile(shipped), shipped)
        rc, out, err = self.check(shipped)
        self.assertEqual(rc, 0, "stdout: %s\nstderr: %s" % (out, err))
        self.assertRegex(out, r"(?m)^\[target ")

    def test_detached_start_reports_how_it_went(self):
        """Without -d the daemon detaches, but only once it has started: a
        port in use is an error on stderr and exit 1 (not 0 and a message
        in syslog only); a good start is exit 0 with the daemon serving."""
        port = h.free_port()
        busy = socket.socket()
        self.addCleanup(busy.close)
        busy.bind(("127.0.0.1", port))
        busy.listen()
        path = os.path.join(h._mkdtemp("lw-detach-"), "lockwatch.ini")
        with open(path, "w") as f:
            f.write(good_config(port))
        p = h.run_lockwatchd(["-c", path])
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(b"cannot listen on 127.0.0.1:%d" % port, p.stderr)
        busy.close()
        p = h.run_lockwatchd(["-c", path])
        self.assertEqual(p.returncode, 0, p.stderr)
        pids = [int(d) for d in os.listdir("/proc") if d.isdigit() and
                _cmdline(int(d)) == [h.LOCKWATCHD, "-c", path]]
        self.assertEqual(len(pids), 1, pids)
        self.addCleanup(_kill, pids[0])
        # the daemon's own pid, to stop it by (a user's trial looked for it)
        self.assertIn(b"started (pid %d): 1 target(s)" % pids[0], p.stderr)
        with urllib.request.urlopen("http://127.0.0.1:%d/healthz" % port, timeout=10) as r:
            self.assertEqual(r.status, 200)
        self.assertEqual(os.getsid(pids[0]), pids[0])     # a session of its own


def _cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return [a.decode() for a in f.read().split(b"\0")[:-1]]
    except OSError:
        return None


def _kill(pid):
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    for _ in range(100):
        if _cmdline(pid) is None:
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)


if __name__ == "__main__":
    h.main()
