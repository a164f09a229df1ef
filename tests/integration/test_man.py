# SPDX-License-Identifier: BSD-3-Clause
"""The man pages under packaging/man/: each renders without a warning, and
each says what the code does.

- every page renders with `groff -man -ww -z` and `man -l` without a
  warning (lockctl.1 too, when its author has written it);
- lockwatch.ini.5: its generated OPTIONS block is what packaging/man/gen_ini5
  makes from the option table now (gen_ini5 -c), and, checked from the
  outside, the rendered page lists exactly the sections, keys and defaults
  that `lockwatchd -n` prints for a config using every section; its
  EXAMPLES config passes `lockwatchd -n`;
- lockwatchd.8: the options of `lockwatchd -h`, the HTTP paths routed in
  agent/http/http.c and the alert names of alerts/alertset.c;
- liblockwatch.3: the SYNOPSIS has every lw_ prototype of client/lockwatch.h,
  word for word, the statuses and flags are described, and the program under
  EXAMPLES compiles and links against the built library.

Standard library only; no network.  Run with /usr/bin/python3.
"""

import glob
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import unittest

import testmain

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("LOCKWATCH_BUILD") or os.path.join(REPO, "build")
LOCKWATCHD = os.path.join(BUILD, "bin", "lockwatchd")
MAN = os.path.join(REPO, "packaging", "man")

# The project's warning flags (Makefile WARN), so the generator is held to
# the same standard as the rest of the C code.
CFLAGS = ["-std=c11", "-O1", "-Wall", "-Wextra", "-Wshadow", "-Wstrict-prototypes",
          "-Wmissing-prototypes", "-Wformat=2", "-Wvla", "-fno-common", "-Werror",
          "-D_DEFAULT_SOURCE", "-D_GNU_SOURCE"]

ENV = dict(os.environ, LC_ALL="C.UTF-8", MANPAGER="cat", PAGER="cat", MANWIDTH="200")


def pages():
    return sorted(p for p in glob.glob(os.path.join(MAN, "*.[1-8]")))


def render(page, width=200):
    """The page as plain text (man -l), failing on any warning."""
    env = dict(ENV, MANWIDTH=str(width))
    r = subprocess.run(["man", "--warnings=all", "-l", page], env=env,
                       capture_output=True, timeout=30)
    if r.returncode != 0 or r.stderr:
        raise AssertionError("man -l %s: exit %d: %s" % (page, r.returncode,
                                                        r.stderr.decode("utf-8", "replace")))
    return r.stdout.decode("utf-8")


def section(text, name):
    """The lines of the rendered section NAME (heading excluded)."""
    lines = text.split("\n")
    out, inside = [], False
    for line in lines:
        if re.match(r"^[A-Z][A-Z -]*$", line):
            inside = line.strip() == name
            continue
        if inside:
            out.append(line)
    if not out:
        raise AssertionError("no %s section" % name)
    return out


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def run(args, **kw):
    kw.setdefault("timeout", 60)
    return subprocess.run(args, capture_output=True, text=True, **kw)


class Render(unittest.TestCase):
    def test_every_page_renders_without_warnings(self):
        found = [os.path.basename(p) for p in pages()]
        for want in ("lockwatchd.8", "lockwatch.ini.5", "liblockwatch.3"):
            self.assertIn(want, found)
        for page in pages():
            with self.subTest(page=os.path.basename(page)):
                r = run(["groff", "-man", "-Tutf8", "-ww", "-z", page], env=ENV)
                self.assertEqual((r.returncode, r.stderr), (0, ""), page)
                for width in (80, 200):
                    text = render(page, width)
                    self.assertIn("NAME", text)
                    self.assertIn("SEE ALSO", text)
                # at MANWIDTH=80 every line fits, examples (.EX, .nf) too
                for line in render(page, 80).split("\n"):
                    self.assertLessEqual(len(line), 80, line)
                # the file name is the page's name and section
                name, sect = os.path.basename(page).rsplit(".", 1)
                head = read(page)
                m = re.search(r"^\.TH\s+(\S+)\s+(\d)", head, re.M)
                self.assertIsNotNone(m, "no .TH line")
                self.assertEqual((m.group(1), m.group(2)), (name.upper(), sect))

    def test_lockctl_page(self):
        page = os.path.join(MAN, "lockctl.1")
        if not os.path.exists(page):
            self.skipTest("packaging/man/lockctl.1 is not written yet (cli/ owns it)")
        text = render(page, 80)
        self.assertIn("lockctl", text)
        # as docs/lockctl.md and the code (config_target_address()):
        # localhost and 127.0.0.1 name the same address
        flat = " ".join(text.split())
        self.assertNotIn("127.0.0.1 differ", flat)
        self.assertIn("localhost, 127.0.0.1 and [::1] are one host", flat)

    def test_see_also_names_pages_that_exist(self):
        ours = {os.path.basename(p).rsplit(".", 1)[0] + "(" + p[-1] + ")" for p in pages()}
        ours.add("lockctl(1)")      # written by cli/'s author
        for page in pages():
            text = render(page)
            for ref in re.findall(r"\b((?:lockwatch|liblockwatch|lockctl)[\w.]*\(\d\))",
                                  "\n".join(section(text, "SEE ALSO"))):
                self.assertIn(ref, ours, "%s: SEE ALSO %s" % (os.path.basename(page), ref))


class IniPage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="lw-man-")
        cls.gen = os.path.join(cls.tmp, "gen_ini5")
        r = run(["cc"] + CFLAGS + ["-I", REPO, "-o", cls.gen,
                                   os.path.join(MAN, "gen_ini5.c")] +
                [os.path.join(REPO, f) for f in ("conf/options.c", "conf/optvalue.c",
                                                 "conf/optsyntax.c", "conf/secretfile.c",
                                                 "conf/optpairs.c", "conf/optshard.c",
                                                 "common/strbuf.c")],
                cwd=REPO)
        if r.returncode != 0:
            raise AssertionError("building gen_ini5: " + r.stdout + r.stderr)
        cls.page = os.path.join(MAN, "lockwatch.ini.5")
        cls.text = render(cls.page)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_generated_block_is_up_to_date(self):
        r = run([self.gen, "-c", self.page])
        self.assertEqual(r.returncode, 0, r.stderr)
        # and the check does catch a stale page
        stale = os.path.join(self.tmp, "stale.5")
        text = read(self.page)
        with open(stale, "w", encoding="utf-8") as f:
            f.write(text.replace("(default \\fB15s\\fR)", "(default \\fB16s\\fR)"))
        r = run([self.gen, "-c", stale])
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("out of date", r.stderr)
        r = run([self.gen, "-w", stale])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(read(stale), text)

    def effective(self):
        """{section kind: {key: default or None}} from `lockwatchd -n` of a
        config that has every kind of section."""
        if not os.access(LOCKWATCHD, os.X_OK):
            self.skipTest("%s is not built (run make)" % LOCKWATCHD)
        ini = os.path.join(self.tmp, "all.ini")
        with open(ini, "w") as f:
            f.write("[target a]\nurl = redis://127.0.0.1:1/0\n"
                    "[target b]\nurl = redis://127.0.0.1:2/0\n"
                    "[redlock g]\ntargets = a, b\n"
                    "[classes]\nlock:x:* = x\n"
                    "[webhook w]\nurl = http://127.0.0.1:1/\n")
        r = run([LOCKWATCHD, "-n", "-c", ini])
        self.assertEqual(r.returncode, 0, r.stderr)
        out, kind = {}, None
        for line in r.stdout.splitlines():
            m = re.match(r"^\[(\w+)(?: (\S+))?\]$", line)
            if m:
                kind = m.group(1)
                out.setdefault(kind, {})
                continue
            if kind is None or kind == "classes":
                continue
            m = re.match(r"^; (\w+) is not set$", line)
            if m:
                out[kind][m.group(1)] = None
                continue
            m = re.match(r"^(\w+)\s+= (.*)$", line)
            if m:
                value = m.group(2)
                if kind in ("target", "redlock", "webhook") and m.group(1) in ("url", "targets"):
                    value = "(instance)"    # set by the test config, not a default
                out[kind][m.group(1)] = value
        return out

    def documented(self):
        """{section kind: {key: default or None or "(required)"}} from the
        rendered OPTIONS section."""
        out, kind = {}, None
        for line in section(self.text, "OPTIONS"):
            m = re.match(r"^   \[(\w+)(?: NAME)?\]$", line)
            if m:
                kind = m.group(1)
                out[kind] = {}
                continue
            m = re.match(r"^       (\w+) = ([\w: ]+?) \((.*)\)$", line)
            if m and kind is not None:
                d = m.group(3)
                if d.startswith("default "):
                    d = d[len("default "):]
                elif d == "not set by default":
                    d = None
                out[kind][m.group(1)] = d
        return out

    def test_page_lists_what_the_agent_reads(self):
        eff, doc = self.effective(), self.documented()
        self.assertEqual(sorted(doc), sorted(eff), "sections")
        for kind in eff:
            with self.subTest(section=kind):
                self.assertEqual(sorted(doc[kind]), sorted(eff[kind]))
                for key, value in eff[kind].items():
                    if value == "(instance)":
                        continue
                    if kind == "redlock" or (kind == "webhook" and key == "url"):
                        continue
                    self.assertEqual(doc[kind][key], value, "[%s] %s" % (kind, key))
        self.assertEqual(doc["classes"], {})
        self.assertIn("GLOB = CLASS", "\n".join(section(self.text, "OPTIONS")))

    def test_every_key_has_type_range_and_help(self):
        lines = section(self.text, "OPTIONS")
        entries = 0
        for i, line in enumerate(lines):
            if re.match(r"^       \w+ = ", line):
                entries += 1
                body = " ".join(l.strip() for l in lines[i + 1:i + 6])
                self.assertIn("Values: ", body, line)
                help_text = body.split("Values: ")[0].strip()
                if " choice " not in line:
                    self.assertTrue(help_text, "no help for " + line)
        self.assertGreater(entries, 25)

    def test_example_config_is_valid(self):
        if not os.access(LOCKWATCHD, os.X_OK):
            self.skipTest("%s is not built (run make)" % LOCKWATCHD)
        ex = section(self.text, "EXAMPLES")
        start = next(i for i, l in enumerate(ex) if l.strip() == "[agent]")
        conf = []
        for line in ex[start:]:
            if line and not line.startswith("           ") and line.strip():
                break
            conf.append(line[11:] if line.startswith("           ") else "")
        text = "\n".join(conf).strip() + "\n"
        self.assertIn("[classes]", text)
        # point the secret files at real ones
        for path in sorted(set(re.findall(r"/etc/lockwatch/\S+", text))):
            local = os.path.join(self.tmp, os.path.basename(path))
            with open(local, "w") as f:
                f.write("s3cret\n")
            os.chmod(local, 0o600)
            text = text.replace(path, local)
        ini = os.path.join(self.tmp, "example.ini")
        with open(ini, "w") as f:
            f.write(text)
        r = run([LOCKWATCHD, "-n", "-c", ini])
        self.assertEqual(r.returncode, 0, text + r.stderr)
        self.assertNotIn("s3cret", r.stdout)


class AgentPage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.text = render(os.path.join(MAN, "lockwatchd.8"))

    def test_options_match_usage(self):
        if not os.access(LOCKWATCHD, os.X_OK):
            self.skipTest("%s is not built (run make)" % LOCKWATCHD)
        r = run([LOCKWATCHD, "-h"])
        self.assertEqual(r.returncode, 0)
        for line in r.stdout.splitlines():
            self.assertLessEqual(len(line), 80, line)
        usage = set(re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", r.stdout))
        opts = "\n".join(section(self.text, "OPTIONS"))
        documented = set(re.findall(r"^       (--?[a-zA-Z][\w-]*)", opts, re.M))
        documented |= set(re.findall(r"^       -\w, (--[\w-]+)", opts, re.M))
        self.assertEqual(usage, documented)
        synopsis = " ".join(section(self.text, "SYNOPSIS"))
        for o in ("-c file", "-d", "-n", "-v", "--once", "-h", "-V"):
            self.assertIn(o, synopsis)

    def test_http_paths_match_the_router(self):
        src = read(os.path.join(REPO, "agent", "http", "http.c"))
        macros = {}
        for h in glob.glob(os.path.join(REPO, "agent", "http", "*.h")):
            macros.update(re.findall(r'^#define (\w+_PATH)\s+"([^"]+)"', read(h), re.M))
        # the route table: one row {methods, path, match, read, body, body_free, heavy, query}
        m = re.search(r"static const struct route routes\[\] = \{(.*?)\n\};", src, re.S)
        self.assertIsNotNone(m, "no route table (static const struct route routes[]) in "
                                "agent/http/http.c")
        body = re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S)
        rows = re.findall(r"\{([^{}]*)\}", body)
        self.assertTrue(rows, "the route table has no rows")
        exact, prefixes = set(), set()
        for row in rows:
            cols = [c.strip() for c in row.split(",")]
            self.assertEqual(len(cols), 8, "route row {%s}: expected 8 columns" % row)
            path, match = cols[1], cols[2]
            if path.startswith('"'):
                path = path.strip('"')
            else:
                self.assertIn(path, macros, "route row {%s}: %s is no *_PATH macro of "
                                            "agent/http/*.h" % (row, path))
                path = macros[path]
            self.assertIn(match, ("ROUTE_EXACT", "ROUTE_PREFIX"), row)
            if match == "ROUTE_EXACT":
                exact.add(path.rstrip("/") or "/")
            else:
                prefixes.add(path)
        endpoints = "\n".join(section(self.text, "HTTP ENDPOINTS"))
        listed = set(re.findall(r"^       (?:POST )?(/[\w/]*)", endpoints, re.M))
        covered = set()
        for p in listed:
            if p in exact:
                covered.add(p)
                continue
            pre = [x for x in prefixes if p.startswith(x) and len(p) > len(x)]
            self.assertTrue(pre, "%s is not routed in agent/http/http.c" % p)
            covered.update(pre)
        self.assertEqual(covered, exact | prefixes, "routed but not in the page")

    def test_alert_names_match_the_code(self):
        src = read(os.path.join(REPO, "alerts", "alert_kinds.h"))
        rows = re.findall(r'^\s*X\(\s*\w+\s*,\s*"(\w+)"', src, re.M)
        code = set(rows)
        self.assertTrue(code)
        self.assertEqual(len(rows), len(code), "an alertname twice in ALERT_KINDS")
        page = set(re.findall(r"\b(Lock[A-Z]\w+)", self.text.replace("\u2010\n", "")))
        self.assertEqual(code, page)

    def test_metric_families_match_the_code(self):
        # the rows of metric_families[] (agent/http/metrics.c): the only
        # place a family is declared
        # and the rows kept in macros of metrics_impl.h (expanded in its place)
        src = read(os.path.join(REPO, "agent", "http", "metrics.c")) + \
            read(os.path.join(REPO, "agent", "http", "metrics_impl.h"))
        # (the standard process_* families keep their own names, listed whole)
        rows = re.findall(r'^\s*\{ "(?:lockwatch_)?(\w+)", "(?:gauge|counter|histogram)"', src,
                          re.M)
        code = set(rows)
        self.assertIn("locks_leaked", code)
        self.assertEqual(len(rows), len(code), "a family twice in metric_families[]")
        metrics = " ".join(section(self.text, "METRICS"))
        page = set(re.findall(r"(?<![\w{,])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?=[{,.;\s]|$)",
                              metrics))
        page |= set(re.findall(r"(?<![\w{,])([a-z]+)\{", metrics))
        page = {m for m in page if m not in ("top_offenders",)}
        self.assertEqual(sorted(code - page), [], "families the agent exports that "
                         "lockwatchd.8 METRICS does not list")
        self.assertEqual(sorted(page - code), [], "METRICS lists families the agent "
                         "does not export")

    def test_exit_status_and_signals(self):
        status = "\n".join(section(self.text, "EXIT STATUS"))
        for code in ("0", "1", "2"):
            self.assertRegex(status, r"(?m)^       %s(\s|$)" % code)
        sigs = "\n".join(section(self.text, "SIGNALS"))
        for s in ("SIGHUP", "SIGTERM", "SIGINT"):
            self.assertIn(s, sigs)


def header_prototypes():
    """{name: normalised prototype} of every LW_API function in lockwatch.h."""
    src = read(os.path.join(REPO, "client", "lockwatch.h"))
    src = re.sub(r"/\*.*?\*/", " ", src, flags=re.S)
    out = {}
    for m in re.finditer(r"^LW_API\s+([^;]+);", src, re.M):
        proto = " ".join(m.group(1).split()) + ";"
        proto = proto.replace("( ", "(").replace(" )", ")")
        name = re.search(r"(lw_\w+)\s*\(", proto).group(1)
        out[name] = proto
    return out


class LibraryPage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.text = render(os.path.join(MAN, "liblockwatch.3"))

    def test_synopsis_has_every_prototype(self):
        protos = header_prototypes()
        self.assertGreater(len(protos), 10)
        synopsis = " ".join(" ".join(section(self.text, "SYNOPSIS")).split())
        documented = {}
        for stmt in synopsis.split(";"):
            m = re.search(r"(lw_\w+)\(", stmt)
            if m:
                documented[m.group(1)] = stmt.strip().replace("#include <lockwatch.h> ", "") + ";"
        self.assertEqual(sorted(documented), sorted(protos))
        for name, proto in protos.items():
            self.assertEqual(documented[name], proto, name)
        names = " ".join(section(self.text, "NAME"))
        for name in protos:
            self.assertIn(name, names)

    def test_statuses_and_flags_are_described(self):
        src = read(os.path.join(REPO, "client", "lockwatch.h"))
        statuses = set(re.findall(r"^\s+(LW_[A-Z]+)\s*=", src, re.M))
        flags = set(re.findall(r"^#define (LW_[A-Z_]+)\s+0x", src, re.M))
        self.assertIn("LW_BUSY", statuses)
        self.assertIn("LW_FENCING", flags)
        ret = "\n".join(section(self.text, "RETURN VALUE"))
        for s in statuses:
            self.assertRegex(ret, r"(?m)^       %s(\s|$)" % s)
        body = "\n".join(section(self.text, "DESCRIPTION"))
        for f in flags:
            self.assertRegex(body, r"(?m)^       %s(\s|$)" % f)
        for word in ("THREAD SAFETY", "REPORTING", "EXAMPLES", "ENVIRONMENT"):
            self.assertTrue(section(self.text, word))

    def test_example_compiles_and_links(self):
        ex = section(self.text, "EXAMPLES")
        start = next(i for i, l in enumerate(ex) if l.strip().startswith("#include"))
        code = []
        for line in ex[start:]:
            if line.strip() and not line.startswith("           "):
                break
            code.append(line[11:])
        src = "\n".join(code).strip() + "\n"
        self.assertIn("int\nmain(void)", src)
        self.assertTrue(all(ord(c) < 128 for c in src), "non-ASCII in the example")
        lib = os.path.join(BUILD, "lib", "liblockwatch.a")
        with tempfile.TemporaryDirectory(prefix="lw-man-ex-") as d:
            path = os.path.join(d, "job.c")
            with open(path, "w") as f:
                f.write(src)
            # what lockwatch.pc requires: hiredis, and libcrypto (signed samples)
            hiredis = run(["pkg-config", "--cflags", "--libs", "hiredis",
                           "libcrypto"]).stdout.split()
            args = ["cc", "-std=c11", "-Wall", "-Wextra", "-Werror",
                    "-I", os.path.join(REPO, "client"), path]
            if os.path.exists(lib):
                args += ["-o", os.path.join(d, "job"), lib] + hiredis + ["-pthread"]
                # a sanitizer build of the library (SANITIZE=...) links with its runtime
                undefined = run(["nm", "-u", lib]).stdout
                sanitizers = [s for s, sym in (("address", "__asan_"), ("undefined", "__ubsan_"))
                              if sym in undefined]
                if sanitizers:
                    args.append("-fsanitize=" + ",".join(sanitizers))
            else:
                args += ["-c", "-o", os.path.join(d, "job.o")]
            r = run(args)
            self.assertEqual(r.returncode, 0, " ".join(map(shlex.quote, args)) + "\n" +
                             r.stderr + "\n" + src)


if __name__ == "__main__":
    testmain.main()
