#!/bin/sh
# hf-load's OCI, SAP and DKE builders against the real plugins, in the holdfastd `make
# perf-report` and `make bench-sap` measure (load-gateway.sh): each API runs for 2 s and every
# call is accepted (the minted tokens, the client certificate and the prepared ciphertexts pass
# the plugins' checks; the replies pass the builders' checks, so each decrypt gave back the VU's
# own plaintext), and the audit log holds a success record of the API for every operation
# hf-load counted. With sap-hyok's success events off, a SAP run adds no success record: what
# bench-sap's audit-off figure measures. A plugin that is not built is left out; none built
# skips.
. "${top_srcdir:-.}/tests/integration/lib.sh"

HF_LOAD=${HF_LOAD:-$top_builddir/tests/load/hf-load}
HOLDFASTD=${HOLDFASTD:-$top_builddir/gateway/holdfastd}
[ -x "$HF_LOAD" ] || hf_fail "$HF_LOAD is not built"
[ -x "$HOLDFASTD" ] || hf_skip "$HOLDFASTD not built"
for p in curl openssl python3; do
    command -v "$p" >/dev/null || hf_skip "$p not installed"
done
plugins=""
for p in oci-ekms sap-hyok ms-dke; do
    [ -f "$top_builddir/gateway/plugins/$p/.libs/$p.so" ] && plugins="$plugins $p"
done
[ -n "$plugins" ] || hf_skip "none of oci-ekms, sap-hyok, ms-dke is built"
hf_store_setup
. "$top_srcdir/tests/load/load-gateway.sh"
# shellcheck disable=SC2086
hf_load_gateway_start $plugins

# Success records of API in the audit log.
successes() {
    python3 - "$HOLDFAST_STATE_DIR/audit.log" "$1" <<'PY'
import os, sys
sys.path.insert(0, os.environ["top_srcdir"] + "/tests/integration")
import auditlog
log, api = sys.argv[1:3]
print(sum(1 for r in auditlog.records(log) if r.get("api") == api and r.get("ok") is True))
PY
}

# Runs API of PLUGIN for 2 s with 4 VUs; prints its total operations; fails unless some were
# done and none failed.
run() { # API PLUGIN
    # shellcheck disable=SC2046
    hf_expect_exit 0 "$HF_LOAD" $(hf_load_args "$1" "$2") --vus 4 --ramp-up 0 --steady 2s \
        --ramp-down 0 --pause 0 --no-progress --csv "$HF_TMP/$1.csv"
    awk -F, -v api="$1" 'NR == 2 {
        printf "hf-load %s, 4 VUs for 2 s: %s ops, p99 %s ms, %s errors\n", api, $11, $19, $22 >"/dev/stderr"
        print $11
        exit !($11 > 0 && $22 == 0) }' "$HF_TMP/$1.csv" ||
        hf_fail "hf-load $1: not every call accepted: $(cat "$HF_OUT" "$HF_ERR")"
}

for p in $plugins; do
    case $p in
    oci-ekms) apis=oci-encrypt ;;
    sap-hyok) apis="sap-decrypt sap-rsa-decrypt" ;;
    ms-dke) apis=dke-decrypt ;;
    esac
    for api in $apis; do
        before=$(successes "$p")
        ops=$(run "$api" "$p") || exit 1
        after=$(successes "$p")
        [ $((after - before)) -ge "$ops" ] ||
            hf_fail "$api: $ops operations but $((after - before)) $p success records in the audit log"
    done
done

# The client certificate is what SAP's calls are accepted by: a key that is not the
# certificate's fails at start, and a certificate the CA signed but the keystore does not pin
# fails the preflight with the plugin's 401.
case " $plugins " in *" sap-hyok "*)
    # shellcheck disable=SC2046
    set -- $(hf_load_args sap-decrypt sap-hyok) --vus 1 --ramp-up 0 --steady 1s --ramp-down 0 \
        --no-progress
    hf_expect_exit 1 "$HF_LOAD" "$@" --key "$HF_LOAD_PKI/server.key"
    grep -q "is not the private key (PEM) of --cert" "$HF_ERR" ||
        hf_fail "a mismatched --key: $(cat "$HF_ERR")"
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=unpinned \
        -keyout "$HF_TMP/unpinned.key" -out "$HF_TMP/unpinned.csr" >/dev/null 2>&1 &&
        openssl x509 -req -in "$HF_TMP/unpinned.csr" -CA "$HF_LOAD_PKI/client-ca.pem" \
            -CAkey "$HF_LOAD_PKI/client-ca.key" -days 1 -out "$HF_TMP/unpinned.pem" \
            >/dev/null 2>&1 || hf_fail "openssl: no unpinned certificate"
    hf_expect_exit 1 "$HF_LOAD" "$@" --cert "$HF_TMP/unpinned.pem" --key "$HF_TMP/unpinned.key"
    grep -q 'HTTP 401' "$HF_ERR" || hf_fail "an unpinned certificate: $(cat "$HF_ERR")"
    ;;
esac

# The success-audit switch bench-sap's audit-off run uses: failures only, so no new success.
case " $plugins " in *" sap-hyok "*)
    HF_LOAD_SUCCESS_EVENTS_OFF=sap-hyok
    hf_load_gateway_restart
    before=$(successes sap-hyok)
    ops=$(run sap-decrypt sap-hyok) || exit 1
    after=$(successes sap-hyok)
    [ "$after" = "$before" ] ||
        hf_fail "success_events.sap-hyok = no: $((after - before)) new success records for $ops ops"
    ;;
esac
"$HF_CLI" audit verify >/dev/null || hf_fail "holdfast audit verify"
