#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The liblockwatch examples (client/examples/*.c, built into
build/examples/) run against a throwaway redis-server and exit 0, reporting
to a UDP socket of the test's own (LOCKWATCH_AGENT)."""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402
from client_helpers import EXAMPLES, UdpSink  # noqa: E402

NAMES = ("try_lock", "lock_timeout", "reentrant", "fencing")


class ExamplesTest(harness.TestCase):

    def test_examples_run(self):
        redis = self.start_redis()
        r = redis.client(decode_responses=True)
        sink = UdpSink(self)
        env = dict(os.environ, LOCKWATCH_AGENT=sink.address)
        for name in NAMES:
            with self.subTest(example=name):
                path = os.path.join(EXAMPLES, name)
                self.assertTrue(os.access(path, os.X_OK), "%s is not built" % path)
                p = subprocess.run([path, "127.0.0.1:%d" % redis.port], env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   timeout=60, text=True)
                self.assertEqual(p.returncode, 0, "%s exited %d:\n%s%s"
                                 % (name, p.returncode, p.stdout, p.stderr))
                self.assertTrue(p.stdout.strip(), "%s printed nothing" % name)
        # every lock an example took was released
        self.assertEqual([k for k in r.keys("lock:*")], [])
        # and reported: at least one wait and one hold per example
        lines = sink.lines()
        self.assertGreaterEqual(sum(1 for l in lines if l.startswith("lw1 wait ")), 4)
        self.assertGreaterEqual(sum(1 for l in lines if l.startswith("lw1 hold ")), 4)

    def test_usage_error(self):
        p = subprocess.run([os.path.join(EXAMPLES, "try_lock"), "not-an-address"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=30, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("usage", p.stderr)


if __name__ == "__main__":
    harness.main()
