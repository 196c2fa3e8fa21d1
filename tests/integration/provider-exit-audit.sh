#!/bin/sh
# The audit of an openssl process that names its providers on the command line: openssl's apps
# unload them (default too) before exit, and the module's C_Finalize comes after, from an exit
# handler. The backend (SoftHSMv2) does its crypto in that same default library context, so the
# closing checkpoint, signed in the HSM, was lost ("audit: cannot derive a stream key in the
# HSM: 0x5") and the process's records were left unanchored. Both orders of -provider, pkey
# and pkeyutl -sign: no audit error on stderr, and the log verifies strictly (every record
# under a checkpoint).
. "${top_srcdir:-.}/tests/integration/lib.sh"
. "${top_srcdir:-.}/tests/integration/provider-lib.sh"
"$HF_CLI" key create exit-audit-ec --alg EC-P256 >/dev/null || hf_fail "key create exit-audit-ec"

openssl dgst -sha256 -binary "$HOLDFAST_CONF" >"$T/digest"

# clean WHAT: the last command's stderr has no audit error, and the log verifies strictly.
clean() {
    if grep -q 'audit:' "$HF_ERR"; then
        cat "$HF_ERR"
        hf_fail "$1: the audit logged an error"
    fi
    "$HF_CLI" audit verify --strict >"$T/verify" 2>&1 || {
        cat "$T/verify"
        hf_fail "$1: its audit records do not verify under a checkpoint"
    }
}

for order in "default holdfast" "holdfast default"; do
    set -- -provider-path "$provider_dir"
    for p in $order; do set -- "$@" -provider "$p"; done
    hf_expect_exit 0 hf_ext openssl pkey "$@" -passin "$PIN" \
        -in 'pkcs11:object=exit-audit-ec;type=private' -pubout
    clean "pkey, -provider $order"
    hf_expect_exit 0 hf_ext openssl pkeyutl -sign "$@" -passin "$PIN" \
        -inkey holdfast:exit-audit-ec -in "$T/digest" -out "$T/sig"
    clean "pkeyutl -sign, -provider $order"
done
exit 0
