#!/bin/sh
# The PIN attempt counter as an administrator meets it, with OpenSC's pkcs11-tool and the CLI:
# ten wrong user PINs (the default [token] pin_attempts) lock the PIN, the token's flags say so
# on the way (count low, final try, locked), the right PIN is then refused; `holdfast token
# status` shows it, `holdfast token unlock` clears it, and so does the SO's C_InitPIN
# (pkcs11-tool --init-pin). holdfastd's gateway PIN is never counted: its login works while the
# user's PIN is locked.
. "${top_srcdir:-.}/tests/integration/lib.sh"
command -v pkcs11-tool >/dev/null || hf_skip "pkcs11-tool (opensc) not installed"

hf_store_setup
p11() { hf_ext pkcs11-tool --module "$HF_MODULE" "$@"; }
flags() { p11 --list-token-slots 2>/dev/null | grep -i "token flags" || true; }

i=0
while [ "$i" -lt 10 ]; do
    i=$((i + 1))
    hf_expect_exit 1 p11 --login --pin "wrong-pin-$i" --list-objects
    grep -q "CKR_PIN_INCORRECT" "$HF_ERR" || { cat "$HF_ERR"; hf_fail "wrong PIN $i: not CKR_PIN_INCORRECT"; }
    case $i in
    1) flags | grep -qi "user PIN count low" || hf_fail "after 1 wrong PIN: no 'user PIN count low'" ;;
    9) flags | grep -qi "final user PIN try" || hf_fail "after 9 wrong PINs: no 'final user PIN try'" ;;
    esac
done
flags | grep -qi "user PIN locked" || hf_fail "after 10 wrong PINs: no 'user PIN locked'"
hf_expect_exit 1 p11 --login --pin "$HF_USER_PIN" --list-objects
grep -q "CKR_PIN_LOCKED" "$HF_ERR" || { cat "$HF_ERR"; hf_fail "the right PIN on a locked token: not CKR_PIN_LOCKED"; }

# The gateway's PIN is a service's, not a guess: it logs in while the user's PIN is locked.
GW_PIN=$(cat "$HOLDFAST_STATE_DIR/token-gateway.pin") || hf_fail "init wrote no gateway PIN file"
hf_expect_exit 0 p11 --login --pin "$GW_PIN" --list-objects

hf_expect_exit 0 "$HF_CLI" token status
grep -q "user PIN: 10 wrong in a row, LOCKED" "$HF_OUT" || { cat "$HF_OUT"; hf_fail "token status does not show the lock"; }
hf_expect_exit 0 "$HF_CLI" --json token status
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["user_pin"]=={"failures":10,"locked":True} and d["so_pin"]["locked"] is False and d["pin_attempts"]==10, d' "$HF_OUT" ||
    hf_fail "token status --json"
hf_expect_exit 0 "$HF_CLI" token unlock
hf_expect_exit 0 p11 --login --pin "$HF_USER_PIN" --list-objects
flags | grep -qi "user PIN \(count low\|locked\)\|final user PIN try" && hf_fail "flags still set after unlock"

# Locked again, then the SO sets the user's PIN: unlocked, with the new PIN.
i=0
while [ "$i" -lt 10 ]; do
    i=$((i + 1))
    hf_expect_exit 1 p11 --login --pin "wrong-pin-$i" --list-objects
done
flags | grep -qi "user PIN locked" || hf_fail "not locked the second time"
hf_expect_exit 0 p11 --login --login-type so --so-pin "$HF_SO_PIN" --init-pin --new-pin "a-new-user-pin"
hf_expect_exit 0 p11 --login --pin "a-new-user-pin" --list-objects
flags | grep -qi "user PIN locked" && hf_fail "still locked after the SO's C_InitPIN"
# Each step is on record: the unlock by the CLI and the SO's C_InitPIN.
grep -q '"op":"pin.unlock"' "$HOLDFAST_STATE_DIR/audit.log" || hf_fail "no pin.unlock record"
grep -q '"op":"pin.init"' "$HOLDFAST_STATE_DIR/audit.log" || hf_fail "no pin.init record"
exit 0
