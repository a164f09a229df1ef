#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""tests/interop runner (README.md beside it).
  runner.py [--only NAME,...]        run the scenarios, print "N passed, N failed"
  runner.py --layouts DIR [--only]   write every client's real key layout to DIR
"""

import argparse
import os
import signal
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))


def main():
    # SIGTERM (make's or CI's timeout) ends the run through atexit, which
    # kills every client, redis-server and agent the run started
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    ap = argparse.ArgumentParser()
    ap.add_argument("--layouts", metavar="DIR")
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    only = [x for x in a.only.split(",") if x]
    if a.layouts:
        import layouts
        layouts.run(a.layouts, only)
        return 0
    import scenarios
    return scenarios.run(only)


if __name__ == "__main__":
    sys.exit(main())
