#!/bin/sh
# ECDH through OpenSC's pkcs11-tool --derive (CKM_ECDH1_DERIVE, CKD_NULL, the peer's point bare
# and with --derive-pass-der as DER) with a Holdfast EC key that has the derive usage, made by the
# CLI and by pkcs11-tool: the secret equals `openssl pkeyutl -derive` on the peer's side. A key
# without the derive usage derives nothing.
. "${top_srcdir:-.}/tests/integration/lib.sh"
command -v pkcs11-tool >/dev/null || hf_skip "pkcs11-tool (opensc) not installed"

hf_store_setup
p11() { hf_ext pkcs11-tool --module "$HF_MODULE" --login --pin "$HF_USER_PIN" "$@"; }

"$HF_CLI" key create ecdh-cli --alg EC-P256 --usage sign,verify,derive >/dev/null ||
    hf_fail "key create --usage derive"
"$HF_CLI" key show ecdh-cli | grep -q derive || hf_fail "key show does not list the derive usage"
"$HF_CLI" key create ec-nodrv --alg EC-P256 >/dev/null || hf_fail "cannot create EC key"
p11 --keypairgen --key-type EC:prime256v1 --usage-derive --label ecdh-p11 --id 0d >/dev/null 2>&1 ||
    hf_fail "pkcs11-tool --keypairgen --usage-derive"

# The peer, and Holdfast's public key as a SubjectPublicKeyInfo (the P-256 prefix before the
# point listed as CKA_EC_POINT, whose DER OCTET STRING header is dropped).
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$HF_TMP/peer.pem" 2>/dev/null ||
    hf_fail "openssl genpkey"
openssl pkey -in "$HF_TMP/peer.pem" -pubout -outform DER -out "$HF_TMP/peer.der" ||
    hf_fail "openssl pkey -pubout"
# pkcs11-tool --derive picks its key by --id (it ignores --label): each key's ID and EC_POINT.
hf_ext pkcs11-tool --module "$HF_MODULE" --list-objects --type pubkey 2>/dev/null |
    awk '/^[^ ]/ { if (hit) print l, id, p; p = id = ""; hit = 0 }
        $1 == "EC_POINT:" { p = $2 } $1 == "ID:" { id = $2 }
        $1 == "label:" { l = $2; hit = 1 } END { if (hit) print l, id, p }' >"$HF_TMP/keys"
key_id() { awk -v l="$1" '$1 == l { print $2 }' "$HF_TMP/keys"; }
spki_of() { # LABEL: Holdfast's public key of that label, DER, to stdout
    awk -v l="$1" '$1 == l { print $3 }' "$HF_TMP/keys" |
        sed 's/^0441/3059301306072a8648ce3d020106082a8648ce3d030107034200/' |
        python3 -c 'import sys; sys.stdout.buffer.write(bytes.fromhex(sys.stdin.read().strip()))'
}

for label in ecdh-cli ecdh-p11; do
    spki_of "$label" >"$HF_TMP/$label.pub.der"
    [ -s "$HF_TMP/$label.pub.der" ] || hf_fail "$label: no EC_POINT listed"
    openssl pkeyutl -derive -inkey "$HF_TMP/peer.pem" -peerkey "$HF_TMP/$label.pub.der" \
        -peerform DER -out "$HF_TMP/want.bin" || hf_fail "$label: openssl pkeyutl -derive"
    for form in "" --derive-pass-der; do
        rm -f "$HF_TMP/got.bin"
        p11 --derive -m ECDH1-DERIVE --id "$(key_id "$label")" $form --input-file "$HF_TMP/peer.der" \
            --output-file "$HF_TMP/got.bin" >"$HF_TMP/derive.out" 2>&1 ||
            { cat "$HF_TMP/derive.out"; hf_fail "$label: pkcs11-tool --derive $form"; }
        cmp -s "$HF_TMP/got.bin" "$HF_TMP/want.bin" ||
            hf_fail "$label: the derived secret ($form) differs from openssl pkeyutl -derive"
    done
done

p11 --derive -m ECDH1-DERIVE --id "$(key_id ec-nodrv)" --input-file "$HF_TMP/peer.der" \
    --output-file "$HF_TMP/got.bin" >"$HF_TMP/derive.out" 2>&1 &&
    hf_fail "a key without the derive usage derived"
grep -q CKR_KEY_FUNCTION_NOT_PERMITTED "$HF_TMP/derive.out" ||
    { cat "$HF_TMP/derive.out"; hf_fail "refusal is not CKR_KEY_FUNCTION_NOT_PERMITTED"; }

"$HF_CLI" audit verify >/dev/null || hf_fail "audit log does not verify after the derivations"
echo "pkcs11-derive: ok"
