#!/usr/bin/env python3
"""JWT fixtures for the integration tests (ekm.sh, cse.sh, ...): signing keys, the JWKS that
publish them, an HTTPS server for those key sets with a log of its fetches, and compact JWS
tokens as an issuer would sign them, or as an attacker would. Needs python3-cryptography.

  jwt-token.py keys DIR KID[:rsa|:rsa3072|:ec] ...
        private keys DIR/<KID>.pem (rsa: RSA-2048, the default; ec: P-256)
  jwt-token.py publish DIR SET KID...
        the key set DIR/<SET>.jwks (JWKS JSON) with those keys' public halves, replaced
        atomically so a server reading it never sees half a file
  jwt-token.py serve DIR PORT CERT KEY PATH=SET...
        serve the sets over HTTPS on 127.0.0.1:PORT: a GET of PATH answers DIR/<SET>.jwks (a
        PATH ending in '*' matches every path it starts), with Cache-Control max-age=3600 so
        only an unknown kid makes a client refetch; anything else is 404. Every GET appends its
        path to DIR/fetches. Prints nothing; stop it with a signal.
  jwt-token.py mint DIR [--base JSON|@FILE] [--kid K] [--key K] [--alg A] [--header N=V]
                        [CLAIM=VALUE | CLAIM:=JSON] ...
        a compact JWS on stdout. Claims start from --base (default {}); CLAIM=VALUE sets a
        string ("true"/"false" a boolean; an empty VALUE removes the claim; exp, nbf and iat
        take offsets from now, "+300", "-120"), CLAIM:=JSON any JSON value (an array aud, a
        number). Header {"alg","typ":"JWT","kid"}; --header N=V sets a member (N= removes it,
        N:=JSON for other types). --kid names the header kid (default: --key, else "k1"; ""
        leaves it out); --key the private key that signs (default: the kid). --alg (default
        RS256 for an RSA key, ES256 for an EC one): RS256, RS384,
        PS256, ES256 (raw r||s as JWS wants), ES256-DER (the DER signature a careless signer
        sends), none (no signature), HS256 (HMAC keyed with the signing key's public PEM: the
        classic confusion attack).
  jwt-token.py decode TOKEN
        the header and the claims of a token as one JSON object {"header":..,"claims":..},
        nothing verified
  jwt-token.py verify JWKS_FILE TOKEN
        verifies an RS256 or ES256 token against a key set (by kid) and prints its claims;
        exit 1 with the reason when it fails
"""
import base64
import http.server
import json
import os
import ssl
import sys
import time

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, hmac, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import (decode_dss_signature,
                                                             encode_dss_signature)


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def load_key(d, kid):
    with open(os.path.join(d, kid + ".pem"), "rb") as f:
        return serialization.load_pem_private_key(f.read(), None)


def uint(n, size=None):
    size = size or max(1, (n.bit_length() + 7) // 8)
    return b64url(n.to_bytes(size, "big"))


def jwk(d, kid):
    pub = load_key(d, kid).public_key()
    if isinstance(pub, rsa.RSAPublicKey):
        n = pub.public_numbers()
        return {"kty": "RSA", "alg": "RS256", "use": "sig", "kid": kid, "n": uint(n.n),
                "e": uint(n.e)}
    n = pub.public_numbers()
    return {"kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": kid,
            "x": uint(n.x, 32), "y": uint(n.y, 32)}


def keys(d, specs):
    for spec in specs:
        kid, _, kind = spec.partition(":")
        if kind in ("", "rsa"):
            k = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        elif kind == "rsa3072":
            k = rsa.generate_private_key(public_exponent=65537, key_size=3072)
        elif kind == "ec":
            k = ec.generate_private_key(ec.SECP256R1())
        else:
            sys.exit("unknown key kind " + kind)
        with open(os.path.join(d, kid + ".pem"), "wb") as f:
            f.write(k.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption()))


def publish(d, name, kids):
    tmp = os.path.join(d, name + ".jwks.tmp")
    with open(tmp, "w") as f:
        json.dump({"keys": [jwk(d, k) for k in kids]}, f)
    os.replace(tmp, os.path.join(d, name + ".jwks"))


def serve(d, port, cert, key, routes):
    table = []
    for r in routes:
        path, _, name = r.partition("=")
        if not path.startswith("/") or not name:
            sys.exit("serve: PATH=SET, got " + r)
        table.append((path, name))

    def lookup(path):
        for p, name in table:
            if p == path or (p.endswith("*") and path.startswith(p[:-1])):
                return name
        return None

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            with open(os.path.join(d, "fetches"), "a") as f:
                f.write(self.path + "\n")
            name = lookup(self.path)
            try:
                with open(os.path.join(d, (name or "") + ".jwks"), "rb") as f:
                    body = f.read()
            except OSError:
                name = None
            if name is None:
                self.send_error(404)
                return
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


def assign(obj, arg, times=False):
    """NAME=VALUE, NAME= (remove) or NAME:=JSON into obj."""
    name, _, value = arg.partition("=")
    if name.endswith(":"):
        obj[name[:-1]] = json.loads(value)
        return
    if value == "":
        obj.pop(name, None)
    elif value in ("true", "false"):
        obj[name] = value == "true"
    elif times and name in ("exp", "nbf", "iat") and value[:1] in "+-":
        obj[name] = int(time.time()) + int(value)
    else:
        obj[name] = value


def sign(d, alg, signer, data):
    if alg == "none":
        return b""
    key = load_key(d, signer)
    if alg == "HS256":
        pub = key.public_key().public_bytes(serialization.Encoding.PEM,
                                            serialization.PublicFormat.SubjectPublicKeyInfo)
        h = hmac.HMAC(pub, hashes.SHA256())
        h.update(data)
        return h.finalize()
    if alg in ("RS256", "RS384"):
        return key.sign(data, padding.PKCS1v15(),
                        hashes.SHA256() if alg == "RS256" else hashes.SHA384())
    if alg == "PS256":
        return key.sign(data, padding.PSS(mgf=padding.MGF1(hashes.SHA256()),
                                          salt_length=32), hashes.SHA256())
    if alg in ("ES256", "ES256-DER"):
        der = key.sign(data, ec.ECDSA(hashes.SHA256()))
        if alg == "ES256-DER":
            return der
        r, s = decode_dss_signature(der)
        return r.to_bytes(32, "big") + s.to_bytes(32, "big")
    sys.exit("unknown alg " + alg)


def mint(d, args):
    claims = {}
    header_args = []
    kid = signer = None
    alg = None
    it = iter(args)
    for a in it:
        if a == "--base":
            base = next(it)
            if base.startswith("@"):
                with open(base[1:]) as f:
                    base = f.read()
            claims.update(json.loads(base))
        elif a == "--kid":
            kid = next(it)
        elif a == "--key":
            signer = next(it)
        elif a == "--alg":
            alg = next(it)
        elif a == "--header":
            header_args.append(next(it))
        else:
            assign(claims, a, times=True)
    for t in ("exp", "nbf", "iat"):
        if isinstance(claims.get(t), str) and claims[t][:1] in "+-":
            claims[t] = int(time.time()) + int(claims[t])
    kid = kid if kid is not None else (signer or "k1")
    signer = signer or kid
    if alg is None:
        alg = "ES256" if isinstance(load_key(d, signer), ec.EllipticCurvePrivateKey) else "RS256"
    header = {"alg": alg.replace("-DER", ""), "typ": "JWT"}
    if kid:
        header["kid"] = kid
    for h in header_args:
        assign(header, h)
    signing_input = (b64url(json.dumps(header).encode()) + "." +
                     b64url(json.dumps(claims).encode())).encode()
    print(signing_input.decode() + "." + b64url(sign(d, alg, signer, signing_input)))


def decode(token):
    parts = token.strip().split(".")
    if len(parts) != 3:
        sys.exit("not a compact JWS")
    return json.loads(unb64url(parts[0])), json.loads(unb64url(parts[1])), parts


def verify(jwks_file, token):
    header, claims, parts = decode(token)
    with open(jwks_file) as f:
        keyset = json.load(f)
    found = [k for k in keyset.get("keys", []) if k.get("kid") == header.get("kid")]
    if not found:
        sys.exit("kid %r not in the key set" % header.get("kid"))
    k = found[0]
    data = (parts[0] + "." + parts[1]).encode()
    sig = unb64url(parts[2])
    num = lambda v: int.from_bytes(unb64url(v), "big")
    try:
        if header.get("alg") == "RS256" and k["kty"] == "RSA":
            pub = rsa.RSAPublicNumbers(num(k["e"]), num(k["n"])).public_key()
            pub.verify(sig, data, padding.PKCS1v15(), hashes.SHA256())
        elif header.get("alg") == "ES256" and k["kty"] == "EC" and len(sig) == 64:
            pub = ec.EllipticCurvePublicNumbers(num(k["x"]), num(k["y"]),
                                                ec.SECP256R1()).public_key()
            der = encode_dss_signature(int.from_bytes(sig[:32], "big"),
                                       int.from_bytes(sig[32:], "big"))
            pub.verify(der, data, ec.ECDSA(hashes.SHA256()))
        else:
            sys.exit("alg %r does not fit the key %s" % (header.get("alg"), k.get("kty")))
    except InvalidSignature:
        sys.exit("bad signature")
    print(json.dumps(claims))


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    cmd, d = sys.argv[1], sys.argv[2]
    if cmd == "keys":
        keys(d, sys.argv[3:])
    elif cmd == "publish":
        publish(d, sys.argv[3], sys.argv[4:])
    elif cmd == "serve":
        serve(d, *sys.argv[3:6], sys.argv[6:])
    elif cmd == "mint":
        mint(d, sys.argv[3:])
    elif cmd == "decode":
        header, claims, _ = decode(d)
        print(json.dumps({"header": header, "claims": claims}))
    elif cmd == "verify":
        verify(d, sys.argv[3])
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()
