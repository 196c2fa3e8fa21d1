#!/bin/sh
# NSS (Firefox, Thunderbird, certutil) loads the module from its security database.
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
echo "nss: ok"
