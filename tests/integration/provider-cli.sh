#!/bin/sh
# The holdfast OpenSSL provider through the openssl CLI, one command at a time, each naming its
# providers itself (-provider default -provider holdfast; no global configuration), and every
# result checked with OpenSSL's default provider alone: list -providers; pkey -pubout of token
# keys; pkeyutl sign/verify (RSA-PSS, RSA PKCS#1, ECDSA) and decrypt (OAEP, PKCS#1); dgst
# digest-sign; req -x509; a TLS 1.3 handshake (s_server on a token key, s_client verifying);
# storeutl listings with and without a PIN; key versions; a refused PIN; private keys that do not
# come out; and the sample openssl-holdfast.cnf as OPENSSL_CONF.
. "${top_srcdir:-.}/tests/integration/lib.sh"

. "${top_srcdir:-.}/tests/integration/provider-lib.sh"

"$HF_CLI" key create prov-rsa --alg RSA-3072 --usage sign,verify,encrypt,decrypt >/dev/null ||
    hf_fail "key create prov-rsa"
"$HF_CLI" key create prov-ec --alg EC-P256 >/dev/null || hf_fail "key create prov-ec"

# ---- list -providers --------------------------------------------------------------------------
hf_expect_exit 0 ossl list -providers $P
expect_out "holdfast"
expect_out "Holdfast PKCS#11 provider"
hf_expect_exit 0 ossl list -store-loaders $P
expect_out "pkcs11 @ holdfast"
expect_out "holdfast @ holdfast"

# ---- pkey -pubout: the public half of token keys ----------------------------------------------
hf_expect_exit 0 ossl pkey $P -passin "$PIN" -in holdfast:prov-ec -pubout -out "$T/ec.pub"
hf_expect_exit 0 ossl pkey $P -passin "$PIN" -in 'pkcs11:object=prov-rsa;type=private' -pubout \
    -out "$T/rsa.pub"
# The public key objects (no PIN needed) say the same.
hf_expect_exit 0 ossl pkey $P -pubin -in 'pkcs11:object=prov-ec;type=public' -pubout
cmp -s "$HF_OUT" "$T/ec.pub" || hf_fail "private and public objects of prov-ec disagree"
# The default provider alone reads what we wrote.
hf_expect_exit 0 openssl pkey -pubin -in "$T/rsa.pub" -text_pub -noout
expect_out "Public-Key: (3072 bit)"
hf_expect_exit 0 openssl pkey -pubin -in "$T/ec.pub" -text_pub -noout
expect_out "NIST CURVE: P-256"

# ---- pkeyutl: sign here, verify with the default provider ------------------------------------
printf 'the message to sign\n' >"$T/msg"
openssl dgst -sha256 -binary "$T/msg" >"$T/msg.sha256"
hf_expect_exit 0 ossl pkeyutl $P -sign -passin "$PIN" -inkey holdfast:prov-ec \
    -in "$T/msg.sha256" -out "$T/ec.sig" -pkeyopt digest:sha256
hf_expect_exit 0 openssl pkeyutl -verify -pubin -inkey "$T/ec.pub" -in "$T/msg.sha256" \
    -sigfile "$T/ec.sig"
expect_out "Signature Verified Successfully"

pss="-pkeyopt digest:sha256 -pkeyopt rsa_padding_mode:pss -pkeyopt rsa_pss_saltlen:digest"
hf_expect_exit 0 ossl pkeyutl $P -sign -passin "$PIN" -inkey holdfast:prov-rsa \
    -in "$T/msg.sha256" -out "$T/pss.sig" $pss
hf_expect_exit 0 openssl pkeyutl -verify -pubin -inkey "$T/rsa.pub" -in "$T/msg.sha256" \
    -sigfile "$T/pss.sig" $pss
expect_out "Signature Verified Successfully"
# PSS salt is random: two signatures differ, and both verify.
hf_expect_exit 0 ossl pkeyutl $P -sign -passin "$PIN" -inkey holdfast:prov-rsa \
    -in "$T/msg.sha256" -out "$T/pss2.sig" $pss
cmp -s "$T/pss.sig" "$T/pss2.sig" && hf_fail "two PSS signatures are identical"
# A signature over another digest does not verify.
openssl dgst -sha256 -binary "$T/ec.pub" >"$T/other.sha256"
hf_expect_exit 1 openssl pkeyutl -verify -pubin -inkey "$T/rsa.pub" -in "$T/other.sha256" \
    -sigfile "$T/pss.sig" $pss

hf_expect_exit 0 ossl pkeyutl $P -sign -passin "$PIN" -inkey holdfast:prov-rsa \
    -in "$T/msg.sha256" -out "$T/pkcs1.sig" -pkeyopt digest:sha256
hf_expect_exit 0 openssl pkeyutl -verify -pubin -inkey "$T/rsa.pub" -in "$T/msg.sha256" \
    -sigfile "$T/pkcs1.sig" -pkeyopt digest:sha256

# Digest-sign: the provider hashes, the token signs.
hf_expect_exit 0 ossl dgst $P -sha384 -sign holdfast:prov-ec -passin "$PIN" -out "$T/d.sig" "$T/msg"
hf_expect_exit 0 openssl dgst -sha384 -verify "$T/ec.pub" -signature "$T/d.sig" "$T/msg"
expect_out "Verified OK"
# Verification through the provider itself (it hands the work to the default provider).
hf_expect_exit 0 ossl dgst $P -sha384 -prverify holdfast:prov-ec -passin "$PIN" \
    -signature "$T/d.sig" "$T/msg"
expect_out "Verified OK"

# ---- pkeyutl decrypt: encrypt with the default provider, decrypt on the token -----------------
oaep="-pkeyopt rsa_padding_mode:oaep -pkeyopt rsa_oaep_md:sha256 -pkeyopt rsa_mgf1_md:sha256"
head -c 100 /dev/urandom >"$T/secret"
openssl pkeyutl -encrypt -pubin -inkey "$T/rsa.pub" -in "$T/secret" -out "$T/oaep.bin" $oaep ||
    hf_fail "OAEP encryption with the default provider"
hf_expect_exit 0 ossl pkeyutl $P -decrypt -passin "$PIN" -inkey holdfast:prov-rsa \
    -in "$T/oaep.bin" -out "$T/secret.oaep" $oaep
cmp -s "$T/secret" "$T/secret.oaep" || hf_fail "OAEP round trip"
# The wrong OAEP digest fails rather than returning garbage.
hf_expect_exit 1 ossl pkeyutl $P -decrypt -passin "$PIN" -inkey holdfast:prov-rsa \
    -in "$T/oaep.bin" -out "$T/garbage" -pkeyopt rsa_padding_mode:oaep
openssl pkeyutl -encrypt -pubin -inkey "$T/rsa.pub" -in "$T/secret" -out "$T/pkcs1.bin" ||
    hf_fail "PKCS#1 encryption with the default provider"
hf_expect_exit 0 ossl pkeyutl $P -decrypt -passin "$PIN" -inkey holdfast:prov-rsa \
    -in "$T/pkcs1.bin" -out "$T/secret.pkcs1"
cmp -s "$T/secret" "$T/secret.pkcs1" || hf_fail "PKCS#1 v1.5 round trip"

# ---- req -x509: self-signed certificates on token keys ----------------------------------------
for k in ec rsa; do
    hf_expect_exit 0 ossl req $P -x509 -new -key "holdfast:prov-$k" -passin "$PIN" \
        -subj "/CN=prov-$k.test" -addext "subjectAltName=DNS:prov-$k.test" -days 2 \
        -out "$T/$k.crt"
    hf_expect_exit 0 openssl verify -CAfile "$T/$k.crt" "$T/$k.crt"
    openssl x509 -in "$T/$k.crt" -pubkey -noout | cmp -s - "$T/$k.pub" ||
        hf_fail "the $k certificate holds another public key"
done
hf_expect_exit 0 ossl req $P -x509 -new -key holdfast:prov-rsa -passin "$PIN" -subj /CN=pss \
    -days 2 -sigopt rsa_padding_mode:pss -sigopt rsa_pss_saltlen:digest -out "$T/pss.crt"
hf_expect_exit 0 openssl verify -CAfile "$T/pss.crt" "$T/pss.crt"
hf_expect_exit 0 openssl x509 -in "$T/pss.crt" -noout -text
expect_out "rsassaPss"

# ---- TLS 1.3: s_server signs with the token key, s_client verifies ---------------------------
tls_check() { # KEY
    port=$(hf_free_port)
    hf_ext openssl s_server $P -accept "127.0.0.1:$port" -key "holdfast:prov-$1" -pass "$PIN" \
        -cert "$T/$1.crt" -tls1_3 -naccept 1 -www >"$T/server-$1.log" 2>&1 &
    spid=$!
    hf_on_exit "kill $spid 2>/dev/null"
    i=0
    while ! grep -q ACCEPT "$T/server-$1.log" 2>/dev/null; do
        i=$((i + 1))
        [ "$i" -lt 100 ] || { cat "$T/server-$1.log"; hf_fail "s_server ($1) did not start"; }
        kill -0 "$spid" 2>/dev/null || { cat "$T/server-$1.log"; hf_fail "s_server ($1) died"; }
        sleep 0.1
    done
    echo "GET / HTTP/1.0" | timeout 20 openssl s_client -connect "127.0.0.1:$port" -tls1_3 \
        -CAfile "$T/$1.crt" -verify_return_error -verify_hostname "prov-$1.test" \
        -servername "prov-$1.test" >"$T/client-$1.log" 2>&1 ||
        { cat "$T/client-$1.log" "$T/server-$1.log"; hf_fail "TLS handshake with the $1 key"; }
    grep -q "Verify return code: 0 (ok)" "$T/client-$1.log" ||
        hf_fail "$1: certificate not verified"
    grep -q "TLSv1.3" "$T/client-$1.log" || hf_fail "$1: not TLS 1.3"
    grep -q "Peer signature type: $2" "$T/client-$1.log" || hf_fail "$1: signature type not $2"
    wait "$spid" 2>/dev/null || true
}
tls_check ec ECDSA
tls_check rsa RSA-PSS

# ---- storeutl --------------------------------------------------------------------------------
hf_expect_exit 0 ossl storeutl $P -noout -passin "$PIN" 'pkcs11:'
expect_out "Total found: 4"
[ "$(grep -c ': Pkey' "$HF_OUT")" -eq 2 ] || hf_fail "storeutl: not 2 private keys"
[ "$(grep -c ': Public key' "$HF_OUT")" -eq 2 ] || hf_fail "storeutl: not 2 public keys"
# No PIN anywhere (no config, no -passin, no terminal): the public objects only.
hf_expect_exit 0 ossl storeutl $P -noout 'pkcs11:token=holdfast' </dev/null
expect_out "Total found: 2"
hf_expect_exit 0 ossl storeutl $P -noout 'pkcs11:token=no-such-token' </dev/null
expect_out "Total found: 0"
hf_expect_exit 0 ossl storeutl $P -noout -passin "$PIN" 'pkcs11:object=prov-ec'
expect_out "Total found: 2"
# A private key demanded without a PIN is an error that says what is missing.
hf_expect_exit 1 ossl pkey $P -in 'pkcs11:object=prov-ec;type=private' -pubout </dev/null
expect_err "needs a PIN"
# An attribute we do not understand never matches.
hf_expect_exit 1 ossl storeutl $P -noout -passin "$PIN" 'pkcs11:object=prov-ec;colour=blue'
expect_err "unknown path attribute"

# Key versions: after a rotation holdfast:NAME is the new version, ;version=1 the old one.
"$HF_CLI" key rotate prov-ec >/dev/null || hf_fail "key rotate"
hf_expect_exit 0 ossl pkey $P -passin "$PIN" -in 'holdfast:prov-ec;version=1' -pubout
cmp -s "$HF_OUT" "$T/ec.pub" || hf_fail "version 1 is not the original key"
hf_expect_exit 0 ossl pkey $P -passin "$PIN" -in holdfast:prov-ec -pubout
cmp -s "$HF_OUT" "$T/ec.pub" && hf_fail "holdfast:prov-ec still names version 1 after rotation"
hf_expect_exit 0 ossl storeutl $P -noout -passin "$PIN" 'holdfast:prov-ec;version=3'
expect_out "Total found: 0"

# ---- what must not happen ------------------------------------------------------------------------
# Private key material has no way out: no PEM, no text.
hf_expect_exit 1 ossl pkey $P -passin "$PIN" -in holdfast:prov-ec -out "$T/priv.pem"
grep -q "PRIVATE KEY" "$T/priv.pem" 2>/dev/null && hf_fail "a private key came out as PEM"
expect_err "the private key stays in the token"
hf_expect_exit 1 ossl pkey $P -passin "$PIN" -in holdfast:prov-rsa -outform DER -out "$T/priv.der"
[ -s "$T/priv.der" ] && hf_fail "a private key came out as DER"
# A wrong PIN is reported as such.
hf_expect_exit 1 ossl pkey $P -passin pass:not-the-pin -in holdfast:prov-ec -pubout
expect_err "the token refused the PIN"

# ---- the sample configuration, as an application would use it -------------------------------
sed -e "s|^module = holdfast.so|module = $provider_dir/holdfast.so|" \
    -e "s|^#pkcs11-module-path = .*|pkcs11-module-path = $HF_MODULE|" \
    -e "s|^#pkcs11-module-pin = .*|pkcs11-module-pin = $PIN|" \
    "$top_srcdir/conf/openssl-holdfast.cnf" >"$T/openssl.cnf"
unset HOLDFAST_PKCS11_MODULE
export OPENSSL_CONF="$T/openssl.cnf"
# No -provider, no -passin: the configuration names the module and the PIN.
hf_expect_exit 0 ossl pkey -in 'holdfast:prov-ec;version=1' -pubout </dev/null
cmp -s "$HF_OUT" "$T/ec.pub" || hf_fail "pkey through openssl-holdfast.cnf"
hf_expect_exit 0 ossl list -providers
expect_out "Holdfast PKCS#11 provider"
exit 0
