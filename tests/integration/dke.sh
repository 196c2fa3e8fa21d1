#!/bin/sh
# The ms-dke plugin end to end (specs/ms-dke.md): holdfastd over TLS on loopback (a CA the test
# makes) over a key store made with the CLI, an Entra-shaped JWKS served over HTTPS by
# jwt-token.py, and access tokens the test mints as Entra ID would issue them, or as an attacker
# would.
#
# Mirrors Microsoft's key_store_tester.ps1: GET the key (kty RSA, n in padded standard base64,
# e 65537 as a JSON integer, alg RS256, kid = the configured base URL/keyName/keyId, cache.exp
# as UTC yyyy-MM-ddTHH:mm:ss a day ahead), a value encrypted with the openssl CLI under that
# key (RSA-OAEP-256) decrypts at kid/decrypt ("Decrypt" too) to its bytes, and the 401 without
# a token carries WWW-Authenticate: Bearer resource, authorization, realm plus the plain
# resource and authorization headers, exactly, resource https:// on the decrypt URL's host.
# Then one case per row of the spec's table, each with status and body {"error","message"}:
# expired, not yet valid, wrong audience, wrong issuer (another tenant), bad signature, an
# unknown kid (then accepted after the refetch it triggers), alg none, a wrong appid, a missing
# scope, Authorization twice (401, each with the challenge); a user off the email allowlist, upn
# when email is absent, a group key (its groups claim in and out), no identity claim (403);
# unknown key name, unconfigured key, unknown or destroyed key version, unknown route (404);
# tampered ciphertext, another version's ciphertext, wrong length, wrong alg, bad base64,
# malformed JSON (400); a body over 16 KiB from its Content-Length (413); another method (405);
# over the rate limit after a SIGHUP (429); a key that is not RSA, a blocked link (GET and
# decrypt 403, then unblocked), a pre-active key (403), a deactivated key (GET 403, old content
# still decrypts); rotation (the GET names the new version, the old version's ciphertext still
# decrypts at its own kid); the audit records of successes and of refusals after authentication
# with oid, identity, appid, key_name and key_id, the summary of the 401s, no plaintext in any
# log, and `holdfast audit verify`; last, a key store that cannot be read (503).
. "${top_srcdir:-.}/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/dke-lib.sh"

HOLDFASTD="$top_builddir/gateway/holdfastd"
DKE_PLUGIN="$top_builddir/gateway/plugins/ms-dke/.libs/ms-dke.so"
[ -x "$HOLDFASTD" ] || hf_skip "$HOLDFASTD not built"
[ -f "$DKE_PLUGIN" ] || hf_skip "$DKE_PLUGIN not built"
for p in curl python3 openssl base64; do
    command -v "$p" >/dev/null || hf_skip "$p not installed"
done
python3 -c 'import cryptography' 2>/dev/null || hf_skip "python3-cryptography not installed"
hf_store_setup

TOK="python3 $top_srcdir/tests/integration/jwt-token.py"
CHANGE_S=$(echo "${DKE_CHANGE_MS:-1500}" | awk '{print $1/1000}')
TENANT=72f988bf-86f1-41af-91ab-2d7cd011db47
ISS="https://sts.windows.net/$TENANT/"
OFFICE=d3590ed6-52b3-4102-aeff-aad2292ab01c
GROUP=0b2c7a1e-8d3f-4c5b-9a6e-1f2d3c4b5a69
AUTHORITY=https://login.windows.net/common/oauth2/authorize

hf() { "$HF_CLI" "$@" >>"$HF_TMP/cli.log" 2>&1 || hf_fail "holdfast $*: $(tail -n 3 "$HF_TMP/cli.log")"; }
# version_uuid KEY N: the UUID of version N of KEY, from the CLI.
version_uuid() {
    "$HF_CLI" --json key show "$1" | python3 -c 'import json,sys
d = json.load(sys.stdin)
print([v["uuid"] for v in d["versions"] if v["version"] == int(sys.argv[1])][0])' "$2" ||
        hf_fail "no version $2 of $1"
}

# ---- keys, each linked by its DKE key name ----
# holdfastd registers its plugins' link types when it starts; the links come before it here.
hf link type add ms-dke
for k in main grp blk deact gone upn; do
    hf key create "dke-$k" --alg RSA-2048
    hf link add ms-dke "$k-key" "dke-$k"
done
hf key create dke-pre --alg RSA-2048 --state pre-active
hf link add ms-dke pre-key dke-pre
hf key create dke-nocfg --alg RSA-2048
hf link add ms-dke nocfg-key dke-nocfg
hf key create dke-aes
hf link add ms-dke aes-key dke-aes
V1=$(version_uuid dke-main 1)

# ---- the JWKS over HTTPS, and holdfastd's TLS listener, under one CA of the test's own ----
JW="$HF_TMP/jwks"
mkdir -p "$JW"
HF_PKI="$HF_TMP/pki"
hf_pki_ca ca
hf_pki_cert server localhost ca "subjectAltName=IP:127.0.0.1,DNS:localhost"
PKI="$HF_PKI"
CURL_CA_BUNDLE=$PKI/ca.pem
export CURL_CA_BUNDLE
{ $TOK keys "$JW" k1 other && $TOK publish "$JW" entra k1; } || hf_fail "cannot make the signing keys"
hf_jwks_serve "$JW" "$PKI/server.pem" "$PKI/server.key" /common/discovery/v2.0/keys=entra

PORT=$(hf_free_port)
DKE_BASE="https://127.0.0.1:$PORT"
AUD=$DKE_BASE
BASE_URL="$DKE_BASE/dke"
CONF="$HF_TMP/holdfastd.conf"
cat >"$CONF" <<EOC
[gateway]
module = $HF_MODULE
pin_file = $HOLDFAST_STATE_DIR/token-gateway.pin
plugins = ms-dke
log = $HF_TMP/holdfastd.log

[audit]
preauth_interval_ms = 200

[plugin:ms-dke]
path = $DKE_PLUGIN

[listener:dke]
listen = 127.0.0.1:$PORT
cert = $PKI/server.pem
key = $PKI/server.key
client_certificate = off
plugins = ms-dke

[ms-dke]
prefix = /dke
base_url = $BASE_URL
issuers = $ISS, https://sts.windows.net/11111111-2222-3333-4444-555555555555/
jwks = https://127.0.0.1:$HF_JWKS_PORT/common/discovery/v2.0/keys
jwks_ca = $PKI/ca.pem
jwks_allow = 127.0.0.0/8
required_scope = user_impersonation
allowed_appids = $OFFICE, c00e9d32-3c8d-4a7d-832b-029040e7db99
key.main-key.allowed_emails = Alice@Contoso.com, carol@contoso.com
key.grp-key.allowed_groups = $GROUP
key.grp-key.cache_exp = 1h
key.blk-key.allowed_emails = alice@contoso.com
key.deact-key.allowed_emails = alice@contoso.com
key.gone-key.allowed_emails = alice@contoso.com
key.pre-key.allowed_emails = alice@contoso.com
key.upn-key.allowed_emails = dave@contoso.com
key.unlinked-key.allowed_emails = alice@contoso.com
key.aes-key.allowed_emails = alice@contoso.com
EOC
hf_gateway_start "$DKE_BASE" "$HOLDFASTD" -f -c "$CONF"

OUT="$HF_TMP/out.json"
HDR="$HF_TMP/out.hdr"
CLAIMS="{\"iss\":\"$ISS\",\"aud\":\"$AUD\",\"tid\":\"$TENANT\",\"oid\":\"5d7a4b3c-0000-4000-8000-00000000a11c\",\"email\":\"alice@contoso.com\",\"upn\":\"alice@contoso.com\",\"appid\":\"$OFFICE\",\"scp\":\"user_impersonation\",\"iat\":\"+0\",\"nbf\":\"-10\",\"exp\":\"+600\"}"
mint() { $TOK mint "$JW" --base "$CLAIMS" "$@"; }
TOKEN=

# ---- GET the public key, as the tester checks it ----
dke_call GET /dke/main-key
dke_expect 200
check "$(dke_json key.kty)" RSA "kty"
check "$(dke_json key.alg)" RS256 "alg"
check "$(dke_json key.e)" 65537 "e (a JSON integer)"
check "$(dke_json key.kid)" "$BASE_URL/main-key/$V1" "kid: base_url/keyName/keyId"
python3 - "$OUT" <<'PY' || hf_fail "the GET answer: $(cat "$OUT")"
import base64, binascii, datetime, json, re, sys
d = json.load(open(sys.argv[1]))
n = d["key"]["n"]
if not isinstance(d["key"]["e"], int):
    sys.exit("e is not an integer")
if "-" in n or "_" in n or len(n) % 4:
    sys.exit("n is not padded standard base64")
raw = base64.b64decode(n, validate=True)
if len(raw) != 256 or raw[0] < 0x80:
    sys.exit("n is not a 2048-bit big-endian modulus: %d bytes" % len(raw))
exp = d["cache"]["exp"]
if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", exp):
    sys.exit("cache.exp %r is not yyyy-MM-ddTHH:mm:ss" % exp)
t = datetime.datetime.strptime(exp, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
ahead = (t - datetime.datetime.now(datetime.timezone.utc)).total_seconds()
if abs(ahead - 86400) > 120:
    sys.exit("cache.exp is %d s ahead, want a day" % ahead)
PY
dke_pem "$HF_TMP/main-v1.pem"
KID1=$(dke_json key.kid)
# The per-key cache_exp (an hour) of the group key.
dke_call GET /dke/grp-key
dke_expect 200
python3 -c 'import datetime,json,sys
t = datetime.datetime.strptime(json.load(open(sys.argv[1]))["cache"]["exp"], "%Y-%m-%dT%H:%M:%S")
ahead = (t.replace(tzinfo=datetime.timezone.utc) - datetime.datetime.now(datetime.timezone.utc)).total_seconds()
sys.exit(0 if abs(ahead - 3600) < 120 else "cache.exp %d s ahead, want an hour" % ahead)' "$OUT" ||
    hf_fail "grp-key's cache_exp"
dke_pem "$HF_TMP/grp.pem"
GRP_KID=$(dke_json key.kid)

# ---- decrypt what openssl encrypted under the published key ----
# 44 bytes, as Office's structure is: the answer is those bytes, no assumed length.
head -c 44 /dev/urandom >"$HF_TMP/pt1"
PT1=$(base64 -w0 <"$HF_TMP/pt1")
CT1=$(dke_encrypt "$HF_TMP/main-v1.pem" "$HF_TMP/pt1")
body() { printf '{"alg":"%s","value":"%s"}' "${2:-RSA-OAEP-256}" "$1"; }
DECRYPT1=${KID1#"$DKE_BASE"}/decrypt
TOKEN=$(mint)
dke_call POST "$DECRYPT1" "$(body "$CT1")"
dke_expect 200
check "$(dke_json value)" "$PT1" "decrypt gives openssl's plaintext back"
# The reference routes .../Decrypt case-insensitively.
dke_call POST "${KID1#"$DKE_BASE"}/Decrypt" "$(body "$CT1")"
dke_expect 200
check "$(dke_json value)" "$PT1" "…/Decrypt"
# A key id is a UUID: in upper case it names the same version.
dke_call POST "/dke/main-key/$(echo "$V1" | tr a-f A-F)/decrypt" "$(body "$CT1")"
dke_expect 200
check "$(dke_json value)" "$PT1" "an upper-case key id"

# ---- 401: the challenge, exactly, on every refused token ----
CHALLENGE="Bearer resource=\"$AUD\", authorization=\"$AUTHORITY\", realm=\"$AUD\""
expect_challenge() { # WHAT
    dke_expect 401 Unauthorized
    check "$(dke_header WWW-Authenticate)" "$CHALLENGE" "$1: WWW-Authenticate"
    check "$(dke_header resource)" "$AUD" "$1: resource header"
    check "$(dke_header authorization)" "$AUTHORITY" "$1: authorization header"
}
TOKEN=
dke_call POST "$DECRYPT1" "$(body "$CT1")"
expect_challenge "no token"
# What key_store_tester.ps1 checks of it: resource is https:// on the decrypt URL's host.
python3 - "$(dke_header WWW-Authenticate)" "$DKE_BASE$DECRYPT1" <<'PY' || hf_fail "the challenge fails the tester's checks"
import re, sys, urllib.parse
fields = dict(re.findall(r'(\w+)="([^"]*)"', sys.argv[1]))
for f in ("resource", "authorization", "realm"):
    if not fields.get(f):
        sys.exit("no %s in the challenge" % f)
if not fields["resource"].startswith("https://"):
    sys.exit("resource is not https")
if urllib.parse.urlparse(fields["resource"]).hostname != urllib.parse.urlparse(sys.argv[2]).hostname:
    sys.exit("resource's host is not the decrypt URL's")
PY
dke_call POST "$DECRYPT1" "$(body "$CT1")" -H "Authorization: Basic Zm9vOmJhcg=="
expect_challenge "Basic credentials"
# Two Authorization headers: which one would a proxy have checked?
GOOD=$(mint)
dke_call POST "$DECRYPT1" "$(body "$CT1")" -H "Authorization: Bearer $GOOD" -H "Authorization: Bearer $GOOD"
expect_challenge "Authorization twice"
bad_token() { # WHAT MINT-ARGS...
    _what=$1
    shift
    TOKEN=$(mint "$@")
    dke_call POST "$DECRYPT1" "$(body "$CT1")"
    expect_challenge "$_what"
}
bad_token "expired" exp=-400 iat=-1200 nbf=-1200
bad_token "not yet valid" nbf=+600
bad_token "wrong audience" aud=https://dkeservice.contoso.com
bad_token "wrong issuer (another tenant)" iss=https://sts.windows.net/99999999-9999-9999-9999-999999999999/
bad_token "bad signature" --kid k1 --key other
bad_token "alg none" --alg none
bad_token "an app that is not Office" appid=00000000-0000-0000-0000-000000000001
bad_token "no user_impersonation scope" scp=openid
# Unknown kid: Entra published a new signing key after holdfastd loaded the set (its max-age
# keeps it an hour). The first token signed with it is refused and makes holdfastd refetch the
# set in the background, off the request path: the same token then passes.
$TOK keys "$JW" k2 && $TOK publish "$JW" entra k1 k2 || hf_fail "cannot publish k2"
bad_token "unknown kid" --kid k2
t0=$(hf_now_ms)
until dke_call POST "$DECRYPT1" "$(body "$CT1")" && [ "$CODE" = 200 ]; do
    [ $(($(hf_now_ms) - t0)) -lt 10000 ] || hf_fail "kid k2 still refused 10 s after it was published: $(cat "$OUT")"
    sleep 0.2
done
# Within the 300 s skew an expired token still passes; a B2B partner tenant in issuers too.
TOKEN=$(mint exp=-200 iat=-1200 nbf=-1200)
dke_call POST "$DECRYPT1" "$(body "$CT1")"
dke_expect 200
TOKEN=$(mint iss=https://sts.windows.net/11111111-2222-3333-4444-555555555555/)
dke_call POST "$DECRYPT1" "$(body "$CT1")"
dke_expect 200

# ---- 403: authorization per key ----
TOKEN=$(mint email=eve@contoso.com upn=eve@contoso.com oid=5d7a4b3c-0000-4000-8000-0000000000e5)
dke_call POST "$DECRYPT1" "$(body "$CT1")"
dke_expect 403 Forbidden
# Case and blanks ignored; upn when there is no email.
TOKEN=$(mint "email= CAROL@contoso.com " upn=)
dke_call POST "$DECRYPT1" "$(body "$CT1")"
dke_expect 200
TOKEN=$(mint email= upn=eve@contoso.com)
dke_call POST "$DECRYPT1" "$(body "$CT1")"
dke_expect 403 Forbidden
TOKEN=$(mint email= upn=)
dke_call POST "$DECRYPT1" "$(body "$CT1")"
dke_expect 403 Forbidden
# The group key: the token's groups object ids.
printf 'group secret' >"$HF_TMP/ptg"
CTG=$(dke_encrypt "$HF_TMP/grp.pem" "$HF_TMP/ptg")
TOKEN=$(mint "groups:=[\"x\",\"$GROUP\"]")
dke_call POST "${GRP_KID#"$DKE_BASE"}/decrypt" "$(body "$CTG")"
dke_expect 200
check "$(dke_json value)" "$(printf 'group secret' | base64 -w0)" "the group key's plaintext"
TOKEN=$(mint 'groups:=["11111111-2222-3333-4444-555555555555"]')
dke_call POST "${GRP_KID#"$DKE_BASE"}/decrypt" "$(body "$CTG")"
dke_expect 403 Forbidden
TOKEN=$(mint)
dke_call POST "${GRP_KID#"$DKE_BASE"}/decrypt" "$(body "$CTG")"
dke_expect 403 Forbidden

# ---- 404: unknown key, version, route ----
TOKEN=$(mint)
dke_call GET /dke/no-such-key
dke_expect 404 KeyNotFound
dke_call GET /dke/nocfg-key
dke_expect 404 KeyNotFound
dke_call GET /dke/unlinked-key
dke_expect 404 KeyNotFound
dke_call POST /dke/main-key/00000000-0000-4000-8000-000000000000/decrypt "$(body "$CT1")"
dke_expect 404 KeyNotFound
dke_call POST "/dke/unlinked-key/$V1/decrypt" "$(body "$CT1")"
dke_expect 404 KeyNotFound
dke_call POST "/dke/no-such-key/$V1/decrypt" "$(body "$CT1")"
dke_expect 404 KeyNotFound
# Another key's version UUID is no version of this key (for a caller the key lets in).
TOKEN=$(mint "groups:=[\"$GROUP\"]")
dke_call POST "/dke/grp-key/$V1/decrypt" "$(body "$CT1")"
dke_expect 404 KeyNotFound
TOKEN=$(mint)
dke_call POST /dke/main-key/not-a-uuid/decrypt "$(body "$CT1")"
dke_expect 404 NotFound
dke_call POST "/dke/main-key/$V1/encrypt" "$(body "$CT1")"
dke_expect 404 NotFound
dke_call GET /dke/main-key/extra
dke_expect 404 NotFound
# Outside the prefix: the gateway's own 404.
dke_call GET /other/main-key
dke_expect 404 NotFound

# ---- 405: another method ----
dke_call PUT /dke/main-key "$(body "$CT1")"
dke_expect 405 MethodNotAllowed
dke_call GET "$DECRYPT1"
dke_expect 405 MethodNotAllowed

# ---- 400: bad input ----
TAMPERED=$(python3 -c 'import base64,sys; b=bytearray(base64.b64decode(sys.argv[1])); b[100]^=1; print(base64.b64encode(bytes(b)).decode())' "$CT1")
dke_call POST "$DECRYPT1" "$(body "$TAMPERED")"
dke_expect 400 BadRequest
SHORT=$(python3 -c 'import base64,sys; print(base64.b64encode(base64.b64decode(sys.argv[1])[:255]).decode())' "$CT1")
dke_call POST "$DECRYPT1" "$(body "$SHORT")"
dke_expect 400 BadRequest
dke_call POST "$DECRYPT1" "$(body "$CT1" RSA1_5)"
dke_expect 400 BadRequest
dke_call POST "$DECRYPT1" "$(body "$CT1" RSA-OAEP)"
dke_expect 400 BadRequest
dke_call POST "$DECRYPT1" "$(body "$(printf '%s' "$CT1" | tr '+/' '-_')*")"
dke_expect 400 BadRequest
dke_call POST "$DECRYPT1" '{"alg":"RSA-OAEP-256","value":'
dke_expect 400 BadRequest
dke_call POST "$DECRYPT1" "{\"alg\":\"RSA-OAEP-256\"}"
dke_expect 400 BadRequest

# ---- 413: over 16 KiB, refused from Content-Length before the body is read ----
python3 -c 'print("{\"alg\":\"RSA-OAEP-256\",\"value\":\"AA==\",\"pad\":\"%s\"}" % ("x" * 17000))' >"$HF_TMP/big.json"
dke_call POST "$DECRYPT1" "@$HF_TMP/big.json"
dke_expect 413 PayloadTooLarge
# Just under the limit is read and judged (a good body padded with an unknown member).
python3 -c 'import sys; print("{\"alg\":\"RSA-OAEP-256\",\"value\":\"%s\",\"pad\":\"%s\"}" % (sys.argv[1], "x" * 15500))' "$CT1" >"$HF_TMP/near.json"
dke_call POST "$DECRYPT1" "@$HF_TMP/near.json"
dke_expect 200

# A key that is not RSA behind a DKE link: refused, never published.
dke_call GET /dke/aes-key
dke_expect 403 KeyDisabled
dke_call POST "/dke/aes-key/$(version_uuid dke-aes 1)/decrypt" "$(body "$CT1")"
dke_expect 403 KeyDisabled

# ---- disabled keys: a blocked link, a pre-active key, a deactivated one ----
dke_call GET /dke/blk-key
dke_expect 200
dke_pem "$HF_TMP/blk.pem"
BLK_DECRYPT=$(dke_json key.kid)
BLK_DECRYPT=${BLK_DECRYPT#"$DKE_BASE"}/decrypt
CTB=$(dke_encrypt "$HF_TMP/blk.pem" "$HF_TMP/pt1")
hf link block ms-dke blk-key
sleep "$CHANGE_S"
dke_call GET /dke/blk-key
dke_expect 403 KeyDisabled
dke_call POST "$BLK_DECRYPT" "$(body "$CTB")"
dke_expect 403 KeyDisabled
hf link unblock ms-dke blk-key
sleep "$CHANGE_S"
dke_call POST "$BLK_DECRYPT" "$(body "$CTB")"
dke_expect 200
check "$(dke_json value)" "$PT1" "decrypt after unblock"

dke_call GET /dke/pre-key
dke_expect 403 KeyDisabled
dke_call POST "/dke/pre-key/$(version_uuid dke-pre 1)/decrypt" "$(body "$CT1")"
dke_expect 403 KeyDisabled

dke_call GET /dke/deact-key
dke_expect 200
dke_pem "$HF_TMP/deact.pem"
DEACT_DECRYPT=$(dke_json key.kid)
DEACT_DECRYPT=${DEACT_DECRYPT#"$DKE_BASE"}/decrypt
CTD=$(dke_encrypt "$HF_TMP/deact.pem" "$HF_TMP/pt1")
hf key deactivate dke-deact
sleep "$CHANGE_S"
# No new content under a key that may no longer encrypt; old content stays readable (KMIP).
dke_call GET /dke/deact-key
dke_expect 403 KeyDisabled
dke_call POST "$DEACT_DECRYPT" "$(body "$CTD")"
dke_expect 200
check "$(dke_json value)" "$PT1" "a deactivated key's old content"

# ---- rotation: the GET names the new version, the old one still decrypts ----
hf key rotate dke-main
sleep "$CHANGE_S"
V2=$(version_uuid dke-main 2)
dke_call GET /dke/main-key
dke_expect 200
check "$(dke_json key.kid)" "$BASE_URL/main-key/$V2" "kid after rotation"
dke_pem "$HF_TMP/main-v2.pem"
cmp -s "$HF_TMP/main-v1.pem" "$HF_TMP/main-v2.pem" && hf_fail "rotation published the same key"
printf 'second document key' >"$HF_TMP/pt2"
CT2=$(dke_encrypt "$HF_TMP/main-v2.pem" "$HF_TMP/pt2")
dke_call POST "/dke/main-key/$V2/decrypt" "$(body "$CT2")"
dke_expect 200
check "$(dke_json value)" "$(base64 -w0 <"$HF_TMP/pt2")" "the new version's plaintext"
dke_call POST "$DECRYPT1" "$(body "$CT1")"
dke_expect 200
check "$(dke_json value)" "$PT1" "the old version's ciphertext after rotation"
# A ciphertext of one version is no ciphertext of the other: OAEP fails, 400.
dke_call POST "/dke/main-key/$V2/decrypt" "$(body "$CT1")"
dke_expect 400 BadRequest

# ---- destroyed: every version is gone, 404 ----
dke_call GET /dke/gone-key
dke_expect 200
GONE_DECRYPT=$(dke_json key.kid)
GONE_DECRYPT=${GONE_DECRYPT#"$DKE_BASE"}/decrypt
hf key destroy dke-gone --yes
sleep "$CHANGE_S"
dke_call GET /dke/gone-key
dke_expect 404 KeyNotFound
dke_call POST "$GONE_DECRYPT" "$(body "$CT1")"
dke_expect 404 KeyNotFound

# ---- 429: the service's rate limit (one decrypt a second), taken on SIGHUP ----
metric() { # SERIES: its value in /metrics, 0 when absent
    curl -s "$DKE_BASE/metrics" | awk -v s="$1" '$1 == s { v = $2 } END { print v + 0 }'
}
sed 's/^required_scope = /rate_limit = 1\nrequired_scope = /' "$CONF" >"$CONF.new" && mv "$CONF.new" "$CONF"
kill -HUP "$HF_GW_PID"
n=0
until [ "$(metric 'holdfast_config_reloads_total{result="ok"}')" = 1 ]; do
    n=$((n + 1))
    [ "$n" -lt 100 ] || hf_fail "the reload with rate_limit = 1 was not taken"
    sleep 0.1
done
sleep 1.1 # a full bucket
dke_call POST "$BLK_DECRYPT" "$(body "$CTB")"
dke_expect 200
dke_call POST "$BLK_DECRYPT" "$(body "$CTB")"
dke_expect 429 TooManyRequests

# ---- audit ----
sleep 0.5 # the 401s' summary record: one interval (200 ms)
python3 - "$HOLDFAST_STATE_DIR/audit.log" <<'PY' || hf_fail "audit records"
import json, os, re, sys
sys.path.insert(0, os.environ["top_srcdir"] + "/tests/integration")
import auditlog
recs = [r for r in auditlog.records(sys.argv[1]) if r.get("api") == "ms-dke"]
def find(what, ok, **fields):
    for r in recs:
        f = r.get("fields") or {}
        if r.get("ok") == ok and r.get("op") == "decrypt" and all(f.get(k) == v for k, v in fields.items()):
            return r
    sys.exit("no %s decrypt record with %s among %d ms-dke records" % (what, fields, len(recs)))
ok = find("successful", True, oid="5d7a4b3c-0000-4000-8000-00000000a11c", identity="alice@contoso.com",
          appid="d3590ed6-52b3-4102-aeff-aad2292ab01c", key_name="main-key")
if not re.fullmatch(r"[0-9a-f-]{36}", ok["fields"].get("key_id", "")):
    sys.exit("the success record's key_id: %s" % ok)
if ok.get("caller") != "alice@contoso.com":
    sys.exit("the success record's caller: %s" % ok)
find("refused (403, email)", False, identity="eve@contoso.com", key_name="main-key")
find("refused (404, version)", False, key_id="00000000-0000-4000-8000-000000000000")
find("refused (400, OAEP)", False, key_name="main-key")
find("refused (403, blocked)", False, key_name="blk-key")
summaries = [r for r in recs if r.get("op") == "preauth.summary" and "Unauthorized" in r.get("detail", "")]
if not summaries:
    sys.exit("no summary record of the 401s")
PY
for log in "$HOLDFAST_STATE_DIR/audit.log" "$HF_TMP/holdfastd.log" "$HF_TMP/holdfastd.out"; do
    ! grep -qF "$PT1" "$log" || hf_fail "a plaintext reached $log"
done
hf_expect_exit 0 "$HF_CLI" audit verify

# ---- a key store that cannot be read: 503, for the public key and for decrypt ----
DB=$(ls "$HOLDFAST_STATE_DIR"/*.db 2>/dev/null | head -n 1)
[ -n "$DB" ] || hf_fail "no SQLite store under $HOLDFAST_STATE_DIR"
# Overwritten in place with its WAL and index, which the module keeps open and mapped: the
# next read of a link finds no database.
for f in "$DB" "$DB-wal" "$DB-shm"; do
    [ ! -f "$f" ] || dd if=/dev/urandom of="$f" bs=4096 count=8 conv=notrunc 2>/dev/null
done
sleep "$CHANGE_S"
dke_call GET /dke/blk-key
dke_expect 503 ServiceUnavailable
dke_call POST "$BLK_DECRYPT" "$(body "$CTB")"
dke_expect 503 ServiceUnavailable
# A clean stop: in a sanitizer build, a leak or an error in holdfastd or the plugin fails here.
hf_gateway_stop || hf_fail "holdfastd did not stop cleanly: $(tail -n 20 "$HF_TMP/holdfastd.out")"
echo "dke.sh: all cases passed"
