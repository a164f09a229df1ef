# SPDX-License-Identifier: BSD-3-Clause
"""Warnings for a config that loads but exposes something (issue 24), at
-n and when the agent starts:

- [unlock] http = on on a non-loopback listener (0.0.0.0): the release
  endpoint is reachable from the network;
- a release token under 16 bytes;
- secret and key files others may read: world-readable, or readable by a
  group other than the agent's own or "lockwatch" (token_file,
  password_file, release_password_file, [samples] key_file);

- a pattern with a blank (patterns written with spaces, or a '#' comment,
  which only ' ;' starts), a class name with a '#' comment, an
  audit_stream with a blank;

and none for the safe shape (loopback, a 32-byte 0600 token, 0600 files,
comma-separated patterns, ' ;' comments).  Each names FILE:LINE of the
key it is about.  Warnings never fail the load (exit 0).
"""
import os

import harness as h

GOOD_TOKEN = "0123456789abcdef0123456789abcdef"


class ConfigWarnings(h.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = h._mkdtemp("lw-warn-")

    def secret(self, name, text, mode, gid=None):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text + "\n")
        os.chmod(path, mode)
        if gid is not None:
            os.chown(path, -1, gid)
        return path

    def config(self, listen, token_path, extra=""):
        path = os.path.join(self.dir, "lockwatch.ini")
        with open(path, "w") as f:
            f.write("[agent]\nlisten = %s\n\n[target main]\nurl = redis://127.0.0.1:6399/0\n%s\n"
                    "[unlock]\nhttp = on\ntoken_file = %s\n" % (listen, extra, token_path))
        return path

    def check(self, cfg, user="root"):
        # the service user root reads everything: only the tests of it below
        # name another (a host with the package has a "lockwatch" user)
        r = h.run_lockwatchd(["-n", "--service-user", user, "-c", cfg])
        self.assertEqual(r.returncode, 0, r.stderr)
        return [l for l in r.stderr.decode().splitlines() if "warning:" in l]

    def test_exposed_endpoint_short_world_readable_token(self):
        tok = self.secret("unlock.token", "x", 0o644)
        warns = self.check(self.config("0.0.0.0:19717", tok))
        text = "\n".join(warns)
        self.assertEqual(len(warns), 3, text)
        self.assertIn("listen = 0.0.0.0:19717: the release endpoint", text)
        self.assertIn("reachable from the network", text)
        self.assertIn("the token is 1 bytes, short enough to guess", text)
        self.assertIn("is readable by every user (mode 0644)", text)

    def test_the_safe_shape_says_nothing(self):
        tok = self.secret("unlock.token", GOOD_TOKEN, 0o600)
        pw = self.secret("redis.pass", "pw", 0o640, gid=os.getegid())
        self.assertEqual(self.check(self.config("127.0.0.1:19717", tok,
                                                "password_file = %s\n" % pw)), [])

    def test_readable_secret_files(self):
        tok = self.secret("unlock.token", GOOD_TOKEN, 0o600)
        pw = self.secret("redis.pass", "pw", 0o644)
        key = self.secret("samples.key", "k" * 32, 0o640)
        other = [g for g in (1, 2, 3, 4, 7) if g != os.getegid()][0]
        try:
            os.chown(key, -1, other)
        except PermissionError:
            self.skipTest("cannot chgrp a file here (not root)")
        extra = "password_file = %s\n\n[samples]\nkey_file = %s\n" % (pw, key)
        cfg = self.config("127.0.0.1:19717", tok, extra)
        warns = "\n".join(self.check(cfg))
        self.assertIn("%s:6: [target main] password_file: \"%s\" is readable by every user"
                      % (cfg, pw), warns)
        self.assertIn("%s:9: [samples] key_file: \"%s\" is readable by group %d"
                      % (cfg, key, other), warns)
        self.assertNotIn("token_file", warns)

    def test_files_the_service_user_cannot_read(self):
        """-n run as root reads every file; the service runs as its User=
        (--service-user, default lockwatch): a secret only root may read,
        or one in a folder that user may not enter, is said, as the exit 2
        it would meet at start; one it may read is not."""
        if os.geteuid() != 0:
            self.skipTest("-n must run as root to read what its service user cannot")
        import pwd
        nobody = pwd.getpwnam("nobody")
        os.chmod(self.dir, 0o755)
        tok = self.secret("unlock.token", GOOD_TOKEN, 0o600)
        cfg = self.config("127.0.0.1:19717", tok)
        warns = "\n".join(self.check(cfg, "nobody"))
        self.assertIn("%s:9: [unlock] token_file: \"%s\" (owner 0, group 0, mode 0600) is read "
                      "here as root, but the service runs as user nobody, which cannot read it"
                      % (cfg, tok), warns)
        self.assertEqual(self.check(cfg), [])       # root: nothing to say
        os.chown(tok, nobody.pw_uid, -1)
        self.assertEqual(self.check(cfg, "nobody"), [])
        os.chmod(self.dir, 0o700)                   # its folder shut to nobody
        self.assertIn("which cannot read it (or a folder on its way)",
                      "\n".join(self.check(cfg, "nobody")))
        # the daemon itself (no -n) runs as whoever it is: nothing said
        r = h.run_lockwatchd(["--once", "--service-user", "nobody", "-c", cfg])
        self.assertNotIn(b"cannot read it", r.stderr)

    def test_readable_release_password_file(self):
        tok = self.secret("unlock.token", GOOD_TOKEN, 0o600)
        pw = self.secret("redis.pass", "pw", 0o600)
        rpw = self.secret("release.pass", "rpw", 0o644)
        cfg = self.config("127.0.0.1:19717", tok, "password_file = %s\nrelease_user = lockctl\n"
                          "release_password_file = %s\n" % (pw, rpw))
        warns = self.check(cfg)
        self.assertEqual(warns and len(warns), 1, warns)
        self.assertIn("%s:8: [target main] release_password_file: \"%s\" is readable by every "
                      "user (mode 0644)" % (cfg, rpw), warns[0])
        os.chmod(rpw, 0o600)
        self.assertEqual(self.check(cfg), [])

    def test_blanks_in_patterns_are_said(self):
        tok = self.secret("unlock.token", GOOD_TOKEN, 0o600)
        extra = ("patterns = lock:* job:*\nexclude_patterns = lock:x # not these\n\n"
                 "[classes]\nlock:order:* = order # orders\n")
        cfg = self.config("127.0.0.1:19717", tok, extra)
        warns = self.check(cfg)
        text = "\n".join(warns)
        self.assertEqual(len(warns), 3, text)
        # each names the file and line of the key, as a config error does
        self.assertIn('%s:6: [target main] patterns: "lock:* job:*" has a blank' % cfg, text)
        self.assertIn('%s:7: [target main] exclude_patterns: "lock:x # not these" has a blank'
                      % cfg, text)
        self.assertIn('%s:10: [classes] lock:order:* = "order # orders": a comment' % cfg, text)
        # the right shape says nothing
        extra = ("patterns = lock:*, job:*   ; two of them\n\n"
                 "[classes]\nlock:order:* = order ; orders\n")
        self.assertEqual(self.check(self.config("127.0.0.1:19717", tok, extra)), [])

    def test_warned_at_start_too(self):
        rs = self.start_redis()
        tok = self.secret("unlock.token", "short", 0o600)
        ag = self.start_agent(rs, extra="[unlock]\nhttp = on\ntoken_file = %s\n" % tok)
        ag.wait_scans(1)
        self.assertIn("the token is 5 bytes, short enough to guess", ag.log_tail(200))


if __name__ == "__main__":
    h.main()
