#!/bin/sh
# Sets up a Holdfast store and a SoftHSMv2 token with the same kinds of keys, then runs
# bench-pkcs11. Holdfast's core loads the same libsofthsm2.so for its root KEK, and one process
# gets one SoftHSMv2 instance with one token directory: the comparison token lives beside
# Holdfast's own root token, in the directory Holdfast's softhsm2.conf names.
set -e
builddir=${top_builddir:?}
seconds=${BENCH_SECONDS:-3}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hf-bench-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

export HOLDFAST_STATE_DIR="$tmp/state"
export HOLDFAST_CONF="$tmp/holdfast.conf"
printf '[holdfast]\nstate_dir = %s\n' "$HOLDFAST_STATE_DIR" >"$HOLDFAST_CONF"
cli="$builddir/pkcs11/tool/holdfast"
HOLDFAST_USER_PIN=bench-pin-1234 HOLDFAST_SO_PIN=bench-so-5678 "$cli" init >/dev/null
"$cli" key create bench-aes --alg AES-256 >/dev/null
"$cli" key create bench-rsa --alg RSA-3072 --usage encrypt,decrypt >/dev/null

export SOFTHSM2_CONF="$HOLDFAST_STATE_DIR/softhsm2.conf"
softhsm2-util --init-token --free --label bench --pin 1234 --so-pin 5678 >/dev/null
p11="pkcs11-tool --module ${SOFTHSM_MODULE:?} --token-label bench --login --pin 1234"
$p11 --keygen --key-type AES:32 --label bench-aes >/dev/null 2>&1
$p11 --keypairgen --key-type rsa:3072 --label bench-rsa >/dev/null 2>&1

echo "bench-pkcs11: $(nproc) cores, ${seconds}s per cell, $(date -u +%FT%TZ)"
"$builddir/tests/perf/bench-pkcs11" --holdfast "$builddir/pkcs11/module/.libs/holdfast-pkcs11.so" \
    --holdfast-pin bench-pin-1234 --softhsm "$SOFTHSM_MODULE" --softhsm-token bench \
    --softhsm-pin 1234 --seconds "$seconds" --threads 1,2
