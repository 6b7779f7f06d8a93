#!/bin/sh
# in-container.sh PACKAGE UPGRADE_PACKAGE CHECKS_DIRECTORY
#
# The boot test's checks, run as root by usher-boot-test.service inside a container booted by run.sh (systemd as PID
# 1, the Swift toolchain hidden). Each step prints what it checks; the first failure ends the script non-zero, and
# that ends the container with it.
set -eu
deb=$1
upgrade=$2
checks=$3
export DEBIAN_FRONTEND=noninteractive

step() { echo "boot-test: $*"; }
fail() { echo "boot-test FAILED: $*"; exit 1; }
expect() { # expect WHAT ACTUAL EXPECTED
	[ "$2" = "$3" ] || fail "$1: \"$2\", expected \"$3\""
}
# Polls CONDITION (a shell command) until it holds: a hang guard of a minute, not a measure of speed.
until_true() { # until_true WHAT CONDITION
	attempts=0
	until sh -c "$2" >/dev/null 2>&1; do
		attempts=$((attempts + 1))
		[ $attempts -lt 600 ] || fail "$1 (waited a minute)"
		sleep 0.1
	done
}
as_alice() { runuser -u alice -- "$@"; }

step "systemd $(systemctl --version | sed -n 's/^systemd \([0-9]*\).*/\1/p') is PID 1: $(readlink /proc/1/exe)"
if [ -n "$(ls -A /opt/swift 2>/dev/null)" ] || command -v swift >/dev/null; then fail "the Swift toolchain is visible"; fi
step "the Swift toolchain is hidden"

# 1. Installation. With a policy-rc.d that forbids starting services (as in Docker images), nothing is started;
# without one, the socket is enabled and listening, the daemon not started yet.
printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
chmod 0755 /usr/sbin/policy-rc.d
dpkg -i "$deb" || fail "dpkg -i $deb with policy-rc.d"
expect "usherd.socket enabled under policy-rc.d" "$(systemctl is-enabled usherd.socket)" enabled
expect "usherd.socket under policy-rc.d" "$(systemctl is-active usherd.socket || true)" inactive
expect "usherd-varlink.socket enabled under policy-rc.d" "$(systemctl is-enabled usherd-varlink.socket)" enabled
step "dpkg -i with policy-rc.d exit 101: usherd.socket enabled, not started"
rm /usr/sbin/policy-rc.d
dpkg -i "$deb" || fail "dpkg -i $deb"
expect "installed version" "$(dpkg-query -W -f='${Version}' usher)" "$(dpkg-deb -f "$deb" Version)"
getent passwd usher >/dev/null || fail "systemd-sysusers did not create the usher user"
expect "usherd.socket enabled" "$(systemctl is-enabled usherd.socket)" enabled
expect "usherd.socket" "$(systemctl is-active usherd.socket)" active
expect "usherd.socket listens on" "$(systemctl show -P Listen usherd.socket)" "/run/usher/usher.sock (Stream)"
[ -n "$(ss -xlnH src /run/usher/usher.sock)" ] || fail "nothing listens on /run/usher/usher.sock"
expect "usherd-varlink.socket enabled" "$(systemctl is-enabled usherd-varlink.socket)" enabled
expect "usherd-varlink.socket" "$(systemctl is-active usherd-varlink.socket)" active
expect "usherd-varlink.socket listens on" "$(systemctl show -P Listen usherd-varlink.socket)" \
	"/run/usher/io.usher.Session (Stream)"
expect "usherd.service before the first connection" "$(systemctl is-active usherd.service || true)" inactive
step "dpkg -i: usher user created, usherd.socket and usherd-varlink.socket enabled and listening, usherd.service not started"

# The administrator's edit of the conffile, which every later step must keep: the usher group may use the daemon.
cat >> /etc/usher/usherd.toml <<'CONFIG'

# Added by the boot test: the usher group may do everything.
[[access.rule]]
group = "usher"
allow = ["read", "token", "manage"]
CONFIG
cp /etc/usher/usherd.toml /root/usherd.toml.edited

# 2. An ordinary user in the usher group: the first connection starts the daemon, which reaches active through
# Type=notify (READY=1), and the user logs in.
useradd --create-home --groups usher alice
# Nobody is logged in yet: whoami answers with exit status 4 (any other status: the daemon did not answer).
status=0
as_alice usher whoami >/dev/null 2>&1 || status=$?
[ "$status" -eq 4 ] || fail "alice's first usher whoami: exit status $status, not 4 (nobody logged in)"
expect "usherd.service type" "$(systemctl show -P Type usherd.service)" notify
# READY=1 is a datagram systemd may read a moment after the daemon answered: wait for the state, not a time.
until_true "usherd.service active after the first connection" \
	"[ \"\$(systemctl show -P ActiveState usherd.service)\" = active ]"
expect "usherd.service sub-state" "$(systemctl show -P SubState usherd.service)" running
journalctl --sync
until_true "usherd logs the socket it was handed" \
	"journalctl -u usherd.service -o cat | grep -q 'socket activation.*socket=/run/usher/usher.sock'"
as_alice usher login --anonymous
whoami=$(as_alice usher --json whoami)
echo "$whoami" | grep -q '"logged_in"' || fail "alice's whoami after login: $whoami"
step "first connection started usherd (Type=notify, active); alice logged in; usher whoami answers"

# 3. Scripts other features drop in checks.d/, run as root with the package installed; each one's status counts.
for check in "$checks"/*.sh; do
	[ -e "$check" ] || continue
	step "running $(basename "$check")"
	# Its lines shown as the harness's own, so that the log says what it checked and what it skipped.
	status=0
	sh "$check" > /tmp/check.out 2>&1 || status=$?
	while IFS= read -r line; do step "  $line"; done < /tmp/check.out
	[ "$status" -eq 0 ] || fail "$(basename "$check") exited with $status"
done

# 4. A configuration error: exit 78 is final (RestartPreventExitStatus=78) and its reason is at error priority.
systemctl stop usherd.service
printf '[daemon]\nno_such_key = 1\n' > /etc/usher/usherd.toml
since=$(date +%s)
if systemctl start usherd.service 2>/dev/null; then fail "usherd started on a broken configuration"; fi
expect "usherd.service after exit 78" "$(systemctl show -P ActiveState usherd.service)" failed
expect "restarts after exit 78" "$(systemctl show -P NRestarts usherd.service)" 0
expect "exit status" "$(systemctl show -P ExecMainStatus usherd.service)" 78
until_true "the configuration error is in the journal at priority err" \
	"journalctl -p err -u usherd.service -S @$since -o cat | grep -q no_such_key"
journalctl -p err -u usherd.service -S "@$since" -o cat | sed 's/^/boot-test:   journal -p err: /'
cp /root/usherd.toml.edited /etc/usher/usherd.toml
systemctl reset-failed usherd.service
expect "usherd.socket after the failed start" "$(systemctl is-active usherd.socket)" active
as_alice usher --json whoami | grep -q '"logged_in"' || fail "usherd did not come back with alice logged in"
step "exit 78: failed without a restart, reason at priority err; fixed configuration serves again"

# 5. The per-user unit keeps its state in $XDG_STATE_HOME/usher (~/.local/state/usher), not in ~/.config/usher.
uid=$(id -u alice)
systemctl start "user@$uid.service"
as_user() { runuser -u alice -- env XDG_RUNTIME_DIR="/run/user/$uid" "$@"; }
as_user systemctl --user start usherd.socket
expect "alice's usherd.socket" "$(as_user systemctl --user is-active usherd.socket)" active
as_user usher login --anonymous >/dev/null
as_user usher --json whoami | grep -q '"logged_in"' || fail "alice's own usherd does not answer"
[ -f /home/alice/.local/state/usher/usher.sqlite ] || fail "no database in ~/.local/state/usher: $(ls -R /home/alice)"
[ ! -e /home/alice/.config/usher/usher.sqlite ] || fail "the user unit's database is in ~/.config/usher"
as_user systemctl --user stop usherd.socket usherd.service
systemctl stop "user@$uid.service"
step "user unit: state in ~/.local/state/usher, nothing in ~/.config/usher"

# 6. Upgrade to a higher version: users, tokens and the edited conffile stay; the daemon restarts on the new package.
token=$(as_alice usher token)
users=$(as_alice usher --json users | grep -o '"id":"[^"]*"' | sort)
pid=$(systemctl show -P MainPID usherd.service)
[ "$pid" -gt 0 ] || fail "usherd is not running before the upgrade"
dpkg -i "$upgrade" || fail "dpkg -i $upgrade"
expect "upgraded version" "$(dpkg-query -W -f='${Version}' usher)" "$(dpkg-deb -f "$upgrade" Version)"
expect "usherd.service after the upgrade" "$(systemctl show -P ActiveState usherd.service)" active
[ "$(systemctl show -P MainPID usherd.service)" != "$pid" ] || fail "the upgrade did not restart usherd (pid $pid)"
cmp -s /etc/usher/usherd.toml /root/usherd.toml.edited || fail "the upgrade changed the edited /etc/usher/usherd.toml"
expect "users after the upgrade" "$(as_alice usher --json users | grep -o '"id":"[^"]*"' | sort)" "$users"
expect "alice's token after the upgrade" "$(as_alice usher token)" "$token"
step "upgrade: restarted (pid $pid -> $(systemctl show -P MainPID usherd.service)); users, token and edited conffile kept"

# 7. Remove: stopped, state and configuration kept.
apt-get remove -y -q usher >/dev/null || fail "apt-get remove"
expect "usherd.service after remove" "$(systemctl is-active usherd.service || true)" inactive
expect "usherd.socket after remove" "$(systemctl is-active usherd.socket || true)" inactive
expect "usherd-varlink.socket after remove" "$(systemctl is-active usherd-varlink.socket || true)" inactive
[ -z "$(ss -xlnH src /run/usher/io.usher.Session)" ] || fail "something still listens on /run/usher/io.usher.Session"
[ -z "$(ss -xlnH src /run/usher/usher.sock)" ] || fail "something still listens on /run/usher/usher.sock"
[ -f /var/lib/usher/usher.sqlite ] || fail "remove deleted the state"
cmp -s /etc/usher/usherd.toml /root/usherd.toml.edited || fail "remove changed /etc/usher/usherd.toml"
expect "package state after remove" "$(dpkg-query -W -f='${db:Status-Abbrev}' usher)" "rc "
step "apt-get remove: stopped; /var/lib/usher and the configuration kept"

# 8. Purge: the state and everything the usher user owned are gone.
apt-get purge -y -q usher >/dev/null || fail "apt-get purge"
[ ! -e /var/lib/usher ] || fail "purge left /var/lib/usher"
[ ! -e /etc/usher ] || fail "purge left /etc/usher"
left=$(find /var /etc /run /tmp /home -xdev -user usher 2>/dev/null || true)
[ -z "$left" ] || fail "purge left files of the usher user: $left"
step "apt-get purge: /var/lib/usher, /etc/usher and the usher user's files removed"

step "all checks passed"
