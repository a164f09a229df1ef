# SPDX-License-Identifier: BSD-3-Clause
# run-all: idle (its receivers wait out retries, Retry-After and resolutions: under 1 s of
#   CPU in a minute; its bounds have seconds of room)
"""Alerts delivered to webhooks (issue 4 acceptance, SPEC "Alerts").

  - a leaked lock produces exactly one `firing` notice at a local receiver,
    signed per Standard Webhooks with the shared secret (both secret forms:
    "whsec_<base64>" and plain bytes); a TTL produces exactly one `resolved`;
    GET /api/v1/alerts and lockwatch_alerts_firing follow;
  - a receiver that answers 500 three times then 200 gets the notice on the
    4th try, with the same webhook-id each time (retry_base = 100ms);
    Retry-After is honoured;
  - a receiver that hangs does not delay the scans (scan timestamps keep
    their interval), and SIGTERM still exits within the flush bound;
  - 410 Gone disables the sink (dropped, no more requests);
  - a reload keeps a firing alert firing without a second notice;
  - hostile keys (quotes, newlines, NUL, invalid UTF-8, markup, 3,000 bytes)
    give valid JSON notices and API output;
  - LockTargetDown fires when the target cannot be scanned and resolves when
    it can again;
  - a Slack receiver that checks Slack's documented minimal shape accepts
    the notices, with &, <, > escaped.
"""

import base64
import os
import re
import signal
import time

import harness as h
from alerts_receiver import Receiver, slack_check, verify_signature

KEY = "lock:invoice:42"
CLASS = "lock:invoice:*"


def webhook_section(name, url, fmt="generic", secret_file=None, timeout="5s",
                    retry_base="100ms"):
    lines = ["[webhook %s]" % name, "url = %s" % url, "format = %s" % fmt,
             "timeout = %s" % timeout, "retry_base = %s" % retry_base]
    if secret_file:
        lines.append("secret_file = %s" % secret_file)
    return "\n".join(lines) + "\n"


class Alerts(h.TestCase):

    def receiver(self, **kw):
        r = Receiver(**kw)
        self.addCleanup(r.stop)
        return r

    def secret(self, text):
        d = h._mkdtemp("lw-secret-")
        path = os.path.join(d, "hook.secret")
        with open(path, "w") as f:
            f.write(text + "\n")
        os.chmod(path, 0o600)
        return path

    def agent(self, rs, extra, **kw):
        kw.setdefault("scan_interval", "200ms")
        kw.setdefault("leak_grace", "1s")
        kw.setdefault("max_hold", "1h")
        return self.start_agent(rs, extra=extra, **kw)

    def firing(self, ag):
        st, body = ag.get_json("/api/v1/alerts")
        self.assertEqual(st, 200, body)
        return body["alerts"]

    def sink_count(self, ag, sink, result):
        return h.msum(ag.metrics(), "lockwatch_notifications_total", sink=sink, result=result)

    def check_leak_cycle(self, secret_text):
        rs = self.start_redis()
        c = rs.client()
        rcv = self.receiver()
        path = self.secret(secret_text)
        ag = self.agent(rs, webhook_section("oncall", rcv.url, secret_file=path))
        # before anything: every alertname present, all 0
        m = ag.metrics()
        # (the names of alerts/alert_kinds.h, each kind a row there)
        with open(os.path.join(h.REPO, "alerts", "alert_kinds.h")) as f:
            kinds = re.findall(r'X\(LOCK_\w+,\s*"(\w+)"', f.read())
        self.assertIn("LockRedlockSplit", kinds)
        self.assertEqual(sorted(l["alertname"] for l, v in h.select(m, "lockwatch_alerts_firing")),
                         sorted(kinds))
        self.assertEqual(h.msum(m, "lockwatch_alerts_firing"), 0)

        c.set(KEY, "tok-invoice")              # no TTL: a leak after leak_grace
        ag.wait_for(lambda: rcv.notices("firing"), timeout=15, desc="a firing notice")
        time.sleep(2.5)                         # ~10 more scans and ticks
        fir = rcv.notices("firing")
        self.assertEqual(len(fir), 1, [b for _, b in fir])
        req, body = fir[0]
        self.assertIsNone(verify_signature(req, secret_text))
        self.assertEqual(req.headers.get("content-type"), "application/json")
        self.assertEqual(body["reason"], "new")
        self.assertEqual(len(body["alerts"]), 1)
        a = body["alerts"][0]
        self.assertEqual(a["status"], "firing")
        self.assertEqual(a["labels"], {"alertname": "LockLeaked", "target": "main",
                                       "class": CLASS, "key": KEY, "severity": "warning"})
        self.assertIn(KEY, a["annotations"]["summary"])
        self.assertIn("tok-invoice", a["annotations"]["description"])
        self.assertRegex(a["fingerprint"], r"^[0-9a-f]{16}$")

        alerts = self.firing(ag)
        self.assertEqual(len(alerts), 1, alerts)
        self.assertEqual(alerts[0]["labels"], a["labels"])
        self.assertEqual(alerts[0]["fingerprint"], a["fingerprint"])
        self.assertEqual(alerts[0]["state"], "firing")
        self.assertEqual(alerts[0]["startsAt"], a["startsAt"])
        self.assertIsNotNone(alerts[0]["lastSentAt"])
        m = ag.metrics()
        self.assertEqual(h.msum(m, "lockwatch_alerts_firing", alertname="LockLeaked"), 1)
        self.assertEqual(h.msum(m, "lockwatch_notifications_total", sink="oncall",
                                result="sent"), 1)

        c.pexpire(KEY, 600000)
        ag.wait_for(lambda: rcv.notices("resolved"), timeout=10, desc="a resolved notice")
        time.sleep(2)
        res = rcv.notices("resolved")
        self.assertEqual(len(res), 1, [b for _, b in res])
        req, body = res[0]
        self.assertIsNone(verify_signature(req, secret_text))
        self.assertEqual(body["alerts"][0]["fingerprint"], a["fingerprint"])
        self.assertEqual(body["alerts"][0]["status"], "resolved")
        self.assertIn("endsAt", body["alerts"][0])
        self.assertEqual(len(rcv.notices("firing")), 1)
        self.assertEqual(self.firing(ag), [])
        self.assertEqual(h.msum(ag.metrics(), "lockwatch_alerts_firing"), 0)
        # the secret is nowhere in the log or the metrics
        with open(ag.logfile, "rb") as f:
            self.assertNotIn(secret_text.encode(), f.read())
        self.assertNotIn(secret_text.encode(), ag.metrics_text())

    def test_leak_fires_once_and_resolves_whsec_secret(self):
        key = base64.b64encode(os.urandom(32)).decode()
        self.check_leak_cycle("whsec_" + key)

    def test_leak_fires_once_and_resolves_plain_secret(self):
        self.check_leak_cycle("a plain shared secret, used byte for byte")

    def test_500_three_times_then_200(self):
        rs = self.start_redis()
        c = rs.client()
        rcv = self.receiver(statuses=[500, 500, 500])
        ag = self.agent(rs, webhook_section("flaky", rcv.url))
        c.set(KEY, "tok")
        ag.wait_for(lambda: len(rcv.snapshot()) >= 4, timeout=30, desc="4 tries")
        time.sleep(1.5)
        reqs = rcv.snapshot()
        self.assertEqual(len(reqs), 4, [r.body for r in reqs])
        self.assertEqual(len({r.headers["webhook-id"] for r in reqs}), 1,
                         "webhook-id changed across retries")
        self.assertEqual(len({r.body for r in reqs}), 1)
        ag.wait_for(lambda: self.sink_count(ag, "flaky", "sent") == 1, timeout=5,
                    desc="sent 1")
        self.assertEqual(self.sink_count(ag, "flaky", "retried"), 3)
        self.assertEqual(self.sink_count(ag, "flaky", "dropped"), 0)

    def test_retry_after_is_honoured(self):
        rs = self.start_redis()
        c = rs.client()
        rcv = self.receiver(statuses=[503], retry_after=2)
        ag = self.agent(rs, webhook_section("busy", rcv.url))
        c.set(KEY, "tok")
        ag.wait_for(lambda: len(rcv.snapshot()) >= 2, timeout=20, desc="the retry")
        first, second = rcv.snapshot()[:2]
        # retry_base is 100ms, so only Retry-After explains the wait
        self.assertGreaterEqual(second.at - first.at, 1.9)
        self.assertEqual(first.headers["webhook-id"], second.headers["webhook-id"])
        ag.wait_for(lambda: self.sink_count(ag, "busy", "sent") == 1, timeout=5, desc="sent")
        self.assertEqual(self.sink_count(ag, "busy", "retried"), 1)

    def test_hanging_receiver_does_not_delay_scans(self):
        rs = self.start_redis()
        c = rs.client()
        hang = self.receiver(hang=True)
        ok = self.receiver()
        ag = self.agent(rs, webhook_section("stuck", hang.url, timeout="30s") +
                        webhook_section("fine", ok.url), scan_interval="300ms")
        c.set(KEY, "tok")
        ag.wait_for(lambda: hang.snapshot(), timeout=15, desc="the hanging request")
        # the other sink is not held up by the stuck one
        ag.wait_for(lambda: ok.notices("firing"), timeout=5, desc="the other sink's notice")
        stamps = []
        t_end = time.monotonic() + 4
        while time.monotonic() < t_end:
            v = h.mmax(ag.metrics(), "lockwatch_last_scan_timestamp_seconds", target="main")
            if not stamps or v != stamps[-1]:
                stamps.append(v)
            time.sleep(0.05)
        gaps = [b - a for a, b in zip(stamps, stamps[1:])]
        self.assertGreaterEqual(len(stamps), 8, stamps)
        self.assertLess(max(gaps), 1.5, "a scan was delayed: gaps %s" % gaps)
        # SIGTERM: the stuck notice gets a bounded last chance, then exit 0
        t0 = time.monotonic()
        ag.stop(timeout=10)
        self.assertLess(time.monotonic() - t0, 8.5)

    def test_410_disables_the_sink(self):
        rs = self.start_redis()
        c = rs.client()
        rcv = self.receiver(default=410)
        ag = self.agent(rs, webhook_section("gone", rcv.url))
        c.set(KEY, "tok")
        ag.wait_for(lambda: self.sink_count(ag, "gone", "dropped") >= 1, timeout=15,
                    desc="the notice dropped on 410")
        c.set("lock:invoice:43", "tok2")        # a second leak: nothing is sent
        ag.wait_for(lambda: len(self.firing(ag)) == 2, timeout=10, desc="two alerts firing")
        time.sleep(1)
        self.assertEqual(len(rcv.snapshot()), 1)
        self.assertEqual(self.sink_count(ag, "gone", "retried"), 0)
        self.assertIn("410", ag.log_tail())
        self.assertEqual(h.msum(ag.metrics(), "lockwatch_notification_sink_disabled",
                                sink="gone"), 1)

    def test_notices_outlive_ten_failed_tries(self):
        """A receiver down for minutes loses nothing: a notice is tried for
        an hour, not 10 tries (a firing one is said again only at
        repeat_interval, 1h; a resolution never)."""
        rs = self.start_redis()
        c = rs.client()
        rcv = self.receiver()
        ag = self.agent(rs, webhook_section("flaky", rcv.url, retry_base="10ms"))
        rcv.statuses = [503] * 12
        c.set(KEY, "tok")
        ag.wait_for(lambda: any(getattr(r, "status", None) == 200
                                for r, _ in rcv.notices("firing")),
                    timeout=90, desc="the firing notice, at last")
        rcv.statuses = [503] * 11
        c.pexpire(KEY, 600000)
        ag.wait_for(lambda: any(getattr(r, "status", None) == 200
                                for r, _ in rcv.notices("resolved")),
                    timeout=90, desc="the resolution, at last")
        for status, tries in (("firing", 13), ("resolved", 12)):
            reqs = [r for r in rcv.snapshot() if r.json().get("status") == status]
            self.assertEqual(len(reqs), tries, [getattr(r, "status", None) for r in reqs])
            self.assertEqual(len({r.headers.get("webhook-id") for r in reqs}), 1)
        self.assertEqual(self.sink_count(ag, "flaky", "dropped"), 0)
        self.assertEqual(h.msum(ag.metrics(), "lockwatch_notification_queue", sink="flaky"), 0)

    def test_a_notice_the_receiver_always_fails_holds_no_other_back(self):
        """A receiver that fails one body for ever (500) but takes others:
        after 10 tries, with others waiting, the next is tried; delivered,
        the first is dropped and said, and the others flow in order."""
        rs = self.start_redis()
        c = rs.client()
        poison = "lock:invoice:poison"

        def status_for(req):
            return 500 if poison.encode() in req.body else None
        rcv = self.receiver(status_for=status_for)
        ag = self.agent(rs, webhook_section("picky", rcv.url, retry_base="10ms"))
        c.set(poison, "tok")
        ag.wait_for(lambda: len(rcv.snapshot()) >= 3, timeout=30, desc="tries of the poison")
        c.set(KEY, "tok2")                      # a notice behind it
        ag.wait_for(lambda: any(getattr(r, "status", None) == 200
                                for r, _ in rcv.notices("firing")),
                    timeout=90, desc="the other alert delivered")
        # tried 10 times or more (the other may come after its tenth try)
        said = re.compile(r"the receiver takes other notices but failed one (\d+) times: dropped")
        ag.wait_for(lambda: said.search(ag.log_tail()), timeout=10,
                    desc="the poison dropped and said")
        self.assertGreaterEqual(int(said.search(ag.log_tail()).group(1)), 10)
        ok = [b for r, b in rcv.notices("firing") if getattr(r, "status", None) == 200]
        self.assertEqual([a["labels"]["key"] for b in ok for a in b["alerts"]], [KEY])
        self.assertIn("trying the next to tell a receiver that is down", ag.log_tail())
        self.assertEqual(self.sink_count(ag, "picky", "dropped"), 1)

    def test_reload_keeps_firing_alert(self):
        rs = self.start_redis()
        c = rs.client()
        rcv = self.receiver()
        hooks = webhook_section("oncall", rcv.url)
        ag = self.agent(rs, hooks)
        c.set(KEY, "tok")
        ag.wait_for(lambda: rcv.notices("firing"), timeout=15, desc="a firing notice")
        before = self.firing(ag)
        ag.write_config(ag.render_config(max_hold="2h", extra=hooks))
        ag.reload()
        ag.wait_for(lambda: "reloaded" in ag.log_tail(), timeout=10, desc="reloaded")
        ag.wait_scans(5)
        time.sleep(1.5)
        self.assertEqual(len(rcv.notices("firing")), 1, "a second firing notice after reload")
        self.assertEqual(rcv.notices("resolved"), [])
        after = self.firing(ag)
        self.assertEqual([(a["fingerprint"], a["startsAt"]) for a in after],
                         [(a["fingerprint"], a["startsAt"]) for a in before])
        # a sink the reload adds hears the alert firing at once, not at
        # repeat_interval (1h); the one kept hears nothing again
        new = self.receiver()
        both = hooks + webhook_section("added", new.url)
        ag.write_config(ag.render_config(max_hold="2h", extra=both))
        ag.reload()
        ag.wait_for(lambda: new.notices("firing"), timeout=10, desc="the new sink told")
        time.sleep(1.5)
        got = new.notices("firing")
        self.assertEqual(len(got), 1, [b for _, b in got])
        self.assertEqual(got[0][1]["reason"], "repeat")
        self.assertEqual(got[0][1]["alerts"][0]["fingerprint"], before[0]["fingerprint"])
        self.assertEqual(len(rcv.notices("firing")), 1)
        self.assertIn("webhook added: new at the reload (or on again): told of the 1 alert(s) "
                      "firing",
                      ag.log_tail())

    def test_hostile_keys_stay_valid_json(self):
        rs = self.start_redis()
        c = rs.client()
        rcv = self.receiver()
        slack = self.receiver(check=slack_check)
        ag = self.agent(rs, webhook_section("oncall", rcv.url) +
                        webhook_section("chat", slack.url, fmt="slack"))
        keys = [b'lock:"quoted"\\back', b"lock:new\nline", b"lock:nul\x00byte",
                b"lock:bad\xff\xfeutf8", b"lock:<!channel>&<@U1>",
                b"lock:" + b"x" * 3000, "lock:ключ:☃".encode()]
        for k in keys:
            c.set(k, b"holder\x00\xff\"\n<b>")
        def all_firing():
            return len(self.firing(ag)) == len(keys)
        ag.wait_for(all_firing, timeout=20, desc="%d alerts firing" % len(keys))
        ag.wait_for(lambda: sum(len(b["alerts"]) for _, b in rcv.notices("firing"))
                    == len(keys), timeout=10, desc="all notified")
        seen = set()
        for req, body in rcv.notices("firing"):
            for a in body["alerts"]:
                seen.add(a["labels"]["key"])
                self.assertLessEqual(len(a["labels"]["key"].encode()), 260)
        self.assertIn('lock:"quoted"\\back', seen)
        self.assertIn("lock:new\nline", seen)
        # a key that sanitising changed is marked, so keys that differ only in
        # invalid bytes stay apart: "...\u2026#" and 16 hex digits
        def marked(text):
            return any(re.fullmatch(re.escape(text) + "\u2026#[0-9a-f]{16}", k) for k in seen)
        self.assertTrue(marked("lock:nul\ufffdbyte"), seen)
        self.assertTrue(marked("lock:bad\ufffd\ufffdutf8"), seen)
        self.assertIn("lock:ключ:☃", seen)
        self.assertTrue(any(k.startswith("lock:xxx") and "\u2026#" in k for k in seen), seen)
        # Slack accepted every message and markup arrived escaped
        ag.wait_for(lambda: slack.snapshot(), timeout=10, desc="a Slack message")
        time.sleep(0.5)
        for r in slack.snapshot():
            self.assertIsNone(slack_check(r))
        text = "".join(r.json()["text"] for r in slack.snapshot())
        self.assertIn("lock:&lt;!channel&gt;&amp;&lt;@U1&gt;", text)
        self.assertNotIn("<!channel>", text)
        self.assertEqual(h.msum(ag.metrics(), "lockwatch_notifications_total", sink="chat",
                                result="dropped"), 0)
        rc, out = h.promtool_check(ag.metrics_text())
        self.assertEqual(rc, 0, out)

    def test_slack_minimal_shape(self):
        rs = self.start_redis()
        c = rs.client()
        slack = self.receiver(check=slack_check)
        ag = self.agent(rs, webhook_section("chat", slack.url, fmt="slack"))
        c.set(KEY, "tok")
        ag.wait_for(lambda: slack.snapshot(), timeout=15, desc="a Slack message")
        c.pexpire(KEY, 60000)
        ag.wait_for(lambda: len(slack.snapshot()) >= 2, timeout=10, desc="the resolution")
        time.sleep(0.5)
        msgs = [r.json() for r in slack.snapshot()]
        self.assertEqual(len(msgs), 2, msgs)
        for m in msgs:
            # plain text: a key's * _ ~ ` format nothing
            self.assertEqual(m, {"text": m["text"], "mrkdwn": False})
        self.assertIn("FIRING", msgs[0]["text"])
        self.assertIn("LockLeaked", msgs[0]["text"])
        self.assertIn(KEY, msgs[0]["text"])
        self.assertIn("RESOLVED", msgs[1]["text"])
        self.assertEqual(self.sink_count(ag, "chat", "sent"), 2)
        self.assertEqual(self.sink_count(ag, "chat", "dropped"), 0)
        # the URL (a Slack URL embeds its token) is not in the log
        self.assertNotIn(slack.url, ag.log_tail(500))

    def test_target_down_fires_and_resolves(self):
        rs = self.start_redis()
        rcv = self.receiver()
        ag = self.agent(rs, webhook_section("oncall", rcv.url))
        ag.wait_scans(1)
        rs.stop()
        def down():
            return [b for _, b in rcv.notices("firing")
                    if b["alerts"][0]["labels"]["alertname"] == "LockTargetDown"]
        fir = ag.wait_for(down, timeout=20, desc="LockTargetDown firing")
        self.assertEqual(fir[0]["alerts"][0]["labels"], {"alertname": "LockTargetDown",
                                                          "target": "main",
                                                          "severity": "critical"})
        self.assertEqual(h.msum(ag.metrics(), "lockwatch_alerts_firing",
                                alertname="LockTargetDown"), 1)
        rs.restart()
        ag.wait_for(lambda: rcv.notices("resolved"), timeout=30, desc="LockTargetDown resolved")
        self.assertEqual(len(down()), 1)


if __name__ == "__main__":
    h.main()
