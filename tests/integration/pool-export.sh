#!/bin/sh
# Export-mode HSM pools (issue 14, must-show 2, export), with the real CLI: a two-member export
# pool on two SoftHSMv2 tokens, each behind a copy of the fault shim so either can be made dead.
# A key made there keeps, beside its objects on both members, a blob wrapped under the pool's
# backup KEK in its store row; the store holds the backup KEK (under the root KEK) and the
# replication key's blob. Member a's token is then replaced by a fresh empty one with the same
# label, `holdfast pool restore e1 a` re-seeds it from the store alone, b is made dead, and the
# ciphertexts made before decrypt through a alone: AES-GCM through the CLI, and RSA-OAEP with an
# RSA key's private key (kept as its PKCS#8 under the backup KEK) through the module
# (pkcs11-tool). A clone pool, an unknown member and a second restore are refused or change
# nothing, and so is a version's blob moved to another's row.
. "${top_srcdir:-.}/tests/integration/lib.sh"
. "${top_srcdir:-.}/tests/integration/shim-lib.sh"

shim_need
command -v sqlite3 >/dev/null || hf_skip "sqlite3 not installed"
command -v pkcs11-tool >/dev/null || hf_skip "pkcs11-tool (OpenSC) not installed"
command -v openssl >/dev/null || hf_skip "openssl not installed"
hf_store_setup

hf() { "$HF_CLI" "$@"; }
expect_out() { grep -qF -- "$1" "$HF_OUT" || { cat "$HF_OUT"; hf_fail "stdout lacks '$1'"; }; }
expect_err() { grep -qF -- "$1" "$HF_ERR" || { cat "$HF_ERR"; hf_fail "stderr lacks '$1'"; }; }
hf_pool_tokens exp a b
for t in a b; do
    shim_copy "$t"
    conf "$SHIM_COPY"
done
A="$HF_TMP/a.so"
B="$HF_TMP/b.so"
hf_expect_exit 0 hf pool add e1 --mode export \
    --member "a,module=$A,token=exp-a,pin_env=HF_POOL_PIN" \
    --member "b,module=$B,token=exp-b,pin_env=HF_POOL_PIN"
hf_expect_exit 0 hf pool add c1 --mode clone --member "a,module=$A,token=exp-a,pin_env=HF_POOL_PIN"

on() { # TOKEN LABEL [TYPE]: as pool-clone.sh's
    pkcs11-tool --module "$SOFTHSM_MODULE" --token-label "$1" --login --pin "$POOL_PIN" \
        --list-objects --type "${3:-secrkey}" >"$HF_TMP/objects" 2>&1 || hf_fail "pkcs11-tool on $1"
    grep -qF "label:      $2" "$HF_TMP/objects"
}
version_uuid() {
    hf_expect_exit 0 hf --json key show "$1"
    python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["versions"][-1]["uuid"])' \
        <"$HF_OUT" || hf_fail "key show --json $1: no version uuid"
}
decrypts() {
    hf_expect_exit 0 hf decrypt --in "$1" --out "$1.out"
    cmp -s "$HF_TMP/plain" "$1.out" || hf_fail "decrypt of $1 gave something else"
}

# ---- a key, two versions, each with its backup in the store ----
hf_expect_exit 0 hf key create ke --alg AES-256 --source pool:e1
V1=$(version_uuid ke)
printf 'export secret' >"$HF_TMP/plain"
hf_expect_exit 0 hf encrypt --key ke --in "$HF_TMP/plain" --out "$HF_TMP/c1"
hf_expect_exit 0 hf key rotate ke
V2=$(version_uuid ke)
hf_expect_exit 0 hf encrypt --key ke --in "$HF_TMP/plain" --out "$HF_TMP/c2"
for v in "$V1" "$V2"; do
    row=$(sqlite3 "$DB" "SELECT kek_label, length(wrapped) > 32, state FROM key_versions WHERE uuid = '$v'")
    check "$row" "pool:e1|1|2" "the store row of export version $v (pool, a backup blob, active)"
    for t in a b; do on "exp-$t" "$v" || hf_fail "exp-$t lacks $v"; done
done
check "$(sqlite3 "$DB" "SELECT what FROM pool_backups WHERE pool = 'e1' ORDER BY what" | tr '\n' ' ')" \
    "backup-kek replication " "the pool's backups in the store"

# ---- an RSA key: its private key's backup in its row too ----
hf_expect_exit 0 hf key create kr --alg RSA-2048 --source pool:e1
R1=$(version_uuid kr)
R1_ID=$(printf %s "$R1" | tr -d -)
check "$(sqlite3 "$DB" "SELECT kek_label, length(wrapped) > 1024, length(public_der) > 200 FROM key_versions WHERE uuid = '$R1'")" \
    "pool:e1|1|1" "the store row of export RSA version $R1 (pool, a PKCS#8 backup blob, a public key)"
for t in a b; do on "exp-$t" "$R1" privkey || hf_fail "exp-$t lacks private key $R1"; done
# The module's public object (pkcs11-tool finds keys by --id, the version UUID's bytes).
p11() { hf_ext pkcs11-tool --module "$HF_MODULE" "$@"; }
p11 --read-object --type pubkey --id "$R1_ID" -o "$HF_TMP/r1.pub" >"$HF_TMP/p11.out" 2>&1 ||
    { cat "$HF_TMP/p11.out"; hf_fail "no public key $R1 through the module"; }
openssl pkeyutl -encrypt -pubin -keyform DER -inkey "$HF_TMP/r1.pub" -pkeyopt rsa_padding_mode:oaep \
    -pkeyopt rsa_oaep_md:sha256 -pkeyopt rsa_mgf1_md:sha256 -in "$HF_TMP/plain" -out "$HF_TMP/r1" ||
    hf_fail "openssl cannot encrypt under $R1"

# ---- refused: no change ----
hf_expect_exit 1 hf pool restore c1 a
expect_err "only an export pool keeps backups"
hf_expect_exit 3 hf pool restore e1 zz
hf_expect_exit 2 hf pool restore e1

# ---- a's token replaced by an empty one, restored from the store alone ----
fresh_a() {
    softhsm2-util --delete-token --token exp-a >/dev/null || hf_fail "softhsm2-util --delete-token"
    hf_pool_token_init exp-a
    on exp-a "$V1" && hf_fail "the fresh token already holds $V1"
}
fresh_a
touch "$B.dead" # the restore needs neither b nor the pool open
# A blob moved to another version's row (the row MAC does not cover it) restores nothing under
# that version's label: each blob is wrapped under a key derived for its own label.
V1_BLOB=$(sqlite3 "$DB" "SELECT hex(wrapped) FROM key_versions WHERE uuid = '$V1'")
sqlite3 "$DB" "UPDATE key_versions SET wrapped = (SELECT wrapped FROM key_versions WHERE uuid = '$V2') WHERE uuid = '$V1'"
hf_expect_exit 1 hf pool restore e1 a
expect_err "its backup did not unwrap"
on exp-a "$V1" && hf_fail "V2's blob in V1's row was restored as $V1"
sqlite3 "$DB" "UPDATE key_versions SET wrapped = X'$V1_BLOB' WHERE uuid = '$V1'"
fresh_a
hf_expect_exit 0 hf pool restore e1 a
expect_out "restored 4 objects to member 'a' of pool 'e1'"
for v in "$V1" "$V2" holdfast-pool-replication:e1; do
    on exp-a "$v" || hf_fail "exp-a lacks $v after the restore"
done
grep -q "Access:.*sensitive" "$HF_TMP/objects" || hf_fail "a restored key is not sensitive"
on exp-a "$R1" privkey || hf_fail "exp-a lacks private key $R1 after the restore"
grep -q "Access:.*sensitive" "$HF_TMP/objects" || hf_fail "a restored private key is not sensitive"
hf_expect_exit 0 hf pool restore e1 a
expect_out "restored 0 objects"
grep -q '"op":"pool.restore".*member=a restored=4 present=0' "$HOLDFAST_STATE_DIR/audit.log" ||
    hf_fail "no pool.restore audit record"

# ---- b dead: a alone decrypts what was encrypted before ----
sleep 0.3
decrypts "$HF_TMP/c1"
decrypts "$HF_TMP/c2"
p11 --login --pin "$HF_USER_PIN" --decrypt --id "$R1_ID" -m RSA-PKCS-OAEP --hash-algorithm SHA256 \
    --mgf MGF1-SHA256 -i "$HF_TMP/r1" -o "$HF_TMP/r1.out" >"$HF_TMP/p11.out" 2>&1 ||
    { cat "$HF_TMP/p11.out"; hf_fail "the restored member cannot decrypt under $R1"; }
cmp -s "$HF_TMP/plain" "$HF_TMP/r1.out" || hf_fail "RSA decrypt through a alone gave something else"
rm -f "$B.dead"
exit 0
