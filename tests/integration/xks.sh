#!/bin/sh
# The aws-xks plugin end to end: holdfastd on loopback (plain and TLS with client certificates)
# over a key store made with the CLI, driven by `curl --aws-sigv4` as KMS would call it.
#
# Shows: every row of the spec's error table (and 405, 413), the four routes, the spec's
# 4300-byte plaintext with 8192 bytes of AAD, the CDIV, key rotation (old ciphertexts still
# decrypt, new ones name the new version), deactivation, a blocked link answering DISABLED and
# InvalidStateException within a second and an unblock likewise, two key stores with their own
# credentials, regions and allowlists, secondary authorization, a rate limit, a request deadline,
# credential rotation by editing the config and sending SIGHUP (no restart), mTLS (the gateway's
# handshake rules and a store's own subject rule), no HTTP/2, one-line compact JSON on every
# answer, and no plaintext in any log.
. "${top_srcdir:-.}/tests/integration/lib.sh"

hf_xks_need
hf_store_setup

PY="python3 $top_srcdir/tests/integration/xks-body.py"
# A change (block, unblock, rotation, state) must show in every call started a second after it:
# the gateway's key snapshots are at most that old. 250 ms more for a loaded or sanitizer build
# to carry a request to its key lookup.
CHANGE_MS=${XKS_CHANGE_MS:-1250}

# Credentials at both ends of the spec's sizes: AKID 20 and 30 of [A-Z2-7], secret 43 and 64.
AKID_A=AKIAIOSFODNN7EXAMPLE
SEC_A=FYtE5EFA5FT0mCc3DrGUe2sti527BitkQ0Zr9MO9fvE
AKID_B=ABCDEFGHIJKLMNOPQRSTUVWXYZ2345
SEC_B=VU6W2byoiBrhDqNGbx703oL0syCAmhlQgwNUT123456VU6W2byoiBrhDqNGbx703
# The one rotated in: made fresh.
AKID_C=$(python3 -c 'import random; print("".join(random.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") for _ in range(24)))')
SEC_C=$(openssl rand -base64 32)

hf() { "$HF_CLI" "$@" >>"$HF_TMP/cli.log" 2>&1 || hf_fail "holdfast $*: $(tail -n 3 "$HF_TMP/cli.log")"; }

# ---- keys, linked by their XKS key ids ----
hf key create k1
hf link add aws-xks k1 k1
hf key create kenc --usage encrypt
hf link add aws-xks kenc kenc
hf key create koff
hf link add aws-xks koff koff
hf key create kec --alg EC-P256
hf link add aws-xks kec kec
hf key create hk
hf link add aws-xks health hk
hf key create k2
hf link add aws-xks k2 k2

# ---- certificates: a CA, the server, KMS's client, another client, a foreign CA's client ----
HF_PKI="$HF_TMP/pki"
PKI=$HF_PKI
hf_pki_ca ca
hf_pki_ca foreign-ca
hf_pki_cert server localhost ca "subjectAltName=IP:127.0.0.1,DNS:localhost"
hf_pki_cert kms cks.kms.us-east-1.amazonaws.com ca \
    "subjectAltName=DNS:cks.kms.us-east-1.amazonaws.com
extendedKeyUsage=clientAuth"
hf_pki_cert other intruder.example.com ca "extendedKeyUsage=clientAuth"
hf_pki_cert stranger cks.kms.us-east-1.amazonaws.com foreign-ca "extendedKeyUsage=clientAuth"

# ---- holdfastd's config ----
P_PLAIN=$(hf_free_port)
P_TLS=$(hf_free_port)
CONF="$HF_TMP/holdfastd.conf"
MAIN_CREDS="credential = $AKID_A:$SEC_A"
write_conf() {
    cat >"$CONF" <<EOF
$(hf_gateway_section aws-xks 32k "127.0.0.1:$P_PLAIN" "127.0.0.1:$P_TLS tls")

[plugin:aws-xks]
path = $XKS_PLUGIN

[tls]
cert = $PKI/server.pem
key = $PKI/server.key
client_ca = $PKI/ca.pem

[aws-xks]
health_key = health
health_cache_seconds = 30

[aws-xks:main]
prefix =
$MAIN_CREDS
regions = us-east-1
keys = k1, kenc, koff, kec, kgone

[aws-xks:second]
prefix = /keystores/second
credential = $AKID_B:$SEC_B
regions = eu-west-1, eu-central-1
keys = k2
authorization = on
deny = no-bob awsPrincipalArn=arn:aws:iam::*:user/bob
allow = alice awsPrincipalArn=arn:aws:iam::111122223333:user/Alice kmsOperation=*

[aws-xks:limited]
prefix = /keystores/limited
credential = $AKID_A:$SEC_A
regions = us-east-1
keys = *
rate_limit = 1

[aws-xks:deadline]
prefix = /keystores/deadline
credential = $AKID_A:$SEC_A
regions = us-east-1
keys = k1
deadline_ms = 500

[aws-xks:broken]
prefix = /keystores/broken-health
credential = $AKID_A:$SEC_A
regions = us-east-1
keys = k1
health_key = no-such-key

[aws-xks:mtls]
prefix = /keystores/mtls-only
credential = $AKID_A:$SEC_A
regions = us-east-1
keys = k1
mtls_subject = CN=cks.kms.*.amazonaws.com
EOF
}
write_conf

# A bad value is refused with its name, before anything starts.
sed 's|^prefix = /keystores/second$|prefix = /short|' "$CONF" >"$HF_TMP/bad.conf"
hf_expect_exit 1 "$HOLDFASTD" -t -c "$HF_TMP/bad.conf"
grep -q "prefix" "$HF_ERR" || { cat "$HF_ERR"; hf_fail "a bad prefix is not named"; }
hf_expect_exit 0 "$HOLDFASTD" -t -c "$CONF"
# Secret files (pkcs11/common/secret-file.h): a credential file, or a config holding credentials, that
# others may read is refused with the file and its mode; a group-readable one only warned about.
printf '%s:%s\n' "$AKID_B" "$SEC_B" >"$HF_TMP/open.creds"
chmod 644 "$HF_TMP/open.creds"
sed "s|^credential = $AKID_B:$SEC_B\$|credential_file = $HF_TMP/open.creds|" "$CONF" \
    >"$HF_TMP/open-creds.conf"
hf_expect_exit 1 "$HOLDFASTD" -t -c "$HF_TMP/open-creds.conf"
grep -qF "credential_file $HF_TMP/open.creds: mode 0644: world-readable; chmod 600" "$HF_ERR" ||
    hf_fail "a world-readable credential_file: $(cat "$HF_ERR")"
cp "$CONF" "$HF_TMP/open.conf"
chmod 644 "$HF_TMP/open.conf"
hf_expect_exit 1 "$HOLDFASTD" -t -c "$HF_TMP/open.conf"
grep -qF "$HF_TMP/open.conf: mode 0644: world-readable; chmod 600" "$HF_ERR" ||
    hf_fail "a world-readable config holding credentials: $(cat "$HF_ERR")"
chmod 640 "$HF_TMP/open.conf"
hf_expect_exit 0 "$HOLDFASTD" -t -c "$HF_TMP/open.conf"
grep -qF "$HF_TMP/open.conf: mode 0640: group-readable" "$HF_ERR" ||
    hf_fail "a group-readable config holding credentials: no warning: $(cat "$HF_ERR")"

# ---- start ----
hf_gateway_start "http://127.0.0.1:$P_PLAIN" "$HOLDFASTD" -f -c "$CONF"

# ---- calling it ----
OUT="$HF_TMP/out.json"
SEEN="$HF_TMP/seen-errors"
: >"$SEEN"
BASE="http://127.0.0.1:$P_PLAIN"
CRED="$AKID_A:$SEC_A"
REGION=us-east-1
TLS_OPTS=
# xks PATH BODYFILE [curl options]: POST, signed with $CRED for $REGION, to $BASE$PATH. CODE gets
# the HTTP status (or curl-exit-N), $OUT the body, which must be one line of compact JSON.
xks() {
    _path=$1 _body=$2
    shift 2
    rm -f "$OUT"
    CODE=$(curl -sS -o "$OUT" -w '%{http_code}' $TLS_OPTS \
        --aws-sigv4 "aws:amz:$REGION:kms-xks-proxy" --user "$CRED" \
        -H 'Content-Type: application/json' --data-binary "@$_body" "$@" "$BASE$_path" \
        2>"$HF_TMP/curl.err") || CODE="curl-exit-$?"
    if [ -s "$OUT" ]; then
        $PY compact "$OUT" || hf_fail "$_path: the answer is not one line of compact JSON"
    fi
}
# expect STATUS [ERROR_NAME]: what the last call answered.
expect() {
    if [ "$CODE" != "$1" ]; then
        echo "--- body:" >&2
        cat "$OUT" >&2 2>/dev/null
        cat "$HF_TMP/curl.err" >&2
        hf_fail "$_path: HTTP $CODE, want $1 ${2:-}"
    fi
    [ -n "${2:-}" ] || return 0
    _name=$($PY get "$OUT" errorName)
    [ "$_name" = "$2" ] || hf_fail "$_path: errorName '$_name', want '$2' ($(cat "$OUT"))"
    echo "$1 $2" >>"$SEEN"
}
field() { $PY get "$OUT" "$1"; }
body() { # NAME ARGS...: a request body made by xks-body.py ARGS, in file $B (named NAME)
    B="$HF_TMP/$1.json"
    shift
    $PY "$@" >"$B" || hf_fail "xks-body.py $*"
}
keys=/kms/xks/v1/keys

# ---- GetHealthStatus ----
body health health
xks /kms/xks/v1/health "$B"
expect 200
check "$(field xksProxyFleetSize)" 1 "fleet size"
check "$(field xksProxyVendor)" Holdfast "proxy vendor"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); f=d["ekmFleetDetails"];
assert 1 <= len(f) <= 10 and all(e["healthStatus"] == "ACTIVE" and e["id"] and e["model"] for e in f), d' "$OUT" ||
    hf_fail "ekmFleetDetails: one ACTIVE entry per member"
# A real check, and cached: the second call within health_cache_seconds makes no key operation.
n1=$(grep -c '"op":"health.encrypt"' "$HOLDFAST_STATE_DIR/audit.log")
xks /kms/xks/v1/health "$B"
expect 200
n2=$(grep -c '"op":"health.encrypt"' "$HOLDFAST_STATE_DIR/audit.log")
[ "$n1" -ge 1 ] || hf_fail "the health check ran no encrypt on the health key"
check "$n2" "$n1" "health answered from its cache"
echo '{}' >"$HF_TMP/empty.json"
xks /kms/xks/v1/health "$HF_TMP/empty.json"
expect 400 ValidationException
echo '{"requestMetadata":{}}' >"$HF_TMP/empty-md.json"
xks /kms/xks/v1/health "$HF_TMP/empty-md.json"
expect 400 ValidationException
xks /keystores/broken-health/kms/xks/v1/health "$B"
expect 500 InternalException

# ---- GetKeyMetadata ----
body md metadata
xks $keys/k1/metadata "$B"
expect 200
check "$(field keySpec)/$(field keyUsage)/$(field keyStatus)" "AES_256/ENCRYPT,DECRYPT,WRAP,UNWRAP/ENABLED" "k1 metadata"
xks $keys/kenc/metadata "$B"
expect 200
check "$(field keyUsage)" ENCRYPT "encrypt-only key usage"
body md-create metadata --op CreateKey --no-key-arn
xks $keys/k1/metadata "$B"
expect 200
xks $keys/kec/metadata "$HF_TMP/md.json"
expect 501 UnsupportedOperationException
xks $keys/kgone/metadata "$HF_TMP/md.json"
expect 404 KeyNotFoundException
xks $keys/k2/metadata "$HF_TMP/md.json" # k2 is not on this store's allowlist
expect 404 KeyNotFoundException
xks $keys/k1/rotate "$HF_TMP/md.json"
expect 404 InvalidUriPathException
xks /kms/xks/v1/keys "$HF_TMP/md.json"
expect 404 InvalidUriPathException
xks $keys/k1/metadata/and/five/more/segments "$HF_TMP/md.json" # however deep
expect 404 InvalidUriPathException
# An unknown prefix is 404 before authentication: no credentials at all.
rm -f "$OUT"
CODE=$(curl -s -o "$OUT" -w '%{http_code}' -H 'Content-Type: application/json' \
    --data-binary "@$HF_TMP/md.json" "$BASE/nowhere/kms/xks/v1/keys/k1/metadata")
_path=/nowhere/kms/xks/v1/keys/k1/metadata
$PY compact "$OUT" || hf_fail "404 body"
expect 404 InvalidUriPathException

# ---- GET: 405 on every route ----
for route in $keys/k1/metadata $keys/k1/encrypt $keys/k1/decrypt /kms/xks/v1/health; do
    _path="GET $route"
    rm -f "$OUT"
    CODE=$(curl -s -o "$OUT" -w '%{http_code}' --aws-sigv4 "aws:amz:$REGION:kms-xks-proxy" \
        --user "$CRED" "$BASE$route")
    [ -s "$OUT" ] && { $PY compact "$OUT" || hf_fail "405 body"; }
    expect 405
done

# ---- Encrypt and Decrypt ----
# The spec's example request: "Hello World!", its AAD, a CDIV.
AAD_EX=cHJvamVjdD1uaWxlLGRlcGFydG1lbnQ9bWFya2V0aW5n
body enc-ex encrypt --pt SGVsbG8gV29ybGQh --aad "$AAD_EX" --cdiv
xks $keys/k1/encrypt "$B"
expect 200
cp "$OUT" "$HF_TMP/ct-ex.json"
$PY check-encrypt "$HF_TMP/ct-ex.json" "$B" || hf_fail "the encrypt answer"
check "$(field ciphertextMetadata)" AQAAAAE= "ciphertextMetadata names version 1"
body dec-ex decrypt "$HF_TMP/ct-ex.json" --aad "$AAD_EX"
xks $keys/k1/decrypt "$B"
expect 200
check "$(field plaintext)" SGVsbG8gV29ybGQh "decrypted plaintext"

# The sizes KMS may send: 4300 bytes of plaintext with 8192 bytes of AAD.
body enc-big encrypt --pt-size 4300 --aad-size 8192 --cdiv
xks $keys/k1/encrypt "$B"
expect 200
cp "$OUT" "$HF_TMP/ct-big.json"
$PY check-encrypt "$HF_TMP/ct-big.json" "$B" || hf_fail "the 4300-byte encrypt answer"
body dec-big decrypt "$HF_TMP/ct-big.json" --aad-size 8192
xks $keys/k1/decrypt "$B"
expect 200
$PY same-plaintext "$OUT" "$HF_TMP/enc-big.json" || hf_fail "4300 bytes back"
# One byte over Holdfast's caps (but under the body limit): 501.
body enc-4301 encrypt --pt-size 4301
xks $keys/k1/encrypt "$B"
expect 501 UnsupportedOperationException
body enc-aad-8193 encrypt --pt-size 32 --aad-size 8193
xks $keys/k1/encrypt "$B"
expect 501 UnsupportedOperationException
# Over the body limit: refused from Content-Length.
body enc-huge encrypt --pt-size 32 --pad 40000
xks $keys/k1/encrypt "$B"
expect 413 ValidationException

# Any wrong byte: InvalidCiphertextException.
for f in ciphertext initializationVector authenticationTag additionalAuthenticatedData ciphertextMetadata; do
    body dec-flip decrypt "$HF_TMP/ct-ex.json" --aad "$AAD_EX" --flip "$f"
    xks $keys/k1/decrypt "$B"
    expect 400 InvalidCiphertextException
done
body dec-noaad decrypt "$HF_TMP/ct-ex.json"
xks $keys/k1/decrypt "$B"
expect 400 InvalidCiphertextException
body dec-v9 decrypt "$HF_TMP/ct-ex.json" --aad "$AAD_EX" --cm AQAAAAk=
xks $keys/k1/decrypt "$B"
expect 400 InvalidCiphertextException

# Malformed requests: ValidationException.
printf '{"requestMetadata":' >"$HF_TMP/bad-json.json"
xks $keys/k1/encrypt "$HF_TMP/bad-json.json"
expect 400 ValidationException
body enc-b64 encrypt --pt 'SGVsbG8gV29ybGQ'
xks $keys/k1/encrypt "$B"
expect 400 ValidationException
sed 's/"AES_GCM"/"AES_CBC"/' "$HF_TMP/enc-ex.json" >"$HF_TMP/enc-alg.json"
xks $keys/k1/encrypt "$HF_TMP/enc-alg.json"
expect 400 ValidationException

# ---- key usage and state ----
body enc-32 encrypt --pt-size 32
xks $keys/kenc/encrypt "$B"
expect 200
cp "$OUT" "$HF_TMP/ct-kenc.json"
body dec-kenc decrypt "$HF_TMP/ct-kenc.json"
xks $keys/kenc/decrypt "$B"
expect 400 InvalidKeyUsageException
body enc-cdiv encrypt --pt-size 32 --cdiv
xks $keys/kenc/encrypt "$B" # a CDIV needs the decrypt that proves it
expect 400 InvalidKeyUsageException
xks $keys/kec/encrypt "$HF_TMP/enc-32.json"
expect 400 InvalidKeyUsageException

xks $keys/koff/encrypt "$HF_TMP/enc-32.json"
expect 200
cp "$OUT" "$HF_TMP/ct-koff.json"
hf key deactivate koff
# until_status PATH BODY STATUS [MAX_MS]: repeats the call until it answers STATUS. A call
# started more than MAX_MS (default CHANGE_MS) after T0 that still answers otherwise fails the
# test; ELAPSED is when (ms after T0) the first call that answered STATUS started.
until_status() {
    while :; do
        _t=$(( $(hf_now_ms) - T0 ))
        xks "$1" "$2"
        ELAPSED=$_t
        [ "$CODE" = "$3" ] && return 0
        [ "$_t" -le "${4:-$CHANGE_MS}" ] || hf_fail "$1 still answers $CODE $_t ms after the change"
        sleep 0.02
    done
}
T0=$(hf_now_ms)
until_status $keys/koff/encrypt "$HF_TMP/enc-32.json" 400
expect 400 InvalidStateException
# until_field PATH BODY FIELD VALUE [MAX_MS]: the same for a 200 answer whose FIELD becomes VALUE.
until_field() {
    while :; do
        _t=$(( $(hf_now_ms) - T0 ))
        xks "$1" "$2"
        expect 200
        ELAPSED=$_t
        [ "$(field "$3")" = "$4" ] && return 0
        [ "$_t" -le "${5:-$CHANGE_MS}" ] || hf_fail "$1: $3 is not $4 $_t ms after the change"
        sleep 0.02
    done
}
until_field $keys/koff/metadata "$HF_TMP/md.json" keyStatus DISABLED
body dec-koff decrypt "$HF_TMP/ct-koff.json"
xks $keys/koff/decrypt "$B" # old data stays readable
expect 200

# ---- rotation: new ciphertexts name the new version, old ones still decrypt ----
hf key rotate k1
T0=$(hf_now_ms)
until_field $keys/k1/encrypt "$HF_TMP/enc-ex.json" ciphertextMetadata AQAAAAI=
cp "$OUT" "$HF_TMP/ct-v2.json"
xks $keys/k1/decrypt "$HF_TMP/dec-ex.json"
expect 200
check "$(field plaintext)" SGVsbG8gV29ybGQh "a version-1 ciphertext after rotation"
xks $keys/k1/decrypt "$HF_TMP/dec-big.json"
expect 200
body dec-v2 decrypt "$HF_TMP/ct-v2.json" --aad "$AAD_EX"
xks $keys/k1/decrypt "$B"
expect 200
check "$(field plaintext)" SGVsbG8gV29ybGQh "a version-2 ciphertext"
# The version is authenticated: a v1 ciphertext relabelled v2 is refused.
body dec-relabel decrypt "$HF_TMP/ct-ex.json" --aad "$AAD_EX" --cm AQAAAAI=
xks $keys/k1/decrypt "$B"
expect 400 InvalidCiphertextException

# ---- the kill switch: block and unblock within a second on every path, at the worst phase ----
# Two caches stand between the CLI and a call: the module's link cache (answers trusted for
# HF_LINK_CACHE_MS, 500 ms) and the gateway's key snapshot. The worst phase: the gateway reads the
# link (a metadata call after a quiet second), some 750 ms later (past the module cache's 500 ms,
# inside the snapshot's second) a second call refreshes the module's cache, and the change is
# made right after. A gateway that trusted its snapshot's link state for a second would take the
# module's then stale answer at its next refresh and show the change only at the one after, some
# 1.2 s after it (the base measured up to 1.48 s). Each case is timed from the CLI command's return
# (the change is committed by then), so a slow CLI on a loaded machine does not count against it.
KILL_MS=${XKS_KILL_MS:-1000}
KILL_WORST_BLOCK=0
KILL_WORST_UNBLOCK=0
worst_phase() { # PRIME_PATH PRIME_BODY PATH BODY
    sleep 1.1
    xks "$1" "$2"
    sleep 0.7
    xks "$3" "$4"
}
kill_case() { # block|unblock LINK PATH BODY STATUS [FIELD VALUE]
    _cli=$(hf_now_ms)
    hf link "$1" aws-xks "$2"
    T0=$(hf_now_ms)
    if [ $# -gt 5 ]; then
        until_field "$3" "$4" "$6" "$7" "$KILL_MS"
    else
        until_status "$3" "$4" "$5" "$KILL_MS"
    fi
    echo "kill switch: $1 $2 seen by $3 in a call started $ELAPSED ms after the command" \
        "(which took $((T0 - _cli)) ms)"
    if [ "$1" = block ]; then
        [ "$ELAPSED" -le "$KILL_WORST_BLOCK" ] || KILL_WORST_BLOCK=$ELAPSED
    else
        [ "$ELAPSED" -le "$KILL_WORST_UNBLOCK" ] || KILL_WORST_UNBLOCK=$ELAPSED
    fi
}
MD="$keys/k1/metadata $HF_TMP/md.json"
ENC="$keys/k1/encrypt $HF_TMP/enc-ex.json"
DEC="$keys/k1/decrypt $HF_TMP/dec-v2.json"
HEALTH="/kms/xks/v1/health $HF_TMP/health.json"
# shellcheck disable=SC2086 # the pairs split on purpose
{
    worst_phase $MD $ENC
    kill_case block k1 $MD 200 keyStatus DISABLED
    xks $ENC
    expect 400 InvalidStateException
    xks $DEC
    expect 400 InvalidStateException
    xks $HEALTH # the health key is another key
    expect 200
    worst_phase $MD $ENC
    kill_case unblock k1 $MD 200 keyStatus ENABLED
    worst_phase $MD $ENC
    kill_case block k1 $ENC 400
    expect 400 InvalidStateException
    worst_phase $MD $ENC
    kill_case unblock k1 $ENC 200
    worst_phase $MD $DEC
    kill_case block k1 $DEC 400
    expect 400 InvalidStateException
    worst_phase $MD $DEC
    kill_case unblock k1 $DEC 200
    # GetHealthStatus remembers its answer (health_cache_seconds = 30), but not past a block of
    # the health key's link.
    worst_phase $HEALTH $HEALTH
    kill_case block health $HEALTH 400
    expect 400 InvalidStateException
    worst_phase $HEALTH $HEALTH
    kill_case unblock health $HEALTH 200
}
echo "kill switch worst case: block $KILL_WORST_BLOCK ms, unblock $KILL_WORST_UNBLOCK ms (limit $KILL_MS ms)"


# ---- SigV4: AuthenticationFailedException ----
auth_fails() { # WHY: the last call was refused as unauthenticated
    _path="$keys/k1/metadata ($1)"
    [ -s "$OUT" ] && { $PY compact "$OUT" || hf_fail "$_path: the 401 body"; }
    expect 401 AuthenticationFailedException
}
CRED="$AKID_A:${SEC_A%?}x"
xks $keys/k1/metadata "$HF_TMP/md.json"
auth_fails wrong-secret
CRED="AKIAIOSFODNN7EXAMPLF:$SEC_A"
xks $keys/k1/metadata "$HF_TMP/md.json"
auth_fails unknown-akid
CRED="$AKID_B:$SEC_B" # the second store's credential on the first store
xks $keys/k1/metadata "$HF_TMP/md.json"
auth_fails other-store
CRED="$AKID_A:$SEC_A"
REGION=eu-west-1
xks $keys/k1/metadata "$HF_TMP/md.json"
auth_fails region
REGION=us-east-1
rm -f "$OUT"
CODE=$(curl -s -o "$OUT" -w '%{http_code}' --aws-sigv4 "aws:amz:us-east-1:kms" --user "$CRED" \
    -H 'Content-Type: application/json' --data-binary "@$HF_TMP/md.json" "$BASE$keys/k1/metadata")
auth_fails service
xks $keys/k1/metadata "$HF_TMP/md.json" -H 'X-Amz-Date: 20200101T000000Z'
auth_fails skew
rm -f "$OUT"
CODE=$(curl -s -o "$OUT" -w '%{http_code}' -H 'Content-Type: application/json' \
    --data-binary "@$HF_TMP/md.json" "$BASE$keys/k1/metadata")
auth_fails unsigned

# ---- a second key store: its own credentials, region, allowlist and authorization rules ----
S2=/keystores/second/kms/xks/v1
CRED="$AKID_B:$SEC_B"
REGION=eu-west-1
xks $S2/health "$HF_TMP/health.json" # never subject to secondary authorization
expect 200
xks $S2/keys/k2/metadata "$HF_TMP/md.json"
expect 200
xks $S2/keys/k2/encrypt "$HF_TMP/enc-ex.json"
expect 200
cp "$OUT" "$HF_TMP/ct-k2.json"
xks $S2/keys/k1/metadata "$HF_TMP/md.json" # not on this store's allowlist
expect 404 KeyNotFoundException
body md-bob metadata --principal arn:aws:iam::111122223333:user/bob
xks $S2/keys/k2/metadata "$B"
expect 403 AccessDeniedException
grep -q 'denied by rule no-bob' "$HOLDFAST_STATE_DIR/audit.log" ||
    hf_fail "the audit record of a denial does not name its rule"
body md-carol metadata --principal arn:aws:iam::999999999999:user/carol
xks $S2/keys/k2/metadata "$B" # no rule allows: denied by default
expect 403 AccessDeniedException
REGION=eu-central-1
xks $S2/keys/k2/metadata "$HF_TMP/md.json"
expect 200
CRED="$AKID_A:$SEC_A"
REGION=us-east-1
xks $S2/keys/k2/metadata "$HF_TMP/md.json"
expect 401 AuthenticationFailedException

# ---- a rate limit: ThrottlingException ----
set --
i=0
while [ $i -lt 8 ]; do
    i=$((i + 1))
    set -- "$@" -o "$HF_TMP/rl-$i.json" "$BASE/keystores/limited/kms/xks/v1/keys/k1/metadata"
done
codes=$(curl -s -w '%{http_code}\n' --aws-sigv4 "aws:amz:us-east-1:kms-xks-proxy" --user "$CRED" \
    -H 'Content-Type: application/json' --data-binary "@$HF_TMP/md.json" "$@")
echo "$codes" | grep -q '^200$' || hf_fail "the rate-limited store refused everything: $codes"
echo "$codes" | grep -q '^429$' || hf_fail "8 requests at once within a limit of 1/s: $codes"
i=0
for c in $codes; do
    i=$((i + 1))
    [ "$c" = 429 ] || continue
    OUT="$HF_TMP/rl-$i.json" CODE=429 _path=/keystores/limited
    $PY compact "$OUT" || hf_fail "429 body"
    expect 429 ThrottlingException
    break
done
OUT="$HF_TMP/out.json"

# ---- a deadline: DependencyTimeoutException ----
xks /keystores/deadline/kms/xks/v1/keys/k1/encrypt "$HF_TMP/enc-32.json"
expect 200
# A body dribbled in at 2 KB/s is over 500 ms old before its key operation could start.
body enc-slow encrypt --pt-size 32 --pad 4000
xks /keystores/deadline/kms/xks/v1/keys/k1/encrypt "$B" --limit-rate 2k
expect 503 DependencyTimeoutException

# ---- credential rotation: add, switch, remove, by editing the config and SIGHUP ----
MAIN_CREDS="credential = $AKID_A:$SEC_A
credential = $AKID_C:$SEC_C"
write_conf
kill -HUP "$HF_GW_PID"
CRED="$AKID_C:$SEC_C"
T0=$(hf_now_ms)
until_status $keys/k1/metadata "$HF_TMP/md.json" 200 10000
CRED="$AKID_A:$SEC_A"
xks $keys/k1/metadata "$HF_TMP/md.json"
expect 200
MAIN_CREDS="credential = $AKID_C:$SEC_C"
write_conf
kill -HUP "$HF_GW_PID"
T0=$(hf_now_ms)
until_status $keys/k1/metadata "$HF_TMP/md.json" 401 10000
expect 401 AuthenticationFailedException
CRED="$AKID_C:$SEC_C"
xks $keys/k1/encrypt "$HF_TMP/enc-ex.json"
expect 200
# A config that does not load leaves the running one in place.
MAIN_CREDS="credential = bad-akid:$SEC_C"
write_conf
kill -HUP "$HF_GW_PID"
sleep 1
xks $keys/k1/metadata "$HF_TMP/md.json"
expect 200
kill -0 "$HF_GW_PID" || hf_fail "holdfastd did not survive the reloads"
MAIN_CREDS="credential = $AKID_C:$SEC_C"
write_conf
kill -HUP "$HF_GW_PID"

# ---- TLS, client certificates ----
BASE="https://127.0.0.1:$P_TLS"
TLS_OPTS="--cacert $PKI/ca.pem --cert $PKI/kms.pem --key $PKI/kms.key"
T0=$(hf_now_ms)
until_status /kms/xks/v1/health "$HF_TMP/health.json" 200 10000
xks $keys/k1/encrypt "$HF_TMP/enc-ex.json"
expect 200
cp "$OUT" "$HF_TMP/ct-tls.json"
body dec-tls decrypt "$HF_TMP/ct-tls.json" --aad "$AAD_EX"
xks $keys/k1/decrypt "$B"
expect 200
check "$(field plaintext)" SGVsbG8gV29ybGQh "decrypt over TLS"
xks $keys/k1/decrypt "$HF_TMP/dec-flip.json"
expect 400 InvalidCiphertextException
CRED="$AKID_A:$SEC_A"
xks /keystores/mtls-only/kms/xks/v1/keys/k1/metadata "$HF_TMP/md.json"
expect 200
# HTTP/1.1 only, even when the client offers h2.
rm -f "$OUT"
ver=$(curl -s -o "$OUT" -w '%{http_version}' --http2 $TLS_OPTS "$BASE/healthz")
check "$ver" 1.1 "HTTP version over TLS"
# Another subject of the same CA: the gateway lets it in, the mtls store does not.
TLS_OPTS="--cacert $PKI/ca.pem --cert $PKI/other.pem --key $PKI/other.key"
xks /keystores/mtls-only/kms/xks/v1/keys/k1/metadata "$HF_TMP/md.json"
expect 401 AuthenticationFailedException
CRED="$AKID_C:$SEC_C"
xks $keys/k1/metadata "$HF_TMP/md.json"
expect 200
# No client certificate, or one from another CA: the handshake itself fails.
TLS_OPTS="--cacert $PKI/ca.pem"
xks /kms/xks/v1/health "$HF_TMP/health.json"
case $CODE in curl-exit-*) ;; *) hf_fail "TLS without a client certificate answered HTTP $CODE" ;; esac
TLS_OPTS="--cacert $PKI/ca.pem --cert $PKI/stranger.pem --key $PKI/stranger.key"
xks /kms/xks/v1/health "$HF_TMP/health.json"
case $CODE in curl-exit-*) ;; *) hf_fail "a foreign CA's client certificate answered HTTP $CODE" ;; esac
# The mtls store over plain HTTP has no certificate to look at.
BASE="http://127.0.0.1:$P_PLAIN"
TLS_OPTS=
CRED="$AKID_A:$SEC_A"
xks /keystores/mtls-only/kms/xks/v1/keys/k1/metadata "$HF_TMP/md.json"
expect 401 AuthenticationFailedException

# ---- every row of the error table was answered ----
for row in "400 ValidationException" "400 InvalidStateException" "400 InvalidCiphertextException" \
    "400 InvalidKeyUsageException" "401 AuthenticationFailedException" \
    "403 AccessDeniedException" "404 KeyNotFoundException" "404 InvalidUriPathException" \
    "429 ThrottlingException" "501 UnsupportedOperationException" \
    "503 DependencyTimeoutException" "500 InternalException"; do
    grep -qx "$row" "$SEEN" || hf_fail "no call answered $row"
done

# ---- no plaintext in any log; the request id is in the audit ----
plain_b64=$($PY get "$HF_TMP/enc-big.json" plaintext | cut -c 1-40)
for log in "$HOLDFAST_STATE_DIR/audit.log" "$HF_TMP/holdfastd.log" "$HF_TMP/holdfastd.out"; do
    [ -f "$log" ] || continue
    grep -q "SGVsbG8gV29ybGQh\|Hello World\|$plain_b64" "$log" && hf_fail "$log holds a plaintext"
done
grep -q '"it-encrypt-0001"' "$HOLDFAST_STATE_DIR/audit.log" ||
    hf_fail "the audit log lacks the kmsRequestId"
grep -q '"arn:aws:iam::111122223333:user/Alice"' "$HOLDFAST_STATE_DIR/audit.log" ||
    hf_fail "the audit log lacks the awsPrincipalArn"

# ---- a clean stop, and nothing the sanitizers saw ----
hf_gateway_stop
# Refused before authentication (bad signatures, unknown paths): no record each, but summary
# records per source and reason, the last written at stop; the chain verifies.
hf_expect_exit 0 "$HF_CLI" audit verify
for want in "AuthenticationFailedException 3" "InvalidUriPathException 1"; do
    set -- $want
    got=$(hf_preauth_count "$HOLDFAST_STATE_DIR/audit.log" aws-xks "$1" 127.0.0.1)
    [ "${got% *}" -ge "$2" ] || hf_fail "summaries count ${got% *} $1 refusals, want $2 or more"
done
if grep -E 'ERROR: AddressSanitizer|runtime error:|ERROR: LeakSanitizer' "$HF_TMP/holdfastd.out"; then
    cat "$HF_TMP/holdfastd.out" >&2
    hf_fail "holdfastd: a sanitizer report"
fi
echo "xks: every check passed"
