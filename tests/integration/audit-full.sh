#!/bin/sh
# Unauthenticated traffic cannot stop key operations: holdfastd with aws-xks over a key store
# whose audit log lives on a 4 MiB tmpfs of the test's own ([audit] reserve = 1m, alarm = 2m).
#
#  1. An unauthenticated flood (bad SigV4, unknown paths; bounded in time and count, and stopped
#     early if the file system fills) is counted into summary records: it fills nothing. Before
#     this change each refusal cost a record, the flood filled the disk, and every key operation
#     stopped until a restart.
#  2. Another tenant fills the disk to under the reserve while the flood goes on: authenticated
#     XKS encrypts are all answered, from the reserve (answered and p99 reported); the flood's
#     summaries are refused and kept; /healthz says degraded, /metrics the reserve state.
#  3. The disk full to the last block: key operations fail (nothing runs unrecorded), /healthz
#     503.
#  4. Space freed: encrypts succeed again and the kept summaries are written, without a restart
#     (times to recover reported); the audit chain verifies.
# Needs root (mount -t tmpfs). AUDIT_FULL_BASE=1 leaves out the config keys a build before this
# change does not know, to show it failing there.
. "${top_srcdir:-.}/tests/integration/lib.sh"

HOLDFASTD="$top_builddir/gateway/holdfastd"
XKS_PLUGIN="$top_builddir/gateway/plugins/aws-xks/.libs/aws-xks.so"
[ -x "$HOLDFASTD" ] || hf_skip "$HOLDFASTD not built"
[ -f "$XKS_PLUGIN" ] || hf_skip "$XKS_PLUGIN not built"
[ "$(id -u)" = 0 ] || hf_skip "not root: mount -t tmpfs needs it"
for p in curl python3 mount umount; do
    command -v "$p" >/dev/null || hf_skip "$p not installed"
done
curl --help all 2>/dev/null | grep -q -- '--aws-sigv4' || hf_skip "curl lacks --aws-sigv4 (7.75+)"
hf_store_setup

FS="$HF_TMP/fs"
mkdir "$FS" || hf_fail "mkdir $FS"
mount -t tmpfs -o size=4m,mode=0700 tmpfs "$FS" 2>"$HF_TMP/mount.err" ||
    hf_skip "mount -t tmpfs: $(cat "$HF_TMP/mount.err")"
hf_on_exit "umount -l '$FS'"
AUDIT="$FS/audit.log"
if [ "${AUDIT_FULL_BASE:-0}" = 1 ]; then
    printf '[audit]\npath = %s\n' "$AUDIT" >>"$HOLDFAST_CONF"
    GW_AUDIT=
else
    printf '[audit]\npath = %s\nreserve = 1m\nalarm = 2m\n' "$AUDIT" >>"$HOLDFAST_CONF"
    GW_AUDIT="[audit]
preauth_interval_ms = 1000"
fi
"$HF_CLI" key create k1 >>"$HF_TMP/cli.log" 2>&1 || hf_fail "key create: $(tail -n 3 "$HF_TMP/cli.log")"
"$HF_CLI" link add aws-xks k1 k1 >>"$HF_TMP/cli.log" 2>&1 || hf_fail "link add"
"$HF_CLI" key create hk >>"$HF_TMP/cli.log" 2>&1 || hf_fail "key create hk"
"$HF_CLI" link add aws-xks health hk >>"$HF_TMP/cli.log" 2>&1 || hf_fail "link add health"

AKID=AKIAIOSFODNN7EXAMPLE
SEC=FYtE5EFA5FT0mCc3DrGUe2sti527BitkQ0Zr9MO9fvE
PORT=$(hf_free_port)
BASE="http://127.0.0.1:$PORT"
cat >"$HF_TMP/holdfastd.conf" <<EOF
[gateway]
listen = 127.0.0.1:$PORT
module = $HF_MODULE
pin_file = $HOLDFAST_STATE_DIR/token-gateway.pin
plugins = aws-xks
log = $HF_TMP/holdfastd.log
$GW_AUDIT

[plugin:aws-xks]
path = $XKS_PLUGIN

$(hf_xks_store health "$AKID:$SEC" k1)
EOF

hf_gateway_start "$BASE" "$HOLDFASTD" -f -c "$HF_TMP/holdfastd.conf"
FLOOD_PID=
hf_on_exit '[ -z "$FLOOD_PID" ] || kill "$FLOOD_PID" 2>/dev/null'

# ---- helpers ----
PYDIR="$HF_TMP/py"
mkdir "$PYDIR"
# flood.py BASE SECONDS MAX STOP_FREE FS: unauthenticated requests on two keep-alive connections
# until SECONDS, MAX requests, or (STOP_FREE > 0) FS has less than STOP_FREE bytes free. Prints
# "sent N" and the count of each status.
cat >"$PYDIR/flood.py" <<'PY'
import collections, http.client, os, sys, threading, time
base, seconds, limit = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
stop_free, fs = int(sys.argv[4]), sys.argv[5]
host, port = base.split("//")[1].split(":")
end = time.monotonic() + seconds
lock = threading.Lock()
seen = collections.Counter()
state = {"sent": 0, "stop": False}
bad_sig = ("AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20260101/us-east-1/kms-xks-proxy/"
           "aws4_request, SignedHeaders=host;x-amz-date, Signature=" + "0" * 64)
reqs = [("POST", "/kms/xks/v1/keys/k1/encrypt",
         {"Authorization": bad_sig, "X-Amz-Date": "20260101T000000Z",
          "Content-Type": "application/json"}, b'{"plaintext":"AA=="}'),
        ("POST", "/kms/xks/v1/no/such/route", {"Content-Type": "application/json"}, b"{}"),
        ("GET", "/no/such/path", {}, None)]


def run(k):
    conn, i = None, k
    while not state["stop"]:
        with lock:
            if state["sent"] >= limit or time.monotonic() >= end:
                state["stop"] = True
                break
            state["sent"] += 1
            n = state["sent"]
        if stop_free and n % 50 == 0:
            st = os.statvfs(fs)
            if st.f_bavail * st.f_frsize < stop_free:
                state["stop"] = True
        m, path, h, body = reqs[i % len(reqs)]
        i += 1
        try:
            if conn is None:
                conn = http.client.HTTPConnection(host, int(port), timeout=10)
            conn.request(m, path, body=body, headers=h)
            r = conn.getresponse()
            r.read()
            code = r.status
            if (r.getheader("Connection") or "").lower() == "close":
                conn.close()
                conn = None
        except Exception as e:
            code = type(e).__name__
            if conn:
                conn.close()
            conn = None
        with lock:
            seen[code] += 1


threads = [threading.Thread(target=run, args=(k,)) for k in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("sent", sum(seen.values()), " ".join("%s:%d" % kv for kv in sorted(seen.items(), key=str)))
PY
# fill.py FS LEAVE: another tenant's file takes space until at most LEAVE bytes are free.
cat >"$PYDIR/fill.py" <<'PY'
import os, sys
fs, leave = sys.argv[1], int(sys.argv[2])
fd = os.open(os.path.join(fs, "filler"), os.O_RDWR | os.O_CREAT, 0o600)
st = os.statvfs(fs)
more = st.f_bavail * st.f_frsize - leave
while more >= 4096:
    try:
        os.posix_fallocate(fd, os.fstat(fd).st_size, more)
    except OSError:
        more //= 2
        continue
    st = os.statvfs(fs)
    more = st.f_bavail * st.f_frsize - leave
os.close(fd)
PY
# stats.py FILE: "answered N of M, p50, p99, max" of curl's "code time_total" lines.
cat >"$PYDIR/stats.py" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
ok = sorted(float(t) * 1000 for c, t in rows if c == "200")
def pct(p):
    return ok[min(len(ok) - 1, int(p * len(ok)))] if ok else float("nan")
print("answered %d of %d, p50 %.1f ms, p99 %.1f ms, max %.1f ms"
      % (len(ok), len(rows), pct(0.50), pct(0.99), ok[-1] if ok else float("nan")))
PY
free_kib() { python3 -c 'import os,sys; s=os.statvfs(sys.argv[1]); print(s.f_bavail*s.f_frsize//1024)' "$FS"; }
python3 "$top_srcdir/tests/integration/xks-body.py" encrypt --pt SGVsbG8gV29ybGQh >"$HF_TMP/enc.json" ||
    hf_fail "xks-body.py encrypt"
# encrypt: one authenticated XKS encrypt; prints "code seconds".
encrypt() {
    curl -sS -o /dev/null -w '%{http_code} %{time_total}\n' --max-time 10 \
        --aws-sigv4 "aws:amz:us-east-1:kms-xks-proxy" --user "$AKID:$SEC" \
        -H 'Content-Type: application/json' --data-binary "@$HF_TMP/enc.json" \
        "$BASE/kms/xks/v1/keys/k1/encrypt" 2>/dev/null || echo "curl-error 0"
}
# encrypts SECONDS MAX FILE: authenticated encrypts, one after another, bounded in time and count.
encrypts() {
    : >"$3"
    _end=$(( $(hf_now_ms) + $1 * 1000 ))
    _n=0
    while [ "$_n" -lt "$2" ] && [ "$(hf_now_ms)" -lt "$_end" ]; do
        encrypt >>"$3"
        _n=$((_n + 1))
    done
}
healthz() { curl -s -w ' %{http_code}' "$BASE/healthz"; }
metric() { curl -s "$BASE/metrics" | awk -v s="$1" '$1 == s { v = $2 } END { print v + 0 }'; }
summaries() { # requests counted in the written summary records, every reason the flood causes
    _t=0
    for r in "aws-xks AuthenticationFailedException" "aws-xks InvalidUriPathException" \
        "gateway NotFound"; do
        _c=$(hf_preauth_count "$AUDIT" $r)
        _t=$((_t + ${_c% *}))
    done
    echo "$_t"
}

# ---- 1. the flood alone: it fills nothing ----
encrypts 5 5 "$HF_TMP/before.txt"
echo "before the flood: $(python3 "$PYDIR/stats.py" "$HF_TMP/before.txt"), $(free_kib) KiB free"
grep -qv '^200 ' "$HF_TMP/before.txt" && hf_fail "encrypts before the flood: $(cut -d' ' -f1 "$HF_TMP/before.txt" | sort | uniq -c)"
flood1=$(python3 "$PYDIR/flood.py" "$BASE" 15 30000 65536 "$FS")
echo "flood: $flood1; $(free_kib) KiB free after it"

# ---- 2. the disk filled to under the reserve by another tenant, the flood going on ----
python3 "$PYDIR/fill.py" "$FS" $((512 * 1024))
echo "another tenant fills the disk: $(free_kib) KiB free (reserve 1024 KiB)"
python3 "$PYDIR/flood.py" "$BASE" 12 1000000 0 "$FS" >"$HF_TMP/flood2.txt" &
FLOOD_PID=$!
encrypts 10 400 "$HF_TMP/attack.txt"
wait "$FLOOD_PID"
FLOOD_PID=
attack=$(python3 "$PYDIR/stats.py" "$HF_TMP/attack.txt")
echo "authenticated encrypts during the attack: $attack"
echo "  (flood meanwhile: $(cat "$HF_TMP/flood2.txt")); $(free_kib) KiB free"
n_ok=$(grep -c '^200 ' "$HF_TMP/attack.txt")
n_all=$(wc -l <"$HF_TMP/attack.txt")
[ "$n_ok" -gt 0 ] && [ "$n_ok" = "$n_all" ] ||
    hf_fail "authenticated encrypts during the attack: $attack ($(cut -d' ' -f1 "$HF_TMP/attack.txt" | sort | uniq -c))"
sleep 1.2 # a summary interval: the flood's summaries are tried, and refused under the reserve
h=$(healthz)
echo "/healthz under the reserve: $h"
case "$h" in *'"status":"degraded","audit":"reserve"'*' 200') ;; *) hf_fail "/healthz under the reserve: $h" ;; esac
check_metric() { [ "$(metric "$1")" "$2" "$3" ] || hf_fail "$1 is $(metric "$1"), want $2 $3"; }
check_metric holdfast_audit_space_state -eq 2
check_metric 'holdfast_preauth_summaries_total{result="refused"}' -ge 1

# ---- 3. full to the last block: key operations stop, nothing runs unrecorded ----
python3 "$PYDIR/fill.py" "$FS" 0
encrypts 20 400 "$HF_TMP/full.txt"
full_ok=$(grep -c '^200 ' "$HF_TMP/full.txt")
full_n=$(wc -l <"$HF_TMP/full.txt")
[ "$full_ok" -lt "$full_n" ] || hf_fail "the disk is full and all $full_n encrypts still succeeded"
if grep -v '^200 ' "$HF_TMP/full.txt" | grep -qv '^500 '; then
    hf_fail "encrypts with a full disk: $(cut -d' ' -f1 "$HF_TMP/full.txt" | sort | uniq -c)"
fi
h=$(healthz)
echo "disk full: $full_ok of $full_n encrypts succeeded (space claimed before), the rest 500; /healthz $h"
case "$h" in *' 503') ;; *) hf_fail "/healthz with a full disk: $h" ;; esac

# ---- 4. space freed: service recovers by itself ----
counted=$(summaries)
rm -f "$FS/filler"
t0=$(hf_now_ms)
t_auth=
t_sum=
t_ok=
while [ $(( $(hf_now_ms) - t0 )) -lt 15000 ]; do
    [ -n "$t_auth" ] || { encrypt | grep -q '^200 ' && t_auth=$(( $(hf_now_ms) - t0 )); }
    [ -n "$t_sum" ] || { [ "$(summaries)" -gt "$counted" ] && t_sum=$(( $(hf_now_ms) - t0 )); }
    [ -n "$t_ok" ] || case "$(healthz)" in *'"status":"ok"'*' 200') t_ok=$(( $(hf_now_ms) - t0 )) ;; esac
    [ -n "$t_auth" ] && [ -n "$t_sum" ] && [ -n "$t_ok" ] && break
    sleep 0.05
done
echo "recovery after the space was freed: encrypts ${t_auth:-never} ms, kept summaries written" \
    "${t_sum:-never} ms, /healthz ok ${t_ok:-never} ms"
[ -n "$t_auth" ] || hf_fail "encrypts did not recover within 15 s of the space returning"
[ -n "$t_sum" ] || hf_fail "summary records were not written within 15 s of the space returning"
[ -n "$t_ok" ] || hf_fail "/healthz did not say ok within 15 s of the space returning"
encrypts 3 20 "$HF_TMP/after.txt"
echo "after recovery: $(python3 "$PYDIR/stats.py" "$HF_TMP/after.txt")"
if grep -qv '^200 ' "$HF_TMP/after.txt"; then
    hf_fail "encrypts after recovery: $(sort "$HF_TMP/after.txt" | cut -d' ' -f1 | uniq -c)"
fi

hf_gateway_stop
hf_expect_exit 0 "$HF_CLI" audit verify
echo "audit verify: $(tail -n 1 "$HF_OUT")"
if grep -E 'ERROR: AddressSanitizer|runtime error:|ERROR: LeakSanitizer' "$HF_TMP/holdfastd.out"; then
    hf_fail "holdfastd: a sanitizer report"
fi
echo "audit-full: every check passed"
