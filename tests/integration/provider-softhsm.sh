#!/bin/sh
# The holdfast provider over another vendor's module: SoftHSMv2, named by pkcs11-module-path in
# an openssl.cnf. It speaks plain PKCS#11, so everything works there too: RFC 7512 URIs by token,
# label and id; public halves a module does not hand out as CKA_PUBLIC_KEY_INFO (RSA modulus and
# exponent; an EC point found on the public object with the same CKA_ID); ECDSA and RSA-PSS
# signatures and RSA-OAEP decryption checked with the default provider; a PIN from the
# environment (pkcs11-module-pin = env:VAR); a certificate object listed and loaded.
. "${top_srcdir:-.}/tests/integration/lib.sh"

command -v openssl >/dev/null || hf_skip "openssl CLI not installed"
command -v softhsm2-util >/dev/null || hf_skip "softhsm2-util not installed"
command -v pkcs11-tool >/dev/null || hf_skip "pkcs11-tool (OpenSC) not installed"
[ -f "$SOFTHSM_MODULE" ] || hf_skip "SoftHSMv2 module $SOFTHSM_MODULE not installed"
provider_dir="$top_builddir/provider/.libs"
[ -f "$provider_dir/holdfast.so" ] || hf_skip "provider not built"
hf_tmpdir
T=$HF_TMP

mkdir -p "$T/tokens"
printf 'directories.tokendir = %s/tokens\nobjectstore.backend = file\n' "$T" >"$T/softhsm2.conf"
export SOFTHSM2_CONF="$T/softhsm2.conf"
softhsm2-util --init-token --free --label "prov test" --pin 4321 --so-pin 8765 >/dev/null ||
    hf_fail "softhsm2-util --init-token"
# pkcs11-tool loads SoftHSMv2 only, nothing of ours (not even through OPENSSL_CONF): it runs as
# is, also in sanitizer builds.
p11() { OPENSSL_CONF=/dev/null pkcs11-tool --module "$SOFTHSM_MODULE" --token-label "prov test" \
    "$@" >/dev/null 2>&1; }
p11 --login --pin 4321 --keypairgen --key-type EC:prime256v1 --label ec-key --id 01 ||
    hf_fail "EC keygen"
p11 --login --pin 4321 --keypairgen --key-type rsa:2048 --label rsa-key --id 02 ||
    hf_fail "RSA keygen"

cat >"$T/openssl.cnf" <<CNF
openssl_conf = openssl_init
[openssl_init]
providers = provider_sect
[provider_sect]
default = default_sect
holdfast = holdfast_sect
[default_sect]
activate = 1
[holdfast_sect]
activate = 1
module = $provider_dir/holdfast.so
pkcs11-module-path = $SOFTHSM_MODULE
pkcs11-module-pin = env:PROV_TEST_PIN
CNF
export OPENSSL_CONF="$T/openssl.cnf" PROV_TEST_PIN=4321
unset HOLDFAST_PKCS11_MODULE
ossl() { hf_ext openssl "$@"; }
# The referee: OpenSSL with its default provider only.
ref() { OPENSSL_CONF=/dev/null openssl "$@"; }
expect_out() {
    grep -qF -- "$1" "$HF_OUT" || { cat "$HF_OUT" "$HF_ERR"; hf_fail "output lacks '$1'"; }
}

# Public halves, from private key objects (no CKA_PUBLIC_KEY_INFO here).
ec_uri='pkcs11:token=prov%20test;id=%01;type=private'
rsa_uri='pkcs11:token=prov%20test;object=rsa-key;type=private'
hf_expect_exit 0 ossl pkey -in "$ec_uri" -pubout -out "$T/ec.pub"
hf_expect_exit 0 ossl pkey -in "$rsa_uri" -pubout -out "$T/rsa.pub"
p11 --read-object --type pubkey --id 01 -o "$T/ec.pub.der" || hf_fail "pkcs11-tool --read-object"
ref pkey -pubin -inform DER -in "$T/ec.pub.der" -out "$T/ec.pub.ref" ||
    hf_fail "reading the EC public key pkcs11-tool exported"
cmp -s "$T/ec.pub" "$T/ec.pub.ref" || hf_fail "EC public key differs from the token's"

printf 'softhsm message\n' >"$T/msg"
ref dgst -sha256 -binary "$T/msg" >"$T/msg.sha256"
hf_expect_exit 0 ossl pkeyutl -sign -inkey "$ec_uri" -in "$T/msg.sha256" -out "$T/ec.sig" \
    -pkeyopt digest:sha256
hf_expect_exit 0 ref pkeyutl -verify -pubin -inkey "$T/ec.pub" -in "$T/msg.sha256" \
    -sigfile "$T/ec.sig"
pss="-pkeyopt digest:sha256 -pkeyopt rsa_padding_mode:pss -pkeyopt rsa_pss_saltlen:digest"
hf_expect_exit 0 ossl pkeyutl -sign -inkey "$rsa_uri" -in "$T/msg.sha256" -out "$T/pss.sig" $pss
hf_expect_exit 0 ref pkeyutl -verify -pubin -inkey "$T/rsa.pub" -in "$T/msg.sha256" \
    -sigfile "$T/pss.sig" $pss
# SoftHSMv2 2.6 decrypts OAEP with SHA-1 only.
head -c 32 /dev/urandom >"$T/secret"
ref pkeyutl -encrypt -pubin -inkey "$T/rsa.pub" -in "$T/secret" -out "$T/ct" \
    -pkeyopt rsa_padding_mode:oaep || hf_fail "OAEP encryption"
hf_expect_exit 0 ossl pkeyutl -decrypt -inkey "$rsa_uri" -in "$T/ct" -out "$T/secret.out" \
    -pkeyopt rsa_padding_mode:oaep
cmp -s "$T/secret" "$T/secret.out" || hf_fail "OAEP round trip"

# A certificate object on the token comes back as a certificate.
hf_expect_exit 0 ossl req -x509 -new -key "$ec_uri" -subj /CN=softhsm -days 2 -out "$T/ec.crt"
ref x509 -in "$T/ec.crt" -outform DER -out "$T/ec.crt.der"
p11 --login --pin 4321 --write-object "$T/ec.crt.der" --type cert --label ec-key --id 01 ||
    hf_fail "cert import"
hf_expect_exit 0 ossl storeutl -noout 'pkcs11:token=prov%20test'
expect_out "Total found: 5"
expect_out "Certificate"
hf_expect_exit 0 ossl storeutl -certs 'pkcs11:token=prov%20test;type=cert'
expect_out "BEGIN CERTIFICATE"
hf_expect_exit 0 ossl x509 -in 'pkcs11:token=prov%20test;object=ec-key;type=cert' -noout -subject
expect_out "CN = softhsm"
exit 0
