#!/bin/sh
# `holdfast pool` end to end (issue 14): a two-member pool on two SoftHSMv2 tokens made with
# softhsm2-util, one member's PIN in a file and the other's in the environment; add, list,
# show with live status, probe; a wrong PIN fails that member alone; a group-readable PIN file
# is refused; a member's module path edited in the store with sqlite3 makes show and probe
# refuse the pool (policy MAC) until it is put back; remove; and the audit log still verifies.
. "${top_srcdir:-.}/tests/integration/lib.sh"

command -v softhsm2-util >/dev/null || hf_skip "softhsm2-util not installed"
command -v sqlite3 >/dev/null || hf_skip "sqlite3 not installed"
command -v python3 >/dev/null || hf_skip "python3 not installed (parses --json output)"
hf_store_setup

hf() { "$HF_CLI" "$@"; }
json() { python3 -c 'import json, sys; d = json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }
expect_err() { grep -qF -- "$1" "$HF_ERR" || { cat "$HF_ERR"; hf_fail "stderr lacks '$1'"; }; }
expect_out() { grep -qF -- "$1" "$HF_OUT" || { cat "$HF_OUT"; hf_fail "stdout lacks '$1'"; }; }
# no_pins: neither PIN appears in what the last command printed.
no_pins() {
    for _p in "$pin_a" "$pin_b"; do
        grep -qF -- "$_p" "$HF_OUT" "$HF_ERR" && hf_fail "a PIN was printed"
    done
    return 0
}

# The members' tokens live in the key store's own SoftHSMv2 (one SoftHSMv2 per process reads
# one SOFTHSM2_CONF), as two more tokens beside the root KEK's.
SOFTHSM2_CONF="$HOLDFAST_STATE_DIR/softhsm2.conf"
[ -f "$SOFTHSM2_CONF" ] || hf_fail "no $SOFTHSM2_CONF after init"
export SOFTHSM2_CONF
pin_a=pool-a-pin-4711
pin_b=pool-b-pin-0815
for t in a b; do
    eval "pin=\$pin_$t"
    softhsm2-util --init-token --free --label "pool-$t" --pin "$pin" --so-pin so-pin-9999 \
        >/dev/null || hf_fail "softhsm2-util --init-token pool-$t"
done
printf '%s\n' "$pin_a" >"$HF_TMP/a.pin"
chmod 600 "$HF_TMP/a.pin"
HF_POOL_B_PIN=$pin_b
export HF_POOL_B_PIN
mod=$SOFTHSM_MODULE
member_a="a,module=$mod,token=pool-a,pin_file=$HF_TMP/a.pin"
member_b="b,module=$mod,token=pool-b,pin_env=HF_POOL_B_PIN,concurrency=2"

# ---- usage errors: exit 2, nothing stored ----
hf_expect_exit 2 hf pool add p1 --member "a,module=libsofthsm2.so,token=pool-a,pin_file=$HF_TMP/a.pin"
expect_err "module path must be absolute"
hf_expect_exit 2 hf pool add p1 --member "a,module=$mod,token=pool-a,pin=$pin_a"
expect_err "never given on the command line"
hf_expect_exit 2 hf pool add p1 --member "a,module=$mod,token=pool-a"
expect_err "exactly one PIN source"
hf_expect_exit 2 hf pool add p1 --mode mirror --member "$member_a"
hf_expect_exit 2 hf pool add p1
expect_err "at least one --member"
hf_expect_exit 2 hf pool add p1 --member "$member_a" --member "$member_a"
expect_err "given twice"
hf_expect_exit 0 hf pool list
[ "$(wc -l <"$HF_OUT")" -le 1 ] || hf_fail "a refused pool was stored: $(cat "$HF_OUT")"

# ---- add, list, show, probe ----
hf_expect_exit 0 hf pool add p1 --mode clone --member "$member_a" --member "$member_b"
expect_out "added pool 'p1' (clone, 2 members)"
hf_expect_exit 1 hf pool add p1 --member "$member_a"
expect_err "pool 'p1' already exists"
hf_expect_exit 0 hf pool list
grep -q "^p1  *clone  *2 " "$HF_OUT" || { cat "$HF_OUT"; hf_fail "pool list lacks p1"; }
hf_expect_exit 0 hf pool show p1
expect_out "mode:    clone"
grep -q "^  a  *$mod  *pool-a  *file:$HF_TMP/a.pin  *4  *yes " "$HF_OUT" ||
    { cat "$HF_OUT"; hf_fail "pool show: member a"; }
grep -q "^  b  *$mod  *pool-b  *env:HF_POOL_B_PIN  *2  *yes " "$HF_OUT" ||
    { cat "$HF_OUT"; hf_fail "pool show: member b"; }
no_pins
hf_expect_exit 0 hf --json pool show p1
# Calls are not 0: opening a clone pool puts its replication key on both members and re-syncs them.
check "$(json '[(m["name"], m["healthy"], m["concurrency"], m["calls"] > 0) for m in d["members"]]' <"$HF_OUT")" \
    "[('a', True, 4, True), ('b', True, 2, True)]" "pool show --json"
hf_expect_exit 0 hf pool probe p1
check "$(cat "$HF_OUT")" "a ok
b ok" "probe of a healthy pool"
no_pins

# ---- one member failing: probe names it, the other stays ok ----
printf 'wrong-pin-1234\n' >"$HF_TMP/a.pin"
hf_expect_exit 1 hf pool probe p1
grep -q "^a failed: " "$HF_OUT" || { cat "$HF_OUT"; hf_fail "probe: a did not fail"; }
grep -q "^b ok$" "$HF_OUT" || { cat "$HF_OUT"; hf_fail "probe: b is not ok"; }
hf_expect_exit 0 hf pool show p1
expect_out "live status: unavailable on this node"
printf '%s\n' "$pin_a" >"$HF_TMP/a.pin"
# A group-readable PIN file is refused (and named), whatever it holds.
chmod 640 "$HF_TMP/a.pin"
hf_expect_exit 1 hf pool probe p1
grep -q "^a failed: .*group-readable" "$HF_OUT" || { cat "$HF_OUT"; hf_fail "probe: group-readable a"; }
grep -q "^b ok$" "$HF_OUT" || hf_fail "probe: b is not ok beside a refused PIN file"
no_pins
chmod 600 "$HF_TMP/a.pin"
# A missing environment variable likewise.
HF_POOL_B_PIN= hf_expect_exit 1 hf pool probe p1
grep -q "^b failed: .*HF_POOL_B_PIN is not set" "$HF_OUT" || { cat "$HF_OUT"; hf_fail "probe: b unset"; }
hf_expect_exit 0 hf pool probe p1

# ---- the store edited behind Holdfast's back: refused until put back ----
db="$HOLDFAST_STATE_DIR/holdfast.db"
sqlite3 "$db" "UPDATE pool_members SET module_path = '$HF_TMP/evil.so' WHERE pool = 'p1' AND name = 'b'" ||
    hf_fail "sqlite3 update"
hf_expect_exit 1 hf pool show p1
expect_err "fails its policy MAC"
grep -qF "evil.so" "$HF_OUT" && hf_fail "show printed the edited member"
hf_expect_exit 1 hf pool probe p1
expect_err "fails its policy MAC"
hf_expect_exit 0 hf pool list
grep -q "^p1 " "$HF_OUT" && hf_fail "pool list shows an edited pool"
sqlite3 "$db" "UPDATE pool_members SET module_path = '$mod' WHERE pool = 'p1' AND name = 'b'" ||
    hf_fail "sqlite3 update back"
hf_expect_exit 0 hf pool probe p1

# ---- remove ----
hf_expect_exit 0 hf pool remove p1
expect_out "removed pool 'p1'"
hf_expect_exit 3 hf pool remove p1
hf_expect_exit 3 hf pool show p1
hf_expect_exit 0 hf --json pool list
check "$(cat "$HF_OUT")" "[]" "pool list after remove"

# ---- every call was recorded, and the log verifies ----
for op in pool.add pool.list pool.get pool.open pool.probe pool.remove policy.check; do
    grep -q "\"op\":\"$op\"" "$HOLDFAST_STATE_DIR/audit.log" || hf_fail "no $op record"
done
grep -qF -e "$pin_a" -e "$pin_b" "$HOLDFAST_STATE_DIR/audit.log" && hf_fail "a PIN reached the audit log"
hf_expect_exit 0 hf audit verify
exit 0
