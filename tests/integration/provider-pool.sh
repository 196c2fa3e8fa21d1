#!/bin/sh
# The OpenSSL provider on an HSM pool key (issue 14: "the PKCS#11 module and the OpenSSL
# provider use pool keys exactly as local keys"), through the openssl CLI: an RSA-3072 key made
# in a member of a plain pool of two SoftHSMv2 tokens, and a local one beside it for the same
# commands. For the pool key: its public key object and its private key's public half agree; PSS
# and PKCS#1 signatures made in the member verify with OpenSSL's default provider
# alone; OAEP-SHA-256 and PKCS#1 v1.5 ciphertexts made by the default provider decrypt; a
# tampered ciphertext is refused and the next decrypt still works; and with the member's token
# gone the provider fails cleanly instead of falling back to anything. An EC P-256 and an Ed25519
# pool key sign through the provider too, verified by the default provider.
. "${top_srcdir:-.}/tests/integration/lib.sh"
. "${top_srcdir:-.}/tests/integration/provider-lib.sh"

for p in cmp softhsm2-util; do command -v "$p" >/dev/null || hf_skip "$p not installed"; done
hf_pool_tokens prov a b
mod=$SOFTHSM_MODULE
hf_expect_exit 0 "$HF_CLI" pool add pp --member "a,module=$mod,token=prov-a,pin_env=HF_POOL_PIN" \
    --member "b,module=$mod,token=prov-b,pin_env=HF_POOL_PIN"
hf_expect_exit 0 "$HF_CLI" key create pool-rsa --alg RSA-3072 --source pool:pp \
    --usage sign,verify,encrypt,decrypt
hf_expect_exit 0 "$HF_CLI" key create local-rsa --alg RSA-3072 --usage sign,verify,encrypt,decrypt

printf 'the message to sign\n' >"$T/msg"
openssl dgst -sha256 -binary "$T/msg" >"$T/msg.sha256"
head -c 32 /dev/urandom >"$T/secret"
pss="-pkeyopt digest:sha256 -pkeyopt rsa_padding_mode:pss -pkeyopt rsa_pss_saltlen:digest"
pkcs1="-pkeyopt digest:sha256 -pkeyopt rsa_padding_mode:pkcs1"
oaep="-pkeyopt rsa_padding_mode:oaep -pkeyopt rsa_oaep_md:sha256 -pkeyopt rsa_mgf1_md:sha256"

# The same round trips on the pool key as on a local key.
for k in pool-rsa local-rsa; do
    hf_expect_exit 0 ossl pkey $P -passin "$PIN" -in "holdfast:$k" -pubout -out "$T/$k.pub"
    hf_expect_exit 0 openssl pkey -pubin -in "$T/$k.pub" -text_pub -noout
    expect_out "Public-Key: (3072 bit)"
    for pad in pss pkcs1; do
        eval "opts=\$$pad"
        hf_expect_exit 0 ossl pkeyutl $P -sign -passin "$PIN" -inkey "holdfast:$k" \
            -in "$T/msg.sha256" -out "$T/$k.$pad.sig" $opts
        hf_expect_exit 0 openssl pkeyutl -verify -pubin -inkey "$T/$k.pub" -in "$T/msg.sha256" \
            -sigfile "$T/$k.$pad.sig" $opts
        expect_out "Signature Verified Successfully"
    done
    for pad in oaep pkcs1; do
        eval "opts=\$$pad"
        [ "$pad" = pkcs1 ] && opts="-pkeyopt rsa_padding_mode:pkcs1"
        openssl pkeyutl -encrypt -pubin -inkey "$T/$k.pub" -in "$T/secret" -out "$T/$k.$pad.bin" \
            $opts || hf_fail "openssl pkeyutl -encrypt ($pad)"
        hf_expect_exit 0 ossl pkeyutl $P -decrypt -passin "$PIN" -inkey "holdfast:$k" \
            -in "$T/$k.$pad.bin" -out "$T/$k.$pad.out" $opts
        cmp -s "$T/secret" "$T/$k.$pad.out" || hf_fail "$k: $pad round trip"
    done
done

# The public key object (no PIN) says the same as the private key's public half.
hf_expect_exit 0 ossl pkey $P -pubin -in 'pkcs11:object=pool-rsa;type=public' -pubout
cmp -s "$HF_OUT" "$T/pool-rsa.pub" || hf_fail "the public and private objects of pool-rsa disagree"

# A tampered OAEP ciphertext: refused, and the member serves the next decrypt.
python3 -c 'import sys; b = bytearray(open(sys.argv[1], "rb").read()); b[100] ^= 1; open(sys.argv[2], "wb").write(b)' \
    "$T/pool-rsa.oaep.bin" "$T/tampered.bin"
hf_expect_exit 1 ossl pkeyutl $P -decrypt -passin "$PIN" -inkey holdfast:pool-rsa \
    -in "$T/tampered.bin" -out "$T/tampered.out" $oaep
hf_expect_exit 0 ossl pkeyutl $P -decrypt -passin "$PIN" -inkey holdfast:pool-rsa \
    -in "$T/pool-rsa.oaep.bin" -out "$T/again.out" $oaep
cmp -s "$T/secret" "$T/again.out" || hf_fail "the decrypt after a tampered one"

# EC P-256 and Ed25519 pool keys: ECDSA (DER, CKM_HF_ECDSA_DER) and EdDSA made in the member
# verify with the default provider under the public key the provider exports from the store.
hf_expect_exit 0 "$HF_CLI" key create pool-ec --alg EC-P256 --source pool:pp
hf_expect_exit 0 "$HF_CLI" key create pool-ed --alg Ed25519 --source pool:pp
for k in pool-ec pool-ed; do
    hf_expect_exit 0 ossl pkey $P -passin "$PIN" -in "holdfast:$k" -pubout -out "$T/$k.pub"
done
hf_expect_exit 0 ossl pkeyutl $P -sign -passin "$PIN" -inkey holdfast:pool-ec \
    -in "$T/msg.sha256" -out "$T/pool-ec.sig"
hf_expect_exit 0 openssl pkeyutl -verify -pubin -inkey "$T/pool-ec.pub" -in "$T/msg.sha256" \
    -sigfile "$T/pool-ec.sig"
expect_out "Signature Verified Successfully"
hf_expect_exit 0 ossl pkeyutl $P -sign -rawin -passin "$PIN" -inkey holdfast:pool-ed \
    -in "$T/msg" -out "$T/pool-ed.sig"
hf_expect_exit 0 openssl pkeyutl -verify -rawin -pubin -inkey "$T/pool-ed.pub" -in "$T/msg" \
    -sigfile "$T/pool-ed.sig"
expect_out "Signature Verified Successfully"

# Both members' tokens gone: a signature fails, nothing else answers for the pool.
for t in prov-a prov-b; do
    softhsm2-util --delete-token --token "$t" >/dev/null || hf_fail "softhsm2-util --delete-token $t"
done
hf_expect_exit 1 ossl pkeyutl $P -sign -passin "$PIN" -inkey holdfast:pool-rsa \
    -in "$T/msg.sha256" -out "$T/gone.sig" $pss
[ ! -s "$T/gone.sig" ] || hf_fail "a signature came out of a pool with no member"
echo "provider-pool: all checks passed"
