#!/bin/sh
# EC P-521 and Ed25519 keys through the holdfast OpenSSL provider and the openssl CLI: the
# encoder exports the public key (the default provider alone reads it and names the group), and
# signatures made through the provider verify with the default provider alone.
. "${top_srcdir:-.}/tests/integration/lib.sh"
. "${top_srcdir:-.}/tests/integration/provider-lib.sh"
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

# ---- Ed25519 ----------------------------------------------------------------------------------
"$HF_CLI" key create prov-ed --alg Ed25519 >/dev/null || hf_fail "key create prov-ed"
hf_expect_exit 0 ossl pkey $P -passin "$PIN" -in holdfast:prov-ed -pubout -out "$T/ed.pub"
hf_expect_exit 0 openssl pkey -pubin -in "$T/ed.pub" -text_pub -noout
expect_out "ED25519 Public-Key:"
# The message itself is signed (-rawin): CKM_EDDSA, one shot.
hf_expect_exit 0 ossl pkeyutl $P -sign -rawin -passin "$PIN" -inkey holdfast:prov-ed \
    -in "$T/msg" -out "$T/ed.sig"
[ "$(wc -c <"$T/ed.sig")" -eq 64 ] || hf_fail "an Ed25519 signature is not 64 bytes"
hf_expect_exit 0 openssl pkeyutl -verify -rawin -pubin -inkey "$T/ed.pub" -in "$T/msg" \
    -sigfile "$T/ed.sig"
expect_out "Signature Verified Successfully"
# Verifying through the provider, with the token's public object, and a forgery refused.
hf_expect_exit 0 ossl pkeyutl $P -verify -rawin -pubin -inkey 'pkcs11:object=prov-ed;type=public' \
    -in "$T/msg" -sigfile "$T/ed.sig"
printf 'another message\n' >"$T/msg2"
hf_expect_exit 1 ossl pkeyutl $P -verify -rawin -pubin -inkey 'pkcs11:object=prov-ed;type=public' \
    -in "$T/msg2" -sigfile "$T/ed.sig"
# A self-signed certificate (the signature's AlgorithmIdentifier is RFC 8410's) that the
# default provider alone verifies.
hf_expect_exit 0 ossl req $P -new -x509 -passin "$PIN" -key holdfast:prov-ed -subj /CN=prov-ed \
    -days 1 -out "$T/ed.pem"
hf_expect_exit 0 openssl verify -CAfile "$T/ed.pem" "$T/ed.pem"
expect_out "OK"
echo "provider-curves: Ed25519 passed"
