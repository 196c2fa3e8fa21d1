#!/bin/sh
# Issue 15, must-show 2: a loopback cluster, the two-node sample of conf/cluster/ (its files,
# ports and paths made this test's) on a PostgreSQL store of the test's own (pg-lib.sh) and one
# SoftHSMv2 token made by `holdfast init`, behind its HAProxy, TLS passed through and client
# certificates required by the nodes, under hf-load XKS encrypt for D seconds:
#   D/4  node 1 SIGKILLed;  D/2  node 1 started again;  3D/4  node 2 sent SIGTERM (it drains).
# Asserts:
#   - no failed request at the client, which sends a request again when its connection failed
#     or ended before any byte of its reply, up to twice (hf-load --retries 2: three attempts,
#     as the AWS SDKs' standard retry mode); at most two resends per VU: a connection HAProxy
#     passed to node 1 in the instant it died can fail too, before HAProxy's checks mark it down;
#   - every kmsRequestId the client saw answered (hf-load --ids) is in node 1's or node 2's
#     audit log, and `holdfast audit verify` passes on each node's log, each against its own
#     node's checkpoint in the shared store (node 1's with --allow-torn-tail: its kill may tear
#     the record being written; what it wrote after its last checkpoint before the kill is
#     reported unanchored), both in one run (--file NODE=PATH each), and fails on node 1's log
#     taken for node 2's;
#   - node 1 serves again after its restart; node 2 exits 0 after draining at least drain_ms;
#     a second SIGTERM (node 1, at the end) stops at once;
#   - during the drain node 2's /healthz answers 503 "draining" while an XKS encrypt sent
#     straight to node 2 answers 200.
#
# Why the client must resend what was in flight on the killed node: HAProxy passes TLS through
# (TCP mode), so it never sees a request, only a connection; it retries (and redispatches to the
# other node) a connection a node refuses, which covers every connection made after the kill,
# but it cannot send again what it already passed to node 1: that would need HTTP mode's L7
# retries, which would end TLS at HAProxy, where the nodes no longer see the client's
# certificate. So each VU whose connection was on node 1 at the kill sees that connection end
# under its request, and sends it again (KMS and the SDKs do the same); the drain (SIGTERM)
# ends no connection under a request. A request node 1 had answered but whose reply the kill
# cut is audited in node 1's log and again, resent, in node 2's: an id may be in both.
#
# Then the kill switch across nodes (must-show 3): ROUNDS blocks and unblocks through node 2's
# CLI, each timed at node 1 (killswitch.py), p99 of the blocks within the design's 1 s bar.
#
# HF_CLUSTER_SECONDS (24), HF_CLUSTER_VUS (8), HF_CLUSTER_KILLSWITCH_ROUNDS (100).
. "${top_srcdir:-.}/tests/integration/lib.sh"
. "${top_srcdir:-.}/tests/integration/cluster-lib.sh"

cluster_setup
D=${HF_CLUSTER_SECONDS:-24}
[ "$D" -ge 16 ] || D=16
VUS=${HF_CLUSTER_VUS:-8}
KILL=$((D / 4))
BACK=$((D / 2))
DRAIN=$((3 * D / 4))
node_start 1
node_start 2
haproxy_start

at() { # SECONDS: sleeps until that many seconds after the load started
    _w=$(($1 * 1000 - ($(hf_now_ms) - t0)))
    [ "$_w" -le 0 ] || sleep "$(awk -v ms="$_w" 'BEGIN { printf "%.3f", ms / 1000 }')"
}
records() { grep -ao '{"seq":' "$T/state/audit-node$1.log" 2>/dev/null | wc -l; }

echo "cluster: $D s of xks-encrypt through HAProxy, $VUS VUs; node 1 killed at $KILL s and" \
    "back at $BACK s, node 2 drained at $DRAIN s"
t0=$(hf_now_ms)
"$HF_LOAD" --url "https://127.0.0.1:$PH" --api xks-encrypt --key-id k --vus "$VUS" \
    --ramp-up 0 --steady "${D}s" --ramp-down 0 --timeout 5s --retries 2 --no-progress --quiet $TLS \
    --intervals "$((KILL - 2)),$((KILL + 2)),$BACK,$DRAIN" --csv "$T/load.csv" --ids "$T/ids" \
    >"$T/load.out" 2>"$T/load.err" &
LOAD_PID=$!

at "$KILL"
kill -KILL "$PID1"
wait "$PID1" 2>/dev/null
PID1=
at "$BACK"
node_start 1
n1_back=$(records 1)

at "$DRAIN"
t_term=$(hf_now_ms)
kill -TERM "$PID2"
sleep 0.3
# Straight to node 2, inside its drain: down for the balancer, serving for the client.
check "$(healthz 2)" '{"status":"draining"} 503' "node 2's /healthz while it drains"
python3 "$top_srcdir/tests/integration/xks-body.py" encrypt --pt SGVsbG8gV29ybGQh >"$T/enc.json" ||
    hf_fail "xks-body encrypt"
code=$(curl -s $TLS -o "$T/direct.out" -w '%{http_code}' --aws-sigv4 "aws:amz:us-east-1:kms-xks-proxy" \
    --user "$AKID:$SEC" -H 'Content-Type: application/json' --data-binary "@$T/enc.json" \
    "https://127.0.0.1:$P2/kms/xks/v1/keys/k/encrypt")
check "$code" 200 "an XKS encrypt sent straight to node 2 while it drains"
kill -HUP "$PID2" # ignored: a reload would tell systemd READY again
node_reap 2
check "$node_rc" 0 "node 2's exit status after its drain"
[ "$node_ms" -ge 2000 ] || hf_fail "node 2 stopped $node_ms ms after SIGTERM: no drain"
grep -q '"draining on signal 15' "$T/node2.log" || hf_fail "node 2 logged no start of its drain"
grep -q '"reload ignored: draining' "$T/node2.log" || hf_fail "node 2 reloaded while draining"
echo "cluster: node 2 exited 0, $node_ms ms after SIGTERM (drain_ms 2000)"

wait "$LOAD_PID"
load_rc=$?
cat "$T/load.out"
[ ! -s "$T/load.err" ] || cat "$T/load.err"

# ---- the client's account ----
check "$(grep -c '^interval ' "$T/load.out")" 5 "interval lines"
errors=$(awk -F, 'NR == 2 { print $22 }' "$T/load.csv")
ops=$(awk -F, 'NR == 2 { print $11 }' "$T/load.csv")
# "interval K FROM-TOs ops N ops/s R errors E ...": N is $5, E $9.
retries=$(sed -n 's/^ *retries at [0-9]* VUs: \([0-9]*\).*/\1/p' "$T/load.out")
retries=${retries:-0}
echo "cluster: $ops requests answered, $errors failed, $retries sent again after node 1's kill"
check "$errors" 0 "failed requests at the client"
[ "$retries" -le $((2 * VUS)) ] || hf_fail "$retries requests sent again: more than two per VU"
[ "$(wc -l <"$T/ids")" -ge "$ops" ] || hf_fail "hf-load --ids wrote fewer ids than answers"
awk '$1 == "interval" && $5 == 0 { exit 1 }' "$T/load.out" || hf_fail "a slice served nothing"
[ "$load_rc" -eq 0 ] || [ "$errors" -gt 0 ] || hf_fail "hf-load exited $load_rc"

# ---- the nodes' account ----
[ "$(records 1)" -gt "$n1_back" ] || hf_fail "node 1 served nothing after its restart"
# The ids each node's log has (a record is whole before its answer goes, so a torn one's id is
# not among the answered), and those the client saw answered: in one log each, none in both.
audited() { grep -aho '"request_id":"[^"]*"' "$T/state/audit-node$1.log" | sed 's/.*:"//; s/"$//'; }
export LC_ALL=C
sort -u "$T/ids" >"$T/ids.client"
audited 1 | sort -u >"$T/ids.1"
audited 2 | sort -u >"$T/ids.2"
in1=$(comm -12 "$T/ids.client" "$T/ids.1" | wc -l)
in2=$(comm -12 "$T/ids.client" "$T/ids.2" | wc -l)
missing=$(sort -mu "$T/ids.1" "$T/ids.2" | comm -23 "$T/ids.client" - | wc -l)
both=$(comm -12 "$T/ids.1" "$T/ids.2" | comm -12 "$T/ids.client" - | wc -l)
echo "cluster: $(wc -l <"$T/ids.client") ids answered; node 1 audited $in1 of them, node 2 $in2;" \
    "$missing missing, $both in both"
[ "$missing" -eq 0 ] && [ -s "$T/ids.client" ] ||
    hf_fail "not every answered kmsRequestId is in a node's audit log"
[ "$both" -le "$retries" ] || hf_fail "$both ids in both logs, more than the $retries resent"
# ---- the kill switch across nodes (must-show 3) ----
# Blocks and unblocks through node 2's CLI (its config: the store every node shares), timed at
# node 1 by a client calling it back to back: NOTIFY brings the change, the cache bound
# (HF_LINK_CACHE_MS, 500 ms) is only the fallback. The design's bar is 1 s; the issue's
# target, 100 ms at p99, is reported.
ROUNDS=${HF_CLUSTER_KILLSWITCH_ROUNDS:-100}
python3 "$top_srcdir/tests/integration/killswitch.py" --rounds "$ROUNDS" --port "$P1" \
    --cacert "$T/pki/ca.pem" --client-cert "$T/pki/client.pem" --client-key "$T/pki/client.key" \
    --akid "$AKID" --secret "$SEC" --key k -- env HOLDFAST_CONF="$T/holdfast-node2.conf" "$HF_CLI" \
    >"$T/killswitch.out" || hf_fail "the kill switch across nodes: $(cat "$T/killswitch.out")"
echo "kill switch, node 2's CLI to node 1: $(cat "$T/killswitch.out")"
p99=$(sed -n 's/.* block_p99_ms=\([0-9.]*\).*/\1/p' "$T/killswitch.out")
awk -v v="$p99" 'BEGIN { exit !(v <= 1000) }' || hf_fail "a block took $p99 ms at p99 to reach node 1 (bar: 1 s)"

# A second SIGTERM cuts the drain short.
t_term=$(hf_now_ms)
kill -TERM "$PID1"
sleep 0.2
kill -TERM "$PID1"
node_reap 1
check "$node_rc" 0 "node 1's exit status after two SIGTERMs"
[ "$node_ms" -lt 1500 ] || hf_fail "node 1 took $node_ms ms to stop on a second SIGTERM"
grep -q '"stopping on signal 15' "$T/node1.log" || hf_fail "node 1 logged no stop on signal 15"
echo "cluster: node 1 stopped $node_ms ms after a SIGTERM and a second one 200 ms later"

# Both nodes' logs in one run, each anchored by its own node's checkpoint in the shared store.
# Node 1's log may end a stream with the record its kill tore; node 2 stopped cleanly.
L1=$T/state/audit-node1.log
L2=$T/state/audit-node2.log
hf_expect_exit 0 "$HF_CLI" audit verify --allow-torn-tail --file "node1=$L1" --file "node2=$L2"
cat "$HF_OUT"
check "$(grep -c '^audit log .*: ok,' "$HF_OUT")" 2 "logs verified"
sed -n "\|^audit log $L2:|,\|^audit log |p" "$HF_OUT" | grep -q '^note: .*torn' &&
    hf_fail "node 2's log has a torn record: it stopped cleanly"
# A log checked against another node's checkpoint is not that node's: it fails.
hf_expect_exit 5 "$HF_CLI" audit verify --allow-torn-tail --file "node2=$L1"
echo "cluster: all checks passed"
