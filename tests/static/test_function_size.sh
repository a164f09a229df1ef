#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# No function of the production code (agent, alerts, cli, collectors,
# common, conf, client) is over 120 lines: a longer one does several
# things, and is split by concern.  A function is counted from the line
# of its opening "{" at column 0 to its closing "}" at column 0, both
# included, as the house style puts them; its name is the last line
# before the "{" that begins with an identifier and "(".  Prints each
# function over the limit with file, line, name and length; exits 1 if
# there is one.
set -u
cd "$(dirname "$0")/../.."
max=120
out=$(find agent alerts cli collectors common conf client -name '*.[ch]' | sort |
      xargs awk -v max="$max" '
    FNR == 1 { name = ""; start = 0 }
    /^[A-Za-z_][A-Za-z0-9_]*\(/ && start == 0 { name = $0; sub(/\(.*/, "", name) }
    /^\{/ && start == 0 { start = FNR; next }
    /^\}/ && start > 0 {
        n = FNR - start + 1
        if (n > max)
            printf "%s:%d: %s() is %d lines (at most %d: split it by concern)\n",
                   FILENAME, start, name, n, max
        start = 0
    }')
if [ -n "$out" ]; then
    printf '%s\n' "$out" | sed 's/^/function size: /'
    exit 1
fi
echo "function size: no production function over $max lines"
