# SPDX-License-Identifier: BSD-3-Clause
# run-all: idle (its sinks wait a second between messages: next to no CPU; the bound is a
#   lower one, which a busy neighbour cannot break)
"""Slack's rate limit, kept by the sink (issue 14): one message per second
per incoming webhook.

250 leaks that fire in one evaluation are three Slack messages per sink
(100 alerts a message); two [webhook] sections post to the same webhook
URL.  At the receiver every message arrives at least a second after the one
before, whichever sink sent it, and none is lost: the alerts the messages
announce add up to 250 firing and then 250 resolved per sink, nothing was
retried (no 429 needed) or dropped.
"""

import re
import time

import harness as h
from alerts_receiver import Receiver, slack_check

LEAKS = 250
SINKS = ("chat", "chat2")


def slack_section(name, url):
    return ("[webhook %s]\nurl = %s\nformat = slack\ntimeout = 5s\nretry_base = 100ms\n"
            % (name, url))


def announced(text):
    """How many alerts one Slack message carries: "[FIRING] 100 lockwatch
    alerts" for a batch, one alert otherwise."""
    m = re.match(r"\[[A-Z, a-z]+\] (\d+) lockwatch alerts", text)
    return int(m.group(1)) if m else 1


class SlackPacing(h.TestCase):

    def test_burst_is_paced_and_complete(self):
        rs = self.start_redis()
        c = rs.client()
        slack = Receiver(check=slack_check)
        self.addCleanup(slack.stop)
        ag = self.start_agent(rs, scan_interval="200ms", leak_grace="1s", max_hold="1h",
                              extra="".join(slack_section(n, slack.url) for n in SINKS))
        pipe = c.pipeline(transaction=True)
        for i in range(LEAKS):
            pipe.set("lock:burst:%d" % i, "tok-%d" % i)     # no TTL: leaks
        pipe.execute()

        def carried(word):
            return sum(announced(r.json()["text"]) for r in slack.snapshot()
                       if r.json()["text"].startswith("[%s]" % word))
        # 2 x 3 messages at >= 1 s each: about 6 s
        ag.wait_for(lambda: carried("FIRING") == len(SINKS) * LEAKS, timeout=40,
                    desc="%d firing alerts announced on Slack" % (len(SINKS) * LEAKS))
        c.delete(*["lock:burst:%d" % i for i in range(LEAKS)])
        ag.wait_for(lambda: carried("RESOLVED") == len(SINKS) * LEAKS, timeout=40,
                    desc="%d resolutions announced on Slack" % (len(SINKS) * LEAKS))
        time.sleep(1.5)         # nothing more is on its way

        reqs = slack.snapshot()
        for r in reqs:
            self.assertIsNone(slack_check(r))
        self.assertEqual(carried("FIRING"), len(SINKS) * LEAKS)
        self.assertEqual(carried("RESOLVED"), len(SINKS) * LEAKS)
        self.assertGreaterEqual(len(reqs), 2 * len(SINKS) * 3, [r.json() for r in reqs])
        gaps = [b.at - a.at for a, b in zip(reqs, reqs[1:])]
        self.assertGreaterEqual(min(gaps), 1.0, "arrival gaps %s" % gaps)

        m = ag.metrics()
        for sink in SINKS:
            self.assertEqual(h.msum(m, "lockwatch_notifications_total", sink=sink,
                                    result="dropped"), 0)
            self.assertEqual(h.msum(m, "lockwatch_notifications_total", sink=sink,
                                    result="retried"), 0)
        self.assertEqual(h.msum(m, "lockwatch_notifications_total", result="sent"), len(reqs))


if __name__ == "__main__":
    h.main()
