#!/usr/bin/env python3
"""A stand-in Kubernetes API server for usher's tests: HTTPS on 127.0.0.1 that answers `/version` and `/api` (what
`kubectl version` and `kubectl get --raw /api` ask) only to a bearer token usherd issued.

    kube_server.py DIRECTORY JWKS_FILE

Makes a self-signed certificate for 127.0.0.1 (DIRECTORY/ca.pem, which the kubeconfig trusts), serves on a free
port, and writes "listening on https://127.0.0.1:PORT" on stderr once it accepts connections. A request without a
token usherd issued (see tokens.py; DIRECTORY/revoked lists revoked jtis) gets 401 with a Kubernetes Status, as an
API server answers. Each accepted request is logged on stderr as "request by EMAIL PATH".
"""

import datetime
import ipaddress
import json
import ssl
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.dont_write_bytecode = True

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tokens import keys, verified_claims

VERSION = {"major": "1", "minor": "30", "gitVersion": "v1.30.0-usher-test", "platform": "linux/amd64"}
API = {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}


def certificate(directory):
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "usher test API server")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    (directory / "ca.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (directory / "key.pem").write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )


def main():
    directory = Path(sys.argv[1]).resolve()
    public_keys = keys(sys.argv[2])
    certificate(directory)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format, *args):
            sys.stderr.write("%s\n" % (format % args))

        def answer(self, status, body):
            content = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            self.wfile.write(content)

        def do_GET(self):
            header = self.headers.get("Authorization", "")
            bearer = header[7:] if header.startswith("Bearer ") else ""
            claims = verified_claims(bearer, public_keys, directory / "revoked") if bearer else None
            if claims is None:
                return self.answer(
                    401,
                    {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": "Unauthorized",
                     "reason": "Unauthorized", "code": 401},
                )
            path = self.path.partition("?")[0]
            sys.stderr.write(f"request by {claims.get('email') or claims.get('sub')} {path}\n")
            if path == "/version":
                return self.answer(200, VERSION)
            if path == "/api":
                return self.answer(200, API)
            return self.answer(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(directory / "ca.pem", directory / "key.pem")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    sys.stderr.write(f"listening on https://127.0.0.1:{server.server_address[1]}\n")
    sys.stderr.flush()
    server.serve_forever(poll_interval=0.1)


if __name__ == "__main__":
    main()
