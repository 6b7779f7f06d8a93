#!/bin/sh
# Issue 25: usherd makes its requests to identity providers with the system's libcurl, which it opens with dlopen on
# the first one (not linked: a daemon that never asks a provider anything does not map it). So the package must depend
# on libcurl4, and the installed usherd must find and use it, here where the Swift toolchain is hidden: a usherd of
# its own (foreground, a directory of its own) fetches a JWK set from a server on loopback for a JWT login. Leaves
# the system as it found it.
set -u
say() { echo "http: $*"; }
fail() { say "FAIL: $*"; exit 1; }

depends=$(dpkg-query -W -f='${Depends}' usher) || fail "the usher package is not installed"
echo "$depends" | grep -Eq '(^|, )libcurl4 \(>= 7\.85' || fail "usher does not depend on libcurl4 (>= 7.85): $depends"
if readelf -d /usr/bin/usherd | grep -q 'NEEDED.*libcurl'; then fail "usherd links libcurl instead of opening it"; fi

work=$(mktemp -d /tmp/usher-http-XXXXXX)
server=""
daemon=""
cleanup() {
	[ -z "$daemon" ] || kill "$daemon" 2>/dev/null
	[ -z "$server" ] || kill "$server" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

echo '{"keys":[]}' > "$work/jwks.json"
# A JWK set server on a free loopback port, which it writes to a file once it listens.
python3 -c '
import functools, http.server, sys
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
server = http.server.HTTPServer(("127.0.0.1", 0), handler)
with open(sys.argv[1] + "/port.tmp", "w") as f:
    f.write(str(server.server_address[1]))
__import__("os").rename(sys.argv[1] + "/port.tmp", sys.argv[1] + "/port")
server.serve_forever()
' "$work" 2>"$work/server.log" &
server=$!
for _ in $(seq 600); do [ -e "$work/port" ] && break; sleep 0.1; done
[ -e "$work/port" ] || fail "the JWK set server did not start: $(cat "$work/server.log")"
port=$(cat "$work/port")

cat > "$work/usherd.toml" <<CONFIG
[providers.local]
type = "local"

[providers.local.jwt]
issuer = "https://auth.example.com"
audience = "usher"
jwks_url = "http://127.0.0.1:$port/jwks.json"
CONFIG
/usr/bin/usherd --config "$work/usherd.toml" --socket "$work/usher.sock" --state-directory "$work/state" \
	>"$work/usherd.log" 2>&1 &
daemon=$!
for _ in $(seq 600); do [ -S "$work/usher.sock" ] && break; sleep 0.1; done
[ -S "$work/usher.sock" ] || fail "usherd did not start: $(cat "$work/usherd.log")"
grep -q libcurl "/proc/$daemon/maps" && fail "usherd mapped libcurl before any request to a provider"

# A JWT signed by a key the set does not have: the answer names the key the fetched (empty) set lacks; without
# libcurl it would say the keys are unavailable.
answer=$(python3 -c '
import json, socket, sys
connection = socket.socket(socket.AF_UNIX)
connection.settimeout(60)
connection.connect(sys.argv[1])
token = "eyJhbGciOiJSUzI1NiIsImtpZCI6ImsxIn0.eyJzdWIiOiJ4In0.c2ln"
request = {"method": "login", "params": {"credentials": {"type": "jwt", "token": token}}}
connection.sendall(json.dumps(request).encode() + b"\n")
reply = b""
while not reply.endswith(b"\n"):
    chunk = connection.recv(65536)
    if not chunk:
        break
    reply += chunk
print(reply.decode().strip())
' "$work/usher.sock") || fail "login: $answer"
echo "$answer" | grep -q 'no key with kid \\"k1\\"' || fail "the JWK set was not fetched: $answer $(tail -5 "$work/usherd.log")"
grep -q 'GET /jwks.json' "$work/server.log" || fail "the server saw no request: $(cat "$work/server.log")"
grep -q libcurl "/proc/$daemon/maps" || fail "usherd answered without libcurl mapped"
say "usherd opened $(grep -o '/[^ ]*libcurl[^ ]*' "/proc/$daemon/maps" | head -1) with its first request and fetched the key set: $answer"
say "ok"
