#!/usr/bin/env python3
"""An outside OAuth 2.0 issuer for usher's `access_token` credentials, whose answers the test writes (issue 36):

    token_check_server.py DIRECTORY

Serves on 127.0.0.1 and a free port and writes "listening on http://127.0.0.1:PORT" on stderr once it accepts
connections.

- `POST /introspect` (RFC 7662): the answer is DIRECTORY/TOKEN.json for the form's `token`, else `{"active": false}`.
- `GET /userinfo`: the answer is DIRECTORY/TOKEN.json for the bearer token, else 401.
- `GET /moved/userinfo` and `POST /moved/introspect`: a redirect to `/open/...` on `localhost` (another host name, so
  that a client does not send the token on), which answers 200 with a user to anyone, token or none.

Each request is logged on stderr as "METHOD PATH authorization=yes|no".
"""

import json
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs

sys.dont_write_bytecode = True

TOKEN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
OPEN_ANSWER = {"active": True, "sub": "mallory", "email": "mallory@example.com"}


def main():
    directory = Path(sys.argv[1]).resolve()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def answer(self, status, body, headers=()):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def stored(self, token):
            path = directory / f"{token}.json"
            if token is None or not TOKEN.match(token) or not path.exists():
                return None
            return json.loads(path.read_text())

        def redirect(self, status, path):
            port = self.server.server_address[1]
            self.answer(status, {}, [("Location", f"http://localhost:{port}{path}")])

        def log(self):
            authorization = "yes" if self.headers.get("Authorization") else "no"
            sys.stderr.write(f"{self.command} {self.path} authorization={authorization}\n")
            sys.stderr.flush()

        def do_GET(self):
            self.log()
            if self.path == "/moved/userinfo":
                self.redirect(302, "/open/userinfo")
            elif self.path == "/open/userinfo":
                self.answer(200, OPEN_ANSWER)
            elif self.path == "/userinfo":
                authorization = self.headers.get("Authorization", "")
                token = authorization[len("Bearer ") :] if authorization.startswith("Bearer ") else None
                found = self.stored(token)
                if found is None:
                    self.answer(401, {"error": "invalid_token"})
                else:
                    self.answer(200, found)
            else:
                self.answer(404, {"error": "not_found"})

        def do_POST(self):
            self.log()
            length = int(self.headers.get("Content-Length", "0"))
            form = parse_qs(self.rfile.read(length).decode())
            if self.path == "/moved/introspect":
                self.redirect(307, "/open/introspect")
            elif self.path == "/open/introspect":
                self.answer(200, OPEN_ANSWER)
            elif self.path == "/introspect":
                found = self.stored(form.get("token", [None])[0])
                self.answer(200, found if found is not None else {"active": False})
            else:
                self.answer(404, {"error": "not_found"})

        def log_message(self, format, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    sys.stderr.write(f"listening on http://127.0.0.1:{server.server_address[1]}\n")
    sys.stderr.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()
