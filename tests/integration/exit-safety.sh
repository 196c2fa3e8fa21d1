#!/bin/sh
# The module's end, however a host ends: 50 runs of each way (HF_EXIT_RUNS to change it), 0
# crashes, and every run's records in the audit log, its stream closed.
# - exit-host (a plain PKCS#11 host, C only): C_Finalize then exit; C_Finalize from an exit
#   handler registered before the module was loaded (as OpenSSL's cleanup is); dlclose with no
#   C_Finalize, the process going on (the module's threads must not run in unmapped code).
# - openssl pkey and pkeyutl -sign through the provider from openssl.cnf, which finalises at
#   exit (the default), and with pkcs11-module-finalize = no (no C_Finalize at all).
. "${top_srcdir:-.}/tests/integration/lib.sh"

host="$top_builddir/tests/integration/exit-host"
provider_dir="$top_builddir/provider/.libs"
[ -x "$host" ] || hf_skip "$host not built"
command -v openssl >/dev/null || hf_skip "openssl CLI not installed"
[ -f "$provider_dir/holdfast.so" ] || hf_skip "provider not built"
runs=${HF_EXIT_RUNS:-50}
hf_store_setup
"$HF_CLI" key create exit-ec --alg EC-P256 >/dev/null || hf_fail "key create exit-ec"
T=$HF_TMP
log="$HOLDFAST_STATE_DIR/audit.log"

# audit_ops OP: "RUNS CLOSED", the number of pids with an OP record and how many of those
# pids closed their audit stream, over the records since the mark file's count.
audit_ops() {
    python3 - "$log" "$1" "$T/mark" <<'PY'
import json, sys
log, op, mark = sys.argv[1:4]
skip = int(open(mark).read())
seen, closed, n = set(), set(), 0
for raw in open(log, "rb").read().replace(b"\0", b"\n").split(b"\n"):
    start = raw.find(b'{"seq":')
    if start < 0:
        continue
    try:
        rec = json.loads(raw[start:])
    except ValueError:
        continue
    n += 1
    if n <= skip:
        continue
    if rec.get("op") == op:
        seen.add(rec.get("pid"))
    elif rec.get("op") == "stream-close":
        closed.add(rec.get("pid"))
print(len(seen), len(seen & closed))
PY
}
# mark: the log's record count now, so audit_ops looks only at what comes after.
mark() {
    python3 - "$log" >"$T/mark" <<'PY'
import sys
print(sum(1 for raw in open(sys.argv[1], "rb").read().replace(b"\0", b"\n").split(b"\n")
          if b'{"seq":' in raw))
PY
}

# many WHAT OP CMD...: CMD runs times; none may crash or fail, each run's OP record must be in
# the log and its stream closed.
many() {
    what=$1 op=$2
    shift 2
    mark
    crashes=0 failures=0
    i=0
    while [ "$i" -lt "$runs" ]; do
        i=$((i + 1))
        rc=0
        "$@" >/dev/null 2>"$T/err" </dev/null || rc=$?
        [ "$rc" -ge 128 ] && crashes=$((crashes + 1))
        if [ "$rc" -ne 0 ]; then
            failures=$((failures + 1))
            [ "$failures" -eq 1 ] && { echo "$what, run $i: exit $rc"; cat "$T/err"; }
        fi
    done
    [ "$crashes" -eq 0 ] || hf_fail "$what: $crashes of $runs runs crashed"
    [ "$failures" -eq 0 ] || hf_fail "$what: $failures of $runs runs failed"
    set -- $(audit_ops "$op")
    [ "$1" -eq "$runs" ] || hf_fail "$what: $1 of $runs runs left a $op record"
    [ "$2" -eq "$runs" ] || hf_fail "$what: $2 of $runs runs closed their audit stream"
    echo "$what: $runs runs, 0 crashes, $runs $op records, every stream closed"
}

for mode in finalize atexit; do
    many "exit-host $mode" sign "$host" "$mode" "$HF_MODULE" "$HF_USER_PIN" exit-ec
done
# Unmapped, the module's process-lifetime state (its library context, kept across
# C_Finalize/C_Initialize) is unreachable, and LeakSanitizer would call it lost: the leak check
# belongs to the modes above, where the library stays.
lsan_options=$LSAN_OPTIONS
export LSAN_OPTIONS="detect_leaks=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
many "exit-host unload" sign "$host" unload "$HF_MODULE" "$HF_USER_PIN" exit-ec
LSAN_OPTIONS=$lsan_options

PIN="file:$HOLDFAST_STATE_DIR/token-user.pin"
openssl dgst -sha256 -binary "$T/mark" >"$T/digest"
for finalize in yes no; do
    sed -e "s|^module = holdfast.so|module = $provider_dir/holdfast.so|" \
        -e "s|^#pkcs11-module-path = .*|pkcs11-module-path = $HF_MODULE|" \
        -e "s|^#pkcs11-module-pin = .*|pkcs11-module-pin = $PIN|" \
        -e "s|^#pkcs11-module-finalize = .*|pkcs11-module-finalize = $finalize|" \
        "$top_srcdir/conf/openssl-holdfast.cnf" >"$T/openssl-$finalize.cnf"
    grep -q "^pkcs11-module-finalize = $finalize" "$T/openssl-$finalize.cnf" ||
        hf_fail "the sample openssl-holdfast.cnf lost its pkcs11-module-finalize line"
    export OPENSSL_CONF="$T/openssl-$finalize.cnf"
    many "openssl pkey, finalize=$finalize" login hf_ext openssl pkey -in holdfast:exit-ec -pubout
    many "openssl pkeyutl -sign, finalize=$finalize" sign \
        hf_ext openssl pkeyutl -sign -inkey holdfast:exit-ec -in "$T/digest" -out "$T/sig"
done
unset OPENSSL_CONF
hf_expect_exit 0 "$HF_CLI" audit verify
exit 0
