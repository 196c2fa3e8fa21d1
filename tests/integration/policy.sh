#!/bin/sh
# Key policy bound to the key: whoever can write the store (sqlite3 on holdfast.db) but not use
# the HSM can neither make a key exportable, move an AES blob into another key, widen a key's
# usage, revive its state nor unblock a link. Each edit is refused (and audited as policy.check)
# by the CLI and by the module; a store edited only through Holdfast keeps working: rotation,
# block and unblock, state changes, destroy.
#
# Every case runs even when an earlier one fails, and the failures are listed at the end, so the
# script also shows which protections a build lacks (run against an older build with
# top_builddir=/path/to/build).
. "${top_srcdir:-.}/tests/integration/lib.sh"
command -v sqlite3 >/dev/null || hf_skip "sqlite3 not installed"

hf_store_setup
DB="$HOLDFAST_STATE_DIR/holdfast.db"
[ -f "$DB" ] || hf_fail "no store at $DB"
hf() { "$HF_CLI" "$@"; }
sql() { sqlite3 "$DB" "$1" || hf_fail "sqlite3: $1"; }
uuid_of() { sqlite3 "$DB" "SELECT uuid FROM keys WHERE name = '$1'"; }
have_p11=
command -v pkcs11-tool >/dev/null && have_p11=yes
# Reads an AES key's value through the module (a key export): 0 when the value came out.
p11_read() {
    hf_ext pkcs11-tool --module "$HF_MODULE" --login --pin "$HF_USER_PIN" --read-object \
        --type secrkey --label "$1" -o "$HF_TMP/$1.value" >"$HF_TMP/p11.out" 2>&1
}

failed=""
fail_case() {
    echo "FAIL: $case: $*" >&2
    failed="$failed
  $case: $*"
}
# ok CMD...: CMD must succeed. refused CMD...: CMD must fail.
ok() { "$@" >"$HF_TMP/out" 2>"$HF_TMP/err" || { cat "$HF_TMP/err" >&2; fail_case "failed: $*"; }; }
refused() { ! "$@" >"$HF_TMP/out" 2>"$HF_TMP/err" || fail_case "not refused: $*"; }
audited() {
    grep -q '"op":"policy.check".*"key":"'"$1"'"' "$HOLDFAST_STATE_DIR/audit.log" ||
        fail_case "no policy.check audit record for key $1"
}

hf key create secret >/dev/null || hf_fail "cannot create key secret"
hf key create open --exportable >/dev/null || hf_fail "cannot create key open"
hf key create limited --usage decrypt >/dev/null || hf_fail "cannot create key limited"
hf key create burnt >/dev/null || hf_fail "cannot create key burnt"
hf key compromise burnt >/dev/null || hf_fail "cannot compromise burnt"
hf key create rotated >/dev/null || hf_fail "cannot create key rotated"
echo "for secret" | hf encrypt --key secret >"$HF_TMP/secret.ct" || hf_fail "encrypt with secret"
echo "for open" | hf encrypt --key open >"$HF_TMP/open.ct" || hf_fail "encrypt with open"
echo "v1" | hf encrypt --key rotated >"$HF_TMP/rotated1.ct" || hf_fail "encrypt with rotated"
hf key rotate rotated >/dev/null || hf_fail "cannot rotate"
echo "v2" | hf encrypt --key rotated >"$HF_TMP/rotated2.ct" || hf_fail "encrypt with rotated v2"
hf link add aws-xks kill-me secret >/dev/null || hf_fail "cannot add link"
hf link block aws-xks kill-me >/dev/null || hf_fail "cannot block link"
SECRET=$(uuid_of secret)
OPEN=$(uuid_of open)

case="a clean store works: decrypt, export of an exportable key, key show, store check"
ok hf decrypt --in "$HF_TMP/secret.ct"
ok hf key show secret
ok hf store check
[ -n "$have_p11" ] && ok p11_read open
[ -n "$have_p11" ] && refused p11_read secret

case="exportable flipped 0->1 in SQLite is refused"
sql "UPDATE keys SET exportable = 1 WHERE name = 'secret'"
refused hf key show secret
grep -q "policy" "$HF_TMP/err" || fail_case "the refusal does not say it is the key's policy"
refused hf store check
refused hf decrypt --in "$HF_TMP/secret.ct"
[ -n "$have_p11" ] && refused p11_read secret
audited "$SECRET"
sql "UPDATE keys SET exportable = 0 WHERE name = 'secret'"
ok hf decrypt --in "$HF_TMP/secret.ct"

case="AES blobs swapped between a non-exportable and an exportable key are refused"
sql "CREATE TABLE swap AS SELECT key_uuid, wrapped FROM key_versions WHERE version = 1 AND key_uuid IN ('$SECRET', '$OPEN');
     UPDATE key_versions SET wrapped = (SELECT wrapped FROM swap WHERE swap.key_uuid != key_versions.key_uuid)
     WHERE version = 1 AND key_uuid IN ('$SECRET', '$OPEN');"
[ -n "$have_p11" ] && refused p11_read open
refused hf decrypt --in "$HF_TMP/secret.ct"
refused hf decrypt --in "$HF_TMP/open.ct"
audited "$OPEN"
sql "UPDATE key_versions SET wrapped = (SELECT wrapped FROM swap WHERE swap.key_uuid = key_versions.key_uuid)
     WHERE version = 1 AND key_uuid IN ('$SECRET', '$OPEN'); DROP TABLE swap;"
ok hf decrypt --in "$HF_TMP/open.ct"

case="versions' blobs swapped within one key are refused"
ROT=$(uuid_of rotated)
sql "CREATE TABLE swap AS SELECT version, wrapped FROM key_versions WHERE key_uuid = '$ROT';
     UPDATE key_versions SET wrapped = (SELECT wrapped FROM swap WHERE swap.version != key_versions.version)
     WHERE key_uuid = '$ROT';"
refused hf decrypt --in "$HF_TMP/rotated1.ct"
refused hf decrypt --in "$HF_TMP/rotated2.ct"
sql "UPDATE key_versions SET wrapped = (SELECT wrapped FROM swap WHERE swap.version = key_versions.version)
     WHERE key_uuid = '$ROT'; DROP TABLE swap;"
ok hf decrypt --in "$HF_TMP/rotated1.ct"

case="usage widened in SQLite is refused"
refused sh -c 'echo x | "$0" encrypt --key limited' "$HF_CLI"
sql "UPDATE keys SET usage = 63 WHERE name = 'limited'"
refused sh -c 'echo x | "$0" encrypt --key limited' "$HF_CLI"
audited "$(uuid_of limited)"

case="a compromised key made active in SQLite is refused"
sql "UPDATE keys SET state = 2 WHERE name = 'burnt'"
refused sh -c 'echo x | "$0" encrypt --key burnt' "$HF_CLI"

case="current_version moved back in SQLite is refused"
sql "UPDATE keys SET current_version = 1 WHERE name = 'rotated'"
refused sh -c 'echo x | "$0" encrypt --key rotated' "$HF_CLI"
sql "UPDATE keys SET current_version = 2 WHERE name = 'rotated'"
ok hf decrypt --in "$HF_TMP/rotated2.ct"

case="a link unblocked in SQLite stays unusable"
sql "UPDATE links SET blocked = 0 WHERE ext_id = 'kill-me'"
hf link list >"$HF_TMP/links" 2>/dev/null
grep -q "kill-me.* no " "$HF_TMP/links" && fail_case "link list shows the link unblocked"
refused hf link unblock aws-xks kill-me
refused hf store check
sql "UPDATE links SET blocked = 1 WHERE ext_id = 'kill-me'"

case="a MAC cleared in SQLite is refused, not re-MAC'd"
sql "UPDATE keys SET mac = NULL WHERE name = 'open'"
refused hf key show open
refused hf key show open

case="store adopt --yes gives rows without MAC one (a restored old backup), not edited ones"
refused hf store adopt
ok hf store adopt --yes
grep -q "1 rows" "$HF_TMP/out" || fail_case "adopt did not count the one row: $(cat "$HF_TMP/out")"
ok hf key show open
refused sh -c 'echo x | "$0" encrypt --key limited' "$HF_CLI"
grep -q '"op":"policy.adopt".*"detail":"rows=1"' "$HOLDFAST_STATE_DIR/audit.log" ||
    fail_case "adopt is not audited"

case="the CLI still manages a clean store: block, unblock, rotate, state, destroy"
ok hf link unblock aws-xks kill-me
ok hf link block aws-xks kill-me
ok hf link unblock aws-xks kill-me
ok hf key rotate secret
ok hf decrypt --in "$HF_TMP/secret.ct"
ok hf key deactivate secret
ok hf decrypt --in "$HF_TMP/secret.ct"
ok hf key label set secret team=blue
ok hf key destroy rotated --yes
refused hf decrypt --in "$HF_TMP/rotated1.ct"
ok hf key show rotated
ok hf audit verify

# A store made by a build from before policy MACs (HF_OLD_CLI, e.g. a checkout of the previous
# release; skipped without one) is migrated by the first open of this build: old ciphertexts
# decrypt, every row gets its MAC, and edits made after that are refused as above.
if [ -n "${HF_OLD_CLI:-}" ] && [ -x "$HF_OLD_CLI" ]; then
    case="a store made before policy MACs is migrated by the first open"
    HOLDFAST_STATE_DIR="$HF_TMP/old-state"
    HOLDFAST_CONF="$HF_TMP/old.conf"
    printf '[holdfast]\nstate_dir = %s\n' "$HOLDFAST_STATE_DIR" >"$HOLDFAST_CONF"
    DB="$HOLDFAST_STATE_DIR/holdfast.db"
    ok "$HF_OLD_CLI" init
    ok "$HF_OLD_CLI" key create old-aes
    ok "$HF_OLD_CLI" key create old-rsa --alg RSA-2048
    ok "$HF_OLD_CLI" key create old-gone
    ok "$HF_OLD_CLI" key destroy old-gone --yes
    ok "$HF_OLD_CLI" link add sap old-link old-aes
    echo "old" | "$HF_OLD_CLI" encrypt --key old-aes >"$HF_TMP/old.ct" || fail_case "old encrypt"
    ok hf store check
    ok hf decrypt --in "$HF_TMP/old.ct"
    [ "$(sqlite3 "$DB" "SELECT (SELECT COUNT(*) FROM keys WHERE mac IS NULL) +
        (SELECT COUNT(*) FROM links WHERE mac IS NULL) +
        (SELECT COUNT(*) FROM key_versions WHERE mac IS NULL AND wrapped IS NOT NULL)")" = 0 ] ||
        fail_case "rows left without MAC"
    sql "UPDATE keys SET exportable = 1 WHERE name = 'old-aes'"
    refused hf key show old-aes
else
    echo "SKIP (case): set HF_OLD_CLI to a pre-policy holdfast to test the migration of its store"
fi

if [ -n "$failed" ]; then
    echo "FAIL:$failed" >&2
    exit 1
fi
echo "policy: all cases pass"
