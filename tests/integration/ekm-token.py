#!/usr/bin/env python3
"""Test fixtures for tests/integration/ekm.sh: RSA signing keys, the JWKS that publishes them,
an HTTPS server for that JWKS, ID tokens as Google would sign them (and as an attacker would).

  ekm-token.py keys DIR               rsa keys k1, k2, other (DIR/<kid>.pem); DIR/jwks.json with k1
  ekm-token.py publish DIR KID...     DIR/jwks.json with those keys
  ekm-token.py serve DIR PORT CERT KEY   serve DIR/jwks.json at /certs over HTTPS (Cache-Control
                                      max-age=3600, so only an unknown kid makes holdfastd refetch);
                                      each GET appends a line to DIR/fetches
  ekm-token.py mint DIR [claim=value ...] [--kid K] [--key K] [--alg A]
                                      a compact JWS: RS256 by key K (default: the kid), or alg
                                      none, or HS256 keyed with the kid's public key PEM.
                                      Claims default to a valid token; claim= removes one, and
                                      exp/nbf/iat take offsets from now ("+300", "-120").
"""
import base64
import http.server
import json
import os
import ssl
import sys
import time

from cryptography.hazmat.primitives import hashes, hmac, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

DEFAULTS = {
    "iss": "https://accounts.google.com",
    "aud": "https://ekm.test",
    "email": "service-42@gcp-sa-ekms.iam.gserviceaccount.com",
    "email_verified": True,
    "sub": "1234567890",
    "iat": "+0",
    "exp": "+600",
}


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def load_key(d, kid):
    with open(os.path.join(d, kid + ".pem"), "rb") as f:
        return serialization.load_pem_private_key(f.read(), None)


def jwk(d, kid):
    n = load_key(d, kid).public_key().public_numbers()
    size = (n.n.bit_length() + 7) // 8
    return {"kty": "RSA", "alg": "RS256", "use": "sig", "kid": kid,
            "n": b64url(n.n.to_bytes(size, "big")), "e": b64url(n.e.to_bytes(3, "big").lstrip(b"\0"))}


def publish(d, kids):
    tmp = os.path.join(d, "jwks.json.tmp")
    with open(tmp, "w") as f:
        json.dump({"keys": [jwk(d, k) for k in kids]}, f)
    os.replace(tmp, os.path.join(d, "jwks.json"))


def keys(d):
    for kid in ("k1", "k2", "other"):
        k = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        with open(os.path.join(d, kid + ".pem"), "wb") as f:
            f.write(k.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption()))
    publish(d, ["k1"])


def serve(d, port, cert, key):
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            with open(os.path.join(d, "fetches"), "a") as f:
                f.write(self.path + "\n")
            if self.path != "/certs":
                self.send_error(404)
                return
            with open(os.path.join(d, "jwks.json"), "rb") as f:
                body = f.read()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Cache-Control", "public, max-age=3600")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", int(port)), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    srv.serve_forever()


def mint(d, args):
    claims = dict(DEFAULTS)
    kid = "k1"
    signer = None
    alg = "RS256"
    it = iter(args)
    for a in it:
        if a == "--kid":
            kid = next(it)
        elif a == "--key":
            signer = next(it)
        elif a == "--alg":
            alg = next(it)
        else:
            name, _, value = a.partition("=")
            if value == "":
                claims.pop(name, None)
            elif value in ("true", "false"):
                claims[name] = value == "true"
            else:
                claims[name] = value
    now = int(time.time())
    for t in ("exp", "nbf", "iat"):
        if isinstance(claims.get(t), str) and claims[t][:1] in "+-":
            claims[t] = now + int(claims[t])
    header = {"alg": alg, "typ": "JWT", "kid": kid}
    signing_input = (b64url(json.dumps(header).encode()) + "." +
                     b64url(json.dumps(claims).encode())).encode()
    if alg == "none":
        sig = b""
    elif alg == "HS256":
        pub = load_key(d, kid).public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        h = hmac.HMAC(pub, hashes.SHA256())
        h.update(signing_input)
        sig = h.finalize()
    else:
        sig = load_key(d, signer or kid).sign(signing_input, padding.PKCS1v15(), hashes.SHA256())
    print(signing_input.decode() + "." + b64url(sig))


def main():
    cmd, d = sys.argv[1], sys.argv[2]
    if cmd == "keys":
        keys(d)
    elif cmd == "publish":
        publish(d, sys.argv[3:])
    elif cmd == "serve":
        serve(d, *sys.argv[3:6])
    elif cmd == "mint":
        mint(d, sys.argv[3:])
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()
