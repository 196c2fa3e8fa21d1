#!/bin/sh
# Clone-mode HSM pools (issue 14, must-show 2, clone), with the real CLI: a two-member pool on two
# SoftHSMv2 tokens, each behind its own copy of the fault shim so either can be made dead.
# - `holdfast key create --source pool:c1` puts the key on both members (store row "pool:c1", no
#   material; each token holds a sensitive object labelled with the version UUID, and the pool's
#   replication key), and ciphertexts decrypt with either member alone.
# - A key created while member b is dead is on b once b is back and the pool is opened again
#   (the open re-syncs every member in service), and then decrypts with b alone.
# - An RSA key made there has its private key on both members (sensitive, extractable only for
#   the copy), and what OpenSSL encrypted under its public key decrypts through the module
#   (pkcs11-tool, RSA-OAEP-SHA256) with either member alone; a version rotated while b is dead is
#   on b after its re-sync, and b alone decrypts with it.
# - Destroying a key removes its objects from both members.
. "${top_srcdir:-.}/tests/integration/lib.sh"
. "${top_srcdir:-.}/tests/integration/shim-lib.sh"

shim_need
command -v sqlite3 >/dev/null || hf_skip "sqlite3 not installed"
command -v pkcs11-tool >/dev/null || hf_skip "pkcs11-tool (OpenSC) not installed"
command -v openssl >/dev/null || hf_skip "openssl not installed"
hf_store_setup

hf() { "$HF_CLI" "$@"; }
# The members' tokens beside the root KEK's, in the key store's own SoftHSMv2; each member is
# reached through a shim copy whose dead file kills it.
hf_pool_tokens clone a b
for t in a b; do
    shim_copy "$t"
    conf "$SHIM_COPY"
done
A="$HF_TMP/a.so"
B="$HF_TMP/b.so"
hf_expect_exit 0 hf pool add c1 --mode clone --member "a,module=$A,token=clone-a,pin_env=HF_POOL_PIN" \
    --member "b,module=$B,token=clone-b,pin_env=HF_POOL_PIN"

# on TOKEN LABEL [TYPE]: whether the member token holds a key of TYPE (secrkey, or privkey)
# labelled LABEL (read directly, not through the shim, so a dead member can be looked at too).
on() {
    pkcs11-tool --module "$SOFTHSM_MODULE" --token-label "$1" --login --pin "$POOL_PIN" \
        --list-objects --type "${3:-secrkey}" >"$HF_TMP/objects" 2>&1 || hf_fail "pkcs11-tool on $1"
    grep -qF "label:      $2" "$HF_TMP/objects"
}
dead() { touch "$1.dead" && sleep 0.3; }
alive() { rm -f "$1.dead" && sleep 0.3; }
version_uuid() {
    hf_expect_exit 0 hf --json key show "$1"
    python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["versions"][-1]["uuid"])' \
        <"$HF_OUT" || hf_fail "key show --json $1: no version uuid"
}
decrypts() { # CIPHERTEXT: decrypts to the plaintext
    hf_expect_exit 0 hf decrypt --in "$1" --out "$1.out"
    cmp -s "$HF_TMP/plain" "$1.out" || hf_fail "decrypt of $1 gave something else"
}
# An RSA version through the module, by its CKA_ID (the version UUID's 16 bytes: pkcs11-tool 0.23
# finds a private key by --id, never by --label).
p11() { hf_ext pkcs11-tool --module "$HF_MODULE" "$@"; }
rsa_encrypt() { # VERSION_UUID OUT: OpenSSL's RSA-OAEP-SHA256 of the plaintext under its public key
    _id=$(printf %s "$1" | tr -d -)
    p11 --read-object --type pubkey --id "$_id" -o "$2.pub" >"$HF_TMP/p11.out" 2>&1 ||
        { cat "$HF_TMP/p11.out"; hf_fail "no public key $1 through the module"; }
    openssl pkeyutl -encrypt -pubin -keyform DER -inkey "$2.pub" -pkeyopt rsa_padding_mode:oaep \
        -pkeyopt rsa_oaep_md:sha256 -pkeyopt rsa_mgf1_md:sha256 -in "$HF_TMP/plain" -out "$2" ||
        hf_fail "openssl cannot encrypt under $1"
}
rsa_decrypts() { # VERSION_UUID CIPHERTEXT: the module decrypts it to the plaintext
    p11 --login --pin "$HF_USER_PIN" --decrypt --id "$(printf %s "$1" | tr -d -)" \
        -m RSA-PKCS-OAEP --hash-algorithm SHA256 --mgf MGF1-SHA256 -i "$2" -o "$2.out" \
        >"$HF_TMP/p11.out" 2>&1 || { cat "$HF_TMP/p11.out"; hf_fail "the module cannot decrypt $2"; }
    cmp -s "$HF_TMP/plain" "$2.out" || hf_fail "RSA decrypt of $2 gave something else"
}

# ---- a key on both members ----
hf_expect_exit 0 hf key create kc --alg AES-256 --source pool:c1
V1=$(version_uuid kc)
row=$(sqlite3 "$DB" "SELECT kek_label, wrapped IS NULL, state FROM key_versions WHERE uuid = '$V1'")
check "$row" "pool:c1|1|2" "the store row of a clone version (pool, no material, active)"
for t in a b; do
    on "clone-$t" "$V1" || { cat "$HF_TMP/objects"; hf_fail "clone-$t lacks $V1"; }
    grep -q "Access:.*sensitive" "$HF_TMP/objects" || hf_fail "clone-$t: not sensitive"
    on "clone-$t" "holdfast-pool-replication:c1" || hf_fail "clone-$t: no replication key"
done

# ---- either member alone decrypts ----
printf 'clone secret' >"$HF_TMP/plain"
hf_expect_exit 0 hf encrypt --key kc --in "$HF_TMP/plain" --out "$HF_TMP/c1"
dead "$A"
decrypts "$HF_TMP/c1"
hf_expect_exit 0 hf encrypt --key kc --in "$HF_TMP/plain" --out "$HF_TMP/c2"
alive "$A"
dead "$B"
decrypts "$HF_TMP/c1"
decrypts "$HF_TMP/c2"

# ---- an RSA key: its private key on both members, either member alone decrypts ----
alive "$B"
hf_expect_exit 0 hf key create kr --alg RSA-2048 --source pool:c1
R1=$(version_uuid kr)
check "$(sqlite3 "$DB" "SELECT kek_label, wrapped IS NULL, length(public_der) > 200 FROM key_versions WHERE uuid = '$R1'")" \
    "pool:c1|1|1" "the store row of a clone RSA version (pool, no material, a public key)"
for t in a b; do
    on "clone-$t" "$R1" privkey || { cat "$HF_TMP/objects"; hf_fail "clone-$t lacks private key $R1"; }
    grep -q "Access:.*sensitive" "$HF_TMP/objects" || hf_fail "clone-$t: $R1 not sensitive"
done
rsa_encrypt "$R1" "$HF_TMP/r1"
dead "$A"
rsa_decrypts "$R1" "$HF_TMP/r1"
alive "$A"
dead "$B"
rsa_decrypts "$R1" "$HF_TMP/r1"

# ---- created while b is dead: on b after b comes back ----
hf_expect_exit 0 hf key create kd --alg AES-256 --source pool:c1
V2=$(version_uuid kd)
hf_expect_exit 0 hf key rotate kc
V3=$(version_uuid kc)
hf_expect_exit 0 hf key rotate kr
R2=$(version_uuid kr)
on clone-a "$V2" || hf_fail "clone-a lacks $V2"
on clone-b "$V2" && hf_fail "clone-b got $V2 while dead"
on clone-b "$R2" privkey && hf_fail "clone-b got $R2 while dead"
hf_expect_exit 0 hf encrypt --key kd --in "$HF_TMP/plain" --out "$HF_TMP/d1"
hf_expect_exit 0 hf encrypt --key kc --in "$HF_TMP/plain" --out "$HF_TMP/c3"
rsa_encrypt "$R2" "$HF_TMP/r2"
alive "$B"
hf_expect_exit 0 hf pool probe c1 # any command that opens the pool re-syncs it
hf_expect_exit 0 hf key show kd
hf_expect_exit 0 hf encrypt --key kd --in "$HF_TMP/plain" --out "$HF_TMP/d2"
for v in "$V2" "$V3"; do on clone-b "$v" || hf_fail "clone-b lacks $v after its re-sync"; done
on clone-b "$R2" privkey || hf_fail "clone-b lacks private key $R2 after its re-sync"
dead "$A"
for c in c1 c2 c3 d1 d2; do decrypts "$HF_TMP/$c"; done
rsa_decrypts "$R2" "$HF_TMP/r2"
rsa_decrypts "$R1" "$HF_TMP/r1"
alive "$A"
grep -q '"op":"pool.resync".*member=b copied=3' "$HOLDFAST_STATE_DIR/audit.log" ||
    hf_fail "no pool.resync audit record for b's three copies"

# ---- destroy: gone from both ----
hf_expect_exit 0 hf key destroy kd --yes
for t in a b; do on "clone-$t" "$V2" && hf_fail "clone-$t still holds destroyed $V2"; done
exit 0
