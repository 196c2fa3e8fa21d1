# Set-up shared by the scripts that drive hf-fault-shim (tests/shim/README.md): SoftHSMv2
# tokens, shim copies and their configs, and a network HSM made of `p11-kit server` and a copy of
# p11-kit-client.so. POSIX sh; sourced after lib.sh and hf_tmpdir:
#     . "${top_srcdir:-.}/tests/integration/shim-lib.sh"
#
#   shim_need            skip unless softhsm2-util, SoftHSMv2 and the built shim are there; SHIM
#   shim_tokens LABEL... SoftHSMv2 tokens (user PIN 1234, SO PIN 5678) in $HF_TMP/tokens;
#                        SOFTHSM2_CONF exported
#   shim_copy NAME       a copy of the shim at $HF_TMP/NAME.so (glibc loads a file once per inode,
#                        and each copy reads its own NAME.so.conf), path in SHIM_COPY
#   conf COPY LINE...    COPY's config: the real module SoftHSMv2 unless a line names another,
#                        dead_file COPY.dead, then LINE... (replaced atomically)
#   p11kit_need          skip unless p11-kit and p11-kit-client.so are there; CLIENT_SO
#   server_start NAME SOCK TOKEN   `p11-kit server -f` over SoftHSMv2's token TOKEN (URI-encoded)
#                        on unix socket SOCK, its pid in $HF_TMP/NAME.pid, output in NAME.out;
#                        fails unless the socket shows within 10 s
#   server_stop NAME     kills the listener and the p11-kit-remote it forked per connection
#                        (killing the listener alone leaves open connections served)
#   net_copy NAME SOCK   a shim copy ($HF_TMP/NAME.so, in SHIM_COPY) over its own copy of
#                        p11-kit-client.so that talks to SOCK

shim_need() {
    command -v softhsm2-util >/dev/null || hf_skip "softhsm2-util not installed"
    [ -f "$SOFTHSM_MODULE" ] || hf_skip "SoftHSMv2 module $SOFTHSM_MODULE not installed"
    SHIM="$top_builddir/tests/shim/.libs/hf-fault-shim.so"
    [ -f "$SHIM" ] || hf_skip "$SHIM not built (make check builds it)"
}

shim_tokens() {
    mkdir -p "$HF_TMP/tokens"
    printf 'directories.tokendir = %s/tokens\nobjectstore.backend = file\n' "$HF_TMP" \
        >"$HF_TMP/softhsm2.conf"
    SOFTHSM2_CONF="$HF_TMP/softhsm2.conf"
    export SOFTHSM2_CONF
    for _label in "$@"; do
        softhsm2-util --init-token --free --label "$_label" --pin 1234 --so-pin 5678 \
            >/dev/null || hf_fail "softhsm2-util --init-token $_label"
    done
}

shim_copy() {
    SHIM_COPY="$HF_TMP/$1.so"
    cp "$SHIM" "$SHIM_COPY" || hf_fail "copying the shim to $SHIM_COPY"
}

conf() {
    _c=$1
    shift
    { printf 'module = %s\ndead_file = %s.dead\n' "$SOFTHSM_MODULE" "$_c"; printf '%s\n' "$@"; } \
        >"$_c.conf.new" && mv "$_c.conf.new" "$_c.conf"
}

p11kit_need() {
    CLIENT_SO=/usr/lib/x86_64-linux-gnu/pkcs11/p11-kit-client.so
    command -v p11-kit >/dev/null && [ -f "$CLIENT_SO" ] || hf_skip "p11-kit or $CLIENT_SO missing"
}

server_start() {
    rm -f "$2"
    p11-kit server --provider "$SOFTHSM_MODULE" -f -n "$2" "pkcs11:token=$3" \
        >"$HF_TMP/$1.out" 2>&1 &
    echo $! >"$HF_TMP/$1.pid"
    _i=0
    until [ -S "$2" ]; do
        _i=$((_i + 1))
        [ "$_i" -lt 100 ] || hf_fail "p11-kit server $1 did not start: $(cat "$HF_TMP/$1.out")"
        sleep 0.1
    done
}

server_stop() {
    [ -s "$HF_TMP/$1.pid" ] || return 0
    _p=$(cat "$HF_TMP/$1.pid")
    kill $(pgrep -P "$_p") "$_p" 2>/dev/null
    : >"$HF_TMP/$1.pid"
    return 0
}

net_copy() {
    cp "$CLIENT_SO" "$HF_TMP/$1-client.so" || hf_fail "copying $CLIENT_SO"
    shim_copy "$1"
    printf 'module = %s\nenv = P11_KIT_SERVER_ADDRESS=unix:path=%s\n' "$HF_TMP/$1-client.so" "$2" \
        >"$SHIM_COPY.conf"
}
