#!/bin/sh
# The audit log against a local user who can write audit.log but has neither the token nor the
# gateway's PIN. `holdfast audit verify` (which opens the token and the store) must fail, exit 5,
# on each of: a stream's last record removed, the final stream removed, the file replaced by a
# freshly hashed (unkeyed SHA-256) log, an empty file, a torn last record (unless
# --allow-torn-tail); and a vendor record forged by a PKCS#11 caller logged in with the user PIN
# (HF_AuditRequest, HF_SetRequestContext) must be refused and never reach the log.
#
# Run against a build without the keyed chain (HF_CLI=... HF_MODULE=...), every check here fails.
. "${top_srcdir:-.}/tests/integration/lib.sh"

command -v python3 >/dev/null || hf_skip "python3 not installed"
hf_store_setup
state=$HOLDFAST_STATE_DIR
log=$state/audit.log
hf() { "$HF_CLI" "$@"; }
expect_err() { grep -qF -- "$1" "$HF_ERR" || { cat "$HF_ERR"; hf_fail "stderr lacks '$1'"; }; }

# A few processes' worth of records: each CLI run is one opened log with its own streams.
hf key create --alg aes-256 payroll >/dev/null || hf_fail "key create"
printf 'secret\n' >"$HF_TMP/plain"
hf encrypt --key payroll --in "$HF_TMP/plain" >"$HF_TMP/blob" || hf_fail "encrypt"
hf decrypt <"$HF_TMP/blob" >/dev/null || hf_fail "decrypt"
hf_expect_exit 0 hf audit verify
hf_expect_exit 0 hf --json audit verify --strict
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["checkpoints"] >= 1 and d["unanchored"] == 0 else 1)' "$HF_OUT" ||
    hf_fail "a closed log has no checkpoint, or unanchored records: $(cat "$HF_OUT")"
cp "$log" "$HF_TMP/good.log"

# edit NAME PYTHON: writes $HF_TMP/NAME.log from the good log's lines (list `lines`, each with its
# newline) as PYTHON leaves them.
edit() {
    python3 - "$HF_TMP/good.log" "$HF_TMP/$1.log" "$2" <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines(True)
exec(sys.argv[3])
open(sys.argv[2], "w").write("".join(lines))
PY
}

# ---- a stream's last record removed: the last stream-close of a data stream (the closing
# checkpoint names it) ----
edit stream-tail '
i = max(n for n, l in enumerate(lines) if "\"op\":\"stream-close\"" in l and "\"sig\"" not in l)
del lines[i]'
hf_expect_exit 5 hf audit verify --file "$HF_TMP/stream-tail.log"
expect_err "which the log lacks"

# ---- the final stream removed: every record of the last process ----
edit final-stream '
import json
pid = json.loads(lines[-1])["pid"]
lines = [l for l in lines if "\"pid\":%d," % pid not in l]'
hf_expect_exit 5 hf audit verify --file "$HF_TMP/final-stream.log"
expect_err "the store records a checkpoint the log lacks"

# ---- replaced by a freshly hashed log: the old format's SHA-256 chain, which anybody can
# compute ----
python3 - "$HF_TMP/fresh.log" <<'PY'
import hashlib, sys
out, prev = [], bytes(32)
ops = ["stream-open", "encrypt", "stream-close"]
for seq, op in enumerate(ops, 1):
    body = '{"seq":%d,"stream":"00112233445566ff","time":"2026-01-01T00:00:00.000000Z","pid":1,' \
           '"op":"%s","result":"0x0","ok":true,"latency_us":0' % (seq, op)
    if op == "stream-open":
        body += ',"prev":"' + "0" * 64 + '"'
    h = hashlib.sha256(prev + body.encode()).digest()
    out.append(body + ',"hash":"' + h.hex() + '"}\n')
    prev = h
open(sys.argv[1], "w").write("".join(out))
PY
hf_expect_exit 5 hf audit verify --file "$HF_TMP/fresh.log"
# ... and appended to the real one, as an extra stream: unkeyed after keyed is a forgery.
cat "$HF_TMP/good.log" "$HF_TMP/fresh.log" >"$HF_TMP/appended.log"
hf_expect_exit 5 hf audit verify --file "$HF_TMP/appended.log"

# ---- an empty file ----
: >"$HF_TMP/empty.log"
hf_expect_exit 5 hf audit verify --file "$HF_TMP/empty.log"
expect_err "emptied"

# ---- a torn last record: damage, unless the caller expects one ----
cp "$HF_TMP/good.log" "$HF_TMP/torn.log"
printf '{"seq":99,"stream":"0011223344556677","time":"2026-' >>"$HF_TMP/torn.log"
hf_expect_exit 5 hf audit verify --file "$HF_TMP/torn.log"
expect_err "torn"
hf_expect_exit 0 hf audit verify --file "$HF_TMP/torn.log" --allow-torn-tail

# ---- a vendor record forged by an ordinary PKCS#11 caller (the user PIN's login) ----
# forge PIN: logs in with PIN through the module loaded by path and asks for a record in
# aws-xks's name; prints HF_AuditRequest's and HF_SetRequestContext's results.
forge() {
    hf_ext python3 - "$HF_MODULE" "$1" <<'PY'
import ctypes as C, sys
lib = C.CDLL(sys.argv[1])
pin = sys.argv[2].encode()
for f in ("C_Initialize", "C_GetSlotList", "C_OpenSession", "C_Login", "C_GetInterface",
          "C_Logout", "C_CloseSession", "C_Finalize"):
    getattr(lib, f).restype = C.c_ulong
assert lib.C_Initialize(None) == 0
slots, n = (C.c_ulong * 4)(), C.c_ulong(4)
assert lib.C_GetSlotList(C.c_ubyte(1), slots, C.byref(n)) == 0 and n.value >= 1
h = C.c_ulong()
assert lib.C_OpenSession(slots[0], C.c_ulong(6), None, None, C.byref(h)) == 0
assert lib.C_Login(h, C.c_ulong(1), pin, C.c_ulong(len(pin))) == 0
class Iface(C.Structure):
    _fields_ = [("name", C.c_char_p), ("fl", C.c_void_p), ("flags", C.c_ulong)]
class Ctx(C.Structure):
    _fields_ = [(k, C.c_char_p) for k in ("api", "operation", "caller", "request_id", "link_type",
                                          "link_id", "detail")] + [("received_us", C.c_ulonglong)]
ip = C.POINTER(Iface)()
assert lib.C_GetInterface(b"Holdfast", None, C.byref(ip), C.c_ulong(0)) == 0
fns = C.cast(ip.contents.fl, C.POINTER(C.c_void_p))
# HF_FUNCTION_LIST: CK_VERSION (padded to a pointer), then HF_SetRequestContext, ... and
# HF_AuditRequest, the sixth.
set_ctx = C.CFUNCTYPE(C.c_ulong, C.c_ulong, C.POINTER(Ctx))(fns[1])
audit_request = C.CFUNCTYPE(C.c_ulong, C.POINTER(Ctx), C.c_ulong, C.POINTER(C.c_ulonglong))(fns[6])
ctx = Ctx(b"aws-xks", b"Decrypt", b"arn:aws:iam::111122223333:role/forged", b"req-forged-4242")
seq = C.c_ulonglong(0)
print("0x%x 0x%x" % (audit_request(C.byref(ctx), 0, C.byref(seq)), set_ctx(h, C.byref(ctx))))
lib.C_Logout(h)
lib.C_CloseSession(h)
lib.C_Finalize(None)
PY
}
got=$(forge "$HF_USER_PIN") || hf_fail "the forging program failed"
[ "$got" = "0x101 0x101" ] ||
    hf_fail "a user-PIN login wrote a record in another API's name: HF_AuditRequest, HF_SetRequestContext gave $got, want CKR_USER_NOT_LOGGED_IN (0x101)"
grep -q "req-forged-4242" "$log" && hf_fail "the forged request reached the audit log"
# The gateway's own login may.
got=$(forge "$(cat "$state/token-gateway.pin")") || hf_fail "the gateway's program failed"
[ "$got" = "0x0 0x0" ] || hf_fail "the gateway's login was refused: $got"
grep -q "req-forged-4242" "$log" || hf_fail "the gateway's record is not in the audit log"
hf_expect_exit 0 hf audit verify
exit 0
