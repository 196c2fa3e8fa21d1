#!/bin/sh
# gws-cse stage 2, the Gmail operations (specs/gws-cse.md "Stage 2"), end to end: holdfastd over
# TLS on loopback with a KACLS prefix that serves them (/mail, gmail = on) and one that does not
# (/off); the IdP's and Google's key sets served by jwt-token.py; a user's S/MIME keys (RSA-2048
# and P-256) made with openssl, whose public halves check every answer.
#
# Shows: wrapprivatekey by an admin (RSA and EC; a non-admin 403, an RSA-1024 or non-PKCS#8 key
# 400); privatekeydecrypt of a DEK openssl encrypted with each padding (PKCS#1 v1.5, OAEP with
# SHA-1, SHA-256 with a label, SHA-512), a wrong label 400, the wrong role 403; privatekeysign
# of a digest with SHA{1,256,512}withRSA and their /PSS forms (default and explicit salt),
# each signature verified by openssl pkeyutl -verify, a digest of the wrong length 400; an
# unknown algorithm 400 for either op, an EC key asked to sign 400; the perimeter the key was
# wrapped for under the perimeter rules (403 for a user outside it); privileged decrypt by an
# admin with the key's spki_hash (200), another key's (403), spki_hash_algorithm SHA-1 (400);
# an authorization token whose spki_hash names another key (403); a tampered wrapped key (400);
# /off answering 501 and leaving the four ops out of /status while /mail lists them; the audit
# records of the calls, no DEK or private key in any log, and `holdfast audit verify`.
. "${top_srcdir:-.}/tests/integration/lib.sh"

HOLDFASTD="$top_builddir/gateway/holdfastd"
CSE_PLUGIN="$top_builddir/gateway/plugins/gws-cse/.libs/gws-cse.so"
[ -x "$HOLDFASTD" ] || hf_skip "$HOLDFASTD not built"
[ -f "$CSE_PLUGIN" ] || hf_skip "$CSE_PLUGIN not built"
for p in curl python3 openssl base64; do
    command -v "$p" >/dev/null || hf_skip "$p not installed"
done
python3 -c 'import cryptography' 2>/dev/null || hf_skip "python3-cryptography not installed"
hf_store_setup

TOK="python3 $top_srcdir/tests/integration/jwt-token.py"
ALICE=alice@example.com
BOB=bob@example.com
ADMIN=admin@example.com
GMAIL=gsuitecse-tokenissuer-gmail@system.gserviceaccount.com

hf() { "$HF_CLI" "$@" >>"$HF_TMP/cli.log" 2>&1 || hf_fail "holdfast $*: $(tail -n 3 "$HF_TMP/cli.log")"; }
ossl() { openssl "$@" 2>>"$HF_TMP/openssl.err" || hf_fail "openssl $1: $(tail -n 3 "$HF_TMP/openssl.err")"; }
b64() { base64 -w0 "$@"; }

for k in mail off; do
    hf key create "gm-$k"
    hf link create gws-cse "kek-$k" "gm-$k"
done

# ---- the user's S/MIME keys, as PKCS#8 DER ----
K="$HF_TMP/keys"
mkdir -p "$K"
ossl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$K/rsa.pem"
ossl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$K/ec.pem"
ossl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:1024 -out "$K/rsa1024.pem"
for n in rsa ec rsa1024; do
    ossl pkcs8 -topk8 -nocrypt -in "$K/$n.pem" -outform DER -out "$K/$n.p8"
    ossl pkey -in "$K/$n.pem" -pubout -out "$K/$n.pub"
done
ossl rsa -in "$K/rsa.pem" -traditional -outform DER -out "$K/rsa.pkcs1"
spki_hash() { ossl pkey -pubin -in "$1" -outform DER | openssl dgst -sha256 -binary | b64; }
RSA_SPKI=$(spki_hash "$K/rsa.pub")
EC_SPKI=$(spki_hash "$K/ec.pub")

# ---- key sets over HTTPS ----
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
hf_jwks_serve "$JW" "$PKI/server.pem" "$PKI/server.key" /idp/certs=idp '/jwk/*=authz'
P_JWKS=$HF_JWKS_PORT

# ---- holdfastd ----
PORT=$(hf_free_port)
BASE="https://127.0.0.1:$PORT"
CONF="$HF_TMP/holdfastd.conf"
prefix() { # NAME GMAIL
    cat <<EOP
[gws-cse:$1]
prefix = /$1
kacls_url = $BASE/$1
kek = kek-$1
gmail = $2
authn.idp.issuer = https://idp.example.com
authn.idp.jwks = https://127.0.0.1:$P_JWKS/idp/certs
authn.idp.audiences = cse-client-1
authz_jwks = https://127.0.0.1:$P_JWKS/jwk/%s
jwks_ca = $PKI/ca.pem
jwks_allow = 127.0.0.0/8
admins = $ADMIN
perimeter.p1 = email=a*@example.com

EOP
}
cat >"$CONF" <<EOC
[gateway]
module = $HF_MODULE
pin_file = $HOLDFAST_STATE_DIR/token-gateway.pin
plugins = gws-cse
log = $HF_TMP/holdfastd.log

[plugin:gws-cse]
path = $CSE_PLUGIN

[listener:cse]
listen = 127.0.0.1:$PORT
cert = $PKI/server.pem
key = $PKI/server.key
client_certificate = off
plugins = gws-cse

$(prefix mail on)
$(prefix off off)
EOC
hf_gateway_start "$BASE" "$HOLDFASTD" -f -c "$CONF"

# ---- tokens ----
authn() { # EMAIL [mint args]
    _e=$1
    shift
    $TOK mint "$JW" --key idp1 --base "{\"iss\":\"https://idp.example.com\",\"aud\":\"cse-client-1\",\"email\":\"$_e\",\"iat\":\"+0\",\"exp\":\"+600\"}" "$@"
}
authz() { # EMAIL ROLE [mint args]
    _e=$1 _r=$2
    shift 2
    $TOK mint "$JW" --key gz1 --base "{\"iss\":\"$GMAIL\",\"aud\":\"cse-authorization\",\"email\":\"$_e\",\"email_type\":\"google\",\"role\":\"$_r\",\"resource_name\":\"//googleapis.com/gmail/messages/m1\",\"message_id\":\"m1\",\"perimeter_id\":\"\",\"kacls_url\":\"$BASE/mail\",\"iat\":\"+0\",\"exp\":\"+600\"}" "$@"
}
AN_ALICE=$(authn $ALICE)
AN_BOB=$(authn $BOB)
AN_ADMIN=$(authn $ADMIN)
AZ_DEC=$(authz $ALICE decrypter)
AZ_SIGN=$(authz $ALICE signer)
AZ_BOB=$(authz $BOB decrypter)

# ---- calls ----
OUT="$HF_TMP/out.json"
post() { # PATH BODY: CODE, the answer in $OUT
    _path=$1
    rm -f "$OUT"
    CODE=$(curl -sS -o "$OUT" -w '%{http_code} %{time_total}' -H 'Content-Type: application/json' \
        --data-binary "$2" "$BASE$_path" 2>"$HF_TMP/curl.err") || CODE="curl-exit-$?"
    printf '%s %s\n' "${_path##*/}" "${CODE#* }" >>"$HF_TMP/times"
    CODE=${CODE%% *}
}
json() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2], ""))' \
    "$OUT" "$1" 2>/dev/null; }
expect() { # STATUS: the last answer's (an error's body names its code)
    if [ "$CODE" != "$1" ]; then
        cat "$OUT" >&2 2>/dev/null
        cat "$HF_TMP/curl.err" >&2
        hf_fail "$WHAT: HTTP $CODE, want $1"
    fi
    [ "$1" -lt 400 ] || check "$(json code)" "$1" "$WHAT: the error body's code"
}
# Each call's reason is its case's name, so the audit check at the end finds its record.
wrap_pk() { # AUTHN PKCS8-FILE PERIMETER
    post /mail/wrapprivatekey "{\"authentication\":\"$1\",\"private_key\":\"$(b64 "$2")\",\"perimeter_id\":\"$3\"}"
}
decrypt() { # AUTHZ WRAPPED ALGORITHM EDEK [EXTRA-MEMBERS] [AUTHN] [PREFIX]
    post "/${7:-mail}/privatekeydecrypt" "{\"authentication\":\"${6:-$AN_ALICE}\",\"authorization\":\"$1\",\"wrapped_private_key\":\"$2\",\"algorithm\":\"$3\",\"encrypted_data_encryption_key\":\"$4\",\"reason\":\"$WHAT\"${5:+,$5}}"
}
sign() { # AUTHZ WRAPPED ALGORITHM DIGEST [EXTRA-MEMBERS]
    post /mail/privatekeysign "{\"authentication\":\"$AN_ALICE\",\"authorization\":\"$1\",\"wrapped_private_key\":\"$2\",\"algorithm\":\"$3\",\"digest\":\"$4\",\"reason\":\"$WHAT\"${5:+,$5}}"
}
privileged() { # AUTHN WRAPPED SPKI-HASH [SPKI-HASH-ALGORITHM]
    post /mail/privilegedprivatekeydecrypt "{\"authentication\":\"$1\",\"wrapped_private_key\":\"$2\",\"algorithm\":\"RSA/ECB/OAEPwithSHA-256andMGF1Padding\",\"encrypted_data_encryption_key\":\"$EDEK256\",\"spki_hash\":\"$3\",\"spki_hash_algorithm\":\"${4:-SHA-256}\",\"reason\":\"$WHAT\"}"
}

# FN_expect STATUS TAG ARGS...: FN's call, under the case name TAG, answers STATUS.
wrap_pk_expect() { _st=$1 WHAT=$2 && shift 2 && wrap_pk "$@" && expect "$_st"; }
decrypt_expect() { _st=$1 WHAT=$2 && shift 2 && decrypt "$@" && expect "$_st"; }
sign_expect() { _st=$1 WHAT=$2 && shift 2 && sign "$@" && expect "$_st"; }
privileged_expect() { _st=$1 WHAT=$2 && shift 2 && privileged "$@" && expect "$_st"; }

# ---- wrapprivatekey ----
wrap_pk_expect 200 "wrapprivatekey rsa" "$AN_ADMIN" "$K/rsa.p8" ""
W_RSA=$(json wrapped_private_key)
[ -n "$W_RSA" ] || hf_fail "$WHAT: no wrapped_private_key"
wrap_pk_expect 200 "wrapprivatekey rsa p1" "$AN_ADMIN" "$K/rsa.p8" p1
W_P1=$(json wrapped_private_key)
wrap_pk_expect 200 "wrapprivatekey ec" "$AN_ADMIN" "$K/ec.p8" ""
W_EC=$(json wrapped_private_key)
wrap_pk_expect 403 "wrapprivatekey by a non-admin" "$AN_ALICE" "$K/rsa.p8" ""
wrap_pk_expect 400 "wrapprivatekey rsa-1024" "$AN_ADMIN" "$K/rsa1024.p8" ""
wrap_pk_expect 400 "wrapprivatekey pkcs1" "$AN_ADMIN" "$K/rsa.pkcs1" ""
# The private key is sealed, not carried: no PKCS#8 byte run in the wrapped form.
python3 - "$W_RSA" "$K/rsa.p8" <<'PY' || hf_fail "the wrapped private key holds the PKCS#8 in clear"
import base64, sys
w, der = base64.b64decode(sys.argv[1]), open(sys.argv[2], "rb").read()
assert len(w) == 33 + 2 + len(der) + 2, (len(w), len(der))
assert der[-64:] not in w
PY

# ---- privatekeydecrypt, each padding ----
head -c 32 /dev/urandom >"$K/dek"
DEK=$(b64 "$K/dek")
edek() { ossl pkeyutl -encrypt -pubin -inkey "$K/rsa.pub" -in "$K/dek" "$@" | b64; }
EDEK_PKCS1=$(edek -pkeyopt rsa_padding_mode:pkcs1)
EDEK1=$(edek -pkeyopt rsa_padding_mode:oaep -pkeyopt rsa_oaep_md:sha1 -pkeyopt rsa_mgf1_md:sha1)
EDEK256=$(edek -pkeyopt rsa_padding_mode:oaep -pkeyopt rsa_oaep_md:sha256 -pkeyopt rsa_mgf1_md:sha256)
LABEL_HEX=676d61696c2d6c6162656c # "gmail-label"
LABEL=$(printf gmail-label | b64)
EDEK256L=$(edek -pkeyopt rsa_padding_mode:oaep -pkeyopt rsa_oaep_md:sha256 -pkeyopt rsa_mgf1_md:sha256 -pkeyopt rsa_oaep_label:$LABEL_HEX)
EDEK512=$(edek -pkeyopt rsa_padding_mode:oaep -pkeyopt rsa_oaep_md:sha512 -pkeyopt rsa_mgf1_md:sha512)
decrypt_ok() { # TAG ALGORITHM EDEK [EXTRA]
    WHAT=$1
    decrypt "$AZ_DEC" "$W_RSA" "$2" "$3" "${4:-}"
    expect 200
    check "$(json data_encryption_key)" "$DEK" "$WHAT: the DEK openssl encrypted"
}
decrypt_ok "decrypt pkcs1" RSA/ECB/PKCS1Padding "$EDEK_PKCS1"
decrypt_ok "decrypt oaep sha1" RSA/ECB/OAEPwithSHA-1andMGF1Padding "$EDEK1"
decrypt_ok "decrypt oaep sha256" RSA/ECB/OAEPwithSHA-256andMGF1Padding "$EDEK256"
decrypt_ok "decrypt oaep sha256 label" RSA/ECB/OAEPwithSHA-256andMGF1Padding "$EDEK256L" \
    "\"rsa_oaep_label\":\"$LABEL\""
decrypt_ok "decrypt oaep sha512" RSA/ECB/OAEPwithSHA-512andMGF1Padding "$EDEK512"
decrypt_ok "decrypt java spelling" RSA/ECB/OAEPWithSHA-512AndMGF1Padding "$EDEK512"

decrypt_expect 400 "decrypt wrong label" "$AZ_DEC" "$W_RSA" RSA/ECB/OAEPwithSHA-256andMGF1Padding "$EDEK256L" \
    "\"rsa_oaep_label\":\"$(printf other | b64)\""
decrypt_expect 400 "decrypt wrong oaep hash" "$AZ_DEC" "$W_RSA" RSA/ECB/OAEPwithSHA-1andMGF1Padding "$EDEK256"
decrypt_expect 400 "decrypt short edek" "$AZ_DEC" "$W_RSA" RSA/ECB/PKCS1Padding "$(printf abc | b64)"
decrypt_expect 400 "decrypt unknown algorithm" "$AZ_DEC" "$W_RSA" RSA/ECB/NoPadding "$EDEK_PKCS1"
decrypt_expect 400 "decrypt a sign algorithm" "$AZ_DEC" "$W_RSA" SHA256withRSA "$EDEK_PKCS1"
decrypt_expect 403 "decrypt with the signer role" "$AZ_SIGN" "$W_RSA" RSA/ECB/PKCS1Padding "$EDEK_PKCS1"
decrypt_expect 400 "decrypt an ec key" "$AZ_DEC" "$W_EC" RSA/ECB/PKCS1Padding "$EDEK_PKCS1"
WHAT="decrypt tampered"
TAMPERED=$(python3 -c 'import base64,sys; b=bytearray(base64.b64decode(sys.argv[1])); b[40]^=1; print(base64.b64encode(b).decode())' "$W_RSA")
decrypt "$AZ_DEC" "$TAMPERED" RSA/ECB/PKCS1Padding "$EDEK_PKCS1"
expect 400

# ---- the key's perimeter ----
decrypt_expect 200 "decrypt perimeter p1 alice" "$AZ_DEC" "$W_P1" RSA/ECB/PKCS1Padding "$EDEK_PKCS1"
decrypt_expect 403 "decrypt perimeter p1 bob" "$AZ_BOB" "$W_P1" RSA/ECB/PKCS1Padding "$EDEK_PKCS1" "" "$AN_BOB"
decrypt_expect 200 "decrypt no perimeter bob" "$AZ_BOB" "$W_RSA" RSA/ECB/PKCS1Padding "$EDEK_PKCS1" "" "$AN_BOB"
check "$(json data_encryption_key)" "$DEK" "$WHAT"

# ---- spki_hash ----
privileged_expect 200 "privileged decrypt" "$AN_ADMIN" "$W_RSA" "$RSA_SPKI"
check "$(json data_encryption_key)" "$DEK" "$WHAT"
privileged_expect 403 "privileged decrypt another key's spki" "$AN_ADMIN" "$W_RSA" "$EC_SPKI"
privileged_expect 400 "privileged decrypt sha-1" "$AN_ADMIN" "$W_RSA" "$RSA_SPKI" SHA-1
privileged_expect 403 "privileged decrypt by a non-admin" "$AN_ALICE" "$W_RSA" "$RSA_SPKI"
decrypt_expect 200 "decrypt token spki of the key" "$(authz $ALICE decrypter spki_hash="$RSA_SPKI" spki_hash_algorithm=SHA-256)" "$W_RSA" \
    RSA/ECB/PKCS1Padding "$EDEK_PKCS1"
decrypt_expect 403 "decrypt token spki of another key" "$(authz $ALICE decrypter spki_hash="$EC_SPKI" spki_hash_algorithm=SHA-256)" "$W_RSA" \
    RSA/ECB/PKCS1Padding "$EDEK_PKCS1"

# ---- privatekeysign, verified by openssl ----
printf 'SignedAttributes of an S/MIME message\n' >"$K/msg"
for md in sha1 sha256 sha512; do
    ossl dgst -"$md" -binary -out "$K/$md.d" "$K/msg"
done
sign_ok() { # ALGORITHM MD [SALT]: signs MD's digest, then openssl verifies the signature
    WHAT="sign $1${3:+ salt $3}"
    sign "$AZ_SIGN" "$W_RSA" "$1" "$(b64 "$K/$2.d")" "${3:+\"rsa_pss_salt_length\":$3}"
    expect 200
    json signature | base64 -d >"$K/sig" || hf_fail "$WHAT: the signature is not base64"
    case $1 in
    */PSS) pad="-pkeyopt rsa_padding_mode:pss -pkeyopt rsa_pss_saltlen:${3:-digest}" ;;
    *) pad="-pkeyopt rsa_padding_mode:pkcs1" ;;
    esac
    # shellcheck disable=SC2086 # $pad is two options
    openssl pkeyutl -verify -pubin -inkey "$K/rsa.pub" -in "$K/$2.d" -sigfile "$K/sig" \
        -pkeyopt "digest:$2" $pad >"$HF_TMP/verify.out" 2>&1 ||
        hf_fail "$WHAT: openssl does not verify the signature: $(cat "$HF_TMP/verify.out")"
}
sign_ok SHA1withRSA sha1
sign_ok SHA256withRSA sha256
sign_ok SHA512withRSA sha512
sign_ok SHA1withRSA/PSS sha1
sign_ok SHA256withRSA/PSS sha256
sign_ok SHA512withRSA/PSS sha512
sign_ok SHA256withRSA/PSS sha256 20
sign_ok SHA256withRSA/PSS sha256 0
# A signature of another digest does not verify: the check above can fail.
ossl dgst -sha256 -binary -out "$K/other.d" "$HF_TMP/cli.log"
if openssl pkeyutl -verify -pubin -inkey "$K/rsa.pub" -in "$K/other.d" -sigfile "$K/sig" \
    -pkeyopt digest:sha256 -pkeyopt rsa_padding_mode:pss -pkeyopt rsa_pss_saltlen:0 >/dev/null 2>&1; then
    hf_fail "openssl verified a signature over another digest"
fi
sign_expect 400 "sign digest of the wrong length" "$AZ_SIGN" "$W_RSA" SHA256withRSA "$(b64 "$K/sha1.d")"
sign_expect 400 "sign salt too long" "$AZ_SIGN" "$W_RSA" SHA512withRSA/PSS "$(b64 "$K/sha512.d")" '"rsa_pss_salt_length":200'
sign_expect 400 "sign unknown algorithm" "$AZ_SIGN" "$W_RSA" SHA384withRSA "$(b64 "$K/sha256.d")"
sign_expect 400 "sign an ec key" "$AZ_SIGN" "$W_EC" SHA256withRSA "$(b64 "$K/sha256.d")"
sign_expect 403 "sign with the decrypter role" "$AZ_DEC" "$W_RSA" SHA256withRSA "$(b64 "$K/sha256.d")"

# ---- gmail = off ----
decrypt_expect 501 "decrypt under gmail off" "$AZ_DEC" "$W_RSA" RSA/ECB/PKCS1Padding "$EDEK_PKCS1" "" "" off
for px in mail off; do
    rm -f "$OUT"
    CODE=$(curl -sS -o "$OUT" -w '%{http_code}' "$BASE/$px/status" 2>"$HF_TMP/curl.err")
    WHAT="$px status"
    expect 200
    python3 - "$OUT" "$px" <<'PY' || hf_fail "/$px/status: $(cat "$OUT")"
import json, sys
ops = set(json.load(open(sys.argv[1]))["operations_supported"])
gmail = {"privatekeydecrypt", "privilegedprivatekeydecrypt", "privatekeysign", "wrapprivatekey"}
assert "unwrap" in ops, ops
assert (gmail <= ops) if sys.argv[2] == "mail" else not (gmail & ops), ops
PY
done

# The figures: each op's calls as this run saw them (one TLS connection per call, over loopback).
awk '{ n[$1]++; t[$1] += $2; if ($2 > m[$1]) m[$1] = $2 }
     END { for (op in n) printf "%s: %d calls, mean %.1f ms, max %.1f ms\n", op, n[op], 1000 * t[op] / n[op], 1000 * m[op] }' \
    "$HF_TMP/times" | sort

# ---- the audit records, and no secret in any log ----
python3 - "$HOLDFAST_STATE_DIR/audit.log" "$DEK" "$K/rsa.p8" "$HF_TMP/holdfastd.log" \
    "$HF_TMP/holdfastd.out" <<'PY' || hf_fail "audit records"
import base64, json, os, sys
sys.path.insert(0, os.environ["top_srcdir"] + "/tests/integration")
import auditlog
log, dek, p8 = sys.argv[1:4]
der = open(p8, "rb").read()
for f in [log] + sys.argv[4:]:
    data = open(f, "rb").read()
    for secret in (dek.encode(), base64.b64encode(der)[-40:], der[-40:]):
        if secret in data:
            sys.exit("%s holds a DEK or the private key" % f)
recs = list(auditlog.records(log))
by_reason = {}
for r in recs:
    reason = (r.get("fields") or {}).get("reason")
    if r.get("api") == "gws-cse" and reason is not None:
        by_reason.setdefault(reason, []).append(r)
want = {"decrypt oaep sha256": ("privatekeydecrypt", True),
        "sign SHA256withRSA/PSS": ("privatekeysign", True),
        "privileged decrypt": ("privilegedprivatekeydecrypt", True),
        "decrypt wrong label": ("privatekeydecrypt", False),
        "decrypt perimeter p1 bob": ("privatekeydecrypt", False),
        "decrypt short edek": ("privatekeydecrypt", False),
        "sign digest of the wrong length": ("privatekeysign", False)}
bad = []
for tag, (op, ok) in want.items():
    got = by_reason.get(tag, [])
    if not got:
        bad.append("%s: no record" % tag)
        continue
    last = got[-1]
    if (last.get("op") or "").split(".")[0] != op or bool(last.get("ok")) != ok:
        bad.append("%s: the last record %r, want op %s ok %s" % (tag, last, op, ok))
if bad:
    sys.exit("\n".join(bad))
print("audit: %d gws-cse records with a reason" % sum(map(len, by_reason.values())))
PY
hf_expect_exit 0 "$HF_CLI" audit verify
echo "cse-gmail: ok"
