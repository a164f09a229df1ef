# SPDX-License-Identifier: BSD-3-Clause
# run-all: idle (lockctl against a closed port; no Redis)
"""Every lockctl command the docs (the reporters' READMEs too) and the
shipped alert rules tell an operator to run is one lockctl accepts: the
placeholders filled in, it is never a usage error (exit 2, "unrecognized
option").  The target's Redis is a closed port, so each command fails at
the connection (exit 3) or, for the agent's commands, at the agent, after
its options were parsed."""

import os
import re
import subprocess

import harness as h
import topo

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCES = ["README.md", "packaging/prometheus/lockwatch-rules.yml"] + \
    ["docs/" + f for f in sorted(os.listdir(os.path.join(REPO, "docs"))) if f.endswith(".md")] + \
    ["reporters/%s/README.md" % r for r in ("go", "java", "node", "python")]
# what a reader puts in place of each placeholder
FILL = [(r"\{\{ *\$labels\.target *\}\}", "main"), (r"\{\{ *\$labels\.class *\}\}", "lock:*"),
        (r"\bTARGET\b", "main"), (r"\bCLASS\b", "lock:*"), (r"\bKEY\b|\bK\b", "lock:x"),
        (r"\bH\b", "tok"), (r"\bCOMMAND\b", "list"), (r"\bDURATION\b", "5m"),
        (r"\bKIND\b", "leaked"), (r"\bN\b", "5"), (r"<target>", "main"), (r"<key>", "lock:x"),
        (r"<[^>]*>", "tok")]


def commands():
    """(source, command) for each whole command line in backquotes: a
    synopsis ([...]), a bare option named in prose (`release --holder`) or
    a command that needs a key named without one (`lockctl show --json`) is no command."""
    out = []
    for src in SOURCES:
        with open(os.path.join(REPO, src)) as f:
            text = f.read()
        for cmd in re.findall(r"`(lockctl [^`]*)`", text):
            if re.fullmatch(r"lockctl (show|release|expire)( --[a-z-]+)*", cmd):
                continue
            if "[" in cmd or re.search(r"--[a-z-]+$", cmd) and not cmd.endswith("--help") \
                    and not cmd.endswith("--json") and not cmd.endswith("--follow"):
                continue
            out.append((src, cmd))
    return out


class DocCommands(h.TestCase):

    def test_every_documented_command_parses(self):
        d = h._mkdtemp("lw-doccmd-")
        cfg = os.path.join(d, "lockwatch.ini")
        with open(cfg, "w") as f:
            f.write("[agent]\nlisten = 127.0.0.1:1\n\n[target main]\n"
                    "url = redis://127.0.0.1:1/0\npatterns = lock:*\n")
        found = commands()
        self.assertGreater(len(found), 10, found)
        self.assertTrue(any("--pattern" in c for _, c in found), found)
        for src, cmd in found:
            line = cmd
            for pat, val in FILL:
                line = re.sub(pat, val, line)
            argv = re.findall(r"'([^']*)'|(\S+)", line)
            argv = [a or b for a, b in argv][1:]
            # a write asks for confirmation on a terminal: only check it
            if {"release", "expire"} & set(argv) and "--help" not in argv:
                argv.append("--dry-run")
            try:
                r = subprocess.run([topo.LOCKCTL, "-c", cfg] + argv, capture_output=True,
                                   stdin=subprocess.DEVNULL, timeout=10)
            except subprocess.TimeoutExpired:
                continue            # events --follow waits for the agent: parsed
            self.assertNotEqual(r.returncode, 2, "%s: `%s` is a usage error: %s" %
                                (src, cmd, r.stderr.decode(errors="replace")))
            self.assertNotIn(b"unrecognized option", r.stderr, (src, cmd))


if __name__ == "__main__":
    h.main()
