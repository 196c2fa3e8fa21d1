#!/bin/sh
# The gcp-ekm plugin end to end: holdfastd on loopback over a key store made with the CLI, a
# JWKS served over HTTPS (a CA the test makes) by jwt-token.py, and ID tokens the test mints as
# Google's Cloud EKM service agent would send them, or as an attacker would.
#
# Shows, one case per rule: a wrap/unwrap round trip (and the other issuer spelling); bad
# signature, unknown kid and the refetch that then finds it, alg none, HS256 keyed with the
# public key, wrong iss, wrong aud, expired, not yet valid (nbf, iat), no email, email_verified
# false (401); an email off the allowlist, a reason the key's KAJ policy denies, a missing reason
# where absence is denied, a blocked link (403); a health-check wrap passing a policy that
# denies its reason; oversized fields and body, bad base64, a duplicate field in two spellings,
# a tampered blob, other AAD, another key's blob (400); unknown path, key and verb (404), the
# partner verbs (501), another method (405); a store outage (503, never 403); the audit
# record's fields on each call, and `holdfast audit verify`; a second catch-all plugin on the
# same listener (the test plugin, under /tc): each takes only the paths under its own prefix
# (plugin.h's accepts), a path under neither is the gateway's 404, never a 405; the metrics
# count wrap and unwrap as operations (hf_request_set_operation), not the route's "ekm"; a key's
# policy from a policy_file (and a key in both the file and the section refused).
. "${top_srcdir:-.}/tests/integration/lib.sh"

HOLDFASTD="$top_builddir/gateway/holdfastd"
EKM_PLUGIN="$top_builddir/gateway/plugins/gcp-ekm/.libs/gcp-ekm.so"
TEST_PLUGIN="$top_builddir/tests/integration/.libs/plugin-test.so"
[ -x "$HOLDFASTD" ] || hf_skip "$HOLDFASTD not built"
[ -f "$EKM_PLUGIN" ] || hf_skip "$EKM_PLUGIN not built"
[ -f "$TEST_PLUGIN" ] || hf_skip "$TEST_PLUGIN not built (make check builds it)"
for p in curl python3 openssl; do
    command -v "$p" >/dev/null || hf_skip "$p not installed"
done
python3 -c 'import cryptography' 2>/dev/null || hf_skip "python3-cryptography not installed"
# The plugin is written against plugin.h's whole seam; a holdfastd that lacks part of it would
# refuse to load it, which says nothing about the plugin.
if command -v nm >/dev/null; then
    missing=$(nm -D --undefined-only "$EKM_PLUGIN" | awk '$2 ~ /^hf_/ {print $2}' | while read -r s; do
        nm -D --defined-only "$HOLDFASTD" | awk '{print $3}' | grep -qx "$s" || printf '%s ' "$s"
    done)
    [ -z "$missing" ] || hf_skip "holdfastd lacks plugin.h functions the plugin needs: $missing"
fi
hf_store_setup

TOK="python3 $top_srcdir/tests/integration/jwt-token.py"
# A valid token as Google's Cloud EKM service agent sends it; mint's arguments change claims.
EKM_CLAIMS='{"iss":"https://accounts.google.com","aud":"https://ekm.test","email":"service-42@gcp-sa-ekms.iam.gserviceaccount.com","email_verified":true,"sub":"1234567890","iat":"+0","exp":"+600"}'
mint() { $TOK mint "$JW" --base "$EKM_CLAIMS" "$@"; }
# A change (block, a refetched key set) shows within a second; more for a loaded machine.
CHANGE_MS=${EKM_CHANGE_MS:-1500}
AGENT=service-42@gcp-sa-ekms.iam.gserviceaccount.com

hf() { "$HF_CLI" "$@" >>"$HF_TMP/cli.log" 2>&1 || hf_fail "holdfast $*: $(tail -n 3 "$HF_TMP/cli.log")"; }

# ---- keys, linked by their EKM key paths ----
hf key create ekm1
hf link add gcp-ekm v0/keys/k1 ekm1
hf key create ekm2
hf link add gcp-ekm v0/keys/kaj ekm2
hf key create ekm3
hf link add gcp-ekm v0/keys/blk ekm3
hf key create ekm4
hf link add gcp-ekm v0/keys/pf ekm4

# ---- the JWKS over HTTPS, under a CA of the test's own ----
JW="$HF_TMP/jwks"
mkdir -p "$JW"
HF_PKI="$HF_TMP/pki"
hf_pki_ca ca
hf_pki_cert jwks localhost ca "subjectAltName=IP:127.0.0.1,DNS:localhost"
PKI="$HF_PKI"
{ $TOK keys "$JW" k1 k2 other && $TOK publish "$JW" jwks k1; } || hf_fail "cannot make the signing keys"
hf_jwks_serve "$JW" "$PKI/jwks.pem" "$PKI/jwks.key" /certs=jwks
P_JWKS=$HF_JWKS_PORT

# ---- holdfastd ----
PORT=$(hf_free_port)
BASE="http://127.0.0.1:$PORT"
CONF="$HF_TMP/holdfastd.conf"
cat >"$CONF" <<EOC
$(hf_gateway_section "gcp-ekm, test" 256k "127.0.0.1:$PORT")

[plugin:gcp-ekm]
path = $EKM_PLUGIN

[plugin:test]
path = $TEST_PLUGIN

[test]
catchall_prefix = /tc

[gcp-ekm:main]
prefix = /ekm
audiences = https://ekm.test
jwks = https://127.0.0.1:$P_JWKS/certs
jwks_ca = $PKI/ca.pem
jwks_allow = 127.0.0.0/8
key.v0/keys/k1.allowed_emails = other@example.com, SERVICE-42@gcp-sa-ekms.iam.gserviceaccount.com
key.v0/keys/k1.cache_duration = 300s
key.v0/keys/kaj.allowed_emails = $AGENT
key.v0/keys/kaj.reasons = CUSTOMER_INITIATED_ACCESS, 6
key.v0/keys/kaj.reason_absent = deny
key.v0/keys/blk.allowed_emails = $AGENT
policy_file = ekm-policy.ini
EOC
# The policy file, named relative to the config file: a key's KAJ policy kept apart.
cat >"$HF_TMP/ekm-policy.ini" <<EOC
[key:v0/keys/pf]
allowed_emails = $AGENT
reasons = CUSTOMER_INITIATED_ACCESS
EOC
chmod 644 "$HF_TMP/ekm-policy.ini"
# A key in both the section and the file is refused, by name.
sed 's|^key.v0/keys/blk.allowed_emails|key.v0/keys/pf.allowed_emails|' "$CONF" >"$HF_TMP/both.conf"
hf_expect_exit 1 "$HOLDFASTD" -t -c "$HF_TMP/both.conf"
grep -q "key v0/keys/pf is defined both" "$HF_ERR" ||
    { cat "$HF_ERR"; hf_fail "a key in the section and the policy_file is not refused"; }
hf_gateway_start "$BASE" "$HOLDFASTD" -f -c "$CONF"

# ---- calls ----
OUT="$HF_TMP/out.json"
TOKEN=$(mint)
# ekm PATH BODY [curl args]: POST with the current $TOKEN; CODE is the HTTP status.
ekm() {
    _path=$1 _body=$2
    shift 2
    rm -f "$OUT"
    CODE=$(curl -sS -o "$OUT" -w '%{http_code}' -H "Authorization: Bearer $TOKEN" \
        -H 'Content-Type: application/json' --data-binary "$_body" "$@" "$BASE$_path" \
        2>"$HF_TMP/curl.err") || CODE="curl-exit-$?"
}
json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    d = d[int(k)] if isinstance(d, list) else d.get(k, "") if isinstance(d, dict) else ""
print(d if not isinstance(d, bool) else str(d).lower())' "$OUT" "$1" 2>/dev/null; }
# expect STATUS [GRPC_CODE]: what the last call answered; the error body is google.rpc.Status.
expect() {
    if [ "$CODE" != "$1" ]; then
        echo "--- body:" >&2
        cat "$OUT" >&2 2>/dev/null
        cat "$HF_TMP/curl.err" >&2
        hf_fail "$_path: HTTP $CODE, want $1 ${2:-}"
    fi
    [ -n "${2:-}" ] || return 0
    check "$(json code)" "$2" "$_path: google.rpc.Status code ($(cat "$OUT"))"
    [ -n "$(json message)" ] || hf_fail "$_path: the error has no message"
}
PT=SGVsbG8gV29ybGQh # "Hello World!"
WRAP="{\"plaintext\":\"$PT\",\"additionalAuthenticatedData\":\"cHJvamVjdD1uaWxl\",\"additionalContext\":{\"relativeResourceName\":\"projects/p/locations/l/keyRings/r/cryptoKeys/k/cryptoKeyVersions/1\",\"accessReasonContext\":{\"reason\":\"CUSTOMER_INITIATED_ACCESS\"}}}"
unwrap_body() { # BLOB [AAD]
    printf '{"wrappedBlob":"%s","additionalAuthenticatedData":"%s","additionalContext":{"accessReasonContext":{"reason":5}}}' \
        "$1" "${2:-cHJvamVjdD1uaWxl}"
}

# Round trip.
ekm /ekm/v0/keys/k1:wrap "$WRAP"
expect 200
BLOB=$(json wrappedBlob)
[ -n "$BLOB" ] || hf_fail "wrap answered no wrappedBlob"
ekm /ekm/v0/keys/k1:unwrap "$(unwrap_body "$BLOB")"
expect 200
check "$(json plaintext)" "$PT" "unwrap gives the plaintext back"
check "$(json allowedCacheDuration)" "300s" "the key's allowedCacheDuration"
# URL-safe base64 in, standard out; snake_case names.
URLSAFE=$(printf '%s' "$BLOB" | tr '+/' '-_' | tr -d '=')
ekm /ekm/v0/keys/k1:unwrap "{\"wrapped_blob\":\"$URLSAFE\",\"additional_authenticated_data\":\"cHJvamVjdD1uaWxl\"}"
expect 200
check "$(json plaintext)" "$PT" "unwrap of the URL-safe blob"

# ---- authentication: 401 UNAUTHENTICATED (16) for every bad token ----
bad_token() { # WHAT MINT-ARGS...
    _what=$1
    shift
    TOKEN=$(mint "$@")
    ekm /ekm/v0/keys/k1:wrap "$WRAP"
    [ "$CODE" = 401 ] || hf_fail "$_what: HTTP $CODE, want 401 ($(cat "$OUT"))"
    check "$(json code)" 16 "$_what: code"
}
bad_token "bad signature" --kid k1 --key other
bad_token "alg none" --alg none
bad_token "HS256 keyed with the public key" --alg HS256
bad_token "wrong iss" iss=https://evil.example.com
bad_token "wrong aud" aud=https://other.test
bad_token "expired" exp=-600 iat=-1200
bad_token "not yet valid" nbf=+600
bad_token "issued in the future" iat=+600
bad_token "no email" email=
bad_token "email not verified" email_verified=false
bad_token "no exp" exp=
TOKEN=
ekm /ekm/v0/keys/k1:wrap "$WRAP"
expect 401 16
ekm /ekm/v0/keys/k1:wrap "$WRAP" -H "Authorization: Basic Zm9vOmJhcg=="
expect 401 16
# The other spelling of Google's issuer is good too.
TOKEN=$(mint iss=accounts.google.com)
ekm /ekm/v0/keys/k1:wrap "$WRAP"
expect 200

# Unknown kid: Google published a new key after holdfastd loaded the set (whose max-age keeps
# it an hour). The first token signed with it is refused, and makes holdfastd refetch the set
# in the background, off the request path: the same token then passes within a second or so.
$TOK publish "$JW" jwks k1 k2
bad_token "unknown kid" --kid k2
t0=$(hf_now_ms)
until ekm /ekm/v0/keys/k1:wrap "$WRAP" && [ "$CODE" = 200 ]; do
    [ $(($(hf_now_ms) - t0)) -lt 10000 ] || hf_fail "kid k2 still refused 10 s after it was published: $(cat "$OUT")"
    sleep 0.2
done
echo "unknown kid: accepted $(($(hf_now_ms) - t0)) ms after the refetch it triggered"
grep -c /certs "$JW/fetches" | { read -r n; [ "$n" -ge 2 ] || hf_fail "no refetch of the JWKS ($n fetches)"; }

# ---- authorization ----
TOKEN=$(mint)
ekm /ekm/v0/keys/nokey:wrap "$WRAP"
expect 404 5
TOKEN=$(mint email=intruder@gcp-sa-ekms.iam.gserviceaccount.com)
ekm /ekm/v0/keys/k1:wrap "$WRAP"
expect 403 7
TOKEN=$(mint)
# KAJ: the kaj key allows CUSTOMER_INITIATED_ACCESS and 6 only, and no call without a reason.
kaj() { # REASON-JSON [HEALTH]
    printf '{"plaintext":"%s","additionalContext":{"accessReasonContext":{"reason":%s},"isKeyHealthCheck":%s}}' \
        "$PT" "$1" "${2:-false}"
}
ekm /ekm/v0/keys/kaj:wrap "$(kaj '"GOOGLE_INITIATED_REVIEW"')"
expect 403 7
check "$(json details.0.fieldViolations.0.field)" additionalContext.accessReasonContext.reason \
    "the KAJ denial's BadRequest detail"
check "$(json details.0.@type)" type.googleapis.com/google.rpc.BadRequest "the detail's type"
ekm /ekm/v0/keys/kaj:wrap "$(kaj '"CUSTOMER_INITIATED_ACCESS"')"
expect 200
KAJ_BLOB=$(json wrappedBlob)
ekm /ekm/v0/keys/kaj:wrap "$(kaj 6)"
expect 200
ekm /ekm/v0/keys/kaj:wrap "{\"plaintext\":\"$PT\"}"
expect 403 7
ekm /ekm/v0/keys/kaj:wrap "$(kaj '"A_REASON_FROM_THE_FUTURE"')"
expect 403 7
# A health-check wrap passes a policy that denies its reason; an unwrap never does.
ekm /ekm/v0/keys/kaj:wrap "$(kaj '"GOOGLE_INITIATED_REVIEW"' true)"
expect 200
ekm /ekm/v0/keys/kaj:unwrap "{\"wrappedBlob\":\"$KAJ_BLOB\",\"additionalContext\":{\"accessReasonContext\":{\"reason\":\"GOOGLE_INITIATED_REVIEW\"},\"isKeyHealthCheck\":true}}"
expect 403 7
ekm /ekm/v0/keys/kaj:unwrap "{\"wrappedBlob\":\"$KAJ_BLOB\",\"additionalContext\":{\"accessReasonContext\":{\"reason\":5}}}"
expect 200
check "$(json plaintext)" "$PT" "unwrap under the KAJ policy"
[ -z "$(json allowedCacheDuration)" ] || hf_fail "allowedCacheDuration on a key that sets none"

# The policy_file's key: its reasons, as a section's would be.
ekm /ekm/v0/keys/pf:wrap "$(kaj '"CUSTOMER_INITIATED_ACCESS"')"
expect 200
ekm /ekm/v0/keys/pf:wrap "$(kaj '"GOOGLE_INITIATED_REVIEW"')"
expect 403 7

# Blocked link: 403 within a second; unblocked: works again.
ekm /ekm/v0/keys/blk:wrap "$WRAP"
expect 200
BLK_BLOB=$(json wrappedBlob)
hf link block gcp-ekm v0/keys/blk
sleep "$(echo "$CHANGE_MS" | awk '{print $1/1000}')"
ekm /ekm/v0/keys/blk:wrap "$WRAP"
expect 403 7
ekm /ekm/v0/keys/blk:unwrap "$(unwrap_body "$BLK_BLOB")"
expect 403 7
hf link unblock gcp-ekm v0/keys/blk
sleep "$(echo "$CHANGE_MS" | awk '{print $1/1000}')"
ekm /ekm/v0/keys/blk:unwrap "$(unwrap_body "$BLK_BLOB")"
expect 200

# ---- bad input: 400 INVALID_ARGUMENT (3) ----
ekm /ekm/v0/keys/k1:wrap '{"plaintext":"SGVsbG8*"}'
expect 400 3
check "$(json details.0.fieldViolations.0.field)" plaintext "bad base64 names its field"
ekm /ekm/v0/keys/k1:wrap "{\"plaintext\":\"$PT\",\"PLAIN_TEXT\":\"$PT\"}"
expect 400 3
ekm /ekm/v0/keys/k1:wrap "{\"plaintext\":\"$PT\",\"plaintext\":\"$PT\"}"
expect 400 3
ekm /ekm/v0/keys/k1:wrap '{"additionalContext":{}}'
expect 400 3
python3 -c 'import base64; print("{\"plaintext\":\"%s\"}" % base64.b64encode(b"x" * 65537).decode())' >"$HF_TMP/big-pt.json"
ekm /ekm/v0/keys/k1:wrap "@$HF_TMP/big-pt.json"
expect 400 3
python3 -c 'import base64; print("{\"plaintext\":\"%s\"}" % base64.b64encode(b"x" * 65536).decode())' >"$HF_TMP/max-pt.json"
ekm /ekm/v0/keys/k1:wrap "@$HF_TMP/max-pt.json"
expect 200
python3 -c 'import base64; print("{\"plaintext\":\"AA==\",\"additionalAuthenticatedData\":\"%s\"}" % base64.b64encode(b"x" * 65537).decode())' >"$HF_TMP/big-aad.json"
ekm /ekm/v0/keys/k1:wrap "@$HF_TMP/big-aad.json"
expect 400 3
# A body over 256 KiB is refused from its Content-Length, before it is read.
python3 -c 'print("{\"plaintext\":\"AA==\",\"x\":\"%s\"}" % ("y" * 270000))' >"$HF_TMP/big-body.json"
ekm /ekm/v0/keys/k1:wrap "@$HF_TMP/big-body.json"
expect 400 3
# Tampered blobs, other AAD, another key's blob, an unknown format, a short one: 400, never 403.
TAMPERED=$(python3 -c 'import base64,sys; b=bytearray(base64.b64decode(sys.argv[1])); b[-1]^=1; print(base64.b64encode(bytes(b)).decode())' "$BLOB")
ekm /ekm/v0/keys/k1:unwrap "$(unwrap_body "$TAMPERED")"
expect 400 3
ekm /ekm/v0/keys/k1:unwrap "$(unwrap_body "$BLOB" cHJvamVjdD1vdGhlcg==)"
expect 400 3
ekm /ekm/v0/keys/k1:unwrap "$(unwrap_body "$KAJ_BLOB" "")"
expect 400 3
FORMAT2=$(python3 -c 'import base64,sys; b=bytearray(base64.b64decode(sys.argv[1])); b[0]=2; print(base64.b64encode(bytes(b)).decode())' "$BLOB")
ekm /ekm/v0/keys/k1:unwrap "$(unwrap_body "$FORMAT2")"
expect 400 3
NEWER=$(python3 -c 'import base64,sys; b=bytearray(base64.b64decode(sys.argv[1])); b[4]=9; print(base64.b64encode(bytes(b)).decode())' "$BLOB")
ekm /ekm/v0/keys/k1:unwrap "$(unwrap_body "$NEWER")"
expect 400 3
ekm /ekm/v0/keys/k1:unwrap "$(unwrap_body AQAAAAEAAQIDBAUGBwgJCgsP)"
expect 400 3

# ---- paths and methods: decided before authentication ----
TOKEN=
# Under no prefix of gcp-ekm's nor the test plugin's: both catch-alls decline it, so it is the
# gateway's own 404 (not google.rpc.Status, not the test plugin's 405 for POST).
ekm /nope/v0/keys/k1:wrap "$WRAP"
expect 404
check "$(json error)" NotFound "a path under no plugin's prefix: the gateway's 404 ($(cat "$OUT"))"
# The test plugin's catch-all takes /tc, behind gcp-ekm's on the same listener.
CODE=$(curl -sS -o "$OUT" -w '%{http_code}' "$BASE/tc/v0/keys/k1:wrap")
_path=GET-tc
expect 200
check "$(json catchall)" /tc/v0/keys/k1:wrap "the second catch-all answers under its prefix"
ekm /tc/v0/keys/k1:wrap "$WRAP"
expect 405
check "$(json errorName)" TestMethod "POST under /tc: the test plugin's 405, not gcp-ekm's"
ekm /ekm/v0/keys/k1:frobnicate "$WRAP"
expect 404 5
ekm /ekm/v0/keys/k1 "$WRAP"
expect 404 5
ekm "/ekm/v0/keys/../k1:wrap" "$WRAP" --path-as-is
expect 404 5
ekm /ekm/v0/keys/k1:createKey "$WRAP"
expect 501 12
ekm /ekm/v0/keys/k1:confidentialWrap "$WRAP"
expect 501 12
rm -f "$OUT"
CODE=$(curl -sS -o "$OUT" -w '%{http_code}' "$BASE/ekm/v0/keys/k1/info")
_path=GET-info
expect 501 12
CODE=$(curl -sS -o "$OUT" -w '%{http_code}' "$BASE/ekm/v0/keys/k1:wrap")
_path=GET-wrap
expect 405 12
TOKEN=$(mint)

# The handler names its verb: wrap and unwrap are counted apart, and nothing as "ekm".
curl -sS "$BASE/metrics" >"$HF_TMP/metrics.txt" || hf_fail "GET /metrics"
grep -q '^holdfast_requests_total{api="gcp-ekm",operation="wrap",status="200"}' "$HF_TMP/metrics.txt" ||
    hf_fail "no wrap series in /metrics: $(grep gcp-ekm "$HF_TMP/metrics.txt" | head -n 5)"
grep -q '^holdfast_requests_total{api="gcp-ekm",operation="unwrap",status="200"}' "$HF_TMP/metrics.txt" ||
    hf_fail "no unwrap series in /metrics"
! grep -q '^holdfast_requests_total{api="gcp-ekm",operation="ekm",status="200"}' "$HF_TMP/metrics.txt" ||
    hf_fail "a successful call still counted as operation ekm"

# ---- the audit record of each call carries the API's fields ----
python3 - "$HOLDFAST_STATE_DIR/audit.log" "$AGENT" <<'PY' || hf_fail "audit fields"
import json, os, sys
sys.path.insert(0, os.environ["top_srcdir"] + "/tests/integration")
import auditlog
log, agent = sys.argv[1:3]
recs = [r for r in auditlog.records(log) if r.get("api") == "gcp-ekm"]
def find(op, **fields):
    for r in recs:
        f = r.get("fields") or {}
        if r.get("op") == op and all(f.get(k) == v for k, v in fields.items()):
            return r
    sys.exit("no %s record with %s among %d gcp-ekm records; last: %s" % (op, fields, len(recs), recs[-1:] ))
ok = find("wrap", reason="CUSTOMER_INITIATED_ACCESS", health_check="false",
          resource_name="projects/p/locations/l/keyRings/r/cryptoKeys/k/cryptoKeyVersions/1")
if (ok.get("fields") or {}).get("caller_email", "").lower() != agent:
    sys.exit("caller_email missing from %s" % ok)
find("wrap.health_check", reason="GOOGLE_INITIATED_REVIEW", health_check="true")
find("unwrap", reason="CUSTOMER_INITIATED_ACCESS")
# A denial is recorded with its reason too.
denied = [r for r in recs if (r.get("fields") or {}).get("reason") == "GOOGLE_INITIATED_REVIEW"
          and (r.get("fields") or {}).get("health_check") == "false"]
if not denied:
    sys.exit("the KAJ denial has no record with its reason")
PY
for log in "$HOLDFAST_STATE_DIR/audit.log" "$HF_TMP/holdfastd.log" "$HF_TMP/holdfastd.out"; do
    ! grep -q "$PT" "$log" || hf_fail "a plaintext reached $log"
done
hf_expect_exit 0 "$HF_CLI" audit verify

# ---- hf-load's EKM builder against this gateway: its minted token is accepted on every call ----
HF_LOAD="$top_builddir/tests/load/hf-load"
if [ -x "$HF_LOAD" ]; then
    hf_expect_exit 0 "$HF_LOAD" --url "$BASE" --api ekm-wrap --prefix ekm --key-id v0/keys/k1 \
        --token-key "$JW/k1.pem" --token-kid k1 --audience https://ekm.test --email "$AGENT" \
        --vus 2 --ramp-up 0 --steady 2s --ramp-down 0 --pause 0 --no-progress --csv "$HF_TMP/load.csv"
    python3 - "$HF_TMP/load.csv" <<'PY' || hf_fail "hf-load ekm-wrap: $(cat "$HF_TMP/load.csv")"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
r = rows[-1]
print("hf-load ekm-wrap, 2 VUs for 2 s: %s ops, %s ops/s, p50 %s ms, p99 %s ms, %s errors" %
      (r["total_ops"], r["ops_per_s"], r["p50_ms"], r["p99_ms"], r["errors"]))
sys.exit(0 if int(r["total_ops"]) > 0 and int(r["errors"]) == 0 else 1)
PY
fi

# ---- a store outage is 503 UNAVAILABLE (14), never 403 (Cloud EKM would disable the key) ----
DB=$(ls "$HOLDFAST_STATE_DIR"/*.db 2>/dev/null | head -n 1)
[ -n "$DB" ] || hf_fail "no SQLite store under $HOLDFAST_STATE_DIR"
cp "$DB" "$HF_TMP/store.bak"
# Overwritten in place, with its WAL and shared-memory index (the module keeps them open and
# mapped, and a WAL reader trusts its page cache while the index says nothing changed): the
# next read of a link finds no database.
for f in "$DB" "$DB-wal" "$DB-shm"; do
    [ ! -f "$f" ] || dd if=/dev/urandom of="$f" bs=4096 count=8 conv=notrunc 2>/dev/null
done
sleep "$(echo "$CHANGE_MS" | awk '{print $1/1000}')"
ekm /ekm/v0/keys/k1:wrap "$WRAP"
expect 503 14
ekm /ekm/v0/keys/k1:unwrap "$(unwrap_body "$BLOB")"
expect 503 14
echo "ekm.sh: all cases passed"
