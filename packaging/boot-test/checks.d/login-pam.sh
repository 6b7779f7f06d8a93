#!/bin/sh
# Issue 37: usher is the device's login. With the package's pam-auth-update profile enabled, a person whose account
# exists only in usher (no line in /etc/passwd: systemd's userdb, served by usherd, through nss-systemd) logs in on a
# terminal through login(1); inside that session `usher whoami` and `usher token` answer for that person; logind's
# lock (loginctl lock-session) makes `usher token` fail with seat_locked and `usher unlock` with the person's PIN
# brings it back; a second person's session activated on the seat moves the seat to them, and activating the first
# session again moves it back.
#
# Run by the package boot test inside the booted container, as root, after the package is installed. Sessions get a
# seat as a display manager's would: pam_env puts XDG_SEAT=seat0 in the PAM environment, where pam_systemd reads it
# (seat0 has no VTs in a container, so logind activates each new session on it, and `loginctl activate` switches).
set -u
say() { echo "login-pam: $*"; }
fail() { say "FAIL: $*"; restore; exit 1; }

config=/etc/usher/usherd.toml
dropin=/run/systemd/system/usherd.service.d/login-pam.conf
cp "$config" /root/usherd.toml.before-login
cp /etc/environment /root/environment.before-login
restore() {
	pkill -u bob 2>/dev/null || true
	pkill -u carol 2>/dev/null || true
	pam-auth-update --package --disable usher >/dev/null 2>&1 || true
	cp /root/environment.before-login /etc/environment
	cp /root/usherd.toml.before-login "$config"
	rm -f "$dropin"
	systemctl stop usherd.service
	systemctl disable --now usherd-userdb.socket >/dev/null 2>&1 || true
	systemctl daemon-reload
	systemctl restart usherd.service
}

if ! systemctl is-active -q systemd-logind.service; then
	fail "systemd-logind is not running ($(systemctl is-active systemd-logind.service 2>&1))"
fi
[ -f /usr/share/pam-configs/usher ] || fail "the package installs no /usr/share/pam-configs/usher"
module=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)/security/pam_usher.so
[ -f "$module" ] || fail "the package installs no $module"
grep -q pam_usher /etc/pam.d/common-auth && fail "the profile is on before an administrator enables it"
say "the package installs $module and the pam-auth-update profile, off"

# The configuration: seats follow logind; usher's users exist as Unix users, in the usher group (which the boot
# test's access rule lets do everything).
awk '/^\[/ { skipping = ($0 == "[seats]" || $0 == "[unix_users]") } !skipping' /root/usherd.toml.before-login > "$config"
cat >> "$config" <<'CONFIG'

# Added by the login boot check.
[seats]
source = "logind"
follow = "logind"

[unix_users]
enabled = true
uid_range = "60000-60999"
shell = "/bin/sh"
home = "/tmp"
groups = ["usher"]
CONFIG
mkdir -p "$(dirname "$dropin")"
printf '[Service]\nProtectProc=default\n' > "$dropin"
systemctl daemon-reload
# The user database socket is off until an administrator turns it on (docs/unix-users.md), with usherd stopped.
systemctl stop usherd.service
systemctl enable --now usherd-userdb.socket || fail "systemctl enable --now usherd-userdb.socket"
systemctl start usherd.service || fail "usherd did not start: $(journalctl -u usherd.service -n 20 -o cat)"

# Two accounts of the local provider, and nothing else of theirs on the machine.
printf 'bob-password-1\n' | usher register --email bob@example.test --password-stdin >/dev/null ||
	fail "usher register bob"
printf 'carol-password-2\n' | usher register --email carol@example.test --password-stdin >/dev/null ||
	fail "usher register carol"
# On the device (a Unix user exists while its usher user does), then logged out: login(1) logs them in again.
for who in bob:bob-password-1 carol:carol-password-2; do
	printf '%s\n' "${who#*:}" | usher login --email "${who%%:*}@example.test" --password-stdin >/dev/null ||
		fail "usher login ${who%%:*}"
	usher logout "${who%%:*}@example.test" >/dev/null || fail "usher logout ${who%%:*}"
done
grep -q '^bob:' /etc/passwd && fail "bob is in /etc/passwd"
bob=$(getent passwd bob) || fail "getent passwd bob: nss-systemd does not find usher's user"
uid=$(echo "$bob" | cut -d: -f3)
[ "$uid" -ge 60000 ] && [ "$uid" -le 60999 ] || fail "bob's uid $uid is outside 60000-60999: $bob"
if command -v userdbctl >/dev/null; then
	userdbctl user bob | grep -q "io.usher.Users" || fail "userdbctl user bob: $(userdbctl user bob 2>&1)"
	say "userdbctl user bob: served by io.usher.Users"
fi
say "getent passwd bob: $bob"

echo "XDG_SEAT=seat0" >> /etc/environment
pam-auth-update --package --enable usher || fail "pam-auth-update --enable usher"
grep -q pam_usher /etc/pam.d/common-auth || fail "pam-auth-update did not add pam_usher to common-auth"
say "pam-auth-update --enable usher"

# The sessions, driven through login(1) on pseudo-terminals.
cat > /tmp/login-pam.py <<'PY'
import os, pty, select, subprocess, sys, time

def fail(what):
    print(f"FAIL: {what}")
    sys.exit(1)

class Session:
    """login(1) on a pseudo-terminal; run() types a command line and returns what it printed and its status."""

    def __init__(self, user, password):
        self.user = user
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execve("/bin/login", ["login", user], {"PATH": "/usr/bin:/bin", "TERM": "dumb"})
        self.pending = b""
        self.expect(b"assword:")
        self.type(password)
        self.expect(b"$ ")
        self.id = self.run("echo $XDG_SESSION_ID")[0]

    def read_until(self, marker, limit=60.0):
        # A hang guard, not a measure of speed.
        end = time.monotonic() + limit
        while marker not in self.pending:
            if time.monotonic() > end:
                fail(f"{self.user}'s terminal never showed {marker!r}; it showed: {self.pending[-400:]!r}")
            ready, _, _ = select.select([self.fd], [], [], 1.0)
            if ready:
                self.pending += os.read(self.fd, 4096)
        before, _, self.pending = self.pending.partition(marker)
        return before.decode(errors="replace").replace("\r", "")

    expect = read_until

    def type(self, text):
        os.write(self.fd, text.encode() + b"\n")

    def run(self, command, answers=()):
        self.type(f"{command}; echo END-$?-OF-COMMAND")
        self.read_until(b"OF-COMMAND")  # the terminal's echo of the line typed
        for prompt, answer in answers:
            self.read_until(prompt.encode())
            self.type(answer)
        output = self.read_until(b"-OF-COMMAND")
        text, _, status = output.rpartition("END-")
        return text.strip(), int(status)

def root(*argv):
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout.strip()

def until(what, condition, limit=60.0):
    end = time.monotonic() + limit
    while not condition():
        if time.monotonic() > end:
            fail(f"{what} (waited a minute)")
        time.sleep(0.1)

bob = Session("bob", "bob-password-1")
whoami, status = bob.run("usher --json whoami")
if status != 0 or '"email":"bob@example.test"' not in whoami or '"seat":"seat0"' not in whoami:
    fail(f"usher whoami in bob's session: status {status}: {whoami}")
token, status = bob.run("usher token")
if status != 0 or len(token) < 20:
    fail(f"usher token in bob's session: status {status}: {token}")
user_id, _ = bob.run("echo $USHER_USER")
if not user_id or f'"id":"{user_id}"' not in whoami:
    fail(f"pam_usher's USHER_USER in bob's session is {user_id!r}, not his id: {whoami}")
print(f"bob logged in through login(1) (logind session {bob.id}): usher whoami and usher token answer for him")

_, status = bob.run("usher pin set", answers=[("PIN", "4711-bob"), ("PIN", "4711-bob")])
if status != 0:
    fail(f"usher pin set: status {status}")
root("loginctl", "lock-session", bob.id)
def locked():
    output, status = bob.run("usher token 2>&1")
    return status != 0 and "seat_locked" in output
until("usher token failing with seat_locked after loginctl lock-session", locked)
print("loginctl lock-session: usher token fails with seat_locked")
output, status = bob.run("usher unlock", answers=[("PIN", "4711-bob")])
if status != 0:
    fail(f"usher unlock with the PIN: status {status}: {output}")
token_after, status = bob.run("usher token")
if status != 0 or not token_after:
    fail(f"usher token after usher unlock: status {status}: {token_after}")
print("usher unlock with bob's PIN: usher token answers again")

carol = Session("carol", "carol-password-2")
def active_email():
    output = root("usher", "--json", "whoami", "--seat", "seat0")
    return output
until("seat0 moving to carol when her session became the active one",
      lambda: '"email":"carol@example.test"' in active_email())
print(f"carol's session ({carol.id}) opened on seat0 and became active: seat0's usher user is carol")
root("loginctl", "activate", bob.id)
until("seat0 moving back to bob when loginctl activate made his session active again",
      lambda: '"email":"bob@example.test"' in active_email())
print("loginctl activate bob's session: seat0's usher user is bob again")
for session in (bob, carol):
    session.type("exit")
PY
status=0
python3 /tmp/login-pam.py > /tmp/login-pam.out 2>&1 || status=$?
while IFS= read -r line; do say "$line"; done < /tmp/login-pam.out
[ "$status" -eq 0 ] || fail "the login sessions (status $status); usherd's log: $(journalctl -u usherd.service -n 30 -o cat)"
restore
say "ok"
