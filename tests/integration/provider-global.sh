#!/bin/sh
# The holdfast provider loaded globally (OPENSSL_CONF, preferred for every fetch that names no
# provider) in a process that also uses holdfast-pkcs11.so directly (provider-global.c): no
# recursion, no deadlock, whichever of the two initialises the module first. The core does its
# crypto in its own OpenSSL library context, so the provider can never be called from inside it.
. "${top_srcdir:-.}/tests/integration/lib.sh"

prog="$top_builddir/tests/integration/provider-global"
provider_dir="$top_builddir/provider/.libs"
[ -x "$prog" ] || hf_skip "$prog not built"
[ -f "$provider_dir/holdfast.so" ] || hf_skip "provider not built"
hf_store_setup
"$HF_CLI" key create prov-ec --alg EC-P256 >/dev/null || hf_fail "key create prov-ec"

cat >"$HF_TMP/openssl.cnf" <<CNF
openssl_conf = openssl_init

[openssl_init]
providers = provider_sect
alg_section = evp_properties

# Prefer holdfast for everything it offers, wherever a fetch names no provider: any OpenSSL
# work of the core or of SoftHSMv2 that reached the default library context would land here.
[evp_properties]
default_properties = ?provider=holdfast

[provider_sect]
default = default_sect
holdfast = holdfast_sect

[default_sect]
activate = 1

[holdfast_sect]
activate = 1
module = $provider_dir/holdfast.so
pkcs11-module-path = $HF_MODULE
pkcs11-module-pin = file:$HOLDFAST_STATE_DIR/token-user.pin
CNF
export OPENSSL_CONF="$HF_TMP/openssl.cnf"
unset HOLDFAST_PKCS11_MODULE

# LeakSanitizer (GCC 12) now and then crashes reading the dynamic TLS of the exiting main thread
# ("Tracer caught signal 11", DTLS of a dlopen'ed module). Not scanning TLS avoids that and is
# stricter, not laxer: memory only TLS points to would then be reported.
[ -n "$HF_SANITIZED" ] && export LSAN_OPTIONS="use_tls=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
for order in module-first provider-first; do
    timeout -k 5 300 "$prog" "$HF_MODULE" "$HF_USER_PIN" "$order" ||
        hf_fail "provider-global $order (exit $?)"
done
exit 0
