# Sourced after lib.sh by the tests that drive the openssl CLI through the holdfast provider,
# each command naming its providers itself (no global configuration). Skips without openssl or
# the built provider, then makes the store (hf_store_setup) and sets:
#   P                    the -provider-path and -provider arguments
#   PIN                  the user PIN as openssl's -passin argument
#   T                    $HF_TMP
#   ossl ARGS...         openssl with our provider loaded (it loads our module: sanitizer-aware)
#   expect_out TEXT      fail unless $HF_OUT has TEXT; expect_err TEXT the same for $HF_ERR
command -v openssl >/dev/null || hf_skip "openssl CLI not installed"
provider_dir="$top_builddir/provider/.libs"
[ -f "$provider_dir/holdfast.so" ] || hf_skip "provider not built ($provider_dir/holdfast.so)"
hf_store_setup

# The system openssl.cnf stays out of it; the provider finds the module through this variable.
export OPENSSL_CONF=/dev/null
export HOLDFAST_PKCS11_MODULE="$HF_MODULE"
P="-provider-path $provider_dir -provider default -provider holdfast"
PIN="file:$HOLDFAST_STATE_DIR/token-user.pin"
T=$HF_TMP
ossl() { hf_ext openssl "$@"; }
expect_out() {
    grep -qF -- "$1" "$HF_OUT" || { cat "$HF_OUT" "$HF_ERR"; hf_fail "output lacks '$1'"; }
}
expect_err() { grep -qF -- "$1" "$HF_ERR" || { cat "$HF_ERR"; hf_fail "stderr lacks '$1'"; }; }
