#!/bin/sh
# Issue 14: the root KEK in a pool, through the real programs. The root ([hsm] and [hsm.b]) is
# two SoftHSMv2 token directories holding the same keys, as a clone makes them: b's directory is
# a copy of [hsm]'s, served by a copy of the SoftHSMv2 module (one instance per module file in a
# process, each reading its own SOFTHSM2_CONF), and each member sits behind a copy of the fault
# shim whose dead file makes it answer CKR_DEVICE_ERROR to everything (tests/shim/README.md).
#
# 1. `holdfast init` with a member whose token lacks the keys says to clone [hsm]'s token to it,
#    and `holdfast root status` keeps it out; once cloned it holds the same keys.
# 2. A member with another KEK (another store's token) is refused, named in the log, also when
#    [hsm] is down at open and it is listed first (init stored [hsm]'s key check values as the
#    reference); and init refuses to make a KEK on a fresh [hsm] while a member holds one.
# 3. holdfastd under hf-load XKS encrypt on a local key for D seconds; member hsm dies at D/3
#    and comes back at 2D/3. While it is down a key is created and another rotated (root wraps
#    in the CLI), each used through XKS at once (root unwraps and policy MACs in holdfastd), and
#    the audit checkpoints go on (root HMACs). Zero failed requests; the member is back in
#    service in /metrics; with b dead afterwards, hsm alone unwraps what b wrapped; the audit
#    log verifies.
#
# HF_ROOT_POOL_SECONDS (12), HF_ROOT_POOL_VUS (4).
. "${top_srcdir:-.}/tests/integration/lib.sh"
. "${top_srcdir:-.}/tests/integration/shim-lib.sh"

shim_need
hf_xks_need
hf_load_need
hf_store_setup
T=$HF_TMP
S=$HOLDFAST_STATE_DIR
D=${HF_ROOT_POOL_SECONDS:-12}
VUS=${HF_ROOT_POOL_VUS:-4}
DOWN=$((D / 3))
BACK=$((2 * D / 3))
hf() { "$HF_CLI" "$@"; }

# member NAME TOKENDIR: a shim copy $T/NAME.so over its own SoftHSMv2 (a copy of the module) that
# reads TOKENDIR; the real module for hsm, whose directory is the store's.
member() {
    printf 'directories.tokendir = %s\nobjectstore.backend = file\nlog.level = ERROR\n' "$2" \
        >"$T/softhsm2-$1.conf"
    _real=$SOFTHSM_MODULE
    if [ "$1" != hsm ]; then
        _real="$T/softhsm-$1.so"
        cp "$SOFTHSM_MODULE" "$_real" || hf_fail "copying $SOFTHSM_MODULE"
    fi
    shim_copy "$1"
    printf 'module = %s\ndead_file = %s.dead\nenv = SOFTHSM2_CONF=%s\n' "$_real" "$SHIM_COPY" \
        "$T/softhsm2-$1.conf" >"$SHIM_COPY.conf"
}
# conf_write [SECTIONS...]: the store's config with [hsm] behind its shim, then SECTIONS.
conf_write() {
    { printf '[holdfast]\nstate_dir = %s\n[hsm]\nmodule = %s\nsofthsm2_conf = %s\n' "$S" \
        "$T/hsm.so" "$S/softhsm2.conf"
        printf '%s\n' "$@"; } >"$HOLDFAST_CONF"
}
die() { : >"$T/$1.so.dead"; sleep 0.3; }
revive() { rm -f "$T/$1.so.dead"; sleep 0.3; }
# keys_of NAME: the "check" of member NAME in `holdfast root status --json`.
keys_of() {
    "$HF_CLI" --json root status 2>/dev/null | python3 -c '
import json, sys
for m in json.load(sys.stdin)["members"]:
    if m["name"] == sys.argv[1]: print(m["check"], "up" if m["healthy"] else "down")' "$1"
}

# Before any test, the state as hf_store_setup left it: [hsm] alone.
member hsm "$S/tokens"
mkdir -p "$T/tokens-b"
member b "$T/tokens-b"
conf_write
hf_expect_exit 0 hf root status
grep -q "root: token 'holdfast' alone" "$HF_OUT" || hf_fail "root status of [hsm] alone: $(cat "$HF_OUT")"

# ---- 1. a member whose token lacks the keys, then its clone ----
SOFTHSM2_CONF="$T/softhsm2-b.conf" softhsm2-util --init-token --free --label holdfast \
    --pin "$(cat "$S/hsm.pin")" --so-pin so-pin-9999 >/dev/null || hf_fail "b's empty token"
conf_write '[hsm.b]' "module = $T/b.so"
hf_expect_exit 0 hf init
grep -q 'lacks-keys.*clone the token of \[hsm\] to it' "$HF_OUT" ||
    hf_fail "init did not say to clone [hsm] to b: $(cat "$HF_OUT")"
grep -q "SoftHSMv2: with no Holdfast process running, copy the directory under $S/tokens" "$HF_OUT" ||
    hf_fail "init gave no SoftHSMv2 cloning advice: $(cat "$HF_OUT")"
check "$(keys_of b)" "lacks-keys down" "b before its clone"
check "$(keys_of hsm)" "same-keys up" "hsm before b's clone"
# The clone: [hsm]'s token directory, as the vendor's cloning would carry it.
rm -rf "$T/tokens-b"
cp -a "$S/tokens" "$T/tokens-b" || hf_fail "cloning [hsm]'s token directory"
check "$(keys_of b)" "same-keys up" "b once cloned"
hf_expect_exit 0 hf init
grep -q 'lacks-keys' "$HF_OUT" && hf_fail "init still finds b lacking keys: $(cat "$HF_OUT")"

# ---- 2. another store's token, with a KEK of its own ----
O=$T/other
mkdir -p "$O"
printf '[holdfast]\nstate_dir = %s\n' "$O/state" >"$O/holdfast.conf"
HOLDFAST_CONF="$O/holdfast.conf" "$HF_CLI" init >"$O/init.out" 2>&1 ||
    { cat "$O/init.out"; hf_fail "init of the other store"; }
member c "$O/state/tokens"
conf_write '[hsm.b]' "module = $T/b.so" '[hsm.c]' "module = $T/c.so" "pin_file = $O/state/hsm.pin"
hf_expect_exit 0 hf root status
check "$(keys_of c)" "other-keys down" "c, another store's token"
grep -q "root: member c refused, kept out of service: its key 'holdfast-root-kek' differs from the reference stored by \`holdfast init\`" \
    "$HF_ERR" || hf_fail "no log line refusing c: $(cat "$HF_ERR")"
grep -q "reference: stored" "$HF_OUT" || hf_fail "root status: no stored reference: $(cat "$HF_OUT")"
# [hsm] down at open and c listed first: by the first-to-pass rule c would be the reference and
# b refused; the reference init stored keeps c out and b serving.
conf_write '[hsm.c]' "module = $T/c.so" "pin_file = $O/state/hsm.pin" '[hsm.b]' "module = $T/b.so"
die hsm
check "$(keys_of c) $(keys_of b)" "other-keys down same-keys up" "c and b with [hsm] down at open"
hf_expect_exit 0 hf key create made-while-hsm-is-down --alg AES-256
revive hsm
conf_write '[hsm.b]' "module = $T/b.so" '[hsm.c]' "module = $T/c.so" "pin_file = $O/state/hsm.pin"
hf_expect_exit 0 hf key create made-while-c-is-refused --alg AES-256
# init on a fresh [hsm] while c holds a KEK: a second, different KEK is refused, none is made.
F=$T/fresh
mkdir -p "$F/state"
printf '[holdfast]\nstate_dir = %s\n[hsm.c]\nmodule = %s\npin_file = %s\n' "$F/state" \
    "$T/c.so" "$O/state/hsm.pin" >"$F/holdfast.conf"
HOLDFAST_CONF="$F/holdfast.conf" "$HF_CLI" init >"$F/init.out" 2>&1 &&
    hf_fail "init made a root KEK on [hsm] while member c holds one"
grep -q "init never makes a second, different key" "$F/init.out" ||
    hf_fail "init's refusal does not say why: $(cat "$F/init.out")"
SOFTHSM2_CONF="$F/state/softhsm2.conf" pkcs11-tool --module "$SOFTHSM_MODULE" \
    --token-label holdfast --login --pin "$(cat "$F/state/hsm.pin")" --list-objects 2>/dev/null |
    grep -q holdfast-root-kek && hf_fail "the refused init left a KEK on [hsm]'s token"

# ---- 3. holdfastd under load while member hsm dies and comes back ----
conf_write '[hsm.b]' "module = $T/b.so"
hf_expect_exit 0 hf key create k0 --alg AES-256
hf_expect_exit 0 hf key create k1 --alg AES-256
for k in k0 k1; do hf_expect_exit 0 hf link add aws-xks "$k" "$k"; done
. "$top_srcdir/tests/integration/xks-lib.sh"
xks_gateway_start k0
up_of() { # MEMBER: holdfast_pool_member_up of the root's member in holdfastd's /metrics
    curl -s "http://127.0.0.1:$P/metrics" |
        sed -n "s/^holdfast_pool_member_up{pool=\"(root)\",member=\"$1\"} //p"
}
check "$(up_of hsm) $(up_of b)" "1 1" "the root's members in /metrics before the run"

echo "root-pool: $D s of xks-encrypt on local key k0, $VUS VUs; member hsm dead from $DOWN s to $BACK s"
"$HF_LOAD" --url "http://127.0.0.1:$P" --api xks-encrypt --key-id k0 --vus "$VUS" \
    --ramp-up 0 --steady "${D}s" --ramp-down 0 --timeout 5s --no-progress --quiet \
    --intervals "$DOWN,$BACK" --csv "$T/load.csv" >"$T/load.out" 2>"$T/load.err" &
LOAD_PID=$!
t0=$(hf_now_ms)
sleep "$DOWN"
die hsm
# While hsm is down: a new key and a new version, wrapped under the root in the CLI (b alone),
# each encrypted through XKS at once (holdfastd unwraps them and checks their rows' MACs on b).
hf_expect_exit 0 hf key create k2 --alg AES-256
hf_expect_exit 0 hf link add aws-xks k2 k2
hf_expect_exit 0 hf key rotate k1
link_wait k2
encrypt_now k2 k2
encrypt_now k1 k1v2
decrypt_check k2 k2
check "$(up_of hsm)" 0 "member hsm in /metrics while dead"
sleep_until "$t0" "$BACK"
revive hsm
wait "$LOAD_PID" || { cat "$T/load.out" "$T/load.err"; hf_fail "hf-load exited $?"; }
cat "$T/load.out"
check "$(grep -c '^interval ' "$T/load.out")" 3 "phase lines"
grep '^interval ' "$T/load.out" | grep -qv ' errors 0 ' && hf_fail "a phase had failed requests"
grep '^interval ' "$T/load.out" | grep -q ' ops 0 ' && hf_fail "a phase served nothing"
check "$(awk -F, 'NR == 2 { print $22 }' "$T/load.csv")" 0 "failed requests"
i=0
until [ "$(up_of hsm)" = 1 ]; do
    i=$((i + 1))
    [ "$i" -lt 50 ] || hf_fail "member hsm is not back in service in /metrics within 5 s"
    sleep 0.1
done
failovers=$(curl -s "http://127.0.0.1:$P/metrics" |
    sed -n 's/^holdfast_pool_member_failures_total{pool="(root)",member="hsm"} //p')
echo "root-pool: member hsm back in service; $failovers of its root calls failed while it was down"
[ "${failovers:-0}" -gt 0 ] || hf_fail "holdfastd never sent member hsm a root call while it was dead"

# With b dead, hsm alone unwraps what was wrapped while it was down (the same KEK), in holdfastd
# (its cached keys dropped by a restart) and in the CLI.
hf_gateway_stop || true
die b
hf_gateway_start "http://127.0.0.1:$P" "$HOLDFASTD" -f -c "$T/holdfastd.conf"
decrypt_check k2 k2
decrypt_check k1 k1v2
printf 'root pool' >"$T/plain"
hf_expect_exit 0 hf encrypt --key k2 --in "$T/plain" --out "$T/blob"
hf_expect_exit 0 hf decrypt --in "$T/blob" --out "$T/back"
check "$(cat "$T/back")" "root pool" "CLI round trip on hsm alone"
hf_gateway_stop || true
revive b

hf_expect_exit 0 hf audit verify
cat "$HF_OUT"
echo "root-pool: all checks passed"
