#!/usr/bin/env python3
"""Reads an exportable RSA key's private half out of a PKCS#11 module, as PEM (PKCS#8), so
sap-asym.sh can check the gateway's work the other way round: OpenSSL on the host decrypts what
the gateway encrypted and signs what the gateway verifies.

    sap-asym-export.py MODULE PIN LABEL OUT.pem

Only the standard C_* entry points (ctypes; no PyKCS11 needed). The DER is built by
`openssl asn1parse -genconf` from the key's eight integers, so nothing here does RSA itself."""
import ctypes
import os
import subprocess
import sys
import tempfile

CKO_PRIVATE_KEY = 3
CKA_CLASS, CKA_LABEL = 0x0, 0x3
CKF_SERIAL_SESSION, CKU_USER = 0x4, 1
# RFC 8017 A.1.2's order.
PARTS = [("modulus", 0x120), ("publicExponent", 0x122), ("privateExponent", 0x123),
         ("prime1", 0x124), ("prime2", 0x125), ("exponent1", 0x126), ("exponent2", 0x127),
         ("coefficient", 0x128)]
ULONG = ctypes.c_ulong


class Attribute(ctypes.Structure):
    _fields_ = [("type", ULONG), ("value", ctypes.c_void_p), ("len", ULONG)]


def ok(rv, what):
    if rv != 0:
        sys.exit("%s: CKR 0x%x" % (what, rv))


def attribute(p11, session, obj, kind):
    a = Attribute(kind, None, 0)
    ok(p11.C_GetAttributeValue(session, obj, ctypes.byref(a), ULONG(1)), "size of 0x%x" % kind)
    buf = ctypes.create_string_buffer(a.len)
    a.value = ctypes.cast(buf, ctypes.c_void_p)
    ok(p11.C_GetAttributeValue(session, obj, ctypes.byref(a), ULONG(1)), "value of 0x%x" % kind)
    return buf.raw[:a.len]


def main():
    module, pin, label, out = sys.argv[1:5]
    p11 = ctypes.CDLL(module)
    ok(p11.C_Initialize(None), "C_Initialize")
    try:
        count = ULONG(0)
        ok(p11.C_GetSlotList(ctypes.c_ubyte(1), None, ctypes.byref(count)), "C_GetSlotList")
        slots = (ULONG * max(count.value, 1))()
        ok(p11.C_GetSlotList(ctypes.c_ubyte(1), slots, ctypes.byref(count)), "C_GetSlotList")
        session = ULONG(0)
        ok(p11.C_OpenSession(slots[0], ULONG(CKF_SERIAL_SESSION), None, None,
                             ctypes.byref(session)), "C_OpenSession")
        pin_b = pin.encode()
        ok(p11.C_Login(session, ULONG(CKU_USER), pin_b, ULONG(len(pin_b))), "C_Login")
        cls = ULONG(CKO_PRIVATE_KEY)
        lab = label.encode()
        tmpl = (Attribute * 2)(Attribute(CKA_CLASS, ctypes.cast(ctypes.byref(cls), ctypes.c_void_p),
                                         ctypes.sizeof(cls)),
                               Attribute(CKA_LABEL, ctypes.cast(ctypes.c_char_p(lab), ctypes.c_void_p),
                                         len(lab)))
        ok(p11.C_FindObjectsInit(session, tmpl, ULONG(2)), "C_FindObjectsInit")
        obj, found = ULONG(0), ULONG(0)
        ok(p11.C_FindObjects(session, ctypes.byref(obj), ULONG(1), ctypes.byref(found)),
           "C_FindObjects")
        p11.C_FindObjectsFinal(session)
        if found.value != 1:
            sys.exit("no private key labelled %s" % label)
        conf = "asn1=SEQUENCE:key\n[key]\nversion=INTEGER:0\n" + "".join(
            "%s=INTEGER:0x%s\n" % (name, attribute(p11, session, obj, kind).hex())
            for name, kind in PARTS)
        p11.C_Logout(session)
        p11.C_CloseSession(session)
    finally:
        p11.C_Finalize(None)
    with tempfile.TemporaryDirectory() as tmp:
        cnf, der = os.path.join(tmp, "key.cnf"), os.path.join(tmp, "key.der")
        with open(cnf, "w") as f:
            f.write(conf)
        subprocess.run(["openssl", "asn1parse", "-genconf", cnf, "-noout", "-out", der],
                       check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["openssl", "pkey", "-inform", "DER", "-in", der, "-out", out], check=True)


if __name__ == "__main__":
    main()
