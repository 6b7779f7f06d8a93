"""Checking usherd's access tokens as a resource server does: an ES256 signature by a key of usherd's JWK set (its
`jwks` answer), an unexpired `exp`, and a `jti` that the test has not revoked. Shared by the test servers here."""

import base64
import json
import time
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature


def b64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def keys(jwks_file):
    found = {}
    for key in json.loads(Path(jwks_file).read_text())["keys"]:
        if key.get("kty") != "EC" or key.get("crv") != "P-256":
            continue  # only ES256 keys sign the tokens checked here (an OpenID provider's set may hold RSA keys too)
        x = int.from_bytes(b64url(key["x"]), "big")
        y = int.from_bytes(b64url(key["y"]), "big")
        found[key["kid"]] = ec.EllipticCurvePublicNumbers(x, y, ec.SECP256R1()).public_key()
    return found


def verified_claims(token, public_keys, revoked_file):
    """The token's claims if usherd issued it and it still holds, else None."""
    try:
        header_part, payload_part, signature_part = token.split(".")
        header = json.loads(b64url(header_part))
        key = public_keys.get(header.get("kid"))
        if header.get("alg") != "ES256" or key is None:
            return None
        raw = b64url(signature_part)
        signature = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
        key.verify(signature, f"{header_part}.{payload_part}".encode(), ec.ECDSA(hashes.SHA256()))
        claims = json.loads(b64url(payload_part))
    except (ValueError, KeyError, InvalidSignature):
        return None
    if claims.get("exp", 0) <= time.time():
        return None
    revoked = revoked_file.read_text().split() if revoked_file.exists() else []
    return None if claims.get("jti") in revoked else claims
