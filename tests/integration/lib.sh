# Shared helpers for tests/integration/*.sh. POSIX sh; each script starts with
#     . "${top_srcdir:-.}/tests/integration/lib.sh"
#
# From `make check` (AM_TESTS_ENVIRONMENT in Makefile.am): top_srcdir, top_builddir, HF_CLI (the
# holdfast binary), HF_MODULE (holdfast-pkcs11.so), SOFTHSM_MODULE. Run by hand from the build
# directory, the same defaults apply. Exit codes follow automake: 0 pass, 1 fail, 77 skip.
#
#   hf_tmpdir            HF_TMP: a fresh temp dir, removed on exit (kept if HF_KEEP_TMP=1)
#   hf_on_exit CMD       run CMD on exit (latest first)
#   hf_skip REASON       print the reason, exit 77
#   hf_fail MESSAGE      print the message, exit 1
#   check GOT WANT WHAT  fail with both values unless GOT is WANT
#   hf_expect_exit CODE CMD...   run CMD; fail unless it exits CODE. Its output stays in
#                        $HF_OUT and $HF_ERR (files) for further checks.
#   hf_free_port         print a TCP port free on 127.0.0.1
#   hf_store_setup       an initialised key store of its own: HF_TMP, HOLDFAST_CONF and
#                        HOLDFAST_STATE_DIR exported, HF_USER_PIN and HF_SO_PIN set; on the
#                        store HF_STORE_LOCATOR names when set (pg-lib.sh's HF_PG_URI)
#   HF_SANITIZED         non-empty when the build uses ASan/UBSan/TSan
#   hf_ext CMD...        run a program that is not ours but loads our module (sanitizer-aware)
#   hf_preauth_count LOG API REASON [SOURCE]   requests counted (and records) in the summary
#                        records of refusals before authentication in audit log LOG
#   hf_now_ms            milliseconds since the epoch
#   hf_gateway_section PLUGINS MAX_BODY LISTEN...   print a holdfastd.conf's [gateway] section:
#                        a `listen =` line per LISTEN ("127.0.0.1:PORT [tls]"), the module and
#                        the gateway PIN of hf_store_setup's store, plugins, max_body, and the
#                        log in $HF_TMP/holdfastd.log
#   hf_gateway_start URL CMD...  run CMD (holdfastd -f, or a wrapper that execs it) in the
#                        background, its output in $HF_TMP/holdfastd.out, HF_GW_PID its pid
#                        (stopped on exit); fails unless URL/healthz answers 200 within 30 s
#   hf_gateway_stop      SIGINT to it and wait: its exit status (0 when none runs); SIGINT
#                        stops at once, where SIGTERM would drain for [gateway] drain_ms
#   hf_xks_need          HOLDFASTD and XKS_PLUGIN set; skips unless both are built and curl
#                        (with --aws-sigv4), python3 and openssl are there
#   hf_load_need         HF_LOAD: the built hf-load; skips unless it is there
#   hf_xks_store HEALTH_KEY CREDENTIAL KEYS   print the [aws-xks] and [aws-xks:main] sections
#                        of a holdfastd.conf: one key store at the root prefix, in us-east-1
#   hf_pki_ca NAME       a self-signed P-256 CA "/CN=Holdfast test NAME", valid a day, in
#                        $HF_PKI/NAME.key and NAME.pem (HF_PKI: $HF_TMP/pki unless set)
#   hf_pki_cert NAME CN CA EXT   a P-256 key and a certificate for /CN=CN signed by CA, with
#                        the x509v3 extension lines EXT, in $HF_PKI/NAME.key and NAME.pem
#   hf_jwks_serve DIR CERT KEY PATH=SET...   jwt-token.py's HTTPS key-set server over DIR
#                        (see its usage) on a free port, HF_JWKS_PORT, stopped on exit; fails
#                        unless it answers within 10 s (its probe, a GET /, is in DIR/fetches)

# What the tests write holds secrets (PINs, credentials, TLS keys): private, as holdfastd and
# the core want such files (common/secret-file.h refuses world-readable ones).
umask 077

top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
HF_CLI=${HF_CLI:-$top_builddir/pkcs11/tool/holdfast}
HF_MODULE=${HF_MODULE:-$top_builddir/pkcs11/module/.libs/holdfast-pkcs11.so}
SOFTHSM_MODULE=${SOFTHSM_MODULE:-/usr/lib/softhsm/libsofthsm2.so}
export top_srcdir top_builddir HF_CLI HF_MODULE SOFTHSM_MODULE

# Sanitizer builds are slow and incompatible with valgrind: scripts may scale down or skip.
HF_SANITIZED=${HF_SANITIZED:-$(sed -n 's/^HF_CFLAGS = .*-fsanitize=.*/yes/p' \
    "$top_builddir/Makefile" 2>/dev/null)}
export HF_SANITIZED

# hf_ext CMD...: runs a program that is not ours (pkcs11-tool, p11-kit, modutil) but loads our
# module. In an ASan build the sanitizer runtime must be loaded first, and that program's own
# leaks are not ours to report.
# Bounded in time: a test never hangs on a program it does not own.
hf_ext() {
    if [ -n "$HF_SANITIZED" ] && [ -n "${HF_ASAN_RUNTIME:=$(hf_asan_runtime)}" ]; then
        LD_PRELOAD="$HF_ASAN_RUNTIME" ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}" \
            timeout -k 5 "${HF_EXT_TIMEOUT:-120}" "$@"
    else
        timeout -k 5 "${HF_EXT_TIMEOUT:-120}" "$@"
    fi
}
hf_asan_runtime() {
    grep -q -- '-fsanitize=[a-z,]*address' "$top_builddir/Makefile" 2>/dev/null || return 0
    ${CC:-cc} -print-file-name=libasan.so 2>/dev/null
}

_hf_exit_cmds=""
_hf_cleanup() {
    # Latest registration first, like a stack of destructors; a failing command does not stop
    # the others.
    eval "$_hf_exit_cmds"
}
trap '_hf_cleanup' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

hf_on_exit() {
    _hf_exit_cmds="$1 || true; $_hf_exit_cmds"
}

# Debian's python3, the one deps.sh gives python3-cryptography and python3-pykcs11 and the one a
# fresh Debian machine has: a python3 ahead of it on PATH (pyenv's shim) costs 0.1 s more a call,
# and these scripts make hundreds of calls. A link ahead on PATH, so that programs we start
# (timeout, env) find it as well.
if [ -x /usr/bin/python3 ] && [ "$(command -v python3)" != /usr/bin/python3 ]; then
    _hf_pybin=$(mktemp -d "${TMPDIR:-/tmp}/hf-py.XXXXXX") &&
        ln -s /usr/bin/python3 "$_hf_pybin/python3" && PATH="$_hf_pybin:$PATH" && export PATH &&
        hf_on_exit "rm -rf '$_hf_pybin'"
fi

hf_skip() {
    echo "SKIP: $*"
    exit 77
}

hf_fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# check GOT WANT WHAT: fails the test with both values when they differ.
check() { [ "$1" = "$2" ] || hf_fail "$3: got '$1', want '$2'"; }

hf_tmpdir() {
    [ -n "$HF_TMP" ] && [ -d "$HF_TMP" ] && return 0
    HF_TMP=$(mktemp -d "${TMPDIR:-/tmp}/hf-test.XXXXXX") || hf_fail "mktemp -d failed"
    export HF_TMP
    if [ "${HF_KEEP_TMP:-0}" = 1 ]; then
        echo "temp dir kept: $HF_TMP"
    else
        hf_on_exit "rm -rf '$HF_TMP'"
    fi
}

hf_expect_exit() {
    _hf_want=$1
    shift
    hf_tmpdir
    HF_OUT="$HF_TMP/last.out"
    HF_ERR="$HF_TMP/last.err"
    "$@" >"$HF_OUT" 2>"$HF_ERR"
    _hf_got=$?
    if [ "$_hf_got" -ne "$_hf_want" ]; then
        echo "--- stdout:" >&2; cat "$HF_OUT" >&2
        echo "--- stderr:" >&2; cat "$HF_ERR" >&2
        hf_fail "expected exit $_hf_want, got $_hf_got: $*"
    fi
    return 0
}

hf_free_port() {
    # The kernel picks an unused port; it stays free unless someone races us for it.
    if command -v python3 >/dev/null; then
        python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
        return
    fi
    # Otherwise probe: a port nobody answers on (bash's /dev/tcp) is taken as free.
    _hf_port=$(( 20000 + $$ % 20000 ))
    while [ "$_hf_port" -lt 65000 ]; do
        if ! bash -c "exec 3<>/dev/tcp/127.0.0.1/$_hf_port" 2>/dev/null; then
            echo "$_hf_port"
            return
        fi
        _hf_port=$((_hf_port + 1))
    done
    hf_fail "no free port on 127.0.0.1"
}

# Tokens for HSM pool members, in the key store's own SoftHSMv2 (hf_store_setup first): one per
# NAME, labelled PREFIX-NAME, user PIN $POOL_PIN, which HF_POOL_PIN (exported) carries to
# `holdfast pool add --member ...,pin_env=HF_POOL_PIN`. DB: the store's SQLite file.
hf_pool_tokens() { # PREFIX NAME...
    _hf_prefix=$1
    shift
    DB="$HOLDFAST_STATE_DIR/holdfast.db"
    [ -f "$DB" ] || DB=$(ls "$HOLDFAST_STATE_DIR"/*.db | head -n 1)
    SOFTHSM2_CONF="$HOLDFAST_STATE_DIR/softhsm2.conf"
    POOL_PIN=pool-pin-4711
    HF_POOL_PIN=$POOL_PIN
    export SOFTHSM2_CONF HF_POOL_PIN
    for _hf_t; do hf_pool_token_init "$_hf_prefix-$_hf_t"; done
}

hf_pool_token_init() { # LABEL: a new token (a member's fresh one, for a restore)
    softhsm2-util --init-token --free --label "$1" --pin "$POOL_PIN" --so-pin so-pin-9999 \
        >/dev/null || hf_fail "softhsm2-util --init-token $1"
}

hf_store_setup() {
    [ -x "$HF_CLI" ] || hf_skip "$HF_CLI not built"
    [ -f "$SOFTHSM_MODULE" ] || hf_skip "SoftHSMv2 module $SOFTHSM_MODULE not installed"
    hf_tmpdir
    HOLDFAST_STATE_DIR="$HF_TMP/state"
    # A config file of our own, so neither the CLI nor the module reads a system one.
    HOLDFAST_CONF="$HF_TMP/holdfast.conf"
    printf '[holdfast]\nstate_dir = %s\n' "$HOLDFAST_STATE_DIR" >"$HOLDFAST_CONF"
    [ -z "$HF_STORE_LOCATOR" ] || printf '[store]\npath = %s\n' "$HF_STORE_LOCATOR" >>"$HOLDFAST_CONF"
    export HOLDFAST_STATE_DIR HOLDFAST_CONF
    "$HF_CLI" init >"$HF_TMP/init.out" 2>&1 || { cat "$HF_TMP/init.out"; hf_fail "holdfast init failed"; }
    HF_USER_PIN=$(cat "$HOLDFAST_STATE_DIR/token-user.pin") || hf_fail "init wrote no user PIN file"
    HF_SO_PIN=$(cat "$HOLDFAST_STATE_DIR/token-so.pin") || hf_fail "init wrote no SO PIN file"
    export HF_USER_PIN HF_SO_PIN
}

# hf_preauth_count LOG API REASON [SOURCE]: how many requests the summary records of audit log
# LOG count as refused before authentication for API with error name REASON (from SOURCE, or
# any), and how many such records there are: "COUNT RECORDS".
hf_preauth_count() {
    python3 - "$@" <<'PY'
import os, re, sys
sys.path.insert(0, os.environ["top_srcdir"] + "/tests/integration")
import auditlog
log, api, reason = sys.argv[1:4]
source = sys.argv[4] if len(sys.argv) > 4 else None
count = records = 0
for rec in auditlog.records(log):
    if rec.get("op") != "preauth.summary" or rec.get("api") != api:
        continue
    if source is not None and rec.get("caller") != source:
        continue
    m = re.match(r"(.*?): (\d+) requests refused before authentication", rec.get("detail", ""))
    if m and m.group(1) == reason:
        count += int(m.group(2))
        records += 1
print(count, records)
PY
}

hf_now_ms() { date +%s%3N; }

hf_gateway_section() {
    _plugins=$1 _max_body=$2
    shift 2
    echo "[gateway]"
    for _l in "$@"; do echo "listen = $_l"; done
    cat <<EOF
module = $HF_MODULE
pin_file = $HOLDFAST_STATE_DIR/token-gateway.pin
plugins = $_plugins
max_body = $_max_body
log = $HF_TMP/holdfastd.log
EOF
}

HF_GW_PID=
hf_gateway_start() {
    _hf_url=$1
    shift
    hf_tmpdir
    "$@" >"$HF_TMP/holdfastd.out" 2>&1 &
    HF_GW_PID=$!
    [ -n "$_hf_gw_on_exit" ] || { hf_on_exit hf_gateway_stop; _hf_gw_on_exit=1; }
    _hf_deadline=$(( $(hf_now_ms) + 30000 ))
    until [ "$(curl -s -o /dev/null -w '%{http_code}' "$_hf_url/healthz")" = 200 ]; do
        if ! kill -0 "$HF_GW_PID" 2>/dev/null; then
            # Its own log too, where a config says "log = $HF_TMP/holdfastd.log".
            cat "$HF_TMP/holdfastd.out"
            [ ! -f "$HF_TMP/holdfastd.log" ] || cat "$HF_TMP/holdfastd.log"
            hf_fail "holdfastd died"
        fi
        [ "$(hf_now_ms)" -lt "$_hf_deadline" ] || hf_fail "holdfastd did not answer /healthz in 30 s"
        sleep 0.1
    done
}

hf_gateway_stop() {
    [ -n "$HF_GW_PID" ] || return 0
    kill -INT "$HF_GW_PID" 2>/dev/null
    _hf_rc=0
    wait "$HF_GW_PID" 2>/dev/null || _hf_rc=$?
    HF_GW_PID=
    return "$_hf_rc"
}

_hf_pki() {
    hf_tmpdir
    HF_PKI=${HF_PKI:-$HF_TMP/pki}
    mkdir -p "$HF_PKI"
    openssl "$@" >>"$HF_PKI/openssl.log" 2>&1 ||
        hf_fail "openssl $1 failed: $(tail -n 3 "$HF_PKI/openssl.log")"
}
hf_pki_ca() {
    _hf_pki req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -keyout "$HF_PKI/$1.key" -out "$HF_PKI/$1.pem" -subj "/CN=Holdfast test $1" -days 1
}
hf_pki_cert() {
    _hf_pki req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$HF_PKI/$1.key" \
        -out "$HF_PKI/$1.csr" -subj "/CN=$2"
    printf '%s\n' "$4" >"$HF_PKI/$1.ext"
    _hf_pki x509 -req -in "$HF_PKI/$1.csr" -CA "$HF_PKI/$3.pem" -CAkey "$HF_PKI/$3.key" \
        -CAcreateserial -days 1 -out "$HF_PKI/$1.pem" -extfile "$HF_PKI/$1.ext"
}

hf_jwks_serve() {
    _hf_jd=$1 _hf_jc=$2 _hf_jk=$3
    shift 3
    hf_tmpdir
    HF_JWKS_PORT=$(hf_free_port)
    python3 "$top_srcdir/tests/integration/jwt-token.py" serve "$_hf_jd" "$HF_JWKS_PORT" \
        "$_hf_jc" "$_hf_jk" "$@" 2>"$HF_TMP/jwks.err" &
    hf_on_exit "kill $!"
    _hf_i=0
    # Any HTTP answer says it listens: the probe does not judge its certificate, the tests do.
    until curl -sk -o /dev/null "https://127.0.0.1:$HF_JWKS_PORT/"; do
        _hf_i=$((_hf_i + 1))
        [ "$_hf_i" -lt 100 ] || hf_fail "the JWKS server did not start: $(cat "$HF_TMP/jwks.err")"
        sleep 0.1
    done
}

hf_xks_need() {
    HOLDFASTD="$top_builddir/gateway/holdfastd"
    XKS_PLUGIN="$top_builddir/gateway/plugins/aws-xks/.libs/aws-xks.so"
    [ -x "$HOLDFASTD" ] || hf_skip "$HOLDFASTD not built"
    [ -f "$XKS_PLUGIN" ] || hf_skip "$XKS_PLUGIN not built"
    for _hf_p in curl python3 openssl; do
        command -v "$_hf_p" >/dev/null || hf_skip "$_hf_p not installed"
    done
    curl --help all 2>/dev/null | grep -q -- '--aws-sigv4' ||
        hf_skip "curl lacks --aws-sigv4 (7.75+)"
}

hf_load_need() {
    HF_LOAD="$top_builddir/tests/load/hf-load"
    [ -x "$HF_LOAD" ] || hf_skip "$HF_LOAD not built"
}
hf_xks_store() {
    printf '[aws-xks]\nhealth_key = %s\n\n[aws-xks:main]\nprefix =\ncredential = %s\n' "$1" "$2"
    printf 'regions = us-east-1\nkeys = %s\n' "$3"
}
