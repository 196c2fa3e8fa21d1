#!/bin/sh
# HSM pools seen from outside (issue 14, visibility and throttling), with the real programs:
# holdfastd's aws-xks plugin over pool keys whose members are hf-fault-shim copies over
# SoftHSMv2 tokens.
#
# - Unavailable: the member that holds a pool key is made dead: the XKS encrypt on that key is
#   the spec's InternalException (500: "failure of the backing HSM"), audited with
#   CKR_DEVICE_ERROR; GetHealthStatus lists that member UNAVAILABLE and the other ACTIVE; /metrics
#   says holdfast_pool_member_up 0 with a failure counted. The member comes back (the dead file
#   removed, the pool's probe): ACTIVE, up 1, the encrypt works again.
# - Throttled: a one-member pool at concurrency 1 with 1.5 s injected per HSM call: of two
#   concurrent encrypts, one is served and the other, queued past the pool's 2 s wait, is 429
#   ThrottlingException, audited with CKR_FUNCTION_REJECTED; holdfast_pool_throttled_total counts it.
#   While one call is in flight and one queued, /metrics shows both and GetHealthStatus calls
#   the member DEGRADED.
# - Another API's own errors for the same two refusals, from the one mapping in the gateway: the
#   test plugin (tests/integration/plugin-test.c), reaching the same keys through their aws-xks
#   links, answers 503 TestUnavailable and 429 TestThrottled.
# - `holdfast pool show` prints the live figures (text and --json) with the dead member out.
. "${top_srcdir:-.}/tests/integration/lib.sh"

command -v curl >/dev/null || hf_skip "curl not installed"
curl --help all 2>/dev/null | grep -q -- '--aws-sigv4' || hf_skip "curl has no --aws-sigv4"
HOLDFASTD="$top_builddir/gateway/holdfastd"
XKS_PLUGIN="$top_builddir/gateway/plugins/aws-xks/.libs/aws-xks.so"
TEST_PLUGIN="$top_builddir/tests/integration/.libs/plugin-test.so"
[ -x "$HOLDFASTD" ] && [ -f "$XKS_PLUGIN" ] || hf_skip "holdfastd or the aws-xks plugin not built"
[ -f "$TEST_PLUGIN" ] || hf_skip "$TEST_PLUGIN not built (make check builds it)"
hf_store_setup
. "${top_srcdir:-.}/tests/integration/shim-lib.sh"
shim_need

hf() { "$HF_CLI" "$@"; }
PY="python3 $top_srcdir/tests/integration/xks-body.py"

# The members' tokens in the key store's own SoftHSMv2 (the shim loads the same module, which
# the core has initialised for the root token already).
SOFTHSM2_CONF="$HOLDFAST_STATE_DIR/softhsm2.conf"
export SOFTHSM2_CONF
HF_POOL_PIN=pool-pin-4711
export HF_POOL_PIN
for t in a b c; do
    softhsm2-util --init-token --free --label "pool-$t" --pin "$HF_POOL_PIN" --so-pin so-pin-9999 \
        >/dev/null || hf_fail "softhsm2-util --init-token pool-$t"
    shim_copy "m$t"
    conf "$SHIM_COPY"
done
A="$HF_TMP/ma.so" B="$HF_TMP/mb.so" C="$HF_TMP/mc.so"
hf_expect_exit 0 hf pool add p1 --member "a,module=$A,token=pool-a,pin_env=HF_POOL_PIN" \
    --member "b,module=$B,token=pool-b,pin_env=HF_POOL_PIN"
hf_expect_exit 0 hf pool add p2 \
    --member "c,module=$C,token=pool-c,pin_env=HF_POOL_PIN,concurrency=1"
hf_expect_exit 0 hf key create kp --alg AES-256 --source pool:p1
hf_expect_exit 0 hf key create kt --alg AES-256 --source pool:p2
hf_expect_exit 0 hf key create hk
for l in kp kt; do hf_expect_exit 0 hf link add aws-xks "$l" "$l"; done
hf_expect_exit 0 hf link add aws-xks health hk
# Which member holds kp (a plain-mode key lives on the member that made it).
hf_expect_exit 0 hf --json key show kp
V1=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["versions"][0]["uuid"])' <"$HF_OUT")
DB="$HOLDFAST_STATE_DIR/holdfast.db"
[ -f "$DB" ] || DB=$(ls "$HOLDFAST_STATE_DIR"/*.db | head -n 1)
HOLDER=$(sqlite3 "$DB" "SELECT kek_label FROM key_versions WHERE uuid = '$V1'") ||
    hf_fail "sqlite3: kp's version"
HOLDER=${HOLDER#pool:p1/}
case "$HOLDER" in a) OTHER=b ;; b) OTHER=a ;; *) hf_fail "kp is on '$HOLDER'" ;; esac

AKID=AKIAIOSFODNN7EXAMPLE
SEC=FYtE5EFA5FT0mCc3DrGUe2sti527BitkQ0Zr9MO9fvE
P=$(hf_free_port)
URL="http://127.0.0.1:$P"
CONF="$HF_TMP/holdfastd.conf"
cat >"$CONF" <<EOF
$(hf_gateway_section aws-xks,test 32k "127.0.0.1:$P")
threads = 4

[plugin:aws-xks]
path = $XKS_PLUGIN

[plugin:test]
path = $TEST_PLUGIN

[test]
link_type = aws-xks

$(hf_xks_store health "$AKID:$SEC" kp,kt)
EOF
# Every health call a fresh answer: the test watches a member go and come back.
sed -i 's/^health_key = health$/health_key = health\nhealth_cache_seconds = 0/' "$CONF"
chmod 600 "$CONF"
hf_gateway_start "$URL" "$HOLDFASTD" -f -c "$CONF"

# xks PATH BODY [OUT]: CODE and the answer in OUT (default $HF_TMP/out.json).
xks() {
    _out=${3:-$HF_TMP/out.json}
    curl -sS -o "$_out" -w '%{http_code}' --aws-sigv4 "aws:amz:us-east-1:kms-xks-proxy" \
        --user "$AKID:$SEC" -H 'Content-Type: application/json' --data-binary "@$2" \
        "$URL$1" 2>>"$HF_TMP/curl.err" || echo "curl-exit-$?"
}
errname() { $PY get "$1" errorName; }
# tp KEY [OUT]: the test plugin's encrypt on KEY's aws-xks link; "CODE" and its error in OUT.
tp() {
    curl -sS -o "${2:-$HF_TMP/tp.json}" -w '%{http_code}' -X POST --data '{"plaintext":"AAEC"}' \
        "$URL/test/v1/links/$1/encrypt" 2>>"$HF_TMP/curl.err" || echo "curl-exit-$?"
}
tperr() { errname "$1"; }
$PY encrypt --pt SGVsbG8gV29ybGQh >"$HF_TMP/enc.json" || hf_fail "xks-body encrypt"
$PY health >"$HF_TMP/health.json" || hf_fail "xks-body health"

# fleet: "id=healthStatus" for each ekmFleetDetails entry, sorted.
fleet() {
    _c=$(xks /kms/xks/v1/health "$HF_TMP/health.json" "$HF_TMP/h.json")
    [ "$_c" = 200 ] || { cat "$HF_TMP/h.json"; hf_fail "health: HTTP $_c"; }
    python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
print(" ".join(sorted("%s=%s" % (e["id"], e["healthStatus"]) for e in d["ekmFleetDetails"])))' \
        "$HF_TMP/h.json"
}
metric() {
    curl -sS "$URL/metrics" >"$HF_TMP/metrics.txt" || hf_fail "GET /metrics"
    awk -v k="$1" '$1 == k { print $2 }' "$HF_TMP/metrics.txt"
}
# wait_for WHAT CMD WANT: up to 5 s for CMD's output to be WANT.
wait_for() {
    _i=0
    while [ "$($2)" != "$3" ]; do
        _i=$((_i + 1))
        [ "$_i" -lt 50 ] || hf_fail "$1: got '$($2)', want '$3'"
        sleep 0.1
    done
}

# ---- both members in service ----
check "$(xks /kms/xks/v1/keys/kp/encrypt "$HF_TMP/enc.json")" 200 "encrypt on kp"
f=$(fleet)
case "$f" in
*"p1/a=ACTIVE p1/b=ACTIVE p2/c=ACTIVE"*) ;;
*) cat "$HF_TMP/h.json"; hf_fail "health with every member in: $f" ;;
esac
grep -q '"model":"ma.so token pool-a"' "$HF_TMP/h.json" || { cat "$HF_TMP/h.json"; hf_fail "model"; }
check "$(metric "holdfast_pool_member_up{pool=\"p1\",member=\"$HOLDER\"}")" 1 "up before"
check "$(metric "holdfast_pool_member_calls_total{pool=\"p1\",member=\"$HOLDER\"}")" 1 \
    "calls: kp's encrypt ran on its member"
check "$(metric 'holdfast_pool_member_concurrency_limit{pool="p2",member="c"}')" 1 "c's limit"
check "$(metric 'holdfast_pool_queue_depth{pool="p1"}')" 0 "queue depth"
grep -q "^holdfast_pool_member_call_duration_seconds_count{pool=\"p1\",member=\"$HOLDER\"} 1$" \
    "$HF_TMP/metrics.txt" || hf_fail "no latency histogram for $HOLDER"
# The one call's time: more than nothing, less than the seconds a test allows it.
awk -v m="holdfast_pool_member_call_duration_seconds_sum{pool=\"p1\",member=\"$HOLDER\"}" \
    '$1 == m { found = 1; ok = $2 > 0 && $2 < 10 } END { exit !(found && ok) }' \
    "$HF_TMP/metrics.txt" || hf_fail "no latency sum for $HOLDER, or one out of range"

# ---- kp's member dead: unavailable, on every face ----
touch "$HF_TMP/m$HOLDER.so.dead"
sleep 0.3 # the shim looks at its dead file every 100 ms
code=$(xks /kms/xks/v1/keys/kp/encrypt "$HF_TMP/enc.json")
check "$code $(errname "$HF_TMP/out.json")" "500 InternalException" "encrypt on a dead member"
code=$(xks /kms/xks/v1/keys/kp/encrypt "$HF_TMP/enc.json")
check "$code $(errname "$HF_TMP/out.json")" "500 InternalException" "encrypt with its member out"
code=$(tp kp)
check "$code $(tperr "$HF_TMP/tp.json")" "503 TestUnavailable" "another API, its member out"
grep -q '"op":"encrypt".*"result":"0x30"' "$HOLDFAST_STATE_DIR/audit.log" ||
    { grep '"op":"encrypt"' "$HOLDFAST_STATE_DIR/audit.log" | tail -n 3; hf_fail "no audited unavailable encrypt"; }
f=$(fleet)
case "$f" in
*"p1/$HOLDER=UNAVAILABLE"*"p2/c=ACTIVE"*) ;;
*) cat "$HF_TMP/h.json"; hf_fail "health with $HOLDER dead: $f" ;;
esac
case "$f" in *"p1/$OTHER=ACTIVE"*) ;; *) hf_fail "health: $OTHER is not ACTIVE: $f" ;; esac
check "$(metric "holdfast_pool_member_up{pool=\"p1\",member=\"$HOLDER\"}")" 0 "up while dead"
check "$(metric "holdfast_pool_member_up{pool=\"p1\",member=\"$OTHER\"}")" 1 "the other is up"
[ "$(metric "holdfast_pool_member_failures_total{pool=\"p1\",member=\"$HOLDER\"}")" -ge 1 ] ||
    hf_fail "no failure counted on $HOLDER"
[ "$(metric 'holdfast_pool_unavailable_total{pool="p1"}')" -ge 1 ] ||
    hf_fail "no unavailable answer counted on p1"

# The CLI's own view: it opens the pool itself, so the dead member is out there too.
hf_expect_exit 0 hf pool show p1
grep -q "^queue: " "$HF_OUT" || { cat "$HF_OUT"; hf_fail "pool show: no queue line"; }
grep -q "^  $HOLDER  *out  *0/4 " "$HF_OUT" || { cat "$HF_OUT"; hf_fail "pool show: $HOLDER not out"; }
grep -q "^  $OTHER  *in  *0/4 " "$HF_OUT" || { cat "$HF_OUT"; hf_fail "pool show: $OTHER not in"; }
hf_expect_exit 0 hf --json pool show p1
check "$(python3 -c 'import json,sys
d = json.load(sys.stdin)
print(sorted((m["name"], m["healthy"], m["failovers"], len(m["latency_log2_us"])) for m in d["members"]), d["queue"]["max"])' <"$HF_OUT")" \
    "$(python3 -c "import sys; print(sorted([('$HOLDER', False, 0, 24), ('$OTHER', True, 0, 24)]), 256)")" \
    "pool show --json"
# [pools] in the config sets this process's queue: `pool show` reports it.
{ cat "$HOLDFAST_CONF"; printf '[pools]\nqueue_max = 5\nqueue_wait_ms = 300\n'; } >"$HF_TMP/pools.conf"
HOLDFAST_CONF=$HF_TMP/pools.conf hf_expect_exit 0 hf pool show p1
grep -q "^queue: .*(max 5)" "$HF_OUT" || { cat "$HF_OUT"; hf_fail "pool show: [pools] queue_max not used"; }

# ---- it comes back (the pool's probe): ACTIVE, up, served ----
rm -f "$HF_TMP/m$HOLDER.so.dead"
wait_for "up after the dead file went" \
    "metric holdfast_pool_member_up{pool=\"p1\",member=\"$HOLDER\"}" 1
f=$(fleet)
case "$f" in
*"p1/a=ACTIVE p1/b=ACTIVE p2/c=ACTIVE"*) ;;
*) cat "$HF_TMP/h.json"; hf_fail "health after the member came back: $f" ;;
esac
check "$(xks /kms/xks/v1/keys/kp/encrypt "$HF_TMP/enc.json")" 200 "encrypt after the member came back"

# ---- throttled: every slot busy and the wait over ----
check "$(xks /kms/xks/v1/keys/kt/encrypt "$HF_TMP/enc.json")" 200 "encrypt on kt (warms c's handle cache)"
conf "$C" "latency_us = 1500000"
sleep 0.3
# busy FIRST SECOND: FIRST's encrypt on kt (xks or tp), then 0.5 s later SECOND's while FIRST
# holds c's one slot; "CODE NAME" of each (NAME "-" for a 200). Whichever reaches the pool
# first is served: on a loaded machine that can be SECOND, so callers look at both.
call() { # API OUT: CODE and error name
    if [ "$1" = xks ]; then
        _c=$(xks /kms/xks/v1/keys/kt/encrypt "$HF_TMP/enc.json" "$2")
    else
        _c=$(tp kt "$2")
    fi
    [ "$_c" = 200 ] && echo "200 -" || echo "$_c $(errname "$2")"
}
busy() {
    call "$1" "$HF_TMP/b1.json" >"$HF_TMP/b1.txt" &
    _b1=$!
    sleep 0.5
    call "$2" "$HF_TMP/b2.json" >"$HF_TMP/b2.txt"
    wait "$_b1"
    echo "$(cat "$HF_TMP/b1.txt") $(cat "$HF_TMP/b2.txt")"
}
THROTTLED=0
count429() { THROTTLED=$((THROTTLED + $(echo "$1" | grep -o 429 | wc -l))); }
got=$(busy xks xks)
count429 "$got"
case "$got" in
"200 - 429 ThrottlingException" | "429 ThrottlingException 200 -") ;;
*) hf_fail "two encrypts on a one-slot member at 1.5 s per call: $got" ;;
esac
# Saturated, looked at from outside while it lasts: one call in flight on c, one in p2's queue;
# the health answer calls c DEGRADED (serving, at its limit, callers waiting).
call xks "$HF_TMP/s1.json" >"$HF_TMP/s1.txt" &
s1=$!
sleep 0.5
call xks "$HF_TMP/s2.json" >"$HF_TMP/s2.txt" &
s2=$!
sleep 0.5
inflight=$(metric 'holdfast_pool_member_in_flight{pool="p2",member="c"}')
depth=$(awk '$1 == "holdfast_pool_queue_depth{pool=\"p2\"}" { print $2 }' "$HF_TMP/metrics.txt")
f=$(fleet)
wait "$s1" "$s2"
count429 "$(cat "$HF_TMP/s1.txt") $(cat "$HF_TMP/s2.txt")"
check "$inflight $depth" "1 1" "c's calls in flight and p2's queue depth while saturated"
case "$f" in *"p2/c=DEGRADED"*) ;; *) cat "$HF_TMP/h.json"; hf_fail "health while saturated: $f" ;; esac
# The test plugin behind the same busy member: its own 429 (a few tries, should the order turn).
i=0
while got=$(busy xks tp) && count429 "$got" && [ "$got" != "200 - 429 TestThrottled" ]; do
    i=$((i + 1))
    [ "$i" -lt 3 ] || hf_fail "the test plugin behind a busy member: $got"
done
conf "$C"
grep -q '"op":"encrypt".*"result":"0x200"' "$HOLDFAST_STATE_DIR/audit.log" ||
    { grep '"op":"encrypt"' "$HOLDFAST_STATE_DIR/audit.log" | tail -n 3; hf_fail "no audited throttled encrypt"; }
check "$(metric 'holdfast_pool_throttled_total{pool="p2"}')" "$THROTTLED" "throttled counted"
[ "$(metric 'holdfast_requests_total{api="aws-xks",operation="encrypt",status="429"}')" -ge 1 ] ||
    hf_fail "no 429 in the request metrics"
hf_gateway_stop || true
exit 0
