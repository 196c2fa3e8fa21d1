#!/bin/sh
# make bench-gateway: AWS XKS encrypt through holdfastd (a local AES key, SigV4 checked on every
# request, audit on and durable before each answer, keep-alive), driven by wrk with one pre-signed
# request at 64 connections, beside nginx returning a static reply of the same size, in the same
# run on the same cores; then both over TLS; then holdfastd with audit success events off.
# Beside them, mhd-floor: libmicrohttpd with holdfastd's flags answering the same bytes with no
# work at all, once straight and once suspending and resuming every request from another thread
# (the least the durable-audit rule costs); that is the ceiling any libmicrohttpd gateway has here.
# Prints ops/s, p50/p90/p99 and the ratios the issue sets targets for.
set -eu
# holdfastd refuses a config holding a credential, or a TLS key, that others may read.
umask 077
builddir=${top_builddir:?}
srcdir=${top_srcdir:?}
seconds=${BENCH_SECONDS:-10}
conns=${BENCH_CONNECTIONS:-64}
threads=$(nproc 2>/dev/null || echo 2)

for p in wrk nginx curl openssl; do
    command -v "$p" >/dev/null 2>&1 && continue
    [ -x "/usr/sbin/$p" ] && continue
    if [ "$(id -u)" -eq 0 ]; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk nginx-light curl openssl >/dev/null
        break
    fi
    echo "bench-gateway: needs wrk, nginx, curl and openssl (apt-get install wrk nginx-light curl)" >&2
    exit 1
done
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hf-bench-gw-XXXXXX")
GW_PID= NGINX_PID= FLOOR_PID=
cleanup() {
    [ -z "$GW_PID" ] || kill "$GW_PID" 2>/dev/null || true
    [ -z "$FLOOR_PID" ] || kill "$FLOOR_PID" 2>/dev/null || true
    [ -z "$NGINX_PID" ] || kill "$NGINX_PID" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
wait_http() { # URL PID
    i=0
    until curl -ks -o /dev/null "$1"; do
        i=$((i + 1))
        kill -0 "$2" 2>/dev/null || i=300
        [ $i -lt 300 ] || { echo "bench-gateway: $1 never answered" >&2; tail -n 5 "$tmp"/*.out "$tmp"/*.log >&2; exit 1; }
        sleep 0.1
    done
}

# ---- the key store, a key and its XKS link ------------------------------------------------
export HOLDFAST_STATE_DIR="$tmp/state"
export HOLDFAST_CONF="$tmp/holdfast.conf"
cli="$builddir/pkcs11/tool/holdfast"
core_conf() { # SUCCESS_EVENTS
    printf '[holdfast]\nstate_dir = %s\n[audit]\nsuccess_events = %s\n' \
        "$HOLDFAST_STATE_DIR" "$1" >"$HOLDFAST_CONF"
}
core_conf true
"$cli" init >/dev/null
"$cli" key create bench --alg AES-256 >/dev/null
"$cli" link add aws-xks bench bench >/dev/null
"$cli" key create health --alg AES-256 >/dev/null
"$cli" link add aws-xks health health >/dev/null

AKID=BENCHAKIDAAAAAAAAAAA
SECRET=$(openssl rand -base64 32)
REGION=us-east-1
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=localhost \
    -addext subjectAltName=IP:127.0.0.1 -keyout "$tmp/tls.key" -out "$tmp/tls.pem" 2>/dev/null

# ---- holdfastd -------------------------------------------------------------------------------
GW_PLAIN=$(free_port)
GW_TLS=$(free_port)
start_gateway() { # SUCCESS_EVENTS
    core_conf "$1"
    cat >"$tmp/holdfastd.conf" <<EOF
[gateway]
listen = 127.0.0.1:$GW_PLAIN
listen = 127.0.0.1:$GW_TLS tls
module = $builddir/pkcs11/module/.libs/holdfast-pkcs11.so
pin_file = $HOLDFAST_STATE_DIR/token-gateway.pin
plugins = aws-xks
plugin_dir = $builddir/gateway/plugins/aws-xks/.libs
max_connections = 1024
# Every virtual user comes from 127.0.0.1: no per-address limit.
max_connections_per_address = 0
log = $tmp/holdfastd.log
[tls]
cert = $tmp/tls.pem
key = $tmp/tls.key
[audit]
success_events = $([ "$1" = true ] && echo yes || echo no)
[aws-xks]
health_key = health
[aws-xks:bench]
prefix =
credential = $AKID:$SECRET
regions = $REGION
keys = bench
EOF
    "$builddir/gateway/holdfastd" -f -c "$tmp/holdfastd.conf" >"$tmp/holdfastd.out" 2>&1 &
    GW_PID=$!
    wait_http "http://127.0.0.1:$GW_PLAIN/healthz" "$GW_PID"
}
stop_gateway() {
    kill "$GW_PID" 2>/dev/null || true
    wait "$GW_PID" 2>/dev/null || true
    GW_PID=
}

XKS_PATH=/kms/xks/v1/keys/bench/encrypt
BODY='{"requestMetadata":{"awsPrincipalArn":"arn:aws:iam::123456789012:user/bench","kmsKeyArn":"arn:aws:kms:us-east-1:123456789012:key/bench","kmsOperation":"Encrypt","kmsRequestId":"4112f4d6-db54-4af4-ae30-c55a22a8dfae"},"plaintext":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=","encryptionAlgorithm":"AES_GCM"}'

# A wrk script replaying one request signed now (valid for the proxy's 5 minutes of skew).
wrk_script() { # HOSTPORT FILE
    "$builddir/tests/perf/xks-presign" "$1" "$XKS_PATH" "$BODY" "$AKID" "$SECRET" "$REGION" \
        >"$tmp/signed"
    {
        echo 'wrk.method = "POST"'
        printf 'wrk.body = [[%s]]\n' "$BODY"
        echo 'wrk.headers["Content-Type"] = "application/json"'
        printf 'wrk.headers["Host"] = "%s"\n' "$1"
        sed -n 's/^X-Amz-Date: \(.*\)$/wrk.headers["X-Amz-Date"] = "\1"/p' "$tmp/signed"
        sed -n 's/^Authorization: \(.*\)$/wrk.headers["Authorization"] = "\1"/p' "$tmp/signed"
    } >"$2"
}

# ---- one wrk run: "ops p50 p90 p99" (ms) -----------------------------------------------------
run_wrk() { # NAME URL SCRIPT
    wrk -t"$threads" -c"$conns" -d"${seconds}s" --latency -s "$3" "$2" >"$tmp/wrk-$1.txt" 2>&1
    if grep -q 'Non-2xx' "$tmp/wrk-$1.txt"; then
        cat "$tmp/wrk-$1.txt" >&2
        echo "bench-gateway: $1 answered errors" >&2
        exit 1
    fi
    awk -v name="$1" '
        function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0;
                         if (v ~ /s$/) return v * 1000; return v }
        $1 == "50%" { p50 = ms($2) } $1 == "90%" { p90 = ms($2) } $1 == "99%" { p99 = ms($2) }
        $1 == "Requests/sec:" { ops = $2 }
        END { printf "%s %.0f %.2f %.2f %.2f\n", name, ops, p50, p90, p99 }' "$tmp/wrk-$1.txt" \
        >>"$tmp/results"
}

# ---- nginx, answering the same number of bytes -----------------------------------------------
start_gateway true
wrk_script "127.0.0.1:$GW_PLAIN" "$tmp/plain.lua"
reply=$(curl -s -X POST -H 'Content-Type: application/json' -H "Host: 127.0.0.1:$GW_PLAIN" \
    -H "$(sed -n 1p "$tmp/signed")" -H "$(sed -n 2p "$tmp/signed")" --data-binary "$BODY" \
    "http://127.0.0.1:$GW_PLAIN$XKS_PATH")
case $reply in *'"ciphertext"'*) ;; *) echo "bench-gateway: encrypt failed: $reply" >&2; exit 1 ;; esac
static=$(printf '%s' "$reply" | tr 'A-Za-z0-9+/=' 'x')
NG_PLAIN=$(free_port)
NG_TLS=$(free_port)
mkdir -p "$tmp/nginx"
cat >"$tmp/nginx/nginx.conf" <<EOF
worker_processes $threads;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/error.log;
events { worker_connections 1024; }
http {
    access_log off;
    keepalive_requests 10000000;
    client_body_temp_path $tmp/nginx/body;
    proxy_temp_path $tmp/nginx/proxy;
    fastcgi_temp_path $tmp/nginx/fastcgi;
    uwsgi_temp_path $tmp/nginx/uwsgi;
    scgi_temp_path $tmp/nginx/scgi;
    server {
        listen 127.0.0.1:$NG_PLAIN;
        listen 127.0.0.1:$NG_TLS ssl;
        ssl_certificate $tmp/tls.pem;
        ssl_certificate_key $tmp/tls.key;
        ssl_protocols TLSv1.2 TLSv1.3;
        location / { default_type application/json; return 200 '$static'; }
    }
}
EOF
"$NGINX" -p "$tmp/nginx" -c "$tmp/nginx/nginx.conf" -g 'daemon off;' >"$tmp/nginx.out" 2>&1 &
NGINX_PID=$!
wait_http "http://127.0.0.1:$NG_PLAIN/" "$NGINX_PID"
ng_bytes=$(curl -s -X POST --data-binary "$BODY" "http://127.0.0.1:$NG_PLAIN$XKS_PATH" | wc -c)

# ---- mhd-floor, answering the same bytes --------------------------------------------------------
floor="$builddir/tests/perf/mhd-floor"
run_floor() { # NAME URL-SCHEME ARGS...
    name=$1 scheme=$2
    shift 2
    port=$(free_port)
    "$floor" "$port" "$static" "$@" >"$tmp/floor.out" 2>&1 &
    FLOOR_PID=$!
    wait_http "$scheme://127.0.0.1:$port/" "$FLOOR_PID"
    run_wrk "$name" "$scheme://127.0.0.1:$port$XKS_PATH" "$tmp/plain.lua"
    kill "$FLOOR_PID" 2>/dev/null || true
    wait "$FLOOR_PID" 2>/dev/null || true
    FLOOR_PID=
}

echo "bench-gateway: $threads cores, $conns connections, ${seconds}s per run, $(date -u +%FT%TZ)"
echo "reply bodies: holdfastd ${#reply} bytes, nginx $ng_bytes bytes"
: >"$tmp/results"
run_wrk nginx-plain "http://127.0.0.1:$NG_PLAIN$XKS_PATH" "$tmp/plain.lua"
run_floor mhd-floor-plain http
run_floor mhd-floor-plain-suspend http --suspend
wrk_script "127.0.0.1:$GW_PLAIN" "$tmp/plain.lua"
run_wrk holdfastd-plain "http://127.0.0.1:$GW_PLAIN$XKS_PATH" "$tmp/plain.lua"
run_wrk nginx-tls "https://127.0.0.1:$NG_TLS$XKS_PATH" "$tmp/plain.lua"
run_floor mhd-floor-tls-suspend https --suspend --tls "$tmp/tls.pem" "$tmp/tls.key"
wrk_script "127.0.0.1:$GW_TLS" "$tmp/tls.lua"
run_wrk holdfastd-tls "https://127.0.0.1:$GW_TLS$XKS_PATH" "$tmp/tls.lua"
stop_gateway
start_gateway false
wrk_script "127.0.0.1:$GW_PLAIN" "$tmp/plain.lua"
run_wrk holdfastd-plain-audit-off "http://127.0.0.1:$GW_PLAIN$XKS_PATH" "$tmp/plain.lua"
stop_gateway

records=$(grep -a -o '"op":"encrypt"' "$HOLDFAST_STATE_DIR"/audit.log | wc -l)
awk -v records="$records" '
    { ops[$1] = $2; line[$1] = $0 }
    END {
        printf "%-26s %10s %8s %8s %8s\n", "server", "ops/s", "p50 ms", "p90 ms", "p99 ms"
        n = split("nginx-plain mhd-floor-plain mhd-floor-plain-suspend holdfastd-plain nginx-tls mhd-floor-tls-suspend holdfastd-tls holdfastd-plain-audit-off", order, " ")
        for (i = 1; i <= n; i++) { split(line[order[i]], f, " ");
            printf "%-26s %10d %8.2f %8.2f %8.2f\n", f[1], f[2], f[3], f[4], f[5] }
        printf "ratio holdfastd/nginx plain: %.2f (target >= 0.5)\n", ops["holdfastd-plain"] / ops["nginx-plain"]
        printf "ratio holdfastd/nginx TLS:   %.2f (target >= 0.5)\n", ops["holdfastd-tls"] / ops["nginx-tls"]
        printf "audit on / audit off:        %.2f (target >= 0.9)\n", ops["holdfastd-plain"] / ops["holdfastd-plain-audit-off"]
        printf "ceilings of libmicrohttpd with no work, against nginx in this run:\n"
        printf "  plain:                     %.2f\n", ops["mhd-floor-plain"] / ops["nginx-plain"]
        printf "  plain, suspend + resume:   %.2f\n", ops["mhd-floor-plain-suspend"] / ops["nginx-plain"]
        printf "  TLS, suspend + resume:     %.2f\n", ops["mhd-floor-tls-suspend"] / ops["nginx-tls"]
        printf "  suspend + resume / straight: %.2f (the audit-on/off ratio with no work)\n", ops["mhd-floor-plain-suspend"] / ops["mhd-floor-plain"]
        printf "holdfastd against that ceiling: plain %.2f, TLS %.2f\n", ops["holdfastd-plain"] / ops["mhd-floor-plain-suspend"], ops["holdfastd-tls"] / ops["mhd-floor-tls-suspend"]
        printf "encrypt audit records written: %d\n", records
    }' "$tmp/results"
"$cli" audit verify >/dev/null && echo "audit verify: ok"
