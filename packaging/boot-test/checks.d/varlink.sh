#!/bin/sh
# Issue 22: the Varlink socket of the installed package, io.usher.Session, as systemd hands it over: a first connection
# to it alone starts the stopped daemon (usherd-varlink.socket, FileDescriptorName=varlink), which answers there in
# Varlink as alice and on usher.sock in lines, with the same state; the installed interface definition is the one the
# daemon serves; varlinkctl calls it where systemd has one (255 and later). Leaves the daemon running, as it found it.
set -u
say() { echo "varlink: $*"; }
fail() { say "FAIL: $*"; exit 1; }
socket=/run/usher/io.usher.Session

# One call on a new connection as alice, in Python's standard library (no varlink package in the image): prints the
# reply's JSON.
call() { # call METHOD [PARAMETERS]
	runuser -u alice -- python3 -c '
import json, socket, sys
connection = socket.socket(socket.AF_UNIX)
connection.settimeout(60)
connection.connect(sys.argv[1])
connection.sendall(json.dumps({"method": sys.argv[2], "parameters": json.loads(sys.argv[3])}).encode() + b"\0")
reply = b""
while not reply.endswith(b"\0"):
    chunk = connection.recv(65536)
    if not chunk:
        break
    reply += chunk
print(reply.rstrip(b"\0").decode())
' "$socket" "$1" "${2:-{\}}"
}

[ -S "$socket" ] || fail "$socket is not a socket"
expect_mode=$(stat -c '%a %G' "$socket")
[ "$expect_mode" = "660 usher" ] || fail "$socket is $expect_mode, expected 660 usher"

systemctl stop usherd.service || fail "systemctl stop usherd.service"
[ "$(systemctl is-active usherd.service || true)" = inactive ] || fail "usherd.service did not stop"
info=$(call org.varlink.service.GetInfo) || fail "GetInfo: $info"
echo "$info" | grep -q '"io.usher.Session"' || fail "GetInfo: $info"
[ "$(systemctl is-active usherd.service)" = active ] || fail "the Varlink connection did not start usherd.service"
journalctl -u usherd.service -b --no-pager | grep -q "Varlink interface io.usher.Session listening (socket activation) socket=$socket" ||
	fail "usherd did not log the Varlink socket: $(journalctl -u usherd.service -b --no-pager | tail -5)"
say "a first connection to $socket started usherd.service: $info"

current=$(call io.usher.Session.CurrentUser) || fail "CurrentUser: $current"
lines=$(runuser -u alice -- usher --json whoami 2>&1) || fail "usher whoami: $lines"
id=$(echo "$lines" | grep -o '"id":"u_[^"]*"' | head -1)
[ -n "$id" ] && echo "$current" | grep -q "$id" || fail "CurrentUser over Varlink ($current) is not usher whoami's ($lines)"
say "CurrentUser over Varlink is the active user usher whoami reports: $id"

description=$(call org.varlink.service.GetInterfaceDescription '{"interface":"io.usher.Session"}')
installed=/usr/share/varlink/io.usher.Session.varlink
[ -f "$installed" ] || fail "no $installed"
printf '%s' "$description" | python3 -c 'import json, sys; sys.stdout.write(json.load(sys.stdin)["parameters"]["description"])' |
	cmp -s - "$installed" || fail "the served definition differs from $installed"
say "the daemon serves $installed byte for byte"

if command -v varlinkctl >/dev/null; then
	out=$(runuser -u alice -- varlinkctl call "unix:$socket" io.usher.Session.CurrentUser '{}' 2>&1) || fail "varlinkctl: $out"
	echo "$out" | grep -q "$(echo "$id" | cut -d'"' -f4)" || fail "varlinkctl call CurrentUser: $out"
	say "varlinkctl calls it"
else
	say "varlinkctl not in this image (systemd $(systemctl --version | sed -n 's/^systemd \([0-9]*\).*/\1/p')): not tried"
fi
say "ok"
