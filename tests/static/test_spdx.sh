#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Every source file (C, Lua, Python, shell, man page) names its licence,
# BSD-3-Clause as LICENSE says, in an SPDX line among its first three
# lines.  Prints each file that does not; exits 1 if there is one.
set -u
cd "$(dirname "$0")/../.."
bad=0
for f in $(git ls-files '*.c' '*.h' '*.lua' '*.py' '*.sh' 'packaging/man/*.[1-8]' Makefile 2>/dev/null); do
    [ -f "$f" ] || continue
    if ! head -n 3 "$f" | grep -q 'SPDX-License-Identifier: BSD-3-Clause'; then
        printf 'spdx: %s has no "SPDX-License-Identifier: BSD-3-Clause" line at its top\n' "$f"
        bad=1
    fi
done
[ "$bad" -eq 0 ] && echo "spdx: every source file names its licence (BSD-3-Clause)"
exit "$bad"
