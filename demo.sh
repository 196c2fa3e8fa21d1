#!/bin/sh
# README command 1: the embedded default, from nothing.
# Installs what is missing, builds, creates the SoftHSMv2 token, root KEK and SQLite store on
# first run (in $HOLDFAST_STATE_DIR, default ~/.local/state/holdfast), creates a demo key and
# encrypts and decrypts a line through it. Running it again reuses the same store.
set -e
cd "$(dirname "$0")"
top=$(pwd)
. ./deps.sh
hf_install_deps

if [ ! -x configure ] || [ configure.ac -nt configure ]; then ./autogen.sh >/dev/null; fi
mkdir -p build
if [ ! -f build/Makefile ]; then (cd build && "$top/configure" -q); fi
make -C build -j"$(nproc 2>/dev/null || echo 2)" >/dev/null

HOLDFAST_STATE_DIR=${HOLDFAST_STATE_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/holdfast}
export HOLDFAST_STATE_DIR
holdfast="$top/build/pkcs11/tool/holdfast"

"$holdfast" init
"$holdfast" key show demo >/dev/null 2>&1 || "$holdfast" key create demo --alg AES-256
"$holdfast" key list

line="Hold your own key: $(date -u +%FT%TZ)"
blob=$(printf '%s\n' "$line" | "$holdfast" encrypt --key demo)
echo "encrypted: $blob"
printf 'decrypted: '
printf '%s\n' "$blob" | "$holdfast" decrypt
"$holdfast" audit verify
cat <<MSG

State lives in $HOLDFAST_STATE_DIR. Try:
  $holdfast key rotate demo
  HOLDFAST_STATE_DIR=$HOLDFAST_STATE_DIR pkcs11-tool --module $top/build/pkcs11/module/.libs/holdfast-pkcs11.so \
      --login --pin "\$(cat $HOLDFAST_STATE_DIR/token-user.pin)" --list-objects
MSG
