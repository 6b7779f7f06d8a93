#!/usr/bin/env python3
"""A git smart-HTTP server for usher's tests: git's own `git http-backend` behind a small HTTP server that lets a
request in only with an access token usherd issued.

    git_server.py ROOT JWKS_FILE [PORT]

Serves the repositories under ROOT on 127.0.0.1:PORT (0 or absent: a free port) and writes
"listening on http://127.0.0.1:PORT" on stderr once it accepts connections. A request must carry HTTP Basic credentials whose
password is an ES256 JWT that verifies against a key of JWKS_FILE (usherd's `jwks` answer), is unexpired, and whose
`jti` is not a line of ROOT/revoked; anything else gets 401 with a Basic challenge, as a git host answers a token it
does not accept. Each accepted push is logged on stderr as "push by EMAIL" (the token's email claim, else its sub).
"""

import base64
import os
import subprocess
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.dont_write_bytecode = True

from tokens import keys, verified_claims


def main():
    root = Path(sys.argv[1]).resolve()
    public_keys = keys(sys.argv[2])
    port = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    revoked_file = root / "revoked"

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format, *args):
            sys.stderr.write("%s\n" % (format % args))

        def refuse(self):
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="usher test"')
            self.send_header("Content-Length", "0")
            self.end_headers()

        def handle_git(self):
            header = self.headers.get("Authorization", "")
            if not header.startswith("Basic "):
                return self.refuse()
            try:
                _, _, password = base64.b64decode(header[6:]).decode().partition(":")
            except ValueError:
                return self.refuse()
            claims = verified_claims(password, public_keys, revoked_file)
            if claims is None:
                return self.refuse()
            who = claims.get("email") or claims.get("sub")
            path, _, query = self.path.partition("?")
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if path.endswith("/git-receive-pack"):
                sys.stderr.write(f"push by {who}\n")
            environment = dict(
                os.environ,
                GIT_PROJECT_ROOT=str(root),
                GIT_HTTP_EXPORT_ALL="1",
                PATH_INFO=path,
                QUERY_STRING=query,
                REQUEST_METHOD=self.command,
                CONTENT_TYPE=self.headers.get("Content-Type", ""),
                CONTENT_LENGTH=str(len(body)),
                REMOTE_USER=who,
                REMOTE_ADDR="127.0.0.1",
            )
            result = subprocess.run(["git", "http-backend"], input=body, env=environment, capture_output=True)
            head, _, content = result.stdout.partition(b"\r\n\r\n")
            status = 200
            headers = []
            for line in head.decode().split("\r\n"):
                name, _, value = line.partition(":")
                if name.lower() == "status":
                    status = int(value.strip().split()[0])
                elif name:
                    headers.append((name, value.strip()))
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            self.wfile.write(content)

        do_GET = handle_git
        do_POST = handle_git

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    sys.stderr.write(f"listening on http://127.0.0.1:{server.server_address[1]}\n")
    sys.stderr.flush()
    server.serve_forever(poll_interval=0.1)


if __name__ == "__main__":
    main()
