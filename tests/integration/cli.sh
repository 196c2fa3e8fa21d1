#!/bin/sh
# The `holdfast` CLI end to end, in a temp HOLDFAST_STATE_DIR with no config file (the documented
# defaults): init twice, keys of every algorithm, list/show as tables and JSON, rotation with old
# ciphertexts still readable, the KMIP states (deactivate, destroy, pre-active), labels, links,
# every documented exit code, a tampered ciphertext, audit verify on a good and a hand-edited log,
# and the permissions of what init leaves on disk.
. "${top_srcdir:-.}/tests/integration/lib.sh"

[ -x "$HF_CLI" ] || hf_skip "$HF_CLI not built"
[ -f "$SOFTHSM_MODULE" ] || hf_skip "SoftHSMv2 module $SOFTHSM_MODULE not installed"
command -v python3 >/dev/null || hf_skip "python3 not installed (parses --json output)"
hf_tmpdir
# No config file at all: built-in defaults under HOLDFAST_STATE_DIR.
unset HOLDFAST_CONF
[ -e /etc/holdfast/holdfast.conf ] && hf_skip "/etc/holdfast/holdfast.conf exists: defaults cannot be tested"
HOLDFAST_STATE_DIR="$HF_TMP/state"
export HOLDFAST_STATE_DIR
state=$HOLDFAST_STATE_DIR

hf() { "$HF_CLI" "$@"; }
# json EXPR: evaluates the Python expression EXPR over d, the JSON document on stdin.
json() { python3 -c 'import json, sys; d = json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }
# expect_err TEXT: the last hf_expect_exit's stderr says TEXT.
expect_err() { grep -qF -- "$1" "$HF_ERR" || { cat "$HF_ERR"; hf_fail "stderr lacks '$1'"; }; }
expect_out() { grep -qF -- "$1" "$HF_OUT" || { cat "$HF_OUT"; hf_fail "stdout lacks '$1'"; }; }

# ---- before init: exit 4, and usage errors are 2 ----
hf_expect_exit 4 hf key list
expect_err "holdfast init"
hf_expect_exit 4 hf encrypt --key demo </dev/null
hf_expect_exit 2 hf
hf_expect_exit 2 hf frobnicate
expect_err "unknown command 'frobnicate'"
hf_expect_exit 2 hf key create
hf_expect_exit 2 hf key create bad --alg DES-56
expect_err "unknown algorithm"
hf_expect_exit 2 hf key list --bogus
expect_err "unknown option '--bogus'"
hf_expect_exit 2 hf key create 'bad name!'
hf_expect_exit 2 hf encrypt
expect_err "--key REF is required"
hf_expect_exit 2 hf key destroy something
expect_err "without --yes"
hf_expect_exit 3 hf --config "$HF_TMP/missing.conf" key list
# PINs never on the command line (ps shows it to every user, the shell keeps it): refused by
# name, saying what to use; --ask-pins wants a terminal.
hf_expect_exit 2 hf init --user-pin 12345678
expect_err "--user-pin-file FILE, \$HOLDFAST_USER_PIN or --ask-pins"
hf_expect_exit 2 hf init --so-pin=12345678
expect_err "--so-pin-file FILE, \$HOLDFAST_SO_PIN or --ask-pins"
hf_expect_exit 2 setsid -w "$HF_CLI" init --ask-pins
expect_err "--ask-pins needs a terminal"
hf_expect_exit 0 hf help
expect_out "Exit codes"
hf_expect_exit 0 hf key create --help
expect_out "--alg"
hf_expect_exit 0 hf help key rotate
expect_out "Usage: holdfast key rotate REF"

# ---- init, twice ----
hf_expect_exit 0 hf init
grep -qi "user PIN: generated" "$HF_OUT" || hf_fail "first init did not generate the user PIN"
user_pin=$(cat "$state/token-user.pin") && so_pin=$(cat "$state/token-so.pin") ||
    hf_fail "init wrote no PIN files"
grep -qF "$user_pin" "$HF_OUT" "$HF_ERR" && hf_fail "init printed the user PIN"
grep -qF "$so_pin" "$HF_OUT" "$HF_ERR" && hf_fail "init printed the SO PIN"
cp -p "$state/token-user.pin" "$HF_TMP/user.pin.1"
user_pin_stat=$(stat -c '%i %Y' "$state/token-user.pin")
hf_expect_exit 0 hf --json init
check "$(json 'd["already_initialised"], d["user_pin"], d["so_pin"]' <"$HF_OUT")" \
    "(True, 'kept', 'kept')" "second init"
cmp -s "$state/token-user.pin" "$HF_TMP/user.pin.1" || hf_fail "second init changed the PIN file"
[ "$(stat -c '%i %Y' "$state/token-user.pin")" = "$user_pin_stat" ] ||
    hf_fail "second init rewrote the PIN file"

# ---- keys of each algorithm ----
hf_expect_exit 0 hf key create payroll --label team=finance --label env=prod
expect_out "created key 'payroll' (AES-256"
hf_expect_exit 0 hf key create signer --alg RSA-2048 --usage sign,verify
hf_expect_exit 0 hf --json key create ec1 --alg EC-P256
check "$(json 'd["alg"], d["state"], d["version"], d["usage"]' <"$HF_OUT")" \
    "('EC-P256', 'active', 1, ['sign', 'verify'])" "EC key create --json"
hf_expect_exit 1 hf key create payroll
expect_err "already exists"

hf_expect_exit 0 hf key list
head -n 1 "$HF_OUT" | grep -q "^NAME  *ALG  *STATE  *VERSION  *USAGE  *UUID$" ||
    hf_fail "key list header: $(head -n 1 "$HF_OUT")"
grep -q "^payroll  *AES-256  *active  *1 " "$HF_OUT" || hf_fail "key list lacks payroll"
grep -q "^signer  *RSA-2048 " "$HF_OUT" || hf_fail "key list lacks signer"
hf_expect_exit 0 hf key list --json
[ "$(wc -l <"$HF_OUT")" -eq 1 ] || hf_fail "--json is not one line"
check "$(json '[k["name"] for k in d]' <"$HF_OUT")" "['ec1', 'payroll', 'signer']" "key list --json"
# A generic secret (HMAC key): its size in bits, sign and verify by default.
hf_expect_exit 0 hf --json key create mac1 --alg HMAC-256
check "$(json 'd["alg"], d["usage"]' <"$HF_OUT")" "('HMAC-256', ['sign', 'verify'])" \
    "HMAC key create --json"
hf_expect_exit 2 hf key create mac2 --alg HMAC-100

hf_expect_exit 0 hf key show payroll
expect_out "env=prod"
expect_out "team=finance"
hf_expect_exit 0 hf --json key show payroll
uuid=$(json 'd["uuid"]' <"$HF_OUT")
check "$(json 'd["labels"], len(d["versions"]), d["links"]' <"$HF_OUT")" \
    "({'env': 'prod', 'team': 'finance'}, 1, [])" "key show --json"
hf_expect_exit 0 hf key show "$uuid" # a UUID is a reference too

# ---- encrypt, rotate, decrypt the old ciphertext ----
# version_of FILE: the version field of an envelope (magic, 16-byte UUID, uint32 BE version).
version_of() {
    python3 -c 'import base64, sys, uuid
b = base64.b64decode(open(sys.argv[1]).read())
assert b[:3] == b"HF1", "magic"
print(uuid.UUID(bytes=b[3:19]), int.from_bytes(b[19:23], "big"))' "$1"
}
echo "line one" | hf encrypt --key payroll >"$HF_TMP/blob1" || hf_fail "encrypt v1"
check "$(version_of "$HF_TMP/blob1")" "$uuid 1" "envelope of v1"
hf_expect_exit 0 hf --json key rotate payroll
check "$(json 'd["version"]' <"$HF_OUT")" "2" "rotate --json version"
echo "line two" >"$HF_TMP/plain2"
hf_expect_exit 0 hf encrypt --key "$uuid" --in "$HF_TMP/plain2" --out "$HF_TMP/blob2"
check "$(version_of "$HF_TMP/blob2")" "$uuid 2" "envelope after rotation"
hf_expect_exit 0 hf --json key show payroll
check "$(json 'd["version"], [v["version"] for v in d["versions"]]' <"$HF_OUT")" "(2, [1, 2])" \
    "versions after rotation"
check "$(hf decrypt <"$HF_TMP/blob1")" "line one" "decrypt of the v1 blob after rotation"
hf_expect_exit 0 hf decrypt --in "$HF_TMP/blob2" --out "$HF_TMP/plain2.out"
cmp -s "$HF_TMP/plain2" "$HF_TMP/plain2.out" || hf_fail "decrypt --out differs from the plaintext"
check "$(stat -c %a "$HF_TMP/plain2.out")" "600" "mode of a decrypted file"
hf encrypt --key payroll </dev/null >"$HF_TMP/blob-empty" || hf_fail "encrypt of nothing"
hf decrypt --in "$HF_TMP/blob-empty" >"$HF_TMP/empty" || hf_fail "decrypt of nothing"
[ -s "$HF_TMP/empty" ] && hf_fail "empty plaintext came back non-empty"
# In a pipe two CLI processes open the same store (and HSM token) at once.
i=0
while [ "$i" -lt 10 ]; do
    i=$((i + 1))
    out=$(echo "piped $i" | hf encrypt --key payroll 2>"$HF_TMP/pipe.err" | hf decrypt 2>>"$HF_TMP/pipe.err")
    [ "$out" = "piped $i" ] || { cat "$HF_TMP/pipe.err"; hf_fail "encrypt | decrypt, round $i"; }
done

hf_expect_exit 1 hf encrypt --key signer --in "$HF_TMP/plain2"
expect_err "needs an AES key"
hf_expect_exit 3 hf encrypt --key nope --in "$HF_TMP/plain2"
expect_err "key 'nope' not found"

# A flipped ciphertext byte fails the tag; a moved version field fails it too (it is AAD).
python3 - "$HF_TMP/blob2" "$HF_TMP/tampered" "$HF_TMP/moved" <<'PY'
import base64, sys
b = bytearray(base64.b64decode(open(sys.argv[1]).read()))
t = bytearray(b); t[35] ^= 1
open(sys.argv[2], "w").write(base64.b64encode(t).decode() + "\n")
m = bytearray(b); m[22] = 1  # version 2 -> 1: a real version, wrong AAD
open(sys.argv[3], "w").write(base64.b64encode(m).decode() + "\n")
PY
hf_expect_exit 1 hf decrypt --in "$HF_TMP/tampered"
expect_err "damaged"
[ -s "$HF_OUT" ] && hf_fail "a tampered blob produced output"
hf_expect_exit 1 hf decrypt --in "$HF_TMP/moved"
echo "not an envelope" >"$HF_TMP/garbage"
hf_expect_exit 1 hf decrypt --in "$HF_TMP/garbage"
expect_err "not a Holdfast envelope"

# ---- one version's state: v1 of payroll retired, v2 (current) marked compromised ----
hf_expect_exit 2 hf key version deactivate payroll zero
hf_expect_exit 3 hf key version deactivate payroll 9
hf_expect_exit 1 hf key version deactivate payroll 2
expect_err "holdfast key rotate payroll"
hf_expect_exit 2 hf key version destroy payroll 1 # without --yes
hf_expect_exit 0 hf --json key version deactivate payroll 1
check "$(json 'd["state"]' <"$HF_OUT")" "deactivated" "key version deactivate --json"
check "$(hf decrypt <"$HF_TMP/blob1")" "line one" "decrypt under a deactivated version"
hf_expect_exit 0 hf key version compromise payroll 2
hf_expect_exit 1 hf encrypt --key payroll --in "$HF_TMP/plain2"
expect_err "version 2 is compromised"
check "$(hf decrypt <"$HF_TMP/blob2")" "line two" "decrypt under a compromised version"
hf key show payroll | grep -Eq '^ +1 +deactivated ' || hf_fail "key show: v1 not deactivated"
hf key show payroll | grep -Eq '^ +2 \* +compromised ' || hf_fail "key show: v2 not compromised"
# --rotate: the current version retired in one command, a new one taking over.
hf_expect_exit 0 hf key create ledger
hf_expect_exit 0 hf key version deactivate ledger 1 --rotate
hf key show ledger | grep -Eq '^ +1 +deactivated ' || hf_fail "--rotate: v1 not deactivated"
hf key show ledger | grep -Eq '^ +2 \* +active ' || hf_fail "--rotate: no active v2"
hf_expect_exit 0 hf encrypt --key ledger --in "$HF_TMP/plain2"

# ---- states: deactivated keys still decrypt; destroyed keys do not ----
hf_expect_exit 0 hf key deactivate payroll
hf_expect_exit 1 hf encrypt --key payroll --in "$HF_TMP/plain2"
expect_err "does not permit encrypt"
check "$(hf decrypt <"$HF_TMP/blob2")" "line two" "decrypt with a deactivated key"
hf_expect_exit 1 hf key activate payroll # KMIP: no way back to active

hf_expect_exit 0 hf key create later --state pre-active
hf_expect_exit 1 hf encrypt --key later --in "$HF_TMP/plain2"
hf_expect_exit 0 hf key activate later
hf_expect_exit 0 hf encrypt --key later --in "$HF_TMP/plain2"

hf_expect_exit 2 hf key destroy payroll
expect_err "--yes"
hf_expect_exit 0 hf --json key show payroll
check "$(json 'd["state"]' <"$HF_OUT")" "deactivated" "state after a refused destroy"
hf_expect_exit 0 hf key destroy payroll --yes
hf_expect_exit 0 hf --json key show payroll
check "$(json 'd["state"]' <"$HF_OUT")" "destroyed" "state after destroy"
hf_expect_exit 1 hf decrypt --in "$HF_TMP/blob1"
expect_err "destroyed"

# ---- labels ----
hf_expect_exit 0 hf key label set signer owner-team=pki
hf_expect_exit 0 hf --json key show signer
check "$(json 'd["labels"]' <"$HF_OUT")" "{'owner-team': 'pki'}" "label set"
hf_expect_exit 0 hf key label rm signer owner-team
hf_expect_exit 0 hf --json key show signer
check "$(json 'd["labels"]' <"$HF_OUT")" "{}" "label rm"
hf_expect_exit 2 hf key label set signer =novalue
hf_expect_exit 3 hf key label set nope a=b

# ---- links ----
# uuid: a fresh random v4 UUID each time, plain and as JSON; no arguments.
u1=$(hf uuid) && u2=$(hf uuid) || hf_fail "holdfast uuid failed"
echo "$u1" | grep -Eq '^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$' ||
    hf_fail "holdfast uuid printed '$u1', not a v4 UUID"
[ "$u1" != "$u2" ] || hf_fail "holdfast uuid printed the same UUID twice"
[ "$(hf --json uuid | json 'len(d["uuid"])')" = 36 ] || hf_fail "holdfast --json uuid"
hf_expect_exit 2 hf uuid extra
hf_expect_exit 0 hf link add aws-xks xks-001 later
hf_expect_exit 0 hf link add gcp-ekm projects/p/keys/k later
hf_expect_exit 1 hf link add aws-xks xks-001 signer
expect_err "already exists"
hf_expect_exit 3 hf link add aws-xks xks-002 nope
hf_expect_exit 0 hf link block aws-xks xks-001
hf_expect_exit 0 hf --json link list
check "$(json '[(l["type"], l["ext_id"], l["key"], l["blocked"]) for l in d]' <"$HF_OUT")" \
    "[('aws-xks', 'xks-001', 'later', True), ('gcp-ekm', 'projects/p/keys/k', 'later', False)]" \
    "link list after block"
hf_expect_exit 0 hf link unblock aws-xks xks-001
hf_expect_exit 0 hf link list later
grep -q "^aws-xks  *xks-001  *later  *no " "$HF_OUT" || { cat "$HF_OUT"; hf_fail "link list table"; }
hf_expect_exit 0 hf --json link list signer
check "$(json 'd' <"$HF_OUT")" "[]" "links of a key without links"
hf_expect_exit 3 hf link block aws-xks no-such-link
hf_expect_exit 0 hf --json key show later
check "$(json '[l["ext_id"] for l in d["links"]]' <"$HF_OUT")" "['xks-001', 'projects/p/keys/k']" \
    "links in key show"
# Link types: the six seeded APIs; an unregistered type is refused, saying how to register it;
# a registered one is accepted (add is idempotent and audited); names are [a-z0-9-]{1,32}.
hf_expect_exit 0 hf --json link types
check "$(json 'd' <"$HF_OUT")" "['aws-xks', 'dke', 'gcp-ekm', 'gws-cse', 'oci', 'sap']" \
    "seeded link types"
hf_expect_exit 2 hf link create my-api mine-1 later
expect_err "link type 'my-api' is not registered"
expect_err "holdfast link type add my-api"
hf_expect_exit 0 hf link type add my-api
expect_out "link type 'my-api' registered"
hf_expect_exit 0 hf --json link type add my-api
check "$(json 'd["added"]' <"$HF_OUT")" "False" "a second registration"
hf_expect_exit 0 hf link create my-api mine-1 later
hf_expect_exit 0 hf link types
grep -q "^my-api$" "$HF_OUT" || { cat "$HF_OUT"; hf_fail "link types table"; }
hf_expect_exit 2 hf link type add 'Bad_Type'
hf_expect_exit 2 hf link type add "$(printf 'a%.0s' $(seq 33))"
hf_expect_exit 0 hf link type add "$(printf 'a%.0s' $(seq 32))"

# ---- not found ----
hf_expect_exit 3 hf key show nope
expect_err "key 'nope' not found"
hf_expect_exit 3 hf key rotate nope

# ---- the store and the audit log ----
hf_expect_exit 0 hf store check
hf_expect_exit 0 hf audit verify
expect_out ": ok,"
hf_expect_exit 0 hf --json audit verify
check "$(json 'd["ok"], d["records"] > 20' <"$HF_OUT")" "(True, True)" "audit verify --json"
grep -q '"op":"encrypt"' "$state/audit.log" || hf_fail "no encrypt record in the audit log"
grep -q '"op":"decrypt"' "$state/audit.log" || hf_fail "no decrypt record in the audit log"
grep -q '"op":"link.type_add".*"detail":"type=my-api","result":"0x0"' "$state/audit.log" ||
    hf_fail "no link.type_add record in the audit log"
hf_expect_exit 3 hf audit verify --file "$HF_TMP/no-such.log"
# One hand-edited record (a failed decrypt now claims success) breaks the chain.
python3 - "$state/audit.log" "$HF_TMP/edited.log" <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines(True)
i = next(n for n, l in enumerate(lines) if '"op":"decrypt"' in l and '"ok":false' in l)
lines[i] = lines[i].replace('"ok":false', '"ok":true ', 1)
open(sys.argv[2], "w").write("".join(lines))
PY
hf_expect_exit 5 hf audit verify --file "$HF_TMP/edited.log"
expect_err "line "

# An audit log that cannot be written stops key operations: exit 5, and no output.
if [ -c /dev/full ]; then
    mv "$state/audit.log" "$HF_TMP/audit.log.saved"
    ln -s /dev/full "$state/audit.log"
    hf_expect_exit 5 hf encrypt --key later --in "$HF_TMP/plain2"
    [ -s "$HF_OUT" ] && hf_fail "encrypt gave output without an audit record"
    hf_expect_exit 5 hf key create never
    rm "$state/audit.log"
    mv "$HF_TMP/audit.log.saved" "$state/audit.log"
    hf_expect_exit 3 hf key show never
    hf_expect_exit 0 hf audit verify
fi

# ---- a HOLDFAST_CONF that names no file is an error, never a silent fallback ----
hf_expect_exit 2 env HOLDFAST_CONF="$HF_TMP/no-such.conf" "$HF_CLI" key list
grep -q "no-such.conf" "$HF_ERR" || hf_fail "missing config file not named in the error"

# ---- what init left on disk ----
loose=$( (find "$state" -type d ! -perm 700; find "$state" -type f ! -perm 600) | head)
[ -z "$loose" ] || hf_fail "state not private (dirs 0700, files 0600): $loose"
echo "cli: ok"
