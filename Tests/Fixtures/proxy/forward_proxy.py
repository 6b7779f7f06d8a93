#!/usr/bin/env python3
"""A forward HTTP proxy for usher's tests: where usherd's requests go when its environment names a proxy.

    forward_proxy.py

Serves on 127.0.0.1, on a free port, and writes "listening on 127.0.0.1:PORT" on stderr once it accepts connections.
It forwards requests whose target is an absolute http:// URL (the form a client sends to a proxy) to that URL and
answers with the server's response, writing "proxied METHOD URL" on stderr for each before it forwards it; anything
else gets 400. No CONNECT: the tests' providers speak plain HTTP on 127.0.0.1.
"""

import http.client
import sys
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# Headers for one hop only (RFC 9110, section 7.6.1): not forwarded either way.
HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
}


class Proxy(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):
        pass

    def forward(self):
        url = urllib.parse.urlsplit(self.path)
        if url.scheme != "http" or not url.hostname:
            self.send_error(400, "a proxy request names an absolute http:// URL")
            return
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        headers = {name: value for name, value in self.headers.items() if name.lower() not in HOP_BY_HOP}
        sys.stderr.write(f"proxied {self.command} {self.path}\n")
        sys.stderr.flush()
        target = (url.path or "/") + (f"?{url.query}" if url.query else "")
        connection = http.client.HTTPConnection(url.hostname, url.port or 80, timeout=60)
        try:
            connection.request(self.command, target, body=body, headers=headers)
            response = connection.getresponse()
            data = response.read()
        finally:
            connection.close()
        self.send_response(response.status, response.reason)
        for name, value in response.getheaders():
            if name.lower() not in HOP_BY_HOP and name.lower() != "content-length":
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = forward
    do_POST = forward
    do_PUT = forward
    do_DELETE = forward


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    sys.stderr.write(f"listening on 127.0.0.1:{server.server_address[1]}\n")
    sys.stderr.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()
