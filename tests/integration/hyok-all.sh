#!/bin/sh
# Six clouds, one gateway: ONE holdfastd from ONE config serving AWS XKS, Google Cloud EKM,
# Workspace CSE, OCI EKMS, SAP HYOK and Microsoft DKE at once, each on the listener its spec
# wants, over one key store:
#
#   bearer  TLS, no client certificates: aws-xks (SigV4), gcp-ekm and gws-cse (bearer tokens,
#           under /ekm and /cse), oci-ekms (bearer token, its vault base) and ms-dke (anonymous
#           GET, bearer decrypt, under /dke);
#   sap     TLS with client certificates required: sap-hyok (mutual TLS, the leaf pinned).
#
# One AES-256 key, sym, is linked to XKS, EKM, CSE, OCI and SAP; one RSA-3072 key, rsa, to SAP
# and DKE. Each API encrypts (wraps) and decrypts (unwraps) through its own route and auth. The
# same key answers both clouds it is linked to: OCI's and SAP's answers name sym's version UUID,
# SAP opens what XKS sealed (the GCM AAD XKS used handed to SAP as its aad), SAP's and DKE's
# public keys are one, DKE opens what SAP sealed under rsa and SAP what was sealed to DKE's key,
# and every successful key operation's audit record names the key the test expects.
# Then links are blocked with `holdfast link block`, in three rounds (sym's EKM and rsa's DKE
# link; XKS and both SAP links; CSE and OCI): the blocked clouds refuse in their APIs' words
# (SAP's key get-metadata still answers, "Disabled") while every other cloud still answers on
# the same keys; unblocked, all answer again.
# Also: conf/holdfastd-all.conf.sample passes `holdfastd -t` (its paths made the test's); the
# start log names both listeners and their client-certificate policy; SAP without a client
# certificate fails the handshake, a SAP route on the bearer listener and an XKS route on the SAP
# listener are the gateway's 404; /metrics counts a success of every API.
# Last, every request has exactly one audit record in its API's name (DKE's anonymous GET, a
# public key, and the gateway's 404s, none), and `holdfast audit verify` passes.
#
# Each plugin's part is a set of functions: <part>_conf (its config sections), <part>_roundtrip
# WHEN and <part>_refused WHEN (part: xks, ekm, cse, oci, sap, dke). Skipped (77) only when a
# plugin's .so is not built.
. "${top_srcdir:-.}/tests/integration/lib.sh"

HOLDFASTD="$top_builddir/gateway/holdfastd"
[ -x "$HOLDFASTD" ] || hf_skip "$HOLDFASTD not built"
# HYOK_APIS (a developer's knob, never set by make check): only these plugins' parts.
APIS=${HYOK_APIS:-aws-xks gcp-ekm gws-cse oci-ekms sap-hyok ms-dke}
missing=
for p in $APIS; do
    [ -f "$top_builddir/gateway/plugins/$p/.libs/$p.so" ] || missing="$missing $p"
done
[ -z "$missing" ] || hf_skip "plugin not built:$missing"
so() { echo "$top_builddir/gateway/plugins/$1/.libs/$1.so"; }
on() { # API CMD...: CMD when API's part runs
    case " $(echo $APIS) " in *" $1 "*) shift && "$@" ;; esac
}
served() { # API...: those of them that run, comma-separated
    for _a in "$@"; do on "$_a" printf '%s\n' "$_a"; done | paste -sd, - | sed 's/,/, /g'
}
# What deps.sh installs is no reason to skip: a machine without it fails, saying so.
for p in curl python3 openssl; do
    command -v "$p" >/dev/null || hf_fail "$p not installed (deps.sh)"
done
curl --help all 2>/dev/null | grep -q -- '--aws-sigv4' || hf_fail "curl lacks --aws-sigv4 (7.75+)"
python3 -c 'import cryptography' 2>/dev/null || hf_fail "python3-cryptography not installed (deps.sh)"
hf_store_setup

PY="python3 $top_srcdir/tests/integration/hyok-all.py"
TOK="python3 $top_srcdir/tests/integration/jwt-token.py"
# A block shows within a second (the link cache); more for a loaded machine.
CHANGE_MS=${HYOK_CHANGE_MS:-1500}
hf() { "$HF_CLI" "$@" >>"$HF_TMP/cli.log" 2>&1 || hf_fail "holdfast $*: $(tail -n 3 "$HF_TMP/cli.log")"; }
keyinfo() { # KEY FIELD: uuid, or version_uuid (the current version's)
    "$HF_CLI" --json key show "$1" | python3 -c 'import json,sys; k=json.load(sys.stdin)
print(k["uuid"] if sys.argv[1] == "uuid" else k["versions"][-1]["uuid"])' "$2"
}

# ---- the store: one AES key for the five symmetric clouds, one RSA key for SAP and DKE ----
# holdfastd registers each plugin's link type at start; links made before it need them now.
for p in $APIS; do hf link type add "$p"; done
hf key create sym --alg AES-256
hf key create rsa --alg RSA-3072
SYM_UUID=$(keyinfo sym uuid)
SYM_VER=$(keyinfo sym version_uuid)
RSA_UUID=$(keyinfo rsa uuid)
RSA_VER=$(keyinfo rsa version_uuid)
OCI_VAULT=$("$HF_CLI" uuid)
SAP_KEYSTORE=$("$HF_CLI" uuid)

# ---- certificates: the server's, SAP's client; the issuers' key sets over HTTPS ----
HF_PKI=$HF_TMP/pki
PKI=$HF_PKI
hf_pki_ca ca
hf_pki_cert server localhost ca "subjectAltName=IP:127.0.0.1,DNS:localhost"
hf_pki_ca sapca
hf_pki_cert sap sap-dc-client sapca "extendedKeyUsage=clientAuth"
SAP_PIN=$(openssl x509 -in "$PKI/sap.pem" -outform DER | openssl dgst -sha256 -hex | sed 's/.*= *//')
CURL_CA_BUNDLE=$PKI/ca.pem
export CURL_CA_BUNDLE
JW=$HF_TMP/jwks
mkdir -p "$JW"
{ $TOK keys "$JW" google idp gz oci entra && $TOK publish "$JW" google google &&
    $TOK publish "$JW" idp idp && $TOK publish "$JW" authz gz && $TOK publish "$JW" oci oci &&
    $TOK publish "$JW" entra entra; } || hf_fail "cannot make the signing keys"
hf_jwks_serve "$JW" "$PKI/server.pem" "$PKI/server.key" /google/certs=google /idp/certs=idp \
    '/jwk/*=authz' /oci/jwk=oci /entra/keys=entra
JWKS=https://127.0.0.1:$HF_JWKS_PORT

PB=$(hf_free_port)
PS=$(hf_free_port)
[ "$PB" != "$PS" ] || hf_skip "free ports collided"

# ---- calls: every one noted (API, X-Request-Id) for the audit check at the end ----
OUT=$HF_TMP/out.json
HDR=$HF_TMP/headers
REQS=$HF_TMP/requests
: >"$REQS"
# call API PORT PATH BODY [curl args]: a POST (a GET when BODY is "-"); CODE its status, OUT its
# body; its audit record is checked at the end (exactly one; none after `unaudited`).
call() {
    _api=$1 _port=$2 _path=$3 _body=$4
    shift 4
    rm -f "$OUT" "$HDR"
    [ "$_body" = - ] || set -- -H 'Content-Type: application/json' --data-binary "$_body" "$@"
    CODE=$(curl -sS -o "$OUT" -D "$HDR" -w '%{http_code}' "$@" "https://127.0.0.1:$_port$_path" \
        2>"$HF_TMP/curl.err") || CODE="curl-exit-$?"
    _rid=$(tr -d '\r' <"$HDR" 2>/dev/null | awk 'tolower($1) == "x-request-id:" { print $2 }')
    [ -n "$_rid" ] || hf_fail "$_api $_path: no X-Request-Id ($CODE, $(cat "$HF_TMP/curl.err"))"
    # The key its record must name: rsa for DKE and SAP's rsa paths, else sym.
    case $_api$_path in ms-dke* | *"$RSA_UUID"*) _key=$RSA_UUID ;; *) _key=$SYM_UUID ;; esac
    echo "$_api $_rid $AUDIT $_key" >>"$REQS"
}
AUDIT=one
unaudited() { AUDIT=none && call "$@" && AUDIT=one; } # call ...: it makes no record
expect() { # STATUS WHAT
    [ "$CODE" = "$1" ] && return 0
    echo "--- body:" >&2
    cat "$OUT" >&2 2>/dev/null
    cat "$HF_TMP/curl.err" >&2
    hf_fail "$2: HTTP $CODE, want $1"
}
field() { $PY get "$OUT" "$1"; }
SEQ=0
next_id() { SEQ=$((SEQ + 1)) && RID=hyok-all-$SEQ; } # a fresh cloud request id in RID

# ---- aws-xks: SigV4 on the bearer listener; key id sym-xks ----
AKID=AKIAIOSFODNN7EXAMPLE
SEC=FYtE5EFA5FT0mCc3DrGUe2sti527BitkQ0Zr9MO9fvE
XKS_AAD=$(printf 'six clouds' | base64)
XKS_PT=$($PY xks-plaintext)
on aws-xks hf link add aws-xks sym-xks sym
xks_conf() {
    printf '[plugin:aws-xks]\npath = %s\n\n' "$(so aws-xks)"
    hf_xks_store sym-xks "$AKID:$SEC" sym-xks
}
xks() { # OP BODY
    call aws-xks "$PB" "/kms/xks/v1/keys/sym-xks/$1" "$2" \
        --aws-sigv4 "aws:amz:us-east-1:kms-xks-proxy" --user "$AKID:$SEC"
}
xks_roundtrip() { # WHEN; the Encrypt answer stays in $HF_TMP/xks-enc.json
    next_id
    xks encrypt "$($PY xks-encrypt "$RID" "$XKS_AAD")"
    expect 200 "xks encrypt ($1)"
    cp "$OUT" "$HF_TMP/xks-enc.json"
    next_id
    xks decrypt "$($PY xks-decrypt "$RID" "$HF_TMP/xks-enc.json" "$XKS_AAD")"
    expect 200 "xks decrypt ($1)"
    check "$(field plaintext)" "$XKS_PT" "xks decrypt ($1): the plaintext"
}
xks_refused() { # WHEN
    next_id
    xks encrypt "$($PY xks-encrypt "$RID" "$XKS_AAD")"
    expect 400 "xks encrypt ($1)"
    check "$(field errorName)" InvalidStateException "xks encrypt ($1): the error"
}

# ---- gcp-ekm: ID tokens, under /ekm; key path v0/keys/sym ----
EKM_AGENT=agent@gcp-sa-ekms.iam.gserviceaccount.com
EKM_TOKEN=$($TOK mint "$JW" --key google iss=https://accounts.google.com aud=https://ekm.test \
    email=$EKM_AGENT email_verified=true iat=+0 exp=+900)
EKM_CTX='"additionalContext":{"accessReasonContext":{"reason":"CUSTOMER_INITIATED_ACCESS"}}'
DEK=$(python3 -c 'import base64,os; print(base64.b64encode(os.urandom(32)).decode())')
on gcp-ekm hf link add gcp-ekm v0/keys/sym sym
ekm_conf() {
    cat <<EOF
[plugin:gcp-ekm]
path = $(so gcp-ekm)

[gcp-ekm:main]
prefix = /ekm
audiences = https://ekm.test
jwks = $JWKS/google/certs
jwks_ca = $PKI/ca.pem
jwks_allow = 127.0.0.0/8
key.v0/keys/sym.allowed_emails = $EKM_AGENT
EOF
}
ekm() { # VERB BODY
    call gcp-ekm "$PB" "/ekm/v0/keys/sym:$1" "$2" -H "Authorization: Bearer $EKM_TOKEN"
}
ekm_roundtrip() { # WHEN
    ekm wrap "{\"plaintext\":\"$DEK\",$EKM_CTX}"
    expect 200 "ekm wrap ($1)"
    _blob=$(field wrappedBlob)
    ekm unwrap "{\"wrappedBlob\":\"$_blob\",$EKM_CTX}"
    expect 200 "ekm unwrap ($1)"
    check "$(field plaintext)" "$DEK" "ekm unwrap ($1): the plaintext"
}
ekm_refused() { # WHEN
    ekm wrap "{\"plaintext\":\"$DEK\",$EKM_CTX}"
    expect 403 "ekm wrap ($1)"
    check "$(field code)" 7 "ekm wrap ($1): PERMISSION_DENIED"
}

# ---- gws-cse: authentication and authorization tokens, under /cse; KEK kek-sym ----
KACLS=https://127.0.0.1:$PB/cse
on gws-cse hf link add gws-cse kek-sym sym
cse_conf() {
    cat <<EOF
[plugin:gws-cse]
path = $(so gws-cse)

[gws-cse:main]
prefix = /cse
kacls_url = $KACLS
kek = kek-sym
authn.idp.issuer = https://idp.example.com
authn.idp.jwks = $JWKS/idp/certs
authn.idp.audiences = cse-client
authz_jwks = $JWKS/jwk/%s
jwks_ca = $PKI/ca.pem
jwks_allow = 127.0.0.0/8
EOF
}
CSE_AUTHN=$($TOK mint "$JW" --key idp iss=https://idp.example.com aud=cse-client \
    email=alice@example.com iat=+0 exp=+900)
cse_authz() { # ROLE
    $TOK mint "$JW" --key gz iss=gsuitecse-tokenissuer-drive@system.gserviceaccount.com \
        aud=cse-authorization email=alice@example.com role="$1" kacls_url="$KACLS" \
        resource_name=//googleapis.com/drive/files/d1 perimeter_id= iat=+0 exp=+900
}
CSE_W=$(cse_authz writer)
CSE_R=$(cse_authz reader)
cse_body() { # ROLE-TOKEN MEMBER VALUE
    printf '{"authentication":"%s","authorization":"%s","%s":"%s","reason":"six"}' \
        "$CSE_AUTHN" "$1" "$2" "$3"
}
cse_roundtrip() { # WHEN
    call gws-cse "$PB" /cse/wrap "$(cse_body "$CSE_W" key "$DEK")"
    expect 200 "cse wrap ($1)"
    _wk=$(field wrapped_key)
    call gws-cse "$PB" /cse/unwrap "$(cse_body "$CSE_R" wrapped_key "$_wk")"
    expect 200 "cse unwrap ($1)"
    check "$(field key)" "$DEK" "cse unwrap ($1): the key"
}
cse_refused() { # WHEN
    call gws-cse "$PB" /cse/wrap "$(cse_body "$CSE_W" key "$DEK")"
    expect 403 "cse wrap ($1)"
    check "$(field code)" 403 "cse wrap ($1): the code"
}

# ---- oci-ekms: IDCS client-credentials tokens, one vault; keyId is sym's UUID ----
OCI_BASE=/api/v1/cckm/oci/ekm/v1/vaults/$OCI_VAULT
OCI_AUD=https://127.0.0.1:$PB/
OCI_ISS=https://idcs-test.identity.oraclecloud.com
OCI_AAD=$(printf 'oci aad' | base64)
on oci-ekms hf link add oci-ekms "$OCI_VAULT/$SYM_UUID" sym
oci_conf() {
    cat <<EOF
[plugin:oci-ekms]
path = $(so oci-ekms)

[oci-ekms:six]
vault_id = $OCI_VAULT
issuer = $OCI_ISS
audience = $OCI_AUD
jwks = $JWKS/oci/jwk
jwks_ca = $PKI/ca.pem
jwks_allow = 127.0.0.0/8
EOF
}
OCI_TOKEN=$($TOK mint "$JW" --key oci iss=$OCI_ISS aud=$OCI_AUD scope=oci_ekms \
    client_id=vault-client sub=vault-client iat=+0 exp=+900)
oci() { # OP BODY
    next_id
    call oci-ekms "$PB" "$OCI_BASE/keys/$SYM_UUID/$1" "$2" -H "Authorization: Bearer $OCI_TOKEN" \
        -H "opc-request-id: $RID"
}
oci_roundtrip() { # WHEN
    oci encrypt "{\"plaintext\":\"$DEK\",\"aad\":\"$OCI_AAD\"}"
    expect 200 "oci encrypt ($1)"
    check "$(field keyId)" "$SYM_UUID" "oci encrypt ($1): keyId is sym's UUID"
    check "$(field keyVersionId)" "$SYM_VER" "oci encrypt ($1): keyVersionId is sym's version"
    _ct=$(field ciphertext)
    oci decrypt "{\"ciphertext\":\"$_ct\",\"aad\":\"$OCI_AAD\"}"
    expect 200 "oci decrypt ($1)"
    check "$(field plaintext)" "$DEK" "oci decrypt ($1): the plaintext"
}
oci_refused() { # WHEN
    oci encrypt "{\"plaintext\":\"$DEK\"}"
    expect 403 "oci encrypt ($1)"
    check "$(field code)" 403 "oci encrypt ($1): the code"
}

# ---- sap-hyok: mutual TLS on its own listener, the leaf pinned; sym and rsa by UUID ----
SAP_BASE=/api/v1/cckm/sap/hyok/v1/keystores/$SAP_KEYSTORE
SAP_TENANT=tenant-six
SAP_AAD=$(printf 'sap aad' | base64)
on sap-hyok hf link add sap-hyok "$SAP_KEYSTORE/$SYM_UUID" sym
on sap-hyok hf link add sap-hyok "$SAP_KEYSTORE/$RSA_UUID" rsa
sap_conf() {
    cat <<EOF
[plugin:sap-hyok]
path = $(so sap-hyok)

[sap-hyok:$SAP_KEYSTORE]
tenant = $SAP_TENANT
pins = $SAP_PIN
EOF
}
sap_listener_conf() {
    printf '[listener:sap]\nlisten = 127.0.0.1:%s\ncert = pki/server.pem\nkey = pki/server.key\n' "$PS"
    printf 'client_ca = pki/sapca.pem\nclient_certificate = required\nplugins = sap-hyok\n'
}
sap() { # KEY-UUID OP JSON-MEMBERS: the body is request_metadata plus the members
    next_id
    call sap-hyok "$PS" "$SAP_BASE/keys/$1/$2" \
        "{\"request_metadata\":{\"sap_tenant_id\":\"$SAP_TENANT\",\"sap_request_id\":\"$RID\"}${3:+,$3}}" \
        --cert "$PKI/sap.pem" --key "$PKI/sap.key"
}
sap_roundtrip() { # WHEN: sym's GCM, rsa's OAEP
    sap "$SYM_UUID" symmetric-encrypt "\"plaintext\":\"$DEK\",\"aad\":\"$SAP_AAD\""
    expect 200 "sap symmetric-encrypt ($1)"
    check "$(field key_version_id)" "$SYM_VER" "sap symmetric-encrypt ($1): sym's version"
    _m="\"ciphertext\":\"$(field ciphertext)\",\"iv\":\"$(field iv)\",\"tag\":\"$(field tag)\""
    sap "$SYM_UUID" symmetric-decrypt "$_m,\"aad\":\"$SAP_AAD\",\"key_version_id\":\"$SYM_VER\""
    expect 200 "sap symmetric-decrypt ($1)"
    check "$(field plaintext)" "$DEK" "sap symmetric-decrypt ($1): the plaintext"
    sap "$RSA_UUID" asymmetric-encrypt "\"plaintext\":\"$DEK\",\"algorithm\":\"RSAES_OAEP_SHA_256\""
    expect 200 "sap asymmetric-encrypt ($1)"
    check "$(field key_version_id)" "$RSA_VER" "sap asymmetric-encrypt ($1): rsa's version"
    SAP_RSA_CT=$(field ciphertext)
    sap "$RSA_UUID" asymmetric-decrypt \
        "\"ciphertext\":\"$SAP_RSA_CT\",\"algorithm\":\"RSAES_OAEP_SHA_256\",\"key_version_id\":\"$RSA_VER\""
    expect 200 "sap asymmetric-decrypt ($1)"
    check "$(field plaintext)" "$DEK" "sap asymmetric-decrypt ($1): the plaintext"
}
sap_refused() { # WHEN: both keys' SAP links blocked
    sap "$SYM_UUID" symmetric-encrypt "\"plaintext\":\"$DEK\""
    expect 403 "sap symmetric-encrypt ($1)"
    check "$(field code)" 403 "sap symmetric-encrypt ($1): the code"
    sap "$RSA_UUID" asymmetric-decrypt \
        "\"ciphertext\":\"$SAP_RSA_CT\",\"algorithm\":\"RSAES_OAEP_SHA_256\",\"key_version_id\":\"$RSA_VER\""
    expect 403 "sap asymmetric-decrypt ($1)"
    # SAP DC still reads the key's state.
    sap "$SYM_UUID" get-metadata ""
    expect 200 "sap key get-metadata ($1)"
    check "$(field state)" Disabled "sap key get-metadata ($1): the state"
}
sap_open_xks() { # WHEN: SAP opens what XKS sealed with sym (the GCM AAD as SAP's aad)
    _x=$HF_TMP/xks-enc.json
    _m="\"ciphertext\":\"$($PY get "$_x" ciphertext)\",\"iv\":\"$($PY get "$_x" initializationVector)\""
    _m="$_m,\"tag\":\"$($PY get "$_x" authenticationTag)\""
    sap "$SYM_UUID" symmetric-decrypt \
        "$_m,\"aad\":\"$($PY xks-gcm-aad "$_x" "$XKS_AAD")\",\"key_version_id\":\"$SYM_VER\""
    expect 200 "sap symmetric-decrypt of XKS's ciphertext ($1)"
    check "$(field plaintext)" "$XKS_PT" "sap opening XKS's ciphertext ($1)"
}
sap_public_key() { # the PEM into $HF_TMP/sap-pub.pem
    sap "$RSA_UUID" get-public-key ""
    expect 200 "sap get-public-key"
    check "$(field key_version_id)" "$RSA_VER" "sap get-public-key: rsa's version"
    field public_key >"$HF_TMP/sap-pub.pem"
}
sap_open_dke() { # FILE WHEN: SAP decrypts what was sealed to DKE's public key (FILE: base64)
    sap "$RSA_UUID" asymmetric-decrypt \
        "\"ciphertext\":\"$(cat "$1")\",\"algorithm\":\"RSAES_OAEP_SHA_256\",\"key_version_id\":\"$RSA_VER\""
    expect 200 "sap asymmetric-decrypt of a ciphertext sealed to DKE's key ($2)"
    check "$(field plaintext)" "$DEK" "sap opening DKE's ciphertext ($2)"
}

# ---- ms-dke: anonymous GET of the public key, Entra ID bearer decrypt, under /dke ----
DKE_AUD=https://127.0.0.1:$PB
DKE_ISS=https://sts.windows.net/00000000-0000-4000-8000-000000000042/
on ms-dke hf link add ms-dke rsa-dke rsa
dke_conf() {
    cat <<EOF
[plugin:ms-dke]
path = $(so ms-dke)

[ms-dke]
prefix = /dke
base_url = https://127.0.0.1:$PB/dke
audience = $DKE_AUD
issuers = $DKE_ISS
jwks = $JWKS/entra/keys
jwks_ca = $PKI/ca.pem
jwks_allow = 127.0.0.0/8
key.rsa-dke.allowed_emails = alice@example.com
EOF
}
DKE_TOKEN=$($TOK mint "$JW" --key entra iss=$DKE_ISS aud=$DKE_AUD email=alice@example.com \
    oid=0000-alice iat=+0 exp=+900)
dke_get() { # WHEN: the public key into $HF_TMP/dke-key.json
    unaudited ms-dke "$PB" /dke/rsa-dke -
    expect 200 "dke GET ($1)"
    cp "$OUT" "$HF_TMP/dke-key.json"
    check "$(field key.kid)" "https://127.0.0.1:$PB/dke/rsa-dke/$RSA_VER" "dke GET ($1): the kid"
}
dke_decrypt() { # CIPHERTEXT: base64, sealed to rsa's current version
    call ms-dke "$PB" "/dke/rsa-dke/$RSA_VER/decrypt" "{\"alg\":\"RSA-OAEP-256\",\"value\":\"$1\"}" \
        -H "Authorization: Bearer $DKE_TOKEN"
}
dke_roundtrip() { # WHEN: the key fetched anonymously, a value sealed to it decrypted
    dke_get "$1"
    $PY oaep "$HF_TMP/dke-key.json" SHA256 "$DEK" >"$HF_TMP/dke-ct" || hf_fail "oaep"
    dke_decrypt "$(cat "$HF_TMP/dke-ct")"
    expect 200 "dke decrypt ($1)"
    check "$(field value)" "$DEK" "dke decrypt ($1): the value"
}
dke_refused() { # WHEN
    unaudited ms-dke "$PB" /dke/rsa-dke -
    expect 403 "dke GET ($1)"
    dke_decrypt "$(cat "$HF_TMP/dke-ct")"
    expect 403 "dke decrypt ($1)"
}

# ---- holdfastd: one config, two listeners ----
CONF=$HF_TMP/holdfastd.conf
cat >"$CONF" <<EOF
[gateway]
threads = 2
module = $HF_MODULE
pin_file = $HOLDFAST_STATE_DIR/token-gateway.pin
plugins = $(served aws-xks gcp-ekm gws-cse oci-ekms sap-hyok ms-dke)
log = $HF_TMP/holdfastd.log

[listener:bearer]
listen = 127.0.0.1:$PB
cert = pki/server.pem
key = pki/server.key
client_certificate = off
plugins = $(served aws-xks gcp-ekm gws-cse oci-ekms ms-dke)

$(on sap-hyok sap_listener_conf)

$(on aws-xks xks_conf)

$(on gcp-ekm ekm_conf)

$(on gws-cse cse_conf)

$(on oci-ekms oci_conf)

$(on sap-hyok sap_conf)

$(on ms-dke dke_conf)
EOF
# conf/holdfastd-all.conf.sample, its paths, hosts and placeholders made this test's, loads.
sample_check() {
    printf '%s:%s\n' "$AKID" "$SEC" >"$HF_TMP/xks-credential"
    _loc="jwks_ca = $PKI/ca.pem
jwks_allow = 127.0.0.0/8"
    $PY sample "$top_srcdir/conf/holdfastd-all.conf.sample" "$HF_TMP/sample.conf" \
        "/usr/lib/x86_64-linux-gnu/pkcs11/holdfast-pkcs11.so=>$HF_MODULE" \
        "/var/lib/holdfast/token-gateway.pin=>$HOLDFAST_STATE_DIR/token-gateway.pin" \
        "/var/log/holdfast/holdfastd.log=>$HF_TMP/sample.log" \
        "/etc/holdfast/tls/server.pem=>$PKI/server.pem" "/etc/holdfast/tls/server.key=>$PKI/server.key" \
        "/etc/holdfast/tls/sap-cloud-root-ca.pem=>$PKI/sapca.pem" \
        "0.0.0.0:443=>127.0.0.1:$(hf_free_port)" "0.0.0.0:8443=>127.0.0.1:$(hf_free_port)" \
        "/etc/holdfast/xks-credential=>$HF_TMP/xks-credential" \
        "https://www.googleapis.com/oauth2/v3/certs=>$JWKS/google/certs" \
        "https://idcs-0123456789abcdef.identity.oraclecloud.com/admin/v1/SigningCert/jwk=>$JWKS/oci/jwk" \
        "<the CSE client id>=>cse-client" "<sap_tenant_id>=>$SAP_TENANT" "<64 hex>=>$SAP_PIN" \
        "<tenantId>=>00000000-0000-4000-8000-000000000042" \
        "[gcp-ekm:main]+$_loc" "[gws-cse:main]+$_loc" "[oci-ekms:prod]+$_loc" \
        "[ms-dke]+jwks = $JWKS/entra/keys
$_loc" || hf_fail "the sample cannot be rewritten"
    for _p in $APIS; do printf '\n[plugin:%s]\npath = %s\n' "$_p" "$(so "$_p")"; done >>"$HF_TMP/sample.conf"
    hf_expect_exit 0 "$HOLDFASTD" -t -c "$HF_TMP/sample.conf"
}
[ -n "${HYOK_APIS:-}" ] || sample_check
hf_expect_exit 0 "$HOLDFASTD" -t -c "$CONF"
hf_gateway_start "https://127.0.0.1:$PB" "$HOLDFASTD" -f -c "$CONF"
grep -q "listener bearer on 127.0.0.1:$PB (tls) " "$HF_TMP/holdfastd.log" ||
    hf_fail "the start log does not name listener bearer, TLS without client certificates"
sap_started() {
    grep -q "listener sap on 127.0.0.1:$PS (tls, client certificate required) " \
        "$HF_TMP/holdfastd.log" || hf_fail "the start log does not name listener sap and its policy"
}
on sap-hyok sap_started

all_answer() { # WHEN
    on aws-xks xks_roundtrip "$1"
    on aws-xks on sap-hyok sap_open_xks "$1"
    on gcp-ekm ekm_roundtrip "$1"
    on gws-cse cse_roundtrip "$1"
    on oci-ekms oci_roundtrip "$1"
    on sap-hyok sap_roundtrip "$1"
    on ms-dke dke_roundtrip "$1"
}
same_rsa() { # SAP's and DKE's public keys are one; each opens what was sealed to the other
    sap_public_key
    $PY same-rsa "$HF_TMP/sap-pub.pem" "$HF_TMP/dke-key.json" || hf_fail "SAP and DKE show other keys"
    dke_decrypt "$SAP_RSA_CT"
    expect 200 "dke decrypt of SAP's asymmetric-encrypt"
    check "$(field value)" "$DEK" "dke opening SAP's ciphertext"
    sap_open_dke "$HF_TMP/dke-ct" "all linked"
}
sap_listener() { # SAP without its client certificate never reaches the plugin; the bearer
    # listener serves no SAP route (the gateway's generic 404)
    rm -f "$OUT"
    CODE=$(curl -sS -o "$OUT" -w '%{http_code}' -d '{}' \
        "https://127.0.0.1:$PS$SAP_BASE/get-metadata" 2>/dev/null) || CODE=handshake-failed
    check "$CODE" handshake-failed "sap without a client certificate"
    unaudited sap-hyok "$PB" "$SAP_BASE/get-metadata" '{}'
    expect 404 "a SAP route on the bearer listener"
    check "$(field error)" NotFound "a SAP route on the bearer listener: the gateway's 404"
    on aws-xks sap_listener_xks
}
sap_listener_xks() { # nor does the SAP listener serve XKS, even to a pinned client
    unaudited aws-xks "$PS" /kms/xks/v1/keys/sym-xks/encrypt "$($PY xks-encrypt x "$XKS_AAD")" \
        --aws-sigv4 "aws:amz:us-east-1:kms-xks-proxy" --user "$AKID:$SEC" \
        --cert "$PKI/sap.pem" --key "$PKI/sap.key"
    expect 404 "an XKS call on the SAP listener"
    check "$(field error)" NotFound "an XKS call on the SAP listener: the gateway's 404"
}
wait_change() { sleep "$(echo "$CHANGE_MS" | awk '{print $1/1000}')"; }
part() { # API: the prefix of its part's functions
    case $1 in aws-xks) echo xks ;; gcp-ekm) echo ekm ;; gws-cse) echo cse ;; oci-ekms) echo oci ;;
    sap-hyok) echo sap ;; ms-dke) echo dke ;; esac
}
links() { # block|unblock API: its links (SAP's: both keys')
    case $2 in
    aws-xks) hf link "$1" aws-xks sym-xks ;;
    gcp-ekm) hf link "$1" gcp-ekm v0/keys/sym ;;
    gws-cse) hf link "$1" gws-cse kek-sym ;;
    oci-ekms) hf link "$1" oci-ekms "$OCI_VAULT/$SYM_UUID" ;;
    sap-hyok) hf link "$1" sap-hyok "$SAP_KEYSTORE/$SYM_UUID" &&
        hf link "$1" sap-hyok "$SAP_KEYSTORE/$RSA_UUID" ;;
    ms-dke) hf link "$1" ms-dke rsa-dke ;;
    esac
}
blocked_round() { # API...: their links blocked, they refuse while every other API answers
    _blocked=$(for _a in "$@"; do on "$_a" echo "$_a"; done)
    [ -n "$_blocked" ] || return 0
    for _a in $_blocked; do links block "$_a"; done
    wait_change
    _when="$(echo $_blocked | sed 's/ /, /g') blocked"
    for _a in $APIS; do
        case " $(echo $_blocked) " in
        *" $_a "*) "$(part "$_a")_refused" "$_when" ;;
        *) "$(part "$_a")_roundtrip" "$_when" ;;
        esac
    done
    for _a in $_blocked; do links unblock "$_a"; done
    wait_change
}

# ---- every API answers; the same keys behind them ----
all_answer "all linked"
on sap-hyok on ms-dke same_rsa
on sap-hyok sap_listener

# ---- links blocked: those clouds refuse, the others still answer ----
# First one link of each key (sym's EKM, rsa's DKE), then the rest in pairs.
blocked_round gcp-ekm ms-dke
blocked_round aws-xks sap-hyok
blocked_round gws-cse oci-ekms
all_answer "unblocked"

# ---- one gateway's metrics count every API's successes ----
curl -sS "https://127.0.0.1:$PB/metrics" >"$HF_TMP/metrics.txt" || hf_fail "GET /metrics"
for p in $APIS; do
    grep -q "^holdfast_requests_total{api=\"$p\",operation=\"[^\"]*\",status=\"200\"} [1-9]" \
        "$HF_TMP/metrics.txt" ||
        hf_fail "/metrics has no success of $p: $(grep "api=\"$p\"" "$HF_TMP/metrics.txt" | head -n 3)"
done

# ---- one audit record per request, in its API's name ----
hf_gateway_stop || hf_fail "holdfastd did not stop cleanly"
$PY audit "$HOLDFAST_STATE_DIR/audit.log" "$HF_TMP/holdfastd.log" "$REQS" || hf_fail "audit records"
hf_expect_exit 0 "$HF_CLI" audit verify
echo "hyok-all: ok ($(wc -l <"$REQS") requests)"
