#!/bin/sh
# Secrets in memory: the holdfast CLI cannot dump core, its memory is closed to other processes
# of its user, and it has OpenSSL's secure heap (checked while it waits at its PIN prompt); PINs come from the
# terminal with echo off (init --ask-pins) and work. holdfastd's side is in gateway.sh.
. "${top_srcdir:-.}/tests/integration/lib.sh"

command -v python3 >/dev/null || hf_skip "python3 not installed"
[ -x "$HF_CLI" ] || hf_skip "$HF_CLI not built"
[ -f "$SOFTHSM_MODULE" ] || hf_skip "SoftHSMv2 module $SOFTHSM_MODULE not installed"
hf_tmpdir
HOLDFAST_CONF="$HF_TMP/holdfast.conf"
printf '[holdfast]\nstate_dir = %s\n' "$HF_TMP/state" >"$HOLDFAST_CONF"
export HOLDFAST_CONF

SO_PIN=typed-so-8765
USER_PIN=typed-user-4321
timeout -k 5 120 python3 "$top_srcdir/tests/integration/pty-init.py" "$HF_CLI" "$SO_PIN" "$USER_PIN" \
    >"$HF_TMP/pty.out" 2>&1 || { cat "$HF_TMP/pty.out"; hf_fail "init --ask-pins failed"; }
grep -q "^undumpable: yes" "$HF_TMP/pty.out" ||
    { cat "$HF_TMP/pty.out"; hf_fail "the CLI may dump core or be read by its user's processes"; }
[ -n "$HF_SANITIZED" ] || grep -q "^secure heap: yes" "$HF_TMP/pty.out" ||
    { cat "$HF_TMP/pty.out"; hf_fail "the CLI has no OpenSSL secure heap for private keys"; }
grep -q "user PIN again:" "$HF_TMP/pty.out" || hf_fail "no second prompt for the user PIN"
grep -q "user PIN: set" "$HF_TMP/pty.out" || { cat "$HF_TMP/pty.out"; hf_fail "the PIN was not set"; }
grep -qF -e "$SO_PIN" -e "$USER_PIN" "$HF_TMP/pty.out" && hf_fail "a typed PIN was echoed"
[ -e "$HF_TMP/state/token-user.pin" ] && hf_fail "a typed PIN was written to a file"

# The typed PINs are the token's: the module logs in with the user PIN, and not with another.
if command -v pkcs11-tool >/dev/null; then
    hf_ext pkcs11-tool --module "$HF_MODULE" --login --pin "$USER_PIN" --list-objects \
        >"$HF_TMP/p11.out" 2>&1 || { cat "$HF_TMP/p11.out"; hf_fail "login with the typed PIN"; }
    hf_ext pkcs11-tool --module "$HF_MODULE" --login --pin wrong-pin-0000 --list-objects \
        >"$HF_TMP/p11.out" 2>&1 && hf_fail "login with another PIN"
fi
echo "hardening: every check passed"
