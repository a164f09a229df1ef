# SPDX-License-Identifier: BSD-3-Clause
"""How an integration test program ends, as tests/run-all reads it.

Exit status 0: passed; 77 (EXIT_SKIPPED, automake's convention): every
test was skipped, the program had nothing it could check on this machine
(a tool or a build feature is missing); anything else: failed.  Each
distinct skip reason is printed once to stdout as

    skipped: REASON (N of M tests)

which run-all shows under the program's result line, whether it passed
or was skipped as a whole.  unittest itself exits 0 when everything
skipped, which run-all would report as "ok": that is why every test
program ends with main() here (harness.main() for those using the
harness), never with unittest.main().

Standard library only, so that tests needing nothing else (test_man,
test_deb, test_install) stay that way.
"""

import sys
import unittest

EXIT_SKIPPED = 77


def exit_status(result):
    """Print the "skipped:" lines of a unittest result; return its exit status."""
    reasons = {}
    for _, why in result.skipped:
        reasons[why] = reasons.get(why, 0) + 1
    for why, n in reasons.items():
        print("skipped: %s (%d of %d tests)" % (why, n, result.testsRun), flush=True)
    if not result.wasSuccessful():
        return 1
    if result.testsRun > 0 and len(result.skipped) == result.testsRun:
        return EXIT_SKIPPED
    return 0


def main():
    """unittest.main() (verbosity 2, the usual command line), then exit
    with exit_status() of its result."""
    prog = unittest.main(verbosity=2, exit=False)
    sys.exit(exit_status(prog.result))
