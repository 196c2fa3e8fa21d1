#!/bin/sh
# make bench-sap: SAP HYOK through holdfastd over mutual TLS (tests/load/load-gateway.sh: a pinned
# client certificate, default threads, durable audit), in one run on the same cores:
#   (a) RSA-3072 OAEP SHA-256 asymmetric-decrypt (hf-load sap-rsa-decrypt) against raw OpenSSL
#       RSA-3072 private-key operations (tests/perf/rsa-oaep-ref, 2 threads): target >= 0.9x;
#   (b) the same decrypt with sap-hyok's success audit on against off ([audit]
#       success_events.sap-hyok = no: failures only): target >= 0.9x;
#   (c) AES-256 symmetric-decrypt (hf-load sap-decrypt) audit on against off, beside
#       mhd-floor's own suspend+resume / straight ratio over TLS (libmicrohttpd with holdfastd's
#       flags answering the same bytes with no work: the least the durable-audit rule costs).
# Every figure is the median of BENCH_ROUNDS rounds whose order alternates (audit on first, then
# off first), so a shared machine's noise falls on both sides alike. Prints every slice, a table
# of the medians with the ratios, and the load average before and after.
#
# Knobs: BENCH_SECONDS (steady seconds per slice, 10), BENCH_CONNECTIONS (hf-load VUs, 64),
# BENCH_ROUNDS (3), BENCH_THREADS (hf-load's and rsa-oaep-ref's threads, default 2 for the
# reference and one per core for hf-load).
set -u
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
HF_LOAD=${HF_LOAD:-$top_builddir/tests/load/hf-load}
HOLDFASTD=${HOLDFASTD:-$top_builddir/gateway/holdfastd}
REF=$top_builddir/tests/perf/rsa-oaep-ref
FLOOR=$top_builddir/tests/perf/mhd-floor
seconds=${BENCH_SECONDS:-10}
vus=${BENCH_CONNECTIONS:-64}
rounds=${BENCH_ROUNDS:-3}
threads=${BENCH_THREADS:-}

set +u # lib.sh reads unset variables on purpose
. "$top_srcdir/tests/integration/lib.sh"
for f in "$HF_LOAD" "$HOLDFASTD" "$REF" "$FLOOR"; do [ -x "$f" ] || hf_fail "$f is not built"; done
[ -f "$top_builddir/gateway/plugins/sap-hyok/.libs/sap-hyok.so" ] || hf_fail "plugin sap-hyok is not built"
hf_store_setup
. "$top_srcdir/tests/load/load-gateway.sh"
HF_LOAD_SUCCESS_EVENTS_OFF=
hf_load_gateway_start sap-hyok

: >"$HF_TMP/results"
# One hf-load slice of API against URL-and-API ARGS; appends "ROUND NAME OPS P50 P99 ERRORS".
slice() { # ROUND NAME API-ARGS...
    _r=$1 _n=$2
    shift 2
    _csv=$HF_TMP/$_n-$_r.csv
    "$HF_LOAD" "$@" --vus "$vus" --ramp-up 1s --steady "${seconds}s" --ramp-down 0 --pause 0 \
        --no-progress --quiet ${threads:+--threads "$threads"} --csv "$_csv" \
        >"$HF_TMP/$_n-$_r.txt" 2>&1 ||
        { cat "$HF_TMP/$_n-$_r.txt" >&2; hf_fail "hf-load $_n failed (round $_r)"; }
    # The CSV's columns (tests/load/README.md): ops_per_s 12, p50_ms 18, p99_ms 19, errors 22.
    awk -F, -v r="$_r" -v n="$_n" 'NR == 2 { print r, n, $12, $18, $19, $22 }' "$_csv" |
        tee -a "$HF_TMP/results"
}

gateway_slices() { # ROUND on|off: both SAP decrypts with success audit on or off
    if [ "$2" = off ]; then HF_LOAD_SUCCESS_EVENTS_OFF=sap-hyok; else HF_LOAD_SUCCESS_EVENTS_OFF=; fi
    hf_load_gateway_restart
    # shellcheck disable=SC2046
    slice "$1" "rsa-audit-$2" $(hf_load_args sap-rsa-decrypt sap-hyok)
    # shellcheck disable=SC2046
    slice "$1" "aes-audit-$2" $(hf_load_args sap-decrypt sap-hyok)
}

# mhd-floor over TLS answering the bytes of a symmetric-decrypt reply, straight or suspending.
floor_slice() { # ROUND NAME [--suspend]
    _port=$(hf_free_port)
    "$FLOOR" "$_port" '{"plaintext":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="}' ${3:+"$3"} \
        --tls "$HF_LOAD_PKI/server.pem" "$HF_LOAD_PKI/server.key" >"$HF_TMP/floor.out" 2>&1 &
    _fpid=$!
    _i=0
    until curl -s -o /dev/null --cacert "$HF_LOAD_PKI/server.pem" "https://127.0.0.1:$_port/"; do
        _i=$((_i + 1))
        [ "$_i" -lt 100 ] && kill -0 "$_fpid" 2>/dev/null ||
            { kill "$_fpid" 2>/dev/null; hf_fail "mhd-floor did not start: $(cat "$HF_TMP/floor.out")"; }
        sleep 0.1
    done
    slice "$1" "$2" --url "https://127.0.0.1:$_port/" --api static --cacert "$HF_LOAD_PKI/server.pem"
    kill "$_fpid" 2>/dev/null
    wait "$_fpid" 2>/dev/null
}

ref_slice() { # ROUND
    "$REF" "$seconds" "${threads:-2}" 3072 >"$HF_TMP/ref-$1.txt" 2>&1 ||
        { cat "$HF_TMP/ref-$1.txt" >&2; hf_fail "rsa-oaep-ref failed"; }
    # Per CPU second too: what a machine shared with other work left the reference.
    echo "# $(cat "$HF_TMP/ref-$1.txt")"
    sed -n 's/.*ops\/s \([0-9.]*\)$/\1/p' "$HF_TMP/ref-$1.txt" |
        awk -v r="$1" '{ print r, "rsa-openssl", $1, "-", "-", 0 }' | tee -a "$HF_TMP/results"
}

echo "bench-sap: $(nproc) cores, $vus VUs, ${seconds}s per slice, $rounds rounds, $(date -u +%FT%TZ)"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "round name ops/s p50_ms p99_ms errors"
r=1
while [ "$r" -le "$rounds" ]; do
    if [ $((r % 2)) = 1 ]; then
        ref_slice "$r"
        gateway_slices "$r" on
        gateway_slices "$r" off
        floor_slice "$r" floor-straight
        floor_slice "$r" floor-suspend --suspend
    else
        floor_slice "$r" floor-suspend --suspend
        floor_slice "$r" floor-straight
        gateway_slices "$r" off
        gateway_slices "$r" on
        ref_slice "$r"
    fi
    r=$((r + 1))
done
echo "load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"

awk '
    function median(name,    a, n, i, j, t, r) {
        n = 0
        for (r = 1; r <= rounds; r++) if ((r, name) in ops) a[++n] = ops[r, name]
        for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
            t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
        if (n == 0) return 0
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    function ratio(a, b) { return b > 0 ? a / b : 0 }
    { ops[$1, $2] = $3; p99[$2] = p99[$2] " " $5; err[$2] += $6; if ($1 > rounds) rounds = $1 }
    END {
        split("rsa-openssl rsa-audit-on rsa-audit-off aes-audit-on aes-audit-off floor-straight floor-suspend", order, " ")
        printf "\n%-16s %12s %8s  %s\n", "median of", "ops/s", "errors", "p99 ms per round"
        for (i = 1; i <= 7; i++) { m[order[i]] = median(order[i])
            printf "%-16s %12.1f %8d %s\n", order[i], m[order[i]], err[order[i]], p99[order[i]] }
        printf "\n| comparison | ratio | ops/s | against ops/s | target |\n|---|---:|---:|---:|---|\n"
        printf "| (a) SAP RSA-3072 decrypt (audit on) / raw OpenSSL RSA-3072 OAEP | %.2f | %.1f | %.1f | >= 0.9 |\n",
            ratio(m["rsa-audit-on"], m["rsa-openssl"]), m["rsa-audit-on"], m["rsa-openssl"]
        printf "| (b) SAP RSA-3072 decrypt audit on / audit off | %.2f | %.1f | %.1f | >= 0.9 |\n",
            ratio(m["rsa-audit-on"], m["rsa-audit-off"]), m["rsa-audit-on"], m["rsa-audit-off"]
        printf "| (c) SAP AES decrypt audit on / audit off | %.2f | %.1f | %.1f | beside the next |\n",
            ratio(m["aes-audit-on"], m["aes-audit-off"]), m["aes-audit-on"], m["aes-audit-off"]
        printf "| (c) mhd-floor TLS suspend+resume / straight | %.2f | %.1f | %.1f | the floor of the line above |\n",
            ratio(m["floor-suspend"], m["floor-straight"]), m["floor-suspend"], m["floor-straight"]
        printf "| SAP RSA-3072 decrypt audit off / raw OpenSSL | %.2f | %.1f | %.1f | |\n",
            ratio(m["rsa-audit-off"], m["rsa-openssl"]), m["rsa-audit-off"], m["rsa-openssl"]
        for (i = 2; i <= 7; i++) if (err[order[i]]) bad = 1
        if (bad) print "\nbench-sap: some slices had errors: their figures are not comparable"
    }' "$HF_TMP/results"
"$HF_CLI" audit verify >/dev/null && echo "audit verify: ok"
