# SPDX-License-Identifier: BSD-3-Clause
"""TLS to Redis (issue 16): redis-server with --tls-port, --port 0 and
--tls-auth-clients yes, and a CA, server and client certificates made by
openssl in the test's temp dir (harness.TLSCerts).

- the agent scans a rediss:// target: its locks show, lockwatch_target_up 1;
- a wrong CA, and an expired server certificate, each give a down target
  (lockwatch_target_up 0, /readyz 503) with the certificate error and
  OpenSSL's reason in the log, and nothing in plaintext;
- no client certificate: the server refuses, the target is down;
- rediss:// to a plaintext port is an error, and nothing is sent in plaintext;
- a SIGHUP reload reads a renewed (fixed) CA file: the target comes up;
- lockctl list and release over TLS (--url rediss:// and --tls-* options);
- a liblockwatch lock and unlock over TLS;
- a cluster of three TLS nodes, verified against the URL's host name
  (localhost) although the nodes announce 127.0.0.1;
- a Sentinel target whose sentinel and primary speak TLS only;
- tls_verify = off is warned (once) at start, at -n and at --once, and shown by -n;
- lockwatch.pc's Requires.private names hiredis_ssl and openssl only when
  TLS is built in.

In a build without TLS (hiredis 0.14, no hiredis_ssl) these skip with the
reason printed, and test_refused_without_tls (lockwatchd) and
test_liblockwatch_refuses_tls_without_it check the clear refusal instead
(the first runs in both builds, with the answer each should give).
"""

import os
import unittest

import harness as h
import topo
from client_helpers import Shell
from test_lockctl import run as lockctl, write_config

BUILT, WHY = h.tls_built()
needs_tls = unittest.skipUnless(BUILT, "built without TLS: " + WHY)


def tls_agent(test, server, certs, **extra):
    te = certs.target_extra()
    te.update(extra)
    return test.start_agent(targets=[("main", server.url)], target_extra=te)


def target_up(ag):
    return h.msum(ag.metrics(), "lockwatch_target_up", target="main")


class TLSTest(h.TestCase):

    def setUp(self):
        super().setUp()
        if BUILT:
            self.certs = h.TLSCerts()

    def test_refused_without_tls(self):
        d = h._mkdtemp("lw-tls-n-")
        path = os.path.join(d, "lockwatch.ini")
        with open(path, "w") as f:
            f.write(h.config_text(h.free_port(), [("main", "rediss://127.0.0.1:6380/0")]))
        r = h.run_lockwatchd(["-n", "-c", path])
        if BUILT:
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertRegex(r.stdout, rb"\nurl +=  ?rediss://127\.0\.0\.1:6380/0\n")
            self.assertRegex(r.stdout, rb"\ntls_verify += on\n")
        else:
            self.assertNotEqual(r.returncode, 0)
            self.assertIn(b"TLS (rediss://) is not supported by this build", r.stderr)
            self.assertIn(b"built without hiredis_ssl", r.stderr)
            self.assertIn(b"make deps-hiredis-tls", r.stderr)

    def test_pc_requires_match_the_build(self):
        with open(os.path.join(h.BUILD, "lib", "lockwatch.pc")) as f:
            req = [ln for ln in f if ln.startswith("Requires.private:")]
        self.assertEqual(len(req), 1, req)
        # libcrypto always: the samples are signed with HMAC-SHA-256 (openssl
        # brings it in a TLS build)
        want = "hiredis hiredis_ssl openssl" if BUILT else "hiredis libcrypto"
        self.assertEqual(req[0].split(":", 1)[1].split(), want.split())

    @unittest.skipIf(BUILT, "built with TLS: test_liblockwatch_lock_over_tls instead")
    def test_liblockwatch_refuses_tls_without_it(self):
        rs = self.start_redis()
        sh = Shell(self, rs.port)
        ans = sh.cmd("connect a agent=off tls")
        self.assertTrue(ans.startswith("ERR"), ans)
        self.assertIn("tls is not supported by this build of liblockwatch", ans)
        self.assertIn("built without hiredis_ssl", ans)

    @needs_tls
    def test_agent_scans_over_tls(self):
        rs = self.start_redis(tls=self.certs)
        rs.client().set("lock:tls:1", "holder-1", px=60000)
        ag = tls_agent(self, rs, self.certs)
        ag.wait_scans(1)
        self.assertEqual(target_up(ag), 1)
        self.assertEqual(ag.get("/readyz")[0], 200)
        st, lk = ag.lock("lock:tls:1")
        self.assertEqual(st, 200, lk)

    def assert_down_with(self, ag, text):
        ag.wait_for(lambda: target_up(ag) == 0 and text in ag.log_tail(200),
                    desc="target down with %r in the log" % text)
        self.assertEqual(ag.get("/readyz")[0], 503)
        log = ag.log_tail(200)
        self.assertIn("certificate verify failed", log)

    @needs_tls
    def test_wrong_ca_is_down_then_reload_fixes_it(self):
        rs = self.start_redis(tls=self.certs)
        ag = tls_agent(self, rs, self.certs, tls_ca_file=self.certs.other_ca())
        self.assert_down_with(ag, "self-signed certificate in certificate chain")
        # nothing was said in plaintext: the server logs only TLS errors
        self.assertNotIn("Protocol error", h.tail(rs.logfile, 50))
        # the operator fixes the file the config names; SIGHUP reads it again
        ag.write_config(ag.render_config(target_extra=self.certs.target_extra()))
        ag.reload()
        ag.wait_for(lambda: target_up(ag) == 1, desc="target up after the reload")

    @needs_tls
    def test_expired_certificate_is_down(self):
        crt, key = self.certs.expired_server()
        rs = self.start_redis(tls=self.certs, tls_crt=crt, tls_key=key)
        ag = tls_agent(self, rs, self.certs)
        self.assert_down_with(ag, "certificate has expired")

    @needs_tls
    def test_wrong_name_is_down(self):
        rs = self.start_redis(tls=self.certs)
        ag = tls_agent(self, rs, self.certs, tls_server_name="redis.other.example")
        self.assert_down_with(ag, "hostname mismatch")

    @needs_tls
    def test_no_client_certificate_is_down(self):
        rs = self.start_redis(tls=self.certs)
        ag = self.start_agent(targets=[("main", rs.url)],
                              target_extra={"tls_ca_file": self.certs.ca})
        ag.wait_for(lambda: target_up(ag) == 0 and
                    "does the server require a client certificate" in ag.log_tail(200),
                    desc="target down without a client certificate")
        self.assertEqual(ag.get("/readyz")[0], 503)

    @needs_tls
    def test_verify_off_is_warned_and_shown(self):
        rs = self.start_redis(tls=self.certs)
        ag = tls_agent(self, rs, self.certs, tls_ca_file=self.certs.other_ca(),
                       tls_verify="off")
        ag.wait_scans(1)
        # the file and line of the key first, as every config warning
        warning = "[target main] tls_verify = off: the server's certificate"
        self.assertIn("warning: %s:" % ag.config_path, ag.log_tail(200))
        self.assertIn(warning, ag.log_tail(200))
        r = h.run_lockwatchd(["-n", "-c", ag.config_path])
        self.assertRegex(r.stdout, rb"\ntls_verify += off\n")
        self.assertNotIn(b"PRIVATE KEY", r.stdout)
        self.assertEqual(r.stderr.decode().count(warning), 1, r.stderr)
        # --once too (issue 24: it said nothing), on stderr beside its exposition
        r = h.run_lockwatchd(["--once", "-c", ag.config_path])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr.decode().count(warning), 1, r.stderr)
        self.assertIn(b"lockwatch_target_up", r.stdout)

    @needs_tls
    def test_lockctl_list_and_release(self):
        rs = self.start_redis(tls=self.certs)
        c = rs.client()
        c.set("lock:tls:job", "tok-A")
        cfg = write_config(url=rs.url, extra="")
        tls = ["--tls-ca-file", self.certs.ca, "--tls-cert-file", self.certs.client_crt,
               "--tls-key-file", self.certs.client_key]
        # the config's url is rediss:// without tls_*: the system CAs refuse it
        p = lockctl(["list"], config=cfg)
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn(b"certificate verify failed", p.stderr)
        p = lockctl(tls + ["list", "--json"], config=cfg)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(b"lock:tls:job", p.stdout)
        # --url rediss:// on a config whose target is plain redis://
        plain = write_config(url="redis://127.0.0.1:1/0")
        p = lockctl(["--url", rs.url] + tls + ["release", "lock:tls:job", "--holder",
                                               "tok-A", "--yes", "--reason", "tls test"],
                    config=plain)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIsNone(c.get("lock:tls:job"))
        # --tls-* with a plain url is a usage error
        p = lockctl(tls + ["list"], config=plain)
        self.assertEqual(p.returncode, 2)
        self.assertIn(b"only used with TLS", p.stderr)

    @needs_tls
    def test_plaintext_port_is_an_error_not_a_downgrade(self):
        rs = self.start_redis()             # plaintext only
        rs.client().set("lock:plain:1", "x")
        before = rs.client().info("stats")["total_commands_processed"]
        p = lockctl(["--url", "rediss://127.0.0.1:%d/0" % rs.port, "list"],
                    config=write_config(rs))
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn(b"no TLS answer from the server", p.stderr)
        # lockctl sent no command in plaintext (only this INFO ran since)
        after = rs.client().info("stats")["total_commands_processed"]
        self.assertEqual(after, before + 1)

    @needs_tls
    def test_liblockwatch_lock_over_tls(self):
        rs = self.start_redis(tls=self.certs)
        sh = Shell(self, rs.port)
        sh.ok("connect a agent=off tls tls_ca_file=%s tls_cert_file=%s tls_key_file=%s"
              % (self.certs.ca, self.certs.client_crt, self.certs.client_key))
        sh.ok("lock a l1 lock:tls:lib 30000 1000 -")
        self.assertIsNotNone(rs.client().get("lock:tls:lib"))
        sh.ok("unlock l1")
        self.assertIsNone(rs.client().get("lock:tls:lib"))
        # a wrong CA: lw_connect fails with the certificate error
        ans = sh.cmd("connect b agent=off tls tls_ca_file=%s tls_cert_file=%s "
                     "tls_key_file=%s" % (self.certs.other_ca(), self.certs.client_crt,
                                          self.certs.client_key))
        self.assertTrue(ans.startswith("ERR"), ans)
        self.assertIn("certificate verify failed", ans)
        # a plaintext port: OpenSSL's reason or what it means, never
        # hiredis's "SSL_connect failed: (null)" (issue 24)
        plain = self.start_redis()
        sh2 = Shell(self, plain.port)
        ans = sh2.cmd("connect c agent=off tls tls_ca_file=%s" % self.certs.ca)
        self.assertTrue(ans.startswith("ERR"), ans)
        self.assertNotIn("(null)", ans)
        self.assertIn("TLS handshake", ans)

    @needs_tls
    def test_cluster_of_three_tls_nodes(self):
        certs = h.TLSCerts(names=("DNS:localhost",))   # no IP: the name must be checked
        cl = topo.Cluster(primaries=3, tls=certs)
        self.addCleanup(cl.stop)
        keys = ["lock:tls:c:%d" % i for i in range(30)]
        cl.load([("SET", k, "v", "PX", "60000") for k in keys])
        url = "rediss://localhost:%d/0" % cl.nodes[0].port
        te = certs.target_extra()
        te["mode"] = "cluster"
        ag = self.start_agent(targets=[("c", url)], target_extra=te)
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_locks", target="c") == 30,
                    timeout=60, desc="all 30 locks of three TLS shards")
        self.assertEqual(h.msum(ag.metrics(), "lockwatch_target_up", target="c"), 1)


    @needs_tls
    def test_sentinel_over_tls(self):
        rs = self.start_redis(tls=self.certs)
        rs.client().set("lock:tls:s", "holder-s", px=60000)
        sn = topo.Sentinel(rs.port, quorum=1, tls=self.certs)
        self.addCleanup(sn.kill)
        h.wait_until(lambda: sn.master_port() == rs.port, 20, desc="sentinel knows the master")
        te = self.certs.target_extra()
        te.update(mode="sentinel", sentinels="127.0.0.1:%d" % sn.port, master_name="mymaster")
        ag = self.start_agent(targets=[("main", "rediss://127.0.0.1/0")], target_extra=te)
        ag.wait_scans(1)
        self.assertEqual(target_up(ag), 1)
        self.assertEqual(ag.lock("lock:tls:s")[0], 200)


if __name__ == "__main__":
    h.main()
