#!/bin/sh
# Keys kept in an HSM pool (issue 14, third step), end to end with the real programs: a
# two-member pool on two SoftHSMv2 tokens; `holdfast key create --source pool:p1` makes an
# AES-256 key inside a member (show says so, the store row holds no material, the member token
# holds a sensitive, never-extractable object labelled with the version UUID); a pool that does
# not exist or cannot open is one clear line and writes nothing; holdfast encrypt/decrypt work on
# it across a rotation; and holdfastd's aws-xks plugin encrypts and decrypts through a pool key
# linked to an XKS key id, unchanged (skipped when holdfastd is not built).
. "${top_srcdir:-.}/tests/integration/lib.sh"

command -v softhsm2-util >/dev/null || hf_skip "softhsm2-util not installed"
command -v sqlite3 >/dev/null || hf_skip "sqlite3 not installed"
command -v pkcs11-tool >/dev/null || hf_skip "pkcs11-tool (OpenSC) not installed"
hf_store_setup

hf() { "$HF_CLI" "$@"; }
expect_err() { grep -qF -- "$1" "$HF_ERR" || { cat "$HF_ERR"; hf_fail "stderr lacks '$1'"; }; }
expect_out() { grep -qF -- "$1" "$HF_OUT" || { cat "$HF_OUT"; hf_fail "stdout lacks '$1'"; }; }
# The members' tokens beside the root KEK's, in the key store's own SoftHSMv2.
hf_pool_tokens pool a b
mod=$SOFTHSM_MODULE
hf_expect_exit 0 hf pool add p1 --member "a,module=$mod,token=pool-a,pin_env=HF_POOL_PIN" \
    --member "b,module=$mod,token=pool-b,pin_env=HF_POOL_PIN"
hf_expect_exit 0 hf pool add dead --member "a,module=$mod,token=no-such-token,pin_env=HF_POOL_PIN"

# ---- a pool that is not there, or cannot open: one line, non-zero, nothing written ----
hf_expect_exit 3 hf key create kp --source pool:nosuch
expect_err "there is no pool named 'nosuch'"
hf_expect_exit 1 hf key create kp --source pool:dead
expect_err "pool 'dead' could not make it"
hf_expect_exit 2 hf key create kp --source hsm:p1
expect_err "--source is local or pool:NAME"
hf_expect_exit 1 hf key create kp --source pool:p1 --exportable
hf_expect_exit 3 hf key show kp

# ---- create: in a member, no material in the store ----
hf_expect_exit 0 hf key create kp --alg AES-256 --source pool:p1
expect_out "created key 'kp'"
hf_expect_exit 0 hf key show kp
expect_out "source:       pool:p1"
hf_expect_exit 0 hf --json key show kp
V1=$(python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["versions"][0]["uuid"])' <"$HF_OUT") ||
    hf_fail "key show --json: no version uuid"
row=$(sqlite3 "$DB" "SELECT kek_label, wrapped IS NULL, state FROM key_versions WHERE uuid = '$V1'")
case "$row" in
"pool:p1/a|1|2" | "pool:p1/b|1|2") ;;
*) hf_fail "the store row of a pool version: '$row' (want pool:p1/MEMBER, no material, active)" ;;
esac
# The object on its member: found by label, sensitive, never extractable.
row_label=${row%%|*}
member=${row#pool:p1/}
member=${member%%|*}
pkcs11-tool --module "$mod" --token-label "pool-$member" --login --pin "$POOL_PIN" \
    --list-objects --type secrkey >"$HF_TMP/objects" 2>&1 || hf_fail "pkcs11-tool --list-objects"
grep -qF "label:      $V1" "$HF_TMP/objects" || { cat "$HF_TMP/objects"; hf_fail "no object $V1"; }
grep -q "Access:.*sensitive" "$HF_TMP/objects" || { cat "$HF_TMP/objects"; hf_fail "not sensitive"; }
grep -q "Access:.*never extractable" "$HF_TMP/objects" ||
    { cat "$HF_TMP/objects"; hf_fail "extractable"; }

# ---- holdfast encrypt/decrypt, across a rotation ----
printf 'pool secret' >"$HF_TMP/plain"
hf_expect_exit 0 hf encrypt --key kp --in "$HF_TMP/plain" --out "$HF_TMP/c1"
hf_expect_exit 0 hf key rotate kp
hf_expect_exit 0 hf encrypt --key kp --in "$HF_TMP/plain" --out "$HF_TMP/c2"
for c in c1 c2; do
    hf_expect_exit 0 hf decrypt --in "$HF_TMP/$c" --out "$HF_TMP/$c.out"
    cmp -s "$HF_TMP/plain" "$HF_TMP/$c.out" || hf_fail "decrypt of $c"
done
cmp -s "$HF_TMP/c1" "$HF_TMP/c2" && hf_fail "two encryptions gave one ciphertext"
# store check passes a pool key's versions (their material is in the HSMs, not the store), and
# fails one moved to another pool in the store.
hf_expect_exit 0 hf store check
sqlite3 "$DB" "UPDATE key_versions SET kek_label = 'pool:elsewhere/a' WHERE uuid = '$V1'"
hf_expect_exit 1 hf store check
sqlite3 "$DB" "UPDATE key_versions SET kek_label = '$row_label' WHERE uuid = '$V1'"
hf_expect_exit 0 hf store check

# ---- the aws-xks plugin on a pool key ----
HOLDFASTD="$top_builddir/gateway/holdfastd"
XKS_PLUGIN="$top_builddir/gateway/plugins/aws-xks/.libs/aws-xks.so"
if [ ! -x "$HOLDFASTD" ] || [ ! -f "$XKS_PLUGIN" ] || ! command -v curl >/dev/null ||
    ! curl --help all 2>/dev/null | grep -q -- '--aws-sigv4'; then
    echo "pool-keys.sh: holdfastd, the aws-xks plugin or curl --aws-sigv4 missing: XKS part skipped"
    exit 0
fi
hf_expect_exit 0 hf link add aws-xks kp kp
hf_expect_exit 0 hf key create hk
hf_expect_exit 0 hf link add aws-xks health hk
AKID=AKIAIOSFODNN7EXAMPLE
SEC=FYtE5EFA5FT0mCc3DrGUe2sti527BitkQ0Zr9MO9fvE
P=$(hf_free_port)
CONF="$HF_TMP/holdfastd.conf"
cat >"$CONF" <<EOF
$(hf_gateway_section aws-xks 32k "127.0.0.1:$P")

[plugin:aws-xks]
path = $XKS_PLUGIN

$(hf_xks_store health "$AKID:$SEC" kp)
EOF
chmod 600 "$CONF"
hf_gateway_start "http://127.0.0.1:$P" "$HOLDFASTD" -f -c "$CONF"
# No threads = N: a listener thread per core, since none waits on an HSM; a pool's calls run on
# its own worker threads, one per call its members may have in flight (p1's two members, 4 each).
want=$(nproc)
grep -q "with $want threads" "$HF_TMP/holdfastd.log" ||
    { grep threads "$HF_TMP/holdfastd.log"; hf_fail "holdfastd's listener threads are not one per core (want $want)"; }
grep -q "HSM pool p1: 8 worker threads" "$HF_TMP/holdfastd.log" ||
    { grep threads "$HF_TMP/holdfastd.log"; hf_fail "holdfastd did not size p1's worker threads (want 8)"; }
PY="python3 $top_srcdir/tests/integration/xks-body.py"
OUT="$HF_TMP/out.json"
xks() {
    CODE=$(curl -sS -o "$OUT" -w '%{http_code}' --aws-sigv4 "aws:amz:us-east-1:kms-xks-proxy" \
        --user "$AKID:$SEC" -H 'Content-Type: application/json' --data-binary "@$2" \
        "http://127.0.0.1:$P$1" 2>"$HF_TMP/curl.err") || CODE="curl-exit-$?"
    [ "$CODE" = 200 ] || { cat "$OUT" "$HF_TMP/curl.err" 2>/dev/null; hf_fail "$1: HTTP $CODE"; }
}
AAD=cHJvamVjdD1uaWxlLGRlcGFydG1lbnQ9bWFya2V0aW5n
$PY encrypt --pt SGVsbG8gV29ybGQh --aad "$AAD" >"$HF_TMP/enc.json" || hf_fail "xks-body encrypt"
xks /kms/xks/v1/keys/kp/encrypt "$HF_TMP/enc.json"
cp "$OUT" "$HF_TMP/ct.json"
$PY check-encrypt "$HF_TMP/ct.json" "$HF_TMP/enc.json" || hf_fail "the encrypt answer"
check "$($PY get "$OUT" ciphertextMetadata)" AQAAAAI= "ciphertextMetadata names version 2"
$PY decrypt "$HF_TMP/ct.json" --aad "$AAD" >"$HF_TMP/dec.json" || hf_fail "xks-body decrypt"
xks /kms/xks/v1/keys/kp/decrypt "$HF_TMP/dec.json"
check "$($PY get "$OUT" plaintext)" SGVsbG8gV29ybGQh "XKS decrypt through the pool key"
# A tampered ciphertext: the plugin's answer for a local key's, and the member stays in.
python3 - "$HF_TMP/dec.json" <<'PY'
import base64, json, sys
d = json.load(open(sys.argv[1]))
t = bytearray(base64.b64decode(d["authenticationTag"]))
t[0] ^= 1
d["authenticationTag"] = base64.b64encode(bytes(t)).decode()
json.dump(d, open(sys.argv[1] + ".bad", "w"))
PY
CODE=$(curl -sS -o "$OUT" -w '%{http_code}' --aws-sigv4 "aws:amz:us-east-1:kms-xks-proxy" \
    --user "$AKID:$SEC" -H 'Content-Type: application/json' \
    --data-binary "@$HF_TMP/dec.json.bad" "http://127.0.0.1:$P/kms/xks/v1/keys/kp/decrypt")
check "$CODE $($PY get "$OUT" errorName)" "400 InvalidCiphertextException" "a tampered tag"
xks /kms/xks/v1/keys/kp/decrypt "$HF_TMP/dec.json"
hf_gateway_stop || true
exit 0
