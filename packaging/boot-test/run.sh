#!/bin/sh
# run.sh PACKAGE UPGRADE_PACKAGE [EXTRA_PACKAGE...]
#
# The boot test: boots systemd as PID 1 in a container (systemd-nspawn -b) whose root is an overlay of this machine's
# root with the upper layer on a tmpfs, so nothing is written to the host, and with the Swift toolchain's directory
# hidden under an empty tmpfs. A oneshot unit runs in-container.sh (install, first connection, login, a configuration
# error, the user unit, upgrade, remove, purge) and then every checks.d/*.sh of this directory, and ends the container
# with its exit status (SuccessAction=/FailureAction=exit). Needs root and systemd-nspawn; says why and exits 0
# otherwise. EXTRA_PACKAGEs (the client packages) are copied to /usher-test/extra/ for the checks in checks.d/ that
# install them.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
deb=$(realpath "$1")
upgrade=$(realpath "$2")

if [ "$(id -u)" -ne 0 ]; then echo "test-package skipped: needs root"; exit 0; fi
if ! command -v systemd-nspawn >/dev/null; then echo "test-package skipped: no systemd-nspawn"; exit 0; fi
if ! command -v script >/dev/null; then echo "test-package skipped: no script(1) for nspawn's terminal"; exit 0; fi

# Everything below runs in a private mount namespace: the overlay and tmpfs mounts vanish with it, and nspawn's own
# bookkeeping under /run/systemd/nspawn goes to a tmpfs instead of the host's /run.
if [ -z "${USHER_BOOT_TEST_NAMESPACE:-}" ]; then
	USHER_BOOT_TEST_NAMESPACE=1 exec unshare --mount --propagation private "$0" "$@"
fi
[ ! -d /run/systemd/nspawn ] || mount -t tmpfs -o mode=0755 usher-boot-test-nspawn /run/systemd/nspawn

swift=$(command -v swift || true)
toolchain=/opt/swift
[ -z "$swift" ] || toolchain=$(dirname "$(dirname "$(dirname "$(readlink -f "$swift")")")")

work=$(mktemp -d /tmp/usher-boot-XXXXXX)
cleanup() {
	umount "$work/root" 2>/dev/null || true
	umount "$work" 2>/dev/null || true
	rmdir "$work" 2>/dev/null || true
}
trap cleanup EXIT INT TERM
mount -t tmpfs -o size=2g,mode=0700 usher-boot-test "$work"
mkdir -p "$work/upper" "$work/work" "$work/root" "$work/test/checks.d"
mount -t overlay usher-boot-test-root -o "lowerdir=/,upperdir=$work/upper,workdir=$work/work" "$work/root"

cp "$deb" "$work/test/usher.deb"
cp "$upgrade" "$work/test/usher-upgrade.deb"
mkdir -p "$work/test/extra"
shift 2
for extra in "$@"; do cp "$(realpath "$extra")" "$work/test/extra/"; done
# The C library's packages of the same version, built beside it by make deb (checks.d/libusher.sh installs them).
version=$(dpkg-deb -f "$deb" Version)
for library in "$(dirname "$deb")"/libusher0_"$version"_*.deb "$(dirname "$deb")"/libusher-dev_"$version"_*.deb; do
	[ ! -e "$library" ] || cp "$library" "$work/test/"
done
cp "$here/in-container.sh" "$work/test/"
for check in "$here"/checks.d/*.sh; do
	[ ! -e "$check" ] || cp "$check" "$work/test/checks.d/"
done

root=$work/root
# A machine ID of its own, generated at boot; no stale package of an earlier run.
: > "$root/etc/machine-id"
# The host image's own services and timers are not under test and only slow the boot down.
for unit in "$root"/etc/systemd/system/multi-user.target.wants/*.service \
	"$root"/etc/systemd/system/timers.target.wants/*.timer systemd-timesyncd.service getty@tty1.service; do
	ln -sf /dev/null "$root/etc/systemd/system/$(basename "$unit")"
done
# The test unit: after multi-user.target (ordered inside it, waiting for the system to be up would deadlock).
cat > "$root/etc/systemd/system/usher-boot-test.service" <<UNIT
[Unit]
Description=usher package boot test
After=multi-user.target
SuccessAction=exit
FailureAction=exit

[Service]
Type=oneshot
ExecStart=/bin/sh /usher-test/in-container.sh /usher-test/usher.deb /usher-test/usher-upgrade.deb /usher-test/checks.d
StandardOutput=journal+console
StandardError=journal+console
TimeoutStartSec=300

[Install]
WantedBy=multi-user.target
UNIT
mkdir -p "$root/etc/systemd/system/multi-user.target.wants"
ln -sf ../usher-boot-test.service "$root/etc/systemd/system/multi-user.target.wants/usher-boot-test.service"

echo "test-package: booting $(systemd-nspawn --version | head -1) over an overlay of / (upper layer on tmpfs $work)"
started=$(date +%s)
status=0
# nspawn wants a terminal for the container's console: script(1) gives it one. timeout is a hang guard.
timeout --kill-after=20 "${USHER_BOOT_TEST_TIMEOUT:-600}" script -qfec "systemd-nspawn --quiet --boot --directory='$root' --register=no \
	--keep-unit --link-journal=no --console=read-only --tmpfs='$toolchain:mode=0755' \
	--bind='$work/test:/usher-test' --machine=usher-boot-test" /dev/null >"$work/console" 2>&1 || status=$?
elapsed=$(($(date +%s) - started))
grep -a "boot-test" "$work/console" | tr -d '\r' | sed 's/^.*\(boot-test\)/\1/' || true
if [ "$status" -ne 0 ] || ! grep -aq "boot-test: all checks passed" "$work/console"; then
	echo "test-package FAILED (container exit status $status after ${elapsed}s); the console:"
	tr -d '\r' < "$work/console" | tail -80
	exit 1
fi
echo "test-package: passed; boot, run and power-off took ${elapsed}s"
# A hang guard, not a measure of speed: the checks (logins through login(1) among them) take 60 to 100 s on a 2-core
# machine, more while it builds; the timeout above ends a container that hangs.
[ "$elapsed" -lt 400 ] || { echo "test-package FAILED: ${elapsed}s, more than 400 s"; exit 1; }
