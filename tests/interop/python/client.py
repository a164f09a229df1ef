# SPDX-License-Identifier: BSD-3-Clause
"""redis-py Lock, python-redis-lock and pottery Redlock driven by the scenario
protocol of tests/interop/README.md.  argv: redis://127.0.0.1:PORT
Kinds: redispy (redis.lock.Lock), prl (python-redis-lock), pottery (Redlock on
one master).  Ops: lock [lease=ms] (blocking), trylock, unlock, extend lease=ms.
Runs in the venv under build/interop/ (pinned in requirements.txt)."""

import json
import queue
import sys
import threading
import time

import pottery
import redis
import redis_lock
from importlib.metadata import version as _version

OUT = threading.Lock()


def emit(actor, op, kind, name, ok, info):
    line = json.dumps({"t": int(time.time() * 1000), "actor": actor, "op": op, "kind": kind,
                       "name": name, "ok": ok, "info": info})
    with OUT:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


class Client:
    def __init__(self, url):
        self.r = redis.Redis.from_url(url)
        self.held = {}       # (actor, kind, name) -> lock object

    def run(self, actor, op, kind, name, opt):
        lease = int(opt.get("lease", "0"))
        key = (actor, kind, name)
        if op in ("lock", "trylock"):
            blocking = op == "lock"
            if kind == "redispy":
                lk = self.r.lock(name, timeout=lease / 1000.0 if lease else None)
                got = lk.acquire(blocking=blocking)
                info = "token=%s" % (lk.local.token.decode() if got else "")
            elif kind == "prl":
                lk = redis_lock.Lock(self.r, name, expire=lease // 1000 if lease else None,
                                     auto_renewal=False)
                got = lk.acquire(blocking=blocking)
                info = "id=%s" % lk.id
            elif kind == "pottery":
                lk = pottery.Redlock(key=name, masters={self.r},
                                     auto_release_time=(lease or 60000) / 1000.0)
                got = lk.acquire(blocking=blocking)
                info = "uuid=%s" % getattr(lk, "_uuid", "")
            else:
                raise ValueError("unknown kind %s" % kind)
            if not got:
                raise RuntimeError("busy")
            self.held[key] = lk
            return info
        if op == "unlock":
            lk = self.held.pop(key)
            lk.release()
            return "released"
        if op == "extend":
            lk = self.held[key]
            if kind == "redispy":
                lk.extend(lease / 1000.0, replace_ttl=True)
            elif kind == "prl":
                lk.extend(expire=lease // 1000)
            else:
                lk.extend()
            return "extended"
        raise ValueError("unknown op %s" % op)


def actor_loop(c, actor, q):
    while True:
        w = q.get()
        if w is None:
            return
        opt = dict(x.split("=", 1) for x in w[4:] if "=" in x)
        try:
            info = c.run(actor, w[1], w[2], w[3], opt)
            emit(actor, w[1], w[2], w[3], True, info)
        except Exception as e:   # every failure is an answer, never a crash
            emit(actor, w[1], w[2], w[3], False, "%s: %s" % (type(e).__name__, e))


def main():
    c = Client(sys.argv[1])
    actors, threads = {}, []
    emit("-", "ready", "-", "-", True, "redis-py %s python-redis-lock %s pottery %s"
         % (redis.__version__, redis_lock.__version__, _version("pottery")))
    for line in sys.stdin:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line == "quit":
            break
        w = line.split()
        if len(w) < 4:
            emit("-", "error", "-", "-", False, "want ACTOR OP KIND NAME: " + line)
            continue
        if w[0] not in actors:
            actors[w[0]] = queue.Queue()
            t = threading.Thread(target=actor_loop, args=(c, w[0], actors[w[0]]), daemon=True)
            t.start()
            threads.append(t)
        actors[w[0]].put(w)
    for q in actors.values():
        q.put(None)
    for t in threads:
        t.join(5)


if __name__ == "__main__":
    main()
