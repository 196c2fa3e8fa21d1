#!/bin/sh
# hf-load against real servers on loopback: nginx's static reply (plain and TLS) and small Python
# servers that are slow, silent or stall mid-run. Checks what a user relies on: the table, CSV,
# markdown and plot outputs; think time pacing; a sweep stopping at the limit; one-line errors
# for bad arguments, refused connections, TLS failures and silent servers; a run that always ends.
. "${top_srcdir:-.}/tests/integration/lib.sh"
. "$top_srcdir/tests/load/nginx.sh"

HF_LOAD=${HF_LOAD:-$top_builddir/tests/load/hf-load}
[ -x "$HF_LOAD" ] || hf_fail "$HF_LOAD is not built"
command -v python3 >/dev/null || hf_skip "python3 is needed for the test servers"
if [ -z "$(hf_nginx_bin)" ] && [ "$(id -u)" = 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nginx-light \
        >/dev/null 2>&1 || true
fi
[ -n "$(hf_nginx_bin)" ] || hf_skip "nginx is needed (apt-get install nginx-light)"
command -v openssl >/dev/null || hf_skip "openssl is needed for the test certificate"

hf_tmpdir
port=$(hf_free_port)
tls_port=$(hf_free_port)
hf_nginx_start "$HF_TMP/nginx" "$port" "$tls_port" ||
    { cat "$HF_TMP/nginx/error.log" >&2; hf_fail "nginx did not start"; }
hf_on_exit hf_nginx_stop
short="--ramp-up 0.3s --steady 1s --ramp-down 0.3s --pause 0 --no-progress"

# A test server: slow (each reply after 20 ms), silent (accepts, never answers) or stall (answers
# 20 requests, then nothing). Sets PY_PORT. Not to be called in a subshell: the exit hook that
# stops the server must be registered in this shell.
py_server() {
    python3 - "$1" >"$HF_TMP/py-$1.port" 2>"$HF_TMP/py-$1.err" <<'PY' &
import socket, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
mode = sys.argv[1]
if mode == "silent":
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(64)  # the kernel completes handshakes; nobody ever reads
    print(s.getsockname()[1], flush=True)
    time.sleep(300)
    sys.exit(0)
count = 0
lock = threading.Lock()
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_GET(self):
        global count
        with lock:
            count += 1
            n = count
        if mode == "slow":
            time.sleep(0.02)
        elif mode == "stall" and n > 20:
            time.sleep(300)
        self.send_response(200)
        self.send_header("Content-Length", "3")
        self.end_headers()
        self.wfile.write(b"ok\n")
srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
srv.daemon_threads = True
print(srv.server_address[1], flush=True)
threading.Timer(300, srv.shutdown).start()
srv.serve_forever()
PY
    _pid=$!
    hf_on_exit "kill $_pid"
    _i=0
    while [ ! -s "$HF_TMP/py-$1.port" ] && [ $_i -lt 50 ]; do sleep 0.1; _i=$((_i + 1)); done
    [ -s "$HF_TMP/py-$1.port" ] || hf_fail "the $1 test server did not start"
    PY_PORT=$(cat "$HF_TMP/py-$1.port")
}

# -- arguments
hf_expect_exit 0 "$HF_LOAD" --help
grep -q 'xks-encrypt' "$HF_OUT" || hf_fail "--help does not list the APIs"
hf_expect_exit 2 "$HF_LOAD" --url "http://127.0.0.1:$port/" --api static --vus 0
grep -q "^hf-load: --vus: '0' is not a VU count" "$HF_ERR" || hf_fail "bad --vus: $(cat "$HF_ERR")"
hf_expect_exit 2 "$HF_LOAD" --url "http://127.0.0.1:$port/" --api xks-encrypt --vus 1
grep -q "needs --key-id" "$HF_ERR" || hf_fail "xks without a key id: $(cat "$HF_ERR")"

# -- a short sweep against nginx: every output
hf_expect_exit 0 "$HF_LOAD" --url "http://127.0.0.1:$port/" --api static --vus 2,4 $short \
    --csv "$HF_TMP/run.csv" --markdown "$HF_TMP/run.md" --label "nginx test"
[ "$(grep -c '^| *[0-9]' "$HF_OUT")" = 2 ] || hf_fail "expected 2 table rows: $(cat "$HF_OUT")"
head -n1 "$HF_TMP/run.csv" | grep -q '^api,deployment,client_location,server_location,nodes,cpus' ||
    hf_fail "the CSV does not start with the seeds' columns"
[ "$(wc -l <"$HF_TMP/run.csv")" = 3 ] || hf_fail "expected a CSV header and 2 rows"
awk -F, 'NR > 1 && !($11 > 0 && $12 > 0 && $22 == 0) {bad = 1} END {exit bad}' "$HF_TMP/run.csv" ||
    hf_fail "a level without operations or with errors: $(cat "$HF_TMP/run.csv")"
awk -F, 'NR > 1 && !($11 >= $16) {bad = 1} END {exit bad}' "$HF_TMP/run.csv" ||
    hf_fail "total ops must include the steady ops"
grep -q '| VUs | total ops |' "$HF_TMP/run.md" 2>/dev/null ||
    grep -q '|   VUs | total ops |' "$HF_TMP/run.md" || hf_fail "the markdown has no table"
if command -v gnuplot >/dev/null; then
    seeds="$top_srcdir/../shared/seeds"
    hf_expect_exit 0 "$HF_LOAD" --url "http://127.0.0.1:$port/" --api static --vus 1,2 $short \
        --plot "$HF_TMP/plot" --server-cores 2 --seeds "$seeds"
    grep -q '<svg' "$HF_TMP/plot.svg" || hf_fail "no SVG plot"
    [ "$(head -c 4 "$HF_TMP/plot.png" | tail -c 3)" = PNG ] || hf_fail "no PNG plot"
    grep -q 'per server CPU core' "$HF_TMP/plot.gp" || hf_fail "the plot is not labelled per core"
else
    echo "gnuplot missing: plot not checked"
fi

# -- think time paces each VU: 2 VUs pausing 100 ms make at most 20 ops/s
hf_expect_exit 0 "$HF_LOAD" --url "http://127.0.0.1:$port/" --api static --vus 2 $short \
    --think 100ms --csv "$HF_TMP/think.csv"
awk -F, 'NR == 2 {exit !($12 >= 10 && $12 <= 21)}' "$HF_TMP/think.csv" ||
    hf_fail "think time did not pace the VUs: $(cat "$HF_TMP/think.csv")"

# -- TLS: verified against the CA, refused without it, with the reason
hf_expect_exit 0 "$HF_LOAD" --url "https://127.0.0.1:$tls_port/" --api static --vus 2 $short \
    --cacert "$HF_TMP/nginx/cert.pem"
hf_expect_exit 1 "$HF_LOAD" --url "https://127.0.0.1:$tls_port/" --api static --vus 2 $short
grep -q 'certificate verify failed: self-signed certificate' "$HF_ERR" ||
    hf_fail "TLS failure not explained: $(cat "$HF_ERR")"
hf_expect_exit 1 "$HF_LOAD" --url "https://127.0.0.1:$port/" --api static --vus 1 $short --insecure
grep -q 'wrong version number (is it plain HTTP' "$HF_ERR" ||
    hf_fail "https to a plain port not explained: $(cat "$HF_ERR")"
hf_expect_exit 1 "$HF_LOAD" --url "http://127.0.0.1:$tls_port/" --api static --vus 1 $short
grep -q 'HTTP 400 from' "$HF_ERR" || hf_fail "http to a TLS port not explained: $(cat "$HF_ERR")"

# -- unreachable and silent targets fail fast, with the reason
dead=$(hf_free_port)
hf_expect_exit 1 "$HF_LOAD" --url "http://127.0.0.1:$dead/" --api static --vus 1 $short
grep -q "cannot connect to 127.0.0.1:$dead: Connection refused" "$HF_ERR" ||
    hf_fail "refused connection not explained: $(cat "$HF_ERR")"
py_server silent
silent=$PY_PORT
start=$(date +%s)
hf_expect_exit 1 timeout 30 "$HF_LOAD" --url "http://127.0.0.1:$silent/" --api static --vus 1 \
    $short --timeout 1s
grep -q 'no reply from 127.0.0.1:.* within 1.0 s' "$HF_ERR" ||
    hf_fail "silent server not explained: $(cat "$HF_ERR")"
[ $(($(date +%s) - start)) -le 10 ] || hf_fail "a silent server held hf-load too long"

# -- a server that stops answering mid-run: the run still ends by itself, errors counted
py_server stall
stall=$PY_PORT
start=$(date +%s)
hf_expect_exit 0 timeout 30 "$HF_LOAD" --url "http://127.0.0.1:$stall/" --api static --vus 2 \
    --ramp-up 0 --steady 2s --ramp-down 0 --timeout 1s --no-progress
elapsed=$(($(date +%s) - start))
[ "$elapsed" -le 8 ] || hf_fail "the run took ${elapsed}s: not bounded by steady + timeout"
grep -Eq 'errors at 2 VUs:.*(timeout|abandoned)' "$HF_ERR" ||
    hf_fail "the stalled requests were not counted: $(cat "$HF_ERR")"

# -- a sweep stops after the first level over the limit
py_server slow
slow=$PY_PORT
hf_expect_exit 0 "$HF_LOAD" --url "http://127.0.0.1:$slow/" --api static --sweep 1:8 \
    --ramp-up 0 --steady 0.5s --ramp-down 0 --pause 0 --limit 5 --no-progress
[ "$(grep -c '^| *[0-9]' "$HF_OUT")" = 1 ] || hf_fail "the sweep went on past the limit: $(cat "$HF_OUT")"
grep -q 'over the limit' "$HF_OUT" || hf_fail "the level over the limit is not marked"
grep -q 'No level stayed within 5 ms' "$HF_OUT" || hf_fail "no verdict: $(cat "$HF_OUT")"

# -- the XKS path end to end: perf-report's local holdfastd, one short level, the report
if [ -x "$top_builddir/gateway/holdfastd" ] && [ -f "$top_builddir/gateway/plugins/aws-xks/.libs/aws-xks.so" ] &&
    [ -f "$HF_MODULE" ] && [ -f "$SOFTHSM_MODULE" ]; then
    # aws-xks only: hf-load-bearer.sh drives the bearer-token APIs in the same holdfastd.
    hf_expect_exit 0 env -u HF_TMP HF_LOAD="$HF_LOAD" HF_REPORT_PLUGINS=aws-xks \
        HF_REPORT_SWEEP=2:4 HF_REPORT_RAMP_UP=0.3s \
        HF_REPORT_STEADY=1s HF_REPORT_RAMP_DOWN=0.3s HF_REPORT_PAUSE=0 \
        HF_LOAD_SEEDS="$top_srcdir/../shared/seeds" \
        sh "$top_srcdir/tests/load/perf-report.sh" "$HF_TMP/report"
    rep=$HF_TMP/report/REPORT.md
    [ "$(grep -c '^| *[0-9]' "$rep")" = 2 ] || hf_fail "the XKS report has no 2 levels: $(cat "$rep")"
    grep -q '^| xks-encrypt | 250 | [24] | ' "$rep" ||
        hf_fail "the summary has no XKS peak: $(cat "$rep")"
    awk -F, 'NR > 1 && !($11 > 0 && $22 == 0) {bad = 1} END {exit bad}' \
        "$HF_TMP/report/xks-encrypt.csv" || hf_fail "XKS encrypt failed: $(cat "$HF_OUT" "$HF_ERR")"
    if [ -d "$top_srcdir/../shared/seeds" ]; then
        grep -q 'CCKM 1x16 CPU, CM keys, on premises | 16 | 6112.68' "$rep" ||
            hf_fail "the report does not set the seeds beside it"
    fi
    if command -v gnuplot >/dev/null; then
        [ -s "$HF_TMP/report/xks-encrypt.png" ] && [ -s "$HF_TMP/report/xks-encrypt.svg" ] ||
            hf_fail "the report has no plots"
    fi
else
    echo "holdfastd or its aws-xks plugin not built: XKS report not checked"
fi

echo "hf-load: all checks passed"
