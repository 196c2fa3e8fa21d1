#!/bin/sh
# The sap-hyok plugin end to end: holdfastd on a TLS listener that requires client certificates
# chained to a CA the test makes (SAP Cloud Root CA's stand-in), over a key store made with the
# CLI, keys linked into keystores as KEYSTORE_ID/KEY_UUID.
#
# Shows, one case per rule of specs/sap-hyok.md: keystore and key get-metadata (AES and RSA specs
# and key_ops); get-versions-metadata paging (skip, limit, total, key_version_id, created_after,
# bad values); symmetric-encrypt/-decrypt round trips with and without aad, fresh IVs, the
# ciphertext's length, a rotated key decrypting old ciphertexts by version UUID, the current
# version only when none is named, an encrypt naming an old version still using the current;
# generate-random-bytes and its bounds; authentication (no client certificate and another CA's:
# the handshake fails; unpinned: 401; the second pin; pin rotation on SIGHUP); the prefix moved
# to the root on SIGHUP; tenant and group
# allowlist (403); unknown keystore, key, version, a key of another keystore, a destroyed key
# (404); a deactivated key (encrypt 403, decrypt still 200) and a blocked link (every crypto
# call 403), both get-metadata 200 Disabled with no key_ops; bad JSON, base64, types, a caller
# IV, missing request_metadata or tenant, oversized fields (400); a usage mask without encrypt
# and a pre-active key (403; Enabled with DECRYPT alone, Disabled); tampered ciphertext, tag, IV,
# other aad, the wrong version (400); an oversized body (413), another method (405), unknown
# routes (404); the audit record's fields, refusals before authentication in the summary
# records, no plaintext in any log, `holdfast audit verify`; `[audit] success_events.sap-hyok =
# no` dropping successes but keeping failures; a store outage (503). The asymmetric routes are
# sap-asym.sh's (it shares sap-lib.sh). Config errors: a keystore without pins, an id that is no
# UUID, a pin that is no SHA-256.
. "${top_srcdir:-.}/tests/integration/lib.sh"
. "${top_srcdir:-.}/tests/integration/sap-lib.sh"

sap_need
hf_store_setup

hf() { "$HF_CLI" "$@" >>"$HF_TMP/cli.log" 2>&1 || hf_fail "holdfast $*: $(tail -n 3 "$HF_TMP/cli.log")"; }
CHANGE_MS=${SAP_CHANGE_MS:-1500}
settle() { sleep "$(echo "$CHANGE_MS" | awk '{print $1/1000}')"; }

# ---- PKI: the CA, the server, SAP DC's client certificates ----
sap_pki
sap_client dc1      # pinned on keystore KS
sap_client dc2      # its rotation: pinned second, later first
sap_client unpinned # chains to the CA, pinned nowhere
sap_client stranger other
PIN1=$(sap_pin dc1)
PIN2=$(sap_pin dc2)

# ---- keys, linked into keystores ----
KS=$("$HF_CLI" uuid)
KS2=$("$HF_CLI" uuid)
hf link type add sap-hyok
hf key create aes1
hf key create aesoff
hf key create aesblk
hf key create other
A1=$(sap_key_uuid aes1)
AOFF=$(sap_key_uuid aesoff)
ABLK=$(sap_key_uuid aesblk)
AOTHER=$(sap_key_uuid other)
hf link add sap-hyok "$KS/$A1" aes1
hf link add sap-hyok "$KS/$AOFF" aesoff
hf link add sap-hyok "$KS/$ABLK" aesblk
# Linked in the other keystore only: not a key of KS.
hf link add sap-hyok "$KS2/$AOTHER" other

# ---- holdfastd ----
PORT=$(hf_free_port)
SAP_PORT=$(hf_free_port)
CONF="$HF_TMP/holdfastd.conf"
write_conf() { # SUCCESS_EVENTS
    cat >"$CONF" <<EOC
$(hf_gateway_section "sap-hyok" 64k "127.0.0.1:$PORT")

[audit]
success_events.sap-hyok = ${1:-yes}

$(sap_listener "$SAP_PORT")

[plugin:sap-hyok]
path = $SAP_PLUGIN

[sap-hyok:$KS]
tenant = $SAP_TENANT
pins = $PIN1, $PIN2

[sap-hyok:$KS2]
tenant = tenant-2
groups = g1, g2
pins = $PIN1
EOC
}
write_conf yes
# Config errors name the option and the keystore: a keystore without pins, an id that is no UUID,
# a pin that is no SHA-256.
sed "/^pins = $PIN1\$/d" "$CONF" >"$HF_TMP/nopin.conf"
# (the whole is checked when the plugin starts, which -t does not do)
hf_expect_exit 1 timeout 30 "$HOLDFASTD" -f -c "$HF_TMP/nopin.conf"
cat "$HF_ERR" "$HF_OUT" "$HF_TMP/holdfastd.log" 2>/dev/null | grep -q "\[sap-hyok:$KS2\]: pins is required" ||
    hf_fail "a keystore without pins: $(cat "$HF_ERR" "$HF_TMP/holdfastd.log")"
sed "s/^\[sap-hyok:$KS2\]\$/[sap-hyok:store-2]/" "$CONF" >"$HF_TMP/nouuid.conf"
hf_expect_exit 1 "$HOLDFASTD" -t -c "$HF_TMP/nouuid.conf"
grep -q "a keystore id is a UUID" "$HF_ERR" || hf_fail "a keystore id that is no UUID: $(cat "$HF_ERR")"
sed "s/^pins = $PIN1\$/pins = $PIN1:00/" "$CONF" >"$HF_TMP/badpin.conf"
hf_expect_exit 1 "$HOLDFASTD" -t -c "$HF_TMP/badpin.conf"
grep -q "pins: item 1 is not a SHA-256 fingerprint" "$HF_ERR" || hf_fail "a bad pin: $(cat "$HF_ERR")"
hf_expect_exit 0 "$HOLDFASTD" -t -c "$CONF"
hf_gateway_start "http://127.0.0.1:$PORT" "$HOLDFASTD" -f -c "$CONF"

K="/keystores/$KS/keys/$A1"
b64() { printf '%s' "$1" | base64 -w0; }
# b64len N: N random bytes, base64.
b64len() { head -c "$1" /dev/urandom | base64 -w0; }
# flip B64: the same bytes with the first one changed.
flip() { python3 -c 'import base64,sys; b=bytearray(base64.b64decode(sys.argv[1])); b[0]^=1; print(base64.b64encode(bytes(b)).decode())' "$1"; }
declen() { python3 -c 'import base64,sys; print(len(base64.b64decode(sys.argv[1])))' "$1"; }

# ---- keystore get-metadata ----
SAP_REQUEST_ID=req-ks-1
sap_call dc1 "/keystores/$KS/get-metadata" "$(sap_md)"
sap_expect 200
check "$(sap_json keystore_id)" "$KS" "keystore_id"
check "$(sap_json sap_tenant_id)" "$SAP_TENANT" "sap_tenant_id"
check "$(sap_json state)" ACTIVE "keystore state"
# A keystore id in upper case is the same keystore.
sap_call dc1 "/keystores/$(echo "$KS" | tr a-f A-F)/get-metadata" "$(sap_md)"
sap_expect 200
# An unknown keystore, and a keystore id that is no UUID: 404 (before authentication).
sap_call dc1 "/keystores/$("$HF_CLI" uuid)/get-metadata" "$(sap_md)"
sap_expect 404
sap_call dc1 "/keystores/nope/get-metadata" "$(sap_md)"
sap_expect 404

# ---- key get-metadata ----
SAP_REQUEST_ID=req-md-1
sap_call dc1 "$K/get-metadata" "$(sap_md)"
sap_expect 200
check "$(sap_json key_id)" "$A1" "key_id"
check "$(sap_json state)" Enabled "key state"
check "$(sap_json key_spec)" AES_256 "key_spec"
check "$(sap_json key_ops)" '["ENCRYPT", "DECRYPT"]' "key_ops"
V1=$(sap_json key_version_id)
[ -n "$V1" ] || hf_fail "get-metadata: no key_version_id"
hf key create rsa1 --alg RSA-3072
R1=$(sap_key_uuid rsa1)
hf link add sap-hyok "$KS/$R1" rsa1
sap_call dc1 "/keystores/$KS/keys/$R1/get-metadata" "$(sap_md)"
sap_expect 200
check "$(sap_json key_spec)" RSA_3072 "an RSA key's key_spec"
check "$(sap_json key_ops)" '["ENCRYPT", "DECRYPT", "SIGN", "VERIFY"]' "an RSA key's key_ops"
# Unknown key, a key of another keystore, an external key id that is no UUID: 404.
sap_call dc1 "/keystores/$KS/keys/$("$HF_CLI" uuid)/get-metadata" "$(sap_md)"
sap_expect 404
sap_call dc1 "/keystores/$KS/keys/$AOTHER/get-metadata" "$(sap_md)"
sap_expect 404
sap_call dc1 "/keystores/$KS/keys/aes1/get-metadata" "$(sap_md)"
sap_expect 404
# An AES key cannot do the RSA routes' work, nor an RSA key symmetric-encrypt (403).
sap_call dc1 "/keystores/$KS/keys/$R1/symmetric-encrypt" "$(sap_md '"plaintext":"dGVzdGluZw=="')"
sap_expect 403

# ---- symmetric-encrypt / -decrypt ----
PT=$(b64 "SAP HYOK data key")
sap_call dc1 "$K/symmetric-encrypt" "$(sap_md "\"plaintext\":\"$PT\"")"
sap_expect 200
CT0=$(sap_json ciphertext) IV0=$(sap_json iv) TAG0=$(sap_json tag)
check "$(sap_json key_version_id)" "$V1" "encrypt names the current version"
check "$(declen "$CT0")" 17 "the ciphertext is as long as the plaintext"
check "$(declen "$IV0")" 12 "a 96-bit IV"
check "$(declen "$TAG0")" 16 "a 128-bit tag"
check "$(sap_json aad)" "" "no aad in, no aad out"
dec() { # CT IV TAG [AAD] [VERSION]: symmetric-decrypt
    _m="\"ciphertext\":\"$1\",\"iv\":\"$2\",\"tag\":\"$3\""
    [ -z "${4:-}" ] || _m="$_m,\"aad\":\"$4\""
    [ -z "${5:-}" ] || _m="$_m,\"key_version_id\":\"$5\""
    sap_call dc1 "$K/symmetric-decrypt" "$(sap_md "$_m")"
}
dec "$CT0" "$IV0" "$TAG0" "" "$V1"
sap_expect 200
check "$(sap_json plaintext)" "$PT" "decrypt gives the plaintext back"
# Without key_version_id: the current version (the spec's Decision).
dec "$CT0" "$IV0" "$TAG0"
sap_expect 200
check "$(sap_json plaintext)" "$PT" "decrypt with the current version"
# Every IV is fresh.
sap_call dc1 "$K/symmetric-encrypt" "$(sap_md "\"plaintext\":\"$PT\"")"
[ "$(sap_json iv)" != "$IV0" ] || hf_fail "two encryptions drew the same IV"
# With aad: it comes back, and the decrypt needs it.
AAD=$(b64 sap)
sap_call dc1 "$K/symmetric-encrypt" "$(sap_md "\"plaintext\":\"$PT\",\"aad\":\"$AAD\"")"
sap_expect 200
CTA=$(sap_json ciphertext) IVA=$(sap_json iv) TAGA=$(sap_json tag)
check "$(sap_json aad)" "$AAD" "encrypt echoes the aad"
dec "$CTA" "$IVA" "$TAGA" "$AAD" "$V1"
sap_expect 200
check "$(sap_json plaintext)" "$PT" "decrypt with aad"
# Any changed byte, or other aad: 400.
dec "$CTA" "$IVA" "$TAGA" "" "$V1"
sap_expect 400
dec "$CTA" "$IVA" "$TAGA" "$(b64 sAp)" "$V1"
sap_expect 400
dec "$(flip "$CT0")" "$IV0" "$TAG0" "" "$V1"
sap_expect 400
dec "$CT0" "$(flip "$IV0")" "$TAG0" "" "$V1"
sap_expect 400
dec "$CT0" "$IV0" "$(flip "$TAG0")" "" "$V1"
sap_expect 400
# An IV or tag of the wrong length: 400.
dec "$CT0" "$(b64len 16)" "$TAG0" "" "$V1"
sap_expect 400
dec "$CT0" "$IV0" "$(b64len 12)" "" "$V1"
sap_expect 400
# The caller's IV on encrypt: 400 (the server draws every IV).
sap_call dc1 "$K/symmetric-encrypt" "$(sap_md "\"plaintext\":\"$PT\",\"iv\":\"$IV0\"")"
sap_expect 400
# Bad JSON, bad base64, a missing field, a wrong type, no request_metadata or tenant: 400.
sap_call dc1 "$K/symmetric-encrypt" '{"request_metadata":{"sap_tenant_id":"tenant-1"},'
sap_expect 400
sap_call dc1 "$K/symmetric-encrypt" "$(sap_md '"plaintext":"not base64!"')"
sap_expect 400
sap_call dc1 "$K/symmetric-encrypt" "$(sap_md '"plaintext":"dGVzdGluZw"')"
sap_expect 400
sap_call dc1 "$K/symmetric-encrypt" "$(sap_md)"
sap_expect 400
sap_call dc1 "$K/symmetric-encrypt" "$(sap_md '"plaintext":7')"
sap_expect 400
sap_call dc1 "$K/symmetric-encrypt" "{\"plaintext\":\"$PT\"}"
sap_expect 400
sap_call dc1 "$K/symmetric-encrypt" "{\"request_metadata\":{\"sap_group_id\":\"g\"},\"plaintext\":\"$PT\"}"
sap_expect 400
# Oversized fields: plaintext over 64 KiB, aad over 8 KiB (400); at the caps they pass.
sap_call dc1 "$K/symmetric-encrypt" "$(sap_md "\"plaintext\":\"$(b64len 65537)\"")"
sap_expect 400
sap_call dc1 "$K/symmetric-encrypt" "$(sap_md "\"plaintext\":\"$(b64len 65536)\",\"aad\":\"$(b64len 8192)\"")"
sap_expect 200
sap_call dc1 "$K/symmetric-encrypt" "$(sap_md "\"plaintext\":\"$PT\",\"aad\":\"$(b64len 8193)\"")"
sap_expect 400

# ---- rotation: old ciphertexts decrypt by their version's UUID ----
hf key rotate aes1
settle
sap_call dc1 "$K/get-metadata" "$(sap_md)"
V2=$(sap_json key_version_id)
[ -n "$V2" ] && [ "$V2" != "$V1" ] || hf_fail "rotation gave no new current version ($V2)"
dec "$CT0" "$IV0" "$TAG0" "" "$V1"
sap_expect 200
check "$(sap_json plaintext)" "$PT" "the rotated key decrypts version 1's ciphertext"
# The current version only, when none is named: version 1's ciphertext fails (400).
dec "$CT0" "$IV0" "$TAG0"
sap_expect 400
sap_call dc1 "$K/symmetric-encrypt" "$(sap_md "\"plaintext\":\"$PT\"")"
sap_expect 200
check "$(sap_json key_version_id)" "$V2" "new encryptions use the new version"
CT2=$(sap_json ciphertext) IV2=$(sap_json iv) TAG2=$(sap_json tag)
# Even when the body names an old version (the spec's encrypt request names none: ignored).
sap_call dc1 "$K/symmetric-encrypt" "$(sap_md "\"plaintext\":\"$PT\",\"key_version_id\":\"$V1\"")"
sap_expect 200
check "$(sap_json key_version_id)" "$V2" "an encrypt naming version 1"
# The wrong version: 400; an unknown one: 404.
dec "$CT2" "$IV2" "$TAG2" "" "$V1"
sap_expect 400
dec "$CT2" "$IV2" "$TAG2" "" "$V2"
sap_expect 200
dec "$CT2" "$IV2" "$TAG2" "" "$("$HF_CLI" uuid)"
sap_expect 404
hf key rotate aes1
settle

# ---- get-versions-metadata ----
vm() { sap_call dc1 "$K/get-versions-metadata" "$(sap_md "$1")"; }
vm ""
sap_expect 200
check "$(sap_json total)" 3 "three versions"
check "$(sap_json skip)" 0 "skip's default"
check "$(sap_json limit)" 10 "limit's default"
check "$(sap_json resources.0.id)" "$V1" "oldest first"
check "$(sap_json resources.1.id)" "$V2" "then version 2"
V3=$(sap_json resources.2.id)
CREATED1=$(sap_json resources.0.created_at)
echo "$CREATED1" | grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$' ||
    hf_fail "created_at is not RFC 3339: $CREATED1"
vm '"skip":1,"limit":1'
sap_expect 200
check "$(sap_json total)" 3 "the total ignores paging"
check "$(sap_json skip)" 1 "skip echoed"
check "$(sap_json limit)" 1 "limit echoed"
check "$(sap_json resources)" "[{\"id\": \"$V2\", \"created_at\": \"$(sap_json resources.0.created_at)\"}]" "one page of one"
vm '"skip":5'
sap_expect 200
check "$(sap_json resources)" "[]" "a page past the end"
vm "\"key_version_id\":\"$V3\""
sap_expect 200
check "$(sap_json total)" 1 "key_version_id filters"
check "$(sap_json resources.0.id)" "$V3" "key_version_id's version"
vm '"created_after":"1970-01-01T00:00:00Z"'
check "$(sap_json total)" 3 "created_after the epoch"
vm '"created_after":"9999-12-31T23:59:59Z"'
sap_expect 200
check "$(sap_json total)" 0 "created_after the far future"
vm "\"key_version_id\":\"$("$HF_CLI" uuid)\""
sap_expect 404
for bad in '"limit":0' '"limit":101' '"skip":-1' '"skip":"1"' '"created_after":"yesterday"'; do
    vm "$bad"
    sap_expect 400
done

# ---- generate-random-bytes ----
sap_call dc1 "$K/generate-random-bytes" "$(sap_md '"length":32')"
sap_expect 200
RPT=$(sap_json plaintext)
check "$(declen "$RPT")" 32 "32 random bytes"
check "$(sap_json key_version_id)" "$V3" "sealed under the current version"
dec "$(sap_json ciphertext)" "$(sap_json iv)" "$(sap_json tag)" "" "$V3"
sap_expect 200
check "$(sap_json plaintext)" "$RPT" "the data key's ciphertext opens to its plaintext"
sap_call dc1 "$K/generate-random-bytes" "$(sap_md '"length":4096')"
sap_expect 200
for bad in '"length":0' '"length":4097' '"length":"32"' '"length":1.5' ''; do
    sap_call dc1 "$K/generate-random-bytes" "$(sap_md "$bad")"
    sap_expect 400
done

# ---- authentication: mutual TLS, then the keystore's pins ----
# No client certificate, or one from another CA: the handshake fails.
sap_call "" "/keystores/$KS/get-metadata" "$(sap_md)"
case $CODE in curl-exit-*) ;; *) hf_fail "no client certificate: HTTP $CODE, want a failed handshake" ;; esac
sap_call stranger "/keystores/$KS/get-metadata" "$(sap_md)"
case $CODE in curl-exit-*) ;; *) hf_fail "another CA's certificate: HTTP $CODE, want a failed handshake" ;; esac
# A certificate of the CA that no keystore pins: 401, on every route.
sap_call unpinned "/keystores/$KS/get-metadata" "$(sap_md)"
sap_expect 401
sap_call unpinned "$K/symmetric-encrypt" "$(sap_md "\"plaintext\":\"$PT\"")"
sap_expect 401
# The second pin (a rotation under way) works as the first.
sap_call dc2 "$K/symmetric-encrypt" "$(sap_md "\"plaintext\":\"$PT\"")"
sap_expect 200
# dc2 is not pinned on KS2.
sap_call dc2 "/keystores/$KS2/get-metadata" "$(SAP_TENANT=tenant-2 SAP_GROUP=g1 sap_md)"
sap_expect 401
# A burst from one client, within a second: its refusals share summary records (checked below).
BURST=$(curl -sS -w '%{http_code} ' --cacert "$HF_PKI/sap.pem" \
    --cert "$HF_PKI/unpinned.pem" --key "$HF_PKI/unpinned.key" -H 'Content-Type: application/json' \
    --data-binary "$(sap_md)" $(for i in 1 2 3 4 5 6; do
        printf ' -o /dev/null https://127.0.0.1:%s%s/keystores/%s/get-metadata' "$SAP_PORT" "$SAP_PREFIX" "$KS"; done))
check "$BURST" "401 401 401 401 401 401 " "a burst of unpinned calls"

# ---- tenant and group: 403 ----
sap_call dc1 "$K/symmetric-encrypt" "$(SAP_TENANT=tenant-2 sap_md "\"plaintext\":\"$PT\"")"
sap_expect 403
sap_call dc1 "/keystores/$KS/get-metadata" "$(SAP_TENANT=TENANT-1 sap_md)"
sap_expect 403
K2="/keystores/$KS2/keys/$AOTHER"
sap_call dc1 "$K2/symmetric-encrypt" "$(SAP_TENANT=tenant-2 SAP_GROUP=g2 sap_md "\"plaintext\":\"$PT\"")"
sap_expect 200
sap_call dc1 "$K2/symmetric-encrypt" "$(SAP_TENANT=tenant-2 SAP_GROUP=g3 sap_md "\"plaintext\":\"$PT\"")"
sap_expect 403
sap_call dc1 "$K2/symmetric-encrypt" "$(SAP_TENANT=tenant-2 sap_md "\"plaintext\":\"$PT\"")"
sap_expect 403
# Keystore KS has no allowlist: any group passes.
sap_call dc1 "$K/symmetric-encrypt" "$(SAP_GROUP=anything sap_md "\"plaintext\":\"$PT\"")"
sap_expect 200

# ---- state: a deactivated key, a blocked link ----
KOFF="/keystores/$KS/keys/$AOFF"
sap_call dc1 "$KOFF/symmetric-encrypt" "$(sap_md "\"plaintext\":\"$PT\"")"
sap_expect 200
OCT=$(sap_json ciphertext) OIV=$(sap_json iv) OTAG=$(sap_json tag) OV=$(sap_json key_version_id)
hf key deactivate aesoff
settle
sap_call dc1 "$KOFF/symmetric-encrypt" "$(sap_md "\"plaintext\":\"$PT\"")"
sap_expect 403
sap_call dc1 "$KOFF/generate-random-bytes" "$(sap_md '"length":16')"
sap_expect 403
sap_call dc1 "$KOFF/get-metadata" "$(sap_md)"
sap_expect 200
check "$(sap_json state)" Disabled "a deactivated key's state"
check "$(sap_json key_ops)" "[]" "a deactivated key's key_ops"
# KMIP: a deactivated key still decrypts what it encrypted.
sap_call dc1 "$KOFF/symmetric-decrypt" "$(sap_md "\"ciphertext\":\"$OCT\",\"iv\":\"$OIV\",\"tag\":\"$OTAG\",\"key_version_id\":\"$OV\"")"
sap_expect 200
KBLK="/keystores/$KS/keys/$ABLK"
sap_call dc1 "$KBLK/symmetric-encrypt" "$(sap_md "\"plaintext\":\"$PT\"")"
sap_expect 200
BCT=$(sap_json ciphertext) BIV=$(sap_json iv) BTAG=$(sap_json tag)
hf link block sap-hyok "$KS/$ABLK"
settle
sap_call dc1 "$KBLK/symmetric-encrypt" "$(sap_md "\"plaintext\":\"$PT\"")"
sap_expect 403
sap_call dc1 "$KBLK/symmetric-decrypt" "$(sap_md "\"ciphertext\":\"$BCT\",\"iv\":\"$BIV\",\"tag\":\"$BTAG\"")"
sap_expect 403
sap_call dc1 "$KBLK/generate-random-bytes" "$(sap_md '"length":16')"
sap_expect 403
SAP_REQUEST_ID=req-blocked-md
sap_call dc1 "$KBLK/get-metadata" "$(sap_md)"
sap_expect 200
check "$(sap_json state)" Disabled "a blocked key's state"
check "$(sap_json key_ops)" "[]" "a blocked key's key_ops"
check "$(sap_json key_id)" "$ABLK" "a blocked key's key_id"
# Listing versions is no crypto call: it still answers.
sap_call dc1 "$KBLK/get-versions-metadata" "$(sap_md)"
sap_expect 200
check "$(sap_json total)" 1 "a blocked key's versions"
hf link unblock sap-hyok "$KS/$ABLK"
settle
sap_call dc1 "$KBLK/symmetric-decrypt" "$(sap_md "\"ciphertext\":\"$BCT\",\"iv\":\"$BIV\",\"tag\":\"$BTAG\"")"
sap_expect 200
check "$(sap_json plaintext)" "$PT" "unblocked, the key decrypts again"

# A usage mask without encrypt: 403 on encrypt and random bytes, decrypt alone in key_ops; a
# pre-active key is Disabled.
hf key create aesdec --usage decrypt
ADEC=$(sap_key_uuid aesdec)
hf link add sap-hyok "$KS/$ADEC" aesdec
sap_call dc1 "/keystores/$KS/keys/$ADEC/symmetric-encrypt" "$(sap_md "\"plaintext\":\"$PT\"")"
sap_expect 403
sap_call dc1 "/keystores/$KS/keys/$ADEC/generate-random-bytes" "$(sap_md '"length":16')"
sap_expect 403
sap_call dc1 "/keystores/$KS/keys/$ADEC/get-metadata" "$(sap_md)"
sap_expect 200
check "$(sap_json state)" Enabled "a decrypt-only key's state"
check "$(sap_json key_ops)" '["DECRYPT"]' "a decrypt-only key's key_ops"
hf key create aespre --state pre-active
APRE=$(sap_key_uuid aespre)
hf link add sap-hyok "$KS/$APRE" aespre
sap_call dc1 "/keystores/$KS/keys/$APRE/get-metadata" "$(sap_md)"
sap_expect 200
check "$(sap_json state)" Disabled "a pre-active key's state"
sap_call dc1 "/keystores/$KS/keys/$APRE/symmetric-encrypt" "$(sap_md "\"plaintext\":\"$PT\"")"
sap_expect 403

# A destroyed key is not found (404), on every route.
hf key create gone
AGONE=$(sap_key_uuid gone)
hf link add sap-hyok "$KS/$AGONE" gone
sap_call dc1 "/keystores/$KS/keys/$AGONE/get-metadata" "$(sap_md)"
sap_expect 200
hf key destroy gone --yes
settle
sap_call dc1 "/keystores/$KS/keys/$AGONE/get-metadata" "$(sap_md)"
sap_expect 404
sap_call dc1 "/keystores/$KS/keys/$AGONE/symmetric-encrypt" "$(sap_md "\"plaintext\":\"$PT\"")"
sap_expect 404

# ---- transport: 413, 405, 404 ----
python3 -c 'import sys; sys.stdout.write("{\"request_metadata\":{\"sap_tenant_id\":\"tenant-1\"},\"plaintext\":\"" + "A" * 131072 + "\"}")' >"$HF_TMP/big.json"
sap_call dc1 "$K/symmetric-encrypt" "@$HF_TMP/big.json"
sap_expect 413
sap_call dc1 "$K/symmetric-encrypt" "" -X GET
sap_expect 405
sap_call dc1 "$K/symmetric-encrypt" "" -X PUT
sap_expect 405
sap_call dc1 "$K/rotate" "$(sap_md)"
check "$CODE" 404 "an unknown route"
sap_call dc1 "/keystores/$KS/keys/$A1" "$(sap_md)"
check "$CODE" 404 "a key without a verb"
SAP_PREFIX=/api/v1/cckm/sap/hyok/v2 sap_call dc1 "/keystores/$KS/get-metadata" "$(sap_md)"
check "$CODE" 404 "another prefix"
SAP_REQUEST_ID=

# ---- the audit record: the spec's fields, on successes and failures ----
sap_audit "r[\"op\"] == \"keystore.get-metadata\" and f.get(\"sap_request_id\") == \"req-ks-1\" and f.get(\"sap_tenant_id\") == \"$SAP_TENANT\" and f.get(\"sap_user_type\") == \"USER_DEV\" and f.get(\"cert_sha256\") == \"$PIN1\" and f.get(\"keystore_id\") == \"$KS\"" ||
    hf_fail "no keystore.get-metadata record with the spec's fields"
sap_audit "r[\"op\"] == \"get-metadata\" and f.get(\"sap_request_id\") == \"req-blocked-md\"" ||
    hf_fail "no record of the blocked key's get-metadata"
sap_audit "r[\"op\"] == \"symmetric-encrypt\" and f.get(\"sap_group_id\") == \"g3\" and f.get(\"sap_tenant_id\") == \"tenant-2\"" ||
    hf_fail "the group refusal has no record with its fields"
sap_audit "r[\"op\"] == \"symmetric-encrypt\" and f.get(\"cert_sha256\") == \"$PIN2\"" ||
    hf_fail "no record names the second pin's certificate"
for log in "$HOLDFAST_STATE_DIR/audit.log" "$HF_TMP/holdfastd.log" "$HF_TMP/holdfastd.out"; do
    ! grep -q "$PT" "$log" || hf_fail "a plaintext reached $log"
    ! grep -q "$RPT" "$log" || hf_fail "a data key reached $log"
done
hf_expect_exit 0 "$HF_CLI" audit verify

# ---- pin rotation done: the old certificate's pin is gone (SIGHUP) ----
sed -i "s/^pins = $PIN1, $PIN2\$/pins = $PIN2/" "$CONF"
grep -q "^pins = $PIN2\$" "$CONF" || hf_fail "the config was not rewritten"
# The same reload moves the API to the root (prefix = ""): the old prefix is then a 404.
printf '\n[sap-hyok]\nprefix =\n' >>"$CONF"
kill -HUP "$HF_GW_PID"
settle
SAP_PREFIX=
sap_call dc1 "$K/symmetric-encrypt" "$(sap_md "\"plaintext\":\"$PT\"")"
sap_expect 401
sap_call dc2 "$K/symmetric-encrypt" "$(sap_md "\"plaintext\":\"$PT\"")"
sap_expect 200
SAP_PREFIX=/api/v1/cckm/sap/hyok/v1 sap_call dc2 "$K/symmetric-encrypt" "$(sap_md "\"plaintext\":\"$PT\"")"
check "$CODE" 404 "the old prefix after the move"
SAP_PREFIX=/api/v1/cckm/sap/hyok/v1

# ---- success events off for this API: failures are still recorded ----
hf_gateway_stop || hf_fail "holdfastd did not stop cleanly"
# Refusals before authentication (unpinned 401, unknown keystore 404) are counted in the summary
# records (written at the latest on SIGTERM), one per source and error, not a record each.
set -- $(hf_preauth_count "$HOLDFAST_STATE_DIR/audit.log" sap-hyok 401)
# Ten 401s: four single calls, each maybe in an interval of its own on a slow machine, and the
# burst of six, in one or two intervals: at most six records.
[ "$1" -ge 10 ] && [ "$2" -ge 1 ] && [ "$2" -le 6 ] ||
    hf_fail "the 401s before authentication: $1 counted in $2 summary records, want >= 10 in <= 6"
set -- $(hf_preauth_count "$HOLDFAST_STATE_DIR/audit.log" sap-hyok 404)
[ "$1" -ge 2 ] || hf_fail "the unknown keystores: $1 counted, want >= 2"
write_conf no
sed -i "s/^pins = $PIN1, $PIN2\$/pins = $PIN2/" "$CONF"
hf_gateway_start "http://127.0.0.1:$PORT" "$HOLDFASTD" -f -c "$CONF"
SAP_REQUEST_ID=req-quiet-ok
sap_call dc2 "$K/symmetric-encrypt" "$(sap_md "\"plaintext\":\"$PT\"")"
sap_expect 200
sap_call dc2 "$K/get-metadata" "$(sap_md)"
sap_expect 200
SAP_REQUEST_ID=req-quiet-fail
dec "$CT2" "$IV2" "$TAG2" "" "$V1"
sap_expect 401 # dc1 is no longer pinned: a refusal before authentication
sap_call dc2 "$K/symmetric-decrypt" "$(sap_md "\"ciphertext\":\"$(flip "$CT2")\",\"iv\":\"$IV2\",\"tag\":\"$TAG2\",\"key_version_id\":\"$V2\"")"
sap_expect 400
sap_call dc2 "$K/get-metadata" "$(SAP_TENANT=tenant-2 sap_md)"
sap_expect 403
hf_gateway_stop || hf_fail "holdfastd did not stop cleanly"
check "$(sap_audit_count 'f.get("sap_request_id") == "req-quiet-ok"')" 0 "successes recorded with success_events off"
# One record of the tampered decrypt: the failed key operation's own (the core's); the gateway
# writes its refusal record only when the key operation's record says ok (HF_GetLastAuditResult).
check "$(sap_audit_count 'f.get("sap_request_id") == "req-quiet-fail" and r["op"] == "symmetric-decrypt" and not r["ok"]')" 1 \
    "the tampered decrypt's failure records with success_events off"
check "$(sap_audit_count 'f.get("sap_request_id") == "req-quiet-fail" and r["op"] == "get-metadata"')" 1 "the tenant refusal's record"
hf_expect_exit 0 "$HF_CLI" audit verify

# ---- a store outage: 503, never a 403 or 404 that SAP DC would show as the key's state ----
hf_gateway_start "http://127.0.0.1:$PORT" "$HOLDFASTD" -f -c "$CONF"
sap_call dc2 "$K/symmetric-encrypt" "$(sap_md "\"plaintext\":\"$PT\"")"
sap_expect 200
DB=$(ls "$HOLDFAST_STATE_DIR"/*.db 2>/dev/null | head -n 1)
[ -n "$DB" ] || hf_fail "no SQLite store under $HOLDFAST_STATE_DIR"
# Overwritten in place with its WAL and index (the module keeps them open and mapped), as
# ekm.sh does: the next read of a link finds no database.
for f in "$DB" "$DB-wal" "$DB-shm"; do
    [ ! -f "$f" ] || dd if=/dev/urandom of="$f" bs=4096 count=8 conv=notrunc 2>/dev/null
done
settle
sap_call dc2 "$K/symmetric-encrypt" "$(sap_md "\"plaintext\":\"$PT\"")"
sap_expect 503
sap_call dc2 "$K/get-metadata" "$(sap_md)"
sap_expect 503

echo "sap.sh: all cases passed"
