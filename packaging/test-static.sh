#!/bin/sh
# test-static.sh BINDIR
#
# The installed usherd and usher need no Swift toolchain: in a private mount namespace with an empty tmpfs mounted over
# the toolchain's directory (found from `swift` on PATH), both print the VERSION file's version, usherd starts and
# answers, and usher logs a user in and reads it back. Needs root (unshare -m); exits 0 with a reason otherwise.
set -eu
bindir=$(realpath "$1")
repository=$(cd "$(dirname "$0")/.." && pwd)
version=$(cat "$repository/VERSION")

if [ "$(id -u)" -ne 0 ]; then
	echo "test-static skipped: needs root for a private mount namespace (unshare -m)"
	exit 0
fi
swift=$(command -v swift || true)
if [ -z "$swift" ]; then
	echo "test-static skipped: no swift on PATH, so no toolchain to hide"
	exit 0
fi
# /opt/swift/usr/bin/swift-driver -> /opt/swift
toolchain=$(dirname "$(dirname "$(dirname "$(readlink -f "$swift")")")")

echo "test-static: ldd of the installed binaries (no Swift library may appear):"
for program in usherd usher; do
	ldd "$bindir/$program" | sed "s|^|  $program: |"
	if ldd "$bindir/$program" | grep -E "libswift|libFoundation|lib_Foundation|libdispatch|libBlocksRuntime|$toolchain"; then
		echo "test-static FAILED: $program loads a library of the Swift toolchain" >&2
		exit 1
	fi
done

export bindir version toolchain
unshare --mount --propagation private sh -eu -c '
	mount -t tmpfs -o size=1m,mode=0755 hidden-toolchain "$toolchain"
	if [ -n "$(ls -A "$toolchain")" ] || command -v swift >/dev/null; then
		echo "test-static FAILED: the toolchain is still visible" >&2; exit 1
	fi
	echo "test-static: $toolchain is now an empty tmpfs"
	for program in usherd usher; do
		printed=$("$bindir/$program" --version)
		if [ "$printed" != "$version" ]; then
			echo "test-static FAILED: $program --version printed \"$printed\", VERSION says \"$version\"" >&2; exit 1
		fi
		echo "test-static: $program --version: $printed"
	done
	directory=$(mktemp -d /tmp/usher-static-XXXXXX)
	trap "kill \$daemon 2>/dev/null || true; rm -rf \"$directory\"" EXIT
	"$bindir/usherd" --socket "$directory/usher.sock" --state-directory "$directory/state" --log-level notice &
	daemon=$!
	# A hang guard of a minute, not a measure: the loop ends as soon as the socket answers.
	for attempt in $(seq 600); do
		"$bindir/usher" --socket "$directory/usher.sock" status >/dev/null 2>&1 && break
		kill -0 $daemon 2>/dev/null || { echo "test-static FAILED: usherd exited" >&2; exit 1; }
		sleep 0.1
	done
	"$bindir/usher" --socket "$directory/usher.sock" status
	"$bindir/usher" --socket "$directory/usher.sock" login --anonymous
	"$bindir/usher" --socket "$directory/usher.sock" --json whoami | tee "$directory/whoami"
	grep -q "\"logged_in\"" "$directory/whoami" || { echo "test-static FAILED: no logged-in user" >&2; exit 1; }
	kill -TERM $daemon
	wait $daemon
	echo "test-static: passed (usherd and usher ran with the toolchain hidden)"
'
