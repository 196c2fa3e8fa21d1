#!/bin/sh
# The sap-hyok plugin's asymmetric routes end to end (specs/sap-hyok.md "Crypto"): holdfastd on a
# TLS listener requiring client certificates, RSA-3072 and RSA-4096 keys made with the CLI, and
# every result checked against OpenSSL on the host with the PEM get-public-key hands out.
#
# Shows: get-public-key (PEM SubjectPublicKeyInfo of the current or a named version; an unknown
# version 404); for each RSAES_OAEP_SHA_1|256|384|512 on both sizes, OpenSSL encrypts the
# longest plaintext k - 2 hLen - 2 and the gateway decrypts it, the gateway encrypts and decrypts
# its own, and one byte more is 400; for each RSASSA_PSS_SHA_256|384|512 on both sizes, the
# gateway signs RAW and DIGEST messages and OpenSSL verifies them with salt = hash length
# (rsa_pss_saltlen:digest refuses any other), the gateway verifies them too, and a RAW signature
# verifies as the DIGEST of the same message; the other way round on an exportable key whose
# private half OpenSSL is given (sap-asym-export.py): OpenSSL decrypts what the gateway encrypted
# with each OAEP hash, and the gateway verifies OpenSSL's RAW and DIGEST signatures (and refuses
# one with another salt length, valid:false); a tampered ciphertext, another OAEP hash, a short
# ciphertext, bad base64 and bad enums 400; a wrong digest length, a RAW message over 4096 bytes
# 400; a tampered signature, another message, a short signature answer 200 valid:false; a named
# old version signs and decrypts as itself (and another version's ciphertext is 400); a usage
# mask without the operation, an AES key, a blocked link and a pre-active key 403 (members of
# the wrong JSON type 400); a deactivated key still decrypts, verifies and gives its public key
# but neither encrypts nor signs; each call's audit record (operation, outcome, sap_request_id,
# tenant, certificate fingerprint), no plaintext in the log, and `holdfast audit verify`.
. "${top_srcdir:-.}/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/sap-lib.sh"

sap_need
for p in base64 cmp; do
    command -v "$p" >/dev/null || hf_skip "$p not installed"
done
hf_store_setup

hf() { "$HF_CLI" "$@" >>"$HF_TMP/cli.log" 2>&1 || hf_fail "holdfast $*: $(tail -n 3 "$HF_TMP/cli.log")"; }
# version_uuid NAME N: the UUID of version N of key NAME.
version_uuid() {
    "$HF_CLI" --json key show "$1" | python3 -c 'import json, sys
print([v["uuid"] for v in json.load(sys.stdin)["versions"] if v["version"] == int(sys.argv[1])][0])' "$2" ||
        hf_fail "key show $1"
}

# ---- keys, linked in one keystore ----
# holdfastd registers the type when it starts; the links are made before.
hf link type add sap-hyok
KS=$("$HF_CLI" uuid) || hf_fail "holdfast uuid"
SAP_TENANT=tenant-asym
SAP_GROUP=g1
# key NAME ALG [create options]: a key linked as KEYSTORE/ITS_UUID; its uuid in $NAME_ID.
key() {
    _n=$1
    shift
    hf key create "$_n" --alg "$@"
    _id=$(sap_key_uuid "$_n") || hf_fail "key show $_n"
    hf link add sap-hyok "$KS/$_id" "$_n"
    eval "${_n}_ID=$_id"
}
key r3 RSA-3072
key r4 RSA-4096
key rsig RSA-3072 --usage sign,verify
key renc RSA-3072 --usage encrypt,decrypt
key rblk RSA-3072
key rdeact RSA-3072
# Exportable, so OpenSSL holds its private half too (below).
key rexp RSA-3072 --exportable
key rpre RSA-3072 --state pre-active
key aes AES-256
hf key rotate r3
R3_V1=$(version_uuid r3 1)
R3_V2=$(version_uuid r3 2)
R4_V1=$(version_uuid r4 1)
RDEACT_V1=$(version_uuid rdeact 1)
# Before holdfastd starts, so no cache has to catch up.
hf link block sap-hyok "$KS/$rblk_ID"
# rexp's private key for OpenSSL, read through PKCS#11 before holdfastd holds the store.
hf_ext python3 "$top_srcdir/tests/integration/sap-asym-export.py" "$HF_MODULE" "$HF_USER_PIN" rexp \
    "$HF_TMP/rexp.key" >"$HF_TMP/export.out" 2>&1 || hf_fail "cannot export rexp: $(cat "$HF_TMP/export.out")"
REXP_V1=$(version_uuid rexp 1)

# ---- certificates: SAP's CA, the server, SAP's client certificate and its pin ----
sap_pki
sap_client dc
PKI=$HF_PKI
PIN=$(sap_pin dc)

# ---- holdfastd: SAP on mTLS, /healthz on plain loopback HTTP ----
sap_gateway_start 256k "$KS" "$PIN"

# ---- calls ----
AUDIT_EXPECT="$HF_TMP/audit-expect"
: >"$AUDIT_EXPECT"
N=0
# sap TAG KEY_ID ROUTE [MEMBERS]: POST request_metadata and MEMBERS as SAP would, with
# sap_request_id TAG-N (RID, for the audit check at the end); CODE is the HTTP status. The body
# goes through a file: RSA-4096 members make it longer than an argument should be.
sap() {
    _tag=$1 _key=$2 _route=$3
    N=$((N + 1))
    RID="$_tag-$N"
    SAP_REQUEST_ID=$RID sap_md "${4:-}" >"$HF_TMP/body.json"
    sap_call dc "/keystores/$KS/keys/$_key/$_route" "@$HF_TMP/body.json"
    OUT=$SAP_OUT
}
json() { sap_json "$1"; }
# unb64 MEMBER FILE: a base64 member of the answer, decoded.
unb64() { python3 -c 'import base64, json, sys
open(sys.argv[3], "wb").write(base64.b64decode(json.load(open(sys.argv[1]))[sys.argv[2]], validate=True))' \
    "$OUT" "$1" "$2" || hf_fail "$RID: no base64 $1 in $(cat "$OUT")"; }
b64() { base64 -w0 "$1"; }
# expect STATUS [OK|FAIL|VERIFY-FALSE]: the last call's status and, for an error, the spec's
# envelope (sap_expect); what its audit record must say is checked at the end.
expect() {
    sap_expect "$1"
    printf '%s %s %s\n' "$RID" "$_route" "${2:-$([ "$1" = 200 ] && echo OK || echo FAIL)}" >>"$AUDIT_EXPECT"
}
# expect_why STATUS TEXT: an error whose message says TEXT.
expect_why() {
    expect "$1"
    case "$(json message)" in
    *"$2"*) ;;
    *) hf_fail "$RID: message '$(json message)' does not say '$2'" ;;
    esac
}

# pubkey NAME KEY_ID [VERSION_ID]: get-public-key into $HF_TMP/NAME.pem, checked by OpenSSL.
pubkey() {
    sap pubkey "$2" get-public-key ${3:+"\"key_version_id\":\"$3\""}
    expect 200
    python3 -c 'import json, sys; sys.stdout.write(json.load(open(sys.argv[1]))["public_key"])' \
        "$OUT" >"$HF_TMP/$1.pem"
    openssl pkey -pubin -in "$HF_TMP/$1.pem" -noout 2>/dev/null ||
        hf_fail "$RID: public_key is no PEM public key: $(cat "$OUT")"
    head -n 1 "$HF_TMP/$1.pem" | grep -qx -- '-----BEGIN PUBLIC KEY-----' ||
        hf_fail "$RID: public_key is not a SubjectPublicKeyInfo PEM"
}

# ---- get-public-key ----
pubkey r3 "$r3_ID"
check "$(json key_version_id)" "$R3_V2" "get-public-key names the current version"
openssl pkey -pubin -in "$HF_TMP/r3.pem" -noout -text | grep -q '3072 bit' || hf_fail "r3 is not RSA-3072"
pubkey r3v1 "$r3_ID" "$R3_V1"
check "$(json key_version_id)" "$R3_V1" "get-public-key of a named version"
! cmp -s "$HF_TMP/r3.pem" "$HF_TMP/r3v1.pem" || hf_fail "two versions gave one public key"
pubkey r4 "$r4_ID"
check "$(json key_version_id)" "$R4_V1" "get-public-key of r4"
openssl pkey -pubin -in "$HF_TMP/r4.pem" -noout -text | grep -q '4096 bit' || hf_fail "r4 is not RSA-4096"
sap pubkey-unknown "$r3_ID" get-public-key "\"key_version_id\":\"$("$HF_CLI" uuid)\""
expect 404
sap pubkey-other "$r3_ID" get-public-key "\"key_version_id\":\"$R4_V1\""
expect 404

# ---- RSAES-OAEP: OpenSSL encrypts, the gateway decrypts; the gateway's own round trip ----
# oaep NAME KEY_ID VERSION_ID K HASH
oaep() {
    _pem="$HF_TMP/$1.pem" _alg="RSAES_OAEP_SHA_$5" _md="sha$5"
    case $5 in 1) _h=20 ;; 256) _h=32 ;; 384) _h=48 ;; 512) _h=64 ;; esac
    _max=$(($4 - 2 * _h - 2))
    head -c "$_max" /dev/urandom >"$HF_TMP/pt"
    openssl pkeyutl -encrypt -pubin -inkey "$_pem" -pkeyopt rsa_padding_mode:oaep \
        -pkeyopt "rsa_oaep_md:$_md" -pkeyopt "rsa_mgf1_md:$_md" -in "$HF_TMP/pt" \
        -out "$HF_TMP/ct" || hf_fail "openssl cannot encrypt $_max bytes with $_alg"
    sap oaep-dec "$2" asymmetric-decrypt \
        "\"ciphertext\":\"$(b64 "$HF_TMP/ct")\",\"algorithm\":\"$_alg\",\"key_version_id\":\"$3\""
    expect 200
    unb64 plaintext "$HF_TMP/got"
    cmp -s "$HF_TMP/pt" "$HF_TMP/got" || hf_fail "$RID: $1 $_alg: the plaintext differs"
    # The gateway's own encryption of the longest plaintext, decrypted by the gateway.
    sap oaep-enc "$2" asymmetric-encrypt "\"plaintext\":\"$(b64 "$HF_TMP/pt")\",\"algorithm\":\"$_alg\""
    expect 200
    check "$(json algorithm)" "$_alg" "$RID: the algorithm echoed"
    check "$(json key_version_id)" "$3" "$RID: the version used"
    unb64 ciphertext "$HF_TMP/ct2"
    check "$(wc -c <"$HF_TMP/ct2" | tr -d ' ')" "$4" "$RID: ciphertext length"
    sap oaep-dec2 "$2" asymmetric-decrypt \
        "\"ciphertext\":\"$(b64 "$HF_TMP/ct2")\",\"algorithm\":\"$_alg\",\"key_version_id\":\"$3\""
    expect 200
    unb64 plaintext "$HF_TMP/got"
    cmp -s "$HF_TMP/pt" "$HF_TMP/got" || hf_fail "$RID: $1 $_alg: its own round trip differs"
    # One byte over k - 2 hLen - 2.
    head -c $((_max + 1)) /dev/urandom >"$HF_TMP/pt1"
    sap oaep-long "$2" asymmetric-encrypt "\"plaintext\":\"$(b64 "$HF_TMP/pt1")\",\"algorithm\":\"$_alg\""
    expect_why 400 "at most $_max"
}
for h in 1 256 384 512; do
    oaep r3 "$r3_ID" "$R3_V2" 384 "$h"
    oaep r4 "$r4_ID" "$R4_V1" 512 "$h"
done

# ---- OAEP refusals (400): the spec's "GCM or OAEP failure", bad base64 and enums ----
printf 'a secret of 29 bytes, or so.' >"$HF_TMP/pt"
openssl pkeyutl -encrypt -pubin -inkey "$HF_TMP/r3.pem" -pkeyopt rsa_padding_mode:oaep \
    -pkeyopt rsa_oaep_md:sha256 -pkeyopt rsa_mgf1_md:sha256 -in "$HF_TMP/pt" -out "$HF_TMP/ct"
CT=$(b64 "$HF_TMP/ct")
# A byte of the ciphertext flipped, in the middle.
python3 -c 'import sys; b = bytearray(open(sys.argv[1], "rb").read()); b[200] ^= 1
open(sys.argv[2], "wb").write(b)' "$HF_TMP/ct" "$HF_TMP/ct-bad"
sap oaep-tampered "$r3_ID" asymmetric-decrypt \
    "\"ciphertext\":\"$(b64 "$HF_TMP/ct-bad")\",\"algorithm\":\"RSAES_OAEP_SHA_256\",\"key_version_id\":\"$R3_V2\""
expect 400
sap oaep-other-hash "$r3_ID" asymmetric-decrypt \
    "\"ciphertext\":\"$CT\",\"algorithm\":\"RSAES_OAEP_SHA_1\",\"key_version_id\":\"$R3_V2\""
expect 400
sap oaep-other-version "$r3_ID" asymmetric-decrypt \
    "\"ciphertext\":\"$CT\",\"algorithm\":\"RSAES_OAEP_SHA_256\",\"key_version_id\":\"$R3_V1\""
expect 400
head -c 383 "$HF_TMP/ct" >"$HF_TMP/ct-short"
sap oaep-short "$r3_ID" asymmetric-decrypt \
    "\"ciphertext\":\"$(b64 "$HF_TMP/ct-short")\",\"algorithm\":\"RSAES_OAEP_SHA_256\",\"key_version_id\":\"$R3_V2\""
expect_why 400 "383 bytes"
sap oaep-b64 "$r3_ID" asymmetric-decrypt \
    "\"ciphertext\":\"${CT%?}\",\"algorithm\":\"RSAES_OAEP_SHA_256\",\"key_version_id\":\"$R3_V2\""
expect 400
sap oaep-enum "$r3_ID" asymmetric-decrypt \
    "\"ciphertext\":\"$CT\",\"algorithm\":\"RSAES_OAEP_SHA_224\",\"key_version_id\":\"$R3_V2\""
expect_why 400 "algorithm"
sap oaep-enum-case "$r3_ID" asymmetric-encrypt "\"plaintext\":\"AAAA\",\"algorithm\":\"rsaes_oaep_sha_256\""
expect_why 400 "algorithm"
sap oaep-no-alg "$r3_ID" asymmetric-encrypt "\"plaintext\":\"AAAA\""
expect_why 400 "algorithm"
sap oaep-alg-type "$r3_ID" asymmetric-encrypt "\"plaintext\":\"AAAA\",\"algorithm\":256"
expect_why 400 "algorithm"
sap oaep-pt-type "$r3_ID" asymmetric-encrypt "\"plaintext\":[1,2],\"algorithm\":\"RSAES_OAEP_SHA_256\""
expect_why 400 "plaintext"
sap oaep-pss-alg "$r3_ID" asymmetric-encrypt "\"plaintext\":\"AAAA\",\"algorithm\":\"RSASSA_PSS_SHA_256\""
expect_why 400 "algorithm"
sap oaep-no-version "$r3_ID" asymmetric-decrypt "\"ciphertext\":\"$CT\",\"algorithm\":\"RSAES_OAEP_SHA_256\""
expect_why 400 "key_version_id"
sap oaep-unknown-version "$r3_ID" asymmetric-decrypt \
    "\"ciphertext\":\"$CT\",\"algorithm\":\"RSAES_OAEP_SHA_256\",\"key_version_id\":\"$("$HF_CLI" uuid)\""
expect 404
# And the good one, so the refusals above are the changed byte's, hash's or version's.
sap oaep-good "$r3_ID" asymmetric-decrypt \
    "\"ciphertext\":\"$CT\",\"algorithm\":\"RSAES_OAEP_SHA_256\",\"key_version_id\":\"$R3_V2\""
expect 200
check "$(json plaintext)" "$(b64 "$HF_TMP/pt")" "$RID: the plaintext"
# A named old version encrypts as itself: its ciphertext opens under v1 only.
sap oaep-v1 "$r3_ID" asymmetric-encrypt \
    "\"plaintext\":\"$(b64 "$HF_TMP/pt")\",\"algorithm\":\"RSAES_OAEP_SHA_384\",\"key_version_id\":\"$R3_V1\""
expect 200
check "$(json key_version_id)" "$R3_V1" "$RID: the version named"
CT1=$(json ciphertext)
sap oaep-v1-dec "$r3_ID" asymmetric-decrypt \
    "\"ciphertext\":\"$CT1\",\"algorithm\":\"RSAES_OAEP_SHA_384\",\"key_version_id\":\"$R3_V1\""
expect 200
check "$(json plaintext)" "$(b64 "$HF_TMP/pt")" "$RID: v1's plaintext"
sap oaep-v1-as-v2 "$r3_ID" asymmetric-decrypt \
    "\"ciphertext\":\"$CT1\",\"algorithm\":\"RSAES_OAEP_SHA_384\",\"key_version_id\":\"$R3_V2\""
expect 400
# An empty plaintext is a plaintext (RFC 8017 allows it).
sap oaep-empty "$r3_ID" asymmetric-encrypt "\"plaintext\":\"\",\"algorithm\":\"RSAES_OAEP_SHA_256\""
expect 200
sap oaep-empty-dec "$r3_ID" asymmetric-decrypt \
    "\"ciphertext\":\"$(json ciphertext)\",\"algorithm\":\"RSAES_OAEP_SHA_256\",\"key_version_id\":\"$R3_V2\""
expect 200
check "$(json plaintext)" "" "$RID: the empty plaintext"

# ---- RSASSA-PSS: the gateway signs, OpenSSL verifies (salt = hash length), and back ----
head -c 1000 /dev/urandom >"$HF_TMP/msg"
MSG=$(b64 "$HF_TMP/msg")
# pss NAME KEY_ID VERSION_ID HASH
pss() {
    _pem="$HF_TMP/$1.pem" _alg="RSASSA_PSS_SHA_$4" _md="sha$4"
    openssl dgst "-$_md" -binary "$HF_TMP/msg" >"$HF_TMP/dgst"
    DG=$(b64 "$HF_TMP/dgst")
    sap pss-raw "$2" asymmetric-sign "\"message\":\"$MSG\",\"message_type\":\"RAW\",\"algorithm\":\"$_alg\""
    expect 200
    check "$(json algorithm)" "$_alg" "$RID: the algorithm echoed"
    check "$(json key_version_id)" "$3" "$RID: the version used"
    SIG=$(json signature)
    unb64 signature "$HF_TMP/sig"
    openssl dgst "-$_md" -sigopt rsa_padding_mode:pss -sigopt rsa_pss_saltlen:digest \
        -sigopt "rsa_mgf1_md:$_md" -verify "$_pem" -signature "$HF_TMP/sig" "$HF_TMP/msg" \
        >"$HF_TMP/ossl.out" 2>&1 || hf_fail "$RID: OpenSSL does not verify $1's RAW $_alg signature: $(cat "$HF_TMP/ossl.out")"
    sap pss-raw-verify "$2" asymmetric-verify \
        "\"signature\":\"$SIG\",\"message\":\"$MSG\",\"message_type\":\"RAW\",\"algorithm\":\"$_alg\",\"key_version_id\":\"$3\""
    expect 200
    check "$(json valid)" true "$RID: the gateway verifies its RAW signature"
    # The RAW signature is the DIGEST one's of the same message: Holdfast hashed with HASH.
    sap pss-raw-as-digest "$2" asymmetric-verify \
        "\"signature\":\"$SIG\",\"message\":\"$DG\",\"message_type\":\"DIGEST\",\"algorithm\":\"$_alg\",\"key_version_id\":\"$3\""
    expect 200
    check "$(json valid)" true "$RID: a RAW signature verifies as its message's DIGEST"
    sap pss-digest "$2" asymmetric-sign "\"message\":\"$DG\",\"message_type\":\"DIGEST\",\"algorithm\":\"$_alg\""
    expect 200
    unb64 signature "$HF_TMP/sig"
    openssl pkeyutl -verify -pubin -inkey "$_pem" -pkeyopt "digest:$_md" \
        -pkeyopt rsa_padding_mode:pss -pkeyopt rsa_pss_saltlen:digest -pkeyopt "rsa_mgf1_md:$_md" \
        -in "$HF_TMP/dgst" -sigfile "$HF_TMP/sig" >"$HF_TMP/ossl.out" 2>&1 ||
        hf_fail "$RID: OpenSSL does not verify $1's DIGEST $_alg signature: $(cat "$HF_TMP/ossl.out")"
    sap pss-digest-verify "$2" asymmetric-verify \
        "\"signature\":\"$(json signature)\",\"message\":\"$MSG\",\"message_type\":\"RAW\",\"algorithm\":\"$_alg\",\"key_version_id\":\"$3\""
    expect 200
    check "$(json valid)" true "$RID: a DIGEST signature verifies as its RAW message"
}
for h in 256 384 512; do
    pss r3 "$r3_ID" "$R3_V2" "$h"
    pss r4 "$r4_ID" "$R4_V1" "$h"
done

# An empty RAW message is a message: its hash is signed.
: >"$HF_TMP/empty"
sap pss-empty "$r3_ID" asymmetric-sign "\"message\":\"\",\"message_type\":\"RAW\",\"algorithm\":\"RSASSA_PSS_SHA_384\""
expect 200
unb64 signature "$HF_TMP/sig-e"
openssl dgst -sha384 -sigopt rsa_padding_mode:pss -sigopt rsa_pss_saltlen:digest \
    -verify "$HF_TMP/r3.pem" -signature "$HF_TMP/sig-e" "$HF_TMP/empty" >/dev/null 2>&1 ||
    hf_fail "$RID: OpenSSL does not verify the empty message's signature"

# ---- the other way round: the gateway encrypts, OpenSSL decrypts; OpenSSL signs, the gateway
# verifies (rexp, whose private half OpenSSL holds) ----
pubkey rexp "$rexp_ID"
openssl pkey -in "$HF_TMP/rexp.key" -pubout | cmp -s - "$HF_TMP/rexp.pem" ||
    hf_fail "rexp's exported key is not the key get-public-key gives"
for h in 1 256 384 512; do
    head -c 100 /dev/urandom >"$HF_TMP/pt-r"
    sap rev-enc "$rexp_ID" asymmetric-encrypt "\"plaintext\":\"$(b64 "$HF_TMP/pt-r")\",\"algorithm\":\"RSAES_OAEP_SHA_$h\""
    expect 200
    unb64 ciphertext "$HF_TMP/ct-r"
    openssl pkeyutl -decrypt -inkey "$HF_TMP/rexp.key" -pkeyopt rsa_padding_mode:oaep \
        -pkeyopt "rsa_oaep_md:sha$h" -pkeyopt "rsa_mgf1_md:sha$h" -in "$HF_TMP/ct-r" \
        -out "$HF_TMP/got-r" 2>"$HF_TMP/ossl.out" || hf_fail "$RID: OpenSSL cannot decrypt RSAES_OAEP_SHA_$h: $(cat "$HF_TMP/ossl.out")"
    cmp -s "$HF_TMP/pt-r" "$HF_TMP/got-r" || hf_fail "$RID: OpenSSL decrypts another plaintext"
done
for h in 256 384 512; do
    P="\"algorithm\":\"RSASSA_PSS_SHA_$h\",\"key_version_id\":\"$REXP_V1\""
    openssl dgst "-sha$h" -sign "$HF_TMP/rexp.key" -sigopt rsa_padding_mode:pss \
        -sigopt rsa_pss_saltlen:digest -out "$HF_TMP/sig-r" "$HF_TMP/msg"
    sap rev-verify-raw "$rexp_ID" asymmetric-verify "\"signature\":\"$(b64 "$HF_TMP/sig-r")\",\"message\":\"$MSG\",\"message_type\":\"RAW\",$P"
    expect 200
    check "$(json valid)" true "$RID: OpenSSL's RAW RSASSA_PSS_SHA_$h signature"
    openssl dgst "-sha$h" -binary "$HF_TMP/msg" >"$HF_TMP/dgst-r"
    openssl pkeyutl -sign -inkey "$HF_TMP/rexp.key" -pkeyopt "digest:sha$h" \
        -pkeyopt rsa_padding_mode:pss -pkeyopt rsa_pss_saltlen:digest -in "$HF_TMP/dgst-r" \
        -out "$HF_TMP/sig-r"
    sap rev-verify-digest "$rexp_ID" asymmetric-verify "\"signature\":\"$(b64 "$HF_TMP/sig-r")\",\"message\":\"$(b64 "$HF_TMP/dgst-r")\",\"message_type\":\"DIGEST\",$P"
    expect 200
    check "$(json valid)" true "$RID: OpenSSL's DIGEST RSASSA_PSS_SHA_$h signature"
done
# Salt = hash length is the rule: a signature with another salt does not verify.
openssl dgst -sha256 -sign "$HF_TMP/rexp.key" -sigopt rsa_padding_mode:pss -sigopt rsa_pss_saltlen:20 \
    -out "$HF_TMP/sig-r" "$HF_TMP/msg"
sap rev-salt "$rexp_ID" asymmetric-verify "\"signature\":\"$(b64 "$HF_TMP/sig-r")\",\"message\":\"$MSG\",\"message_type\":\"RAW\",\"algorithm\":\"RSASSA_PSS_SHA_256\",\"key_version_id\":\"$REXP_V1\""
expect 200 VERIFY-FALSE
check "$(json valid)" false "$RID: a 20-byte salt"

# ---- PSS refusals: 400 for the request, 200 valid:false for the signature ----
sap pss-sign "$r3_ID" asymmetric-sign "\"message\":\"$MSG\",\"message_type\":\"RAW\",\"algorithm\":\"RSASSA_PSS_SHA_256\""
expect 200
SIG=$(json signature)
unb64 signature "$HF_TMP/sig"
for d in 32:384 48:256 64:384 0:512 65:512 31:256; do
    head -c "${d%:*}" /dev/urandom >"$HF_TMP/d"
    sap pss-digest-len "$r3_ID" asymmetric-sign \
        "\"message\":\"$(b64 "$HF_TMP/d")\",\"message_type\":\"DIGEST\",\"algorithm\":\"RSASSA_PSS_SHA_${d#*:}\""
    expect_why 400 "${d%:*}-byte"
done
head -c 32 /dev/urandom >"$HF_TMP/d"
sap pss-verify-digest-len "$r3_ID" asymmetric-verify \
    "\"signature\":\"$SIG\",\"message\":\"$(b64 "$HF_TMP/d")\",\"message_type\":\"DIGEST\",\"algorithm\":\"RSASSA_PSS_SHA_512\",\"key_version_id\":\"$R3_V2\""
expect_why 400 "32-byte"
head -c 4096 /dev/urandom >"$HF_TMP/m4096"
sap pss-raw-4096 "$r3_ID" asymmetric-sign \
    "\"message\":\"$(b64 "$HF_TMP/m4096")\",\"message_type\":\"RAW\",\"algorithm\":\"RSASSA_PSS_SHA_512\""
expect 200
unb64 signature "$HF_TMP/sig4096"
openssl dgst -sha512 -sigopt rsa_padding_mode:pss -sigopt rsa_pss_saltlen:digest \
    -verify "$HF_TMP/r3.pem" -signature "$HF_TMP/sig4096" "$HF_TMP/m4096" >/dev/null 2>&1 ||
    hf_fail "OpenSSL does not verify a 4096-byte RAW message's signature"
head -c 4097 /dev/urandom >"$HF_TMP/m4097"
sap pss-raw-4097 "$r3_ID" asymmetric-sign \
    "\"message\":\"$(b64 "$HF_TMP/m4097")\",\"message_type\":\"RAW\",\"algorithm\":\"RSASSA_PSS_SHA_256\""
expect 400
sap pss-type "$r3_ID" asymmetric-sign "\"message\":\"$MSG\",\"message_type\":\"raw\",\"algorithm\":\"RSASSA_PSS_SHA_256\""
expect_why 400 "message_type"
sap pss-no-type "$r3_ID" asymmetric-sign "\"message\":\"$MSG\",\"algorithm\":\"RSASSA_PSS_SHA_256\""
expect_why 400 "message_type"
sap pss-sha1 "$r3_ID" asymmetric-sign "\"message\":\"$MSG\",\"message_type\":\"RAW\",\"algorithm\":\"RSASSA_PSS_SHA_1\""
expect_why 400 "algorithm"
sap pss-oaep-alg "$r3_ID" asymmetric-sign "\"message\":\"$MSG\",\"message_type\":\"RAW\",\"algorithm\":\"RSAES_OAEP_SHA_256\""
expect_why 400 "algorithm"
sap pss-no-message "$r3_ID" asymmetric-sign "\"message_type\":\"RAW\",\"algorithm\":\"RSASSA_PSS_SHA_256\""
expect_why 400 "message"
sap pss-verify-no-version "$r3_ID" asymmetric-verify \
    "\"signature\":\"$SIG\",\"message\":\"$MSG\",\"message_type\":\"RAW\",\"algorithm\":\"RSASSA_PSS_SHA_256\""
expect_why 400 "key_version_id"
sap pss-verify-b64 "$r3_ID" asymmetric-verify \
    "\"signature\":\"${SIG%?}\",\"message\":\"$MSG\",\"message_type\":\"RAW\",\"algorithm\":\"RSASSA_PSS_SHA_256\",\"key_version_id\":\"$R3_V2\""
expect 400
# verify_false TAG SIGNATURE_FILE MESSAGE VERSION: 200 valid:false
verify_false() {
    sap "$1" "$r3_ID" asymmetric-verify \
        "\"signature\":\"$(b64 "$2")\",\"message\":\"$3\",\"message_type\":\"RAW\",\"algorithm\":\"RSASSA_PSS_SHA_256\",\"key_version_id\":\"$4\""
    expect 200 VERIFY-FALSE
    check "$(json valid)" false "$RID: a bad signature"
}
python3 -c 'import sys; b = bytearray(open(sys.argv[1], "rb").read()); b[100] ^= 0x80
open(sys.argv[2], "wb").write(b)' "$HF_TMP/sig" "$HF_TMP/sig-bad"
verify_false pss-tampered "$HF_TMP/sig-bad" "$MSG" "$R3_V2"
head -c 1000 /dev/urandom >"$HF_TMP/msg2"
verify_false pss-other-message "$HF_TMP/sig" "$(b64 "$HF_TMP/msg2")" "$R3_V2"
head -c 383 "$HF_TMP/sig" >"$HF_TMP/sig-short"
verify_false pss-short "$HF_TMP/sig-short" "$MSG" "$R3_V2"
: >"$HF_TMP/sig-empty"
verify_false pss-empty "$HF_TMP/sig-empty" "$MSG" "$R3_V2"
verify_false pss-other-version "$HF_TMP/sig" "$MSG" "$R3_V1"
# A named old version signs as itself: OpenSSL verifies it with v1's key, not v2's.
sap pss-v1 "$r3_ID" asymmetric-sign \
    "\"message\":\"$MSG\",\"message_type\":\"RAW\",\"algorithm\":\"RSASSA_PSS_SHA_256\",\"key_version_id\":\"$R3_V1\""
expect 200
check "$(json key_version_id)" "$R3_V1" "$RID: the version named"
unb64 signature "$HF_TMP/sig1"
openssl dgst -sha256 -sigopt rsa_padding_mode:pss -sigopt rsa_pss_saltlen:digest \
    -verify "$HF_TMP/r3v1.pem" -signature "$HF_TMP/sig1" "$HF_TMP/msg" >/dev/null 2>&1 ||
    hf_fail "$RID: v1's signature does not verify with v1's public key"
! openssl dgst -sha256 -sigopt rsa_padding_mode:pss -sigopt rsa_pss_saltlen:digest \
    -verify "$HF_TMP/r3.pem" -signature "$HF_TMP/sig1" "$HF_TMP/msg" >/dev/null 2>&1 ||
    hf_fail "$RID: v1's signature verifies with v2's public key"

# ---- 403: usage mask, key type, blocked link, state ----
A256='"algorithm":"RSAES_OAEP_SHA_256"'
P256='"algorithm":"RSASSA_PSS_SHA_256","message_type":"RAW"'
RSIG_V1=$(version_uuid rsig 1)
RENC_V1=$(version_uuid renc 1)
sap usage-encrypt "$rsig_ID" asymmetric-encrypt "\"plaintext\":\"AAAA\",$A256"
expect_why 403 "usage"
sap usage-decrypt "$rsig_ID" asymmetric-decrypt "\"ciphertext\":\"$CT\",$A256,\"key_version_id\":\"$RSIG_V1\""
expect_why 403 "usage"
sap usage-sign "$renc_ID" asymmetric-sign "\"message\":\"$MSG\",$P256"
expect_why 403 "usage"
sap usage-verify "$renc_ID" asymmetric-verify "\"signature\":\"$SIG\",\"message\":\"$MSG\",$P256,\"key_version_id\":\"$RENC_V1\""
expect_why 403 "usage"
# Each usage that is there works.
sap usage-sign-ok "$rsig_ID" asymmetric-sign "\"message\":\"$MSG\",$P256"
expect 200
sap usage-encrypt-ok "$renc_ID" asymmetric-encrypt "\"plaintext\":\"AAAA\",$A256"
expect 200
for r in asymmetric-encrypt asymmetric-sign get-public-key; do
    case $r in
    asymmetric-encrypt) m="\"plaintext\":\"AAAA\",$A256" ;;
    asymmetric-sign) m="\"message\":\"$MSG\",$P256" ;;
    *) m= ;;
    esac
    sap aes-key "$aes_ID" "$r" "$m"
    expect_why 403 "not an RSA key"
    sap blocked "$rblk_ID" "$r" "$m"
    expect_why 403 "blocked"
done
RBLK_V1=$(version_uuid rblk 1)
sap blocked "$rblk_ID" asymmetric-decrypt "\"ciphertext\":\"$CT\",$A256,\"key_version_id\":\"$RBLK_V1\""
expect_why 403 "blocked"
sap blocked "$rblk_ID" asymmetric-verify "\"signature\":\"$SIG\",\"message\":\"$MSG\",$P256,\"key_version_id\":\"$RBLK_V1\""
expect_why 403 "blocked"

# A pre-active key does nothing yet (KMIP), though its public key can be read.
RPRE_V1=$(version_uuid rpre 1)
sap pre-encrypt "$rpre_ID" asymmetric-encrypt "\"plaintext\":\"AAAA\",$A256"
expect_why 403 "state"
sap pre-sign "$rpre_ID" asymmetric-sign "\"message\":\"$MSG\",$P256"
expect_why 403 "state"
sap pre-decrypt "$rpre_ID" asymmetric-decrypt "\"ciphertext\":\"$CT\",$A256,\"key_version_id\":\"$RPRE_V1\""
expect_why 403 "state"
pubkey rpre "$rpre_ID"

# A deactivated key keeps old data readable: decrypt, verify and its public key, nothing new.
pubkey rdeact "$rdeact_ID"
openssl pkeyutl -encrypt -pubin -inkey "$HF_TMP/rdeact.pem" -pkeyopt rsa_padding_mode:oaep \
    -pkeyopt rsa_oaep_md:sha256 -pkeyopt rsa_mgf1_md:sha256 -in "$HF_TMP/pt" -out "$HF_TMP/ct-d"
sap deact-sign-before "$rdeact_ID" asymmetric-sign "\"message\":\"$MSG\",$P256"
expect 200
SIG_D=$(json signature)
hf key deactivate rdeact
sleep "${SAP_CHANGE_S:-1.5}"
sap deact-encrypt "$rdeact_ID" asymmetric-encrypt "\"plaintext\":\"AAAA\",$A256"
expect_why 403 "state"
sap deact-sign "$rdeact_ID" asymmetric-sign "\"message\":\"$MSG\",$P256"
expect_why 403 "state"
sap deact-decrypt "$rdeact_ID" asymmetric-decrypt "\"ciphertext\":\"$(b64 "$HF_TMP/ct-d")\",$A256,\"key_version_id\":\"$RDEACT_V1\""
expect 200
check "$(json plaintext)" "$(b64 "$HF_TMP/pt")" "$RID: a deactivated key's plaintext"
sap deact-verify "$rdeact_ID" asymmetric-verify "\"signature\":\"$SIG_D\",\"message\":\"$MSG\",$P256,\"key_version_id\":\"$RDEACT_V1\""
expect 200
check "$(json valid)" true "$RID: a deactivated key verifies"
pubkey rdeact2 "$rdeact_ID"
cmp -s "$HF_TMP/rdeact.pem" "$HF_TMP/rdeact2.pem" || hf_fail "a deactivated key's public key changed"

# ---- the audit records: one per call, with SAP's ids; no plaintext in the log ----
hf_gateway_stop || hf_fail "holdfastd did not stop cleanly"
python3 - "$HOLDFAST_STATE_DIR/audit.log" "$AUDIT_EXPECT" "$SAP_TENANT" "$PIN" "$(b64 "$HF_TMP/pt")" <<'PY' || hf_fail "the audit records are not what the calls did"
import json, os, sys
sys.path.insert(0, os.environ["top_srcdir"] + "/tests/integration")
import auditlog
log, expect, tenant, pin, pt = sys.argv[1:6]
if pt.encode() in open(log, "rb").read():
    sys.exit("a plaintext reached the audit log")
by_rid = {}
for r in auditlog.records(log):
    if r.get("api") != "sap-hyok":
        continue
    rid = (r.get("fields") or {}).get("sap_request_id")
    if rid:
        by_rid.setdefault(rid, []).append(r)
bad = []
n = 0
for line in open(expect):
    rid, route, want = line.split()
    n += 1
    got = by_rid.get(rid, [])
    if not got:
        bad.append("%s: no record" % rid)
        continue
    r = max(got, key=lambda r: r.get("seq", 0))
    f = r.get("fields") or {}
    if route not in (r.get("op") or ""):
        bad.append("%s: op %r, want %s" % (rid, r.get("op"), route))
    # A signature that does not verify is an answer, but the module's record of the operation
    # says it failed.
    if r.get("ok") is not (want == "OK"):
        bad.append("%s: ok %r, want %s: %s" % (rid, r.get("ok"), want, r))
    for k, v in (("sap_tenant_id", tenant), ("sap_group_id", "g1"), ("sap_user_type", "USER_DEV")):
        if f.get(k) != v:
            bad.append("%s: field %s %r, want %r" % (rid, k, f.get(k), v))
    if pin not in json.dumps(r):
        bad.append("%s: no certificate fingerprint: %s" % (rid, r))
for b in bad[:20]:
    print(b, file=sys.stderr)
print("audit: %d sap-hyok calls checked" % n, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
"$HF_CLI" audit verify >"$HF_TMP/verify.out" 2>&1 || hf_fail "holdfast audit verify: $(cat "$HF_TMP/verify.out")"
echo "sap-asym: $N calls"
