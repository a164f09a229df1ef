# SPDX-License-Identifier: BSD-3-Clause
"""A refused or wrong-typed PTTL is not "deleted": with an ACL user lacking
+pttl, a leaked lock is never counted as vanished and the scan never
"succeeds" without it.  The pass fails naming the refused PTTL (NOPERM),
lockwatch_target_up is 0, /readyz answers 503 with the reason, and the
refusal is counted in lockwatch_scan_read_errors_total{kind="NOPERM"}."""

import harness as h

NO_PTTL_ACL = [p for p in h.SCANNER_ACL if p != "+pttl"]


class PttlRefused(h.TestCase):

    def test_acl_without_pttl_degrades_the_target(self):
        rs = self.start_redis()
        c = rs.client()
        c.execute_command("ACL", "SETUSER", "nopttl", "on", ">s3cret", *NO_PTTL_ACL)
        c.set("lock:leak:1", "tok")                 # no TTL: a leak
        c.set("lock:held:1", "tok", px=600000)
        ag = self.start_agent(targets=[("main", "redis://nopttl@127.0.0.1:%d/0" % rs.port)],
                              scan_interval="500ms", leak_grace="1s",
                              target_extra={"password_file": h.password_file("s3cret")})

        def named():
            st, _, body = ag.get("/readyz", timeout=2)
            return st == 503 and b"PTTL" in body and body
        body = ag.wait_for(named, timeout=20, desc="/readyz naming the refused PTTL")
        self.assertIn(b"NOPERM", body, body)
        m = ag.metrics()
        self.assertEqual(h.select(m, "lockwatch_target_up", target="main")[0][1], 0)
        self.assertEqual(h.msum(m, "lockwatch_scan_vanished_keys_total", target="main"), 0,
                         "a refused PTTL was counted as a vanished key")
        self.assertGreaterEqual(h.msum(m, "lockwatch_scan_read_errors_total", target="main",
                                       kind="NOPERM"), 2)
        self.assertIn("PTTL", ag.log_tail(40))


if __name__ == "__main__":
    h.main()
