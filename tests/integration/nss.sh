#!/bin/sh
# NSS (Firefox, Thunderbird, certutil) loads the module from its security database, and
# certutil -R makes certificate requests with token keys: a pair it generates there (-k rsa)
# and an existing one named by its CKA_ID (-k ID). openssl req -verify accepts each signature
# and the request's public key is the token key's, as pkcs11-tool reads it by id.
. "${top_srcdir:-.}/tests/integration/lib.sh"
command -v modutil >/dev/null || hf_skip "modutil (libnss3-tools) not installed"

hf_store_setup
db="sql:$HF_TMP/nssdb"
mkdir -p "$HF_TMP/nssdb"
modutil -create -dbdir "$db" -force >/dev/null 2>&1 || hf_fail "modutil -create failed"
hf_ext modutil -dbdir "$db" -add holdfast -libfile "$HF_MODULE" -force >"$HF_TMP/add" 2>&1 ||
    { cat "$HF_TMP/add"; hf_fail "modutil -add failed"; }
hf_ext modutil -dbdir "$db" -list -force >"$HF_TMP/list" 2>&1 || { cat "$HF_TMP/list"; hf_fail "modutil -list failed"; }
cat "$HF_TMP/list"
grep -q "library name: $HF_MODULE" "$HF_TMP/list" || hf_fail "modutil does not list the module"
grep -q "token: holdfast" "$HF_TMP/list" || hf_fail "modutil does not see the token"
grep -qi "DISABLED" "$HF_TMP/list" && hf_fail "NSS disabled the slot"
echo "nss: module listed"

# ---- certutil -R: a certificate request signed by a key pair made on the token ----
command -v certutil >/dev/null || hf_skip "certutil (libnss3-tools) not installed"
command -v pkcs11-tool >/dev/null || hf_skip "pkcs11-tool (opensc) not installed"
printf '%s\n' "$HF_USER_PIN" >"$HF_TMP/pin" # NSS reads the token PIN from a password file
printf 'holdfast nss noise %s\n' "$$" >"$HF_TMP/noise"
nss_req() { # OUT ARGS...: certutil -R on the token, PEM request in OUT
    _out=$1
    shift
    hf_ext certutil -R -d "$db" -h holdfast -f "$HF_TMP/pin" -z "$HF_TMP/noise" -a -o "$_out" \
        "$@" >"$HF_TMP/certutil.out" 2>&1 || { cat "$HF_TMP/certutil.out"; hf_fail "certutil -R $*"; }
    openssl req -in "$_out" -verify -noout >"$HF_TMP/verify.out" 2>&1 ||
        { cat "$HF_TMP/verify.out" "$_out"; hf_fail "openssl req -verify refuses certutil's request"; }
    grep -q "verify OK" "$HF_TMP/verify.out" || hf_fail "openssl req -verify: $(cat "$HF_TMP/verify.out")"
}
req_pub() { openssl req -in "$1" -pubkey -noout | openssl pkey -pubin -outform DER >"$2"; }

# A new pair: NSS calls C_GenerateKeyPair on the token, then sets CKA_ID to its public key hash.
nss_req "$HF_TMP/req1.pem" -s "CN=nss request,O=Holdfast" -k rsa -g 2048
openssl req -in "$HF_TMP/req1.pem" -noout -subject | grep -q "CN *= *nss request" ||
    hf_fail "request subject: $(openssl req -in "$HF_TMP/req1.pem" -noout -subject)"
hf_ext certutil -K -d "$db" -h holdfast -f "$HF_TMP/pin" >"$HF_TMP/keys" 2>&1 || { cat "$HF_TMP/keys"; hf_fail "certutil -K"; }
id=$(awk '$3 == "rsa" { print $4; exit }' "$HF_TMP/keys")
[ -n "$id" ] || hf_fail "certutil -K lists no RSA key on the token: $(cat "$HF_TMP/keys")"
# The request's public key is the token key's (read back by its CKA_ID, by another program).
hf_ext pkcs11-tool --module "$HF_MODULE" --read-object --type pubkey --id "$id" -o "$HF_TMP/tok.der" \
    >"$HF_TMP/read.out" 2>&1 || { cat "$HF_TMP/read.out"; hf_fail "pkcs11-tool cannot read the public key $id"; }
req_pub "$HF_TMP/req1.pem" "$HF_TMP/req1.der"
cmp -s "$HF_TMP/req1.der" "$HF_TMP/tok.der" || hf_fail "the request's public key is not the token key's"
"$HF_CLI" key list | grep -q 'RSA-2048' || hf_fail "no RSA-2048 managed key after certutil -R"

# An existing token key named by its id (-k): the same public key in a second request.
nss_req "$HF_TMP/req2.pem" -s "CN=nss again" -k "$id"
req_pub "$HF_TMP/req2.pem" "$HF_TMP/req2.der"
cmp -s "$HF_TMP/req2.der" "$HF_TMP/tok.der" || hf_fail "certutil -R -k $id signed with another key"
echo "nss: certutil -R requests signed by token keys"
