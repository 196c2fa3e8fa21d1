# holdfastd's aws-xks plugin and XKS calls to it with curl's SigV4, for the scripts that drive it
# while HSMs fail under them (pool-xks-failover.sh, root-pool.sh). POSIX sh; sourced after lib.sh
# and hf_xks_need, with T a temp dir:
#   xks_gateway_start HEALTH [LINE...]   holdfastd (HF_GW_PID) serving one XKS key store on a
#                           free port P of 127.0.0.1, with LINEs added to its [gateway] section;
#                           HEALTH names the key its health check uses; the credential is
#                           AKID:SEC, exported in HF_LOAD_CREDENTIALS for hf-load
#   xks PATH BODY OUT       one XKS call; fails the test unless HTTP 200
#   encrypt_now KEY NAME    an XKS encrypt under KEY's newest version: the answer in $T/NAME.ct,
#                           the matching decrypt request in $T/NAME.dec
#   decrypt_check KEY NAME  that decrypt, checked against what encrypt_now sent
#   link_wait KEY           waits (3 s at most) until an encrypt through KEY's new link answers
#                           200: the gateway learns of a new link within a second
#   sleep_until T0 SECONDS  sleeps until SECONDS after T0 (hf_now_ms), or says how late it is
PY="python3 $top_srcdir/tests/integration/xks-body.py"
AKID=AKIAIOSFODNN7EXAMPLE
SEC=FYtE5EFA5FT0mCc3DrGUe2sti527BitkQ0Zr9MO9fvE
HF_LOAD_CREDENTIALS="$AKID:$SEC"
export HF_LOAD_CREDENTIALS

xks_gateway_start() {
    _health=$1
    shift
    P=$(hf_free_port)
    { hf_gateway_section aws-xks 32k "127.0.0.1:$P"
        printf '%s\n' "$@" 'max_connections_per_address = 0' '' '[plugin:aws-xks]' \
            "path = $XKS_PLUGIN" ''
        hf_xks_store "$_health" "$AKID:$SEC" '*'; } >"$T/holdfastd.conf"
    hf_gateway_start "http://127.0.0.1:$P" "$HOLDFASTD" -f -c "$T/holdfastd.conf"
}

xks() {
    _code=$(curl -sS -o "$3" -w '%{http_code}' --aws-sigv4 "aws:amz:us-east-1:kms-xks-proxy" \
        --user "$AKID:$SEC" -H 'Content-Type: application/json' --data-binary "@$2" \
        "http://127.0.0.1:$P$1" 2>"$T/curl.err") || _code="curl-exit-$?"
    [ "$_code" = 200 ] || { cat "$3" "$T/curl.err" 2>/dev/null; hf_fail "$1: HTTP $_code"; }
}

encrypt_now() {
    $PY encrypt --pt SGVsbG8gV29ybGQh >"$T/$2.enc" || hf_fail "xks-body encrypt"
    xks "/kms/xks/v1/keys/$1/encrypt" "$T/$2.enc" "$T/$2.ct"
    $PY decrypt "$T/$2.ct" >"$T/$2.dec" || hf_fail "xks-body decrypt"
}

decrypt_check() {
    xks "/kms/xks/v1/keys/$1/decrypt" "$T/$2.dec" "$T/$2.out"
    check "$($PY get "$T/$2.out" plaintext)" SGVsbG8gV29ybGQh "$2: XKS decrypt"
}

link_wait() {
    _i=0
    until $PY encrypt --pt SGVsbG8gV29ybGQh >"$T/$1.enc" &&
        curl -s -o /dev/null -w '%{http_code}' --aws-sigv4 "aws:amz:us-east-1:kms-xks-proxy" \
            --user "$AKID:$SEC" -H 'Content-Type: application/json' --data-binary "@$T/$1.enc" \
            "http://127.0.0.1:$P/kms/xks/v1/keys/$1/encrypt" | grep -q 200; do
        _i=$((_i + 1))
        [ "$_i" -lt 30 ] || hf_fail "$1 was not served within 3 s of its link"
        sleep 0.1
    done
}

sleep_until() {
    _wait_ms=$(($2 * 1000 - ($(hf_now_ms) - $1)))
    if [ "$_wait_ms" -gt 0 ]; then
        sleep "$(awk -v ms="$_wait_ms" 'BEGIN { printf "%.1f", ms / 1000 }')"
    else
        echo "note: the steps before $2 s ran $((-_wait_ms)) ms past it"
    fi
}
