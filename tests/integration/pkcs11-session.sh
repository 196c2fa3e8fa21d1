#!/bin/sh
# Session objects as general PKCS#11 software makes them, through PyKCS11 (python3-pykcs11) on
# holdfast-pkcs11.so: a public AES key in a R/O session without login (a private one refused),
# an RSA pair with CKA_TOKEN FALSE after login, whose PSS signature the cryptography package
# verifies, found by CKA_TOKEN FALSE and by label from another session, gone when its session
# closes, never in the store; token objects still need a R/W session.
. "${top_srcdir:-.}/tests/integration/lib.sh"
# Debian's python3 has the Debian packages; a python3 earlier on PATH (pyenv) may not.
PY=
for p in python3 /usr/bin/python3; do
    "$p" -c 'import PyKCS11, cryptography' 2>/dev/null && PY=$p && break
done
[ -n "$PY" ] || hf_skip "python3-pykcs11 or python3-cryptography not installed"

hf_store_setup
# PyKCS11 raises through C++ exceptions: the preloaded ASan runtime's __cxa_throw interceptor
# aborts at the first one (CheckFailed) unless libstdc++ is loaded with it.
if [ -n "$HF_SANITIZED" ] && asan=$(hf_asan_runtime) && [ -n "$asan" ]; then
    HF_ASAN_RUNTIME="$asan $(${CC:-cc} -print-file-name=libstdc++.so)"
fi
hf_ext "$PY" - "$HF_MODULE" "$HF_USER_PIN" <<'PY' || hf_fail "PyKCS11 session object checks failed"
import sys
import PyKCS11
from PyKCS11 import LowLevel as LL
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

module, pin = sys.argv[1:3]
lib = PyKCS11.PyKCS11Lib()
lib.load(module)
slot = lib.getSlotList(tokenPresent=True)[0]

def expect_error(code, f, *args):
    try:
        f(*args)
    except PyKCS11.PyKCS11Error as e:
        assert e.value == code, "0x%x instead of 0x%x" % (e.value, code)
        return
    raise AssertionError("no error 0x%x" % code)

aes = [(PyKCS11.CKA_CLASS, PyKCS11.CKO_SECRET_KEY), (PyKCS11.CKA_KEY_TYPE, PyKCS11.CKK_AES),
       (PyKCS11.CKA_VALUE_LEN, 32), (PyKCS11.CKA_ENCRYPT, True), (PyKCS11.CKA_DECRYPT, True)]
gen = PyKCS11.Mechanism(PyKCS11.CKM_AES_KEY_GEN)

ro = lib.openSession(slot)  # read-only, nobody logged in
expect_error(PyKCS11.CKR_USER_NOT_LOGGED_IN, ro.generateKey,
             aes + [(PyKCS11.CKA_TOKEN, False), (PyKCS11.CKA_LABEL, "private one")], gen)
public = ro.generateKey(aes + [(PyKCS11.CKA_TOKEN, False), (PyKCS11.CKA_PRIVATE, False),
                               (PyKCS11.CKA_LABEL, "a public session key")], gen)
iv = bytes(12)
gcm = PyKCS11.AES_GCM_Mechanism(iv, b"", 128)
ct = ro.encrypt(public, b"hello", gcm)
assert bytes(ro.decrypt(public, ct, gcm)) == b"hello"
assert ro.getAttributeValue(public, [PyKCS11.CKA_TOKEN])[0] is False

ro.login(pin)
expect_error(PyKCS11.CKR_SESSION_READ_ONLY, ro.generateKey, aes + [(PyKCS11.CKA_TOKEN, True)], gen)
pub, priv = ro.generateKeyPair(
    [(PyKCS11.CKA_TOKEN, False), (PyKCS11.CKA_MODULUS_BITS, 2048),
     (PyKCS11.CKA_PUBLIC_EXPONENT, (1, 0, 1)), (PyKCS11.CKA_VERIFY, True),
     (PyKCS11.CKA_LABEL, "session pair"), (PyKCS11.CKA_ID, (0x42,))],
    [(PyKCS11.CKA_TOKEN, False), (PyKCS11.CKA_SIGN, True), (PyKCS11.CKA_LABEL, "session pair"),
     (PyKCS11.CKA_ID, (0x42,))],
    PyKCS11.MechanismRSAGENERATEKEYPAIR)
pss = PyKCS11.RSA_PSS_Mechanism(PyKCS11.CKM_SHA256_RSA_PKCS_PSS, PyKCS11.CKM_SHA256,
                                PyKCS11.CKG_MGF1_SHA256, 32)
sig = bytes(ro.sign(priv, b"message", pss))
n, e = ro.getAttributeValue(pub, [PyKCS11.CKA_MODULUS, PyKCS11.CKA_PUBLIC_EXPONENT])
key = rsa.RSAPublicNumbers(int.from_bytes(bytes(e), "big"), int.from_bytes(bytes(n), "big")).public_key()
key.verify(sig, b"message", padding.PSS(padding.MGF1(hashes.SHA256()), 32), hashes.SHA256())

other = lib.openSession(slot, PyKCS11.CKF_SERIAL_SESSION | PyKCS11.CKF_RW_SESSION)
found = other.findObjects([(PyKCS11.CKA_TOKEN, False)])
assert sorted(h.value() for h in found) == sorted(h.value() for h in (public, pub, priv)), found
assert len(other.findObjects([(PyKCS11.CKA_LABEL, "session pair")])) == 2
assert len(other.findObjects([(PyKCS11.CKA_ID, (0x42,)), (PyKCS11.CKA_TOKEN, True)])) == 0
ro.closeSession()
assert other.findObjects([(PyKCS11.CKA_TOKEN, False)]) == []
expect_error(PyKCS11.CKR_OBJECT_HANDLE_INVALID, other.getAttributeValue, priv, [PyKCS11.CKA_CLASS])
other.closeSession()
print("PyKCS11 session objects: ok")
PY

# They never reached the store, and their records keep the log verifiable.
"$HF_CLI" key list 2>/dev/null | grep -q "session pair" && hf_fail "a session object is in the store"
grep -q '"op":"object.create".*"key":"session:0x' "$HOLDFAST_STATE_DIR/audit.log" ||
    hf_fail "no object.create record"
grep -q '"op":"sign".*"key":"session:0x.*"result":"0x0"' "$HOLDFAST_STATE_DIR/audit.log" ||
    hf_fail "the session key's signature was not recorded"
"$HF_CLI" audit verify >/dev/null || hf_fail "audit log does not verify after session objects"
echo "pkcs11-session: ok"
