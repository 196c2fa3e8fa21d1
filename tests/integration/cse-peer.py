#!/usr/bin/env python3
"""A misbehaving original KACLS for tests/integration/cse-rewrap.sh, over HTTPS on loopback.

  cse-peer.py PORT CERT KEY LOG status CODE    every POST answers CODE with a JSON error body
  cse-peer.py PORT CERT KEY LOG hang SECONDS   every POST is read, then answered after SECONDS

Every request appends "METHOD PATH" to LOG before it is answered. GET answers 404.
"""
import http.server
import json
import ssl
import sys
import time


def main():
    port, cert, key, log, mode, arg = sys.argv[1:7]

    class Handler(http.server.BaseHTTPRequestHandler):
        def note(self):
            with open(log, "a") as f:
                f.write("%s %s\n" % (self.command, self.path))

        def do_GET(self):
            self.note()
            self.send_error(404)

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            self.note()
            if mode == "hang":
                time.sleep(float(arg))
                code = 200
            else:
                code = int(arg)
            body = json.dumps({"code": code, "message": "test peer", "details": ""}).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", int(port)), Handler)
    server.daemon_threads = True
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
