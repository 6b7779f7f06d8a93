#!/usr/bin/env python3
"""A minimal SMTP server for usher's tests that accepts mail only from a client that authenticates with XOAUTH2 and
an access token usherd issued (the SASL mechanism Gmail and Outlook use; msmtp's `auth xoauth2`).

    smtp_server.py DIRECTORY JWKS_FILE

Serves on a free port of 127.0.0.1 and writes "listening on PORT" on stderr once it accepts connections. Logs
"accepted mail from EMAIL for USER" for each message accepted (EMAIL: the token's claim; USER: the SASL user), and
"refused USER" for each refused authentication. No TLS: the tests talk over loopback.
"""

import base64
import socketserver
import sys
from pathlib import Path

sys.dont_write_bytecode = True

from tokens import keys, verified_claims


def main():
    directory = Path(sys.argv[1]).resolve()
    public_keys = keys(sys.argv[2])

    class Handler(socketserver.StreamRequestHandler):
        def say(self, line):
            self.wfile.write((line + "\r\n").encode())
            self.wfile.flush()

        def handle(self):
            self.say("220 usher-test ESMTP")
            user = None
            claims = None
            while True:
                line = self.rfile.readline(65536).decode(errors="replace").rstrip("\r\n")
                if not line:
                    return
                verb = line.split(" ", 1)[0].upper()
                if verb in ("EHLO", "HELO"):
                    self.wfile.write(b"250-usher-test\r\n250-AUTH XOAUTH2\r\n250 8BITMIME\r\n")
                    self.wfile.flush()
                elif verb == "AUTH":
                    parts = line.split(" ")
                    if len(parts) < 2 or parts[1].upper() != "XOAUTH2":
                        self.say("504 5.7.4 only XOAUTH2")
                        continue
                    if len(parts) == 2:
                        self.say("334 ")
                        parts.append(self.rfile.readline(65536).decode().strip())
                    try:
                        fields = base64.b64decode(parts[2]).decode().split("\x01")
                    except ValueError:
                        fields = []
                    given = {f.split("=", 1)[0]: f.split("=", 1)[1] for f in fields if "=" in f}
                    token = given.get("auth", "")[len("Bearer "):] if given.get("auth", "").startswith("Bearer ") else ""
                    claims = verified_claims(token, public_keys, directory / "revoked") if token else None
                    user = given.get("user")
                    if claims is None:
                        sys.stderr.write(f"refused {user}\n")
                        self.say("535 5.7.8 the token was refused")
                    else:
                        self.say("235 2.7.0 accepted")
                elif verb in ("MAIL", "RCPT"):
                    self.say("250 2.1.0 ok" if claims else "530 5.7.0 authentication required")
                elif verb == "DATA":
                    if not claims:
                        self.say("530 5.7.0 authentication required")
                        continue
                    self.say("354 go on")
                    while self.rfile.readline(65536).rstrip(b"\r\n") != b".":
                        pass
                    sys.stderr.write(f"accepted mail from {claims.get('email') or claims.get('sub')} for {user}\n")
                    sys.stderr.flush()
                    self.say("250 2.0.0 queued")
                elif verb == "QUIT":
                    self.say("221 2.0.0 bye")
                    return
                else:
                    self.say("250 2.0.0 ok")

    class Server(socketserver.ThreadingTCPServer):
        daemon_threads = True
        allow_reuse_address = True

    server = Server(("127.0.0.1", 0), Handler)
    sys.stderr.write(f"listening on {server.server_address[1]}\n")
    sys.stderr.flush()
    server.serve_forever(poll_interval=0.1)


if __name__ == "__main__":
    main()
