#!/bin/sh
# Several threads with their own sessions encrypt, decrypt and sign with shared keys, with zero
# errors; then the same under helgrind, which must report no data race or lock-order problem.
# (A --enable-tsan build runs this script too and ThreadSanitizer aborts on a race.)
. "${top_srcdir:-.}/tests/integration/lib.sh"

hf_store_setup
"$HF_CLI" key create stress-aes --alg AES-256 >/dev/null || hf_fail "create stress-aes"
"$HF_CLI" key create stress-rsa --alg RSA-2048 --usage sign,verify >/dev/null || hf_fail "create stress-rsa"
"$HF_CLI" key create stress-ec --alg EC-P256 >/dev/null || hf_fail "create stress-ec"
stress="$top_builddir/tests/integration/p11-stress"

"$stress" "$HF_MODULE" "$HF_USER_PIN" 4 "${HF_STRESS_SECONDS:-5}" || hf_fail "p11-stress reported errors"
"$HF_CLI" audit verify >/dev/null || hf_fail "audit log does not verify after the stress run"

if [ -n "$HF_SANITIZED" ]; then
    echo "concurrency: sanitizer build, helgrind skipped"
elif command -v valgrind >/dev/null; then
    valgrind --tool=helgrind --error-exitcode=3 -q \
        --suppressions="$top_srcdir/tests/helgrind.supp" \
        "$stress" "$HF_MODULE" "$HF_USER_PIN" 3 "${HF_HELGRIND_SECONDS:-4}" >"$HF_TMP/helgrind.log" 2>&1
    rc=$?
    [ "$rc" -eq 0 ] || { cat "$HF_TMP/helgrind.log"; hf_fail "helgrind found problems (exit $rc)"; }
    echo "concurrency: helgrind clean"
else
    echo "concurrency: valgrind not installed, helgrind run skipped"
fi
echo "concurrency: ok"
