#!/bin/sh
# Listeners with their own TLS policy and plugins ([listener:NAME], gateway/config-listener.c),
# and the per-API latency metrics, in one holdfastd over a key store made with the CLI:
#
#   A  aws-xks only, TLS, client certificates required: a signed XKS call with the client's
#      certificate succeeds, without one the handshake fails, the test plugin's route is the
#      gateway's generic 404;
#   B  the test plugin only (tests/integration/plugin-test.c), TLS, client_certificate = off: it
#      answers without a certificate, and an XKS route (even signed) is the generic 404, counted
#      with the refusals before authentication;
#   C  the test plugin, client_certificate = optional: no certificate works and the plugin sees
#      no subject, a certificate from another CA fails the handshake, a good one is seen.
#
# Then /metrics: the calls answered within each API's limit (aws-xks 250 ms, test 40 ms), their
# share, the histogram edges at each limit. SIGHUP: a new plugin list for a listener is taken; a
# changed port or TLS setting is refused by name and the running listeners stay. -t: two
# listeners on one port and a listener naming a plugin that is not loaded are refused with
# file:line.
. "${top_srcdir:-.}/tests/integration/lib.sh"

hf_xks_need
TEST_PLUGIN=$top_builddir/tests/integration/.libs/plugin-test.so
[ -f "$TEST_PLUGIN" ] || hf_skip "$TEST_PLUGIN not built (make check builds it)"
hf_store_setup

"$HF_CLI" key create k1 >/dev/null || hf_fail "key create"
"$HF_CLI" link add aws-xks k1 k1 >/dev/null || hf_fail "link add"

# ---- certificates: a CA, the server, a client it signed, a client of another CA ----
HF_PKI=$HF_TMP/pki
PKI=$HF_PKI
hf_pki_ca ca
hf_pki_ca foreign-ca
hf_pki_cert server localhost ca "subjectAltName=IP:127.0.0.1,DNS:localhost"
hf_pki_cert kms cks.kms.us-east-1.amazonaws.com ca "extendedKeyUsage=clientAuth"
hf_pki_cert stranger cks.kms.us-east-1.amazonaws.com foreign-ca "extendedKeyUsage=clientAuth"
# Every curl below trusts the test CA (hf_gateway_start's /healthz probe too).
CURL_CA_BUNDLE=$PKI/ca.pem
export CURL_CA_BUNDLE

# ---- holdfastd: three listeners, each its own TLS policy and plugins ----
PA=$(hf_free_port)
PB=$(hf_free_port)
PC=$(hf_free_port)
[ "$PA" != "$PB" ] && [ "$PB" != "$PC" ] && [ "$PA" != "$PC" ] || hf_skip "free ports collided"
AKID=AKIAIOSFODNN7EXAMPLE
SEC=FYtE5EFA5FT0mCc3DrGUe2sti527BitkQ0Zr9MO9fvE
CONF=$HF_TMP/holdfastd.conf
write_conf() { # PLUGINS_OF_C [PORT_OF_C] [CLIENT_CERTIFICATE_OF_C]
    cat >"$CONF" <<EOF
[gateway]
threads = 2
module = $HF_MODULE
pin_file = $HOLDFAST_STATE_DIR/token-gateway.pin
plugins = aws-xks, test
log = $HF_TMP/holdfastd.log

[plugin:aws-xks]
path = $XKS_PLUGIN

[plugin:test]
path = $TEST_PLUGIN

[listener:xks]
listen = 127.0.0.1:$PA
cert = pki/server.pem
key = pki/server.key
client_ca = pki/ca.pem
client_certificate = required
plugins = aws-xks

[listener:bearer]
listen = 127.0.0.1:$PB
cert = pki/server.pem
key = pki/server.key
client_certificate = off
plugins = test

[listener:maybe]
listen = 127.0.0.1:${2:-$PC}
cert = pki/server.pem
key = pki/server.key
client_ca = pki/ca.pem
client_certificate = ${3:-optional}
plugins = $1

$(hf_xks_store k1 "$AKID:$SEC" k1)
EOF
}
write_conf test

# ---- config checks, with file and line ----
hf_expect_exit 0 "$HOLDFASTD" -t -c "$CONF"
sed "s|^listen = 127.0.0.1:$PB\$|listen = 127.0.0.1:$PA|" "$CONF" >"$HF_TMP/same-port.conf"
hf_expect_exit 1 "$HOLDFASTD" -t -c "$HF_TMP/same-port.conf"
line=$(grep -n "^listen = 127.0.0.1:$PA\$" "$HF_TMP/same-port.conf" | sed -n '2s/:.*//p')
grep -qF "same-port.conf:$line: listener bearer: port $PA is already listener xks's" "$HF_ERR" ||
    hf_fail "two listeners on one port: $(cat "$HF_ERR")"
sed 's|^plugins = test$|plugins = test, gcp-ekm|' "$CONF" >"$HF_TMP/not-loaded.conf"
hf_expect_exit 1 "$HOLDFASTD" -t -c "$HF_TMP/not-loaded.conf"
line=$(grep -n '^plugins = test, gcp-ekm$' "$HF_TMP/not-loaded.conf" | sed -n '1s/:.*//p')
grep -qF "not-loaded.conf:$line: [listener:bearer] plugins: \"gcp-ekm\" is not loaded" "$HF_ERR" ||
    hf_fail "a plugin that is not loaded: $(cat "$HF_ERR")"

hf_gateway_start "https://127.0.0.1:$PB" "$HOLDFASTD" -f -c "$CONF"
grep -q "listener xks on 127.0.0.1:$PA (tls, client certificate required)" "$HF_TMP/holdfastd.log" ||
    hf_fail "the start log does not name listener xks and its policy"

OUT=$HF_TMP/out.json
KMS="--cert $PKI/kms.pem --key $PKI/kms.key"
STRANGER="--cert $PKI/stranger.pem --key $PKI/stranger.key"
python3 "$top_srcdir/tests/integration/xks-body.py" metadata >"$HF_TMP/md.json" ||
    hf_fail "xks-body.py metadata"
# xks PORT [curl options]: a signed GetKeyMetadata of k1; CODE the status (or curl-exit-N).
xks() {
    _port=$1
    shift
    rm -f "$OUT"
    CODE=$(curl -sS -o "$OUT" -w '%{http_code}' --aws-sigv4 "aws:amz:us-east-1:kms-xks-proxy" \
        --user "$AKID:$SEC" -H 'Content-Type: application/json' --data-binary "@$HF_TMP/md.json" \
        "$@" "https://127.0.0.1:$_port/kms/xks/v1/keys/k1/metadata" 2>"$HF_TMP/curl.err") ||
        CODE="curl-exit-$?"
}
# echo PORT [curl options]: the test plugin's echo route; CODE as above.
echo_call() {
    _port=$1
    shift
    rm -f "$OUT"
    CODE=$(curl -sS -o "$OUT" -w '%{http_code}' "$@" "https://127.0.0.1:$_port/test/x/echo/1" \
        2>"$HF_TMP/curl.err") || CODE="curl-exit-$?"
}
field() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1])).get(sys.argv[2]); print("null" if v is None else v)' "$OUT" "$1"; }
handshake_failed() { # WHAT: the last call got no HTTP answer at all
    case $CODE in
    curl-exit-*) ;;
    *) hf_fail "$1: HTTP $CODE, want a failed handshake ($(cat "$OUT" 2>/dev/null))" ;;
    esac
}
metric() { # SERIES: its value in /metrics (over B), 0 when absent
    curl -s "https://127.0.0.1:$PB/metrics" | awk -v s="$1" '$1 == s { v = $2 } END { print v + 0 }'
}
reloaded() { # RESULT COUNT WHAT: SIGHUP, then wait (5 s at most) for reloads{result} to be COUNT
    kill -HUP "$HF_GW_PID"
    _n=0
    until [ "$(metric "holdfast_config_reloads_total{result=\"$1\"}")" = "$2" ]; do
        _n=$((_n + 1))
        [ "$_n" -lt 50 ] || hf_fail "$3"
        sleep 0.1
    done
}

# ---- A: aws-xks, client certificates required ----
xks "$PA" $KMS
check "$CODE" 200 "A: a signed XKS call with the client certificate"
check "$(field keyStatus)" ENABLED "A: k1's status"
xks "$PA"
handshake_failed "A: an XKS call without a client certificate"
xks "$PA" $STRANGER
handshake_failed "A: a client certificate of another CA"
echo_call "$PA" $KMS
check "$CODE" 404 "A: the test plugin's route on the XKS listener"
check "$(field error)" NotFound "A: the gateway's generic 404"

# ---- B: the test plugin, no client certificates ----
echo_call "$PB"
check "$CODE" 200 "B: the test plugin without a client certificate"
check "$(field clientSubject)" null "B: no client subject"
refused0=$(metric holdfast_preauth_refused_total)
xks "$PB"
check "$CODE" 404 "B: a signed XKS call on the test plugin's listener"
check "$(field error)" NotFound "B: the gateway's generic 404, not XKS's own"
[ "$(field errorName)" = null ] || hf_fail "B: the 404 is in aws-xks's shape: $(cat "$OUT")"
check "$(metric holdfast_preauth_refused_total)" $((refused0 + 1)) \
    "B: the 404 counted with the refusals before authentication"

# ---- C: the test plugin, client certificate optional ----
echo_call "$PC"
check "$CODE" 200 "C: no client certificate"
check "$(field clientSubject)" null "C: the plugin sees no subject without a certificate"
echo_call "$PC" $STRANGER
handshake_failed "C: a client certificate of another CA"
echo_call "$PC" $KMS
check "$CODE" 200 "C: a good client certificate"
check "$(field clientSubject)" CN=cks.kms.us-east-1.amazonaws.com "C: the plugin sees the subject"
xks "$PC" $KMS
check "$CODE" 404 "C: aws-xks is not served here"

# ---- /metrics: per API, calls within the limit and their share ----
page=$HF_TMP/metrics.txt
curl -s -o "$page" "https://127.0.0.1:$PB/metrics" || hf_fail "/metrics over B"
check "$(metric 'holdfast_requests_within_limit_total{api="aws-xks"}')" 1 "aws-xks calls within 250 ms"
within_test=$(metric 'holdfast_requests_within_limit_total{api="test"}')
[ "$within_test" -ge 3 ] || hf_fail "test calls within 40 ms: $within_test, want 3 or more"
check "$(metric 'holdfast_request_latency_limit_seconds{api="aws-xks"}')" 0.25 "aws-xks's limit"
check "$(metric 'holdfast_request_latency_limit_seconds{api="test"}')" 0.04 "test's limit"
ratio=$(metric 'holdfast_requests_within_limit_ratio{api="aws-xks"}')
check "$ratio" 1 "aws-xks's share within its limit"
grep -q '^holdfast_requests_within_limit_ratio{api="test"} ' "$page" || hf_fail "no share for test"
grep -q '^holdfast_request_duration_seconds_bucket{api="test",operation="echo",le="0.04"} ' "$page" ||
    hf_fail "the test API's histogram has no edge at its 40 ms limit"
grep -q '^holdfast_request_duration_seconds_bucket{api="aws-xks",operation="metadata",le="0.25"} 1$' \
    "$page" || hf_fail "the aws-xks histogram has no edge at 250 ms holding its call"
check "$(metric 'holdfast_requests_total{api="aws-xks",operation="metadata",status="200"}')" 1 \
    "holdfast_requests_total beside the within-limit counter"

# ---- SIGHUP: plugin lists from the new config; listener changes refused ----
write_conf "test, aws-xks"
reloaded ok 1 "the reload with a new plugin list was not taken"
xks "$PC" $KMS
check "$CODE" 200 "C after the reload: aws-xks is served now"
write_conf "test, aws-xks" "$(hf_free_port)"
reloaded error 1 "a reload that moves a listener was not refused"
grep -q 'reload refused.*listener maybe differs from the running one: listeners, their addresses and TLS settings change only with a restart' \
    "$HF_TMP/holdfastd.log" || hf_fail "the refused reload does not name the listener"
echo_call "$PC"
check "$CODE" 200 "C still on its port after the refused reload"
write_conf test "" required
reloaded error 2 "a reload that changes a listener's client certificate rule was not refused"
echo_call "$PC"
check "$CODE" 200 "C still takes a call without a certificate after the refused reload"
xks "$PC" $KMS
check "$CODE" 200 "C keeps the plugins of the last good reload"

hf_gateway_stop || hf_fail "holdfastd did not stop cleanly"
echo "listeners: ok"
