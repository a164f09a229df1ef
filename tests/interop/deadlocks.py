# SPDX-License-Identifier: BSD-3-Clause
"""The wait-for graph against real Redisson fair locks (issue 26; docs/deadlocks.md).

  redisson-new/deadlock     two threads of one Redisson client, each holding
                            one RFairLock and blocked in lock() on the other's:
                            the agent, following keyspace notifications,
                            raises LockDeadlock within the issue's 2 s of the
                            second thread joining its queue, naming both keys
                            and both holders (`<uuid>:<thread id>`, the hash
                            fields Redisson wrote), and lockctl deadlocks
                            shows it;
  redisson-new/one-order    the same two fair locks taken in one order
                            (x then y) by four threads in a loop, heavy
                            contention: no deadlock, ever (0 false cycles),
                            while the graph does see the queues' edges.

The contention runs LOCKWATCH_DEADLOCK_SOAK seconds: 15 by default, so the
whole interop run keeps to its budget (README.md "Budgets");
`make interop-deadlock-soak` runs the issue's full 60 s.
"""

import json
import os
import subprocess
import time

import harness
from scenarios import Env, LOCKCTL, R, redisson_field, until

NOTIFY = "Kg$lshzxet"
FOLLOW_BOUND = 2.0          # seconds: the bound in follow mode
SOAK = float(os.environ.get("LOCKWATCH_DEADLOCK_SOAK", "15"))


def follow_env(scen):
    env = Env(scen, scan_interval="10s", target_extra={"incremental": "on",
                                                       "reconcile_interval": "1h"})
    env.r.config_set("notify-keyspace-events", NOTIFY)
    env.start_agent()
    return env


def firing(env, name):
    st, body = env.agent.get_json("/api/v1/alerts")
    return [a for a in body.get("alerts", []) if a["labels"]["alertname"] == name] \
        if st == 200 else []


def deadlocks(env):
    st, body = env.agent.get_json("/api/v1/deadlocks")
    return body if st == 200 else {"deadlocks": [], "graph": {}}


def redisson_deadlock(kind):
    scen = kind + "/deadlock"
    env = follow_env(scen)
    try:
        c = env.client(kind, name="c")
        fx = redisson_field(c, c.do("t1 lock fair lock:dl:x"))
        fy = redisson_field(c, c.do("t2 lock fair lock:dl:y"))
        # both holds published, and the graph running, before the cycle closes
        until(lambda: deadlocks(env)["graph"].get("passes", 0) >= 3, desc="graph passes")
        env.agent.wait_for(lambda: env.agent.lock("lock:dl:y")[0] == 200, 20, desc="y seen")
        c.pending("t1 lock fair lock:dl:y")
        until(lambda: env.r.llen("redisson_lock_queue:{lock:dl:y}") == 1, desc="t1 queued on y")
        c.pending("t2 lock fair lock:dl:x")
        until(lambda: env.r.llen("redisson_lock_queue:{lock:dl:x}") == 1, timeout=10,
              desc="t2 queued on x")
        closed = time.monotonic()
        env.agent.wait_for(lambda: firing(env, "LockDeadlock"), 20, interval=0.05,
                           desc="LockDeadlock")
        took = time.monotonic() - closed
        print("      measured: LockDeadlock %.3f s after the second thread queued (bound %.1f s)"
              % (took, FOLLOW_BOUND), flush=True)
        R.check(scen, "LockDeadlock within %.0f s (follow mode)" % FOLLOW_BOUND,
                took <= FOLLOW_BOUND, "%.3f s" % took)
        (a,) = firing(env, "LockDeadlock")
        desc = a["annotations"]["description"]
        R.check(scen, "the alert names both keys and both holders",
                all(s in desc for s in ("lock:dl:x", "lock:dl:y", fx, fy)), desc)
        body = deadlocks(env)
        d = body["deadlocks"][0] if body["deadlocks"] else {"steps": []}
        R.check(scen, "one deadlock on target main, through the fair queues",
                len(body["deadlocks"]) == 1 and d.get("target") == "main" and
                {s["source"] for s in d["steps"]} == {"fair-queue"}, body)
        R.check(scen, "its holders are the Redisson hash fields",
                sorted(s["holder"] for s in d["steps"]) == sorted([fx, fy]), d)
        p = subprocess.run([LOCKCTL, "-c", env.config, "--agent",
                            "http://127.0.0.1:%d" % env.agent.port, "deadlocks"],
                           capture_output=True, text=True, timeout=30,
                           env=dict(os.environ, COLUMNS="80"))
        R.check(scen, "lockctl deadlocks shows it in 80 columns",
                p.returncode == 0 and "lock:dl:x" in p.stdout and
                all(len(l) <= 80 for l in p.stdout.splitlines()), p.stdout + p.stderr)
    finally:
        env.close()


def redisson_one_order(kind, threads=4):
    """Four threads take x then y, release y then x, as fast as they can."""
    scen = kind + "/one-order"
    env = follow_env(scen)
    try:
        c = env.client(kind, name="c")
        steps = ["lock fair lock:dl:x", "lock fair lock:dl:y", "unlock fair lock:dl:y",
                 "unlock fair lock:dl:x"]
        state = {}                  # actor -> (step, pending)
        for t in range(threads):
            actor = "t%d" % (t + 1)
            state[actor] = (0, c.pending("%s %s" % (actor, steps[0])))
        rounds, max_edges, max_queue, alerts = 0, 0, 0, 0
        end = time.monotonic() + SOAK
        next_look = 0.0
        while time.monotonic() < end:
            moved = False
            for actor, (i, p) in list(state.items()):
                ev = p.done()
                if ev is None:
                    continue
                if not ev.get("ok"):
                    raise AssertionError("%s %s: %r" % (actor, steps[i], ev))
                i = (i + 1) % len(steps)
                rounds += i == 0
                state[actor] = (i, c.pending("%s %s" % (actor, steps[i])))
                moved = True
            if time.monotonic() >= next_look:
                g = deadlocks(env)
                max_edges = max(max_edges, g["graph"].get("edges", 0))
                alerts += len(firing(env, "LockDeadlock"))
                max_queue = max(max_queue, env.r.llen("redisson_lock_queue:{lock:dl:x}"))
                next_look = time.monotonic() + 0.2
            if not moved:
                time.sleep(0.002)
        m = harness.parse_metrics(env.agent.metrics_text())
        total = harness.msum(m, "lockwatch_deadlocks_total")
        print("      measured: %d rounds of x then y by %d threads in %.0f s; the graph saw up "
              "to %d edges, x's queue up to %d waiters; deadlocks found %d"
              % (rounds, threads, SOAK, max_edges, max_queue, total), flush=True)
        R.check(scen, "contention: the graph saw waiters (edges > 0)", max_edges > 0,
                "max edges %d" % max_edges)
        R.check(scen, "no deadlock found in %.0f s of one-order contention" % SOAK,
                total == 0 and alerts == 0, "deadlocks_total %s, alerts seen %d" % (total, alerts))
        body = deadlocks(env)
        R.check(scen, "no deadlock and no inversion in the report",
                body["deadlocks"] == [] and body.get("inversions") == [], json.dumps(body)[:600])
    finally:
        env.close()


SCENARIOS = [
    ("redisson-new/deadlock", lambda: redisson_deadlock("redisson-new")),
    ("redisson-new/one-order", lambda: redisson_one_order("redisson-new")),
]
