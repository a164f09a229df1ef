# SPDX-License-Identifier: BSD-3-Clause
# run-all: heavy (dpkg-buildpackage builds the whole tree from a clean copy: both cores for its
#   length)
"""The Debian packages: packaging/deb-build (what `make deb` runs) builds
lockwatch, liblockwatch0 and liblockwatch-dev from a clean copy of the
committed tree; unpacked into a scratch root with `dpkg -x`, the packaged
lockwatchd accepts the packaged config (`lockwatchd -n`, exit 0), the config
is the one conffile, the file lists are what each package should hold, and a
program builds against the -dev package and runs on the shared library.

Skipped, saying why, unless dpkg-buildpackage and debhelper are installed
(`apt-get install dpkg-dev debhelper`; `make deb` installs them).  No network,
no root needed, nothing installed on the machine itself.
"""

import os
import re
import shutil
import subprocess
import tempfile
import unittest

import testmain

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CHANGELOG = os.path.join(REPO, "packaging", "debian", "changelog")


def run(args, **kw):
    kw.setdefault("timeout", 60)
    return subprocess.run(args, capture_output=True, text=True, **kw)


def missing_tools():
    need = {"dpkg-buildpackage": "dpkg-dev", "dpkg-deb": "dpkg", "dh": "debhelper"}
    return sorted({pkg for tool, pkg in need.items() if shutil.which(tool) is None})


def contents(deb):
    """{path: (mode string, link target or None)} of a .deb's data."""
    out = {}
    for line in run(["dpkg-deb", "-c", deb]).stdout.splitlines():
        f = line.split()
        mode, path = f[0], f[5]
        target = f[7] if len(f) > 7 and f[6] == "->" else None
        out[path[1:] if path.startswith(".") else path] = (mode, target)
    return out


@unittest.skipIf(missing_tools(), "building the packages needs %s (apt-get install %s)"
                 % (" and ".join(missing_tools()), " ".join(missing_tools())))
class DebianPackages(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="lw-deb-")
        cls.out = os.path.join(cls.tmp, "deb")
        r = run([os.path.join(REPO, "packaging", "deb-build"), cls.out], timeout=240)
        if r.returncode != 0:
            shutil.rmtree(cls.tmp, ignore_errors=True)
            raise AssertionError("packaging/deb-build failed:\n" + r.stdout + r.stderr)
        version = run(["dpkg-parsechangelog", "-l", CHANGELOG, "-S", "Version"]).stdout.strip()
        arch = run(["dpkg", "--print-architecture"]).stdout.strip()
        cls.version = version
        cls.debs = {p: os.path.join(cls.out, "%s_%s_%s.deb" % (p, version, arch))
                    for p in ("lockwatch", "liblockwatch0", "liblockwatch-dev")}
        cls.root = os.path.join(cls.tmp, "root")
        for p, deb in cls.debs.items():
            if not os.path.exists(deb):
                raise AssertionError("no %s among %s" % (deb, os.listdir(cls.out)))
            r = run(["dpkg", "-x", deb, cls.root])
            if r.returncode != 0:
                raise AssertionError("dpkg -x %s: %s" % (deb, r.stderr))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def control(self, pkg, name):
        d = os.path.join(self.tmp, "control-" + pkg)
        if not os.path.isdir(d):
            r = run(["dpkg-deb", "-e", self.debs[pkg], d])
            self.assertEqual(r.returncode, 0, r.stderr)
        path = os.path.join(d, name)
        if not os.path.exists(path):
            return None
        with open(path) as f:
            return f.read()

    def test_version_matches_the_makefile(self):
        with open(os.path.join(REPO, "Makefile")) as f:
            m = re.search(r"^VERSION\s*:?=\s*(\S+)", f.read(), re.M)
        self.assertEqual(self.version.rsplit("-", 1)[0], m.group(1))

    def test_packaged_agent_accepts_packaged_config(self):
        agent = os.path.join(self.root, "usr", "sbin", "lockwatchd")
        ini = os.path.join(self.root, "etc", "lockwatch", "lockwatch.ini")
        r = run([agent, "-n", "-c", ini])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("[agent]", r.stdout)
        self.assertIn("[target main]", r.stdout)
        r = run([agent, "--version"])
        self.assertEqual((r.returncode, r.stdout.splitlines()[0]),
                         (0, "lockwatchd " + self.version.rsplit("-", 1)[0]))
        self.assertRegex(r.stdout.splitlines()[1], r"^hiredis \S+, TLS \(rediss://\): ")

    def test_conffiles(self):
        self.assertEqual(self.control("lockwatch", "conffiles").split(),
                         ["/etc/lockwatch/lockwatch.ini"])
        for pkg in ("liblockwatch0", "liblockwatch-dev"):
            self.assertIsNone(self.control(pkg, "conffiles"), pkg)

    def test_lockwatch_files(self):
        files = contents(self.debs["lockwatch"])
        for path in ("/usr/sbin/lockwatchd", "/etc/lockwatch/lockwatch.ini",
                     "/lib/systemd/system/lockwatchd.service",
                     "/usr/share/man/man8/lockwatchd.8.gz",
                     "/usr/share/man/man5/lockwatch.ini.5.gz",
                     "/usr/share/doc/lockwatch/copyright"):
            self.assertIn(path, files)
        self.assertEqual(files["/usr/sbin/lockwatchd"][0], "-rwxr-xr-x")
        # the config names secret files: not world-readable, even before
        # postinst's statoverride gives the lockwatch group read access
        self.assertEqual(files["/etc/lockwatch/lockwatch.ini"][0], "-rw-r-----")
        tracked = run(["git", "-C", REPO, "ls-files", "cli", "packaging/man/lockctl.1"])
        if tracked.returncode == 0:
            if any(l.startswith("cli/") and l.endswith(".c") for l in tracked.stdout.split()):
                self.assertIn("/usr/bin/lockctl", files)
            if "packaging/man/lockctl.1" in tracked.stdout.split():
                self.assertIn("/usr/share/man/man1/lockctl.1.gz", files)
        with open(os.path.join(self.root, "lib/systemd/system/lockwatchd.service")) as f:
            unit = f.read()
        self.assertIn("\nExecStart=/usr/sbin/lockwatchd -d -c /etc/lockwatch/lockwatch.ini\n",
                      unit)
        self.assertIsNone(re.search(r"@[A-Z]+@", unit))
        self.assertIn("\nUser=lockwatch\n", unit)

    def test_maintainer_scripts(self):
        postinst = self.control("lockwatch", "postinst")
        self.assertIn("adduser --quiet --system --group", postinst)
        self.assertIn("dpkg-statoverride --update --add root lockwatch 0640 \"$CONF\"",
                      postinst)
        # debhelper's snippets: enable and start the unit
        self.assertIn("deb-systemd-helper enable 'lockwatchd.service'", postinst)
        self.assertLess(postinst.index("adduser"), postinst.index("deb-systemd-invoke"))
        self.assertIn("dpkg-statoverride --remove", self.control("lockwatch", "postrm"))
        r = run(["sh", "-n", os.path.join(self.tmp, "control-lockwatch", "postinst")])
        self.assertEqual(r.returncode, 0, r.stderr)
        depends = run(["dpkg-deb", "-f", self.debs["lockwatch"], "Depends"]).stdout
        self.assertIn("adduser", depends)
        self.assertIn("libhiredis", depends)

    def test_library_files(self):
        lib = contents(self.debs["liblockwatch0"])
        dev = contents(self.debs["liblockwatch-dev"])
        self.assertIn("/usr/lib/liblockwatch.so.0", lib)
        for path in ("/usr/include/lockwatch.h", "/usr/lib/liblockwatch.a",
                     "/usr/lib/pkgconfig/lockwatch.pc", "/usr/share/man/man3/liblockwatch.3.gz"):
            self.assertIn(path, dev)
        self.assertEqual(dev["/usr/lib/liblockwatch.so"][1], "liblockwatch.so.0")
        self.assertEqual(dev["/usr/share/man/man3/lw_lock.3.gz"][1], "liblockwatch.3.gz")
        # no file in two packages
        lw = contents(self.debs["lockwatch"])
        for a, b in ((lib, dev), (lib, lw), (dev, lw)):
            both = {p for p in set(a) & set(b) if not a[p][0].startswith("d")}
            self.assertEqual(both, set())
        dep = run(["dpkg-deb", "-f", self.debs["liblockwatch-dev"], "Depends"]).stdout
        self.assertIn("liblockwatch0 (= %s)" % self.version, dep)
        with open(os.path.join(self.root, "usr/lib/pkgconfig/lockwatch.pc")) as f:
            self.assertIn("prefix=/usr\n", f.read())

    def test_program_builds_against_the_dev_package(self):
        src = os.path.join(self.tmp, "v.c")
        with open(src, "w") as f:
            f.write("#include <stdio.h>\n#include <string.h>\n#include <lockwatch.h>\n"
                    "int main(void) { printf(\"%s %s\\n\", lw_version(), "
                    "lw_strerror(LW_BUSY)); return 0; }\n")
        libdir = os.path.join(self.root, "usr", "lib")
        exe = os.path.join(self.tmp, "v")
        r = run(["cc", "-std=c11", "-Wall", "-Werror",
                 "-I", os.path.join(self.root, "usr", "include"), src, "-o", exe,
                 "-L", libdir, "-llockwatch", "-lhiredis"])
        self.assertEqual(r.returncode, 0, r.stderr)
        r = run([exe], env=dict(os.environ, LD_LIBRARY_PATH=libdir))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split()[0], self.version.rsplit("-", 1)[0])
        r = run(["ldd", exe], env=dict(os.environ, LD_LIBRARY_PATH=libdir))
        self.assertIn(os.path.join(libdir, "liblockwatch.so.0"), r.stdout)


if __name__ == "__main__":
    testmain.main()
