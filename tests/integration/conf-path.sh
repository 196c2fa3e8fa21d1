#!/bin/sh
# Relative paths in a plugin's section are the config file's (plugin.h, hf_conf_path): holdfastd
# run from another directory, as systemd runs it from /, reads aws-xks' credential_file next to
# holdfastd.conf, judges it under the secret-file rule (hf_conf_secret_file) and names the
# resolved path when it refuses it. `holdfastd -t` is enough: it hands every plugin line to the
# plugin as a start and a SIGHUP reload do, without the module or the network.
. "${top_srcdir:-.}/tests/integration/lib.sh"

HOLDFASTD="$top_builddir/gateway/holdfastd"
XKS_PLUGIN="$top_builddir/gateway/plugins/aws-xks/.libs/aws-xks.so"
[ -x "$HOLDFASTD" ] || hf_skip "$HOLDFASTD not built"
[ -f "$XKS_PLUGIN" ] || hf_skip "$XKS_PLUGIN not built"
hf_tmpdir
HOLDFASTD=$(cd "$(dirname "$HOLDFASTD")" && pwd)/holdfastd
XKS_PLUGIN=$(cd "$(dirname "$XKS_PLUGIN")" && pwd)/aws-xks.so

mkdir -p "$HF_TMP/etc/creds" "$HF_TMP/elsewhere/creds"
cat >"$HF_TMP/etc/holdfastd.conf" <<CONF
[gateway]
listen = 127.0.0.1:$(hf_free_port)
plugins = aws-xks
[plugin:aws-xks]
path = $XKS_PLUGIN
[aws-xks:main]
prefix =
credential_file = creds/xks.creds
regions = us-east-1
keys = *
health_key = health
CONF
printf 'AKIAIOSFODNN7EXAMPLE:FYtE5EFA5FT0mCc3DrGUe2sti527BitkQ0Zr9MO9fvE\n' \
    >"$HF_TMP/etc/creds/xks.creds"
chmod 600 "$HF_TMP/etc/creds/xks.creds"
# A decoy where the working directory would put it: never read.
printf 'not a credential\n' >"$HF_TMP/elsewhere/creds/xks.creds"
chmod 600 "$HF_TMP/elsewhere/creds/xks.creds"

cd "$HF_TMP/elsewhere" || hf_fail "no $HF_TMP/elsewhere"
hf_expect_exit 0 "$HOLDFASTD" -t -c ../etc/holdfastd.conf
cd / || hf_fail "no /"
hf_expect_exit 0 "$HOLDFASTD" -t -c "$HF_TMP/etc/holdfastd.conf"

# Refused, by its resolved path, when others may read it.
chmod 644 "$HF_TMP/etc/creds/xks.creds"
hf_expect_exit 1 "$HOLDFASTD" -t -c "$HF_TMP/etc/holdfastd.conf"
grep -qF "credential_file $HF_TMP/etc/creds/xks.creds: mode 0644: world-readable; chmod 600" \
    "$HF_ERR" || hf_fail "a world-readable relative credential_file: $(cat "$HF_ERR")"
echo "PASS: a relative credential_file is the config file's, and judged as a secret file"
