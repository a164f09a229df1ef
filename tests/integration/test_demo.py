# SPDX-License-Identifier: BSD-3-Clause
"""make demo as a newcomer meets it (issue 24): tests/demo/run says where
lockctl and lockwatchd are and how to put them on PATH; the lockctl line it
prints works pasted into a shell with that PATH; the agent follows the
demo's own Redis (keyspace notifications on) instead of warning about it.
Ctrl-C (SIGINT) stops everything."""

import os
import re
import signal
import subprocess
import time

import harness as h

RUN = os.path.join(h.REPO, "tests", "demo", "run")


class Demo(h.TestCase):

    def test_banner_path_and_follow(self):
        build = h.BUILD
        p = subprocess.Popen([RUN, build], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, start_new_session=True)
        h._live_procs.append(p)
        out = b""
        try:
            os.set_blocking(p.stdout.fileno(), False)
            deadline = time.monotonic() + 60
            while b"lockwatchd log:" not in out and time.monotonic() < deadline:
                if p.poll() is not None:
                    break
                chunk = p.stdout.read()
                if chunk:
                    out += chunk
                time.sleep(0.1)
            text = out.decode("utf-8", "replace")
            self.assertIn("lockwatchd log:", text, text)
            bindir = os.path.join(os.path.abspath(build), "bin")
            self.assertIn("export PATH=%s:$PATH" % bindir, text)
            m = re.search(r"then e\.g\.\s+(lockctl -c \S+ list)", text)
            self.assertIsNotNone(m, text)
            env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
            r = subprocess.run(["sh", "-c", m.group(1)], capture_output=True, text=True,
                               timeout=30, env=env, stdin=subprocess.DEVNULL)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("lock:", r.stdout)
            time.sleep(1)
            chunk = p.stdout.read()
            out += chunk or b""
            text = out.decode("utf-8", "replace")
            self.assertIn("following keyspace notifications", text)
            self.assertNotIn("not following", text)
        finally:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGINT)
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait(timeout=5)
            h._live_procs.remove(p)


if __name__ == "__main__":
    h.main()
