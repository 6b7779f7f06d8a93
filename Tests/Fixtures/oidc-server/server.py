#!/usr/bin/env python3
"""A real OpenID Connect provider for usher's tests: django-oauth-toolkit on 127.0.0.1.

    server.py setup STATE_DIR         create the database, an RSA signing key, test users and one client per grant
    server.py serve STATE_DIR [PORT]  serve on 127.0.0.1:PORT (0 or absent: a free port); prints
                                      "listening on http://127.0.0.1:PORT" once it accepts connections
    server.py revoke STATE_DIR USER   revoke every token of USER, as an administrator would (the server may run)
    server.py tokens STATE_DIR USER   print USER's tokens as JSON: {"access", "refresh_active", "refresh_revoked"}
    server.py set-profile STATE_DIR USER FIRST LAST [GROUP...]
                                      change USER's names and groups, as an administrator would (the server may run)
    server.py set-email STATE_DIR USER EMAIL
                                      change USER's email, as an administrator would (the server may run)
    server.py expire STATE_DIR USER   make every access token of USER expired (as if its lifetime had passed)

Test users: alice, bob, carol, dave, erin, frank, grace, heidi, ivan, judy (password "<name>-password", email "<name>@example.com"),
mallory, whom one test deletes through the account-deletion endpoint, olivia, whose tokens one test revokes, and
peggy, whose email one test changes (the
server is shared by the suites, which run in parallel: a user other tests hold sessions of is never deleted or revoked
but by the one test that uses it).
Clients (all sign ID tokens with RS256):
    usher-code      public, authorization code + PKCE, loopback redirect http://127.0.0.1/callback (any port)
    usher-device    public, device authorization grant
    usher-password  confidential (secret "password-secret"), resource owner password grant
    usher-short     confidential (secret "short-secret"), password grant, access tokens live 4 seconds
    usher-service   confidential (secret "service-secret"), client credentials
"""

import json
import os
import secrets
import signal
import socket
import sys

# Nothing is written into the source tree (no __pycache__ next to the fixture).
sys.dont_write_bytecode = True
from pathlib import Path

HERE = Path(__file__).resolve().parent
USERS = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy", "mallory", "olivia", "peggy"]
CLIENTS = [
    # client_id, client type, grant, secret, redirect URIs
    ("usher-code", "public", "authorization-code", None, "http://127.0.0.1/callback"),
    ("usher-device", "public", "urn:ietf:params:oauth:grant-type:device_code", None, ""),
    ("usher-password", "confidential", "password", "password-secret", ""),
    ("usher-short", "confidential", "password", "short-secret", ""),
    ("usher-service", "confidential", "client-credentials", "service-secret", ""),
]


def django_setup(state_dir, port=0):
    os.environ["OIDC_STATE_DIR"] = str(state_dir)
    os.environ["OIDC_SERVER_PORT"] = str(port)
    os.environ["DJANGO_SETTINGS_MODULE"] = "testserver.settings"
    sys.path.insert(0, str(HERE))
    import django

    django.setup()


def setup(state_dir):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    state_dir.mkdir(parents=True, exist_ok=True)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    (state_dir / "oidc-rsa.pem").write_bytes(pem)
    (state_dir / "django-secret").write_text(secrets.token_urlsafe(48))
    django_setup(state_dir)

    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from oauth2_provider.models import get_application_model

    call_command("migrate", verbosity=0, interactive=False)
    User = get_user_model()
    for name in USERS:
        User.objects.create_user(
            username=name,
            email=f"{name}@example.com",
            password=f"{name}-password",
            first_name=name.capitalize(),
            last_name="Tester",
        )
    Application = get_application_model()
    for client_id, client_type, grant, secret, redirect_uris in CLIENTS:
        Application.objects.create(
            name=client_id,
            client_id=client_id,
            client_secret=secret or "",
            client_type=client_type,
            authorization_grant_type=grant,
            redirect_uris=redirect_uris,
            algorithm="RS256",
        )
    print("ok", flush=True)


def serve(state_dir, port):
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    port = listener.getsockname()[1]
    django_setup(state_dir, port)

    import socketserver
    from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

    from django.core.wsgi import get_wsgi_application

    class Server(socketserver.ThreadingMixIn, WSGIServer):
        daemon_threads = True

        def server_bind(self):
            # The socket is bound already (to learn the port before Django reads its settings).
            self.server_address = self.socket.getsockname()
            self.server_name = "127.0.0.1"
            self.server_port = port
            self.setup_environ()

    class Handler(WSGIRequestHandler):
        def log_message(self, format, *args):
            sys.stderr.write("%s %s\n" % (self.log_date_time_string(), format % args))

    server = Server(("127.0.0.1", port), Handler, bind_and_activate=False)
    server.socket.close()
    server.socket = listener
    server.server_bind()
    listener.listen(64)
    server.set_app(get_wsgi_application())
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    print(f"listening on http://127.0.0.1:{port}", flush=True)
    server.serve_forever(poll_interval=0.1)


def revoke(state_dir, username):
    django_setup(state_dir)
    from oauth2_provider.models import get_access_token_model, get_refresh_token_model

    revoked = 0
    for token in get_refresh_token_model().objects.filter(user__username=username, revoked__isnull=True):
        token.revoke()
        revoked += 1
    for token in get_access_token_model().objects.filter(user__username=username):
        token.revoke()
    print(json.dumps({"revoked": revoked}), flush=True)


def tokens(state_dir, username):
    django_setup(state_dir)
    from oauth2_provider.models import get_access_token_model, get_refresh_token_model

    refresh = get_refresh_token_model().objects.filter(user__username=username)
    print(
        json.dumps(
            {
                "access": get_access_token_model().objects.filter(user__username=username).count(),
                "refresh_active": refresh.filter(revoked__isnull=True).count(),
                "refresh_revoked": refresh.filter(revoked__isnull=False).count(),
            }
        ),
        flush=True,
    )


def set_profile(state_dir, username, first_name, last_name, groups):
    django_setup(state_dir)
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    user = get_user_model().objects.get(username=username)
    user.first_name = first_name
    user.last_name = last_name
    user.save()
    user.groups.set([Group.objects.get_or_create(name=name)[0] for name in groups])
    print(json.dumps({"ok": True}), flush=True)


def set_email(state_dir, username, email):
    django_setup(state_dir)
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.get(username=username)
    user.email = email
    user.save()
    print(json.dumps({"ok": True}), flush=True)


def expire(state_dir, username):
    django_setup(state_dir)
    from datetime import timedelta

    from django.utils import timezone
    from oauth2_provider.models import get_access_token_model

    past = timezone.now() - timedelta(hours=1)
    expired = get_access_token_model().objects.filter(user__username=username).update(expires=past)
    print(json.dumps({"expired": expired}), flush=True)


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 2 else None
    if command == "setup":
        setup(Path(sys.argv[2]))
    elif command == "serve":
        serve(Path(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 0)
    elif command == "revoke" and len(sys.argv) == 4:
        revoke(Path(sys.argv[2]), sys.argv[3])
    elif command == "tokens" and len(sys.argv) == 4:
        tokens(Path(sys.argv[2]), sys.argv[3])
    elif command == "set-profile" and len(sys.argv) >= 6:
        set_profile(Path(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6:])
    elif command == "set-email" and len(sys.argv) == 5:
        set_email(Path(sys.argv[2]), sys.argv[3], sys.argv[4])
    elif command == "expire" and len(sys.argv) == 4:
        expire(Path(sys.argv[2]), sys.argv[3])
    else:
        sys.exit(__doc__)
