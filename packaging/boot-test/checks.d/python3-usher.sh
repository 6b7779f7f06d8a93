#!/bin/sh
# Issue 22: the python3-usher package installs, byte-compiles, and its walk-through example runs as an ordinary user
# (alice, in the usher group) against the socket-activated system daemon, finding it as the usher command does
# (/run/usher/usher.sock). Then the package is purged and the example's user removed, leaving the system as it was.
set -u
say() { echo "python3-usher: $*"; }
fail() { say "FAIL: $*"; exit 1; }

deb=$(ls /usher-test/extra/python3-usher_*_all.deb 2>/dev/null | head -1)
[ -n "$deb" ] || fail "no python3-usher package in /usher-test/extra (make test-package passes it to run.sh)"
dpkg -i "$deb" >/tmp/python3-usher.dpkg 2>&1 || fail "dpkg -i $deb: $(cat /tmp/python3-usher.dpkg)"
python=/usr/bin/python3
version=$(runuser -u alice -- "$python" -c 'import usher; print(usher.__version__)') || fail "import usher: $version"
[ "$version" = "$(dpkg-deb -f "$deb" Version)" ] || fail "usher.__version__ is $version"
ls /usr/lib/python3/dist-packages/usher/__pycache__/client.*.pyc >/dev/null 2>&1 || fail "py3compile did not run"
say "installed $(basename "$deb"); import usher as alice gives $version; byte-compiled"

example=/usr/share/doc/python3-usher/examples/walkthrough.py
out=$(cd / && timeout 60 runuser -u alice -- env -u USHER_SOCKET "$python" "$example" 2>&1) || fail "the example: $out"
echo "$out" | sed 's/^/python3-usher:   /'
echo "$out" | grep -q '^event active_user_changed: u_.* -> u_' || fail "the example saw no switch as an event"
echo "$out" | grep -q '^token for u_.*: Bearer, valid for [0-9]* s$' || fail "the example took no token"
echo "$out" | grep -q '^switch refused while the lease is held: inhibited$' || fail "the lease did not hold"
echo "$out" | grep -q '^after the lease: ann@example.com is active$' || fail "the example did not finish"
say "the walk-through example ran against the socket-activated daemon"

# As found: the example's user removed (alice's own user is active again), the package purged with its byte-code.
ann=$(echo "$out" | sed -n 's/^logged in: u_[^ ]* (anonymous) and \(u_[^ ]*\) (ann@example.com)$/\1/p')
[ -n "$ann" ] && runuser -u alice -- usher remove "$ann" >/dev/null || fail "usher remove $ann"
dpkg --purge python3-usher >/dev/null || fail "dpkg --purge python3-usher"
[ ! -e /usr/lib/python3/dist-packages/usher ] || fail "purging left $(find /usr/lib/python3/dist-packages/usher)"
say "ok"
