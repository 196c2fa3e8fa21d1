# XKS calls to holdfastd's aws-xks plugin with curl's SigV4, for the scripts that drive it while
# HSMs fail under them (pool-xks-failover.sh, root-pool.sh). POSIX sh; sourced after lib.sh, with
# T (a temp dir), P (holdfastd's port on 127.0.0.1), AKID and SEC (the credential) set:
#   xks PATH BODY OUT       one XKS call; fails the test unless HTTP 200
#   encrypt_now KEY NAME    an XKS encrypt under KEY's newest version: the answer in $T/NAME.ct,
#                           the matching decrypt request in $T/NAME.dec
#   decrypt_check KEY NAME  that decrypt, checked against what encrypt_now sent
#   link_wait KEY           waits (3 s at most) until an encrypt through KEY's new link answers
#                           200: the gateway learns of a new link within a second
#   sleep_until T0 SECONDS  sleeps until SECONDS after T0 (hf_now_ms), or says how late it is
PY="python3 $top_srcdir/tests/integration/xks-body.py"

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
