#!/bin/sh
# make bench-ekm: Cloud EKM wrap with a bearer token against AWS XKS encrypt through the same
# holdfastd (issue 11: EKM >= 0.8x XKS, the token cache making the bearer check cheap). One
# holdfastd serves both (tests/load/load-gateway.sh: TLS, default threads, durable audit; XKS on
# its listener, EKM on the bearer one); hf-load drives alternating slices of xks-encrypt (SigV4
# signed per request) and ekm-wrap (one minted RS256 ID token for the run), the order swapped
# every round, so the noise of a shared machine falls on both alike. Prints each slice's ops/s,
# p50 and p99, each round's ratio, the medians and their ratio, and the load average around.
#
# Knobs: BENCH_SECONDS (steady seconds per slice, 10), BENCH_CONNECTIONS (VUs, 64, as
# bench-gateway's wrk), BENCH_ROUNDS (5), BENCH_THREADS (hf-load's, default one per core).
set -u
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
HF_LOAD=${HF_LOAD:-$top_builddir/tests/load/hf-load}
HOLDFASTD=${HOLDFASTD:-$top_builddir/gateway/holdfastd}
seconds=${BENCH_SECONDS:-10}
vus=${BENCH_CONNECTIONS:-64}
rounds=${BENCH_ROUNDS:-5}
threads=${BENCH_THREADS:-}

set +u # lib.sh reads unset variables on purpose
. "$top_srcdir/tests/integration/lib.sh"
for f in "$HF_LOAD" "$HOLDFASTD"; do [ -x "$f" ] || hf_fail "$f is not built"; done
for p in aws-xks gcp-ekm; do
    [ -f "$top_builddir/gateway/plugins/$p/.libs/$p.so" ] || hf_fail "plugin $p is not built"
done
hf_store_setup
. "$top_srcdir/tests/load/load-gateway.sh"
hf_load_gateway_start aws-xks gcp-ekm

# One slice: API of PLUGIN for BENCH_SECONDS; appends "ROUND API OPS P50 P99 ERRORS".
slice() { # ROUND API PLUGIN
    _csv=$HF_TMP/$2-$1.csv
    # shellcheck disable=SC2046
    "$HF_LOAD" $(hf_load_args "$2" "$3") --vus "$vus" --ramp-up 1s --steady "${seconds}s" \
        --ramp-down 0 --pause 0 --no-progress --quiet ${threads:+--threads "$threads"} \
        --csv "$_csv" >"$HF_TMP/$2-$1.txt" 2>&1 ||
        { cat "$HF_TMP/$2-$1.txt" >&2; hf_fail "hf-load $2 failed (round $1)"; }
    # The CSV's columns (tests/load/README.md): ops_per_s 12, p50_ms 18, p99_ms 19, errors 22.
    awk -F, -v r="$1" -v api="$2" 'NR == 2 { print r, api, $12, $18, $19, $22 }' "$_csv" \
        >>"$HF_TMP/results"
}

echo "bench-ekm: $(nproc) cores, $vus VUs, ${seconds}s per slice, $rounds rounds, $(date -u +%FT%TZ)"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
: >"$HF_TMP/results"
r=1
while [ "$r" -le "$rounds" ]; do
    if [ $((r % 2)) = 1 ]; then
        slice "$r" xks-encrypt aws-xks
        slice "$r" ekm-wrap gcp-ekm
    else
        slice "$r" ekm-wrap gcp-ekm
        slice "$r" xks-encrypt aws-xks
    fi
    r=$((r + 1))
done
echo "load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"

awk '
    function median(a, n,    i, j, t) {
        for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
            t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    { ops[$1, $2] = $3; p50[$1, $2] = $4; p99[$1, $2] = $5; err[$1, $2] = $6
      if ($1 > n) n = $1 }
    END {
        printf "%5s | %12s %8s %8s %6s | %12s %8s %8s %6s | %5s\n", "round", "xks ops/s",
            "p50 ms", "p99 ms", "errors", "ekm ops/s", "p50 ms", "p99 ms", "errors", "ratio"
        for (r = 1; r <= n; r++) {
            x = ops[r, "xks-encrypt"]; e = ops[r, "ekm-wrap"]
            xs[r] = x; es[r] = e; rs[r] = x > 0 ? e / x : 0
            printf "%5d | %12.1f %8.2f %8.2f %6d | %12.1f %8.2f %8.2f %6d | %5.2f\n", r, x,
                p50[r, "xks-encrypt"], p99[r, "xks-encrypt"], err[r, "xks-encrypt"], e,
                p50[r, "ekm-wrap"], p99[r, "ekm-wrap"], err[r, "ekm-wrap"], rs[r]
        }
        mx = median(xs, n); me = median(es, n)
        printf "median ops/s: xks-encrypt %.1f, ekm-wrap %.1f\n", mx, me
        printf "ratio ekm-wrap / xks-encrypt: %.2f of the medians, %.2f the median round (target >= 0.8)\n",
            (mx > 0 ? me / mx : 0), median(rs, n)
    }' "$HF_TMP/results"
"$HF_CLI" audit verify >/dev/null && echo "audit verify: ok"
