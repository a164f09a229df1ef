#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Each goal installs its own packages only: `make demo` (groups build demo)
# and `make test` (build test) bring no JDK, Maven, Go, Node or clang, and
# the demo no Chromium, Prometheus or Alertmanager either; `make interop`
# does bring its toolchains.  The installs are simulated with apt-get -s
# against an empty dpkg status file, i.e. as on a machine with nothing
# installed (a superset of what a machine with only the build dependencies
# would fetch), so the check holds on this machine, where every package is
# installed already.  Every group's package names must exist in the apt
# lists.  Prints "skipped: " and exits 77 (skipped) when apt-get or its
# lists are not there (not a Debian machine).
set -u
cd "$(dirname "$0")/../.."
if ! command -v apt-get >/dev/null 2>&1 || ! ls /var/lib/apt/lists/*_Packages* >/dev/null 2>&1; then
    echo "skipped: no apt-get or no apt package lists (apt-get update) to simulate installs with"
    exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lw-depsgroups.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
: >"$tmp/status"
bad=0
fail() { printf 'make deps groups: %s\n' "$*"; bad=1; }

list() { make -s --no-print-directory deps-list DEPS_GROUPS="$1"; }

# simulate NAME GROUPS: the packages apt-get would install for GROUPS on a
# bare machine, one per line, into $tmp/NAME.inst (apt-get's output in
# $tmp/NAME.sim, its exit status in $tmp/NAME.rc)
simulate() {
    # shellcheck disable=SC2046  # the package list is words
    apt-get -s -o Dir::State::status="$tmp/status" -o Debug::NoLocking=1 \
        install --no-install-recommends $(list "$2") >"$tmp/$1.sim" 2>&1
    echo $? >"$tmp/$1.rc"
    sed -n 's/^Inst \([^ ]*\) .*/\1/p' "$tmp/$1.sim" >"$tmp/$1.inst"
}

# check NAME: its simulation succeeded and installs something
check() {
    [ "$(cat "$tmp/$1.rc")" = 0 ] || fail "apt-get -s install for make $1 fails: $(tail -n 5 "$tmp/$1.sim")"
    [ -s "$tmp/$1.inst" ] || fail "make $1's simulation installs nothing: $(tail -n 3 "$tmp/$1.sim")"
}

# forbid NAME REGEX: no package NAME's simulation installs matches REGEX
forbid() {
    hits=$(grep -E "$2" "$tmp/$1.inst" | tr '\n' ' ')
    [ -z "$hits" ] || fail "make $1 would install $hits"
}

toolchains='^(openjdk-|default-jdk|maven|golang|nodejs$|npm$|clang|libclang-rt)'
browser_prom='^(chromium|prometheus)'

# both at once: each apt-get run is a few seconds of dependency solving
simulate demo "build demo" &
simulate test "build test" &
wait
check demo
forbid demo "$toolchains"
forbid demo "$browser_prom"
echo "make demo, on a bare machine: $(wc -l <"$tmp/demo.inst") packages;" \
     "make test: $(wc -l <"$tmp/test.inst")"
check test
forbid test "$toolchains"
grep -q '^chromium$' "$tmp/test.inst" || fail "make test does not install chromium (test_status_page needs it)"

# every group's names are real packages (a typo would fail its goal only):
# one apt-cache policy of them all, each must have a candidate
all=$(list "build demo test deb fuzz interop bench")
# shellcheck disable=SC2086
apt-cache policy $all 2>/dev/null | awk '/^[^ ].*:$/ { p = substr($0, 1, length($0) - 1) }
    /Candidate: [0-9]/ { print p }' | sort -u >"$tmp/known"
for p in $all; do
    grep -qx "$p" "$tmp/known" || fail "no package $p in the apt lists"
done
case " $(list "build interop") " in
*" openjdk-17-jdk-headless "*" golang-go "*|*" golang-go "*" openjdk-17-jdk-headless "*) ;;
*) fail "make interop's groups lack the JDK or Go: $(list "build interop")" ;;
esac
exit "$bad"
