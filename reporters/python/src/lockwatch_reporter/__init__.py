# SPDX-License-Identifier: BSD-3-Clause
"""lockwatch_reporter: report lock waits, holds, waiting and lost events of
redis-py (sync and asyncio) and python-redis-lock to a lockwatch agent, over
UDP, in the lw1 line protocol (docs/line-protocol.md, docs/reporters.md).

    from lockwatch_reporter import ReportingLock
    with r.lock("lock:order:42", timeout=10, lock_class=ReportingLock):
        ...

The wrappers are imported lazily (each needs its own library):
ReportingLock (redis), AsyncReportingLock (redis.asyncio),
ReportingRedisLock (python-redis-lock).  configure() overrides the
environment (LOCKWATCH_SAMPLES, LOCKWATCH_KEY_FILE, LOCKWATCH_OWNER);
stats() returns the reporter's counters.
"""

from ._sender import configure

__all__ = ["ReportingLock", "AsyncReportingLock", "ReportingRedisLock",
           "configure", "stats", "flush"]
__version__ = "0.1.0"

_LAZY = {"ReportingLock": ".redis_py", "AsyncReportingLock": ".aio",
         "ReportingRedisLock": ".pyredislock"}


def __getattr__(name):
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(name)
    import importlib
    return getattr(importlib.import_module(mod, __name__), name)


def stats():
    """The counters of the process's reporter (zeros when it is off):
    queued, sent, datagrams, dropped_queue_full, dropped_send_failed,
    pending."""
    from . import _sender
    return _sender.current().stats()


def flush():
    """Send what is queued now (normally the background thread does it every
    200 ms, and atexit at the end); first, if need be, wait for the
    reporter's thread to resolve the names, at most a second (still
    resolving then: the lines stay queued)."""
    from . import _sender
    r = _sender._reporter
    if r is not None:
        r.wait_ready(_sender.EXIT_WAIT)
        r.flush()
