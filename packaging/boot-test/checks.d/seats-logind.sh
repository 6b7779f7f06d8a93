#!/bin/sh
# Issue 14: with [seats] source = "logind", a caller in a logind session gets its session's seat, and a caller whose
# session has no seat gets the default seat. Run by the package boot test inside the booted container, as root, after
# the package is installed (usherd.socket enabled, alice in the usher group, which may do everything).
#
# Where logind cannot run or cannot give a session a seat, the part that needs it is skipped with the reason printed;
# the rest still counts.
set -u
say() { echo "seats-logind: $*"; }
fail() { say "FAIL: $*"; restore; exit 1; }

config=/etc/usher/usherd.toml
dropin=/run/systemd/system/usherd.service.d/seats-logind.conf
cp "$config" /root/usherd.toml.before-seats
restore() {
	cp /root/usherd.toml.before-seats "$config"
	rm -f "$dropin"
	systemctl daemon-reload
	systemctl restart usherd.service
}

if ! systemctl is-active -q systemd-logind.service; then
	say "skipped: systemd-logind is not running here ($(systemctl is-active systemd-logind.service 2>&1))"
	exit 0
fi

# Without the [seats] table the configuration may already have, then with this one.
awk '/^\[/ { skipping = ($0 == "[seats]") } !skipping' /root/usherd.toml.before-seats > "$config"
cat >> "$config" <<'CONFIG'

# Added by the seats boot check: seats come from logind; a caller without a seat gets "lobby".
[seats]
source = "logind"
names = ["lobby"]
default = "lobby"
CONFIG
# sd-login finds a peer's session in /proc/PID/cgroup, which the unit's ProtectProc=invisible hides from usherd for
# other users' processes (docs/seats-and-leases.md says so).
mkdir -p "$(dirname "$dropin")"
printf '[Service]\nProtectProc=default\n' > "$dropin"
systemctl daemon-reload
systemctl restart usherd.service || fail "usherd did not start with [seats] source = \"logind\""

# `usher seats` lists logind's seat0 (logind always has it) and the declared default seat.
seats=$(runuser -u alice -- usher --json seats) || fail "usher seats: $seats"
echo "$seats" | grep -q '"name":"seat0","present":true,"source":"logind"' || fail "seat0 is not listed: $seats"
echo "$seats" | grep -q '"default_seat":"lobby"' || fail "the default seat is not lobby: $seats"
say "usher seats lists logind's seat0 and the default seat"

# A logind session without a seat (as ssh gives): usher whoami is about the default seat. Nobody is active there:
# whoami prints the answer (with its seat) and exits 4, which counts as answered.
in_session() {
	systemd-run --quiet --wait --pipe --uid=alice -p PAMName=login "$@" \
		sh -c 'echo "session=${XDG_SESSION_ID:-none} seat=$(loginctl show-session "${XDG_SESSION_ID:-none}" -p Seat --value 2>/dev/null)"; usher --json whoami || [ $? -eq 4 ]'
}
out=$(in_session) || fail "a seatless session's usher whoami: $out"
case "$out" in
session=none*) say "skipped: PAMName=login opened no logind session here: $out" ;;
*) echo "$out" | grep -q '"seat":"lobby"' || fail "a seatless session is not about the default seat: $out"
	say "a session without a seat is about the default seat" ;;
esac

# A session on seat0 (pam_systemd takes XDG_SEAT from the environment): usher whoami is about seat0.
out=$(in_session -E XDG_SEAT=seat0) || fail "a seat0 session's usher whoami: $out"
case "$out" in
*"seat=seat0"*)
	echo "$out" | grep -q '"seat":"seat0"' || fail "a session on seat0 is not about seat0: $out"
	say "a session on seat0 is about seat0" ;;
*) say "skipped: logind did not put the session on seat0 here: $(echo "$out" | head -1)" ;;
esac

restore
say "ok"
