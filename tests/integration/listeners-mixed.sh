#!/bin/sh
# Issue 11's must-show 2: ONE holdfastd serving AWS XKS with client certificates required on one
# TLS port, and Google Cloud EKM and Workspace CSE, both catch-all plugins, without client
# certificates on another TLS port (each route's `accepts` declines paths outside its plugin's
# prefixes, so the two share the listener):
#
#   xks     aws-xks, client_certificate = required: without a certificate the handshake fails,
#           with one a signed GetKeyMetadata and an Encrypt work; EKM and CSE paths are the
#           gateway's generic 404 (the route belongs to a plugin this listener does not serve);
#   bearer  gcp-ekm and gws-cse, client_certificate = off: an EKM wrap (bearer ID token) and a
#           CSE wrap (authentication and authorization tokens) work without a certificate,
#           each plugin answering only under its own prefix (an EKM path under /cse is CSE's
#           404, and the other way round); an XKS path is the generic 404.
#
# Then SIGHUP with the two catch-alls listed the other way round: both still answer.
. "${top_srcdir:-.}/tests/integration/lib.sh"

hf_xks_need
EKM_PLUGIN="$top_builddir/gateway/plugins/gcp-ekm/.libs/gcp-ekm.so"
CSE_PLUGIN="$top_builddir/gateway/plugins/gws-cse/.libs/gws-cse.so"
[ -f "$EKM_PLUGIN" ] || hf_skip "$EKM_PLUGIN not built"
[ -f "$CSE_PLUGIN" ] || hf_skip "$CSE_PLUGIN not built"
python3 -c 'import cryptography' 2>/dev/null || hf_skip "python3-cryptography not installed"
hf_store_setup

hf() { "$HF_CLI" "$@" >>"$HF_TMP/cli.log" 2>&1 || hf_fail "holdfast $*: $(tail -n 3 "$HF_TMP/cli.log")"; }
hf key create xk1
hf link add aws-xks xk1 xk1
hf key create ek1
hf link add gcp-ekm v0/keys/k1 ek1
hf key create ck1
hf link create gws-cse kek-cse ck1

# ---- certificates; the key sets of the EKM and CSE issuers over HTTPS ----
HF_PKI=$HF_TMP/pki
PKI=$HF_PKI
hf_pki_ca ca
hf_pki_cert server localhost ca "subjectAltName=IP:127.0.0.1,DNS:localhost"
hf_pki_cert kms cks.kms.us-east-1.amazonaws.com ca "extendedKeyUsage=clientAuth"
CURL_CA_BUNDLE=$PKI/ca.pem
export CURL_CA_BUNDLE
TOK="python3 $top_srcdir/tests/integration/jwt-token.py"
JW=$HF_TMP/jwks
mkdir -p "$JW"
{ $TOK keys "$JW" google idp gz && $TOK publish "$JW" google google &&
    $TOK publish "$JW" idp idp && $TOK publish "$JW" authz gz; } || hf_fail "cannot make the signing keys"
hf_jwks_serve "$JW" "$PKI/server.pem" "$PKI/server.key" /google/certs=google /idp/certs=idp \
    '/jwk/*=authz'
P_JWKS=$HF_JWKS_PORT

# ---- holdfastd: two TLS listeners ----
PX=$(hf_free_port)
PB=$(hf_free_port)
[ "$PX" != "$PB" ] || hf_skip "free ports collided"
AKID=AKIAIOSFODNN7EXAMPLE
SEC=FYtE5EFA5FT0mCc3DrGUe2sti527BitkQ0Zr9MO9fvE
KACLS=https://127.0.0.1:$PB/cse
CONF=$HF_TMP/holdfastd.conf
write_conf() { # BEARER-PLUGINS
    cat >"$CONF" <<EOF
[gateway]
threads = 2
module = $HF_MODULE
pin_file = $HOLDFAST_STATE_DIR/token-gateway.pin
plugins = aws-xks, $1
log = $HF_TMP/holdfastd.log

[plugin:aws-xks]
path = $XKS_PLUGIN

[plugin:gcp-ekm]
path = $EKM_PLUGIN

[plugin:gws-cse]
path = $CSE_PLUGIN

[listener:xks]
listen = 127.0.0.1:$PX
cert = pki/server.pem
key = pki/server.key
client_ca = pki/ca.pem
client_certificate = required
plugins = aws-xks

[listener:bearer]
listen = 127.0.0.1:$PB
cert = pki/server.pem
key = pki/server.key
client_certificate = off
plugins = $1

$(hf_xks_store xk1 "$AKID:$SEC" xk1)

[gcp-ekm:main]
prefix = /ekm
audiences = https://ekm.test
jwks = https://127.0.0.1:$P_JWKS/google/certs
jwks_ca = $PKI/ca.pem
jwks_allow = 127.0.0.0/8
key.v0/keys/k1.allowed_emails = agent@gcp-sa-ekms.iam.gserviceaccount.com

[gws-cse:main]
prefix = /cse
kacls_url = $KACLS
kek = kek-cse
authn.idp.issuer = https://idp.example.com
authn.idp.jwks = https://127.0.0.1:$P_JWKS/idp/certs
authn.idp.audiences = cse-client
authz_jwks = https://127.0.0.1:$P_JWKS/jwk/%s
jwks_ca = $PKI/ca.pem
jwks_allow = 127.0.0.0/8
EOF
}
write_conf "gcp-ekm, gws-cse"
hf_gateway_start "https://127.0.0.1:$PB" "$HOLDFASTD" -f -c "$CONF"
grep -q "listener xks on 127.0.0.1:$PX (tls, client certificate required)" "$HF_TMP/holdfastd.log" ||
    hf_fail "the start log does not name listener xks and its policy"

# ---- calls ----
OUT=$HF_TMP/out.json
KMS="--cert $PKI/kms.pem --key $PKI/kms.key"
field() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1])).get(sys.argv[2]); print("null" if v is None else v)' "$OUT" "$1" 2>/dev/null; }
handshake_failed() { # WHAT: the last call got no HTTP answer at all
    case $CODE in
    curl-exit-*) ;;
    *) hf_fail "$1: HTTP $CODE, want a failed handshake ($(cat "$OUT" 2>/dev/null))" ;;
    esac
}
python3 "$top_srcdir/tests/integration/xks-body.py" metadata >"$HF_TMP/md.json" &&
    python3 "$top_srcdir/tests/integration/xks-body.py" encrypt --pt-size 32 >"$HF_TMP/enc.json" ||
    hf_fail "xks-body.py"
xks() { # PORT OP BODY-FILE [curl options]: a signed XKS call on key xk1
    _port=$1 _op=$2 _file=$3
    shift 3
    rm -f "$OUT"
    CODE=$(curl -sS -o "$OUT" -w '%{http_code}' --aws-sigv4 "aws:amz:us-east-1:kms-xks-proxy" \
        --user "$AKID:$SEC" -H 'Content-Type: application/json' --data-binary "@$_file" \
        "$@" "https://127.0.0.1:$_port/kms/xks/v1/keys/xk1/$_op" 2>"$HF_TMP/curl.err") ||
        CODE="curl-exit-$?"
}
post() { # PORT PATH BODY [curl options]
    _port=$1 _path=$2 _body=$3
    shift 3
    rm -f "$OUT"
    CODE=$(curl -sS -o "$OUT" -w '%{http_code}' -H 'Content-Type: application/json' \
        --data-binary "$_body" "$@" "https://127.0.0.1:$_port$_path" 2>"$HF_TMP/curl.err") ||
        CODE="curl-exit-$?"
}
EKM_TOKEN=$($TOK mint "$JW" --key google iss=https://accounts.google.com aud=https://ekm.test \
    email=agent@gcp-sa-ekms.iam.gserviceaccount.com email_verified=true iat=+0 exp=+600)
EKM_WRAP='{"plaintext":"SGVsbG8gV29ybGQh","additionalContext":{"accessReasonContext":{"reason":"CUSTOMER_INITIATED_ACCESS"}}}'
ekm() { # PORT [PATH [curl options]]: an EKM wrap of key k1 with a valid token
    _port=$1 _path=${2:-/ekm/v0/keys/k1:wrap}
    shift $(($# < 2 ? $# : 2))
    post "$_port" "$_path" "$EKM_WRAP" -H "Authorization: Bearer $EKM_TOKEN" "$@"
}
DEK=$(python3 -c 'import base64,os; print(base64.b64encode(os.urandom(32)).decode())')
CSE_WRAP=$(printf '{"authentication":"%s","authorization":"%s","key":"%s","reason":"mixed"}' \
    "$($TOK mint "$JW" --key idp iss=https://idp.example.com aud=cse-client email=alice@example.com iat=+0 exp=+600)" \
    "$($TOK mint "$JW" --key gz iss=gsuitecse-tokenissuer-drive@system.gserviceaccount.com \
        aud=cse-authorization email=alice@example.com role=writer kacls_url="$KACLS" \
        resource_name=//googleapis.com/drive/files/d1 perimeter_id= iat=+0 exp=+600)" "$DEK")
cse() { # PORT [PATH [curl options]]: a CSE wrap with valid tokens
    _port=$1 _path=${2:-/cse/wrap}
    shift $(($# < 2 ? $# : 2))
    post "$_port" "$_path" "$CSE_WRAP" "$@"
}

# ---- xks: client certificates required ----
xks "$PX" metadata "$HF_TMP/md.json"
handshake_failed "xks: an XKS call without a client certificate"
xks "$PX" metadata "$HF_TMP/md.json" $KMS
check "$CODE" 200 "xks: GetKeyMetadata with the client certificate ($(cat "$OUT"))"
check "$(field keyStatus)" ENABLED "xks: xk1's status"
xks "$PX" encrypt "$HF_TMP/enc.json" $KMS
check "$CODE" 200 "xks: Encrypt with the client certificate ($(cat "$OUT"))"
[ "$(field ciphertext)" != null ] || hf_fail "xks: Encrypt answered no ciphertext"
ekm "$PX" /ekm/v0/keys/k1:wrap $KMS
check "$CODE" 404 "xks: an EKM wrap on the XKS listener"
check "$(field error)" NotFound "xks: the EKM path is the gateway's generic 404"
cse "$PX" /cse/wrap $KMS
check "$CODE" 404 "xks: a CSE wrap on the XKS listener"
check "$(field error)" NotFound "xks: the CSE path is the gateway's generic 404"

# ---- bearer: no client certificates, two catch-all plugins ----
bearer_calls() { # WHEN
    ekm "$PB"
    check "$CODE" 200 "bearer ($1): an EKM wrap without a client certificate ($(cat "$OUT"))"
    [ "$(field wrappedBlob)" != null ] || hf_fail "bearer ($1): the EKM wrap answered no wrappedBlob"
    cse "$PB"
    check "$CODE" 200 "bearer ($1): a CSE wrap without a client certificate ($(cat "$OUT"))"
    [ "$(field wrapped_key)" != null ] || hf_fail "bearer ($1): the CSE wrap answered no wrapped_key"
    xks "$PB" metadata "$HF_TMP/md.json"
    check "$CODE" 404 "bearer ($1): a signed XKS call on the bearer listener"
    check "$(field error)" NotFound "bearer ($1): the XKS path is the gateway's generic 404"
    [ "$(field errorName)" = null ] || hf_fail "bearer ($1): the 404 is in aws-xks's shape: $(cat "$OUT")"
    # Each catch-all declines what lies outside its prefixes, so the other one is asked: an EKM
    # verb under CSE's prefix is CSE's unknown op ({"code":404,...}); a CSE op under EKM's
    # prefix is EKM's unknown path (google.rpc.Status NOT_FOUND, 5).
    ekm "$PB" /cse/v0/keys/k1:wrap
    check "$CODE" 404 "bearer ($1): an EKM verb under /cse"
    check "$(field code)" 404 "bearer ($1): CSE's 404 body"
    cse "$PB" /ekm/wrap
    check "$CODE" 404 "bearer ($1): a CSE op under /ekm"
    check "$(field code)" 5 "bearer ($1): EKM's 404 body"
    post "$PB" /elsewhere/wrap '{}'
    check "$CODE" 404 "bearer ($1): a path under neither prefix"
    check "$(field error)" NotFound "bearer ($1): the gateway's generic 404 under neither prefix"
}
bearer_calls "gcp-ekm first"

# ---- SIGHUP: the catch-alls the other way round ----
write_conf "gws-cse, gcp-ekm"
kill -HUP "$HF_GW_PID"
n=0
until [ "$(curl -s "https://127.0.0.1:$PB/metrics" |
    awk '$1 == "holdfast_config_reloads_total{result=\"ok\"}" { print $2 }')" = 1 ]; do
    n=$((n + 1))
    [ "$n" -lt 50 ] || hf_fail "the reload was not taken: $(tail -n 5 "$HF_TMP/holdfastd.log")"
    sleep 0.1
done
bearer_calls "gws-cse first"

hf_gateway_stop || hf_fail "holdfastd did not stop cleanly"
echo "listeners-mixed: ok"
