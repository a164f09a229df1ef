# SPDX-License-Identifier: BSD-3-Clause
"""Where the interop clients live once `make interop-deps` fetched and built
them (build/interop/, tests/interop/README.md), and how to start each one.
start(kind, redis_port) -> clientproc.ClientProc."""

import os

from clientproc import ClientProc

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
IDIR = os.environ.get("LOCKWATCH_INTEROP_DIR") or os.path.join(REPO, "build", "interop")
JAVA = os.environ.get("JAVA", "java")

# name -> (what it is, pinned version as the runner reports it)
CLIENTS = {
    "redisson-legacy": "Redisson 2.2.13, the pre-2016-07 channel names (java/redisson-legacy/pom.xml)",
    "redisson-old": "Redisson 3.16.8 (tests/interop/java/redisson-old/pom.xml)",
    "redisson-new": "Redisson 3.52.0 (tests/interop/java/redisson-new/pom.xml)",
    "spring": "ShedLock 6.10.0 + Spring Integration RedisLockRegistry 6.5.5 (java/spring/pom.xml)",
    "python": "redis-py 5.2.1, python-redis-lock 4.0.0, pottery 3.0.1 (python/requirements.txt)",
    "node": "redlock 4.2.0, redis-semaphore 5.8.0 on ioredis (node/package-lock.json)",
    "go": "go-redsync/redsync v4.8.2 on go-redis v9.0.5 (go/go.mod; builds with Debian 12's Go 1.19)",
}


def _java(module, main, args):
    with open(os.path.join(IDIR, module + ".cp")) as f:
        cp = f.read().strip()
    classes = os.path.join(IDIR, "classes-" + module)
    return [JAVA, "-Xss512k", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m",
            "-cp", classes + ":" + cp, main] + list(args)


def argv(kind, ports, extra=()):
    urls = ["redis://127.0.0.1:%d" % p for p in ports]
    if kind == "redisson-legacy":
        return _java(kind, "lwinterop.RedissonLegacyMain", urls[:1])
    if kind in ("redisson-old", "redisson-new"):
        return _java(kind, "lwinterop.RedissonClientMain", urls[:1])
    if kind == "spring":
        return _java("spring", "lwinterop.SpringClientMain", [str(ports[0])] + list(extra))
    if kind == "python":
        return [os.path.join(IDIR, "venv", "bin", "python"), os.path.join(HERE, "python", "client.py"),
                urls[0]]
    if kind == "node":
        return ["node", os.path.join(HERE, "node", "client.js")] + urls
    if kind == "go":
        return [os.path.join(IDIR, "bin", "interop-redsync")] + urls
    raise ValueError("unknown client %s" % kind)


def start(kind, port, *more_ports, extra=(), name=None):
    env = dict(os.environ)
    if kind == "node":
        env["NODE_PATH"] = os.path.join(IDIR, "node", "node_modules")
    cp = ClientProc(name or kind, argv(kind, (port,) + more_ports, extra), env=env)
    import harness               # killed at exit like the servers the harness starts
    harness._live_procs.append(cp.proc)
    return cp
