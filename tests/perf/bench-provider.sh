#!/bin/sh
# Sets up a Holdfast store, imports one RSA-3072 and one P-256 key into it (keeping the same keys
# as PEM files for the default provider), then runs bench-provider. Holdfast's defaults apply:
# local keys, every signature audited.
set -e
builddir=${top_builddir:?}
seconds=${BENCH_SECONDS:-1}
rounds=${BENCH_ROUNDS:-5}
threads=${BENCH_THREADS:-1,2}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hf-bench-provider-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

export HOLDFAST_STATE_DIR="$tmp/state"
export HOLDFAST_CONF="$tmp/holdfast.conf"
printf '[holdfast]\nstate_dir = %s\n' "$HOLDFAST_STATE_DIR" >"$HOLDFAST_CONF"
# The provider loads the module named here (no openssl.cnf is read for this run).
export HOLDFAST_PKCS11_MODULE="$builddir/pkcs11/module/.libs/holdfast-pkcs11.so"
HOLDFAST_USER_PIN=bench-pin-1234 HOLDFAST_SO_PIN=bench-so-5678 \
    "$builddir/pkcs11/tool/holdfast" init >/dev/null
"$builddir/tests/perf/bench-provider" import --module "$HOLDFAST_PKCS11_MODULE" \
    --pin bench-pin-1234 --dir "$tmp"

echo "bench-provider: $(nproc) cores, best of $rounds x ${seconds}s per figure," \
    "$(openssl version), $(date -u +%FT%TZ)"
OPENSSL_CONF=/dev/null "$builddir/tests/perf/bench-provider" run \
    --provider-path "$builddir/provider/.libs" --module "$HOLDFAST_PKCS11_MODULE" \
    --pin bench-pin-1234 --dir "$tmp" \
    --seconds "$seconds" --rounds "$rounds" --threads "$threads"
