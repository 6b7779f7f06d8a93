#!/usr/bin/env python3
"""A resource server for usher's tests that accepts only DPoP-bound access tokens usherd issued, with a valid proof
of possession, checked as RFC 9449 section 7.1 asks.

    dpop_server.py JWKS_FILE [--nonce]

Listens on 127.0.0.1 (a free port) and writes "listening on http://127.0.0.1:PORT" on stderr once it accepts
connections. A GET or POST to any path must carry `Authorization: DPoP TOKEN` and one `DPoP: PROOF` header, where:

- TOKEN is an ES256 JWT that verifies against a key of JWKS_FILE (usherd's `jwks` answer), is unexpired, and has a
  `cnf.jkt`;
- PROOF is a JWT with `typ` dpop+jwt and `alg` ES256, signed by the public key in its `jwk` header (which holds no
  private part), whose RFC 7638 thumbprint is the token's `cnf.jkt`; its `htm` and `htu` are this request's method
  and URL (without query), its `iat` is within 60 seconds of now, its `ath` is the token's SHA-256, and its `jti` has
  not been seen before;
- with --nonce, PROOF also carries the nonce this server hands out (`DPoP-Nonce`, with `use_dpop_nonce` when it is
  missing or stale).

An accepted request gets 200 and "accepted SUB" on stderr; a refused one gets 401 with a `WWW-Authenticate: DPoP`
challenge and "refused: REASON" on stderr.
"""

import base64
import hashlib
import json
import secrets
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.dont_write_bytecode = True

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from tokens import b64url, keys, verified_claims


def b64url_encode(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def thumbprint(jwk):
    canonical = json.dumps(
        {"crv": jwk["crv"], "kty": jwk["kty"], "x": jwk["x"], "y": jwk["y"]}, separators=(",", ":"), sort_keys=True
    )
    return b64url_encode(hashlib.sha256(canonical.encode()).digest())


class Refusal(Exception):
    def __init__(self, reason, error="invalid_dpop_proof"):
        super().__init__(reason)
        self.reason = reason
        self.error = error


def check_proof(proof, method, url, token, jkt, nonce, seen):
    """Raises Refusal unless `proof` proves possession of the key `jkt` names for this request (RFC 9449 4.3)."""
    try:
        header_part, payload_part, signature_part = proof.split(".")
        header = json.loads(b64url(header_part))
        claims = json.loads(b64url(payload_part))
        raw = b64url(signature_part)
    except ValueError:
        raise Refusal("the proof is not a JWT")
    if header.get("typ") != "dpop+jwt":
        raise Refusal("typ is not dpop+jwt")
    if header.get("alg") != "ES256":
        raise Refusal("alg is not ES256")
    jwk = header.get("jwk")
    if not isinstance(jwk, dict) or jwk.get("kty") != "EC" or jwk.get("crv") != "P-256" or "d" in jwk:
        raise Refusal("jwk is not a public P-256 key")
    try:
        public = ec.EllipticCurvePublicNumbers(
            int.from_bytes(b64url(jwk["x"]), "big"), int.from_bytes(b64url(jwk["y"]), "big"), ec.SECP256R1()
        ).public_key()
        signature = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
        public.verify(signature, f"{header_part}.{payload_part}".encode(), ec.ECDSA(hashes.SHA256()))
    except (ValueError, KeyError, InvalidSignature):
        raise Refusal("the proof's signature does not verify")
    if claims.get("htm") != method:
        raise Refusal("htm is not the request's method")
    if claims.get("htu") != url:
        raise Refusal("htu is not the request's URL")
    if not isinstance(claims.get("iat"), int) or abs(claims["iat"] - time.time()) > 60:
        raise Refusal("iat is not within 60 seconds of now")
    if claims.get("ath") != b64url_encode(hashlib.sha256(token.encode()).digest()):
        raise Refusal("ath does not match the access token")
    if thumbprint(jwk) != jkt:
        raise Refusal("the proof's key is not the one the token is bound to", "invalid_token")
    if nonce is not None and claims.get("nonce") != nonce:
        raise Refusal("the nonce is missing or stale", "use_dpop_nonce")
    jti = claims.get("jti")
    if not isinstance(jti, str) or not jti:
        raise Refusal("the proof has no jti")
    if jti in seen:
        raise Refusal("jti replayed")
    seen.add(jti)


def main():
    public_keys = keys(sys.argv[1])
    nonce = "n-" + secrets.token_urlsafe(12) if "--nonce" in sys.argv[2:] else None
    seen = set()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format, *args):
            pass

        def answer(self, status, body, headers=()):
            data = (body + "\n").encode()
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def handle_request(self):
            try:
                authorization = self.headers.get("Authorization", "")
                if not authorization.startswith("DPoP "):
                    raise Refusal("no DPoP access token", "invalid_token")
                token = authorization[len("DPoP ") :]
                claims = verified_claims(token, public_keys, Path("/nonexistent/revoked"))
                if claims is None:
                    raise Refusal("the access token does not verify", "invalid_token")
                jkt = (claims.get("cnf") or {}).get("jkt")
                if not jkt:
                    raise Refusal("the access token is not DPoP-bound", "invalid_token")
                proofs = self.headers.get_all("DPoP") or []
                if len(proofs) != 1:
                    raise Refusal("not exactly one DPoP proof")
                url = "http://%s:%d%s" % (*self.server.server_address[:2], self.path.split("?")[0])
                with lock:
                    check_proof(proofs[0], self.command, url, token, jkt, nonce, seen)
            except Refusal as refusal:
                sys.stderr.write("refused: %s\n" % refusal.reason)
                sys.stderr.flush()
                headers = [("WWW-Authenticate", 'DPoP algs="ES256", error="%s"' % refusal.error)]
                if refusal.error == "use_dpop_nonce":
                    headers.append(("DPoP-Nonce", nonce))
                self.answer(401, refusal.reason, headers)
                return
            sys.stderr.write("accepted %s\n" % claims.get("sub"))
            sys.stderr.flush()
            self.answer(200, "hello %s" % claims.get("sub"))

        def do_GET(self):
            self.handle_request()

        def do_POST(self):
            self.handle_request()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    sys.stderr.write("listening on http://127.0.0.1:%d\n" % server.server_address[1])
    sys.stderr.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()
