#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# `make` on a machine without the build dependencies stops before compiling,
# with one line naming the missing Debian packages and `make deps`; `make
# deps` and `make clean` still work there.  The machine without them is
# simulated with the real pkg-config and a PKG_CONFIG_LIBDIR that holds the
# system's .pc files less the ones a case removes (make -n: nothing is
# built or installed).  Exits 1 on the first case that does not hold.
set -u
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lw-makedeps.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
bad=0
fail() { printf 'make deps check: %s\n' "$*"; bad=1; }

# pcdir NAME WITHOUT...: a pkg-config directory of every system .pc but these
pcdir() {
    d="$tmp/$1"; shift
    mkdir -p "$d"
    for dir in $(pkg-config --variable pc_path pkg-config | tr : ' '); do
        [ -d "$dir" ] || continue
        for pc in "$dir"/*.pc; do
            [ -e "$pc" ] && [ ! -e "$d/$(basename "$pc")" ] && ln -s "$pc" "$d/"
        done
    done
    for name in "$@"; do rm -f "$d/$name.pc"; done
    printf '%s\n' "$d"
}

# run GOAL PCDIR: make -n GOAL with only PCDIR's packages; output in $out
run() {
    out=$(MAKEFLAGS= MFLAGS= PKG_CONFIG_LIBDIR=$2 make -n --no-print-directory BUILD="$tmp/build" $1 2>&1)
    rc=$?
}

all_there=$(pcdir all)
run all "$all_there"
[ "$rc" -eq 0 ] || fail "make -n all fails with every package there: $out"

no_jansson=$(pcdir nojansson jansson)
run all "$no_jansson"
[ "$rc" -ne 0 ] || fail "make -n all succeeds without jansson.pc"
[ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "not one line: $out"
case "$out" in
*"missing libjansson-dev: run \`make deps\`"*) ;;
*) fail "the line does not name libjansson-dev and make deps: $out" ;;
esac
case "$out" in *jansson.h*|*"cc "*) fail "it compiled: $out" ;; esac

none=$(pcdir none hiredis libmicrohttpd inih jansson libcurl libcrypto cmocka)
run "" "$none"
[ "$rc" -ne 0 ] || fail "make -n (default goal) succeeds with no package there"
for deb in libhiredis-dev libmicrohttpd-dev libinih-dev libjansson-dev \
           libcurl4-openssl-dev libssl-dev libcmocka-dev; do
    case "$out" in *"$deb"*) ;; *) fail "$deb not named: $out" ;; esac
done

for goal in deps clean; do
    run "$goal" "$none"
    [ "$rc" -eq 0 ] || fail "make -n $goal fails without the packages: $out"
done
exit "$bad"
