# SPDX-License-Identifier: BSD-3-Clause
"""make install: honours DESTDIR and PREFIX, installs the agent, the example
config (which the installed agent accepts), the systemd unit with its paths
filled in, and the client library with its header and pkg-config file."""

import os
import subprocess
import sys
import tempfile
import unittest

import testmain

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("LOCKWATCH_BUILD") or os.path.join(REPO, "build")


class Install(unittest.TestCase):
    def test_destdir_install(self):
        with tempfile.TemporaryDirectory(prefix="lw-install-") as dest:
            r = subprocess.run(["make", "-s", "-C", REPO, "install", "DESTDIR=" + dest,
                                "PREFIX=/usr", "BUILD=" + BUILD],
                               capture_output=True, text=True, timeout=300)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            agent = os.path.join(dest, "usr/sbin/lockwatchd")
            ini = os.path.join(dest, "etc/lockwatch/lockwatch.ini")
            unit = os.path.join(dest, "lib/systemd/system/lockwatchd.service")
            for p in (agent, ini, unit):
                self.assertTrue(os.path.exists(p), p)
            self.assertTrue(os.access(agent, os.X_OK))
            self.assertEqual(os.stat(ini).st_mode & 0o777, 0o640)
            text = open(unit).read()
            self.assertIn("ExecStart=/usr/sbin/lockwatchd -d -c /etc/lockwatch/lockwatch.ini", text)
            self.assertNotIn("@SBINDIR@", text)
            self.assertNotIn("@SYSCONFDIR@", text)
            r = subprocess.run([agent, "-n", "-c", ini], capture_output=True, text=True, timeout=30)
            self.assertEqual(r.returncode, 0, r.stderr)
            # systemctl reload checks the file first: a bad one fails the
            # reload, with the reason, and is not sent to the agent
            reloads = [l[len("ExecReload="):] for l in text.splitlines()
                       if l.startswith("ExecReload=")]
            self.assertEqual(len(reloads), 2, reloads)
            self.assertTrue(reloads[1].startswith("/bin/kill -HUP"), reloads)
            bad = ini + ".bad"
            with open(ini) as f, open(bad, "w") as g:
                g.write(f.read() + "\n[target typo]\nscan_intervall = 2s\n")
            for path, ok in ((ini, True), (bad, False)):
                cmd = reloads[0][len("/bin/sh -c "):].strip("'").replace(
                    "/usr/sbin/lockwatchd", agent).replace("/etc/lockwatch/lockwatch.ini", path)
                r = subprocess.run(["/bin/sh", "-c", cmd], capture_output=True, text=True,
                                   timeout=30)
                self.assertEqual(r.returncode == 0, ok, (path, r.stderr))
                self.assertEqual(r.stdout, "")
            self.assertIn("scan_intervall", r.stderr)
            if os.path.exists(os.path.join(REPO, "client", "lockwatch.h")):
                for p in ("usr/include/lockwatch.h", "usr/lib/liblockwatch.a",
                          "usr/lib/liblockwatch.so.0", "usr/lib/pkgconfig/lockwatch.pc"):
                    self.assertTrue(os.path.exists(os.path.join(dest, p)), p)
                pc = open(os.path.join(dest, "usr/lib/pkgconfig/lockwatch.pc")).read()
                self.assertIn("\nprefix=/usr\n", "\n" + pc)
            # a second install keeps an edited config
            with open(ini, "a") as f:
                f.write("; edited by the operator\n")
            r = subprocess.run(["make", "-s", "-C", REPO, "install", "DESTDIR=" + dest,
                                "PREFIX=/usr", "BUILD=" + BUILD],
                               capture_output=True, text=True, timeout=300)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("edited by the operator", open(ini).read())

    def test_pc_follows_prefix(self):
        """lockwatch.pc names the PREFIX of the install that writes it, even
        when the build before ran without one (it was /usr/local)."""
        if not os.path.exists(os.path.join(REPO, "client", "lockwatch.h")):
            self.skipTest("no client library in this tree")
        pc = os.path.join(BUILD, "lib", "lockwatch.pc")
        try:
            for prefix in ("/opt/lw", "/usr"):
                with tempfile.TemporaryDirectory(prefix="lw-install-") as dest:
                    r = subprocess.run(["make", "-s", "-C", REPO, "install", "DESTDIR=" + dest,
                                        "PREFIX=" + prefix, "BUILD=" + BUILD],
                                       capture_output=True, text=True, timeout=300)
                    self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                    with open(os.path.join(dest, prefix.lstrip("/"),
                                           "lib/pkgconfig/lockwatch.pc")) as f:
                        self.assertIn("\nprefix=%s\n" % prefix, "\n" + f.read())
        finally:    # the build tree's as `make` leaves it
            subprocess.run(["make", "-s", "-C", REPO, "BUILD=" + BUILD, pc],
                           capture_output=True, timeout=300)


if __name__ == "__main__":
    testmain.main()
