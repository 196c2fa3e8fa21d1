#!/bin/sh
# The gws-cse plugin end to end (specs/gws-cse.md): holdfastd over TLS on loopback with three
# KACLS prefixes (/cse, /guest with guests allowed, /blk whose link the test blocks), each KEK
# linked with `holdfast link create gws-cse`; a customer IdP's JWKS (an RSA and a P-256 key) and
# Google's authorization issuers' JWKS served over HTTPS by jwt-token.py under a CA the test
# makes; tokens minted by the test as Workspace and the IdP would send them, or as an attacker
# would.
#
# Shows, one case per rule, each with its status and the error body {"code","message",
# "details"}: a wrap/unwrap round trip (RS256 and ES256 authn); bad signature, unknown kid and
# the refetch that then finds it, alg none, HS256 keyed with the public key, wrong iss, wrong
# aud, expired (beyond the 60 s skew, and within it), not yet valid, missing claims (401); role,
# email (google_email first, case ignored), guest rule, kacls_url, kacls_owner_domain, perimeter
# rules (wrap's and the blob's on unwrap), resource_name on unwrap and privilegedunwrap, a
# non-admin's privileged ops, a blocked link (403), each refusal after authentication with its
# own audit record (op, user, resource_name, reason) and nothing changed; oversized fields, bad
# base64, a tampered blob (400); a big body (413); CORS: the preflight (204, its headers, no
# audit record), the headers on an error, none for an unlisted origin; an unknown op (404 before
# authentication), another method (405), the Gmail ops and delegate when not enabled (501);
# /status and /certs; digest with the spec's resource key hash vectors; privilegedwrap ->
# privilegedunwrap by an admin; a store outage (503); `holdfast audit verify`.
. "${top_srcdir:-.}/tests/integration/lib.sh"

HOLDFASTD="$top_builddir/gateway/holdfastd"
CSE_PLUGIN="$top_builddir/gateway/plugins/gws-cse/.libs/gws-cse.so"
[ -x "$HOLDFASTD" ] || hf_skip "$HOLDFASTD not built"
[ -f "$CSE_PLUGIN" ] || hf_skip "$CSE_PLUGIN not built"
for p in curl python3 openssl; do
    command -v "$p" >/dev/null || hf_skip "$p not installed"
done
python3 -c 'import cryptography' 2>/dev/null || hf_skip "python3-cryptography not installed"
hf_store_setup

# Cases where the plugin does not do what the spec says yet, by name (each reported): one of
# these that fails prints "KNOWN FAILURE" and the run goes on; one that passes prints "NOW
# PASSES" (drop it from the list). Empty, as now: every case must pass.
CSE_KNOWN_FAILURES=${CSE_KNOWN_FAILURES-}
KNOWN_SEEN=
# fail_case NAME MESSAGE: fails the run, unless NAME is a known failure (then returns 1).
fail_case() {
    case " $CSE_KNOWN_FAILURES " in
    *" $1 "*)
        echo "KNOWN FAILURE: $1: $2"
        KNOWN_SEEN="$KNOWN_SEEN $1"
        return 1
        ;;
    esac
    hf_fail "$1: $2"
}

TOK="python3 $top_srcdir/tests/integration/jwt-token.py"
# A change (block, a refetched key set) shows within a second; more for a loaded machine.
CHANGE_S=$(echo "${CSE_CHANGE_MS:-1500}" | awk '{print $1/1000}')
ALICE=alice@example.com
ADMIN=admin@example.com
DRIVE=gsuitecse-tokenissuer-drive@system.gserviceaccount.com
ORIGIN=https://client-side-encryption.google.com

hf() { "$HF_CLI" "$@" >>"$HF_TMP/cli.log" 2>&1 || hf_fail "holdfast $*: $(tail -n 3 "$HF_TMP/cli.log")"; }

# ---- the KEKs, one link each ----
for k in cse guest blk; do
    hf key create "cse-$k"
    hf link create gws-cse "kek-$k" "cse-$k"
done

# ---- key sets over HTTPS, under a CA of the test's own ----
HF_PKI="$HF_TMP/pki"
hf_pki_ca ca
hf_pki_cert server localhost ca "subjectAltName=IP:127.0.0.1,DNS:localhost"
PKI="$HF_PKI"
CURL_CA_BUNDLE=$PKI/ca.pem
export CURL_CA_BUNDLE
JW="$HF_TMP/jwks"
mkdir -p "$JW"
# idp1, idp2 (published later), idpe (P-256): the IdP's; other: nobody's; gz1: Google's.
{ $TOK keys "$JW" idp1 idp2 idpe:ec other gz1 && $TOK publish "$JW" idp idp1 idpe &&
    $TOK publish "$JW" authz gz1; } || hf_fail "cannot make the signing keys"
hf_jwks_serve "$JW" "$PKI/server.pem" "$PKI/server.key" /idp/certs=idp '/jwk/*=authz'
P_JWKS=$HF_JWKS_PORT

# ---- holdfastd: one TLS listener, three KACLS prefixes ----
PORT=$(hf_free_port)
BASE="https://127.0.0.1:$PORT"
CONF="$HF_TMP/holdfastd.conf"
prefix() { # NAME EXTRA-LINES
    cat <<EOP
[gws-cse:$1]
prefix = /$1
kacls_url = $BASE/$1
kek = kek-$1
authn.idp.issuer = https://idp.example.com
authn.idp.jwks = https://127.0.0.1:$P_JWKS/idp/certs
authn.idp.audiences = cse-client-1, cse-client-2
authz_jwks = https://127.0.0.1:$P_JWKS/jwk/%s
jwks_ca = $PKI/ca.pem
jwks_allow = 127.0.0.0/8
admins = Admin@Example.com
$2

EOP
}
cat >"$CONF" <<EOC
[gateway]
module = $HF_MODULE
pin_file = $HOLDFAST_STATE_DIR/token-gateway.pin
plugins = gws-cse
log = $HF_TMP/holdfastd.log

[audit]
preauth_interval_ms = 200

[plugin:gws-cse]
path = $CSE_PLUGIN

[listener:cse]
listen = 127.0.0.1:$PORT
cert = $PKI/server.pem
key = $PKI/server.key
client_certificate = off
plugins = gws-cse

$(prefix cse "name = Holdfast test KACLS
owner_domain = example.com
perimeter.eng = email=alice@*
perimeter.my_perimeter = email=*
perimeter.perimeter1 = email=*")
$(prefix guest "guests = allow")
$(prefix blk "")
EOC
hf_gateway_start "$BASE" "$HOLDFASTD" -f -c "$CONF"

# ---- tokens ----
AUTHN_CLAIMS="{\"iss\":\"https://idp.example.com\",\"aud\":\"cse-client-1\",\"email\":\"$ALICE\",\"iat\":\"+0\",\"exp\":\"+600\"}"
authz_claims() { # PREFIX ROLE
    printf '{"iss":"%s","aud":"cse-authorization","email":"%s","email_type":"google","role":"%s","resource_name":"//googleapis.com/drive/files/doc1","perimeter_id":"","kacls_url":"%s/%s","iat":"+0","exp":"+600"}' \
        "$DRIVE" "$ALICE" "$2" "$BASE" "$1"
}
authn() { $TOK mint "$JW" --key idp1 --base "$AUTHN_CLAIMS" "$@"; }
authz() { # PREFIX ROLE [mint args]
    _p=$1 _r=$2
    shift 2
    $TOK mint "$JW" --key gz1 --base "$(authz_claims "$_p" "$_r")" "$@"
}

# ---- calls ----
OUT="$HF_TMP/out.json"
HDR="$HF_TMP/headers"
# post PATH BODY [curl args]: CODE the HTTP status, the body in $OUT, the headers in $HDR.
post() {
    _path=$1 _body=$2
    shift 2
    rm -f "$OUT" "$HDR"
    CODE=$(curl -sS -o "$OUT" -D "$HDR" -w '%{http_code}' -H 'Content-Type: application/json' \
        --data-binary "$_body" "$@" "$BASE$_path" 2>"$HF_TMP/curl.err") || CODE="curl-exit-$?"
}
get() { # PATH [curl args]
    _path=$1
    shift
    rm -f "$OUT" "$HDR"
    CODE=$(curl -sS -o "$OUT" -D "$HDR" -w '%{http_code}' "$@" "$BASE$_path" \
        2>"$HF_TMP/curl.err") || CODE="curl-exit-$?"
}
json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    d = d[int(k)] if isinstance(d, list) else d.get(k, "") if isinstance(d, dict) else ""
print(d if not isinstance(d, bool) else str(d).lower())' "$OUT" "$1" 2>/dev/null; }
header() { # NAME: its value in the last answer ("" when absent)
    tr -d '\r' <"$HDR" | awk -v n="$(echo "$1" | tr 'A-Z' 'a-z')" -F': ' \
        'tolower($1) == n { sub(/^[^:]*: /, ""); print; exit }'
}
# expect STATUS: the last call's status; an error's body is exactly {"code": STATUS, "message":
# a non-empty string, "details": a string} (spec, "Errors"), with no wrapped key or key in it.
expect() {
    if [ "$CODE" != "$1" ]; then
        echo "--- body:" >&2
        cat "$OUT" >&2 2>/dev/null
        cat "$HF_TMP/curl.err" >&2
        fail_case "${WHAT:-$_path}" "HTTP $CODE, want $1"
        return
    fi
    [ "$1" -ge 400 ] || return 0
    python3 - "$OUT" "$1" <<'PY' || fail_case "${WHAT:-$_path}" "the error body: $(cat "$OUT")"
import json, sys
body = json.load(open(sys.argv[1]))
assert isinstance(body, dict) and sorted(body) == ["code", "details", "message"], body
assert body["code"] == int(sys.argv[2]) and not isinstance(body["code"], bool), body
assert isinstance(body["message"], str) and body["message"], body
assert isinstance(body["details"], str), body
PY
}
# Each call carries its case's name as its reason (opaque, audited as it is), so the audit
# checks at the end find that call's record. audit_expect TAG OP USER [FIELD=VALUE...]: the
# refusal tagged TAG has its own record, not ok, for OP and USER; audit_none TAG: it has none
# (refused before authentication: counted in the summaries instead).
AUDIT_EXPECT="$HF_TMP/audit-expect"
: >"$AUDIT_EXPECT"
audit_expect() { printf '%s\n' "$*" >>"$AUDIT_EXPECT"; }
audit_none() { printf '%s -\n' "$1" >>"$AUDIT_EXPECT"; }

# cse_audit total: the gws-cse records in the audit log, a summary counting its requests;
# cse_audit check: one line "TAG<tab>what" per refusal in $AUDIT_EXPECT whose record is not
# what the spec wants (and whether a DEK reached the log).
cse_audit() {
    python3 - "$1" "$HOLDFAST_STATE_DIR/audit.log" "$AUDIT_EXPECT" "$DEK" <<'PY'
import json, os, re, sys
sys.path.insert(0, os.environ["top_srcdir"] + "/tests/integration")
import auditlog
mode, log, expect, dek = sys.argv[1:5]
recs = [r for r in auditlog.records(log) if r.get("api") == "gws-cse"]
if mode == "total":
    n = 0
    for r in recs:
        m = re.search(r": (\d+) requests refused before authentication", r.get("detail", ""))
        n += int(m.group(1)) if r.get("op") == "preauth.summary" and m else 1
    print(n)
    sys.exit(0)
if dek.encode() in open(log, "rb").read():
    sys.exit("a DEK reached the audit log")
by_reason = {}
for r in recs:
    reason = (r.get("fields") or {}).get("reason")
    if reason is not None:
        by_reason.setdefault(reason, []).append(r)
def who(r):
    f = r.get("fields") or {}
    return {v.lower() for v in (r.get("caller"), f.get("user"), f.get("email"),
                                 f.get("caller_email")) if isinstance(v, str)}
bad = []
for line in open(expect):
    tag, rest = line.split(" ", 1)
    rest = rest.split()
    got = by_reason.get(tag, [])
    if rest == ["-"]:
        if got:
            bad.append("%s\trefused before authentication, yet a record of its own: %s" % (tag, got))
        continue
    op, user, fields = rest[0], rest[1].lower(), dict(f.split("=", 1) for f in rest[2:])
    if not got:
        bad.append("%s\tno record" % tag)
        continue
    # The request's outcome is its last record: a refusal after the blob was opened follows
    # the decrypt's own record.
    r = max(got, key=lambda r: r.get("seq", 0))
    f = r.get("fields") or {}
    if r.get("ok") is not False:
        bad.append("%s\tthe record says ok: %s" % (tag, r))
    if op not in (r.get("op") or "").split("."):
        bad.append("%s\top %r, want %s" % (tag, r.get("op"), op))
    if user not in who(r):
        bad.append("%s\tthe user %s is not in the record: %s" % (tag, user, r))
    for k, v in fields.items():
        if f.get(k) != v:
            bad.append("%s\tfield %s %r, want %r" % (tag, k, f.get(k), v))
ok = [r for r in by_reason.get("round-trip", []) if r.get("ok") and r.get("op") == "wrap"]
if not ok or (ok[0].get("fields") or {}).get("resource_name") != "//googleapis.com/drive/files/doc1":
    bad.append("round-trip\tthe wrap has no record with its resource_name: %s" % by_reason.get("round-trip"))
for b in bad:
    print(b)
print("audit: %d gws-cse records checked" % len(recs), file=sys.stderr)
PY
}

wrap_body() { # AUTHN AUTHZ KEY REASON
    printf '{"authentication":"%s","authorization":"%s","key":"%s","reason":"%s"}' "$@"
}
unwrap_body() { # AUTHN AUTHZ WRAPPED REASON
    printf '{"authentication":"%s","authorization":"%s","wrapped_key":"%s","reason":"%s"}' "$@"
}
# seal WHAT PATH AUTHN AUTHZ KEY TAG: a wrap that must work; its wrapped_key in SEALED.
seal() {
    WHAT=$1
    post "$2" "$(wrap_body "$3" "$4" "$5" "$6")"
    expect 200
    SEALED=$(json wrapped_key)
    [ -n "$SEALED" ] || hf_fail "$1: no wrapped_key: $(cat "$OUT")"
    WHAT=
}
DEK=$(python3 -c 'import base64,os; print(base64.b64encode(os.urandom(32)).decode())')
AN=$(authn)
AZW=$(authz cse writer)
AZR=$(authz cse reader)

# ---- round trips ----
seal wrap /cse/wrap "$AN" "$AZW" "$DEK" round-trip
BLOB=$SEALED
WHAT="unwrap"
post /cse/unwrap "$(unwrap_body "$AN" "$AZR" "$BLOB" round-trip-unwrap)"
expect 200
check "$(json key)" "$DEK" "unwrap gives the DEK back"
WHAT="unwrap by a writer"
post /cse/unwrap "$(unwrap_body "$AN" "$AZW" "$BLOB" round-trip-writer)"
expect 200
WHAT="wrap by an upgrader"
post /cse/wrap "$(wrap_body "$AN" "$(authz cse upgrader)" "$DEK" upgrader)"
expect 200
WHAT="wrap with an ES256 authentication token"
post /cse/wrap "$(wrap_body "$(authn --key idpe)" "$AZW" "$DEK" es256)"
expect 200
WHAT="wrap with the second audience"
post /cse/wrap "$(wrap_body "$(authn aud=cse-client-2)" "$AZW" "$DEK" aud2)"
expect 200
WHAT="wrap with an aud array"
post /cse/wrap "$(wrap_body "$(authn 'aud:=["x","cse-client-1"]')" "$AZW" "$DEK" aud-array)"
expect 200
WHAT="a token expired 30 s ago, within the 60 s skew"
post /cse/wrap "$(wrap_body "$(authn exp=-30 iat=-600)" "$AZW" "$DEK" skew)"
expect 200

# ---- check 2, tokens: 401, before authentication ----
refuse() { # STATUS TAG OP-PATH BODY
    WHAT=$2
    post "$3" "$4"
    expect "$1"
    WHAT=
}
bad_authn() { # TAG MINT-ARGS...
    _tag=$1
    shift
    refuse 401 "$_tag" /cse/wrap "$(wrap_body "$(authn "$@")" "$AZW" "$DEK" "$_tag")"
    audit_none "$_tag"
}
bad_authz() { # TAG MINT-ARGS...
    _tag=$1
    shift
    refuse 401 "$_tag" /cse/wrap "$(wrap_body "$AN" "$(authz cse writer "$@")" "$DEK" "$_tag")"
}
sleep 0.5 # the summaries of what came before are written (preauth_interval_ms = 200)
unauth0=$(hf_preauth_count "$HOLDFAST_STATE_DIR/audit.log" gws-cse UNAUTHENTICATED | cut -d' ' -f1)
bad_authn authn-bad-signature --kid idp1 --key other
bad_authz authz-bad-signature --kid gz1 --key other
bad_authn authn-alg-none --alg none
bad_authz authz-alg-none --alg none
bad_authn authn-hs256-public-key --alg HS256
bad_authz authz-hs256-public-key --alg HS256
bad_authn authn-wrong-iss iss=https://evil.example.com
bad_authz authz-wrong-iss iss=gsuitecse-tokenissuer-evil@system.gserviceaccount.com
bad_authz authz-gmail-iss-while-off iss=gsuitecse-tokenissuer-gmail@system.gserviceaccount.com
bad_authn authn-wrong-aud aud=cse-client-3
bad_authz authz-wrong-aud aud=cse-authorization-2
bad_authn authn-expired exp=-90 iat=-600
bad_authz authz-expired exp=-90 iat=-600
bad_authn authn-not-yet-valid nbf=+600
bad_authz authz-not-yet-valid nbf=+600
bad_authn authn-no-exp exp=
bad_authz authz-no-exp exp=
# A claim the checks need is required of the token (401), not read as an empty value.
bad_authz authz-no-role role=
bad_authz authz-no-email email=
bad_authz authz-no-kacls-url kacls_url=
bad_authn authn-no-email email=
refuse 400 no-authentication /cse/wrap "{\"authorization\":\"$AZW\",\"key\":\"$DEK\",\"reason\":\"no-authn\"}"
refuse 401 not-a-jwt /cse/wrap "$(wrap_body "not.a.jwt" "$AZW" "$DEK" not-a-jwt)"
# Refusals before authentication (the ten bad authentication tokens above) are counted in the
# summary records, one per interval.
sleep 0.5
unauth=$(hf_preauth_count "$HOLDFAST_STATE_DIR/audit.log" gws-cse UNAUTHENTICATED | cut -d' ' -f1)
[ $((unauth - unauth0)) -ge 10 ] ||
    hf_fail "the bad authentication tokens are not counted in the summaries ($unauth0 -> $unauth)"

# Unknown kid: the IdP published a new key after holdfastd loaded the set (whose max-age keeps
# it an hour). The first token signed with it is refused and makes holdfastd refetch the set in
# the background, off the request path: the same token then passes within a second or so.
fetches0=$(grep -c '^/idp/certs$' "$JW/fetches")
$TOK publish "$JW" idp idp1 idpe idp2
AN2=$(authn --key idp2)
bad_authn_token() { # TAG TOKEN
    refuse 401 "$1" /cse/wrap "$(wrap_body "$2" "$AZW" "$DEK" "$1")"
}
bad_authn_token authn-unknown-kid "$AN2"
t0=$(hf_now_ms)
until post /cse/wrap "$(wrap_body "$AN2" "$AZW" "$DEK" refetched)" && [ "$CODE" = 200 ]; do
    [ $(($(hf_now_ms) - t0)) -lt 10000 ] || hf_fail "kid idp2 still refused 10 s after it was published: $(cat "$OUT")"
    sleep 0.2
done
echo "unknown kid: accepted $(($(hf_now_ms) - t0)) ms after the refetch it triggered"
[ "$(grep -c '^/idp/certs$' "$JW/fetches")" -gt "$fetches0" ] || hf_fail "no refetch of the IdP's JWKS"

# ---- checks 3-10: 403, each with its own audit record ----
deny() { # TAG OP-PATH BODY USER [FIELD=VALUE...]: 403, audited
    _tag=$1 _p=$2 _b=$3
    shift 3
    refuse 403 "$_tag" "$_p" "$_b"
    audit_expect "$_tag" "${_p##*/}" "$@"
}
deny_wrap() { # TAG AUTHN AUTHZ [USER]
    deny "$1" /cse/wrap "$(wrap_body "$2" "$3" "$DEK" "$1")" "${4:-$ALICE}" \
        resource_name=//googleapis.com/drive/files/doc1
}
ok_wrap() { # WHAT AUTHN AUTHZ [PREFIX]
    WHAT=$1
    post "/${4:-cse}/wrap" "$(wrap_body "$2" "$3" "$DEK" ok)"
    expect 200
    WHAT=
}
# 3: role per op
deny_wrap role-reader-wraps "$AN" "$AZR"
deny_wrap role-verifier-wraps "$AN" "$(authz cse verifier)"
deny role-upgrader-unwraps /cse/unwrap "$(unwrap_body "$AN" "$(authz cse upgrader)" "$BLOB" role-upgrader-unwraps)" "$ALICE"
# 4: the same user, case ignored; google_email before email
# The audited user is the authz token's email (the document's user, spec check 10); the
# record names the authenticated one too.
deny email-mismatch /cse/wrap \
    "$(wrap_body "$AN" "$(authz cse writer email=bob@example.com)" "$DEK" email-mismatch)" \
    bob@example.com resource_name=//googleapis.com/drive/files/doc1 authn_user=$ALICE
ok_wrap "email case ignored" "$AN" "$(authz cse writer email=ALICE@Example.COM)"
ok_wrap "google_email first" "$(authn email=alice@idp.example.net google_email=$ALICE)" "$AZW"
deny_wrap google-email-precedence "$(authn google_email=bob@example.com)" "$AZW"
# 5: guests
deny_wrap guest-denied "$AN" "$(authz cse writer email_type=guest)"
ok_wrap "email_type absent" "$AN" "$(authz cse writer email_type=)"
ok_wrap "a guest where guests are allowed" "$AN" "$(authz guest writer email_type=guest)" guest
# 6: kacls_url byte for byte, kacls_owner_domain
deny_wrap kacls-url-trailing-slash "$AN" "$(authz cse writer kacls_url=$BASE/cse/)"
deny_wrap kacls-url-other-prefix "$AN" "$(authz guest writer)"
deny_wrap kacls-url-case "$AN" "$(authz cse writer kacls_url=$(echo "$BASE" | tr 'a-z' 'A-Z')/cse)"
ok_wrap "kacls_owner_domain ours" "$AN" "$(authz cse writer kacls_owner_domain=example.com)"
deny_wrap kacls-owner-domain "$AN" "$(authz cse writer kacls_owner_domain=other.example)"
# 8: perimeter rules (alice@* for eng; an unlisted id fails once rules exist; "" passes)
AZ_ENG=$(authz cse writer perimeter_id=eng)
seal "wrap in perimeter eng" /cse/wrap "$AN" "$AZ_ENG" "$DEK" perimeter-eng
ENG_BLOB=$SEALED
CAROL=carol@example.com
AN_CAROL=$(authn email=$CAROL)
deny_wrap perimeter-rule "$AN_CAROL" "$(authz cse writer perimeter_id=eng email=$CAROL)" "$CAROL"
deny_wrap perimeter-unlisted "$AN" "$(authz cse writer perimeter_id=nowhere)"
# unwrap checks the blob's perimeter, whatever the authz token says
deny perimeter-of-the-blob /cse/unwrap \
    "$(unwrap_body "$AN_CAROL" "$(authz cse reader email=$CAROL)" "$ENG_BLOB" perimeter-of-the-blob)" "$CAROL"
WHAT="unwrap in perimeter eng"
post /cse/unwrap "$(unwrap_body "$AN" "$(authz cse reader perimeter_id=eng)" "$ENG_BLOB" unwrap-eng)"
expect 200
check "$(json key)" "$DEK" "unwrap of the perimeter's blob"
# resource_name: the blob's must be the authz token's
deny resource-name-mismatch /cse/unwrap \
    "$(unwrap_body "$AN" "$(authz cse reader resource_name=//googleapis.com/drive/files/doc2)" "$BLOB" resource-name-mismatch)" \
    "$ALICE" resource_name=//googleapis.com/drive/files/doc2
# A blob of another prefix's KEK does not open here.
seal "wrap under /guest" /guest/wrap "$AN" "$(authz guest writer)" "$DEK" guest-blob
GUEST_BLOB=$SEALED
WHAT="another KEK's blob"
post /cse/unwrap "$(unwrap_body "$AN" "$AZR" "$GUEST_BLOB" other-kek)"
expect 400

# 9: privileged ops, admins only (case ignored)
priv_wrap_body() { # AUTHN KEY RESOURCE PERIMETER REASON
    printf '{"authentication":"%s","key":"%s","resource_name":"%s","perimeter_id":"%s","reason":"%s"}' "$@"
}
priv_unwrap_body() { # AUTHN WRAPPED RESOURCE REASON
    printf '{"authentication":"%s","wrapped_key":"%s","resource_name":"%s","reason":"%s"}' "$@"
}
AN_ADMIN=$(authn email=$ADMIN)
RES=//googleapis.com/drive/files/archive1
WHAT="privilegedwrap by an admin"
post /cse/privilegedwrap "$(priv_wrap_body "$AN_ADMIN" "$DEK" "$RES" "" privileged)"
expect 200
PBLOB=$(json wrapped_key)
[ -n "$PBLOB" ] || hf_fail "privilegedwrap answered no wrapped_key"
WHAT="privilegedunwrap by an admin"
post /cse/privilegedunwrap "$(priv_unwrap_body "$AN_ADMIN" "$PBLOB" "$RES" privileged)"
expect 200
check "$(json key)" "$DEK" "privilegedunwrap gives the DEK back"
WHAT="privilegedunwrap of a wrap's blob"
post /cse/privilegedunwrap "$(priv_unwrap_body "$AN_ADMIN" "$BLOB" //googleapis.com/drive/files/doc1 privileged-doc1)"
expect 200
check "$(json key)" "$DEK" "privilegedunwrap of the wrap's blob"
WHAT="unwrap of the privilegedwrap's blob"
post /cse/unwrap "$(unwrap_body "$AN" "$(authz cse reader resource_name=$RES)" "$PBLOB" unwrap-privileged)"
expect 200
deny privilegedunwrap-non-admin /cse/privilegedunwrap \
    "$(priv_unwrap_body "$AN" "$PBLOB" "$RES" privilegedunwrap-non-admin)" "$ALICE" resource_name=$RES
deny privilegedwrap-non-admin /cse/privilegedwrap \
    "$(priv_wrap_body "$AN" "$DEK" "$RES" "" privilegedwrap-non-admin)" "$ALICE" resource_name=$RES
deny privilegedunwrap-resource-mismatch /cse/privilegedunwrap \
    "$(priv_unwrap_body "$AN_ADMIN" "$PBLOB" //googleapis.com/drive/files/other privilegedunwrap-resource-mismatch)" \
    "$ADMIN" resource_name=//googleapis.com/drive/files/other

# Nothing the refusals asked for changed a key or a link.
"$HF_CLI" key list >"$HF_TMP/keys.before" 2>&1

# ---- check 1, the body: 400, before authentication ----
big() { python3 -c 'import base64,sys; print(base64.b64encode(b"x" * int(sys.argv[1])).decode())' "$1"; }
bad_body() { # TAG PATH BODY
    refuse 400 "$1" "$2" "$3"
    audit_none "$1"
}
WHAT="a 128-byte key"
post /cse/wrap "$(wrap_body "$AN" "$AZW" "$(big 128)" key-128)"
expect 200
bad_body key-129 /cse/wrap "$(wrap_body "$AN" "$AZW" "$(big 129)" key-129)"
bad_body reason-1025 /cse/wrap "$(wrap_body "$AN" "$AZW" "$DEK" "$(python3 -c 'print("r" * 1025)')")"
bad_body wrapped-key-oversized /cse/unwrap "$(unwrap_body "$AN" "$AZR" "$(big 1100)" wrapped-key-oversized)"
bad_body resource-name-129 /cse/privilegedwrap \
    "$(priv_wrap_body "$AN_ADMIN" "$DEK" "$(python3 -c 'print("n" * 129)')" "" resource-name-129)"
bad_body perimeter-id-129 /cse/privilegedwrap \
    "$(priv_wrap_body "$AN_ADMIN" "$DEK" "$RES" "$(python3 -c 'print("p" * 129)')" perimeter-id-129)"
bad_body key-bad-base64 /cse/wrap "$(wrap_body "$AN" "$AZW" 'SGVsbG8*' key-bad-base64)"
# Fields are padded standard base64 (spec, "Operations"): the URL-safe alphabet is refused.
bad_body key-url-safe-base64 /cse/wrap "$(wrap_body "$AN" "$AZW" "$(python3 -c 'import base64; print(base64.urlsafe_b64encode(b"\xfb\xff" * 16).decode())')" key-url-safe-base64)"
bad_body wrapped-key-bad-base64 /cse/unwrap "$(unwrap_body "$AN" "$AZR" '%%%%' wrapped-key-bad-base64)"
bad_body key-missing /cse/wrap "{\"authentication\":\"$AN\",\"authorization\":\"$AZW\",\"reason\":\"key-missing\"}"
bad_body key-not-a-string /cse/wrap "{\"authentication\":\"$AN\",\"authorization\":\"$AZW\",\"key\":42,\"reason\":\"key-not-a-string\"}"
bad_body duplicate-member /cse/wrap "{\"authentication\":\"$AN\",\"authorization\":\"$AZW\",\"key\":\"$DEK\",\"key\":\"$DEK\",\"reason\":\"duplicate-member\"}"
bad_body not-json /cse/wrap '{"authentication":'
TAMPERED=$(python3 -c 'import base64,sys; b=bytearray(base64.b64decode(sys.argv[1])); b[-1]^=1; print(base64.b64encode(bytes(b)).decode())' "$BLOB")
WHAT="a tampered blob"
post /cse/unwrap "$(unwrap_body "$AN" "$AZR" "$TAMPERED" tampered)"
expect 400
# 413 from Content-Length, before the body is read (64 KiB: spec, "Sizes").
python3 -c 'print("{\"reason\":\"%s\"}" % ("y" * 65536))' >"$HF_TMP/big-body.json"
WHAT="a body over 64 KiB"
# curl holds the body until the answer (a loaded machine would pass its 1 s default, send, and
# meet the closed connection).
post /cse/wrap "@$HF_TMP/big-body.json" -H 'Expect: 100-continue' --expect100-timeout 30
expect 413

# ---- 10: a blocked link: 403 within a second; unblocked: works again ----
AZB_W=$(authz blk writer)
AZB_R=$(authz blk reader)
seal "wrap under /blk" /blk/wrap "$AN" "$AZB_W" "$DEK" blk-before
BLK_BLOB=$SEALED
hf link block gws-cse kek-blk
sleep "$CHANGE_S"
deny blocked-wrap /blk/wrap "$(wrap_body "$AN" "$AZB_W" "$DEK" blocked-wrap)" "$ALICE"
deny blocked-unwrap /blk/unwrap "$(unwrap_body "$AN" "$AZB_R" "$BLK_BLOB" blocked-unwrap)" "$ALICE"
hf link unblock gws-cse kek-blk
sleep "$CHANGE_S"
WHAT="unwrap after unblock"
post /blk/unwrap "$(unwrap_body "$AN" "$AZB_R" "$BLK_BLOB" blk-after)"
expect 200
check "$(json key)" "$DEK" "unwrap after unblock"

# ---- digest: the spec's resource key hash vectors, through wrap ----
digest_vector() { # DEK-HEX RESOURCE PERIMETER HASH
    _dek=$(python3 -c 'import base64,sys; print(base64.b64encode(bytes.fromhex(sys.argv[1])).decode())' "$1")
    seal "wrap for the digest of $2" /cse/wrap "$AN" \
        "$(authz cse writer resource_name=$2 perimeter_id=$3)" "$_dek" digest-wrap
    _blob=$SEALED
    WHAT="digest of $2"
    post /cse/digest "{\"authorization\":\"$(authz cse verifier resource_name=$2 perimeter_id=$3)\",\"wrapped_key\":\"$_blob\",\"reason\":\"digest\"}"
    expect 200
    check "$(json resource_key_hash)" "$4" "resource_key_hash of $2"
}
digest_vector f00d my_resource my_perimeter EfRLb/AKdtsPSfX+vZ/Pi8h6bmKhBTu4egOABRnEdCg=
digest_vector 6a68079290123ed8f23c845cc8bda91cd961c0246b79446662919e336920cbef \
    //googleapis.com/testcase/hJB0PzRI7nl79LC18qaV8WMDCBALBSs9BREcq79MfVw "" \
    TZqv6wbNDoEtDzwQ8YVzpa7kyGMAoQT62bJY8Lcb2BM=
digest_vector 05b62b91cb66f19e27789fb69eb680fac113a70a120178d6cfa6b1b4cb11bb95 \
    //googleapis.com/testcase/od8yfZiS5ZF2RN27X4ClalsV6LobL2FwKRk4qOJxWdE perimeter1 \
    G2IxoXG8EO+Z3TsI8HQmIIEaWRkVcChNMrZ0xTHMLaU=
deny digest-resource-mismatch /cse/digest \
    "{\"authorization\":\"$(authz cse verifier resource_name=//googleapis.com/drive/files/doc2)\",\"wrapped_key\":\"$BLOB\",\"reason\":\"digest-resource-mismatch\"}" \
    "$ALICE"
deny digest-role-reader /cse/digest \
    "{\"authorization\":\"$AZR\",\"wrapped_key\":\"$BLOB\",\"reason\":\"digest-role-reader\"}" "$ALICE"

# ---- routes, methods, stages: decided before authentication ----
WHAT="an unknown op"
post /cse/frobnicate '{}'
expect 404
WHAT="an unknown op under a longer path"
post /cse/wrap/more '{}'
expect 404
WHAT="GET wrap"
get /cse/wrap
expect 405
WHAT="POST status"
post /cse/status '{}'
expect 405
for op in privatekeydecrypt privilegedprivatekeydecrypt privatekeysign wrapprivatekey delegate; do
    WHAT="$op, not enabled"
    post "/cse/$op" '{}'
    expect 501
done
WHAT="outside every prefix"
post /nope/wrap '{}'
check "$CODE" 404 "outside every prefix"

# ---- /status and /certs ----
WHAT="status"
get /cse/status
expect 200
python3 - "$OUT" <<'PY' || hf_fail "/status: $(cat "$OUT")"
import json, sys
s = json.load(open(sys.argv[1]))
assert s.get("server_type") == "KACLS", s
assert isinstance(s.get("vendor_id"), str) and s["vendor_id"], s
assert isinstance(s.get("version"), str) and s["version"], s
assert s.get("name") == "Holdfast test KACLS", s
ops = s.get("operations_supported")
assert isinstance(ops, list), s
for op in ("wrap", "unwrap", "privilegedwrap", "privilegedunwrap", "digest", "status"):
    assert op in ops, (op, s)
for op in ("privatekeydecrypt", "privilegedprivatekeydecrypt", "privatekeysign", "wrapprivatekey"):
    assert op not in ops, (op, s)
PY
WHAT=certs-without-signing-key
get /cse/certs
expect 200 &&
    check "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["keys"])' "$OUT")" "[]" "/certs without a signing key"

# ---- CORS ----
sleep 0.5 # the summaries of what came before are written (preauth_interval_ms = 200)
audit0=$(cse_audit total)
preflight() { # PATH [ORIGIN]
    _path=$1
    rm -f "$OUT" "$HDR"
    CODE=$(curl -sS -o "$OUT" -D "$HDR" -w '%{http_code}' -X OPTIONS -H "Origin: ${2:-$ORIGIN}" \
        -H 'Access-Control-Request-Method: POST' -H 'Access-Control-Request-Headers: content-type' \
        "$BASE$_path" 2>"$HF_TMP/curl.err") || CODE="curl-exit-$?"
}
for p in /cse/wrap /cse/unwrap /cse/anything/at/all /guest/digest; do
    WHAT="preflight $p"
    preflight "$p"
    expect 204
    check "$(header Access-Control-Allow-Origin)" "$ORIGIN" "$p: Access-Control-Allow-Origin"
    check "$(header Vary)" Origin "$p: Vary"
    check "$(header Access-Control-Allow-Methods)" "GET, POST, OPTIONS" "$p: Access-Control-Allow-Methods"
    check "$(header Access-Control-Allow-Headers | tr 'A-Z' 'a-z')" content-type "$p: Access-Control-Allow-Headers"
    check "$(header Access-Control-Max-Age)" 3600 "$p: Access-Control-Max-Age"
    [ ! -s "$OUT" ] || hf_fail "$p: the preflight has a body: $(cat "$OUT")"
done
WHAT="status with an Origin"
get /cse/status -H "Origin: $ORIGIN"
expect 200
check "$(header Access-Control-Allow-Origin)" "$ORIGIN" "status: Access-Control-Allow-Origin"
sleep 0.5
check "$(cse_audit total)" "$audit0" "preflights and /status make no audit record, nor a summary share"
WHAT="an error with an Origin"
post /cse/wrap "$(wrap_body "$(authn --alg none)" "$AZW" "$DEK" cors-error)" -H "Origin: $ORIGIN"
expect 401
check "$(header Access-Control-Allow-Origin)" "$ORIGIN" "401: Access-Control-Allow-Origin"
check "$(header Vary)" Origin "401: Vary"
WHAT="a success with an Origin"
post /cse/wrap "$(wrap_body "$AN" "$AZW" "$DEK" cors-ok)" -H "Origin: $ORIGIN"
expect 200
check "$(header Access-Control-Allow-Origin)" "$ORIGIN" "200: Access-Control-Allow-Origin"
WHAT="an unlisted origin"
post /cse/wrap "$(wrap_body "$AN" "$AZW" "$DEK" cors-other)" -H "Origin: https://evil.example.com"
expect 200
check "$(header Access-Control-Allow-Origin)" "" "an unlisted origin gets no CORS headers"

# ---- the audit records of the refusals, and nothing changed ----
"$HF_CLI" key list >"$HF_TMP/keys.after" 2>&1
cmp -s "$HF_TMP/keys.before" "$HF_TMP/keys.after" ||
    hf_fail "the refusals changed a key: $(diff "$HF_TMP/keys.before" "$HF_TMP/keys.after")"
cse_audit check >"$HF_TMP/audit-bad" || hf_fail "the audit check failed"
# One line per refusal whose record is not what the spec wants: "TAG<tab>what".
while IFS="$(printf '\t')" read -r tag what; do
    fail_case "$tag" "audit: $what"
done <"$HF_TMP/audit-bad"
hf_expect_exit 0 "$HF_CLI" audit verify

# ---- a store outage is 503 ----
DB=$(ls "$HOLDFAST_STATE_DIR"/*.db 2>/dev/null | head -n 1)
[ -n "$DB" ] || hf_fail "no SQLite store under $HOLDFAST_STATE_DIR"
# Overwritten in place with its WAL and shared-memory index, as ekm.sh does: the next read of
# the link finds no database.
for f in "$DB" "$DB-wal" "$DB-shm"; do
    [ ! -f "$f" ] || dd if=/dev/urandom of="$f" bs=4096 count=8 conv=notrunc 2>/dev/null
done
sleep "$CHANGE_S"
WHAT="wrap in a store outage"
post /cse/wrap "$(wrap_body "$AN" "$AZW" "$DEK" outage)"
expect 503
WHAT="unwrap in a store outage"
post /cse/unwrap "$(unwrap_body "$AN" "$AZR" "$BLOB" outage)"
expect 503
for k in $CSE_KNOWN_FAILURES; do
    case " $KNOWN_SEEN " in
    *" $k "*) ;;
    *) echo "NOW PASSES: $k (a known failure: drop it from CSE_KNOWN_FAILURES)" ;;
    esac
done
echo "cse.sh: every case passed${KNOWN_SEEN:+ but the known failures:$KNOWN_SEEN}"
