#!/bin/sh
# The HSM pool's failover against real failing HSMs (issue 14, must-show 1 at the pool layer).
# Two members under steady load (pool-failover: AES-ECB through hf_pool_run, every answer checked
# against OpenSSL): member A is a network HSM (p11-kit server over SoftHSMv2 token "pool A",
# reached through a shim copy over a copy of p11-kit-client.so), member B is SoftHSMv2 direct.
# Run 1: A's server and its p11-kit-remote children are killed at a third of the run and started
# again at two thirds: zero failed calls, A failed over, and A answers again after the restart
# (the probe re-initialises its module: a connected p11-kit-client never heals by itself).
# Run 2: the shim fails 5% of A's calls for the whole run: zero failed calls.
# HF_POOL_FAILOVER_SECONDS=30 gives the issue's 30 s run (kill at 10 s, back at 20 s); the
# default, 9 s, keeps `make check` short.
. "${top_srcdir:-.}/tests/integration/lib.sh"
. "${top_srcdir:-.}/tests/integration/shim-lib.sh"

shim_need
p11kit_need
PF="$top_builddir/tests/integration/pool-failover"
[ -x "$PF" ] || hf_skip "$PF not built (make check builds it)"
hf_tmpdir
T=$HF_TMP

D=${HF_POOL_FAILOVER_SECONDS:-9}
THREADS=${HF_POOL_FAILOVER_THREADS:-8}
KILL=$((D / 3))
BACK=$((2 * D / 3))
shim_tokens "pool A" "pool B"
SOCK="$T/a.sock"
hf_on_exit "server_stop a"
server_start a "$SOCK" "pool%20A"
net_copy a "$SOCK"
A=$SHIM_COPY
# a_conf LINE...: A's shim config, always over the p11-kit-client copy and A's socket.
a_conf() {
    { printf 'module = %s\nenv = P11_KIT_SERVER_ADDRESS=unix:path=%s\n' "$T/a-client.so" "$SOCK"
        printf '%s\n' "$@"; } >"$A.conf.new" && mv "$A.conf.new" "$A.conf"
}

# start NAME: pool-failover in the background (PF_PID), output in $T/NAME.out and NAME.err;
# returns once the load has started (the program prints its first line then).
start() { # NAME A_CONCURRENCY
    timeout -k 5 $((D + 120)) "$PF" --threads "$THREADS" --seconds "$D" --phases "$KILL,$BACK" \
        --member a "$A" "pool A" 1234 "$2" --member b "$SOFTHSM_MODULE" "pool B" 1234 4 \
        >"$T/$1.out" 2>"$T/$1.err" &
    PF_PID=$!
    _i=0
    until grep -q '^pool-failover:' "$T/$1.out"; do
        kill -0 "$PF_PID" 2>/dev/null || hf_fail "$1: pool-failover ended early: $(cat "$T/$1.err")"
        _i=$((_i + 1))
        [ "$_i" -lt 300 ] || hf_fail "$1: the load did not start within 30 s"
        sleep 0.1
    done
}
# finish NAME: waits for it, shows its report, fails unless it exited 0 with zero failed calls.
finish() {
    wait "$PF_PID"
    _rc=$?
    cat "$T/$1.out"
    [ "$_rc" -eq 0 ] || hf_fail "$1: pool-failover exited $_rc: $(cat "$T/$1.err")"
    grep '^phase ' "$T/$1.out" | grep -qv ' failures 0 ' && hf_fail "$1: a phase had failed calls"
    check "$(grep -c '^phase ' "$T/$1.out")" 3 "$1: phase lines"
}
# member NAME M FIELD: FIELD of member M's status line.
member() { sed -n "s/^member $2: .* $3 \([^ ]*\).*/\1/p" "$T/$1.out"; }
# answered NAME PHASE M: calls of PHASE that member M answered.
answered() { sed -n "s/^phase $2 .* $3=\([0-9]*\).*/\1/p" "$T/$1.out"; }

# Run 1: A's HSM dies at KILL s and comes back at BACK s.
echo "run 1: $D s, $THREADS threads; member a's server killed at $KILL s, back at $BACK s"
# Member a takes one call at a time here. Debian 12's p11-kit-client (0.24) shares one connection
# between threads, and when its server dies under two calls at once, the one waiting for the
# other's read can wait for ever (seen: 2 threads in its pthread_cond_wait, no reader left, about
# 1 run in 10). The pool has no per-call deadline yet (issue 14) to take such a member out; with
# one call in flight the client fails every call with CKR_DEVICE_ERROR, as a dead HSM should.
start kill 1
sleep "$KILL"
server_stop a
sleep $((BACK - KILL))
server_start a "$SOCK" "pool%20A"
finish kill
[ "$(member kill a failovers)" -gt 0 ] || hf_fail "run 1: member a never failed over"
check "$(member kill a healthy)" yes "run 1: member a healthy at the end"
[ "$(answered kill 1 a)" -gt 0 ] || hf_fail "run 1: member a answered nothing before the kill"
[ "$(answered kill 3 a)" -gt 0 ] || hf_fail "run 1: member a answered nothing after the restart"

# Run 2: the shim fails 5% of A's calls, from as soon as the load runs (the shim reads its
# config again within 0.1 s) to the end; the test key already exists on both tokens.
echo "run 2: $D s, $THREADS threads; the shim fails 5% of member a's calls"
start flaky 4
a_conf "fail_permille = 50"
sleep "$D"
finish flaky
injected=$(sed -n 's/^injected_random = //p' "$A.stats")
echo "run 2: the shim injected $injected failures"
[ "${injected:-0}" -gt 0 ] || hf_fail "run 2: the shim injected no failure"
[ "$(member flaky a failovers)" -gt 0 ] || hf_fail "run 2: member a never failed over"
[ "$(answered flaky 3 a)" -gt 0 ] || hf_fail "run 2: member a answered nothing in the last phase"
echo "pool-failover: all checks passed"
