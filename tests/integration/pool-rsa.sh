#!/bin/sh
# RSA keys kept in an HSM pool (issue 14), end to end: `holdfast key create --alg RSA-3072
# --source pool:p1` on a plain two-member pool of SoftHSMv2 tokens makes the pair in one member
# (its private key there: sensitive, never extractable, labelled with the version UUID; the store
# row holds the public key and no private material; clone and export pools, whose RSA keys are
# on every member, are pool-clone.sh's and pool-export.sh's); and holdfastd's sap-hyok plugin
# serves the pool key as SAP HYOK would use it: get-public-key gives the stored public key,
# RSAES_OAEP_SHA_256 decrypts in the member what OpenSSL encrypted under that key (SoftHSMv2 2.6
# refuses OAEP-SHA-256 itself: the member decrypts the block raw and the core decodes it), a
# tampered ciphertext is 400 and the member still serves the next call, and RSASSA_PSS_SHA_256
# signs in the member what OpenSSL verifies.
. "${top_srcdir:-.}/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/sap-lib.sh"

sap_need
for p in base64 cmp sqlite3 pkcs11-tool softhsm2-util; do
    command -v "$p" >/dev/null || hf_skip "$p not installed"
done
hf_store_setup

hf() { "$HF_CLI" "$@"; }
hf_pool_tokens pool a b
mod=$SOFTHSM_MODULE
hf_expect_exit 0 hf pool add p1 --member "a,module=$mod,token=pool-a,pin_env=HF_POOL_PIN" \
    --member "b,module=$mod,token=pool-b,pin_env=HF_POOL_PIN"

# ---- create: the private key in one member, the public key in the store ----
hf_expect_exit 0 hf key create r3 --alg RSA-3072 --source pool:p1
R3=$(sap_key_uuid r3) || hf_fail "key show r3"
# uuid|member|no material|a public key
row=$(sqlite3 "$DB" "SELECT uuid, substr(kek_label, 9), wrapped IS NULL, length(public_der) > 400
    FROM key_versions WHERE key_uuid = '$R3' AND version = 1 AND kek_label LIKE 'pool:p1/_'")
V1=${row%%|*}
member=${row#*|}
member=${member%%|*}
check "${row#*|}" "$member|1|1" "the store row of an RSA pool version (pool:p1/MEMBER, no material, a public key)"
pkcs11-tool --module "$mod" --token-label "pool-$member" --login --pin "$POOL_PIN" \
    --list-objects >"$HF_TMP/objects" 2>&1 || hf_fail "pkcs11-tool --list-objects"
grep -A8 "^Private Key Object; RSA" "$HF_TMP/objects" >"$HF_TMP/priv" ||
    { cat "$HF_TMP/objects"; hf_fail "no RSA private key on pool-$member"; }
grep -qF "label:      $V1" "$HF_TMP/priv" || { cat "$HF_TMP/objects"; hf_fail "no private key $V1"; }
grep -q "Access:.*sensitive" "$HF_TMP/priv" || { cat "$HF_TMP/priv"; hf_fail "not sensitive"; }
grep -q "Access:.*never extractable" "$HF_TMP/priv" || { cat "$HF_TMP/priv"; hf_fail "extractable"; }
! grep -q "^Public Key Object" "$HF_TMP/objects" || { cat "$HF_TMP/objects"; hf_fail "a public object left on the member"; }

# ---- holdfastd: sap-hyok on mTLS ----
hf_expect_exit 0 hf link type add sap-hyok
KS=$("$HF_CLI" uuid) || hf_fail "holdfast uuid"
hf_expect_exit 0 hf link add sap-hyok "$KS/$R3" r3
SAP_TENANT=tenant-pool
sap_pki
sap_client dc
sap_gateway_start 64k "$KS" "$(sap_pin dc)"

# sap ROUTE [MEMBERS]: a call on r3 as SAP makes it.
sap() {
    _route=$1
    sap_md "${2:-}" >"$HF_TMP/body.json"
    sap_call dc "/keystores/$KS/keys/$R3/$_route" "@$HF_TMP/body.json"
}
b64() { base64 -w0 "$1"; }
unb64() { python3 -c 'import base64, json, sys
open(sys.argv[3], "wb").write(base64.b64decode(json.load(open(sys.argv[1]))[sys.argv[2]], validate=True))' \
    "$SAP_OUT" "$1" "$2" || hf_fail "$_route: no base64 $1 in $(cat "$SAP_OUT")"; }

# ---- get-public-key: the stored public key ----
sap get-public-key
sap_expect 200
python3 -c 'import json, sys; sys.stdout.write(json.load(open(sys.argv[1]))["public_key"])' \
    "$SAP_OUT" >"$HF_TMP/r3.pem"
openssl pkey -pubin -in "$HF_TMP/r3.pem" -outform DER -out "$HF_TMP/r3.der" ||
    hf_fail "get-public-key: no PEM public key: $(cat "$SAP_OUT")"
check "$(od -An -tx1 -v "$HF_TMP/r3.der" | tr -d ' \n')" \
    "$(sqlite3 "$DB" "SELECT hex(public_der) FROM key_versions WHERE uuid = '$V1'" | tr 'A-F' 'a-f')" \
    "get-public-key hands out the stored public key"

# ---- RSAES_OAEP_SHA_256: OpenSSL encrypts the longest plaintext, the member decrypts ----
head -c $((384 - 2 * 32 - 2)) /dev/urandom >"$HF_TMP/pt"
openssl pkeyutl -encrypt -pubin -inkey "$HF_TMP/r3.pem" -pkeyopt rsa_padding_mode:oaep \
    -pkeyopt rsa_oaep_md:sha256 -pkeyopt rsa_mgf1_md:sha256 -in "$HF_TMP/pt" -out "$HF_TMP/ct" ||
    hf_fail "openssl cannot encrypt under the pool key"
DEC="\"algorithm\":\"RSAES_OAEP_SHA_256\",\"key_version_id\":\"$V1\""
sap asymmetric-decrypt "\"ciphertext\":\"$(b64 "$HF_TMP/ct")\",$DEC"
sap_expect 200
unb64 plaintext "$HF_TMP/got"
cmp -s "$HF_TMP/pt" "$HF_TMP/got" || hf_fail "the pool key's OAEP plaintext differs"
# A byte flipped: the answer a local key gives, many times over, and the member stays in.
python3 -c 'import sys; b = bytearray(open(sys.argv[1], "rb").read()); b[200] ^= 1
open(sys.argv[2], "wb").write(b)' "$HF_TMP/ct" "$HF_TMP/ct-bad"
for i in 1 2 3; do
    sap asymmetric-decrypt "\"ciphertext\":\"$(b64 "$HF_TMP/ct-bad")\",$DEC"
    sap_expect 400
done
sap asymmetric-decrypt "\"ciphertext\":\"$(b64 "$HF_TMP/ct")\",$DEC"
sap_expect 200
unb64 plaintext "$HF_TMP/got"
cmp -s "$HF_TMP/pt" "$HF_TMP/got" || hf_fail "the member no longer decrypts after tampered input"

# ---- RSASSA_PSS_SHA_256: the member signs, OpenSSL verifies ----
head -c 1000 /dev/urandom >"$HF_TMP/msg"
sap asymmetric-sign "\"message\":\"$(b64 "$HF_TMP/msg")\",\"message_type\":\"RAW\",\"algorithm\":\"RSASSA_PSS_SHA_256\""
sap_expect 200
unb64 signature "$HF_TMP/sig"
openssl dgst -sha256 -sigopt rsa_padding_mode:pss -sigopt rsa_pss_saltlen:digest \
    -sigopt rsa_mgf1_md:sha256 -verify "$HF_TMP/r3.pem" -signature "$HF_TMP/sig" "$HF_TMP/msg" \
    >"$HF_TMP/ossl.out" 2>&1 || hf_fail "OpenSSL does not verify the pool key's PSS signature: $(cat "$HF_TMP/ossl.out")"
hf_gateway_stop || true
exit 0
