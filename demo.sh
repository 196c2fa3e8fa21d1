#!/bin/sh
# README command 1: the embedded default, from nothing, serving AWS XKS on 127.0.0.1.
# Installs what is missing, builds, creates the SoftHSMv2 token, root KEK and SQLite store on
# first run (in $HOLDFAST_STATE_DIR, default ~/.local/state/holdfast), a demo key with its XKS
# link, an XKS key store with fresh SigV4 credentials and a self-signed TLS certificate, then runs
# holdfastd in the foreground (Ctrl-C stops it) after printing a curl line that works when pasted.
# Running it again reuses the same store, key, credentials and certificate.
#   HOLDFAST_PORT (default 8080, plain) and HOLDFAST_TLS_PORT (default 8443) pick the ports.
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
state=$HOLDFAST_STATE_DIR
port=${HOLDFAST_PORT:-8080}
tls_port=${HOLDFAST_TLS_PORT:-8443}
holdfast="$top/build/pkcs11/tool/holdfast"

"$holdfast" init
"$holdfast" key show demo >/dev/null 2>&1 || "$holdfast" key create demo --alg AES-256
"$holdfast" key show demo-health >/dev/null 2>&1 ||
    "$holdfast" key create demo-health --alg AES-256 --label purpose=xks-health-check
has_link() { "$holdfast" link list --json | grep -q "\"type\":\"aws-xks\",\"ext_id\":\"$1\""; }
has_link demo-health || "$holdfast" link add aws-xks demo-health demo-health
has_link demo || "$holdfast" link add aws-xks demo demo

umask 077
# SigV4 credentials of the demo key store: an access key id of 20 [A-Z2-7] and a 43-char secret.
if [ ! -s "$state/xks-demo.credential" ]; then
    akid=$(openssl rand 64 | base32 | tr -dc 'A-Z2-7' | cut -c 1-20)
    secret=$(openssl rand -base64 32 | tr -d '=\n')
    printf '%s:%s\n' "$akid" "$secret" >"$state/xks-demo.credential"
fi
credential=$(cat "$state/xks-demo.credential")
if [ ! -s "$state/tls/server.pem" ]; then
    mkdir -p "$state/tls"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 365 \
        -subj /CN=localhost -addext subjectAltName=IP:127.0.0.1,DNS:localhost \
        -keyout "$state/tls/server.key" -out "$state/tls/server.pem" 2>/dev/null
fi
cat >"$state/holdfastd.conf" <<EOF
# Written by demo.sh; see conf/holdfastd.conf.sample for every setting.
[gateway]
listen = 127.0.0.1:$port
listen = 127.0.0.1:$tls_port tls
module = $top/build/pkcs11/module/.libs/holdfast-pkcs11.so
pin_file = $state/token-gateway.pin
plugins = aws-xks
plugin_dir = $top/build/gateway/plugins/aws-xks/.libs
log = $state/holdfastd.log

[tls]
cert = $state/tls/server.pem
key = $state/tls/server.key

[aws-xks]
health_key = demo-health

[aws-xks:demo]
prefix =
credential = $credential
regions = us-east-1
keys = demo
EOF
"$top/build/gateway/holdfastd" -t -c "$state/holdfastd.conf"

body='{"requestMetadata":{"awsPrincipalArn":"arn:aws:iam::111122223333:user/demo","kmsKeyArn":"arn:aws:kms:us-east-1:111122223333:key/demo","kmsOperation":"Encrypt","kmsRequestId":"demo-0001"},"plaintext":"SG9sZCB5b3VyIG93biBrZXk=","encryptionAlgorithm":"AES_GCM"}'
cat <<MSG

holdfastd: AWS XKS on http://127.0.0.1:$port and https://127.0.0.1:$tls_port (state in $state,
requests logged to $state/holdfastd.log). Ctrl-C stops it. In another terminal:

curl --aws-sigv4 "aws:amz:us-east-1:kms-xks-proxy" --user "$credential" -H 'Content-Type: application/json' -d '$body' http://127.0.0.1:$port/kms/xks/v1/keys/demo/encrypt

Over TLS: the same with --cacert $state/tls/server.pem https://127.0.0.1:$tls_port/kms/xks/v1/keys/demo/encrypt
Then: $holdfast link block aws-xks demo   (the kill switch: the next call answers DISABLED)
      $holdfast audit verify
MSG
exec "$top/build/gateway/holdfastd" -f -c "$state/holdfastd.conf"
