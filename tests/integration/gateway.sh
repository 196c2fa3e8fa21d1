#!/bin/sh
# holdfastd end to end, through a test-only plugin (tests/integration/plugin-test.c) and a real
# key store made with the CLI: /healthz, /metrics, request ids, 404/405 shapes, a 413 refused
# from Content-Length without reading the body (and the rest of it read, not reset, after the
# answer), one log line per request and no plaintext in it,
# one audit record per authenticated request (written by the core for a key operation, by the
# gateway for a request refused before one), none of its own for a request refused before
# authentication (404, 405, 413, a plugin failure before it marks the request authenticated) but
# summary records that count them per source and reason, written at the interval and at stop, TLS 1.2/1.3 only, mTLS (no certificate and a foreign CA refused in
# the handshake), a second catch-all route that declines paths outside its prefix (404, never
# 405), reply headers on successes and error bodies (the gateway's own names and CR/LF refused),
# a bodiless 204 without Content-Type, unaudited requests with no record and no summary share,
# the metrics series a handler names (hf_request_set_operation), SIGHUP reloading plugin config under an open keep-alive connection (and a bad
# config refused), a rotation seen within a second with old ciphertexts still decrypting (through
# hf_keys_version), the link kill switch acting within a second, no core file and no memory
# readable by the user's other processes (PR_SET_DUMPABLE 0, RLIMIT_CORE 0), OpenSSL's secure
# heap, a world-readable TLS key or pin_file refused by name and mode, and a clean stop.
. "${top_srcdir:-.}/tests/integration/lib.sh"

HOLDFASTD=${HOLDFASTD:-$top_builddir/gateway/holdfastd}
PLUGIN=$top_builddir/tests/integration/.libs/plugin-test.so
[ -x "$HOLDFASTD" ] || hf_skip "$HOLDFASTD not built"
[ -f "$PLUGIN" ] || hf_skip "$PLUGIN not built (make check builds it)"
for tool in curl openssl python3; do
    command -v $tool >/dev/null || hf_skip "$tool not installed"
done
[ -f "$HF_MODULE" ] || hf_skip "$HF_MODULE not built"

hf_store_setup
"$HF_CLI" key create gw-key >/dev/null || hf_fail "key create"
# The test plugin's link type, "test-api", is its own: unknown to the store until holdfastd
# registers it at start (then `link create` takes it, below).
hf_expect_exit 2 "$HF_CLI" link create test-api gw-link gw-key
grep -qF "link type 'test-api' is not registered" "$HF_ERR" ||
    { cat "$HF_ERR"; hf_fail "link create on an unregistered type does not say so"; }

# ---- certificates: a CA, the server, a client it signed, and a client from another CA ----
pki=$HF_TMP/pki
mkdir -p "$pki"
mkcert() { # NAME SUBJECT [SAN] [signing CA]: key and certificate, valid two days
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$pki/$1.key" \
        -out "$pki/$1.csr" -subj "$2" 2>/dev/null || hf_fail "openssl req $1"
    printf 'subjectAltName=%s\n' "$3" >"$pki/$1.ext"
    openssl x509 -req -in "$pki/$1.csr" -CA "$pki/$4.pem" -CAkey "$pki/$4.key" \
        -CAcreateserial -out "$pki/$1.pem" -days 2 -extfile "$pki/$1.ext" 2>/dev/null ||
        hf_fail "openssl x509 $1"
}
for ca in ca other-ca; do
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$pki/$ca.key" \
        -out "$pki/$ca.pem" -days 2 -subj "/CN=$ca" 2>/dev/null || hf_fail "openssl CA"
done
mkcert server "/CN=localhost" "DNS:localhost,IP:127.0.0.1" ca
client_name=cks.kms.us-east-1.amazonaws.com
mkcert client "/O=Test/CN=$client_name" "DNS:$client_name" ca
mkcert foreign "/O=Test/CN=$client_name" "DNS:$client_name" other-ca
mkcert wrong-name "/O=Test/CN=someone.example" "DNS:someone.example" ca

# ---- the daemon ----
port=$(hf_free_port)
tport=$(hf_free_port)
[ "$port" != "$tport" ] || tport=$(hf_free_port)
conf=$HF_TMP/holdfastd.conf
log=$HF_TMP/holdfastd.out
write_conf() { # GREETING [EXTRA LINE]
    cat >"$conf" <<EOF
[gateway]
listen = 127.0.0.1:$port
listen = 127.0.0.1:$tport tls
threads = 2
max_body = 16k
module = $HF_MODULE
pin_file = $HOLDFAST_STATE_DIR/token-gateway.pin
plugins = test

[plugin:test]
path = $PLUGIN

[tls]
cert = pki/server.pem
key = pki/server.key
client_ca = pki/ca.pem
client_san = $client_name

[test]
greeting = $1
catchall_prefix = /tc
$2
EOF
}
write_conf first

# -t checks a config without starting; a bad line is named with its number.
hf_expect_exit 0 "$HOLDFASTD" -t -c "$conf"
printf '[gateway]\nlisten = 127.0.0.1:%s\nthreads = lots\n' "$port" >"$HF_TMP/bad.conf"
hf_expect_exit 1 "$HOLDFASTD" -t -c "$HF_TMP/bad.conf"
grep -q "bad.conf:3: threads" "$HF_ERR" || { cat "$HF_ERR"; hf_fail "-t names the bad line"; }

# Secret files (pkcs11/common/secret-file.h): a TLS key or a pin_file others may read is refused with
# the file and its mode; a group-readable key (root:ssl-cert 0640) only warned about.
chmod 644 "$pki/server.key"
hf_expect_exit 1 "$HOLDFASTD" -t -c "$conf"
grep -q "\[tls\] key .*server.key: mode 0644: world-readable; chmod 600" "$HF_ERR" ||
    { cat "$HF_ERR"; hf_fail "a world-readable TLS key is not refused by name and mode"; }
chmod 640 "$pki/server.key"
hf_expect_exit 0 "$HOLDFASTD" -t -c "$conf"
grep -qF "server.key: mode 0640: group-readable" "$HF_ERR" ||
    { cat "$HF_ERR"; hf_fail "a group-readable TLS key gives no warning"; }
chmod 600 "$pki/server.key"
cp "$HOLDFAST_STATE_DIR/token-user.pin" "$HF_TMP/open.pin"
chmod 604 "$HF_TMP/open.pin"
sed "s|^pin_file = .*|pin_file = $HF_TMP/open.pin|" "$conf" >"$HF_TMP/open-pin.conf"
hf_expect_exit 1 "$HOLDFASTD" -f -c "$HF_TMP/open-pin.conf"
grep -qF "pin_file $HF_TMP/open.pin: mode 0604: world-readable; chmod 600" "$HF_ERR" ||
    { cat "$HF_ERR"; hf_fail "a world-readable pin_file is not refused by name and mode"; }
# Logged in with the user PIN, holdfastd could attach no request context (the gateway role's):
# it refuses to start and says which PIN it needs, rather than fail every request.
sed "s|^pin_file = .*|pin_file = $HOLDFAST_STATE_DIR/token-user.pin|" "$conf" >"$HF_TMP/user-pin.conf"
# Bounded: a holdfastd that wrongly starts would run until killed.
hf_expect_exit 1 timeout -k 5 30 "$HOLDFASTD" -f -c "$HF_TMP/user-pin.conf"
grep -qF "pin_file must hold the gateway PIN" "$HF_ERR" ||
    { cat "$HF_ERR"; hf_fail "holdfastd started with the user PIN does not say it needs the gateway's"; }

base=http://127.0.0.1:$port
# Through no-ptrace.py, so that a peer on equal terms can tell whether holdfastd is dumpable.
hf_gateway_start "$base" python3 "$top_srcdir/tests/integration/no-ptrace.py" "$HOLDFASTD" -f \
    -c "$conf"
pid=$HF_GW_PID
"$HF_CLI" link create test-api gw-link gw-key >/dev/null ||
    hf_fail "link create test-api after holdfastd registered the type"
"$HF_CLI" --json link types | grep -qF '"test-api"' || hf_fail "test-api is not in link types"
grep -a -q '"op":"link.type_add",.*"detail":"type=test-api","result":"0x0"' \
    "$HOLDFAST_STATE_DIR/audit.log" || hf_fail "holdfastd's registration of test-api is not audited"

# ---- secrets in memory: no core file, and no other process of its user reads its memory ----
grep -Eq '^Max core file size +0 +0 ' "/proc/$pid/limits" ||
    { cat "/proc/$pid/limits"; hf_fail "holdfastd may dump core (RLIMIT_CORE)"; }
python3 "$top_srcdir/tests/integration/no-ptrace.py" python3 -c \
    "open('/proc/$pid/mem', 'rb')" 2>/dev/null &&
    hf_fail "holdfastd is dumpable: a process of its user opened /proc/$pid/mem"
# OpenSSL's secure heap (16 MiB, not dumped) for private keys and SigV4 secrets.
# Not in sanitizer builds (pkcs11/common/no-dump.h: the sanitizers cannot see into it).
[ -n "$HF_SANITIZED" ] || python3 "$top_srcdir/tests/integration/secure-heap.py" "$pid" 16384 ||
    hf_fail "holdfastd has no OpenSSL secure heap"

# req OUT METHOD PATH [curl args]: the status on stdout; body in OUT.body, headers in OUT.hdr.
req() {
    _out=$HF_TMP/$1
    _m=$2
    _p=$3
    shift 3
    curl -s -X "$_m" -o "$_out.body" -D "$_out.hdr" -w '%{http_code}' "$@" "$base$_p"
}
header() { # FILE NAME
    tr -d '\r' <"$HF_TMP/$1.hdr" | sed -n "s/^$2: //Ip" | head -n 1
}
json() { # FILE EXPR
    python3 -c "import json,sys; d = json.load(open(sys.argv[1])); v = ($2); print(v)" "$HF_TMP/$1.body"
}
metric() { # SERIES: its value in /metrics, 0 when absent
    curl -s "$base/metrics" | awk -v s="$1" '$1 == s { v = $2 } END { print v + 0 }'
}
ids=""

# ---- /healthz, ids, metrics ----
check "$(req h GET /healthz)" 200 "/healthz"
check "$(json h 'd["status"]')" ok "/healthz body"
[ -n "$(header h X-Request-Id)" ] || hf_fail "no X-Request-Id on /healthz"
enc_series='holdfast_requests_total{api="test",operation="encrypt",status="200"}'
before=$(metric "$enc_series")

# ---- a key operation: the core writes its record ----
marker="PLAINTEXT-MARKER-must-not-be-logged"
b64=$(printf '%s' "$marker" | openssl base64 -A)
check "$(req e1 POST /test/v1/links/gw-link/encrypt -H 'X-Test-Caller: alice' -H 'X-Test-Note: n=1' \
    --data "{\"plaintext\":\"$b64\"}")" 200 "encrypt"
id_enc=$(header e1 X-Request-Id)
ids="$ids $id_enc"
check "$(json e1 'd["keyName"], d["keyVersion"], len(d["ciphertext"]) > 0')" "('gw-key', 1, True)" \
    "encrypt reply"
check "$(req e2 POST /test/v1/links/gw-link/encrypt -H 'X-Test-Request-Id: cloud-req-42' \
    --data "{\"plaintext\":\"$b64\"}")" 200 "encrypt with a cloud request id"
id_enc2=$(header e2 X-Request-Id)
ids="$ids $id_enc2"
check "$(metric "$enc_series")" $((before + 2)) "encrypt counter in /metrics"
curl -s "$base/metrics" | grep -q '^holdfast_request_duration_seconds_bucket{api="test",operation="encrypt",le="+Inf"} ' ||
    hf_fail "no latency histogram for encrypt"
check "$(metric holdfast_key_source_up)" 1 "key source health gauge"

# ---- refused before any key operation: the gateway writes its record ----
check "$(req f GET /test/v1/fail -H 'X-Test-Caller: mallory' -H 'X-Test-Note: n=1')" 400 "fail route"
check "$(json f 'd["errorName"]')" TestValidation "fail route error shape (the plugin's)"
id_fail=$(header f X-Request-Id)
ids="$ids $id_fail"
check "$(req nokey POST /test/v1/links/no-such-link/encrypt --data '{"plaintext":"AA=="}')" 404 \
    "unknown link"
check "$(json nokey 'd["errorName"]')" TestKeyNotFound "unknown link error"
id_nokey=$(header nokey X-Request-Id) # no X-Test-Caller: refused before authentication
ids="$ids $id_nokey"
# Plugins read bodies with the gateway's strict reader: a duplicate key is refused.
check "$(req dup POST /test/v1/links/gw-link/encrypt --data '{"plaintext":"AA==","plaintext":"AQ=="}')" \
    400 "a body with a duplicate key"
ids="$ids $(header dup X-Request-Id)"

# ---- routing: 404, 405, captures ----
check "$(req nf GET /no/such/path)" 404 "unknown path"
check "$(json nf 'd["error"], d["request_id"] == "'"$(header nf X-Request-Id)"'"')" "('NotFound', True)" \
    "404 generic body"
id_nf=$(header nf X-Request-Id)
ids="$ids $id_nf"
check "$(req na POST /test/v1/fail --data x)" 405 "wrong method"
check "$(json na 'd["errorName"]')" TestMethod "405 in the plugin's shape"
check "$(header na Allow)" GET "405 Allow header"
id_na=$(header na X-Request-Id)
ids="$ids $id_na"
# The test plugin's catch-all (GET and OPTIONS "/{any*}") takes only /tc: elsewhere it
# declines, so the gateway's 404 stands, never a 405 from its pattern (plugin.h's accepts).
check "$(req nfo OPTIONS /no/such/path)" 404 "OPTIONS outside the catch-all's prefix"
check "$(json nfo 'd["error"]')" NotFound "a declined catch-all: the generic 404"
ids="$ids $(header nfo X-Request-Id)"
check "$(req tc GET /tc/a/b)" 200 "the catch-all under its prefix"
check "$(json tc 'd["catchall"]')" /tc/a/b "the catch-all's path"
check "$(header tc X-Test-Extra)" yes "hf_reply_header on a success"
ids="$ids $(header tc X-Request-Id)"
check "$(req tcf GET /tc/fail)" 400 "the catch-all's failure"
check "$(json tcf 'd["errorName"]')" TestUnsupported "the failure in the plugin's shape"
check "$(header tcf X-Test-Extra)" yes "hf_reply_header on an error body"
ids="$ids $(header tcf X-Request-Id)"
check "$(req pre OPTIONS /tc/a -H 'Origin: https://client.example')" 204 "a preflight"
[ ! -s "$HF_TMP/pre.body" ] || hf_fail "hf_reply_empty sent a body: $(cat "$HF_TMP/pre.body")"
[ -z "$(header pre Content-Type)" ] || hf_fail "hf_reply_empty sent a Content-Type"
check "$(header pre Access-Control-Allow-Origin)" https://client.example "the preflight's CORS header"
[ -n "$(header pre X-Request-Id)" ] || hf_fail "no X-Request-Id on the preflight"
if grep -qi -e '^Injected:' -e '^X-Split:' "$HF_TMP/pre.hdr"; then
    hf_fail "a header value with CR LF reached the wire: $(cat "$HF_TMP/pre.hdr")"
fi
id_pre=$(header pre X-Request-Id)
ids="$ids $id_pre"
for i in 1 2; do
    check "$(req pref OPTIONS /tc/fail)" 400 "an unaudited failure"
    ids="$ids $(header pref X-Request-Id)"
    id_pref=$(header pref X-Request-Id)
done
check "$(metric 'holdfast_requests_total{api="test",operation="catchall.get",status="200"}')" 1 \
    "hf_request_set_operation names the metrics series"
check "$(req ec GET '/test/a/b%2Fc/echo/k%41y?x=1' -H 'X-Test-Echo: hi')" 200 "echo"
check "$(json ec 'd["rest"], d["id"], d["query"], d["header"]')" "('a/b/c', 'kAy', 'x=1', 'hi')" \
    "captures, query, header"
ids="$ids $(header ec X-Request-Id)"

# ---- 413 from Content-Length, body never read ----
head -c 20000 /dev/zero >"$HF_TMP/big"
check "$(req big POST /test/v1/links/gw-link/encrypt -H 'Expect:' --data-binary @"$HF_TMP/big")" \
    413 "body over max_body"
check "$(json big 'd["errorName"]')" TestTooLarge "413 in the plugin's shape"
# The plugin's own limit (12k) is under [gateway] max_body (16k): it is the one that holds.
head -c 14000 /dev/zero >"$HF_TMP/mid"
check "$(req mid POST /test/v1/links/gw-link/encrypt -H 'Expect:' --data-binary @"$HF_TMP/mid")" \
    413 "body over the plugin's max_body"
head -c 10000 /dev/zero >"$HF_TMP/small"
check "$(req small POST /test/v1/links/gw-link/encrypt -H 'Expect:' \
    --data-binary @"$HF_TMP/small")" 400 "a body under the plugin's max_body is read"
ids="$ids $(header mid X-Request-Id) $(header small X-Request-Id)"
id_big=$(header big X-Request-Id)
ids="$ids $id_big"
# Announce 10 MB and send none of it: the answer comes anyway, so nothing waited for the body.
python3 - "$port" >"$HF_TMP/raw413" <<'PY' || hf_fail "413 before the body: $(cat "$HF_TMP/raw413")"
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
s.sendall(b"POST /test/v1/links/gw-link/encrypt HTTP/1.1\r\nHost: x\r\n"
          b"Content-Type: application/json\r\nContent-Length: 10000000\r\n\r\n")
data = b""
try:
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
except socket.timeout:
    print("no answer within 5 s: the gateway waited for the body")
    sys.exit(1)
print(data.split(b"\r\n")[0].decode())
sys.exit(0 if data.startswith(b"HTTP/1.1 413") else 1)
PY
check "$(sed -n 1p "$HF_TMP/raw413")" "HTTP/1.1 413 Content Too Large" "413 without the body"
# Lingering close (gateway/linger.h): a client still sending its body after that early 413 is
# read, not reset, until it ends its side; a reset would cost a client mid-upload the answer.
python3 - "$port" >"$HF_TMP/linger" <<'PY' || hf_fail "$(cat "$HF_TMP/linger")"
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
s.sendall(b"POST /test/v1/links/gw-link/encrypt HTTP/1.1\r\nHost: x\r\n"
          b"Content-Type: application/json\r\nContent-Length: 10000000\r\n\r\n")
data = b""
while True:
    chunk = s.recv(4096)
    if not chunk:
        break
    data += chunk
if not data.startswith(b"HTTP/1.1 413"):
    sys.exit("no 413 before the body: %r" % data[:60])
try:
    for _ in range(64):
        s.sendall(b"y" * 16384)
        time.sleep(0.005)
    s.shutdown(socket.SHUT_WR)
    time.sleep(0.3)
    err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
    if err:
        sys.exit("the body sent after the 413 met error %d (a reset)" % err)
except OSError as e:
    sys.exit("the body sent after the 413 met %s: no lingering close" % e)
PY

# ---- TLS: 1.2 and 1.3 with the right client certificate; 1.1, no certificate, a foreign CA
# and a name not allowed are refused in the handshake ----
tbase=https://localhost:$tport
good="--cacert $pki/ca.pem --cert $pki/client.pem --key $pki/client.key"
# shellcheck disable=SC2086
check "$(curl -s $good --tlsv1.3 -o "$HF_TMP/t13.body" -w '%{http_code}' "$tbase/test/x/echo/1")" \
    200 "TLS 1.3 with the client certificate"
check "$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["clientSans"])' \
    "$HF_TMP/t13.body")" "['$client_name']" "client SANs reach the plugin"
# shellcheck disable=SC2086
check "$(curl -s $good --tlsv1.2 --tls-max 1.2 -o /dev/null -w '%{http_code}' "$tbase/healthz")" \
    200 "TLS 1.2 with the client certificate"
if curl -s --cacert "$pki/ca.pem" -o /dev/null "$tbase/healthz"; then
    hf_fail "TLS without a client certificate was accepted"
fi
if curl -s --cacert "$pki/ca.pem" --cert "$pki/foreign.pem" --key "$pki/foreign.key" -o /dev/null \
    "$tbase/healthz"; then
    hf_fail "a client certificate from another CA was accepted"
fi
if curl -s --cacert "$pki/ca.pem" --cert "$pki/wrong-name.pem" --key "$pki/wrong-name.key" \
    -o /dev/null "$tbase/healthz"; then
    hf_fail "a client certificate with a name not in client_san was accepted"
fi
# OpenSSL 3 refuses TLS 1.1 itself at its default security level: lowered, so the refusal seen
# is the server's.
if echo | openssl s_client -connect "127.0.0.1:$tport" -tls1_1 -cipher 'DEFAULT@SECLEVEL=0' \
    -cert "$pki/client.pem" -key "$pki/client.key" >"$HF_TMP/tls11" 2>&1; then
    cat "$HF_TMP/tls11"
    hf_fail "TLS 1.1 handshake succeeded"
fi
grep -q "Cipher is (NONE)" "$HF_TMP/tls11" || { cat "$HF_TMP/tls11"; hf_fail "TLS 1.1 negotiated"; }
if echo | openssl s_client -connect "127.0.0.1:$tport" -tls1_2 -cert "$pki/client.pem" \
    -key "$pki/client.key" >"$HF_TMP/tls12" 2>&1; then :; fi
grep -q "Cipher is ECDHE-ECDSA-AES256-GCM-SHA384" "$HF_TMP/tls12" ||
    { cat "$HF_TMP/tls12"; hf_fail "TLS 1.2 suite is not ECDHE-ECDSA-AES256-GCM-SHA384"; }

# ---- SIGHUP: new plugin config on the same keep-alive connection; a bad config is refused ----
python3 - "$port" "$pid" "$conf" <<'PY' || hf_fail "reload under keep-alive"
import http.client, json, os, signal, sys, time
port, pid, conf = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
def greeting():
    c.request("GET", "/test/v1/config")
    r = c.getresponse()
    body = r.read()
    if r.status != 200:
        sys.exit("status %d" % r.status)
    if c.sock is None:
        sys.exit("the server closed the keep-alive connection")
    return json.loads(body)["greeting"]
if greeting() != "first":
    sys.exit("greeting before the reload")
local = c.sock.getsockname()
text = open(conf).read()
open(conf, "w").write(text.replace("greeting = first", "greeting = second"))
os.kill(pid, signal.SIGHUP)
deadline = time.time() + 10
while greeting() != "second":
    if time.time() > deadline:
        sys.exit("the new greeting never showed")
    time.sleep(0.05)
if c.sock.getsockname() != local:
    sys.exit("a new connection was made")
# A config that does not parse: the running one stays.
open(conf, "w").write(text.replace("greeting = first", "greeting = second") + "\n[test\n")
os.kill(pid, signal.SIGHUP)
time.sleep(0.5)
if greeting() != "second" or c.sock.getsockname() != local:
    sys.exit("a bad reload changed something")
open(conf, "w").write(text.replace("greeting = first", "greeting = second"))
print("ok")
PY
grep -q '"msg":"reload refused' "$log" || hf_fail "the refused reload is not logged"
check "$(metric 'holdfast_config_reloads_total{result="error"}')" 1 "failed reloads counted"

# ---- rotation: new encryptions use the new version within a second, old ciphertexts decrypt ----
dec_body() { # FILE: a decrypt request for the ciphertext in FILE.body
    python3 -c 'import json,sys; d = json.load(open(sys.argv[1]))
print(json.dumps({"ciphertext": d["ciphertext"], "iv": d["iv"], "keyVersion": d["keyVersion"]}))' \
        "$HF_TMP/$1.body"
}
"$HF_CLI" key rotate gw-key >/dev/null || hf_fail "key rotate"
start=$(date +%s%N)
while :; do
    check "$(req rot POST /test/v1/links/gw-link/encrypt --data "{\"plaintext\":\"$b64\"}")" 200 \
        "encrypt after the rotation"
    [ "$(json rot 'd["keyVersion"]')" = 2 ] && break
    [ $(( ($(date +%s%N) - start) / 1000000 )) -lt 1500 ] || hf_fail "version 2 unused after 1.5 s"
    sleep 0.1
done
check "$(req d1 POST /test/v1/links/gw-link/decrypt --data "$(dec_body e1)")" 200 \
    "decrypt a version 1 ciphertext after the rotation"
check "$(json d1 'd["plaintext"]')" "$b64" "version 1 plaintext"
check "$(req d2 POST /test/v1/links/gw-link/decrypt --data "$(dec_body rot)")" 200 \
    "decrypt a version 2 ciphertext"
check "$(json d2 'd["plaintext"]')" "$b64" "version 2 plaintext"
check "$(req d3 POST /test/v1/links/gw-link/decrypt \
    --data '{"ciphertext":"AAAAAAAAAAAAAAAAAAAAAA==","iv":"AAAAAAAAAAAAAAAA","keyVersion":7}')" 404 \
    "a version that does not exist"

# ---- versions by UUID (hf_keys_by_version_uuid): the old version, the current one, none ----
vuuids=$("$HF_CLI" --json key show gw-key | python3 -c 'import json, sys
print(" ".join(v["uuid"] for v in sorted(json.load(sys.stdin)["versions"], key=lambda v: v["version"])))')
set -- $vuuids
check "$(req v1 GET "/test/v1/versions/$1")" 200 "version 1 by its UUID"
check "$(json v1 'd["keyName"], d["linkId"], d["version"], d["versionUuid"] == "'"$1"'"')" \
    "('gw-key', 'gw-link', 1, True)" "version 1 by UUID"
check "$(json v1 'd["currentVersion"], d["currentVersionUuid"] == "'"$2"'", d["mayEncrypt"]')" \
    "(2, True, True)" "the current version's UUID in hf_key_ref"
check "$(req v2 GET "/test/v1/versions/$2")" 200 "version 2 by its UUID"
check "$(json v2 'd["version"]')" 2 "version 2 by UUID"
check "$(req v0 GET /test/v1/versions/00000000-0000-4000-8000-000000000000)" 404 \
    "an unknown version UUID"
check "$(req vbad GET /test/v1/versions/short)" 404 "a malformed version UUID"
vuuid1=$1

# ---- the kill switch: blocking the link stops the next request, no restart ----
check "$(req pre POST /test/v1/links/gw-link/encrypt --data '{"plaintext":"AA=="}')" 200 \
    "encrypt before the block"
"$HF_CLI" link block test-api gw-link >/dev/null || hf_fail "link block"
start=$(date +%s%N)
while :; do
    st=$(req blk POST /test/v1/links/gw-link/encrypt --data '{"plaintext":"AA=="}')
    [ "$st" = 400 ] && break
    [ $(( ($(date +%s%N) - start) / 1000000 )) -lt 1000 ] || hf_fail "still $st a second after the block"
    sleep 0.05
done
elapsed=$(( ($(date +%s%N) - start) / 1000000 ))
check "$(json blk 'd["errorName"]')" TestKeyDisabled "blocked link error"
ids="$ids $(header blk X-Request-Id)"
echo "blocked link refused ${elapsed} ms after the CLI returned"
# A version found by UUID goes through the same link: blocked too (hf_key_may: KEY_DISABLED).
check "$(req vblk GET "/test/v1/versions/$vuuid1")" 400 "a version by UUID through a blocked link"
check "$(json vblk 'd["errorName"]')" TestKeyDisabled "a version by UUID through a blocked link"
"$HF_CLI" link unblock test-api gw-link >/dev/null || hf_fail "link unblock"
sleep 1.1
check "$(req post POST /test/v1/links/gw-link/encrypt --data '{"plaintext":"AA=="}')" 200 \
    "encrypt after the unblock"

# ---- logs: one line per request, never the plaintext ----
sleep 0.3 # request lines are written within 100 ms (gateway/log.h)
for id in $ids; do
    n=$(grep -c "\"request_id\":\"$id\"" "$log")
    [ "$n" = 1 ] || hf_fail "request $id has $n log lines"
done
if grep -q -e "$marker" -e "$b64" "$log"; then hf_fail "the plaintext reached the log"; fi

# ---- audit: the chain verifies; each request has its record ----
hf_expect_exit 0 "$HF_CLI" audit verify
audit=$HOLDFAST_STATE_DIR/audit.log
for id in $id_enc $id_fail; do
    n=$(grep -a -o "\"request_id\":\"$id\"" "$audit" | wc -l)
    [ "$n" = 1 ] || hf_fail "request $id has $n audit records"
done
# Refused before authentication: no record, no wait; counted (the summaries are checked at stop).
# Unaudited (a preflight, its success or failure): no record either, nor counted.
for id in $id_nokey $id_nf $id_na $id_big $id_pre $id_pref; do
    n=$(grep -a -o "\"request_id\":\"$id\"" "$audit" | wc -l)
    [ "$n" = 0 ] || hf_fail "request $id, refused before authentication, has $n audit records"
done
[ "$(metric holdfast_preauth_refused_total)" -ge 5 ] ||
    hf_fail "holdfast_preauth_refused_total does not count the refusals"
grep -a "\"request_id\":\"$id_enc\"" "$audit" | grep -q '"api":"test","op":"encrypt","key":' ||
    hf_fail "the encrypt record does not name the API, operation and key"
grep -a "\"request_id\":\"$id_fail\"" "$audit" |
    grep -q '"caller":"mallory".*TestValidation: refused before any key operation' ||
    hf_fail "the refused request's record lacks its caller or reason"
grep -a -q '"request_id":"cloud-req-42"' "$audit" || hf_fail "the cloud's request id is not recorded"
# The plugin's audit fields, on the key operation's record (a success) and on the record of a
# request refused before one (a failure): one object of strings after "detail", the quotes and
# the backslash escaped, the UTF-8 kept as it is.
for id in $id_enc $id_fail; do
    grep -a "\"request_id\":\"$id\"" "$audit" |
        grep -qF '"fields":{"tricky":"say \"hi\" \\ Jörg ☃","health_check":"false","note":"n=1"},"result"' ||
        { grep -a "\"request_id\":\"$id\"" "$audit"; hf_fail "request $id's record lacks its fields"; }
done
python3 - "$audit" "$id_enc" "$id_fail" <<'PY' || hf_fail "the fields do not read back as JSON"
import json, sys
want = {"tricky": 'say "hi" \\ J\u00f6rg \u2603', "health_check": "false", "note": "n=1"}
recs = [json.loads(l[l.index("{"):]) for l in open(sys.argv[1], encoding="utf-8", errors="strict")
        if "{" in l and any('"request_id":"%s"' % i in l for i in sys.argv[2:])]
assert len(recs) == 2, recs
for r in recs:
    assert r["fields"] == want, r
assert [r["ok"] for r in recs] == [True, False], recs
PY
grep -q "\"request_id\":\"$id_enc2\".*\"cloud_request_id\":\"cloud-req-42\"" "$log" ||
    hf_fail "the log line does not tie our id to the cloud's"

# ---- stop: SIGTERM drains (drain_ms, 2 s by default) and ends it cleanly (and, under ASan,
# without a report) ----
rc=0
kill -TERM "$HF_GW_PID"
wait "$HF_GW_PID" || rc=$?
HF_GW_PID=
check "$rc" 0 "holdfastd exit status after SIGTERM"
# What was refused before authentication is in summary records by now (the last at stop), one
# per source and reason per interval, and the chain still verifies.
hf_expect_exit 0 "$HF_CLI" audit verify
for want in "test TestKeyNotFound 1" "gateway NotFound 1" "test TestMethod 1" "test TestTooLarge 2"; do
    set -- $want
    got=$(hf_preauth_count "$audit" "$1" "$2" 127.0.0.1)
    [ "${got% *}" -ge "$3" ] || hf_fail "summaries count ${got% *} $1 $2 refusals, want $3 or more"
done
# GET /tc/fail once, OPTIONS /tc/fail (unaudited) twice: only the first is counted.
got=$(hf_preauth_count "$audit" test TestUnsupported 127.0.0.1)
check "${got% *}" 1 "refusals summarised as TestUnsupported (unaudited ones are not)"
if grep -q -e "ERROR: AddressSanitizer" -e "ERROR: LeakSanitizer" -e "runtime error:" "$log"; then
    cat "$log"
    hf_fail "sanitizer report"
fi
echo "gateway: all checks passed"
