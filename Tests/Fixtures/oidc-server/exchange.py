#!/usr/bin/env python3
"""A real OpenID provider with OAuth 2.0 Token Exchange (RFC 8693), for usher's token_exchange tests.

django-oauth-toolkit has no token exchange, so this is idpyoidc (IdentityPython's OpenID Connect server library,
from PyPI) behind a small WSGI front: discovery, JWK set, authorization, token (authorization code, refresh, token
exchange) and userinfo endpoints, on 127.0.0.1. The token exchange itself is idpyoidc's.

    exchange.py serve STATE_DIR [--dpop]
        Serves on a free loopback port; prints "listening on http://127.0.0.1:PORT" once it accepts connections.
        With --dpop, the token endpoint takes DPoP proofs (RFC 9449; idpyoidc's own add-on checks them and binds the
        tokens: token_type DPoP, cnf.jkt) and the client "usher" may also use the authorization code grant with the
        redirect URI http://127.0.0.1:8976/callback. In front of idpyoidc, which has no nonces, the token endpoint
        demands a nonce of its own in every proof (use_dpop_nonce, DPoP-Nonce), and userinfo takes a DPoP-bound token
        only with a proof that RFC 9449 section 7 accepts (checked as Tests/Fixtures/token-servers/dpop_server.py
        does; idpyoidc's own userinfo check hashes ath in hexadecimal, not base64url). Each is logged on stderr:
        "dpop: nonce demanded", "dpop: token request with nonce", "dpop: userinfo proof accepted" or
        "dpop: userinfo proof refused: REASON". Every token request is logged as "token request: GRANT_TYPE
        [audience=A] [scope=S]" (never a token).
    exchange.py subject-token ISSUER
        Plays another application of the same provider ("app"): logs the test user in (the authorization endpoint
        authenticates everyone as "diana") with the authorization code grant and prints its access token, the
        subject token a client exchanges.

Clients: "app" (secret "app-secret"), "usher" (secret "usher-secret", may exchange tokens). The user: diana
(diana@example.com, "Diana Krall").
"""

import json
import os
import signal
import socket
import sys

# Nothing is written into the source tree (no __pycache__ next to the fixture).
sys.dont_write_bytecode = True
import threading
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlparse

KEY_DEFINITIONS = [{"type": "RSA", "key": "", "use": ["sig"]}, {"type": "EC", "crv": "P-256", "use": ["sig"]}]
ENCRYPTION = {
    "kwargs": {
        "keys": {
            "key_defs": [
                {"type": "OCT", "use": ["enc"], "kid": "password"},
                {"type": "OCT", "use": ["enc"], "kid": "salt"},
            ]
        },
        "iterations": 1,
    }
}
APP_REDIRECT = "https://app.example.com/callback"
USHER_DPOP_REDIRECT = "http://127.0.0.1:8976/callback"


def configuration(issuer, state_dir, dpop=False):
    from idpyoidc.server.authz import AuthzHandling
    from idpyoidc.server.client_authn import verify_client
    from idpyoidc.server.user_info import UserInfo

    extra = {}
    if dpop:
        extra["add_on"] = {
            "dpop": {
                "function": "idpyoidc.server.oauth2.add_on.dpop.add_support",
                "kwargs": {"dpop_signing_alg_values_supported": ["ES256"], "dpop_endpoints": ["token"]},
            }
        }
    return extra | {
        "issuer": issuer,
        "httpc_params": {"verify": False},
        "keys": {
            "uri_path": "jwks.json",
            "key_defs": KEY_DEFINITIONS,
            "private_path": str(state_dir / "jwks.json"),
            "read_only": False,
        },
        "token_handler_args": {
            "jwks_defs": {"key_defs": KEY_DEFINITIONS},
            "code": {"lifetime": 600, "kwargs": {"crypt_conf": ENCRYPTION}},
            "token": {
                "class": "idpyoidc.server.token.jwt_token.JWTToken",
                "kwargs": {"lifetime": 600, "add_claims_by_scope": True},
            },
            "refresh": {"class": "idpyoidc.server.token.jwt_token.JWTToken", "kwargs": {"lifetime": 86400}},
            "id_token": {"class": "idpyoidc.server.token.id_token.IDToken", "kwargs": {}},
        },
        "endpoint": {
            "provider_config": {
                "path": ".well-known/openid-configuration",
                "class": "idpyoidc.server.oidc.provider_config.ProviderConfiguration",
                "kwargs": {},
            },
            "authorization": {
                "path": "authorization",
                "class": "idpyoidc.server.oidc.authorization.Authorization",
                "kwargs": {},
            },
            "token": {
                "path": "token",
                "class": "idpyoidc.server.oidc.token.Token",
                "kwargs": {
                    "client_authn_method": ["client_secret_basic", "client_secret_post"],
                    "grant_types_helpers": {
                        "authorization_code": {
                            "class": "idpyoidc.server.oidc.token_helper.access_token.AccessTokenHelper"
                        },
                        "refresh_token": {
                            "class": "idpyoidc.server.oidc.token_helper.refresh_token.RefreshTokenHelper"
                        },
                        "urn:ietf:params:oauth:grant-type:token-exchange": {
                            "class": "idpyoidc.server.oidc.token_helper.token_exchange.TokenExchangeHelper",
                            "kwargs": {
                                "subject_token_types_supported": [
                                    "urn:ietf:params:oauth:token-type:access_token"
                                ],
                                "requested_token_types_supported": [
                                    "urn:ietf:params:oauth:token-type:access_token"
                                ],
                                "default_requested_token_type": "urn:ietf:params:oauth:token-type:access_token",
                                "policy": {
                                    "": {
                                        "function": "idpyoidc.server.oauth2.token_helper."
                                        "validate_token_exchange_policy",
                                        "kwargs": {"scope": ["openid", "email", "profile"]},
                                    }
                                },
                            },
                        },
                    },
                },
            },
            "userinfo": {"path": "userinfo", "class": "idpyoidc.server.oidc.userinfo.UserInfo", "kwargs": {}},
        },
        "authentication": {
            "anonymous": {
                "acr": "urn:oasis:names:tc:SAML:2.0:ac:classes:InternetProtocolPassword",
                "class": "idpyoidc.server.user_authn.user.NoAuthn",
                "kwargs": {"user": "diana"},
            }
        },
        "userinfo": {"class": UserInfo, "kwargs": {"db_file": str(state_dir / "users.json")}},
        "client_authn": verify_client,
        "authz": {
            "class": AuthzHandling,
            "kwargs": {
                "grant_config": {
                    "usage_rules": {
                        "authorization_code": {
                            "supports_minting": ["access_token", "refresh_token", "id_token"],
                            "max_usage": 1,
                        },
                        "access_token": {"supports_minting": ["access_token"], "expires_in": 600},
                        "refresh_token": {
                            "supports_minting": ["access_token", "refresh_token", "id_token"],
                            "expires_in": 86400,
                        },
                    },
                    "expires_in": 43200,
                }
            },
        },
        "session_params": {"encrypter": ENCRYPTION},
    }


def build(state_dir, issuer, dpop=False):
    from idpyoidc.server import Server
    from idpyoidc.server.configure import OPConfiguration

    state_dir.mkdir(parents=True, exist_ok=True)
    (state_dir / "users.json").write_text(
        json.dumps(
            {
                "diana": {
                    "sub": "diana",
                    "email": "diana@example.com",
                    "email_verified": True,
                    "name": "Diana Krall",
                    "preferred_username": "diana",
                }
            }
        )
    )
    server = Server(
        OPConfiguration(conf=configuration(issuer, state_dir, dpop), base_path=str(state_dir)), cwd=str(state_dir)
    )
    scopes = ["openid", "email", "profile", "offline_access"]
    server.context.cdb["app"] = {
        "client_id": "app",
        "client_secret": "app-secret",
        "client_salt": "app-salt",
        "redirect_uris": [(APP_REDIRECT, None)],
        "token_endpoint_auth_method": "client_secret_post",
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "response_types_supported": ["code"],
        "allowed_scopes": scopes,
    }
    server.context.cdb["usher"] = {
        "client_id": "usher",
        "client_secret": "usher-secret",
        "client_salt": "usher-salt",
        "redirect_uris": [("http://127.0.0.1/callback", None)],
        "token_endpoint_auth_method": "client_secret_basic",
        "grant_types_supported": ["urn:ietf:params:oauth:grant-type:token-exchange", "refresh_token"],
        "response_types_supported": ["code"],
        "allowed_scopes": scopes,
    }
    if dpop:
        # idpyoidc 5.0.0's add-on puts this in the metadata, which the server then rebuilds without it; its refresh
        # grant binds tokens only when the metadata has it.
        server.context.provider_info["dpop_signing_alg_values_supported"] = ["ES256"]
        server.context.cdb["usher"]["redirect_uris"].append((USHER_DPOP_REDIRECT, None))
        server.context.cdb["usher"]["grant_types_supported"].append("authorization_code")
    return server


class DPoPFront:
    """What the --dpop server does in front of idpyoidc: a nonce at the token endpoint, proofs at userinfo."""

    def __init__(self):
        import secrets

        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "token-servers"))
        self.nonce = "n-" + secrets.token_urlsafe(12)
        self.seen = set()

    @staticmethod
    def claims(jwt):
        import base64

        part = jwt.split(".")[1]
        return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))

    def token_refusal(self, environ):
        """The answer to a token request whose proof lacks this server's nonce, or None."""
        proof = environ.get("HTTP_DPOP", "")
        try:
            nonce = self.claims(proof).get("nonce")
        except (ValueError, IndexError):
            nonce = None
        if nonce == self.nonce:
            sys.stderr.write("dpop: token request with nonce\n")
            return None
        sys.stderr.write("dpop: nonce demanded\n")
        body = {"error": "use_dpop_nonce", "error_description": "Authorization server requires nonce in DPoP proof"}
        return "400 Bad Request", json.dumps(body), [("DPoP-Nonce", self.nonce), ("Cache-Control", "no-store")]

    def userinfo_refusal(self, environ, url):
        """Checks a DPoP-bound userinfo request (RFC 9449 section 7.1); the reason it is refused, or None."""
        from dpop_server import Refusal, check_proof

        authorization = environ.get("HTTP_AUTHORIZATION", "")
        if not authorization.startswith("DPoP "):
            return "not a DPoP-bound request"
        token = authorization[len("DPoP ") :]
        try:
            jkt = (self.claims(token).get("cnf") or {}).get("jkt")
            check_proof(environ.get("HTTP_DPOP", ""), "GET", url, token, jkt, None, self.seen)
        except (ValueError, IndexError):
            return "the token is not a JWT"
        except Refusal as refusal:
            return refusal.reason
        environ["HTTP_AUTHORIZATION"] = "Bearer " + token
        return None


def application(server, front=None):
    lock = threading.Lock()  # idpyoidc's server state is not made for concurrent requests

    def respond(start_response, status, body, content_type="application/json", headers=()):
        data = body.encode() if isinstance(body, str) else body
        start_response(status, [("Content-Type", content_type), ("Content-Length", str(len(data)))] + list(headers))
        return [data]

    def handle(environ, start_response):
        path = environ.get("PATH_INFO", "")
        method = environ["REQUEST_METHOD"]
        query = environ.get("QUERY_STRING", "")
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length).decode() if length else ""
        if front is not None and path == "/token":
            refusal = front.token_refusal(environ)
            if refusal:
                return respond(start_response, refusal[0], refusal[1], headers=refusal[2])
        if front is not None and path == "/userinfo" and "HTTP_DPOP" in environ:
            reason = front.userinfo_refusal(environ, server.context.issuer + path)
            if reason:
                sys.stderr.write("dpop: userinfo proof refused: %s\n" % reason)
                challenge = 'DPoP algs="ES256", error="invalid_dpop_proof"'
                return respond(start_response, "401 Unauthorized", "{}", headers=[("WWW-Authenticate", challenge)])
            sys.stderr.write("dpop: userinfo proof accepted\n")
        headers = {"authorization": environ.get("HTTP_AUTHORIZATION", "")}
        if "HTTP_DPOP" in environ:
            headers["dpop"] = environ["HTTP_DPOP"]
        http_info = {"headers": headers, "method": method, "url": server.context.issuer + path}
        if path == "/jwks.json":
            return respond(start_response, "200 OK", json.dumps(server.keyjar.export_jwks()))
        names = {
            "/.well-known/openid-configuration": "provider_config",
            "/authorization": "authorization",
            "/token": "token",
            "/userinfo": "userinfo",
        }
        if path not in names:
            return respond(start_response, "404 Not Found", json.dumps({"error": "not_found"}))
        endpoint = server.get_endpoint(names[path])
        if path == "/token":
            # What each token request asked for (never a token): the tests check the grant and what it narrowed to.
            form = parse_qs(body)
            grant = form.get("grant_type", [""])[0]
            narrowing = " ".join(
                "%s=%s" % (key, ",".join(form[key])) for key in ("audience", "scope") if key in form
            )
            sys.stderr.write("token request: %s %s\n" % (grant, narrowing))
        request = endpoint.parse_request(body if method == "POST" else query, http_info=http_info)
        if "error" in request:
            status = "401 Unauthorized" if request["error"] in ("invalid_client", "invalid_token") else "400 Bad Request"
            return respond(start_response, status, request.to_json())
        result = endpoint.process_request(request, http_info=http_info)
        if "error" in result:
            return respond(start_response, "400 Bad Request", json.dumps(result))
        response_args = result.get("response_args")
        if response_args is not None and "error" in response_args:
            status = "401 Unauthorized" if response_args["error"] == "invalid_token" else "400 Bad Request"
            return respond(start_response, status, response_args.to_json())
        if names[path] == "authorization":
            location = result["return_uri"] + "?" + urlencode(response_args.to_dict())
            return respond(start_response, "302 Found", "", "text/plain", [("Location", location)])
        answer = endpoint.do_response(request=request, **result)
        content_type = dict(answer.get("http_headers", [])).get("Content-type", "application/json")
        return respond(start_response, "200 OK", answer["response"], content_type)

    def app(environ, start_response):
        with lock:
            return handle(environ, start_response)

    return app


def serve(state_dir, dpop=False):
    from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    server = build(state_dir, f"http://127.0.0.1:{port}", dpop)

    class Handler(WSGIRequestHandler):
        def log_message(self, format, *args):
            sys.stderr.write("%s %s\n" % (self.log_date_time_string(), format % args))

    http = WSGIServer(("127.0.0.1", port), Handler, bind_and_activate=False)
    http.socket.close()
    http.socket = listener
    http.server_address = listener.getsockname()
    http.server_name = "127.0.0.1"
    http.server_port = port
    http.setup_environ()
    listener.listen(16)
    http.set_app(application(server, DPoPFront() if dpop else None))
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    print(f"listening on http://127.0.0.1:{port}", flush=True)
    http.serve_forever(poll_interval=0.1)


def subject_token(issuer):
    import requests

    authorize = requests.get(
        issuer + "/authorization",
        params={
            "response_type": "code",
            "client_id": "app",
            "redirect_uri": APP_REDIRECT,
            "scope": "openid email profile",
            "state": "app-state",
            "nonce": "app-nonce",
        },
        allow_redirects=False,
        timeout=10,
    )
    location = authorize.headers.get("Location", "")
    code = parse_qs(urlparse(location).query).get("code", [None])[0]
    if authorize.status_code != 302 or not code:
        sys.exit(f"exchange: no code from the authorization endpoint (HTTP {authorize.status_code}): {authorize.text}")
    tokens = requests.post(
        issuer + "/token",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": APP_REDIRECT,
            "client_id": "app",
            "client_secret": "app-secret",
        },
        timeout=10,
    )
    if tokens.status_code != 200:
        sys.exit(f"exchange: the code was not exchanged (HTTP {tokens.status_code}): {tokens.text}")
    print(tokens.json()["access_token"])


if __name__ == "__main__":
    if len(sys.argv) in (3, 4) and sys.argv[1] == "serve" and sys.argv[3:] in ([], ["--dpop"]):
        serve(Path(sys.argv[2]), dpop=sys.argv[3:] == ["--dpop"])
    elif len(sys.argv) == 3 and sys.argv[1] == "subject-token":
        subject_token(sys.argv[2])
    else:
        sys.exit(__doc__)
