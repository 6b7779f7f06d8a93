#!/bin/sh
# Issue 22: the C library's packages (libusher0, libusher-dev, built by make deb beside the usher package) install,
# and the walk-through example that libusher-dev ships, compiled against the installed header and library through
# pkg-config, runs as alice against the socket-activated system daemon. Run by the package boot test inside the
# booted container, as root; leaves the system as it found it (the packages purged, the account it made removed).
set -u
say() { echo "libusher: $*"; }
work=/tmp/libusher-check
cleanup() {
	dpkg --purge libusher-dev libusher0 >/dev/null 2>&1
	runuser -u alice -- usher remove ann@example.com >/dev/null 2>&1
	rm -rf "$work"
}
fail() { say "FAIL: $*"; cleanup; exit 1; }

version=$(dpkg-query -W -f='${Version}' usher)
lib=$(ls /usher-test/libusher0_"$version"_*.deb 2>/dev/null | head -1)
dev=$(ls /usher-test/libusher-dev_"$version"_*.deb 2>/dev/null | head -1)
[ -n "$lib" ] && [ -n "$dev" ] || fail "no libusher0 or libusher-dev $version in /usher-test: $(ls /usher-test)"
if ! command -v cc >/dev/null || ! command -v pkg-config >/dev/null; then
	say "skipped: no C compiler or pkg-config in this image to build the example with"
	exit 0
fi

dpkg -i "$lib" "$dev" >/dev/null || fail "dpkg -i $lib $dev"
[ "$(pkg-config --modversion usher)" = "$version" ] || fail "pkg-config --modversion usher: $(pkg-config --modversion usher 2>&1)"
say "libusher0 and libusher-dev $version installed; pkg-config finds usher"

mkdir -p "$work" && chmod 0755 "$work"
# shellcheck disable=SC2046 # one word per flag
cc -o "$work/walkthrough" /usr/share/doc/libusher-dev/examples/walkthrough-poll.c $(pkg-config --cflags --libs usher) \
	|| fail "the example does not compile against the installed package"
ldd "$work/walkthrough" | grep -Eq "libusher.so.0 => (/usr)?/lib/.*/libusher.so.0" || fail "not linked to the packaged library: $(ldd "$work/walkthrough")"
ldd "$work/walkthrough" | grep -qi swift && fail "the example loads a Swift library: $(ldd "$work/walkthrough")"

# alice finds the system daemon as the usher command does (no USHER_SOCKET, no per-user daemon).
out=$(runuser -u alice -- env -u USHER_SOCKET "$work/walkthrough" 2>&1) || fail "the walk-through failed: $out"
echo "$out" | grep -q "^event active_user_changed" || fail "no active_user_changed event: $out"
echo "$out" | grep -q "a token of " || fail "no token: $out"
echo "$out" | grep -q "(inhibited)" || fail "the lease did not hold: $out"
say "the walk-through ran against the socket-activated daemon: switch seen as an event, token, lease held"
echo "$out" | sed 's/^/libusher:   /'

cleanup
dpkg-query -W libusher0 >/dev/null 2>&1 && [ "$(dpkg-query -W -f='${db:Status-Abbrev}' libusher0)" != "pn " ] \
	&& fail "libusher0 is still installed"
say "ok"
