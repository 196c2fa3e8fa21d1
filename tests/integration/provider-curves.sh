#!/bin/sh
# EC P-521 and Ed25519 keys through the holdfast OpenSSL provider and the openssl CLI: the
# encoder exports the public key (the default provider alone reads it and names the group), and
# signatures made through the provider verify with the default provider alone.
. "${top_srcdir:-.}/tests/integration/lib.sh"

command -v openssl >/dev/null || hf_skip "openssl CLI not installed"
provider_dir="$top_builddir/provider/.libs"
[ -f "$provider_dir/holdfast.so" ] || hf_skip "provider not built ($provider_dir/holdfast.so)"
hf_store_setup

export OPENSSL_CONF=/dev/null
export HOLDFAST_PKCS11_MODULE="$HF_MODULE"
P="-provider-path $provider_dir -provider default -provider holdfast"
PIN="file:$HOLDFAST_STATE_DIR/token-user.pin"
T=$HF_TMP
ossl() { hf_ext openssl "$@"; }
expect_out() {
    grep -qF -- "$1" "$HF_OUT" || { cat "$HF_OUT" "$HF_ERR"; hf_fail "output lacks '$1'"; }
}
printf 'the message to sign\n' >"$T/msg"

# ---- P-521 ------------------------------------------------------------------------------------
"$HF_CLI" key create prov-p521 --alg EC-P521 >/dev/null || hf_fail "key create prov-p521"
hf_expect_exit 0 ossl pkey $P -passin "$PIN" -in holdfast:prov-p521 -pubout -out "$T/p521.pub"
hf_expect_exit 0 openssl pkey -pubin -in "$T/p521.pub" -text_pub -noout
expect_out "Public-Key: (521 bit)"
expect_out "NIST CURVE: P-521"
# keymgmt reports the group of the token key itself.
hf_expect_exit 0 ossl pkey $P -passin "$PIN" -in holdfast:prov-p521 -text_pub -noout
expect_out "NIST CURVE: P-521"
# pkeyutl over a SHA-512 hash (CKM_HF_ECDSA_DER: at most 139 bytes of DER), and dgst -sign.
openssl dgst -sha512 -binary "$T/msg" >"$T/msg.sha512"
hf_expect_exit 0 ossl pkeyutl $P -sign -passin "$PIN" -inkey holdfast:prov-p521 \
    -in "$T/msg.sha512" -out "$T/p521.sig" -pkeyopt digest:sha512
hf_expect_exit 0 openssl pkeyutl -verify -pubin -inkey "$T/p521.pub" -in "$T/msg.sha512" \
    -sigfile "$T/p521.sig"
hf_expect_exit 0 ossl dgst $P -sha384 -passin "$PIN" -sign holdfast:prov-p521 -out "$T/p521.dsig" \
    "$T/msg"
hf_expect_exit 0 openssl dgst -sha384 -verify "$T/p521.pub" -signature "$T/p521.dsig" "$T/msg"
expect_out "Verified OK"
echo "provider-curves: P-521 passed"
