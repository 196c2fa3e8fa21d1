# Helpers of tests/integration/oci.sh (the oci-ekms plugin), sourced after lib.sh.
#
#   oci_call METHOD PATH [BODY] [CURL-ARGS...]   a call to $BASE$PATH with $TOKEN as bearer
#                        (none when empty) and $OPC as opc-request-id (none when empty); the
#                        status in CODE, the body in $OUT, the headers in $HDR
#   oci_expect STATUS [MESSAGE-PART]   the last call answered STATUS; for an error, the body is
#                        {"code":"STATUS","message":...} (the message holding MESSAGE-PART)
#   oci_json PATH        a member of the last body ("a.b", "keyOps.0"), "" when absent
#   oci_header NAME      a header of the last answer, "" when absent
#   oci_uuid KEY         the key's UUID (holdfast key show)
#   oci_version_uuid KEY N   the UUID of version N of the key
#   oci_audit_find PYTHON-EXPR   exit 0 when an oci-ekms record r of the audit log makes the
#                        expression true (f is r["fields"]), else print the last records

oci_call() {
    _oci_m=$1 _oci_p=$2 _oci_b=${3-}
    shift 2
    [ $# -eq 0 ] || shift
    rm -f "$OUT" "$HDR"
    set -- -sS -o "$OUT" -D "$HDR" -w '%{http_code}' -X "$_oci_m" "$@"
    [ -z "$TOKEN" ] || set -- "$@" -H "Authorization: Bearer $TOKEN"
    [ -z "$OPC" ] || set -- "$@" -H "opc-request-id: $OPC"
    [ -z "$_oci_b" ] || set -- "$@" -H 'Content-Type: application/json' --data-binary "$_oci_b"
    CODE=$(curl "$@" "$BASE$_oci_p" 2>"$HF_TMP/curl.err") || CODE="curl-exit-$?"
    _path="$_oci_m $_oci_p"
}

oci_json() {
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    d = d[int(k)] if isinstance(d, list) else d.get(k, "") if isinstance(d, dict) else ""
print(d if not isinstance(d, bool) else str(d).lower())' "$OUT" "$1" 2>/dev/null
}

oci_header() {
    tr -d '\r' <"$HDR" | awk -v n="$1" 'BEGIN { n = tolower(n) ":" }
        tolower(substr($0, 1, length(n))) == n { sub(/^[^:]*: */, ""); print; exit }'
}

oci_expect() {
    if [ "$CODE" != "$1" ]; then
        echo "--- body:" >&2
        cat "$OUT" >&2 2>/dev/null
        cat "$HF_TMP/curl.err" >&2
        hf_fail "$_path: HTTP $CODE, want $1"
    fi
    case $1 in 2??) return 0 ;; esac
    [ "$(oci_json code)" = "$1" ] || hf_fail "$_path: code $(oci_json code), want the string \"$1\": $(cat "$OUT")"
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if isinstance(d["code"], str) and set(d) == {"code","message"} and d["message"] else 1)' "$OUT" ||
        hf_fail "$_path: not the spec's {\"code\",\"message\"} body: $(cat "$OUT")"
    [ -z "${2:-}" ] || oci_json message | grep -q -- "$2" ||
        hf_fail "$_path: message '$(oci_json message)' lacks '$2'"
}

oci_uuid() {
    "$HF_CLI" --json key show "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["uuid"])'
}

oci_version_uuid() {
    "$HF_CLI" --json key show "$1" | python3 -c 'import json,sys
for v in json.load(sys.stdin)["versions"]:
    if v["version"] == int(sys.argv[1]): print(v["uuid"])' "$2"
}

oci_audit_find() {
    python3 - "$HOLDFAST_STATE_DIR/audit.log" "$1" <<'PY'
import json, os, sys
sys.path.insert(0, os.environ["top_srcdir"] + "/tests/integration")
import auditlog
log, expr = sys.argv[1:3]
recs = [r for r in auditlog.records(log) if r.get("api") == "oci-ekms"]
for r in recs:
    f = r.get("fields") or {}
    if eval(expr):
        sys.exit(0)
print("no oci-ekms record with %s among %d; last: %s" % (expr, len(recs), recs[-2:]))
sys.exit(1)
PY
}
