#!/bin/sh
# Issue 14, must-show 4: the HSM pool holds no lock across a backend call and its threads share
# nothing unlocked. Three CUnit suites under helgrind, which must report no data race, lock-order
# problem or misuse of the pthread API, and whose assertions must all pass there too:
# - test-pool: the executor (pool.c) with slow, failing and timed-out members, callers queued
#   behind full members, the probe. Its cases already fail if a lock were held across a backend
#   call (a call on one member while another sits in a slow one; a status read meanwhile);
#   helgrind adds that nothing they share is touched without its lock.
# - test-pool-repl: two cores racing to make one pool's replication key.
# - test-gateway-hsm-workers: the gateway's worker sets that hand requests to the pools.
# About 80 s of two cores; skipped in sanitizer builds, as concurrency.sh's helgrind pass is.
. "${top_srcdir:-.}/tests/integration/lib.sh"

[ -z "$HF_SANITIZED" ] || hf_skip "sanitizer build: helgrind cannot run it"
command -v valgrind >/dev/null || hf_skip "valgrind is not installed"

for t in test-pool test-pool-repl test-gateway-hsm-workers; do
    log="$HF_TMP/$t.helgrind.log"
    "$top_builddir/libtool" --mode=execute valgrind --tool=helgrind --error-exitcode=3 \
        --suppressions="$top_srcdir/tests/valgrind.supp" \
        --suppressions="$top_srcdir/tests/helgrind.supp" \
        "$top_builddir/tests/unit/$t" >"$log" 2>&1
    rc=$?
    # 3: helgrind reported something; 1: an assertion failed (the harness's exit).
    [ "$rc" -eq 0 ] || { tail -n 60 "$log"; hf_fail "$t under helgrind: exit $rc"; }
    echo "pool-helgrind: $t: $(grep -E '^ +asserts' "$log" | awk '{ print $4 }') assertions passed, $(grep -o 'ERROR SUMMARY: [0-9]* errors' "$log")"
done
echo "pool-helgrind: ok"
