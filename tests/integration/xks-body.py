#!/usr/bin/env python3
"""Request bodies and response checks for tests/integration/xks.sh (the aws-xks plugin).

  xks-body.py compact FILE             FILE is one line of compact JSON (an object); an error
                                       body has exactly errorName and a printable errorMessage
                                       under 512 characters
  xks-body.py get FILE FIELD           print FIELD of the JSON object in FILE (a list: comma-joined)
  xks-body.py metadata [OPTS]          a GetKeyMetadata body
  xks-body.py health                   a GetHealthStatus body
  xks-body.py encrypt [OPTS]           an Encrypt body: --pt-size N (bytes, deterministic) or
                                       --pt B64, --aad-size N or --aad B64, --cdiv, --pad N
                                       (an unknown field of N bytes: a larger body)
  xks-body.py decrypt ENC [OPTS]       a Decrypt body for the Encrypt response in file ENC, with
                                       --aad-size N / --aad B64 as encrypted, --flip FIELD (one bit
                                       of that decoded field changed), --cm B64 (another metadata)
  xks-body.py check-encrypt ENC BODY   the Encrypt response ENC fits request BODY: ciphertext as
                                       long as the plaintext, 12-byte IV, 16-byte tag, 5-byte
                                       metadata, and the CDIV (when asked for) is SHA-256 of
                                       aad || cm || iv || ciphertext || tag
  xks-body.py same-plaintext DEC BODY  the Decrypt response DEC holds the plaintext of Encrypt
                                       request BODY
Common OPTS: --principal ARN, --op NAME, --no-key-arn.
"""
import base64
import hashlib
import json
import sys


def fail(msg):
    print("xks-body: " + msg, file=sys.stderr)
    sys.exit(1)


def load(path):
    with open(path, "rb") as f:
        raw = f.read()
    try:
        return json.loads(raw)
    except ValueError:
        fail("%s is not JSON: %r" % (path, raw[:200]))


def compact(path):
    with open(path, "rb") as f:
        raw = f.read()
    text = raw.decode("utf-8", "strict")
    if text.endswith("\n"):
        text = text[:-1]
    if "\n" in text or "\r" in text:
        fail("%s: more than one line: %r" % (path, text[:200]))
    # Whitespace outside string literals means it is not compact.
    in_str = esc = False
    for ch in text:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in " \t":
            fail("%s: whitespace outside strings: %r" % (path, text[:200]))
    doc = json.loads(text)
    if not isinstance(doc, dict):
        fail("%s: not a JSON object" % path)
    if "errorName" in doc:
        if set(doc) != {"errorName", "errorMessage"}:
            fail("%s: an error body has errorName and errorMessage only: %s" % (path, text))
        msg = doc["errorMessage"]
        if not isinstance(msg, str) or len(msg) >= 512 or any(
            ord(c) < 0x20 or ord(c) > 0x7E for c in msg
        ):
            fail("%s: errorMessage is not printable ASCII under 512: %r" % (path, msg))


def get(path, field):
    v = load(path).get(field)
    if isinstance(v, list):
        v = ",".join(str(x) for x in v)
    print("" if v is None else v)


def opts(args):
    o = {"principal": "arn:aws:iam::111122223333:user/Alice", "op": None, "key_arn": True,
         "pt": None, "pt_size": None, "aad": None, "aad_size": None, "cdiv": False,
         "pad": 0, "flip": None, "cm": None}
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--cdiv":
            o["cdiv"] = True
        elif a == "--no-key-arn":
            o["key_arn"] = False
        elif a in ("--principal", "--op", "--pt", "--aad", "--flip", "--cm"):
            o[a[2:]] = args[i + 1]
            i += 1
        elif a in ("--pt-size", "--aad-size", "--pad"):
            o[a[2:].replace("-", "_")] = int(args[i + 1])
            i += 1
        else:
            fail("unknown option " + a)
        i += 1
    return o


def metadata(o, default_op):
    md = {"awsPrincipalArn": o["principal"], "kmsOperation": o["op"] or default_op,
          "kmsRequestId": "it-%s-0001" % default_op.lower()}
    if o["key_arn"]:
        md["kmsKeyArn"] = "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef"
    return md


def pattern(n, seed):
    return bytes((i * 31 + seed) & 0xFF for i in range(n))


def aad_of(o):
    if o["aad"] is not None:
        return o["aad"]
    if o["aad_size"] is not None:
        return base64.b64encode(pattern(o["aad_size"], 7)).decode()
    return None


def encrypt(o):
    pt = o["pt"]
    if pt is None:
        pt = base64.b64encode(pattern(o["pt_size"] or 32, 1)).decode()
    body = {"requestMetadata": metadata(o, "Encrypt"), "plaintext": pt,
            "encryptionAlgorithm": "AES_GCM"}
    aad = aad_of(o)
    if aad is not None:
        body["additionalAuthenticatedData"] = aad
    if o["cdiv"]:
        body["ciphertextDataIntegrityValueAlgorithm"] = "SHA_256"
    if o["pad"]:
        body["padding"] = "x" * o["pad"]
    return body


def decrypt(enc_path, o):
    enc = load(enc_path)
    body = {"requestMetadata": metadata(o, "Decrypt"), "encryptionAlgorithm": "AES_GCM"}
    for f in ("ciphertext", "ciphertextMetadata", "initializationVector", "authenticationTag"):
        if f in enc:
            body[f] = enc[f]
    aad = aad_of(o)
    if aad is not None:
        body["additionalAuthenticatedData"] = aad
    if o["cm"] is not None:
        body["ciphertextMetadata"] = o["cm"]
    if o["flip"]:
        f = o["flip"]
        raw = bytearray(base64.b64decode(body[f], validate=True))
        raw[len(raw) // 2] ^= 0x01
        body[f] = base64.b64encode(bytes(raw)).decode()
    return body


def b64d(s):
    return base64.b64decode(s, validate=True)


def check_encrypt(enc_path, body_path):
    enc, req = load(enc_path), load(body_path)
    pt = b64d(req["plaintext"])
    ct, iv, tag = b64d(enc["ciphertext"]), b64d(enc["initializationVector"]), b64d(
        enc["authenticationTag"])
    cm = b64d(enc.get("ciphertextMetadata", ""))
    if len(ct) != len(pt):
        fail("ciphertext is %d bytes for %d of plaintext" % (len(ct), len(pt)))
    if len(iv) != 12 or len(tag) != 16 or len(cm) != 5 or cm[0] != 1:
        fail("iv %d, tag %d, cm %r" % (len(iv), len(tag), cm))
    if ct == pt and len(pt) > 0:
        fail("the ciphertext is the plaintext")
    want_cdiv = "ciphertextDataIntegrityValueAlgorithm" in req
    if want_cdiv != ("ciphertextDataIntegrityValue" in enc):
        fail("ciphertextDataIntegrityValue present iff asked for")
    if want_cdiv:
        aad = b64d(req.get("additionalAuthenticatedData", ""))
        digest = hashlib.sha256(aad + cm + iv + ct + tag).digest()
        if b64d(enc["ciphertextDataIntegrityValue"]) != digest:
            fail("the CDIV is not SHA-256(aad || cm || iv || ciphertext || tag)")


def main(argv):
    if len(argv) < 2:
        fail(__doc__)
    cmd, args = argv[1], argv[2:]
    if cmd == "compact":
        compact(args[0])
    elif cmd == "get":
        get(args[0], args[1])
    elif cmd == "metadata":
        print(json.dumps({"requestMetadata": metadata(opts(args), "DescribeKey")}))
    elif cmd == "health":
        print(json.dumps({"requestMetadata": {"kmsRequestId": "it-health-0001",
                                              "kmsOperation": "KmsHealthCheck"}}))
    elif cmd == "encrypt":
        print(json.dumps(encrypt(opts(args))))
    elif cmd == "decrypt":
        print(json.dumps(decrypt(args[0], opts(args[1:]))))
    elif cmd == "check-encrypt":
        check_encrypt(args[0], args[1])
    elif cmd == "same-plaintext":
        if load(args[0]).get("plaintext") != load(args[1])["plaintext"]:
            fail("the decrypted plaintext is not the one encrypted")
    else:
        fail("unknown command " + cmd)


if __name__ == "__main__":
    main(sys.argv)
