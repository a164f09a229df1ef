#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The house's layering rules, checked on the source tree (no build needed):
#   common/      includes no project header but its own
#   conf/        common/ and conf/ only
#   collectors/  never agent/, alerts/ or cli/; inside it, each sub-layer
#                of COLLECTOR_LAYERS below includes only its own folder and
#                those listed before it (CONTRIBUTING.md "The layers")
#   alerts/      never agent/ or cli/
#   client/      its own headers and the header-only common/clock.h,
#                common/lw1.h, common/lw1mac.h, common/prefixname.h (liblockwatch links
#                nothing of the agent)
#   cli/         never agent/ or alerts/
#   agent/       anything above but client/, of which only the public
#                client/lockwatch.h (agent/leader.c links liblockwatch)
#   a *_impl.h is included only from its own folder (and unit tests)
#   tests, bench, fuzz never #include a .c file
#   no production .c file over 1,000 lines
# Prints each breach with file and line; exits 1 if there is one.
set -u
cd "$(dirname "$0")/../.."
bad=0

breach() { printf 'layering: %s\n' "$*"; bad=1; }

# check DIR ALLOWED-REGEX: every #include "x/..." in DIR must match
check() {
    dir=$1 allowed=$2
    grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"' "$dir" --include='*.[ch]' |
    while IFS= read -r hit; do
        inc=$(printf '%s\n' "$hit" | sed -E 's/.*#[[:space:]]*include[[:space:]]+"([^"]*)".*/\1/')
        case "$inc" in */*) ;; *) continue ;; esac      # a sibling header: allowed
        printf '%s\n' "$inc" | grep -qE "^($allowed)" ||
            printf '%s: includes "%s", which %s/ may not\n' "${hit%%:*}:$(printf '%s' "$hit" | cut -d: -f2)" "$inc" "$dir"
    done
}

# The sub-layers of collectors/, lowest first, as CONTRIBUTING.md's table
# orders them: each may include its own folder and the ones above it here.
# A new sub-layer is one line in its place; a line whose folder is not in
# the tree (yet) is passed over, and a folder missing here is a breach.
COLLECTOR_LAYERS='
redis
formats
locks
events
lease
scan
follow
waits
graph
release
'

# check_collectors: each collectors/<sub>/ against COLLECTOR_LAYERS
check_collectors() {
    below=''
    for sub in $COLLECTOR_LAYERS; do
        below="$below${below:+|}$sub"
        [ -d "collectors/$sub" ] || continue
        check "collectors/$sub" "common/|conf/|collectors/($below)/"
    done
    for d in collectors/*/; do
        sub=$(basename "$d")
        case " $(echo $COLLECTOR_LAYERS) " in *" $sub "*) continue ;; esac
        printf 'collectors/%s/ is not in COLLECTOR_LAYERS of tests/static/test_layering.sh: add it in its place\n' "$sub"
    done
    # a file directly in collectors/ belongs to no sub-layer
    find collectors -maxdepth 1 -name '*.[ch]' | sed 's/$/: a file outside the sub-layers of collectors\//'
}

out=$( {
    check common 'common/'
    check conf 'common/|conf/'
    check collectors 'common/|conf/|collectors/'
    check_collectors
    check alerts 'common/|conf/|collectors/|alerts/'
    check cli 'common/|conf/|collectors/|cli/'
    # the agent uses liblockwatch as its users do: the public header alone
    check agent 'common/|conf/|collectors/|alerts/|agent/|client/lockwatch\.h'
    check client 'common/clock\.h|common/lw1\.h|common/lw1mac\.h|common/prefixname\.h|client/'
    # an internal header (*_impl.h) belongs to its folder: no production
    # file elsewhere includes it (unit tests may)
    grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"[^"]*/[^"/]*_impl\.h"' \
        common conf collectors agent alerts cli client --include='*.[ch]' |
    while IFS= read -r hit; do
        inc=$(printf '%s\n' "$hit" | sed -E 's/.*#[[:space:]]*include[[:space:]]+"([^"]*)".*/\1/')
        [ "$(dirname "${hit%%:*}")" = "$(dirname "$inc")" ] ||
            printf '%s: includes "%s", internal to %s/\n' "${hit%%:*}" "$inc" "$(dirname "$inc")"
    done
    grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"[^"]*\.c"' tests bench packaging fuzz --include='*.[ch]' |
        sed 's/$/ (a test links the object, never includes its .c)/'
} )
[ -n "$out" ] && { printf '%s\n' "$out" | sed 's/^/layering: /'; bad=1; }

for f in $(find common conf collectors agent alerts cli client -name '*.c'); do
    n=$(wc -l < "$f")
    [ "$n" -gt 1000 ] && breach "$f has $n lines (a production .c stays under 1,000: split it by concern)"
done

if [ "$bad" -eq 0 ]; then
    echo "layering: every include runs down (collectors/ sub-layers too), no test includes a .c, no file over 1,000 lines"
fi
exit "$bad"
