#!/bin/sh
# The tokens a KACLS issues itself, end to end (specs/gws-cse.md, "rewrap", "delegate",
# "Tokens"): two holdfastd over TLS on loopback, each over a key store of its own, A the new
# KACLS (with an RSA-3072 signing key) and B the original one; two misbehaving peers
# (cse-peer.py: one answering 500, one that hangs); key sets and tokens from jwt-token.py.
#
# Shows: a key wrapped at B is rewrapped at A from B (A's migration token, verified by B
# against A's /certs, fetched over TLS through peer_ca and peer_allow) and unwraps at A, with
# the resource key hash of the spec's formula; the SSRF guard refuses, with 403 and nothing
# sent, a loopback peer and a private (10.x) peer that peer_allow does not list; a target off
# the peer list or not https is 403; a peer answering 500 is 502; a peer that hangs is 504
# within the 5 s timeout, and while four rewraps wait on it a fifth is 429; a blob rewrapped
# for another resource is refused by B; delegate, then unwrap with the delegated token (check
# 7 both ways: matching, and another resource_name or delegated_to); a delegated token cannot
# delegate again; /certs lists the current and the previous public key after `holdfast key
# rotate`, a token minted before the rotation still verifies and one minted after carries the
# new kid; a signing_key that is no RSA key, or no link, stops holdfastd at start. Prints the
# median and max latency of delegate and rewrap.
. "${top_srcdir:-.}/tests/integration/lib.sh"

HOLDFASTD="$top_builddir/gateway/holdfastd"
CSE_PLUGIN="$top_builddir/gateway/plugins/gws-cse/.libs/gws-cse.so"
[ -x "$HOLDFASTD" ] || hf_skip "$HOLDFASTD not built"
[ -f "$CSE_PLUGIN" ] || hf_skip "$CSE_PLUGIN not built"
for p in curl python3 openssl; do
    command -v "$p" >/dev/null || hf_skip "$p not installed"
done
python3 -c 'import cryptography' 2>/dev/null || hf_skip "python3-cryptography not installed"

TOK="python3 $top_srcdir/tests/integration/jwt-token.py"
PEER="python3 $top_srcdir/tests/integration/cse-peer.py"
ALICE=alice@example.com
BOB=bob@example.com
DRIVE=gsuitecse-tokenissuer-drive@system.gserviceaccount.com
RES=//googleapis.com/drive/files/doc1


# ---- two key stores: A (the current one, HOLDFAST_CONF) and B ----
hf_store_setup
A_CONF=$HOLDFAST_CONF
A_STATE=$HOLDFAST_STATE_DIR
B_STATE="$HF_TMP/state-b"
B_CONF="$HF_TMP/holdfast-b.conf"
printf '[holdfast]\nstate_dir = %s\n' "$B_STATE" >"$B_CONF"
store_a() { HOLDFAST_CONF=$A_CONF HOLDFAST_STATE_DIR=$A_STATE "$HF_CLI" "$@"; }
store_b() { HOLDFAST_CONF=$B_CONF HOLDFAST_STATE_DIR=$B_STATE "$HF_CLI" "$@"; }
store_b init >"$HF_TMP/init-b.out" 2>&1 || hf_fail "holdfast init (B): $(cat "$HF_TMP/init-b.out")"
hfa() { store_a "$@" >>"$HF_TMP/cli.log" 2>&1 || hf_fail "holdfast (A) $*: $(tail -n 3 "$HF_TMP/cli.log")"; }
hfb() { store_b "$@" >>"$HF_TMP/cli.log" 2>&1 || hf_fail "holdfast (B) $*: $(tail -n 3 "$HF_TMP/cli.log")"; }
hfa key create kek-a
hfa link create gws-cse kek-a kek-a
hfa key create sig-a --alg RSA-3072 --usage sign,verify
hfa link create gws-cse sig-a sig-a
hfb key create kek-b
hfb link create gws-cse kek-b kek-b

# ---- the PKI, the IdP's and Google's key sets, the misbehaving peers ----
HF_PKI="$HF_TMP/pki"
hf_pki_ca ca
hf_pki_cert server localhost ca "subjectAltName=IP:127.0.0.1,DNS:localhost"
PKI="$HF_PKI"
CURL_CA_BUNDLE=$PKI/ca.pem
export CURL_CA_BUNDLE
JW="$HF_TMP/jwks"
mkdir -p "$JW"
{ $TOK keys "$JW" idp1 gz1 && $TOK publish "$JW" idp idp1 && $TOK publish "$JW" authz gz1; } ||
    hf_fail "cannot make the signing keys"
P_500=$(hf_free_port)
P_HANG=$(hf_free_port)
$PEER "$P_500" "$PKI/server.pem" "$PKI/server.key" "$HF_TMP/peer-500.log" status 500 \
    2>"$HF_TMP/peer-500.err" &
hf_on_exit "kill $!"
$PEER "$P_HANG" "$PKI/server.pem" "$PKI/server.key" "$HF_TMP/peer-hang.log" hang 20 \
    2>"$HF_TMP/peer-hang.err" &
hf_on_exit "kill $!"

# ---- holdfastd A and B, one TLS listener each ----
PA=$(hf_free_port)
PB=$(hf_free_port)
A_URL="https://127.0.0.1:$PA/cse"
B_URL="https://127.0.0.1:$PB/cse"
BAD500="https://127.0.0.1:$P_500/cse"
HANG="https://127.0.0.1:$P_HANG/cse"
PRIVATE="https://10.255.255.1:$P_500/cse"
prefix() { # NAME PREFIX KACLS_URL KEK EXTRA-LINES
    cat <<EOP
[gws-cse:$1]
prefix = $2
kacls_url = $3
kek = $4
authn.idp.issuer = https://idp.example.com
authn.idp.jwks = $JW/idp.jwks
authn.idp.audiences = cse-client
authz_jwks = $JW/authz.jwks
$5

EOP
}
gateway_conf() { # NAME PORT STATE PREFIX-SECTIONS
    cat <<EOC
[gateway]
module = $HF_MODULE
pin_file = $3/token-gateway.pin
plugins = gws-cse
log = $HF_TMP/holdfastd-$1.log
; more workers than rewrap slots (4), so the slots, not the threads, are what runs out
threads = 8

[plugin:gws-cse]
path = $CSE_PLUGIN

[listener:cse]
listen = 127.0.0.1:$2
cert = $PKI/server.pem
key = $PKI/server.key
client_certificate = off
plugins = gws-cse

$4
EOC
}
# A: /cse may rewrap from B and the two bad peers over loopback; /strict lists B and a private
# address as peers but allows no internal address, so the guard must refuse both.
gateway_conf a "$PA" "$A_STATE" "$(prefix a /cse "$A_URL" kek-a "signing_key = sig-a
peers = $B_URL, $BAD500, $HANG
peer_ca = $PKI/ca.pem
peer_allow = 127.0.0.0/8")
$(prefix strict /strict "https://127.0.0.1:$PA/strict" kek-a "signing_key = sig-a
peers = $B_URL, $PRIVATE
peer_ca = $PKI/ca.pem")" >"$HF_TMP/holdfastd-a.conf"
# B: accepts A's migration tokens, verified against A's /certs.
gateway_conf b "$PB" "$B_STATE" "$(prefix b /cse "$B_URL" kek-b "peers = $A_URL
peer_ca = $PKI/ca.pem
peer_allow = 127.0.0.0/8")" >"$HF_TMP/holdfastd-b.conf"
# A signing_key that is no RSA key, or no link at all, stops holdfastd at start, named.
for bad in "kek-a:not an RSA key" "nosuch:no such gws-cse link"; do
    gateway_conf bad "$(hf_free_port)" "$A_STATE" "$(prefix bad /cse "$A_URL" kek-a "signing_key = ${bad%%:*}")" \
        >"$HF_TMP/holdfastd-bad.conf"
    if HOLDFAST_CONF=$A_CONF HOLDFAST_STATE_DIR=$A_STATE timeout 60 "$HOLDFASTD" -f \
        -c "$HF_TMP/holdfastd-bad.conf" >"$HF_TMP/bad.out" 2>&1; then
        hf_fail "holdfastd started with signing_key = ${bad%%:*}"
    fi
    grep -q "signing_key ${bad%%:*}: ${bad#*:}" "$HF_TMP/bad.out" "$HF_TMP/holdfastd-bad.log" 2>/dev/null ||
        hf_fail "signing_key = ${bad%%:*}: $(cat "$HF_TMP/bad.out")"
done

# A first: B fetches A's /certs when it starts.
hf_gateway_start "https://127.0.0.1:$PA" env HOLDFAST_CONF="$A_CONF" \
    HOLDFAST_STATE_DIR="$A_STATE" "$HOLDFASTD" -f -c "$HF_TMP/holdfastd-a.conf"
A_PID=$HF_GW_PID
mv "$HF_TMP/holdfastd.out" "$HF_TMP/holdfastd-a.out"
HF_GW_PID=
hf_gateway_start "https://127.0.0.1:$PB" env HOLDFAST_CONF="$B_CONF" \
    HOLDFAST_STATE_DIR="$B_STATE" "$HOLDFASTD" -f -c "$HF_TMP/holdfastd-b.conf"
# Stopped (SIGINT: at once, no drain) and waited for, so its store is closed before the temp dir goes.
a_stop() { [ -z "$A_PID" ] || { kill -INT "$A_PID" 2>/dev/null; wait "$A_PID" 2>/dev/null; A_PID=; }; }
hf_on_exit a_stop

# ---- tokens and calls ----
AUTHN_CLAIMS="{\"iss\":\"https://idp.example.com\",\"aud\":\"cse-client\",\"email\":\"$ALICE\",\"iat\":\"+0\",\"exp\":\"+600\"}"
authn() { $TOK mint "$JW" --key idp1 --base "$AUTHN_CLAIMS" "$@"; }
authz() { # KACLS_URL ROLE [mint args]
    _u=$1 _r=$2
    shift 2
    $TOK mint "$JW" --key gz1 --base "$(printf '{"iss":"%s","aud":"cse-authorization","email":"%s","email_type":"google","role":"%s","resource_name":"%s","perimeter_id":"","kacls_url":"%s","iat":"+0","exp":"+600"}' \
        "$DRIVE" "$ALICE" "$_r" "$RES" "$_u")" "$@"
}
OUT="$HF_TMP/out.json"
post() { # URL BODY
    rm -f "$OUT"
    CODE=$(curl -sS -o "$OUT" -w '%{http_code}' -H 'Content-Type: application/json' \
        --data-binary "$2" "$1" 2>"$HF_TMP/curl.err") || CODE="curl-exit-$?"
}
json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    d = d[int(k)] if isinstance(d, list) else d.get(k, "") if isinstance(d, dict) else ""
print(d)' "$OUT" "$1" 2>/dev/null; }
expect() { # STATUS WHAT
    [ "$CODE" = "$1" ] ||
        hf_fail "$2: HTTP $CODE, want $1: $(cat "$OUT" 2>/dev/null) $(cat "$HF_TMP/curl.err")"
}
# How many privilegedunwrap calls B's log shows (its lines are written every 100 ms).
b_unwraps() { sleep 0.3; grep -c privilegedunwrap "$HF_TMP/holdfastd-b.log" 2>/dev/null || true; }
rewrap_body() { # AUTHZ URL WRAPPED
    printf '{"authorization":"%s","original_kacls_url":"%s","wrapped_key":"%s","reason":"migration test"}' "$@"
}
unwrap_body() { # AUTHN AUTHZ WRAPPED
    printf '{"authentication":"%s","authorization":"%s","wrapped_key":"%s","reason":"test"}' "$@"
}
DEK=$(python3 -c 'import base64,os; print(base64.b64encode(os.urandom(32)).decode())')
AN=$(authn)

# Wrapped at B.
post "$B_URL/wrap" "{\"authentication\":\"$AN\",\"authorization\":\"$(authz "$B_URL" writer)\",\"key\":\"$DEK\",\"reason\":\"test\"}"
expect 200 "wrap at B"
WB=$(json wrapped_key)

# Rewrapped at A from B, then unwrapped at A; the hash is the spec's formula over the key.
MIG=$(authz "$A_URL" migrator)
post "$A_URL/rewrap" "$(rewrap_body "$MIG" "$B_URL" "$WB")"
expect 200 "rewrap at A from B"
WA=$(json wrapped_key)
RKH=$(json resource_key_hash)
[ -n "$WA" ] && [ "$WA" != "$WB" ] || hf_fail "rewrap answered no new wrapped_key"
want=$(python3 -c 'import base64,hashlib,hmac,sys
k = base64.b64decode(sys.argv[1])
print(base64.b64encode(hmac.new(k, ("ResourceKeyDigest:%s:" % sys.argv[2]).encode(), hashlib.sha256).digest()).decode())' "$DEK" "$RES")
check "$RKH" "$want" "rewrap's resource_key_hash"
post "$A_URL/unwrap" "$(unwrap_body "$AN" "$(authz "$A_URL" reader)" "$WA")"
expect 200 "unwrap at A of the rewrapped key"
check "$(json key)" "$DEK" "the key rewrapped from B"
# B's blob is not A's: A cannot open it itself.
post "$A_URL/unwrap" "$(unwrap_body "$AN" "$(authz "$A_URL" reader)" "$WB")"
[ "$CODE" != 200 ] || hf_fail "A opened B's blob"

# The SSRF guard: B on loopback and a private address, listed as peers but not allowed by
# peer_allow, are refused (403) before any byte is sent.
MIG_S=$(authz "https://127.0.0.1:$PA/strict" migrator)
before=$(b_unwraps)
post "https://127.0.0.1:$PA/strict/rewrap" "$(rewrap_body "$MIG_S" "$B_URL" "$WB")"
expect 403 "rewrap from a loopback peer peer_allow does not list"
check "$(b_unwraps)" "$before" "privilegedunwrap calls B saw from a refused rewrap"
t0=$(hf_now_ms)
post "https://127.0.0.1:$PA/strict/rewrap" "$(rewrap_body "$MIG_S" "$PRIVATE" "$WB")"
expect 403 "rewrap from a private (10.x) peer"
[ $(($(hf_now_ms) - t0)) -lt 1500 ] || hf_fail "the private peer was tried before it was refused"
# Off the peer list, or not https: refused before anything is minted or sent.
post "$A_URL/rewrap" "$(rewrap_body "$MIG" "https://127.0.0.1:$PB/other" "$WB")"
expect 403 "rewrap from a KACLS not on the peer list"
post "$A_URL/rewrap" "$(rewrap_body "$MIG" "http://127.0.0.1:$PB/cse" "$WB")"
expect 403 "rewrap from an http URL"
check "$(b_unwraps)" "$before" "privilegedunwrap calls B saw from refused rewraps"
# The role is migrator's.
post "$A_URL/rewrap" "$(rewrap_body "$(authz "$A_URL" writer)" "$B_URL" "$WB")"
expect 403 "rewrap with role writer"

# A failing peer is 502; one that hangs 504 within the 5 s timeout.
post "$A_URL/rewrap" "$(rewrap_body "$MIG" "$BAD500" "$WB")"
expect 502 "rewrap from a peer answering 500"
grep -q "POST /cse/privilegedunwrap " "$HF_TMP/peer-500.log" || hf_fail "the 500 peer was not called"
# Four of them hold every rewrap slot of the prefix (each a worker thread): a fifth is 429 at
# once rather than a fifth thread waiting on the peer. One at a time, each once the last
# reached the peer: libmicrohttpd's threads each accept for themselves, and a thread that
# took two connections at once would serve the second only after the first's timeout.
t0=$(hf_now_ms)
pids=
for i in 1 2 3 4; do
    curl -sS -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
        --data-binary "$(rewrap_body "$MIG" "$HANG" "$WB")" "$A_URL/rewrap" >"$HF_TMP/hang.$i" 2>&1 &
    pids="$pids $!"
    n=0
    until [ "$(grep -c 'POST /cse/privilegedunwrap ' "$HF_TMP/peer-hang.log" 2>/dev/null)" = "$i" ]; do
        n=$((n + 1))
        [ "$n" -lt 30 ] || hf_fail "rewrap $i did not reach the hanging peer"
        sleep 0.1
    done
done
post "$A_URL/rewrap" "$(rewrap_body "$MIG" "$HANG" "$WB")"
expect 429 "a fifth rewrap while four wait on a peer"
wait $pids
t=$(($(hf_now_ms) - t0))
for i in 1 2 3 4; do
    check "$(cat "$HF_TMP/hang.$i")" 504 "rewrap from a peer that hangs"
done
[ "$t" -ge 4500 ] && [ "$t" -lt 10000 ] || hf_fail "the hanging peer answered 504 after $t ms, want ~5000"
echo "rewrap: four calls to a hanging peer gave 504 after $t ms"
check "$(grep -c 'POST /cse/privilegedunwrap ' "$HF_TMP/peer-hang.log")" 4 "calls the hanging peer got"

# B holds the migration token to its resource: authz for another resource_name at A mints a
# token for that one, and B refuses to open a blob sealed for $RES with it.
post "$A_URL/rewrap" "$(rewrap_body "$(authz "$A_URL" migrator resource_name=//other/doc)" "$B_URL" "$WB")"
expect 502 "rewrap of a blob under another resource_name"

# ---- delegate, then unwrap with the delegated token ----
DZ=$(authz "$A_URL" writer delegated_to="$BOB")
post "$A_URL/delegate" "{\"authentication\":\"$AN\",\"authorization\":\"$DZ\",\"reason\":\"delegate\"}"
expect 200 "delegate"
DT=$(json delegated_authentication)
[ -n "$DT" ] || hf_fail "delegate answered no delegated_authentication"
claims=$($TOK decode "$DT")
dget() { printf '%s' "$claims" | python3 -c 'import json,sys; d=json.load(sys.stdin)
print(d[sys.argv[1]].get(sys.argv[2], ""))' "$1" "$2"; }
check "$(dget claims iss)" "$A_URL" "the delegated token's iss"
check "$(dget claims aud)" "$A_URL" "the delegated token's aud"
check "$(dget claims email)" "$ALICE" "the delegated token's email"
check "$(dget claims delegated_to)" "$BOB" "the delegated token's delegated_to"
check "$(dget claims resource_name)" "$RES" "the delegated token's resource_name"
check "$(dget header alg)" RS256 "the delegated token's alg"
KID1=$(dget header kid)
life=$(printf '%s' "$claims" | python3 -c 'import json,sys; c=json.load(sys.stdin)["claims"]; print(c["exp"]-c["iat"])')
check "$life" 900 "the delegated token's lifetime"
DZU=$(authz "$A_URL" reader delegated_to="$BOB")
post "$A_URL/unwrap" "$(unwrap_body "$DT" "$DZU" "$WA")"
expect 200 "unwrap with the delegated token"
check "$(json key)" "$DEK" "the key unwrapped by the delegate"
# Check 7: the authz token must name the token's resource and delegate. The blob here is
# sealed for the other resource, so only check 7 stands between the delegate and its key.
post "$A_URL/wrap" "{\"authentication\":\"$AN\",\"authorization\":\"$(authz "$A_URL" writer resource_name=//other/doc)\",\"key\":\"$DEK\",\"reason\":\"test\"}"
expect 200 "wrap at A for another resource"
WO=$(json wrapped_key)
post "$A_URL/unwrap" "$(unwrap_body "$DT" "$(authz "$A_URL" reader delegated_to="$BOB" resource_name=//other/doc)" "$WO")"
expect 403 "unwrap with a delegated token for another resource_name"
post "$A_URL/unwrap" "$(unwrap_body "$AN" "$(authz "$A_URL" reader resource_name=//other/doc)" "$WO")"
expect 200 "unwrap of the other resource's blob by its owner"
post "$A_URL/unwrap" "$(unwrap_body "$DT" "$(authz "$A_URL" reader delegated_to=carol@example.com)" "$WA")"
expect 403 "unwrap with a delegated token for another delegate"
# A delegated token does not delegate again.
post "$A_URL/delegate" "{\"authentication\":\"$DT\",\"authorization\":\"$DZ\",\"reason\":\"again\"}"
expect 403 "delegate with a delegated token"
# The same token with one character of its signature changed is refused.
BAD=$(printf '%s' "$DT" | python3 -c 'import sys; t=sys.stdin.read(); i=len(t)-5; print(t[:i]+("A" if t[i]!="A" else "B")+t[i+1:])')
post "$A_URL/unwrap" "$(unwrap_body "$BAD" "$DZU" "$WA")"
expect 401 "unwrap with a tampered delegated token"

# Figures, not assertions: a delegate is one RSA-3072 signature in the module, a rewrap that
# and a TLS round trip to B (a new connection each time) with B's unwrap.
ms() { python3 -c 'import sys; print(round(float(sys.argv[1]) * 1000, 1))' "$1"; }
DBODY="{\"authentication\":\"$AN\",\"authorization\":\"$DZ\",\"reason\":\"timing\"}"
RBODY=$(rewrap_body "$MIG" "$B_URL" "$WB")
for what in delegate rewrap; do
    [ "$what" = delegate ] && body=$DBODY || body=$RBODY
    times=$(for i in 1 2 3 4 5 6 7 8 9 10; do
        curl -sS -o /dev/null -w '%{time_total}\n' -H 'Content-Type: application/json' \
            --data-binary "$body" "$A_URL/$what"
    done | sort -n)
    echo "$what: median $(ms "$(echo "$times" | sed -n 5p)") ms, max $(ms "$(echo "$times" | tail -n 1)") ms over 10 calls (curl, TLS handshake included)"
done

# ---- /certs across a rotation of the signing key ----
kids() { python3 -c 'import json,sys; print(" ".join(sorted(k["kid"] for k in json.load(open(sys.argv[1]))["keys"])))' "$1"; }
curl -sS -o "$HF_TMP/certs1.json" "$A_URL/certs" || hf_fail "GET /certs"
check "$(kids "$HF_TMP/certs1.json")" "$KID1" "/certs before the rotation"
$TOK verify "$HF_TMP/certs1.json" "$DT" >/dev/null || hf_fail "/certs does not verify the delegated token"
hfa key rotate sig-a
sleep 1.5 # the gateway's key cache is revalidated after a second
curl -sS -o "$HF_TMP/certs2.json" "$A_URL/certs" || hf_fail "GET /certs after the rotation"
set -- $(kids "$HF_TMP/certs2.json")
[ "$#" = 2 ] || hf_fail "/certs after the rotation: $(cat "$HF_TMP/certs2.json")"
case " $* " in *" $KID1 "*) ;; *) hf_fail "/certs after the rotation lost the previous key" ;; esac
post "$A_URL/unwrap" "$(unwrap_body "$DT" "$DZU" "$WA")"
expect 200 "unwrap with a token minted before the rotation"
post "$A_URL/delegate" "{\"authentication\":\"$AN\",\"authorization\":\"$DZ\",\"reason\":\"delegate\"}"
expect 200 "delegate after the rotation"
DT2=$(json delegated_authentication)
KID2=$($TOK decode "$DT2" | python3 -c 'import json,sys; print(json.load(sys.stdin)["header"]["kid"])')
[ "$KID2" != "$KID1" ] || hf_fail "a token minted after the rotation has the old kid"
$TOK verify "$HF_TMP/certs2.json" "$DT2" >/dev/null || hf_fail "/certs does not verify the new token"
post "$A_URL/unwrap" "$(unwrap_body "$DT2" "$DZU" "$WA")"
expect 200 "unwrap with a token minted after the rotation"
# B still takes A's migration tokens: its key set is refetched for the new kid.
post "$A_URL/rewrap" "$(rewrap_body "$MIG" "$B_URL" "$WB")"
[ "$CODE" = 200 ] || {
    sleep 1
    post "$A_URL/rewrap" "$(rewrap_body "$MIG" "$B_URL" "$WB")"
}
expect 200 "rewrap after the rotation (B refetches A's /certs)"

hf_gateway_stop || hf_fail "holdfastd B did not stop cleanly"
a_stop
exit 0
