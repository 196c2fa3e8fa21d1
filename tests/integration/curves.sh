#!/bin/sh
# EC P-521 and Ed25519 as OpenSC's pkcs11-tool uses them: key pairs generated through the module
# and by the CLI sign, pkcs11-tool verifies through the module, and OpenSSL verifies the
# signature against the public key the module exports.
. "${top_srcdir:-.}/tests/integration/lib.sh"
command -v pkcs11-tool >/dev/null || hf_skip "pkcs11-tool (opensc) not installed"
command -v openssl >/dev/null || hf_skip "openssl not installed"

hf_store_setup
p11() { hf_ext pkcs11-tool --module "$HF_MODULE" "$@"; }
out="$HF_TMP/p11.out"
printf 'a message for the curves test\n' >"$HF_TMP/msg"

# rs_to_der IN OUT: PKCS#11's r || s as the DER ECDSA-Sig-Value OpenSSL verifies. Ours, not
# pkcs11-tool's --signature-format openssl: OpenSC 0.23 sometimes gets a P-521 one wrong (seen).
rs_to_der() {
    hex=$(od -An -v -tx1 "$1" | tr -d ' \n')
    half=$((${#hex} / 2))
    printf 'asn1=SEQUENCE:sig\n[sig]\nr=INTEGER:0x%s\ns=INTEGER:0x%s\n' \
        "$(printf %s "$hex" | cut -c1-$half)" "$(printf %s "$hex" | cut -c$((half + 1))-)" >"$2.cnf"
    openssl asn1parse -genconf "$2.cnf" -out "$2" >/dev/null || hf_fail "cannot make DER of $1"
}

# pub_spki LABEL OUT: the SubjectPublicKeyInfo (DER) of the public key object labelled LABEL,
# from the CKA_EC_POINT and CKA_EC_PARAMS pkcs11-tool lists; its CKA_ID in $id. Not --read-object: OpenSC 0.23
# reads an EC public key after freeing its curve name (ASan shows it) and has exported a P-521
# key that is not the token's (seen).
pub_spki() {
    p11 --list-objects --type pubkey >"$out" 2>&1 || { cat "$out"; hf_fail "cannot list public keys"; }
    set -- "$1" "$2" $(awk -v l="$1" '/^[^ ]/ { if (hit) print pt, pa, id; pt = pa = id = ""; hit = 0 }
        $1 == "EC_POINT:" { pt = $2 } $1 == "EC_PARAMS:" { pa = $2 } $1 == "ID:" { id = $2 }
        $1 == "label:" { sub(/^ *label: +/, ""); if ($0 == l) hit = 1 }
        END { if (hit) print pt, pa, id }' "$out")
    point=$3 params=$4 id=$5
    [ -n "$point" ] || { cat "$out"; hf_fail "$1: no EC_POINT listed"; }
    case $point in 0481*) point=${point#??????} ;; *) point=${point#????} ;; esac
    case $params in
    06052b81040023) alg='oid=OID:id-ecPublicKey\ncurve=OID:secp521r1' ;;
    06032b6570 | 130c656477617264733235353139) alg='oid=OID:ED25519' ;;
    *) hf_fail "$1: unexpected EC_PARAMS $params" ;;
    esac
    printf 'asn1=SEQUENCE:spki\n[spki]\nalg=SEQUENCE:alg\nkey=FORMAT:HEX,BITSTRING:%s\n[alg]\n%b\n' \
        "$point" "$alg" >"$2.cnf"
    openssl asn1parse -genconf "$2.cnf" -out "$2" >/dev/null || hf_fail "$1: cannot make its SPKI"
}

# sign_verify LABEL MECH OPENSSL_ARGS...: pkcs11-tool signs with the key labelled LABEL and
# verifies through the module; OpenSSL verifies with the public key the module lists. By --id:
# pkcs11-tool 0.23's --sign ignores --label and takes the first private key.
sign_verify() {
    label=$1 mech=$2
    shift 2
    sig="$HF_TMP/$label.sig"
    pub_spki "$label" "$HF_TMP/$label.pub.der"
    p11 --login --pin "$HF_USER_PIN" --sign --id "$id" -m "$mech" \
        -i "$HF_TMP/msg" -o "$sig" >"$out" 2>&1 || { cat "$out"; hf_fail "$label: --sign -m $mech failed"; }
    p11 --verify --id "$id" -m "$mech" -i "$HF_TMP/msg" \
        --signature-file "$sig" >"$out" 2>&1 || { cat "$out"; hf_fail "$label: --verify -m $mech failed"; }
    grep -q "Signature is valid" "$out" || { cat "$out"; hf_fail "$label: signature not valid"; }
    openssl pkey -pubin -inform DER -in "$HF_TMP/$label.pub.der" -out "$HF_TMP/$label.pub.pem" ||
        hf_fail "$label: the public key is no SubjectPublicKeyInfo"
    [ "$mech" = EDDSA ] || { rs_to_der "$sig" "$sig.der" && sig="$sig.der"; }
    openssl pkeyutl -verify -pubin -inkey "$HF_TMP/$label.pub.pem" "$@" -in "$HF_TMP/msg" \
        -sigfile "$sig" >"$out" 2>&1 || { cat "$out"; hf_fail "$label: OpenSSL does not verify"; }
}

# P-521: ECDSA-SHA256, r || s of 66 + 66 bytes.
p11 --login --pin "$HF_USER_PIN" --keypairgen --key-type EC:secp521r1 --label p11-p521 >"$out" 2>&1 ||
    { cat "$out"; hf_fail "--keypairgen --key-type EC:secp521r1 failed"; }
grep -q "EC_PARAMS: *06052b81040023" "$out" || { cat "$out"; hf_fail "the new key is not on secp521r1"; }
sign_verify p11-p521 ECDSA-SHA256 -digest sha256 -rawin
[ "$(wc -c <"$HF_TMP/p11-p521.sig")" -eq 132 ] || hf_fail "a P-521 signature is not 132 bytes"
"$HF_CLI" key create cli-p521 --alg EC-P521 >/dev/null || hf_fail "holdfast key create --alg EC-P521 failed"
"$HF_CLI" key show cli-p521 | grep -q "EC-P521" || hf_fail "holdfast key show does not say EC-P521"
sign_verify cli-p521 ECDSA-SHA256 -digest sha256 -rawin
"$HF_CLI" key show p11-p521 | grep -q "EC-P521" || hf_fail "the pkcs11-tool key is not EC-P521 in the store"

echo "curves: P-521 passed"

# Ed25519: CKM_EDDSA signs the message itself (RFC 8032 pure); OpenSSL verifies with -rawin.
if ! pkcs11-tool --help 2>&1 | grep -q "ed25519"; then
    echo "curves: this pkcs11-tool has no EC:edwards25519 key type; Ed25519 part skipped"
else
    p11 --login --pin "$HF_USER_PIN" --keypairgen --key-type EC:edwards25519 --label p11-ed \
        >"$out" 2>&1 || { cat "$out"; hf_fail "--keypairgen --key-type EC:edwards25519 failed"; }
    grep -q "EC_EDWARDS" "$out" || { cat "$out"; hf_fail "the new key is not CKK_EC_EDWARDS"; }
    sign_verify p11-ed EDDSA -rawin
    [ "$(wc -c <"$HF_TMP/p11-ed.sig")" -eq 64 ] || hf_fail "an Ed25519 signature is not 64 bytes"
    "$HF_CLI" key create cli-ed --alg Ed25519 >/dev/null || hf_fail "holdfast key create --alg Ed25519 failed"
    "$HF_CLI" key show cli-ed | grep -q "Ed25519" || hf_fail "holdfast key show does not say Ed25519"
    sign_verify cli-ed EDDSA -rawin
    echo "curves: Ed25519 passed"
fi

# pkcs11-tool --test walks every key and mechanism: P-521 and Ed25519 keys must not upset it.
p11 --login --pin "$HF_USER_PIN" --test >"$out" 2>&1 || { cat "$out"; hf_fail "pkcs11-tool --test failed"; }
grep -q "No errors" "$out" || { cat "$out"; hf_fail "pkcs11-tool --test reported errors"; }

"$HF_CLI" audit verify >/dev/null || hf_fail "audit log does not verify"
