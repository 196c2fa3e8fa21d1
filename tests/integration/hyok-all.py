#!/usr/bin/env python3
"""Bodies and checks for tests/integration/hyok-all.sh (six cloud APIs on one holdfastd).

  hyok-all.py get FILE PATH            print PATH (dotted; list items by index) of the JSON in FILE
  hyok-all.py xks-plaintext           the base64 plaintext of every xks-encrypt body
  hyok-all.py xks-encrypt ID AAD       an XKS Encrypt body (32-byte plaintext, aad base64 AAD),
                                       kmsRequestId ID
  hyok-all.py xks-decrypt ID ENC AAD   the XKS Decrypt body for the Encrypt answer in file ENC
  hyok-all.py xks-gcm-aad ENC AAD      base64 of the GCM AAD XKS sealed ENC under:
                                       BE16(len aad) || aad || U8(len cm) || cm (specs/aws-xks.md)
  hyok-all.py oaep PUB HASH PT         base64 RSA-OAEP (MGF1 on HASH, empty label) of base64 PT
                                       under PUB: a PEM SubjectPublicKeyInfo file, or a file
                                       holding a DKE key answer ({"key":{"n","e"}})
  hyok-all.py same-rsa PEM DKE         PEM's public key and the DKE answer's key are one key
  hyok-all.py audit LOG GWLOG REQS     each request of REQS (lines "API GATEWAY-ID one|none KEY")
                                       has exactly one audit record in LOG (none: it has none),
                                       in that API's name; a successful one naming a key names
                                       KEY, and each API has one; found by the audit request_id
                                       the gateway log GWLOG gives it (the cloud's id, else the
                                       gateway's)
  hyok-all.py sample IN OUT EDIT...    IN rewritten into OUT: each EDIT is OLD=>NEW (every
                                       occurrence of the text OLD replaced), or [SECTION]+LINE
                                       (LINE added after that section's header)
"""
import base64
import json
import struct
import sys

import auditlog

PLAINTEXT = base64.b64encode(bytes(range(32))).decode()


def fail(msg):
    print("hyok-all.py: " + msg, file=sys.stderr)
    sys.exit(1)


def load(path):
    with open(path, "rb") as f:
        raw = f.read()
    try:
        return json.loads(raw)
    except ValueError:
        fail("%s is not JSON: %r" % (path, raw[:200]))


def get(path, dotted):
    v = load(path)
    for k in dotted.split("."):
        if isinstance(v, list):
            v = v[int(k)] if k.isdigit() and int(k) < len(v) else None
        elif isinstance(v, dict):
            v = v.get(k)
        else:
            v = None
    if isinstance(v, bool):
        v = str(v).lower()
    print("" if v is None else v if not isinstance(v, (dict, list)) else json.dumps(v))


def xks_meta(rid, op):
    return {"awsPrincipalArn": "arn:aws:iam::111122223333:user/Alice", "kmsOperation": op,
            "kmsRequestId": rid,
            "kmsKeyArn": "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef"}


def xks_encrypt(rid, aad):
    return {"requestMetadata": xks_meta(rid, "Encrypt"), "plaintext": PLAINTEXT,
            "encryptionAlgorithm": "AES_GCM", "additionalAuthenticatedData": aad}


def xks_decrypt(rid, enc_path, aad):
    enc = load(enc_path)
    body = {"requestMetadata": xks_meta(rid, "Decrypt"), "encryptionAlgorithm": "AES_GCM",
            "additionalAuthenticatedData": aad}
    for f in ("ciphertext", "ciphertextMetadata", "initializationVector", "authenticationTag"):
        if f in enc:
            body[f] = enc[f]
    return body


def xks_gcm_aad(enc_path, aad_b64):
    aad = base64.b64decode(aad_b64, validate=True)
    cm = base64.b64decode(load(enc_path).get("ciphertextMetadata", ""), validate=True)
    return base64.b64encode(struct.pack(">H", len(aad)) + aad + bytes([len(cm)]) + cm).decode()


def public_key(path):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    with open(path, "rb") as f:
        raw = f.read()
    if raw.lstrip().startswith(b"-----BEGIN"):
        return serialization.load_pem_public_key(raw)
    k = json.loads(raw)["key"]
    n = int.from_bytes(base64.b64decode(k["n"], validate=True), "big")
    return rsa.RSAPublicNumbers(int(k["e"]), n).public_key()


def oaep(pub_path, hash_name, pt_b64):
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding
    h = {"SHA1": hashes.SHA1, "SHA256": hashes.SHA256, "SHA384": hashes.SHA384,
         "SHA512": hashes.SHA512}[hash_name]()
    ct = public_key(pub_path).encrypt(base64.b64decode(pt_b64, validate=True),
                                      padding.OAEP(mgf=padding.MGF1(h), algorithm=h, label=None))
    return base64.b64encode(ct).decode()


def same_rsa(pem_path, dke_path):
    a, b = public_key(pem_path).public_numbers(), public_key(dke_path).public_numbers()
    if (a.n, a.e) != (b.n, b.e):
        fail("SAP's public key and DKE's are not one key")


def audit(log, gwlog, reqs):
    audit_id = {}
    for line in open(gwlog, "rb"):
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if isinstance(e, dict) and e.get("request_id"):
            audit_id[e["request_id"]] = e.get("cloud_request_id") or e["request_id"]
    by_id = {}
    for r in auditlog.records(log):
        if r.get("request_id"):
            by_id.setdefault(r["request_id"], []).append(r)
    per_api = {}
    keyed = set()
    for line in open(reqs):
        parts = line.split()
        if not parts:
            continue
        api, gid, mode, key = parts
        want = 0 if mode == "none" else 1
        if gid not in audit_id:
            fail("request %s (%s) has no line in the gateway log" % (gid, api))
        got = by_id.get(audit_id[gid], [])
        if len(got) != want:
            fail("request %s (%s, audit id %s) has %d audit records, want %d: %s" %
                 (gid, api, audit_id[gid], len(got), want, got))
        for r in got:
            if r.get("api") != api:
                fail("request %s's record is in %r's name, want %r: %s" % (gid, r.get("api"), api, r))
            # A record without a key operation (a public key read, a refusal) names no key.
            if r.get("ok") and "key" in r:
                if r["key"] != key:
                    fail("request %s (%s) answered with key %s, want %s: %s" % (gid, api, r["key"], key, r))
                keyed.add(api)
        per_api[api] = per_api.get(api, 0) + want
    for api in per_api:
        if api not in keyed:
            fail("no %s record names the key that answered it" % api)
    print("audit records per API: " + ", ".join("%s %d" % kv for kv in sorted(per_api.items())))


def sample(src, dst, edits):
    with open(src) as f:
        text = f.read()
    for e in edits:
        if "=>" in e:
            old, new = e.split("=>", 1)
            if old not in text:
                fail("the sample has no %r" % old)
            text = text.replace(old, new)
        else:
            head, line = e.split("]+", 1)
            head += "]\n"
            if head not in text:
                fail("the sample has no section %r" % head)
            text = text.replace(head, head + line + "\n")
    with open(dst, "w") as f:
        f.write(text)


def main(argv):
    if len(argv) < 2:
        fail(__doc__)
    cmd, a = argv[1], argv[2:]
    if cmd == "get":
        get(a[0], a[1])
    elif cmd == "xks-plaintext":
        print(PLAINTEXT)
    elif cmd == "xks-encrypt":
        print(json.dumps(xks_encrypt(a[0], a[1])))
    elif cmd == "xks-decrypt":
        print(json.dumps(xks_decrypt(a[0], a[1], a[2])))
    elif cmd == "xks-gcm-aad":
        print(xks_gcm_aad(a[0], a[1]))
    elif cmd == "oaep":
        print(oaep(a[0], a[1], a[2]))
    elif cmd == "same-rsa":
        same_rsa(a[0], a[1])
    elif cmd == "sample":
        sample(a[0], a[1], a[2:])
    elif cmd == "audit":
        audit(a[0], a[1], a[2])
    else:
        fail("unknown command " + cmd)


if __name__ == "__main__":
    main(sys.argv)
