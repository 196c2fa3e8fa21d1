#!/bin/sh
# The oci-ekms plugin end to end (specs/oci-ekms.md): holdfastd over TLS on loopback over a key
# store made with the CLI, a JWKS served over HTTPS (a CA the test makes) by jwt-token.py, and
# IAM identity domain (IDCS) client-credentials tokens the test mints as OCI would send them,
# or as an attacker would.
#
# Shows, one case per rule: every route's success (vault, key and version metadata, encrypt,
# decrypt, random bytes at vault and key level, 201); 401 for a missing, forged, expired,
# wrong-audience or wrong-issuer token, and a key the domain rotated in (refetched); 403 for a
# wrong scope, a legacy scope used for another operation (and admitted for its own), a client
# pin missing or wrong, a disabled vault, a blocked link, a deactivated key, a usage mask
# without decrypt; 404 for an unknown route (before authentication), vault, key, a key of
# another vault, unknown and destroyed versions; 405 for another method; 400 for bad JSON,
# base64, mode, pad, length, a tampered ciphertext, another key's, other aad, iv, tag or
# keyVersionId disagreeing with the ciphertext, the spec's known answer (a ciphertext of
# another key here: its exact bytes are test-oci-blob's); 413 from Content-Length; 429 over a
# vault's rate; a rotated key decrypting its old ciphertexts by version UUID; opc-request-id
# echoed as "<caller>/<holdfast>" (on a 401 too) and in the audit record; SIGHUP taking a new
# random_status and a re-enabled vault; a store outage (503, never 403); one version
# deactivated, compromised, destroyed (holdfast key version): its ciphertexts still decrypt
# (then 404), encrypt naming it is 403.
. "${top_srcdir:-.}/tests/integration/lib.sh"
. "${top_srcdir:-.}/tests/integration/oci-lib.sh"

HOLDFASTD="$top_builddir/gateway/holdfastd"
OCI_PLUGIN="$top_builddir/gateway/plugins/oci-ekms/.libs/oci-ekms.so"
[ -x "$HOLDFASTD" ] || hf_skip "$HOLDFASTD not built"
[ -f "$OCI_PLUGIN" ] || hf_skip "$OCI_PLUGIN not built"
for p in curl python3 openssl; do
    command -v "$p" >/dev/null || hf_skip "$p not installed"
done
python3 -c 'import cryptography' 2>/dev/null || hf_skip "python3-cryptography not installed"
hf_store_setup

TOK="python3 $top_srcdir/tests/integration/jwt-token.py"
CHANGE_MS=${OCI_CHANGE_MS:-1500}
settle() { sleep "$(echo "$CHANGE_MS" | awk '{print $1/1000}')"; }
hf() { "$HF_CLI" "$@" >>"$HF_TMP/cli.log" 2>&1 || hf_fail "holdfast $*: $(tail -n 3 "$HF_TMP/cli.log")"; }

# ---- vaults (ids minted with the CLI) and keys linked in them as <vaultId>/<keyUUID> ----
V=$("$HF_CLI" uuid) && V2=$("$HF_CLI" uuid) && VP=$("$HF_CLI" uuid) && VD=$("$HF_CLI" uuid) &&
    VR=$("$HF_CLI" uuid) || hf_fail "holdfast uuid"
hf link type add oci-ekms # holdfastd also registers it when it starts
for k in k1 blk dis rot des enc other pin rate; do hf key create "oci-$k"; done
hf key create oci-encrypt-only --usage encrypt
K1=$(oci_uuid oci-k1) KBLK=$(oci_uuid oci-blk) KDIS=$(oci_uuid oci-dis) KROT=$(oci_uuid oci-rot)
KDES=$(oci_uuid oci-des) KOTHER=$(oci_uuid oci-other) KPIN=$(oci_uuid oci-pin)
KRATE=$(oci_uuid oci-rate) KEO=$(oci_uuid oci-encrypt-only)
for k in "$K1" "$KBLK" "$KDIS" "$KROT" "$KDES" "$KEO"; do hf link add oci-ekms "$V/$k" "$k"; done
hf link add oci-ekms "$V2/$KOTHER" "$KOTHER"
hf link add oci-ekms "$VP/$KPIN" "$KPIN"
hf link add oci-ekms "$VR/$KRATE" "$KRATE"
hf link add oci-ekms "$VD/$K1" "$K1"
# A link whose id names another key than the one it reaches: not this keyId's.
hf link add oci-ekms "$V/$KOTHER" "$K1"
K1V1=$(oci_version_uuid oci-k1 1)

# ---- the IDCS signing keys over HTTPS, under a CA of the test's own ----
HF_PKI="$HF_TMP/pki"
hf_pki_ca ca
hf_pki_cert server localhost ca "subjectAltName=IP:127.0.0.1,DNS:localhost"
PKI="$HF_PKI"
CURL_CA_BUNDLE=$PKI/ca.pem
export CURL_CA_BUNDLE
JW="$HF_TMP/jwks"
mkdir -p "$JW"
{ $TOK keys "$JW" idcs other && $TOK publish "$JW" idcs idcs; } || hf_fail "cannot make the signing keys"
hf_jwks_serve "$JW" "$PKI/server.pem" "$PKI/server.key" /admin/v1/SigningCert/jwk=idcs
P_JWKS=$HF_JWKS_PORT

# ---- holdfastd: one TLS listener ----
PORT=$(hf_free_port)
BASE="https://127.0.0.1:$PORT"
CONF="$HF_TMP/holdfastd.conf"
ISS=https://idcs-test.identity.oraclecloud.com
AUD=https://10.0.0.31/
vault() { # NAME ID EXTRA-LINES
    cat <<EOV
[oci-ekms:$1]
vault_id = $2
issuer = $ISS
audience = $AUD
jwks = https://127.0.0.1:$P_JWKS/admin/v1/SigningCert/jwk
jwks_ca = $PKI/ca.pem
jwks_allow = 127.0.0.0/8
$3

EOV
}
cat >"$CONF" <<EOC
[gateway]
module = $HF_MODULE
pin_file = $HOLDFAST_STATE_DIR/token-gateway.pin
plugins = oci-ekms
log = $HF_TMP/holdfastd.log

[plugin:oci-ekms]
path = $OCI_PLUGIN

[listener:oci]
listen = 127.0.0.1:$PORT
cert = $PKI/server.pem
key = $PKI/server.key
client_certificate = off
plugins = oci-ekms

[oci-ekms]
random_status = 201

$(vault main "$V" "")
$(vault second "$V2" "")
$(vault pinned "$VP" "client_ids = ocid1.client.good, other-client")
$(vault off "$VD" "disabled = yes")
$(vault slow "$VR" "rate_limit = 1")
EOC
# A vault_id that is not a UUID is refused by name.
sed "s|^vault_id = $V2|vault_id = vault-2|" "$CONF" >"$HF_TMP/bad.conf"
hf_expect_exit 1 "$HOLDFASTD" -t -c "$HF_TMP/bad.conf"
grep -q "holdfast uuid" "$HF_ERR" || { cat "$HF_ERR"; hf_fail "a vault_id that is no UUID is not refused"; }
hf_gateway_start "$BASE" "$HOLDFASTD" -f -c "$CONF"
# conf/oci-ekms.conf.sample, uncommented, is a config holdfastd takes (its paths made ours).
{
    hf_gateway_section oci-ekms 64k "127.0.0.1:$(hf_free_port)"
    sed -n '/^;\[oci-ekms\]/,$s/^;//p' "$top_srcdir/conf/oci-ekms.conf.sample" |
        sed -e "s|^jwks = .*|jwks = $JW/idcs.jwks|" -e "s|^jwks_ca = .*|jwks_ca = $PKI/ca.pem|"
    printf '\n[plugin:oci-ekms]\npath = %s\n' "$OCI_PLUGIN"
} >"$HF_TMP/sample.conf"
grep -q '^vault_id = ' "$HF_TMP/sample.conf" || hf_fail "no vault in the sample: $(cat "$HF_TMP/sample.conf")"
hf_expect_exit 0 "$HOLDFASTD" -t -c "$HF_TMP/sample.conf"

# ---- tokens ----
CLAIMS="{\"iss\":\"$ISS\",\"aud\":\"$AUD\",\"client_id\":\"ocid1.client.good\",\"sub\":\"ocid1.client.good\",\"scope\":\"oci_ekms\",\"iat\":\"+0\",\"exp\":\"+600\"}"
mint() { $TOK mint "$JW" --kid idcs --base "$CLAIMS" "$@"; }
GOOD=$(mint)
TOKEN=$GOOD
OPC=
OUT="$HF_TMP/out.json"
HDR="$HF_TMP/out.hdr"
P=/api/v1/cckm/oci/ekm/v1/vaults/$V
PT=YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXphYmNkZWY= # the k6 script's 32 bytes

# ---- every route ----
oci_call GET "$P/metadata"
oci_expect 200
check "$(oci_json state)/$(oci_json vendor)" ACTIVE/Holdfast "GetVaultMetadata"
oci_call GET "$P/keys/$K1/metadata"
oci_expect 200
check "$(oci_json keyId)" "$K1" "GetKeyMetadata keyId"
check "$(oci_json currentKeyVersionId)" "$K1V1" "GetKeyMetadata currentKeyVersionId"
check "$(oci_json keyShape.algorithm)/$(oci_json keyShape.length)" AES/256 "keyShape"
check "$(oci_json state)" ACTIVE "key state"
check "$(oci_json keyOps.0),$(oci_json keyOps.1)" ENCRYPT,DECRYPT "keyOps"
oci_call GET "$P/keys/$K1/keyVersions/$K1V1/metadata"
oci_expect 200
check "$(oci_json keyId)/$(oci_json keyVersionId)/$(oci_json state)" "$K1/$K1V1/ACTIVE" "GetKeyVersionMetadata"
check "$(oci_json keyVersionOps.0),$(oci_json keyVersionOps.1)" ENCRYPT,DECRYPT "keyVersionOps"

OPC=opc-enc-0001
oci_call POST "$P/keys/$K1/encrypt" "{\"plaintext\":\"$PT\",\"aad\":\"dGVuYW5jeT0x\",\"mode\":\"AES_GCM\"}"
oci_expect 200
cp "$OUT" "$HF_TMP/enc1.json"
check "$(oci_json mode)/$(oci_json keyId)/$(oci_json keyVersionId)" "AES_GCM/$K1/$K1V1" "Encrypt's answer"
check "$(oci_json aad)" dGVuYW5jeT0x "Encrypt echoes aad"
CT=$(oci_json ciphertext) IV=$(oci_json iv) TAG=$(oci_json tag)
# The ciphertext is self-contained: 0x01, BE32 version 1, then the answer's iv, ..., its tag.
python3 - "$CT" "$IV" "$TAG" <<'PY' || hf_fail "the ciphertext does not carry its version, iv and tag"
import base64, sys
ct, iv, tag = (base64.b64decode(x) for x in sys.argv[1:4])
sys.exit(0 if ct[:5] == b"\x01\0\0\0\x01" and ct[5:17] == iv and ct[-16:] == tag and len(ct) == 33 + 32 else 1)
PY
XRID=$(oci_header X-Request-Id)
check "$(oci_header opc-request-id)" "opc-enc-0001/$XRID" "opc-request-id echoed with Holdfast's id"
OPC=opc-dec-0001
oci_call POST "$P/keys/$K1/decrypt" "{\"ciphertext\":\"$CT\",\"aad\":\"dGVuYW5jeT0x\"}"
oci_expect 200
check "$(oci_json plaintext)" "$PT" "Decrypt of the ciphertext alone"
# The whole encrypt answer sent back decrypts too (unknown fields ignored, the rest agreeing).
oci_call POST "$P/keys/$K1/decrypt" "$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["pad"]="none"; print(json.dumps(d))' "$HF_TMP/enc1.json")"
oci_expect 200
check "$(oci_json plaintext)" "$PT" "Decrypt of the whole encrypt answer"
OPC=
oci_call POST "$P/keys/$K1/encrypt" "{\"plaintext\":\"$PT\",\"iv\":\"AAAAAAAAAAAAAAAA\"}"
oci_expect 200
[ "$(oci_json iv)" != AAAAAAAAAAAAAAAA ] || hf_fail "the caller's iv was used"
[ -z "$(oci_json aad)" ] || hf_fail "aad echoed though none was given"
check "$(oci_header opc-request-id)" "$(oci_header X-Request-Id)" "no opc-request-id: Holdfast's alone"
CT_NOAAD=$(oci_json ciphertext)

oci_call POST "$P/generateRandomBytes" '{"length":32}'
oci_expect 201
check "$(oci_json length)" 32 "random length"
check "$(oci_json randomBytes | base64 -d | wc -c | tr -d ' ')" 32 "32 random bytes"
oci_call POST "$P/keys/$K1/generateRandomBytes" '{"length":65535}'
oci_expect 201
check "$(oci_json randomBytes | base64 -d | wc -c | tr -d ' ')" 65535 "65535 random bytes"

# ---- the spec's known answer: its key is not k1's, so here it is another key's ciphertext ----
KA=AQAAAAEAAQIDBAUGBwgJCgsmYLV/oIOlc+Qr/Ofchxcd8qT0QIUNKARBHYTnfg1l1BzX+4oDMsm4bt0Li6VnNDI=
oci_call POST "$P/keys/$K1/decrypt" "{\"ciphertext\":\"$KA\",\"iv\":\"AAECAwQFBgcICQoL\",\"tag\":\"HNf7igMyybhu3QuLpWc0Mg==\"}"
oci_expect 400

# ---- 401: token missing or invalid ----
bad_token() { # WHAT MINT-ARGS...
    _what=$1
    shift
    TOKEN=$(mint "$@")
    oci_call POST "$P/keys/$K1/encrypt" "{\"plaintext\":\"$PT\"}"
    [ "$CODE" = 401 ] || hf_fail "$_what: HTTP $CODE, want 401 ($(cat "$OUT"))"
    oci_expect 401
}
bad_token "forged signature" --kid idcs --key other
bad_token "expired" exp=-600 iat=-1200
bad_token "wrong audience" aud=https://10.0.0.99/
bad_token "wrong issuer" iss=https://idcs-evil.identity.oraclecloud.com
bad_token "no exp" exp=
bad_token "not yet valid" nbf=+600
bad_token "alg none" --alg none
# The identity domain rotates its signing key: the first token signed with the new kid is
# refused and makes holdfastd refetch the set off the request path; then it passes.
$TOK keys "$JW" idcs2 && $TOK publish "$JW" idcs idcs idcs2 || hf_fail "cannot publish idcs2"
TOKEN=$($TOK mint "$JW" --kid idcs2 --base "$CLAIMS")
t0=$(hf_now_ms)
oci_call GET "$P/metadata"
oci_expect 401
until oci_call GET "$P/metadata" && [ "$CODE" = 200 ]; do
    [ $(($(hf_now_ms) - t0)) -lt 10000 ] || hf_fail "kid idcs2 still refused 10 s after it was published"
    sleep 0.2
done
echo "unknown kid: accepted $(($(hf_now_ms) - t0)) ms after the refetch it triggered"
TOKEN=
OPC=opc-anon-1
oci_call POST "$P/keys/$K1/encrypt" "{\"plaintext\":\"$PT\"}"
oci_expect 401 "bearer token is required"
check "$(oci_header opc-request-id)" "opc-anon-1/$(oci_header X-Request-Id)" "opc-request-id echoed on a 401"
OPC=
oci_call GET "$P/metadata" "" -H "Authorization: Basic Zm9vOmJhcg=="
oci_expect 401
TOKEN=$GOOD

# ---- 403: scope, client pin, vault, key ----
TOKEN=$(mint scope=urn:opc:idm:__myscopes__)
oci_call POST "$P/keys/$K1/encrypt" "{\"plaintext\":\"$PT\"}"
oci_expect 403 scope
TOKEN=$(mint scope=)
oci_call GET "$P/metadata"
oci_expect 403 scope
TOKEN=$(mint scope=oci_hyok_encrypt)
oci_call POST "$P/keys/$K1/encrypt" "{\"plaintext\":\"$PT\"}"
oci_expect 200
oci_call POST "$P/keys/$K1/decrypt" "{\"ciphertext\":\"$CT_NOAAD\"}"
oci_expect 403 scope
oci_call GET "$P/keys/$K1/metadata"
oci_expect 403 scope
TOKEN=$(mint scope=oci_hyok_decrypt)
oci_call POST "$P/keys/$K1/decrypt" "{\"ciphertext\":\"$CT_NOAAD\"}"
oci_expect 200
TOKEN=$(mint "scope=openid ${AUD}oci_ekms")
oci_call GET "$P/keys/$K1/metadata"
oci_expect 200
TOKEN=$(mint "scp:=[\"${AUD}oci_hyok_getKeyMetadata\"]" scope=)
oci_call GET "$P/keys/$K1/metadata"
oci_expect 200
oci_call GET "$P/keys/$K1/keyVersions/$K1V1/metadata"
oci_expect 403 scope
TOKEN=$(mint scope=https://10.0.0.99/oci_ekms)
oci_call GET "$P/metadata"
oci_expect 403 scope

# The pinned vault: client_id, else sub, must be one of its client_ids.
PP=/api/v1/cckm/oci/ekm/v1/vaults/$VP
TOKEN=$GOOD
oci_call GET "$PP/keys/$KPIN/metadata"
oci_expect 200
TOKEN=$(mint client_id=ocid1.client.evil sub=ocid1.client.evil)
oci_call GET "$PP/keys/$KPIN/metadata"
oci_expect 403 client
TOKEN=$(mint client_id= sub=)
oci_call GET "$PP/keys/$KPIN/metadata"
oci_expect 403 client
TOKEN=$(mint client_id= sub=other-client)
oci_call GET "$PP/keys/$KPIN/metadata"
oci_expect 200
TOKEN=$(mint client_id=ocid1.client.evil)
oci_call POST "$P/keys/$K1/encrypt" "{\"plaintext\":\"$PT\"}"
oci_expect 200 # the main vault pins none
TOKEN=$GOOD

# A vault disabled in Holdfast: every route.
PD=/api/v1/cckm/oci/ekm/v1/vaults/$VD
oci_call GET "$PD/metadata"
oci_expect 403 disabled
oci_call POST "$PD/keys/$K1/encrypt" "{\"plaintext\":\"$PT\"}"
oci_expect 403 disabled
oci_call POST "$PD/generateRandomBytes" '{"length":8}'
oci_expect 403 disabled

# A blocked link: "key disabled" on every key-level route; unblocked, it works again.
oci_call POST "$P/keys/$KBLK/encrypt" "{\"plaintext\":\"$PT\"}"
oci_expect 200
BLK_CT=$(oci_json ciphertext) BLK_V1=$(oci_json keyVersionId)
hf link block oci-ekms "$V/$KBLK"
settle
oci_call GET "$P/keys/$KBLK/metadata"
oci_expect 403 "key disabled"
oci_call GET "$P/keys/$KBLK/keyVersions/$BLK_V1/metadata"
oci_expect 403 "key disabled"
oci_call POST "$P/keys/$KBLK/encrypt" "{\"plaintext\":\"$PT\"}"
oci_expect 403 "key disabled"
oci_call POST "$P/keys/$KBLK/decrypt" "{\"ciphertext\":\"$BLK_CT\"}"
oci_expect 403 "key disabled"
oci_call POST "$P/keys/$KBLK/generateRandomBytes" '{"length":8}'
oci_expect 403 "key disabled"
oci_call POST "$P/generateRandomBytes" '{"length":8}'
oci_expect 201 # the vault is not the key
hf link unblock oci-ekms "$V/$KBLK"
settle
oci_call POST "$P/keys/$KBLK/decrypt" "{\"ciphertext\":\"$BLK_CT\"}"
oci_expect 200

# A deactivated key: no metadata 200 (only active keys report), no encrypt; its old
# ciphertexts still decrypt (KMIP).
oci_call POST "$P/keys/$KDIS/encrypt" "{\"plaintext\":\"$PT\"}"
oci_expect 200
DIS_CT=$(oci_json ciphertext)
hf key deactivate oci-dis
settle
oci_call GET "$P/keys/$KDIS/metadata"
oci_expect 403 "key disabled"
oci_call POST "$P/keys/$KDIS/encrypt" "{\"plaintext\":\"$PT\"}"
oci_expect 403 "key disabled"
oci_call POST "$P/keys/$KDIS/generateRandomBytes" '{"length":8}'
oci_expect 403 "key disabled"
oci_call POST "$P/keys/$KDIS/decrypt" "{\"ciphertext\":\"$DIS_CT\"}"
oci_expect 200
# A usage mask without decrypt.
oci_call POST "$P/keys/$KEO/encrypt" "{\"plaintext\":\"$PT\"}"
oci_expect 200
EO_CT=$(oci_json ciphertext)
oci_call POST "$P/keys/$KEO/decrypt" "{\"ciphertext\":\"$EO_CT\"}"
oci_expect 403 "key disabled"
oci_call GET "$P/keys/$KEO/metadata"
oci_expect 403 "key disabled"

# ---- 404: route (before authentication), vault, key, version ----
TOKEN=
oci_call GET "$P/nothing"
oci_expect 404
oci_call POST "$P/keys/$K1/wrap" "{\"plaintext\":\"$PT\"}"
oci_expect 404
oci_call GET "$P/keys/$K1"
oci_expect 404
oci_call GET "/api/v1/cckm/oci/ekm/v1/vaults/$(python3 -c 'import uuid; print(uuid.uuid4())')/metadata"
oci_expect 404 vault
oci_call GET "/other/vaults/$V/metadata"
[ "$CODE" = 404 ] || hf_fail "a path outside the prefix: HTTP $CODE"
check "$(oci_json error)" NotFound "outside the prefix: the gateway's own 404"
# 405: another method, before authentication.
oci_call GET "$P/keys/$K1/encrypt"
oci_expect 405
oci_call DELETE "$P/metadata"
oci_expect 405
oci_call POST "$P/keys/$K1/metadata" '{}'
oci_expect 405
TOKEN=$GOOD
NOKEY=$(python3 -c 'import uuid; print(uuid.uuid4())')
oci_call GET "$P/keys/$NOKEY/metadata"
oci_expect 404
oci_call POST "$P/keys/not-a-uuid/encrypt" "{\"plaintext\":\"$PT\"}"
oci_expect 404
oci_call POST "$P/keys/$KOTHER/encrypt" "{\"plaintext\":\"$PT\"}"
oci_expect 404 # linked in the second vault; here its id names another key
oci_call POST "/api/v1/cckm/oci/ekm/v1/vaults/$V2/keys/$KOTHER/encrypt" "{\"plaintext\":\"$PT\"}"
oci_expect 200
oci_call POST "/api/v1/cckm/oci/ekm/v1/vaults/$V2/keys/$K1/encrypt" "{\"plaintext\":\"$PT\"}"
oci_expect 404 # k1 is not linked in the second vault
oci_call GET "$P/keys/$K1/keyVersions/$NOKEY/metadata"
oci_expect 404
oci_call GET "$P/keys/$K1/keyVersions/$BLK_V1/metadata"
oci_expect 404 # another key's version
oci_call POST "$P/keys/$K1/encrypt" "{\"plaintext\":\"$PT\",\"keyVersionId\":\"$NOKEY\"}"
oci_expect 404
oci_call POST "$P/keys/$K1/decrypt" "{\"ciphertext\":\"$CT_NOAAD\",\"keyVersionId\":\"$NOKEY\"}"
oci_expect 404

# ---- rotation: new encryptions use the new version; old ciphertexts decrypt by its UUID ----
oci_call POST "$P/keys/$KROT/encrypt" "{\"plaintext\":\"$PT\"}"
oci_expect 200
ROT_CT1=$(oci_json ciphertext) ROT_V1=$(oci_json keyVersionId)
hf key rotate oci-rot
ROT_V2=$(oci_version_uuid oci-rot 2)
settle
oci_call GET "$P/keys/$KROT/metadata"
oci_expect 200
check "$(oci_json currentKeyVersionId)" "$ROT_V2" "the current version after rotation"
oci_call POST "$P/keys/$KROT/encrypt" "{\"plaintext\":\"$PT\"}"
oci_expect 200
check "$(oci_json keyVersionId)" "$ROT_V2" "encrypt after rotation"
ROT_CT2=$(oci_json ciphertext)
oci_call POST "$P/keys/$KROT/decrypt" "{\"ciphertext\":\"$ROT_CT1\",\"keyVersionId\":\"$ROT_V1\"}"
oci_expect 200
check "$(oci_json plaintext)" "$PT" "the old version's ciphertext by its UUID"
oci_call POST "$P/keys/$KROT/decrypt" "{\"ciphertext\":\"$ROT_CT2\"}"
oci_expect 200
oci_call POST "$P/keys/$KROT/decrypt" "{\"ciphertext\":\"$ROT_CT1\",\"keyVersionId\":\"$ROT_V2\"}"
oci_expect 400 keyVersionId
oci_call GET "$P/keys/$KROT/keyVersions/$ROT_V1/metadata"
oci_expect 200
oci_call POST "$P/keys/$KROT/encrypt" "{\"plaintext\":\"$PT\",\"keyVersionId\":\"$ROT_V1\"}"
oci_expect 200
check "$(oci_json keyVersionId)" "$ROT_V1" "encrypt with the named version"
python3 -c 'import base64,sys; sys.exit(0 if base64.b64decode(sys.argv[1])[:5] == b"\x01\0\0\0\x01" else 1)' "$(oci_json ciphertext)" ||
    hf_fail "encrypt with keyVersionId v1 did not seal under version 1"

# ---- one version's own state (holdfast key version): v1 retired while the key lives on ----
hf_expect_exit 1 "$HF_CLI" key version deactivate oci-rot 2
grep -q 'holdfast key rotate oci-rot' "$HF_ERR" || hf_fail "deactivating the current version: $(cat "$HF_ERR")"
hf_expect_exit 1 "$HF_CLI" key version destroy oci-rot 1 --yes # active: deactivate it first
hf key version deactivate oci-rot 1
settle
oci_call POST "$P/keys/$KROT/decrypt" "{\"ciphertext\":\"$ROT_CT1\",\"keyVersionId\":\"$ROT_V1\"}"
oci_expect 200
check "$(oci_json plaintext)" "$PT" "a deactivated version's ciphertext"
oci_call POST "$P/keys/$KROT/encrypt" "{\"plaintext\":\"$PT\",\"keyVersionId\":\"$ROT_V1\"}"
oci_expect 403 "key disabled"
oci_call POST "$P/keys/$KROT/encrypt" "{\"plaintext\":\"$PT\"}"
oci_expect 200
check "$(oci_json keyVersionId)" "$ROT_V2" "encrypt beside a deactivated version"
hf key version compromise oci-rot 1
settle
oci_call POST "$P/keys/$KROT/decrypt" "{\"ciphertext\":\"$ROT_CT1\",\"keyVersionId\":\"$ROT_V1\"}"
oci_expect 200
oci_call POST "$P/keys/$KROT/encrypt" "{\"plaintext\":\"$PT\",\"keyVersionId\":\"$ROT_V1\"}"
oci_expect 403 "key disabled"
hf_expect_exit 1 "$HF_CLI" key version deactivate oci-rot 1 # never back
hf key version destroy oci-rot 1 --yes
settle
oci_call POST "$P/keys/$KROT/decrypt" "{\"ciphertext\":\"$ROT_CT1\",\"keyVersionId\":\"$ROT_V1\"}"
oci_expect 404
oci_call POST "$P/keys/$KROT/decrypt" "{\"ciphertext\":\"$ROT_CT2\"}"
oci_expect 200
"$HF_CLI" key show oci-rot | grep -Eq '^ +1 +destroyed ' || hf_fail "key show: $("$HF_CLI" key show oci-rot)"
"$HF_CLI" --json key show oci-rot | python3 -c 'import json,sys; v=json.load(sys.stdin)["versions"][0]; sys.exit(v["state"] != "destroyed" or "wrapped" in v)' ||
    hf_fail "v1 not shown destroyed"

# ---- a destroyed key and its versions: 404 ----
oci_call POST "$P/keys/$KDES/encrypt" "{\"plaintext\":\"$PT\"}"
oci_expect 200
DES_CT=$(oci_json ciphertext) DES_V1=$(oci_json keyVersionId)
hf key destroy oci-des --yes
settle
oci_call GET "$P/keys/$KDES/keyVersions/$DES_V1/metadata"
oci_expect 404
oci_call POST "$P/keys/$KDES/decrypt" "{\"ciphertext\":\"$DES_CT\",\"keyVersionId\":\"$DES_V1\"}"
oci_expect 404
oci_call GET "$P/keys/$KDES/metadata"
oci_expect 404

# ---- 400: malformed bodies, and ciphertexts that are not what the key sealed ----
bad() { # PATH BODY [MESSAGE-PART]
    oci_call POST "$1" "$2"
    oci_expect 400 "${3:-}"
}
bad "$P/keys/$K1/encrypt" '{"plaintext":' 
bad "$P/keys/$K1/encrypt" '["plaintext"]'
bad "$P/keys/$K1/encrypt" '{"plaintext":"YWJj*"}' plaintext
bad "$P/keys/$K1/encrypt" '{"plaintext":"YWI"}' plaintext
bad "$P/keys/$K1/encrypt" '{"plaintext":""}' plaintext
bad "$P/keys/$K1/encrypt" '{"aad":"eA=="}' plaintext
bad "$P/keys/$K1/encrypt" "{\"plaintext\":\"$PT\",\"mode\":\"AES_CBC\"}" mode
bad "$P/keys/$K1/encrypt" "{\"plaintext\":\"$PT\",\"plaintext\":\"$PT\"}"
bad "$P/keys/$K1/decrypt" "{\"ciphertext\":\"$CT_NOAAD\",\"pad\":\"pkcs5\"}" pad
bad "$P/keys/$K1/decrypt" "{\"ciphertext\":\"$CT_NOAAD\",\"mode\":\"RSA\"}" mode
bad "$P/generateRandomBytes" '{"length":0}' length
bad "$P/generateRandomBytes" '{"length":65536}' length
bad "$P/generateRandomBytes" '{"length":"32"}' length
bad "$P/keys/$K1/generateRandomBytes" '{"length":1.5}' length
python3 -c 'import base64; print("{\"plaintext\":\"%s\"}" % base64.b64encode(b"x" * 65537).decode())' >"$HF_TMP/big-pt.json"
bad "$P/keys/$K1/encrypt" "@$HF_TMP/big-pt.json" plaintext
python3 -c 'import base64; print("{\"plaintext\":\"AA==\",\"aad\":\"%s\"}" % base64.b64encode(b"x" * 8193).decode())' >"$HF_TMP/big-aad.json"
bad "$P/keys/$K1/encrypt" "@$HF_TMP/big-aad.json" aad
flip() { python3 -c 'import base64,sys; b=bytearray(base64.b64decode(sys.argv[1])); b[int(sys.argv[2])]^=1; print(base64.b64encode(bytes(b)).decode())' "$@"; }
bad "$P/keys/$K1/decrypt" "{\"ciphertext\":\"$(flip "$CT_NOAAD" -1)\"}" ciphertext
bad "$P/keys/$K1/decrypt" "{\"ciphertext\":\"$(flip "$CT_NOAAD" 20)\"}" ciphertext
bad "$P/keys/$K1/decrypt" "{\"ciphertext\":\"$(flip "$CT_NOAAD" 0)\"}" ciphertext
bad "$P/keys/$K1/decrypt" "{\"ciphertext\":\"$(flip "$CT_NOAAD" 4)\"}" ciphertext
bad "$P/keys/$K1/decrypt" "{\"ciphertext\":\"$CT\"}" aad
bad "$P/keys/$K1/decrypt" "{\"ciphertext\":\"$CT\",\"aad\":\"b3RoZXI=\"}" aad
bad "$P/keys/$K1/decrypt" "{\"ciphertext\":\"$ROT_CT2\"}" ciphertext
bad "$P/keys/$K1/decrypt" '{"ciphertext":"AQAAAAEAAQIDBAUGBwgJCgsP"}' ciphertext
bad "$P/keys/$K1/decrypt" "{\"ciphertext\":\"$CT\",\"aad\":\"dGVuYW5jeT0x\",\"iv\":\"AAECAwQFBgcICQoL\"}" iv
bad "$P/keys/$K1/decrypt" "{\"ciphertext\":\"$CT\",\"aad\":\"dGVuYW5jeT0x\",\"tag\":\"HNf7igMyybhu3QuLpWc0Mg==\"}" tag
OPC=$(python3 -c 'print("x" * 129)')
oci_call GET "$P/metadata"
oci_expect 400 opc-request-id
OPC=

# ---- 413: a body over 128 KiB, refused from its Content-Length ----
python3 -c 'print("{\"plaintext\":\"AA==\",\"x\":\"%s\"}" % ("y" * 132000))' >"$HF_TMP/big-body.json"
oci_call POST "$P/keys/$K1/encrypt" "@$HF_TMP/big-body.json"
oci_expect 413
python3 -c 'print("{\"plaintext\":\"AA==\",\"x\":\"%s\"}" % ("y" * 130000))' >"$HF_TMP/near-body.json"
oci_call POST "$P/keys/$K1/encrypt" "@$HF_TMP/near-body.json"
oci_expect 200

# ---- 429: over the vault's rate ----
PR=/api/v1/cckm/oci/ekm/v1/vaults/$VR
oci_call GET "$PR/keys/$KRATE/metadata"
oci_expect 200
oci_call GET "$PR/keys/$KRATE/metadata"
oci_expect 429

# ---- the audit record: opc-request-id (both ids), vault, key, version, client, result ----
oci_audit_find 'r.get("op") == "encrypt" and r.get("request_id") == "opc-enc-0001/'"$XRID"'" and f.get("opc_request_id") == "opc-enc-0001" and f.get("vault_id") == "'"$V"'" and f.get("key_id") == "'"$K1"'" and f.get("key_version_id") == "'"$K1V1"'" and f.get("client") == "ocid1.client.good"' ||
    hf_fail "no audit record of the encrypt with its opc-request-id and fields"
oci_audit_find 'r.get("op") == "decrypt" and f.get("opc_request_id") == "opc-dec-0001" and f.get("key_version_id") == "'"$K1V1"'"' ||
    hf_fail "no audit record of the decrypt with its opc-request-id"
oci_audit_find 'f.get("client") == "ocid1.client.good" and "scope" in r.get("detail", "")' ||
    hf_fail "a scope refusal has no record"
oci_audit_find 'f.get("vault_id") == "'"$VD"'" and "disabled" in r.get("detail", "")' ||
    hf_fail "a disabled vault's refusal has no record"
for log in "$HOLDFAST_STATE_DIR/audit.log" "$HF_TMP/holdfastd.log" "$HF_TMP/holdfastd.out"; do
    ! grep -q "$PT" "$log" || hf_fail "a plaintext reached $log"
done
hf_expect_exit 0 "$HF_CLI" audit verify

# The handler names each operation: metrics count them apart, never as the route's "oci".
curl -sS "$BASE/metrics" >"$HF_TMP/metrics.txt" || hf_fail "GET /metrics"
for op in getVaultMetadata getKeyMetadata getKeyVersionMetadata encrypt decrypt; do
    grep -q "^holdfast_requests_total{api=\"oci-ekms\",operation=\"$op\",status=\"200\"}" "$HF_TMP/metrics.txt" ||
        hf_fail "no $op series in /metrics: $(grep oci-ekms "$HF_TMP/metrics.txt" | head -n 5)"
done
grep -q '^holdfast_requests_total{api="oci-ekms",operation="generateRandomBytes.key",status="201"}' "$HF_TMP/metrics.txt" ||
    hf_fail "no key-level random series in /metrics"
grep -q '^holdfast_request_latency_limit_seconds{api="oci-ekms"} 0.1' "$HF_TMP/metrics.txt" ||
    hf_fail "the latency limit is not OCI's 100 ms: $(grep latency_limit "$HF_TMP/metrics.txt")"

# ---- SIGHUP: random_status = 200 (Oracle's reading) and a vault enabled take effect ----
sed -e 's/^random_status = 201/random_status = 200/' -e 's/^disabled = yes/disabled = no/' "$CONF" >"$CONF.new" &&
    mv "$CONF.new" "$CONF" || hf_fail "cannot rewrite $CONF"
kill -HUP "$HF_GW_PID"
t0=$(hf_now_ms)
until oci_call POST "$P/generateRandomBytes" '{"length":16}' && [ "$CODE" = 200 ]; do
    [ $(($(hf_now_ms) - t0)) -lt 10000 ] || hf_fail "random_status = 200 not in force 10 s after SIGHUP (HTTP $CODE)"
    sleep 0.2
done
check "$(oci_json randomBytes | base64 -d | wc -c | tr -d ' ')" 16 "16 random bytes after the reload"
oci_call GET "$PD/keys/$K1/metadata"
oci_expect 200

# ---- a store outage is 503, never 403 ----
DB=$(ls "$HOLDFAST_STATE_DIR"/*.db 2>/dev/null | head -n 1)
[ -n "$DB" ] || hf_fail "no SQLite store under $HOLDFAST_STATE_DIR"
for f in "$DB" "$DB-wal" "$DB-shm"; do
    [ ! -f "$f" ] || dd if=/dev/urandom of="$f" bs=4096 count=8 conv=notrunc 2>/dev/null
done
settle
oci_call POST "$P/keys/$K1/encrypt" "{\"plaintext\":\"$PT\"}"
oci_expect 503
echo "oci.sh: all cases passed"
