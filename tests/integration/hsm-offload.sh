#!/bin/sh
# Issue 14, "a slow HSM never blocks gateway threads", through the real programs: holdfastd with
# one listener thread (threads = 1) serving aws-xks over a local key and a key of pool p1, whose
# one member (a fault-shim copy over SoftHSMv2, concurrency 1) takes 150 ms per PKCS#11 call, so
# 300 ms per encrypt; the module's [pools] queue_max = 2 bounds the pool's worker queue.
#
# - While batches of 6 concurrent encrypts hit the pool key (1 running, 2 waiting, 3 over),
#   hf-load's XKS encrypts on the local key through the same listener thread keep a p99 under
#   50 ms with no error. Without the hand-off the one listener thread sits in each 300 ms HSM
#   call, and every local request behind it waits that long.
# - Of each batch, 3 are served and 3 answered at once 429 ThrottlingException, each with its
#   audit record (result 0x200, CKR_FUNCTION_REJECTED); /metrics shows p1's worker set
#   (holdfast_hsm_workers 1) and its refusals, and the pool's throttled count includes them.
#
# HF_OFFLOAD_P99_MS (50).
. "${top_srcdir:-.}/tests/integration/lib.sh"
. "${top_srcdir:-.}/tests/integration/shim-lib.sh"

shim_need
hf_xks_need
hf_load_need
hf_store_setup
T=$HF_TMP
P99_MAX=${HF_OFFLOAD_P99_MS:-50}
hf() { "$HF_CLI" "$@"; }

# The member's token in the key store's own SoftHSMv2 (the shim loads the same module).
SOFTHSM2_CONF="$HOLDFAST_STATE_DIR/softhsm2.conf"
export SOFTHSM2_CONF
HF_POOL_PIN=pool-pin-4711
export HF_POOL_PIN
softhsm2-util --init-token --free --label pool-a --pin "$HF_POOL_PIN" --so-pin so-pin-9999 \
    >/dev/null || hf_fail "softhsm2-util --init-token pool-a"
shim_copy ma
conf "$SHIM_COPY"
A=$SHIM_COPY
printf '[pools]\nqueue_max = 2\n' >>"$HOLDFAST_CONF"
hf_expect_exit 0 hf pool add p1 --member "a,module=$A,token=pool-a,pin_env=HF_POOL_PIN,concurrency=1"
hf_expect_exit 0 hf key create kslow --alg AES-256 --source pool:p1
hf_expect_exit 0 hf key create klocal --alg AES-256
for k in kslow klocal; do hf_expect_exit 0 hf link add aws-xks "$k" "$k"; done

. "$top_srcdir/tests/integration/xks-lib.sh"
xks_gateway_start klocal 'threads = 1'
encrypt_now kslow warm # the member's handle cache, before the latency

# slow OUT: one XKS encrypt on kslow, "CODE ERRORNAME" ("200 -") into OUT.
slow() {
    _c=$(curl -sS -o "$1.json" -w '%{http_code}' --aws-sigv4 "aws:amz:us-east-1:kms-xks-proxy" \
        --user "$AKID:$SEC" -H 'Content-Type: application/json' --data-binary "@$T/warm.enc" \
        "http://127.0.0.1:$P/kms/xks/v1/keys/kslow/encrypt" 2>>"$T/curl.err") || _c="curl-$?"
    if [ "$_c" = 200 ]; then echo "200 -" >"$1"; else echo "$_c $($PY get "$1.json" errorName)" >"$1"; fi
}
batch() { # N: 6 concurrent encrypts on kslow, outcomes in $T/b$N.*
    _pids=
    for i in 1 2 3 4 5 6; do
        slow "$T/b$1.$i" &
        _pids="$_pids $!"
    done
    wait $_pids
}

conf "$A" "latency_us = 150000"
sleep 0.3 # the shim rereads its config every 100 ms
"$HF_LOAD" --url "http://127.0.0.1:$P" --api xks-encrypt --key-id klocal --vus 4 \
    --ramp-up 0 --steady 3s --ramp-down 0 --timeout 5s --no-progress --quiet \
    --csv "$T/load.csv" >"$T/load.out" 2>"$T/load.err" &
LOAD_PID=$!
sleep 0.3
batch 1
batch 2
wait "$LOAD_PID" || { cat "$T/load.out" "$T/load.err"; hf_fail "hf-load exited $?"; }
conf "$A"

# The CSV's columns (tests/load/README.md): total_ops 11, p99_ms 19, errors 22.
read -r OPS P99 ERRS <<EOF
$(awk -F, 'NR == 2 { print $11, $19, $22 }' "$T/load.csv")
EOF
echo "hsm-offload: local key under a 300 ms pool: $OPS encrypts, p99 $P99 ms, $ERRS errors"
check "$ERRS" 0 "local-key errors while the pool is slow"
awk -v p="$P99" -v m="$P99_MAX" 'BEGIN { exit !(p < m) }' ||
    hf_fail "local-key p99 $P99 ms while the pool key is slow (want < $P99_MAX ms)"

for b in 1 2; do
    got=$(cat "$T/b$b".[1-6] | sort | uniq -c | awk '{ printf "%s*%s %s;", $1, $2, $3 }')
    echo "hsm-offload: batch $b: $got"
    check "$got" "3*200 -;3*429 ThrottlingException;" "batch $b on the one-slot pool key"
done
# The refusals are records too (the gateway's own, as the pool's were: CKR_FUNCTION_REJECTED).
n=$(grep -c '"op":"encrypt".*"result":"0x200"' "$HOLDFAST_STATE_DIR/audit.log")
check "$n" 6 "throttled encrypts in the audit log"
curl -sS "http://127.0.0.1:$P/metrics" >"$T/metrics.txt" || hf_fail "GET /metrics"
metric() { awk -v k="$1" '$1 == k { print $2 }' "$T/metrics.txt"; }
check "$(metric 'holdfast_hsm_workers{pool="p1"}')" 1 "p1's worker threads"
check "$(metric 'holdfast_hsm_queue_max{pool="p1"}')" 2 "p1's worker queue"
check "$(metric 'holdfast_hsm_throttled_total{pool="p1"}')" 6 "p1's refusals"
check "$(metric 'holdfast_hsm_queue_depth{pool="p1"}') $(metric 'holdfast_hsm_workers_busy{pool="p1"}')" \
    "0 0" "p1's queue and workers once idle"
check "$(metric 'holdfast_pool_throttled_total{pool="p1"}')" 6 "the pool's refusals"
hf_gateway_stop || true
exit 0
