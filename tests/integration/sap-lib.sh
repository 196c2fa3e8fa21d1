# Helpers for the SAP HYOK tests (tests/integration/sap*.sh), sourced after lib.sh. POSIX sh.
#
#   sap_need             HOLDFASTD and SAP_PLUGIN set; skips unless both are built and curl,
#                        python3 and openssl are there
#   sap_pki              HF_PKI ($HF_TMP/pki): CA "sap" (SAP Cloud Root CA's stand-in), the
#                        server's certificate for 127.0.0.1 (server.pem/.key), and a CA "other"
#   sap_client NAME [CA] a client certificate NAME.pem/.key signed by CA (default sap)
#   sap_pin NAME         print the SHA-256 of NAME.pem's DER (the keystore's pin), lower hex
#   sap_listener PORT    print a [listener:sap] section: TLS on 127.0.0.1:PORT, client
#                        certificates required and chained to CA sap, serving sap-hyok
#   sap_gateway_start MAX_BODY KEYSTORE PIN   holdfastd started (hf_gateway_start) with
#                        /healthz on plain loopback HTTP (PORT) and sap_listener on SAP_PORT,
#                        both free ports it picks, serving KEYSTORE for SAP_TENANT to the client
#                        certificate pinned PIN; its configuration in $HF_TMP/holdfastd.conf
#   sap_key_uuid REF     print the UUID of key REF (holdfast --json key show)
#   sap_md [MEMBERS]     print a body: request_metadata from SAP_TENANT, SAP_GROUP,
#                        SAP_USER_TYPE, SAP_REQUEST_ID (an empty one is left out), then MEMBERS
#                        (JSON members without braces, e.g. '"length":32')
#   sap_call CERT PATH BODY [curl args]   POST BODY to https://127.0.0.1:$SAP_PORT$SAP_PREFIX
#                        PATH presenting client certificate CERT ("" for none): CODE gets the
#                        HTTP status ("curl-exit-N" when curl failed, e.g. a refused
#                        handshake), SAP_OUT the body file
#   sap_json PATH        print a member of the last answer (a.b.0.c); lists, objects and
#                        booleans as JSON
#   sap_expect STATUS    the last answer was STATUS; for an error, the envelope
#                        {"code":"STATUS","message":printable, under 512} too
#   sap_audit PY-EXPR    succeeds when some sap-hyok record r of the audit log makes PY-EXPR
#                        true (r: the record; f: its fields, {} when none), e.g.
#                        'r["op"] == "get-metadata" and f.get("sap_request_id") == "r1"'
#   sap_audit_count PY-EXPR   print how many do

SAP_PREFIX=${SAP_PREFIX-/api/v1/cckm/sap/hyok/v1}
SAP_TENANT=${SAP_TENANT-tenant-1}
SAP_GROUP=${SAP_GROUP-}
SAP_USER_TYPE=${SAP_USER_TYPE-USER_DEV}
SAP_REQUEST_ID=${SAP_REQUEST_ID-}

sap_need() {
    HOLDFASTD="$top_builddir/gateway/holdfastd"
    SAP_PLUGIN="$top_builddir/gateway/plugins/sap-hyok/.libs/sap-hyok.so"
    [ -x "$HOLDFASTD" ] || hf_skip "$HOLDFASTD not built"
    [ -f "$SAP_PLUGIN" ] || hf_skip "$SAP_PLUGIN not built"
    for _sap_p in curl python3 openssl; do
        command -v "$_sap_p" >/dev/null || hf_skip "$_sap_p not installed"
    done
}

sap_pki() {
    hf_tmpdir
    HF_PKI=${HF_PKI:-$HF_TMP/pki}
    hf_pki_ca sap
    hf_pki_ca other
    hf_pki_cert server 127.0.0.1 sap "subjectAltName=IP:127.0.0.1,DNS:localhost"
}

sap_client() {
    hf_pki_cert "$1" "sap-dc-$1" "${2:-sap}" "extendedKeyUsage=clientAuth"
}

sap_pin() {
    openssl x509 -in "$HF_PKI/$1.pem" -outform DER | openssl dgst -sha256 -r | cut -d' ' -f1
}

sap_listener() {
    printf '[listener:sap]\nlisten = 127.0.0.1:%s\ncert = %s\nkey = %s\nclient_ca = %s\n' \
        "$1" "$HF_PKI/server.pem" "$HF_PKI/server.key" "$HF_PKI/sap.pem"
    printf 'client_certificate = required\nplugins = sap-hyok\n'
}

sap_gateway_start() {
    PORT=$(hf_free_port)
    SAP_PORT=$(hf_free_port)
    [ "$PORT" != "$SAP_PORT" ] || hf_skip "free ports collided"
    cat >"$HF_TMP/holdfastd.conf" <<EOC
$(hf_gateway_section "sap-hyok" "$1" "127.0.0.1:$PORT")

$(sap_listener "$SAP_PORT")

[plugin:sap-hyok]
path = $SAP_PLUGIN

[sap-hyok:$2]
tenant = $SAP_TENANT
pins = $3
EOC
    hf_gateway_start "http://127.0.0.1:$PORT" "$HOLDFASTD" -f -c "$HF_TMP/holdfastd.conf"
}

sap_key_uuid() {
    "$HF_CLI" --json key show "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["uuid"])'
}

sap_md() {
    python3 - "$SAP_TENANT" "$SAP_GROUP" "$SAP_USER_TYPE" "$SAP_REQUEST_ID" "${1:-}" <<'PY'
import json, sys
names = ["sap_tenant_id", "sap_group_id", "sap_user_type", "sap_request_id"]
md = {n: v for n, v in zip(names, sys.argv[1:5]) if v}
rest = json.loads("{" + sys.argv[5] + "}")
print(json.dumps(dict({"request_metadata": md}, **rest), separators=(",", ":")))
PY
}

sap_call() {
    _sap_cert=$1 _sap_path=$2 _sap_body=$3
    shift 3
    SAP_OUT="$HF_TMP/sap-out.json"
    rm -f "$SAP_OUT"
    set -- --cacert "$HF_PKI/sap.pem" "$@"
    [ -z "$_sap_cert" ] || set -- --cert "$HF_PKI/$_sap_cert.pem" --key "$HF_PKI/$_sap_cert.key" "$@"
    CODE=$(curl -sS -o "$SAP_OUT" -w '%{http_code}' -H 'Content-Type: application/json' \
        --data-binary "$_sap_body" "$@" "https://127.0.0.1:$SAP_PORT$SAP_PREFIX$_sap_path" \
        2>"$HF_TMP/curl.err") || CODE="curl-exit-$?"
}

sap_json() {
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    d = d[int(k)] if isinstance(d, list) else d.get(k, "") if isinstance(d, dict) else ""
print(json.dumps(d) if isinstance(d, (list, dict, bool)) else d)' "$SAP_OUT" "$1" 2>/dev/null
}

sap_expect() {
    if [ "$CODE" != "$1" ]; then
        echo "--- body:" >&2
        cat "$SAP_OUT" >&2 2>/dev/null
        cat "$HF_TMP/curl.err" >&2
        hf_fail "$_sap_path: HTTP $CODE, want $1"
    fi
    case $1 in 2*) return 0 ;; esac
    python3 - "$SAP_OUT" "$1" <<'PY' || hf_fail "$_sap_path: the $1 body is not the envelope: $(cat "$SAP_OUT")"
import json, sys
d = json.load(open(sys.argv[1]))
m = d.get("message")
ok = (set(d) == {"code", "message"} and d["code"] == sys.argv[2] and isinstance(m, str)
      and 0 < len(m) < 512 and all(0x20 <= ord(c) < 0x7f for c in m))
sys.exit(0 if ok else 1)
PY
}

_sap_audit() {
    python3 - "$HOLDFAST_STATE_DIR/audit.log" "$1" "$2" <<'PY'
import json, os, sys
sys.path.insert(0, os.environ["top_srcdir"] + "/tests/integration")
import auditlog
log, expr, mode = sys.argv[1:4]
n = 0
for r in auditlog.records(log):
    if r.get("api") != "sap-hyok":
        continue
    f = r.get("fields") or {}
    if eval(expr, {"r": r, "f": f}):
        n += 1
if mode == "count":
    print(n)
sys.exit(0 if mode == "count" or n > 0 else 1)
PY
}
sap_audit() { _sap_audit "$1" find; }
sap_audit_count() { _sap_audit "$1" count; }
