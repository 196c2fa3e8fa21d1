#!/bin/sh
# OSSL_STORE and EVP signing through the holdfast provider from C (provider-store.c): threads,
# fork, a refused PIN. Afterwards the audit log must show exactly one failed login: the refused
# PIN was never offered again.
. "${top_srcdir:-.}/tests/integration/lib.sh"

prog="$top_builddir/tests/integration/provider-store"
provider_dir="$top_builddir/provider/.libs"
[ -x "$prog" ] || hf_skip "$prog not built"
[ -f "$provider_dir/holdfast.so" ] || hf_skip "provider not built"
hf_store_setup
"$HF_CLI" key create prov-rsa --alg RSA-2048 >/dev/null || hf_fail "key create prov-rsa"
"$HF_CLI" key create prov-ec --alg EC-P256 >/dev/null || hf_fail "key create prov-ec"

export OPENSSL_CONF=/dev/null
export HOLDFAST_PKCS11_MODULE="$HF_MODULE"
# LeakSanitizer (GCC 12) now and then crashes reading the dynamic TLS of the exiting main thread
# ("Tracer caught signal 11", DTLS of a dlopen'ed module). Not scanning TLS avoids that and is
# stricter, not laxer: memory only TLS points to would then be reported.
[ -n "$HF_SANITIZED" ] && export LSAN_OPTIONS="use_tls=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
timeout -k 5 600 "$prog" "$provider_dir" "$HF_USER_PIN" || hf_fail "provider-store failed"

audit="$HOLDFAST_STATE_DIR/audit.log"
# -a: the log may hold bytes grep takes for binary (a record cut short by a crash test elsewhere).
failed=$(grep -a '"op":"login"' "$audit" | grep -ac '"ok":false')
[ "$failed" -eq 1 ] || hf_fail "$failed failed logins in the audit log, want exactly 1"
exit 0
