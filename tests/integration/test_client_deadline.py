# SPDX-License-Identifier: BSD-3-Clause
# run-all: idle (waits out command timeouts against a drip-feeding server; the bounds are
#   those timeouts plus 2 s or more, and the client needs next to no CPU)
"""liblockwatch calls end within their documented deadline against a server
that answers one byte every 0.5 s (each read well inside the command
timeout): command_timeout_ms bounds a whole reply, not each read.

- every command drips: lw_connect() fails after one command timeout (5 s);
- only the scripts drip (SET NX answers): the try_lock example (lw_connect,
  two lw_trylock, lw_unlock) ends within a few command timeouts.
The issue's run: 115 s, ended only by the server."""

import subprocess
import time

import harness as h
from fake_redis import FakeRedis

TRY_LOCK = h.os.path.join(h.BUILD, "examples", "try_lock")


class ClientDeadline(h.TestCase):

    def run_example(self, fake):
        t0 = time.monotonic()
        p = subprocess.run([TRY_LOCK, "127.0.0.1:%d" % fake.port], capture_output=True,
                           timeout=120)
        return p, time.monotonic() - t0

    def test_connect_against_a_drip(self):
        with FakeRedis("drip") as fake:
            p, took = self.run_example(fake)
        print("try_lock, every command dripping: %.2f s, exit %d" % (took, p.returncode))
        self.assertNotEqual(p.returncode, 0)
        self.assertIn(b"lw_connect", p.stderr)
        self.assertLess(took, 7.0)

    def test_scripts_against_a_drip(self):
        with FakeRedis("drip", on={"EVALSHA", "EVAL"}) as fake:
            p, took = self.run_example(fake)
        print("try_lock, scripts dripping: %.2f s, exit %d" % (took, p.returncode))
        self.assertLess(took, 16.0)


if __name__ == "__main__":
    h.main()
