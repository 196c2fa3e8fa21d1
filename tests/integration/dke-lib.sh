# Shell helpers for tests/integration/dke.sh, sourced after lib.sh. They read and set:
#   DKE_BASE             https://127.0.0.1:PORT, the listener (CURL_CA_BUNDLE trusts its CA)
#   TOKEN                the bearer token of the next call ("" for none)
#   CODE, OUT, HDR       the last call's HTTP status, body file and response header file
#
#   dke_call METHOD PATH [BODY] [CURL-ARGS...]   one HTTPS call
#   dke_json PATH.TO.FIELD   a field of the last body ("" when absent)
#   dke_header NAME      the last response's header NAME (case ignored), CR stripped
#   dke_expect STATUS [ERROR]   the last call answered STATUS with {"error":ERROR,"message"}
#   dke_pem FILE         the last GET body's key (n, e) as a public PEM in FILE
#   dke_encrypt PEM FILE   RSA-OAEP-256 of FILE's bytes with the openssl CLI, base64 on stdout

dke_call() {
    _dke_m=$1 _dke_path=$2
    shift 2
    _dke_body=
    if [ $# -gt 0 ]; then _dke_body=$1; shift; fi
    rm -f "$OUT" "$HDR"
    set -- -sS -o "$OUT" -D "$HDR" -w '%{http_code}' -X "$_dke_m" "$@"
    [ -z "$TOKEN" ] || set -- -H "Authorization: Bearer $TOKEN" "$@"
    [ -z "$_dke_body" ] || set -- -H 'Content-Type: application/json' --data-binary "$_dke_body" "$@"
    CODE=$(curl "$@" "$DKE_BASE$_dke_path" 2>"$HF_TMP/curl.err") || CODE="curl-exit-$?"
}

dke_json() {
    python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    d = d.get(k, "") if isinstance(d, dict) else ""
print(json.dumps(d) if not isinstance(d, str) else d)' "$OUT" "$1" 2>/dev/null
}

dke_header() {
    python3 -c 'import sys
for line in open(sys.argv[1], "rb").read().decode("latin-1").split("\r\n"):
    name, sep, value = line.partition(":")
    if sep and name.strip().lower() == sys.argv[2].lower():
        print(value.strip())
        break' "$HDR" "$1"
}

dke_expect() {
    if [ "$CODE" != "$1" ]; then
        echo "--- body:" >&2
        cat "$OUT" >&2 2>/dev/null
        cat "$HF_TMP/curl.err" >&2
        hf_fail "$_dke_m $_dke_path: HTTP $CODE, want $1 ${2:-}"
    fi
    [ -n "${2:-}" ] || return 0
    _dke_got=$(dke_json error)
    [ "$_dke_got" = "$2" ] || hf_fail "$_dke_m $_dke_path: error '$_dke_got', want '$2' ($(cat "$OUT"))"
    [ -n "$(dke_json message)" ] || hf_fail "$_dke_m $_dke_path: the error has no message"
}

dke_pem() {
    python3 - "$OUT" "$1" <<'PY' || hf_fail "the GET answer's key is not an RSA public key"
import base64, json, sys
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
key = json.load(open(sys.argv[1]))["key"]
n = int.from_bytes(base64.b64decode(key["n"], validate=True), "big")
pub = rsa.RSAPublicNumbers(key["e"], n).public_key()
open(sys.argv[2], "wb").write(pub.public_bytes(serialization.Encoding.PEM,
                                               serialization.PublicFormat.SubjectPublicKeyInfo))
PY
}

dke_encrypt() {
    openssl pkeyutl -encrypt -pubin -inkey "$1" -in "$2" -pkeyopt rsa_padding_mode:oaep \
        -pkeyopt rsa_oaep_md:sha256 -pkeyopt rsa_mgf1_md:sha256 2>"$HF_TMP/openssl.err" |
        base64 -w0 || hf_fail "openssl pkeyutl -encrypt: $(cat "$HF_TMP/openssl.err")"
}
