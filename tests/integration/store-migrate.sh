#!/bin/sh
# Issue 15: `holdfast store migrate --from sqlite:PATH --to postgresql://...` moves an embedded
# store into a cluster store. A SQLite store made by `holdfast init` gets keys (AES rotated, a
# destroyed version, a destroyed key, EC, one in an export HSM pool with its backups), labels,
# links (one blocked), a link type, a certificate and data objects (one deleted, so SQLite's id
# high-water mark is above the highest row), and ciphertexts; it is migrated into a private
# PostgreSQL (pg-lib.sh) and the config pointed there. Then: key, link, link type, object and
# pool listings are what they were (--json, byte for byte), every table's rows are the same
# (sqlite3 vs psql, ids and MACs included), the blocked link is still blocked, the old
# ciphertexts decrypt, `store check` and `audit verify` pass, new keys, links and objects get
# new ids (the sequences were moved past the copied ones, also past the deleted object's), a
# second migration into the now filled server is refused and changes nothing, and a missing
# source, a locator of the wrong kind and a URI with a password fail cleanly, creating nothing.
. "${top_srcdir:-.}/tests/integration/lib.sh"
. "${top_srcdir:-.}/tests/integration/pg-lib.sh"

command -v sqlite3 >/dev/null || hf_skip "sqlite3 not installed"
command -v python3 >/dev/null || hf_skip "python3 not installed"
hf_pg_start
hf_store_setup
T=$HF_TMP
DB="$HOLDFAST_STATE_DIR/holdfast.db"
[ -f "$DB" ] || DB=$(ls "$HOLDFAST_STATE_DIR"/*.db | head -n 1)
[ -f "$DB" ] || hf_fail "hf_store_setup made no SQLite store"

hf() { "$HF_CLI" "$@"; }
expect_out() { grep -qF -- "$1" "$HF_OUT" || { cat "$HF_OUT"; hf_fail "stdout lacks '$1'"; }; }
expect_err() { grep -qF -- "$1" "$HF_ERR" || { cat "$HF_ERR"; hf_fail "stderr lacks '$1'"; }; }
psql_q() { psql -qtA -h 127.0.0.1 -p "$HF_PG_PORT" -U holdfast -d holdfast -c "$1"; }

# ---- the embedded store -----------------------------------------------------------------------
hf_expect_exit 0 hf key create payroll --label team=finance
echo "made before the rotation" | hf encrypt --key payroll >"$T/blob1" || hf_fail "encrypt v1"
hf_expect_exit 0 hf key rotate payroll
echo "made after the rotation" | hf encrypt --key payroll >"$T/blob2" || hf_fail "encrypt v2"
hf_expect_exit 0 hf key create ledger
echo "a ledger line" | hf encrypt --key ledger >"$T/blob3" || hf_fail "encrypt ledger v1"
hf_expect_exit 0 hf key rotate ledger
hf_expect_exit 0 hf key version deactivate ledger 1
hf_expect_exit 0 hf key version destroy ledger 1 --yes
hf_expect_exit 0 hf key create signer --alg EC-P256
hf_expect_exit 0 hf key create gone
hf_expect_exit 0 hf key destroy gone --yes
hf_expect_exit 0 hf link type add my-cloud
hf_expect_exit 0 hf link add aws-xks xks-payroll payroll
hf_expect_exit 0 hf link add my-cloud mc-signer signer
hf_expect_exit 0 hf link add gcp-ekm ekm-payroll payroll
hf_expect_exit 0 hf link block gcp-ekm ekm-payroll

# An export pool (pools, pool_members, pool_backups) and a key made in it.
hf_pool_tokens mig a
hf_expect_exit 0 hf pool add e1 --mode export \
    --member "a,module=$SOFTHSM_MODULE,token=mig-a,pin_env=HF_POOL_PIN"
hf_expect_exit 0 hf key create pooled --source pool:e1
echo "a pool key's line" | hf encrypt --key pooled >"$T/blob4" || hf_fail "encrypt pooled"

# Objects: a certificate and data objects through PKCS#11; the last one deleted.
if command -v pkcs11-tool >/dev/null; then
    p11() { hf_ext pkcs11-tool --module "$HF_MODULE" --login --pin "$HF_USER_PIN" "$@" >>"$T/p11.out" 2>&1; }
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$T/c.key" \
        -subj "/CN=migrate.test" -days 2 -outform DER -out "$T/c.der" 2>/dev/null || hf_fail "openssl req"
    p11 --write-object "$T/c.der" --type cert --id 42 --label "a cert" || { cat "$T/p11.out"; hf_fail "write cert"; }
    printf 'data one\n' >"$T/d1"
    p11 --write-object "$T/d1" --type data --label "data one" || { cat "$T/p11.out"; hf_fail "write data one"; }
    p11 --write-object "$T/d1" --type data --label "data two" || { cat "$T/p11.out"; hf_fail "write data two"; }
    last=$(sqlite3 "$DB" "SELECT max(id) FROM objects")
    hf_expect_exit 0 hf object delete "$last" --yes
    OBJECTS=yes
else
    echo "pkcs11-tool (opensc) not installed: no certificate or data objects moved"
    OBJECTS=
fi
[ -z "$OBJECTS" ] || [ "$(sqlite3 "$DB" "SELECT seq FROM sqlite_sequence WHERE name = 'objects'")" -gt \
    "$(sqlite3 "$DB" "SELECT max(id) FROM objects")" ] || hf_fail "no deleted object above the highest id"

listings() { # DIR: every listing the CLI gives, as JSON
    mkdir -p "$1"
    hf --json key list >"$1/keys" || hf_fail "key list"
    for k in payroll ledger signer gone pooled; do hf --json key show "$k" >"$1/key-$k" || hf_fail "key show $k"; done
    hf --json link list >"$1/links" || hf_fail "link list"
    hf --json link types >"$1/link-types" || hf_fail "link types"
    hf --json object list >"$1/objects" || hf_fail "object list"
    hf --json pool list >"$1/pools" || hf_fail "pool list"
}
listings "$T/before"
hf_expect_exit 0 hf store check

# Every table's rows as text (blobs in hex), sorted: the same dump from either side.
TABLES="keys key_labels key_versions links link_types meta objects pools pool_members pool_backups"
COLS_keys="uuid name alg bits usage state owner source exportable created updated current_version mac"
COLS_key_labels="key_uuid name value"
COLS_key_versions="id uuid key_uuid version state created kek_label wrapped public_der mac"
COLS_links="id type ext_id key_uuid blocked created updated mac"
COLS_link_types="name created"
COLS_meta="name value"
COLS_objects="id class private label ckaid value attrs created"
COLS_pools="name mode created updated mac"
COLS_pool_members="pool position name module_path token_label token_serial pin_file pin_env concurrency"
COLS_pool_backups="pool what blob"
BLOBS=" keys.mac key_versions.wrapped key_versions.public_der key_versions.mac links.mac"
BLOBS="$BLOBS objects.label objects.ckaid objects.value objects.attrs pools.mac pool_backups.blob "
dump() { # sqlite|pg FILE
    for t in $TABLES; do
        eval cols=\$COLS_$t
        sel=
        for c in $cols; do
            case "$BLOBS" in
            *" $t.$c "*) if [ "$1" = sqlite ]; then e="CASE WHEN $c IS NULL THEN NULL ELSE lower(hex($c)) END"; else e="encode($c, 'hex')"; fi ;;
            *) e="($c || '')" ;;
            esac
            sel="$sel || '|' || coalesce($e, 'NULL')"
        done
        if [ "$1" = sqlite ]; then
            sqlite3 "$DB" "SELECT '$t' $sel FROM $t" || hf_fail "sqlite3 dump $t"
        else
            psql_q "SELECT '$t' $sel FROM $t" || hf_fail "psql dump $t"
        fi
    done | LC_ALL=C sort >"$2"
}

# ---- refusals that change nothing --------------------------------------------------------------
hf_expect_exit 3 hf store migrate --from "sqlite:$T/nothing.db" --to "$HF_PG_URI"
expect_err "no SQLite store at $T/nothing.db"
[ ! -e "$T/nothing.db" ] || hf_fail "a migration from a missing file created it"
hf_expect_exit 2 hf store migrate --from "sqlite:$DB" --to "$T/other.db"
expect_err "--to must name a PostgreSQL store"
[ ! -e "$T/other.db" ] || hf_fail "a migration to a file created it"
hf_expect_exit 2 hf store migrate --from "$HF_PG_URI" --to "$HF_PG_URI"
hf_expect_exit 2 hf store migrate --from "sqlite:$DB"
PW_URI=$(echo "$HF_PG_URI" | sed 's|://holdfast@|://holdfast:not-the-password@|')
hf_expect_exit 2 hf store migrate --from "sqlite:$DB" --to "$PW_URI"
! grep -q "not-the-password" "$HF_ERR" "$HF_OUT" || { cat "$HF_ERR"; hf_fail "the password was printed"; }
expect_err "password"
cat "$HF_ERR"

# ---- the move ----------------------------------------------------------------------------------
# The rows as they are before it: the source must be left so.
dump sqlite "$T/source.dump"
hf_expect_exit 0 hf --json store migrate --from "sqlite:$DB" --to "$HF_PG_URI"
cat "$HF_OUT"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ok"] is True and d["to"] == "127.0.0.1:%s/holdfast" % sys.argv[2], d
t = d["tables"]
assert list(t) == ["keys", "key_labels", "key_versions", "links", "link_types", "meta", "objects",
                   "pools", "pool_members", "pool_backups"], t
assert t["keys"] == 5 and t["key_versions"] == 7 and t["links"] == 3 and t["pools"] == 1, t
assert t["link_types"] == 7 and t["pool_backups"] == 2 and d["meta_replaced"] == 0, d
' "$HF_OUT" "$HF_PG_PORT" || hf_fail "the --json summary"
dump sqlite "$T/source-after.dump"
# The CLI's own core wrote its audit checkpoint into the source meanwhile: rows of meta aside,
# the source is unchanged.
grep -v '^meta|audit.checkpoint' "$T/source.dump" >"$T/a"
grep -v '^meta|audit.checkpoint' "$T/source-after.dump" >"$T/b"
cmp -s "$T/a" "$T/b" || { diff "$T/a" "$T/b"; hf_fail "the source changed"; }
dump pg "$T/dest.dump"
cmp -s "$T/source.dump" "$T/dest.dump" ||
    { diff "$T/source.dump" "$T/dest.dump"; hf_fail "the rows in PostgreSQL differ from the source's"; }
ROWS=$(wc -l <"$T/dest.dump")
echo "rows: $ROWS rows of 10 tables identical (ids, material, MACs)"
psql_q "SELECT count(*) FROM key_versions" >/dev/null || hf_fail "psql"

# The same once more: refused, the server's rows unchanged.
hf_expect_exit 1 hf store migrate --from "sqlite:$DB" --to "$HF_PG_URI"
expect_err "is not empty"
expect_err "never merged"
cat "$HF_ERR"
dump pg "$T/dest2.dump"
cmp -s "$T/dest.dump" "$T/dest2.dump" || hf_fail "a refused migration changed the server's rows"

# The same source into a second, fresh database: the summary for people.
psql -q -h 127.0.0.1 -p "$HF_PG_PORT" -U holdfast -d postgres -c 'CREATE DATABASE copy2' ||
    hf_fail "CREATE DATABASE copy2"
hf_expect_exit 0 hf store migrate --from "$DB" --to "$(echo "$HF_PG_URI" | sed 's|/holdfast?|/copy2?|')"
cat "$HF_OUT"
expect_out "store migrate: copied into 127.0.0.1:$HF_PG_PORT/copy2 in one transaction"
grep -q '^  key_versions  *7$' "$HF_OUT" || hf_fail "the summary lacks key_versions 7"
expect_out "Point [store] path at the server now"

# ---- the store on PostgreSQL -------------------------------------------------------------------
printf '[store]\npath = %s\n' "$HF_PG_URI" >>"$HOLDFAST_CONF"
hf_expect_exit 0 hf store check
expect_out "store check: ok"
listings "$T/after"
for f in "$T/before"/*; do
    cmp -s "$f" "$T/after/${f##*/}" || { diff "$f" "$T/after/${f##*/}"; hf_fail "${f##*/} differs after the move"; }
done
# Really on the server: a block there shows in the database.
check "$(psql_q "SELECT blocked FROM links WHERE type = 'gcp-ekm' AND ext_id = 'ekm-payroll'")" 1 \
    "the blocked link in PostgreSQL"
hf_expect_exit 0 hf --json link list payroll
python3 -c '
import json, sys
links = {(l["type"], l["ext_id"]): l["blocked"] for l in json.load(open(sys.argv[1]))}
assert links[("gcp-ekm", "ekm-payroll")] is True, links
assert links[("aws-xks", "xks-payroll")] is False, links
' "$HF_OUT" || { cat "$HF_OUT"; hf_fail "the blocked link is not blocked (or the other one is)"; }

for i in 1 2 4; do
    hf decrypt <"$T/blob$i" >"$T/plain$i" 2>"$T/dec.err" || { cat "$T/dec.err"; hf_fail "blob$i does not decrypt after the move"; }
done
check "$(cat "$T/plain1")" "made before the rotation" "blob1 after the move"
check "$(cat "$T/plain2")" "made after the rotation" "blob2 after the move"
check "$(cat "$T/plain4")" "a pool key's line" "the pool key's blob after the move"
# ledger's version 1 was destroyed before the move: its ciphertext stays unreadable.
hf_expect_exit 1 hf decrypt --in "$T/blob3"

# New rows get new ids: past every copied one, and past the deleted object's.
max_v=$(psql_q "SELECT max(id) FROM key_versions")
max_l=$(psql_q "SELECT max(id) FROM links")
hf_expect_exit 0 hf key create fresh
hf_expect_exit 0 hf key rotate payroll
hf_expect_exit 0 hf link add aws-xks xks-fresh fresh
[ "$(psql_q "SELECT min(id) FROM key_versions WHERE id > $max_v")" -eq $((max_v + 1)) ] ||
    hf_fail "the first version made on the server does not follow the copied ones"
[ "$(psql_q "SELECT count(*) FROM key_versions WHERE id > $max_v")" -eq 2 ] || hf_fail "new versions"
[ "$(psql_q "SELECT id FROM links WHERE ext_id = 'xks-fresh'")" -gt "$max_l" ] || hf_fail "the new link's id"
echo "new rows made on the server" | hf encrypt --key payroll | hf decrypt >"$T/plain5" ||
    hf_fail "encrypt/decrypt with the version made on the server"
if [ -n "$OBJECTS" ]; then
    seq=$(sqlite3 "$DB" "SELECT seq FROM sqlite_sequence WHERE name = 'objects'")
    p11 --write-object "$T/d1" --type data --label "data three" || { cat "$T/p11.out"; hf_fail "write data three"; }
    [ "$(psql_q "SELECT id FROM objects WHERE label = 'data three'::bytea")" -gt "$seq" ] ||
        hf_fail "a new object took an id the source had handed out"
fi
hf_expect_exit 0 hf store check
hf_expect_exit 0 hf audit verify
# Audited: the move (result 0x0) and the refusals (each with its CKR), in the token's log.
LOG="$HOLDFAST_STATE_DIR/audit.log"
grep -a -q "\"op\":\"store.migrate\".*\"detail\":\"from=sqlite:$DB to=127.0.0.1:$HF_PG_PORT/holdfast rows=$ROWS\",\"result\":\"0x0\"" "$LOG" ||
    hf_fail "no store.migrate record of the move"
grep -a -q '"op":"store.migrate".*"result":"0x1b"' "$LOG" || hf_fail "no store.migrate record of the refusal"
echo "audit: $(grep -a -c '"op":"store.migrate"' "$LOG") store.migrate records"
echo "store-migrate: ok"
