#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# `make deps` and a dpkg lock held by another apt run (issue 24: one run of
# make demo failed on one, with no retry or hint).  An apt-get stand-in
# first on PATH records its arguments and answers every install as apt
# does when the lock stays held past its wait ("Could not get lock", exit
# 100): make deps must have asked apt-get to wait DPKG_LOCK_WAIT seconds
# for the lock (-o DPkg::Lock::Timeout=N, on update and install alike),
# then fail with the hint naming the lock, how to see who holds it and
# DPKG_LOCK_WAIT.  The package asked for is one that is not installed, so
# that make deps gets as far as apt-get; nothing is installed.  make deps
# refuses before apt-get unless run as root: then this skips (exit 77).
set -u
cd "$(dirname "$0")/../.."
if [ "$(id -u)" != 0 ]; then
    echo "skipped: make deps runs apt-get only as root"
    exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lw-depslock.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/apt-get" <<'EOF'
#!/bin/sh
echo "$*" >>"$SHIM_LOG"
case " $* " in
*" install "*)
    echo "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (apt-get)" >&2
    exit 100 ;;
esac
exit 0
EOF
chmod +x "$tmp/apt-get"
bad=0
fail() { printf 'make deps and a held dpkg lock: %s\n' "$*"; bad=1; }

SHIM_LOG=$tmp/calls PATH=$tmp:$PATH make --no-print-directory deps DEPS_GROUPS=x \
    DEB_GROUP_x=lockwatch-test-not-a-package DPKG_LOCK_WAIT=7 >"$tmp/out" 2>&1
rc=$?
[ "$rc" != 0 ] || fail "make deps succeeded although apt-get install failed: $(cat "$tmp/out")"
grep -Eq '(^| )install .*lockwatch-test-not-a-package' "$tmp/calls" 2>/dev/null ||
    fail "apt-get install was not run: $(cat "$tmp/out")"
n=$(grep -c '' "$tmp/calls" 2>/dev/null || echo 0)
w=$(grep -c -- '-o DPkg::Lock::Timeout=7 ' "$tmp/calls" 2>/dev/null || echo 0)
[ "$n" -ge 2 ] && [ "$n" = "$w" ] ||
    fail "not every apt-get run waits DPKG_LOCK_WAIT for the lock: $(cat "$tmp/calls")"
for want in "holds its lock" "ps -C apt-get,apt,dpkg" "DPKG_LOCK_WAIT=SECONDS waits longer (now 7)"; do
    grep -qF -- "$want" "$tmp/out" || fail "the failure does not say \"$want\": $(cat "$tmp/out")"
done
exit "$bad"
